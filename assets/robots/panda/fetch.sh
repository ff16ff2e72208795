#!/usr/bin/env bash
# Rebuilds this folder from frankaemika/franka_ros (Apache-2.0):
#
#   bash assets/robots/panda/fetch.sh PATH/TO/franka_ros
#
# PATH/TO/franka_ros is a git clone of https://github.com/frankaemika/franka_ros
# (any checkout: the files are taken from the pinned commit below). Needs git,
# python3 with venv, and PyPI (for the `xacro` package).
#
# 1. `xacro` flattens franka_description/robots/panda/panda.urdf.xacro with
#    hand:=false (the arm, link0 … link8) and gazebo:=true (the only way
#    this version writes the links' <inertial>s) into plain URDF. xacro 2
#    looks packages up through ament; a two-line stand-in module answers
#    from the checkout instead.
# 2. Post-processing (Python, below): keeps only <link>, <joint> and
#    <material> (drops gazebo:=true's <gazebo> and <transmission> elements
#    and its `world` link with the fixed joint to it); drops the `*_sc`
#    self-collision sub-links and their fixed joints (coarse capsules for
#    the controller's self-collision check, with no <visual>); makes each <visual> use the
#    link's collision STL instead of its COLLADA file (the .dae files are
#    ~10 MB together, the STLs ~100 kB) and gives it a colour (the STLs
#    carry none; the .dae's are white and dark grey): a top-level material
#    `panda_white` by name for links 1–6, `panda_dark` inline for link0's
#    base and link7's flange.
# 3. Copies LICENSE and the eight collision STLs, keeping their
#    package://franka_description/… paths (found beside the URDF).
set -euo pipefail

COMMIT=c11f000c2737acc22ed8dfeff40555b2644a4294
SRC=${1:?usage: fetch.sh PATH/TO/franka_ros}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

git -C "$SRC" archive "$COMMIT" LICENSE franka_description | tar -x -C "$WORK"
python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install --quiet xacro==2.1.1
mkdir -p "$WORK/shim/ament_index_python"
cat > "$WORK/shim/ament_index_python/__init__.py" <<'PY'
import os
def get_package_share_directory(name):
    return os.path.join(os.environ["PACKAGES"], name)
PY
cp "$WORK/shim/ament_index_python/__init__.py" "$WORK/shim/ament_index_python/packages.py"
(cd "$WORK" && PYTHONPATH="$WORK/shim" PACKAGES="$WORK" "$WORK/venv/bin/xacro" \
    franka_description/robots/panda/panda.urdf.xacro hand:=false gazebo:=true -o "$WORK/flat.urdf")

python3 - "$WORK/flat.urdf" "$HERE/panda.urdf" "$COMMIT" <<'PY'
import sys
import xml.etree.ElementTree as ET

src, dst, commit = sys.argv[1:]
robot = ET.parse(src).getroot()
def dropped(el):
    if el.tag == "link":
        return el.get("name").endswith("_sc") or el.get("name") == "world"
    if el.tag == "joint":
        return (el.find("child").get("link").endswith("_sc")
                or el.find("parent").get("link") == "world")
    return el.tag != "material"

for el in list(robot):
    if dropped(el):
        robot.remove(el)
white = ET.Element("material", name="panda_white")
ET.SubElement(white, "color", rgba="0.93 0.93 0.92 1")
robot.insert(0, white)
for link in robot.findall("link"):
    for visual in link.findall("visual"):
        mesh = visual.find("geometry/mesh")
        mesh.set("filename", mesh.get("filename")
                 .replace("/meshes/visual/", "/meshes/collision/")
                 .replace(".dae", ".stl"))
        material = ET.SubElement(visual, "material")
        if link.get("name") in ("panda_link0", "panda_link7"):
            material.set("name", "panda_dark")
            ET.SubElement(material, "color", rgba="0.22 0.22 0.24 1")
        else:
            material.set("name", "panda_white")
ET.indent(robot, "  ")
with open(dst, "w") as f:
    f.write('<?xml version="1.0"?>\n')
    f.write(f"<!-- Franka Emika Panda arm, flattened from frankaemika/franka_ros@{commit}\n"
            "     franka_description/robots/panda/panda.urdf.xacro (hand:=false gazebo:=true) by fetch.sh\n"
            "     beside this file; Apache-2.0 (LICENSE). Visuals use the collision STLs. -->\n")
    f.write(ET.tostring(robot, encoding="unicode"))
    f.write("\n")
PY

cp "$WORK/LICENSE" "$HERE/LICENSE"
rm -rf "$HERE/franka_description"
mkdir -p "$HERE/franka_description/meshes/collision"
cp "$WORK"/franka_description/meshes/collision/link[0-7].stl "$HERE/franka_description/meshes/collision/"
echo "wrote $HERE/panda.urdf and $(ls "$HERE/franka_description/meshes/collision" | wc -l) meshes"

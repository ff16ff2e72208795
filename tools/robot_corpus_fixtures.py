#!/usr/bin/env python3
"""Real robot descriptions and their reference dynamics from Pinocchio.

Installs, in a virtual environment, the PyPI packages `example-robot-data`
(the robot descriptions of the Gepetto team's collection, URDF files only
are used) and `pin` (Pinocchio), then

1. copies every robot's URDF (XML only, no meshes) into
   assets/robots/corpus/<robot package>/, with the package's licence files
   and its per-robot README (which names each robot's upstream and licence),
   and writes assets/robots/corpus/README.md (per-file provenance);
2. evaluates with Pinocchio, for every robot at seeded random states, the
   mass matrix M(q), the Coriolis and centrifugal forces C(q, v) v and the
   gravity forces G(q), and writes them to
   crates/dynamics/tests/fixtures/robot_corpus.json, which
   `cargo test -p dynamics --test robot_corpus` compares with our CRBA and
   RNEA, so the tests need no Python.

Pinocchio parses each file itself (pin.buildModelFromXML, fixed base, mimic
joints as independent joints: its default). The one adjustment of ours that
changes a number Pinocchio would use, the clamp of an inertia tensor with a
slightly negative eigenvalue (skeleton::urdf::INERTIA_CLAMP_TOLERANCE), is
applied to the XML given to Pinocchio too, and the size of the change is
recorded ("clamp_effect"). Our armature on massless joints
(skeleton::urdf::MASSLESS_ARMATURE) is left out of Pinocchio's M; the Rust
test subtracts it from ours.

Not copied: alex_description (licence CC-BY-NC-ND-4.0, which a MIT/Apache
repository cannot carry) and ur_description/urdf/ur3.urdf (an empty
<robot>: no name, no links; Pinocchio refuses it, and so do we).

Usage (from the repository root; needs python3 with venv and network access
to PyPI):
    python3 tools/robot_corpus_fixtures.py                 # venv in target/robot-corpus-venv
    python3 tools/robot_corpus_fixtures.py --venv DIR      # another venv
    cargo test -p dynamics --test robot_corpus -- --nocapture   # the comparison
"""

import argparse
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parents[1]
CORPUS = ROOT / "assets" / "robots" / "corpus"
FIXTURE = ROOT / "crates" / "dynamics" / "tests" / "fixtures" / "robot_corpus.json"
PACKAGES = {"example-robot-data": "6.0.0", "pin": "4.1.0"}
GRAVITY = 9.80665
SEED = 20261123
SAMPLES = 3
# skeleton::urdf::INERTIA_CLAMP_TOLERANCE and the noise level below which a
# negative eigenvalue is left alone (dynamics' 1e-12 · max(|λ|, 1)).
CLAMP_TOLERANCE = 1e-6
EXCLUDED = {
    "alex_description": "licence CC-BY-NC-ND-4.0 (non-commercial, no derivatives): not redistributable here",
    "ur_description/urdf/ur3.urdf": "an empty <robot> without name or links: Pinocchio refuses it, and so do we",
}


def ensure_environment(venv):
    """Re-runs this script inside `venv` with the pinned packages."""
    python = venv / "bin" / "python"
    if pathlib.Path(sys.prefix).resolve() == venv.resolve():
        return
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pins = [f"{name}=={version}" for name, version in PACKAGES.items()]
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *pins, "numpy"], check=True)
    os.execv(str(python), [str(python), __file__, *sys.argv[1:]])


def robots_directory():
    for entry in sys.path:
        d = pathlib.Path(entry) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if d.is_dir():
            return d
    raise SystemExit("example-robot-data's robots/ not found on sys.path")


def excluded(rel):
    return next((why for key, why in EXCLUDED.items() if rel == key or rel.startswith(key + "/")), None)


def readme_licence(readme):
    if not readme.exists():
        return "see the package licence"
    for line in readme.read_text(errors="replace").splitlines():
        if line.lower().startswith("license:"):
            return line.split(":", 1)[1].strip()
    return "see the package licence"


def copy_corpus(robots):
    """Copies the URDFs; returns [(corpus path, package path, licence)]."""
    if CORPUS.exists():
        shutil.rmtree(CORPUS)
    CORPUS.mkdir(parents=True)
    site = robots.parents[3]  # site-packages/cmeel.prefix/share/example-robot-data/robots
    dist = site / f"example_robot_data-{PACKAGES['example-robot-data']}.dist-info"
    licence = next(dist.glob("licenses/LICENSE"), None) or next(dist.glob("LICENSE*"))
    shutil.copy(licence, CORPUS / "LICENSE")
    shutil.copy(robots.parent / "package.xml", CORPUS / "package.xml")
    rows = []
    for urdf in sorted(robots.rglob("*.urdf")):
        rel = urdf.relative_to(robots).as_posix()
        if excluded(rel):
            continue
        package = urdf.relative_to(robots).parts[0]
        out_dir = CORPUS / package
        out_dir.mkdir(exist_ok=True)
        out = out_dir / urdf.name
        assert not out.exists(), f"two files would be {out}"
        shutil.copy(urdf, out)
        for extra in ("LICENSE", "README.md"):
            src = robots / package / extra
            if src.exists() and not (out_dir / extra).exists():
                shutil.copy(src, out_dir / extra)
        rows.append((out.relative_to(CORPUS).as_posix(), rel, readme_licence(robots / package / "README.md")))
    return rows


def write_readme(rows, pin_version):
    lines = [
        "# Real robot descriptions (test corpus)",
        "",
        f"URDF files (XML only, no meshes) from the PyPI package `example-robot-data` {PACKAGES['example-robot-data']}",
        "(the Gepetto team's collection of robot descriptions). The package's licence file,",
        "`LICENSE` here, is BSD 2-Clause (its PyPI metadata says BSD-3-Clause); each robot's",
        "own licence is in its folder's `README.md`, copied from the package, and `LICENSE`",
        "where the package has one.",
        "The files are unmodified copies; `package.xml` is the package's manifest.",
        "",
        "Written by `tools/robot_corpus_fixtures.py`, which also writes the Pinocchio",
        f"{pin_version} reference dynamics `crates/dynamics/tests/fixtures/robot_corpus.json`",
        "that `cargo test -p dynamics --test robot_corpus` compares with ours; the",
        "numbers are in `docs/dynamics.md`.",
        "",
        "Left out of the package's robots:",
        "",
    ]
    lines += [f"- `{key}`: {why}" for key, why in EXCLUDED.items()]
    lines += ["", "| file here | path in the package (`share/example-robot-data/robots/`) | licence | sha256 (first 16) |", "|---|---|---|---|"]
    for here, rel, licence in rows:
        digest = hashlib.sha256((CORPUS / here).read_bytes()).hexdigest()[:16]
        lines.append(f"| `{here}` | `{rel}` | {licence} | `{digest}` |")
    (CORPUS / "README.md").write_text("\n".join(lines) + "\n")


def clamp_inertias(text):
    """The XML with every inertia tensor whose most negative eigenvalue lies
    in [-1e-6 max(tr, 1), -1e-12 max(|λ|, 1)) clamped as our import does
    (in the inertial's own frame: the same tensor turned, so the same
    eigenvalues); returns (xml, names of the links clamped)."""
    import numpy as np

    tree = ET.ElementTree(ET.fromstring(text))
    clamped = []
    for link in tree.getroot().iter("link"):
        el = link.find("inertial/inertia")
        if el is None:
            continue
        keys = ["ixx", "ixy", "ixz", "iyy", "iyz", "izz"]
        a = {k: float(el.get(k, "0")) for k in keys}
        t = np.array(
            [[a["ixx"], a["ixy"], a["ixz"]], [a["ixy"], a["iyy"], a["iyz"]], [a["ixz"], a["iyz"], a["izz"]]]
        )
        w, v = np.linalg.eigh(t)
        noise = -1e-12 * max(np.abs(w).max(), 1.0)
        if noise > w[0] >= -CLAMP_TOLERANCE * max(np.trace(t), 1.0):
            c = v @ np.diag(np.maximum(w, 0.0)) @ v.T
            c = (c + c.T) / 2
            for k, (r, col) in zip(keys, [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]):
                el.set(k, repr(float(c[r, col])))
            clamped.append(link.get("name"))
    return ET.tostring(tree.getroot(), encoding="unicode"), clamped


class Reference:
    """Pinocchio's model of one URDF and its joints in velocity order."""

    def __init__(self, xml):
        import numpy as np
        import pinocchio as pin

        self.pin, self.np = pin, np
        m = pin.buildModelFromXML(xml)
        m.gravity.linear = np.array([0.0, 0.0, -GRAVITY])
        self.model, self.data = m, m.createData()
        self.joints = [(m.names[j], m.joints[j]) for j in range(1, m.njoints)]
        for name, j in self.joints:
            assert j.nv == 1, f"{name}: only 1-DOF joints are mapped ({j.shortname()})"

    def config(self, angles):
        """Pinocchio's q for one angle (or displacement) per joint; a
        continuous joint is (cos θ, sin θ)."""
        q = self.np.zeros(self.model.nq)
        for (name, j), x in zip(self.joints, angles):
            if j.nq == 1:
                q[j.idx_q] = x
            else:
                q[j.idx_q : j.idx_q + 2] = [self.np.cos(x), self.np.sin(x)]
        return q

    def evaluate(self, angles, v):
        pin, np = self.pin, self.np
        m, d = self.model, self.data
        q = self.config(angles)
        mass = pin.crba(m, d, q).copy()
        mass = np.triu(mass) + np.triu(mass, 1).T
        g = pin.computeGeneralizedGravity(m, d, q).copy()
        # C(q, v) v without gravity (not nle − G, which cancels digits).
        gravity = m.gravity.linear.copy()
        m.gravity.linear = np.zeros(3)
        cv = pin.rnea(m, d, q, v, np.zeros(m.nv)).copy()
        m.gravity.linear = gravity
        assert np.allclose(cv, pin.computeCoriolisMatrix(m, d, q, v) @ v, rtol=1e-9, atol=1e-9)
        return mass, cv, g


def max_relative(a, b):
    import numpy as np

    scale = np.abs(b).max()
    return float(np.abs(a - b).max() / scale) if scale > 0 else float(np.abs(a - b).max())


def fixtures(rows):
    import numpy as np
    import pinocchio as pin

    rng = np.random.default_rng(SEED)
    robots = []
    for here, _, _ in rows:
        text = (CORPUS / here).read_text()
        xml, clamped = clamp_inertias(text)
        ref = Reference(xml)
        raw = Reference(text) if clamped else None
        nv = ref.model.nv
        samples, effect = [], 0.0
        for _ in range(SAMPLES):
            angles = rng.uniform(-1.2, 1.2, nv)
            v = rng.uniform(-2.0, 2.0, nv)
            mass, cv, g = ref.evaluate(angles, v)
            if raw:
                m0, c0, g0 = raw.evaluate(angles, v)
                effect = max(effect, max_relative(m0, mass), max_relative(c0, cv), max_relative(g0, g))
            iu = np.triu_indices(nv)
            samples.append(
                {
                    "q": angles.tolist(),
                    "v": v.tolist(),
                    "M_upper": mass[iu].tolist(),
                    "Cv": cv.tolist(),
                    "G": g.tolist(),
                }
            )
        robots.append(
            {
                "file": here,
                "nv": nv,
                "joints": [name for name, _ in ref.joints],
                "clamped_links": clamped,
                "clamp_effect": effect,
                "samples": samples,
            }
        )
        print(f"{here}: nv = {nv}" + (f", clamped {clamped} (changes M, Cv, G by {effect:.1e})" if clamped else ""))
    return {
        "reference": f"pinocchio {pin.__version__}",
        "package": f"example-robot-data {PACKAGES['example-robot-data']}",
        "generator": "tools/robot_corpus_fixtures.py",
        "seed": SEED,
        "gravity": [0.0, 0.0, -GRAVITY],
        "layout": "joints in Pinocchio's velocity order, q one angle (or displacement) per joint, "
        "M_upper the upper triangle with diagonal row by row, Cv = C(q, v) v, G = G(q)",
        "robots": robots,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=pathlib.Path, default=ROOT / "target" / "robot-corpus-venv")
    args = parser.parse_args()
    ensure_environment(args.venv)
    import pinocchio as pin

    rows = copy_corpus(robots_directory())
    write_readme(rows, pin.__version__)
    data = fixtures(rows)
    FIXTURE.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    size = sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file())
    print(f"{len(rows)} robots in {CORPUS.relative_to(ROOT)} ({size / 1e6:.1f} MB); {FIXTURE.relative_to(ROOT)} ({FIXTURE.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()

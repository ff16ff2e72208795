#!/bin/bash
# Copies the DeepMimic humanoid motions of assets/motions/deepmimic from the
# pybullet 3.2.7 wheel on PyPI (pybullet_data/data/motions, zlib licence)
# and checks each file against the checksum it was committed with.
#
#   bash tools/fetch_deepmimic_motions.sh [OUT_DIR]   # default assets/motions/deepmimic
set -euo pipefail
out=${1:-assets/motions/deepmimic}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --no-deps --quiet --only-binary :all: \
    --python-version 3.11 --platform manylinux2014_x86_64 pybullet==3.2.7 -d "$tmp"
wheel=$(ls "$tmp"/pybullet-3.2.7-*.whl)
echo "5d858abf7c12a21ef3ed351cf81dac1b5e486ec25c9ab59bfc84beb89034edff  $wheel" | sha256sum -c --quiet
for m in dance_a dance_b punch kick spinkick spin jump run walk; do
    unzip -p "$wheel" "pybullet_data/data/motions/humanoid3d_$m.txt" > "$out/humanoid3d_$m.txt"
done
(cd "$out" && sha256sum -c --quiet <<'SUMS'
15ef3731f594edc9ed078170f1075815cc164acaca9e35a46db12a31ac64b717  humanoid3d_dance_a.txt
b5a9d7a3f2304f6242776d7ff6d19d1f6bcb98d78d68622761c3843b614a92b5  humanoid3d_dance_b.txt
a433557e94b193d8a95530572a0e32f387eb6d9996987b4216efb65444c3c641  humanoid3d_jump.txt
177cfb399466309ba7f4a8a987c3b6f6edde1cbe8b2d476e53dc6061ec5d4bac  humanoid3d_kick.txt
1ab4b654cecdb4ff3b2a4bf4086e50397bef28435bb59ab3aedd6a6bdc926fde  humanoid3d_punch.txt
2cbe488023b243e5769299158ce7c78875ec4b701a2ffe6c0beeaf83d16ca87b  humanoid3d_run.txt
9614f10b92e7a8b123990ad5bcfafc65aa4d8fa8ac7f10ade3c3591122d34425  humanoid3d_spin.txt
60ec9c200d96e0cd71693061f24db0bd8da9eb295daf487f6f60f8dfb324075a  humanoid3d_spinkick.txt
32d082c3599bc40aac50b1afa196ff1e2cf3842bb40f0541ab088845f6328a41  humanoid3d_walk.txt
SUMS
)
echo "$out: 9 DeepMimic motions, checksums match"

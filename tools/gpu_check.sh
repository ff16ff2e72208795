#!/usr/bin/env bash
# Issue 35's hardware figures in one run of at most about 8 minutes, on a
# machine with a GPU and no Rust toolchain (docs/gpu.md, "Measuring on a
# GPU machine"). Build and pack here, from the project root:
#   ../shared/gpu/pack.sh --workspace --example likelihood_bench --example keypoint_bench
# then, on the GPU machine, from the project root (the working tree with
# .gpu/ beside it):
#   bash .gpu/run.sh bash tools/gpu_check.sh OUT_DIR
# Every figure is written to OUT_DIR as it is measured: likelihood.{txt,csv},
# keypoints.{txt,csv} and, per clip, CLIP.txt (the summary and the --profile
# table) and CLIP.csv. A step past its limit gets Ctrl-C (SIGINT): posecloud
# then stops after the frame, writes its CSV and prints the profile so far.
set -uo pipefail
out=${1:?usage: tools/gpu_check.sh OUT_DIR}
mkdir -p "$out" || { echo "gpu_check: cannot create $out" >&2; exit 2; }
[ -w "$out" ] || { echo "gpu_check: $out is not writable" >&2; exit 2; }
for tool in likelihood_bench keypoint_bench posecloud; do
  command -v "$tool" >/dev/null || { echo "gpu_check: $tool is not on PATH (pack it, run through .gpu/run.sh)" >&2; exit 2; }
done
status=0
run() { # run SECONDS NAME COMMAND...: output to OUT_DIR/NAME.txt and the terminal
  local secs=$1 name=$2; shift 2
  echo "== $name: $*" | tee "$out/$name.txt"
  timeout -s INT -k 20 "$secs" "$@" 2>&1 | tee -a "$out/$name.txt"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || { echo "== $name: exit $rc" | tee -a "$out/$name.txt"; status=1; }
}
# RTPF Eq. 1-2 per batch at 160 x 120: the goals are 10^4 particles <= 5 ms
# and 10^5 <= 50 ms (the GPU columns; the CPU's only up to 10^4).
run 150 likelihood likelihood_bench --size 160x120 --particles 700,10000,100000 \
  --skip-cpu-above 10000 --no-tracker --csv "$out/likelihood.csv"
# BlazePose full per frame, upload and readback included: the goal is <= 3 ms.
run 90 keypoints keypoint_bench --gpu --iters 50 --csv "$out/keypoints.csv"
# Whole tracking, keypoints on, 700 particles, everything on the GPU: the goal
# is >= 60 tracked frames/s on session_a (640 x 480) and a 320 x 240 render.
# Without the ffmpeg command there (posecloud reads video through it), the
# clips are decoded once to PNG frames with OpenCV's Python module instead.
for clip in assets/footage/session_a.mp4 assets/evalset/session_v2.mp4; do
  name=$(basename "$clip" .mp4)
  frames=$clip
  if ! command -v ffmpeg >/dev/null; then
    frames=$(mktemp -d)/$name
    python3 - "$clip" "$frames" <<'PY' || { echo "gpu_check: no ffmpeg and no OpenCV to decode $clip" >&2; status=1; continue; }
import os, sys
import cv2
clip, folder = sys.argv[1], sys.argv[2]
os.makedirs(folder)
video, k = cv2.VideoCapture(clip), 0
while True:
    ok, bgr = video.read()
    if not ok:
        break
    cv2.imwrite(os.path.join(folder, f"frame_{k:05d}.png"), bgr)
    k += 1
if k == 0:
    sys.exit(f"{clip}: no frame decoded")
print(f"{clip}: {k} frames decoded to {folder}")
PY
  fi
  run 120 "$name" posecloud track --frames "$frames" --particles 700 --seed 1 \
    --backend gpu --keypoint-backend gpu --profile --out-csv "$out/$name.csv"
done
exit $status

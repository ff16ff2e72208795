#!/usr/bin/env python3
"""How much of the tracker's elbow error comes from frames where its MAP arm
lags the detections (docs/track.md, "The keypoint term's width and the
number of lifts").

Reads the files `arm_eval --dump DIR` writes (`DIR/{clip}_1.csv`: the MAP's
joints in 3D and in the image, and the detections) and the evaluation set's
truth CSVs. Per clip and arm, over the tracked `move` frames with both
detections: `far`, the share of frames whose MAP elbow or wrist projects
more than 4 % of the image height from its detection; `share_of_sq_err`,
their share of the squared elbow-angle error; `rmse`, the MAP's elbow-angle
RMSE (degrees) over all those frames; `rmse_near`, over the other frames.

Usage (numpy needed):

    cargo run --release -p track --example arm_eval -- --split validation --seeds 1 --dump /tmp/dump
    python3 tools/arm_lag_analysis.py /tmp/dump
"""

import glob
import math
import os
import sys

import numpy as np

import arm_branch_analysis as A

FAR = 0.04


def image_height(tag):
    """Rows of a clip's frames (`size` in `assets/evalset/clips.toml`)."""
    text = open(os.path.join(A.EVALSET, "clips.toml")).read()
    block = text.split(f'tag = "{tag}"', 1)[1].split("[[clip]]", 1)[0]
    for line in block.splitlines():
        if line.strip().startswith("size"):
            return int(line.split("[", 1)[1].split(",")[1].strip(" ]"))
    sys.exit(f"clips.toml: no size for {tag}")


def main(dump):
    totals = {}
    for path in sorted(glob.glob(os.path.join(dump, "*_1.csv"))):
        tag = os.path.basename(path).split("_")[0]
        rows = A.load(path)
        truth = {int(r["frame"]): r for r in A.load(os.path.join(A.EVALSET, f"truth_{tag}.csv"))
                 if r["phase"] == "move"}
        far_px = FAR * image_height(tag)
        for side, name in (("right", "Right"), ("left", "Left")):
            err, off = [], []
            for r in rows:
                f = int(r["frame"])
                if f not in truth:
                    continue
                d = [math.hypot(float(r[f"{name}{j}_u"]) - float(r[f"{name}{j}_det_u"]),
                                float(r[f"{name}{j}_v"]) - float(r[f"{name}{j}_det_v"]))
                     for j in ("Elbow", "Wrist")]
                if any(math.isnan(x) for x in d):
                    continue
                p = lambda n: np.array([float(r[f"{n}_{c}"]) for c in "xyz"])
                a = A.angle(p(f"{name}Shoulder"), p(f"{name}Elbow"), p(f"{name}Wrist"))
                err.append(a - float(truth[f][f"{side}_elbow_deg"]))
                off.append(max(d))
            err, off = np.array(err), np.array(off)
            far = off > far_px
            out = {
                "far": float(far.mean()),
                "share_of_sq_err": float((err[far] ** 2).sum() / (err ** 2).sum()),
                "rmse": math.sqrt(np.mean(err ** 2)),
                "rmse_near": math.sqrt(np.mean(err[~far] ** 2)),
            }
            totals.setdefault(side, []).append(out)
            print(tag, side, " ".join(f"{k} {v:.2f}" for k, v in out.items()), flush=True)
    for side, rows in totals.items():
        print("mean", side, " ".join(f"{k} {np.mean([r[k] for r in rows]):.2f}" for k in rows[0]))


if __name__ == "__main__":
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: arm_lag_analysis.py DUMP_DIR (from arm_eval --dump)")
    main(sys.argv[1])

#!/usr/bin/env python3
"""Offline analysis of the tracker's arm depth branches (docs/track.md,
"A learned arm prior"): what choosing each frame's branch by smoothness, or
by a density of arm directions learned from motion capture, would do.

Reads the files `arm_eval --dump DIR` writes (`DIR/{clip}_1.csv`: the MAP's
joints in 3D and in the image, and the detections) and the evaluation set's
truth CSVs. Per frame and arm it lifts the detected elbow and wrist onto
their rays (the MAP's shoulder and bone lengths, the landmark shifts of
`track::LANDMARK_SHIFT`) into up to four depth branches, then reports the
elbow-angle RMSE (degrees) against the truth of:

- `map`: the tracker's MAP;
- `viterbi_velocity`, `viterbi_accel`: the branch path minimising the
  elbow's and wrist's squared velocity / acceleration (smoothness only);
- `switch`: the MAP, except where a lifted branch's log density exceeds the
  MAP arm's by more than 1 nat (that branch is taken). The density is a
  Gaussian kernel density (bandwidth 0.3) over the truth's (upper arm,
  forearm) directions in the chest frame: for a tuning clip, of the other
  tuning *motions* (leave one motion out); for a validation clip, of all
  tuning clips.

With `--gap` it reports instead where the tracker's error stands against
the best branch (docs/track.md, "Where the rest of the gap is"): `map`;
`best_branch`, the lifted branch nearest the true elbow angle (the MAP's
bones); `nearest_to_map`, the lifted branch nearest the MAP in 3D;
`same`, the share of frames where those two are one branch; `map_when_same`
and `map_when_diff`, the MAP's RMSE over those frames and the others;
`map_or_best`, the MAP's angle where the branches agree and the best
branch's where they differ.

Usage (numpy needed):

    cargo run --release -p track --example arm_eval -- --split tuning --seeds 1 --arm-prior 0 --dump /tmp/dump
    python3 tools/arm_branch_analysis.py /tmp/dump
    python3 tools/arm_branch_analysis.py --gap /tmp/dump
"""

import csv
import glob
import math
import os
import sys

import numpy as np

EVALSET = os.path.join(os.path.dirname(__file__), "..", "assets", "evalset")
SHIFT_ELBOW, SHIFT_WRIST = 0.085, 0.04
BANDWIDTH = 0.3
MOTION = {"t1": "05_02", "t2": "05_02", "t3": "06_14", "t4": "06_14", "t5": "07_01", "t6": "07_01"}
JOINTS = ("Hips", "Neck", "RightShoulder", "RightElbow", "RightWrist",
          "LeftShoulder", "LeftElbow", "LeftWrist")


def load(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def angle(a, b, c):
    u, v = a - b, c - b
    return math.degrees(math.acos(np.clip(u @ v / np.linalg.norm(u) / np.linalg.norm(v), -1, 1)))


def fit_camera(rows):
    """Pinhole (camera looking down −z) from the MAP joints and their projections."""
    a, bu, b, bv = [], [], [], []
    for r in rows:
        for j in JOINTS:
            x = [float(r[f"{j}_{c}"]) for c in "xyz"]
            a.append([x[0] / -x[2], 1]); bu.append(float(r[f"{j}_u"]))
            b.append([-x[1] / -x[2], 1]); bv.append(float(r[f"{j}_v"]))
    (fu, cx), *_ = np.linalg.lstsq(np.array(a), np.array(bu), rcond=None)
    (fv, cy), *_ = np.linalg.lstsq(np.array(b), np.array(bv), rcond=None)
    return fu, fv, cx, cy


def ray(cam, u, v):
    fu, fv, cx, cy = cam
    return np.array([(u - cx) / fu, -(v - cy) / fv, -1.0])


def on_sphere(d, centre, radius):
    """Both points of the ray t·d at `radius` from `centre` (the closest point twice if it misses)."""
    a, b, c = d @ d, -2 * d @ centre, centre @ centre - radius * radius
    disc = b * b - 4 * a * c
    if disc < 0:
        t = d @ centre / a
        return [t * d, t * d]
    s = math.sqrt(disc)
    return [(-b - s) / (2 * a) * d, (-b + s) / (2 * a) * d]


def branches(cam, shoulder, upper, fore, det_elbow, det_wrist):
    out = []
    for pe in on_sphere(ray(cam, *det_elbow), shoulder, (1 - SHIFT_ELBOW) * upper):
        elbow = shoulder + (pe - shoulder) / (1 - SHIFT_ELBOW)
        for pw in on_sphere(ray(cam, *det_wrist), elbow, (1 - SHIFT_WRIST) * fore):
            out.append((elbow, elbow + (pw - elbow) / (1 - SHIFT_WRIST)))
    return out


def chest_axes(left_shoulder, right_shoulder, pelvis):
    x = left_shoulder - right_shoulder; x /= np.linalg.norm(x)
    y = (left_shoulder + right_shoulder) / 2 - pelvis; y -= x * (x @ y); y /= np.linalg.norm(y)
    return np.array([x, y, np.cross(x, y)])


def feature(axes, shoulder, elbow, wrist, right):
    u = axes @ (elbow - shoulder); u /= np.linalg.norm(u)
    f = axes @ (wrist - elbow); f /= np.linalg.norm(f)
    if right:
        u[0] *= -1; f[0] *= -1
    return np.concatenate([u, f])


def truth_features(tag):
    out = []
    for r in load(os.path.join(EVALSET, f"truth_{tag}.csv")):
        if r["phase"] != "move":
            continue
        t = lambda n: np.array([float(r[f"{n}_{c}"]) for c in "xyz"])
        axes = chest_axes(t("left_shoulder"), t("right_shoulder"), t("pelvis"))
        for side in ("right", "left"):
            out.append(feature(axes, t(f"{side}_shoulder"), t(f"{side}_elbow"), t(f"{side}_wrist"), side == "right"))
    return np.array(out)


def log_density(samples, a):
    return np.log(np.mean(np.exp(-np.sum((samples - a) ** 2, 1) / (2 * BANDWIDTH ** 2))) + 1e-300)


def viterbi(frames, order, sigma=0.03):
    """Branch path minimising the squared velocity (order 1) or acceleration (order 2)."""
    n, k = len(frames), 4
    diff = lambda t, path: sum(np.sum((sum(c * frames[t - i][b][m] for i, (c, b) in enumerate(path))) ** 2)
                               for m in (0, 1)) / sigma ** 2
    if order == 1:
        cost, back = np.zeros(k), []
        for t in range(1, n):
            m = np.array([[cost[i] + diff(t, [(1, j), (-1, i)]) for i in range(k)] for j in range(k)])
            back.append(m.argmin(1)); cost = m.min(1)
        path = [int(cost.argmin())]
        for b in reversed(back):
            path.append(int(b[path[-1]]))
        return path[::-1]
    cost = {(i, j): 0.0 for i in range(k) for j in range(k)}
    back = []
    for t in range(2, n):
        new, bk = {}, {}
        for j in range(k):
            for l in range(k):
                best = min(range(k), key=lambda i: cost[(i, j)] + diff(t, [(1, l), (-2, j), (1, i)]))
                new[(j, l)] = cost[(best, j)] + diff(t, [(1, l), (-2, j), (1, best)])
                bk[(j, l)] = best
        cost = new; back.append(bk)
    j, l = min(cost, key=cost.get)
    path = [l, j]
    for bk in reversed(back):
        i = bk[(j, l)]; path.append(i); l, j = j, i
    return path[::-1]


def lifted(dump):
    """Per dumped clip and arm, the frames with both detections: (tag, side,
    [(p, s, e, w, cands, want)]) — `p` the row's joint reader, `s, e, w` the
    MAP's shoulder, elbow and wrist, `cands` the lifted branches (the MAP's
    bones), `want` the true elbow angle."""
    for path in sorted(glob.glob(os.path.join(dump, "*_1.csv"))):
        tag = os.path.basename(path).split("_")[0]
        rows = load(path)
        cam = fit_camera(rows[:50])
        truth = {int(r["frame"]): r for r in load(os.path.join(EVALSET, f"truth_{tag}.csv")) if r["phase"] == "move"}
        for side, name in (("right", "Right"), ("left", "Left")):
            seq = []
            for r in rows:
                f = int(r["frame"])
                det = [float(r[f"{name}{j}_det_{c}"]) for j in ("Elbow", "Wrist") for c in "uv"]
                if f not in truth or any(math.isnan(x) for x in det):
                    continue
                p = lambda n, r=r: np.array([float(r[f"{n}_{c}"]) for c in "xyz"])
                s, e, w = p(f"{name}Shoulder"), p(f"{name}Elbow"), p(f"{name}Wrist")
                cands = branches(cam, s, np.linalg.norm(e - s), np.linalg.norm(w - e), det[:2], det[2:])
                seq.append((p, s, e, w, cands, float(truth[f][f"{side}_elbow_deg"])))
            yield tag, side, seq


def main(dump):
    truth_feats = {t: truth_features(t) for t in MOTION}
    totals = {}
    for tag, side, arm_frames in lifted(dump):
        if tag in MOTION:
            samples = np.concatenate([f for t, f in truth_feats.items() if MOTION[t] != MOTION[tag]])
        else:
            samples = np.concatenate(list(truth_feats.values()))
        seq = []
        for p, s, e, w, cands, want in arm_frames:
            axes = chest_axes(p("LeftShoulder"), p("RightShoulder"), p("Hips"))
            lp = [log_density(samples, feature(axes, s, eb, wb, side == "right")) for eb, wb in cands]
            lp_map = log_density(samples, feature(axes, s, e, w, side == "right"))
            seq.append((s, e, w, cands, lp, lp_map, want))
        want = np.array([q[6] for q in seq])
        rmse = lambda a: math.sqrt(np.mean((np.array(a) - want) ** 2))
        frames = [q[3] for q in seq]
        out = {
            "map": rmse([angle(q[0], q[1], q[2]) for q in seq]),
            "viterbi_velocity": rmse([angle(q[0], *q[3][b]) for q, b in zip(seq, viterbi(frames, 1))]),
            "viterbi_accel": rmse([angle(q[0], *q[3][b]) for q, b in zip(seq, viterbi(frames, 2))]),
            "switch": rmse([angle(q[0], *q[3][int(np.argmax(q[4]))]) if max(q[4]) - q[5] > 1
                            else angle(q[0], q[1], q[2]) for q in seq]),
        }
        totals.setdefault(side, []).append(out)
        print(tag, side, " ".join(f"{k} {v:.1f}" for k, v in out.items()), flush=True)
    for side, rows in totals.items():
        print("mean", side, " ".join(f"{k} {np.mean([r[k] for r in rows]):.1f}" for k in rows[0]))


def gap(dump):
    totals = {}
    for tag, side, arm_frames in lifted(dump):
        err_map, err_best, err_near, same = [], [], [], []
        for _, s, e, w, cands, want in arm_frames:
            angles = [angle(s, eb, wb) for eb, wb in cands]
            best = int(np.argmin([abs(a - want) for a in angles]))
            near = int(np.argmin([np.linalg.norm(eb - e) + np.linalg.norm(wb - w) for eb, wb in cands]))
            err_map.append(angle(s, e, w) - want)
            err_best.append(angles[best] - want)
            err_near.append(angles[near] - want)
            same.append(abs(angles[near] - angles[best]) < 1e-6)
        err_map, err_best, err_near, same = map(np.array, (err_map, err_best, err_near, same))
        rms = lambda a: math.sqrt(np.mean(a ** 2)) if len(a) else float("nan")
        out = {
            "map": rms(err_map),
            "best_branch": rms(err_best),
            "nearest_to_map": rms(err_near),
            "same": float(same.mean()),
            "map_when_same": rms(err_map[same]),
            "map_when_diff": rms(err_map[~same]),
            "map_or_best": rms(np.where(same, err_map, err_best)),
        }
        totals.setdefault(side, []).append(out)
        print(tag, side, " ".join(f"{k} {v:.2f}" for k, v in out.items()), flush=True)
    for side, rows in totals.items():
        print("mean", side, " ".join(f"{k} {np.nanmean([r[k] for r in rows]):.2f}" for k in rows[0]))


if __name__ == "__main__":
    args = sys.argv[1:]
    mode = main
    if args[:1] == ["--gap"]:
        mode, args = gap, args[1:]
    if len(args) != 1 or not os.path.isdir(args[0]):
        sys.exit("usage: arm_branch_analysis.py [--gap] DUMP_DIR (from arm_eval --dump)")
    mode(args[0])

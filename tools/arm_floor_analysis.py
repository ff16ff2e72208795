#!/usr/bin/env python3
"""How optimistic the best-branch floors of `arm_eval` are, and how well
the detector's depth (BlazePose's z) and the tracker's MAP know an arm's
depth signs (docs/track.md, "What the floors can ask").

Reads the files `arm_eval --dump DIR` writes (`DIR/{clip}_{seed}.csv`: the
MAP's joints in 3D and in the image, and the detections with their z) and
the evaluation set's truth and cameras. Per frame and arm it lifts the
detected elbow and wrist onto their rays through the *true* camera, with
the *true* shoulder and bone lengths and `track::LANDMARK_SHIFT` (as
`arm_eval`'s floors do), into up to four depth branches, and reports the
elbow-angle RMSE (degrees) of:

- `floor_angle`: the branch whose elbow angle is nearest the truth
  (`arm_eval`'s floor∠: the branch chosen by the answer);
- `floor_3d`: the branch whose elbow and wrist are nearest the truth in 3D
  (`arm_eval`'s floor3D);
- `true_signs`: the branch whose upper arm and forearm lie on the truth's
  sides of the image plane (a perfect depth-order detector; where two
  branches tie, their mean);
- `map`: the tracker's MAP;

overall and by the smaller of the two segments' true tilts out of the
image plane (sine). It also prints how often the detector's z and the MAP
put each segment, and the relative order of the two (elbow angle depends
on that alone under orthographic projection), on the truth's side, over
the frames where the segments tilt by more than 0.3.

With `--smoothing` it reports instead the MAP's elbow-angle RMSE, and
that of two averages over time with the pose kernel's weights (Gaussian,
σ 3 frames, 8 frames before and 4 after): of the MAP's elbow *angle*, and
of its elbow and wrist *positions* about the shoulder with the bones then
placed towards them (docs/track.md, "Six more things measured").

With `--depth-z` it reports how BlazePose's z relates to the truth: per
clip and segment (upper arm, forearm) the slope through the origin and
the correlation of the detector's depth difference against the true one
in the same pixels (the keypoint term's κ), and, by the size of the
detector's |Δz| in torso lengths, how often its sign and the MAP's put
the segment on the truth's side.

With `--torso` it reports how often the MAP's forearm (elbow, wrist and
three points between) lies inside the torso — an elliptic cylinder
about the pelvis-to-shoulder-centre axis from the pelvis to the
shoulders' height, half-width 0.16 m and half-depth 0.11 m in the chest
frame — against the truth's, and the MAP's RMSE in those frames and the
rest: what a cost on an arm through the body could gain at most
(docs/track.md, "Motion from outside the evaluation set, both arms, the
camera, the torso").

Usage (numpy needed):

    cargo run --release -p track --example arm_eval -- --split tuning --seeds 1 --dump /tmp/dump
    python3 tools/arm_floor_analysis.py /tmp/dump
"""

import glob
import math
import os
import re
import sys

import numpy as np

from arm_branch_analysis import EVALSET, SHIFT_ELBOW, SHIFT_WRIST, angle, load

JOINTS = ("Shoulder", "Elbow", "Wrist")


def camera(tag):
    """Position, forward, right and down axes and intrinsics of `camera_{tag}.toml`."""
    with open(os.path.join(EVALSET, f"camera_{tag}.toml")) as f:
        t = f.read()
    vec = lambda k: np.array([float(x) for x in re.search(k + r" = \[(.*)\]", t).group(1).split(",")])
    num = lambda k: float(re.search(k + r" = (\S+)", t).group(1))
    pos, look, up = vec("position"), vec("look_at"), vec("up")
    fwd = look - pos
    fwd /= np.linalg.norm(fwd)
    right = np.cross(fwd, up)
    right /= np.linalg.norm(right)
    return pos, fwd, right, np.cross(fwd, right), num("fx"), num("fy"), num("cx"), num("cy")


def ray(cam, u, v):
    pos, fwd, right, down, fx, fy, cx, cy = cam
    d = fwd + right * (u - cx) / fx + down * (v - cy) / fy
    return d / np.linalg.norm(d)


def on_sphere(cam, d, centre, radius):
    """Both points of the ray at `radius` from `centre` (the closest point twice if it misses)."""
    oc = cam[0] - centre
    b = d @ oc
    disc = b * b - (oc @ oc - radius * radius)
    if disc < 0:
        return [cam[0] - b * d] * 2
    s = math.sqrt(disc)
    return [cam[0] + (-b - s) * d, cam[0] + (-b + s) * d]


def runs(dump):
    """Per dumped run: its clip's tag and camera, and its rows of the
    `move` phase, each with the truth's row of that frame."""
    for path in sorted(glob.glob(os.path.join(dump, "*_*.csv"))):
        tag = os.path.basename(path).split("_")[0]
        truth = {int(r["frame"]): r for r in load(os.path.join(EVALSET, f"truth_{tag}.csv"))
                 if r["phase"] == "move"}
        yield tag, camera(tag), [(r, truth[int(r["frame"])]) for r in load(path) if int(r["frame"]) in truth]


def main(dump):
    for side, name in (("right", "Right"), ("left", "Left")):
        err = {k: [] for k in ("floor_angle", "floor_3d", "true_signs", "map")}
        tilt = []
        agree = {k: [0, 0] for k in ("detector upper arm", "detector forearm", "detector relative",
                                      "MAP upper arm", "MAP forearm", "MAP relative")}
        for _, cam, rows in runs(dump):
            depth = lambda p: (p - cam[0]) @ cam[1]
            for r, t in rows:
                det = [float(r[f"{name}{j}_det_{c}"]) for j in ("Elbow", "Wrist") for c in "uv"]
                z = [float(r[f"{name}{j}_det_z"]) for j in JOINTS]
                if any(math.isnan(x) for x in det + z):
                    continue
                s, e, w = (np.array([float(t[f"{side}_{j.lower()}_{c}"]) for c in "xyz"]) for j in JOINTS)
                want = float(t[f"{side}_elbow_deg"])
                l1, l2 = np.linalg.norm(e - s), np.linalg.norm(w - e)
                cands = []
                for pe in on_sphere(cam, ray(cam, *det[:2]), s, (1 - SHIFT_ELBOW) * l1):
                    ce = s + (pe - s) / (1 - SHIFT_ELBOW)
                    for pw in on_sphere(cam, ray(cam, *det[2:]), ce, (1 - SHIFT_WRIST) * l2):
                        cands.append((ce, ce + (pw - ce) / (1 - SHIFT_WRIST)))
                angles = [angle(s, ce, cw) for ce, cw in cands]
                err["floor_angle"].append(min(angles, key=lambda a: abs(a - want)) - want)
                near = min(range(len(cands)), key=lambda i: np.sum((cands[i][0] - e) ** 2) + np.sum((cands[i][1] - w) ** 2))
                err["floor_3d"].append(angles[near] - want)
                su, sf = (depth(e) - depth(s)) / l1, (depth(w) - depth(e)) / l2
                right_sides = lambda ce, cw: int(np.sign(depth(ce) - depth(s)) == np.sign(su)) + int(np.sign(depth(cw) - depth(ce)) == np.sign(sf))
                best = max(right_sides(*c) for c in cands)
                err["true_signs"].append(np.mean([a for a, c in zip(angles, cands) if right_sides(*c) == best]) - want)
                m = {j: np.array([float(r[f"{name}{j}_{c}"]) for c in "xyz"]) for j in JOINTS}
                err["map"].append(angle(m["Shoulder"], m["Elbow"], m["Wrist"]) - want)
                tilt.append(min(abs(su), abs(sf)))
                # The tracking camera looks down −z from the origin (arm_eval's default camera).
                mu, mf = m["Shoulder"][2] - m["Elbow"][2], m["Elbow"][2] - m["Wrist"][2]
                du, df = z[1] - z[0], z[2] - z[1]
                for key, a, b, on in (("upper arm", du, mu, abs(su) > 0.3), ("forearm", df, mf, abs(sf) > 0.3),
                                      ("relative", du * df, mu * mf, abs(su) > 0.3 and abs(sf) > 0.3)):
                    if on:
                        truth_sign = np.sign(su * sf) if key == "relative" else np.sign(su if key == "upper arm" else sf)
                        for who, v in (("detector", a), ("MAP", b)):
                            agree[f"{who} {key}"][0] += np.sign(v) == truth_sign
                            agree[f"{who} {key}"][1] += 1
        tilt = np.array(tilt)
        rmse = lambda v, sel=slice(None): math.sqrt(np.mean(np.square(np.array(v)[sel])))
        print(f"{side} arm, {len(tilt)} frames: " + ", ".join(f"{k} {rmse(v):.1f}°" for k, v in err.items()))
        for lo, hi in ((0, 0.2), (0.2, 0.4), (0.4, 0.7), (0.7, 1.01)):
            sel = (tilt >= lo) & (tilt < hi)
            if sel.any():
                print(f"  smaller tilt {lo:.1f}–{min(hi, 1):.1f} ({sel.sum()} frames): "
                      + ", ".join(f"{k} {rmse(v, sel):.1f}°" for k, v in err.items()))
        print("  on the truth's side (tilt > 0.3): " + ", ".join(
            f"{k} {100 * a / max(n, 1):.0f} % of {n}" for k, (a, n) in agree.items()))


def smoothing(dump, back=8, ahead=4, sigma=3.0):
    for side, name in (("right", "Right"), ("left", "Left")):
        err = {"map": [], "angle averaged": [], "positions averaged": []}
        for _, _, rows in runs(dump):
            arm = np.array([[[float(r[f"{name}{j}_{c}"]) for c in "xyz"] for j in JOINTS] for r, _ in rows])
            want = np.array([float(t[f"{side}_elbow_deg"]) for _, t in rows])
            angles = np.array([angle(*a) for a in arm])
            for t in range(len(arm)):
                idx = np.arange(max(0, t - back), min(len(arm) - 1, t + ahead) + 1)
                w = np.exp(-0.5 * ((idx - t) / sigma) ** 2)
                w /= w.sum()
                s = arm[t, 0]
                l1, l2 = np.linalg.norm(arm[t, 1] - s), np.linalg.norm(arm[t, 2] - arm[t, 1])
                to_elbow = w @ (arm[idx, 1] - arm[idx, 0])
                elbow = s + to_elbow / np.linalg.norm(to_elbow) * l1
                to_wrist = s + w @ (arm[idx, 2] - arm[idx, 0]) - elbow
                wrist = elbow + to_wrist / np.linalg.norm(to_wrist) * l2
                err["map"].append(angles[t] - want[t])
                err["angle averaged"].append(w @ angles[idx] - want[t])
                err["positions averaged"].append(angle(s, elbow, wrist) - want[t])
        print(f"{side} elbow: " + ", ".join(f"{k} {math.sqrt(np.mean(np.square(v))):.1f}°" for k, v in err.items()))


def depth_z(dump):
    pairs = {}  # (tag, segment) -> [(true px, detector px)]
    signs = []  # (segment, true tilt, MAP depth difference, detector Δz / torso)
    for tag, cam, rows in runs(dump):
        depth = lambda p: (p - cam[0]) @ cam[1]
        for r, t in rows:
            g = lambda n, c: float(t[f"{n}_{c}"])
            torso = math.hypot((g("left_shoulder", "u") + g("right_shoulder", "u")) / 2 - g("pelvis", "u"),
                               (g("left_shoulder", "v") + g("right_shoulder", "v")) / 2 - g("pelvis", "v"))
            for side, name in (("right", "Right"), ("left", "Left")):
                z = [float(r[f"{name}{j}_det_z"]) for j in JOINTS]
                if any(math.isnan(x) for x in z):
                    continue
                p = [np.array([float(t[f"{side}_{j.lower()}_{c}"]) for c in "xyz"]) for j in JOINTS]
                m = [np.array([float(r[f"{name}{j}_{c}"]) for c in "xyz"]) for j in JOINTS]
                for seg, (a, b) in (("upper arm", (0, 1)), ("forearm", (1, 2))):
                    da, db = depth(p[a]), depth(p[b])
                    pairs.setdefault((tag, seg), []).append(((db - da) * cam[4] * 2 / (da + db), z[b] - z[a]))
                    # The tracking camera looks down −z from the origin.
                    signs.append((seg, (db - da) / np.linalg.norm(p[b] - p[a]), m[a][2] - m[b][2], (z[b] - z[a]) / torso))
    for seg in ("upper arm", "forearm"):
        for (tag, s), v in sorted(pairs.items()):
            if s == seg:
                x, y = np.array(v).T
                print(f"{seg} {tag}: κ (slope through 0) {(x @ y) / (x @ x):.2f}, correlation {np.corrcoef(x, y)[0, 1]:.2f}")
        rows = [(tilt, mp, dz) for s, tilt, mp, dz in signs if s == seg]
        tilt, mp, dz = (np.array(c) for c in zip(*rows))
        for lo, hi in ((0, 0.15), (0.15, 0.3), (0.3, 0.5), (0.5, 0.8), (0.8, np.inf)):
            sel = (np.abs(dz) >= lo) & (np.abs(dz) < hi) & (np.abs(tilt) > 0.2)
            print(f"  {seg}, detector |Δz| {lo}–{hi} torso, true tilt > 0.2 ({sel.sum()} frames): on the truth's side "
                  f"detector {100 * np.mean(np.sign(dz[sel]) == np.sign(tilt[sel])):.0f} %, "
                  f"MAP {100 * np.mean(np.sign(mp[sel]) == np.sign(tilt[sel])):.0f} %")


def torso(dump, half_width=0.16, half_depth=0.11):
    def deepest(point, side, name):
        """The forearm's deepest point inside the torso (0 outside, 1 on
        its axis), and the elbow angle."""
        s, e, w = (point(f"{name}{j}", f"{side}_{j.lower()}") for j in JOINTS)
        left, right = point("LeftShoulder", "left_shoulder"), point("RightShoulder", "right_shoulder")
        pelvis = point("Hips", "pelvis")
        # The chest frame, once per pose.
        x = (left - right) / np.linalg.norm(left - right)
        up = (left + right) / 2 - pelvis
        y = up - x * (x @ up)
        y /= np.linalg.norm(y)
        z = np.cross(x, y)
        depth = 0.0
        for p in (e, w, (e + w) / 2, (2 * e + w) / 3, (e + 2 * w) / 3):
            d = p - pelvis
            if 0 <= d @ y <= up @ y:
                depth = max(depth, 1 - math.hypot(d @ x / half_width, d @ z / half_depth))
        return depth, angle(s, e, w)

    for side, name in (("right", "Right"), ("left", "Left")):
        inside, truth_inside, err_in, err_out = [], [], [], []
        for _, _, rows in runs(dump):
            for r, t in rows:
                depth, map_angle = deepest(lambda m, _: np.array([float(r[f"{m}_{c}"]) for c in "xyz"]), side, name)
                truth_depth, _ = deepest(lambda _, n: np.array([float(t[f"{n}_{c}"]) for c in "xyz"]), side, name)
                inside.append(depth)
                truth_inside.append(truth_depth)
                (err_in if depth > 0 else err_out).append(map_angle - float(t[f"{side}_elbow_deg"]))
        inside, truth_inside = np.array(inside), np.array(truth_inside)
        rmse = lambda e: math.sqrt(np.mean(np.square(e))) if e else float("nan")
        print(f"{side} elbow, {len(inside)} frames: the MAP's forearm inside the torso in "
              f"{np.mean(inside > 0) * 100:.1f} % ({np.mean(inside > 0.2) * 100:.1f} % deeper than 0.2), "
              f"the truth's in {np.mean(truth_inside > 0) * 100:.1f} % ({np.mean(truth_inside > 0.2) * 100:.1f} %); "
              f"MAP RMSE there {rmse(err_in):.1f}°, elsewhere {rmse(err_out):.1f}°, all {rmse(err_in + err_out):.1f}°")


if __name__ == "__main__":
    if sys.argv[1] == "--torso":
        torso(sys.argv[2])
    elif sys.argv[1] == "--smoothing":
        smoothing(sys.argv[2])
    elif sys.argv[1] == "--depth-z":
        depth_z(sys.argv[2])
    else:
        main(sys.argv[1])

//! Writes the samples of the learned arm prior (`track::ArmDensity`):
//! each arm's upper-arm and forearm directions in the chest frame, from the
//! evaluation set's *tuning* motions only (assets/evalset/clips.toml), 512
//! frames evenly spaced over the three clips (taken at 60 frames/s), both
//! arms (the right one mirrored) — 1,024 rows.
//!
//! ```sh
//! cargo run -p track --example arm_prior_table -- assets/priors/arm_directions.csv
//! ```
//!
//! `--frames N` samples N frames instead; `--also CLIP.bvh` adds a motion
//! (the evaluation set's CC rig or the CMU rig of `cmu_131_*`) and
//! `--also CLIP.txt` a DeepMimic humanoid motion (`assets/motions/deepmimic`,
//! every key frame), to learn a prior of one's own — never a validation
//! motion for the evaluation; `--leave-out CLIP.bvh` drops one of the
//! tuning motions (a leave-one-motion-out table for the tuning clips).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use nalgebra::{Point3, Quaternion, UnitQuaternion, Vector3};
use skeleton::Bvh;

/// The tuning motions (CC rig) the prior is learned from.
const CLIPS: [&str; 3] = [
    "assets/motions/cmu_cc_005_02.bvh",
    "assets/motions/cmu_cc_006_14.bvh",
    "assets/motions/cmu_cc_007_01.bvh",
];
/// Frames sampled over all clips together.
const FRAMES: usize = 512;

fn main() -> Result<()> {
    let usage = "usage: arm_prior_table [--frames N] [--also CLIP.bvh|CLIP.txt ...] [--leave-out CLIP.bvh] OUT.csv";
    let mut frames_wanted = FRAMES;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // The tuning motions from the repository; `--also` files as given.
    let mut clips: Vec<PathBuf> = CLIPS.iter().map(|c| root.join(c)).collect();
    let mut out = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--frames" => {
                let v = args.next().context("--frames needs a count")?;
                frames_wanted = v
                    .parse()
                    .ok()
                    .filter(|&n: &usize| n > 0)
                    .with_context(|| format!("--frames {v}: not a positive count"))?;
            }
            "--also" => clips.push(args.next().context("--also needs a motion file")?.into()),
            "--leave-out" => {
                let name = args.next().context("--leave-out needs a tuning motion")?;
                let before = clips.len();
                clips.retain(|c| !c.ends_with(&name));
                if clips.len() == before {
                    bail!("--leave-out {name}: not one of the tuning motions {CLIPS:?}");
                }
            }
            _ if a.starts_with("--") => bail!("unknown flag {a}; {usage}"),
            _ if out.is_none() => out = Some(a),
            _ => bail!("{usage}"),
        }
    }
    let Some(out) = out else { bail!("{usage}") };
    let out = Path::new(&out);
    if out.is_dir() {
        bail!("{} is a directory, not an output file", out.display());
    }
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        bail!("{}: no such folder for the output", dir.display());
    }
    // Every frame after the T-pose (frame 0) of every clip: the pelvis and
    // each arm's shoulder, elbow and wrist (left, right).
    let mut frames: Vec<(Point3<f64>, Arm, Arm)> = Vec::new();
    for path in &clips {
        let clip = path.display();
        if path.extension().is_some_and(|e| e == "txt") {
            frames.extend(deepmimic_arms(path).with_context(|| format!("reading {clip}"))?);
            continue;
        }
        let bvh = Bvh::load(path).with_context(|| format!("reading {clip}"))?;
        let id = |name: &str| {
            bvh.skeleton
                .find(name)
                .with_context(|| format!("{clip}: no joint {name}"))
        };
        // The CC rig of the evaluation motions, or the CMU rig of the walk
        // and the hop.
        let cc = bvh.skeleton.find("CC_Base_Hip").is_ok();
        let hip = id(if cc { "CC_Base_Hip" } else { "Hips" })?;
        let side = |s: &str, long: &str| -> Result<[usize; 3]> {
            if cc {
                Ok([
                    id(&format!("CC_Base_{s}_Upperarm"))?,
                    id(&format!("CC_Base_{s}_Forearm"))?,
                    id(&format!("CC_Base_{s}_Hand"))?,
                ])
            } else {
                Ok([
                    id(&format!("{long}Shoulder"))?,
                    id(&format!("{long}Elbow"))?,
                    id(&format!("{long}Wrist"))?,
                ])
            }
        };
        let (left, right) = (side("L", "Left")?, side("R", "Right")?);
        // Every frame at 60 frames/s (a 120 frames/s clip every second one).
        let step = ((1.0 / 60.0) / bvh.frame_time).round().max(1.0) as usize;
        for f in (1..bvh.frames.len()).step_by(step) {
            let world = bvh.forward_kinematics(f)?;
            let p = |j: usize| Point3::from(world[j].translation.vector);
            frames.push((p(hip), left.map(p), right.map(p)));
        }
    }
    if frames.is_empty() {
        bail!("no frames: every motion was left out");
    }
    let mut text = String::from("u_x,u_y,u_z,f_x,f_y,f_z\n");
    for k in 0..frames_wanted {
        let (pelvis, left, right) = &frames[k * frames.len() / frames_wanted];
        let axes = track::chest_frame(&left[0], &right[0], pelvis)
            .context("a frame with coincident shoulders")?;
        for (arm, mirror) in [(left, 1.0), (right, -1.0)] {
            let a = track::arm_feature(&axes, mirror, &arm[0], &arm[1], &arm[2])
                .context("a zero-length arm segment")?;
            let row: Vec<String> = a.iter().map(|v| format!("{v:.5}")).collect();
            text.push_str(&row.join(","));
            text.push('\n');
        }
    }
    std::fs::write(out, text).with_context(|| format!("writing {}", out.display()))?;
    println!(
        "{}: {} samples from {} frames",
        out.display(),
        2 * frames_wanted,
        frames.len()
    );
    Ok(())
}

/// One arm's shoulder, elbow and wrist.
type Arm = [Point3<f64>; 3];

/// The pelvis and both arms (left, right) of every key frame of a DeepMimic
/// humanoid motion (`{"Frames": [[dt, root position, root, chest, neck,
/// right hip, right knee, right ankle, right shoulder, right elbow, left
/// hip, …, left shoulder, left elbow], …]}`: quaternions `w x y z`,
/// relative to the parent; the knees and elbows one angle about the
/// joint's z axis), by forward kinematics on the DeepMimic humanoid's
/// offsets in metres (`humanoid3d`: y up, x forward, z to the right).
fn deepmimic_arms(path: &Path) -> Result<Vec<(Point3<f64>, Arm, Arm)>> {
    /// The chest above the root, each shoulder on the chest (right: +z),
    /// the elbow below the shoulder and the wrist below the elbow.
    const CHEST: [f64; 3] = [0.0, 0.236151, 0.0];
    const SHOULDER: [f64; 3] = [-0.02405, 0.2435, 0.18311];
    const UPPER_ARM: f64 = 0.274788;
    const FOREARM: f64 = 0.258947;
    /// A frame's length and where each arm's shoulder quaternion starts
    /// (its elbow angle follows).
    const LEN: usize = 44;
    const RIGHT: usize = 25;
    const LEFT: usize = 39;
    let text = std::fs::read_to_string(path)?;
    let json: serde_json::Value = serde_json::from_str(&text).context("not JSON")?;
    let rows = json["Frames"].as_array().context("no \"Frames\" list")?;
    let quat = |v: &[f64]| UnitQuaternion::from_quaternion(Quaternion::new(v[0], v[1], v[2], v[3]));
    let mut out = Vec::with_capacity(rows.len());
    for (n, row) in rows.iter().enumerate() {
        let v: Vec<f64> = row
            .as_array()
            .and_then(|r| r.iter().map(serde_json::Value::as_f64).collect())
            .with_context(|| format!("frame {n}: not a list of numbers"))?;
        if v.len() != LEN || v.iter().any(|x| !x.is_finite()) {
            bail!("frame {n}: {} values, {LEN} finite ones expected", v.len());
        }
        let pelvis = Point3::new(v[1], v[2], v[3]);
        let chest = quat(&v[4..8]) * quat(&v[8..12]);
        let chest_at = pelvis + quat(&v[4..8]) * Vector3::from(CHEST);
        let arm = |start: usize, side: f64| -> Arm {
            let [x, y, z] = SHOULDER;
            let shoulder = chest_at + chest * Vector3::new(x, y, side * z);
            let upper = chest * quat(&v[start..start + 4]);
            let elbow = shoulder + upper * Vector3::new(0.0, -UPPER_ARM, 0.0);
            let fore = upper * UnitQuaternion::from_axis_angle(&Vector3::z_axis(), v[start + 4]);
            [
                shoulder,
                elbow,
                elbow + fore * Vector3::new(0.0, -FOREARM, 0.0),
            ]
        };
        out.push((pelvis, arm(LEFT, -1.0), arm(RIGHT, 1.0)));
    }
    Ok(out)
}

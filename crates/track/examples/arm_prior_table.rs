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
//! (the evaluation set's CC rig or the CMU rig of `cmu_131_*`), to learn a
//! prior of one's own — never a validation motion for the evaluation.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use nalgebra::Point3;
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
    let usage = "usage: arm_prior_table [--frames N] [--also CLIP.bvh ...] OUT.csv";
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
            "--also" => clips.push(args.next().context("--also needs a BVH file")?.into()),
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
    type Arm = [Point3<f64>; 3];
    let mut frames: Vec<(Point3<f64>, Arm, Arm)> = Vec::new();
    for path in &clips {
        let clip = path.display();
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

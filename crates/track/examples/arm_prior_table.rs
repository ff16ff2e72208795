//! Writes the samples of the learned arm prior (`track::ArmDensity`):
//! each arm's upper-arm and forearm directions in the chest frame, from the
//! evaluation set's *tuning* motions only (assets/evalset/clips.toml), 128
//! frames evenly spaced over the three clips, both arms (the right one
//! mirrored) — 256 rows.
//!
//! ```sh
//! cargo run -p track --example arm_prior_table -- assets/priors/arm_directions.csv
//! ```

use std::path::Path;

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
const FRAMES: usize = 128;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [out] = args.as_slice() else {
        bail!("usage: arm_prior_table OUT.csv");
    };
    let out = Path::new(out);
    if out.is_dir() {
        bail!("{} is a directory, not an output file", out.display());
    }
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        bail!("{}: no such folder for the output", dir.display());
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // Every frame after the T-pose (frame 0) of every clip: the pelvis and
    // each arm's shoulder, elbow and wrist (left, right).
    type Arm = [Point3<f64>; 3];
    let mut frames: Vec<(Point3<f64>, Arm, Arm)> = Vec::new();
    for clip in CLIPS {
        let path = root.join(clip);
        let bvh = Bvh::load(&path).with_context(|| format!("reading {}", path.display()))?;
        let id = |name: &str| {
            bvh.skeleton
                .find(name)
                .with_context(|| format!("{clip}: no joint {name}"))
        };
        let hip = id("CC_Base_Hip")?;
        let side = |s: &str| -> Result<[usize; 3]> {
            Ok([
                id(&format!("CC_Base_{s}_Upperarm"))?,
                id(&format!("CC_Base_{s}_Forearm"))?,
                id(&format!("CC_Base_{s}_Hand"))?,
            ])
        };
        let (left, right) = (side("L")?, side("R")?);
        for f in 1..bvh.frames.len() {
            let world = bvh.forward_kinematics(f)?;
            let p = |j: usize| Point3::from(world[j].translation.vector);
            frames.push((p(hip), left.map(p), right.map(p)));
        }
    }
    let mut text = String::from("u_x,u_y,u_z,f_x,f_y,f_z\n");
    for k in 0..FRAMES {
        let (pelvis, left, right) = &frames[k * frames.len() / FRAMES];
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
        2 * FRAMES,
        frames.len()
    );
    Ok(())
}

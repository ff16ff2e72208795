//! `keypoint_bias`: where the keypoint detector puts the arm joints on a
//! footage clip with ground truth, measured against the skeleton's joint
//! centres — the figures behind `track::keypoint_term::LANDMARK_SHIFT` and
//! `DEFAULT_DEPTH_SCALE`.
//!
//! For each arm, over the `stand` and `move` frames (2D bones of at least
//! 15 pixels):
//! - the elbow's offset along the true shoulder → elbow line and the
//!   wrist's along elbow → wrist, as a fraction of that bone's 2D length
//!   (median; negative: short of the joint, towards the joint above);
//! - the detector's relative depth against the truth, per segment
//!   (`move` frames): the share of segments tilted by more than 0.3 (sine)
//!   whose depth order the detector gets right, and κ, the least-squares
//!   slope of the detector's depth difference against the true one in
//!   pixels at the segment's distance.
//!
//! The clip should be one the tracker is not evaluated on; the constants
//! were measured on this one:
//!
//! ```sh
//! cargo run --release -p vision --example footage -- --preset b --seed 7 \
//!     --subject-height 1.70 --sleeves short --hfov 58 --out /tmp/holdout --tag h
//! posecloud keypoints --frames /tmp/holdout/session_h.mp4 --background-frames 30 \
//!     --with-depth --out-csv /tmp/holdout/kp_h.csv
//! cargo run --release -p track --example keypoint_bias -- /tmp/holdout h /tmp/holdout/kp_h.csv
//! ```

use std::path::Path;

use anyhow::{Context, Result, bail};
use nalgebra::Point3;

#[path = "common/csv.rs"]
mod csv;
use csv::Csv;

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, tag, kp_path] = args.as_slice() else {
        bail!(
            "usage: keypoint_bias FOOTAGE_DIR TAG KEYPOINTS.csv (from `posecloud keypoints --with-depth`)"
        );
    };
    let dir = Path::new(dir);
    let truth = Csv::load(&dir.join(format!("truth_{tag}.csv")))?;
    let kp = Csv::load(Path::new(kp_path))?;
    let camera = vision::camera_file::load_camera(dir.join(format!("camera_{tag}.toml")))
        .with_context(|| format!("camera_{tag}.toml"))?;
    let kp_rows: std::collections::HashMap<usize, &Vec<String>> = kp
        .rows
        .iter()
        .filter_map(|r| Some((kp.get(r, "frame")? as usize, r)))
        .collect();
    if !kp.columns.contains_key("right_elbow_z") {
        bail!("{kp_path} has no depth columns: write it with `posecloud keypoints --with-depth`");
    }
    println!(
        "keypoint detector against the truth of {}/truth_{tag}.csv",
        dir.display()
    );
    println!(
        "| side | elbow along the upper arm | wrist along the forearm | upper arm: depth order right, κ | forearm: depth order right, κ |"
    );
    println!("|---|---|---|---|---|");
    for side in ["right", "left"] {
        let t2 = |r: &[String], j: &str| -> Option<[f64; 2]> {
            Some([
                truth.get(r, &format!("{side}_{j}_u"))?,
                truth.get(r, &format!("{side}_{j}_v"))?,
            ])
        };
        let t3 = |r: &[String], j: &str| -> Option<Point3<f64>> {
            Some(Point3::new(
                truth.get(r, &format!("{side}_{j}_x"))?,
                truth.get(r, &format!("{side}_{j}_y"))?,
                truth.get(r, &format!("{side}_{j}_z"))?,
            ))
        };
        let k2 = |r: &[String], j: &str| -> Option<[f64; 3]> {
            Some([
                kp.get(r, &format!("{side}_{j}_u"))?,
                kp.get(r, &format!("{side}_{j}_v"))?,
                kp.get(r, &format!("{side}_{j}_z"))?,
            ])
        };
        let mut along = [Vec::new(), Vec::new()];
        let mut depth = [Vec::new(), Vec::new()];
        for r in &truth.rows {
            let phase = truth.text(r, "phase").unwrap_or("");
            if phase != "stand" && phase != "move" {
                continue;
            }
            let Some(frame) = truth.get(r, "frame") else {
                continue;
            };
            let Some(k) = kp_rows.get(&(frame as usize)) else {
                continue;
            };
            for (s, (a, b)) in [("shoulder", "elbow"), ("elbow", "wrist")]
                .into_iter()
                .enumerate()
            {
                let (Some(ta), Some(tb), Some(kb)) = (t2(r, a), t2(r, b), k2(k, b)) else {
                    continue;
                };
                let d = [tb[0] - ta[0], tb[1] - ta[1]];
                let len = d[0].hypot(d[1]);
                if len >= 15.0 {
                    let e = [kb[0] - tb[0], kb[1] - tb[1]];
                    along[s].push((e[0] * d[0] + e[1] * d[1]) / (len * len));
                }
                if phase != "move" {
                    continue;
                }
                let (Some(pa), Some(pb), Some(ka)) = (t3(r, a), t3(r, b), k2(k, a)) else {
                    continue;
                };
                let (Some((_, _, za)), Some((_, _, zb))) =
                    (camera.project(&pa), camera.project(&pb))
                else {
                    continue;
                };
                let bone = (pb - pa).norm();
                let true_px = (zb - za) * camera.fx() * 2.0 / (za + zb);
                depth[s].push(((zb - za) / bone, true_px, kb[2] - ka[2]));
            }
        }
        let order = |v: &[(f64, f64, f64)]| -> (f64, f64) {
            let tilted: Vec<_> = v.iter().filter(|(sin, _, _)| sin.abs() > 0.3).collect();
            let right = tilted.iter().filter(|(_, t, d)| t * d > 0.0).count();
            let (sxy, sxx) = v.iter().fold((0.0, 0.0), |(sxy, sxx), (_, t, d)| {
                (sxy + t * d, sxx + t * t)
            });
            (right as f64 / tilted.len().max(1) as f64, sxy / sxx)
        };
        let (o_upper, k_upper) = order(&depth[0]);
        let (o_fore, k_fore) = order(&depth[1]);
        println!(
            "| {side} | {:+.3} | {:+.3} | {:.0} %, {:.2} | {:.0} %, {:.2} |",
            median(along[0].clone()),
            median(along[1].clone()),
            100.0 * o_upper,
            k_upper,
            100.0 * o_fore,
            k_fore
        );
    }
    Ok(())
}

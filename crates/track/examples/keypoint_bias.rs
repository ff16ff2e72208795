//! `keypoint_bias`: where the keypoint detector puts the arm joints on a
//! footage clip with ground truth, measured against the skeleton's joint
//! centres — the figures behind `track::LANDMARK_SHIFT` and
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
//! Then the **lifting floor**: the right- and left-elbow angle RMSE over the
//! `move` frames of an ideal lifting from the detections — the true
//! shoulder in 3D, the true bone lengths, each segment's depth order from
//! the detector's `z`, the elbow and the wrist put on the rays through the
//! detected ones (the landmarks taken at the joint, or short of it by
//! `LANDMARK_SHIFT`), and the same with the true 2D joints. No tracker
//! that fits these detections can be expected to do much better than the
//! detector's own floor.
//!
//! The clip should be one the tracker is not evaluated on; the constants
//! were measured on this one:
//!
//! ```sh
//! cargo run --release -p footage --example footage -- --preset b --seed 7 \
//!     --subject-height 1.70 --sleeves short --hfov 58 --out /tmp/holdout --tag h
//! posecloud keypoints --frames /tmp/holdout/session_h.mp4 --background-frames 30 \
//!     --with-depth --out-csv /tmp/holdout/kp_h.csv
//! cargo run --release -p track --example keypoint_bias -- /tmp/holdout h /tmp/holdout/kp_h.csv
//! ```

use std::path::Path;

use anyhow::{Context, Result, bail};
use labels::Camera;
use nalgebra::{Point3, Vector3};
use track::angle_between;
use track::landmark_shift;

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

/// The point of the ray of sight through the pixel `(u, v)` at distance
/// `r` from `centre`: the one farther from the camera when `far`, else the
/// nearer ([`track::points_at_distance`]: the point at `r` towards
/// the ray when the ray passes farther than `r`).
fn on_ray(
    camera: &Camera,
    (u, v): (f64, f64),
    centre: &Point3<f64>,
    r: f64,
    far: bool,
) -> Point3<f64> {
    let (c, d) = camera.ray_through(u, v);
    let forward = camera.world_from_camera().rotation * Vector3::z();
    let prefer = centre + forward * if far { r } else { -r };
    track::points_at_distance(&c, &d, centre, r, &prefer)
        .first()
        .copied()
        .unwrap_or(*centre)
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
    let camera = vision::load_camera(dir.join(format!("camera_{tag}.toml")))
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
    lifting_floor(&truth, &kp_rows, &kp, &camera);
    Ok(())
}

/// The lifting floor (module docs).
fn lifting_floor(
    truth: &Csv,
    kp_rows: &std::collections::HashMap<usize, &Vec<String>>,
    kp: &Csv,
    camera: &Camera,
) {
    let variants: [(&str, bool, bool); 3] = [
        ("detected, at the joint", false, false),
        ("detected, short of the joint (LANDMARK_SHIFT)", true, false),
        ("true 2D joints", false, true),
    ];
    println!();
    println!(
        "lifting floor (true shoulder and bone lengths, depth order from the detector), elbow RMSE over `move`:"
    );
    println!("| 2D elbow and wrist | right | left |");
    println!("|---|---|---|");
    for (label, shifted, true_2d) in variants {
        let shift = |joint: &str| {
            if shifted {
                landmark_shift(joint).unwrap_or(0.0)
            } else {
                0.0
            }
        };
        let (f1, f2) = (shift("elbow"), shift("wrist"));
        let mut rmse = Vec::new();
        for side in ["right", "left"] {
            let mut sq = Vec::new();
            for r in &truth.rows {
                if truth.text(r, "phase") != Some("move") {
                    continue;
                }
                let Some(k) = truth
                    .get(r, "frame")
                    .and_then(|f| kp_rows.get(&(f as usize)))
                else {
                    continue;
                };
                let world_point = |j: &str| -> Option<Point3<f64>> {
                    let p = Point3::new(
                        truth.get(r, &format!("{side}_{j}_x"))?,
                        truth.get(r, &format!("{side}_{j}_y"))?,
                        truth.get(r, &format!("{side}_{j}_z"))?,
                    );
                    Some(p)
                };
                let (Some(s), Some(e), Some(w)) = (
                    world_point("shoulder"),
                    world_point("elbow"),
                    world_point("wrist"),
                ) else {
                    continue;
                };
                let det = |j: &str, c: &str| kp.get(k, &format!("{side}_{j}_{c}"));
                let (Some(zs), Some(ze), Some(zw)) =
                    (det("shoulder", "z"), det("elbow", "z"), det("wrist", "z"))
                else {
                    continue;
                };
                let pixel = |j: &str| -> Option<(f64, f64)> {
                    if true_2d {
                        Some((
                            truth.get(r, &format!("{side}_{j}_u"))?,
                            truth.get(r, &format!("{side}_{j}_v"))?,
                        ))
                    } else {
                        Some((det(j, "u")?, det(j, "v")?))
                    }
                };
                let (Some(pe), Some(pw)) = (pixel("elbow"), pixel("wrist")) else {
                    continue;
                };
                let (l1, l2) = ((e - s).norm(), (w - e).norm());
                let p = on_ray(camera, pe, &s, (1.0 - f1) * l1, ze > zs);
                let elbow = s + (p - s) / (1.0 - f1);
                let q = on_ray(camera, pw, &elbow, (1.0 - f2) * l2, zw > ze);
                let wrist = elbow + (q - elbow) / (1.0 - f2);
                let Some(t) = truth.get(r, &format!("{side}_elbow_deg")) else {
                    continue;
                };
                let angle = angle_between(&(s - elbow), &(wrist - elbow)).to_degrees();
                sq.push((angle - t).powi(2));
            }
            rmse.push((sq.iter().sum::<f64>() / sq.len().max(1) as f64).sqrt());
        }
        println!("| {label} | {:.1}° | {:.1}° |", rmse[0], rmse[1]);
    }
}

//! `session_eval`: `posecloud track` with no set-up file (default camera
//! and body, the guided start) on webcam-style session videos that the
//! tracker's capsule model did not draw (`assets/footage`, rendered by
//! the `footage` crate: other body shapes and proportions, clothing, a
//! textured room, lighting, H.264), against their ground truth.
//!
//! Per clip: when tracking started after the person began to hold still
//! (the `stand` phase), the share of the `move` phase tracked, and the
//! right- and left-elbow angle RMSE over the tracked `move` frames
//! (interior angle, 180° = straight, as `truth_*.csv` gives it).
//!
//! ```sh
//! cargo run --release -p track --example session_eval -- [--particles N] [--filter pfrth] [--seed S] \
//!     [--observation regions|keypoints|both] [--keypoint-sigma S] [--depth-sigma S] [--lifts N] \
//!     [--arm-prior W] \
//!     [--truth-body] [--mean-estimate] [TAG …]
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use track::run::{TrackRun, run_until};

#[path = "common/csv.rs"]
mod csv;
use csv::Csv;

fn footage() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/footage")
}

/// The interior angle at `b` between `a − b` and `c − b`, degrees.
fn interior_deg(a: [f64; 3], b: [f64; 3], c: [f64; 3]) -> f64 {
    let u = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    let v = [c[0] - b[0], c[1] - b[1], c[2] - b[2]];
    let dot = u[0] * v[0] + u[1] * v[1] + u[2] * v[2];
    let cross = [
        u[1] * v[2] - u[2] * v[1],
        u[2] * v[0] - u[0] * v[2],
        u[0] * v[1] - u[1] * v[0],
    ];
    let n = (cross[0].powi(2) + cross[1].powi(2) + cross[2].powi(2)).sqrt();
    n.atan2(dot).to_degrees()
}

struct Row {
    tag: String,
    start_latency_s: Option<f64>,
    move_tracked: f64,
    right_rmse: f64,
    left_rmse: f64,
    fps: f64,
    lost: usize,
}

struct Options {
    particles: usize,
    filter: String,
    seed: u64,
    observation: String,
    keypoint_sigma: f64,
    /// Track with the clip's own skeleton (`truth_TAG.bvh`: the rendered
    /// person's bone lengths) instead of the default body.
    truth_body: bool,
    /// The weighted mean as the estimate instead of the MAP particle.
    mean_estimate: bool,
    /// Keypoint-lifted hypotheses a step (0: none).
    lifts: usize,
    /// σ_z of the keypoint term's depth part (0: off).
    depth_sigma: f64,
    arm_prior: f64,
}

fn evaluate(tag: &str, o: &Options) -> Result<Row> {
    let dir = footage();
    let video = dir.join(format!("session_{tag}.mp4"));
    let truth = Csv::load(&dir.join(format!("truth_{tag}.csv")))?;
    let meta = std::fs::read_to_string(dir.join(format!("meta_{tag}.json")))?;
    let height: f64 = meta
        .split("\"subject_height\":")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .and_then(|v| v.trim().parse().ok())
        .context("meta: subject_height")?;
    let sleeves = if meta.contains("\"sleeves\": \"long\"") {
        vision::Sleeves::Long
    } else {
        vision::Sleeves::Short
    };
    let out = std::env::temp_dir().join(format!("session_eval_{}_{tag}", std::process::id()));
    std::fs::create_dir_all(&out)?;
    let mut args = TrackRun::new(video.to_str().context("path")?, out.join("est.csv"));
    args.spec.subject.height = Some(height);
    args.settings.particles = o.particles;
    args.settings.filter = o.filter.parse().map_err(anyhow::Error::msg)?;
    args.settings.seed = o.seed;
    args.settings.observation = o.observation.parse().map_err(anyhow::Error::msg)?;
    args.settings.keypoint_sigma = o.keypoint_sigma;
    args.settings.mean_estimate = o.mean_estimate;
    args.settings.keypoint_lifts = o.lifts;
    args.settings.keypoint_depth_sigma = o.depth_sigma;
    args.settings.arm_prior_weight = o.arm_prior;
    if o.truth_body {
        args.spec.subject = track::Subject {
            body: Some(dir.join(format!("truth_{tag}.bvh"))),
            height: None,
        };
    }
    args.spec.sleeves = sleeves;
    let summary = run_until(
        &args,
        &std::sync::atomic::AtomicBool::new(false),
        &mut |_| {},
    )?;
    let est = Csv::load(&out.join("est.csv"))?;

    let phase_start = |name: &str| {
        truth
            .rows
            .iter()
            .find(|r| truth.text(r, "phase") == Some(name))
            .and_then(|r| truth.get(r, "frame"))
    };
    let (Some(stand), Some(_)) = (phase_start("stand"), phase_start("move")) else {
        bail!("truth_{tag}.csv has no stand/move phases");
    };
    let fps = 30.0;
    let start_latency_s = summary.first_tracked.map(|f| (f as f64 - stand) / fps);
    let est_by_frame: HashMap<usize, &Vec<String>> = est
        .rows
        .iter()
        .filter_map(|r| Some((est.get(r, "frame")? as usize, r)))
        .collect();
    let joint = |r: &[String], name: &str| -> Option<[f64; 3]> {
        Some([
            est.get(r, &format!("{name}_x"))?,
            est.get(r, &format!("{name}_y"))?,
            est.get(r, &format!("{name}_z"))?,
        ])
    };
    let (mut moves, mut tracked, mut sq_r, mut sq_l) = (0usize, 0usize, 0.0, 0.0);
    for r in &truth.rows {
        if truth.text(r, "phase") != Some("move") {
            continue;
        }
        moves += 1;
        let frame = truth.get(r, "frame").context("frame")? as usize;
        let Some(e) = est_by_frame.get(&frame) else {
            continue;
        };
        let angle = |side: &str| -> Option<f64> {
            interior_deg(
                joint(e, &format!("{side}Shoulder"))?,
                joint(e, &format!("{side}Elbow"))?,
                joint(e, &format!("{side}Wrist"))?,
            )
            .into()
        };
        let (Some(er), Some(el)) = (angle("Right"), angle("Left")) else {
            bail!("est.csv lacks the CMU arm joints");
        };
        let (tr, tl) = (
            truth.get(r, "right_elbow_deg").context("right_elbow_deg")?,
            truth.get(r, "left_elbow_deg").context("left_elbow_deg")?,
        );
        tracked += 1;
        sq_r += (er - tr).powi(2);
        sq_l += (el - tl).powi(2);
    }
    let n = tracked.max(1) as f64;
    Ok(Row {
        tag: tag.to_string(),
        start_latency_s,
        move_tracked: tracked as f64 / moves.max(1) as f64,
        right_rmse: (sq_r / n).sqrt(),
        left_rmse: (sq_l / n).sqrt(),
        fps: summary.frames_per_second,
        lost: summary.lost,
    })
}

fn main() -> Result<()> {
    let mut o = Options {
        particles: 300,
        filter: "pfrth".into(),
        seed: 1,
        observation: "both".into(),
        keypoint_sigma: track::DEFAULT_KEYPOINT_SIGMA,
        truth_body: false,
        mean_estimate: false,
        lifts: track::DEFAULT_KEYPOINT_LIFTS,
        depth_sigma: track::DEFAULT_DEPTH_SIGMA,
        arm_prior: track::DEFAULT_ARM_PRIOR_WEIGHT,
    };
    let mut tags = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--particles" => o.particles = it.next().context("--particles N")?.parse()?,
            "--filter" => o.filter = it.next().context("--filter NAME")?,
            "--seed" => o.seed = it.next().context("--seed S")?.parse()?,
            "--truth-body" => o.truth_body = true,
            "--mean-estimate" => o.mean_estimate = true,
            "--lifts" => o.lifts = it.next().context("--lifts N")?.parse()?,
            "--depth-sigma" => o.depth_sigma = it.next().context("--depth-sigma S")?.parse()?,
            "--arm-prior" => o.arm_prior = it.next().context("--arm-prior W")?.parse()?,
            "--observation" => o.observation = it.next().context("--observation MODE")?,
            "--keypoint-sigma" => {
                o.keypoint_sigma = it.next().context("--keypoint-sigma S")?.parse()?;
            }
            t if !t.starts_with('-') => tags.push(t.to_string()),
            other => bail!("unknown flag {other}"),
        }
    }
    if tags.is_empty() {
        tags = vec!["a".into(), "b".into(), "c".into()];
    }
    println!(
        "posecloud track, no set-up files, {} N = {}, seed {}, observation {} (keypoint σ {}), on assets/footage",
        o.filter.to_uppercase(),
        o.particles,
        o.seed,
        o.observation,
        o.keypoint_sigma
    );
    println!(
        "| clip | tracking starts after holding still (s) | move phase tracked | right elbow RMSE (°) | left elbow RMSE (°) | lost | tracked frames/s |"
    );
    println!("|---|---|---|---|---|---|---|");
    for tag in &tags {
        match evaluate(tag, &o) {
            Ok(r) => println!(
                "| session_{} | {} | {:.0} % | {:.1} | {:.1} | {} | {:.1} |",
                r.tag,
                r.start_latency_s
                    .map_or("never".into(), |s| format!("{s:.2}")),
                100.0 * r.move_tracked,
                r.right_rmse,
                r.left_rmse,
                r.lost,
                r.fps
            ),
            Err(e) => println!("| session_{tag} | error: {e:#} | | | | | |"),
        }
    }
    Ok(())
}

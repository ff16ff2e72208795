//! `ik_arm` — SMC-IK Fig. 2: the 4-segment arm reaching one target.
//!
//! The arm is `presets::arm4()` (four 3-DOF ball joints without limits,
//! segments of 0.75, end effector `tip`, straight along +x at rest). Every
//! trial starts from rest with the same target and its own filter seed
//! (`--seed + trial`); the only constraint is the tip position (SMC-IK
//! Eq. 13). Each iteration records the tip of the returned estimate `x̂_k`
//! (Eq. 15; with the default `--alpha 1` that is the MAP particle itself, as
//! in the paper's Fig. 2, whose trajectories are "without the smoothing
//! process") and its distance to the target.
//!
//! ```text
//! cargo run --release --example ik_arm -- --trials 5 --png out/ik_arm.png
//! ```
//!
//! Prints the distance at selected iterations for every trial and the
//! median; `--csv` writes one row per trial and iteration, `--png` the
//! distance curves (log scale, Fig. 2b) next to the tip trajectories
//! projected on the x–y plane (Fig. 2c) with the initial arm and the final
//! arm of trial 0.
//!
//! The paper reports that the curves differ from trial to trial but keep the
//! same overall shape, and so do the trajectories.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::Parser;
use ik::{Adaptation, Constraint, ConstraintSet, JointNoise, LimitSampler, SmcIk, SmcIkConfig};
use nalgebra::Point3;
use plotkit::{INK, Mark, Panel, Series};
use posecloud_examples::{Csv, median, parse_point, require_positive, sci};
use skeleton::presets;

#[derive(Debug, Parser)]
#[command(
    about = "SMC-IK Fig. 2: distance to target and end-effector trajectories of the 4-segment arm"
)]
struct Args {
    /// Number of trials (filter seeds --seed, --seed + 1, …).
    #[arg(long, default_value_t = 5)]
    trials: usize,
    /// Iterations per trial.
    #[arg(long, default_value_t = 200)]
    iterations: usize,
    #[arg(long, default_value_t = 50)]
    particles: usize,
    /// `plain` (the paper's fixed σ) or `adaptive` (one-fifth success rule).
    #[arg(long, default_value = "plain")]
    variant: String,
    /// Smoothing factor α of Eq. 15 (1 = no smoothing, as in Fig. 2c).
    #[arg(long, default_value_t = 1.0)]
    alpha: f64,
    /// Random-walk σ per joint (rad).
    #[arg(long, default_value_t = 0.05)]
    sigma: f64,
    /// Noise σ of the target constraint (same unit as the arm).
    #[arg(long, default_value_t = 0.1)]
    target_sigma: f64,
    /// Target position x,y,z (the arm's root is at the origin, its reach 3).
    #[arg(long, default_value = "1.0,2.0,0.5", value_parser = parse_point)]
    target: [f64; 3],
    /// Seed of trial 0.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write one row per trial and iteration to this CSV file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Draw the distance curves and the trajectories to this PNG file.
    #[arg(long)]
    png: Option<PathBuf>,
}

/// What one trial recorded: the estimate's tip at iterations 0..=K.
struct Trial {
    tips: Vec<Point3<f64>>,
    map_distances: Vec<f64>,
    final_pose: Vec<f64>,
    seconds: f64,
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args.trials == 0 || args.iterations == 0 || args.particles == 0 {
        bail!("--trials, --iterations and --particles must be at least 1");
    }
    let adaptation = match args.variant.as_str() {
        "plain" => Adaptation::None,
        "adaptive" => Adaptation::success_rule(),
        other => bail!("--variant: unknown '{other}' (plain, adaptive)"),
    };
    require_positive(&[
        ("--sigma", args.sigma),
        ("--target-sigma", args.target_sigma),
    ])?;
    if !(args.alpha > 0.0 && args.alpha <= 1.0) {
        bail!("--alpha must be in (0, 1], got {}", args.alpha);
    }
    let skeleton = Arc::new(presets::arm4());
    let tip = skeleton.find("tip")?;
    let target = Point3::from(args.target);
    let rest_world = skeleton.forward_kinematics(&skeleton.rest_pose())?;
    let start = Point3::from(rest_world[tip].translation.vector);
    println!(
        "SMC-IK Fig. 2: 4-segment arm (12 DOF), target ({:.2}, {:.2}, {:.2}), initial distance {:.3}",
        target.x,
        target.y,
        target.z,
        (start - target).norm()
    );
    println!(
        "variant {}, {} particles, σ_joint {} rad, σ_target {}, α {}, {} iterations, {} trials",
        args.variant,
        args.particles,
        args.sigma,
        args.target_sigma,
        args.alpha,
        args.iterations,
        args.trials
    );

    let mut trials = Vec::with_capacity(args.trials);
    for t in 0..args.trials {
        let constraints = ConstraintSet::with(
            &skeleton,
            [Constraint::position(tip, target, args.target_sigma)],
        )?;
        let config = SmcIkConfig {
            particles: args.particles,
            seed: args.seed + t as u64,
            alpha: args.alpha,
            sampler: LimitSampler::AcceptReject { max_retries: 20 },
            noise: JointNoise::isotropic(args.sigma, 0.0),
            adaptation,
            ..SmcIkConfig::default()
        };
        let mut solver = SmcIk::new(skeleton.clone(), constraints, config, &skeleton.rest_pose())?;
        let mut tips = vec![start];
        let mut map_distances = vec![(start - target).norm()];
        let clock = Instant::now();
        for _ in 0..args.iterations {
            solver.step()?;
            let w = skeleton.forward_kinematics(solver.estimate())?;
            tips.push(Point3::from(w[tip].translation.vector));
            map_distances.push(solver.map_cost().sqrt() * args.target_sigma);
        }
        trials.push(Trial {
            tips,
            map_distances,
            final_pose: solver.estimate().to_vec(),
            seconds: clock.elapsed().as_secs_f64(),
        });
    }
    let distance = |tr: &Trial, k: usize| (tr.tips[k] - target).norm();

    // The table: distance of x̂_k's tip at selected iterations.
    let mut rows: Vec<usize> = [0, 5, 10, 20, 50, 100, 150, 200]
        .into_iter()
        .filter(|&k| k <= args.iterations)
        .collect();
    if rows.last() != Some(&args.iterations) {
        rows.push(args.iterations);
    }
    let shown = args.trials.min(10);
    println!();
    println!("distance from the tip of x̂_k to the target");
    print!("{:>9}", "iteration");
    for t in 0..shown {
        print!("{:>11}", format!("trial {t}"));
    }
    println!("{:>11}", "median");
    for &k in &rows {
        print!("{k:>9}");
        for tr in &trials[..shown] {
            print!("{:>11}", sci(distance(tr, k), 2));
        }
        let all: Vec<f64> = trials.iter().map(|tr| distance(tr, k)).collect();
        println!("{:>11}", sci(median(&all).unwrap_or(f64::NAN), 2));
    }
    if shown < args.trials {
        println!(
            "(first {shown} of {} trials shown; the median is over all)",
            args.trials
        );
    }
    let best: Vec<f64> = trials
        .iter()
        .map(|tr| {
            tr.map_distances
                .iter()
                .copied()
                .fold(f64::INFINITY, f64::min)
        })
        .collect();
    let per_it: Vec<f64> = trials
        .iter()
        .map(|tr| 1e3 * tr.seconds / args.iterations as f64)
        .collect();
    println!(
        "best MAP distance over the run: median {}, min {}, max {}; {:.3} ms per iteration (median)",
        sci(median(&best).unwrap_or(f64::NAN), 2),
        sci(best.iter().copied().fold(f64::INFINITY, f64::min), 2),
        sci(best.iter().copied().fold(0.0, f64::max), 2),
        median(&per_it).unwrap_or(f64::NAN)
    );

    if let Some(path) = &args.csv {
        let mut csv = Csv::new(&[
            "trial",
            "iteration",
            "distance",
            "map_distance",
            "tip_x",
            "tip_y",
            "tip_z",
        ]);
        for (t, tr) in trials.iter().enumerate() {
            for (k, p) in tr.tips.iter().enumerate() {
                csv.row([
                    t.to_string(),
                    k.to_string(),
                    format!("{:.6e}", distance(tr, k)),
                    format!("{:.6e}", tr.map_distances[k]),
                    format!("{:.6}", p.x),
                    format!("{:.6}", p.y),
                    format!("{:.6}", p.z),
                ])?;
            }
        }
        csv.write(path)?;
        println!("wrote {}", path.display());
    }

    if let Some(path) = &args.png {
        let mut curves =
            Panel::new("Distance to target (Fig. 2b)", "iteration", "distance").log_y();
        let mut paths = Panel::drawing("End-effector trajectories, x–y (Fig. 2c)", "x", "y");
        let arm = |pose: &[f64]| -> Result<Vec<(f64, f64)>> {
            let w = skeleton.forward_kinematics(pose)?;
            Ok(w.iter()
                .map(|m| (m.translation.vector.x, m.translation.vector.y))
                .collect())
        };
        paths.push(
            Series::line(
                Some("initial arm".to_string()),
                arm(&skeleton.rest_pose())?,
                INK,
            )
            .mark(Mark::LineDots(3, 5)),
        );
        for (t, tr) in trials.iter().enumerate() {
            let label = (t < 10).then(|| format!("trial {t}"));
            curves.push(Series::line(
                label,
                (0..tr.tips.len())
                    .map(|k| (k as f64, distance(tr, k)))
                    .collect(),
                t,
            ));
            paths.push(Series::line(
                None,
                tr.tips.iter().map(|p| (p.x, p.y)).collect(),
                t,
            ));
        }
        paths.push(
            Series::line(
                Some("final arm, trial 0".to_string()),
                arm(&trials[0].final_pose)?,
                0,
            )
            .mark(Mark::LineDots(3, 5)),
        );
        paths.push(
            Series::line(Some("target".to_string()), vec![(target.x, target.y)], 3)
                .mark(Mark::Crosses(9)),
        );
        plotkit::save_png(path, &[curves, paths], 2, (820, 700))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

//! `ik_chain90` — SMC-IK §6.1, Fig. 3: a 90-DOF chain reaching a target
//! with its centre of mass on the vertical through the root and a smoothness
//! energy (Eq. 16).
//!
//! The chain is `presets::chain(30, 3.0)`: 30 exp-map ball joints without
//! limits, segments of 0.1, root at the origin, straight along +x at rest,
//! end effector `tip`. The world is y-up, so "vertical" is y. Constraints
//! (SMC-IK Eq. 14):
//!
//! - `tip` at `--target` (σ `--target-sigma`);
//! - centre of mass on the vertical line through the root:
//!   `CentreOfMass { target: origin, axes: [true, false, true] }` (σ `--com-sigma`);
//! - `Smoothness` over the 30 ball joints with half-width `--k` (Eq. 16:
//!   `C = Σᵢ Σ_{j=−k..k} ‖Log(qᵢ⁻¹ q_{i+j})‖`, σ `--smooth-sigma`). `C` is
//!   not zero for any bent chain, so it pulls against the other two: its σ
//!   sets how much bending it tolerates.
//!
//! For every variant × particle count, `--trials` runs (filter seeds 0, 1, …)
//! of `--iterations` iterations from rest. The table gives the medians over
//! trials of the iteration rate (time in `SmcIk::step` only, on all rayon
//! threads), and for the final returned estimate `x̂` (Eq. 15, `--alpha`) the
//! tip–target distance, the horizontal distance of the centre of mass from
//! the vertical through the root, and `C`.
//!
//! ```text
//! cargo run --release --example ik_chain90 -- --png out/ik_chain90.png
//! ```
//!
//! The paper: "This example ran at an approximate speed of 60 frames per
//! second" (a 2007 laptop; particle count not stated).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::Parser;
use ik::smoothness_energy;
use ik::{
    Adaptation, Constraint, ConstraintKind, ConstraintSet, JointNoise, LimitSampler, Noise, SmcIk,
    SmcIkConfig,
};
use nalgebra::{Point3, Vector3};
use plotkit::{INK, Mark, Panel, Series};
use posecloud_examples::{Csv, median, parse_point, require_positive, sci};
use skeleton::{Skeleton, presets};

#[derive(Debug, Parser)]
#[command(
    about = "SMC-IK Fig. 3: 90-DOF chain with centre of mass on the vertical and smoothness (Eq. 16)"
)]
struct Args {
    /// Particle counts to time.
    #[arg(long, value_delimiter = ',', default_value = "20,50,100")]
    particles: Vec<usize>,
    /// Variants: `plain` (the paper's fixed σ) and/or `adaptive` (one-fifth rule).
    #[arg(long, value_delimiter = ',', default_value = "plain,adaptive")]
    variants: Vec<String>,
    #[arg(long, default_value_t = 1000)]
    iterations: usize,
    /// Runs per cell (filter seeds 0, 1, …); the table shows medians.
    #[arg(long, default_value_t = 3)]
    trials: usize,
    /// Tip target x,y,z (y up, root at the origin, chain length 3).
    #[arg(long, default_value = "0.8,2.0,0.0", value_parser = parse_point)]
    target: [f64; 3],
    /// Neighbourhood half-width k of Eq. 16 (1 or 2).
    #[arg(long, default_value_t = 1)]
    k: usize,
    /// Random-walk σ per joint (rad).
    #[arg(long, default_value_t = 0.02)]
    sigma: f64,
    /// σ of the tip constraint.
    #[arg(long, default_value_t = 0.03)]
    target_sigma: f64,
    /// σ of the centre-of-mass constraint.
    #[arg(long, default_value_t = 0.03)]
    com_sigma: f64,
    /// σ of the smoothness energy C (rad).
    #[arg(long, default_value_t = 3.0)]
    smooth_sigma: f64,
    /// Smoothing factor α of Eq. 15.
    #[arg(long, default_value_t = 0.1)]
    alpha: f64,
    /// Write one row per run and iteration to this CSV file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Draw the initial and final chains (x–y, x–z) and the convergence to this PNG file.
    #[arg(long)]
    png: Option<PathBuf>,
}

/// What one run measured.
struct Run {
    step_seconds: f64,
    /// Per iteration 0..=K, for x̂_k: tip distance, CoM horizontal offset, C.
    tip: Vec<f64>,
    com: Vec<f64>,
    smooth: Vec<f64>,
    map_cost: f64,
    final_pose: Vec<f64>,
}

struct Problem {
    skeleton: Arc<Skeleton>,
    tip: usize,
    balls: Vec<usize>,
    target: Point3<f64>,
}

impl Problem {
    /// (tip distance, CoM horizontal offset, C) of a pose.
    fn measure(&self, pose: &[f64], k: usize) -> Result<(f64, f64, f64)> {
        let w = self.skeleton.forward_kinematics(pose)?;
        let tip = Point3::from(w[self.tip].translation.vector);
        let c = self.skeleton.centre_of_mass(&w);
        Ok((
            (tip - self.target).norm(),
            c.x.hypot(c.z),
            smoothness_energy(&self.skeleton, pose, &self.balls, k),
        ))
    }
}

fn run(args: &Args, problem: &Problem, variant: &str, particles: usize, seed: u64) -> Result<Run> {
    let skeleton = &problem.skeleton;
    let adaptation = match variant {
        "plain" => Adaptation::None,
        "adaptive" => Adaptation::success_rule(),
        other => bail!("--variants: unknown '{other}' (plain, adaptive)"),
    };
    let mut constraints = ConstraintSet::new();
    constraints.add(
        skeleton,
        Constraint::position(problem.tip, problem.target, args.target_sigma),
    )?;
    constraints.add(
        skeleton,
        Constraint::new(
            ConstraintKind::CentreOfMass {
                target: Point3::origin(),
                axes: [true, false, true],
            },
            Noise::Isotropic(args.com_sigma),
        ),
    )?;
    constraints.add(
        skeleton,
        Constraint::new(
            ConstraintKind::Smoothness {
                joints: problem.balls.clone(),
                k: args.k,
            },
            Noise::Isotropic(args.smooth_sigma),
        ),
    )?;
    let config = SmcIkConfig {
        particles,
        seed,
        alpha: args.alpha,
        sampler: LimitSampler::AcceptReject { max_retries: 20 },
        noise: JointNoise::isotropic(args.sigma, 0.0),
        adaptation,
        ..SmcIkConfig::default()
    };
    let rest = skeleton.rest_pose();
    let mut solver = SmcIk::new(skeleton.clone(), constraints, config, &rest)?;
    let (t0, c0, s0) = problem.measure(&rest, args.k)?;
    let mut r = Run {
        step_seconds: 0.0,
        tip: vec![t0],
        com: vec![c0],
        smooth: vec![s0],
        map_cost: f64::NAN,
        final_pose: Vec::new(),
    };
    for _ in 0..args.iterations {
        let clock = Instant::now();
        solver.step()?;
        r.step_seconds += clock.elapsed().as_secs_f64();
        let (t, c, s) = problem.measure(solver.estimate(), args.k)?;
        r.tip.push(t);
        r.com.push(c);
        r.smooth.push(s);
    }
    r.map_cost = solver.map_cost();
    r.final_pose = solver.estimate().to_vec();
    Ok(r)
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args.particles.is_empty() || args.particles.contains(&0) {
        bail!("--particles: give one or more counts >= 1");
    }
    if args.iterations == 0 || args.trials == 0 {
        bail!("--iterations and --trials must be at least 1");
    }
    if args.k == 0 {
        bail!(
            "--k must be at least 1 (Eq. 16 compares each joint with its k neighbours on each side)"
        );
    }
    require_positive(&[
        ("--sigma", args.sigma),
        ("--target-sigma", args.target_sigma),
        ("--com-sigma", args.com_sigma),
        ("--smooth-sigma", args.smooth_sigma),
    ])?;
    let skeleton = Arc::new(presets::chain(30, 3.0));
    let balls: Vec<usize> = (0..30)
        .map(|i| skeleton.find(&format!("j{i}")))
        .collect::<Result<_, _>>()?;
    let problem = Problem {
        tip: skeleton.find("tip")?,
        balls,
        target: Point3::from(args.target),
        skeleton: skeleton.clone(),
    };
    let (t0, c0, _) = problem.measure(&skeleton.rest_pose(), args.k)?;
    println!(
        "SMC-IK Fig. 3: chain of 30 ball joints (90 DOF), target ({:.2}, {:.2}, {:.2}) at {:.3} from the rest tip; centre of mass {:.3} off the vertical at rest",
        args.target[0], args.target[1], args.target[2], t0, c0
    );
    println!(
        "σ_joint {} rad, σ_tip {}, σ_CoM {}, σ_C {} (k = {}), α {}, {} iterations, {} trials per row, {} rayon threads",
        args.sigma,
        args.target_sigma,
        args.com_sigma,
        args.smooth_sigma,
        args.k,
        args.alpha,
        args.iterations,
        args.trials,
        rayon::current_num_threads()
    );
    println!();
    println!(
        "{:>9}{:>10}{:>11}{:>13}{:>13}{:>13}{:>12}{:>12}",
        "variant",
        "particles",
        "iter/s",
        "tip dist",
        "CoM offset",
        "C (Eq. 16)",
        "mean angle",
        "MAP cost"
    );

    let mut csv = Csv::new(&[
        "variant",
        "particles",
        "trial",
        "iteration",
        "tip_distance",
        "com_offset",
        "smoothness",
    ]);
    let mut summary = Csv::new(&[
        "variant",
        "particles",
        "trials",
        "iterations_per_second",
        "tip_distance",
        "com_offset",
        "smoothness",
        "map_cost",
    ]);
    // Trial 0 of every row, for the figure.
    let mut shown: Vec<(String, Run)> = Vec::new();
    for variant in &args.variants {
        for &n in &args.particles {
            let mut runs = Vec::with_capacity(args.trials);
            for t in 0..args.trials {
                runs.push(run(&args, &problem, variant, n, t as u64)?);
            }
            let med = |f: &dyn Fn(&Run) -> f64| {
                median(&runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(f64::NAN)
            };
            let rate = med(&|r| args.iterations as f64 / r.step_seconds);
            let tip = med(&|r| *r.tip.last().unwrap_or(&f64::NAN));
            let com = med(&|r| *r.com.last().unwrap_or(&f64::NAN));
            let smooth = med(&|r| *r.smooth.last().unwrap_or(&f64::NAN));
            let cost = med(&|r| r.map_cost);
            // Mean geodesic angle per (ordered) pair of Eq. 16: 2·Σ_{d=1..k} (30 − d) pairs.
            let pairs: usize = (1..=args.k.min(29)).map(|d| 2 * (30 - d)).sum();
            let mean_bend = smooth / pairs as f64;
            println!(
                "{variant:>9}{n:>10}{rate:>11.1}{:>13}{:>13}{:>13.4}{:>12.4}{:>12}",
                sci(tip, 2),
                sci(com, 2),
                smooth,
                mean_bend,
                sci(cost, 2)
            );
            summary.row([
                variant.clone(),
                n.to_string(),
                args.trials.to_string(),
                format!("{rate:.2}"),
                format!("{tip:.6e}"),
                format!("{com:.6e}"),
                format!("{smooth:.6}"),
                format!("{cost:.6e}"),
            ])?;
            for (t, r) in runs.iter().enumerate() {
                for k in 0..r.tip.len() {
                    csv.row([
                        variant.clone(),
                        n.to_string(),
                        t.to_string(),
                        k.to_string(),
                        format!("{:.6e}", r.tip[k]),
                        format!("{:.6e}", r.com[k]),
                        format!("{:.6}", r.smooth[k]),
                    ])?;
                }
            }
            shown.push((format!("{variant}, N={n}"), runs.swap_remove(0)));
        }
    }
    println!(
        "(medians over trials of the final estimate x̂; distances in the chain's unit, total length 3; C and the mean angle per pair of Eq. 16 in rad)"
    );

    if let Some(path) = &args.csv {
        csv.write(path)?;
        let summary_path = path.with_extension("summary.csv");
        summary.write(&summary_path)?;
        println!("wrote {} and {}", path.display(), summary_path.display());
    }
    if let Some(path) = &args.png {
        let (label, last) = shown.last().expect("at least one row");
        let points = |pose: &[f64], a: usize, b: usize| -> Result<Vec<(f64, f64)>> {
            let w = skeleton.forward_kinematics(pose)?;
            Ok(w.iter()
                .map(|m| (m.translation.vector[a], m.translation.vector[b]))
                .collect())
        };
        let com_of = |pose: &[f64]| -> Result<Vector3<f64>> {
            Ok(skeleton
                .centre_of_mass(&skeleton.forward_kinematics(pose)?)
                .coords)
        };
        let rest = skeleton.rest_pose();
        let mut views = Vec::new();
        for (a, b, name) in [(0, 1, "x–y (front)"), (0, 2, "x–z (top)")] {
            let mut p = Panel::drawing(
                format!("Initial and final chain, {name}; {label}, trial 0"),
                ["x", "y", "z"][a],
                ["x", "y", "z"][b],
            );
            p.push(
                Series::line(Some("initial".to_string()), points(&rest, a, b)?, INK)
                    .mark(Mark::LineDots(2, 3)),
            );
            p.push(
                Series::line(
                    Some("final estimate".to_string()),
                    points(&last.final_pose, a, b)?,
                    0,
                )
                .mark(Mark::LineDots(2, 3)),
            );
            let (ci, cf) = (com_of(&rest)?, com_of(&last.final_pose)?);
            p.push(
                Series::line(Some("CoM initial".to_string()), vec![(ci[a], ci[b])], INK)
                    .mark(Mark::Dots(7)),
            );
            p.push(
                Series::line(Some("CoM final".to_string()), vec![(cf[a], cf[b])], 2)
                    .mark(Mark::Dots(7)),
            );
            p.push(
                Series::line(
                    Some("target".to_string()),
                    vec![(args.target[a], args.target[b])],
                    3,
                )
                .mark(Mark::Crosses(9)),
            );
            if b == 1 {
                // The vertical through the root.
                p.vlines.push(0.0);
            }
            views.push(p);
        }
        let mut tip =
            Panel::new("Tip distance to target (trial 0)", "iteration", "distance").log_y();
        let mut com = Panel::new(
            "CoM distance from the vertical (trial 0)",
            "iteration",
            "horizontal offset",
        )
        .log_y();
        for (i, (label, r)) in shown.iter().enumerate() {
            let series = |v: &[f64]| {
                v.iter()
                    .enumerate()
                    .map(|(k, &d)| (k as f64, d))
                    .collect::<Vec<_>>()
            };
            tip.push(Series::line(Some(label.clone()), series(&r.tip), i));
            com.push(Series::line(Some(label.clone()), series(&r.com), i));
        }
        views.push(tip);
        views.push(com);
        plotkit::save_png(path, &views, 2, (820, 640))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

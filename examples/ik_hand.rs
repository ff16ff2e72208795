//! `ik_hand` — SMC-IK §6.4: a forearm and hand whose five fingertips reach
//! two chained sets of targets, with the last two joints of every finger but
//! the thumb coupled (`θ_dist = ⅔ θ_mid`).
//!
//! The body is `presets::hand()`: a 3-DOF elbow (the root, fixed in space),
//! a 3-DOF wrist, five fingers `thumb, index, middle, ring, little` with a
//! 2-DOF base (`{f}_base`), hinges `{f}_mid` and `{f}_dist`, and a fixed
//! `{f}_tip`; 22 joints, 26 DOF, all limited; metres.
//!
//! **Targets** (seeded by `--seed + trial`, reachable by construction): the
//! fingertip positions of a random pose within the limits that satisfies the
//! coupling — elbow, wrist and finger bases uniformly within their limits
//! (`ik::sample_within_limits`), `θ_mid ~ U[0°, 110°]` and
//! `θ_dist = ⅔ θ_mid` (≤ 73.3°, inside the 0…80° limit) for index to
//! little, the thumb's mid and dist independently uniform. Set A and then
//! set B are drawn from the same stream.
//!
//! **Constraints**: one position constraint per fingertip (σ `--tip-sigma`)
//! and `Coupled { param_a: mid, param_b: dist, ratio: 2/3 }` for index,
//! middle, ring and little (σ `--coupling-sigma`, rad), the indices taken
//! from `Skeleton::param_range`.
//!
//! **Run**: from the rest pose, phase A runs until success or
//! `--iterations`; then the targets switch to set B in place
//! (`ConstraintSet::set_position_target`) and the same solver continues from
//! its current cloud, again until success or `--iterations`. Success of a
//! phase: the MAP pose has every fingertip within `--tolerance` of its target
//! and every coupling residual `|θ_dist − ⅔ θ_mid|` within
//! `--coupling-tolerance`. Every MAP and smoothed estimate is checked against
//! the joint limits.
//!
//! ```text
//! cargo run --release --example ik_hand -- --trials 20 --png out/ik_hand.png
//! ```
//!
//! The paper shows the animation (Fig. 6) and no numbers.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Parser;
use ik::lever_arm_noise;
use ik::sample_within_limits;
use ik::{
    Adaptation, Constraint, ConstraintKind, ConstraintSet, LimitSampler, Noise, SmcIk, SmcIkConfig,
};
use nalgebra::Point3;
use plotkit::{Mark, Panel, Series};
use posecloud_examples::{Csv, median, require_positive, sci};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;
use skeleton::{Skeleton, presets};

#[derive(Debug, Parser)]
#[command(about = "SMC-IK §6.4: hand with coupled finger joints, two chained target sets")]
struct Args {
    #[arg(long, default_value_t = 20)]
    trials: usize,
    /// Iteration budget of each phase.
    #[arg(long, default_value_t = 2000)]
    iterations: usize,
    #[arg(long, default_value_t = 100)]
    particles: usize,
    /// `reject` (the paper's accept/reject, 20 retries) or `truncated`.
    #[arg(long, default_value = "reject")]
    sampler: String,
    /// Fingertip success tolerance (m).
    #[arg(long, default_value_t = 1e-3)]
    tolerance: f64,
    /// Coupling success tolerance |θ_dist − ⅔ θ_mid| (rad).
    #[arg(long, default_value_t = 0.01)]
    coupling_tolerance: f64,
    /// σ of the fingertip constraints (m).
    #[arg(long, default_value_t = 0.005)]
    tip_sigma: f64,
    /// σ of the coupling constraints (rad). Looser than the success
    /// tolerance on purpose: the prior moves mid and dist independently, so
    /// a tight coupling leaves only a narrow valley to walk along.
    #[arg(long, default_value_t = 0.1)]
    coupling_sigma: f64,
    /// Random-walk σ (rad) of a joint whose lever arm is --lever-ref.
    #[arg(long, default_value_t = 0.05)]
    sigma: f64,
    /// Lever-arm preconditioning: joint σ = sigma · min(lever_ref / L, max_gain).
    #[arg(long, default_value_t = 0.1)]
    lever_ref: f64,
    #[arg(long, default_value_t = 3.0)]
    max_gain: f64,
    /// One-fifth rule: noise shrink factor after a non-improving iteration.
    #[arg(long, default_value_t = 0.85)]
    shrink: f64,
    /// Smoothing factor α of Eq. 15 for the returned estimate.
    #[arg(long, default_value_t = 0.1)]
    alpha: f64,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Print one line per trial and phase.
    #[arg(long)]
    verbose: bool,
    /// Write one row per trial and phase to this CSV file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Draw the convergence and the hand of trial 0 to this PNG file.
    #[arg(long)]
    png: Option<PathBuf>,
}

const FINGERS: [&str; 5] = ["thumb", "index", "middle", "ring", "little"];
const RATIO: f64 = 2.0 / 3.0;

struct Hand {
    skeleton: Arc<Skeleton>,
    tips: [usize; 5],
    /// (mid, dist) parameter indices of index, middle, ring, little.
    coupled: [(usize, usize); 4],
}

impl Hand {
    fn new() -> Result<Self> {
        let skeleton = Arc::new(presets::hand());
        let find = |f: &str, s: &str| skeleton.find(&format!("{f}_{s}"));
        let mut tips = [0; 5];
        for (t, f) in tips.iter_mut().zip(FINGERS) {
            *t = find(f, "tip")?;
        }
        let mut coupled = [(0, 0); 4];
        for (c, f) in coupled.iter_mut().zip(&FINGERS[1..]) {
            let (mid, dist) = (find(f, "mid")?, find(f, "dist")?);
            let (rm, rd) = (skeleton.param_range(mid), skeleton.param_range(dist));
            if rm.len() != 1 || rd.len() != 1 {
                bail!("{f}: mid and dist must be hinges");
            }
            *c = (rm.start, rd.start);
        }
        Ok(Self {
            skeleton,
            tips,
            coupled,
        })
    }

    fn tip_positions(&self, pose: &[f64]) -> Result<[Point3<f64>; 5]> {
        let w = self.skeleton.forward_kinematics(pose)?;
        Ok(self.tips.map(|j| Point3::from(w[j].translation.vector)))
    }

    fn coupling_residuals(&self, pose: &[f64]) -> [f64; 4] {
        self.coupled.map(|(m, d)| pose[d] - RATIO * pose[m])
    }

    /// The target rule of the module docs: (pose, fingertip targets).
    fn draw_targets(&self, rng: &mut Pcg64) -> Result<(Vec<f64>, [Point3<f64>; 5])> {
        let skel = &self.skeleton;
        let mut pose = skel.rest_pose();
        for (j, joint) in skel.joints().iter().enumerate() {
            let r = skel.param_range(j);
            sample_within_limits(&joint.kind, rng, &mut pose[r])?;
        }
        for &(m, d) in &self.coupled {
            pose[m] = rng.random_range(0.0..=110f64.to_radians());
            pose[d] = RATIO * pose[m];
        }
        if !skel.within_limits(&pose) {
            bail!(
                "target rule: pose outside the limits at {:?}",
                skel.limit_violations(&pose)
            );
        }
        let tips = self.tip_positions(&pose)?;
        Ok((pose, tips))
    }
}

/// One phase of one trial.
#[derive(Clone, Debug)]
struct Phase {
    success_iteration: Option<usize>,
    iterations: usize,
    seconds: f64,
    /// Per finger, at the end of the phase (MAP pose).
    tip_errors: [f64; 5],
    coupling_max: f64,
    /// Per iteration: largest fingertip error and coupling residual of the MAP.
    tip_curve: Vec<f64>,
    coupling_curve: Vec<f64>,
    limit_violations: usize,
    final_pose: Vec<f64>,
}

fn run_phase(
    args: &Args,
    hand: &Hand,
    solver: &mut SmcIk,
    targets: &[Point3<f64>; 5],
) -> Result<Phase> {
    for (i, t) in targets.iter().enumerate() {
        // Constraints 0..5 are the fingertips (see `trial`).
        solver.constraints_mut().set_position_target(i, *t)?;
    }
    let skel = &hand.skeleton;
    let mut p = Phase {
        success_iteration: None,
        iterations: 0,
        seconds: 0.0,
        tip_errors: [f64::NAN; 5],
        coupling_max: f64::NAN,
        tip_curve: Vec::new(),
        coupling_curve: Vec::new(),
        limit_violations: 0,
        final_pose: Vec::new(),
    };
    let clock = Instant::now();
    for it in 1..=args.iterations {
        solver.step()?;
        p.iterations = it;
        for pose in [solver.map_pose(), solver.estimate()] {
            if !skel.within_limits(pose) {
                p.limit_violations += 1;
            }
        }
        let tips = hand.tip_positions(solver.map_pose())?;
        for (e, (q, t)) in p.tip_errors.iter_mut().zip(tips.iter().zip(targets)) {
            *e = (q - t).norm();
        }
        p.coupling_max = hand
            .coupling_residuals(solver.map_pose())
            .iter()
            .map(|r| r.abs())
            .fold(0.0, f64::max);
        let worst = p.tip_errors.iter().copied().fold(0.0, f64::max);
        p.tip_curve.push(worst);
        p.coupling_curve.push(p.coupling_max);
        if worst <= args.tolerance && p.coupling_max <= args.coupling_tolerance {
            p.success_iteration = Some(it);
            break;
        }
    }
    p.seconds = clock.elapsed().as_secs_f64();
    p.final_pose = solver.map_pose().to_vec();
    Ok(p)
}

fn trial(args: &Args, hand: &Hand, sets: &[[Point3<f64>; 5]; 2], seed: u64) -> Result<[Phase; 2]> {
    let skel = &hand.skeleton;
    let mut constraints = ConstraintSet::new();
    for (&j, t) in hand.tips.iter().zip(&sets[0]) {
        constraints.add(skel, Constraint::position(j, *t, args.tip_sigma))?;
    }
    for &(m, d) in &hand.coupled {
        constraints.add(
            skel,
            Constraint::new(
                ConstraintKind::Coupled {
                    param_a: m,
                    param_b: d,
                    ratio: RATIO,
                },
                Noise::Isotropic(args.coupling_sigma),
            ),
        )?;
    }
    let sampler = match args.sampler.as_str() {
        "reject" => LimitSampler::AcceptReject { max_retries: 20 },
        "truncated" => LimitSampler::Truncated,
        other => bail!("--sampler: unknown '{other}' (reject, truncated)"),
    };
    let adaptation = Adaptation::success_rule_with_shrink(args.shrink);
    let config = SmcIkConfig {
        particles: args.particles,
        seed,
        alpha: args.alpha,
        sampler,
        adaptation,
        ..SmcIkConfig::default()
    };
    let rest = skel.rest_pose();
    let mut solver = SmcIk::new(skel.clone(), constraints, config, &rest)?;
    solver.set_noise(lever_arm_noise(
        skel,
        &rest,
        &hand.tips,
        args.sigma,
        args.lever_ref,
        args.max_gain,
        0.0,
    )?)?;
    let a = run_phase(args, hand, &mut solver, &sets[0])?;
    let b = run_phase(args, hand, &mut solver, &sets[1])?;
    Ok([a, b])
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args.trials == 0 || args.iterations == 0 || args.particles == 0 {
        bail!("--trials, --iterations and --particles must be at least 1");
    }
    require_positive(&[
        ("--tolerance", args.tolerance),
        ("--coupling-tolerance", args.coupling_tolerance),
        ("--tip-sigma", args.tip_sigma),
        ("--coupling-sigma", args.coupling_sigma),
        ("--sigma", args.sigma),
        ("--lever-ref", args.lever_ref),
        ("--max-gain", args.max_gain),
    ])?;
    let hand = Hand::new()?;
    println!(
        "SMC-IK §6.4: hand ({} joints, {} DOF), 5 fingertip targets, θ_dist = ⅔ θ_mid on index..little, two chained target sets",
        hand.skeleton.len(),
        hand.skeleton.dof()
    );
    println!(
        "adaptive (one-fifth rule, shrink {}), sampler {}, {} particles, ≤ {} iterations per phase, σ_tip {} m, σ_coupling {} rad, joint σ {}·min({} m / lever, {}), α {}; success: tips within {} m, couplings within {} rad; {} trials",
        args.shrink,
        args.sampler,
        args.particles,
        args.iterations,
        args.tip_sigma,
        args.coupling_sigma,
        args.sigma,
        args.lever_ref,
        args.max_gain,
        args.alpha,
        args.tolerance,
        args.coupling_tolerance,
        args.trials
    );

    let mut results = Vec::with_capacity(args.trials);
    let mut all_sets = Vec::with_capacity(args.trials);
    for t in 0..args.trials {
        let seed = args.seed + t as u64;
        let mut rng = Pcg64::seed_from_u64(seed);
        let (pose_a, a) = hand
            .draw_targets(&mut rng)
            .with_context(|| format!("targets A of trial {t}"))?;
        let (pose_b, b) = hand
            .draw_targets(&mut rng)
            .with_context(|| format!("targets B of trial {t}"))?;
        let phases = trial(&args, &hand, &[a, b], seed)?;
        if args.verbose {
            for (name, p) in ["A", "B"].iter().zip(&phases) {
                println!(
                    "trial {t:>3} phase {name}: {:>5} its, worst tip {}, coupling {}",
                    p.success_iteration.map_or("fail".into(), |i| i.to_string()),
                    sci(p.tip_errors.iter().copied().fold(0.0, f64::max), 2),
                    sci(p.coupling_max, 2)
                );
            }
        }
        results.push(phases);
        all_sets.push(([pose_a, pose_b], [a, b]));
    }

    println!();
    println!(
        "{:>6}{:>10}{:>12}{:>11}{:>13}{:>13}{:>14}{:>12}",
        "phase",
        "success",
        "median its",
        "median ms",
        "tip err*",
        "worst tip",
        "coupling*",
        "limit viol."
    );
    let mut csv = Csv::new(&[
        "trial",
        "phase",
        "success",
        "iterations",
        "seconds",
        "tip_error_thumb",
        "tip_error_index",
        "tip_error_middle",
        "tip_error_ring",
        "tip_error_little",
        "coupling_residual_max",
        "limit_violations",
    ]);
    for (k, name) in ["A", "B"].iter().enumerate() {
        let phases: Vec<&Phase> = results.iter().map(|r| &r[k]).collect();
        let ok: Vec<&&Phase> = phases
            .iter()
            .filter(|p| p.success_iteration.is_some())
            .collect();
        let its: Vec<f64> = ok.iter().map(|p| p.iterations as f64).collect();
        let ms: Vec<f64> = ok.iter().map(|p| 1e3 * p.seconds).collect();
        let worst: Vec<f64> = phases
            .iter()
            .map(|p| p.tip_errors.iter().copied().fold(0.0, f64::max))
            .collect();
        let coupling: Vec<f64> = phases.iter().map(|p| p.coupling_max).collect();
        let violations: usize = phases.iter().map(|p| p.limit_violations).sum();
        println!(
            "{name:>6}{:>10}{:>12}{:>11}{:>13}{:>13}{:>14}{violations:>12}",
            format!("{:.1}%", 100.0 * ok.len() as f64 / phases.len() as f64),
            median(&its).map_or("-".into(), |m| format!("{m:.0}")),
            median(&ms).map_or("-".into(), |m| format!("{m:.1}")),
            sci(median(&worst).unwrap_or(f64::NAN), 2),
            sci(worst.iter().copied().fold(0.0, f64::max), 2),
            sci(median(&coupling).unwrap_or(f64::NAN), 2),
        );
        for (t, p) in phases.iter().enumerate() {
            let mut row = vec![
                t.to_string(),
                name.to_string(),
                p.success_iteration.is_some().to_string(),
                p.iterations.to_string(),
                format!("{:.6}", p.seconds),
            ];
            row.extend(p.tip_errors.iter().map(|e| format!("{e:.6e}")));
            row.push(format!("{:.6e}", p.coupling_max));
            row.push(p.limit_violations.to_string());
            csv.row(row)?;
        }
    }
    println!(
        "(* medians over trials at the end of the phase, MAP pose: largest fingertip error (m), largest |θ_dist − ⅔ θ_mid| (rad); worst tip = worst trial; limit viol. = MAP and estimate poses outside the limits over all iterations)"
    );
    println!();
    println!("median fingertip error at the end of each phase (m)");
    print!("{:>6}", "phase");
    for f in FINGERS {
        print!("{f:>11}");
    }
    println!();
    for (k, name) in ["A", "B"].iter().enumerate() {
        print!("{name:>6}");
        for f in 0..5 {
            let e: Vec<f64> = results.iter().map(|r| r[k].tip_errors[f]).collect();
            print!("{:>11}", sci(median(&e).unwrap_or(f64::NAN), 2));
        }
        println!();
    }

    if let Some(path) = &args.csv {
        csv.write(path)?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &args.png {
        let mut tip = Panel::new(
            "Largest fingertip error (MAP); dots: switch to set B",
            "iteration",
            "distance (m)",
        )
        .log_y();
        let mut coupling = Panel::new(
            "Largest coupling residual |θ_dist − ⅔ θ_mid|",
            "iteration",
            "rad",
        )
        .log_y();
        for (t, r) in results.iter().enumerate() {
            let join = |a: &[f64], b: &[f64]| -> Vec<(f64, f64)> {
                a.iter()
                    .chain(b)
                    .enumerate()
                    .map(|(k, &e)| ((k + 1) as f64, e))
                    .collect()
            };
            let label = (t < 10).then(|| format!("trial {t}"));
            tip.push(
                Series::line(label, join(&r[0].tip_curve, &r[1].tip_curve), t).mark(Mark::Line(1)),
            );
            let switch = r[0].iterations as f64;
            tip.push(
                Series::line(
                    None,
                    vec![(switch, *r[0].tip_curve.last().unwrap_or(&f64::NAN))],
                    t,
                )
                .mark(Mark::Dots(5)),
            );
            coupling.push(
                Series::line(None, join(&r[0].coupling_curve, &r[1].coupling_curve), t)
                    .mark(Mark::Line(1)),
            );
        }
        tip.hlines.push(args.tolerance);
        coupling.hlines.push(args.coupling_tolerance);
        let mut panels = vec![tip, coupling];
        let skel = &hand.skeleton;
        let (_, targets) = &all_sets[0];
        for (a, b, view) in [(0, 1, "front view x–y"), (2, 1, "side view z–y")] {
            let mut p = Panel::drawing(
                format!("Trial 0, end of phases A and B, {view}"),
                ["x", "y", "z"][a],
                ["x", "y", "z"][b],
            );
            for (k, name) in ["A", "B"].iter().enumerate() {
                let w = skel.forward_kinematics(&results[0][k].final_pose)?;
                let mut first = true;
                for (j, joint) in skel.joints().iter().enumerate() {
                    if let Some(parent) = joint.parent {
                        let (q, r) = (w[parent].translation.vector, w[j].translation.vector);
                        let label = first.then(|| format!("solution {name}"));
                        first = false;
                        p.push(
                            Series::line(label, vec![(q[a], q[b]), (r[a], r[b])], 2 * k)
                                .mark(Mark::Line(2)),
                        );
                    }
                }
                p.push(
                    Series::line(
                        Some(format!("targets {name}")),
                        targets[k].iter().map(|t| (t[a], t[b])).collect(),
                        2 * k + 1,
                    )
                    .mark(Mark::Crosses(7)),
                );
            }
            panels.push(p);
        }
        plotkit::save_png(path, &panels, 2, (820, 700))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

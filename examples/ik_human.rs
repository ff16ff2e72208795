//! `ik_human` — SMC-IK §6.3: the whole human figure reaches two hand targets
//! with its feet on the floor.
//!
//! The body is `presets::human()`: 39 joints, 59 parameters, a free root
//! (`pelvis`, translation and exp-map rotation, no limits), every other joint
//! limited; y up, the floor is `y = 0`, and the heels and toe tips touch it
//! at rest. Every trial starts from the rest pose.
//!
//! **Targets** (seeded by `--seed + trial`, reachable by construction): a
//! random pose within the limits whose feet are exactly at their rest
//! positions, and its two finger-tip positions (`l_finger_tip`,
//! `r_finger_tip`):
//!
//! - *crouch*: hip flexion `h ~ U[0°, 45°]`, knee flexion
//!   `k ~ U[max(0°, h − 30°), h + 40°]`, ankle `h − k` (so the foot stays
//!   flat and the ankle within its −40°…30° limit), the same on both sides;
//!   the pelvis, kept upright, is then translated so that the heels and toe
//!   tips are back at their rest positions (checked to 1e-9 m);
//! - *upper body*: lumbar, thorax, chest, clavicles, shoulders, elbows,
//!   forearms, wrists and fingers drawn uniformly within their limits
//!   (`ik::sample_within_limits`); neck, head and thumbs stay
//!   at rest (they do not move the finger tips).
//!
//! **Constraints** (SMC-IK Eq. 14): a position constraint per finger tip
//! (σ `--hand-sigma`); for each of `l_heel`, `l_toe_tip`, `r_heel`,
//! `r_toe_tip` a `Floor On` constraint at `y = 0` (the paper's "feet
//! constrained to stay on the floor") and a position constraint at its rest
//! position (no sliding), both with σ `--foot-sigma`.
//!
//! **Solver configuration** (the defaults; tuned on these targets, see
//! docs/ik.md): the adaptive filter (one-fifth rule, grow 1.5, shrink 0.85
//! instead of the library's 0.75, tempered likelihood), 100 particles,
//! systematic resampling below ESS 0.5·N, α = 0.1. The random walk is
//! preconditioned by lever arm (`ik::lever_arm_noise`): joint
//! `j` rotates with σ = 0.05 · min(0.5 m / L_j, 3) rad, `L_j` the largest
//! rest distance from the joint to a finger tip or foot point it moves, so
//! that every joint displaces its end points by a similar amount (with one σ
//! for all, the pelvis and hips dominate and the feet converge very
//! slowly); joints that move no constrained point (neck, head, thumbs) and
//! the toe hinges stay at rest (with heel and toe tip pinned the toe angle
//! is forced to 0; letting it walk traps the feet at a few mm); pelvis
//! translation σ = 3 mm; σ_hand = 3 cm, σ_foot = 1 cm.
//!
//! **Success**: within `--iterations`, the MAP pose has both finger tips
//! within `--tolerance` of their targets and all four foot points within
//! `--tolerance` of their rest positions (so on the floor to that
//! tolerance). Independently of success, every returned pose — the MAP
//! particle and the smoothed estimate (Eq. 15) after every iteration — is
//! checked with `Skeleton::within_limits`; the table counts the poses
//! outside (it must be 0).
//!
//! ```text
//! cargo run --release --example ik_human -- --trials 100 --png out/ik_human.png
//! ```
//!
//! The paper shows one animation (Fig. 5) and no rate; the project's goal is
//! ≥ 99% success.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Parser;
use ik::lever_arm_noise;
use ik::sample_within_limits;
use ik::scenarios::{HUMAN_FEET, HumanProblem};
use ik::{Adaptation, JointNoise, LimitSampler, SmcIk, SmcIkConfig};
use nalgebra::Point3;
use plotkit::{INK, Mark, Panel, Series};
use posecloud_examples::{Csv, median, require_positive, sci};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;
use skeleton::{Skeleton, presets};

#[derive(Debug, Parser)]
#[command(
    about = "SMC-IK §6.3: human figure, two hand targets, feet on the floor; success rate over random reachable targets"
)]
struct Args {
    #[arg(long, default_value_t = 100)]
    trials: usize,
    /// Iteration budget per solve.
    #[arg(long, default_value_t = 2000)]
    iterations: usize,
    #[arg(long, default_value_t = 100)]
    particles: usize,
    /// Limit samplers to compare: `reject` (the paper's accept/reject, 20
    /// retries) and/or `truncated`.
    #[arg(long, value_delimiter = ',', default_value = "reject,truncated")]
    samplers: Vec<String>,
    /// Success tolerance on the hands and the feet (m).
    #[arg(long, default_value_t = 1e-3)]
    tolerance: f64,
    /// σ of the finger-tip position constraints (m).
    #[arg(long, default_value_t = 0.03)]
    hand_sigma: f64,
    /// σ of the floor and no-slide constraints of the feet (m).
    #[arg(long, default_value_t = 0.01)]
    foot_sigma: f64,
    /// Random-walk σ (rad, at noise scale 1) of a joint whose lever arm is
    /// --lever-ref (see the module docs).
    #[arg(long, default_value_t = 0.05)]
    sigma: f64,
    /// Lever-arm preconditioning: joint σ = sigma · min(lever_ref / L, max_gain).
    #[arg(long, default_value_t = 0.5)]
    lever_ref: f64,
    #[arg(long, default_value_t = 3.0)]
    max_gain: f64,
    /// Give every rotation the same σ (--sigma) instead of the lever-arm rule.
    #[arg(long)]
    uniform_noise: bool,
    /// Let the toe hinges walk (σ as the lever-arm rule gives) instead of
    /// keeping them at rest.
    #[arg(long)]
    free_toes: bool,
    /// Random-walk σ of the pelvis translation at noise scale 1 (m).
    #[arg(long, default_value_t = 0.003)]
    root_sigma: f64,
    /// Resample when the ESS falls below this fraction of the particles.
    #[arg(long, default_value_t = 0.5)]
    ess: f64,
    /// One-fifth rule: noise growth factor after an improving iteration.
    #[arg(long, default_value_t = 1.5)]
    grow: f64,
    /// One-fifth rule: noise shrink factor after a non-improving iteration.
    #[arg(long, default_value_t = 0.85)]
    shrink: f64,
    /// One-fifth rule: per-particle log-normal spread of the noise scale.
    #[arg(long, default_value_t = 0.0)]
    spread: f64,
    /// Smoothing factor α of Eq. 15 for the returned estimate.
    #[arg(long, default_value_t = 0.1)]
    alpha: f64,
    /// Seed of trial 0's targets and filter.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Print every failed trial.
    #[arg(long)]
    show_failures: bool,
    /// Write one row per sampler and trial to this CSV file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Draw the convergence of every trial and the pose of trial 0 to this PNG file.
    #[arg(long)]
    png: Option<PathBuf>,
}

/// Joints drawn uniformly within their limits for the targets.
const UPPER: [&str; 9] = [
    "lumbar", "thorax", "chest", "clavicle", "shoulder", "elbow", "forearm", "wrist", "fingers",
];

/// World positions of the two finger tips and the four foot points.
type EndPoints = ([Point3<f64>; 2], [Point3<f64>; 4]);

struct Body {
    skeleton: Arc<Skeleton>,
    /// The §6.3 problem: hands, feet and where the feet stand.
    problem: HumanProblem,
}

impl Body {
    fn new() -> Result<Self> {
        let skeleton = Arc::new(presets::human());
        let problem = HumanProblem::new(&skeleton)?;
        Ok(Self { problem, skeleton })
    }

    fn param(&self, joint: &str, k: usize) -> Result<usize> {
        let j = self.skeleton.find(joint)?;
        let r = self.skeleton.param_range(j);
        if k >= r.len() {
            bail!("joint {joint} has no parameter {k}");
        }
        Ok(r.start + k)
    }

    fn points(&self, pose: &[f64]) -> Result<EndPoints> {
        let w = self.skeleton.forward_kinematics(pose)?;
        let at = |j: usize| Point3::from(w[j].translation.vector);
        Ok((self.problem.hands.map(at), self.problem.feet.map(at)))
    }

    /// The target rule of the module docs: (target pose, finger-tip targets).
    fn draw_targets(&self, rng: &mut Pcg64) -> Result<(Vec<f64>, [Point3<f64>; 2])> {
        let skel = &self.skeleton;
        let mut pose = skel.rest_pose();
        let h = rng.random_range(0.0..=45f64.to_radians());
        let k = rng.random_range((h - 30f64.to_radians()).max(0.0)..=h + 40f64.to_radians());
        for side in ["l", "r"] {
            // Hip swing₁ is about +x; flexion (thigh forward, +z) is negative.
            pose[self.param(&format!("{side}_hip"), 0)?] = -h;
            pose[self.param(&format!("{side}_knee"), 0)?] = k;
            pose[self.param(&format!("{side}_ankle"), 0)?] = h - k;
        }
        for name in UPPER {
            let joints: Vec<String> = if ["lumbar", "thorax", "chest"].contains(&name) {
                vec![name.to_string()]
            } else {
                vec![format!("l_{name}"), format!("r_{name}")]
            };
            for n in joints {
                let j = skel.find(&n)?;
                let r = skel.param_range(j);
                sample_within_limits(&skel.joint(j).kind, rng, &mut pose[r])?;
            }
        }
        // Put the feet back: translate the (upright) pelvis.
        let (_, feet) = self.points(&pose)?;
        let d = feet[0] - self.problem.feet_rest[0];
        let root = skel.param_range(0);
        for a in 0..3 {
            pose[root.start + a] -= d[a];
        }
        let (hands, feet) = self.points(&pose)?;
        for ((p, r), n) in feet.iter().zip(&self.problem.feet_rest).zip(HUMAN_FEET) {
            if (p - r).norm() > 1e-9 {
                bail!(
                    "target rule: {n} is {:.3e} m from its rest position after the crouch",
                    (p - r).norm()
                );
            }
        }
        if !skel.within_limits(&pose) {
            bail!(
                "target rule: pose outside the limits at {:?}",
                skel.limit_violations(&pose)
            );
        }
        Ok((pose, hands))
    }
}

/// What one solve measured.
struct Outcome {
    success_iteration: Option<usize>,
    seconds: f64,
    /// Largest finger-tip and foot errors of the MAP pose, per iteration.
    hand_error: Vec<f64>,
    foot_error: Vec<f64>,
    map_violations: usize,
    estimate_violations: usize,
    acceptance: f64,
    fallbacks: u64,
    final_pose: Vec<f64>,
}

fn sampler_of(name: &str) -> Result<LimitSampler> {
    Ok(match name {
        "reject" => LimitSampler::AcceptReject { max_retries: 20 },
        "truncated" => LimitSampler::Truncated,
        other => bail!("--samplers: unknown '{other}' (reject, truncated)"),
    })
}

fn solve(
    args: &Args,
    body: &Body,
    targets: &[Point3<f64>; 2],
    sampler: LimitSampler,
    seed: u64,
) -> Result<Outcome> {
    let skel = &body.skeleton;
    let constraints = body
        .problem
        .constraints(skel, targets, args.hand_sigma, args.foot_sigma)?;
    let config = SmcIkConfig {
        particles: args.particles,
        seed,
        alpha: args.alpha,
        ess_threshold: args.ess,
        sampler,
        noise: JointNoise::isotropic(args.sigma, args.root_sigma),
        adaptation: match Adaptation::success_rule() {
            Adaptation::SuccessRule {
                min_scale,
                max_scale,
                ..
            } => Adaptation::SuccessRule {
                grow: args.grow,
                shrink: args.shrink,
                min_scale,
                max_scale,
                spread: args.spread,
            },
            other => other,
        },
        ..SmcIkConfig::default()
    };
    let rest = skel.rest_pose();
    let mut solver = SmcIk::new(skel.clone(), constraints, config, &rest)?;
    let noise = if args.uniform_noise {
        let mut n = vec![JointNoise::isotropic(args.sigma, 0.0); skel.len()];
        n[0].translation = args.root_sigma;
        n
    } else {
        let points: Vec<usize> = body
            .problem
            .hands
            .iter()
            .chain(&body.problem.feet)
            .copied()
            .collect();
        lever_arm_noise(
            skel,
            &rest,
            &points,
            args.sigma,
            args.lever_ref,
            args.max_gain,
            args.root_sigma,
        )?
    };
    solver.set_noise(noise)?;
    if !args.free_toes {
        for side in ["l", "r"] {
            solver.set_joint_noise(
                skel.find(&format!("{side}_toe"))?,
                JointNoise::isotropic(0.0, 0.0),
            )?;
        }
    }
    let mut out = Outcome {
        success_iteration: None,
        seconds: 0.0,
        hand_error: Vec::new(),
        foot_error: Vec::new(),
        map_violations: 0,
        estimate_violations: 0,
        acceptance: 1.0,
        fallbacks: 0,
        final_pose: Vec::new(),
    };
    let clock = Instant::now();
    for it in 1..=args.iterations {
        solver.step()?;
        if !skel.within_limits(solver.map_pose()) {
            out.map_violations += 1;
        }
        if !skel.within_limits(solver.estimate()) {
            out.estimate_violations += 1;
        }
        let (hands, feet) = body.points(solver.map_pose())?;
        let hand = hands
            .iter()
            .zip(targets)
            .map(|(p, t)| (p - t).norm())
            .fold(0.0, f64::max);
        let foot = feet
            .iter()
            .zip(&body.problem.feet_rest)
            .map(|(p, r)| (p - r).norm())
            .fold(0.0, f64::max);
        out.hand_error.push(hand);
        out.foot_error.push(foot);
        if hand <= args.tolerance && foot <= args.tolerance {
            out.success_iteration = Some(it);
            break;
        }
    }
    out.seconds = clock.elapsed().as_secs_f64();
    let counts = solver.prior_counts();
    out.acceptance = counts.acceptance_rate();
    out.fallbacks = counts.fallbacks;
    out.final_pose = solver.map_pose().to_vec();
    Ok(out)
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args.trials == 0 || args.iterations == 0 || args.particles == 0 {
        bail!("--trials, --iterations and --particles must be at least 1");
    }
    require_positive(&[
        ("--tolerance", args.tolerance),
        ("--hand-sigma", args.hand_sigma),
        ("--foot-sigma", args.foot_sigma),
        ("--sigma", args.sigma),
        ("--root-sigma", args.root_sigma),
        ("--lever-ref", args.lever_ref),
        ("--max-gain", args.max_gain),
    ])?;
    if !(args.grow >= 1.0 && args.shrink > 0.0 && args.shrink <= 1.0 && args.spread >= 0.0) {
        bail!("need --grow >= 1, 0 < --shrink <= 1, --spread >= 0");
    }
    let samplers: Vec<(String, LimitSampler)> = args
        .samplers
        .iter()
        .map(|s| Ok((s.clone(), sampler_of(s)?)))
        .collect::<Result<_>>()?;
    if samplers.is_empty() {
        bail!("--samplers: give reject and/or truncated");
    }
    let body = Body::new()?;
    let skel = &body.skeleton;
    println!(
        "SMC-IK §6.3: human ({} joints, {} DOF), free root, hands to random reachable targets, feet on the floor",
        skel.len(),
        skel.dof()
    );
    println!(
        "adaptive (one-fifth rule, grow {}, shrink {}, spread {}), {} particles, ESS threshold {}, ≤ {} iterations; joint σ {}; toes {}; σ_root {} m, σ_hand {} m, σ_foot {} m, α {}; success: hands and feet within {} m; {} trials",
        args.grow,
        args.shrink,
        args.spread,
        args.particles,
        args.ess,
        args.iterations,
        if args.uniform_noise {
            format!("{} rad everywhere", args.sigma)
        } else {
            format!(
                "{}·min({} m / lever, {}) rad",
                args.sigma, args.lever_ref, args.max_gain
            )
        },
        if args.free_toes {
            "free"
        } else {
            "held at rest"
        },
        args.root_sigma,
        args.hand_sigma,
        args.foot_sigma,
        args.alpha,
        args.tolerance,
        args.trials
    );

    let mut all_targets = Vec::with_capacity(args.trials);
    for t in 0..args.trials {
        let mut rng = Pcg64::seed_from_u64(args.seed + t as u64);
        all_targets.push(
            body.draw_targets(&mut rng)
                .with_context(|| format!("targets of trial {t}"))?,
        );
    }

    let mut csv = Csv::new(&[
        "sampler",
        "trial",
        "success",
        "iterations",
        "seconds",
        "hand_error",
        "foot_error",
        "map_limit_violations",
        "estimate_limit_violations",
        "acceptance",
        "fallbacks",
    ]);
    println!();
    println!(
        "{:>10}{:>10}{:>12}{:>12}{:>12}{:>13}{:>13}{:>12}{:>12}",
        "sampler",
        "success",
        "median its",
        "median ms",
        "ms/iter",
        "hand err*",
        "foot err*",
        "limit viol.",
        "acceptance"
    );
    let mut curves: Vec<(String, Vec<Outcome>)> = Vec::new();
    for (name, sampler) in &samplers {
        let mut outcomes = Vec::with_capacity(args.trials);
        for (t, (_, targets)) in all_targets.iter().enumerate() {
            let o = solve(&args, &body, targets, *sampler, args.seed + t as u64)?;
            if args.show_failures && o.success_iteration.is_none() {
                println!(
                    "failed: {name}, trial {t}: final hand error {:.2e} m, foot error {:.2e} m",
                    o.hand_error.last().unwrap_or(&f64::NAN),
                    o.foot_error.last().unwrap_or(&f64::NAN)
                );
            }
            csv.row([
                name.clone(),
                t.to_string(),
                o.success_iteration.is_some().to_string(),
                o.hand_error.len().to_string(),
                format!("{:.6}", o.seconds),
                format!("{:.6e}", o.hand_error.last().unwrap_or(&f64::NAN)),
                format!("{:.6e}", o.foot_error.last().unwrap_or(&f64::NAN)),
                o.map_violations.to_string(),
                o.estimate_violations.to_string(),
                format!("{:.5}", o.acceptance),
                o.fallbacks.to_string(),
            ])?;
            outcomes.push(o);
        }
        let ok: Vec<&Outcome> = outcomes
            .iter()
            .filter(|o| o.success_iteration.is_some())
            .collect();
        let its: Vec<f64> = ok
            .iter()
            .map(|o| o.success_iteration.unwrap_or(0) as f64)
            .collect();
        let ms: Vec<f64> = ok.iter().map(|o| 1e3 * o.seconds).collect();
        let total_its: usize = outcomes.iter().map(|o| o.hand_error.len()).sum();
        let total_s: f64 = outcomes.iter().map(|o| o.seconds).sum();
        let last = |v: &[f64]| *v.last().unwrap_or(&f64::NAN);
        let hand = median(
            &outcomes
                .iter()
                .map(|o| last(&o.hand_error))
                .collect::<Vec<_>>(),
        );
        let foot = median(
            &outcomes
                .iter()
                .map(|o| last(&o.foot_error))
                .collect::<Vec<_>>(),
        );
        let violations: usize = outcomes
            .iter()
            .map(|o| o.map_violations + o.estimate_violations)
            .sum();
        let acceptance = outcomes.iter().map(|o| o.acceptance).sum::<f64>() / outcomes.len() as f64;
        println!(
            "{name:>10}{:>10}{:>12}{:>12}{:>12.3}{:>13}{:>13}{violations:>12}{acceptance:>12.4}",
            format!("{:.1}%", 100.0 * ok.len() as f64 / args.trials as f64),
            median(&its).map_or("-".into(), |m| format!("{m:.0}")),
            median(&ms).map_or("-".into(), |m| format!("{m:.1}")),
            1e3 * total_s / total_its as f64,
            sci(hand.unwrap_or(f64::NAN), 2),
            sci(foot.unwrap_or(f64::NAN), 2),
        );
        curves.push((name.clone(), outcomes));
    }
    println!(
        "(* median over all trials of the MAP errors at the last iteration, m; limit viol. = MAP and estimate poses outside the limits, summed over every iteration of every trial; median its/ms over successful trials)"
    );

    if let Some(path) = &args.csv {
        csv.write(path)?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &args.png {
        let mut panels = Vec::new();
        for (name, outcomes) in &curves {
            let mut p = Panel::new(
                format!("Largest error of the MAP (hands, feet), {name}"),
                "iteration",
                "max distance (m)",
            )
            .log_y();
            for (t, o) in outcomes.iter().enumerate() {
                let pts = o
                    .hand_error
                    .iter()
                    .zip(&o.foot_error)
                    .enumerate()
                    .map(|(k, (&h, &f))| ((k + 1) as f64, h.max(f)))
                    .collect();
                p.push(Series::line(None, pts, t).mark(Mark::Line(1)));
            }
            p.hlines.push(args.tolerance);
            panels.push(p);
        }
        // Trial 0: the target pose and the solution of the first sampler, side view (z–y) and front view (x–y).
        let (target_pose, targets) = &all_targets[0];
        let solution = &curves[0].1[0].final_pose;
        for (a, b, view) in [(2, 1, "side view z–y"), (0, 1, "front view x–y")] {
            let mut p = Panel::drawing(
                format!("Trial 0, {view}"),
                ["x", "y", "z"][a],
                ["x", "y", "z"][b],
            );
            for (pose, colour, label) in [
                (&skel.rest_pose(), 7, "rest (start)"),
                (target_pose, 1, "pose that drew the targets"),
                (solution, 0, "solution (MAP)"),
            ] {
                let w = skel.forward_kinematics(pose)?;
                let mut first = true;
                for (j, joint) in skel.joints().iter().enumerate() {
                    if let Some(parent) = joint.parent {
                        let (q, r) = (w[parent].translation.vector, w[j].translation.vector);
                        let label = first.then(|| label.to_string());
                        first = false;
                        p.push(
                            Series::line(label, vec![(q[a], q[b]), (r[a], r[b])], colour)
                                .mark(Mark::Line(3)),
                        );
                    }
                }
            }
            p.push(
                Series::line(
                    Some("hand targets".into()),
                    targets.iter().map(|t| (t[a], t[b])).collect(),
                    3,
                )
                .mark(Mark::Crosses(9)),
            );
            if b == 1 {
                p.hlines.push(0.0);
            }
            p.push(Series::line(None, vec![(0.0, 0.0)], INK).mark(Mark::Dots(0)));
            panels.push(p);
        }
        plotkit::save_png(path, &panels, 2, (820, 700))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

//! `ik_peers` — our solvers against the `k` crate's `JacobianIkSolver` on
//! both protocols of `ik::protocol`: success rate and median time per solve,
//! side by side.
//!
//! ```text
//! cargo run --release --example ik_peers -- --trials 500
//! ```
//!
//! Solvers (every trial starts from rest; success = tip within 0.001 of the
//! target within 200 iterations; time per solve includes building the solver):
//!
//! - `k`: `k::JacobianIkSolver` (k 0.32: SVD pseudo-inverse, step multiplier
//!   0.5, joints clamped to limits), position only, `num_max_try = 200`, on
//!   the chain built from revolute joints — three hinges x, y, z per ball
//!   joint, with the protocol's limits (none for *reach*);
//! - `dls`: our damped least squares, analytic Jacobian, adaptive λ
//!   (Levenberg–Marquardt rule), joint clamping, random restarts on
//!   stagnation (TRAC-IK style), on the protocol's own skeleton;
//! - `smc+moves`: SMC-IK with one DLS optimisation move per particle and
//!   the adaptive random walk;
//! - `smc`: SMC-IK without moves (adaptive random walk, 30 particles).

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::Parser;
use ik::protocol::{CHAIN_LENGTH, MAX_ITERATIONS, Protocol, SUCCESS_DISTANCE};
use ik::{
    Adaptation, Constraint, ConstraintSet, JacobianKind, JacobianSolver, JointNoise, LimitSampler,
    Method, OptimisationMoves, SmcIk, SmcIkConfig,
};
use k::prelude::*;
use nalgebra::Point3;
use posecloud_examples::{Csv, median};
use rand::SeedableRng;
use rand_pcg::Pcg64;
use skeleton::Skeleton;

#[derive(Debug, Parser)]
#[command(about = "Our IK solvers vs the k crate on the reach and reachable-with-limits protocols")]
struct Args {
    /// Protocols, comma-separated: reach, limits45, limits90.
    #[arg(long, value_delimiter = ',', default_value = "reach,limits45,limits90")]
    protocols: Vec<String>,
    #[arg(long, default_value_t = 100)]
    trials: usize,
    #[arg(long, value_delimiter = ',', default_value = "12,18,30,45,60,90")]
    dofs: Vec<usize>,
    /// Solvers, comma-separated: k, dls, smc+moves, smc.
    #[arg(long, value_delimiter = ',', default_value = "k,dls,smc+moves,smc")]
    solvers: Vec<String>,
    /// Initial λ (m) of our DLS.
    #[arg(long, default_value_t = 0.5)]
    damping: f64,
    /// Particles of SMC-IK with optimisation moves.
    #[arg(long, default_value_t = 4)]
    move_particles: usize,
    /// λ (m) of the optimisation moves.
    #[arg(long, default_value_t = 0.3)]
    move_damping: f64,
    /// Noise gain of the optimisation moves (σ ∝ gain · whitened residual).
    #[arg(long, default_value_t = 0.05)]
    move_gain: f64,
    /// Adaptation of SMC-IK with moves: none or success-rule.
    #[arg(long, default_value = "none")]
    move_adaptation: String,
    /// Plot median time per solve vs DOF, one panel per protocol, to this PNG.
    #[arg(long)]
    png: Option<std::path::PathBuf>,
    /// Write one row per (protocol, DOF, solver) to this CSV file.
    #[arg(long)]
    csv: Option<std::path::PathBuf>,
}

/// Position noise σ of the target constraint for the SMC solvers (m).
const TARGET_SIGMA: f64 = 0.1;

struct Outcome {
    success: bool,
    seconds: f64,
}

/// The protocol's chain for `k`: per ball joint three revolute joints about
/// x, y, z; segment offsets on the first of each triplet; a fixed tip.
fn k_chain(protocol: Protocol, dof: usize) -> k::SerialChain<f64> {
    use k::nalgebra as kna;
    let n = dof / 3;
    let l = CHAIN_LENGTH / n as f64;
    let limit = match protocol {
        Protocol::Reach => None,
        Protocol::Limits(l) => Some(k::joint::Range::new(-l, l)),
    };
    let mut nodes = Vec::new();
    for i in 0..n {
        for (a, axis) in [
            kna::Vector3::x_axis(),
            kna::Vector3::y_axis(),
            kna::Vector3::z_axis(),
        ]
        .into_iter()
        .enumerate()
        {
            let offset = if i > 0 && a == 0 { l } else { 0.0 };
            let node: k::Node<f64> = k::NodeBuilder::new()
                .name(&format!("j{i}{a}"))
                .translation(kna::Translation3::new(offset, 0.0, 0.0))
                .joint_type(k::JointType::Rotational { axis })
                .limits(limit)
                .into_node();
            nodes.push(node);
        }
    }
    let tip: k::Node<f64> = k::NodeBuilder::new()
        .name("tip")
        .translation(kna::Translation3::new(l, 0.0, 0.0))
        .joint_type(k::JointType::Fixed)
        .into_node();
    nodes.push(tip);
    for w in nodes.windows(2) {
        w[1].set_parent(&w[0]);
    }
    let end = nodes.last().expect("a tip").clone();
    let _root = k::Chain::from_root(nodes[0].clone());
    k::SerialChain::from_end(&end)
}

fn solve_k(chain: &k::SerialChain<f64>, target: &Point3<f64>) -> Outcome {
    use k::nalgebra as kna;
    let zeros = vec![0.0; chain.dof()];
    chain.set_joint_positions_clamped(&zeros);
    chain.update_transforms();
    let start = Instant::now();
    let solver = k::JacobianIkSolver::new(SUCCESS_DISTANCE, 1.0, 0.5, MAX_ITERATIONS);
    let goal = kna::Isometry3::translation(target.x, target.y, target.z);
    let constraints = k::Constraints {
        rotation_x: false,
        rotation_y: false,
        rotation_z: false,
        ..Default::default()
    };
    let ok = solver
        .solve_with_constraints(chain, &goal, &constraints)
        .is_ok();
    let seconds = start.elapsed().as_secs_f64();
    // Independent check of the reported success.
    let tip = chain.end_transform().translation.vector;
    let d = ((tip.x - target.x).powi(2) + (tip.y - target.y).powi(2) + (tip.z - target.z).powi(2))
        .sqrt();
    Outcome {
        success: ok && d < SUCCESS_DISTANCE * (1.0 + 1e-9),
        seconds,
    }
}

fn tip_distance(s: &Skeleton, pose: &[f64], tip: usize, target: &Point3<f64>) -> f64 {
    let w = s.forward_kinematics(pose).expect("valid pose");
    (Point3::from(w[tip].translation.vector) - target).norm()
}

fn solve_dls(
    s: &Skeleton,
    tip: usize,
    target: &Point3<f64>,
    damping: f64,
    seed: u64,
) -> Result<Outcome> {
    let start = Instant::now();
    let cs = ConstraintSet::with(s, [Constraint::position(tip, *target, 1.0)])?;
    let mut solver = JacobianSolver::new(
        Method::Dls {
            damping,
            adaptive: true,
        },
        JacobianKind::Analytic,
    )
    .with_restarts(seed);
    let mut pose = s.rest_pose();
    let report = solver.solve(
        s,
        &cs,
        &mut pose,
        MAX_ITERATIONS,
        SUCCESS_DISTANCE * SUCCESS_DISTANCE,
    )?;
    let seconds = start.elapsed().as_secs_f64();
    if std::env::var_os("IK_PEERS_DEBUG").is_some() && !report.converged {
        eprintln!(
            "dls failed: {} iterations, distance {:.3e}, λ {:?}",
            report.iterations,
            report.cost.sqrt(),
            solver.current_damping()
        );
    }
    Ok(Outcome {
        success: tip_distance(s, &pose, tip, target) < SUCCESS_DISTANCE,
        seconds,
    })
}

fn solve_smc(
    s: &Arc<Skeleton>,
    tip: usize,
    target: &Point3<f64>,
    seed: u64,
    config: SmcIkConfig,
) -> Result<Outcome> {
    let start = Instant::now();
    let cs = ConstraintSet::with(s, [Constraint::position(tip, *target, TARGET_SIGMA)])?;
    let mut solver = SmcIk::new(
        s.clone(),
        cs,
        SmcIkConfig { seed, ..config },
        &s.rest_pose(),
    )?;
    let mut success = false;
    for _ in 0..MAX_ITERATIONS {
        solver.step()?;
        if solver.map_cost().sqrt() * TARGET_SIGMA < SUCCESS_DISTANCE {
            success = true;
            break;
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    // Independent check with forward kinematics.
    success &= tip_distance(s, solver.map_pose(), tip, target) < SUCCESS_DISTANCE * (1.0 + 1e-9);
    Ok(Outcome { success, seconds })
}

fn main() -> Result<()> {
    let args = Args::parse();
    let smc_base = SmcIkConfig {
        alpha: 1.0,
        sampler: LimitSampler::AcceptReject { max_retries: 20 },
        noise: JointNoise::isotropic(0.02, 0.0),
        adaptation: Adaptation::success_rule(),
        ..SmcIkConfig::default()
    };
    let mut csv = Csv::new(&[
        "protocol",
        "dof",
        "solver",
        "trials",
        "success_pct",
        "median_ms",
        "mean_ms",
    ]);
    println!(
        "success % / median ms per solve, {} trials per cell",
        args.trials
    );
    let mut panels = Vec::new();
    for name in &args.protocols {
        // Per solver: (DOF, median ms) of this protocol, for the plot.
        let mut curves: Vec<Vec<(f64, f64)>> = vec![Vec::new(); args.solvers.len()];
        let Some(protocol) = Protocol::parse(name) else {
            bail!("--protocols: unknown '{name}' (reach, limits45, limits90)");
        };
        println!("\nprotocol {}", protocol.name());
        print!("{:>5}", "DOF");
        for solver in &args.solvers {
            print!("{:>22}", solver);
        }
        println!();
        for &dof in &args.dofs {
            if dof % 3 != 0 || dof == 0 {
                bail!("--dofs: {dof} is not a positive multiple of 3");
            }
            let skeleton = Arc::new(protocol.skeleton(dof));
            let tip = skeleton.find("tip")?;
            let chain = k_chain(protocol, dof);
            print!("{dof:>5}");
            for (si, solver) in args.solvers.iter().enumerate() {
                let mut outcomes = Vec::with_capacity(args.trials);
                for trial in 0..args.trials {
                    let target =
                        protocol.target(&skeleton, &mut Pcg64::seed_from_u64(trial as u64));
                    let o = match solver.as_str() {
                        "k" => solve_k(&chain, &target),
                        "dls" => solve_dls(&skeleton, tip, &target, args.damping, trial as u64)?,
                        "smc+moves" => solve_smc(
                            &skeleton,
                            tip,
                            &target,
                            trial as u64,
                            SmcIkConfig {
                                particles: args.move_particles,
                                moves: Some(OptimisationMoves {
                                    damping: args.move_damping / TARGET_SIGMA,
                                    residual_gain: args.move_gain,
                                }),
                                adaptation: if args.move_adaptation == "none" {
                                    Adaptation::None
                                } else {
                                    Adaptation::success_rule()
                                },
                                ..smc_base
                            },
                        )?,
                        "smc" => solve_smc(
                            &skeleton,
                            tip,
                            &target,
                            trial as u64,
                            SmcIkConfig {
                                particles: 30,
                                ..smc_base
                            },
                        )?,
                        other => bail!("--solvers: unknown '{other}' (k, dls, smc+moves, smc)"),
                    };
                    outcomes.push(o);
                }
                let ok = outcomes.iter().filter(|o| o.success).count();
                let pct = 100.0 * ok as f64 / args.trials as f64;
                let ms: Vec<f64> = outcomes.iter().map(|o| o.seconds * 1e3).collect();
                let med = median(&ms).unwrap_or(f64::NAN);
                let mean = ms.iter().sum::<f64>() / ms.len().max(1) as f64;
                print!("{:>22}", format!("{pct:.1}% / {med:.3} ms"));
                curves[si].push((dof as f64, med));
                use std::io::Write;
                std::io::stdout().flush()?;
                csv.row([
                    protocol.name(),
                    dof.to_string(),
                    solver.clone(),
                    args.trials.to_string(),
                    format!("{pct:.2}"),
                    format!("{med:.4}"),
                    format!("{mean:.4}"),
                ])?;
            }
            println!();
        }
        let mut panel = plotkit::Panel::new(
            format!("Median time per solve, {}", protocol.name()),
            "DOF",
            "ms per solve",
        )
        .log_y();
        for (si, (solver, points)) in args.solvers.iter().zip(curves).enumerate() {
            panel.push(plotkit::Series::line(solver.clone(), points, si));
        }
        panels.push(panel);
    }
    if let Some(path) = &args.csv {
        csv.write(path)?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &args.png {
        plotkit::save_png(path, &panels, panels.len().min(3), (700, 520))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

//! `ik_success` — SMC-IK Fig. 4a: success rate over particle counts × DOF.
//!
//! For every (particles, DOF) cell, `--trials` trials of the chosen protocol
//! (`ik::protocol`): success when the MAP pose's tip is within 0.001 of the
//! target within 200 iterations. Trial `t` uses target seed `t` and filter
//! seed `t`, so every solver variant sees the same targets.
//!
//! ```text
//! cargo run --release --example ik_success -- --protocol reach --trials 100
//! ```
//!
//! The paper: ~100% with 30 particles, fewer particles needed as DOF grows.
//! `--png FILE` draws success % against the particle count, one line per DOF.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::Parser;
use ik::protocol::{MAX_ITERATIONS, Protocol, SUCCESS_DISTANCE};
use ik::{Adaptation, Constraint, ConstraintSet, JointNoise, LimitSampler, SmcIk, SmcIkConfig};
use plotkit::{Corner, Mark, Panel, Series};
use rand::SeedableRng;
use rand_pcg::Pcg64;

#[derive(Debug, Parser)]
#[command(about = "SMC-IK success rate vs particles and DOF (SMC-IK Fig. 4a)")]
struct Args {
    /// reach, limits45 or limits90.
    #[arg(long, default_value = "reach")]
    protocol: String,
    #[arg(long, default_value_t = 100)]
    trials: usize,
    #[arg(long, value_delimiter = ',', default_value = "5,10,20,30,50,100")]
    particles: Vec<usize>,
    #[arg(long, value_delimiter = ',', default_value = "12,18,30,45,60,90")]
    dofs: Vec<usize>,
    /// `adaptive` (one-fifth rule, the default) or `plain` (the paper's fixed σ).
    #[arg(long, default_value = "adaptive")]
    variant: String,
    /// `reject` (the paper's accept/reject) or `truncated`.
    #[arg(long, default_value = "reject")]
    sampler: String,
    /// Random-walk σ per joint (rad) at scale 1.
    #[arg(long, default_value_t = 0.05)]
    sigma: f64,
    /// Position noise σ of the target constraint (m).
    #[arg(long, default_value_t = 0.1)]
    target_sigma: f64,
    /// ESS threshold for resampling (fraction of N).
    #[arg(long, default_value_t = 0.5)]
    ess: f64,
    /// One-fifth rule: noise growth factor after an improving iteration.
    #[arg(long, default_value_t = 1.5)]
    grow: f64,
    /// One-fifth rule: noise shrink factor after a non-improving iteration.
    #[arg(long, default_value_t = 0.75)]
    shrink: f64,
    /// One-fifth rule: per-particle log-normal spread of the noise scale.
    #[arg(long, default_value_t = 0.0)]
    spread: f64,
    /// Print the final distance and noise scale of every failed trial.
    #[arg(long)]
    show_failures: bool,
    /// Write one row per cell to this CSV file.
    #[arg(long)]
    csv: Option<std::path::PathBuf>,
    /// Plot success % vs particles, one line per DOF (Fig. 4a), to this PNG file.
    #[arg(long)]
    png: Option<std::path::PathBuf>,
}

struct Cell {
    successes: usize,
    iterations: Vec<usize>,
    seconds: f64,
    acceptance: f64,
}

fn run_cell(args: &Args, protocol: Protocol, particles: usize, dof: usize) -> Result<Cell> {
    let skeleton = Arc::new(protocol.skeleton(dof));
    let tip = skeleton.find("tip")?;
    let sampler = match args.sampler.as_str() {
        "reject" => LimitSampler::AcceptReject { max_retries: 20 },
        "truncated" => LimitSampler::Truncated,
        other => bail!("--sampler: unknown '{other}' (reject, truncated)"),
    };
    let adaptation = match args.variant.as_str() {
        "adaptive" => Adaptation::SuccessRule {
            grow: args.grow,
            shrink: args.shrink,
            min_scale: 1e-6,
            max_scale: 4.0,
            spread: args.spread,
        },
        "plain" => Adaptation::None,
        other => bail!("--variant: unknown '{other}' (adaptive, plain)"),
    };
    let mut cell = Cell {
        successes: 0,
        iterations: Vec::new(),
        seconds: 0.0,
        acceptance: 0.0,
    };
    let start = Instant::now();
    for trial in 0..args.trials {
        let mut rng = Pcg64::seed_from_u64(trial as u64);
        let target = protocol.target(&skeleton, &mut rng);
        let constraints = ConstraintSet::with(
            &skeleton,
            [Constraint::position(tip, target, args.target_sigma)],
        )?;
        let config = SmcIkConfig {
            particles,
            seed: trial as u64,
            alpha: 1.0,
            ess_threshold: args.ess,
            sampler,
            noise: JointNoise::isotropic(args.sigma, 0.0),
            adaptation,
            ..SmcIkConfig::default()
        };
        let mut solver = SmcIk::new(skeleton.clone(), constraints, config, &skeleton.rest_pose())?;
        let mut best = f64::INFINITY;
        for it in 1..=MAX_ITERATIONS {
            solver.step()?;
            let d = solver.map_cost().sqrt() * args.target_sigma;
            best = best.min(d);
            if d < SUCCESS_DISTANCE {
                cell.successes += 1;
                cell.iterations.push(it);
                break;
            }
        }
        if args.show_failures && best >= SUCCESS_DISTANCE {
            eprintln!(
                "failed: {particles} particles, {dof} DOF, trial {trial}: best distance {best:.2e}, final {:.2e}, noise scale {:.2e}",
                solver.map_cost().sqrt() * args.target_sigma,
                solver.noise_scale()
            );
        }
        cell.acceptance += solver.prior_counts().acceptance_rate();
    }
    cell.seconds = start.elapsed().as_secs_f64();
    cell.acceptance /= args.trials as f64;
    Ok(cell)
}

fn main() -> Result<()> {
    let args = Args::parse();
    let Some(protocol) = Protocol::parse(&args.protocol) else {
        bail!(
            "--protocol: unknown '{}' (reach, limits45, limits90)",
            args.protocol
        );
    };
    println!(
        "SMC-IK success rate, protocol {}, {} trials per cell, variant {}, sampler {}",
        protocol.name(),
        args.trials,
        args.variant,
        args.sampler
    );
    println!("success % (median iterations of successful trials)");
    print!("{:>10}", "particles");
    for dof in &args.dofs {
        print!("{:>14}", format!("{dof} DOF"));
    }
    println!();
    // success % per DOF, per particle count, for the figure.
    let mut curves: Vec<Vec<(f64, f64)>> = vec![Vec::new(); args.dofs.len()];
    let mut rows = vec!["protocol,variant,sampler,particles,dof,trials,successes,median_iterations,seconds,acceptance".to_string()];
    for &n in &args.particles {
        print!("{n:>10}");
        for (d, &dof) in args.dofs.iter().enumerate() {
            let mut c = run_cell(&args, protocol, n, dof)?;
            c.iterations.sort_unstable();
            let median = c
                .iterations
                .get(c.iterations.len() / 2)
                .copied()
                .unwrap_or(0);
            let pct = 100.0 * c.successes as f64 / args.trials as f64;
            print!("{:>14}", format!("{pct:.1} ({median})"));
            curves[d].push((n as f64, pct));
            use std::io::Write;
            std::io::stdout().flush()?;
            rows.push(format!(
                "{},{},{},{n},{dof},{},{},{median},{:.4},{:.4}",
                protocol.name(),
                args.variant,
                args.sampler,
                args.trials,
                c.successes,
                c.seconds,
                c.acceptance
            ));
        }
        println!();
    }
    if let Some(path) = &args.csv {
        std::fs::write(path, rows.join("\n") + "\n")?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &args.png {
        let mut panel = Panel::new(
            format!(
                "SMC-IK success rate (Fig. 4a): {}, {}, {} trials per point",
                protocol.name(),
                args.variant,
                args.trials
            ),
            "particles",
            "success (%)",
        )
        .legend_at(Corner::LowerRight);
        for (d, (&dof, points)) in args.dofs.iter().zip(curves).enumerate() {
            panel.push(
                Series::line(Some(format!("{dof} DOF")), points, d).mark(Mark::LineDots(2, 4)),
            );
        }
        plotkit::save_png(path, &[panel], 1, (1000, 700))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

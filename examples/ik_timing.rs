//! `ik_timing` — SMC-IK Fig. 4b: time per iteration against DOF for SMC-IK
//! (20 and 50 particles) and the Jacobian baselines (transpose and DLS, each
//! with finite-difference and analytic Jacobians), on the *reach* protocol.
//!
//! ```text
//! cargo run --release --example ik_timing -- --threads 1
//! ```
//!
//! Each cell is the mean over `--iterations` iterations after 10 warm-up
//! iterations, best of `--repeats` runs. The paper: SMC-IK linear in DOF and
//! faster than the numerical methods at high DOF (their Jacobians were
//! finite differences).

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::Parser;
use ik::protocol::Protocol;
use ik::{
    Adaptation, Constraint, ConstraintSet, Difference, JacobianKind, JacobianSolver, JointNoise,
    Method, SmcIk, SmcIkConfig,
};
use posecloud_examples::Csv;
use rand::SeedableRng;
use rand_pcg::Pcg64;

#[derive(Debug, Parser)]
#[command(about = "Time per IK iteration vs DOF (SMC-IK Fig. 4b)")]
struct Args {
    #[arg(long, value_delimiter = ',', default_value = "12,18,30,45,60,90")]
    dofs: Vec<usize>,
    /// Timed iterations per cell.
    #[arg(long, default_value_t = 200)]
    iterations: usize,
    /// Runs per cell; the fastest is reported.
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Rayon threads for the particle filter (0: rayon's default).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Only these solvers (comma-separated names as printed); all by default.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Write the table to this CSV file.
    #[arg(long)]
    csv: Option<std::path::PathBuf>,
    /// Plot time per iteration vs DOF to this PNG file.
    #[arg(long)]
    png: Option<std::path::PathBuf>,
}

const SOLVERS: [&str; 8] = [
    "SMC-IK 20",
    "SMC-IK 50",
    "transpose FD",
    "transpose analytic",
    "DLS FD fwd",
    "DLS FD central",
    "DLS analytic",
    "DLS analytic (step only)",
];

/// Mean seconds per iteration of `solver` at `dof`, best of `repeats`.
fn time_cell(solver: &str, dof: usize, iterations: usize, repeats: usize) -> Result<f64> {
    let protocol = Protocol::Reach;
    let skeleton = Arc::new(protocol.skeleton(dof));
    let tip = skeleton.find("tip")?;
    let target = protocol.target(&skeleton, &mut Pcg64::seed_from_u64(1));
    let mut best = f64::INFINITY;
    for _ in 0..repeats {
        let seconds = match solver {
            "SMC-IK 20" | "SMC-IK 50" => {
                let particles = if solver.ends_with("20") { 20 } else { 50 };
                let mut cs = ConstraintSet::new();
                cs.add(&skeleton, Constraint::position(tip, target, 0.1))?;
                let config = SmcIkConfig {
                    particles,
                    noise: JointNoise::isotropic(0.02, 0.0),
                    adaptation: Adaptation::success_rule(),
                    ..SmcIkConfig::default()
                };
                let mut ik = SmcIk::new(skeleton.clone(), cs, config, &skeleton.rest_pose())?;
                for _ in 0..10 {
                    ik.step()?;
                }
                let start = Instant::now();
                for _ in 0..iterations {
                    ik.step()?;
                }
                start.elapsed().as_secs_f64()
            }
            _ => {
                let (method, kind) = match solver {
                    "transpose FD" => (
                        Method::Transpose,
                        JacobianKind::forward(JacobianKind::FORWARD_STEP),
                    ),
                    "transpose analytic" => (Method::Transpose, JacobianKind::Analytic),
                    "DLS FD fwd" => (
                        Method::dls(0.5),
                        JacobianKind::forward(JacobianKind::FORWARD_STEP),
                    ),
                    "DLS FD central" => (
                        Method::dls(0.5),
                        JacobianKind::FiniteDifference {
                            step: JacobianKind::CENTRAL_STEP,
                            scheme: Difference::Central,
                        },
                    ),
                    "DLS analytic" | "DLS analytic (step only)" => {
                        (Method::dls(0.5), JacobianKind::Analytic)
                    }
                    other => bail!("unknown solver {other}"),
                };
                let mut cs = ConstraintSet::new();
                cs.add(&skeleton, Constraint::position(tip, target, 1.0))?;
                let mut pose = skeleton.rest_pose();
                if solver.ends_with("(step only)") {
                    let mut scratch = ik::JacobianScratch::new(&skeleton, &cs)?;
                    for _ in 0..10 {
                        scratch.dls_step(&skeleton, &cs, &mut pose, 0.5)?;
                    }
                    let start = Instant::now();
                    for _ in 0..iterations {
                        scratch.dls_step(&skeleton, &cs, &mut pose, 0.5)?;
                    }
                    start.elapsed().as_secs_f64()
                } else {
                    let mut js = JacobianSolver::new(method, kind);
                    for _ in 0..10 {
                        js.iterate(&skeleton, &cs, &mut pose)?;
                    }
                    let start = Instant::now();
                    for _ in 0..iterations {
                        js.iterate(&skeleton, &cs, &mut pose)?;
                    }
                    start.elapsed().as_secs_f64()
                }
            }
        };
        best = best.min(seconds / iterations as f64);
    }
    Ok(best)
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args.iterations == 0 || args.repeats == 0 {
        bail!("--iterations and --repeats must be at least 1");
    }
    if args.threads > 0 {
        rayon::ThreadPoolBuilder::new()
            .num_threads(args.threads)
            .build_global()?;
    }
    println!(
        "time per iteration (µs), reach protocol, {} rayon thread(s), mean of {} iterations, best of {}",
        rayon::current_num_threads(),
        args.iterations,
        args.repeats
    );
    print!("{:>26}", "solver \\ DOF");
    for d in &args.dofs {
        print!("{d:>10}");
    }
    println!();
    let mut csv = Csv::new(&["solver", "dof", "microseconds_per_iteration"]);
    let mut table: Vec<Vec<f64>> = Vec::new();
    for solver in SOLVERS {
        if !args.only.is_empty() && !args.only.iter().any(|o| o == solver) {
            table.push(vec![f64::NAN; args.dofs.len()]);
            continue;
        }
        print!("{solver:>26}");
        let mut row = Vec::new();
        for &dof in &args.dofs {
            if dof % 3 != 0 || dof == 0 {
                bail!("--dofs: {dof} is not a positive multiple of 3");
            }
            let us = 1e6 * time_cell(solver, dof, args.iterations, args.repeats)?;
            print!("{us:>10.1}");
            use std::io::Write;
            std::io::stdout().flush()?;
            csv.row([solver.to_string(), dof.to_string(), format!("{us:.3}")])?;
            row.push(us);
        }
        println!();
        table.push(row);
    }
    // Linearity of SMC-IK: ratio of the largest to the 30-DOF time.
    if let (Some(i30), Some(imax)) = (
        args.dofs.iter().position(|&d| d == 30),
        args.dofs.iter().position(|&d| d == 90),
    ) {
        for (k, name) in SOLVERS.iter().enumerate().take(2) {
            println!(
                "{name}: 90-DOF / 30-DOF time = {:.2} (linear: 3)",
                table[k][imax] / table[k][i30]
            );
        }
        let dls_fd = table[4][imax].min(table[5][imax]);
        println!(
            "at 90 DOF: SMC-IK 50 {:.1} µs vs DLS FD (fastest, forward) {:.1} µs per iteration",
            table[1][imax], dls_fd
        );
    }
    if let Some(path) = &args.csv {
        csv.write(path)?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &args.png {
        plotkit::save_png(path, &[time_figure(&args.dofs, &table)], 1, (900, 600))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// SMC-IK Fig. 4b: each solver's time per iteration (`table`, a row per
/// solver of [`SOLVERS`]) against the DOF.
fn time_figure(dofs: &[usize], table: &[Vec<f64>]) -> plotkit::Panel {
    let mut panel = plotkit::Panel::new(
        "Time per iteration (SMC-IK Fig. 4b)",
        "DOF",
        "µs per iteration",
    )
    .log_y();
    for (k, (name, times)) in SOLVERS.iter().zip(table).enumerate() {
        let dof = dofs.iter().map(|&d| d as f64);
        let points = dof.zip(times.iter().copied()).collect();
        panel.push(plotkit::Series::line(name.to_string(), points, k));
    }
    panel
}

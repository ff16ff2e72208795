//! `kalman_check`: the bootstrap particle filter of `smc` on a 1-D
//! linear-Gaussian model, for comparison with any Kalman filter or SMC
//! implementation.
//!
//! Model (the `t`-th observation of the CSV, counting from 0, observes `x_t`):
//!
//! ```text
//!   x₀ ~ N(M0, P0),   x_t = A x_{t−1} + N(0, Q),   y_t = H x_t + N(0, R)
//! ```
//!
//! Prints a header and `t,mean,var` (filtered mean and variance of `x_t`)
//! per step, then `loglik,<log p̂(y_{0:T−1})>`. With `--exact` it adds the
//! Kalman filter's mean and variance as columns and a `kalman_loglik` line
//! before the final `loglik` line. With `--simulate T` it prints `T` observations simulated
//! from the model instead (how `examples/data/kalman_obs.csv` was made).
//!
//! ```text
//! cargo run --release --example kalman_check -- --obs examples/data/kalman_obs.csv \
//!     --a 0.9 --q 0.5 --h 1 --r 0.3 --m0 0.5 --p0 2 --particles 100000 --seed 1 --exact
//! ```

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Parser;
use smc::lgssm::Lgssm;
use smc::nalgebra::DVector;
use smc::{
    Filter, FilterConfig, History, ParticleSet, ResamplePolicy, Resampling, StreamDomain,
    stream_rng,
};

/// Bootstrap particle filter vs the exact Kalman filter on a 1-D model.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// CSV file with one observation per line (blank lines and `#` comments
    /// are skipped).
    #[arg(long, required_unless_present = "simulate")]
    obs: Option<PathBuf>,
    /// State transition: x' = A x + N(0, Q).
    #[arg(long, allow_negative_numbers = true)]
    a: f64,
    /// Process noise variance Q ≥ 0.
    #[arg(long)]
    q: f64,
    /// Observation gain: y = H x + N(0, R).
    #[arg(long, allow_negative_numbers = true)]
    h: f64,
    /// Observation noise variance R > 0.
    #[arg(long)]
    r: f64,
    /// Mean of x₀.
    #[arg(long, allow_negative_numbers = true)]
    m0: f64,
    /// Variance of x₀, P0 ≥ 0.
    #[arg(long)]
    p0: f64,
    /// Number of particles.
    #[arg(long, default_value_t = 100_000)]
    particles: usize,
    /// Seed of the run.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Resampling scheme: multinomial, stratified, systematic, residual, hspc.
    #[arg(long, default_value = "systematic")]
    scheme: Resampling,
    /// Resample when ESS < this fraction of N (1 = every step).
    #[arg(long, default_value_t = 0.5)]
    ess_threshold: f64,
    /// Also print the exact Kalman filter's answers.
    #[arg(long)]
    exact: bool,
    /// Print this many observations simulated from the model, and exit.
    #[arg(long, value_name = "T")]
    simulate: Option<usize>,
}

/// Largest magnitude of a model parameter (issue 32: `--p0 1e308` ran
/// and printed NaN).
const MAX_PARAMETER: f64 = 1e12;

/// The resampling policy of `--ess-threshold`: a fraction of N in
/// `[0, 1]` (1: every step, 0: never).
///
/// # Errors
/// A threshold that is not a finite fraction (`inf` was taken for "every
/// step" and NaN for "never").
fn policy_from(threshold: f64) -> Result<ResamplePolicy> {
    if !(0.0..=1.0).contains(&threshold) {
        bail!("--ess-threshold is a fraction of N from 0 to 1, got {threshold}");
    }
    Ok(if threshold >= 1.0 {
        ResamplePolicy::Always
    } else {
        ResamplePolicy::EssBelow(threshold)
    })
}

/// The model (`smc::lgssm`, the bootstrap proposal and the likelihood),
/// with errors naming the flag.
fn model_from_args(args: &Args) -> Result<Lgssm> {
    let finite = [
        ("--a", args.a),
        ("--q", args.q),
        ("--h", args.h),
        ("--r", args.r),
        ("--m0", args.m0),
        ("--p0", args.p0),
    ];
    for (name, v) in finite {
        if !v.is_finite() {
            bail!("{name} must be a finite number, got {v}");
        }
        // Beyond this the variances' squares and the particles' spread
        // overflow to inf and the moments print as NaN.
        if v.abs() > MAX_PARAMETER {
            bail!("{name} must be within ±{MAX_PARAMETER:e}, got {v}");
        }
    }
    if args.q < 0.0 {
        bail!("--q is a variance and must be >= 0, got {}", args.q);
    }
    if args.p0 < 0.0 {
        bail!("--p0 is a variance and must be >= 0, got {}", args.p0);
    }
    if args.r <= 0.0 {
        bail!(
            "--r is the observation noise variance and must be > 0, got {}",
            args.r
        );
    }
    Lgssm::scalar(args.a, args.q, args.h, args.r, args.m0, args.p0).context("invalid model")
}

/// Observations from `path`, with errors naming the file and line. A UTF-8
/// byte-order mark (as Windows tools write) is skipped; invalid UTF-8 is an
/// error naming its line.
fn read_observations(path: &Path) -> Result<Vec<f64>> {
    let bytes = fs::read(path)
        .with_context(|| format!("cannot read observations from {}", path.display()))?;
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        let at = e.valid_up_to();
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        anyhow::anyhow!("{}:{line}: invalid UTF-8 at byte {at}", path.display())
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut ys = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let field = line.trim();
        if field.is_empty() || field.starts_with('#') {
            continue;
        }
        let y: f64 = field.parse().map_err(|_| {
            anyhow::anyhow!(
                "{}:{}: expected one number per line, found {field:?}",
                path.display(),
                i + 1
            )
        })?;
        if !y.is_finite() {
            bail!(
                "{}:{}: observation must be finite, found {field:?}",
                path.display(),
                i + 1
            );
        }
        ys.push(y);
    }
    if ys.is_empty() {
        bail!("{}: no observations", path.display());
    }
    Ok(ys)
}

/// Exact Kalman filter: filtered means and variances, and log p(y_{0:T−1}).
fn kalman(model: &Lgssm, ys: &[f64]) -> Result<(Vec<(f64, f64)>, f64)> {
    let ys: Vec<DVector<f64>> = ys.iter().map(|&y| DVector::from_element(1, y)).collect();
    let kf = model.kalman(&ys)?;
    let moments = kf.mean.iter().zip(&kf.cov).map(|(m, p)| (m[0], p[(0, 0)]));
    Ok((moments.collect(), kf.log_evidence))
}

fn simulate(model: &Lgssm, steps: usize, seed: u64) {
    let mut rng = stream_rng(seed, 0, StreamDomain::User(0), 0);
    for y in model.simulate(steps, &mut rng).observations {
        println!("{:?}", y[0]);
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let model = model_from_args(&args)?;
    if let Some(steps) = args.simulate {
        simulate(&model, steps, args.seed);
        return Ok(());
    }
    let path = args.obs.as_deref().context("--obs FILE is required")?;
    if args.particles == 0 {
        bail!("--particles must be at least 1");
    }
    // Before anything is allocated for them (issue 14: 1e11 particles).
    ParticleSet::check_memory(args.particles, 1).context("--particles")?;
    let ys = read_observations(path)?;
    let policy = policy_from(args.ess_threshold)?;
    let config = FilterConfig {
        seed: args.seed,
        scheme: args.scheme,
        policy,
        history: History::None,
    };
    let mut filter = Filter::new(config).context("invalid --ess-threshold")?;
    let mut particles = ParticleSet::new(args.particles, 1)?;
    let exact = args.exact.then(|| kalman(&model, &ys)).transpose()?;

    println!(
        "{}",
        if exact.is_some() {
            "t,mean,var,kalman_mean,kalman_var"
        } else {
            "t,mean,var"
        }
    );
    for (t, y) in ys.iter().enumerate() {
        filter
            .step(&mut particles, &model, &model, y)
            .with_context(|| {
                format!(
                    "filter failed at step {t} (observation {y} of {})",
                    path.display()
                )
            })?;
        let mean = particles.mean()[0];
        let var = particles.covariance()[(0, 0)];
        match &exact {
            Some((kf, _)) => println!("{t},{mean:?},{var:?},{:?},{:?}", kf[t].0, kf[t].1),
            None => println!("{t},{mean:?},{var:?}"),
        }
    }
    if let Some((_, loglik)) = &exact {
        println!("kalman_loglik,{loglik:?}");
    }
    println!("loglik,{:?}", filter.log_evidence());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> std::result::Result<Args, String> {
        let base = ["kalman_check", "--obs", "o.csv", "--a", "0.9", "--q", "0.5"];
        let rest = ["--h", "1", "--r", "0.3", "--m0", "0.5"];
        Args::try_parse_from(base.iter().chain(&rest).chain(extra)).map_err(|e| e.to_string())
    }

    /// Issue 32 item 21: an infinite or NaN threshold and a `--p0` whose
    /// spread overflows are refused naming the flag.
    #[test]
    fn thresholds_and_parameters_out_of_range_are_refused() {
        for bad in [f64::INFINITY, f64::NAN, -0.1, 1.5] {
            let m = policy_from(bad).unwrap_err().to_string();
            assert!(m.contains("--ess-threshold"), "{m}");
        }
        assert!(matches!(policy_from(1.0), Ok(ResamplePolicy::Always)));
        let a = args(&["--p0", "1e308"]).unwrap();
        let m = model_from_args(&a).unwrap_err().to_string();
        assert!(m.contains("--p0"), "{m}");
        let a = args(&["--p0", "2"]).unwrap();
        assert!(model_from_args(&a).is_ok());
    }
}

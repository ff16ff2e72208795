//! The particle cloud's drawing budget, measured (issue: with the default
//! budget the median frame at 10,000 particles is at most twice that at
//! 200 on a software renderer).
//!
//! Runs the release app (`cargo build --release` first) in the IK
//! playground's `human` scene at 800 × 500 without vsync, once per particle
//! count and budget, for `--seconds` each (default 20), and prints the
//! median and 95th-percentile frame time from the app's exit summary:
//!
//! ```sh
//! cargo build --release -p posecloud
//! xvfb-run -a -s "-screen 0 1280x800x24" cargo run --release -p posecloud --example cloud_budget
//! ```

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The app binary beside this example's folder (`target/<profile>/`).
fn app_binary() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .and_then(|examples| examples.parent())
        .context("the example's folder has no parent")?;
    let app = dir.join("posecloud");
    if !app.is_file() {
        bail!(
            "{} not found: build the app first (cargo build --release -p posecloud)",
            app.display()
        );
    }
    Ok(app)
}

/// `(median, p95)` frame time in ms from the app's exit summary.
fn frame_times(stderr: &str) -> Option<(f64, f64)> {
    let line = stderr
        .lines()
        .find(|l| l.contains("frames after interactive"))?;
    let after = |key: &str| -> Option<f64> {
        let rest = &line[line.find(key)? + key.len()..];
        rest.split_whitespace().next()?.parse().ok()
    };
    Some((after("median frame")?, after("95th percentile")?))
}

fn main() -> Result<()> {
    let seconds: f64 = match std::env::args().skip_while(|a| a != "--seconds").nth(1) {
        Some(s) => s.parse().context("--seconds: a number")?,
        None => 20.0,
    };
    let app = app_binary()?;
    println!("| particles | cloud budget | median frame (ms) | 95th pct (ms) | ratio to 200 |");
    println!("|---:|---|---:|---:|---:|");
    for (label, limit) in [
        ("adaptive (default)", None),
        ("all particles", Some("20000")),
    ] {
        let mut base = None;
        for particles in [200, 10_000] {
            let n = particles.to_string();
            let quit = seconds.to_string();
            let mut args = vec![
                "--scene",
                "human",
                "--particles",
                &n,
                "--width",
                "800",
                "--height",
                "500",
                "--no-vsync",
                "--quit-after",
                &quit,
            ];
            if let Some(l) = limit {
                args.extend(["--cloud-limit", l]);
            }
            let out = Command::new(&app)
                .args(&args)
                .output()
                .with_context(|| format!("running {}", app.display()))?;
            let stderr = String::from_utf8_lossy(&out.stderr);
            if !out.status.success() {
                bail!("posecloud {args:?} failed ({}):\n{stderr}", out.status);
            }
            let (median, p95) = frame_times(&stderr)
                .with_context(|| format!("no frame-time summary in:\n{stderr}"))?;
            let base_median = *base.get_or_insert(median);
            println!(
                "| {particles} | {label} | {median:.1} | {p95:.1} | {:.2} |",
                median / base_median
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_summary_line_is_read() {
        let s = "posecloud: 103 frames after interactive: mean 6.8 fps, median frame 159.7 ms, 95th percentile 170.5 ms; first frame 0.21 s";
        assert_eq!(super::frame_times(s), Some((159.7, 170.5)));
        assert_eq!(super::frame_times("nothing"), None);
    }
}

//! Batched non-overlap likelihood timing (RTPF Table I, §VI): ms per batch
//! of N particles for the CPU reference of `crates/gpu` — forward
//! kinematics, label raster, class histograms and RTPF Eq. 1–2 — on one
//! thread and on all threads.
//!
//! The human preset is seen by the default camera; the observation is the
//! reference pose rendered with 2% flipped pixels; the particles are the
//! reference pose perturbed within the joint limits. The paper reports 1.4 ms
//! for 100 particles and 16.8 ms for 700 on a 2010 GPU (27 ms and 110 ms in
//! native C++ on a CPU); the goal here is 700 particles at 160 × 120 in
//! ≤ 20 ms on 2 cores.
//!
//! ```text
//! cargo run --release --example likelihood_bench -- --particles 100,700 --size 160x120 --threads 2
//! ```

use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Parser;
use gpu::{Camera, CpuLikelihood, Noise, NonOverlap, render_observation};
use posecloud_examples::{Csv, median};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use skeleton::nalgebra::{Point3, Vector3};
use skeleton::presets;

#[derive(Debug, Parser)]
#[command(about = "CPU non-overlap likelihood: ms per batch vs particles (RTPF Table I)")]
struct Args {
    /// Batch sizes N.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "100,300,500,700,2000,10000"
    )]
    particles: Vec<usize>,
    /// Image size WxH.
    #[arg(long, default_value = "160x120")]
    size: String,
    /// Threads for the "all threads" column (0: every core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Timed batches per cell at least (more run until 0.5 s have passed).
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// Write the table to this CSV file.
    #[arg(long)]
    csv: Option<std::path::PathBuf>,
}

fn parse_size(s: &str) -> Result<(u32, u32)> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .with_context(|| format!("--size {s}: expected WxH"))?;
    let w: u32 = w
        .trim()
        .parse()
        .with_context(|| format!("--size width {w}"))?;
    let h: u32 = h
        .trim()
        .parse()
        .with_context(|| format!("--size height {h}"))?;
    if w == 0 || h == 0 {
        bail!("--size {s}: width and height must be positive");
    }
    Ok((w, h))
}

/// Median ms per batch of `lik` on `states`, in the current rayon pool.
fn time_batches(
    lik: &mut CpuLikelihood,
    obs: &gpu::Observation,
    states: &[f64],
    repeats: usize,
) -> Result<f64> {
    lik.evaluate(obs, states)?; // warm-up: buffers reach their size
    let mut ms = Vec::new();
    let start = Instant::now();
    while ms.len() < repeats.max(1) || (start.elapsed().as_secs_f64() < 0.5 && ms.len() < 200) {
        let t = Instant::now();
        lik.evaluate(obs, states)?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    median(&ms).context("no timing")
}

fn main() -> Result<()> {
    let args = Args::parse();
    let (w, h) = parse_size(&args.size)?;
    let threads = if args.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        args.threads
    };
    let skel = presets::human();
    let camera = Camera::looking_at(
        Point3::new(0.0, 1.0, 3.5),
        Point3::new(0.0, 0.92, 0.0),
        Vector3::y(),
        40f64.to_radians(),
        w,
        h,
    )?;
    let mut reference = skel.rest_pose();
    let shoulder = skel.param_range(skel.find("l_shoulder")?);
    reference[shoulder.start + 1] = 0.5;
    let elbow = skel.param_range(skel.find("r_elbow")?);
    reference[elbow.start] = 0.8;
    let noise = Noise {
        flip_probability: 0.02,
        ..Noise::default()
    };
    let obs = render_observation(&skel, &camera, &reference, &noise, 1)?;
    let d = skel.dof();
    let mut rng = Pcg64Mcg::seed_from_u64(2);
    let n_max = args.particles.iter().copied().max().unwrap_or(0);
    let mut all = Vec::with_capacity(n_max * d);
    for _ in 0..n_max {
        let mut pose = reference.clone();
        for (k, x) in pose.iter_mut().enumerate() {
            // Root translation in metres, every angle in radians.
            let s = if k < 3 { 0.03 } else { 0.15 };
            *x += rng.random_range(-s..s);
        }
        skel.clamp_to_limits(&mut pose);
        all.extend_from_slice(&pose);
    }

    println!(
        "non-overlap likelihood, CPU reference: human ({} joints, {d} parameters), {w} × {h}, {threads} threads",
        skel.len()
    );
    println!(
        "{:>8} {:>14} {:>14} {:>16}",
        "N",
        "1 thread ms",
        format!("{threads} threads ms"),
        "particles/ms"
    );
    let mut csv = Csv::new(&["particles", "width", "height", "threads", "ms_per_batch"]);
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let many = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    for &n in &args.particles {
        if n == 0 {
            bail!("--particles: N = 0 is not a batch");
        }
        let states = &all[..n * d];
        let mut cells = Vec::new();
        for (pool, t) in [(&one, 1), (&many, threads)] {
            let ms = pool.install(|| {
                let mut lik =
                    CpuLikelihood::new(skel.clone(), camera.clone(), NonOverlap::default());
                time_batches(&mut lik, &obs, states, args.repeats)
            })?;
            csv.row([
                n.to_string(),
                w.to_string(),
                h.to_string(),
                t.to_string(),
                format!("{ms:.4}"),
            ])?;
            cells.push(ms);
        }
        println!(
            "{n:>8} {:>14.3} {:>14.3} {:>16.1}",
            cells[0],
            cells[1],
            n as f64 / cells[1]
        );
    }
    if let Some(path) = &args.csv {
        csv.write(path)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

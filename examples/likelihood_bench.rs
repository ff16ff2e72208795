//! Batched non-overlap likelihood timing (RTPF Table I, §VI): ms per batch
//! of N particles — forward kinematics, label raster, class histograms and
//! RTPF Eq. 1–2 — for the CPU reference of `crates/labels` on one thread
//! and on all threads, and for the wgpu back end (`GpuLikelihood` of
//! `crates/gpu`): one batch at a time (pose upload, GPU passes, readback,
//! all included) and pipelined (batch k+1 submitted before batch k is
//! collected; ms per batch of throughput). `--raster` picks the GPU's
//! raster: the one compute pass (default) or the render pass into a label
//! atlas followed by a histogram pass (`gpu::RasterPath`).
//!
//! The human preset is seen by the default camera; the observation is the
//! reference pose rendered with 2% flipped pixels; the particles are the
//! reference pose perturbed within the joint limits. The paper reports 1.4 ms
//! for 100 particles and 16.8 ms for 700 on a 2010 GPU (27 ms and 110 ms in
//! native C++ on a CPU); the goal here is 700 particles at 160 × 120 in
//! ≤ 20 ms on 2 cores.
//!
//! The last columns time a whole tracker step with the same body, camera,
//! observation and N (`track::Tracker`, PFS: selection, propagation within
//! the joint limits, forward kinematics once for the batch, the likelihood,
//! resampling): on the CPU likelihood and on the GPU one sharing the
//! bench's device. The tracker's goal is a 700-particle step in ≤ 40 ms on
//! this 2-core CPU.
//!
//! Without a GPU, wgpu may find Mesa's lavapipe, a Vulkan driver that runs
//! on the CPU: the table then says that the GPU columns run on the CPU. With
//! no adapter at all the GPU columns are left out and the reason is printed.
//!
//! ```text
//! cargo run --release --example likelihood_bench -- --particles 100,700 --size 160x120 --threads 2
//! cargo run --release --example likelihood_bench -- --skip-cpu-above 2000 --csv bench.csv
//! cargo run --release --example likelihood_bench -- --raster render-pass --no-tracker
//! ```

use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Parser;
use gpu::{GpuLikelihood, GpuSettings, HeadlessGpu, RasterPath};
use labels::{
    Camera, CpuLikelihood, NonOverlap, Observation,
    synth::{self, LabelNoise, render_observation},
};
use posecloud_examples::{Csv, median};
use skeleton::presets;
use track::{
    BackendChoice, FilterKind, Selection, SharedDevice, TrackedBody, Tracker, TrackerConfig,
};

#[derive(Debug, Parser)]
#[command(about = "Non-overlap likelihood, CPU and GPU: ms per batch vs particles (RTPF Table I)")]
struct Args {
    /// Batch sizes N.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "100,300,500,700,2000,10000,100000"
    )]
    particles: Vec<usize>,
    /// Image size WxH.
    #[arg(long, default_value = "160x120")]
    size: String,
    /// Threads for the "all threads" column and the GPU path's CPU work
    /// (0: every core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Timed batches per cell at least (more run until 0.5 s have passed).
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// Leave the CPU columns out for N above this (they take seconds).
    #[arg(long, default_value_t = 10_000)]
    skip_cpu_above: usize,
    /// Leave the GPU columns out.
    #[arg(long)]
    no_gpu: bool,
    /// Leave the tracker-step columns out.
    #[arg(long)]
    no_tracker: bool,
    /// The GPU columns' raster: `compute` (one compute pass) or
    /// `render-pass` (label atlas, then histograms). The tracker-step column
    /// uses the tracker's default (compute).
    #[arg(long, default_value = "compute", value_parser = parse_raster)]
    raster: RasterPath,
    /// Write the table to this CSV file.
    #[arg(long)]
    csv: Option<std::path::PathBuf>,
}

fn parse_raster(s: &str) -> Result<RasterPath, String> {
    match s {
        "compute" => Ok(RasterPath::Compute),
        "render-pass" => Ok(RasterPath::RenderPass),
        _ => Err(format!("{s}: expected compute or render-pass")),
    }
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

/// Runs `batch` once to warm up (buffers reach their size), then times it
/// at least `repeats` times and for at least 0.5 s (at most 200 runs);
/// returns the median ms.
fn time_ms(repeats: usize, mut batch: impl FnMut() -> Result<()>) -> Result<f64> {
    batch()?;
    let mut ms = Vec::new();
    let start = Instant::now();
    while ms.len() < repeats.max(1) || (start.elapsed().as_secs_f64() < 0.5 && ms.len() < 200) {
        let t = Instant::now();
        batch()?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    median(&ms).context("no timing")
}

/// ms per batch when batch k+1 is submitted before batch k is collected:
/// `repeats` batches (at least 2) in a row, total time / batches. Run it
/// after [`time_ms`] has warmed the back end up.
fn time_pipelined_ms(
    lik: &mut GpuLikelihood,
    obs: &Observation,
    states: &[f64],
    repeats: usize,
) -> Result<f64> {
    let batches = repeats.max(2);
    let start = Instant::now();
    let mut pending = lik.submit(obs, states)?;
    for _ in 1..batches {
        let next = lik.submit(obs, states)?;
        lik.collect(pending)?;
        pending = next;
    }
    lik.collect(pending)?;
    Ok(start.elapsed().as_secs_f64() * 1e3 / batches as f64)
}

fn cell(ms: Option<f64>) -> String {
    ms.map_or("—".to_string(), |ms| format!("{ms:.3}"))
}

fn main() -> Result<()> {
    let args = Args::parse();
    let (w, h) = parse_size(&args.size)?;
    if args.particles.contains(&0) {
        bail!("--particles: N = 0 is not a batch");
    }
    let threads = if args.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        args.threads
    };
    let skel = presets::human();
    let camera = Camera::facing_human(w, h)?;
    let reference = synth::arm_pose(&skel, 0.5, 0.8)?;
    let noise = LabelNoise::flips(0.02);
    let obs = render_observation(&skel, &camera, &reference, &noise, 1)?;
    let d = skel.dof();
    let n_max = args.particles.iter().copied().max().unwrap_or(0);
    let all = synth::perturbed_poses(&skel, &reference, n_max, 2);

    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let many = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;

    println!(
        "non-overlap likelihood: human ({} joints, {d} parameters), {w} × {h}, {threads} threads",
        skel.len()
    );
    let (mut gpu, device, shared) = if args.no_gpu {
        println!("GPU columns left out (--no-gpu)");
        (None, String::new(), None)
    } else {
        match HeadlessGpu::new() {
            Ok(g) => {
                let device = g.describe();
                println!("GPU adapter: {device}");
                let on_cpu = g.is_cpu();
                let shared = SharedDevice {
                    device: g.device.clone(),
                    queue: g.queue.clone(),
                };
                let lik = GpuLikelihood::with_settings(
                    g.device,
                    g.queue,
                    skel.clone(),
                    camera.clone(),
                    NonOverlap::default(),
                    GpuSettings {
                        raster: args.raster,
                        ..GpuSettings::default()
                    },
                )?;
                println!(
                    "GPU: {:?} raster, at most {} particles per pass; {} bytes uploaded per particle (capsule end points)",
                    args.raster,
                    lik.max_tiles_per_pass(),
                    lik.upload_bytes_per_particle()
                );
                if on_cpu {
                    println!(
                        "GPU column runs on the CPU (lavapipe): a software Vulkan driver sharing the CPU columns' cores"
                    );
                }
                (Some(lik), device, Some(shared))
            }
            Err(e) => {
                println!("GPU columns missing: {e}");
                (None, String::new(), None)
            }
        }
    };
    let body = TrackedBody::new(skel.clone(), &Selection::All, &reference)?;
    let mut step_backends = vec![(BackendChoice::Cpu, "step CPU ms")];
    if shared.is_some() {
        step_backends.push((BackendChoice::Gpu, "step GPU ms"));
    }
    if args.no_tracker {
        step_backends.clear();
    } else {
        println!(
            "tracker step: PFS on the same body ({} tracked parameters), observation and N; {threads} threads",
            body.dim()
        );
    }
    let threads_head = format!("{threads} threads ms");
    print!("{:>8} {:>14} {:>14}", "N", "1 thread ms", threads_head);
    if gpu.is_some() {
        print!(" {:>10} {:>16}", "GPU ms", "GPU pipelined ms");
    }
    for (_, head) in &step_backends {
        print!(" {head:>12}");
    }
    println!(" {:>14}", "particles/ms");

    let mut csv = Csv::new(&[
        "particles",
        "width",
        "height",
        "backend",
        "threads",
        "device",
        "ms_per_batch",
    ]);
    for &n in &args.particles {
        let states = &all[..n * d];
        let mut row = |backend: &str, t: usize, dev: &str, ms: f64| {
            csv.row([
                n.to_string(),
                w.to_string(),
                h.to_string(),
                backend.to_string(),
                t.to_string(),
                dev.to_string(),
                format!("{ms:.4}"),
            ])
        };
        let mut cpu = [None, None];
        if n <= args.skip_cpu_above {
            for (k, (pool, t)) in [(&one, 1), (&many, threads)].into_iter().enumerate() {
                let ms = pool.install(|| {
                    let mut lik =
                        CpuLikelihood::new(skel.clone(), camera.clone(), NonOverlap::default());
                    time_ms(args.repeats, || {
                        lik.evaluate(&obs, states)?;
                        Ok(())
                    })
                })?;
                row("cpu", t, "", ms)?;
                cpu[k] = Some(ms);
            }
        }
        let mut gpu_ms = [None, None];
        if let Some(lik) = gpu.as_mut() {
            let (sync, pipelined) = many.install(|| -> Result<(f64, f64)> {
                let sync = time_ms(args.repeats, || {
                    lik.evaluate(&obs, states)?;
                    Ok(())
                })?;
                let pipelined = time_pipelined_ms(lik, &obs, states, args.repeats)?;
                Ok((sync, pipelined))
            })?;
            row("gpu", threads, &device, sync)?;
            row("gpu_pipelined", threads, &device, pipelined)?;
            gpu_ms = [Some(sync), Some(pipelined)];
        }
        let mut step_ms = Vec::new();
        for &(backend, _) in &step_backends {
            if backend == BackendChoice::Cpu && n > args.skip_cpu_above {
                step_ms.push(None);
                continue;
            }
            let config = TrackerConfig {
                particles: n,
                filter: FilterKind::Pfs,
                backend,
                ..TrackerConfig::default()
            };
            let device = shared.clone().filter(|_| backend == BackendChoice::Gpu);
            let ms = many.install(|| -> Result<f64> {
                let mut tracker = Tracker::with_device(
                    body.clone(),
                    camera.clone(),
                    &reference,
                    None,
                    config,
                    device,
                )?;
                time_ms(args.repeats, || {
                    tracker.step(&obs)?;
                    Ok(())
                })
            })?;
            let name = if backend == BackendChoice::Cpu {
                "tracker_step_cpu"
            } else {
                "tracker_step_gpu"
            };
            row(name, threads, "", ms)?;
            step_ms.push(Some(ms));
        }
        print!("{n:>8} {:>14} {:>14}", cell(cpu[0]), cell(cpu[1]));
        if gpu.is_some() {
            print!(" {:>10} {:>16}", cell(gpu_ms[0]), cell(gpu_ms[1]));
        }
        for ms in &step_ms {
            print!(" {:>12}", cell(*ms));
        }
        // Throughput of the fastest column.
        let best = cpu
            .iter()
            .chain(&gpu_ms)
            .flatten()
            .copied()
            .fold(f64::INFINITY, f64::min);
        println!(" {:>14.1}", n as f64 / best);
    }
    if let Some(path) = &args.csv {
        csv.write(path)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

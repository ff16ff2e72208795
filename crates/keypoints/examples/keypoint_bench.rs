//! Time per crop of the BlazePose landmark network: model variants ×
//! heatmap refinement on/off × back end (tract with 1 or 2 matrix-product
//! threads; with `--gpu`, the WGSL kernels on a headless wgpu device,
//! including the crop's upload and the outputs' readback), median of N runs.
//!
//! ```text
//! cargo run --release -p keypoints --example keypoint_bench -- [--iters 30] [--model X.onnx ...] [--gpu] [--csv out.csv]
//! ```
//!
//! Without `--model` it times the embedded default (BlazePose full). Other
//! variants: `python tools/convert_keypoint_model.py --variants full lite
//! --out /tmp/m`, then `--model /tmp/m/pose_landmark_lite.onnx`. Rows: `infer` is the
//! network alone; `detect` adds the crop, refinement and projection.

use anyhow::{Context, Result, bail};
use keypoints::{Detector, DetectorBackend, DetectorOptions, GpuDevice, INPUT_SIZE, PersonBox};
use std::path::PathBuf;
use std::time::Instant;

struct Row {
    model: String,
    heatmap: bool,
    /// "tract 1", "tract 2" or "gpu".
    backend: String,
    stage: &'static str,
    median_ms: f64,
    min_ms: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn time(iters: usize, mut f: impl FnMut() -> Result<()>) -> Result<(f64, f64)> {
    f()?; // warm-up: first-run allocations, thread pool start
    let mut ms = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        f()?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let min = ms.iter().copied().fold(f64::INFINITY, f64::min);
    Ok((median(ms), min))
}

fn main() -> Result<()> {
    let mut iters = 30usize;
    let mut sources: Vec<(String, Option<PathBuf>)> = Vec::new();
    let mut csv: Option<PathBuf> = None;
    let mut with_gpu = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--iters" => iters = args.next().context("--iters N")?.parse()?,
            "--model" => {
                let path = PathBuf::from(args.next().context("--model PATH")?);
                let name = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                sources.push((name, Some(path)));
            }
            "--csv" => csv = Some(args.next().context("--csv PATH")?.into()),
            "--gpu" => with_gpu = true,
            "-h" | "--help" => {
                println!("keypoint_bench [--iters N] [--model X.onnx ...] [--gpu] [--csv out.csv]");
                return Ok(());
            }
            other => bail!("unknown argument {other}"),
        }
    }
    if sources.is_empty() {
        sources.push(("full (embedded)".into(), None));
    }

    // A 320 × 240 frame with some texture, the tracker's usual size.
    let (w, h) = (320u32, 240u32);
    let rgb: Vec<u8> = (0..w * h * 3)
        .map(|k| (k.wrapping_mul(2654435761) >> 24) as u8)
        .collect();
    let person = PersonBox::new(120.0, 20.0, 200.0, 230.0);
    let input = vec![0.5f32; INPUT_SIZE * INPUT_SIZE * 3];
    let device = if with_gpu {
        let d = GpuDevice::headless()?;
        eprintln!("GPU: {}", d.describe());
        Some(d)
    } else {
        None
    };
    // (label, threads, backend)
    let mut backends = vec![
        ("tract 1", 1, DetectorBackend::Cpu),
        ("tract 2", 2, DetectorBackend::Cpu),
    ];
    if device.is_some() {
        backends.push(("gpu", 1, DetectorBackend::Gpu));
    }

    let mut rows = Vec::new();
    for (name, path) in &sources {
        for heatmap in [true, false] {
            for &(label, threads, backend) in &backends {
                let options = DetectorOptions {
                    refine_with_heatmap: heatmap,
                    threads,
                    backend,
                    ..Default::default()
                };
                let t = Instant::now();
                let d = match (path, &device) {
                    (Some(p), Some(gpu)) if backend == DetectorBackend::Gpu => {
                        let bytes = std::fs::read(p)?;
                        Detector::from_onnx_bytes_on(
                            &bytes,
                            &p.display().to_string(),
                            options,
                            gpu,
                        )?
                    }
                    (None, Some(gpu)) if backend == DetectorBackend::Gpu => {
                        Detector::new_on(gpu, options)?
                    }
                    (Some(p), _) => Detector::load_with(p, options)?,
                    (None, _) => Detector::new_with(options)?,
                };
                eprintln!(
                    "{name}: {} ready in {:.0} ms",
                    d.backend_description(),
                    t.elapsed().as_secs_f64() * 1e3
                );
                let model = name.clone();
                let (median_ms, min_ms) = time(iters, || Ok(d.infer(&input).map(|_| ())?))?;
                rows.push(Row {
                    model: model.clone(),
                    heatmap,
                    backend: label.to_string(),
                    stage: "infer",
                    median_ms,
                    min_ms,
                });
                let (median_ms, min_ms) =
                    time(iters, || Ok(d.detect(&rgb, w, h, person).map(|_| ())?))?;
                rows.push(Row {
                    model,
                    heatmap,
                    backend: label.to_string(),
                    stage: "detect",
                    median_ms,
                    min_ms,
                });
            }
        }
    }

    println!(
        "{:<22} {:>7} {:>8} {:>7} {:>10} {:>8}",
        "model", "heatmap", "backend", "stage", "median ms", "min ms"
    );
    for r in &rows {
        let heatmap = if r.heatmap { "yes" } else { "no" };
        println!(
            "{:<22} {:>7} {:>8} {:>7} {:>10.1} {:>8.1}",
            r.model, heatmap, r.backend, r.stage, r.median_ms, r.min_ms
        );
    }
    println!(
        "({iters} runs each after one warm-up; `tract N`: matrix products on N threads; \
         `gpu`: {}, upload and readback included)",
        device
            .as_ref()
            .map_or("not run".to_string(), |d| d.describe())
    );
    if let Some(path) = csv {
        let mut text = String::from("model,heatmap,backend,stage,median_ms,min_ms\n");
        for r in &rows {
            text += &format!(
                "{},{},{},{},{:.3},{:.3}\n",
                r.model, r.heatmap, r.backend, r.stage, r.median_ms, r.min_ms
            );
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

//! Time per crop of the BlazePose landmark network under tract: model
//! variants × matrix-product threads, median of N runs.
//!
//! ```text
//! cargo run --release -p keypoints --example keypoint_bench -- [--iters 30] [--model X.onnx ...] [--csv out.csv]
//! ```
//!
//! Without `--model` it times the embedded default (BlazePose full) and, if
//! present, `assets/models/pose_landmark_lite.onnx` (make it with
//! `python tools/convert_keypoint_model.py --variants full lite --out /tmp/m`
//! and pass `--model /tmp/m/pose_landmark_lite.onnx`). Rows: `infer` is the
//! network alone; `detect` adds the crop, refinement and projection.

use anyhow::{Context, Result, bail};
use keypoints::{Detector, INPUT_SIZE, PersonBox};
use std::path::PathBuf;
use std::time::Instant;

struct Row {
    model: String,
    threads: usize,
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
    let mut models: Vec<PathBuf> = Vec::new();
    let mut csv: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--iters" => iters = args.next().context("--iters N")?.parse()?,
            "--model" => models.push(args.next().context("--model PATH")?.into()),
            "--csv" => csv = Some(args.next().context("--csv PATH")?.into()),
            "-h" | "--help" => {
                println!("keypoint_bench [--iters N] [--model X.onnx ...] [--csv out.csv]");
                return Ok(());
            }
            other => bail!("unknown argument {other}"),
        }
    }
    let mut detectors: Vec<(String, Detector)> = Vec::new();
    if models.is_empty() {
        detectors.push(("full (embedded)".into(), Detector::new()?));
        let lite = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../assets/models/pose_landmark_lite.onnx");
        if lite.exists() {
            models.push(lite);
        }
    }
    for path in &models {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let t = Instant::now();
        let d = Detector::load(path)?;
        eprintln!(
            "loaded {} in {:.0} ms",
            path.display(),
            t.elapsed().as_secs_f64() * 1e3
        );
        detectors.push((name, d));
    }

    // A 320 × 240 frame with some texture, the tracker's usual size.
    let (w, h) = (320u32, 240u32);
    let rgb: Vec<u8> = (0..w * h * 3)
        .map(|k| ((k * 2654435761u32) >> 24) as u8)
        .collect();
    let person = PersonBox::new(120.0, 20.0, 200.0, 230.0);
    let input = vec![0.5f32; INPUT_SIZE * INPUT_SIZE * 3];

    let mut rows = Vec::new();
    for (name, detector) in &detectors {
        for threads in [1, 2] {
            let d = detector.clone().with_threads(threads);
            let (median_ms, min_ms) = time(iters, || Ok(d.infer(&input).map(|_| ())?))?;
            rows.push(Row {
                model: name.clone(),
                threads,
                stage: "infer",
                median_ms,
                min_ms,
            });
            let (median_ms, min_ms) =
                time(iters, || Ok(d.detect(&rgb, w, h, person).map(|_| ())?))?;
            rows.push(Row {
                model: name.clone(),
                threads,
                stage: "detect",
                median_ms,
                min_ms,
            });
        }
    }

    println!(
        "{:<22} {:>7} {:>7} {:>10} {:>8}",
        "model", "threads", "stage", "median ms", "min ms"
    );
    for r in &rows {
        println!(
            "{:<22} {:>7} {:>7} {:>10.1} {:>8.1}",
            r.model, r.threads, r.stage, r.median_ms, r.min_ms
        );
    }
    println!("({iters} runs each after one warm-up; tract matrix products on `threads` threads)");
    if let Some(path) = csv {
        let mut text = String::from("model,threads,stage,median_ms,min_ms\n");
        for r in &rows {
            text += &format!(
                "{},{},{},{:.3},{:.3}\n",
                r.model, r.threads, r.stage, r.median_ms, r.min_ms
            );
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

//! The GPU back end (WGSL kernels on wgpu) against tract on the committed
//! test frame: the raw network outputs and the whole pipeline's landmarks.
//!
//! Every test here needs a GPU adapter, so each is `#[ignore]`d (as in
//! `crates/gpu/tests/gpu.rs`): a plain `cargo test` reports them as ignored.
//! Run them with `cargo test -p keypoints --test gpu_parity -- --ignored`; a
//! missing adapter is then a failure. CI runs them on Mesa's lavapipe with
//! `POSECLOUD_REQUIRE_GPU=1`.

use keypoints::{
    Detector, DetectorBackend, DetectorOptions, Error, GpuDevice, INPUT_SIZE, PersonBox, RawOutput,
};
use std::sync::OnceLock;

mod common;

/// Landmarks in input pixels after the whole pipeline (the reference
/// runtime's tolerance in tests/reference.rs).
const PIXEL_TOLERANCE: f32 = 0.05;
/// Raw x, y, z in crop pixels.
const RAW_XYZ_TOLERANCE: f32 = 0.01;
/// Visibility and presence logits, the pose flag, heatmap logits.
const RAW_LOGIT_TOLERANCE: f32 = 0.01;
/// Scores (sigmoid of the logits) and the person's presence.
const SCORE_TOLERANCE: f32 = 1e-3;

/// The shared headless device ([`headless::for_tests`]), or a failure.
fn gpu() -> GpuDevice {
    let (device, queue, info) = headless::for_tests("--ignored");
    GpuDevice::from_parts(device, queue, info)
}

/// tract and the GPU back end, with and without the heatmap branch, built
/// once for all tests (each GPU inference takes about a second on lavapipe).
fn detectors(heatmap: bool) -> &'static (Detector, Detector) {
    static WITH: OnceLock<(Detector, Detector)> = OnceLock::new();
    static WITHOUT: OnceLock<(Detector, Detector)> = OnceLock::new();
    let cell = if heatmap { &WITH } else { &WITHOUT };
    cell.get_or_init(|| {
        let options = DetectorOptions {
            refine_with_heatmap: heatmap,
            ..Default::default()
        };
        let cpu = Detector::new_with(options).expect("tract loads the model");
        let gpu = Detector::new_on(
            &gpu(),
            DetectorOptions {
                backend: DetectorBackend::Gpu,
                ..options
            },
        )
        .expect("the GPU back end builds the model");
        assert!(gpu.uses_gpu() && !cpu.uses_gpu());
        eprintln!("{}", gpu.backend_description());
        (cpu, gpu)
    })
}

/// Largest differences of two raw outputs: (x/y/z in crop pixels, logits
/// and flag, heatmap logits).
fn raw_deviation(a: &RawOutput, b: &RawOutput) -> (f32, f32, f32) {
    let (mut xyz, mut logit) = (0.0f32, (a.pose_flag - b.pose_flag).abs());
    for (ra, rb) in a.landmarks.iter().zip(&b.landmarks) {
        for c in 0..3 {
            xyz = xyz.max((ra[c] - rb[c]).abs());
        }
        for c in 3..5 {
            logit = logit.max((ra[c] - rb[c]).abs());
        }
    }
    assert_eq!(a.heatmap.len(), b.heatmap.len());
    let heat = a
        .heatmap
        .iter()
        .zip(&b.heatmap)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max);
    (xyz, logit, heat)
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn raw_outputs_match_tract() {
    let (cpu, gpu) = detectors(true);
    let (rgb, w, h) = common::test_image();
    assert_eq!((w, h), (INPUT_SIZE as u32, INPUT_SIZE as u32));
    let input: Vec<f32> = rgb.iter().map(|&b| b as f32 / 255.0).collect();
    let (a, b) = (cpu.infer(&input).unwrap(), gpu.infer(&input).unwrap());
    let (xyz, logit, heat) = raw_deviation(&a, &b);
    println!("GPU vs tract, raw: xyz {xyz:.2e} px, logits {logit:.2e}, heatmap {heat:.2e}");
    assert!(xyz <= RAW_XYZ_TOLERANCE, "x/y/z differ by {xyz} px");
    assert!(logit <= RAW_LOGIT_TOLERANCE, "logits differ by {logit}");
    assert!(heat <= RAW_LOGIT_TOLERANCE, "heatmaps differ by {heat}");
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn pipeline_matches_tract_on_the_test_frame() {
    let (rgb, w, h) = common::test_image();
    // A box around the person with heatmap refinement, and a shifted box (a
    // crop with a zero border, resampled) without.
    let cases = [
        (true, PersonBox::new(40.0, 10.0, 220.0, 250.0)),
        (false, PersonBox::new(90.0, 60.0, 250.0, 256.0)),
    ];
    for (heatmap, person) in cases {
        let (cpu, gpu) = detectors(heatmap);
        {
            let a = cpu.detect(&rgb, w, h, person).unwrap();
            let b = gpu.detect(&rgb, w, h, person).unwrap();
            let mut px = 0.0f32;
            let mut score = (a.presence - b.presence).abs();
            for (p, q) in a.points.iter().zip(&b.points) {
                px = px.max((p.u - q.u).abs()).max((p.v - q.v).abs());
                score = score
                    .max((p.score - q.score).abs())
                    .max((p.presence - q.presence).abs());
            }
            for (p, q) in a.alignment.iter().zip(&b.alignment) {
                px = px.max((p[0] - q[0]).abs()).max((p[1] - q[1]).abs());
            }
            println!(
                "heatmap {heatmap}, box {person:?}: {px:.2e} px, scores {score:.2e}, presence {:.3}",
                a.presence
            );
            assert!(px <= PIXEL_TOLERANCE, "landmarks differ by {px} px");
            assert!(score <= SCORE_TOLERANCE, "scores differ by {score}");
        }
    }
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn auto_passes_over_a_software_adapter() {
    let device = gpu();
    let options = DetectorOptions {
        backend: DetectorBackend::Auto,
        ..Default::default()
    };
    let d = Detector::new_on(&device, options).unwrap();
    assert_eq!(
        d.uses_gpu(),
        !device.is_cpu(),
        "{}",
        d.backend_description()
    );
    if device.is_cpu() {
        assert!(
            d.backend_description().contains("software adapter"),
            "{}",
            d.backend_description()
        );
        assert!(
            d.why_not_gpu()
                .is_some_and(|w| w.contains("software adapter")),
            "{:?}",
            d.why_not_gpu()
        );
    } else {
        assert_eq!(d.why_not_gpu(), None);
    }
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn gpu_input_of_the_wrong_size_is_an_error() {
    let (_, gpu) = detectors(false);
    let err = gpu.infer(&[0.5; 10]).unwrap_err();
    assert!(matches!(err, Error::InputSize { len: 10, .. }), "{err}");
}

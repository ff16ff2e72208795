//! Where a session's keypoint network runs
//! ([`FilterSettings::keypoint_backend`]): the GPU back end (WGSL kernels
//! on wgpu) gives the tracker the landmarks tract gives, so a session run
//! with `Gpu` tracks as one with `Cpu` does.
//!
//! These tests need a GPU adapter, so each is `#[ignore]`d (as in
//! `crates/keypoints/tests/gpu_parity.rs`): run them with `cargo test -p
//! track --test keypoint_backend -- --ignored`; a missing adapter is then a
//! failure. CI runs them on Mesa's lavapipe with `POSECLOUD_REQUIRE_GPU=1`.
//! lavapipe runs the network at about a second a frame in a debug build, so
//! each session tracks two frames.

mod common;

use common::{CAMERA, WALK};
use keypoints::{DetectorBackend, GpuDevice};
use skeleton::Bvh;
use track::{BackendChoice, ObservationMode, SharedDevice};
use track::{CameraSpec, FilterSettings, KnownPose, Session, SessionSpec, Subject};
use vision::EmptyScene;
use vision::{RenderOptions, SyntheticRenderer, SyntheticSource, load_camera, resize_camera};

/// Clip frames 500 and 504 after the empty frame.
const FIRST: usize = 500;
const STEP: usize = 4;
const TRACKED: usize = 2;
/// Landmarks in frame pixels: the GPU back end's parity with tract
/// (crates/keypoints/tests/gpu_parity.rs).
const PIXEL_TOLERANCE: f32 = 0.05;
/// The estimate's parameters (metres, radians): the landmarks' differences
/// (about 2e-3 px on lavapipe) move the keypoint term's log weights by far
/// less than it takes to change a resampled ancestor or the MAP particle.
const POSE_TOLERANCE: f64 = 1e-3;

/// A headless device, or a failure that says how to skip (as
/// crates/keypoints/tests/gpu_parity.rs).
fn require_gpu() -> GpuDevice {
    let required = std::env::var("POSECLOUD_REQUIRE_GPU").is_ok_and(|v| v == "1");
    match GpuDevice::headless() {
        Ok(g) => {
            eprintln!("device: {}", g.describe());
            g
        }
        Err(e) => panic!(
            "no GPU adapter{}: {e}",
            if required {
                " (POSECLOUD_REQUIRE_GPU=1)"
            } else {
                " (run without --ignored to skip the GPU tests)"
            }
        ),
    }
}

/// The walk from its known first pose, keypoints only (the regions
/// would not tell the back ends apart), `keypoint_backend` on `device`
/// (the app's, as the window shares its own) or a headless one.
fn session(keypoint_backend: DetectorBackend, device: Option<&GpuDevice>) -> Session {
    let bvh = Bvh::load(WALK).unwrap();
    let camera = resize_camera(&load_camera(CAMERA).unwrap(), 320, 240).unwrap();
    let renderer = SyntheticRenderer::new(&bvh.skeleton, camera, RenderOptions::default()).unwrap();
    let source = SyntheticSource::new(&bvh, renderer, FIRST..FIRST + STEP * TRACKED, STEP).unwrap();
    let spec = SessionSpec {
        frames: "synthetic walk".into(),
        camera: CameraSpec::File(CAMERA.into()),
        subject: Subject {
            body: Some(WALK.into()),
            height: None,
        },
        init: Some(KnownPose {
            file: None,
            frame: FIRST,
        }),
        background: Some(EmptyScene::FirstFrames(1)),
        ..SessionSpec::default()
    };
    let settings = FilterSettings {
        particles: 40,
        backend: BackendChoice::Cpu,
        observation: ObservationMode::Keypoints,
        // Each frame weighed with its own detection: both frames' landmarks
        // reach the tracker.
        lagged_detections: false,
        keypoint_backend,
        ..FilterSettings::default()
    };
    let shared = device.map(|d| SharedDevice {
        device: d.device.clone(),
        queue: d.queue.clone(),
    });
    Session::open(spec, settings, Box::new(source), shared).unwrap()
}

/// Each tracked frame's landmarks (frame pixels) and estimate.
fn track(mut s: Session) -> Vec<(Vec<[f32; 2]>, Vec<f64>)> {
    let mut out = Vec::new();
    while let Some(step) = s.step().unwrap() {
        let Some(t) = step.tracked else { continue };
        let (frame, kp) = s.detection().expect("a detection");
        assert_eq!(frame, step.frame);
        out.push((kp.points.iter().map(|p| [p.u, p.v]).collect(), t.pose));
    }
    assert_eq!(out.len(), TRACKED);
    out
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn a_session_on_the_gpu_network_tracks_as_on_tract() {
    let device = require_gpu();
    let gpu = session(DetectorBackend::Gpu, Some(&device));
    let said = gpu.describe_keypoints();
    assert!(
        said.starts_with(&format!("BlazePose full on {} (GPU", device.info.name))
            && said.contains("the app's device"),
        "{said}"
    );
    let cpu = session(DetectorBackend::Cpu, None);
    assert_eq!(
        cpu.describe_keypoints(),
        "BlazePose full on the CPU (tract)"
    );
    for (k, ((kg, pg), (kc, pc))) in track(gpu).iter().zip(&track(cpu)).enumerate() {
        let px = kg
            .iter()
            .zip(kc)
            .map(|(a, b)| (a[0] - b[0]).abs().max((a[1] - b[1]).abs()))
            .fold(0.0f32, f32::max);
        let pose = pg
            .iter()
            .zip(pc)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f64, f64::max);
        eprintln!("tracked frame {k}: landmarks differ by {px:.2e} px, the estimate by {pose:.2e}");
        assert!(
            px <= PIXEL_TOLERANCE,
            "frame {k}: landmarks differ by {px} px"
        );
        assert!(
            pose <= POSE_TOLERANCE,
            "frame {k}: estimates differ by {pose}"
        );
    }
}

/// `Auto` on the session's own headless device: the GPU on a hardware
/// adapter, tract on a software one, saying why.
#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn auto_says_where_the_network_runs() {
    let device = require_gpu();
    let said = session(DetectorBackend::Auto, None).describe_keypoints();
    if device.is_cpu() {
        assert!(
            said.starts_with("BlazePose full on the CPU (tract); not the GPU: ")
                && said.contains("software adapter"),
            "{said}"
        );
    } else {
        assert!(said.contains("(GPU"), "{said}");
    }
}

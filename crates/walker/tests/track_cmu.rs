//! End to end on real motion capture: the tracker follows the first
//! half-second of the CMU walk from 2D points (fixed seeds; the bounds are
//! about 1.7 times the errors measured with three observation seeds).

use std::path::Path;

use labels::Camera;
use nalgebra::{Point3, Vector3};
use walker::mocap::{POINTS, TruthClip};
use walker::observe;
use walker::{Dynamics, InitialPose, WalkerConfig, WalkerTracker};

/// 30 frames at 60 frames/s from one frame before the first heel strike of
/// the forward walk (120 Hz frame 554).
fn walk() -> TruthClip {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/motions/cmu_131_01_walk.bvh");
    TruthClip::load(path, 554, 2, 30).unwrap()
}

fn side_camera(clip: &TruthClip) -> Camera {
    let a = clip.frames[0].points[0];
    let b = clip.frames[clip.len() - 1].points[0];
    let mid = Point3::new(0.5 * (a.x + b.x), 0.9, 0.5 * (a.z + b.z));
    Camera::looking_at(
        mid + Vector3::new(6.0, 0.1, 0.0),
        mid,
        Vector3::y(),
        0.75,
        640,
        480,
    )
    .unwrap()
}

fn mean_error(dynamics: Dynamics, n: usize) -> (f64, f64) {
    let clip = walk();
    let cam = side_camera(&clip);
    let mut cfg = WalkerConfig::thesis(
        dynamics,
        cam.clone(),
        InitialPose::from_truth(&clip, 0).unwrap(),
    );
    cfg.particles = n;
    cfg.resample_threshold = n / 5;
    cfg.frame_time = clip.frame_time;
    cfg.substeps = 1;
    cfg.joints.torso.noise = 0.02;
    let mut t = WalkerTracker::new(cfg).unwrap();
    let mut rng = smc::stream_rng(5, 0, smc::StreamDomain::User(3), 0);
    let (mut px, mut cm) = (0.0, 0.0);
    for fr in &clip.frames {
        let obs = observe(&cam, &fr.points, &[true; POINTS], 1.0, &mut rng);
        let r = t.step(&obs).unwrap();
        for k in 0..POINTS {
            let (u, v, _) = cam.project(&fr.points[k]).unwrap();
            px += (r.ellipses[k].mean[0] - u).hypot(r.ellipses[k].mean[1] - v);
            cm += 100.0 * (r.mean_points[k] - fr.points[k]).norm();
        }
    }
    let m = (clip.len() * POINTS) as f64;
    (px / m, cm / m)
}

#[test]
fn anthropomorphic_walker_follows_the_cmu_walk() {
    let (px, cm) = mean_error(Dynamics::Anthropomorphic, 1000);
    // Measured 7.3–8.6 px, 8.9–9.6 cm over observation seeds 5–7.
    assert!(px < 15.0 && cm < 20.0, "{px} px, {cm} cm");
}

#[test]
fn monopode_follows_the_cmu_walk() {
    let (px, cm) = mean_error(Dynamics::Monopode, 1000);
    // Measured 12.3–13.1 px, 13.4–14.4 cm over observation seeds 5–7.
    assert!(px < 22.0 && cm < 25.0, "{px} px, {cm} cm");
}

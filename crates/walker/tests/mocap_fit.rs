//! The CMU walk as ground truth: tracking points on a ground plane at
//! `y = 0`, and the lower-body model fitted to a frame reproduces it.

use std::path::Path;

use walker::InitialPose;
use walker::Pose;
use walker::kinematics::ANKLE_HEIGHT;
use walker::mocap::TruthClip;

fn clip() -> TruthClip {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/motions/cmu_131_01_walk.bvh");
    TruthClip::load(path, 0, 4, usize::MAX).unwrap()
}

#[test]
fn ground_plane_and_rate() {
    let c = clip();
    assert_eq!(c.len(), 249);
    assert!((c.frame_time - 4.0 / 120.0).abs() < 1e-5);
    let mut lows: Vec<f64> = c
        .frames
        .iter()
        .map(|f| f.points[2].y.min(f.points[4].y))
        .collect();
    lows.sort_by(f64::total_cmp);
    assert!((lows[lows.len() / 20] - ANKLE_HEIGHT).abs() < 1e-12);
    // Standing hip height of an adult.
    assert!(c.frames[0].points[0].y > 0.7 && c.frames[0].points[0].y < 1.0);
}

#[test]
fn fitted_pose_reproduces_the_frame() {
    let c = clip();
    // Frames of the forward walk (z increasing).
    for f in [140, 150, 160, 170] {
        let ip = InitialPose::from_truth(&c, f).unwrap();
        let pose = Pose {
            root: ip.root,
            heading: ip.heading,
            legs: ip.legs,
            segments: ip.segments,
            stance: ip.stance,
        };
        let pts = pose.tracking_points();
        for (k, (p, t)) in pts.iter().zip(&c.frames[f].points).enumerate() {
            let e = (p - t).norm();
            assert!(e < 0.08, "frame {f} point {k}: {e} m");
        }
    }
    assert!(InitialPose::from_truth(&c, c.len() - 1).is_err());
}

#[test]
fn missing_file_is_a_clear_error() {
    let e = TruthClip::load("/nonexistent/walk.bvh", 0, 4, 10).unwrap_err();
    assert!(e.to_string().contains("walk.bvh"), "{e}");
}

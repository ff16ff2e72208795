//! The CMU clips load, survive import → export → import to file precision,
//! and our forward kinematics matches an independent matrix implementation.

use nalgebra::{Matrix4, Rotation3, Vector3, Vector4};
use skeleton::{Bvh, Channel, JointKind};

fn asset(name: &str) -> String {
    format!("{}/../../assets/motions/{name}", env!("CARGO_MANIFEST_DIR"))
}

const CLIPS: [(&str, usize); 2] = [("cmu_131_01_walk.bvh", 995), ("cmu_131_03_hop.bvh", 1248)];

#[test]
fn cmu_clips_load() {
    for (clip, frames) in CLIPS {
        let bvh = Bvh::load(asset(clip)).unwrap();
        assert_eq!(bvh.frames.len(), frames, "{clip}");
        assert!((bvh.frame_time - 1.0 / 120.0).abs() < 1e-5, "{clip}");
        // 31 joints plus one end site per chain end.
        let named = bvh
            .skeleton
            .joints()
            .iter()
            .filter(|j| !j.name.ends_with("_end"))
            .count();
        assert_eq!(named, 31, "{clip}");
        assert_eq!(bvh.skeleton.dof(), 6 + 30 * 3, "{clip}");
        assert!(matches!(bvh.skeleton.joint(0).kind, JointKind::Free { .. }));
        // A standing person (a small one: the clip's head top is ~1.45 m up).
        let world = bvh.skeleton.forward_kinematics(bvh.frames.pose(0)).unwrap();
        let head = bvh.skeleton.find("Head").unwrap();
        let toe = bvh.skeleton.find("LeftToe").unwrap();
        let height = world[head].translation.y - world[toe].translation.y;
        assert!((1.0..1.8).contains(&height), "{clip}: head height {height}");
    }
}

/// Every number in the text, in order.
fn numbers(text: &str) -> Vec<f64> {
    text.split_whitespace()
        .filter_map(|t| t.parse::<f64>().ok())
        .collect()
}

#[test]
fn round_trip_is_exact_to_file_precision() {
    for (clip, _) in CLIPS {
        let original = std::fs::read_to_string(asset(clip)).unwrap();
        let a = Bvh::parse(&original, clip).unwrap();
        let text_a = a.to_bvh_string().unwrap();
        let b = Bvh::parse(&text_a, "exported").unwrap();
        // Same structure.
        assert_eq!(a.skeleton.len(), b.skeleton.len());
        for (ja, jb) in a.skeleton.joints().iter().zip(b.skeleton.joints()) {
            assert_eq!(ja.name, jb.name);
            assert_eq!(ja.parent, jb.parent);
            assert_eq!(ja.offset, jb.offset, "{}", ja.name);
        }
        assert_eq!(a.channels, b.channels);
        // Every value of the original file is reproduced exactly as printed
        // (six decimals): compare the numbers of both texts token by token.
        let (na, no) = (numbers(&text_a), numbers(&original));
        assert_eq!(na.len(), no.len(), "{clip}: number count");
        for (k, (x, y)) in na.iter().zip(&no).enumerate() {
            assert!(
                (x - y).abs() <= 1e-9,
                "{clip}: number {k}: exported {x}, original {y}"
            );
        }
        // And a second cycle is the identity on the text.
        assert_eq!(b.to_bvh_string().unwrap(), text_a, "{clip}");
        // Poses agree to the precision of six printed decimals of degrees.
        for (pa, pb) in a.frames.iter().zip(b.frames.iter()) {
            for (x, y) in pa.iter().zip(pb) {
                assert!((x - y).abs() < 1e-8);
            }
        }
    }
}

/// Forward kinematics computed the textbook way, with 4×4 matrices and
/// rotation matrices per channel, shares no code with the quaternion path.
fn fk_by_matrices(bvh: &Bvh, frame: usize) -> Vec<Vector3<f64>> {
    let pose = bvh.frames.pose(frame);
    let s = &bvh.skeleton;
    let mut world: Vec<Matrix4<f64>> = Vec::with_capacity(s.len());
    for (j, joint) in s.joints().iter().enumerate() {
        let p = &pose[s.param_range(j)];
        let mut local = Matrix4::new_translation(&joint.offset);
        let mut rot = Matrix4::identity();
        let mut rot_k = 0;
        let base = if matches!(joint.kind, JointKind::Free { .. }) {
            3
        } else {
            0
        };
        for c in &bvh.channels[j] {
            match c {
                Channel::Position(a) => {
                    let mut t = Vector3::zeros();
                    t[*a as usize] = p[*a as usize];
                    local *= Matrix4::new_translation(&t);
                }
                Channel::Rotation(a) => {
                    let axis = a.unit();
                    rot *= Rotation3::from_axis_angle(&axis, p[base + rot_k]).to_homogeneous();
                    rot_k += 1;
                }
            }
        }
        local *= rot;
        let w = match joint.parent {
            Some(parent) => world[parent] * local,
            None => local,
        };
        world.push(w);
    }
    world
        .iter()
        .map(|m| (m * Vector4::new(0.0, 0.0, 0.0, 1.0)).xyz())
        .collect()
}

#[test]
fn forward_kinematics_matches_matrix_composition() {
    let bvh = Bvh::load(asset("cmu_131_01_walk.bvh")).unwrap();
    for frame in [0, 100, 500, 994] {
        let ours = bvh
            .skeleton
            .forward_kinematics(bvh.frames.pose(frame))
            .unwrap();
        let reference = fk_by_matrices(&bvh, frame);
        for (j, (w, r)) in ours.iter().zip(&reference).enumerate() {
            let d = (w.translation.vector - r).norm();
            assert!(
                d < 1e-12,
                "frame {frame} joint {}: {d}",
                bvh.skeleton.joint(j).name
            );
        }
    }
}

#[test]
fn batched_fk_equals_single_pose_fk_on_real_motion() {
    let bvh = Bvh::load(asset("cmu_131_03_hop.bvh")).unwrap();
    let mut fk = skeleton::BatchForwardKinematics::new();
    fk.compute(&bvh.skeleton, &bvh.frames).unwrap();
    let ptr = fk.as_slice().as_ptr();
    fk.compute(&bvh.skeleton, &bvh.frames).unwrap();
    assert_eq!(
        ptr,
        fk.as_slice().as_ptr(),
        "second call must reuse the buffer"
    );
    for f in (0..bvh.frames.len()).step_by(97) {
        let single = bvh.skeleton.forward_kinematics(bvh.frames.pose(f)).unwrap();
        assert_eq!(single.as_slice(), fk.world(f));
    }
}

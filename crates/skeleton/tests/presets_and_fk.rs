//! Presets have the papers' shapes, batched FK equals single-pose FK, limits
//! project and contain, and joint rotations round-trip through parameters.

use nalgebra::{Point3, UnitQuaternion, Vector3};
use proptest::prelude::*;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;
use skeleton::{BatchForwardKinematics, JointKind, PoseBatch, Skeleton, presets};

fn position(s: &Skeleton, pose: &[f64], name: &str) -> Vector3<f64> {
    let w = s.forward_kinematics(pose).unwrap();
    w[s.find(name).unwrap()].translation.vector
}

/// A pose with every parameter drawn in ±`spread`, projected onto the limits.
fn random_pose(s: &Skeleton, rng: &mut Pcg64, spread: f64) -> Vec<f64> {
    let mut p: Vec<f64> = (0..s.dof())
        .map(|_| rng.random_range(-spread..spread))
        .collect();
    s.clamp_to_limits(&mut p);
    p
}

#[test]
fn preset_sizes() {
    let human = presets::human();
    assert_eq!(human.len(), 39);
    assert_eq!(human.dof(), 59);
    let chain = presets::chain(30, 3.0);
    assert_eq!(chain.dof(), 90);
    assert_eq!(presets::hinge_chain(30, 3.0, 0.5).dof(), 90);
    assert_eq!(presets::arm4().dof(), 12);
    // Elbow 3 + wrist 3 + five fingers × (2 + 1 + 1).
    assert_eq!(presets::hand().dof(), 26);
    // RTPF: 3 global positions + 20 joint angles.
    assert_eq!(presets::rtpf_upper_body().dof(), 23);
    // PHYSPRIOR: position 3 + heading 1 + two legs × (hip 3, knee, ankle x, ankle z).
    assert_eq!(presets::physprior_lower_body().dof(), 16);
    for name in presets::PRESET_NAMES {
        let s = presets::by_name(name).unwrap();
        assert!(
            s.within_limits(&s.rest_pose()),
            "{name} rest pose violates its limits"
        );
    }
}

#[test]
fn rest_poses_have_the_documented_geometry() {
    let c = presets::chain(30, 3.0);
    assert!((position(&c, &c.rest_pose(), "tip") - Vector3::new(3.0, 0.0, 0.0)).norm() < 1e-12);
    let h = presets::hinge_chain(12, 3.0, 0.5);
    assert!((position(&h, &h.rest_pose(), "tip") - Vector3::new(3.0, 0.0, 0.0)).norm() < 1e-12);
    let human = presets::human();
    let rest = human.rest_pose();
    for foot in ["l_heel", "r_heel", "l_toe_tip", "r_toe_tip"] {
        assert!(
            position(&human, &rest, foot).y.abs() < 1e-12,
            "{foot} on the floor"
        );
    }
    let head = position(&human, &rest, "head_top");
    assert!((1.6..1.9).contains(&head.y), "height {}", head.y);
    // Left is +x, symmetric body: centre of mass on the mid-plane.
    assert!(position(&human, &rest, "l_finger_tip").x > 0.1);
    let w = human.forward_kinematics(&rest).unwrap();
    let com = human.centre_of_mass(&w);
    assert!(com.x.abs() < 1e-9 && (0.8..1.2).contains(&com.y), "{com:?}");
    let lower = presets::physprior_lower_body();
    for foot in ["l_heel", "r_toe_tip"] {
        assert!(position(&lower, &lower.rest_pose(), foot).y.abs() < 1e-12);
    }
}

#[test]
fn joint_motions_bend_the_documented_way() {
    let human = presets::human();
    let mut pose = human.rest_pose();
    // Elbow flexion brings the hand forward (+z), knee flexion the foot back.
    pose[human.param_range(human.find("l_elbow").unwrap()).start] = 1.5;
    pose[human.param_range(human.find("r_knee").unwrap()).start] = 1.5;
    assert!(position(&human, &pose, "l_finger_tip").z > 0.2);
    assert!(position(&human, &pose, "r_heel").z < -0.2);
    // Moving the free root moves everything.
    pose[0] = 0.5;
    assert!((position(&human, &pose, "head_top").x - 0.5).abs() < 1e-12);
}

#[test]
fn centre_of_mass_of_a_straight_chain_is_its_middle() {
    let c = presets::chain(30, 3.0);
    let w = c.forward_kinematics(&c.rest_pose()).unwrap();
    let com = c.centre_of_mass(&w);
    assert!((com - Point3::new(1.5, 0.0, 0.0)).norm() < 1e-12);
}

#[test]
fn batched_fk_equals_single_fk_and_reuses_its_buffer() {
    let mut rng = Pcg64::seed_from_u64(1);
    for name in presets::PRESET_NAMES {
        let s = presets::by_name(name).unwrap();
        let mut data = Vec::new();
        for _ in 0..300 {
            data.extend(random_pose(&s, &mut rng, 2.0));
        }
        let batch = PoseBatch::from_vec(s.dof(), data).unwrap();
        let mut fk = BatchForwardKinematics::new();
        fk.compute(&s, &batch).unwrap();
        let ptr = fk.as_slice().as_ptr();
        fk.compute(&s, &batch).unwrap();
        assert_eq!(ptr, fk.as_slice().as_ptr());
        let mut coms = Vec::new();
        fk.centres_of_mass(&s, &mut coms);
        for i in (0..batch.len()).step_by(7) {
            let single = s.forward_kinematics(batch.pose(i)).unwrap();
            assert_eq!(single.as_slice(), fk.world(i), "{name} pose {i}");
            assert_eq!(coms[i], s.centre_of_mass(&single));
        }
    }
}

#[test]
fn bad_poses_are_errors() {
    let s = presets::arm4();
    assert!(s.forward_kinematics(&[0.0; 3]).is_err());
    let mut p = s.rest_pose();
    p[4] = f64::NAN;
    let e = s.forward_kinematics(&p).unwrap_err().to_string();
    assert!(e.contains("j1") && e.contains("NaN"), "{e}");
    assert!(PoseBatch::from_vec(5, vec![0.0; 7]).is_err());
    let mut fk = BatchForwardKinematics::new();
    assert!(
        fk.compute(&s, &PoseBatch::rest(&presets::hand(), 3))
            .is_err()
    );
    assert!(s.find("nope").is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Projection lands inside the limits and is idempotent, for every preset.
    #[test]
    fn clamp_to_limits_is_a_projection(seed in any::<u64>(), spread in 0.1f64..6.0) {
        let mut rng = Pcg64::seed_from_u64(seed);
        for name in presets::PRESET_NAMES {
            let s = presets::by_name(name).unwrap();
            let p = random_pose(&s, &mut rng, spread);
            prop_assert!(s.within_limits(&p), "{} violates {:?}", name, s.limit_violations(&p));
            let mut q = p.clone();
            s.clamp_to_limits(&mut q);
            for (a, b) in p.iter().zip(&q) {
                prop_assert!((a - b).abs() < 1e-12);
            }
        }
    }

    /// `set_rotation(rotation(p))` gives back the same rotation for every
    /// rotating joint, and a nearby parameter vector (continuity).
    #[test]
    fn rotation_parameters_round_trip(seed in any::<u64>()) {
        let mut rng = Pcg64::seed_from_u64(seed);
        for name in presets::PRESET_NAMES {
            let s = presets::by_name(name).unwrap();
            let pose = random_pose(&s, &mut rng, 1.0);
            for (j, joint) in s.joints().iter().enumerate() {
                let p = &pose[s.param_range(j)];
                let Some(q) = joint.kind.rotation(p) else { continue };
                let mut back = p.to_vec();
                prop_assert!(joint.kind.set_rotation(&q, &mut back));
                let q2 = joint.kind.rotation(&back).unwrap();
                prop_assert!(q.angle_to(&q2) < 1e-9, "{}: {:?} -> {:?}", joint.name, p, back);
                if !matches!(joint.kind, JointKind::Free { .. } | JointKind::Ball(_)) {
                    for (a, b) in p.iter().zip(&back) {
                        prop_assert!((a - b).abs() < 1e-9, "{}: {:?} -> {:?}", joint.name, p, back);
                    }
                }
            }
        }
    }
}

#[test]
fn hinge_set_rotation_keeps_only_the_twist() {
    let k = JointKind::hinge(Vector3::y(), None);
    let q = UnitQuaternion::from_axis_angle(&Vector3::y_axis(), 0.7)
        * UnitQuaternion::from_axis_angle(&Vector3::x_axis(), 0.0);
    let mut p = [6.0];
    k.set_rotation(&q, &mut p);
    // Nearest representative to 6.0 of 0.7 (mod 2π).
    assert!(
        (p[0] - (0.7 + std::f64::consts::TAU)).abs() < 1e-12,
        "{}",
        p[0]
    );
}

#[test]
fn urdf_arms_load_and_bend_as_written() {
    let dir = format!("{}/../../assets/robots", env!("CARGO_MANIFEST_DIR"));
    let arm6 = skeleton::load_urdf(format!("{dir}/arm6.urdf")).unwrap();
    assert_eq!(arm6.dof(), 6);
    let rest = arm6.rest_pose();
    assert!((position(&arm6, &rest, "tcp_fixed") - Vector3::new(0.0, 0.0, 1.17)).norm() < 1e-12);
    let mut p = rest.clone();
    p[arm6.param_range(arm6.find("shoulder_pitch").unwrap()).start] = std::f64::consts::FRAC_PI_2;
    assert!((position(&arm6, &p, "tcp_fixed") - Vector3::new(0.97, 0.0, 0.2)).norm() < 1e-12);
    assert!(arm6.total_mass() > 10.0);
    let arm7 = skeleton::load_urdf(format!("{dir}/arm7.urdf")).unwrap();
    assert_eq!(arm7.dof(), 7);
    // joint4's limit excludes 0: the rest pose is outside, and clamping fixes it.
    let mut r = arm7.rest_pose();
    assert_eq!(arm7.limit_violations(&r), vec!["joint4"]);
    arm7.clamp_to_limits(&mut r);
    assert!(arm7.within_limits(&r));
    // The flange's rpy flips its frame: its z axis points down.
    let w = arm7.forward_kinematics(&arm7.rest_pose()).unwrap();
    let z = w[arm7.find("flange_fixed").unwrap()].rotation * Vector3::z();
    assert!((z + Vector3::z()).norm() < 1e-6);
}

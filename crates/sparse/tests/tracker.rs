//! Cross-module behaviour of the SPARSE tracker on the CMU walk clip:
//! sensor synthesis, the null-space property of Eq. 5, tracking a short
//! clip (physics and IK baseline) and the errors bad input must raise.
#![allow(clippy::needless_range_loop)]

use nalgebra::{Isometry3, Point3, UnitQuaternion, Vector3};
use sparse::ConstraintRows;
use sparse::{
    Clip, ClusterOptions, ClusteredDatabase, IkMethod, IkTracker, MotionPrior, SensorMask,
    SensorSet, SensorSpec, SparseConfig, SparseError, SparseTracker, SyntheticSensors, body_errors,
    error_bodies, finite_difference_velocity,
};
use sparse::{compliance, null_space_rows};

fn walk() -> Clip {
    Clip::load_bvh(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../assets/motions/cmu_131_01_walk.bvh"
        ),
        60.0,
    )
    .unwrap()
}

/// The paper's sensor layout on `clip`'s skeleton and a tracker wearing it
/// with the reference prior and `config`, at rest in clip frame `frame`.
fn paper_tracker(clip: &Clip, config: SparseConfig, frame: usize) -> (SensorSet, SparseTracker) {
    let sk = &clip.skeleton;
    let sensors = SensorSet::paper_layout(sk).unwrap();
    let mut t =
        SparseTracker::new(sk, sensors.clone(), MotionPrior::reference(sk), config).unwrap();
    t.reset(&clip.poses[frame], None).unwrap();
    (sensors, t)
}

#[test]
fn clip_is_resampled_to_60_hz() {
    let clip = walk();
    assert!((clip.frame_time - 1.0 / 60.0).abs() < 1e-4);
    // 995 frames at 120 Hz → every second one.
    assert_eq!(clip.len(), 498);
    assert_eq!(clip.skeleton.dof(), 96);
}

#[test]
fn paper_layout_has_six_imus_and_five_markers_on_the_right_bones() {
    let clip = walk();
    let s = SensorSet::paper_layout(&clip.skeleton).unwrap();
    assert_eq!(s.imus.len(), 6);
    assert_eq!(s.markers.len(), 5);
    let bone = |j: usize| clip.skeleton.joint(j).name.clone();
    let imu_bones: Vec<String> = s.imus.iter().map(|i| bone(i.joint)).collect();
    assert_eq!(
        imu_bones,
        ["Head", "lhand", "rhand", "LeftAnkle", "RightAnkle", "Hips"]
    );
    let marker_bones: Vec<String> = s.markers.iter().map(|i| bone(i.joint)).collect();
    assert_eq!(
        marker_bones,
        ["Head", "lhand", "rhand", "LeftAnkle", "RightAnkle"]
    );
}

/// Exact synthetic readings are what forward kinematics compounded with the
/// registration gives, so the constraint residuals vanish at the true pose;
/// noise is seeded (same seed, same stream) and of the requested size;
/// dropouts remove about the requested share.
#[test]
fn synthesis_matches_forward_kinematics_noise_and_dropouts() {
    let clip = walk();
    let s = SensorSet::paper_layout(&clip.skeleton).unwrap();
    let poses = &clip.poses[..40];
    let exact = SyntheticSensors::default()
        .synthesize(&s, &clip.skeleton, poses)
        .unwrap();
    let model = sparse::body_model(&clip.skeleton, 70.0, 1e-3).unwrap();
    let mut data = model.data();
    let mut world = vec![Isometry3::identity(); clip.skeleton.len()];
    let mut rows = ConstraintRows::new(s.max_rows(), 96);
    // Not a zero residual until the rows are written.
    rows.phi.fill(1.0);
    for (f, r) in exact.iter().enumerate() {
        clip.skeleton.forward_kinematics_into(&poses[f], &mut world);
        let head = s.imus[0].joint;
        let want = world[head].rotation * s.imus[0].registration;
        assert!(r.imus[0].unwrap().angle_to(&want) < 1e-12);
        let n = s
            .constraint_rows(
                &model,
                &mut data,
                &poses[f],
                &world,
                r,
                &SensorMask::all(&s),
                &mut rows,
            )
            .unwrap();
        assert_eq!(n, 33);
        assert!(rows.phi[..n].iter().all(|x| x.abs() < 1e-9), "frame {f}");
    }
    let noisy = SyntheticSensors {
        imu_noise: 0.02,
        marker_noise: 0.01,
        dropout: 0.25,
        seed: 9,
    };
    let a = noisy.synthesize(&s, &clip.skeleton, poses).unwrap();
    let b = noisy.synthesize(&s, &clip.skeleton, poses).unwrap();
    assert_eq!(a, b, "same seed, same stream");
    let (mut err2, mut count, mut missing, mut total) = (0.0, 0, 0, 0);
    for (e, n) in exact.iter().zip(&a) {
        for (x, y) in e.markers.iter().zip(&n.markers) {
            total += 1;
            match y {
                Some(y) => {
                    err2 += (x.unwrap() - y).norm_squared();
                    count += 3;
                }
                None => missing += 1,
            }
        }
    }
    let rms = (err2 / count as f64).sqrt();
    assert!((rms - 0.01).abs() < 0.002, "marker noise rms {rms}");
    let share = missing as f64 / total as f64;
    assert!((share - 0.25).abs() < 0.1, "dropout share {share}");
}

/// SPARSE Eq. 5: the prior's rows live in the sensors' null space, so
/// `J_s N_sᵀ = 0` and no velocity the prior asks for moves a sensor.
#[test]
fn null_space_rows_cannot_move_the_sensors() {
    let clip = walk();
    let s = SensorSet::paper_layout(&clip.skeleton).unwrap();
    let model = sparse::body_model(&clip.skeleton, 70.0, 1e-3).unwrap();
    let mut data = model.data();
    let mut world = vec![Isometry3::identity(); clip.skeleton.len()];
    let mut rows = ConstraintRows::new(33, 96);
    for f in [0, 100, 250] {
        let q = &clip.poses[f];
        clip.skeleton.forward_kinematics_into(q, &mut world);
        let reading = s.measure(&world);
        s.constraint_rows(
            &model,
            &mut data,
            q,
            &world,
            &reading,
            &SensorMask::all(&s),
            &mut rows,
        )
        .unwrap();
        let jac = &rows.jac;
        let n = null_space_rows(jac, 6, true);
        assert_eq!(n.shape(), (90, 96));
        let jn = jac * n.transpose();
        assert!(
            jn.amax() < 1e-9 * jac.amax(),
            "frame {f}: |J_s N_sᵀ| = {}",
            jn.amax()
        );
        // Without projection (Eq. 4) the prior does move the sensors.
        let plain = null_space_rows(jac, 6, false);
        assert!((jac * plain.transpose()).amax() > 0.1);
    }
}

#[test]
fn compliance_follows_eq_6() {
    let h = 1.0 / 60.0;
    let (g, s) = compliance(5e8, 2.0, h);
    let denom = (1.0 + 1.0 / (h * 5e8)) * 2.0;
    assert!((g - 1.0 / denom).abs() < 1e-15);
    assert!((s - 1.0 / (h * h * 5e8) / denom).abs() < 1e-20);
    // Stiff rows remove ≈ 1/d of the residual per step.
    assert!((g - 0.5).abs() < 1e-6);
}

fn track(
    clip: &Clip,
    prior: MotionPrior,
    config: SparseConfig,
    frames: usize,
) -> (f64, f64, usize) {
    let sensors = SensorSet::paper_layout(&clip.skeleton).unwrap();
    let mut t = SparseTracker::new(&clip.skeleton, sensors.clone(), prior, config).unwrap();
    let v0 = finite_difference_velocity(t.model(), &clip.poses[0], &clip.poses[1], clip.frame_time)
        .unwrap();
    t.reset(&clip.poses[0], Some(&v0)).unwrap();
    let readings = SyntheticSensors::default()
        .synthesize(&sensors, &clip.skeleton, &clip.poses[..frames])
        .unwrap();
    let bodies = error_bodies(&clip.skeleton);
    let mut a = vec![Isometry3::identity(); clip.skeleton.len()];
    let mut b = a.clone();
    let (mut pos, mut ang, mut contacts) = (0.0, 0.0, 0);
    for f in 1..frames {
        let report = t.step(&readings[f]).unwrap();
        assert!(report.joint_torques.iter().all(|x| x.is_finite()));
        contacts += report.contacts.len();
        for c in &report.contacts {
            assert!(c.lambda[0] >= 0.0);
            assert!(c.lambda[1].abs() + c.lambda[2].abs() <= 0.8 * c.lambda[0] + 1e-9);
        }
        clip.skeleton
            .forward_kinematics_into(&clip.poses[f], &mut a);
        clip.skeleton.forward_kinematics_into(&report.pose, &mut b);
        let (p, o) = body_errors(&clip.skeleton, &bodies, &a, &b);
        pos += p;
        ang += o;
    }
    let n = (frames - 1) as f64;
    (pos / n * 100.0, (ang / n).to_degrees(), contacts)
}

/// With an exact prior (NGT at σ = 0) the physics tracker follows 1/2 s of
/// walking to within 2 cm and 5° on average over all bodies, finds foot
/// contacts, and does better than the T-pose prior.
#[test]
fn tracker_follows_a_short_walk() {
    let clip = walk();
    let frames = 30;
    let exact = MotionPrior::noisy_ground_truth(clip.poses.clone(), 0.0, 1).unwrap();
    let (pos, ang, contacts) = track(&clip, exact, SparseConfig::default(), frames);
    assert!(pos < 2.0 && ang < 5.0, "NGT(σ=0): {pos:.2} cm {ang:.2} deg");
    assert!(contacts > 0, "the standing subject has foot contacts");
    let (ref_pos, ref_ang, _) = track(
        &clip,
        MotionPrior::reference(&clip.skeleton),
        SparseConfig::default(),
        frames,
    );
    assert!(
        ref_pos > pos && ref_ang > ang,
        "REF {ref_pos:.2} cm {ref_ang:.2} deg"
    );
}

#[test]
fn ik_baseline_and_cd_prior_follow_a_short_walk() {
    let clip = walk();
    let sensors = SensorSet::paper_layout(&clip.skeleton).unwrap();
    let db = ClusteredDatabase::build(
        &clip.skeleton,
        &sensors,
        &[&clip.poses],
        ClusterOptions {
            clusters: 60,
            iterations: 4,
            ..ClusterOptions::default()
        },
    )
    .unwrap();
    assert_eq!(db.len(), 60);
    let frames = 30;
    let readings = SyntheticSensors::default()
        .synthesize(&sensors, &clip.skeleton, &clip.poses[..frames])
        .unwrap();
    for method in [
        IkMethod::PseudoInverse,
        IkMethod::DampedLeastSquares { damping: 0.05 },
    ] {
        let mut ik = IkTracker::new(
            &clip.skeleton,
            sensors.clone(),
            MotionPrior::Clustered(db.clone()),
            method,
        )
        .unwrap();
        ik.reset(&clip.poses[0]).unwrap();
        let bodies = error_bodies(&clip.skeleton);
        let mut a = vec![Isometry3::identity(); clip.skeleton.len()];
        let mut b = a.clone();
        let mut pos = 0.0;
        for f in 1..frames {
            let q = ik.step(&readings[f]).unwrap().to_vec();
            clip.skeleton
                .forward_kinematics_into(&clip.poses[f], &mut a);
            clip.skeleton.forward_kinematics_into(&q, &mut b);
            pos += body_errors(&clip.skeleton, &bodies, &a, &b).0;
        }
        let pos = pos / (frames - 1) as f64 * 100.0;
        assert!(pos < 5.0, "{}: {pos:.2} cm", method.name());
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let clip = walk();
    let sk = &clip.skeleton;
    let sensors = SensorSet::paper_layout(sk).unwrap();
    // Unknown bone.
    let spec = SensorSpec {
        name: "wrist".into(),
        bone: "NoSuchBone".into(),
        registration: UnitQuaternion::identity(),
        offset: Vector3::zeros(),
    };
    let e = SensorSet::new(sk, &[spec], &[]).unwrap_err();
    assert!(matches!(e, SparseError::UnknownBone { .. }));
    assert!(e.to_string().contains("NoSuchBone"), "{e}");
    // Non-positive stiffness.
    for bad in [0.0, -1.0, f64::NAN] {
        let config = SparseConfig {
            imu_stiffness: bad,
            ..SparseConfig::default()
        };
        let e = SparseTracker::new(sk, sensors.clone(), MotionPrior::reference(sk), config)
            .err()
            .unwrap();
        assert!(e.to_string().contains("imu_stiffness"), "{e}");
    }
    let (_, mut t) = paper_tracker(&clip, SparseConfig::default(), 0);
    let good = SyntheticSensors::default()
        .synthesize(&sensors, sk, &clip.poses[..2])
        .unwrap();
    // Streams of the wrong length.
    let mut short = good[1].clone();
    short.markers.pop();
    let e = t.step(&short).unwrap_err();
    assert!(
        matches!(
            e,
            SparseError::StreamLength {
                expected: 5,
                got: 4,
                ..
            }
        ),
        "{e}"
    );
    // NaN quaternion.
    let mut nan = good[1].clone();
    nan.imus[2] = Some(UnitQuaternion::new_unchecked(nalgebra::Quaternion::new(
        f64::NAN,
        0.0,
        0.0,
        0.0,
    )));
    let e = t.step(&nan).unwrap_err();
    assert!(e.to_string().contains("right hand IMU"), "{e}");
    // NaN marker.
    let mut nan = good[1].clone();
    nan.markers[0] = Some(Point3::new(0.0, f64::NAN, 0.0));
    assert!(matches!(
        t.step(&nan).unwrap_err(),
        SparseError::NonFinite { .. }
    ));
    // Wrong pose length, bad synthetic options, bad toggles.
    assert!(matches!(
        t.reset(&clip.poses[0][..10], None).unwrap_err(),
        SparseError::Dimension { .. }
    ));
    let e = SyntheticSensors {
        dropout: 1.5,
        ..SyntheticSensors::default()
    }
    .synthesize(&sensors, sk, &clip.poses[..2])
    .unwrap_err();
    assert!(e.to_string().contains("dropout"), "{e}");
    assert!(t.set_imu_enabled(6, false).is_err());
    // The tracker is still usable after the errors.
    assert!(t.step(&good[1]).is_ok());
}

/// Switching a sensor off leaves its rows out; the prior takes over.
#[test]
fn toggling_sensors_changes_the_rows() {
    let clip = walk();
    let sk = &clip.skeleton;
    let (sensors, mut t) = paper_tracker(&clip, SparseConfig::default(), 0);
    let r = SyntheticSensors::default()
        .synthesize(&sensors, sk, &clip.poses[..3])
        .unwrap();
    assert_eq!(t.step(&r[1]).unwrap().sensor_rows, 33);
    t.set_imu_enabled(0, false).unwrap();
    t.set_marker_enabled(4, false).unwrap();
    assert_eq!(t.step(&r[2]).unwrap().sensor_rows, 27);
    t.set_prior(MotionPrior::noisy_ground_truth(clip.poses.clone(), 0.12, 3).unwrap());
    assert_eq!(t.prior().name(), "NGT");
}

/// A subject standing still: both feet are in contact and the contact
/// forces carry the body weight, with little residual force at the root
/// (SPARSE §2.2.6: the root moves through contacts).
#[test]
fn standing_still_is_carried_by_the_feet() {
    let clip = walk();
    let sk = &clip.skeleton;
    let sensors = SensorSet::paper_layout(sk).unwrap();
    let exact = MotionPrior::noisy_ground_truth(vec![clip.poses[0].clone()], 0.0, 1).unwrap();
    let mut t = SparseTracker::new(sk, sensors.clone(), exact, SparseConfig::tuned()).unwrap();
    t.reset(&clip.poses[0], None).unwrap();
    let still = SyntheticSensors::default()
        .synthesize(&sensors, sk, &[clip.poses[0].clone()])
        .unwrap();
    let weight = t.model().total_mass() * 9.80665;
    let mut last = None;
    for _ in 0..20 {
        last = Some(t.step(&still[0]).unwrap());
    }
    let report = last.unwrap();
    let left = report
        .contacts
        .iter()
        .any(|c| sk.joint(c.joint).name.starts_with("Left"));
    let right = report
        .contacts
        .iter()
        .any(|c| sk.joint(c.joint).name.starts_with("Right"));
    assert!(
        left && right,
        "contacts on {:?}",
        report
            .contacts
            .iter()
            .map(|c| &sk.joint(c.joint).name)
            .collect::<Vec<_>>()
    );
    let up: f64 = report.contacts.iter().map(|c| c.force().y).sum();
    assert!(
        (up - weight).abs() < 0.1 * weight,
        "vertical contact force {up:.0} N, weight {weight:.0} N"
    );
    let root = Vector3::new(
        report.joint_torques[0],
        report.joint_torques[1],
        report.joint_torques[2],
    )
    .norm();
    assert!(root < 0.1 * weight, "residual root force {root:.0} N");
}

/// Eq. 11's box: with very low torque limits the filter runs and every
/// joint torque of the final solve stays within its limit.
#[test]
fn final_torques_respect_the_limits() {
    let clip = walk();
    let sk = &clip.skeleton;
    let config = SparseConfig {
        torque_limit_scale: 0.05,
        ..SparseConfig::tuned()
    };
    let limits = sparse::torque_limits(sk, config.total_mass, config.torque_limit_scale);
    let (sensors, mut t) = paper_tracker(&clip, config, 0);
    let r = SyntheticSensors::default()
        .synthesize(&sensors, sk, &clip.poses[..12])
        .unwrap();
    let mut filtered = 0;
    for f in &r[1..] {
        let report = t.step(f).unwrap();
        filtered += report.filter_iterations;
        for (i, (tau, lim)) in report.joint_torques.iter().zip(&limits).enumerate().skip(6) {
            assert!(
                tau.abs() <= lim * (1.0 + 1e-9) + 1e-9,
                "dof {i}: {tau} > {lim}"
            );
        }
    }
    assert!(filtered > 0, "the torque filter never ran");
}

#[test]
fn predicted_readings_match_the_reset_pose() {
    let clip = walk();
    let sk = &clip.skeleton;
    let (sensors, t) = paper_tracker(&clip, SparseConfig::tuned(), 7);
    let want = SyntheticSensors::default()
        .synthesize(&sensors, sk, &clip.poses[7..8])
        .unwrap();
    let got = t.predicted_readings();
    for (a, b) in got.markers.iter().zip(&want[0].markers) {
        assert!((a.unwrap() - b.unwrap()).norm() < 1e-12);
    }
    assert_eq!(t.body_transforms().len(), sk.len());
}

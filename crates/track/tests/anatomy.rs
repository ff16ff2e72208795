//! The arms' anatomical prior ([`track::anatomy`]) on real motion: it must
//! cost nothing on people's poses and a lot on a forearm bent backwards.
//!
//! The motions: the project's CMU clips (walk, hop) and the *tuning*
//! clips' true motions of `assets/evalset` (dance, basketball, walk on
//! another rig, retargeted onto the renderer's CMU body). The validation
//! clips are left out: the prior's constants may be checked on tuning
//! motions only (issue 34).

use skeleton::nalgebra::{Point3, Rotation3, Unit};
use skeleton::{Bvh, Skeleton};
use track::ArmAnatomy;
use track::{Arm, Side};

fn asset(path: &str) -> String {
    format!("{}/../../assets/{path}", env!("CARGO_MANIFEST_DIR"))
}

fn positions(skeleton: &Skeleton, pose: &[f64]) -> Vec<Point3<f64>> {
    skeleton
        .forward_kinematics(pose)
        .unwrap()
        .iter()
        .map(|w| Point3::from(w.translation.vector))
        .collect()
}

#[test]
fn real_motion_costs_next_to_nothing() {
    let clips = [
        "motions/cmu_131_01_walk.bvh",
        "motions/cmu_131_03_hop.bvh",
        "evalset/truth_t1.bvh",
        "evalset/truth_t2.bvh",
        "evalset/truth_t3.bvh",
        "evalset/truth_t4.bvh",
        "evalset/truth_t5.bvh",
        "evalset/truth_t6.bvh",
    ];
    for clip in clips {
        let bvh = Bvh::load(asset(clip)).unwrap();
        let prior = ArmAnatomy::new(&bvh.skeleton).unwrap();
        let mut worst: f64 = 0.0;
        let mut total = 0.0;
        for pose in bvh.frames.iter() {
            let p = positions(&bvh.skeleton, pose);
            let c = prior.cost(|j| p[j]);
            worst = worst.max(c);
            total += c;
        }
        let mean = total / bvh.frames.len() as f64;
        // No frame costs more than a tenth of a nat (the whole prior is
        // ≈ 11 nats for a forearm bent straight backwards).
        assert!(worst < 0.1, "{clip}: worst frame {worst:.3} nats");
        assert!(mean < 0.01, "{clip}: mean {mean:.4} nats");
    }
}

#[test]
fn a_forearm_turned_backwards_about_the_upper_arm_is_expensive() {
    // The walk's frames with an elbow bent by more than 35°: turning the
    // forearm by 180° about the upper arm (the same elbow angle, the wrist
    // behind the arm instead of in front) must cost several nats on most
    // (those whose forearm bent within ±40° of straight forwards: 77 % of
    // the walk's bent-elbow frames), and never less than the true pose.
    let bvh = Bvh::load(asset("motions/cmu_131_01_walk.bvh")).unwrap();
    let prior = ArmAnatomy::new(&bvh.skeleton).unwrap();
    let arms = [
        Arm::find(&bvh.skeleton, Side::Left).unwrap(),
        Arm::find(&bvh.skeleton, Side::Right).unwrap(),
    ];
    let (mut bent, mut expensive) = (0, 0);
    for pose in bvh.frames.iter() {
        let p = positions(&bvh.skeleton, pose);
        for arm in arms {
            let (s, e, w) = (p[arm.shoulder], p[arm.elbow], p[arm.wrist]);
            let (u, f) = (e - s, w - e);
            if track::angle_between(&u, &f) < 35f64.to_radians() || (e - s).normalize().y > 0.3 {
                continue;
            }
            bent += 1;
            let turn = Rotation3::from_axis_angle(&Unit::new_normalize(u), std::f64::consts::PI);
            let mut q = p.clone();
            q[arm.wrist] = e + turn * f;
            if prior.cost(|j| q[j]) > 3.0 {
                expensive += 1;
            }
            assert!(prior.cost(|j| q[j]) >= prior.cost(|j| p[j]));
        }
    }
    assert!(bent > 50, "only {bent} bent-elbow frames");
    assert!(
        expensive * 10 >= bent * 7,
        "{expensive} of {bent} turned forearms cost > 3 nats"
    );
}

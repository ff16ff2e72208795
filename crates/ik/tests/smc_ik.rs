//! SMC-IK behaviour: reaching, limits at every iteration, bad input,
//! unreachable targets, reproducibility.

use std::sync::Arc;

use ik::protocol::{MAX_ITERATIONS, Protocol, SUCCESS_DISTANCE};
use ik::{
    Adaptation, Constraint, ConstraintKind, ConstraintSet, FloorMode, IkError, JointNoise,
    LimitSampler, Noise, SmcIk, SmcIkConfig,
};
use nalgebra::{DMatrix, Point3, Unit, Vector3};
use rand::SeedableRng;
use rand_pcg::Pcg64;
use skeleton::{Skeleton, presets};

fn tip_distance(s: &Skeleton, pose: &[f64], target: &Point3<f64>) -> f64 {
    let w = s.forward_kinematics(pose).unwrap();
    (Point3::from(w[s.find("tip").unwrap()].translation.vector) - target).norm()
}

/// One constraint: the `tip` joint at `target`, σ 0.1.
fn tip_at(s: &Skeleton, target: Point3<f64>) -> ConstraintSet {
    ConstraintSet::with(
        s,
        [Constraint::position(s.find("tip").unwrap(), target, 0.1)],
    )
    .unwrap()
}

fn adaptive(particles: usize, seed: u64, sampler: LimitSampler) -> SmcIkConfig {
    SmcIkConfig {
        particles,
        seed,
        alpha: 1.0,
        sampler,
        noise: JointNoise::isotropic(0.02, 0.0),
        adaptation: Adaptation::success_rule(),
        ..SmcIkConfig::default()
    }
}

fn solve(
    protocol: Protocol,
    dof: usize,
    seed: u64,
    sampler: LimitSampler,
) -> (f64, Vec<f64>, Arc<Skeleton>) {
    let s = Arc::new(protocol.skeleton(dof));
    let target = protocol.target(&s, &mut Pcg64::seed_from_u64(seed));
    let c = tip_at(&s, target);
    let mut ik = SmcIk::new(s.clone(), c, adaptive(30, seed, sampler), &s.rest_pose()).unwrap();
    let mut best = f64::INFINITY;
    for _ in 0..MAX_ITERATIONS {
        ik.step().unwrap();
        assert!(
            ik.particles().rows().all(|p| s.within_limits(p)),
            "a particle left the joint limits"
        );
        best = best.min(tip_distance(&s, ik.map_pose(), &target));
        if best < SUCCESS_DISTANCE {
            break;
        }
    }
    (best, ik.map_pose().to_vec(), s)
}

#[test]
fn adaptive_filter_reaches_the_reach_protocol_targets() {
    for seed in 0..5 {
        let (d, _, _) = solve(Protocol::Reach, 12, seed, LimitSampler::default());
        assert!(d < SUCCESS_DISTANCE, "seed {seed}: {d}");
    }
}

#[test]
fn both_samplers_keep_every_particle_within_limits() {
    for sampler in [
        LimitSampler::AcceptReject { max_retries: 20 },
        LimitSampler::Truncated,
    ] {
        for seed in 0..3 {
            let (d, pose, s) = solve(Protocol::Limits(45f64.to_radians()), 18, seed, sampler);
            assert!(s.within_limits(&pose));
            assert!(d < 0.05, "{sampler:?} seed {seed}: {d}");
        }
    }
}

#[test]
fn plain_filter_moves_toward_the_target() {
    let s = Arc::new(presets::arm4());
    let target = Point3::new(1.5, 1.5, 0.5);
    let c = tip_at(&s, target);
    let config = SmcIkConfig {
        particles: 50,
        seed: 3,
        ..SmcIkConfig::default()
    };
    let mut ik = SmcIk::new(s.clone(), c, config, &s.rest_pose()).unwrap();
    let d0 = tip_distance(&s, &s.rest_pose(), &target);
    for _ in 0..150 {
        ik.step().unwrap();
    }
    // Smoothed (α = 0.1) estimate and MAP both close in on the target.
    assert!(tip_distance(&s, ik.map_pose(), &target) < 0.1 * d0);
    assert!(tip_distance(&s, ik.estimate(), &target) < 0.2 * d0);
}

#[test]
fn unreachable_target_gets_as_close_as_possible() {
    let s = Arc::new(presets::chain(6, 3.0));
    let target = Point3::new(0.0, 10.0, 0.0);
    let c = tip_at(&s, target);
    let mut ik = SmcIk::new(
        s.clone(),
        c,
        adaptive(30, 1, LimitSampler::default()),
        &s.rest_pose(),
    )
    .unwrap();
    for _ in 0..300 {
        ik.step().unwrap();
    }
    // The best possible is the chain stretched toward the target: 7 away.
    let d = tip_distance(&s, ik.map_pose(), &target);
    assert!(d < 7.0 + 1e-3, "{d}");
}

#[test]
fn same_seed_same_run_on_one_and_two_threads() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| solve(Protocol::Reach, 30, 9, LimitSampler::Truncated).1)
    };
    assert_eq!(run(1), run(2));
}

#[test]
fn bad_input_is_a_clear_error() {
    let s = Arc::new(presets::arm4());
    let tip = s.find("tip").unwrap();
    let rest = s.rest_pose();
    let mut c = ConstraintSet::new();
    let e = c
        .add(
            &s,
            Constraint::position(tip, Point3::new(f64::NAN, 0.0, 0.0), 0.1),
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            IkError::NonFinite {
                field: "target",
                ..
            }
        ),
        "{e}"
    );
    let e = c
        .add(&s, Constraint::position(99, Point3::origin(), 0.1))
        .unwrap_err();
    assert!(e.to_string().contains("joint index 99"), "{e}");
    let not_pd = DMatrix::from_row_slice(3, 3, &[1.0, 2.0, 0.0, 2.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    let kind = ConstraintKind::Position {
        joint: tip,
        point: Vector3::zeros(),
        target: Point3::origin(),
    };
    let e = c
        .add(&s, Constraint::new(kind.clone(), Noise::Covariance(not_pd)))
        .unwrap_err();
    assert!(e.to_string().contains("not positive definite"), "{e}");
    let e = c
        .add(&s, Constraint::new(kind.clone(), Noise::Isotropic(0.0)))
        .unwrap_err();
    assert!(matches!(e, IkError::BadCovariance { .. }), "{e}");
    let e = c
        .add(&s, Constraint::new(kind, Noise::Diagonal(vec![0.1, 0.1])))
        .unwrap_err();
    assert!(e.to_string().contains("2 standard deviations"), "{e}");
    let zero = SmcIkConfig {
        particles: 0,
        ..SmcIkConfig::default()
    };
    let e = SmcIk::new(s.clone(), ConstraintSet::new(), zero, &rest)
        .err()
        .unwrap();
    assert!(e.to_string().contains("particles"), "{e}");
    // A target edited into NaN after construction is caught at the next step.
    c.add(
        &s,
        Constraint::position(tip, Point3::new(1.0, 1.0, 0.0), 0.1),
    )
    .unwrap();
    let mut ik = SmcIk::new(s.clone(), c, SmcIkConfig::default(), &rest).unwrap();
    ik.step().unwrap();
    ik.constraints_mut()
        .set_position_target(0, Point3::new(0.0, f64::INFINITY, 0.0))
        .unwrap();
    assert!(matches!(ik.step(), Err(IkError::NonFinite { .. })));
}

#[test]
fn residuals_vanish_when_constraints_hold() {
    let s = presets::human();
    let rest = s.rest_pose();
    let w = s.forward_kinematics(&rest).unwrap();
    let heel = s.find("l_heel").unwrap();
    let head = s.find("head").unwrap();
    let up = Unit::new_normalize(Vector3::y());
    let mut out = [0.0; 3];
    let floor = ConstraintKind::Floor {
        joint: heel,
        point: Vector3::zeros(),
        up,
        height: 0.0,
        mode: FloorMode::On,
    };
    floor.residual(&s, &w, &rest, &mut out[..1]);
    assert!(out[0].abs() < 1e-12);
    let above = ConstraintKind::Floor {
        joint: heel,
        point: Vector3::zeros(),
        up,
        height: -0.5,
        mode: FloorMode::Above,
    };
    above.residual(&s, &w, &rest, &mut out[..1]);
    assert_eq!(out[0], 0.0);
    let below = ConstraintKind::Floor {
        joint: heel,
        point: Vector3::zeros(),
        up,
        height: 0.25,
        mode: FloorMode::Above,
    };
    below.residual(&s, &w, &rest, &mut out[..1]);
    assert!((out[0] + 0.25).abs() < 1e-12);
    // Look-at: the head's +z axis points at a point straight ahead of it.
    let ahead = Point3::from(w[head].translation.vector) + Vector3::new(0.0, 0.0, 2.0);
    let look = ConstraintKind::LookAt {
        joint: head,
        axis: Unit::new_normalize(Vector3::z()),
        target: ahead,
    };
    look.residual(&s, &w, &rest, &mut out[..1]);
    assert!(out[0].abs() < 1e-12);
    let side = ConstraintKind::LookAt {
        joint: head,
        axis: Unit::new_normalize(Vector3::x()),
        target: ahead,
    };
    side.residual(&s, &w, &rest, &mut out[..1]);
    assert!((out[0] - std::f64::consts::FRAC_PI_2).abs() < 1e-12);
    // Coupled joints θ_b = ⅔ θ_a.
    let hand = presets::hand();
    let a = hand.param_range(hand.find("index_mid").unwrap()).start;
    let b = hand.param_range(hand.find("index_dist").unwrap()).start;
    let mut pose = hand.rest_pose();
    pose[a] = 0.9;
    pose[b] = 0.6;
    let hw = hand.forward_kinematics(&pose).unwrap();
    let coupled = ConstraintKind::Coupled {
        param_a: a,
        param_b: b,
        ratio: 2.0 / 3.0,
    };
    coupled.residual(&hand, &hw, &pose, &mut out[..1]);
    assert!(out[0].abs() < 1e-12);
    // Smoothness (Eq. 16) is zero for equal local rotations, positive otherwise.
    let chain = presets::chain(5, 3.0);
    let joints: Vec<usize> = (0..5).collect();
    let mut p = chain.rest_pose();
    for j in 0..5 {
        p[3 * j + 2] = 0.2;
    }
    assert!(ik::smoothness_energy(&chain, &p, &joints, 2) < 1e-12);
    p[5] = 0.5;
    assert!(ik::smoothness_energy(&chain, &p, &joints, 2) > 0.1);
}

#[test]
fn optimisation_moves_reach_limited_targets_within_limits() {
    use ik::OptimisationMoves;
    let protocol = Protocol::Limits(90f64.to_radians());
    let s = Arc::new(protocol.skeleton(12));
    for seed in 0..20 {
        let target = protocol.target(&s, &mut Pcg64::seed_from_u64(seed));
        let c = tip_at(&s, target);
        let config = SmcIkConfig {
            particles: 4,
            seed,
            alpha: 1.0,
            noise: JointNoise::isotropic(0.02, 0.0),
            moves: Some(OptimisationMoves {
                damping: 3.0,
                residual_gain: 0.05,
            }),
            ..SmcIkConfig::default()
        };
        let mut ik = SmcIk::new(s.clone(), c, config, &s.rest_pose()).unwrap();
        let mut reached = false;
        for _ in 0..MAX_ITERATIONS {
            ik.step().unwrap();
            assert!(ik.particles().rows().all(|p| s.within_limits(p)));
            if tip_distance(&s, ik.map_pose(), &target) < SUCCESS_DISTANCE {
                reached = true;
                break;
            }
        }
        assert!(reached, "seed {seed}");
    }
}

#[test]
fn dls_with_restarts_solves_limited_targets() {
    use ik::{JacobianKind, JacobianSolver, Method};
    let protocol = Protocol::Limits(45f64.to_radians());
    let s = protocol.skeleton(12);
    let tip = s.find("tip").unwrap();
    for seed in 0..30 {
        let target = protocol.target(&s, &mut Pcg64::seed_from_u64(seed));
        let c = ConstraintSet::with(&s, [Constraint::position(tip, target, 1.0)]).unwrap();
        let mut solver = JacobianSolver::new(
            Method::Dls {
                damping: 0.5,
                adaptive: true,
            },
            JacobianKind::Analytic,
        )
        .with_restarts(seed);
        let mut pose = s.rest_pose();
        let report = solver
            .solve(&s, &c, &mut pose, MAX_ITERATIONS, 1e-6)
            .unwrap();
        assert!(s.within_limits(&pose));
        assert!(report.converged, "seed {seed}: {report:?}");
        assert!(tip_distance(&s, &pose, &target) < SUCCESS_DISTANCE);
    }
}

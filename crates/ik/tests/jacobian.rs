//! Analytic Jacobians agree with finite differences on the presets, the
//! Jacobian baselines (SMC-IK §3, Eq. 5) reach reachable targets, respect the
//! joint limits after every iteration, and do not allocate once warm.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

use ik::{Constraint, ConstraintKind, ConstraintSet, FloorMode, IkError, Noise};
use ik::{Difference, JacobianKind, JacobianScratch, JacobianSolver, Method};
use nalgebra::{DMatrix, Point3, Unit, UnitQuaternion, Vector3};
use proptest::prelude::*;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;
use skeleton::{Skeleton, presets};

/// Counts this thread's allocations, so a test can assert that a warm solver
/// step allocates nothing (tests run on parallel threads: the count is
/// per-thread).
struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

/// A pose with every parameter drawn in ±`spread`, projected onto the limits.
fn random_pose(s: &Skeleton, rng: &mut Pcg64, spread: f64) -> Vec<f64> {
    let mut p: Vec<f64> = (0..s.dof())
        .map(|_| rng.random_range(-spread..spread))
        .collect();
    s.clamp_to_limits(&mut p);
    p
}

fn random_vector(rng: &mut Pcg64, r: f64) -> Vector3<f64> {
    Vector3::new(
        rng.random_range(-r..r),
        rng.random_range(-r..r),
        rng.random_range(-r..r),
    )
}

fn add(set: &mut ConstraintSet, s: &Skeleton, c: Constraint) {
    set.add(s, c).expect("test constraint is valid");
}

/// A full covariance `AAᵀ + 0.01 I` with `A` random, for whitening checks.
fn random_covariance(rng: &mut Pcg64) -> Noise {
    let a = DMatrix::from_fn(3, 3, |_, _| rng.random_range(-0.2..0.2));
    Noise::Covariance(&a * a.transpose() + DMatrix::identity(3, 3) * 0.01)
}

/// Joints with a parent, deepest first: the usual end effectors.
fn effectors(s: &Skeleton) -> Vec<usize> {
    let mut leaves = s.leaves();
    leaves.retain(|&j| j > 0);
    leaves
}

/// One constraint of every analytic kind, on joints chosen by `rng`, with
/// targets placed relative to the current pose so no residual sits on a
/// non-differentiable point (`|log| = π`, floor contact, look-at `φ = 0`).
fn analytic_constraints(s: &Skeleton, pose: &[f64], rng: &mut Pcg64) -> ConstraintSet {
    let world = s.forward_kinematics(pose).unwrap();
    let leaves = effectors(s);
    let pick = |rng: &mut Pcg64| leaves[rng.random_range(0..leaves.len())];
    let mut set = ConstraintSet::new();
    for noise in [
        Noise::Isotropic(0.05),
        Noise::Diagonal(vec![0.02, 0.1, 0.05]),
        random_covariance(rng),
    ] {
        let joint = pick(rng);
        let kind = ConstraintKind::Position {
            joint,
            point: random_vector(rng, 0.1),
            target: Point3::from(random_vector(rng, 1.0)),
        };
        add(&mut set, s, Constraint::new(kind, noise));
    }
    // Orientation: the target within ~1.5 rad of the current rotation.
    let joint = rng.random_range(1..s.len());
    let target = world[joint].rotation * rotation::exp(&random_vector(rng, 0.8));
    add(
        &mut set,
        s,
        Constraint::new(
            ConstraintKind::Orientation { joint, target },
            random_covariance(rng),
        ),
    );
    let com = ConstraintKind::CentreOfMass {
        target: Point3::from(random_vector(rng, 0.5)),
        axes: [true, false, true],
    };
    add(
        &mut set,
        s,
        Constraint::new(com, Noise::Diagonal(vec![0.03, 0.04, 0.05])),
    );
    let up = Unit::new_normalize(Vector3::new(0.1, 1.0, -0.2));
    for mode in [FloorMode::On, FloorMode::Above] {
        let joint = pick(rng);
        let point = random_vector(rng, 0.05);
        let h = up.dot(&(world[joint] * Point3::from(point)).coords);
        // `Above` sees the point 0.2 below the floor, so the row is active.
        let height = h + 0.2 * rng.random_range(0.5..1.5);
        let kind = ConstraintKind::Floor {
            joint,
            point,
            up,
            height,
            mode,
        };
        add(&mut set, s, Constraint::new(kind, Noise::Isotropic(0.01)));
    }
    let joint = pick(rng);
    let axis = Unit::new_normalize(Vector3::new(1.0, 0.2, -0.1));
    let look = ConstraintKind::LookAt {
        joint,
        axis,
        target: Point3::from(
            world[joint].translation.vector + random_vector(rng, 1.0) + Vector3::new(0.0, 1.0, 0.0),
        ),
    };
    add(&mut set, s, Constraint::new(look, Noise::Isotropic(0.1)));
    let (a, b) = (rng.random_range(0..s.dof()), rng.random_range(0..s.dof()));
    let coupled = ConstraintKind::Coupled {
        param_a: a,
        param_b: b,
        ratio: 2.0 / 3.0,
    };
    add(
        &mut set,
        s,
        Constraint::new(coupled, Noise::Isotropic(0.05)),
    );
    set
}

/// `‖A − B‖_F / max(‖B‖_F, 1)`.
fn relative_error(a: &DMatrix<f64>, b: &DMatrix<f64>) -> f64 {
    assert_eq!(a.shape(), b.shape());
    (a - b).norm() / b.norm().max(1.0)
}

/// Analytic and central-difference Jacobians of `set` at `pose`.
fn both_jacobians(s: &Skeleton, set: &ConstraintSet, pose: &[f64]) -> (DMatrix<f64>, DMatrix<f64>) {
    let mut scratch = JacobianScratch::new(s, set).unwrap();
    scratch
        .compute(s, set, pose, JacobianKind::Analytic)
        .unwrap();
    let analytic = scratch.jacobian().clone();
    scratch
        .compute(s, set, pose, JacobianKind::central(1e-6))
        .unwrap();
    (analytic, scratch.jacobian().clone())
}

/// Per-row comparison, so a failure names the constraint kind.
fn assert_close(
    s: &Skeleton,
    set: &ConstraintSet,
    pose: &[f64],
    tol: f64,
) -> Result<(), TestCaseError> {
    let (analytic, fd) = both_jacobians(s, set, pose);
    prop_assert_eq!(analytic.shape(), (set.residual_dim(), s.dof()));
    let mut row = 0;
    for c in set.iter().filter(|c| c.enabled) {
        let m = c.dim();
        let a = analytic.rows(row, m).into_owned();
        let f = fd.rows(row, m).into_owned();
        let e = relative_error(&a, &f);
        prop_assert!(
            e < tol,
            "{} rows: relative error {e:e}\nanalytic {a}\nFD {f}",
            c.kind.name()
        );
        row += m;
    }
    Ok(())
}

fn presets() -> Vec<(&'static str, Skeleton)> {
    vec![
        ("chain", presets::chain(8, 3.0)),
        (
            "hinge_chain",
            presets::hinge_chain(5, 3.0, 45f64.to_radians()),
        ),
        ("human", presets::human()),
        ("hand", presets::hand()),
        ("arm4", presets::arm4()),
        ("rtpf_upper_body", presets::rtpf_upper_body()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn analytic_jacobian_matches_finite_differences(seed in any::<u64>()) {
        let mut rng = Pcg64::seed_from_u64(seed);
        for (name, s) in presets() {
            let pose = random_pose(&s, &mut rng, 0.8);
            let set = analytic_constraints(&s, &pose, &mut rng);
            assert_close(&s, &set, &pose, 1e-5).map_err(|e| TestCaseError::fail(format!("{name}: {e}")))?;
        }
    }
}

#[test]
fn fallback_rows_and_disabled_constraints() {
    let s = presets::human();
    let mut rng = Pcg64::seed_from_u64(7);
    let pose = random_pose(&s, &mut rng, 0.5);
    let mut set = ConstraintSet::new();
    let spine: Vec<usize> = ["lumbar", "thorax", "chest", "neck", "head"]
        .iter()
        .map(|n| s.find(n).unwrap())
        .collect();
    add(
        &mut set,
        &s,
        Constraint::new(
            ConstraintKind::Smoothness {
                joints: spine,
                k: 1,
            },
            Noise::Isotropic(0.5),
        ),
    );
    let hand = s.find("l_wrist").unwrap();
    let custom = ConstraintKind::Custom {
        name: "hand height".into(),
        dim: 2,
        residual: Arc::new(move |_, world, pose, out| {
            out[0] = world[hand].translation.vector.y - 1.0;
            out[1] = pose[3].sin();
        }),
    };
    add(&mut set, &s, Constraint::new(custom, Noise::Isotropic(0.1)));
    let disabled = add_returning(
        &mut set,
        &s,
        Constraint::position(hand, Point3::new(0.3, 1.2, 0.2), 0.01),
    );
    set.get_mut(disabled).enabled = false;
    assert_eq!(set.residual_dim(), 3);
    assert_close(&s, &set, &pose, 1e-6).unwrap();
    // The custom rows are central differences in both: they agree exactly.
    let (a, f) = both_jacobians(&s, &set, &pose);
    assert!((a.rows(1, 2) - f.rows(1, 2)).amax() < 1e-12);
}

fn add_returning(set: &mut ConstraintSet, s: &Skeleton, c: Constraint) -> usize {
    set.add(s, c).unwrap()
}

#[test]
fn forward_differences_are_close_to_central() {
    let s = presets::arm4();
    let mut rng = Pcg64::seed_from_u64(3);
    let pose = random_pose(&s, &mut rng, 0.8);
    let set = analytic_constraints(&s, &pose, &mut rng);
    let mut scratch = JacobianScratch::new(&s, &set).unwrap();
    scratch
        .compute(&s, &set, &pose, JacobianKind::Analytic)
        .unwrap();
    let analytic = scratch.jacobian().clone();
    scratch
        .compute(&s, &set, &pose, JacobianKind::forward(1e-7))
        .unwrap();
    assert!(relative_error(scratch.jacobian(), &analytic) < 1e-4);
}

/// A position target at the tip of a random pose of `s`.
fn tip_target(
    s: &Skeleton,
    rng: &mut Pcg64,
    spread: f64,
    sigma: f64,
) -> (ConstraintSet, Point3<f64>) {
    let tip = s.find("tip").unwrap();
    let goal = random_pose(s, rng, spread);
    let target = Point3::from(s.forward_kinematics(&goal).unwrap()[tip].translation.vector);
    let mut set = ConstraintSet::new();
    add(&mut set, s, Constraint::position(tip, target, sigma));
    (set, target)
}

fn tip_error(s: &Skeleton, pose: &[f64], target: &Point3<f64>) -> f64 {
    let tip = s.find("tip").unwrap();
    (s.forward_kinematics(pose).unwrap()[tip].translation.vector - target.coords).norm()
}

#[test]
fn dls_reaches_reachable_targets() {
    let s = presets::chain(12, 3.0);
    for kind in [JacobianKind::Analytic, JacobianKind::central(1e-6)] {
        for seed in 0..8 {
            let mut rng = Pcg64::seed_from_u64(seed);
            let (set, target) = tip_target(&s, &mut rng, 0.6, 1.0);
            let mut pose = s.rest_pose();
            let mut solver = JacobianSolver::new(Method::dls(0.1), kind);
            let report = solver.solve(&s, &set, &mut pose, 200, 1e-6 * 1e-6).unwrap();
            let err = tip_error(&s, &pose, &target);
            assert!(
                err < 1e-3,
                "seed {seed}, {kind:?}: error {err} after {report:?}"
            );
            assert!(report.converged && report.iterations <= 200);
        }
    }
}

#[test]
fn adaptive_dls_decreases_the_cost_monotonically_and_converges() {
    let s = presets::chain(12, 3.0);
    for seed in 0..4 {
        let mut rng = Pcg64::seed_from_u64(100 + seed);
        let (set, target) = tip_target(&s, &mut rng, 0.6, 0.01);
        let mut pose = s.rest_pose();
        let mut solver = JacobianSolver::new(
            Method::Dls {
                damping: 1.0,
                adaptive: true,
            },
            JacobianKind::Analytic,
        );
        let mut last = f64::INFINITY;
        for _ in 0..200 {
            let cost = solver.iterate(&s, &set, &mut pose).unwrap();
            assert!(cost <= last, "seed {seed}: cost rose from {last} to {cost}");
            last = cost;
        }
        assert!(tip_error(&s, &pose, &target) < 1e-3, "seed {seed}");
    }
}

#[test]
fn transpose_reduces_the_cost_substantially() {
    let s = presets::chain(12, 3.0);
    for kind in [JacobianKind::Analytic, JacobianKind::forward(1e-7)] {
        for seed in 0..4 {
            let mut rng = Pcg64::seed_from_u64(200 + seed);
            let (set, _) = tip_target(&s, &mut rng, 0.6, 0.05);
            let mut pose = s.rest_pose();
            let mut solver = JacobianSolver::new(Method::Transpose, kind);
            let initial = solver.solve(&s, &set, &mut pose, 0, 0.0).unwrap().cost;
            let mut costs = Vec::new();
            for _ in 0..200 {
                costs.push(solver.iterate(&s, &set, &mut pose).unwrap());
            }
            let last = *costs.last().unwrap();
            assert!(last < 1e-2 * initial, "seed {seed}: {initial} → {last}");
            // "Monotone-ish": after 50 iterations the cost is never far above
            // its running minimum.
            let mut best = f64::INFINITY;
            for &c in &costs[50..] {
                best = best.min(c);
                assert!(
                    c <= 2.0 * best + 1e-9,
                    "seed {seed}: cost {c} vs best {best}"
                );
            }
        }
    }
}

#[test]
fn joint_limits_hold_after_every_iteration() {
    let s = presets::hinge_chain(10, 3.0, 45f64.to_radians());
    let methods = [
        Method::Transpose,
        Method::dls(0.1),
        Method::Dls {
            damping: 0.5,
            adaptive: true,
        },
    ];
    for method in methods {
        for kind in [JacobianKind::Analytic, JacobianKind::central(1e-6)] {
            for seed in 0..3 {
                let mut rng = Pcg64::seed_from_u64(300 + seed);
                // Targets from poses outside the limits: often unreachable.
                let tip = s.find("tip").unwrap();
                let goal: Vec<f64> = (0..s.dof()).map(|_| rng.random_range(-1.5..1.5)).collect();
                let target =
                    Point3::from(s.forward_kinematics(&goal).unwrap()[tip].translation.vector);
                let mut set = ConstraintSet::new();
                add(&mut set, &s, Constraint::position(tip, target, 0.05));
                let mut pose = s.rest_pose();
                let mut solver = JacobianSolver::new(method, kind);
                for it in 0..40 {
                    solver.iterate(&s, &set, &mut pose).unwrap();
                    assert!(
                        s.within_limits(&pose),
                        "{method:?} {kind:?} seed {seed} iteration {it}: {:?}",
                        s.limit_violations(&pose)
                    );
                }
            }
        }
    }
}

#[test]
fn dls_step_moves_a_particle_towards_its_target_without_allocating() {
    let s = presets::chain(30, 3.0);
    let mut rng = Pcg64::seed_from_u64(11);
    let (mut set, target) = tip_target(&s, &mut rng, 0.4, 0.02);
    let com = ConstraintKind::CentreOfMass {
        target: Point3::new(1.0, 0.0, 0.0),
        axes: [true, false, true],
    };
    add(&mut set, &s, Constraint::new(com, Noise::Isotropic(0.5)));
    // λ = 0.8 m / σ: the classic damping of 0.8 m in whitened units.
    const DAMPING: f64 = 40.0;
    let mut scratch = JacobianScratch::new(&s, &set).unwrap();
    let mut pose = random_pose(&s, &mut rng, 0.1);
    let before = tip_error(&s, &pose, &target);
    scratch.dls_step(&s, &set, &mut pose, DAMPING).unwrap();
    let start = allocations();
    for _ in 0..20 {
        scratch.dls_step(&s, &set, &mut pose, DAMPING).unwrap();
    }
    assert_eq!(allocations() - start, 0, "dls_step allocated after warm-up");
    for _ in 0..80 {
        scratch.dls_step(&s, &set, &mut pose, DAMPING).unwrap();
    }
    let after = tip_error(&s, &pose, &target);
    assert!(after < 1e-3 * before, "tip error {before} → {after}");

    for method in [Method::Transpose, Method::dls(0.5)] {
        for kind in [JacobianKind::Analytic, JacobianKind::central(1e-6)] {
            let mut solver = JacobianSolver::new(method, kind);
            solver.iterate(&s, &set, &mut pose).unwrap();
            let start = allocations();
            for _ in 0..5 {
                solver.iterate(&s, &set, &mut pose).unwrap();
            }
            assert_eq!(
                allocations() - start,
                0,
                "{method:?} {kind:?} allocated after warm-up"
            );
        }
    }
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let s = presets::arm4();
    let tip = s.find("tip").unwrap();
    let mut set = ConstraintSet::new();
    add(
        &mut set,
        &s,
        Constraint::position(tip, Point3::new(1.0, 1.0, 0.0), 0.1),
    );
    let mut solver = JacobianSolver::new(Method::dls(0.1), JacobianKind::Analytic);

    let mut pose = s.rest_pose();
    pose[4] = f64::NAN;
    assert!(matches!(
        solver.iterate(&s, &set, &mut pose),
        Err(IkError::Skeleton(_))
    ));
    assert!(solver.solve(&s, &set, &mut pose, 10, 1e-6).is_err());
    let mut scratch = JacobianScratch::new(&s, &set).unwrap();
    assert!(scratch.dls_step(&s, &set, &mut pose, 0.1).is_err());
    assert!(scratch.dls_step(&s, &set, &mut [0.0; 2], 0.1).is_err());

    let mut pose = s.rest_pose();
    assert!(scratch.dls_step(&s, &set, &mut pose, f64::NAN).is_err());
    let bad_step = JacobianKind::FiniteDifference {
        step: -1.0,
        scheme: Difference::Central,
    };
    assert!(scratch.compute(&s, &set, &pose, bad_step).is_err());

    // A target edited to NaN in place is reported with its index; the pose
    // is left alone.
    set.set_position_target(0, Point3::new(f64::NAN, 0.0, 0.0))
        .unwrap();
    assert!(set.set_position_target(99, Point3::origin()).is_err());
    let before = pose.clone();
    let err = solver.iterate(&s, &set, &mut pose).unwrap_err();
    assert!(matches!(err, IkError::NonFinite { index: 0, .. }), "{err}");
    assert_eq!(pose, before);
}

#[test]
fn no_constraints_means_no_motion() {
    let s = presets::arm4();
    let set = ConstraintSet::new();
    let mut rng = Pcg64::seed_from_u64(5);
    let mut pose = random_pose(&s, &mut rng, 0.5);
    let before = pose.clone();
    let mut solver = JacobianSolver::new(Method::dls(0.1), JacobianKind::Analytic);
    let report = solver.solve(&s, &set, &mut pose, 10, 0.0).unwrap();
    assert!(report.converged && report.iterations == 0 && report.cost == 0.0);
    assert_eq!(solver.iterate(&s, &set, &mut pose).unwrap(), 0.0);
    assert_eq!(pose, before);
}

#[test]
fn orientation_target_is_reached_with_exact_log_derivative() {
    // Large initial orientation error (≈ 2.5 rad): the exact J_l⁻¹ keeps DLS
    // converging where the small-residual approximation is poor.
    let s = presets::chain(4, 2.0);
    let tip = s.find("tip").unwrap();
    let target = UnitQuaternion::from_scaled_axis(Vector3::new(0.0, 2.5, 0.3));
    let mut set = ConstraintSet::new();
    add(
        &mut set,
        &s,
        Constraint::new(
            ConstraintKind::Orientation { joint: tip, target },
            Noise::Isotropic(0.1),
        ),
    );
    let mut pose = s.rest_pose();
    let mut solver = JacobianSolver::new(Method::dls(0.1), JacobianKind::Analytic);
    let report = solver.solve(&s, &set, &mut pose, 100, 1e-12).unwrap();
    assert!(report.converged, "{report:?}");
    let world = s.forward_kinematics(&pose).unwrap();
    assert!(world[tip].rotation.angle_to(&target) < 1e-6);
}

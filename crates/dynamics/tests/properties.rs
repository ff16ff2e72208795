//! Properties every correct rigid-body model has, checked on every kind of
//! skeleton: the mass matrix is symmetric positive definite, RNEA equals
//! `M a + C`, forward dynamics inverts it, kinetic energy changes at the
//! power of the non-inertial forces (`Ṁ − 2C` skew), a floating body falls
//! at `g`, Jacobians match finite differences of forward kinematics.

use dynamics::{Data, DynamicsError, MassSource, Model, ModelOptions};
use nalgebra::{DMatrix, DVector, Vector3};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

fn asset(path: &str) -> String {
    format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))
}

/// The CMU skeleton's wrists have no bone and pivot about the same point
/// as the hand: an armature keeps `M` invertible.
fn cmu_options() -> ModelOptions {
    ModelOptions::bvh_human(70.0)
}

/// The models under test: every joint kind the skeleton crate has.
fn models() -> Vec<(&'static str, Model)> {
    let cmu = skeleton::Bvh::load(asset("assets/motions/cmu_131_01_walk.bvh")).unwrap();
    vec![
        (
            "human",
            Model::from_skeleton(&skeleton::presets::human(), MassSource::Skeleton).unwrap(),
        ),
        (
            "cmu",
            Model::from_skeleton_with(&cmu.skeleton, &cmu_options()).unwrap(),
        ),
        (
            "hand",
            Model::from_skeleton(&skeleton::presets::hand(), MassSource::Skeleton).unwrap(),
        ),
        (
            "rtpf",
            Model::from_skeleton(&skeleton::presets::rtpf_upper_body(), MassSource::Skeleton)
                .unwrap(),
        ),
        (
            "chain",
            Model::from_skeleton(&skeleton::presets::chain(5, 2.0), MassSource::Skeleton).unwrap(),
        ),
        (
            "arm6",
            Model::from_urdf(asset("assets/robots/arm6.urdf")).unwrap(),
        ),
        (
            "arm7",
            Model::from_urdf(asset("assets/robots/arm7.urdf")).unwrap(),
        ),
    ]
}

/// Runs `check(name, model, data, rng)` on every model of [`models`] in
/// turn, with one generator seeded `seed` for them all.
fn for_each_model(seed: u64, mut check: impl FnMut(&str, &Model, &mut Data, &mut Pcg64)) {
    let mut rng = Pcg64::seed_from_u64(seed);
    for (name, model) in models() {
        let mut data = model.data();
        check(name, &model, &mut data, &mut rng);
    }
}

/// `(q₊, q₋)`: the configurations a step of `±h` away.
type BothWays = (Vec<f64>, Vec<f64>);

/// A random configuration `q` (entries in ±1), a random velocity `v`
/// (entries in ±`v_scale`) and `(q ⊕ h v, q ⊕ −h v)`: where a step of `±h`
/// along `v` leads.
fn random_step(
    model: &Model,
    rng: &mut Pcg64,
    v_scale: f64,
    h: f64,
) -> (Vec<f64>, Vec<f64>, BothWays) {
    let q = random_vec(rng, model.nv(), 1.0);
    let v = random_vec(rng, model.nv(), v_scale);
    let step = |dt: f64| {
        let mut out = vec![0.0; q.len()];
        model.integrate(&q, &v, dt, &mut out).unwrap();
        out
    };
    let both_ways = (step(h), step(-h));
    (q, v, both_ways)
}

/// `q ± h q̇`: steps of `±h` along the parameter rates `qdot`.
fn shift_both_ways(q: &[f64], qdot: &[f64], h: f64) -> BothWays {
    let step = |dt: f64| q.iter().zip(qdot).map(|(a, b)| a + dt * b).collect();
    (step(h), step(-h))
}

/// `Ṁ` by central differences between the configurations `(q₊, q₋)` a
/// step of `±h` away.
fn mass_matrix_rate(
    model: &Model,
    data: &mut Data,
    (qp, qm): (&[f64], &[f64]),
    h: f64,
) -> DMatrix<f64> {
    let mp = model.mass_matrix(data, qp).unwrap().clone();
    let mm = model.mass_matrix(data, qm).unwrap();
    (mp - mm) / (2.0 * h)
}

fn random_vec(rng: &mut Pcg64, n: usize, scale: f64) -> Vec<f64> {
    (0..n).map(|_| rng.random_range(-scale..scale)).collect()
}

/// A forward-dynamics solver: `(model, data, q, v, τ) ↦ q̈`.
type ForwardDynamics =
    for<'d> fn(&Model, &'d mut Data, &[f64], &[f64], &[f64]) -> dynamics::Result<&'d DVector<f64>>;

fn rel(a: &DMatrix<f64>, b: &DMatrix<f64>) -> f64 {
    (a - b).norm() / b.norm().max(1e-300)
}

#[test]
fn mass_matrix_is_symmetric_positive_definite() {
    for_each_model(1, |name, model, data, rng| {
        for _ in 0..5 {
            let q = random_vec(rng, model.nq(), 1.2);
            let m = model.mass_matrix(data, &q).unwrap().clone();
            assert!(rel(&m.transpose(), &m) == 0.0, "{name}: not symmetric");
            let eig = m.symmetric_eigenvalues();
            assert!(eig.min() > 0.0, "{name}: eigenvalues {eig}");
        }
    });
}

#[test]
fn inverse_dynamics_is_mass_times_acceleration_plus_bias_and_forward_dynamics_inverts_it() {
    for_each_model(2, |name, model, data, rng| {
        for _ in 0..5 {
            let n = model.nv();
            let q = random_vec(rng, n, 1.2);
            let v = random_vec(rng, n, 2.0);
            let a = random_vec(rng, n, 3.0);
            let tau = model.inverse_dynamics(data, &q, &v, &a).unwrap().clone();
            let m = model.mass_matrix(data, &q).unwrap().clone();
            let c = model.bias_forces(data, &q, &v).unwrap().clone();
            let expect = &m * DVector::from_column_slice(&a) + &c;
            let err = (&tau - &expect).norm() / expect.norm();
            assert!(err < 1e-12, "{name}: RNEA vs M a + C: {err}");
            let solvers: [(&str, ForwardDynamics); 2] = [
                ("ABA", Model::forward_dynamics),
                ("CRBA + LᵀL", Model::forward_dynamics_crba),
            ];
            for (solver, forward) in solvers {
                let a2 = forward(model, data, &q, &v, tau.as_slice()).unwrap();
                let err = (a2 - DVector::from_column_slice(&a)).norm() / 3.0;
                assert!(err < 1e-9, "{name}: forward dynamics ({solver}): {err}");
            }
        }
    });
}

/// `d/dt (½ vᵀ M v) = vᵀ (τ − G)` along any motion, so with
/// `C(q, v) − G(q) = C_mat v`: `vᵀ Ṁ v = 2 vᵀ (C(q, v) − G(q))`, the
/// skew-symmetry of `Ṁ − 2C_mat` along `v` (valid for any velocity
/// coordinates). `Ṁ` by central differences along `q ⊕ ±h v`.
#[test]
fn kinetic_energy_rate_matches_the_bias_forces() {
    let h = 1e-5;
    for_each_model(3, |name, model, data, rng| {
        for _ in 0..3 {
            let (q, v, (qp, qm)) = random_step(model, rng, 1.5, h);
            let mdot = mass_matrix_rate(model, data, (&qp, &qm), h);
            let vv = DVector::from_column_slice(&v);
            let lhs = (vv.transpose() * &mdot * &vv)[0];
            let c = model.bias_forces(data, &q, &v).unwrap().clone();
            let g = model.gravity_forces(data, &q).unwrap().clone();
            let rhs = 2.0 * vv.dot(&(c - g));
            let m = model.mass_matrix(data, &q).unwrap().clone();
            let scale = (vv.transpose() * &m * &vv)[0];
            assert!(
                (lhs - rhs).abs() < 1e-6 * scale,
                "{name}: vᵀṀv = {lhs}, 2vᵀ(C−G) = {rhs}"
            );
        }
    });
}

/// With parameter-rate velocities (hinges only: the arms, the hinge chain)
/// the full identity holds: `wᵀ Ṁ(v) w = 2 wᵀ C_mat(v) w` for every `w`, with
/// the Christoffel `C_mat(v) w = (c(v + w) − c(v − w)) / 4` from RNEA.
#[test]
fn mass_matrix_rate_minus_twice_coriolis_is_skew_on_revolute_chains() {
    let mut rng = Pcg64::seed_from_u64(4);
    let h = 1e-5;
    let chains = [
        Model::from_urdf(asset("assets/robots/arm7.urdf")).unwrap(),
        Model::from_skeleton(
            &skeleton::presets::hinge_chain(3, 1.5, 3.0),
            MassSource::Skeleton,
        )
        .unwrap(),
    ];
    for model in chains {
        let mut data = model.data();
        let n = model.nv();
        let q = random_vec(&mut rng, n, 1.0);
        let v = random_vec(&mut rng, n, 1.5);
        let (qp, qm) = shift_both_ways(&q, &v, h);
        let mdot = mass_matrix_rate(&model, &mut data, (&qp, &qm), h);
        let model0 = model.clone().with_gravity(Vector3::zeros()).unwrap();
        let mut data0 = model0.data();
        // Columns of C_mat(v) by polarisation.
        let mut cmat = DMatrix::zeros(n, n);
        for k in 0..n {
            let mut vp = v.clone();
            let mut vm = v.clone();
            vp[k] += 1.0;
            vm[k] -= 1.0;
            let cp = model0.bias_forces(&mut data0, &q, &vp).unwrap().clone();
            let cm = model0.bias_forces(&mut data0, &q, &vm).unwrap().clone();
            cmat.set_column(k, &((cp - cm) / 4.0));
        }
        let s = &mdot - &cmat * 2.0;
        let asym = (&s + s.transpose()).norm() / mdot.norm();
        assert!(asym < 1e-6, "Ṁ − 2C not skew: {asym}");
    }
}

#[test]
fn a_floating_body_falls_at_g_without_joint_motion() {
    let mut rng = Pcg64::seed_from_u64(5);
    for (name, model) in models().into_iter().filter(|(_, m)| m.has_floating_base()) {
        let mut data = model.data();
        let n = model.nv();
        let q = random_vec(&mut rng, n, 1.0);
        let zero = vec![0.0; n];
        let a = model
            .forward_dynamics(&mut data, &q, &zero, &zero)
            .unwrap()
            .clone();
        let root = model.frame_pose(&mut data, &q, 0).unwrap();
        let g_local = root.r.transpose() * model.gravity();
        for k in 0..3 {
            assert!((a[k] - g_local[k]).abs() < 1e-10, "{name}: {a}");
        }
        assert!(a.rows(3, n - 3).norm() < 1e-10, "{name}: joints move: {a}");
    }
}

#[test]
fn frames_match_skeleton_forward_kinematics() {
    for_each_model(6, |name, model, data, rng| {
        let q = random_vec(rng, model.nq(), 1.0);
        let world = model.skeleton().forward_kinematics(&q).unwrap();
        for (j, w) in world.iter().enumerate() {
            let p = model.frame_pose(data, &q, j).unwrap();
            let r = w.rotation.to_rotation_matrix().into_inner();
            assert!(
                (p.p - w.translation.vector).norm() < 1e-12 && (p.r - r).norm() < 1e-12,
                "{name}: joint {j}"
            );
        }
    });
}

/// `J_x v` and `J_θ v` against central differences of forward kinematics
/// along `q ⊕ ±h v`; `param_velocity_map` against differences along `q ± h q̇`.
#[test]
fn jacobians_and_velocity_maps_match_finite_differences() {
    let h = 1e-6;
    for_each_model(7, |name, model, data, rng| {
        let n = model.nv();
        let (q, v, (qp, qm)) = random_step(model, rng, 1.0, h);
        let mut jx = DMatrix::zeros(3, n);
        let mut jw = DMatrix::zeros(3, n);
        let point = Vector3::new(0.05, -0.1, 0.07);
        for j in 0..model.skeleton().len() {
            model.point_jacobian(data, &q, j, &point, &mut jx).unwrap();
            model.orientation_jacobian(data, &q, j, &mut jw).unwrap();
            let pp = model.frame_pose(data, &qp, j).unwrap();
            let pm = model.frame_pose(data, &qm, j).unwrap();
            let xdot = (pp.transform_point(&point) - pm.transform_point(&point)) / (2.0 * h);
            let vv = DVector::from_column_slice(&v);
            let err = (&jx * &vv - xdot).norm();
            assert!(
                err < 1e-7 * (1.0 + xdot.norm()),
                "{name} joint {j}: point {err}"
            );
            // vee of the skew part of exp(2h ω) (acos-based angles lose
            // half the digits at 10⁻⁶ rad).
            let dr = pp.r * pm.r.transpose();
            let omega = Vector3::new(
                dr[(2, 1)] - dr[(1, 2)],
                dr[(0, 2)] - dr[(2, 0)],
                dr[(1, 0)] - dr[(0, 1)],
            ) / (4.0 * h);
            let err = (&jw * &vv - omega).norm();
            assert!(
                err < 1e-7 * (1.0 + omega.norm()),
                "{name} joint {j}: orientation {err}"
            );
        }
        // v = E(q) q̇: the same frame velocities from parameter rates.
        let qdot = random_vec(rng, n, 1.0);
        let mut e = DMatrix::zeros(n, n);
        model.param_velocity_map(&q, &mut e).unwrap();
        let mut v2 = vec![0.0; n];
        model.velocity_from_param_rates(&q, &qdot, &mut v2).unwrap();
        let v_e = &e * DVector::from_column_slice(&qdot);
        assert!((v_e - DVector::from_column_slice(&v2)).norm() < 1e-12);
        let mut back = vec![0.0; n];
        model.param_rates_from_velocity(&q, &v2, &mut back).unwrap();
        let err: f64 = back
            .iter()
            .zip(&qdot)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(err < 1e-9, "{name}: rates round trip {err}");
        let (qp, qm) = shift_both_ways(&q, &qdot, h);
        let last = model.skeleton().len() - 1;
        model
            .point_jacobian(data, &q, last, &point, &mut jx)
            .unwrap();
        let pp = model.frame_pose(data, &qp, last).unwrap();
        let pm = model.frame_pose(data, &qm, last).unwrap();
        let xdot = (pp.transform_point(&point) - pm.transform_point(&point)) / (2.0 * h);
        let err = (&jx * DVector::from_column_slice(&v2) - xdot).norm();
        assert!(err < 1e-7 * (1.0 + xdot.norm()), "{name}: E(q) {err}");
    });
}

#[test]
fn bad_input_is_an_error_naming_the_argument() {
    let model = Model::from_skeleton(&skeleton::presets::human(), MassSource::Skeleton).unwrap();
    let mut data = model.data();
    let mut q = vec![0.0; model.nq()];
    let short = vec![0.0; 3];
    assert!(matches!(
        model.mass_matrix(&mut data, &short),
        Err(DynamicsError::Dimension { argument: "q", .. })
    ));
    q[10] = f64::NAN;
    let err = model.mass_matrix(&mut data, &q).unwrap_err();
    assert!(
        matches!(err, DynamicsError::NonFinite { index: 10, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("q[10]"), "{err}");
    assert!(
        Model::from_skeleton(
            &skeleton::presets::human(),
            MassSource::Dempster { total_mass: -1.0 }
        )
        .is_err()
    );
}

#[test]
fn the_cmu_wrist_without_armature_is_reported_as_degenerate() {
    let cmu = skeleton::Bvh::load(asset("assets/motions/cmu_131_01_walk.bvh")).unwrap();
    let options = ModelOptions {
        armature: 0.0,
        ..cmu_options()
    };
    let err = Model::from_skeleton_with(&cmu.skeleton, &options).unwrap_err();
    assert!(err.to_string().contains("Wrist'"), "{err}");
}

#[test]
fn a_massless_leaf_joint_is_reported_as_degenerate() {
    let mut b = skeleton::SkeletonBuilder::new();
    b.joint("root", None, [0.0; 3], skeleton::JointKind::ball())
        .with_bone([0.3, 0.0, 0.0], 0.05, skeleton::BodyPart::Link, 1.0);
    b.joint(
        "wrist",
        Some("root"),
        [0.3, 0.0, 0.0],
        skeleton::JointKind::ball(),
    );
    let skel = b.build().unwrap();
    let err = Model::from_skeleton(&skel, MassSource::Skeleton).unwrap_err();
    assert!(err.to_string().contains("'wrist'"), "{err}");
}

/// `t ↦ q ⊕ v t` is a one-parameter motion: `(q ⊕ v t) ⊕ v s = q ⊕ v (t + s)`
/// for balls and free joints (exact exponentials, not a first-order step).
#[test]
fn integration_follows_the_exponential_exactly() {
    for_each_model(8, |name, model, data, rng| {
        let n = model.nv();
        let q = random_vec(rng, n, 0.8);
        let v = random_vec(rng, n, 1.0);
        let (mut q1, mut q2, mut q3) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        model.integrate(&q, &v, 0.3, &mut q1).unwrap();
        model.integrate(&q1, &v, 0.4, &mut q2).unwrap();
        model.integrate(&q, &v, 0.7, &mut q3).unwrap();
        // Compare frames (parameters of equal rotations may differ).
        for j in 0..model.skeleton().len() {
            let a = model.frame_pose(data, &q2, j).unwrap();
            let b = model.frame_pose(data, &q3, j).unwrap();
            assert!(
                (a.p - b.p).norm() < 1e-12 && (a.r - b.r).norm() < 1e-12,
                "{name} joint {j}"
            );
        }
    });
}

#[test]
fn cached_kinematics_queries_match_the_one_shot_ones_and_foreign_data_is_rejected() {
    let models = models();
    let (_, model) = &models[0];
    let mut data = model.data();
    let mut rng = Pcg64::seed_from_u64(9);
    let q = random_vec(&mut rng, model.nv(), 1.0);
    let (mut a, mut b) = (DMatrix::zeros(3, model.nv()), DMatrix::zeros(3, model.nv()));
    let p = Vector3::new(0.01, 0.02, 0.03);
    model.forward_kinematics(&mut data, &q).unwrap();
    for j in 0..model.skeleton().len() {
        model.point_jacobian_at(&data, j, &p, &mut a).unwrap();
        let pose = model.frame_pose_at(&data, j).unwrap();
        model.point_jacobian(&mut data, &q, j, &p, &mut b).unwrap();
        assert_eq!(a, b);
        assert_eq!(pose, model.frame_pose(&mut data, &q, j).unwrap());
        model.orientation_jacobian_at(&data, j, &mut a).unwrap();
        model
            .orientation_jacobian(&mut data, &q, j, &mut b)
            .unwrap();
        assert_eq!(a, b);
    }
    let (_, other) = &models[5];
    let mut foreign = other.data();
    assert!(matches!(
        model.mass_matrix(&mut foreign, &q),
        Err(DynamicsError::Dimension { .. })
    ));
    assert!(model.point_jacobian_at(&data, 999, &p, &mut a).is_err());
    let mut wrong = DMatrix::zeros(3, 2);
    assert!(model.orientation_jacobian_at(&data, 0, &mut wrong).is_err());
}

/// `r = log(R R_tᵀ)` and `∂r/∂v` against central differences along
/// `q ⊕ ±h v`, for a target far from the current orientation (2 rad away).
#[test]
fn orientation_log_jacobian_matches_finite_differences() {
    let h = 1e-6;
    for_each_model(10, |name, model, data, rng| {
        let (q, v, (qp, qm)) = random_step(model, rng, 1.0, h);
        let j = model.skeleton().len() - 1;
        let pose = model.frame_pose(data, &q, j).unwrap();
        let now = nalgebra::UnitQuaternion::from_matrix(&pose.r);
        let axis = Vector3::new(1.2, -1.0, 1.2);
        let target = nalgebra::UnitQuaternion::from_scaled_axis(axis) * now;
        let mut jac = DMatrix::zeros(3, model.nv());
        let mut scratch = DMatrix::zeros(3, model.nv());
        model.forward_kinematics(data, &qp).unwrap();
        let rp = model
            .orientation_log_jacobian_at(data, j, &target, &mut scratch)
            .unwrap();
        model.forward_kinematics(data, &qm).unwrap();
        let rm = model
            .orientation_log_jacobian_at(data, j, &target, &mut scratch)
            .unwrap();
        model.forward_kinematics(data, &q).unwrap();
        let r = model
            .orientation_log_jacobian_at(data, j, &target, &mut jac)
            .unwrap();
        // R R_tᵀ = R (exp(a) R)ᵀ = exp(−a).
        assert!((r + axis).norm() < 1e-9, "{name}: r = {r:?}");
        let fd = (rp - rm) / (2.0 * h);
        let err = (&jac * DVector::from_column_slice(&v) - fd).norm();
        assert!(err < 1e-6 * (1.0 + fd.norm()), "{name}: {err}");
    });
}

/// A tensor that is not positive semi-definite is used as written (as
/// Pinocchio does, with a warning: `tests/urdf_adjustments.rs`) unless it
/// leaves the mass matrix indefinite: here `I_zz < 0` about the joint axis.
#[test]
fn a_urdf_inertia_that_makes_the_mass_matrix_indefinite_is_an_error_naming_the_link() {
    let urdf = r#"<?xml version="1.0"?>
<robot name="bad">
  <link name="base"/>
  <link name="arm">
    <inertial>
      <origin xyz="0 0 0.1" rpy="0 0 0"/>
      <mass value="1.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="-0.02"/>
    </inertial>
    <visual><geometry><sphere radius="0.05"/></geometry></visual>
  </link>
  <joint name="j" type="revolute">
    <parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
</robot>"#;
    let err = Model::from_urdf_str(urdf, "bad.urdf").unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("bad.urdf:5: link 'arm'"), "{text}");
    assert!(text.contains("positive semi-definite"), "{text}");
    assert!(text.contains("not positive definite"), "{text}");
}

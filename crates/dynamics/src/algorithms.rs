//! The dynamics algorithms on a [`Model`], with their scratch in [`Data`].
//!
//! The equations of motion (SPARSE Eq. 1, without the constraint term):
//!
//! ```text
//! M(q) v̇ + C(q, v) = τ
//! ```
//!
//! - [`Model::mass_matrix`]: the composite-rigid-body algorithm (CRBA, RBDA
//!   Table 6.2), run in the world frame as Pinocchio does: composite
//!   inertias `Iᶜ` summed from the leaves, `M[λ, i] = S_λᵀ Iᶜ_i S_i` for every
//!   ancestor `λ` of `i`.
//! - [`Model::inverse_dynamics`]: the recursive Newton–Euler algorithm (RNEA,
//!   RBDA Table 5.1) in body frames, gravity entered as a base acceleration
//!   `−g`; `C(q, v) =` RNEA with `v̇ = 0` ([`Model::bias_forces`]).
//! - [`Model::forward_dynamics`]: `v̇ = M⁻¹ (τ − C)` by the articulated-body
//!   algorithm (ABA, RBDA Table 7.1); [`Model::forward_dynamics_crba`] by
//!   CRBA and the sparse `LᵀL` factorisation of RBDA §6.5, which follows the
//!   tree and has no fill-in ([`Model::solve_mass`] reuses the factor).
//! - Jacobians of points and of orientations ([`Model::point_jacobian`],
//!   [`Model::orientation_jacobian`]) in the world frame.
//! - [`Model::integrate`] on the configuration manifold.
//!
//! Nothing allocates after [`Data::new`].

use nalgebra::{DMatrix, DVector, Matrix3, Matrix6, SMatrix, Vector3, Vector6};

use crate::error::{DynamicsError, Result};
use crate::model::{Ancestors, JointModel, Model};
use crate::spatial::{Force, Inertia, Motion, Se3};

/// Scratch and results of the algorithms for one [`Model`]. One per thread.
#[derive(Clone, Debug)]
pub struct Data {
    /// Body poses in their parent body's frame.
    li_m_i: Vec<Se3>,
    /// Body poses in the world.
    o_m_i: Vec<Se3>,
    /// Motion subspace columns in body frames (one per velocity index).
    s_local: Vec<Motion>,
    /// The same columns in the world frame.
    s_world: Vec<Motion>,
    vel: Vec<Motion>,
    acc: Vec<Motion>,
    force: Vec<Force>,
    composite: Vec<Inertia>,
    /// `M(q)` from the last [`Model::mass_matrix`] call (both triangles).
    pub(crate) mass_matrix: DMatrix<f64>,
    /// The `LᵀL` factor of the last factorised mass matrix.
    pub(crate) factor: DMatrix<f64>,
    tau: DVector<f64>,
    rhs: DVector<f64>,
    /// ABA: articulated inertias, bias forces, `U = IA S`, `D⁻¹`, `u`, `c`.
    aba_inertia: Vec<Matrix6<f64>>,
    aba_bias: Vec<Vector6<f64>>,
    aba_u: Vec<Matrix6<f64>>,
    aba_d_inv: Vec<Matrix6<f64>>,
    aba_small_u: Vec<Vector6<f64>>,
    aba_c: Vec<Motion>,
    qdd: DVector<f64>,
}

impl Data {
    pub fn new(model: &Model) -> Self {
        let (nb, nv) = (model.bodies.len(), model.nv());
        Self {
            li_m_i: vec![Se3::identity(); nb],
            o_m_i: vec![Se3::identity(); nb],
            s_local: vec![Motion::zero(); nv],
            s_world: vec![Motion::zero(); nv],
            vel: vec![Motion::zero(); nb],
            acc: vec![Motion::zero(); nb],
            force: vec![Force::zero(); nb],
            composite: vec![Inertia::zero(); nb],
            mass_matrix: DMatrix::zeros(nv, nv),
            factor: DMatrix::zeros(nv, nv),
            tau: DVector::zeros(nv),
            rhs: DVector::zeros(nv),
            aba_inertia: vec![Matrix6::zeros(); nb],
            aba_bias: vec![Vector6::zeros(); nb],
            aba_u: vec![Matrix6::zeros(); nb],
            aba_d_inv: vec![Matrix6::zeros(); nb],
            aba_small_u: vec![Vector6::zeros(); nb],
            aba_c: vec![Motion::zero(); nb],
            qdd: DVector::zeros(nv),
        }
    }

    /// The mass matrix of the last [`Model::mass_matrix`] call.
    pub fn mass_matrix(&self) -> &DMatrix<f64> {
        &self.mass_matrix
    }

    /// The joint-space force of the last RNEA call
    /// ([`Model::inverse_dynamics`], [`Model::bias_forces`]).
    pub fn tau(&self) -> &DVector<f64> {
        &self.tau
    }

    /// World pose of a body after any call that took a configuration.
    pub fn body_pose(&self, body: usize) -> &Se3 {
        &self.o_m_i[body]
    }
}

/// `α(θ) = (1 − cos θ)/θ²`, `β(θ) = (θ − sin θ)/θ³` and their derivatives
/// divided by θ, `α'/θ`, `β'/θ`, by Taylor series below θ = 0.25 (through
/// θ⁸; the first dropped term is below 10⁻¹⁶ relative).
fn so3_coefficients(theta: f64) -> (f64, f64, f64, f64) {
    if theta < 0.25 {
        let t2 = theta * theta;
        let alpha = 0.5
            + t2 * (-1.0 / 24.0 + t2 * (1.0 / 720.0 + t2 * (-1.0 / 40_320.0 + t2 / 3_628_800.0)));
        let beta = 1.0 / 6.0
            + t2 * (-1.0 / 120.0
                + t2 * (1.0 / 5040.0 + t2 * (-1.0 / 362_880.0 + t2 / 39_916_800.0)));
        let dalpha = -2.0 / 24.0
            + t2 * (4.0 / 720.0
                + t2 * (-6.0 / 40_320.0 + t2 * (8.0 / 3_628_800.0 - t2 * 10.0 / 479_001_600.0)));
        let dbeta = -2.0 / 120.0
            + t2 * (4.0 / 5040.0
                + t2 * (-6.0 / 362_880.0
                    + t2 * (8.0 / 39_916_800.0 - t2 * 10.0 / 6_227_020_800.0)));
        (alpha, beta, dalpha, dbeta)
    } else {
        let (s, c) = theta.sin_cos();
        let t2 = theta * theta;
        let alpha = (1.0 - c) / t2;
        let beta = (theta - s) / (t2 * theta);
        let dalpha = (theta * s - 2.0 * (1.0 - c)) / (t2 * t2);
        let dbeta = ((1.0 - c) * theta - 3.0 * (theta - s)) / (t2 * t2 * theta);
        (alpha, beta, dalpha, dbeta)
    }
}

/// The right Jacobian of SO(3), `J_r(φ) = I − α[φ]× + β[φ]×²` (body angular
/// velocity of `exp(φ)` per unit `φ̇`), applied to `x`.
fn right_jacobian_mul(phi: &Vector3<f64>, x: &Vector3<f64>) -> Vector3<f64> {
    let (alpha, beta, _, _) = so3_coefficients(phi.norm());
    let px = phi.cross(x);
    x - px * alpha + phi.cross(&px) * beta
}

/// The left Jacobian of SO(3), `J_l(φ) = I + α[φ]× + β[φ]×²`, applied to `x`.
fn left_jacobian_mul(phi: &Vector3<f64>, x: &Vector3<f64>) -> Vector3<f64> {
    let (alpha, beta, _, _) = so3_coefficients(phi.norm());
    let px = phi.cross(x);
    x + px * alpha + phi.cross(&px) * beta
}

/// `(d/dt J_r(s)) ṡ = −α̇ (s × ṡ) + β̇ s × (s × ṡ) + β ṡ × (s × ṡ)` with
/// `α̇ = (α'/θ)(s·ṡ)`, `β̇ = (β'/θ)(s·ṡ)`: the swing joint's bias
/// acceleration `c_J` (RBDA Eq. 4.36, `c_J = S̊ q̇`).
fn right_jacobian_rate_mul(s: &Vector3<f64>, sdot: &Vector3<f64>) -> Vector3<f64> {
    let (_, beta, dalpha, dbeta) = so3_coefficients(s.norm());
    let sd = s.dot(sdot);
    let sxd = s.cross(sdot);
    -sxd * (dalpha * sd) + s.cross(&sxd) * (dbeta * sd) + sdot.cross(&sxd) * beta
}

/// In-place sparse `LᵀL` factorisation of `M` following the DOF tree
/// (RBDA Table 6.3): `factor ← L` lower-triangular with `M = LᵀL`, zero fill-in
/// because `M[i][j] ≠ 0` only for `i` an ancestor of `j` or the converse.
/// The ancestors of an ancestor `i` of `k` are the tail of `k`'s ancestor
/// list after `i`, so each update is one sparse row operation over a slice.
/// Returns the index of a non-positive pivot.
pub(crate) fn ltl_factor(
    factor: &mut DMatrix<f64>,
    m: &DMatrix<f64>,
    ancestors: &Ancestors,
) -> std::result::Result<(), usize> {
    let n = m.nrows();
    let (src, l) = (m.as_slice(), factor.as_mut_slice());
    // `m` is column-major; the factor is kept row-major (entry (r, c) at
    // r·n + c), so that a row's ancestor entries are close together. Only
    // the lower-triangular ancestor pattern is read or written.
    for k in 0..n {
        l[k * n + k] = src[k * n + k];
        for &i in ancestors.of(k) {
            l[k * n + i] = src[i * n + k];
        }
    }
    let scale = (0..n).map(|i| src[i * n + i].abs()).fold(0.0, f64::max);
    for k in (0..n).rev() {
        let d = l[k * n + k];
        if d.is_nan() || d <= 1e-14 * scale.max(f64::MIN_POSITIVE) {
            return Err(k);
        }
        let d = d.sqrt();
        l[k * n + k] = d;
        let anc = ancestors.of(k);
        for &i in anc {
            l[k * n + i] /= d;
        }
        for (idx, &i) in anc.iter().enumerate() {
            let lki = l[k * n + i];
            l[i * n + i] -= lki * lki;
            for &j in &anc[idx + 1..] {
                l[i * n + j] -= lki * l[k * n + j];
            }
        }
    }
    Ok(())
}

/// Solves `LᵀL x = b` in place (`b ← x`) with the factor of [`ltl_factor`]
/// (RBDA Table 6.4).
pub(crate) fn ltl_solve(l: &DMatrix<f64>, ancestors: &Ancestors, b: &mut DVector<f64>) {
    let n = b.len();
    let l = l.as_slice();
    let b = b.as_mut_slice();
    // Lᵀ y = b, from the leaves up.
    for k in (0..n).rev() {
        b[k] /= l[k * n + k];
        let yk = b[k];
        for &i in ancestors.of(k) {
            b[i] -= l[k * n + i] * yk;
        }
    }
    // L x = y, from the root down.
    for k in 0..n {
        let mut acc = b[k];
        for &i in ancestors.of(k) {
            acc -= l[k * n + i] * b[i];
        }
        b[k] = acc / l[k * n + k];
    }
}

/// The 6 × 6 matrix of a spatial inertia on `(ω, v)`:
/// `[[I_O, [h]×], [[h]×ᵀ, m 1]]` (RBDA Eq. 2.63).
fn inertia_matrix(i: &Inertia) -> Matrix6<f64> {
    let hx = crate::spatial::skew(&i.h);
    let mut m = Matrix6::zeros();
    m.fixed_view_mut::<3, 3>(0, 0).copy_from(&i.i_o);
    m.fixed_view_mut::<3, 3>(0, 3).copy_from(&hx);
    m.fixed_view_mut::<3, 3>(3, 0).copy_from(&hx.transpose());
    m.fixed_view_mut::<3, 3>(3, 3)
        .copy_from(&(Matrix3::identity() * i.mass));
    m
}

/// `Xᵀ Ia X`: an articulated inertia written in the child frame, moved to
/// the parent frame, `X = [[Rᵀ, 0], [−Rᵀ[p]×, Rᵀ]]` the motion transform
/// parent → child for the child's pose `(R, p)`. By blocks, with
/// `Ia = [[A, B], [Bᵀ, C]]`, `A' = R A Rᵀ` (likewise `B'`, `C'`) and `P = [p]×`:
/// `[[A' + P B'ᵀ − B' P − P C' P, B' + P C'], [B'ᵀ − C' P, C']]`.
fn articulated_to_parent(ia: &Matrix6<f64>, x: &Se3) -> Matrix6<f64> {
    let r = &x.r;
    let rt = r.transpose();
    let a = r * ia.fixed_view::<3, 3>(0, 0) * rt;
    let b = r * ia.fixed_view::<3, 3>(0, 3) * rt;
    let c = r * ia.fixed_view::<3, 3>(3, 3) * rt;
    let p = crate::spatial::skew(&x.p);
    let bt = b.transpose();
    let cp = c * p;
    let mut out = Matrix6::zeros();
    out.fixed_view_mut::<3, 3>(0, 0)
        .copy_from(&(a + p * bt - b * p - p * cp));
    let top_right = b + p * c;
    out.fixed_view_mut::<3, 3>(0, 3).copy_from(&top_right);
    out.fixed_view_mut::<3, 3>(3, 0)
        .copy_from(&top_right.transpose());
    out.fixed_view_mut::<3, 3>(3, 3).copy_from(&c);
    out
}

/// One body's inputs to ABA's second pass (RBDA Table 7.1).
struct AbaJoint<'a> {
    s: &'a [Motion],
    armature: &'a [f64],
    tau: &'a [f64],
    ia: &'a Matrix6<f64>,
    pa: &'a Vector6<f64>,
    c: &'a Vector6<f64>,
}

/// Its outputs, in 6 × 6 storage (leading `N` columns / block used).
struct AbaStep {
    u_mat: Matrix6<f64>,
    d_inv: Matrix6<f64>,
    u: Vector6<f64>,
    ia_a: Matrix6<f64>,
    pa_a: Vector6<f64>,
}

impl AbaJoint<'_> {
    /// `U = IA S`, `D = Sᵀ U + armature`, `u = τ − Sᵀ pA`,
    /// `Ia = IA − U D⁻¹ Uᵀ`, `pa = pA + Ia c + U D⁻¹ u`, with `N`-column
    /// matrices (no work on the columns a joint does not have).
    fn project<const N: usize>(&self) -> Option<AbaStep> {
        let mut s = SMatrix::<f64, 6, N>::zeros();
        for (k, m) in self.s.iter().enumerate() {
            s.set_column(k, &Vector6::new(m.w.x, m.w.y, m.w.z, m.v.x, m.v.y, m.v.z));
        }
        let u_mat = self.ia * s;
        let mut d = s.transpose() * u_mat;
        let mut u = s.transpose() * self.pa;
        for k in 0..N {
            d[(k, k)] += self.armature[k];
            u[k] = self.tau[k] - u[k];
        }
        let d_inv = d.cholesky()?.inverse();
        let ud = u_mat * d_inv;
        let ia_a = self.ia - ud * u_mat.transpose();
        let pa_a = self.pa + ia_a * self.c + ud * u;
        let mut step = AbaStep {
            u_mat: Matrix6::zeros(),
            d_inv: Matrix6::zeros(),
            u: Vector6::zeros(),
            ia_a,
            pa_a,
        };
        step.u_mat.fixed_view_mut::<6, N>(0, 0).copy_from(&u_mat);
        step.d_inv.fixed_view_mut::<N, N>(0, 0).copy_from(&d_inv);
        step.u.fixed_rows_mut::<N>(0).copy_from(&u);
        Some(step)
    }
}

impl Model {
    /// Fresh scratch for this model (the only allocation).
    pub fn data(&self) -> Data {
        Data::new(self)
    }

    /// `data` must have been made for a model of this shape.
    fn check_data(&self, data: &Data) -> Result<()> {
        if data.li_m_i.len() != self.bodies.len() || data.s_local.len() != self.nv() {
            return Err(DynamicsError::Dimension {
                argument: "data (made by another model's Model::data)",
                expected: self.nv(),
                got: data.s_local.len(),
            });
        }
        Ok(())
    }

    /// The arguments of a call that reads `data` and joint-space vectors:
    /// [`Model::check_data`], then [`Model::check_vectors`].
    fn check_args(&self, data: &Data, vectors: &[(&'static str, &[f64])]) -> Result<()> {
        self.check_data(data)?;
        self.check_vectors(vectors)
    }

    /// [`Model::check_vector`] on each named vector in order (the first
    /// failure is the error).
    fn check_vectors(&self, vectors: &[(&'static str, &[f64])]) -> Result<()> {
        vectors
            .iter()
            .try_for_each(|&(argument, x)| self.check_vector(argument, x))
    }

    fn check_vector(&self, argument: &'static str, x: &[f64]) -> Result<()> {
        self.check_len(argument, x)?;
        if let Some(index) = x.iter().position(|v| !v.is_finite()) {
            let joint = self
                .skeleton()
                .joint(self.joint_of_velocity(index))
                .name
                .clone();
            return Err(DynamicsError::NonFinite {
                argument,
                index,
                value: x[index],
                joint,
            });
        }
        Ok(())
    }

    /// Forward kinematics of the bodies and their motion subspaces (local and
    /// world) at `q`.
    pub(crate) fn kinematics(&self, data: &mut Data, q: &[f64]) {
        let skeleton = self.skeleton();
        for (b, body) in self.bodies.iter().enumerate() {
            let joint = skeleton.joint(body.joint);
            let nv = body.joint_model.nv();
            let p = &q[body.idx_v..body.idx_v + nv];
            let motion = Se3::from_isometry(&joint.kind.motion(p));
            let li = body.placement.compose(&motion);
            data.li_m_i[b] = li;
            data.o_m_i[b] = match body.parent {
                Some(parent) => data.o_m_i[parent].compose(&li),
                None => li,
            };
            let s = &mut data.s_local[body.idx_v..body.idx_v + nv];
            let z = Vector3::zeros();
            match &body.joint_model {
                JointModel::Revolute { axis } => s[0] = Motion::new(*axis, z),
                JointModel::Prismatic { axis } => s[0] = Motion::new(z, *axis),
                JointModel::Swing { u, w } => {
                    let sv = u * p[0] + w * p[1];
                    s[0] = Motion::new(right_jacobian_mul(&sv, u), z);
                    s[1] = Motion::new(right_jacobian_mul(&sv, w), z);
                }
                JointModel::Spherical => {
                    for (k, c) in s.iter_mut().enumerate() {
                        *c = Motion::new(Vector3::ith(k, 1.0), z);
                    }
                }
                JointModel::FreeFlyer => {
                    for k in 0..3 {
                        s[k] = Motion::new(z, Vector3::ith(k, 1.0));
                        s[k + 3] = Motion::new(Vector3::ith(k, 1.0), z);
                    }
                }
            }
            let o = data.o_m_i[b];
            for i in body.idx_v..body.idx_v + nv {
                data.s_world[i] = o.act_motion(&data.s_local[i]);
            }
        }
    }

    /// `c_J`, the joint's own bias acceleration in the body frame: non-zero
    /// only for the swing joint, whose `S` depends on `q`.
    fn joint_bias(&self, b: usize, q: &[f64], v: &[f64]) -> Motion {
        let body = &self.bodies[b];
        match &body.joint_model {
            JointModel::Swing { u, w } => {
                let i = body.idx_v;
                let s = u * q[i] + w * q[i + 1];
                let sdot = u * v[i] + w * v[i + 1];
                Motion::new(right_jacobian_rate_mul(&s, &sdot), Vector3::zeros())
            }
            _ => Motion::zero(),
        }
    }

    pub(crate) fn crba_unchecked(&self, data: &mut Data, q: &[f64]) {
        self.kinematics(data, q);
        for (b, body) in self.bodies.iter().enumerate() {
            let (com, i_c) = &body.com_form;
            data.composite[b] = Inertia::placed(body.inertia.mass, com, i_c, &data.o_m_i[b]);
        }
        // Entries off the ancestor pattern stay zero from `Data::new`: the
        // pattern depends on the tree only.
        let n = self.nv();
        let mass = data.mass_matrix.as_mut_slice();
        for b in (0..self.bodies.len()).rev() {
            let body = &self.bodies[b];
            let yc = data.composite[b];
            for i in body.idx_v..body.idx_v + body.joint_model.nv() {
                let f = yc.mul_motion(&data.s_world[i]);
                // The diagonal, then i's own earlier DOFs and every ancestor DOF.
                mass[i * n + i] = data.s_world[i].dot(&f);
                for &j in self.ancestors.of(i) {
                    let mji = data.s_world[j].dot(&f);
                    mass[i * n + j] = mji;
                    mass[j * n + i] = mji;
                }
            }
            if let Some(p) = body.parent {
                let c = data.composite[b];
                data.composite[p] += c;
            }
        }
        for (i, a) in self.armature.iter().enumerate() {
            mass[i * n + i] += a;
        }
    }

    /// The joint-space mass matrix `M(q)` by the composite-rigid-body
    /// algorithm (RBDA Table 6.2; SPARSE Eq. 1's `M`), both triangles filled.
    pub fn mass_matrix<'d>(&self, data: &'d mut Data, q: &[f64]) -> Result<&'d DMatrix<f64>> {
        self.check_args(data, &[("q", q)])?;
        self.crba_unchecked(data, q);
        Ok(&data.mass_matrix)
    }

    pub(crate) fn rnea_unchecked(
        &self,
        data: &mut Data,
        q: &[f64],
        v: Option<&[f64]>,
        a: Option<&[f64]>,
        gravity: bool,
    ) {
        self.kinematics(data, q);
        self.rnea_passes(data, q, v, a, gravity);
    }

    /// RNEA's two passes on the kinematics already in `data`.
    fn rnea_passes(
        &self,
        data: &mut Data,
        q: &[f64],
        v: Option<&[f64]>,
        a: Option<&[f64]>,
        gravity: bool,
    ) {
        let base_acc = if gravity {
            Motion::new(Vector3::zeros(), -self.gravity)
        } else {
            Motion::zero()
        };
        for (b, body) in self.bodies.iter().enumerate() {
            let li = &data.li_m_i[b];
            let (v_parent, a_parent) = match body.parent {
                Some(p) => (
                    li.act_inv_motion(&data.vel[p]),
                    li.act_inv_motion(&data.acc[p]),
                ),
                None => (Motion::zero(), li.act_inv_motion(&base_acc)),
            };
            let mut v_j = Motion::zero();
            let mut a_j = Motion::zero();
            if let Some(v) = v {
                a_j = self.joint_bias(b, q, v);
            }
            for i in body.idx_v..body.idx_v + body.joint_model.nv() {
                if let Some(v) = v {
                    v_j += data.s_local[i] * v[i];
                }
                if let Some(a) = a {
                    a_j += data.s_local[i] * a[i];
                }
            }
            let vel = v_parent + v_j;
            let acc = a_parent + a_j + vel.cross(&v_j);
            let inertia = &body.inertia;
            data.vel[b] = vel;
            data.acc[b] = acc;
            data.force[b] = inertia.mul_motion(&acc) + vel.cross_force(&inertia.mul_motion(&vel));
        }
        for b in (0..self.bodies.len()).rev() {
            let body = &self.bodies[b];
            let f = data.force[b];
            for i in body.idx_v..body.idx_v + body.joint_model.nv() {
                data.tau[i] = data.s_local[i].dot(&f);
                if let Some(a) = a {
                    data.tau[i] += self.armature[i] * a[i];
                }
            }
            if let Some(p) = body.parent {
                let fp = data.li_m_i[b].act_force(&f);
                data.force[p] += fp;
            }
        }
    }

    /// Inverse dynamics `τ = M(q) a + C(q, v)` by the recursive Newton–Euler
    /// algorithm (RBDA Table 5.1; SPARSE Eq. 1 without constraint forces).
    pub fn inverse_dynamics<'d>(
        &self,
        data: &'d mut Data,
        q: &[f64],
        v: &[f64],
        a: &[f64],
    ) -> Result<&'d DVector<f64>> {
        self.check_args(data, &[("q", q), ("v", v), ("a", a)])?;
        self.rnea_unchecked(data, q, Some(v), Some(a), true);
        Ok(&data.tau)
    }

    /// The bias forces `C(q, v)`: gravity, Coriolis and centrifugal terms
    /// (SPARSE Eq. 1's `C`), i.e. RNEA with zero acceleration.
    pub fn bias_forces<'d>(
        &self,
        data: &'d mut Data,
        q: &[f64],
        v: &[f64],
    ) -> Result<&'d DVector<f64>> {
        self.check_args(data, &[("q", q), ("v", v)])?;
        self.rnea_unchecked(data, q, Some(v), None, true);
        Ok(&data.tau)
    }

    /// Gravity alone, `G(q) = C(q, 0)`.
    pub fn gravity_forces<'d>(&self, data: &'d mut Data, q: &[f64]) -> Result<&'d DVector<f64>> {
        self.check_args(data, &[("q", q)])?;
        self.rnea_unchecked(data, q, None, None, true);
        Ok(&data.tau)
    }

    /// `M(q)` and `C(q, v)` in one call (the pair SPARSE's solver needs every
    /// frame): the mass matrix in `data.mass_matrix()`, `C` in `data.tau()`.
    pub fn mass_matrix_and_bias(&self, data: &mut Data, q: &[f64], v: &[f64]) -> Result<()> {
        self.check_args(data, &[("q", q), ("v", v)])?;
        self.crba_unchecked(data, q);
        self.rnea_passes(data, q, Some(v), None, true);
        Ok(())
    }

    /// Forward dynamics `a = M⁻¹ (τ − C(q, v))` by the articulated-body
    /// algorithm (ABA, RBDA Table 7.1): O(n), no mass matrix.
    pub fn forward_dynamics<'d>(
        &self,
        data: &'d mut Data,
        q: &[f64],
        v: &[f64],
        tau: &[f64],
    ) -> Result<&'d DVector<f64>> {
        self.check_args(data, &[("q", q), ("v", v), ("tau", tau)])?;
        self.kinematics(data, q);
        self.aba_passes(data, q, v, tau)?;
        Ok(&data.qdd)
    }

    /// Forward dynamics through the mass matrix: CRBA, RNEA and the sparse
    /// `LᵀL` factorisation of RBDA §6.5 (the factor stays in `data` for
    /// [`Model::solve_mass`]). Same result as [`Model::forward_dynamics`].
    pub fn forward_dynamics_crba<'d>(
        &self,
        data: &'d mut Data,
        q: &[f64],
        v: &[f64],
        tau: &[f64],
    ) -> Result<&'d DVector<f64>> {
        self.check_vector("tau", tau)?;
        self.mass_matrix_and_bias(data, q, v)?;
        self.factorize(data)?;
        for ((r, t), c) in data.rhs.iter_mut().zip(tau).zip(data.tau.iter()) {
            *r = t - c;
        }
        ltl_solve(&data.factor, &self.ancestors, &mut data.rhs);
        Ok(&data.rhs)
    }

    /// ABA's three passes on the kinematics in `data`.
    fn aba_passes(&self, data: &mut Data, q: &[f64], v: &[f64], tau: &[f64]) -> Result<()> {
        let as6 = |m: &Motion| Vector6::new(m.w.x, m.w.y, m.w.z, m.v.x, m.v.y, m.v.z);
        let force6 = |f: &Force| Vector6::new(f.n.x, f.n.y, f.n.z, f.f.x, f.f.y, f.f.z);
        let from6 = |x: &Vector6<f64>| {
            Force::new(
                Vector3::new(x[0], x[1], x[2]),
                Vector3::new(x[3], x[4], x[5]),
            )
        };
        // Pass 1: velocities, velocity-product accelerations c, body inertias.
        for (b, body) in self.bodies.iter().enumerate() {
            let li = &data.li_m_i[b];
            let v_parent = match body.parent {
                Some(p) => li.act_inv_motion(&data.vel[p]),
                None => Motion::zero(),
            };
            let range = body.idx_v..body.idx_v + body.joint_model.nv();
            let v_j = data.s_local[range.clone()]
                .iter()
                .zip(&v[range])
                .fold(Motion::zero(), |acc, (s, vi)| acc + *s * *vi);
            let vel = v_parent + v_j;
            data.vel[b] = vel;
            data.aba_c[b] = self.joint_bias(b, q, v) + vel.cross(&v_j);
            let inertia = &body.inertia;
            data.aba_inertia[b] = inertia_matrix(inertia);
            data.aba_bias[b] = force6(&vel.cross_force(&inertia.mul_motion(&vel)));
        }
        // Pass 2: articulated inertias and bias forces, leaves to root.
        for b in (0..self.bodies.len()).rev() {
            let body = &self.bodies[b];
            let range = body.idx_v..body.idx_v + body.joint_model.nv();
            let joint = AbaJoint {
                s: &data.s_local[range.clone()],
                armature: &self.armature[range.clone()],
                tau: &tau[range],
                ia: &data.aba_inertia[b],
                pa: &data.aba_bias[b],
                c: &as6(&data.aba_c[b]),
            };
            let step = match body.joint_model.nv() {
                1 => joint.project::<1>(),
                2 => joint.project::<2>(),
                3 => joint.project::<3>(),
                _ => joint.project::<6>(),
            }
            .ok_or_else(|| DynamicsError::Degenerate {
                joint: self.skeleton().joint(body.joint).name.clone(),
                index: body.idx_v,
            })?;
            data.aba_u[b] = step.u_mat;
            data.aba_d_inv[b] = step.d_inv;
            data.aba_small_u[b] = step.u;
            if let Some(p) = body.parent {
                data.aba_inertia[p] += articulated_to_parent(&step.ia_a, &data.li_m_i[b]);
                let fp = data.li_m_i[b].act_force(&from6(&step.pa_a));
                data.aba_bias[p] += force6(&fp);
            }
        }
        // Pass 3: accelerations, root to leaves.
        let base = Motion::new(Vector3::zeros(), -self.gravity);
        for (b, body) in self.bodies.iter().enumerate() {
            let li = &data.li_m_i[b];
            let a_parent = match body.parent {
                Some(p) => li.act_inv_motion(&data.acc[p]),
                None => li.act_inv_motion(&base),
            };
            let a_prime = as6(&(a_parent + data.aba_c[b]));
            let nv = body.joint_model.nv();
            let rhs = data.aba_small_u[b] - data.aba_u[b].transpose() * a_prime;
            let qdd = data.aba_d_inv[b] * rhs;
            let mut acc = a_parent + data.aba_c[b];
            for k in 0..nv {
                let i = body.idx_v + k;
                data.qdd[i] = qdd[k];
                acc += data.s_local[i] * qdd[k];
            }
            data.acc[b] = acc;
        }
        Ok(())
    }

    /// Factorises the mass matrix currently in `data` (from
    /// [`Model::mass_matrix`] or [`Model::mass_matrix_and_bias`]).
    pub fn factorize(&self, data: &mut Data) -> Result<()> {
        self.check_data(data)?;
        ltl_factor(&mut data.factor, &data.mass_matrix, &self.ancestors).map_err(|index| {
            DynamicsError::Degenerate {
                joint: self
                    .skeleton()
                    .joint(self.joint_of_velocity(index))
                    .name
                    .clone(),
                index,
            }
        })
    }

    /// Solves `M x = b` in place with the factor of the last
    /// [`Model::factorize`] or [`Model::forward_dynamics`].
    pub fn solve_mass(&self, data: &Data, b: &mut DVector<f64>) -> Result<()> {
        self.check_data(data)?;
        self.check_len("b", b.as_slice())?;
        ltl_solve(&data.factor, &self.ancestors, b);
        Ok(())
    }

    fn check_frame(&self, joint: usize) -> Result<()> {
        if joint >= self.frames.len() {
            return Err(DynamicsError::UnknownJoint {
                index: joint,
                len: self.frames.len(),
            });
        }
        Ok(())
    }

    fn check_jacobian_out(&self, out: &DMatrix<f64>) -> Result<()> {
        if out.nrows() != 3 || out.ncols() != self.nv() {
            return Err(DynamicsError::Dimension {
                argument: "jacobian (3 × nv)",
                expected: 3 * self.nv(),
                got: out.nrows() * out.ncols(),
            });
        }
        Ok(())
    }

    /// Forward kinematics of every body at `q` into `data`, for the `*_at`
    /// queries below (one kinematics pass for many Jacobians). Every other
    /// call that takes `q` also leaves its kinematics in `data`.
    pub fn forward_kinematics(&self, data: &mut Data, q: &[f64]) -> Result<()> {
        self.check_args(data, &[("q", q)])?;
        self.kinematics(data, q);
        Ok(())
    }

    /// World pose of skeleton joint `joint`'s frame at `q` (equal to
    /// [`skeleton::Skeleton::forward_kinematics`]'s).
    pub fn frame_pose(&self, data: &mut Data, q: &[f64], joint: usize) -> Result<Se3> {
        self.forward_kinematics(data, q)?;
        self.frame_pose_at(data, joint)
    }

    /// As [`Model::frame_pose`] at the configuration of the last call that
    /// took one ([`Model::forward_kinematics`]).
    pub fn frame_pose_at(&self, data: &Data, joint: usize) -> Result<Se3> {
        self.check_data(data)?;
        self.check_frame(joint)?;
        let frame = &self.frames[joint];
        Ok(match frame.body {
            Some(b) => data.o_m_i[b].compose(&frame.in_body),
            None => frame.in_body,
        })
    }

    /// The Jacobian `J_x` (3 × nv) of the world position of `point` (in
    /// joint `joint`'s frame): `ẋ = J_x v` (SPARSE Eq. 3's marker Jacobian).
    pub fn point_jacobian(
        &self,
        data: &mut Data,
        q: &[f64],
        joint: usize,
        point: &Vector3<f64>,
        out: &mut DMatrix<f64>,
    ) -> Result<()> {
        self.forward_kinematics(data, q)?;
        self.point_jacobian_at(data, joint, point, out)
    }

    /// As [`Model::point_jacobian`] at the configuration of the last call
    /// that took one ([`Model::forward_kinematics`]).
    pub fn point_jacobian_at(
        &self,
        data: &Data,
        joint: usize,
        point: &Vector3<f64>,
        out: &mut DMatrix<f64>,
    ) -> Result<()> {
        self.check_jacobian_out(out)?;
        let x = self.frame_pose_at(data, joint)?.transform_point(point);
        out.fill(0.0);
        self.for_each_ancestor_dof(joint, |i| {
            let s = &data.s_world[i];
            out.set_column(i, &s.point_velocity(&x));
        });
        Ok(())
    }

    /// The Jacobian `J_θ` (3 × nv) of joint `joint`'s world orientation:
    /// `ω_world = J_θ v`, the world angular velocity of its frame (SPARSE
    /// Eq. 2's IMU Jacobian; the log-map residual `r = log(R R_targetᵀ)`
    /// changes at `J_l(r)⁻¹ ω`, EXPMAP §4.1).
    pub fn orientation_jacobian(
        &self,
        data: &mut Data,
        q: &[f64],
        joint: usize,
        out: &mut DMatrix<f64>,
    ) -> Result<()> {
        self.forward_kinematics(data, q)?;
        self.orientation_jacobian_at(data, joint, out)
    }

    /// As [`Model::orientation_jacobian`] at the configuration of the last
    /// call that took one ([`Model::forward_kinematics`]).
    pub fn orientation_jacobian_at(
        &self,
        data: &Data,
        joint: usize,
        out: &mut DMatrix<f64>,
    ) -> Result<()> {
        self.check_data(data)?;
        self.check_frame(joint)?;
        self.check_jacobian_out(out)?;
        out.fill(0.0);
        self.for_each_ancestor_dof(joint, |i| out.set_column(i, &data.s_world[i].w));
        Ok(())
    }

    /// The orientation residual of joint `joint` against a target,
    /// `r = log(R R_targetᵀ)` (world frame, `|r| ≤ π`), and its Jacobian
    /// `∂r/∂v = J_l(r)⁻¹ J_θ` into `out` (3 × nv), the exact derivative of the
    /// log map under a left perturbation (EXPMAP §4.1; SPARSE Eq. 2's IMU
    /// constraint). Uses the kinematics of the last call that took `q`.
    pub fn orientation_log_jacobian_at(
        &self,
        data: &Data,
        joint: usize,
        target: &nalgebra::UnitQuaternion<f64>,
        out: &mut DMatrix<f64>,
    ) -> Result<Vector3<f64>> {
        if !target.coords.iter().all(|c| c.is_finite()) {
            return Err(DynamicsError::InvalidOption {
                name: "target orientation",
                requirement: "finite",
                value: f64::NAN,
            });
        }
        self.orientation_jacobian_at(data, joint, out)?;
        let pose = self.frame_pose_at(data, joint)?;
        let r_now = nalgebra::UnitQuaternion::from_matrix(&pose.r);
        let r = rotation::log(&(r_now * target.inverse()));
        for mut col in out.column_iter_mut() {
            let w = Vector3::new(col[0], col[1], col[2]);
            col.copy_from(&rotation::vdot_from_omega(&r, &w));
        }
        Ok(r)
    }

    fn for_each_ancestor_dof(&self, joint: usize, mut f: impl FnMut(usize)) {
        if let Some(b) = self.frames[joint].body {
            let body = &self.bodies[b];
            let mut i = Some(body.idx_v + body.joint_model.nv() - 1);
            while let Some(ii) = i {
                f(ii);
                i = self.dof_parent[ii];
            }
        }
    }

    /// `q_out = q ⊕ v dt` on the configuration manifold: hinge, prismatic
    /// and swing parameters move by `v dt`; balls by `R ← R exp(ω dt)`; free
    /// joints by the SE(3) exponential `M ← M exp((ν, ω) dt)` (as
    /// `pinocchio.integrate`). Rotation parameters are then the ones nearest
    /// `q` (EXPMAP §4.2).
    pub fn integrate(&self, q: &[f64], v: &[f64], dt: f64, q_out: &mut [f64]) -> Result<()> {
        self.check_vectors(&[("q", q), ("v", v)])?;
        self.check_len("q_out", q_out)?;
        if !dt.is_finite() {
            return Err(DynamicsError::InvalidOption {
                name: "dt",
                requirement: "finite",
                value: dt,
            });
        }
        q_out.copy_from_slice(q);
        let skeleton = self.skeleton();
        for body in &self.bodies {
            let kind = &skeleton.joint(body.joint).kind;
            let i = body.idx_v;
            match body.joint_model {
                JointModel::Revolute { .. } | JointModel::Prismatic { .. } => q_out[i] += v[i] * dt,
                JointModel::Swing { .. } => {
                    q_out[i] += v[i] * dt;
                    q_out[i + 1] += v[i + 1] * dt;
                }
                JointModel::Spherical => {
                    let p = &q[i..i + 3];
                    let r = kind.motion(p).rotation;
                    let w = Vector3::new(v[i], v[i + 1], v[i + 2]) * dt;
                    kind.set_rotation(&(r * rotation::exp(&w)), &mut q_out[i..i + 3]);
                }
                JointModel::FreeFlyer => {
                    let m = kind.motion(&q[i..i + 6]);
                    let nu = Vector3::new(v[i], v[i + 1], v[i + 2]) * dt;
                    let w = Vector3::new(v[i + 3], v[i + 4], v[i + 5]) * dt;
                    let x = m.translation.vector + m.rotation * left_jacobian_mul(&w, &nu);
                    q_out[i..i + 3].copy_from_slice(x.as_slice());
                    kind.set_rotation(&(m.rotation * rotation::exp(&w)), &mut q_out[i..i + 6]);
                }
            }
        }
        Ok(())
    }

    /// The block-diagonal map `E(q)` with `v = E(q) q̇` from parameter rates to
    /// generalised velocities (module docs of [`crate::model`]), into `out`
    /// (nv × nv).
    pub fn param_velocity_map(&self, q: &[f64], out: &mut DMatrix<f64>) -> Result<()> {
        self.check_vector("q", q)?;
        if out.nrows() != self.nv() || out.ncols() != self.nv() {
            return Err(DynamicsError::Dimension {
                argument: "out (nv × nv)",
                expected: self.nv() * self.nv(),
                got: out.nrows() * out.ncols(),
            });
        }
        out.fill(0.0);
        for body in &self.bodies {
            let i = body.idx_v;
            let (rot, w) = self.rotation_block(body.joint, q);
            match body.joint_model {
                JointModel::Revolute { .. } | JointModel::Prismatic { .. } => out[(i, i)] = 1.0,
                JointModel::Swing { .. } => {
                    out[(i, i)] = 1.0;
                    out[(i + 1, i + 1)] = 1.0;
                }
                JointModel::Spherical => {
                    out.fixed_view_mut::<3, 3>(i, i)
                        .copy_from(&(rot.transpose() * w));
                }
                JointModel::FreeFlyer => {
                    out.fixed_view_mut::<3, 3>(i, i).copy_from(&rot.transpose());
                    out.fixed_view_mut::<3, 3>(i + 3, i + 3)
                        .copy_from(&(rot.transpose() * w));
                }
            }
        }
        Ok(())
    }

    /// `(R, W)` of a ball or free joint: its rotation and the matrix of its
    /// parameters' spatial angular velocities.
    fn rotation_block(&self, joint: usize, q: &[f64]) -> (Matrix3<f64>, Matrix3<f64>) {
        let kind = &self.skeleton().joint(joint).kind;
        let range = self.skeleton().param_range(joint);
        let p = &q[range];
        let (rot_params, ball) = match kind {
            skeleton::JointKind::Ball(b) => (p, b),
            skeleton::JointKind::Free { rotation, .. } => (&p[3..6], rotation),
            _ => return (Matrix3::identity(), Matrix3::identity()),
        };
        let r = ball.rotation(rot_params).to_rotation_matrix().into_inner();
        let cols = ball.angular_velocities(rot_params);
        (r, Matrix3::from_columns(&cols))
    }

    /// Generalised velocity from parameter rates: `v = E(q) q̇`.
    pub fn velocity_from_param_rates(&self, q: &[f64], qdot: &[f64], v: &mut [f64]) -> Result<()> {
        self.check_vectors(&[("q", q), ("qdot", qdot)])?;
        self.check_len("out", v)?;
        v.copy_from_slice(qdot);
        for body in &self.bodies {
            let i = body.idx_v;
            let (rot, w) = self.rotation_block(body.joint, q);
            let rt = rot.transpose();
            let seg = |k: usize| Vector3::new(qdot[k], qdot[k + 1], qdot[k + 2]);
            match body.joint_model {
                JointModel::Spherical => {
                    v[i..i + 3].copy_from_slice((rt * w * seg(i)).as_slice());
                }
                JointModel::FreeFlyer => {
                    v[i..i + 3].copy_from_slice((rt * seg(i)).as_slice());
                    v[i + 3..i + 6].copy_from_slice((rt * w * seg(i + 3)).as_slice());
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Parameter rates from a generalised velocity: `q̇ = E(q)⁻¹ v`. Fails
    /// where the parameterisation is singular (Euler gimbal lock, the exp
    /// map's 2π shell).
    pub fn param_rates_from_velocity(&self, q: &[f64], v: &[f64], qdot: &mut [f64]) -> Result<()> {
        self.check_vectors(&[("q", q), ("v", v)])?;
        self.check_len("out", qdot)?;
        qdot.copy_from_slice(v);
        for body in &self.bodies {
            let i = body.idx_v;
            let (rot, w) = self.rotation_block(body.joint, q);
            let seg = |k: usize| Vector3::new(v[k], v[k + 1], v[k + 2]);
            let singular = || DynamicsError::SingularParameterisation {
                joint: self.skeleton().joint(body.joint).name.clone(),
            };
            match body.joint_model {
                JointModel::Spherical => {
                    let x = w.lu().solve(&(rot * seg(i))).ok_or_else(singular)?;
                    qdot[i..i + 3].copy_from_slice(x.as_slice());
                }
                JointModel::FreeFlyer => {
                    qdot[i..i + 3].copy_from_slice((rot * seg(i)).as_slice());
                    let x = w.lu().solve(&(rot * seg(i + 3))).ok_or_else(singular)?;
                    qdot[i + 3..i + 6].copy_from_slice(x.as_slice());
                }
                _ => {}
            }
        }
        if qdot.iter().any(|x| !x.is_finite()) {
            return Err(DynamicsError::SingularParameterisation {
                joint: self.skeleton().joint(0).name.clone(),
            });
        }
        Ok(())
    }

    /// The vector `argument` has nv entries (an output, or an input before
    /// [`Model::check_vector`] looks at its values).
    fn check_len(&self, argument: &'static str, x: &[f64]) -> Result<()> {
        if x.len() != self.nv() {
            return Err(DynamicsError::Dimension {
                argument,
                expected: self.nv(),
                got: x.len(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(d/dt J_r(s)) ṡ` against a central difference of `J_r(s + t ṡ) ṡ`,
    /// on both sides of the series threshold and at zero.
    #[test]
    fn swing_bias_matches_finite_differences() {
        let sdot = Vector3::new(0.7, -0.4, 1.1);
        for s in [
            Vector3::new(0.0, 0.0, 0.0),
            Vector3::new(1e-3, -2e-3, 5e-4),
            Vector3::new(0.1, 0.12, -0.05),
            Vector3::new(0.2, -0.1, 0.1),
            Vector3::new(0.9, 1.3, -0.4),
            Vector3::new(-2.0, 1.0, 1.5),
        ] {
            let h = 1e-5;
            let fd = (right_jacobian_mul(&(s + sdot * h), &sdot)
                - right_jacobian_mul(&(s - sdot * h), &sdot))
                / (2.0 * h);
            let exact = right_jacobian_rate_mul(&s, &sdot);
            assert!((fd - exact).norm() < 1e-8, "s = {s:?}: {fd:?} vs {exact:?}");
        }
    }

    /// The series and closed forms agree where they meet (θ = 0.25).
    #[test]
    fn so3_coefficients_are_continuous_at_the_series_threshold() {
        let below = so3_coefficients(0.25 - 1e-12);
        let above = so3_coefficients(0.25 + 1e-12);
        for (a, b) in [
            (below.0, above.0),
            (below.1, above.1),
            (below.2, above.2),
            (below.3, above.3),
        ] {
            assert!((a - b).abs() < 1e-13 * a.abs().max(1.0), "{a} vs {b}");
        }
    }

    /// `J_r(φ)` is the body angular velocity of `exp(φ)`: compare with a
    /// difference of rotations, `Rᵀ dR/dt`.
    #[test]
    fn right_jacobian_is_the_body_velocity_of_exp() {
        let phi = Vector3::new(0.4, -1.2, 0.8);
        let dphi = Vector3::new(-0.3, 0.5, 0.9);
        let h = 1e-6;
        let r = rotation::exp(&phi).to_rotation_matrix().into_inner();
        let rp = rotation::exp(&(phi + dphi * h))
            .to_rotation_matrix()
            .into_inner();
        let rm = rotation::exp(&(phi - dphi * h))
            .to_rotation_matrix()
            .into_inner();
        let w = r.transpose() * (rp - rm) / (2.0 * h);
        let fd = Vector3::new(w[(2, 1)], w[(0, 2)], w[(1, 0)]);
        assert!((fd - right_jacobian_mul(&phi, &dphi)).norm() < 1e-8);
        let l = r * right_jacobian_mul(&phi, &dphi);
        assert!((l - left_jacobian_mul(&phi, &dphi)).norm() < 1e-12);
    }
}

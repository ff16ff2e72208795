//! Jacobians of the whitened constraint residual, and the Jacobian baselines
//! SMC-IK is compared against (SMC-IK §3, Eq. 5; timing in Fig. 4b).
//!
//! # The residual and its Jacobian
//!
//! The enabled constraints of a [`ConstraintSet`] stack into one whitened
//! residual `e(θ) = (L₁⁻¹ r₁, …, L_c⁻¹ r_c) ∈ ℝᵐ` of the pose `θ ∈ ℝⁿ`, whose
//! squared norm is the cost `−log p(z | θ)` (SMC-IK Eq. 14). Its Jacobian
//! `J = ∂e/∂θ` (m × n, column-major) is computed two ways ([`JacobianKind`]):
//!
//! - **finite differences**, as the paper timed them: forward
//!   `(e(θ + h e_k) − e(θ)) / h` or central `(e(θ + h e_k) − e(θ − h e_k)) / 2h`,
//!   re-running forward kinematics on the perturbed joint's subtree only;
//! - **analytically**, from the parameter velocities of
//!   [`JointKind::param_twists`](skeleton::JointKind::param_twists). Each
//!   parameter `k` of joint `j` moves every body at or below `j` rigidly with
//!   world angular velocity `ω = A ω_k` and, written about the world origin,
//!   linear velocity `ν = A v_k − ω × o_j` (`A` the rotation of
//!   `W_parent · placement`, `o_j` the joint's world origin), so a point `x`
//!   at or below `j` has `∂x/∂θ_k = ν + ω × x`.
//!
//! Analytic rows, per constraint (`x = W_i · point`, `R_i` the world rotation
//! of joint `i`; only parameters of `i` and its ancestors have non-zero
//! columns):
//!
//! | constraint     | row(s) of `∂r/∂θ_k`                                           |
//! |----------------|----------------------------------------------------------------|
//! | `Position`     | `ν + ω × x`                                                     |
//! | `Orientation`  | `J_l(r)⁻¹ Tᵀ ω`, `r = log(Tᵀ R_i)` (exact, see below)           |
//! | `CentreOfMass` | `(M_j ν + ω × S_j) / M` on the selected axes, `M_j = Σ m_b`, `S_j = Σ m_b x_b` over bodies at or below `j` |
//! | `Floor`        | `up · (ν + ω × x)` (`Above`: zero where the point is above)     |
//! | `Coupled`      | `+1` in column `b`, `−ratio` in column `a`                      |
//! | `LookAt`       | `g_a · (ω × a) − g_d · (ν + ω × o_i)`, see below                |
//! | `Smoothness`, `Custom` | central differences (no closed form is attempted)      |
//!
//! Each block is then whitened with the constraint's own `L⁻¹` (`1/σ`,
//! `diag(1/σᵢ)`, or forward substitution with the Cholesky factor of `Σ`),
//! exactly as [`Constraint::whitened_residual`] whitens the residual.
//!
//! **Orientation.** Perturbing the joint by a world rotation `exp(εω)` gives
//! `Tᵀ exp(εω) R_i = exp(ε Tᵀω) Tᵀ R_i`, and the derivative of the log map
//! under a left perturbation is the inverse left Jacobian of SO(3):
//! `∂ log(exp(δ) E)/∂δ = J_l(log E)⁻¹ = γ I + ((1 − γ)/θ²) r rᵀ − ½ [r]×`,
//! `γ = (θ/2) cot(θ/2)` (EXPMAP §4.1, [`rotation::vdot_from_omega`]). This is
//! exact — no small-residual approximation — and valid for `|r| < π`; at
//! `|r| = π` the shortest-arc log itself jumps.
//!
//! **Look-at.** With `a = R_i · axis` (unit), `d = target − o_i`, `d̂ = d/|d|`,
//! `c = a · d̂` and `s = |a × d̂| = sin φ`, the residual `φ = atan2(s, c)` has
//! `∂φ/∂a = g_a = −(d̂ − c a)/s` and `∂φ/∂d = g_d = −(a − c d̂)/(s |d|)`, with
//! `ȧ = ω × a` and `ḋ = −ȯ_i`. At `s = 0` (looking straight at or away from
//! the target) or `d = 0`, `φ` is not differentiable and the row is zero.
//!
//! # The baselines (SMC-IK §3, Eq. 5)
//!
//! Both minimise `|e(θ)|²`, step from `θ` to `clamp(θ + Δθ)` (the joint limits
//! of [`Skeleton::clamp_to_limits`], the same feasible set SMC-IK's prior
//! keeps, Eq. 12), and use either kind of Jacobian:
//!
//! - **Jacobian transpose**: `Δθ = −α Jᵀe` with Buss's step
//!   `α = ⟨e, JJᵀe⟩ / ⟨JJᵀe, JJᵀe⟩`, the exact minimiser of the linearised cost
//!   along `−Jᵀe`;
//! - **damped least squares** (singularity-robust inverse, SMC-IK Eq. 5 with
//!   the damped pseudo-inverse): `Δθ = −Jᵀ(JJᵀ + λ²I)⁻¹ e`, solved by Cholesky
//!   on the `m × m` system (or, equivalently, `−(JᵀJ + λ²I)⁻¹Jᵀe` on the
//!   `n × n` system when `n < m`). The step minimises `|e + JΔθ|² + λ²|Δθ|²`
//!   over the *whitened* residual, so `λ` is in whitened units: for a single
//!   target with isotropic σ it is `λ_raw / σ`, `λ_raw` (metres per radian)
//!   the classic damping of `|r + J_raw Δθ|² + λ_raw²|Δθ|²`. A `λ_raw` of
//!   about a quarter of the body's reach is a sound start (0.8 m on a 3 m
//!   chain, so `λ = 40` with σ = 2 cm: typically 5–15 iterations, at worst
//!   40, to 0.1 mm on the 30-joint chain from a random start); much smaller
//!   values take near-Gauss–Newton steps that thrash on far targets, much
//!   larger ones converge slowly. With `adaptive` set, `λ` follows the
//!   Levenberg–Marquardt rule: a step that lowers the cost is accepted and
//!   `λ ← max(λ/3, 10⁻³λ₀)`, one that does not is rejected and
//!   `λ ← min(2λ, 10⁶λ₀)`, which makes the cost monotone; start it large
//!   (about half the reach).
//!
//! # Scratch and threads
//!
//! [`JacobianScratch`] owns every buffer (world transforms, residuals, the
//! Jacobian, the normal equations); after its first call for a given skeleton
//! and constraint layout it does not allocate. It is a few kilobytes for a
//! 90-DOF chain, so a particle filter keeps one per rayon thread
//! (`map_init(|| JacobianScratch::new(skel, cs), …)`) and calls
//! [`JacobianScratch::dls_step`] on its particles.

use nalgebra::{DMatrix, Isometry3, Matrix3, Point3, Vector3};
use skeleton::Skeleton;

use crate::constraint::{Constraint, ConstraintKind, ConstraintSet, FloorMode};
use crate::error::{IkError, Result};

/// Which finite-difference formula to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Difference {
    /// `(e(θ + h e_k) − e(θ)) / h`: one evaluation per parameter, error `O(h)`.
    Forward,
    /// `(e(θ + h e_k) − e(θ − h e_k)) / 2h`: two per parameter, error `O(h²)`.
    Central,
}

/// How the Jacobian is computed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum JacobianKind {
    /// From joint parameter velocities (module docs), with central differences
    /// for `Smoothness` and `Custom` constraints.
    Analytic,
    /// Finite differences with absolute step `step` (rad or m).
    FiniteDifference { step: f64, scheme: Difference },
}

impl JacobianKind {
    /// A step near `ε^{1/3}` balances truncation and rounding for central
    /// differences of unit-scale functions.
    pub const CENTRAL_STEP: f64 = 1e-6;
    /// A step near `ε^{1/2}` for forward differences.
    pub const FORWARD_STEP: f64 = 1e-8;

    /// Central differences with step `step`.
    pub fn central(step: f64) -> Self {
        Self::FiniteDifference {
            step,
            scheme: Difference::Central,
        }
    }

    /// Forward differences with step `step`.
    pub fn forward(step: f64) -> Self {
        Self::FiniteDifference {
            step,
            scheme: Difference::Forward,
        }
    }

    fn validate(&self) -> Result<()> {
        match self {
            Self::FiniteDifference { step, .. } if !(step.is_finite() && *step > 0.0) => {
                Err(IkError::InvalidConfig {
                    field: "step",
                    message: format!(
                        "finite-difference step must be positive and finite, got {step}"
                    ),
                })
            }
            _ => Ok(()),
        }
    }
}

/// The update rule of a [`JacobianSolver`] (SMC-IK §3, Eq. 5).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Method {
    /// `Δθ = −α Jᵀe` with Buss's `α = ⟨e, JJᵀe⟩ / |JJᵀe|²`.
    Transpose,
    /// `Δθ = −Jᵀ(JJᵀ + λ²I)⁻¹e` with `λ = damping` (≥ 0; 0 is the plain
    /// pseudo-inverse and fails on a singular `JJᵀ`), adapted per step when
    /// `adaptive` (module docs).
    Dls { damping: f64, adaptive: bool },
}

impl Method {
    /// Damped least squares with a fixed `λ`.
    pub fn dls(damping: f64) -> Self {
        Self::Dls {
            damping,
            adaptive: false,
        }
    }

    fn validate(&self) -> Result<()> {
        match self {
            Self::Dls { damping, adaptive } => {
                let ok = damping.is_finite() && (*damping > 0.0 || *damping == 0.0 && !adaptive);
                if ok {
                    Ok(())
                } else {
                    Err(IkError::InvalidConfig {
                        field: "damping",
                        message: format!(
                            "λ must be finite and ≥ 0 (> 0 when adaptive), got {damping}{}",
                            if *adaptive { " (adaptive)" } else { "" }
                        ),
                    })
                }
            }
            Self::Transpose => Ok(()),
        }
    }
}

/// What [`JacobianSolver::solve`] did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolveReport {
    /// Iterations run.
    pub iterations: usize,
    /// Cost `|e|²` at the returned pose.
    pub cost: f64,
    /// Whether the cost reached the tolerance.
    pub converged: bool,
}

/// Buffers for Jacobians and Jacobian steps; see the module docs. Cheap to
/// keep one per thread; allocation-free after the first call for a given
/// skeleton size and residual dimension.
#[derive(Clone, Debug)]
pub struct JacobianScratch {
    world: Vec<Isometry3<f64>>,
    /// World transforms at the unperturbed pose, to restore after a
    /// finite-difference perturbation.
    world_base: Vec<Isometry3<f64>>,
    /// Joints whose transform a perturbation of the current joint changes.
    dirty: Vec<bool>,
    pose_work: Vec<f64>,
    /// The clamped trial pose of a joint-clamping pass.
    clamp_trial: Vec<f64>,
    residual: Vec<f64>,
    residual_plus: Vec<f64>,
    residual_minus: Vec<f64>,
    jacobian: DMatrix<f64>,
    /// Per parameter: world angular velocity `ω` and linear velocity `ν`
    /// about the world origin.
    twists: Vec<(Vector3<f64>, Vector3<f64>)>,
    local: [(Vector3<f64>, Vector3<f64>); 6],
    /// Per joint: mass `M_j` and first moment `S_j` of its subtree.
    subtree_mass: Vec<f64>,
    subtree_moment: Vec<Vector3<f64>>,
    gram: Vec<f64>,
    /// `JJᵀ + λ²I` (or `JᵀJ + λ²I`), then its Cholesky factor (nalgebra's,
    /// moved in and out so that a warm step does not allocate).
    factor: DMatrix<f64>,
    rhs: Vec<f64>,
    step: Vec<f64>,
    jg: Vec<f64>,
    cost: f64,
}

impl Default for JacobianScratch {
    fn default() -> Self {
        Self {
            world: Vec::new(),
            world_base: Vec::new(),
            dirty: Vec::new(),
            pose_work: Vec::new(),
            clamp_trial: Vec::new(),
            residual: Vec::new(),
            residual_plus: Vec::new(),
            residual_minus: Vec::new(),
            jacobian: DMatrix::zeros(0, 0),
            twists: Vec::new(),
            local: [(Vector3::zeros(), Vector3::zeros()); 6],
            subtree_mass: Vec::new(),
            subtree_moment: Vec::new(),
            gram: Vec::new(),
            factor: DMatrix::zeros(0, 0),
            rhs: Vec::new(),
            step: Vec::new(),
            jg: Vec::new(),
            cost: 0.0,
        }
    }
}

/// Forward kinematics of the joints marked in `dirty` only, from `pose`
/// (the same recursion as [`Skeleton::forward_kinematics_into`]).
fn forward_kinematics_dirty(
    skel: &Skeleton,
    pose: &[f64],
    dirty: &[bool],
    world: &mut [Isometry3<f64>],
) {
    for (j, joint) in skel.joints().iter().enumerate() {
        if !dirty[j] {
            continue;
        }
        let local = joint.placement() * joint.kind.motion(&pose[skel.param_range(j)]);
        world[j] = match joint.parent {
            Some(p) => world[p] * local,
            None => local,
        };
    }
}

/// Writes one constraint's rows of one column given the parameter's world
/// twist `(ω, ν)`.
type ColumnRows<'a> = dyn FnMut(&Vector3<f64>, &Vector3<f64>, &mut [f64]) + 'a;

/// Whether finite differences are the only way for this constraint.
fn needs_finite_differences(kind: &ConstraintKind) -> bool {
    matches!(
        kind,
        ConstraintKind::Smoothness { .. } | ConstraintKind::Custom { .. }
    )
}

/// Whether the parameters of joint `joint` can change `kind`'s residual
/// (a sparsity hint for the finite-difference fallback).
fn depends_on(kind: &ConstraintKind, joint: usize) -> bool {
    match kind {
        ConstraintKind::Smoothness { joints, .. } => joints.contains(&joint),
        _ => true,
    }
}

impl JacobianScratch {
    /// Buffers sized for `skel` and the enabled constraints of `constraints`,
    /// after validating the constraints against the skeleton.
    pub fn new(skel: &Skeleton, constraints: &ConstraintSet) -> Result<Self> {
        constraints.validate(skel)?;
        let mut s = Self::default();
        s.prepare(skel, constraints);
        Ok(s)
    }

    /// The Jacobian `∂e/∂θ` of the last [`Self::compute`] (residual_dim × dof).
    pub fn jacobian(&self) -> &DMatrix<f64> {
        &self.jacobian
    }

    /// The whitened residual `e` at the pose of the last [`Self::compute`].
    pub fn residual(&self) -> &[f64] {
        &self.residual
    }

    /// `|e|²` at the pose of the last [`Self::compute`].
    pub fn cost(&self) -> f64 {
        self.cost
    }

    /// World transforms at the pose of the last [`Self::compute`].
    pub fn world(&self) -> &[Isometry3<f64>] {
        &self.world
    }

    /// Sizes every buffer (allocates only when a size grows or the
    /// Jacobian's shape changes).
    fn prepare(&mut self, skel: &Skeleton, constraints: &ConstraintSet) {
        let (j, n, m) = (skel.len(), skel.dof(), constraints.residual_dim());
        let k = m.min(n);
        self.world.resize(j, Isometry3::identity());
        self.world_base.resize(j, Isometry3::identity());
        self.dirty.resize(j, false);
        self.subtree_mass.resize(j, 0.0);
        self.subtree_moment.resize(j, Vector3::zeros());
        self.pose_work.resize(n, 0.0);
        self.clamp_trial.resize(n, 0.0);
        self.twists.resize(n, (Vector3::zeros(), Vector3::zeros()));
        self.step.resize(n, 0.0);
        self.residual.resize(m, 0.0);
        self.residual_plus.resize(m, 0.0);
        self.residual_minus.resize(m, 0.0);
        self.jg.resize(m.max(n), 0.0);
        self.gram.resize(k * k, 0.0);
        if self.factor.shape() != (k, k) {
            self.factor = DMatrix::zeros(k, k);
        }
        self.rhs.resize(k.max(n), 0.0);
        if self.jacobian.shape() != (m, n) {
            self.jacobian = DMatrix::zeros(m, n);
        }
    }

    /// Forward kinematics into `self.world` and the whitened residual into
    /// `self.residual`; returns the cost. Errors on a non-finite residual,
    /// naming the constraint.
    fn evaluate(
        &mut self,
        skel: &Skeleton,
        constraints: &ConstraintSet,
        pose: &[f64],
    ) -> Result<f64> {
        skel.forward_kinematics_into(pose, &mut self.world);
        constraints.whitened_residual(skel, &self.world, pose, &mut self.residual);
        if let Some(bad) = self.residual.iter().position(|x| !x.is_finite()) {
            // Report an edited, non-finite target precisely; otherwise name the
            // constraint whose residual is not finite.
            constraints.validate(skel)?;
            let mut row = 0;
            for (index, c) in constraints.iter().enumerate().filter(|(_, c)| c.enabled) {
                if bad < row + c.dim() {
                    return Err(IkError::InvalidConstraint {
                        index,
                        kind: c.kind.name(),
                        message: "the residual is not finite at this pose".into(),
                    });
                }
                row += c.dim();
            }
        }
        Ok(self.residual.iter().map(|x| x * x).sum())
    }

    /// Computes, at `pose`, the world transforms, the whitened residual and
    /// its Jacobian (read them with [`Self::world`], [`Self::residual`],
    /// [`Self::jacobian`]). Errors: a pose of the wrong length or with a
    /// non-finite value, a bad finite-difference step, a non-finite residual.
    pub fn compute(
        &mut self,
        skel: &Skeleton,
        constraints: &ConstraintSet,
        pose: &[f64],
        kind: JacobianKind,
    ) -> Result<()> {
        skel.check_pose(pose)?;
        kind.validate()?;
        self.prepare(skel, constraints);
        self.cost = self.evaluate(skel, constraints, pose)?;
        match kind {
            JacobianKind::Analytic => self.analytic(skel, constraints, pose),
            JacobianKind::FiniteDifference { step, scheme } => {
                self.finite_differences(skel, constraints, pose, step, scheme, false);
                Ok(())
            }
        }
    }

    /// World twists `(ω, ν)` of every parameter (module docs).
    fn compute_twists(&mut self, skel: &Skeleton, pose: &[f64]) {
        for (j, joint) in skel.joints().iter().enumerate() {
            let range = skel.param_range(j);
            let dof = range.len();
            if dof == 0 {
                continue;
            }
            let frame = match joint.parent {
                Some(p) => self.world[p] * joint.placement(),
                None => joint.placement(),
            };
            let a = frame.rotation.to_rotation_matrix().into_inner();
            let o = self.world[j].translation.vector;
            joint
                .kind
                .param_twists(&pose[range.clone()], &mut self.local[..dof]);
            for (col, (omega, v)) in range.zip(&self.local[..dof]) {
                let w = a * omega;
                self.twists[col] = (w, a * v - w.cross(&o));
            }
        }
    }

    /// Mass `M_j` and first moment `S_j` of every subtree, with the weights
    /// [`Skeleton::centre_of_mass`] uses (unit weights at the joint origins
    /// when the skeleton has no mass). Returns the total weight.
    fn compute_subtree_moments(&mut self, skel: &Skeleton) -> f64 {
        let massless = !skel
            .joints()
            .iter()
            .any(|j| j.body.as_ref().is_some_and(|b| b.mass > 0.0));
        for (j, joint) in skel.joints().iter().enumerate() {
            let (m, x) = if massless {
                (1.0, self.world[j].translation.vector)
            } else {
                match &joint.body {
                    Some(b) if b.mass > 0.0 => (
                        b.mass,
                        (self.world[j] * Point3::from(b.capsule.centre())).coords,
                    ),
                    _ => (0.0, Vector3::zeros()),
                }
            };
            self.subtree_mass[j] = m;
            self.subtree_moment[j] = x * m;
        }
        for j in (1..skel.len()).rev() {
            if let Some(p) = skel.joint(j).parent {
                let (m, s) = (self.subtree_mass[j], self.subtree_moment[j]);
                self.subtree_mass[p] += m;
                self.subtree_moment[p] += s;
            }
        }
        self.subtree_mass[0]
    }

    /// The analytic Jacobian (module docs); `self.world` and `self.residual`
    /// hold the current pose's values.
    fn analytic(
        &mut self,
        skel: &Skeleton,
        constraints: &ConstraintSet,
        pose: &[f64],
    ) -> Result<()> {
        let m_total = self.residual.len();
        self.jacobian.fill(0.0);
        self.compute_twists(skel, pose);
        let has_com = constraints
            .iter()
            .any(|c| c.enabled && matches!(c.kind, ConstraintKind::CentreOfMass { .. }));
        let total_weight = if has_com {
            self.compute_subtree_moments(skel)
        } else {
            0.0
        };
        let mut any_fd = false;
        let mut row = 0;
        for c in constraints.iter().filter(|c| c.enabled) {
            let m = c.dim();
            let jac = self.jacobian.as_mut_slice();
            let twists = &self.twists;
            // Writes `f(ω, ν)` into this constraint's rows of every column of
            // joint `joint` and its ancestors.
            let mut along_chain = |joint: usize, f: &mut ColumnRows| {
                let mut j = Some(joint);
                while let Some(k) = j {
                    for col in skel.param_range(k) {
                        let (w, v) = &twists[col];
                        f(w, v, &mut jac[col * m_total + row..col * m_total + row + m]);
                    }
                    j = skel.joint(k).parent;
                }
            };
            match &c.kind {
                ConstraintKind::Position { joint, point, .. } => {
                    let x = (self.world[*joint] * Point3::from(*point)).coords;
                    along_chain(*joint, &mut |w, v, out| {
                        out.copy_from_slice((v + w.cross(&x)).as_slice())
                    });
                }
                ConstraintKind::Orientation { joint, target } => {
                    let e = target.inverse() * self.world[*joint].rotation;
                    let r = rotation::log(&e);
                    // J_l(r)⁻¹ Tᵀ, built column by column from EXPMAP §4.1.
                    let jl_inv = Matrix3::from_columns(&[
                        rotation::vdot_from_omega(&r, &Vector3::x()),
                        rotation::vdot_from_omega(&r, &Vector3::y()),
                        rotation::vdot_from_omega(&r, &Vector3::z()),
                    ]);
                    let map = jl_inv * target.inverse().to_rotation_matrix().into_inner();
                    along_chain(*joint, &mut |w, _, out| {
                        out.copy_from_slice((map * w).as_slice())
                    });
                }
                ConstraintKind::CentreOfMass { axes, .. } => {
                    let inv = 1.0 / total_weight;
                    for j in 0..skel.len() {
                        let (mj, sj) = (self.subtree_mass[j], self.subtree_moment[j]);
                        for col in skel.param_range(j) {
                            let (w, v) = &twists[col];
                            let d = (v * mj + w.cross(&sj)) * inv;
                            for a in 0..3 {
                                jac[col * m_total + row + a] = if axes[a] { d[a] } else { 0.0 };
                            }
                        }
                    }
                }
                ConstraintKind::Floor {
                    joint,
                    point,
                    up,
                    height,
                    mode,
                } => {
                    let x = (self.world[*joint] * Point3::from(*point)).coords;
                    let h = up.dot(&x) - height;
                    if *mode == FloorMode::On || h < 0.0 {
                        along_chain(*joint, &mut |w, v, out| out[0] = up.dot(&(v + w.cross(&x))));
                    }
                }
                ConstraintKind::Coupled {
                    param_a,
                    param_b,
                    ratio,
                } => {
                    jac[param_b * m_total + row] += 1.0;
                    jac[param_a * m_total + row] -= ratio;
                }
                ConstraintKind::LookAt {
                    joint,
                    axis,
                    target,
                } => {
                    let wi = &self.world[*joint];
                    let a = wi.rotation * axis.into_inner();
                    let o = wi.translation.vector;
                    let d = target.coords - o;
                    let dn = d.norm();
                    if dn > 0.0 {
                        let dh = d / dn;
                        let c = a.dot(&dh);
                        let s = a.cross(&dh).norm();
                        if s > 1e-12 {
                            let ga = -(dh - a * c) / s;
                            let gd = -(a - dh * c) / (s * dn);
                            along_chain(*joint, &mut |w, v, out| {
                                out[0] = ga.dot(&w.cross(&a)) - gd.dot(&(v + w.cross(&o)));
                            });
                        }
                    }
                }
                ConstraintKind::Smoothness { .. } | ConstraintKind::Custom { .. } => any_fd = true,
            }
            if !needs_finite_differences(&c.kind) {
                self.whiten_block(c, row, m);
            }
            row += m;
        }
        if any_fd {
            self.finite_differences(
                skel,
                constraints,
                pose,
                JacobianKind::CENTRAL_STEP,
                Difference::Central,
                true,
            );
        }
        Ok(())
    }

    /// Rows `row..row + m` of every column ← `L⁻¹ ·` themselves, `L` the
    /// constraint's noise factor (the same whitening as the residual's).
    fn whiten_block(&mut self, c: &Constraint, row: usize, m: usize) {
        let m_total = self.residual.len();
        for col in self
            .jacobian
            .as_mut_slice()
            .chunks_exact_mut(m_total.max(1))
        {
            c.whiten(&mut col[row..row + m]);
        }
    }

    /// Finite-difference columns into `self.jacobian`: of every row
    /// (`fallback == false`), or only of the `Smoothness` and `Custom` rows
    /// (`fallback == true`, central differences). Each perturbation re-runs
    /// forward kinematics on the perturbed joint's subtree only (and not at
    /// all when only pose-based constraints need it).
    fn finite_differences(
        &mut self,
        skel: &Skeleton,
        constraints: &ConstraintSet,
        pose: &[f64],
        h: f64,
        scheme: Difference,
        fallback: bool,
    ) {
        let m_total = self.residual.len();
        self.pose_work.copy_from_slice(pose);
        self.world_base.copy_from_slice(&self.world);
        let selected =
            |c: &Constraint| c.enabled && (!fallback || needs_finite_differences(&c.kind));
        for j in 0..skel.len() {
            let range = skel.param_range(j);
            if range.is_empty()
                || !constraints
                    .iter()
                    .any(|c| selected(c) && depends_on(&c.kind, j))
            {
                continue;
            }
            let needs_world = constraints.iter().any(|c| {
                selected(c)
                    && !matches!(
                        c.kind,
                        ConstraintKind::Smoothness { .. } | ConstraintKind::Coupled { .. }
                    )
            });
            if needs_world {
                for k in 0..skel.len() {
                    self.dirty[k] =
                        k == j || k > j && skel.joint(k).parent.is_some_and(|p| self.dirty[p]);
                }
            }
            for col in range {
                let x0 = self.pose_work[col];
                let eval = |this: &mut Self, x: f64, plus: bool| {
                    this.pose_work[col] = x;
                    if needs_world {
                        forward_kinematics_dirty(
                            skel,
                            &this.pose_work,
                            &this.dirty,
                            &mut this.world,
                        );
                    }
                    let out = if plus {
                        &mut this.residual_plus
                    } else {
                        &mut this.residual_minus
                    };
                    let mut row = 0;
                    for c in constraints.iter().filter(|c| c.enabled) {
                        let m = c.dim();
                        if selected(c) {
                            c.whitened_residual(
                                skel,
                                &this.world,
                                &this.pose_work,
                                &mut out[row..row + m],
                            );
                        }
                        row += m;
                    }
                };
                eval(self, x0 + h, true);
                let inv = match scheme {
                    Difference::Central => {
                        eval(self, x0 - h, false);
                        0.5 / h
                    }
                    Difference::Forward => {
                        self.residual_minus.copy_from_slice(&self.residual);
                        1.0 / h
                    }
                };
                self.pose_work[col] = x0;
                if needs_world {
                    for k in 0..skel.len() {
                        if self.dirty[k] {
                            self.world[k] = self.world_base[k];
                        }
                    }
                }
                let column = &mut self.jacobian.as_mut_slice()[col * m_total..(col + 1) * m_total];
                let mut row = 0;
                for c in constraints.iter().filter(|c| c.enabled) {
                    let m = c.dim();
                    if selected(c) {
                        let rows = row..row + m;
                        let (plus, minus) = (
                            &self.residual_plus[rows.clone()],
                            &self.residual_minus[rows.clone()],
                        );
                        for ((out, p), q) in column[rows].iter_mut().zip(plus).zip(minus) {
                            *out = (p - q) * inv;
                        }
                    }
                    row += m;
                }
            }
        }
    }

    /// `self.step ← Δθ` for the current Jacobian and residual.
    fn solve_step(&mut self, method: Method, damping: f64) -> Result<()> {
        let (m, n) = self.jacobian.shape();
        let jac = self.jacobian.as_slice();
        let e = &self.residual;
        match method {
            Method::Transpose => {
                // g = Jᵀe, Jg; α = |g|²/|Jg|² (= ⟨e, JJᵀe⟩ / |JJᵀe|²).
                let g = &mut self.step[..n];
                for (c, gc) in g.iter_mut().enumerate() {
                    *gc = jac[c * m..(c + 1) * m]
                        .iter()
                        .zip(e)
                        .map(|(a, b)| a * b)
                        .sum();
                }
                let jg = &mut self.jg[..m];
                jg.fill(0.0);
                for (c, gc) in g.iter().enumerate() {
                    for (y, a) in jg.iter_mut().zip(&jac[c * m..(c + 1) * m]) {
                        *y += a * gc;
                    }
                }
                let num: f64 = g.iter().map(|x| x * x).sum();
                let den: f64 = jg.iter().map(|x| x * x).sum();
                let alpha = if den > 0.0 { num / den } else { 0.0 };
                g.iter_mut().for_each(|x| *x *= -alpha);
            }
            Method::Dls { .. } => {
                let lambda2 = damping * damping;
                let k = m.min(n);
                // nalgebra reads the lower triangle only.
                let mut f = std::mem::take(&mut self.factor);
                for i in 0..k {
                    for j in 0..=i {
                        f[(i, j)] = self.gram[i * k + j];
                    }
                    f[(i, i)] += lambda2;
                }
                let Some(chol) = nalgebra::Cholesky::new(f) else {
                    return Err(IkError::InvalidConfig {
                        field: "damping",
                        message: format!(
                            "JJᵀ + λ²I is singular with λ = {damping}: use a positive damping"
                        ),
                    });
                };
                if m <= n {
                    // y = (JJᵀ + λ²I)⁻¹ e, Δθ = −Jᵀy.
                    let y = &mut self.rhs[..m];
                    y.copy_from_slice(e);
                    chol.solve_mut(&mut nalgebra::DVectorViewMut::from_slice(y, m));
                    for (c, s) in self.step[..n].iter_mut().enumerate() {
                        *s = -jac[c * m..(c + 1) * m]
                            .iter()
                            .zip(y.iter())
                            .map(|(a, b)| a * b)
                            .sum::<f64>();
                    }
                } else {
                    // Δθ = −(JᵀJ + λ²I)⁻¹ Jᵀe.
                    let b = &mut self.step[..n];
                    for (c, bc) in b.iter_mut().enumerate() {
                        *bc = -jac[c * m..(c + 1) * m]
                            .iter()
                            .zip(e)
                            .map(|(a, b)| a * b)
                            .sum::<f64>();
                    }
                    chol.solve_mut(&mut nalgebra::DVectorViewMut::from_slice(b, n));
                }
                self.factor = chol.unpack_dirty();
            }
        }
        if self.step.iter().all(|x| x.is_finite()) {
            Ok(())
        } else {
            Err(IkError::InvalidConfig {
                field: "damping",
                message: "the step is not finite (ill-conditioned Jacobian): increase the damping"
                    .into(),
            })
        }
    }

    /// `gram ← JJᵀ` (m ≤ n) or `JᵀJ` (lower triangles, row-major).
    fn compute_gram(&mut self) {
        let (m, n) = self.jacobian.shape();
        let jac = self.jacobian.as_slice();
        let k = m.min(n);
        let g = &mut self.gram[..k * k];
        g.fill(0.0);
        if m <= n {
            for col in jac.chunks_exact(m.max(1)).take(n) {
                for a in 0..m {
                    let ja = col[a];
                    for b in 0..=a {
                        g[a * m + b] += ja * col[b];
                    }
                }
            }
        } else {
            for a in 0..n {
                for b in 0..=a {
                    g[a * n + b] = jac[a * m..(a + 1) * m]
                        .iter()
                        .zip(&jac[b * m..(b + 1) * m])
                        .map(|(x, y)| x * y)
                        .sum();
                }
            }
        }
    }

    /// Applies one damped-least-squares step `θ ← clamp(θ − Jᵀ(JJᵀ + λ²I)⁻¹e)`
    /// with the analytic Jacobian and `λ = damping` to `pose`, in place (SMC-IK
    /// Eq. 5; module docs). Meant for optimisation moves inside a particle
    /// filter: keep one scratch per thread. No allocation after warm-up.
    ///
    /// Errors (the pose is then unchanged): a pose of the wrong length or with
    /// a non-finite value, a damping that is negative or not finite, a
    /// non-finite residual.
    pub fn dls_step(
        &mut self,
        skel: &Skeleton,
        constraints: &ConstraintSet,
        pose: &mut [f64],
        damping: f64,
    ) -> Result<()> {
        let method = Method::dls(damping);
        method.validate()?;
        self.compute(skel, constraints, pose, JacobianKind::Analytic)?;
        self.apply_step(skel, pose, method, damping)
    }

    /// Solves for the step of `method` at the pose of the last `compute` and
    /// applies it to `pose`, clamping to the joint limits.
    fn apply_step(
        &mut self,
        skel: &Skeleton,
        pose: &mut [f64],
        method: Method,
        damping: f64,
    ) -> Result<()> {
        if self.residual.is_empty() || pose.is_empty() {
            return Ok(());
        }
        // Joint clamping (Baerlocher & Boulic's active set for joint limits):
        // a parameter that the step would push past its limit is pinned there
        // and its column removed, then the step is solved again for the
        // remaining parameters, so the blocked joints' share of the task goes
        // to the free ones instead of being lost to the projection. At most
        // `CLAMP_PASSES` re-solves.
        const CLAMP_PASSES: usize = 3;
        let m = self.residual.len();
        for pass in 0..=CLAMP_PASSES {
            if matches!(method, Method::Dls { .. }) {
                self.compute_gram();
            }
            self.solve_step(method, damping)?;
            let trial = &mut self.clamp_trial;
            for ((t, x), d) in trial.iter_mut().zip(pose.iter()).zip(&self.step) {
                *t = x + d;
            }
            skel.clamp_to_limits(trial);
            let mut clamped = false;
            if pass < CLAMP_PASSES {
                let jac = self.jacobian.as_mut_slice();
                for (k, ((t, x), d)) in trial.iter().zip(pose.iter()).zip(&self.step).enumerate() {
                    let column = &mut jac[k * m..(k + 1) * m];
                    if (t - (x + d)).abs() > 1e-12 && column.iter().any(|v| *v != 0.0) {
                        column.fill(0.0);
                        clamped = true;
                    }
                }
            }
            if !clamped {
                break;
            }
        }
        pose.copy_from_slice(&self.clamp_trial);
        Ok(())
    }
}

/// Iterations without a 0.1% cost decrease that count as stagnation.
pub(crate) const STAGNATION_WINDOW: usize = 10;

/// A restart pose: every joint with limits drawn uniformly within them
/// ([`crate::sample_within_limits`]), unlimited angles uniformly in ±π and
/// unlimited translations in ±1 (then projected onto any cone limit); a
/// floating base keeps its place, so restarts re-pose the limbs.
fn random_pose_within_limits(skel: &Skeleton, pose: &mut [f64], rng: &mut smc::ParticleRng) {
    use rand::RngExt;
    use skeleton::JointKind;
    use std::f64::consts::PI;
    for (j, joint) in skel.joints().iter().enumerate() {
        let p = &mut pose[skel.param_range(j)];
        if matches!(joint.kind, JointKind::Free { .. }) {
            continue;
        }
        if crate::sample_within_limits(&joint.kind, rng, p).is_err() {
            let half = if matches!(joint.kind, JointKind::Prismatic { .. }) {
                1.0
            } else {
                PI
            };
            for x in p.iter_mut() {
                *x = rng.random_range(-half..=half);
            }
        }
    }
    skel.clamp_to_limits(pose);
}

/// The Jacobian-transpose and damped-least-squares baselines (SMC-IK §3,
/// Eq. 5), each with an analytic or finite-difference Jacobian, respecting
/// the joint limits after every step.
#[derive(Clone, Debug)]
pub struct JacobianSolver {
    pub method: Method,
    pub jacobian: JacobianKind,
    scratch: JacobianScratch,
    /// Current `λ` of adaptive DLS (NaN before the first step).
    lambda: f64,
    /// Random restarts on stagnation (see [`JacobianSolver::with_restarts`]).
    restart_seed: Option<u64>,
    best_pose: Vec<f64>,
}

impl JacobianSolver {
    pub fn new(method: Method, jacobian: JacobianKind) -> Self {
        Self {
            method,
            jacobian,
            scratch: JacobianScratch::default(),
            lambda: f64::NAN,
            restart_seed: None,
            best_pose: Vec::new(),
        }
    }

    /// Enables random restarts in [`Self::solve`] (as TRAC-IK does for KDL's
    /// solver): when the cost has not dropped by 0.1% over
    /// [`STAGNATION_WINDOW`] iterations — a local minimum, typically made by
    /// joint limits — the pose is redrawn uniformly within the limits (±π for
    /// unlimited angles, ±1 m for unlimited translations) from a generator
    /// seeded with `seed`, and the best pose seen is returned.
    pub fn with_restarts(mut self, seed: u64) -> Self {
        self.restart_seed = Some(seed);
        self
    }

    /// The buffers of the last iteration (its Jacobian and residual).
    pub fn scratch(&self) -> &JacobianScratch {
        &self.scratch
    }

    /// The damping the next DLS iteration uses (adaptive DLS changes it).
    pub fn current_damping(&self) -> Option<f64> {
        match self.method {
            Method::Transpose => None,
            Method::Dls { damping, adaptive } => Some(if adaptive && self.lambda.is_finite() {
                self.lambda
            } else {
                damping
            }),
        }
    }

    /// Restarts adaptive damping from the configured `λ₀`.
    pub fn reset(&mut self) {
        self.lambda = f64::NAN;
    }

    /// One iteration at `pose`, in place: Jacobian, step, clamp to the joint
    /// limits. Returns the cost `|e|²` after the iteration (adaptive DLS: the
    /// cost before, when it rejects the step). No allocation after warm-up.
    /// Errors (bad pose or settings, non-finite residual) leave the pose
    /// unchanged, except a residual that turns non-finite after a fixed step.
    pub fn iterate(
        &mut self,
        skel: &Skeleton,
        constraints: &ConstraintSet,
        pose: &mut [f64],
    ) -> Result<f64> {
        self.method.validate()?;
        let s = &mut self.scratch;
        s.compute(skel, constraints, pose, self.jacobian)?;
        let cost_before = s.cost;
        match self.method {
            Method::Transpose
            | Method::Dls {
                adaptive: false, ..
            } => {
                let damping = match self.method {
                    Method::Dls { damping, .. } => damping,
                    Method::Transpose => 0.0,
                };
                s.apply_step(skel, pose, self.method, damping)?;
                s.evaluate(skel, constraints, pose)
            }
            Method::Dls {
                damping,
                adaptive: true,
            } => {
                if !self.lambda.is_finite() {
                    self.lambda = damping;
                }
                // Levenberg–Marquardt: try the step on a copy, keep it only if
                // it lowers the cost.
                let mut trial = std::mem::take(&mut s.pose_work);
                trial.copy_from_slice(pose);
                let applied = s.apply_step(skel, &mut trial, self.method, self.lambda);
                let result = applied.and_then(|()| s.evaluate(skel, constraints, &trial));
                let out = match result {
                    Ok(cost) if cost < cost_before => {
                        pose.copy_from_slice(&trial);
                        self.lambda = (self.lambda / 3.0).max(1e-3 * damping);
                        Ok(cost)
                    }
                    Ok(_) => {
                        self.lambda = (self.lambda * 2.0).min(1e6 * damping);
                        Ok(cost_before)
                    }
                    Err(e) => Err(e),
                };
                s.pose_work = trial;
                out
            }
        }
    }

    /// Iterates until the cost `|e|²` is at most `tolerance` or
    /// `max_iterations` have run. Validates the constraints once at the start
    /// and restarts adaptive damping.
    pub fn solve(
        &mut self,
        skel: &Skeleton,
        constraints: &ConstraintSet,
        pose: &mut [f64],
        max_iterations: usize,
        tolerance: f64,
    ) -> Result<SolveReport> {
        if tolerance.is_nan() || tolerance < 0.0 {
            return Err(IkError::InvalidConfig {
                field: "tolerance",
                message: format!("must be ≥ 0, got {tolerance}"),
            });
        }
        constraints.validate(skel)?;
        skel.check_pose(pose)?;
        self.reset();
        self.scratch.prepare(skel, constraints);
        let mut cost = self.scratch.evaluate(skel, constraints, pose)?;
        let mut iterations = 0;
        let mut rng = self.restart_seed.map(|seed| {
            use rand::SeedableRng;
            smc::ParticleRng::seed_from_u64(seed)
        });
        self.best_pose.clear();
        self.best_pose.extend_from_slice(pose);
        let mut best_cost = cost;
        let mut window_start_cost = cost;
        let mut since_restart = 0;
        while cost > tolerance && iterations < max_iterations {
            cost = self.iterate(skel, constraints, pose)?;
            iterations += 1;
            since_restart += 1;
            if cost < best_cost {
                best_cost = cost;
                self.best_pose.copy_from_slice(pose);
            }
            if let Some(rng) = rng.as_mut()
                && since_restart % STAGNATION_WINDOW == 0
            {
                if cost > 0.999 * window_start_cost && cost > tolerance {
                    random_pose_within_limits(skel, pose, rng);
                    self.lambda = f64::NAN;
                    cost = self.scratch.evaluate(skel, constraints, pose)?;
                    since_restart = 0;
                }
                window_start_cost = cost;
            }
        }
        if best_cost < cost {
            pose.copy_from_slice(&self.best_pose);
            cost = best_cost;
        }
        Ok(SolveReport {
            iterations,
            cost,
            converged: cost <= tolerance,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_settings_are_errors() {
        assert!(JacobianKind::central(0.0).validate().is_err());
        assert!(JacobianKind::forward(f64::NAN).validate().is_err());
        assert!(Method::dls(-1.0).validate().is_err());
        assert!(
            Method::Dls {
                damping: 0.0,
                adaptive: true
            }
            .validate()
            .is_err()
        );
        assert!(Method::dls(0.0).validate().is_ok());
    }
}

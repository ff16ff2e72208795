//! The constraint library and the likelihood it defines (SMC-IK Eq. 13–14).
//!
//! Each constraint `i` is a residual `rᵢ(x) ∈ ℝ^{mᵢ}` of the pose `x`, zero
//! when the constraint holds, with its own noise covariance `Σᵢ`. Its cost is
//! the Mahalanobis form the paper writes `|rᵢ|_Σᵢ = rᵢᵀ Σᵢ⁻¹ rᵢ`, and the
//! likelihood is the product over constraints (SMC-IK Eq. 14)
//!
//! ```text
//! p(z | x) ∝ Πᵢ exp(−rᵢᵀ Σᵢ⁻¹ rᵢ),   log p(z | x) = −Σᵢ |Lᵢ⁻¹ rᵢ|²,   Σᵢ = Lᵢ Lᵢᵀ.
//! ```
//!
//! The whitened residual `Lᵢ⁻¹ rᵢ` is what the Jacobian baselines minimise in
//! the least-squares sense, so every solver sees the same problem.
//!
//! | constraint       | residual                                              | m |
//! |------------------|-------------------------------------------------------|---|
//! | `Position`       | world position of a point on a joint − target          | 3 |
//! | `Orientation`    | `log(target⁻¹ · R_joint)` (EXPMAP log map, rad)         | 3 |
//! | `CentreOfMass`   | centre of mass − target, on the selected axes (§6.1)  | 3 |
//! | `Smoothness`     | `C = Σᵢ Σ_{j=−k..k} ‖Log(qᵢ⁻¹ q_{i+j})‖` (Eq. 16)        | 1 |
//! | `Floor`          | height − floor (`On`), or `min(0, height − floor)` (`Above`, §6.3) | 1 |
//! | `Coupled`        | `θ_b − ratio · θ_a` (e.g. ratio ⅔, §6.4)                | 1 |
//! | `LookAt`         | angle between a joint axis and the direction to a point | 1 |
//! | `Custom`         | any closure of (skeleton, world transforms, pose)      | m |

use std::fmt;
use std::sync::Arc;

use nalgebra::{DMatrix, Isometry3, Point3, Unit, UnitQuaternion, Vector3};
use skeleton::Skeleton;

use crate::error::{IkError, Result};

/// Residual function of a [`ConstraintKind::Custom`] constraint: writes `m`
/// residuals into the slice given the skeleton, the world transforms of every
/// joint and the pose parameters.
pub(crate) type CustomResidual =
    Arc<dyn Fn(&Skeleton, &[Isometry3<f64>], &[f64], &mut [f64]) + Send + Sync>;

/// Whether a floor constraint keeps a point *on* the floor or only *above* it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloorMode {
    On,
    Above,
}

/// What a constraint constrains.
#[derive(Clone)]
pub enum ConstraintKind {
    /// The point `point` (in joint `joint`'s frame) should be at `target`.
    Position {
        joint: usize,
        point: Vector3<f64>,
        target: Point3<f64>,
    },
    /// Joint `joint`'s world orientation should be `target`.
    Orientation {
        joint: usize,
        target: UnitQuaternion<f64>,
    },
    /// The centre of mass should be at `target` along the axes marked
    /// `true` (e.g. `[true, false, true]` with y up: on the vertical line
    /// through `target`).
    CentreOfMass {
        target: Point3<f64>,
        axes: [bool; 3],
    },
    /// SMC-IK Eq. 16 over the local rotations of `joints` (in chain order),
    /// neighbourhood half-width `k`.
    Smoothness { joints: Vec<usize>, k: usize },
    /// The point `point` of joint `joint` on (or above) the plane `up · p =
    /// height`, `up` the world's vertical.
    Floor {
        joint: usize,
        point: Vector3<f64>,
        up: Unit<Vector3<f64>>,
        height: f64,
        mode: FloorMode,
    },
    /// Parameter `param_b` should equal `ratio ·` parameter `param_a`
    /// (indices into the pose vector).
    Coupled {
        param_a: usize,
        param_b: usize,
        ratio: f64,
    },
    /// Joint `joint`'s local `axis` should point at `target`.
    LookAt {
        joint: usize,
        axis: Unit<Vector3<f64>>,
        target: Point3<f64>,
    },
    /// Anything else.
    Custom {
        name: String,
        dim: usize,
        residual: CustomResidual,
    },
}

impl fmt::Debug for ConstraintKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Custom { name, dim, .. } => write!(f, "Custom {{ name: {name:?}, dim: {dim} }}"),
            Self::Position {
                joint,
                point,
                target,
            } => {
                write!(
                    f,
                    "Position {{ joint: {joint}, point: {point:?}, target: {target:?} }}"
                )
            }
            Self::Orientation { joint, target } => {
                write!(f, "Orientation {{ joint: {joint}, target: {target:?} }}")
            }
            Self::CentreOfMass { target, axes } => {
                write!(f, "CentreOfMass {{ target: {target:?}, axes: {axes:?} }}")
            }
            Self::Smoothness { joints, k } => {
                write!(f, "Smoothness {{ joints: {joints:?}, k: {k} }}")
            }
            Self::Floor {
                joint,
                point,
                up,
                height,
                mode,
            } => write!(
                f,
                "Floor {{ joint: {joint}, point: {point:?}, up: {up:?}, height: {height}, mode: {mode:?} }}"
            ),
            Self::Coupled {
                param_a,
                param_b,
                ratio,
            } => {
                write!(
                    f,
                    "Coupled {{ param_a: {param_a}, param_b: {param_b}, ratio: {ratio} }}"
                )
            }
            Self::LookAt {
                joint,
                axis,
                target,
            } => {
                write!(
                    f,
                    "LookAt {{ joint: {joint}, axis: {axis:?}, target: {target:?} }}"
                )
            }
        }
    }
}

impl ConstraintKind {
    /// Dimension of the residual.
    pub fn dim(&self) -> usize {
        match self {
            Self::Position { .. } | Self::Orientation { .. } | Self::CentreOfMass { .. } => 3,
            Self::Smoothness { .. }
            | Self::Floor { .. }
            | Self::Coupled { .. }
            | Self::LookAt { .. } => 1,
            Self::Custom { dim, .. } => *dim,
        }
    }

    /// A short name for messages and the UI.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Position { .. } => "position",
            Self::Orientation { .. } => "orientation",
            Self::CentreOfMass { .. } => "centre of mass",
            Self::Smoothness { .. } => "smoothness",
            Self::Floor { .. } => "floor",
            Self::Coupled { .. } => "coupled joints",
            Self::LookAt { .. } => "look-at",
            Self::Custom { .. } => "custom",
        }
    }

    /// Writes the (unwhitened) residual into `out` (`out.len() == self.dim()`).
    /// `world` holds the world transforms of every joint for `pose`.
    pub fn residual(
        &self,
        skeleton: &Skeleton,
        world: &[Isometry3<f64>],
        pose: &[f64],
        out: &mut [f64],
    ) {
        match self {
            Self::Position {
                joint,
                point,
                target,
            } => {
                let p = world[*joint] * Point3::from(*point);
                out.copy_from_slice((p - target).as_slice());
            }
            Self::Orientation { joint, target } => {
                let v = rotation::log(&(target.inverse() * world[*joint].rotation));
                out.copy_from_slice(v.as_slice());
            }
            Self::CentreOfMass { target, axes } => {
                let c = skeleton.centre_of_mass(world);
                for k in 0..3 {
                    out[k] = if axes[k] { c[k] - target[k] } else { 0.0 };
                }
            }
            Self::Smoothness { joints, k } => {
                out[0] = smoothness_energy(skeleton, pose, joints, *k);
            }
            Self::Floor {
                joint,
                point,
                up,
                height,
                mode,
            } => {
                let h = up.dot(&(world[*joint] * Point3::from(*point)).coords) - height;
                out[0] = match mode {
                    FloorMode::On => h,
                    FloorMode::Above => h.min(0.0),
                };
            }
            Self::Coupled {
                param_a,
                param_b,
                ratio,
            } => {
                out[0] = pose[*param_b] - ratio * pose[*param_a];
            }
            Self::LookAt {
                joint,
                axis,
                target,
            } => {
                let w = &world[*joint];
                let a = w.rotation * axis.into_inner();
                let d = target - Point3::from(w.translation.vector);
                out[0] = a.cross(&d).norm().atan2(a.dot(&d));
            }
            Self::Custom { residual, .. } => residual(skeleton, world, pose, out),
        }
    }

    fn check(&self, index: usize, skeleton: &Skeleton) -> Result<()> {
        let kind = self.name();
        let finite = |field: &'static str, ok: bool| {
            if ok {
                Ok(())
            } else {
                Err(IkError::NonFinite { index, kind, field })
            }
        };
        let joint_ok = |j: usize| {
            if j < skeleton.len() {
                Ok(())
            } else {
                Err(IkError::InvalidConstraint {
                    index,
                    kind,
                    message: format!(
                        "joint index {j} out of range (the skeleton has {} joints)",
                        skeleton.len()
                    ),
                })
            }
        };
        let all = |v: &[f64]| v.iter().all(|x| x.is_finite());
        match self {
            Self::Position {
                joint,
                point,
                target,
            } => {
                joint_ok(*joint)?;
                finite("point", all(point.as_slice()))?;
                finite("target", all(target.coords.as_slice()))
            }
            Self::Orientation { joint, target } => {
                joint_ok(*joint)?;
                finite("target", all(target.coords.as_slice()))
            }
            Self::CentreOfMass { target, .. } => finite("target", all(target.coords.as_slice())),
            Self::Smoothness { joints, .. } => {
                for &j in joints {
                    joint_ok(j)?;
                }
                Ok(())
            }
            Self::Floor {
                joint,
                point,
                up,
                height,
                ..
            } => {
                joint_ok(*joint)?;
                finite("point", all(point.as_slice()))?;
                finite("up", all(up.as_slice()))?;
                finite("height", height.is_finite())
            }
            Self::Coupled {
                param_a,
                param_b,
                ratio,
            } => {
                for p in [param_a, param_b] {
                    if *p >= skeleton.dof() {
                        return Err(IkError::InvalidConstraint {
                            index,
                            kind,
                            message: format!(
                                "parameter {p} out of range (the skeleton has {} DOF)",
                                skeleton.dof()
                            ),
                        });
                    }
                }
                finite("ratio", ratio.is_finite())
            }
            Self::LookAt {
                joint,
                axis,
                target,
            } => {
                joint_ok(*joint)?;
                finite("axis", all(axis.as_slice()))?;
                finite("target", all(target.coords.as_slice()))
            }
            Self::Custom { dim, .. } => {
                if *dim == 0 {
                    Err(IkError::InvalidConstraint {
                        index,
                        kind,
                        message: "a custom constraint needs a residual of dimension >= 1".into(),
                    })
                } else {
                    Ok(())
                }
            }
        }
    }
}

/// SMC-IK Eq. 16: `C = Σᵢ Σ_{j=−k}^{k} ‖Log(qᵢ⁻¹ q_{i+j})‖` over the local
/// rotations `qᵢ` of `joints` (pairs that fall off the ends are skipped;
/// joints that do not rotate count as the identity).
pub fn smoothness_energy(skeleton: &Skeleton, pose: &[f64], joints: &[usize], k: usize) -> f64 {
    let q = |j: usize| {
        skeleton
            .joint(j)
            .kind
            .rotation(&pose[skeleton.param_range(j)])
            .unwrap_or_else(UnitQuaternion::identity)
    };
    let n = joints.len();
    let mut c = 0.0;
    for i in 0..n {
        let qi_inv = q(joints[i]).inverse();
        let lo = i.saturating_sub(k);
        let hi = (i + k).min(n - 1);
        for (m, &jm) in joints.iter().enumerate().take(hi + 1).skip(lo) {
            if m != i {
                c += rotation::log(&(qi_inv * q(jm))).norm();
            }
        }
    }
    c
}

/// The covariance `Σ` of a constraint's residual noise.
#[derive(Clone, Debug, PartialEq)]
pub enum Noise {
    /// `Σ = σ² I`.
    Isotropic(f64),
    /// `Σ = diag(σ₁², …, σ_m²)`.
    Diagonal(Vec<f64>),
    /// A full `m × m` covariance.
    Covariance(DMatrix<f64>),
}

/// `Lᵢ⁻¹` for a constraint, kept in the cheapest form.
#[derive(Clone, Debug)]
enum Whitening {
    Scale(f64),
    Diagonal(Vec<f64>),
    Full(DMatrix<f64>),
}

impl Whitening {
    fn new(noise: &Noise, dim: usize) -> std::result::Result<Self, String> {
        let sigma_ok = |s: f64| s.is_finite() && s > 0.0;
        match noise {
            Noise::Isotropic(s) => {
                if sigma_ok(*s) {
                    Ok(Self::Scale(1.0 / s))
                } else {
                    Err(format!("σ must be positive and finite, got {s}"))
                }
            }
            Noise::Diagonal(s) => {
                if s.len() != dim {
                    Err(format!(
                        "has {} standard deviations for a {dim}-D residual",
                        s.len()
                    ))
                } else if let Some(bad) = s.iter().find(|s| !sigma_ok(**s)) {
                    Err(format!("σ must be positive and finite, got {bad}"))
                } else {
                    Ok(Self::Diagonal(s.iter().map(|s| 1.0 / s).collect()))
                }
            }
            Noise::Covariance(c) => {
                if c.nrows() != dim || c.ncols() != dim {
                    return Err(format!(
                        "is {}×{}, the residual has dimension {dim}",
                        c.nrows(),
                        c.ncols()
                    ));
                }
                if !c.iter().all(|x| x.is_finite()) {
                    return Err("has a non-finite entry".into());
                }
                let scale = c.amax().max(f64::MIN_POSITIVE);
                if (c - c.transpose()).amax() > 1e-9 * scale {
                    return Err("is not symmetric".into());
                }
                let chol = c.clone().cholesky().ok_or("is not positive definite")?;
                let l_inv = chol
                    .l()
                    .try_inverse()
                    .ok_or("is not positive definite (singular factor)")?;
                Ok(Self::Full(l_inv))
            }
        }
    }

    /// Whether this whitening applies to residuals of dimension `dim`.
    fn fits(&self, dim: usize) -> bool {
        match self {
            Self::Scale(_) => true,
            Self::Diagonal(d) => d.len() == dim,
            Self::Full(l_inv) => l_inv.nrows() == dim,
        }
    }

    fn apply(&self, r: &mut [f64]) {
        match self {
            Self::Scale(s) => r.iter_mut().for_each(|x| *x *= s),
            Self::Diagonal(d) => r.iter_mut().zip(d).for_each(|(x, s)| *x *= s),
            Self::Full(l_inv) => {
                // L⁻¹ is lower triangular: row i reads r[..=i] only, so going
                // from the last row up overwrites nothing still needed.
                for i in (0..r.len()).rev() {
                    r[i] = (0..=i).map(|k| l_inv[(i, k)] * r[k]).sum();
                }
            }
        }
    }
}

/// A constraint with its noise covariance.
#[derive(Clone, Debug)]
pub struct Constraint {
    pub kind: ConstraintKind,
    noise: Noise,
    whitening: Whitening,
    /// Why `noise` is unusable, found once in [`Constraint::new`] (so that
    /// validating every solver step does not factorise Σ again).
    noise_error: Option<String>,
    /// Disabled constraints contribute nothing.
    pub enabled: bool,
}

impl Constraint {
    /// A constraint with noise `noise` (checked against the residual's
    /// dimension and for positive definiteness when added to a
    /// [`ConstraintSet`]).
    pub fn new(kind: ConstraintKind, noise: Noise) -> Self {
        let (whitening, noise_error) = match Whitening::new(&noise, kind.dim()) {
            Ok(w) => (w, None),
            Err(message) => (Whitening::Scale(f64::NAN), Some(message)),
        };
        Self {
            kind,
            noise,
            whitening,
            noise_error,
            enabled: true,
        }
    }

    /// End-effector position target: joint `joint`'s origin at `target`, noise σ.
    pub fn position(joint: usize, target: Point3<f64>, sigma: f64) -> Self {
        Self::new(
            ConstraintKind::Position {
                joint,
                point: Vector3::zeros(),
                target,
            },
            Noise::Isotropic(sigma),
        )
    }

    pub fn noise(&self) -> &Noise {
        &self.noise
    }

    /// Residual dimension.
    pub fn dim(&self) -> usize {
        self.kind.dim()
    }

    /// Replaces the noise covariance (SMC-IK: editable at run time).
    pub fn set_noise(&mut self, noise: Noise) -> std::result::Result<(), String> {
        self.whitening = Whitening::new(&noise, self.kind.dim())?;
        self.noise_error = None;
        self.noise = noise;
        Ok(())
    }

    /// `r ← L⁻¹ r`: whitens a residual (or one Jacobian column) of this
    /// constraint, `Σ = L Lᵀ`.
    pub fn whiten(&self, r: &mut [f64]) {
        self.whitening.apply(r);
    }

    /// The whitened residual `L⁻¹ r` into `out`.
    pub fn whitened_residual(
        &self,
        skeleton: &Skeleton,
        world: &[Isometry3<f64>],
        pose: &[f64],
        out: &mut [f64],
    ) {
        self.kind.residual(skeleton, world, pose, out);
        self.whiten(out);
    }

    /// `rᵀ Σ⁻¹ r`.
    pub fn cost(&self, skeleton: &Skeleton, world: &[Isometry3<f64>], pose: &[f64]) -> f64 {
        let mut buf = [0.0; 8];
        let m = self.dim();
        if m <= buf.len() {
            self.whitened_residual(skeleton, world, pose, &mut buf[..m]);
            buf[..m].iter().map(|x| x * x).sum()
        } else {
            let mut v = vec![0.0; m];
            self.whitened_residual(skeleton, world, pose, &mut v);
            v.iter().map(|x| x * x).sum()
        }
    }
}

/// All constraints of a problem, validated against a skeleton.
#[derive(Clone, Debug, Default)]
pub struct ConstraintSet {
    constraints: Vec<Constraint>,
}

impl ConstraintSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a constraint after checking its joints, finiteness and noise;
    /// returns its index.
    pub fn add(&mut self, skeleton: &Skeleton, constraint: Constraint) -> Result<usize> {
        let index = self.constraints.len();
        Self::check_one(index, skeleton, &constraint)?;
        self.constraints.push(constraint);
        Ok(index)
    }

    /// A set of `constraints`, each added (and checked) as by
    /// [`ConstraintSet::add`].
    pub fn with(
        skeleton: &Skeleton,
        constraints: impl IntoIterator<Item = Constraint>,
    ) -> Result<Self> {
        let mut set = Self::new();
        for c in constraints {
            set.add(skeleton, c)?;
        }
        Ok(set)
    }

    fn check_one(index: usize, skeleton: &Skeleton, c: &Constraint) -> Result<()> {
        c.kind.check(index, skeleton)?;
        let bad = |message: String| IkError::BadCovariance {
            index,
            kind: c.kind.name(),
            message,
        };
        if let Some(message) = &c.noise_error {
            return Err(bad(message.clone()));
        }
        // The kind (public) may have been replaced by one of another size.
        if !c.whitening.fits(c.dim()) {
            return Err(bad(format!(
                "does not match the residual's dimension {}",
                c.dim()
            )));
        }
        Ok(())
    }

    /// Re-checks every constraint (targets may have been edited in place).
    pub fn validate(&self, skeleton: &Skeleton) -> Result<()> {
        for (i, c) in self.constraints.iter().enumerate() {
            Self::check_one(i, skeleton, c)?;
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.constraints.len()
    }

    pub fn is_empty(&self) -> bool {
        self.constraints.is_empty()
    }

    pub fn get(&self, i: usize) -> &Constraint {
        &self.constraints[i]
    }

    /// Mutable access for editing targets and enabling/disabling; call
    /// [`Self::validate`] (the solvers do, every step) before use.
    pub fn get_mut(&mut self, i: usize) -> &mut Constraint {
        &mut self.constraints[i]
    }

    pub fn iter(&self) -> impl Iterator<Item = &Constraint> {
        self.constraints.iter()
    }

    pub fn remove(&mut self, i: usize) -> Constraint {
        self.constraints.remove(i)
    }

    /// Moves the target of position constraint `i`. The target's
    /// finiteness is checked where the constraint is evaluated (a solver
    /// step reports [`IkError::NonFinite`] with its index).
    ///
    /// # Errors
    /// [`IkError::InvalidConstraint`] when `i` is out of range or
    /// constraint `i` is not a position constraint.
    pub fn set_position_target(&mut self, i: usize, target: Point3<f64>) -> Result<()> {
        let count = self.constraints.len();
        let c = self
            .constraints
            .get_mut(i)
            .ok_or_else(|| IkError::InvalidConstraint {
                index: i,
                kind: "position",
                message: format!("no constraint {i} (the set has {count})"),
            })?;
        match &mut c.kind {
            ConstraintKind::Position { target: t, .. } => {
                *t = target;
                Ok(())
            }
            other => Err(IkError::InvalidConstraint {
                index: i,
                kind: "position",
                message: format!("constraint {i} is not a position constraint ({other:?})"),
            }),
        }
    }

    /// Total whitened residual dimension of the enabled constraints.
    pub fn residual_dim(&self) -> usize {
        self.constraints
            .iter()
            .filter(|c| c.enabled)
            .map(Constraint::dim)
            .sum()
    }

    /// The stacked whitened residual of the enabled constraints into `out`
    /// (`out.len() == self.residual_dim()`).
    pub fn whitened_residual(
        &self,
        skeleton: &Skeleton,
        world: &[Isometry3<f64>],
        pose: &[f64],
        out: &mut [f64],
    ) {
        let mut o = 0;
        for c in self.constraints.iter().filter(|c| c.enabled) {
            let m = c.dim();
            c.whitened_residual(skeleton, world, pose, &mut out[o..o + m]);
            o += m;
        }
    }

    /// Total cost `Σᵢ rᵢᵀ Σᵢ⁻¹ rᵢ`, i.e. `−log p(z | x)` (SMC-IK Eq. 14).
    pub fn cost(&self, skeleton: &Skeleton, world: &[Isometry3<f64>], pose: &[f64]) -> f64 {
        self.constraints
            .iter()
            .filter(|c| c.enabled)
            .map(|c| c.cost(skeleton, world, pose))
            .sum()
    }
}

/// Fewest particles per rayon task when evaluating constraint costs.
const MIN_COST_TASK: usize = 128;

/// The constraint likelihood as a term of the engine's weigh stage:
/// `log p(z | xᵢ) = −cost(xᵢ) / T` (SMC-IK Eq. 14, tempered by `T`; `T = 1`
/// is the paper's likelihood), read from the cloud's forward kinematics
/// prepared once per step by [`skeleton::Posing`], so it can be combined
/// with other body terms (a region likelihood, a prior) that read the same
/// transforms.
#[derive(Clone, Copy, Debug)]
pub struct ConstraintLikelihood<'a> {
    pub skeleton: &'a Skeleton,
    pub constraints: &'a ConstraintSet,
    /// `T > 0`: the adaptive solver's `s²`.
    pub temperature: f64,
}

impl<O: ?Sized> smc::Term<O, skeleton::BatchForwardKinematics> for ConstraintLikelihood<'_> {
    fn add_log_likelihood(
        &self,
        _: &O,
        fk: &skeleton::BatchForwardKinematics,
        states: &[f64],
        dim: usize,
        out: &mut [f64],
    ) -> std::result::Result<(), smc::BoxError> {
        if fk.len() != out.len() || dim != self.skeleton.dof() {
            return Err(IkError::InvalidConfig {
                field: "constraint likelihood",
                message: format!(
                    "{} prepared poses of {} parameters for {} particles of {dim}",
                    fk.len(),
                    self.skeleton.dof(),
                    out.len()
                ),
            }
            .into());
        }
        let (skeleton, constraints, t) = (self.skeleton, self.constraints, self.temperature);
        smc::PerPrepared {
            f: |_: &(), fk: &skeleton::BatchForwardKinematics, i: usize, x: &[f64]| {
                -constraints.cost(skeleton, fk.world(i), x) / t
            },
            min_task: MIN_COST_TASK,
        }
        .add_log_likelihood(&(), fk, states, dim, out)
    }
}

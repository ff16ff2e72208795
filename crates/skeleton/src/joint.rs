//! Joint kinds and their parameters.
//!
//! A joint maps its parameters (a slice of the pose vector) to a *motion*: a
//! rigid transform applied after the joint's fixed placement in its parent
//! (offset, then rest rotation). The parameterisations follow DESIGN.md:
//!
//! | kind        | params | meaning                                                    |
//! |-------------|--------|------------------------------------------------------------|
//! | `Fixed`     | 0      | no motion (end sites, rigid attachments)                   |
//! | `Hinge`     | 1      | angle (rad) about `axis`                                   |
//! | `Prismatic` | 1      | displacement (m) along `axis`                              |
//! | `Swing`     | 2      | swing exp-map vector in the plane ⟂ twist axis (EXPMAP §5) |
//! | `Ball`      | 3      | a [`BallRotation`]: exp map, swing–twist or Euler angles   |
//! | `Free`      | 6      | translation (x, y, z) then a [`BallRotation`]              |
//!
//! Every kind carries its limits; [`JointKind::within_limits`] is the
//! containment test and [`JointKind::clamp_to_limits`] the projection used by
//! solvers that must never leave the feasible set (SMC-IK Eq. 12).
//!
//! # Parameter velocities
//!
//! [`JointKind::param_twists`] gives, for each parameter `p_k`, the velocity
//! `(ω_k, v_k)` of the motion `M(p) = (t(p), R(p))` in the joint's placement
//! frame `F = W_parent · T(offset) · R(rest)`, with the joint's moving origin
//! `t(p)` as reference point:
//!
//! ```text
//! v_k = ∂t/∂p_k,     [ω_k]× = ∂R/∂p_k · Rᵀ        (spatial angular velocity)
//! ```
//!
//! so that a point `x` rigidly attached at or below the joint moves as
//!
//! ```text
//! ∂x_world/∂p_k = A v_k + (A ω_k) × (x_world − o_j),   A = rot(F),  o_j = F · t(p)
//! ```
//!
//! (SMC-IK Eq. 5 needs these columns; the exp-map part is EXPMAP §3.1). For a
//! quaternion `q(p)`, `[ω_k]× = ∂R/∂p_k Rᵀ` is the same as the pure quaternion
//! `ω_k = 2 (∂q/∂p_k) q*` (from `q̇ = ½ ω q`, EXPMAP §4.1), which is how it is
//! computed here:
//!
//! | kind                        | `ω_k`                                              | `v_k`     |
//! |-----------------------------|----------------------------------------------------|-----------|
//! | `Hinge`                     | `axis`                                              | 0         |
//! | `Prismatic`                 | 0                                                   | `axis`    |
//! | `Ball(ExpMap)`, `q = exp(v)`| `2 (∂q/∂v_k) q*` = column k of the left Jacobian `J_l(v)` (EXPMAP §3.1) | 0 |
//! | `Ball(Euler)`, `R = R₀R₁R₂` | `a₀`, `R₀ a₁`, `R₀ R₁ a₂`                            | 0         |
//! | `Ball(SwingTwist)`, `q = exp(s₁u + s₂w) R_t(τ)` | `J_l(s) u`, `J_l(s) w`, `exp(s) t` | 0 |
//! | `Swing`                     | `J_l(s) u`, `J_l(s) w`                              | 0         |
//! | `Free`                      | 0, 0, 0, then as its [`BallRotation`]               | `e_x`, `e_y`, `e_z`, then 0 |
//!
//! `Free`'s translation is applied before its rotation (`M = T(x) · R`), so
//! the translation velocities are the placement frame's axes.

use nalgebra::{
    Isometry3, Matrix3, Quaternion, Translation3, Unit, UnitQuaternion, Vector2, Vector3,
};
use rotation::euler::{self, EulerOrder};
use rotation::{SwingTwistFrame, SwingTwistLimit};

/// A closed interval `[min, max]` for one scalar parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

impl Range {
    pub fn new(min: f64, max: f64) -> Self {
        Self { min, max }
    }

    /// The symmetric interval `[-half, half]`.
    pub fn symmetric(half: f64) -> Self {
        Self::new(-half, half)
    }

    pub fn contains(&self, x: f64) -> bool {
        x >= self.min && x <= self.max
    }

    pub fn clamp(&self, x: f64) -> f64 {
        x.clamp(self.min, self.max)
    }

    pub(crate) fn is_valid(&self) -> bool {
        self.min.is_finite() && self.max.is_finite() && self.min <= self.max
    }
}

fn within(limit: &Option<Range>, x: f64) -> bool {
    limit.as_ref().is_none_or(|r| r.contains(x))
}

fn clamp(limit: &Option<Range>, x: f64) -> f64 {
    limit.as_ref().map_or(x, |r| r.clamp(x))
}

/// How a 3-DOF rotation is parameterised, with its limits.
#[derive(Clone, Debug)]
pub enum BallRotation {
    /// Exp-map vector `v` (EXPMAP §2), rotation `exp(v)`. `max_angle` bounds
    /// the rotation angle `|v|` (a cone around the rest orientation).
    ExpMap { max_angle: Option<f64> },
    /// `(s₁, s₂, τ)`: swing exp-map coordinates in the frame's swing plane and
    /// twist angle about its twist axis (EXPMAP §5), with an elliptical swing
    /// limit and a twist interval.
    SwingTwist {
        frame: SwingTwistFrame,
        limit: Option<SwingTwistLimit>,
    },
    /// Euler angles (rad) in the given order, `R = R_a0(θ0)·R_a1(θ1)·R_a2(θ2)`
    /// — what BVH channels are. Limits are per angle.
    Euler {
        order: EulerOrder,
        limits: Option<[Range; 3]>,
    },
}

impl BallRotation {
    pub fn exp_map() -> Self {
        Self::ExpMap { max_angle: None }
    }

    pub fn rotation(&self, p: &[f64]) -> UnitQuaternion<f64> {
        match self {
            Self::ExpMap { .. } => rotation::exp(&Vector3::new(p[0], p[1], p[2])),
            Self::SwingTwist { frame, .. } => frame.to_quaternion(Vector2::new(p[0], p[1]), p[2]),
            Self::Euler { order, .. } => euler::to_quaternion(*order, [p[0], p[1], p[2]]),
        }
    }

    /// The spatial angular velocities `ω_k` (`[ω_k]× = ∂R/∂p_k · Rᵀ`, in the
    /// frame the rotation acts in) of `R(p)` with respect to each of its three
    /// parameters; see the module docs for the formulas (EXPMAP §3.1, §5).
    pub fn angular_velocities(&self, p: &[f64]) -> [Vector3<f64>; 3] {
        match self {
            Self::ExpMap { .. } => expmap_angular_velocities(&Vector3::new(p[0], p[1], p[2])),
            Self::SwingTwist { frame, .. } => {
                let s = frame.swing_vector(&Vector2::new(p[0], p[1]));
                let [w1, w2] = swing_angular_velocities(frame, &s);
                [w1, w2, rotation::exp(&s) * frame.twist_axis().into_inner()]
            }
            Self::Euler { order, .. } => {
                let [a0, a1, a2] = order.0;
                let r0 = a0.rotation(p[0]);
                let r01 = r0 * a1.rotation(p[1]);
                [
                    a0.unit().into_inner(),
                    r0 * a1.unit().into_inner(),
                    r01 * a2.unit().into_inner(),
                ]
            }
        }
    }

    /// Writes into `p` the parameters of `q`, choosing among equivalent
    /// representations the one nearest the current `p` (EXPMAP §4.2), so that
    /// parameters vary continuously along a motion.
    pub fn set_rotation(&self, q: &UnitQuaternion<f64>, p: &mut [f64]) {
        match self {
            Self::ExpMap { .. } => {
                let v = rotation::log_near(q, &Vector3::new(p[0], p[1], p[2]));
                p.copy_from_slice(v.as_slice());
            }
            Self::SwingTwist { frame, .. } => {
                let (s, t) = frame.from_quaternion(q);
                p.copy_from_slice(&[s.x, s.y, t]);
            }
            Self::Euler { order, .. } => {
                let a = euler::from_quaternion_near(*order, q, [p[0], p[1], p[2]]);
                p.copy_from_slice(&a);
            }
        }
    }

    fn within_limits(&self, p: &[f64]) -> bool {
        match self {
            Self::ExpMap { max_angle } => {
                max_angle.is_none_or(|m| Vector3::new(p[0], p[1], p[2]).norm() <= m)
            }
            Self::SwingTwist { limit, .. } => limit
                .as_ref()
                .is_none_or(|l| l.contains(&Vector2::new(p[0], p[1]), p[2])),
            Self::Euler { limits, .. } => limits
                .as_ref()
                .is_none_or(|l| l.iter().zip(p).all(|(r, &x)| r.contains(x))),
        }
    }

    fn clamp_to_limits(&self, p: &mut [f64]) {
        match self {
            Self::ExpMap { max_angle } => {
                if let Some(m) = max_angle {
                    let v = Vector3::new(p[0], p[1], p[2]);
                    let n = v.norm();
                    if n > *m {
                        let v = v * (*m / n);
                        p.copy_from_slice(v.as_slice());
                    }
                }
            }
            Self::SwingTwist { limit, .. } => {
                if let Some(l) = limit {
                    let (s, t) = l.project(&Vector2::new(p[0], p[1]), p[2]);
                    p.copy_from_slice(&[s.x, s.y, t]);
                }
            }
            Self::Euler { limits, .. } => {
                if let Some(l) = limits {
                    for (r, x) in l.iter().zip(p.iter_mut()) {
                        *x = r.clamp(*x);
                    }
                }
            }
        }
    }

    fn validate(&self) -> Result<(), String> {
        match self {
            Self::ExpMap { max_angle } => match max_angle {
                Some(m) if !(m.is_finite() && *m > 0.0) => {
                    Err(format!("max_angle must be positive and finite, got {m}"))
                }
                _ => Ok(()),
            },
            Self::SwingTwist { limit, .. } => match limit {
                Some(l) if !swing_twist_limit_valid(l) => {
                    Err(format!("invalid swing–twist limit {l:?}"))
                }
                _ => Ok(()),
            },
            Self::Euler { limits, .. } => match limits {
                Some(l) if !l.iter().all(Range::is_valid) => {
                    Err(format!("invalid Euler limits {l:?}"))
                }
                _ => Ok(()),
            },
        }
    }
}

/// `ω_k = 2 (∂q/∂v_k) q*` for `q = exp(v)`: the columns of the left Jacobian
/// `J_l(v)` of SO(3), from the quaternion partials of EXPMAP §3.1 (which
/// carry the small-angle series, so this is exact down to `v = 0`).
fn expmap_angular_velocities(v: &Vector3<f64>) -> [Vector3<f64>; 3] {
    let q = rotation::exp(v);
    let q_conj = q.quaternion().conjugate();
    let dq: [Quaternion<f64>; 3] = rotation::exp_partials(v);
    std::array::from_fn(|k| (dq[k] * q_conj).imag() * 2.0)
}

/// The swing part's `ω` for `(s₁, s₂)`: the swing vector is `s = s₁ u + s₂ w`,
/// so by the chain rule `ω_{s₁} = J_l(s) u`, `ω_{s₂} = J_l(s) w` (EXPMAP §3.1,
/// §5). The twist factor `R_t(τ)` sits on the right and does not change the
/// spatial velocity of the swing.
fn swing_angular_velocities(frame: &SwingTwistFrame, s: &Vector3<f64>) -> [Vector3<f64>; 2] {
    let [c0, c1, c2] = expmap_angular_velocities(s);
    let jl = Matrix3::from_columns(&[c0, c1, c2]);
    let (u, w) = frame.swing_axes();
    [jl * u.into_inner(), jl * w.into_inner()]
}

fn swing_twist_limit_valid(l: &SwingTwistLimit) -> bool {
    l.swing_half_angles
        .iter()
        .all(|a| a.is_finite() && *a > 0.0)
        && l.twist_min.is_finite()
        && l.twist_max.is_finite()
        && l.twist_min <= l.twist_max
}

/// The kind of a joint, its axis or parameterisation, and its limits.
#[derive(Clone, Debug)]
pub enum JointKind {
    Fixed,
    Hinge {
        axis: Unit<Vector3<f64>>,
        limit: Option<Range>,
    },
    Prismatic {
        axis: Unit<Vector3<f64>>,
        limit: Option<Range>,
    },
    /// Two rotational DOF: a swing exp-map vector `(s₁, s₂)` in the frame's
    /// swing plane, no twist (EXPMAP §5). The limit's twist interval is ignored.
    Swing {
        frame: SwingTwistFrame,
        limit: Option<SwingTwistLimit>,
    },
    Ball(BallRotation),
    /// A floating base: translation `(x, y, z)` in the parent frame, then a
    /// rotation. Params are `[x, y, z, r0, r1, r2]`.
    Free {
        rotation: BallRotation,
        translation_limits: Option<[Range; 3]>,
    },
}

impl JointKind {
    pub fn hinge(axis: Vector3<f64>, limit: Option<Range>) -> Self {
        Self::Hinge {
            axis: Unit::new_normalize(axis),
            limit,
        }
    }

    pub fn prismatic(axis: Vector3<f64>, limit: Option<Range>) -> Self {
        Self::Prismatic {
            axis: Unit::new_normalize(axis),
            limit,
        }
    }

    /// A 3-DOF ball joint in exp-map coordinates without limits.
    pub fn ball() -> Self {
        Self::Ball(BallRotation::exp_map())
    }

    /// A floating base with an exp-map rotation and no limits.
    pub fn free() -> Self {
        Self::Free {
            rotation: BallRotation::exp_map(),
            translation_limits: None,
        }
    }

    /// Number of parameters this joint takes from the pose vector.
    pub fn dof(&self) -> usize {
        match self {
            Self::Fixed => 0,
            Self::Hinge { .. } | Self::Prismatic { .. } => 1,
            Self::Swing { .. } => 2,
            Self::Ball(_) => 3,
            Self::Free { .. } => 6,
        }
    }

    /// The joint's motion for parameters `p` (`p.len() == self.dof()`).
    #[inline]
    pub fn motion(&self, p: &[f64]) -> Isometry3<f64> {
        match self {
            Self::Fixed => Isometry3::identity(),
            Self::Hinge { axis, .. } => Isometry3::from_parts(
                Translation3::identity(),
                UnitQuaternion::from_axis_angle(axis, p[0]),
            ),
            Self::Prismatic { axis, .. } => Isometry3::from_parts(
                Translation3::from(axis.into_inner() * p[0]),
                UnitQuaternion::identity(),
            ),
            Self::Swing { frame, .. } => Isometry3::from_parts(
                Translation3::identity(),
                frame.to_quaternion(Vector2::new(p[0], p[1]), 0.0),
            ),
            Self::Ball(r) => Isometry3::from_parts(Translation3::identity(), r.rotation(p)),
            Self::Free { rotation, .. } => Isometry3::from_parts(
                Translation3::new(p[0], p[1], p[2]),
                rotation.rotation(&p[3..6]),
            ),
        }
    }

    /// For each parameter `k`, the velocity `(ω_k, v_k)` of the motion in the
    /// joint's placement frame, about the joint's moving origin (module docs,
    /// "Parameter velocities"; SMC-IK Eq. 5, EXPMAP §3.1): a point `x` rigidly
    /// attached at or below the joint has
    /// `∂x_world/∂p_k = A v_k + (A ω_k) × (x_world − o_j)` with `A` the
    /// rotation of `W_parent · placement` and `o_j` the joint's world origin.
    ///
    /// `p.len() == out.len() == self.dof()`. Allocation-free.
    pub fn param_twists(&self, p: &[f64], out: &mut [(Vector3<f64>, Vector3<f64>)]) {
        debug_assert_eq!(p.len(), self.dof());
        debug_assert_eq!(out.len(), self.dof());
        let zero = Vector3::zeros();
        match self {
            Self::Fixed => {}
            Self::Hinge { axis, .. } => out[0] = (axis.into_inner(), zero),
            Self::Prismatic { axis, .. } => out[0] = (zero, axis.into_inner()),
            Self::Swing { frame, .. } => {
                let s = frame.swing_vector(&Vector2::new(p[0], p[1]));
                let [w1, w2] = swing_angular_velocities(frame, &s);
                out[0] = (w1, zero);
                out[1] = (w2, zero);
            }
            Self::Ball(r) => {
                for (o, w) in out.iter_mut().zip(r.angular_velocities(p)) {
                    *o = (w, zero);
                }
            }
            Self::Free { rotation, .. } => {
                for (k, o) in out[..3].iter_mut().enumerate() {
                    *o = (zero, Vector3::ith(k, 1.0));
                }
                for (o, w) in out[3..]
                    .iter_mut()
                    .zip(rotation.angular_velocities(&p[3..6]))
                {
                    *o = (w, zero);
                }
            }
        }
    }

    /// The rotational part of the motion, for joints that rotate.
    pub fn rotation(&self, p: &[f64]) -> Option<UnitQuaternion<f64>> {
        match self {
            Self::Fixed | Self::Prismatic { .. } => None,
            _ => Some(self.motion(p).rotation),
        }
    }

    /// Sets the rotational parameters so that the joint's rotation is `q`, as
    /// closely as the joint's DOF allow: a hinge keeps the twist of `q` about
    /// its axis, a swing joint drops the twist (EXPMAP §5). Parameters stay
    /// continuous with their current values. Translations are left alone.
    /// Returns `false` for joints that do not rotate.
    pub fn set_rotation(&self, q: &UnitQuaternion<f64>, p: &mut [f64]) -> bool {
        match self {
            Self::Fixed | Self::Prismatic { .. } => false,
            Self::Hinge { axis, .. } => {
                // Twist of q about the axis: the swing–twist decomposition's twist.
                let qa = q.as_ref();
                let proj = axis.dot(&qa.imag());
                let angle = 2.0 * proj.atan2(qa.w);
                // Nearest representative to the current value.
                let two_pi = std::f64::consts::TAU;
                p[0] = angle + two_pi * ((p[0] - angle) / two_pi).round();
                true
            }
            Self::Swing { frame, .. } => {
                let (s, _) = frame.from_quaternion(q);
                p[0] = s.x;
                p[1] = s.y;
                true
            }
            Self::Ball(r) => {
                r.set_rotation(q, p);
                true
            }
            Self::Free { rotation, .. } => {
                rotation.set_rotation(q, &mut p[3..6]);
                true
            }
        }
    }

    /// Containment test: are parameters `p` inside this joint's limits?
    pub fn within_limits(&self, p: &[f64]) -> bool {
        match self {
            Self::Fixed => true,
            Self::Hinge { limit, .. } | Self::Prismatic { limit, .. } => within(limit, p[0]),
            Self::Swing { limit, .. } => limit.as_ref().is_none_or(|l| {
                l.contains(
                    &Vector2::new(p[0], p[1]),
                    l.twist_min.max(0.0).min(l.twist_max),
                )
            }),
            Self::Ball(r) => r.within_limits(p),
            Self::Free {
                rotation,
                translation_limits,
            } => {
                translation_limits
                    .as_ref()
                    .is_none_or(|l| l.iter().zip(p).all(|(r, &x)| r.contains(x)))
                    && rotation.within_limits(&p[3..6])
            }
        }
    }

    /// Projects `p` onto the joint's limits (no-op when inside).
    pub fn clamp_to_limits(&self, p: &mut [f64]) {
        match self {
            Self::Fixed => {}
            Self::Hinge { limit, .. } | Self::Prismatic { limit, .. } => p[0] = clamp(limit, p[0]),
            Self::Swing { limit, .. } => {
                if let Some(l) = limit {
                    let twist = l.twist_min.max(0.0).min(l.twist_max);
                    let (s, _) = l.project(&Vector2::new(p[0], p[1]), twist);
                    p[0] = s.x;
                    p[1] = s.y;
                }
            }
            Self::Ball(r) => r.clamp_to_limits(p),
            Self::Free {
                rotation,
                translation_limits,
            } => {
                if let Some(l) = translation_limits {
                    for (r, x) in l.iter().zip(p.iter_mut()) {
                        *x = r.clamp(*x);
                    }
                }
                rotation.clamp_to_limits(&mut p[3..6]);
            }
        }
    }

    /// Checks the kind's own data (finite axes, ordered limits).
    pub(crate) fn validate(&self) -> Result<(), (&'static str, String)> {
        let axis_ok = |a: &Unit<Vector3<f64>>| a.iter().all(|c| c.is_finite());
        let range_ok = |r: &Option<Range>| r.as_ref().is_none_or(Range::is_valid);
        match self {
            Self::Fixed => Ok(()),
            Self::Hinge { axis, limit } | Self::Prismatic { axis, limit } => {
                if !axis_ok(axis) {
                    Err((
                        "axis",
                        format!("axis must be a finite non-zero vector, got {axis:?}"),
                    ))
                } else if !range_ok(limit) {
                    Err((
                        "limit",
                        format!("limit must be finite with min <= max, got {limit:?}"),
                    ))
                } else {
                    Ok(())
                }
            }
            Self::Swing { limit, .. } => match limit {
                Some(l) if !swing_twist_limit_valid(l) => {
                    Err(("limit", format!("invalid swing limit {l:?}")))
                }
                _ => Ok(()),
            },
            Self::Ball(r) => r.validate().map_err(|m| ("limit", m)),
            Self::Free {
                rotation,
                translation_limits,
            } => {
                if let Some(l) = translation_limits
                    && !l.iter().all(Range::is_valid)
                {
                    return Err(("translation_limits", format!("invalid limits {l:?}")));
                }
                rotation.validate().map_err(|m| ("limit", m))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rotation::euler::Axis;

    /// Central-difference step: truncation `O(h²)` and rounding `O(ε/h)` both
    /// stay near 1e-10 for the unit-scale motions below.
    const H: f64 = 1e-6;

    /// `vee` of the skew part of `m` (`m = [ω]×` gives `ω`).
    fn vee(m: &Matrix3<f64>) -> Vector3<f64> {
        0.5 * Vector3::new(
            m[(2, 1)] - m[(1, 2)],
            m[(0, 2)] - m[(2, 0)],
            m[(1, 0)] - m[(0, 1)],
        )
    }

    /// Compares `param_twists` with central differences of `motion`: the
    /// translation velocity, `vee(∂R/∂p_k · Rᵀ)`, and the velocity of an
    /// attached point `y` (module docs, "Parameter velocities").
    fn check_twists(kind: &JointKind, p: &[f64], y: Vector3<f64>) -> Result<(), TestCaseError> {
        let dof = kind.dof();
        prop_assert_eq!(p.len(), dof);
        let mut twists = vec![(Vector3::zeros(), Vector3::zeros()); dof];
        kind.param_twists(p, &mut twists);
        let m = kind.motion(p);
        let r = m.rotation.to_rotation_matrix().into_inner();
        let x = m * nalgebra::Point3::from(y);
        for (k, (omega, v)) in twists.iter().enumerate() {
            let (mut plus, mut minus) = (p.to_vec(), p.to_vec());
            plus[k] += H;
            minus[k] -= H;
            let (mp, mm) = (kind.motion(&plus), kind.motion(&minus));
            let dt = (mp.translation.vector - mm.translation.vector) / (2.0 * H);
            let dr = (mp.rotation.to_rotation_matrix().into_inner()
                - mm.rotation.to_rotation_matrix().into_inner())
                / (2.0 * H);
            let omega_fd = vee(&(dr * r.transpose()));
            let dx =
                ((mp * nalgebra::Point3::from(y)) - (mm * nalgebra::Point3::from(y))) / (2.0 * H);
            let dx_twist = v + omega.cross(&(x.coords - m.translation.vector));
            let tol = |a: &Vector3<f64>| 1e-6 * (1.0 + a.norm());
            prop_assert!(
                (omega - omega_fd).norm() < tol(omega),
                "ω_{k}: {omega:?} vs FD {omega_fd:?}"
            );
            prop_assert!((v - dt).norm() < tol(v), "v_{k}: {v:?} vs FD {dt:?}");
            prop_assert!(
                (dx_twist - dx).norm() < tol(&dx),
                "point: {dx_twist:?} vs FD {dx:?}"
            );
        }
        Ok(())
    }

    fn unit_axis() -> impl Strategy<Value = Unit<Vector3<f64>>> {
        prop::array::uniform3(-1.0..1.0f64)
            .prop_filter("away from zero", |c| {
                c.iter().map(|x| x * x).sum::<f64>() > 0.01
            })
            .prop_map(|c| Unit::new_normalize(Vector3::from(c)))
    }

    fn point() -> impl Strategy<Value = Vector3<f64>> {
        prop::array::uniform3(-1.0..1.0f64).prop_map(Vector3::from)
    }

    /// Exp-map and swing vectors of length up to 3 rad (short of the 2π
    /// shell), with tiny and zero ones where the series forms apply.
    fn rotation_params() -> impl Strategy<Value = [f64; 3]> {
        prop_oneof![
            6 => (unit_axis(), 0.0..3.0f64).prop_map(|(a, l)| (a.into_inner() * l).into()),
            2 => (unit_axis(), -12.0..-8.0f64).prop_map(|(a, e)| (a.into_inner() * 10f64.powf(e)).into()),
            1 => Just([0.0; 3]),
        ]
    }

    fn euler_order() -> impl Strategy<Value = EulerOrder> {
        let all: Vec<EulerOrder> = EulerOrder::TAIT_BRYAN
            .into_iter()
            .chain(EulerOrder::PROPER)
            .collect();
        prop::sample::select(all)
    }

    fn ball_rotation() -> impl Strategy<Value = BallRotation> {
        prop_oneof![
            Just(BallRotation::exp_map()),
            unit_axis().prop_map(|t| BallRotation::SwingTwist {
                frame: SwingTwistFrame::new(t),
                limit: None
            }),
            euler_order().prop_map(|order| BallRotation::Euler {
                order,
                limits: None
            }),
        ]
    }

    /// Parameters for a rotation: swing–twist's swing is the projection of an
    /// exp-map-like vector, its twist and Euler angles lie in (−3, 3).
    fn ball_params(r: &BallRotation, raw: [f64; 3], angle: f64) -> [f64; 3] {
        match r {
            BallRotation::ExpMap { .. } => raw,
            BallRotation::SwingTwist { .. } => [raw[0], raw[1], angle],
            BallRotation::Euler { .. } => [raw[0] + angle, raw[1], raw[2] - angle],
        }
    }

    proptest! {
        #[test]
        fn hinge_and_prismatic_twists_match_finite_differences(
            axis in unit_axis(), angle in -3.0..3.0f64, y in point()
        ) {
            check_twists(&JointKind::Hinge { axis, limit: None }, &[angle], y)?;
            check_twists(&JointKind::Prismatic { axis, limit: None }, &[angle], y)?;
        }

        #[test]
        fn ball_twists_match_finite_differences(
            r in ball_rotation(), raw in rotation_params(), angle in -3.0..3.0f64, y in point()
        ) {
            let p = ball_params(&r, raw, angle);
            check_twists(&JointKind::Ball(r), &p, y)?;
        }

        #[test]
        fn swing_twists_match_finite_differences(
            t in unit_axis(), raw in rotation_params(), y in point()
        ) {
            let kind = JointKind::Swing { frame: SwingTwistFrame::new(t), limit: None };
            check_twists(&kind, &raw[..2], y)?;
        }

        #[test]
        fn free_twists_match_finite_differences(
            r in ball_rotation(), raw in rotation_params(), angle in -3.0..3.0f64,
            x in point(), y in point()
        ) {
            let q = ball_params(&r, raw, angle);
            let p = [x.x, x.y, x.z, q[0], q[1], q[2]];
            check_twists(&JointKind::Free { rotation: r, translation_limits: None }, &p, y)?;
        }
    }

    #[test]
    fn euler_twists_are_the_rotated_axes() {
        // R = R_z(θ₀) R_x(θ₁) R_y(θ₂): ω₀ = z, ω₁ = R_z x, ω₂ = R_z R_x y.
        let order = EulerOrder([Axis::Z, Axis::X, Axis::Y]);
        let r = BallRotation::Euler {
            order,
            limits: None,
        };
        let a = [0.4, -0.7, 1.1];
        let w = r.angular_velocities(&a);
        let rz = Axis::Z.rotation(a[0]);
        let rzx = rz * Axis::X.rotation(a[1]);
        assert!((w[0] - Vector3::z()).norm() < 1e-15);
        assert!((w[1] - rz * Vector3::x()).norm() < 1e-15);
        assert!((w[2] - rzx * Vector3::y()).norm() < 1e-15);
    }

    #[test]
    fn expmap_twists_at_zero_are_the_coordinate_axes() {
        let w = BallRotation::exp_map().angular_velocities(&[0.0; 3]);
        for (k, wk) in w.iter().enumerate() {
            assert!((wk - Vector3::ith(k, 1.0)).norm() < 1e-15);
        }
    }
}

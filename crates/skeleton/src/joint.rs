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

use nalgebra::{Isometry3, Translation3, Unit, UnitQuaternion, Vector2, Vector3};
use rotation::euler::{self, EulerOrder};
use rotation::swing_twist::{SwingTwistFrame, SwingTwistLimit};

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

    /// Short names of the parameters, for CSV headers and UI labels.
    pub fn param_names(&self) -> &'static [&'static str] {
        match self {
            Self::Fixed => &[],
            Self::Hinge { .. } => &["angle"],
            Self::Prismatic { .. } => &["disp"],
            Self::Swing { .. } => &["swing1", "swing2"],
            Self::Ball(BallRotation::ExpMap { .. }) => &["vx", "vy", "vz"],
            Self::Ball(BallRotation::SwingTwist { .. }) => &["swing1", "swing2", "twist"],
            Self::Ball(BallRotation::Euler { .. }) => &["euler0", "euler1", "euler2"],
            Self::Free { rotation, .. } => match rotation {
                BallRotation::ExpMap { .. } => &["tx", "ty", "tz", "vx", "vy", "vz"],
                BallRotation::SwingTwist { .. } => &["tx", "ty", "tz", "swing1", "swing2", "twist"],
                BallRotation::Euler { .. } => &["tx", "ty", "tz", "euler0", "euler1", "euler2"],
            },
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

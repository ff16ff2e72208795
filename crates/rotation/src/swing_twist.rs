//! Swing–twist parameterisation of ball-and-socket joints with elliptical
//! swing limits (EXPMAP §5).
//!
//! # Frame and composition order
//!
//! A [`SwingTwistFrame`] holds the joint's twist axis `t` (the limb axis in
//! its rest pose) and an orthonormal basis `(u, w)` of the plane orthogonal to
//! it, right-handed: `u × w = t`. A swing `s = (s₁, s₂)` is the exp-map vector
//! `s₁ u + s₂ w`, which lies in that plane and so contains no spin about `t`
//! (EXPMAP §5: a rotation has no component about `t` iff its axis is
//! orthogonal to `t`). The joint rotation is
//!
//! ```text
//! q = exp(s₁ u + s₂ w) · R_t(τ)
//! ```
//!
//! — twist about the limb's own axis first, then swing the limb (quaternions
//! act on column vectors; the right factor acts first).
//!
//! # Decomposition
//!
//! For `q = S·T` with `S = (s₀, s⃗)`, `s⃗ ⊥ t`, and `T = (c, d·t)`, one finds
//! `(q_w, q_xyz·t) = s₀ (c, d)`: the twist is read from the projection of `q`
//! onto the `t` axis, `τ = 2 atan2(q_xyz·t, q_w)` (with the sign chosen so
//! `τ ∈ [−π, π]`), then `S = q R_t(τ)⁻¹` and `s = (log S · u, log S · w)`. The
//! decomposition is singular at swing magnitude π (`s₀ = 0`), where the twist
//! is undefined and we report `τ = 0`. Round trips are exact for `|s| < π`,
//! `τ ∈ (−π, π)`.
//!
//! # Limits (EXPMAP §5)
//!
//! Because `|s|` is the swing angle, the elliptical limit with half-angles
//! `(a, b)` along `(u, w)` is `(s₁/a)² + (s₂/b)² ≤ 1`; the twist limit is
//! `τ_min ≤ τ ≤ τ_max`. [`SwingTwistLimit::project`] returns the closest
//! allowed point in the product metric: the **true Euclidean closest point**
//! of the ellipse in swing coordinates (which are exp-map coordinates, so
//! the distance is the rotation angle to first order), and the closest twist
//! bound in angular distance on the circle.

use std::f64::consts::{PI, TAU};

use nalgebra::{Unit, UnitQuaternion, Vector2, Vector3};

use crate::RotationError;
use crate::expmap::{exp, log};

/// Below this relative length the swing axis is taken as parallel to the
/// twist axis.
const PARALLEL_BELOW: f64 = 1e-9;

/// A joint's twist axis `t` and swing basis `(u, w)` with `u × w = t`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct SwingTwistFrame {
    t: Unit<Vector3<f64>>,
    u: Unit<Vector3<f64>>,
    w: Unit<Vector3<f64>>,
}

impl SwingTwistFrame {
    /// The frame with twist axis `t` and `u` the normalised projection onto
    /// the plane ⊥ `t` of the coordinate axis least aligned with `t` (the
    /// first of x, y, z with the smallest `|t_i|`); `w = t × u`. For `t = z`
    /// this gives `u = x`, `w = y`; for `t = y`, `u = x`, `w = −z`.
    pub fn new(twist_axis: Unit<Vector3<f64>>) -> Self {
        let t = twist_axis.into_inner();
        let mut i = 0;
        for n in 1..3 {
            if t[n].abs() < t[i].abs() {
                i = n;
            }
        }
        let e = Vector3::ith(i, 1.0);
        let u = Unit::new_normalize(e - t * t[i]);
        Self::from_parts(twist_axis, u)
    }

    /// The frame with twist axis `t` and first swing axis the normalised
    /// projection of `u` onto the plane ⊥ `t`; `w = t × u`.
    ///
    /// Errors: `NonFinite` for NaN/∞ input, `DegenerateAxis` when `u` is zero
    /// or parallel to `t`.
    pub fn with_swing_axis(
        twist_axis: Unit<Vector3<f64>>,
        u: Vector3<f64>,
    ) -> Result<Self, RotationError> {
        if !twist_axis.iter().all(|c| c.is_finite()) {
            return Err(RotationError::NonFinite {
                field: "twist_axis",
            });
        }
        if !u.iter().all(|c| c.is_finite()) {
            return Err(RotationError::NonFinite { field: "u" });
        }
        let length = u.norm();
        let perpendicular = u - twist_axis.into_inner() * twist_axis.dot(&u);
        let p = perpendicular.norm();
        if length == 0.0 || p <= PARALLEL_BELOW * length {
            return Err(RotationError::DegenerateAxis {
                field: "u",
                reason: "swing axis is zero or parallel to the twist axis",
            });
        }
        Ok(Self::from_parts(
            twist_axis,
            Unit::new_unchecked(perpendicular / p),
        ))
    }

    fn from_parts(t: Unit<Vector3<f64>>, u: Unit<Vector3<f64>>) -> Self {
        let w = Unit::new_normalize(t.cross(&u));
        Self { t, u, w }
    }

    /// The twist axis `t`.
    pub fn twist_axis(&self) -> Unit<Vector3<f64>> {
        self.t
    }

    /// The swing basis `(u, w)`, `u × w = t`.
    pub fn swing_axes(&self) -> (Unit<Vector3<f64>>, Unit<Vector3<f64>>) {
        (self.u, self.w)
    }

    /// The 3-D exp-map vector `s₁ u + s₂ w` of a swing (EXPMAP §5).
    pub fn swing_vector(&self, swing: &Vector2<f64>) -> Vector3<f64> {
        self.u.into_inner() * swing.x + self.w.into_inner() * swing.y
    }

    /// `q = exp(s₁ u + s₂ w) · R_t(twist)`.
    pub fn to_quaternion(&self, swing: Vector2<f64>, twist: f64) -> UnitQuaternion<f64> {
        exp(&self.swing_vector(&swing)) * UnitQuaternion::from_axis_angle(&self.t, twist)
    }

    /// The swing (`|s| ≤ π`) and twist (`τ ∈ [−π, π]`) of `q`, inverse of
    /// [`Self::to_quaternion`] (see the module docs for the singularity at
    /// swing π).
    pub fn from_quaternion(&self, q: &UnitQuaternion<f64>) -> (Vector2<f64>, f64) {
        let quaternion = q.quaternion();
        let along = quaternion.imag().dot(&self.t);
        let sign = if quaternion.w < 0.0 { -1.0 } else { 1.0 };
        let twist = 2.0 * (sign * along).atan2(sign * quaternion.w);
        let swing_rotation = q * UnitQuaternion::from_axis_angle(&self.t, -twist);
        let s = log(&swing_rotation);
        (Vector2::new(s.dot(&self.u), s.dot(&self.w)), twist)
    }
}

/// An elliptical swing limit and a twist interval (EXPMAP §5).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct SwingTwistLimit {
    /// Half-angles of the swing ellipse along `(u, w)`, radians, `> 0`.
    pub swing_half_angles: Vector2<f64>,
    /// Least twist, radians.
    pub twist_min: f64,
    /// Greatest twist, radians, `≥ twist_min`.
    pub twist_max: f64,
}

impl SwingTwistLimit {
    /// A validated limit (see [`Self::validate`]).
    pub fn new(
        swing_half_angles: Vector2<f64>,
        twist_min: f64,
        twist_max: f64,
    ) -> Result<Self, RotationError> {
        let limit = Self {
            swing_half_angles,
            twist_min,
            twist_max,
        };
        limit.validate()?;
        Ok(limit)
    }

    /// Checks that the half-angles are finite and positive and
    /// `twist_min ≤ twist_max`, both finite. `contains` and `project` never
    /// panic, but on an invalid limit their results are unspecified.
    pub fn validate(&self) -> Result<(), RotationError> {
        let fields = [
            ("swing_half_angles.x", self.swing_half_angles.x),
            ("swing_half_angles.y", self.swing_half_angles.y),
        ];
        for (field, value) in fields {
            if !(value.is_finite() && value > 0.0) {
                return Err(RotationError::InvalidLimit {
                    field,
                    value,
                    reason: "swing half-angles must be finite and positive",
                });
            }
        }
        for (field, value) in [("twist_min", self.twist_min), ("twist_max", self.twist_max)] {
            if !value.is_finite() {
                return Err(RotationError::NonFinite { field });
            }
        }
        if self.twist_min > self.twist_max {
            return Err(RotationError::InvalidLimit {
                field: "twist_min",
                value: self.twist_min,
                reason: "twist_min must not exceed twist_max",
            });
        }
        Ok(())
    }

    /// `(s₁/a)² + (s₂/b)²`; `≤ 1` inside the swing ellipse.
    pub fn swing_ratio(&self, swing: &Vector2<f64>) -> f64 {
        (swing.x / self.swing_half_angles.x).powi(2) + (swing.y / self.swing_half_angles.y).powi(2)
    }

    /// Whether the swing is inside the ellipse and the twist inside
    /// `[twist_min, twist_max]` (boundaries included; NaN is outside).
    pub fn contains(&self, swing: &Vector2<f64>, twist: f64) -> bool {
        self.swing_ratio(swing) <= 1.0 && self.twist_min <= twist && twist <= self.twist_max
    }

    /// The closest allowed (swing, twist): the Euclidean closest point of the
    /// ellipse in swing coordinates and the angularly closest twist (a twist
    /// outside the interval by a multiple of 2π is shifted into it). Points
    /// inside are returned unchanged, so projection is idempotent.
    pub fn project(&self, swing: &Vector2<f64>, twist: f64) -> (Vector2<f64>, f64) {
        (self.project_swing(swing), self.project_twist(twist))
    }

    /// The swing part of [`Self::project`].
    pub fn project_swing(&self, swing: &Vector2<f64>) -> Vector2<f64> {
        let ratio = self.swing_ratio(swing);
        if ratio.is_nan() || ratio <= 1.0 {
            return *swing; // inside, or NaN
        }
        let (a, b) = (self.swing_half_angles.x, self.swing_half_angles.y);
        let clamp = |x: f64, h: f64| x.max(-h).min(h);
        if !(a > 0.0 && a.is_finite() && b > 0.0 && b.is_finite()) {
            // Degenerate limit (see `validate`): a segment or a point.
            let a = if a > 0.0 { a } else { 0.0 };
            let b = if b > 0.0 { b } else { 0.0 };
            return Vector2::new(clamp(swing.x, a), clamp(swing.y, b));
        }
        let mut p = closest_point_on_ellipse(a, b, swing);
        // Guarantee `contains(p)` despite rounding, so projecting is
        // idempotent.
        for _ in 0..16 {
            let ratio = self.swing_ratio(&p);
            if ratio <= 1.0 {
                break;
            }
            p *= (1.0 / ratio.sqrt()).min(1.0 - f64::EPSILON);
        }
        p
    }

    /// The twist part of [`Self::project`].
    pub fn project_twist(&self, twist: f64) -> f64 {
        let (lo, hi) = (self.twist_min, self.twist_max);
        if (lo <= twist && twist <= hi) || twist.is_nan() {
            return twist;
        }
        if !(lo.is_finite() && hi.is_finite() && lo <= hi && twist.is_finite()) {
            return if twist < lo { lo } else { hi };
        }
        let shifted = twist + TAU * ((0.5 * (lo + hi) - twist) / TAU).round();
        if lo <= shifted && shifted <= hi {
            return shifted;
        }
        let angular = |d: f64| {
            let r = d - TAU * (d / TAU).round();
            r.abs().min(PI)
        };
        if angular(twist - lo) <= angular(twist - hi) {
            lo
        } else {
            hi
        }
    }
}

/// The closest point to `y` (outside) on the ellipse `(x/a)² + (y/b)² = 1`,
/// `a, b > 0`.
///
/// The closest point is `x_i = e_i² y_i / (t + e_i²)` where `t > 0` is the
/// root of `F(t) = Σ (e_i y_i / (t + e_i²))² − 1` (Lagrange condition), which
/// is strictly decreasing on `t ≥ 0` with `F(0) > 0` and `F(e_max |y|) ≤ 0`;
/// bisection brackets it robustly (Eberly, *Distance from a point to an
/// ellipse*).
fn closest_point_on_ellipse(a: f64, b: f64, y: &Vector2<f64>) -> Vector2<f64> {
    let e = [a, b];
    let z = [y.x.abs(), y.y.abs()];
    let f = |t: f64| {
        (0..2)
            .map(|i| (e[i] * z[i] / (t + e[i] * e[i])).powi(2))
            .sum::<f64>()
            - 1.0
    };
    let mut lo = 0.0;
    let mut hi = a.max(b) * z[0].hypot(z[1]);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if f(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let x = |i: usize| e[i] * e[i] * z[i] / (hi + e[i] * e[i]);
    Vector2::new(x(0).copysign(y.x), x(1).copysign(y.y))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{rotation_distance, unit_quaternion, unit_vector};
    use proptest::prelude::*;

    fn limit() -> impl Strategy<Value = SwingTwistLimit> {
        (0.05..2.5f64, 0.05..2.5f64, -3.0..3.0f64, 0.0..3.0f64).prop_map(|(a, b, lo, width)| {
            SwingTwistLimit::new(Vector2::new(a, b), lo, (lo + width).min(PI)).unwrap()
        })
    }

    #[test]
    fn default_swing_basis() {
        let f = SwingTwistFrame::new(Vector3::z_axis());
        let (u, w) = f.swing_axes();
        assert_eq!((u, w), (Vector3::x_axis(), Vector3::y_axis()));
        let f = SwingTwistFrame::new(Vector3::y_axis());
        let (u, w) = f.swing_axes();
        assert_eq!(u, Vector3::x_axis());
        assert!((w.into_inner() + Vector3::z()).norm() < 1e-15);
    }

    #[test]
    fn bad_swing_axes_are_errors() {
        let t = Vector3::z_axis();
        assert!(matches!(
            SwingTwistFrame::with_swing_axis(t, Vector3::new(0.0, 0.0, 2.0)),
            Err(RotationError::DegenerateAxis { field: "u", .. })
        ));
        assert!(matches!(
            SwingTwistFrame::with_swing_axis(t, Vector3::zeros()),
            Err(RotationError::DegenerateAxis { .. })
        ));
        assert!(matches!(
            SwingTwistFrame::with_swing_axis(t, Vector3::new(f64::NAN, 0.0, 0.0)),
            Err(RotationError::NonFinite { field: "u" })
        ));
        let f = SwingTwistFrame::with_swing_axis(t, Vector3::new(1.0, 1.0, 5.0)).unwrap();
        let expected = Vector3::new(1.0, 1.0, 0.0).normalize();
        assert!((f.swing_axes().0.into_inner() - expected).norm() < 1e-15);
    }

    #[test]
    fn swing_has_no_twist_and_twist_spins_the_limb_axis() {
        let f = SwingTwistFrame::new(Vector3::z_axis());
        // Pure twist leaves the limb axis fixed.
        let q = f.to_quaternion(Vector2::zeros(), 1.0);
        assert!((q * Vector3::z() - Vector3::z()).norm() < 1e-15);
        // Swing about u = x tilts the limb axis towards −y.
        let q = f.to_quaternion(Vector2::new(0.5, 0.0), 0.0);
        let tip = q * Vector3::z();
        assert!((tip - Vector3::new(0.0, -(0.5f64).sin(), 0.5f64.cos())).norm() < 1e-15);
    }

    #[test]
    fn invalid_limits_are_errors_and_do_not_panic() {
        let bad = [
            (Vector2::new(0.0, 1.0), -1.0, 1.0, "swing_half_angles.x"),
            (Vector2::new(1.0, -1.0), -1.0, 1.0, "swing_half_angles.y"),
            (Vector2::new(1.0, 1.0), 1.0, -1.0, "twist_min"),
            (Vector2::new(1.0, 1.0), f64::NAN, 1.0, "twist_min"),
        ];
        for (half, lo, hi, name) in bad {
            let err = SwingTwistLimit::new(half, lo, hi).unwrap_err();
            assert!(err.to_string().contains(name), "{err}");
            let limit = SwingTwistLimit {
                swing_half_angles: half,
                twist_min: lo,
                twist_max: hi,
            };
            let _ = limit.project(&Vector2::new(3.0, -3.0), 2.0);
            let _ = limit.contains(&Vector2::new(3.0, -3.0), 2.0);
        }
    }

    #[test]
    fn twist_projection_is_angular() {
        let limit = SwingTwistLimit::new(Vector2::new(1.0, 1.0), -0.5, 0.5).unwrap();
        assert_eq!(limit.project_twist(3.0), 0.5);
        assert_eq!(limit.project_twist(-3.0), -0.5);
        assert!((limit.project_twist(TAU + 0.1) - 0.1).abs() < 1e-15);
        let limit = SwingTwistLimit::new(Vector2::new(1.0, 1.0), 0.0, 1.0).unwrap();
        // −2.9 is 2.9 from 0 but only 2π − 3.9 ≈ 2.38 from 1 on the circle.
        assert_eq!(limit.project_twist(-2.9), 1.0);
        assert_eq!(limit.project_twist(-0.1), 0.0);
    }

    proptest! {
        #[test]
        fn frame_is_right_handed_orthonormal(t in unit_vector()) {
            let f = SwingTwistFrame::new(t);
            let (u, w) = f.swing_axes();
            prop_assert!(u.dot(&t).abs() < 1e-15 && w.dot(&t).abs() < 1e-15 && u.dot(&w).abs() < 1e-15);
            prop_assert!((u.cross(&w) - t.into_inner()).norm() < 1e-15);
        }

        #[test]
        fn decompose_compose_round_trip(
            t in unit_vector(),
            u in unit_vector(),
            angle in 0.0..PI - 1e-3,
            direction in 0.0..TAU,
            twist in -PI + 1e-3..PI - 1e-3,
        ) {
            prop_assume!(u.cross(&t).norm() > 1e-3);
            let f = SwingTwistFrame::with_swing_axis(t, u.into_inner()).unwrap();
            let swing = Vector2::new(direction.cos(), direction.sin()) * angle;
            let (s, tau) = f.from_quaternion(&f.to_quaternion(swing, twist));
            prop_assert!((s - swing).norm() < 1e-9 && (tau - twist).abs() < 1e-9,
                "({swing:?}, {twist}) -> ({s:?}, {tau})");
        }

        #[test]
        fn compose_decompose_round_trip(t in unit_vector(), q in unit_quaternion()) {
            let f = SwingTwistFrame::new(t);
            let (swing, twist) = f.from_quaternion(&q);
            prop_assert!(swing.norm() <= PI + 1e-12 && twist.abs() <= PI);
            prop_assert!(rotation_distance(&f.to_quaternion(swing, twist), &q) < 1e-12);
        }

        #[test]
        fn projection_lands_inside_is_closest_and_idempotent(
            limit in limit(),
            swing in prop::array::uniform2(-4.0..4.0f64),
            twist in -7.0..7.0f64,
        ) {
            let swing = Vector2::from(swing);
            let (s, tau) = limit.project(&swing, twist);
            prop_assert!(limit.contains(&s, tau), "{s:?} {tau} outside {limit:?}");
            prop_assert_eq!(limit.project(&s, tau), (s, tau));
            if limit.contains(&swing, twist) {
                prop_assert_eq!((s, tau), (swing, twist));
            }
            // No sampled boundary or interior point of the ellipse is closer.
            let d = (s - swing).norm();
            let (a, b) = (limit.swing_half_angles.x, limit.swing_half_angles.y);
            for i in 0..2000 {
                let phi = TAU * f64::from(i) / 2000.0;
                let boundary = Vector2::new(a * phi.cos(), b * phi.sin());
                prop_assert!(d <= (boundary - swing).norm() + 1e-9);
            }
            // The twist is the closest allowed angle on the circle.
            let angular = |x: f64| { let r = x - TAU * (x / TAU).round(); r.abs() };
            let dt = angular(tau - twist);
            for i in 0..=200 {
                let candidate = limit.twist_min + (limit.twist_max - limit.twist_min) * f64::from(i) / 200.0;
                prop_assert!(dt <= angular(candidate - twist) + 1e-12);
            }
        }
    }
}

//! Euler angles in any axis order, as used by BVH motion files.
//!
//! # Convention
//!
//! An [`EulerOrder`] `[a₀, a₁, a₂]` with angles `[θ₀, θ₁, θ₂]` (radians) is
//! the rotation
//!
//! ```text
//! R = R_{a₀}(θ₀) · R_{a₁}(θ₁) · R_{a₂}(θ₂)
//! ```
//!
//! acting on column vectors: the first channel listed in a BVH file is the
//! outermost factor (intrinsic rotations in listed order, equivalently
//! extrinsic in reverse order). Both the six Tait–Bryan orders (all axes
//! distinct, e.g. `ZXY`) and the six proper Euler orders (`a₀ = a₂`, e.g.
//! `ZXZ`) are supported; orders with two equal consecutive axes are not Euler
//! orders (they span only two degrees of freedom).
//!
//! # Inverse (principal branch)
//!
//! Writing `i = a₀`, `j = a₁`, `k` the remaining axis and `σ = ±1` the parity
//! of the permutation `(i, j, k)`:
//!
//! - Tait–Bryan: `θ₁ = asin(σ R_ik) ∈ [−π/2, π/2]` (computed with `atan2` for
//!   accuracy), `θ₂ = atan2(−σ R_ij, R_ii)`;
//! - proper Euler: `θ₁ = atan2(√(R_ij² + R_ik²), R_ii) ∈ [0, π]`,
//!   `θ₂ = atan2(R_ij, σ R_ik)`;
//!
//! and in both cases `θ₀` is read off the remainder
//! `R · R_{a₂}(θ₂)ᵀ · R_{a₁}(θ₁)ᵀ = R_{a₀}(θ₀)`. Deriving `θ₀` from the remainder
//! keeps the triple consistent even where `θ₂` is ill-conditioned: in gimbal
//! lock (`cos θ₁ = 0`, resp. `sin θ₁ = 0`) only `θ₀ ± θ₂` is determined, we set
//! `θ₂ = 0` and the remainder gives `θ₀` — no NaN anywhere.
//!
//! # Continuity
//!
//! Every rotation has two Euler triples per branch modulo 2π: the principal
//! one and `(θ₀ + π, π − θ₁, θ₂ + π)` (Tait–Bryan) or `(θ₀ + π, −θ₁, θ₂ + π)`
//! (proper). [`from_quaternion_near`] picks, among these and all their `2πk`
//! shifts, the triple closest to a previous one (the Euler analogue of
//! EXPMAP §4.2's `log_near`); in gimbal lock it also chooses the split of
//! `θ₀ ± θ₂` closest to the previous triple.

use std::f64::consts::{PI, TAU};

use nalgebra::{Matrix3, Unit, UnitQuaternion, Vector3};

use crate::RotationError;

/// A coordinate axis.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Axis {
    /// The x axis.
    X,
    /// The y axis.
    Y,
    /// The z axis.
    Z,
}

impl Axis {
    /// The axis as an index 0, 1, 2.
    pub fn index(self) -> usize {
        match self {
            Axis::X => 0,
            Axis::Y => 1,
            Axis::Z => 2,
        }
    }

    /// The unit vector along the axis.
    pub fn unit(self) -> Unit<Vector3<f64>> {
        match self {
            Axis::X => Vector3::x_axis(),
            Axis::Y => Vector3::y_axis(),
            Axis::Z => Vector3::z_axis(),
        }
    }

    /// The rotation by `angle` radians about this axis.
    pub fn rotation(self, angle: f64) -> UnitQuaternion<f64> {
        UnitQuaternion::from_axis_angle(&self.unit(), angle)
    }
}

/// An Euler axis order `[a₀, a₁, a₂]`: `R = R_{a₀}(θ₀) R_{a₁}(θ₁) R_{a₂}(θ₂)`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct EulerOrder(pub [Axis; 3]);

impl EulerOrder {
    /// `R_x R_y R_z`.
    pub const XYZ: EulerOrder = EulerOrder([Axis::X, Axis::Y, Axis::Z]);
    /// `R_x R_z R_y`.
    pub const XZY: EulerOrder = EulerOrder([Axis::X, Axis::Z, Axis::Y]);
    /// `R_y R_x R_z`.
    pub const YXZ: EulerOrder = EulerOrder([Axis::Y, Axis::X, Axis::Z]);
    /// `R_y R_z R_x`.
    pub const YZX: EulerOrder = EulerOrder([Axis::Y, Axis::Z, Axis::X]);
    /// `R_z R_x R_y` (the usual BVH joint order).
    pub const ZXY: EulerOrder = EulerOrder([Axis::Z, Axis::X, Axis::Y]);
    /// `R_z R_y R_x`.
    pub const ZYX: EulerOrder = EulerOrder([Axis::Z, Axis::Y, Axis::X]);
    /// The six Tait–Bryan orders.
    pub const TAIT_BRYAN: [EulerOrder; 6] = [
        Self::XYZ,
        Self::XZY,
        Self::YXZ,
        Self::YZX,
        Self::ZXY,
        Self::ZYX,
    ];
    /// The six proper Euler orders (`a₀ = a₂`).
    pub const PROPER: [EulerOrder; 6] = [
        EulerOrder([Axis::X, Axis::Y, Axis::X]),
        EulerOrder([Axis::X, Axis::Z, Axis::X]),
        EulerOrder([Axis::Y, Axis::X, Axis::Y]),
        EulerOrder([Axis::Y, Axis::Z, Axis::Y]),
        EulerOrder([Axis::Z, Axis::X, Axis::Z]),
        EulerOrder([Axis::Z, Axis::Y, Axis::Z]),
    ];

    /// A validated order: consecutive axes must differ.
    pub fn new(axes: [Axis; 3]) -> Result<Self, RotationError> {
        let order = EulerOrder(axes);
        if order.is_valid() {
            Ok(order)
        } else {
            Err(RotationError::InvalidEulerOrder { axes })
        }
    }

    /// Whether consecutive axes differ (Tait–Bryan or proper Euler).
    pub fn is_valid(self) -> bool {
        self.0[0] != self.0[1] && self.0[1] != self.0[2]
    }

    /// Whether all three axes differ.
    pub fn is_tait_bryan(self) -> bool {
        self.is_valid() && self.0[0] != self.0[2]
    }
}

/// `R_{a₀}(θ₀) · R_{a₁}(θ₁) · R_{a₂}(θ₂)` as a quaternion (BVH convention,
/// radians). Works for any axes, valid order or not.
pub fn to_quaternion(order: EulerOrder, angles: [f64; 3]) -> UnitQuaternion<f64> {
    let [a0, a1, a2] = order.0;
    a0.rotation(angles[0]) * a1.rotation(angles[1]) * a2.rotation(angles[2])
}

/// Wraps an angle into `(−π, π]`.
fn wrap(angle: f64) -> f64 {
    let a = angle - TAU * (angle / TAU).round();
    if a <= -PI { a + TAU } else { a }
}

/// The `2πk` shift of `angle` closest to `target`.
fn wrap_near(angle: f64, target: f64) -> f64 {
    angle + TAU * ((target - angle) / TAU).round()
}

/// The angle of a rotation known to be about `axis`, from its quaternion.
fn angle_about(axis: Axis, q: &UnitQuaternion<f64>) -> f64 {
    let q = q.quaternion();
    wrap(2.0 * q.imag()[axis.index()].atan2(q.w))
}

/// Below this, `|cos θ₁|` (Tait–Bryan) or `|sin θ₁|` (proper) counts as gimbal
/// lock and `θ₂` is set to 0; the remainder still gives an exact `θ₀`.
const GIMBAL_BELOW: f64 = 1e-12;

/// The decomposition's middle angle and whether it is in gimbal lock, plus
/// the principal `θ₂`.
fn middle_and_last(order: EulerOrder, r: &Matrix3<f64>) -> (f64, f64, bool) {
    let [a0, a1, a2] = order.0;
    let i = a0.index();
    let j = a1.index();
    let k = 3 - i - j;
    // Parity of (i, j, k): +1 for cyclic (xyz, yzx, zxy), −1 otherwise.
    let sigma = if (i + 1) % 3 == j { 1.0 } else { -1.0 };
    if a0 != a2 {
        let lateral = r[(i, i)].hypot(r[(i, j)]);
        let middle = (sigma * r[(i, k)]).atan2(lateral);
        let locked = lateral < GIMBAL_BELOW;
        let last = if locked {
            0.0
        } else {
            (-sigma * r[(i, j)]).atan2(r[(i, i)])
        };
        (middle, last, locked)
    } else {
        let lateral = r[(i, j)].hypot(r[(i, k)]);
        let middle = lateral.atan2(r[(i, i)]);
        let locked = lateral < GIMBAL_BELOW;
        let last = if locked {
            0.0
        } else {
            r[(i, j)].atan2(sigma * r[(i, k)])
        };
        (middle, last, locked)
    }
}

/// `θ₀` given `θ₁`, `θ₂`: the angle of `q · R_{a₂}(θ₂)⁻¹ · R_{a₁}(θ₁)⁻¹`.
fn first_angle(order: EulerOrder, q: &UnitQuaternion<f64>, middle: f64, last: f64) -> f64 {
    let [a0, a1, a2] = order.0;
    let rest = q * a2.rotation(-last) * a1.rotation(-middle);
    angle_about(a0, &rest)
}

/// The Euler angles of `q` on the principal branch: `θ₀, θ₂ ∈ (−π, π]` and
/// `θ₁ ∈ [−π/2, π/2]` (Tait–Bryan) or `[0, π]` (proper Euler). In gimbal lock
/// `θ₂ = 0`. For an invalid order (equal consecutive axes) the result is NaN.
pub fn from_quaternion(order: EulerOrder, q: &UnitQuaternion<f64>) -> [f64; 3] {
    if !order.is_valid() {
        return [f64::NAN; 3];
    }
    let r = q.to_rotation_matrix().into_inner();
    let (middle, last, _) = middle_and_last(order, &r);
    [first_angle(order, q, middle, last), middle, last]
}

/// The Euler angles of `q` closest (Euclidean in ℝ³) to `previous`, among the
/// two branches and all their `2πk` shifts (see the module docs). In gimbal
/// lock, where only `θ₀ ± θ₂` is determined, the split closest to `previous`
/// is chosen. A non-finite `previous` gives [`from_quaternion`]; an invalid
/// order gives NaN.
pub fn from_quaternion_near(
    order: EulerOrder,
    q: &UnitQuaternion<f64>,
    previous: [f64; 3],
) -> [f64; 3] {
    if !order.is_valid() {
        return [f64::NAN; 3];
    }
    if !previous.iter().all(|a| a.is_finite()) {
        return from_quaternion(order, q);
    }
    let [a0, a1, a2] = order.0;
    let r = q.to_rotation_matrix().into_inner();
    let (middle, last, locked) = middle_and_last(order, &r);
    let alternative_middle = if a0 != a2 { PI - middle } else { -middle };
    let candidates = [(middle, last), (alternative_middle, last + PI)];

    let mut best = [f64::NAN; 3];
    let mut best_distance = f64::INFINITY;
    for (middle, last) in candidates {
        let middle = wrap_near(middle, previous[1]);
        let last = if locked {
            // R = R_{a₀}(θ₀ + s θ₂) R_{a₁}(θ₁) with s = (R_{a₁}(θ₁) e_{a₂}) · e_{a₀}
            // = ±1: with θ₂ = previous θ₂ + δ, θ₀ moves by −s δ, and the
            // distance is least at δ = s (θ₀(prev θ₂) − prev θ₀)/2.
            let s = (a1.rotation(middle) * a2.unit().into_inner())[a0.index()].signum();
            let first = wrap_near(first_angle(order, q, middle, previous[2]), previous[0]);
            previous[2] + s * (first - previous[0]) / 2.0
        } else {
            wrap_near(last, previous[2])
        };
        let first = wrap_near(first_angle(order, q, middle, last), previous[0]);
        let candidate = [first, middle, last];
        let distance: f64 = (0..3).map(|n| (candidate[n] - previous[n]).powi(2)).sum();
        if distance < best_distance {
            best_distance = distance;
            best = candidate;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{rotation_distance, unit_quaternion};
    use nalgebra::Rotation3;
    use proptest::prelude::*;

    /// All twelve valid orders.
    fn orders() -> impl Iterator<Item = EulerOrder> {
        EulerOrder::TAIT_BRYAN.into_iter().chain(EulerOrder::PROPER)
    }

    fn all_orders() -> impl Strategy<Value = EulerOrder> {
        prop::sample::select(orders().collect::<Vec<_>>())
    }

    /// The other branch of the same rotation (module docs).
    fn alternative(order: EulerOrder, [a, b, c]: [f64; 3]) -> [f64; 3] {
        if order.is_tait_bryan() {
            [a + PI, PI - b, c + PI]
        } else {
            [a + PI, -b, c + PI]
        }
    }

    /// `|cos θ₁|` (Tait–Bryan) or `|sin θ₁|` (proper): 0 in gimbal lock.
    fn lock_distance(order: EulerOrder, middle: f64) -> f64 {
        if order.is_tait_bryan() {
            middle.cos().abs()
        } else {
            middle.sin().abs()
        }
    }

    fn distance(a: [f64; 3], b: [f64; 3]) -> f64 {
        (0..3).map(|i| (a[i] - b[i]).powi(2)).sum::<f64>().sqrt()
    }

    #[test]
    fn bvh_convention_is_the_matrix_product() {
        let angles = [0.3, -1.1, 2.0];
        let q = to_quaternion(EulerOrder::ZXY, angles);
        let expected = Rotation3::from_axis_angle(&Vector3::z_axis(), 0.3)
            * Rotation3::from_axis_angle(&Vector3::x_axis(), -1.1)
            * Rotation3::from_axis_angle(&Vector3::y_axis(), 2.0);
        assert!((q.to_rotation_matrix().into_inner() - expected.into_inner()).norm() < 1e-15);
    }

    #[test]
    fn invalid_orders_are_rejected() {
        let axes = [Axis::X, Axis::X, Axis::Y];
        assert_eq!(
            EulerOrder::new(axes),
            Err(RotationError::InvalidEulerOrder { axes })
        );
        let angles = from_quaternion(EulerOrder(axes), &UnitQuaternion::identity());
        assert!(angles.iter().all(|a| a.is_nan()));
        assert!(EulerOrder::new([Axis::Z, Axis::X, Axis::Z]).is_ok());
        assert_eq!(Axis::Y.unit(), Vector3::y_axis());
    }

    #[test]
    fn gimbal_lock_gives_finite_angles_and_zero_last_angle() {
        for order in EulerOrder::TAIT_BRYAN {
            for middle in [PI / 2.0, -PI / 2.0] {
                let q = to_quaternion(order, [0.4, middle, -0.9]);
                let angles = from_quaternion(order, &q);
                assert!(angles.iter().all(|a| a.is_finite()), "{order:?}");
                assert_eq!(angles[2], 0.0);
                assert!(rotation_distance(&to_quaternion(order, angles), &q) < 1e-12);
            }
        }
        for order in EulerOrder::PROPER {
            for middle in [0.0, PI] {
                let q = to_quaternion(order, [0.4, middle, -0.9]);
                let angles = from_quaternion(order, &q);
                assert!(angles.iter().all(|a| a.is_finite()), "{order:?}");
                assert!(rotation_distance(&to_quaternion(order, angles), &q) < 1e-12);
            }
        }
    }

    proptest! {
        /// Every order: `to_quaternion ∘ from_quaternion` is the identity on
        /// rotations, with angles on the principal branch.
        #[test]
        fn rotation_round_trip(q in unit_quaternion()) {
            for order in orders() {
                let angles = from_quaternion(order, &q);
                prop_assert!(angles.iter().all(|a| a.is_finite()));
                prop_assert!(angles[0].abs() <= PI && angles[2].abs() <= PI);
                if order.is_tait_bryan() {
                    prop_assert!(angles[1].abs() <= PI / 2.0 + 1e-15);
                } else {
                    prop_assert!((0.0..=PI).contains(&angles[1]));
                }
                prop_assert!(rotation_distance(&to_quaternion(order, angles), &q) < 1e-12);
            }
        }

        /// Every order: `from_quaternion ∘ to_quaternion` is the identity on
        /// principal-branch angles away from gimbal lock.
        #[test]
        fn angle_round_trip_on_the_principal_branch(
            a in -PI + 1e-9..PI,
            t in 0.0..1.0f64,
            c in -PI + 1e-9..PI,
        ) {
            for order in orders() {
                let middle = if order.is_tait_bryan() { -PI / 2.0 + PI * t } else { PI * t };
                if lock_distance(order, middle) < 1e-6 {
                    continue;
                }
                let angles = [a, middle, c];
                let back = from_quaternion(order, &to_quaternion(order, angles));
                prop_assert!(distance(back, angles) < 1e-9, "{order:?}: {angles:?} -> {back:?}");
            }
        }

        #[test]
        fn alternative_branch_is_the_same_rotation(
            order in all_orders(),
            angles in prop::array::uniform3(-7.0..7.0f64),
        ) {
            let q = to_quaternion(order, angles);
            let r = to_quaternion(order, alternative(order, angles));
            prop_assert!(rotation_distance(&q, &r) < 1e-12);
        }

        /// Any previous triple: the result is the same rotation and at least as
        /// close to `previous` as both branches shifted near it.
        #[test]
        fn near_is_the_same_rotation_and_no_farther_than_the_branches(
            order in all_orders(),
            q in unit_quaternion(),
            previous in prop::array::uniform3(-10.0..10.0f64),
        ) {
            let near = from_quaternion_near(order, &q, previous);
            prop_assert!(rotation_distance(&to_quaternion(order, near), &q) < 1e-11);
            let principal = from_quaternion(order, &q);
            for branch in [principal, alternative(order, principal)] {
                let shifted: [f64; 3] = std::array::from_fn(|i| wrap_near(branch[i], previous[i]));
                prop_assert!(distance(near, previous) <= distance(shifted, previous) + 1e-9);
            }
        }

        /// Continuity: a small step from any triple (any branch, any 2πk) is
        /// recovered exactly away from gimbal lock.
        #[test]
        fn near_recovers_small_steps(
            order in all_orders(),
            previous in prop::array::uniform3(-10.0..10.0f64),
            step in prop::array::uniform3(-0.01..0.01f64),
        ) {
            let target: [f64; 3] = std::array::from_fn(|i| previous[i] + step[i]);
            prop_assume!(lock_distance(order, target[1]) > 0.05);
            let near = from_quaternion_near(order, &to_quaternion(order, target), previous);
            prop_assert!(distance(near, target) < 1e-9, "{target:?} -> {near:?}");
        }

        /// In gimbal lock only `θ₀ + σθ₂` (σ = ±1) is determined; the result is
        /// the point of that line closest to `previous`.
        #[test]
        fn near_in_gimbal_lock_splits_closest_to_previous(
            order in all_orders(),
            a in -10.0..10.0f64,
            c in -10.0..10.0f64,
            d in -1.0..1.0f64,
            e in -1.0..1.0f64,
            lock in prop::sample::select(vec![0usize, 1]),
        ) {
            let middle = match (order.is_tait_bryan(), lock) {
                (true, 0) => PI / 2.0,
                (true, _) => -PI / 2.0,
                (false, 0) => 0.0,
                (false, _) => PI,
            };
            let q = to_quaternion(order, [a + d, middle, c + e]);
            // σ: shifting θ₀ by σ·0.3 and θ₂ by −0.3 keeps the rotation.
            let sigma = if rotation_distance(&to_quaternion(order, [a + d + 0.3, middle, c + e - 0.3]), &q) < 1e-9 {
                1.0
            } else {
                -1.0
            };
            let residual = d + sigma * e;
            let expected = [a + residual / 2.0, middle, c + sigma * residual / 2.0];
            let previous = [a, middle, c];
            let near = from_quaternion_near(order, &q, previous);
            prop_assert!(near.iter().all(|x| x.is_finite()));
            prop_assert!(distance(near, expected) < 1e-9, "{previous:?} -> {near:?}, expected {expected:?}");
        }
    }
}

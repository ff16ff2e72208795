//! The exponential map from ℝ³ to unit quaternions, its inverse, its
//! derivatives, and dynamic reparameterisation (EXPMAP §3–§4).
//!
//! # The map
//!
//! A vector `v ∈ ℝ³` with `θ = |v|` encodes a rotation by `θ` about `v/θ`
//! (EXPMAP §3):
//!
//! ```text
//! exp(v) = ( cos(θ/2),  s(θ) · v ),      s(θ) = sin(θ/2) / θ
//! ```
//!
//! written (w, xyz). `s` is a sinc and is evaluated robustly: below
//! `θ = ε^{1/4}` (ε the machine epsilon) its Taylor series
//! `s(θ) = 1/2 − θ²/48 + θ⁴/3840 − …` is exact to machine precision, since the
//! first dropped term is below `ε` relative to `1/2` (EXPMAP §3, the
//! "machine precision" rule).
//!
//! Quaternions act on column vectors as `x' = q x q*` (nalgebra's
//! `UnitQuaternion * Vector3`), and `q₂ · q₁` means "first `q₁`, then `q₂`".
//!
//! # The log map
//!
//! [`log`] inverts `exp` on the ball `|v| ≤ π` by choosing the hemisphere
//! `w ≥ 0` (the shortest arc: `q` and `−q` are the same rotation) and
//! `θ = 2·atan2(|xyz|, w)`. [`log_near`] instead picks, among the infinitely
//! many preimages `(θ + 2πk)·â`, the one closest to a previous vector, which is
//! what keyframe interpolation in ℝ³ needs (EXPMAP §4.2).
//!
//! # Derivatives (EXPMAP §3.1)
//!
//! Differentiating `q = exp(v)` (derived again here; the printed formulas are
//! garbled in our copy):
//!
//! ```text
//! ∂q_w / ∂v_k = −½ s(θ) v_k
//! ∂q_i / ∂v_k = s(θ) δ_ik + c(θ) v_i v_k,   c(θ) = (½cos(θ/2) − s(θ)) / θ²
//! ```
//!
//! `c` suffers catastrophic cancellation for small `θ`, so below `θ = 0.1` it is
//! evaluated from its series `c(θ) = Σ_{n≥1} (−1)ⁿ 2n θ^{2n−2} / (2^{2n+1}(2n+1)!)
//! = −1/24 + θ²/960 − θ⁴/107520 + θ⁶/23224320 − …` (EXPMAP §3.1's small-angle
//! forms). The rotation-matrix partials follow by the chain rule
//! `∂R/∂v_k = Σ_m ∂R/∂q_m · ∂q_m/∂v_k` (EXPMAP §3.1).
//!
//! # Singularities and reparameterisation (EXPMAP §3.2.1)
//!
//! `exp` is singular on the shells `|v| = 2πn`, `n ≥ 1`. Every rotation has a
//! representative with `|v| ≤ π`, and [`reparameterize`] maps `v` with
//! `|v| > π` to the equivalent `v(1 − 2π/|v|)` (for `|v| < 3π`; larger vectors
//! are reduced by the appropriate multiple of 2π in one step).
//!
//! # Angular velocity (EXPMAP §4.1)
//!
//! With `ω` the angular velocity **in the world (parent) frame**, i.e.
//! `q̇ = ½ ω q` (EXPMAP §4.1's convention, quaternions acting on column
//! vectors), the exp-map velocity is `v̇ = J_l(v)⁻¹ ω`, the inverse of the
//! left Jacobian of SO(3):
//!
//! ```text
//! v̇ = γ ω + ((1 − γ)/θ²) (v·ω) v − ½ v × ω,     γ = (θ/2) cot(θ/2)
//! ```
//!
//! For the body-frame velocity (`q̇ = ½ q ω_b`) the cross term changes sign
//! ([`vdot_from_body_omega`]). `(1 − γ)/θ² = 1/12 + θ²/720 + θ⁴/30240 +
//! θ⁶/1209600 + …` is used below `θ = 0.1`. The formula is singular at
//! `|v| = 2π`; reparameterise first.

use std::f64::consts::{PI, TAU};

use nalgebra::{Matrix3, Quaternion, UnitQuaternion, Vector3};

/// Below this angle the sinc `sin(θ/2)/θ` uses its Taylor series: `ε^{1/4}`,
/// where the dropped `θ⁶` term is far below machine precision (EXPMAP §3).
const SINC_TAYLOR_BELOW: f64 = 1.220_703_125e-4; // f64::EPSILON.powf(0.25)

/// Below this angle the cancellation-prone coefficients `c(θ)` (EXPMAP §3.1)
/// and `(1 − γ)/θ²` (EXPMAP §4.1) use their series.
const SERIES_BELOW: f64 = 0.1;

/// Below this `|xyz|` the log map uses the series of `atan(x)/x`.
const LOG_SERIES_BELOW: f64 = 1e-6;

/// `s(θ) = sin(θ/2)/θ`, the robust sinc of EXPMAP §3.
#[inline]
pub(crate) fn half_sinc(theta: f64) -> f64 {
    if theta < SINC_TAYLOR_BELOW {
        let t2 = theta * theta;
        0.5 - t2 / 48.0 + t2 * t2 / 3840.0
    } else {
        (0.5 * theta).sin() / theta
    }
}

/// `c(θ) = (½ cos(θ/2) − s(θ)) / θ²`, the coefficient of `v_i v_k` in
/// `∂q_i/∂v_k` (EXPMAP §3.1).
#[inline]
fn partial_coefficient(theta: f64) -> f64 {
    if theta < SERIES_BELOW {
        let t2 = theta * theta;
        -1.0 / 24.0 + t2 * (1.0 / 960.0 + t2 * (-1.0 / 107_520.0 + t2 / 23_224_320.0))
    } else {
        (0.5 * (0.5 * theta).cos() - half_sinc(theta)) / (theta * theta)
    }
}

/// The exponential map ℝ³ → S³ (EXPMAP §3): a rotation by `|v|` about `v/|v|`.
///
/// Non-finite input gives a non-finite quaternion (no panic).
pub fn exp(v: &Vector3<f64>) -> UnitQuaternion<f64> {
    let theta = v.norm();
    let (c, s) = if theta < EXP_POLYNOMIAL_BELOW {
        half_angle_series(theta)
    } else {
        ((0.5 * theta).cos(), half_sinc(theta))
    };
    UnitQuaternion::new_unchecked(Quaternion::new(c, s * v.x, s * v.y, s * v.z))
}

/// Below this angle [`exp`] evaluates `cos(θ/2)` and `sin(θ/2)/θ` by their
/// Taylor polynomials (the random-walk steps of the particle filters are
/// small angles, and this avoids two libm calls per step).
const EXP_POLYNOMIAL_BELOW: f64 = 0.5;

/// `(cos(θ/2), sin(θ/2)/θ)` by Taylor polynomials in `x = θ/2`, through
/// `x¹⁴`: for `θ < 0.5` the first dropped terms are below 10⁻²³, far under
/// the rounding error.
#[inline]
fn half_angle_series(theta: f64) -> (f64, f64) {
    // cos x = Σ (−1)ⁿ x²ⁿ/(2n)!,  sin x / x = Σ (−1)ⁿ x²ⁿ/(2n+1)!, in Horner
    // form with constant coefficients (multiplications only).
    const C: [f64; 8] = [
        1.0,
        -1.0 / 2.0,
        1.0 / 24.0,
        -1.0 / 720.0,
        1.0 / 40_320.0,
        -1.0 / 3_628_800.0,
        1.0 / 479_001_600.0,
        -1.0 / 87_178_291_200.0,
    ];
    const S: [f64; 8] = [
        1.0,
        -1.0 / 6.0,
        1.0 / 120.0,
        -1.0 / 5_040.0,
        1.0 / 362_880.0,
        -1.0 / 39_916_800.0,
        1.0 / 6_227_020_800.0,
        -1.0 / 1_307_674_368_000.0,
    ];
    let x2 = 0.25 * theta * theta;
    let horner = |c: &[f64; 8]| c.iter().rev().fold(0.0, |acc, &k| acc * x2 + k);
    // sin(θ/2)/θ = ½ · sin(x)/x.
    (horner(&C), 0.5 * horner(&S))
}

/// The log map S³ → ℝ³ with the shortest-arc choice: `|log(q)| ≤ π` and
/// `exp(log(q)) = ±q` (EXPMAP §3, §4.1).
pub fn log(q: &UnitQuaternion<f64>) -> Vector3<f64> {
    let q = q.quaternion();
    let (w, xyz) = if q.w < 0.0 {
        (-q.w, -q.imag())
    } else {
        (q.w, q.imag())
    };
    let n = xyz.norm();
    let factor = if n < LOG_SERIES_BELOW {
        // 2·atan(x)/n with x = n/w: 2/w · (1 − x²/3 + …); here w ≈ 1.
        let x2 = (n / w) * (n / w);
        2.0 / w * (1.0 - x2 / 3.0)
    } else {
        2.0 * n.atan2(w) / n
    };
    xyz * factor
}

/// The log map choosing, among all preimages of `q` under [`exp`], the one
/// closest (Euclidean) to `previous` (EXPMAP §4.2).
///
/// The preimages of a rotation by `θ ∈ (0, π]` about `â` are `(θ + 2πk)·â`,
/// `k ∈ ℤ`; the closest one has `θ + 2πk` nearest to `previous · â`, so the
/// result's component along `â` is within π of `previous`'s. For the identity
/// the preimages are the shells `2πk·n̂` for every direction `n̂`, and the
/// closest lies along `previous`. A non-finite `previous` gives [`log`]`(q)`.
pub fn log_near(q: &UnitQuaternion<f64>, previous: &Vector3<f64>) -> Vector3<f64> {
    let v = log(q);
    if !(previous.x.is_finite() && previous.y.is_finite() && previous.z.is_finite()) {
        return v;
    }
    let theta = v.norm();
    if theta == 0.0 {
        let p = previous.norm();
        if p == 0.0 {
            return v;
        }
        let k = (p / TAU).round();
        return previous * (k * TAU / p);
    }
    let axis = v / theta;
    let along = previous.dot(&axis);
    let k = ((along - theta) / TAU).round();
    axis * (theta + k * TAU)
}

/// Dynamic reparameterisation (EXPMAP §3.2.1): a vector with `|v| > π` is
/// replaced by the equivalent `v(1 − 2π/|v|)`, generalised to
/// `v(1 − 2πk/|v|)` with `k = round(|v|/2π)` so the result always has
/// `|v| ≤ π`. Vectors with `|v| ≤ π` (and non-finite ones) are returned as is.
pub fn reparameterize(v: &Vector3<f64>) -> Vector3<f64> {
    let theta = v.norm();
    if theta.is_nan() || theta <= PI || theta.is_infinite() {
        return *v;
    }
    let k = (theta / TAU).round();
    v * (1.0 - k * TAU / theta)
}

/// The partial derivatives `∂q/∂v_k`, `k = 0, 1, 2`, of `q = exp(v)`
/// (EXPMAP §3.1), including the small-angle series.
pub fn exp_partials(v: &Vector3<f64>) -> [Quaternion<f64>; 3] {
    let theta = v.norm();
    let s = half_sinc(theta);
    let c = partial_coefficient(theta);
    std::array::from_fn(|k| {
        let mut imag = v * (c * v[k]);
        imag[k] += s;
        Quaternion::new(-0.5 * s * v[k], imag.x, imag.y, imag.z)
    })
}

/// The derivative of the rotation matrix of a unit quaternion `q` in the
/// direction `dq` (the derivative of Shoemake's quaternion-to-matrix formula,
/// valid for `dq` tangent to S³).
fn rotation_matrix_differential(q: &Quaternion<f64>, dq: &Quaternion<f64>) -> Matrix3<f64> {
    let (w, x, y, z) = (q.w, q.i, q.j, q.k);
    let (dw, dx, dy, dz) = (dq.w, dq.i, dq.j, dq.k);
    Matrix3::new(
        -4.0 * (y * dy + z * dz),
        2.0 * (dx * y + x * dy - dw * z - w * dz),
        2.0 * (dx * z + x * dz + dw * y + w * dy),
        2.0 * (dx * y + x * dy + dw * z + w * dz),
        -4.0 * (x * dx + z * dz),
        2.0 * (dy * z + y * dz - dw * x - w * dx),
        2.0 * (dx * z + x * dz - dw * y - w * dy),
        2.0 * (dy * z + y * dz + dw * x + w * dx),
        -4.0 * (x * dx + y * dy),
    )
}

/// The rotation-matrix Jacobian `∂R/∂v_k`, `k = 0, 1, 2`, of `R = R(exp(v))`
/// by the chain rule through the quaternion (EXPMAP §3.1).
pub fn rotation_matrix_partials(v: &Vector3<f64>) -> [Matrix3<f64>; 3] {
    let q = exp(v);
    let dq = exp_partials(v);
    std::array::from_fn(|k| rotation_matrix_differential(q.quaternion(), &dq[k]))
}

/// `(1 − γ)/θ²` with `γ = (θ/2) cot(θ/2)` (EXPMAP §4.1), robust near 0.
#[inline]
fn vdot_coefficients(theta: f64) -> (f64, f64) {
    if theta < SERIES_BELOW {
        let t2 = theta * theta;
        let k = 1.0 / 12.0 + t2 * (1.0 / 720.0 + t2 * (1.0 / 30_240.0 + t2 / 1_209_600.0));
        (1.0 - k * t2, k)
    } else {
        let half = 0.5 * theta;
        let gamma = half * half.cos() / half.sin();
        (gamma, (1.0 - gamma) / (theta * theta))
    }
}

/// `v̇` from the angular velocity `ω` expressed in the **world (parent)
/// frame**, i.e. `q̇ = ½ ω q` (EXPMAP §4.1):
/// `v̇ = γ ω + ((1 − γ)/θ²)(v·ω) v − ½ v × ω`, `γ = (θ/2)cot(θ/2)`.
///
/// Over a small step `dt`, `exp(v + v̇ dt) ≈ exp(ω dt) · exp(v)`. Singular at
/// `|v| = 2π`: call [`reparameterize`] first.
pub fn vdot_from_omega(v: &Vector3<f64>, omega: &Vector3<f64>) -> Vector3<f64> {
    let (gamma, k) = vdot_coefficients(v.norm());
    omega * gamma + v * (k * v.dot(omega)) - v.cross(omega) * 0.5
}

/// `v̇` from the angular velocity `ω_b` expressed in the **body (local)
/// frame**, i.e. `q̇ = ½ q ω_b`: the same as [`vdot_from_omega`] with the sign
/// of the cross term flipped, `v̇ = J_r(v)⁻¹ ω_b`. Over a small step,
/// `exp(v + v̇ dt) ≈ exp(v) · exp(ω_b dt)`.
pub fn vdot_from_body_omega(v: &Vector3<f64>, omega_body: &Vector3<f64>) -> Vector3<f64> {
    let (gamma, k) = vdot_coefficients(v.norm());
    omega_body * gamma + v * (k * v.dot(omega_body)) + v.cross(omega_body) * 0.5
}

#[cfg(test)]
mod tests {
    #[test]
    fn half_angle_series_matches_libm() {
        for i in 0..=500 {
            let theta = 0.5 * i as f64 / 500.0;
            let (c, s) = super::half_angle_series(theta);
            assert!((c - (0.5 * theta).cos()).abs() <= 2e-16, "{theta}");
            if theta > 0.0 {
                assert!((s - (0.5 * theta).sin() / theta).abs() <= 2e-16, "{theta}");
            }
        }
    }

    use super::*;
    use crate::testing::{expmap_vector, rotation_distance, unit_quaternion, vector_with_length};
    use nalgebra::Normed;
    use proptest::prelude::*;

    /// Checks `analytic[k] = ∂f/∂v_k` against central finite differences
    /// of `f` at `v` (step 1e-5): the errors of the three partials, summed
    /// in squares, within 1e-6 of their size.
    fn check_partials<T>(
        v: &Vector3<f64>,
        analytic: &[T; 3],
        f: impl Fn(&Vector3<f64>) -> T,
    ) -> Result<(), TestCaseError>
    where
        T: Copy + std::ops::Sub<Output = T> + std::ops::Mul<f64, Output = T> + Normed<Norm = f64>,
    {
        let h = 1e-5;
        let numeric: [T; 3] = std::array::from_fn(|k| {
            let mut plus = *v;
            let mut minus = *v;
            plus[k] += h;
            minus[k] -= h;
            (f(&plus) - f(&minus)) * (0.5 / h)
        });
        let error: f64 = (0..3)
            .map(|k| (analytic[k] - numeric[k]).norm_squared())
            .sum();
        let size: f64 = (0..3).map(|k| analytic[k].norm_squared()).sum();
        prop_assert!(
            error.sqrt() < 1e-6 * size.sqrt(),
            "v = {v:?}: {error} vs {size}"
        );
        Ok(())
    }

    #[test]
    fn exp_of_known_vectors() {
        assert_eq!(exp(&Vector3::zeros()), UnitQuaternion::identity());
        let q = exp(&Vector3::new(PI, 0.0, 0.0));
        assert!((q.quaternion().i - 1.0).abs() < 1e-15 && q.w.abs() < 1e-15);
        let v = Vector3::new(0.3, -0.2, 0.7);
        let reference = UnitQuaternion::from_scaled_axis(v);
        assert!(rotation_distance(&exp(&v), &reference) < 1e-15);
    }

    #[test]
    fn series_match_closed_forms_at_their_thresholds() {
        for theta in [SINC_TAYLOR_BELOW * 0.999, SINC_TAYLOR_BELOW * 1.001] {
            let direct = (0.5 * theta).sin() / theta;
            assert!((half_sinc(theta) - direct).abs() < 1e-16);
        }
        let below = SERIES_BELOW * (1.0 - 1e-12);
        let above = SERIES_BELOW * (1.0 + 1e-12);
        assert!((partial_coefficient(below) - partial_coefficient(above)).abs() < 1e-13);
        let (g0, k0) = vdot_coefficients(below);
        let (g1, k1) = vdot_coefficients(above);
        assert!((g0 - g1).abs() < 1e-13 && (k0 - k1).abs() < 1e-12);
        assert_eq!(partial_coefficient(0.0), -1.0 / 24.0);
        assert_eq!(vdot_coefficients(0.0), (1.0, 1.0 / 12.0));
    }

    #[test]
    fn log_of_identity_and_half_turn() {
        assert_eq!(log(&UnitQuaternion::identity()), Vector3::zeros());
        let half_turn = UnitQuaternion::from_axis_angle(&Vector3::y_axis(), PI);
        assert!((log(&half_turn).norm() - PI).abs() < 1e-15);
        // −q is the same rotation and has the same log.
        let q = exp(&Vector3::new(0.1, 2.0, -0.5));
        let minus_q = UnitQuaternion::new_unchecked(-q.into_inner());
        assert!((log(&q) - log(&minus_q)).norm() < 1e-15);
    }

    #[test]
    fn reparameterize_examples() {
        let v = Vector3::new(0.0, 0.0, 1.5 * PI);
        assert!((reparameterize(&v) - Vector3::new(0.0, 0.0, -0.5 * PI)).norm() < 1e-15);
        let inside = Vector3::new(1.0, 1.0, 1.0);
        assert_eq!(reparameterize(&inside), inside);
        assert!(reparameterize(&Vector3::new(f64::NAN, 0.0, 0.0)).x.is_nan());
    }

    #[test]
    fn non_finite_input_does_not_panic() {
        let nan = Vector3::new(f64::NAN, 1.0, 0.0);
        let inf = Vector3::new(f64::INFINITY, 1.0, 0.0);
        for v in [nan, inf] {
            let _ = exp(&v);
            let _ = exp_partials(&v);
            let _ = rotation_matrix_partials(&v);
            let _ = vdot_from_omega(&v, &v);
            let _ = reparameterize(&v);
            let _ = log_near(&UnitQuaternion::identity(), &v);
        }
        assert_eq!(
            log_near(&UnitQuaternion::identity(), &nan),
            Vector3::zeros()
        );
    }

    #[test]
    fn log_near_identity_follows_previous_shell() {
        let previous = Vector3::new(0.0, 6.0, 0.0);
        let near = log_near(&UnitQuaternion::identity(), &previous);
        assert!((near - Vector3::new(0.0, TAU, 0.0)).norm() < 1e-15);
    }

    proptest! {
        #[test]
        fn exp_log_is_identity_on_the_sphere(q in unit_quaternion()) {
            let v = log(&q);
            prop_assert!(v.norm() <= PI + 1e-12);
            let back = exp(&v);
            let d = (back.coords - q.coords).norm().min((back.coords + q.coords).norm());
            prop_assert!(d < 1e-14, "|exp(log q) ∓ q| = {d}");
        }

        #[test]
        fn log_exp_is_identity_inside_the_ball(v in expmap_vector(PI - 1e-6)) {
            let back = log(&exp(&v));
            prop_assert!((back - v).norm() <= 1e-14 * v.norm(),
                "v = {v:?}, log(exp(v)) = {back:?}");
        }

        #[test]
        fn exp_partials_match_central_differences(v in expmap_vector(3.0 * PI)) {
            check_partials(&v, &exp_partials(&v), |x| exp(x).into_inner())?;
        }

        #[test]
        fn rotation_matrix_partials_match_central_differences(v in expmap_vector(3.0 * PI)) {
            check_partials(&v, &rotation_matrix_partials(&v), |x| exp(x).to_rotation_matrix().into_inner())?;
        }

        /// The body-frame Jacobian 2·Im(q⁻¹ ∂q/∂v) has determinant
        /// 2(1 − cos θ)/θ², the factor `QuTem::log_density_on_rotations` uses.
        #[test]
        fn exp_jacobian_determinant(v in expmap_vector(PI)) {
            let q = exp(&v);
            let partials = exp_partials(&v);
            let columns: [Vector3<f64>; 3] =
                std::array::from_fn(|k| (q.quaternion().conjugate() * partials[k]).imag() * 2.0);
            let det = Matrix3::from_columns(&columns).determinant();
            let expected = (2.0 * half_sinc(v.norm())).powi(2);
            prop_assert!((det - expected).abs() < 1e-12, "{det} vs {expected}");
        }

        #[test]
        fn reparameterization_keeps_the_rotation(v in vector_with_length(0.0..40.0)) {
            let r = reparameterize(&v);
            prop_assert!(r.norm() <= PI + 1e-12);
            prop_assert!(rotation_distance(&exp(&r), &exp(&v)) < 1e-12);
            let theta = v.norm();
            if theta <= PI {
                prop_assert_eq!(r, v);
            } else if theta < 3.0 * PI {
                // EXPMAP §3.2.1's formula verbatim.
                prop_assert!((r - v * (1.0 - TAU / theta)).norm() < 1e-14);
            }
        }

        #[test]
        fn log_near_gives_the_same_rotation_and_the_closest_preimage(
            q in unit_quaternion(),
            previous in vector_with_length(0.0..20.0),
        ) {
            let near = log_near(&q, &previous);
            prop_assert!(rotation_distance(&exp(&near), &q) < 1e-12);
            let theta = near.norm();
            if theta > 1e-9 {
                let axis = near / theta;
                // Within π of `previous` along the axis: the closest of the class.
                prop_assert!((near.dot(&axis) - previous.dot(&axis)).abs() <= PI + 1e-9);
                let d = (near - previous).norm();
                for other in [axis * (theta + TAU), axis * (theta - TAU), log(&q)] {
                    prop_assert!(d <= (other - previous).norm() + 1e-9);
                }
            }
        }

        /// Continuity (EXPMAP §4.2): a small step from any `v`, even beyond π,
        /// is recovered exactly.
        #[test]
        fn log_near_recovers_small_steps(
            v in vector_with_length(0.0..15.0),
            step in vector_with_length(0.0..0.1),
        ) {
            let target = v + step;
            let shell = target.norm() / TAU;
            prop_assume!((shell - shell.round()).abs() * TAU > 1e-3 || target.norm() < 1.0);
            let near = log_near(&exp(&target), &v);
            prop_assert!((near - target).norm() < 1e-9, "{near:?} vs {target:?}");
        }

        /// `v̇` against `exp(ω dt) · exp(v)` (world frame) and
        /// `exp(v) · exp(ω dt)` (body frame), by central differences.
        #[test]
        fn vdot_matches_integrated_angular_velocity(
            v in expmap_vector(5.5),
            omega in vector_with_length(0.1..5.0),
        ) {
            let dt = 1e-5;
            let q = exp(&v);
            let world = (log_near(&(exp(&(omega * dt)) * q), &v)
                - log_near(&(exp(&(-omega * dt)) * q), &v))
                / (2.0 * dt);
            let expected = vdot_from_omega(&v, &omega);
            prop_assert!((world - expected).norm() < 1e-6 * expected.norm(),
                "world: {world:?} vs {expected:?}");
            let body = (log_near(&(q * exp(&(omega * dt))), &v)
                - log_near(&(q * exp(&(-omega * dt))), &v))
                / (2.0 * dt);
            let expected = vdot_from_body_omega(&v, &omega);
            prop_assert!((body - expected).norm() < 1e-6 * expected.norm(),
                "body: {body:?} vs {expected:?}");
        }
    }
}

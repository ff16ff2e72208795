//! The quaternion Gaussian "QuTem" (SMC-IK §5.1 and App. A).
//!
//! # Definition
//!
//! SMC-IK §5.1 models each joint's rotation noise as a Gaussian of covariance
//! `Σ` in the tangent space at the mode `m`, wrapped onto a hemisphere of S³;
//! App. A gives the density (SMC-IK Eq. 17)
//! `φ(q; 1, Σ) = k · exp(−½ ⟨log q | Σ⁻¹ | log q⟩)`. The printed sampling
//! algorithm (App. A, Algorithm 2) is garbled (it normalises a direction,
//! scales it by variances and draws a separate angle, which does not produce
//! covariance `Σ`), so this module implements the tangent-space Gaussian the
//! text describes, exactly:
//!
//! - **Sampling**: `ε = L z`, `z ~ N(0, I₃)`, `Σ = L Lᵀ` (Cholesky), and
//!   `q = m · exp(ε)` — the noise is a rotation in the joint's **local
//!   frame** (right-multiplied onto the mean), `exp` being EXPMAP's map
//!   ([`crate::exp`]).
//! - **Log density**: `ε = log(m⁻¹ q)` with the shortest-arc log
//!   ([`crate::log`], `|ε| ≤ π`) and
//!   `log φ(q) = −½ εᵀ Σ⁻¹ ε − ½ log det(2πΣ)`, the Gaussian log density of the
//!   tangent vector. **No exp-map Jacobian factor is included**: this is the
//!   density of `ε` in ℝ³ (the form used for particle weights in SMC-IK Eq.
//!   12). [`QuTem::log_density_on_rotations`] adds the factor
//!   `−log det(∂exp) = −log(2(1 − cos θ)/θ²)`, giving the density with respect
//!   to the bi-invariant volume on SO(3) normalised to agree with `d³ε` at the
//!   identity. Both ignore wrapped mass beyond `|ε| = π`, which is negligible
//!   when the standard deviations are well below π.
//!
//! Units: `ε` is the exp-map vector, whose length is the rotation angle. The
//! quaternion logarithm of SMC-IK Eq. 17 (after its reference \[15\]) is
//! half of it (`log q = ε/2`), so a covariance quoted for that convention must
//! be multiplied by 4.
//!
//! # Degrees of freedom
//!
//! The eigenvalues of `Σ` set the joint's effective DOF (SMC-IK §5.1,
//! Fig. 1): three comparable eigenvalues make a ball-and-socket joint, two a
//! 2-DOF joint, one a hinge; the locked axes keep a small "leakage" variance,
//! as in biological joints, which also keeps `Σ` positive definite.
//! [`QuTem::hinge`], [`QuTem::pivot`] and [`QuTem::swing_twist`] build these.

use std::f64::consts::TAU;

use nalgebra::{Matrix3, Rotation3, Unit, UnitQuaternion, Vector2, Vector3};
use rand_distr::{Distribution, StandardNormal};

use crate::RotationError;
use crate::expmap::{exp, half_sinc, log};
use crate::swing_twist::SwingTwistFrame;

/// Relative tolerance on `|Σ − Σᵀ|` (scaled by the largest entry).
const SYMMETRY_TOLERANCE: f64 = 1e-9;

/// A Gaussian on unit quaternions: mean `m`, tangent covariance `Σ` in the
/// mean's local frame (SMC-IK §5.1, App. A). See the module docs for the exact
/// sampling rule and density.
#[derive(Clone, Debug)]
pub struct QuTem {
    mean: UnitQuaternion<f64>,
    covariance: Matrix3<f64>,
    /// Lower-triangular `L` with `Σ = L Lᵀ`.
    cholesky: Matrix3<f64>,
    /// `Σ⁻¹`.
    precision: Matrix3<f64>,
    /// `−½ log det(2πΣ)`.
    log_normalizer: f64,
}

fn check_finite<'a>(
    field: &'static str,
    mut values: impl Iterator<Item = &'a f64>,
) -> Result<(), RotationError> {
    if values.all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(RotationError::NonFinite { field })
    }
}

fn check_sigma(field: &'static str, value: f64) -> Result<f64, RotationError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else if value.is_nan() || value.is_infinite() {
        Err(RotationError::NonFinite { field })
    } else {
        Err(RotationError::InvalidLimit {
            field,
            value,
            reason: "standard deviations must be positive",
        })
    }
}

fn unit_axis(field: &'static str, axis: &Vector3<f64>) -> Result<Vector3<f64>, RotationError> {
    check_finite(field, axis.iter())?;
    let n = axis.norm();
    if n > 0.0 && n.is_finite() {
        Ok(axis / n)
    } else {
        Err(RotationError::DegenerateAxis {
            field,
            reason: "axis has zero length",
        })
    }
}

impl QuTem {
    /// A QuTem with mean `mean` and tangent covariance `covariance` (local
    /// frame of the mean, exp-map units: radians of rotation).
    ///
    /// Errors: `NonFinite` (mean or covariance), `NotSymmetric` (beyond a
    /// relative 1e-9; smaller asymmetry is averaged away),
    /// `NotPositiveDefinite` (Cholesky fails).
    pub fn new(mean: UnitQuaternion<f64>, covariance: Matrix3<f64>) -> Result<Self, RotationError> {
        check_finite("mean", mean.coords.iter())?;
        check_finite("covariance", covariance.iter())?;
        let scale = covariance.amax();
        let asymmetry = (covariance - covariance.transpose()).amax();
        if asymmetry > SYMMETRY_TOLERANCE * scale {
            return Err(RotationError::NotSymmetric {
                field: "covariance",
                asymmetry,
            });
        }
        let covariance = (covariance + covariance.transpose()) * 0.5;
        let not_pd = RotationError::NotPositiveDefinite {
            field: "covariance",
        };
        let cholesky = nalgebra::Cholesky::new(covariance).ok_or(not_pd.clone())?;
        let l = cholesky.l();
        let diagonal = l.diagonal();
        if !diagonal.iter().all(|d| d.is_finite() && *d > 0.0) {
            return Err(not_pd);
        }
        let precision = cholesky.inverse();
        if !precision.iter().all(|p| p.is_finite()) {
            return Err(not_pd);
        }
        let log_det = 2.0 * diagonal.iter().map(|d| d.ln()).sum::<f64>();
        Ok(Self {
            mean: UnitQuaternion::new_normalize(mean.into_inner()),
            covariance,
            cholesky: l,
            precision,
            log_normalizer: -0.5 * (3.0 * TAU.ln() + log_det),
        })
    }

    /// Diagonal covariance `diag(σ₀², σ₁², σ₂²)` on the mean's local x, y, z
    /// axes. Errors if a σ is not finite and positive.
    pub fn from_sigmas(
        mean: UnitQuaternion<f64>,
        sigmas: Vector3<f64>,
    ) -> Result<Self, RotationError> {
        let names = ["sigmas.x", "sigmas.y", "sigmas.z"];
        let mut variances = Vector3::zeros();
        for i in 0..3 {
            variances[i] = check_sigma(names[i], sigmas[i])?.powi(2);
        }
        Self::new(mean, Matrix3::from_diagonal(&variances))
    }

    /// Covariance `A diag(σ²) Aᵀ`: standard deviation `sigmas[i]` along the
    /// `i`-th column of `axes` (in the mean's local frame).
    pub fn from_principal_axes(
        mean: UnitQuaternion<f64>,
        axes: &Rotation3<f64>,
        sigmas: Vector3<f64>,
    ) -> Result<Self, RotationError> {
        check_finite("axes", axes.matrix().iter())?;
        let names = ["sigmas.x", "sigmas.y", "sigmas.z"];
        let mut variances = Vector3::zeros();
        for i in 0..3 {
            variances[i] = check_sigma(names[i], sigmas[i])?.powi(2);
        }
        let a = axes.matrix();
        Self::new(mean, a * Matrix3::from_diagonal(&variances) * a.transpose())
    }

    /// A 1-DOF (hinge) joint: standard deviation `sigma` for rotation about
    /// `axis` (local frame), `leakage` on the two locked axes (SMC-IK §5.1,
    /// Fig. 1c). `Σ = σ² a aᵀ + leakage² (I − a aᵀ)`; `leakage > 0`.
    pub fn hinge(
        mean: UnitQuaternion<f64>,
        axis: Vector3<f64>,
        sigma: f64,
        leakage: f64,
    ) -> Result<Self, RotationError> {
        let a = unit_axis("axis", &axis)?;
        let free = check_sigma("sigma", sigma)?.powi(2);
        let locked = check_sigma("leakage", leakage)?.powi(2);
        let aat = a * a.transpose();
        Self::new(mean, aat * free + (Matrix3::identity() - aat) * locked)
    }

    /// A 2-DOF joint: isotropic standard deviation `sigma` for rotations about
    /// axes orthogonal to `locked_axis` (local frame), `leakage` about it
    /// (SMC-IK §5.1, Fig. 1b). `Σ = σ² (I − a aᵀ) + leakage² a aᵀ`.
    pub fn pivot(
        mean: UnitQuaternion<f64>,
        locked_axis: Vector3<f64>,
        sigma: f64,
        leakage: f64,
    ) -> Result<Self, RotationError> {
        let a = unit_axis("locked_axis", &locked_axis)?;
        let free = check_sigma("sigma", sigma)?.powi(2);
        let locked = check_sigma("leakage", leakage)?.powi(2);
        let aat = a * a.transpose();
        Self::new(mean, (Matrix3::identity() - aat) * free + aat * locked)
    }

    /// Standard deviations along a swing–twist frame's `u`, `w` (swing) and
    /// `t` (twist) axes (EXPMAP §5 meets SMC-IK §5.1). A tiny `twist_sigma`
    /// makes a 2-DOF swing joint.
    pub fn swing_twist(
        mean: UnitQuaternion<f64>,
        frame: &SwingTwistFrame,
        swing_sigmas: Vector2<f64>,
        twist_sigma: f64,
    ) -> Result<Self, RotationError> {
        let (u, w) = frame.swing_axes();
        let axes = Rotation3::from_matrix_unchecked(Matrix3::from_columns(&[
            u.into_inner(),
            w.into_inner(),
            frame.twist_axis().into_inner(),
        ]));
        let su = check_sigma("swing_sigmas.x", swing_sigmas.x)?;
        let sw = check_sigma("swing_sigmas.y", swing_sigmas.y)?;
        let st = check_sigma("twist_sigma", twist_sigma)?;
        Self::from_principal_axes(mean, &axes, Vector3::new(su, sw, st))
    }

    /// The mean (mode) quaternion.
    pub fn mean(&self) -> &UnitQuaternion<f64> {
        &self.mean
    }

    /// The tangent covariance `Σ` (local frame of the mean).
    pub fn covariance(&self) -> &Matrix3<f64> {
        &self.covariance
    }

    /// The same covariance around a new mean; no re-factorisation.
    pub fn with_mean(&self, mean: UnitQuaternion<f64>) -> Self {
        Self {
            mean: UnitQuaternion::new_normalize(mean.into_inner()),
            ..self.clone()
        }
    }

    /// A tangent vector `ε = L z ~ N(0, Σ)`.
    pub fn sample_tangent<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> Vector3<f64> {
        let z = Vector3::from_fn(|_, _| StandardNormal.sample(rng));
        self.cholesky * z
    }

    /// A quaternion `q = m · exp(ε)`, `ε ~ N(0, Σ)` (noise in the joint's
    /// local frame).
    pub fn sample<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> UnitQuaternion<f64> {
        self.mean * exp(&self.sample_tangent(rng))
    }

    /// The tangent vector of `q` at the mean: `ε = log(m⁻¹ q)`, `|ε| ≤ π`.
    pub fn tangent(&self, q: &UnitQuaternion<f64>) -> Vector3<f64> {
        log(&(self.mean.inverse() * q))
    }

    /// The squared Mahalanobis distance `εᵀ Σ⁻¹ ε` of `q`.
    pub fn mahalanobis_squared(&self, q: &UnitQuaternion<f64>) -> f64 {
        let e = self.tangent(q);
        e.dot(&(self.precision * e))
    }

    /// `log φ(q) = −½ εᵀ Σ⁻¹ ε − ½ log det(2πΣ)`, `ε = log(m⁻¹ q)` (SMC-IK
    /// Eq. 17 with `Γ = Σ⁻¹`); the density of `ε` in ℝ³, **without** the
    /// exp-map Jacobian. Invariant under `q → −q`.
    pub fn log_density(&self, q: &UnitQuaternion<f64>) -> f64 {
        self.log_normalizer - 0.5 * self.mahalanobis_squared(q)
    }

    /// [`Self::log_density`] plus `−log det(∂exp/∂ε) = −log(2(1 − cos θ)/θ²)`,
    /// `θ = |ε|`: the density with respect to the bi-invariant volume on
    /// SO(3) (total volume 8π²), ignoring wrapped mass beyond `|ε| = π`.
    pub fn log_density_on_rotations(&self, q: &UnitQuaternion<f64>) -> f64 {
        let e = self.tangent(q);
        // 2(1 − cos θ)/θ² = (sin(θ/2)/(θ/2))² = (2 s(θ))².
        let jacobian = (2.0 * half_sinc(e.norm())).powi(2);
        self.log_normalizer - 0.5 * e.dot(&(self.precision * e)) - jacobian.ln()
    }

    /// The number of principal standard deviations `√λᵢ` of `Σ` larger than
    /// `leakage_ratio` times the largest one (SMC-IK §5.1: 3 for a
    /// ball-and-socket joint, 2 or 1 when the locked axes only leak). E.g. a
    /// [`Self::hinge`] with `sigma = 0.5`, `leakage = 1e-3` has 1 DOF at
    /// `leakage_ratio = 0.01` and 3 at `1e-4`.
    pub fn effective_dof(&self, leakage_ratio: f64) -> usize {
        let sigmas = self
            .covariance
            .symmetric_eigenvalues()
            .map(|l| l.max(0.0).sqrt());
        let largest = sigmas.max();
        sigmas
            .iter()
            .filter(|&&s| s > leakage_ratio * largest)
            .count()
    }

    /// Convenience: the unit axis of greatest variance (local frame).
    pub fn principal_axis(&self) -> Unit<Vector3<f64>> {
        let eigen = self.covariance.symmetric_eigen();
        let i = eigen.eigenvalues.imax();
        Unit::new_normalize(eigen.eigenvectors.column(i).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::unit_quaternion;
    use proptest::prelude::*;
    use rand::SeedableRng;
    use rand_pcg::Pcg64;

    fn some_mean() -> UnitQuaternion<f64> {
        exp(&Vector3::new(0.4, -1.2, 0.7))
    }

    /// A full (non-diagonal) covariance with σ = 0.3, 0.15, 0.05 on tilted axes.
    fn full_covariance() -> QuTem {
        let axes = Rotation3::from_scaled_axis(Vector3::new(0.5, 0.3, -0.8));
        QuTem::from_principal_axes(some_mean(), &axes, Vector3::new(0.3, 0.15, 0.05)).unwrap()
    }

    #[test]
    fn bad_covariances_are_errors() {
        let mean = UnitQuaternion::identity();
        let mut nan = Matrix3::identity();
        nan[(1, 1)] = f64::NAN;
        assert_eq!(
            QuTem::new(mean, nan).unwrap_err(),
            RotationError::NonFinite {
                field: "covariance"
            }
        );
        let indefinite = Matrix3::from_diagonal(&Vector3::new(1.0, -1.0, 1.0));
        assert_eq!(
            QuTem::new(mean, indefinite).unwrap_err(),
            RotationError::NotPositiveDefinite {
                field: "covariance"
            }
        );
        assert!(matches!(
            QuTem::new(mean, Matrix3::zeros()),
            Err(RotationError::NotPositiveDefinite { .. })
        ));
        let singular = Matrix3::from_diagonal(&Vector3::new(1.0, 1.0, 0.0));
        assert!(QuTem::new(mean, singular).is_err());
        let mut asymmetric = Matrix3::identity();
        asymmetric[(0, 1)] = 0.5;
        assert!(matches!(
            QuTem::new(mean, asymmetric),
            Err(RotationError::NotSymmetric {
                field: "covariance",
                ..
            })
        ));
        let bad_mean =
            UnitQuaternion::new_unchecked(nalgebra::Quaternion::new(f64::NAN, 0.0, 0.0, 0.0));
        assert_eq!(
            QuTem::new(bad_mean, Matrix3::identity()).unwrap_err(),
            RotationError::NonFinite { field: "mean" }
        );
        assert!(matches!(
            QuTem::from_sigmas(mean, Vector3::new(1.0, 0.0, 1.0)),
            Err(RotationError::InvalidLimit {
                field: "sigmas.y",
                ..
            })
        ));
        assert!(matches!(
            QuTem::hinge(mean, Vector3::zeros(), 1.0, 0.01),
            Err(RotationError::DegenerateAxis { field: "axis", .. })
        ));
        assert!(matches!(
            QuTem::hinge(mean, Vector3::x(), 1.0, 0.0),
            Err(RotationError::InvalidLimit {
                field: "leakage",
                ..
            })
        ));
        assert!(matches!(
            QuTem::pivot(mean, Vector3::x(), f64::NAN, 0.01),
            Err(RotationError::NonFinite { field: "sigma" })
        ));
    }

    /// 10⁵ samples reproduce Σ entrywise to 3% of √(Σᵢᵢ Σⱼⱼ) (the standard
    /// error is ≤ √(2/n) ≈ 0.45% of that, so 3% is over 6 standard errors).
    #[test]
    fn sampled_tangent_covariance_matches() {
        let qutem = full_covariance();
        let mut rng = Pcg64::seed_from_u64(20_070_426);
        let n = 100_000;
        let mut second_moment = Matrix3::zeros();
        for _ in 0..n {
            let e = qutem.sample_tangent(&mut rng);
            second_moment += e * e.transpose();
        }
        let estimate = second_moment / f64::from(n);
        let sigma = qutem.covariance();
        for i in 0..3 {
            for j in 0..3 {
                let scale = (sigma[(i, i)] * sigma[(j, j)]).sqrt();
                assert!(
                    (estimate[(i, j)] - sigma[(i, j)]).abs() < 0.03 * scale,
                    "({i}, {j}): {} vs {}",
                    estimate[(i, j)],
                    sigma[(i, j)]
                );
            }
        }
    }

    /// `sample` is `mean · exp(sample_tangent)`: the tangent of a sample,
    /// drawn from the same seed, is the tangent sample (noise in the local
    /// frame).
    #[test]
    fn sample_is_mean_times_exp_of_tangent() {
        let qutem = full_covariance();
        let mut a = Pcg64::seed_from_u64(7);
        let mut b = Pcg64::seed_from_u64(7);
        for _ in 0..1000 {
            let q = qutem.sample(&mut a);
            let e = qutem.sample_tangent(&mut b);
            assert!((qutem.tangent(&q) - e).norm() < 1e-12);
            assert!((q.coords - (qutem.mean() * exp(&e)).coords).norm() < 1e-15);
        }
        // Any generator works through the `R: rand::Rng + ?Sized` bound.
        let dynamic: &mut dyn rand::Rng = &mut a;
        let _ = qutem.sample(dynamic);
    }

    #[test]
    fn log_density_is_the_tangent_gaussian() {
        let sigmas = Vector3::new(0.2, 0.5, 0.1);
        let mean = some_mean();
        let qutem = QuTem::from_sigmas(mean, sigmas).unwrap();
        let e = Vector3::new(0.1, -0.3, 0.05);
        let q = mean * exp(&e);
        let expected: f64 = (0..3)
            .map(|i| -0.5 * (e[i] / sigmas[i]).powi(2) - (sigmas[i] * TAU.sqrt()).ln())
            .sum();
        assert!((qutem.log_density(&q) - expected).abs() < 1e-12);
        let minus_q = UnitQuaternion::new_unchecked(-q.into_inner());
        assert!((qutem.log_density(&minus_q) - expected).abs() < 1e-12);
        // The rotation-measure density differs by −log(2(1 − cos θ)/θ²).
        let theta = e.norm();
        let jacobian = 2.0 * (1.0 - theta.cos()) / (theta * theta);
        let on_rotations = qutem.log_density_on_rotations(&q);
        assert!((on_rotations - (expected - jacobian.ln())).abs() < 1e-12);
        // At the mean both are the normaliser −½ log det(2πΣ).
        let at_mean = qutem.log_density(&mean);
        assert!((at_mean - qutem.log_density_on_rotations(&mean)).abs() < 1e-15);
        let normaliser = -0.5 * (TAU.powi(3) * sigmas.map(|s| s * s).product()).ln();
        assert!((at_mean - normaliser).abs() < 1e-12);
    }

    /// Samples pushed through the density's own `ε = log(m⁻¹ q)` have
    /// `E[εᵀΣ⁻¹ε] = 3` (the χ²₃ mean), so sampling and density agree.
    #[test]
    fn mahalanobis_of_samples_is_chi_squared_three() {
        let qutem = full_covariance();
        let mut rng = Pcg64::seed_from_u64(3);
        let n = 20_000;
        let mean: f64 = (0..n)
            .map(|_| qutem.mahalanobis_squared(&qutem.sample(&mut rng)))
            .sum::<f64>()
            / f64::from(n);
        // χ²₃ has variance 6: standard error √(6/n) ≈ 0.017.
        assert!((mean - 3.0).abs() < 0.15, "{mean}");
    }

    #[test]
    fn joint_constructors_set_the_effective_dof() {
        let mean = some_mean();
        let hinge = QuTem::hinge(mean, Vector3::new(0.0, 2.0, 0.0), 0.5, 1e-3).unwrap();
        assert_eq!(hinge.effective_dof(0.01), 1);
        assert_eq!(hinge.effective_dof(1e-4), 3);
        assert!((hinge.principal_axis().y.abs() - 1.0).abs() < 1e-12);
        let pivot = QuTem::pivot(mean, Vector3::z(), 0.5, 1e-3).unwrap();
        assert_eq!(pivot.effective_dof(0.01), 2);
        let ball = QuTem::from_sigmas(mean, Vector3::new(0.5, 0.4, 0.3)).unwrap();
        assert_eq!(ball.effective_dof(0.01), 3);
        let frame = SwingTwistFrame::new(Vector3::x_axis());
        let swing = QuTem::swing_twist(mean, &frame, Vector2::new(0.6, 0.3), 1e-3).unwrap();
        assert_eq!(swing.effective_dof(0.01), 2);
        assert!((swing.covariance()[(0, 0)] - 1e-6).abs() < 1e-15);
        // A hinge's samples rotate (almost) only about its axis.
        let mut rng = Pcg64::seed_from_u64(11);
        for _ in 0..100 {
            let e = hinge.sample_tangent(&mut rng);
            assert!(e.x.abs() < 0.01 && e.z.abs() < 0.01);
        }
    }

    proptest! {
        #[test]
        fn with_mean_moves_the_density(q in unit_quaternion(), e in prop::array::uniform3(-1.0..1.0f64)) {
            let qutem = full_covariance();
            let moved = qutem.with_mean(q);
            prop_assert_eq!(moved.covariance(), qutem.covariance());
            let e = Vector3::from(e);
            let here = qutem.log_density(&(qutem.mean() * exp(&e)));
            let there = moved.log_density(&(q * exp(&e)));
            prop_assert!((here - there).abs() < 1e-9);
        }
    }
}

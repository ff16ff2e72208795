//! Sampling a Gaussian truncated to an interval by inverse CDF:
//!
//! ```text
//! x = μ + σ Φ⁻¹( Φ(a) + u (Φ(b) − Φ(a)) ),   a = (lo − μ)/σ,  b = (hi − μ)/σ,  u ~ U(0, 1)
//! ```
//!
//! One uniform a draw and no rejection, so a particle's stream advances by
//! the same amount whatever the interval: the evolution prior of SMC-IK's
//! `Truncated` limit sampler (its future-work alternative to §5.2's
//! accept–reject) and the monocular tracker's diffusion inside the
//! joint-limit box both draw with it.
//! `Φ` is `erfc`-based (`libm`), `Φ⁻¹` Acklam's rational approximation
//! refined by one Halley step.

use rand::RngExt;

use crate::rng::ParticleRng;

/// Standard normal CDF.
fn phi(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// Inverse standard normal CDF: Acklam's rational approximation (relative
/// error 1.15e-9) refined by one Halley step on `erfc`, to full precision.
fn phi_inv(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e+01,
        2.209460984245205e+02,
        -2.759285104469687e+02,
        1.383_577_518_672_69e2,
        -3.066479806614716e+01,
        2.506628277459239e+00,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e+01,
        1.615858368580409e+02,
        -1.556989798598866e+02,
        6.680131188771972e+01,
        -1.328068155288572e+01,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-03,
        -3.223964580411365e-01,
        -2.400758277161838e+00,
        -2.549732539343734e+00,
        4.374664141464968e+00,
        2.938163982698783e+00,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-03,
        3.224671290700398e-01,
        2.445134137142996e+00,
        3.754408661907416e+00,
    ];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let p_low = 0.02425;
    let x = if p < p_low {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - p_low {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        let q = (-2.0 * (1.0 - p).ln()).sqrt();
        -(((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    // Halley refinement.
    let e = phi(x) - p;
    let u = e * (2.0 * std::f64::consts::PI).sqrt() * (x * x / 2.0).exp();
    x - u / (1.0 + x * u / 2.0)
}

/// A draw from `N(mean, σ²)` truncated to `[lo, hi]` by inverse CDF (no
/// rejection). `σ = 0` or an empty interval returns `mean` clamped.
pub fn truncated_normal(mean: f64, sigma: f64, lo: f64, hi: f64, rng: &mut ParticleRng) -> f64 {
    if sigma.is_nan() || sigma <= 0.0 || hi <= lo {
        return mean.clamp(lo, hi.max(lo));
    }
    let (a, b) = ((lo - mean) / sigma, (hi - mean) / sigma);
    let (fa, fb) = (phi(a), phi(b));
    let u: f64 = rng.random();
    let x = if fb - fa > 1e-300 {
        mean + sigma * phi_inv(fa + u * (fb - fa))
    } else {
        lo + u * (hi - lo)
    };
    x.clamp(lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn phi_inv_inverts_phi() {
        for &p in &[1e-12, 1e-6, 0.01, 0.02425, 0.3, 0.5, 0.77, 0.99, 1.0 - 1e-9] {
            let x = phi_inv(p);
            assert!(
                (phi(x) - p).abs() <= 1e-12 * p.max(1e-3),
                "{p}: {x} -> {}",
                phi(x)
            );
        }
    }

    #[test]
    fn truncated_normal_has_the_right_moments() {
        // TN(0, 1; [-1, 2]): mean = (φ(-1) − φ(2)) / (Φ(2) − Φ(-1)).
        let pdf = |x: f64| (-x * x / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let z = phi(2.0) - phi(-1.0);
        let mean = (pdf(-1.0) - pdf(2.0)) / z;
        let var = 1.0 + (-pdf(-1.0) - 2.0 * pdf(2.0)) / z - mean * mean;
        let mut rng = ParticleRng::seed_from_u64(3);
        let n = 200_000;
        let xs: Vec<f64> = (0..n)
            .map(|_| truncated_normal(0.0, 1.0, -1.0, 2.0, &mut rng))
            .collect();
        assert!(xs.iter().all(|x| (-1.0..=2.0).contains(x)));
        let m = xs.iter().sum::<f64>() / n as f64;
        let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n as f64;
        // 5 standard errors.
        assert!(
            (m - mean).abs() < 5.0 * (var / n as f64).sqrt(),
            "{m} vs {mean}"
        );
        assert!((v - var).abs() < 0.02 * var, "{v} vs {var}");
    }
}

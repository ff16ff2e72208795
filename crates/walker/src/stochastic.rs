//! Stochastic forces and anthropometrics (PHYSPRIOR §2.1, §2.3, §3.2).
//!
//! **Forces.** A force value `x(t)` (the monopode's leg force `f(t)`, the
//! walker's spring stiffness `κ(t)`) is IID per frame around a stride mean
//! `x̄(s)` that follows `x̄(s) = α x̄(s−1) + (1 − α) x̄₀ + η`,
//! `η ~ 𝒩(0, σ_x̄²)`. With `x̄` integrated out (App. B.2, §3.2) the
//! prediction density is `𝒩(x(t); M_t, s_t² + σ_x²)` with the sufficient
//! statistics updated by [`ForceStats::update`]. Impulses `ι` are gamma
//! distributed, `𝒢(ι; s_ι, λ_ι)` (rate `λ_ι`).
//!
//! **Segment lengths.** `ℓ(t) | λ_ℓ ~ 𝒢(s_ℓ, λ_ℓ)` (Eq. 2.7) with a
//! population prior `λ_ℓ ~ 𝒢(s̄_ℓ, λ̄_ℓ)`, so `ℓ(t) ~ ℬ'(s_ℓ, s̄_ℓ, λ̄_ℓ)`
//! (Eq. 2.8). Given the past, `ℓ(t) ~ ℬ'(s_ℓ, S_t, Λ_t)` with
//! `S_t = S_{t−1} + s_ℓ`, `Λ_t = Λ_{t−1} + ℓ(t−1)`, `S₀ = s̄_ℓ`,
//! `Λ₀ = λ̄_ℓ` (§3.2, App. B.3), drawn as `λ ~ 𝒢(S_t, Λ_t)`,
//! `ℓ ~ 𝒢(s_ℓ, λ)`.

use rand::{Rng, RngExt};
use rand_distr::{Distribution, Gamma, StandardNormal};

use crate::error::{Result, WalkerError, require_finite, require_in, require_positive};

/// The stochastic force model of one walker (Tables 2.2 and 2.4).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ForceParams {
    /// Per-frame sample noise `σ_f` / `σ_κ`.
    pub sample_sigma: f64,
    /// Stride-mean process noise `σ_c` / `σ_κ̄`.
    pub mean_sigma: f64,
    /// Global mean `c₀` / `κ̄₀`.
    pub mean0: f64,
    /// Mean preference factor `α ∈ [0, 1]`.
    pub alpha: f64,
    /// Impulse shape `s_ι`.
    pub impulse_shape: f64,
    /// Impulse rate `λ_ι` (the thesis calls it "scale"; `E[ι] = s_ι/λ_ι`).
    pub impulse_rate: f64,
}

impl ForceParams {
    /// PHYSPRIOR Table 2.2 (monopode: leg force `f`, `E[ι] = 1`, `V[ι] = 0.5²`).
    pub const MONOPODE: ForceParams = ForceParams {
        sample_sigma: 2.0,
        mean_sigma: 1.0,
        mean0: 7.0,
        alpha: 0.5,
        impulse_shape: 1.0 / 0.25,
        impulse_rate: 1.0 / 0.25,
    };
    /// PHYSPRIOR Table 2.4 (walker: spring `κ`, `E[ι] = 0.4`, `V[ι] = 0.15²`).
    pub const WALKER: ForceParams = ForceParams {
        sample_sigma: 1.0,
        mean_sigma: 0.75,
        mean0: 2.0,
        alpha: 0.5,
        impulse_shape: 0.16 / 0.0225,
        impulse_rate: 0.4 / 0.0225,
    };

    /// # Errors
    /// [`WalkerError::InvalidParameter`] for `σ ≤ 0`, `α ∉ [0, 1]`,
    /// non-positive impulse shape/rate or a non-finite mean.
    pub fn validate(&self) -> Result<()> {
        require_positive("sigma (force sample noise)", self.sample_sigma)?;
        require_positive("sigma (force mean process noise)", self.mean_sigma)?;
        require_finite("force mean", self.mean0)?;
        require_in("alpha (mean preference factor)", self.alpha, 0.0, 1.0)?;
        require_positive("s_iota (impulse shape)", self.impulse_shape)?;
        require_positive("lambda_iota (impulse rate)", self.impulse_rate)?;
        Ok(())
    }

    /// The starting statistics `M₀ = x̄₀`, `s₀² = σ_x̄²` (§3.2).
    pub fn initial_stats(&self) -> ForceStats {
        ForceStats {
            mean: self.mean0,
            var: self.mean_sigma * self.mean_sigma,
        }
    }

    /// Draws an impulse `ι ~ 𝒢(s_ι, λ_ι)`.
    pub fn sample_impulse<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        gamma(self.impulse_shape, self.impulse_rate, rng)
    }
}

/// Sufficient statistics `(M_t, s_t²)` of the stride mean (§3.2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ForceStats {
    /// `M_t`.
    pub mean: f64,
    /// `s_t²`.
    pub var: f64,
}

impl ForceStats {
    /// `ξ_t = f(ξ_{t−1}, x(t−1))` (PHYSPRIOR §3.2): condition the stride
    /// mean on the last sample, then, if a new stride began, move it one
    /// step along the AR(1) process.
    pub fn update(&self, p: &ForceParams, last: f64, new_stride: bool) -> ForceStats {
        let prec = 1.0 / self.var + 1.0 / (p.sample_sigma * p.sample_sigma);
        let post_var = 1.0 / prec;
        let post_mean =
            post_var * (self.mean / self.var + last / (p.sample_sigma * p.sample_sigma));
        if new_stride {
            ForceStats {
                mean: p.alpha * post_mean + (1.0 - p.alpha) * p.mean0,
                var: p.alpha * p.alpha * post_var + p.mean_sigma * p.mean_sigma,
            }
        } else {
            ForceStats {
                mean: post_mean,
                var: post_var,
            }
        }
    }

    /// Draws `x(t) ~ 𝒩(M_t, s_t² + σ_x²)`.
    pub fn sample<R: Rng + ?Sized>(&self, p: &ForceParams, rng: &mut R) -> f64 {
        let z: f64 = rng.sample(StandardNormal);
        self.mean + (self.var + p.sample_sigma * p.sample_sigma).sqrt() * z
    }
}

/// `𝒢(shape, rate)` draw (the thesis' parameterisation).
pub(crate) fn gamma<R: Rng + ?Sized>(shape: f64, rate: f64, rng: &mut R) -> f64 {
    match Gamma::new(shape, 1.0 / rate) {
        Ok(g) => g.sample(rng),
        Err(_) => shape / rate,
    }
}

/// The length prior of one segment (one row of Table 2.6).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SegmentPrior {
    /// Individual shape `s_ℓ = 1/CV²`.
    pub shape: f64,
    /// Population shape `s̄_ℓ`.
    pub pop_shape: f64,
    /// Population rate `λ̄_ℓ`.
    pub pop_rate: f64,
}

impl SegmentPrior {
    /// From the individual coefficient of variation `CV[ℓ | λ]` and the
    /// population mean `μ` and standard deviation `σ` (PHYSPRIOR §2.3):
    /// `s = 1/CV²`, `s̄ = (2sσ²/μ² + s − 1)/(sσ²/μ² − 1)`,
    /// `λ̄ = μ(s̄ − 1)/s`.
    ///
    /// # Errors
    /// [`WalkerError::InvalidParameter`] for non-positive inputs or
    /// `s ≤ μ²/σ²` (the population variance would be infinite).
    pub fn from_table(cv: f64, mean: f64, sd: f64) -> Result<Self> {
        require_positive("CV (segment coefficient of variation)", cv)?;
        require_positive("mu (segment mean length)", mean)?;
        require_positive("sigma (segment population sd)", sd)?;
        let s = 1.0 / (cv * cv);
        let r = sd * sd / (mean * mean);
        if s * r <= 1.0 {
            return Err(WalkerError::InvalidParameter {
                name: "CV (segment coefficient of variation)",
                value: cv,
                reason: "needs s_l = 1/CV^2 > mu^2/sigma^2",
            });
        }
        let pop_shape = (2.0 * s * r + s - 1.0) / (s * r - 1.0);
        let pop_rate = mean * (pop_shape - 1.0) / s;
        Ok(SegmentPrior {
            shape: s,
            pop_shape,
            pop_rate,
        })
    }

    /// Table 2.6: thigh, shank, hip width, foot.
    pub fn table_2_6() -> [SegmentPrior; 4] {
        [
            Self::from_table(0.025, 0.4, 0.1),
            Self::from_table(0.025, 0.5, 0.2),
            Self::from_table(0.03, 0.3, 0.2),
            Self::from_table(0.01, 0.2, 0.1),
        ]
        .map(|r| r.expect("Table 2.6 is valid"))
    }

    /// Population mean `λ̄ s/(s̄ − 1)` and variance of `ℓ` (Eq. 2.8).
    pub fn population_moments(&self) -> (f64, f64) {
        let (s, sb, lb) = (self.shape, self.pop_shape, self.pop_rate);
        let mean = lb * s / (sb - 1.0);
        let var = lb * lb * s * (s + sb - 1.0) / ((sb - 1.0).powi(2) * (sb - 2.0));
        (mean, var)
    }

    /// Draws `ℓ(t) ~ ℬ'(s_ℓ, S_t, Λ_t)` (§3.2) by the gamma mixture.
    pub fn sample<R: Rng + ?Sized>(&self, big_s: f64, big_lambda: f64, rng: &mut R) -> f64 {
        let lambda = gamma(big_s, big_lambda, rng);
        gamma(self.shape, lambda.max(1e-12), rng)
    }

    /// `(S_t, Λ_t)` from `(S_{t−1}, Λ_{t−1})` and `ℓ(t−1)` (§3.2).
    pub fn update(&self, big_s: f64, big_lambda: f64, last: f64) -> (f64, f64) {
        (big_s + self.shape, big_lambda + last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn table_2_6_hyperparameters_reproduce_the_population() {
        for (prior, (mu, sd)) in
            SegmentPrior::table_2_6()
                .iter()
                .zip([(0.4, 0.1), (0.5, 0.2), (0.3, 0.2), (0.2, 0.1)])
        {
            let (m, v) = prior.population_moments();
            assert!((m - mu).abs() < 1e-12, "{m} {mu}");
            assert!((v.sqrt() - sd).abs() < 1e-12, "{} {sd}", v.sqrt());
        }
    }

    /// Monte Carlo of the beta-prime draw matches Eq. 2.8's moments, and the
    /// thigh prior (s̄ ≈ 18.2) is what the formula gives by hand.
    #[test]
    fn beta_prime_sampling_matches_moments() {
        let p = SegmentPrior::table_2_6()[0];
        assert!((p.shape - 1600.0).abs() < 1e-9);
        assert!((p.pop_shape - 1799.0 / 99.0).abs() < 1e-9);
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
        let n = 100_000;
        let xs: Vec<f64> = (0..n)
            .map(|_| p.sample(p.pop_shape, p.pop_rate, &mut rng))
            .collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!((mean - 0.4).abs() < 0.003, "{mean}");
        assert!((var.sqrt() - 0.1).abs() < 0.005, "{}", var.sqrt());
    }

    /// After observing lengths, `(S_t, Λ_t)` concentrate the draw near them
    /// with the individual CV.
    #[test]
    fn sufficient_statistics_concentrate() {
        let p = SegmentPrior::table_2_6()[1];
        let (mut s, mut l) = (p.pop_shape, p.pop_rate);
        for _ in 0..50 {
            (s, l) = p.update(s, l, 0.43);
        }
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(4);
        let n = 20_000;
        let xs: Vec<f64> = (0..n).map(|_| p.sample(s, l, &mut rng)).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        assert!((mean - 0.43).abs() < 0.003, "{mean}");
        assert!((sd / mean - 0.025).abs() < 0.003, "{sd}");
    }

    #[test]
    fn force_stats_follow_app_b2() {
        let p = ForceParams::WALKER;
        let s0 = p.initial_stats();
        // Within a stride the mean moves towards the sample, the variance shrinks.
        let s1 = s0.update(&p, 4.0, false);
        let w = 1.0 / (1.0 / 0.5625 + 1.0);
        assert!((s1.var - w).abs() < 1e-12);
        assert!((s1.mean - w * (2.0 / 0.5625 + 4.0)).abs() < 1e-12);
        // A new stride pulls the mean back to κ̄₀ and inflates the variance.
        let s2 = s1.update(&p, 4.0, true);
        assert!(s2.mean < s1.update(&p, 4.0, false).mean);
        assert!(s2.var > s1.var);
        // Impulse moments (Table 2.4: E = 0.4, V = 0.15²).
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(5);
        let n = 50_000;
        let xs: Vec<f64> = (0..n).map(|_| p.sample_impulse(&mut rng)).collect();
        let m = xs.iter().sum::<f64>() / n as f64;
        let sd = (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n as f64).sqrt();
        assert!(
            (m - 0.4).abs() < 0.004 && (sd - 0.15).abs() < 0.004,
            "{m} {sd}"
        );
    }

    #[test]
    fn bad_force_parameters() {
        let no_spread = ForceParams {
            sample_sigma: 0.0,
            ..ForceParams::WALKER
        };
        let alpha_above_1 = ForceParams {
            alpha: 1.5,
            ..ForceParams::WALKER
        };
        for (bad, named) in [(no_spread, "sigma"), (alpha_above_1, "alpha")] {
            let e = bad.validate().unwrap_err();
            assert!(e.to_string().contains(named), "{e}");
        }
        assert!(SegmentPrior::from_table(0.5, 0.4, 0.1).is_err());
    }
}

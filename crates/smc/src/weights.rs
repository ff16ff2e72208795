//! Log-scale importance weights.
//!
//! A particle set carries unnormalised log-weights `ℓᵢ = log wᵢ`
//! (PHYSPRIOR Eq. 3.1). Everything else is derived from them once per update
//! with the log-sum-exp trick, so that weights of `e^{±700}` neither
//! overflow nor underflow:
//!
//! ```text
//!   ℓ* = maxᵢ ℓᵢ,   S = Σᵢ exp(ℓᵢ − ℓ*)
//!   log Σᵢ wᵢ = ℓ* + log S                       (log-sum)
//!   ŵᵢ = exp(ℓᵢ − ℓ*) / S                        (normalised weight)
//!   N_eff = 1 / Σᵢ ŵᵢ²                           (PHYSPRIOR Alg. 1, step 1)
//!   log-mean = log-sum − log N
//! ```
//!
//! With unit previous weights the log-mean of the incremental weights is the
//! log of the standard estimate of `p(y_t | y_{0:t−1})`; the filter uses
//! differences of log-sums, which also hold when it did not resample.
//!
//! A NaN or `+∞` log-weight is an error naming the particle; all weights
//! `−∞` is [`SmcError::AllWeightsZero`]. Sums are taken over fixed-size
//! chunks combined in order, so the result is bit-identical whatever the
//! number of rayon threads.

use rayon::prelude::*;

use crate::error::SmcError;

/// Chunk length of the deterministic chunked reductions.
const CHUNK: usize = 4096;
/// Below this many particles, reductions run on the calling thread.
const PAR_MIN: usize = 4 * CHUNK;

/// `log Σᵢ exp(xᵢ)`, computed stably.
///
/// Returns `−∞` for an empty slice or when every entry is `−∞`; NaN entries
/// propagate (use [`Weights::update`] to get an error instead).
///
/// ```
/// let l = smc::log_sum_exp(&[700.0, 700.0]);
/// assert!((l - (700.0 + 2f64.ln())).abs() < 1e-12);
/// ```
pub fn log_sum_exp(xs: &[f64]) -> f64 {
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if xs.iter().any(|x| x.is_nan()) {
        return f64::NAN;
    }
    if max.is_infinite() {
        return max;
    }
    max + xs.iter().map(|&x| (x - max).exp()).sum::<f64>().ln()
}

/// Normalised weights, ESS, log-sum and log-mean of a vector of log-weights,
/// computed once per update (the `particles` library's `Weights`).
#[derive(Debug, Clone)]
pub struct Weights {
    normalised: Vec<f64>,
    ess: f64,
    log_sum: f64,
    log_mean: f64,
    partials: Vec<(f64, f64)>,
}

/// No particles (filled by [`Weights::update`]).
impl Default for Weights {
    fn default() -> Self {
        Weights::uniform(0)
    }
}

impl Weights {
    /// Equal weights for `n` particles (`ŵᵢ = 1/n`, ESS = n).
    pub fn uniform(n: usize) -> Self {
        let mut w = Weights {
            normalised: Vec::new(),
            ess: 0.0,
            log_sum: f64::NEG_INFINITY,
            log_mean: f64::NEG_INFINITY,
            partials: Vec::new(),
        };
        w.set_uniform(n);
        w
    }

    /// Weights from log-weights.
    ///
    /// # Errors
    /// [`SmcError::Empty`], [`SmcError::NanLogWeight`],
    /// [`SmcError::InfiniteLogWeight`], [`SmcError::AllWeightsZero`].
    pub fn from_log_weights(log_weights: &[f64]) -> Result<Self, SmcError> {
        let mut w = Weights::uniform(0);
        w.update(log_weights)?;
        Ok(w)
    }

    /// Recompute everything from `log_weights`, reusing this value's buffers.
    /// On error `self` is unchanged.
    ///
    /// # Errors
    /// As [`Weights::from_log_weights`].
    pub fn update(&mut self, log_weights: &[f64]) -> Result<(), SmcError> {
        let n = log_weights.len();
        if n == 0 {
            return Err(SmcError::Empty);
        }
        let max = checked_max(log_weights)?;
        if max == f64::NEG_INFINITY {
            return Err(SmcError::AllWeightsZero { n });
        }
        self.normalised.resize(n, 0.0);
        // Pass 1: e_i = exp(ℓ_i − ℓ*), chunk sums of e_i and e_i².
        let exp_chunk = |(out, lw): (&mut [f64], &[f64])| {
            let (mut s1, mut s2) = (0.0, 0.0);
            for (o, &l) in out.iter_mut().zip(lw) {
                let e = (l - max).exp();
                *o = e;
                s1 += e;
                s2 += e * e;
            }
            (s1, s2)
        };
        self.partials.clear();
        if n <= PAR_MIN {
            self.partials.extend(
                self.normalised
                    .chunks_mut(CHUNK)
                    .zip(log_weights.chunks(CHUNK))
                    .map(exp_chunk),
            );
        } else {
            self.normalised
                .par_chunks_mut(CHUNK)
                .zip(log_weights.par_chunks(CHUNK))
                .map(exp_chunk)
                .collect_into_vec(&mut self.partials);
        }
        let (s1, s2) = self
            .partials
            .iter()
            .fold((0.0, 0.0), |(a, b), &(c, d)| (a + c, b + d));
        // Pass 2: normalise. s1 ≥ 1 because the maximum contributes exp(0).
        let inv = 1.0 / s1;
        if n <= PAR_MIN {
            self.normalised.iter_mut().for_each(|w| *w *= inv);
        } else {
            self.normalised
                .par_chunks_mut(CHUNK)
                .for_each(|c| c.iter_mut().for_each(|w| *w *= inv));
        }
        self.ess = s1 * s1 / s2;
        self.log_sum = max + s1.ln();
        self.log_mean = self.log_sum - (n as f64).ln();
        Ok(())
    }

    /// Set equal weights for `n` particles without computing exponentials.
    pub fn set_uniform(&mut self, n: usize) {
        self.normalised.clear();
        self.normalised.resize(n, 1.0 / n as f64);
        self.ess = n as f64;
        // Uniform weights are log-weights all 0: log-sum = log n.
        self.log_sum = (n as f64).ln();
        self.log_mean = 0.0;
    }

    /// Normalised weights `ŵᵢ`, summing to 1.
    pub fn normalised(&self) -> &[f64] {
        &self.normalised
    }

    /// Effective sample size `1 / Σ ŵᵢ²` (PHYSPRIOR Alg. 1), in `[1, N]`.
    pub fn ess(&self) -> f64 {
        self.ess
    }

    /// `log Σᵢ exp(ℓᵢ)`.
    pub fn log_sum(&self) -> f64 {
        self.log_sum
    }

    /// `log((1/N) Σᵢ exp(ℓᵢ))`.
    pub fn log_mean(&self) -> f64 {
        self.log_mean
    }

    /// Number of particles.
    pub fn len(&self) -> usize {
        self.normalised.len()
    }

    /// True when there are no particles.
    pub fn is_empty(&self) -> bool {
        self.normalised.is_empty()
    }
}

/// Maximum of `xs`, or the error for the first NaN / `+∞` entry.
fn checked_max(xs: &[f64]) -> Result<f64, SmcError> {
    // `f64::max` ignores NaN, so the maximum is well defined; scan for bad
    // entries only when the cheap test says there is one.
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let any_nan = xs.iter().fold(false, |acc, x| acc | x.is_nan());
    if any_nan || max == f64::INFINITY {
        for (index, &x) in xs.iter().enumerate() {
            if x.is_nan() {
                return Err(SmcError::NanLogWeight { index });
            }
            if x == f64::INFINITY {
                return Err(SmcError::InfiniteLogWeight { index });
            }
        }
    }
    Ok(max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ess_is_n_for_equal_weights() {
        for n in [1usize, 7, 1000, 50_000] {
            let w = Weights::from_log_weights(&vec![-3.25; n]).unwrap();
            assert!((w.ess() - n as f64).abs() <= 1e-9 * n as f64, "n = {n}");
            assert!((w.log_mean() + 3.25).abs() < 1e-12);
            assert!((w.log_sum() - (n as f64).ln() + 3.25).abs() < 1e-9);
        }
    }

    #[test]
    fn ess_is_one_for_a_single_nonzero_weight() {
        let mut lw = vec![f64::NEG_INFINITY; 100];
        lw[42] = -1234.5;
        let w = Weights::from_log_weights(&lw).unwrap();
        assert_eq!(w.ess(), 1.0);
        assert_eq!(w.normalised()[42], 1.0);
        assert_eq!(w.log_sum(), -1234.5);
        assert_eq!(w.normalised().iter().filter(|&&x| x != 0.0).count(), 1);
    }

    #[test]
    fn log_sum_exp_is_stable_at_plus_minus_700() {
        for base in [700.0, -700.0, 1e4, -1e4] {
            let l = log_sum_exp(&[base, base, base]);
            assert!((l - (base + 3f64.ln())).abs() < 1e-12 * base.abs().max(1.0));
            // `base − ln 2` is itself rounded to the ulp of `base` (2e-12 at
            // 1e4), which bounds the error of the normalised weight.
            let w = Weights::from_log_weights(&[base, base - 2f64.ln()]).unwrap();
            let ulp = f64::EPSILON * base.abs();
            assert!((w.normalised()[0] - 2.0 / 3.0).abs() < 2.0 * ulp + 1e-15);
            assert!((w.log_sum() - (base + 1.5f64.ln())).abs() < 1e-12 * base.abs());
        }
        // Mixed extremes: e^700 dominates e^-700 completely.
        let w = Weights::from_log_weights(&[700.0, -700.0]).unwrap();
        assert_eq!(w.normalised(), &[1.0, 0.0]);
        // The weights are exactly (1, 0) (e^-1400 underflows), so
        // N_eff = 1/Σŵ² = 1; one ulp allows a different summation order.
        assert!((w.ess() - 1.0).abs() <= f64::EPSILON, "{}", w.ess());
        assert_eq!(log_sum_exp(&[]), f64::NEG_INFINITY);
        assert_eq!(log_sum_exp(&[f64::NEG_INFINITY; 3]), f64::NEG_INFINITY);
    }

    #[test]
    fn nan_and_infinite_log_weights_name_the_particle() {
        let mut lw = vec![0.0; 10];
        lw[3] = f64::NAN;
        lw[7] = f64::NAN;
        assert!(matches!(
            Weights::from_log_weights(&lw),
            Err(SmcError::NanLogWeight { index: 3 })
        ));
        let mut lw = vec![0.0; 10];
        lw[5] = f64::INFINITY;
        assert!(matches!(
            Weights::from_log_weights(&lw),
            Err(SmcError::InfiniteLogWeight { index: 5 })
        ));
        // The message names the particle.
        let e = Weights::from_log_weights(&[0.0, f64::NAN]).unwrap_err();
        assert_eq!(e.to_string(), "log-weight of particle 1 is NaN");
    }

    #[test]
    fn all_minus_infinity_is_an_error_and_leaves_weights_unchanged() {
        let mut w = Weights::from_log_weights(&[0.0, 1.0]).unwrap();
        let before = w.normalised().to_vec();
        let e = w.update(&[f64::NEG_INFINITY; 2]).unwrap_err();
        assert!(matches!(e, SmcError::AllWeightsZero { n: 2 }));
        assert_eq!(w.normalised(), &before[..]);
        assert!(matches!(
            Weights::from_log_weights(&[]),
            Err(SmcError::Empty)
        ));
    }

    #[test]
    fn parallel_and_sequential_paths_agree_bitwise() {
        // Above PAR_MIN the chunked sums run on rayon; the chunking is fixed,
        // so a 1-thread pool gives the same bits.
        let lw: Vec<f64> = (0..(PAR_MIN * 3 + 17))
            .map(|i| ((i * 7919) % 1000) as f64 * -0.01)
            .collect();
        let (a, b) = crate::on_one_and_two_threads(|| Weights::from_log_weights(&lw).unwrap());
        assert_eq!(a.ess().to_bits(), b.ess().to_bits());
        assert_eq!(a.log_sum().to_bits(), b.log_sum().to_bits());
        assert!(
            a.normalised()
                .iter()
                .zip(b.normalised())
                .all(|(x, y)| x.to_bits() == y.to_bits())
        );
    }

    proptest! {
        #[test]
        fn normalised_weights_sum_to_one_and_ess_is_bounded(
            lw in prop::collection::vec(-800.0f64..800.0, 1..200)
        ) {
            let w = Weights::from_log_weights(&lw).unwrap();
            let n = lw.len() as f64;
            let s: f64 = w.normalised().iter().sum();
            prop_assert!((s - 1.0).abs() < 1e-12);
            prop_assert!(w.ess() >= 1.0 - 1e-12 && w.ess() <= n * (1.0 + 1e-12));
            prop_assert!((w.log_sum() - log_sum_exp(&lw)).abs() < 1e-9);
        }

        #[test]
        fn normalised_weights_are_shift_invariant(
            lw in prop::collection::vec(-50.0f64..50.0, 1..100),
            shift in -600.0f64..600.0,
        ) {
            let a = Weights::from_log_weights(&lw).unwrap();
            let shifted: Vec<f64> = lw.iter().map(|x| x + shift).collect();
            let b = Weights::from_log_weights(&shifted).unwrap();
            for (x, y) in a.normalised().iter().zip(b.normalised()) {
                prop_assert!((x - y).abs() < 1e-12);
            }
            prop_assert!((b.log_sum() - a.log_sum() - shift).abs() < 1e-9);
            prop_assert!((a.ess() - b.ess()).abs() < 1e-9 * a.ess());
        }
    }
}

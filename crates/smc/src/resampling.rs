//! Resampling schemes: normalised weights → ancestor indices.
//!
//! Given weights `ŵ₁..ŵ_N` (PHYSPRIOR Eq. 3.1, normalised) a scheme draws
//! `M` ancestor indices `a₁..a_M`; particle `i` gets `nᵢ = #{j : aⱼ = i}`
//! offspring. The random schemes are unbiased, `E[nᵢ] = M ŵᵢ`, and differ in
//! the variance of `nᵢ` (PHYSPRIOR §3.1; Douc, Cappé & Moulines 2005):
//!
//! | scheme | how `nᵢ` arises | support of `nᵢ` |
//! |---|---|---|
//! | [`multinomial`] | `M` iid draws from `ŵ` ("simple random resampling") | `0..=M` |
//! | [`stratified`] | one uniform in each stratum `[(j)/M, (j+1)/M)` | within 1 of `{⌊Mŵᵢ⌋, ⌈Mŵᵢ⌉}` |
//! | [`systematic`] | one uniform `U`, points `(j+U)/M` | `{⌊Mŵᵢ⌋, ⌈Mŵᵢ⌉}` |
//! | [`residual`] | `⌊Mŵᵢ⌋` kept, the rest multinomial on the residuals (PHYSPRIOR §3.1) | `≥ ⌊Mŵᵢ⌋` |
//! | [`parent_children`] | RTPF §IV-B (HSPC): `⌊Mŵᵢ⌋` children, remainder to the largest residuals | `{⌊Mŵᵢ⌋, ⌈Mŵᵢ⌉}`, deterministic |
//!
//! HSPC is deterministic and therefore *not* unbiased; it is the
//! proportional-representation ("largest remainder") rule of the paper.
//!
//! Every scheme has the same signature,
//! `fn(weights: &[f64], m: usize, rng: &mut R, out: &mut Vec<usize>)`, and
//! writes the ancestors in ascending order, so the children of one parent
//! are contiguous (RTPF §V step 2 works on such groups). `out` is reused:
//! once it has capacity `max(N, M + 1)` no scheme allocates (systematic
//! uses one extra slot, HSPC uses `out` as scratch for its selection).
//!
//! The weights need not sum exactly to one: any finite, non-negative weights
//! with a positive sum are scaled by their sum. A negative, NaN or infinite
//! weight is [`SmcError::InvalidWeight`]; all zero is
//! [`SmcError::AllWeightsZero`].

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use rand::{Rng, RngExt, SeedableRng};
use rand_distr::Exp1;
use rand_pcg::Pcg64Mcg;

use crate::error::SmcError;

/// The resampling schemes, for configuration and command lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resampling {
    /// [`multinomial`].
    Multinomial,
    /// [`stratified`].
    Stratified,
    /// [`systematic`].
    Systematic,
    /// [`residual`].
    Residual,
    /// [`parent_children`] (RTPF HSPC).
    ParentChildren,
}

impl Resampling {
    /// All schemes, in the order of the module table.
    pub const ALL: [Resampling; 5] = [
        Resampling::Multinomial,
        Resampling::Stratified,
        Resampling::Systematic,
        Resampling::Residual,
        Resampling::ParentChildren,
    ];

    /// Run this scheme (see the module docs for the contract).
    ///
    /// # Errors
    /// As the scheme's function.
    pub fn resample<R: Rng + ?Sized>(
        self,
        weights: &[f64],
        m: usize,
        rng: &mut R,
        out: &mut Vec<usize>,
    ) -> Result<(), SmcError> {
        match self {
            Resampling::Multinomial => multinomial(weights, m, rng, out),
            Resampling::Stratified => stratified(weights, m, rng, out),
            Resampling::Systematic => systematic(weights, m, rng, out),
            Resampling::Residual => residual(weights, m, rng, out),
            Resampling::ParentChildren => parent_children(weights, m, rng, out),
        }
    }

    /// The lower-case name used by [`FromStr`] and [`fmt::Display`].
    pub fn name(self) -> &'static str {
        match self {
            Resampling::Multinomial => "multinomial",
            Resampling::Stratified => "stratified",
            Resampling::Systematic => "systematic",
            Resampling::Residual => "residual",
            Resampling::ParentChildren => "hspc",
        }
    }
}

impl fmt::Display for Resampling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Error of [`Resampling::from_str`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown resampling scheme `{0}` (expected multinomial, stratified, systematic, residual or hspc)"
)]
pub struct UnknownScheme(pub String);

impl FromStr for Resampling {
    type Err = UnknownScheme;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Resampling::ALL
            .into_iter()
            .find(|r| r.name().eq_ignore_ascii_case(s))
            .or_else(|| {
                s.eq_ignore_ascii_case("parent-children")
                    .then_some(Resampling::ParentChildren)
            })
            .ok_or_else(|| UnknownScheme(s.to_owned()))
    }
}

/// Sum of the weights after checking each is finite and non-negative.
///
/// One vectorisable pass: four running sums and minima (combined in a fixed
/// order, so the result is deterministic). A NaN or `+∞` weight makes the
/// sum non-finite and a negative one the minimum negative; only then is the
/// offending index searched for.
fn checked_total(weights: &[f64]) -> Result<f64, SmcError> {
    let mut acc = [0.0; 4];
    let mut low = [f64::INFINITY; 4];
    let chunks = weights.chunks_exact(4);
    let tail = chunks.remainder();
    for c in chunks {
        for k in 0..4 {
            acc[k] += c[k];
            low[k] = if c[k] < low[k] { c[k] } else { low[k] };
        }
    }
    for &w in tail {
        acc[0] += w;
        low[0] = if w < low[0] { w } else { low[0] };
    }
    let total = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    let min = low[0].min(low[1]).min(low[2].min(low[3]));
    // `low` never holds a NaN (comparisons with NaN are false).
    if min < 0.0 || !total.is_finite() {
        let valid = |w: f64| (0.0..f64::INFINITY).contains(&w);
        if let Some((index, &value)) = weights.iter().enumerate().find(|&(_, &w)| !valid(w)) {
            return Err(SmcError::InvalidWeight { index, value });
        }
        if !weights.is_empty() {
            // Finite, non-negative weights whose sum overflows.
            return Err(SmcError::InvalidParameter {
                name: "sum of weights",
                value: total,
                reason: "must be finite",
            });
        }
    }
    if total <= 0.0 {
        return Err(SmcError::AllWeightsZero { n: weights.len() });
    }
    Ok(total)
}

/// Index of the last positive weight (exists once `checked_total` passed).
fn last_positive(weights: &[f64]) -> usize {
    weights.iter().rposition(|&w| w > 0.0).unwrap_or(0)
}

/// Pad `out` to `m` entries with the last positive-weight particle. Only
/// floating-point rounding in the cumulative sums (the last point falling a
/// few ulps above the total) ever leaves `out` short.
fn pad(weights: &[f64], m: usize, out: &mut Vec<usize>) {
    if out.len() < m {
        let last = last_positive(weights);
        out.resize(m, last);
    }
}

/// The start every scheme shares once the weights are checked: `out`
/// emptied, with room for `m` ancestors, and the factor `m / total` that
/// scales the weights to sum to `m` (`None` when `m = 0`: nothing to draw).
fn begin(m: usize, total: f64, out: &mut Vec<usize>) -> Option<f64> {
    out.clear();
    out.reserve(m);
    (m > 0).then(|| m as f64 / total)
}

/// Inverse-CDF selection of increasing points `p(0) < p(1) < … < p(m−1)`,
/// given in units where the weights sum to `m`: ancestor `j` is the first `i`
/// with `C_i = (m/total) Σ_{k≤i} wₖ > p(j)`.
#[inline]
fn inverse_cdf(
    weights: &[f64],
    m: usize,
    total: f64,
    mut point: impl FnMut(usize) -> f64,
    out: &mut Vec<usize>,
) {
    let Some(scale) = begin(m, total, out) else {
        return;
    };
    let mut cum = 0.0;
    let mut j = 0;
    let mut next = point(0);
    for (i, &w) in weights.iter().enumerate() {
        cum += w * scale;
        while next < cum {
            out.push(i);
            j += 1;
            if j == m {
                return;
            }
            next = point(j);
        }
    }
    pad(weights, m, out);
}

/// Multinomial ("simple random") resampling, PHYSPRIOR §3.1: `M` iid draws
/// with `P(aⱼ = i) = ŵᵢ`, so `nᵢ ~ Binomial(M, ŵᵢ)` jointly multinomial.
///
/// The `M` uniforms are generated already sorted (by exponential
/// spacings), so one merge pass gives the ancestors in O(N + M) without
/// scratch memory.
///
/// # Errors
/// See the module docs.
pub fn multinomial<R: Rng + ?Sized>(
    weights: &[f64],
    m: usize,
    rng: &mut R,
    out: &mut Vec<usize>,
) -> Result<(), SmcError> {
    let total = checked_total(weights)?;
    let mut sorted = SortedUniforms::new(m, rng);
    inverse_cdf(weights, m, total, |_| sorted.next() * m as f64, out);
    Ok(())
}

/// Stratified resampling: one point uniform in each stratum,
/// `pⱼ = (j + Uⱼ)/M` with independent `Uⱼ ~ U[0,1)`. Unbiased, with
/// `|nᵢ − Mŵᵢ| < 2`.
///
/// # Errors
/// See the module docs.
pub fn stratified<R: Rng + ?Sized>(
    weights: &[f64],
    m: usize,
    rng: &mut R,
    out: &mut Vec<usize>,
) -> Result<(), SmcError> {
    let total = checked_total(weights)?;
    inverse_cdf(weights, m, total, |j| j as f64 + rng.random::<f64>(), out);
    Ok(())
}

/// Systematic resampling: points `pⱼ = (j + U)/M` for one `U ~ U[0,1)`.
/// Unbiased, with `nᵢ ∈ {⌊Mŵᵢ⌋, ⌈Mŵᵢ⌉}` always.
///
/// Written without data-dependent branches (this is the ≥ 10⁸ particles/s
/// scheme). With `Cᵢ = M Σ_{k≤i} ŵₖ`, the number of points below `Cᵢ` is
/// `kᵢ = #{j : j + U < Cᵢ} = ⌈Cᵢ − U⌉` (clamped to `[0, M]`), and since
/// the `kᵢ` increase, ancestor `j` is `aⱼ = #{i : kᵢ ≤ j}`: a histogram of
/// the `kᵢ` followed by a prefix sum. The last positive-weight particle is
/// given `k = M` so that rounding in `Cᵢ` can never leave a slot to a
/// zero-weight particle.
///
/// # Errors
/// See the module docs.
pub fn systematic<R: Rng + ?Sized>(
    weights: &[f64],
    m: usize,
    rng: &mut R,
    out: &mut Vec<usize>,
) -> Result<(), SmcError> {
    let total = checked_total(weights)?;
    let u: f64 = rng.random();
    let Some(scale) = begin(m, total, out) else {
        return Ok(());
    };
    // Histogram of the kᵢ; bin M collects the particles with no point after
    // them (they are nobody's ancestor past the end).
    out.resize(m + 1, 0);
    let last = last_positive(weights);
    let mut cum = 0.0;
    for &w in &weights[..last] {
        cum += w * scale;
        out[ceil_count(cum - u).min(m)] += 1;
    }
    out.truncate(m);
    let mut ancestor = 0;
    for a in out.iter_mut() {
        ancestor += *a;
        *a = ancestor;
    }
    Ok(())
}

/// `max(⌈x⌉, 0)` as an integer, without a libm call (`f64::ceil` is one on
/// baseline x86-64): the cast truncates and saturates negatives to 0.
#[inline]
fn ceil_count(x: f64) -> usize {
    let t = x as usize;
    t + usize::from((t as f64) < x)
}

/// `⌊x⌋` for `x ≥ 0` (the cast truncates), without a libm call.
#[inline]
fn floor_count(x: f64) -> usize {
    x as usize
}

/// Residual resampling, PHYSPRIOR §3.1: particle `i` first keeps
/// `kᵢ = ⌊Mŵᵢ⌋` copies; the remaining `R = M − Σkᵢ` ancestors are drawn by
/// simple random (multinomial) resampling with weights proportional to the
/// residuals `Mŵᵢ − kᵢ`. Unbiased, with `nᵢ ≥ ⌊Mŵᵢ⌋`.
///
/// # Errors
/// See the module docs.
pub fn residual<R: Rng + ?Sized>(
    weights: &[f64],
    m: usize,
    rng: &mut R,
    out: &mut Vec<usize>,
) -> Result<(), SmcError> {
    let total = checked_total(weights)?;
    let Some(scale) = begin(m, total, out) else {
        return Ok(());
    };
    // Pass 1: the deterministic part and the residual mass.
    let (mut kept, mut residual_mass) = (0usize, 0.0);
    for &w in weights {
        let x = w * scale;
        let k = floor_count(x);
        kept += k;
        residual_mass += x - k as f64;
    }
    let r = m.saturating_sub(kept);
    // Pass 2: floor copies plus the sorted multinomial draws on residuals.
    let mut sorted = SortedUniforms::new(r, rng);
    let mut drawn = 0usize;
    let mut next = if r > 0 {
        sorted.next() * residual_mass
    } else {
        f64::INFINITY
    };
    let mut cum = 0.0;
    for (i, &w) in weights.iter().enumerate() {
        let x = w * scale;
        let k = floor_count(x);
        cum += x - k as f64;
        let mut count = k;
        while next < cum {
            count += 1;
            drawn += 1;
            next = if drawn < r {
                sorted.next() * residual_mass
            } else {
                f64::INFINITY
            };
        }
        let count = count.min(m - out.len());
        out.extend(std::iter::repeat_n(i, count));
    }
    pad(weights, m, out);
    Ok(())
}

/// Parent–children selection, RTPF §IV-B (HSPC): each parent gets
/// `nᵢ = N ŵᵢ` children rounded by the largest-remainder rule — `⌊Mŵᵢ⌋`
/// children each, then the `R = M − Σ⌊Mŵᵢ⌋` remaining children go one each
/// to the parents with the largest residuals `Mŵᵢ − ⌊Mŵᵢ⌋` (ties to the
/// lower index). Deterministic: `rng` is not used. Not unbiased.
///
/// Uses `out` as scratch for the selection, so it needs capacity
/// `max(N, M)` to run without allocating.
///
/// # Errors
/// See the module docs.
pub fn parent_children<R: Rng + ?Sized>(
    weights: &[f64],
    m: usize,
    _rng: &mut R,
    out: &mut Vec<usize>,
) -> Result<(), SmcError> {
    let total = checked_total(weights)?;
    let Some(scale) = begin(m, total, out) else {
        return Ok(());
    };
    let residual_of = |w: f64| {
        let x = w * scale;
        x - floor_count(x) as f64
    };
    let kept: usize = weights.iter().map(|&w| floor_count(w * scale)).sum();
    let r = m.saturating_sub(kept);
    // The R-th largest residual in the total order (residual desc, index asc).
    let threshold = if r == 0 {
        None
    } else {
        let rank = |a: &usize, b: &usize| -> Ordering {
            residual_of(weights[*b])
                .total_cmp(&residual_of(weights[*a]))
                .then(a.cmp(b))
        };
        out.extend(0..weights.len());
        let pivot = (r - 1).min(weights.len() - 1);
        let (_, &mut t, _) = out.select_nth_unstable_by(pivot, rank);
        out.clear();
        Some((residual_of(weights[t]), t))
    };
    for (i, &w) in weights.iter().enumerate() {
        let x = w * scale;
        let mut count = floor_count(x);
        if let Some((rt, it)) = threshold {
            let res = x - count as f64;
            let in_top = res > rt || (res == rt && i <= it);
            if in_top && w > 0.0 {
                count += 1;
            }
        }
        let count = count.min(m - out.len());
        out.extend(std::iter::repeat_n(i, count));
    }
    pad(weights, m, out);
    Ok(())
}

/// Ascending order statistics of `n` iid `U[0,1)` draws, one at a time, by
/// exponential spacings: with `Eₖ ~ Exp(1)` and `Sₖ = E₁ + … + Eₖ`,
/// `(S₁, …, Sₙ) / Sₙ₊₁` are distributed as the sorted uniforms. `Sₙ₊₁` is
/// needed first, so a private generator (seeded from the caller's) is run
/// twice: once to sum, once to emit. The sums are formed in the same order
/// both times, so every emitted value is `≤ 1`.
struct SortedUniforms {
    spacings: Pcg64Mcg,
    partial: f64,
    total: f64,
}

impl SortedUniforms {
    fn new<R: Rng + ?Sized>(n: usize, rng: &mut R) -> Self {
        let spacings = Pcg64Mcg::from_rng(rng);
        let mut first_pass = spacings.clone();
        let mut total = 0.0;
        for _ in 0..=n {
            total += first_pass.sample::<f64, _>(Exp1);
        }
        SortedUniforms {
            spacings,
            partial: 0.0,
            total,
        }
    }

    #[inline]
    fn next(&mut self) -> f64 {
        self.partial += self.spacings.sample::<f64, _>(Exp1);
        self.partial / self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{StreamDomain, stream_rng};
    use proptest::prelude::*;

    /// Offspring counts of `ancestors` for `n` particles.
    fn counts(ancestors: &[usize], n: usize) -> Vec<usize> {
        let mut c = vec![0; n];
        for &a in ancestors {
            c[a] += 1;
        }
        c
    }

    /// Test weights: uneven, with a zero, a dominant particle and tiny ones.
    fn test_weights() -> Vec<f64> {
        let raw = [
            0.0, 3.7, 0.05, 1.0, 12.3, 0.9, 0.001, 2.2, 0.0, 4.4, 0.35, 1.5,
        ];
        let s: f64 = raw.iter().sum();
        raw.iter().map(|w| w / s).collect()
    }

    /// Upper bound on Var(nᵢ) for one draw of `m` ancestors, from theory.
    fn variance_bound(scheme: Resampling, w: &[f64], i: usize, m: usize) -> f64 {
        let x = m as f64 * w[i];
        let f = x - x.floor();
        match scheme {
            Resampling::Multinomial => m as f64 * w[i] * (1.0 - w[i]),
            // nᵢ = ⌊x⌋ + Bernoulli(f).
            Resampling::Systematic => f * (1.0 - f),
            // nᵢ = (strata fully inside) + at most two independent
            // Bernoulli end strata: Var ≤ 2 · 1/4.
            Resampling::Stratified => 0.5,
            // nᵢ = kᵢ + Binomial(R, rᵢ/R).
            Resampling::Residual => {
                let r: f64 = w
                    .iter()
                    .map(|&wk| m as f64 * wk - (m as f64 * wk).floor())
                    .sum();
                let p = f / r.max(f64::MIN_POSITIVE);
                r.round() * p * (1.0 - p)
            }
            Resampling::ParentChildren => 0.0,
        }
    }

    #[test]
    fn random_schemes_are_unbiased() {
        // Over `reps` independent draws the mean offspring count of particle
        // i must be M ŵᵢ; the z-score uses the variance bound above, and
        // 5 sd (two-sided p ≈ 6·10⁻⁷ per comparison) is the margin.
        let w = test_weights();
        let reps = 20_000;
        let mut out = Vec::new();
        for scheme in [
            Resampling::Multinomial,
            Resampling::Stratified,
            Resampling::Systematic,
            Resampling::Residual,
        ] {
            for m in [w.len(), 7, 50] {
                let mut sum = vec![0usize; w.len()];
                let mut rng = stream_rng(2024, m as u64, StreamDomain::User(scheme as u32), 0);
                for _ in 0..reps {
                    scheme.resample(&w, m, &mut rng, &mut out).unwrap();
                    assert_eq!(out.len(), m);
                    for (s, c) in sum.iter_mut().zip(counts(&out, w.len())) {
                        *s += c;
                    }
                }
                for i in 0..w.len() {
                    let mean = sum[i] as f64 / reps as f64;
                    let expected = m as f64 * w[i];
                    let sd = (variance_bound(scheme, &w, i, m) / reps as f64).sqrt();
                    assert!(
                        (mean - expected).abs() <= 5.0 * sd + 1e-12,
                        "{scheme} M={m} particle {i}: mean {mean}, expected {expected}, sd {sd}"
                    );
                }
            }
        }
    }

    #[test]
    fn multinomial_counts_pass_a_chi_square_test() {
        // One big draw: Σ (nᵢ − Mŵᵢ)² / (Mŵᵢ) over positive weights is χ²
        // with k−1 = 9 degrees of freedom; P(χ²₉ > 40) ≈ 7·10⁻⁶.
        let w = test_weights();
        let m = 1_000_000;
        let mut out = Vec::new();
        multinomial(
            &w,
            m,
            &mut stream_rng(5, 0, StreamDomain::User(1), 0),
            &mut out,
        )
        .unwrap();
        let c = counts(&out, w.len());
        let chi2: f64 = w
            .iter()
            .zip(&c)
            .filter(|(wi, _)| **wi > 0.0)
            .map(|(&wi, &ci)| (ci as f64 - m as f64 * wi).powi(2) / (m as f64 * wi))
            .sum();
        assert!(chi2 < 40.0, "chi2 = {chi2}");
    }

    #[test]
    fn hspc_is_largest_remainder() {
        // Weights exact in binary. M = 5, ŵ = (5/16, 5/16, 1/4, 1/8):
        // Mŵ = 1.5625, 1.5625, 1.25, 0.625 → floors 1, 1, 1, 0 (3 kept); the
        // R = 2 extra children go to the residuals 0.625 (i = 3) and 0.5625
        // (tie between i = 0 and i = 1, won by the lower index).
        let mut rng = stream_rng(0, 0, StreamDomain::User(0), 0);
        let mut out = Vec::new();
        parent_children(&[0.3125, 0.3125, 0.25, 0.125], 5, &mut rng, &mut out).unwrap();
        assert_eq!(out, vec![0, 0, 1, 2, 3]);
        // M = 4, ŵ = (3/8, 3/8, 1/4): Mŵ = 1.5, 1.5, 1 → R = 1, tie → i = 0.
        parent_children(&[0.375, 0.375, 0.25], 4, &mut rng, &mut out).unwrap();
        assert_eq!(out, vec![0, 0, 1, 2]);
        // Equal weights: every particle has exactly one child.
        parent_children(&[0.25; 4], 4, &mut rng, &mut out).unwrap();
        assert_eq!(out, vec![0, 1, 2, 3]);
        // Unnormalised weights give the same children as normalised ones.
        parent_children(&[3.0, 3.0, 2.0], 4, &mut rng, &mut out).unwrap();
        assert_eq!(out, vec![0, 0, 1, 2]);
    }

    #[test]
    fn invalid_weights_are_errors() {
        let mut rng = stream_rng(0, 0, StreamDomain::User(0), 0);
        let mut out = Vec::new();
        for scheme in Resampling::ALL {
            let e = scheme
                .resample(&[0.5, f64::NAN, 0.5], 3, &mut rng, &mut out)
                .unwrap_err();
            assert!(
                matches!(e, SmcError::InvalidWeight { index: 1, .. }),
                "{scheme}: {e}"
            );
            let e = scheme
                .resample(&[0.5, -0.1], 3, &mut rng, &mut out)
                .unwrap_err();
            assert!(
                matches!(e, SmcError::InvalidWeight { index: 1, .. }),
                "{scheme}: {e}"
            );
            let e = scheme
                .resample(&[0.0, 0.0], 3, &mut rng, &mut out)
                .unwrap_err();
            assert!(
                matches!(e, SmcError::AllWeightsZero { n: 2 }),
                "{scheme}: {e}"
            );
            let e = scheme.resample(&[], 3, &mut rng, &mut out).unwrap_err();
            assert!(
                matches!(e, SmcError::AllWeightsZero { n: 0 }),
                "{scheme}: {e}"
            );
            scheme.resample(&[1.0], 0, &mut rng, &mut out).unwrap();
            assert!(out.is_empty());
        }
    }

    #[test]
    fn names_round_trip() {
        for s in Resampling::ALL {
            assert_eq!(s.name().parse::<Resampling>().unwrap(), s);
        }
        assert!("bogus".parse::<Resampling>().is_err());
    }

    fn weights_strategy() -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec(
            prop_oneof![Just(0.0), 0.0f64..1.0, 1e-9f64..1e-6, 10.0f64..100.0],
            1..60,
        )
        .prop_filter("some positive weight", |w| w.iter().any(|&x| x > 0.0))
    }

    proptest! {
        #[test]
        fn every_scheme_returns_m_sorted_valid_ancestors(
            w in weights_strategy(), m in 0usize..200, seed in any::<u64>(),
        ) {
            let mut rng = stream_rng(seed, 0, StreamDomain::User(0), 0);
            let mut out = Vec::new();
            for scheme in Resampling::ALL {
                scheme.resample(&w, m, &mut rng, &mut out).unwrap();
                prop_assert_eq!(out.len(), m);
                prop_assert!(out.windows(2).all(|p| p[0] <= p[1]), "{} not sorted", scheme);
                prop_assert!(out.iter().all(|&a| a < w.len() && w[a] > 0.0), "{} chose a zero weight", scheme);
            }
        }

        #[test]
        fn offspring_counts_lie_where_theory_says(
            w in weights_strategy(), m in 1usize..200, seed in any::<u64>(),
        ) {
            let total: f64 = w.iter().sum();
            let mut rng = stream_rng(seed, 1, StreamDomain::User(0), 0);
            let mut out = Vec::new();
            // Allow a relative 1e-9 slack where Mŵᵢ is (nearly) an integer.
            let eps = 1e-9 * m as f64;
            for scheme in Resampling::ALL {
                scheme.resample(&w, m, &mut rng, &mut out).unwrap();
                let c = counts(&out, w.len());
                for (i, &ci) in c.iter().enumerate() {
                    let x = m as f64 * w[i] / total;
                    let (lo, hi) = ((x - eps).floor(), (x + eps).ceil());
                    let n = ci as f64;
                    match scheme {
                        Resampling::Systematic | Resampling::ParentChildren => {
                            prop_assert!(n >= lo && n <= hi, "{} i={} n={} x={}", scheme, i, n, x);
                        }
                        Resampling::Residual => prop_assert!(n >= lo, "{} i={} n={} x={}", scheme, i, n, x),
                        Resampling::Stratified => {
                            prop_assert!((n - x).abs() < 2.0 + eps, "{} i={} n={} x={}", scheme, i, n, x);
                        }
                        Resampling::Multinomial => {}
                    }
                }
            }
        }
    }
}

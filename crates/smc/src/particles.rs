//! The particle set: `N` states of dimension `D` and their log-weights.
//!
//! States are one contiguous row-major `N × D` buffer of `f64` — particle
//! `i` is `states[i·D .. (i+1)·D]` — so a batched likelihood (CPU or GPU)
//! reads the whole cloud at once and nothing is allocated per particle.
//! Non-Euclidean states are packed into rows too: a unit quaternion is four
//! consecutive values `(w, x, y, z)` (see [`crate::estimate`]).
//!
//! Weights are stored as log-weights `ℓᵢ` (PHYSPRIOR Eq. 3.1); the
//! [`Weights`] derived from them are recomputed whenever they change.

use nalgebra::{DMatrix, UnitQuaternion};

use crate::error::SmcError;
use crate::estimate;
use crate::weights::Weights;

/// `N` weighted particles with `D`-dimensional states.
#[derive(Debug, Clone)]
pub struct ParticleSet {
    dim: usize,
    states: Vec<f64>,
    log_weights: Vec<f64>,
    weights: Weights,
}

/// The point estimates [`ParticleSet::estimate`] can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointEstimate {
    /// The state of the heaviest particle (SMC-IK Alg. 1 step 3).
    Map,
    /// The weighted mean `Σ ŵᵢ xᵢ` (Euclidean states).
    Mean,
}

impl ParticleSet {
    /// `n` particles with all-zero states and equal weights.
    ///
    /// # Errors
    /// [`SmcError::Empty`] if `n == 0`; [`SmcError::InvalidParameter`] if
    /// `dim == 0`, or if `n × dim` overflows or the state buffer cannot be
    /// allocated (an error, not an abort). Check a user-supplied `n` against
    /// [`ParticleSet::memory_estimate`] first: the allocator may promise more
    /// memory than the machine has.
    pub fn new(n: usize, dim: usize) -> Result<Self, SmcError> {
        let too_many = |reason| SmcError::InvalidParameter {
            name: "n",
            value: n as f64,
            reason,
        };
        let len = n
            .checked_mul(dim)
            .ok_or_else(|| too_many("n × dim overflows the address space"))?;
        let mut states = Vec::new();
        states
            .try_reserve_exact(len)
            .map_err(|_| too_many("not enough memory for the particle states"))?;
        states.resize(len, 0.0);
        Self::from_states(states, dim)
    }

    /// Bytes a set of `n` particles of dimension `dim` and a [`crate::Filter`]
    /// stepping it hold together: states and the filter's scratch states
    /// (`2·8·dim`), log-weights, normalised weights and the filter's four
    /// per-particle buffers and second weight set (`7·8`), rounded up to
    /// 96 + 16·dim bytes per particle for allocator slack. `None` if that
    /// overflows `usize`.
    pub fn memory_estimate(n: usize, dim: usize) -> Option<usize> {
        dim.checked_mul(16)
            .and_then(|d| d.checked_add(96))
            .and_then(|per| per.checked_mul(n))
    }

    /// Checks, before anything is allocated, that `n` particles of dimension
    /// `dim` and a filter stepping them ([`Self::memory_estimate`]) fit in
    /// the memory available now: `MemAvailable` of `/proc/meminfo` on Linux,
    /// 16 GiB where that cannot be read. For user-supplied particle counts
    /// (a command-line flag, a settings file).
    ///
    /// # Errors
    /// [`SmcError::Empty`] if `n == 0`; [`SmcError::InsufficientMemory`] if
    /// the estimate exceeds the memory available (or overflows).
    pub fn check_memory(n: usize, dim: usize) -> Result<(), SmcError> {
        Self::check_memory_against(n, dim, available_memory().unwrap_or(16 << 30))
    }

    /// [`Self::check_memory`] against a given number of available bytes.
    pub fn check_memory_against(n: usize, dim: usize, available: usize) -> Result<(), SmcError> {
        if n == 0 {
            return Err(SmcError::Empty);
        }
        let estimate = Self::memory_estimate(n, dim);
        let needed = estimate.unwrap_or(usize::MAX);
        if estimate.is_none() || needed > available {
            return Err(SmcError::InsufficientMemory {
                n,
                dim,
                needed,
                available,
            });
        }
        Ok(())
    }

    /// Particles from a row-major `N × D` buffer, with equal weights.
    ///
    /// # Errors
    /// [`SmcError::InvalidParameter`] if `dim == 0`,
    /// [`SmcError::ShapeMismatch`] if the length is not a multiple of `dim`,
    /// [`SmcError::Empty`] if the buffer is empty.
    pub fn from_states(states: Vec<f64>, dim: usize) -> Result<Self, SmcError> {
        if dim == 0 {
            return Err(SmcError::InvalidParameter {
                name: "dim",
                value: 0.0,
                reason: "a state needs at least one coordinate",
            });
        }
        if !states.len().is_multiple_of(dim) {
            return Err(SmcError::ShapeMismatch {
                what: "states (length must be a multiple of dim)",
                expected: states.len() / dim * dim,
                got: states.len(),
            });
        }
        let n = states.len() / dim;
        if n == 0 {
            return Err(SmcError::Empty);
        }
        Ok(ParticleSet {
            dim,
            states,
            log_weights: vec![0.0; n],
            weights: Weights::uniform(n),
        })
    }

    /// Number of particles `N`.
    pub fn len(&self) -> usize {
        self.log_weights.len()
    }

    /// Always false: a particle set has at least one particle.
    pub fn is_empty(&self) -> bool {
        self.log_weights.is_empty()
    }

    /// State dimension `D`.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The row-major `N × D` state buffer.
    pub fn states(&self) -> &[f64] {
        &self.states
    }

    /// Mutable state buffer (weights are not touched).
    pub fn states_mut(&mut self) -> &mut [f64] {
        &mut self.states
    }

    /// State of particle `i`.
    ///
    /// # Panics
    /// If `i >= N` (an index bug, like slice indexing).
    pub fn state(&self, i: usize) -> &[f64] {
        &self.states[i * self.dim..(i + 1) * self.dim]
    }

    /// The states as rows.
    pub fn rows(&self) -> std::slice::ChunksExact<'_, f64> {
        self.states.chunks_exact(self.dim)
    }

    /// Unnormalised log-weights `ℓᵢ`.
    pub fn log_weights(&self) -> &[f64] {
        &self.log_weights
    }

    /// Normalised weights, ESS and log-sum of the current log-weights.
    pub fn weights(&self) -> &Weights {
        &self.weights
    }

    /// Replace the log-weights and recompute [`Weights`]. On error nothing
    /// changes.
    ///
    /// # Errors
    /// [`SmcError::ShapeMismatch`], or those of [`Weights::update`].
    pub fn set_log_weights(&mut self, log_weights: &[f64]) -> Result<(), SmcError> {
        if log_weights.len() != self.len() {
            return Err(SmcError::ShapeMismatch {
                what: "log-weights",
                expected: self.len(),
                got: log_weights.len(),
            });
        }
        self.weights.update(log_weights)?;
        self.log_weights.copy_from_slice(log_weights);
        Ok(())
    }

    /// Equal weights (all log-weights 0).
    pub fn set_uniform_weights(&mut self) {
        self.log_weights.fill(0.0);
        self.weights.set_uniform(self.len());
    }

    /// Swap in new log-weights whose [`Weights`] are already computed in
    /// `weights` (the filter's allocation-free path). Both buffers are
    /// swapped, so the caller gets the old ones back as scratch.
    pub(crate) fn swap_weights(&mut self, log_weights: &mut Vec<f64>, weights: &mut Weights) {
        debug_assert_eq!(log_weights.len(), self.len());
        std::mem::swap(&mut self.log_weights, log_weights);
        std::mem::swap(&mut self.weights, weights);
    }

    /// Swap the state buffer with `other` (same length).
    pub(crate) fn swap_states(&mut self, other: &mut Vec<f64>) {
        debug_assert_eq!(other.len(), self.states.len());
        std::mem::swap(&mut self.states, other);
    }

    // ----- estimate stage --------------------------------------------------

    /// Index of the heaviest particle (lowest index on ties).
    pub fn map_index(&self) -> usize {
        estimate::argmax(&self.log_weights)
    }

    /// State of the heaviest particle: the MAP estimate of SMC-IK Alg. 1.
    pub fn map_state(&self) -> &[f64] {
        self.state(self.map_index())
    }

    /// Write a point estimate into `out` (length `D`), allocation-free.
    ///
    /// # Errors
    /// [`SmcError::ShapeMismatch`] if `out.len() != D`.
    pub fn estimate(&self, kind: PointEstimate, out: &mut [f64]) -> Result<(), SmcError> {
        match kind {
            PointEstimate::Map => {
                if out.len() != self.dim {
                    return Err(SmcError::ShapeMismatch {
                        what: "estimate output",
                        expected: self.dim,
                        got: out.len(),
                    });
                }
                out.copy_from_slice(self.map_state());
                Ok(())
            }
            PointEstimate::Mean => {
                estimate::weighted_mean_into(&self.states, self.dim, self.weights.normalised(), out)
            }
        }
    }

    /// Weighted mean `Σ ŵᵢ xᵢ`.
    pub fn mean(&self) -> Vec<f64> {
        let mut m = vec![0.0; self.dim];
        estimate::weighted_mean_into(&self.states, self.dim, self.weights.normalised(), &mut m)
            .expect("shapes are consistent by construction");
        m
    }

    /// Weighted covariance `Σ ŵᵢ (xᵢ − x̄)(xᵢ − x̄)ᵀ` (`D × D`).
    pub fn covariance(&self) -> DMatrix<f64> {
        estimate::weighted_covariance(&self.states, self.dim, self.weights.normalised())
            .expect("shapes are consistent by construction")
    }

    /// Weighted `p`-quantile of every coordinate (length `D`).
    ///
    /// # Errors
    /// [`SmcError::InvalidParameter`] unless `0 ≤ p ≤ 1`.
    pub fn quantiles(&self, p: f64) -> Result<Vec<f64>, SmcError> {
        estimate::weighted_quantiles(&self.states, self.dim, self.weights.normalised(), p)
    }

    /// Weighted mean of the unit quaternions stored `(w, x, y, z)` in columns
    /// `offset..offset + 4` (eigenvector method, see [`estimate::quaternion_mean`]).
    ///
    /// # Errors
    /// [`SmcError::ShapeMismatch`] if the columns do not exist.
    pub fn quaternion_mean(&self, offset: usize) -> Result<UnitQuaternion<f64>, SmcError> {
        if offset + 4 > self.dim {
            return Err(SmcError::ShapeMismatch {
                what: "quaternion columns (offset + 4 <= dim)",
                expected: self.dim,
                got: offset + 4,
            });
        }
        estimate::quaternion_mean_rows(&self.states, self.dim, offset, self.weights.normalised())
    }
}

/// `MemAvailable` from `/proc/meminfo`, in bytes (Linux only).
fn available_memory() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: usize = info
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn construction_checks_shapes() {
        assert!(matches!(ParticleSet::new(0, 3), Err(SmcError::Empty)));
        assert!(matches!(
            ParticleSet::new(3, 0),
            Err(SmcError::InvalidParameter { .. })
        ));
        assert!(matches!(
            ParticleSet::from_states(vec![0.0; 7], 2),
            Err(SmcError::ShapeMismatch { .. })
        ));
        let p = ParticleSet::from_states((0..6).map(f64::from).collect(), 2).unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p.state(2), &[4.0, 5.0]);
        assert_eq!(p.weights().ess(), 3.0);
    }

    #[test]
    fn huge_particle_counts_are_errors_not_aborts() {
        // n × dim overflows usize; n × 8 bytes exceeds isize::MAX.
        for (n, dim) in [(usize::MAX, 2), (1 << 61, 1)] {
            assert!(
                matches!(
                    ParticleSet::new(n, dim),
                    Err(SmcError::InvalidParameter { name: "n", .. })
                ),
                "{n} x {dim}"
            );
        }
        assert_eq!(ParticleSet::memory_estimate(usize::MAX, 1), None);
        assert_eq!(ParticleSet::memory_estimate(1000, 1), Some(112_000));
        // 1e11 particles need ~10 TiB: more than any test machine has.
        let e = ParticleSet::check_memory(100_000_000_000, 1).unwrap_err();
        assert!(
            matches!(
                e,
                SmcError::InsufficientMemory {
                    n: 100_000_000_000,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("GiB"), "{e}");
        assert!(ParticleSet::check_memory(1000, 1).is_ok());
        assert!(matches!(
            ParticleSet::check_memory(0, 1),
            Err(SmcError::Empty)
        ));
        assert!(ParticleSet::check_memory_against(1000, 1, 112_000).is_ok());
        assert!(ParticleSet::check_memory_against(1001, 1, 112_000).is_err());
        assert!(ParticleSet::check_memory_against(usize::MAX, 7, usize::MAX).is_err());
    }

    #[test]
    fn set_log_weights_rejects_bad_input_without_changing_anything() {
        let mut p = ParticleSet::new(3, 1).unwrap();
        p.set_log_weights(&[0.0, 1.0, 2.0]).unwrap();
        let before = p.log_weights().to_vec();
        assert!(matches!(
            p.set_log_weights(&[0.0, f64::NAN, 0.0]),
            Err(SmcError::NanLogWeight { index: 1 })
        ));
        assert!(matches!(
            p.set_log_weights(&[f64::NEG_INFINITY; 3]),
            Err(SmcError::AllWeightsZero { n: 3 })
        ));
        assert!(matches!(
            p.set_log_weights(&[0.0]),
            Err(SmcError::ShapeMismatch { .. })
        ));
        assert_eq!(p.log_weights(), &before[..]);
        assert_eq!(p.map_index(), 2);
    }

    #[test]
    fn point_estimates() {
        let mut p = ParticleSet::from_states(vec![0.0, 10.0, 2.0, 20.0, 4.0, 30.0], 2).unwrap();
        p.set_log_weights(&[0.5f64.ln(), 0.25f64.ln(), 0.25f64.ln()])
            .unwrap();
        let mut out = [0.0; 2];
        p.estimate(PointEstimate::Map, &mut out).unwrap();
        assert_eq!(out, [0.0, 10.0]);
        p.estimate(PointEstimate::Mean, &mut out).unwrap();
        assert!((out[0] - 1.5).abs() < 1e-12 && (out[1] - 17.5).abs() < 1e-12);
        assert!(p.estimate(PointEstimate::Mean, &mut [0.0; 3]).is_err());
        let c = p.covariance();
        // Var of x: 0.5·1.5² + 0.25·0.5² + 0.25·2.5² = 2.75; x and y = 5x+10.
        assert!((c[(0, 0)] - 2.75).abs() < 1e-12);
        assert!((c[(0, 1)] - 13.75).abs() < 1e-12 && (c[(1, 1)] - 68.75).abs() < 1e-10);
        assert_eq!(p.quantiles(0.5).unwrap(), vec![0.0, 10.0]);
        assert_eq!(p.quantiles(0.6).unwrap(), vec![2.0, 20.0]);
    }
}

//! Errors at the crate boundary.
//!
//! Every failure a caller can cause or must handle is a variant here, with
//! the particle, step or parameter it concerns. Nothing in `smc` returns a
//! NaN in place of an error.

use thiserror::Error;

/// A boxed error from a caller-supplied back end (a GPU likelihood, say).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong in the particle engine.
#[derive(Debug, Error)]
pub enum SmcError {
    /// A log-weight is NaN; the weight of that particle is undefined.
    #[error("log-weight of particle {index} is NaN")]
    NanLogWeight {
        /// The offending particle.
        index: usize,
    },
    /// A log-weight is +∞, so no normalised weight exists.
    #[error("log-weight of particle {index} is +inf")]
    InfiniteLogWeight {
        /// The offending particle.
        index: usize,
    },
    /// Every log-weight is −∞: the observation ruled out every particle.
    /// See [`crate::Filter::redraw_from_prior`] for a recovery.
    #[error("all {n} particles have zero weight (every log-weight is -inf)")]
    AllWeightsZero {
        /// Number of particles.
        n: usize,
    },
    /// The likelihood back end wrote a NaN log-likelihood.
    #[error("log-likelihood of particle {index} is NaN at step {step}")]
    NanLikelihood {
        /// The offending particle.
        index: usize,
        /// The filter step.
        step: usize,
    },
    /// The proposal returned a NaN importance correction (PHYSPRIOR Eq. 3.2).
    #[error("importance correction of particle {index} is NaN at step {step}")]
    NanCorrection {
        /// The offending particle.
        index: usize,
        /// The filter step.
        step: usize,
    },
    /// A (normalised) weight handed to a resampling scheme or estimator is
    /// negative, NaN or infinite.
    #[error("weight {index} is {value}; weights must be finite and non-negative")]
    InvalidWeight {
        /// Position of the weight.
        index: usize,
        /// Its value.
        value: f64,
    },
    /// A function that needs at least one particle got none.
    #[error("empty particle set: at least one particle is needed")]
    Empty,
    /// Buffer sizes do not agree.
    #[error("shape mismatch in {what}: expected {expected}, got {got}")]
    ShapeMismatch {
        /// Which buffer.
        what: &'static str,
        /// Expected length.
        expected: usize,
        /// Actual length.
        got: usize,
    },
    /// A parameter is outside its domain.
    #[error("invalid parameter {name} = {value}: {reason}")]
    InvalidParameter {
        /// Parameter name.
        name: &'static str,
        /// Its value.
        value: f64,
        /// What the domain is.
        reason: &'static str,
    },
    /// A particle count whose buffers would not fit in the memory available
    /// (see [`crate::ParticleSet::check_memory`]).
    #[error(
        "{n} particles of dimension {dim} need about {:.1} GiB, but only {:.1} GiB of memory is available",
        *.needed as f64 / (1u64 << 30) as f64,
        *.available as f64 / (1u64 << 30) as f64
    )]
    InsufficientMemory {
        /// Particles asked for.
        n: usize,
        /// State dimension.
        dim: usize,
        /// Estimated bytes ([`crate::ParticleSet::memory_estimate`]).
        needed: usize,
        /// Bytes available.
        available: usize,
    },
    /// A filter stage was called out of order.
    #[error("filter stage `{called}` called at step {step}, but the next stage is `{expected}`")]
    StageOrder {
        /// The stage the caller invoked.
        called: &'static str,
        /// The stage the filter expects.
        expected: &'static str,
        /// The current step.
        step: usize,
    },
    /// The ancestry was not recorded, or not with states.
    #[error("ancestry unavailable: {0}")]
    NoAncestry(&'static str),
    /// The batched likelihood back end failed.
    #[error("likelihood back end failed at step {step}")]
    Likelihood {
        /// The filter step.
        step: usize,
        /// The back end's error.
        #[source]
        source: BoxError,
    },
}

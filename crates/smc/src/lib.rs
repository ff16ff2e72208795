//! # smc — the posecloud particle engine
//!
//! Every solver in posecloud (IK, monocular tracking, walker priors) is a
//! particle filter for a state-space model
//!
//! ```text
//!   x₀ ~ p(x₀),   x_t ~ p(x_t | x_{t−1}),   y_t ~ p(y_t | x_t),
//! ```
//!
//! whose filtering distribution `p(x_t | y_{0:t})` is approximated by `N`
//! weighted particles `{(x_t^{(i)}, w_t^{(i)})}` (PHYSPRIOR Eq. 3.1),
//! `E[f(x_t) | y_{0:t}] ≈ Σᵢ ŵ_t^{(i)} f(x_t^{(i)})`. This crate is that
//! engine, and knows nothing of bodies:
//!
//! - [`ParticleSet`]: `N × D` states in one row-major `f64` buffer plus
//!   log-weights; [`Weights`] (normalised weights, ESS, log-sum, log-mean)
//!   recomputed once per update with log-sum-exp.
//! - [`Filter`]: sequential importance resampling (PHYSPRIOR Alg. 1) as the
//!   stages `resample`, `propagate`, `weigh` over a model's [`Propagate`]
//!   (proposal, with the importance correction of PHYSPRIOR Eq. 3.2) and
//!   batched [`Likelihood`]; the estimate of `log p(y_{0:t})`; optional
//!   [`Ancestry`] for MAP trajectories (PHYSPRIOR Ch. 4).
//! - [`Prepare`], [`Term`], [`Prepared`]: a likelihood made of several
//!   factors that share one per-step preparation of the batch — a body
//!   model's forward kinematics, computed once and read by its IK
//!   constraints, region likelihood and prior alike. The engine only sees
//!   an opaque `Batch`.
//! - `resampling`: multinomial, stratified, systematic, residual
//!   (PHYSPRIOR §3.1) and RTPF's parent–children selection (§IV-B), one
//!   signature each.
//! - [`estimate`]: MAP, mean, covariance, quantiles, mean rotation.
//! - `smoothing`: SMC-IK Eq. 15 (lerp / slerp with factor `α`).
//! - `viterbi`: the smoothed MAP path through a few candidates a step
//!   (max-product forward–backward, full or fixed-lag).
//! - [`lgssm`]: the linear-Gaussian model (bootstrap proposal, likelihood,
//!   simulation) and its exact Kalman filter, the reference for the tests.
//! - [`stream_rng`]: per-particle random streams, so a seed fixes a run on
//!   any number of threads.
//! - [`truncated_normal`]: a Gaussian truncated to an interval, by inverse
//!   CDF (one uniform a draw, no rejection).
//!
//! The crate is validated against exact answers: the bootstrap filter on
//! linear-Gaussian models agrees with the Kalman filter within Monte-Carlo
//! error derived from the filter's asymptotic variance (`tests/kalman.rs`,
//! on the models of [`lgssm`]).

mod ancestry;
mod error;
pub mod estimate;
mod filter;
pub mod lgssm;
mod model;
mod particles;
mod resampling;
mod rng;
mod smoothing;
mod truncated;
mod viterbi;
mod weights;

pub use ancestry::Ancestry;
pub use error::{BoxError, SmcError};
pub use filter::{Filter, FilterConfig, FilterStepReport, History, ResamplePolicy};
pub use model::{
    Likelihood, PerParticle, PerPrepared, Prepare, Prepared, Propagate, Term,
    prepared_log_likelihood,
};
pub use particles::{ParticleSet, PointEstimate};
pub use resampling::{Resampling, multinomial, parent_children, residual, stratified, systematic};
pub use rng::{ParticleRng, StreamDomain, StreamKey, stream_rng};
pub use smoothing::{Block, Smoother, lerp_into, slerp};
pub use truncated::truncated_normal;
pub use viterbi::CandidatePath;
pub use weights::{Weights, log_sum_exp};

/// The `nalgebra` of [`lgssm`]'s matrices and the estimators' covariances.
pub use nalgebra;
/// The `rand` the engine's generators implement, re-exported so callers
/// use the same version.
pub use rand;

/// `f` run in a 1-thread and in a 2-thread rayon pool: the unit tests that
/// results agree bit for bit whatever the thread count.
#[cfg(test)]
pub(crate) fn on_one_and_two_threads<T: Send>(f: impl Fn() -> T + Sync) -> (T, T) {
    let pool = |n| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
    };
    (pool(1).install(&f), pool(2).install(&f))
}

//! What a model supplies: a proposal to draw from and a batched likelihood.
//!
//! A state-space model has an initial law `p(x₀)`, an evolution model
//! `p(x_t | x_{t−1})` and a likelihood `p(y_t | x_t)`. A particle filter
//! draws from proposals `π₀(x₀ | y₀)` and `π(x_t | x_{t−1}, y_t)` and
//! corrects by importance weights (PHYSPRIOR Eq. 3.2):
//!
//! ```text
//!   w_t = w_{t−1} · p(y_t | x_t) · p(x_t | x_{t−1}) / π(x_t | x_{t−1}, y_t)
//! ```
//!
//! [`Propagate`] draws one particle and returns the log of the correction
//! `p(x_t | x_{t−1}) / π(x_t | x_{t−1}, y_t)` — `0.0` for the bootstrap
//! filter, where the proposal *is* the evolution model. [`Likelihood`]
//! scores the whole batch at once, so a GPU back end can implement it.

use rayon::prelude::*;

use crate::error::BoxError;
use crate::rng::ParticleRng;

/// Fewest particles per rayon task in the per-particle stages (the default
/// of [`Propagate::particles_per_task`]; the filter's resampling copy uses
/// four times as many).
pub(crate) const MIN_TASK: usize = 256;

/// Draws particles from the proposal (the "propagate" stage).
///
/// Called in parallel, once per particle, each call with its own generator
/// derived from `(seed, step, particle)`, so implementations must draw all
/// their randomness from `rng` to keep runs reproducible.
pub trait Propagate<O: ?Sized>: Sync {
    /// Draw `x₀ ~ π₀(· | y₀)` into `state`; return
    /// `log p(x₀) − log π₀(x₀ | y₀)` (`0.0` when drawing from `p(x₀)`).
    fn initial(&self, obs: &O, state: &mut [f64], rng: &mut ParticleRng) -> f64;

    /// Draw `x_t ~ π(· | x_{t−1}, y_t)` into `next` given `prev = x_{t−1}`;
    /// return `log p(x_t | x_{t−1}) − log π(x_t | x_{t−1}, y_t)`
    /// (PHYSPRIOR Eq. 3.2; `0.0` for the bootstrap proposal).
    fn propagate(
        &self,
        t: usize,
        obs: &O,
        prev: &[f64],
        next: &mut [f64],
        rng: &mut ParticleRng,
    ) -> f64;

    /// Fewest particles per rayon task (a batch this size or smaller runs on
    /// the calling thread). The default suits cheap models; a model whose
    /// draws cost microseconds (forward kinematics, a physics step) returns
    /// less so that small clouds still use every core. Results do not depend
    /// on it: every particle has its own random stream.
    fn particles_per_task(&self) -> usize {
        MIN_TASK
    }
}

/// Batched log-likelihood (the "weigh" stage).
pub trait Likelihood<O: ?Sized> {
    /// Write `log p(y | xᵢ)` for every row `xᵢ` of the row-major `N × D`
    /// buffer `states` into `out[i]` (`out.len() == N`). `−∞` is allowed
    /// (the particle is ruled out); NaN is reported as an error by the filter.
    ///
    /// # Errors
    /// Whatever the back end cannot do (a lost GPU device, say).
    fn log_likelihood(
        &self,
        obs: &O,
        states: &[f64],
        dim: usize,
        out: &mut [f64],
    ) -> Result<(), BoxError>;
}

/// A [`Likelihood`] from a per-particle function `f(y, x) = log p(y | x)`,
/// evaluated in parallel with rayon.
#[derive(Debug, Clone, Copy)]
pub struct PerParticle<F>(pub F);

impl<O, F> Likelihood<O> for PerParticle<F>
where
    O: ?Sized + Sync,
    F: Fn(&O, &[f64]) -> f64 + Sync,
{
    fn log_likelihood(
        &self,
        obs: &O,
        states: &[f64],
        dim: usize,
        out: &mut [f64],
    ) -> Result<(), BoxError> {
        let eval = |(o, x): (&mut f64, &[f64])| *o = (self.0)(obs, x);
        if out.len() <= 512 {
            out.iter_mut().zip(states.chunks_exact(dim)).for_each(eval);
        } else {
            out.par_iter_mut()
                .zip(states.par_chunks_exact(dim))
                .with_min_len(512)
                .for_each(eval);
        }
        Ok(())
    }
}

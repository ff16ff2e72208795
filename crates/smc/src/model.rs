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

/// `f(i, &mut out[i], xᵢ)` for every row `xᵢ` of `states`, in parallel
/// with at least `min_task` rows per rayon task (on the calling thread for
/// one task's worth, where rayon's hand-off would cost more).
fn for_each_row<F>(out: &mut [f64], states: &[f64], dim: usize, min_task: usize, f: F)
where
    F: Fn(usize, &mut f64, &[f64]) + Sync,
{
    let eval = |(i, (o, x)): (usize, (&mut f64, &[f64]))| f(i, o, x);
    let task = min_task.max(1);
    if out.len() <= task || rayon::current_num_threads() == 1 {
        out.iter_mut()
            .zip(states.chunks_exact(dim))
            .enumerate()
            .for_each(eval);
    } else {
        out.par_iter_mut()
            .zip(states.par_chunks_exact(dim))
            .enumerate()
            .with_min_len(task)
            .for_each(eval);
    }
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
        for_each_row(out, states, dim, 512, |_, o, x| *o = (self.0)(obs, x));
        Ok(())
    }
}

/// What a model derives from the batch once per step, before any
/// likelihood term reads it — world transforms by forward kinematics, say —
/// so that a likelihood made of several terms ([`Term`]) computes it once.
///
/// The engine knows nothing of what `Batch` holds: a body model prepares
/// joint transforms, another model whatever its terms share.
pub trait Prepare<O: ?Sized> {
    /// What the terms read; reused from step to step (a preparer resizes it).
    type Batch;

    /// Fill `batch` from the row-major `N × D` buffer `states`.
    ///
    /// # Errors
    /// Whatever the preparation cannot do (a state of the wrong length).
    fn prepare(
        &self,
        obs: &O,
        states: &[f64],
        dim: usize,
        batch: &mut Self::Batch,
    ) -> Result<(), BoxError>;
}

/// One factor of a likelihood `p(y | x) = ∏ₖ pₖ(y | x)` that reads a
/// prepared batch `B` (see [`Prepare`]): on the log scale the factors add.
pub trait Term<O: ?Sized, B: ?Sized> {
    /// Add `log pₖ(y | xᵢ)` to `out[i]` for every row `xᵢ` of `states`
    /// (`out.len() == N`); `batch` was prepared from these very states.
    ///
    /// # Errors
    /// Whatever the back end cannot do.
    fn add_log_likelihood(
        &self,
        obs: &O,
        batch: &B,
        states: &[f64],
        dim: usize,
        out: &mut [f64],
    ) -> Result<(), BoxError>;
}

impl<O: ?Sized, B: ?Sized, T: Term<O, B> + ?Sized> Term<O, B> for &T {
    fn add_log_likelihood(
        &self,
        obs: &O,
        batch: &B,
        states: &[f64],
        dim: usize,
        out: &mut [f64],
    ) -> Result<(), BoxError> {
        (**self).add_log_likelihood(obs, batch, states, dim, out)
    }
}

impl<O: ?Sized, B: ?Sized, T: Term<O, B> + ?Sized> Term<O, B> for Box<T> {
    fn add_log_likelihood(
        &self,
        obs: &O,
        batch: &B,
        states: &[f64],
        dim: usize,
        out: &mut [f64],
    ) -> Result<(), BoxError> {
        (**self).add_log_likelihood(obs, batch, states, dim, out)
    }
}

/// Every term of a list, in order (a likelihood whose terms are chosen at
/// run time).
impl<O: ?Sized, B: ?Sized, T: Term<O, B>> Term<O, B> for [T] {
    fn add_log_likelihood(
        &self,
        obs: &O,
        batch: &B,
        states: &[f64],
        dim: usize,
        out: &mut [f64],
    ) -> Result<(), BoxError> {
        self.iter()
            .try_for_each(|t| t.add_log_likelihood(obs, batch, states, dim, out))
    }
}

impl<O: ?Sized, B: ?Sized, T: Term<O, B>> Term<O, B> for Vec<T> {
    fn add_log_likelihood(
        &self,
        obs: &O,
        batch: &B,
        states: &[f64],
        dim: usize,
        out: &mut [f64],
    ) -> Result<(), BoxError> {
        self[..].add_log_likelihood(obs, batch, states, dim, out)
    }
}

macro_rules! term_tuple {
    ($($t:ident),+) => {
        /// The terms in order: their log-likelihoods add.
        impl<O: ?Sized, B: ?Sized, $($t: Term<O, B>),+> Term<O, B> for ($($t,)+) {
            #[allow(non_snake_case)]
            fn add_log_likelihood(
                &self,
                obs: &O,
                batch: &B,
                states: &[f64],
                dim: usize,
                out: &mut [f64],
            ) -> Result<(), BoxError> {
                let ($($t,)+) = self;
                $($t.add_log_likelihood(obs, batch, states, dim, out)?;)+
                Ok(())
            }
        }
    };
}
term_tuple!(A);
term_tuple!(A, B2);
term_tuple!(A, B2, C);
term_tuple!(A, B2, C, D);

/// Prepares `batch` from `states` once, then sums every term into `out`
/// (zeroed first): the weigh stage of a likelihood made of [`Term`]s.
///
/// # Errors
/// The preparation's or a term's.
pub fn prepared_log_likelihood<O, P, T>(
    prepare: &P,
    batch: &mut P::Batch,
    terms: &T,
    obs: &O,
    states: &[f64],
    dim: usize,
    out: &mut [f64],
) -> Result<(), BoxError>
where
    O: ?Sized,
    P: Prepare<O>,
    T: Term<O, P::Batch> + ?Sized,
{
    prepare.prepare(obs, states, dim, batch)?;
    out.fill(0.0);
    terms.add_log_likelihood(obs, batch, states, dim, out)
}

/// A [`Likelihood`] made of [`Term`]s over one prepared batch: each call
/// prepares the batch once (e.g. forward kinematics of the whole cloud)
/// and sums the terms. `S` holds the batch: owned (`P::Batch`) or borrowed
/// from a solver that keeps it between steps (`&mut P::Batch`), and can be
/// read back with [`Prepared::batch`] after the weigh stage.
#[derive(Debug)]
pub struct Prepared<P, S, T> {
    prepare: P,
    batch: std::sync::Mutex<S>,
    terms: T,
}

impl<P, S, T> Prepared<P, S, T> {
    pub fn new(prepare: P, batch: S, terms: T) -> Self {
        Self {
            prepare,
            batch: std::sync::Mutex::new(batch),
            terms,
        }
    }

    /// The batch prepared by the last call.
    pub fn batch(&mut self) -> &mut S {
        self.batch.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    pub fn terms(&self) -> &T {
        &self.terms
    }

    pub fn preparation(&self) -> &P {
        &self.prepare
    }

    /// The batch, for the next step.
    pub fn into_batch(self) -> S {
        self.batch.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

impl<O, P, S, T> Likelihood<O> for Prepared<P, S, T>
where
    O: ?Sized,
    P: Prepare<O>,
    S: std::borrow::BorrowMut<P::Batch>,
    T: Term<O, P::Batch>,
{
    fn log_likelihood(
        &self,
        obs: &O,
        states: &[f64],
        dim: usize,
        out: &mut [f64],
    ) -> Result<(), BoxError> {
        let mut batch = self.batch.lock().unwrap_or_else(|e| e.into_inner());
        prepared_log_likelihood(
            &self.prepare,
            (*batch).borrow_mut(),
            &self.terms,
            obs,
            states,
            dim,
            out,
        )
    }
}

/// A per-particle function as a [`Term`] that does not read the batch
/// (a pose prior, say): adds `f(y, xᵢ)` to `out[i]`, in parallel.
impl<O, B, F> Term<O, B> for PerParticle<F>
where
    O: ?Sized + Sync,
    B: ?Sized,
    F: Fn(&O, &[f64]) -> f64 + Sync,
{
    fn add_log_likelihood(
        &self,
        obs: &O,
        _: &B,
        states: &[f64],
        dim: usize,
        out: &mut [f64],
    ) -> Result<(), BoxError> {
        for_each_row(out, states, dim, 512, |_, o, x| *o += (self.0)(obs, x));
        Ok(())
    }
}

/// A [`Term`] from a function of the prepared batch and a particle's index
/// and state, `f(y, batch, i, xᵢ) = log pₖ(y | xᵢ)`, evaluated in parallel
/// above `min_task` particles.
#[derive(Debug, Clone, Copy)]
pub struct PerPrepared<F> {
    pub f: F,
    /// Fewest particles per rayon task (cheap terms want more).
    pub min_task: usize,
}

impl<O, B, F> Term<O, B> for PerPrepared<F>
where
    O: ?Sized + Sync,
    B: ?Sized + Sync,
    F: Fn(&O, &B, usize, &[f64]) -> f64 + Sync,
{
    fn add_log_likelihood(
        &self,
        obs: &O,
        batch: &B,
        states: &[f64],
        dim: usize,
        out: &mut [f64],
    ) -> Result<(), BoxError> {
        for_each_row(out, states, dim, self.min_task, |i, o, x| {
            *o += (self.f)(obs, batch, i, x);
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Squares every state into the batch and counts its calls.
    struct Squares(AtomicUsize);

    impl Prepare<f64> for Squares {
        type Batch = Vec<f64>;
        fn prepare(
            &self,
            _: &f64,
            states: &[f64],
            _: usize,
            batch: &mut Vec<f64>,
        ) -> Result<(), BoxError> {
            self.0.fetch_add(1, Ordering::Relaxed);
            batch.clear();
            batch.extend(states.iter().map(|x| x * x));
            Ok(())
        }
    }

    #[test]
    fn terms_read_one_preparation_and_add() {
        let states: Vec<f64> = (0..1000).map(|i| i as f64 * 0.01).collect();
        let square = PerPrepared {
            f: |y: &f64, b: &Vec<f64>, i: usize, _: &[f64]| -y * b[i],
            min_task: 64,
        };
        let linear = PerParticle(|_: &f64, x: &[f64]| 2.0 * x[0]);
        let mut lik = Prepared::new(Squares(AtomicUsize::new(0)), Vec::new(), (square, linear));
        let mut out = vec![f64::NAN; 1000];
        lik.log_likelihood(&3.0, &states, 1, &mut out).unwrap();
        lik.log_likelihood(&3.0, &states, 1, &mut out).unwrap();
        for (x, o) in states.iter().zip(&out) {
            // Each term evaluated exactly as on its own, added to zero.
            assert_eq!(*o, 0.0 + -3.0 * (x * x) + 2.0 * x);
        }
        assert_eq!(
            lik.prepare.0.load(Ordering::Relaxed),
            2,
            "one preparation per call"
        );
        assert_eq!(lik.batch().len(), 1000);
    }

    #[test]
    fn a_failing_preparation_or_term_is_the_call_s_error() {
        struct Fails;
        impl Prepare<f64> for Fails {
            type Batch = ();
            fn prepare(&self, _: &f64, _: &[f64], _: usize, _: &mut ()) -> Result<(), BoxError> {
                Err("no transforms".into())
            }
        }
        struct Lost;
        impl Term<f64, Vec<f64>> for Lost {
            fn add_log_likelihood(
                &self,
                _: &f64,
                _: &Vec<f64>,
                _: &[f64],
                _: usize,
                _: &mut [f64],
            ) -> Result<(), BoxError> {
                Err("device lost".into())
            }
        }
        let mut out = [0.0; 2];
        let e = Prepared::new(Fails, (), PerParticle(|_: &f64, _: &[f64]| 0.0))
            .log_likelihood(&0.0, &[1.0, 2.0], 1, &mut out)
            .unwrap_err();
        assert_eq!(e.to_string(), "no transforms");
        let terms: Vec<Box<dyn Term<f64, Vec<f64>>>> = vec![
            Box::new(PerParticle(|_: &f64, _: &[f64]| 1.0)),
            Box::new(Lost),
        ];
        let e = Prepared::new(Squares(AtomicUsize::new(0)), Vec::new(), terms)
            .log_likelihood(&0.0, &[1.0, 2.0], 1, &mut out)
            .unwrap_err();
        assert_eq!(e.to_string(), "device lost");
    }
}

//! The filter: sequential importance resampling as named stages.
//!
//! One step `t` of PHYSPRIOR Algorithm 1 (SIR), in the order the stages run:
//!
//! 1. [`Filter::resample`] (`t ≥ 1`): if the policy says so — always, or
//!    when `N_eff = 1/Σŵᵢ² < N_thres` — draw ancestors with the configured
//!    scheme, copy their states, and reset the weights to equal.
//! 2. [`Filter::propagate`]: draw `x_t^{(i)} ~ π(· | x_{t−1}^{(i)}, y_t)`
//!    (`π₀(· | y₀)` at `t = 0`) and keep the log importance correction
//!    `log p(x_t | x_{t−1}) − log π(x_t | x_{t−1}, y_t)` (Eq. 3.2).
//! 3. [`Filter::weigh`]: one batched call of the likelihood, then
//!    `ℓ_t^{(i)} = ℓ_{t−1}^{(i)} + log p(y_t | x_t^{(i)}) + correction`
//!    (PHYSPRIOR Eq. 3.2 on the log scale) and the [`Weights`] once.
//! 4. estimate: read the cloud with [`ParticleSet::estimate`], its
//!    `mean`/`covariance`/`quantiles`/`quaternion_mean`, or
//!    [`crate::Smoother`] for SMC-IK Eq. 15.
//!
//! [`Filter::step`] runs 1–3. The filter also accumulates the estimate of
//! the log marginal likelihood,
//!
//! ```text
//!   log p̂(y_{0:t}) = Σ_s [ log Σᵢ exp(ℓ_s^{(i)}) − log Σᵢ exp(ℓ_{s−1}^{(i)}) ]
//! ```
//!
//! (after resampling `ℓ_{s−1}` is all zeros and the term is the log of the
//! mean incremental weight), which is unbiased on the natural scale.
//!
//! The filter owns its scratch buffers: after the first step nothing is
//! allocated (except the optional [`Ancestry`] record). Particle `i` at step
//! `t` draws from [`stream_rng`]`(seed, t, Propagate, i)`, the resampling
//! scheme from `stream_rng(seed, t, Resample, 0)`, and all reductions are
//! chunked deterministically: a run is bit-identical on any number of
//! threads.

use rayon::prelude::*;

use crate::ancestry::Ancestry;
use crate::error::SmcError;
use crate::model::{Likelihood, MIN_TASK, Propagate};
use crate::particles::ParticleSet;
use crate::resampling::Resampling;
use crate::rng::{StreamDomain, StreamKey, stream_rng};
use crate::weights::Weights;

/// When to resample (PHYSPRIOR Alg. 1 step 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ResamplePolicy {
    /// At every step `t ≥ 1` (the plain bootstrap filter).
    Always,
    /// When `N_eff < fraction · N`; `fraction ∈ (0, 1]`.
    EssBelow(f64),
    /// Never (sequential importance sampling).
    Never,
}

/// What the filter records for [`Ancestry`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum History {
    /// Nothing.
    None,
    /// Parent indices of every step.
    Ancestors,
    /// Parent indices and the states of every step (memory `T·N·D` values),
    /// so MAP trajectories can be read back.
    AncestorsAndStates,
}

/// Configuration of a [`Filter`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilterConfig {
    /// Fixes every random draw of the run.
    pub seed: u64,
    /// The resampling scheme.
    pub scheme: Resampling,
    /// When to resample.
    pub policy: ResamplePolicy,
    /// What to record.
    pub history: History,
}

impl Default for FilterConfig {
    /// Seed 0, systematic resampling when `N_eff < N/2`, no history.
    fn default() -> Self {
        FilterConfig {
            seed: 0,
            scheme: Resampling::Systematic,
            policy: ResamplePolicy::EssBelow(0.5),
            history: History::None,
        }
    }
}

/// What one step did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilterStepReport {
    /// The step index `t`.
    pub step: usize,
    /// Whether the step resampled.
    pub resampled: bool,
    /// `N_eff` after weighing.
    pub ess: f64,
    /// `log p̂(y_t | y_{0:t−1})`.
    pub log_evidence_increment: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Propagate,
    Weigh,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::Propagate => "propagate",
            Stage::Weigh => "weigh",
        }
    }
}

/// One particle of the propagate stage: index, (next state, previous state),
/// log importance correction.
type PropagateItem<'a> = (usize, ((&'a mut [f64], &'a [f64]), &'a mut f64));

/// Draws every particle afresh from the model's initial proposal with the
/// streams of `key`, in parallel above one task's worth of particles: the
/// weights uniform, the importance corrections into `log_correction` (at
/// `t = 0`, and when [`Filter::redraw_from_prior`] recovers).
fn draw_initial<O, M>(
    particles: &mut ParticleSet,
    log_correction: &mut [f64],
    model: &M,
    obs: &O,
    key: &StreamKey,
) where
    O: ?Sized + Sync,
    M: Propagate<O>,
{
    particles.set_uniform_weights();
    let dim = particles.dim();
    let states = particles.states_mut();
    let draw = |(i, (x, c)): (usize, (&mut [f64], &mut f64))| {
        *c = model.initial(obs, x, &mut key.rng(i as u64));
    };
    let task = model.particles_per_task().max(1);
    if log_correction.len() <= task || rayon::current_num_threads() == 1 {
        states
            .chunks_exact_mut(dim)
            .zip(log_correction.iter_mut())
            .enumerate()
            .for_each(draw);
    } else {
        states
            .par_chunks_exact_mut(dim)
            .zip(log_correction.par_iter_mut())
            .enumerate()
            .with_min_len(task)
            .for_each(draw);
    }
}

/// A particle filter: stages, scratch buffers and the run's bookkeeping.
///
/// ```
/// use smc::{Filter, FilterConfig, ParticleSet, ParticleRng, PerParticle, Propagate};
/// use rand::RngExt;
/// use rand_distr::StandardNormal;
///
/// /// Random walk x_t = x_{t−1} + N(0, 1), x₀ ~ N(0, 1).
/// struct Walk;
/// impl Propagate<f64> for Walk {
///     fn initial(&self, _: &f64, x: &mut [f64], rng: &mut ParticleRng) -> f64 {
///         x[0] = rng.sample::<f64, _>(StandardNormal);
///         0.0
///     }
///     fn propagate(&self, _: usize, _: &f64, prev: &[f64], next: &mut [f64], rng: &mut ParticleRng) -> f64 {
///         next[0] = prev[0] + rng.sample::<f64, _>(StandardNormal);
///         0.0
///     }
/// }
/// // y = x + N(0, 1)
/// let lik = PerParticle(|y: &f64, x: &[f64]| -0.5 * (y - x[0]).powi(2));
/// let mut particles = ParticleSet::new(1000, 1)?;
/// let mut filter = Filter::new(FilterConfig { seed: 42, ..Default::default() })?;
/// for y in [0.3, 0.9, 1.4] {
///     filter.step(&mut particles, &Walk, &lik, &y)?;
///     let mean = particles.mean();
///     assert!(mean[0].is_finite());
/// }
/// # Ok::<(), smc::SmcError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Filter {
    config: FilterConfig,
    t: usize,
    stage: Stage,
    resampled: bool,
    shape: Option<(usize, usize)>,
    ancestors: Vec<usize>,
    scratch_states: Vec<f64>,
    log_correction: Vec<f64>,
    log_likelihood: Vec<f64>,
    new_log_weights: Vec<f64>,
    new_weights: Weights,
    log_evidence: f64,
    recoveries: usize,
    ancestry: Option<Ancestry>,
}

impl Filter {
    /// A filter at step 0.
    ///
    /// # Errors
    /// [`SmcError::InvalidParameter`] for an ESS fraction outside `(0, 1]`.
    pub fn new(config: FilterConfig) -> Result<Self, SmcError> {
        if let ResamplePolicy::EssBelow(f) = config.policy
            && !(f > 0.0 && f <= 1.0)
        {
            return Err(SmcError::InvalidParameter {
                name: "ESS threshold fraction",
                value: f,
                reason: "must lie in (0, 1]",
            });
        }
        let ancestry = match config.history {
            History::None => None,
            History::Ancestors => Some(Ancestry::new(false)),
            History::AncestorsAndStates => Some(Ancestry::new(true)),
        };
        Ok(Filter {
            config,
            t: 0,
            stage: Stage::Propagate,
            resampled: false,
            shape: None,
            ancestors: Vec::new(),
            scratch_states: Vec::new(),
            log_correction: Vec::new(),
            log_likelihood: Vec::new(),
            new_log_weights: Vec::new(),
            new_weights: Weights::uniform(0),
            log_evidence: 0.0,
            recoveries: 0,
            ancestry,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &FilterConfig {
        &self.config
    }

    /// Index of the step in progress (or the next one): the number of
    /// completed steps.
    pub fn step_index(&self) -> usize {
        self.t
    }

    /// `log p̂(y_{0:t})` over the completed steps (0 before the first).
    /// After a [`Filter::redraw_from_prior`] it is no longer an estimate of
    /// the model's evidence.
    pub fn log_evidence(&self) -> f64 {
        self.log_evidence
    }

    /// How many times [`Filter::redraw_from_prior`] rescued the run.
    pub fn recoveries(&self) -> usize {
        self.recoveries
    }

    /// The recorded ancestry, if the config asked for one.
    pub fn ancestry(&self) -> Option<&Ancestry> {
        self.ancestry.as_ref()
    }

    /// The ancestors drawn by this step's [`Filter::resample`], sorted, so
    /// that the children of a parent are contiguous (RTPF §V). `None` if
    /// the step in progress did not resample.
    pub fn ancestors(&self) -> Option<&[usize]> {
        self.resampled.then_some(&self.ancestors[..])
    }

    /// Start again at step 0 (the particle set is redrawn by the next
    /// `propagate`). Buffers are kept.
    pub fn reset(&mut self) {
        self.t = 0;
        self.stage = Stage::Propagate;
        self.resampled = false;
        self.shape = None;
        self.log_evidence = 0.0;
        self.recoveries = 0;
        if let Some(a) = self.ancestry.as_mut() {
            a.clear();
        }
    }

    /// One SIR step: [`resample`](Filter::resample) (from `t = 1`),
    /// [`propagate`](Filter::propagate), [`weigh`](Filter::weigh).
    ///
    /// # Errors
    /// Those of the stages. After an error in `weigh` the particles keep
    /// their propagated states and previous weights; call
    /// [`Filter::redraw_from_prior`] (or [`Filter::reset`]).
    pub fn step<O, M, L>(
        &mut self,
        particles: &mut ParticleSet,
        model: &M,
        likelihood: &L,
        obs: &O,
    ) -> Result<FilterStepReport, SmcError>
    where
        O: ?Sized + Sync,
        M: Propagate<O>,
        L: Likelihood<O>,
    {
        self.resample(particles)?;
        self.propagate(particles, model, obs)?;
        self.weigh(particles, likelihood, obs)
    }

    fn expect_stage(&self, called: &'static str, stage: Stage) -> Result<(), SmcError> {
        if self.stage == stage {
            Ok(())
        } else {
            Err(SmcError::StageOrder {
                called,
                expected: self.stage.name(),
                step: self.t,
            })
        }
    }

    fn check_shape(&mut self, particles: &ParticleSet) -> Result<(), SmcError> {
        let shape = (particles.len(), particles.dim());
        match self.shape {
            None => {
                self.shape = Some(shape);
                Ok(())
            }
            Some((n, d)) if (n, d) != shape => Err(SmcError::ShapeMismatch {
                what: "particle set (N·D must not change during a run; reset the filter)",
                expected: n * d,
                got: shape.0 * shape.1,
            }),
            Some(_) => Ok(()),
        }
    }

    /// Resampling stage (PHYSPRIOR Alg. 1 step 1): resample if the policy
    /// says so; return whether it did. A no-op at step 0.
    ///
    /// # Errors
    /// [`SmcError::StageOrder`] unless called before `propagate`, at most
    /// once per step; shape changes.
    pub fn resample(&mut self, particles: &mut ParticleSet) -> Result<bool, SmcError> {
        self.expect_stage("resample", Stage::Propagate)?;
        if self.resampled {
            return Err(SmcError::StageOrder {
                called: "resample",
                expected: "propagate",
                step: self.t,
            });
        }
        if self.t == 0 {
            return Ok(false);
        }
        self.check_shape(particles)?;
        let n = particles.len();
        let go = match self.config.policy {
            ResamplePolicy::Always => true,
            ResamplePolicy::Never => false,
            ResamplePolicy::EssBelow(f) => particles.weights().ess() < f * n as f64,
        };
        if !go {
            return Ok(false);
        }
        let mut rng = stream_rng(self.config.seed, self.t as u64, StreamDomain::Resample, 0);
        self.config.scheme.resample(
            particles.weights().normalised(),
            n,
            &mut rng,
            &mut self.ancestors,
        )?;
        let dim = particles.dim();
        self.scratch_states.resize(n * dim, 0.0);
        let prev = particles.states();
        let copy =
            |(row, &a): (&mut [f64], &usize)| row.copy_from_slice(&prev[a * dim..(a + 1) * dim]);
        if n <= 4 * MIN_TASK || rayon::current_num_threads() == 1 {
            // One task's worth: skip rayon's cross-thread hand-off.
            self.scratch_states
                .chunks_exact_mut(dim)
                .zip(self.ancestors.iter())
                .for_each(copy);
        } else {
            self.scratch_states
                .par_chunks_exact_mut(dim)
                .zip(self.ancestors.par_iter())
                .with_min_len(4 * MIN_TASK)
                .for_each(copy);
        }
        particles.swap_states(&mut self.scratch_states);
        particles.set_uniform_weights();
        self.resampled = true;
        Ok(true)
    }

    /// Propagation stage (PHYSPRIOR Alg. 1 step 2a): draw every particle from
    /// the proposal, in parallel, and keep the importance corrections.
    ///
    /// # Errors
    /// [`SmcError::StageOrder`] unless the previous step was weighed; shape
    /// changes.
    pub fn propagate<O, M>(
        &mut self,
        particles: &mut ParticleSet,
        model: &M,
        obs: &O,
    ) -> Result<(), SmcError>
    where
        O: ?Sized + Sync,
        M: Propagate<O>,
    {
        self.expect_stage("propagate", Stage::Propagate)?;
        self.check_shape(particles)?;
        let (n, dim) = (particles.len(), particles.dim());
        let (seed, t) = (self.config.seed, self.t);
        let key = StreamKey::new(seed, t as u64, StreamDomain::Propagate);
        self.log_correction.resize(n, 0.0);
        if t == 0 {
            draw_initial(particles, &mut self.log_correction, model, obs, &key);
        } else {
            self.scratch_states.resize(n * dim, 0.0);
            let prev = particles.states();
            let draw = |(i, ((next, prev), c)): PropagateItem<'_>| {
                *c = model.propagate(t, obs, prev, next, &mut key.rng(i as u64));
            };
            let task = model.particles_per_task().max(1);
            if n <= task || rayon::current_num_threads() == 1 {
                // One task's worth: skip rayon's cross-thread hand-off (it
                // costs more than a small IK cloud's whole step).
                self.scratch_states
                    .chunks_exact_mut(dim)
                    .zip(prev.chunks_exact(dim))
                    .zip(self.log_correction.iter_mut())
                    .enumerate()
                    .for_each(draw);
            } else {
                self.scratch_states
                    .par_chunks_exact_mut(dim)
                    .zip(prev.par_chunks_exact(dim))
                    .zip(self.log_correction.par_iter_mut())
                    .enumerate()
                    .with_min_len(task)
                    .for_each(draw);
            }
            particles.swap_states(&mut self.scratch_states);
        }
        self.stage = Stage::Weigh;
        Ok(())
    }

    /// Weighing stage (PHYSPRIOR Alg. 1 steps 2b and 3): one batched
    /// likelihood call, the Eq. 3.2 update on the log scale, [`Weights`]
    /// once, the evidence increment. Completes step `t`.
    ///
    /// # Errors
    /// [`SmcError::StageOrder`] unless called after `propagate`;
    /// [`SmcError::Likelihood`] from the back end; [`SmcError::NanLikelihood`],
    /// [`SmcError::NanCorrection`] and the [`Weights`] errors, in particular
    /// [`SmcError::AllWeightsZero`]. On error the particle set is unchanged.
    pub fn weigh<O, L>(
        &mut self,
        particles: &mut ParticleSet,
        likelihood: &L,
        obs: &O,
    ) -> Result<FilterStepReport, SmcError>
    where
        O: ?Sized + Sync,
        L: Likelihood<O>,
    {
        self.expect_stage("weigh", Stage::Weigh)?;
        let (n, dim) = (particles.len(), particles.dim());
        let step = self.t;
        self.log_likelihood.resize(n, 0.0);
        likelihood
            .log_likelihood(obs, particles.states(), dim, &mut self.log_likelihood)
            .map_err(|source| SmcError::Likelihood { step, source })?;
        self.new_log_weights.resize(n, 0.0);
        let rows = self
            .new_log_weights
            .iter_mut()
            .zip(particles.log_weights())
            .zip(self.log_likelihood.iter().zip(&self.log_correction));
        for (index, ((new, &old), (&ll, &corr))) in rows.enumerate() {
            if ll.is_nan() {
                return Err(SmcError::NanLikelihood { index, step });
            }
            if corr.is_nan() {
                return Err(SmcError::NanCorrection { index, step });
            }
            *new = old + ll + corr;
        }
        self.new_weights.update(&self.new_log_weights)?;
        let log_sum_before = particles.weights().log_sum();
        particles.swap_weights(&mut self.new_log_weights, &mut self.new_weights);
        let increment = particles.weights().log_sum() - log_sum_before;
        self.log_evidence += increment;
        if let Some(a) = self.ancestry.as_mut() {
            let parents = self.resampled.then_some(&self.ancestors[..]);
            a.push(step, parents, particles.states(), dim);
        }
        let report = FilterStepReport {
            step,
            resampled: self.resampled,
            ess: particles.weights().ess(),
            log_evidence_increment: increment,
        };
        self.t += 1;
        self.stage = Stage::Propagate;
        self.resampled = false;
        Ok(report)
    }

    /// Recovery from a weight collapse: when `weigh` failed with
    /// [`SmcError::AllWeightsZero`] (the observation ruled out every
    /// particle), re-draw all particles of the current step from the model's
    /// initial proposal (`Propagate::initial`, with fresh per-particle
    /// streams) and weigh them against the same observation.
    ///
    /// The run continues, but [`Filter::log_evidence`] is from then on not an
    /// estimate of the model evidence, and the [`Ancestry`] restarts here
    /// (the redrawn particles have no parents).
    ///
    /// # Errors
    /// [`SmcError::StageOrder`] unless called where `weigh` is due; those of
    /// `weigh` (the prior may be ruled out too).
    pub fn redraw_from_prior<O, M, L>(
        &mut self,
        particles: &mut ParticleSet,
        model: &M,
        likelihood: &L,
        obs: &O,
    ) -> Result<FilterStepReport, SmcError>
    where
        O: ?Sized + Sync,
        M: Propagate<O>,
        L: Likelihood<O>,
    {
        self.expect_stage("redraw_from_prior", Stage::Weigh)?;
        let key = StreamKey::new(self.config.seed, self.t as u64, StreamDomain::Recover);
        self.log_correction.resize(particles.len(), 0.0);
        draw_initial(particles, &mut self.log_correction, model, obs, &key);
        self.resampled = false;
        self.recoveries += 1;
        if let Some(a) = self.ancestry.as_mut() {
            a.clear();
        }
        self.weigh(particles, likelihood, obs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BoxError;
    use crate::lgssm::Lgssm;
    use crate::model::PerParticle;
    use crate::rng::ParticleRng;
    use rand::RngExt;
    use rand_distr::StandardNormal;

    /// x₀ ~ N(0, 1); x_t = a x_{t−1} + N(0, q); y = x + N(0, r): the
    /// bootstrap proposal and the likelihood in one value.
    fn ar1(a: f64, q: f64, r: f64) -> Lgssm {
        Lgssm::scalar(a, q, 1.0, r, 0.0, 1.0).unwrap()
    }

    const OBS: [f64; 8] = [0.5, 1.2, -0.3, 2.5, 2.2, 0.1, -1.0, 0.4];

    fn run(config: FilterConfig, n: usize) -> (ParticleSet, Filter) {
        let mut p = ParticleSet::new(n, 1).unwrap();
        let mut f = Filter::new(config).unwrap();
        let model = ar1(0.9, 0.5, 0.3);
        for y in OBS {
            f.step(&mut p, &model, &model, &y).unwrap();
        }
        (p, f)
    }

    #[test]
    fn runs_are_bit_identical_on_one_and_two_threads() {
        // 20 000 particles: above every parallel threshold, so rayon really
        // splits the work on the 2-thread pool.
        for scheme in Resampling::ALL {
            let config = FilterConfig {
                seed: 99,
                scheme,
                policy: ResamplePolicy::EssBelow(0.7),
                history: History::None,
            };
            let ((p1, f1), (p2, f2)) = crate::on_one_and_two_threads(|| run(config, 20_000));
            let bits = |xs: &[f64]| xs.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(p1.states()), bits(p2.states()), "{scheme}");
            assert_eq!(bits(p1.log_weights()), bits(p2.log_weights()), "{scheme}");
            assert_eq!(
                f1.log_evidence().to_bits(),
                f2.log_evidence().to_bits(),
                "{scheme}"
            );
            // A different seed gives a different run.
            let (p3, _) = run(
                FilterConfig {
                    seed: 100,
                    ..config
                },
                20_000,
            );
            assert_ne!(bits(p1.states()), bits(p3.states()));
        }
    }

    #[test]
    fn stages_must_run_in_order() {
        let mut p = ParticleSet::new(10, 1).unwrap();
        let mut f = Filter::new(FilterConfig::default()).unwrap();
        let model = ar1(1.0, 1.0, 1.0);
        let lik = model.clone();
        assert!(matches!(
            f.weigh(&mut p, &lik, &0.0),
            Err(SmcError::StageOrder {
                called: "weigh",
                expected: "propagate",
                step: 0
            })
        ));
        assert!(
            !f.resample(&mut p).unwrap(),
            "nothing to resample at step 0"
        );
        f.propagate(&mut p, &model, &0.0).unwrap();
        assert!(matches!(
            f.propagate(&mut p, &model, &0.0),
            Err(SmcError::StageOrder { .. })
        ));
        assert!(matches!(
            f.resample(&mut p),
            Err(SmcError::StageOrder { .. })
        ));
        f.weigh(&mut p, &lik, &0.0).unwrap();
        assert_eq!(f.step_index(), 1);
        // A particle set of another shape is refused mid-run.
        let mut other = ParticleSet::new(11, 1).unwrap();
        assert!(matches!(
            f.propagate(&mut other, &model, &0.0),
            Err(SmcError::ShapeMismatch { .. })
        ));
        assert!(
            Filter::new(FilterConfig {
                policy: ResamplePolicy::EssBelow(0.0),
                ..Default::default()
            })
            .is_err()
        );
        assert!(
            Filter::new(FilterConfig {
                policy: ResamplePolicy::EssBelow(f64::NAN),
                ..Default::default()
            })
            .is_err()
        );
    }

    #[test]
    fn nan_likelihood_and_correction_name_the_particle() {
        let mut p = ParticleSet::new(10, 1).unwrap();
        let mut f = Filter::new(FilterConfig::default()).unwrap();
        let model = ar1(1.0, 1.0, 1.0);
        let poisoned =
            PerParticle(|_: &f64, x: &[f64]| if x[0] == x[0].max(0.0) { f64::NAN } else { 0.0 });
        f.propagate(&mut p, &model, &0.0).unwrap();
        let first_nonneg = p.states().iter().position(|&x| x >= 0.0).unwrap();
        let e = f.weigh(&mut p, &poisoned, &0.0).unwrap_err();
        assert!(
            matches!(e, SmcError::NanLikelihood { index, step: 0 } if index == first_nonneg),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            format!("log-likelihood of particle {first_nonneg} is NaN at step 0")
        );

        struct NanProposal;
        impl Propagate<f64> for NanProposal {
            fn initial(&self, _: &f64, x: &mut [f64], _: &mut ParticleRng) -> f64 {
                x[0] = 0.0;
                f64::NAN
            }
            fn propagate(
                &self,
                _: usize,
                _: &f64,
                _: &[f64],
                _: &mut [f64],
                _: &mut ParticleRng,
            ) -> f64 {
                0.0
            }
        }
        let mut f = Filter::new(FilterConfig::default()).unwrap();
        f.propagate(&mut p, &NanProposal, &0.0).unwrap();
        assert!(matches!(
            f.weigh(&mut p, &model, &0.0),
            Err(SmcError::NanCorrection { index: 0, step: 0 })
        ));
    }

    #[test]
    fn backend_errors_carry_the_step() {
        struct Broken;
        impl Likelihood<f64> for Broken {
            fn log_likelihood(
                &self,
                _: &f64,
                _: &[f64],
                _: usize,
                _: &mut [f64],
            ) -> Result<(), BoxError> {
                Err("device lost".into())
            }
        }
        let mut p = ParticleSet::new(4, 1).unwrap();
        let mut f = Filter::new(FilterConfig::default()).unwrap();
        let e = f
            .step(&mut p, &ar1(1.0, 1.0, 1.0), &Broken, &0.0)
            .unwrap_err();
        assert!(matches!(&e, SmcError::Likelihood { step: 0, .. }));
        assert_eq!(
            std::error::Error::source(&e).unwrap().to_string(),
            "device lost"
        );
    }

    #[test]
    fn weight_collapse_is_an_error_and_redraw_from_prior_recovers() {
        // A hard constraint x > 3 rules out every particle of a walk that
        // starts near 0; the prior draws (N(0,1)) have a few survivors
        // above 3 among 20 000 (expected 27, P(none) ≈ e⁻²⁷).
        let cut =
            PerParticle(|_: &f64, x: &[f64]| if x[0] > 3.0 { 0.0 } else { f64::NEG_INFINITY });
        let model = ar1(0.0, 1e-6, 1.0);
        let mut p = ParticleSet::new(20_000, 1).unwrap();
        let mut f = Filter::new(FilterConfig {
            history: History::Ancestors,
            ..Default::default()
        })
        .unwrap();
        f.step(&mut p, &model, &model, &0.0).unwrap();
        let weights_before = p.log_weights().to_vec();
        let e = f.step(&mut p, &model, &cut, &0.0).unwrap_err();
        assert!(matches!(e, SmcError::AllWeightsZero { n: 20_000 }), "{e}");
        assert_eq!(
            p.log_weights(),
            &weights_before[..],
            "failed weigh leaves weights"
        );
        let report = f.redraw_from_prior(&mut p, &model, &cut, &0.0).unwrap();
        assert_eq!(report.step, 1);
        assert!(report.ess >= 1.0);
        assert!(p.map_state()[0] > 3.0);
        assert_eq!(f.recoveries(), 1);
        assert_eq!(f.ancestry().unwrap().first_step(), 1);
        // The run goes on.
        let walk = ar1(1.0, 0.1, 1.0);
        f.step(&mut p, &walk, &walk, &3.0).unwrap();
        assert_eq!(f.ancestry().unwrap().steps(), 2);
    }

    #[test]
    fn ancestry_follows_the_states() {
        // x₀ = 1000·i; x_t = x_{t−1} + 1, so a particle's state at t is its
        // root's state + t. The likelihood favours large roots, so
        // resampling really reorders particles.
        struct Counter;
        impl Propagate<f64> for Counter {
            fn initial(&self, _: &f64, x: &mut [f64], rng: &mut ParticleRng) -> f64 {
                x[0] = 1000.0 * (rng.random::<u32>() % 500) as f64;
                0.0
            }
            fn propagate(
                &self,
                _: usize,
                _: &f64,
                prev: &[f64],
                next: &mut [f64],
                _: &mut ParticleRng,
            ) -> f64 {
                next[0] = prev[0] + 1.0;
                0.0
            }
        }
        let lik = PerParticle(|_: &f64, x: &[f64]| x[0] / 2e5);
        for scheme in Resampling::ALL {
            let config = FilterConfig {
                seed: 5,
                scheme,
                policy: ResamplePolicy::Always,
                history: History::AncestorsAndStates,
            };
            let mut f = Filter::new(config).unwrap();
            let mut p = ParticleSet::new(300, 1).unwrap();
            for _ in 0..6 {
                f.step(&mut p, &Counter, &lik, &0.0).unwrap();
            }
            let anc = f.ancestry().unwrap();
            assert_eq!(anc.steps(), 6);
            for last in [0, 17, 299] {
                let traj = anc.trajectory(last).unwrap();
                let lineage = anc.lineage(last).unwrap();
                assert_eq!(lineage[5], last);
                for t in 0..6 {
                    assert_eq!(
                        traj[t],
                        traj[0] + t as f64,
                        "{scheme}: lineage of {last} at t = {t}"
                    );
                }
                assert_eq!(traj[5], p.state(last)[0]);
            }
            let map = anc.map_trajectory(p.log_weights()).unwrap();
            assert_eq!(map[5], p.map_state()[0]);
            assert!(anc.lineage(300).is_err());
        }
        let f = Filter::new(FilterConfig {
            history: History::Ancestors,
            ..Default::default()
        })
        .unwrap();
        assert!(matches!(
            f.ancestry().unwrap().trajectory(0),
            Err(SmcError::NoAncestry(_))
        ));
    }

    #[test]
    fn importance_correction_enters_the_weights_as_eq_3_2() {
        // Locally optimal proposal for x_t = a x + N(0,q), y = x + N(0,r):
        // π(x_t | x_{t−1}, y) = N(μ, s²), s² = (1/q + 1/r)⁻¹,
        // μ = s² (a x_{t−1}/q + y/r). Then by Eq. 3.2 the incremental weight
        // p(y|x_t) p(x_t|x_{t−1}) / π(x_t|x_{t−1}, y) = N(y; a x_{t−1}, q + r)
        // exactly, whatever x_t was drawn.
        struct Optimal {
            a: f64,
            q: f64,
            r: f64,
        }
        fn log_normal(x: f64, m: f64, v: f64) -> f64 {
            -0.5 * (x - m).powi(2) / v - 0.5 * (2.0 * std::f64::consts::PI * v).ln()
        }
        impl Propagate<f64> for Optimal {
            fn initial(&self, _: &f64, x: &mut [f64], rng: &mut ParticleRng) -> f64 {
                x[0] = rng.sample::<f64, _>(StandardNormal);
                0.0
            }
            fn propagate(
                &self,
                _: usize,
                y: &f64,
                prev: &[f64],
                next: &mut [f64],
                rng: &mut ParticleRng,
            ) -> f64 {
                let s2 = 1.0 / (1.0 / self.q + 1.0 / self.r);
                let mu = s2 * (self.a * prev[0] / self.q + y / self.r);
                next[0] = mu + s2.sqrt() * rng.sample::<f64, _>(StandardNormal);
                log_normal(next[0], self.a * prev[0], self.q) - log_normal(next[0], mu, s2)
            }
        }
        let (a, q, r) = (0.8, 0.7, 0.2);
        let model = Optimal { a, q, r };
        let lik = PerParticle(move |y: &f64, x: &[f64]| log_normal(*y, x[0], r));
        let mut p = ParticleSet::new(500, 1).unwrap();
        let mut f = Filter::new(FilterConfig {
            policy: ResamplePolicy::Always,
            ..Default::default()
        })
        .unwrap();
        f.step(&mut p, &model, &lik, &0.3).unwrap();
        f.resample(&mut p).unwrap();
        let prev = p.states().to_vec();
        f.propagate(&mut p, &model, &1.1).unwrap();
        f.weigh(&mut p, &lik, &1.1).unwrap();
        for (lw, xp) in p.log_weights().iter().zip(&prev) {
            assert!((lw - log_normal(1.1, a * xp, q + r)).abs() < 1e-12);
        }
    }
}

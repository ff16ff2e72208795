//! The SMC-IK filter (SMC-IK Algorithm 1).
//!
//! Every call to [`SmcIk::step`] is one iteration `k` of Algorithm 1 on the
//! particle engine ([`smc::Filter`]):
//!
//! 1. *mutation/selection* — resample when `N_eff < threshold · N` with the
//!    chosen scheme (step 4 of iteration `k − 1` in the paper's listing);
//! 2. *exploration* — draw `x_k⁽ⁱ⁾ ~ p(x_k | x_{k−1}⁽ⁱ⁾)` from the evolution
//!    prior (Eq. 12, [`crate::prior`]), in parallel;
//! 3. *importance weights* — batched forward kinematics of all particles,
//!    then `w_k⁽ⁱ⁾ ∝ w_{k−1}⁽ⁱ⁾ p(z_k | x_k⁽ⁱ⁾)` with the constraint
//!    likelihood (Eq. 13–14, [`crate::constraint`]);
//! 4. *estimate* — the MAP particle `x̄_k`, then the smoothed estimate
//!    `x̂_k = interpolate(x̂_{k−1}, x̄_k, α)` (Eq. 15): lerp for translations
//!    and scalar joints, slerp for rotations.
//!
//! **Precision beyond the paper** ([`Adaptation::SuccessRule`]): a random
//! walk of fixed σ cannot land within 10⁻³ of a target quickly (its steps
//! stay large) and a fixed likelihood stops discriminating once every
//! particle is close. The adaptive option scales every σ of the prior by a
//! factor `s` steered by a success rule after Rechenberg's one-fifth rule —
//! `s ← s·grow` when the MAP cost of the iteration beats the best MAP cost
//! of the last 10 iterations, `s ← s·shrink` otherwise — and tempers the
//! likelihood with `τ = s²` (`log p = −cost / τ`), so selection stays sharp
//! as the cloud contracts. With the defaults `grow = 1.5`, `shrink = 0.75`
//! the scale is stationary at a success rate of ln(1/0.75)/ln(1.5/0.75) ≈
//! 0.41. The window matters: the cloud is not elitist, so against the best
//! cost *ever* seen `s` collapses once the best particle is lost (measured:
//! stalls 2·10⁻³ from the target), and against the previous iteration alone
//! MAP noise counts as success and `s` explodes. `ik_success` measured these
//! defaults (reach protocol, 30 particles: 100% at every DOF, vs 98–99% with
//! shrink 0.9). The tempering drives the ESS to about 1: the adaptive
//! filter behaves as a greedy population search, which is what precision
//! needs; the cloud's spread is then the noise scale, not the posterior.
//! [`Adaptation::None`] is the paper's plain filter.

use std::cell::RefCell;
use std::sync::Arc;

use nalgebra::{Isometry3, UnitQuaternion};
use rand::RngExt;
use rand_distr::StandardNormal;
use skeleton::{BatchForwardKinematics, JointKind, Posing, Skeleton};
use smc::{
    Filter, FilterConfig, History, ParticleRng, ParticleSet, Prepared, Propagate, ResamplePolicy,
    Resampling,
};

use crate::constraint::{ConstraintLikelihood, ConstraintSet};
use crate::error::{IkError, Result};
use crate::jacobian::JacobianScratch;
use crate::prior::{EvolutionPrior, JointNoise, LimitSampler, PriorCounts};

/// Iterations over which the success rule takes its reference cost.
const SUCCESS_WINDOW: usize = 10;

/// How the filter adapts its noise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Adaptation {
    /// SMC-IK as published: fixed σ, fixed likelihood.
    None,
    /// One-fifth success rule on the noise scale with a tempered likelihood
    /// (module docs).
    SuccessRule {
        grow: f64,
        shrink: f64,
        min_scale: f64,
        max_scale: f64,
        /// Each particle's scale is `s · exp(spread · z)`, `z ~ N(0, 1)`
        /// drawn per particle and iteration: a scale mixture, so some
        /// particles refine while others explore. 0 disables it.
        spread: f64,
    },
}

impl Adaptation {
    /// The success rule with the defaults used in the experiments.
    pub fn success_rule() -> Self {
        Self::SuccessRule {
            grow: 1.5,
            shrink: 0.75,
            min_scale: 1e-6,
            max_scale: 4.0,
            spread: 0.0,
        }
    }

    /// [`Self::success_rule`] with another shrink factor (the human and hand
    /// experiments and the app use 0.85).
    pub fn success_rule_with_shrink(shrink: f64) -> Self {
        match Self::success_rule() {
            Self::SuccessRule {
                grow,
                min_scale,
                max_scale,
                spread,
                ..
            } => Self::SuccessRule {
                grow,
                shrink,
                min_scale,
                max_scale,
                spread,
            },
            other => other,
        }
    }
}

/// Optimisation moves (beyond the paper, after RTPF §IV-C1, which moves
/// particles toward local optima inside the prediction step): before its
/// random walk, every particle takes one damped-least-squares step
/// `θ ← clamp(θ − Jᵀ(JJᵀ + λ²I)⁻¹ e)` on the whitened constraint residual
/// (SMC-IK Eq. 5, analytic Jacobian, [`JacobianScratch::dls_step`]).
///
/// **Why the weights stay plain likelihoods.** The move is made part of the
/// evolution model: the transition becomes `x_k = g(x_{k−1}) + noise`,
/// `g` the DLS map, and SMC-IK's prior (Eq. 12) is itself a design choice
/// with no physical meaning ("the configuration remains constant"), not a
/// law the filter must respect. The filter is then the exact bootstrap
/// filter of that Markov model (PHYSPRIOR Eq. 3.2 with proposal = evolution
/// model, correction 0), and joint limits still hold because `g` clamps and
/// the random walk honours them. We rejected the two alternatives: an
/// importance correction toward the plain random walk multiplies each
/// weight by `N(x_k; x_{k−1}, Σ) / N(x_k; g(x_{k−1}), Σ)`, which cancels the
/// move as the adaptive σ shrinks (and needs truncation constants that the
/// accept/reject sampler does not have); a Metropolis–Hastings kernel needs
/// the reverse proposal density `q(x_{k−1} | x_k)`, almost zero for a
/// Newton-like step, so nearly every move would be rejected.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OptimisationMoves {
    /// λ in whitened-residual units (λ = λ_metres / σ for a position target).
    pub damping: f64,
    /// After the move, the particle's random-walk σ is multiplied by
    /// `min(1, residual_gain · |e|)`, `|e|` its whitened residual norm before
    /// the move: noise proportional to the remaining error, so the walk
    /// explores while far and stops undoing the Newton-like step near the
    /// solution. `f64::INFINITY` keeps the full σ.
    pub residual_gain: f64,
}

/// Settings of [`SmcIk`]. `Default` is the paper's filter with 50 particles.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SmcIkConfig {
    /// Number of particles N ≥ 1.
    pub particles: usize,
    /// Fixes every random draw.
    pub seed: u64,
    /// Resampling scheme.
    pub resampling: Resampling,
    /// Resample when `N_eff < ess_threshold · N`; `1.0` resamples every
    /// iteration (the bootstrap filter), `0.0` never.
    pub ess_threshold: f64,
    /// Smoothing factor α of Eq. 15 in (0, 1]; 1 returns the MAP itself.
    pub alpha: f64,
    /// How joint limits are enforced by the prior.
    pub sampler: LimitSampler,
    /// Random-walk σ for every joint (override per joint with
    /// [`SmcIk::set_joint_noise`]).
    pub noise: JointNoise,
    pub adaptation: Adaptation,
    /// One DLS step per particle before the random walk (`None`: the paper).
    pub moves: Option<OptimisationMoves>,
}

impl Default for SmcIkConfig {
    fn default() -> Self {
        Self {
            particles: 50,
            seed: 0,
            resampling: Resampling::Systematic,
            ess_threshold: 0.5,
            alpha: 0.1,
            sampler: LimitSampler::default(),
            noise: JointNoise::isotropic(0.05, 0.01),
            adaptation: Adaptation::None,
            moves: None,
        }
    }
}

impl SmcIkConfig {
    fn validate(&self) -> Result<()> {
        let bad =
            |field: &'static str, message: String| Err(IkError::InvalidConfig { field, message });
        if self.particles == 0 {
            return bad("particles", "at least one particle is needed".into());
        }
        if !(0.0..=1.0).contains(&self.ess_threshold) {
            return bad(
                "ess_threshold",
                format!("must be in [0, 1], got {}", self.ess_threshold),
            );
        }
        if !(self.alpha > 0.0 && self.alpha <= 1.0) {
            return bad("alpha", format!("must be in (0, 1], got {}", self.alpha));
        }
        if let Some(m) = self.moves
            && !(m.damping.is_finite() && m.damping >= 0.0)
        {
            return bad(
                "moves.damping",
                format!("must be finite and >= 0, got {}", m.damping),
            );
        }
        if let Some(m) = self.moves
            && (m.residual_gain.is_nan() || m.residual_gain <= 0.0)
        {
            return bad(
                "moves.residual_gain",
                format!("must be > 0, got {}", m.residual_gain),
            );
        }
        if let Adaptation::SuccessRule {
            grow,
            shrink,
            min_scale,
            max_scale,
            spread,
        } = self.adaptation
        {
            let ok = grow >= 1.0
                && shrink > 0.0
                && shrink <= 1.0
                && min_scale > 0.0
                && max_scale >= min_scale
                && spread >= 0.0;
            if !ok
                || ![grow, shrink, min_scale, max_scale, spread]
                    .iter()
                    .all(|x| x.is_finite())
            {
                return bad(
                    "adaptation",
                    format!(
                        "need grow >= 1, 0 < shrink <= 1, 0 < min_scale <= max_scale, got {:?}",
                        self.adaptation
                    ),
                );
            }
        }
        Ok(())
    }
}

/// What one iteration did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IkStepReport {
    pub iteration: usize,
    /// Cost (`−log p(z | x)`, untempered) of the MAP particle.
    pub map_cost: f64,
    /// Effective sample size after weighing.
    pub ess: f64,
    /// Whether this iteration resampled.
    pub resampled: bool,
    /// Current noise scale `s` (1 without adaptation).
    pub noise_scale: f64,
}

/// The prior as the engine's proposal: the bootstrap filter's proposal is
/// the evolution model itself, so the importance correction is 0.
struct Proposal<'a> {
    skeleton: &'a Skeleton,
    prior: &'a EvolutionPrior,
    constraints: &'a ConstraintSet,
    initial: &'a [f64],
    scale: f64,
    spread: f64,
    moves: Option<OptimisationMoves>,
}

thread_local! {
    /// Per-thread buffers of the optimisation moves (the engine calls
    /// `propagate` from rayon's threads): Jacobian scratch and the moved pose.
    static MOVE_SCRATCH: RefCell<(JacobianScratch, Vec<f64>)> = RefCell::new((JacobianScratch::default(), Vec::new()));
}

impl Proposal<'_> {
    /// Draws `next` from the transition out of `prev`: the optional DLS move,
    /// then the random walk.
    fn transition(&self, prev: &[f64], next: &mut [f64], rng: &mut ParticleRng) {
        let scale = self.particle_scale(rng);
        match self.moves {
            None => self.prior.sample(self.skeleton, prev, next, scale, rng),
            Some(m) => MOVE_SCRATCH.with(|cell| {
                let (scratch, moved) = &mut *cell.borrow_mut();
                moved.clear();
                moved.extend_from_slice(prev);
                let scale = if scratch
                    .dls_step(self.skeleton, self.constraints, moved, m.damping)
                    .is_ok()
                {
                    scale * (m.residual_gain * scratch.cost().sqrt()).min(1.0)
                } else {
                    // A pose where the residual is not finite: no move.
                    moved.copy_from_slice(prev);
                    scale
                };
                self.prior.sample(self.skeleton, moved, next, scale, rng);
            }),
        }
    }

    fn particle_scale(&self, rng: &mut ParticleRng) -> f64 {
        if self.spread > 0.0 {
            let z: f64 = rng.sample(StandardNormal);
            self.scale * (self.spread * z).exp()
        } else {
            self.scale
        }
    }
}

impl Propagate<()> for Proposal<'_> {
    fn initial(&self, _: &(), state: &mut [f64], rng: &mut ParticleRng) -> f64 {
        self.transition(self.initial, state, rng);
        0.0
    }

    fn propagate(
        &self,
        _: usize,
        _: &(),
        prev: &[f64],
        next: &mut [f64],
        rng: &mut ParticleRng,
    ) -> f64 {
        self.transition(prev, next, rng);
        0.0
    }

    /// A draw costs ~0.25 µs per joint (about twice that with a DLS move).
    /// Rayon's hand-off costs 5–20 µs on small machines, so a task gets
    /// ~400 joint draws (~100 µs): small clouds stay on the calling thread.
    fn particles_per_task(&self) -> usize {
        let per_particle = self.skeleton.len() * if self.moves.is_some() { 2 } else { 1 };
        400usize.div_ceil(per_particle.max(1))
    }
}

/// The SMC-IK solver: owns the particles, the engine and every buffer, so an
/// iteration allocates nothing once warm.
pub struct SmcIk {
    skeleton: Arc<Skeleton>,
    constraints: ConstraintSet,
    config: SmcIkConfig,
    prior: EvolutionPrior,
    particles: ParticleSet,
    filter: Filter,
    /// The cloud's forward kinematics, prepared once per step by the
    /// engine's weigh stage ([`skeleton::Posing`]) and read by the
    /// constraint likelihood, the estimate and the app's drawing.
    fk: BatchForwardKinematics,
    initial: Vec<f64>,
    map: Vec<f64>,
    map_cost: f64,
    recent_map_costs: [f64; SUCCESS_WINDOW],
    /// Set by [`SmcIk::constraints_mut`]: costs before an edit are not
    /// comparable with costs after it.
    constraints_edited: bool,
    estimate: Vec<f64>,
    previous_estimate: Vec<f64>,
    scale: f64,
    iteration: usize,
}

impl SmcIk {
    /// A solver starting from `initial` (projected onto the joint limits).
    pub fn new(
        skeleton: Arc<Skeleton>,
        constraints: ConstraintSet,
        config: SmcIkConfig,
        initial: &[f64],
    ) -> Result<Self> {
        config.validate()?;
        skeleton.check_pose(initial)?;
        constraints.validate(&skeleton)?;
        let prior = EvolutionPrior::uniform(&skeleton, config.noise, config.sampler)?;
        let mut initial = initial.to_vec();
        skeleton.clamp_to_limits(&mut initial);
        let dof = skeleton.dof().max(1);
        let particles = ParticleSet::from_states(initial.repeat(config.particles), dof)?;
        let filter = Filter::new(filter_config(&config))?;
        Ok(Self {
            constraints,
            prior,
            particles,
            filter,
            fk: BatchForwardKinematics::new(),
            map: initial.clone(),
            map_cost: f64::INFINITY,
            recent_map_costs: [f64::INFINITY; SUCCESS_WINDOW],
            constraints_edited: false,
            estimate: initial.clone(),
            previous_estimate: initial.clone(),
            initial,
            scale: 1.0,
            iteration: 0,
            config,
            skeleton,
        })
    }

    pub fn skeleton(&self) -> &Arc<Skeleton> {
        &self.skeleton
    }

    pub fn config(&self) -> &SmcIkConfig {
        &self.config
    }

    pub fn constraints(&self) -> &ConstraintSet {
        &self.constraints
    }

    /// Targets and noises may be edited between iterations; they are
    /// validated at the next [`Self::step`].
    /// (Editing restarts the success rule's reference window, since costs of
    /// the old and new problem are not comparable; the noise scale is kept,
    /// so a target dragged smoothly is tracked without a burst of noise.)
    pub fn constraints_mut(&mut self) -> &mut ConstraintSet {
        self.constraints_edited = true;
        &mut self.constraints
    }

    /// Raises the adaptive noise scale to at least `scale` (clamped to the
    /// success rule's range), keeping the reference window: for a target
    /// that is being dragged, so the cloud can follow it.
    pub fn raise_noise_scale(&mut self, scale: f64) {
        if let Adaptation::SuccessRule {
            min_scale,
            max_scale,
            ..
        } = self.config.adaptation
            && scale.is_finite()
        {
            self.scale = self.scale.max(scale).clamp(min_scale, max_scale);
        }
    }

    /// Restarts the adaptive noise: scale 1 and an empty reference window
    /// (for a target that jumped far).
    pub fn restart_adaptation(&mut self) {
        self.scale = 1.0;
        self.recent_map_costs = [f64::INFINITY; SUCCESS_WINDOW];
    }

    /// Replaces one joint's random-walk σ.
    pub fn set_joint_noise(&mut self, joint: usize, noise: JointNoise) -> Result<()> {
        let mut all = self.prior.noise().to_vec();
        if joint >= all.len() {
            return Err(IkError::InvalidConfig {
                field: "joint",
                message: format!("joint index {joint} out of range"),
            });
        }
        all[joint] = noise;
        self.prior = EvolutionPrior::new(&self.skeleton, all, self.config.sampler)?;
        Ok(())
    }

    /// Replaces every joint's random-walk σ.
    pub fn set_noise(&mut self, noise: Vec<JointNoise>) -> Result<()> {
        self.prior = EvolutionPrior::new(&self.skeleton, noise, self.config.sampler)?;
        Ok(())
    }

    /// Changes settings at run time. A new particle count or seed restarts
    /// the cloud around the current estimate.
    pub fn set_config(&mut self, config: SmcIkConfig) -> Result<()> {
        config.validate()?;
        let restart = config.particles != self.config.particles || config.seed != self.config.seed;
        if config.sampler != self.config.sampler || config.noise != self.config.noise {
            let noise = if config.noise != self.config.noise {
                vec![config.noise; self.skeleton.len()]
            } else {
                self.prior.noise().to_vec()
            };
            self.prior = EvolutionPrior::new(&self.skeleton, noise, config.sampler)?;
        }
        self.filter = Filter::new(filter_config(&config))?;
        self.config = config;
        if restart {
            let pose = self.estimate.clone();
            self.reset(&pose)?;
        } else {
            // A new filter starts at step 0: redraw around the estimate.
            self.initial.copy_from_slice(&self.estimate);
        }
        Ok(())
    }

    /// Restarts the cloud at `pose` (projected onto the limits).
    pub fn reset(&mut self, pose: &[f64]) -> Result<()> {
        self.skeleton.check_pose(pose)?;
        self.initial.copy_from_slice(pose);
        self.skeleton.clamp_to_limits(&mut self.initial);
        let n = self.config.particles;
        self.particles =
            ParticleSet::from_states(self.initial.repeat(n), self.skeleton.dof().max(1))?;
        self.filter.reset();
        self.map.copy_from_slice(&self.initial);
        self.estimate.copy_from_slice(&self.initial);
        self.map_cost = f64::INFINITY;
        self.recent_map_costs = [f64::INFINITY; SUCCESS_WINDOW];
        self.scale = 1.0;
        self.iteration = 0;
        self.prior.stats().reset();
        Ok(())
    }

    /// One iteration of Algorithm 1.
    pub fn step(&mut self) -> Result<IkStepReport> {
        self.constraints.validate(&self.skeleton)?;
        // Costs before an edit are not comparable with costs after it: the
        // window restarts, and this iteration only records the new reference
        // (an empty window would count any cost as a success and grow the
        // noise on every frame of a drag).
        let edited = std::mem::take(&mut self.constraints_edited);
        if edited {
            self.recent_map_costs = [f64::INFINITY; SUCCESS_WINDOW];
        }
        let skeleton = &*self.skeleton;
        self.filter.resample(&mut self.particles)?;
        let proposal = Proposal {
            skeleton,
            prior: &self.prior,
            constraints: &self.constraints,
            initial: &self.initial,
            scale: self.scale,
            spread: match self.config.adaptation {
                Adaptation::SuccessRule { spread, .. } => spread,
                Adaptation::None => 0.0,
            },
            moves: self.config.moves,
        };
        self.filter.propagate(&mut self.particles, &proposal, &())?;
        let temperature = match self.config.adaptation {
            Adaptation::None => 1.0,
            Adaptation::SuccessRule { .. } => self.scale * self.scale,
        };
        // One forward kinematics of the cloud, read by the likelihood term.
        let likelihood = Prepared::new(
            Posing(skeleton),
            &mut self.fk,
            ConstraintLikelihood {
                skeleton,
                constraints: &self.constraints,
                temperature,
            },
        );
        let report = self.filter.weigh(&mut self.particles, &likelihood, &())?;

        // Estimate: MAP particle, then Eq. 15.
        let m = self.particles.map_index();
        self.map.copy_from_slice(self.particles.state(m));
        self.map_cost = self
            .constraints
            .cost(skeleton, self.fk.world(m), self.particles.state(m));
        if self.iteration == 0 {
            self.estimate.copy_from_slice(&self.initial);
        }
        self.previous_estimate.copy_from_slice(&self.estimate);
        interpolate_pose(
            skeleton,
            &self.previous_estimate,
            &self.map,
            self.config.alpha,
            &mut self.estimate,
        )?;

        if let Adaptation::SuccessRule {
            grow,
            shrink,
            min_scale,
            max_scale,
            ..
        } = self.config.adaptation
        {
            let reference = self
                .recent_map_costs
                .iter()
                .copied()
                .fold(f64::INFINITY, f64::min);
            let factor = if edited {
                1.0
            } else if self.map_cost < reference {
                grow
            } else {
                shrink
            };
            self.scale = (self.scale * factor).clamp(min_scale, max_scale);
        }
        self.recent_map_costs[self.iteration % SUCCESS_WINDOW] = self.map_cost;
        self.iteration += 1;
        Ok(IkStepReport {
            iteration: self.iteration,
            map_cost: self.map_cost,
            ess: report.ess,
            resampled: report.resampled,
            noise_scale: self.scale,
        })
    }

    /// The smoothed estimate `x̂_k` (Eq. 15).
    pub fn estimate(&self) -> &[f64] {
        &self.estimate
    }

    /// The MAP particle `x̄_k` of the last iteration.
    pub fn map_pose(&self) -> &[f64] {
        &self.map
    }

    /// Cost of the MAP particle.
    pub fn map_cost(&self) -> f64 {
        self.map_cost
    }

    /// The particle cloud (states and weights).
    pub fn particles(&self) -> &ParticleSet {
        &self.particles
    }

    /// World transforms of every particle from the last iteration's forward
    /// kinematics (N × J), for drawing the cloud.
    pub fn particle_transforms(&self) -> &BatchForwardKinematics {
        &self.fk
    }

    pub fn iteration(&self) -> usize {
        self.iteration
    }

    pub fn noise_scale(&self) -> f64 {
        self.scale
    }

    /// Accept/reject statistics of the prior since the last reset.
    pub fn prior_counts(&self) -> PriorCounts {
        self.prior.stats().snapshot()
    }

    /// World transforms of a pose (convenience for callers).
    pub fn world(&self, pose: &[f64]) -> Result<Vec<Isometry3<f64>>> {
        Ok(self.skeleton.forward_kinematics(pose)?)
    }
}

fn filter_config(config: &SmcIkConfig) -> FilterConfig {
    FilterConfig {
        seed: config.seed,
        scheme: config.resampling,
        policy: if config.ess_threshold >= 1.0 {
            ResamplePolicy::Always
        } else if config.ess_threshold <= 0.0 {
            ResamplePolicy::Never
        } else {
            ResamplePolicy::EssBelow(config.ess_threshold)
        },
        history: History::None,
    }
}

/// SMC-IK Eq. 15: `out = interpolate(a, b, α)` joint by joint — lerp for
/// translations, hinge angles and prismatic displacements, slerp for
/// rotations written back continuously with `a`'s parameters.
///
/// # Errors
/// [`IkError::InvalidConfig`] when `a`, `b` or `out` is not one pose of
/// `skeleton` long.
pub(crate) fn interpolate_pose(
    skeleton: &Skeleton,
    a: &[f64],
    b: &[f64],
    alpha: f64,
    out: &mut [f64],
) -> Result<()> {
    let dof = skeleton.dof();
    if a.len() != dof || b.len() != dof || out.len() != dof {
        return Err(IkError::InvalidConfig {
            field: "interpolate_pose",
            message: format!(
                "poses must have {dof} parameters, got a: {}, b: {}, out: {}",
                a.len(),
                b.len(),
                out.len()
            ),
        });
    }
    for (j, joint) in skeleton.joints().iter().enumerate() {
        let r = skeleton.param_range(j);
        let (pa, pb) = (&a[r.clone()], &b[r.clone()]);
        let o = &mut out[r];
        let lerp = |x: f64, y: f64| x + alpha * (y - x);
        match &joint.kind {
            JointKind::Fixed => {}
            JointKind::Hinge { .. } | JointKind::Prismatic { .. } => o[0] = lerp(pa[0], pb[0]),
            kind => {
                let translations = if matches!(kind, JointKind::Free { .. }) {
                    3
                } else {
                    0
                };
                for k in 0..translations {
                    o[k] = lerp(pa[k], pb[k]);
                }
                let qa: UnitQuaternion<f64> = kind.rotation(pa).expect("rotating joint");
                let qb = kind.rotation(pb).expect("rotating joint");
                let q = smc::slerp(&qa, &qb, alpha);
                o[translations..].copy_from_slice(&pa[translations..]);
                kind.set_rotation(&q, o);
            }
        }
    }
    Ok(())
}

//! The tracker: RTPF's particle filter with heuristics (§IV–V) over a
//! [`TrackedBody`], one [`Tracker::step`] per video frame.
//!
//! Every filter runs the same engine, stages in RTPF's order:
//!
//! 1. **Selection** (§IV-A/B). PFS, HPOR and HKFS draw `N` ancestors by
//!    multinomial resampling of the previous weights ([`smc::multinomial`]);
//!    HSPC and PFRTH give each parent `nᵢ = N ŵᵢ` children by the
//!    largest-remainder rule ([`smc::parent_children`]). The children of a
//!    parent form its *group*.
//! 2. **Prediction** (§IV-A, §IV-C). With the simplex heuristic (HPOR,
//!    PFRTH), every group with `n > D + 1` children runs the downhill
//!    simplex from its parent for `n − D` iterations ([`crate::simplex`],
//!    all groups in lockstep, one batch per round); its `D + 1` final
//!    vertices replace children, and the remaining `n − D − 1` children
//!    are diffused around the best vertex (keeping "the random variability
//!    in the prediction"). Every other child is diffused around its
//!    parent: `x ← x + η`, `η ~ N(0, diag σ²)` truncated to the joint-limit
//!    box (the IK prior's truncated sampler, [`smc::truncated_normal`]).
//!    With kinematic flipping (HKFS, PFRTH), up to 15 flipped poses
//!    ([`crate::flip`]) of the best simplex vertex (PFRTH, §V step 2a) or,
//!    without a simplex, of the previous MAP particle replace diffused
//!    children chosen at random.
//! 3. **Measurement** (§IV-D, §V step 3). Every particle not already scored
//!    by the simplex is weighed in one batch by RTPF Eq. 1–2 on the chosen
//!    back end, and penalised by the PCA pose prior:
//!    `log w = −F² / (2 σ_F²) + β log μ(x)`. With detected 2D keypoints
//!    ([`Tracker::set_keypoints`]) and [`ObservationMode::Both`], the
//!    keypoint term of [`crate::keypoint_term`] is added:
//!    `log w = −F²/(2σ_F²) + log L_kp(x) + β log μ(x)`; with
//!    [`ObservationMode::Keypoints`] the region term is left out of `w`
//!    (`F` is still computed: it is the residual). Both terms read the
//!    batch's one forward kinematics; the simplex, the flips and the
//!    partitioned stages are scored by the same function, so they all
//!    minimise the same `−log w`.
//! 4. **Normalisation** (§V step 4) with [`smc::Weights`]; estimates: the
//!    MAP particle and the weighted mean; the per-frame residual is the
//!    MAP's `F` (RTPF Table II reports the mean residual over a sequence).

use std::time::{Duration, Instant};

use labels::{Camera, LabelMap, NonOverlap, Observation};
use nalgebra::Point3;
use rand::seq::SliceRandom;
use rayon::prelude::*;
use skeleton::BatchForwardKinematics;
use smc::{StreamDomain, Weights, stream_rng};

use crate::anatomy::{ArmAnatomy, DEFAULT_ANATOMY_WEIGHT};
use crate::arm_prior::{ArmDensity, ArmPrior};
use crate::backend::{Backend, BackendChoice, SharedDevice};
use crate::body::{Arm, Side, TrackedBody};
use crate::error::{Result, TrackError};
use crate::flip::{FlipArm, flip_hypotheses};
use crate::frame::{Cloud, DEFAULT_TOP_PARTICLES, FrameScratch, TrackFrame};
use crate::keypoint_term::{
    DEFAULT_DEPTH_SIGMA, DEFAULT_KEYPOINT_LIFTS, DEFAULT_KEYPOINT_SIGMA, KeypointMap,
    KeypointObservation, KeypointTerm,
};
use crate::prior::PosePrior;
use crate::simplex::{LockstepSimplex, Score};
use crate::step_buffers::{ParentGroups, StepBuffers, gather_into, indices_into};

/// The filters of RTPF Tables II–III.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FilterKind {
    /// Standard particle filter (§IV-A).
    Pfs,
    /// PFS with parent–children selection (§IV-B).
    Hspc,
    /// PFS with simplex prediction (§IV-C1).
    Hpor,
    /// PFS with kinematic flipping (§IV-C2).
    Hkfs,
    /// All heuristics (§V).
    Pfrth,
}

impl FilterKind {
    pub const ALL: [FilterKind; 5] = [Self::Pfs, Self::Hspc, Self::Hpor, Self::Hkfs, Self::Pfrth];

    pub fn name(self) -> &'static str {
        match self {
            Self::Pfs => "PFS",
            Self::Hspc => "HSPC",
            Self::Hpor => "HPOR",
            Self::Hkfs => "HKFS",
            Self::Pfrth => "PFRTH",
        }
    }
    fn parent_children(self) -> bool {
        matches!(self, Self::Hspc | Self::Pfrth)
    }
    fn simplex(self) -> bool {
        matches!(self, Self::Hpor | Self::Pfrth)
    }
    fn flipping(self) -> bool {
        matches!(self, Self::Hkfs | Self::Pfrth)
    }
}

impl std::str::FromStr for FilterKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        parse_named(&Self::ALL, Self::name, "filter", s)
    }
}

/// The member of `all` whose name is `s`, ignoring case; else an error
/// naming `what` and listing the names in lower case.
fn parse_named<T: Copy>(
    all: &[T],
    name: fn(T) -> &'static str,
    what: &str,
    s: &str,
) -> std::result::Result<T, String> {
    all.iter()
        .copied()
        .find(|&k| name(k).eq_ignore_ascii_case(s))
        .ok_or_else(|| {
            let names: Vec<String> = all.iter().map(|&k| name(k).to_ascii_lowercase()).collect();
            format!("unknown {what} `{s}` ({})", names.join(", "))
        })
}

/// Which likelihood terms weigh the particles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ObservationMode {
    /// RTPF Eq. 1–2 only, as published (the default: the paper's tables
    /// stay reproducible).
    #[default]
    Regions,
    /// The keypoint term only ([`crate::keypoint_term`]); a step without a
    /// usable detection falls back to the regions.
    Keypoints,
    /// Regions and keypoints; without a usable detection, the regions.
    Both,
}

impl ObservationMode {
    pub const ALL: [ObservationMode; 3] = [Self::Regions, Self::Keypoints, Self::Both];

    pub fn name(self) -> &'static str {
        match self {
            Self::Regions => "regions",
            Self::Keypoints => "keypoints",
            Self::Both => "both",
        }
    }
}

impl std::fmt::Display for ObservationMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ObservationMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        parse_named(&Self::ALL, Self::name, "observation", s)
    }
}

/// Settings an app may change between frames ([`Tracker::set_config`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TrackerConfig {
    /// N.
    pub particles: usize,
    pub filter: FilterKind,
    /// σ_F of RTPF Eq. 2.
    pub sigma_f: f64,
    /// Diffusion σ of every tracked limb angle per frame (rad).
    pub sigma_rotation: f64,
    /// Diffusion σ of the trunk's angles (root orientation, spine, neck,
    /// head) per frame (rad): they move less than the limbs.
    pub sigma_trunk: f64,
    /// Diffusion σ of the global position per frame (m).
    pub sigma_translation: f64,
    /// β, the exponent of the pose prior's penalty (RTPF: 1).
    pub prior_weight: f64,
    pub seed: u64,
    pub backend: BackendChoice,
    /// Rendered body part → observed class (identity: compare body parts).
    pub label_map: LabelMap,
    /// Partitioned sampling (MacCormick & Isard, an addition to RTPF):
    /// the diffused children move one partition of the body at a time
    /// (trunk, then each limb chain, [`TrackedBody::partitions`]), each
    /// partition but the last weighed and resampled before the next
    /// moves, so a search in D dimensions becomes a few searches in ~9.
    /// Costs one extra likelihood batch per extra partition.
    pub partitioned: bool,
    /// The likelihood terms that weigh the particles (default: RTPF's
    /// regions only).
    pub observation: ObservationMode,
    /// σ of the keypoint term as a fraction of the person's size in the
    /// image (the torso's length, [`KeypointObservation::scale_px`]):
    /// 0.1 gives σ ≈ 5 cm on an adult whatever the distance and the
    /// resolution.
    pub keypoint_sigma: f64,
    /// At most this many children a step placed by keypoint lifting
    /// ([`crate::lift`]) while the keypoint term weighs; 0: none.
    pub keypoint_lifts: usize,
    /// σ_z of the keypoint term's depth-order part, a fraction of the
    /// person's size ([`crate::keypoint_term`]); 0 turns it off.
    pub keypoint_depth_sigma: f64,
    /// Weight of the arms' anatomical prior ([`crate::anatomy`]: no
    /// forearm bent backwards); 0 turns it off.
    pub anatomy_weight: f64,
    /// Weight of the learned arm prior ([`crate::arm_prior`]: how people
    /// hold their arms, from motion capture); 0 turns it off.
    pub arm_prior_weight: f64,
    /// The [`TrackFrame`]'s estimate is the weighted mean of the particles
    /// (else the MAP particle, the default).
    pub mean_estimate: bool,
    /// K: the heaviest particles the [`TrackFrame`] lists, with their
    /// joints in the image ([`TrackFrame::top`]).
    pub top_particles: usize,
}

impl Default for TrackerConfig {
    fn default() -> Self {
        Self {
            particles: 300,
            filter: FilterKind::Pfrth,
            sigma_f: 0.1,
            sigma_rotation: 0.08,
            sigma_trunk: 0.02,
            sigma_translation: 0.01,
            prior_weight: 1.0,
            seed: 1,
            backend: BackendChoice::Auto,
            label_map: labels::IDENTITY_LABEL_MAP,
            partitioned: false,
            observation: ObservationMode::Regions,
            keypoint_sigma: DEFAULT_KEYPOINT_SIGMA,
            keypoint_lifts: DEFAULT_KEYPOINT_LIFTS,
            keypoint_depth_sigma: DEFAULT_DEPTH_SIGMA,
            anatomy_weight: DEFAULT_ANATOMY_WEIGHT,
            // RTPF's filter has no such prior; the session turns it on
            // (`FilterSettings::arm_prior_weight`).
            arm_prior_weight: 0.0,
            mean_estimate: false,
            top_particles: DEFAULT_TOP_PARTICLES,
        }
    }
}

impl TrackerConfig {
    fn validate(&self) -> Result<()> {
        let bad = |field: &'static str, value: String, reason: &'static str| {
            Err(TrackError::InvalidSetting {
                field,
                value,
                reason,
            })
        };
        if self.particles == 0 {
            return bad("particles", "0".into(), "need at least one particle");
        }
        for (field, v) in [
            ("sigma_f", self.sigma_f),
            ("sigma_rotation", self.sigma_rotation),
            ("sigma_trunk", self.sigma_trunk),
            ("sigma_translation", self.sigma_translation),
            ("prior_weight", self.prior_weight),
            ("anatomy_weight", self.anatomy_weight),
            ("arm_prior_weight", self.arm_prior_weight),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(field, v.to_string(), "must be finite and >= 0");
            }
        }
        if self.sigma_f == 0.0 {
            return bad("sigma_f", "0".into(), "must be > 0");
        }
        if !(self.keypoint_depth_sigma.is_finite() && self.keypoint_depth_sigma >= 0.0) {
            return bad(
                "keypoint_depth_sigma",
                self.keypoint_depth_sigma.to_string(),
                "must be finite and >= 0",
            );
        }
        if !(self.keypoint_sigma.is_finite() && self.keypoint_sigma > 0.0) {
            return bad(
                "keypoint_sigma",
                self.keypoint_sigma.to_string(),
                "must be finite and > 0",
            );
        }
        labels::check_label_map(&self.label_map).map_err(|source| TrackError::Likelihood {
            backend: "label map".into(),
            source: source.into(),
        })
    }
}

/// Wall-clock time of each stage of a step. `select`, `predict` and
/// `measure` follow one another within `total`; the last four are finer
/// parts that cut across them (the profile of `posecloud track --profile`,
/// [`crate::profile`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepTimings {
    pub select: Duration,
    /// Diffusion, simplex (including its likelihood batches) and flips.
    pub predict: Duration,
    pub measure: Duration,
    pub total: Duration,
    /// Forward kinematics of every batch weighed in the step (the
    /// simplex's and the partitions' included), with the states expanded
    /// to full poses, and the cloud's for the [`TrackFrame`] where the
    /// last batch did not hold the whole cloud.
    pub forward_kinematics: Duration,
    /// The likelihood terms of every batch weighed in the step: regions on
    /// the back end, keypoints, the anatomical and pose priors.
    pub likelihood: Duration,
    /// The simplex runs (HPOR) less the forward kinematics and likelihood
    /// of their batches.
    pub simplex: Duration,
    /// Kinematic flips and keypoint lifts (HKFS, [`crate::lift`]).
    pub flips: Duration,
}

/// A step's diagnostics and stage times (part of its [`TrackFrame`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepReport {
    /// Frames processed so far (1 after the first step; 0 for the frame a
    /// reset publishes).
    pub frame: u64,
    /// `F` of the MAP particle (RTPF Eq. 1): the residual of the frame
    /// (NaN before the first step).
    pub residual: f64,
    /// Effective sample size of the normalised weights.
    pub ess: f64,
    /// Poses weighed this step (measurement + simplex + flips).
    pub evaluations: usize,
    /// Groups that ran the simplex.
    pub simplex_groups: usize,
    /// Flipped hypotheses inserted.
    pub flips: usize,
    /// Children placed by keypoint lifting ([`crate::lift`]).
    pub lifts: usize,
    /// The terms that weighed this step: `config.observation`, or
    /// [`ObservationMode::Regions`] when it asks for keypoints and no
    /// usable detection is set.
    pub observation: ObservationMode,
    /// Keypoints of the detection that weighed this step (0 with regions
    /// only).
    pub keypoints: usize,
    pub timings: StepTimings,
}

/// The scorer's buffers, kept by the tracker from batch to batch so that a
/// step allocates them only when N grows.
#[derive(Debug, Default)]
struct ScoreBuffers {
    /// The batch's full poses.
    full: Vec<f64>,
    /// Joint transforms of `full`, computed once per batch.
    fk: BatchForwardKinematics,
    /// The keypoint term and the anatomical prior of each pose.
    log_kp: Vec<f64>,
    /// Time spent in forward kinematics, likelihood and the simplex's own
    /// work since the last [`Self::take_times`] ([`StepTimings`]).
    forward_kinematics: Duration,
    likelihood: Duration,
    simplex: Duration,
}

impl ScoreBuffers {
    /// Expands `states` to full poses into `full` and computes their joint
    /// transforms into `fk` (one forward kinematics for the batch); the
    /// time counts as forward kinematics.
    ///
    /// # Errors
    /// Forward kinematics refusing the poses.
    fn pose(&mut self, body: &TrackedBody, states: &[f64]) -> Result<()> {
        let t0 = Instant::now();
        let (d, dof) = (body.dim(), body.skeleton().dof());
        self.full.resize(states.len() / d * dof, 0.0);
        for (s, f) in states.chunks(d).zip(self.full.chunks_mut(dof)) {
            body.to_full(s, f);
        }
        self.fk.compute_states(body.skeleton(), &self.full)?;
        self.forward_kinematics += t0.elapsed();
        Ok(())
    }

    /// The times gathered since the last call: `(forward kinematics,
    /// likelihood, simplex)`; they restart from zero.
    fn take_times(&mut self) -> (Duration, Duration, Duration) {
        (
            std::mem::take(&mut self.forward_kinematics),
            std::mem::take(&mut self.likelihood),
            std::mem::take(&mut self.simplex),
        )
    }
}

/// The keypoint side of a [`Scorer`]: the detection, the camera it is
/// in, the term.
#[derive(Clone, Copy)]
struct KeypointInput<'a> {
    obs: &'a KeypointObservation,
    camera: &'a Camera,
    term: KeypointTerm,
}

/// The arms' priors a scorer adds to each pose's log weight.
#[derive(Clone, Copy)]
struct ArmPriors<'a> {
    /// The anatomical limits ([`crate::anatomy`]).
    anatomy: Option<&'a ArmAnatomy>,
    /// The learned density ([`crate::arm_prior`]).
    learned: Option<&'a ArmPrior>,
}

/// Scores batches of states: RTPF Eq. 1–2, the keypoint term (per
/// [`ObservationMode`]) and the prior.
struct Scorer<'a> {
    backend: &'a mut Backend,
    body: &'a TrackedBody,
    prior: Option<&'a PosePrior>,
    /// The arms' priors, those of weight 0 left out.
    arms: ArmPriors<'a>,
    sigma_f: f64,
    beta: f64,
    /// `−F²/(2σ_F²)` enters `log w`.
    regions: bool,
    keypoints: Option<KeypointInput<'a>>,
    buffers: &'a mut ScoreBuffers,
    evaluations: usize,
}

/// The terms `mode` asks for, given the detection at hand: `(regions,
/// keypoints)`; no usable detection means the regions.
fn active_terms(
    mode: ObservationMode,
    keypoints: Option<&KeypointObservation>,
) -> (bool, Option<&KeypointObservation>) {
    let kp = keypoints.filter(|k| k.is_usable() && mode != ObservationMode::Regions);
    (mode != ObservationMode::Keypoints || kp.is_none(), kp)
}

impl<'a> Scorer<'a> {
    fn new(
        backend: &'a mut Backend,
        body: &'a TrackedBody,
        prior: Option<&'a PosePrior>,
        arms: ArmPriors<'a>,
        config: &TrackerConfig,
        keypoints: Option<(&'a KeypointObservation, &'a Camera)>,
        buffers: &'a mut ScoreBuffers,
    ) -> Self {
        let (regions, kp) = active_terms(config.observation, keypoints.map(|k| k.0));
        Self {
            backend,
            body,
            prior,
            arms: ArmPriors {
                anatomy: arms.anatomy.filter(|a| a.weight > 0.0),
                learned: arms.learned.filter(|a| a.weight > 0.0),
            },
            sigma_f: config.sigma_f,
            beta: config.prior_weight,
            regions,
            keypoints: kp.zip(keypoints).map(|(obs, (_, camera))| KeypointInput {
                obs,
                camera,
                term: KeypointTerm {
                    depth_sigma: config.keypoint_depth_sigma,
                    ..KeypointTerm::new(config.keypoint_sigma)
                },
            }),
            buffers,
            evaluations: 0,
        }
    }

    fn score(&mut self, obs: &Observation, states: &[f64]) -> Result<Vec<Score>> {
        let mut scores = Vec::new();
        self.score_into(obs, states, &mut scores)?;
        Ok(scores)
    }

    /// As [`Self::score`], into `scores` (its contents replaced).
    fn score_into(
        &mut self,
        obs: &Observation,
        states: &[f64],
        scores: &mut Vec<Score>,
    ) -> Result<()> {
        let d = self.body.dim();
        let n = states.len() / d;
        // One forward kinematics of the batch, read by every term.
        self.buffers.pose(self.body, states)?;
        let t0 = Instant::now();
        let ScoreBuffers {
            full, fk, log_kp, ..
        } = &mut *self.buffers;
        // The keypoint term and the anatomical prior, per pose.
        log_kp.clear();
        log_kp.resize(n, 0.0);
        if let Some(k) = &self.keypoints {
            k.term.add_log_likelihood(k.obs, k.camera, fk, log_kp);
        }
        if let Some(a) = self.arms.anatomy {
            a.add_log_prior(fk, log_kp);
        }
        if let Some(a) = self.arms.learned {
            a.add_log_prior(fk, log_kp);
        }
        // F is computed in every mode: it is the residual the session
        // watches, whether or not it weighs the particles.
        let ev = self.backend.evaluate_posed(obs, full, fk)?;
        self.evaluations += n;
        let model = NonOverlap::new(self.sigma_f).expect("validated");
        let regions = self.regions;
        scores.clear();
        scores.extend(
            states
                .chunks(d)
                .zip(&ev.non_overlap)
                .zip(log_kp.iter())
                .map(|((s, &f), &kp)| {
                    let prior = self.prior.map_or(0.0, |p| self.beta * p.log_density(s));
                    let region = if regions {
                        model.log_likelihood(f)
                    } else {
                        0.0
                    };
                    (-(region + kp + prior), f)
                }),
        );
        self.buffers.likelihood += t0.elapsed();
        Ok(())
    }
}

/// RTPF's tracker (module docs). Bevy-free: an app owns one, feeds it
/// observations and reads particles, weights and reports.
#[derive(Debug)]
pub struct Tracker {
    body: TrackedBody,
    camera: Camera,
    config: TrackerConfig,
    backend: Backend,
    prior: Option<PosePrior>,
    /// `None` for a body without two arms.
    anatomy: Option<ArmAnatomy>,
    /// The learned arm prior (none for a body without two arms).
    arm_prior: Option<ArmPrior>,
    flip_arms: Vec<FlipArm>,
    init: Vec<f64>,
    /// `N × D` tracked states.
    states: Vec<f64>,
    next: Vec<f64>,
    log_weights: Vec<f64>,
    /// `F` of each particle at the last measurement.
    residuals: Vec<f64>,
    weights: Weights,
    ancestors: Vec<usize>,
    /// The children of each parent after selection.
    groups: ParentGroups,
    /// The simplices of a step (HPOR, PFRTH), run after run.
    simplex: LockstepSimplex,
    scratch: ScoreBuffers,
    /// The step's own vectors (crate::step_buffers).
    step_buffers: StepBuffers,
    /// What the last step (or reset) published, refilled in place.
    track_frame: TrackFrame,
    frame_scratch: FrameScratch,
    /// Landmarks → skeleton points of this body ([`KeypointMap::for_body`]).
    keypoint_map: KeypointMap,
    /// The latest detection ([`Self::set_keypoints`]).
    keypoints: Option<KeypointObservation>,
    /// The app's device, for every GPU back end built later too.
    device: Option<SharedDevice>,
    frame: u64,
}

impl Tracker {
    /// A tracker of `body` seen by `camera`, every particle at the full
    /// pose `init`, with an optional pose prior. The back end follows
    /// `config.backend` (a headless device for `Auto`/`Gpu`).
    ///
    /// # Errors
    /// Invalid settings, a bad `init`, or no GPU when `Gpu` was asked for.
    pub fn new(
        body: TrackedBody,
        camera: Camera,
        init: &[f64],
        prior: Option<PosePrior>,
        config: TrackerConfig,
    ) -> Result<Self> {
        Self::with_device(body, camera, init, prior, config, None)
    }

    /// As [`Self::new`], on an app's own device for the GPU back end.
    ///
    /// # Errors
    /// As [`Self::new`].
    pub fn with_device(
        body: TrackedBody,
        camera: Camera,
        init: &[f64],
        prior: Option<PosePrior>,
        config: TrackerConfig,
        device: Option<SharedDevice>,
    ) -> Result<Self> {
        config.validate()?;
        body.skeleton()
            .check_pose(init)
            .map_err(|e| TrackError::BadPose {
                what: "initial pose".into(),
                message: e.to_string(),
            })?;
        let backend = Backend::new(
            config.backend,
            device.clone(),
            body.skeleton(),
            &camera,
            NonOverlap::new(config.sigma_f).expect("validated"),
            config.label_map,
        )?;
        let flip_arms = [Side::Left, Side::Right]
            .into_iter()
            .filter_map(|s| Arm::find(body.skeleton(), s).ok())
            .filter_map(|a| FlipArm::new(&body, a, init))
            .collect();
        let keypoint_map = KeypointMap::for_body(&body);
        let anatomy = ArmAnatomy::new(body.skeleton())
            .ok()
            .map(|a| a.with_weight(config.anatomy_weight))
            .transpose()?;
        let arm_prior = ArmPrior::new(body.skeleton(), ArmDensity::default_table())
            .ok()
            .map(|a| a.with_weight(config.arm_prior_weight))
            .transpose()?;
        let mut t = Self {
            body,
            camera,
            config,
            backend,
            prior,
            anatomy,
            arm_prior,
            flip_arms,
            init: Vec::new(),
            states: Vec::new(),
            next: Vec::new(),
            log_weights: Vec::new(),
            residuals: Vec::new(),
            weights: Weights::uniform(1),
            ancestors: Vec::new(),
            groups: ParentGroups::default(),
            simplex: LockstepSimplex::default(),
            scratch: ScoreBuffers::default(),
            step_buffers: StepBuffers::default(),
            track_frame: TrackFrame::default(),
            frame_scratch: FrameScratch::default(),
            keypoint_map: KeypointMap::default(),
            keypoints: None,
            device,
            frame: 0,
        };
        t.keypoint_map = keypoint_map;
        t.reset(init)?;
        Ok(t)
    }

    /// Puts every particle at the full pose `init` with equal weights, and
    /// publishes that cloud as frame 0 ([`Self::frame`]).
    ///
    /// # Errors
    /// A pose of the wrong length or with non-finite values.
    pub fn reset(&mut self, init: &[f64]) -> Result<()> {
        self.body
            .skeleton()
            .check_pose(init)
            .map_err(|e| TrackError::BadPose {
                what: "initial pose".into(),
                message: e.to_string(),
            })?;
        let mut s = self.body.state_of(init);
        self.body.clamp(&mut s);
        let n = self.config.particles;
        self.init = init.to_vec();
        self.states = s.repeat(n);
        self.log_weights = vec![0.0; n];
        self.residuals = vec![f64::NAN; n];
        self.weights = Weights::uniform(n);
        self.frame = 0;
        let report = StepReport {
            residual: f64::NAN,
            ess: self.weights.ess(),
            ..StepReport::default()
        };
        self.publish(report, false)
    }

    /// Changes the settings; a new particle count restarts the cloud at the
    /// last MAP pose. A new back end is built on the device the tracker was
    /// given ([`Self::with_device`]) and weighs the same cloud (the back
    /// ends agree count for count).
    ///
    /// # Errors
    /// Invalid settings (the old ones stay).
    pub fn set_config(&mut self, config: TrackerConfig) -> Result<()> {
        config.validate()?;
        if config.backend != self.config.backend {
            self.backend = Backend::new(
                config.backend,
                self.device.clone(),
                self.body.skeleton(),
                &self.camera,
                NonOverlap::new(config.sigma_f).expect("validated"),
                config.label_map,
            )?;
        }
        self.backend
            .set_model(NonOverlap::new(config.sigma_f).expect("validated"));
        self.backend.set_label_map(config.label_map)?;
        if let Some(a) = &mut self.anatomy {
            a.weight = config.anatomy_weight;
        }
        if let Some(a) = &mut self.arm_prior {
            a.weight = config.arm_prior_weight;
        }
        let restart = config.particles != self.config.particles;
        let republish = config.mean_estimate != self.config.mean_estimate
            || config.top_particles != self.config.top_particles;
        self.config = config;
        if restart {
            let map = self.body.full_pose(self.map_state());
            self.reset(&map)?;
        } else if republish {
            self.publish(*self.track_frame.report(), false)?;
        }
        Ok(())
    }

    pub fn config(&self) -> &TrackerConfig {
        &self.config
    }
    pub fn body(&self) -> &TrackedBody {
        &self.body
    }
    pub fn camera(&self) -> &Camera {
        &self.camera
    }
    /// Which likelihood back end runs, on which adapter.
    pub fn describe(&self) -> String {
        self.backend.describe()
    }
    /// The likelihood back end that runs.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }
    /// The particles' tracked states, `N × D` row-major.
    pub fn particles(&self) -> &[f64] {
        &self.states
    }
    /// Normalised weights.
    pub fn weights(&self) -> &[f64] {
        self.weights.normalised()
    }
    /// `F` of each particle at the last step (NaN before the first).
    pub fn residuals(&self) -> &[f64] {
        &self.residuals
    }
    /// Particle `i` as a full skeleton pose.
    pub fn full_pose(&self, i: usize) -> Vec<f64> {
        let d = self.body.dim();
        self.body.full_pose(&self.states[i * d..(i + 1) * d])
    }
    /// Arms kinematic flipping can move.
    pub fn flip_arms(&self) -> &[FlipArm] {
        &self.flip_arms
    }
    /// What the last step published (frame 0 after a reset): estimate,
    /// cloud, heaviest particles, diagnostics ([`TrackFrame`]).
    pub fn frame(&self) -> &TrackFrame {
        &self.track_frame
    }

    /// The learned arm prior's samples from now on (a table of one's own,
    /// [`ArmDensity::load`]; the weight stays `config.arm_prior_weight`).
    /// A body without two arms has no arm prior, and this changes nothing.
    pub fn set_arm_density(&mut self, density: ArmDensity) {
        if let Some(a) = &mut self.arm_prior {
            a.set_density(density);
        }
    }

    /// The landmarks this tracker can compare with its body
    /// ([`KeypointMap::for_body`]); build observations with it
    /// ([`KeypointObservation::from_keypoints`]).
    pub fn keypoint_map(&self) -> &KeypointMap {
        &self.keypoint_map
    }

    /// Sets the detection that the following steps (and
    /// [`Self::score_states`]) weigh with, until replaced; `None`: no
    /// detection. Positions are in the pixels of [`Self::camera`]. It is
    /// used when `config.observation` is `Keypoints` or `Both` and it is
    /// usable ([`KeypointObservation::is_usable`]); otherwise the regions
    /// weigh alone. A detection a few frames old (an asynchronous
    /// detector's) is the caller's choice to keep or drop.
    ///
    /// # Errors
    /// A keypoint on a joint the skeleton does not have (the old detection
    /// stays).
    pub fn set_keypoints(&mut self, keypoints: Option<KeypointObservation>) -> Result<()> {
        if let Some(k) = &keypoints {
            k.check(self.body.skeleton())?;
        }
        self.keypoints = keypoints;
        Ok(())
    }

    /// The detection set by [`Self::set_keypoints`].
    pub fn keypoints(&self) -> Option<&KeypointObservation> {
        self.keypoints.as_ref()
    }

    fn map_index(&self) -> usize {
        let w = self.weights.normalised();
        (0..w.len())
            .max_by(|&a, &b| w[a].total_cmp(&w[b]))
            .unwrap_or(0)
    }
    fn map_state(&self) -> &[f64] {
        let d = self.body.dim();
        let i = self.map_index();
        &self.states[i * d..(i + 1) * d]
    }

    /// Publishes the cloud as [`Self::frame`] with `report`.
    /// `weighed_whole_cloud`: the scorer's buffers hold the transforms of
    /// exactly the current particles, in order — the step's final batch
    /// weighed every particle, and nothing has moved them since (the next
    /// selection comes at the next step). Otherwise (a simplex scored some
    /// particles in its own batches; a reset) the cloud's forward
    /// kinematics is computed once here, into the same reused buffers.
    ///
    /// # Errors
    /// Forward kinematics refusing the poses (not expected: the states
    /// are within their limits).
    fn publish(&mut self, mut report: StepReport, weighed_whole_cloud: bool) -> Result<()> {
        if !weighed_whole_cloud {
            let before = self.scratch.forward_kinematics;
            self.scratch.pose(&self.body, &self.states)?;
            report.timings.forward_kinematics += self.scratch.forward_kinematics - before;
        }
        let cloud = Cloud {
            body: &self.body,
            camera: &self.camera,
            states: &self.states,
            weights: self.weights.normalised(),
            fk: &self.scratch.fk,
            map: self.map_index(),
            mean_estimate: self.config.mean_estimate,
            top: self.config.top_particles,
        };
        self.track_frame
            .publish(&cloud, report, &mut self.frame_scratch);
        Ok(())
    }

    fn camera_centre(&self) -> Point3<f64> {
        Point3::from(self.camera.world_from_camera().translation.vector)
    }

    /// Diffusion σ of each tracked parameter, into `out` (replaced).
    fn sigmas_into(&self, out: &mut Vec<f64>) {
        out.clear();
        out.extend(self.body.params().iter().map(|p| {
            if p.translation {
                self.config.sigma_translation
            } else if p.limb {
                self.config.sigma_rotation
            } else {
                self.config.sigma_trunk
            }
        }));
    }

    /// A scorer on the current back end, prior, keypoints and settings.
    fn scorer(&mut self) -> Scorer<'_> {
        Scorer::new(
            &mut self.backend,
            &self.body,
            self.prior.as_ref(),
            ArmPriors {
                anatomy: self.anatomy.as_ref(),
                learned: self.arm_prior.as_ref(),
            },
            &self.config,
            self.keypoints.as_ref().map(|k| (k, &self.camera)),
            &mut self.scratch,
        )
    }

    /// Runs the groups added to `self.simplex` in lockstep in the
    /// subspace `coords` ([`LockstepSimplex::run`]), scored as
    /// [`Self::scorer`] scores: the poses weighed. The simplices stay in
    /// `self.simplex`.
    ///
    /// # Errors
    /// A back-end failure.
    fn run_simplex(&mut self, obs: &Observation, steps: &[f64], coords: &[usize]) -> Result<usize> {
        let t0 = Instant::now();
        let scoring = |b: &ScoreBuffers| b.forward_kinematics + b.likelihood;
        let scored_before = scoring(&self.scratch);
        let mut simplex = std::mem::take(&mut self.simplex);
        let mut scorer = self.scorer();
        let body = scorer.body;
        let run = simplex.run(body, steps, coords, &mut |b, out| {
            scorer.score_into(obs, b, out)
        });
        self.simplex = simplex;
        let evaluations = run?;
        let scored = scoring(&self.scratch) - scored_before;
        self.scratch.simplex += t0.elapsed().saturating_sub(scored);
        Ok(evaluations)
    }

    /// Scores states with the current back end, prior, σ_F and keypoints
    /// (a diagnostic and the initial search's objective): `(−log w, F)`.
    ///
    /// # Errors
    /// Bad states or a back-end failure.
    pub fn score_states(&mut self, obs: &Observation, states: &[f64]) -> Result<Vec<(f64, f64)>> {
        let d = self.body.dim();
        for s in states.chunks(d) {
            self.body.check_state(s, "scored state")?;
        }
        self.scorer().score(obs, states)
    }

    /// One frame: selection, prediction, measurement, normalisation
    /// (module docs); publishes and returns the [`TrackFrame`].
    ///
    /// # Errors
    /// A back-end failure or collapsed weights (every particle scored
    /// `−∞`), naming the frame.
    pub fn step(&mut self, obs: &Observation) -> Result<&TrackFrame> {
        let t0 = Instant::now();
        self.scratch.take_times();
        let n = self.config.particles;
        let d = self.body.dim();
        let kind = self.config.filter;
        let frame = self.frame + 1;
        let seed = self.config.seed;
        // The step's vectors (crate::step_buffers), handed back once the
        // cloud is weighed; a failed step drops them and the next one
        // allocates them again.
        let mut buf = std::mem::take(&mut self.step_buffers);
        if buf.joint.is_empty() {
            buf.joint = vec![(0..d).collect()];
            buf.partitions = self.body.partitions();
        }
        buf.reserve(n, d);

        // 1. Selection.
        let mut rng = stream_rng(seed, frame, StreamDomain::Resample, 0);
        let w = self.weights.normalised();
        let r = if kind.parent_children() {
            smc::parent_children(w, n, &mut rng, &mut self.ancestors)
        } else {
            smc::multinomial(w, n, &mut rng, &mut self.ancestors)
        };
        r.map_err(|source| TrackError::Weights { frame, source })?;
        self.groups.group(&self.ancestors, n);
        let groups = std::mem::take(&mut self.groups);
        let t_select = t0.elapsed();

        // 2. Prediction.
        let t1 = Instant::now();
        self.sigmas_into(&mut buf.sigmas);
        buf.scores.clear();
        buf.scores.resize(n, None);
        // Centre of each child's diffusion (its parent, or a simplex's best vertex).
        buf.centre.clone_from(&self.ancestors);
        buf.centre_states.clone_from(&self.states);
        self.next.resize(n * d, 0.0);
        let mut evaluations = 0;
        let mut simplex_groups = 0;
        buf.best.clear();
        if kind.simplex() && !self.config.partitioned {
            indices_into(&mut buf.big, n, |p| groups.children(p).len() > d + 1);
            simplex_groups = buf.big.len();
            if !buf.big.is_empty() {
                // centre_states is still a copy of self.states here.
                self.simplex.clear();
                for &p in &buf.big {
                    let start = &buf.centre_states[p * d..(p + 1) * d];
                    self.simplex.add_group(start, groups.children(p).len() - d);
                }
                evaluations += self.run_simplex(obs, &buf.sigmas, &buf.joint[0])?;
                let sx = &self.simplex;
                for (g, &p) in buf.big.iter().enumerate() {
                    let children = groups.children(p);
                    for (k, &c) in children.iter().enumerate() {
                        if k <= d {
                            self.next[c * d..(c + 1) * d].copy_from_slice(sx.vertex(g, k));
                            buf.scores[c] = Some(sx.score(g, k));
                        } else {
                            // Diffused around the best vertex (held in
                            // the parent's row of centre_states).
                            buf.centre[c] = p;
                        }
                    }
                    buf.centre_states[p * d..(p + 1) * d].copy_from_slice(sx.vertex(g, 0));
                    buf.best.offer(sx.vertex(g, 0), sx.score(g, 0).0);
                }
            }
        }
        // Diffusion of every child not placed by a simplex: all of its
        // parameters at once, or partition by partition.
        let partitions = if self.config.partitioned {
            &buf.partitions
        } else {
            &buf.joint
        };
        indices_into(&mut buf.free, n, |i| buf.scores[i].is_none());
        for &i in &buf.free {
            let c = buf.centre[i];
            self.next[i * d..(i + 1) * d].copy_from_slice(&buf.centre_states[c * d..(c + 1) * d]);
        }
        // With partitions and a simplex filter (HPOR, PFRTH), the simplex
        // runs per partition: every group of more than m + 1 free children
        // sharing a start (m the partition's size) runs it in that
        // partition's subspace for n − m iterations, its vertices replace
        // children and the rest are diffused around the best vertex.
        let part_simplex = self.config.partitioned && kind.simplex();
        // The row each free child started the stage from (equal rows for
        // one group).
        buf.src.clone_from(&buf.centre);
        for (stage, part) in partitions.iter().enumerate() {
            let last = stage + 1 == partitions.len();
            buf.placed.clear();
            buf.placed.resize(n, None);
            if part_simplex && !buf.free.is_empty() {
                let m = part.len();
                // The free children by the row they start from (rows in
                // increasing order, children in increasing order within
                // one), and the runs of more than m + 1: `(first, len)`.
                let src = &buf.src;
                let by_src = &mut buf.by_src;
                by_src.clone_from(&buf.free);
                by_src.sort_unstable_by_key(|&i| (src[i], i));
                buf.runs.clear();
                let mut first = 0;
                while first < by_src.len() {
                    let row = src[by_src[first]];
                    let len = by_src[first..]
                        .iter()
                        .take_while(|&&i| src[i] == row)
                        .count();
                    if len > m + 1 {
                        buf.runs.push((first, len));
                    }
                    first += len;
                }
                if !buf.runs.is_empty() {
                    self.simplex.clear();
                    for &(first, len) in &buf.runs {
                        let c = buf.by_src[first];
                        self.simplex
                            .add_group(&self.next[c * d..(c + 1) * d], len - m);
                    }
                    evaluations += self.run_simplex(obs, &buf.sigmas, part)?;
                    simplex_groups += buf.runs.len();
                    let sx = &self.simplex;
                    for (g, &(first, len)) in buf.runs.iter().enumerate() {
                        for (k, &c) in buf.by_src[first..first + len].iter().enumerate() {
                            let v = if k <= m { k } else { 0 };
                            self.next[c * d..(c + 1) * d].copy_from_slice(sx.vertex(g, v));
                            if k <= m {
                                buf.placed[c] = Some(sx.score(g, k));
                            }
                        }
                        if last {
                            buf.best.offer(sx.vertex(g, 0), sx.score(g, 0).0);
                        }
                    }
                }
            }
            let (scores, placed) = (&buf.scores, &buf.placed);
            buf.skip.clear();
            buf.skip
                .extend((0..n).map(|i| scores[i].is_some() || placed[i].is_some()));
            let body = &self.body;
            let sigmas = &buf.sigmas;
            self.next
                .par_chunks_mut(d)
                .enumerate()
                .zip(buf.skip.par_iter())
                .with_min_len(64)
                .for_each(|((i, x), &skip)| {
                    if skip {
                        return;
                    }
                    let stream = (stage * n + i) as u64;
                    let mut rng = stream_rng(seed, frame, StreamDomain::Propagate, stream);
                    for &k in part {
                        let p = &body.params()[k];
                        x[k] = smc::truncated_normal(x[k], sigmas[k], p.lower, p.upper, &mut rng);
                    }
                });
            if last {
                // Vertices of the last partition's simplices are scored.
                for (score, placed) in buf.scores.iter_mut().zip(&buf.placed) {
                    if placed.is_some() {
                        *score = *placed;
                    }
                }
                continue;
            }
            if buf.free.is_empty() {
                continue;
            }
            // Weigh the free children and resample them among themselves
            // before the next partition moves (MacCormick & Isard's
            // weighted resampling; the final weights are the last
            // measurement's).
            gather_into(&mut buf.rows, &self.next, &buf.free, d);
            let (free, placed) = (&buf.free, &buf.placed);
            indices_into(&mut buf.todo, free.len(), |j| placed[free[j]].is_none());
            gather_into(&mut buf.batch, &buf.rows, &buf.todo, d);
            buf.log_w.clear();
            buf.log_w.resize(buf.free.len(), 0.0);
            if !buf.batch.is_empty() {
                self.scorer().score_into(obs, &buf.batch, &mut buf.costs)?;
                evaluations += buf.costs.len();
                for (&j, c) in buf.todo.iter().zip(&buf.costs) {
                    buf.log_w[j] = -c.0;
                }
            }
            for (j, &i) in buf.free.iter().enumerate() {
                if let Some(p) = buf.placed[i] {
                    buf.log_w[j] = -p.0;
                }
            }
            buf.stage_weights
                .update(&buf.log_w)
                .map_err(|source| TrackError::Weights { frame, source })?;
            let mut rng = stream_rng(seed, frame, StreamDomain::User(2), stage as u64);
            let w = buf.stage_weights.normalised();
            smc::multinomial(w, buf.free.len(), &mut rng, &mut buf.picks)
                .map_err(|source| TrackError::Weights { frame, source })?;
            for (&i, &k) in buf.free.iter().zip(&buf.picks) {
                self.next[i * d..(i + 1) * d].copy_from_slice(&buf.rows[k * d..(k + 1) * d]);
                buf.src[i] = k;
            }
        }
        // Kinematic flipping, then keypoint lifting (crate::lift), into
        // free children not placed by a simplex.
        let t_flips = Instant::now();
        let mut flips = 0;
        let mut lifts = 0;
        let lifting = self.config.keypoint_lifts > 0
            && active_terms(self.config.observation, self.keypoints.as_ref())
                .1
                .is_some();
        if (kind.flipping() || lifting) && !self.flip_arms.is_empty() {
            let source = buf.best.vertex().unwrap_or_else(|| self.map_state());
            buf.arms.clear();
            if kind.flipping() {
                flips = flip_hypotheses(
                    &self.body,
                    &self.flip_arms,
                    &self.camera_centre(),
                    source,
                    &mut buf.arms,
                );
            }
            if lifting && let Some(kp) = self.keypoints.as_ref() {
                lifts = crate::lift::lift_hypotheses(
                    &self.body,
                    &self.flip_arms,
                    &self.camera,
                    kp,
                    source,
                    self.config.keypoint_lifts,
                    &mut buf.arms,
                );
            }
            indices_into(&mut buf.free, n, |i| buf.scores[i].is_none());
            let mut rng = stream_rng(seed, frame, StreamDomain::User(1), 0);
            buf.free.shuffle(&mut rng);
            let placed = buf.free.len().min(flips + lifts);
            let hyp = buf.arms.proposals();
            for (k, &i) in buf.free.iter().take(placed).enumerate() {
                self.next[i * d..(i + 1) * d].copy_from_slice(&hyp[k * d..(k + 1) * d]);
            }
            lifts = placed.saturating_sub(flips);
            flips = flips.min(placed);
        }
        let t_flips = t_flips.elapsed();
        let t_predict = t1.elapsed();

        // 3. Measurement of every particle the simplex did not score.
        let t2 = Instant::now();
        indices_into(&mut buf.todo, n, |i| buf.scores[i].is_none());
        // This batch is the step's last: when it holds every particle (no
        // simplex placed any), its transforms are the cloud's, in order, for
        // the TrackFrame.
        let weighed_whole_cloud = buf.todo.len() == n;
        if !buf.todo.is_empty() {
            gather_into(&mut buf.batch, &self.next, &buf.todo, d);
            self.scorer().score_into(obs, &buf.batch, &mut buf.costs)?;
            evaluations += buf.costs.len();
            for (&i, &s) in buf.todo.iter().zip(&buf.costs) {
                buf.scores[i] = Some(s);
            }
        }
        // 4. Normalisation.
        for (i, s) in buf.scores.iter().enumerate() {
            let (cost, f) = s.expect("every particle is scored");
            self.log_weights[i] = -cost;
            self.residuals[i] = f;
        }
        self.step_buffers = buf;
        self.weights
            .update(&self.log_weights)
            .map_err(|source| TrackError::Weights { frame, source })?;
        std::mem::swap(&mut self.states, &mut self.next);
        self.frame = frame;
        let t_measure = t2.elapsed();

        let map = self.map_index();
        let (regions, kp) = active_terms(self.config.observation, self.keypoints.as_ref());
        let observation = match (regions, kp.is_some()) {
            (true, true) => ObservationMode::Both,
            (false, true) => ObservationMode::Keypoints,
            _ => ObservationMode::Regions,
        };
        let keypoints = kp.map_or(0, |k| k.points().len());
        self.groups = groups;
        let (forward_kinematics, likelihood, simplex) = self.scratch.take_times();
        let report = StepReport {
            frame,
            residual: self.residuals[map],
            ess: self.weights.ess(),
            evaluations,
            simplex_groups,
            flips,
            lifts,
            observation,
            keypoints,
            timings: StepTimings {
                select: t_select,
                predict: t_predict,
                measure: t_measure,
                total: t0.elapsed(),
                forward_kinematics,
                likelihood,
                simplex,
                flips: t_flips,
            },
        };
        self.publish(report, weighed_whole_cloud)?;
        // The step's total includes publishing the frame.
        self.track_frame.report.timings.total = t0.elapsed();
        Ok(&self.track_frame)
    }
}

/// A short search over the global position for a standard start pose
/// (the user stands in `start`, e.g. arms down, somewhere in view): a grid
/// of `steps³` root offsets of ±`extent` (metres) around the start, the
/// best refined twice at a third of the spacing. Depth stands in for the
/// body's scale. Returns the full pose with the best root position and its `F`.
///
/// # Errors
/// As [`Tracker::score_states`]; `steps < 2` or a bad extent.
pub fn search_root_position(
    tracker: &mut Tracker,
    obs: &Observation,
    start: &[f64],
    extent: [f64; 3],
    steps: usize,
) -> Result<(Vec<f64>, f64)> {
    if steps < 2 || extent.iter().any(|e| !(e.is_finite() && *e >= 0.0)) {
        return Err(TrackError::InvalidSetting {
            field: "root search",
            value: format!("{steps} steps over {extent:?}"),
            reason: "need >= 2 steps and finite extents >= 0",
        });
    }
    let body = tracker.body().clone();
    let translations: Vec<usize> = body
        .params()
        .iter()
        .enumerate()
        .filter(|(_, p)| p.translation)
        .map(|(i, _)| i)
        .take(3)
        .collect();
    let mut best = body.state_of(start);
    body.clamp(&mut best);
    let mut best_score = tracker.score_states(obs, &best)?[0];
    let mut spacing: Vec<f64> = extent
        .iter()
        .map(|e| 2.0 * e / (steps - 1) as f64)
        .collect();
    let mut half = extent;
    for _round in 0..3 {
        let centre = best.clone();
        let mut batch = Vec::new();
        let total = steps.pow(translations.len() as u32);
        for k in 0..total {
            let mut s = centre.clone();
            let mut rest = k;
            for (a, &ti) in translations.iter().enumerate() {
                let j = rest % steps;
                rest /= steps;
                s[ti] += -half[a] + spacing[a] * j as f64;
            }
            body.clamp(&mut s);
            batch.extend(s);
        }
        let scores = tracker.score_states(obs, &batch)?;
        let d = body.dim();
        for (s, sc) in batch.chunks(d).zip(scores) {
            if sc.0 < best_score.0 {
                best_score = sc;
                best = s.to_vec();
            }
        }
        for a in 0..3 {
            half[a] = spacing[a];
            spacing[a] = 2.0 * half[a] / (steps - 1) as f64;
        }
    }
    Ok((body.full_pose(&best), best_score.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_ignoring_case_and_errors_list_them() {
        assert_eq!("pfrth".parse(), Ok(FilterKind::Pfrth));
        assert_eq!("Both".parse(), Ok(ObservationMode::Both));
        assert_eq!(
            "pf".parse::<FilterKind>(),
            Err("unknown filter `pf` (pfs, hspc, hpor, hkfs, pfrth)".to_string())
        );
        assert_eq!(
            "all".parse::<ObservationMode>(),
            Err("unknown observation `all` (regions, keypoints, both)".to_string())
        );
    }
}

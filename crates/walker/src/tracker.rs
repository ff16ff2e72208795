//! [`WalkerTracker`]: sequential importance resampling over the physics
//! prior, tracking 2D hip / knee / foot points (PHYSPRIOR Ch. 3–4).
//!
//! One frame is PHYSPRIOR Alg. 1 on `smc`'s [`Filter`] with residual
//! resampling when `N_eff < N_thres`. The proposal is the prediction
//! density (§3.2, Alg. 2–4), so the Eq. 3.2 correction is zero:
//!
//! 1. `θ̂_t` (Alg. 3): segment lengths from `ℬ'(s_ℓ, S_t, Λ_t)`, the force
//!    value (`κ(t)` or `f(t)`) from `𝒩(M_t, s_t² + σ²)`, an impulse `ι`;
//! 2. integrate the dynamics over `τ` (RK4 substeps; heel strikes swap the
//!    stance leg);
//! 3. the kinematic joints by Eq. 2.6 (walker legs set the hips,
//!    `ψ_hip ≈ φ`), the stance heel pinned to its contact point, which moves
//!    to the new stance heel at a support transfer.
//!
//! The likelihood is the isotropic Gaussian of Ch. 4 per visible point,
//! `p_m(o − ℙ(k(x)); σ_i²)` with Table 4.1's σ. The baseline prior
//! ([`Dynamics::ConstantVelocity`]) drops the dynamics: root position and
//! both hips follow Eq. 2.6 with `κ = 0` (constant velocity with noise), no
//! pinned foot.
//!
//! The stride index change `s(t) ≠ s(t−1)` used by the force statistics is
//! the heel strike of the *previous* frame (the current one is only known
//! after integrating with the force it needs).

use labels::Camera;
use nalgebra::{Point3, Vector3};
use smc::{
    Filter, FilterConfig, History, Likelihood, ParticleRng, ParticleSet, Propagate, ResamplePolicy,
    Resampling,
};

use crate::anthropomorphic::{Walker, WalkerParams, WalkerState};
use crate::error::{Result, WalkerError, require_positive};
use crate::kinematics::{JointEvolution, LegAngles, LegPoints, Segments, heading_axes, leg_points};
use crate::mocap::{POINTS, TruthClip};
use crate::monopode::{Monopode, MonopodeParams, MonopodeState};
use crate::stochastic::{ForceParams, ForceStats, SegmentPrior};
use rand::RngExt;
use rand_distr::StandardNormal;

/// Which motion prior drives the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dynamics {
    /// The anthropomorphic walker (§2.1.2).
    Anthropomorphic,
    /// The monopode (§2.1.1).
    Monopode,
    /// Baseline without physics: constant-velocity kinematics.
    ConstantVelocity,
}

impl Dynamics {
    /// Short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Dynamics::Anthropomorphic => "anthropomorphic",
            Dynamics::Monopode => "monopode",
            Dynamics::ConstantVelocity => "const-velocity",
        }
    }
}

/// Joint evolution parameters (Table 2.5).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JointTable {
    /// Heading about the vertical.
    pub torso: JointEvolution,
    /// Hips not fixed by the dynamics.
    pub hip: JointEvolution,
    /// Knees.
    pub knee: JointEvolution,
    /// Ankle pitch.
    pub ankle_x: JointEvolution,
    /// Ankle yaw.
    pub ankle_z: JointEvolution,
}

impl Default for JointTable {
    fn default() -> Self {
        JointTable {
            torso: JointEvolution::TORSO,
            hip: JointEvolution::HIP,
            knee: JointEvolution::KNEE,
            ankle_x: JointEvolution::ANKLE_X,
            ankle_z: JointEvolution::ANKLE_Z,
        }
    }
}

/// An estimate of the starting pose ("hand initialised", Ch. 4).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InitialPose {
    /// Heading `θ`.
    pub heading: f64,
    /// Left and right leg angles.
    pub legs: [LegAngles; 2],
    /// Hip angular rates (rad/s), left and right.
    pub hip_rates: [f64; 2],
    /// Knee angular rates (rad/s).
    pub knee_rates: [f64; 2],
    /// Segment lengths.
    pub segments: Segments,
    /// Stance leg (0 left, 1 right).
    pub stance: usize,
    /// Root (hip centre) position.
    pub root: Point3<f64>,
    /// Root velocity (m/s).
    pub root_velocity: Vector3<f64>,
}

impl InitialPose {
    /// Fits the lower-body model to frame `f` of a clip (angles by
    /// projection on the sagittal plane, rates by finite differences with
    /// frame `f + 1`).
    ///
    /// # Errors
    /// [`WalkerError::Mocap`] if `f + 1` is past the clip.
    pub fn from_truth(clip: &TruthClip, f: usize) -> Result<Self> {
        if f + 1 >= clip.len() {
            return Err(WalkerError::Mocap(format!(
                "initial frame {f} needs a following frame (clip has {})",
                clip.len()
            )));
        }
        let fit = |fr: &crate::mocap::TruthFrame| {
            let [lh, rh] = fr.hips;
            let left = (lh - rh).normalize();
            let d = left.cross(&Vector3::y()).normalize();
            let heading = d.x.atan2(d.z);
            let up = Vector3::y();
            let angle = |v: Vector3<f64>| v.dot(&d).atan2(-v.dot(&up));
            let mut legs = [LegAngles::default(); 2];
            let mut seg = Segments {
                hips: (lh - rh).norm(),
                ..Segments::default()
            };
            for (i, (h, k, a, t)) in [
                (lh, fr.points[1], fr.points[2], fr.toes[0]),
                (rh, fr.points[3], fr.points[4], fr.toes[1]),
            ]
            .into_iter()
            .enumerate()
            {
                let th = angle(k - h);
                let sh = angle(a - k);
                let foot = t - a;
                let beta = foot.dot(&up).atan2(foot.dot(&d));
                legs[i] = LegAngles {
                    hip: th,
                    knee: (sh - th).min(0.0),
                    ankle_x: (beta - sh).clamp(-1.5, 1.5),
                    ankle_z: 0.0,
                };
                seg.thigh = 0.5 * (seg.thigh + (k - h).norm());
                seg.shank = 0.5 * (seg.shank + (a - k).norm());
            }
            seg.thigh = ((fr.points[1] - lh).norm() + (fr.points[3] - rh).norm()) * 0.5;
            seg.shank =
                ((fr.points[2] - fr.points[1]).norm() + (fr.points[4] - fr.points[3]).norm()) * 0.5;
            (heading, legs, seg)
        };
        let (a, b) = (&clip.frames[f], &clip.frames[f + 1]);
        let (heading, legs, segments) = fit(a);
        let (_, legs_b, _) = fit(b);
        let dt = clip.frame_time;
        let stance = if a.points[2].y <= a.points[4].y { 0 } else { 1 };
        let (d, _) = heading_axes(heading);
        let root_velocity = (b.points[0] - a.points[0]) / dt;
        // The stance leg rotates about the foot: its rate follows from the
        // hip's forward speed (a thigh finite difference is noisier).
        let mut hip_rates = [
            (legs_b[0].hip - legs[0].hip) / dt,
            (legs_b[1].hip - legs[1].hip) / dt,
        ];
        hip_rates[stance] = -root_velocity.dot(&d) / (segments.thigh + segments.shank);
        Ok(InitialPose {
            heading,
            legs,
            hip_rates,
            knee_rates: [
                (legs_b[0].knee - legs[0].knee) / dt,
                (legs_b[1].knee - legs[1].knee) / dt,
            ],
            segments,
            stance,
            root: a.points[0],
            root_velocity,
        })
    }
}

/// Everything a [`WalkerTracker`] needs.
#[derive(Debug, Clone)]
pub struct WalkerConfig {
    /// The motion prior.
    pub dynamics: Dynamics,
    /// Number of particles `N`.
    pub particles: usize,
    /// Resampling threshold `N_thres` (resample when `N_eff < N_thres`).
    pub resample_threshold: usize,
    /// Seed of the run.
    pub seed: u64,
    /// Frame time `τ` (s).
    pub frame_time: f64,
    /// RK4 substeps per frame.
    pub substeps: usize,
    /// Likelihood σ per point in pixels (Table 4.1: hip 7, knees/feet 5).
    pub sigma_px: [f64; POINTS],
    /// Walker physics (Table 2.3).
    pub walker: WalkerParams,
    /// Walker forces (Table 2.4).
    pub walker_forces: ForceParams,
    /// Monopode physics (Table 2.1).
    pub monopode: MonopodeParams,
    /// Monopode forces (Table 2.2).
    pub monopode_forces: ForceParams,
    /// Segment length priors (Table 2.6).
    pub segment_priors: [SegmentPrior; 4],
    /// Joint evolution (Table 2.5).
    pub joints: JointTable,
    /// Root position noise of the baseline (m/s, like Table 2.5's `τ⁻¹σ`).
    pub baseline_root_noise: f64,
    /// The calibrated camera.
    pub camera: Camera,
    /// Estimate of the starting pose.
    pub initial: InitialPose,
    /// Spread of the initial angles (rad) and rates (rad/s).
    pub initial_spread: (f64, f64),
    /// Relative spread of the initial segment lengths.
    pub initial_length_spread: f64,
    /// Record the ancestry and per-particle points for the MAP trajectory
    /// (memory `T · N · 60` bytes).
    pub record_history: bool,
}

impl WalkerConfig {
    /// The thesis' settings (Ch. 4): `N = 2500`, `N_thres = 500` for the
    /// walker, `N = 5000`, `N_thres = 2000` for the monopode (the baseline
    /// gets the walker's), Tables 2.1–2.6 and 4.1, 30 frames/s.
    pub fn thesis(dynamics: Dynamics, camera: Camera, initial: InitialPose) -> Self {
        let (n, thres) = match dynamics {
            Dynamics::Monopode => (5000, 2000),
            _ => (2500, 500),
        };
        WalkerConfig {
            dynamics,
            particles: n,
            resample_threshold: thres,
            seed: 1,
            frame_time: 1.0 / 30.0,
            substeps: 2,
            sigma_px: [7.0, 5.0, 5.0, 5.0, 5.0],
            walker: WalkerParams::default(),
            walker_forces: ForceParams::WALKER,
            monopode: MonopodeParams::default(),
            monopode_forces: ForceParams::MONOPODE,
            segment_priors: SegmentPrior::table_2_6(),
            joints: JointTable::default(),
            baseline_root_noise: 0.6,
            camera,
            initial,
            initial_spread: (0.05, 0.3),
            initial_length_spread: 0.03,
            record_history: true,
        }
    }

    /// # Errors
    /// [`WalkerError::InvalidParameter`] / [`WalkerError::ThresholdAboveN`]
    /// for `N = 0`, `N_thres > N`, `σ ≤ 0`, a non-positive frame time, and
    /// the physics' own checks.
    pub fn validate(&self) -> Result<()> {
        if self.particles == 0 {
            return Err(WalkerError::InvalidParameter {
                name: "N (particles)",
                value: 0.0,
                reason: "must be at least 1",
            });
        }
        if self.resample_threshold > self.particles {
            return Err(WalkerError::ThresholdAboveN {
                n_thres: self.resample_threshold,
                n: self.particles,
            });
        }
        for s in self.sigma_px {
            require_positive("sigma_i (observation noise, px)", s)?;
        }
        require_positive("tau (frame time)", self.frame_time)?;
        if self.substeps == 0 {
            return Err(WalkerError::InvalidParameter {
                name: "substeps",
                value: 0.0,
                reason: "must be at least 1",
            });
        }
        Walker::new(self.walker)?;
        Monopode::new(self.monopode)?;
        self.walker_forces.validate()?;
        self.monopode_forces.validate()?;
        for j in [
            self.joints.torso,
            self.joints.hip,
            self.joints.knee,
            self.joints.ankle_x,
            self.joints.ankle_z,
        ] {
            require_positive("joint angle noise", j.noise)?;
        }
        require_positive("baseline root noise", self.baseline_root_noise)?;
        for s in [
            self.initial.segments.thigh,
            self.initial.segments.shank,
            self.initial.segments.hips,
            self.initial.segments.foot,
        ] {
            require_positive("initial segment length", s)?;
        }
        Ok(())
    }
}

/// One frame's 2D observations: a point per tracking point, `None` when
/// missing (occluded).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PointObservation {
    /// Pixel coordinates in the order of [`crate::mocap::POINT_NAMES`].
    pub points: [Option<[f64; 2]>; POINTS],
}

// ---- state layout ---------------------------------------------------------
const ROOT: usize = 0; // x, y, z
const HEADING: usize = 3; // θ, θ̇
const LEGS: usize = 5; // per leg 8: hip, ḣip, knee, k̇nee, ankle_x, rate, ankle_z, rate
const STANCE: usize = 21;
const CONTACT: usize = 22; // x, z
const LENGTHS: usize = 24; // thigh, shank, hips, foot
const BIG_LAMBDA: usize = 28;
const BIG_S: usize = 32;
const DYN: usize = 36; // walker φ1 φ2 φ̇1 φ̇2 | monopode x y vx vy | baseline root velocity
const FORCE: usize = 40;
const FORCE_MEAN: usize = 41;
const FORCE_VAR: usize = 42;
const STRIDE: usize = 43;
const NEW_STRIDE: usize = 44;
const SINCE_TRANSFER: usize = 45;
/// The five tracking points (world, 3 × 5), written by the proposal so that
/// the likelihood and the summaries need no second forward kinematics.
const TRACK: usize = 46;
/// Dimension of a particle's state.
pub(crate) const STATE_DIM: usize = TRACK + 3 * POINTS;

/// The walker's or monopode's state from the dynamics entries of `x`.
fn dynamics_state<S: From<[f64; 4]>>(x: &[f64]) -> S {
    S::from(std::array::from_fn(|k| x[DYN + k]))
}

/// Stores a walker or monopode state in the dynamics entries of `x`.
fn store_dynamics_state(x: &mut [f64], s: impl Into<[f64; 4]>) {
    x[DYN..DYN + 4].copy_from_slice(&s.into());
}

/// Writes the tracking points of a state whose root is set, from leg
/// points computed relative to the root.
fn store_tracking_points(x: &mut [f64], rel: &[LegPoints; 2]) {
    let root = Vector3::new(x[ROOT], x[ROOT + 1], x[ROOT + 2]);
    let pts = [
        root,
        rel[0].knee.coords + root,
        rel[0].ankle.coords + root,
        rel[1].knee.coords + root,
        rel[1].ankle.coords + root,
    ];
    for (k, p) in pts.iter().enumerate() {
        x[TRACK + 3 * k] = p.x;
        x[TRACK + 3 * k + 1] = p.y;
        x[TRACK + 3 * k + 2] = p.z;
    }
}

/// Length of the straight kinematic leg, hip to heel (the monopode's unit).
fn kinematic_leg(x: &[f64]) -> f64 {
    x[LENGTHS] + x[LENGTHS + 1] + crate::kinematics::ANKLE_HEIGHT
}

/// Leg points of a state relative to its root (one forward kinematics).
fn legs_relative(x: &[f64]) -> [LegPoints; 2] {
    let mut p = Pose::from_state(x);
    p.root = Point3::origin();
    p.leg_points()
}

/// The stored tracking points of a state.
#[inline]
fn tracking_points_of(x: &[f64]) -> [Point3<f64>; POINTS] {
    std::array::from_fn(|k| {
        Point3::new(x[TRACK + 3 * k], x[TRACK + 3 * k + 1], x[TRACK + 3 * k + 2])
    })
}

fn leg(i: usize) -> usize {
    LEGS + 8 * i
}

/// The kinematic pose stored in a particle state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pose {
    /// Root (hip centre).
    pub root: Point3<f64>,
    /// Heading.
    pub heading: f64,
    /// Left and right legs.
    pub legs: [LegAngles; 2],
    /// Segment lengths.
    pub segments: Segments,
    /// Stance leg.
    pub stance: usize,
}

impl Pose {
    /// Reads the pose from a state row.
    pub fn from_state(x: &[f64]) -> Pose {
        let l = |i: usize| LegAngles {
            hip: x[leg(i)],
            knee: x[leg(i) + 2],
            ankle_x: x[leg(i) + 4],
            ankle_z: x[leg(i) + 6],
        };
        Pose {
            root: Point3::new(x[ROOT], x[ROOT + 1], x[ROOT + 2]),
            heading: x[HEADING],
            legs: [l(0), l(1)],
            segments: Segments {
                thigh: x[LENGTHS],
                shank: x[LENGTHS + 1],
                hips: x[LENGTHS + 2],
                foot: x[LENGTHS + 3],
            },
            stance: x[STANCE] as usize,
        }
    }

    /// Both legs' points.
    pub fn leg_points(&self) -> [LegPoints; 2] {
        let (d, l) = heading_axes(self.heading);
        [
            leg_points(&self.root, &d, &l, 1.0, &self.segments, &self.legs[0]),
            leg_points(&self.root, &d, &l, -1.0, &self.segments, &self.legs[1]),
        ]
    }

    /// Parameters of `skeleton::presets::physprior_lower_body` showing this
    /// pose, for drawing with the shared skeleton code: root translation,
    /// heading (torso hinge about y), hip flexion (Euler x = −hip), knee,
    /// ankle pitch (`−ankle_x`). The preset's segment lengths are fixed
    /// (0.4, 0.5, 0.3, 0.2 m), so joint positions agree exactly only for
    /// those lengths; its `ankle_z` hinge rolls the foot about its long axis
    /// rather than yawing it, so it is left at 0.
    ///
    /// # Errors
    /// [`WalkerError::Skeleton`] if `skeleton` lacks a joint of the preset.
    pub fn to_preset(&self, skeleton: &skeleton::Skeleton) -> Result<Vec<f64>> {
        let mut q = skeleton.rest_pose();
        let set = |q: &mut Vec<f64>, name: &str, k: usize, v: f64| -> Result<()> {
            let j = skeleton.find(name)?;
            let r = skeleton.param_range(j);
            q[r.start + k] = v;
            Ok(())
        };
        // The root joint sits at (0, thigh + shank + 0.05, 0) in the preset.
        let root_offset = skeleton.joints()[skeleton.find("root_x")?]
            .placement()
            .translation
            .vector;
        set(&mut q, "root_x", 0, self.root.x - root_offset.x)?;
        set(&mut q, "root_y", 0, self.root.y - root_offset.y)?;
        set(&mut q, "root_z", 0, self.root.z - root_offset.z)?;
        set(&mut q, "torso", 0, self.heading)?;
        for (i, side) in ["l", "r"].iter().enumerate() {
            let a = &self.legs[i];
            set(&mut q, &format!("{side}_hip"), 0, -a.hip)?;
            set(&mut q, &format!("{side}_knee"), 0, a.knee)?;
            set(&mut q, &format!("{side}_ankle_x"), 0, -a.ankle_x)?;
        }
        Ok(q)
    }

    /// The five tracking points (hip, l knee, l foot, r knee, r foot).
    pub fn tracking_points(&self) -> [Point3<f64>; POINTS] {
        let [a, b] = self.leg_points();
        [self.root, a.knee, a.ankle, b.knee, b.ankle]
    }
}

/// The prior of Ch. 2–3 as an `smc` proposal.
struct Prior {
    cfg: WalkerConfig,
    walker: Walker,
    mono: Monopode,
}

impl Prior {
    fn forces(&self) -> &ForceParams {
        match self.cfg.dynamics {
            Dynamics::Monopode => &self.cfg.monopode_forces,
            _ => &self.cfg.walker_forces,
        }
    }

    /// Moves the root so that the stance heel is at the contact point on
    /// the ground (§2.2).
    fn pin(&self, x: &mut [f64]) {
        let mut pose = Pose::from_state(x);
        pose.root = Point3::origin();
        let pts = pose.leg_points();
        let heel = pts[pose.stance].heel;
        x[ROOT] = x[CONTACT] - heel.x;
        x[ROOT + 1] = -heel.y;
        x[ROOT + 2] = x[CONTACT + 1] - heel.z;
    }
}

impl Propagate<PointObservation> for Prior {
    fn initial(&self, _: &PointObservation, x: &mut [f64], rng: &mut ParticleRng) -> f64 {
        let c = &self.cfg;
        let ip = &c.initial;
        let mut n = |s: f64| s * rng.sample::<f64, _>(StandardNormal);
        x.fill(0.0);
        x[HEADING] = ip.heading + n(0.02);
        for i in 0..2 {
            let b = leg(i);
            let a = &ip.legs[i];
            x[b] = a.hip + n(c.initial_spread.0);
            x[b + 1] = ip.hip_rates[i] + n(c.initial_spread.1);
            x[b + 2] = (a.knee + n(c.initial_spread.0)).min(0.0);
            x[b + 3] = ip.knee_rates[i] + n(c.initial_spread.1);
            x[b + 4] = a.ankle_x + n(c.initial_spread.0);
            x[b + 6] = a.ankle_z;
        }
        let s = &ip.segments;
        let ls = c.initial_length_spread;
        for (k, len) in [s.thigh, s.shank, s.hips, s.foot].into_iter().enumerate() {
            x[LENGTHS + k] = (len * (1.0 + n(ls))).max(0.01);
            x[BIG_S + k] = c.segment_priors[k].pop_shape;
            x[BIG_LAMBDA + k] = c.segment_priors[k].pop_rate;
        }
        x[STANCE] = ip.stance as f64;
        let root = Point3::new(ip.root.x + n(0.01), ip.root.y, ip.root.z + n(0.01));
        // Contact under the stance heel with the root at the estimate.
        let mut pose = Pose::from_state(x);
        pose.root = root;
        let heel = pose.leg_points()[ip.stance].heel;
        x[CONTACT] = heel.x;
        x[CONTACT + 1] = heel.z;
        let fp = *self.forces();
        let stats = fp.initial_stats();
        x[FORCE_MEAN] = stats.mean;
        x[FORCE_VAR] = stats.var;
        x[FORCE] = stats.sample(&fp, rng);
        let (st, sw) = (ip.stance, 1 - ip.stance);
        match c.dynamics {
            Dynamics::Anthropomorphic => {
                self.pin(x);
                x[DYN] = x[leg(st)];
                x[DYN + 1] = x[leg(sw)];
                x[DYN + 2] = x[leg(st) + 1];
                x[DYN + 3] = x[leg(sw) + 1];
            }
            Dynamics::Monopode => {
                self.pin(x);
                let (d, _) = heading_axes(x[HEADING]);
                let rel = Point3::new(x[ROOT], x[ROOT + 1], x[ROOT + 2])
                    - Point3::new(x[CONTACT], 0.0, x[CONTACT + 1]);
                // Monopode coordinates are in units of the kinematic leg
                // (hip to heel, straight), so that its maximum length
                // l_max = 1 (Table 2.1) is the straight leg.
                let unit = 1.0 / kinematic_leg(x);
                x[DYN] = rel.dot(&d) * unit;
                x[DYN + 1] = rel.y * unit;
                x[DYN + 2] =
                    (ip.root_velocity.dot(&d) + 0.1 * rng.sample::<f64, _>(StandardNormal)) * unit;
                x[DYN + 3] = ip.root_velocity.y * unit;
            }
            Dynamics::ConstantVelocity => {
                x[ROOT] = root.x;
                x[ROOT + 1] = root.y;
                x[ROOT + 2] = root.z;
                x[DYN] = ip.root_velocity.x;
                x[DYN + 1] = ip.root_velocity.y;
                x[DYN + 2] = ip.root_velocity.z;
            }
        }
        store_tracking_points(x, &legs_relative(x));
        0.0
    }

    fn propagate(
        &self,
        _t: usize,
        _obs: &PointObservation,
        prev: &[f64],
        x: &mut [f64],
        rng: &mut ParticleRng,
    ) -> f64 {
        let c = &self.cfg;
        let tau = c.frame_time;
        x.copy_from_slice(prev);
        // Alg. 3: θ̂_t from ξ_t.
        for k in 0..4 {
            let p = &c.segment_priors[k];
            let (s, l) = p.update(prev[BIG_S + k], prev[BIG_LAMBDA + k], prev[LENGTHS + k]);
            x[BIG_S + k] = s;
            x[BIG_LAMBDA + k] = l;
            x[LENGTHS + k] = p.sample(s, l, rng);
        }
        let fp = *self.forces();
        let stats = ForceStats {
            mean: prev[FORCE_MEAN],
            var: prev[FORCE_VAR],
        }
        .update(&fp, prev[FORCE], prev[NEW_STRIDE] > 0.5);
        x[FORCE_MEAN] = stats.mean;
        x[FORCE_VAR] = stats.var;
        x[FORCE] = stats.sample(&fp, rng);
        x[NEW_STRIDE] = 0.0;
        x[SINCE_TRANSFER] += tau;
        let iota = fp.sample_impulse(rng);
        let j = &c.joints;
        // Heading.
        let (h, hd) = j
            .torso
            .evolve(prev[HEADING], prev[HEADING + 1], 0.0, tau, rng);
        x[HEADING] = h;
        x[HEADING + 1] = hd;
        let old_stance = prev[STANCE] as usize;
        let mut stance = old_stance;
        // Alg. 2 step 2: dynamics.
        let mut struck = false;
        match c.dynamics {
            Dynamics::Anthropomorphic => {
                let mut s: WalkerState = dynamics_state(prev);
                let adv = self.walker.advance(&mut s, x[FORCE], iota, tau, c.substeps);
                if self.walker.fallen(&s) {
                    // A fallen walker stays down (its particle dies by the
                    // likelihood); keep the state finite.
                    s.dphi1 = 0.0;
                    s.dphi2 = 0.0;
                    s.phi1 = s.phi1.clamp(-1.6, 1.6);
                    s.phi2 = s.phi2.clamp(-2.1, 2.1);
                }
                if adv.collisions % 2 == 1 {
                    stance = 1 - old_stance;
                }
                struck = adv.collisions > 0;
                store_dynamics_state(x, s);
                let sw = 1 - stance;
                x[leg(stance)] = s.phi1;
                x[leg(stance) + 1] = s.dphi1;
                x[leg(sw)] = s.phi2;
                x[leg(sw) + 1] = s.dphi2;
            }
            Dynamics::Monopode => {
                let mut s: MonopodeState = dynamics_state(prev);
                self.mono.advance(&mut s, x[FORCE], tau, c.substeps);
                if !(s.x.is_finite() && s.y.is_finite() && s.vx.is_finite() && s.vy.is_finite()) {
                    s = MonopodeState {
                        x: 0.0,
                        y: 0.5,
                        vx: 0.0,
                        vy: 0.0,
                    };
                }
                store_dynamics_state(x, s);
                let a = s.leg_angle();
                x[leg(stance)] = a;
                x[leg(stance) + 1] = (a - prev[leg(stance)]) / tau;
                let sw = 1 - stance;
                let (hp, hv) = j
                    .hip
                    .evolve(prev[leg(sw)], prev[leg(sw) + 1], 0.0, tau, rng);
                x[leg(sw)] = hp;
                x[leg(sw) + 1] = hv;
            }
            Dynamics::ConstantVelocity => {
                for i in 0..2 {
                    let (hp, hv) = j.hip.evolve(prev[leg(i)], prev[leg(i) + 1], 0.0, tau, rng);
                    x[leg(i)] = hp;
                    x[leg(i) + 1] = hv;
                }
                let sigma = c.baseline_root_noise * tau;
                for k in 0..3 {
                    let z: f64 = rng.sample(StandardNormal);
                    let p = prev[ROOT + k] + tau * prev[DYN + k] + sigma * z;
                    x[DYN + k] = (p - prev[ROOT + k]) / tau;
                    x[ROOT + k] = p;
                }
            }
        }
        // Alg. 2 step 3: the other joints by Eq. 2.6 with the special rests.
        let physics = c.dynamics != Dynamics::ConstantVelocity;
        let hip_st_prev = prev[leg(stance)];
        let knee_st_prev = prev[leg(stance) + 2];
        for i in 0..2 {
            let b = leg(i);
            let is_stance = physics && i == stance;
            let knee_rest = if !physics || is_stance {
                0.0
            } else {
                (-hip_st_prev).min(0.0)
            };
            let (k, kv) = j.knee.evolve(prev[b + 2], prev[b + 3], knee_rest, tau, rng);
            x[b + 2] = k;
            x[b + 3] = kv;
            let ankle_rest = if is_stance {
                -(knee_st_prev + hip_st_prev)
            } else {
                0.0
            };
            let (a, av) = j
                .ankle_x
                .evolve(prev[b + 4], prev[b + 5], ankle_rest, tau, rng);
            x[b + 4] = a;
            x[b + 5] = av;
            if !(is_stance && i == old_stance) {
                let (z, zv) = j.ankle_z.evolve(prev[b + 6], prev[b + 7], 0.0, tau, rng);
                x[b + 6] = z;
                x[b + 7] = zv;
            } else {
                x[b + 7] = 0.0;
            }
        }
        if !physics {
            store_tracking_points(x, &legs_relative(x));
            return 0.0;
        }
        // Stance pinning and support transfer, with one forward kinematics
        // of both legs relative to the root (the angles no longer change).
        let rel = legs_relative(x);
        let h = rel[old_stance].heel;
        let root_old = Point3::new(x[CONTACT] - h.x, -h.y, x[CONTACT + 1] - h.z);
        let heel_world = |i: usize| root_old + rel[i].heel.coords;
        let mut stance_now = old_stance;
        if c.dynamics == Dynamics::Monopode {
            // The monopode has no swing leg: support moves when the
            // kinematic swing heel reaches the ground ahead of the stance
            // heel after the stance leg has passed the vertical.
            let sw = 1 - old_stance;
            let heel_sw = heel_world(sw);
            let heel_st = heel_world(old_stance);
            let (d, _) = heading_axes(x[HEADING]);
            if heel_sw.y <= 0.0
                && (heel_sw - heel_st).dot(&d) > 0.1
                && x[leg(old_stance)] < 0.0
                && x[SINCE_TRANSFER] > 0.2
            {
                let shift = (heel_sw - Point3::new(x[CONTACT], 0.0, x[CONTACT + 1])).dot(&d)
                    / kinematic_leg(x);
                let mut s: MonopodeState = dynamics_state(x);
                self.mono.transfer(&mut s, (shift, 0.0), iota);
                store_dynamics_state(x, s);
                stance_now = sw;
                struck = true;
            }
        } else if stance != old_stance {
            // Heel strike in the walker.
            stance_now = stance;
        }
        if stance_now != old_stance {
            // The contact moves to the ground point under the new stance
            // heel (§2.2).
            let heel = heel_world(stance_now);
            x[CONTACT] = heel.x;
            x[CONTACT + 1] = heel.z;
        }
        x[STANCE] = stance_now as f64;
        if struck {
            x[NEW_STRIDE] = 1.0;
            x[STRIDE] += 1.0;
            x[SINCE_TRANSFER] = 0.0;
        }
        let h = rel[stance_now].heel;
        x[ROOT] = x[CONTACT] - h.x;
        x[ROOT + 1] = -h.y;
        x[ROOT + 2] = x[CONTACT + 1] - h.z;
        store_tracking_points(x, &rel);
        0.0
    }

    fn particles_per_task(&self) -> usize {
        64
    }
}

/// The 2D point likelihood of PHYSPRIOR Ch. 4.
struct PointLikelihood {
    camera: Camera,
    inv_var: [f64; POINTS],
    log_norm: [f64; POINTS],
}

impl PointLikelihood {
    fn new(camera: &Camera, sigma: &[f64; POINTS]) -> Self {
        PointLikelihood {
            camera: camera.clone(),
            inv_var: sigma.map(|s| 1.0 / (s * s)),
            log_norm: sigma.map(|s| -(2.0 * std::f64::consts::PI * s * s).ln()),
        }
    }

    fn log_p(&self, obs: &PointObservation, x: &[f64]) -> f64 {
        let pts = tracking_points_of(x);
        let mut lp = 0.0;
        for (i, o) in obs.points.iter().enumerate() {
            let Some(o) = o else { continue };
            let Some((u, v, _)) = self.camera.project(&pts[i]) else {
                return f64::NEG_INFINITY;
            };
            let e2 = (u - o[0]).powi(2) + (v - o[1]).powi(2);
            lp += self.log_norm[i] - 0.5 * e2 * self.inv_var[i];
        }
        if lp.is_nan() { f64::NEG_INFINITY } else { lp }
    }
}

impl Likelihood<PointObservation> for PointLikelihood {
    fn log_likelihood(
        &self,
        obs: &PointObservation,
        states: &[f64],
        dim: usize,
        out: &mut [f64],
    ) -> std::result::Result<(), smc::BoxError> {
        use rayon::prelude::*;
        out.par_iter_mut()
            .zip(states.par_chunks_exact(dim))
            .with_min_len(256)
            .for_each(|(o, x)| *o = self.log_p(obs, x));
        Ok(())
    }
}

/// A 2D Gaussian summary of a projected point (§4: `μ^i`, `Σ^i`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Ellipse {
    /// Mean `μ^i` (pixels).
    pub mean: [f64; 2],
    /// Covariance `Σ^i` (pixels², row-major).
    pub cov: [[f64; 2]; 2],
}

impl Ellipse {
    /// Area of the one-σ ellipse, `π √det Σ` (pixels²).
    pub fn area(&self) -> f64 {
        let det = self.cov[0][0] * self.cov[1][1] - self.cov[0][1] * self.cov[1][0];
        std::f64::consts::PI * det.max(0.0).sqrt()
    }

    /// Semi-axes (one σ) and the angle of the major axis (radians).
    pub fn axes(&self) -> (f64, f64, f64) {
        let (a, b, c) = (self.cov[0][0], self.cov[0][1], self.cov[1][1]);
        let tr = 0.5 * (a + c);
        let disc = (0.25 * (a - c).powi(2) + b * b).sqrt();
        let (l1, l2) = (tr + disc, (tr - disc).max(0.0));
        (l1.sqrt(), l2.sqrt(), 0.5 * (2.0 * b).atan2(a - c))
    }
}

/// What one [`WalkerTracker::step`] produced.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameReport {
    /// Frame index.
    pub frame: usize,
    /// Whether the step resampled.
    pub resampled: bool,
    /// `N_eff` after weighing.
    pub ess: f64,
    /// Per-point covariance ellipses of the projections (μ^i, Σ^i).
    pub ellipses: [Ellipse; POINTS],
    /// Weighted mean of the 3D tracking points.
    pub mean_points: [Point3<f64>; POINTS],
    /// The mean pose (weighted mean of the kinematic state, §4).
    pub mean_pose: Pose,
    /// Posterior probability that the left leg is the stance leg.
    pub left_stance_probability: f64,
}

/// The PHYSPRIOR tracker: SIR over the physics prior with the 2D point
/// likelihood. Bevy-free; the app wraps it in a scene.
pub struct WalkerTracker {
    prior: Prior,
    likelihood: PointLikelihood,
    filter: Filter,
    particles: ParticleSet,
    points: Vec<[f32; 3 * POINTS]>,
    uv: Vec<[f64; 2 * POINTS]>,
    history: Vec<Vec<[f32; 3 * POINTS]>>,
    frame: usize,
}

impl WalkerTracker {
    /// A tracker at frame 0.
    ///
    /// # Errors
    /// [`WalkerConfig::validate`]'s.
    pub fn new(config: WalkerConfig) -> Result<Self> {
        config.validate()?;
        let walker = Walker::new(config.walker)?;
        let mono = Monopode::new(config.monopode)?;
        let fraction = config.resample_threshold as f64 / config.particles as f64;
        let filter = Filter::new(FilterConfig {
            seed: config.seed,
            scheme: Resampling::Residual,
            policy: if config.resample_threshold == 0 {
                ResamplePolicy::Never
            } else {
                ResamplePolicy::EssBelow(fraction)
            },
            history: if config.record_history {
                History::Ancestors
            } else {
                History::None
            },
        })?;
        let particles = ParticleSet::new(config.particles, STATE_DIM)?;
        let likelihood = PointLikelihood::new(&config.camera, &config.sigma_px);
        Ok(WalkerTracker {
            points: vec![[0.0; 3 * POINTS]; config.particles],
            uv: vec![[0.0; 2 * POINTS]; config.particles],
            prior: Prior {
                cfg: config,
                walker,
                mono,
            },
            likelihood,
            filter,
            particles,
            history: Vec::new(),
            frame: 0,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &WalkerConfig {
        &self.prior.cfg
    }

    /// Back to frame 0 (the next step redraws the particles).
    pub fn reset(&mut self) {
        self.filter.reset();
        self.history.clear();
        self.frame = 0;
    }

    /// Frames processed.
    pub fn frame(&self) -> usize {
        self.frame
    }

    /// One frame of PHYSPRIOR Alg. 1.
    ///
    /// # Errors
    /// [`WalkerError::InvalidObservation`] for a non-finite coordinate;
    /// [`WalkerError::Smc`] if every particle is ruled out and the redraw
    /// from the initial distribution fails too.
    pub fn step(&mut self, obs: &PointObservation) -> Result<FrameReport> {
        for (i, p) in obs.points.iter().enumerate() {
            if let Some(p) = p
                && !(p[0].is_finite() && p[1].is_finite())
            {
                return Err(WalkerError::InvalidObservation(format!(
                    "point {} ({}) is not finite: {p:?}",
                    i,
                    crate::mocap::POINT_NAMES[i]
                )));
            }
        }
        let report = match self
            .filter
            .step(&mut self.particles, &self.prior, &self.likelihood, obs)
        {
            Ok(r) => r,
            Err(smc::SmcError::AllWeightsZero { .. }) => self.filter.redraw_from_prior(
                &mut self.particles,
                &self.prior,
                &self.likelihood,
                obs,
            )?,
            Err(e) => return Err(e.into()),
        };
        self.frame += 1;
        Ok(self.summarise(report.resampled, report.ess))
    }

    fn summarise(&mut self, resampled: bool, ess: f64) -> FrameReport {
        use rayon::prelude::*;
        let cam = &self.likelihood.camera;
        let dim = STATE_DIM;
        // One parallel pass: 3D points (for the cloud and the history) and
        // their projections (for μ^i, Σ^i).
        self.points
            .par_iter_mut()
            .zip(self.uv.par_iter_mut())
            .zip(self.particles.states().par_chunks_exact(dim))
            .with_min_len(256)
            .for_each(|((out, uv), x)| {
                let pts = tracking_points_of(x);
                for (k, p) in pts.iter().enumerate() {
                    out[3 * k] = p.x as f32;
                    out[3 * k + 1] = p.y as f32;
                    out[3 * k + 2] = p.z as f32;
                    let (u, v) = cam.project(p).map_or((f64::NAN, f64::NAN), |q| (q.0, q.1));
                    uv[2 * k] = u;
                    uv[2 * k + 1] = v;
                }
            });
        if self.prior.cfg.record_history {
            if self.filter.ancestry().map(|a| a.steps()) == Some(1) {
                // The ancestry restarted (first step or a redraw).
                self.history.clear();
            }
            self.history.push(self.points.clone());
        }
        let w = self.particles.weights().normalised();
        let mut ellipses = [Ellipse::default(); POINTS];
        let mut mean3 = [Point3::origin(); POINTS];
        // μ^i and the 3D means (PHYSPRIOR Ch. 4).
        let mut su = [0.0; POINTS];
        let mut sv = [0.0; POINTS];
        let mut m3 = [Vector3::zeros(); POINTS];
        for ((uv, x), &wi) in self.uv.iter().zip(self.particles.rows()).zip(w) {
            if wi == 0.0 {
                continue;
            }
            for k in 0..POINTS {
                if uv[2 * k].is_finite() {
                    su[k] += wi * uv[2 * k];
                    sv[k] += wi * uv[2 * k + 1];
                }
                m3[k] +=
                    Vector3::new(x[TRACK + 3 * k], x[TRACK + 3 * k + 1], x[TRACK + 3 * k + 2]) * wi;
            }
        }
        // Σ^i.
        let mut cov = [[0.0; 3]; POINTS];
        for (uv, &wi) in self.uv.iter().zip(w) {
            if wi == 0.0 {
                continue;
            }
            for k in 0..POINTS {
                let (du, dv) = (uv[2 * k] - su[k], uv[2 * k + 1] - sv[k]);
                if du.is_finite() {
                    cov[k][0] += wi * du * du;
                    cov[k][1] += wi * du * dv;
                    cov[k][2] += wi * dv * dv;
                }
            }
        }
        for k in 0..POINTS {
            ellipses[k] = Ellipse {
                mean: [su[k], sv[k]],
                cov: [[cov[k][0], cov[k][1]], [cov[k][1], cov[k][2]]],
            };
            mean3[k] = Point3::from(m3[k]);
        }
        let mean = self.particles.mean();
        let mut mean_pose = Pose::from_state(&mean);
        let left = self
            .particles
            .rows()
            .zip(w)
            .filter(|(x, _)| x[STANCE] < 0.5)
            .map(|(_, &wi)| wi)
            .sum::<f64>();
        mean_pose.stance = if left >= 0.5 { 0 } else { 1 };
        FrameReport {
            frame: self.frame - 1,
            resampled,
            ess,
            ellipses,
            mean_points: mean3,
            mean_pose,
            left_stance_probability: left,
        }
    }

    /// The particle set (states `N × STATE_DIM`, log-weights).
    pub fn particles(&self) -> &ParticleSet {
        &self.particles
    }

    /// Normalised weights of the current particles.
    pub fn weights(&self) -> &[f64] {
        self.particles.weights().normalised()
    }

    /// The pose of particle `i`.
    pub fn particle_pose(&self, i: usize) -> Pose {
        Pose::from_state(self.particles.state(i))
    }

    /// The 3D tracking points of every particle after the last step
    /// (`[x, y, z] × 5` per particle), for drawing the cloud.
    pub fn particle_points(&self) -> &[[f32; 3 * POINTS]] {
        &self.points
    }

    /// The crude MAP trajectory of Ch. 4: the 3D tracking points along the
    /// ancestry of the heaviest particle, one entry per recorded frame.
    ///
    /// # Errors
    /// [`WalkerError::Smc`] if history was not recorded or nothing ran yet.
    pub fn map_trajectory(&self) -> Result<Vec<[Point3<f64>; POINTS]>> {
        let anc = self.filter.ancestry().ok_or(smc::SmcError::NoAncestry(
            "history was not recorded (WalkerConfig::record_history)",
        ))?;
        let last = smc::estimate::argmax(self.particles.log_weights());
        let lineage = anc.lineage(last)?;
        Ok(lineage
            .iter()
            .zip(&self.history)
            .map(|(&i, pts)| {
                let p = &pts[i];
                std::array::from_fn(|k| {
                    Point3::new(
                        f64::from(p[3 * k]),
                        f64::from(p[3 * k + 1]),
                        f64::from(p[3 * k + 2]),
                    )
                })
            })
            .collect())
    }
}

/// Projects ground-truth points into an observation with Gaussian pixel
/// noise `noise_px`, dropping the points whose `visible` flag is false.
pub fn observe<R: rand::Rng + ?Sized>(
    camera: &Camera,
    points: &[Point3<f64>; POINTS],
    visible: &[bool; POINTS],
    noise_px: f64,
    rng: &mut R,
) -> PointObservation {
    let mut obs = PointObservation::default();
    for k in 0..POINTS {
        if !visible[k] {
            continue;
        }
        if let Some((u, v, _)) = camera.project(&points[k]) {
            let du: f64 = rng.sample(StandardNormal);
            let dv: f64 = rng.sample(StandardNormal);
            obs.points[k] = Some([u + noise_px * du, v + noise_px * dv]);
        }
    }
    obs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn camera() -> Camera {
        Camera::looking_at(
            Point3::new(5.0, 1.0, 0.0),
            Point3::new(0.0, 0.9, 0.0),
            Vector3::y(),
            0.7,
            640,
            480,
        )
        .unwrap()
    }

    fn initial() -> InitialPose {
        InitialPose {
            heading: 0.0,
            legs: [
                LegAngles {
                    hip: 0.3,
                    knee: -0.1,
                    ankle_x: -0.2,
                    ankle_z: 0.0,
                },
                LegAngles {
                    hip: -0.3,
                    knee: -0.3,
                    ankle_x: 0.3,
                    ankle_z: 0.0,
                },
            ],
            hip_rates: [-1.9, 1.5],
            knee_rates: [0.0, 0.0],
            segments: Segments::default(),
            stance: 0,
            root: Point3::new(0.0, 0.9, 0.0),
            root_velocity: Vector3::new(0.0, 0.0, 1.2),
        }
    }

    #[test]
    fn bad_tracker_parameters() {
        let mut c = WalkerConfig::thesis(Dynamics::Anthropomorphic, camera(), initial());
        c.resample_threshold = c.particles + 1;
        let e = WalkerTracker::new(c.clone()).err().unwrap();
        assert!(matches!(e, WalkerError::ThresholdAboveN { .. }), "{e}");
        c.resample_threshold = 10;
        c.sigma_px[2] = 0.0;
        let e = WalkerTracker::new(c.clone()).err().unwrap();
        assert!(e.to_string().contains("sigma_i"), "{e}");
        c.sigma_px[2] = 5.0;
        c.walker.leg_mass = -1.0;
        assert!(
            WalkerTracker::new(c.clone())
                .err()
                .unwrap()
                .to_string()
                .contains("m_l")
        );
        c.walker.leg_mass = 0.161;
        c.walker_forces.sample_sigma = 0.0;
        assert!(WalkerTracker::new(c).is_err());
    }

    /// Synthetic walk from the prior itself: a particle run forward is the
    /// truth; the tracker follows it within a few pixels, the stance heel
    /// stays on the ground, and the MAP trajectory covers every frame.
    #[test]
    fn tracks_a_walk_drawn_from_the_prior() {
        for dynamics in [Dynamics::Anthropomorphic, Dynamics::Monopode] {
            let mut c = WalkerConfig::thesis(dynamics, camera(), initial());
            c.particles = 300;
            c.resample_threshold = 100;
            let prior = Prior {
                walker: Walker::new(c.walker).unwrap(),
                mono: Monopode::new(c.monopode).unwrap(),
                cfg: c.clone(),
            };
            let mut rng = smc::stream_rng(9, 0, smc::StreamDomain::User(1), 0);
            let mut truth = vec![0.0; STATE_DIM];
            prior.initial(&PointObservation::default(), &mut truth, &mut rng);
            let mut tracker = WalkerTracker::new(c.clone()).unwrap();
            let mut worst: f64 = 0.0;
            for t in 0..25 {
                if t > 0 {
                    let prev = truth.clone();
                    prior.propagate(t, &PointObservation::default(), &prev, &mut truth, &mut rng);
                }
                let pose = Pose::from_state(&truth);
                let stance_heel = pose.leg_points()[pose.stance].heel;
                assert!(
                    stance_heel.y.abs() < 1e-9,
                    "{dynamics:?} t {t}: {stance_heel:?}"
                );
                let obs = observe(
                    &c.camera,
                    &pose.tracking_points(),
                    &[true; POINTS],
                    1.0,
                    &mut rng,
                );
                let r = tracker.step(&obs).unwrap();
                for k in 0..POINTS {
                    let (u, v, _) = c.camera.project(&pose.tracking_points()[k]).unwrap();
                    let e = (r.ellipses[k].mean[0] - u).hypot(r.ellipses[k].mean[1] - v);
                    worst = worst.max(e);
                }
                let w: f64 = tracker.weights().iter().sum();
                assert!((w - 1.0).abs() < 1e-9);
            }
            assert!(worst < 15.0, "{dynamics:?}: worst mean error {worst} px");
            let map = tracker.map_trajectory().unwrap();
            assert_eq!(map.len(), 25);
            tracker.reset();
            assert_eq!(tracker.frame(), 0);
        }
    }

    #[test]
    fn ellipse_area_and_axes() {
        let e = Ellipse {
            mean: [0.0, 0.0],
            cov: [[4.0, 0.0], [0.0, 1.0]],
        };
        assert!((e.area() - 2.0 * std::f64::consts::PI).abs() < 1e-12);
        let (a, b, ang) = e.axes();
        assert!((a - 2.0).abs() < 1e-12 && (b - 1.0).abs() < 1e-12 && ang.abs() < 1e-12);
    }

    #[test]
    fn non_finite_observation_is_an_error() {
        let mut t = WalkerTracker::new(WalkerConfig {
            particles: 10,
            resample_threshold: 5,
            ..WalkerConfig::thesis(Dynamics::Anthropomorphic, camera(), initial())
        })
        .unwrap();
        let mut obs = PointObservation::default();
        obs.points[1] = Some([f64::NAN, 0.0]);
        let e = t.step(&obs).unwrap_err();
        assert!(e.to_string().contains("l_knee"), "{e}");
    }

    /// The preset skeleton, posed by [`Pose::to_preset`], puts hips, knees,
    /// ankles and heels where this crate's kinematics does.
    #[test]
    fn preset_pose_matches_the_kinematics() {
        let sk = skeleton::presets::physprior_lower_body();
        for (heading, hips, knees, ankles) in [
            (0.0, [0.3, -0.2], [-0.1, -0.6], [0.2, -0.3]),
            (0.7, [-0.4, 0.5], [-1.2, 0.0], [-0.5, 0.4]),
            (-2.0, [0.1, 0.05], [-0.3, -0.2], [0.0, 0.1]),
        ] {
            let pose = Pose {
                root: Point3::new(0.3, 0.91, -1.2),
                heading,
                legs: std::array::from_fn(|i| LegAngles {
                    hip: hips[i],
                    knee: knees[i],
                    ankle_x: ankles[i],
                    ankle_z: 0.0,
                }),
                segments: Segments::default(),
                stance: 0,
            };
            let q = pose.to_preset(&sk).unwrap();
            let world = sk.forward_kinematics(&q).unwrap();
            let at = |name: &str| Point3::from(world[sk.find(name).unwrap()].translation.vector);
            let legs = pose.leg_points();
            for (i, side) in ["l", "r"].iter().enumerate() {
                for (name, p) in [
                    ("hip", legs[i].hip),
                    ("knee", legs[i].knee),
                    ("ankle_x", legs[i].ankle),
                    ("heel", legs[i].heel),
                    ("toe_tip", legs[i].toe),
                ] {
                    let e = (at(&format!("{side}_{name}")) - p).norm();
                    assert!(e < 1e-9, "{side}_{name}: {e} (heading {heading})");
                }
            }
        }
    }
}

//! The evolution prior of SMC-IK (Eq. 12): a random walk on every joint,
//! conditioned on the joint limits.
//!
//! ```text
//! p(x_k | x_{k−1}) = Φ(x_k; x_{k−1}, Σ_x)   restricted to poses within the limits
//! ```
//!
//! Each joint moves independently:
//!
//! - rotating joints with 2 or 3 DOF by QuTem noise in the joint's local
//!   frame, `q_k = q_{k−1} · exp(ε)`, `ε = L z`, `z ~ N(0, I)`, `Σ = L Lᵀ`
//!   (SMC-IK §5.1, App. A; [`rotation::QuTem`] documents the rule), then
//!   written back into the joint's own parameters, continuous with the
//!   previous ones (a 2-DOF swing joint drops the twist, EXPMAP §5);
//! - hinges and prismatic joints by `θ_k = θ_{k−1} + σ z`;
//! - a free root's translation by additive Gaussian noise (SMC-IK §6.3).
//!
//! Two ways to honour the limits ([`LimitSampler`]):
//!
//! - **`AcceptReject`** — the paper's (§5.2): a joint whose draw leaves its
//!   limits is drawn again, at most `max_retries` times; if every retry
//!   fails the joint keeps its previous value (inside its limits), so the
//!   procedure always ends. The paper notes the worst case of endless
//!   rejection; the bound and fallback make it finite.
//! - **`Truncated`** — the paper's future-work alternative, which never
//!   rejects: noise is drawn in the joint's own coordinates from Gaussians
//!   truncated to the limits by inverse-CDF sampling
//!   ([`smc::truncated_normal`]: exact, one uniform per coordinate).
//!   Hinge/prismatic: `θ ~ TN(θ_{k−1}, σ²; [min, max])`. Euler joints:
//!   each angle in its interval. Swing–twist joints: twist in its
//!   interval, then the swing sequentially, `s₁ ~ TN(s₁, σ₁²; [−a, a])` and
//!   `s₂ ~ TN(s₂, σ₂²; [−b√(1−(s₁/a)²), b√(1−(s₁/a)²)])`, which stays inside
//!   the ellipse `(s₁/a)² + (s₂/b)² ≤ 1`. Exp-map joints with a cone limit
//!   draw QuTem noise and reflect the angle at the cone (`|v| ↦ 2m − |v|`).
//!   Joints without limits draw QuTem noise as above. This defines a
//!   different (but equally legitimate) evolution model: the filter stays a
//!   bootstrap filter for it, with no importance correction.
//!
//! A global `scale` multiplies every σ (the solver's adaptive noise).

use std::sync::atomic::{AtomicU64, Ordering};

use nalgebra::{Matrix3, Vector2, Vector3};
use rand::RngExt;
use rand_distr::StandardNormal;
use skeleton::{BallRotation, JointKind, Skeleton};
use smc::{ParticleRng, truncated_normal};

use crate::error::{IkError, Result};

/// How the random walk honours joint limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitSampler {
    /// SMC-IK §5.2: redraw a joint outside its limits, at most `max_retries`
    /// times, then keep its previous value.
    AcceptReject { max_retries: u32 },
    /// Truncated Gaussians in joint coordinates: never rejects.
    Truncated,
}

impl Default for LimitSampler {
    fn default() -> Self {
        Self::AcceptReject { max_retries: 20 }
    }
}

/// Random-walk standard deviations of one joint.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JointNoise {
    /// Rotation σ (rad) about the joint's local x, y, z axes for exp-map and
    /// Euler joints; `(swing₁, swing₂, twist)` for swing–twist and swing
    /// joints; `[σ, _, _]` for hinges and prismatic joints (m).
    pub rotation: [f64; 3],
    /// Translation σ (m) of a free root, per axis.
    pub translation: f64,
}

impl JointNoise {
    pub fn isotropic(rotation: f64, translation: f64) -> Self {
        Self {
            rotation: [rotation; 3],
            translation,
        }
    }
}

/// Rejection statistics of the accept/reject sampler.
#[derive(Debug, Default)]
pub struct PriorStats {
    draws: AtomicU64,
    rejections: AtomicU64,
    fallbacks: AtomicU64,
}

/// A snapshot of [`PriorStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PriorCounts {
    /// Joint draws (each joint of each particle counts once per step).
    pub draws: u64,
    /// Draws rejected for leaving the limits.
    pub rejections: u64,
    /// Joints that exhausted their retries and kept their previous value.
    pub fallbacks: u64,
}

impl PriorCounts {
    /// Fraction of draws accepted.
    pub fn acceptance_rate(&self) -> f64 {
        let total = self.draws + self.rejections;
        if total == 0 {
            1.0
        } else {
            self.draws as f64 / total as f64
        }
    }
}

impl PriorStats {
    pub fn snapshot(&self) -> PriorCounts {
        PriorCounts {
            draws: self.draws.load(Ordering::Relaxed),
            rejections: self.rejections.load(Ordering::Relaxed),
            fallbacks: self.fallbacks.load(Ordering::Relaxed),
        }
    }

    pub fn reset(&self) {
        self.draws.store(0, Ordering::Relaxed);
        self.rejections.store(0, Ordering::Relaxed);
        self.fallbacks.store(0, Ordering::Relaxed);
    }
}

/// The evolution prior of a skeleton: per-joint noise and the limit sampler.
#[derive(Debug)]
pub struct EvolutionPrior {
    noise: Vec<JointNoise>,
    /// Cholesky factor of each joint's QuTem tangent covariance (rotating
    /// joints; identity-free for others).
    chol: Vec<Matrix3<f64>>,
    sampler: LimitSampler,
    stats: PriorStats,
}

impl EvolutionPrior {
    /// A prior with noise `noise[j]` for joint `j`.
    pub fn new(skeleton: &Skeleton, noise: Vec<JointNoise>, sampler: LimitSampler) -> Result<Self> {
        if noise.len() != skeleton.len() {
            return Err(IkError::InvalidConfig {
                field: "noise",
                message: format!("{} joint noises for {} joints", noise.len(), skeleton.len()),
            });
        }
        for (j, n) in noise.iter().enumerate() {
            let ok = |s: f64| s.is_finite() && s >= 0.0;
            if !n.rotation.iter().all(|&s| ok(s)) || !ok(n.translation) {
                return Err(IkError::InvalidConfig {
                    field: "noise",
                    message: format!(
                        "joint '{}': σ must be finite and >= 0, got {n:?}",
                        skeleton.joint(j).name
                    ),
                });
            }
        }
        if let LimitSampler::AcceptReject { max_retries } = sampler
            && max_retries > 10_000
        {
            return Err(IkError::InvalidConfig {
                field: "max_retries",
                message: format!("{max_retries} is unreasonably large (at most 10000)"),
            });
        }
        let chol = skeleton
            .joints()
            .iter()
            .zip(&noise)
            .map(|(joint, n)| tangent_cholesky(&joint.kind, n))
            .collect();
        Ok(Self {
            noise,
            chol,
            sampler,
            stats: PriorStats::default(),
        })
    }

    /// The same σ for every joint.
    pub fn uniform(skeleton: &Skeleton, noise: JointNoise, sampler: LimitSampler) -> Result<Self> {
        Self::new(skeleton, vec![noise; skeleton.len()], sampler)
    }

    pub fn noise(&self) -> &[JointNoise] {
        &self.noise
    }

    pub fn sampler(&self) -> LimitSampler {
        self.sampler
    }

    pub fn stats(&self) -> &PriorStats {
        &self.stats
    }

    /// Draws `next ~ p(· | prev)` with every σ multiplied by `scale`.
    /// `prev` must be within the limits (the fallback relies on it).
    pub fn sample(
        &self,
        skeleton: &Skeleton,
        prev: &[f64],
        next: &mut [f64],
        scale: f64,
        rng: &mut ParticleRng,
    ) {
        next.copy_from_slice(prev);
        let mut draws = 0;
        let mut rejections = 0;
        let mut fallbacks = 0;
        for (j, joint) in skeleton.joints().iter().enumerate() {
            let range = skeleton.param_range(j);
            if range.is_empty() {
                continue;
            }
            let p_prev = &prev[range.clone()];
            let p = &mut next[range];
            let step = JointStep {
                noise: &self.noise[j],
                chol: &self.chol[j],
                scale,
            };
            draws += 1;
            match self.sampler {
                LimitSampler::AcceptReject { max_retries } => {
                    let mut accepted = false;
                    for _ in 0..=max_retries {
                        p.copy_from_slice(p_prev);
                        step.random_walk(&joint.kind, p, rng);
                        if joint.kind.within_limits(p) {
                            accepted = true;
                            break;
                        }
                        rejections += 1;
                    }
                    if !accepted {
                        p.copy_from_slice(p_prev);
                        fallbacks += 1;
                    }
                }
                LimitSampler::Truncated => step.truncated_walk(&joint.kind, p, rng),
            }
        }
        self.stats.draws.fetch_add(draws, Ordering::Relaxed);
        if rejections > 0 {
            self.stats
                .rejections
                .fetch_add(rejections, Ordering::Relaxed);
        }
        if fallbacks > 0 {
            self.stats.fallbacks.fetch_add(fallbacks, Ordering::Relaxed);
        }
    }
}

/// Draws the parameters of one joint uniformly within its limits, in the
/// joint's own coordinates: hinge and prismatic joints uniformly in their
/// interval, swing (2-DOF) joints uniformly in the swing ellipse, swing–twist
/// ball joints uniformly in the ellipse × twist interval, Euler joints
/// uniformly in the box of their angle intervals (rejection sampling from the
/// bounding box, checked with the joint's own containment test). Fixed
/// joints draw nothing. Joints without limits are an error: there is no
/// uniform law on an unbounded range.
pub fn sample_within_limits<R: rand::Rng + ?Sized>(
    kind: &skeleton::JointKind,
    rng: &mut R,
    out: &mut [f64],
) -> Result<()> {
    let mut u = |lo: f64, hi: f64| {
        if hi > lo {
            rng.random_range(lo..=hi)
        } else {
            lo
        }
    };
    let mut boxed = |lo: &[f64], hi: &[f64], out: &mut [f64]| -> Result<()> {
        for _ in 0..10_000 {
            for k in 0..lo.len() {
                out[k] = u(lo[k], hi[k]);
            }
            if kind.within_limits(out) {
                return Ok(());
            }
        }
        Err(IkError::InvalidConfig {
            field: "limits",
            message: format!("no draw within the limits of {kind:?} in 10000 tries"),
        })
    };
    match kind {
        JointKind::Fixed => Ok(()),
        JointKind::Hinge { limit: Some(r), .. } | JointKind::Prismatic { limit: Some(r), .. } => {
            boxed(&[r.min], &[r.max], out)
        }
        JointKind::Swing { limit: Some(l), .. } => {
            let (a, b) = (l.swing_half_angles.x, l.swing_half_angles.y);
            boxed(&[-a, -b], &[a, b], out)
        }
        JointKind::Ball(BallRotation::SwingTwist { limit: Some(l), .. }) => {
            let (a, b) = (l.swing_half_angles.x, l.swing_half_angles.y);
            boxed(&[-a, -b, l.twist_min], &[a, b, l.twist_max], out)
        }
        JointKind::Ball(BallRotation::Euler {
            limits: Some(l), ..
        }) => boxed(
            &[l[0].min, l[1].min, l[2].min],
            &[l[0].max, l[1].max, l[2].max],
            out,
        ),
        other => Err(IkError::InvalidConfig {
            field: "limits",
            message: format!(
                "cannot draw uniformly within the limits of a joint without limits ({other:?})"
            ),
        }),
    }
}

/// Per-joint random-walk σ scaled by lever arm, a diagonal preconditioner
/// of the evolution prior for bodies whose joints sit at very different
/// distances from what is constrained (a free-root human): a rotation of
/// joint `j` by `δ` moves a point at distance `L` by about `L·δ`, so joint
/// `j` gets `σ_j = sigma · min(lever_ref / L_j, max_gain)`, where `L_j` is the
/// largest distance, at `pose`, from joint `j` to one of the joints `points`
/// in its subtree (at least 2 cm). Joints that move none of `points` get
/// σ = 0 (they keep their pose); a root joint gets translation σ
/// `root_translation`.
pub fn lever_arm_noise(
    skeleton: &Skeleton,
    pose: &[f64],
    points: &[usize],
    sigma: f64,
    lever_ref: f64,
    max_gain: f64,
    root_translation: f64,
) -> Result<Vec<JointNoise>> {
    for (field, v) in [
        ("sigma", sigma),
        ("lever_ref", lever_ref),
        ("max_gain", max_gain),
        ("root_translation", root_translation),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(IkError::InvalidConfig {
                field,
                message: format!("must be finite and >= 0, got {v}"),
            });
        }
    }
    let world = skeleton.forward_kinematics(pose)?;
    let mut lever = vec![0.0f64; skeleton.len()];
    for &p in points {
        if p >= skeleton.len() {
            return Err(IkError::InvalidConfig {
                field: "points",
                message: format!(
                    "joint index {p} out of range (the skeleton has {} joints)",
                    skeleton.len()
                ),
            });
        }
        let tip = world[p].translation.vector;
        let mut j = Some(p);
        while let Some(k) = j {
            lever[k] = lever[k].max((tip - world[k].translation.vector).norm().max(0.02));
            j = skeleton.joint(k).parent;
        }
    }
    Ok(lever
        .iter()
        .enumerate()
        .map(|(j, &l)| {
            let rotation = if l > 0.0 {
                sigma * (lever_ref / l).min(max_gain)
            } else {
                0.0
            };
            let translation = if skeleton.joint(j).parent.is_none() {
                root_translation
            } else {
                0.0
            };
            JointNoise::isotropic(rotation, translation)
        })
        .collect())
}

/// Cholesky factor of a joint's QuTem tangent covariance (local frame).
fn tangent_cholesky(kind: &JointKind, n: &JointNoise) -> Matrix3<f64> {
    let [a, b, c] = n.rotation;
    let rot = match kind {
        JointKind::Ball(r) | JointKind::Free { rotation: r, .. } => r,
        JointKind::Swing { frame, .. } => {
            // Twist locked (leakage 0: the twist is dropped anyway).
            let (u, w) = frame.swing_axes();
            return Matrix3::from_columns(&[
                u.into_inner() * a,
                w.into_inner() * b,
                Vector3::zeros(),
            ]);
        }
        _ => return Matrix3::zeros(),
    };
    match rot {
        BallRotation::SwingTwist { frame, .. } => {
            // Tangent noise with σ₁, σ₂ along the swing axes and σ₃ along the
            // twist axis: L = [u w t] diag(σ).
            let (u, w) = frame.swing_axes();
            Matrix3::from_columns(&[
                u.into_inner() * a,
                w.into_inner() * b,
                frame.twist_axis().into_inner() * c,
            ])
        }
        _ => Matrix3::from_diagonal(&Vector3::new(a, b, c)),
    }
}

fn gaussian(rng: &mut ParticleRng) -> f64 {
    rng.sample(StandardNormal)
}

/// One joint's share of a draw: its noise, the Cholesky factor `L` of its
/// rotation covariance and the σ multiplier `scale` of this draw.
#[derive(Clone, Copy)]
struct JointStep<'a> {
    noise: &'a JointNoise,
    chol: &'a Matrix3<f64>,
    scale: f64,
}

impl JointStep<'_> {
    /// The rotation σ of axis `k` for this draw: `scale · noise.rotation[k]`.
    fn sigma(&self, k: usize) -> f64 {
        self.scale * self.noise.rotation[k]
    }

    /// One unconstrained random-walk draw for a joint, in place.
    fn random_walk(&self, kind: &JointKind, p: &mut [f64], rng: &mut ParticleRng) {
        match kind {
            JointKind::Fixed => {}
            JointKind::Hinge { .. } | JointKind::Prismatic { .. } => {
                p[0] += self.sigma(0) * gaussian(rng)
            }
            JointKind::Free { .. } => {
                for x in &mut p[..3] {
                    *x += self.scale * self.noise.translation * gaussian(rng);
                }
                self.qutem_step(kind, p, rng);
            }
            JointKind::Ball(_) | JointKind::Swing { .. } => self.qutem_step(kind, p, rng),
        }
    }

    /// `q ← q · exp(scale · L z)`, written back into the joint's parameters.
    fn qutem_step(&self, kind: &JointKind, p: &mut [f64], rng: &mut ParticleRng) {
        let z = Vector3::new(gaussian(rng), gaussian(rng), gaussian(rng));
        let eps = self.chol * z * self.scale;
        if let Some(q) = kind.rotation(p) {
            let q = q * rotation::exp(&eps);
            kind.set_rotation(&q, p);
        }
    }

    /// One truncated-Gaussian draw for a joint, in place; never leaves the limits
    /// when `p` starts inside them.
    fn truncated_walk(&self, kind: &JointKind, p: &mut [f64], rng: &mut ParticleRng) {
        match kind {
            JointKind::Fixed => {}
            JointKind::Hinge { limit, .. } | JointKind::Prismatic { limit, .. } => {
                let s = self.sigma(0);
                p[0] = match limit {
                    Some(r) => truncated_normal(p[0], s, r.min, r.max, rng),
                    None => p[0] + s * gaussian(rng),
                };
            }
            JointKind::Swing { limit, .. } => match limit {
                Some(l) => self.truncated_swing(l.swing_half_angles, p, rng),
                None => self.qutem_step(kind, p, rng),
            },
            JointKind::Ball(r) => self.truncated_rotation(r, p, rng),
            JointKind::Free {
                rotation,
                translation_limits,
            } => {
                for k in 0..3 {
                    let s = self.scale * self.noise.translation;
                    p[k] = match translation_limits {
                        Some(l) => truncated_normal(p[k], s, l[k].min, l[k].max, rng),
                        None => p[k] + s * gaussian(rng),
                    };
                }
                self.truncated_rotation(rotation, &mut p[3..], rng);
            }
        }
    }

    /// The swing `(p[0], p[1])` drawn around itself within the ellipse with
    /// half-axes `half` ([`truncated_ellipse`]).
    fn truncated_swing(&self, half: Vector2<f64>, p: &mut [f64], rng: &mut ParticleRng) {
        let sigma = [self.sigma(0), self.sigma(1)];
        (p[0], p[1]) = truncated_ellipse(Vector2::new(p[0], p[1]), sigma, half, rng);
    }

    /// Truncated draw of a 3-parameter rotation `p` (a ball joint, or the
    /// rotation part of a free root).
    fn truncated_rotation(&self, r: &BallRotation, p: &mut [f64], rng: &mut ParticleRng) {
        match r {
            BallRotation::Euler {
                limits: Some(l), ..
            } => {
                for k in 0..3 {
                    p[k] = truncated_normal(p[k], self.sigma(k), l[k].min, l[k].max, rng);
                }
            }
            BallRotation::SwingTwist { limit: Some(l), .. } => {
                self.truncated_swing(l.swing_half_angles, p, rng);
                p[2] = truncated_normal(p[2], self.sigma(2), l.twist_min, l.twist_max, rng);
            }
            BallRotation::ExpMap { max_angle: Some(m) } => {
                // QuTem step on the rotation alone, then reflect at the cone.
                let ball = JointKind::Ball(r.clone());
                self.qutem_step(&ball, p, rng);
                let v = Vector3::new(p[0], p[1], p[2]);
                let len = v.norm();
                if len > *m {
                    let reflected = (2.0 * m - len).clamp(0.0, *m);
                    let v = v * (reflected / len);
                    p.copy_from_slice(v.as_slice());
                }
            }
            _ => {
                // No limits on this rotation: plain QuTem noise.
                let ball = JointKind::Ball(r.clone());
                self.qutem_step(&ball, p, rng);
            }
        }
    }
}

/// `(s₁, s₂)` from Gaussians around `s` truncated sequentially to the
/// ellipse with half-axes `half` (see the module docs).
fn truncated_ellipse(
    s: Vector2<f64>,
    sigma: [f64; 2],
    half: Vector2<f64>,
    rng: &mut ParticleRng,
) -> (f64, f64) {
    let (a, b) = (half.x, half.y);
    let s1 = truncated_normal(s.x.clamp(-a, a), sigma[0], -a, a, rng);
    let w = b * (1.0 - (s1 / a).powi(2)).max(0.0).sqrt();
    let s2 = truncated_normal(s.y.clamp(-w, w), sigma[1], -w, w, rng);
    (s1, s2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn samples_stay_within_the_limits_of_every_human_joint() {
        let skel = skeleton::presets::human();
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let mut pose = skel.rest_pose();
        for _ in 0..200 {
            for (j, joint) in skel.joints().iter().enumerate().skip(1) {
                let r = skel.param_range(j);
                super::sample_within_limits(&joint.kind, &mut rng, &mut pose[r]).unwrap();
            }
            assert!(
                skel.within_limits(&pose),
                "{:?}",
                skel.limit_violations(&pose)
            );
        }
        // The free root has no limits: no uniform law.
        let root = skel.param_range(0);
        assert!(
            super::sample_within_limits(&skel.joint(0).kind, &mut rng, &mut pose[root]).is_err()
        );
    }

    #[test]
    fn lever_arm_noise_scales_by_distance_and_zeroes_unconstrained_joints() {
        let skel = skeleton::presets::chain(4, 3.0);
        let tip = skel.find("tip").unwrap();
        let noise =
            lever_arm_noise(&skel, &skel.rest_pose(), &[tip], 0.1, 0.75, 10.0, 0.0).unwrap();
        // Joint i is 3 − 0.75 i from the tip.
        for (i, n) in noise.iter().take(4).enumerate() {
            let expected = 0.1 * 0.75 / (3.0 - 0.75 * i as f64);
            assert!((n.rotation[0] - expected).abs() < 1e-12, "{i}: {n:?}");
        }
        let j1 = skel.find("j1").unwrap();
        let none = lever_arm_noise(&skel, &skel.rest_pose(), &[j1], 0.1, 0.75, 10.0, 0.0).unwrap();
        assert_eq!(none[2].rotation, [0.0; 3]);
        assert!(lever_arm_noise(&skel, &skel.rest_pose(), &[99], 0.1, 0.75, 10.0, 0.0).is_err());
        assert!(
            lever_arm_noise(&skel, &skel.rest_pose(), &[tip], f64::NAN, 0.75, 10.0, 0.0).is_err()
        );
    }
}

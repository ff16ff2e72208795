//! An anatomical prior on the arms: the forearm bends towards the front of
//! the upper arm, never backwards through it.
//!
//! **Why.** Two-dimensional keypoints fix each arm up to its depth
//! branches: the elbow in front of the shoulder or behind it, the wrist in
//! front of the elbow or behind it (issue 34). The imported BVH bodies the
//! tracker uses give each elbow three free angles in `[−π, π]`, so every
//! branch is a pose the model can take — including a forearm bent
//! backwards, which the elbow's hinge and the limited axial rotation of
//! the humerus make impossible for a person. On the tuning clips a fifth
//! of the right arm's worst frames (elbow angle off by more than 25°) were
//! such poses, while no true frame was.
//!
//! **The measure** (per arm, in the chest frame: `x` the person's left
//! from the right to the left shoulder, `y` up from the pelvis to the
//! shoulders' midpoint made orthogonal to `x`, `z = x × y` forward; the
//! right arm is mirrored, `x → −x`, so both arms read as a left arm):
//!
//! - `u` the upper arm's direction (shoulder → elbow), `f` the forearm's
//!   (elbow → wrist), `β = ∠(u, f)` the flexion (0: straight).
//! - The forearm's **bend direction** `b = f − (f·u) u`, measured as an
//!   angle `ψ` about `u` from a reference `r(u)`: the forward direction
//!   `z` carried along the shortest rotation that takes the hanging arm
//!   `(0, −1, 0)` to `u`,
//!
//!   ```text
//!   r(u) = ( −u_x u_z / (1 − u_y),  u_z,  −u_y + u_x² / (1 − u_y) ),
//!   ψ = atan2( (r × b) · u,  r · b )
//!   ```
//!
//!   (the closed form of that rotation applied to `z`; `r ⟂ u`). With the
//!   arm hanging, `ψ = 0` bends the forearm forwards, `ψ = +90°` across
//!   the belly (internal rotation of the humerus), `ψ = −90°` outwards;
//!   `|ψ| → 180°` bends it backwards, which the elbow cannot do at any
//!   humeral rotation. With the arm abducted to the side, `ψ = 0` is still
//!   forwards; raised in front, upwards. On every frame of the tuning
//!   motions and the project's other CMU clips `|ψ| ≤ 100°` wherever the
//!   elbow is bent.
//!
//! **The term.** `log p(x) = −Σ_arms w_β · w_up · ½ (e/σ_ψ)²` with
//! `e = max(0, |ψ| − ψ_max)`, `ψ_max = 110°`, `σ_ψ = 15°` (a forearm bent
//! straight backwards costs ≈ 11 nats), plus `−½ ((β − β_max)/σ_β)²`
//! beyond the deepest flexion `β_max = 160°` (σ_β = 10°). The bend
//! direction means nothing for a straight arm, so `w_β` rises smoothly
//! from 0 at `β = 15°` to 1 at 35°; the reference turns quickly near the
//! raised arm (`u_y → 1`, where the shortest rotation from the hanging
//! arm is ill-defined — Codman's paradox: the humerus's axial rotation
//! there depends on the path), so `w_up` falls smoothly from 1 at
//! `u_y = 0.3` to 0 at `u_y = 0.7`: no constraint on an arm raised above
//! the shoulder.

use nalgebra::{Point3, Vector3};
use skeleton::{BatchForwardKinematics, Skeleton};

use crate::body::{Arm, Side};
use crate::error::{Result, TrackError};

/// `ψ_max` of the module docs: the largest bend direction away from the
/// front (either way) that costs nothing, radians.
pub(crate) const BEND_LIMIT: f64 = 110.0 * std::f64::consts::PI / 180.0;
/// `σ_ψ`: the softness beyond [`BEND_LIMIT`], radians.
pub(crate) const BEND_SIGMA: f64 = 15.0 * std::f64::consts::PI / 180.0;
/// `β_max`: the deepest flexion that costs nothing, radians.
pub(crate) const FLEXION_LIMIT: f64 = 160.0 * std::f64::consts::PI / 180.0;
/// The tracker's default weight of the prior
/// ([`crate::tracker::TrackerConfig::anatomy_weight`]): off. On the tuning
/// clips (3 seeds) weight 1 left the elbow error where it was (the
/// implausible frames' error moved to plausible wrong branches), so it is
/// an option, not a default (docs/track.md).
pub const DEFAULT_ANATOMY_WEIGHT: f64 = 0.0;
/// `σ_β` beyond [`FLEXION_LIMIT`], radians.
pub(crate) const FLEXION_SIGMA: f64 = 10.0 * std::f64::consts::PI / 180.0;

/// `0` below `a`, `1` above `b`, a cubic smoothstep between.
fn ramp(x: f64, a: f64, b: f64) -> f64 {
    let t = ((x - a) / (b - a)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// The chest frame of the module docs from the shoulders and the pelvis:
/// `(x, y, z)` = (the person's left, up, forward); `None` when the
/// shoulders coincide or the trunk is along the shoulder line.
pub fn chest_frame(
    left_shoulder: &Point3<f64>,
    right_shoulder: &Point3<f64>,
    pelvis: &Point3<f64>,
) -> Option<[Vector3<f64>; 3]> {
    let x = (left_shoulder - right_shoulder).try_normalize(1e-9)?;
    let up = nalgebra::center(left_shoulder, right_shoulder) - pelvis;
    let y = (up - x * x.dot(&up)).try_normalize(1e-9)?;
    Some([x, y, x.cross(&y)])
}

/// One arm's flexion `β` and bend direction `ψ` (module docs), both in
/// radians, from its upper-arm and forearm directions in the (mirrored)
/// chest frame; `None` for a zero-length segment or an arm pointing
/// straight up (where `ψ`'s reference is undefined).
pub(crate) fn flexion_and_bend(u: &Vector3<f64>, f: &Vector3<f64>) -> Option<(f64, f64)> {
    let u = u.try_normalize(1e-12)?;
    let f = f.try_normalize(1e-12)?;
    let beta = crate::body::angle_between(&u, &f);
    let down = 1.0 - u.y;
    if down < 1e-9 {
        return None;
    }
    let r = Vector3::new(-u.x * u.z / down, u.z, -u.y + u.x * u.x / down);
    let b = f - u * f.dot(&u);
    Some((beta, r.cross(&b).dot(&u).atan2(r.dot(&b))))
}

/// The negative log prior of one arm's directions (module docs), ≥ 0.
pub(crate) fn arm_cost(u: &Vector3<f64>, f: &Vector3<f64>) -> f64 {
    let Some((beta, psi)) = flexion_and_bend(u, f) else {
        return 0.0;
    };
    let uy = u.y / u.norm();
    let weight = ramp(beta, 15f64.to_radians(), 35f64.to_radians()) * (1.0 - ramp(uy, 0.3, 0.7));
    let bend = (psi.abs() - BEND_LIMIT).max(0.0) / BEND_SIGMA;
    let fold = (beta - FLEXION_LIMIT).max(0.0) / FLEXION_SIGMA;
    0.5 * weight * bend * bend + 0.5 * fold * fold
}

/// A skeleton's two arms and its pelvis (the root), read in the chest
/// frame: what the arms' priors ([`ArmAnatomy`], [`crate::ArmPrior`])
/// share.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ChestArms {
    /// Left arm, right arm.
    arms: [Arm; 2],
    pelvis: usize,
}

impl ChestArms {
    /// `skeleton`'s two arms ([`Arm::find`]) and its root.
    ///
    /// # Errors
    /// [`TrackError::MissingJoint`] when an arm is not found.
    pub(crate) fn find(skeleton: &Skeleton) -> Result<Self> {
        Ok(Self {
            arms: [
                Arm::find(skeleton, Side::Left)?,
                Arm::find(skeleton, Side::Right)?,
            ],
            pelvis: 0,
        })
    }

    /// `cost(axes, mirror, shoulder, elbow, wrist)` of the left arm plus
    /// the right one's, for the pose whose joint positions `at` gives;
    /// `axes` the chest frame ([`chest_frame`]), `mirror` 1 for the left
    /// arm and −1 for the right. 0 where the chest frame is undefined.
    pub(crate) fn sum(
        &self,
        at: impl Fn(usize) -> Point3<f64>,
        cost: impl Fn(&[Vector3<f64>; 3], f64, &Point3<f64>, &Point3<f64>, &Point3<f64>) -> f64,
    ) -> f64 {
        let [left, right] = self.arms;
        let Some(axes) = chest_frame(&at(left.shoulder), &at(right.shoulder), &at(self.pelvis))
        else {
            return 0.0;
        };
        [(left, 1.0), (right, -1.0)]
            .iter()
            .map(|&(arm, mirror)| {
                cost(
                    &axes,
                    mirror,
                    &at(arm.shoulder),
                    &at(arm.elbow),
                    &at(arm.wrist),
                )
            })
            .sum()
    }
}

/// `weight` of an arm prior: finite and ≥ 0.
///
/// # Errors
/// [`TrackError::InvalidSetting`] naming `field` otherwise.
pub(crate) fn checked_weight(field: &'static str, weight: f64) -> Result<f64> {
    if weight.is_finite() && weight >= 0.0 {
        Ok(weight)
    } else {
        Err(TrackError::InvalidSetting {
            field,
            value: weight.to_string(),
            reason: "must be finite and >= 0",
        })
    }
}

/// The arms' anatomical prior on a skeleton: its arms' joints and its
/// pelvis (the root).
#[derive(Clone, Debug, PartialEq)]
pub struct ArmAnatomy {
    arms: ChestArms,
    /// Multiplies the log prior (0: off).
    pub weight: f64,
}

impl ArmAnatomy {
    /// The prior on `skeleton`'s two arms ([`Arm::find`]), weight 1.
    ///
    /// # Errors
    /// [`TrackError::MissingJoint`] when an arm is not found.
    pub fn new(skeleton: &Skeleton) -> Result<Self> {
        Ok(Self {
            arms: ChestArms::find(skeleton)?,
            weight: 1.0,
        })
    }

    /// `weight` of the prior; refuses a negative or non-finite one.
    ///
    /// # Errors
    /// [`TrackError::InvalidSetting`] naming `anatomy_weight`.
    pub fn with_weight(mut self, weight: f64) -> Result<Self> {
        self.weight = checked_weight("anatomy_weight", weight)?;
        Ok(self)
    }

    /// The negative log prior of the pose whose joint positions `at`
    /// gives (a joint index → its world position), ≥ 0, unweighted.
    pub fn cost(&self, at: impl Fn(usize) -> Point3<f64>) -> f64 {
        self.arms.sum(at, |[x, y, z], mirror, s, e, w| {
            let local = |v: Vector3<f64>| Vector3::new(mirror * v.dot(x), v.dot(y), v.dot(z));
            arm_cost(&local(e - s), &local(w - e))
        })
    }

    /// Adds `−weight · cost` of each pose of the batch to `out`.
    pub fn add_log_prior(&self, fk: &BatchForwardKinematics, out: &mut [f64]) {
        if self.weight == 0.0 {
            return;
        }
        for (i, o) in out.iter_mut().enumerate().take(fk.len()) {
            *o -= self.weight * self.cost(|j| fk.position(i, j));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deg(x: f64) -> f64 {
        x.to_degrees()
    }

    #[test]
    fn the_reference_is_the_forward_direction_carried_by_the_shortest_swing() {
        // Closed form against the rotation itself, on a grid of upper-arm
        // directions away from the raised arm.
        let down = Vector3::new(0.0, -1.0, 0.0);
        for i in 0..12 {
            for k in 1..10 {
                let (az, el) = (f64::from(i) * 0.5, -1.5 + f64::from(k) * 0.28);
                let u = Vector3::new(el.cos() * az.cos(), el.sin(), el.cos() * az.sin());
                let swing = nalgebra::Rotation3::rotation_between(&down, &u).unwrap();
                let r = swing * Vector3::z();
                // ψ of a forearm bent along r is 0, along −r is 180°.
                let (_, psi) = flexion_and_bend(&u, &(u + r)).unwrap();
                assert!(psi.abs() < 1e-9, "u {u:?}: ψ {}", deg(psi));
                let (_, psi) = flexion_and_bend(&u, &(u - r)).unwrap();
                assert!((psi.abs() - std::f64::consts::PI).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn a_hanging_arm_bends_forwards_or_across_not_backwards() {
        let u = Vector3::new(0.0, -1.0, 0.0);
        let fwd = Vector3::new(0.0, 0.0, 1.0);
        let (beta, psi) = flexion_and_bend(&u, &fwd).unwrap();
        assert!((deg(beta) - 90.0).abs() < 1e-9 && psi.abs() < 1e-9);
        // Across the belly (towards −x, the midline for a left arm) is
        // internal rotation, +90°.
        let (_, psi) = flexion_and_bend(&u, &Vector3::new(-1.0, 0.0, 0.0)).unwrap();
        assert!((deg(psi) - 90.0).abs() < 1e-9, "ψ {}", deg(psi));
        assert_eq!(arm_cost(&u, &fwd), 0.0);
        assert_eq!(arm_cost(&u, &Vector3::new(-1.0, 0.0, 0.5)), 0.0);
        // Bent backwards: 70° past the limit, ½ (70/15)² nats.
        let back = arm_cost(&u, &Vector3::new(0.0, 0.0, -1.0));
        assert!(
            (back - 0.5 * (70.0f64 / 15.0).powi(2)).abs() < 1e-9,
            "{back}"
        );
        // A straight arm has no bend direction: free.
        assert_eq!(arm_cost(&u, &Vector3::new(0.0, -1.0, -0.05)), 0.0);
        // A raised arm is not constrained.
        let up = Vector3::new(0.0, 1.0, 0.1);
        assert_eq!(arm_cost(&up, &Vector3::new(0.0, 0.0, -1.0)), 0.0);
        // Folded past 160°: the fold part.
        let folded = arm_cost(&u, &Vector3::new(0.0, 0.98, 0.17));
        assert!(folded > 0.0);
    }

    #[test]
    fn arm_abducted_to_the_side_bends_forwards_and_up_not_backwards() {
        let side = Vector3::new(1.0, 0.0, 0.0);
        assert_eq!(arm_cost(&side, &Vector3::new(0.0, 0.0, 1.0)), 0.0);
        // "Hands up": external rotation of the abducted arm.
        assert_eq!(arm_cost(&side, &Vector3::new(0.0, 1.0, 0.0)), 0.0);
        assert!(arm_cost(&side, &Vector3::new(0.0, 0.0, -1.0)) > 5.0);
    }
}

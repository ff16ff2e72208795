//! The tracked body: a skeleton, the subset of its pose parameters the
//! filter estimates (RTPF §VII-A: 3 global position parameters and the
//! joint angles of the upper body), box limits on each of them, and the
//! values of the parameters that are not tracked (held at the calibration
//! pose, RTPF §VII-A: "adjusting … taking as reference the human pose in
//! the first image").
//!
//! A tracked *state* is the vector of tracked parameters; [`TrackedBody::to_full`]
//! writes it into a full skeleton pose for forward kinematics and the
//! likelihood.
//!
//! **Limits.** Every proposal of the tracker stays inside the box
//! `[lower, upper]` of each tracked parameter. Joints with limits of their
//! own (the `rtpf_upper_body` preset: prismatic ranges, Euler angle
//! intervals, elbow hinges) give them; joints without (BVH imports) get
//! `[−π, π]` per angle and ±3 m around the calibration position for a free
//! root, and can be narrowed with [`TrackedBody::learn_limits`] from a
//! motion corpus (range seen, widened by a margin).
//!
//! **Capsules.** [`default_radii`] re-derives every capsule's radius from
//! its bone length with a per-body-part ratio clamped to a plausible range,
//! for skeletons (BVH) whose import gave generic radii.

use nalgebra::Vector3;
use skeleton::{BallRotation, BodyPart, JointKind, PoseBatch, Range, Skeleton};

use crate::error::{Result, TrackError};

/// `(ratio of bone length, min, max)` of the capsule radius per body part,
/// metres; values of an adult of average build.
fn radius_rule(part: BodyPart) -> (f64, f64, f64) {
    match part {
        BodyPart::Head => (0.45, 0.08, 0.11),
        BodyPart::Neck => (0.4, 0.045, 0.07),
        BodyPart::Torso => (0.9, 0.1, 0.16),
        BodyPart::Pelvis => (0.8, 0.1, 0.15),
        BodyPart::UpperArm => (0.18, 0.04, 0.06),
        BodyPart::Forearm => (0.15, 0.032, 0.05),
        BodyPart::Hand => (0.35, 0.03, 0.045),
        BodyPart::Finger => (0.3, 0.008, 0.015),
        BodyPart::Thigh => (0.17, 0.05, 0.08),
        BodyPart::Shank => (0.12, 0.04, 0.06),
        BodyPart::Foot => (0.3, 0.03, 0.05),
        BodyPart::Link => (0.1, 0.01, 0.1),
    }
}

/// `skeleton` with every capsule radius set from its bone length:
/// `r = clamp(ratio · length, min, max)` with the per-part rule above
/// (a zero-length capsule gets `min`), scaled by `scale`.
///
/// # Errors
/// `scale` not finite and positive.
pub fn default_radii(skeleton: &Skeleton, scale: f64) -> Result<Skeleton> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(TrackError::InvalidSetting {
            field: "radius_scale",
            value: scale.to_string(),
            reason: "must be finite and > 0",
        });
    }
    let mut joints = skeleton.joints().to_vec();
    for j in &mut joints {
        if let Some(body) = &mut j.body {
            let (ratio, lo, hi) = radius_rule(body.part);
            let len = (body.capsule.end - body.capsule.start).norm();
            body.capsule.radius = (ratio * len).clamp(lo, hi) * scale;
        }
    }
    Ok(Skeleton::new(joints)?)
}

/// Which parameters of a skeleton the filter estimates.
#[derive(Clone, Debug, PartialEq)]
pub enum Selection {
    /// Every parameter.
    All,
    /// The root's parameters and those of the joints named (exact names).
    Joints(Vec<String>),
}

impl Selection {
    /// RTPF's upper body on a CMU-style BVH skeleton: the root (position
    /// and orientation), spine, neck, head, collars, shoulders and elbows
    /// — 39 parameters on the CMU skeleton, whose spine and neck have more
    /// joints than RTPF's model (23, §VII-A). Wrists, hands and legs stay
    /// at the calibration pose.
    pub fn cmu_upper_body() -> Self {
        Self::Joints(
            [
                "lowerback",
                "Chest",
                "Chest2",
                "lowerneck",
                "Neck",
                "Head",
                "LeftCollar",
                "LeftShoulder",
                "LeftElbow",
                "RightCollar",
                "RightShoulder",
                "RightElbow",
            ]
            .map(String::from)
            .to_vec(),
        )
    }
}

/// One tracked parameter: where it sits in the full pose and its box.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// Index into the skeleton's pose vector.
    pub index: usize,
    /// `joint.param` name, e.g. `r_elbow.0`.
    pub name: String,
    pub lower: f64,
    pub upper: f64,
    /// A translation (metres) rather than an angle (radians).
    pub translation: bool,
    /// An angle of a limb joint (arm or leg: shoulder, elbow, wrist, hip,
    /// knee, …), which moves faster than the trunk's and gets the limb
    /// diffusion σ. A shoulder girdle (collar, clavicle) moves little, like
    /// the trunk: not a limb here, though it is in its arm's partition.
    pub limb: bool,
    /// The parameter's partition for partitioned sampling
    /// ([`TrackedBody::partitions`]): 0 for the trunk (root, spine, neck,
    /// head), then one per limb chain.
    pub partition: usize,
}

/// A skeleton with its tracked parameters (module docs).
#[derive(Clone, Debug)]
pub struct TrackedBody {
    skeleton: Skeleton,
    params: Vec<Param>,
    /// The full pose the untracked parameters are taken from.
    base: Vec<f64>,
}

fn range_box(r: &Option<Range>, default: (f64, f64)) -> (f64, f64) {
    r.as_ref().map_or(default, |r| (r.min, r.max))
}

impl TrackedBody {
    /// The body of `skeleton` with the parameters of `selection` tracked
    /// and the others held at `base` (a full pose, within the limits).
    ///
    /// # Errors
    /// A `base` of the wrong length or non-finite; a joint name not in the
    /// skeleton; nothing to track.
    pub fn new(skeleton: Skeleton, selection: &Selection, base: &[f64]) -> Result<Self> {
        skeleton.check_pose(base).map_err(|e| TrackError::BadPose {
            what: "base pose".into(),
            message: e.to_string(),
        })?;
        let mut joints: Vec<usize> = match selection {
            Selection::All => (0..skeleton.len()).collect(),
            Selection::Joints(names) => {
                let mut v = Vec::new();
                for n in names {
                    v.push(skeleton.find(n).map_err(|_| TrackError::MissingJoint {
                        name: n.clone(),
                        why: "named in the tracked selection",
                    })?);
                }
                v
            }
        };
        // The root's own parameters (a free root or the prismatic chain of
        // the presets, which ends at the first joint with a body) are
        // always tracked: the global position of RTPF §VII-A.
        let root_chain: Vec<usize> = (0..skeleton.len())
            .take_while(|&j| j == 0 || skeleton.joint(j).parent == Some(j - 1))
            .take_while(|&j| {
                matches!(
                    skeleton.joint(j).kind,
                    JointKind::Prismatic { .. } | JointKind::Free { .. }
                )
            })
            .collect();
        joints.extend(root_chain);
        joints.sort_unstable();
        joints.dedup();
        let pi = std::f64::consts::PI;
        let part_of = |j: usize| {
            let joint = skeleton.joint(j);
            joint
                .body
                .as_ref()
                .map_or_else(|| BodyPart::from_joint_name(&joint.name), |b| b.part)
        };
        let is_limb = |part: BodyPart| {
            matches!(
                part,
                BodyPart::UpperArm
                    | BodyPart::Forearm
                    | BodyPart::Hand
                    | BodyPart::Finger
                    | BodyPart::Thigh
                    | BodyPart::Shank
                    | BodyPart::Foot
            )
        };
        let mut params = Vec::new();
        for &j in &joints {
            let joint = skeleton.joint(j);
            let range = skeleton.param_range(j);
            let euler_box = |rot: &BallRotation| -> [(f64, f64); 3] {
                match rot {
                    BallRotation::Euler {
                        limits: Some(l), ..
                    } => [0, 1, 2].map(|k| (l[k].min, l[k].max)),
                    _ => [(-pi, pi); 3],
                }
            };
            let boxes: Vec<(f64, f64, bool)> = match &joint.kind {
                JointKind::Fixed => vec![],
                JointKind::Hinge { limit, .. } => vec![{
                    let (a, b) = range_box(limit, (-pi, pi));
                    (a, b, false)
                }],
                JointKind::Prismatic { limit, .. } => {
                    let x = base[range.start];
                    let (a, b) = range_box(limit, (x - 3.0, x + 3.0));
                    vec![(a, b, true)]
                }
                JointKind::Swing { .. } => vec![(-pi, pi, false); 2],
                JointKind::Ball(rot) => {
                    euler_box(rot).iter().map(|&(a, b)| (a, b, false)).collect()
                }
                JointKind::Free {
                    rotation,
                    translation_limits,
                } => {
                    let mut v: Vec<(f64, f64, bool)> = (0..3)
                        .map(|k| {
                            let x = base[range.start + k];
                            match translation_limits {
                                Some(l) => (l[k].min, l[k].max, true),
                                None => (x - 3.0, x + 3.0, true),
                            }
                        })
                        .collect();
                    v.extend(euler_box(rotation).iter().map(|&(a, b)| (a, b, false)));
                    v
                }
            };
            let limb = is_limb(part_of(j));
            let name = joint.name.to_ascii_lowercase();
            let girdle = name.contains("collar") || name.contains("clavicle");
            // A limb joint's chain is named by its topmost limb ancestor
            // (the collar or shoulder of an arm, the hip of a leg).
            let chain = limb.then(|| {
                let mut top = j;
                while let Some(p) = skeleton.joint(top).parent {
                    if !is_limb(part_of(p)) {
                        break;
                    }
                    top = p;
                }
                top
            });
            for (k, (lower, upper, translation)) in boxes.into_iter().enumerate() {
                params.push(Param {
                    index: range.start + k,
                    name: format!("{}.{k}", joint.name),
                    lower,
                    upper,
                    translation,
                    limb: limb && !translation && !girdle,
                    partition: chain.filter(|_| !translation).map_or(0, |top| top + 1),
                });
            }
        }
        if params.is_empty() {
            return Err(TrackError::InvalidSetting {
                field: "selection",
                value: format!("{selection:?}"),
                reason: "selects no parameter to track",
            });
        }
        // Partitions numbered densely in order of first appearance
        // (skeleton order: the trunk's 0 first when the root is tracked).
        let mut seen: Vec<usize> = Vec::new();
        for p in &mut params {
            p.partition = match seen.iter().position(|&k| k == p.partition) {
                Some(i) => i,
                None => {
                    seen.push(p.partition);
                    seen.len() - 1
                }
            };
        }
        let mut base = base.to_vec();
        for p in &params {
            base[p.index] = base[p.index].clamp(p.lower, p.upper);
        }
        Ok(Self {
            skeleton,
            params,
            base,
        })
    }

    /// RTPF's upper body (§VII-A): the `rtpf_upper_body` preset, every one
    /// of its 23 parameters tracked within the preset's joint limits, rest
    /// pose as the base.
    pub fn rtpf_upper_body() -> Self {
        let skeleton = skeleton::presets::rtpf_upper_body();
        let rest = skeleton.rest_pose();
        Self::new(skeleton, &Selection::All, &rest).expect("the preset is valid")
    }

    pub fn skeleton(&self) -> &Skeleton {
        &self.skeleton
    }
    /// The tracked parameters, in state order.
    pub fn params(&self) -> &[Param] {
        &self.params
    }
    /// D, the state dimension.
    /// The parameters of each partition (indices into [`Self::params`]):
    /// the trunk's (global position and orientation, spine, neck, head)
    /// first, then each limb chain's (an arm: collar, shoulder, elbow, …;
    /// a leg). Partitioned sampling (MacCormick & Isard) diffuses and
    /// weighs one partition at a time.
    pub fn partitions(&self) -> Vec<Vec<usize>> {
        let count = self
            .params
            .iter()
            .map(|p| p.partition + 1)
            .max()
            .unwrap_or(0);
        let mut v = vec![Vec::new(); count];
        for (i, p) in self.params.iter().enumerate() {
            v[p.partition].push(i);
        }
        v
    }

    pub fn dim(&self) -> usize {
        self.params.len()
    }
    /// The full pose untracked parameters come from.
    pub fn base(&self) -> &[f64] {
        &self.base
    }

    /// Replaces the base pose (e.g. a new calibration frame), keeping the
    /// tracked parameters' boxes.
    ///
    /// # Errors
    /// Wrong length or non-finite values.
    pub fn set_base(&mut self, base: &[f64]) -> Result<()> {
        self.skeleton
            .check_pose(base)
            .map_err(|e| TrackError::BadPose {
                what: "base pose".into(),
                message: e.to_string(),
            })?;
        self.base.copy_from_slice(base);
        Ok(())
    }

    /// Narrows the box of every tracked *angle* whose joint has no limits
    /// of its own to the range `frames` show, widened by `margin` radians
    /// on each side (a limit learned from a motion corpus). Translations
    /// keep their box.
    ///
    /// # Errors
    /// `frames` of another skeleton, or a negative margin.
    pub fn learn_limits(&mut self, frames: &PoseBatch, margin: f64) -> Result<()> {
        if frames.dof() != self.skeleton.dof() || frames.is_empty() {
            return Err(TrackError::InvalidSetting {
                field: "frames",
                value: format!("{} frames of {} parameters", frames.len(), frames.dof()),
                reason: "need at least one frame of the body's skeleton",
            });
        }
        if !(margin.is_finite() && margin >= 0.0) {
            return Err(TrackError::InvalidSetting {
                field: "margin",
                value: margin.to_string(),
                reason: "must be finite and >= 0",
            });
        }
        let pi = std::f64::consts::PI;
        for p in &mut self.params {
            if p.translation || (p.lower, p.upper) != (-pi, pi) {
                continue;
            }
            let (lo, hi) = frames
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), f| {
                    (a.min(f[p.index]), b.max(f[p.index]))
                });
            p.lower = (lo - margin).max(-pi);
            p.upper = (hi + margin).min(pi);
        }
        Ok(())
    }

    /// Writes `state` (D values) over the base pose into `full`.
    pub fn to_full(&self, state: &[f64], full: &mut [f64]) {
        debug_assert_eq!(state.len(), self.dim());
        full.copy_from_slice(&self.base);
        for (p, &x) in self.params.iter().zip(state) {
            full[p.index] = x;
        }
    }

    /// The full pose of `state`.
    pub fn full_pose(&self, state: &[f64]) -> Vec<f64> {
        let mut full = self.base.clone();
        self.to_full(state, &mut full);
        full
    }

    /// The tracked parameters of a full pose.
    pub fn state_of(&self, full: &[f64]) -> Vec<f64> {
        self.params.iter().map(|p| full[p.index]).collect()
    }

    /// Clamps `state` into the boxes.
    pub fn clamp(&self, state: &mut [f64]) {
        for (p, x) in self.params.iter().zip(state) {
            *x = x.clamp(p.lower, p.upper);
        }
    }

    /// Whether `state` lies in every box.
    pub fn within_limits(&self, state: &[f64]) -> bool {
        self.params
            .iter()
            .zip(state)
            .all(|(p, &x)| p.lower <= x && x <= p.upper)
    }

    /// Checks a state's length and values.
    ///
    /// # Errors
    /// [`TrackError::BadPose`] naming the first bad parameter.
    pub fn check_state(&self, state: &[f64], what: &str) -> Result<()> {
        if state.len() != self.dim() {
            return Err(TrackError::BadPose {
                what: what.into(),
                message: format!(
                    "{} values for {} tracked parameters",
                    state.len(),
                    self.dim()
                ),
            });
        }
        if let Some(k) = state.iter().position(|x| !x.is_finite()) {
            return Err(TrackError::BadPose {
                what: what.into(),
                message: format!("parameter {} is {}", self.params[k].name, state[k]),
            });
        }
        Ok(())
    }
}

/// The joints of one arm: shoulder, elbow and wrist (their origins are
/// the joint centres RTPF §IV-C2 projects).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arm {
    /// The joint whose rotation swings the upper arm.
    pub shoulder: usize,
    /// The joint at the elbow whose rotation flexes the forearm.
    pub elbow: usize,
    /// The joint at the wrist.
    pub wrist: usize,
}

/// Which arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Left,
    Right,
}

impl Arm {
    /// The arm of `side` by joint names: the presets' `r_shoulder`,
    /// `r_elbow`, `r_wrist_flex`; CMU BVH `RightShoulder`, `RightElbow`,
    /// `RightWrist`; Mixamo-style `RightArm`, `RightForeArm`, `RightHand`.
    ///
    /// # Errors
    /// [`TrackError::MissingJoint`] when no naming scheme matches.
    pub fn find(skeleton: &Skeleton, side: Side) -> Result<Self> {
        let (s, word) = match side {
            Side::Left => ("l", "Left"),
            Side::Right => ("r", "Right"),
        };
        let schemes = [
            [
                format!("{s}_shoulder"),
                format!("{s}_elbow"),
                format!("{s}_wrist_flex"),
            ],
            [
                format!("{s}_shoulder"),
                format!("{s}_elbow"),
                format!("{s}_wrist"),
            ],
            [
                format!("{word}Shoulder"),
                format!("{word}Elbow"),
                format!("{word}Wrist"),
            ],
            [
                format!("{word}Arm"),
                format!("{word}ForeArm"),
                format!("{word}Hand"),
            ],
        ];
        for [a, b, c] in &schemes {
            if let (Ok(shoulder), Ok(elbow), Ok(wrist)) =
                (skeleton.find(a), skeleton.find(b), skeleton.find(c))
            {
                return Ok(Self {
                    shoulder,
                    elbow,
                    wrist,
                });
            }
        }
        Err(TrackError::MissingJoint {
            name: format!("{}/{}/{}", schemes[0][0], schemes[2][0], schemes[3][0]),
            why: "an arm (shoulder, elbow, wrist) is needed",
        })
    }

    /// Elbow flexion in radians from 3D joint positions: the angle between
    /// the upper arm (shoulder → elbow) and the forearm (elbow → wrist);
    /// 0 for a straight arm.
    pub fn flexion(&self, world: &[nalgebra::Isometry3<f64>]) -> f64 {
        let p = |j: usize| world[j].translation.vector;
        angle_between(
            &(p(self.elbow) - p(self.shoulder)),
            &(p(self.wrist) - p(self.elbow)),
        )
    }
}

/// The angle between two vectors, robust near 0 and π.
pub fn angle_between(a: &Vector3<f64>, b: &Vector3<f64>) -> f64 {
    a.cross(b).norm().atan2(a.dot(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preset_tracks_all_23_parameters_within_its_limits() {
        let body = TrackedBody::rtpf_upper_body();
        assert_eq!(body.dim(), 23);
        assert!(body.params()[..3].iter().all(|p| p.translation));
        let elbow = body
            .params()
            .iter()
            .find(|p| p.name == "r_elbow.0")
            .unwrap();
        assert_eq!((elbow.lower, elbow.upper), (0.0, 150f64.to_radians()));
        let state = body.state_of(body.base());
        assert!(body.within_limits(&state));
        assert_eq!(body.full_pose(&state), body.base());
    }

    #[test]
    fn radii_follow_bone_length_within_the_part_range() {
        let skel = skeleton::presets::human();
        let s = default_radii(&skel, 1.0).unwrap();
        for j in s.joints() {
            if let Some(b) = &j.body {
                let (_, lo, hi) = radius_rule(b.part);
                assert!(b.capsule.radius >= lo - 1e-12 && b.capsule.radius <= hi + 1e-12);
            }
        }
        assert!(default_radii(&skel, 0.0).is_err());
    }

    #[test]
    fn arms_are_found_and_flexion_is_the_elbow_angle() {
        let skel = skeleton::presets::rtpf_upper_body();
        let arm = Arm::find(&skel, Side::Right).unwrap();
        let mut pose = skel.rest_pose();
        let e = skel.param_range(arm.elbow).start;
        pose[e] = 0.7;
        let world = skel.forward_kinematics(&pose).unwrap();
        assert!((arm.flexion(&world) - 0.7).abs() < 1e-9);
        assert!(Arm::find(&skeleton::presets::chain(3, 1.0), Side::Left).is_err());
    }
}

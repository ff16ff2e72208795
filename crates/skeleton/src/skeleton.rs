//! The articulated body: a tree of joints, each with a fixed placement in its
//! parent, a [`JointKind`] that maps pose parameters to a motion, and an
//! optional body part (a capsule with a mass and a label class).
//!
//! World transforms follow the usual forward-kinematics recursion (SMC-IK
//! Eq. 1, with `Mᵢ` split into a fixed placement and a joint motion):
//!
//! ```text
//! W_j = W_parent(j) · T(offset_j) · R(rest_j) · motion_j(p_j)
//! ```
//!
//! Joints are stored in topological order (a parent before its children), so
//! one forward sweep computes every world transform.

use nalgebra::{Isometry3, Point3, Translation3, UnitQuaternion, Vector3};

use crate::error::{Result, SkeletonError};
use crate::joint::JointKind;
use crate::visual::Visual;

/// Body-part label classes, for label rendering (RTPF Eq. 1 compares label
/// images class by class) and for grouping joints in the UI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BodyPart {
    Head,
    Neck,
    Torso,
    Pelvis,
    UpperArm,
    Forearm,
    Hand,
    Finger,
    Thigh,
    Shank,
    Foot,
    /// A generic link of a chain or a robot.
    Link,
}

impl BodyPart {
    pub const ALL: [BodyPart; 12] = [
        Self::Head,
        Self::Neck,
        Self::Torso,
        Self::Pelvis,
        Self::UpperArm,
        Self::Forearm,
        Self::Hand,
        Self::Finger,
        Self::Thigh,
        Self::Shank,
        Self::Foot,
        Self::Link,
    ];

    /// Label value in a label image; 0 is reserved for background.
    pub fn label(self) -> u8 {
        Self::ALL.iter().position(|&p| p == self).unwrap_or(0) as u8 + 1
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Head => "head",
            Self::Neck => "neck",
            Self::Torso => "torso",
            Self::Pelvis => "pelvis",
            Self::UpperArm => "arm",
            Self::Forearm => "forearm",
            Self::Hand => "hand",
            Self::Finger => "finger",
            Self::Thigh => "thigh",
            Self::Shank => "shank",
            Self::Foot => "foot",
            Self::Link => "link",
        }
    }

    /// Guesses the class from a joint name as found in BVH/URDF files
    /// (`LeftUpLeg`, `r_forearm`, `Head`, …). Unknown names give `Link`.
    pub fn from_joint_name(name: &str) -> Self {
        let n = name.to_ascii_lowercase();
        let has = |s: &str| n.contains(s);
        if has("head") {
            Self::Head
        } else if has("neck") {
            Self::Neck
        } else if has("finger") || has("thumb") || has("index") || has("pinky") {
            Self::Finger
        } else if has("hand") || has("wrist") {
            Self::Hand
        } else if has("forearm") || has("elbow") || has("lowerarm") {
            Self::Forearm
        } else if has("arm") || has("shoulder") || has("clavicle") || has("collar") {
            Self::UpperArm
        } else if has("foot") || has("toe") || has("ankle") || has("heel") {
            Self::Foot
        } else if has("upleg") || has("thigh") || has("hip") && !has("hips") {
            Self::Thigh
        } else if has("leg") || has("knee") || has("shin") || has("shank") {
            Self::Shank
        } else if has("hips") || has("pelvis") || has("root") {
            Self::Pelvis
        } else if has("spine")
            || has("chest")
            || has("back")
            || has("torso")
            || has("thorax")
            || has("lumbar")
        {
            Self::Torso
        } else {
            Self::Link
        }
    }
}

/// A capsule rigidly attached to a joint's frame: the segment from `start`
/// to `end` (joint-local coordinates, metres) swept by a sphere of `radius`.
#[derive(Clone, Debug, PartialEq)]
pub struct Capsule {
    pub start: Vector3<f64>,
    pub end: Vector3<f64>,
    pub radius: f64,
}

impl Capsule {
    pub fn new(start: Vector3<f64>, end: Vector3<f64>, radius: f64) -> Self {
        Self { start, end, radius }
    }

    /// Capsule volume, m³ (cylinder plus two half spheres).
    pub fn volume(&self) -> f64 {
        let r = self.radius;
        std::f64::consts::PI * r * r * ((self.end - self.start).norm() + 4.0 / 3.0 * r)
    }

    pub fn centre(&self) -> Vector3<f64> {
        (self.start + self.end) * 0.5
    }
}

/// The body segment carried by a joint: shape, label class and mass.
#[derive(Clone, Debug, PartialEq)]
pub struct Body {
    pub capsule: Capsule,
    pub part: BodyPart,
    /// kg; its centre of mass is the capsule's centre.
    pub mass: f64,
}

/// One joint of a [`Skeleton`].
#[derive(Clone, Debug)]
pub struct Joint {
    pub name: String,
    pub parent: Option<usize>,
    /// Position of this joint's origin in the parent's frame (the segment
    /// offset; BVH `OFFSET`, URDF `origin xyz`).
    pub offset: Vector3<f64>,
    /// Fixed rotation of this joint's frame relative to the parent, applied
    /// before the motion (URDF `origin rpy`; identity for BVH).
    pub rest: UnitQuaternion<f64>,
    pub kind: JointKind,
    pub body: Option<Body>,
    /// What the link this joint carries looks like (URDF `<visual>`s, in
    /// this joint's frame); empty for presets and BVH, which are drawn
    /// from their capsules.
    pub visuals: Vec<Visual>,
}

impl Joint {
    pub fn new(
        name: impl Into<String>,
        parent: Option<usize>,
        offset: Vector3<f64>,
        kind: JointKind,
    ) -> Self {
        Self {
            name: name.into(),
            parent,
            offset,
            rest: UnitQuaternion::identity(),
            kind,
            body: None,
            visuals: Vec::new(),
        }
    }

    /// Transform from the parent's frame to this joint's frame at zero motion.
    #[inline]
    pub fn placement(&self) -> Isometry3<f64> {
        Isometry3::from_parts(Translation3::from(self.offset), self.rest)
    }
}

/// An articulated body. Built with [`Skeleton::new`] (which validates) or
/// [`SkeletonBuilder`]; immutable afterwards.
#[derive(Clone, Debug)]
pub struct Skeleton {
    joints: Vec<Joint>,
    /// `param_offsets[j]..param_offsets[j] + dof(j)` are joint j's parameters.
    param_offsets: Vec<usize>,
    dof: usize,
    children: Vec<Vec<usize>>,
}

impl Skeleton {
    /// Validates and builds a skeleton: at least one joint, parents before
    /// children, exactly one root, unique names, finite offsets and masses
    /// (and a finite total mass), valid limits.
    pub fn new(joints: Vec<Joint>) -> Result<Self> {
        let invalid =
            |joint: &str, field: &'static str, message: String| SkeletonError::InvalidJoint {
                joint: joint.to_string(),
                field,
                message,
            };
        if joints.is_empty() {
            return Err(invalid(
                "<none>",
                "joints",
                "a skeleton needs at least one joint".into(),
            ));
        }
        let mut names = std::collections::HashSet::new();
        let mut children = vec![Vec::new(); joints.len()];
        for (i, j) in joints.iter().enumerate() {
            if !names.insert(j.name.as_str()) {
                return Err(invalid(&j.name, "name", "duplicate joint name".into()));
            }
            match j.parent {
                None if i != 0 => {
                    return Err(invalid(
                        &j.name,
                        "parent",
                        "only the first joint may be the root".into(),
                    ));
                }
                Some(_) if i == 0 => {
                    return Err(invalid(
                        &j.name,
                        "parent",
                        "the first joint must be the root".into(),
                    ));
                }
                Some(p) if p >= i => {
                    return Err(invalid(
                        &j.name,
                        "parent",
                        format!(
                            "parent index {p} does not precede the joint (index {i}): joints must be in topological order"
                        ),
                    ));
                }
                Some(p) => children[p].push(i),
                None => {}
            }
            if !j.offset.iter().all(|c| c.is_finite()) {
                return Err(invalid(
                    &j.name,
                    "offset",
                    format!("non-finite offset {:?}", j.offset),
                ));
            }
            if !j.rest.coords.iter().all(|c| c.is_finite()) {
                return Err(invalid(&j.name, "rest", "non-finite rest rotation".into()));
            }
            j.kind
                .validate()
                .map_err(|(field, message)| invalid(&j.name, field, message))?;
            if let Some(b) = &j.body {
                let c = &b.capsule;
                let finite = c.start.iter().chain(c.end.iter()).all(|x| x.is_finite());
                if !(finite && c.radius.is_finite() && c.radius >= 0.0) {
                    return Err(invalid(&j.name, "body", format!("invalid capsule {c:?}")));
                }
                if !(b.mass.is_finite() && b.mass >= 0.0) {
                    return Err(invalid(
                        &j.name,
                        "mass",
                        format!("mass must be finite and >= 0, got {}", b.mass),
                    ));
                }
            }
        }
        // Masses that are each finite can still overflow in a sum.
        let mut total_mass = 0.0_f64;
        for j in &joints {
            total_mass += j.body.as_ref().map_or(0.0, |b| b.mass);
            if !total_mass.is_finite() {
                return Err(invalid(
                    &j.name,
                    "mass",
                    "the total mass up to this joint overflows (is not finite)".into(),
                ));
            }
        }
        let mut param_offsets = Vec::with_capacity(joints.len());
        let mut dof = 0;
        for j in &joints {
            param_offsets.push(dof);
            dof += j.kind.dof();
        }
        Ok(Self {
            joints,
            param_offsets,
            dof,
            children,
        })
    }

    pub fn joints(&self) -> &[Joint] {
        &self.joints
    }

    pub fn joint(&self, index: usize) -> &Joint {
        &self.joints[index]
    }

    pub fn len(&self) -> usize {
        self.joints.len()
    }

    pub fn is_empty(&self) -> bool {
        self.joints.is_empty()
    }

    /// Total number of pose parameters.
    pub fn dof(&self) -> usize {
        self.dof
    }

    pub fn children(&self, joint: usize) -> &[usize] {
        &self.children[joint]
    }

    /// Index of the named joint.
    pub fn find(&self, name: &str) -> Result<usize> {
        self.joints
            .iter()
            .position(|j| j.name == name)
            .ok_or_else(|| SkeletonError::UnknownJoint(name.to_string()))
    }

    /// Range of the pose vector holding joint `j`'s parameters.
    pub fn param_range(&self, joint: usize) -> std::ops::Range<usize> {
        let o = self.param_offsets[joint];
        o..o + self.joints[joint].kind.dof()
    }

    /// The rest pose: every parameter zero (every joint at its placement).
    pub fn rest_pose(&self) -> Vec<f64> {
        vec![0.0; self.dof]
    }

    /// Checks a pose's length and that every value is finite.
    pub fn check_pose(&self, pose: &[f64]) -> Result<()> {
        if pose.len() != self.dof {
            return Err(SkeletonError::InvalidPose(format!(
                "expected {} parameters, got {}",
                self.dof,
                pose.len()
            )));
        }
        if let Some(i) = pose.iter().position(|x| !x.is_finite()) {
            let j = (0..self.len())
                .rev()
                .find(|&j| self.param_offsets[j] <= i)
                .unwrap_or(0);
            return Err(SkeletonError::InvalidPose(format!(
                "parameter {i} (joint '{}') is {}",
                self.joints[j].name, pose[i]
            )));
        }
        Ok(())
    }

    /// Is every joint within its limits?
    pub fn within_limits(&self, pose: &[f64]) -> bool {
        self.joints
            .iter()
            .enumerate()
            .all(|(j, joint)| joint.kind.within_limits(&pose[self.param_range(j)]))
    }

    /// Names of the joints outside their limits.
    pub fn limit_violations(&self, pose: &[f64]) -> Vec<&str> {
        self.joints
            .iter()
            .enumerate()
            .filter(|(j, joint)| !joint.kind.within_limits(&pose[self.param_range(*j)]))
            .map(|(_, joint)| joint.name.as_str())
            .collect()
    }

    /// Projects every joint onto its limits.
    pub fn clamp_to_limits(&self, pose: &mut [f64]) {
        for (j, joint) in self.joints.iter().enumerate() {
            let r = self.param_range(j);
            joint.kind.clamp_to_limits(&mut pose[r]);
        }
    }

    /// Single-pose forward kinematics into `world` (`len() == self.len()`).
    /// The pose length is the caller's contract (see [`Skeleton::check_pose`]).
    #[inline]
    pub fn forward_kinematics_into(&self, pose: &[f64], world: &mut [Isometry3<f64>]) {
        debug_assert_eq!(pose.len(), self.dof);
        debug_assert_eq!(world.len(), self.joints.len());
        for (j, joint) in self.joints.iter().enumerate() {
            let o = self.param_offsets[j];
            let local = joint.placement() * joint.kind.motion(&pose[o..o + joint.kind.dof()]);
            world[j] = match joint.parent {
                Some(p) => world[p] * local,
                None => local,
            };
        }
    }

    /// Single-pose forward kinematics, checking the pose first and the
    /// result after: finite but huge offsets or parameters whose transforms
    /// overflow are an error naming the first joint whose world transform is
    /// not finite, never a silent NaN/inf.
    pub fn forward_kinematics(&self, pose: &[f64]) -> Result<Vec<Isometry3<f64>>> {
        self.check_pose(pose)?;
        let mut world = vec![Isometry3::identity(); self.len()];
        self.forward_kinematics_into(pose, &mut world);
        self.check_world(&world)?;
        Ok(world)
    }

    /// Checks that world transforms (from [`Self::forward_kinematics_into`])
    /// are finite; the error names the first joint that is not.
    pub fn check_world(&self, world: &[Isometry3<f64>]) -> Result<()> {
        let finite = |w: &Isometry3<f64>| {
            w.translation.vector.iter().all(|x| x.is_finite())
                && w.rotation.coords.iter().all(|x| x.is_finite())
        };
        match world.iter().position(|w| !finite(w)) {
            None => Ok(()),
            Some(j) => Err(SkeletonError::InvalidPose(format!(
                "forward kinematics overflows at joint '{}' (world position {:?}): offsets or pose values are too large",
                self.joints.get(j).map_or("?", |x| x.name.as_str()),
                world[j].translation.vector.as_slice()
            ))),
        }
    }

    /// Total mass of all bodies, kg.
    pub fn total_mass(&self) -> f64 {
        self.joints
            .iter()
            .filter_map(|j| j.body.as_ref())
            .map(|b| b.mass)
            .sum()
    }

    /// Centre of mass from world transforms: the mass-weighted mean of the
    /// capsule centres (SMC-IK §6.1). Falls back to the mean joint position
    /// when the skeleton has no mass at all.
    pub fn centre_of_mass(&self, world: &[Isometry3<f64>]) -> Point3<f64> {
        let mut sum = Vector3::zeros();
        let mut total = 0.0;
        for (joint, w) in self.joints.iter().zip(world) {
            if let Some(b) = &joint.body
                && b.mass > 0.0
            {
                sum += (w * Point3::from(b.capsule.centre())).coords * b.mass;
                total += b.mass;
            }
        }
        if total > 0.0 {
            Point3::from(sum / total)
        } else {
            let n = world.len().max(1) as f64;
            Point3::from(
                world
                    .iter()
                    .map(|w| w.translation.vector)
                    .sum::<Vector3<f64>>()
                    / n,
            )
        }
    }

    /// Joints without children: end sites and tips, the usual end effectors.
    pub fn leaves(&self) -> Vec<usize> {
        (0..self.len())
            .filter(|&j| self.children[j].is_empty())
            .collect()
    }
}

/// Incremental construction by joint name, for presets and importers.
#[derive(Default)]
pub struct SkeletonBuilder {
    joints: Vec<Joint>,
}

impl SkeletonBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a joint under `parent` (by name; `None` for the root) and
    /// returns its index. An unknown parent name is reported by [`Self::build`].
    pub fn joint(
        &mut self,
        name: &str,
        parent: Option<&str>,
        offset: [f64; 3],
        kind: JointKind,
    ) -> &mut Joint {
        let parent = parent.map(|p| {
            self.joints
                .iter()
                .position(|j| j.name == p)
                .unwrap_or(usize::MAX)
        });
        self.joints
            .push(Joint::new(name, parent, Vector3::from(offset), kind));
        self.joints.last_mut().expect("just pushed")
    }

    pub fn build(self) -> Result<Skeleton> {
        if let Some(j) = self.joints.iter().find(|j| j.parent == Some(usize::MAX)) {
            return Err(SkeletonError::InvalidJoint {
                joint: j.name.clone(),
                field: "parent",
                message: "parent joint not found (add parents before children)".into(),
            });
        }
        Skeleton::new(self.joints)
    }
}

impl Joint {
    /// Attaches a capsule body from the joint origin to `end` (joint frame).
    pub fn with_bone(
        &mut self,
        end: [f64; 3],
        radius: f64,
        part: BodyPart,
        mass: f64,
    ) -> &mut Self {
        self.with_capsule([0.0; 3], end, radius, part, mass)
    }

    /// Attaches an arbitrary capsule body.
    pub fn with_capsule(
        &mut self,
        start: [f64; 3],
        end: [f64; 3],
        radius: f64,
        part: BodyPart,
        mass: f64,
    ) -> &mut Self {
        self.body = Some(Body {
            capsule: Capsule::new(Vector3::from(start), Vector3::from(end), radius),
            part,
            mass,
        });
        self
    }
}

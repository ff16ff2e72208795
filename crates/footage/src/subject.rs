//! The subject: the CMU hierarchy of the walk clip proportioned by a
//! [`Build`], and its posing from a [`PoseSpec`] — bones
//! aimed by the shortest rotation from their parent frame, legs by two-bone
//! IK to planted ankles.

use nalgebra::{UnitQuaternion, Vector3};
use skeleton::Skeleton;
use vision::{Result, VisionError};

use crate::moves::{ARMS_DOWN, arm_dir};
use crate::options::Build;

/// Joint indices of one side (0 = right, 1 = left).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Side {
    pub(crate) shoulder: usize,
    pub(crate) elbow: usize,
    pub(crate) wrist: usize,
    pub(crate) hand: usize,
    pub(crate) thumb_end: usize,
    pub(crate) hip: usize,
    pub(crate) knee: usize,
    pub(crate) ankle: usize,
    pub(crate) toe: usize,
    pub(crate) toe_end: usize,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Ids {
    pub(crate) hips: usize,
    pub(crate) chest: usize,
    pub(crate) chest2: usize,
    pub(crate) neck: usize,
    pub(crate) head: usize,
    pub(crate) head_end: usize,
    pub(crate) side: [Side; 2],
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Role {
    Root,
    Spine(f64),
    Neck,
    Head,
    Upper(usize),
    Fore(usize),
    Thigh(usize),
    Shank(usize),
    Foot(usize),
    Follow,
}

/// Outward sign of side `s` along the body's `x` (its left).
pub(crate) fn outward(s: usize) -> f64 {
    if s == 0 { -1.0 } else { 1.0 }
}

#[derive(Clone, Debug)]
pub(crate) struct Subject {
    pub(crate) skeleton: Skeleton,
    pub(crate) ids: Ids,
    roles: Vec<Role>,
    /// Unit bone direction of the segment each aimed joint carries, in its frame.
    bone: Vec<Vector3<f64>>,
    /// Ankle height above the floor when standing, metres.
    pub(crate) ankle_height: f64,
    pub(crate) thigh: f64,
    pub(crate) shank: f64,
    /// Leg length relative to the CMU clip's.
    pub(crate) leg_ratio: f64,
    /// Linear size of the drawn body relative to 1.75 m.
    pub(crate) size: f64,
}

pub(crate) fn find(skel: &Skeleton, name: &str) -> Result<usize> {
    Ok(skel.find(name)?)
}

impl Subject {
    pub(crate) fn new(cmu: &Skeleton, build: &Build) -> Result<Self> {
        let unit = Self::proportioned(cmu, build, 1.0)?;
        let stand = unit.stand_spec(Vector3::zeros(), 0.0);
        let pose = unit.pose_from_spec(&stand, &unit.skeleton.rest_pose());
        let world = unit.skeleton.forward_kinematics(&pose)?;
        let top = world[unit.ids.head_end].translation.y + 0.012;
        let scale = build.height / top;
        let mut s = Self::proportioned(cmu, build, scale)?;
        let cmu_leg = |name: &str| -> Result<f64> { Ok(cmu.joint(find(cmu, name)?).offset.norm()) };
        let cmu_len = cmu_leg("LeftKnee")? + cmu_leg("LeftAnkle")?;
        s.leg_ratio = (s.thigh + s.shank) / cmu_len;
        s.size = build.height / 1.75;
        Ok(s)
    }

    pub(crate) fn proportioned(cmu: &Skeleton, b: &Build, k: f64) -> Result<Self> {
        let mut joints = cmu.joints().to_vec();
        for j in &mut joints {
            let o = &mut j.offset;
            match j.name.as_str() {
                "LeftHip" | "RightHip" => o.x *= b.hips,
                "LeftKnee" | "RightKnee" | "LeftAnkle" | "RightAnkle" => *o *= b.legs,
                "Chest" | "Chest2" => *o *= b.torso,
                "Neck" => *o *= b.neck,
                "Head" | "Head_end" => *o *= b.head,
                "LeftShoulder" | "RightShoulder" => {
                    o.x *= b.shoulders;
                    o.y *= b.torso;
                }
                "LeftElbow" | "RightElbow" | "LeftWrist" | "RightWrist" => *o *= b.arms,
                n if n.contains("Fingers") || n.contains("Thumb") => *o *= b.hands,
                _ => {}
            }
            *o *= k;
            j.body = None;
        }
        let skeleton = Skeleton::new(joints)?;
        let side = |p: &str, q: &str| -> Result<Side> {
            Ok(Side {
                shoulder: find(&skeleton, &format!("{p}Shoulder"))?,
                elbow: find(&skeleton, &format!("{p}Elbow"))?,
                wrist: find(&skeleton, &format!("{p}Wrist"))?,
                hand: find(&skeleton, &format!("{}hand", q.to_ascii_lowercase()))?,
                thumb_end: find(&skeleton, &format!("{q}Thumb_end"))?,
                hip: find(&skeleton, &format!("{p}Hip"))?,
                knee: find(&skeleton, &format!("{p}Knee"))?,
                ankle: find(&skeleton, &format!("{p}Ankle"))?,
                toe: find(&skeleton, &format!("{p}Toe"))?,
                toe_end: find(&skeleton, &format!("{p}Toe_end"))?,
            })
        };
        let ids = Ids {
            hips: find(&skeleton, "Hips")?,
            chest: find(&skeleton, "Chest")?,
            chest2: find(&skeleton, "Chest2")?,
            neck: find(&skeleton, "Neck")?,
            head: find(&skeleton, "Head")?,
            head_end: find(&skeleton, "Head_end")?,
            side: [side("Right", "R")?, side("Left", "L")?],
        };
        if ids.hips != 0 {
            return Err(VisionError::parameter(
                "walk clip",
                "root",
                "the root joint must be Hips (CMU hierarchy)",
            ));
        }
        let lowerback = find(&skeleton, "lowerback")?;
        let mut roles = vec![Role::Follow; skeleton.len()];
        let mut bone = vec![Vector3::y(); skeleton.len()];
        roles[0] = Role::Root;
        roles[lowerback] = Role::Spine(1.0 / 3.0);
        roles[ids.chest] = Role::Spine(2.0 / 3.0);
        roles[ids.chest2] = Role::Spine(1.0);
        roles[ids.neck] = Role::Neck;
        roles[ids.head] = Role::Head;
        let dir = |child: usize| skeleton.joint(child).offset.normalize();
        for (s, l) in ids.side.iter().enumerate() {
            roles[l.shoulder] = Role::Upper(s);
            bone[l.shoulder] = dir(l.elbow);
            roles[l.elbow] = Role::Fore(s);
            bone[l.elbow] = dir(l.wrist);
            roles[l.hip] = Role::Thigh(s);
            bone[l.hip] = dir(l.knee);
            roles[l.knee] = Role::Shank(s);
            bone[l.knee] = dir(l.ankle);
            roles[l.ankle] = Role::Foot(s);
        }
        let l = ids.side[1];
        let thigh = skeleton.joint(l.knee).offset.norm();
        let shank = skeleton.joint(l.ankle).offset.norm();
        Ok(Self {
            skeleton,
            ids,
            roles,
            bone,
            ankle_height: 0.075 * k,
            thigh,
            shank,
            leg_ratio: 1.0,
            size: 1.0,
        })
    }

    /// Offset of side `s`'s hip joint from the root, root frame.
    fn hip_offset(&self, s: usize) -> Vector3<f64> {
        let hip = self.ids.side[s].hip;
        let parent = self.skeleton.joint(hip).parent.unwrap_or(0);
        self.skeleton.joint(parent).offset + self.skeleton.joint(hip).offset
    }

    /// Standing upright at `spot` (x, z; y ignored) facing `yaw`, arms down
    /// 10° from the body, feet under the hips, knees almost straight.
    pub(crate) fn stand_spec(&self, spot: Vector3<f64>, yaw: f64) -> PoseSpec {
        let ry = yaw_rot(yaw);
        let reach = 0.998 * (self.thigh + self.shank);
        let mut ankles = [Vector3::zeros(); 2];
        let mut drop = 0.0;
        for (s, ankle) in ankles.iter_mut().enumerate() {
            let h = self.hip_offset(s);
            let side = Vector3::new(h.x + outward(s) * 0.02 * self.size, 0.0, h.z - 0.01);
            let vertical = (reach * reach - 0.02f64.powi(2)).sqrt();
            drop = vertical - h.y;
            *ankle = spot + ry * side;
            ankle.y = self.ankle_height;
        }
        let root = Vector3::new(spot.x, self.ankle_height + drop, spot.z);
        PoseSpec {
            root,
            yaw,
            pelvis_roll: 0.0,
            chest_yaw: 0.0,
            chest_pitch: 0.0,
            chest_roll: 0.0,
            head_yaw: 0.0,
            head_pitch: 0.0,
            upper: [arm_dir(0, ARMS_DOWN.0), arm_dir(1, ARMS_DOWN.0)],
            fore: [arm_dir(0, ARMS_DOWN.1), arm_dir(1, ARMS_DOWN.1)],
            ankles,
            foot_yaw: [yaw; 2],
        }
    }

    /// The pose parameters of `spec`, Euler angles continuous with `prev`.
    pub(crate) fn pose_from_spec(&self, spec: &PoseSpec, prev: &[f64]) -> Vec<f64> {
        let skel = &self.skeleton;
        let n = skel.len();
        let mut rot = vec![UnitQuaternion::identity(); n];
        let mut pos = vec![Vector3::zeros(); n];
        let mut params = prev.to_vec();
        let r0 = yaw_rot(spec.yaw) * axis_rot(Vector3::z_axis(), spec.pelvis_roll);
        let chest = yaw_rot(spec.yaw + spec.chest_yaw)
            * axis_rot(Vector3::x_axis(), spec.chest_pitch)
            * axis_rot(Vector3::z_axis(), spec.chest_roll);
        let head = axis_rot(Vector3::y_axis(), spec.head_yaw)
            * axis_rot(Vector3::x_axis(), spec.head_pitch);
        let half_head = UnitQuaternion::identity().slerp(&head, 0.5);
        let pole = yaw_rot(spec.yaw) * Vector3::z();
        let mut shank_dir = [Vector3::y(); 2];
        for j in 0..n {
            let joint = skel.joint(j);
            let (prot, ppos) = match joint.parent {
                Some(p) => (rot[p], pos[p]),
                None => (UnitQuaternion::identity(), Vector3::zeros()),
            };
            pos[j] = if j == 0 {
                spec.root
            } else {
                ppos + prot * joint.offset
            };
            rot[j] = match self.roles[j] {
                Role::Root => r0,
                Role::Spine(f) => slerp(&r0, &chest, f),
                Role::Neck => chest * half_head,
                Role::Head => chest * head,
                Role::Upper(s) => aim(&prot, &self.bone[j], &(chest * spec.upper[s])),
                Role::Fore(s) => aim(&prot, &self.bone[j], &(chest * spec.fore[s])),
                Role::Thigh(s) => {
                    let (d1, d2) =
                        two_bone(&pos[j], &spec.ankles[s], self.thigh, self.shank, &pole);
                    shank_dir[s] = d2;
                    aim(&prot, &self.bone[j], &d1)
                }
                Role::Shank(s) => aim(&prot, &self.bone[j], &shank_dir[s]),
                Role::Foot(s) => yaw_rot(spec.foot_yaw[s]),
                Role::Follow => prot,
            };
            let range = skel.param_range(j);
            if j == 0 {
                params[range.start..range.start + 3].copy_from_slice(spec.root.as_slice());
            }
            let local = prot.inverse() * rot[j];
            joint.kind.set_rotation(&local, &mut params[range]);
        }
        params
    }
}

/// Rotation about the vertical by `yaw` (0 faces `+z`, π/2 faces `+x`).
pub(crate) fn yaw_rot(yaw: f64) -> UnitQuaternion<f64> {
    UnitQuaternion::from_axis_angle(&Vector3::y_axis(), yaw)
}

pub(crate) fn axis_rot(axis: nalgebra::Unit<Vector3<f64>>, angle: f64) -> UnitQuaternion<f64> {
    UnitQuaternion::from_axis_angle(&axis, angle)
}

pub(crate) fn slerp(
    a: &UnitQuaternion<f64>,
    b: &UnitQuaternion<f64>,
    t: f64,
) -> UnitQuaternion<f64> {
    a.try_slerp(b, t, 1e-12)
        .unwrap_or(if t < 0.5 { *a } else { *b })
}

/// `reference` turned by the shortest rotation that takes the bone
/// (`bone`, in the joint's frame) onto the world direction `target`.
fn aim(
    reference: &UnitQuaternion<f64>,
    bone: &Vector3<f64>,
    target: &Vector3<f64>,
) -> UnitQuaternion<f64> {
    let from = reference * bone;
    let swing = UnitQuaternion::rotation_between(&from, target).unwrap_or_else(|| {
        // Opposite directions: half a turn about any perpendicular axis.
        let axis = from
            .cross(&Vector3::z())
            .try_normalize(1e-9)
            .unwrap_or(Vector3::x());
        UnitQuaternion::from_axis_angle(&nalgebra::Unit::new_normalize(axis), std::f64::consts::PI)
    });
    swing * reference
}

/// Two-bone IK: unit directions of the upper and lower bone from `root`
/// towards `target`, the middle joint bending towards `pole`.
fn two_bone(
    root: &Vector3<f64>,
    target: &Vector3<f64>,
    l1: f64,
    l2: f64,
    pole: &Vector3<f64>,
) -> (Vector3<f64>, Vector3<f64>) {
    let v = target - root;
    let dist = v.norm().max(1e-9);
    let dir = v / dist;
    let d = dist.clamp((l1 - l2).abs() + 1e-6, l1 + l2 - 1e-6);
    let cos_a = ((l1 * l1 + d * d - l2 * l2) / (2.0 * l1 * d)).clamp(-1.0, 1.0);
    let sin_a = (1.0 - cos_a * cos_a).sqrt();
    let perp = (pole - dir * dir.dot(pole))
        .try_normalize(1e-9)
        .unwrap_or_else(|| dir.cross(&Vector3::x()).normalize());
    let knee = root + (dir * cos_a + perp * sin_a) * l1;
    let end = root + dir * d;
    (
        (knee - root) / l1,
        (end - knee).try_normalize(1e-12).unwrap_or(dir),
    )
}

/// The posing targets of a frame (world frame unless said otherwise).
#[derive(Clone, Debug)]
pub(crate) struct PoseSpec {
    pub(crate) root: Vector3<f64>,
    pub(crate) yaw: f64,
    pub(crate) pelvis_roll: f64,
    pub(crate) chest_yaw: f64,
    pub(crate) chest_pitch: f64,
    pub(crate) chest_roll: f64,
    pub(crate) head_yaw: f64,
    pub(crate) head_pitch: f64,
    /// Upper-arm and forearm directions in the chest frame (x = subject's left).
    pub(crate) upper: [Vector3<f64>; 2],
    pub(crate) fore: [Vector3<f64>; 2],
    pub(crate) ankles: [Vector3<f64>; 2],
    pub(crate) foot_yaw: [f64; 2],
}

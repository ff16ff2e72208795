//! Walking: a gait cycle of CMU 131_01 found in its steady walk, looped
//! with the root's advance accumulated, turned, scaled by the leg length,
//! lifted onto the floor, with arms swinging against the thighs.

use nalgebra::{UnitQuaternion, Vector3};
use skeleton::{Bvh, Skeleton};
use vision::{Result, VisionError};

use crate::subject::{Ids, Subject, axis_rot, slerp, yaw_rot};

/// A gait cycle of the walk clip: frames `start..start + len` (the pose at
/// `start + len` is close to the one at `start`), the root's horizontal
/// advance over it, and the mean forward angle of each thigh.
#[derive(Clone, Debug)]
pub(crate) struct Cycle {
    start: usize,
    len: usize,
    advance: Vector3<f64>,
    thigh_mean: [f64; 2],
}

/// Frames of CMU 131_01 searched for a gait cycle: steady walking, before
/// the clip's kick and gestures (≈ 700 on).
const CYCLE_SEARCH: (usize, usize) = (545, 700);

/// Forward angle (rad) of side `s`'s thigh in the pelvis frame of `pose`.
fn thigh_angle(clip: &Bvh, ids: &Ids, s: usize, pose: &[f64]) -> f64 {
    let skel = &clip.skeleton;
    let hip = ids.side[s].hip;
    let parent = skel.joint(hip).parent.unwrap_or(0);
    let rot = |j: usize| {
        skel.joint(j)
            .kind
            .rotation(&pose[skel.param_range(j)])
            .unwrap_or_default()
    };
    let bone = skel.joint(ids.side[s].knee).offset.normalize();
    let d = rot(parent) * rot(hip) * bone;
    d.z.atan2(-d.y)
}

/// Finds the gait cycle whose end pose is closest to its start pose
/// (squared joint-rotation angles plus root height), 0.8–1.3 s long.
pub(crate) fn find_cycle(clip: &Bvh, ids: &Ids) -> Result<Cycle> {
    let skel = &clip.skeleton;
    let hz = 1.0 / clip.frame_time;
    let (lo, hi) = CYCLE_SEARCH;
    if clip.frames.len() <= hi {
        return Err(VisionError::parameter(
            "walk clip",
            clip.frames.len(),
            format!("too short: the gait cycle is searched in frames {lo}..{hi} (CMU 131_01)"),
        ));
    }
    let quats: Vec<Vec<UnitQuaternion<f64>>> = (lo..=hi)
        .map(|f| {
            let p = clip.frames.pose(f);
            (1..skel.len())
                .map(|j| {
                    skel.joint(j)
                        .kind
                        .rotation(&p[skel.param_range(j)])
                        .unwrap_or_default()
                })
                .collect()
        })
        .collect();
    let (min_len, max_len) = ((0.8 * hz) as usize, (1.3 * hz) as usize);
    let mut best = (f64::INFINITY, lo, min_len);
    for a in lo..=hi {
        for len in min_len..=max_len {
            let b = a + len;
            if b > hi {
                break;
            }
            let (qa, qb) = (&quats[a - lo], &quats[b - lo]);
            let mut cost: f64 = qa.iter().zip(qb).map(|(x, y)| x.angle_to(y).powi(2)).sum();
            let dy = clip.frames.pose(a)[1] - clip.frames.pose(b)[1];
            cost += 100.0 * dy * dy;
            if cost < best.0 {
                best = (cost, a, len);
            }
        }
    }
    let (_, start, len) = best;
    let root = |f: usize| {
        let p = clip.frames.pose(f);
        Vector3::new(p[0], 0.0, p[2])
    };
    let mut thigh_mean = [0.0; 2];
    for (s, m) in thigh_mean.iter_mut().enumerate() {
        *m = (start..start + len)
            .map(|f| thigh_angle(clip, ids, s, clip.frames.pose(f)))
            .sum::<f64>()
            / len as f64;
    }
    Ok(Cycle {
        start,
        len,
        advance: root(start + len) - root(start),
        thigh_mean,
    })
}

/// The clip's gait cycle looped, turned to walk along `±x`, scaled by the
/// leg length, lifted onto the floor, with swinging arms.
pub(crate) struct Walk<'a> {
    pub(crate) clip: &'a Bvh,
    pub(crate) cycle: &'a Cycle,
    pub(crate) clip_ids: &'a Ids,
    pub(crate) yaw: f64,
    /// Walk time (s) whose root lands on `anchor`.
    pub(crate) anchor_time: f64,
    pub(crate) anchor: Vector3<f64>,
    pub(crate) leg_ratio: f64,
    pub(crate) lift: f64,
    /// The standing pose's local rotations of collar, shoulder and elbow.
    pub(crate) arm_rest: [[UnitQuaternion<f64>; 3]; 2],
    pub(crate) arm_joints: [[usize; 3]; 2],
}

impl<'a> Walk<'a> {
    pub(crate) fn new(
        clip: &'a Bvh,
        cycle: &'a Cycle,
        clip_ids: &'a Ids,
        subject: &Subject,
        stand_pose: &[f64],
        towards_plus_x: bool,
        (anchor_time, anchor): (f64, Vector3<f64>),
    ) -> Result<Self> {
        let heading = cycle.advance.x.atan2(cycle.advance.z);
        let want = if towards_plus_x {
            std::f64::consts::FRAC_PI_2
        } else {
            -std::f64::consts::FRAC_PI_2
        };
        let skel = &subject.skeleton;
        let local = |j: usize| {
            skel.joint(j)
                .kind
                .rotation(&stand_pose[skel.param_range(j)])
                .unwrap_or_default()
        };
        let mut arm_joints = [[0; 3]; 2];
        let mut arm_rest = [[UnitQuaternion::identity(); 3]; 2];
        for s in 0..2 {
            let l = &subject.ids.side[s];
            let collar = skel.joint(l.shoulder).parent.unwrap_or(0);
            arm_joints[s] = [collar, l.shoulder, l.elbow];
            arm_rest[s] = [local(collar), local(l.shoulder), local(l.elbow)];
        }
        let mut walk = Self {
            clip,
            cycle,
            clip_ids,
            yaw: want - heading,
            anchor_time,
            anchor,
            leg_ratio: subject.leg_ratio,
            lift: 0.0,
            arm_rest,
            arm_joints,
        };
        // Lift so that the lowest ankle over a cycle is at ankle height.
        let mut lowest = f64::INFINITY;
        let period = cycle.len as f64 * clip.frame_time;
        for i in 0..24 {
            let pose = walk.pose(i as f64 / 24.0 * period);
            let w = subject.skeleton.forward_kinematics(&pose)?;
            for side in &subject.ids.side {
                lowest = lowest.min(w[side.ankle].translation.y);
            }
        }
        walk.lift = subject.ankle_height - lowest;
        Ok(walk)
    }

    /// Metres a second along the path.
    pub(crate) fn speed(&self) -> f64 {
        self.cycle.advance.norm() * self.leg_ratio / (self.cycle.len as f64 * self.clip.frame_time)
    }

    /// Clip pose at `time` seconds into the looped cycle, and the root's
    /// unrolled horizontal position (clip frame).
    fn clip_pose(&self, time: f64) -> (Vec<f64>, Vector3<f64>) {
        let c = self.cycle;
        let f = (time / self.clip.frame_time).max(0.0);
        let laps = (f / c.len as f64).floor();
        let r = f - laps * c.len as f64;
        let i = c.start + (r.floor() as usize).min(c.len - 1);
        let pose = blend_pose(
            &self.clip.skeleton,
            self.clip.frames.pose(i),
            self.clip.frames.pose(i + 1),
            r - r.floor(),
        );
        let start = self.clip.frames.pose(c.start);
        let rel = Vector3::new(pose[0] - start[0], 0.0, pose[2] - start[2]) + c.advance * laps;
        (pose, rel)
    }

    /// The subject's pose at `time` seconds of walking.
    pub(crate) fn pose(&self, time: f64) -> Vec<f64> {
        let (mut pose, rel) = self.clip_pose(time);
        let (_, rel_anchor) = self.clip_pose(self.anchor_time);
        let r = yaw_rot(self.yaw);
        let placed = self.anchor + r * (rel - rel_anchor) * self.leg_ratio;
        let y = pose[1] * self.leg_ratio + self.lift;
        pose[..3].copy_from_slice(&[placed.x, y, placed.z]);
        let skel = &self.clip.skeleton;
        let root = &skel.joint(0).kind;
        let q = root.rotation(&pose[..6]).unwrap_or_default();
        root.set_rotation(&(r * q), &mut pose[..6]);
        // The clip's arms are stylised: swing them from the standing pose
        // against the thigh of the same side instead.
        for s in 0..2 {
            let thigh = thigh_angle(self.clip, self.clip_ids, s, &pose) - self.cycle.thigh_mean[s];
            let swing = 0.8 * thigh;
            let bend = 0.25 + 0.35 * (-swing).max(0.0);
            let [collar, shoulder, elbow] = self.arm_joints[s];
            let [qc, qs, qe] = self.arm_rest[s];
            let qs = axis_rot(Vector3::x_axis(), swing) * qs;
            let qe = axis_rot(Vector3::x_axis(), -bend) * qe;
            for (j, q) in [(collar, qc), (shoulder, qs), (elbow, qe)] {
                skel.joint(j)
                    .kind
                    .set_rotation(&q, &mut pose[skel.param_range(j)]);
            }
        }
        pose
    }
}

/// Per-joint slerp (translations: lerp) between two poses, written into a
/// copy of `a` so Euler angles stay continuous with it.
pub(crate) fn blend_pose(skel: &Skeleton, a: &[f64], b: &[f64], t: f64) -> Vec<f64> {
    let mut out = a.to_vec();
    for (j, joint) in skel.joints().iter().enumerate() {
        let r = skel.param_range(j);
        if r.is_empty() {
            continue;
        }
        if let (Some(qa), Some(qb)) = (
            joint.kind.rotation(&a[r.clone()]),
            joint.kind.rotation(&b[r.clone()]),
        ) {
            let q = slerp(&qa, &qb, t);
            if matches!(joint.kind, skeleton::JointKind::Free { .. }) {
                for k in 0..3 {
                    out[r.start + k] = a[r.start + k] + (b[r.start + k] - a[r.start + k]) * t;
                }
            }
            joint.kind.set_rotation(&q, &mut out[r]);
        }
    }
    out
}

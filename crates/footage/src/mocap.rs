//! The `move` phase from motion capture on another rig: CMU clips converted
//! to a Character-Creator skeleton (`CC_Base_*` joints, centimetres, 60 fps;
//! `assets/motions/cmu_cc_*.bvh`), retargeted onto the session's subject.
//!
//! A rig is not a body: the CC skeleton's bone lengths, joint frames and
//! twist bones are not the subject's. The retargeting therefore reads only
//! *directions and heights* from the clip's forward kinematics and poses
//! the subject through the same [`PoseSpec`] the keyframed moves use:
//!
//! - the pelvis' yaw and roll from the line between the thighs;
//! - the chest's rotation from the shoulder line (its `x`) and the
//!   `Spine02 → NeckTwist01` direction (its `y`), decomposed as
//!   `R_y(yaw + chest_yaw) · R_x(pitch) · R_z(roll)` ([`yxz`]);
//! - each upper arm and forearm as the unit direction `Upperarm → Forearm`
//!   and `Forearm → Hand` in that chest frame — so the subject's elbow angle
//!   is the clip's exactly, whatever the two rigs' arm lengths;
//! - the root's horizontal travel and the ankles relative to the hip,
//!   scaled by the ratio of the two rigs' leg lengths, the root's height by
//!   the ratio of their standing hip heights; the feet's yaw from
//!   `Foot → ToeBase`.
//!
//! The clip's yaw at its start is turned to face the camera, and its travel
//! is bounded (±1 m sideways, ±0.7 m in depth) so the subject stays in the
//! room and mostly in view. Frame 0 of these conversions is a T-pose the
//! conversion prepended; the motion starts at `start` seconds after it.

use std::path::Path;

use nalgebra::{Matrix3, Rotation3, UnitQuaternion, Vector3};
use skeleton::Bvh;
use vision::{Result, VisionError};

use crate::subject::{PoseSpec, Subject, outward};

/// Bound of the retargeted root's travel from the spot, metres (x, z).
const TRAVEL: [f64; 2] = [1.0, 0.7];

/// The clip's joints the retargeting reads.
#[derive(Clone, Copy, Debug)]
struct CcIds {
    hip: usize,
    spine: usize,
    neck: usize,
    /// Per side (0 right, 1 left, as [`Subject`]'s sides).
    thigh: [usize; 2],
    calf: [usize; 2],
    foot: [usize; 2],
    toe: [usize; 2],
    upperarm: [usize; 2],
    forearm: [usize; 2],
    hand: [usize; 2],
}

/// A motion-capture clip ready to drive the `move` phase.
#[derive(Clone, Debug)]
pub(crate) struct MocapMoves {
    /// World joint positions per clip frame, metres, from `start` on.
    frames: Vec<Vec<Vector3<f64>>>,
    frame_time: f64,
    ids: CcIds,
    /// Yaw of the pelvis in the first frame less the turn asked for (the
    /// clip is turned by `−yaw0` about the vertical, then faces the spot's yaw).
    yaw0: f64,
    /// Hip position in the first frame.
    hip0: Vector3<f64>,
    /// Lowest ankle height over the clip (the floor, for the ankles).
    floor: f64,
    /// Highest hip height above `floor` (standing straight).
    stand_hip: f64,
    /// Thigh + shank of the clip's rig, metres.
    leg: f64,
}

fn find(bvh: &Bvh, name: &str) -> Result<usize> {
    bvh.skeleton.find(name).map_err(|_| {
        VisionError::parameter(
            "moves clip",
            name,
            "the clip lacks this joint (a Character-Creator rig, CC_Base_* names, is expected)",
        )
    })
}

/// Yaw of a body whose left is `left` (0 faces `+z`).
fn yaw_of(left: &Vector3<f64>) -> f64 {
    let forward = left.cross(&Vector3::y());
    forward.x.atan2(forward.z)
}

/// `(a, b, c)` with `r = R_y(a) · R_x(b) · R_z(c)`.
fn yxz(r: &Matrix3<f64>) -> (f64, f64, f64) {
    let b = (-r[(1, 2)]).clamp(-1.0, 1.0).asin();
    let a = r[(0, 2)].atan2(r[(2, 2)]);
    let c = r[(1, 0)].atan2(r[(1, 1)]);
    (a, b, c)
}

impl MocapMoves {
    /// Loads `path` (centimetres, as the CC conversions are) from `start`
    /// seconds after its first frame (the T-pose), turned `yaw` radians from
    /// facing the camera.
    ///
    /// # Errors
    /// An unreadable clip, one without the CC joints, a `start` past its end.
    pub(crate) fn load(path: &Path, start: f64, yaw: f64) -> Result<Self> {
        let bvh = Bvh::load(path)?;
        let side = |s: usize, part: &str| find(&bvh, &format!("CC_Base_{}_{part}", ["R", "L"][s]));
        let both = |part: &str| -> Result<[usize; 2]> { Ok([side(0, part)?, side(1, part)?]) };
        let ids = CcIds {
            hip: find(&bvh, "CC_Base_Hip")?,
            spine: find(&bvh, "CC_Base_Spine02")?,
            neck: find(&bvh, "CC_Base_NeckTwist01")?,
            thigh: both("Thigh")?,
            calf: both("Calf")?,
            foot: both("Foot")?,
            toe: both("ToeBase")?,
            upperarm: both("Upperarm")?,
            forearm: both("Forearm")?,
            hand: both("Hand")?,
        };
        let frame_time = bvh.frame_time;
        if !(frame_time.is_finite() && frame_time > 0.0) {
            return Err(VisionError::parameter(
                "moves clip",
                frame_time,
                "frame time must be positive",
            ));
        }
        let first = 1 + (start / frame_time).round().max(0.0) as usize;
        let n = bvh.frames.len();
        if !(start.is_finite() && first + 2 <= n) {
            return Err(VisionError::parameter(
                "moves start",
                start,
                "must lie within the clip (after its T-pose frame)",
            ));
        }
        let mut frames = Vec::with_capacity(n - first);
        for f in first..n {
            let world = bvh.skeleton.forward_kinematics(bvh.frames.pose(f))?;
            frames.push(
                world
                    .iter()
                    .map(|w| w.translation.vector * 0.01)
                    .collect::<Vec<_>>(),
            );
        }
        let p0 = &frames[0];
        let yaw0 = yaw_of(&(p0[ids.thigh[1]] - p0[ids.thigh[0]])) - yaw;
        let hip0 = p0[ids.hip];
        let floor = frames
            .iter()
            .flat_map(|p| ids.foot.iter().map(move |&f| p[f].y))
            .fold(f64::INFINITY, f64::min);
        let stand_hip = frames
            .iter()
            .map(|p| p[ids.hip].y - floor)
            .fold(0.0, f64::max);
        let rest = bvh.skeleton.forward_kinematics(&bvh.skeleton.rest_pose())?;
        let len = |a: usize, b: usize| {
            (rest[a].translation.vector - rest[b].translation.vector).norm() * 0.01
        };
        let leg = len(ids.thigh[1], ids.calf[1]) + len(ids.calf[1], ids.foot[1]);
        Ok(Self {
            frames,
            frame_time,
            ids,
            yaw0,
            hip0,
            floor,
            stand_hip,
            leg,
        })
    }

    /// Seconds of motion after `start`.
    pub(crate) fn duration(&self) -> f64 {
        (self.frames.len() - 1) as f64 * self.frame_time
    }

    /// The subject's pose spec at `t` seconds into the motion; `stand` is
    /// its standing spec at the spot, facing the camera.
    pub(crate) fn spec(&self, subject: &Subject, stand: &PoseSpec, t: f64) -> PoseSpec {
        let f = ((t / self.frame_time).round().max(0.0) as usize).min(self.frames.len() - 1);
        let turn = Rotation3::from_axis_angle(&Vector3::y_axis(), stand.yaw - self.yaw0);
        let p: Vec<Vector3<f64>> = self.frames[f].iter().map(|v| turn * v).collect();
        let ids = &self.ids;
        let scale = (subject.thigh + subject.shank) / self.leg;
        let hip0 = turn * self.hip0;
        let travel = (p[ids.hip] - hip0) * scale;
        let height = stand.root.y - subject.ankle_height;
        let root = Vector3::new(
            stand.root.x + travel.x.clamp(-TRAVEL[0], TRAVEL[0]),
            subject.ankle_height + (p[ids.hip].y - self.floor) / self.stand_hip * height,
            stand.root.z + travel.z.clamp(-TRAVEL[1], TRAVEL[1]),
        );
        let hips = p[ids.thigh[1]] - p[ids.thigh[0]];
        let yaw = yaw_of(&hips);
        let pelvis_roll = (hips.y / hips.norm().max(1e-9)).clamp(-1.0, 1.0).asin();
        let x = (p[ids.upperarm[1]] - p[ids.upperarm[0]]).normalize();
        let up = p[ids.neck] - p[ids.spine];
        let y = (up - x * x.dot(&up)).normalize();
        let chest = Matrix3::from_columns(&[x, y, x.cross(&y)]);
        let (a, pitch, roll) = yxz(&chest);
        let chest_rot = UnitQuaternion::from_matrix(&chest);
        let local = |from: usize, to: usize| chest_rot.inverse() * (p[to] - p[from]).normalize();
        let mut ankles = [Vector3::zeros(); 2];
        let mut foot_yaw = [yaw; 2];
        for s in 0..2 {
            let a3 = (p[ids.foot[s]] - p[ids.hip]) * scale;
            ankles[s] = Vector3::new(
                root.x + a3.x,
                subject.ankle_height + (p[ids.foot[s]].y - self.floor) * scale,
                root.z + a3.z,
            );
            let toe = p[ids.toe[s]] - p[ids.foot[s]];
            if toe.x.hypot(toe.z) > 0.3 * toe.norm() {
                foot_yaw[s] = toe.x.atan2(toe.z);
            }
            // The subject's ankle must stay out of the other leg's way even
            // where the two rigs' hip widths differ.
            let side = outward(s)
                * (ankles[s] - root).dot(
                    &(UnitQuaternion::from_axis_angle(&Vector3::y_axis(), yaw) * Vector3::x()),
                );
            if side < 0.02 {
                let push = UnitQuaternion::from_axis_angle(&Vector3::y_axis(), yaw)
                    * Vector3::x()
                    * (outward(s) * (0.02 - side));
                ankles[s] += push;
            }
        }
        PoseSpec {
            root,
            yaw,
            pelvis_roll,
            chest_yaw: a - yaw,
            chest_pitch: pitch,
            chest_roll: roll,
            head_yaw: 0.0,
            head_pitch: 0.0,
            upper: [
                local(ids.upperarm[0], ids.forearm[0]),
                local(ids.upperarm[1], ids.forearm[1]),
            ],
            fore: [
                local(ids.forearm[0], ids.hand[0]),
                local(ids.forearm[1], ids.hand[1]),
            ],
            ankles,
            foot_yaw,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FootageOptions, Phase, Preset, SessionRenderer};

    fn clip() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/motions/cmu_cc_006_15.bvh")
    }

    /// The subject's elbow angles in the `move` phase are the clip's, frame
    /// for frame (after the blend from the stand), whatever the two rigs'
    /// bone lengths: the retargeting copies directions.
    #[test]
    fn retargeted_elbows_bend_as_the_clip() {
        let mut o = FootageOptions::new(Preset::B);
        (o.width, o.height) = (64, 48);
        o.moves_clip = Some(clip());
        o.moves_start = 0.5;
        o.timing.moves = 2.0;
        let session = SessionRenderer::new(&o).unwrap();
        let moves = session
            .phases()
            .iter()
            .find(|p| p.phase == Phase::Move)
            .unwrap();
        let blend = ((crate::plan::MOCAP_BLEND * 30.0).round() as usize).max(1);
        assert_eq!(moves.end - moves.start, blend + 60);

        let m = MocapMoves::load(&clip(), 0.5, 0.0).unwrap();
        let angle = |a: Vector3<f64>, b: Vector3<f64>, c: Vector3<f64>| {
            (a - b).angle(&(c - b)).to_degrees()
        };
        let skel = session.skeleton();
        let id = |n: &str| skel.find(n).unwrap();
        let mut checked = 0;
        for k in 0..60 {
            let world = skel
                .forward_kinematics(session.pose(moves.start + blend + k))
                .unwrap();
            let p = |n: &str| world[id(n)].translation.vector;
            let f = ((k as f64 / 30.0) / m.frame_time).round() as usize;
            let cc = &m.frames[f];
            for (s, side) in ["Right", "Left"].iter().enumerate() {
                let ours = angle(
                    p(&format!("{side}Shoulder")),
                    p(&format!("{side}Elbow")),
                    p(&format!("{side}Wrist")),
                );
                let theirs = angle(
                    cc[m.ids.upperarm[s]],
                    cc[m.ids.forearm[s]],
                    cc[m.ids.hand[s]],
                );
                assert!(
                    (ours - theirs).abs() < 0.5,
                    "frame {k} {side}: {ours:.2}° vs the clip's {theirs:.2}°"
                );
                checked += 1;
            }
        }
        assert_eq!(checked, 120);
    }

    #[test]
    fn a_clip_of_another_rig_is_refused_by_name() {
        let walk =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/motions/cmu_131_01_walk.bvh");
        let e = MocapMoves::load(&walk, 0.0, 0.0).unwrap_err().to_string();
        assert!(e.contains("CC_Base_Hip"), "{e}");
        let e = MocapMoves::load(&clip(), 1e6, 0.0).unwrap_err().to_string();
        assert!(e.contains("moves start"), "{e}");
    }

    #[test]
    fn yxz_inverts_the_composition() {
        for (a, b, c) in [(0.3, -0.2, 0.5), (-2.5, 0.7, -1.1), (1.0, 0.0, 0.0)] {
            let r = Rotation3::from_axis_angle(&Vector3::y_axis(), a)
                * Rotation3::from_axis_angle(&Vector3::x_axis(), b)
                * Rotation3::from_axis_angle(&Vector3::z_axis(), c);
            let (a2, b2, c2) = yxz(r.matrix());
            assert!((a - a2).abs() < 1e-12 && (b - b2).abs() < 1e-12 && (c - c2).abs() < 1e-12);
        }
    }
}

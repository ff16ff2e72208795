//! Ground truth from CMU motion capture (BVH): the thesis' tracking points
//! (hip, knees, feet; PHYSPRIOR Ch. 4) per frame, resampled to the video
//! rate, in a world whose ground plane is `y = 0`.
//!
//! The "hip" point is the midpoint of the two hip joints (the root of the
//! kinematic model), the "foot" point is the ankle joint. The ground height
//! is the 5th percentile of the lower ankle's height minus the model's
//! ankle height above the heel ([`crate::kinematics::ANKLE_HEIGHT`]).

use std::path::Path;

use nalgebra::Point3;
use skeleton::Bvh;

use crate::error::{Result, WalkerError};
use crate::kinematics::ANKLE_HEIGHT;

/// Index of the tracking points, in the order of [`POINT_NAMES`].
pub const HIP: usize = 0;
/// Left knee.
pub const L_KNEE: usize = 1;
/// Left foot (ankle).
pub const L_FOOT: usize = 2;
/// Right knee.
pub const R_KNEE: usize = 3;
/// Right foot (ankle).
pub const R_FOOT: usize = 4;
/// Number of tracking points.
pub const POINTS: usize = 5;
/// Names of the tracking points.
pub const POINT_NAMES: [&str; POINTS] = ["hip", "l_knee", "l_foot", "r_knee", "r_foot"];

/// One frame of ground truth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TruthFrame {
    /// The five tracking points (world, metres).
    pub points: [Point3<f64>; POINTS],
    /// Left and right hip joints.
    pub hips: [Point3<f64>; 2],
    /// Left and right toes.
    pub toes: [Point3<f64>; 2],
}

/// A clip's tracking points at the chosen frame rate.
#[derive(Debug, Clone)]
pub struct TruthClip {
    /// Seconds between frames.
    pub frame_time: f64,
    /// The frames.
    pub frames: Vec<TruthFrame>,
    /// The height subtracted so that the ground is `y = 0`.
    pub ground_height: f64,
}

fn joint(bvh: &Bvh, name: &str) -> Result<usize> {
    bvh.skeleton
        .find(name)
        .map_err(|_| WalkerError::Mocap(format!("the clip has no joint '{name}'")))
}

impl TruthClip {
    /// Centre (at 0.9 m height) and horizontal direction of the walk,
    /// from its first to its last hip position.
    pub fn walk_frame(&self) -> (Point3<f64>, nalgebra::Vector3<f64>) {
        let a = self.frames[0].points[0];
        let b = self.frames[self.len() - 1].points[0];
        let mid = Point3::new(0.5 * (a.x + b.x), 0.9, 0.5 * (a.z + b.z));
        let mut d = b - a;
        d.y = 0.0;
        (mid, d.normalize())
    }

    /// A 640×480 camera (vertical field of view 0.75 rad) `distance` m
    /// from the middle of the walk, `angle` rad from the perpendicular of
    /// the walking direction (0: the thesis' side view).
    ///
    /// # Errors
    /// [`WalkerError`] for a degenerate clip (no horizontal motion).
    pub fn side_camera(&self, angle: f64, distance: f64) -> Result<labels::Camera> {
        use nalgebra::Vector3;
        let (mid, d) = self.walk_frame();
        let side = Vector3::new(d.z, 0.0, -d.x);
        let (s, c) = angle.sin_cos();
        let dir = side * c - d * s;
        let eye = mid + dir * distance + Vector3::new(0.0, 0.1, 0.0);
        labels::Camera::looking_at(eye, mid, Vector3::y(), 0.75, 640, 480)
            .map_err(|e| WalkerError::Mocap(format!("camera for the walk: {e}")))
    }

    /// Frames where a foot (0 left, 1 right) begins a ground contact: the
    /// ankle within 4 cm of its lowest height and moving slower than
    /// 0.5 m/s horizontally.
    pub fn contact_onsets(&self, foot: usize) -> Vec<usize> {
        let k = if foot == 0 { 2 } else { 4 };
        let low = self
            .frames
            .iter()
            .map(|f| f.points[k].y)
            .fold(f64::INFINITY, f64::min);
        let mut on = Vec::new();
        let mut was = true;
        for f in 1..self.len() {
            let a = self.frames[f - 1].points[k];
            let b = self.frames[f].points[k];
            let speed = (b.x - a.x).hypot(b.z - a.z) / self.frame_time;
            let now = b.y < low + 0.04 && speed < 0.5;
            if now && !was {
                on.push(f);
            }
            was = now;
        }
        on
    }

    /// The clip's walk: the longest run of frames where the hip moves
    /// along z faster than 0.6 m/s at standing height, starting one frame
    /// before its first heel strike (where the walker's state, just before
    /// a collision, is well defined; the thesis initialised by hand near a
    /// known pose).
    ///
    /// # Errors
    /// [`WalkerError::Mocap`] when no run of more than 20 frames walks.
    pub fn walking_part(&self) -> Result<Self> {
        let lag = (0.1 / self.frame_time).round().max(1.0) as usize;
        let walking = |f: usize| {
            if f + lag >= self.len() {
                return false;
            }
            let a = self.frames[f].points[0];
            let b = self.frames[f + lag].points[0];
            (b.z - a.z).abs() / (lag as f64 * self.frame_time) > 0.6 && a.y > 0.7
        };
        let (mut best, mut start) = ((0, 0), None);
        for f in 0..=self.len() {
            match (f < self.len() && walking(f), start) {
                (true, None) => start = Some(f),
                (false, Some(s)) => {
                    if f - s > best.1 - best.0 {
                        best = (s, f);
                    }
                    start = None;
                }
                _ => {}
            }
        }
        let (first, last) = best;
        if last <= first + 20 {
            return Err(WalkerError::Mocap(format!(
                "walking span too short: frames {first}..{last}"
            )));
        }
        let mut clip = self.clone();
        clip.frames = self.frames[first..last].to_vec();
        let onset = (0..2)
            .filter_map(|foot| clip.contact_onsets(foot).first().copied())
            .min()
            .unwrap_or(1);
        clip.frames = clip.frames[onset.saturating_sub(1)..].to_vec();
        Ok(clip)
    }

    /// Loads a CMU BVH clip and keeps every `stride`-th frame from `first`
    /// (at most `count` frames).
    ///
    /// # Errors
    /// [`WalkerError::Skeleton`] for an unreadable file; [`WalkerError::Mocap`]
    /// when a joint is missing or the range is empty.
    pub fn load(path: impl AsRef<Path>, first: usize, stride: usize, count: usize) -> Result<Self> {
        let bvh = Bvh::load(path.as_ref())?;
        Self::from_bvh(&bvh, first, stride, count)
    }

    /// As [`TruthClip::load`] from a parsed clip.
    ///
    /// # Errors
    /// As [`TruthClip::load`].
    pub fn from_bvh(bvh: &Bvh, first: usize, stride: usize, count: usize) -> Result<Self> {
        if stride == 0 {
            return Err(WalkerError::Mocap("frame stride must be at least 1".into()));
        }
        let ids = [
            joint(bvh, "LeftHip")?,
            joint(bvh, "RightHip")?,
            joint(bvh, "LeftKnee")?,
            joint(bvh, "LeftAnkle")?,
            joint(bvh, "RightKnee")?,
            joint(bvh, "RightAnkle")?,
            joint(bvh, "LeftToe")?,
            joint(bvh, "RightToe")?,
        ];
        let mut frames = Vec::new();
        let mut world = vec![nalgebra::Isometry3::identity(); bvh.skeleton.len()];
        let mut f = first;
        while f < bvh.frames.len() && frames.len() < count {
            bvh.skeleton
                .forward_kinematics_into(bvh.frames.pose(f), &mut world);
            let p = |j: usize| Point3::from(world[ids[j]].translation.vector);
            let (lh, rh) = (p(0), p(1));
            let hip = Point3::from((lh.coords + rh.coords) * 0.5);
            frames.push(TruthFrame {
                points: [hip, p(2), p(3), p(4), p(5)],
                hips: [lh, rh],
                toes: [p(6), p(7)],
            });
            f += stride;
        }
        if frames.len() < 2 {
            return Err(WalkerError::Mocap(format!(
                "frames {first}.. with stride {stride} leave fewer than 2 frames of {}",
                bvh.frames.len()
            )));
        }
        let mut lows: Vec<f64> = frames
            .iter()
            .map(|fr| fr.points[L_FOOT].y.min(fr.points[R_FOOT].y))
            .collect();
        lows.sort_by(f64::total_cmp);
        let ground = lows[lows.len() / 20] - ANKLE_HEIGHT;
        for fr in &mut frames {
            for q in fr
                .points
                .iter_mut()
                .chain(fr.hips.iter_mut())
                .chain(fr.toes.iter_mut())
            {
                q.y -= ground;
            }
        }
        Ok(TruthClip {
            frame_time: bvh.frame_time * stride as f64,
            frames,
            ground_height: ground,
        })
    }

    /// Number of frames.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Whether there are no frames.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }
}

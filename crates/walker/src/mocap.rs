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

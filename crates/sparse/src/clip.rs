//! Motion clips at the tracker's rate, and the error measures of SPARSE
//! §4.1 (Fig. 6, Table 1).

use std::path::Path;

use nalgebra::{Isometry3, Point3};
use skeleton::{Bvh, Skeleton};

use crate::error::{Result, SparseError, require_positive};

/// Ground-truth poses of one skeleton at a fixed rate.
#[derive(Clone, Debug)]
pub struct Clip {
    pub name: String,
    pub skeleton: Skeleton,
    /// Seconds per frame.
    pub frame_time: f64,
    pub poses: Vec<Vec<f64>>,
}

impl Clip {
    /// Reads a BVH file and keeps every k-th frame so that the rate is the
    /// nearest to `rate` Hz that the file's rate divides into (120 Hz CMU
    /// clips → every second frame at 60 Hz).
    pub fn load_bvh(path: impl AsRef<Path>, rate: f64) -> Result<Self> {
        let path = path.as_ref();
        let bvh = Bvh::load(path)?;
        let name = path.file_stem().map_or_else(
            || path.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        Self::from_bvh(name, &bvh, rate)
    }

    /// As [`Clip::load_bvh`], from a parsed file.
    pub fn from_bvh(name: String, bvh: &Bvh, rate: f64) -> Result<Self> {
        require_positive("rate", rate)?;
        if bvh.frames.is_empty() {
            return Err(SparseError::Empty { what: name });
        }
        let stride = ((1.0 / rate) / bvh.frame_time).round().max(1.0) as usize;
        let poses = (0..bvh.frames.len())
            .step_by(stride)
            .map(|i| bvh.frames.pose(i).to_vec())
            .collect();
        Ok(Self {
            name,
            skeleton: bvh.skeleton.clone(),
            frame_time: bvh.frame_time * stride as f64,
            poses,
        })
    }

    pub fn len(&self) -> usize {
        self.poses.len()
    }

    pub fn is_empty(&self) -> bool {
        self.poses.is_empty()
    }
}

/// The bodies the errors are averaged over: every joint with a body of
/// positive mass.
pub fn error_bodies(skeleton: &Skeleton) -> Vec<usize> {
    (0..skeleton.len())
        .filter(|&j| {
            skeleton
                .joint(j)
                .body
                .as_ref()
                .is_some_and(|b| b.mass > 0.0)
        })
        .collect()
}

/// Per-frame tracking error of SPARSE §4.1: the mean over `bodies` of the
/// distance between the centres of mass of the ground-truth and tracked
/// bodies (metres), and of the angle between their orientations (radians).
pub fn body_errors(
    skeleton: &Skeleton,
    bodies: &[usize],
    truth: &[Isometry3<f64>],
    tracked: &[Isometry3<f64>],
) -> (f64, f64) {
    let mut pos = 0.0;
    let mut ang = 0.0;
    for &j in bodies {
        let c = skeleton
            .joint(j)
            .body
            .as_ref()
            .map_or(Point3::origin(), |b| Point3::from(b.capsule.centre()));
        pos += (truth[j] * c - tracked[j] * c).norm();
        ang += truth[j].rotation.angle_to(&tracked[j].rotation);
    }
    let n = bodies.len().max(1) as f64;
    (pos / n, ang / n)
}

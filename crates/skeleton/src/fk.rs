//! Batched forward kinematics.
//!
//! A [`PoseBatch`] holds N poses of D parameters each in one contiguous
//! row-major buffer (particle `i` is `data[i·D .. (i+1)·D]`), the layout every
//! particle filter in posecloud uses. [`BatchForwardKinematics`] owns an
//! N × J buffer of world transforms and fills it in one rayon-parallel pass
//! over particles; after the first call with a given N it never allocates.

use nalgebra::{Isometry3, Point3};
use rayon::prelude::*;

use crate::error::{Result, SkeletonError};
use crate::skeleton::Skeleton;

/// Fewest joint transforms per rayon task (~10 µs of work); smaller batches
/// run on the calling thread, where rayon's hand-off would cost more.
const TRANSFORMS_PER_TASK: usize = 512;

/// N poses × D parameters, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct PoseBatch {
    dof: usize,
    data: Vec<f64>,
}

impl PoseBatch {
    /// `n` copies of `pose`.
    pub fn repeat(pose: &[f64], n: usize) -> Self {
        let mut data = Vec::with_capacity(pose.len() * n);
        for _ in 0..n {
            data.extend_from_slice(pose);
        }
        Self {
            dof: pose.len(),
            data,
        }
    }

    /// `n` rest poses of `skeleton`.
    pub fn rest(skeleton: &Skeleton, n: usize) -> Self {
        Self::repeat(&skeleton.rest_pose(), n)
    }

    /// Wraps a buffer of `data.len() / dof` poses.
    pub fn from_vec(dof: usize, data: Vec<f64>) -> Result<Self> {
        if dof == 0 && !data.is_empty() || dof > 0 && !data.len().is_multiple_of(dof) {
            return Err(SkeletonError::InvalidPose(format!(
                "buffer of {} values is not a whole number of {dof}-parameter poses",
                data.len()
            )));
        }
        Ok(Self { dof, data })
    }

    pub fn len(&self) -> usize {
        self.data.len().checked_div(self.dof).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn dof(&self) -> usize {
        self.dof
    }

    pub fn pose(&self, i: usize) -> &[f64] {
        &self.data[i * self.dof..(i + 1) * self.dof]
    }

    pub fn pose_mut(&mut self, i: usize) -> &mut [f64] {
        &mut self.data[i * self.dof..(i + 1) * self.dof]
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[f64]> {
        self.data.chunks_exact(self.dof.max(1))
    }

    pub fn as_slice(&self) -> &[f64] {
        &self.data
    }

    pub fn as_mut_slice(&mut self) -> &mut [f64] {
        &mut self.data
    }

    /// Appends one pose.
    pub fn push(&mut self, pose: &[f64]) -> Result<()> {
        if pose.len() != self.dof {
            return Err(SkeletonError::InvalidPose(format!(
                "expected {} parameters, got {}",
                self.dof,
                pose.len()
            )));
        }
        self.data.extend_from_slice(pose);
        Ok(())
    }
}

/// The particle engine's preparation stage for a body: forward kinematics
/// of the whole cloud, once per step, into a [`BatchForwardKinematics`]
/// that every likelihood term ([`smc::Term`]) then reads — constraints,
/// the region likelihood, a prior — instead of each redoing it.
///
/// ```
/// use skeleton::{BatchForwardKinematics, Posing, presets};
/// use smc::{Likelihood, PerPrepared, Prepared};
///
/// let arm = presets::chain(3, 3.0);
/// // log p = −|tip − (1, 1, 0)|²: reads the prepared transforms.
/// let tip = arm.len() - 1;
/// let reach = PerPrepared {
///     f: |_: &(), fk: &BatchForwardKinematics, i: usize, _: &[f64]| {
///         -(fk.position(i, tip) - nalgebra::Point3::new(1.0, 1.0, 0.0)).norm_squared()
///     },
///     min_task: 64,
/// };
/// let lik = Prepared::new(Posing(&arm), BatchForwardKinematics::new(), reach);
/// let states = arm.rest_pose().repeat(4);
/// let mut out = [0.0; 4];
/// lik.log_likelihood(&(), &states, arm.dof(), &mut out)?;
/// assert!(out.iter().all(|l| l.is_finite() && *l < 0.0));
/// # Ok::<(), smc::BoxError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Posing<'a>(pub &'a Skeleton);

impl<O: ?Sized> smc::Prepare<O> for Posing<'_> {
    type Batch = BatchForwardKinematics;

    fn prepare(
        &self,
        _: &O,
        states: &[f64],
        dim: usize,
        batch: &mut BatchForwardKinematics,
    ) -> std::result::Result<(), smc::BoxError> {
        if dim != self.0.dof() {
            return Err(SkeletonError::InvalidPose(format!(
                "states have {dim} parameters per pose, the skeleton {}",
                self.0.dof()
            ))
            .into());
        }
        Ok(batch.compute_states(self.0, states)?)
    }
}

/// Reusable N × J world-transform buffer for batched forward kinematics.
#[derive(Clone, Debug, Default)]
pub struct BatchForwardKinematics {
    joints: usize,
    world: Vec<Isometry3<f64>>,
}

impl BatchForwardKinematics {
    pub fn new() -> Self {
        Self::default()
    }

    /// Computes world transforms of every joint of every pose in `batch`, in
    /// parallel over poses. The buffer grows on the first call for a given
    /// size and is reused afterwards. The batch's D must equal the
    /// skeleton's DOF; poses are assumed finite (use
    /// [`Skeleton::check_pose`] on untrusted input).
    pub fn compute(&mut self, skeleton: &Skeleton, batch: &PoseBatch) -> Result<()> {
        if batch.dof() != skeleton.dof() {
            return Err(SkeletonError::InvalidPose(format!(
                "batch has {} parameters per pose, skeleton has {}",
                batch.dof(),
                skeleton.dof()
            )));
        }
        self.compute_states(skeleton, batch.as_slice())
    }

    /// As [`Self::compute`], for poses stored row-major in a plain buffer of
    /// `k · skeleton.dof()` values (a particle set's states).
    pub fn compute_states(&mut self, skeleton: &Skeleton, states: &[f64]) -> Result<()> {
        let (j, d) = (skeleton.len(), skeleton.dof());
        if d == 0 {
            return Err(SkeletonError::InvalidPose(
                "a skeleton without parameters has no pose batch".into(),
            ));
        }
        if !states.len().is_multiple_of(d) {
            return Err(SkeletonError::InvalidPose(format!(
                "{} values are not a whole number of {d}-parameter poses",
                states.len()
            )));
        }
        let n = states.len() / d;
        self.joints = j;
        self.world.resize(n * j, Isometry3::identity());
        let fk = |(world, pose): (&mut [Isometry3<f64>], &[f64])| {
            skeleton.forward_kinematics_into(pose, world)
        };
        let task = TRANSFORMS_PER_TASK.div_ceil(j.max(1));
        if n <= task || rayon::current_num_threads() == 1 {
            // One task's worth: rayon's cross-thread hand-off would cost more.
            self.world
                .chunks_exact_mut(j)
                .zip(states.chunks_exact(d))
                .for_each(fk);
        } else {
            self.world
                .par_chunks_exact_mut(j)
                .zip(states.par_chunks_exact(d))
                .with_min_len(task)
                .for_each(fk);
        }
        Ok(())
    }

    /// Number of poses in the last computed batch.
    pub fn len(&self) -> usize {
        self.world.len().checked_div(self.joints).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.world.is_empty()
    }

    /// World transforms of pose `i`, one per joint.
    pub fn world(&self, i: usize) -> &[Isometry3<f64>] {
        &self.world[i * self.joints..(i + 1) * self.joints]
    }

    /// The whole N × J buffer, pose-major.
    pub fn as_slice(&self) -> &[Isometry3<f64>] {
        &self.world
    }

    /// World position of joint `joint` in pose `i`.
    pub fn position(&self, i: usize, joint: usize) -> Point3<f64> {
        Point3::from(self.world[i * self.joints + joint].translation.vector)
    }

    /// Centre of mass of every pose into `out` (resized to N), in parallel.
    pub fn centres_of_mass(&self, skeleton: &Skeleton, out: &mut Vec<Point3<f64>>) {
        out.resize(self.len(), Point3::origin());
        if self.joints == 0 {
            return;
        }
        let com =
            |(c, world): (&mut Point3<f64>, &[Isometry3<f64>])| *c = skeleton.centre_of_mass(world);
        let task = TRANSFORMS_PER_TASK.div_ceil(self.joints);
        if out.len() <= task || rayon::current_num_threads() == 1 {
            out.iter_mut()
                .zip(self.world.chunks_exact(self.joints))
                .for_each(com);
        } else {
            out.par_iter_mut()
                .zip(self.world.par_chunks_exact(self.joints))
                .with_min_len(task)
                .for_each(com);
        }
    }
}

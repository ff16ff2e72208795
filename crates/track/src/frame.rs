//! What one tracker step hands its drivers: the [`TrackFrame`].
//!
//! [`Tracker::step`](crate::Tracker::step) ends by publishing the frame:
//! the step's diagnostics and stage times ([`StepReport`]), the MAP and
//! weighted-mean poses, the estimate's joints in the world and in the
//! tracker's camera, every particle's joints with its normalised weight,
//! and the heaviest particles (indices and their joints in the image).
//! The particles' joints are read from the forward kinematics the step
//! already computed for its final likelihood batch (DESIGN.md: one FK per
//! step), so a driver — `posecloud track`, the recorder, the window's
//! snapshot — copies what it shows and never runs forward kinematics
//! itself.
//!
//! The frame is owned by the tracker and refilled in place: after the
//! first step with a given N and skeleton, publishing it and copying it
//! into a frame already filled ([`TrackFrame::clone_from`]) allocate
//! nothing (`tests/step_allocations.rs` counts).

use labels::Camera;
use nalgebra::{Isometry3, Point3, Vector3};
use skeleton::BatchForwardKinematics;

use crate::body::TrackedBody;
use crate::tracker::StepReport;

/// Heaviest particles a frame lists by default
/// ([`TrackerConfig::top_particles`](crate::TrackerConfig::top_particles)).
pub(crate) const DEFAULT_TOP_PARTICLES: usize = 12;

/// One tracked frame, as drivers read it (module docs). Joint positions are
/// `f32`, what drawing needs: a few tenths of a micrometre at the scale of a
/// room; the poses are `f64`.
#[derive(Debug, Default, PartialEq)]
pub struct TrackFrame {
    pub(crate) report: StepReport,
    map_pose: Vec<f64>,
    mean_pose: Vec<f64>,
    mean_estimate: bool,
    joints: usize,
    image_size: (u32, u32),
    estimate: Vec<[f32; 3]>,
    estimate_px: Vec<[f32; 2]>,
    cloud: Vec<[f32; 3]>,
    weights: Vec<f64>,
    top: Vec<usize>,
    top_px: Vec<[f32; 2]>,
}

impl Clone for TrackFrame {
    fn clone(&self) -> Self {
        let mut out = Self::default();
        out.clone_from(self);
        out
    }

    /// Field by field into `self`'s buffers: no allocation once they have
    /// held a frame of the same size (what the window's snapshot relies on).
    fn clone_from(&mut self, source: &Self) {
        self.report = source.report;
        self.map_pose.clone_from(&source.map_pose);
        self.mean_pose.clone_from(&source.mean_pose);
        self.mean_estimate = source.mean_estimate;
        self.joints = source.joints;
        self.image_size = source.image_size;
        self.estimate.clone_from(&source.estimate);
        self.estimate_px.clone_from(&source.estimate_px);
        self.cloud.clone_from(&source.cloud);
        self.weights.clone_from(&source.weights);
        self.top.clone_from(&source.top);
        self.top_px.clone_from(&source.top_px);
    }
}

impl TrackFrame {
    /// The step's diagnostics and stage times.
    pub fn report(&self) -> &StepReport {
        &self.report
    }
    /// The MAP particle as a full skeleton pose.
    pub fn map_pose(&self) -> &[f64] {
        &self.map_pose
    }
    /// The weighted mean of the particles as a full pose.
    pub fn mean_pose(&self) -> &[f64] {
        &self.mean_pose
    }
    /// The estimate: the weighted mean when the tracker's configuration
    /// asks for it ([`TrackerConfig::mean_estimate`](crate::TrackerConfig::mean_estimate)),
    /// else the MAP particle.
    pub fn estimate_pose(&self) -> &[f64] {
        if self.mean_estimate {
            &self.mean_pose
        } else {
            &self.map_pose
        }
    }
    /// Joints per pose (the skeleton's, in its order); 0 for an empty frame.
    pub fn joints(&self) -> usize {
        self.joints
    }
    /// Particles in the cloud.
    pub fn len(&self) -> usize {
        self.weights.len()
    }
    /// No particles: a frame cleared ([`Self::clear`]) or never filled.
    pub fn is_empty(&self) -> bool {
        self.weights.is_empty()
    }
    /// Width and height of the tracker's camera, whose pixels
    /// [`Self::estimate_px`] and [`Self::top_px`] are in.
    pub fn image_size(&self) -> (u32, u32) {
        self.image_size
    }
    /// The estimate's joint positions (world, metres).
    pub fn estimate(&self) -> &[[f32; 3]] {
        &self.estimate
    }
    /// The estimate's joints projected by the tracker's camera (pixels; NaN
    /// behind the camera).
    pub fn estimate_px(&self) -> &[[f32; 2]] {
        &self.estimate_px
    }
    /// Every particle's joint positions, `N × joints` (world, metres).
    pub fn cloud(&self) -> &[[f32; 3]] {
        &self.cloud
    }
    /// Particle `i`'s joint positions.
    pub fn particle(&self, i: usize) -> &[[f32; 3]] {
        &self.cloud[i * self.joints..(i + 1) * self.joints]
    }
    /// Normalised weights, one per particle.
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }
    /// The heaviest particles, heaviest first (equal weights: the later
    /// particle first, so that `top()[0]` is the MAP particle); at most
    /// [`TrackerConfig::top_particles`](crate::TrackerConfig::top_particles).
    pub fn top(&self) -> &[usize] {
        &self.top
    }
    /// The [`Self::top`] particles' joints projected by the tracker's
    /// camera, `K × joints` (pixels; NaN behind the camera).
    pub fn top_px(&self) -> &[[f32; 2]] {
        &self.top_px
    }

    /// Empties the frame, keeping its buffers (a driver's copy while no
    /// tracker runs).
    pub fn clear(&mut self) {
        self.report = StepReport::default();
        self.map_pose.clear();
        self.mean_pose.clear();
        self.mean_estimate = false;
        self.joints = 0;
        self.image_size = (0, 0);
        self.estimate.clear();
        self.estimate_px.clear();
        self.cloud.clear();
        self.weights.clear();
        self.top.clear();
        self.top_px.clear();
    }

    /// Refills the frame from the tracker's cloud after a step (or a
    /// reset). `cloud.fk` must hold the transforms of exactly
    /// `cloud.states`, in order.
    pub(crate) fn publish(
        &mut self,
        cloud: &Cloud<'_>,
        report: StepReport,
        scratch: &mut FrameScratch,
    ) {
        let Cloud {
            body,
            camera,
            states,
            weights,
            fk,
            map,
            mean_estimate,
            top,
        } = *cloud;
        let d = body.dim();
        let n = weights.len();
        let skeleton = body.skeleton();
        let (joints, dof) = (skeleton.len(), skeleton.dof());
        debug_assert_eq!(states.len(), n * d);
        debug_assert_eq!(fk.len(), n, "the transforms are the cloud's");
        self.report = report;
        self.mean_estimate = mean_estimate;
        self.joints = joints;
        self.image_size = (camera.width(), camera.height());
        self.map_pose.resize(dof, 0.0);
        body.to_full(&states[map * d..(map + 1) * d], &mut self.map_pose);
        // The weighted mean of the states, then as a full pose.
        scratch.mean.clear();
        scratch.mean.resize(d, 0.0);
        for (x, &w) in states.chunks(d).zip(weights) {
            for (m, v) in scratch.mean.iter_mut().zip(x) {
                *m += w * v;
            }
        }
        self.mean_pose.resize(dof, 0.0);
        body.to_full(&scratch.mean, &mut self.mean_pose);
        self.weights.clear();
        self.weights.extend_from_slice(weights);
        self.cloud.clear();
        self.cloud.extend(fk.as_slice().iter().map(world_point));
        // The estimate: the MAP's transforms are the cloud's; the mean is
        // not a particle, so it takes one forward kinematics a step.
        let estimate_world = if mean_estimate {
            scratch.world.resize(joints, Isometry3::identity());
            skeleton.forward_kinematics_into(&self.mean_pose, &mut scratch.world);
            &scratch.world[..]
        } else {
            fk.world(map)
        };
        self.estimate.clear();
        self.estimate.extend(estimate_world.iter().map(world_point));
        self.estimate_px.clear();
        self.estimate_px.extend(
            estimate_world
                .iter()
                .map(|w| pixel(camera, &w.translation.vector)),
        );
        // The K heaviest without sorting the cloud: a partial selection on
        // a reused index buffer, then the K sorted.
        let k = top.min(n);
        let heavier = |a: &usize, b: &usize| weights[*b].total_cmp(&weights[*a]).then(b.cmp(a));
        scratch.order.clear();
        scratch.order.extend(0..n);
        if k > 0 && k < n {
            scratch.order.select_nth_unstable_by(k - 1, heavier);
        }
        scratch.order[..k].sort_unstable_by(heavier);
        self.top.clear();
        self.top.extend_from_slice(&scratch.order[..k]);
        self.top_px.clear();
        for &i in &self.top {
            self.top_px.extend(
                fk.world(i)
                    .iter()
                    .map(|w| pixel(camera, &w.translation.vector)),
            );
        }
    }
}

/// What [`TrackFrame::publish`] reads from the tracker.
#[derive(Clone, Copy)]
pub(crate) struct Cloud<'a> {
    pub body: &'a TrackedBody,
    pub camera: &'a Camera,
    /// `N × D` tracked states.
    pub states: &'a [f64],
    /// Normalised weights.
    pub weights: &'a [f64],
    /// The joint transforms of `states`, in order.
    pub fk: &'a BatchForwardKinematics,
    /// The MAP particle.
    pub map: usize,
    pub mean_estimate: bool,
    /// K of [`TrackFrame::top`].
    pub top: usize,
}

/// The buffers [`TrackFrame::publish`] works in, kept by the tracker.
#[derive(Debug, Default)]
pub(crate) struct FrameScratch {
    /// Particle indices, partially ordered by weight.
    order: Vec<usize>,
    /// The weighted mean state.
    mean: Vec<f64>,
    /// The mean pose's joint transforms.
    world: Vec<Isometry3<f64>>,
}

fn world_point(w: &Isometry3<f64>) -> [f32; 3] {
    let v = &w.translation.vector;
    [v.x as f32, v.y as f32, v.z as f32]
}

fn pixel(camera: &Camera, v: &Vector3<f64>) -> [f32; 2] {
    camera
        .project(&Point3::from(*v))
        .map_or([f32::NAN; 2], |(u, v, _)| [u as f32, v as f32])
}

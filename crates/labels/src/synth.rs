//! Synthetic observations: a pose rendered to a label image by the same
//! raster the likelihood uses ([`crate::raster`]), plus optional seeded
//! noise that imitates segmentation errors (RTPF §IV-D segments a frame
//! into face, arms and clothes; real segmentations have speckle, blobs of
//! the wrong class and parts that are missed).
//!
//! Noise is applied in this order: missing parts (every pixel of a dropped
//! class becomes background), blobs (discs of a random label `0..=C` at
//! random centres), flipped pixels (each pixel, with probability `p`, takes
//! a label drawn uniformly from `0..=C`, possibly its own).

use std::cmp::Ordering;

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use skeleton::{BodyPart, JointKind, Skeleton, SkeletonBuilder};

use crate::camera::Camera;
use crate::error::{LabelError, Result};
use crate::likelihood::{CLASSES, Evaluation, LabelMap, Observation, label_map_of};
use crate::raster::{capsules_of_pose, render_labels};

/// Segmentation-like noise for synthetic observations; the default is none.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LabelNoise {
    /// Probability that a pixel takes a uniformly random label in `0..=C`.
    pub flip_probability: f64,
    /// Number of discs of a random label painted over the image.
    pub blobs: usize,
    /// Disc radius range in pixels `(min, max)`, drawn uniformly.
    pub blob_radius: (f64, f64),
    /// Classes the segmentation misses (their pixels become background).
    pub missing: Vec<BodyPart>,
}

impl LabelNoise {
    /// Only flipped pixels: each takes a random label with probability `p`.
    pub fn flips(p: f64) -> Self {
        Self {
            flip_probability: p,
            ..Self::default()
        }
    }

    fn validate(&self) -> Result<()> {
        let p = self.flip_probability;
        if !(0.0..=1.0).contains(&p) {
            return Err(LabelError::InvalidSetting {
                field: "flip_probability",
                value: p,
                reason: "must be in [0, 1]",
            });
        }
        let (lo, hi) = self.blob_radius;
        if self.blobs > 0 && !(lo.is_finite() && hi.is_finite() && 0.0 <= lo && lo <= hi) {
            return Err(LabelError::InvalidSetting {
                field: "blob_radius",
                value: if lo.is_finite() { hi } else { lo },
                reason: "need finite 0 ≤ min ≤ max",
            });
        }
        Ok(())
    }

    /// Applies the noise to a label image in place, reproducibly for a seed.
    ///
    /// # Errors
    /// [`LabelError::InvalidSetting`] for a probability outside `[0, 1]` or a
    /// bad radius range; [`LabelError::PixelCount`] for a wrong-sized image.
    pub fn apply(&self, labels: &mut [u8], width: u32, height: u32, seed: u64) -> Result<()> {
        self.validate()?;
        let (w, h) = (width as usize, height as usize);
        if labels.len() != w * h {
            return Err(LabelError::PixelCount {
                width,
                height,
                expected: w * h,
                found: labels.len(),
            });
        }
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        for part in &self.missing {
            let l = part.label();
            labels.iter_mut().filter(|x| **x == l).for_each(|x| *x = 0);
        }
        for _ in 0..self.blobs {
            let cx = rng.random_range(0.0..width as f64);
            let cy = rng.random_range(0.0..height as f64);
            let (lo, hi) = self.blob_radius;
            let r = if hi > lo {
                rng.random_range(lo..hi)
            } else {
                lo
            };
            let label = rng.random_range(0..=CLASSES as u8);
            let y0 = (cy - r).floor().max(0.0) as usize;
            let y1 = ((cy + r).ceil() as usize).min(h);
            let x0 = (cx - r).floor().max(0.0) as usize;
            let x1 = ((cx + r).ceil() as usize).min(w);
            for y in y0..y1 {
                for x in x0..x1 {
                    let (dx, dy) = (x as f64 + 0.5 - cx, y as f64 + 0.5 - cy);
                    if dx * dx + dy * dy <= r * r {
                        labels[y * w + x] = label;
                    }
                }
            }
        }
        if self.flip_probability > 0.0 {
            for x in labels.iter_mut() {
                if rng.random_bool(self.flip_probability) {
                    *x = rng.random_range(0..=CLASSES as u8);
                }
            }
        }
        Ok(())
    }
}

/// The noiseless label image of `pose` seen by `camera` (row-major, y down).
///
/// # Errors
/// [`LabelError::Pose`] for a pose of the wrong length or with non-finite values.
pub fn render_label_image(skeleton: &Skeleton, camera: &Camera, pose: &[f64]) -> Result<Vec<u8>> {
    let world = skeleton
        .forward_kinematics(pose)
        .map_err(|e| LabelError::Pose(e.to_string()))?;
    let mut capsules = Vec::new();
    capsules_of_pose(skeleton, &world, &mut capsules);
    Ok(render_labels(&camera.raster(), &capsules))
}

/// A synthetic [`Observation`]: `pose` rendered by `camera`, then `noise`
/// applied with `seed`.
///
/// # Errors
/// As [`render_label_image`] and [`LabelNoise::apply`].
pub fn render_observation(
    skeleton: &Skeleton,
    camera: &Camera,
    pose: &[f64],
    noise: &LabelNoise,
    seed: u64,
) -> Result<Observation> {
    let mut labels = render_label_image(skeleton, camera, pose)?;
    noise.apply(&mut labels, camera.width(), camera.height(), seed)?;
    Observation::new(camera.width(), camera.height(), labels)
}

/// `n` poses around `reference`, end to end (`n × dof` values): every
/// parameter moved uniformly by up to 3 cm (the root translation, the first
/// three) or 0.15 rad (every angle), then clamped to the joint limits. The
/// particle batches of the likelihood benchmarks and of the GPU tests.
pub fn perturbed_poses(skeleton: &Skeleton, reference: &[f64], n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut states = Vec::with_capacity(n * reference.len());
    for _ in 0..n {
        let mut pose = reference.to_vec();
        for (k, x) in pose.iter_mut().enumerate() {
            let s = if k < 3 { 0.03 } else { 0.15 };
            *x += rng.random_range(-s..s);
        }
        skeleton.clamp_to_limits(&mut pose);
        states.extend_from_slice(&pose);
    }
    states
}

/// The human preset's rest pose with the left arm raised sideways by
/// `abduction` (a swing about +z) and the right elbow flexed by `elbow`
/// (radians): the reference pose of the likelihood tests and benchmarks.
///
/// # Errors
/// [`LabelError::Pose`] when `skeleton` has no `l_shoulder` or `r_elbow`.
pub fn arm_pose(skeleton: &Skeleton, abduction: f64, elbow: f64) -> Result<Vec<f64>> {
    let param = |joint: &str| {
        skeleton
            .find(joint)
            .map(|j| skeleton.param_range(j).start)
            .map_err(|e| LabelError::Pose(e.to_string()))
    };
    let mut pose = skeleton.rest_pose();
    pose[param("l_shoulder")? + 1] = abduction;
    pose[param("r_elbow")?] = elbow;
    Ok(pose)
}

/// What a sweep of poses moving away from a noisy observation's pose must
/// weigh (RTPF Eq. 1–2), checked by the CPU and GPU likelihood tests alike:
/// `F` strictly inside `(0, 1)` at the first pose (noise leaves no class an
/// exact match), then strictly growing, the log-likelihood strictly falling.
///
/// # Errors
/// A message naming the first pose that breaks it.
pub fn check_sweep(ev: &Evaluation) -> std::result::Result<(), String> {
    let (f, ll) = (&ev.non_overlap, &ev.log_likelihood);
    if !(f[0] > 0.0 && f[0] < 1.0) {
        return Err(format!("F at the observed pose: {}", f[0]));
    }
    for k in 1..f.len() {
        // Incomparable (NaN) values fail too.
        if f[k].partial_cmp(&f[k - 1]) != Some(Ordering::Greater) {
            return Err(format!("F not increasing at step {k}: {f:?}"));
        }
        if ll[k].partial_cmp(&ll[k - 1]) != Some(Ordering::Less) {
            return Err(format!("log-likelihood not decreasing at step {k}: {ll:?}"));
        }
    }
    Ok(())
}

/// A whole-body segmentation: head and neck → class 1, arms and hands → 2,
/// torso and pelvis → 3, legs → 4; fingers and feet are not segmented (0).
pub fn whole_body_classes() -> LabelMap {
    label_map_of(|part| match part {
        BodyPart::Head | BodyPart::Neck => 1,
        BodyPart::UpperArm | BodyPart::Forearm | BodyPart::Hand => 2,
        BodyPart::Torso | BodyPart::Pelvis => 3,
        BodyPart::Thigh | BodyPart::Shank => 4,
        _ => 0,
    })
}

/// A free-floating root carrying a torso capsule wider and taller than the
/// default camera's view at its distance, plus (optionally) a small head
/// capsule in front of it: a view filled edge to edge, for exact counts.
pub fn wall(with_head: bool) -> Skeleton {
    let mut b = SkeletonBuilder::new();
    b.joint("wall", None, [0.0, 1.0, 0.0], JointKind::free())
        .with_capsule([-5.0, 0.0, 0.0], [5.0, 0.0, 0.0], 2.0, BodyPart::Torso, 1.0);
    if with_head {
        b.joint("head", Some("wall"), [0.0, 0.0, 2.5], JointKind::Fixed)
            .with_capsule([-0.1, 0.0, 0.0], [0.1, 0.0, 0.0], 0.1, BodyPart::Head, 1.0);
    }
    b.build().expect("the wall is a valid skeleton")
}

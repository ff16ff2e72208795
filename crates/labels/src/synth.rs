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

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use skeleton::{BodyPart, Skeleton};

use crate::camera::Camera;
use crate::error::{LabelError, Result};
use crate::likelihood::{CLASSES, Observation};
use crate::raster::{capsules_of_pose, render_labels};

/// Segmentation-like noise for synthetic observations; the default is none.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Noise {
    /// Probability that a pixel takes a uniformly random label in `0..=C`.
    pub flip_probability: f64,
    /// Number of discs of a random label painted over the image.
    pub blobs: usize,
    /// Disc radius range in pixels `(min, max)`, drawn uniformly.
    pub blob_radius: (f64, f64),
    /// Classes the segmentation misses (their pixels become background).
    pub missing: Vec<BodyPart>,
}

impl Noise {
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
/// As [`render_label_image`] and [`Noise::apply`].
pub fn render_observation(
    skeleton: &Skeleton,
    camera: &Camera,
    pose: &[f64],
    noise: &Noise,
    seed: u64,
) -> Result<Observation> {
    let mut labels = render_label_image(skeleton, camera, pose)?;
    noise.apply(&mut labels, camera.width(), camera.height(), seed)?;
    Observation::new(camera.width(), camera.height(), labels)
}

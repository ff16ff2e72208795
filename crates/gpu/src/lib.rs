//! RTPF's measurement step (RTPF §IV-D, §VI): for a batch of candidate poses,
//! render each pose's body-part labels from the camera, compare with the
//! observed label image class by class, and weigh by the non-overlapping
//! ratio `F(q)` (RTPF Eq. 1) through `exp(−F² / (2 σ_F²))` (RTPF Eq. 2).
//!
//! This crate holds the **CPU reference** of that pipeline, which is both the
//! correctness oracle and the fallback of the wgpu path:
//!
//! - [`camera`]: the pinhole [`Camera`] (looks along +z, image y down) and
//!   its f32 form [`RasterCamera`];
//! - [`raster`]: per-pose [`CapsuleInstance`]s (the GPU's 32-byte storage
//!   layout) and the impostor-style ray–capsule label raster with its depth
//!   and tie rules;
//! - [`likelihood`]: [`Observation`], the histograms, [`NonOverlap`]
//!   (Eq. 1–2) and [`CpuLikelihood`], an [`smc::Likelihood`];
//! - [`synth`]: synthetic observations with segmentation-like noise.

pub mod camera;
pub mod error;
pub mod likelihood;
pub mod raster;
pub mod synth;

pub use camera::{Camera, DEFAULT_HEIGHT, DEFAULT_WIDTH, RasterCamera};
pub use error::{GpuError, Result};
pub use likelihood::{CLASSES, CpuLikelihood, Evaluation, NonOverlap, Observation, count_classes};
pub use raster::{CapsuleInstance, LabelRaster, PixelRect, capsules_of_pose, render_labels};
pub use synth::{Noise, render_label_image, render_observation};

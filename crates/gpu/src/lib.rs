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
//!
//! and the **wgpu path** that mirrors it count for count:
//!
//! - [`gpu_likelihood`]: [`GpuLikelihood`], the same measurement step as a
//!   label-atlas render pass (the ray–capsule test ported to WGSL, depth
//!   compare `Less` for the tie rule) and a compute pass of workgroup-shared
//!   atomic histograms (RTPF §VI), with chunking for large N and overlapped
//!   `submit`/`collect`; also an [`smc::Likelihood`];
//! - [`context`]: [`HeadlessGpu`], a device and queue for tools and tests
//!   (the app passes its own Bevy device instead).

pub mod camera;
pub mod context;
pub mod error;
pub mod gpu_likelihood;
pub mod likelihood;
pub mod raster;
pub mod synth;

pub use camera::{Camera, DEFAULT_HEIGHT, DEFAULT_WIDTH, RasterCamera};
pub use context::{HeadlessGpu, describe_adapter};
pub use error::{GpuError, Result};
pub use gpu_likelihood::{GpuLikelihood, GpuSettings, Ticket};
pub use likelihood::{
    CLASSES, CpuLikelihood, Evaluation, IDENTITY_LABEL_MAP, LabelMap, NonOverlap, Observation,
    check_label_map, count_classes,
};
pub use raster::{
    CapsuleInstance, LabelRaster, PixelRect, capsule_instances, capsule_rect, capsules_of_pose,
    capsules_per_pose, render_labels,
};
pub use synth::{Noise, render_label_image, render_observation};

/// The wgpu this crate is built with, so callers share devices of the same version.
pub use wgpu;

//! RTPF's measurement step (RTPF §IV-D, §VI) on the CPU: for a batch of
//! candidate poses, render each pose's body-part labels from the camera,
//! compare with the observed label image class by class, and weigh by the
//! non-overlapping ratio `F(q)` (RTPF Eq. 1) through `exp(−F² / (2 σ_F²))`
//! (RTPF Eq. 2).
//!
//! This crate is the **CPU reference** of that pipeline — the correctness
//! oracle and the fallback of the wgpu back end in the `gpu` crate, which
//! mirrors it count for count — and everything that only needs the camera
//! and the labels (segmentation, synthetic footage, the walker's tracker)
//! without compiling wgpu:
//!
//! - `camera`: the pinhole [`Camera`] (looks along +z, image y down) and
//!   its f32 form [`RasterCamera`];
//! - `raster`: per-pose [`CapsuleInstance`]s (the GPU's 32-byte storage
//!   layout) and the impostor-style ray–capsule label raster with its depth
//!   and tie rules;
//! - `likelihood`: [`Observation`], the histograms, [`NonOverlap`]
//!   (Eq. 1–2) and [`CpuLikelihood`], an [`smc::Likelihood`];
//! - [`synth`]: synthetic label images and observations with
//!   segmentation-like noise;
//! - `error`: [`LabelError`], which `gpu::GpuError` wraps.

mod camera;
mod error;
mod likelihood;
mod raster;
pub mod synth;

pub use camera::{Camera, DEFAULT_HEIGHT, DEFAULT_WIDTH, RasterCamera};
pub use error::{LabelError, Result};
pub use likelihood::{
    CLASSES, CpuLikelihood, Evaluation, IDENTITY_LABEL_MAP, LabelMap, NonOverlap, Observation,
    Poses, add_results, check_label_map, check_states, copy_results, label_map_of,
};
pub use raster::{
    CapsuleInstance, CapsuleLayout, CapsuleRef, LabelRaster, PixelRect, capsule_instances,
    capsule_rect, capsules_of_pose, capsules_per_pose, render_labels,
};

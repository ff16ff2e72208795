//! RTPF's measurement step (RTPF §IV-D, §VI) on the GPU: the wgpu back end
//! that mirrors the CPU reference of the `labels` crate count for count.
//!
//! - [`gpu_likelihood`]: [`GpuLikelihood`], the measurement step (RTPF
//!   §VI, Eq. 1–2) as one compute pass per chunk of particles that
//!   rasterises (the ray–capsule test of [`labels::raster`] ported to WGSL,
//!   nearest hit, ties to the lower index) and counts in workgroup-shared
//!   atomic histograms, or, as [`RasterPath::RenderPass`], a label-atlas
//!   render pass and a histogram pass; with chunking for large N,
//!   overlapped `submit`/`collect` and a bounded readback wait; an
//!   [`smc::Likelihood`] like [`labels::CpuLikelihood`];
//! - [`context`]: [`HeadlessGpu`], a device and queue for tools and tests
//!   (the app passes its own Bevy device instead);
//! - [`error`]: [`GpuError`], the device's failures plus the
//!   [`labels::LabelError`]s shared with the CPU.
//!
//! The shaders are `crates/gpu/shaders/*.wgsl`, compiled into the crate.
//!
//! The camera, label raster, observation and CPU likelihood live in
//! `labels`; they are re-exported here so that code holding both back ends
//! can name them through one crate.

pub mod context;
pub mod error;
pub mod gpu_likelihood;

pub use context::{HeadlessGpu, describe_adapter};
pub use error::{GpuError, Result};
pub use gpu_likelihood::{GpuLikelihood, GpuSettings, RasterPath, Ticket};

/// The CPU reference this back end mirrors (see the `labels` crate).
pub use labels::{
    CLASSES, Camera, CapsuleInstance, CpuLikelihood, DEFAULT_HEIGHT, DEFAULT_WIDTH, Evaluation,
    IDENTITY_LABEL_MAP, LabelError, LabelMap, LabelNoise, LabelRaster, NonOverlap, Observation,
    PixelRect, RasterCamera, camera, capsule_instances, capsule_rect, capsules_of_pose,
    capsules_per_pose, check_label_map, count_classes, likelihood, raster, render_label_image,
    render_labels, render_observation, synth,
};

/// The wgpu this crate is built with, so callers share devices of the same version.
pub use wgpu;

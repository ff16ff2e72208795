//! RTPF's measurement step (RTPF §IV-D, §VI) on the GPU: the wgpu back end
//! that mirrors the CPU reference of the `labels` crate count for count.
//!
//! - `gpu_likelihood`: [`GpuLikelihood`], the measurement step (RTPF
//!   §VI, Eq. 1–2) as one compute pass per chunk of particles that
//!   rasterises (the ray–capsule test of [`labels::raster`] ported to WGSL,
//!   nearest hit, ties to the lower index) and counts in workgroup-shared
//!   atomic histograms, or, as [`RasterPath::RenderPass`], a label-atlas
//!   render pass and a histogram pass; with chunking for large N,
//!   overlapped `submit`/`collect` and a bounded readback wait; an
//!   [`smc::Likelihood`] like [`labels::CpuLikelihood`];
//! - `context`: [`HeadlessGpu`], a device and queue for tools and tests
//!   (the app passes its own Bevy device instead);
//! - `error`: [`GpuError`], the device's failures plus the
//!   [`labels::LabelError`]s shared with the CPU.
//!
//! The shaders are `crates/gpu/shaders/*.wgsl`, compiled into the crate.
//!
//! The camera, label raster, observation and CPU likelihood live in
//! `labels`, and callers name them there.

mod context;
mod error;
mod gpu_likelihood;

pub use context::{HeadlessGpu, describe_adapter};
pub use error::{GpuError, Result};
pub use gpu_likelihood::{GpuLikelihood, GpuRect, GpuSettings, RasterPath, Ticket};

/// The wgpu this crate is built with, so callers share devices of the same version.
pub use wgpu;

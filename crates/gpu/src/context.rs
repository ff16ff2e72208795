//! A headless wgpu device for tools, examples and tests.
//!
//! The app shares its own Bevy device with [`crate::GpuLikelihood`]; the
//! command-line tools and the tests have no window, so they ask wgpu for any
//! adapter it can find — a real GPU, or a software rasteriser such as Mesa's
//! lavapipe (Vulkan on the CPU, what CI runs) — through the `headless`
//! crate, which `keypoints` uses too.

pub use headless::describe_adapter;

use crate::error::{GpuError, Result};

/// A device and queue with the adapter they came from.
#[derive(Clone, Debug)]
pub struct HeadlessGpu {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    /// Name, backend, device type and driver of the adapter.
    pub info: wgpu::AdapterInfo,
}

impl HeadlessGpu {
    /// Requests an adapter without a surface and a device with the
    /// adapter's own limits (so the label atlas may use textures as large as
    /// the adapter allows).
    ///
    /// # Errors
    /// [`GpuError::NoAdapter`] when wgpu finds no adapter (no GPU and no
    /// software Vulkan driver), [`GpuError::RequestDevice`] when the adapter
    /// refuses the device. Either way the caller can fall back to
    /// [`labels::CpuLikelihood`].
    pub fn new() -> Result<Self> {
        let (device, queue, info) =
            headless::request("posecloud headless").map_err(|e| match e {
                headless::RequestError::NoAdapter(e) => GpuError::NoAdapter(e.to_string()),
                headless::RequestError::RequestDevice { adapter, error } => {
                    GpuError::RequestDevice {
                        adapter: describe_adapter(&adapter),
                        message: error.to_string(),
                    }
                }
            })?;
        Ok(Self {
            device,
            queue,
            info,
        })
    }

    /// [`describe_adapter`] of this device's adapter.
    pub fn describe(&self) -> String {
        describe_adapter(&self.info)
    }

    /// Whether the adapter is a CPU device (lavapipe, llvmpipe, WARP).
    pub fn is_cpu(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }
}

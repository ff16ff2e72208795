//! The wgpu device the GPU back end runs on: the app's own (Bevy's device
//! and queue, handed over) or a headless one for tools and tests.
//!
//! The headless request is the `headless` crate's, which `gpu` uses too
//! (keypoints sits beside `gpu` in the crate order): any adapter wgpu
//! finds — a real GPU, or Mesa's lavapipe (Vulkan on the CPU, what CI runs)
//! — preferring a high-performance one; `WGPU_BACKEND` (e.g. `vulkan`)
//! restricts the backends.

use crate::{Error, Result};

/// A device, its queue and the adapter they came from.
#[derive(Clone, Debug)]
pub struct GpuDevice {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    /// Name, backend, device type and driver of the adapter.
    pub info: wgpu::AdapterInfo,
}

impl GpuDevice {
    /// A device the caller already has (the app's render device).
    pub fn from_parts(device: wgpu::Device, queue: wgpu::Queue, info: wgpu::AdapterInfo) -> Self {
        Self {
            device,
            queue,
            info,
        }
    }

    /// Requests an adapter without a surface and a device with the adapter's
    /// own limits.
    ///
    /// # Errors
    /// [`Error::NoGpu`] when wgpu finds no adapter or the adapter refuses
    /// the device; the caller can fall back to the CPU back end.
    pub fn headless() -> Result<Self> {
        let (device, queue, info) =
            headless::request("keypoints headless").map_err(|e| match e {
                headless::RequestError::NoAdapter(e) => Error::NoGpu(format!("no adapter: {e}")),
                headless::RequestError::RequestDevice { adapter, error } => Error::NoGpu(format!(
                    "{} refused a device: {error}",
                    describe_adapter(&adapter)
                )),
            })?;
        Ok(Self::from_parts(device, queue, info))
    }

    /// [`describe_adapter`] of this device's adapter.
    pub fn describe(&self) -> String {
        describe_adapter(&self.info)
    }

    /// Whether the adapter is a CPU device (lavapipe, llvmpipe, WARP), which
    /// [`crate::DetectorBackend::Auto`] passes over for tract.
    pub fn is_cpu(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }
}

/// One line naming an adapter: `"NAME (BACKEND, DEVICE TYPE)"`.
pub fn describe_adapter(info: &wgpu::AdapterInfo) -> String {
    let kind = headless::device_kind(info.device_type);
    format!("{} ({}, {kind})", info.name, info.backend)
}

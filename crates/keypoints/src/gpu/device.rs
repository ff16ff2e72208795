//! The wgpu device the GPU back end runs on: the app's own (Bevy's device
//! and queue, handed over) or a headless one for tools and tests.
//!
//! The headless request follows `crates/gpu/src/context.rs` (keypoints sits
//! beside `gpu` in the crate order, so it cannot use it): any adapter wgpu
//! finds — a real GPU, or Mesa's lavapipe (Vulkan on the CPU, what CI runs)
//! — preferring a high-performance one; `WGPU_BACKEND` (e.g. `vulkan`)
//! restricts the backends, read here because wgpu built without its `std`
//! feature (as Bevy builds it) reads no environment.

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
        pollster::block_on(Self::request())
    }

    async fn request() -> Result<Self> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        if let Ok(list) = std::env::var("WGPU_BACKEND") {
            desc.backends = wgpu::Backends::from_comma_list(&list);
        }
        let instance = wgpu::Instance::new(desc);
        let options = wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: None,
        };
        let adapter = instance
            .request_adapter(&options)
            .await
            .map_err(|e| Error::NoGpu(format!("no adapter: {e}")))?;
        let info = adapter.get_info();
        let desc = wgpu::DeviceDescriptor {
            label: Some("keypoints headless"),
            required_features: wgpu::Features::empty(),
            required_limits: adapter.limits(),
            ..Default::default()
        };
        let (device, queue) = adapter.request_device(&desc).await.map_err(|e| {
            Error::NoGpu(format!("{} refused a device: {e}", describe_adapter(&info)))
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

    /// Whether the adapter is a CPU device (lavapipe, llvmpipe, WARP), which
    /// [`crate::Backend::Auto`] passes over for tract.
    pub fn is_cpu(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }
}

/// One line naming an adapter: `"NAME (BACKEND, DEVICE TYPE)"`.
pub fn describe_adapter(info: &wgpu::AdapterInfo) -> String {
    let kind = match info.device_type {
        wgpu::DeviceType::DiscreteGpu => "discrete GPU",
        wgpu::DeviceType::IntegratedGpu => "integrated GPU",
        wgpu::DeviceType::VirtualGpu => "virtual GPU",
        wgpu::DeviceType::Cpu => "CPU device",
        wgpu::DeviceType::Other => "other device",
    };
    format!("{} ({}, {kind})", info.name, info.backend)
}

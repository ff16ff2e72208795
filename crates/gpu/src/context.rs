//! A headless wgpu device for tools, examples and tests.
//!
//! The app shares its own Bevy device with [`crate::GpuLikelihood`]; the
//! command-line tools and the tests have no window, so they ask wgpu for any
//! adapter it can find — a real GPU, or a software rasteriser such as Mesa's
//! lavapipe (Vulkan on the CPU, what CI runs) — and block on the request with
//! `pollster`, preferring a high-performance adapter. `WGPU_BACKEND` (e.g.
//! `vulkan`, `gl`) restricts the backends; it is read here because wgpu
//! built without its `std` feature (as Bevy builds it) reads no environment.

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
            .map_err(|e| GpuError::NoAdapter(e.to_string()))?;
        let info = adapter.get_info();
        let desc = wgpu::DeviceDescriptor {
            label: Some("posecloud headless"),
            required_features: wgpu::Features::empty(),
            required_limits: adapter.limits(),
            ..Default::default()
        };
        let (device, queue) =
            adapter
                .request_device(&desc)
                .await
                .map_err(|e| GpuError::RequestDevice {
                    adapter: describe_adapter(&info),
                    message: e.to_string(),
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

/// One line naming an adapter: `"NAME (BACKEND, DEVICE TYPE, DRIVER INFO)"`.
pub fn describe_adapter(info: &wgpu::AdapterInfo) -> String {
    let kind = match info.device_type {
        wgpu::DeviceType::DiscreteGpu => "discrete GPU",
        wgpu::DeviceType::IntegratedGpu => "integrated GPU",
        wgpu::DeviceType::VirtualGpu => "virtual GPU",
        wgpu::DeviceType::Cpu => "CPU device",
        wgpu::DeviceType::Other => "other device",
    };
    let driver = [info.driver.as_str(), info.driver_info.as_str()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if driver.is_empty() {
        format!("{} ({}, {kind})", info.name, info.backend)
    } else {
        format!("{} ({}, {kind}, {driver})", info.name, info.backend)
    }
}

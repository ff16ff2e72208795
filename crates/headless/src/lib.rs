//! A wgpu device without a window, for the command-line tools, the
//! examples and the tests of `gpu` and `keypoints` (the app hands both
//! crates its own Bevy device instead). Both crates wrap it in their own
//! device type (`gpu::HeadlessGpu`, `keypoints::GpuDevice`) and error;
//! neither can depend on the other, so the request lives here.
//!
//! [`request`] asks wgpu for any adapter it can find — a real GPU, or a
//! software rasteriser such as Mesa's lavapipe (Vulkan on the CPU, what CI
//! runs) — preferring a high-performance one, and blocks on the request
//! with `pollster`. The device gets the adapter's own limits (so the label
//! atlas may use textures as large as the adapter allows). `WGPU_BACKEND`
//! (e.g. `vulkan`, `gl`) restricts the backends; it is read here because
//! wgpu built without its `std` feature (as Bevy builds it) reads no
//! environment.
//!
//! [`for_tests`] and [`adapter_or_fail`] are for the `#[ignore]`d GPU
//! tests: a device, or a failure that says why.

use std::fmt;
use std::sync::OnceLock;

/// A device, its queue and the adapter they came from.
pub type Parts = (wgpu::Device, wgpu::Queue, wgpu::AdapterInfo);

/// Why [`request`] found no device.
#[derive(Debug)]
pub enum RequestError {
    /// wgpu found no adapter (no GPU and no software Vulkan driver).
    NoAdapter(wgpu::RequestAdapterError),
    /// The adapter refused the device.
    RequestDevice {
        /// Boxed, to keep the `Result` small.
        adapter: Box<wgpu::AdapterInfo>,
        error: wgpu::RequestDeviceError,
    },
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoAdapter(e) => write!(f, "no adapter: {e}"),
            Self::RequestDevice { adapter, error } => {
                write!(f, "{} refused a device: {error}", describe_adapter(adapter))
            }
        }
    }
}

impl std::error::Error for RequestError {}

/// Requests an adapter without a surface and a device named `label` with
/// the adapter's own limits (see the module docs).
///
/// # Errors
/// [`RequestError`]: no adapter, or the adapter refused the device.
pub fn request(label: &'static str) -> Result<Parts, RequestError> {
    pollster::block_on(async {
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
            .map_err(RequestError::NoAdapter)?;
        let info = adapter.get_info();
        let desc = wgpu::DeviceDescriptor {
            label: Some(label),
            required_features: wgpu::Features::empty(),
            required_limits: adapter.limits(),
            ..Default::default()
        };
        match adapter.request_device(&desc).await {
            Ok((device, queue)) => Ok((device, queue, info)),
            Err(error) => Err(RequestError::RequestDevice {
                adapter: Box::new(info),
                error,
            }),
        }
    })
}

/// What kind of device an adapter is, in words: `"discrete GPU"`,
/// `"CPU device"` (lavapipe, llvmpipe, WARP), ….
pub fn device_kind(device_type: wgpu::DeviceType) -> &'static str {
    match device_type {
        wgpu::DeviceType::DiscreteGpu => "discrete GPU",
        wgpu::DeviceType::IntegratedGpu => "integrated GPU",
        wgpu::DeviceType::VirtualGpu => "virtual GPU",
        wgpu::DeviceType::Cpu => "CPU device",
        wgpu::DeviceType::Other => "other device",
    }
}

/// One line naming an adapter: `"NAME (BACKEND, DEVICE TYPE, DRIVER INFO)"`.
pub fn describe_adapter(info: &wgpu::AdapterInfo) -> String {
    let kind = device_kind(info.device_type);
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

/// For tests: the device in `device`, or a panic that fails the test.
///
/// The GPU tests are `#[ignore]`d, so a plain `cargo test` skips them;
/// asked for (`ignored_flag`: `--ignored` or `--include-ignored`), a
/// missing adapter is a failure, never a silent pass. The message says
/// how to skip them, or, under `POSECLOUD_REQUIRE_GPU=1` (CI, on
/// lavapipe), that an adapter was required.
#[track_caller]
pub fn adapter_or_fail<T, E: fmt::Display>(device: Result<T, E>, ignored_flag: &str) -> T {
    match device {
        Ok(device) => device,
        Err(e) => {
            let required = std::env::var("POSECLOUD_REQUIRE_GPU").is_ok_and(|v| v == "1");
            let why = if required {
                " (POSECLOUD_REQUIRE_GPU=1)".to_string()
            } else {
                format!(" (run without {ignored_flag} to skip the GPU tests)")
            };
            panic!("no GPU adapter{why}: {e}")
        }
    }
}

/// For tests: one device per test binary, requested on first use (and
/// described on stderr), shared by every test; without one,
/// [`adapter_or_fail`].
#[track_caller]
pub fn for_tests(ignored_flag: &str) -> Parts {
    static SHARED: OnceLock<Result<Parts, RequestError>> = OnceLock::new();
    let shared = SHARED.get_or_init(|| {
        request("posecloud tests")
            .inspect(|(_, _, info)| eprintln!("shared device: {}", describe_adapter(info)))
    });
    adapter_or_fail(shared.as_ref(), ignored_flag).clone()
}

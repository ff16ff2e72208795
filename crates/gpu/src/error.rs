//! Errors at the crate boundary: every variant names the offending field.

use thiserror::Error;

/// What can go wrong when building a camera or an observation, or when
/// weighing a batch. The caller can always fall back to another back end.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum GpuError {
    /// A camera parameter is not finite or out of its range.
    #[error("invalid camera: {field} = {value} ({reason})")]
    InvalidCamera {
        field: &'static str,
        value: f64,
        reason: &'static str,
    },
    /// Two images (or an image and its pixel buffer) disagree in size.
    #[error(
        "{what}: expected {expected_width} × {expected_height}, found {found_width} × {found_height}"
    )]
    ImageSizeMismatch {
        what: &'static str,
        expected_width: u32,
        expected_height: u32,
        found_width: u32,
        found_height: u32,
    },
    /// A label image buffer has the wrong number of pixels.
    #[error("label image of {width} × {height} needs {expected} pixels, got {found}")]
    PixelCount {
        width: u32,
        height: u32,
        expected: usize,
        found: usize,
    },
    /// An observed label is outside `0..=classes`.
    #[error("label {label} at pixel (x = {x}, y = {y}) is outside 0..={classes}")]
    LabelOutOfRange {
        x: u32,
        y: u32,
        label: u8,
        classes: usize,
    },
    /// The batch holds no particle (N = 0).
    #[error("empty batch: N = 0 particles")]
    EmptyBatch,
    /// The state buffer does not match the skeleton's parameter count.
    #[error("states: {len} values with dim = {dim}, the skeleton has {dof} parameters")]
    StateShape { len: usize, dim: usize, dof: usize },
    /// The output buffer does not hold one value per particle.
    #[error("out: {found} values for {particles} particles")]
    OutputLength { particles: usize, found: usize },
    /// A pose parameter is NaN or infinite.
    #[error("particle {particle}, parameter {parameter} is {value}")]
    NonFinitePose {
        particle: usize,
        parameter: usize,
        value: f64,
    },
    /// A likelihood or noise setting is out of range.
    #[error("invalid setting: {field} = {value} ({reason})")]
    InvalidSetting {
        field: &'static str,
        value: f64,
        reason: &'static str,
    },
    /// The skeleton rejected a pose (wrong length or non-finite value).
    #[error("pose: {0}")]
    Pose(String),
    /// No wgpu adapter (GPU or software rasteriser such as lavapipe) is
    /// available; fall back to the CPU back end.
    #[error("no GPU adapter: {0}")]
    NoAdapter(String),
    /// The adapter refused to create a device.
    #[error("requesting a device from {adapter}: {message}")]
    RequestDevice { adapter: String, message: String },
    /// The device was lost (destroyed, reset or driver failure); every GPU
    /// resource is gone. Create a new back end or fall back to the CPU.
    #[error("GPU device lost during {operation}: {message}")]
    DeviceLost {
        operation: &'static str,
        message: String,
    },
    /// Mapping a readback buffer failed.
    #[error("mapping the {what} readback buffer failed: {message}")]
    BufferMap { what: &'static str, message: String },
    /// wgpu reported a validation, out-of-memory or internal error.
    #[error("wgpu {kind} error during {operation}: {message}")]
    Wgpu {
        operation: &'static str,
        kind: &'static str,
        message: String,
    },
    /// The batch needs a buffer or texture larger than the device allows.
    #[error("{what} needs {needed}, the device allows {limit}")]
    DeviceLimit {
        what: &'static str,
        needed: u64,
        limit: u64,
    },
    /// `submit` was called while every readback slot holds an uncollected
    /// batch.
    #[error("{in_flight} batches are already in flight (the limit); collect one first")]
    TooManyInFlight { in_flight: usize },
    /// A ticket that does not belong to an in-flight batch of this back end
    /// (already collected, or from another instance).
    #[error("ticket {serial} is not in flight")]
    UnknownTicket { serial: u64 },
    /// A body-part label in the model is outside `1..=classes` (the GPU
    /// histogram has one bin pair per class).
    #[error("capsule {capsule} has label {label}, outside 1..={classes}")]
    CapsuleLabel {
        capsule: usize,
        label: u32,
        classes: usize,
    },
    /// A label map sends a rendered label to a class outside `0..=classes`.
    #[error("label map: rendered label {label} maps to class {class}, outside 0..={classes}")]
    LabelMap {
        label: u32,
        class: u8,
        classes: usize,
    },
}

pub type Result<T, E = GpuError> = std::result::Result<T, E>;

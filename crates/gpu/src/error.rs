//! Errors at the crate boundary: every variant names the offending field.

use std::time::Duration;

use labels::LabelError;
use thiserror::Error;

/// What can go wrong when weighing a batch on the GPU: the checks shared
/// with the CPU reference ([`LabelError`], wrapped as [`GpuError::Label`])
/// and the device's own failures. The caller can always fall back to the
/// CPU back end.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum GpuError {
    /// A camera, observation, batch or setting the CPU reference rejects
    /// the same way (bad size, empty batch, non-finite pose, …).
    #[error(transparent)]
    Label(#[from] LabelError),
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
    /// The GPU did not finish a pass of a batch within the readback timeout
    /// ([`crate::GpuSettings::readback_timeout`]): the device may be hung.
    /// The batch is dropped; fall back to the CPU back end, or retry.
    #[error("GPU {stage}: no result in {} s", .after.as_secs_f64())]
    Timeout {
        /// The stage that waited (`"readback"`).
        stage: &'static str,
        after: Duration,
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
}

pub type Result<T, E = GpuError> = std::result::Result<T, E>;

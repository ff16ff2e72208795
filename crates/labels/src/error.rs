//! Errors at the crate boundary: every variant names the offending field.

use thiserror::Error;

/// What can go wrong when building a camera or an observation, or when
/// weighing a batch on the CPU. The wgpu back end (`gpu::GpuError`) wraps
/// these for the checks it shares with the CPU reference.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum LabelError {
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
    /// A label map sends a rendered label to a class outside `0..=classes`.
    #[error("label map: rendered label {label} maps to class {class}, outside 0..={classes}")]
    LabelMap {
        label: u32,
        class: u8,
        classes: usize,
    },
}

pub type Result<T, E = LabelError> = std::result::Result<T, E>;

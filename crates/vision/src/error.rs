//! Errors at the crate boundary: each variant names the file, field, frame or
//! program at fault, so that a bad input never surfaces as a panic.

use std::path::PathBuf;

use thiserror::Error;

/// Everything that can go wrong reading cameras and frames, rendering and
/// segmenting.
#[derive(Debug, Error)]
pub enum VisionError {
    /// A file or folder could not be read or written.
    #[error("{path}: {cause}")]
    Io {
        path: PathBuf,
        #[source]
        cause: std::io::Error,
    },
    /// A camera file is malformed; `field` is the TOML key (or `"toml"` for
    /// a syntax error).
    #[error("camera file {path}: field `{field}`: {message}")]
    CameraFile {
        path: PathBuf,
        field: String,
        message: String,
    },
    /// An image file could not be decoded or encoded.
    #[error("image {path}: {message}")]
    Image { path: PathBuf, message: String },
    /// A frame source holds no frame at all.
    #[error("{source_name}: no frames")]
    NoFrames { source_name: String },
    /// Frames of one source disagree in size, or a size is unusable.
    #[error("{source_name}: frame {frame} is {width} × {height}: {message}")]
    FrameSize {
        source_name: String,
        frame: usize,
        width: u32,
        height: u32,
        message: String,
    },
    /// A frame size declared by a file header, `ffprobe` or a webcam
    /// driver is zero or beyond [`crate::frame::MAX_FRAME_SIDE`] /
    /// [`crate::frame::MAX_FRAME_BYTES`]; `field` is the header field or
    /// key (`W`, `width`, …). Reported before anything is allocated.
    #[error("{source_name}: frame size field `{field}` = {value}: {message}")]
    FrameLimit {
        source_name: String,
        field: String,
        value: u64,
        message: String,
    },
    /// A source gave no data within its read timeout (a stalled `ffmpeg`,
    /// `ffprobe` or camera); `what` says what was awaited.
    #[error("{source_name}: timed out after {seconds:.1} s waiting for {what}")]
    Timeout {
        source_name: String,
        seconds: f64,
        what: String,
    },
    /// A helper program (`ffmpeg`, `ffprobe`) is missing or failed.
    #[error("program `{program}`: {message}")]
    Program { program: String, message: String },
    /// A video stream ended in the middle of a frame or is malformed.
    #[error("video {path}: {message}")]
    Video { path: PathBuf, message: String },
    /// Seeking is impossible (live sources) or out of range.
    #[error("{source_name}: cannot seek to frame {frame}: {message}")]
    Seek {
        source_name: String,
        frame: usize,
        message: String,
    },
    /// A webcam could not be opened or read.
    #[error("webcam {device}: {message}")]
    Webcam { device: String, message: String },
    /// A parameter (threshold, size, range, option) is out of its domain.
    #[error("invalid {parameter} = {value}: {message}")]
    Parameter {
        parameter: &'static str,
        value: String,
        message: String,
    },
    /// An image buffer does not match its stated size.
    #[error("{what}: expected {expected} bytes for {width} × {height}, got {found}")]
    BufferSize {
        what: &'static str,
        width: u32,
        height: u32,
        expected: usize,
        found: usize,
    },
    /// The background model or the colour models are not ready.
    #[error("segmentation: {0}")]
    Segmentation(String),
    /// A skeleton or BVH error.
    #[error(transparent)]
    Skeleton(#[from] skeleton::SkeletonError),
    /// A camera or label-image error from the `labels` crate.
    #[error(transparent)]
    Labels(#[from] labels::LabelError),
}

/// Result with [`VisionError`].
pub type Result<T> = std::result::Result<T, VisionError>;

impl VisionError {
    /// [`Self::Io`] for `path` (also the `footage` crate's files).
    pub fn io(path: impl Into<PathBuf>, cause: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            cause,
        }
    }

    /// [`Self::Parameter`]: `parameter = value` is out of its domain, as
    /// `message` says.
    pub fn parameter(
        parameter: &'static str,
        value: impl std::fmt::Display,
        message: impl Into<String>,
    ) -> Self {
        Self::Parameter {
            parameter,
            value: value.to_string(),
            message: message.into(),
        }
    }
}

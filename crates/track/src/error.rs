//! Errors of the tracker: every one names the parameter, joint, file or
//! frame at fault.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum TrackError {
    /// A setting outside its valid range.
    #[error("invalid setting `{field}` = {value}: {reason}")]
    InvalidSetting {
        field: &'static str,
        value: String,
        reason: &'static str,
    },
    /// A pose of the wrong length or with a non-finite value.
    #[error("{what}: {message}")]
    BadPose { what: String, message: String },
    /// A joint the tracker needs is missing from the body.
    #[error("body has no joint named `{name}` ({why})")]
    MissingJoint { name: String, why: &'static str },
    /// The likelihood back end failed.
    #[error("likelihood ({backend}): {source}")]
    Likelihood {
        backend: String,
        #[source]
        source: gpu::GpuError,
    },
    /// A skeleton operation (BVH loading, FK) failed.
    #[error(transparent)]
    Skeleton(#[from] skeleton::SkeletonError),
    /// The particle weights collapsed or were invalid.
    #[error("particle weights at frame {frame}: {source}")]
    Weights {
        frame: u64,
        #[source]
        source: smc::SmcError,
    },
    /// The pose prior could not be learned.
    #[error("pose prior: {0}")]
    Prior(String),
    /// Reading or writing a file failed.
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

pub type Result<T, E = TrackError> = std::result::Result<T, E>;

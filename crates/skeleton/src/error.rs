//! Errors at the crate boundary. Every message names where the problem is:
//! the file and line of a BVH file, the element of a URDF file, or the joint
//! and field of a skeleton built in code.

use std::path::PathBuf;

/// Everything that can go wrong building, loading or posing a [`crate::Skeleton`].
#[derive(Debug, thiserror::Error)]
pub enum SkeletonError {
    /// A BVH file is malformed; `line` is 1-based.
    #[error("{file}:{line}: {message}")]
    Bvh {
        file: String,
        line: usize,
        message: String,
    },
    /// A URDF file is malformed or uses something we cannot represent.
    #[error("{file}: {element}: {message}")]
    Urdf {
        file: String,
        element: String,
        message: String,
    },
    /// A URDF file is malformed, at a known line (1-based) of the file.
    #[error("{file}:{line}: {element}: {message}")]
    UrdfAt {
        file: String,
        line: usize,
        element: String,
        message: String,
    },
    /// A skeleton built in code (or converted from a file) is inconsistent.
    #[error("joint '{joint}': {field}: {message}")]
    InvalidJoint {
        joint: String,
        field: &'static str,
        message: String,
    },
    /// A pose vector has the wrong length or holds a non-finite value.
    #[error("pose: {0}")]
    InvalidPose(String),
    /// A joint name that the skeleton does not have.
    #[error("no joint named '{0}'")]
    UnknownJoint(String),
    /// A mesh file of a URDF visual cannot be found or read; `file` is the
    /// name as written or the path read.
    #[error("{file}: {message}")]
    Mesh { file: String, message: String },
    /// Reading or writing a file failed.
    #[error("{path}: {cause}")]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
}

pub type Result<T, E = SkeletonError> = std::result::Result<T, E>;

/// The bytes of the file at `path`; an error names the file.
pub(crate) fn read_file(path: &std::path::Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|cause| SkeletonError::Io {
        path: path.to_path_buf(),
        cause,
    })
}

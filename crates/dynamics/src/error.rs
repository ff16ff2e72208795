//! Errors at the crate boundary; each names the joint, link, file or argument.

/// Everything that can go wrong building a [`crate::Model`] or evaluating it.
#[derive(Debug, thiserror::Error)]
pub enum DynamicsError {
    /// The skeleton (or the URDF file it came from) is invalid.
    #[error(transparent)]
    Skeleton(#[from] skeleton::SkeletonError),
    /// A URDF `<inertial>` (or other element) cannot be used.
    #[error("{file}: {element}: {message}")]
    Urdf {
        file: String,
        element: String,
        message: String,
    },
    /// A body's mass or inertia is unusable (negative, non-finite).
    #[error("joint '{joint}': {field}: {message}")]
    InvalidInertia {
        joint: String,
        field: &'static str,
        message: String,
    },
    /// The mass matrix is singular: the joint moves nothing with mass or
    /// inertia along one of its directions (a massless leaf, a point mass on
    /// a ball joint's centre).
    #[error(
        "joint '{joint}' (velocity {index}) moves no inertia: the mass matrix is singular; give its subtree a body with mass, or the model an armature (ModelOptions::armature)"
    )]
    Degenerate { joint: String, index: usize },
    /// An argument has the wrong length.
    #[error("{argument}: expected length {expected}, got {got}")]
    Dimension {
        argument: &'static str,
        expected: usize,
        got: usize,
    },
    /// An argument holds NaN or infinity.
    #[error("{argument}[{index}] is {value} (joint '{joint}')")]
    NonFinite {
        argument: &'static str,
        index: usize,
        value: f64,
        joint: String,
    },
    /// A parameter has no finite rate for the given velocity (a gimbal lock of
    /// Euler angles, the 2π shell of the exp map).
    #[error("joint '{joint}': parameter rates are singular at this configuration")]
    SingularParameterisation { joint: String },
    /// A numeric option is out of range.
    #[error("{name} must be {requirement}, got {value}")]
    InvalidOption {
        name: &'static str,
        requirement: &'static str,
        value: f64,
    },
    /// A frame index that the model does not have.
    #[error("joint index {index} out of range (the skeleton has {len} joints)")]
    UnknownJoint { index: usize, len: usize },
}

pub type Result<T, E = DynamicsError> = std::result::Result<T, E>;

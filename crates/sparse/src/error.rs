//! Errors at the crate boundary; each names the sensor, bone, frame or
//! parameter at fault.

/// Everything that can go wrong configuring or running the tracker.
#[derive(Debug, thiserror::Error)]
pub enum SparseError {
    /// A sensor or prior names a bone the skeleton does not have.
    #[error("{what}: unknown bone '{bone}'")]
    UnknownBone { what: String, bone: String },
    /// A sensor frame does not match the sensor set.
    #[error("sensor frame {frame}: {field} has {got} entries, the sensor set has {expected}")]
    StreamLength {
        frame: usize,
        field: &'static str,
        expected: usize,
        got: usize,
    },
    /// A sensor reading holds NaN or infinity (or a quaternion of zero norm).
    #[error("sensor frame {frame}: {sensor}: reading is not a finite {kind}: {value}")]
    NonFinite {
        frame: usize,
        sensor: String,
        kind: &'static str,
        value: String,
    },
    /// A numeric option is out of range.
    #[error("{name} must be {requirement}, got {value}")]
    InvalidParameter {
        name: String,
        requirement: &'static str,
        value: f64,
    },
    /// A pose or a clip has the wrong number of values.
    #[error("{what}: expected {expected} values, got {got}")]
    Dimension {
        what: String,
        expected: usize,
        got: usize,
    },
    /// A prior or a sensor stream that needs frames was given none.
    #[error("{what}: no frames")]
    Empty { what: String },
    /// A linear system the tracker relies on is singular.
    #[error("{stage}: {message}")]
    Solver {
        stage: &'static str,
        message: String,
    },
    #[error(transparent)]
    Dynamics(#[from] dynamics::DynamicsError),
    #[error(transparent)]
    Skeleton(#[from] skeleton::SkeletonError),
}

pub type Result<T, E = SparseError> = std::result::Result<T, E>;

/// `Ok(x)` when `x` is finite and positive, else a [`SparseError::InvalidParameter`].
pub(crate) fn require_positive(name: &str, x: f64) -> Result<f64> {
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(SparseError::InvalidParameter {
            name: name.to_string(),
            requirement: "finite and > 0",
            value: x,
        })
    }
}

/// `Ok(x)` when `x` is finite and ≥ 0.
pub(crate) fn require_non_negative(name: &str, x: f64) -> Result<f64> {
    if x.is_finite() && x >= 0.0 {
        Ok(x)
    } else {
        Err(SparseError::InvalidParameter {
            name: name.to_string(),
            requirement: "finite and >= 0",
            value: x,
        })
    }
}

//! Errors of the IK solvers. An unreachable target is not an error: the
//! solvers get as close as they can.

use skeleton::SkeletonError;
use smc::SmcError;

#[derive(Debug, thiserror::Error)]
pub enum IkError {
    /// A target or parameter of a constraint is NaN or infinite.
    #[error("constraint {index} ({kind}): {field} is not finite")]
    NonFinite {
        index: usize,
        kind: &'static str,
        field: &'static str,
    },
    /// A constraint refers to a joint (or parameter) the skeleton lacks.
    #[error("constraint {index} ({kind}): {message}")]
    InvalidConstraint {
        index: usize,
        kind: &'static str,
        message: String,
    },
    /// A noise covariance that is not symmetric positive definite, or of the
    /// wrong size.
    #[error("constraint {index} ({kind}): noise covariance {message}")]
    BadCovariance {
        index: usize,
        kind: &'static str,
        message: String,
    },
    /// A solver setting out of range (zero particles, negative σ, α ∉ (0, 1]…).
    #[error("{field}: {message}")]
    InvalidConfig {
        field: &'static str,
        message: String,
    },
    #[error(transparent)]
    Skeleton(#[from] SkeletonError),
    #[error(transparent)]
    Smc(#[from] SmcError),
}

pub type Result<T, E = IkError> = std::result::Result<T, E>;

//! Errors at the crate boundary: every bad parameter is named with its
//! value and the rule it breaks; nothing here returns a silent NaN.

use thiserror::Error;

/// Everything that can go wrong in `walker`.
#[derive(Debug, Error)]
pub enum WalkerError {
    /// A model or tracker parameter is out of its domain.
    #[error("parameter `{name}` = {value}: {reason}")]
    InvalidParameter {
        /// The parameter, as the thesis tables name it.
        name: &'static str,
        /// Its value.
        value: f64,
        /// The rule it breaks.
        reason: &'static str,
    },
    /// The resampling threshold exceeds the number of particles.
    #[error("N_thres = {n_thres} exceeds the number of particles N = {n}")]
    ThresholdAboveN {
        /// The threshold.
        n_thres: usize,
        /// The number of particles.
        n: usize,
    },
    /// An observation has the wrong shape or a non-finite coordinate.
    #[error("observation: {0}")]
    InvalidObservation(String),
    /// A fixed-point / root search did not converge.
    #[error("{what} did not converge after {iterations} iterations (residual {residual:e})")]
    NoConvergence {
        /// What was searched for.
        what: &'static str,
        /// Iterations spent.
        iterations: usize,
        /// The last residual norm.
        residual: f64,
    },
    /// The walker fell (no heel strike within the allowed time).
    #[error("the walker fell: {0}")]
    Fell(String),
    /// Motion-capture input (file, joint) could not be used.
    #[error("motion capture: {0}")]
    Mocap(String),
    /// From the skeleton crate (BVH loading).
    #[error(transparent)]
    Skeleton(#[from] skeleton::SkeletonError),
    /// From the particle engine.
    #[error(transparent)]
    Smc(#[from] smc::SmcError),
    /// From the camera.
    #[error(transparent)]
    Camera(#[from] labels::LabelError),
}

/// `Result` with [`WalkerError`].
pub type Result<T> = std::result::Result<T, WalkerError>;

/// `value > 0` and finite, else [`WalkerError::InvalidParameter`].
pub(crate) fn require_positive(name: &'static str, value: f64) -> Result<()> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(WalkerError::InvalidParameter {
            name,
            value,
            reason: "must be finite and > 0",
        })
    }
}

/// `value` finite, else [`WalkerError::InvalidParameter`].
pub(crate) fn require_finite(name: &'static str, value: f64) -> Result<()> {
    if value.is_finite() {
        Ok(())
    } else {
        Err(WalkerError::InvalidParameter {
            name,
            value,
            reason: "must be finite",
        })
    }
}

/// `lo <= value <= hi`, else [`WalkerError::InvalidParameter`].
pub(crate) fn require_in(name: &'static str, value: f64, lo: f64, hi: f64) -> Result<()> {
    if value >= lo && value <= hi {
        Ok(())
    } else {
        Err(WalkerError::InvalidParameter {
            name,
            value,
            reason: "outside its allowed interval",
        })
    }
}

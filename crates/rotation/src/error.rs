//! The crate's error type.
//!
//! Every constructor that takes user input (covariances, axes, limits, Euler
//! orders) validates it and returns a [`RotationError`] naming the offending
//! field; nothing in this crate panics on bad input.

use crate::euler::Axis;

/// Why a rotation-related value could not be built.
#[derive(thiserror::Error, Debug, Clone, PartialEq)]
pub enum RotationError {
    /// A covariance (or other matrix that must be symmetric positive
    /// definite) failed its Cholesky factorisation.
    #[error("`{field}` is not positive definite (Cholesky factorisation failed)")]
    NotPositiveDefinite {
        /// The argument or field that was rejected.
        field: &'static str,
    },
    /// A covariance is not symmetric within a relative tolerance.
    #[error("`{field}` is not symmetric (largest |A - Aᵀ| entry {asymmetry:e})")]
    NotSymmetric {
        /// The argument or field that was rejected.
        field: &'static str,
        /// The largest absolute difference between mirrored entries.
        asymmetry: f64,
    },
    /// A NaN or infinity where a finite number is required.
    #[error("`{field}` contains a non-finite value (NaN or infinity)")]
    NonFinite {
        /// The argument or field that was rejected.
        field: &'static str,
    },
    /// An axis that is zero, too short to normalise, or parallel to another
    /// axis it must be independent of.
    #[error("`{field}` is degenerate: {reason}")]
    DegenerateAxis {
        /// The argument or field that was rejected.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A joint limit or distribution width outside its allowed range.
    #[error("`{field}` = {value} is invalid: {reason}")]
    InvalidLimit {
        /// The argument or field that was rejected.
        field: &'static str,
        /// The rejected value.
        value: f64,
        /// The rule it breaks.
        reason: &'static str,
    },
    /// An Euler order with two consecutive equal axes (e.g. `XXY`), which
    /// spans only two degrees of freedom.
    #[error("`order` {axes:?} is not an Euler order: consecutive axes must differ")]
    InvalidEulerOrder {
        /// The rejected axes.
        axes: [Axis; 3],
    },
}

//! Rotations for articulated bodies: the exponential map and its derivatives
//! (EXPMAP), swing–twist joints with elliptical limits (EXPMAP §5), Euler
//! angles for BVH files, and the QuTem quaternion Gaussian (SMC-IK §5.1,
//! App. A).
//!
//! Conventions used throughout:
//!
//! - all scalars are `f64` radians; quaternions are nalgebra's
//!   `UnitQuaternion`, acting on column vectors (`x' = q x q*`), and
//!   `q₂ · q₁` means "first `q₁`, then `q₂`";
//! - an exp-map vector `v` is a rotation by `|v|` about `v/|v|`
//!   (EXPMAP §3); [`log`] returns the representative with `|v| ≤ π`;
//! - angular velocity in [`vdot_from_omega`] is in the world (parent) frame,
//!   `q̇ = ½ ω q` (EXPMAP §4.1); [`vdot_from_body_omega`] takes the body
//!   frame;
//! - swing–twist: `q = exp(s₁ u + s₂ w) · R_t(τ)` (`swing_twist`);
//! - Euler (BVH): `R = R_{a₀}(θ₀) R_{a₁}(θ₁) R_{a₂}(θ₂)` ([`euler`]);
//! - QuTem: `q = m · exp(ε)`, `ε ~ N(0, Σ)` in the mean's local frame
//!   (`qutem`).

mod error;
pub mod euler;
mod expmap;
mod qutem;
mod swing_twist;
#[cfg(test)]
mod testing;

pub use error::RotationError;
pub use expmap::{
    exp, exp_partials, log, log_near, reparameterize, rotation_matrix_partials,
    vdot_from_body_omega, vdot_from_omega,
};
pub use qutem::QuTem;
pub use swing_twist::{SwingTwistFrame, SwingTwistLimit};

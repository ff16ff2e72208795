//! Articulated rigid-body dynamics for posecloud's skeletons (SPARSE §2.2.1).
//!
//! A [`Model`] turns any [`skeleton::Skeleton`] (presets, BVH, URDF) into a
//! tree of rigid bodies — capsule inertias at uniform density with masses
//! from the skeleton or a Dempster table ([`MassSource`]), or a URDF's
//! `<inertial>` values ([`Model::from_urdf`]) — and evaluates the terms of
//! SPARSE Eq. 1, `M(q) q̈ + C(q, q̇) = τ + Jᵀλ` (checked against Pinocchio to
//! 10⁻¹⁵ in `tests/pinocchio_fixtures.rs`):
//!
//! | what | function | algorithm |
//! |------|----------|-----------|
//! | mass matrix `M(q)` | [`Model::mass_matrix`] | CRBA (RBDA Table 6.2) |
//! | bias forces `C(q, v)` (gravity, Coriolis, centrifugal) | [`Model::bias_forces`] | RNEA (RBDA Table 5.1) |
//! | inverse dynamics `τ = M a + C` | [`Model::inverse_dynamics`] | RNEA |
//! | forward dynamics `a = M⁻¹(τ − C)` | [`Model::forward_dynamics`] | ABA (RBDA Table 7.1) |
//! | the same through `M` | [`Model::forward_dynamics_crba`], [`Model::solve_mass`] | CRBA + sparse `LᵀL` (RBDA §6.5) |
//! | point and orientation Jacobians | [`Model::point_jacobian`], [`Model::orientation_jacobian`], [`Model::orientation_log_jacobian_at`] | motion subspaces in the world frame |
//! | `q ⊕ v dt` | [`Model::integrate`] | exp maps of SO(3) / SE(3) |
//!
//! Generalised velocities follow Pinocchio (local angular velocity for ball
//! and free joints, parameter rates for hinges, prismatic and swing joints):
//! see `model` for the convention and the map to parameter rates. All
//! scratch lives in [`Data`]; nothing allocates per call.
//!
//! ```
//! use dynamics::{MassSource, Model};
//! let human = skeleton::presets::human();
//! let model = Model::from_skeleton(&human, MassSource::Skeleton).unwrap();
//! let mut data = model.data();
//! let q = human.rest_pose();
//! let v = vec![0.0; model.nv()];
//! model.mass_matrix_and_bias(&mut data, &q, &v).unwrap();
//! // Standing still, the root must hold the whole weight: C's vertical force.
//! let m = model.total_mass();
//! assert!((data.tau()[1] - m * 9.80665).abs() < 1e-9 * m);
//! ```

mod algorithms;
mod error;
mod export;
mod inertia;
mod model;
mod spatial;

pub use algorithms::Data;
pub use error::{DynamicsError, Result};
pub use export::model_to_json;
pub use inertia::{MassSource, capsule_inertia, dempster_fraction};
pub use model::{JointFrame, JointModel, Model, ModelOptions, RigidBody};
pub use spatial::{Force, Inertia, Motion, Se3, skew};

//! SMC-IK: inverse kinematics as a particle filter (Courty & Arnaud,
//! *Sequential Monte Carlo Inverse Kinematics*), with the Jacobian baselines
//! it is compared against.
//!
//! - `constraint`: the constraint library and likelihood (SMC-IK Eq. 13–14).
//! - `prior`: the evolution prior (SMC-IK Eq. 12): QuTem random walk per
//!   joint with the paper's accept/reject on joint limits, or truncated
//!   Gaussians in joint coordinates that never reject.
//! - `solver`: the filter (SMC-IK Algorithm 1) with MAP + smoothing
//!   (Eq. 15), adaptive noise for precision, optional optimisation moves.
//! - `jacobian`: analytic and finite-difference Jacobians of the whitened
//!   residual; Jacobian-transpose and damped-least-squares solvers (SMC-IK §3,
//!   Eq. 5).
//! - [`scenarios`]: problems shared by the app, examples and tests (the
//!   §6.3 human).

mod constraint;
mod error;
mod jacobian;
mod prior;
pub mod protocol;
pub mod scenarios;
mod solver;

pub use constraint::{
    Constraint, ConstraintKind, ConstraintLikelihood, ConstraintSet, FloorMode, Noise,
    smoothness_energy,
};
pub use error::{IkError, Result};
pub use prior::{
    EvolutionPrior, JointNoise, LimitSampler, PriorCounts, lever_arm_noise, sample_within_limits,
};
pub use solver::{Adaptation, IkStepReport, OptimisationMoves, SmcIk, SmcIkConfig};

pub use jacobian::{
    Difference, JacobianKind, JacobianScratch, JacobianSolver, Method, SolveReport,
};

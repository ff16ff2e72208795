//! # walker — physics-based walking priors (PHYSPRIOR)
//!
//! Brubaker's thesis (*Physics-Based Priors for Human Pose Tracking*, 2006)
//! as a library:
//!
//! - [`anthropomorphic`]: the anthropomorphic walker (§2.1.2, App. A): TMT
//!   equations of motion, heel-strike detection with the stubbing rule,
//!   toe-off impulse and the impulsive transfer of support, RK4, and the
//!   periodic gait as a fixed point of the stride map.
//! - [`monopode`]: the monopode (§2.1.1, Eq. 2.1–2.4).
//! - [`kinematics`]: the kinematic lower body, joint evolution (Eq. 2.6)
//!   with truncated normals (Table 2.5).
//! - `stochastic`: stochastic forces (Tables 2.2, 2.4; App. B.2) and
//!   anthropometric segment lengths (Eq. 2.7–2.8, Table 2.6, §3.2).
//! - [`mocap`]: tracking points from CMU BVH clips.
//! - `tracker`: [`WalkerTracker`], SIR (Alg. 1) over the prior with the
//!   2D point likelihood of Ch. 4 (Table 4.1); mean pose, covariance
//!   ellipses, MAP trajectory.

pub mod anthropomorphic;
mod error;
pub mod kinematics;
pub mod mocap;
pub mod monopode;
mod stochastic;
mod tracker;

pub use error::{Result, WalkerError};
pub use stochastic::ForceParams;
pub use tracker::observe;
pub use tracker::{
    Dynamics, Ellipse, FrameReport, InitialPose, PointObservation, Pose, WalkerConfig,
    WalkerTracker,
};

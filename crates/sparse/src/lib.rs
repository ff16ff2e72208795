//! Physics-based motion capture from sparse sensors (SPARSE: Andrews et al.,
//! *Real-time Physics-based Motion Capture with Sparse Sensors*, CVMP 2016).
//!
//! Six IMUs (orientations) and five optical markers (positions) drive a
//! physics-based body through an inverse-dynamics solver:
//!
//! | stage | module | paper |
//! |-------|--------|-------|
//! | sensors, registration, synthetic streams | `sensors` | Eq. 2–3, §4, Fig. 5 |
//! | motion priors REF / NGT / CD, null-space rows | `prior`, [`null_space_rows`] | §3, Eq. 4–5 |
//! | compliant solve, torque filter, Eq. 11, integration | `tracker` | Eq. 1, 6, 11, §2.3 |
//! | contacts: velocity and proximity criteria, friction cones, PGS | `contact` | Eq. 7–10 |
//! | pseudo-inverse / damped least-squares IK baseline | `baseline` | §4.1 "IK comparison" |
//! | clips at 60 Hz and the error measures of Table 1 | `clip` | §4.1 |
//!
//! An application drives a [`SparseTracker`]: build it with a skeleton, a
//! [`SensorSet`] (e.g. [`SensorSet::paper_layout`]), a [`MotionPrior`] and a
//! [`SparseConfig`]; [`SparseTracker::reset`] at a pose; then one
//! [`SparseTracker::step`] per 60 Hz [`SensorFrame`], which returns the pose,
//! the contact forces and the joint torques.

mod baseline;
mod clip;
mod contact;
mod error;
mod prior;
mod sensors;
mod tracker;

pub use baseline::{IkMethod, IkTracker};
pub use clip::{Clip, body_errors, error_bodies};
pub use contact::{Contact, ContactConfig, project_cones};
pub use error::{Result, SparseError};
pub use prior::{ClusterOptions, ClusteredDatabase, MotionPrior, PriorQuery};
pub use sensors::ConstraintRows;
pub use sensors::{Imu, Marker, SensorFrame, SensorMask, SensorSet, SensorSpec, SyntheticSensors};
pub use tracker::{SparseConfig, SparseStepReport, SparseTracker, finite_difference_velocity};
pub use tracker::{body_model, compliance, null_space_rows, torque_limits};

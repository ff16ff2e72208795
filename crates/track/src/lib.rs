//! # track — monocular 3D tracking by RTPF
//!
//! Gómez Jáuregui et al., *Real-Time Particle Filtering with Heuristics
//! for 3D Motion Capture by Monocular Vision* (RTPF): a body model is
//! registered on a segmented video frame by a particle filter whose
//! particles are poses, weighed by the non-overlap of rendered and observed
//! label regions (RTPF Eq. 1–2, [`gpu`]).
//!
//! - `body`: the tracked body — skeleton, tracked parameters and their
//!   joint-limit boxes, default capsule radii, arms;
//! - `tracker`: [`Tracker`], the filter engine with the heuristics of
//!   RTPF §IV (PFS, HSPC, HPOR, HKFS) and their combination PFRTH (§V);
//! - `frame`: [`TrackFrame`], what a step hands its drivers (estimate
//!   in world and image, cloud with weights, heaviest particles,
//!   diagnostics, stage times), read from the step's forward kinematics;
//! - `simplex`: lockstep downhill simplex (HPOR, §IV-C1);
//! - [`flip`]: kinematic flipping (HKFS, §IV-C2);
//! - `prior`: the PCA Gaussian pose prior (§IV-D);
//! - `backend`: GPU or CPU likelihood, chosen automatically;
//! - [`synthetic`]: synthetic sequences from BVH clips with ground truth;
//! - `start`: initialisation from a standard start pose (arms down,
//!   T-pose) placed by a silhouette search;
//! - `defaults`: the camera and body used when no file is given;
//! - `session`: the tracking session (source → guided start →
//!   segmentation → tracker → outputs) that `posecloud track` and the app
//!   drive; `guide`: the guided start's decisions (background, person,
//!   placing, tracking, lost), a state machine the session feeds;
//!   [`SessionSpec`] and [`FilterSettings`]: what it tracks and how;
//!   [`where_to_look`]: the one person-box rule of every keypoint
//!   pipeline; `record`: its outputs, written as they are tracked;
//! - `profile`: per-stage wall times of tracked frames (`posecloud
//!   track --profile`);
//! - [`smooth`]: the arms' depth branches in the cloud and the smoothed
//!   estimate (fixed-lag or over the whole run).

mod anatomy;
mod arm_prior;
mod backend;
mod body;
mod defaults;
mod error;
pub mod flip;
mod foreground;
mod frame;
mod guide;
mod keypoint_stage;
mod keypoint_term;
mod lift;
mod prior;
mod profile;
mod record;
pub mod run;
mod session;
mod simplex;
pub mod smooth;
mod spec;
mod start;
mod step_buffers;
pub mod synthetic;
mod tracker;

pub use anatomy::{ArmAnatomy, DEFAULT_ANATOMY_WEIGHT, chest_frame};
pub use arm_prior::{
    ArmDensity, ArmFeature, ArmPrior, DEFAULT_ARM_PRIOR_WEIGHT, DEFAULT_BANDWIDTH, arm_feature,
};
pub use backend::{Backend, BackendChoice, SharedDevice};
pub use body::{Arm, Param, Selection, Side, TrackedBody, angle_between, default_radii};
pub use defaults::{DEFAULT_FOV_DEG, DEFAULT_SUBJECT_HEIGHT, default_body, default_camera};
pub use error::{Field, Result, SessionError, TrackError};
pub use foreground::{ForegroundEvidence, Look, where_to_look};
pub use frame::TrackFrame;
pub use guide::{Stage, Status};
pub use keypoint_term::{
    DEFAULT_DEPTH_SCALE, DEFAULT_DEPTH_SIGMA, DEFAULT_KEYPOINT_LIFTS, DEFAULT_KEYPOINT_SIGMA,
    KeypointMap, KeypointObservation, KeypointTerm, LANDMARK_SHIFT, LandmarkSource,
    ObservedKeypoint, landmark_shift,
};
pub use lift::{lift_hypotheses, points_at_distance};
pub use prior::PosePrior;
pub use profile::{FrameTimes, Profile, STAGES, StageSummary};
pub use record::Recorder;
pub use session::{KEYPOINT_MIN_SCORE, Session, SessionStep};
pub use simplex::LockstepSimplex;
pub use spec::{CameraSpec, FilterSettings, GuideParams, KnownPose, SessionSpec, Subject};
pub use start::{
    SEARCH_EXTENT, SEARCH_STEPS, StartPose, in_front_of, place_in_view, start_pose,
    start_pose_from, start_pose_in_view,
};
pub use tracker::{
    FilterKind, ObservationMode, StepReport, StepTimings, Tracker, TrackerConfig,
    search_root_position,
};

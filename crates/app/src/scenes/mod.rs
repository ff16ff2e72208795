//! The scenes, each a Bevy-free model the tests drive directly and a view
//! (its Bevy plugin and panels):
//!
//! - [`ik`]: the IK playground (human, arm, chain, hand, URDF, BVH);
//! - [`track`]: RTPF tracking of a video, webcam or synthetic render;
//! - [`walker`]: PHYSPRIOR's walker tracking 2D points;
//! - [`sparse`]: SPARSE's tracker on IMUs and markers.
//!
//! The tracking, walker and sparse windows run on the shared host
//! ([`crate::gui::scene_common::run_scene_window`]).

pub mod ik;
pub mod sparse;
pub mod track;
pub mod walker;

//! posecloud's application crate: the interactive IK playground (Bevy
//! plugins in [`gui`]) over a Bevy-free model ([`playground`], [`scenes`],
//! [`settings`], [`script`]) that the tests drive directly.

pub mod cli;
pub mod colormap;
pub mod gui;
pub mod playground;
pub mod runtime;
pub mod scenes;
pub mod script;
pub mod session;
pub mod settings;
pub mod sparse_scene;
pub mod tracking;
pub mod walker_scene;

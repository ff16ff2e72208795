//! posecloud's application crate: the scenes ([`scenes`]: IK playground,
//! tracking, walker, sparse sensors — each a Bevy-free model and a view),
//! the window host they share ([`gui`]), the solver runtime that runs a
//! model on its own thread ([`runtime`]), and the command-line tools
//! ([`cli`]).

pub mod cli;
mod colormap;
pub mod gui;
pub mod runtime;
pub mod scenes;
#[cfg(test)]
mod testing;

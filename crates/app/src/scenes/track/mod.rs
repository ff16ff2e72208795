//! RTPF tracking: [`model::TrackingScene`] and its window ([`view::run`]).

pub mod model;
pub mod view;

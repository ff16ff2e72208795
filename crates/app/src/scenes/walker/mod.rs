//! PHYSPRIOR's walker: [`model::WalkerScene`] and its window ([`view::run`]).

pub mod model;
pub mod view;

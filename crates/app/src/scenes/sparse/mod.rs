//! SPARSE's sparse sensors: [`model::SparseScene`] and its window ([`view::run`]).

pub mod model;
pub mod view;

//! Physics-based walking priors (PHYSPRIOR). Work in progress (issue 12).

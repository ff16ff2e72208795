//! Sparse-sensor tracking (SPARSE). Work in progress (issue 13).

//! Jacobians of the whitened constraint residual and the Jacobian baselines (in progress).

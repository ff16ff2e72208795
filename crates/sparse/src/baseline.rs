//! The IK baseline of SPARSE §4.1: per frame one step `q ← q ⊕ Δq` with
//! `J Δq = φ` for the kinematic constraints of Eq. 6 — sensor rows (Eq. 2–3)
//! and the prior's null-space rows (Eq. 5) — solved by the pseudo-inverse
//! (Buss's method, `Δq = J⁺φ` by SVD) or by damped least squares
//! (`Δq = (JᵀJ + μ²I)⁻¹Jᵀφ`). No masses, no contacts, no torque limits.
//!
//! The Jacobians are the same world-frame twists the `ik` crate's analytic
//! Jacobians use (`JointKind::param_twists`), here taken from the dynamics
//! crate in generalised-velocity coordinates so that the step lives in the
//! same tangent space as the physics tracker's.

use nalgebra::{DMatrix, DVector};
use skeleton::Skeleton;

use crate::error::{Result, SparseError, require_positive};
use crate::prior::{MotionPrior, prior_residual};
use crate::sensors::{SensorFrame, SensorMask, SensorSet};
use crate::tracker::{TrackedBody, null_space_rows};

/// How the baseline solves `J Δq = φ`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum IkMethod {
    /// `Δq = J⁺φ` (SVD, singular values below 10⁻⁹ of the largest dropped).
    PseudoInverse,
    /// `Δq = (JᵀJ + μ²I)⁻¹Jᵀφ`.
    DampedLeastSquares { damping: f64 },
}

impl IkMethod {
    pub fn name(&self) -> &'static str {
        match self {
            Self::PseudoInverse => "IK (pinv)",
            Self::DampedLeastSquares { .. } => "IK (DLS)",
        }
    }
}

/// Kinematic tracker used as the baseline of Table 1.
pub struct IkTracker {
    body: TrackedBody,
    method: IkMethod,
}

impl IkTracker {
    pub fn new(
        skeleton: &Skeleton,
        sensors: SensorSet,
        prior: MotionPrior,
        method: IkMethod,
    ) -> Result<Self> {
        if let IkMethod::DampedLeastSquares { damping } = method {
            require_positive("IK damping", damping)?;
        }
        let model = crate::tracker::body_model(skeleton, 70.0, 1e-3)?;
        Ok(Self {
            body: TrackedBody::new(model, sensors, prior, 0),
            method,
        })
    }

    pub fn reset(&mut self, pose: &[f64]) -> Result<()> {
        let body = &mut self.body;
        if pose.len() != body.q.len() {
            return Err(SparseError::Dimension {
                what: "IK reset pose".into(),
                expected: body.q.len(),
                got: pose.len(),
            });
        }
        body.q.copy_from_slice(pose);
        body.frame = 0;
        body.prior.reset();
        Ok(())
    }

    pub fn pose(&self) -> &[f64] {
        &self.body.q
    }

    pub fn mask_mut(&mut self) -> &mut SensorMask {
        &mut self.body.mask
    }

    /// One frame: builds `J`, `φ`, solves for `Δq` and moves the pose.
    pub fn step(&mut self, reading: &SensorFrame) -> Result<&[f64]> {
        let ns = self.body.sense(reading)?;
        let body = &mut self.body;
        let nv = body.model.nv();
        let skeleton = body.model.skeleton();
        let np = nv - body.root_dof;
        let js = body.rows.jac.rows(0, ns).into_owned();
        let null = null_space_rows(&js, body.root_dof, true);
        let mut j = DMatrix::zeros(ns + np, nv);
        j.rows_mut(0, ns).copy_from(&js);
        j.rows_mut(ns, np).copy_from(&null);
        let mut phi = DVector::zeros(ns + np);
        phi.rows_mut(0, ns).copy_from_slice(&body.rows.phi[..ns]);
        let mut prior_phi = vec![0.0; np];
        prior_residual(skeleton, &body.q, &body.estimate, &mut prior_phi);
        phi.rows_mut(ns, np).copy_from_slice(&prior_phi);
        let dq = match self.method {
            IkMethod::PseudoInverse => {
                j.svd(true, true)
                    .solve(&phi, 1e-9)
                    .map_err(|m| SparseError::Solver {
                        stage: "IK pseudo-inverse",
                        message: m.to_string(),
                    })?
            }
            IkMethod::DampedLeastSquares { damping } => {
                let mut a = j.tr_mul(&j);
                for i in 0..nv {
                    a[(i, i)] += damping * damping;
                }
                a.cholesky()
                    .ok_or(SparseError::Solver {
                        stage: "IK damped least squares",
                        message: "normal matrix not positive definite".into(),
                    })?
                    .solve(&j.tr_mul(&phi))
            }
        };
        let mut next = vec![0.0; nv];
        body.model
            .integrate(&body.q, dq.as_slice(), 1.0, &mut next)?;
        body.q = next;
        body.frame += 1;
        Ok(&body.q)
    }
}

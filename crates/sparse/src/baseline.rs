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

use dynamics::{Data, Model};
use nalgebra::{DMatrix, DVector, Isometry3};
use skeleton::Skeleton;

use crate::error::{Result, SparseError, require_positive};
use crate::prior::{MotionPrior, PriorQuery, prior_residual};
use crate::sensors::{RowKind, SensorFrame, SensorMask, SensorSet};
use crate::tracker::null_space_rows;

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
    model: Model,
    data: Data,
    sensors: SensorSet,
    mask: SensorMask,
    prior: MotionPrior,
    method: IkMethod,
    q: Vec<f64>,
    frame: usize,
    root_dof: usize,
    world: Vec<Isometry3<f64>>,
    jac3: DMatrix<f64>,
    js: DMatrix<f64>,
    phi: Vec<f64>,
    kinds: Vec<RowKind>,
    estimate: Vec<f64>,
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
        let nv = model.nv();
        let rows = sensors.max_rows();
        Ok(Self {
            data: model.data(),
            mask: SensorMask::all(&sensors),
            root_dof: skeleton.joint(0).kind.dof(),
            world: vec![Isometry3::identity(); skeleton.len()],
            jac3: DMatrix::zeros(3, nv),
            js: DMatrix::zeros(rows.max(1), nv),
            phi: vec![0.0; rows.max(1)],
            kinds: vec![RowKind::Prior; rows.max(1)],
            estimate: skeleton.rest_pose(),
            q: skeleton.rest_pose(),
            frame: 0,
            model,
            sensors,
            prior,
            method,
        })
    }

    pub fn reset(&mut self, pose: &[f64]) -> Result<()> {
        if pose.len() != self.q.len() {
            return Err(SparseError::Dimension {
                what: "IK reset pose".into(),
                expected: self.q.len(),
                got: pose.len(),
            });
        }
        self.q.copy_from_slice(pose);
        self.frame = 0;
        self.prior.reset();
        Ok(())
    }

    pub fn pose(&self) -> &[f64] {
        &self.q
    }

    pub fn mask_mut(&mut self) -> &mut SensorMask {
        &mut self.mask
    }

    /// One frame: builds `J`, `φ`, solves for `Δq` and moves the pose.
    pub fn step(&mut self, reading: &SensorFrame) -> Result<&[f64]> {
        self.sensors.validate(reading, self.frame)?;
        let nv = self.model.nv();
        let skeleton = self.model.skeleton();
        skeleton.forward_kinematics_into(&self.q, &mut self.world);
        let ns = self.sensors.constraint_rows(
            &self.model,
            &mut self.data,
            &self.q,
            &self.world,
            reading,
            &self.mask,
            &mut self.js,
            &mut self.phi,
            &mut self.kinds,
            &mut self.jac3,
        )?;
        let query = PriorQuery {
            frame: self.frame,
            q: &self.q,
            world: &self.world,
            reading,
            enabled: &self.mask,
        };
        self.prior.estimate(skeleton, &query, &mut self.estimate)?;
        let np = nv - self.root_dof;
        let js = self.js.rows(0, ns).into_owned();
        let null = null_space_rows(&js, self.root_dof, true);
        let mut j = DMatrix::zeros(ns + np, nv);
        j.rows_mut(0, ns).copy_from(&js);
        j.rows_mut(ns, np).copy_from(&null);
        let mut phi = DVector::zeros(ns + np);
        phi.rows_mut(0, ns).copy_from_slice(&self.phi[..ns]);
        let mut prior_phi = vec![0.0; np];
        prior_residual(skeleton, &self.q, &self.estimate, &mut prior_phi);
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
        self.model
            .integrate(&self.q, dq.as_slice(), 1.0, &mut next)?;
        self.q = next;
        self.frame += 1;
        Ok(&self.q)
    }
}

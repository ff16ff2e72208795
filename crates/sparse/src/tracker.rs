//! The physics-based tracker of SPARSE §2.2–2.3: one inverse-dynamics step
//! per sensor frame.
//!
//! Per frame, with `h` the sensor period, `M`, `C` the mass matrix and bias
//! forces at the current state `(q, v)` (dynamics crate; `v` the generalised
//! velocity), and the constraint stack `J = (J_θ; J_x; N_s)`,
//! `φ = (φ_θ; φ_x; φ_q̃)`:
//!
//! 1. **Compliant tracking** (Eq. 6). Each row `i` with stiffness `k_i` and
//!    damping `d_i` gets
//!    `Γ_ii = 1 / ((1 + h⁻¹k_i⁻¹) d_i)`, `Σ_ii = h⁻²k_i⁻¹ / ((1 + h⁻¹k_i⁻¹) d_i)`,
//!    and the Schur complement gives the optimal velocities
//!    `A q̇* = b`, `A = M + JᵀΣ⁻¹J`, `b = M v − hC + h⁻¹JᵀΣ⁻¹Γφ`, subject to
//!    the box `|q̇*| ≤ q̇_max` (Cholesky, then box PGS when a bound is hit).
//!    The prior's rows are projected into the null space of the sensors,
//!    `N_s = Υ(I − J_s⁺J_s)` (Eq. 5), so the prior cannot pull a sensor off
//!    its reading.
//! 2. **Torque-limit motion filter** (§2.3). The joint torques implied by
//!    `q̇*` are `τ = Jᵀλ = M (q̇* − v)/h + C` (row 1 of Eq. 6). Where a
//!    non-root `τ_i` leaves `[τ_lo, τ_hi]` by `Δτ_i`, the damping of every
//!    row grows by `d ← d (1 + hα |J M⁻¹ Δτ|)` (absolute value: the paper's
//!    formula can otherwise lower it) and step 1 is solved again, at most
//!    `filter_iterations` times.
//! 3. **Contacts** (Eq. 7–10, [`crate::contact`]).
//! 4. **Final motion** (Eq. 11). With the dynamics `M (q̇₊ − v) = h(τ₊ −
//!    C + J_cᵀB λ_c)` held exactly, the impulses `u = hτ₊` minimise
//!    `½‖q̇₊ − q̇*‖²_{w_q M} + ½‖u‖²_{W_τ}`, `W_τ = diag(1/M_ii)` for joints
//!    and `200/𝓜` for the root, under `τ_lo ≤ τ₊ ≤ τ_hi` for joints (the
//!    root is unbounded), by an active-set solve of `(w_q M⁻¹ + W_τ) u =
//!    w_q (q̇* − a)`. Two departures from the text, both for units: the
//!    velocity error is measured in the full mass-matrix norm (the paper's
//!    `W_q = 10 diag(M)` is its diagonal), and the torque term is weighed
//!    as the impulse `hτ`, which makes the two terms comparable velocity
//!    changes; `w_q` defaults to 1000 (with the paper's 10 every joint lags
//!    `q̇*` by ~10 % per frame, which on the walk clip doubles the error).
//!    The root's residual wrench costs 200/𝓜 per unit impulse: it moves
//!    mainly through the contact forces, as the paper intends.
//! 5. **Integration** at the sensor rate: `v ← q̇₊`, `q ← q ⊕ h q̇₊` on the
//!    configuration manifold.

use dynamics::{Data, MassSource, Model, ModelOptions};
use nalgebra::{DMatrix, DVector, Isometry3};
use skeleton::{BodyPart, Skeleton};

use crate::contact::{
    Contact, ContactConfig, contact_generalized_forces, detect_contacts, solve_box_pgs,
    solve_friction_pgs,
};
use crate::error::{Result, SparseError, require_non_negative, require_positive};
use crate::prior::{MotionPrior, PriorQuery, prior_residual};
use crate::sensors::{ConstraintRows, RowKind, SensorFrame, SensorMask, SensorSet};

/// Settings of [`SparseTracker`]; defaults are the paper's (§4).
#[derive(Clone, Debug, PartialEq)]
pub struct SparseConfig {
    /// Sensor rate, Hz (`h = 1/rate`).
    pub rate: f64,
    /// Stiffness of marker, IMU and prior rows (5×10⁸, 1.2×10⁸, 2×10⁶).
    pub marker_stiffness: f64,
    pub imu_stiffness: f64,
    pub prior_stiffness: f64,
    /// Initial damping of the sensor rows (paper: 2.0 for every row).
    pub damping: f64,
    /// Initial damping of the prior rows (paper: 2.0). §2.2.5 suggests more
    /// damping where the prior is noisy.
    pub prior_damping: f64,
    /// Project the prior into the sensors' null space (Eq. 5).
    pub null_space: bool,
    /// Box on the optimal velocities, rad/s (m/s for translations).
    pub velocity_limit: f64,
    /// Scale of the per-joint torque limits ([`torque_limits`]). Default 3:
    /// at 1 the table's round figures clip the walk clip's own torques under
    /// NGT noise and the error grows by half.
    pub torque_limit_scale: f64,
    /// Gain α of the motion filter, and its iteration cap.
    pub filter_gain: f64,
    pub filter_iterations: usize,
    /// `w_q` of Eq. 11's velocity weight `w_q M` (paper: 10 on `diag(M)`;
    /// default 1000, see the module docs).
    pub velocity_weight: f64,
    /// Root torque weight numerator (paper: 200, divided by total mass).
    pub root_torque_weight: f64,
    /// Body mass, kg, spread by the Dempster table over the skeleton.
    pub total_mass: f64,
    /// Armature added to every joint's diagonal of `M`, kg·m² (BVH wrists
    /// pivot about the same point as their hands, which leaves `M` singular
    /// without it; see `dynamics::ModelOptions`).
    pub armature: f64,
    pub contact: ContactConfig,
    /// Run steps 3–4; when off, `q̇₊ = q̇*` (kinematic tracking with the
    /// compliant solve only).
    pub physics: bool,
}

impl Default for SparseConfig {
    fn default() -> Self {
        Self {
            rate: 60.0,
            marker_stiffness: 5e8,
            imu_stiffness: 1.2e8,
            prior_stiffness: 2e6,
            damping: 2.0,
            prior_damping: 2.0,
            null_space: true,
            velocity_limit: 40.0,
            torque_limit_scale: 3.0,
            filter_gain: 1.0,
            filter_iterations: 5,
            velocity_weight: 1000.0,
            root_torque_weight: 200.0,
            total_mass: 70.0,
            armature: 1e-3,
            contact: ContactConfig::default(),
            physics: true,
        }
    }
}

impl SparseConfig {
    /// The paper's settings with the sensor rows' damping lowered from 2 to
    /// 1: at `d = 2` each frame removes only half of a sensor residual
    /// (`Γ ≈ 1/d`), so a marker moving `Δ` per frame trails it by `Δ` —
    /// 2 cm per frame for a walking body. The prior keeps `d = 2`, which
    /// smooths a noisy prior (§2.2.5). This is what `sparse_eval` reports
    /// as "tuned".
    pub fn tuned() -> Self {
        Self {
            damping: 1.0,
            prior_damping: 2.0,
            ..Self::default()
        }
    }

    /// Checks every number (stiffness and damping must be positive).
    pub fn validate(&self) -> Result<()> {
        require_positive("rate", self.rate)?;
        require_positive("marker_stiffness", self.marker_stiffness)?;
        require_positive("imu_stiffness", self.imu_stiffness)?;
        require_positive("prior_stiffness", self.prior_stiffness)?;
        require_positive("damping", self.damping)?;
        require_positive("prior_damping", self.prior_damping)?;
        require_positive("velocity_limit", self.velocity_limit)?;
        require_positive("torque_limit_scale", self.torque_limit_scale)?;
        require_non_negative("filter_gain", self.filter_gain)?;
        require_positive("velocity_weight", self.velocity_weight)?;
        require_positive("root_torque_weight", self.root_torque_weight)?;
        require_positive("total_mass", self.total_mass)?;
        require_non_negative("armature", self.armature)?;
        self.contact.validate()
    }

    fn stiffness(&self, kind: RowKind) -> f64 {
        match kind {
            RowKind::Imu => self.imu_stiffness,
            RowKind::Marker => self.marker_stiffness,
            RowKind::Prior => self.prior_stiffness,
        }
    }
}

/// The body model of SPARSE §2.1: Dempster masses for `total_mass` kg on
/// the skeleton's capsules at uniform density, y-up gravity, `armature` on
/// every joint but the floating base.
pub fn body_model(skeleton: &Skeleton, total_mass: f64, armature: f64) -> Result<Model> {
    require_positive("total_mass", total_mass)?;
    require_non_negative("armature", armature)?;
    let options = ModelOptions {
        masses: MassSource::Dempster { total_mass },
        armature,
        ..ModelOptions::default()
    };
    Ok(Model::from_skeleton_with(skeleton, &options)?)
}

/// `(Γ_ii, Σ_ii)` of SPARSE Eq. 6 for stiffness `k`, damping `d`, step `h`.
pub fn compliance(k: f64, d: f64, h: f64) -> (f64, f64) {
    let s = 1.0 + 1.0 / (h * k);
    (1.0 / (s * d), 1.0 / (h * h * k) / (s * d))
}

/// Torque limits `τ_hi = −τ_lo` per velocity index, N·m, from the body part
/// each joint drives (hip, knee and trunk strongest, fingers weakest),
/// scaled by `total_mass / 70 kg` and `scale`; the root is unbounded. The
/// paper calibrates these from captured motion; these are round figures of
/// the peak torques in the biomechanics literature.
pub fn torque_limits(skeleton: &Skeleton, total_mass: f64, scale: f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(skeleton.dof());
    for (j, joint) in skeleton.joints().iter().enumerate() {
        let part = joint.body.as_ref().map_or(BodyPart::Link, |b| b.part);
        let base = match part {
            BodyPart::Pelvis | BodyPart::Torso => 300.0,
            BodyPart::Thigh => 300.0,
            BodyPart::Shank => 250.0,
            BodyPart::Foot => 150.0,
            BodyPart::Neck | BodyPart::Head => 60.0,
            BodyPart::UpperArm => 120.0,
            BodyPart::Forearm => 80.0,
            BodyPart::Hand => 30.0,
            BodyPart::Finger => 10.0,
            BodyPart::Link => 100.0,
        };
        let limit = if j == 0 {
            f64::INFINITY
        } else {
            base * total_mass / 70.0 * scale
        };
        out.extend(std::iter::repeat_n(limit, joint.kind.dof()));
    }
    out
}

/// What one tracker step produced.
#[derive(Clone, Debug)]
pub struct SparseStepReport {
    /// Pose after the step.
    pub pose: Vec<f64>,
    /// Generalised velocity after the step.
    pub velocity: Vec<f64>,
    /// Contacts with their forces (Eq. 10).
    pub contacts: Vec<Contact>,
    /// Joint torques `τ₊` of Eq. 11 (nv; the first six are the residual,
    /// non-physical root wrench, which should stay small).
    pub joint_torques: Vec<f64>,
    /// The prior's estimate `q̃` this frame.
    pub prior_estimate: Vec<f64>,
    /// Torque-filter re-solves used (0: no torque out of bounds).
    pub filter_iterations: usize,
    /// Sensor rows tracked this frame.
    pub sensor_rows: usize,
}

/// What both trackers (the SPARSE tracker and the IK baseline of
/// [`crate::baseline`]) hold and build each frame: the body model, the
/// sensors and which are on, the prior, the pose and frame count, and the
/// kinematic rows of Eq. 6 with their scratch.
pub(crate) struct TrackedBody {
    pub model: Model,
    pub data: Data,
    pub sensors: SensorSet,
    pub mask: SensorMask,
    pub prior: MotionPrior,
    pub q: Vec<f64>,
    pub frame: usize,
    pub root_dof: usize,
    /// Scratch: world transforms at `q`, the constraint rows (sensor rows
    /// first) and the prior's estimate `q̃`.
    pub world: Vec<Isometry3<f64>>,
    pub rows: ConstraintRows,
    pub estimate: Vec<f64>,
}

impl TrackedBody {
    /// At the rest pose of the model's skeleton, frame 0, every sensor on;
    /// room for the sensor rows and `extra_rows` more (at least one row).
    pub(crate) fn new(
        model: Model,
        sensors: SensorSet,
        prior: MotionPrior,
        extra_rows: usize,
    ) -> Self {
        let capacity = (sensors.max_rows() + extra_rows).max(1);
        let skeleton = model.skeleton();
        let rest = skeleton.rest_pose();
        Self {
            data: model.data(),
            mask: SensorMask::all(&sensors),
            root_dof: skeleton.joint(0).kind.dof(),
            world: vec![Isometry3::identity(); skeleton.len()],
            rows: ConstraintRows::new(capacity, model.nv()),
            estimate: rest.clone(),
            q: rest,
            frame: 0,
            model,
            sensors,
            prior,
        }
    }

    /// The kinematic half of a frame: checks `reading`, poses the body at
    /// `q`, stacks the sensor rows (Eq. 2, 3) and asks the prior for its
    /// estimate `q̃` (Eq. 4). Returns the number of sensor rows.
    pub(crate) fn sense(&mut self, reading: &SensorFrame) -> Result<usize> {
        self.sensors.validate(reading, self.frame)?;
        let skeleton = self.model.skeleton();
        skeleton.forward_kinematics_into(&self.q, &mut self.world);
        let ns = self.sensors.constraint_rows(
            &self.model,
            &mut self.data,
            &self.q,
            &self.world,
            reading,
            &self.mask,
            &mut self.rows,
        )?;
        let query = PriorQuery {
            frame: self.frame,
            q: &self.q,
            world: &self.world,
            reading,
            enabled: &self.mask,
        };
        self.prior.estimate(skeleton, &query, &mut self.estimate)?;
        Ok(ns)
    }
}

/// The SPARSE tracker (module docs). Owns its scratch; one `step` per
/// sensor frame.
pub struct SparseTracker {
    body: TrackedBody,
    config: SparseConfig,
    tau_limit: Vec<f64>,
    v: Vec<f64>,
    // Scratch of the contact Jacobians.
    jac3: DMatrix<f64>,
    contacts: Vec<Contact>,
}

impl SparseTracker {
    /// A tracker for `skeleton` wearing `sensors`, starting at the rest pose
    /// (call [`SparseTracker::reset`] with the first pose of a clip).
    pub fn new(
        skeleton: &Skeleton,
        sensors: SensorSet,
        prior: MotionPrior,
        config: SparseConfig,
    ) -> Result<Self> {
        config.validate()?;
        let model = body_model(skeleton, config.total_mass, config.armature)?;
        if !model.has_floating_base() {
            return Err(SparseError::Solver {
                stage: "model",
                message: "the tracker needs a skeleton whose root is a free joint".into(),
            });
        }
        for s in sensors
            .imus
            .iter()
            .map(|s| s.joint)
            .chain(sensors.markers.iter().map(|s| s.joint))
        {
            if s >= skeleton.len() {
                return Err(SparseError::UnknownBone {
                    what: "sensor".into(),
                    bone: format!("joint index {s}"),
                });
            }
        }
        let nv = model.nv();
        let tau_limit = torque_limits(skeleton, config.total_mass, config.torque_limit_scale);
        Ok(Self {
            body: TrackedBody::new(model, sensors, prior, nv),
            jac3: DMatrix::zeros(3, nv),
            contacts: Vec::new(),
            v: vec![0.0; nv],
            tau_limit,
            config,
        })
    }

    /// Restarts at `pose` with velocity `velocity` (zero when `None`), frame 0.
    pub fn reset(&mut self, pose: &[f64], velocity: Option<&[f64]>) -> Result<()> {
        let nv = self.body.model.nv();
        let check = |what: &str, x: &[f64]| {
            if x.len() != nv {
                return Err(SparseError::Dimension {
                    what: what.into(),
                    expected: nv,
                    got: x.len(),
                });
            }
            if let Some(i) = x.iter().position(|c| !c.is_finite()) {
                return Err(SparseError::InvalidParameter {
                    name: format!("{what}[{i}]"),
                    requirement: "finite",
                    value: x[i],
                });
            }
            Ok(())
        };
        check("reset pose", pose)?;
        self.body.q.copy_from_slice(pose);
        match velocity {
            Some(v) => {
                check("reset velocity", v)?;
                self.v.copy_from_slice(v);
            }
            None => self.v.fill(0.0),
        }
        self.body.frame = 0;
        self.body.prior.reset();
        Ok(())
    }

    pub fn pose(&self) -> &[f64] {
        &self.body.q
    }

    /// World transforms of every joint at the current pose (for drawing).
    pub fn body_transforms(&self) -> Vec<Isometry3<f64>> {
        let skeleton = self.body.model.skeleton();
        let mut world = vec![Isometry3::identity(); skeleton.len()];
        skeleton.forward_kinematics_into(&self.body.q, &mut world);
        world
    }

    /// Where the sensors sit on the tracked body now: IMU orientations and
    /// marker positions as the current pose would read them (draw these
    /// beside the measured readings to show the tracking residual).
    pub fn predicted_readings(&self) -> SensorFrame {
        self.body.sensors.measure(&self.body_transforms())
    }

    pub fn velocity(&self) -> &[f64] {
        &self.v
    }

    pub fn model(&self) -> &Model {
        &self.body.model
    }

    pub fn skeleton(&self) -> &Skeleton {
        self.body.model.skeleton()
    }

    pub fn sensors(&self) -> &SensorSet {
        &self.body.sensors
    }

    pub fn mask(&self) -> &SensorMask {
        &self.body.mask
    }

    pub fn config(&self) -> &SparseConfig {
        &self.config
    }

    /// Replaces the settings (validated; torque limits recomputed). The body
    /// mass only takes effect in a new tracker.
    pub fn set_config(&mut self, config: SparseConfig) -> Result<()> {
        config.validate()?;
        self.tau_limit = torque_limits(
            self.body.model.skeleton(),
            self.config.total_mass,
            config.torque_limit_scale,
        );
        self.config = config;
        Ok(())
    }

    pub fn prior(&self) -> &MotionPrior {
        &self.body.prior
    }

    /// Switches the motion prior (takes effect at the next step).
    pub fn set_prior(&mut self, prior: MotionPrior) {
        self.body.prior = prior;
    }

    /// Switches IMU `i` on or off.
    pub fn set_imu_enabled(&mut self, i: usize, on: bool) -> Result<()> {
        self.body.mask.set_imu(i, on)
    }

    /// Switches marker `i` on or off.
    pub fn set_marker_enabled(&mut self, i: usize, on: bool) -> Result<()> {
        self.body.mask.set_marker(i, on)
    }

    /// One frame of SPARSE tracking (module docs, steps 1–5).
    pub fn step(&mut self, reading: &SensorFrame) -> Result<SparseStepReport> {
        // Sensor rows (Eq. 2, 3) and the prior's estimate (Eq. 4).
        let ns = self.body.sense(reading)?;
        let body = &mut self.body;
        let nv = body.model.nv();
        let h = 1.0 / self.config.rate;
        let skeleton = body.model.skeleton();

        // M and C at the current state.
        body.model
            .mass_matrix_and_bias(&mut body.data, &body.q, &self.v)?;
        let m = body.data.mass_matrix().clone();
        let c = body.data.tau().clone();
        let chol_m = m.clone().cholesky().ok_or(SparseError::Solver {
            stage: "mass matrix",
            message: "not positive definite".into(),
        })?;

        // Prior rows (Eq. 4, 5).
        let np = nv - body.root_dof;
        prior_residual(
            skeleton,
            &body.q,
            &body.estimate,
            &mut body.rows.phi[ns..ns + np],
        );
        let null = null_space_rows(
            &body.rows.jac.rows(0, ns).into_owned(),
            body.root_dof,
            self.config.null_space,
        );
        body.rows.jac.view_mut((ns, 0), (np, nv)).copy_from(&null);
        for k in &mut body.rows.kinds[ns..ns + np] {
            *k = RowKind::Prior;
        }
        let rows = ns + np;
        let j = body.rows.jac.rows(0, rows).into_owned();
        let phi = DVector::from_column_slice(&body.rows.phi[..rows]);
        let stiff: Vec<f64> = body.rows.kinds[..rows]
            .iter()
            .map(|&k| self.config.stiffness(k))
            .collect();
        let mut damping: Vec<f64> = body.rows.kinds[..rows]
            .iter()
            .map(|&k| match k {
                RowKind::Prior => self.config.prior_damping,
                _ => self.config.damping,
            })
            .collect();

        // Steps 1–2: compliant solve with the torque-limit filter.
        let vlim = self.config.velocity_limit;
        let lo = vec![-vlim; nv];
        let hi = vec![vlim; nv];
        let v_now = DVector::from_column_slice(&self.v);
        let mut qdot_star = v_now.clone();
        let mut filter_iterations = 0;
        let mut tau = DVector::zeros(nv);
        for iter in 0..=self.config.filter_iterations {
            let mut jw = j.clone();
            let mut rhs_c = DVector::zeros(rows);
            for r in 0..rows {
                let (gamma, sigma) = compliance(stiff[r], damping[r], h);
                let s = (1.0 / sigma).sqrt();
                jw.row_mut(r).scale_mut(s);
                rhs_c[r] = gamma / sigma * phi[r] / h;
            }
            let a = &m + jw.tr_mul(&jw);
            let b = &m * &v_now - &c * h + j.tr_mul(&rhs_c);
            qdot_star = solve_spd_box(&a, &b, &lo, &hi, "compliant solve (Eq. 6)")?;
            tau = &m * (&qdot_star - &v_now) / h + &c;
            let mut dtau = DVector::zeros(nv);
            let mut violated = false;
            for i in body.root_dof..nv {
                let lim = self.tau_limit[i];
                if tau[i].abs() > lim {
                    dtau[i] = tau[i] - tau[i].clamp(-lim, lim);
                    violated = true;
                }
            }
            if !violated || iter == self.config.filter_iterations || self.config.filter_gain == 0.0
            {
                break;
            }
            filter_iterations += 1;
            let minv_dtau = chol_m.solve(&dtau);
            let mapped = &j * minv_dtau;
            for r in 0..rows {
                // At most doubled per pass: the mapped violation can be huge
                // on light joints and would otherwise make A ill-conditioned.
                damping[r] *= 1.0 + (h * self.config.filter_gain * mapped[r].abs()).min(1.0);
            }
        }

        // Steps 3–4: contacts and the final torque solve.
        let (qdot_plus, torques) = if self.config.physics {
            detect_contacts(
                &body.model,
                &mut body.data,
                &body.q,
                qdot_star.as_slice(),
                &body.world,
                &self.config.contact,
                &mut self.jac3,
                &mut self.contacts,
            )?;
            let mut g = DMatrix::zeros(nv, 0);
            contact_generalized_forces(
                &body.model,
                &mut body.data,
                &body.q,
                &body.world,
                &self.contacts,
                &mut self.jac3,
                &mut g,
            )?;
            let nc = self.contacts.len();
            let mut lambda = DVector::zeros(4 * nc);
            if nc > 0 {
                let g_root = g.rows(0, body.root_dof).into_owned();
                let target = tau.rows(0, body.root_dof).into_owned();
                let mut qm = g_root.tr_mul(&g_root);
                for i in 0..4 * nc {
                    qm[(i, i)] += self.config.contact.regularization * (1.0 + qm[(i, i)]);
                }
                let cv = g_root.tr_mul(&target);
                solve_friction_pgs(
                    &qm,
                    &cv,
                    self.config.contact.mu,
                    self.config.contact.torsion_scale,
                    self.config.contact.max_normal_force
                        * body.model.total_mass()
                        * body.model.gravity().norm(),
                    self.config.contact.iterations,
                    &mut lambda,
                );
                for (k, ct) in self.contacts.iter_mut().enumerate() {
                    ct.lambda = [
                        lambda[4 * k],
                        lambda[4 * k + 1],
                        lambda[4 * k + 2],
                        lambda[4 * k + 3],
                    ];
                }
            }
            let contact_force = &g * &lambda;
            // a = v + h M⁻¹ (J_cᵀBλ − C): the motion without torques.
            let a_free = &v_now + chol_m.solve(&((&contact_force - &c) * h));
            let minv = chol_m.inverse();
            let total = body.model.total_mass();
            // ½‖q̇₊ − q̇*‖²_{w_q M} + ½‖u‖²_{W_τ} with q̇₊ = a + M⁻¹u:
            // H = w_q M⁻¹ + W_τ, g = w_q (q̇* − a).
            let mut hmat = &minv * self.config.velocity_weight;
            for i in 0..nv {
                hmat[(i, i)] += if i < body.root_dof {
                    self.config.root_torque_weight / total
                } else {
                    1.0 / m[(i, i)]
                };
            }
            let gvec = (&qdot_star - &a_free) * self.config.velocity_weight;
            let ulo: Vec<f64> = self.tau_limit.iter().map(|t| -t * h).collect();
            let uhi: Vec<f64> = self.tau_limit.iter().map(|t| t * h).collect();
            let u = solve_spd_box(&hmat, &gvec, &ulo, &uhi, "torque solve (Eq. 11)")?;
            // Safety: the final velocities obey the same box as q̇*.
            let qdot_plus = (&a_free + &minv * &u).map(|x| x.clamp(-vlim, vlim));
            (qdot_plus, u / h)
        } else {
            self.contacts.clear();
            (qdot_star.clone(), tau.clone())
        };

        // Step 5: integrate.
        let mut q_next = vec![0.0; nv];
        body.model
            .integrate(&body.q, qdot_plus.as_slice(), h, &mut q_next)?;
        if q_next
            .iter()
            .chain(qdot_plus.iter())
            .any(|x| !x.is_finite())
        {
            return Err(SparseError::Solver {
                stage: "integration",
                message: format!("non-finite state at frame {}", body.frame),
            });
        }
        body.q = q_next;
        self.v.copy_from_slice(qdot_plus.as_slice());
        body.frame += 1;
        Ok(SparseStepReport {
            pose: body.q.clone(),
            velocity: self.v.clone(),
            contacts: self.contacts.clone(),
            joint_torques: torques.as_slice().to_vec(),
            prior_estimate: body.estimate.clone(),
            filter_iterations,
            sensor_rows: ns,
        })
    }
}

/// `N_s = Υ(I − J_s⁺J_s)` of SPARSE Eq. 5: the identity without its root
/// rows, projected onto the null space of the sensor Jacobian `J_s` (via the
/// SVD of `J_s`, singular values below 10⁻⁹ of the largest treated as zero).
/// Without projection (`project = false`) it is just `Υ` (Eq. 4).
pub fn null_space_rows(js: &DMatrix<f64>, root_dof: usize, project: bool) -> DMatrix<f64> {
    let nv = js.ncols();
    let mut p = DMatrix::<f64>::identity(nv, nv);
    if project && js.nrows() > 0 {
        let svd = js.clone().svd(false, true);
        let vt = svd.v_t.expect("v_t requested");
        let smax = svd.singular_values.max();
        for (k, s) in svd.singular_values.iter().enumerate() {
            if *s > 1e-9 * smax {
                let row = vt.row(k);
                p -= row.transpose() * row;
            }
        }
    }
    p.rows(root_dof, nv - root_dof).into_owned()
}

/// `min ½xᵀAx − bᵀx` over the box `lo ≤ x ≤ hi` for SPD `A`, by a
/// primal active-set method: solve on the free variables (Cholesky), pin
/// the variables that leave the box to their bounds, release pinned ones
/// whose gradient points back inside, until the KKT conditions hold (exact
/// in a few passes when few bounds are active; capped at `2n` passes, then
/// polished by box PGS).
pub(crate) fn solve_spd_box(
    a: &DMatrix<f64>,
    b: &DVector<f64>,
    lo: &[f64],
    hi: &[f64],
    stage: &'static str,
) -> Result<DVector<f64>> {
    let n = b.len();
    // pinned[i]: None free, Some(bound value).
    let mut pinned: Vec<Option<f64>> = vec![None; n];
    let mut x = DVector::zeros(n);
    for _pass in 0..(2 * n).max(4) {
        let free: Vec<usize> = (0..n).filter(|&i| pinned[i].is_none()).collect();
        for i in 0..n {
            if let Some(v) = pinned[i] {
                x[i] = v;
            }
        }
        if !free.is_empty() {
            let nf = free.len();
            let mut af = DMatrix::zeros(nf, nf);
            let mut bf = DVector::zeros(nf);
            for (r, &i) in free.iter().enumerate() {
                let mut rhs = b[i];
                for k in 0..n {
                    if pinned[k].is_some() {
                        rhs -= a[(i, k)] * x[k];
                    }
                }
                bf[r] = rhs;
                for (c, &k) in free.iter().enumerate() {
                    af[(r, c)] = a[(i, k)];
                }
            }
            let sol = cholesky_solve(af, &bf, stage)?;
            for (r, &i) in free.iter().enumerate() {
                x[i] = sol[r];
            }
        }
        // Pin the free variables outside the box.
        let mut changed = false;
        for &i in &free {
            if x[i] < lo[i] {
                pinned[i] = Some(lo[i]);
                changed = true;
            } else if x[i] > hi[i] {
                pinned[i] = Some(hi[i]);
                changed = true;
            }
        }
        if changed {
            continue;
        }
        // Release the pinned variable whose multiplier has the wrong sign most.
        let grad = a * &x - b;
        let mut worst = (0.0, None);
        for i in 0..n {
            if let Some(v) = pinned[i] {
                let wrong = if v == lo[i] { -grad[i] } else { grad[i] };
                if wrong > worst.0 {
                    worst = (wrong, Some(i));
                }
            }
        }
        match worst.1 {
            Some(i) => pinned[i] = None,
            None => return Ok(x),
        }
    }
    for i in 0..n {
        x[i] = x[i].clamp(lo[i], hi[i]);
    }
    solve_box_pgs(a, b, lo, hi, 100, &mut x);
    Ok(x)
}

/// Cholesky solve with one retry at a relative diagonal jitter (rounding on
/// a badly conditioned matrix).
fn cholesky_solve(a: DMatrix<f64>, b: &DVector<f64>, stage: &'static str) -> Result<DVector<f64>> {
    let n = a.nrows().max(1) as f64;
    let jitter = 1e-12 * a.trace().abs() / n;
    let backup = a.clone();
    if let Some(c) = a.cholesky() {
        return Ok(c.solve(b));
    }
    let mut aj = backup;
    for i in 0..aj.nrows() {
        aj[(i, i)] += jitter;
    }
    aj.cholesky()
        .map(|c| c.solve(b))
        .ok_or(SparseError::Solver {
            stage,
            message: "matrix not positive definite".into(),
        })
}

/// The generalised velocity that moves `q0` to `q1` in time `dt` (parameter
/// differences through the dynamics crate's `v = E(q) q̇` map), for starting
/// the tracker at the velocity of a clip.
pub fn finite_difference_velocity(
    model: &Model,
    q0: &[f64],
    q1: &[f64],
    dt: f64,
) -> Result<Vec<f64>> {
    require_positive("dt", dt)?;
    let rates: Vec<f64> = q0.iter().zip(q1).map(|(a, b)| (b - a) / dt).collect();
    let mut v = vec![0.0; model.nv()];
    model.velocity_from_param_rates(q0, &rates, &mut v)?;
    Ok(v)
}

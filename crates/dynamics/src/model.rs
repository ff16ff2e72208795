//! The multi-body model: one rigid body per moving joint of a [`Skeleton`].
//!
//! Joints without parameters (`Fixed`: end sites, rigid attachments) weld
//! their body to the nearest moving ancestor, whose inertia absorbs theirs;
//! bodies welded to a fixed root (a robot's base) do not move and are left
//! out. Body `b`'s frame is its joint's frame after the joint's motion, i.e.
//! exactly the skeleton's world transform `W_j` of that joint.
//!
//! # Generalised velocities
//!
//! The configuration is the skeleton's pose vector `q` (one slice per joint,
//! see [`skeleton::JointKind`]). The generalised velocity `v` has the same
//! length and layout, with these meanings (Pinocchio's conventions, so that
//! the mass matrix is defined for every pose and parameterisation):
//!
//! | joint kind                  | `v` slice                                          |
//! |-----------------------------|----------------------------------------------------|
//! | `Hinge`, `Prismatic`        | `q̇` (rad/s, m/s)                                    |
//! | `Swing`                     | `q̇`, the swing coordinates' rates                   |
//! | `Ball` (any parameterisation) | `ω`: angular velocity in the joint's own (moving) frame |
//! | `Free`                      | `(Rᵀẋ, ω)`: origin velocity and angular velocity, both in the body's own frame |
//!
//! The map to parameter rates is block-diagonal, `v = E(q) q̇`, with
//! `E = Rᵀ W(q)` for a ball (`W`'s columns the spatial angular velocities of
//! [`skeleton::BallRotation::angular_velocities`], `R` the joint rotation),
//! `diag(Rᵀ, Rᵀ W)` for a free joint, identity otherwise
//! ([`crate::Model::param_velocity_map`]). Integration never goes through
//! `q̇`: [`crate::Model::integrate`] moves balls by `R ← R exp(ω dt)` and free
//! joints by the SE(3) exponential, then writes the parameters nearest the
//! old ones (EXPMAP §4.2).

use nalgebra::{Matrix3, Vector3};
use skeleton::{JointKind, Skeleton};

use crate::error::{DynamicsError, Result};
use crate::inertia::{MassSource, segment_inertias};
use crate::spatial::{Inertia, Se3};

/// Standard gravity, m/s².
pub(crate) const STANDARD_GRAVITY: f64 = 9.80665;

/// How a body moves relative to its parent: the motion subspace `S` in the
/// body's own frame (RBDA §4.4).
#[derive(Clone, Debug, PartialEq)]
pub enum JointModel {
    /// `S = (a, 0)`; `v` is the angle rate.
    Revolute { axis: Vector3<f64> },
    /// `S = (0, a)`; `v` is the displacement rate.
    Prismatic { axis: Vector3<f64> },
    /// Exp-map swing `s = p₁u + p₂w` without twist: `S = (J_r(s) [u w], 0)`,
    /// configuration dependent, with the bias `c_J = (d/dt J_r(s)) ṡ`.
    Swing { u: Vector3<f64>, w: Vector3<f64> },
    /// `S = (I, 0)`; `v` is the body-frame angular velocity.
    Spherical,
    /// `S = I₆`; `v = (linear, angular)` in the body frame.
    FreeFlyer,
}

impl JointModel {
    pub fn nv(&self) -> usize {
        match self {
            Self::Revolute { .. } | Self::Prismatic { .. } => 1,
            Self::Swing { .. } => 2,
            Self::Spherical => 3,
            Self::FreeFlyer => 6,
        }
    }

    fn from_kind(kind: &JointKind) -> Option<Self> {
        Some(match kind {
            JointKind::Fixed => return None,
            JointKind::Hinge { axis, .. } => Self::Revolute {
                axis: axis.into_inner(),
            },
            JointKind::Prismatic { axis, .. } => Self::Prismatic {
                axis: axis.into_inner(),
            },
            JointKind::Swing { frame, .. } => {
                let (u, w) = frame.swing_axes();
                Self::Swing {
                    u: u.into_inner(),
                    w: w.into_inner(),
                }
            }
            JointKind::Ball(_) => Self::Spherical,
            JointKind::Free { .. } => Self::FreeFlyer,
        })
    }
}

/// One moving body.
#[derive(Clone, Debug)]
pub struct RigidBody {
    /// The skeleton joint that moves it.
    pub joint: usize,
    /// The parent body (`None`: attached to the world or a fixed root).
    pub parent: Option<usize>,
    /// The joint's placement frame in the parent body's frame (in the world
    /// frame when `parent` is `None`), fixed joints in between folded in.
    pub placement: Se3,
    pub joint_model: JointModel,
    /// First index of the joint's slice of `q` and `v`.
    pub idx_v: usize,
    /// Inertia in the body frame, welded bodies included.
    pub inertia: Inertia,
    /// `(centre of mass, inertia about it)` of `inertia`, for CRBA.
    pub(crate) com_form: (Vector3<f64>, Matrix3<f64>),
}

/// Where a skeleton joint's frame sits: on which body, and its pose there.
#[derive(Clone, Copy, Debug)]
pub struct JointFrame {
    pub body: Option<usize>,
    /// Pose of the joint's frame in the body frame (in the world frame when
    /// `body` is `None`).
    pub in_body: Se3,
}

/// The articulated rigid-body model of a skeleton (module docs).
#[derive(Clone, Debug)]
pub struct Model {
    skeleton: Skeleton,
    pub(crate) bodies: Vec<RigidBody>,
    pub(crate) frames: Vec<JointFrame>,
    /// Parent of each velocity index in the tree of DOFs (RBDA §6.5's λ):
    /// the previous index of the same joint, else the last of the parent body.
    pub(crate) dof_parent: Vec<Option<usize>>,
    /// The DOF ancestors of each velocity index, nearest first, as one
    /// compressed list: those of `k` are `ancestors.list[ancestors.start[k]..ancestors.start[k + 1]]`.
    pub(crate) ancestors: Ancestors,
    /// Body of each velocity index.
    pub(crate) dof_body: Vec<usize>,
    pub(crate) gravity: Vector3<f64>,
    /// Added to `M`'s diagonal and `armature · a` to RNEA's `τ`.
    pub(crate) armature: Vec<f64>,
    nv: usize,
    /// What a URDF import adjusted ([`Model::warnings`]).
    warnings: Vec<skeleton::UrdfWarning>,
}

/// Compressed lists of DOF ancestors (see [`Model`]'s `ancestors`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Ancestors {
    pub(crate) start: Vec<usize>,
    pub(crate) list: Vec<usize>,
}

impl Ancestors {
    fn new(parent: &[Option<usize>]) -> Self {
        let mut out = Self {
            start: Vec::with_capacity(parent.len() + 1),
            list: Vec::new(),
        };
        for k in 0..parent.len() {
            out.start.push(out.list.len());
            let mut i = parent[k];
            while let Some(ii) = i {
                out.list.push(ii);
                i = parent[ii];
            }
        }
        out.start.push(out.list.len());
        out
    }

    /// Ancestors of `k`, nearest first.
    #[inline]
    pub(crate) fn of(&self, k: usize) -> &[usize] {
        &self.list[self.start[k]..self.start[k + 1]]
    }
}

/// Options of [`Model::from_skeleton_with`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelOptions {
    pub masses: MassSource,
    /// World-frame gravity, m/s².
    pub gravity: Vector3<f64>,
    /// Rotor-like inertia added to the diagonal of `M` for every joint
    /// velocity except a floating base's (Pinocchio's `model.armature`,
    /// MuJoCo's `armature`). Zero is the rigid-body model; a small value
    /// (10⁻³ kg·m²) makes `M` invertible for skeletons with redundant joints,
    /// such as a BVH wrist without a bone whose child hand pivots about the
    /// same point.
    pub armature: f64,
}

impl ModelOptions {
    /// For a human read from a BVH file: Dempster masses for `total_mass`
    /// kg, y-up gravity and a 10⁻³ kg·m² armature (BVH skeletons such as
    /// CMU's have bone-less wrists that pivot about the same point as the
    /// hand, which leaves `M` singular without it).
    pub fn bvh_human(total_mass: f64) -> Self {
        Self {
            masses: MassSource::Dempster { total_mass },
            armature: 1e-3,
            ..Self::default()
        }
    }
}

impl Default for ModelOptions {
    fn default() -> Self {
        Self {
            masses: MassSource::Skeleton,
            gravity: Vector3::new(0.0, -STANDARD_GRAVITY, 0.0),
            armature: 0.0,
        }
    }
}

impl Model {
    /// Builds the model of `skeleton` with capsule inertias at uniform
    /// density and masses from `masses`, under the default options
    /// ([`ModelOptions`]: gravity `−9.80665 m/s²` along `y`, posecloud's
    /// presets and BVH files being y-up; no armature).
    pub fn from_skeleton(skeleton: &Skeleton, masses: MassSource) -> Result<Self> {
        Self::from_skeleton_with(
            skeleton,
            &ModelOptions {
                masses,
                ..ModelOptions::default()
            },
        )
    }

    /// Builds the model of `skeleton` under `options`.
    pub fn from_skeleton_with(skeleton: &Skeleton, options: &ModelOptions) -> Result<Self> {
        if let MassSource::Dempster { total_mass } = options.masses
            && !(total_mass.is_finite() && total_mass > 0.0)
        {
            return Err(DynamicsError::InvalidOption {
                name: "total_mass",
                requirement: "positive and finite",
                value: total_mass,
            });
        }
        let inertias = segment_inertias(skeleton, options.masses);
        Self::with_inertias(skeleton, &inertias, options.gravity, options.armature)
    }

    /// Builds the model with one inertia per skeleton joint (in that joint's
    /// frame; `None` for none), the gravity vector `gravity` (world frame)
    /// and an `armature` (kg·m² or kg) added to the diagonal of `M` for
    /// every velocity except a floating base's six (see [`ModelOptions`]).
    pub fn with_inertias(
        skeleton: &Skeleton,
        inertias: &[Option<Inertia>],
        gravity: Vector3<f64>,
        armature: f64,
    ) -> Result<Self> {
        Self::assemble(skeleton, inertias, gravity, armature, &[])
    }

    /// [`Model::with_inertias`], plus `extra` armature `(joint, value)` on
    /// every velocity of those skeleton joints.
    fn assemble(
        skeleton: &Skeleton,
        inertias: &[Option<Inertia>],
        gravity: Vector3<f64>,
        armature: f64,
        extra: &[(usize, f64)],
    ) -> Result<Self> {
        if inertias.len() != skeleton.len() {
            return Err(DynamicsError::Dimension {
                argument: "inertias",
                expected: skeleton.len(),
                got: inertias.len(),
            });
        }
        check_gravity(&gravity)?;
        if !(armature.is_finite() && armature >= 0.0) {
            return Err(DynamicsError::InvalidOption {
                name: "armature",
                requirement: "finite and >= 0",
                value: armature,
            });
        }
        let mut bodies: Vec<RigidBody> = Vec::new();
        let mut frames: Vec<JointFrame> = Vec::with_capacity(skeleton.len());
        for (j, joint) in skeleton.joints().iter().enumerate() {
            if let Some(i) = &inertias[j] {
                check_inertia(&joint.name, i)?;
            }
            let placement = Se3::from_isometry(&joint.placement());
            // The frame this joint is placed in: its parent's body frame.
            let (parent_body, in_parent) = match joint.parent {
                Some(p) => (frames[p].body, frames[p].in_body.compose(&placement)),
                None => (None, placement),
            };
            match JointModel::from_kind(&joint.kind) {
                Some(joint_model) => {
                    bodies.push(RigidBody {
                        joint: j,
                        parent: parent_body,
                        placement: in_parent,
                        joint_model,
                        idx_v: skeleton.param_range(j).start,
                        inertia: Inertia::zero(),
                        com_form: (Vector3::zeros(), Matrix3::zeros()),
                    });
                    frames.push(JointFrame {
                        body: Some(bodies.len() - 1),
                        in_body: Se3::identity(),
                    });
                }
                None => frames.push(JointFrame {
                    body: parent_body,
                    in_body: in_parent,
                }),
            }
        }
        for (frame, inertia) in frames.iter().zip(inertias) {
            if let (Some(b), Some(i)) = (frame.body, inertia) {
                bodies[b].inertia += i.transformed(&frame.in_body);
            }
        }
        for body in &mut bodies {
            body.com_form = (body.inertia.com(), body.inertia.inertia_com());
        }
        let nv = skeleton.dof();
        let mut dof_parent = vec![None; nv];
        let mut dof_body = vec![0; nv];
        for (b, body) in bodies.iter().enumerate() {
            for k in 0..body.joint_model.nv() {
                let i = body.idx_v + k;
                dof_body[i] = b;
                dof_parent[i] = if k > 0 {
                    Some(i - 1)
                } else {
                    body.parent
                        .map(|p| bodies[p].idx_v + bodies[p].joint_model.nv() - 1)
                };
            }
        }
        let mut armature: Vec<f64> = (0..nv)
            .map(|i| {
                let b = &bodies[dof_body[i]];
                let floating = b.parent.is_none() && b.joint_model == JointModel::FreeFlyer;
                if floating { 0.0 } else { armature }
            })
            .collect();
        for &(joint, value) in extra {
            for i in skeleton.param_range(joint) {
                armature[i] += value;
            }
        }
        let ancestors = Ancestors::new(&dof_parent);
        let model = Self {
            skeleton: skeleton.clone(),
            bodies,
            frames,
            dof_parent,
            ancestors,
            dof_body,
            gravity,
            armature,
            nv,
            warnings: Vec::new(),
        };
        model.check_nondegenerate()?;
        Ok(model)
    }

    /// Reads a URDF file: the skeleton of [`skeleton::import_urdf`] with each
    /// link's `<inertial>` (origin `xyz`/`rpy`, mass, inertia tensor about
    /// the centre of mass) as its body's inertia, and gravity `−9.80665 m/s²`
    /// along `z` (ROS convention). What the import adjusted is in
    /// [`Model::warnings`]; a moving joint whose subtree has no mass or
    /// inertia at all gets the armature [`skeleton::MASSLESS_ARMATURE`]
    /// (Pinocchio leaves its row of `M` zero) instead of a
    /// [`DynamicsError::Degenerate`] refusal.
    pub fn from_urdf(path: impl AsRef<std::path::Path>) -> Result<Self> {
        let path = path.as_ref();
        Self::from_urdf_import(skeleton::import_urdf(path)?, &path.display().to_string())
    }

    /// As [`Model::from_urdf`] for URDF text; `file` names it in errors.
    pub fn from_urdf_str(text: &str, file: &str) -> Result<Self> {
        Self::from_urdf_import(skeleton::import_urdf_str(text, file)?, file)
    }

    /// The model of an imported URDF (see [`Model::from_urdf`]); `file`
    /// names it in errors. An inertia tensor that is not positive
    /// semi-definite beyond the import's clamp is used as written (as
    /// Pinocchio does; the import warned) unless the mass matrix is then not
    /// positive definite at the rest pose: that is an error naming the link
    /// and line.
    pub fn from_urdf_import(import: skeleton::UrdfImport, file: &str) -> Result<Self> {
        let skeleton::UrdfImport {
            skeleton,
            inertials,
            massless,
            warnings,
        } = import;
        let mut inertias = Vec::with_capacity(skeleton.len());
        // A tensor that is not positive semi-definite on a moving link (the
        // import warned): blamed if the mass matrix is not positive definite.
        let mut suspect: Option<(&skeleton::LinkInertial, Vec<f64>)> = None;
        let mut moves = vec![false; skeleton.len()];
        for (j, inertial) in inertials.iter().enumerate() {
            let joint = skeleton.joint(j);
            moves[j] = joint.kind.dof() > 0 || joint.parent.is_some_and(|p| moves[p]);
            let Some(i) = inertial else {
                inertias.push(None);
                continue;
            };
            let eig = i.inertia.symmetric_eigenvalues();
            if moves[j]
                && suspect.is_none()
                && eig.iter().any(|&e| e < -1e-12 * eig.amax().max(1.0))
            {
                suspect = Some((i, eig.as_slice().to_vec()));
            }
            inertias.push(
                (i.mass > 0.0 || i.inertia.norm() > 0.0)
                    .then(|| Inertia::from_com(i.mass, &i.com, &i.inertia)),
            );
        }
        let extra: Vec<(usize, f64)> = massless
            .iter()
            .map(|&j| (j, skeleton::MASSLESS_ARMATURE))
            .collect();
        let assembled = Self::assemble(
            &skeleton,
            &inertias,
            Vector3::new(0.0, 0.0, -STANDARD_GRAVITY),
            0.0,
            &extra,
        );
        let mut model = match (assembled, suspect) {
            (Err(DynamicsError::Degenerate { joint, .. }), Some((i, eig))) => {
                let file = match i.line {
                    Some(line) => format!("{file}:{line}"),
                    None => file.to_string(),
                };
                return Err(DynamicsError::Urdf {
                    file,
                    element: format!("link '{}' <inertial>", i.link),
                    message: format!(
                        "<inertia> is not positive semi-definite (eigenvalues {eig:?}) and the mass matrix is not positive definite (at joint '{joint}')"
                    ),
                });
            }
            (result, _) => result?,
        };
        model.warnings = warnings;
        Ok(model)
    }

    /// What the URDF import adjusted (empty for a model not read from URDF).
    pub fn warnings(&self) -> &[skeleton::UrdfWarning] {
        &self.warnings
    }

    /// The same model under another gravity vector (world frame, m/s²).
    pub fn with_gravity(mut self, gravity: Vector3<f64>) -> Result<Self> {
        check_gravity(&gravity)?;
        self.gravity = gravity;
        Ok(self)
    }

    /// The armature of each velocity (zero for a floating base).
    pub fn armature(&self) -> &[f64] {
        &self.armature
    }

    pub fn gravity(&self) -> Vector3<f64> {
        self.gravity
    }

    pub fn skeleton(&self) -> &Skeleton {
        &self.skeleton
    }

    /// Number of generalised velocities (= the skeleton's parameters).
    pub fn nv(&self) -> usize {
        self.nv
    }

    /// Number of configuration parameters (= [`Model::nv`]).
    pub fn nq(&self) -> usize {
        self.nv
    }

    pub fn bodies(&self) -> &[RigidBody] {
        &self.bodies
    }

    /// Where each skeleton joint's frame sits (indexed like the skeleton).
    pub fn frames(&self) -> &[JointFrame] {
        &self.frames
    }

    /// Total mass of the moving bodies, kg.
    pub fn total_mass(&self) -> f64 {
        self.bodies.iter().map(|b| b.inertia.mass).sum()
    }

    /// Does the first body move freely in space (a floating base)?
    pub fn has_floating_base(&self) -> bool {
        self.bodies
            .first()
            .is_some_and(|b| b.parent.is_none() && b.joint_model == JointModel::FreeFlyer)
    }

    /// The skeleton joint that owns velocity index `i`.
    pub fn joint_of_velocity(&self, i: usize) -> usize {
        self.bodies[self.dof_body[i]].joint
    }

    /// Fails unless `mass_matrix(rest)` has a Cholesky factor, naming the
    /// first joint (from the leaves) whose pivot vanishes.
    fn check_nondegenerate(&self) -> Result<()> {
        let mut data = crate::Data::new(self);
        let rest = self.skeleton.rest_pose();
        self.crba_unchecked(&mut data, &rest);
        match crate::algorithms::ltl_factor(&mut data.factor, &data.mass_matrix, &self.ancestors) {
            Ok(()) => Ok(()),
            Err(index) => Err(DynamicsError::Degenerate {
                joint: self
                    .skeleton
                    .joint(self.joint_of_velocity(index))
                    .name
                    .clone(),
                index,
            }),
        }
    }
}

fn check_gravity(g: &Vector3<f64>) -> Result<()> {
    match g.iter().find(|x| !x.is_finite()) {
        Some(&value) => Err(DynamicsError::InvalidOption {
            name: "gravity",
            requirement: "finite",
            value,
        }),
        None => Ok(()),
    }
}

fn check_inertia(joint: &str, i: &Inertia) -> Result<()> {
    let bad = |field, message| {
        Err(DynamicsError::InvalidInertia {
            joint: joint.to_string(),
            field,
            message,
        })
    };
    if !(i.mass.is_finite() && i.mass >= 0.0) {
        return bad("mass", format!("must be finite and >= 0, got {}", i.mass));
    }
    if !(i.h.iter().chain(i.i_o.iter()).all(|x| x.is_finite())) {
        return bad("inertia", "non-finite first moment or tensor".into());
    }
    Ok(())
}

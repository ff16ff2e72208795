//! Articulated bodies for posecloud.
//!
//! A [`Skeleton`] is a tree of joints (fixed, hinge, prismatic, 2-DOF swing,
//! 3-DOF ball in exp-map / swing–twist / Euler coordinates, free root), each
//! with limits and an optional body part (capsule, label class, mass). Poses
//! are flat parameter vectors; [`BatchForwardKinematics`] turns N of them
//! ([`PoseBatch`]) into N × J world transforms in one rayon-parallel pass.
//! [`presets`] builds the papers' bodies; `bvh` and `urdf` read (and for
//! BVH write) real files, with errors that name the line or element;
//! `visual` and `mesh` give URDF links their looks (shapes, colours,
//! STL/OBJ/COLLADA meshes found through `package://` paths).

mod bvh;
mod error;
mod fk;
mod joint;
mod mesh;
pub mod presets;
mod skeleton;
mod urdf;
mod visual;
mod xml_scan;

pub use bvh::{
    Bvh, BvhWriter, Channel, default_channels, hidden_beside, write_atomically, write_bvh,
    write_through,
};
pub use error::{Result, SkeletonError};
pub use fk::{BatchForwardKinematics, PoseBatch, Posing};
pub use joint::{BallRotation, JointKind, Range};
pub use skeleton::{Body, BodyPart, Capsule, Joint, Skeleton, SkeletonBuilder};
pub use urdf::{
    LinkInertial, MASSLESS_ARMATURE, UrdfAdjustment, UrdfImport, UrdfWarning, import_urdf,
    import_urdf_str, load_urdf, parse_urdf, parse_urdf_bytes,
};

pub use mesh::{MeshWarning, PackageResolver, TriangleMesh, VisualMeshes};
pub use visual::{Visual, VisualShape};

pub use nalgebra;

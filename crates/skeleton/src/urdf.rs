//! URDF import (robot descriptions), parsed with the `urdf-rs` crate.
//!
//! The link tree becomes a [`Skeleton`]: the root link is a fixed root joint
//! named after the link, and every URDF joint becomes one of our joints whose
//! placement is the joint's `origin` (`xyz` offset, `rpy` rest rotation,
//! `R = Rz(yaw)·Ry(pitch)·Rx(roll)` as URDF specifies) and whose kind is
//!
//! | URDF type    | kind                                   |
//! |--------------|----------------------------------------|
//! | `revolute`   | `Hinge` about `axis`, limit `[lower, upper]` |
//! | `continuous` | `Hinge` without limit                  |
//! | `prismatic`  | `Prismatic` along `axis` with its limit |
//! | `fixed`      | `Fixed`                                |
//! | `floating`   | `Free` (exp-map rotation)              |
//! | `spherical`  | `Ball` (exp map)                       |
//!
//! `planar` is rejected. The child link's body is a capsule from the joint
//! origin to the mean origin of the link's own child joints (or a sphere at
//! the origin for a leaf), with the radius of its first visual geometry and
//! the mass of its `inertial`. `mimic` tags are ignored (each joint keeps its
//! own parameter).

use std::collections::HashMap;
use std::path::Path;

use nalgebra::{UnitQuaternion, Vector3};
use urdf_rs::{Geometry, JointType, Robot};

use crate::error::{Result, SkeletonError};
use crate::joint::{JointKind, Range};
use crate::skeleton::{Body, BodyPart, Capsule, Joint, Skeleton};

/// Reads a URDF file into a skeleton.
pub fn load_urdf(path: impl AsRef<Path>) -> Result<Skeleton> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|cause| SkeletonError::Io {
        path: path.to_path_buf(),
        cause,
    })?;
    parse_urdf(&text, &path.display().to_string())
}

/// Parses URDF text into a skeleton; `file` names the source in errors.
pub fn parse_urdf(text: &str, file: &str) -> Result<Skeleton> {
    let err = |element: String, message: String| SkeletonError::Urdf {
        file: file.to_string(),
        element,
        message,
    };
    let robot: Robot =
        urdf_rs::read_from_string(text).map_err(|e| err("robot".into(), e.to_string()))?;
    if robot.links.is_empty() {
        return Err(err("robot".into(), "no <link> elements".into()));
    }
    let links: HashMap<&str, usize> = robot
        .links
        .iter()
        .enumerate()
        .map(|(i, l)| (l.name.as_str(), i))
        .collect();
    if links.len() != robot.links.len() {
        return Err(err("link".into(), "two links share a name".into()));
    }
    for l in &robot.links {
        let m = l.inertial.mass.value;
        if !(m.is_finite() && m >= 0.0) {
            return Err(err(
                format!("link '{}'", l.name),
                format!("<mass value> must be finite and >= 0, got {m}"),
            ));
        }
    }
    // The joint that has each link as its child.
    let mut parent_joint: HashMap<&str, usize> = HashMap::new();
    for (k, j) in robot.joints.iter().enumerate() {
        let el = format!("joint '{}'", j.name);
        for (role, link) in [("parent", &j.parent.link), ("child", &j.child.link)] {
            if !links.contains_key(link.as_str()) {
                return Err(err(
                    el.clone(),
                    format!("{role} link '{link}' is not defined"),
                ));
            }
        }
        if let Some(&other) = parent_joint.get(j.child.link.as_str()) {
            return Err(err(
                el,
                format!(
                    "link '{}' is already the child of joint '{}' (a link may have one parent)",
                    j.child.link, robot.joints[other].name
                ),
            ));
        }
        parent_joint.insert(j.child.link.as_str(), k);
    }
    let roots: Vec<&str> = robot
        .links
        .iter()
        .map(|l| l.name.as_str())
        .filter(|l| !parent_joint.contains_key(l))
        .collect();
    let root = match roots.as_slice() {
        [r] => *r,
        [] => {
            return Err(err(
                "robot".into(),
                "no root link: the joints form a cycle".into(),
            ));
        }
        many => {
            return Err(err(
                "robot".into(),
                format!(
                    "{} root links ({}): the link tree is not connected",
                    many.len(),
                    many.join(", ")
                ),
            ));
        }
    };
    // Joints whose parent is each link, in file order.
    let mut child_joints: HashMap<&str, Vec<usize>> = HashMap::new();
    for (k, j) in robot.joints.iter().enumerate() {
        child_joints
            .entry(j.parent.link.as_str())
            .or_default()
            .push(k);
    }

    let mut joints = vec![Joint::new(root, None, Vector3::zeros(), JointKind::Fixed)];
    joints[0].body = link_body(
        &robot,
        links[root],
        child_joints.get(root).map(Vec::as_slice).unwrap_or(&[]),
    );
    // Breadth-first: (URDF joint, our parent index).
    let mut queue: std::collections::VecDeque<(usize, usize)> = child_joints
        .get(root)
        .into_iter()
        .flatten()
        .map(|&k| (k, 0))
        .collect();
    while let Some((k, parent)) = queue.pop_front() {
        let uj = &robot.joints[k];
        let el = format!("joint '{}'", uj.name);
        let xyz = uj.origin.xyz.0;
        let rpy = uj.origin.rpy.0;
        if !xyz.iter().chain(rpy.iter()).all(|v| v.is_finite()) {
            return Err(err(el, "<origin> has a non-finite value".into()));
        }
        let axis = Vector3::from(uj.axis.xyz.0);
        let needs_axis = matches!(
            uj.joint_type,
            JointType::Revolute | JointType::Continuous | JointType::Prismatic
        );
        if needs_axis && !(axis.iter().all(|v| v.is_finite()) && axis.norm() > 1e-12) {
            return Err(err(
                el,
                format!(
                    "<axis xyz> must be a finite non-zero vector, got {:?}",
                    uj.axis.xyz.0
                ),
            ));
        }
        let limit = || -> Result<Option<Range>> {
            let (lo, hi) = (uj.limit.lower, uj.limit.upper);
            if lo.is_nan() || hi.is_nan() {
                return Err(err(el.clone(), "<limit> has a NaN bound".into()));
            }
            if lo.is_infinite() || hi.is_infinite() {
                return Ok(None);
            }
            if lo > hi {
                return Err(err(el.clone(), format!("<limit> lower {lo} > upper {hi}")));
            }
            Ok(Some(Range::new(lo, hi)))
        };
        let kind = match uj.joint_type {
            JointType::Revolute => JointKind::hinge(axis, limit()?),
            JointType::Continuous => JointKind::hinge(axis, None),
            JointType::Prismatic => JointKind::prismatic(axis, limit()?),
            JointType::Fixed => JointKind::Fixed,
            JointType::Floating => JointKind::free(),
            JointType::Spherical => JointKind::ball(),
            JointType::Planar => {
                return Err(err(el, "joint type 'planar' is not supported".into()));
            }
        };
        let index = joints.len();
        let mut joint = Joint::new(uj.name.clone(), Some(parent), Vector3::from(xyz), kind);
        joint.rest = UnitQuaternion::from_euler_angles(rpy[0], rpy[1], rpy[2]);
        let child = uj.child.link.as_str();
        let grand = child_joints.get(child).map(Vec::as_slice).unwrap_or(&[]);
        joint.body = link_body(&robot, links[child], grand);
        joints.push(joint);
        queue.extend(grand.iter().map(|&g| (g, index)));
    }
    if joints.len() != robot.joints.len() + 1 {
        return Err(err(
            "robot".into(),
            "some joints are not reachable from the root link (a cycle)".into(),
        ));
    }
    Skeleton::new(joints).map_err(|e| err("robot".into(), e.to_string()))
}

fn link_body(robot: &Robot, link: usize, child_joints: &[usize]) -> Option<Body> {
    let l = &robot.links[link];
    let ends: Vec<Vector3<f64>> = child_joints
        .iter()
        .map(|&k| Vector3::from(robot.joints[k].origin.xyz.0))
        .filter(|o| o.iter().all(|v| v.is_finite()) && o.norm() > 1e-9)
        .collect();
    let end = if ends.is_empty() {
        Vector3::zeros()
    } else {
        ends.iter().sum::<Vector3<f64>>() / ends.len() as f64
    };
    let radius = l
        .visual
        .first()
        .map(|v| match &v.geometry {
            Geometry::Cylinder { radius, .. }
            | Geometry::Capsule { radius, .. }
            | Geometry::Sphere { radius } => *radius,
            Geometry::Box { size } => size.0.iter().cloned().fold(f64::INFINITY, f64::min) / 2.0,
            Geometry::Mesh { .. } => 0.03,
        })
        .filter(|r| r.is_finite() && *r > 0.0)
        .unwrap_or(0.03);
    let mass = l.inertial.mass.value;
    if ends.is_empty() && l.visual.is_empty() {
        return None;
    }
    Some(Body {
        capsule: Capsule::new(Vector3::zeros(), end, radius),
        part: BodyPart::Link,
        mass,
    })
}

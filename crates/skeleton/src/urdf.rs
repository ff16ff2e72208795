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

use crate::bvh::{parse_bounded, utf8_or_error};
use crate::error::{Result, SkeletonError};
use crate::joint::{JointKind, Range};
use crate::skeleton::{Body, BodyPart, Capsule, Joint, Skeleton};
use crate::xml_scan::{self, Element};

/// Reads a URDF file into a skeleton. Invalid UTF-8 is an error naming its
/// line.
pub fn load_urdf(path: impl AsRef<Path>) -> Result<Skeleton> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|cause| SkeletonError::Io {
        path: path.to_path_buf(),
        cause,
    })?;
    parse_urdf_bytes(&bytes, &path.display().to_string())
}

/// Parses the raw bytes of a URDF file: invalid UTF-8 is an error naming the
/// line of the first bad byte, otherwise as [`parse_urdf`].
pub fn parse_urdf_bytes(bytes: &[u8], file: &str) -> Result<Skeleton> {
    let text = utf8_or_error(bytes).map_err(|(line, message)| SkeletonError::UrdfAt {
        file: file.to_string(),
        line,
        element: "file".into(),
        message,
    })?;
    parse_urdf(text, file)
}

/// Numeric attributes read from `<link>` and `<joint>` subtrees: element,
/// attribute, how many numbers, and whether they must be `>= 0`.
const NUMERIC_ATTRIBUTES: &[(&str, &str, usize, bool)] = &[
    ("origin", "xyz", 3, false),
    ("origin", "rpy", 3, false),
    ("origin", "quat_xyzw", 4, false),
    ("axis", "xyz", 3, false),
    ("limit", "lower", 1, false),
    ("limit", "upper", 1, false),
    ("limit", "effort", 1, false),
    ("limit", "velocity", 1, false),
    ("mass", "value", 1, true),
    ("inertia", "ixx", 1, false),
    ("inertia", "ixy", 1, false),
    ("inertia", "ixz", 1, false),
    ("inertia", "iyy", 1, false),
    ("inertia", "iyz", 1, false),
    ("inertia", "izz", 1, false),
    ("box", "size", 3, true),
    ("cylinder", "radius", 1, true),
    ("cylinder", "length", 1, true),
    ("sphere", "radius", 1, true),
    ("capsule", "radius", 1, true),
    ("capsule", "length", 1, true),
    ("mesh", "scale", 3, false),
    ("dynamics", "damping", 1, false),
    ("dynamics", "friction", 1, false),
    ("mimic", "multiplier", 1, false),
    ("mimic", "offset", 1, false),
];

/// What the pre-scan knows about the file: the line of each top-level
/// `<link>`/`<joint>` and of their child elements, for error messages.
struct Lines<'a> {
    elements: Vec<Element<'a>>,
    /// Top-level `(kind, name)` → index of the last such element.
    owners: HashMap<(&'a str, &'a str), usize>,
    /// Top-level elements with a `<limit>` child.
    with_limit: std::collections::HashSet<usize>,
}

impl<'a> Lines<'a> {
    /// Indexes the scan once, so that lookups cost O(1) however many joints
    /// a (hostile) file has.
    fn new(elements: Vec<Element<'a>>) -> Self {
        let top = |e: &Element| e.parent.is_some_and(|p| elements[p].parent.is_none());
        let mut owners = HashMap::new();
        let mut with_limit = std::collections::HashSet::new();
        for (i, e) in elements.iter().enumerate() {
            let name: Option<&'a str> = e
                .attributes
                .iter()
                .find(|a| a.name == "name")
                .map(|a| a.value);
            if top(e)
                && let Some(name) = name
            {
                owners.insert((e.name, name), i);
            }
            if e.name == "limit"
                && let Some(p) = e.parent
            {
                with_limit.insert(p);
            }
        }
        Self {
            elements,
            owners,
            with_limit,
        }
    }

    /// The top-level `<kind name="name">` element (the last one of that name).
    fn owner(&self, kind: &str, name: &str) -> Option<usize> {
        self.owners.get(&(kind, name)).copied()
    }

    fn line(&self, kind: &str, name: &str) -> Option<usize> {
        self.owner(kind, name).map(|i| self.elements[i].line)
    }

    /// Line of `child`'s `attribute` directly under the named owner (or of the
    /// child element, or the owner, when that is missing).
    fn child_line(&self, kind: &str, name: &str, child: &str, attribute: &str) -> Option<usize> {
        let owner = self.owner(kind, name)?;
        let c = self
            .elements
            .iter()
            .rposition(|e| e.parent == Some(owner) && e.name == child);
        Some(match c {
            Some(c) => self.elements[c]
                .attribute(attribute)
                .map_or(self.elements[c].line, |a| a.line),
            None => self.elements[owner].line,
        })
    }

    /// The top-level element (child of `<robot>`) that contains element `i`.
    fn top_level(&self, mut i: usize) -> Option<usize> {
        loop {
            let p = self.elements[i].parent?;
            if self.elements[p].parent.is_none() {
                return Some(i);
            }
            i = p;
        }
    }
}

/// Parses URDF text into a skeleton; `file` names the source in errors,
/// which carry the line of the offending element or number where the file
/// shows one. A leading UTF-8 byte-order mark is skipped.
///
/// Before `urdf-rs` sees the text, a non-recursive scan caps element
/// nesting at 100 levels and checks every number the skeleton uses: finite,
/// `|x| ≤ 1e9` ([`crate::bvh::MAX_VALUE`]), non-negative for masses and
/// sizes, the right count for vectors. Revolute and prismatic joints must
/// have a `<limit>` (the URDF spec requires it).
pub fn parse_urdf(text: &str, file: &str) -> Result<Skeleton> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let at = |line: usize, element: String, message: String| SkeletonError::UrdfAt {
        file: file.to_string(),
        line,
        element,
        message,
    };
    let elements = xml_scan::scan(text).map_err(|(line, m)| at(line, "xml".into(), m))?;
    let lines = Lines::new(elements);
    check_numbers(&lines, file)?;
    let err = |element: String, message: String| SkeletonError::Urdf {
        file: file.to_string(),
        element,
        message,
    };
    // An error about the named top-level link or joint, at its line.
    let err_in = |kind: &str, name: &str, message: String| {
        let element = format!("{kind} '{name}'");
        match lines.line(kind, name) {
            Some(line) => at(line, element, message),
            None => err(element, message),
        }
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
        let dup = robot
            .links
            .iter()
            .enumerate()
            .find(|(i, l)| links[l.name.as_str()] != *i)
            .map_or("", |(_, l)| l.name.as_str());
        return Err(err_in("link", dup, "two links share this name".into()));
    }
    for l in &robot.links {
        let m = l.inertial.mass.value;
        if !(m.is_finite() && m >= 0.0) {
            return Err(err_in(
                "link",
                &l.name,
                format!("<mass value> must be finite and >= 0, got {m}"),
            ));
        }
    }
    // Revolute and prismatic joints must have a <limit> (URDF spec); urdf-rs
    // would silently give them [0, 0] or (-inf, inf).
    for j in &robot.joints {
        if matches!(j.joint_type, JointType::Revolute | JointType::Prismatic)
            && let Some(owner) = lines.owner("joint", &j.name)
            && !lines.with_limit.contains(&owner)
        {
            return Err(err_in(
                "joint",
                &j.name,
                "a revolute or prismatic joint needs a <limit> element (the URDF spec requires it)"
                    .into(),
            ));
        }
    }
    // The joint that has each link as its child.
    let mut parent_joint: HashMap<&str, usize> = HashMap::new();
    for (k, j) in robot.joints.iter().enumerate() {
        for (role, link) in [("parent", &j.parent.link), ("child", &j.child.link)] {
            if !links.contains_key(link.as_str()) {
                return Err(err_in(
                    "joint",
                    &j.name,
                    format!("{role} link '{link}' is not defined"),
                ));
            }
        }
        if let Some(&other) = parent_joint.get(j.child.link.as_str()) {
            return Err(err_in(
                "joint",
                &j.name,
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

    // Links and joints are separate namespaces in URDF, but our joints share
    // one: the root joint is named after the root link unless a URDF joint
    // already has that name, then `<link>_link` (`_link` repeated until free).
    let mut root_name = root.to_string();
    while robot.joints.iter().any(|j| j.name == root_name) {
        root_name.push_str("_link");
    }
    let mut joints = vec![Joint::new(
        root_name,
        None,
        Vector3::zeros(),
        JointKind::Fixed,
    )];
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
        let name = uj.name.as_str();
        let el = format!("joint '{name}'");
        // Errors about one child element (and attribute) of this joint.
        let err_child = |child: &str, attribute: &str, message: String| {
            let element = format!("{el} <{child}>");
            match lines.child_line("joint", name, child, attribute) {
                Some(line) => at(line, element, message),
                None => err(element, message),
            }
        };
        let xyz = uj.origin.xyz.0;
        let rpy = uj.origin.rpy.0;
        if !xyz.iter().chain(rpy.iter()).all(|v| v.is_finite()) {
            return Err(err_child(
                "origin",
                "xyz",
                "<origin> has a non-finite value".into(),
            ));
        }
        let axis = Vector3::from(uj.axis.xyz.0);
        let needs_axis = matches!(
            uj.joint_type,
            JointType::Revolute | JointType::Continuous | JointType::Prismatic
        );
        if needs_axis && !(axis.iter().all(|v| v.is_finite()) && axis.norm() > 1e-12) {
            return Err(err_child(
                "axis",
                "xyz",
                format!(
                    "xyz must be a finite non-zero vector, got {:?}",
                    uj.axis.xyz.0
                ),
            ));
        }
        let limit = || -> Result<Option<Range>> {
            let (lo, hi) = (uj.limit.lower, uj.limit.upper);
            if lo.is_nan() || hi.is_nan() {
                return Err(err_child("limit", "lower", "a bound is NaN".into()));
            }
            // Only an omitted bound (URDF >= 1.2) is infinite here: written
            // ones were checked finite by the scan.
            if lo.is_infinite() || hi.is_infinite() {
                return Ok(None);
            }
            if lo > hi {
                return Err(err_child(
                    "limit",
                    "lower",
                    format!("lower {lo} > upper {hi}"),
                ));
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
                return Err(err_in(
                    "joint",
                    name,
                    "joint type 'planar' is not supported".into(),
                ));
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
    Skeleton::new(joints).map_err(|e| match &e {
        SkeletonError::InvalidJoint { joint, .. } if lines.line("joint", joint).is_some() => {
            err_in("joint", joint, e.to_string())
        }
        _ => err("robot".into(), e.to_string()),
    })
}

/// Checks every number of [`NUMERIC_ATTRIBUTES`] in `<link>` and `<joint>`
/// subtrees, with the line of the offending value.
fn check_numbers(lines: &Lines, file: &str) -> Result<()> {
    for (i, e) in lines.elements.iter().enumerate() {
        let rules: Vec<_> = NUMERIC_ATTRIBUTES
            .iter()
            .filter(|(el, ..)| *el == e.name)
            .collect();
        if rules.is_empty() {
            continue;
        }
        let Some(top) = lines.top_level(i) else {
            continue;
        };
        let owner = &lines.elements[top];
        if !matches!(owner.name, "link" | "joint") {
            continue;
        }
        let owner_name = owner.attribute("name").map_or("", |a| a.value);
        for &&(_, attribute, count, non_negative) in &rules {
            let Some(a) = e.attribute(attribute) else {
                continue;
            };
            let fail = |message: String| SkeletonError::UrdfAt {
                file: file.to_string(),
                line: a.line,
                element: format!("{} '{owner_name}' <{} {attribute}>", owner.name, e.name),
                message,
            };
            let tokens: Vec<&str> = a.value.split_whitespace().collect();
            if tokens.len() != count {
                return Err(fail(format!(
                    "expected {count} number{}, found {} in '{}'",
                    if count == 1 { "" } else { "s" },
                    tokens.len(),
                    a.value
                )));
            }
            for t in tokens {
                let v = parse_bounded(t).map_err(&fail)?;
                if non_negative && v < 0.0 {
                    return Err(fail(format!("'{t}' must not be negative")));
                }
            }
        }
    }
    Ok(())
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

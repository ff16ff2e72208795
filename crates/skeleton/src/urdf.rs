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
//! the mass of its `inertial`. Its `<visual>` elements become the joint's
//! [`Joint::visuals`](crate::Joint) (shape, `origin`, material colour inline
//! or by name from a top-level `<material>`; [`crate::visual`]), which the
//! app draws instead of the capsule when their meshes load
//! ([`crate::mesh`]).
//!
//! # What real files need: adjustments, each a warning
//!
//! Robot descriptions that ROS (urdfdom) and Pinocchio load are accepted
//! here too; where we read them differently from the letter of the file the
//! import says so in [`UrdfImport::warnings`] (and `posecloud info` prints
//! them):
//!
//! | in the file | urdfdom / Pinocchio | here |
//! |-------------|---------------------|------|
//! | `<texture/>` without `filename` | ignored | removed before `urdf-rs` (which requires one) |
//! | a limit bound with `|x| ≥ 10⁹` (`±1e16` written for "none") | a number | the joint is unlimited |
//! | an inertia tensor with a negative eigenvalue within [`INERTIA_CLAMP_TOLERANCE`] | used as written | clamped to the nearest positive semi-definite tensor |
//! | a moving joint whose whole subtree has neither mass nor inertia | a zero row in `M` | listed; a dynamics model gives it the armature [`MASSLESS_ARMATURE`] |
//! | `<mimic>` | independent joints (Pinocchio's default) | independent joints, listed as ignored |
//! | an inertia tensor with larger negative eigenvalues | used as written | used as written, listed (a dynamics model refuses it if `M` is then not positive definite) |
//!
//! Everything else that is malformed stays an error naming the file, the
//! line and the element.

use std::collections::HashMap;
use std::path::Path;

use nalgebra::{Matrix3, UnitQuaternion, Vector3};
use urdf_rs::{Geometry, JointType, Robot};

use crate::bvh::{MAX_VALUE, parse_bounded, utf8_or_error};
use crate::error::{Result, SkeletonError, read_file};
use crate::joint::{JointKind, Range};
use crate::skeleton::{Body, BodyPart, Capsule, Joint, Skeleton};
use crate::visual::{Visual, VisualShape};
use crate::xml_scan::{self, Element};

/// The armature (kg·m² for a hinge, kg for a prismatic joint) that
/// `dynamics::Model::from_urdf` adds to the mass matrix's diagonal for each
/// joint in [`UrdfImport::massless`]: small against any real link (a finger
/// phalanx has ~10⁻⁶ kg·m²), large enough that `M` has a Cholesky factor.
pub const MASSLESS_ARMATURE: f64 = 1e-6;

/// How negative an eigenvalue of an inertia tensor (about its centre of
/// mass) may be and still be clamped to zero: `1e-6 · max(tr I, 1 kg·m²)`.
/// The absolute floor matters for small links: tiago's antenna has the
/// eigenvalues `(9.1, 3.5, −3.5) · 10⁻⁸ kg·m²`, rounding in the file that is
/// large relative to its own trace but negligible for any motion.
pub(crate) const INERTIA_CLAMP_TOLERANCE: f64 = 1e-6;

/// What a URDF import adjusted (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UrdfAdjustment {
    /// A `<texture>` without `filename` was ignored.
    TextureWithoutFilename,
    /// A limit bound of magnitude `≥ 10⁹` made the joint unlimited.
    UnlimitedBound,
    /// An inertia tensor's small negative eigenvalues were clamped to zero.
    InertiaClamped,
    /// A moving joint moves no mass or inertia at all; a dynamics model
    /// gives it the armature [`MASSLESS_ARMATURE`].
    MasslessSubtree,
    /// A `<mimic>` element was ignored: the joint keeps its own parameter.
    MimicIgnored,
    /// An inertia tensor is not positive semi-definite beyond the clamp:
    /// used as written, as Pinocchio does (a dynamics model refuses it if
    /// the mass matrix is then not positive definite).
    InertiaNotPsd,
}

/// One adjustment made while importing a URDF file, with where it applies.
#[derive(Clone, Debug, PartialEq)]
pub struct UrdfWarning {
    pub adjustment: UrdfAdjustment,
    pub file: String,
    /// 1-based line of the element, where the file shows one.
    pub line: Option<usize>,
    /// The element, as in errors: `joint 'j' <limit lower>`.
    pub element: String,
    pub message: String,
}

impl std::fmt::Display for UrdfWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: ", self.file)?,
            None => write!(f, "{}: ", self.file)?,
        }
        write!(f, "{}: {}", self.element, self.message)
    }
}

/// A link's `<inertial>`, in the frame of the skeleton joint that carries
/// the link (the URDF link frame).
#[derive(Clone, Debug, PartialEq)]
pub struct LinkInertial {
    pub link: String,
    /// Line of the `<inertial>` element, if the link has one.
    pub line: Option<usize>,
    /// kg.
    pub mass: f64,
    /// Centre of mass (`<origin xyz>`).
    pub com: Vector3<f64>,
    /// Inertia tensor about the centre of mass, in the link frame (the
    /// file's tensor turned by `<origin rpy>`, clamped where a warning says
    /// so). Not checked positive semi-definite beyond the clamp: a skeleton
    /// does not need it, a dynamics model checks it.
    pub inertia: Matrix3<f64>,
}

/// A URDF file read into a skeleton, with what the skeleton has no place for.
#[derive(Clone, Debug)]
pub struct UrdfImport {
    pub skeleton: Skeleton,
    /// One per skeleton joint: the inertial of the link the joint carries
    /// (for the root joint, the root link); `None` for a link without one.
    pub inertials: Vec<Option<LinkInertial>>,
    /// Moving skeleton joints whose whole subtree (the links they move,
    /// welded ones included) has neither mass nor inertia, so that the mass
    /// matrix is singular along them; each also has a warning.
    pub massless: Vec<usize>,
    /// Every adjustment made, in file order of the element concerned.
    pub warnings: Vec<UrdfWarning>,
}

/// Reads a URDF file into a skeleton. Invalid UTF-8 is an error naming its
/// line. Adjustments are dropped: [`import_urdf`] returns them.
pub fn load_urdf(path: impl AsRef<Path>) -> Result<Skeleton> {
    import_urdf(path).map(|i| i.skeleton)
}

/// Reads a URDF file: the skeleton, the links' inertials and the list of
/// adjustments made (module docs).
pub fn import_urdf(path: impl AsRef<Path>) -> Result<UrdfImport> {
    let path = path.as_ref();
    let bytes = read_file(path)?;
    import_urdf_bytes(&bytes, &path.display().to_string())
}

/// Parses the raw bytes of a URDF file: invalid UTF-8 is an error naming the
/// line of the first bad byte, otherwise as [`parse_urdf`].
pub fn parse_urdf_bytes(bytes: &[u8], file: &str) -> Result<Skeleton> {
    import_urdf_bytes(bytes, file).map(|i| i.skeleton)
}

/// As [`parse_urdf_bytes`], with everything [`import_urdf`] returns.
pub(crate) fn import_urdf_bytes(bytes: &[u8], file: &str) -> Result<UrdfImport> {
    let text = utf8_or_error(bytes).map_err(|(line, message)| SkeletonError::UrdfAt {
        file: file.to_string(),
        line,
        element: "file".into(),
        message,
    })?;
    import_urdf_str(text, file)
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
    ("color", "rgba", 4, true),
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
    /// `(element, child name)` → index of the element's last such child.
    children: HashMap<(usize, &'a str), usize>,
}

impl<'a> Lines<'a> {
    /// Indexes the scan once, so that lookups cost O(1) however many joints
    /// a (hostile) file has.
    fn new(elements: Vec<Element<'a>>) -> Self {
        let top = |e: &Element| e.parent.is_some_and(|p| elements[p].parent.is_none());
        let mut owners = HashMap::new();
        let mut children = HashMap::new();
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
            if let Some(p) = e.parent {
                children.insert((p, e.name), i);
            }
        }
        Self {
            elements,
            owners,
            children,
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
        Some(match self.child(owner, child) {
            Some(c) => self.elements[c]
                .attribute(attribute)
                .map_or(self.elements[c].line, |a| a.line),
            None => self.elements[owner].line,
        })
    }

    /// The last `<child>` element directly under element `parent`.
    fn child(&self, parent: usize, child: &str) -> Option<usize> {
        self.children.get(&(parent, child)).copied()
    }

    /// `link 'name'` (or another top-level kind) for the top-level element
    /// that contains element `i`.
    fn owner_label(&self, i: usize) -> String {
        match self.top_level(i) {
            Some(t) => {
                let e = &self.elements[t];
                match e.attribute("name") {
                    Some(n) => format!("{} '{}'", e.name, n.value),
                    None => e.name.to_string(),
                }
            }
            None => "robot".into(),
        }
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
/// `|x| ≤ 1e9` ([`crate::bvh::MAX_VALUE`]; `<limit>` bounds may be larger,
/// meaning "unlimited"), non-negative for masses and sizes, the right count
/// for vectors. Revolute and prismatic joints must have a `<limit>` (the
/// URDF spec requires it). Adjustments (module docs) are dropped:
/// [`import_urdf_str`] returns them.
pub fn parse_urdf(text: &str, file: &str) -> Result<Skeleton> {
    import_urdf_str(text, file).map(|i| i.skeleton)
}

/// As [`parse_urdf`], with the links' inertials and the adjustments made.
pub fn import_urdf_str(text: &str, file: &str) -> Result<UrdfImport> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let at = |line: usize, element: String, message: String| SkeletonError::UrdfAt {
        file: file.to_string(),
        line,
        element,
        message,
    };
    let elements = xml_scan::scan(text).map_err(|(line, m)| at(line, "xml".into(), m))?;
    let lines = Lines::new(elements);
    // One document, one robot: a second top-level <robot> (two files
    // pasted together) would otherwise be dropped without a word.
    let mut robots = lines
        .elements
        .iter()
        .filter(|e| e.parent.is_none() && e.name == "robot");
    if let (Some(_), Some(second)) = (robots.next(), robots.next()) {
        return Err(at(
            second.line,
            "robot".into(),
            "a second <robot> element: a URDF file describes one robot".into(),
        ));
    }
    let mut warnings = Vec::new();
    let warn = |adjustment, line, element: String, message: String| UrdfWarning {
        adjustment,
        file: file.to_string(),
        line,
        element,
        message,
    };
    check_numbers(&lines, file, &mut warnings)?;
    // urdfdom ignores a <texture> without filename; urdf-rs requires one.
    // Blanking the element (newlines kept) leaves every line number as it was.
    let mut blanked: Option<Vec<u8>> = None;
    let mut textures: Vec<(usize, String)> = Vec::new();
    for (i, e) in lines.elements.iter().enumerate() {
        if e.name == "texture" && e.attribute("filename").is_none() {
            let bytes = blanked.get_or_insert_with(|| text.as_bytes().to_vec());
            for b in &mut bytes[e.span.clone()] {
                if *b != b'\n' {
                    *b = b' ';
                }
            }
            textures.push((e.line, lines.owner_label(i)));
        }
    }
    if let Some((line, owner)) = textures.first() {
        let mut at: Vec<String> = textures
            .iter()
            .take(8)
            .map(|(l, _)| l.to_string())
            .collect();
        if textures.len() > at.len() {
            at.push("…".into());
        }
        warnings.push(warn(
            UrdfAdjustment::TextureWithoutFilename,
            Some(*line),
            format!("{owner} <texture>"),
            format!(
                "{} <texture> element{} without filename ignored, as urdfdom does (line{} {})",
                textures.len(),
                if textures.len() == 1 { "" } else { "s" },
                if textures.len() == 1 { "" } else { "s" },
                at.join(", ")
            ),
        ));
    }
    let blanked = blanked.map(|b| String::from_utf8(b).expect("ASCII blanks keep UTF-8"));
    let urdf_text = blanked.as_deref().unwrap_or(text);
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
        urdf_rs::read_from_string(urdf_text).map_err(|e| err("robot".into(), e.to_string()))?;
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
            && lines.child(owner, "limit").is_none()
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
    for j in &robot.joints {
        if let Some(m) = &j.mimic {
            warnings.push(warn(
                UrdfAdjustment::MimicIgnored,
                lines.child_line("joint", &j.name, "mimic", "joint"),
                format!("joint '{}' <mimic>", j.name),
                format!(
                    "mimics '{}' (multiplier {}, offset {}): ignored, the joint keeps its own parameter (as Pinocchio by default)",
                    m.joint,
                    m.multiplier.unwrap_or(1.0),
                    m.offset.unwrap_or(0.0)
                ),
            ));
        }
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
    // The URDF link each of our joints carries.
    let mut joint_link = vec![links[root]];
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
            // `±1e16` and the like mean "none" (check_numbers warned).
            if lo.abs() >= MAX_VALUE || hi.abs() >= MAX_VALUE {
                return Ok(None);
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
        joint_link.push(links[child]);
        queue.extend(grand.iter().map(|&g| (g, index)));
    }
    for (joint, &l) in joints.iter_mut().zip(&joint_link) {
        joint.visuals = link_visuals(&robot.links[l], &robot.materials);
    }
    if joints.len() != robot.joints.len() + 1 {
        return Err(err(
            "robot".into(),
            "some joints are not reachable from the root link (a cycle)".into(),
        ));
    }
    let skeleton = Skeleton::new(joints).map_err(|e| match &e {
        SkeletonError::InvalidJoint { joint, .. } if lines.line("joint", joint).is_some() => {
            err_in("joint", joint, e.to_string())
        }
        _ => err("robot".into(), e.to_string()),
    })?;
    // Joints welded to the fixed root link (the root included) never move.
    let mut on_base = vec![true; skeleton.len()];
    for j in 1..skeleton.len() {
        let joint = skeleton.joint(j);
        on_base[j] = joint.kind.dof() == 0 && joint.parent.is_none_or(|p| on_base[p]);
    }
    let inertials: Vec<Option<LinkInertial>> = joint_link
        .iter()
        .zip(&on_base)
        .map(|(&l, &fixed)| link_inertial(&robot.links[l], fixed, &lines, &mut warnings, file))
        .collect();
    let massless = massless_joints(&skeleton, &inertials);
    let mut is_massless = vec![false; skeleton.len()];
    for &j in &massless {
        is_massless[j] = true;
    }
    for &j in &massless {
        // One warning per massless subtree, at its topmost moving joint.
        let mut up = skeleton.joint(j).parent;
        while let Some(p) = up.filter(|&p| skeleton.joint(p).kind.dof() == 0) {
            up = skeleton.joint(p).parent;
        }
        if up.is_some_and(|p| is_massless[p]) {
            continue;
        }
        let name = &skeleton.joint(j).name;
        let (links, below) = subtree(&skeleton, j, &robot, &joint_link);
        let (below, each) = if below.is_empty() {
            (String::new(), "it")
        } else {
            (
                format!(" and the joints below it ({})", capped(&below)),
                "each",
            )
        };
        warnings.push(warn(
            UrdfAdjustment::MasslessSubtree,
            lines.line("joint", name),
            format!("joint '{name}'"),
            format!(
                "moves no mass or inertia (links {}): the mass matrix is singular along it{below}; a dynamics model gives {each} an armature of {MASSLESS_ARMATURE:e}",
                capped(&links)
            ),
        ));
    }
    warnings.sort_by_key(|w| w.line.unwrap_or(usize::MAX));
    Ok(UrdfImport {
        skeleton,
        inertials,
        massless,
        warnings,
    })
}

/// A link's `<inertial>` in its link frame; an inertia tensor with slightly
/// negative eigenvalues (≥ −[`INERTIA_CLAMP_TOLERANCE`]` · max(tr I, 1)`)
/// is clamped to the nearest positive semi-definite one, with a warning.
/// A worse one is kept as written, as Pinocchio does, with a warning that
/// says whether the link moves at all (`!on_base`). Numbers were checked
/// finite by [`check_numbers`].
fn link_inertial(
    link: &urdf_rs::Link,
    on_base: bool,
    lines: &Lines,
    warnings: &mut Vec<UrdfWarning>,
    file: &str,
) -> Option<LinkInertial> {
    let line = lines
        .owner("link", &link.name)
        .and_then(|owner| lines.child(owner, "inertial"))
        .map(|i| lines.elements[i].line);
    let inertial = &link.inertial;
    let t = &inertial.inertia;
    let tensor = Matrix3::new(
        t.ixx, t.ixy, t.ixz, t.ixy, t.iyy, t.iyz, t.ixz, t.iyz, t.izz,
    );
    let mass = inertial.mass.value;
    if line.is_none() && mass == 0.0 && tensor == Matrix3::zeros() {
        return None;
    }
    let rpy = inertial.origin.rpy.0;
    let rotation = UnitQuaternion::from_euler_angles(rpy[0], rpy[1], rpy[2])
        .to_rotation_matrix()
        .into_inner();
    let mut inertia = rotation * tensor * rotation.transpose();
    let eigen = inertia.symmetric_eigen();
    let min = eigen.eigenvalues.min();
    let noise = -1e-12 * eigen.eigenvalues.amax().max(1.0);
    let tolerance = -INERTIA_CLAMP_TOLERANCE * inertia.trace().max(1.0);
    let e = eigen.eigenvalues;
    // Formatted only for a warning: most links have none.
    let eigenvalues = || format!("({:e}, {:e}, {:e}) kg·m²", e[0], e[1], e[2]);
    let adjusted = if min < noise && min >= tolerance {
        let clamped = eigen.eigenvalues.map(|e| e.max(0.0));
        inertia =
            eigen.eigenvectors * Matrix3::from_diagonal(&clamped) * eigen.eigenvectors.transpose();
        inertia = (inertia + inertia.transpose()) / 2.0;
        Some((
            UrdfAdjustment::InertiaClamped,
            format!(
                "eigenvalues {}: the negative one clamped to 0 (within {INERTIA_CLAMP_TOLERANCE:e} · max(trace, 1))",
                eigenvalues()
            ),
        ))
    } else if min < tolerance {
        let why = if on_base {
            "the link is welded to the fixed base: it never moves and no dynamics term uses it"
        } else {
            "physically impossible; a dynamics model refuses it only if the mass matrix is then not positive definite"
        };
        Some((
            UrdfAdjustment::InertiaNotPsd,
            format!(
                "not positive semi-definite (eigenvalues {}): used as written, as Pinocchio does; {why}",
                eigenvalues()
            ),
        ))
    } else {
        None
    };
    if let Some((adjustment, message)) = adjusted {
        warnings.push(UrdfWarning {
            adjustment,
            file: file.to_string(),
            line,
            element: format!("link '{}' <inertia>", link.name),
            message,
        });
    }
    Some(LinkInertial {
        link: link.name.clone(),
        line,
        mass,
        com: Vector3::from(inertial.origin.xyz.0),
        inertia,
    })
}

/// Moving joints whose subtree carries neither mass nor inertia.
fn massless_joints(skeleton: &Skeleton, inertials: &[Option<LinkInertial>]) -> Vec<usize> {
    let mut loaded: Vec<bool> = inertials
        .iter()
        .map(|i| {
            i.as_ref()
                .is_some_and(|i| i.mass != 0.0 || i.inertia != Matrix3::zeros())
        })
        .collect();
    // Joints come parents first: one backward pass gathers each subtree.
    for j in (1..skeleton.len()).rev() {
        if let Some(p) = skeleton.joint(j).parent {
            loaded[p] |= loaded[j];
        }
    }
    (0..skeleton.len())
        .filter(|&j| skeleton.joint(j).kind.dof() > 0 && !loaded[j])
        .collect()
}

/// At most 12 names, comma-separated, then how many in all.
fn capped(names: &[String]) -> String {
    const SHOWN: usize = 12;
    if names.len() <= SHOWN {
        names.join(", ")
    } else {
        format!("{}, … ({} in all)", names[..SHOWN].join(", "), names.len())
    }
}

/// The URDF links moved by joint `j` and the moving joints below it, quoted.
fn subtree(
    skeleton: &Skeleton,
    j: usize,
    robot: &Robot,
    joint_link: &[usize],
) -> (Vec<String>, Vec<String>) {
    let (mut links, mut below) = (Vec::new(), Vec::new());
    let mut stack = vec![j];
    while let Some(k) = stack.pop() {
        links.push(format!("'{}'", robot.links[joint_link[k]].name));
        if k != j && skeleton.joint(k).kind.dof() > 0 {
            below.push(format!("'{}'", skeleton.joint(k).name));
        }
        stack.extend(skeleton.children(k).iter().rev());
    }
    (links, below)
}

/// Checks every number of [`NUMERIC_ATTRIBUTES`] in `<link>` and `<joint>`
/// subtrees, with the line of the offending value.
///
/// `<limit>` values may exceed [`MAX_VALUE`] (if finite): files write
/// `±1e16` for "no limit", and a bound that large makes the joint unlimited
/// (with a warning; effort and velocity are not used).
fn check_numbers(lines: &Lines, file: &str, warnings: &mut Vec<UrdfWarning>) -> Result<()> {
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
                let huge = t.trim().parse::<f64>().ok().filter(|v| {
                    e.name == "limit"
                        && owner.name == "joint"
                        && v.is_finite()
                        && v.abs() >= MAX_VALUE
                });
                if let Some(v) = huge {
                    // One warning per <limit>, at its first huge bound.
                    let first = warnings.last().is_none_or(|w| {
                        w.adjustment != UrdfAdjustment::UnlimitedBound
                            || w.element != format!("joint '{owner_name}' <limit lower>")
                    });
                    if matches!(attribute, "lower" | "upper") && first {
                        warnings.push(UrdfWarning {
                            adjustment: UrdfAdjustment::UnlimitedBound,
                            file: file.to_string(),
                            line: Some(a.line),
                            element: format!("joint '{owner_name}' <limit {attribute}>"),
                            message: format!(
                                "{v:e} means no limit (|bound| >= {MAX_VALUE:e}): the joint is unlimited"
                            ),
                        });
                    }
                    continue;
                }
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

/// A link's `<visual>`s in its frame (= the frame of the joint that carries
/// it). Numbers were checked finite by [`check_numbers`]; a colour is
/// clamped to `[0, 1]`; a material that names no colour (inline or in a
/// top-level `<material>` of that name) gives `None`.
fn link_visuals(link: &urdf_rs::Link, materials: &[urdf_rs::Material]) -> Vec<Visual> {
    link.visual
        .iter()
        .map(|v| {
            let [x, y, z] = v.origin.xyz.0;
            let [roll, pitch, yaw] = v.origin.rpy.0;
            let origin = nalgebra::Isometry3::from_parts(
                nalgebra::Translation3::new(x, y, z),
                UnitQuaternion::from_euler_angles(roll, pitch, yaw),
            );
            let shape = match &v.geometry {
                Geometry::Box { size } => VisualShape::Box {
                    size: Vector3::from(size.0),
                },
                Geometry::Cylinder { radius, length } => VisualShape::Cylinder {
                    radius: *radius,
                    length: *length,
                },
                Geometry::Capsule { radius, length } => VisualShape::Capsule {
                    radius: *radius,
                    length: *length,
                },
                Geometry::Sphere { radius } => VisualShape::Sphere { radius: *radius },
                Geometry::Mesh { filename, scale } => VisualShape::Mesh {
                    filename: filename.clone(),
                    scale: scale.map_or(Vector3::repeat(1.0), |s| Vector3::from(s.0)),
                },
            };
            let colour = v.material.as_ref().and_then(|m| {
                m.color.as_ref().or_else(|| {
                    materials
                        .iter()
                        .rev()
                        .find(|top| !m.name.is_empty() && top.name == m.name)
                        .and_then(|top| top.color.as_ref())
                })
            });
            let rgba = colour
                .map(|c| c.rgba.0)
                .filter(|c| c.iter().all(|v| v.is_finite()))
                .map(|c| c.map(|v| v.clamp(0.0, 1.0) as f32));
            Visual {
                origin,
                shape,
                rgba,
            }
        })
        .collect()
}

//! BVH (Biovision hierarchy) import and export.
//!
//! A BVH file is a joint hierarchy (`ROOT`/`JOINT`/`End Site` with `OFFSET`
//! and `CHANNELS`) followed by motion frames, one line of channel values per
//! frame. Rotation channels are Euler angles in degrees, composed in the order
//! listed, `R = R_c0 · R_c1 · R_c2` (the first listed is outermost); position
//! channels translate the joint in its parent's frame, added to `OFFSET`.
//!
//! Import maps each joint to a [`JointKind`]:
//!
//! | channels                       | joint kind                                 |
//! |--------------------------------|--------------------------------------------|
//! | none (`End Site`, `CHANNELS 0`)| `Fixed` (end sites are named `<parent>_end`)|
//! | one rotation                   | `Hinge` about that axis                    |
//! | three rotations, any order     | `Ball(Euler)` in that order                |
//! | three positions + three rotations, any order | `Free` with an Euler rotation |
//!
//! Pose parameters are the channel values in radians (rotations) and file
//! units (positions), so import → export → import reproduces every value to
//! the file's printed precision. Each joint gets a capsule body towards its
//! children (their mean offset), a label class guessed from its name and a
//! mass proportional to the capsule's volume (density of water).
//!
//! Export writes the channels a file was read with ([`Bvh::channels`]); for a
//! skeleton built any other way [`default_channels`] chooses them: Euler and
//! axis-aligned hinge joints keep their own angles, other rotating joints are
//! written as `Zrotation Yrotation Xrotation` (angles continuous from frame to
//! frame, EXPMAP §4.2), prismatic joints cannot be written.

use std::fmt::Write as _;
use std::path::Path;

use nalgebra::{UnitQuaternion, Vector3};
use rotation::euler::{self, Axis, EulerOrder};

use crate::error::{Result, SkeletonError};
use crate::fk::PoseBatch;
use crate::joint::{BallRotation, JointKind};
use crate::skeleton::{Body, BodyPart, Capsule, Joint, Skeleton};

/// One BVH channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel {
    Position(Axis),
    Rotation(Axis),
}

impl Channel {
    fn parse(s: &str) -> Option<Self> {
        let axis = |c: u8| match c.to_ascii_uppercase() {
            b'X' => Some(Axis::X),
            b'Y' => Some(Axis::Y),
            b'Z' => Some(Axis::Z),
            _ => None,
        };
        let b = s.as_bytes();
        if b.len() < 2 {
            return None;
        }
        let a = axis(b[0])?;
        match s[1..].to_ascii_lowercase().as_str() {
            "position" => Some(Self::Position(a)),
            "rotation" => Some(Self::Rotation(a)),
            _ => None,
        }
    }

    fn name(self) -> String {
        let (a, kind) = match self {
            Self::Position(a) => (a, "position"),
            Self::Rotation(a) => (a, "rotation"),
        };
        format!("{}{kind}", axis_name(a))
    }
}

fn axis_name(a: Axis) -> &'static str {
    match a {
        Axis::X => "X",
        Axis::Y => "Y",
        Axis::Z => "Z",
    }
}

fn axis_index(a: Axis) -> usize {
    match a {
        Axis::X => 0,
        Axis::Y => 1,
        Axis::Z => 2,
    }
}

/// A BVH clip: the skeleton, one pose per frame, and the channel layout the
/// file used (so that export writes the same columns).
#[derive(Clone, Debug)]
pub struct Bvh {
    pub skeleton: Skeleton,
    /// Seconds per frame.
    pub frame_time: f64,
    /// One pose per frame.
    pub frames: PoseBatch,
    /// Channels of each joint, in file order.
    pub channels: Vec<Vec<Channel>>,
}

impl Bvh {
    /// Reads a BVH file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|cause| SkeletonError::Io {
            path: path.to_path_buf(),
            cause,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses BVH text; `file` names the source in error messages.
    pub fn parse(text: &str, file: &str) -> Result<Self> {
        Parser::new(text, file).parse()
    }

    /// The file text, with the channels this clip was read with.
    pub fn to_bvh_string(&self) -> Result<String> {
        write_bvh(
            &self.skeleton,
            &self.channels,
            self.frame_time,
            &self.frames,
        )
    }

    /// Writes the clip to `path`.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        std::fs::write(path, self.to_bvh_string()?).map_err(|cause| SkeletonError::Io {
            path: path.to_path_buf(),
            cause,
        })
    }
}

struct Token<'a> {
    text: &'a str,
    line: usize,
}

struct Parser<'a> {
    file: &'a str,
    tokens: Vec<Token<'a>>,
    pos: usize,
    /// Index of the first line after `MOTION`'s header, and the lines.
    lines: Vec<&'a str>,
    joints: Vec<Joint>,
    channels: Vec<Vec<Channel>>,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str, file: &'a str) -> Self {
        Self {
            file,
            tokens: Vec::new(),
            pos: 0,
            lines: text.lines().collect(),
            joints: Vec::new(),
            channels: Vec::new(),
        }
    }

    fn err(&self, line: usize, message: impl Into<String>) -> SkeletonError {
        SkeletonError::Bvh {
            file: self.file.to_string(),
            line,
            message: message.into(),
        }
    }

    fn last_line(&self) -> usize {
        self.tokens
            .last()
            .map_or(self.lines.len().max(1), |t| t.line)
    }

    fn next(&mut self, what: &str) -> Result<Token<'a>> {
        match self.tokens.get(self.pos) {
            Some(t) => {
                self.pos += 1;
                Ok(Token {
                    text: t.text,
                    line: t.line,
                })
            }
            None => Err(self.err(
                self.last_line(),
                format!("unexpected end of file, expected {what}"),
            )),
        }
    }

    fn expect(&mut self, word: &str) -> Result<usize> {
        let t = self.next(&format!("'{word}'"))?;
        if t.text != word {
            return Err(self.err(t.line, format!("expected '{word}', found '{}'", t.text)));
        }
        Ok(t.line)
    }

    fn number(&mut self, what: &str) -> Result<f64> {
        let t = self.next(what)?;
        parse_finite(t.text).ok_or_else(|| {
            self.err(
                t.line,
                format!("{what}: '{}' is not a finite number", t.text),
            )
        })
    }

    fn parse(mut self) -> Result<Bvh> {
        // Tokenise the hierarchy part (up to the MOTION line).
        let mut motion_line = None;
        for (i, line) in self.lines.iter().enumerate() {
            if line.trim() == "MOTION" {
                motion_line = Some(i);
                break;
            }
            for text in line.split_whitespace() {
                self.tokens.push(Token { text, line: i + 1 });
            }
        }
        let first = self.next("'HIERARCHY'")?;
        if first.text != "HIERARCHY" {
            return Err(self.err(
                first.line,
                format!("expected 'HIERARCHY', found '{}'", first.text),
            ));
        }
        self.expect("ROOT")?;
        self.joint(None)?;
        if let Some(t) = self.tokens.get(self.pos) {
            return Err(self.err(
                t.line,
                format!(
                    "unexpected '{}' after the root joint (only one ROOT is supported)",
                    t.text
                ),
            ));
        }
        let Some(motion_line) = motion_line else {
            return Err(self.err(self.lines.len().max(1), "missing 'MOTION' section"));
        };
        let skeleton = Skeleton::new(std::mem::take(&mut self.joints))
            .map_err(|e| self.err(1, e.to_string()))?;
        let (frame_time, frames) = self.motion(motion_line, &skeleton)?;
        Ok(Bvh {
            skeleton,
            frame_time,
            frames,
            channels: self.channels,
        })
    }

    /// Parses a joint after its `ROOT`/`JOINT` keyword.
    fn joint(&mut self, parent: Option<usize>) -> Result<()> {
        let name_tok = self.next("a joint name")?;
        let name = name_tok.text.to_string();
        if name == "{" {
            return Err(self.err(name_tok.line, "joint has no name"));
        }
        self.expect("{")?;
        let offset = self.offset()?;
        let ch_line = self.expect("CHANNELS")?;
        let count_tok = self.next("the channel count")?;
        let count: usize = count_tok.text.parse().map_err(|_| {
            self.err(
                count_tok.line,
                format!("channel count '{}' is not a whole number", count_tok.text),
            )
        })?;
        if count > 6 {
            return Err(self.err(
                count_tok.line,
                format!("joint '{name}' has {count} channels; at most 6 are allowed"),
            ));
        }
        let mut channels = Vec::with_capacity(count);
        for k in 0..count {
            let t = self.next("a channel name")?;
            let c = Channel::parse(t.text).ok_or_else(|| {
                self.err(
                    t.line,
                    format!(
                        "joint '{name}': '{}' is not a channel name (CHANNELS {count} lists {k} valid names before it)",
                        t.text
                    ),
                )
            })?;
            channels.push(c);
        }
        let kind = kind_from_channels(&channels)
            .map_err(|m| self.err(ch_line, format!("joint '{name}': {m}")))?;
        let index = self.joints.len();
        self.joints
            .push(Joint::new(name.clone(), parent, offset, kind));
        self.channels.push(channels);
        let mut child_offsets = Vec::new();
        loop {
            let t = self.next("'JOINT', 'End Site' or '}'")?;
            match t.text {
                "JOINT" => {
                    let child = self.joints.len();
                    self.joint(Some(index))?;
                    child_offsets.push(self.joints[child].offset);
                }
                "End" => {
                    self.expect("Site")?;
                    self.expect("{")?;
                    let offset = self.offset()?;
                    self.expect("}")?;
                    let end_name = format!("{name}_end");
                    self.joints
                        .push(Joint::new(end_name, Some(index), offset, JointKind::Fixed));
                    self.channels.push(Vec::new());
                    child_offsets.push(offset);
                }
                "}" => break,
                other => {
                    return Err(self.err(t.line, format!("in joint '{name}': expected 'JOINT', 'End Site' or '}}', found '{other}'")));
                }
            }
        }
        self.joints[index].body = body_towards(&name, &child_offsets);
        Ok(())
    }

    fn offset(&mut self) -> Result<Vector3<f64>> {
        self.expect("OFFSET")?;
        Ok(Vector3::new(
            self.number("OFFSET x")?,
            self.number("OFFSET y")?,
            self.number("OFFSET z")?,
        ))
    }

    fn motion(&self, motion_line: usize, skeleton: &Skeleton) -> Result<(f64, PoseBatch)> {
        let mut rest = self
            .lines
            .iter()
            .enumerate()
            .skip(motion_line + 1)
            .filter(|(_, l)| !l.trim().is_empty());
        let (i, line) = rest
            .next()
            .ok_or_else(|| self.err(motion_line + 1, "missing 'Frames:' line after MOTION"))?;
        let n_frames: usize = line
            .trim()
            .strip_prefix("Frames:")
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| {
                self.err(
                    i + 1,
                    format!("expected 'Frames: <count>', found '{}'", line.trim()),
                )
            })?;
        let (i, line) = rest
            .next()
            .ok_or_else(|| self.err(i + 1, "missing 'Frame Time:' line"))?;
        let frame_time = line
            .trim()
            .strip_prefix("Frame Time:")
            .and_then(parse_finite)
            .filter(|t| *t > 0.0)
            .ok_or_else(|| {
                self.err(
                    i + 1,
                    format!(
                        "expected 'Frame Time: <positive seconds>', found '{}'",
                        line.trim()
                    ),
                )
            })?;
        let n_channels: usize = self.channels.iter().map(Vec::len).sum();
        let mut frames = PoseBatch::from_vec(
            skeleton.dof(),
            Vec::with_capacity(n_frames * skeleton.dof()),
        )
        .expect("empty buffer");
        let mut values = Vec::with_capacity(n_channels);
        let mut pose = vec![0.0; skeleton.dof()];
        let mut last_line = i + 1;
        for (i, line) in rest {
            last_line = i + 1;
            if frames.len() == n_frames {
                return Err(self.err(
                    i + 1,
                    format!("more frame lines than 'Frames: {n_frames}' declares"),
                ));
            }
            values.clear();
            for (k, tok) in line.split_whitespace().enumerate() {
                let v = parse_finite(tok).ok_or_else(|| {
                    self.err(
                        i + 1,
                        format!("value {} ('{tok}') is not a finite number", k + 1),
                    )
                })?;
                values.push(v);
            }
            if values.len() != n_channels {
                return Err(self.err(
                    i + 1,
                    format!(
                        "frame has {} values, the hierarchy declares {n_channels} channels",
                        values.len()
                    ),
                ));
            }
            channels_to_pose(skeleton, &self.channels, &values, &mut pose);
            frames.push(&pose)?;
        }
        if frames.len() != n_frames {
            return Err(self.err(
                last_line,
                format!(
                    "file ends after {} frames, 'Frames:' declares {n_frames}",
                    frames.len()
                ),
            ));
        }
        Ok((frame_time, frames))
    }
}

fn parse_finite(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

fn kind_from_channels(channels: &[Channel]) -> std::result::Result<JointKind, String> {
    let rot: Vec<Axis> = channels
        .iter()
        .filter_map(|c| match c {
            Channel::Rotation(a) => Some(*a),
            Channel::Position(_) => None,
        })
        .collect();
    let pos: Vec<Axis> = channels
        .iter()
        .filter_map(|c| match c {
            Channel::Position(a) => Some(*a),
            Channel::Rotation(_) => None,
        })
        .collect();
    let distinct = |v: &[Axis]| (0..v.len()).all(|i| !v[i + 1..].contains(&v[i]));
    if !distinct(&rot) || !distinct(&pos) {
        return Err("a channel is listed twice".into());
    }
    let euler = || BallRotation::Euler {
        order: EulerOrder([rot[0], rot[1], rot[2]]),
        limits: None,
    };
    match (pos.len(), rot.len()) {
        (0, 0) => Ok(JointKind::Fixed),
        (0, 1) => Ok(JointKind::hinge(rot[0].unit().into_inner(), None)),
        (0, 3) => Ok(JointKind::Ball(euler())),
        (3, 3) => Ok(JointKind::Free {
            rotation: euler(),
            translation_limits: None,
        }),
        (p, r) => Err(format!(
            "unsupported channel set ({p} position and {r} rotation channels); supported: none, 1 rotation, 3 rotations, or 3 positions + 3 rotations"
        )),
    }
}

/// The pose-vector index of each channel of a joint whose kind was built by
/// [`kind_from_channels`] (or matches [`default_channels`]); positions in
/// file units, rotations in radians.
fn channel_param_index(kind: &JointKind, channels: &[Channel]) -> Vec<usize> {
    let mut rot_k = 0;
    channels
        .iter()
        .map(|c| match c {
            Channel::Position(a) => axis_index(*a),
            Channel::Rotation(_) => {
                let base = if matches!(kind, JointKind::Free { .. }) {
                    3
                } else {
                    0
                };
                rot_k += 1;
                base + rot_k - 1
            }
        })
        .collect()
}

fn channels_to_pose(
    skeleton: &Skeleton,
    channels: &[Vec<Channel>],
    values: &[f64],
    pose: &mut [f64],
) {
    let mut k = 0;
    for (j, (joint, chans)) in skeleton.joints().iter().zip(channels).enumerate() {
        let base = skeleton.param_range(j).start;
        for (c, idx) in chans.iter().zip(channel_param_index(&joint.kind, chans)) {
            pose[base + idx] = match c {
                Channel::Position(_) => values[k],
                Channel::Rotation(_) => values[k].to_radians(),
            };
            k += 1;
        }
    }
}

fn body_towards(name: &str, child_offsets: &[Vector3<f64>]) -> Option<Body> {
    let ends: Vec<_> = child_offsets.iter().filter(|o| o.norm() > 1e-9).collect();
    if ends.is_empty() {
        return None;
    }
    let end = ends.iter().copied().sum::<Vector3<f64>>() / ends.len() as f64;
    let len = end.norm();
    let radius = (0.2 * len).clamp(0.01, 0.08);
    let capsule = Capsule::new(Vector3::zeros(), end, radius);
    let lower = name.to_ascii_lowercase();
    let part = if lower.contains("hipjoint") {
        BodyPart::Pelvis
    } else {
        BodyPart::from_joint_name(name)
    };
    Some(Body {
        mass: 1000.0 * capsule.volume(),
        capsule,
        part,
    })
}

/// Channels to write for each joint of a skeleton that was not read from a
/// BVH file. Fails for joints BVH cannot express (prismatic).
pub fn default_channels(skeleton: &Skeleton) -> Result<Vec<Vec<Channel>>> {
    use Channel::{Position as P, Rotation as R};
    let zyx = [R(Axis::Z), R(Axis::Y), R(Axis::X)];
    let mut out = Vec::with_capacity(skeleton.len());
    for (j, joint) in skeleton.joints().iter().enumerate() {
        let has_rest = joint.rest.angle() > 1e-12;
        let leaf = skeleton.children(j).is_empty();
        let chans: Vec<Channel> = match &joint.kind {
            JointKind::Fixed if leaf || !has_rest => vec![],
            JointKind::Prismatic { .. } => {
                return Err(SkeletonError::InvalidJoint {
                    joint: joint.name.clone(),
                    field: "kind",
                    message: "a prismatic joint cannot be written as BVH".into(),
                });
            }
            JointKind::Ball(BallRotation::Euler { order, .. }) if !has_rest => {
                order.0.iter().map(|&a| R(a)).collect()
            }
            JointKind::Free {
                rotation: BallRotation::Euler { order, .. },
                ..
            } if !has_rest => {
                let mut c = vec![P(Axis::X), P(Axis::Y), P(Axis::Z)];
                c.extend(order.0.iter().map(|&a| R(a)));
                c
            }
            JointKind::Hinge { axis, .. } if !has_rest && aligned_axis(axis).is_some() => {
                vec![R(aligned_axis(axis).expect("checked"))]
            }
            JointKind::Free { .. } => {
                let mut c = vec![P(Axis::X), P(Axis::Y), P(Axis::Z)];
                c.extend(zyx);
                c
            }
            _ => zyx.to_vec(),
        };
        out.push(chans);
    }
    Ok(out)
}

fn aligned_axis(axis: &nalgebra::Unit<Vector3<f64>>) -> Option<Axis> {
    [Axis::X, Axis::Y, Axis::Z]
        .into_iter()
        .find(|a| (a.unit().into_inner() - axis.into_inner()).norm() < 1e-12)
}

/// Writes a skeleton and its frames as BVH text with the given channels per
/// joint (from [`Bvh::channels`] or [`default_channels`]). Values are printed
/// with six decimals, like the CMU files.
pub fn write_bvh(
    skeleton: &Skeleton,
    channels: &[Vec<Channel>],
    frame_time: f64,
    frames: &PoseBatch,
) -> Result<String> {
    if channels.len() != skeleton.len() {
        return Err(SkeletonError::InvalidPose(format!(
            "{} channel lists for {} joints",
            channels.len(),
            skeleton.len()
        )));
    }
    if frames.dof() != skeleton.dof() {
        return Err(SkeletonError::InvalidPose(format!(
            "frames have {} parameters, skeleton has {}",
            frames.dof(),
            skeleton.dof()
        )));
    }
    if !(frame_time.is_finite() && frame_time > 0.0) {
        return Err(SkeletonError::InvalidPose(format!(
            "frame time must be positive, got {frame_time}"
        )));
    }
    // Which joints keep their own parameters as channel values (exact), and
    // which are converted through their rotation.
    let direct: Vec<bool> = skeleton
        .joints()
        .iter()
        .zip(channels)
        .map(|(joint, chans)| writes_directly(joint, chans))
        .collect();

    let mut s = String::from("HIERARCHY\n");
    write_joint(&mut s, skeleton, channels, 0, 0);
    let n_channels: usize = channels.iter().map(Vec::len).sum();
    let _ = write!(
        s,
        "MOTION\nFrames: {}\nFrame Time: {frame_time:.6}\n",
        frames.len()
    );
    let mut previous: Vec<[f64; 3]> = vec![[0.0; 3]; skeleton.len()];
    let mut row = Vec::with_capacity(n_channels);
    for pose in frames.iter() {
        skeleton.check_pose(pose)?;
        row.clear();
        for (j, joint) in skeleton.joints().iter().enumerate() {
            let p = &pose[skeleton.param_range(j)];
            let chans = &channels[j];
            if chans.is_empty() {
                continue;
            }
            if direct[j] {
                for (c, idx) in chans.iter().zip(channel_param_index(&joint.kind, chans)) {
                    row.push(match c {
                        Channel::Position(_) => p[idx],
                        Channel::Rotation(_) => p[idx].to_degrees(),
                    });
                }
            } else {
                let motion = joint.kind.motion(p);
                let q: UnitQuaternion<f64> = joint.rest * motion.rotation;
                let rot: Vec<Axis> = chans
                    .iter()
                    .filter_map(|c| {
                        if let Channel::Rotation(a) = c {
                            Some(*a)
                        } else {
                            None
                        }
                    })
                    .collect();
                let angles = if rot.len() == 3 {
                    let a = euler::from_quaternion_near(
                        EulerOrder([rot[0], rot[1], rot[2]]),
                        &q,
                        previous[j],
                    );
                    previous[j] = a;
                    a
                } else {
                    [0.0; 3]
                };
                let mut k = 0;
                for c in chans {
                    row.push(match c {
                        Channel::Position(a) => {
                            (joint.rest * motion.translation.vector)[axis_index(*a)]
                        }
                        Channel::Rotation(_) => {
                            k += 1;
                            angles[k - 1].to_degrees()
                        }
                    });
                }
            }
        }
        let line: Vec<String> = row.iter().map(|v| format!("{v:.6}")).collect();
        s.push_str(&line.join(" "));
        s.push('\n');
    }
    Ok(s)
}

/// Does `joint` store exactly the values of `chans` (radians for rotations)?
fn writes_directly(joint: &Joint, chans: &[Channel]) -> bool {
    if joint.rest.angle() > 1e-12 {
        return false;
    }
    match kind_from_channels(chans) {
        Ok(k) => match (&k, &joint.kind) {
            (JointKind::Fixed, JointKind::Fixed) => true,
            (JointKind::Hinge { axis: a, .. }, JointKind::Hinge { axis: b, .. }) => {
                (a.into_inner() - b.into_inner()).norm() < 1e-12
            }
            (
                JointKind::Ball(BallRotation::Euler { order: a, .. }),
                JointKind::Ball(BallRotation::Euler { order: b, .. }),
            ) => a == b,
            (
                JointKind::Free {
                    rotation: BallRotation::Euler { order: a, .. },
                    ..
                },
                JointKind::Free {
                    rotation: BallRotation::Euler { order: b, .. },
                    ..
                },
            ) => a == b,
            _ => false,
        },
        Err(_) => false,
    }
}

fn write_joint(
    s: &mut String,
    skeleton: &Skeleton,
    channels: &[Vec<Channel>],
    j: usize,
    depth: usize,
) {
    let indent = "\t".repeat(depth);
    let joint = skeleton.joint(j);
    let o = joint.offset;
    let is_end = channels[j].is_empty() && skeleton.children(j).is_empty() && j != 0;
    if is_end {
        let _ = writeln!(
            s,
            "{indent}End Site\n{indent}{{\n{indent}\tOFFSET {:.6} {:.6} {:.6}\n{indent}}}",
            o.x, o.y, o.z
        );
        return;
    }
    let keyword = if j == 0 { "ROOT" } else { "JOINT" };
    let _ = writeln!(s, "{indent}{keyword} {}\n{indent}{{", joint.name);
    let _ = writeln!(s, "{indent}\tOFFSET {:.6} {:.6} {:.6}", o.x, o.y, o.z);
    let names: Vec<String> = channels[j].iter().map(|c| c.name()).collect();
    let sep = if names.is_empty() { "" } else { " " };
    let _ = writeln!(
        s,
        "{indent}\tCHANNELS {}{sep}{}",
        names.len(),
        names.join(" ")
    );
    for &c in skeleton.children(j) {
        write_joint(s, skeleton, channels, c, depth + 1);
    }
    let _ = writeln!(s, "{indent}}}");
}

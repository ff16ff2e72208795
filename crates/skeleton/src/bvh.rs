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
use std::path::{Path, PathBuf};

use nalgebra::{UnitQuaternion, Vector3};
use rotation::euler::{self, Axis, EulerOrder};

use crate::error::{Result, SkeletonError, read_file};
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
    /// Reads a BVH file. Invalid UTF-8 is an error naming its line.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = read_file(path)?;
        Self::parse_bytes(&bytes, &path.display().to_string())
    }

    /// Parses BVH text; `file` names the source in error messages. A leading
    /// UTF-8 byte-order mark is skipped; CRLF line ends are accepted.
    pub fn parse(text: &str, file: &str) -> Result<Self> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        Parser::new(text, file).parse()
    }

    /// Parses the raw bytes of a BVH file: invalid UTF-8 is an error naming
    /// the line of the first bad byte, otherwise as [`Bvh::parse`].
    pub fn parse_bytes(bytes: &[u8], file: &str) -> Result<Self> {
        let text = utf8_or_error(bytes).map_err(|(line, message)| SkeletonError::Bvh {
            file: file.to_string(),
            line,
            message,
        })?;
        Self::parse(text, file)
    }

    /// World transforms of every joint in frame `frame`, with an error
    /// naming the frame if it does not exist or if forward kinematics is not
    /// finite (see [`Skeleton::forward_kinematics`]).
    pub fn forward_kinematics(&self, frame: usize) -> Result<Vec<nalgebra::Isometry3<f64>>> {
        if frame >= self.frames.len() {
            return Err(SkeletonError::InvalidPose(format!(
                "frame {frame} out of range (the clip has {} frames)",
                self.frames.len()
            )));
        }
        self.skeleton
            .forward_kinematics(self.frames.pose(frame))
            .map_err(|e| SkeletonError::InvalidPose(format!("frame {frame}: {e}")))
    }

    /// Is joint `j` an `End Site` (no channels, no children, not the root)?
    /// Such joints are written back as `End Site`; their names (`<parent>_end`,
    /// made unique if a real joint already has that name) are not in the file.
    pub fn is_end_site(&self, j: usize) -> bool {
        j != 0
            && j < self.skeleton.len()
            && self.channels.get(j).is_some_and(Vec::is_empty)
            && self.skeleton.children(j).is_empty()
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
        write_atomically(path, self.to_bvh_string()?.as_bytes()).map_err(|cause| {
            SkeletonError::Io {
                path: path.to_path_buf(),
                cause,
            }
        })
    }
}

/// Writes `bytes` to a temporary file beside `path` (`.NAME.partial`),
/// syncs it and renames it over `path`: an interrupted save leaves the old
/// file or the whole new one, never part of it.
///
/// # Errors
/// The I/O error (the temporary file is removed).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_through(&hidden_beside(path, "partial"), path, &[bytes])
}

/// The hidden name `.NAME.SUFFIX` beside `path` (`.output.SUFFIX` when
/// `path` has no file name): where [`write_atomically`] and `vision`'s
/// output files write before the rename.
pub fn hidden_beside(path: &Path, suffix: &str) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{suffix}"))
}

/// Writes `parts` one after another to `tmp`, syncs it and renames it over
/// `path` (both in the same folder, so the rename is atomic).
///
/// # Errors
/// The I/O error (`tmp` is removed).
pub fn write_through(tmp: &Path, path: &Path, parts: &[&[u8]]) -> std::io::Result<()> {
    use std::io::Write as _;
    let result = (|| {
        let mut f = std::fs::File::create(tmp)?;
        for part in parts {
            f.write_all(part)?;
        }
        f.sync_all()?;
        std::fs::rename(tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(tmp);
    }
    result
}

/// Largest magnitude accepted for an `OFFSET` or a frame value. Real clips
/// stay below 1e5 (centimetres or degrees); anything near `f64::MAX` is a
/// corrupt file, and bounding every value keeps forward kinematics, capsule
/// volumes and masses finite (a chain of `n` joints reaches at most
/// `2·√3·n·MAX_VALUE`).
pub(crate) const MAX_VALUE: f64 = 1e9;

/// Frame times accepted (seconds): positive, and printable with the six
/// decimals files use (a denormal `1e-320` would be written as `0.000000`).
pub(crate) const FRAME_TIME: std::ops::RangeInclusive<f64> = 1e-6..=MAX_VALUE;

/// Decodes UTF-8, or names the 1-based line of the first invalid byte.
pub(crate) fn utf8_or_error(bytes: &[u8]) -> std::result::Result<&str, (usize, String)> {
    std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        (line, format!("invalid UTF-8 at byte {at}"))
    })
}

/// A number from a file: finite and at most [`MAX_VALUE`] in magnitude.
pub(crate) fn parse_bounded(s: &str) -> std::result::Result<f64, String> {
    match s.trim().parse::<f64>() {
        Err(_) => Err(format!("'{s}' is not a number")),
        Ok(v) if !v.is_finite() => Err(format!("'{s}' is not a finite number")),
        Ok(v) if v.abs() > MAX_VALUE => Err(format!(
            "'{s}' is out of range (the magnitude must be at most {MAX_VALUE:e})"
        )),
        Ok(v) => Ok(v),
    }
}

struct Token<'a> {
    text: &'a str,
    line: usize,
}

/// A joint whose `{` is open while its children are parsed.
struct OpenJoint {
    index: usize,
    name: String,
    child_offsets: Vec<Vector3<f64>>,
}

struct Parser<'a> {
    file: &'a str,
    tokens: Vec<Token<'a>>,
    pos: usize,
    lines: Vec<&'a str>,
    joints: Vec<Joint>,
    channels: Vec<Vec<Channel>>,
    /// Line of each joint's name (of `End` for end sites).
    joint_lines: Vec<usize>,
    /// Which joints are `End Site`s (named by the parser, not the file).
    end_site: Vec<bool>,
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
            joint_lines: Vec::new(),
            end_site: Vec::new(),
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
        parse_bounded(t.text).map_err(|m| self.err(t.line, format!("{what}: {m}")))
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
        self.hierarchy()?;
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
        self.name_end_sites();
        let names: Vec<String> = self.joints.iter().map(|j| j.name.clone()).collect();
        let skeleton = Skeleton::new(std::mem::take(&mut self.joints)).map_err(|e| {
            // Point at the joint the skeleton check complains about (the
            // later one of a duplicated name).
            let line = match &e {
                SkeletonError::InvalidJoint { joint, .. } => names
                    .iter()
                    .rposition(|n| n == joint)
                    .map_or(1, |j| self.joint_lines[j]),
                _ => 1,
            };
            self.err(line, e.to_string())
        })?;
        let (frame_time, frames) = self.motion(motion_line, &skeleton)?;
        Ok(Bvh {
            skeleton,
            frame_time,
            frames,
            channels: self.channels,
        })
    }

    /// End sites are called `<parent>_end`; when a real joint already has
    /// that name (a joint literally named `Spine_end` next to `Spine`'s End
    /// Site), the end site becomes `<parent>_2_end`, `<parent>_3_end`, …
    fn name_end_sites(&mut self) {
        let mut taken: std::collections::HashSet<String> = self
            .joints
            .iter()
            .zip(&self.end_site)
            .filter(|(_, end)| !**end)
            .map(|(j, _)| j.name.clone())
            .collect();
        // Next suffix to try per parent, so that many end sites under one
        // joint cost linear, not quadratic, time.
        let mut next_k: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
        for j in 0..self.joints.len() {
            if !self.end_site[j] {
                continue;
            }
            let p = self.joints[j].parent.unwrap_or(0);
            let parent = self.joints[p].name.as_str();
            let k = next_k.entry(p).or_insert(1);
            let mut name = if *k == 1 {
                format!("{parent}_end")
            } else {
                format!("{parent}_{k}_end")
            };
            while taken.contains(&name) {
                *k += 1;
                name = format!("{parent}_{k}_end");
            }
            *k += 1;
            taken.insert(name.clone());
            self.joints[j].name = name;
        }
    }

    /// Parses the joint tree after `ROOT`. Iterative (an explicit stack of
    /// open joints), so a chain thousands of joints deep cannot overflow the
    /// call stack.
    fn hierarchy(&mut self) -> Result<()> {
        let mut open = vec![self.joint_header(None)?];
        while let Some(top) = open.last_mut() {
            let t = self.next("'JOINT', 'End Site' or '}'")?;
            match t.text {
                "JOINT" => {
                    let parent = top.index;
                    let child = self.joint_header(Some(parent))?;
                    open.push(child);
                }
                "End" => {
                    self.expect("Site")?;
                    self.expect("{")?;
                    let offset = self.offset()?;
                    self.expect("}")?;
                    let parent = top.index;
                    top.child_offsets.push(offset);
                    // Named in `name_end_sites` once every real name is known.
                    self.joints
                        .push(Joint::new("", Some(parent), offset, JointKind::Fixed));
                    self.channels.push(Vec::new());
                    self.joint_lines.push(t.line);
                    self.end_site.push(true);
                }
                "}" => {
                    let done = open.pop().expect("loop guard: the stack is not empty");
                    self.joints[done.index].body = body_towards(&done.name, &done.child_offsets);
                    if let Some(parent) = open.last_mut() {
                        parent.child_offsets.push(self.joints[done.index].offset);
                    }
                }
                other => {
                    return Err(self.err(
                        t.line,
                        format!(
                            "in joint '{}': expected 'JOINT', 'End Site' or '}}', found '{other}'",
                            top.name
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Parses a joint's name, `{`, `OFFSET` and `CHANNELS` after its
    /// `ROOT`/`JOINT` keyword and adds the joint.
    fn joint_header(&mut self, parent: Option<usize>) -> Result<OpenJoint> {
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
        self.joint_lines.push(name_tok.line);
        self.end_site.push(false);
        Ok(OpenJoint {
            index,
            name,
            child_offsets: Vec::new(),
        })
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
        let frames_line = i + 1;
        let count = line.trim().strip_prefix("Frames:").ok_or_else(|| {
            self.err(
                frames_line,
                format!("expected 'Frames: <count>', found '{}'", line.trim()),
            )
        })?;
        let n_frames: usize = count.trim().parse().map_err(|_| {
            self.err(
                frames_line,
                format!(
                    "Frames: '{}' is not a frame count (a whole number)",
                    count.trim()
                ),
            )
        })?;
        let (i, line) = rest
            .next()
            .ok_or_else(|| self.err(i + 1, "missing 'Frame Time:' line"))?;
        let frame_time = line
            .trim()
            .strip_prefix("Frame Time:")
            .and_then(parse_finite)
            .filter(|t| FRAME_TIME.contains(t))
            .ok_or_else(|| {
                self.err(
                    i + 1,
                    format!(
                        "expected 'Frame Time: <seconds, {:e} to {:e}>', found '{}'",
                        FRAME_TIME.start(),
                        FRAME_TIME.end(),
                        line.trim()
                    ),
                )
            })?;
        // The declared count is checked against the frame lines present
        // before anything is allocated for them.
        let frame_lines: Vec<(usize, &&str)> = rest.collect();
        if frame_lines.len() > n_frames {
            return Err(self.err(
                frame_lines[n_frames].0 + 1,
                format!("more frame lines than 'Frames: {n_frames}' declares"),
            ));
        }
        if frame_lines.len() < n_frames {
            let last_line = frame_lines.last().map_or(i + 1, |(k, _)| k + 1);
            return Err(self.err(
                last_line,
                format!(
                    "file ends after {} frames, 'Frames:' (line {frames_line}) declares {n_frames}",
                    frame_lines.len()
                ),
            ));
        }
        let n_channels: usize = self.channels.iter().map(Vec::len).sum();
        let mut frames = PoseBatch::from_vec(
            skeleton.dof(),
            Vec::with_capacity(n_frames.saturating_mul(skeleton.dof()).min(1 << 20)),
        )
        .expect("empty buffer");
        let mut values = Vec::with_capacity(n_channels);
        let mut pose = vec![0.0; skeleton.dof()];
        for (i, line) in frame_lines {
            values.clear();
            for (k, tok) in line.split_whitespace().enumerate() {
                let v = parse_bounded(tok)
                    .map_err(|m| self.err(i + 1, format!("value {}: {m}", k + 1)))?;
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
        Ok((frame_time, frames))
    }
}

fn parse_finite(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

fn kind_from_channels(channels: &[Channel]) -> std::result::Result<JointKind, String> {
    let mut rot: Vec<Axis> = Vec::new();
    let mut pos: Vec<Axis> = Vec::new();
    for c in channels {
        match *c {
            Channel::Rotation(a) => rot.push(a),
            Channel::Position(a) => pos.push(a),
        }
    }
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
    let mut w = BvhWriter::new(skeleton, channels, frame_time)?;
    if frames.dof() != skeleton.dof() {
        return Err(SkeletonError::InvalidPose(format!(
            "frames have {} parameters, skeleton has {}",
            frames.dof(),
            skeleton.dof()
        )));
    }
    let mut s = w.head(frames.len());
    for pose in frames.iter() {
        s.push_str(&w.row(pose)?);
        s.push('\n');
    }
    Ok(s)
}

/// BVH text written a frame at a time (a recording that grows as it is
/// tracked): [`Self::head`] (the hierarchy and the motion header for a
/// frame count) and one [`Self::row`] per pose, in order (rotations are
/// unwrapped against the previous row). [`BvhWriter::new`] makes every
/// check [`write_bvh`] makes on the skeleton, channels and frame time, so a
/// recording can be refused before its first frame.
#[derive(Clone, Debug)]
pub struct BvhWriter {
    skeleton: Skeleton,
    channels: Vec<Vec<Channel>>,
    frame_time: f64,
    direct: Vec<bool>,
    order: Vec<usize>,
    previous: Vec<[f64; 3]>,
}

impl BvhWriter {
    /// Checks that `skeleton` with `channels` and `frame_time` can be
    /// written as BVH.
    ///
    /// # Errors
    /// A channel list per joint missing, a frame time outside
    /// [`FRAME_TIME`], a joint name BVH cannot hold (empty, with
    /// whitespace, a brace).
    pub fn new(skeleton: &Skeleton, channels: &[Vec<Channel>], frame_time: f64) -> Result<Self> {
        if channels.len() != skeleton.len() {
            return Err(SkeletonError::InvalidPose(format!(
                "{} channel lists for {} joints",
                channels.len(),
                skeleton.len()
            )));
        }
        check_frame_time(frame_time)?;
        // A name BVH cannot hold (URDF names may contain spaces) would
        // produce a file that reads back differently or not at all. End
        // sites are unnamed.
        for (j, joint) in skeleton.joints().iter().enumerate() {
            let written = !(channels[j].is_empty() && skeleton.children(j).is_empty() && j != 0);
            let n = joint.name.as_str();
            if written && (n.is_empty() || n.contains(char::is_whitespace) || n == "{" || n == "}")
            {
                return Err(SkeletonError::InvalidJoint {
                    joint: n.to_string(),
                    field: "name",
                    message: "a BVH joint name must be one word (no spaces, not '{' or '}')".into(),
                });
            }
        }
        // Which joints keep their own parameters as channel values (exact),
        // and which are converted through their rotation.
        let direct: Vec<bool> = skeleton
            .joints()
            .iter()
            .zip(channels)
            .map(|(joint, chans)| writes_directly(joint, chans))
            .collect();
        Ok(Self {
            skeleton: skeleton.clone(),
            channels: channels.to_vec(),
            frame_time,
            direct,
            // A row holds the channels in the order the hierarchy lists the
            // joints (depth first), which need not be the skeleton's order.
            order: hierarchy_order(skeleton),
            previous: vec![[0.0; 3]; skeleton.len()],
        })
    }

    /// The `HIERARCHY` section.
    pub fn hierarchy(&self) -> String {
        let mut s = String::from("HIERARCHY\n");
        write_joint(&mut s, &self.skeleton, &self.channels, 0, 0);
        s
    }

    /// The seconds per frame written.
    pub fn frame_time(&self) -> f64 {
        self.frame_time
    }

    /// The hierarchy and `MOTION`, `Frames: frames`, `Frame Time:` lines.
    pub fn head(&self, frames: usize) -> String {
        let mut s = self.hierarchy();
        let _ = write!(
            s,
            "MOTION\nFrames: {frames}\nFrame Time: {:.6}\n",
            self.frame_time
        );
        s
    }

    /// The motion line of `pose` (no newline).
    ///
    /// # Errors
    /// A pose of the wrong length or with non-finite values.
    pub fn row(&mut self, pose: &[f64]) -> Result<String> {
        let skeleton = &self.skeleton;
        skeleton.check_pose(pose)?;
        let mut row = Vec::new();
        for &j in &self.order {
            let joint = skeleton.joint(j);
            let p = &pose[skeleton.param_range(j)];
            let chans = &self.channels[j];
            if chans.is_empty() {
                continue;
            }
            if self.direct[j] {
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
                        self.previous[j],
                    );
                    self.previous[j] = a;
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
        Ok(line.join(" "))
    }
}

/// Checks a frame time against [`FRAME_TIME`].
///
/// # Errors
/// [`SkeletonError::InvalidPose`] saying the bounds.
pub(crate) fn check_frame_time(frame_time: f64) -> Result<()> {
    if FRAME_TIME.contains(&frame_time) {
        Ok(())
    } else {
        Err(SkeletonError::InvalidPose(format!(
            "frame time must be {:e} to {:e} seconds, got {frame_time}",
            FRAME_TIME.start(),
            FRAME_TIME.end()
        )))
    }
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

/// Indentation stops growing past this depth, so that a chain thousands of
/// joints deep is written in linear, not quadratic, space.
const MAX_INDENT: usize = 32;

/// Writes joint `root` and its subtree. Iterative (an explicit stack), so a
/// chain thousands of joints deep cannot overflow the call stack.
/// The joints in the order [`write_joint`] lists them: depth first from
/// the root, children in order.
fn hierarchy_order(skeleton: &Skeleton) -> Vec<usize> {
    let mut order = Vec::with_capacity(skeleton.len());
    let mut stack = vec![0];
    while let Some(j) = stack.pop() {
        order.push(j);
        stack.extend(skeleton.children(j).iter().rev());
    }
    order
}

fn write_joint(
    s: &mut String,
    skeleton: &Skeleton,
    channels: &[Vec<Channel>],
    root: usize,
    depth: usize,
) {
    enum Step {
        Open(usize, usize),
        Close(usize),
    }
    let indent = |depth: usize| "\t".repeat(depth.min(MAX_INDENT));
    let mut stack = vec![Step::Open(root, depth)];
    while let Some(step) = stack.pop() {
        let (j, depth) = match step {
            Step::Close(depth) => {
                let _ = writeln!(s, "{}}}", indent(depth));
                continue;
            }
            Step::Open(j, depth) => (j, depth),
        };
        let indent = indent(depth);
        let joint = skeleton.joint(j);
        let o = joint.offset;
        let is_end = channels[j].is_empty() && skeleton.children(j).is_empty() && j != 0;
        if is_end {
            let _ = writeln!(
                s,
                "{indent}End Site\n{indent}{{\n{indent}\tOFFSET {:.6} {:.6} {:.6}\n{indent}}}",
                o.x, o.y, o.z
            );
            continue;
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
        stack.push(Step::Close(depth));
        // Reversed, so that children are written in order.
        for &c in skeleton.children(j).iter().rev() {
            stack.push(Step::Open(c, depth + 1));
        }
    }
}

#[cfg(test)]
mod atomic_tests {
    use super::*;

    /// The human preset lists the left leg's joints before the spine's
    /// children are done: its joint order is not the file's depth-first
    /// order, and every joint must still read back where it was.
    #[test]
    fn a_skeleton_not_in_depth_first_order_round_trips() {
        let sk = crate::presets::human();
        assert_ne!(hierarchy_order(&sk), (0..sk.len()).collect::<Vec<_>>());
        let mut pose = sk.rest_pose();
        for (k, q) in pose.iter_mut().enumerate() {
            *q += 0.1 * (k as f64 + 1.0).sin();
        }
        sk.clamp_to_limits(&mut pose);
        let chans = default_channels(&sk).unwrap();
        let batch = PoseBatch::from_vec(sk.dof(), pose.clone()).unwrap();
        let text = write_bvh(&sk, &chans, 1.0 / 30.0, &batch).unwrap();
        let back = Bvh::parse(&text, "human.bvh").unwrap();
        let want = sk.forward_kinematics(&pose).unwrap();
        let got = back.forward_kinematics(0).unwrap();
        for (j, a) in want.iter().enumerate() {
            let name = &sk.joint(j).name;
            let Ok(k) = back.skeleton.find(name) else {
                // Leaves are unnamed end sites.
                assert!(sk.children(j).is_empty(), "{name} missing");
                continue;
            };
            let d = (a.translation.vector - got[k].translation.vector).norm();
            assert!(d < 1e-5, "{name}: {d} m off");
        }
    }

    #[test]
    fn a_save_replaces_the_file_whole_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("skeleton_atomic_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("clip.bvh");
        std::fs::write(&path, "the old clip").unwrap();
        write_atomically(&path, b"the new clip").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "the new clip");
        assert!(!dir.join(".clip.bvh.partial").exists());
        // A folder that does not exist: an error, nothing left behind.
        let bad = dir.join("missing").join("clip.bvh");
        assert!(write_atomically(&bad, b"x").is_err());
        assert!(!bad.exists());
    }
}

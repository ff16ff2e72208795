//! Timed input for `posecloud --script FILE`: target drags, slider changes
//! and keys replayed at given times, so tests (and bug reports) can drive
//! the app as a person would.
//!
//! One command per line, `TIME COMMAND ARGS…`; `#` starts a comment; times
//! are seconds since the first frame and must not decrease.
//!
//! ```text
//! 0.5  drag l_finger_tip -0.2 0.4 0.22 1.0   # move that target by (dx, dy, dz) m over 1 s
//! 0.5  target r_finger_tip 0.3 1.2 0.2         # put a target at (x, y, z) (skeleton frame)
//! 1.0  set particles 300                       # any Filter/Noise setting, see `Setting`
//! 1.0  set group "left arm" 0.5
//! 1.0  set constraint floor 0.005
//! 2.0  add-target l_elbow
//! 2.5  remove-target l_elbow
//! 3.0  key space                               # space | s | r
//! 4.0  screenshot out/a.png
//! 5.0  quit
//! ```

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use nalgebra::{Point3, Vector3};

use crate::scenes::ik::mirror::IkControl;
use crate::scenes::ik::settings::ConstraintGroup;
use crate::scenes::ik::settings::{ResamplingName, SolverKind};

/// One scripted action.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Move the target on `joint` by `offset` (display axes, m) linearly over
    /// `duration` seconds.
    Drag {
        joint: String,
        offset: Vector3<f64>,
        duration: f64,
    },
    /// Put the target on `joint` at `position` (skeleton frame).
    Target {
        joint: String,
        position: Point3<f64>,
    },
    /// Change a setting (the same names as the panels).
    Set {
        key: String,
        value: String,
    },
    AddTarget {
        joint: String,
    },
    RemoveTarget {
        joint: String,
    },
    /// `space` (pause), `s` (single step), `r` (reset).
    Key(char),
    Screenshot(PathBuf),
    Quit,
}

/// A timed action with its source line.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub time: f64,
    pub line: usize,
    pub action: Action,
}

/// What the window side must do (the rest is applied to the playground).
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    TogglePause,
    SingleStep,
    Reset,
    Screenshot(PathBuf),
    Quit,
}

/// A drag in progress.
#[derive(Clone, Debug)]
struct ActiveDrag {
    line: usize,
    joint: usize,
    start_time: f64,
    start: Point3<f64>,
    offset: Vector3<f64>,
    duration: f64,
}

/// Replays a script against a playground.
#[derive(Clone, Debug)]
pub struct Player {
    file: String,
    events: Vec<Event>,
    next: usize,
    drags: Vec<ActiveDrag>,
}

impl Player {
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
        // A byte-order mark (Windows editors) is not part of line 1.
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        Self::parse(text, &path.display().to_string())
    }

    pub fn parse(text: &str, file: &str) -> Result<Self> {
        let mut events = Vec::new();
        let mut last = 0.0f64;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let code = strip_comment(raw).trim();
            if code.is_empty() {
                continue;
            }
            let words = split_words(code).with_context(|| format!("{file}:{line}"))?;
            let event =
                parse_event(&words, line).with_context(|| format!("{file}:{line}: {code}"))?;
            if event.time < last {
                bail!(
                    "{file}:{line}: time {} is before the previous command's {last}",
                    event.time
                );
            }
            last = event.time;
            events.push(event);
        }
        Ok(Self {
            file: file.to_string(),
            events,
            next: 0,
            drags: Vec::new(),
        })
    }

    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Whether every command has run and every drag ended.
    pub fn finished(&self) -> bool {
        self.next == self.events.len() && self.drags.is_empty()
    }

    /// Applies everything due at `time` (seconds since the first frame) and
    /// advances the drags; returns what the window must do.
    pub fn advance(&mut self, time: f64, p: &mut impl IkControl) -> Result<Vec<Effect>> {
        let mut effects = Vec::new();
        while let Some(e) = self.events.get(self.next) {
            if e.time > time {
                break;
            }
            let e = e.clone();
            self.next += 1;
            let at = format!("{}:{}", self.file, e.line);
            self.apply(&e, time, p, &mut effects).with_context(|| at)?;
        }
        let display = p.display();
        let mut done = Vec::new();
        for (k, d) in self.drags.iter().enumerate() {
            let s = if d.duration > 0.0 {
                ((time - d.start_time) / d.duration).clamp(0.0, 1.0)
            } else {
                1.0
            };
            // The offset is in display axes; targets live in the skeleton frame.
            let offset = display.rotation.inverse() * d.offset;
            let i = p.target_on(d.joint).with_context(|| {
                format!("{}:{}: the dragged target was removed", self.file, d.line)
            })?;
            p.move_target(i, d.start + offset * s)?;
            if s >= 1.0 {
                done.push(k);
            }
        }
        for k in done.into_iter().rev() {
            self.drags.remove(k);
        }
        Ok(effects)
    }

    fn apply(
        &mut self,
        e: &Event,
        time: f64,
        p: &mut impl IkControl,
        effects: &mut Vec<Effect>,
    ) -> Result<()> {
        match &e.action {
            Action::Drag {
                joint,
                offset,
                duration,
            } => {
                let j = p.skeleton().find(joint)?;
                let i = match p.target_on(j) {
                    Some(i) => i,
                    None => p.add_target(j)?,
                };
                self.drags.push(ActiveDrag {
                    line: e.line,
                    joint: j,
                    start_time: time,
                    start: p.targets()[i].position,
                    offset: *offset,
                    duration: *duration,
                });
            }
            Action::Target { joint, position } => {
                let j = p.skeleton().find(joint)?;
                let i = match p.target_on(j) {
                    Some(i) => i,
                    None => p.add_target(j)?,
                };
                p.move_target(i, *position)?;
            }
            Action::Set { key, value } => set(p, key, value)?,
            Action::AddTarget { joint } => {
                let j = p.skeleton().find(joint)?;
                p.add_target(j)?;
            }
            Action::RemoveTarget { joint } => {
                let j = p.skeleton().find(joint)?;
                let i = p
                    .target_on(j)
                    .with_context(|| format!("no target on {joint}"))?;
                p.remove_target(i)?;
            }
            Action::Key(' ') => effects.push(Effect::TogglePause),
            Action::Key('s') => effects.push(Effect::SingleStep),
            Action::Key('r') => effects.push(Effect::Reset),
            Action::Key(c) => bail!("unknown key '{c}'"),
            Action::Screenshot(path) => effects.push(Effect::Screenshot(path.clone())),
            Action::Quit => effects.push(Effect::Quit),
        }
        Ok(())
    }
}

/// Changes one setting by name (scripts and `--set`).
pub fn set(p: &mut impl IkControl, key: &str, value: &str) -> Result<()> {
    let mut s = p.settings().clone();
    let num = |v: &str| -> Result<f64> {
        v.parse::<f64>()
            .with_context(|| format!("{key}: '{v}' is not a number"))
    };
    let int = |v: &str| -> Result<u64> {
        v.parse::<u64>()
            .with_context(|| format!("{key}: '{v}' is not a non-negative integer"))
    };
    let (key_head, key_arg) = match key.split_once(' ') {
        Some((h, a)) => (h, Some(a.trim_matches('"'))),
        None => (key, None),
    };
    match (key_head, key_arg) {
        ("particles", None) => s.filter.particles = int(value)? as usize,
        ("ess_threshold", None) => s.filter.ess_threshold = num(value)?,
        ("alpha", None) => s.filter.alpha = num(value)?,
        ("seed", None) => s.filter.seed = int(value)?,
        ("iterations", None) => s.filter.iterations_per_frame = int(value)? as usize,
        ("budget_ms", None) => s.filter.budget_ms = num(value)?,
        ("adaptive", None) => s.filter.adaptive = parse_bool(value)?,
        ("solver", None) => s.filter.solver = SolverKind::from_key(value)?,
        ("resampling", None) => {
            s.filter.resampling = ResamplingName::ALL
                .into_iter()
                .find(|r| format!("{r:?}").eq_ignore_ascii_case(&value.replace('-', "")))
                .with_context(|| format!("resampling: unknown scheme '{value}'"))?
        }
        ("sigma", None) => s.noise.sigma = num(value)?,
        ("root_translation", None) => s.noise.root_translation = num(value)?,
        ("lever_arm", None) => s.noise.lever_arm = parse_bool(value)?,
        ("group", Some(g)) => {
            if !p.region_names().iter().any(|r| r == g) {
                bail!(
                    "group: no noise group '{g}' in this scene ({})",
                    p.region_names().join(", ")
                );
            }
            s.noise.groups.insert(g.to_string(), num(value)?);
        }
        ("constraint", Some(g)) => {
            let group = ConstraintGroup::ALL
                .into_iter()
                .find(|c| c.key() == g)
                .with_context(|| format!("constraint: unknown group '{g}'"))?;
            s.set_constraint_sigma(group, num(value)?);
        }
        _ => bail!(
            "unknown setting '{key}' (particles, ess_threshold, alpha, seed, iterations, budget_ms, adaptive, \
             solver, resampling, sigma, root_translation, lever_arm, group NAME, constraint GROUP)"
        ),
    }
    p.set_settings(s)
}

fn parse_bool(v: &str) -> Result<bool> {
    match v {
        "true" | "on" | "1" => Ok(true),
        "false" | "off" | "0" => Ok(false),
        other => bail!("'{other}' is not a boolean (true/false)"),
    }
}

/// The line before its `#` comment (a `#` inside quotes is text).
fn strip_comment(line: &str) -> &str {
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '#' if !quoted => return &line[..i],
            _ => {}
        }
    }
    line
}

/// Largest coordinate (m) or offset a script may give: far beyond any
/// scene, small enough that positions stay finite through the solver.
const MAX_COORDINATE: f64 = 1000.0;
/// Latest time and longest drag (s) a script may give.
const MAX_SECONDS: f64 = 1e6;

/// Splits on whitespace, keeping "quoted words" together.
fn split_words(s: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in s.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if quoted {
        bail!("unterminated quote");
    }
    if any {
        out.push(cur);
    }
    Ok(out)
}

fn parse_event(w: &[String], line: usize) -> Result<Event> {
    let time: f64 = w[0]
        .parse()
        .with_context(|| format!("'{}' is not a time in seconds", w[0]))?;
    if !(time.is_finite() && (0.0..=MAX_SECONDS).contains(&time)) {
        bail!("time must be in [0, {MAX_SECONDS}] s, got {time}");
    }
    let cmd = w.get(1).context("a command must follow the time")?;
    let args = &w[2..];
    let want = |n: usize, usage: &str| -> Result<()> {
        if args.len() == n {
            Ok(())
        } else {
            bail!("{cmd} takes {n} argument(s): {cmd} {usage}")
        }
    };
    let num = |s: &String| -> Result<f64> {
        let v: f64 = s
            .parse()
            .with_context(|| format!("'{s}' is not a number"))?;
        if !v.is_finite() {
            bail!("'{s}' is not finite")
        }
        Ok(v)
    };
    // x, y, z (m) from the three arguments `xyz`.
    let coordinates = |xyz: &[String]| -> Result<Vector3<f64>> {
        let mut v = Vector3::zeros();
        for (c, s) in v.iter_mut().zip(xyz) {
            *c = num(s)?;
            if c.abs() > MAX_COORDINATE {
                bail!("'{s}' is out of range (|x| ≤ {MAX_COORDINATE} m)");
            }
        }
        Ok(v)
    };
    let action = match cmd.as_str() {
        "drag" => {
            want(5, "JOINT DX DY DZ SECONDS")?;
            let duration = num(&args[4])?;
            if !(0.0..=MAX_SECONDS).contains(&duration) {
                bail!("drag duration must be in [0, {MAX_SECONDS}] s, got {duration}");
            }
            Action::Drag {
                joint: args[0].clone(),
                offset: coordinates(&args[1..4])?,
                duration,
            }
        }
        "target" => {
            want(4, "JOINT X Y Z")?;
            Action::Target {
                joint: args[0].clone(),
                position: Point3::from(coordinates(&args[1..4])?),
            }
        }
        "set" => {
            if args.len() == 3 {
                Action::Set {
                    key: format!("{} {}", args[0], args[1]),
                    value: args[2].clone(),
                }
            } else {
                want(
                    2,
                    "KEY VALUE (or: set group NAME VALUE, set constraint GROUP VALUE)",
                )?;
                Action::Set {
                    key: args[0].clone(),
                    value: args[1].clone(),
                }
            }
        }
        "add-target" => {
            want(1, "JOINT")?;
            Action::AddTarget {
                joint: args[0].clone(),
            }
        }
        "remove-target" => {
            want(1, "JOINT")?;
            Action::RemoveTarget {
                joint: args[0].clone(),
            }
        }
        "key" => {
            want(1, "space|s|r")?;
            Action::Key(match args[0].as_str() {
                "space" => ' ',
                "s" | "S" => 's',
                "r" | "R" => 'r',
                other => bail!("unknown key '{other}' (space, s, r)"),
            })
        }
        "screenshot" => {
            want(1, "FILE.png")?;
            let path = PathBuf::from(&args[0]);
            let dir = path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(std::path::Path::new("."));
            if !dir.is_dir() {
                bail!(
                    "screenshot {}: the folder {} does not exist",
                    path.display(),
                    dir.display()
                );
            }
            Action::Screenshot(path)
        }
        "quit" => {
            want(0, "")?;
            Action::Quit
        }
        other => bail!(
            "unknown command '{other}' (drag, target, set, add-target, remove-target, key, screenshot, quit)"
        ),
    };
    Ok(Event { time, line, action })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenes::ik::settings::Settings;
    use crate::scenes::ik::setup::{Scene, SceneSource};
    use crate::scenes::ik::solver::Playground;

    #[test]
    fn parses_every_command() {
        let p = Player::parse(
            "# a comment\n0.5 drag l_finger_tip -0.2 0.4 0.22 1.0\n\
             0.5 target r_finger_tip 0.3 1.2 0.2\n1 set particles 300\n\
             1 set group \"left arm\" 0.5 # trailing\n2 add-target l_elbow\n\
             2.5 remove-target l_elbow\n3 key space\n4 screenshot a.png\n5 quit\n",
            "t.txt",
        )
        .unwrap();
        assert_eq!(p.events().len(), 9);
        assert_eq!(
            p.events()[3].action,
            Action::Set {
                key: "group left arm".into(),
                value: "0.5".into()
            }
        );
        assert_eq!(p.events()[8].line, 10);
    }

    #[test]
    fn errors_name_file_and_line() {
        for (text, needle) in [
            ("1 drag hand 0 0\n", "t.txt:1"),
            ("1 fly\n", "unknown command 'fly'"),
            ("x quit\n", "not a time"),
            ("2 quit\n1 quit\n", "t.txt:2"),
            ("1 key q\n", "unknown key"),
            ("1 drag a 0 nan 0 1\n", "not finite"),
            ("1 set group \"left arm 0.5\n", "unterminated quote"),
        ] {
            let e = format!("{:#}", Player::parse(text, "t.txt").unwrap_err());
            assert!(e.contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn replays_drags_and_settings_on_a_playground() {
        let scene = Scene::build(&SceneSource::Arm).unwrap();
        let mut p = Playground::new(scene, Settings::default()).unwrap();
        let tip = p.skeleton().find("tip").unwrap();
        let start = p.targets()[0].position;
        let mut player = Player::parse(
            "0 drag tip 0 0.5 0 1\n0.5 set particles 77\n0.5 set constraint position 0.02\n\
             0.6 key space\n0.7 set bogus 1\n",
            "t.txt",
        )
        .unwrap();
        assert!(player.advance(0.0, &mut p).unwrap().is_empty());
        let fx = player.advance(0.6, &mut p).unwrap();
        assert_eq!(fx, vec![Effect::TogglePause]);
        assert_eq!(p.settings().filter.particles, 77);
        let i = p.target_on(tip).unwrap();
        assert!((p.targets()[i].position.y - (start.y + 0.3)).abs() < 1e-12);
        let e = format!("{:#}", player.advance(0.7, &mut p).unwrap_err());
        assert!(
            e.contains("t.txt:5") && e.contains("unknown setting 'bogus'"),
            "{e}"
        );
        player.advance(2.0, &mut p).unwrap();
        assert!((p.targets()[i].position.y - (start.y + 0.5)).abs() < 1e-12);
        assert!(player.finished());
    }

    #[test]
    fn hostile_script_values_are_errors_naming_the_line() {
        for (text, needle) in [
            ("0 target l_finger_tip 1e300 1e300 1e300\n", "t.txt:1"),
            ("0 drag tip 0 1e308 0 1\n", "out of range"),
            ("1e300 quit\n", "time must be in"),
            ("0 drag tip 0 0.1 0 1e300\n", "drag duration"),
            ("0 screenshot /nonexistent/dir/a.png\n", "does not exist"),
        ] {
            let e = format!("{:#}", Player::parse(text, "t.txt").unwrap_err());
            assert!(e.contains(needle) && e.contains("t.txt:1"), "{text:?}: {e}");
        }
        // A '#' inside quotes is part of the word, not a comment.
        let p = Player::parse("0 set group \"a#b\" 1 # comment\n", "t.txt").unwrap();
        assert_eq!(
            p.events()[0].action,
            Action::Set {
                key: "group a#b".into(),
                value: "1".into()
            }
        );
    }

    #[test]
    fn a_byte_order_mark_before_a_script_is_accepted() {
        let dir = crate::testing::scratch_dir("bom");
        let path = dir.join("s.txt");
        std::fs::write(&path, "\u{feff}0.5 quit\n").unwrap();
        let p = Player::load(&path).unwrap();
        assert_eq!(p.events().len(), 1);
        let settings = dir.join("s.toml");
        std::fs::write(&settings, "\u{feff}[filter]\nparticles = 50\n").unwrap();
        assert_eq!(Settings::load(&settings).unwrap().filter.particles, 50);
    }

    #[test]
    fn settings_out_of_range_or_naming_unknown_groups_are_errors() {
        let scene = Scene::build(&SceneSource::Arm).unwrap();
        let mut p = Playground::new(scene, Settings::default()).unwrap();
        let mut s = p.settings().clone();
        s.noise.groups.insert("no such group".into(), 0.5);
        let e = format!("{:#}", p.set_settings(s).unwrap_err());
        assert!(e.contains("no such group"), "{e}");
        let mut s = p.settings().clone();
        s.noise.joints.insert("nobody".into(), [0.1; 3]);
        assert!(p.set_settings(s).is_err());
        let mut s = p.settings().clone();
        s.constraints.insert("position".into(), 1e-300);
        let e = format!("{:#}", p.set_settings(s).unwrap_err());
        assert!(e.contains("constraints.position"), "{e}");
        let mut s = p.settings().clone();
        s.filter.particles = 10_000;
        s.filter.iterations_per_frame = 1000;
        let e = format!("{:#}", p.set_settings(s).unwrap_err());
        assert!(e.contains("particle-iterations"), "{e}");
        let mut s = p.settings().clone();
        s.noise.sigma = 1e9;
        assert!(p.set_settings(s).is_err());
    }
}

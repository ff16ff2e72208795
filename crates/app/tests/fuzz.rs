//! Fuzz harness of the app's inputs (issue "Reliability II"), in the
//! pattern of `crates/skeleton/tests/fuzz.rs` and `crates/vision/tests/
//! fuzz.rs` (shared parts in `fuzzkit`):
//!
//! * **settings** — the TOML that `Settings::save` writes (the defaults,
//!   and a tuned file with groups, joints and constraints), mutated
//!   (`fuzzkit`'s text mutations, hostile TOML values and table headers),
//!   written to a scratch file and read with `Settings::load` inside
//!   `catch_unwind` and `fuzzkit::measured`: no panic; peak heap ≤
//!   `SETTINGS_MEMORY_PER_INPUT_BYTE × input bytes + 1 MiB`; either `Ok`
//!   with settings that `validate()`, save and load back equal, and open a
//!   playground (or refuse it with an error), or an error whose `{:#}`
//!   names the file.
//! * **scripts** — `crates/app/tests/scripts/*.txt` and a script with every
//!   command, mutated (text mutations, hostile words and whole lines), read
//!   with `Player::load` (and the lossy text with `Player::parse`): no
//!   panic; peak heap ≤ `SCRIPT_MEMORY_PER_INPUT_BYTE × input bytes +
//!   1 MiB`; either `Ok` with events in time order, finite times and lines
//!   in range — then replayed on a playground of the human scene, where
//!   each error names `FILE:LINE` — or an error naming the file and a line
//!   in range (the file alone for unreadable, non-UTF-8 bytes).
//! * **flags of `posecloud track`, `segment` and `render`** — the binary is
//!   run as a child process (so this test does not depend on where the
//!   command-line code lives). Each command's flags come from its `--help`
//!   (so renamed flags keep working); each case gives 1–3 of them hostile
//!   values (huge, negative, NaN, empty numbers, 10000000000 particles,
//!   missing, empty, directory, wrong-type and unicode paths, `webcam:99`,
//!   odd enum words, bad ranges and colours), in several forms (`--f v`,
//!   `--f=v`, twice, removed), on a small valid input: a render (160 × 120,
//!   the empty scene and 4 frames) of 13 frames of the CMU walk, made by
//!   the base `posecloud render` command once and copied, with the other
//!   files, into a fresh folder per case, which is the child's working
//!   folder (every path the fuzzer gives is inside it, so `--out . --force`
//!   removes nothing else). Checks: exit status 0,
//!   or 1/2 with an error on stderr (a last block starting `error` of at
//!   most 5 non-empty lines, not counting clap's `Usage:` and `For more
//!   information` lines); never "panicked at", "RUST_BACKTRACE", a
//!   signal or another status; the child's peak RSS ≤ `CHILD_RSS_LIMIT`
//!   (2 GiB; `wait4`'s `ru_maxrss`, polled on the way so the child is
//!   killed before it can exhaust the machine); and a wall-clock timeout
//!   of `CHILD_TIMEOUT` (60 s) per case. A failing case names the exact
//!   command and keeps its folder (under the target's tmp dir, until the
//!   next run).
//!
//! * **interruptions of `track`, `keypoints`, `render` and `segment`**
//!   (issue 32) — each case runs one of them as a child on the case
//!   folder's frames, its outputs existing beforehand or not, and sends
//!   SIGINT to its process group (as Ctrl-C does) at a seeded random time
//!   in 0–1.5 s, and in some cases a second one 0–0.4 s later. Checks: no
//!   panic, no timeout; status 0, 1, 130 (the second Ctrl-C) or death by
//!   SIGINT (before the handler was installed); every output absent — or,
//!   when it existed, untouched — or complete and readable (a CSV of
//!   whole rows, a BVH that loads with its frames, PNGs that decode); no
//!   temporary file left.
//!
//! Every fuzzed format prints one summary line (cases, accepted, worst
//! peak). `FUZZ_CASES=N` sets the cases per base input (settings and
//! scripts, default 500) and per command (flags, default 100); `FUZZ_SEED=S`
//! changes the fixed seed (default 31), e.g.
//! `FUZZ_CASES=2000 cargo test --release -p posecloud --test fuzz`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use fuzzkit::{
    HostileMutation, TextMutation, line_count, lines_of, measured, panic_message, replace_one_of,
    runs,
};
use posecloud::scenes::ik::script::Player;
use posecloud::scenes::ik::settings::{ConstraintGroup, ResamplingName, Settings, SolverKind};
use posecloud::scenes::ik::setup::{Scene, SceneSource};
use posecloud::scenes::ik::solver::Playground;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{TestCaseError, TestRunner};

#[global_allocator]
static ALLOCATOR: fuzzkit::Counting = fuzzkit::Counting;

const BIN: &str = env!("CARGO_BIN_EXE_posecloud");

/// Heap bytes `Settings::load` may use per input byte (the TOML document
/// and the settings), plus 1 MiB.
const SETTINGS_MEMORY_PER_INPUT_BYTE: usize = 64;

/// Heap bytes `Player::load` may use per input byte (an event of ~80 bytes
/// for a line of at least 7), plus 1 MiB.
const SCRIPT_MEMORY_PER_INPUT_BYTE: usize = 64;

/// Peak resident set a command-line case may reach.
const CHILD_RSS_LIMIT: u64 = 2 << 30;

/// Wall-clock time a command-line case may take.
const CHILD_TIMEOUT: Duration = Duration::from_secs(60);

/// Non-empty lines the error block of a refused command may have.
const MAX_ERROR_LINES: usize = 5;

/// Cases per settings or script base input (`FUZZ_CASES` overrides).
const TEXT_CASES: u32 = 500;

/// Cases per command of the flag fuzz (`FUZZ_CASES` overrides): about
/// 30 ms each, a few seconds in all on two cores.
const FLAG_CASES: u32 = 100;

/// The fixed seed (`FUZZ_SEED` overrides).
fn seed() -> u64 {
    fuzzkit::seed(31)
}

/// This run's scratch root, `fuzz-PID` under the target's tmp dir; the
/// roots of earlier runs (their process gone) are removed first.
fn scratch_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        if Path::new("/proc/self").exists()
            && let Ok(entries) = std::fs::read_dir(tmp)
        {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(pid) = name.strip_prefix("fuzz-")
                    && pid.parse::<u32>().is_ok()
                    && !Path::new("/proc").join(pid).exists()
                {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        tmp.join(format!("fuzz-{}", std::process::id()))
    })
}

/// A scratch folder of this run.
fn scratch(name: &str) -> PathBuf {
    let d = scratch_root().join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A scratch file for this thread's inputs.
fn scratch_file(name: &str) -> PathBuf {
    let id = format!("{:?}", std::thread::current().id())
        .chars()
        .filter(char::is_ascii_digit)
        .collect::<String>();
    scratch("files").join(format!("{id}-{name}"))
}

/// The human scene (built once).
fn human() -> &'static Scene {
    static SCENE: OnceLock<Scene> = OnceLock::new();
    SCENE.get_or_init(|| Scene::build(&SceneSource::Human).unwrap())
}

/// [`fuzzkit::fuzz_mutations`] with this file's seed.
fn fuzz<M: std::fmt::Debug>(
    name: &str,
    base: &[u8],
    default_cases: u32,
    mutation: impl Strategy<Value = M>,
    apply: impl Fn(Vec<u8>, &M) -> Vec<u8>,
    check: impl Fn(&[u8]) -> Result<bool, TestCaseError>,
) {
    fuzzkit::fuzz_mutations(name, base, (default_cases, seed()), mutation, apply, check);
}

// ---- settings --------------------------------------------------------------------

/// Right-hand sides of `key = value` lines.
const HOSTILE_TOML_VALUES: &[&str] = &[
    "nan",
    "-nan",
    "inf",
    "-inf",
    "1e400",
    "-1e400",
    "0",
    "-0.0",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "-9223372036854775808",
    "10000000000",
    "10001",
    "1e-320",
    "\"\"",
    "\"smc-ik\"",
    "\"SMC-IK\"",
    "\"parent-children\"",
    "\"truncated\"",
    "\"bogus\"",
    "true",
    "[]",
    "[1.0, 2.0]",
    "[1.0, 2.0, 3.0, 4.0]",
    "[nan, inf, -inf]",
    "{}",
    "{ a = 1 }",
    "1979-05-27T07:32:00Z",
    "'''x'''",
    "",
];

/// Replacements of a `[table]` line.
const HOSTILE_TABLES: &[&str] = &[
    "[filter]",
    "[noise]",
    "[noise.groups]",
    "[noise.joints]",
    "[constraints]",
    "[[filter]]",
    "[filter.x]",
    "[noise.groups.\"left arm\"]",
    "[bogus]",
    "[]",
    "[filter",
    "",
];

#[derive(Clone, Debug)]
enum SettingsMutation {
    Text(TextMutation),
    /// Replace the value of a `key = value` line.
    Value(Index, usize),
    /// Replace a `[table]` line.
    Table(Index, usize),
    /// Add a `key = value` line under a random table.
    AddLine(Index, usize, usize),
}

/// Keys of the settings file (and a few that are not).
const SETTINGS_KEYS: &[&str] = &[
    "solver",
    "particles",
    "resampling",
    "ess_threshold",
    "alpha",
    "seed",
    "budget_ms",
    "iterations_per_frame",
    "sampler",
    "adaptive",
    "sigma",
    "lever_arm",
    "root_translation",
    "\"left arm\"",
    "l_elbow",
    "position",
    "floor",
    "gravity",
    "\"\"",
];

fn settings_mutation() -> impl Strategy<Value = SettingsMutation> {
    prop_oneof![
        12 => fuzzkit::text_mutation().prop_map(SettingsMutation::Text),
        6 => (any::<Index>(), 0..HOSTILE_TOML_VALUES.len()).prop_map(|(i, k)| SettingsMutation::Value(i, k)),
        1 => (any::<Index>(), 0..HOSTILE_TABLES.len()).prop_map(|(i, k)| SettingsMutation::Table(i, k)),
        2 => (any::<Index>(), 0..SETTINGS_KEYS.len(), 0..HOSTILE_TOML_VALUES.len())
            .prop_map(|(i, k, v)| SettingsMutation::AddLine(i, k, v)),
    ]
}

fn apply_settings_mutation(b: Vec<u8>, m: &SettingsMutation) -> Vec<u8> {
    let mut lines = lines_of(&b);
    match m {
        SettingsMutation::Text(m) => return fuzzkit::apply(b, m),
        SettingsMutation::Value(i, k) => {
            let with_value: Vec<usize> = (0..lines.len())
                .filter(|&l| lines[l].contains(&b'='))
                .collect();
            if with_value.is_empty() {
                return b;
            }
            let l = with_value[i.index(with_value.len())];
            let eq = lines[l].iter().position(|&c| c == b'=').unwrap();
            lines[l].truncate(eq + 1);
            lines[l].extend_from_slice(format!(" {}", HOSTILE_TOML_VALUES[*k]).as_bytes());
        }
        SettingsMutation::Table(i, k) => {
            let tables: Vec<usize> = (0..lines.len())
                .filter(|&l| lines[l].starts_with(b"["))
                .collect();
            if tables.is_empty() {
                return b;
            }
            let l = tables[i.index(tables.len())];
            lines[l] = HOSTILE_TABLES[*k].as_bytes().to_vec();
        }
        SettingsMutation::AddLine(i, k, v) => {
            let at = i.index(lines.len() + 1);
            let line = format!("{} = {}", SETTINGS_KEYS[*k], HOSTILE_TOML_VALUES[*v]);
            lines.insert(at, line.into_bytes());
        }
    }
    lines.join(&b'\n')
}

/// What `Settings::save` writes for the defaults and for a tuned setup.
fn settings_bases() -> Vec<(&'static str, Vec<u8>)> {
    let mut tuned = Settings::default();
    tuned.filter.particles = 321;
    tuned.filter.solver = SolverKind::SmcIk;
    tuned.filter.resampling = ResamplingName::ParentChildren;
    tuned.noise.groups.insert("left arm".into(), 0.5);
    tuned
        .noise
        .joints
        .insert("l_elbow".into(), [0.1, 0.0, 0.02]);
    tuned.set_constraint_sigma(ConstraintGroup::Floor, 0.004);
    tuned.set_constraint_sigma(ConstraintGroup::Position, 0.02);
    [
        ("default settings", Settings::default()),
        ("tuned settings", tuned),
    ]
    .into_iter()
    .map(|(name, s)| {
        let path = scratch_file(&format!("{}.toml", name.replace(' ', "-")));
        s.save(&path).unwrap();
        (name, std::fs::read(&path).unwrap())
    })
    .collect()
}

fn check_settings(bytes: &[u8], path: &Path) -> Result<bool, TestCaseError> {
    std::fs::write(path, bytes).unwrap();
    let (result, peak) = measured(|| catch_unwind(|| Settings::load(path)));
    let result = result.map_err(|p| TestCaseError::fail(format!("panic: {}", panic_message(p))))?;
    fuzzkit::check_heap(SETTINGS_MEMORY_PER_INPUT_BYTE, bytes.len(), peak)?;
    match result {
        Ok(s) => {
            s.validate()
                .map_err(|e| TestCaseError::fail(format!("loaded but invalid: {e:#}")))?;
            // What the panel would save reads back the same.
            let again = scratch_file("settings-again.toml");
            s.save(&again)
                .map_err(|e| TestCaseError::fail(format!("cannot save: {e:#}")))?;
            let back = Settings::load(&again)
                .map_err(|e| TestCaseError::fail(format!("saved file unreadable: {e:#}")))?;
            prop_assert_eq!(&back, &s);
            // A playground opens with them, or refuses them (a group or
            // joint the scene lacks) with an error.
            let opened = catch_unwind(AssertUnwindSafe(|| {
                Playground::new(human().clone(), s.clone()).map(drop)
            }))
            .map_err(|p| TestCaseError::fail(format!("panic opening: {}", panic_message(p))))?;
            if let Err(e) = opened {
                let m = format!("{e:#}");
                prop_assert!(!m.is_empty(), "an empty error");
            }
            Ok(true)
        }
        Err(e) => {
            let m = format!("{e:#}");
            prop_assert!(
                m.contains(&path.display().to_string()),
                "error does not name the file: {m}"
            );
            Ok(false)
        }
    }
}

#[test]
fn fuzz_settings() {
    for (name, base) in settings_bases() {
        let path = scratch_file("settings.toml");
        fuzz(
            name,
            &base,
            TEXT_CASES,
            settings_mutation(),
            apply_settings_mutation,
            |b| check_settings(b, &path),
        );
    }
}

// ---- scripts ----------------------------------------------------------------------

/// A script with every command (the module docs' example on the human
/// scene).
const EVERY_COMMAND: &str = "\
# every command once
0.5  drag l_finger_tip -0.2 0.4 0.22 1.0   # move that target by (dx, dy, dz) m over 1 s
0.5  target r_finger_tip 0.3 1.2 0.2
1.0  set particles 300
1.0  set group \"left arm\" 0.5
1.0  set constraint floor 0.005
1.0  set solver dls
1.0  set resampling parent-children
1.0  set adaptive off
2.0  add-target l_elbow
2.5  remove-target l_elbow
3.0  key space
3.0  key s
3.0  key r
5.0  quit
";

/// Words a script token may become.
const HOSTILE_WORDS: &[&str] = &[
    "drag",
    "target",
    "set",
    "add-target",
    "remove-target",
    "key",
    "screenshot",
    "quit",
    "fly",
    "l_finger_tip",
    "l_elbow",
    "nobody",
    "\"left arm\"",
    "\"",
    "\"\"",
    "\"#\"",
    "#",
    "particles",
    "iterations",
    "budget_ms",
    "group",
    "constraint",
    "solver",
    "resampling",
    "seed",
    "space",
    "/nonexistent/dir/a.png",
    "a.png",
    "1e6",
    "1000.0001",
    "-1000",
];

/// Whole lines inserted into a script.
const HOSTILE_LINES: &[&str] = &[
    "0 set particles 18446744073709551615",
    "0 set particles 10000",
    "0 set particles 0",
    "0 set iterations 1000",
    "0 set budget_ms nan",
    "0 set seed -1",
    "0 set alpha 1e-320",
    "0 set sigma 3.15",
    "0 set group \"left arm\" nan",
    "0 set group \"no such group\" 1",
    "0 set constraint gravity 1",
    "0 set constraint floor 1e-7",
    "0 set solver transpose",
    "0 set resampling PARENT-CHILDREN",
    "0 set lever_arm maybe",
    "0 drag l_finger_tip 1000 1000 1000 1000000",
    "0 drag l_finger_tip 0 0 0 0",
    "0 target Hips 0 0 0",
    "0 remove-target l_finger_tip",
    "0 add-target l_finger_tip",
    "0 key",
    "0",
    "1e6 quit",
    "1000001 quit",
    "-0 quit",
    "\"0\" quit",
    "0 screenshot \"a b/c.png\"",
];

/// Text mutations, a word replaced by a hostile one, a hostile line
/// inserted.
fn script_mutation() -> impl Strategy<Value = HostileMutation> {
    fuzzkit::hostile_mutation([12, 5, 4], HOSTILE_WORDS.len(), HOSTILE_LINES.len())
}

fn apply_script_mutation(mut b: Vec<u8>, m: &HostileMutation) -> Vec<u8> {
    match m {
        HostileMutation::Text(m) => b = fuzzkit::apply(b, m),
        HostileMutation::Token(i, k) => {
            let words = runs(&b, |c| !c.is_ascii_whitespace());
            replace_one_of(&mut b, &words, *i, HOSTILE_WORDS[*k].as_bytes());
        }
        HostileMutation::Line(i, k) => {
            let mut lines = lines_of(&b);
            lines.insert(
                i.index(lines.len() + 1),
                HOSTILE_LINES[*k].as_bytes().to_vec(),
            );
            b = lines.join(&b'\n');
        }
    }
    b
}

/// The line numbers `FILE:N` names in `message`.
fn lines_named(message: &str, file: &str) -> Vec<usize> {
    message
        .match_indices(&format!("{file}:"))
        .filter_map(|(at, s)| {
            let digits: String = message[at + s.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        })
        .collect()
}

/// An error of a script: names `file` and a line in `1..=lines`.
fn check_script_error(message: &str, file: &str, lines: usize) -> Result<(), TestCaseError> {
    let named = lines_named(message, file);
    prop_assert!(
        !named.is_empty() && named.iter().all(|l| (1..=lines).contains(l)),
        "error does not name {file}:LINE (1 … {lines}): {message}"
    );
    Ok(())
}

/// Replays `player` on a playground of the human scene: at each event's
/// time, then after the longest drag. No panic; each error names a line.
fn replay(mut player: Player, file: &str, lines: usize) -> Result<(), TestCaseError> {
    let mut p = Playground::new(human().clone(), Settings::default()).unwrap();
    let mut times: Vec<f64> = player.events().iter().map(|e| e.time).collect();
    let last = times.last().copied().unwrap_or(0.0);
    times.push(last + 1e6 + 1.0);
    for t in times {
        let r = catch_unwind(AssertUnwindSafe(|| player.advance(t, &mut p)))
            .map_err(|p| TestCaseError::fail(format!("panic replaying: {}", panic_message(p))))?;
        if let Err(e) = r {
            check_script_error(&format!("{e:#}"), file, lines)?;
            break;
        }
    }
    Ok(())
}

fn check_script(bytes: &[u8], path: &Path) -> Result<bool, TestCaseError> {
    std::fs::write(path, bytes).unwrap();
    let file = path.display().to_string();
    let lines = line_count(bytes);
    let (result, peak) = measured(|| catch_unwind(|| Player::load(path)));
    let result = result.map_err(|p| TestCaseError::fail(format!("panic: {}", panic_message(p))))?;
    fuzzkit::check_heap(SCRIPT_MEMORY_PER_INPUT_BYTE, bytes.len(), peak)?;
    // The same text, decoded lossily, through `parse`.
    let lossy = String::from_utf8_lossy(bytes);
    let parsed = catch_unwind(|| Player::parse(&lossy, "lossy.txt"))
        .map_err(|p| TestCaseError::fail(format!("panic in parse: {}", panic_message(p))))?;
    if let Err(e) = &parsed {
        check_script_error(&format!("{e:#}"), "lossy.txt", lines)?;
    }
    match result {
        Ok(player) => {
            let mut last = (0.0, 0);
            for e in player.events() {
                prop_assert!(e.time.is_finite() && (0.0..=1e6).contains(&e.time));
                prop_assert!(e.time >= last.0 && e.line > last.1, "{e:?} after {last:?}");
                prop_assert!(e.line <= lines, "{e:?}: line beyond {lines}");
                last = (e.time, e.line);
            }
            replay(player, &file, lines)?;
            Ok(true)
        }
        Err(e) => {
            let m = format!("{e:#}");
            if std::str::from_utf8(bytes).is_err() {
                prop_assert!(m.contains(&file), "error does not name the file: {m}");
            } else {
                check_script_error(&m, &file, lines)?;
            }
            Ok(false)
        }
    }
}

#[test]
fn fuzz_scripts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts");
    let mut bases: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .map(|p| {
            (
                format!("script {}", p.file_name().unwrap().to_string_lossy()),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    bases.sort();
    assert!(!bases.is_empty(), "no scripts in {}", dir.display());
    bases.push(("script with every command".into(), EVERY_COMMAND.into()));
    for (name, base) in bases {
        let path = scratch_file("script.txt");
        fuzz(
            &name,
            &base,
            TEXT_CASES,
            script_mutation(),
            apply_script_mutation,
            |b| check_script(b, &path),
        );
    }
}

// ---- command-line flags ---------------------------------------------------------------

/// One argument of a command, from its `--help`.
#[derive(Clone, Debug)]
struct HelpArg {
    /// `--name`, or `<NAME>` for a positional argument.
    name: String,
    takes_value: bool,
    default: Option<String>,
    possible: Vec<String>,
    /// The help text, lower case.
    help: String,
}

impl HelpArg {
    fn positional(&self) -> bool {
        self.name.starts_with('<')
    }
}

/// The arguments `posecloud COMMAND --help` lists (not `--help` itself).
fn help_args(command: &str) -> Vec<HelpArg> {
    let o = Command::new(BIN)
        .args([command, "--help"])
        .output()
        .expect("the posecloud binary runs");
    assert!(o.status.success(), "{command} --help failed");
    let text = String::from_utf8_lossy(&o.stdout);
    let mut args: Vec<HelpArg> = Vec::new();
    let mut in_possible = false;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim();
        if indent > 0 && indent <= 6 && (t.starts_with('-') || t.starts_with('<')) {
            let mut words = t.split_whitespace();
            let mut name = String::new();
            let mut takes_value = false;
            let mut rest = String::new();
            for w in words.by_ref() {
                let w = w.trim_end_matches(',');
                if w.starts_with("--") || (name.is_empty() && w.starts_with('<')) {
                    name = w.split('=').next().unwrap().to_string();
                    if w.starts_with('<') {
                        takes_value = true;
                        break;
                    }
                } else if w.starts_with('<') && !name.is_empty() {
                    takes_value = true;
                    break;
                } else if w.starts_with('-') {
                    continue;
                } else {
                    rest.push_str(w);
                    rest.push(' ');
                    break;
                }
            }
            rest.extend(words.flat_map(|w| [w, " "]));
            args.push(HelpArg {
                name,
                takes_value,
                default: None,
                possible: Vec::new(),
                help: String::new(),
            });
            in_possible = false;
            add_help(args.last_mut().unwrap(), &rest, &mut in_possible);
        } else if indent == 0 {
            in_possible = false;
        } else if let Some(a) = args.last_mut() {
            add_help(a, t, &mut in_possible);
        }
    }
    args.retain(|a| !a.name.is_empty() && a.name != "--help" && a.name != "--version");
    args
}

/// Adds a line of help to `a`: its text, `[default: …]`, `[possible
/// values: …]` or a `- value: …` line of a "Possible values:" list.
fn add_help(a: &mut HelpArg, line: &str, in_possible: &mut bool) {
    if line.starts_with("Possible values:") {
        *in_possible = true;
        return;
    }
    if *in_possible && let Some(v) = line.strip_prefix("- ") {
        let v = v.split(':').next().unwrap_or("").trim();
        a.possible.push(v.to_string());
        return;
    }
    if let Some(at) = line.find("[default: ") {
        let v = &line[at + 10..];
        a.default = v.split(']').next().map(str::to_string);
    }
    if let Some(at) = line.find("[possible values: ") {
        let v = line[at + 18..].split(']').next().unwrap_or("");
        a.possible
            .extend(v.split(',').map(|s| s.trim().to_string()));
    }
    a.help.push_str(&line.to_lowercase());
    a.help.push(' ');
}

/// What a value of an argument is, as far as the help and the base
/// command tell; the hostile values are drawn from its pool (or any pool).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Switch,
    Number,
    Path,
    Source,
    Word,
    Range,
    Colour,
    PoseFrame,
    Unknown,
}

fn kind_of(a: &HelpArg, base_value: Option<&str>) -> Kind {
    if !a.takes_value {
        return Kind::Switch;
    }
    if !a.possible.is_empty() {
        return Kind::Word;
    }
    let h = &a.help;
    if let Some(v) = base_value.or(a.default.as_deref()) {
        if v.parse::<f64>().is_ok() {
            return Kind::Number;
        }
        if v.contains("..") {
            return Kind::Range;
        }
    }
    if h.contains("#rrggbb") || h.contains("colour") {
        Kind::Colour
    } else if h.contains("a..b") {
        Kind::Range
    } else if h.contains("learn_frame:clip_frame") {
        Kind::PoseFrame
    } else if h.contains("webcam") {
        Kind::Source
    } else if a.default.is_some() {
        Kind::Word
    } else if ["file", "folder", "image", "csv", "bvh", "toml"]
        .iter()
        .any(|w| h.contains(w))
    {
        Kind::Path
    } else {
        Kind::Unknown
    }
}

/// Paths, relative to the case folder (every one inside it, or missing).
fn hostile_paths() -> Vec<String> {
    let mut v: Vec<String> = [
        "missing.toml",
        "missing/deeper/x.png",
        "adir",
        "emptydir",
        "junk.bin",
        "text.txt",
        "empty.txt",
        "clip.y4m",
        "frame.png",
        "walk.bvh",
        "camera.toml",
        "strokes.txt",
        "frames",
        "frames/frame_0001.png",
        "file.txt/sub",
        "",
        ".",
        "ü 😀/x y.png",
        "-",
    ]
    .map(String::from)
    .to_vec();
    // Longer than a file name may be.
    v.push("a".repeat(300));
    v
}

const HOSTILE_SOURCES: &[&str] = &[
    "webcam:99",
    "webcam:4294967295",
    "webcam:18446744073709551616",
    "webcam:99@1x1",
    "webcam:99@99999x99999",
    "webcam:99@0x0",
    "webcam:-1",
    "webcam:x",
    "webcam:",
    "frames/*.png",
    "nomatch/*.png",
    "frames/[",
    "emptydir",
    "clip.y4m",
    "frame.png",
    "missing.mp4",
    "junk.bin",
    "text.txt",
    "walk.bvh",
    "adir",
    "frames",
    "",
];

const HOSTILE_WORDS_CLI: &[&str] = &[
    "",
    "auto",
    "cpu",
    "gpu",
    "both",
    "regions",
    "keypoints",
    "pfs",
    "hspc",
    "hpor",
    "hkfs",
    "pfrth",
    "map",
    "mean",
    "short",
    "long",
    "t-pose",
    "arms-down",
    "joint",
    "partitioned",
    "upper",
    "all",
    "AUTO",
    "Ω",
    "Hips",
    "Hips,Nope",
    "Hips,Hips",
    ",,,",
    "nan",
    "-1",
];

const HOSTILE_RANGES: &[&str] = &[
    "0..0",
    "5..3",
    "0..1",
    "0..13",
    "12..13",
    "0..18446744073709551615",
    "18446744073709551614..18446744073709551615",
    "99999..100000",
    "..",
    "1..",
    "-1..2",
    "0..5..9",
    "a..b",
    "",
];

const HOSTILE_COLOURS: &[&str] = &[
    "#zzzzzz",
    "256,0,0",
    "#fff",
    "1,2",
    "-1,0,0",
    "#ffffff",
    "0,0,0",
    "#",
    "",
    "255,255,255,255",
    "#ff00ff00",
    "#ÿÿÿ",
];

const HOSTILE_POSE_FRAMES: &[&str] = &[
    "1:0",
    "0:0",
    "99:0",
    "1:12",
    "1:13",
    "18446744073709551615:18446744073709551615",
    ":",
    "1:",
    "-1:2",
];

fn hostile_numbers() -> Vec<String> {
    fuzzkit::HOSTILE_NUMBERS
        .iter()
        .chain(&["1", "2", "3", "-5", "1e-300", "0.5"])
        .map(|s| s.to_string())
        .collect()
}

fn pool(kind: Kind) -> Vec<String> {
    let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match kind {
        Kind::Number => hostile_numbers(),
        Kind::Path => hostile_paths(),
        Kind::Source => s(HOSTILE_SOURCES),
        Kind::Word => s(HOSTILE_WORDS_CLI),
        Kind::Range => s(HOSTILE_RANGES),
        Kind::Colour => s(HOSTILE_COLOURS),
        Kind::PoseFrame => s(HOSTILE_POSE_FRAMES),
        Kind::Switch | Kind::Unknown => {
            let mut all = hostile_numbers();
            all.extend(hostile_paths());
            for v in [
                HOSTILE_SOURCES,
                HOSTILE_WORDS_CLI,
                HOSTILE_RANGES,
                HOSTILE_COLOURS,
                HOSTILE_POSE_FRAMES,
            ] {
                all.extend(s(v));
            }
            all
        }
    }
}

/// How a fuzzed argument is given.
#[derive(Clone, Copy, Debug)]
enum Form {
    /// `--flag VALUE` (replacing the base's value).
    Separate,
    /// `--flag=VALUE`.
    Equals,
    /// The base's value and then this one (or a switch twice).
    Twice,
    /// Left out (a required one too).
    Removed,
}

/// One fuzzed argument: which (an index into the help's list), its value
/// (an index into its kind's pool, or into every pool) and its form.
#[derive(Clone, Debug)]
struct FlagCase {
    arg: Index,
    any_pool: bool,
    value: Index,
    form: Form,
}

fn flag_case() -> impl Strategy<Value = FlagCase> {
    (
        any::<Index>(),
        prop_oneof![2 => Just(false), 1 => Just(true)],
        any::<Index>(),
        prop_oneof![
            6 => Just(Form::Separate),
            3 => Just(Form::Equals),
            1 => Just(Form::Twice),
            1 => Just(Form::Removed),
        ],
    )
        .prop_map(|(arg, any_pool, value, form)| FlagCase {
            arg,
            any_pool,
            value,
            form,
        })
}

/// The inputs every case folder gets a copy of: the 5-frame render, its
/// camera, the 13-frame clip, a Y4M clip, a strokes file and odd files.
fn inputs() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = scratch("inputs");
        // 13 frames (500 … 512) of the CMU walk.
        let walk = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/motions/cmu_131_01_walk.bvh"),
        )
        .unwrap();
        let mut bvh = String::new();
        let mut lines = walk.lines();
        for l in lines.by_ref() {
            if l.starts_with("Frames:") {
                bvh.push_str("Frames: 13\n");
                continue;
            }
            bvh.push_str(l);
            bvh.push('\n');
            if l.starts_with("Frame Time") {
                break;
            }
        }
        for l in lines.skip(500).take(13) {
            bvh.push_str(l);
            bvh.push('\n');
        }
        std::fs::write(dir.join("walk.bvh"), bvh).unwrap();
        // The front camera at a quarter of its size.
        let mut cam = vision::CameraFile::load(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../vision/assets/camera_front.toml"),
        )
        .unwrap();
        let s = 160.0 / f64::from(cam.width);
        (cam.width, cam.height) = (160, (f64::from(cam.height) * s).round() as u32);
        (cam.fx, cam.fy, cam.cx, cam.cy) = (cam.fx * s, cam.fy * s, cam.cx * s, cam.cy * s);
        cam.save(dir.join("camera.toml")).unwrap();
        // The frames: the base render command (its flags from --help).
        let render = dir.join("render");
        let _ = std::fs::remove_dir_all(&render);
        let mut args = case_args("render", &help_args("render"), &[]);
        let out = args.iter().position(|a| a == "--out").unwrap();
        args[out + 1] = "render".into();
        let o = Command::new(BIN)
            .args(&args)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{}: {}",
            shell_line(&args),
            String::from_utf8_lossy(&o.stderr)
        );
        // A 160 × 120 Y4M clip of 3 grey-gradient frames.
        let mut y4m = b"YUV4MPEG2 W160 H120 F30:1 Ip A1:1 C420jpeg\n".to_vec();
        for f in 0..3usize {
            y4m.extend_from_slice(b"FRAME\n");
            y4m.extend((0..160 * 120).map(|i| (16 + (i + 7 * f) % 200) as u8));
            y4m.extend(std::iter::repeat_n(128u8, 2 * 80 * 60));
        }
        std::fs::write(dir.join("clip.y4m"), y4m).unwrap();
        std::fs::write(
            dir.join("strokes.txt"),
            "1 skin 80,20 81,21 82,22 83,23\n1 shirt 80,50 81,52 79,54 80,56\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("junk.bin"),
            (0..512u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect::<Vec<u8>>(),
        )
        .unwrap();
        std::fs::write(dir.join("text.txt"), "hello\nworld\n").unwrap();
        dir
    })
}

/// A fresh case folder with copies of every input.
fn case_dir(command: &str, n: usize) -> PathBuf {
    let src = inputs();
    let dir = scratch(&format!("{command}/{n:05}"));
    let _ = std::fs::remove_dir_all(&dir);
    for d in ["adir", "emptydir", "frames"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    std::fs::write(dir.join("adir/file.txt"), "x").unwrap();
    std::fs::write(dir.join("file.txt"), "x").unwrap();
    std::fs::write(dir.join("empty.txt"), "").unwrap();
    for f in [
        "walk.bvh",
        "camera.toml",
        "clip.y4m",
        "strokes.txt",
        "junk.bin",
        "text.txt",
    ] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    for e in std::fs::read_dir(src.join("render")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("frame_") {
            std::fs::copy(&p, dir.join("frames").join(&name)).unwrap();
        }
    }
    std::fs::copy(src.join("render/frame_0001.png"), dir.join("frame.png")).unwrap();
    dir
}

/// The base command line of each command, relative to a case folder: for
/// each argument the names it may have (the first that `--help` lists is
/// used: flags are being renamed), its value, and whether it is required
/// (else left out when `--help` lists none of its names).
type BaseSpec = (&'static [&'static str], Option<&'static str>, bool);

fn base_spec(command: &str) -> &'static [BaseSpec] {
    match command {
        "track" => &[
            (&["--frames"], Some("frames"), true),
            (&["--out-csv", "--out"], Some("est.csv"), true),
            (&["--camera"], Some("camera.toml"), true),
            (&["--body", "--bvh"], Some("walk.bvh"), true),
            (&["--init-frame", "--frame"], Some("0"), true),
            (&["--background-frames"], Some("1"), false),
            (&["--observation"], Some("regions"), false),
            (&["--particles"], Some("30"), true),
            (&["--backend"], Some("cpu"), false),
            (&["--max-frames"], Some("3"), true),
            (&["--quiet"], None, false),
        ],
        "segment" => &[
            (&["--frames"], Some("frames"), true),
            (&["--out"], Some("out"), true),
            (&["--max-frames"], Some("2"), true),
            (&["--quiet"], None, false),
        ],
        // The whole 13-frame clip, every 4th frame: 4 frames and the empty
        // one.
        "render" => &[
            (&["--bvh", "<BVH>"], Some("walk.bvh"), true),
            (&["--camera"], Some("camera.toml"), true),
            (&["--out"], Some("out"), true),
            (&["--step"], Some("4"), false),
            (&["--quiet"], None, false),
        ],
        _ => unreachable!(),
    }
}

/// [`base_spec`] resolved against the command's `--help`: `(argument,
/// value)`.
fn base_args(command: &str, help: &[HelpArg]) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for (names, value, required) in base_spec(command) {
        match names.iter().find(|n| help.iter().any(|a| a.name == **n)) {
            Some(n) => out.push((n.to_string(), value.map(str::to_string))),
            None if *required => panic!(
                "`posecloud {command} --help` lists none of {names:?} (renamed? update base_spec)"
            ),
            None => {}
        }
    }
    out
}

/// The argument vector of a case: the base with the fuzzed arguments
/// applied.
fn case_args(command: &str, help: &[HelpArg], cases: &[FlagCase]) -> Vec<String> {
    let mut args = base_args(command, help);
    let mut extra: Vec<String> = Vec::new();
    let mut used = Vec::new();
    for c in cases {
        let a = &help[c.arg.index(help.len())];
        if used.contains(&a.name) {
            continue;
        }
        used.push(a.name.clone());
        let at = args.iter().position(|(n, _)| *n == a.name);
        let kind = kind_of(a, at.and_then(|i| args[i].1.as_deref()));
        let mut values = pool(if c.any_pool { Kind::Unknown } else { kind });
        if kind == Kind::Word {
            // The valid words too, so that other flags meet valid ones.
            values.extend(a.possible.iter().cloned());
        }
        let value = values[c.value.index(values.len())].clone();
        if a.positional() {
            match (c.form, at) {
                (Form::Removed, Some(i)) => {
                    args.remove(i);
                }
                (Form::Twice, _) => extra.push(value),
                (_, Some(i)) => args[i].1 = Some(value),
                (_, None) => extra.push(value),
            }
            continue;
        }
        match (c.form, a.takes_value) {
            (Form::Removed, _) => {
                if let Some(i) = at {
                    args.remove(i);
                }
            }
            (Form::Twice, true) => {
                if at.is_none() {
                    extra.extend([a.name.clone(), value.clone()]);
                }
                extra.extend([a.name.clone(), value]);
            }
            (Form::Twice, false) => extra.extend([a.name.clone(), a.name.clone()]),
            (Form::Equals, _) => {
                // A switch given a value: `--quiet=nan`.
                if let Some(i) = at {
                    args.remove(i);
                }
                extra.push(format!("{}={value}", a.name));
            }
            (Form::Separate, true) => match at {
                Some(i) => args[i].1 = Some(value),
                None => extra.extend([a.name.clone(), value]),
            },
            (Form::Separate, false) => {
                if at.is_none() {
                    extra.push(a.name.clone());
                }
            }
        }
    }
    let mut out = vec![command.to_string()];
    for (n, v) in args {
        if !n.starts_with('<') {
            out.push(n);
        }
        out.extend(v);
    }
    out.extend(extra);
    out
}

/// The command line as a shell would take it.
fn shell_line(args: &[String]) -> String {
    let quote = |s: &str| {
        if !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.,:/=@#".contains(c))
        {
            s.to_string()
        } else {
            format!("'{}'", s.replace('\'', "'\\''"))
        }
    };
    std::iter::once("posecloud".to_string())
        .chain(args.iter().map(|a| quote(a)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What the flag fuzz of one command saw.
#[derive(Default)]
struct FlagStats {
    cases: usize,
    accepted: usize,
    refused: usize,
    usage: usize,
    worst_rss: (u64, String),
    slowest: (Duration, String),
}

/// Runs one case; `Err` describes a failure.
fn run_case(dir: &Path, args: &[String], stats: &mut FlagStats) -> Result<(), String> {
    let line = shell_line(args);
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .current_dir(dir)
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE");
    let o = fuzzkit::child::run(&mut cmd, CHILD_TIMEOUT, CHILD_RSS_LIMIT)
        .map_err(|e| format!("cannot run {line}: {e}"))?;
    let where_ = format!("{line}\n(in {})", dir.display());
    if o.peak_rss > stats.worst_rss.0 {
        stats.worst_rss = (o.peak_rss, line.clone());
    }
    if o.wall > stats.slowest.0 {
        stats.slowest = (o.wall, line.clone());
    }
    let err = o.stderr_text();
    match o.killed {
        Some(fuzzkit::child::Killed::Timeout) => {
            return Err(format!(
                "still running after {CHILD_TIMEOUT:?} (killed): {where_}\nstderr: {err}"
            ));
        }
        Some(fuzzkit::child::Killed::Memory(rss)) => {
            return Err(format!(
                "resident set {} MiB over the {} MiB limit (killed): {where_}\nstderr: {err}",
                rss >> 20,
                CHILD_RSS_LIMIT >> 20
            ));
        }
        None => {}
    }
    if err.contains("panicked at") || err.contains("RUST_BACKTRACE") {
        return Err(format!("panic: {where_}\nstderr: {err}"));
    }
    if o.peak_rss > CHILD_RSS_LIMIT {
        return Err(format!(
            "peak resident set {} MiB over the {} MiB limit: {where_}",
            o.peak_rss >> 20,
            CHILD_RSS_LIMIT >> 20
        ));
    }
    match o.output.status.code() {
        Some(0) => stats.accepted += 1,
        Some(code @ (1 | 2)) => {
            // The error block: from the last line that starts with
            // "error" (a software GPU adapter may print such lines
            // before) to the end.
            let lines: Vec<&str> = err.lines().collect();
            let Some(start) = lines.iter().rposition(|l| l.starts_with("error")) else {
                return Err(format!(
                    "exit {code} without an error message: {where_}\nstderr: {err}"
                ));
            };
            // Not counted: blank lines and clap's usage trailer.
            let block: Vec<&str> = lines[start..]
                .iter()
                .copied()
                .filter(|l| {
                    !l.trim().is_empty()
                        && !l.starts_with("Usage: ")
                        && !l.starts_with("For more information, try")
                })
                .collect();
            if block.len() > MAX_ERROR_LINES {
                return Err(format!(
                    "an error of {} lines (at most {MAX_ERROR_LINES}): {where_}\nstderr: {err}",
                    block.len()
                ));
            }
            if code == 1 {
                stats.refused += 1;
            } else {
                stats.usage += 1;
            }
        }
        Some(code) => return Err(format!("exit status {code}: {where_}\nstderr: {err}")),
        None => {
            return Err(format!(
                "killed by a signal ({:?}): {where_}\nstderr: {err}",
                o.output.status
            ));
        }
    }
    Ok(())
}

fn fuzz_flags(command: &str) {
    let help = help_args(command);
    assert!(
        help.len() >= 3,
        "{command} --help lists too few arguments: {help:?}"
    );
    // The base command line works.
    let mut stats = FlagStats::default();
    let base = case_args(command, &help, &[]);
    let dir = case_dir(command, 0);
    run_case(&dir, &base, &mut stats).unwrap();
    assert_eq!(stats.accepted, 1, "the base command is refused: {base:?}");
    let _ = std::fs::remove_dir_all(&dir);
    let mut config = fuzzkit::config(FLAG_CASES, seed());
    // Every shrinking step runs a process (up to the timeout): few.
    config.max_shrink_iters = 32;
    let mut runner = TestRunner::new(config);
    let stats = std::cell::RefCell::new(FlagStats::default());
    let result = runner.run(&proptest::collection::vec(flag_case(), 1..4), |cases| {
        let mut stats = stats.borrow_mut();
        stats.cases += 1;
        let args = case_args(command, &help, &cases);
        let dir = case_dir(command, stats.cases);
        run_case(&dir, &args, &mut stats).map_err(TestCaseError::fail)?;
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    });
    let stats = stats.into_inner();
    eprintln!(
        "{command} flags: {} cases ({} flags from --help), {} accepted, {} refused, {} usage errors, \
         worst peak RSS {} MiB ({}), slowest {:.2} s ({}) (seed {})",
        stats.cases,
        help.len(),
        stats.accepted,
        stats.refused,
        stats.usage,
        stats.worst_rss.0 >> 20,
        stats.worst_rss.1,
        stats.slowest.0.as_secs_f64(),
        stats.slowest.1,
        seed()
    );
    if let Err(e) = result {
        panic!("{command} flags: {e}");
    }
}

#[test]
fn fuzz_track_flags() {
    fuzz_flags("track");
}

#[test]
fn fuzz_segment_flags() {
    fuzz_flags("segment");
}

#[test]
fn fuzz_render_flags() {
    fuzz_flags("render");
}

// ---- interruptions -------------------------------------------------------------

/// Cases of the interruption fuzz (`FUZZ_CASES` overrides): each a child
/// of about a second on two cores.
const INTERRUPT_CASES: u32 = 8;

/// What one interruption case runs: a long command (index into
/// [`interrupt_args`]), when it gets the first Ctrl-C and maybe a second
/// (milliseconds after the start and after the first), and whether its
/// outputs exist beforehand.
#[derive(Clone, Debug)]
struct InterruptCase {
    command: usize,
    first_ms: u64,
    second_ms: Option<u64>,
    previous: bool,
}

fn interrupt_case() -> impl Strategy<Value = InterruptCase> {
    (
        0..4usize,
        0..1500u64,
        proptest::option::of(0..400u64),
        any::<bool>(),
    )
        .prop_map(|(command, first_ms, second_ms, previous)| InterruptCase {
            command,
            first_ms,
            second_ms,
            previous,
        })
}

/// The command lines of the interruption fuzz (relative to a case folder)
/// and their outputs: files (CSV, BVH) and folders (of PNGs and a CSV).
fn interrupt_args(
    command: usize,
) -> (
    Vec<&'static str>,
    &'static [&'static str],
    &'static [&'static str],
) {
    match command {
        0 => (
            vec![
                "track",
                "--frames",
                "frames",
                "--camera",
                "camera.toml",
                "--bvh",
                "walk.bvh",
                "--frame",
                "0",
                "--background-frames",
                "1",
                "--observation",
                "regions",
                "--particles",
                "30",
                "--backend",
                "cpu",
                "--out-csv",
                "out/est.csv",
                "--out-bvh",
                "out/est.bvh",
                "--quiet",
            ],
            &["out/est.csv", "out/est.bvh"],
            &[],
        ),
        1 => (
            vec![
                "keypoints",
                "--frames",
                "frames",
                "--out-csv",
                "out/kp.csv",
                "--quiet",
            ],
            &["out/kp.csv"],
            &[],
        ),
        2 => (
            vec![
                "render",
                "--bvh",
                "walk.bvh",
                "--camera",
                "camera.toml",
                "--out",
                "rend",
                "--step",
                "1",
                "--force",
                "--quiet",
            ],
            &["rend/ground_truth.csv"],
            &["rend"],
        ),
        _ => (
            vec!["segment", "--frames", "frames", "--out", "seg", "--quiet"],
            &["seg/segment.csv"],
            &["seg"],
        ),
    }
}

/// What a file held before the run.
const PREVIOUS: &str = "previous,run\n1,2\n";

/// A CSV is complete: a header, rows of its width, numbers (or empty
/// cells) after the first column where it is numeric, a final newline.
fn check_csv(path: &Path, text: &str) -> Result<usize, String> {
    if !text.ends_with('\n') {
        return Err(format!("{}: no final newline (cut short)", path.display()));
    }
    let mut lines = text.lines();
    let header = lines
        .next()
        .ok_or_else(|| format!("{}: empty", path.display()))?;
    let width = header.split(',').count();
    let mut rows = 0;
    for (k, l) in lines.enumerate() {
        let cells: Vec<&str> = l.split(',').collect();
        if cells.len() != width {
            return Err(format!(
                "{}:{}: {} cells, the header has {width}",
                path.display(),
                k + 2,
                cells.len()
            ));
        }
        rows += 1;
    }
    Ok(rows)
}

/// After an interrupted run: each output is absent (or, when it existed,
/// untouched) or complete and readable; no temporary file is left.
fn check_outputs(
    dir: &Path,
    files: &[&str],
    folders: &[&str],
    previous: bool,
) -> Result<(), String> {
    for f in files {
        let path = dir.join(f);
        let Ok(bytes) = std::fs::read(&path) else {
            if previous {
                return Err(format!("{f}: the previous file was removed"));
            }
            continue;
        };
        let text = String::from_utf8(bytes).map_err(|_| format!("{f}: not UTF-8"))?;
        if previous && text == PREVIOUS {
            continue;
        }
        if f.ends_with(".bvh") {
            let b = skeleton::Bvh::parse(&text, f).map_err(|e| format!("{f}: {e}"))?;
            if b.frames.is_empty() {
                return Err(format!("{f}: no frames"));
            }
        } else {
            check_csv(&path, &text)?;
        }
    }
    for d in folders {
        let Ok(entries) = std::fs::read_dir(dir.join(d)) else {
            continue;
        };
        for e in entries {
            let p = e.map_err(|e| e.to_string())?.path();
            if p.extension().is_some_and(|x| x == "png") {
                vision::load_rgb(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            }
        }
    }
    for d in folders.iter().copied().chain(["out"]) {
        let Ok(entries) = std::fs::read_dir(dir.join(d)) else {
            continue;
        };
        for e in entries {
            let name = e.map_err(|e| e.to_string())?.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') {
                return Err(format!("{d}/{name}: a temporary file was left"));
            }
        }
    }
    Ok(())
}

/// What the interruption fuzz saw.
#[derive(Default)]
struct InterruptStats {
    cases: usize,
    /// Exit statuses: 0, 1, 130 (second Ctrl-C), killed by SIGINT
    /// (before the handler was installed).
    finished: usize,
    failed: usize,
    aborted: usize,
    signalled: usize,
    worst_rss: (u64, String),
}

/// Runs one interruption case in `dir`; `Err` describes a failure.
fn run_interrupt(
    dir: &Path,
    case: &InterruptCase,
    stats: &mut InterruptStats,
) -> Result<(), String> {
    let (args, files, folders) = interrupt_args(case.command);
    std::fs::create_dir_all(dir.join("out")).unwrap();
    if case.previous {
        for f in files {
            let p = dir.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, PREVIOUS).unwrap();
        }
    }
    let mut interrupts = vec![Duration::from_millis(case.first_ms)];
    if let Some(s) = case.second_ms {
        interrupts.push(Duration::from_millis(case.first_ms + s));
    }
    let line = format!(
        "posecloud {} (Ctrl-C at {} ms{})",
        args.join(" "),
        case.first_ms,
        case.second_ms
            .map_or(String::new(), |s| format!(" and {} ms later", s))
    );
    let mut cmd = Command::new(BIN);
    cmd.args(&args)
        .current_dir(dir)
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE");
    let o = fuzzkit::child::run_interrupted(&mut cmd, CHILD_TIMEOUT, CHILD_RSS_LIMIT, &interrupts)
        .map_err(|e| format!("cannot run {line}: {e}"))?;
    let where_ = format!("{line}\n(in {})", dir.display());
    let err = o.stderr_text();
    if o.peak_rss > stats.worst_rss.0 {
        stats.worst_rss = (o.peak_rss, line.clone());
    }
    if o.killed.is_some() {
        return Err(format!("killed ({:?}): {where_}\nstderr: {err}", o.killed));
    }
    if err.contains("panicked at") {
        return Err(format!("panic: {where_}\nstderr: {err}"));
    }
    use std::os::unix::process::ExitStatusExt as _;
    match (o.output.status.code(), o.output.status.signal()) {
        (Some(0), _) => stats.finished += 1,
        (Some(1), _) => stats.failed += 1,
        (Some(130), _) => stats.aborted += 1,
        (None, Some(2)) => stats.signalled += 1,
        other => return Err(format!("status {other:?}: {where_}\nstderr: {err}")),
    }
    check_outputs(dir, files, folders, case.previous)
        .map_err(|m| format!("{m}: {where_}\nstderr: {err}"))
}

/// Issue 32: the long commands interrupted with SIGINT (one or two, as
/// Ctrl-C sends them to the process group) at seeded random times leave
/// each output absent — a previous file of that name untouched — or
/// complete and readable, never a half-written file under the real name
/// nor a temporary file.
#[test]
fn fuzz_interruptions() {
    let mut config = fuzzkit::config(INTERRUPT_CASES, seed());
    config.max_shrink_iters = 8;
    let mut runner = TestRunner::new(config);
    let stats = std::cell::RefCell::new(InterruptStats::default());
    let result = runner.run(&interrupt_case(), |case| {
        let mut stats = stats.borrow_mut();
        stats.cases += 1;
        let dir = case_dir("interrupt", stats.cases);
        run_interrupt(&dir, &case, &mut stats).map_err(TestCaseError::fail)?;
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    });
    let stats = stats.into_inner();
    eprintln!(
        "interruptions: {} cases: {} finished, {} failed (exit 1), {} aborted by a second Ctrl-C, \
         {} ended by SIGINT before the handler; worst peak RSS {} MiB ({}) (seed {})",
        stats.cases,
        stats.finished,
        stats.failed,
        stats.aborted,
        stats.signalled,
        stats.worst_rss.0 >> 20,
        stats.worst_rss.1,
        seed()
    );
    if let Err(e) = result {
        panic!("interruptions: {e}");
    }
}

/// The help parser reads every format clap prints (long help with values
/// on their own lines, short help on one line), and every base argument
/// resolves.
#[test]
fn help_lists_the_flags() {
    for command in ["track", "segment", "render"] {
        let help = help_args(command);
        assert!(help.iter().any(|a| !a.takes_value), "{command}: {help:?}");
        assert!(help.iter().any(|a| a.takes_value), "{command}: {help:?}");
        assert!(
            help.iter().any(|a| a.default.is_some()),
            "{command}: {help:?}"
        );
        assert!(
            help.iter().any(|a| a.possible.len() >= 2),
            "{command}: {help:?}"
        );
        assert!(!help.iter().any(|a| a.name == "--help"));
        let base = base_args(command, &help);
        assert!(base.len() >= 3, "{command}: {base:?}");
    }
    let track = help_args("track");
    let particles = track.iter().find(|a| a.name == "--particles").unwrap();
    assert_eq!(kind_of(particles, None), Kind::Number);
    assert!(track.iter().any(|a| kind_of(a, None) == Kind::Source));
    let render = help_args("render");
    assert!(render.iter().any(|a| kind_of(a, None) == Kind::Colour));
    assert!(render.iter().any(|a| kind_of(a, None) == Kind::Range));
}

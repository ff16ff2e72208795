//! Fuzz harness for the vision inputs (issue 23), in the pattern of
//! `crates/skeleton/tests/fuzz.rs`: property tests that mutate valid Y4M
//! files (headers and bodies) and the camera file (TOML) — truncation,
//! line deletion and duplication, token swaps, hostile numbers in every
//! header field and key, byte flips and insertions — and check every parse:
//!
//! * no panic (`catch_unwind` around the parser and everything after it);
//! * bounded memory: the peak heap growth of the parsing thread stays below
//!   `MEMORY_PER_INPUT_BYTE × input bytes + 1 MiB` (a counting global
//!   allocator), so a declared frame size never allocates beyond the data
//!   present;
//! * either `Ok` with consistent results (Y4M: every frame of the header's
//!   size, in order, and a seek that reads the same frame again; camera: a
//!   [`gpu::Camera`] that projects finitely and a TOML text that parses to
//!   the same file) — or an error that names the file (Y4M) or the file
//!   and the field (camera).
//!
//! `FUZZ_CASES=N` sets the number of cases per base input (default 500);
//! `FUZZ_SEED=S` changes the fixed seed, e.g.
//! `FUZZ_CASES=20000 cargo test --release -p vision --test fuzz`.

mod common;

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use vision::sources::Y4mFile;
use vision::{CameraFile, FrameSource, MAX_FRAME_SIDE, VisionError};

#[global_allocator]
static ALLOCATOR: common::Counting = common::Counting;

/// Heap bytes a parse may use per input byte, plus 1 MiB: a Y4M frame
/// costs its planes (at most the bytes present) and its RGB image (at most
/// 3 bytes a luma byte), a camera file its TOML table.
const MEMORY_PER_INPUT_BYTE: usize = 16;

/// Frames read from an accepted Y4M file (the bases hold 3).
const MAX_FRAMES_READ: usize = 8;

thread_local! {
    /// Largest peak heap growth seen on this thread, as a fraction of the
    /// bound.
    static WORST_RATIO: Cell<f64> = const { Cell::new(0.0) };
}

fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(500)
}

fn seed() -> u64 {
    std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(23)
}

// ---- inputs ------------------------------------------------------------------

/// A valid Y4M file: `frames` frames of a `w × h` gradient in colour space
/// `c` (`420jpeg`, `422`, `444`, `mono`), with the optional header fields
/// real files carry.
fn y4m(w: usize, h: usize, c: &str, frames: usize) -> Vec<u8> {
    let mut b = format!("YUV4MPEG2 W{w} H{h} F30000:1001 Ip A1:1 C{c} XYSCSS={c}\n").into_bytes();
    let (cw, ch) = match c {
        "mono" => (0, 0),
        "444" => (w, h),
        "422" => (w.div_ceil(2), h),
        _ => (w.div_ceil(2), h.div_ceil(2)),
    };
    for f in 0..frames {
        b.extend_from_slice(b"FRAME\n");
        b.extend((0..w * h).map(|i| (16 + (i * 7 + f * 13) % 220) as u8));
        b.extend((0..2 * cw * ch).map(|i| (64 + (i * 5 + f) % 128) as u8));
    }
    b
}

fn camera_text() -> String {
    std::fs::read_to_string(format!(
        "{}/assets/camera_front.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

// ---- mutations -----------------------------------------------------------------

const HOSTILE_NUMBERS: &[&str] = &[
    "nan",
    "inf",
    "-inf",
    "1e308",
    "-1e308",
    "1e309",
    "-0",
    "0",
    "-1",
    "4.9e-324",
    "65535",
    "65536",
    "8192",
    "8193",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "99999999999999999999",
    "9223372036854775807",
    "-9223372036854775808",
    "",
    "1e",
    "0x10",
    "1_0",
    ".5",
    "+3",
];

/// Values for a whole Y4M header field (tag and value).
const HOSTILE_Y4M_FIELDS: &[&str] = &[
    "W0",
    "H0",
    "W8192",
    "H8192",
    "W8193",
    "W65535",
    "H65535",
    "W4294967295",
    "H4294967295",
    "W-1",
    "F0:0",
    "F1:0",
    "F0:1",
    "Fnan:1",
    "F1e308:1e-308",
    "F30000",
    "F:",
    "C420p10",
    "C411",
    "C",
    "Cmono16",
    "C444alpha",
    "I?",
    "X",
    "",
    "\u{feff}",
    "W1 W2",
];

/// Replacements for a FRAME line.
const HOSTILE_FRAME_LINES: &[&str] = &[
    "FRAME",
    "FRAME Ixyz",
    "FRAM",
    "FRAMEFRAMEFRAME",
    "",
    "frame",
    "FRAME\u{0}",
];

#[derive(Clone, Debug)]
enum Mutation {
    Truncate(Index),
    DeleteLine(Index),
    DuplicateLine(Index),
    SwapTokens(Index, Index),
    Number(Index, usize),
    /// Replace one token of the first line (a Y4M header field, or a TOML
    /// line's key) by a hostile field.
    Field(Index, usize),
    /// Replace a FRAME line (Y4M) / a whole line (TOML).
    FrameLine(Index, usize),
    /// A FRAME line or header with no end: `n` bytes without a newline.
    LongLine(Index, usize),
    Byte(Index, u8),
    Insert(Index, Vec<u8>),
    Crlf,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        2 => any::<Index>().prop_map(Mutation::Truncate),
        1 => any::<Index>().prop_map(Mutation::DeleteLine),
        1 => any::<Index>().prop_map(Mutation::DuplicateLine),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::SwapTokens(a, b)),
        4 => (any::<Index>(), 0..HOSTILE_NUMBERS.len()).prop_map(|(a, k)| Mutation::Number(a, k)),
        4 => (any::<Index>(), 0..HOSTILE_Y4M_FIELDS.len()).prop_map(|(a, k)| Mutation::Field(a, k)),
        1 => (any::<Index>(), 0..HOSTILE_FRAME_LINES.len()).prop_map(|(a, k)| Mutation::FrameLine(a, k)),
        1 => (any::<Index>(), prop_oneof![1usize..100, 1000usize..5000]).prop_map(|(a, n)| Mutation::LongLine(a, n)),
        3 => (any::<Index>(), any::<u8>()).prop_map(|(a, b)| Mutation::Byte(a, b)),
        1 => (any::<Index>(), proptest::collection::vec(any::<u8>(), 1..16)).prop_map(|(a, b)| Mutation::Insert(a, b)),
        1 => Just(Mutation::Crlf),
    ]
}

fn lines_of(b: &[u8]) -> Vec<Vec<u8>> {
    b.split(|&c| c == b'\n').map(<[u8]>::to_vec).collect()
}

/// Byte ranges of maximal runs matching `f`.
fn runs(b: &[u8], f: impl Fn(u8) -> bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, &c) in b.iter().chain(std::iter::once(&b' ')).enumerate() {
        match (f(c) && i < b.len(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    out
}

fn replace(b: &mut Vec<u8>, (s, e): (usize, usize), with: &[u8]) {
    b.splice(s..e, with.iter().copied());
}

/// The end of the first line (the Y4M header), or the whole input.
fn first_line_end(b: &[u8]) -> usize {
    b.iter().position(|&c| c == b'\n').unwrap_or(b.len())
}

fn apply(mut b: Vec<u8>, m: &Mutation) -> Vec<u8> {
    match m {
        Mutation::Truncate(i) => b.truncate(i.index(b.len() + 1)),
        Mutation::DeleteLine(i) => {
            let mut l = lines_of(&b);
            l.remove(i.index(l.len()));
            b = l.join(&b'\n');
        }
        Mutation::DuplicateLine(i) => {
            let mut l = lines_of(&b);
            let k = i.index(l.len());
            l.insert(k, l[k].clone());
            b = l.join(&b'\n');
        }
        Mutation::SwapTokens(x, y) => {
            let t = runs(&b, |c| !c.is_ascii_whitespace());
            if t.len() >= 2 {
                let (mut p, mut q) = (t[x.index(t.len())], t[y.index(t.len())]);
                if p.0 > q.0 {
                    std::mem::swap(&mut p, &mut q);
                }
                if p != q && p.1 <= q.0 {
                    let (tp, tq) = (b[p.0..p.1].to_vec(), b[q.0..q.1].to_vec());
                    replace(&mut b, q, &tp);
                    replace(&mut b, p, &tq);
                }
            }
        }
        Mutation::Number(i, k) => {
            // Numbers in the header / the text only: the planes of a Y4M
            // body are not text.
            let end = if b.starts_with(b"YUV4MPEG2") {
                first_line_end(&b)
            } else {
                b.len()
            };
            let nums: Vec<_> = runs(&b[..end], |c| c.is_ascii_digit() || b".eE+-".contains(&c))
                .into_iter()
                .filter(|&(s, e)| b[s..e].iter().any(u8::is_ascii_digit))
                .collect();
            if !nums.is_empty() {
                replace(
                    &mut b,
                    nums[i.index(nums.len())],
                    HOSTILE_NUMBERS[*k].as_bytes(),
                );
            }
        }
        Mutation::Field(i, k) => {
            let end = first_line_end(&b);
            let tokens = runs(&b[..end], |c| c != b' ');
            if !tokens.is_empty() {
                replace(
                    &mut b,
                    tokens[i.index(tokens.len())],
                    HOSTILE_Y4M_FIELDS[*k].as_bytes(),
                );
            }
        }
        Mutation::FrameLine(i, k) => {
            let frames: Vec<usize> = b
                .windows(6)
                .enumerate()
                .filter(|(_, w)| *w == b"FRAME\n")
                .map(|(p, _)| p)
                .collect();
            let with = HOSTILE_FRAME_LINES[*k].as_bytes();
            if frames.is_empty() {
                let mut l = lines_of(&b);
                let at = i.index(l.len());
                l[at] = with.to_vec();
                b = l.join(&b'\n');
            } else {
                let at = frames[i.index(frames.len())];
                replace(&mut b, (at, at + 5), with);
            }
        }
        Mutation::LongLine(i, n) => {
            let at = i.index(b.len() + 1);
            b.splice(at..at, std::iter::repeat_n(b'A', *n));
        }
        Mutation::Byte(i, byte) => {
            if !b.is_empty() {
                let at = i.index(b.len());
                b[at] = *byte;
            }
        }
        Mutation::Insert(i, bytes) => {
            let at = i.index(b.len() + 1);
            b.splice(at..at, bytes.iter().copied());
        }
        Mutation::Crlf => {
            let mut out = Vec::with_capacity(b.len() * 2);
            for &c in &b {
                if c == b'\n' {
                    out.push(b'\r');
                }
                out.push(c);
            }
            b = out;
        }
    }
    b
}

// ---- checks --------------------------------------------------------------------

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "<non-string panic>".into())
}

fn check_memory(bytes: &[u8], peak: usize) -> Result<(), TestCaseError> {
    let bound = MEMORY_PER_INPUT_BYTE * bytes.len() + (1 << 20);
    let ratio = peak as f64 / bound as f64;
    WORST_RATIO.with(|w| w.set(w.get().max(ratio)));
    prop_assert!(
        peak <= bound,
        "reading {} bytes allocated {peak} bytes at peak (bound {bound})",
        bytes.len()
    );
    Ok(())
}

/// What reading a Y4M file gave: the size and every frame's pixels, or the
/// first error.
type Y4mRead = Result<((u32, u32), Vec<Vec<u8>>, Option<Vec<u8>>), VisionError>;

/// Opens `path`, reads up to [`MAX_FRAMES_READ`] frames, then seeks back to
/// frame 1 (when there is one) and reads it again.
fn read_y4m(path: &Path) -> Y4mRead {
    let mut y = Y4mFile::open(path)?;
    let size = y.size();
    let mut frames = Vec::new();
    while frames.len() < MAX_FRAMES_READ {
        match y.next_frame()? {
            Some(f) => {
                if (f.width, f.height) != size || f.index != frames.len() {
                    return Err(VisionError::Segmentation(format!(
                        "frame {} is {} × {} (index {}), the header says {size:?}",
                        frames.len(),
                        f.width,
                        f.height,
                        f.index
                    )));
                }
                frames.push(f.rgb);
            }
            None => break,
        }
    }
    let again = if frames.len() > 1 {
        y.seek(1)?;
        y.next_frame()?.map(|f| f.rgb)
    } else {
        None
    };
    // Far seeks are errors or land past the end, never overflow.
    for far in [usize::MAX, 1 << 40] {
        if y.seek(far).is_ok() {
            y.next_frame().ok();
        }
    }
    Ok((size, frames, again))
}

/// A scratch file for this thread's inputs.
fn scratch_file(ext: &str) -> PathBuf {
    let id = format!("{:?}", std::thread::current().id())
        .chars()
        .filter(char::is_ascii_digit)
        .collect::<String>();
    let dir = std::env::temp_dir().join(format!("vision-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("fuzz-{id}.{ext}"))
}

fn check_y4m(bytes: &[u8], path: &Path) -> Result<bool, TestCaseError> {
    std::fs::write(path, bytes).unwrap();
    let (result, peak) = common::measured(|| catch_unwind(|| read_y4m(path)));
    let result = result.map_err(|p| TestCaseError::fail(format!("panic: {}", panic_message(p))))?;
    check_memory(bytes, peak)?;
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    match result {
        Ok(((w, h), frames, again)) => {
            prop_assert!((1..=MAX_FRAME_SIDE).contains(&w) && (1..=MAX_FRAME_SIDE).contains(&h));
            for f in &frames {
                prop_assert_eq!(f.len(), w as usize * h as usize * 3);
            }
            // The frame read again after the seek has the same size (a
            // mutated FRAME line may shift it to other bytes).
            if let Some(a) = again {
                prop_assert_eq!(a.len(), w as usize * h as usize * 3);
            }
            Ok(true)
        }
        Err(VisionError::Segmentation(m)) => Err(TestCaseError::fail(m)),
        Err(e) => {
            let s = e.to_string();
            prop_assert!(s.contains(&name), "error does not name the file: {s}");
            prop_assert!(!s.contains('\n'), "not one line: {s}");
            Ok(false)
        }
    }
}

fn check_camera(bytes: &[u8]) -> Result<bool, TestCaseError> {
    let text = String::from_utf8_lossy(bytes);
    let (result, peak) =
        common::measured(|| catch_unwind(|| CameraFile::parse(&text, "fuzz.toml")));
    let result = result.map_err(|p| TestCaseError::fail(format!("panic: {}", panic_message(p))))?;
    check_memory(bytes, peak)?;
    match result {
        Ok(file) => {
            let after = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
                let camera = file.camera().map_err(|e| format!("camera(): {e}"))?;
                let again = CameraFile::parse(&file.to_toml_string(), "again.toml")
                    .map_err(|e| format!("written text does not parse: {e}"))?;
                if again != file {
                    return Err(format!("round trip changed {file:?} into {again:?}"));
                }
                // A point on the optical axis projects finitely.
                let p = file.look_at;
                if let Some((u, v, z)) = vision::camera_file::project(&camera, p)
                    && !(u.is_finite() && v.is_finite() && z.is_finite())
                {
                    return Err(format!("look_at projects to ({u}, {v}, {z})"));
                }
                Ok(())
            }))
            .map_err(|p| TestCaseError::fail(format!("panic after parse: {}", panic_message(p))))?;
            after.map_err(|e| TestCaseError::fail(format!("accepted file gives: {e}")))?;
            Ok(true)
        }
        Err(VisionError::CameraFile {
            path,
            field,
            message,
        }) => {
            prop_assert_eq!(path, PathBuf::from("fuzz.toml"));
            prop_assert!(!field.is_empty() && !message.is_empty());
            Ok(false)
        }
        Err(other) => Err(TestCaseError::fail(format!(
            "not a camera-file error naming the field: {other:?}"
        ))),
    }
}

fn fuzz(name: &str, base: Vec<u8>, check: impl Fn(&[u8]) -> Result<bool, TestCaseError>) {
    // The unmutated input must be accepted: otherwise every case is a
    // trivial error.
    assert!(check(&base).unwrap(), "{name}: the base input is refused");
    let config = Config {
        cases: cases(),
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed()),
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let accepted = Cell::new(0usize);
    let result = runner.run(&proptest::collection::vec(mutation(), 1..4), |mutations| {
        let mut b = base.clone();
        for m in &mutations {
            b = apply(b, m);
        }
        accepted.set(accepted.get() + usize::from(check(&b)?));
        Ok(())
    });
    eprintln!(
        "{name}: {} mutated inputs, {} accepted, peak heap <= {:.1} % of the bound (seed {})",
        cases(),
        accepted.get(),
        100.0 * WORST_RATIO.with(Cell::get),
        seed()
    );
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
}

fn fuzz_y4m(colour_space: &str, w: usize, h: usize) {
    let path = scratch_file("y4m");
    fuzz(
        &format!("y4m {colour_space}"),
        y4m(w, h, colour_space, 3),
        |b| check_y4m(b, &path),
    );
    let _ = std::fs::remove_file(&path);
}

#[test]
fn fuzz_y4m_420() {
    fuzz_y4m("420jpeg", 7, 5);
}

#[test]
fn fuzz_y4m_422_and_444() {
    fuzz_y4m("422", 6, 4);
    fuzz_y4m("444", 3, 3);
}

#[test]
fn fuzz_y4m_mono() {
    fuzz_y4m("mono", 8, 2);
}

/// Camera files whose every number is finite but whose pose arithmetic
/// overflows, and sizes at the integer limits, before the random cases.
#[test]
fn hostile_camera_files() {
    let text = camera_text();
    let with = |pairs: &[(&str, &str)]| {
        let mut t = text.clone();
        for (key, line) in pairs {
            let start = t.find(&format!("\n{key} =")).unwrap() + 1;
            let end = start + t[start..].find('\n').unwrap();
            t.replace_range(start..end, line);
        }
        t
    };
    let cases = [
        with(&[
            ("position", "position = [1e308, 1e308, 1e308]"),
            ("look_at", "look_at = [-1e308, -1e308, -1e308]"),
        ]),
        with(&[("up", "up = [1e308, 1e308, 1e308]")]),
        with(&[("up", "up = [1e-320, 1e-320, 0.0]")]),
        with(&[
            ("position", "position = [1e-320, 0.0, 0.0]"),
            ("look_at", "look_at = [0.0, 0.0, 0.0]"),
        ]),
        with(&[("fx", "fx = 1e308"), ("cx", "cx = 1e308")]),
        with(&[("width", "width = 9223372036854775807")]),
        with(&[("height", "height = -9223372036854775808")]),
        with(&[("fx", "fx = 4.9e-324")]),
    ];
    for (k, t) in cases.iter().enumerate() {
        if let Err(e) = check_camera(t.as_bytes()) {
            panic!("case {k}: {e}\n{t}");
        }
    }
}

#[test]
fn fuzz_camera_toml() {
    fuzz("camera file", camera_text().into_bytes(), check_camera);
    // The text the program writes, too (no comments, every number a float).
    let written = CameraFile::parse(&camera_text(), "x")
        .unwrap()
        .to_toml_string();
    fuzz("written camera file", written.into_bytes(), check_camera);
}

//! Fuzz harness for the vision inputs (issue 23), in the pattern of
//! `crates/skeleton/tests/fuzz.rs`: property tests that mutate valid Y4M
//! files (headers and bodies) and the camera file (TOML) — truncation,
//! line deletion and duplication, token swaps, hostile numbers in every
//! header field and key, byte flips and insertions (the generic text
//! mutations of `fuzzkit`, the Y4M header fields and FRAME lines here) —
//! and check every parse:
//!
//! * no panic (`catch_unwind` around the parser and everything after it);
//! * bounded memory: the peak heap growth of the parsing thread stays below
//!   `MEMORY_PER_INPUT_BYTE × input bytes + 1 MiB` (`fuzzkit`'s counting
//!   global allocator), so a declared frame size never allocates beyond the
//!   data present;
//! * either `Ok` with consistent results (Y4M: every frame of the header's
//!   size, in order, and a seek that reads the same frame again; camera: a
//!   camera (`CameraFile::camera`) that projects finitely and a TOML text
//!   that parses to the same file) — or an error that names the file (Y4M)
//!   or the file and the field (camera).
//!
//! The colour-sampling strokes too: random `Stroke`s (classes, points in
//! and out of the frame, `u32::MAX`, empty strokes, thousands of strokes)
//! given to `Segmenter::learn_colours_from_strokes`, and mutated strokes
//! files through `load_strokes`: no panic, peak heap ≤
//! `MEMORY_PER_STROKE_BYTE × 8 bytes a point + 1 MiB` (the file: the
//! bound above), and either `Ok` with a colour model for exactly the
//! stroked classes (which then segment a frame), or an error naming the
//! first stroke with a point outside the frame, a stroked class with too
//! few pixels, or the file and line.
//!
//! `FUZZ_CASES=N` sets the number of cases per base input (default 500);
//! `FUZZ_SEED=S` changes the fixed seed, e.g.
//! `FUZZ_CASES=20000 cargo test --release -p vision --test fuzz`.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use fuzzkit::HostileMutation;
use fuzzkit::{TextMutation, lines_of, measured, panic_message, replace, replace_one_of, runs};
use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use vision::Y4mFile;
use vision::{CameraFile, FrameSource, MAX_FRAME_SIDE, VisionError};

#[global_allocator]
static ALLOCATOR: fuzzkit::Counting = fuzzkit::Counting;

/// Heap bytes a parse may use per input byte, plus 1 MiB: a Y4M frame
/// costs its planes (at most the bytes present) and its RGB image (at most
/// 3 bytes a luma byte), a camera file its TOML table.
const MEMORY_PER_INPUT_BYTE: usize = 16;

/// Frames read from an accepted Y4M file (the bases hold 3).
const MAX_FRAMES_READ: usize = 8;

/// Cases per base input (`FUZZ_CASES` overrides).
fn cases() -> u32 {
    fuzzkit::cases(500)
}

/// The fixed seed (`FUZZ_SEED` overrides).
fn seed() -> u64 {
    fuzzkit::seed(23)
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

/// Text mutations (truncation, line deletion and duplication, token swaps,
/// hostile numbers — in a Y4M file: in its header only; the planes are not
/// text — byte flips and insertions, long lines, BOMs, CRLF); a token of
/// the first line (a Y4M header field, or a TOML line's key) replaced by a
/// hostile field; a FRAME line (Y4M) / a whole line (TOML) replaced.
fn mutation() -> impl Strategy<Value = HostileMutation> {
    let (fields, lines) = (HOSTILE_Y4M_FIELDS.len(), HOSTILE_FRAME_LINES.len());
    fuzzkit::hostile_mutation([15, 4, 1], fields, lines)
}

/// The end of the first line (the Y4M header), or the whole input.
fn first_line_end(b: &[u8]) -> usize {
    b.iter().position(|&c| c == b'\n').unwrap_or(b.len())
}

fn apply(mut b: Vec<u8>, m: &HostileMutation) -> Vec<u8> {
    match m {
        HostileMutation::Text(m @ TextMutation::Number(..)) if b.starts_with(b"YUV4MPEG2") => {
            // Numbers in the header only: the planes of a Y4M body are not
            // text.
            let body = b.split_off(first_line_end(&b));
            b = fuzzkit::apply(b, m);
            b.extend_from_slice(&body);
        }
        HostileMutation::Text(m) => b = fuzzkit::apply(b, m),
        HostileMutation::Token(i, k) => {
            let end = first_line_end(&b);
            let tokens = runs(&b[..end], |c| c != b' ');
            replace_one_of(&mut b, &tokens, *i, HOSTILE_Y4M_FIELDS[*k].as_bytes());
        }
        HostileMutation::Line(i, k) => {
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
    }
    b
}

// ---- checks --------------------------------------------------------------------

fn check_memory(bytes: &[u8], peak: usize) -> Result<(), TestCaseError> {
    fuzzkit::check_heap(MEMORY_PER_INPUT_BYTE, bytes.len(), peak)
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
    let (result, peak) = measured(|| catch_unwind(|| read_y4m(path)));
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
    let (result, peak) = measured(|| catch_unwind(|| CameraFile::parse(&text, "fuzz.toml")));
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
                if let Some((u, v, z)) = vision::project(&camera, p)
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
    fuzzkit::fuzz_mutations(name, &base, (cases(), seed()), mutation(), apply, check);
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

// ---- strokes -------------------------------------------------------------------

/// Input frame of the stroke cases, and the label image it is sampled to.
const STROKE_FRAME: (u32, u32) = (64, 48);
const STROKE_LABELS: (u32, u32) = (32, 24);

/// Heap bytes colour learning may use per input byte (a stroke point is
/// 8 bytes: its label pixel index and its feature are 8 + 12 bytes, sorted
/// in place), plus 1 MiB.
const MEMORY_PER_STROKE_BYTE: usize = 16;

/// A frame with regions of different colours (so that strokes sample
/// different features) over a gradient.
fn stroke_frame() -> vision::Frame {
    let (w, h) = STROKE_FRAME;
    let mut rgb = Vec::with_capacity((w * h * 3) as usize);
    for y in 0..h {
        for x in 0..w {
            let c = match (x * 4 / w, y * 3 / h) {
                (0, _) => [200, 150, 120],
                (1, 0) => [40, 30, 20],
                (1, _) | (2, _) => [30, 60, 200],
                _ => [90, 90, 40],
            };
            rgb.extend(c.iter().map(|&v: &u32| (v + (x + 2 * y) % 16) as u8));
        }
    }
    vision::Frame::new(w, h, rgb, 0.0, 1).unwrap()
}

/// A segmenter for [`STROKE_FRAME`] with a flat grey background learned.
fn stroke_segmenter() -> vision::Segmenter {
    let (w, h) = STROKE_FRAME;
    let params = vision::SegmentParams {
        width: STROKE_LABELS.0,
        height: STROKE_LABELS.1,
        ..vision::SegmentParams::default()
    };
    let mut seg = vision::Segmenter::new(params, w, h).unwrap();
    let grey = vision::Frame::new(w, h, vec![128; (w * h * 3) as usize], 0.0, 0).unwrap();
    seg.learn_background(&[&grey]).unwrap();
    seg
}

/// A coordinate: mostly inside `0..side`, else at the edge, at the integer
/// limits or anything.
fn coordinate(side: u32, hostile: bool) -> BoxedStrategy<u32> {
    if hostile {
        prop_oneof![
            2 => 0..side,
            1 => prop_oneof![Just(side - 1), Just(side), Just(side + 1)],
            1 => prop_oneof![
                Just(u32::MAX),
                Just(u32::MAX - 1),
                Just(1u32 << 31),
                Just(MAX_FRAME_SIDE),
                Just(MAX_FRAME_SIDE + 1),
            ],
            1 => any::<u32>(),
        ]
        .boxed()
    } else {
        (0..side).boxed()
    }
}

/// A stroke of `points` points: inside the frame (3 in 4), or with
/// hostile coordinates.
fn stroke(points: std::ops::Range<usize>) -> impl Strategy<Value = vision::Stroke> {
    let (w, h) = STROKE_FRAME;
    (0..4usize, prop_oneof![3 => Just(false), 1 => Just(true)]).prop_flat_map(
        move |(c, hostile)| {
            proptest::collection::vec(
                (coordinate(w, hostile), coordinate(h, hostile)),
                points.clone(),
            )
            .prop_map(move |points| vision::Stroke {
                class: vision::ColourClass::ALL[c],
                points,
            })
        },
    )
}

/// A few short strokes, many tiny ones, a couple of long ones, or none.
fn strokes() -> impl Strategy<Value = Vec<vision::Stroke>> {
    prop_oneof![
        6 => proptest::collection::vec(stroke(0..20), 0..6),
        1 => proptest::collection::vec(stroke(0..3), 100..2000),
        1 => proptest::collection::vec(stroke(500..5000), 1..3),
        1 => Just(Vec::new()),
    ]
}

/// Learns colours from `strokes` on [`stroke_frame`] and checks: no panic,
/// bounded heap, and either `Ok` with a colour model for exactly the
/// stroked classes (and a segmenter that still segments), or an error
/// naming the first stroke with a point outside the frame, or a stroked
/// class with too few pixels.
fn check_strokes(strokes: &[vision::Stroke]) -> Result<bool, TestCaseError> {
    let (w, h) = STROKE_FRAME;
    let frame = stroke_frame();
    let mut seg = stroke_segmenter();
    let points: usize = strokes.iter().map(|s| s.points.len()).sum();
    let (result, peak) = measured(|| {
        catch_unwind(AssertUnwindSafe(|| {
            seg.learn_colours_from_strokes(&frame, strokes)
        }))
    });
    let result = result.map_err(|p| TestCaseError::fail(format!("panic: {}", panic_message(p))))?;
    fuzzkit::check_heap(MEMORY_PER_STROKE_BYTE, 8 * points, peak)?;
    let first_outside = strokes.iter().enumerate().find_map(|(k, s)| {
        s.points
            .iter()
            .find(|&&(x, y)| x >= w || y >= h)
            .map(|&p| (k, p))
    });
    let stroked =
        |c: vision::ColourClass| strokes.iter().any(|s| s.class == c && !s.points.is_empty());
    match result {
        Ok(()) => {
            prop_assert!(
                first_outside.is_none(),
                "accepted a point outside the frame: {first_outside:?}"
            );
            for c in vision::ColourClass::ALL {
                let model = seg.colour_models()[c as usize];
                prop_assert_eq!(model.is_some(), stroked(c), "class {}", c.name());
                if let Some(g) = model {
                    prop_assert!(g.mean.iter().all(|v| v.is_finite()) && g.samples >= 3);
                }
            }
            // The learned models classify without a panic.
            let labels = catch_unwind(AssertUnwindSafe(|| seg.segment(&frame))).map_err(|p| {
                TestCaseError::fail(format!("panic segmenting: {}", panic_message(p)))
            })?;
            if let Ok(s) = labels {
                prop_assert_eq!(s.labels.len(), (STROKE_LABELS.0 * STROKE_LABELS.1) as usize);
            }
            Ok(true)
        }
        Err(VisionError::Parameter { value, message, .. }) => {
            let Some((k, (x, y))) = first_outside else {
                return Err(TestCaseError::fail(format!(
                    "every point is inside, yet: {value}: {message}"
                )));
            };
            let want = format!("stroke {k} ({}) at ({x}, {y})", strokes[k].class.name());
            prop_assert_eq!(value, want);
            prop_assert!(!message.is_empty());
            Ok(false)
        }
        Err(VisionError::Segmentation(m)) => {
            prop_assert!(first_outside.is_none(), "{m}");
            prop_assert!(
                vision::ColourClass::ALL
                    .into_iter()
                    .any(|c| stroked(c) && m.contains(&format!("class {}", c.name()))),
                "names no stroked class: {m}"
            );
            Ok(false)
        }
        Err(other) => Err(TestCaseError::fail(format!(
            "not an error naming the stroke or class: {other:?}"
        ))),
    }
}

/// Random strokes (classes, points in and out of the frame, `u32::MAX`,
/// empty strokes, thousands of strokes) given to
/// `Segmenter::learn_colours_from_strokes`.
#[test]
fn fuzz_strokes() {
    // Every class stroked inside the frame is accepted.
    let base: Vec<vision::Stroke> = vision::ColourClass::ALL
        .into_iter()
        .enumerate()
        .map(|(k, class)| vision::Stroke {
            class,
            points: (0..12).map(|i| (k as u32 * 16 + i, 2 + 3 * i)).collect(),
        })
        .collect();
    assert!(
        check_strokes(&base).unwrap(),
        "the base strokes are refused"
    );
    fuzzkit::reset_worst_heap_ratio();
    let mut runner = TestRunner::new(fuzzkit::config(cases(), seed()));
    let accepted = Cell::new(0usize);
    let most = Cell::new(0usize);
    let result = runner.run(&strokes(), |s| {
        most.set(most.get().max(s.iter().map(|s| s.points.len()).sum()));
        accepted.set(accepted.get() + usize::from(check_strokes(&s)?));
        Ok(())
    });
    eprintln!(
        "strokes: {} stroke sets (up to {} points), {} accepted, peak heap <= {:.1} % of the bound (seed {})",
        cases(),
        most.get(),
        accepted.get(),
        100.0 * fuzzkit::worst_heap_ratio(),
        seed()
    );
    if let Err(e) = result {
        panic!("strokes: {e}");
    }
}

/// Reads a strokes file (`vision::batch::load_strokes`, the text behind
/// `posecloud segment --strokes`) and learns from what it gives.
fn check_strokes_file(bytes: &[u8], path: &Path) -> Result<bool, TestCaseError> {
    std::fs::write(path, bytes).unwrap();
    let (result, peak) = measured(|| catch_unwind(|| vision::batch::load_strokes(path)));
    let result = result.map_err(|p| TestCaseError::fail(format!("panic: {}", panic_message(p))))?;
    check_memory(bytes, peak)?;
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    match result {
        Ok(strokes) => {
            let strokes: Vec<vision::Stroke> = strokes.into_iter().map(|(_, s)| s).collect();
            check_strokes(&strokes)
        }
        Err(VisionError::Parameter {
            parameter, value, ..
        }) => {
            prop_assert_eq!(parameter, "strokes");
            let line = value
                .rsplit_once(':')
                .and_then(|(file, line)| file.ends_with(&name).then_some(line))
                .and_then(|l| l.parse::<usize>().ok());
            prop_assert!(
                line.is_some_and(|l| (1..=fuzzkit::line_count(bytes)).contains(&l)),
                "not FILE:LINE of this file: {value}"
            );
            Ok(false)
        }
        Err(e @ VisionError::Io { .. }) => {
            let s = e.to_string();
            prop_assert!(s.contains(&name), "error does not name the file: {s}");
            Ok(false)
        }
        Err(other) => Err(TestCaseError::fail(format!(
            "not an error naming the file and line: {other:?}"
        ))),
    }
}

#[test]
fn fuzz_strokes_file() {
    let base = "# FRAME CLASS x,y …\n\
                1 skin 2,2 3,4 5,6 7,8 9,10 11,12\n\
                1 hair 20,2 21,5 22,8 23,11 # dark\n\
                1 shirt 36,2 37,5 38,8 39,11 40,14\n\
                \n\
                2 trousers 50,30 52,33 54,36 56,39\n";
    let path = scratch_file("strokes");
    fuzz("strokes file", base.as_bytes().to_vec(), |b| {
        check_strokes_file(b, &path)
    });
    let _ = std::fs::remove_file(&path);
}

/// Found by `fuzz_camera_toml` (the written camera file, one number made
/// -1e308): the file was accepted, and projecting its own look_at point
/// gave (NaN, NaN, inf) — the rotation into the camera of a point 1e308 m
/// away overflows. Now refused: coordinates beyond ±1e6 m name the field.
#[test]
fn a_look_at_near_f64_max_is_refused_not_projected_to_nan() {
    let text = "width = 640\nheight = 480\nfx = 554.0\nfy = 554.0\ncx = 320.0\ncy = 240.0\n\
                position = [0.2, 1.0, 3.5]\nlook_at = [0.2, 0.9, -1e308]\nup = [0.0, 1.0, 0.0]\n";
    if let Err(e) = check_camera(text.as_bytes()) {
        panic!("{e}");
    }
    match CameraFile::parse(text, "bug.toml") {
        Err(VisionError::CameraFile { field, .. }) => assert_eq!(field, "look_at"),
        other => panic!("expected a look_at error, got {other:?}"),
    }
}

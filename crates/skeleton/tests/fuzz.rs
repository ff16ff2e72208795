//! Fuzz harness (issue 14): property tests that mutate the real asset files
//! — truncation, line deletion and duplication, token swaps, non-finite and
//! huge numbers, hostile `Frames:` counts, deep nesting, byte-order marks,
//! CRLF, invalid UTF-8, random bytes — and check every parse:
//!
//! * no panic (`catch_unwind` around the parser and everything after it);
//! * bounded memory: the peak heap growth of the parsing thread stays below
//!   `MEMORY_PER_INPUT_BYTE × input bytes + 1 MiB` (a counting global
//!   allocator), so a declared size never allocates beyond the data present;
//! * either `Ok` with finite results (forward kinematics of every frame /
//!   of the rest pose, total mass), a BVH export that parses again with the
//!   same joints (URDF: where BVH can express the robot) — or an
//!   error of the file's kind that names the file and a line in range (BVH,
//!   URDF with a line) or an element (URDF).
//!
//! `FUZZ_CASES=N` sets the number of cases per input file (default 1,000:
//! 4,000 in all, a few seconds in the dev profile); `FUZZ_SEED=S` changes
//! the fixed seed. For example
//! `FUZZ_CASES=50000 cargo test --release -p skeleton --test fuzz`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use skeleton::{Bvh, SkeletonError};

// ---- a counting allocator: per-thread live bytes and their peak ----------

struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
    /// Largest peak heap growth seen on this thread, as a fraction of the
    /// bound.
    static WORST_RATIO: Cell<f64> = const { Cell::new(0.0) };
}

fn account(delta: isize) {
    let _ = LIVE.try_with(|live| {
        let v = live.get() + delta;
        live.set(v);
        let _ = PEAK.try_with(|p| {
            if v > p.get() {
                p.set(v)
            }
        });
    });
}

// SAFETY: every call is forwarded to `System` unchanged; the bookkeeping
// only touches const-initialised thread-locals (no allocation, no unwinding).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            account(layout.size() as isize);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            account(layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        account(-(layout.size() as isize));
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            account(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns its result with the peak heap growth of this thread.
fn measured<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let out = f();
    let peak = PEAK.with(Cell::get);
    (out, (peak - base).max(0) as usize)
}

/// Heap bytes a parse may use per input byte (measured at most ~40 on the
/// assets: tokens, lines, the urdf-rs element tree), plus 1 MiB.
const MEMORY_PER_INPUT_BYTE: usize = 200;

// ---- inputs ----------------------------------------------------------------

fn asset(path: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../assets/{path}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// A clip cut down to its hierarchy and first `frames` frames, for speed.
fn short_clip(path: &str, frames: usize) -> String {
    let mut out = String::new();
    let mut kept = None;
    for line in asset(path).lines() {
        if line.starts_with("Frames:") {
            out.push_str(&format!("Frames: {frames}\n"));
            continue;
        }
        if line.starts_with("Frame Time") {
            kept = Some(0);
        } else if let Some(k) = kept.as_mut() {
            if *k == frames {
                break;
            }
            *k += 1;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000)
}

fn seed() -> u64 {
    std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(14)
}

// ---- mutations ---------------------------------------------------------------

const HOSTILE_NUMBERS: &[&str] = &[
    "nan",
    "NaN",
    "inf",
    "-inf",
    "infinity",
    "1e308",
    "-1e308",
    "1e309",
    "1e999",
    "-1e999",
    "1e9",
    "1000000001",
    "-0",
    "4.9e-324",
    "1e-320",
    "99999999999999999999",
    "18446744073709551615",
    "4294967296",
    "-1",
    "0",
    "",
    "1e",
    "--1",
    "0x10",
    "1_0",
    ".5",
    "5.",
];

const HOSTILE_COUNTS: &[&str] = &[
    "1000000000",
    "18446744073709551615",
    "99999999999999999999",
    "0",
    "1",
    "2",
    "4",
    "-3",
    "1e3",
    "",
];

#[derive(Clone, Debug)]
enum Mutation {
    Truncate(Index),
    DeleteLine(Index),
    DuplicateLine(Index),
    SwapTokens(Index, Index),
    Number(Index, usize),
    Count(usize),
    /// Nesting `depth` levels deep, opened at one line and closed at another
    /// (for BVH, optionally around an End Site so that the file stays valid).
    Nest {
        open: Index,
        close: Index,
        depth: usize,
        around_end_site: bool,
    },
    Bom(Index),
    Crlf,
    InvalidUtf8(Index, u8),
    Byte(Index, u8),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        2 => any::<Index>().prop_map(Mutation::Truncate),
        2 => any::<Index>().prop_map(Mutation::DeleteLine),
        2 => any::<Index>().prop_map(Mutation::DuplicateLine),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::SwapTokens(a, b)),
        4 => (any::<Index>(), 0..HOSTILE_NUMBERS.len()).prop_map(|(a, k)| Mutation::Number(a, k)),
        1 => (0..HOSTILE_COUNTS.len()).prop_map(Mutation::Count),
        1 => (any::<Index>(), any::<Index>(), prop_oneof![1usize..20, 100usize..3000, 9000usize..21000], any::<bool>())
            .prop_map(|(open, close, depth, around_end_site)| Mutation::Nest { open, close, depth, around_end_site }),
        1 => any::<Index>().prop_map(Mutation::Bom),
        1 => Just(Mutation::Crlf),
        1 => (any::<Index>(), prop_oneof![Just(0xffu8), Just(0xc3), Just(0x80), Just(0xed)])
            .prop_map(|(a, b)| Mutation::InvalidUtf8(a, b)),
        2 => (any::<Index>(), any::<u8>()).prop_map(|(a, b)| Mutation::Byte(a, b)),
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

fn apply(mut b: Vec<u8>, m: &Mutation, bvh: bool) -> Vec<u8> {
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
                if p != q {
                    let (tp, tq) = (b[p.0..p.1].to_vec(), b[q.0..q.1].to_vec());
                    replace(&mut b, q, &tp);
                    replace(&mut b, p, &tq);
                }
            }
        }
        Mutation::Number(i, k) => {
            let nums: Vec<_> = runs(&b, |c| c.is_ascii_digit() || b".eE+-".contains(&c))
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
        Mutation::Count(k) => {
            if let Some(at) = b.windows(7).position(|w| w == b"Frames:") {
                let end = b[at..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |e| at + e);
                replace(
                    &mut b,
                    (at + 7, end),
                    format!(" {}", HOSTILE_COUNTS[*k]).as_bytes(),
                );
            }
        }
        Mutation::Nest {
            open,
            close,
            depth,
            around_end_site,
        } => {
            let mut l = lines_of(&b);
            let (opener, closer): (Vec<u8>, Vec<u8>) = if bvh {
                let o: String = (0..*depth)
                    .map(|k| format!("JOINT Nest{k}\n{{\nOFFSET 0 0.5 0\nCHANNELS 0\n"))
                    .collect();
                (o.into_bytes(), "}\n".repeat(*depth).into_bytes())
            } else {
                (
                    "<n>".repeat(*depth).into_bytes(),
                    "</n>".repeat(*depth).into_bytes(),
                )
            };
            let ends: Vec<usize> = (0..l.len())
                .filter(|&k| String::from_utf8_lossy(&l[k]).trim() == "End Site")
                .collect();
            let (a, c) = if bvh && *around_end_site && !ends.is_empty() {
                let a = ends[open.index(ends.len())];
                (a, (a + 4).min(l.len()))
            } else {
                let a = open.index(l.len() + 1);
                (a, a.max(close.index(l.len() + 1)))
            };
            l.insert(c, closer);
            l.insert(a, opener);
            b = l.join(&b'\n');
        }
        Mutation::Bom(i) => {
            // Mostly at the start, where it is legal; sometimes anywhere.
            let at = if i.index(4) == 0 {
                i.index(b.len() + 1)
            } else {
                0
            };
            b.splice(at..at, "\u{feff}".bytes());
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
        Mutation::InvalidUtf8(i, byte) => {
            let at = i.index(b.len() + 1);
            b.insert(at, *byte);
        }
        Mutation::Byte(i, byte) => {
            if !b.is_empty() {
                let at = i.index(b.len());
                b[at] = *byte;
            }
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

fn line_count(b: &[u8]) -> usize {
    b.iter().filter(|&&c| c == b'\n').count() + 1
}

fn check_memory(bytes: &[u8], peak: usize) -> Result<(), TestCaseError> {
    let bound = MEMORY_PER_INPUT_BYTE * bytes.len() + (1 << 20);
    let ratio = peak as f64 / bound as f64;
    WORST_RATIO.with(|w| w.set(w.get().max(ratio)));
    prop_assert!(
        peak <= bound,
        "parsing {} bytes allocated {peak} bytes at peak (bound {bound})",
        bytes.len()
    );
    Ok(())
}

fn finite(w: &[skeleton::nalgebra::Isometry3<f64>]) -> bool {
    w.iter().all(|t| {
        t.translation.vector.iter().all(|x| x.is_finite())
            && t.rotation.coords.iter().all(|x| x.is_finite())
    })
}

fn check_bvh(bytes: &[u8]) -> Result<(), TestCaseError> {
    let (result, peak) = measured(|| catch_unwind(|| Bvh::parse_bytes(bytes, "fuzz.bvh")));
    let result = result.map_err(|p| TestCaseError::fail(format!("panic: {}", panic_message(p))))?;
    check_memory(bytes, peak)?;
    match result {
        Ok(clip) => {
            let after = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
                for f in 0..clip.frames.len() {
                    let w = clip.forward_kinematics(f).map_err(|e| e.to_string())?;
                    if !finite(&w) {
                        return Err(format!("frame {f}: non-finite FK"));
                    }
                }
                if !clip.skeleton.total_mass().is_finite() {
                    return Err("non-finite total mass".into());
                }
                let text = clip.to_bvh_string().map_err(|e| e.to_string())?;
                let again = Bvh::parse(&text, "export.bvh").map_err(|e| e.to_string())?;
                if again.skeleton.len() != clip.skeleton.len() {
                    return Err("export changed the joint count".into());
                }
                Ok(())
            }))
            .map_err(|p| TestCaseError::fail(format!("panic after parse: {}", panic_message(p))))?;
            after.map_err(|e| TestCaseError::fail(format!("accepted file gives: {e}")))
        }
        Err(SkeletonError::Bvh {
            file,
            line,
            message,
        }) => {
            prop_assert_eq!(file, "fuzz.bvh");
            prop_assert!(
                line >= 1 && line <= line_count(bytes) + 1,
                "line {line} of {}: {message}",
                line_count(bytes)
            );
            prop_assert!(!message.is_empty());
            Ok(())
        }
        Err(other) => Err(TestCaseError::fail(format!(
            "not a BVH error with a line: {other:?}"
        ))),
    }
}

fn check_urdf(bytes: &[u8]) -> Result<(), TestCaseError> {
    let (result, peak) =
        measured(|| catch_unwind(|| skeleton::urdf::parse_urdf_bytes(bytes, "fuzz.urdf")));
    let result = result.map_err(|p| TestCaseError::fail(format!("panic: {}", panic_message(p))))?;
    check_memory(bytes, peak)?;
    match result {
        Ok(s) => {
            let w = s
                .forward_kinematics(&s.rest_pose())
                .map_err(|e| TestCaseError::fail(format!("accepted file gives: {e}")))?;
            prop_assert!(finite(&w));
            prop_assert!(s.total_mass().is_finite());
            // Written as BVH (where it can be: no prismatic joints, one-word
            // names), it must read back with the same joints.
            let written = catch_unwind(AssertUnwindSafe(|| {
                let channels = skeleton::bvh::default_channels(&s).ok()?;
                let frames = skeleton::PoseBatch::rest(&s, 1);
                let text = skeleton::bvh::write_bvh(&s, &channels, 0.01, &frames).ok()?;
                Some(Bvh::parse(&text, "export.bvh").map(|b| b.skeleton.len()))
            }))
            .map_err(|p| TestCaseError::fail(format!("panic in export: {}", panic_message(p))))?;
            if let Some(again) = written {
                let again =
                    again.map_err(|e| TestCaseError::fail(format!("export unreadable: {e}")))?;
                prop_assert_eq!(again, s.len());
            }
            Ok(())
        }
        Err(SkeletonError::UrdfAt {
            file,
            line,
            element,
            message,
        }) => {
            prop_assert_eq!(file, "fuzz.urdf");
            prop_assert!(
                line >= 1 && line <= line_count(bytes) + 1,
                "line {line}: {element}: {message}"
            );
            Ok(())
        }
        Err(SkeletonError::Urdf { file, element, .. }) => {
            prop_assert_eq!(file, "fuzz.urdf");
            prop_assert!(!element.is_empty());
            Ok(())
        }
        Err(other) => Err(TestCaseError::fail(format!(
            "not a URDF error naming the file: {other:?}"
        ))),
    }
}

fn fuzz(base: &str, bvh: bool) {
    // The unmutated file must parse: otherwise every case is a trivial error.
    let base = base.as_bytes().to_vec();
    if bvh {
        Bvh::parse_bytes(&base, "base.bvh").unwrap();
    } else {
        skeleton::urdf::parse_urdf_bytes(&base, "base.urdf").unwrap();
    }
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
            b = apply(b, m, bvh);
        }
        if bvh {
            check_bvh(&b)?;
            accepted.set(accepted.get() + Bvh::parse_bytes(&b, "f").is_ok() as usize);
        } else {
            check_urdf(&b)?;
            accepted
                .set(accepted.get() + skeleton::urdf::parse_urdf_bytes(&b, "f").is_ok() as usize);
        }
        Ok(())
    });
    eprintln!(
        "{} mutated inputs, {} accepted, peak heap <= {:.0} % of the bound (seed {})",
        cases(),
        accepted.get(),
        100.0 * WORST_RATIO.with(Cell::get),
        seed()
    );
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn fuzz_walk_bvh() {
    fuzz(&short_clip("motions/cmu_131_01_walk.bvh", 3), true);
}

#[test]
fn fuzz_hop_bvh() {
    fuzz(&short_clip("motions/cmu_131_03_hop.bvh", 2), true);
}

#[test]
fn fuzz_arm6_urdf() {
    fuzz(&asset("robots/arm6.urdf"), false);
}

#[test]
fn fuzz_arm7_urdf() {
    fuzz(&asset("robots/arm7.urdf"), false);
}

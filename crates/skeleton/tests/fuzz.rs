//! Fuzz harness (issue 14): property tests that mutate the real asset files
//! — truncation, line deletion and duplication, token swaps, non-finite and
//! huge numbers, hostile `Frames:` counts, deep nesting, byte-order marks,
//! CRLF, invalid UTF-8, random bytes (the generic ones from `fuzzkit`, the
//! `Frames:` counts and the nesting here) — and check every parse:
//!
//! * no panic (`catch_unwind` around the parser and everything after it);
//! * bounded memory: the peak heap growth of the parsing thread stays below
//!   `MEMORY_PER_INPUT_BYTE × input bytes + 1 MiB` (`fuzzkit`'s counting
//!   global allocator), so a declared size never allocates beyond the data
//!   present;
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

use std::panic::{AssertUnwindSafe, catch_unwind};

use fuzzkit::{HOSTILE_COUNTS, TextMutation, line_count, lines_of, measured, panic_message};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;
use skeleton::{Bvh, SkeletonError};

#[global_allocator]
static ALLOCATOR: fuzzkit::Counting = fuzzkit::Counting;

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

/// Cases per input file (`FUZZ_CASES` overrides).
fn cases() -> u32 {
    fuzzkit::cases(1000)
}

/// The fixed seed (`FUZZ_SEED` overrides).
fn seed() -> u64 {
    fuzzkit::seed(14)
}

// ---- mutations ---------------------------------------------------------------

#[derive(Clone, Debug)]
enum Mutation {
    /// Truncation, line deletion and duplication, token swaps, hostile
    /// numbers, random and invalid-UTF-8 bytes, byte-order marks, CRLF.
    Text(TextMutation),
    /// A hostile `Frames:` count.
    Count(usize),
    /// Nesting `depth` levels deep, opened at one line and closed at another
    /// (for BVH, optionally around an End Site so that the file stays valid).
    Nest {
        open: Index,
        close: Index,
        depth: usize,
        around_end_site: bool,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        17 => fuzzkit::text_mutation().prop_map(Mutation::Text),
        1 => (0..HOSTILE_COUNTS.len()).prop_map(Mutation::Count),
        1 => (any::<Index>(), any::<Index>(), prop_oneof![1usize..20, 100usize..3000, 9000usize..21000], any::<bool>())
            .prop_map(|(open, close, depth, around_end_site)| Mutation::Nest { open, close, depth, around_end_site }),
    ]
}

fn apply(mut b: Vec<u8>, m: &Mutation, bvh: bool) -> Vec<u8> {
    match m {
        Mutation::Text(m) => b = fuzzkit::apply(b, m),
        Mutation::Count(k) => {
            if let Some(at) = b.windows(7).position(|w| w == b"Frames:") {
                let end = b[at..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |e| at + e);
                fuzzkit::replace(
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
    }
    b
}

// ---- checks --------------------------------------------------------------------

fn check_memory(bytes: &[u8], peak: usize) -> Result<(), TestCaseError> {
    fuzzkit::check_heap(MEMORY_PER_INPUT_BYTE, bytes.len(), peak)
}

/// An error with a place names the fuzzed `file` and a line within it (or
/// just past its end); `what` is the rest of the error, for the failure.
fn check_error_place(
    file: &str,
    expected: &str,
    line: usize,
    bytes: &[u8],
    what: &str,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(file, expected);
    prop_assert!(
        line >= 1 && line <= line_count(bytes) + 1,
        "line {line} of {}: {what}",
        line_count(bytes)
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
            check_error_place(&file, "fuzz.bvh", line, bytes, &message)?;
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
        measured(|| catch_unwind(|| skeleton::parse_urdf_bytes(bytes, "fuzz.urdf")));
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
                let channels = skeleton::default_channels(&s).ok()?;
                let frames = skeleton::PoseBatch::rest(&s, 1);
                let text = skeleton::write_bvh(&s, &channels, 0.01, &frames).ok()?;
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
        }) => check_error_place(
            &file,
            "fuzz.urdf",
            line,
            bytes,
            &format!("{element}: {message}"),
        ),
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
    let check = |b: &[u8]| -> Result<bool, TestCaseError> {
        if bvh {
            check_bvh(b)?;
            Ok(Bvh::parse_bytes(b, "f").is_ok())
        } else {
            check_urdf(b)?;
            Ok(skeleton::parse_urdf_bytes(b, "f").is_ok())
        }
    };
    let name = if bvh { "bvh" } else { "urdf" };
    fuzzkit::fuzz_mutations(
        name,
        base.as_bytes(),
        (cases(), seed()),
        mutation(),
        |b, m| apply(b, m, bvh),
        check,
    );
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

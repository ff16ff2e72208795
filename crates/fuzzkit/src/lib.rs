//! The fuzz toolkit of posecloud's test suites (a dev-dependency only,
//! never published). The fuzz tests of `skeleton` (BVH, URDF), `vision`
//! (Y4M, camera files, strokes) and the app (settings, scripts, the flags
//! of `posecloud track`/`segment`/`render`) mutate valid inputs and check
//! that every parse ends without a panic, within a memory bound, in either
//! a consistent value or an error naming the input. What they share is
//! here:
//!
//! * [`Counting`], a global allocator that forwards to the system one and
//!   counts the live heap bytes of each thread and their peak; every test
//!   binary that bounds memory declares
//!   `#[global_allocator] static A: fuzzkit::Counting = fuzzkit::Counting;`
//!   and wraps the call under test in [`measured`], which returns the
//!   peak heap growth of the calling thread while it ran (allocations of
//!   other threads are not counted). [`check_heap`] compares a peak with
//!   `per_input_byte × input bytes + 1 MiB` and keeps the thread's worst
//!   ratio for the summary line ([`worst_heap_ratio`]).
//! * [`cases`] / [`seed`] / [`config`]: the number of cases and the fixed
//!   seed, from `FUZZ_CASES` and `FUZZ_SEED` when set (each test keeps its
//!   own defaults), so a long run is
//!   `FUZZ_CASES=50000 cargo test --release -p skeleton --test fuzz`.
//! * [`HOSTILE_NUMBERS`] (non-finite, huge, tiny, negative, malformed
//!   numbers) and [`HOSTILE_COUNTS`] (declared sizes).
//! * [`TextMutation`], the mutations that make sense for any text format —
//!   truncation, deleting or duplicating a line, swapping two tokens,
//!   replacing a number by a hostile one, overwriting or inserting random
//!   bytes, a long line, a byte-order mark, CRLF line ends, invalid UTF-8 —
//!   as a proptest strategy ([`text_mutation`]) and [`apply`]. A format's
//!   own mutations (BVH nesting, Y4M header fields, …) live in its test and
//!   are mixed in with `prop_oneof!`; the helpers [`lines_of`], [`runs`]
//!   and [`replace`] are public for them.
//! * [`fuzz_mutations`]: the loop of a mutation fuzz test — mutated
//!   copies of a valid input through a check, with a summary line.
//! * [`child::run`] (Unix): runs a command with a wall-clock timeout and a
//!   resident-set limit, both of which kill its whole process group, and
//!   returns its exit status, output and peak RSS — for fuzzing a binary's
//!   command line.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngSeed, TestCaseError};

#[cfg(unix)]
pub mod child;

// ---- the counting allocator ------------------------------------------------

/// A global allocator that counts each thread's live heap bytes and their
/// peak (see [`measured`]); the allocation itself is the system's.
pub struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
    /// Largest `peak / bound` that [`check_heap`] saw on this thread.
    static WORST_RATIO: Cell<f64> = const { Cell::new(0.0) };
}

fn account(delta: isize) {
    let _ = LIVE.try_with(|live| {
        let v = live.get() + delta;
        live.set(v);
        let _ = PEAK.try_with(|p| {
            if v > p.get() {
                p.set(v);
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

/// Runs `f` and returns its result with the peak heap growth (bytes) of
/// this thread while it ran; allocations of other threads are not counted.
/// Meaningful only in a binary whose global allocator is [`Counting`]
/// (elsewhere the peak is 0).
pub fn measured<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let out = f();
    let peak = PEAK.with(Cell::get);
    (out, (peak - base).max(0) as usize)
}

/// The heap bound of an input: `per_input_byte × input_len + 1 MiB`.
pub fn heap_bound(per_input_byte: usize, input_len: usize) -> usize {
    per_input_byte
        .saturating_mul(input_len)
        .saturating_add(1 << 20)
}

/// Fails unless `peak ≤ heap_bound(per_input_byte, input_len)`; records
/// the ratio for [`worst_heap_ratio`].
///
/// # Errors
/// A test-case failure naming the input size, the peak and the bound.
pub fn check_heap(
    per_input_byte: usize,
    input_len: usize,
    peak: usize,
) -> Result<(), TestCaseError> {
    let bound = heap_bound(per_input_byte, input_len);
    let ratio = peak as f64 / bound as f64;
    WORST_RATIO.with(|w| w.set(w.get().max(ratio)));
    if peak > bound {
        return Err(TestCaseError::fail(format!(
            "an input of {input_len} bytes allocated {peak} bytes at peak (bound {bound})"
        )));
    }
    Ok(())
}

/// The largest `peak / bound` [`check_heap`] saw on this thread since the
/// last [`reset_worst_heap_ratio`].
pub fn worst_heap_ratio() -> f64 {
    WORST_RATIO.with(Cell::get)
}

pub fn reset_worst_heap_ratio() {
    WORST_RATIO.with(|w| w.set(0.0));
}

// ---- case counts and seeds ---------------------------------------------------

/// `FUZZ_CASES` when it is set to a number, else `default`.
pub fn cases(default: u32) -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(default)
}

/// `FUZZ_SEED` when it is set to a number, else `default`.
pub fn seed(default: u64) -> u64 {
    std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(default)
}

/// A proptest configuration of [`cases`]`(default_cases)` cases from the
/// fixed [`seed`]`(default_seed)`, with no failure files.
pub fn config(default_cases: u32, default_seed: u64) -> Config {
    Config {
        cases: cases(default_cases),
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed(default_seed)),
        ..Config::default()
    }
}

/// The loop every mutation fuzz test runs: checks that `base` itself is
/// accepted (otherwise every case is a trivial error), then runs
/// [`cases`]`(default_cases)` inputs, each `base` with a list of one to
/// three mutations drawn by `mutation` and applied in turn by `apply`,
/// through `check` (whether the input was accepted; a [`TestCaseError`]
/// fails the case). Prints how many were accepted and the worst heap ratio,
/// and panics with `name` and proptest's minimal failing case.
pub fn fuzz_mutations<M: std::fmt::Debug>(
    name: &str,
    base: &[u8],
    (default_cases, default_seed): (u32, u64),
    mutation: impl Strategy<Value = M>,
    apply: impl Fn(Vec<u8>, &M) -> Vec<u8>,
    check: impl Fn(&[u8]) -> Result<bool, TestCaseError>,
) {
    assert!(check(base).unwrap(), "{name}: the base input is refused");
    reset_worst_heap_ratio();
    let mut runner = proptest::test_runner::TestRunner::new(config(default_cases, default_seed));
    let accepted = Cell::new(0usize);
    let result = runner.run(&proptest::collection::vec(mutation, 1..4), |mutations| {
        let mut b = base.to_vec();
        for m in &mutations {
            b = apply(b, m);
        }
        accepted.set(accepted.get() + usize::from(check(&b)?));
        Ok(())
    });
    eprintln!(
        "{name}: {} mutated inputs, {} accepted, peak heap <= {:.1} % of the bound (seed {})",
        cases(default_cases),
        accepted.get(),
        100.0 * worst_heap_ratio(),
        seed(default_seed)
    );
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
}

/// The message of a caught panic.
pub fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "<non-string panic>".into())
}

// ---- hostile values ------------------------------------------------------------

/// Numbers (and would-be numbers) that break careless parsers and
/// arithmetic: non-finite, beyond `f64`, subnormal, at and past the integer
/// limits, negative where counts are expected, and malformed.
pub const HOSTILE_NUMBERS: &[&str] = &[
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
    "10000000000",
    "-0",
    "0",
    "-1",
    "4.9e-324",
    "1e-320",
    "8192",
    "8193",
    "65535",
    "65536",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999",
    "",
    "1e",
    "--1",
    "0x10",
    "1_0",
    ".5",
    "5.",
    "+3",
];

/// Declared counts (frames, sizes): huge, zero, small, negative, malformed.
pub const HOSTILE_COUNTS: &[&str] = &[
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

// ---- generic text mutations ------------------------------------------------------

/// A mutation of any text (or text-like) input; see [`apply`].
#[derive(Clone, Debug)]
pub enum TextMutation {
    /// Cut the input at a byte.
    Truncate(Index),
    DeleteLine(Index),
    DuplicateLine(Index),
    /// Swap two whitespace-separated tokens.
    SwapTokens(Index, Index),
    /// Replace a number of the text by [`HOSTILE_NUMBERS`]`[k]`.
    Number(Index, usize),
    /// Overwrite one byte.
    Byte(Index, u8),
    /// Insert random bytes.
    Insert(Index, Vec<u8>),
    /// Insert `n` bytes of one letter with no newline (a line with no end).
    LongLine(Index, usize),
    /// A UTF-8 byte-order mark, mostly at the start (where it is legal).
    Bom(Index),
    /// Every `\n` becomes `\r\n`.
    Crlf,
    /// Insert a byte that is never valid UTF-8 there.
    InvalidUtf8(Index, u8),
}

/// The generic mutations, weighted towards the structural ones (numbers
/// most).
pub fn text_mutation() -> impl Strategy<Value = TextMutation> {
    prop_oneof![
        2 => any::<Index>().prop_map(TextMutation::Truncate),
        2 => any::<Index>().prop_map(TextMutation::DeleteLine),
        2 => any::<Index>().prop_map(TextMutation::DuplicateLine),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| TextMutation::SwapTokens(a, b)),
        4 => (any::<Index>(), 0..HOSTILE_NUMBERS.len()).prop_map(|(a, k)| TextMutation::Number(a, k)),
        2 => (any::<Index>(), any::<u8>()).prop_map(|(a, b)| TextMutation::Byte(a, b)),
        1 => (any::<Index>(), proptest::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(a, b)| TextMutation::Insert(a, b)),
        1 => (any::<Index>(), prop_oneof![1usize..100, 1000usize..5000])
            .prop_map(|(a, n)| TextMutation::LongLine(a, n)),
        1 => any::<Index>().prop_map(TextMutation::Bom),
        1 => Just(TextMutation::Crlf),
        1 => (any::<Index>(), prop_oneof![Just(0xffu8), Just(0xc3), Just(0x80), Just(0xed)])
            .prop_map(|(a, b)| TextMutation::InvalidUtf8(a, b)),
    ]
}

/// A mutation of a text input of a format with hostile tokens and lines of
/// its own: a [`TextMutation`], or the harness's `k`-th hostile token or
/// line at the input's token or line `i` (where and how is the harness's
/// to say when it applies it).
#[derive(Clone, Debug)]
pub enum HostileMutation {
    Text(TextMutation),
    Token(Index, usize),
    Line(Index, usize),
}

/// [`HostileMutation`]s weighted `[text, token, line]`, over `tokens`
/// hostile tokens and `lines` hostile lines.
pub fn hostile_mutation(
    [text, token, line]: [u32; 3],
    tokens: usize,
    lines: usize,
) -> impl Strategy<Value = HostileMutation> {
    prop_oneof![
        text => text_mutation().prop_map(HostileMutation::Text),
        token => (any::<Index>(), 0..tokens).prop_map(|(i, k)| HostileMutation::Token(i, k)),
        line => (any::<Index>(), 0..lines).prop_map(|(i, k)| HostileMutation::Line(i, k)),
    ]
}

/// The lines of `b` (split at `\n`, which is dropped).
pub fn lines_of(b: &[u8]) -> Vec<Vec<u8>> {
    b.split(|&c| c == b'\n').map(<[u8]>::to_vec).collect()
}

/// The number of lines of `b` (newlines + 1).
pub fn line_count(b: &[u8]) -> usize {
    b.iter().filter(|&&c| c == b'\n').count() + 1
}

/// Byte ranges `(start, end)` of the maximal runs of bytes matching `f`.
pub fn runs(b: &[u8], f: impl Fn(u8) -> bool) -> Vec<(usize, usize)> {
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

/// Replaces the bytes `s..e` of `b` by `with`.
pub fn replace(b: &mut Vec<u8>, (s, e): (usize, usize), with: &[u8]) {
    b.splice(s..e, with.iter().copied());
}

/// Replaces the run `i` picks of `runs` (byte ranges of `b`, e.g. from
/// [`runs`]) by `with`; nothing when there is none.
pub fn replace_one_of(b: &mut Vec<u8>, runs: &[(usize, usize)], i: Index, with: &[u8]) {
    if !runs.is_empty() {
        replace(b, runs[i.index(runs.len())], with);
    }
}

/// The byte ranges of the numbers of `b`: runs of digits, `.`, `e`, `E`,
/// `+`, `-` holding at least one digit.
pub fn numbers(b: &[u8]) -> Vec<(usize, usize)> {
    runs(b, |c| c.is_ascii_digit() || b".eE+-".contains(&c))
        .into_iter()
        .filter(|&(s, e)| b[s..e].iter().any(u8::is_ascii_digit))
        .collect()
}

/// `b` after the mutation `m` (a mutation that finds nothing to act on,
/// e.g. a number in a text without one, leaves `b` as it is).
pub fn apply(mut b: Vec<u8>, m: &TextMutation) -> Vec<u8> {
    match m {
        TextMutation::Truncate(i) => b.truncate(i.index(b.len() + 1)),
        TextMutation::DeleteLine(i) => {
            let mut l = lines_of(&b);
            l.remove(i.index(l.len()));
            b = l.join(&b'\n');
        }
        TextMutation::DuplicateLine(i) => {
            let mut l = lines_of(&b);
            let k = i.index(l.len());
            l.insert(k, l[k].clone());
            b = l.join(&b'\n');
        }
        TextMutation::SwapTokens(x, y) => {
            let t = runs(&b, |c| !c.is_ascii_whitespace());
            if t.len() >= 2 {
                let (mut p, mut q) = (t[x.index(t.len())], t[y.index(t.len())]);
                if p.0 > q.0 {
                    std::mem::swap(&mut p, &mut q);
                }
                if p != q {
                    let (tp, tq) = (b[p.0..p.1].to_vec(), b[q.0..q.1].to_vec());
                    // The later one first: the earlier range stays valid.
                    replace(&mut b, q, &tp);
                    replace(&mut b, p, &tq);
                }
            }
        }
        TextMutation::Number(i, k) => {
            let nums = numbers(&b);
            if !nums.is_empty() {
                replace(
                    &mut b,
                    nums[i.index(nums.len())],
                    HOSTILE_NUMBERS[*k % HOSTILE_NUMBERS.len()].as_bytes(),
                );
            }
        }
        TextMutation::Byte(i, byte) => {
            if !b.is_empty() {
                let at = i.index(b.len());
                b[at] = *byte;
            }
        }
        TextMutation::Insert(i, bytes) => {
            let at = i.index(b.len() + 1);
            b.splice(at..at, bytes.iter().copied());
        }
        TextMutation::LongLine(i, n) => {
            let at = i.index(b.len() + 1);
            b.splice(at..at, std::iter::repeat_n(b'A', *n));
        }
        TextMutation::Bom(i) => {
            // Mostly at the start, where it is legal; sometimes anywhere.
            let at = if i.index(4) == 0 {
                i.index(b.len() + 1)
            } else {
                0
            };
            b.splice(at..at, "\u{feff}".bytes());
        }
        TextMutation::Crlf => {
            let mut out = Vec::with_capacity(b.len() * 2);
            for &c in &b {
                if c == b'\n' {
                    out.push(b'\r');
                }
                out.push(c);
            }
            b = out;
        }
        TextMutation::InvalidUtf8(i, byte) => {
            let at = i.index(b.len() + 1);
            b.insert(at, *byte);
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    #[test]
    fn measured_sees_this_threads_peak() {
        // Without `Counting` as the global allocator (this test binary has
        // the system one) the peak is 0: only the plumbing is checked.
        let (v, peak) = measured(|| vec![0u8; 1000].len());
        assert_eq!(v, 1000);
        assert!(peak == 0 || peak >= 1000);
    }

    #[test]
    fn runs_and_numbers() {
        assert_eq!(runs(b"ab  cd", |c| c != b' '), vec![(0, 2), (4, 6)]);
        assert_eq!(numbers(b"x 1.5e3 - y -2"), vec![(2, 7), (12, 14)]);
    }

    #[test]
    fn mutations_do_what_they_say() {
        let idx = |k: usize| {
            // An `Index` that picks `k` of 1000 (`Index` maps a u64 onto
            // the range).
            let mut runner = TestRunner::deterministic();
            loop {
                let i = any::<Index>().new_tree(&mut runner).unwrap().current();
                if i.index(1000) == k {
                    return i;
                }
            }
        };
        let text = b"a 1\nb 2\n".to_vec();
        assert_eq!(
            apply(text.clone(), &TextMutation::Crlf),
            b"a 1\r\nb 2\r\n".to_vec()
        );
        let m = apply(text.clone(), &TextMutation::Number(idx(0), 0));
        assert_eq!(m, b"a nan\nb 2\n".to_vec());
        let m = apply(text.clone(), &TextMutation::SwapTokens(idx(0), idx(999)));
        assert_eq!(m, b"2 1\nb a\n".to_vec());
        assert_eq!(apply(Vec::new(), &TextMutation::Byte(idx(3), 7)), b"");
    }

    #[test]
    fn env_defaults() {
        if std::env::var_os("FUZZ_CASES").is_none() {
            assert_eq!(cases(17), 17);
        }
        if std::env::var_os("FUZZ_SEED").is_none() {
            assert_eq!(seed(5), 5);
        }
        assert!(check_heap(2, 10, 1 << 20).is_ok());
        assert!(check_heap(2, 10, (1 << 20) + 21).is_err());
        assert!(worst_heap_ratio() > 1.0);
        reset_worst_heap_ratio();
        assert_eq!(worst_heap_ratio(), 0.0);
    }
}

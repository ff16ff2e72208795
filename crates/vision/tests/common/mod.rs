//! Shared by the test binaries that declare `mod common;`: the counting global
//! allocator and [`measured`] (from `fuzzkit`, re-exported for the tests
//! that bound memory), the process's peak resident set, scratch
//! folders, and running one test of the binary in a child process.

#[allow(unused_imports)]
pub(crate) use fuzzkit::{Counting, measured};

/// The process's peak resident set (`VmHWM`), in KiB, where /proc has it.
#[allow(dead_code)]
pub(crate) fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// A fresh scratch folder for one test.
#[allow(dead_code)]
pub(crate) fn scratch(binary: &str, name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("vision-{binary}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the test `test` of this test binary in a child process with `env`
/// added, and returns the child's stdout; a failed child fails the calling
/// test, its message `context` then the child's stdout and stderr.
#[allow(dead_code)]
pub(crate) fn run_test_in_child(
    test: &str,
    env: &[(&str, &std::ffi::OsStr)],
    context: &str,
) -> String {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture"])
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{context}{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

//! Shared by the test binaries that bound memory: the counting global
//! allocator and [`measured`] (from `fuzzkit`, re-exported for the tests
//! that declare `mod common;`), the process's peak resident set, scratch
//! folders.

pub use fuzzkit::{Counting, measured};

/// The process's peak resident set (`VmHWM`), in KiB, where /proc has it.
#[allow(dead_code)]
pub fn peak_rss_kib() -> Option<u64> {
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
pub fn scratch(binary: &str, name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("vision-{binary}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

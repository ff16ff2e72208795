//! Helpers of the crate's unit tests.

use std::path::PathBuf;

use crate::runtime::Solver;

/// A test's own path in the system's temporary folder,
/// `posecloud-NAME-PID`; what a previous run left there is removed.
pub(crate) fn scratch_path(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("posecloud-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&path);
    path
}

/// [`scratch_path`], created as an empty folder.
pub(crate) fn scratch_dir(name: &str) -> PathBuf {
    let dir = scratch_path(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Steps `solver` `n` times at clock 0: its snapshot then.
pub(crate) fn stepped<S: Solver>(solver: &mut S, n: usize) -> S::Snapshot {
    for _ in 0..n {
        solver.step(0.0).unwrap();
    }
    let mut snap = S::Snapshot::default();
    solver.snapshot_into(&mut snap);
    snap
}

//! The command-line tools of the `posecloud` binary, as a user runs them:
//! `render` a BVH clip into a synthetic camera folder, `segment` it, `fk`,
//! and the window flags that are rejected before anything opens.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_posecloud");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(root())
        .output()
        .expect("the posecloud binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn render_then_segment_a_synthetic_clip() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-render");
    let _ = std::fs::remove_dir_all(&dir);
    let seg = dir.join("seg");
    let o = run(&[
        "render",
        "assets/motions/cmu_131_01_walk.bvh",
        "--camera",
        "crates/vision/assets/camera_front.toml",
        "--out",
        dir.to_str().unwrap(),
        "--frames",
        "600..612",
        "--step",
        "4",
    ]);
    assert!(o.status.success(), "render failed: {}", stderr(&o));
    let truth = std::fs::read_to_string(dir.join("ground_truth.csv")).unwrap();
    assert!(truth.lines().count() > 3, "{truth}");
    assert!(dir.join("frame_0000.png").is_file());
    let o = run(&[
        "segment",
        "--frames",
        dir.to_str().unwrap(),
        "--out",
        seg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "segment failed: {}", stderr(&o));
    let csv = std::fs::read_to_string(seg.join("segment.csv")).unwrap();
    // The empty first frame is the background; every later frame is a row.
    assert!(csv.lines().count() >= 3, "{csv}");
}

#[test]
fn fk_prints_every_joint_and_rejects_a_bad_frame() {
    let o = run(&["fk", "assets/motions/cmu_131_01_walk.bvh", "--frame", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.starts_with("name,x,y,z\n"));
    assert!(!text.contains("_end,"), "end sites only with --end-sites");
    let o = run(&[
        "fk",
        "assets/motions/cmu_131_01_walk.bvh",
        "--frame",
        "3",
        "--end-sites",
    ]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("_end,"));
    let o = run(&[
        "fk",
        "assets/motions/cmu_131_01_walk.bvh",
        "--frame",
        "999999",
    ]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("cmu_131_01_walk.bvh") && e.contains("out of range"),
        "{e}"
    );
}

#[test]
fn window_flags_out_of_range_are_errors_before_any_window() {
    for (flag, value, needle) in [
        ("--width", "0", "--width: must be 1"),
        ("--height", "65536", "--height: must be 1"),
        ("--after-secs", "nan", "--after-secs"),
        ("--screenshot", "/nonexistent/dir/a.png", "does not exist"),
    ] {
        let o = run(&["--scene", "arm", flag, value]);
        assert!(!o.status.success(), "{flag} {value} accepted");
        let e = stderr(&o);
        assert!(e.contains(needle), "{flag} {value}: {e}");
        assert!(!e.contains("panicked"), "{e}");
    }
}

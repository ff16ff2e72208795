//! The command-line tools of the `posecloud` binary, as a user runs them:
//! `render` a BVH clip into a synthetic camera folder, `segment` it, `fk`,
//! and the window flags that are rejected before anything opens.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{DefaultSubject, fresh_dir};

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

/// The stderr of a command that must have been refused with exit code 1.
fn refused(o: &Output) -> String {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    e
}

/// `posecloud COMMAND --frames FRAMES --out-csv CSV` with `extra` flags.
fn frames_to_csv(command: &str, frames: &Path, csv: &Path, extra: &[&str]) -> Output {
    let (frames, csv) = (frames.to_str().unwrap(), csv.to_str().unwrap());
    run(&[&[command, "--frames", frames, "--out-csv", csv], extra].concat())
}

const WALK: &str = "assets/motions/cmu_131_01_walk.bvh";

/// `posecloud render` of the walk's clip frames `range` through the front
/// camera into `dir`, with `extra` flags.
fn render(dir: &Path, range: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "render",
        "--bvh",
        WALK,
        "--camera",
        "crates/vision/assets/camera_front.toml",
        "--out",
        dir.to_str().unwrap(),
        "--range",
        range,
    ];
    args.extend_from_slice(extra);
    run(&args)
}

/// [`render`] that must succeed.
fn rendered(dir: &Path, range: &str, extra: &[&str]) {
    let o = render(dir, range, extra);
    assert!(o.status.success(), "render failed: {}", stderr(&o));
}

/// `posecloud fk` of the walk's frame `frame`, with `extra` flags.
fn fk(frame: &str, extra: &[&str]) -> Output {
    run(&[&["fk", "--bvh", WALK, "--frame", frame], extra].concat())
}

#[test]
fn render_then_segment_a_synthetic_clip() {
    let dir = fresh_dir("cli-render");
    let seg = dir.join("seg");
    rendered(&dir, "600..612", &["--step", "4"]);
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
    let o = fk("3", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.starts_with("name,x,y,z\n"));
    assert!(!text.contains("_end,"), "end sites only with --end-sites");
    let o = fk("3", &["--end-sites"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("_end,"));
    let o = fk("999999", &[]);
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

/// `posecloud keypoints` on the frames in `dir` (the first one empty)
/// into `csv`, with `extra` flags.
fn keypoints_run(dir: &Path, csv: &Path, extra: &[&str]) -> Output {
    frames_to_csv(
        "keypoints",
        dir,
        csv,
        &[&["--background-frames", "1"], extra].concat(),
    )
}

/// `posecloud keypoints` on a clip of the default body standing in front of
/// the default camera after an empty frame: one row per detected frame
/// with the tracked keypoints near the body's joints, in frame pixels.
#[test]
fn keypoints_of_a_clip_as_csv() {
    let dir = fresh_dir("cli-keypoints");
    let subject = DefaultSubject::new();
    let (body, cam, renderer) = (&subject.body, &subject.cam, &subject.renderer);
    let pose = subject.arms_down_at(nalgebra::Point3::new(0.1, -0.3, -2.4));
    renderer
        .render_empty(0, 0, 0.0)
        .save_png(dir.join("frame_0000.png"))
        .unwrap();
    for k in 1..4 {
        let f = renderer.render(&pose, k as u64, k, 0.0).unwrap().frame;
        f.save_png(dir.join(format!("frame_{k:04}.png"))).unwrap();
    }
    let csv = dir.join("kp.csv");
    let o = keypoints_run(&dir, &csv, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header.len(), 1 + 3 * 13);
    assert_eq!(&header[..4], ["frame", "nose_u", "nose_v", "nose_score"]);
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let world = body.skeleton.forward_kinematics(&pose).unwrap();
    let truth = |joint: &str| {
        let j = body.skeleton.find(joint).unwrap();
        let (u, v, _) = cam
            .project(&nalgebra::Point3::from(world[j].translation.vector))
            .unwrap();
        (u, v)
    };
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 3, "the background frame is not detected");
    // BlazePose on this capsule figure (about 160 px tall, a head without a
    // face) cannot tell front from back and sometimes merges the sides, so:
    // every elbow lands on the body (within 45 px of one of the true
    // elbows), and in at least one frame both are within 12 px of the true
    // elbows, as labelled or mirrored.
    let elbows = [("right_elbow", "RightElbow"), ("left_elbow", "LeftElbow")];
    let mut exact = 0;
    for row in &rows {
        let at = |name: &str| -> (f64, f64) {
            (
                row[col(&format!("{name}_u"))].parse().unwrap(),
                row[col(&format!("{name}_v"))].parse().unwrap(),
            )
        };
        let dist = |(u, v): (f64, f64), joint: &str| {
            let (a, b) = truth(joint);
            (u - a).hypot(v - b)
        };
        for (name, _) in elbows {
            let nearest = elbows
                .iter()
                .map(|(_, j)| dist(at(name), j))
                .fold(f64::INFINITY, f64::min);
            assert!(
                nearest < 45.0,
                "frame {}: {name} {nearest:.1} px off the body",
                row[0]
            );
        }
        let (r, l) = (at("right_elbow"), at("left_elbow"));
        let labelled = dist(r, "RightElbow").max(dist(l, "LeftElbow"));
        let mirrored = dist(r, "LeftElbow").max(dist(l, "RightElbow"));
        exact += usize::from(labelled.min(mirrored) < 12.0);
    }
    assert!(
        exact >= 1,
        "no frame with both elbows on the true elbows:\n{text}"
    );
    // --with-depth: a `_z` column after each score, the same u, v.
    let deep = dir.join("kp_z.csv");
    let o = keypoints_run(&dir, &deep, &["--with-depth"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let with_z = std::fs::read_to_string(&deep).unwrap();
    let mut z_lines = with_z.lines();
    let z_header: Vec<&str> = z_lines.next().unwrap().split(',').collect();
    assert_eq!(z_header.len(), 1 + 4 * 13);
    assert_eq!(
        &z_header[..5],
        ["frame", "nose_u", "nose_v", "nose_score", "nose_z"]
    );
    for (z_row, row) in z_lines.zip(&rows) {
        let z_row: Vec<&str> = z_row.split(',').collect();
        let zc = |n: &str| z_header.iter().position(|h| *h == n).unwrap();
        for n in ["right_elbow_u", "left_wrist_v"] {
            assert_eq!(z_row[zc(n)], row[col(n)], "{n}");
        }
        let z: f64 = z_row[zc("right_elbow_z")].parse().unwrap();
        assert!(z.is_finite());
    }
    // A missing source names the flag.
    let o = frames_to_csv("keypoints", Path::new("/nonexistent/dir"), &csv, &[]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--frames"), "{}", stderr(&o));
    // A --model that cannot be read, or is not an ONNX model, names the
    // flag and the file, and no CSV is written.
    let models = fresh_dir("cli-keypoints-model");
    let junk = models.join("not_a_model.onnx");
    std::fs::write(&junk, b"not an ONNX model").unwrap();
    let missing = models.join("missing.onnx");
    for model in [&missing, &junk] {
        let out = models.join("kp_model.csv");
        let o = keypoints_run(&dir, &out, &["--model", model.to_str().unwrap()]);
        assert!(!o.status.success(), "{} accepted", model.display());
        let e = stderr(&o);
        assert!(e.contains(&format!("--model {}", model.display())), "{e}");
        assert!(!e.contains("panicked"), "{e}");
        assert!(!out.exists(), "{} written", out.display());
    }
}

/// `render` into a folder that is not empty is refused (old frames would be
/// read with the new ones); `--force` empties it first.
#[test]
fn render_refuses_a_folder_with_files_unless_forced() {
    let dir = fresh_dir("cli-render-force");
    std::fs::write(dir.join("frame_0099.png"), b"an old frame").unwrap();
    let o = render(&dir, "600..604", &[]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("--out") && e.contains("--force"), "{e}");
    assert!(dir.join("frame_0099.png").exists());
    let o = render(&dir, "600..604", &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!dir.join("frame_0099.png").exists());
    assert!(dir.join("frame_0000.png").exists() && dir.join("frame_0001.png").exists());
}

/// Without DISPLAY the window is refused with a message (X11 only: a
/// Wayland session needs XWayland), never a panic inside winit.
#[test]
fn no_x11_display_is_a_clear_error() {
    for wayland in [false, true] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_posecloud"));
        c.env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY");
        if wayland {
            c.env("WAYLAND_DISPLAY", "wayland-0");
        }
        let o = c.output().unwrap();
        assert!(!o.status.success());
        let e = stderr(&o);
        assert!(!e.contains("panicked"), "{e}");
        if wayland {
            assert!(e.contains("XWayland") && e.contains("DISPLAY"), "{e}");
        } else {
            assert!(e.contains("no display"), "{e}");
        }
    }
}

/// `posecloud info human | head -0`: a reader that is gone before the
/// output is written is not an error (no "Broken pipe" panic).
#[test]
fn a_closed_stdout_pipe_ends_info_quietly() {
    for args in [&["info", "human"][..], &["presets"], &["fk", "--bvh", WALK]] {
        let mut child = Command::new(BIN)
            .args(args)
            .current_dir(root())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Close the read end before the program (tens of milliseconds to
        // start) writes anything.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let e = stderr(&out);
        assert!(!e.contains("panicked"), "{args:?}: {e}");
        assert!(out.status.success(), "{args:?}: {e}");
    }
}

/// One rule refuses a window flag that the chosen scene does not use,
/// naming the flag and the scenes that take it (no window opens).
#[test]
fn a_flag_the_scene_does_not_use_is_refused_by_one_rule() {
    for (args, flag, takers) in [
        (
            &["--scene", "walker", "--frames", "x"][..],
            "--frames",
            "track",
        ),
        (
            &["--scene", "sparse", "--particles", "5"],
            "--particles",
            "walker",
        ),
        (
            &["--scene", "track", "--script", "s.txt"],
            "--script",
            "hand",
        ),
        (&["--fov", "50"], "--fov", "track"),
        (
            &["--scene", "walker", "--urdf", "r.urdf"],
            "--urdf",
            "human",
        ),
    ] {
        let o = run(args);
        assert!(!o.status.success(), "{args:?}");
        let e = stderr(&o);
        assert!(
            e.contains(&format!("{flag} is not used by the")) && e.contains(takers),
            "{args:?}: {e}"
        );
    }
}

// ---- issue 32: outputs refused before the run, files complete after Ctrl-C ----

/// `n` grey `w × h` PNG frames in a fresh folder `name`.
fn grey_frames(name: &str, n: usize, (w, h): (u32, u32)) -> PathBuf {
    let dir = fresh_dir(name);
    for k in 0..n {
        let rgb = vec![(40 + 10 * k) as u8; (w * h * 3) as usize];
        vision::Frame::new(w, h, rgb, 0.0, k)
            .unwrap()
            .save_png(dir.join(format!("frame_{k:04}.png")))
            .unwrap();
    }
    dir
}

/// Item 1: a body file with `Frames: 0` (the parser accepts it) is an
/// error naming the file and `Frames: 0`, exit 1 — not a panic in the
/// forward kinematics of its missing frame 0.
#[test]
fn track_refuses_a_body_without_frames() {
    let frames = grey_frames("cli-track-frames0", 2, (64, 48));
    let walk = std::fs::read_to_string(root().join(WALK)).unwrap();
    let head = &walk[..walk.find("Frames:").unwrap()];
    let body = frames.join("empty.bvh");
    std::fs::write(&body, format!("{head}Frames: 0\nFrame Time: 0.033333\n")).unwrap();
    let out = frames.join("o.csv");
    let body = body.to_str().unwrap();
    let e = refused(&frames_to_csv(
        "track",
        &frames,
        &out,
        &["--bvh", body, "--quiet"],
    ));
    assert!(e.contains("empty.bvh") && e.contains("Frames: 0"), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    assert!(!out.exists());
}

/// An arm-prior table of one's own with a bad row is refused when the
/// session opens, naming the flag, the file and the line; nothing is
/// written.
#[test]
fn track_refuses_a_bad_arm_prior_table() {
    let frames = grey_frames("cli-track-arm-table", 2, (64, 48));
    let table = frames.join("arms.csv");
    std::fs::write(
        &table,
        "u_x,u_y,u_z,f_x,f_y,f_z\n0,-1,0,0,-1,0\n0,-1,zero,0,-1,0\n",
    )
    .unwrap();
    let out = frames.join("o.csv");
    let e = refused(&frames_to_csv(
        "track",
        &frames,
        &out,
        &["--arm-prior-table", table.to_str().unwrap(), "--quiet"],
    ));
    let want = format!("--arm-prior-table {0}: {0}:3:", table.display());
    assert!(e.contains(&want), "{e}");
    assert!(!out.exists());
}

/// Items 2 and 5: an output that is a folder, or one path for both
/// outputs, is refused before the source is even opened, naming the flag;
/// nothing is left behind.
#[test]
fn track_refuses_bad_outputs_before_tracking() {
    let dir = fresh_dir("cli-track-outputs");
    let folder = dir.join("DIR");
    std::fs::create_dir_all(&folder).unwrap();
    let same = dir.join("x");
    let bvh = dir.join("run.bvh");
    // The frames do not exist: the refusal must come first.
    let frames = dir.join("no-such-frames");
    for (csv, bvh, needles) in [
        (&folder, &bvh, &["--out-csv", "folder"][..]),
        (&same, &same, &["--out-csv", "--out-bvh", "same file"]),
    ] {
        let out_bvh = ["--out-bvh", bvh.to_str().unwrap()];
        let e = refused(&frames_to_csv("track", &frames, csv, &out_bvh));
        for n in needles {
            assert!(e.contains(n), "{n}: {e}");
        }
        assert!(
            !e.contains("--frames"),
            "refused after opening the source: {e}"
        );
    }
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["DIR"], "{left:?}");
}

/// Issue 35: `--keypoint-backend gpu` where wgpu finds no adapter (here
/// `WGPU_BACKEND` names a back end this system lacks) is an error naming
/// the flag and what is missing, before anything is written; `auto` falls
/// back to tract and says why.
#[test]
fn keypoint_backend_gpu_without_an_adapter_is_an_error_naming_the_flag() {
    let frames = grey_frames("cli-keypoint-backend", 1, (160, 120));
    let missing = if cfg!(target_os = "macos") {
        "dx12"
    } else {
        "metal"
    };
    let out = frames.join("o.csv");
    let without_gpu = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .env("WGPU_BACKEND", missing)
            .current_dir(root())
            .output()
            .expect("the posecloud binary runs")
    };
    let (dir, csv) = (frames.to_str().unwrap(), out.to_str().unwrap());
    for command in ["track", "keypoints"] {
        let o = without_gpu(&[
            command,
            "--frames",
            dir,
            "--out-csv",
            csv,
            "--keypoint-backend",
            "gpu",
            "--quiet",
        ]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{command}: {e}");
        assert!(
            e.contains("--keypoint-backend gpu") && e.contains("no adapter"),
            "{command}: {e}"
        );
        assert!(!e.contains("panicked"), "{command}: {e}");
        assert!(!out.exists(), "{command}");
    }
    let o = without_gpu(&["keypoints", "--frames", dir, "--out-csv", csv, "--quiet"]);
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    assert!(
        e.contains("tract") && e.contains("not the GPU: ") && e.contains("no adapter"),
        "{e}"
    );
}

/// Item 13: `--fps` is bounded like a file's frame rate.
#[test]
fn frame_rates_out_of_range_are_refused() {
    for fps in ["1e-10", "1000000000", "inf", "0"] {
        let o = run(&["segment", "--frames", "x", "--out", "y", "--fps", fps]);
        assert_eq!(o.status.code(), Some(2), "--fps {fps}");
        let e = stderr(&o);
        assert!(e.contains("--fps") && e.contains("1000"), "{e}");
    }
}

/// Item 3: `keypoints` stopped with Ctrl-C writes a complete CSV of the
/// frames detected so far (before, the rows stayed in a hidden partial
/// file).
#[test]
fn keypoints_finishes_its_csv_on_ctrl_c() {
    let frames = grey_frames("cli-keypoints-ctrl-c", 300, (160, 120));
    let csv = frames.join("kp.csv");
    let partial = frames.join(".kp.csv.partial");
    let mut child = Command::new(BIN)
        .args([
            "keypoints",
            "--frames",
            frames.to_str().unwrap(),
            "--out-csv",
        ])
        .arg(&csv)
        .arg("--quiet")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted once a few rows are on disk.
    let rows = |p: &Path| std::fs::read_to_string(p).map_or(0, |t| t.lines().count());
    let t0 = std::time::Instant::now();
    while rows(&partial) < 3 && t0.elapsed().as_secs() < 300 {
        assert!(child.try_wait().unwrap().is_none(), "ended before Ctrl-C");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let o = child.wait_with_output().unwrap();
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let width = lines.next().unwrap().split(',').count();
    let n = lines
        .inspect(|l| assert_eq!(l.split(',').count(), width, "{l}"))
        .count();
    assert!((2..300).contains(&n), "{n} rows");
    assert!(text.ends_with('\n') && !partial.exists());
}

/// Item 18: a model file beyond 256 MiB is refused from its size, before
/// it is read (a sparse file: nothing is allocated).
#[test]
fn keypoints_refuses_a_huge_model_file() {
    let frames = grey_frames("cli-keypoints-model-size", 1, (8, 8));
    let model = frames.join("huge.onnx");
    std::fs::File::create(&model)
        .unwrap()
        .set_len(1 << 40)
        .unwrap();
    let csv = frames.join("kp.csv");
    let model = ["--model", model.to_str().unwrap()];
    let e = refused(&frames_to_csv("keypoints", &frames, &csv, &model));
    assert!(e.contains("--model") && e.contains("256 MiB"), "{e}");
    assert!(!csv.exists());
}

/// Item 7: `render --force` removes an earlier render's files and nothing
/// else: other files and folders stay.
#[test]
fn render_force_removes_only_render_files() {
    let dir = fresh_dir("cli-render-force-only");
    std::fs::write(dir.join("frame_0099.png"), b"an old frame").unwrap();
    std::fs::write(dir.join("notes.txt"), b"mine").unwrap();
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/keep.txt"), b"mine too").unwrap();
    let o = render(&dir, "600..602", &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!dir.join("frame_0099.png").exists());
    assert!(dir.join("notes.txt").exists() && dir.join("sub/keep.txt").exists());
    assert!(dir.join("frame_0000.png").exists());
}

/// Issue 33: `track --profile` prints, after the summary, a table of the
/// stages' wall times per tracked frame: a header, one row per stage of
/// `track::STAGES` and the whole frame, each with finite mean,
/// 95th percentile and share.
#[test]
fn track_profile_prints_every_stage() {
    let dir = fresh_dir("cli-track-profile");
    let frames = dir.join("frames");
    rendered(&frames, "600..612", &["--step", "4"]);
    let csv = dir.join("est.csv");
    let camera = frames.join("camera.toml");
    let o = frames_to_csv(
        "track",
        &frames,
        &csv,
        &[
            "--camera",
            camera.to_str().unwrap(),
            "--bvh",
            WALK,
            "--frame",
            "600",
            "--background-frames",
            "1",
            // 30 particles on the CPU, regions only: quick.
            "--backend",
            "cpu",
            "--particles",
            "30",
            "--observation",
            "regions",
            "--quiet",
            "--profile",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let table = &out[out.find("profile over ").expect(&out)..];
    let mut lines = table.lines().skip(1);
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["stage", "mean", "ms", "p95", "ms", "share"],
        "{out}"
    );
    let rows: Vec<&str> = lines.collect();
    let names = track::STAGES.iter().chain(&["frame"]);
    assert_eq!(rows.len(), track::STAGES.len() + 1, "{out}");
    for (row, name) in rows.iter().zip(names) {
        let figures = row
            .strip_prefix(name)
            .unwrap_or_else(|| panic!("{name}: {out}"));
        let values: Vec<f64> = figures
            .trim()
            .trim_end_matches('%')
            .split_whitespace()
            .map(|v| v.trim_end_matches('%').parse().unwrap())
            .collect();
        assert_eq!(values.len(), 3, "{row}");
        assert!(values.iter().all(|v| v.is_finite() && *v >= 0.0), "{row}");
    }
    assert!(rows.last().unwrap().trim_end().ends_with("100.0%"), "{out}");
}

//! `posecloud render` then `posecloud segment` through the library
//! functions and their clap structs.

use clap::Parser;
use vision::cli::{RenderArgs, SegmentArgs, load_strokes, run_render, run_segment};

#[derive(Parser)]
struct Render {
    #[command(flatten)]
    args: RenderArgs,
}

#[derive(Parser)]
struct Segment {
    #[command(flatten)]
    args: SegmentArgs,
}

const WALK: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../assets/motions/cmu_131_01_walk.bvh"
);

#[test]
fn render_then_segment() {
    let dir = std::env::temp_dir().join(format!("vision-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // A 320 × 240 version of the example camera, closer to the subject.
    let mut cam = vision::CameraFile::load(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/camera_front.toml"
    ))
    .unwrap();
    cam.width = 320;
    cam.height = 240;
    cam.fx /= 2.0;
    cam.fy /= 2.0;
    cam.cx /= 2.0;
    cam.cy /= 2.0;
    cam.position = [0.2, 1.0, 1.5];
    let cam_path = dir.join("cam.toml");
    cam.save(&cam_path).unwrap();
    let out = dir.join("render");
    let r = Render::try_parse_from([
        "render",
        WALK,
        "--camera",
        cam_path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--frames",
        "600..612",
        "--step",
        "4",
        "--sleeves",
        "long",
        "--shirt",
        "#aa3c32",
    ])
    .unwrap();
    let summary = run_render(&r.args).unwrap();
    assert_eq!(summary.frames, 4, "empty frame + 3 clip frames");
    let csv = std::fs::read_to_string(out.join("ground_truth.csv")).unwrap();
    let joints = skeleton::Bvh::load(WALK).unwrap().skeleton.len();
    assert_eq!(csv.lines().count(), 1 + 3 * joints);
    assert!(csv.lines().nth(1).unwrap().starts_with("1,600,"));
    for f in [
        "frame_0000.png",
        "labels_0003.png",
        "classes_0002.png",
        "camera.toml",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    // Segment the render folder, learning colours from frame 1 (clip 600).
    let seg_out = dir.join("seg");
    let s = Segment::try_parse_from([
        "segment",
        "--frames",
        out.to_str().unwrap(),
        "--background-frames",
        "1",
        "--out",
        seg_out.to_str().unwrap(),
        "--bvh",
        WALK,
        "--camera",
        cam_path.to_str().unwrap(),
        "--pose-frame",
        "1:600",
        "--sleeves",
        "long",
    ])
    .unwrap();
    let summary = run_segment(&s.args).unwrap();
    assert_eq!(summary.frames, 3);
    let csv = std::fs::read_to_string(seg_out.join("segment.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4);
    assert!(seg_out.join("seg_0001.png").is_file() && seg_out.join("seg_0003.png").is_file());
    // Every class appears in the segmented frames.
    for line in csv.lines().skip(1) {
        let v: Vec<u32> = line
            .split(',')
            .skip(3)
            .map(|x| x.parse().unwrap())
            .collect();
        assert!(v[1..].iter().all(|&c| c > 0), "{line}");
    }
    // Foreground only, with a background image.
    let s = Segment::try_parse_from([
        "segment",
        "--frames",
        out.join("frame_*.png").to_str().unwrap(),
        "--background",
        out.join("frame_0000.png").to_str().unwrap(),
        "--out",
        seg_out.to_str().unwrap(),
        "--max-frames",
        "2",
    ])
    .unwrap();
    assert_eq!(run_segment(&s.args).unwrap().frames, 2);
    // Strokes file and its errors.
    let strokes = dir.join("strokes.txt");
    std::fs::write(
        &strokes,
        "# frame class points\n1 shirt 160,100 161,100\n2 hair 3,4\n",
    )
    .unwrap();
    let st = load_strokes(&strokes).unwrap();
    assert_eq!(st.len(), 2);
    assert_eq!(st[0].1.points, vec![(160, 100), (161, 100)]);
    std::fs::write(&strokes, "1 cape 1,1\n").unwrap();
    assert!(
        load_strokes(&strokes)
            .unwrap_err()
            .to_string()
            .contains("strokes.txt:1")
    );
    // Bad options are clap errors, bad files name the file.
    assert!(
        Render::try_parse_from([
            "render", WALK, "--camera", "c", "--out", "o", "--frames", "9..3"
        ])
        .is_err()
    );
    assert!(
        Render::try_parse_from([
            "render", WALK, "--camera", "c", "--out", "o", "--skin", "#12"
        ])
        .is_err()
    );
    let bad = Render::try_parse_from([
        "render",
        WALK,
        "--camera",
        "/nonexistent.toml",
        "--out",
        "o",
    ])
    .unwrap();
    assert!(
        run_render(&bad.args)
            .unwrap_err()
            .to_string()
            .contains("/nonexistent.toml")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

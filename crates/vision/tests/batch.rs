//! What `posecloud render` then `posecloud segment` run: the library's
//! jobs ([`vision::batch`]).

use vision::Appearance;
use vision::batch::{PoseColours, RenderJob, SegmentJob, load_strokes, render, segment};
use vision::{EmptyScene, Sleeves};

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
    let job = RenderJob {
        range: Some(600..612),
        step: 4,
        appearance: Appearance {
            sleeves: Sleeves::Long,
            shirt: [0xaa, 0x3c, 0x32],
            ..Appearance::default()
        },
        ..RenderJob::new(WALK, &cam_path, &out)
    };
    let mut written = Vec::new();
    let summary = render(&job, &mut |p| written.push(p)).unwrap();
    assert_eq!(
        written.first(),
        Some(&vision::batch::RenderProgress::Started {
            frames: 4,
            range: 600..612
        })
    );
    assert_eq!(written.len(), 5, "started + one report per frame");
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
    let job = SegmentJob {
        background: EmptyScene::FirstFrames(1),
        pose: Some(PoseColours {
            bvh: WALK.into(),
            camera: cam_path.clone(),
            frame: 600,
            learn_frame: 1,
        }),
        sleeves: Sleeves::Long,
        ..SegmentJob::new(out.to_str().unwrap(), &seg_out)
    };
    let mut rows = 0;
    let summary = segment(&job, &mut |p| {
        if matches!(p, vision::batch::SegmentProgress::Row { .. }) {
            rows += 1;
        }
    })
    .unwrap();
    assert_eq!(rows, 3);
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
    let job = SegmentJob {
        background: EmptyScene::Image(out.join("frame_0000.png")),
        max_frames: Some(2),
        ..SegmentJob::new(out.join("frame_*.png").to_str().unwrap(), &seg_out)
    };
    assert_eq!(segment(&job, &mut |_| {}).unwrap().frames, 2);
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
    // Bad files and ranges name the file or flag.
    let bad = RenderJob::new(WALK, "/nonexistent.toml", dir.join("o"));
    assert!(
        render(&bad, &mut |_| {})
            .unwrap_err()
            .to_string()
            .contains("/nonexistent.toml")
    );
    let bad = RenderJob {
        range: Some(600..100_000),
        ..RenderJob::new(WALK, &cam_path, dir.join("o"))
    };
    assert!(
        render(&bad, &mut |_| {})
            .unwrap_err()
            .to_string()
            .contains("--range")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn render_and_segment_refuse_a_file_as_out_before_reading_anything() {
    let file = std::env::temp_dir().join(format!("vision-out-file-{}", std::process::id()));
    std::fs::write(&file, "kept").unwrap();
    // The inputs do not exist: the output is refused first, naming --out.
    let rendered = render(
        &RenderJob::new("missing.bvh", "missing.toml", &file),
        &mut |_| {},
    );
    let segmented = segment(&SegmentJob::new("missing.mp4", &file), &mut |_| {});
    for e in [rendered.unwrap_err(), segmented.unwrap_err()] {
        let msg = e.to_string();
        assert!(msg.contains("--out") && msg.contains("is a file"), "{msg}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "kept");
    std::fs::remove_file(&file).unwrap();
}

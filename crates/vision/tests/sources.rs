//! Frame sources against each other and against bad input. The clips are
//! generated here with `ffmpeg -f lavfi -i testsrc=…` (CI installs ffmpeg).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use vision::{FrameSource, VisionError, open_source};
use vision::{ImageSequence, VideoFile, Y4mFile};

fn scratch(name: &str) -> PathBuf {
    common::scratch("src", name)
}

fn ffmpeg(args: &[&str]) {
    let out = Command::new("ffmpeg")
        .args(["-v", "error", "-y", "-nostdin"])
        .args(args)
        .output()
        .expect("ffmpeg is installed (CI installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn all_frames(src: &mut dyn FrameSource) -> Vec<vision::Frame> {
    let mut v = Vec::new();
    while let Some(f) = src.next_frame().unwrap() {
        v.push(f);
    }
    v
}

/// A lossless clip (FFV1, RGB) of `testsrc` and its frames as PNGs.
fn clip(dir: &Path, size: &str, frames: usize) -> (PathBuf, PathBuf) {
    let video = dir.join("clip.avi");
    let src = format!("testsrc=size={size}:rate=10");
    let n = frames.to_string();
    let v = video.to_str().unwrap();
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        &src,
        "-frames:v",
        &n,
        "-c:v",
        "ffv1",
        "-pix_fmt",
        "bgr0",
        v,
    ]);
    let pngs = dir.join("png");
    std::fs::create_dir_all(&pngs).unwrap();
    ffmpeg(&["-i", v, pngs.join("f_%04d.png").to_str().unwrap()]);
    (video, pngs)
}

#[test]
fn video_and_image_sequence_give_identical_frames() {
    let dir = scratch("same");
    // An odd size on purpose.
    let (video, pngs) = clip(&dir, "33x17", 7);
    let mut seq = ImageSequence::open(&pngs, 10.0).unwrap();
    let mut vid = VideoFile::open(&video).unwrap();
    assert_eq!(seq.size(), (33, 17));
    assert_eq!(vid.size(), (33, 17));
    assert_eq!(vid.fps(), Some(10.0));
    assert_eq!(vid.frame_count(), Some(7));
    let a = all_frames(&mut seq);
    let b = all_frames(&mut vid);
    assert_eq!(a.len(), 7);
    assert_eq!(a, b, "lossless video decodes to the PNGs' pixels");
    assert!(a[0].rgb != a[6].rgb, "testsrc moves");
    // Seeking: both sources return frame 4 again.
    seq.seek(4).unwrap();
    vid.seek(4).unwrap();
    assert_eq!(seq.next_frame().unwrap().unwrap(), a[4]);
    assert_eq!(vid.next_frame().unwrap().unwrap().rgb, a[4].rgb);
    // A glob and open_source find the same frames.
    let glob = format!("{}/f_*.png", pngs.display());
    let mut g = open_source(&glob, 10.0).unwrap();
    assert_eq!(all_frames(g.as_mut()), a);
    let mut o = open_source(video.to_str().unwrap(), 10.0).unwrap();
    assert_eq!(o.next_frame().unwrap().unwrap(), a[0]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn y4m_reads_directly_like_ffmpeg() {
    let dir = scratch("y4m");
    let y4m = dir.join("clip.y4m");
    let src = "testsrc=size=32x24:rate=5";
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        src,
        "-frames:v",
        "3",
        "-pix_fmt",
        "yuv444p",
        y4m.to_str().unwrap(),
    ]);
    let mut direct = Y4mFile::open(&y4m).unwrap();
    let mut piped = VideoFile::open(&y4m).unwrap();
    assert_eq!(direct.size(), (32, 24));
    assert_eq!(direct.fps(), Some(5.0));
    let a = all_frames(&mut direct);
    let b = all_frames(&mut piped);
    assert_eq!(a.len(), 3);
    assert_eq!(b.len(), 3);
    for (x, y) in a.iter().zip(&b) {
        let worst = x
            .rgb
            .iter()
            .zip(&y.rgb)
            .map(|(p, q)| p.abs_diff(*q))
            .max()
            .unwrap();
        assert!(worst <= 3, "BT.601 conversion differs by {worst}");
    }
    direct.seek(2).unwrap();
    assert_eq!(direct.next_frame().unwrap().unwrap().rgb, a[2].rgb);
    // Truncated: half of the last frame is cut off.
    let bytes = std::fs::read(&y4m).unwrap();
    let cut = dir.join("cut.y4m");
    std::fs::write(&cut, &bytes[..bytes.len() - 32 * 24]).unwrap();
    let mut t = Y4mFile::open(&cut).unwrap();
    t.next_frame().unwrap().unwrap();
    t.next_frame().unwrap().unwrap();
    let e = t.next_frame().unwrap_err();
    assert!(e.to_string().contains("truncated"), "{e}");
    std::fs::write(&cut, b"YUV4MPEG2 W10 C411\n").unwrap();
    assert!(
        Y4mFile::open(&cut)
            .unwrap_err()
            .to_string()
            .contains("C411")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn truncated_video_is_an_error_not_a_panic() {
    let dir = scratch("trunc");
    let (video, _) = clip(&dir, "64x48", 20);
    let bytes = std::fs::read(&video).unwrap();
    let cut = dir.join("cut.avi");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let result = VideoFile::open(&cut).and_then(|mut v| {
        let mut n = 0;
        while v.next_frame()?.is_some() {
            n += 1;
        }
        Ok(n)
    });
    let e = result.expect_err("a video cut in half must not read as complete");
    assert!(e.to_string().contains("cut.avi"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_inputs_give_clear_errors() {
    let dir = scratch("bad");
    // Missing folder.
    let e = ImageSequence::open(dir.join("nope"), 30.0).unwrap_err();
    assert!(
        matches!(e, VisionError::Io { .. }) && e.to_string().contains("nope"),
        "{e}"
    );
    // Zero frames.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("notes.txt"), "no images").unwrap();
    let e = ImageSequence::open(&empty, 30.0).unwrap_err();
    assert!(matches!(e, VisionError::NoFrames { .. }), "{e}");
    // A file that is not an image.
    let bad = dir.join("badimg");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("0001.png"), b"not a png").unwrap();
    let e = ImageSequence::open(&bad, 30.0).unwrap_err();
    assert!(e.to_string().contains("0001.png"), "{e}");
    // Frames of different sizes.
    let mixed = dir.join("mixed");
    std::fs::create_dir_all(&mixed).unwrap();
    vision::Frame::new(4, 3, vec![9; 36], 0.0, 0)
        .unwrap()
        .save_png(mixed.join("a.png"))
        .unwrap();
    vision::Frame::new(5, 3, vec![9; 45], 0.0, 0)
        .unwrap()
        .save_png(mixed.join("b.png"))
        .unwrap();
    let mut s = ImageSequence::open(&mixed, 30.0).unwrap();
    s.next_frame().unwrap().unwrap();
    let e = s.next_frame().unwrap_err();
    assert!(matches!(e, VisionError::FrameSize { width: 5, .. }), "{e}");
    assert!(ImageSequence::open(&mixed, 0.0).is_err());
    // Bad buffers.
    assert!(vision::Frame::new(4, 3, vec![0; 35], 0.0, 0).is_err());
    assert!(vision::Frame::new(0, 3, vec![], 0.0, 0).is_err());
    // A video file that is not a video, and one that does not exist.
    let junk = dir.join("junk.mp4");
    std::fs::write(&junk, b"garbage").unwrap();
    let e = VideoFile::open(&junk).unwrap_err();
    assert!(e.to_string().contains("junk.mp4"), "{e}");
    let e = VideoFile::open(dir.join("missing.mp4")).unwrap_err();
    assert!(matches!(e, VisionError::Io { .. }), "{e}");
    for bad in ["webcam:x", "webcam:0@640", "webcam:0@0x480", "webcamera"] {
        let e = open_source(bad, 30.0).err().expect(bad);
        assert!(matches!(e, VisionError::Parameter { .. }), "{bad}: {e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_ffmpeg_names_the_program() {
    let dir = scratch("noffmpeg");
    let video = dir.join("v.avi");
    std::fs::write(&video, b"whatever").unwrap();
    // Re-run this test binary's own check in a child with an empty PATH.
    if std::env::var_os("VISION_CHILD_NO_PATH").is_some() {
        let e = VideoFile::open(&video).unwrap_err();
        assert!(matches!(e, VisionError::Program { .. }), "{e}");
        assert!(
            e.to_string().contains("ffprobe") && e.to_string().contains("not found"),
            "{e}"
        );
        return;
    }
    let tmp = std::env::temp_dir();
    let text = common::run_test_in_child(
        "missing_ffmpeg_names_the_program",
        &[
            ("PATH", "".as_ref()),
            ("VISION_CHILD_NO_PATH", "1".as_ref()),
            ("TMPDIR", tmp.as_os_str()),
        ],
        "",
    );
    assert!(text.contains("1 passed"), "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

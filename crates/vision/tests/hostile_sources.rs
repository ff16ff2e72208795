//! Hostile frame sources (issue 23): frame sizes from Y4M headers and
//! `ffprobe` are bounded before anything is allocated, and a misbehaving
//! `ffmpeg` — a flood of stderr, a stall, an error exit — gives an error
//! naming the file instead of a hang.
//!
//! The misbehaving programs are shell scripts named through
//! [`VideoOptions`]; they are all written once, before any test of this
//! binary spawns a process (a script written while another thread forks
//! can fail to start with "text file busy"). Every wait on a source runs
//! under [`within`], so a regression fails the test instead of hanging it.

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use vision::batch::{SegmentJob, segment};
use vision::{FrameSource, MAX_FRAME_SIDE, VisionError};
use vision::{VideoFile, VideoOptions, Y4mFile, probe_with};

#[global_allocator]
static ALLOCATOR: common::Counting = common::Counting;

/// Runs `f` on a thread of its own and fails the test if it has not
/// returned after `seconds` (the thread is left behind).
fn within<T: Send + 'static>(
    seconds: u64,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(seconds)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: still blocked after {seconds} s"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: panicked"),
    }
}

// ---- fake helper programs ----------------------------------------------------

/// 4 × 2 RGB frames: 24 bytes each.
const FRAME_BYTES: usize = 4 * 2 * 3;

struct Fakes {
    dir: PathBuf,
    /// A file for the scripts to "decode" (they ignore it).
    clip: PathBuf,
}

impl Fakes {
    fn program(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn options(&self, ffprobe: &str, ffmpeg: &str, timeout: Duration) -> VideoOptions {
        VideoOptions {
            ffmpeg: self.program(ffmpeg).into(),
            ffprobe: self.program(ffprobe).into(),
            timeout,
        }
    }
}

/// One line of a damaged file's decoder errors (68 bytes with the newline).
const SPEW: &str = "[h264 @ 0x55d0c0] concealing 1020 DC, 1020 AC, 1020 MV errors in P";

fn fakes() -> &'static Fakes {
    static FAKES: OnceLock<Fakes> = OnceLock::new();
    FAKES.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let dir = common::scratch("hostile", "programs");
        let clip = dir.join("clip.mkv");
        std::fs::write(&clip, b"not decoded: the fake programs ignore it").unwrap();
        let probe = |w: &str, h: &str| {
            format!(
                "#!/bin/sh\nprintf 'width={w}\\nheight={h}\\nr_frame_rate=10/1\\n\
                 avg_frame_rate=10/1\\nnb_frames=3\\n'\n"
            )
        };
        // 20,000 lines ≈ 1.3 MiB of stderr, 20 pipe buffers.
        let spew = format!("yes '{SPEW}' | head -n 20000 >&2\n");
        let frames = |n: usize| format!("head -c {} /dev/zero\n", n * FRAME_BYTES);
        let scripts = [
            ("ffprobe-ok", probe("4", "2")),
            ("ffprobe-huge", probe("100000", "2")),
            ("ffprobe-overflow", probe("4294967295", "4294967295")),
            ("ffprobe-hangs", "#!/bin/sh\nexec sleep 60\n".to_string()),
            // A phone video turned a quarter: coded 4 × 2, shown 2 × 4.
            (
                "ffprobe-rotated",
                format!("{}printf 'rotation=-90\\n'\n", probe("4", "2")),
            ),
            // Three frames announced, two decoded (an edit list), silently.
            (
                "ffmpeg-short",
                format!("#!/bin/sh\necho \"$@\" > \"$0.args\"\n{}", frames(2)),
            ),
            (
                "ffmpeg-short-damaged",
                format!("#!/bin/sh\n{}echo 'Invalid data found' >&2\n", frames(2)),
            ),
            // The flood comes first: before the fix ffmpeg blocked on its
            // full stderr pipe while we blocked on its empty stdout.
            ("ffmpeg-chatty", format!("#!/bin/sh\n{spew}{}", frames(3))),
            (
                "ffmpeg-damaged",
                format!(
                    "#!/bin/sh\n{}{spew}echo 'Invalid NAL unit size (1234 > 99)' >&2\n\
                     echo 'Error while decoding stream #0:0: Invalid data found' >&2\nexit 1\n",
                    frames(1)
                ),
            ),
            (
                "ffmpeg-stalls",
                format!(
                    "#!/bin/sh\n{}echo 'waiting for input' >&2\nexec sleep 60\n",
                    frames(1)
                ),
            ),
        ];
        for (name, text) in scripts {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Fakes { dir, clip }
    })
}

// ---- ffmpeg and ffprobe --------------------------------------------------------

/// Opens the fake clip through the fake `ffmpeg` (and the well-behaved
/// ffprobe) with `timeout`, and runs `read` on it under [`within`]
/// `seconds` (a hang is reported under the name of the `ffmpeg`).
fn read_fake_video<T: Send + 'static>(
    ffmpeg: &str,
    timeout: Duration,
    seconds: u64,
    read: impl FnOnce(VideoFile) -> T + Send + 'static,
) -> T {
    let f = fakes();
    let (clip, options) = (f.clip.clone(), f.options("ffprobe-ok", ffmpeg, timeout));
    within(seconds, ffmpeg, move || {
        read(VideoFile::open_with(&clip, &options).unwrap())
    })
}

#[test]
fn a_flood_of_ffmpeg_errors_before_the_frames_does_not_deadlock() {
    // Reading behind 1.3 MiB of stderr.
    let frames = read_fake_video("ffmpeg-chatty", Duration::from_secs(10), 60, |mut v| {
        let mut n = 0;
        while let Some(frame) = v.next_frame().unwrap() {
            assert_eq!(frame.rgb.len(), FRAME_BYTES);
            n += 1;
        }
        n
    });
    assert_eq!(frames, 3);
}

#[test]
fn an_ffmpeg_error_exit_reports_its_last_stderr_lines() {
    let e = read_fake_video("ffmpeg-damaged", Duration::from_secs(10), 60, |mut v| {
        assert!(v.next_frame().unwrap().is_some());
        v.next_frame().unwrap_err()
    });
    let s = e.to_string();
    eprintln!("{s}");
    assert!(matches!(e, VisionError::Video { .. }), "{s}");
    let headline = s.lines().next().unwrap();
    assert!(
        headline.contains("clip.mkv")
            && headline.contains("after 1 frames")
            && headline.contains("Invalid data found"),
        "{headline}"
    );
    assert!(s.contains("Invalid NAL unit size"), "{s}");
    assert!(s.contains(SPEW), "{s}");
    // The last STDERR_LINES lines, not 20,000.
    assert!(s.lines().count() <= vision::STDERR_LINES + 3, "{s}");
}

#[test]
fn a_stalled_ffmpeg_is_a_timeout_naming_the_file() {
    let (e, waited, dropped_in) =
        read_fake_video("ffmpeg-stalls", Duration::from_millis(500), 30, |mut v| {
            assert!(v.next_frame().unwrap().is_some());
            let t = Instant::now();
            let e = v.next_frame().unwrap_err();
            let waited = t.elapsed();
            // After an error the source is done, and dropping it is prompt.
            assert!(v.next_frame().unwrap().is_none());
            let t = Instant::now();
            drop(v);
            (e, waited, t.elapsed())
        });
    let s = e.to_string();
    assert!(matches!(e, VisionError::Timeout { .. }), "{s}");
    assert!(s.contains("clip.mkv") && s.contains("frame 1"), "{s}");
    assert!(s.contains("waiting for input"), "{s}");
    assert!(
        waited >= Duration::from_millis(500) && waited < Duration::from_secs(10),
        "{waited:?}"
    );
    assert!(dropped_in < Duration::from_secs(5), "{dropped_in:?}");
}

#[test]
fn ffprobe_that_hangs_or_reports_a_huge_size_is_refused() {
    let f = fakes();
    let clip = f.clip.clone();
    let hangs = f.options("ffprobe-hangs", "ffmpeg-chatty", Duration::from_millis(300));
    let e = within(30, "a hanging ffprobe", move || {
        probe_with(&clip, &hangs).unwrap_err()
    });
    assert!(matches!(e, VisionError::Timeout { .. }), "{e}");
    assert!(e.to_string().contains("clip.mkv"), "{e}");
    for (script, field) in [("ffprobe-huge", "width"), ("ffprobe-overflow", "width")] {
        let options = f.options(script, "ffmpeg-chatty", Duration::from_secs(10));
        let clip = f.clip.clone();
        let (result, peak) = within(30, script, move || {
            common::measured(|| VideoFile::open_with(&clip, &options))
        });
        let e = result.unwrap_err();
        let s = e.to_string();
        eprintln!("{script}: {s} (peak heap {peak} bytes)");
        match &e {
            VisionError::FrameLimit { field: f, .. } => assert_eq!(f, field, "{s}"),
            other => panic!("{script}: expected FrameLimit, got {other}"),
        }
        assert!(s.contains("clip.mkv") && s.contains("ffprobe"), "{s}");
        assert!(peak < 1 << 20, "{script}: {peak} bytes");
    }
}

// ---- Y4M headers -----------------------------------------------------------------

/// A Y4M file of `header` and a FRAME with `body` bytes.
fn y4m(dir: &Path, name: &str, header: &str, body: usize) -> PathBuf {
    let path = dir.join(name);
    let mut bytes = format!("{header}\nFRAME\n").into_bytes();
    bytes.resize(bytes.len() + body, 128);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The hostile Y4M headers of issue 23, each 60 bytes or so.
const HOSTILE_Y4M: [(&str, &str, &str); 4] = [
    ("w65535.y4m", "YUV4MPEG2 W65535 H65535 F25:1 C420jpeg", "W"),
    (
        "wmax.y4m",
        "YUV4MPEG2 W4294967295 H4294967295 F25:1 C420",
        "W",
    ),
    ("h.y4m", "YUV4MPEG2 W640 H100000 F25:1 C444", "H"),
    (
        "u64.y4m",
        "YUV4MPEG2 W18446744073709551615 H2 F25:1 Cmono",
        "W",
    ),
];

#[test]
fn hostile_y4m_sizes_are_refused_before_allocating() {
    fakes();
    let dir = common::scratch("hostile", "y4m");
    for (name, header, field) in HOSTILE_Y4M {
        let path = y4m(&dir, name, header, 20);
        let len = std::fs::metadata(&path).unwrap().len();
        // Opening and reading: before the fix the first two allocated 6.4
        // GB, then reported truncation, or overflowed in frame_bytes.
        let (e, peak) =
            common::measured(|| Y4mFile::open(&path).and_then(|mut y| y.next_frame().map(|_| ())));
        let e = e.unwrap_err();
        let s = e.to_string();
        eprintln!("{len}-byte {name}: {s} (peak heap {peak} bytes)");
        assert!(
            matches!(&e, VisionError::FrameLimit { field: f, .. } if f == field),
            "{s}"
        );
        assert!(s.contains(name) && !s.contains('\n'), "{s}");
        assert!(peak < 64 * 1024, "{name}: {peak} bytes");
    }
    // A size beyond u64 is a bad field, not a panic.
    let path = y4m(&dir, "huge.y4m", "YUV4MPEG2 W99999999999999999999 H2", 0);
    let s = Y4mFile::open(&path).unwrap_err().to_string();
    assert!(s.contains("bad width") && s.contains("huge.y4m"), "{s}");
    // 10-bit and unknown colour spaces are refused, not misread as 8 bit;
    // so is an absurd frame rate.
    for (name, field, named) in [
        ("deep.y4m", "C420p10", "C420p10"),
        ("deep.y4m", "C444p12", "C444p12"),
        ("deep.y4m", "C420x", "C420x"),
        ("rate.y4m", "F1e308:1e-308", "frame rate"),
        // Issue 32 item 13: rates outside 0.1 to 1000 frames/s.
        ("fast.y4m", "F1000000000:1", "frame rate"),
        ("slow.y4m", "F1:20000000000", "frame rate"),
        ("tiny.y4m", "F1:1e308", "frame rate"),
    ] {
        let path = y4m(&dir, name, &format!("YUV4MPEG2 W4 H2 {field}"), 12);
        let s = Y4mFile::open(&path).unwrap_err().to_string();
        assert!(s.contains(named), "{s}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_truncated_frame_of_the_largest_size_costs_only_the_bytes_present() {
    fakes();
    let dir = common::scratch("hostile", "largest");
    let side = MAX_FRAME_SIDE;
    let path = y4m(
        &dir,
        "max.y4m",
        &format!("YUV4MPEG2 W{side} H{side} C444"),
        1000,
    );
    let (e, peak) = common::measured(|| {
        let mut y = Y4mFile::open(&path)?;
        assert_eq!(y.size(), (side, side));
        y.next_frame()
    });
    let s = e.unwrap_err().to_string();
    assert!(s.contains("truncated") && s.contains("1000 of"), "{s}");
    // Before the fix: the whole 192 MiB plane was allocated first.
    assert!(peak < 1 << 20, "{peak} bytes for a 1000-byte frame");
    // Seeking far past the end is an error, not an overflow.
    let mut y = Y4mFile::open(&path).unwrap();
    assert!(y.seek(usize::MAX).is_err());
    assert!(y.seek(1 << 40).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `posecloud segment --frames HOSTILE.y4m` in a child process of this
/// test binary (`VISION_SEGMENT_PROBE=path`), so that its peak resident set
/// is its own: a one-line error and at most 64 MiB of memory.
#[test]
fn segment_refuses_hostile_y4m_in_bounded_memory() {
    if let Ok(path) = std::env::var("VISION_SEGMENT_PROBE") {
        let out = std::env::temp_dir().join(format!("vision-hostile-seg-{}", std::process::id()));
        let job = SegmentJob {
            max_frames: Some(1),
            ..SegmentJob::new(path, &out)
        };
        let e = segment(&job, &mut |_| {}).unwrap_err();
        let _ = std::fs::remove_dir_all(&out);
        println!("PROBE error: {e}");
        println!(
            "PROBE peak_rss_kib: {}",
            common::peak_rss_kib().unwrap_or(0)
        );
        return;
    }
    fakes();
    let dir = common::scratch("hostile", "segment");
    for (name, header, _) in HOSTILE_Y4M {
        let path = y4m(&dir, name, header, 20);
        let text = common::run_test_in_child(
            "segment_refuses_hostile_y4m_in_bounded_memory",
            &[("VISION_SEGMENT_PROBE", path.as_os_str())],
            &format!("{name}: "),
        );
        let error = text
            .lines()
            .find_map(|l| l.strip_prefix("PROBE error: "))
            .unwrap_or_else(|| panic!("{name}: {text}"));
        let rss: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix("PROBE peak_rss_kib: "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap();
        eprintln!("segment --frames {name}: peak RSS {rss} KiB: {error}");
        assert!(error.contains(name), "{error}");
        if rss > 0 {
            assert!(rss < 64 * 1024, "{name}: peak RSS {rss} KiB");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 32 items 15 and 16: a quarter-turned phone video is read at its
/// shown size (ffmpeg turns the frames; a video without a rotation is
/// decoded with `-noautorotate`, so a rotation ffprobe did not report never
/// shears the image); fewer frames than the container announces (an edit
/// list, a variable rate) end the video cleanly when ffmpeg said nothing,
/// and are "truncated" when it reported decoding errors.
#[test]
fn rotated_and_trimmed_videos_read_as_shown() {
    let f = fakes();
    let t = Duration::from_secs(20);
    let turned = probe_with(&f.clip, &f.options("ffprobe-rotated", "ffmpeg-short", t)).unwrap();
    assert_eq!((turned.width, turned.height, turned.rotation), (2, 4, 270));
    let count = |ffmpeg: &'static str| {
        read_fake_video(ffmpeg, t, 30, |mut v| {
            let mut n = 0;
            loop {
                match v.next_frame() {
                    Ok(Some(_)) => n += 1,
                    Ok(None) => return Ok(n),
                    Err(e) => return Err(e.to_string()),
                }
            }
        })
    };
    assert_eq!(count("ffmpeg-short"), Ok(2));
    let args = std::fs::read_to_string(f.program("ffmpeg-short.args")).unwrap();
    assert!(
        args.contains("-noautorotate") && args.contains("passthrough"),
        "{args}"
    );
    let e = count("ffmpeg-short-damaged").unwrap_err();
    assert!(e.contains("truncated") && e.contains("Invalid data"), "{e}");
}

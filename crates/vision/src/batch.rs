//! What `posecloud render` and `posecloud segment` run, as library
//! functions over plain job descriptions (the command-line parsing lives in
//! the app): a BVH clip drawn through a camera into a folder, and a source
//! segmented into label images. Progress is reported through a callback;
//! nothing is printed here.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::camera_file::load_camera;
use crate::classes::{ClassMap, SEG_CLASSES, SegClass, Sleeves};
use crate::error::{Result, VisionError};
use crate::foreground::{EmptyScene, learn_empty_scene};
use crate::frame::Frame;
use crate::output::RowFile;
use crate::segment::{ColourClass, SegmentParams, Segmenter, Stroke};
use crate::sources::open_source;
use crate::synth::{
    Appearance, Background, BodyShape, RenderOptions, RenderSummary, SyntheticRenderer,
    SyntheticSource, dress_skeleton, write_render_until,
};

/// A render: clip frames `range` (default the whole clip) of `bvh`, every
/// `step`-th, through `camera`, into `out`.
#[derive(Clone, Debug, PartialEq)]
pub struct RenderJob {
    pub bvh: PathBuf,
    pub camera: PathBuf,
    /// frame_NNNN.png, labels_NNNN.png, classes_NNNN.png, ground_truth.csv,
    /// camera.toml.
    pub out: PathBuf,
    pub range: Option<Range<usize>>,
    pub step: usize,
    pub appearance: Appearance,
    /// An image behind the person; default a shaded checkerboard.
    pub backdrop: Option<PathBuf>,
    /// Sensor noise σ, grey levels.
    pub noise: f64,
    pub seed: u64,
    /// Empty a non-empty `out` first (else it is refused, so that old
    /// frames are not read with the new ones).
    pub force: bool,
}

impl RenderJob {
    /// The whole clip, every 4th frame, default appearance, σ 3 noise.
    pub fn new(
        bvh: impl Into<PathBuf>,
        camera: impl Into<PathBuf>,
        out: impl Into<PathBuf>,
    ) -> Self {
        Self {
            bvh: bvh.into(),
            camera: camera.into(),
            out: out.into(),
            range: None,
            step: 4,
            appearance: Appearance::default(),
            backdrop: None,
            noise: 3.0,
            seed: 1,
            force: false,
        }
    }
}

/// What [`render`] reports as it goes.
#[derive(Clone, Debug, PartialEq)]
pub enum RenderProgress {
    /// About to write `frames` frames (clip frames `range`, the empty
    /// first frame included).
    Started { frames: usize, range: Range<usize> },
    /// Frame `k` was written.
    Frame(usize),
}

/// Whether `name` is a file [`crate::synth::write_render`] writes.
fn is_render_file(name: &str) -> bool {
    let numbered = |prefix: &str| {
        name.strip_prefix(prefix)
            .and_then(|r| r.strip_suffix(".png"))
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
    };
    matches!(name, "ground_truth.csv" | "camera.toml")
        || numbered("frame_")
        || numbered("labels_")
        || numbered("classes_")
        || (name.starts_with('.') && name.ends_with(".partial"))
}

/// Refuses an output folder that is a file, before any work starts.
///
/// # Errors
/// [`VisionError::Parameter`] naming `--out`.
fn refuse_file_out(out: &std::path::Path) -> Result<()> {
    if out.exists() && !out.is_dir() {
        return Err(VisionError::parameter(
            "--out",
            out.display(),
            "is a file: give a folder",
        ));
    }
    Ok(())
}

/// Refuses an output that is a file, or a folder that is not empty;
/// with `force`, removes the earlier render's files from it (`frame_N.png`,
/// `labels_N.png`, `classes_N.png`, `ground_truth.csv`, `camera.toml`) and
/// nothing else: other files and folders stay.
///
/// # Errors
/// [`VisionError::Parameter`] naming `--out` and what is in it; an I/O
/// error removing its files.
fn prepare_out_dir(out: &std::path::Path, force: bool) -> Result<()> {
    refuse_file_out(out)?;
    let Ok(entries) = std::fs::read_dir(out) else {
        return Ok(());
    };
    let entries: Vec<_> = entries.filter_map(std::result::Result::ok).collect();
    if entries.is_empty() {
        return Ok(());
    }
    if !force {
        return Err(VisionError::parameter(
            "--out",
            out.display(),
            format!(
                "the folder holds {} entries already (e.g. {}): give an empty or new folder, or --force to remove an earlier render's files from it",
                entries.len(),
                entries[0].file_name().to_string_lossy()
            ),
        ));
    }
    for e in entries {
        let name = e.file_name();
        let path = e.path();
        if !name.to_str().is_some_and(is_render_file) || !path.is_file() {
            continue;
        }
        std::fs::remove_file(&path).map_err(|err| VisionError::io(&path, err))?;
    }
    Ok(())
}

/// Renders `job` (module docs).
///
/// # Errors
/// Bad camera file, BVH, range, backdrop or output folder, each naming the
/// file or flag.
pub fn render(job: &RenderJob, progress: &mut dyn FnMut(RenderProgress)) -> Result<RenderSummary> {
    render_until(job, &AtomicBool::new(false), progress)
}

/// [`render`] that stops before the next frame once `stop` is set
/// (Ctrl-C): the frames written so far and their `ground_truth.csv` are
/// complete.
///
/// # Errors
/// As [`render`].
pub fn render_until(
    job: &RenderJob,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(RenderProgress),
) -> Result<RenderSummary> {
    refuse_file_out(&job.out)?;
    let bvh = skeleton::Bvh::load(&job.bvh)?;
    let camera = load_camera(&job.camera)?;
    let background = match &job.backdrop {
        Some(p) => Background::from_file(p)?,
        None => Background::default(),
    };
    let options = RenderOptions {
        appearance: job.appearance.clone(),
        background,
        noise_sigma: job.noise,
        seed: job.seed,
        ..RenderOptions::default()
    };
    let range = job.range.clone().unwrap_or(0..bvh.frames.len());
    let renderer = SyntheticRenderer::new(&bvh.skeleton, camera, options)?;
    let source = SyntheticSource::new(&bvh, renderer, range.clone(), job.step)?;
    prepare_out_dir(&job.out, job.force)?;
    progress(RenderProgress::Started {
        frames: crate::frame::FrameSource::frame_count(&source).unwrap_or(0),
        range,
    });
    write_render_until(&source, &job.out, stop, &mut |k| {
        progress(RenderProgress::Frame(k))
    })
}

/// Learning the colours from a known pose: source frame `learn_frame`
/// shows frame `frame` of the clip `bvh`, seen through `camera`.
#[derive(Clone, Debug, PartialEq)]
pub struct PoseColours {
    pub bvh: PathBuf,
    pub camera: PathBuf,
    pub frame: usize,
    pub learn_frame: usize,
}

/// A segmentation of the source `frames` into `out`.
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentJob {
    /// A folder, glob, video file, .y4m file or webcam (see
    /// [`open_source`]).
    pub frames: String,
    /// Where the background is learned from (default the first frame).
    pub background: EmptyScene,
    /// seg_NNNN.png (classes in preview colours) and segment.csv (per-frame
    /// ms and class counts).
    pub out: PathBuf,
    /// Label image width × height.
    pub label_size: (u32, u32),
    /// Frame rate assumed for image sequences.
    pub fps: f64,
    /// Stop after this many segmented frames.
    pub max_frames: Option<usize>,
    /// Colours from a known pose, or from `strokes`; neither: the
    /// foreground only (written as shirt).
    pub pose: Option<PoseColours>,
    pub sleeves: Sleeves,
    pub strokes: Option<PathBuf>,
}

impl SegmentJob {
    /// Defaults: the first frame is the background, 160 × 120 labels.
    pub fn new(frames: impl Into<String>, out: impl Into<PathBuf>) -> Self {
        Self {
            frames: frames.into(),
            background: EmptyScene::default(),
            out: out.into(),
            label_size: (
                SegmentParams::default().width,
                SegmentParams::default().height,
            ),
            fps: crate::sources::DEFAULT_SEQUENCE_FPS,
            max_frames: None,
            pose: None,
            sleeves: Sleeves::Short,
            strokes: None,
        }
    }
}

/// What [`segment`] reports as it goes.
#[derive(Clone, Debug, PartialEq)]
pub enum SegmentProgress {
    /// The source is open: its name, size and frame count when known.
    Opened {
        name: String,
        size: (u32, u32),
        frames: Option<usize>,
    },
    /// How the colours were learned (or that only the foreground is
    /// written).
    Colours(String),
    /// One segmented frame: its source index, time stamp, milliseconds and
    /// the pixel count of each class (background first).
    Row {
        frame: usize,
        timestamp: f64,
        ms: f64,
        counts: [u32; SEG_CLASSES + 1],
    },
}

/// Reads a strokes file (lines `FRAME CLASS x,y x,y …`; CLASS: skin, hair, shirt, trousers; pixel coordinates in the input frame; `#` starts a comment): `(frame, stroke)`.
///
/// # Errors
/// [`VisionError::Parameter`] naming the file and line of a malformed line.
pub fn load_strokes(path: &std::path::Path) -> Result<Vec<(usize, Stroke)>> {
    let text = std::fs::read_to_string(path).map_err(|e| VisionError::io(path, e))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |m: String| {
            VisionError::parameter("strokes", format!("{}:{}", path.display(), n + 1), m)
        };
        let mut words = line.split_whitespace();
        let frame = words
            .next()
            .and_then(|w| w.parse().ok())
            .ok_or_else(|| bad("expected FRAME CLASS x,y …".into()))?;
        let class = words
            .next()
            .and_then(ColourClass::from_name)
            .ok_or_else(|| bad("class must be skin, hair, shirt or trousers".into()))?;
        let mut points = Vec::new();
        for w in words {
            let (x, y) = w
                .split_once(',')
                .and_then(|(x, y)| Some((x.parse().ok()?, y.parse().ok()?)))
                .ok_or_else(|| bad(format!("`{w}` is not a point x,y")))?;
            points.push((x, y));
        }
        out.push((frame, Stroke { class, points }));
    }
    Ok(out)
}

/// What [`segment`] measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SegmentSummary {
    pub frames: usize,
    pub mean_ms: f64,
    pub max_ms: f64,
}

/// Segments `job.frames`: learns the background and colours, then segments
/// every remaining frame, writing a PNG and a CSV row per frame.
///
/// # Errors
/// Source, background, colour-learning and output errors, each naming the
/// file or flag.
pub fn segment(
    job: &SegmentJob,
    progress: &mut dyn FnMut(SegmentProgress),
) -> Result<SegmentSummary> {
    segment_until(job, &AtomicBool::new(false), progress)
}

/// [`segment`] that stops before the next frame once `stop` is set
/// (Ctrl-C): the images written so far and their `segment.csv` rows are
/// complete (every file is written whole, [`crate::output`]).
///
/// # Errors
/// As [`segment`].
pub fn segment_until(
    job: &SegmentJob,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(SegmentProgress),
) -> Result<SegmentSummary> {
    refuse_file_out(&job.out)?;
    std::fs::create_dir_all(&job.out).map_err(|e| VisionError::io(&job.out, e))?;
    let mut source = open_source(&job.frames, job.fps)?;
    let (w, h) = source.size();
    progress(SegmentProgress::Opened {
        name: source.name().to_string(),
        size: (w, h),
        frames: source.frame_count(),
    });
    let (label_width, label_height) = job.label_size;
    let params = SegmentParams {
        width: label_width,
        height: label_height,
        ..SegmentParams::default()
    };
    let mut seg = Segmenter::new(params, w, h)?;
    let resume = learn_empty_scene(&mut seg, &job.background, source.as_mut())?;
    let mut frames_read: Vec<Frame> = Vec::new();
    // Colours.
    let mut colours_known = false;
    if let Some(pose) = &job.pose {
        let bvh = skeleton::Bvh::load(&pose.bvh)?;
        let camera = load_camera(&pose.camera)?;
        if pose.frame >= bvh.frames.len() {
            return Err(VisionError::parameter(
                "--frame",
                pose.frame,
                format!("the clip has {} frames", bvh.frames.len()),
            ));
        }
        let frame = frame_at(source.as_mut(), pose.learn_frame, resume, &mut frames_read)?;
        let skel = dress_skeleton(&bvh.skeleton, &BodyShape::default())?;
        let map = ClassMap::for_sleeves(job.sleeves);
        let report =
            seg.learn_colours_from_pose(&frame, &skel, &camera, bvh.frames.pose(pose.frame), &map)?;
        progress(SegmentProgress::Colours(format!(
            "colours learned from frame {} (clip frame {}): {report:?}",
            pose.learn_frame, pose.frame
        )));
        colours_known = true;
    } else if let Some(path) = &job.strokes {
        let strokes = load_strokes(path)?;
        let mut by_frame: std::collections::BTreeMap<usize, Vec<Stroke>> = Default::default();
        for (f, s) in strokes {
            by_frame.entry(f).or_default().push(s);
        }
        for (f, strokes) in by_frame {
            let frame = frame_at(source.as_mut(), f, resume, &mut frames_read)?;
            seg.learn_colours_from_strokes(&frame, &strokes)?;
        }
        progress(SegmentProgress::Colours(format!(
            "colours learned from {}",
            path.display()
        )));
        colours_known = true;
    }
    if !colours_known {
        progress(SegmentProgress::Colours(
            "no colours given (--bvh/--camera/--frame/--learn-frame or --strokes): writing the foreground only (as shirt)".into(),
        ));
    }
    // Segment.
    let csv_path = job.out.join("segment.csv");
    let names: Vec<&str> = SegClass::ALL.iter().map(|c| c.name()).collect();
    let mut csv = RowFile::create(&csv_path, &format!("frame,time,ms,{}\n", names.join(",")))
        .map_err(|e| VisionError::io(&csv_path, e))?;
    let mut summary = SegmentSummary::default();
    let mut pending = frames_read.into_iter();
    let mut out = crate::segment::Segmentation::default();
    // An error after the first row keeps the rows (and says so in the
    // error); before it, the previous segment.csv stays.
    let result = (|| -> Result<()> {
        loop {
            if job.max_frames.is_some_and(|m| summary.frames >= m) || stop.load(Ordering::Relaxed) {
                break;
            }
            let frame = match pending.next() {
                Some(f) => f,
                None => match source.next_frame()? {
                    Some(f) => f,
                    None => break,
                },
            };
            let t0 = Instant::now();
            if colours_known {
                seg.segment_into(&frame, &mut out)?;
            } else {
                let mask = seg.foreground_mask(&frame)?;
                out.width = label_width;
                out.height = label_height;
                out.labels = mask.iter().map(|&m| m * SegClass::Shirt.id()).collect();
                out.counts = [0; SEG_CLASSES + 1];
                for &l in &out.labels {
                    out.counts[usize::from(l)] += 1;
                }
                out.foreground = mask;
            }
            let ms = 1e3 * t0.elapsed().as_secs_f64();
            out.save_png(job.out.join(format!("seg_{:04}.png", frame.index)))?;
            let counts: Vec<String> = out.counts.iter().map(u32::to_string).collect();
            csv.push(&format!(
                "{},{:.4},{ms:.3},{}",
                frame.index,
                frame.timestamp,
                counts.join(",")
            ))
            .map_err(|e| VisionError::io(&csv_path, e))?;
            progress(SegmentProgress::Row {
                frame: frame.index,
                timestamp: frame.timestamp,
                ms,
                counts: out.counts,
            });
            summary.frames += 1;
            summary.mean_ms += ms;
            summary.max_ms = summary.max_ms.max(ms);
        }
        Ok(())
    })();
    if let Err(e) = result {
        if csv.rows() == 0 {
            return Err(e);
        }
        let rows = csv.rows();
        csv.commit().map_err(|e| VisionError::io(&csv_path, e))?;
        return Err(VisionError::parameter(
            "--frames",
            &job.frames,
            format!(
                "{e} (the {rows} frame(s) segmented before it are in {})",
                csv_path.display()
            ),
        ));
    }
    csv.commit().map_err(|e| VisionError::io(&csv_path, e))?;
    summary.mean_ms /= summary.frames.max(1) as f64;
    Ok(summary)
}

/// Source frame `index`: by seeking and then seeking back to `resume`
/// (the first frame to segment) where the source can; else by reading
/// forward, keeping the frames read in `kept` so that they are still
/// segmented.
fn frame_at(
    source: &mut dyn crate::frame::FrameSource,
    index: usize,
    resume: usize,
    kept: &mut Vec<Frame>,
) -> Result<Frame> {
    if let Some(f) = kept.iter().find(|f| f.index == index) {
        return Ok(f.clone());
    }
    let missing = |name: &str| VisionError::Seek {
        source_name: name.to_string(),
        frame: index,
        message: "the source ended before this frame".into(),
    };
    if kept.is_empty() && source.seek(index).is_ok() {
        let f = source.next_frame()?.ok_or_else(|| missing(source.name()))?;
        source.seek(resume)?;
        return Ok(f);
    }
    loop {
        let f = source.next_frame()?.ok_or_else(|| missing(source.name()))?;
        kept.push(f.clone());
        if f.index == index {
            return Ok(f);
        }
        if f.index > index {
            return Err(VisionError::Seek {
                source_name: source.name().to_string(),
                frame: index,
                message: "that frame was already used for the background".into(),
            });
        }
    }
}

//! The `posecloud render` and `posecloud segment` commands as library
//! functions with their clap argument structs; `crates/app` wires them in
//! as subcommands (`#[command(flatten)]` or as `Subcommand` variants).

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, ValueEnum};

use crate::camera_file::load_camera;
use crate::classes::{ClassMap, SEG_CLASSES, SegClass, Sleeves};
use crate::error::{Result, VisionError};
use crate::frame::{Frame, load_rgb};
use crate::segment::{ColourClass, SegmentParams, Segmenter, Stroke};
use crate::sources::open_source;
use crate::synth::{
    Appearance, Background, BodyShape, RenderOptions, RenderSummary, SyntheticRenderer,
    SyntheticSource, dress_skeleton, write_render,
};

/// Sleeve length on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SleevesArg {
    Short,
    Long,
}

impl From<SleevesArg> for Sleeves {
    fn from(s: SleevesArg) -> Self {
        match s {
            SleevesArg::Short => Sleeves::Short,
            SleevesArg::Long => Sleeves::Long,
        }
    }
}

/// `A..B` (clip frames, end exclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameRange {
    pub start: usize,
    pub end: usize,
}

/// Parses `A..B` with `A < B`.
///
/// # Errors
/// A message naming the expected form.
pub fn parse_frame_range(s: &str) -> std::result::Result<FrameRange, String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}`: expected A..B, e.g. 100..200"))?;
    let start: usize = a
        .trim()
        .parse()
        .map_err(|_| format!("`{s}`: bad start `{a}`"))?;
    let end: usize = b
        .trim()
        .parse()
        .map_err(|_| format!("`{s}`: bad end `{b}`"))?;
    if start >= end {
        return Err(format!("`{s}`: the range is empty (need A < B)"));
    }
    Ok(FrameRange { start, end })
}

/// Parses `#rrggbb` or `r,g,b` (0–255).
///
/// # Errors
/// A message naming the expected forms.
pub fn parse_rgb(s: &str) -> std::result::Result<[u8; 3], String> {
    let bad = || format!("`{s}`: expected #rrggbb or r,g,b with values 0-255");
    if let Some(hex) = s.strip_prefix('#') {
        if hex.len() != 6 {
            return Err(bad());
        }
        let c = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).map_err(|_| bad());
        return Ok([c(0)?, c(2)?, c(4)?]);
    }
    let parts: Vec<&str> = s.split(',').collect();
    if parts.len() != 3 {
        return Err(bad());
    }
    let c = |p: &str| p.trim().parse::<u8>().map_err(|_| bad());
    Ok([c(parts[0])?, c(parts[1])?, c(parts[2])?])
}

/// Appearance options shared by `render` (and the colour learning of
/// `segment`, which needs the sleeve length).
#[derive(Args, Clone, Debug, PartialEq)]
pub struct AppearanceArgs {
    /// Sleeve length: short (arms are skin) or long (arms are shirt).
    #[arg(long, value_enum, default_value = "short")]
    pub sleeves: SleevesArg,
    /// Skin colour, #rrggbb or r,g,b.
    #[arg(long, value_parser = parse_rgb)]
    pub skin: Option<[u8; 3]>,
    /// Hair colour (#rrggbb or r,g,b).
    #[arg(long, value_parser = parse_rgb, conflicts_with = "bald")]
    pub hair: Option<[u8; 3]>,
    /// No hair: the whole head is skin.
    #[arg(long)]
    pub bald: bool,
    /// Shirt colour.
    #[arg(long, value_parser = parse_rgb)]
    pub shirt: Option<[u8; 3]>,
    /// Trousers colour.
    #[arg(long, value_parser = parse_rgb)]
    pub trousers: Option<[u8; 3]>,
}

impl AppearanceArgs {
    pub fn appearance(&self) -> Appearance {
        let d = Appearance::default();
        Appearance {
            skin: self.skin.unwrap_or(d.skin),
            hair: if self.bald {
                None
            } else {
                self.hair.or(d.hair)
            },
            shirt: self.shirt.unwrap_or(d.shirt),
            sleeves: self.sleeves.into(),
            trousers: self.trousers.unwrap_or(d.trousers),
        }
    }
}

/// `posecloud render BVH --camera CAMERA.toml --out DIR [--frames A..B] …`
#[derive(Args, Clone, Debug, PartialEq)]
pub struct RenderArgs {
    /// BVH clip to render.
    pub bvh: PathBuf,
    /// Camera file (TOML: width, height, fx, fy, cx, cy, position, look_at, up).
    #[arg(long)]
    pub camera: PathBuf,
    /// Output folder (frame_NNNN.png, labels_NNNN.png, classes_NNNN.png,
    /// ground_truth.csv, camera.toml).
    #[arg(long)]
    pub out: PathBuf,
    /// Clip frames A..B (end exclusive); default: the whole clip.
    #[arg(long, value_parser = parse_frame_range)]
    pub frames: Option<FrameRange>,
    /// Render every STEP-th clip frame.
    #[arg(long, default_value_t = 4)]
    pub step: usize,
    #[command(flatten)]
    pub appearance: AppearanceArgs,
    /// Background image (PNG/JPEG); default: a shaded checkerboard.
    #[arg(long)]
    pub background: Option<PathBuf>,
    /// Sensor noise σ, grey levels.
    #[arg(long, default_value_t = 3.0)]
    pub noise: f64,
    /// Noise seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Render into a folder that is not empty: its files are removed first
    /// (without it such a folder is refused, so that old frames are not
    /// read with the new ones).
    #[arg(long)]
    pub force: bool,
}

/// Refuses a non-empty output folder, or (with `force`) empties it.
///
/// # Errors
/// [`VisionError::Parameter`] naming `--out` and what is in it; an I/O
/// error removing its files.
fn prepare_out_dir(out: &std::path::Path, force: bool) -> Result<()> {
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
                "the folder holds {} entries already (e.g. {}): give an empty or new folder, or --force to empty it",
                entries.len(),
                entries[0].file_name().to_string_lossy()
            ),
        ));
    }
    for e in entries {
        let path = e.path();
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(|err| VisionError::io(&path, err))?;
    }
    Ok(())
}

/// Runs `posecloud render`: prints one line per 50 frames and a summary.
///
/// # Errors
/// Bad camera file, BVH, range, background or output folder, each naming
/// the file or option.
pub fn run_render(args: &RenderArgs) -> Result<RenderSummary> {
    let bvh = skeleton::Bvh::load(&args.bvh)?;
    let camera = load_camera(&args.camera)?;
    let background = match &args.background {
        Some(p) => Background::from_file(p)?,
        None => Background::default(),
    };
    let options = RenderOptions {
        appearance: args.appearance.appearance(),
        background,
        noise_sigma: args.noise,
        seed: args.seed,
        ..RenderOptions::default()
    };
    let range = args.frames.map_or(0..bvh.frames.len(), |r| r.start..r.end);
    let renderer = SyntheticRenderer::new(&bvh.skeleton, camera, options)?;
    let source = SyntheticSource::new(&bvh, renderer, range.clone(), args.step)?;
    println!(
        "rendering {} clip frames {}..{} (step {}) + 1 empty frame to {}",
        args.bvh.display(),
        range.start,
        range.end,
        args.step,
        args.out.display()
    );
    prepare_out_dir(&args.out, args.force)?;
    let summary = write_render(&source, &args.out)?;
    println!(
        "wrote {} frames of {} × {} ({:.1} ms per frame to render) and ground_truth.csv",
        summary.frames,
        summary.width,
        summary.height,
        1e3 * summary.render_seconds / summary.frames.max(1) as f64
    );
    Ok(summary)
}

/// `posecloud segment --frames DIR|VIDEO|webcam[:N] (--background FILE |
/// --background-frames K) --out DIR …`
#[derive(Args, Clone, Debug, PartialEq)]
pub struct SegmentArgs {
    /// Frames: a folder of PNG/JPEG (a `posecloud render` folder reads its
    /// frame_*.png), a glob, a video file (ffmpeg), a .y4m file, or
    /// webcam / webcam:N / webcam:N@WxH.
    #[arg(long)]
    pub frames: String,
    /// Image of the empty scene.
    #[arg(long, conflicts_with = "background_frames")]
    pub background: Option<PathBuf>,
    /// Learn the background from the first K frames (default 1 when no
    /// --background is given); those frames are not segmented.
    #[arg(long)]
    pub background_frames: Option<usize>,
    /// Output folder: seg_NNNN.png (classes in preview colours) and
    /// segment.csv (per-frame ms and class counts).
    #[arg(long)]
    pub out: PathBuf,
    /// Label image width.
    #[arg(long, default_value_t = labels::DEFAULT_WIDTH)]
    pub width: u32,
    /// Label image height.
    #[arg(long, default_value_t = labels::DEFAULT_HEIGHT)]
    pub height: u32,
    /// Frame rate assumed for image sequences.
    #[arg(long, default_value_t = crate::sources::DEFAULT_SEQUENCE_FPS)]
    pub fps: f64,
    /// Stop after this many segmented frames (needed for webcams).
    #[arg(long)]
    pub max_frames: Option<usize>,
    /// Learn colours from a known pose: the BVH clip ...
    #[arg(long, requires_all = ["camera", "pose_frame"])]
    pub bvh: Option<PathBuf>,
    /// ... the camera the frames were taken with ...
    #[arg(long)]
    pub camera: Option<PathBuf>,
    /// ... and LEARN_FRAME:CLIP_FRAME, the source frame showing clip frame
    /// CLIP_FRAME (a render with --frames A..B --step S shows clip frame
    /// A + (k − 1)·S at source frame k ≥ 1).
    #[arg(long, value_parser = parse_pose_frame)]
    pub pose_frame: Option<(usize, usize)>,
    /// Sleeve length of the person (for learning from a pose).
    #[arg(long, value_enum, default_value = "short")]
    pub sleeves: SleevesArg,
    /// Learn colours from strokes: a text file of lines
    /// `FRAME CLASS x,y x,y …` (CLASS: skin, hair, shirt, trousers; pixel
    /// coordinates in the input frame).
    #[arg(long, conflicts_with = "bvh")]
    pub strokes: Option<PathBuf>,
}

fn parse_pose_frame(s: &str) -> std::result::Result<(usize, usize), String> {
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| format!("`{s}`: expected LEARN_FRAME:CLIP_FRAME, e.g. 1:100"))?;
    Ok((
        a.parse()
            .map_err(|_| format!("`{s}`: bad source frame `{a}`"))?,
        b.parse()
            .map_err(|_| format!("`{s}`: bad clip frame `{b}`"))?,
    ))
}

/// Reads a strokes file (see [`SegmentArgs::strokes`]): `(frame, stroke)`.
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

/// What `segment` measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SegmentSummary {
    pub frames: usize,
    pub mean_ms: f64,
    pub max_ms: f64,
}

/// Runs `posecloud segment`: learns the background and colours, then
/// segments every remaining frame, printing its time and class counts.
///
/// # Errors
/// Source, background, colour-learning and output errors, each naming the
/// file or option.
pub fn run_segment(args: &SegmentArgs) -> Result<SegmentSummary> {
    let mut source = open_source(&args.frames, args.fps)?;
    let (w, h) = source.size();
    let params = SegmentParams {
        width: args.width,
        height: args.height,
        ..SegmentParams::default()
    };
    let mut seg = Segmenter::new(params, w, h)?;
    std::fs::create_dir_all(&args.out).map_err(|e| VisionError::io(&args.out, e))?;
    // Background.
    let mut frames_read: Vec<Frame> = Vec::new();
    let mut resume = 0;
    if let Some(path) = &args.background {
        let (bw, bh, rgb) = load_rgb(path)?;
        let f = Frame::new(bw, bh, rgb, 0.0, 0)?;
        seg.learn_background(&[&f])?;
    } else {
        let k = args.background_frames.unwrap_or(1);
        if k == 0 {
            return Err(VisionError::parameter(
                "--background-frames",
                0,
                "must be ≥ 1",
            ));
        }
        let mut bg = Vec::new();
        for _ in 0..k {
            bg.push(source.next_frame()?.ok_or_else(|| VisionError::NoFrames {
                source_name: format!("{} (needs {k} background frames)", source.name()),
            })?);
        }
        seg.learn_background(&bg.iter().collect::<Vec<_>>())?;
        resume = k;
    }
    // Colours.
    let mut colours_known = false;
    if let (Some(bvh), Some(camera), Some((learn, clip))) =
        (&args.bvh, &args.camera, args.pose_frame)
    {
        let bvh = skeleton::Bvh::load(bvh)?;
        let camera = load_camera(camera)?;
        if clip >= bvh.frames.len() {
            return Err(VisionError::parameter(
                "--pose-frame",
                format!("{learn}:{clip}"),
                format!("the clip has {} frames", bvh.frames.len()),
            ));
        }
        let frame = frame_at(source.as_mut(), learn, resume, &mut frames_read)?;
        let skel = dress_skeleton(&bvh.skeleton, &BodyShape::default())?;
        let map = ClassMap::for_sleeves(args.sleeves.into());
        let report =
            seg.learn_colours_from_pose(&frame, &skel, &camera, bvh.frames.pose(clip), &map)?;
        println!("colours learned from frame {learn} (clip frame {clip}): {report:?}");
        colours_known = true;
    } else if let Some(path) = &args.strokes {
        let strokes = load_strokes(path)?;
        let mut by_frame: std::collections::BTreeMap<usize, Vec<Stroke>> = Default::default();
        for (f, s) in strokes {
            by_frame.entry(f).or_default().push(s);
        }
        for (f, strokes) in by_frame {
            let frame = frame_at(source.as_mut(), f, resume, &mut frames_read)?;
            seg.learn_colours_from_strokes(&frame, &strokes)?;
        }
        println!("colours learned from {}", path.display());
        colours_known = true;
    }
    if !colours_known {
        println!(
            "no --bvh/--camera/--pose-frame or --strokes: writing the foreground only (as shirt)"
        );
    }
    // Segment.
    let csv_path = args.out.join("segment.csv");
    let mut csv = std::io::BufWriter::new(
        std::fs::File::create(&csv_path).map_err(|e| VisionError::io(&csv_path, e))?,
    );
    let names: Vec<&str> = SegClass::ALL.iter().map(|c| c.name()).collect();
    writeln!(csv, "frame,time,ms,{}", names.join(","))
        .map_err(|e| VisionError::io(&csv_path, e))?;
    println!("| frame | ms | {} |", names.join(" | "));
    let mut summary = SegmentSummary::default();
    let mut pending = frames_read.into_iter();
    let mut out = crate::segment::Segmentation::default();
    loop {
        if args.max_frames.is_some_and(|m| summary.frames >= m) {
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
            out.width = args.width;
            out.height = args.height;
            out.labels = mask.iter().map(|&m| m * SegClass::Shirt.id()).collect();
            out.counts = [0; SEG_CLASSES + 1];
            for &l in &out.labels {
                out.counts[usize::from(l)] += 1;
            }
            out.foreground = mask;
        }
        let ms = 1e3 * t0.elapsed().as_secs_f64();
        out.save_png(args.out.join(format!("seg_{:04}.png", frame.index)))?;
        let counts: Vec<String> = out.counts.iter().map(u32::to_string).collect();
        writeln!(
            csv,
            "{},{:.4},{ms:.3},{}",
            frame.index,
            frame.timestamp,
            counts.join(",")
        )
        .map_err(|e| VisionError::io(&csv_path, e))?;
        println!("| {} | {ms:.2} | {} |", frame.index, counts.join(" | "));
        summary.frames += 1;
        summary.mean_ms += ms;
        summary.max_ms = summary.max_ms.max(ms);
    }
    csv.flush().map_err(|e| VisionError::io(&csv_path, e))?;
    summary.mean_ms /= summary.frames.max(1) as f64;
    println!(
        "segmented {} frames: {:.2} ms mean, {:.2} ms max per frame ({} × {} → {} × {})",
        summary.frames, summary.mean_ms, summary.max_ms, w, h, args.width, args.height
    );
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

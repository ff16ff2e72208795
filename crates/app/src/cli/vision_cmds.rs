//! `posecloud render` and `posecloud segment` ([`vision::batch`]): the
//! synthetic test bench and RTPF §IV-D segmentation on the command line.
//! Tables go to stdout, progress to stderr.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};
use vision::Sleeves;
use vision::batch::{
    PoseColours, RenderJob, RenderProgress, SegmentJob, SegmentProgress, SegmentSummary,
};
use vision::{Appearance, RenderSummary};

use super::progress::StderrProgress;
use super::{LabelSizeArgs, SourceArgs};

/// Sleeve length on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SleevesArg {
    /// Arms are skin.
    Short,
    /// Arms are shirt.
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

/// Parses `A..B` (end exclusive) with `A < B`.
///
/// # Errors
/// A message naming the expected form.
pub fn parse_range(s: &str) -> std::result::Result<std::ops::Range<usize>, String> {
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
    Ok(start..end)
}

/// Parses `#rrggbb` or `r,g,b` (0–255).
///
/// # Errors
/// A message naming the expected forms.
pub fn parse_rgb(s: &str) -> std::result::Result<[u8; 3], String> {
    let bad = || format!("`{s}`: expected #rrggbb or r,g,b with values 0-255");
    if let Some(hex) = s.strip_prefix('#') {
        if hex.len() != 6 || !hex.is_ascii() {
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

/// The person's look in a render.
#[derive(Args, Clone, Debug, PartialEq)]
pub struct AppearanceArgs {
    /// Sleeve length.
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

/// `posecloud render --bvh CLIP.bvh --camera CAMERA.toml --out DIR [--range A..B] …`
#[derive(Args, Clone, Debug, PartialEq)]
pub struct RenderArgs {
    /// BVH clip to render.
    #[arg(long)]
    pub bvh: PathBuf,
    /// Camera file (TOML: width, height, fx, fy, cx, cy, position, look_at, up).
    #[arg(long)]
    pub camera: PathBuf,
    /// Output folder (frame_NNNN.png, labels_NNNN.png, classes_NNNN.png,
    /// ground_truth.csv, camera.toml).
    #[arg(long)]
    pub out: PathBuf,
    /// Clip frames A..B (end exclusive); default: the whole clip.
    #[arg(long, value_parser = parse_range)]
    pub range: Option<std::ops::Range<usize>>,
    /// Render every STEP-th clip frame.
    #[arg(long, default_value_t = 4)]
    pub step: usize,
    #[command(flatten)]
    pub appearance: AppearanceArgs,
    /// Image behind the person (PNG/JPEG); default: a shaded checkerboard.
    #[arg(long)]
    pub backdrop: Option<PathBuf>,
    /// Sensor noise σ, grey levels.
    #[arg(long, default_value_t = 3.0)]
    pub noise: f64,
    /// Noise seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Render into a folder that is not empty: an earlier render's files
    /// (frame_N.png, labels_N.png, classes_N.png, ground_truth.csv,
    /// camera.toml) are removed first, nothing else (without it such a
    /// folder is refused, so that old frames are not read with the new
    /// ones).
    #[arg(long)]
    pub force: bool,
    /// No progress on stderr.
    #[arg(long)]
    pub quiet: bool,
}

impl RenderArgs {
    pub fn job(&self) -> RenderJob {
        RenderJob {
            range: self.range.clone(),
            step: self.step,
            appearance: self.appearance.appearance(),
            backdrop: self.backdrop.clone(),
            noise: self.noise,
            seed: self.seed,
            force: self.force,
            ..RenderJob::new(&self.bvh, &self.camera, &self.out)
        }
    }
}

/// Runs `posecloud render`: a progress bar, then the summary on stdout.
///
/// # Errors
/// As [`vision::batch::render`].
pub fn render(a: &RenderArgs) -> Result<RenderSummary> {
    let mut bar: Option<StderrProgress> = None;
    let stop = super::ctrl_c_stop()?;
    let summary = vision::batch::render_until(&a.job(), stop, &mut |p| match p {
        RenderProgress::Started { frames, range } => {
            let b = StderrProgress::new(Some(frames as u64), a.quiet);
            b.say(&format!(
                "rendering {} clip frames {}..{} (step {}) + 1 empty frame to {}",
                a.bvh.display(),
                range.start,
                range.end,
                a.step,
                a.out.display()
            ));
            bar = Some(b);
        }
        RenderProgress::Frame(k) => {
            if let Some(b) = bar.as_mut() {
                b.update(k as u64 + 1, || format!("frame {k}"));
            }
        }
    });
    finish(bar.as_ref(), summary, |s| {
        format!(
            "wrote {} frames of {} × {} ({:.1} ms per frame to render) and ground_truth.csv",
            s.frames,
            s.width,
            s.height,
            1e3 * s.render_seconds / s.frames.max(1) as f64
        )
    })
}

/// The end of a batch: its progress bar (if it got as far as starting one)
/// cleared, then, if it succeeded, its summary line on stdout (a closed
/// stdout does not fail the batch).
fn finish<S, E>(
    bar: Option<&StderrProgress>,
    summary: std::result::Result<S, E>,
    line: impl FnOnce(&S) -> String,
) -> Result<S>
where
    anyhow::Error: From<E>,
{
    if let Some(b) = bar {
        b.finish();
    }
    let summary = summary?;
    let _ = super::print_out(&(line(&summary) + "\n"));
    Ok(summary)
}

/// `posecloud segment --frames DIR|VIDEO|webcam[:N] (--background FILE |
/// --background-frames K) --out DIR …`
#[derive(Args, Clone, Debug, PartialEq)]
pub struct SegmentArgs {
    /// The frames and the empty scene (without either empty-scene flag,
    /// the first frame).
    #[command(flatten)]
    pub source: SourceArgs,
    /// Output folder: seg_NNNN.png (classes in preview colours) and
    /// segment.csv (per-frame ms and class counts).
    #[arg(long)]
    pub out: PathBuf,
    #[command(flatten)]
    pub labels: LabelSizeArgs,
    /// Stop after this many segmented frames (needed for webcams).
    #[arg(long)]
    pub max_frames: Option<usize>,
    /// Learn colours from a known pose: the BVH clip ...
    #[arg(long, requires_all = ["camera", "frame", "learn_frame"])]
    pub bvh: Option<PathBuf>,
    /// ... the camera the frames were taken with ...
    #[arg(long)]
    pub camera: Option<PathBuf>,
    /// ... the clip's frame (0-based) ...
    #[arg(long)]
    pub frame: Option<usize>,
    /// ... and the source frame showing it (a render with --range A..B
    /// --step S shows clip frame A + (k − 1)·S at source frame k ≥ 1).
    #[arg(long)]
    pub learn_frame: Option<usize>,
    /// Sleeve length of the person (for learning from a pose).
    #[arg(long, value_enum, default_value = "short")]
    pub sleeves: SleevesArg,
    /// Learn colours from strokes: a text file of lines
    /// `FRAME CLASS x,y x,y …` (CLASS: skin, hair, shirt, trousers; pixel
    /// coordinates in the input frame).
    #[arg(long, conflicts_with = "bvh")]
    pub strokes: Option<PathBuf>,
    /// No progress on stderr (the table is still printed).
    #[arg(long)]
    pub quiet: bool,
}

impl SegmentArgs {
    pub fn job(&self) -> SegmentJob {
        let pose = match (&self.bvh, &self.camera, self.frame, self.learn_frame) {
            (Some(bvh), Some(camera), Some(frame), Some(learn_frame)) => Some(PoseColours {
                bvh: bvh.clone(),
                camera: camera.clone(),
                frame,
                learn_frame,
            }),
            _ => None,
        };
        SegmentJob {
            background: self.source.empty_scene().unwrap_or_default(),
            label_size: self.labels.size(),
            fps: self.source.fps,
            max_frames: self.max_frames,
            pose,
            sleeves: self.sleeves.into(),
            strokes: self.strokes.clone(),
            ..SegmentJob::new(&self.source.frames, &self.out)
        }
    }
}

/// Runs `posecloud segment`: a table of ms and class counts per frame on
/// stdout, progress on stderr, the summary on stdout.
///
/// # Errors
/// As [`vision::batch::segment`].
pub fn segment(a: &SegmentArgs) -> Result<SegmentSummary> {
    let mut bar: Option<StderrProgress> = None;
    let mut size = (0, 0);
    let names: Vec<&str> = vision::SegClass::ALL.iter().map(|c| c.name()).collect();
    let stop = super::ctrl_c_stop()?;
    let summary = vision::batch::segment_until(&a.job(), stop, &mut |p| match p {
        SegmentProgress::Opened {
            name,
            size: s,
            frames,
        } => {
            size = s;
            let b = StderrProgress::new(StderrProgress::frames(frames, a.max_frames), a.quiet);
            b.say(&format!("segmenting {name} ({} × {})", s.0, s.1));
            bar = Some(b);
        }
        SegmentProgress::Colours(line) => {
            if let Some(b) = &bar {
                b.say(&line);
            }
            let _ = super::print_out(&(format!("| frame | ms | {} |", names.join(" | ")) + "\n"));
        }
        SegmentProgress::Row {
            frame, ms, counts, ..
        } => {
            let counts: Vec<String> = counts.iter().map(u32::to_string).collect();
            let _ = super::print_out(
                &(format!("| {frame} | {ms:.2} | {} |", counts.join(" | ")) + "\n"),
            );
            if let Some(b) = bar.as_mut() {
                b.update(frame as u64 + 1, || format!("frame {frame}: {ms:.1} ms"));
            }
        }
    });
    finish(bar.as_ref(), summary, |s| {
        format!(
            "segmented {} frames: {:.2} ms mean, {:.2} ms max per frame ({} × {} → {})",
            s.frames, s.mean_ms, s.max_ms, size.0, size.1, a.labels
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_colours_parse_or_say_what_they_expect() {
        assert_eq!(parse_range("3..9"), Ok(3..9));
        assert!(parse_range("9..3").unwrap_err().contains("empty"));
        assert!(parse_range("x").unwrap_err().contains("A..B"));
        assert_eq!(parse_rgb("#ff8000"), Ok([255, 128, 0]));
        assert_eq!(parse_rgb("1, 2,3"), Ok([1, 2, 3]));
        for bad in ["#ff80", "#ééé", "1,2", "1,2,300"] {
            assert!(parse_rgb(bad).is_err(), "{bad}");
        }
    }
}

//! `posecloud track`: RTPF tracking of a video, image folder or webcam on
//! the command line — a thin driver of the tracking session
//! ([`crate::session::Session`]): no set-up file is needed (default camera
//! of `--fov`, default body at `--subject-height`, the guided start), and
//! each one given overrides its default. One CSV row per tracked frame
//! (`frame` = source frame index), flushed as it is tracked; the CSV and
//! the BVH take their names when the run ends — at the end of the source,
//! at `--max-frames`, on Ctrl-C ([`run_track_until`]'s stop flag) or on an
//! error after tracking started ([`crate::record`]).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use clap::{Args, ValueEnum};
use vision::cli::SleevesArg;
use vision::open_source;

use crate::backend::BackendChoice;
use crate::record::Recorder;
use crate::session::{FilterSettings, Session, SessionSpec, Stage};
use crate::start::StartPose;
use crate::tracker::{FilterKind, ObservationMode};

pub use crate::session::{SessionError as TrackCliError, check_init_pose};

/// Which pose estimate is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EstimateArg {
    /// The particle of highest weight.
    Map,
    /// The weighted mean of the particles.
    Mean,
}

/// How the diffused children move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SamplingArg {
    /// Partitioned sampling: the trunk, then each limb chain, each
    /// diffused, weighed and resampled in turn (one likelihood batch per
    /// partition; an addition to RTPF, closer fits on the CMU walk).
    Partitioned,
    /// Every parameter at once (RTPF's prediction).
    Joint,
}

/// `posecloud track --frames SRC --out-csv EST.csv [--subject-height M] …`
#[derive(Args, Clone, Debug, PartialEq)]
pub struct TrackArgs {
    /// Frames: a folder of PNG/JPEG (a `posecloud render` folder reads its
    /// frame_*.png), a glob, a video file (ffmpeg), a .y4m file, or
    /// webcam / webcam:N / webcam:N@WxH.
    #[arg(long)]
    pub frames: String,
    /// Camera file (TOML: width, height, fx, fy, cx, cy, position, look_at,
    /// up). Default: a level camera at the origin, --fov wide. A camera of
    /// the frames' aspect ratio at another resolution is rescaled.
    #[arg(long)]
    pub camera: Option<PathBuf>,
    /// Horizontal field of view of the default camera, degrees.
    #[arg(long, default_value_t = crate::DEFAULT_FOV_DEG)]
    pub fov: f64,
    /// The subject's skeleton (BVH). Default: the CMU skeleton of
    /// assets/motions at --subject-height.
    #[arg(long)]
    pub body: Option<PathBuf>,
    /// The subject's height in metres (default 1.70 for the default body;
    /// a --body file is scaled to it when given).
    #[arg(long)]
    pub subject_height: Option<f64>,
    /// A known initial pose instead of the guided start: frame
    /// --init-frame of this BVH (same joints as the body; needs --camera).
    #[arg(long)]
    pub init: Option<PathBuf>,
    /// Frame of --init (or of --body) holding the initial pose, 0-based;
    /// given alone, the body file's frame.
    #[arg(long)]
    pub init_frame: Option<usize>,
    /// The pose the person takes to start (guided start): arms-down or
    /// t-pose, facing the camera.
    #[arg(long, default_value = "arms-down")]
    pub start_pose: StartPose,
    /// Image of the empty scene (the size of the frames) instead of
    /// learning it.
    #[arg(long, conflicts_with = "background_frames")]
    pub background: Option<PathBuf>,
    /// The first K frames show the empty scene: learned as they come (no
    /// waiting for a still scene) and not tracked.
    #[arg(long)]
    pub background_frames: Option<usize>,
    /// Number of particles N.
    #[arg(long, default_value_t = 300)]
    pub particles: usize,
    /// Filter: pfs, hspc, hpor, hkfs or pfrth (RTPF §IV–V).
    #[arg(long, default_value = "pfrth")]
    pub filter: FilterKind,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output CSV: `frame` (source frame index) then
    /// `<joint>_x,<joint>_y,<joint>_z` for every joint of the body (world
    /// positions, metres), one row per tracked frame.
    #[arg(long)]
    pub out_csv: PathBuf,
    /// Also write the estimated motion as BVH (the body's hierarchy and
    /// channels).
    #[arg(long)]
    pub out_bvh: Option<PathBuf>,
    /// Stop after this many source frames.
    #[arg(long)]
    pub max_frames: Option<usize>,
    /// Sleeve length of the person: short (arms are skin) or long.
    #[arg(long, value_enum, default_value = "short")]
    pub sleeves: SleevesArg,
    /// Tracked joints: `upper` (root, spine, neck, head, collars,
    /// shoulders, elbows of a CMU-style skeleton), `all`, a comma-separated
    /// list of joint names (the root is always tracked), or `auto` (`upper`
    /// when the body has those joints, else `all`). Untracked joints stay
    /// at the initial pose.
    #[arg(long, default_value = "auto")]
    pub track: String,
    /// Pose estimate written: map (highest weight) or mean (weighted mean).
    #[arg(long, value_enum, default_value = "map")]
    pub estimate: EstimateArg,
    /// Likelihood back end: auto (GPU on a hardware adapter, else CPU),
    /// cpu or gpu.
    #[arg(long, default_value = "auto")]
    pub backend: BackendChoice,
    /// Likelihood terms: regions (RTPF's body-part regions), keypoints
    /// (BlazePose 2D keypoints, detected on their own thread) or both.
    #[arg(long, default_value = "both")]
    pub observation: ObservationMode,
    /// σ of the keypoint term as a fraction of the person's size in the
    /// image (shoulders to hips).
    #[arg(long, default_value_t = crate::keypoint_term::DEFAULT_KEYPOINT_SIGMA)]
    pub keypoint_sigma: f64,
    /// σ_F of RTPF Eq. 2.
    #[arg(long, default_value_t = 0.1)]
    pub sigma_f: f64,
    /// Diffusion σ of the root position per frame (m).
    #[arg(long, default_value_t = 0.02)]
    pub sigma_translation: f64,
    /// Diffusion σ of the limb angles per frame (rad).
    #[arg(long, default_value_t = 0.08)]
    pub sigma_limb: f64,
    /// Diffusion σ of the trunk angles (root orientation, spine, neck,
    /// head) per frame (rad).
    #[arg(long, default_value_t = 0.02)]
    pub sigma_trunk: f64,
    /// Prediction: partitioned (trunk, then each limb chain, one
    /// likelihood batch each) or joint (every parameter at once, RTPF).
    #[arg(long, value_enum, default_value = "partitioned")]
    pub sampling: SamplingArg,
    /// Label image width.
    #[arg(long, default_value_t = gpu::DEFAULT_WIDTH)]
    pub width: u32,
    /// Label image height.
    #[arg(long, default_value_t = gpu::DEFAULT_HEIGHT)]
    pub height: u32,
    /// Frame rate assumed for image sequences.
    #[arg(long, default_value_t = vision::sources::DEFAULT_SEQUENCE_FPS)]
    pub fps: f64,
    /// No progress lines on stderr (the summary is still printed).
    #[arg(long)]
    pub quiet: bool,
}

impl TrackArgs {
    /// The arguments with their defaults: no camera or body file, the
    /// guided start.
    pub fn new(frames: impl Into<String>, out_csv: impl Into<PathBuf>) -> Self {
        Self {
            frames: frames.into(),
            camera: None,
            fov: crate::DEFAULT_FOV_DEG,
            body: None,
            subject_height: None,
            init: None,
            init_frame: None,
            start_pose: StartPose::ArmsDown,
            background: None,
            background_frames: None,
            particles: 300,
            filter: FilterKind::Pfrth,
            seed: 1,
            out_csv: out_csv.into(),
            out_bvh: None,
            max_frames: None,
            sleeves: SleevesArg::Short,
            track: "auto".into(),
            estimate: EstimateArg::Map,
            backend: BackendChoice::Auto,
            observation: ObservationMode::Both,
            keypoint_sigma: crate::keypoint_term::DEFAULT_KEYPOINT_SIGMA,
            sigma_f: 0.1,
            sigma_translation: 0.02,
            sigma_limb: 0.08,
            sigma_trunk: 0.02,
            sampling: SamplingArg::Partitioned,
            width: gpu::DEFAULT_WIDTH,
            height: gpu::DEFAULT_HEIGHT,
            fps: vision::sources::DEFAULT_SEQUENCE_FPS,
            quiet: false,
        }
    }

    /// The session's specification.
    pub fn spec(&self) -> SessionSpec {
        SessionSpec {
            frames: self.frames.clone(),
            camera: self.camera.clone(),
            fov_deg: self.fov,
            body: self.body.clone(),
            subject_height: self.subject_height,
            init: self.init.clone(),
            init_frame: self.init_frame,
            start_pose: self.start_pose,
            background: self.background.clone(),
            background_frames: self.background_frames,
            sleeves: self.sleeves.into(),
            track: self.track.clone(),
            label_width: self.width,
            label_height: self.height,
            ..SessionSpec::default()
        }
    }

    /// The tracker's settings.
    pub fn settings(&self) -> FilterSettings {
        FilterSettings {
            particles: self.particles,
            filter: self.filter,
            sigma_f: self.sigma_f,
            sigma_translation: self.sigma_translation,
            sigma_limb: self.sigma_limb,
            sigma_trunk: self.sigma_trunk,
            seed: self.seed,
            backend: self.backend,
            partitioned: self.sampling == SamplingArg::Partitioned,
            mean_estimate: self.estimate == EstimateArg::Mean,
            observation: self.observation,
            keypoint_sigma: self.keypoint_sigma,
        }
    }
}

/// What a run did (also printed at its end).
#[derive(Clone, Debug, PartialEq)]
pub struct TrackSummary {
    /// Frames tracked (rows of the CSV).
    pub frames: usize,
    /// Source frames read in all.
    pub source_frames: usize,
    /// Source frames the background model was learned from.
    pub background_frames: usize,
    /// The first tracked source frame (when tracking started).
    pub first_tracked: Option<usize>,
    /// Times the track was lost and re-acquisition began.
    pub lost: usize,
    /// Stopped by Ctrl-C (the stop flag).
    pub interrupted: bool,
    pub particles: usize,
    pub filter: FilterKind,
    /// D, the tracked parameters.
    pub dim: usize,
    /// The likelihood back end ([`crate::Tracker::describe`]).
    pub backend: String,
    /// Which camera was used, in words.
    pub camera: String,
    /// Which likelihood terms weighed the particles, in words.
    pub observation: String,
    /// Tracked frames per second (segmentation + tracker step).
    pub frames_per_second: f64,
    pub mean_segment_ms: f64,
    pub mean_step_ms: f64,
    /// Mean of the per-frame residual F (RTPF Table II).
    pub mean_residual: f64,
    /// Mean effective sample size.
    pub mean_ess: f64,
    pub csv: PathBuf,
    pub bvh: Option<PathBuf>,
}

impl std::fmt::Display for TrackSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "tracked {} of {} frames ({} background{}{}) with {} N = {}, D = {}: {:.1} frames/s \
             (segmentation {:.1} ms, tracker step {:.1} ms per frame)",
            self.frames,
            self.source_frames,
            self.background_frames,
            self.first_tracked
                .map_or(String::new(), |k| format!(", tracking from frame {k}")),
            if self.lost > 0 {
                format!(", lost {} time(s)", self.lost)
            } else {
                String::new()
            },
            self.filter.name(),
            self.particles,
            self.dim,
            self.frames_per_second,
            self.mean_segment_ms,
            self.mean_step_ms
        )?;
        writeln!(
            f,
            "mean residual F {:.4}, mean ESS {:.1} of {}; observation: {}; likelihood: {}; {}",
            self.mean_residual,
            self.mean_ess,
            self.particles,
            self.observation,
            self.backend,
            self.camera
        )?;
        if self.interrupted {
            writeln!(f, "stopped by Ctrl-C")?;
        }
        write!(f, "wrote {}", self.csv.display())?;
        if let Some(b) = &self.bvh {
            write!(f, " and {}", b.display())?;
        }
        Ok(())
    }
}

/// [`run_track_until`] with no stop flag.
///
/// # Errors
/// As [`run_track_until`].
pub fn run_track(args: &TrackArgs) -> Result<TrackSummary, TrackCliError> {
    run_track_until(args, &AtomicBool::new(false))
}

/// Runs `posecloud track` (module docs) until the source ends,
/// `--max-frames` source frames were read, or `stop` is set (Ctrl-C):
/// progress on stderr, the summary on stdout. The outputs are complete in
/// every one of these cases, and after an error once tracking started.
///
/// # Errors
/// [`TrackCliError::Input`] naming the flag and file for bad input (no
/// frames, a camera whose aspect ratio is not the frames', a body/init
/// mismatch, a non-finite initial pose, an out-of-range `--init-frame`,
/// `--particles 0`, unwritable outputs, a source that ends before tracking
/// started); [`TrackCliError::Track`] when the tracker fails.
pub fn run_track_until(args: &TrackArgs, stop: &AtomicBool) -> Result<TrackSummary, TrackCliError> {
    let quiet = args.quiet;
    let spec = args.spec();
    let settings = args.settings();
    settings.validate()?;
    let frames_what = format!("--frames {}", args.frames);
    let source =
        open_source(&args.frames, args.fps).map_err(|e| crate::session::input(&frames_what, e))?;
    let fps = source
        .fps()
        .filter(|f| f.is_finite() && *f > 0.0)
        .unwrap_or(args.fps);
    let mut session = Session::open(spec, settings, source, None)?;
    let recorder = Recorder::create(
        Some(&args.out_csv),
        args.out_bvh.as_deref(),
        session.body(),
        1.0 / fps,
    )?;
    if !quiet {
        let (w, h) = session.source().size();
        eprintln!(
            "{} ({w} × {h} → {} × {} labels); {}; body {:.2} m tall; {} N = {}; observation: {}",
            session.source_name(),
            args.width,
            args.height,
            session.camera_note(),
            session.stature(),
            args.filter.name(),
            args.particles,
            session.describe_observation()
        );
        eprintln!(
            "[{}] {}",
            session.status().stage.name(),
            session.status().message
        );
    }
    let mut recorder = Some(recorder);
    let result = track_loop(
        args,
        &mut session,
        recorder.as_mut().expect("created"),
        stop,
    );
    let recorder = recorder.take().expect("created");
    match result {
        Ok(mut summary) => {
            if summary.frames == 0 {
                recorder.abandon();
                return Err(crate::session::input(
                    frames_what,
                    format!(
                        "no frames were tracked: the source ended after {} frame(s) while {} ({})",
                        summary.source_frames,
                        session.status().stage.name(),
                        session.status().message
                    ),
                ));
            }
            let mut recorder = recorder;
            recorder.finish()?;
            summary.backend = session.describe_backend();
            println!("{summary}");
            Ok(summary)
        }
        Err(e) => {
            if recorder.rows() == 0 {
                recorder.abandon();
            } else {
                let mut recorder = recorder;
                if let Err(w) = recorder.finish() {
                    eprintln!("{w}");
                } else if !quiet {
                    eprintln!(
                        "wrote the {} tracked frame(s) before the error to {}",
                        recorder.rows(),
                        args.out_csv.display()
                    );
                }
            }
            Err(e)
        }
    }
}

fn track_loop(
    args: &TrackArgs,
    session: &mut Session,
    recorder: &mut Recorder,
    stop: &AtomicBool,
) -> Result<TrackSummary, TrackCliError> {
    let quiet = args.quiet;
    let t_start = Instant::now();
    let mut last_print = Instant::now();
    let mut last_stage = session.status().stage;
    let (mut n, mut read, mut sum_f, mut sum_ess, mut seg_s, mut step_s) =
        (0usize, 0usize, 0.0, 0.0, 0.0, 0.0);
    let (mut first_tracked, mut lost, mut interrupted) = (None, 0usize, false);
    let mut dim = 0;
    loop {
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        if args.max_frames.is_some_and(|m| read >= m) {
            break;
        }
        let Some(step) = session.step()? else {
            break;
        };
        read += 1;
        let status = &step.status;
        if let Some(t) = &step.tracked {
            recorder.record(step.frame, &t.pose)?;
            first_tracked.get_or_insert(step.frame);
            n += 1;
            sum_f += t.report.residual;
            sum_ess += t.report.ess;
            seg_s += t.segment_ms / 1e3;
            step_s += t.step_ms / 1e3;
            dim = session.tracker().map_or(0, |t| t.body().dim());
        }
        if let Some(e) = &step.event {
            if e.starts_with("lost") {
                lost += 1;
            }
            if !quiet {
                eprintln!("frame {}: {e}", step.frame);
            }
        }
        if quiet {
            continue;
        }
        let changed = status.stage != last_stage;
        last_stage = status.stage;
        if changed || last_print.elapsed().as_secs_f64() >= 1.0 {
            last_print = Instant::now();
            match (&step.tracked, status.stage) {
                (Some(t), Stage::Tracking) => eprintln!(
                    "frame {}: {:.1} frames/s, F {:.4}, ESS {:.1}/{}, {} evaluations [{}]",
                    step.frame,
                    n as f64 / t_start.elapsed().as_secs_f64(),
                    t.report.residual,
                    t.report.ess,
                    args.particles,
                    t.report.evaluations,
                    session.describe_backend()
                ),
                _ => eprintln!(
                    "frame {}: [{}] {} ({:.0} %)",
                    step.frame,
                    status.stage.name(),
                    status.message,
                    100.0 * status.progress
                ),
            }
        }
    }
    let per = |s: f64| 1e3 * s / n.max(1) as f64;
    Ok(TrackSummary {
        frames: n,
        source_frames: read,
        background_frames: session.background_frames(),
        first_tracked,
        lost,
        interrupted,
        particles: args.particles,
        filter: args.filter,
        dim,
        backend: session.describe_backend(),
        camera: session.camera_note().to_string(),
        observation: session.describe_observation(),
        frames_per_second: n as f64 / (seg_s + step_s).max(1e-9),
        mean_segment_ms: per(seg_s),
        mean_step_ms: per(step_s),
        mean_residual: sum_f / n.max(1) as f64,
        mean_ess: sum_ess / n.max(1) as f64,
        csv: args.out_csv.clone(),
        bvh: args.out_bvh.clone(),
    })
}

//! `posecloud track`: RTPF tracking of a video, image folder or webcam on
//! the command line, as a library function with its clap arguments
//! ([`TrackArgs`], [`run_track`]); `crates/app` wires it in as a
//! subcommand.
//!
//! Pipeline per run:
//!
//! 1. the body (`--body BODY.bvh`, capsules dressed with
//!    [`vision::dress_skeleton`]'s adult proportions, the shape the
//!    segmenter and the synthetic renderer assume) and the initial pose
//!    (frame `--init-frame` of `--init`, default the body file);
//! 2. the camera file, checked against the frames' size (a camera of the
//!    same aspect ratio at another resolution is rescaled with
//!    [`vision::resize_camera`]; another aspect ratio is an error) and
//!    resized to the label resolution (160 × 120 by default);
//! 3. the background model from `--background FILE` or the first
//!    `--background-frames K` frames (default: K = 1, the first frame of
//!    the source, which must show the empty scene);
//! 4. the colour models learned from the first tracked frame with the
//!    initial pose (RTPF §IV-D, [`vision::Segmenter::learn_colours_from_pose`]);
//! 5. per frame: segmentation into head / skin / shirt / trousers, one
//!    [`Tracker::step`] (body parts compared through
//!    [`vision::ClassMap::label_table`]), one CSV row of joint positions.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Args, ValueEnum};
use skeleton::{Bvh, PoseBatch, Skeleton};
use vision::cli::SleevesArg;
use vision::{
    BodyShape, ClassMap, Frame, FrameSource, SegmentParams, Segmentation, Segmenter,
    dress_skeleton, load_camera, load_rgb, open_source, resize_camera,
};

use crate::backend::BackendChoice;
use crate::body::{Selection, TrackedBody};
use crate::error::TrackError;
use crate::start::{self, StartPose};
use crate::tracker::{FilterKind, Tracker, TrackerConfig};

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

/// `posecloud track --frames SRC --camera CAMERA.toml --body BODY.bvh
/// --out-csv EST.csv …`
#[derive(Args, Clone, Debug, PartialEq)]
pub struct TrackArgs {
    /// Frames: a folder of PNG/JPEG (a `posecloud render` folder reads its
    /// frame_*.png), a glob, a video file (ffmpeg), a .y4m file, or
    /// webcam / webcam:N / webcam:N@WxH.
    #[arg(long)]
    pub frames: String,
    /// Camera file (TOML: width, height, fx, fy, cx, cy, position, look_at,
    /// up). A camera of the frames' aspect ratio at another resolution is
    /// rescaled to the frames' size; another aspect ratio is an error.
    #[arg(long)]
    pub camera: PathBuf,
    /// The subject's skeleton (BVH hierarchy; bone lengths of the person).
    #[arg(long)]
    pub body: PathBuf,
    /// BVH file whose frame --init-frame is the pose in the first tracked
    /// frame (default: the --body file). Same joints as --body.
    #[arg(long)]
    pub init: Option<PathBuf>,
    /// Frame of --init giving the initial pose, 0-based.
    #[arg(long, default_value_t = 0)]
    pub init_frame: usize,
    /// Instead of --init: the person stands in this pose (arms-down or
    /// t-pose), facing the camera, in the first tracked frame; where is
    /// found by a search over the global position against the foreground
    /// (depth gives the scale).
    #[arg(long, conflicts_with_all = ["init", "init_frame"])]
    pub start_pose: Option<StartPose>,
    /// With --start-pose: the search's centre, metres along the camera's
    /// axis (it covers ±2 m in depth, ±1.5 m sideways, ±0.4 m in height
    /// around that point at the body file's hip height).
    #[arg(long, default_value_t = 3.0)]
    pub start_distance: f64,
    /// Image of the empty scene (the size of the frames).
    #[arg(long, conflicts_with = "background_frames")]
    pub background: Option<PathBuf>,
    /// Learn the background from the first K frames, which must show the
    /// empty scene and are not tracked. Default when no --background is
    /// given: 1 (the first frame of the source must be empty).
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
    /// Output CSV: `frame` then `<joint>_x,<joint>_y,<joint>_z` for every
    /// joint of the body (world positions in the BVH's units and axes, as
    /// `posecloud fk` prints), one row per tracked frame.
    #[arg(long)]
    pub out_csv: PathBuf,
    /// Also write the estimated motion as BVH (the body's hierarchy and
    /// channels).
    #[arg(long)]
    pub out_bvh: Option<PathBuf>,
    /// Stop after this many tracked frames (needed for webcams).
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
    /// σ_F of RTPF Eq. 2.
    #[arg(long, default_value_t = 0.1)]
    pub sigma_f: f64,
    /// Diffusion σ of the root position per frame (m).
    #[arg(long, default_value_t = 0.01)]
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
    /// The arguments with their defaults for the required paths.
    pub fn new(
        frames: impl Into<String>,
        camera: impl Into<PathBuf>,
        body: impl Into<PathBuf>,
        out_csv: impl Into<PathBuf>,
    ) -> Self {
        Self {
            frames: frames.into(),
            camera: camera.into(),
            body: body.into(),
            init: None,
            init_frame: 0,
            start_pose: None,
            start_distance: 3.0,
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
            sigma_f: 0.1,
            sigma_translation: 0.01,
            sigma_limb: 0.08,
            sigma_trunk: 0.02,
            sampling: SamplingArg::Partitioned,
            width: gpu::DEFAULT_WIDTH,
            height: gpu::DEFAULT_HEIGHT,
            fps: vision::sources::DEFAULT_SEQUENCE_FPS,
            quiet: false,
        }
    }
}

/// Errors of `posecloud track`; every one names the flag and file (or
/// frame) at fault.
#[derive(Debug, thiserror::Error)]
pub enum TrackCliError {
    /// Bad input: `what` is the flag with its value, e.g.
    /// `--camera cam.toml`.
    #[error("{what}: {message}")]
    Input { what: String, message: String },
    /// The tracker failed.
    #[error("tracking: {0}")]
    Track(#[from] TrackError),
}

fn input(what: impl Into<String>, message: impl ToString) -> TrackCliError {
    TrackCliError::Input {
        what: what.into(),
        message: message.to_string(),
    }
}

fn flag_path(flag: &str, path: &Path) -> String {
    format!("{flag} {}", path.display())
}

/// What a run did (also printed at its end).
#[derive(Clone, Debug, PartialEq)]
pub struct TrackSummary {
    /// Frames tracked (rows of the CSV).
    pub frames: usize,
    /// Source frames used for the background model.
    pub background_frames: usize,
    pub particles: usize,
    pub filter: FilterKind,
    /// D, the tracked parameters.
    pub dim: usize,
    /// The likelihood back end ([`Tracker::describe`]).
    pub backend: String,
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
            "tracked {} frames ({} background) with {} N = {}, D = {}: {:.1} frames/s \
             (segmentation {:.1} ms, tracker step {:.1} ms per frame)",
            self.frames,
            self.background_frames,
            self.filter.name(),
            self.particles,
            self.dim,
            self.frames_per_second,
            self.mean_segment_ms,
            self.mean_step_ms
        )?;
        writeln!(
            f,
            "mean residual F {:.4}, mean ESS {:.1} of {}; likelihood: {}",
            self.mean_residual, self.mean_ess, self.particles, self.backend
        )?;
        write!(f, "wrote {}", self.csv.display())?;
        if let Some(b) = &self.bvh {
            write!(f, " and {}", b.display())?;
        }
        Ok(())
    }
}

/// The tracked selection of `--track` on `skeleton`.
fn selection(spec: &str, skeleton: &Skeleton) -> Result<Selection, TrackCliError> {
    let upper = Selection::cmu_upper_body();
    let has_all = |sel: &Selection| match sel {
        Selection::All => true,
        Selection::Joints(names) => names.iter().all(|n| skeleton.find(n).is_ok()),
    };
    Ok(match spec.trim() {
        "auto" => {
            if has_all(&upper) {
                upper
            } else {
                Selection::All
            }
        }
        "all" => Selection::All,
        "upper" => upper,
        list => {
            let names: Vec<String> = list
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            if names.is_empty() {
                return Err(input(
                    format!("--track {spec}"),
                    "expected auto, upper, all or joint names",
                ));
            }
            Selection::Joints(names)
        }
    })
    .and_then(|sel| {
        if let Selection::Joints(names) = &sel
            && let Some(missing) = names.iter().find(|n| skeleton.find(n).is_err())
        {
            return Err(input(
                format!("--track {spec}"),
                format!("the body has no joint named `{missing}`"),
            ));
        }
        Ok(sel)
    })
}

/// The body skeleton and the initial pose, checked against each other.
fn load_body_and_init(args: &TrackArgs) -> Result<(Bvh, Vec<f64>), TrackCliError> {
    let body = Bvh::load(&args.body).map_err(|e| input(flag_path("--body", &args.body), e))?;
    let init_path = args.init.as_ref().unwrap_or(&args.body);
    let init_flag = if args.init.is_some() {
        "--init"
    } else {
        "--body (the initial pose's file)"
    };
    let init_bvh = if args.init.is_some() {
        Bvh::load(init_path).map_err(|e| input(flag_path("--init", init_path), e))?
    } else {
        body.clone()
    };
    let names =
        |s: &Skeleton| -> Vec<String> { s.joints().iter().map(|j| j.name.clone()).collect() };
    let (bn, in_) = (names(&body.skeleton), names(&init_bvh.skeleton));
    if bn.len() != in_.len() || body.skeleton.dof() != init_bvh.skeleton.dof() {
        return Err(input(
            flag_path("--init", init_path),
            format!(
                "{} joints / {} pose parameters, but the body {} has {} joints / {}",
                in_.len(),
                init_bvh.skeleton.dof(),
                args.body.display(),
                bn.len(),
                body.skeleton.dof()
            ),
        ));
    }
    if let Some((a, b)) = bn.iter().zip(&in_).find(|(a, b)| a != b) {
        return Err(input(
            flag_path("--init", init_path),
            format!(
                "joint `{b}` where the body {} has `{a}` (the same skeleton is needed)",
                args.body.display()
            ),
        ));
    }
    if args.init_frame >= init_bvh.frames.len() {
        return Err(input(
            format!("--init-frame {}", args.init_frame),
            format!(
                "out of range: {} has {} frames",
                init_path.display(),
                init_bvh.frames.len()
            ),
        ));
    }
    let pose = init_bvh.frames.pose(args.init_frame).to_vec();
    check_init_pose(&body.skeleton, &pose).map_err(|m| {
        input(
            format!(
                "{init_flag} {} frame {}",
                init_path.display(),
                args.init_frame
            ),
            m,
        )
    })?;
    Ok((body, pose))
}

/// A usable initial pose: the skeleton's length, finite values and finite
/// forward kinematics. The message says which parameter or joint fails.
///
/// # Errors
/// The message.
pub fn check_init_pose(skeleton: &Skeleton, pose: &[f64]) -> Result<(), String> {
    if pose.len() != skeleton.dof() {
        return Err(format!(
            "{} pose parameters for a skeleton of {}",
            pose.len(),
            skeleton.dof()
        ));
    }
    if let Some(i) = pose.iter().position(|v| !v.is_finite()) {
        return Err(format!(
            "pose parameter {i} is {} (the initial pose must be finite)",
            pose[i]
        ));
    }
    let world = skeleton
        .forward_kinematics(pose)
        .map_err(|e| e.to_string())?;
    if let Some(j) = world
        .iter()
        .position(|w| !w.translation.vector.iter().all(|v| v.is_finite()))
    {
        return Err(format!(
            "joint `{}` has a non-finite position",
            skeleton.joint(j).name
        ));
    }
    Ok(())
}

/// The frame-size camera: the file's camera, rescaled when only its
/// resolution differs from the frames'.
fn frame_camera(
    args: &TrackArgs,
    size: (u32, u32),
    quiet: bool,
) -> Result<gpu::Camera, TrackCliError> {
    let what = flag_path("--camera", &args.camera);
    let cam = load_camera(&args.camera).map_err(|e| input(&what, e))?;
    let (cw, ch) = (cam.width(), cam.height());
    let (fw, fh) = size;
    if (cw, ch) == (fw, fh) {
        return Ok(cam);
    }
    // Same aspect ratio (within 0.5 %): a calibration at another resolution.
    let a = u64::from(cw) * u64::from(fh);
    let b = u64::from(ch) * u64::from(fw);
    if a.abs_diff(b) as f64 > 0.005 * a.max(b) as f64 {
        return Err(input(
            what,
            format!(
                "the camera is {cw} × {ch} but the frames of --frames {} are {fw} × {fh}: \
                 another aspect ratio cannot be rescaled (calibrate the camera at the frames' size)",
                args.frames
            ),
        ));
    }
    if !quiet {
        eprintln!(
            "camera {} is {cw} × {ch}, the frames {fw} × {fh}: intrinsics rescaled",
            args.camera.display()
        );
    }
    resize_camera(&cam, fw, fh).map_err(|e| input(what, e))
}

/// The background model; returns how many source frames it used.
fn learn_background(
    args: &TrackArgs,
    seg: &mut Segmenter,
    source: &mut dyn FrameSource,
) -> Result<usize, TrackCliError> {
    if let Some(path) = &args.background {
        let what = flag_path("--background", path);
        let (w, h, rgb) = load_rgb(path).map_err(|e| input(&what, e))?;
        let (fw, fh) = source.size();
        if (w, h) != (fw, fh) {
            return Err(input(
                what,
                format!("the image is {w} × {h}, the frames {fw} × {fh}"),
            ));
        }
        let f = Frame::new(w, h, rgb, 0.0, 0).map_err(|e| input(&what, e))?;
        seg.learn_background(&[&f]).map_err(|e| input(what, e))?;
        return Ok(0);
    }
    let k = args.background_frames.unwrap_or(1);
    let what = format!("--background-frames {k}");
    if k == 0 {
        return Err(input(what, "must be ≥ 1"));
    }
    let mut bg = Vec::with_capacity(k);
    for i in 0..k {
        match source
            .next_frame()
            .map_err(|e| input(format!("--frames {}", args.frames), e))?
        {
            Some(f) => bg.push(f),
            None => {
                return Err(input(
                    format!("--frames {}", args.frames),
                    format!(
                        "no frames: the source ended after {i} frames, before the {k} background frame(s)"
                    ),
                ));
            }
        }
    }
    seg.learn_background(&bg.iter().collect::<Vec<_>>())
        .map_err(|e| input(what, e))?;
    Ok(k)
}

/// Runs `posecloud track` (module docs): progress on stderr, the summary
/// on stdout.
///
/// # Errors
/// [`TrackCliError::Input`] naming the flag and file for bad input (no
/// frames, a camera whose aspect ratio is not the frames', a body/init
/// mismatch, a non-finite initial pose, an out-of-range `--init-frame`,
/// `--particles 0`, unwritable outputs); [`TrackCliError::Track`] when the
/// tracker fails.
pub fn run_track(args: &TrackArgs) -> Result<TrackSummary, TrackCliError> {
    if args.particles == 0 {
        return Err(input("--particles 0", "need at least one particle"));
    }
    if !(args.sigma_f.is_finite() && args.sigma_f > 0.0) {
        return Err(input(
            format!("--sigma-f {}", args.sigma_f),
            "must be finite and > 0",
        ));
    }
    for (flag, v) in [
        ("--sigma-translation", args.sigma_translation),
        ("--sigma-limb", args.sigma_limb),
        ("--sigma-trunk", args.sigma_trunk),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(input(format!("{flag} {v}"), "must be finite and ≥ 0"));
        }
    }
    if args.width == 0 || args.height == 0 {
        return Err(input(
            format!("--width {} --height {}", args.width, args.height),
            "must be ≥ 1",
        ));
    }
    if !(args.start_distance.is_finite() && args.start_distance > 0.0) {
        return Err(input(
            format!("--start-distance {}", args.start_distance),
            "must be finite and > 0",
        ));
    }
    let quiet = args.quiet;
    let (body_bvh, mut init) = load_body_and_init(args)?;
    let dressed = dress_skeleton(&body_bvh.skeleton, &BodyShape::default())
        .map_err(|e| input(flag_path("--body", &args.body), e))?;
    let sel = selection(&args.track, &dressed)?;
    let mut body = TrackedBody::new(dressed.clone(), &sel, &init)?;

    // Frames and camera.
    let frames_what = format!("--frames {}", args.frames);
    let mut source = open_source(&args.frames, args.fps).map_err(|e| input(&frames_what, e))?;
    let size = source.size();
    let camera = frame_camera(args, size, quiet)?;
    let label_camera = resize_camera(&camera, args.width, args.height)
        .map_err(|e| input(flag_path("--camera", &args.camera), e))?;
    let params = SegmentParams {
        width: args.width,
        height: args.height,
        ..SegmentParams::default()
    };
    let mut seg = Segmenter::new(params, size.0, size.1).map_err(|e| input(&frames_what, e))?;
    let background_frames = learn_background(args, &mut seg, source.as_mut())?;

    // The first tracked frame: colours from the initial pose.
    let Some(first) = source.next_frame().map_err(|e| input(&frames_what, e))? else {
        return Err(input(
            frames_what,
            format!("no frames to track after the {background_frames} background frame(s)"),
        ));
    };
    if let Some(kind) = args.start_pose {
        let what = format!("--start-pose on {frames_what} frame {}", first.index);
        let mask = seg.foreground_mask(&first).map_err(|e| input(&what, e))?;
        let start_pose =
            start::start_pose_in_view(&dressed, kind, &label_camera, args.start_distance, &init)
                .map_err(|e| input(&what, e))?;
        // The search's body: the start pose's untracked joints, its root
        // box around the search's centre.
        body = TrackedBody::new(dressed.clone(), &sel, &start_pose)?;
        let (found, f) = start::place_in_view(&body, &label_camera, mask, &start_pose)
            .map_err(|e| input(&what, e))?;
        if !quiet {
            let r = &found[..3];
            eprintln!(
                "start pose {} found at ({:.2}, {:.2}, {:.2}) m, silhouette F {f:.3}",
                kind.name(),
                r[0],
                r[1],
                r[2]
            );
        }
        init = found;
        body = TrackedBody::new(dressed.clone(), &sel, &init)?;
    }
    let class_map = ClassMap::for_sleeves(args.sleeves.into());
    let report = seg
        .learn_colours_from_pose(&first, &dressed, &camera, &init, &class_map)
        .map_err(|e| {
            input(
                format!("{frames_what} frame {}", first.index),
                format!("learning colours from the initial pose: {e}"),
            )
        })?;

    let config = TrackerConfig {
        particles: args.particles,
        filter: args.filter,
        sigma_f: args.sigma_f,
        sigma_translation: args.sigma_translation,
        sigma_rotation: args.sigma_limb,
        sigma_trunk: args.sigma_trunk,
        seed: args.seed,
        backend: args.backend,
        label_map: class_map.label_table(),
        partitioned: args.sampling == SamplingArg::Partitioned,
        ..TrackerConfig::default()
    };
    let mut tracker = Tracker::new(body, label_camera, &init, None, config)?;
    let backend = tracker.describe();
    if !quiet {
        eprintln!(
            "tracking {} ({} × {} → {} × {} labels) with {} N = {}, D = {}; colours from frame {} ({} skin, {} hair, {} shirt, {} trousers pixels); likelihood: {backend}",
            source.name(),
            size.0,
            size.1,
            args.width,
            args.height,
            args.filter.name(),
            args.particles,
            tracker.body().dim(),
            first.index,
            report.skin,
            report.hair,
            report.shirt,
            report.trousers
        );
    }

    // Outputs.
    let csv_what = flag_path("--out-csv", &args.out_csv);
    let mut csv = std::io::BufWriter::new(
        std::fs::File::create(&args.out_csv).map_err(|e| input(&csv_what, e))?,
    );
    let joints: Vec<usize> = (0..body_bvh.skeleton.len())
        .filter(|&j| !body_bvh.is_end_site(j))
        .collect();
    let mut header = String::from("frame");
    for &j in &joints {
        let n = &body_bvh.skeleton.joint(j).name;
        header += &format!(",{n}_x,{n}_y,{n}_z");
    }
    writeln!(csv, "{header}").map_err(|e| input(&csv_what, e))?;
    let mut estimates = PoseBatch::from_vec(body_bvh.skeleton.dof(), Vec::new())
        .map_err(|e| input(flag_path("--body", &args.body), e))?;

    // Track.
    let t_start = Instant::now();
    let mut last_print = Instant::now();
    let (mut n, mut sum_f, mut sum_ess, mut seg_s, mut step_s) = (0usize, 0.0, 0.0, 0.0, 0.0);
    let mut out = Segmentation::default();
    let mut pending = Some(first);
    loop {
        if args.max_frames.is_some_and(|m| n >= m) {
            break;
        }
        let frame = match pending.take() {
            Some(f) => f,
            None => match source.next_frame().map_err(|e| input(&frames_what, e))? {
                Some(f) => f,
                None => break,
            },
        };
        let t0 = Instant::now();
        let frame_what = || format!("{frames_what} frame {}", frame.index);
        seg.segment_into(&frame, &mut out)
            .map_err(|e| input(frame_what(), e))?;
        let obs = out.observation().map_err(|e| input(frame_what(), e))?;
        let t1 = Instant::now();
        let step = tracker.step(&obs)?;
        let t2 = Instant::now();
        seg_s += (t1 - t0).as_secs_f64();
        step_s += (t2 - t1).as_secs_f64();
        let pose = match args.estimate {
            EstimateArg::Map => &step.map_pose,
            EstimateArg::Mean => &step.mean_pose,
        };
        let world = body_bvh.skeleton.forward_kinematics(pose).map_err(|e| {
            input(
                frame_what(),
                format!("forward kinematics of the estimate: {e}"),
            )
        })?;
        let mut row = frame.index.to_string();
        for &j in &joints {
            let t = world[j].translation.vector;
            row += &format!(",{:.6},{:.6},{:.6}", t.x, t.y, t.z);
        }
        writeln!(csv, "{row}").map_err(|e| input(&csv_what, e))?;
        estimates.push(pose).map_err(|e| input(frame_what(), e))?;
        n += 1;
        sum_f += step.residual;
        sum_ess += step.ess;
        if !quiet && (n == 1 || last_print.elapsed().as_secs_f64() >= 1.0) {
            last_print = Instant::now();
            eprintln!(
                "frame {}: {:.1} frames/s, F {:.4}, ESS {:.1}/{}, {} evaluations [{}]",
                frame.index,
                n as f64 / t_start.elapsed().as_secs_f64(),
                step.residual,
                step.ess,
                args.particles,
                step.evaluations,
                backend
            );
        }
    }
    csv.flush().map_err(|e| input(&csv_what, e))?;
    let elapsed = t_start.elapsed().as_secs_f64();

    if let Some(path) = &args.out_bvh {
        let what = flag_path("--out-bvh", path);
        let frame_time = source
            .fps()
            .filter(|f| f.is_finite() && *f > 0.0)
            .map_or(body_bvh.frame_time, |f| 1.0 / f);
        let clip = Bvh {
            skeleton: body_bvh.skeleton.clone(),
            frame_time,
            frames: estimates,
            channels: body_bvh.channels.clone(),
        };
        clip.save(path).map_err(|e| input(what, e))?;
    }
    let per = |s: f64| 1e3 * s / n.max(1) as f64;
    let summary = TrackSummary {
        frames: n,
        background_frames,
        particles: args.particles,
        filter: args.filter,
        dim: tracker.body().dim(),
        backend,
        frames_per_second: n as f64 / elapsed.max(1e-9),
        mean_segment_ms: per(seg_s),
        mean_step_ms: per(step_s),
        mean_residual: sum_f / n.max(1) as f64,
        mean_ess: sum_ess / n.max(1) as f64,
        csv: args.out_csv.clone(),
        bvh: args.out_bvh.clone(),
    };
    println!("{summary}");
    Ok(summary)
}

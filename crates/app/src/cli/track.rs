//! `posecloud track`: RTPF tracking of a video, image folder or webcam
//! ([`track::run`]): no set-up file is needed (default camera of `--fov`,
//! default body at `--subject-height`, the guided start); each one given
//! overrides its default. Ctrl-C ends the run like the end of the source
//! (the CSV and BVH complete); a second Ctrl-C writes the rows so far and
//! exits ([`super::ctrl_c_stop`]).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use anyhow::Result;
use clap::{Args, ValueEnum};
use track::run::{Progress as RunProgress, TrackRun, run_until};
use track::{BackendChoice, FilterKind, ObservationMode, StartPose};
use track::{CameraSpec, FilterSettings, KnownPose, SessionSpec, Stage, Subject};

use super::flags::in_flag_words;
use super::keypoints::KeypointBackendArg;
use super::progress::StderrProgress;
use super::vision_cmds::SleevesArg;
use super::{LabelSizeArgs, SourceArgs};

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

/// The filters of RTPF §IV–V.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FilterArg {
    Pfs,
    Hspc,
    Hpor,
    Hkfs,
    Pfrth,
}

impl From<FilterArg> for FilterKind {
    fn from(f: FilterArg) -> Self {
        match f {
            FilterArg::Pfs => FilterKind::Pfs,
            FilterArg::Hspc => FilterKind::Hspc,
            FilterArg::Hpor => FilterKind::Hpor,
            FilterArg::Hkfs => FilterKind::Hkfs,
            FilterArg::Pfrth => FilterKind::Pfrth,
        }
    }
}

/// The likelihood back end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// The GPU on a hardware adapter, else the CPU.
    Auto,
    Cpu,
    Gpu,
}

impl From<BackendArg> for BackendChoice {
    fn from(b: BackendArg) -> Self {
        match b {
            BackendArg::Auto => BackendChoice::Auto,
            BackendArg::Cpu => BackendChoice::Cpu,
            BackendArg::Gpu => BackendChoice::Gpu,
        }
    }
}

/// The likelihood terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ObservationArg {
    /// RTPF's body-part regions.
    Regions,
    /// BlazePose 2D keypoints (detected on their own thread).
    Keypoints,
    /// Both.
    Both,
}

impl From<ObservationArg> for ObservationMode {
    fn from(o: ObservationArg) -> Self {
        match o {
            ObservationArg::Regions => ObservationMode::Regions,
            ObservationArg::Keypoints => ObservationMode::Keypoints,
            ObservationArg::Both => ObservationMode::Both,
        }
    }
}

/// The pose the person takes for the guided start, facing the camera.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StartPoseArg {
    ArmsDown,
    TPose,
}

impl From<StartPoseArg> for StartPose {
    fn from(p: StartPoseArg) -> Self {
        match p {
            StartPoseArg::ArmsDown => StartPose::ArmsDown,
            StartPoseArg::TPose => StartPose::TPose,
        }
    }
}

/// `posecloud track --frames SRC --out-csv EST.csv [--subject-height M] …`
#[derive(Args, Clone, Debug, PartialEq)]
pub struct TrackArgs {
    /// The frames and the empty scene (without either empty-scene flag,
    /// the guided start learns the background from a still scene).
    #[command(flatten)]
    pub source: SourceArgs,
    /// Camera file (TOML: width, height, fx, fy, cx, cy, position, look_at,
    /// up). Default: a level camera at the origin, --fov wide. A camera of
    /// the frames' aspect ratio at another resolution is rescaled.
    #[arg(long)]
    pub camera: Option<PathBuf>,
    /// Horizontal field of view of the default camera, degrees.
    #[arg(long, default_value_t = track::DEFAULT_FOV_DEG)]
    pub fov: f64,
    /// The subject's skeleton (BVH). Default: the CMU skeleton of
    /// assets/motions at --subject-height.
    #[arg(long)]
    pub bvh: Option<PathBuf>,
    /// The subject's height in metres (default 1.70 for the default body;
    /// a --bvh file is scaled to it when given).
    #[arg(long)]
    pub subject_height: Option<f64>,
    /// A known initial pose instead of the guided start: frame --frame of
    /// this BVH (same joints as the body; needs --camera).
    #[arg(long)]
    pub init: Option<PathBuf>,
    /// Frame of --init (or of --bvh) holding the initial pose, 0-based;
    /// given alone, the body file's frame.
    #[arg(long)]
    pub frame: Option<usize>,
    /// The pose the person takes to start (guided start), facing the
    /// camera.
    #[arg(long, value_enum, default_value = "arms-down")]
    pub start_pose: StartPoseArg,
    /// Number of particles N.
    #[arg(long, default_value_t = 300)]
    pub particles: usize,
    /// The filter (RTPF §IV–V).
    #[arg(long, value_enum, default_value = "pfrth")]
    pub filter: FilterArg,
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
    /// Pose estimate written.
    #[arg(long, value_enum, default_value = "map")]
    pub estimate: EstimateArg,
    /// Likelihood back end.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendArg,
    /// Likelihood terms.
    #[arg(long, value_enum, default_value = "both")]
    pub observation: ObservationArg,
    /// σ of the keypoint term as a fraction of the person's size in the
    /// image (shoulders to hips).
    #[arg(long, default_value_t = track::DEFAULT_KEYPOINT_SIGMA)]
    pub keypoint_sigma: f64,
    /// Arm hypotheses a frame lifted onto the detected elbows and wrists
    /// (0: none).
    #[arg(long, default_value_t = track::DEFAULT_KEYPOINT_LIFTS)]
    pub keypoint_lifts: usize,
    /// σ of the keypoint term's depth order (the detector's relative depth
    /// of each limb segment's ends) as a fraction of the person's size;
    /// 0 leaves the detector's depth out.
    #[arg(long, default_value_t = track::DEFAULT_DEPTH_SIGMA)]
    pub keypoint_depth_sigma: f64,
    /// Weight of the arms' anatomical prior: a forearm bent backwards
    /// through the elbow costs up to ≈ 11 nats × the weight (0: off, the
    /// default: it keeps implausible arms out without lowering the elbow
    /// error on the evaluation clips, docs/track.md).
    #[arg(long, default_value_t = track::DEFAULT_ANATOMY_WEIGHT)]
    pub anatomy_weight: f64,
    /// Weight of the learned arm prior: how people hold their arms, a
    /// kernel density over upper-arm and forearm directions from motion
    /// capture (the evaluation set's tuning motions); an arm's pose costs
    /// up to 10 nats × the weight (0: off; 1, the default, lowered the
    /// elbow error on the validation clips by about 4°, docs/track.md).
    #[arg(long, default_value_t = track::DEFAULT_ARM_PRIOR_WEIGHT)]
    pub arm_prior_weight: f64,
    /// The learned arm prior's samples from a table of one's own instead
    /// of the committed one: a CSV of upper-arm and forearm directions
    /// (`cargo run -p track --example arm_prior_table -- --also
    /// MOTION.bvh OUT.csv`, assets/priors/README.md).
    #[arg(long)]
    pub arm_prior_table: Option<PathBuf>,
    /// Where the keypoint network runs: auto (the GPU on a hardware
    /// adapter, else tract on the CPU; a software adapter such as lavapipe
    /// is slower than tract), cpu (tract) or gpu (WGSL kernels on wgpu; an
    /// error without a GPU).
    #[arg(long, value_enum, default_value = "auto")]
    pub keypoint_backend: KeypointBackendArg,
    /// How the written estimate is smoothed over time: `none` (each
    /// frame's MAP), `lag` (fixed lag of 0.2 s: frame t is written when
    /// frame t + 6 is tracked), `lag:N` (N frames), or `full` (over the
    /// whole run, written at its end or on Ctrl-C): the most probable path
    /// through the cloud's distinct arm configurations, which keeps each
    /// arm's depth branch unless the evidence turns. Measured in
    /// docs/track.md (it does not lower the elbow error on the evaluation
    /// clips, hence off by default).
    #[arg(long, default_value = "none", value_parser = parse_smoothing)]
    pub smooth: track::smooth::Smoothing,
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
    #[command(flatten)]
    pub labels: LabelSizeArgs,
    /// No progress on stderr (the summary is still printed).
    #[arg(long)]
    pub quiet: bool,
    /// After the summary, a table of each stage's wall time per tracked
    /// frame (decode, foreground, keypoints, the tracker's parts, output):
    /// mean, 95th percentile and share of the frame (docs/track.md).
    #[arg(long)]
    pub profile: bool,
}

fn parse_smoothing(s: &str) -> std::result::Result<track::smooth::Smoothing, String> {
    s.parse()
}

impl TrackArgs {
    /// The library's run.
    pub fn to_run(&self) -> TrackRun {
        TrackRun {
            spec: SessionSpec {
                frames: self.source.frames.clone(),
                camera: CameraSpec::new(self.camera.clone(), self.fov),
                subject: Subject {
                    body: self.bvh.clone(),
                    height: self.subject_height,
                },
                init: KnownPose::from_flags(self.init.clone(), self.frame),
                start_pose: self.start_pose.into(),
                background: self.source.empty_scene(),
                sleeves: self.sleeves.into(),
                track: self.track.clone(),
                label_size: self.labels.size(),
                arm_prior_table: self.arm_prior_table.clone(),
                ..SessionSpec::default()
            },
            settings: FilterSettings {
                particles: self.particles,
                filter: self.filter.into(),
                sigma_f: self.sigma_f,
                sigma_translation: self.sigma_translation,
                sigma_limb: self.sigma_limb,
                sigma_trunk: self.sigma_trunk,
                seed: self.seed,
                backend: self.backend.into(),
                partitioned: self.sampling == SamplingArg::Partitioned,
                mean_estimate: self.estimate == EstimateArg::Mean,
                observation: self.observation.into(),
                keypoint_sigma: self.keypoint_sigma,
                keypoint_lifts: self.keypoint_lifts,
                keypoint_depth_sigma: self.keypoint_depth_sigma,
                anatomy_weight: self.anatomy_weight,
                arm_prior_weight: self.arm_prior_weight,
                keypoint_backend: self.keypoint_backend.into(),
                smoothing: self.smooth,
                ..FilterSettings::default()
            },
            fps: self.source.fps,
            out_csv: self.out_csv.clone(),
            out_bvh: self.out_bvh.clone(),
            max_frames: self.max_frames,
            profile: self.profile,
        }
    }
}

/// Runs `posecloud track` with Ctrl-C as the stop flag.
///
/// # Errors
/// As [`run_until`]; the Ctrl-C handler cannot be installed.
pub fn track_command(a: &TrackArgs) -> Result<()> {
    track_until(a, super::ctrl_c_stop()?).map(drop)
}

/// [`run_until`] with progress on stderr and the summary on stdout.
///
/// # Errors
/// As [`run_until`].
pub fn track_until(a: &TrackArgs, stop: &AtomicBool) -> Result<track::run::TrackSummary> {
    let run = a.to_run();
    let mut bar: Option<StderrProgress> = None;
    let mut last_stage = None;
    let summary = run_until(&run, stop, &mut |p| match p {
        RunProgress::Opened(session) => {
            let total = StderrProgress::frames(session.source().frame_count(), a.max_frames);
            let b = StderrProgress::new(total, a.quiet);
            let (w, h) = session.source().size();
            b.say(&format!(
                "{} ({w} × {h} → {} labels); {}; body {:.2} m tall; {} N = {}; observation: {}; keypoints: {}; estimate: {}",
                session.source_name(),
                a.labels,
                session.camera_note(),
                session.stature(),
                run.settings.filter.name(),
                a.particles,
                session.describe_observation(),
                session.describe_keypoints(),
                run.settings
                    .smoothing
                    .describe(session.source().fps().unwrap_or(run.fps))
            ));
            b.say(&format!(
                "[{}] {}",
                session.status().stage.name(),
                session.status().message
            ));
            last_stage = Some(session.status().stage);
            bar = Some(b);
        }
        RunProgress::Step {
            session,
            step,
            tracked,
            elapsed,
        } => {
            let Some(b) = bar.as_mut() else { return };
            if let Some(e) = &step.event {
                b.say(&format!("frame {}: {e}", step.frame));
            }
            let status = &step.status;
            if last_stage != Some(status.stage) {
                last_stage = Some(status.stage);
                b.say(&format!(
                    "frame {}: [{}] {}",
                    step.frame,
                    status.stage.name(),
                    status.message
                ));
            }
            b.update(step.frame as u64 + 1, || {
                match (&step.tracked, status.stage) {
                    (Some(t), Stage::Tracking) => format!(
                        "frame {}: {:.1} frames/s, F {:.4}, ESS {:.1}/{}, {} evaluations [{}]",
                        step.frame,
                        tracked as f64 / elapsed.max(1e-9),
                        t.report.residual,
                        t.report.ess,
                        a.particles,
                        t.report.evaluations,
                        session.describe_backend()
                    ),
                    _ => format!(
                        "frame {}: [{}] {} ({:.0} %)",
                        step.frame,
                        status.stage.name(),
                        status.message,
                        100.0 * status.progress
                    ),
                }
            });
        }
        RunProgress::SavedBeforeError { rows } => {
            if !a.quiet {
                eprintln!(
                    "wrote the {rows} tracked frame(s) before the error to {}",
                    a.out_csv.display()
                );
            }
        }
        RunProgress::Warning(w) => eprintln!("{w}"),
    });
    if let Some(b) = &bar {
        b.finish();
    }
    let summary = summary.map_err(|e| in_flag_words(e.into()))?;
    super::print_out(&format!("{summary}\n"))?;
    if let Some(p) = &summary.profile {
        super::print_out(&format!("{p}\n"))?;
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--keypoint-backend` reaches the session's settings (default
    /// `auto`); a bad value is refused naming the flag.
    #[test]
    fn the_keypoint_backend_flag_reaches_the_settings() {
        crate::cli::keypoints::check_keypoint_backend_flag(
            &["track", "--frames", "x", "--out-csv", "y.csv"],
            |a: TrackArgs| a.to_run().settings.keypoint_backend,
            &[],
            "cuda",
        );
    }
}

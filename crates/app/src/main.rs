//! The `posecloud` binary. Without a subcommand it opens the interactive
//! IK playground (`--scene`, `--urdf`, `--bvh`, `--screenshot`, `--script`,
//! …). Subcommands are command-line tools: `posecloud fk FILE.bvh --frame N`
//! prints world joint positions (to compare our forward kinematics with any
//! other BVH tool), `posecloud info` describes a skeleton from a BVH or URDF
//! file or a preset, `posecloud render` / `segment` make and segment camera
//! frames (`crates/vision`), `posecloud track` tracks a person in them
//! (`crates/track`).

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::Parser;

#[derive(Parser)]
#[command(
    name = "posecloud",
    version,
    about = "Articulated bodies whose pose is a cloud of weighted particles"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<posecloud::cli::Command>,
    #[command(flatten)]
    gui: GuiArgs,
}

/// The windowed scenes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum SceneArg {
    /// IK playground: a human body with hand and foot targets.
    Human,
    /// IK playground: a four-joint arm.
    Arm,
    /// IK playground: a 30-joint chain with smoothness and obstacles.
    Chain,
    /// IK playground: a hand with fingertip targets.
    Hand,
    /// RTPF tracking from --frames (a video, folder or webcam), or a
    /// synthetic render of --bvh without it.
    #[value(alias = "tracking")]
    Track,
    /// PHYSPRIOR on the walk of --bvh (default the CMU walk).
    Walker,
    /// SPARSE on sensors synthesised from --bvh (default the CMU walk).
    Sparse,
}

/// Flags every window takes.
const WINDOW_FLAGS: &[&str] = &[
    "scene",
    "screenshot",
    "after_secs",
    "quit_after",
    "width",
    "height",
    "fixed_dt",
    "no_vsync",
];

impl SceneArg {
    /// The scene's own flags (clap ids); any other flag given with it is
    /// refused ([`check_scene_flags`]).
    fn flags(self) -> &'static [&'static str] {
        match self {
            Self::Human | Self::Arm | Self::Chain | Self::Hand => &[
                "urdf",
                "package_path",
                "bvh",
                "frame",
                "particles",
                "settings",
                "script",
                "report",
                "cloud_limit",
            ],
            Self::Track => &[
                "frames",
                "camera",
                "fov",
                "subject_height",
                "observation",
                "keypoint_depth_sigma",
                "keypoint_lifts",
                "keypoint_backend",
                "sleeves",
                "backend",
                "sampling",
                "start_pose",
                "bvh",
                "frame",
                "particles",
                "cloud_limit",
            ],
            Self::Walker => &["bvh", "particles", "cloud_limit"],
            Self::Sparse => &["bvh"],
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Human => "human",
            Self::Arm => "arm",
            Self::Chain => "chain",
            Self::Hand => "hand",
            Self::Track => "track",
            Self::Walker => "walker",
            Self::Sparse => "sparse",
        }
    }
}

/// Options of the playground window (used when no subcommand is given).
#[derive(clap::Args, Debug)]
struct GuiArgs {
    /// Scene to open.
    #[arg(long, value_enum, default_value = "human")]
    scene: SceneArg,
    /// Tracking scene: the frames (folder, glob, video, Y4M,
    /// webcam[:N[@WxH]]); without it a synthetic render of --bvh.
    #[arg(long)]
    frames: Option<String>,
    /// Tracking scene: the camera file (TOML). Default: with --frames a
    /// level camera at the origin, --fov wide; without, the synthetic
    /// walk's camera.
    #[arg(long)]
    camera: Option<PathBuf>,
    /// Tracking scene: horizontal field of view of the default camera,
    /// degrees (default 60).
    #[arg(long)]
    fov: Option<f64>,
    /// Tracking scene: the subject's height in metres (default 1.70; the
    /// default body, or --bvh scaled to it).
    #[arg(long)]
    subject_height: Option<f64>,
    /// Tracking scene: the likelihood terms, regions, keypoints or both
    /// (default both).
    #[arg(long, value_enum)]
    observation: Option<posecloud::cli::track::ObservationArg>,
    /// Tracking scene: σ of the keypoint term's depth order, a fraction of
    /// the person's size (default 0.5; 0 leaves the detector's depth out).
    #[arg(long)]
    keypoint_depth_sigma: Option<f64>,
    /// Tracking scene: arms lifted onto the detected elbows and wrists a
    /// frame (default 12; 0 none).
    #[arg(long)]
    keypoint_lifts: Option<usize>,
    /// Tracking scene: where the keypoint network runs, auto (the GPU on a
    /// hardware adapter, else tract on the CPU; default), cpu (tract) or
    /// gpu (on the window's own device).
    #[arg(long, value_enum)]
    keypoint_backend: Option<posecloud::cli::keypoints::KeypointBackendArg>,
    /// Tracking scene: the person's sleeves, short (arms are skin) or long.
    #[arg(long, value_enum)]
    sleeves: Option<posecloud::cli::vision_cmds::SleevesArg>,
    /// Tracking scene: the likelihood back end, auto (GPU on a hardware
    /// adapter, else CPU), cpu or gpu (on the window's own device).
    #[arg(long, value_enum)]
    backend: Option<posecloud::cli::track::BackendArg>,
    /// Tracking scene: how diffused particles move, partitioned (trunk,
    /// then each limb chain; default) or joint (all at once, RTPF).
    #[arg(long, value_enum)]
    sampling: Option<posecloud::cli::track::SamplingArg>,
    /// Tracking scene: the pose the person takes for the guided start,
    /// facing the camera: arms-down (the default with --frames) or t-pose.
    /// On the synthetic render: instead of the --bvh file's --frame.
    #[arg(long, value_enum)]
    start_pose: Option<posecloud::cli::track::StartPoseArg>,
    /// Open a robot arm from a URDF file instead of a scene.
    #[arg(long, conflicts_with = "bvh")]
    urdf: Option<PathBuf>,
    /// IK scenes: a folder searched first for a URDF's package://NAME/…
    /// meshes (the folder NAME itself or the folder holding it; then the
    /// URDF's folder and those above it). Repeatable.
    #[arg(long = "package-path", value_name = "DIR")]
    package_path: Vec<PathBuf>,
    /// Open a BVH skeleton in the pose of --frame instead of a scene.
    #[arg(long)]
    bvh: Option<PathBuf>,
    /// Frame of --bvh, 0-based.
    #[arg(long, default_value_t = 0)]
    frame: usize,
    /// Particles (1 … 10000; default: the scene's).
    #[arg(long)]
    particles: Option<usize>,
    /// Start with the settings in this TOML file (saved from the panel).
    #[arg(long)]
    settings: Option<PathBuf>,
    /// Save a screenshot (PNG) after --after-secs seconds and exit.
    #[arg(long)]
    screenshot: Option<PathBuf>,
    /// Seconds before the screenshot.
    #[arg(long, default_value_t = 5.0)]
    after_secs: f64,
    /// Replay timed input from this file (the format: docs/app.md).
    #[arg(long)]
    script: Option<PathBuf>,
    /// Write one CSV row per frame (fps, solver time, ESS, violations,
    /// target distances) to this file.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Exit after this many seconds.
    #[arg(long)]
    quit_after: Option<f64>,
    /// Window size in physical pixels.
    #[arg(long, default_value_t = 1280)]
    width: u32,
    #[arg(long, default_value_t = 800)]
    height: u32,
    /// Advance the clock of scripts, plots, --after-secs and --quit-after by
    /// this many seconds per frame instead of wall time (deterministic
    /// replays, e.g. 0.0333 for 30 Hz).
    #[arg(long)]
    fixed_dt: Option<f64>,
    /// Present frames without waiting for vertical sync (to measure frame
    /// times).
    #[arg(long)]
    no_vsync: bool,
    /// Draw at most this many particles of the cloud (heaviest first; 0
    /// hides it) instead of the cap that adapts to the frame rate (IK,
    /// track and walker scenes; the panel's cloud controls).
    #[arg(long)]
    cloud_limit: Option<usize>,
}

fn main() {
    use clap::{CommandFactory as _, FromArgMatches as _};
    let launched = std::time::Instant::now();
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Some(command) => posecloud::cli::run(command),
        None => check_scene_flags(cli.gui.scene, &matches).and_then(|()| gui(cli.gui, launched)),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn gui(a: GuiArgs, launched: std::time::Instant) -> Result<()> {
    use posecloud::scenes::ik::settings::{MAX_PARTICLES, Settings};
    use posecloud::scenes::ik::setup::SceneSource;
    use posecloud::scenes::ik::{GuiOptions, run};
    if a.scene == SceneArg::Track {
        return track_gui(a, launched);
    }
    if a.scene == SceneArg::Walker {
        return walker_gui(a, launched);
    }
    if a.scene == SceneArg::Sparse {
        return sparse_gui(a, launched);
    }
    let scene = match (&a.urdf, &a.bvh) {
        (Some(path), _) => SceneSource::Urdf(path.clone()),
        (None, Some(path)) => SceneSource::Bvh {
            path: path.clone(),
            frame: a.frame,
        },
        (None, None) => SceneSource::from_name(a.scene.name())?,
    };
    if let Some(n) = a.particles
        && !(1..=MAX_PARTICLES).contains(&n)
    {
        bail!("--particles: must be 1 … {MAX_PARTICLES}, got {n}");
    }
    check_window_flags(&a)?;
    if let Some(dir) = a.package_path.iter().find(|d| !d.is_dir()) {
        bail!("--package-path {}: not a folder", dir.display());
    }
    let settings = a.settings.as_deref().map(Settings::load).transpose()?;
    run(
        GuiOptions {
            scene,
            settings,
            particles: a.particles,
            // The title names the scene (set by the IK view).
            window: window_options(&a, "posecloud"),
            automation: posecloud::scenes::ik::automation::AutomationFiles {
                script: a.script,
                report: a.report,
            },
            package_paths: a.package_path,
        },
        launched,
    )
}

/// The one rule for window flags: a flag given on the command line that the
/// scene does not use ([`SceneArg::flags`], [`WINDOW_FLAGS`]) is an error
/// naming the flag and the scenes that take it.
fn check_scene_flags(scene: SceneArg, matches: &clap::ArgMatches) -> Result<()> {
    use clap::{CommandFactory as _, ValueEnum as _};
    let command = Cli::command();
    for arg in command.get_arguments() {
        let id = arg.get_id().as_str();
        if matches.value_source(id) != Some(clap::parser::ValueSource::CommandLine)
            || WINDOW_FLAGS.contains(&id)
            || scene.flags().contains(&id)
        {
            continue;
        }
        let flag = arg
            .get_long()
            .map_or_else(|| id.to_string(), |l| format!("--{l}"));
        let takers: Vec<&str> = SceneArg::value_variants()
            .iter()
            .filter(|s| s.flags().contains(&id))
            .map(|s| s.name())
            .collect();
        bail!(
            "{flag} is not used by the {} scene (it is for --scene {})",
            scene.name(),
            takers.join(" | ")
        );
    }
    Ok(())
}

/// The window flags every scene takes.
fn window_options(a: &GuiArgs, title: &str) -> posecloud::gui::scene_common::WindowOptions {
    posecloud::gui::scene_common::WindowOptions {
        title: title.into(),
        size: (a.width, a.height),
        no_vsync: a.no_vsync,
        fixed_dt: a.fixed_dt,
        auto_exit: posecloud::gui::scene_common::AutoExit {
            screenshot: a.screenshot.clone(),
            after_secs: a.after_secs,
            quit_after: a.quit_after,
        },
        cloud_limit: a.cloud_limit,
    }
}

/// Checks the window flags every scene shares.
fn check_window_flags(a: &GuiArgs) -> Result<()> {
    if let Some(q) = a.quit_after
        && !(q.is_finite() && q >= 0.0)
    {
        bail!("--quit-after: must be finite and >= 0, got {q}");
    }
    if let Some(dt) = a.fixed_dt
        && !(dt.is_finite() && dt > 0.0)
    {
        bail!("--fixed-dt: must be finite and > 0, got {dt}");
    }
    // wgpu's smallest guaranteed texture size (WebGPU's default limits);
    // larger windows fail inside the renderer.
    const MAX_WINDOW: u32 = 8192;
    for (flag, v) in [("--width", a.width), ("--height", a.height)] {
        if !(1..=MAX_WINDOW).contains(&v) {
            bail!("{flag}: must be 1 … {MAX_WINDOW} pixels, got {v}");
        }
    }
    if !(a.after_secs.is_finite() && a.after_secs >= 0.0) {
        bail!(
            "--after-secs: must be finite and >= 0, got {}",
            a.after_secs
        );
    }
    if let Some(path) = &a.screenshot {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.is_dir() {
            bail!(
                "--screenshot {}: the folder {} does not exist",
                path.display(),
                dir.display()
            );
        }
    }
    Ok(())
}

/// `posecloud --scene track`: the tracking window.
fn track_gui(a: GuiArgs, launched: std::time::Instant) -> Result<()> {
    use posecloud::scenes::track::model::{MAX_TRACK_PARTICLES, TrackSettings, TrackSpec};
    use posecloud::scenes::track::view::{TrackGuiOptions, run};
    use track::CameraSpec;
    check_window_flags(&a)?;
    // With --frames: no set-up file needed (default camera and body, the
    // guided start); without: the synthetic walk and its camera file.
    let mut spec = match &a.frames {
        Some(f) => TrackSpec::live(f.clone()),
        None => TrackSpec::default(),
    };
    if let Some(c) = &a.camera {
        spec.camera = CameraSpec::File(c.clone());
    }
    if let Some(b) = &a.bvh {
        spec.subject.body = Some(b.clone());
        spec.init_frame = a.frame;
    }
    if let Some(p) = a.start_pose {
        spec.start_pose = Some(p.into());
    }
    if let Some(h) = a.subject_height {
        if !(0.5..=2.5).contains(&h) {
            bail!("--subject-height {h}: must be between 0.5 and 2.5 metres");
        }
        spec.subject.height = Some(h);
    }
    // A camera file has its own field of view.
    if let (Some(f), CameraSpec::FieldOfView(fov)) = (a.fov, &mut spec.camera) {
        *fov = f;
    }
    if let Some(s) = a.sleeves {
        spec.sleeves = s.into();
    }
    let mut settings = TrackSettings::default();
    if let Some(n) = a.particles {
        if !(1..=MAX_TRACK_PARTICLES).contains(&n) {
            bail!("--particles: must be 1 … {MAX_TRACK_PARTICLES}, got {n}");
        }
        settings.tracker.particles = n;
    }
    if let Some(b) = a.backend {
        settings.tracker.backend = b.into();
    }
    if let Some(s) = a.sampling {
        settings.tracker.partitioned = s == posecloud::cli::track::SamplingArg::Partitioned;
    }
    if let Some(o) = a.observation {
        settings.tracker.observation = o.into();
    }
    if let Some(s) = a.keypoint_depth_sigma {
        settings.tracker.keypoint_depth_sigma = s;
    }
    if let Some(n) = a.keypoint_lifts {
        settings.tracker.keypoint_lifts = n;
    }
    if let Some(b) = a.keypoint_backend {
        settings.tracker.keypoint_backend = b.into();
    }
    run(
        TrackGuiOptions {
            spec,
            settings,
            // The title names the source (set by the view).
            window: window_options(&a, "posecloud — tracking"),
        },
        launched,
    )
    .map_err(posecloud::cli::flags::in_flag_words)
}

/// `posecloud --scene walker`: the PHYSPRIOR window.
fn walker_gui(a: GuiArgs, launched: std::time::Instant) -> Result<()> {
    use posecloud::scenes::walker::model::{MAX_WALKER_PARTICLES, WalkerSettings};
    use posecloud::scenes::walker::view::{WalkerGuiOptions, run};
    check_window_flags(&a)?;
    let mut settings = WalkerSettings::default();
    if let Some(n) = a.particles {
        if !(1..=MAX_WALKER_PARTICLES).contains(&n) {
            bail!("--particles: must be 1 … {MAX_WALKER_PARTICLES}, got {n}");
        }
        settings.particles = n;
        settings.resample_threshold = settings.resample_threshold.min(n);
    }
    run(
        WalkerGuiOptions {
            bvh: a.bvh.clone(),
            settings,
            window: window_options(&a, "posecloud — walker (PHYSPRIOR)"),
        },
        launched,
    )
}

/// `posecloud --scene sparse`: the SPARSE window.
fn sparse_gui(a: GuiArgs, launched: std::time::Instant) -> Result<()> {
    use posecloud::scenes::sparse::view::{SparseGuiOptions, run};
    check_window_flags(&a)?;
    run(
        SparseGuiOptions {
            clip: a.bvh.clone(),
            window: window_options(&a, "posecloud — sparse sensors (SPARSE)"),
        },
        launched,
    )
}

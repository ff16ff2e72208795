//! The `posecloud` binary. Without a subcommand it opens the interactive
//! IK playground (`--scene`, `--urdf`, `--bvh`, `--screenshot`, `--script`,
//! …). Subcommands are command-line tools: `posecloud fk FILE.bvh --frame N`
//! prints world joint positions (to compare our forward kinematics with any
//! other BVH tool), `posecloud info` describes a skeleton from a BVH or URDF
//! file or a preset, `posecloud render` / `segment` make and segment camera
//! frames (`crates/vision`), `posecloud track` tracks a person in them
//! (`crates/track`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use skeleton::{Bvh, Skeleton, presets};

#[derive(Parser)]
#[command(
    name = "posecloud",
    version,
    about = "Articulated bodies whose pose is a cloud of weighted particles"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    gui: GuiArgs,
}

/// Options of the playground window (used when no subcommand is given).
#[derive(clap::Args, Debug)]
struct GuiArgs {
    /// Scene to open: human, arm, chain, hand (IK), track (RTPF tracking
    /// from --frames, or a synthetic render of --bvh without it), walker
    /// (PHYSPRIOR on the walk of --bvh, default the CMU walk) or sparse
    /// (SPARSE on sensors synthesised from --bvh, default the CMU walk).
    #[arg(long, default_value = "human")]
    scene: String,
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
    #[arg(long)]
    observation: Option<track::ObservationMode>,
    /// Tracking scene: the person's sleeves, short (arms are skin) or long.
    #[arg(long, value_enum)]
    sleeves: Option<vision::cli::SleevesArg>,
    /// Tracking scene: the likelihood back end, auto (GPU on a hardware
    /// adapter, else CPU), cpu or gpu (on the window's own device).
    #[arg(long)]
    backend: Option<track::BackendChoice>,
    /// Tracking scene: how diffused particles move, partitioned (trunk,
    /// then each limb chain; default) or joint (all at once, RTPF).
    #[arg(long, value_enum)]
    sampling: Option<track::cli::SamplingArg>,
    /// Tracking scene: the pose the person takes for the guided start,
    /// facing the camera: arms-down (the default with --frames) or t-pose.
    /// On the synthetic render: instead of the --bvh file's --frame.
    #[arg(long)]
    start_pose: Option<track::StartPose>,
    /// Open a robot arm from a URDF file instead of a scene.
    #[arg(long, conflicts_with = "bvh")]
    urdf: Option<PathBuf>,
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
    /// Replay timed input from this file (see the README).
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
    /// IK scenes: draw at most this many particles of the cloud (heaviest
    /// first; 0 hides it). The panel's "draw the particle cloud" controls.
    #[arg(long)]
    cloud_limit: Option<usize>,
}

#[derive(Subcommand)]
enum Command {
    /// Print the world position of every joint of one BVH frame as CSV
    /// (`name,x,y,z`, metres in the file's axes, header first).
    Fk {
        /// A BVH file.
        file: PathBuf,
        /// Frame index, 0-based.
        #[arg(long, default_value_t = 0)]
        frame: usize,
        /// Also print the end sites (named `<parent>_end`).
        #[arg(long)]
        end_sites: bool,
    },
    /// Describe a skeleton: joints, kinds, DOF, limits, masses.
    Info {
        /// A `.bvh` or `.urdf` file, or a preset name (see `posecloud presets`).
        source: String,
    },
    /// List the built-in presets.
    Presets,
    /// Render a BVH clip through a camera into RGB frames, label images and
    /// ground truth (`ground_truth.csv`): the synthetic test bench.
    Render(vision::cli::RenderArgs),
    /// Segment frames (folder, video, webcam) into body-part label images
    /// (RTPF §IV-D); prints ms per frame.
    Segment(vision::cli::SegmentArgs),
    /// Track a person in frames (folder, video, webcam) with RTPF's
    /// particle filter; writes the estimated joint positions as CSV.
    Track(Box<track::cli::TrackArgs>),
    /// Detect 2D person keypoints (BlazePose) in every frame of a source;
    /// writes `frame` then `<name>_u,<name>_v,<name>_score` per keypoint
    /// (input-frame pixels) as CSV.
    Keypoints(posecloud::keypoints_cli::KeypointsArgs),
}

fn main() {
    let launched = std::time::Instant::now();
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Fk {
            file,
            frame,
            end_sites,
        }) => fk(&file, frame, end_sites),
        Some(Command::Info { source }) => info(&source),
        Some(Command::Presets) => {
            for name in presets::PRESET_NAMES {
                let s = presets::by_name(name).expect("listed presets exist");
                println!("{name:<22} {:>3} joints {:>3} DOF", s.len(), s.dof());
            }
            Ok(())
        }
        Some(Command::Render(a)) => vision::cli::run_render(&a).map(drop).map_err(Into::into),
        Some(Command::Segment(a)) => vision::cli::run_segment(&a).map(drop).map_err(Into::into),
        Some(Command::Track(a)) => track_command(&a),
        Some(Command::Keypoints(a)) => posecloud::keypoints_cli::run_keypoints(&a).map(drop),
        None => gui(cli.gui, launched),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

/// `posecloud track`: Ctrl-C ends the run like the end of the source (the
/// CSV and BVH complete); a second Ctrl-C kills the process.
fn track_command(a: &track::cli::TrackArgs) -> Result<()> {
    use std::sync::atomic::{AtomicBool, Ordering};
    static STOP: AtomicBool = AtomicBool::new(false);
    ctrlc::set_handler(|| {
        if STOP.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!("posecloud: stopping (Ctrl-C again to abort)");
    })
    .map_err(|e| anyhow::anyhow!("cannot install the Ctrl-C handler: {e}"))?;
    track::cli::run_track_until(a, &STOP)?;
    Ok(())
}

fn gui(a: GuiArgs, launched: std::time::Instant) -> Result<()> {
    use posecloud::gui::{GuiOptions, run};
    use posecloud::scenes::SceneSource;
    use posecloud::settings::{MAX_PARTICLES, Settings};
    if matches!(a.scene.as_str(), "track" | "tracking") {
        return track_gui(a, launched);
    }
    if a.scene == "walker" {
        return walker_gui(a, launched);
    }
    if a.scene == "sparse" {
        return sparse_gui(a, launched);
    }
    if let Some((flag, _)) = tracking_flags(&a).into_iter().find(|(_, given)| *given) {
        bail!("{flag} belongs to the tracking scene (--scene track)");
    }
    let scene = match (&a.urdf, &a.bvh) {
        (Some(path), _) => SceneSource::Urdf(path.clone()),
        (None, Some(path)) => SceneSource::Bvh {
            path: path.clone(),
            frame: a.frame,
        },
        (None, None) => SceneSource::from_name(&a.scene)?,
    };
    if let Some(n) = a.particles
        && !(1..=MAX_PARTICLES).contains(&n)
    {
        bail!("--particles: must be 1 … {MAX_PARTICLES}, got {n}");
    }
    check_window_flags(&a)?;
    let settings = a.settings.as_deref().map(Settings::load).transpose()?;
    run(
        GuiOptions {
            scene,
            settings,
            particles: a.particles,
            screenshot: a.screenshot,
            after_secs: a.after_secs,
            script: a.script,
            report: a.report,
            quit_after: a.quit_after,
            width: a.width,
            height: a.height,
            fixed_dt: a.fixed_dt,
            no_vsync: a.no_vsync,
            cloud_limit: a.cloud_limit,
        },
        launched,
    )
}

fn fk(file: &Path, frame: usize, end_sites: bool) -> Result<()> {
    let bvh = Bvh::load(file)?;
    let world = bvh
        .forward_kinematics(frame)
        .with_context(|| file.display().to_string())?;
    let mut out = String::from("name,x,y,z\n");
    for (j, (joint, w)) in bvh.skeleton.joints().iter().zip(&world).enumerate() {
        if bvh.is_end_site(j) && !end_sites {
            continue;
        }
        let t = w.translation.vector;
        out.push_str(&format!(
            "{},{:.6},{:.6},{:.6}\n",
            joint.name, t.x, t.y, t.z
        ));
    }
    print!("{out}");
    Ok(())
}

/// A preset, BVH or URDF skeleton, with what a URDF import adjusted (issue
/// 23).
fn load_skeleton_with_warnings(source: &str) -> Result<(Skeleton, Vec<skeleton::UrdfWarning>)> {
    if let Some(s) = presets::by_name(source) {
        return Ok((s, Vec::new()));
    }
    let path = Path::new(source);
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("bvh") => Ok((Bvh::load(path)?.skeleton, Vec::new())),
        Some("urdf") => {
            let import = skeleton::import_urdf(path)?;
            Ok((import.skeleton, import.warnings))
        }
        _ => bail!(
            "'{source}' is neither a .bvh/.urdf file nor a preset ({})",
            presets::PRESET_NAMES.join(", ")
        ),
    }
}

fn info(source: &str) -> Result<()> {
    let (s, warnings) =
        load_skeleton_with_warnings(source).with_context(|| format!("loading {source}"))?;
    println!(
        "{} joints, {} DOF, total mass {:.2} kg",
        s.len(),
        s.dof(),
        s.total_mass()
    );
    println!(
        "{:<4} {:<18} {:<18} {:>3} {:<10} {:>7}",
        "#", "joint", "parent", "dof", "part", "mass"
    );
    for (i, j) in s.joints().iter().enumerate() {
        let parent = j.parent.map_or("-", |p| s.joint(p).name.as_str());
        let kind = format!("{:?}", j.kind);
        let kind = kind.split([' ', '(', '{']).next().unwrap_or("");
        let (part, mass) = j
            .body
            .as_ref()
            .map_or(("-", 0.0), |b| (b.part.name(), b.mass));
        println!(
            "{i:<4} {:<18} {:<18} {:>3} {:<10} {mass:>7.3}  {kind}",
            j.name,
            parent,
            j.kind.dof(),
            part
        );
    }
    for w in &warnings {
        println!("warning: {w}");
    }
    Ok(())
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

/// The flags only the tracking scene takes, and whether each was given.
fn tracking_flags(a: &GuiArgs) -> [(&'static str, bool); 9] {
    [
        ("--observation", a.observation.is_some()),
        ("--frames", a.frames.is_some()),
        ("--camera", a.camera.is_some()),
        ("--fov", a.fov.is_some()),
        ("--subject-height", a.subject_height.is_some()),
        ("--sleeves", a.sleeves.is_some()),
        ("--backend", a.backend.is_some()),
        ("--sampling", a.sampling.is_some()),
        ("--start-pose", a.start_pose.is_some()),
    ]
}

/// `posecloud --scene track`: the tracking window.
fn track_gui(a: GuiArgs, launched: std::time::Instant) -> Result<()> {
    use posecloud::gui::track_view::{TrackGuiOptions, run};
    use posecloud::tracking::{MAX_TRACK_PARTICLES, TrackSettings, TrackSpec};
    check_window_flags(&a)?;
    for (flag, given) in [
        ("--urdf", a.urdf.is_some()),
        ("--settings", a.settings.is_some()),
        ("--script", a.script.is_some()),
        ("--report", a.report.is_some()),
    ] {
        if given {
            bail!("{flag} is not available in the tracking scene");
        }
    }
    // With --frames: no set-up file needed (default camera and body, the
    // guided start); without: the synthetic walk and its camera file.
    let mut spec = match &a.frames {
        Some(f) => TrackSpec::live(f.clone()),
        None => TrackSpec::default(),
    };
    if let Some(c) = &a.camera {
        spec.camera = Some(c.clone());
    }
    if let Some(b) = &a.bvh {
        spec.body = Some(b.clone());
        spec.init_frame = a.frame;
    }
    if let Some(p) = a.start_pose {
        spec.start_pose = Some(p);
    }
    if let Some(h) = a.subject_height {
        if !(0.5..=2.5).contains(&h) {
            bail!("--subject-height {h}: must be between 0.5 and 2.5 metres");
        }
        spec.subject_height = Some(h);
    }
    if let Some(f) = a.fov {
        spec.fov_deg = f;
    }
    if let Some(s) = a.sleeves {
        spec.sleeves = s.into();
    }
    let mut settings = TrackSettings::default();
    if let Some(n) = a.particles {
        if !(1..=MAX_TRACK_PARTICLES).contains(&n) {
            bail!("--particles: must be 1 … {MAX_TRACK_PARTICLES}, got {n}");
        }
        settings.particles = n;
    }
    if let Some(b) = a.backend {
        settings.backend = b;
    }
    if let Some(s) = a.sampling {
        settings.partitioned = s == track::cli::SamplingArg::Partitioned;
    }
    if let Some(o) = a.observation {
        settings.observation = o;
    }
    run(
        TrackGuiOptions {
            spec,
            settings,
            screenshot: a.screenshot,
            after_secs: a.after_secs,
            quit_after: a.quit_after,
            width: a.width,
            height: a.height,
            fixed_dt: a.fixed_dt,
            no_vsync: a.no_vsync,
        },
        launched,
    )
}

/// `posecloud --scene walker`: the PHYSPRIOR window.
fn walker_gui(a: GuiArgs, launched: std::time::Instant) -> Result<()> {
    use posecloud::gui::walker_view::{WalkerGuiOptions, run};
    use posecloud::walker_scene::{MAX_WALKER_PARTICLES, WalkerSettings};
    check_window_flags(&a)?;
    for (flag, given) in [
        ("--urdf", a.urdf.is_some()),
        ("--settings", a.settings.is_some()),
        ("--script", a.script.is_some()),
        ("--report", a.report.is_some()),
    ]
    .into_iter()
    .chain(tracking_flags(&a))
    {
        if given {
            bail!("{flag} is not available in the walker scene");
        }
    }
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
            screenshot: a.screenshot,
            after_secs: a.after_secs,
            quit_after: a.quit_after,
            width: a.width,
            height: a.height,
            fixed_dt: a.fixed_dt,
            no_vsync: a.no_vsync,
        },
        launched,
    )
}

/// `posecloud --scene sparse`: the SPARSE window.
fn sparse_gui(a: GuiArgs, launched: std::time::Instant) -> Result<()> {
    use posecloud::gui::sparse_view::{SparseGuiOptions, run};
    check_window_flags(&a)?;
    for (flag, given) in [
        ("--urdf", a.urdf.is_some()),
        ("--settings", a.settings.is_some()),
        ("--script", a.script.is_some()),
        ("--report", a.report.is_some()),
        ("--particles", a.particles.is_some()),
    ]
    .into_iter()
    .chain(tracking_flags(&a))
    {
        if given {
            bail!("{flag} is not available in the sparse-sensor scene");
        }
    }
    run(
        SparseGuiOptions {
            clip: a.bvh.clone(),
            screenshot: a.screenshot,
            after_secs: a.after_secs,
            quit_after: a.quit_after,
            width: a.width,
            height: a.height,
            fixed_dt: a.fixed_dt,
            no_vsync: a.no_vsync,
        },
        launched,
    )
}

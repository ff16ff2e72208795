//! posecloud's command-line tools, each a subcommand of the `posecloud`
//! binary: clap argument structs that turn into the libraries' plain types
//! (the libraries have no clap), progress on stderr (an `indicatif` bar with
//! an ETA on a terminal, a line per second otherwise), data on stdout or in
//! files.
//!
//! | command | what |
//! |---|---|
//! | `fk` | world joint positions of one BVH frame, CSV |
//! | `info` | a skeleton's joints, kinds, DOF, masses (BVH, URDF, preset) |
//! | `presets` | the built-in skeletons |
//! | `render` | a BVH clip drawn through a camera: frames, labels, ground truth |
//! | `segment` | frames to body-part label images (RTPF §IV-D) |
//! | `track` | a person tracked in frames (RTPF), CSV and BVH |
//! | `keypoints` | BlazePose 2D keypoints of every frame, CSV |

pub mod flags;
pub mod keypoints;
pub mod progress;
pub mod skeleton_info;
pub mod track;
pub mod vision_cmds;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;
use clap::Subcommand;

/// The subcommands.
#[derive(Subcommand)]
pub enum Command {
    /// Print the world position of every joint of one BVH frame as CSV
    /// (`name,x,y,z`, metres in the file's axes, header first).
    Fk(skeleton_info::FkArgs),
    /// Describe a skeleton: joints, kinds, DOF, masses, and what an URDF
    /// import adjusted.
    Info(skeleton_info::InfoArgs),
    /// List the built-in presets (joints and DOF of each).
    Presets,
    /// Render a BVH clip through a camera into RGB frames, label images and
    /// ground truth (`ground_truth.csv`): the synthetic test bench.
    Render(vision_cmds::RenderArgs),
    /// Segment frames (folder, video, webcam) into body-part label images
    /// (RTPF §IV-D); a table of ms and class counts per frame on stdout.
    ///
    /// The empty scene is --background or the first --background-frames
    /// (default 1).
    Segment(vision_cmds::SegmentArgs),
    /// Track a person in frames (folder, video, webcam) with RTPF's
    /// particle filter; writes the estimated joint positions as CSV.
    ///
    /// Without --background or --background-frames the guided start learns
    /// the empty scene once it is still.
    Track(Box<track::TrackArgs>),
    /// Detect 2D person keypoints (BlazePose) in every frame of a source;
    /// writes `frame` then `<name>_u,<name>_v,<name>_score` per keypoint
    /// (input-frame pixels) as CSV.
    ///
    /// With --background or --background-frames the person's box is the
    /// largest foreground blob.
    Keypoints(keypoints::KeypointsArgs),
}

/// The frames a command reads and what shows the empty scene, flattened
/// into `segment`, `track` and `keypoints`: one flag and one meaning per
/// concept in every command.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct SourceArgs {
    /// Frames: a folder of PNG/JPEG (a `posecloud render` folder reads its
    /// frame_*.png), a glob, a video file (ffmpeg), a .y4m file, or
    /// webcam / webcam:N / webcam:N@WxH.
    #[arg(long)]
    pub frames: String,
    /// Image of the empty scene (the size of the frames).
    #[arg(long, conflicts_with = "background_frames")]
    pub background: Option<PathBuf>,
    /// The first K frames show the empty scene: the background is learned
    /// from them, and they are not segmented, tracked or detected.
    #[arg(long)]
    pub background_frames: Option<usize>,
    /// Frame rate assumed for image sequences and webcams (0.1 to 1000).
    #[arg(long, default_value_t = vision::DEFAULT_SEQUENCE_FPS, value_parser = parse_fps)]
    pub fps: f64,
}

impl SourceArgs {
    /// What `--background` or `--background-frames` names as the empty
    /// scene; `None` when neither is given (each command has its default).
    pub fn empty_scene(&self) -> Option<vision::EmptyScene> {
        use vision::EmptyScene;
        match (&self.background, self.background_frames) {
            (Some(path), _) => Some(EmptyScene::Image(path.clone())),
            (None, Some(k)) => Some(EmptyScene::FirstFrames(k)),
            (None, None) => None,
        }
    }
}

/// The size of the label images (RTPF §IV-D) that `segment` and `track`
/// segment the frames into.
#[derive(clap::Args, Clone, Copy, Debug, PartialEq)]
pub struct LabelSizeArgs {
    /// Label image width.
    #[arg(long, default_value_t = labels::DEFAULT_WIDTH)]
    pub label_width: u32,
    /// Label image height.
    #[arg(long, default_value_t = labels::DEFAULT_HEIGHT)]
    pub label_height: u32,
}

impl LabelSizeArgs {
    /// (width, height).
    pub fn size(self) -> (u32, u32) {
        (self.label_width, self.label_height)
    }
}

impl std::fmt::Display for LabelSizeArgs {
    /// `W × H`, as the commands' summaries print sizes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} × {}", self.label_width, self.label_height)
    }
}

/// The stop flag of a long command (`track`, `keypoints`, `render`,
/// `segment`), set by the first Ctrl-C: the command ends like at the end of
/// its source, its files complete. A second Ctrl-C — while a step blocks
/// (a frame read, a detector or GPU wait) — writes every row recorded so
/// far under the outputs' real names ([`vision::output::salvage_all`]),
/// then exits with status 130: never a half-written file under a real
/// name.
///
/// # Errors
/// The handler cannot be installed.
pub fn ctrl_c_stop() -> Result<&'static AtomicBool> {
    static STOP: AtomicBool = AtomicBool::new(false);
    static INSTALLED: std::sync::OnceLock<std::result::Result<(), String>> =
        std::sync::OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            ctrlc::set_handler(|| {
                if STOP.swap(true, Ordering::SeqCst) {
                    vision::output::salvage_all_then(|said| {
                        for line in said {
                            eprintln!("posecloud: {line}");
                        }
                        eprintln!("posecloud: aborted");
                        std::process::exit(130)
                    });
                }
                eprintln!("posecloud: stopping after this frame (Ctrl-C again to abort)");
            })
            .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|e| anyhow::anyhow!("cannot install the Ctrl-C handler: {e}"))?;
    Ok(&STOP)
}

/// Parses a frame rate (frames per second) within
/// [`vision::FPS_RANGE`].
///
/// # Errors
/// A message naming the bounds.
pub fn parse_fps(s: &str) -> std::result::Result<f64, String> {
    let fps: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))?;
    vision::check_fps(fps).map_err(|m| format!("`{s}`: {m}"))?;
    Ok(fps)
}

/// Writes `text` to stdout; a reader that closed the pipe early (`| head`)
/// is not an error.
///
/// # Errors
/// Any other write error.
pub fn print_out(text: &str) -> Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(e).context("writing to stdout"))
        }
        _ => Ok(()),
    }
}

/// Runs one subcommand.
///
/// # Errors
/// The command's error (bad input names the flag and file).
pub fn run(command: Command) -> Result<()> {
    let result = match command {
        Command::Fk(a) => skeleton_info::fk(&a),
        Command::Info(a) => skeleton_info::info(&a.source),
        Command::Presets => skeleton_info::presets(),
        Command::Render(a) => vision_cmds::render(&a).map(drop),
        Command::Segment(a) => vision_cmds::segment(&a).map(drop),
        Command::Track(a) => track::track_command(&a),
        Command::Keypoints(a) => keypoints::run_keypoints(&a).map(drop),
    };
    result.map_err(flags::in_flag_words)
}

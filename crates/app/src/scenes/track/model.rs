//! The tracking scene's model (Bevy-free): a thin driver of the tracking
//! session ([`track::Session`], the same one `posecloud track` drives) on
//! frames from a camera, a video, an image folder or a synthetic render of
//! a BVH clip (`crates/vision`), as a [`runtime::Solver`](crate::runtime::Solver).
//!
//! One [`crate::runtime::Solver::step`] is one source frame:
//! the session advances its guided start (background, person, placing) or
//! tracks the frame (segmentation, RTPF Eq. 1–2 on the GPU or CPU back
//! end); the snapshot carries the frame, the stage's message and progress,
//! the estimate and the most likely particles projected onto the frame,
//! and the cloud. Record/Stop writes what is tracked to CSV and BVH
//! ([`track::Recorder`]: rows as they come, files whole at Stop).
//!
//! The GPU back end runs on the app's own wgpu device when the app hands it
//! over ([`TrackingScene::with_device`], the window's renderer): one
//! device, not a second headless one, for every back end chosen later too.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use skeleton::{Bvh, Skeleton};
use track::session::{CameraSpec, FilterSettings, KnownPose, Session, SessionSpec, Stage, Subject};
use track::{Arm, BackendChoice, Recorder, SharedDevice, Side, StartPose};
use vision::batch::EmptyScene;
use vision::{
    ColourClass, FrameSource, RenderOptions, SegClass, Segmentation, Sleeves, Stroke,
    SyntheticRenderer, SyntheticSource, load_camera, open_source,
};

use crate::runtime::{Solver, push_history};

/// Most particles the scene accepts (the tracker's cost grows with N).
pub const MAX_TRACK_PARTICLES: usize = 5000;
/// Particles projected over the camera frame (the most likely ones).
pub const OVERLAY_PARTICLES: usize = 12;

/// A path of the repository: as given when it exists from the current
/// folder, else relative to the repository root (so the defaults work from
/// `cargo test`'s package folder too).
pub fn repo_path(rel: &str) -> PathBuf {
    let p = PathBuf::from(rel);
    if p.exists() || p.is_absolute() {
        return p;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel);
    if root.exists() { root } else { p }
}

/// Where the frames come from and whom to track.
#[derive(Clone, Debug, PartialEq)]
pub struct TrackSpec {
    /// `None`: a synthetic render of the body clip of [`Self::subject`];
    /// else a frame source as `posecloud track --frames` takes it (folder,
    /// glob, video, Y4M, `webcam[:N[@WxH]]`).
    pub frames: Option<String>,
    /// A camera file (TOML, `crates/vision`) or the default camera of a
    /// field of view (a synthetic render needs a file).
    pub camera: CameraSpec,
    /// The body (a BVH: its hierarchy gives the dimensions; for the
    /// synthetic source, the clip; `None`: the default body) and the
    /// subject's height.
    pub subject: Subject,
    /// The frame of the body file holding the initial pose (and, for the
    /// synthetic source, the first rendered clip frame).
    pub init_frame: usize,
    /// Synthetic source: clip frames rendered (from `init_frame`) and step.
    pub synthetic_frames: usize,
    pub synthetic_step: usize,
    /// The first K frames of the source show the empty scene; `None`: the
    /// guided start learns the background once the scene is still.
    pub background_frames: Option<usize>,
    /// Frame rate of image folders.
    pub fps: f64,
    /// The guided start's pose; `None`: start from the body's `init_frame`
    /// (a camera file's world frame).
    pub start_pose: Option<StartPose>,
    pub sleeves: Sleeves,
    /// Tracked joints (`posecloud track --track`).
    pub track: String,
}

impl Default for TrackSpec {
    /// The demo: the synthetic walk of docs/track.md seen through a longer
    /// lens than the `posecloud track` example's camera, so the person
    /// fills most of the frame (crates/vision/assets/camera_near.toml).
    fn default() -> Self {
        Self {
            frames: None,
            camera: CameraSpec::File(repo_path("crates/vision/assets/camera_near.toml")),
            subject: Subject {
                body: Some(repo_path("assets/motions/cmu_131_01_walk.bvh")),
                height: None,
            },
            init_frame: 500,
            synthetic_frames: 200,
            synthetic_step: 4,
            background_frames: Some(1),
            fps: 30.0,
            start_pose: None,
            sleeves: Sleeves::Short,
            track: "auto".into(),
        }
    }
}

impl TrackSpec {
    /// A camera, video or folder with no set-up file: the guided start with
    /// the default camera and body.
    pub fn live(frames: impl Into<String>) -> Self {
        Self {
            frames: Some(frames.into()),
            camera: CameraSpec::default(),
            subject: Subject {
                body: None,
                height: Some(track::DEFAULT_SUBJECT_HEIGHT),
            },
            background_frames: None,
            start_pose: Some(StartPose::ArmsDown),
            ..Self::default()
        }
    }

    /// A short label for the window title and the panel.
    pub fn label(&self) -> String {
        match &self.frames {
            None => format!(
                "tracking: synthetic render of {}",
                self.subject
                    .body
                    .as_deref()
                    .and_then(Path::file_name)
                    .unwrap_or_default()
                    .to_string_lossy()
            ),
            Some(f) => format!("tracking: {f}"),
        }
    }

    /// The session's specification.
    fn session_spec(&self) -> SessionSpec {
        SessionSpec {
            frames: self.frames.clone().unwrap_or_else(|| "synthetic".into()),
            camera: self.camera.clone(),
            subject: self.subject.clone(),
            init: self.start_pose.is_none().then_some(KnownPose {
                file: None,
                frame: self.init_frame,
            }),
            start_pose: self.start_pose.unwrap_or(StartPose::ArmsDown),
            background: self.background_frames.map(EmptyScene::FirstFrames),
            sleeves: self.sleeves,
            track: self.track.clone(),
            ..SessionSpec::default()
        }
    }
}

/// The likelihood back ends the user may choose, in menu order.
pub const BACKENDS: [BackendChoice; 3] =
    [BackendChoice::Auto, BackendChoice::Cpu, BackendChoice::Gpu];

/// The name `--backend` and the panel use (what [`BackendChoice`] parses).
pub fn backend_name(choice: BackendChoice) -> &'static str {
    match choice {
        BackendChoice::Auto => "auto",
        BackendChoice::Cpu => "cpu",
        BackendChoice::Gpu => "gpu",
    }
}

/// The tracking window's settings: the tracker's, as `posecloud track`
/// takes them, and how file sources play.
#[derive(Clone, Debug, PartialEq)]
pub struct TrackSettings {
    /// Particles, filter, σ, likelihood back end (RTPF Eq. 1–2: GPU on a
    /// hardware adapter else CPU with `Auto`), sampling, observation.
    pub tracker: FilterSettings,
    /// Play file sources at their frame rate (else as fast as the tracker
    /// runs).
    pub realtime: bool,
}

impl Default for TrackSettings {
    fn default() -> Self {
        Self {
            tracker: FilterSettings {
                // The walk moves ~4.4 cm per rendered frame towards the
                // camera (docs/track.md, the `posecloud track` table: 0.05
                // keeps up).
                sigma_translation: 0.05,
                ..FilterSettings::default()
            },
            realtime: true,
        }
    }
}

impl TrackSettings {
    /// Checks every field, naming the first bad one.
    ///
    /// # Errors
    /// Particles outside 1 … [`MAX_TRACK_PARTICLES`]; what
    /// [`FilterSettings::validate`] refuses (non-finite or negative σ,
    /// σ_F = 0).
    pub fn validate(&self) -> Result<()> {
        let n = self.tracker.particles;
        ensure!(
            (1..=MAX_TRACK_PARTICLES).contains(&n),
            "particles: {n} is outside 1 … {MAX_TRACK_PARTICLES}"
        );
        self.tracker.validate()?;
        Ok(())
    }
}

/// An edit from the panel.
#[derive(Clone, Debug)]
pub enum TrackEdit {
    Settings(TrackSettings),
    /// Continue from this source frame (file sources); the cloud stays.
    Seek(usize),
    /// The last frame becomes the background model.
    CaptureBackground,
    /// Learn the colour models from the last frame in the current estimate.
    LearnColours,
    /// Learn the colour model of every stroked class from the last frame's
    /// pixels under the strokes (frame pixel coordinates); the other
    /// classes keep theirs. `frame` is the source frame the strokes were
    /// drawn on: it must still be the last frame.
    SampleColours {
        frame: usize,
        strokes: Vec<Stroke>,
    },
    /// The person's sleeve length (the class map; colours are learned
    /// again at the next placing or "learn colours").
    Sleeves(Sleeves),
    /// The tracked joints (`auto`, `upper`, `all` or names).
    TrackedJoints(String),
    /// Start the guided start again (background, person, placing).
    Restart,
    /// Start recording into this folder (files named by the time), or
    /// stop (`None`): the CSV and BVH are complete when this returns.
    Record(Option<PathBuf>),
    /// Save the current estimate as a one-frame BVH and a one-row CSV at
    /// this path (without extension; [`crate::gui::export::save_pose`]).
    SavePose(PathBuf),
    /// The GPU is gone (the window's device was lost, or a GPU batch
    /// failed): weigh with the CPU likelihood from now on; the reason is
    /// shown.
    LeaveGpu(String),
}

/// One plotted frame.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TrackSample {
    pub frame: usize,
    /// RTPF Eq. 1 residual of the MAP particle.
    pub residual: f64,
    /// Right-elbow flexion of the estimate, degrees.
    pub elbow_deg: f64,
    /// The same of the ground truth (synthetic sources).
    pub truth_elbow_deg: Option<f64>,
    pub ess: f64,
}

/// What the frame draws and shows.
#[derive(Clone, Debug, Default)]
pub struct TrackSnapshot {
    /// Changes whenever the frame or label image changes (textures are
    /// uploaded again only then).
    pub frame_serial: u64,
    /// The last frame (RGB8) and its size.
    pub frame_rgb: Vec<u8>,
    pub frame_size: (u32, u32),
    /// Its label image (class ids, [`SegClass`]) and size.
    pub labels: Vec<u8>,
    pub label_size: (u32, u32),
    /// Source frame index of the last frame; frames in the source if known.
    pub frame_index: Option<usize>,
    pub frame_count: Option<usize>,
    /// The session's stage, what the person should do, and the stage's
    /// progress (0–1).
    pub stage: Option<Stage>,
    pub status: String,
    pub progress: f64,
    /// The estimate's joint positions (world, metres), skeleton order.
    pub estimate: Vec<[f32; 3]>,
    /// The estimate projected onto the frame (frame pixels; NaN behind the
    /// camera), skeleton order.
    pub estimate_2d: Vec<[f32; 2]>,
    /// The [`OVERLAY_PARTICLES`] most likely particles projected onto the
    /// frame (`K × joints`), heaviest first.
    pub cloud_2d: Vec<[f32; 2]>,
    /// Ground-truth joint positions (synthetic sources).
    pub truth: Vec<[f32; 3]>,
    /// Bones as (parent, child) joint indices.
    pub bones: Vec<(usize, usize)>,
    /// Joint positions of every particle (`N × joints`) and normalised
    /// weights.
    pub cloud: Vec<[f32; 3]>,
    pub weights: Vec<f64>,
    pub joints: usize,
    /// The camera's position and viewing direction (world).
    pub camera_position: [f32; 3],
    pub camera_forward: [f32; 3],
    /// Which camera is used, in words (file or default).
    pub camera_note: String,
    pub history: VecDeque<TrackSample>,
    /// Which likelihood back end runs, in words.
    pub backend: String,
    /// Where the keypoint network runs, in words
    /// ([`Session::describe_keypoints`]).
    pub keypoint_backend: String,
    /// Which likelihood terms weigh, in words.
    pub observation: String,
    /// The last keypoint detection over the frame: name, frame pixel,
    /// score (the tracked keypoints), and the frame it was made on.
    pub keypoints: Vec<(&'static str, [f32; 2], f32)>,
    pub keypoints_frame: Option<usize>,
    /// Per arm, the weight share of each depth branch in the cloud and the
    /// MAP's branch (`track::smooth`): how sure the tracker is of the flip.
    pub arm_branches: Vec<track::smooth::ArmBranches>,
    pub source_name: String,
    /// Tracker ms of the last frame, segmentation ms.
    pub step_ms: f64,
    pub segment_ms: f64,
    pub settings: TrackSettings,
    pub sleeves: Sleeves,
    pub tracked_joints: String,
    /// Recording: the CSV being written and its rows.
    pub recording: Option<(PathBuf, usize)>,
    /// The source has no more frames.
    pub ended: bool,
    /// What happened last (background/colours learned, …).
    pub message: Option<String>,
}

/// The ground truth of a synthetic source.
struct Truth {
    clip: Bvh,
    source: SyntheticSource,
}

/// The tracking scene (module docs).
pub struct TrackingScene {
    spec: TrackSpec,
    settings: TrackSettings,
    session: Session,
    truth: Option<Truth>,
    arm: Option<Arm>,
    bones: Vec<(usize, usize)>,
    last_clip_frame: Option<usize>,
    /// The stage of the last step (a change is announced on stderr).
    last_stage: Option<Stage>,
    history: VecDeque<TrackSample>,
    recorder: Option<(Recorder, PathBuf)>,
    /// The recording's smoother (`track::smooth`), when the settings ask
    /// for one: Record then writes the smoothed estimate, frames late.
    record_smoother: Option<track::smooth::PathSmoother>,
    ended: bool,
    /// The app's clock at which the next frame is due (real-time play).
    due: f64,
    step_ms: f64,
    segment_ms: f64,
    arm_branches: Vec<track::smooth::ArmBranches>,
    message: Option<String>,
    frame_serial: u64,
}

impl std::fmt::Debug for TrackingScene {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrackingScene")
            .field("spec", &self.spec)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// `posecloud-YYYYMMDD-HHMMSS` (UTC) of a time since the Unix epoch.
pub fn recording_stem(since_epoch: std::time::Duration) -> String {
    let secs = since_epoch.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "posecloud-{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

impl TrackingScene {
    /// Opens the source and the session (default camera and body where the
    /// spec names no file). The GPU back end requests a headless device of
    /// its own (see [`Self::with_device`]).
    ///
    /// # Errors
    /// A missing or bad body/camera file, an `init_frame` outside the clip,
    /// a source that cannot be opened (no camera, no `ffmpeg`, an empty
    /// folder), bad settings, no GPU for the `gpu` back end.
    pub fn new(spec: TrackSpec, settings: TrackSettings) -> Result<Self> {
        Self::with_device(spec, settings, None)
    }

    /// As [`Self::new`], the GPU back end on `device` (the app's own, e.g.
    /// the window's renderer) whenever it runs, now and after every change
    /// of back end.
    ///
    /// # Errors
    /// As [`Self::new`]; `gpu` fails when `device` cannot run the GPU
    /// likelihood.
    pub fn with_device(
        spec: TrackSpec,
        settings: TrackSettings,
        device: Option<SharedDevice>,
    ) -> Result<Self> {
        settings.validate()?;
        let (source, truth): (Box<dyn FrameSource>, Option<Truth>) = match &spec.frames {
            None => {
                let (Some(body), Some(camera)) = (&spec.subject.body, spec.camera.file()) else {
                    bail!("a synthetic render needs a body clip and a camera file");
                };
                let bvh = Bvh::load(body).with_context(|| format!("body {}", body.display()))?;
                let frames = bvh.frames.len();
                ensure!(
                    spec.init_frame < frames,
                    "init frame {}: the body file {} has {frames} frames",
                    spec.init_frame,
                    body.display()
                );
                ensure!(spec.synthetic_step >= 1, "synthetic step: must be ≥ 1");
                let camera =
                    load_camera(camera).with_context(|| format!("camera {}", camera.display()))?;
                let end = (spec.init_frame + spec.synthetic_frames).min(frames);
                let renderer =
                    SyntheticRenderer::new(&bvh.skeleton, camera, RenderOptions::default())
                        .context("synthetic renderer")?;
                let source = SyntheticSource::new(
                    &bvh,
                    renderer.clone(),
                    spec.init_frame..end,
                    spec.synthetic_step,
                )
                .context("synthetic source")?;
                let truth_source =
                    SyntheticSource::new(&bvh, renderer, spec.init_frame..end, spec.synthetic_step)
                        .context("synthetic source")?;
                (
                    Box::new(source),
                    Some(Truth {
                        clip: bvh,
                        source: truth_source,
                    }),
                )
            }
            Some(f) => (
                open_source(f, spec.fps).with_context(|| format!("frames {f}"))?,
                None,
            ),
        };
        let session = Session::open(
            spec.session_spec(),
            settings.tracker.clone(),
            source,
            device,
        )
        .map_err(anyhow::Error::from)?;
        let skeleton = session.dressed().clone();
        let arm = Arm::find(&skeleton, Side::Right).ok();
        let bones = bones_of(&skeleton);
        let mut scene = Self {
            spec,
            settings,
            session,
            truth,
            arm,
            bones,
            last_clip_frame: None,
            last_stage: None,
            history: VecDeque::new(),
            recorder: None,
            record_smoother: None,
            ended: false,
            due: 0.0,
            step_ms: 0.0,
            segment_ms: 0.0,
            arm_branches: Vec::new(),
            message: None,
            frame_serial: 0,
        };
        scene.learn_fixed_background()?;
        Ok(scene)
    }

    /// K background frames taken as they come are read at once, so that
    /// the first step is the first tracked frame.
    fn learn_fixed_background(&mut self) -> Result<()> {
        if self.spec.background_frames.is_none() {
            return Ok(());
        }
        while self.session.status().stage == Stage::LearningBackground {
            let Some(step) = self.session.step()? else {
                bail!(
                    "frames {}: the source ended before its {} background frame(s)",
                    self.session.source_name(),
                    self.spec.background_frames.unwrap_or(1)
                );
            };
            if let Some(e) = step.event {
                self.message = Some(e);
            }
        }
        self.frame_serial += 1;
        Ok(())
    }

    pub fn spec(&self) -> &TrackSpec {
        &self.spec
    }

    pub fn settings(&self) -> &TrackSettings {
        &self.settings
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Which likelihood back end runs, on which adapter, in words (the GPU
    /// back end on the app's device says so).
    pub fn describe_backend(&self) -> String {
        self.session.describe_backend()
    }

    /// The right-elbow flexion (degrees) of a full pose.
    fn elbow_deg(&self, pose: &[f64]) -> Option<f64> {
        let arm = self.arm?;
        let world = self.session.dressed().forward_kinematics(pose).ok()?;
        Some(arm.flexion(&world).to_degrees())
    }

    fn truth_pose(&self, clip_frame: usize) -> Option<&[f64]> {
        self.truth.as_ref().map(|t| t.clip.frames.pose(clip_frame))
    }

    /// [`TrackEdit::SampleColours`]: all or nothing (a class whose strokes
    /// are too few leaves every model as it was). The last frame is
    /// segmented again with the new models, so that the label image shows
    /// them while the source is paused.
    fn sample_colours(&mut self, frame: usize, strokes: &[Stroke]) -> Result<()> {
        let Some(f) = self.session.last_frame().cloned() else {
            bail!("sample colours: no frame yet");
        };
        ensure!(
            f.index == frame,
            "sample colours: the strokes were drawn on frame {frame}, but the last frame is {} (pause while sampling)",
            f.index
        );
        ensure!(
            strokes.iter().any(|s| !s.points.is_empty()),
            "sample colours: no stroke points on frame {frame}"
        );
        let segmenter = self.session.segmenter_mut();
        let before = *segmenter.colour_models();
        let mut segmentation = Segmentation::default();
        let learned = segmenter
            .learn_colours_from_strokes(&f, strokes)
            .and_then(|()| segmenter.segment_into(&f, &mut segmentation))
            .with_context(|| format!("sample colours on frame {}", f.index));
        if learned.is_err() {
            // `learn_colours_from_strokes` replaces class by class: undo
            // the classes it fitted before the one that failed.
            for (class, model) in ColourClass::ALL.into_iter().zip(before) {
                segmenter.set_colour_model(class, model);
            }
        }
        learned?;
        self.session.set_segmentation(segmentation);
        self.frame_serial += 1;
        let params = self.session.segmenter().params();
        let per_class = stroke_summary(strokes, (f.width, f.height), (params.width, params.height));
        let n = strokes.len();
        self.message = Some(format!(
            "colours learned from {n} stroke{} ({} label pixels) on frame {}",
            if n == 1 { "" } else { "s" },
            per_class,
            f.index
        ));
        Ok(())
    }

    /// Seconds per source frame in what is written (30 frames/s where the
    /// source has no rate).
    fn frame_time(&self) -> f64 {
        let fps = self
            .session
            .source()
            .fps()
            .filter(|f| f.is_finite() && *f > 0.0)
            .unwrap_or(30.0);
        1.0 / fps
    }

    /// Writes the current estimate ([`TrackEdit::SavePose`]).
    fn save_pose(&mut self, stem: &Path) -> Result<()> {
        let pose = self
            .session
            .estimate()
            .context("save pose: nothing is tracked yet")?
            .to_vec();
        // The body file's own channels, as Record writes them.
        let saved =
            crate::gui::export::save_pose_of(stem, self.session.body(), self.frame_time(), &pose)?;
        self.message = Some(format!("pose saved to {}", saved.display()));
        Ok(())
    }

    /// Ends the recording, if one runs: its frame count and CSV file.
    fn finish_recording(&mut self) -> Result<Option<(usize, PathBuf)>> {
        let Some((mut rec, csv)) = self.recorder.take() else {
            return Ok(None);
        };
        if let Some(mut sm) = self.record_smoother.take() {
            for o in sm.finish() {
                rec.record(o.frame, &o.pose)?;
            }
        }
        rec.finish()?;
        Ok(Some((rec.rows(), csv)))
    }

    /// Starts or stops recording ([`TrackEdit::Record`]).
    fn record(&mut self, dir: Option<PathBuf>) -> Result<()> {
        if let Some((rows, csv)) = self.finish_recording()? {
            self.message = Some(format!(
                "recorded {rows} frames to {} and .bvh",
                csv.display()
            ));
        }
        let Some(dir) = dir else {
            return Ok(());
        };
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("record: cannot create {}", dir.display()))?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        // Two Records in one second get `-2`, … (issue 32 item 6).
        let stem = crate::gui::export::unique_stem(&dir.join(recording_stem(now)));
        let (csv, bvh) = (stem.with_extension("csv"), stem.with_extension("bvh"));
        let rec = Recorder::create(
            Some(&csv),
            Some(&bvh),
            self.session.body(),
            self.frame_time(),
        )?;
        let t = &self.settings.tracker;
        self.record_smoother = match t.smoothing {
            track::smooth::Smoothing::None => None,
            s => Some(track::smooth::PathSmoother::new(
                s,
                t.smoothing_hand_speed,
                t.smoothing_temperature,
            )?),
        };
        self.message = Some(format!(
            "recording to {} ({})",
            csv.display(),
            t.smoothing.describe(1.0 / self.frame_time())
        ));
        self.recorder = Some((rec, csv));
        Ok(())
    }
}

fn bones_of(skeleton: &Skeleton) -> Vec<(usize, usize)> {
    (0..skeleton.len())
        .filter_map(|j| skeleton.joint(j).parent.map(|p| (p, j)))
        .filter(|&(_, j)| skeleton.joint(j).offset.norm() > 1e-9)
        .collect()
}

/// The stroke of one click on frame pixel `centre`: a square of frame
/// pixels centred on it (moved inside the frame at its edges), `scale + 1`
/// pixels wide or more where `scale` is frame pixels per label pixel, so
/// that it covers at least 2 × 2 label pixels and one click gives
/// [`vision::Segmenter::learn_colours_from_strokes`] the 3 distinct samples it
/// needs.
pub fn click_patch(
    (x, y): (u32, u32),
    (frame_w, frame_h): (u32, u32),
    (label_w, label_h): (u32, u32),
) -> Vec<(u32, u32)> {
    let scale = |f: u32, l: u32| if l == 0 { 1 } else { f.div_ceil(l).max(1) };
    let r = scale(frame_w, label_w)
        .max(scale(frame_h, label_h))
        .div_ceil(2);
    let side = 2 * r + 1;
    let span = |c: u32, n: u32| {
        let start = c.saturating_sub(r).min(n.saturating_sub(side));
        start..(start + side).min(n)
    };
    let (xs, ys) = (span(x, frame_w), span(y, frame_h));
    ys.flat_map(|v| xs.clone().map(move |u| (u, v))).collect()
}

/// The distinct label pixels under each class's strokes (index
/// `ColourClass as usize`): the samples
/// [`vision::Segmenter::learn_colours_from_strokes`] fits, with its mapping of a
/// frame pixel to the label pixel that contains it. Points outside the
/// frame are skipped (all of them for an empty frame or label image).
/// The label pixels of [`stroke_label_pixels`] per colour class, as
/// "N skin, M shirt" (classes without any left out).
pub fn stroke_summary(strokes: &[Stroke], frame: (u32, u32), labels: (u32, u32)) -> String {
    let counts = stroke_label_pixels(strokes, frame, labels);
    let per_class: Vec<String> = ColourClass::ALL
        .into_iter()
        .zip(counts)
        .filter(|&(_, n)| n > 0)
        .map(|(class, n)| format!("{n} {}", class.name()))
        .collect();
    per_class.join(", ")
}

pub fn stroke_label_pixels(
    strokes: &[Stroke],
    (frame_w, frame_h): (u32, u32),
    (label_w, label_h): (u32, u32),
) -> [usize; 4] {
    if label_w == 0 || label_h == 0 {
        return [0; 4];
    }
    let mut per: [Vec<usize>; 4] = Default::default();
    let (fw, fh) = (frame_w as usize, frame_h as usize);
    let (lw, lh) = (label_w as usize, label_h as usize);
    for s in strokes {
        for &(x, y) in &s.points {
            let (x, y) = (x as usize, y as usize);
            if x < fw && y < fh {
                let (lx, ly) = ((x * lw / fw).min(lw - 1), (y * lh / fh).min(lh - 1));
                per[s.class as usize].push(ly * lw + lx);
            }
        }
    }
    per.map(|mut idx| {
        idx.sort_unstable();
        idx.dedup();
        idx.len()
    })
}

/// Something built on a thread of its own — opening a scene runs ffprobe,
/// starts a webcam or reads background frames, which must not stall the
/// window: the panel shows "opening …" and polls each frame.
pub struct Opening<T> {
    /// What is being opened, in words (the panel shows it).
    pub what: String,
    pub started: std::time::Instant,
    handle: Option<std::thread::JoinHandle<Result<T>>>,
}

impl<T: Send + 'static> Opening<T> {
    /// Starts `build` on a new thread.
    ///
    /// # Errors
    /// The thread could not be started.
    pub fn start(what: String, build: impl FnOnce() -> Result<T> + Send + 'static) -> Result<Self> {
        let handle = std::thread::Builder::new()
            .name("posecloud-open".into())
            .spawn(build)
            .context("starting the thread that opens the scene")?;
        Ok(Self {
            what,
            started: std::time::Instant::now(),
            handle: Some(handle),
        })
    }

    /// The result once `build` returned (once; `None` before and after).
    /// A panic in `build` is an error naming what was opened.
    pub fn poll(&mut self) -> Option<Result<T>> {
        if !self.handle.as_ref()?.is_finished() {
            return None;
        }
        let handle = self.handle.take()?;
        Some(handle.join().unwrap_or_else(|panic| {
            let why = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic");
            Err(anyhow::anyhow!("opening {}: {why}", self.what))
        }))
    }
}

impl TrackingScene {
    /// [`TrackEdit::LeaveGpu`]: the CPU likelihood weighs the same cloud,
    /// and the keypoint network, on the same device, moves to tract.
    fn leave_gpu(&mut self, reason: &str) -> Result<()> {
        let mut s = self.settings.clone();
        s.tracker.backend = BackendChoice::Cpu;
        s.tracker.keypoint_backend = keypoints::Backend::Cpu;
        self.session
            .set_settings(s.tracker.clone())
            .context("switching to the CPU likelihood")?;
        self.settings = s;
        let line = format!(
            "{reason}: likelihood now {}; keypoints: {}",
            self.describe_backend(),
            self.session.describe_keypoints()
        );
        eprintln!("posecloud: {line}");
        self.message = Some(line);
        Ok(())
    }
}

/// Whether `e` is the GPU likelihood failing (a lost device, a failed
/// readback), as opposed to bad input.
fn is_gpu_failure(e: &track::SessionError) -> bool {
    matches!(
        e,
        track::SessionError::Track(track::TrackError::Likelihood { backend, .. }) if backend == "gpu"
    )
}

impl Solver for TrackingScene {
    type Snapshot = TrackSnapshot;
    type Edit = TrackEdit;

    fn apply(&mut self, edit: TrackEdit) -> Result<()> {
        match edit {
            TrackEdit::Settings(s) => {
                s.validate()?;
                let new_backend = s.tracker.backend != self.settings.tracker.backend;
                // A new back end is built on the session's device (the
                // app's), and weighs the same cloud.
                self.session
                    .set_settings(s.tracker.clone())
                    .with_context(|| {
                        format!("likelihood back end `{}`", backend_name(s.tracker.backend))
                    })?;
                self.settings = s;
                if new_backend {
                    self.message = Some(format!("likelihood: {}", self.describe_backend()));
                }
            }
            TrackEdit::Seek(k) => {
                self.session.seek(k)?;
                self.ended = false;
                self.message = Some(format!("continuing from frame {k}"));
            }
            TrackEdit::CaptureBackground => {
                self.message = Some(self.session.capture_background()?);
            }
            TrackEdit::LearnColours => {
                self.message = Some(self.session.learn_colours()?);
            }
            TrackEdit::SampleColours { frame, strokes } => self.sample_colours(frame, &strokes)?,
            TrackEdit::Sleeves(s) => {
                self.session.set_sleeves(s)?;
                self.spec.sleeves = s;
                self.message = Some(format!(
                    "sleeves: {} (colours are learned again at the next placing or with \"learn colours\")",
                    match s {
                        Sleeves::Short => "short",
                        Sleeves::Long => "long",
                    }
                ));
            }
            TrackEdit::TrackedJoints(t) => {
                self.session.set_tracked_joints(&t)?;
                self.message = Some(format!("tracking joints: {t}"));
                self.spec.track = t;
            }
            TrackEdit::Restart => self.reset()?,
            TrackEdit::Record(dir) => self.record(dir)?,
            TrackEdit::SavePose(stem) => self.save_pose(&stem)?,
            TrackEdit::LeaveGpu(reason) => self.leave_gpu(&reason)?,
        }
        Ok(())
    }

    fn reset(&mut self) -> Result<()> {
        self.session.restart()?;
        self.history.clear();
        self.ended = false;
        self.learn_fixed_background()
    }

    fn step(&mut self, time: f64) -> Result<()> {
        if self.ended {
            return Ok(());
        }
        if self.settings.realtime && time < self.due {
            // Not due yet: give the core back instead of spinning.
            std::thread::sleep(std::time::Duration::from_millis(1));
            return Ok(());
        }
        let step = match self.session.step() {
            Ok(step) => step,
            // A failed GPU batch (a lost device) is not the end of the run:
            // the frame is dropped and the CPU likelihood takes over.
            Err(e) if self.settings.tracker.backend != BackendChoice::Cpu && is_gpu_failure(&e) => {
                return self.leave_gpu(&format!("the GPU likelihood failed ({e})"));
            }
            Err(e) => return Err(e.into()),
        };
        let Some(step) = step else {
            self.ended = true;
            self.message = Some(match self.finish_recording()? {
                Some((rows, csv)) => format!(
                    "end of the source; recorded {rows} frames to {}",
                    csv.display()
                ),
                None => "end of the source (Reset plays it again)".into(),
            });
            return Ok(());
        };
        let period = self
            .session
            .source()
            .fps()
            .filter(|f| *f > 0.0)
            .map_or(0.0, |f| 1.0 / f);
        // Due one period after the last frame; a source that fell more than
        // half a second behind (a slow window) restarts from now instead of
        // racing to catch up.
        self.due = if time - self.due > 0.5 {
            time + period
        } else {
            self.due + period
        };
        self.frame_serial += 1;
        if let Some(e) = &step.event {
            eprintln!("posecloud: frame {}: {e}", step.frame);
            self.message = Some(e.clone());
        }
        if self.last_stage != Some(step.status.stage) {
            self.last_stage = Some(step.status.stage);
            eprintln!(
                "posecloud: frame {}: [{}] {}",
                step.frame,
                step.status.stage.name(),
                step.status.message
            );
        }
        let clip_frame = self
            .truth
            .as_ref()
            .and_then(|t| t.source.clip_frame(step.frame));
        self.last_clip_frame = clip_frame;
        let Some(tracked) = step.tracked else {
            return Ok(());
        };
        if let Some((rec, _)) = &mut self.recorder {
            match self.record_smoother.as_mut() {
                None => rec.record(step.frame, &tracked.pose)?,
                Some(sm) => {
                    let candidates = tracked.modes.candidates.clone();
                    if let Some(o) = sm.push(step.frame, step.timestamp, candidates)? {
                        rec.record(o.frame, &o.pose)?;
                    }
                }
            }
        }
        self.segment_ms = tracked.segment_ms;
        self.step_ms = tracked.step_ms;
        self.arm_branches.clone_from(&tracked.modes.arms);
        let truth = clip_frame
            .and_then(|c| self.truth_pose(c).map(<[f64]>::to_vec))
            .and_then(|p| self.elbow_deg(&p));
        let sample = TrackSample {
            frame: step.frame,
            residual: tracked.report.residual,
            elbow_deg: self.elbow_deg(&tracked.pose).unwrap_or(f64::NAN),
            truth_elbow_deg: truth,
            ess: tracked.report.ess,
        };
        push_history(&mut self.history, sample);
        Ok(())
    }

    fn budget(&self) -> std::time::Duration {
        // While tracking, one frame per displayed frame at most (a tracked
        // frame takes longer than this, so the runtime stops after it);
        // the guided start's frames cost a millisecond or two, and a slow
        // window must not slow the source's clock down.
        match self.session.status().stage {
            Stage::Tracking | Stage::Placing => std::time::Duration::from_millis(1),
            _ => std::time::Duration::from_millis(40),
        }
    }

    fn snapshot_into(&self, out: &mut TrackSnapshot) {
        let p = |v: &nalgebra::Vector3<f64>| [v.x as f32, v.y as f32, v.z as f32];
        let session = &self.session;
        let skeleton = session.dressed();
        let camera = session.camera();
        let project = |v: &nalgebra::Vector3<f64>| {
            camera
                .project(&nalgebra::Point3::from(*v))
                .map_or([f32::NAN; 2], |(u, v, _)| [u as f32, v as f32])
        };
        if let Some(f) = session.last_frame() {
            out.frame_rgb.clone_from(&f.rgb);
            out.frame_size = (f.width, f.height);
            out.frame_index = Some(f.index);
        } else {
            out.frame_rgb.clear();
            out.frame_index = None;
        }
        out.frame_serial = self.frame_serial;
        let seg = session.segmentation();
        out.labels.clone_from(&seg.labels);
        out.label_size = (seg.width, seg.height);
        out.frame_count = session.source().frame_count();
        let status = session.status();
        out.stage = Some(status.stage);
        out.status.clone_from(&status.message);
        out.progress = status.progress;
        out.joints = skeleton.len();
        out.estimate.clear();
        out.estimate_2d.clear();
        if let Some(pose) = session.estimate()
            && let Ok(world) = skeleton.forward_kinematics(pose)
        {
            out.estimate
                .extend(world.iter().map(|w| p(&w.translation.vector)));
            out.estimate_2d
                .extend(world.iter().map(|w| project(&w.translation.vector)));
        }
        out.truth.clear();
        if let Some(pose) = self.last_clip_frame.and_then(|c| self.truth_pose(c))
            && let Ok(world) = skeleton.forward_kinematics(pose)
        {
            out.truth
                .extend(world.iter().map(|w| p(&w.translation.vector)));
        }
        out.bones.clone_from(&self.bones);
        out.weights.clear();
        out.cloud.clear();
        out.cloud_2d.clear();
        if let Some(tracker) = session.tracker() {
            out.weights.extend_from_slice(tracker.weights());
            let mut full = vec![0.0; skeleton.dof()];
            let d = tracker.body().dim();
            let mut worlds = Vec::with_capacity(out.weights.len());
            for state in tracker.particles().chunks(d) {
                tracker.body().to_full(state, &mut full);
                let world = skeleton.forward_kinematics(&full).ok();
                push_joints(&mut out.cloud, world.as_deref(), skeleton.len(), p);
                worlds.push(world);
            }
            let mut order: Vec<usize> = (0..out.weights.len()).collect();
            order.sort_unstable_by(|&a, &b| out.weights[b].total_cmp(&out.weights[a]));
            for &i in order.iter().take(OVERLAY_PARTICLES) {
                push_joints(
                    &mut out.cloud_2d,
                    worlds[i].as_deref(),
                    skeleton.len(),
                    project,
                );
            }
        }
        let pose = camera.world_from_camera();
        out.camera_position = p(&pose.translation.vector);
        out.camera_forward = p(&(pose.rotation * nalgebra::Vector3::z()));
        out.camera_note = session.camera_note().to_string();
        out.history.clone_from(&self.history);
        out.backend = self.describe_backend();
        out.keypoint_backend = session.describe_keypoints();
        out.observation = session.describe_observation();
        out.keypoints.clear();
        out.keypoints_frame = None;
        if let Some((f, kp)) = session.detection() {
            out.keypoints_frame = Some(f);
            out.keypoints.extend(
                kp.tracked()
                    .map(|(name, k)| (name, [k.u, k.v], k.score.min(k.presence))),
            );
        }
        out.source_name = session.source_name().to_string();
        out.step_ms = self.step_ms;
        out.segment_ms = self.segment_ms;
        out.arm_branches.clone_from(&self.arm_branches);
        out.settings.clone_from(&self.settings);
        out.sleeves = self.spec.sleeves;
        out.tracked_joints.clone_from(&self.spec.track);
        out.recording = self
            .recorder
            .as_ref()
            .map(|(r, csv)| (csv.clone(), r.rows()));
        out.ended = self.ended;
        out.message.clone_from(&self.message);
    }
}

/// The colour of a class id in label previews (RGB8).
pub fn class_colour(id: u8) -> [u8; 3] {
    SegClass::from_id(id).map_or([255, 0, 255], SegClass::preview_colour)
}

/// Appends `point` of each of the `joints` positions in `world`, or
/// `joints` NaN points for a particle whose pose has no world transforms.
fn push_joints<const N: usize>(
    out: &mut Vec<[f32; N]>,
    world: Option<&[nalgebra::Isometry3<f64>]>,
    joints: usize,
    point: impl Fn(&nalgebra::Vector3<f64>) -> [f32; N],
) {
    match world {
        Some(world) => out.extend(world.iter().map(|w| point(&w.translation.vector))),
        None => out.extend(std::iter::repeat_n([f32::NAN; N], joints)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::stepped;

    /// `particles` particles, every frame tracked as fast as it goes.
    fn offline(particles: usize) -> TrackSettings {
        TrackSettings {
            tracker: FilterSettings {
                particles,
                ..TrackSettings::default().tracker
            },
            realtime: false,
        }
    }

    fn short_walk() -> TrackSpec {
        TrackSpec {
            synthetic_frames: 24,
            ..TrackSpec::default()
        }
    }

    #[test]
    fn tracks_the_synthetic_walk_and_publishes_cloud_and_truth() {
        let settings = offline(60);
        let mut scene = TrackingScene::new(short_walk(), settings).unwrap();
        let snap = stepped(&mut scene, 6);
        assert_eq!(snap.history.len(), 6);
        assert_eq!(snap.weights.len(), 60);
        assert_eq!(snap.cloud.len(), 60 * snap.joints);
        assert_eq!(snap.truth.len(), snap.joints);
        assert_eq!(snap.label_size, (160, 120));
        assert_eq!(snap.frame_size, (640, 480));
        let sum: f64 = snap.weights.iter().sum();
        assert!((sum - 1.0).abs() < 1e-9, "weights sum to {sum}");
        // The root stays with the subject: within 0.25 m of the truth after
        // six frames (the CLI test's bound on this clip is 0.12 m with a
        // finer step; the subject moves ~0.26 m over these frames).
        let root = |v: &[[f32; 3]]| nalgebra::Vector3::from(v[0].map(f64::from));
        let err = (root(&snap.estimate) - root(&snap.truth)).norm();
        assert!(err < 0.25, "root {err} m from the truth");
        for s in &snap.history {
            assert!(s.residual.is_finite() && s.truth_elbow_deg.is_some());
        }
    }

    #[test]
    fn the_guided_start_places_a_person_who_holds_still() {
        // A person standing arms-down 2.6 m along the camera's axis, 0.3 m
        // to the side, after an empty frame.
        let spec0 = TrackSpec::default();
        let mut bvh = Bvh::load(spec0.subject.body.as_ref().unwrap()).unwrap();
        let cam = vision::resize_camera(
            &load_camera(spec0.camera.file().unwrap()).unwrap(),
            320,
            240,
        )
        .unwrap();
        let hips = bvh.frames.pose(0)[1];
        let mut root = track::start::in_front_of(&cam, 2.6, hips);
        root.x += 0.3;
        let pose =
            track::start::start_pose(&bvh.skeleton, StartPose::ArmsDown, &cam, root).unwrap();
        let mut frames = skeleton::PoseBatch::rest(&bvh.skeleton, 0);
        for _ in 0..22 {
            frames.push(&pose).unwrap();
        }
        bvh.frames = frames;
        let renderer =
            SyntheticRenderer::new(&bvh.skeleton, cam, RenderOptions::default()).unwrap();
        let source = SyntheticSource::new(&bvh, renderer, 0..22, 1).unwrap();
        let dir = crate::testing::scratch_path("start");
        vision::write_render(&source, &dir).unwrap();
        let spec = TrackSpec {
            frames: Some(dir.to_str().unwrap().to_owned()),
            camera: CameraSpec::File(dir.join("camera.toml")),
            start_pose: Some(StartPose::ArmsDown),
            background_frames: Some(1),
            ..TrackSpec::default()
        };
        let settings = offline(50);
        let mut scene = TrackingScene::new(spec, settings).unwrap();
        let mut stages = Vec::new();
        for _ in 0..22 {
            let snap = stepped(&mut scene, 1);
            if stages.last() != snap.stage.as_ref() {
                stages.push(snap.stage.unwrap());
            }
        }
        assert_eq!(
            stages,
            [Stage::WaitingForPerson, Stage::Placing, Stage::Tracking]
        );
        let est = nalgebra::Vector3::from_column_slice(&scene.session.estimate().unwrap()[..3]);
        assert!(
            (est - root.coords).norm() < 0.25,
            "root {est:?}, truth {root:?}"
        );
        let mut snap = TrackSnapshot::default();
        scene.snapshot_into(&mut snap);
        // The estimate and the most likely particles over the frame: the
        // root projects where the truth does.
        let (u, v, _) = scene.session.camera().project(&root).unwrap();
        let r = snap.estimate_2d[0];
        assert!((f64::from(r[0]) - u).abs() < 8.0 && (f64::from(r[1]) - v).abs() < 8.0);
        assert_eq!(snap.cloud_2d.len(), OVERLAY_PARTICLES * snap.joints);
    }

    #[test]
    fn a_saved_pose_reads_back_where_the_estimate_is() {
        let mut scene = small_scene();
        let dir = crate::testing::scratch_path("pose");
        for _ in 0..3 {
            scene.step(0.0).unwrap();
        }
        scene.apply(TrackEdit::SavePose(dir.join("pose"))).unwrap();
        let back = Bvh::load(dir.join("pose.bvh")).unwrap();
        let body = &scene.session.body().skeleton;
        let want = body
            .forward_kinematics(scene.session.estimate().unwrap())
            .unwrap();
        let got = back.forward_kinematics(0).unwrap();
        let mut compared = 0;
        for (j, w) in want.iter().enumerate() {
            if let Ok(k) = back.skeleton.find(&body.joint(j).name) {
                let d = (w.translation.vector - got[k].translation.vector).norm();
                assert!(d < 1e-4, "{}: {d}", body.joint(j).name);
                compared += 1;
            }
        }
        assert!(compared > 15, "{compared} joints compared");
        assert!(dir.join("pose.csv").is_file());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn recording_writes_the_tracked_frames_and_names_files_by_the_time() {
        assert_eq!(
            recording_stem(std::time::Duration::from_secs(1_764_093_600)),
            "posecloud-20251125-180000"
        );
        let mut scene = small_scene();
        let dir = crate::testing::scratch_path("rec");
        scene.step(0.0).unwrap();
        scene.apply(TrackEdit::Record(Some(dir.clone()))).unwrap();
        let snap = stepped(&mut scene, 3);
        assert_eq!(snap.recording.as_ref().map(|r| r.1), Some(3));
        scene.apply(TrackEdit::Record(None)).unwrap();
        let files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        let csv = files
            .iter()
            .find(|p| p.extension().is_some_and(|e| e == "csv"))
            .unwrap();
        let bvh = files
            .iter()
            .find(|p| p.extension().is_some_and(|e| e == "bvh"))
            .unwrap();
        assert_eq!(files.len(), 2, "{files:?}");
        assert_eq!(std::fs::read_to_string(csv).unwrap().lines().count(), 4);
        assert_eq!(Bvh::load(bvh).unwrap().frames.len(), 3);
    }

    #[test]
    fn bad_settings_and_files_name_the_field() {
        let tracker = TrackSettings::default().tracker;
        for (tracker, field) in [
            (
                FilterSettings {
                    particles: 0,
                    ..tracker.clone()
                },
                "particles",
            ),
            (
                FilterSettings {
                    sigma_f: f64::NAN,
                    ..tracker
                },
                "sigma-f",
            ),
        ] {
            let e = TrackSettings {
                tracker,
                ..TrackSettings::default()
            }
            .validate()
            .unwrap_err();
            assert!(e.to_string().contains(field), "{e}");
        }
        for (spec, needle) in [
            (
                TrackSpec {
                    subject: Subject {
                        body: Some("/nonexistent/body.bvh".into()),
                        height: None,
                    },
                    ..short_walk()
                },
                "/nonexistent/body.bvh",
            ),
            (
                TrackSpec {
                    init_frame: 1_000_000,
                    ..short_walk()
                },
                "init frame",
            ),
            (
                TrackSpec {
                    frames: Some("webcam:7".into()),
                    ..short_walk()
                },
                "webcam",
            ),
        ] {
            let e = TrackingScene::new(spec, TrackSettings::default()).unwrap_err();
            assert!(format!("{e:#}").contains(needle), "{e:#}");
        }
    }

    #[test]
    fn settings_edits_apply_and_bad_ones_keep_the_old() {
        let settings = offline(40);
        let mut scene = TrackingScene::new(short_walk(), settings.clone()).unwrap();
        scene.step(0.0).unwrap();
        let more = TrackSettings {
            tracker: FilterSettings {
                particles: 80,
                filter: track::FilterKind::Pfs,
                ..settings.tracker.clone()
            },
            ..settings.clone()
        };
        scene.apply(TrackEdit::Settings(more.clone())).unwrap();
        scene.step(0.0).unwrap();
        assert_eq!(scene.session.tracker().unwrap().weights().len(), 80);
        let bad = TrackSettings {
            tracker: FilterSettings {
                sigma_limb: -1.0,
                ..more.tracker.clone()
            },
            ..more.clone()
        };
        assert!(scene.apply(TrackEdit::Settings(bad)).is_err());
        assert_eq!(scene.settings(), &more);
        scene.apply(TrackEdit::Seek(4)).unwrap();
        assert!(scene.apply(TrackEdit::Seek(10_000)).is_err());
        scene.apply(TrackEdit::LearnColours).unwrap();
        scene.apply(TrackEdit::CaptureBackground).unwrap();
        scene.reset().unwrap();
        assert!(scene.history.is_empty());
    }

    /// One click per class on the last frame, as the panel makes it
    /// ([`click_patch`]): on the middle one of the frame pixels whose whole
    /// patch is `class` in the ground truth.
    fn truth_clicks(scene: &TrackingScene, classes: &[(ColourClass, SegClass)]) -> Vec<Stroke> {
        let source = &scene.truth.as_ref().expect("a synthetic scene").source;
        let last = scene.session.last_frame().unwrap();
        let truth = source.render_frame(last.index).unwrap().unwrap();
        let mut labels = truth.labels;
        scene.session.class_map().remap(&mut labels);
        let size = (last.width, last.height);
        let seg = scene.session.segmentation();
        let label_size = (seg.width, seg.height);
        let w = last.width as usize;
        classes
            .iter()
            .map(|&(class, seg)| {
                let inside: Vec<Vec<(u32, u32)>> = (0..last.height)
                    .flat_map(|y| (0..last.width).map(move |x| (x, y)))
                    .map(|p| click_patch(p, size, label_size))
                    .filter(|patch| {
                        patch
                            .iter()
                            .all(|&(x, y)| labels[y as usize * w + x as usize] == seg.id())
                    })
                    .collect();
                assert!(!inside.is_empty(), "no {} patch in the truth", seg.name());
                Stroke {
                    class,
                    points: inside[inside.len() / 2].clone(),
                }
            })
            .collect()
    }

    /// Of the label pixels whose centre is on the body in the ground truth
    /// of the last frame: the fraction the segmentation gives the true
    /// class.
    fn truth_agreement(scene: &TrackingScene) -> f64 {
        let source = &scene.truth.as_ref().expect("a synthetic scene").source;
        let index = scene.session.last_frame().unwrap().index;
        let truth = source.render_frame(index).unwrap().unwrap();
        let mut labels = truth.labels;
        scene.session.class_map().remap(&mut labels);
        let seg = scene.session.segmentation();
        let (fw, fh) = (truth.frame.width as usize, truth.frame.height as usize);
        let (lw, lh) = (seg.width as usize, seg.height as usize);
        let (mut body, mut same) = (0, 0);
        for y in 0..lh {
            for x in 0..lw {
                let t = labels[(y * fh / lh + fh / lh / 2) * fw + x * fw / lw + fw / lw / 2];
                if t != 0 {
                    body += 1;
                    same += usize::from(seg.labels[y * lw + x] == t);
                }
            }
        }
        same as f64 / body.max(1) as f64
    }

    fn small_scene() -> TrackingScene {
        let settings = offline(40);
        TrackingScene::new(short_walk(), settings).unwrap()
    }

    const SKIN_SHIRT_TROUSERS: [(ColourClass, SegClass); 3] = [
        (ColourClass::Skin, SegClass::Skin),
        (ColourClass::Shirt, SegClass::Shirt),
        (ColourClass::Trousers, SegClass::Trousers),
    ];

    #[test]
    fn one_click_per_class_learns_colours_that_segment_the_next_frames() {
        let mut scene = small_scene();
        scene.step(0.0).unwrap();
        let frame = scene.session.last_frame().unwrap().index;
        let strokes = truth_clicks(&scene, &SKIN_SHIRT_TROUSERS);
        let counts = stroke_label_pixels(&strokes, (640, 480), (160, 120));
        for class in [ColourClass::Skin, ColourClass::Shirt, ColourClass::Trousers] {
            // A 5 × 5 patch covers 2 × 2 to 3 × 3 label pixels.
            let n = counts[class as usize];
            assert!((4..=9).contains(&n), "{}: {n} label pixels", class.name());
        }
        let (pose_labels, serial) = (
            scene.session.segmentation().labels.clone(),
            scene.frame_serial,
        );
        // Only the clicks' colours: the models learned from the initial
        // pose are dropped first (hair has none then).
        for class in ColourClass::ALL {
            scene.session.segmenter_mut().set_colour_model(class, None);
        }
        scene
            .apply(TrackEdit::SampleColours { frame, strokes })
            .unwrap();
        let message = scene.message.clone().unwrap();
        let expected = format!(
            "colours learned from 3 strokes ({} skin, {} shirt, {} trousers label pixels) on frame {frame}",
            counts[0], counts[2], counts[3]
        );
        assert_eq!(message, expected);
        let models = scene.session.segmenter().colour_models();
        assert!(models[ColourClass::Hair as usize].is_none());
        assert!(models.iter().filter(|m| m.is_some()).count() == 3);
        // The label image of the clicked frame shows the new colours at
        // once (0.90 of the body right in the run this was written with).
        assert_ne!(scene.session.segmentation().labels, pose_labels);
        assert_eq!(scene.frame_serial, serial + 1);
        let agreement = truth_agreement(&scene);
        assert!(
            agreement > 0.7,
            "{agreement} of the clicked frame segmented right"
        );
        for _ in 0..3 {
            scene.step(0.0).unwrap();
        }
        // The run this was written with: 0.88 of the body's label pixels
        // get their true class (0.97 with the colours learned from the
        // initial pose, which also learn hair).
        let agreement = truth_agreement(&scene);
        assert!(agreement > 0.75, "{agreement} of the body segmented right");
    }

    #[test]
    fn bad_strokes_are_errors_that_keep_the_colour_models() {
        let mut scene = small_scene();
        scene.step(0.0).unwrap();
        let frame = scene.session.last_frame().unwrap().index;
        let before = *scene.session.segmenter().colour_models();
        let message = scene.message.clone();
        let clicks = truth_clicks(&scene, &SKIN_SHIRT_TROUSERS[..1]);
        let mut refuse = |frame, strokes| {
            scene
                .apply(TrackEdit::SampleColours { frame, strokes })
                .unwrap_err()
        };
        let mut outside = clicks.clone();
        outside[0].points.push((700, 5));
        let e = refuse(frame, outside);
        assert!(format!("{e:#}").contains("(700, 5)"), "{e:#}");
        assert!(format!("{e:#}").contains("640 × 480"), "{e:#}");
        // Skin is fitted before shirt fails (one label pixel): skin keeps
        // its old model too.
        let mut too_few = clicks.clone();
        too_few.push(Stroke {
            class: ColourClass::Shirt,
            points: vec![(300, 200)],
        });
        let e = refuse(frame, too_few);
        assert!(format!("{e:#}").contains("shirt"), "{e:#}");
        let e = refuse(frame + 1, clicks.clone());
        assert!(
            e.to_string().contains(&format!("frame {}", frame + 1)),
            "{e}"
        );
        let e = refuse(
            frame,
            vec![Stroke {
                class: ColourClass::Hair,
                points: Vec::new(),
            }],
        );
        assert!(e.to_string().contains("no stroke points"), "{e}");
        assert_eq!(scene.session.segmenter().colour_models(), &before);
        assert_eq!(scene.message, message);
        scene
            .apply(TrackEdit::SampleColours {
                frame,
                strokes: clicks,
            })
            .unwrap();
        assert_ne!(scene.session.segmenter().colour_models(), &before);
    }

    #[test]
    fn a_click_patch_covers_two_by_two_label_pixels_and_stays_in_the_frame() {
        let (frame, labels) = ((640, 480), (160, 120));
        for centre in [
            (0, 0),
            (1, 1),
            (2, 2),
            (3, 3),
            (4, 4),
            (321, 200),
            (639, 479),
        ] {
            let patch = click_patch(centre, frame, labels);
            assert_eq!(patch.len(), 25);
            assert!(patch.contains(&centre));
            assert!(patch.iter().all(|&(x, y)| x < 640 && y < 480));
            let stroke = Stroke {
                class: ColourClass::Skin,
                points: patch,
            };
            let n = stroke_label_pixels(&[stroke], frame, labels)[0];
            assert!(n >= 4, "{centre:?}: {n} label pixels");
        }
        // No label image yet: a 3 × 3 patch, and no label pixels.
        let patch = click_patch((5, 5), frame, (0, 0));
        assert_eq!(patch.len(), 9);
        let stroke = Stroke {
            class: ColourClass::Skin,
            points: patch,
        };
        assert_eq!(stroke_label_pixels(&[stroke], frame, (0, 0)), [0; 4]);
        // A full-HD frame (12 frame pixels per label pixel): 13 × 13.
        assert_eq!(click_patch((500, 500), (1920, 1080), labels).len(), 169);
    }

    #[test]
    fn a_new_back_end_weighs_the_same_cloud_and_says_which_runs() {
        let mut scene = small_scene();
        scene.step(0.0).unwrap();
        scene.step(0.0).unwrap();
        let cloud = scene.session.tracker().unwrap().particles().to_vec();
        let cpu = TrackSettings {
            tracker: FilterSettings {
                backend: BackendChoice::Cpu,
                ..scene.settings().tracker.clone()
            },
            ..scene.settings().clone()
        };
        scene.apply(TrackEdit::Settings(cpu.clone())).unwrap();
        assert_eq!(scene.settings(), &cpu);
        assert_eq!(
            scene.session.tracker().unwrap().config().backend,
            BackendChoice::Cpu
        );
        assert_eq!(scene.session.tracker().unwrap().particles(), &cloud[..]);
        let d = scene.describe_backend();
        assert!(d.starts_with("CPU likelihood"), "{d}");
        assert!(!d.contains("app's device"), "{d}");
        assert_eq!(scene.message, Some(format!("likelihood: {d}")));
        let snap = stepped(&mut scene, 1);
        assert_eq!(scene.history.len(), 3);
        assert_eq!(snap.backend, d);
        assert_eq!(snap.settings.tracker.backend, BackendChoice::Cpu);
        // The status line says where the keypoint network runs.
        assert_eq!(snap.keypoint_backend, scene.session.describe_keypoints());
        assert!(
            snap.keypoint_backend.starts_with("BlazePose full on "),
            "{}",
            snap.keypoint_backend
        );
        // The name the panel and `--backend` use parses back.
        for b in BACKENDS {
            assert_eq!(backend_name(b).parse::<BackendChoice>(), Ok(b));
        }
        assert!("nonsense".parse::<BackendChoice>().is_err());
    }

    /// A wgpu device of the test's own, standing in for the window's.
    fn app_device() -> gpu::HeadlessGpu {
        gpu::HeadlessGpu::new().unwrap_or_else(|e| {
            panic!("no GPU adapter: {e} (run without --include-ignored to skip the GPU tests)")
        })
    }

    /// A device standing in for the window's, and 40-particle settings
    /// on the GPU back end.
    fn gpu_settings() -> (gpu::HeadlessGpu, SharedDevice, TrackSettings) {
        let g = app_device();
        let shared = SharedDevice {
            device: g.device.clone(),
            queue: g.queue.clone(),
        };
        let settings = TrackSettings {
            tracker: FilterSettings {
                particles: 40,
                backend: BackendChoice::Gpu,
                ..TrackSettings::default().tracker
            },
            realtime: false,
        };
        (g, shared, settings)
    }

    #[test]
    fn opening_runs_off_the_callers_thread_and_reports_once() {
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let caller = std::thread::current().id();
        let mut opening = Opening::start("a slow source".into(), move || {
            wait.recv().unwrap();
            anyhow::ensure!(
                std::thread::current().id() != caller,
                "on the caller's thread"
            );
            TrackingScene::new(short_walk(), offline(40))
        })
        .unwrap();
        // Still opening: the caller (the window) goes on.
        assert!(opening.poll().is_none());
        go.send(()).unwrap();
        let t0 = std::time::Instant::now();
        let result = loop {
            if let Some(r) = opening.poll() {
                break r;
            }
            assert!(t0.elapsed().as_secs() < 120, "never finished");
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        assert!(result.is_ok(), "{:#}", result.err().unwrap());
        assert!(opening.poll().is_none(), "reported once");
        // A bad source is an error; a panic is an error naming what.
        let mut bad =
            Opening::start("nothing".into(), || -> Result<()> { panic!("boom") }).unwrap();
        let e = loop {
            if let Some(r) = bad.poll() {
                break r.unwrap_err();
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        assert_eq!(e.to_string(), "opening nothing: boom");
    }

    #[test]
    #[ignore = "needs a GPU adapter (lavapipe in CI)"]
    fn a_lost_device_hands_the_tracking_to_the_cpu_likelihood() {
        let (g, shared, settings) = gpu_settings();
        let mut scene = TrackingScene::with_device(short_walk(), settings, Some(shared)).unwrap();
        scene.step(0.0).unwrap();
        scene.step(0.0).unwrap();
        assert!(scene.describe_backend().starts_with("GPU likelihood"));
        // What a driver reset does to the device; the next GPU batch fails.
        g.device.destroy();
        for _ in 0..3 {
            scene.step(0.0).unwrap();
        }
        assert!(
            scene.describe_backend().starts_with("CPU likelihood"),
            "{}",
            scene.describe_backend()
        );
        let mut snap = TrackSnapshot::default();
        scene.snapshot_into(&mut snap);
        assert_eq!(snap.settings.tracker.backend, BackendChoice::Cpu);
        let message = scene.message.clone().unwrap_or_default();
        assert!(
            message.contains("GPU likelihood failed") && message.contains("CPU likelihood"),
            "{message}"
        );
        // Tracking goes on.
        let before = scene.history.len();
        scene.step(0.0).unwrap();
        assert_eq!(scene.history.len(), before + 1);
        // The window's own report of a lost device does the same.
        let mut scene = TrackingScene::new(short_walk(), offline(40)).unwrap();
        scene
            .apply(TrackEdit::LeaveGpu(
                "the window's GPU device was lost".into(),
            ))
            .unwrap();
        assert!(scene.describe_backend().starts_with("CPU likelihood"));
        assert!(
            scene
                .message
                .as_deref()
                .unwrap_or_default()
                .starts_with("the window's GPU device was lost")
        );
    }

    /// Issue 35: `keypoint_backend = Gpu` runs the network on the window's
    /// own device (no second device), the status line says so, and a lost
    /// device hands it to tract with the likelihood.
    #[test]
    #[ignore = "needs a GPU adapter (lavapipe in CI)"]
    fn the_keypoint_network_runs_on_the_apps_device_until_it_is_lost() {
        let (g, shared, mut settings) = gpu_settings();
        settings.tracker.keypoint_backend = keypoints::Backend::Gpu;
        let mut scene = TrackingScene::with_device(short_walk(), settings, Some(shared)).unwrap();
        let snap = stepped(&mut scene, 2);
        let on_device = format!("BlazePose full on {} (GPU, ", g.info.name);
        assert!(
            snap.keypoint_backend.starts_with(&on_device)
                && snap.keypoint_backend.contains("the app's device"),
            "{}",
            snap.keypoint_backend
        );
        assert!(snap.keypoints_frame.is_some(), "no detection yet");
        g.device.destroy();
        for _ in 0..3 {
            scene.step(0.0).unwrap();
        }
        let snap = stepped(&mut scene, 1);
        assert_eq!(snap.keypoint_backend, "BlazePose full on the CPU (tract)");
        assert_eq!(
            snap.settings.tracker.keypoint_backend,
            keypoints::Backend::Cpu
        );
        assert!(
            snap.backend.starts_with("CPU likelihood"),
            "{}",
            snap.backend
        );
    }

    #[test]
    #[ignore = "needs a GPU adapter (lavapipe in CI)"]
    fn the_gpu_back_end_runs_on_the_apps_device_after_every_change() {
        let (g, shared, settings) = gpu_settings();
        let mut scene =
            TrackingScene::with_device(short_walk(), settings.clone(), Some(shared)).unwrap();
        let on_device = format!(
            "GPU likelihood on {}, the app's device",
            gpu::describe_adapter(&g.info)
        );
        assert!(
            scene.describe_backend().starts_with(&on_device),
            "{}",
            scene.describe_backend()
        );
        scene.step(0.0).unwrap();
        scene.step(0.0).unwrap();
        for backend in [BackendChoice::Cpu, BackendChoice::Gpu] {
            let s = TrackSettings {
                tracker: FilterSettings {
                    backend,
                    ..settings.tracker.clone()
                },
                ..settings.clone()
            };
            scene.apply(TrackEdit::Settings(s)).unwrap();
            scene.step(0.0).unwrap();
        }
        assert!(
            scene.describe_backend().starts_with(&on_device),
            "{}",
            scene.describe_backend()
        );
        // Other settings keep the back end (and its device).
        let more = TrackSettings {
            tracker: FilterSettings {
                particles: 60,
                ..settings.tracker.clone()
            },
            ..settings.clone()
        };
        scene.apply(TrackEdit::Settings(more)).unwrap();
        scene.step(0.0).unwrap();
        assert!(scene.describe_backend().starts_with(&on_device));
        assert_eq!(scene.session.tracker().unwrap().weights().len(), 60);
        // Auto on a software adapter (lavapipe) says why it chose the CPU.
        let auto = TrackSettings {
            tracker: FilterSettings {
                backend: BackendChoice::Auto,
                ..settings.tracker.clone()
            },
            ..settings.clone()
        };
        scene.apply(TrackEdit::Settings(auto)).unwrap();
        let d = scene.describe_backend();
        if g.info.device_type == gpu::wgpu::DeviceType::Cpu {
            assert!(
                d.starts_with("CPU likelihood") && d.contains("software adapter"),
                "{d}"
            );
        }
        for h in &scene.history {
            assert!(h.residual.is_finite());
        }
    }

    #[test]
    fn real_time_play_waits_for_the_source_clock() {
        let settings = TrackSettings {
            tracker: FilterSettings {
                particles: 20,
                ..TrackSettings::default().tracker
            },
            realtime: true,
        };
        let mut scene = TrackingScene::new(short_walk(), settings).unwrap();
        scene.step(0.0).unwrap();
        scene.step(0.0).unwrap(); // not due: the render runs at 15 frames/s
        assert_eq!(scene.history.len(), 1);
        scene.step(1.0 / 15.0 + 1e-9).unwrap();
        assert_eq!(scene.history.len(), 2);
    }
}

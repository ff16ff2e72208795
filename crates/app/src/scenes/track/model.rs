//! The tracking scene's model (Bevy-free): a thin driver of the tracking
//! session ([`track::Session`], the same one `posecloud track` drives) on
//! frames from a camera, a video, an image folder or a synthetic render of
//! a BVH clip (`crates/vision`), as a [`runtime::Solver`](crate::runtime::Solver).
//!
//! One [`crate::runtime::Solver::step`] is one source frame:
//! the session advances its guided start (background, person, placing) or
//! tracks the frame (segmentation, RTPF Eq. 1–2 on the GPU or CPU back
//! end); the snapshot carries the frame, the stage's message and progress,
//! and a copy of the session's [`track::TrackFrame`] (the estimate and the
//! most likely particles projected onto the frame, the cloud): the window
//! runs no forward kinematics of its own. Record/Stop writes what is
//! tracked to CSV and BVH ([`track::Recorder`]: rows as they come, files
//! whole at Stop).
//!
//! The GPU back end runs on the app's own wgpu device when the app hands it
//! over ([`TrackingScene::with_device`], the window's renderer): one
//! device, not a second headless one, for every back end chosen later too.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use skeleton::nalgebra::Isometry3;
use skeleton::{Bvh, Skeleton};
use track::{Arm, BackendChoice, Recorder, SharedDevice, Side, StartPose, TrackFrame};
use track::{CameraSpec, FilterSettings, KnownPose, Session, SessionSpec, Stage, Subject};
use vision::EmptyScene;
use vision::{
    ColourClass, FrameSource, RenderOptions, SegClass, Segmentation, Sleeves, Stroke,
    SyntheticRenderer, SyntheticSource, load_camera, open_source,
};

use crate::runtime::{Solver, push_history};

mod opening;
mod strokes;

pub use opening::Opening;
pub use strokes::{click_patch, stroke_summary};

/// Most particles the scene accepts (the tracker's cost grows with N).
pub const MAX_TRACK_PARTICLES: usize = 5000;
/// Particles projected over the camera frame (the most likely ones: the
/// [`TrackFrame::top`] the scene asks for).
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
                top_particles: OVERLAY_PARTICLES,
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
    /// The tracker's last frame, copied: the estimate (world, and in the
    /// pixels of the label image, [`TrackFrame::image_size`]), every
    /// particle's joints with its weight, the [`OVERLAY_PARTICLES`] most
    /// likely particles in the image; empty before the tracker starts.
    pub track: TrackFrame,
    /// Ground-truth joint positions (synthetic sources).
    pub truth: Vec<[f32; 3]>,
    /// Bones as (parent, child) joint indices.
    pub bones: Vec<(usize, usize)>,
    /// The skeleton's joints (of the truth and of every pose in `track`).
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
    /// The ground truth's joint transforms and positions at the last
    /// source frame (empty without a truth).
    truth_world: Vec<Isometry3<f64>>,
    truth_joints: Vec<[f32; 3]>,
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
            truth_world: Vec::new(),
            truth_joints: Vec::new(),
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

    /// The ground truth's joints at `clip_frame` (synthetic sources) into
    /// reused buffers: one pose, so one forward kinematics per source
    /// frame; the snapshot copies the positions.
    fn pose_truth(&mut self, clip_frame: Option<usize>) {
        self.truth_joints.clear();
        let (Some(truth), Some(c)) = (&self.truth, clip_frame) else {
            return;
        };
        let pose = truth.clip.frames.pose(c);
        let skeleton = self.session.dressed();
        if skeleton.check_pose(pose).is_err() {
            return;
        }
        self.truth_world
            .resize(skeleton.len(), Isometry3::identity());
        skeleton.forward_kinematics_into(pose, &mut self.truth_world);
        if skeleton.check_world(&self.truth_world).is_ok() {
            let point = |w: &Isometry3<f64>| {
                let v = &w.translation.vector;
                [v.x as f32, v.y as f32, v.z as f32]
            };
            self.truth_joints.extend(self.truth_world.iter().map(point));
        }
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

impl TrackingScene {
    /// [`TrackEdit::LeaveGpu`]: the CPU likelihood weighs the same cloud,
    /// and the keypoint network, on the same device, moves to tract.
    fn leave_gpu(&mut self, reason: &str) -> Result<()> {
        let mut s = self.settings.clone();
        s.tracker.backend = BackendChoice::Cpu;
        s.tracker.keypoint_backend = keypoints::DetectorBackend::Cpu;
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
        self.pose_truth(clip_frame);
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
        let truth = self
            .arm
            .filter(|_| !self.truth_joints.is_empty())
            .map(|arm| arm.flexion(&self.truth_world).to_degrees());
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
        let camera = session.camera();
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
        out.joints = session.dressed().len();
        // A copy of what the tracker's step computed (its forward
        // kinematics, its heaviest particles): into `out`'s buffers, which
        // hold the previous frame's, so nothing is allocated per particle.
        match session.frame() {
            Some(frame) => out.track.clone_from(frame),
            None => out.track.clear(),
        }
        out.truth.clone_from(&self.truth_joints);
        out.bones.clone_from(&self.bones);
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

#[cfg(test)]
mod tests;

//! The tracking scene's model (Bevy-free): RTPF's particle filter
//! (`crates/track`) on frames from a camera, a video, an image folder or a
//! synthetic render of a BVH clip (`crates/vision`), as a
//! [`runtime::Solver`](crate::runtime::Solver).
//!
//! One [`Solver::step`](crate::runtime::Solver::step) is one frame: read
//! the next frame, segment it into the label image (RTPF §IV-D), weigh the
//! cloud with the label likelihood (RTPF Eq. 1–2, GPU or CPU back end) and
//! publish the estimate, the cloud and the frame. The first frames of the
//! source are the background model; the colour models are learned from the
//! first tracked frame in the initial pose (the user stands in that pose),
//! and again on demand ("learn colours" uses the current estimate;
//! "capture background" the current frame; "sample colours" the pixels the
//! user clicked or stroked on the frame, one colour class per stroke).
//!
//! The GPU back end runs on the app's own wgpu device when the app hands it
//! over ([`TrackingScene::with_device`], the window's renderer): one
//! device, not a second headless one, for every back end chosen later too.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use skeleton::{Bvh, Skeleton};
use track::{
    Arm, BackendChoice, FilterKind, Selection, SharedDevice, Side, StartPose, TrackedBody, Tracker,
    TrackerConfig,
};
use vision::{
    BodyShape, ClassMap, ColourClass, Frame, FrameSource, RenderOptions, SegClass, SegmentParams,
    Segmentation, Segmenter, Sleeves, Stroke, SyntheticRenderer, SyntheticSource, dress_skeleton,
    load_camera, open_source, resize_camera,
};

use crate::runtime::Solver;

/// Frames of F / elbow history kept for the plots.
pub const TRACK_HISTORY: usize = 600;
/// Most particles the scene accepts (the tracker's cost grows with N).
pub const MAX_TRACK_PARTICLES: usize = 5000;

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
    /// `None`: a synthetic render of [`Self::body`]'s clip; else a frame
    /// source as `posecloud track --frames` takes it (folder, glob, video,
    /// Y4M, `webcam[:N[@WxH]]`).
    pub frames: Option<String>,
    /// The camera file (TOML, `crates/vision`).
    pub camera: PathBuf,
    /// The body (a BVH: its hierarchy gives the dimensions).
    pub body: PathBuf,
    /// The frame of `body` holding the initial pose (and, for the synthetic
    /// source, the first rendered clip frame).
    pub init_frame: usize,
    /// Synthetic source: clip frames rendered (from `init_frame`) and step.
    pub synthetic_frames: usize,
    pub synthetic_step: usize,
    /// Frames of the source that show the empty scene (background model).
    pub background_frames: usize,
    /// Frame rate of image folders.
    pub fps: f64,
    /// Start from a standard pose instead of the body file's `init_frame`
    /// (`posecloud track --start-pose`): the person stands so, facing the
    /// camera, in the first tracked frame, found by a silhouette search
    /// centred `start_distance` metres along the camera's axis.
    pub start_pose: Option<StartPose>,
    pub start_distance: f64,
}

impl Default for TrackSpec {
    /// The synthetic walk of the README (`posecloud track` example).
    fn default() -> Self {
        Self {
            frames: None,
            camera: repo_path("crates/vision/assets/camera_front.toml"),
            body: repo_path("assets/motions/cmu_131_01_walk.bvh"),
            init_frame: 500,
            synthetic_frames: 200,
            synthetic_step: 4,
            background_frames: 1,
            fps: 30.0,
            start_pose: None,
            start_distance: 3.0,
        }
    }
}

impl TrackSpec {
    /// A short label for the window title and the panel.
    pub fn label(&self) -> String {
        match &self.frames {
            None => format!(
                "tracking: synthetic render of {}",
                self.body.file_name().unwrap_or_default().to_string_lossy()
            ),
            Some(f) => format!("tracking: {f}"),
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

/// What the user may change while tracking.
#[derive(Clone, Debug, PartialEq)]
pub struct TrackSettings {
    pub particles: usize,
    pub filter: FilterKind,
    pub sigma_f: f64,
    pub sigma_translation: f64,
    pub sigma_limb: f64,
    pub sigma_trunk: f64,
    pub seed: u64,
    /// The likelihood back end (RTPF Eq. 1–2): GPU on a hardware adapter
    /// else CPU (`Auto`), or the one named.
    pub backend: BackendChoice,
    /// Play file sources at their frame rate (else as fast as the tracker
    /// runs).
    pub realtime: bool,
    /// Use the weighted mean as the estimate (else the MAP particle).
    pub mean_estimate: bool,
    /// Partitioned sampling: trunk, then each limb chain
    /// ([`TrackerConfig::partitioned`]).
    pub partitioned: bool,
}

impl Default for TrackSettings {
    fn default() -> Self {
        Self {
            particles: 300,
            filter: FilterKind::Pfrth,
            sigma_f: 0.1,
            // The walk moves ~4.4 cm per rendered frame towards the camera
            // (README, `posecloud track` table: 0.05 keeps up).
            sigma_translation: 0.05,
            sigma_limb: 0.08,
            sigma_trunk: 0.02,
            seed: 1,
            backend: BackendChoice::Auto,
            realtime: true,
            mean_estimate: false,
            // As `posecloud track`'s default `--sampling partitioned`.
            partitioned: true,
        }
    }
}

impl TrackSettings {
    /// Checks every field, naming the first bad one.
    ///
    /// # Errors
    /// Particles outside 1 … [`MAX_TRACK_PARTICLES`], non-finite or
    /// negative σ, σ_F = 0.
    pub fn validate(&self) -> Result<()> {
        ensure!(
            (1..=MAX_TRACK_PARTICLES).contains(&self.particles),
            "particles: {} is outside 1 … {MAX_TRACK_PARTICLES}",
            self.particles
        );
        for (name, v) in [
            ("sigma_f", self.sigma_f),
            ("sigma_translation", self.sigma_translation),
            ("sigma_limb", self.sigma_limb),
            ("sigma_trunk", self.sigma_trunk),
        ] {
            ensure!(
                v.is_finite() && v >= 0.0,
                "{name}: {v} must be finite and ≥ 0"
            );
        }
        ensure!(self.sigma_f > 0.0, "sigma_f: must be > 0");
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
    /// The estimate's joint positions (world, metres), skeleton order.
    pub estimate: Vec<[f32; 3]>,
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
    pub history: VecDeque<TrackSample>,
    /// Which likelihood back end runs, in words.
    pub backend: String,
    pub source_name: String,
    /// Tracker ms of the last frame, segmentation ms.
    pub step_ms: f64,
    pub segment_ms: f64,
    pub settings: TrackSettings,
    /// The source has no more frames.
    pub ended: bool,
    /// What happened last (background/colours learned, …).
    pub message: Option<String>,
}

/// Frames from a source; synthetic renders keep their ground truth.
enum Input {
    Synthetic {
        source: Box<SyntheticSource>,
        clip: Box<Bvh>,
        next: usize,
    },
    Stream(Box<dyn FrameSource>),
}

impl Input {
    /// The next frame and, for renders, the clip frame it shows.
    fn next(&mut self) -> Result<Option<(Frame, Option<usize>)>> {
        match self {
            Input::Synthetic { source, next, .. } => {
                let Some(r) = source.render_frame(*next)? else {
                    return Ok(None);
                };
                let clip = source.clip_frame(*next);
                *next += 1;
                Ok(Some((r.frame, clip)))
            }
            Input::Stream(s) => Ok(s.next_frame()?.map(|f| (f, None))),
        }
    }

    fn seek(&mut self, frame: usize) -> Result<()> {
        match self {
            Input::Synthetic { source, next, .. } => {
                let n = source.frame_count().unwrap_or(0);
                ensure!(
                    frame < n,
                    "seek: frame {frame} is past the render's {n} frames"
                );
                *next = frame;
                Ok(())
            }
            Input::Stream(s) => Ok(s.seek(frame)?),
        }
    }

    fn name(&self) -> String {
        match self {
            Input::Synthetic { source, .. } => source.name().to_string(),
            Input::Stream(s) => s.name().to_string(),
        }
    }

    fn frame_count(&self) -> Option<usize> {
        match self {
            Input::Synthetic { source, .. } => source.frame_count(),
            Input::Stream(s) => s.frame_count(),
        }
    }

    fn fps(&self) -> Option<f64> {
        match self {
            Input::Synthetic { source, .. } => source.fps(),
            Input::Stream(s) => s.fps(),
        }
    }
}

/// The tracking scene (module docs).
pub struct TrackingScene {
    spec: TrackSpec,
    settings: TrackSettings,
    input: Input,
    /// The dressed body (capsules) in skeleton order.
    skeleton: Skeleton,
    init: Vec<f64>,
    camera: gpu::Camera,
    class_map: ClassMap,
    segmenter: Segmenter,
    tracker: Tracker,
    arm: Option<Arm>,
    bones: Vec<(usize, usize)>,
    last: Option<Frame>,
    last_clip_frame: Option<usize>,
    segmentation: Segmentation,
    estimate: Vec<f64>,
    history: VecDeque<TrackSample>,
    colours_learned: bool,
    ended: bool,
    /// The app's clock at which the next frame is due (real-time play).
    due: f64,
    step_ms: f64,
    segment_ms: f64,
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

fn tracker_config(s: &TrackSettings, class_map: &ClassMap) -> TrackerConfig {
    TrackerConfig {
        particles: s.particles,
        filter: s.filter,
        sigma_f: s.sigma_f,
        sigma_translation: s.sigma_translation,
        sigma_rotation: s.sigma_limb,
        sigma_trunk: s.sigma_trunk,
        seed: s.seed,
        backend: s.backend,
        label_map: class_map.label_table(),
        partitioned: s.partitioned,
        ..TrackerConfig::default()
    }
}

impl TrackingScene {
    /// Opens the source, learns the background from its first
    /// `background_frames` frames and builds the tracker at the initial
    /// pose. Errors name the file or field. The GPU back end requests a
    /// headless device of its own (see [`Self::with_device`]).
    ///
    /// # Errors
    /// A missing or bad body/camera file, an `init_frame` outside the clip,
    /// a source that cannot be opened (no camera, no `ffmpeg`, an empty
    /// folder) or that ends before its background frames, bad settings,
    /// no GPU for the `gpu` back end.
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
        let bvh = Bvh::load(&spec.body).with_context(|| format!("body {}", spec.body.display()))?;
        let frames = bvh.frames.len();
        ensure!(
            spec.init_frame < frames,
            "init frame {}: the body file {} has {frames} frames",
            spec.init_frame,
            spec.body.display()
        );
        let mut init = bvh.frames.pose(spec.init_frame).to_vec();
        let skeleton = dress_skeleton(&bvh.skeleton, &BodyShape::default())
            .with_context(|| format!("body {}", spec.body.display()))?;
        ensure!(
            spec.start_distance.is_finite() && spec.start_distance > 0.0,
            "start distance: {} must be finite and > 0",
            spec.start_distance
        );
        let camera = load_camera(&spec.camera)
            .with_context(|| format!("camera {}", spec.camera.display()))?;
        let class_map = ClassMap::for_sleeves(Sleeves::Short);
        let input = match &spec.frames {
            None => {
                ensure!(spec.synthetic_step >= 1, "synthetic step: must be ≥ 1");
                let end = (spec.init_frame + spec.synthetic_frames).min(frames);
                let renderer =
                    SyntheticRenderer::new(&bvh.skeleton, camera.clone(), RenderOptions::default())
                        .context("synthetic renderer")?;
                let source =
                    SyntheticSource::new(&bvh, renderer, spec.init_frame..end, spec.synthetic_step)
                        .context("synthetic source")?;
                Input::Synthetic {
                    source: Box::new(source),
                    clip: Box::new(bvh.clone()),
                    next: 0,
                }
            }
            Some(f) => {
                Input::Stream(open_source(f, spec.fps).with_context(|| format!("frames {f}"))?)
            }
        };
        let size = match &input {
            Input::Synthetic { source, .. } => source.size(),
            Input::Stream(s) => s.size(),
        };
        let camera = if (camera.width(), camera.height()) == size {
            camera
        } else {
            resize_camera(&camera, size.0, size.1).with_context(|| {
                format!(
                    "camera {} ({} × {}) for frames of {} × {}",
                    spec.camera.display(),
                    camera.width(),
                    camera.height(),
                    size.0,
                    size.1
                )
            })?
        };
        let params = SegmentParams::default();
        let label_camera = resize_camera(&camera, params.width, params.height)?;
        let segmenter = Segmenter::new(params, size.0, size.1)?;
        if let Some(kind) = spec.start_pose {
            // The pose at the search's centre; the first tracked frame
            // places it (`place_start_pose`).
            init = track::start::start_pose_in_view(
                &skeleton,
                kind,
                &label_camera,
                spec.start_distance,
                &init,
            )
            .with_context(|| format!("start pose {} for {}", kind.name(), spec.body.display()))?;
        }
        let upper = Selection::cmu_upper_body();
        let selection = match &upper {
            Selection::Joints(names) if names.iter().all(|n| skeleton.find(n).is_ok()) => upper,
            _ => Selection::All,
        };
        let body = TrackedBody::new(skeleton.clone(), &selection, &init)?;
        let tracker = Tracker::with_device(
            body,
            label_camera,
            &init,
            None,
            tracker_config(&settings, &class_map),
            device,
        )
        .with_context(|| format!("likelihood back end `{}`", backend_name(settings.backend)))?;
        let arm = Arm::find(&skeleton, Side::Right).ok();
        let bones = (0..skeleton.len())
            .filter_map(|j| skeleton.joint(j).parent.map(|p| (p, j)))
            .filter(|&(_, j)| skeleton.joint(j).offset.norm() > 1e-9)
            .collect();
        let mut scene = Self {
            spec,
            settings,
            input,
            skeleton,
            estimate: init.clone(),
            init,
            camera,
            class_map,
            segmenter,
            tracker,
            arm,
            bones,
            last: None,
            last_clip_frame: None,
            segmentation: Segmentation::default(),
            history: VecDeque::new(),
            colours_learned: false,
            ended: false,
            due: 0.0,
            step_ms: 0.0,
            segment_ms: 0.0,
            message: None,
            frame_serial: 0,
        };
        scene.learn_background_from_source()?;
        Ok(scene)
    }

    fn learn_background_from_source(&mut self) -> Result<()> {
        let k = self.spec.background_frames.max(1);
        let mut frames = Vec::with_capacity(k);
        for i in 0..k {
            match self.input.next()? {
                Some((f, _)) => frames.push(f),
                None => bail!(
                    "frames {}: the source ended after {i} frames, before its {k} background frame(s)",
                    self.input.name()
                ),
            }
        }
        self.segmenter
            .learn_background(&frames.iter().collect::<Vec<_>>())?;
        self.last = frames.pop();
        self.frame_serial += 1;
        self.message = Some(format!("background learned from {k} frame(s)"));
        Ok(())
    }

    pub fn spec(&self) -> &TrackSpec {
        &self.spec
    }

    pub fn settings(&self) -> &TrackSettings {
        &self.settings
    }

    /// Which likelihood back end runs, on which adapter, in words (the GPU
    /// back end on the app's device says so).
    pub fn describe_backend(&self) -> String {
        self.tracker.describe()
    }

    /// The right-elbow flexion (degrees) of a full pose.
    fn elbow_deg(&self, pose: &[f64]) -> Option<f64> {
        let arm = self.arm?;
        let world = self.skeleton.forward_kinematics(pose).ok()?;
        Some(arm.flexion(&world).to_degrees())
    }

    fn truth_pose(&self, clip_frame: usize) -> Option<&[f64]> {
        match &self.input {
            Input::Synthetic { clip, .. } => Some(clip.frames.pose(clip_frame)),
            Input::Stream(_) => None,
        }
    }

    /// Finds where the person in the start pose stands in `frame` (a
    /// search over the global position against the foreground mask) and
    /// restarts the cloud there.
    fn place_start_pose(&mut self, kind: StartPose, frame: &Frame) -> Result<String> {
        let mask = self.segmenter.foreground_mask(frame)?;
        let (found, f) = track::start::place_in_view(
            self.tracker.body(),
            self.tracker.camera(),
            mask,
            &self.init,
        )
        .with_context(|| format!("start pose search on frame {}", frame.index))?;
        self.tracker.reset(&found)?;
        self.estimate = found;
        let r = &self.estimate[self.skeleton.param_range(0)];
        let placed = format!(
            "start pose {} found at ({:.2}, {:.2}, {:.2}) m (silhouette F {f:.3})",
            kind.name(),
            r[0],
            r[1],
            r[2]
        );
        eprintln!("{placed} on frame {}", frame.index);
        Ok(placed)
    }

    fn learn_colours(&mut self, frame: &Frame, pose: &[f64]) -> Result<()> {
        let r = self.segmenter.learn_colours_from_pose(
            frame,
            &self.skeleton,
            &self.camera,
            pose,
            &self.class_map,
        )?;
        self.colours_learned = true;
        self.message = Some(format!(
            "colours learned from frame {} ({} skin, {} hair, {} shirt, {} trousers pixels)",
            frame.index, r.skin, r.hair, r.shirt, r.trousers
        ));
        Ok(())
    }

    /// [`TrackEdit::SampleColours`]: all or nothing (a class whose strokes
    /// are too few leaves every model as it was). The last frame is
    /// segmented again with the new models, so that the label image shows
    /// them while the source is paused.
    fn sample_colours(&mut self, frame: usize, strokes: &[Stroke]) -> Result<()> {
        let Some(f) = &self.last else {
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
        let before = *self.segmenter.colour_models();
        let mut segmentation = Segmentation::default();
        let learned = self
            .segmenter
            .learn_colours_from_strokes(f, strokes)
            .and_then(|()| self.segmenter.segment_into(f, &mut segmentation))
            .with_context(|| format!("sample colours on frame {}", f.index));
        if learned.is_err() {
            // `learn_colours_from_strokes` replaces class by class: undo
            // the classes it fitted before the one that failed.
            for (class, model) in ColourClass::ALL.into_iter().zip(before) {
                self.segmenter.set_colour_model(class, model);
            }
        }
        learned?;
        self.segmentation = segmentation;
        self.frame_serial += 1;
        let params = self.segmenter.params();
        let counts =
            stroke_label_pixels(strokes, (f.width, f.height), (params.width, params.height));
        let per_class: Vec<String> = ColourClass::ALL
            .into_iter()
            .zip(counts)
            .filter(|&(_, n)| n > 0)
            .map(|(class, n)| format!("{n} {}", class.name()))
            .collect();
        let n = strokes.len();
        self.message = Some(format!(
            "colours learned from {n} stroke{} ({} label pixels) on frame {}",
            if n == 1 { "" } else { "s" },
            per_class.join(", "),
            f.index
        ));
        self.colours_learned = true;
        Ok(())
    }
}

/// The stroke of one click on frame pixel `centre`: a square of frame
/// pixels centred on it (moved inside the frame at its edges), `scale + 1`
/// pixels wide or more where `scale` is frame pixels per label pixel, so
/// that it covers at least 2 × 2 label pixels and one click gives
/// [`Segmenter::learn_colours_from_strokes`] the 3 distinct samples it
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
/// [`Segmenter::learn_colours_from_strokes`] fits, with its mapping of a
/// frame pixel to the label pixel that contains it. Points outside the
/// frame are skipped (all of them for an empty frame or label image).
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

impl Solver for TrackingScene {
    type Snapshot = TrackSnapshot;
    type Edit = TrackEdit;

    fn apply(&mut self, edit: TrackEdit) -> Result<()> {
        match edit {
            TrackEdit::Settings(s) => {
                s.validate()?;
                let new_backend = s.backend != self.settings.backend;
                // A new back end is built on the tracker's device (the
                // app's), and weighs the same cloud.
                self.tracker
                    .set_config(tracker_config(&s, &self.class_map))
                    .with_context(|| {
                        format!("likelihood back end `{}`", backend_name(s.backend))
                    })?;
                self.settings = s;
                if new_backend {
                    self.message = Some(format!("likelihood: {}", self.describe_backend()));
                }
            }
            TrackEdit::Seek(k) => {
                self.input.seek(k)?;
                self.ended = false;
                self.message = Some(format!("continuing from frame {k}"));
            }
            TrackEdit::CaptureBackground => {
                let Some(f) = self.last.clone() else {
                    bail!("capture background: no frame yet");
                };
                self.segmenter.learn_background(&[&f])?;
                self.message = Some(format!("background learned from frame {}", f.index));
            }
            TrackEdit::LearnColours => {
                let Some(f) = self.last.clone() else {
                    bail!("learn colours: no frame yet");
                };
                let pose = self.estimate.clone();
                self.learn_colours(&f, &pose)?;
            }
            TrackEdit::SampleColours { frame, strokes } => self.sample_colours(frame, &strokes)?,
        }
        Ok(())
    }

    fn reset(&mut self) -> Result<()> {
        self.input.seek(0)?;
        let init = self.init.clone();
        self.tracker.reset(&init)?;
        self.estimate = init;
        self.history.clear();
        self.ended = false;
        self.colours_learned = false;
        self.learn_background_from_source()
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
        let Some((frame, clip_frame)) = self.input.next()? else {
            self.ended = true;
            self.message = Some("end of the source (Reset plays it again)".into());
            return Ok(());
        };
        let period = self
            .input
            .fps()
            .filter(|f| *f > 0.0)
            .map_or(0.0, |f| 1.0 / f);
        self.due = time.max(self.due) + period;
        if !self.colours_learned {
            let placed = match self.spec.start_pose {
                Some(kind) => Some(self.place_start_pose(kind, &frame)?),
                None => None,
            };
            let pose = self.estimate.clone();
            self.learn_colours(&frame, &pose).with_context(|| {
                format!(
                    "learning colours from frame {} in the initial pose",
                    frame.index
                )
            })?;
            if let (Some(p), Some(m)) = (placed, &mut self.message) {
                *m = format!("{p}; {m}");
            }
        }
        let t0 = std::time::Instant::now();
        self.segmenter
            .segment_into(&frame, &mut self.segmentation)?;
        let obs = self.segmentation.observation()?;
        let t1 = std::time::Instant::now();
        let report = self.tracker.step(&obs)?;
        let t2 = std::time::Instant::now();
        self.segment_ms = (t1 - t0).as_secs_f64() * 1e3;
        self.step_ms = (t2 - t1).as_secs_f64() * 1e3;
        self.estimate = if self.settings.mean_estimate {
            report.mean_pose
        } else {
            report.map_pose
        };
        let truth = clip_frame
            .and_then(|c| self.truth_pose(c).map(<[f64]>::to_vec))
            .and_then(|p| self.elbow_deg(&p));
        let sample = TrackSample {
            frame: frame.index,
            residual: report.residual,
            elbow_deg: self.elbow_deg(&self.estimate).unwrap_or(f64::NAN),
            truth_elbow_deg: truth,
            ess: report.ess,
        };
        if self.history.len() == TRACK_HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(sample);
        self.last = Some(frame);
        self.last_clip_frame = clip_frame;
        self.frame_serial += 1;
        Ok(())
    }

    fn steps_per_frame(&self) -> usize {
        1
    }

    fn budget(&self) -> std::time::Duration {
        // One frame per displayed frame at most: a tracked frame takes
        // longer than this, so the runtime stops after it.
        std::time::Duration::from_millis(1)
    }

    fn snapshot_into(&self, out: &mut TrackSnapshot) {
        let p = |v: &nalgebra::Vector3<f64>| [v.x as f32, v.y as f32, v.z as f32];
        if let Some(f) = &self.last {
            out.frame_rgb.clone_from(&f.rgb);
            out.frame_size = (f.width, f.height);
            out.frame_index = Some(f.index);
        } else {
            out.frame_rgb.clear();
            out.frame_index = None;
        }
        out.frame_serial = self.frame_serial;
        out.labels.clone_from(&self.segmentation.labels);
        out.label_size = (self.segmentation.width, self.segmentation.height);
        out.frame_count = self.input.frame_count();
        out.joints = self.skeleton.len();
        out.estimate.clear();
        if let Ok(world) = self.skeleton.forward_kinematics(&self.estimate) {
            out.estimate
                .extend(world.iter().map(|w| p(&w.translation.vector)));
        }
        out.truth.clear();
        if let Some(pose) = self.last_clip_frame.and_then(|c| self.truth_pose(c))
            && let Ok(world) = self.skeleton.forward_kinematics(pose)
        {
            out.truth
                .extend(world.iter().map(|w| p(&w.translation.vector)));
        }
        out.bones.clone_from(&self.bones);
        out.weights.clear();
        out.weights.extend_from_slice(self.tracker.weights());
        out.cloud.clear();
        let mut full = vec![0.0; self.skeleton.dof()];
        let d = self.tracker.body().dim();
        for state in self.tracker.particles().chunks(d) {
            self.tracker.body().to_full(state, &mut full);
            match self.skeleton.forward_kinematics(&full) {
                Ok(world) => out
                    .cloud
                    .extend(world.iter().map(|w| p(&w.translation.vector))),
                Err(_) => out
                    .cloud
                    .extend(std::iter::repeat_n([f32::NAN; 3], self.skeleton.len())),
            }
        }
        let pose = self.camera.world_from_camera();
        out.camera_position = p(&pose.translation.vector);
        out.camera_forward = p(&(pose.rotation * nalgebra::Vector3::z()));
        out.history.clone_from(&self.history);
        out.backend = self.describe_backend();
        out.source_name = self.input.name();
        out.step_ms = self.step_ms;
        out.segment_ms = self.segment_ms;
        out.settings.clone_from(&self.settings);
        out.ended = self.ended;
        out.message.clone_from(&self.message);
    }
}

/// The colour of a class id in label previews (RGB8).
pub fn class_colour(id: u8) -> [u8; 3] {
    SegClass::from_id(id).map_or([255, 0, 255], SegClass::preview_colour)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn short_walk() -> TrackSpec {
        TrackSpec {
            synthetic_frames: 24,
            ..TrackSpec::default()
        }
    }

    #[test]
    fn tracks_the_synthetic_walk_and_publishes_cloud_and_truth() {
        let settings = TrackSettings {
            particles: 60,
            realtime: false,
            ..TrackSettings::default()
        };
        let mut scene = TrackingScene::new(short_walk(), settings).unwrap();
        for _ in 0..6 {
            scene.step(0.0).unwrap();
        }
        let mut snap = TrackSnapshot::default();
        scene.snapshot_into(&mut snap);
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
    fn a_start_pose_is_placed_on_the_first_frame() {
        // A person standing arms-down 4.5 m along the camera's axis, 0.3 m
        // to the side; the search starts 1.5 m nearer.
        let spec0 = TrackSpec::default();
        let mut bvh = Bvh::load(&spec0.body).unwrap();
        let cam = resize_camera(&load_camera(&spec0.camera).unwrap(), 320, 240).unwrap();
        let hips = bvh.frames.pose(0)[1];
        let mut root = track::start::in_front_of(&cam, 4.5, hips);
        root.x += 0.3;
        let pose =
            track::start::start_pose(&bvh.skeleton, StartPose::ArmsDown, &cam, root).unwrap();
        let mut frames = skeleton::PoseBatch::rest(&bvh.skeleton, 0);
        for _ in 0..3 {
            frames.push(&pose).unwrap();
        }
        bvh.frames = frames;
        let renderer =
            SyntheticRenderer::new(&bvh.skeleton, cam, RenderOptions::default()).unwrap();
        let source = SyntheticSource::new(&bvh, renderer, 0..3, 1).unwrap();
        let dir = std::env::temp_dir().join(format!("posecloud_start_{}", std::process::id()));
        vision::write_render(&source, &dir).unwrap();
        let spec = TrackSpec {
            frames: Some(dir.to_str().unwrap().to_owned()),
            camera: dir.join("camera.toml"),
            start_pose: Some(StartPose::ArmsDown),
            start_distance: 3.0,
            ..TrackSpec::default()
        };
        let settings = TrackSettings {
            particles: 50,
            realtime: false,
            ..TrackSettings::default()
        };
        let mut scene = TrackingScene::new(spec.clone(), settings.clone()).unwrap();
        scene.step(0.0).unwrap();
        let message = scene.message.clone().unwrap_or_default();
        assert!(
            message.starts_with("start pose arms-down found at"),
            "{message}"
        );
        let est = nalgebra::Vector3::from_column_slice(&scene.estimate[..3]);
        // ~0.11 m when written (depth from an 18 px tall silhouette);
        // without the search the walk's frame 500 is metres away.
        assert!(
            (est - root.coords).norm() < 0.25,
            "root {est:?}, truth {root:?}"
        );
        assert!(
            TrackingScene::new(
                TrackSpec {
                    start_distance: -1.0,
                    ..spec
                },
                settings
            )
            .err()
            .unwrap()
            .to_string()
            .contains("start distance")
        );
    }

    #[test]
    fn bad_settings_and_files_name_the_field() {
        let e = TrackSettings {
            particles: 0,
            ..TrackSettings::default()
        }
        .validate()
        .unwrap_err();
        assert!(e.to_string().contains("particles"), "{e}");
        let e = TrackSettings {
            sigma_f: f64::NAN,
            ..TrackSettings::default()
        }
        .validate()
        .unwrap_err();
        assert!(e.to_string().contains("sigma_f"), "{e}");
        let spec = TrackSpec {
            body: "/nonexistent/body.bvh".into(),
            ..short_walk()
        };
        let e = TrackingScene::new(spec, TrackSettings::default()).unwrap_err();
        assert!(format!("{e:#}").contains("/nonexistent/body.bvh"), "{e:#}");
        let spec = TrackSpec {
            init_frame: 1_000_000,
            ..short_walk()
        };
        let e = TrackingScene::new(spec, TrackSettings::default()).unwrap_err();
        assert!(format!("{e:#}").contains("init frame"), "{e:#}");
        let spec = TrackSpec {
            frames: Some("webcam:7".into()),
            ..short_walk()
        };
        let e = TrackingScene::new(spec, TrackSettings::default()).unwrap_err();
        assert!(format!("{e:#}").contains("webcam"), "{e:#}");
    }

    #[test]
    fn settings_edits_apply_and_bad_ones_keep_the_old() {
        let settings = TrackSettings {
            particles: 40,
            realtime: false,
            ..TrackSettings::default()
        };
        let mut scene = TrackingScene::new(short_walk(), settings.clone()).unwrap();
        scene.step(0.0).unwrap();
        let more = TrackSettings {
            particles: 80,
            filter: FilterKind::Pfs,
            ..settings.clone()
        };
        scene.apply(TrackEdit::Settings(more.clone())).unwrap();
        scene.step(0.0).unwrap();
        assert_eq!(scene.tracker.weights().len(), 80);
        let bad = TrackSettings {
            sigma_limb: -1.0,
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
        let Input::Synthetic { source, .. } = &scene.input else {
            panic!("a synthetic scene");
        };
        let last = scene.last.as_ref().unwrap();
        let truth = source.render_frame(last.index).unwrap().unwrap();
        let mut labels = truth.labels;
        scene.class_map.remap(&mut labels);
        let size = (last.width, last.height);
        let label_size = (scene.segmentation.width, scene.segmentation.height);
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
        let Input::Synthetic { source, .. } = &scene.input else {
            panic!("a synthetic scene");
        };
        let index = scene.last.as_ref().unwrap().index;
        let truth = source.render_frame(index).unwrap().unwrap();
        let mut labels = truth.labels;
        scene.class_map.remap(&mut labels);
        let seg = &scene.segmentation;
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
        let settings = TrackSettings {
            particles: 40,
            realtime: false,
            ..TrackSettings::default()
        };
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
        let frame = scene.last.as_ref().unwrap().index;
        let strokes = truth_clicks(&scene, &SKIN_SHIRT_TROUSERS);
        let counts = stroke_label_pixels(&strokes, (640, 480), (160, 120));
        for class in [ColourClass::Skin, ColourClass::Shirt, ColourClass::Trousers] {
            // A 5 × 5 patch covers 2 × 2 to 3 × 3 label pixels.
            let n = counts[class as usize];
            assert!((4..=9).contains(&n), "{}: {n} label pixels", class.name());
        }
        let (pose_labels, serial) = (scene.segmentation.labels.clone(), scene.frame_serial);
        // Only the clicks' colours: the models learned from the initial
        // pose are dropped first (hair has none then).
        for class in ColourClass::ALL {
            scene.segmenter.set_colour_model(class, None);
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
        let models = scene.segmenter.colour_models();
        assert!(models[ColourClass::Hair as usize].is_none());
        assert!(models.iter().filter(|m| m.is_some()).count() == 3);
        // The label image of the clicked frame shows the new colours at
        // once (0.90 of the body right in the run this was written with).
        assert_ne!(scene.segmentation.labels, pose_labels);
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
        let frame = scene.last.as_ref().unwrap().index;
        let before = *scene.segmenter.colour_models();
        let message = scene.message.clone();
        let clicks = truth_clicks(&scene, &SKIN_SHIRT_TROUSERS[..1]);
        let mut outside = clicks.clone();
        outside[0].points.push((700, 5));
        let e = scene
            .apply(TrackEdit::SampleColours {
                frame,
                strokes: outside,
            })
            .unwrap_err();
        assert!(format!("{e:#}").contains("(700, 5)"), "{e:#}");
        assert!(format!("{e:#}").contains("640 × 480"), "{e:#}");
        // Skin is fitted before shirt fails (one label pixel): skin keeps
        // its old model too.
        let mut too_few = clicks.clone();
        too_few.push(Stroke {
            class: ColourClass::Shirt,
            points: vec![(300, 200)],
        });
        let e = scene
            .apply(TrackEdit::SampleColours {
                frame,
                strokes: too_few,
            })
            .unwrap_err();
        assert!(format!("{e:#}").contains("shirt"), "{e:#}");
        let e = scene
            .apply(TrackEdit::SampleColours {
                frame: frame + 1,
                strokes: clicks.clone(),
            })
            .unwrap_err();
        assert!(
            e.to_string().contains(&format!("frame {}", frame + 1)),
            "{e}"
        );
        let e = scene
            .apply(TrackEdit::SampleColours {
                frame,
                strokes: vec![Stroke {
                    class: ColourClass::Hair,
                    points: Vec::new(),
                }],
            })
            .unwrap_err();
        assert!(e.to_string().contains("no stroke points"), "{e}");
        assert_eq!(scene.segmenter.colour_models(), &before);
        assert_eq!(scene.message, message);
        scene
            .apply(TrackEdit::SampleColours {
                frame,
                strokes: clicks,
            })
            .unwrap();
        assert_ne!(scene.segmenter.colour_models(), &before);
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
        let cloud = scene.tracker.particles().to_vec();
        let cpu = TrackSettings {
            backend: BackendChoice::Cpu,
            ..scene.settings().clone()
        };
        scene.apply(TrackEdit::Settings(cpu.clone())).unwrap();
        assert_eq!(scene.settings(), &cpu);
        assert_eq!(scene.tracker.config().backend, BackendChoice::Cpu);
        assert_eq!(scene.tracker.particles(), &cloud[..]);
        let d = scene.describe_backend();
        assert!(d.starts_with("CPU likelihood"), "{d}");
        assert!(!d.contains("app's device"), "{d}");
        assert_eq!(scene.message, Some(format!("likelihood: {d}")));
        scene.step(0.0).unwrap();
        assert_eq!(scene.history.len(), 3);
        let mut snap = TrackSnapshot::default();
        scene.snapshot_into(&mut snap);
        assert_eq!(snap.backend, d);
        assert_eq!(snap.settings.backend, BackendChoice::Cpu);
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

    #[test]
    #[ignore = "needs a GPU adapter (lavapipe in CI)"]
    fn the_gpu_back_end_runs_on_the_apps_device_after_every_change() {
        let g = app_device();
        let shared = SharedDevice {
            device: g.device.clone(),
            queue: g.queue.clone(),
        };
        let settings = TrackSettings {
            particles: 40,
            realtime: false,
            backend: BackendChoice::Gpu,
            ..TrackSettings::default()
        };
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
                backend,
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
            particles: 60,
            ..settings.clone()
        };
        scene.apply(TrackEdit::Settings(more)).unwrap();
        scene.step(0.0).unwrap();
        assert!(scene.describe_backend().starts_with(&on_device));
        assert_eq!(scene.tracker.weights().len(), 60);
        // Auto on a software adapter (lavapipe) says why it chose the CPU.
        let auto = TrackSettings {
            backend: BackendChoice::Auto,
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
            particles: 20,
            realtime: true,
            ..TrackSettings::default()
        };
        let mut scene = TrackingScene::new(short_walk(), settings).unwrap();
        scene.step(0.0).unwrap();
        scene.step(0.0).unwrap(); // not due: the render runs at 15 frames/s
        assert_eq!(scene.history.len(), 1);
        scene.step(1.0 / 15.0 + 1e-9).unwrap();
        assert_eq!(scene.history.len(), 2);
    }
}

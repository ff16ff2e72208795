//! What a tracking session tracks and how ([`crate::session::Session`]):
//! its specification ([`SessionSpec`]: the source, camera, subject, start
//! and background), the tracker's settings a user may change while
//! tracking ([`FilterSettings`]), the guided start's thresholds
//! ([`GuideParams`]), and loading the body and the camera they name. Set-up
//! files are optional: without a camera file the camera is
//! [`default_camera`], without a body file the body is
//! [`crate::defaults::default_body`] at the subject's height.

use std::path::{Path, PathBuf};

use labels::Camera;
use skeleton::{Bvh, Skeleton};
use vision::EmptyScene;
use vision::{ClassMap, Sleeves, load_camera, resize_camera};

use crate::backend::BackendChoice;
use crate::body::Selection;
use crate::defaults::{DEFAULT_FOV_DEG, body_at_height, default_body, default_camera};
use crate::error::{Field, input, named};
use crate::keypoint_term::{DEFAULT_DEPTH_SIGMA, DEFAULT_KEYPOINT_LIFTS, DEFAULT_KEYPOINT_SIGMA};
use crate::session::Result;
use crate::start::StartPose;
use crate::tracker::{FilterKind, ObservationMode, TrackerConfig};

/// Thresholds and durations of the guided start (module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct GuideParams {
    /// Seconds of still scene the background is learned over.
    pub background_seconds: f64,
    /// A frame is still when at most this fraction of label pixels changed.
    pub still_fraction: f32,
    /// Seconds a person-sized blob must stay nearly still.
    pub person_seconds: f64,
    /// Nearly still: IoU of consecutive blob masks at least this.
    pub person_still_iou: f64,
    /// Person-sized: blob at least this fraction of the image's height …
    pub min_person_height: f64,
    /// … and of its area.
    pub min_person_area: f64,
    /// The start pose did not fit when the silhouette F after the search
    /// exceeds this.
    pub place_residual: f64,
    /// Lost: residual F above this …
    pub lost_residual: f64,
    /// … for this many seconds.
    pub lost_seconds: f64,
    /// Left: foreground below this fraction of the placed person's area …
    pub left_area_fraction: f64,
    /// … for this many seconds.
    pub left_seconds: f64,
}

impl Default for GuideParams {
    fn default() -> Self {
        Self {
            background_seconds: 1.0,
            still_fraction: 0.01,
            person_seconds: 0.5,
            person_still_iou: 0.8,
            min_person_height: 0.25,
            min_person_area: 0.01,
            place_residual: 0.6,
            lost_residual: 0.75,
            lost_seconds: 1.0,
            left_area_fraction: 0.25,
            left_seconds: 0.5,
        }
    }
}

/// The tracker's settings a user may change while tracking.
#[derive(Clone, Debug, PartialEq)]
pub struct FilterSettings {
    pub particles: usize,
    pub filter: FilterKind,
    /// σ_F of RTPF Eq. 2.
    pub sigma_f: f64,
    /// Diffusion σ of the root position (m), limb angles and trunk angles
    /// (rad) per frame.
    pub sigma_translation: f64,
    pub sigma_limb: f64,
    pub sigma_trunk: f64,
    pub seed: u64,
    pub backend: BackendChoice,
    /// Partitioned sampling ([`TrackerConfig::partitioned`]).
    pub partitioned: bool,
    /// The weighted mean as the estimate (else the MAP particle).
    pub mean_estimate: bool,
    /// The heaviest particles the [`crate::TrackFrame`] lists with their
    /// joints in the image ([`TrackerConfig::top_particles`]).
    pub top_particles: usize,
    /// The likelihood terms: RTPF's regions, learned 2D keypoints, or both
    /// ([`crate::keypoint_term`]).
    pub observation: ObservationMode,
    /// σ of the keypoint term, a fraction of the person's size in the image.
    pub keypoint_sigma: f64,
    /// Keypoint-lifted arm hypotheses a step ([`TrackerConfig::keypoint_lifts`]).
    pub keypoint_lifts: usize,
    /// σ_z of the keypoint term's depth-order part
    /// ([`TrackerConfig::keypoint_depth_sigma`]); 0 turns it off.
    pub keypoint_depth_sigma: f64,
    /// Weight of the arms' anatomical prior
    /// ([`TrackerConfig::anatomy_weight`]); 0 turns it off.
    pub anatomy_weight: f64,
    /// Weight of the learned arm prior
    /// ([`TrackerConfig::arm_prior_weight`]); 0 turns it off.
    pub arm_prior_weight: f64,
    /// Weigh frame k with the detection of frame k − 1 (the default) instead
    /// of reading frame k + 1 ahead and weighing frame k with its own
    /// (the session's keypoint stage). The look-ahead measured no better on the
    /// validation clips (docs/track.md) and follows BlazePose's side swaps
    /// more tightly on the app's capsule walk, so it is opt-in.
    pub lagged_detections: bool,
    /// Where the keypoint network (BlazePose full) runs: tract on the CPU,
    /// our WGSL kernels on the GPU (the app's device when the session has
    /// one, else a headless one), or `Auto`: the GPU on a hardware
    /// adapter, else tract (a software adapter such as lavapipe runs the
    /// kernels slower than tract). Both give the same landmarks (within
    /// 0.05 px), so the choice changes speed, not results.
    pub keypoint_backend: keypoints::DetectorBackend,
    /// How the recorded estimate is smoothed over time ([`crate::smooth`]).
    pub smoothing: crate::smooth::Smoothing,
    /// σ_v of the path smoother: hand speed, metres a second.
    pub smoothing_hand_speed: f64,
    /// τ of the path smoother: the weight of the filter's log weights.
    pub smoothing_temperature: f64,
}

impl Default for FilterSettings {
    fn default() -> Self {
        Self {
            particles: 300,
            filter: FilterKind::Pfrth,
            sigma_f: 0.1,
            sigma_translation: 0.02,
            sigma_limb: 0.08,
            sigma_trunk: 0.02,
            seed: 1,
            backend: BackendChoice::Auto,
            partitioned: true,
            mean_estimate: false,
            top_particles: crate::frame::DEFAULT_TOP_PARTICLES,
            observation: ObservationMode::Both,
            keypoint_sigma: DEFAULT_KEYPOINT_SIGMA,
            keypoint_lifts: DEFAULT_KEYPOINT_LIFTS,
            keypoint_depth_sigma: DEFAULT_DEPTH_SIGMA,
            anatomy_weight: crate::anatomy::DEFAULT_ANATOMY_WEIGHT,
            arm_prior_weight: crate::arm_prior::DEFAULT_ARM_PRIOR_WEIGHT,
            lagged_detections: true,
            keypoint_backend: keypoints::DetectorBackend::Auto,
            smoothing: crate::smooth::Smoothing::None,
            smoothing_hand_speed: crate::smooth::DEFAULT_HAND_SPEED,
            smoothing_temperature: crate::smooth::DEFAULT_TEMPERATURE,
        }
    }
}

impl FilterSettings {
    /// The tracker's configuration with `class_map`'s label table.
    pub fn tracker_config(&self, class_map: &ClassMap) -> TrackerConfig {
        TrackerConfig {
            particles: self.particles,
            filter: self.filter,
            sigma_f: self.sigma_f,
            sigma_translation: self.sigma_translation,
            sigma_rotation: self.sigma_limb,
            sigma_trunk: self.sigma_trunk,
            seed: self.seed,
            backend: self.backend,
            label_map: class_map.label_table(),
            partitioned: self.partitioned,
            observation: self.observation,
            keypoint_sigma: self.keypoint_sigma,
            keypoint_lifts: self.keypoint_lifts,
            keypoint_depth_sigma: self.keypoint_depth_sigma,
            anatomy_weight: self.anatomy_weight,
            arm_prior_weight: self.arm_prior_weight,
            mean_estimate: self.mean_estimate,
            top_particles: self.top_particles,
            ..TrackerConfig::default()
        }
    }

    /// Checks the values a tracker would refuse, naming the field.
    ///
    /// # Errors
    /// [`crate::SessionError::Input`] naming the field.
    pub fn validate(&self) -> Result<()> {
        if self.particles == 0 {
            return Err(input(
                named(Field::Particles, 0),
                "need at least one particle",
            ));
        }
        smc::ParticleSet::check_memory(self.particles, 128)
            .map_err(|e| input(named(Field::Particles, self.particles), e))?;
        if !(self.sigma_f.is_finite() && self.sigma_f > 0.0) {
            return Err(input(
                named(Field::SigmaF, self.sigma_f),
                "must be finite and > 0",
            ));
        }
        if !(self.keypoint_depth_sigma.is_finite() && self.keypoint_depth_sigma >= 0.0) {
            return Err(input(
                named(Field::KeypointDepthSigma, self.keypoint_depth_sigma),
                "must be finite and ≥ 0",
            ));
        }
        if !(self.keypoint_sigma.is_finite() && self.keypoint_sigma > 0.0) {
            return Err(input(
                named(Field::KeypointSigma, self.keypoint_sigma),
                "must be finite and > 0",
            ));
        }
        for (field, v) in [
            (Field::SigmaTranslation, self.sigma_translation),
            (Field::SigmaLimb, self.sigma_limb),
            (Field::SigmaTrunk, self.sigma_trunk),
            (Field::AnatomyWeight, self.anatomy_weight),
            (Field::ArmPriorWeight, self.arm_prior_weight),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(input(named(field, v), "must be finite and ≥ 0"));
            }
        }
        Ok(())
    }
}

/// The camera: a camera file, or [`default_camera`] (level, at the origin)
/// of a horizontal field of view.
#[derive(Clone, Debug, PartialEq)]
pub enum CameraSpec {
    /// A camera file (`--camera`).
    File(PathBuf),
    /// The default camera, this many degrees wide (`--fov`).
    FieldOfView(f64),
}

impl CameraSpec {
    /// `file` if given, else the default camera `fov_deg` wide: what
    /// `--camera` and `--fov` ask for.
    pub fn new(file: Option<PathBuf>, fov_deg: f64) -> Self {
        file.map_or(Self::FieldOfView(fov_deg), Self::File)
    }

    /// The camera file, if there is one.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Self::File(path) => Some(path),
            Self::FieldOfView(_) => None,
        }
    }
}

impl Default for CameraSpec {
    /// The default camera, [`DEFAULT_FOV_DEG`] wide.
    fn default() -> Self {
        Self::FieldOfView(DEFAULT_FOV_DEG)
    }
}

/// The subject: whose body is tracked, at what height.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Subject {
    /// Body file (BVH, `--bvh`); `None`: [`default_body`].
    pub body: Option<PathBuf>,
    /// The subject's height (m, `--subject-height`): the default body's;
    /// a body file is scaled to it when given (else used as it is).
    pub height: Option<f64>,
}

/// A known initial pose instead of the guided start: frame `frame` of
/// `file` (or of the body file). Needs a camera file (the pose is in its
/// world frame).
#[derive(Clone, Debug, PartialEq)]
pub struct KnownPose {
    /// The pose's file (`--init`); `None`: the body file.
    pub file: Option<PathBuf>,
    /// Its frame, 0-based (`--frame`).
    pub frame: usize,
}

impl KnownPose {
    /// What `--init` and `--frame` ask for: `None` (the guided start) when
    /// neither is given, else frame `frame` (default 0) of `file`.
    pub fn from_flags(file: Option<PathBuf>, frame: Option<usize>) -> Option<Self> {
        (file.is_some() || frame.is_some()).then(|| Self {
            file,
            frame: frame.unwrap_or(0),
        })
    }
}

/// What to track and how to start (module docs). Paths are optional: the
/// defaults need none.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionSpec {
    /// What the source is, for messages (`--frames` value).
    pub frames: String,
    pub camera: CameraSpec,
    pub subject: Subject,
    /// `None`: the guided start.
    pub init: Option<KnownPose>,
    /// The pose the person stands in for the guided start.
    pub start_pose: StartPose,
    /// The empty scene, given (`--background`) or the first K frames taken
    /// as they come (`--background-frames`); `None`: learned once the
    /// scene is still (the guided start).
    pub background: Option<EmptyScene>,
    pub sleeves: Sleeves,
    /// Tracked joints: `auto`, `upper`, `all` or a comma-separated list.
    pub track: String,
    /// Label image size (width, height).
    pub label_size: (u32, u32),
    pub guide: GuideParams,
    /// The learned arm prior's samples from a table of one's own
    /// (`arm_prior_table`'s CSV); `None`: the committed table.
    pub arm_prior_table: Option<PathBuf>,
}

impl Default for SessionSpec {
    fn default() -> Self {
        Self {
            frames: String::new(),
            camera: CameraSpec::default(),
            subject: Subject::default(),
            init: None,
            start_pose: StartPose::ArmsDown,
            background: None,
            sleeves: Sleeves::Short,
            track: "auto".into(),
            label_size: (labels::DEFAULT_WIDTH, labels::DEFAULT_HEIGHT),
            guide: GuideParams::default(),
            arm_prior_table: None,
        }
    }
}

/// The tracked selection of `spec` (`--track`) on `skeleton`.
///
/// # Errors
/// An empty list or a joint the body lacks, naming `--track`.
pub(crate) fn selection(spec: &str, skeleton: &Skeleton) -> Result<Selection> {
    let upper = Selection::cmu_upper_body();
    let has_all = |sel: &Selection| match sel {
        Selection::All => true,
        Selection::Joints(names) => names.iter().all(|n| skeleton.find(n).is_ok()),
    };
    let sel = match spec.trim() {
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
                    named(Field::Track, spec),
                    "expected auto, upper, all or joint names",
                ));
            }
            Selection::Joints(names)
        }
    };
    if let Selection::Joints(names) = &sel
        && let Some(missing) = names.iter().find(|n| skeleton.find(n).is_err())
    {
        return Err(input(
            named(Field::Track, spec),
            format!("the body has no joint named `{missing}`"),
        ));
    }
    Ok(sel)
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

/// The body (default or file, at the subject's height) and the known
/// initial pose if one was asked for.
pub(crate) fn load_body(spec: &SessionSpec) -> Result<(Bvh, Option<Vec<f64>>)> {
    let subject = &spec.subject;
    let body = match &subject.body {
        None => {
            default_body(subject.height.unwrap_or(crate::DEFAULT_SUBJECT_HEIGHT)).map_err(|e| {
                input(
                    named(
                        Field::SubjectHeight,
                        subject.height.unwrap_or(crate::DEFAULT_SUBJECT_HEIGHT),
                    ),
                    e,
                )
            })?
        }
        Some(path) => {
            let b = Bvh::load(path).map_err(|e| input(named(Field::Body, path.display()), e))?;
            if b.frames.is_empty() {
                // The body's standing pose is its frame 0.
                return Err(input(
                    named(Field::Body, path.display()),
                    "the file has `Frames: 0`: the body needs at least one frame (its standing pose)",
                ));
            }
            match subject.height {
                Some(h) => body_at_height(&b, 0, h).map_err(|e| {
                    input(
                        named(Field::SubjectHeight, format!("{h} for {}", path.display())),
                        e,
                    )
                })?,
                None => b,
            }
        }
    };
    let Some(init) = &spec.init else {
        return Ok((body, None));
    };
    let init_frame = init.frame;
    let (init_path, init_bvh, init_field) = match &init.file {
        Some(p) => (
            p.display().to_string(),
            Bvh::load(p).map_err(|e| input(named(Field::Init, p.display()), e))?,
            Field::Init,
        ),
        None => (
            subject
                .body
                .as_ref()
                .map_or("the default body".into(), |p| p.display().to_string()),
            body.clone(),
            Field::Body,
        ),
    };
    let names =
        |s: &Skeleton| -> Vec<String> { s.joints().iter().map(|j| j.name.clone()).collect() };
    let (bn, in_) = (names(&body.skeleton), names(&init_bvh.skeleton));
    if bn.len() != in_.len() || body.skeleton.dof() != init_bvh.skeleton.dof() {
        return Err(input(
            named(Field::Init, &init_path),
            format!(
                "{} joints / {} pose parameters, but the body has {} joints / {}",
                in_.len(),
                init_bvh.skeleton.dof(),
                bn.len(),
                body.skeleton.dof()
            ),
        ));
    }
    if let Some((a, b)) = bn.iter().zip(&in_).find(|(a, b)| a != b) {
        return Err(input(
            named(Field::Init, &init_path),
            format!("joint `{b}` where the body has `{a}` (the same skeleton is needed)"),
        ));
    }
    if init_frame >= init_bvh.frames.len() {
        return Err(input(
            named(Field::InitFrame, init_frame),
            format!(
                "out of range: {init_path} has {} frames",
                init_bvh.frames.len()
            ),
        ));
    }
    let pose = init_bvh.frames.pose(init_frame).to_vec();
    check_init_pose(&body.skeleton, &pose).map_err(|m| {
        input(
            named(init_field, format!("{init_path} frame {init_frame}")),
            m,
        )
    })?;
    Ok((body, Some(pose)))
}

/// The frame-size camera: the file's (rescaled when only its resolution
/// differs) or the default; says which in `note`.
pub(crate) fn frame_camera(spec: &SessionSpec, size: (u32, u32)) -> Result<(Camera, String)> {
    let path = match &spec.camera {
        CameraSpec::File(path) => path,
        &CameraSpec::FieldOfView(fov_deg) => {
            let cam = default_camera(size.0, size.1, fov_deg)
                .map_err(|e| input(named(Field::Fov, fov_deg), e))?;
            return Ok((
                cam,
                format!("default camera: {fov_deg:.0}° wide, level, at the origin"),
            ));
        }
    };
    let what = named(Field::Camera, path.display());
    let cam = load_camera(path).map_err(|e| input(&what, e))?;
    let (cw, ch) = (cam.width(), cam.height());
    let (fw, fh) = size;
    if (cw, ch) == (fw, fh) {
        return Ok((cam, format!("camera {}", path.display())));
    }
    // Same aspect ratio (within 0.5 %): a calibration at another resolution.
    let a = u64::from(cw) * u64::from(fh);
    let b = u64::from(ch) * u64::from(fw);
    if a.abs_diff(b) as f64 > 0.005 * a.max(b) as f64 {
        return Err(input(
            what,
            format!(
                "the camera is {cw} × {ch} but the frames of {} are {fw} × {fh}: \
                 another aspect ratio cannot be rescaled (calibrate the camera at the frames' size)",
                spec.frames
            ),
        ));
    }
    let cam = resize_camera(&cam, fw, fh).map_err(|e| input(&what, e))?;
    Ok((
        cam,
        format!(
            "camera {} ({cw} × {ch} rescaled to {fw} × {fh})",
            path.display()
        ),
    ))
}

//! The tracking session: everything between a frame source and a tracked
//! pose, once, Bevy-free. `posecloud track` and the app's tracking scene
//! both drive one [`Session`], one [`Session::step`] per frame, and show
//! the same [`Status`].
//!
//! # Set-up files are optional
//! Without a camera file the camera is [`crate::defaults::default_camera`]
//! (level, at the origin, `fov` degrees wide); without a body file the body
//! is [`crate::defaults::default_body`] at the subject's height. A camera
//! file still overrides (its aspect ratio must be the frames'; another
//! resolution is rescaled), and a body file still overrides (scaled to the
//! subject's height when one is given).
//!
//! # The guided start
//! Background, person, placing, tracking: the decisions are
//! [`crate::guide::GuidedStart`]'s, fed the facts of each frame; the session
//! reads and segments the frames, makes the background model, places the
//! start pose by the silhouette search, learns the colours and steps the
//! tracker, as the answers ask.

use std::time::Instant;

use labels::Camera;
use skeleton::{Bvh, Skeleton};
use vision::EmptyScene;
use vision::{
    BackgroundAccumulator, Blob, BodyShape, ClassMap, Frame, FrameSource, SegmentParams,
    Segmentation, Segmenter, Sleeves, dress_skeleton, learn_empty_scene, resize_camera,
};

use crate::arm_prior::ArmDensity;
use crate::backend::{BackendChoice, SharedDevice};
use crate::body::{Arm, Selection, Side, TrackedBody};
use crate::defaults::stature;
use crate::error::{Field, SessionError, input, named, vision_message};
use crate::foreground::{ForegroundEvidence, Look, dilate, where_to_look};
use crate::frame::TrackFrame;
use crate::guide::{
    BackgroundNext, GuidedStart, Phase, Provisional, Status, TrackingNext, WaitingNext, is_ghost,
};
use crate::keypoint_stage::{KeypointStage, keypoint_network};
use crate::keypoint_term::KeypointMap;
use crate::profile::FrameTimes;
use crate::spec::{FilterSettings, SessionSpec, frame_camera, load_body, selection};
use crate::start;
use crate::tracker::{ObservationMode, StepReport, Tracker};

/// Keypoints below this score (BlazePose visibility and presence) are left
/// out of the keypoint term.
pub const KEYPOINT_MIN_SCORE: f32 = 0.5;

pub(crate) type Result<T, E = SessionError> = std::result::Result<T, E>;

/// What one tracked frame produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Tracked {
    /// The estimate (MAP or mean, [`FilterSettings::mean_estimate`]), a
    /// full pose of the body.
    pub pose: Vec<f64>,
    pub report: StepReport,
    /// The arms' depth branches in the cloud and the candidates of the
    /// path smoother ([`crate::smooth`]).
    pub modes: crate::smooth::Modes,
    pub segment_ms: f64,
    pub step_ms: f64,
    /// The frame's stages' wall times (`output` and `total` are the
    /// driver's to fill, [`crate::profile`]).
    pub times: FrameTimes,
}

/// What one [`Session::step`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionStep {
    /// The source frame's index and timestamp.
    pub frame: usize,
    pub timestamp: f64,
    /// The status after the frame.
    pub status: Status,
    /// The frame was tracked (placing and tracking stages).
    pub tracked: Option<Tracked>,
    /// Something that happened (background learned, person placed, track
    /// lost), for a log line.
    pub event: Option<String>,
}

/// One tracking session (module docs).
pub struct Session {
    spec: SessionSpec,
    settings: FilterSettings,
    source: Box<dyn FrameSource>,
    source_name: String,
    camera: Camera,
    label_camera: Camera,
    camera_note: String,
    /// The body file's (or default) skeleton with its BVH channels: the
    /// outputs' hierarchy.
    body: Bvh,
    /// The body dressed with capsules (what the likelihood renders).
    dressed: Skeleton,
    selection: Selection,
    class_map: ClassMap,
    stature: f64,
    /// Root height above the soles over the stature, standing.
    hip_fraction: f64,
    init: Option<Vec<f64>>,
    /// The next frame starts tracking from `init`.
    init_pending: bool,
    segmenter: Segmenter,
    accumulator: BackgroundAccumulator,
    segmentation: Segmentation,
    guide: GuidedStart,
    tracker: Option<Tracker>,
    /// The arm prior's table of one's own (`SessionSpec::arm_prior_table`),
    /// given to every tracker the session builds.
    arm_density: Option<ArmDensity>,
    device: Option<SharedDevice>,
    estimate: Option<Vec<f64>>,
    keypoints: Option<KeypointStage>,
    /// The next frame, read ahead for the detector ([`KeypointStage`]).
    ahead: Option<Frame>,
    last: Option<Frame>,
    /// Frames the background model was learned from.
    background_frames: usize,
    /// The current step's stage times so far ([`Tracked::times`]).
    times: FrameTimes,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("spec", &self.spec)
            .field("status", self.guide.status())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A session on `source`: loads the body and camera (or takes the
    /// defaults), builds the segmenter, takes a background image when one
    /// is given. Tracking starts with the frames ([`Self::step`]). The GPU
    /// back end runs on `device` when given (the app's).
    ///
    /// # Errors
    /// [`SessionError::Input`] naming the flag and file: bad files, a
    /// camera of another aspect ratio, bad settings, a background image of
    /// another size, a known initial pose without a camera file.
    pub fn open(
        spec: SessionSpec,
        settings: FilterSettings,
        mut source: Box<dyn FrameSource>,
        device: Option<SharedDevice>,
    ) -> Result<Self> {
        settings.validate()?;
        let (label_width, label_height) = spec.label_size;
        if label_width == 0 || label_height == 0 {
            return Err(input(
                named(Field::LabelSize, format!("{label_width} × {label_height}")),
                "must be ≥ 1",
            ));
        }
        if spec.background == Some(EmptyScene::FirstFrames(0)) {
            return Err(input(named(Field::BackgroundFrames, 0), "must be ≥ 1"));
        }
        let arm_density = spec
            .arm_prior_table
            .as_ref()
            .map(|p| {
                ArmDensity::load(p).map_err(|e| input(named(Field::ArmPriorTable, p.display()), e))
            })
            .transpose()?;
        let (body, init) = load_body(&spec)?;
        if let Some(known) = &spec.init
            && spec.camera.file().is_none()
        {
            return Err(input(
                match &known.file {
                    Some(p) => named(Field::Init, p.display()),
                    None => named(Field::InitFrame, known.frame),
                },
                "a known initial pose is in a camera file's world frame: give a camera file too \
                 (or leave both out for the guided start)",
            ));
        }
        let body_what = spec
            .subject
            .body
            .as_ref()
            .map_or("the default body".into(), |p| {
                named(Field::Body, p.display())
            });
        let dressed = dress_skeleton(&body.skeleton, &BodyShape::default())
            .map_err(|e| input(&body_what, e))?;
        let selection = selection(&spec.track, &dressed)?;
        let standing = body.frames.pose(0).to_vec();
        let stature = stature(&body.skeleton, &standing).map_err(|e| input(&body_what, e))?;
        let hip_fraction = {
            let w = body
                .skeleton
                .forward_kinematics(&standing)
                .map_err(|e| input(&body_what, e))?;
            let low = w
                .iter()
                .map(|t| t.translation.vector.y)
                .fold(f64::INFINITY, f64::min);
            ((w[0].translation.vector.y - low) / stature).clamp(0.3, 0.7)
        };

        let size = source.size();
        let (camera, camera_note) = frame_camera(&spec, size)?;
        let label_camera = resize_camera(&camera, label_width, label_height)
            .map_err(|e| input(named(Field::Camera, ""), e))?;
        let params = SegmentParams {
            width: label_width,
            height: label_height,
            ..SegmentParams::default()
        };
        let frames_what = named(Field::Frames, &spec.frames);
        let mut segmenter =
            Segmenter::new(params, size.0, size.1).map_err(|e| input(&frames_what, e))?;
        let mut background_frames = 0;
        if let Some(empty @ EmptyScene::Image(path)) = &spec.background {
            // The guided start learns from the first frames itself
            // (`background_step`); an image is learned now.
            learn_empty_scene(&mut segmenter, empty, source.as_mut())
                .map_err(|e| input(named(Field::Background, path.display()), vision_message(&e)))?;
            background_frames = 1;
        }
        let guide = GuidedStart::new(&spec);
        let class_map = ClassMap::for_sleeves(spec.sleeves);
        let source_name = source.name().to_string();
        let mut session = Self {
            spec,
            settings,
            source,
            source_name,
            camera,
            label_camera,
            camera_note,
            body,
            dressed,
            selection,
            class_map,
            stature,
            hip_fraction,
            init,
            init_pending: false,
            segmenter,
            accumulator: BackgroundAccumulator::default(),
            segmentation: Segmentation::default(),
            guide,
            tracker: None,
            arm_density,
            device,
            estimate: None,
            keypoints: None,
            ahead: None,
            last: None,
            background_frames,
            times: FrameTimes::default(),
        };
        session.start_detector()?;
        Ok(session)
    }

    pub fn spec(&self) -> &SessionSpec {
        &self.spec
    }
    pub fn settings(&self) -> &FilterSettings {
        &self.settings
    }
    pub fn status(&self) -> &Status {
        self.guide.status()
    }
    /// The source's name (path, device).
    pub fn source_name(&self) -> &str {
        &self.source_name
    }
    pub fn source(&self) -> &dyn FrameSource {
        self.source.as_ref()
    }
    /// The camera of the frames (file or default) and, in words, which.
    pub fn camera(&self) -> &Camera {
        &self.camera
    }
    pub fn camera_note(&self) -> &str {
        &self.camera_note
    }
    /// The camera at the label image's size (the tracker's).
    pub fn label_camera(&self) -> &Camera {
        &self.label_camera
    }
    /// The body with its BVH channels (the outputs' hierarchy).
    pub fn body(&self) -> &Bvh {
        &self.body
    }
    /// The body dressed with the likelihood's capsules.
    pub fn dressed(&self) -> &Skeleton {
        &self.dressed
    }
    pub fn stature(&self) -> f64 {
        self.stature
    }
    pub fn tracker(&self) -> Option<&Tracker> {
        self.tracker.as_ref()
    }
    /// The tracker's last [`TrackFrame`] (estimate, cloud, heaviest
    /// particles, diagnostics), once placed: what drivers copy.
    pub fn frame(&self) -> Option<&TrackFrame> {
        self.tracker.as_ref().map(Tracker::frame)
    }
    /// The last estimate (full pose), once placed.
    pub fn estimate(&self) -> Option<&[f64]> {
        self.estimate.as_deref()
    }
    /// The last frame read.
    pub fn last_frame(&self) -> Option<&Frame> {
        self.last.as_ref()
    }
    /// The last label image (tracking stages).
    pub fn segmentation(&self) -> &Segmentation {
        &self.segmentation
    }
    /// Replaces the last label image (e.g. the last frame segmented again
    /// after new colour models).
    pub fn set_segmentation(&mut self, segmentation: Segmentation) {
        self.segmentation = segmentation;
    }
    pub fn segmenter(&self) -> &Segmenter {
        &self.segmenter
    }
    pub fn segmenter_mut(&mut self) -> &mut Segmenter {
        &mut self.segmenter
    }
    pub fn class_map(&self) -> &ClassMap {
        &self.class_map
    }
    pub fn background_frames(&self) -> usize {
        self.background_frames
    }
    /// Which likelihood back end runs, in words (before placing: the one
    /// that will).
    pub fn describe_backend(&self) -> String {
        self.tracker.as_ref().map_or_else(
            || {
                let name = match self.settings.backend {
                    BackendChoice::Auto => "auto (GPU on a hardware adapter, else CPU)",
                    BackendChoice::Cpu => "CPU",
                    BackendChoice::Gpu => "GPU",
                };
                format!("{name}, built when tracking starts")
            },
            Tracker::describe,
        )
    }

    /// New tracker settings (the running tracker keeps its cloud).
    ///
    /// # Errors
    /// Bad settings, or a back end that cannot be built.
    pub fn set_settings(&mut self, settings: FilterSettings) -> Result<()> {
        settings.validate()?;
        if let Some(t) = &mut self.tracker {
            t.set_config(settings.tracker_config(&self.class_map))?;
        }
        self.settings = settings;
        self.start_detector()
    }

    /// Which likelihood terms weigh the particles, in words.
    pub fn describe_observation(&self) -> String {
        match (self.settings.observation, &self.keypoints) {
            (ObservationMode::Regions, _) => "regions (RTPF)".into(),
            (m, Some(_)) => format!(
                "{} (BlazePose keypoints on their own thread, σ {:.2} of the body's size; {}; {})",
                match m {
                    ObservationMode::Keypoints => "keypoints",
                    _ => "regions + keypoints",
                },
                self.settings.keypoint_sigma,
                if self.settings.keypoint_depth_sigma > 0.0 {
                    format!("depth order σ {:.2}", self.settings.keypoint_depth_sigma)
                } else {
                    "no depth order".into()
                },
                match self.settings.keypoint_lifts {
                    0 => "no lifted arms".to_string(),
                    n => format!("up to {n} lifted arms a frame"),
                }
            ),
            (_, None) => "regions (no keypoint detector)".into(),
        }
    }

    /// Another sleeve length: the class map changes; the colours are
    /// learned again at the next placing (or [`Self::learn_colours`]).
    ///
    /// # Errors
    /// A back end that cannot be rebuilt.
    pub fn set_sleeves(&mut self, sleeves: Sleeves) -> Result<()> {
        self.spec.sleeves = sleeves;
        self.class_map = ClassMap::for_sleeves(sleeves);
        if let Some(t) = &mut self.tracker {
            t.set_config(self.settings.tracker_config(&self.class_map))?;
        }
        Ok(())
    }

    /// The joints tracked from now on (`--track`); the track restarts at
    /// the current estimate.
    ///
    /// # Errors
    /// As [`selection`]; a tracker that cannot be rebuilt.
    pub fn set_tracked_joints(&mut self, spec: &str) -> Result<()> {
        let sel = selection(spec, &self.dressed)?;
        self.spec.track = spec.to_string();
        self.selection = sel;
        if let Some(pose) = self.estimate.clone() {
            self.start_tracker(&pose)?;
        }
        Ok(())
    }

    /// Moves the file source to `frame` (the session's stage stays).
    ///
    /// # Errors
    /// A live source, or a frame past the end.
    pub fn seek(&mut self, frame: usize) -> Result<()> {
        self.ahead = None;
        self.source
            .seek(frame)
            .map_err(|e| input(named(Field::Frames, &self.spec.frames), e))
    }

    /// Starts over: background, person, placing (a file source from its
    /// first frame).
    ///
    /// # Errors
    /// A live source cannot seek: it starts over from its next frame.
    pub fn restart(&mut self) -> Result<()> {
        let seek = self.source.seek(0);
        self.ahead = None;
        self.tracker = None;
        self.estimate = None;
        self.init_pending = false;
        self.accumulator = BackgroundAccumulator::default();
        self.guide = GuidedStart::new(&self.spec);
        if !matches!(self.spec.background, Some(EmptyScene::Image(_))) {
            self.background_frames = 0;
        }
        match seek {
            Ok(()) | Err(vision::VisionError::Seek { .. }) => Ok(()),
            Err(e) => Err(input(named(Field::Frames, &self.spec.frames), e)),
        }
    }

    /// The last frame becomes the background model (the app's "capture
    /// background").
    ///
    /// # Errors
    /// No frame yet.
    pub fn capture_background(&mut self) -> Result<String> {
        let f = self
            .last
            .as_ref()
            .ok_or_else(|| input("capture background", "no frame yet"))?;
        self.segmenter
            .learn_background(&[f])
            .map_err(|e| input(format!("frame {}", f.index), e))?;
        self.background_frames = 1;
        self.guide.background_given();
        Ok(format!("background learned from frame {}", f.index))
    }

    /// Learns the colour models from the last frame in the current
    /// estimate.
    ///
    /// # Errors
    /// No frame or no estimate yet, or too few pixels.
    pub fn learn_colours(&mut self) -> Result<String> {
        let (Some(f), Some(pose)) = (self.last.clone(), self.estimate.clone()) else {
            return Err(input(
                "learn colours",
                "needs a frame and an estimate (wait until tracking starts)",
            ));
        };
        self.learn_colours_from(&f, &pose)
    }

    fn learn_colours_from(&mut self, frame: &Frame, pose: &[f64]) -> Result<String> {
        let r = self
            .segmenter
            .learn_colours_from_pose(frame, &self.dressed, &self.camera, pose, &self.class_map)
            .map_err(|e| {
                input(
                    named(
                        Field::Frames,
                        format!("{} frame {}", self.spec.frames, frame.index),
                    ),
                    format!("learning colours from the pose: {e}"),
                )
            })?;
        Ok(format!(
            "colours learned from frame {} ({} skin, {} hair, {} shirt, {} trousers pixels)",
            frame.index, r.skin, r.hair, r.shirt, r.trousers
        ))
    }

    /// Starts the keypoint detector when the settings ask for keypoints (and
    /// stops it when they do not).
    fn start_detector(&mut self) -> Result<()> {
        if self.settings.observation == ObservationMode::Regions {
            self.keypoints = None;
            return Ok(());
        }
        if self
            .keypoints
            .as_ref()
            .is_some_and(|k| k.backend == self.settings.keypoint_backend)
        {
            return Ok(());
        }
        let what = named(Field::Observation, self.settings.observation.name());
        let map = KeypointMap::find(&self.dressed);
        if map.is_empty() {
            return Err(input(
                what,
                "the body has none of the joints the keypoints bind to (CMU, Mixamo or preset names)",
            ));
        }
        let (detector, description) =
            keypoint_network(self.settings.keypoint_backend, self.device.as_ref())?;
        let detector = keypoints::AsyncDetector::spawn(detector).map_err(|e| input(&what, e))?;
        // Another back end: the last detection stays (a frame submitted to
        // the old one is submitted again by the next step).
        let latest = self.keypoints.take().and_then(|k| k.latest);
        self.keypoints = Some(KeypointStage {
            detector,
            backend: self.settings.keypoint_backend,
            description,
            map,
            pending: None,
            latest,
        });
        Ok(())
    }

    /// Where the keypoint network runs, in words, for a status line:
    /// `BlazePose full on NAME (GPU, BACKEND)` or `BlazePose full on the
    /// CPU (tract)`, with why `Auto` passed the GPU over.
    pub fn describe_keypoints(&self) -> String {
        self.keypoints.as_ref().map_or_else(
            || "off (the regions alone weigh)".into(),
            |k| k.description.clone(),
        )
    }

    /// The last keypoint detection and the frame it was made on.
    pub fn detection(&self) -> Option<(usize, &keypoints::Keypoints)> {
        self.keypoints
            .as_ref()
            .and_then(|k| k.latest.as_ref().map(|(f, kp)| (*f, kp)))
    }

    /// Where the person is in `frame` (frame pixels): the last estimate's
    /// joints projected, by the one person-box rule
    /// ([`crate::foreground::where_to_look`]); `None` before the first
    /// estimate or when it is out of view.
    fn person_box(&self, frame: &Frame) -> Option<keypoints::PersonBox> {
        let pose = self.estimate.as_ref()?;
        let world = self.dressed.forward_kinematics(pose).ok()?;
        let points: Vec<[f32; 2]> = world
            .iter()
            .filter_map(|w| {
                self.camera
                    .project(&nalgebra::Point3::from(w.translation.vector))
                    .map(|(u, v, _)| [u as f32, v as f32])
            })
            .collect();
        // The session always has a background model while it tracks; the
        // estimate decides alone, so the blob is not computed here.
        let foreground = ForegroundEvidence::Known {
            blob: None,
            label_size: (
                self.spec.label_size.0 as usize,
                self.spec.label_size.1 as usize,
            ),
        };
        match where_to_look((frame.width, frame.height), Some(&points), foreground, None) {
            Look::Box(b) => Some(b),
            Look::Follow(_) | Look::Nowhere => None,
        }
    }

    /// The detector's part of a tracked frame ([`KeypointStage`]): makes
    /// sure `frame` is detected (submitted ahead by the previous step, else
    /// now), waits for its result, reads the next frame ahead and submits
    /// it, and hands `frame`'s detection to the tracker. With
    /// [`FilterSettings::lagged_detections`], submits `frame` and hands the
    /// previous frame's detection over instead.
    fn detect_keypoints(&mut self, frame: &Frame) -> Result<()> {
        let t0 = Instant::now();
        let mut read_ahead = std::time::Duration::ZERO;
        let person = self.person_box(frame);
        let lagged = self.settings.lagged_detections;
        let Some(k) = self.keypoints.as_mut() else {
            return Ok(());
        };
        let wait_for = if lagged {
            let previous = k.pending.take();
            if let Some(b) = person {
                k.submit(frame, b)?;
            }
            previous
        } else {
            if k.pending != Some(frame.index)
                && let Some(b) = person
            {
                k.submit(frame, b)?;
            }
            k.pending.take().filter(|&f| f == frame.index)
        };
        if let Some(f) = wait_for {
            k.wait(f)?;
        }
        if !lagged && self.ahead.is_none() {
            // The next frame, read now so that the detector works on it
            // while the tracker steps this one.
            let t_read = Instant::now();
            let next = self
                .source
                .next_frame()
                .map_err(|e| input(named(Field::Frames, &self.spec.frames), e))?;
            read_ahead = t_read.elapsed();
            if let Some(next) = next {
                let b = self.person_box(&next);
                let k = self.keypoints.as_mut().expect("checked above");
                if let Some(b) = b {
                    k.submit(&next, b)?;
                }
                self.ahead = Some(next);
            }
        }
        let k = self.keypoints.as_ref().expect("checked above");
        let max_age = if lagged { 2 } else { 1 };
        let observation = k.observation(frame, max_age, &self.label_camera);
        if let Some(t) = self.tracker.as_mut() {
            t.set_keypoints(observation)?;
        }
        self.times.decode += read_ahead;
        self.times.keypoints += t0.elapsed().saturating_sub(read_ahead);
        Ok(())
    }

    /// Builds the tracker (on the session's device) with every particle at
    /// `pose`.
    fn start_tracker(&mut self, pose: &[f64]) -> Result<()> {
        let body = TrackedBody::new(self.dressed.clone(), &self.selection, pose)?;
        let config = self.settings.tracker_config(&self.class_map);
        let mut tracker = Tracker::with_device(
            body,
            self.label_camera.clone(),
            pose,
            None,
            config,
            self.device.clone(),
        )?;
        if let Some(d) = &self.arm_density {
            tracker.set_arm_density(d.clone());
        }
        self.tracker = Some(tracker);
        self.estimate = Some(pose.to_vec());
        Ok(())
    }

    /// Reads the next frame and advances the session by it (module docs).
    /// `Ok(None)` at the end of the source.
    ///
    /// # Errors
    /// A frame that cannot be read or segmented, a tracker failure.
    pub fn step(&mut self) -> Result<Option<SessionStep>> {
        let frames_what = || named(Field::Frames, &self.spec.frames);
        self.times = FrameTimes::default();
        let t_read = Instant::now();
        let frame = match self.ahead.take() {
            Some(f) => f,
            None => match self
                .source
                .next_frame()
                .map_err(|e| input(frames_what(), e))?
            {
                Some(f) => f,
                None => return Ok(None),
            },
        };
        self.times.decode = t_read.elapsed();
        let (index, t) = (frame.index, frame.timestamp);
        let result = match self.guide.phase() {
            Phase::Background => self.background_step(&frame),
            Phase::Waiting => self.waiting_step(&frame),
            Phase::Tracking => self.tracking_step(&frame),
        };
        self.last = Some(frame);
        let (tracked, event) = result?;
        Ok(Some(SessionStep {
            frame: index,
            timestamp: t,
            status: self.guide.status().clone(),
            tracked,
            event,
        }))
    }

    fn frame_what(&self, frame: &Frame) -> crate::error::Named {
        named(
            Field::Frames,
            format!("{} frame {}", self.spec.frames, frame.index),
        )
    }

    /// Step 1 of the guided start: the frame summed into the background.
    fn background_step(&mut self, frame: &Frame) -> Result<(Option<Tracked>, Option<String>)> {
        let what = self.frame_what(frame);
        let change = self
            .segmenter
            .accumulate_background(&mut self.accumulator, frame)
            .map_err(|e| input(&what, e))?;
        let frames = self.accumulator.frames();
        match self.guide.background(frame.timestamp, change, frames) {
            BackgroundNext::Continue => Ok((None, None)),
            BackgroundNext::Learned(event) => self.background_learned(event),
            BackgroundNext::Moved(provisional) => {
                let have = match provisional {
                    Provisional::Take => self.segmenter.set_background(&self.accumulator).is_ok(),
                    Provisional::Have => true,
                    Provisional::None => false,
                };
                self.accumulator.clear_sums();
                let mask = if have {
                    let m = self
                        .segmenter
                        .foreground_mask(frame)
                        .map_err(|e| input(&what, e))?;
                    Some(m)
                } else {
                    None
                };
                self.guide.moved(change, mask.as_deref());
                Ok((None, None))
            }
        }
    }

    fn background_learned(&mut self, event: String) -> Result<(Option<Tracked>, Option<String>)> {
        self.segmenter
            .set_background(&self.accumulator)
            .map_err(|e| input("background", e))?;
        self.background_frames = self.accumulator.frames();
        self.accumulator.clear_sums();
        self.guide.learned(self.init.is_some());
        if let Some(pose) = self.init.clone() {
            // A known initial pose: the tracker starts there now, the next
            // frame learns colours from it and is tracked.
            self.start_tracker(&pose)?;
            self.init_pending = true;
        }
        Ok((None, Some(event)))
    }

    /// Steps 2 and 3 of the guided start: places on the frame the person
    /// held still.
    fn waiting_step(&mut self, frame: &Frame) -> Result<(Option<Tracked>, Option<String>)> {
        let what = self.frame_what(frame);
        if self.init_pending
            && let Some(pose) = self.init.clone()
        {
            // Known initial pose (after the background; the tracker was
            // built then).
            self.init_pending = false;
            let colours = self.learn_colours_from(frame, &pose)?;
            let area = self.foreground_area(frame)?;
            return self.placed_and_tracked(frame, area, colours);
        }
        let mask = self
            .segmenter
            .foreground_mask(frame)
            .map_err(|e| input(&what, e))?;
        let WaitingNext::Place(blob) = self.guide.waiting(frame.timestamp, &mask) else {
            return Ok((None, None));
        };
        if let Some((in_frame, in_model)) = self.segmenter.outline_edges(&blob.mask)
            && is_ghost(in_frame, in_model)
        {
            let region = dilate(&blob.mask, self.spec.label_size.0 as usize, 2);
            self.segmenter
                .patch_background(frame, &region)
                .map_err(|e| input(&what, e))?;
            self.guide.wait_again(None);
            return Ok((
                None,
                Some(format!(
                    "someone was in view while the background was learned: that part of it \
                     relearned from frame {} (outline edges {in_frame:.1} in the frame, {in_model:.1} in the model)",
                    frame.index
                )),
            ));
        }
        let placed = self.place(frame, &mask, &blob).and_then(|(note, pose)| {
            // Colours from this frame in the found pose; the tracker starts
            // only when they could be learned.
            let colours = self
                .learn_colours_from(frame, &pose)
                .map_err(|e| PlaceFailure(format!("{e}: stand facing the camera, in full view")))?;
            self.start_tracker(&pose)
                .map_err(|e| PlaceFailure(e.to_string()))?;
            Ok(format!("{note}; {colours}"))
        });
        match placed {
            Ok(event) => self.placed_and_tracked(frame, blob.area, event),
            Err(PlaceFailure(why)) => {
                self.guide.wait_again(Some(&why));
                Ok((None, None))
            }
        }
    }

    fn foreground_area(&mut self, frame: &Frame) -> Result<usize> {
        let what = self.frame_what(frame);
        let mask = self
            .segmenter
            .foreground_mask(frame)
            .map_err(|e| input(what, e))?;
        Ok(mask.iter().filter(|&&m| m != 0).count())
    }

    /// Step 3 of the guided start: the start pose where the blob is
    /// ([`start::BlobPlacement`]); returns what was found, in words, and
    /// the pose.
    fn place(
        &self,
        frame: &Frame,
        mask: &[u8],
        blob: &Blob,
    ) -> std::result::Result<(String, Vec<f64>), PlaceFailure> {
        let placement = start::BlobPlacement {
            dressed: &self.dressed,
            selection: &self.selection,
            camera: &self.label_camera,
            label_height: self.spec.label_size.1 as usize,
            start_pose: self.spec.start_pose,
            stature: self.stature,
            hip_fraction: self.hip_fraction,
            standing: self.body.frames.pose(0),
            max_residual: self.spec.guide.place_residual,
        };
        placement
            .place(frame.index, mask, blob)
            .map_err(PlaceFailure)
    }

    /// After placing: this frame is tracked too; the stage is `Placing`.
    fn placed_and_tracked(
        &mut self,
        frame: &Frame,
        placed_area: usize,
        event: String,
    ) -> Result<(Option<Tracked>, Option<String>)> {
        let tracked = self.track_frame(frame)?;
        self.guide.placed(placed_area);
        Ok((Some(tracked), Some(event)))
    }

    fn track_frame(&mut self, frame: &Frame) -> Result<Tracked> {
        let what = self.frame_what(frame);
        if self.tracker.is_none() {
            return Err(input(&what, "no tracker (not placed)"));
        }
        let t0 = Instant::now();
        self.segmenter
            .segment_into(frame, &mut self.segmentation)
            .map_err(|e| input(&what, e))?;
        let obs = self
            .segmentation
            .observation()
            .map_err(|e| input(&what, e))?;
        let t1 = Instant::now();
        self.detect_keypoints(frame)?;
        let frame = self.tracker.as_mut().expect("checked above").step(&obs)?;
        let t2 = Instant::now();
        let report = *frame.report();
        let pose = frame.estimate_pose().to_vec();
        self.estimate = Some(pose.clone());
        let modes = crate::smooth::Modes::of(self.tracker.as_ref().expect("checked above"))?;
        self.times.foreground = t1 - t0;
        self.times.step = report.timings;
        self.times.modes = t2.elapsed();
        Ok(Tracked {
            pose,
            report,
            modes,
            segment_ms: (t1 - t0).as_secs_f64() * 1e3,
            step_ms: (t2 - t1).as_secs_f64() * 1e3,
            times: self.times,
        })
    }

    /// Step 4 of the guided start: the frame tracked.
    fn tracking_step(&mut self, frame: &Frame) -> Result<(Option<Tracked>, Option<String>)> {
        let tracked = self.track_frame(frame)?;
        let area = self
            .segmentation
            .foreground
            .iter()
            .filter(|&&m| m != 0)
            .count();
        let next = self.guide.tracking(
            frame.timestamp,
            &tracked.report,
            area,
            self.settings.particles,
        );
        let event = match next {
            TrackingNext::Continue => None,
            TrackingNext::Lost(why) => Some(format!(
                "lost on frame {}: {why}; re-acquiring",
                frame.index
            )),
        };
        Ok((Some(tracked), event))
    }

    /// The right-elbow flexion of a full pose, degrees (the plots' figure).
    pub fn right_elbow_deg(&self, pose: &[f64]) -> Option<f64> {
        let arm = Arm::find(&self.dressed, Side::Right).ok()?;
        let world = self.dressed.forward_kinematics(pose).ok()?;
        Some(arm.flexion(&world).to_degrees())
    }
}

/// Why placing failed (said to the person).
#[derive(Debug)]
struct PlaceFailure(String);

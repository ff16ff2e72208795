//! The guided start's decisions: a small state machine ([`GuidedStart`])
//! that is fed the facts of each frame and answers what the session does
//! next, with the [`Status`] to show. It keeps the per-stage memory (since
//! when the scene or the person has been still, the previous frame's blob,
//! since when the fit has been poor or the person gone); the session
//! ([`crate::Session`]) does the work the answers ask for — summing
//! background frames, segmenting, placing, learning colours, stepping the
//! tracker — and tells the machine how it went. Times are the frames' own
//! timestamps, so a video file and a webcam go through the same steps:
//!
//! 1. **Learning the background** ([`GuidedStart::background`]). The
//!    frame-to-frame change (fraction of label pixels whose luminance
//!    moved, [`vision::Segmenter::accumulate_background`]) must stay below
//!    [`crate::GuideParams::still_fraction`] for
//!    [`crate::GuideParams::background_seconds`]; the still frames are
//!    summed (running sums) into the background model. Motion restarts the
//!    count; when an earlier still stretch gave a provisional model, a
//!    person-sized foreground blob against it is reported ("someone is in
//!    view").
//! 2. **Waiting for a person** ([`GuidedStart::waiting`]). The largest
//!    foreground blob must be person-sized (a fraction of the image's
//!    height and area, not cut by the left or right edge) and nearly still
//!    (mask IoU with the previous frame ≥
//!    [`crate::GuideParams::person_still_iou`]) for
//!    [`crate::GuideParams::person_seconds`]. A blob whose outline is an
//!    edge of the background model and not of the frame is a *ghost*
//!    ([`is_ghost`]; someone was in view while the background was learned
//!    and has left; Cucchiara et al. 2003): that region of the model is
//!    relearned from the frame.
//! 3. **Placing.** The start pose ([`StartPose`], arms down by default) is
//!    put where the blob is: its distance from the subject's height and the
//!    blob's height in pixels (or its width, when the blob is cut by the top
//!    or bottom edge) through the focal length; its root on the ray through
//!    the blob's hips; then the silhouette search
//!    ([`crate::start::place_by_silhouette`]) refines the position. The
//!    colour models are learned from that frame in that pose, the tracker
//!    starts there and the frame is tracked ([`GuidedStart::placed`]); a
//!    start pose that does not fit waits again
//!    ([`GuidedStart::wait_again`]).
//! 4. **Tracking** ([`GuidedStart::tracking`]). One tracker step per frame.
//!    A fit that stays poor (residual F above
//!    [`crate::GuideParams::lost_residual`] for
//!    [`crate::GuideParams::lost_seconds`]) or a person who leaves
//!    (foreground below [`crate::GuideParams::left_area_fraction`] of the
//!    placed person's for [`crate::GuideParams::left_seconds`]) goes back
//!    to step 2, re-acquiring.
//!
//! A background image (`--background`), K background frames taken as they
//! come (`--background-frames`), or a known initial pose (`--init`,
//! `--frame`) skip the matching steps, as RTPF's evaluations need.

use vision::{Blob, EmptyScene};

use crate::spec::{GuideParams, SessionSpec};
use crate::start::StartPose;
use crate::tracker::StepReport;

/// The stages of a session (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    LearningBackground,
    WaitingForPerson,
    Placing,
    Tracking,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Self::LearningBackground => "learning the background",
            Self::WaitingForPerson => "waiting for a person",
            Self::Placing => "placing",
            Self::Tracking => "tracking",
        }
    }
}

/// Where a session stands: the stage, what the person should do, how far
/// the stage has come (0–1).
#[derive(Clone, Debug, PartialEq)]
pub struct Status {
    pub stage: Stage,
    pub message: String,
    pub progress: f64,
    /// Waiting again after the track was lost.
    pub reacquiring: bool,
}

/// Which facts of a frame the guided start needs next: the step of the
/// module docs it is in (placing happens within a waiting frame).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Step 1: the frame's change, summed ([`GuidedStart::background`]).
    Background,
    /// Step 2: the frame's foreground mask ([`GuidedStart::waiting`]).
    Waiting,
    /// Step 4: the tracked frame's fit ([`GuidedStart::tracking`]).
    Tracking,
}

/// What the session does after a background frame (step 1).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum BackgroundNext {
    /// Keep summing frames.
    Continue,
    /// The scene moved: the sums start again. The session makes the
    /// provisional model when asked, segments the frame against it when
    /// there is one, and says so with [`GuidedStart::moved`].
    Moved(Provisional),
    /// Enough frames: the background model is made of the sums (the event,
    /// in words), then [`GuidedStart::learned`].
    Learned(String),
}

/// The provisional background model when the scene moves in step 1: the
/// still frames summed before, if they were enough, tell whether someone is
/// in view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Provisional {
    /// None, and the still stretch was too short for one.
    None,
    /// None yet: make one from the frames summed so far.
    Take,
    /// One was made on an earlier move.
    Have,
}

/// What the session does after a waiting frame (step 2).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum WaitingNext {
    /// Keep waiting (the status says for what).
    Continue,
    /// The person held still: unless the blob is a ghost ([`is_ghost`]),
    /// place the start pose on it (step 3), then [`GuidedStart::placed`];
    /// a ghost relearned or a failed placing, [`GuidedStart::wait_again`].
    Place(Blob),
}

/// What the session does after a tracked frame (step 4).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TrackingNext {
    Continue,
    /// The track is lost (why, in words): the guided start waits for the
    /// person again, re-acquiring.
    Lost(String),
}

/// The guided start's per-stage memory.
#[derive(Clone, Debug)]
enum Memory {
    /// `fixed`: K frames taken as they come (`--background-frames`);
    /// `provisional`: a provisional model was made on an earlier move.
    Background {
        still_since: Option<f64>,
        fixed: Option<usize>,
        provisional: bool,
    },
    Waiting {
        still_since: Option<f64>,
        previous: Option<Blob>,
    },
    Tracking {
        poor_since: Option<f64>,
        gone_since: Option<f64>,
        /// Foreground pixels when the person was placed.
        placed_area: usize,
    },
}

impl Memory {
    /// Waiting, from nothing.
    const WAITING: Self = Self::Waiting {
        still_since: None,
        previous: None,
    };
}

/// The guided start (module docs): its thresholds, its per-stage memory
/// and the status it shows.
#[derive(Clone, Debug)]
pub(crate) struct GuidedStart {
    params: GuideParams,
    start_pose: StartPose,
    /// The label image's width and height (the masks' size).
    label_size: (usize, usize),
    memory: Memory,
    status: Status,
}

impl GuidedStart {
    /// The first stage for `spec`: waiting for a person when a background
    /// image is given, else learning the background (once the scene is
    /// still, or from the first K frames).
    pub(crate) fn new(spec: &SessionSpec) -> Self {
        let memory = match &spec.background {
            Some(EmptyScene::Image(_)) => Memory::WAITING,
            Some(EmptyScene::FirstFrames(k)) => Memory::Background {
                still_since: None,
                fixed: Some(*k),
                provisional: false,
            },
            None => Memory::Background {
                still_since: None,
                fixed: None,
                provisional: false,
            },
        };
        let mut guide = Self {
            params: spec.guide.clone(),
            start_pose: spec.start_pose,
            label_size: (spec.label_size.0 as usize, spec.label_size.1 as usize),
            memory,
            status: Status {
                stage: Stage::LearningBackground,
                message: String::new(),
                progress: 0.0,
                reacquiring: false,
            },
        };
        guide.status = guide.initial_status();
        guide
    }

    fn initial_status(&self) -> Status {
        match &self.memory {
            Memory::Background { fixed: Some(k), .. } => Status {
                stage: Stage::LearningBackground,
                message: format!("learning the background from the first {k} frame(s)"),
                progress: 0.0,
                reacquiring: false,
            },
            Memory::Background { .. } => Status {
                stage: Stage::LearningBackground,
                message: "learning the background: step out of view and keep the camera still"
                    .into(),
                progress: 0.0,
                reacquiring: false,
            },
            _ => self.waiting_status(None, 0.0),
        }
    }

    /// The status to show.
    pub(crate) fn status(&self) -> &Status {
        &self.status
    }

    /// Which facts the next frame should bring.
    pub(crate) fn phase(&self) -> Phase {
        match self.memory {
            Memory::Background { .. } => Phase::Background,
            Memory::Waiting { .. } => Phase::Waiting,
            Memory::Tracking { .. } => Phase::Tracking,
        }
    }

    /// Step 1 on a frame at time `t` that was summed into the background
    /// sums: `change` is its frame-to-frame change, `frames` the frames
    /// summed so far. Outside step 1, nothing changes.
    pub(crate) fn background(&mut self, t: f64, change: f32, frames: usize) -> BackgroundNext {
        let Memory::Background {
            still_since,
            fixed,
            provisional,
        } = self.memory
        else {
            return BackgroundNext::Continue;
        };
        if let Some(k) = fixed {
            self.status.progress = frames as f64 / k as f64;
            if frames < k {
                return BackgroundNext::Continue;
            }
            return BackgroundNext::Learned(format!("background learned from {frames} frame(s)"));
        }
        let g = &self.params;
        let since = still_since.unwrap_or(t);
        if change > g.still_fraction {
            // Moving: start again; a provisional model from the still
            // stretch before tells whether someone is in view.
            return BackgroundNext::Moved(if provisional {
                Provisional::Have
            } else if t - since >= 0.3 * g.background_seconds {
                Provisional::Take
            } else {
                Provisional::None
            });
        }
        let held = t - since;
        self.status = Status {
            stage: Stage::LearningBackground,
            message: "learning the background: keep out of view".into(),
            progress: (held / g.background_seconds).clamp(0.0, 1.0),
            reacquiring: false,
        };
        // The first still frame has no duration yet: at least two frames.
        if held + 1e-9 >= g.background_seconds && frames >= 2 {
            return BackgroundNext::Learned(format!(
                "background learned from {frames} still frames ({held:.1} s)"
            ));
        }
        self.memory = Memory::Background {
            still_since: Some(since),
            fixed,
            provisional,
        };
        BackgroundNext::Continue
    }

    /// After [`BackgroundNext::Moved`]: the sums start again; `mask` is the
    /// frame's foreground against the provisional model, when there is one
    /// (`None` when none was asked for or it could not be made).
    pub(crate) fn moved(&mut self, change: f32, mask: Option<&[u8]>) {
        let Memory::Background { fixed, .. } = self.memory else {
            return;
        };
        let someone = mask.is_some_and(|m| self.person(m).is_ok());
        self.status = Status {
            stage: Stage::LearningBackground,
            message: if someone {
                "someone is in view: step out of view until the background is learned".into()
            } else {
                format!(
                    "the scene is moving ({:.1} % of it changed): keep the camera still and step out of view",
                    100.0 * change
                )
            },
            progress: 0.0,
            reacquiring: false,
        };
        self.memory = Memory::Background {
            still_since: None,
            fixed,
            provisional: mask.is_some(),
        };
    }

    /// Step 1 done, the background model made: waiting for a person, or,
    /// with a known initial pose (`known_pose`), placing it on the next
    /// frame.
    pub(crate) fn learned(&mut self, known_pose: bool) {
        self.memory = Memory::WAITING;
        self.status = if known_pose {
            Status {
                stage: Stage::Placing,
                message: "starting from the given initial pose".into(),
                progress: 1.0,
                reacquiring: false,
            }
        } else {
            self.waiting_status(None, 0.0)
        };
    }

    /// A background model came from elsewhere (a captured frame): step 1,
    /// if it was still going, is over.
    pub(crate) fn background_given(&mut self) {
        if matches!(self.memory, Memory::Background { .. }) {
            self.memory = Memory::WAITING;
            self.status = self.waiting_status(None, 0.0);
        }
    }

    /// Step 2 on a frame at time `t` with foreground `mask` (label pixels,
    /// 1 = foreground): the person is placed once their blob held still
    /// long enough. Outside step 2, nothing changes.
    pub(crate) fn waiting(&mut self, t: f64, mask: &[u8]) -> WaitingNext {
        let Memory::Waiting {
            still_since,
            previous,
        } = &self.memory
        else {
            return WaitingNext::Continue;
        };
        let blob = match self.person(mask) {
            Ok(b) => b,
            Err(problem) => {
                let p = (!problem.is_empty()).then_some(problem);
                self.status = self.waiting_status(p, 0.0);
                self.memory = Memory::WAITING;
                return WaitingNext::Continue;
            }
        };
        let g = &self.params;
        let still = previous
            .as_ref()
            .is_some_and(|p| p.iou(&blob) >= g.person_still_iou);
        let since = if still { still_since.unwrap_or(t) } else { t };
        let held = t - since;
        let progress = (held / g.person_seconds).clamp(0.0, 1.0);
        if held + 1e-9 < g.person_seconds || !still {
            self.status = self.waiting_status(Some("hold still, face the camera"), progress);
            if !self.status.reacquiring {
                self.status.message = format!(
                    "hold still, face the camera, {}",
                    match self.start_pose {
                        StartPose::ArmsDown => "arms down",
                        StartPose::TPose => "arms out",
                    }
                );
            }
            self.memory = Memory::Waiting {
                still_since: Some(since),
                previous: Some(blob),
            };
            return WaitingNext::Continue;
        }
        WaitingNext::Place(blob)
    }

    /// Step 3 done: the person placed (their blob `area` pixels), the frame
    /// tracked; the stage is `Placing` for this frame, tracking from the
    /// next.
    pub(crate) fn placed(&mut self, area: usize) {
        self.memory = Memory::Tracking {
            poor_since: None,
            gone_since: None,
            placed_area: area,
        };
        self.status = Status {
            stage: Stage::Placing,
            message: "placed: tracking starts".into(),
            progress: 1.0,
            reacquiring: false,
        };
    }

    /// Back to waiting for the person to hold still, from nothing: a ghost
    /// relearned, or the placing failed (`problem`, said to the person).
    pub(crate) fn wait_again(&mut self, problem: Option<&str>) {
        self.status = self.waiting_status(problem, 0.0);
        self.memory = Memory::WAITING;
    }

    /// Step 4 on a frame at time `t` that was tracked with `fit` (its
    /// residual F and ESS), `area` foreground pixels; `particles` for the
    /// status line. Outside step 4, nothing changes.
    pub(crate) fn tracking(
        &mut self,
        t: f64,
        fit: &StepReport,
        area: usize,
        particles: usize,
    ) -> TrackingNext {
        let Memory::Tracking {
            poor_since,
            gone_since,
            placed_area,
        } = self.memory
        else {
            return TrackingNext::Continue;
        };
        let g = &self.params;
        let poor_since = (fit.residual > g.lost_residual).then(|| poor_since.unwrap_or(t));
        let gone_since = ((area as f64) < g.left_area_fraction * placed_area as f64)
            .then(|| gone_since.unwrap_or(t));
        let lost = if gone_since.is_some_and(|s| t - s + 1e-9 >= g.left_seconds) {
            Some("the person left the view".to_string())
        } else if poor_since.is_some_and(|s| t - s + 1e-9 >= g.lost_seconds) {
            Some(format!(
                "the fit stayed poor for {:.1} s (F {:.2})",
                g.lost_seconds, fit.residual
            ))
        } else {
            None
        };
        if let Some(why) = lost {
            self.status.reacquiring = true;
            self.memory = Memory::WAITING;
            self.status = self.waiting_status(None, 0.0);
            return TrackingNext::Lost(why);
        }
        self.memory = Memory::Tracking {
            poor_since,
            gone_since,
            placed_area,
        };
        self.status = Status {
            stage: Stage::Tracking,
            message: format!(
                "tracking (F {:.2}, ESS {:.0}/{particles})",
                fit.residual, fit.ess
            ),
            progress: 1.0,
            reacquiring: false,
        };
        TrackingNext::Continue
    }

    /// The largest blob of `mask` if it is person-sized and in view, else
    /// what the person should do (empty when nobody is in view).
    fn person(&self, mask: &[u8]) -> Result<Blob, &'static str> {
        let (w, h) = self.label_size;
        let g = &self.params;
        let blob = Blob::largest(mask, w, h).ok_or("")?;
        if (blob.area as f64) < g.min_person_area * (w * h) as f64 {
            return Err("");
        }
        if (blob.height() as f64) < g.min_person_height * h as f64 {
            return Err("come closer: you look small in the image");
        }
        if blob.x0 == 0 || blob.x1 + 1 == w {
            return Err("step fully into view (you are cut by the image's edge)");
        }
        if blob.y0 == 0 && blob.y1 + 1 == h {
            return Err("step back: head and feet are both out of view");
        }
        Ok(blob)
    }

    fn waiting_status(&self, problem: Option<&str>, progress: f64) -> Status {
        let pose = match self.start_pose {
            StartPose::ArmsDown => "arms down",
            StartPose::TPose => "arms out (T-pose)",
        };
        let reacquiring = self.status.reacquiring;
        let message = match (problem, reacquiring) {
            (Some(p), true) => format!("lost — {p}"),
            (Some(p), false) => p.to_string(),
            (None, true) => format!("lost — stand still, face the camera, {pose}, to re-acquire"),
            (None, false) => format!("step in, face the camera, {pose}, and stand still"),
        };
        Status {
            stage: Stage::WaitingForPerson,
            message,
            progress,
            reacquiring,
        }
    }
}

/// A blob whose outline is an edge of the background model rather than of
/// the frame is a ghost (module docs): `in_frame` and `in_model` are its
/// outline's edge support, [`vision::Segmenter::outline_edges`].
pub(crate) fn is_ghost(in_frame: f32, in_model: f32) -> bool {
    in_model > 1.5 * in_frame
}

#[cfg(test)]
mod tests {
    //! The guided start driven with synthetic facts at 30 frames/s on a
    //! 40 × 30 label image, with the default thresholds
    //! ([`GuideParams::default`]).

    use super::*;

    const FPS: f64 = 30.0;
    const W: usize = 40;
    const H: usize = 30;

    fn spec(background: Option<EmptyScene>) -> SessionSpec {
        SessionSpec {
            label_size: (W as u32, H as u32),
            background,
            ..SessionSpec::default()
        }
    }

    fn at(frame: usize) -> f64 {
        frame as f64 / FPS
    }

    /// A mask with one `w × h` rectangle at (`x0`, `y0`).
    fn rect(x0: usize, y0: usize, w: usize, h: usize) -> Vec<u8> {
        let mut m = vec![0; W * H];
        for y in y0..y0 + h {
            m[y * W + x0..y * W + x0 + w].fill(1);
        }
        m
    }

    /// A person-sized blob 10 × 20 pixels with its left edge at `x0`.
    fn person_at(x0: usize) -> Vec<u8> {
        rect(x0, 5, 10, 20)
    }

    /// The person at x = 15 on frames `from..to` keeps the guide waiting
    /// and is placed on frame `to`.
    fn placed_after_holding_still(g: &mut GuidedStart, from: usize, to: usize) {
        for k in from..to {
            assert_eq!(g.waiting(at(k), &person_at(15)), WaitingNext::Continue);
        }
        assert!(matches!(
            g.waiting(at(to), &person_at(15)),
            WaitingNext::Place(_)
        ));
    }

    /// A guide waiting for a person (background learned at frame 0).
    fn waiting() -> GuidedStart {
        let mut g = GuidedStart::new(&spec(None));
        g.learned(false);
        g
    }

    /// A guide tracking a person placed with 200 foreground pixels.
    fn tracking() -> GuidedStart {
        let mut g = waiting();
        g.placed(200);
        g
    }

    fn fit(residual: f64) -> StepReport {
        StepReport {
            residual,
            ess: 50.0,
            ..StepReport::default()
        }
    }

    /// Frames `frames` tracked with F `residual` and `area` foreground
    /// pixels (of 300 particles): each one keeps tracking.
    fn keeps_tracking(
        g: &mut GuidedStart,
        frames: std::ops::Range<usize>,
        residual: f64,
        area: usize,
    ) {
        for k in frames {
            assert_eq!(
                g.tracking(at(k), &fit(residual), area, 300),
                TrackingNext::Continue
            );
        }
    }

    #[test]
    fn a_still_empty_scene_is_learned_after_background_seconds() {
        let mut g = GuidedStart::new(&spec(None));
        assert_eq!(g.phase(), Phase::Background);
        assert_eq!(g.status().stage, Stage::LearningBackground);
        assert!(g.status().message.contains("step out of view"));
        // One second of still frames: frame 30 (31 frames summed).
        for k in 0..30 {
            assert_eq!(g.background(at(k), 0.0, k + 1), BackgroundNext::Continue);
            assert_eq!(g.status().progress, at(k));
        }
        assert_eq!(
            g.background(at(30), 0.0, 31),
            BackgroundNext::Learned("background learned from 31 still frames (1.0 s)".into())
        );
        g.learned(false);
        assert_eq!(g.phase(), Phase::Waiting);
        assert_eq!(g.status().stage, Stage::WaitingForPerson);
        assert_eq!(
            g.status().message,
            "step in, face the camera, arms down, and stand still"
        );
    }

    #[test]
    fn one_still_frame_is_not_a_background_even_with_zero_seconds() {
        let mut s = spec(None);
        s.guide.background_seconds = 0.0;
        let mut g = GuidedStart::new(&s);
        assert_eq!(g.background(at(0), 0.0, 1), BackgroundNext::Continue);
        assert!(matches!(
            g.background(at(1), 0.0, 2),
            BackgroundNext::Learned(_)
        ));
    }

    #[test]
    fn motion_restarts_the_count_and_a_provisional_model_sees_someone() {
        let mut g = GuidedStart::new(&spec(None));
        // Moving from the first frame: too short a still stretch for a
        // provisional model.
        assert_eq!(
            g.background(at(0), 0.05, 1),
            BackgroundNext::Moved(Provisional::None)
        );
        g.moved(0.05, None);
        assert_eq!(
            g.status().message,
            "the scene is moving (5.0 % of it changed): keep the camera still and step out of view"
        );
        // Still from frame 1 for 0.3 s (frames 1–10), then someone moves.
        for k in 1..=10 {
            assert_eq!(g.background(at(k), 0.0, k), BackgroundNext::Continue);
        }
        assert_eq!(
            g.background(at(11), 0.05, 11),
            BackgroundNext::Moved(Provisional::Take)
        );
        g.moved(0.05, Some(&person_at(15)));
        assert_eq!(
            g.status().message,
            "someone is in view: step out of view until the background is learned"
        );
        assert_eq!(g.status().progress, 0.0);
        // The provisional model is kept; against it the scene is empty now.
        assert_eq!(
            g.background(at(12), 0.05, 1),
            BackgroundNext::Moved(Provisional::Have)
        );
        g.moved(0.05, Some(&vec![0; W * H]));
        assert!(g.status().message.starts_with("the scene is moving"));
        // The count starts again at the first still frame, 13: learned
        // one second later.
        for k in 13..43 {
            assert_eq!(g.background(at(k), 0.0, k - 12), BackgroundNext::Continue);
        }
        assert!(matches!(
            g.background(at(43), 0.0, 31),
            BackgroundNext::Learned(_)
        ));
    }

    #[test]
    fn fixed_background_frames_are_taken_as_they_come() {
        let mut g = GuidedStart::new(&spec(Some(EmptyScene::FirstFrames(3))));
        assert_eq!(
            g.status().message,
            "learning the background from the first 3 frame(s)"
        );
        // Motion does not matter.
        assert_eq!(g.background(at(0), 0.5, 1), BackgroundNext::Continue);
        assert_eq!(g.status().progress, 1.0 / 3.0);
        assert_eq!(g.background(at(1), 0.5, 2), BackgroundNext::Continue);
        assert_eq!(
            g.background(at(2), 0.5, 3),
            BackgroundNext::Learned("background learned from 3 frame(s)".into())
        );
    }

    #[test]
    fn a_background_image_or_a_captured_frame_skips_learning() {
        let g = GuidedStart::new(&spec(Some(EmptyScene::Image("empty.png".into()))));
        assert_eq!(g.phase(), Phase::Waiting);
        assert_eq!(g.status().stage, Stage::WaitingForPerson);

        let mut g = GuidedStart::new(&spec(None));
        g.background_given();
        assert_eq!(g.phase(), Phase::Waiting);
        assert_eq!(g.status().stage, Stage::WaitingForPerson);
        // Once tracking, a captured background changes nothing.
        let mut g = tracking();
        g.background_given();
        assert_eq!(g.phase(), Phase::Tracking);
        assert_eq!(g.status().stage, Stage::Placing);
    }

    #[test]
    fn a_known_initial_pose_is_placed_after_the_background() {
        let mut g = GuidedStart::new(&spec(None));
        g.learned(true);
        assert_eq!(g.phase(), Phase::Waiting);
        assert_eq!(g.status().stage, Stage::Placing);
        assert_eq!(g.status().message, "starting from the given initial pose");
    }

    #[test]
    fn a_person_who_walks_in_is_placed_after_holding_still() {
        let mut g = waiting();
        // Walking in: 3 pixels a frame (IoU 7/13 with the frame before).
        for k in 0..5 {
            assert_eq!(
                g.waiting(at(k), &person_at(1 + 3 * k)),
                WaitingNext::Continue
            );
            assert_eq!(g.status().progress, 0.0);
            assert_eq!(g.status().message, "hold still, face the camera, arms down");
        }
        // Standing from frame 5 at x = 16 (the frame before was at 13):
        // still from frame 5, placed half a second later, at frame 20.
        for k in 5..20 {
            assert_eq!(g.waiting(at(k), &person_at(16)), WaitingNext::Continue);
            assert!((g.status().progress - (at(k) - at(5)) / 0.5).abs() < 1e-9);
        }
        let WaitingNext::Place(blob) = g.waiting(at(20), &person_at(16)) else {
            panic!("not placed at frame 20");
        };
        assert_eq!((blob.x0, blob.y0, blob.area), (16, 5, 200));
        // Placing is the session's: the memory waits for its answer.
        assert_eq!(g.phase(), Phase::Waiting);
        g.placed(blob.area);
        assert_eq!(g.phase(), Phase::Tracking);
        assert_eq!(g.status().stage, Stage::Placing);
        assert_eq!(g.status().message, "placed: tracking starts");
    }

    #[test]
    fn a_person_who_keeps_moving_is_not_placed() {
        let mut g = waiting();
        for k in 0..60 {
            let x = if k % 2 == 0 { 12 } else { 16 };
            assert_eq!(g.waiting(at(k), &person_at(x)), WaitingNext::Continue);
            assert_eq!(g.status().progress, 0.0);
        }
    }

    #[test]
    fn a_blob_that_is_not_person_sized_is_told_why_and_restarts_the_wait() {
        let mut g = waiting();
        for (mask, message) in [
            (
                vec![0; W * H],
                "step in, face the camera, arms down, and stand still",
            ),
            (
                rect(15, 5, 10, 5),
                "come closer: you look small in the image",
            ),
            (
                rect(0, 5, 10, 20),
                "step fully into view (you are cut by the image's edge)",
            ),
            (
                rect(15, 0, 10, H),
                "step back: head and feet are both out of view",
            ),
        ] {
            assert_eq!(g.waiting(at(0), &mask), WaitingNext::Continue);
            assert_eq!(g.status().message, message);
        }
        // Still for 0.4 s, then cut by the edge for a frame: the half
        // second starts again.
        for k in 0..13 {
            assert_eq!(g.waiting(at(k), &person_at(15)), WaitingNext::Continue);
        }
        assert_eq!(
            g.waiting(at(13), &rect(0, 5, 10, 20)),
            WaitingNext::Continue
        );
        placed_after_holding_still(&mut g, 14, 29);
    }

    #[test]
    fn a_failed_placing_waits_again_from_nothing() {
        let mut g = waiting();
        placed_after_holding_still(&mut g, 0, 15);
        g.wait_again(Some("the silhouette does not look like the start pose"));
        assert_eq!(g.status().stage, Stage::WaitingForPerson);
        assert_eq!(
            g.status().message,
            "the silhouette does not look like the start pose"
        );
        // The person must hold still for another half second.
        placed_after_holding_still(&mut g, 16, 31);
    }

    #[test]
    fn a_poor_fit_is_lost_after_lost_seconds_and_a_good_frame_resets_it() {
        let mut g = tracking();
        for k in 0..10 {
            assert_eq!(
                g.tracking(at(k), &fit(0.9), 200, 300),
                TrackingNext::Continue
            );
            assert_eq!(g.status().stage, Stage::Tracking);
            assert_eq!(g.status().message, "tracking (F 0.90, ESS 50/300)");
        }
        // One good frame: the second starts again at frame 11.
        keeps_tracking(&mut g, 10..11, 0.5, 200);
        keeps_tracking(&mut g, 11..41, 0.9, 200);
        assert_eq!(
            g.tracking(at(41), &fit(0.9), 200, 300),
            TrackingNext::Lost("the fit stayed poor for 1.0 s (F 0.90)".into())
        );
        assert_eq!(g.phase(), Phase::Waiting);
        let s = g.status();
        assert_eq!(s.stage, Stage::WaitingForPerson);
        assert!(s.reacquiring);
        assert_eq!(
            s.message,
            "lost — stand still, face the camera, arms down, to re-acquire"
        );
    }

    #[test]
    fn a_person_who_leaves_is_lost_after_left_seconds_and_reacquired() {
        let mut g = tracking();
        // Above a quarter of the placed 200 pixels: still there.
        keeps_tracking(&mut g, 0..30, 0.3, 60);
        // Below from frame 30: lost half a second later.
        keeps_tracking(&mut g, 30..45, 0.3, 40);
        assert_eq!(
            g.tracking(at(45), &fit(0.3), 40, 300),
            TrackingNext::Lost("the person left the view".into())
        );
        // Waiting again, re-acquiring, until placed.
        assert_eq!(g.waiting(at(46), &person_at(15)), WaitingNext::Continue);
        assert!(g.status().reacquiring);
        assert_eq!(g.status().message, "lost — hold still, face the camera");
        g.wait_again(Some("face the camera"));
        assert_eq!(g.status().message, "lost — face the camera");
        g.placed(200);
        assert!(!g.status().reacquiring);
    }

    #[test]
    fn facts_of_another_step_change_nothing() {
        let mut g = waiting();
        let before = g.status().clone();
        assert_eq!(g.background(at(0), 0.5, 1), BackgroundNext::Continue);
        g.moved(0.5, None);
        assert_eq!(g.tracking(at(0), &fit(0.9), 0, 300), TrackingNext::Continue);
        assert_eq!(g.phase(), Phase::Waiting);
        assert_eq!(g.status(), &before);
        let mut g = tracking();
        assert_eq!(g.waiting(at(0), &person_at(15)), WaitingNext::Continue);
        assert_eq!(g.phase(), Phase::Tracking);
    }

    #[test]
    fn a_ghost_has_its_outline_in_the_model() {
        assert!(is_ghost(1.0, 1.6));
        assert!(!is_ghost(1.0, 1.5));
        assert!(!is_ghost(2.0, 1.0));
    }
}

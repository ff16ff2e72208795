//! Tracking a whole source into files — what `posecloud track` runs: a
//! driver of the tracking session ([`crate::session::Session`]) over a
//! video, image folder or webcam. No set-up file is needed (default camera,
//! default body, the guided start); each one given overrides its default.
//! One CSV row per tracked frame (`frame` = source frame index), flushed as
//! it is tracked; the CSV and the BVH take their names when the run ends —
//! at the end of the source, after [`TrackRun::max_frames`], when the stop
//! flag is set (Ctrl-C) or on an error after tracking started
//! ([`crate::record`]). Progress is reported through a callback; nothing is
//! printed here.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use vision::open_source;

use crate::error::SessionError;
use crate::profile::Profile;
use crate::record::Recorder;
use crate::session::{Session, SessionStep};
use crate::smooth::{PathSmoother, Smoothing};
use crate::spec::{FilterSettings, SessionSpec};
use crate::tracker::FilterKind;

pub use crate::spec::check_init_pose;

/// A run: the session's specification and settings, and where it writes.
#[derive(Clone, Debug, PartialEq)]
pub struct TrackRun {
    pub spec: SessionSpec,
    pub settings: FilterSettings,
    /// Frame rate assumed for image sequences (they have no timestamps).
    pub fps: f64,
    /// `frame` (source frame index) then `<joint>_x,<joint>_y,<joint>_z`
    /// for every joint of the body (world positions, metres), one row per
    /// tracked frame.
    pub out_csv: PathBuf,
    /// The estimated motion as BVH (the body's hierarchy and channels).
    pub out_bvh: Option<PathBuf>,
    /// Stop after this many source frames.
    pub max_frames: Option<usize>,
    /// Keep every tracked frame's stage times ([`TrackSummary::profile`]).
    pub profile: bool,
}

impl TrackRun {
    /// A run of `frames` with the defaults: no camera or body file, the
    /// guided start, [`FilterSettings::default`].
    pub fn new(frames: impl Into<String>, out_csv: impl Into<PathBuf>) -> Self {
        Self {
            spec: SessionSpec {
                frames: frames.into(),
                ..SessionSpec::default()
            },
            settings: FilterSettings::default(),
            fps: vision::DEFAULT_SEQUENCE_FPS,
            out_csv: out_csv.into(),
            out_bvh: None,
            max_frames: None,
            profile: false,
        }
    }
}

/// What [`run_until`] reports as it goes.
pub enum Progress<'a> {
    /// The source is open and the session started (before the first frame).
    Opened(&'a Session),
    /// A source frame went through the session; `tracked` frames so far,
    /// `elapsed` seconds since the first frame.
    Step {
        session: &'a Session,
        step: &'a SessionStep,
        tracked: usize,
        elapsed: f64,
    },
    /// The run failed after `rows` frames were tracked: they were written.
    SavedBeforeError { rows: usize },
    /// Something went wrong that does not stop the run (e.g. finishing the
    /// outputs after an error).
    Warning(String),
}

/// What a run did (also printed at its end).
#[derive(Clone, Debug, PartialEq)]
pub struct TrackSummary {
    /// Frames tracked (rows of the CSV).
    pub frames: usize,
    /// Source frames read in all.
    pub source_frames: usize,
    /// Source frames the background model was learned from.
    pub background_frames: usize,
    /// The first tracked source frame (when tracking started).
    pub first_tracked: Option<usize>,
    /// Times the track was lost and re-acquisition began.
    pub lost: usize,
    /// Stopped by Ctrl-C (the stop flag).
    pub interrupted: bool,
    pub particles: usize,
    pub filter: FilterKind,
    /// D, the tracked parameters.
    pub dim: usize,
    /// The likelihood back end ([`crate::Tracker::describe`]).
    pub backend: String,
    /// Which camera was used, in words.
    pub camera: String,
    /// Which likelihood terms weighed the particles, in words.
    pub observation: String,
    /// Tracked frames per second (segmentation + tracker step).
    pub frames_per_second: f64,
    pub mean_segment_ms: f64,
    pub mean_step_ms: f64,
    /// Mean of the per-frame residual F (RTPF Table II).
    pub mean_residual: f64,
    /// Mean effective sample size.
    pub mean_ess: f64,
    pub csv: PathBuf,
    pub bvh: Option<PathBuf>,
    /// Per-stage wall times of the tracked frames, with
    /// [`TrackRun::profile`] (printed on its own: [`Profile`]'s table).
    pub profile: Option<Profile>,
}

impl std::fmt::Display for TrackSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "tracked {} of {} frames ({} background{}{}) with {} N = {}, D = {}: {:.1} frames/s \
             (segmentation {:.1} ms, tracker step {:.1} ms per frame)",
            self.frames,
            self.source_frames,
            self.background_frames,
            self.first_tracked
                .map_or(String::new(), |k| format!(", tracking from frame {k}")),
            if self.lost > 0 {
                format!(", lost {} time(s)", self.lost)
            } else {
                String::new()
            },
            self.filter.name(),
            self.particles,
            self.dim,
            self.frames_per_second,
            self.mean_segment_ms,
            self.mean_step_ms
        )?;
        writeln!(
            f,
            "mean residual F {:.4}, mean ESS {:.1} of {}; observation: {}; likelihood: {}; {}",
            self.mean_residual,
            self.mean_ess,
            self.particles,
            self.observation,
            self.backend,
            self.camera
        )?;
        if self.interrupted {
            writeln!(f, "stopped by Ctrl-C")?;
        }
        write!(f, "wrote {}", self.csv.display())?;
        if let Some(b) = &self.bvh {
            write!(f, " and {}", b.display())?;
        }
        Ok(())
    }
}

/// Tracks `run.spec.frames` until the source ends, `max_frames` source
/// frames were read, or `stop` is set (Ctrl-C), reporting to `progress`.
/// The outputs are complete in every one of these cases, and after an
/// error once tracking started.
///
/// # Errors
/// [`SessionError::Input`] naming the field and file for bad input (no
/// frames, a camera whose aspect ratio is not the frames', a body/init
/// mismatch, a non-finite initial pose, an out-of-range `--frame`,
/// `--particles 0`, unwritable outputs, a source that ends before tracking
/// started); [`SessionError::Track`] when the tracker fails.
pub fn run_until(
    run: &TrackRun,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<TrackSummary, SessionError> {
    run.settings.validate()?;
    // Before anything slow: a folder or a shared path is refused now, not
    // after the whole video was tracked.
    crate::record::check_paths(Some(&run.out_csv), run.out_bvh.as_deref())?;
    let frames_what = crate::error::named(crate::error::Field::Frames, &run.spec.frames);
    let source =
        open_source(&run.spec.frames, run.fps).map_err(|e| crate::error::input(&frames_what, e))?;
    let fps = source
        .fps()
        .filter(|f| f.is_finite() && *f > 0.0)
        .unwrap_or(run.fps);
    let mut session = Session::open(run.spec.clone(), run.settings.clone(), source, None)?;
    let recorder = Recorder::create(
        Some(&run.out_csv),
        run.out_bvh.as_deref(),
        session.body(),
        1.0 / fps,
    )?;
    progress(Progress::Opened(&session));
    let mut recorder = Some(recorder);
    let result = track_loop(
        run,
        &mut session,
        recorder.as_mut().expect("created"),
        stop,
        progress,
    );
    let recorder = recorder.take().expect("created");
    match result {
        Ok(mut summary) => {
            if summary.frames == 0 {
                recorder.abandon();
                return Err(crate::error::input(
                    frames_what,
                    format!(
                        "no frames were tracked: the source ended after {} frame(s) while {} ({})",
                        summary.source_frames,
                        session.status().stage.name(),
                        session.status().message
                    ),
                ));
            }
            let mut recorder = recorder;
            recorder.finish()?;
            summary.backend = session.describe_backend();
            Ok(summary)
        }
        Err(e) => {
            if recorder.rows() == 0 {
                recorder.abandon();
            } else {
                let mut recorder = recorder;
                match recorder.finish() {
                    Err(w) => progress(Progress::Warning(w.to_string())),
                    Ok(()) => progress(Progress::SavedBeforeError {
                        rows: recorder.rows(),
                    }),
                }
            }
            Err(e)
        }
    }
}

fn track_loop(
    run: &TrackRun,
    session: &mut Session,
    recorder: &mut Recorder,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<TrackSummary, SessionError> {
    let t_start = Instant::now();
    let (mut n, mut read, mut sum_f, mut sum_ess, mut seg_s, mut step_s) =
        (0usize, 0usize, 0.0, 0.0, 0.0, 0.0);
    let (mut first_tracked, mut lost, mut interrupted) = (None, 0usize, false);
    let mut dim = 0;
    let mut profile = run.profile.then(Profile::default);
    let mut smoother = match run.settings.smoothing {
        Smoothing::None => None,
        s => Some(PathSmoother::new(
            s,
            run.settings.smoothing_hand_speed,
            run.settings.smoothing_temperature,
        )?),
    };
    // The smoother's pending frames go to the recorder at the end, at a
    // restart of the track and before an error is returned.
    let flush = |smoother: &mut Option<PathSmoother>,
                 recorder: &mut Recorder|
     -> Result<(), SessionError> {
        if let Some(sm) = smoother.as_mut() {
            for o in sm.finish() {
                recorder.record_at(o.frame, o.timestamp, &o.pose)?;
            }
        }
        Ok(())
    };
    loop {
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        if run.max_frames.is_some_and(|m| read >= m) {
            break;
        }
        let t_frame = Instant::now();
        let step = match session.step() {
            Ok(Some(step)) => step,
            Ok(None) => break,
            Err(e) => {
                flush(&mut smoother, recorder)?;
                return Err(e);
            }
        };
        read += 1;
        if let Some(t) = &step.tracked {
            let t_output = Instant::now();
            match smoother.as_mut() {
                None => recorder.record_at(step.frame, step.timestamp, &t.pose)?,
                Some(sm) => {
                    if let Some(o) =
                        sm.push(step.frame, step.timestamp, t.modes.candidates.clone())?
                    {
                        recorder.record_at(o.frame, o.timestamp, &o.pose)?;
                    }
                }
            }
            if let Some(p) = profile.as_mut() {
                let mut times = t.times;
                times.output = t_output.elapsed();
                times.total = t_frame.elapsed();
                p.record(&times);
            }
            first_tracked.get_or_insert(step.frame);
            n += 1;
            sum_f += t.report.residual;
            sum_ess += t.report.ess;
            seg_s += t.segment_ms / 1e3;
            step_s += t.step_ms / 1e3;
            dim = session.tracker().map_or(0, |t| t.body().dim());
        }
        if step.event.as_deref().is_some_and(|e| e.starts_with("lost")) {
            lost += 1;
            // The track restarts later: its path ends here.
            flush(&mut smoother, recorder)?;
        }
        progress(Progress::Step {
            session,
            step: &step,
            tracked: n,
            elapsed: t_start.elapsed().as_secs_f64(),
        });
    }
    flush(&mut smoother, recorder)?;
    let per = |s: f64| 1e3 * s / n.max(1) as f64;
    Ok(TrackSummary {
        frames: n,
        source_frames: read,
        background_frames: session.background_frames(),
        first_tracked,
        lost,
        interrupted,
        particles: run.settings.particles,
        filter: run.settings.filter,
        dim,
        backend: session.describe_backend(),
        camera: session.camera_note().to_string(),
        observation: session.describe_observation(),
        frames_per_second: n as f64 / (seg_s + step_s).max(1e-9),
        mean_segment_ms: per(seg_s),
        mean_step_ms: per(step_s),
        mean_residual: sum_f / n.max(1) as f64,
        mean_ess: sum_ess / n.max(1) as f64,
        csv: run.out_csv.clone(),
        bvh: run.out_bvh.clone(),
        profile,
    })
}

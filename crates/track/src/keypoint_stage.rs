//! The keypoint stage of a tracking session ([`crate::session::Session`]):
//! BlazePose on its own thread ([`keypoints::AsyncDetector`]), where
//! [`crate::FilterSettings::keypoint_backend`] asks ([`keypoint_network`]);
//! frames are submitted with the person's box, the tracker waits for each
//! frame's detection, and a detection becomes the keypoint term's
//! observation ([`KeypointStage::observation`]).

use labels::Camera;
use vision::Frame;

use crate::backend::SharedDevice;
use crate::error::{SessionError, input};
use crate::keypoint_term::{KeypointMap, KeypointObservation};
use crate::session::{KEYPOINT_MIN_SCORE, Result};

/// The keypoint network a session runs (the embedded model,
/// [`keypoints::DEFAULT_MODEL_NAME`]).
const KEYPOINT_MODEL: &str = "BlazePose full";
/// Longest the tracker waits for the detector's result on a frame.
const DETECTION_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The keypoint detector of a session: BlazePose on its own thread, one
/// frame *ahead* of the tracker. While the tracker steps frame k with frame
/// k's own detection, the detector works on frame k + 1, read ahead of its
/// turn (its person box from the last estimate); the tracker waits for
/// each detection, so a run is the same whatever the machine's speed, and
/// frame k's estimate is out before frame k + 2 is read. (Until the
/// look-ahead, frame k was weighed with frame k − 1's detection: a frame
/// of lag that fast arms pay for, [`crate::FilterSettings::lagged_detections`].)
pub(crate) struct KeypointStage {
    pub(crate) detector: keypoints::AsyncDetector,
    /// The setting it was built for ([`crate::FilterSettings::keypoint_backend`]).
    pub(crate) backend: keypoints::DetectorBackend,
    /// Where the network runs, in words ([`crate::Session::describe_keypoints`]).
    pub(crate) description: String,
    pub(crate) map: KeypointMap,
    /// The frame submitted last, whose result the next step waits for.
    pub(crate) pending: Option<usize>,
    /// The last detection and its frame.
    pub(crate) latest: Option<(usize, keypoints::Keypoints)>,
}

impl KeypointStage {
    /// Submits `frame` with the person's box `person`; its result is the
    /// one the next wait expects.
    pub(crate) fn submit(&mut self, frame: &Frame, person: keypoints::PersonBox) -> Result<()> {
        let what = format!("keypoints on frame {}", frame.index);
        self.detector
            .submit(
                frame.index as u64,
                &frame.rgb,
                frame.width,
                frame.height,
                person,
            )
            .map_err(|e| input(&what, e))?;
        self.pending = Some(frame.index);
        Ok(())
    }

    /// Waits for frame `f`'s detection and keeps it as the latest.
    pub(crate) fn wait(&mut self, f: usize) -> Result<()> {
        // Its result, or at once `None` when a newer frame replaced it
        // before the worker took it (the newest detection then stays);
        // a hung or panicked detector is an error naming the stage.
        let done = self
            .detector
            .wait_for(f as u64, DETECTION_WAIT)
            .map_err(|e| input(format!("keypoints on frame {f}"), e))?;
        if let Some(d) = done
            && let Ok(kp) = d.result
        {
            self.latest = Some((d.frame as usize, kp));
        }
        Ok(())
    }

    /// The latest detection as the keypoint term's observation of `frame`
    /// in the label image of `camera`, when it is at most `max_age` frames
    /// old.
    pub(crate) fn observation(
        &self,
        frame: &Frame,
        max_age: usize,
        camera: &Camera,
    ) -> Option<KeypointObservation> {
        self.latest
            .as_ref()
            .filter(|(f, _)| *f <= frame.index && frame.index - *f <= max_age)
            .map(|(_, kp)| {
                KeypointObservation::from_keypoints(
                    kp,
                    &self.map,
                    frame.width,
                    frame.height,
                    camera,
                    KEYPOINT_MIN_SCORE,
                )
            })
    }
}

/// BlazePose full (the embedded model) where
/// [`crate::FilterSettings::keypoint_backend`] asks, and that in words: on the
/// session's device (the app's) when it has one, else on a headless
/// one, which `Auto` passes over for tract when it is a software
/// adapter or there is none.
///
/// # Errors
/// [`SessionError::KeypointBackend`]: `Gpu` and no adapter, or a device
/// that cannot run the network.
pub(crate) fn keypoint_network(
    backend: keypoints::DetectorBackend,
    shared: Option<&SharedDevice>,
) -> Result<(keypoints::Detector, String)> {
    use keypoints::{Detector, DetectorBackend, DetectorOptions, GpuDevice};
    let fail = |source| SessionError::KeypointBackend { backend, source };
    let options = DetectorOptions {
        backend,
        ..DetectorOptions::default()
    };
    let device = match (backend, shared) {
        (DetectorBackend::Cpu, _) => None,
        (_, Some(s)) => Some(Ok(GpuDevice::from_parts(
            s.device.clone(),
            s.queue.clone(),
            s.device.adapter_info(),
        ))),
        (_, None) => Some(GpuDevice::headless()),
    };
    let (detector, not_gpu) = match device {
        None => (Detector::new_with(options).map_err(fail)?, None),
        Some(Ok(device)) => {
            let d = Detector::new_on(&device, options).map_err(fail)?;
            if d.uses_gpu() {
                let whose = if shared.is_some() {
                    ", the app's device"
                } else {
                    ""
                };
                let line = format!(
                    "{KEYPOINT_MODEL} on {} (GPU, {}{whose})",
                    device.info.name, device.info.backend
                );
                return Ok((d, line));
            }
            let why = d.why_not_gpu().map(str::to_string);
            (d, why)
        }
        Some(Err(e)) if backend == DetectorBackend::Auto => {
            let cpu = DetectorOptions {
                backend: DetectorBackend::Cpu,
                ..options
            };
            (Detector::new_with(cpu).map_err(fail)?, Some(e.to_string()))
        }
        Some(Err(e)) => return Err(fail(e)),
    };
    let mut line = format!("{KEYPOINT_MODEL} on the CPU (tract)");
    if let Some(why) = not_gpu {
        line += &format!("; not the GPU: {why}");
    }
    Ok((detector, line))
}

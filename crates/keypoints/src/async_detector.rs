//! The detector on its own thread: the caller submits frames and polls the
//! latest finished result, never waiting for the network.
//!
//! One request slot, latest wins: a frame submitted while the worker is busy
//! replaces any frame still waiting, so the worker always starts on the
//! newest frame and results lag by at most one inference plus one frame.
//!
//! A caller that needs a frame's result waits with
//! [`AsyncDetector::wait_for`], which returns as soon as that frame (or a
//! later one) is detected, or at once when the frame was replaced before
//! the worker took it — never the whole timeout for a frame that will not
//! come. A panic inside the network is caught on the worker: it becomes
//! that frame's error, the worker stops, and every later call says so
//! (with the panic's message) instead of stalling.

use crate::{Detector, Error, Keypoints, PersonBox, Result, Roi, roi::check_image};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A finished detection and the frame it belongs to.
#[derive(Clone, Debug)]
pub struct Detection {
    /// The caller's frame index given to [`AsyncDetector::submit`].
    pub frame: u64,
    pub result: Result<Keypoints>,
}

/// Where to look in a submitted frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Region {
    /// A person box, widened to the model's ROI as [`Detector::detect`]
    /// does.
    Person(PersonBox),
    /// An explicit ROI, as [`Detector::detect_in_roi`] takes it (e.g. the
    /// previous result's [`Keypoints::tracking_roi`]).
    Roi(Roi),
}

impl From<PersonBox> for Region {
    fn from(person: PersonBox) -> Self {
        Self::Person(person)
    }
}

impl From<Roi> for Region {
    fn from(roi: Roi) -> Self {
        Self::Roi(roi)
    }
}

struct Request {
    frame: u64,
    rgb: Vec<u8>,
    width: u32,
    height: u32,
    region: Region,
}

#[derive(Default)]
struct Slots {
    pending: Option<Request>,
    latest: Option<Detection>,
    busy: bool,
    /// The frame the worker is running the network on.
    running: Option<u64>,
    stop: bool,
    /// The newest frame replaced in the slot before the worker took it.
    superseded: Option<u64>,
    /// The worker ended: the panic's message, or `None` for a clean stop.
    ended: Option<Option<String>>,
    /// A spare frame buffer, so steady-state submissions do not allocate.
    spare: Vec<u8>,
}

struct Shared {
    slots: Mutex<Slots>,
    /// Wakes the worker: a frame is waiting, or stop.
    wake: Condvar,
    /// Wakes [`AsyncDetector::wait_for`]: a result, a replaced frame, or
    /// the worker's end.
    done: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Slots> {
        // A panic in the worker cannot leave the slots inconsistent (each
        // update is one assignment), so a poisoned lock is still usable.
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A [`Detector`] running on a background thread.
pub struct AsyncDetector {
    shared: Arc<Shared>,
    worker: Option<JoinHandle<()>>,
}

impl AsyncDetector {
    /// Starts the worker thread (named `keypoints`).
    pub fn spawn(detector: Detector) -> Result<Self> {
        let shared = Arc::new(Shared {
            slots: Mutex::new(Slots::default()),
            wake: Condvar::new(),
            done: Condvar::new(),
        });
        let for_worker = Arc::clone(&shared);
        let worker = std::thread::Builder::new()
            .name("keypoints".into())
            .spawn(move || run_worker(detector, &for_worker))
            .map_err(|_| Error::WorkerStopped)?;
        Ok(Self {
            shared,
            worker: Some(worker),
        })
    }

    /// Queues a frame and where to look in it (a [`PersonBox`] or a
    /// [`Roi`]), replacing any frame still waiting. Copies `rgb`; checks its
    /// size and a person box at once. Returns `true` when a waiting frame
    /// was dropped in favour of this one.
    pub fn submit(
        &self,
        frame: u64,
        rgb: &[u8],
        width: u32,
        height: u32,
        region: impl Into<Region>,
    ) -> Result<bool> {
        check_image(rgb, width, height)?;
        let region = region.into();
        if let Region::Person(person) = region {
            person.validate(width, height)?;
        }
        let mut slots = self.shared.lock();
        if let Some(ended) = &slots.ended {
            return Err(stopped(ended.as_deref()));
        }
        if self.worker.as_ref().is_none_or(|w| w.is_finished()) {
            return Err(Error::WorkerStopped);
        }
        let (mut buffer, dropped) = match slots.pending.take() {
            Some(old) => {
                slots.superseded = Some(slots.superseded.map_or(old.frame, |s| s.max(old.frame)));
                (old.rgb, true)
            }
            None => (std::mem::take(&mut slots.spare), false),
        };
        buffer.clear();
        buffer.extend_from_slice(rgb);
        slots.pending = Some(Request {
            frame,
            rgb: buffer,
            width,
            height,
            region,
        });
        drop(slots);
        self.shared.wake.notify_one();
        if dropped {
            self.shared.done.notify_all();
        }
        Ok(dropped)
    }

    /// Waits at most `timeout` for the result of frame `frame` (or of a
    /// later frame): `Some(detection)`, or `None` at once when `frame` was
    /// replaced by a newer one before the worker took it (it will never be
    /// detected).
    ///
    /// # Errors
    /// [`Error::Inference`] naming the frame and the seconds waited when no
    /// result came in time (the detector is slower than `timeout` per
    /// frame, or hung), or the panic's message when the network panicked;
    /// [`Error::WorkerStopped`] when the worker has ended.
    pub fn wait_for(&self, frame: u64, timeout: Duration) -> Result<Option<Detection>> {
        let deadline = Instant::now() + timeout;
        let mut slots = self.shared.lock();
        loop {
            if let Some(d) = slots.latest.as_ref().filter(|d| d.frame >= frame) {
                return Ok(Some(d.clone()));
            }
            let coming = slots.running == Some(frame)
                || slots.pending.as_ref().is_some_and(|r| r.frame == frame);
            if slots.superseded.is_some_and(|s| s >= frame) && !coming {
                return Ok(None);
            }
            if let Some(ended) = &slots.ended {
                return Err(stopped(ended.as_deref()));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::Inference(format!(
                    "the keypoint detector gave no result for frame {frame} in {:.1} s",
                    timeout.as_secs_f64()
                )));
            }
            slots = self
                .shared
                .done
                .wait_timeout(slots, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Stops the worker and waits for it (at most the inference in
    /// flight).
    ///
    /// # Errors
    /// [`Error::Inference`] with the message of a panic that ended the
    /// worker.
    pub fn shutdown(mut self) -> Result<()> {
        self.stop_worker()
    }

    fn stop_worker(&mut self) -> Result<()> {
        self.shared.lock().stop = true;
        self.shared.wake.notify_all();
        let Some(worker) = self.worker.take() else {
            return Ok(());
        };
        let joined = worker.join();
        match (joined, &self.shared.lock().ended) {
            (Err(p), _) => Err(stopped(Some(&panic_text(p.as_ref())))),
            (Ok(()), Some(Some(m))) => Err(stopped(Some(m))),
            _ => Ok(()),
        }
    }

    /// The most recent finished detection, if any (a clone; polling does not
    /// consume it).
    pub fn latest(&self) -> Option<Detection> {
        self.shared.lock().latest.clone()
    }

    /// Frame index of the most recent finished detection.
    pub fn latest_frame(&self) -> Option<u64> {
        self.shared.lock().latest.as_ref().map(|d| d.frame)
    }

    /// Whether the worker is running the network or has a frame waiting.
    pub fn busy(&self) -> bool {
        let slots = self.shared.lock();
        slots.busy || slots.pending.is_some()
    }
}

impl Drop for AsyncDetector {
    fn drop(&mut self) {
        // Waits for at most the inference in flight. A panic was already
        // reported to the caller as that frame's error; said once more
        // here, since a drop cannot return it.
        if let Err(e) = self.stop_worker() {
            eprintln!("keypoints: {e}");
        }
    }
}

/// The error of a call after the worker ended (`panic`: its message).
fn stopped(panic: Option<&str>) -> Error {
    match panic {
        Some(m) => Error::Inference(format!("the keypoint detector panicked: {m}")),
        None => Error::WorkerStopped,
    }
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

fn run_worker(detector: Detector, shared: &Shared) {
    let mut slots = shared.lock();
    loop {
        if slots.stop {
            slots.ended = Some(None);
            drop(slots);
            shared.done.notify_all();
            return;
        }
        let Some(request) = slots.pending.take() else {
            slots = shared.wake.wait(slots).unwrap_or_else(|p| p.into_inner());
            continue;
        };
        slots.busy = true;
        slots.running = Some(request.frame);
        drop(slots);
        let Request {
            frame,
            rgb,
            width,
            height,
            region,
        } = request;
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            #[cfg(test)]
            if frame == PANIC_FRAME {
                panic!("a test panic on frame {frame}");
            }
            match region {
                Region::Person(person) => detector.detect(&rgb, width, height, person),
                Region::Roi(roi) => detector.detect_in_roi(&rgb, width, height, roi),
            }
        }));
        slots = shared.lock();
        slots.busy = false;
        slots.running = None;
        match run {
            Ok(result) => slots.latest = Some(Detection { frame, result }),
            Err(p) => {
                // The network's state after a panic is unknown: the frame
                // gets the panic as its error and the worker stops.
                let message = panic_text(p.as_ref());
                slots.latest = Some(Detection {
                    frame,
                    result: Err(stopped(Some(&message))),
                });
                slots.ended = Some(Some(message));
                drop(slots);
                shared.done.notify_all();
                return;
            }
        }
        if slots.spare.capacity() < rgb.capacity() {
            slots.spare = rgb;
        }
        drop(slots);
        shared.done.notify_all();
        slots = shared.lock();
    }
}

/// A frame index the worker panics on (tests of the panic path).
#[cfg(test)]
const PANIC_FRAME: u64 = u64::MAX - 7;

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker over the bundled model, and a grey `side × side` frame.
    fn worker_and_frame(side: u32) -> (AsyncDetector, Vec<u8>) {
        let d = AsyncDetector::spawn(Detector::new().unwrap()).unwrap();
        (d, vec![90u8; (side * side * 3) as usize])
    }

    /// A frame replaced before the worker took it is answered at once
    /// (`None`), not after the whole wait; its successor is detected.
    #[test]
    fn a_replaced_frame_is_answered_without_waiting_out_the_timeout() {
        let (d, rgb) = worker_and_frame(64);
        let (w, h) = (64, 64);
        let person = PersonBox::new(8.0, 4.0, 56.0, 60.0);
        // The worker takes frame 1; 2 waits and is replaced by 3 (the
        // network takes far longer than three submissions).
        d.submit(1, &rgb, w, h, person).unwrap();
        let mut replaced = false;
        for k in 2..=3 {
            replaced |= d.submit(k, &rgb, w, h, person).unwrap();
        }
        let long = Duration::from_secs(600);
        let two = d.wait_for(2, long).unwrap();
        assert!(
            two.as_ref().is_none_or(|x| x.frame >= 2),
            "frame 2: {two:?}"
        );
        if replaced {
            // Dropped unseen: answered at once, before frame 3's result.
            assert!(two.is_none(), "frame 2: {two:?}");
        }
        let three = d.wait_for(3, long).unwrap().unwrap();
        assert_eq!(three.frame, 3);
        d.shutdown().unwrap();
    }

    /// A panic in the network is that frame's error and ends the worker:
    /// waits and submissions say so at once, and `shutdown` returns it.
    #[test]
    fn a_worker_panic_is_reported_not_a_stall() {
        let (d, rgb) = worker_and_frame(32);
        let (w, h) = (32, 32);
        let person = PersonBox::new(2.0, 2.0, 30.0, 30.0);
        d.submit(PANIC_FRAME, &rgb, w, h, person).unwrap();
        let got = d
            .wait_for(PANIC_FRAME, Duration::from_secs(600))
            .unwrap()
            .unwrap();
        let m = got.result.unwrap_err().to_string();
        assert!(m.contains("panicked") && m.contains("test panic"), "{m}");
        let m = d
            .wait_for(PANIC_FRAME + 1, Duration::from_secs(600))
            .unwrap_err()
            .to_string();
        assert!(m.contains("panicked"), "{m}");
        let m = d
            .submit(PANIC_FRAME + 2, &rgb, w, h, person)
            .unwrap_err()
            .to_string();
        assert!(m.contains("panicked"), "{m}");
        let m = d.shutdown().unwrap_err().to_string();
        assert!(m.contains("test panic"), "{m}");
    }
}

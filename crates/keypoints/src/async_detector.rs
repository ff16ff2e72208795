//! The detector on its own thread: the caller submits frames and polls the
//! latest finished result, never waiting for the network.
//!
//! One request slot, latest wins: a frame submitted while the worker is busy
//! replaces any frame still waiting, so the worker always starts on the
//! newest frame and results lag by at most one inference plus one frame.

use crate::{Detector, Error, Keypoints, PersonBox, Result, Roi, roi::check_image};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

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
    stop: bool,
    /// A spare frame buffer, so steady-state submissions do not allocate.
    spare: Vec<u8>,
}

struct Shared {
    slots: Mutex<Slots>,
    wake: Condvar,
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
        if self.worker.as_ref().is_none_or(|w| w.is_finished()) {
            return Err(Error::WorkerStopped);
        }
        let mut slots = self.shared.lock();
        let (mut buffer, dropped) = match slots.pending.take() {
            Some(old) => (old.rgb, true),
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
        Ok(dropped)
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
        self.shared.lock().stop = true;
        self.shared.wake.notify_all();
        if let Some(worker) = self.worker.take() {
            // Waits for at most the inference in flight.
            let _ = worker.join();
        }
    }
}

fn run_worker(detector: Detector, shared: &Shared) {
    let mut slots = shared.lock();
    loop {
        if slots.stop {
            return;
        }
        let Some(request) = slots.pending.take() else {
            slots = shared.wake.wait(slots).unwrap_or_else(|p| p.into_inner());
            continue;
        };
        slots.busy = true;
        drop(slots);
        let Request {
            frame,
            rgb,
            width,
            height,
            region,
        } = request;
        let result = match region {
            Region::Person(person) => detector.detect(&rgb, width, height, person),
            Region::Roi(roi) => detector.detect_in_roi(&rgb, width, height, roi),
        };
        slots = shared.lock();
        slots.busy = false;
        slots.latest = Some(Detection { frame, result });
        if slots.spare.capacity() < rgb.capacity() {
            slots.spare = rgb;
        }
    }
}

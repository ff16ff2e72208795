//! Heap allocations of a tracker step in steady state, counted by a global
//! allocator (its own test binary: the allocator is the whole binary's).
//!
//! A step after warm-up (same N, same skeleton), publishing its
//! [`TrackFrame`], allocates nothing: its vectors, the simplex's, the
//! flips' and lifts' and the scorer's are kept from step to step and grow
//! only to their high-water mark — the first step sizes them for N, and a
//! step that meets more simplex groups or arm targets than any before
//! grows those once. So the test counts the fewest of steps 3–5, at N =
//! 200 and 2,000. Copying the frame into one already filled (what the
//! window's snapshot does every frame) allocates nothing.
//!
//! Everything runs in a one-thread rayon pool so that the counted thread
//! does all the work: a thread-local switch counts that thread only, and
//! rayon's own bookkeeping (job queues sized by the thread count) does
//! not change from run to run.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use labels::Observation;
use track::synthetic::{level_camera, render_observation, upper_body_parts};
use track::{
    BackendChoice, FilterKind, ObservationMode, TrackFrame, TrackedBody, Tracker, TrackerConfig,
};
use track::{KeypointMap, KeypointObservation};

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<usize> = const { Cell::new(0) };
}

fn count_one() {
    // `try_with`: the allocator also runs while thread-locals are torn down.
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
        }
    });
}

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counting touches only const-initialised thread-locals, which never
// allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocations (and reallocations) `f` makes on this thread.
fn allocations<T>(f: impl FnOnce() -> T) -> (usize, T) {
    COUNT.with(|c| c.set(0));
    COUNTING.with(|on| on.set(true));
    let out = f();
    COUNTING.with(|on| on.set(false));
    (COUNT.with(Cell::get), out)
}

fn arm_pose(body: &TrackedBody, elbow: f64) -> Vec<f64> {
    let skel = body.skeleton();
    let mut pose = body.base().to_vec();
    let sh = skel.param_range(skel.find("r_shoulder").unwrap()).start;
    let el = skel.param_range(skel.find("r_elbow").unwrap()).start;
    pose[sh + 1] = -0.5;
    pose[sh] = 0.3;
    pose[el] = elbow;
    pose
}

/// The fewest allocations of steps 3–5 of a tracker of `n` particles, and
/// of copying step 5's frame into a copy of step 4's.
fn step_allocations(config: &TrackerConfig, n: usize) -> (usize, usize) {
    let body = TrackedBody::rtpf_upper_body();
    let cam = level_camera([0.4, 1.3, 3.5], [0.0, 1.2, 0.0], 35.0, 80, 60).unwrap();
    let map = upper_body_parts();
    let truth: Vec<Vec<f64>> = (0..5)
        .map(|k| arm_pose(&body, 0.5 + 0.1 * k as f64))
        .collect();
    let obs: Vec<Observation> = truth
        .iter()
        .enumerate()
        .map(|(k, p)| render_observation(&body, &cam, p, &map, 0.01, k as u64).unwrap())
        .collect();
    let kmap = KeypointMap::for_body(&body);
    let detections: Vec<KeypointObservation> = truth
        .iter()
        .map(|p| {
            let world = body.skeleton().forward_kinematics(p).unwrap();
            KeypointObservation::from_pixels(&kmap, &kmap.project(&world, &cam))
        })
        .collect();
    let config = TrackerConfig {
        particles: n,
        label_map: map,
        ..config.clone()
    };
    let mut tracker = Tracker::new(body, cam, &truth[0], None, config).unwrap();
    let mut copy = TrackFrame::default();
    let (mut step, mut copied) = (usize::MAX, 0);
    for (k, (o, det)) in obs.iter().zip(&detections).enumerate() {
        tracker.set_keypoints(Some(det.clone())).unwrap();
        let (count, r) = allocations(|| tracker.step(o).map(|_| ()));
        r.unwrap();
        if k >= 2 {
            step = step.min(count);
        }
        (copied, ()) = allocations(|| copy.clone_from(tracker.frame()));
        assert_eq!(&copy, tracker.frame());
        eprintln!(
            "N = {n}, step {}: {count} allocations, copying the frame {copied}",
            k + 1
        );
    }
    (step, copied)
}

#[test]
fn a_step_in_steady_state_allocates_nothing_and_a_frame_copy_nothing() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    pool.install(|| {
        for config in [
            TrackerConfig {
                filter: FilterKind::Pfs,
                backend: BackendChoice::Cpu,
                ..TrackerConfig::default()
            },
            TrackerConfig {
                filter: FilterKind::Hkfs,
                backend: BackendChoice::Cpu,
                partitioned: true,
                observation: ObservationMode::Both,
                ..TrackerConfig::default()
            },
            TrackerConfig {
                filter: FilterKind::Hspc,
                backend: BackendChoice::Cpu,
                partitioned: true,
                ..TrackerConfig::default()
            },
            // The app's filter: a simplex per partition, flips, lifts.
            TrackerConfig {
                filter: FilterKind::Pfrth,
                backend: BackendChoice::Cpu,
                partitioned: true,
                observation: ObservationMode::Both,
                ..TrackerConfig::default()
            },
        ] {
            let ((small, copy_small), (large, copy_large)) = (
                step_allocations(&config, 200),
                step_allocations(&config, 2000),
            );
            eprintln!(
                "{} (partitioned: {}, {}): a step {small} allocations at N = 200, {large} at N = 2000",
                config.filter.name(),
                config.partitioned,
                config.observation
            );
            assert_eq!((small, large), (0, 0), "{config:?}");
            assert_eq!((copy_small, copy_large), (0, 0), "{config:?}");
        }
    });
}

//! The solver runtime: every kind of scene is a [`Solver`] that the app
//! drives without knowing which algorithm it is.
//!
//! A solver runs on its own thread ([`Pacing::Budget`]): each displayed
//! frame sends a *tick*; the solver thread answers it by stepping for at
//! most the time budget (at least one step) and then publishes a snapshot.
//! The frame only ever reads the latest published snapshot — it never
//! waits for the solver, so the frame rate does not depend on the particle
//! count. Edits (targets, settings, reset) reach the solver as messages
//! and are applied between two steps.
//!
//! Deterministic replays (`--fixed-dt` scripts) use [`Pacing::Inline`]:
//! the frame itself runs a fixed number of steps synchronously, so a
//! script produces the same result on any machine.
//!
//! Snapshots are double-buffered: the runtime refills the buffer the frame
//! has let go of, so publishing allocates nothing in the steady state.

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Result;

/// A solver the app can drive: step, publish, accept edits.
pub trait Solver: Send + 'static {
    /// What the frame draws and shows (estimate, cloud, diagnostics).
    type Snapshot: Default + Send + Sync + 'static;
    /// An edit from the user (a target moved, a setting changed, …).
    type Edit: Send + 'static;

    /// Applies an edit; on error the solver keeps its previous state.
    fn apply(&mut self, edit: Self::Edit) -> Result<()>;
    /// Back to the scene's initial state.
    fn reset(&mut self) -> Result<()>;
    /// One unit of work (an SMC iteration, a tracked frame, a physics
    /// step) at the app's clock `time` (seconds).
    fn step(&mut self, time: f64) -> Result<()>;
    /// Fixed steps per frame for inline replays (default one: a frame of a
    /// clip per displayed frame).
    fn steps_per_frame(&self) -> usize {
        1
    }
    /// Time budget per frame for the threaded runtime (default 1 ms: the
    /// runtime always takes one step, so one step per tick).
    fn budget(&self) -> Duration {
        Duration::from_millis(1)
    }
    /// Writes the current state into `out` (reusing its allocations).
    fn snapshot_into(&self, out: &mut Self::Snapshot);
}

/// Real-time play of a clip on the app's clock: when its next frame is due.
#[derive(Clone, Copy, Debug)]
pub struct ClipClock {
    /// Seconds between the clip's frames.
    frame_time: f64,
    due: f64,
}

impl ClipClock {
    /// The clock of a clip of `frame_time` seconds a frame, its first frame
    /// due at once.
    pub fn new(frame_time: f64) -> Self {
        Self {
            frame_time,
            due: 0.0,
        }
    }

    /// Whether to play the next frame at the app's clock `time`: always
    /// unless `realtime`; in real time once it is due (until then it sleeps
    /// a millisecond, giving the core back instead of spinning). A frame
    /// played makes the next one due a frame time later.
    pub fn frame_due(&mut self, realtime: bool, time: f64) -> bool {
        if realtime && time < self.due {
            std::thread::sleep(Duration::from_millis(1));
            return false;
        }
        self.due = time.max(self.due) + self.frame_time;
        true
    }
}

/// Frames of history a clip scene keeps for its plots.
pub const PLOT_HISTORY: usize = 600;

/// Appends a frame's `sample` to a clip scene's plot `history`, dropping
/// the oldest beyond [`PLOT_HISTORY`] frames.
pub fn push_history<T>(history: &mut VecDeque<T>, sample: T) {
    if history.len() == PLOT_HISTORY {
        history.pop_front();
    }
    history.push_back(sample);
}

/// Where a clip scene stands for its snapshot: `(shown, frames)`, the frame
/// shown (the last one stepped; 0 before the first step) of a clip of
/// `frames` frames whose next frame to step is `next`.
pub fn clip_position(next: usize, frames: usize) -> (usize, usize) {
    (next.saturating_sub(1).min(frames - 1), frames)
}

/// What every snapshot carries besides the solver's own data.
#[derive(Clone, Debug, Default)]
pub struct Published<T> {
    /// The solver's data.
    pub data: T,
    /// Edits applied so far (compare with [`SolverRuntime::sent`]).
    pub applied: u64,
    /// Steps since start (or the last reset).
    pub steps: u64,
    /// Wall time of the last slice (ms) and its step count.
    pub slice_ms: f64,
    pub slice_steps: usize,
    /// Steps per second, smoothed over about half a second.
    pub steps_per_second: f64,
    /// Publications so far (a frame sees whether anything new arrived).
    pub version: u64,
    /// Whether the solver is paused.
    pub paused: bool,
    /// The last error of an edit or a step (the solver pauses on a step
    /// error); cleared by the next successful edit or reset.
    pub error: Option<String>,
}

/// How the solver is paced.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pacing {
    /// On its own thread, at most the solver's budget per frame tick.
    Budget,
    /// On the frame's thread, [`Solver::steps_per_frame`] steps per tick
    /// (deterministic replays).
    Inline,
}

enum Message<E> {
    Edit(E),
    Reset,
    Pause(bool),
    SingleStep,
    Tick(f64),
}

/// The solver's side: the solver plus its bookkeeping.
struct Worker<S: Solver> {
    solver: S,
    latest: Arc<Mutex<Arc<Published<S::Snapshot>>>>,
    spare: Option<Arc<Published<S::Snapshot>>>,
    applied: u64,
    steps: u64,
    version: u64,
    paused: bool,
    single_step: bool,
    clock: f64,
    tick_pending: bool,
    error: Option<String>,
    rate: f64,
    rate_clock: Option<Instant>,
}

impl<S: Solver> Worker<S> {
    fn new(solver: S, latest: Arc<Mutex<Arc<Published<S::Snapshot>>>>) -> Self {
        Self {
            solver,
            latest,
            spare: None,
            applied: 0,
            steps: 0,
            version: 0,
            paused: false,
            single_step: false,
            clock: 0.0,
            tick_pending: false,
            error: None,
            rate: 0.0,
            rate_clock: None,
        }
    }

    fn handle(&mut self, m: Message<S::Edit>) {
        match m {
            Message::Edit(e) => {
                self.applied += 1;
                match self.solver.apply(e) {
                    Ok(()) => self.error = None,
                    Err(e) => self.error = Some(format!("{e:#}")),
                }
            }
            Message::Reset => {
                self.applied += 1;
                match self.solver.reset() {
                    Ok(()) => {
                        self.error = None;
                        self.steps = 0;
                    }
                    Err(e) => self.error = Some(format!("reset: {e:#}")),
                }
            }
            Message::Pause(p) => self.paused = p,
            Message::SingleStep => self.single_step = true,
            Message::Tick(t) => {
                self.clock = t;
                self.tick_pending = true;
            }
        }
    }

    /// Runs one slice: `Some(n)` steps exactly, or steps until `budget`
    /// is spent (at least one). Between steps, `drain` may apply edits.
    fn slice(&mut self, fixed: Option<usize>, mut drain: impl FnMut(&mut Self)) {
        let run = std::mem::take(&mut self.tick_pending);
        let single = std::mem::take(&mut self.single_step);
        let start = Instant::now();
        let mut n = 0usize;
        if single || (run && !self.paused) {
            let budget = self.solver.budget();
            loop {
                // A panic in the solver is an error the window shows (the
                // scene pauses; Reset restarts it), not a silent stop of
                // the solver thread behind the last snapshot.
                let clock = self.clock;
                let solver = &mut self.solver;
                let stepped =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| solver.step(clock)));
                let failed = match stepped {
                    Ok(Ok(())) => None,
                    Ok(Err(e)) => Some(format!("solver: {e:#}")),
                    Err(payload) => Some(format!(
                        "the solver panicked: {} (paused; Reset restarts the scene)",
                        panic_message(payload.as_ref())
                    )),
                };
                if let Some(e) = failed {
                    self.error = Some(e);
                    self.paused = true;
                    break;
                }
                n += 1;
                self.steps += 1;
                if single {
                    break;
                }
                match fixed {
                    Some(k) if n >= k => break,
                    Some(_) => {}
                    None if start.elapsed() >= budget => break,
                    None => drain(self),
                }
                if self.paused {
                    break;
                }
            }
        }
        let ms = start.elapsed().as_secs_f64() * 1e3;
        self.publish(n, ms);
    }

    fn publish(&mut self, slice_steps: usize, slice_ms: f64) {
        let now = Instant::now();
        if let Some(then) = self.rate_clock.replace(now) {
            let dt = (now - then).as_secs_f64();
            if dt > 0.0 {
                let a = (dt / 0.5).min(1.0);
                self.rate += a * (slice_steps as f64 / dt - self.rate);
            }
        }
        self.version += 1;
        let mut next = match self.spare.take().map(Arc::try_unwrap) {
            Some(Ok(p)) => p,
            _ => Published::default(),
        };
        self.solver.snapshot_into(&mut next.data);
        next.applied = self.applied;
        next.steps = self.steps;
        next.slice_ms = slice_ms;
        next.slice_steps = slice_steps;
        next.steps_per_second = self.rate;
        next.version = self.version;
        next.paused = self.paused;
        next.error.clone_from(&self.error);
        let next = Arc::new(next);
        let old = {
            let mut latest = self.latest.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::replace(&mut *latest, next)
        };
        self.spare = Some(old);
    }
}

enum Mode<S: Solver> {
    Threaded {
        tx: Sender<Message<S::Edit>>,
        thread: Option<JoinHandle<()>>,
    },
    Inline {
        worker: Box<Worker<S>>,
        queue: Vec<Message<S::Edit>>,
    },
}

/// Runs a [`Solver`] and hands its snapshots to the frame.
pub struct SolverRuntime<S: Solver> {
    mode: Mode<S>,
    latest: Arc<Mutex<Arc<Published<S::Snapshot>>>>,
    sent: u64,
}

impl<S: Solver> SolverRuntime<S> {
    /// Starts `solver` (on its own thread for [`Pacing::Budget`]) and
    /// publishes its first snapshot before returning.
    pub fn start(solver: S, pacing: Pacing) -> Self {
        let latest = Arc::new(Mutex::new(Arc::new(Published::default())));
        let mut worker = Worker::new(solver, latest.clone());
        worker.publish(0, 0.0);
        let mode = match pacing {
            Pacing::Inline => Mode::Inline {
                worker: Box::new(worker),
                queue: Vec::new(),
            },
            Pacing::Budget => {
                let (tx, rx) = channel();
                let thread = std::thread::Builder::new()
                    .name("posecloud-solver".into())
                    .spawn(move || match solver_pool() {
                        Some(pool) => pool.install(|| solver_thread(worker, rx)),
                        None => solver_thread(worker, rx),
                    })
                    .expect("spawning the solver thread");
                Mode::Threaded {
                    tx,
                    thread: Some(thread),
                }
            }
        };
        Self {
            mode,
            latest,
            sent: 0,
        }
    }

    pub fn pacing(&self) -> Pacing {
        match self.mode {
            Mode::Threaded { .. } => Pacing::Budget,
            Mode::Inline { .. } => Pacing::Inline,
        }
    }

    fn send(&mut self, m: Message<S::Edit>) {
        match &mut self.mode {
            // A closed channel means the solver thread is gone (it only
            // exits when the runtime is dropped, or on a panic, which the
            // join in Drop reports).
            Mode::Threaded { tx, .. } => {
                let _ = tx.send(m);
            }
            Mode::Inline { queue, .. } => queue.push(m),
        }
    }

    /// Sends an edit; returns its sequence number (a snapshot with
    /// `applied ≥` that number reflects it).
    pub fn edit(&mut self, edit: S::Edit) -> u64 {
        self.sent += 1;
        self.send(Message::Edit(edit));
        self.sent
    }

    pub fn reset(&mut self) -> u64 {
        self.sent += 1;
        self.send(Message::Reset);
        self.sent
    }

    pub fn set_paused(&mut self, paused: bool) {
        self.send(Message::Pause(paused));
    }

    pub fn single_step(&mut self) {
        self.send(Message::SingleStep);
    }

    /// Edits sent so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Once per frame: asks for this frame's slice at clock `time`. Inline,
    /// the slice runs now; threaded, this returns at once.
    pub fn tick(&mut self, time: f64) {
        match &mut self.mode {
            Mode::Threaded { tx, .. } => {
                let _ = tx.send(Message::Tick(time));
            }
            Mode::Inline { worker, queue } => {
                for m in queue.drain(..) {
                    worker.handle(m);
                }
                worker.handle(Message::Tick(time));
                let k = worker.solver.steps_per_frame();
                worker.slice(Some(k), |_| {});
            }
        }
    }

    /// The latest snapshot (never waits for a step).
    pub fn latest(&self) -> Arc<Published<S::Snapshot>> {
        self.latest
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Blocks until every edit sent so far is applied and one slice after
    /// them has been published (tests and scripted start-up).
    pub fn sync(&mut self, time: f64) -> Arc<Published<S::Snapshot>> {
        let want = self.sent;
        let v = self.latest().version;
        self.tick(time);
        loop {
            let p = self.latest();
            if p.version > v && p.applied >= want {
                return p;
            }
            if self.pacing() == Pacing::Inline || self.thread_finished() {
                return p;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn thread_finished(&self) -> bool {
        match &self.mode {
            Mode::Threaded { thread, .. } => thread.as_ref().is_none_or(|t| t.is_finished()),
            Mode::Inline { .. } => false,
        }
    }
}

impl<S: Solver> Drop for SolverRuntime<S> {
    fn drop(&mut self) {
        if let Mode::Threaded { tx, thread } = &mut self.mode {
            // Closing the channel ends the thread after its current step.
            let (closed, _) = channel();
            *tx = closed;
            if let Some(t) = thread.take()
                && t.join().is_err()
            {
                eprintln!("posecloud: the solver thread panicked");
            }
        }
    }
}

/// The solver thread's rayon pool: one worker fewer than the machine has
/// cores, so that the render thread (and a software rasteriser such as
/// lavapipe, which runs on the same cores) keeps one: with every core busy
/// stepping 10,000 particles, a 2-core machine's frames slowed with the
/// particle count. Results do not depend on the thread count (the engine
/// is bit-identical on any number of threads). `None` (the global pool)
/// on a single core or if the pool cannot be built.
fn solver_pool() -> Option<rayon::ThreadPool> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    if cores < 2 {
        return None;
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(cores - 1)
        .thread_name(|i| format!("posecloud-solver-{i}"))
        .build()
        .ok()
}

fn solver_thread<S: Solver>(mut worker: Worker<S>, rx: Receiver<Message<S::Edit>>) {
    loop {
        // Wait for work: a tick, an edit, a single step.
        match rx.recv() {
            Ok(m) => worker.handle(m),
            Err(_) => return,
        }
        loop {
            match rx.try_recv() {
                Ok(m) => worker.handle(m),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return,
            }
        }
        if worker.tick_pending || worker.single_step {
            let mut closed = false;
            worker.slice(None, |w| {
                loop {
                    match rx.try_recv() {
                        Ok(Message::Tick(t)) => w.clock = t,
                        Ok(m) => w.handle(m),
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => {
                            closed = true;
                            w.paused = true;
                            break;
                        }
                    }
                }
            });
            if closed {
                return;
            }
        } else {
            // An edit alone: publish it so the frame sees its effect even
            // while paused.
            worker.publish(0, 0.0);
        }
    }
}

/// The text of a panic's payload (`panic!` with a message or a format).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Panics on its third step.
    struct Panicky(u32);

    impl Solver for Panicky {
        type Snapshot = u32;
        type Edit = ();
        fn apply(&mut self, (): ()) -> Result<()> {
            Ok(())
        }
        fn reset(&mut self) -> Result<()> {
            self.0 = 0;
            Ok(())
        }
        fn step(&mut self, _time: f64) -> Result<()> {
            self.0 += 1;
            assert!(self.0 != 3, "step {} went wrong", self.0);
            Ok(())
        }
        fn snapshot_into(&self, out: &mut u32) {
            *out = self.0;
        }
    }

    #[test]
    fn a_panicking_solver_is_an_error_the_window_shows_and_reset_recovers() {
        for pacing in [Pacing::Inline, Pacing::Budget] {
            let mut r = SolverRuntime::start(Panicky(0), pacing);
            let mut p = r.sync(0.0);
            for k in 1..10 {
                p = r.sync(f64::from(k));
                if p.error.is_some() {
                    break;
                }
            }
            let e = p.error.clone().expect("the panic is reported");
            assert!(
                e.contains("panicked") && e.contains("step 3 went wrong"),
                "{e}"
            );
            r.reset();
            let p = r.sync(20.0);
            assert!(p.error.is_none(), "{:?}", p.error);
            assert!(p.data <= 2, "{}", p.data);
        }
    }

    /// Counts steps; an edit adds to the counter, a negative edit fails.
    struct Counter {
        value: i64,
        sleep: Duration,
        budget: Duration,
    }

    impl Solver for Counter {
        type Snapshot = i64;
        type Edit = i64;
        fn apply(&mut self, edit: i64) -> Result<()> {
            anyhow::ensure!(edit >= 0, "negative edit {edit}");
            self.value += edit;
            Ok(())
        }
        fn reset(&mut self) -> Result<()> {
            self.value = 0;
            Ok(())
        }
        fn step(&mut self, _time: f64) -> Result<()> {
            std::thread::sleep(self.sleep);
            self.value += 1;
            Ok(())
        }
        fn steps_per_frame(&self) -> usize {
            3
        }
        fn budget(&self) -> Duration {
            self.budget
        }
        fn snapshot_into(&self, out: &mut i64) {
            *out = self.value;
        }
    }

    fn counter(sleep_ms: u64, budget_ms: u64) -> Counter {
        Counter {
            value: 0,
            sleep: Duration::from_millis(sleep_ms),
            budget: Duration::from_millis(budget_ms),
        }
    }

    #[test]
    fn inline_runs_the_fixed_count_per_tick() {
        let mut r = SolverRuntime::start(counter(0, 1), Pacing::Inline);
        r.edit(10);
        r.tick(0.0);
        let p = r.latest();
        assert_eq!(p.data, 13);
        assert_eq!(p.applied, 1);
        assert_eq!(p.slice_steps, 3);
        r.edit(-1);
        r.tick(0.1);
        let p = r.latest();
        assert_eq!(p.data, 16, "a failed edit keeps the state");
        assert!(p.error.as_deref().unwrap().contains("negative edit"));
        r.set_paused(true);
        r.tick(0.2);
        assert_eq!(r.latest().data, 16);
        r.single_step();
        r.tick(0.3);
        assert_eq!(r.latest().data, 17);
        r.reset();
        r.tick(0.4);
        assert_eq!(r.latest().data, 0);
    }

    #[test]
    fn a_slow_solver_never_blocks_the_frame() {
        // Each step takes 200 ms; ticks and reads must return at once.
        let mut r = SolverRuntime::start(counter(200, 1), Pacing::Budget);
        let t = Instant::now();
        for f in 0..50 {
            r.tick(f as f64);
            let _ = r.latest();
        }
        // 50 frames of nothing but ticks: far below one step's 200 ms.
        assert!(
            t.elapsed() < Duration::from_millis(150),
            "{:?}",
            t.elapsed()
        );
        let p = r.sync(1.0);
        assert!(p.data >= 1);
        drop(r);
    }

    #[test]
    fn edits_are_applied_in_order_and_acknowledged() {
        let mut r = SolverRuntime::start(counter(0, 2), Pacing::Budget);
        r.set_paused(true);
        for _ in 0..100 {
            r.edit(1);
        }
        let p = r.sync(0.0);
        assert_eq!(p.applied, 100);
        assert_eq!(p.data, 100, "paused: only the edits count");
        assert!(p.paused);
        r.set_paused(false);
        let p = r.sync(0.0);
        assert!(p.data > 100);
        assert!(p.slice_steps >= 1);
    }
}

//! Progress of the long commands on stderr: an `indicatif` bar with an ETA
//! when stderr is a terminal (a spinner when the length is unknown, e.g. a
//! webcam), else one line at most per second, so that logs stay readable.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// A progress report on stderr.
pub struct StderrProgress {
    bar: Option<ProgressBar>,
    quiet: bool,
    last_line: Option<Instant>,
}

impl StderrProgress {
    /// `total` items (frames) when known; `quiet`: nothing at all.
    pub fn new(total: Option<u64>, quiet: bool) -> Self {
        let bar = (!quiet && std::io::IsTerminal::is_terminal(&std::io::stderr())).then(|| {
            let bar = match total {
                Some(n) => ProgressBar::new(n).with_style(
                    ProgressStyle::with_template(
                        "{bar:30} {pos}/{len} frames, {per_sec}, ETA {eta}  {msg}",
                    )
                    .expect("a valid template"),
                ),
                None => ProgressBar::new_spinner().with_style(
                    ProgressStyle::with_template("{spinner} {pos} frames, {per_sec}  {msg}")
                        .expect("a valid template"),
                ),
            };
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Self {
            bar,
            quiet,
            last_line: None,
        }
    }

    /// The frames a run will read: the source's count, capped by
    /// `--max-frames` (either alone when the other is unknown).
    pub fn frames(frame_count: Option<usize>, max_frames: Option<usize>) -> Option<u64> {
        match (frame_count, max_frames) {
            (Some(n), Some(m)) => Some(n.min(m) as u64),
            (n, m) => n.or(m).map(|v| v as u64),
        }
    }

    /// A line that stays (a stage change, an event).
    pub fn say(&self, line: &str) {
        if self.quiet {
            return;
        }
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    /// `done` items so far and the current state: the bar's message, or a
    /// line when a second passed since the last one (no terminal).
    pub fn update(&mut self, done: u64, status: impl FnOnce() -> String) {
        if self.quiet {
            return;
        }
        match &self.bar {
            Some(bar) => {
                bar.set_position(done);
                bar.set_message(status());
            }
            None => {
                if self
                    .last_line
                    .is_none_or(|t| t.elapsed().as_secs_f64() >= 1.0)
                {
                    self.last_line = Some(Instant::now());
                    eprintln!("{}", status());
                }
            }
        }
    }

    /// Removes the bar (before the summary is printed).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

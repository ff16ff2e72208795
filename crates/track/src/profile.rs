//! Where a tracked frame's time goes: the per-stage wall times that
//! `posecloud track --profile` prints (docs/track.md, "Profile").
//!
//! Each tracked frame leaves one [`FrameTimes`]: the session fills the
//! stages it runs (decode, foreground, keypoints, the tracker's
//! [`StepTimings`], the arms' depth branches), the driver the output and
//! the frame's whole time. [`FrameTimes::split`] cuts the frame into
//! [`STAGES`], parts that do not overlap, so that their means add up to
//! the frame's mean; what no stage measured is `other`. A [`Profile`]
//! keeps every frame's split and reports, per stage, the mean, the 95th
//! percentile (nearest rank: the smallest time that at least 95 % of the
//! frames do not exceed) and the share of the frames' total time.

use std::time::Duration;

use crate::tracker::StepTimings;

/// The wall-clock times of one tracked frame's stages.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameTimes {
    /// Reading frames from the source in this frame's step (with
    /// keypoints on, the next frame is read ahead here, while the
    /// detector works on it).
    pub decode: Duration,
    /// The foreground: segmentation against the background model and the
    /// observation's label regions.
    pub foreground: Duration,
    /// The keypoint detector's part: submitting frames and waiting for
    /// this frame's detection (the wait the tracker pays), less `decode`.
    pub keypoints: Duration,
    /// The tracker's step.
    pub step: StepTimings,
    /// The arms' depth branches of the cloud ([`crate::smooth::Modes`]).
    pub modes: Duration,
    /// Smoothing and writing the outputs (CSV, BVH): the driver's part.
    pub output: Duration,
    /// The whole frame, from reading it to its written row.
    pub total: Duration,
}

/// The stages of [`FrameTimes::split`], in pipeline order.
pub const STAGES: [&str; 12] = [
    "decode",
    "foreground",
    "keypoints",
    "resample",
    "forward kinematics",
    "likelihood",
    "simplex",
    "flips and lifts",
    "diffusion, rest",
    "depth branches",
    "output",
    "other",
];

impl FrameTimes {
    /// The frame cut into [`STAGES`], which do not overlap: the tracker's
    /// step into resampling (selection), forward kinematics and likelihood
    /// of every batch, the simplex's own work, flips and lifts, and the
    /// rest of the step (diffusion, the partitions' resampling,
    /// normalisation, the estimate); `other` is what no stage measured
    /// (the guided start's bookkeeping, placing the person).
    pub fn split(&self) -> [Duration; STAGES.len()] {
        let s = &self.step;
        let tracker_parts = s.select + s.forward_kinematics + s.likelihood + s.simplex + s.flips;
        let mut parts = [
            self.decode,
            self.foreground,
            self.keypoints,
            s.select,
            s.forward_kinematics,
            s.likelihood,
            s.simplex,
            s.flips,
            s.total.saturating_sub(tracker_parts),
            self.modes,
            self.output,
            Duration::ZERO,
        ];
        let measured: Duration = parts.iter().sum();
        parts[STAGES.len() - 1] = self.total.saturating_sub(measured);
        parts
    }
}

/// One stage's figures over a run, milliseconds per frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StageSummary {
    pub stage: &'static str,
    pub mean_ms: f64,
    /// 95th percentile (nearest rank).
    pub p95_ms: f64,
    /// Share of the frames' total time, 0–1.
    pub share: f64,
}

/// Every tracked frame's [`FrameTimes::split`] over a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profile {
    /// Per frame: the stages' times, ms.
    stages: Vec<[f64; STAGES.len()]>,
    /// Per frame: the whole frame, ms.
    totals: Vec<f64>,
}

impl Profile {
    /// Adds one tracked frame.
    pub fn record(&mut self, times: &FrameTimes) {
        self.stages.push(times.split().map(ms));
        self.totals.push(ms(times.total));
    }

    /// Frames recorded.
    pub fn frames(&self) -> usize {
        self.totals.len()
    }

    /// One row per stage of [`STAGES`], then `frame` (the whole frame,
    /// share 1). All zero without frames.
    pub fn summary(&self) -> Vec<StageSummary> {
        let total: f64 = self.totals.iter().sum();
        let row = |stage: &'static str, mut values: Vec<f64>| {
            let sum: f64 = values.iter().sum();
            StageSummary {
                stage,
                mean_ms: sum / values.len().max(1) as f64,
                p95_ms: percentile(&mut values, 0.95),
                share: if total > 0.0 { sum / total } else { 0.0 },
            }
        };
        let mut rows: Vec<StageSummary> = STAGES
            .iter()
            .enumerate()
            .map(|(k, &stage)| row(stage, self.stages.iter().map(|f| f[k]).collect()))
            .collect();
        rows.push(row("frame", self.totals.clone()));
        rows
    }
}

impl std::fmt::Display for Profile {
    /// The table of `posecloud track --profile`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "profile over {} tracked frames (wall time, ms per frame):",
            self.frames()
        )?;
        write!(
            f,
            "{:<20} {:>9} {:>9} {:>7}",
            "stage", "mean ms", "p95 ms", "share"
        )?;
        for r in self.summary() {
            write!(
                f,
                "\n{:<20} {:>9.3} {:>9.3} {:>6.1}%",
                r.stage,
                r.mean_ms,
                r.p95_ms,
                100.0 * r.share
            )?;
        }
        Ok(())
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The `q`-quantile of `values` by nearest rank: the `⌈q·n⌉`-th smallest
/// (0 when empty). Sorts `values`.
fn percentile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let rank = (q * values.len() as f64).ceil() as usize;
    values[rank.clamp(1, values.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// Frames k = 1..=20 with a decode of k ms, a likelihood of 2 ms and a
    /// whole frame of 10 + k ms: decode has mean 10.5 and p95 19 (the 19th
    /// of 20), likelihood 2 and 2, `other` the 8 ms left; the shares are
    /// the sums over the frames' sum.
    #[test]
    fn mean_p95_and_share_of_known_durations() {
        let mut p = Profile::default();
        for k in 1..=20 {
            p.record(&FrameTimes {
                decode: ms(k),
                step: StepTimings {
                    likelihood: ms(2),
                    total: ms(2),
                    ..StepTimings::default()
                },
                total: ms(10 + k),
                ..FrameTimes::default()
            });
        }
        assert_eq!(p.frames(), 20);
        let rows = p.summary();
        assert_eq!(rows.len(), STAGES.len() + 1);
        let get = |name: &str| *rows.iter().find(|r| r.stage == name).unwrap();
        let total = 20.0 * 10.0 + 210.0;
        let decode = get("decode");
        assert!((decode.mean_ms - 10.5).abs() < 1e-9, "{decode:?}");
        assert!((decode.p95_ms - 19.0).abs() < 1e-9, "{decode:?}");
        assert!((decode.share - 210.0 / total).abs() < 1e-12);
        let lik = get("likelihood");
        assert!((lik.mean_ms - 2.0).abs() < 1e-9 && (lik.p95_ms - 2.0).abs() < 1e-9);
        // The tracker's step is all likelihood: nothing left for the rest.
        assert_eq!(get("diffusion, rest").mean_ms, 0.0);
        let other = get("other");
        assert!((other.mean_ms - 8.0).abs() < 1e-9, "{other:?}");
        let frame = get("frame");
        assert!((frame.mean_ms - 20.5).abs() < 1e-9 && (frame.p95_ms - 29.0).abs() < 1e-9);
        assert!((frame.share - 1.0).abs() < 1e-12);
        // The stages' shares add up to the whole.
        let shares: f64 = rows[..STAGES.len()].iter().map(|r| r.share).sum();
        assert!((shares - 1.0).abs() < 1e-12);
    }

    #[test]
    fn percentile_by_nearest_rank() {
        assert_eq!(percentile(&mut [], 0.95), 0.0);
        assert_eq!(percentile(&mut [3.0], 0.95), 3.0);
        assert_eq!(percentile(&mut [5.0, 1.0, 4.0, 2.0, 3.0], 0.95), 5.0);
        assert_eq!(percentile(&mut [5.0, 1.0, 4.0, 2.0, 3.0], 0.6), 3.0);
    }

    #[test]
    fn the_table_has_a_row_per_stage_and_the_frame() {
        let mut p = Profile::default();
        p.record(&FrameTimes {
            total: ms(4),
            ..FrameTimes::default()
        });
        let table = p.to_string();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 2 + STAGES.len() + 1, "{table}");
        assert!(lines[1].starts_with("stage") && lines[1].contains("p95 ms"));
        assert!(lines.last().unwrap().starts_with("frame"));
    }
}

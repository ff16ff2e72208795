//! The arms' depth branches in the cloud, and the smoothed estimate.
//!
//! **Modes.** An arm seen by one camera has up to four configurations that
//! project alike (RTPF §IV-C2, [`crate::flip`]): the elbow nearer or
//! farther than the shoulder, the wrist nearer or farther than the elbow.
//! [`Modes::of`] reads the heaviest particles of the cloud and sorts them
//! by these *branches*: for each arm the weight share of every branch
//! ([`ArmBranches`], what the window shows as the tracker's confidence),
//! and a few distinct candidates — the heaviest particle, then each next
//! heaviest whose elbow or wrist lies at least [`CANDIDATE_SEPARATION`]
//! from every candidate so far — for the path smoother.
//!
//! **Smoothing** ([`PathSmoother`]). The filter's MAP particle is chosen
//! afresh every frame, so where the evidence hardly separates two branches
//! it jumps between them from frame to frame, and each jump is an elbow
//! error of tens of degrees. The smoothed estimate is the most probable
//! path through the frames' candidates ([`smc::CandidatePath`], Viterbi)
//! under
//!
//! ```text
//! emission    e_t(j)    = τ · log w_t(j)                    (the filter's log weight)
//! transition  log p(j | i) = − Σ_k ‖p_k(x_t^j) − p_k(x_{t−1}^i)‖² / (2 (σ_v Δt)²)
//! ```
//!
//! with `p_k` the elbows and wrists in the world and `σ_v` a hand speed
//! (metres a second): a path that swaps a forearm's depth pays for the
//! metres its wrist jumps, so it swaps only where the weights insist for
//! several frames. `τ` tempers the filter's weights, whose differences
//! between branches are those of one frame's likelihood. Full smoothing
//! chooses every frame after the last one; fixed-lag smoothing (live)
//! chooses frame `t − L` at frame `t`, `L` frames late.
//!
//! **Pose kernel** ([`PoseKernel`]). The path's poses are then averaged
//! over time, a Gaussian kernel in seconds,
//!
//! ```text
//! x̂_t = x_t + Σ_s k_s (x_s − x_t) / Σ_s k_s,   k_s = exp(−(t_s − t)² / (2 σ_k²)),
//! ```
//!
//! over the decided frames `s` from `3σ_k` before `t` to `A` frames after
//! it, per pose parameter; a frame whose parameter differs from frame `t`'s
//! by more than π/2 (an angle across ±π, a jump) leaves that parameter
//! out, so every average is a convex combination of values within the
//! parameter's limits. A frame's elbow angle is noisy from frame to frame
//! (the detections move by pixels on an upper arm some 30 pixels long, and
//! where two branches fit alike the MAP hops between them); averaging over
//! σ_k = 0.1 s takes 1.3–3° off the elbow RMSE on the tuning clips of
//! the evaluation set (docs/track.md, "A pose kernel"). Full smoothing
//! reads `A` = 3σ_k ahead; fixed-lag smoothing splits its lag `L`:
//! the kernel reads `A = min(L, KERNEL_AHEAD)` frames ahead and the path
//! decides `L − A` frames late, so the estimate of frame `t` is still out
//! `L` frames after it.

use std::collections::VecDeque;

use nalgebra::Point3;
use skeleton::Skeleton;

use crate::error::{Result, TrackError};
use crate::tracker::Tracker;

/// Heaviest particles read for the modes.
pub const MODE_PARTICLES: usize = 64;
/// Candidates a frame handed to the smoother.
pub const MAX_CANDIDATES: usize = 12;
/// Metres an elbow or wrist must differ by for two particles to be distinct
/// candidates.
pub const CANDIDATE_SEPARATION: f64 = 0.04;
/// Default σ_v: hand speed, metres a second.
pub const DEFAULT_HAND_SPEED: f64 = 2.0;
/// Default τ: the weight of the filter's log weights in the path.
pub const DEFAULT_TEMPERATURE: f64 = 0.25;
/// Default lag of live smoothing, seconds (≤ 0.2 s).
pub const DEFAULT_LAG_SECONDS: f64 = 0.2;
/// σ_k of the pose kernel, seconds (module docs).
pub const KERNEL_SIGMA_SECONDS: f64 = 0.1;
/// Frames the fixed-lag kernel reads ahead, at most (module docs: at 30
/// frames/s, 4 frames are 1.3 σ_k, where the kernel holds most of its
/// gain on the tuning clips).
pub const KERNEL_AHEAD: usize = 4;

/// The branch weight shares of one arm: index `2 · elbow_far + wrist_far`
/// (`elbow_far`: the elbow farther from the camera than the shoulder;
/// `wrist_far`: the wrist farther than the elbow).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ArmBranches {
    /// `left` or `right` (the subject's), or `arm` for another.
    pub side: &'static str,
    pub share: [f64; 4],
    /// The branch of the MAP particle.
    pub map_branch: usize,
}

impl ArmBranches {
    /// The weight share of the MAP particle's branch: near 1 when the
    /// cloud agrees, near ¼–½ when it is split between flips.
    pub fn confidence(&self) -> f64 {
        self.share[self.map_branch]
    }

    /// `near`/`far` words for a branch.
    pub fn name(branch: usize) -> &'static str {
        [
            "elbow near, wrist near",
            "elbow near, wrist far",
            "elbow far, wrist near",
            "elbow far, wrist far",
        ][branch & 3]
    }
}

/// One candidate of a frame: a full pose, its log weight and its arm points.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub pose: Vec<f64>,
    pub log_weight: f64,
    /// Elbow and wrist of each flippable arm, world, metres.
    pub points: Vec<Point3<f64>>,
}

/// The cloud's branches and candidates at one frame (module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Modes {
    /// Per flippable arm, in [`Tracker::flip_arms`] order.
    pub arms: Vec<ArmBranches>,
    /// Heaviest first.
    pub candidates: Vec<Candidate>,
}

impl Modes {
    /// Reads the [`MODE_PARTICLES`] heaviest particles of `tracker`.
    ///
    /// # Errors
    /// Forward kinematics failing on a particle (not expected: the states
    /// are within their limits).
    pub fn of(tracker: &Tracker) -> Result<Self> {
        let w = tracker.weights();
        let mut order: Vec<usize> = (0..w.len()).collect();
        order.sort_by(|&a, &b| w[b].total_cmp(&w[a]));
        order.truncate(MODE_PARTICLES);
        let skeleton: &Skeleton = tracker.body().skeleton();
        let centre = tracker.camera().world_from_camera().translation.vector;
        let arms = tracker.flip_arms();
        let side_of = |shoulder: usize| {
            [
                (crate::body::Side::Left, "left"),
                (crate::body::Side::Right, "right"),
            ]
            .into_iter()
            .find(|(s, _)| {
                crate::body::Arm::find(skeleton, *s).is_ok_and(|a| a.shoulder == shoulder)
            })
            .map_or("arm", |(_, name)| name)
        };
        let mut modes = Modes {
            arms: arms
                .iter()
                .map(|a| ArmBranches {
                    side: side_of(a.arm.shoulder),
                    ..ArmBranches::default()
                })
                .collect(),
            candidates: Vec::new(),
        };
        let mut total = 0.0;
        for (rank, &i) in order.iter().enumerate() {
            let pose = tracker.full_pose(i);
            let world = skeleton.forward_kinematics(&pose)?;
            let at = |j: usize| Point3::from(world[j].translation.vector);
            let dist = |j: usize| (world[j].translation.vector - centre).norm();
            let mut points = Vec::with_capacity(2 * arms.len());
            for (k, a) in arms.iter().enumerate() {
                let arm = &a.arm;
                let branch = 2 * usize::from(dist(arm.elbow) > dist(arm.shoulder))
                    + usize::from(dist(arm.wrist) > dist(arm.elbow));
                modes.arms[k].share[branch] += w[i];
                if rank == 0 {
                    modes.arms[k].map_branch = branch;
                }
                points.push(at(arm.elbow));
                points.push(at(arm.wrist));
            }
            total += w[i];
            let distinct = modes.candidates.iter().all(|c| {
                c.points
                    .iter()
                    .zip(&points)
                    .any(|(a, b)| (a - b).norm() >= CANDIDATE_SEPARATION)
            });
            if distinct && modes.candidates.len() < MAX_CANDIDATES {
                modes.candidates.push(Candidate {
                    pose,
                    log_weight: w[i].ln(),
                    points,
                });
            }
        }
        if total > 0.0 {
            for a in &mut modes.arms {
                for s in &mut a.share {
                    *s /= total;
                }
            }
        }
        Ok(modes)
    }
}

/// How the estimate is smoothed over time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Smoothing {
    /// The filter's estimate of each frame.
    None,
    /// Fixed lag: frame `t − L` chosen at frame `t`, `L` frames late.
    Lag(usize),
    /// Over the whole run, chosen after its last frame.
    Full,
}

impl Smoothing {
    /// Words for the status line and the recording.
    pub fn describe(&self, fps: f64) -> String {
        match self {
            Self::None => "filtered (MAP of each frame)".into(),
            Self::Lag(l) => format!(
                "smoothed with a fixed lag of {l} frame(s) ({:.2} s)",
                *l as f64 / fps.max(1e-9)
            ),
            Self::Full => "smoothed over the whole run (forward–backward)".into(),
        }
    }
}

impl std::str::FromStr for Smoothing {
    type Err = String;
    /// `none`, `lag` (the default lag, at 30 frames/s), `lag:N` (frames),
    /// `full`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "none" | "off" => Ok(Self::None),
            "full" => Ok(Self::Full),
            "lag" => Ok(Self::Lag((DEFAULT_LAG_SECONDS * 30.0).round() as usize)),
            _ => match s.strip_prefix("lag:").map(str::parse::<usize>) {
                Some(Ok(l)) if l <= 60 => Ok(Self::Lag(l)),
                _ => Err(format!("`{s}`: none, lag, lag:N (frames, 0 to 60) or full")),
            },
        }
    }
}

/// A frame the smoother decided: its index, timestamp and chosen pose.
#[derive(Clone, Debug, PartialEq)]
pub struct Smoothed {
    pub frame: usize,
    pub timestamp: f64,
    pub pose: Vec<f64>,
}

/// The path smoother of the module docs, fed one frame's [`Modes`] at a time.
#[derive(Clone, Debug)]
pub struct PathSmoother {
    smoothing: Smoothing,
    hand_speed: f64,
    temperature: f64,
    path: smc::CandidatePath,
    /// Undecided frames: (frame, timestamp, candidates).
    frames: VecDeque<(usize, f64, Vec<Candidate>)>,
    /// The last decided frame's candidates stay until the next is decided.
    last_time: Option<f64>,
    /// Averages the path's poses over time.
    kernel: PoseKernel,
}

impl PathSmoother {
    /// # Errors
    /// `Smoothing::None` (nothing to smooth), a hand speed or temperature
    /// that is not positive and finite.
    pub fn new(smoothing: Smoothing, hand_speed: f64, temperature: f64) -> Result<Self> {
        let path = match smoothing {
            Smoothing::None => {
                return Err(TrackError::InvalidSetting {
                    field: "smoothing",
                    value: "none".into(),
                    reason: "needs no path smoother",
                });
            }
            Smoothing::Lag(l) => smc::CandidatePath::fixed_lag(l.saturating_sub(KERNEL_AHEAD)),
            Smoothing::Full => smc::CandidatePath::full(),
        };
        let kernel = match smoothing {
            Smoothing::Lag(l) => PoseKernel::new(KERNEL_SIGMA_SECONDS, Some(l.min(KERNEL_AHEAD))),
            _ => PoseKernel::new(KERNEL_SIGMA_SECONDS, None),
        }?;
        for (field, v) in [("hand_speed", hand_speed), ("temperature", temperature)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(TrackError::InvalidSetting {
                    field,
                    value: v.to_string(),
                    reason: "must be positive and finite",
                });
            }
        }
        Ok(Self {
            smoothing,
            hand_speed,
            temperature,
            path,
            frames: VecDeque::new(),
            last_time: None,
            kernel,
        })
    }

    pub fn smoothing(&self) -> Smoothing {
        self.smoothing
    }

    /// Adds a tracked frame; returns the frames decided now, oldest first
    /// (none while the lag fills, then one a frame).
    ///
    /// # Errors
    /// A frame without candidates, non-finite weights.
    pub fn push(
        &mut self,
        frame: usize,
        timestamp: f64,
        candidates: Vec<Candidate>,
    ) -> Result<Vec<Smoothed>> {
        let dt = self
            .last_time
            .map_or(1.0 / 30.0, |t| (timestamp - t).clamp(1e-3, 1.0));
        self.last_time = Some(timestamp);
        let sigma = self.hand_speed * dt;
        let inv = 1.0 / (2.0 * sigma * sigma);
        let emission: Vec<f64> = candidates
            .iter()
            .map(|c| self.temperature * c.log_weight)
            .collect();
        let decided = {
            let prev = self.frames.back().map(|(_, _, c)| c);
            self.path
                .push(&emission, |i, j| {
                    let Some(prev) = prev else { return 0.0 };
                    let d2: f64 = prev[i]
                        .points
                        .iter()
                        .zip(&candidates[j].points)
                        .map(|(a, b)| (a - b).norm_squared())
                        .sum();
                    -d2 * inv
                })
                .map_err(|source| TrackError::Weights {
                    frame: frame as u64,
                    source,
                })?
        };
        self.frames.push_back((frame, timestamp, candidates));
        Ok(match decided {
            Some((_, j)) => {
                let pose = self.take_front(j);
                self.kernel.push(pose)
            }
            None => Vec::new(),
        })
    }

    /// Decides every frame still pending (the end of a run, or before a
    /// restart), oldest first.
    pub fn finish(&mut self) -> Vec<Smoothed> {
        let choices = self.path.finish();
        let mut out = Vec::new();
        for (_, j) in choices {
            let pose = self.take_front(j);
            out.extend(self.kernel.push(pose));
        }
        out.extend(self.kernel.finish());
        self.last_time = None;
        out
    }

    /// Frames pushed and not yet decided.
    pub fn pending(&self) -> usize {
        self.frames.len() + self.kernel.pending()
    }

    fn take_front(&mut self, j: usize) -> Smoothed {
        let (frame, timestamp, mut candidates) =
            self.frames.pop_front().expect("a column per frame");
        Smoothed {
            frame,
            timestamp,
            pose: candidates.swap_remove(j.min(candidates.len() - 1)).pose,
        }
    }
}

/// The pose kernel of the module docs: a Gaussian average over time of
/// decided poses, fed in frame order.
#[derive(Clone, Debug)]
pub struct PoseKernel {
    sigma: f64,
    /// Frames read ahead (`None`: 3σ_k in time, for full smoothing).
    ahead: Option<usize>,
    /// Decided poses: those already out (kept while within 3σ_k of the
    /// next) and those waiting for their frames ahead.
    window: VecDeque<Smoothed>,
    /// Index in `window` of the next pose to go out.
    next: usize,
}

impl PoseKernel {
    /// # Errors
    /// σ_k not positive and finite.
    pub fn new(sigma_seconds: f64, ahead: Option<usize>) -> Result<Self> {
        if !(sigma_seconds.is_finite() && sigma_seconds > 0.0) {
            return Err(TrackError::InvalidSetting {
                field: "kernel_sigma",
                value: sigma_seconds.to_string(),
                reason: "must be positive and finite",
            });
        }
        Ok(Self {
            sigma: sigma_seconds,
            ahead,
            window: VecDeque::new(),
            next: 0,
        })
    }

    /// Adds the next decided pose; returns the poses whose frames ahead
    /// are now in, averaged.
    pub fn push(&mut self, pose: Smoothed) -> Vec<Smoothed> {
        self.window.push_back(pose);
        let mut out = Vec::new();
        while self.next < self.window.len() && self.ready(self.next) {
            out.push(self.average(self.next));
            self.next += 1;
            self.forget();
        }
        out
    }

    /// Averages every pose still waiting (the end of a path).
    pub fn finish(&mut self) -> Vec<Smoothed> {
        let out = (self.next..self.window.len())
            .map(|i| self.average(i))
            .collect();
        self.window.clear();
        self.next = 0;
        out
    }

    /// Poses pushed and not yet out.
    pub fn pending(&self) -> usize {
        self.window.len() - self.next
    }

    fn reach(&self) -> f64 {
        3.0 * self.sigma
    }

    /// Whether the frames ahead of `window[i]` are in.
    fn ready(&self, i: usize) -> bool {
        let last = self.window.len() - 1;
        match self.ahead {
            Some(a) => last >= i + a,
            None => self.window[last].timestamp - self.window[i].timestamp >= self.reach(),
        }
    }

    /// Drops the poses out that the next one no longer reaches.
    fn forget(&mut self) {
        while self.next > 0
            && self.next < self.window.len()
            && self.window[self.next].timestamp - self.window[0].timestamp > self.reach()
        {
            self.window.pop_front();
            self.next -= 1;
        }
    }

    fn average(&self, i: usize) -> Smoothed {
        let centre = &self.window[i];
        let last = match self.ahead {
            Some(a) => (i + a).min(self.window.len() - 1),
            None => self.window.len() - 1,
        };
        let mut sum = vec![0.0; centre.pose.len()];
        let mut norm = vec![0.0; centre.pose.len()];
        for s in self.window.range(..=last) {
            let dt = s.timestamp - centre.timestamp;
            if dt.abs() > self.reach() {
                continue;
            }
            let k = (-0.5 * (dt / self.sigma).powi(2)).exp();
            for (((acc, n), &x), &c) in sum.iter_mut().zip(&mut norm).zip(&s.pose).zip(&centre.pose)
            {
                if (x - c).abs() <= std::f64::consts::FRAC_PI_2 {
                    *acc += k * (x - c);
                    *n += k;
                }
            }
        }
        Smoothed {
            frame: centre.frame,
            timestamp: centre.timestamp,
            pose: centre
                .pose
                .iter()
                .zip(sum.iter().zip(&norm))
                .map(|(&c, (&acc, &n))| if n > 0.0 { c + acc / n } else { c })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(x: f64, log_weight: f64) -> Candidate {
        Candidate {
            pose: vec![x],
            log_weight,
            points: vec![Point3::new(x, 0.0, 0.0)],
        }
    }

    #[test]
    fn a_one_frame_flip_is_smoothed_away() {
        // The wrist at 0 for five frames, but one frame's heavier candidate
        // is its flip 0.4 m away: the path keeps the branch (and the pose
        // kernel averages zeros). `lag:6` is a path lag of 2 and a kernel
        // reading 4 frames ahead.
        let frames = [
            vec![cand(0.0, -0.1), cand(0.4, -2.5)],
            vec![cand(0.0, -0.2), cand(0.4, -1.8)],
            vec![cand(0.4, -0.1), cand(0.0, -0.6)],
            vec![cand(0.0, -0.1), cand(0.4, -2.0)],
            vec![cand(0.0, -0.1), cand(0.4, -2.2)],
        ];
        for smoothing in [Smoothing::Full, Smoothing::Lag(KERNEL_AHEAD + 2)] {
            let mut s = PathSmoother::new(smoothing, 2.0, 1.0).unwrap();
            let mut out = Vec::new();
            for (t, c) in frames.iter().enumerate() {
                out.extend(s.push(t, t as f64 / 30.0, c.clone()).unwrap());
            }
            out.extend(s.finish());
            let xs: Vec<f64> = out.iter().map(|o| o.pose[0]).collect();
            assert_eq!(xs, vec![0.0; 5], "{smoothing:?}");
            assert_eq!(
                out.iter().map(|o| o.frame).collect::<Vec<_>>(),
                vec![0, 1, 2, 3, 4]
            );
        }
        // Without the temporal term (a very fast hand) the path takes the
        // flip, and the kernel spreads its 0.4 over the five frames by
        // their weights (σ_k = 3 frames at 30 frames/s).
        let mut s = PathSmoother::new(Smoothing::Full, 1e6, 1.0).unwrap();
        for (t, c) in frames.iter().enumerate() {
            s.push(t, t as f64 / 30.0, c.clone()).unwrap();
        }
        let out = s.finish();
        let k = |df: f64| (-0.5 * (df / 3.0).powi(2)).exp();
        let norm: f64 = (-2..=2).map(|df| k(f64::from(df))).sum();
        assert!((out[2].pose[0] - 0.4 / norm).abs() < 1e-12);
        assert!(
            (out[0].pose[0] - 0.4 * k(2.0) / (0..5).map(|f| k(f64::from(f))).sum::<f64>()).abs()
                < 1e-12
        );
    }

    #[test]
    fn a_lasting_change_of_branch_is_followed() {
        let frames: Vec<Vec<Candidate>> = (0..8)
            .map(|t| {
                if t < 4 {
                    vec![cand(0.0, -0.1), cand(0.3, -3.0)]
                } else {
                    vec![cand(0.3, -0.1), cand(0.0, -3.0)]
                }
            })
            .collect();
        // A path lag of 3 frames, the kernel 4 ahead: the path switches at
        // frame 4 and the kernel blends the switch, rising through it.
        let mut s = PathSmoother::new(Smoothing::Lag(KERNEL_AHEAD + 3), 2.0, 1.0).unwrap();
        let mut out = Vec::new();
        for (t, c) in frames.iter().enumerate() {
            out.extend(s.push(t, t as f64 / 30.0, c.clone()).unwrap());
        }
        out.extend(s.finish());
        let xs: Vec<f64> = out.iter().map(|o| o.pose[0]).collect();
        assert_eq!(xs.len(), 8);
        assert!(xs[..4].iter().all(|&x| x < 0.15), "{xs:?}");
        assert!(xs[4..].iter().all(|&x| x > 0.15), "{xs:?}");
        assert!(xs.windows(2).all(|w| w[0] <= w[1]), "{xs:?}");
    }

    fn decided(frame: usize, pose: Vec<f64>) -> Smoothed {
        Smoothed {
            frame,
            timestamp: frame as f64 / 30.0,
            pose,
        }
    }

    #[test]
    fn the_kernel_averages_a_frames_neighbours_with_gaussian_weights() {
        // Frame 5 of a constant pose jumps by 1 rad in its first parameter:
        // out, the jump is spread over its neighbours by the kernel's
        // weights, and the second parameter (constant) stays exactly.
        let mut k = PoseKernel::new(0.1, None).unwrap();
        let mut out = Vec::new();
        for f in 0..12 {
            let x = if f == 5 { 1.0 } else { 0.0 };
            out.extend(k.push(decided(f, vec![x, 0.5])));
        }
        out.extend(k.finish());
        assert_eq!(
            out.iter().map(|o| o.frame).collect::<Vec<_>>(),
            (0..12).collect::<Vec<_>>()
        );
        let w = |df: f64| (-0.5 * (df / 3.0).powi(2)).exp();
        // Frame 5 itself: the weights of frames 0..=11 (all within 3σ = 9
        // frames); only frame 5 carries the 1 rad.
        let norm5: f64 = (0..12).map(|f| w(f as f64 - 5.0)).sum();
        assert!((out[5].pose[0] - 1.0 / norm5).abs() < 1e-12);
        let norm8: f64 = (0..12).map(|f| w(f as f64 - 8.0)).sum();
        assert!((out[8].pose[0] - w(3.0) / norm8).abs() < 1e-12);
        assert!(out.iter().all(|o| o.pose[1] == 0.5));
    }

    #[test]
    fn the_kernel_leaves_out_a_jump_beyond_a_quarter_turn() {
        // A yaw that crosses ±π: the neighbours across the jump are left
        // out, so no frame is averaged into the opposite direction.
        let mut k = PoseKernel::new(0.1, Some(2)).unwrap();
        let mut out = Vec::new();
        for f in 0..8 {
            let x = if f < 4 { 3.1 } else { -3.1 };
            out.extend(k.push(decided(f, vec![x])));
        }
        out.extend(k.finish());
        assert_eq!(out.len(), 8);
        assert!(out[..4].iter().all(|o| o.pose[0] == 3.1));
        assert!(out[4..].iter().all(|o| o.pose[0] == -3.1));
    }

    #[test]
    fn a_fixed_lag_kernel_answers_its_lag_late() {
        let mut k = PoseKernel::new(0.1, Some(3)).unwrap();
        for f in 0..3 {
            assert!(k.push(decided(f, vec![0.0])).is_empty());
        }
        for f in 3..10 {
            let out = k.push(decided(f, vec![0.0]));
            assert_eq!(out.iter().map(|o| o.frame).collect::<Vec<_>>(), vec![f - 3]);
        }
        assert_eq!(k.pending(), 3);
        // Only the poses the next one reaches are kept.
        assert!(k.window.len() <= 3 + 10);
        assert_eq!(k.finish().len(), 3);
        assert!(PoseKernel::new(0.0, None).is_err());
        assert!(PoseKernel::new(f64::NAN, Some(1)).is_err());
    }

    #[test]
    fn smoothing_words_parse() {
        assert_eq!("none".parse::<Smoothing>(), Ok(Smoothing::None));
        assert_eq!("full".parse::<Smoothing>(), Ok(Smoothing::Full));
        assert_eq!("lag".parse::<Smoothing>(), Ok(Smoothing::Lag(6)));
        assert_eq!("lag:3".parse::<Smoothing>(), Ok(Smoothing::Lag(3)));
        assert!("lag:99".parse::<Smoothing>().is_err());
        assert!("soon".parse::<Smoothing>().is_err());
        assert!(PathSmoother::new(Smoothing::None, 2.0, 1.0).is_err());
        assert!(PathSmoother::new(Smoothing::Full, f64::NAN, 1.0).is_err());
    }
}

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
            Smoothing::Lag(l) => smc::CandidatePath::fixed_lag(l),
            Smoothing::Full => smc::CandidatePath::full(),
        };
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
        })
    }

    pub fn smoothing(&self) -> Smoothing {
        self.smoothing
    }

    /// Adds a tracked frame; returns the frame decided now, if any.
    ///
    /// # Errors
    /// A frame without candidates, non-finite weights.
    pub fn push(
        &mut self,
        frame: usize,
        timestamp: f64,
        candidates: Vec<Candidate>,
    ) -> Result<Option<Smoothed>> {
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
        Ok(decided.map(|(_, j)| self.take_front(j)))
    }

    /// Decides every frame still pending (the end of a run, or before a
    /// restart), oldest first.
    pub fn finish(&mut self) -> Vec<Smoothed> {
        let choices = self.path.finish();
        let out = choices
            .into_iter()
            .map(|(_, j)| self.take_front(j))
            .collect();
        self.last_time = None;
        out
    }

    /// Frames pushed and not yet decided.
    pub fn pending(&self) -> usize {
        self.frames.len()
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
        // is its flip 0.4 m away: the path keeps the branch.
        let frames = [
            vec![cand(0.0, -0.1), cand(0.4, -2.5)],
            vec![cand(0.0, -0.2), cand(0.4, -1.8)],
            vec![cand(0.4, -0.1), cand(0.0, -0.6)],
            vec![cand(0.0, -0.1), cand(0.4, -2.0)],
            vec![cand(0.0, -0.1), cand(0.4, -2.2)],
        ];
        for smoothing in [Smoothing::Full, Smoothing::Lag(2)] {
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
        // Without the temporal term (a very fast hand) the flip wins.
        let mut s = PathSmoother::new(Smoothing::Full, 1e6, 1.0).unwrap();
        for (t, c) in frames.iter().enumerate() {
            s.push(t, t as f64 / 30.0, c.clone()).unwrap();
        }
        assert_eq!(s.finish()[2].pose[0], 0.4);
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
        let mut s = PathSmoother::new(Smoothing::Lag(3), 2.0, 1.0).unwrap();
        let mut out = Vec::new();
        for (t, c) in frames.iter().enumerate() {
            out.extend(s.push(t, t as f64 / 30.0, c.clone()).unwrap());
        }
        out.extend(s.finish());
        let xs: Vec<f64> = out.iter().map(|o| o.pose[0]).collect();
        assert_eq!(xs, vec![0.0, 0.0, 0.0, 0.0, 0.3, 0.3, 0.3, 0.3]);
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

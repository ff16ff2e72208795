//! The walker scene's model (Bevy-free): PHYSPRIOR's tracker
//! (`crates/walker`) following the 2D hip / knee / foot points of a CMU
//! walk projected through a side camera with pixel noise, as a
//! [`runtime::Solver`](crate::runtime::Solver). One step is one frame; the
//! clip loops. Knees and feet can be occluded for a span of frames to
//! watch the prior carry the legs (PHYSPRIOR Exp. 2).

use std::collections::VecDeque;
use std::path::PathBuf;

use anyhow::{Context, Result, ensure};
use nalgebra::Point3;
use walker::mocap::{POINTS, TruthClip};
use walker::observe;
use walker::{Dynamics, Ellipse, InitialPose, PointObservation, WalkerConfig, WalkerTracker};

use crate::runtime::{ClipClock, Solver, clip_position, push_history};
use crate::scenes::track::model::repo_path;

/// Most particles the scene accepts.
pub const MAX_WALKER_PARTICLES: usize = 20_000;
/// The tracking points' names, in [`POINTS`] order.
pub const POINT_NAMES: [&str; POINTS] =
    ["hip", "left knee", "left foot", "right knee", "right foot"];

/// What the user may change.
#[derive(Clone, Debug, PartialEq)]
pub struct WalkerSettings {
    pub dynamics: Dynamics,
    /// N and N_thres.
    pub particles: usize,
    pub resample_threshold: usize,
    /// Pixel noise of the observations (σ, px).
    pub noise_px: f64,
    /// Per-frame force sample noise of the active prior (Tables 2.2 / 2.4
    /// `σ_f` / `σ_κ`).
    pub force_sigma: f64,
    /// Knees and feet hidden for clip frames `start..end` (`None`: none).
    pub occlusion: Option<(usize, usize)>,
    pub seed: u64,
    /// Play at the clip's frame rate (else one frame per displayed frame).
    pub realtime: bool,
    /// Publish the MAP trajectory (ancestry of the heaviest particle).
    pub show_map: bool,
}

impl Default for WalkerSettings {
    fn default() -> Self {
        Self {
            dynamics: Dynamics::Anthropomorphic,
            particles: 2500,
            resample_threshold: 500,
            noise_px: 1.0,
            force_sigma: walker::ForceParams::WALKER.sample_sigma,
            occlusion: None,
            seed: 1,
            realtime: true,
            show_map: false,
        }
    }
}

impl WalkerSettings {
    /// Checks every field, naming the first bad one.
    ///
    /// # Errors
    /// N outside 1 … [`MAX_WALKER_PARTICLES`], N_thres > N, σ < 0 or not
    /// finite, an empty occlusion span.
    pub fn validate(&self) -> Result<()> {
        ensure!(
            (1..=MAX_WALKER_PARTICLES).contains(&self.particles),
            "particles: {} is outside 1 … {MAX_WALKER_PARTICLES}",
            self.particles
        );
        ensure!(
            self.resample_threshold <= self.particles,
            "resample_threshold: N_thres = {} exceeds N = {}",
            self.resample_threshold,
            self.particles
        );
        for (name, v) in [
            ("noise_px", self.noise_px),
            ("force_sigma", self.force_sigma),
        ] {
            ensure!(
                v.is_finite() && v >= 0.0,
                "{name}: {v} must be finite and ≥ 0"
            );
        }
        if let Some((a, b)) = self.occlusion {
            ensure!(a < b, "occlusion: frames {a}..{b} is empty");
        }
        Ok(())
    }
}

/// One plotted frame.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WalkerSample {
    pub frame: usize,
    pub ess: f64,
    /// Distance of each ellipse mean from the true projection (px).
    pub err_px: [f64; POINTS],
    /// Mean one-σ ellipse area of the knees and feet (px²).
    pub leg_area: f64,
}

/// What the frame draws.
#[derive(Clone, Debug, Default)]
pub struct WalkerSnapshot {
    pub frame: usize,
    pub frames: usize,
    /// The camera's image size and its projections this frame: observed
    /// points (`None`: occluded), the truth, the ellipses (μ, Σ).
    pub image_size: (u32, u32),
    pub observed: [Option<[f64; 2]>; POINTS],
    pub truth_px: [Option<[f64; 2]>; POINTS],
    pub ellipses: [Ellipse; POINTS],
    /// World points (metres): the mean legs (hip, knee, ankle, heel, toe
    /// per leg), the true tracking points, every particle's five points.
    pub mean_legs: [[[f32; 3]; 5]; 2],
    pub truth: [[f32; 3]; POINTS],
    pub cloud: Vec<[f32; 3 * POINTS]>,
    pub weights: Vec<f64>,
    /// The MAP trajectory's points per frame since the last rebuild.
    pub map: Vec<[[f32; 3]; POINTS]>,
    pub camera_position: [f32; 3],
    pub history: VecDeque<WalkerSample>,
    pub left_stance: f64,
    pub occluded: bool,
    pub step_ms: f64,
    pub settings: WalkerSettings,
}

/// The walker scene (module docs).
pub struct WalkerScene {
    clip: TruthClip,
    camera: labels::Camera,
    settings: WalkerSettings,
    tracker: WalkerTracker,
    rng: smc::ParticleRng,
    frame: usize,
    last: Option<walker::FrameReport>,
    observed: PointObservation,
    history: VecDeque<WalkerSample>,
    map: Vec<[[f32; 3]; POINTS]>,
    clock: ClipClock,
    step_ms: f64,
}

fn f32s(p: &Point3<f64>) -> [f32; 3] {
    [p.x as f32, p.y as f32, p.z as f32]
}

impl WalkerScene {
    /// The walk of `bvh` (default: the CMU walk) at 30 frames/s, seen from
    /// the side 6 m away, tracked from its first heel strike.
    ///
    /// # Errors
    /// A missing or bad BVH, a clip without a walk, bad settings.
    pub fn new(bvh: Option<PathBuf>, settings: WalkerSettings) -> Result<Self> {
        settings.validate()?;
        let path = bvh.unwrap_or_else(|| repo_path("assets/motions/cmu_131_01_walk.bvh"));
        // The CMU clips are 120 Hz: every 4th frame is the thesis' 30 Hz.
        let full = TruthClip::load(&path, 0, 4, usize::MAX)
            .with_context(|| format!("walker clip {}", path.display()))?;
        let clip = full
            .walking_part()
            .with_context(|| format!("walker clip {}", path.display()))?;
        let camera = clip.side_camera(0.0, 6.0)?;
        let tracker = Self::build(&clip, &camera, &settings, 0)?;
        Ok(Self {
            rng: smc::stream_rng(settings.seed, 0, smc::StreamDomain::User(7), 0),
            clock: ClipClock::new(clip.frame_time),
            clip,
            camera,
            settings,
            tracker,
            frame: 0,
            last: None,
            observed: PointObservation::default(),
            history: VecDeque::new(),
            map: Vec::new(),
            step_ms: 0.0,
        })
    }

    fn build(
        clip: &TruthClip,
        camera: &labels::Camera,
        s: &WalkerSettings,
        frame: usize,
    ) -> Result<WalkerTracker> {
        let init = InitialPose::from_truth(clip, frame)?;
        let mut cfg = WalkerConfig::thesis(s.dynamics, camera.clone(), init);
        cfg.particles = s.particles;
        cfg.resample_threshold = s.resample_threshold;
        cfg.seed = s.seed;
        cfg.frame_time = clip.frame_time;
        cfg.substeps = (clip.frame_time * 60.0).round().max(1.0) as usize;
        // As the experiments (docs/walker.md): heading noise 0.02 rad/s.
        cfg.joints.torso.noise = 0.02;
        match s.dynamics {
            Dynamics::Monopode => cfg.monopode_forces.sample_sigma = s.force_sigma,
            _ => cfg.walker_forces.sample_sigma = s.force_sigma,
        }
        cfg.record_history = true;
        Ok(WalkerTracker::new(cfg)?)
    }

    pub fn settings(&self) -> &WalkerSettings {
        &self.settings
    }

    fn occluded(&self, frame: usize) -> bool {
        self.settings
            .occlusion
            .is_some_and(|(a, b)| (a..b).contains(&frame))
    }

    fn rebuild(&mut self) -> Result<()> {
        self.tracker = Self::build(&self.clip, &self.camera, &self.settings, self.frame)?;
        self.map.clear();
        Ok(())
    }
}

impl Solver for WalkerScene {
    type Snapshot = WalkerSnapshot;
    /// The panel's settings.
    type Edit = WalkerSettings;

    /// New settings; N, N_thres, the dynamics, the force noise or the seed
    /// rebuild the tracker at the current frame (initialised from the
    /// clip, as the thesis initialised by hand).
    fn apply(&mut self, s: WalkerSettings) -> Result<()> {
        s.validate()?;
        let old = std::mem::replace(&mut self.settings, s);
        let n = &self.settings;
        let rebuild = n.dynamics != old.dynamics
            || n.particles != old.particles
            || n.resample_threshold != old.resample_threshold
            || n.force_sigma != old.force_sigma
            || n.seed != old.seed;
        if rebuild && let Err(e) = self.rebuild() {
            self.settings = old;
            return Err(e);
        }
        Ok(())
    }

    fn reset(&mut self) -> Result<()> {
        self.frame = 0;
        self.history.clear();
        self.last = None;
        self.rng = smc::stream_rng(self.settings.seed, 0, smc::StreamDomain::User(7), 0);
        self.rebuild()
    }

    fn step(&mut self, time: f64) -> Result<()> {
        if !self.clock.frame_due(self.settings.realtime, time) {
            return Ok(());
        }
        if self.frame >= self.clip.len() {
            // The clip loops: start again from its first frame.
            self.frame = 0;
            self.history.clear();
            self.rebuild()?;
        }
        let truth = &self.clip.frames[self.frame];
        let visible = if self.occluded(self.frame) {
            [true, false, false, false, false]
        } else {
            [true; POINTS]
        };
        self.observed = observe(
            &self.camera,
            &truth.points,
            &visible,
            self.settings.noise_px,
            &mut self.rng,
        );
        let t0 = std::time::Instant::now();
        let r = self.tracker.step(&self.observed)?;
        self.step_ms = t0.elapsed().as_secs_f64() * 1e3;
        let mut err_px = [0.0; POINTS];
        for (k, e) in err_px.iter_mut().enumerate() {
            if let Some((u, v, _)) = self.camera.project(&truth.points[k]) {
                *e = (r.ellipses[k].mean[0] - u).hypot(r.ellipses[k].mean[1] - v);
            }
        }
        let leg_area = r.ellipses[1..].iter().map(Ellipse::area).sum::<f64>() / 4.0;
        push_history(
            &mut self.history,
            WalkerSample {
                frame: self.frame,
                ess: r.ess,
                err_px,
                leg_area,
            },
        );
        if self.settings.show_map {
            self.map = self
                .tracker
                .map_trajectory()?
                .iter()
                .map(|pts| pts.map(|p| f32s(&p)))
                .collect();
        }
        self.last = Some(r);
        self.frame += 1;
        Ok(())
    }

    fn snapshot_into(&self, out: &mut WalkerSnapshot) {
        (out.frame, out.frames) = clip_position(self.frame, self.clip.len());
        let shown = out.frame;
        out.image_size = (self.camera.width(), self.camera.height());
        out.observed = self.observed.points;
        let truth = &self.clip.frames[shown];
        out.truth_px = truth
            .points
            .map(|p| self.camera.project(&p).map(|(u, v, _)| [u, v]));
        out.truth = truth.points.map(|p| f32s(&p));
        if let Some(r) = &self.last {
            out.ellipses = r.ellipses;
            out.mean_legs = r
                .mean_pose
                .leg_points()
                .map(|l| [l.hip, l.knee, l.ankle, l.heel, l.toe].map(|p| f32s(&p)));
            out.left_stance = r.left_stance_probability;
        }
        out.cloud.clear();
        out.cloud.extend_from_slice(self.tracker.particle_points());
        out.weights.clear();
        out.weights.extend_from_slice(self.tracker.weights());
        if self.settings.show_map {
            out.map.clone_from(&self.map);
        } else {
            out.map.clear();
        }
        out.camera_position = f32s(&Point3::from(
            self.camera.world_from_camera().translation.vector,
        ));
        out.history.clone_from(&self.history);
        out.occluded = self.occluded(shown);
        out.step_ms = self.step_ms;
        out.settings.clone_from(&self.settings);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::stepped;

    fn fast() -> WalkerSettings {
        WalkerSettings {
            particles: 400,
            resample_threshold: 100,
            realtime: false,
            ..WalkerSettings::default()
        }
    }

    #[test]
    fn follows_the_walk_and_publishes_cloud_ellipses_and_map() {
        let mut scene = WalkerScene::new(
            None,
            WalkerSettings {
                show_map: true,
                ..fast()
            },
        )
        .unwrap();
        let snap = stepped(&mut scene, 20);
        assert_eq!(snap.cloud.len(), 400);
        assert_eq!(snap.weights.len(), 400);
        assert_eq!(snap.map.len(), 20);
        assert_eq!(snap.history.len(), 20);
        // The hip's ellipse mean stays near the observed hip: within
        // 25 px over the first 20 frames (the experiments' mean hip error
        // with 2,500 particles is 14 px; σ = 7 px).
        let worst = snap.history.iter().map(|h| h.err_px[0]).fold(0.0, f64::max);
        assert!(worst < 25.0, "hip {worst} px off");
        let sum: f64 = snap.weights.iter().sum();
        assert!((sum - 1.0).abs() < 1e-9);
    }

    #[test]
    fn occluded_legs_grow_their_ellipses_and_settings_are_checked() {
        let mut scene = WalkerScene::new(
            None,
            WalkerSettings {
                occlusion: Some((5, 25)),
                ..fast()
            },
        )
        .unwrap();
        for _ in 0..25 {
            scene.step(0.0).unwrap();
        }
        let h = &scene.history;
        let before = h[4].leg_area;
        let during = h[24].leg_area;
        assert!(
            during > 3.0 * before,
            "ellipses {before} px² before, {during} px² after 20 occluded frames"
        );
        assert!(scene.observed.points[1].is_none() && scene.observed.points[0].is_some());
        let bad = WalkerSettings {
            resample_threshold: 500,
            particles: 100,
            ..fast()
        };
        let e = scene.apply(bad).unwrap_err();
        assert!(e.to_string().contains("N_thres"), "{e}");
        assert_eq!(scene.settings().particles, 400);
        let monopode = WalkerSettings {
            dynamics: Dynamics::Monopode,
            ..fast()
        };
        scene.apply(monopode).unwrap();
        scene.step(0.0).unwrap();
        assert!(
            WalkerScene::new(Some("/nonexistent/walk.bvh".into()), fast())
                .err()
                .is_some_and(|e| format!("{e:#}").contains("/nonexistent/walk.bvh"))
        );
    }
}

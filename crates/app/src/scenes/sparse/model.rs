//! The sparse-sensor scene's model (Bevy-free): SPARSE's physics-based
//! tracker (`crates/sparse`) driven by six IMUs and five markers
//! synthesised from a CMU clip, as a
//! [`runtime::Solver`](crate::runtime::Solver). One step is one 60 Hz
//! sensor frame; the clip loops. Sensors can be switched off live (the
//! motion prior takes over), the prior (REF, NGT, CD) and the stiffness /
//! damping of the compliant rows (SPARSE Eq. 6) changed.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, ensure};
use nalgebra::Isometry3;
use skeleton::Skeleton;
use sparse::{
    Clip, ClusterOptions, ClusteredDatabase, MotionPrior, SensorFrame, SensorSet, SparseConfig,
    SparseTracker, SyntheticSensors, body_errors, error_bodies,
};

use crate::runtime::{ClipClock, Solver, clip_position, push_history};
use crate::scenes::track::model::repo_path;

/// Which motion prior (SPARSE §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PriorKind {
    /// REF: the rest pose.
    Reference,
    /// NGT: ground truth + N(0, 0.12 rad).
    NoisyTruth,
    /// CD: k-NN in poses clustered from the other clip.
    Clustered,
}

impl PriorKind {
    pub const ALL: [PriorKind; 3] = [Self::Reference, Self::NoisyTruth, Self::Clustered];
    pub fn name(self) -> &'static str {
        match self {
            Self::Reference => "REF (rest pose)",
            Self::NoisyTruth => "NGT (truth + 0.12 rad noise)",
            Self::Clustered => "CD (clustered database)",
        }
    }
}

/// What the user may change.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseSettings {
    pub prior: PriorKind,
    /// Enabled IMUs and markers, in the sensor set's order.
    pub imus: Vec<bool>,
    pub markers: Vec<bool>,
    /// Stiffness of the marker, IMU and prior rows and the damping of the
    /// sensor and prior rows (Eq. 6).
    pub marker_stiffness: f64,
    pub imu_stiffness: f64,
    pub prior_stiffness: f64,
    pub damping: f64,
    pub prior_damping: f64,
    /// Physics (contacts, torques; else kinematic compliant tracking).
    pub physics: bool,
    /// Play at 60 frames/s (else one frame per displayed frame).
    pub realtime: bool,
}

impl Default for SparseSettings {
    /// The tuned configuration with the paper's six IMUs and five markers
    /// all on (what [`SparseScene::new`] starts with).
    fn default() -> Self {
        // The paper's layout: six IMUs, five markers.
        Self::from_config(&SparseConfig::tuned(), (6, 5))
    }
}

impl SparseSettings {
    /// `c`'s stiffnesses and dampings with every one of `(imus, markers)`
    /// sensors on.
    fn from_config(c: &SparseConfig, (imus, markers): (usize, usize)) -> Self {
        Self {
            prior: PriorKind::NoisyTruth,
            imus: vec![true; imus],
            markers: vec![true; markers],
            marker_stiffness: c.marker_stiffness,
            imu_stiffness: c.imu_stiffness,
            prior_stiffness: c.prior_stiffness,
            damping: c.damping,
            prior_damping: c.prior_damping,
            physics: c.physics,
            realtime: true,
        }
    }

    fn apply_to(&self, c: &mut SparseConfig) {
        c.marker_stiffness = self.marker_stiffness;
        c.imu_stiffness = self.imu_stiffness;
        c.prior_stiffness = self.prior_stiffness;
        c.damping = self.damping;
        c.prior_damping = self.prior_damping;
        c.physics = self.physics;
    }
}

/// One plotted frame.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SparseSample {
    pub frame: usize,
    /// Mean body position (cm) and orientation (deg) error (SPARSE §4.1).
    pub position_cm: f64,
    pub orientation_deg: f64,
    /// Left and right knee flexion torques (N·m).
    pub knee_torque: [f64; 2],
    /// Total vertical contact force (N).
    pub contact_force: f64,
}

/// What the frame draws.
#[derive(Clone, Debug, Default)]
pub struct SparseSnapshot {
    pub frame: usize,
    pub frames: usize,
    /// Joint positions of the tracked body and of the ground truth; bones.
    pub body: Vec<[f32; 3]>,
    pub truth: Vec<[f32; 3]>,
    pub bones: Vec<(usize, usize)>,
    /// IMU frames on the tracked body (position, rotation as a quaternion
    /// `[x, y, z, w]`), enabled flag.
    pub imus: Vec<([f32; 3], [f32; 4], bool)>,
    /// Markers: the measured position (`None`: dropped or disabled) and
    /// the marker on the tracked body.
    pub markers: Vec<(Option<[f32; 3]>, [f32; 3], bool)>,
    pub sensor_names: (Vec<String>, Vec<String>),
    /// Contact points and forces (N).
    pub contacts: Vec<([f32; 3], [f32; 3])>,
    pub history: VecDeque<SparseSample>,
    pub step_ms: f64,
    pub settings: SparseSettings,
    pub clip_name: String,
    /// The clip's skeleton, the tracked pose on it (for exports) and the
    /// clip's seconds per frame.
    pub skeleton: Option<Arc<Skeleton>>,
    pub pose: Vec<f64>,
    pub frame_time: f64,
}

/// The sparse-sensor scene (module docs).
pub struct SparseScene {
    clip: Clip,
    /// The clip's skeleton, shared with the snapshots.
    skeleton: Arc<Skeleton>,
    other_clip: Option<PathBuf>,
    sensors: SensorSet,
    readings: Vec<SensorFrame>,
    base_config: SparseConfig,
    tracker: SparseTracker,
    settings: SparseSettings,
    bodies: Vec<usize>,
    bones: Vec<(usize, usize)>,
    knees: [Option<usize>; 2],
    frame: usize,
    last: Option<sparse::SparseStepReport>,
    history: VecDeque<SparseSample>,
    cd: Option<ClusteredDatabase>,
    clock: ClipClock,
    step_ms: f64,
}

fn f32s(v: &nalgebra::Vector3<f64>) -> [f32; 3] {
    [v.x as f32, v.y as f32, v.z as f32]
}

impl SparseScene {
    /// The clip (default: the CMU walk) at 60 Hz with the paper's sensor
    /// layout; `other` (default: the hop) feeds the CD prior's database.
    ///
    /// # Errors
    /// A missing or bad clip, a skeleton without the sensor bones.
    pub fn new(clip: Option<PathBuf>, other: Option<PathBuf>) -> Result<Self> {
        let path = clip.unwrap_or_else(|| repo_path("assets/motions/cmu_131_01_walk.bvh"));
        let clip = Clip::load_bvh(&path, 60.0)
            .with_context(|| format!("sparse clip {}", path.display()))?;
        ensure!(
            clip.len() >= 2,
            "sparse clip {}: needs at least 2 frames",
            path.display()
        );
        let other = other.or_else(|| Some(repo_path("assets/motions/cmu_131_03_hop.bvh")));
        let sensors = SensorSet::paper_layout(&clip.skeleton)?;
        let readings =
            SyntheticSensors::default().synthesize(&sensors, &clip.skeleton, &clip.poses)?;
        let base_config = SparseConfig::tuned();
        let settings =
            SparseSettings::from_config(&base_config, (sensors.imus.len(), sensors.markers.len()));
        let prior = MotionPrior::noisy_ground_truth(clip.poses.clone(), 0.12, 11)?;
        let mut tracker =
            SparseTracker::new(&clip.skeleton, sensors.clone(), prior, base_config.clone())?;
        tracker.reset(&clip.poses[0], None)?;
        let sk = &clip.skeleton;
        let bones = (0..sk.len())
            .filter_map(|j| sk.joint(j).parent.map(|p| (p, j)))
            .filter(|&(_, j)| sk.joint(j).offset.norm() > 1e-9)
            .collect();
        let knees =
            ["LeftKnee", "RightKnee"].map(|n| sk.find(n).ok().map(|j| sk.param_range(j).start));
        Ok(Self {
            bodies: error_bodies(sk),
            bones,
            knees,
            other_clip: other,
            sensors,
            readings,
            base_config,
            tracker,
            settings,
            frame: 1,
            last: None,
            history: VecDeque::new(),
            cd: None,
            clock: ClipClock::new(clip.frame_time),
            step_ms: 0.0,
            skeleton: Arc::new(clip.skeleton.clone()),
            clip,
        })
    }

    pub fn settings(&self) -> &SparseSettings {
        &self.settings
    }

    fn make_prior(&mut self, kind: PriorKind) -> Result<MotionPrior> {
        Ok(match kind {
            PriorKind::Reference => MotionPrior::reference(&self.clip.skeleton),
            PriorKind::NoisyTruth => {
                MotionPrior::noisy_ground_truth(self.clip.poses.clone(), 0.12, 11)?
            }
            PriorKind::Clustered => {
                if self.cd.is_none() {
                    let path = self
                        .other_clip
                        .clone()
                        .context("CD prior: no second clip for the database")?;
                    let other = Clip::load_bvh(&path, 60.0)
                        .with_context(|| format!("CD prior database {}", path.display()))?;
                    let db = ClusteredDatabase::build(
                        &self.clip.skeleton,
                        &self.sensors,
                        &[other.poses.as_slice()],
                        ClusterOptions {
                            clusters: 200,
                            ..ClusterOptions::default()
                        },
                    )
                    .with_context(|| format!("CD prior database {}", path.display()))?;
                    self.cd = Some(db);
                }
                MotionPrior::Clustered(self.cd.clone().expect("built above"))
            }
        })
    }

    /// Back to the clip's first frame (the NGT prior indexes frames).
    fn restart(&mut self) -> Result<()> {
        self.frame = 1;
        self.history.clear();
        let prior = self.make_prior(self.settings.prior)?;
        self.tracker.set_prior(prior);
        self.tracker.reset(&self.clip.poses[0], None)?;
        Ok(())
    }
}

impl Solver for SparseScene {
    type Snapshot = SparseSnapshot;
    /// The panel's settings.
    type Edit = SparseSettings;

    fn apply(&mut self, s: SparseSettings) -> Result<()> {
        ensure!(
            s.imus.len() == self.sensors.imus.len()
                && s.markers.len() == self.sensors.markers.len(),
            "sensors: {} IMUs and {} markers expected",
            self.sensors.imus.len(),
            self.sensors.markers.len()
        );
        let mut config = self.base_config.clone();
        s.apply_to(&mut config);
        config.validate()?;
        if s.prior != self.settings.prior {
            let prior = self.make_prior(s.prior)?;
            self.tracker.set_prior(prior);
        }
        self.tracker.set_config(config)?;
        for (i, &on) in s.imus.iter().enumerate() {
            self.tracker.set_imu_enabled(i, on)?;
        }
        for (i, &on) in s.markers.iter().enumerate() {
            self.tracker.set_marker_enabled(i, on)?;
        }
        self.settings = s;
        Ok(())
    }

    fn reset(&mut self) -> Result<()> {
        self.restart()
    }

    fn step(&mut self, time: f64) -> Result<()> {
        if !self.clock.frame_due(self.settings.realtime, time) {
            return Ok(());
        }
        if self.frame >= self.clip.len() {
            self.restart()?;
        }
        let t0 = std::time::Instant::now();
        let r = self.tracker.step(&self.readings[self.frame])?;
        self.step_ms = t0.elapsed().as_secs_f64() * 1e3;
        let sk = &self.clip.skeleton;
        let truth = sk.forward_kinematics(&self.clip.poses[self.frame])?;
        let tracked = self.tracker.body_transforms();
        let (pos, ang) = body_errors(sk, &self.bodies, &truth, &tracked);
        let knee = |k: Option<usize>| {
            k.and_then(|i| r.joint_torques.get(i).copied())
                .unwrap_or(0.0)
        };
        push_history(
            &mut self.history,
            SparseSample {
                frame: self.frame,
                position_cm: pos * 100.0,
                orientation_deg: ang.to_degrees(),
                knee_torque: [knee(self.knees[0]), knee(self.knees[1])],
                contact_force: r.contacts.iter().map(|c| c.force().y).sum(),
            },
        );
        self.last = Some(r);
        self.frame += 1;
        Ok(())
    }

    fn snapshot_into(&self, out: &mut SparseSnapshot) {
        (out.frame, out.frames) = clip_position(self.frame, self.clip.len());
        out.clip_name.clone_from(&self.clip.name);
        let tracked = self.tracker.body_transforms();
        if !out
            .skeleton
            .as_ref()
            .is_some_and(|s| Arc::ptr_eq(s, &self.skeleton))
        {
            out.skeleton = Some(self.skeleton.clone());
        }
        out.pose.clear();
        out.pose.extend_from_slice(self.tracker.pose());
        out.frame_time = self.clip.frame_time;
        out.body.clear();
        out.body
            .extend(tracked.iter().map(|w| f32s(&w.translation.vector)));
        out.truth.clear();
        if let Ok(truth) = self
            .clip
            .skeleton
            .forward_kinematics(&self.clip.poses[out.frame])
        {
            out.truth
                .extend(truth.iter().map(|w| f32s(&w.translation.vector)));
        }
        out.bones.clone_from(&self.bones);
        let worn = self.tracker.predicted_readings();
        out.imus = self
            .sensors
            .imus
            .iter()
            .enumerate()
            .map(|(i, imu)| {
                let at: &Isometry3<f64> = &tracked[imu.joint];
                let q = worn.imus[i].unwrap_or(at.rotation);
                let c = q.coords;
                (
                    f32s(&at.translation.vector),
                    [c.x as f32, c.y as f32, c.z as f32, c.w as f32],
                    self.settings.imus[i],
                )
            })
            .collect();
        let measured = &self.readings[out.frame];
        out.markers = (0..self.sensors.markers.len())
            .map(|i| {
                let on = self.settings.markers[i];
                let m = measured.markers[i].filter(|_| on).map(|p| f32s(&p.coords));
                let w = worn.markers[i].map_or([f32::NAN; 3], |p| f32s(&p.coords));
                (m, w, on)
            })
            .collect();
        out.sensor_names = (
            self.sensors.imus.iter().map(|s| s.name.clone()).collect(),
            self.sensors
                .markers
                .iter()
                .map(|s| s.name.clone())
                .collect(),
        );
        out.contacts.clear();
        if let Some(r) = &self.last {
            out.contacts.extend(
                r.contacts
                    .iter()
                    .map(|c| (f32s(&c.point.coords), f32s(&c.force()))),
            );
        }
        out.history.clone_from(&self.history);
        out.step_ms = self.step_ms;
        out.settings.clone_from(&self.settings);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::stepped;

    fn scene() -> SparseScene {
        let mut s = SparseScene::new(None, None).unwrap();
        let mut settings = s.settings().clone();
        settings.realtime = false;
        s.apply(settings).unwrap();
        s
    }

    #[test]
    fn tracks_the_walk_and_a_dropped_marker_keeps_the_body_close() {
        let mut s = scene();
        let snap = stepped(&mut s, 30);
        assert_eq!(snap.body.len(), snap.truth.len());
        assert_eq!(snap.imus.len(), 6);
        assert_eq!(snap.markers.len(), 5);
        // docs/sparse.md's Table 1 (NGT, walk): a few cm; half a second in,
        // the mean body error stays under 6 cm.
        let last = snap.history.back().unwrap();
        assert!(last.position_cm < 6.0, "{last:?}");
        // Drop the head IMU and a hand marker: the prior carries them.
        let mut settings = s.settings().clone();
        settings.imus[0] = false;
        settings.markers[1] = false;
        s.apply(settings).unwrap();
        let snap = stepped(&mut s, 30);
        assert!(!snap.imus[0].2 && snap.markers[1].0.is_none());
        let last = snap.history.back().unwrap();
        assert!(last.position_cm < 12.0, "{last:?}");
    }

    #[test]
    fn bad_settings_keep_the_old_ones() {
        let mut s = scene();
        let mut bad = s.settings().clone();
        bad.prior_stiffness = -1.0;
        assert!(s.apply(bad).is_err());
        assert!(s.settings().prior_stiffness > 0.0);
        let mut bad = s.settings().clone();
        bad.imus.pop();
        assert!(s.apply(bad).is_err());
        let mut reference = s.settings().clone();
        reference.prior = PriorKind::Reference;
        s.apply(reference).unwrap();
        s.step(0.0).unwrap();
        assert!(
            SparseScene::new(Some("/nonexistent/clip.bvh".into()), None)
                .err()
                .is_some_and(|e| format!("{e:#}").contains("/nonexistent/clip.bvh"))
        );
    }
}

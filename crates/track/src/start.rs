//! Initialisation from a standard start pose (RTPF §VII-A calibrates on
//! the first image): the person stands in a known pose — arms down or a
//! T-pose — facing the camera somewhere in view. [`start_pose`] poses the
//! body's skeleton that way; [`place_by_silhouette`] finds where it stands
//! by a short search over the global position against the frame's
//! foreground mask (depth stands in for the body's scale, whose bone
//! lengths the body file gives). The colour models are then learned from
//! that frame in that pose.

use labels::{Camera, LabelMap, Observation};
use nalgebra::{Point3, Vector3};
use skeleton::Skeleton;
use vision::Blob;

use crate::backend::BackendChoice;
use crate::body::{Arm, Selection, Side, TrackedBody, angle_between};
use crate::error::{Result, TrackError};
use crate::tracker::{Tracker, TrackerConfig, search_root_position};

/// A pose the user adopts at the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartPose {
    /// Standing, arms hanging down, slightly away from the body (10°).
    ArmsDown,
    /// Standing, arms stretched out sideways, horizontal.
    TPose,
}

impl StartPose {
    /// The name `--start-pose` takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::ArmsDown => "arms-down",
            Self::TPose => "t-pose",
        }
    }
}

impl std::str::FromStr for StartPose {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "arms-down" | "arms_down" => Ok(Self::ArmsDown),
            "t-pose" | "tpose" | "t_pose" => Ok(Self::TPose),
            _ => Err(format!(
                "unknown start pose `{s}` ({}, {})",
                Self::ArmsDown.name(),
                Self::TPose.name()
            )),
        }
    }
}

/// The search [`place_in_view`] runs: ±1.5 m sideways, ±0.4 m in
/// height, ±2 m in depth (world axes), a 9³ grid refined twice.
pub const SEARCH_EXTENT: [f64; 3] = [1.5, 0.4, 2.0];
pub const SEARCH_STEPS: usize = 9;

/// Every part of the body → class 1: the silhouette the foreground mask
/// shows.
pub(crate) const SILHOUETTE_LABEL_MAP: LabelMap = [1; labels::CLASSES];

/// `skeleton` standing upright in `kind`, facing the camera, its root at
/// `root` (world): every angle starts at the rest pose, then the root's
/// rotation and both arms' shoulder and elbow parameters are fitted by
/// coordinate descent so that the trunk (root → mid-shoulders) points up,
/// the body's front (left × up) points horizontally at the camera, and
/// each upper arm and forearm points along the pose's direction (down and
/// 10° out, or straight out). Works for any parametrisation (Euler, exp
/// map) since it only reads forward kinematics.
///
/// # Errors
/// No arms to find ([`Arm::find`]), a root that is not free, or a
/// non-finite `root`.
pub fn start_pose(
    skeleton: &Skeleton,
    kind: StartPose,
    camera: &Camera,
    root: Point3<f64>,
) -> Result<Vec<f64>> {
    start_pose_from(skeleton, kind, camera, root, &skeleton.rest_pose())
}

/// As [`start_pose`], every angle but the fitted ones (root rotation,
/// shoulders, elbows) taken from `base` instead of the rest pose: a
/// standing frame of a motion-capture skeleton whose rest pose is not a
/// standing one (the CMU skeleton's rest pose spreads the legs 20°).
///
/// # Errors
/// As [`start_pose`]; a `base` of the wrong length.
pub fn start_pose_from(
    skeleton: &Skeleton,
    kind: StartPose,
    camera: &Camera,
    root: Point3<f64>,
    base: &[f64],
) -> Result<Vec<f64>> {
    skeleton.check_pose(base)?;
    if !root.coords.iter().all(|v| v.is_finite()) {
        return Err(TrackError::InvalidSetting {
            field: "start position",
            value: format!("{root:?}"),
            reason: "must be finite",
        });
    }
    let (left, right) = (
        Arm::find(skeleton, Side::Left)?,
        Arm::find(skeleton, Side::Right)?,
    );
    let root_range = skeleton.param_range(0);
    if !matches!(skeleton.joint(0).kind, skeleton::JointKind::Free { .. }) || root_range.len() < 6 {
        return Err(TrackError::InvalidSetting {
            field: "body",
            value: skeleton.joint(0).name.clone(),
            reason: "a start pose needs a free root joint (position and orientation)",
        });
    }
    let mut pose = base.to_vec();
    for (k, v) in root.coords.iter().enumerate() {
        pose[root_range.start + k] = *v;
    }
    let free: Vec<usize> = (root_range.start + 3..root_range.end)
        .chain(skeleton.param_range(left.shoulder))
        .chain(skeleton.param_range(left.elbow))
        .chain(skeleton.param_range(right.shoulder))
        .chain(skeleton.param_range(right.elbow))
        .collect();
    let eye = Point3::from(camera.world_from_camera().translation.vector);
    let up = Vector3::y();
    let cost = |p: &[f64]| -> f64 {
        let Ok(w) = skeleton.forward_kinematics(p) else {
            return f64::INFINITY;
        };
        let at = |j: usize| w[j].translation.vector;
        let mid = (at(left.shoulder) + at(right.shoulder)) / 2.0;
        let trunk = mid - at(0);
        let across = at(left.shoulder) - at(right.shoulder);
        let mut front = across.cross(&up);
        front.y = 0.0;
        let mut to_eye = eye.coords - at(0);
        to_eye.y = 0.0;
        let mut c = angle_between(&trunk, &up).powi(2) + angle_between(&front, &to_eye).powi(2);
        for arm in [&left, &right] {
            let mut out = at(arm.shoulder) - mid;
            out.y = 0.0;
            let out = out.try_normalize(1e-9).unwrap_or_else(Vector3::x);
            let target = match kind {
                StartPose::ArmsDown => {
                    let a = 10f64.to_radians();
                    -up * a.cos() + out * a.sin()
                }
                StartPose::TPose => out,
            };
            let upper = at(arm.elbow) - at(arm.shoulder);
            let fore = at(arm.wrist) - at(arm.elbow);
            c += angle_between(&upper, &target).powi(2) + angle_between(&fore, &target).powi(2);
        }
        c
    };
    coordinate_descent(&mut pose, &free, &cost);
    skeleton.check_pose(&pose)?;
    Ok(pose)
}

/// Minimises `cost` over the parameters `free` of `x`: each in turn tries
/// ± the step, keeping improvements; the step halves when a sweep finds
/// none, or after [`SWEEPS_PER_STEP`] sweeps at one step (0.5 rad down to
/// 10⁻⁴ rad). The cap bounds the work: without it a cost that keeps
/// improving a little at a large step took ~10⁵ evaluations (a second; 30 ms with the cap).
fn coordinate_descent(x: &mut [f64], free: &[usize], cost: &dyn Fn(&[f64]) -> f64) {
    const SWEEPS_PER_STEP: usize = 40;
    let mut best = cost(x);
    let mut step = 0.5;
    let mut sweeps = 0;
    while step > 1e-4 {
        sweeps += 1;
        let mut improved = false;
        for &i in free {
            for dir in [1.0, -1.0] {
                let old = x[i];
                x[i] = old + dir * step;
                let c = cost(x);
                if c < best {
                    best = c;
                    improved = true;
                } else {
                    x[i] = old;
                }
            }
        }
        if !improved || sweeps >= SWEEPS_PER_STEP {
            step /= 2.0;
            sweeps = 0;
        }
    }
}

/// Where the body in `start` stands: [`search_root_position`] over a
/// `steps³` grid of ±`extent` (world metres) around `start`'s root,
/// weighing the body's silhouette against `mask` (1 = foreground, at the
/// camera's size) by RTPF Eq. 1 on the CPU. Returns the full pose and its
/// F.
///
/// # Errors
/// A mask of another size than the camera, or as [`search_root_position`].
pub(crate) fn place_by_silhouette(
    body: &TrackedBody,
    camera: &Camera,
    mask: &Observation,
    start: &[f64],
    extent: [f64; 3],
    steps: usize,
) -> Result<(Vec<f64>, f64)> {
    if (mask.width(), mask.height()) != (camera.width(), camera.height()) {
        return Err(TrackError::InvalidSetting {
            field: "foreground mask",
            value: format!("{} × {}", mask.width(), mask.height()),
            reason: "must have the camera's size",
        });
    }
    let config = TrackerConfig {
        particles: 1,
        backend: BackendChoice::Cpu,
        label_map: SILHOUETTE_LABEL_MAP,
        ..TrackerConfig::default()
    };
    let mut tracker = Tracker::new(body.clone(), camera.clone(), start, None, config)?;
    search_root_position(&mut tracker, mask, start, extent, steps)
}

/// The guided start's placement (its step 3): the start pose put where the
/// person's blob is in the foreground mask and checked against it. The
/// distance along the optical axis comes from the blob's size — its height
/// when the whole person is in view, else its width against the start
/// pose's — the hips' row from the blob's bottom (or top, when the feet are
/// cut off), then [`place_by_silhouette`] searches around that and the fit
/// must be within `max_residual` (RTPF Eq. 1's F).
pub(crate) struct BlobPlacement<'a> {
    /// The body dressed with capsules.
    pub dressed: &'a Skeleton,
    pub selection: &'a Selection,
    /// The label camera (the mask's size).
    pub camera: &'a Camera,
    /// The mask's height in pixels (rows).
    pub label_height: usize,
    pub start_pose: StartPose,
    /// The body's standing height (m).
    pub stature: f64,
    /// Root height above the soles over the stature, standing.
    pub hip_fraction: f64,
    /// A standing pose of the body file (the root's height and the limbs
    /// the start pose does not set).
    pub standing: &'a [f64],
    /// The largest F accepted.
    pub max_residual: f64,
}

impl BlobPlacement<'_> {
    /// Places the start pose on `blob` of `mask` (frame `frame_index`):
    /// what was found, in words, and the full pose; or why it failed, in
    /// words for the person.
    pub(crate) fn place(
        &self,
        frame_index: usize,
        mask: &[u8],
        blob: &Blob,
    ) -> std::result::Result<(String, Vec<f64>), String> {
        let cam = self.camera;
        let (h, fy) = (self.label_height, cam.fy());
        let (cut_top, cut_bottom) = (blob.y0 == 0, blob.y1 + 1 == h);
        let s = self.stature;
        let width_ratio = self.width_ratio()?;
        let depth = if !cut_top && !cut_bottom {
            fy * s / blob.height() as f64
        } else {
            cam.fx() * width_ratio * s / blob.width() as f64
        };
        // The hips' row.
        let v_root = if !cut_bottom {
            blob.y1 as f64 + 0.5 - self.hip_fraction * s * fy / depth
        } else {
            blob.y0 as f64 + (1.0 - self.hip_fraction) * s * fy / depth
        };
        let u_root = (blob.x0 + blob.x1) as f64 / 2.0;
        let v_px = v_root.clamp(0.0, h as f64 - 1.0) as u32;
        let (origin, dir) = cam.pixel_ray(u_root as u32, v_px);
        let forward = cam.world_from_camera().rotation * Vector3::z();
        let along = dir.dot(&forward).max(1e-3);
        let root = origin + dir.into_inner() * (depth / along);
        let start = start_pose_from(self.dressed, self.start_pose, cam, root, self.standing)
            .map_err(|e| format!("the start pose: {e}"))?;
        let body = TrackedBody::new(self.dressed.clone(), self.selection, &start)
            .map_err(|e| e.to_string())?;
        let mask_obs = Observation::new(cam.width(), cam.height(), mask.to_vec())
            .map_err(|e| e.to_string())?;
        // ±25 % of the distance in depth (±40 % from the width), ±0.4 m
        // across, ±0.25 m in height.
        let spread = if cut_top || cut_bottom { 0.4 } else { 0.25 };
        let extent = [0.4, 0.25, (spread * depth).max(0.3)];
        let (found, f) = place_by_silhouette(&body, cam, &mask_obs, &start, extent, 9)
            .map_err(|e| e.to_string())?;
        if f > self.max_residual {
            return Err(format!(
                "the silhouette does not look like the start pose (F {f:.2}): face the camera, {}",
                match self.start_pose {
                    StartPose::ArmsDown => "arms down by your sides",
                    StartPose::TPose => "arms straight out",
                }
            ));
        }
        let r = &found[..3];
        let note = format!(
            "start pose {} placed on frame {frame_index} at ({:.2}, {:.2}, {:.2}) m, {depth:.1} m away (silhouette {} × {} px{}{}, F {f:.3})",
            self.start_pose.name(),
            r[0],
            r[1],
            r[2],
            blob.width(),
            blob.height(),
            if cut_top { ", cut at the top" } else { "" },
            if cut_bottom {
                ", cut at the bottom"
            } else {
                ""
            }
        );
        Ok((note, found))
    }

    /// The start pose's width across the camera (joints across, plus the
    /// arms' thickness) over the stature: the distance from a blob whose
    /// height is cut off.
    fn width_ratio(&self) -> std::result::Result<f64, String> {
        let cam = self.camera;
        let s = self.stature;
        let probe = start_pose_from(
            self.dressed,
            self.start_pose,
            cam,
            cam.world_from_camera().translation.vector.into(),
            self.standing,
        )
        .map_err(|e| format!("the start pose: {e}"))?;
        let w = self
            .dressed
            .forward_kinematics(&probe)
            .map_err(|e| e.to_string())?;
        let right = cam.world_from_camera().rotation * Vector3::x();
        let across = w.iter().map(|t| t.translation.vector.dot(&right));
        let (lo, hi) = across.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
        Ok((hi - lo + 0.06 * s) / s)
    }
}

/// [`start_pose`] at the search's centre: `distance` metres along the
/// camera's axis ([`in_front_of`]) at the root height of `reference` (a
/// pose of the body file: where its hips are when standing).
///
/// # Errors
/// As [`start_pose`].
pub fn start_pose_in_view(
    skeleton: &Skeleton,
    kind: StartPose,
    camera: &Camera,
    distance: f64,
    reference: &[f64],
) -> Result<Vec<f64>> {
    let hips = reference[skeleton.param_range(0).start + 1];
    start_pose(skeleton, kind, camera, in_front_of(camera, distance, hips))
}

/// Where the person in `start` stands in a frame whose foreground `mask`
/// (camera-sized, 1 = foreground) shows them: [`place_by_silhouette`]
/// over [`SEARCH_EXTENT`] in [`SEARCH_STEPS`]³. Returns the pose and its F.
///
/// # Errors
/// A mask of the wrong length, or as [`place_by_silhouette`].
pub fn place_in_view(
    body: &TrackedBody,
    camera: &Camera,
    mask: Vec<u8>,
    start: &[f64],
) -> Result<(Vec<f64>, f64)> {
    let mask = Observation::new(camera.width(), camera.height(), mask).map_err(|source| {
        TrackError::Likelihood {
            backend: "foreground mask".into(),
            source: source.into(),
        }
    })?;
    place_by_silhouette(body, camera, &mask, start, SEARCH_EXTENT, SEARCH_STEPS)
}

/// The point `distance` metres along the camera's optical axis, at height
/// `height` (world y): where [`start_pose`] puts the root before
/// [`place_by_silhouette`] searches around it.
pub fn in_front_of(camera: &Camera, distance: f64, height: f64) -> Point3<f64> {
    let (o, d) = camera.pixel_ray(camera.width() / 2, camera.height() / 2);
    let mut p = o + d.into_inner() * distance;
    p.y = height;
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmu() -> Skeleton {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../assets/motions/cmu_131_01_walk.bvh"
        );
        skeleton::Bvh::load(path).unwrap().skeleton
    }

    /// Where `pose` puts the root of `skel`.
    fn root_of(skel: &Skeleton, pose: &[f64]) -> Vector3<f64> {
        skel.forward_kinematics(pose).unwrap()[0].translation.vector
    }

    fn camera() -> Camera {
        crate::synthetic::level_camera([1.0, 1.2, 4.0], [0.0, 1.0, 0.0], 40.0, 160, 120).unwrap()
    }

    #[test]
    fn start_poses_stand_up_face_the_camera_and_place_the_arms() {
        let skel = cmu();
        let cam = camera();
        let root = Point3::new(0.0, 0.9, 0.0);
        for kind in [StartPose::ArmsDown, StartPose::TPose] {
            let pose = start_pose(&skel, kind, &cam, root).unwrap();
            let w = skel.forward_kinematics(&pose).unwrap();
            let at = |j: usize| w[j].translation.vector;
            assert!((at(0) - root.coords).norm() < 1e-9);
            let (l, r) = (
                Arm::find(&skel, Side::Left).unwrap(),
                Arm::find(&skel, Side::Right).unwrap(),
            );
            let mid = (at(l.shoulder) + at(r.shoulder)) / 2.0;
            assert!(angle_between(&(mid - at(0)), &Vector3::y()).to_degrees() < 3.0);
            let mut front = (at(l.shoulder) - at(r.shoulder)).cross(&Vector3::y());
            front.y = 0.0;
            let mut to_eye = Vector3::new(1.0, 0.0, 4.0) - at(0);
            to_eye.y = 0.0;
            assert!(
                angle_between(&front, &to_eye).to_degrees() < 3.0,
                "{kind:?} faces the camera"
            );
            for arm in [l, r] {
                let upper = at(arm.elbow) - at(arm.shoulder);
                let fore = at(arm.wrist) - at(arm.elbow);
                let below = angle_between(&upper, &-Vector3::y()).to_degrees();
                match kind {
                    StartPose::ArmsDown => {
                        assert!((below - 10.0).abs() < 3.0, "{kind:?}: {below:.1}°");
                        assert!(angle_between(&upper, &fore).to_degrees() < 3.0);
                    }
                    StartPose::TPose => {
                        assert!((below - 90.0).abs() < 3.0, "{kind:?}: {below:.1}°");
                        assert!(angle_between(&upper, &fore).to_degrees() < 3.0);
                    }
                }
            }
        }
        assert_eq!("t-pose".parse::<StartPose>(), Ok(StartPose::TPose));
        assert!("sitting".parse::<StartPose>().is_err());
        assert!(
            start_pose(
                &skel,
                StartPose::TPose,
                &cam,
                Point3::new(f64::NAN, 0.0, 0.0)
            )
            .is_err()
        );
    }

    /// The guided start's placement from a blob alone: the distance from
    /// the blob's height, the hips' row from its bottom, then the search
    /// finds where either start pose stands; a blob no start pose fits (a
    /// filled box of a person's size) is refused, in words.
    #[test]
    fn a_blob_places_its_start_pose_and_a_box_is_refused() {
        let bvh = skeleton::Bvh::load(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../assets/motions/cmu_131_01_walk.bvh"
        ))
        .unwrap();
        let skel = crate::default_radii(&bvh.skeleton, 1.0).unwrap();
        let standing = bvh.frames.pose(0);
        let stature = crate::defaults::stature(&bvh.skeleton, standing).unwrap();
        let w = bvh.skeleton.forward_kinematics(standing).unwrap();
        let low = w
            .iter()
            .map(|t| t.translation.vector.y)
            .fold(f64::INFINITY, f64::min);
        let cam = camera();
        let placement = |start_pose| BlobPlacement {
            dressed: &skel,
            selection: &Selection::All,
            camera: &cam,
            label_height: 120,
            start_pose,
            stature,
            hip_fraction: (w[0].translation.vector.y - low) / stature,
            standing,
            max_residual: crate::spec::GuideParams::default().place_residual,
        };
        let truth_root = Point3::new(0.3, 0.9, -0.5);
        for kind in [StartPose::ArmsDown, StartPose::TPose] {
            let truth = start_pose_from(&skel, kind, &cam, truth_root, standing).unwrap();
            let body = TrackedBody::new(skel.clone(), &Selection::All, &truth).unwrap();
            let mask = crate::synthetic::render_observation(
                &body,
                &cam,
                &truth,
                &SILHOUETTE_LABEL_MAP,
                0.0,
                7,
            )
            .unwrap()
            .labels()
            .to_vec();
            let blob = Blob::largest(&mask, 160, 120).unwrap();
            let (note, pose) = placement(kind).place(7, &mask, &blob).unwrap();
            let root = root_of(&skel, &pose);
            assert!(
                (root - truth_root.coords).norm() < 0.1,
                "{kind:?}: found {root:?}, truth {truth_root:?} ({note})"
            );
            assert!(note.contains("placed on frame 7"), "{note}");
        }
        // A filled box where a person of this size would stand.
        let mut mask = vec![0u8; 160 * 120];
        for y in 42..99 {
            mask[y * 160 + 70..y * 160 + 120].fill(1);
        }
        let blob = Blob::largest(&mask, 160, 120).unwrap();
        let why = placement(StartPose::ArmsDown)
            .place(7, &mask, &blob)
            .unwrap_err();
        assert!(
            why.contains("does not look like the start pose") && why.contains("arms down"),
            "{why}"
        );
    }

    #[test]
    fn the_silhouette_search_finds_where_the_body_stands() {
        let skel = crate::default_radii(&cmu(), 1.0).unwrap();
        let cam = camera();
        let truth_root = Point3::new(0.3, 0.9, -0.5);
        let truth = start_pose(&skel, StartPose::ArmsDown, &cam, truth_root).unwrap();
        let body = TrackedBody::new(skel.clone(), &crate::Selection::All, &truth).unwrap();
        let mask = crate::synthetic::render_observation(
            &body,
            &cam,
            &truth,
            &SILHOUETTE_LABEL_MAP,
            0.01,
            7,
        )
        .unwrap();
        // Start 3 m from the camera on its axis, hips at 0.9 m.
        let guess = in_front_of(&cam, 3.0, 0.9);
        let start = start_pose(&skel, StartPose::ArmsDown, &cam, guess).unwrap();
        let (found, f) =
            place_by_silhouette(&body, &cam, &mask, &start, [1.5, 0.3, 2.0], 9).unwrap();
        let root = root_of(&skel, &found);
        assert!(
            (root - truth_root.coords).norm() < 0.15,
            "found {root:?}, truth {truth_root:?} (F {f:.3})"
        );
        assert!(f < 0.3, "F {f:.3}");
        let small = Observation::new(80, 60, vec![0; 80 * 60]).unwrap();
        assert!(place_by_silhouette(&body, &cam, &small, &start, [1.0; 3], 5).is_err());
    }
}

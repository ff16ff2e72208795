//! Synthetic sequences with ground truth: a BVH clip rendered to label
//! images by the likelihood's own raster ([`labels::synth::render_label_image`]),
//! mapped to segmentation classes, with optional segmentation-like noise
//! ([`labels::synth::LabelNoise`]). This is what the tests and `track_eval` track (RTPF
//! §VII evaluates on motion-capture sequences whose joint angles are the
//! ground truth).

use labels::{Camera, LabelMap, Observation, label_map_of};
use nalgebra::{Point3, Vector3};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use skeleton::{BodyPart, Bvh, PoseBatch};

use crate::body::{Arm, Side, TrackedBody};
use crate::error::{Result, TrackError};
use crate::start::{StartPose, in_front_of, start_pose};

/// RTPF §IV-D's three segmentation classes: face (1: head and neck), arms
/// (2: upper arms, forearms, hands), clothes (3: torso and pelvis); legs
/// are not segmented (0), as for an upper-body tracker.
pub fn rtpf_classes() -> LabelMap {
    label_map_of(|p| match p {
        BodyPart::Head | BodyPart::Neck => 1,
        BodyPart::UpperArm | BodyPart::Forearm | BodyPart::Hand | BodyPart::Finger => 2,
        BodyPart::Torso | BodyPart::Pelvis => 3,
        _ => 0,
    })
}

/// Finer upper-body classes: head (1), torso (2), upper arms (3), forearms
/// (4), hands (5); legs not segmented.
pub fn upper_body_parts() -> LabelMap {
    label_map_of(|p| match p {
        BodyPart::Head | BodyPart::Neck => 1,
        BodyPart::Torso | BodyPart::Pelvis => 2,
        BodyPart::UpperArm => 3,
        BodyPart::Forearm => 4,
        BodyPart::Hand | BodyPart::Finger => 5,
        _ => 0,
    })
}

/// A camera `spec.distance` metres in front of the body at `pose` (front:
/// the direction `left × up`, horizontal, turned by `spec.azimuth` radians
/// about the vertical towards the subject's left), at the height of the
/// point it looks at, `target` (world), with `spec`'s field of view and
/// image size.
///
/// # Errors
/// A pose FK rejects, no arms to find the front by, or a bad camera.
pub fn camera_in_front(
    body: &TrackedBody,
    pose: &[f64],
    target: Point3<f64>,
    spec: &ClipSpec,
) -> Result<Camera> {
    let skel = body.skeleton();
    let world = skel.forward_kinematics(pose)?;
    let l = Arm::find(skel, Side::Left)?;
    let r = Arm::find(skel, Side::Right)?;
    let left = world[l.shoulder].translation.vector - world[r.shoulder].translation.vector;
    let up = Vector3::y();
    let mut front = left.cross(&up);
    front.y = 0.0;
    let front = front
        .try_normalize(1e-9)
        .ok_or(TrackError::InvalidSetting {
            field: "pose",
            value: "shoulders aligned with the vertical".into(),
            reason: "cannot tell where the body faces",
        })?;
    let front =
        nalgebra::UnitQuaternion::from_axis_angle(&Vector3::y_axis(), -spec.azimuth) * front;
    let eye = target + front * spec.distance;
    Camera::looking_at(eye, target, up, spec.fov, spec.width, spec.height).map_err(camera_error)
}

/// A level camera (world y up) at `eye` looking at `target`, of vertical
/// field of view `fov_deg` degrees and `width × height` pixels: the fixed
/// cameras of the tests and benchmarks.
///
/// # Errors
/// A bad camera (`target` at `eye`, a field of view outside (0°, 180°), an
/// empty image).
pub fn level_camera(
    eye: [f64; 3],
    target: [f64; 3],
    fov_deg: f64,
    width: u32,
    height: u32,
) -> Result<Camera> {
    let (eye, target) = (Point3::from(eye), Point3::from(target));
    Camera::looking_at(
        eye,
        target,
        Vector3::y(),
        fov_deg.to_radians(),
        width,
        height,
    )
    .map_err(camera_error)
}

/// The guided start's test clip: `bvh`'s body standing arms-down
/// ([`StartPose::ArmsDown`]) 2.6 m along `camera`'s axis and 0.3 m to its
/// side, its root at the height of the clip's first frame, held for
/// `frames` frames; and that root.
///
/// # Errors
/// A pose that forward kinematics rejects.
pub fn standing_clip(mut bvh: Bvh, camera: &Camera, frames: usize) -> Result<(Bvh, Point3<f64>)> {
    let hips = bvh.frames.pose(0)[1];
    let mut root = in_front_of(camera, 2.6, hips);
    root.x += 0.3;
    let pose = start_pose(&bvh.skeleton, StartPose::ArmsDown, camera, root)?;
    bvh.frames = PoseBatch::rest(&bvh.skeleton, 0);
    for _ in 0..frames {
        bvh.frames.push(&pose)?;
    }
    Ok((bvh, root))
}

fn camera_error(source: labels::LabelError) -> TrackError {
    TrackError::Likelihood {
        backend: "camera".into(),
        source: source.into(),
    }
}

/// A rendered clip: ground-truth full poses and their observations.
#[derive(Clone, Debug)]
pub struct SyntheticClip {
    pub camera: Camera,
    /// Full poses, one per observation.
    pub truth: Vec<Vec<f64>>,
    pub observations: Vec<Observation>,
}

/// How to render a BVH clip.
#[derive(Clone, Debug)]
pub struct ClipSpec {
    /// First frame of the clip used.
    pub start: usize,
    /// Observations to render.
    pub frames: usize,
    /// Clip frames per observation (4: 120 Hz mocap → 30 Hz video).
    pub stride: usize,
    /// Camera distance (m) in front of the subject at `start`.
    pub distance: f64,
    /// Vertical field of view (rad).
    pub fov: f64,
    /// Camera azimuth (rad) about the vertical from straight in front
    /// (π/2: the subject's left side).
    pub azimuth: f64,
    pub width: u32,
    pub height: u32,
    pub label_map: LabelMap,
    /// Probability that a pixel takes a random label among background and
    /// the classes `label_map` produces (segmentation speckle).
    pub pixel_noise: f64,
    pub seed: u64,
}

impl Default for ClipSpec {
    fn default() -> Self {
        Self {
            start: 0,
            frames: 30,
            stride: 4,
            distance: 4.0,
            fov: 20f64.to_radians(),
            azimuth: 0.0,
            width: 160,
            height: 120,
            label_map: rtpf_classes(),
            pixel_noise: 0.0,
            seed: 0,
        }
    }
}

impl SyntheticClip {
    /// Renders frames `start, start + stride, …` of `clip` (whose skeleton
    /// is `body`'s, e.g. with [`crate::default_radii`]) seen by a camera in
    /// front of the subject at `start`, looking at the mean position of
    /// the root over the rendered frames.
    ///
    /// # Errors
    /// A clip too short for the spec, a bad camera, a skeleton mismatch.
    pub fn render(body: &TrackedBody, clip: &Bvh, spec: &ClipSpec) -> Result<Self> {
        let truth = clip_truth(body, clip, spec)?;
        let camera = clip_camera(body, &truth, spec)?;
        let observations = truth
            .iter()
            .enumerate()
            .map(|(k, p)| {
                render_observation(
                    body,
                    &camera,
                    p,
                    &spec.label_map,
                    spec.pixel_noise,
                    spec.seed + k as u64,
                )
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            camera,
            truth,
            observations,
        })
    }
}

/// The full poses `spec` renders from `clip`: frames `start, start +
/// stride, …`.
///
/// # Errors
/// A clip of another skeleton than `body`'s, or too short for the spec.
pub fn clip_truth(body: &TrackedBody, clip: &Bvh, spec: &ClipSpec) -> Result<Vec<Vec<f64>>> {
    if clip.frames.dof() != body.skeleton().dof() {
        return Err(TrackError::InvalidSetting {
            field: "clip",
            value: format!("{} parameters per frame", clip.frames.dof()),
            reason: "the clip's skeleton is not the body's",
        });
    }
    let last = spec.start + spec.stride.max(1) * spec.frames.saturating_sub(1);
    if spec.frames == 0 || last >= clip.frames.len() {
        return Err(TrackError::InvalidSetting {
            field: "frames",
            value: format!(
                "{} frames from {} every {}",
                spec.frames, spec.start, spec.stride
            ),
            reason: "runs past the end of the clip",
        });
    }
    Ok((0..spec.frames)
        .map(|k| {
            clip.frames
                .pose(spec.start + k * spec.stride.max(1))
                .to_vec()
        })
        .collect())
}

/// The camera of [`SyntheticClip::render`]: [`camera_in_front`] of the
/// subject at `truth[0]`, looking at the mean root position over `truth`
/// raised by 0.25 m.
///
/// # Errors
/// No poses, or as [`camera_in_front`].
pub fn clip_camera(body: &TrackedBody, truth: &[Vec<f64>], spec: &ClipSpec) -> Result<Camera> {
    if truth.is_empty() {
        return Err(TrackError::InvalidSetting {
            field: "frames",
            value: "0".into(),
            reason: "a clip camera needs at least one pose",
        });
    }
    let skel = body.skeleton();
    let mut centre = Vector3::zeros();
    for p in truth {
        centre += skel.forward_kinematics(p)?[0].translation.vector;
    }
    centre /= truth.len() as f64;
    camera_in_front(
        body,
        &truth[0],
        Point3::from(centre + Vector3::new(0.0, 0.25, 0.0)),
        spec,
    )
}

/// One segmented frame: `pose` rendered, labels through `map`, then each
/// pixel with probability `pixel_noise` replaced by a label drawn
/// uniformly from background and the classes of `map`.
///
/// # Errors
/// A bad pose, map or noise probability.
pub fn render_observation(
    body: &TrackedBody,
    camera: &Camera,
    pose: &[f64],
    map: &LabelMap,
    pixel_noise: f64,
    seed: u64,
) -> Result<Observation> {
    if !(0.0..=1.0).contains(&pixel_noise) {
        return Err(TrackError::InvalidSetting {
            field: "pixel_noise",
            value: pixel_noise.to_string(),
            reason: "must be a probability in [0, 1]",
        });
    }
    let wrap = |source: labels::LabelError| TrackError::Likelihood {
        backend: "synthetic render".into(),
        source: source.into(),
    };
    labels::check_label_map(map).map_err(wrap)?;
    let mut labels =
        labels::synth::render_label_image(body.skeleton(), camera, pose).map_err(wrap)?;
    for l in &mut labels {
        if *l != 0 {
            *l = map[usize::from(*l) - 1];
        }
    }
    if pixel_noise > 0.0 {
        let mut classes: Vec<u8> = map.iter().copied().filter(|&c| c != 0).collect();
        classes.push(0);
        classes.sort_unstable();
        classes.dedup();
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        for l in &mut labels {
            if rng.random_bool(pixel_noise) {
                *l = classes[rng.random_range(0..classes.len())];
            }
        }
    }
    Observation::new(camera.width(), camera.height(), labels).map_err(wrap)
}

//! What a tracking session uses when the user gives no files: a webcam-like
//! camera and the project's default adult skeleton.
//!
//! - [`default_camera`]: a pinhole camera at the world origin looking along
//!   −z, level (its x axis horizontal, world y up), the principal point at
//!   the image centre and a horizontal field of view of
//!   [`DEFAULT_FOV_DEG`] (typical of webcams). How far away the person
//!   stands, and how high the camera is above the floor, the guided start
//!   finds from the person's silhouette ([`crate::session`]).
//! - [`default_body`]: the CMU hierarchy of `assets/motions` (the joint
//!   names the tracker's selections and the BVH outputs use), standing as
//!   in the first frame of the walk clip, scaled uniformly so that its
//!   [`stature`] is the subject's height.

use labels::Camera;
use nalgebra::{Point3, Vector3};
use skeleton::{Bvh, PoseBatch, Skeleton};

use crate::error::{Result, TrackError};

/// Horizontal field of view of the default camera, degrees.
pub const DEFAULT_FOV_DEG: f64 = 60.0;
/// Height of the default subject, metres.
pub const DEFAULT_SUBJECT_HEIGHT: f64 = 1.70;
/// The crown of the head above the CMU skeleton's head end site, and the
/// sole below the lowest end site (metres, at the clip's own scale): added
/// to the end sites' vertical extent to give a standing person's height.
const CROWN_AND_SOLE: f64 = 0.09;

/// The CMU walk clip; its hierarchy and first (standing) frame are the
/// default body.
const DEFAULT_BODY_CLIP: &str = include_str!("../../../assets/motions/cmu_131_01_walk.bvh");

/// A `width × height` pinhole camera at the origin looking along −z,
/// level, world y up, of horizontal field of view `fov_deg`, principal
/// point at the centre (module docs).
///
/// # Errors
/// [`TrackError::InvalidSetting`] for a field of view outside (1°, 170°) or
/// an empty image.
pub fn default_camera(width: u32, height: u32, fov_deg: f64) -> Result<Camera> {
    if !(fov_deg.is_finite() && fov_deg > 1.0 && fov_deg < 170.0) {
        return Err(TrackError::InvalidSetting {
            field: "fov",
            value: format!("{fov_deg}"),
            reason: "the horizontal field of view must be between 1° and 170°",
        });
    }
    if width == 0 || height == 0 {
        return Err(TrackError::InvalidSetting {
            field: "frame size",
            value: format!("{width} × {height}"),
            reason: "must be at least 1 × 1",
        });
    }
    let half_h = (fov_deg.to_radians() / 2.0).tan();
    let fov_y = 2.0 * (half_h * f64::from(height) / f64::from(width)).atan();
    Camera::looking_at(
        Point3::origin(),
        Point3::new(0.0, 0.0, -1.0),
        Vector3::y(),
        fov_y,
        width,
        height,
    )
    .map_err(|source| TrackError::Likelihood {
        backend: "default camera".into(),
        source: source.into(),
    })
}

/// A standing person's height in `pose`: the vertical extent of the
/// skeleton's joints plus the crown above the top joint and the sole below
/// the lowest (`CROWN_AND_SOLE` in the skeleton's units).
///
/// # Errors
/// A pose that forward kinematics rejects.
pub(crate) fn stature(skeleton: &Skeleton, pose: &[f64]) -> Result<f64> {
    let world = skeleton.forward_kinematics(pose)?;
    let ys = world.iter().map(|w| w.translation.vector.y);
    let (lo, hi) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), y| {
        (lo.min(y), hi.max(y))
    });
    Ok(hi - lo + CROWN_AND_SOLE)
}

/// `bvh` with every offset, capsule and root position multiplied by
/// `factor` (angles unchanged).
///
/// # Errors
/// A non-finite or non-positive `factor`.
pub(crate) fn scale_body(bvh: &Bvh, factor: f64) -> Result<Bvh> {
    if !(factor.is_finite() && factor > 0.0) {
        return Err(TrackError::InvalidSetting {
            field: "body scale",
            value: format!("{factor}"),
            reason: "must be finite and > 0",
        });
    }
    let joints = bvh
        .skeleton
        .joints()
        .iter()
        .map(|j| {
            let mut j = j.clone();
            j.offset *= factor;
            if let Some(b) = &mut j.body {
                b.capsule.start *= factor;
                b.capsule.end *= factor;
                b.capsule.radius *= factor;
            }
            j
        })
        .collect();
    let skeleton = Skeleton::new(joints)?;
    let root = skeleton.param_range(0);
    let free_root = matches!(skeleton.joint(0).kind, skeleton::JointKind::Free { .. });
    let dof = skeleton.dof();
    let mut frames = PoseBatch::from_vec(dof, Vec::new())?;
    for k in 0..bvh.frames.len() {
        let mut pose = bvh.frames.pose(k).to_vec();
        if free_root {
            for v in &mut pose[root.start..root.start + 3] {
                *v *= factor;
            }
        }
        frames.push(&pose)?;
    }
    Ok(Bvh {
        skeleton,
        frame_time: bvh.frame_time,
        frames,
        channels: bvh.channels.clone(),
    })
}

/// The default body (module docs): the CMU hierarchy standing as in the
/// walk clip's first frame, one frame, scaled to `subject_height` metres.
///
/// # Errors
/// A subject height outside 0.5–2.5 m.
pub fn default_body(subject_height: f64) -> Result<Bvh> {
    check_subject_height(subject_height)?;
    let clip = Bvh::parse(DEFAULT_BODY_CLIP, "assets/motions/cmu_131_01_walk.bvh")?;
    let first = clip.frames.pose(0).to_vec();
    let standing = Bvh {
        frames: PoseBatch::from_vec(clip.skeleton.dof(), first.clone())?,
        ..clip
    };
    let extent = stature(&standing.skeleton, &first)? - CROWN_AND_SOLE;
    scale_body(&standing, (subject_height - CROWN_AND_SOLE) / extent)
}

/// A person's height: 0.5 – 2.5 m.
fn check_subject_height(subject_height: f64) -> Result<()> {
    if subject_height.is_finite() && (0.5..=2.5).contains(&subject_height) {
        Ok(())
    } else {
        Err(TrackError::InvalidSetting {
            field: "subject height",
            value: format!("{subject_height}"),
            reason: "must be between 0.5 and 2.5 metres",
        })
    }
}

/// The body of `bvh` scaled so that its stature in frame `frame` is
/// `subject_height` (a `--bvh` file of another person's proportions at the
/// subject's height).
///
/// # Errors
/// As [`scale_body`]; a frame outside the file; a height outside
/// 0.5 – 2.5 m.
pub(crate) fn body_at_height(bvh: &Bvh, frame: usize, subject_height: f64) -> Result<Bvh> {
    check_subject_height(subject_height)?;
    if frame >= bvh.frames.len() {
        return Err(TrackError::InvalidSetting {
            field: "body frame",
            value: frame.to_string(),
            reason: "outside the body file's frames",
        });
    }
    let extent = stature(&bvh.skeleton, bvh.frames.pose(frame))? - CROWN_AND_SOLE;
    scale_body(bvh, (subject_height - CROWN_AND_SOLE) / extent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_camera_is_level_at_the_origin_with_the_asked_field_of_view() {
        let cam = default_camera(640, 480, 60.0).unwrap();
        assert!((cam.cx() - 320.0).abs() < 1e-9 && (cam.cy() - 240.0).abs() < 1e-9);
        // Horizontal FOV: a point at 30° to the side lands on the edge.
        let edge = Point3::new(30f64.to_radians().tan(), 0.0, -1.0);
        let (u, v, _) = cam.project(&edge).unwrap();
        assert!((u - 640.0).abs() < 1e-6, "u = {u}");
        assert!((v - 240.0).abs() < 1e-6, "level: v = {v}");
        // Square pixels; world up is image up.
        assert!((cam.fx() - cam.fy()).abs() < 1e-9);
        let (_, v_up, _) = cam.project(&Point3::new(0.0, 0.5, -2.0)).unwrap();
        assert!(v_up < 240.0);
        let origin = cam.world_from_camera().translation.vector;
        assert!(origin.norm() < 1e-12);
        assert!(default_camera(640, 480, 0.0).is_err());
        assert!(default_camera(640, 480, f64::NAN).is_err());
        assert!(default_camera(0, 480, 60.0).is_err());
    }

    #[test]
    fn the_default_body_is_the_cmu_hierarchy_at_the_subjects_height() {
        let clip = Bvh::load(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../assets/motions/cmu_131_01_walk.bvh"
        ))
        .unwrap();
        for h in [1.5, 1.7, 1.9] {
            let body = default_body(h).unwrap();
            assert_eq!(body.frames.len(), 1);
            let s = stature(&body.skeleton, body.frames.pose(0)).unwrap();
            assert!((s - h).abs() < 1e-9, "stature {s} for {h}");
            let names: Vec<_> = body.skeleton.joints().iter().map(|j| &j.name).collect();
            let clip_names: Vec<_> = clip.skeleton.joints().iter().map(|j| &j.name).collect();
            assert_eq!(names, clip_names);
        }
        // Taller subjects have proportionally longer bones.
        let (a, b) = (default_body(1.5).unwrap(), default_body(1.8).unwrap());
        let knee = a.skeleton.find("LeftKnee").unwrap();
        let ratio = b.skeleton.joint(knee).offset.norm() / a.skeleton.joint(knee).offset.norm();
        assert!((ratio - 1.2).abs() < 0.02, "ratio {ratio}");
        assert!(default_body(0.2).is_err());
        assert!(default_body(f64::NAN).is_err());
        // A body file scaled to an impossible height is refused the same
        // way (found by the app's flag fuzzing: `--subject-height 1e308`).
        assert!(body_at_height(&clip, 0, 1e308).is_err());
        assert!(
            (stature(
                &body_at_height(&clip, 0, 1.6).unwrap().skeleton,
                clip.frames.pose(0)
            )
            .unwrap()
                - 1.6)
                .abs()
                < 1e-9
        );
    }
}

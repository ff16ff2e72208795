//! Set-up the command-line and window tests share.

use std::path::{Path, PathBuf};

use labels::Camera;
use nalgebra::Point3;
use skeleton::Bvh;
use vision::SyntheticRenderer;

/// `name` under the test target's temporary folder, emptied and created.
pub(crate) fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The tracker's default body (1.7 m tall) before its default camera
/// (320 × 240, 60° wide, level at the origin), and a renderer of the two.
pub(crate) struct DefaultSubject {
    pub body: Bvh,
    pub cam: Camera,
    pub renderer: SyntheticRenderer,
}

impl DefaultSubject {
    pub(crate) fn new() -> Self {
        let body = track::default_body(1.7).unwrap();
        let cam = track::default_camera(320, 240, 60.0).unwrap();
        let renderer = SyntheticRenderer::new(
            &body.skeleton,
            cam.clone(),
            vision::RenderOptions::default(),
        )
        .unwrap();
        Self {
            body,
            cam,
            renderer,
        }
    }

    /// The body standing arms-down, facing the camera, with its root at
    /// `root` (camera coordinates).
    pub(crate) fn arms_down_at(&self, root: Point3<f64>) -> Vec<f64> {
        track::start_pose_from(
            &self.body.skeleton,
            track::StartPose::ArmsDown,
            &self.cam,
            root,
            self.body.frames.pose(0),
        )
        .unwrap()
    }
}

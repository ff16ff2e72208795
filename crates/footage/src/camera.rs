//! The webcam: the pinhole [`labels::Camera`] of the options' camera
//! set-up, and its pixel rays for the sphere tracer.

use nalgebra::{Point3, Vector3};
use vision::Result;

use crate::body::v3;
use crate::options::FootageOptions;
use crate::{M3, V3};

#[derive(Clone, Debug)]
pub(crate) struct RayCam {
    pub(crate) origin: V3,
    rot: M3,
    pub(crate) fx: f32,
    fy: f32,
    cx: f32,
    cy: f32,
}

impl RayCam {
    pub(crate) fn new(camera: &labels::Camera) -> Self {
        let pose = camera.world_from_camera();
        Self {
            origin: v3(&pose.translation.vector),
            rot: pose
                .rotation
                .to_rotation_matrix()
                .into_inner()
                .cast::<f32>(),
            fx: camera.fx() as f32,
            fy: camera.fy() as f32,
            cx: camera.cx() as f32,
            cy: camera.cy() as f32,
        }
    }

    #[inline]
    pub(crate) fn dir(&self, x: f32, y: f32) -> V3 {
        (self.rot
            * V3::new(
                (x + 0.5 - self.cx) / self.fx,
                (y + 0.5 - self.cy) / self.fy,
                1.0,
            ))
        .normalize()
    }

    /// Pixel rectangle of a sphere (conservative), or `None` behind the camera.
    pub(crate) fn sphere_rect(&self, c: &V3, r: f32, w: i32, h: i32) -> Option<[i32; 4]> {
        let pc = self.rot.transpose() * (c - self.origin);
        if pc.z <= r + 0.05 {
            return None;
        }
        let grow = r / (pc.z - r) * 1.05;
        let (u, v) = (
            self.fx * pc.x / pc.z + self.cx,
            self.fy * pc.y / pc.z + self.cy,
        );
        let (du, dv) = (
            self.fx * (grow + (pc.x / pc.z).abs() * grow * 0.6) + 2.0,
            self.fy * (grow + (pc.y / pc.z).abs() * grow * 0.6) + 2.0,
        );
        let rect = [
            ((u - du).floor() as i32).max(0),
            ((v - dv).floor() as i32).max(0),
            ((u + du).ceil() as i32).min(w - 1),
            ((v + dv).ceil() as i32).min(h - 1),
        ];
        (rect[0] <= rect[2] && rect[1] <= rect[3]).then_some(rect)
    }
}

pub(crate) fn make_camera(options: &FootageOptions) -> Result<labels::Camera> {
    let c = &options.setup.camera;
    let (w, h) = (options.width, options.height);
    let hfov = c.hfov_deg.to_radians();
    let fov_y = 2.0 * ((0.5 * hfov).tan() * f64::from(h) / f64::from(w)).atan();
    let eye = Point3::new(c.x, c.height, 0.0);
    let target = Point3::new(c.x, c.height - 3.0 * c.tilt_deg.to_radians().tan(), -3.0);
    Ok(labels::Camera::looking_at(
        eye,
        target,
        Vector3::y(),
        fov_y,
        w,
        h,
    )?)
}

//! The pinhole camera shared by the CPU reference and the GPU path.
//!
//! Conventions: the camera looks along its own +z axis; image x grows to the
//! right and image y grows *down* (so camera +y points down in the image).
//! A camera-space point `(x, y, z)` with `z > 0` projects to
//!
//! ```text
//! u = fx · x / z + cx,    v = fy · y / z + cy
//! ```
//!
//! in pixel units, where pixel `(px, py)` covers `[px, px+1) × [py, py+1)`
//! and its centre is `(px + 0.5, py + 0.5)`. The extrinsics are the
//! world-from-camera isometry (the camera's pose in the world).

use nalgebra::{
    Isometry3, Matrix3, Point3, Rotation3, Translation3, Unit, UnitQuaternion, Vector3,
};

use crate::error::{LabelError, Result};

/// Default image width (RTPF §VII drops frames to 160 × 120).
pub const DEFAULT_WIDTH: u32 = 160;
/// Default image height (RTPF §VII).
pub const DEFAULT_HEIGHT: u32 = 120;

/// A validated pinhole camera: intrinsics, image size and world pose.
#[derive(Clone, Debug, PartialEq)]
pub struct Camera {
    fx: f64,
    fy: f64,
    cx: f64,
    cy: f64,
    width: u32,
    height: u32,
    world_from_camera: Isometry3<f64>,
}

fn check(field: &'static str, value: f64, positive: bool) -> Result<()> {
    if !value.is_finite() {
        return Err(LabelError::InvalidCamera {
            field,
            value,
            reason: "not finite",
        });
    }
    if positive && value <= 0.0 {
        return Err(LabelError::InvalidCamera {
            field,
            value,
            reason: "must be > 0",
        });
    }
    Ok(())
}

impl Camera {
    /// A camera from intrinsics (pixels), image size and its world pose.
    ///
    /// # Errors
    /// [`LabelError::InvalidCamera`] naming the field when a value is not
    /// finite, `fx`/`fy` are not positive, or the image is empty.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        fx: f64,
        fy: f64,
        cx: f64,
        cy: f64,
        width: u32,
        height: u32,
        world_from_camera: Isometry3<f64>,
    ) -> Result<Self> {
        check("fx", fx, true)?;
        check("fy", fy, true)?;
        check("cx", cx, false)?;
        check("cy", cy, false)?;
        check("width", f64::from(width), true)?;
        check("height", f64::from(height), true)?;
        let t = &world_from_camera.translation.vector;
        let q = world_from_camera.rotation.coords;
        for (field, v) in [("eye.x", t.x), ("eye.y", t.y), ("eye.z", t.z)] {
            check(field, v, false)?;
        }
        if !q.iter().all(|c| c.is_finite()) {
            return Err(LabelError::InvalidCamera {
                field: "rotation",
                value: f64::NAN,
                reason: "not finite",
            });
        }
        Ok(Self {
            fx,
            fy,
            cx,
            cy,
            width,
            height,
            world_from_camera,
        })
    }

    /// A camera at `eye` looking at `target`, `up` pointing up in the image,
    /// vertical field of view `fov_y` (radians), square pixels and the
    /// principal point at the image centre.
    ///
    /// # Errors
    /// [`LabelError::InvalidCamera`] for a non-finite input, `fov_y` outside
    /// `(0, π)`, `eye == target`, or `up` parallel to the viewing direction.
    pub fn looking_at(
        eye: Point3<f64>,
        target: Point3<f64>,
        up: Vector3<f64>,
        fov_y: f64,
        width: u32,
        height: u32,
    ) -> Result<Self> {
        check("fov_y", fov_y, true)?;
        if fov_y >= std::f64::consts::PI {
            return Err(LabelError::InvalidCamera {
                field: "fov_y",
                value: fov_y,
                reason: "must be < π",
            });
        }
        check("width", f64::from(width), true)?;
        check("height", f64::from(height), true)?;
        let forward = target - eye;
        let z = Unit::try_new(forward, 1e-12).ok_or(LabelError::InvalidCamera {
            field: "target",
            value: forward.norm(),
            reason: "target coincides with eye (or is not finite)",
        })?;
        // Image x (right) = forward × up; image y (down) = z × x.
        let x = Unit::try_new(z.cross(&up), 1e-12).ok_or(LabelError::InvalidCamera {
            field: "up",
            value: up.norm(),
            reason: "parallel to the viewing direction (or zero)",
        })?;
        let y = z.cross(&x);
        let rot = Rotation3::from_matrix_unchecked(Matrix3::from_columns(&[
            x.into_inner(),
            y,
            z.into_inner(),
        ]));
        let pose = Isometry3::from_parts(
            Translation3::from(eye.coords),
            UnitQuaternion::from_rotation_matrix(&rot),
        );
        let fy = 0.5 * f64::from(height) / (0.5 * fov_y).tan();
        Self::new(
            fy,
            fy,
            0.5 * f64::from(width),
            0.5 * f64::from(height),
            width,
            height,
            pose,
        )
    }

    /// A `width × height` camera 3.5 m in front of the `human` preset
    /// (which faces +z), looking at its middle, 40° vertical field of view:
    /// the default camera ([`Camera::default`] is this at 160 × 120).
    ///
    /// # Errors
    /// [`LabelError::InvalidCamera`] for an empty image.
    pub fn facing_human(width: u32, height: u32) -> Result<Self> {
        Self::looking_at(
            Point3::new(0.0, 1.0, 3.5),
            Point3::new(0.0, 0.92, 0.0),
            Vector3::y(),
            40f64.to_radians(),
            width,
            height,
        )
    }

    pub fn fx(&self) -> f64 {
        self.fx
    }
    pub fn fy(&self) -> f64 {
        self.fy
    }
    pub fn cx(&self) -> f64 {
        self.cx
    }
    pub fn cy(&self) -> f64 {
        self.cy
    }
    pub fn width(&self) -> u32 {
        self.width
    }
    pub fn height(&self) -> u32 {
        self.height
    }
    /// `width × height`.
    pub fn pixels(&self) -> usize {
        self.width as usize * self.height as usize
    }
    /// The camera's pose in the world (world-from-camera).
    pub fn world_from_camera(&self) -> &Isometry3<f64> {
        &self.world_from_camera
    }

    /// Projects a world point to `(u, v, depth)`: continuous pixel
    /// coordinates and the camera-space `z`. `None` when the point is not in
    /// front of the camera (`z ≤ 0`). The point may fall outside the image.
    pub fn project(&self, point: &Point3<f64>) -> Option<(f64, f64, f64)> {
        let p = self.world_from_camera.inverse_transform_point(point);
        (p.z > 0.0).then(|| {
            (
                self.fx * p.x / p.z + self.cx,
                self.fy * p.y / p.z + self.cy,
                p.z,
            )
        })
    }

    /// The world ray through the centre `(px + 0.5, py + 0.5)` of pixel
    /// `(px, py)`: the camera centre and a unit direction.
    pub fn pixel_ray(&self, px: u32, py: u32) -> (Point3<f64>, Unit<Vector3<f64>>) {
        self.ray_through(f64::from(px) + 0.5, f64::from(py) + 0.5)
    }

    /// The world ray through the continuous pixel position `(u, v)` (as
    /// [`Self::project`] gives it): the camera centre and a unit direction.
    pub fn ray_through(&self, u: f64, v: f64) -> (Point3<f64>, Unit<Vector3<f64>>) {
        let d = Vector3::new((u - self.cx) / self.fx, (v - self.cy) / self.fy, 1.0);
        let origin = Point3::from(self.world_from_camera.translation.vector);
        (
            origin,
            Unit::new_normalize(self.world_from_camera.rotation * d),
        )
    }

    /// The f32 constants the label raster (and its WGSL port) uses.
    pub fn raster(&self) -> RasterCamera {
        let cam_from_world = self.world_from_camera.inverse();
        let m = cam_from_world.rotation.to_rotation_matrix().into_inner();
        let t = cam_from_world.translation.vector;
        RasterCamera {
            rot: [
                [m[(0, 0)] as f32, m[(0, 1)] as f32, m[(0, 2)] as f32],
                [m[(1, 0)] as f32, m[(1, 1)] as f32, m[(1, 2)] as f32],
                [m[(2, 0)] as f32, m[(2, 1)] as f32, m[(2, 2)] as f32],
            ],
            trans: [t.x as f32, t.y as f32, t.z as f32],
            fx: self.fx as f32,
            fy: self.fy as f32,
            cx: self.cx as f32,
            cy: self.cy as f32,
            width: self.width,
            height: self.height,
        }
    }
}

impl Default for Camera {
    /// [`Camera::facing_human`] at 160 × 120.
    fn default() -> Self {
        Self::facing_human(DEFAULT_WIDTH, DEFAULT_HEIGHT).expect("default camera is valid")
    }
}

/// The camera as the raster sees it, in f32: camera-from-world rotation
/// (row-major) and translation, intrinsics, image size. The GPU uniform will
/// carry exactly these values, so that both paths start from the same bits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RasterCamera {
    /// Rows of the camera-from-world rotation matrix.
    pub rot: [[f32; 3]; 3],
    /// Camera-from-world translation.
    pub trans: [f32; 3],
    pub fx: f32,
    pub fy: f32,
    pub cx: f32,
    pub cy: f32,
    pub width: u32,
    pub height: u32,
}

impl RasterCamera {
    /// `R · p + t` in f32, each row as `r0·x + r1·y + r2·z + t` evaluated
    /// left to right (the WGSL port must keep this order).
    #[inline]
    pub fn to_camera(&self, p: [f32; 3]) -> [f32; 3] {
        let r = &self.rot;
        [
            r[0][0] * p[0] + r[0][1] * p[1] + r[0][2] * p[2] + self.trans[0],
            r[1][0] * p[0] + r[1][1] * p[1] + r[1][2] * p[2] + self.trans[1],
            r[2][0] * p[0] + r[2][1] * p[1] + r[2][2] * p[2] + self.trans[2],
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looking_at_projects_target_to_centre_and_up_to_smaller_v() {
        let cam = Camera::default();
        let (u, v, z) = cam.project(&Point3::new(0.0, 0.92, 0.0)).unwrap();
        assert!((u - 80.0).abs() < 1e-9 && (v - 60.0).abs() < 1e-9);
        assert!((z - (3.5f64.powi(2) + 0.08f64.powi(2)).sqrt()).abs() < 1e-9);
        let (u2, v2, _) = cam.project(&Point3::new(0.3, 1.5, 0.0)).unwrap();
        assert!(v2 < v, "world up is image up (y down)");
        assert!(u2 > u, "the camera faces −z, so world +x is image right");
        assert!(cam.project(&Point3::new(0.0, 1.0, 5.0)).is_none());
    }

    #[test]
    fn pixel_ray_passes_through_projected_pixel_centre() {
        let cam = Camera::default();
        let (o, d) = cam.pixel_ray(17, 93);
        let p = o + d.into_inner() * 2.7;
        let (u, v, _) = cam.project(&p).unwrap();
        assert!((u - 17.5).abs() < 1e-9 && (v - 93.5).abs() < 1e-9);
    }

    #[test]
    fn bad_cameras_name_the_field() {
        let id = Isometry3::identity();
        let e = Camera::new(0.0, 1.0, 0.0, 0.0, 4, 4, id).unwrap_err();
        assert!(matches!(e, LabelError::InvalidCamera { field: "fx", .. }));
        let e = Camera::new(1.0, 1.0, f64::NAN, 0.0, 4, 4, id).unwrap_err();
        assert!(matches!(e, LabelError::InvalidCamera { field: "cx", .. }));
        let e = Camera::new(1.0, 1.0, 0.0, 0.0, 0, 4, id).unwrap_err();
        assert!(matches!(
            e,
            LabelError::InvalidCamera { field: "width", .. }
        ));
        let p = Point3::origin();
        let e = Camera::looking_at(p, p, Vector3::y(), 1.0, 4, 4).unwrap_err();
        assert!(matches!(
            e,
            LabelError::InvalidCamera {
                field: "target",
                ..
            }
        ));
        let e =
            Camera::looking_at(p, Point3::new(0.0, 1.0, 0.0), Vector3::y(), 1.0, 4, 4).unwrap_err();
        assert!(matches!(e, LabelError::InvalidCamera { field: "up", .. }));
        let e =
            Camera::looking_at(p, Point3::new(0.0, 0.0, 1.0), Vector3::y(), 4.0, 4, 4).unwrap_err();
        assert!(matches!(
            e,
            LabelError::InvalidCamera { field: "fov_y", .. }
        ));
    }
}

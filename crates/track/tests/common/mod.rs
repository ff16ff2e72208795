//! Shared by the track tests: the camera that watches the RTPF preset.

use labels::Camera;
use skeleton::nalgebra::{Point3, Vector3};

/// 3.5 m in front of the preset (which faces +z), slightly to the side so
/// that depth flips are not symmetric; `w × h` pixels.
pub fn preset_camera(w: u32, h: u32) -> Camera {
    Camera::looking_at(
        Point3::new(0.4, 1.3, 3.5),
        Point3::new(0.0, 1.2, 0.0),
        Vector3::y(),
        35f64.to_radians(),
        w,
        h,
    )
    .unwrap()
}

//! Shared by the track tests: the camera that watches the RTPF preset and
//! the PFRTH settings that follow its clips.

use labels::Camera;
use skeleton::nalgebra::{Point3, Vector3};
use track::synthetic::upper_body_parts;
use track::{BackendChoice, FilterKind, TrackerConfig};

/// 3.5 m in front of the preset (which faces +z), slightly to the side so
/// that depth flips are not symmetric; `w × h` pixels.
pub(crate) fn preset_camera(w: u32, h: u32) -> Camera {
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

/// PFRTH with 200 particles on the CPU, the upper-body classes and
/// `sigma_rotation = 0.15`: the settings the clip-following tests share.
pub(crate) fn upper_body_pfrth() -> TrackerConfig {
    TrackerConfig {
        particles: 200,
        filter: FilterKind::Pfrth,
        backend: BackendChoice::Cpu,
        label_map: upper_body_parts(),
        sigma_rotation: 0.15,
        ..TrackerConfig::default()
    }
}

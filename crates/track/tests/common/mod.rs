//! Shared by the track tests: the camera that watches the RTPF preset, the
//! PFRTH settings that follow its clips, and the walk clip and camera file
//! the session tests render. Each test binary uses some of these.
#![allow(dead_code)]

use labels::Camera;
use track::synthetic::{level_camera, upper_body_parts};
use track::{BackendChoice, FilterKind, TrackerConfig};

/// The CMU walk clip of `assets/motions`.
pub(crate) const WALK: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../assets/motions/cmu_131_01_walk.bvh"
);
/// `vision`'s front camera file.
pub(crate) const CAMERA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../crates/vision/assets/camera_front.toml"
);

/// 3.5 m in front of the preset (which faces +z), slightly to the side so
/// that depth flips are not symmetric; `w × h` pixels.
pub(crate) fn preset_camera(w: u32, h: u32) -> Camera {
    level_camera([0.4, 1.3, 3.5], [0.0, 1.2, 0.0], 35.0, w, h).unwrap()
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

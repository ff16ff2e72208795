//! The window host every scene uses: the display and adapter check, the
//! orbit camera, device errors shown in the window ([`render_errors`]), and
//! the scene window runner with its clock, automation and frame order
//! ([`scene_common`]). The scenes themselves — a Bevy-free model and a view
//! each — are in [`crate::scenes`].

pub mod bodies;
pub mod cloud_budget;
pub mod export;
pub mod layout;
pub mod render_errors;
pub mod scene_common;

use anyhow::Result;
use bevy::prelude::*;

/// The orbit camera's state (see `input.rs` for the gestures).
#[derive(Component, Debug, Clone)]
pub struct OrbitCamera {
    pub focus: Vec3,
    pub distance: f32,
    /// Radians about +y, and above the horizon.
    pub yaw: f32,
    pub pitch: f32,
    /// Where the focus appears, in half-window units from the centre (+x
    /// right, +y up): the panels cover the left and bottom of the window,
    /// so the view is panned to centre the body in the rest. (One camera
    /// over the whole window: a second camera for egui would cost a
    /// full-window pass, which software renderers feel.)
    pub screen_offset: Vec2,
    /// Window width / height.
    pub aspect: f32,
}

impl OrbitCamera {
    /// A camera `distance` from `focus` at `yaw` and `pitch`, the focus at
    /// the window's centre of a 16:10 window until the layout pans it and
    /// sets the window's aspect.
    pub fn new(focus: Vec3, distance: f32, yaw: f32, pitch: f32) -> Self {
        Self {
            focus,
            distance,
            yaw,
            pitch,
            screen_offset: Vec2::ZERO,
            aspect: 1.6,
        }
    }

    pub fn transform(&self) -> Transform {
        let dir = Vec3::new(
            self.pitch.cos() * self.yaw.sin(),
            self.pitch.sin(),
            self.pitch.cos() * self.yaw.cos(),
        );
        let t = Transform::from_translation(self.focus + dir * self.distance)
            .looking_at(self.focus, Vec3::Y);
        // Pan so the focus projects at `screen_offset` (vertical field of
        // view π/4, Bevy's default; the aspect ratio from the window).
        let half_h = self.distance * (std::f32::consts::FRAC_PI_8).tan();
        let shift = t.right() * (self.screen_offset.x * half_h * self.aspect)
            + t.up() * (self.screen_offset.y * half_h);
        t.with_translation(t.translation - shift)
    }
}

/// A gizmo group's lines: `width` px wide, pulled `depth_bias` towards the
/// camera (−1: over everything, e.g. a particle cloud over the solid body
/// whose capsules its particles lie inside, read as an x-ray of the pose
/// distribution).
pub fn line_gizmos(width: f32, depth_bias: f32) -> GizmoConfig {
    GizmoConfig {
        line: GizmoLineConfig { width, ..default() },
        depth_bias,
        ..default()
    }
}

/// Bevy panics when it finds no display or no GPU adapter; say so clearly
/// instead, before opening anything.
pub fn check_display_and_adapter() -> Result<()> {
    #[cfg(all(unix, not(target_os = "macos")))]
    {
        let set = |v: &str| std::env::var_os(v).is_some_and(|x| !x.is_empty());
        // The window is built for X11 only (Bevy's `x11` feature): a
        // Wayland session works through XWayland, which sets DISPLAY.
        if !set("DISPLAY") {
            if set("WAYLAND_DISPLAY") {
                anyhow::bail!(
                    "no X11 display: DISPLAY is not set but WAYLAND_DISPLAY is; posecloud's window uses X11, so run it under XWayland (enabled in most Wayland desktops; it sets DISPLAY)"
                );
            }
            anyhow::bail!(
                "no display: DISPLAY is not set (run under a desktop session, or `xvfb-run -a posecloud …` without one)"
            );
        }
    }
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
    let adapter =
        pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()));
    if let Err(e) = adapter {
        anyhow::bail!(
            "no GPU adapter ({e}); without a GPU install a software driver, e.g. Mesa's lavapipe (apt-get install mesa-vulkan-drivers)"
        );
    }
    Ok(())
}

/// How every scene draws its particle cloud: the heaviest `cap` particles,
/// lightest first so that heavy ones land on top, each in the colour of its
/// normalised weight (viridis, heavier more opaque; see
/// [`crate::colormap`]). `draw(i, colour)` draws particle `i`'s segments.
/// `order` is scratch space reused from frame to frame.
pub fn draw_particle_cloud(
    weights: &[f64],
    cap: usize,
    order: &mut Vec<usize>,
    mut draw: impl FnMut(usize, Color),
) {
    use crate::colormap::{viridis, weight_alpha, weight_position};
    // A hidden cloud (budget 0) is not sorted every frame.
    if cap == 0 {
        return;
    }
    order.clear();
    order.extend(0..weights.len());
    // Only the `cap` heaviest are sorted (lightest first), not the whole
    // cloud every frame.
    let by_weight = |a: &usize, b: &usize| weights[*a].total_cmp(&weights[*b]);
    let skip = order.len().saturating_sub(cap);
    if skip > 0 {
        order.select_nth_unstable_by(skip, by_weight);
    }
    order[skip..].sort_unstable_by(by_weight);
    let w_max = weights.iter().copied().fold(0.0, f64::max);
    for &i in &order[skip..] {
        let t = weight_position(weights[i], w_max);
        let [r, g, b] = viridis(t);
        draw(i, Color::srgba(r, g, b, weight_alpha(t)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cloud_draws_the_heaviest_lightest_first() {
        let weights = [0.1, 0.5, 0.0, 0.3, 0.05];
        let mut order = Vec::new();
        let mut drawn = Vec::new();
        draw_particle_cloud(&weights, 3, &mut order, |i, c| drawn.push((i, c.alpha())));
        assert_eq!(drawn.iter().map(|d| d.0).collect::<Vec<_>>(), [0, 3, 1]);
        // Heavier particles are more opaque; the heaviest fully.
        assert!(drawn[0].1 < drawn[1].1 && drawn[1].1 < drawn[2].1);
        assert!((drawn[2].1 - 1.0).abs() < 1e-6);
        draw_particle_cloud(&weights, 0, &mut order, |_, _| {
            panic!("cap 0 draws nothing")
        });
    }
}

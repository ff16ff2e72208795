//! `InteractionPlugin`: what the mouse and keyboard do.
//!
//! - Left-drag a target marker: it moves in the plane through it that faces
//!   the camera.
//! - Left-click the body: a position target appears on the joint nearest to
//!   the click. Right-click a target (or select it and press Delete): it is
//!   removed.
//! - Right-drag (or left-drag on empty space): orbit. Middle-drag or
//!   Shift + right-drag: pan. Wheel: zoom.
//! - Space pauses, S single-steps, R resets the pose and the cloud.

use bevy::input::mouse::{AccumulatedMouseMotion, AccumulatedMouseScroll, MouseScrollUnit};
use bevy::picking::hover::HoverMap;
use bevy::picking::pointer::{PointerButton, PointerId};
use bevy::prelude::*;
use bevy_egui::input::EguiWantsInput;

use super::view::{BodySegment, PlaygroundSet, TargetMarker, display_point, skeleton_point};
use super::{PlaygroundRes, SceneCommand, UiState};
use crate::gui::OrbitCamera;

pub struct InteractionPlugin;

impl Plugin for InteractionPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<DragState>()
            .add_observer(start_drag)
            .add_observer(drag_target)
            .add_observer(end_drag)
            .add_observer(click)
            .add_systems(Update, (orbit_camera, keys).in_set(PlaygroundSet::Input));
    }
}

/// A target being dragged: its index and the plane it moves in.
#[derive(Resource, Default)]
struct DragState {
    active: Option<(usize, Vec3, Vec3)>,
    /// The left button went down over empty space: that drag orbits.
    orbiting: bool,
}

fn start_drag(
    ev: On<Pointer<DragStart>>,
    markers: Query<&TargetMarker>,
    camera: Query<&GlobalTransform, With<Camera3d>>,
    pg: Res<PlaygroundRes>,
    mut drag: ResMut<DragState>,
    mut ui: ResMut<UiState>,
) {
    if ev.button != PointerButton::Primary {
        return;
    }
    let (Ok(marker), Ok(cam)) = (markers.get(ev.entity), camera.single()) else {
        return;
    };
    let Some(t) = pg.0.targets().get(marker.index) else {
        return;
    };
    let point = display_point(&pg.0, &t.position);
    drag.active = Some((marker.index, point, cam.forward().as_vec3()));
    ui.selected_target = Some(marker.index);
}

fn drag_target(
    ev: On<Pointer<Drag>>,
    camera: Query<(&Camera, &GlobalTransform), With<Camera3d>>,
    drag: Res<DragState>,
    mut pg: ResMut<PlaygroundRes>,
    mut ui: ResMut<UiState>,
) {
    let Some((index, point, normal)) = drag.active else {
        return;
    };
    let Ok((camera, cam_t)) = camera.single() else {
        return;
    };
    let Ok(ray) = camera.viewport_to_world(cam_t, ev.pointer_location.position) else {
        return;
    };
    let Some(d) = ray.intersect_plane(point, InfinitePlane3d::new(normal)) else {
        return;
    };
    let x = skeleton_point(&pg.0, ray.get_point(d));
    if let Err(e) = pg.0.move_target(index, x) {
        ui.fail("moving the target", &e);
    }
}

fn end_drag(_ev: On<Pointer<DragEnd>>, mut drag: ResMut<DragState>) {
    drag.active = None;
}

fn click(
    ev: On<Pointer<Click>>,
    markers: Query<&TargetMarker>,
    segments: Query<&BodySegment>,
    mut pg: ResMut<PlaygroundRes>,
    mut ui: ResMut<UiState>,
) {
    if let Ok(marker) = markers.get(ev.entity) {
        match ev.button {
            PointerButton::Secondary => {
                if let Err(e) = pg.0.remove_target(marker.index) {
                    ui.fail("removing the target", &e);
                }
                ui.selected_target = None;
            }
            _ => ui.selected_target = Some(marker.index),
        }
        return;
    }
    if ev.button != PointerButton::Primary || segments.get(ev.entity).is_err() {
        return;
    }
    let Some(hit) = ev.hit.position else {
        return;
    };
    // The joint nearest to the clicked point.
    let p = &pg.0;
    let display = p.display();
    let nearest = p
        .estimate_world()
        .iter()
        .enumerate()
        .map(|(j, w)| {
            let x = super::view::to_vec3(&(display * w).translation.vector);
            (j, x.distance_squared(hit))
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(j, _)| j);
    if let Some(j) = nearest {
        match pg.0.add_target(j) {
            Ok(i) => ui.selected_target = Some(i),
            Err(e) => ui.fail("adding a target", &e),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn orbit_camera(
    buttons: Res<ButtonInput<MouseButton>>,
    keys: Res<ButtonInput<KeyCode>>,
    motion: Res<AccumulatedMouseMotion>,
    scroll: Res<AccumulatedMouseScroll>,
    egui: Res<EguiWantsInput>,
    hover: Res<HoverMap>,
    mut drag: ResMut<DragState>,
    mut camera: Query<(&mut OrbitCamera, &mut Transform)>,
) {
    let Ok((mut orbit, mut transform)) = camera.single_mut() else {
        return;
    };
    if buttons.just_pressed(MouseButton::Left) {
        let over_entity = hover
            .get(&PointerId::Mouse)
            .is_some_and(|hits| !hits.is_empty());
        drag.orbiting = !over_entity && !egui.wants_any_pointer_input();
    }
    if !buttons.pressed(MouseButton::Left) {
        drag.orbiting = false;
    }
    let over_ui = egui.wants_any_pointer_input();
    let shift = keys.pressed(KeyCode::ShiftLeft) || keys.pressed(KeyCode::ShiftRight);
    let delta = motion.delta;
    let pan =
        buttons.pressed(MouseButton::Middle) || (shift && buttons.pressed(MouseButton::Right));
    let rotate =
        !pan && (buttons.pressed(MouseButton::Right) || (drag.orbiting && drag.active.is_none()));
    let mut changed = false;
    if rotate && !over_ui && delta != Vec2::ZERO {
        orbit.yaw -= delta.x * 0.008;
        orbit.pitch = (orbit.pitch + delta.y * 0.008).clamp(-1.4, 1.4);
        changed = true;
    }
    if pan && !over_ui && delta != Vec2::ZERO {
        let scale = orbit.distance * 0.0015;
        let right = transform.right().as_vec3();
        let up = transform.up().as_vec3();
        orbit.focus += (-delta.x * right + delta.y * up) * scale;
        changed = true;
    }
    if !over_ui && scroll.delta.y != 0.0 {
        let lines = match scroll.unit {
            MouseScrollUnit::Line => scroll.delta.y,
            MouseScrollUnit::Pixel => scroll.delta.y / 40.0,
        };
        orbit.distance = (orbit.distance * 0.9f32.powf(lines)).clamp(0.1, 100.0);
        changed = true;
    }
    if changed {
        *transform = orbit.transform();
    }
}

fn keys(
    keys: Res<ButtonInput<KeyCode>>,
    egui: Res<EguiWantsInput>,
    mut pg: ResMut<PlaygroundRes>,
    mut ui: ResMut<UiState>,
    mut commands: MessageWriter<SceneCommand>,
) {
    if egui.wants_any_keyboard_input() {
        return;
    }
    if keys.just_pressed(KeyCode::Space) {
        commands.write(SceneCommand::TogglePause);
    }
    if keys.just_pressed(KeyCode::KeyS) {
        commands.write(SceneCommand::SingleStep);
    }
    if keys.just_pressed(KeyCode::KeyR) {
        commands.write(SceneCommand::Reset);
    }
    if (keys.just_pressed(KeyCode::Delete) || keys.just_pressed(KeyCode::Backspace))
        && let Some(i) = ui.selected_target.take()
        && let Err(e) = pg.0.remove_target(i)
    {
        ui.fail("removing the target", &e);
    }
}

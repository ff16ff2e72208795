//! `InteractionPlugin`: what the mouse and keyboard do.
//!
//! - Left-drag a target marker: it moves in the plane through it that faces
//!   the camera.
//! - Left-click the body: a position target appears on the joint nearest to
//!   the click. Right-click a target (or select it and press Delete): it is
//!   removed.
//! - Right-drag (or left-drag on empty space): orbit. Middle-drag or
//!   Shift + right-drag: pan. Wheel: zoom (the host's orbit, as in every
//!   scene: [`crate::gui::scene_common::orbit`]).
//! - Space pauses, S single-steps, R resets the pose and the cloud.

use bevy::picking::pointer::PointerButton;
use bevy::prelude::*;
use bevy_egui::input::EguiWantsInput;

use super::view::{BodySegment, InputSet, TargetMarker, display_point, skeleton_point};
use super::{PlaygroundRes, SceneCommand, UiState};
use crate::gui::scene_common::SceneSet;

pub struct InteractionPlugin;

impl Plugin for InteractionPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<DragState>()
            .add_observer(start_drag)
            .add_observer(drag_target)
            .add_observer(end_drag)
            .add_observer(click)
            .add_systems(Update, keys.in_set(SceneSet::Input).in_set(InputSet));
    }
}

/// A target being dragged: its index and the plane it moves in.
#[derive(Resource, Default)]
struct DragState {
    active: Option<(usize, Vec3, Vec3)>,
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

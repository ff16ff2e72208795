//! Device errors reported in the window instead of quitting.
//!
//! Bevy's default [`RenderErrorHandler`] quits the app on any wgpu error.
//! Every posecloud window installs [`handle_render_error`] instead:
//!
//! - a lost device: the renderer is created again (a new device; the
//!   tracking scene then weighs with the CPU likelihood, see
//!   [`RenderFaults::device_lost`]) and the window says what happened;
//! - a validation or internal error: logged, shown, rendering goes on; after
//!   [`MAX_IGNORED`] of them (device losses are counted apart) rendering stops (an error every frame would
//!   make the window flash) and stderr says why;
//! - out of memory: rendering stops, stderr says why.
//!
//! Limits: wgpu treats reading a buffer of a destroyed device as fatal, and
//! some of Bevy 0.19's own render systems do that (a device destroyed with
//! `Device::destroy` under lavapipe makes `bevy_pbr`'s clustering upload
//! panic before the handler runs). The tracker's own GPU work does not
//! (`gpu` turns that panic into `GpuError::DeviceLost`, and the tracking
//! scene weighs with the CPU likelihood from then on: tested in
//! `tracking::tests::a_lost_device_hands_the_tracking_to_the_cpu_likelihood`).

use bevy::prelude::*;
use bevy::render::error_handler::{ErrorType, RenderError, RenderErrorHandler, RenderErrorPolicy};
use bevy::render::settings::RenderCreation;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

/// Validation/internal errors shown before rendering stops.
pub const MAX_IGNORED: u32 = 10;

/// The device errors of this window so far (main world).
#[derive(Resource, Debug, Default, Clone)]
pub struct RenderFaults {
    /// Every error's one-line description, oldest first (at most 20 kept).
    pub messages: Vec<String>,
    /// Errors seen (all kinds).
    pub count: u32,
    /// Validation and internal errors seen: only these count towards
    /// [`MAX_IGNORED`] (a recovered device loss does not).
    pub ignored: u32,
    /// Devices lost so far; a scene that shares the render device (the
    /// tracker's GPU likelihood) watches this and leaves the device.
    pub device_lost: u32,
    /// Rendering stopped (out of memory, or too many errors).
    pub stopped: bool,
}

/// The window's [`RenderErrorHandler`]: records the error in
/// [`RenderFaults`] and chooses the policy described in the module docs.
pub fn handle_render_error(
    error: &RenderError,
    main_world: &mut World,
    _render_world: &mut World,
) -> RenderErrorPolicy {
    let mut faults = main_world.get_resource_or_insert_with(RenderFaults::default);
    faults.count += 1;
    let line = match error.ty {
        ErrorType::DeviceLost => {
            faults.device_lost += 1;
            format!(
                "the GPU device was lost ({}); the renderer was started again{}",
                error.description.trim(),
                ", and the tracker weighs with the CPU likelihood"
            )
        }
        ErrorType::OutOfMemory => {
            faults.stopped = true;
            "the GPU ran out of memory: rendering stopped (close the window; fewer particles or a smaller window)".to_string()
        }
        ErrorType::Validation | ErrorType::Internal => format!(
            "GPU {} error: {}",
            if error.ty == ErrorType::Validation {
                "validation"
            } else {
                "internal"
            },
            error.description.trim()
        ),
    };
    eprintln!("posecloud: {line}");
    if faults.messages.len() == 20 {
        faults.messages.remove(0);
    }
    faults.messages.push(line);
    match error.ty {
        ErrorType::DeviceLost => {
            RenderErrorPolicy::Recover(RenderCreation::Automatic(Box::default()))
        }
        ErrorType::OutOfMemory => RenderErrorPolicy::StopRendering,
        ErrorType::Validation | ErrorType::Internal => {
            faults.ignored += 1;
            if faults.ignored > MAX_IGNORED {
                faults.stopped = true;
                eprintln!(
                    "posecloud: {} GPU validation/internal errors: rendering stopped (close the window)",
                    faults.ignored
                );
                RenderErrorPolicy::StopRendering
            } else {
                RenderErrorPolicy::Ignore
            }
        }
    }
}

/// Installs [`handle_render_error`] and shows the errors over the window.
/// Add it after `DefaultPlugins`.
pub struct RenderErrorsPlugin;

impl Plugin for RenderErrorsPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<RenderFaults>()
            .insert_resource(RenderErrorHandler(handle_render_error))
            .add_systems(EguiPrimaryContextPass, show_faults);
    }
}

fn show_faults(mut contexts: EguiContexts, faults: Res<RenderFaults>) {
    if faults.messages.is_empty() {
        return;
    }
    let Ok(ctx) = contexts.ctx_mut() else {
        return;
    };
    egui::Window::new("GPU errors")
        .anchor(egui::Align2::CENTER_TOP, [0.0, 8.0])
        .collapsible(true)
        .resizable(false)
        .show(ctx, |ui| {
            for m in &faults.messages {
                ui.colored_label(egui::Color32::from_rgb(240, 120, 90), m);
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(ty: ErrorType) -> RenderError {
        RenderError {
            ty,
            description: "test".into(),
            source: None,
        }
    }

    #[test]
    fn errors_are_recorded_and_never_quit() {
        let mut main = World::new();
        let mut render = World::new();
        let p = handle_render_error(&error(ErrorType::DeviceLost), &mut main, &mut render);
        assert!(matches!(p, RenderErrorPolicy::Recover(_)));
        let f = main.resource::<RenderFaults>();
        assert_eq!((f.count, f.device_lost, f.stopped), (1, 1, false));
        assert!(f.messages[0].contains("lost"), "{:?}", f.messages);
        // Issue 32 item 19: the recovered device loss does not count
        // towards the validation errors that stop rendering.
        for k in 0..MAX_IGNORED {
            let p = handle_render_error(&error(ErrorType::Validation), &mut main, &mut render);
            assert!(matches!(p, RenderErrorPolicy::Ignore), "error {k}");
        }
        let p = handle_render_error(&error(ErrorType::DeviceLost), &mut main, &mut render);
        assert!(matches!(p, RenderErrorPolicy::Recover(_)));
        let p = handle_render_error(&error(ErrorType::Validation), &mut main, &mut render);
        assert!(matches!(p, RenderErrorPolicy::StopRendering));
        assert!(main.resource::<RenderFaults>().stopped);
        // Nothing asked the app to exit (Bevy's default handler does).
        assert!(main.get_resource::<Messages<AppExit>>().is_none());
        let mut oom = World::new();
        let p = handle_render_error(&error(ErrorType::OutOfMemory), &mut oom, &mut render);
        assert!(matches!(p, RenderErrorPolicy::StopRendering));
    }
}

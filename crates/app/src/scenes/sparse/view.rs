//! The sparse-sensor scene's window (`posecloud --scene sparse`): SPARSE's
//! tracker ([`crate::scenes::sparse::model::SparseScene`]) on its own thread.
//!
//! - 3D view: the tracked body (orange), the ground-truth ghost (white),
//!   the IMUs as small RGB axis frames on their bones (grey when off),
//!   the markers (magenta spheres where measured, cyan where the tracked
//!   body wears them), contact forces as green arrows (1 cm per 20 N).
//! - Left: play/pause/step/reset, status, a toggle per IMU and marker,
//!   the prior (REF, NGT, CD), stiffness and damping (Eq. 6), physics.
//! - Bottom: body position/orientation error, knee torques, contact force.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use bevy::prelude::*;
use bevy_egui::egui;

use crate::gui::bodies::Bodies;
use crate::gui::export::PoseNow;
use crate::gui::layout::{
    Chart, LEFT_WIDTH, PLOT_HEIGHT, PanelView, clip_header, error_label, section,
};
use crate::gui::scene_common::{
    SceneRuntime, WindowOptions, WindowScene, add_scene_view, body_focus, run_scene_window,
};
use crate::gui::{OrbitCamera, line_gizmos};
use crate::scenes::sparse::model::{PriorKind, SparseScene, SparseSettings, SparseSnapshot};

/// Limb radii of the tracked body and of the ground-truth ghost around it
/// (m).
const BODY_RADIUS: f32 = 0.04;
const GHOST_RADIUS: f32 = 0.055;

/// How the sparse window starts.
#[derive(Clone, Debug)]
pub struct SparseGuiOptions {
    pub clip: Option<PathBuf>,
    pub window: WindowOptions,
}

/// The panel's copy of the settings (sent on change).
#[derive(Resource)]
struct SparseUi {
    settings: SparseSettings,
}

type SparseRes = SceneRuntime<SparseScene>;

/// Opens the sparse-sensor window and runs until it is closed.
///
/// # Errors
/// A bad clip, no display/adapter.
pub fn run(options: SparseGuiOptions, launched: Instant) -> Result<()> {
    let scene = SparseScene::new(options.clip.clone(), None)?;
    crate::gui::check_display_and_adapter()?;
    let settings = scene.settings().clone();
    let res = SparseRes::start(scene, options.window.pacing(), "sparse");
    run_scene_window(res, options.window, launched, |app| {
        app.insert_resource(SparseUi { settings })
            .add_plugins(SparseScenePlugin);
    })
}

#[derive(Default, Reflect, GizmoConfigGroup)]
struct SparseBodyGizmos;

/// The sparse-sensor scene's systems and panels.
pub struct SparseScenePlugin;

impl Plugin for SparseScenePlugin {
    fn build(&self, app: &mut App) {
        add_scene_view(
            app,
            (SparseBodyGizmos, line_gizmos(6.0, -0.2)),
            draw,
            panels,
        );
    }
}

impl WindowScene for SparseScene {
    fn initial_orbit(s: &SparseSnapshot) -> OrbitCamera {
        OrbitCamera::new(body_focus(&s.body), 3.2, 0.9, 0.2)
    }
}

fn draw(
    res: Res<SparseRes>,
    mut bodies: ResMut<Bodies>,
    mut body: Gizmos<SparseBodyGizmos>,
    mut plain: Gizmos,
) {
    let s = &res.latest.data;
    let v = |p: [f32; 3]| Vec3::from_array(p);
    bodies.clear();
    if s.truth.len() == s.body.len() {
        bodies.add_skeleton(true, &s.truth, &s.bones, GHOST_RADIUS);
    }
    bodies.add_skeleton(false, &s.body, &s.bones, BODY_RADIUS);
    for (p, q, on) in &s.imus {
        let at = v(*p);
        let rot = Quat::from_xyzw(q[0], q[1], q[2], q[3]).normalize();
        let axes = [
            (Vec3::X, Color::srgb(1.0, 0.2, 0.2)),
            (Vec3::Y, Color::srgb(0.2, 1.0, 0.2)),
            (Vec3::Z, Color::srgb(0.3, 0.5, 1.0)),
        ];
        for (axis, colour) in axes {
            let colour = if *on {
                colour
            } else {
                Color::srgb(0.45, 0.45, 0.45)
            };
            body.line(at, at + rot * axis * 0.12, colour);
        }
    }
    for (measured, worn, on) in &s.markers {
        if let Some(m) = measured {
            plain.sphere(
                Isometry3d::from_translation(v(*m)),
                0.035,
                Color::srgb(1.0, 0.2, 0.9),
            );
        }
        if worn.iter().all(|x| x.is_finite()) {
            let colour = if *on {
                Color::srgb(0.2, 0.9, 1.0)
            } else {
                Color::srgb(0.45, 0.45, 0.45)
            };
            plain.sphere(Isometry3d::from_translation(v(*worn)), 0.025, colour);
        }
    }
    let green = Color::srgb(0.3, 1.0, 0.4);
    for (p, f) in &s.contacts {
        let at = v(*p);
        plain.arrow(at, at + v(*f) * 0.0005, green);
    }
}

fn panels(
    mut view: PanelView,
    mut res: ResMut<SparseRes>,
    mut ui_state: ResMut<SparseUi>,
) -> bevy::prelude::Result {
    let snap = res.latest.clone();
    let s = &snap.data;
    let mut layout = view.layout("posecloud-sparse-root")?;
    let clock = &mut *view.clock;
    let mut settings = ui_state.settings.clone();
    let mut play = Default::default();
    let r = &mut *res;
    layout.left("sparse-controls", LEFT_WIDTH, |ui| {
        play = clip_header(
            ui,
            "Sparse sensors (SPARSE)",
            r.paused,
            &mut settings.realtime,
            60,
        );
        section(ui, "Status", |ui| {
            ui.label(format!(
                "{} · frame {} of {} · {:.0} fps · step {:.2} ms",
                s.clip_name, s.frame, s.frames, clock.fps, s.step_ms
            ));
            if let Some(h) = s.history.back() {
                ui.label(format!(
                    "body error {:.1} cm, {:.1}° · contacts {} ({:.0} N up)",
                    h.position_cm,
                    h.orientation_deg,
                    s.contacts.len(),
                    h.contact_force
                ));
            }
            if let Some(e) = &r.error {
                error_label(ui, e.as_str());
            }
        });
        section(ui, "Sensors", |ui| {
            ui.label("IMUs (orientation):");
            for (i, name) in s.sensor_names.0.iter().enumerate() {
                if let Some(on) = settings.imus.get_mut(i) {
                    ui.checkbox(on, name.as_str());
                }
            }
            ui.label("markers (position):");
            for (i, name) in s.sensor_names.1.iter().enumerate() {
                if let Some(on) = settings.markers.get_mut(i) {
                    ui.checkbox(on, name.as_str());
                }
            }
        });
        section(ui, "Prior and compliance", |ui| {
            egui::ComboBox::from_label("prior")
                .selected_text(settings.prior.name())
                .show_ui(ui, |ui| {
                    for k in PriorKind::ALL {
                        ui.selectable_value(&mut settings.prior, k, k.name());
                    }
                });
            for (value, label) in [
                (&mut settings.marker_stiffness, "marker stiffness"),
                (&mut settings.imu_stiffness, "IMU stiffness"),
                (&mut settings.prior_stiffness, "prior stiffness"),
            ] {
                ui.add(
                    egui::Slider::new(value, 1e4..=1e10)
                        .logarithmic(true)
                        .text(label),
                );
            }
            ui.add(egui::Slider::new(&mut settings.damping, 0.1..=10.0).text("sensor damping"));
            ui.add(
                egui::Slider::new(&mut settings.prior_damping, 0.1..=10.0).text("prior damping"),
            );
            ui.checkbox(&mut settings.physics, "physics (contacts, torques)");
        });
        let pose = s.skeleton.as_deref().map(|skeleton| PoseNow {
            skeleton,
            pose: &s.pose,
            frame: s.frame,
            frame_time: s.frame_time,
        });
        view.exports.section(ui, clock, &s.clip_name, pose);
    });
    layout.charts("sparse-plots", PLOT_HEIGHT, charts(s));
    r.play(play);
    if settings != ui_state.settings {
        ui_state.settings = settings.clone();
        r.edit(settings);
    }
    let focus = s.body.first().map(|p| Vec3::new(p[0], p[1].max(0.6), p[2]));
    view.frame(&layout, focus);
    Ok(())
}

/// Body error, knee torques and contact force per frame.
fn charts(s: &SparseSnapshot) -> Vec<Chart> {
    let series = |f: &dyn Fn(&crate::scenes::sparse::model::SparseSample) -> f64| -> Vec<[f64; 2]> {
        s.history.iter().map(|h| [h.frame as f64, f(h)]).collect()
    };
    vec![
        Chart::new(
            "sparse-err",
            "mean body error: position (cm), orientation (deg)",
        )
        .line("cm", series(&|h| h.position_cm))
        .line("deg", series(&|h| h.orientation_deg)),
        Chart::new("sparse-knee", "knee flexion torque (N·m)")
            .free_y()
            .line("left", series(&|h| h.knee_torque[0]))
            .line("right", series(&|h| h.knee_torque[1])),
        Chart::new("sparse-contact", "vertical contact force (N)")
            .line("force", series(&|h| h.contact_force)),
    ]
}

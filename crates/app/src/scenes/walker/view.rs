//! The walker scene's window (`posecloud --scene walker`): PHYSPRIOR's
//! tracker ([`crate::scenes::walker::model::WalkerScene`]) on its own thread.
//!
//! - 3D view: the mean pose's legs (orange; heel and toe included), the
//!   true hip/knee/foot points (white), every particle's five points as
//!   its two legs coloured by weight (viridis), the MAP trajectory on
//!   demand (green), the camera (blue).
//! - Right: the camera image: observed points (grey; hollow where
//!   occluded), true projections (white dots), one-σ ellipses μ^i, Σ^i.
//! - Left: play/pause/step/reset, prior (anthropomorphic walker,
//!   monopode, constant velocity), N, N_thres, pixel noise, force noise,
//!   the occlusion span, MAP trajectory, status.
//! - Bottom: ESS and per-point 2D error.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use bevy::prelude::*;
use bevy_egui::egui;
use walker::Dynamics;
use walker::mocap::POINTS;

use crate::gui::bodies::Bodies;
use crate::gui::cloud_budget::CloudPainter;
use crate::gui::layout::{
    Chart, LEFT_WIDTH, PLOT_HEIGHT, PanelView, clip_header, error_label, section,
};
use crate::gui::scene_common::{
    SceneRuntime, WindowOptions, WindowScene, add_scene_view, body_focus, run_scene_window,
};
use crate::gui::{OrbitCamera, line_gizmos};
use crate::scenes::walker::model::{
    MAX_WALKER_PARTICLES, POINT_NAMES, WalkerScene, WalkerSettings, WalkerSnapshot,
};

/// Limb radii of the mean legs and of the ground-truth ghost around them
/// (m).
const BODY_RADIUS: f32 = 0.045;
const GHOST_RADIUS: f32 = 0.06;
const RIGHT_WIDTH: f32 = 340.0;
/// Colour of each tracking point in the image panel (hip, left knee, left
/// foot, right knee, right foot).
const POINT_COLOURS: [[u8; 3]; POINTS] = [
    [230, 60, 60],
    [80, 200, 90],
    [80, 200, 90],
    [80, 140, 255],
    [80, 140, 255],
];

/// How the walker window starts.
#[derive(Clone, Debug)]
pub struct WalkerGuiOptions {
    pub bvh: Option<PathBuf>,
    pub settings: WalkerSettings,
    pub window: WindowOptions,
}

type WalkerRes = SceneRuntime<WalkerScene>;

/// The panel's copy of the settings (sent on change) and the occlusion
/// span's fields (applied with the checkbox).
#[derive(Resource)]
struct WalkerUi {
    settings: WalkerSettings,
    occlude: bool,
    occlude_from: usize,
    occlude_frames: usize,
}

/// Opens the walker window and runs until it is closed.
///
/// # Errors
/// A bad clip or settings, no display/adapter.
pub fn run(options: WalkerGuiOptions, launched: Instant) -> Result<()> {
    let scene = WalkerScene::new(options.bvh.clone(), options.settings.clone())?;
    crate::gui::check_display_and_adapter()?;
    let res = WalkerRes::start(scene, options.window.pacing(), "walker");
    let (occlude, occlude_from, occlude_frames) = match options.settings.occlusion {
        Some((a, b)) => (true, a, b - a),
        None => (false, 12, 30),
    };
    let ui = WalkerUi {
        settings: options.settings.clone(),
        occlude,
        occlude_from,
        occlude_frames,
    };
    run_scene_window(res, options.window, launched, |app| {
        app.insert_resource(ui).add_plugins(WalkerScenePlugin);
    })
}

#[derive(Default, Reflect, GizmoConfigGroup)]
struct WalkerCloudGizmos;

/// The walker scene's systems and panels.
pub struct WalkerScenePlugin;

impl Plugin for WalkerScenePlugin {
    fn build(&self, app: &mut App) {
        add_scene_view(
            app,
            (WalkerCloudGizmos, line_gizmos(1.5, -0.5)),
            draw,
            panels,
        );
    }
}

impl WindowScene for WalkerScene {
    fn initial_orbit(s: &WalkerSnapshot) -> OrbitCamera {
        let t = body_focus(&s.truth);
        OrbitCamera::new(Vec3::new(t.x, 0.6, t.z), 3.5, 1.2, 0.2)
    }
}

fn draw(
    res: Res<WalkerRes>,
    mut bodies: ResMut<Bodies>,
    mut painter: CloudPainter,
    mut cloud: Gizmos<WalkerCloudGizmos>,
    mut plain: Gizmos,
) {
    let s = &res.latest.data;
    let v = |p: [f32; 3]| Vec3::from_array(p);
    if s.cloud.len() == s.weights.len() {
        // The heaviest within the drawing budget, 4 segments each.
        painter.draw(&s.weights, |i, colour| {
            let q = &s.cloud[i];
            let p = |k: usize| Vec3::new(q[3 * k], q[3 * k + 1], q[3 * k + 2]);
            for (a, c) in [(0, 1), (1, 2), (0, 3), (3, 4)] {
                cloud.line(p(a), p(c), colour);
            }
        });
    } else {
        painter.report(s.weights.len());
    }
    // Hip, left knee, left foot, right knee, right foot.
    bodies.clear();
    let legs = [(0, 1), (1, 2), (0, 3), (3, 4)];
    bodies.add_skeleton(true, &s.truth, &legs, GHOST_RADIUS);
    for leg in &s.mean_legs {
        bodies.add_skeleton(false, leg, &[(0, 1), (1, 2), (2, 3), (3, 4)], BODY_RADIUS);
    }
    bodies.add_skeleton(
        false,
        &[s.mean_legs[0][0], s.mean_legs[1][0]],
        &[(0, 1)],
        BODY_RADIUS,
    );
    let green = Color::srgb(0.3, 0.95, 0.4);
    for w in s.map.windows(2) {
        for k in [0, 2, 4] {
            plain.line(v(w[0][k]), v(w[1][k]), green);
        }
    }
    let eye = v(s.camera_position);
    let look = v(s.truth[0]) - eye;
    plain.sphere(
        Isometry3d::from_translation(eye),
        0.08,
        Color::srgb(0.6, 0.8, 1.0),
    );
    plain.line(
        eye,
        eye + look.normalize_or_zero() * 0.4,
        Color::srgb(0.6, 0.8, 1.0),
    );
}

fn panels(
    mut view: PanelView,
    mut res: ResMut<WalkerRes>,
    mut ui_state: ResMut<WalkerUi>,
) -> bevy::prelude::Result {
    let snap = res.latest.clone();
    let s = &snap.data;
    let mut layout = view.layout("posecloud-walker-root")?;
    let clock = &mut *view.clock;
    let mut settings = ui_state.settings.clone();
    let mut play = Default::default();
    let r = &mut *res;
    let u = &mut *ui_state;
    layout.left("walker-controls", LEFT_WIDTH, |ui| {
        play = clip_header(
            ui,
            "Walker (PHYSPRIOR)",
            r.paused,
            &mut settings.realtime,
            30,
        );
        section(ui, "Status", |ui| {
            ui.label(format!(
                "frame {} of {} · {:.0} fps · step {:.1} ms",
                s.frame + 1,
                s.frames,
                clock.fps,
                s.step_ms
            ));
            if let Some(h) = s.history.back() {
                ui.label(format!(
                    "ESS {:.0} / {} · P(left stance) {:.2}",
                    h.ess,
                    s.weights.len(),
                    s.left_stance.clamp(0.0, 1.0) + 0.0
                ));
                ui.label(format!(
                    "2D error (px): hip {:.1}, knees {:.1} / {:.1}, feet {:.1} / {:.1}",
                    h.err_px[0], h.err_px[1], h.err_px[3], h.err_px[2], h.err_px[4]
                ));
                ui.label(format!("knee/foot ellipse area {:.0} px²", h.leg_area));
            }
            if s.occluded {
                ui.colored_label(egui::Color32::YELLOW, "knees and feet occluded");
            }
            if let Some(e) = &r.error {
                error_label(ui, e.as_str());
            }
        });
        section(ui, "Prior and filter", |ui| {
            egui::ComboBox::from_label("prior")
                .selected_text(settings.dynamics.name())
                .show_ui(ui, |ui| {
                    for d in [
                        Dynamics::Anthropomorphic,
                        Dynamics::Monopode,
                        Dynamics::ConstantVelocity,
                    ] {
                        ui.selectable_value(&mut settings.dynamics, d, d.name());
                    }
                });
            ui.add(
                egui::Slider::new(&mut settings.particles, 50..=MAX_WALKER_PARTICLES)
                    .logarithmic(true)
                    .text("N"),
            );
            let n = settings.particles;
            ui.add(egui::Slider::new(&mut settings.resample_threshold, 0..=n).text("N_thres"));
            ui.add(egui::Slider::new(&mut settings.noise_px, 0.0..=10.0).text("pixel noise σ"));
            ui.add(
                egui::Slider::new(&mut settings.force_sigma, 0.0..=5.0)
                    .text("force noise σ_f / σ_κ"),
            );
            ui.add(egui::Slider::new(&mut settings.seed, 1..=100).text("seed"));
            ui.checkbox(&mut settings.show_map, "MAP trajectory (green)");
            view.budget.controls(ui, s.weights.len());
        });
        section(ui, "Occlusion", |ui| {
            ui.checkbox(&mut u.occlude, "hide knees and feet");
            let frames = s.frames.max(2);
            ui.add(egui::Slider::new(&mut u.occlude_from, 0..=frames - 1).text("from frame"));
            ui.add(egui::Slider::new(&mut u.occlude_frames, 1..=frames).text("frames"));
        });
        // The walker's body is points, not a skeleton pose: its mean legs
        // as a CSV of points.
        let mut saved = None;
        view.exports.section_with(ui, clock, "walker", None, |ui| {
            if ui.button("save legs (CSV)").clicked() {
                let names = ["hip", "knee", "ankle", "heel", "toe"];
                let points: Vec<(String, [f32; 3])> = ["left", "right"]
                    .iter()
                    .zip(&s.mean_legs)
                    .flat_map(|(side, leg)| {
                        names
                            .iter()
                            .zip(leg)
                            .map(move |(n, p)| (format!("{side}_{n}"), *p))
                    })
                    .collect();
                saved = Some(crate::gui::export::save_points(
                    &crate::gui::export::export_stem("walker"),
                    &points,
                ));
            }
        });
        match saved {
            Some(Ok(path)) => {
                view.exports.message = Some(format!("legs saved to {}", path.display()))
            }
            Some(Err(e)) => view.exports.message = Some(format!("save legs: {e:#}")),
            None => {}
        }
    });
    settings.occlusion = u
        .occlude
        .then_some((u.occlude_from, u.occlude_from + u.occlude_frames));
    layout.right("walker-image", RIGHT_WIDTH, false, |ui| image_view(ui, s));
    layout.charts("walker-plots", PLOT_HEIGHT, charts(s));
    r.play(play);
    if settings != u.settings {
        match settings.validate() {
            Ok(()) => {
                u.settings = settings.clone();
                r.edit(settings);
            }
            Err(e) => r.error = Some(format!("settings: {e:#}")),
        }
    }
    let t = s.truth[0];
    view.frame(&layout, Some(Vec3::new(t[0], 0.6, t[2])));
    Ok(())
}

/// The camera image: observations, truth, ellipses.
fn image_view(ui: &mut egui::Ui, s: &WalkerSnapshot) {
    // A 200 × 150 px window of the camera image around the subject (its
    // legs are ~100 px tall 6 m away), magnified to the panel's width.
    let (cw, ch) = (200.0f32, 150.0f32);
    ui.label(format!(
        "camera image ({} × {}), {cw:.0} × {ch:.0} px around the subject:",
        s.image_size.0, s.image_size.1
    ));
    let width = RIGHT_WIDTH - 16.0;
    let (rect, _) =
        ui.allocate_exact_size(egui::vec2(width, width * ch / cw), egui::Sense::hover());
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 0.0, egui::Color32::from_gray(40));
    let scale = width / cw;
    let known: Vec<[f64; 2]> = s.truth_px.iter().flatten().copied().collect();
    let n = known.len().max(1) as f64;
    let centre = [
        known.iter().map(|p| p[0]).sum::<f64>() / n,
        known.iter().map(|p| p[1]).sum::<f64>() / n,
    ];
    let origin = [
        centre[0] - f64::from(cw) / 2.0,
        centre[1] - f64::from(ch) / 2.0,
    ];
    let to = |p: [f64; 2]| {
        rect.min
            + egui::vec2(
                (p[0] - origin[0]) as f32 * scale,
                (p[1] - origin[1]) as f32 * scale,
            )
    };
    // Legs as sticks: the truth (grey) and the ellipse means (the leg's
    // colour), hip → knee → foot.
    for (knee, foot) in [(1, 2), (3, 4)] {
        let [r, g, b] = POINT_COLOURS[knee];
        let colour = egui::Color32::from_rgb(r, g, b);
        if let (Some(h), Some(k), Some(f)) = (s.truth_px[0], s.truth_px[knee], s.truth_px[foot]) {
            painter.add(egui::Shape::line(
                vec![to(h), to(k), to(f)],
                egui::Stroke::new(1.0, egui::Color32::from_gray(110)),
            ));
        }
        let m = |i: usize| to(s.ellipses[i].mean);
        painter.add(egui::Shape::line(
            vec![m(0), m(knee), m(foot)],
            egui::Stroke::new(2.0, colour),
        ));
    }
    for (k, &[r, g, b]) in POINT_COLOURS.iter().enumerate() {
        let colour = egui::Color32::from_rgb(r, g, b);
        let e = &s.ellipses[k];
        let (a, b_axis, angle) = e.axes();
        if a.is_finite() && a > 0.0 {
            let (sn, cs) = angle.sin_cos();
            let pts: Vec<egui::Pos2> = (0..=48)
                .map(|i| {
                    let t = i as f64 / 48.0 * std::f64::consts::TAU;
                    let (x, y) = (a * t.cos(), b_axis * t.sin());
                    to([e.mean[0] + x * cs - y * sn, e.mean[1] + x * sn + y * cs])
                })
                .collect();
            painter.add(egui::Shape::line(pts, egui::Stroke::new(1.5, colour)));
            painter.circle_filled(to(e.mean), 2.5, colour);
        }
        match s.observed[k] {
            Some(p) => {
                painter.circle_filled(to(p), 3.0, egui::Color32::from_gray(170));
            }
            None => {
                if let Some(t) = s.truth_px[k] {
                    painter.circle_stroke(
                        to(t),
                        4.0,
                        egui::Stroke::new(1.0, egui::Color32::from_gray(170)),
                    );
                }
            }
        }
        if let Some(t) = s.truth_px[k] {
            painter.circle_filled(to(t), 1.5, egui::Color32::WHITE);
        }
    }
    ui.horizontal_wrapped(|ui| {
        for k in [0, 1, 3] {
            let [r, g, b] = POINT_COLOURS[k];
            let name = match k {
                0 => "hip",
                1 => "left leg",
                _ => "right leg",
            };
            ui.colored_label(egui::Color32::from_rgb(r, g, b), name);
        }
        ui.colored_label(egui::Color32::from_gray(170), "observed (hollow: occluded)");
        ui.colored_label(egui::Color32::WHITE, "truth");
    });
}

/// ESS and each point's 2D error per frame.
fn charts(s: &WalkerSnapshot) -> Vec<Chart> {
    let series = |f: &dyn Fn(&crate::scenes::walker::model::WalkerSample) -> f64| -> Vec<[f64; 2]> {
        s.history.iter().map(|h| [h.frame as f64, f(h)]).collect()
    };
    let ess = Chart::new("walker-ess", "effective sample size").line("ESS", series(&|h| h.ess));
    let err = POINT_NAMES.iter().enumerate().fold(
        Chart::new("walker-err", "2D error of each point's mean (px)"),
        |c, (k, name)| c.line(*name, series(&|h| h.err_px[k])),
    );
    vec![ess, err]
}

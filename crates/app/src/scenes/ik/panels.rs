//! `TuningPanelPlugin`: the egui panels (scene, filter, noise, constraints,
//! status, colour legend, settings file) on the left and the plots (last
//! 10 s) at the bottom; the 3D view gets the rest of the window.

use std::path::PathBuf;

use bevy::prelude::*;
use bevy_egui::{EguiPrimaryContextPass, egui};

use super::{PlaygroundRes, SceneCommand, UiState};
use crate::colormap::{WEIGHT_DECADES, viridis};
use crate::gui::cloud_budget::CloudBudget;
use crate::gui::export::PoseNow;
use crate::gui::layout::{Chart, ERROR_COLOUR, PLOT_HEIGHT, PanelView, error_label, section};
use crate::gui::scene_common::SceneClock;
use crate::runtime::Pacing;
use crate::scenes::ik::mirror::SolverMirror;
use crate::scenes::ik::settings::{
    MAX_PARTICLES, ResamplingName, SamplerName, Settings, SolverKind,
};
use crate::scenes::ik::setup::{SCENE_NAMES, SceneSource};
use crate::scenes::ik::solver::{HISTORY_SECONDS, Sample, noise_axes};

/// Width of the left panel (logical pixels).
pub const PANEL_WIDTH: f32 = 340.0;

pub struct TuningPanelPlugin;

impl Plugin for TuningPanelPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(EguiPrimaryContextPass, panels);
    }
}

fn panels(
    mut view: PanelView,
    mut pg: ResMut<PlaygroundRes>,
    mut ui_state: ResMut<UiState>,
    mut scene_commands: MessageWriter<SceneCommand>,
) -> Result {
    let mut requests = Vec::new();
    let mut layout = view.layout("posecloud-root")?;
    let clock = &mut *view.clock;
    let mut settings = pg.0.settings().clone();
    layout.left("tuning", PANEL_WIDTH, |ui| {
        scene_section(ui, &mut ui_state, &pg.0, &mut requests);
        status_section(ui, &ui_state, clock, &pg.0, &mut requests);
        let p = &pg.0;
        // One recorded frame per displayed frame (30 frames/s in the BVH).
        let pose = PoseNow {
            skeleton: p.skeleton(),
            pose: &p.snapshot().data.estimate,
            frame: clock.frames as usize,
            frame_time: 1.0 / 30.0,
        };
        view.exports
            .section(ui, clock, &p.scene.source.label(), Some(pose));
        filter_section(ui, &mut view.budget, &mut settings);
        noise_section(ui, &pg.0, &mut settings);
        constraint_section(ui, &mut ui_state, &mut pg.0, &mut settings);
        legend_section(ui);
        file_section(ui, &mut ui_state, &pg.0, &mut settings);
    });
    layout.charts("plots", PLOT_HEIGHT, charts(&pg.0));
    scene_commands.write_batch(requests);
    if settings != *pg.0.settings()
        && let Err(e) = pg.0.set_settings(settings)
    {
        ui_state.fail("settings", &e);
    }
    // Centre the body in what the panels leave (the focus stays where the
    // user panned it).
    view.frame(&layout, None);
    Ok(())
}

fn scene_section(
    ui: &mut egui::Ui,
    state: &mut UiState,
    p: &SolverMirror,
    requests: &mut Vec<SceneCommand>,
) {
    section(ui, "Scene", |ui| {
        ui.label(format!(
            "{} — {} joints, {} DOF",
            p.scene.source.label(),
            p.skeleton().len(),
            p.skeleton().dof()
        ));
        if !p.scene.warnings.is_empty() {
            // What the URDF importer adjusted to load the file.
            egui::CollapsingHeader::new(
                egui::RichText::new(format!("⚠ {} import adjustment(s)", p.scene.warnings.len()))
                    .color(egui::Color32::from_rgb(230, 170, 60)),
            )
            .default_open(true)
            .show(ui, |ui| {
                egui::ScrollArea::vertical()
                    .max_height(120.0)
                    .show(ui, |ui| {
                        for w in &p.scene.warnings {
                            ui.small(w);
                        }
                    });
            });
        }
        ui.horizontal(|ui| {
            for name in SCENE_NAMES {
                if ui.button(name).clicked()
                    && let Ok(source) = SceneSource::from_name(name)
                {
                    requests.push(SceneCommand::Load(source));
                }
            }
        });
        // The tracking, walker and sparse-sensor scenes have windows of
        // their own: each button starts one beside this one.
        // Wrapped, so the row never widens the panel.
        ui.horizontal_wrapped(|ui| {
            ui.label("in a new window:");
            for name in ["track", "walker", "sparse"] {
                if ui.button(name).clicked() {
                    let started = std::env::current_exe().and_then(|exe| {
                        std::process::Command::new(exe)
                            .args(["--scene", name])
                            .spawn()
                    });
                    if let Err(e) = started {
                        state.fail(&format!("starting the {name} scene"), &e.into());
                    }
                }
            }
        });
        ui.horizontal(|ui| {
            ui.label("URDF");
            ui.add(egui::TextEdit::singleline(&mut state.fields.urdf_path).desired_width(170.0));
            if ui.button("load").clicked() {
                requests.push(SceneCommand::Load(SceneSource::Urdf(PathBuf::from(
                    &state.fields.urdf_path,
                ))));
            }
        });
        ui.horizontal(|ui| {
            ui.label("BVH");
            ui.add(egui::TextEdit::singleline(&mut state.fields.bvh_path).desired_width(110.0));
            ui.add(egui::DragValue::new(&mut state.fields.bvh_frame).prefix("frame "));
            if ui.button("load").clicked() {
                requests.push(SceneCommand::Load(SceneSource::Bvh {
                    path: PathBuf::from(&state.fields.bvh_path),
                    frame: state.fields.bvh_frame,
                }));
            }
        });
        if let Some(e) = &state.error {
            error_label(ui, e);
            if ui.small_button("dismiss").clicked() {
                state.error = None;
            }
        }
    });
}

fn status_section(
    ui: &mut egui::Ui,
    state: &UiState,
    clock: &SceneClock,
    p: &SolverMirror,
    requests: &mut Vec<SceneCommand>,
) {
    section(ui, "Status", |ui| {
        let snap = p.snapshot();
        let r = &snap.data;
        egui::Grid::new("status").num_columns(2).show(ui, |ui| {
            ui.label("fps");
            ui.label(format!("{:.1}", clock.fps));
            ui.end_row();
            ui.label("particles");
            ui.label(if p.settings().filter.solver.has_cloud() {
                format!("{}", p.settings().filter.particles)
            } else {
                "— (Jacobian solver)".into()
            });
            ui.end_row();
            ui.label("iterations/s");
            ui.label(format!("{:.0}", snap.steps_per_second));
            ui.end_row();
            ui.label("solver ms/slice");
            ui.label(format!(
                "{:.2} ({} it., {})",
                snap.slice_ms,
                snap.slice_steps,
                match p.pacing() {
                    Pacing::Budget => "own thread",
                    Pacing::Inline => "inline replay",
                }
            ));
            ui.end_row();
            ui.label("ESS");
            ui.label(format!("{:.1}", p.last_ess()));
            ui.end_row();
            ui.label("noise scale");
            ui.label(format!("{:.3e}", p.noise_scale()));
            ui.end_row();
            ui.label("limit violations");
            let worst = state.max_violations;
            ui.colored_label(
                if worst.is_none() {
                    egui::Color32::from_rgb(120, 220, 120)
                } else {
                    ERROR_COLOUR
                },
                format!(
                    "body {} · particles {} (worst {} · {})",
                    r.violations.estimate, r.violations.particles, worst.estimate, worst.particles
                ),
            );
            ui.end_row();
            ui.label("startup");
            ui.label(
                match (clock.times.first_frame, clock.times.first_interactive) {
                    (Some(a), Some(b)) => format!("first frame {a:.1} s, interactive {b:.1} s"),
                    (Some(a), None) => format!("first frame {a:.1} s"),
                    _ => "—".into(),
                },
            );
            ui.end_row();
        });
        ui.horizontal(|ui| {
            let label = if p.paused() {
                "▶ run (space)"
            } else {
                "⏸ pause (space)"
            };
            if ui.button(label).clicked() {
                requests.push(SceneCommand::TogglePause);
            }
            if ui.button("step (S)").clicked() {
                requests.push(SceneCommand::SingleStep);
            }
            if ui.button("reset (R)").clicked() {
                requests.push(SceneCommand::Reset);
            }
        });
    });
}

fn filter_section(ui: &mut egui::Ui, budget: &mut CloudBudget, s: &mut Settings) {
    section(ui, "Filter", |ui| {
        let f = &mut s.filter;
        egui::ComboBox::from_label("solver")
            .selected_text(f.solver.label())
            .show_ui(ui, |ui| {
                for k in SolverKind::ALL {
                    ui.selectable_value(&mut f.solver, k, k.label());
                }
            });
        ui.add(
            egui::Slider::new(&mut f.particles, 1..=MAX_PARTICLES)
                .logarithmic(true)
                .text("particles N"),
        );
        egui::ComboBox::from_label("resampling")
            .selected_text(f.resampling.label())
            .show_ui(ui, |ui| {
                for r in ResamplingName::ALL {
                    ui.selectable_value(&mut f.resampling, r, r.label());
                }
            });
        ui.add(egui::Slider::new(&mut f.ess_threshold, 0.0..=1.0).text("ESS threshold"));
        ui.add(egui::Slider::new(&mut f.alpha, 0.01..=1.0).text("smoothing α (Eq. 15)"));
        ui.add(
            egui::Slider::new(&mut f.budget_ms, 1.0..=100.0)
                .logarithmic(true)
                .text("solver ms per frame"),
        );
        ui.horizontal(|ui| {
            ui.add(egui::DragValue::new(&mut f.seed).prefix("seed "));
            ui.add(
                egui::Slider::new(&mut f.iterations_per_frame, 1..=50)
                    .text("iterations/frame (replays)"),
            );
        });
        egui::ComboBox::from_label("limits")
            .selected_text(match f.sampler {
                SamplerName::Reject => "accept/reject (paper)",
                SamplerName::Truncated => "truncated Gaussian",
            })
            .show_ui(ui, |ui| {
                ui.selectable_value(&mut f.sampler, SamplerName::Reject, "accept/reject (paper)");
                ui.selectable_value(&mut f.sampler, SamplerName::Truncated, "truncated Gaussian");
            });
        ui.checkbox(&mut f.adaptive, "adaptive noise (success rule)");
        ui.separator();
        budget.controls(ui, f.particles);
    });
}

fn noise_section(ui: &mut egui::Ui, p: &SolverMirror, s: &mut Settings) {
    egui::CollapsingHeader::new("Noise (QuTem σ, Eq. 12)")
        .default_open(false)
        .show(ui, |ui| {
            ui.add(
                egui::Slider::new(&mut s.noise.sigma, 1e-4..=1.0)
                    .logarithmic(true)
                    .text("σ (rad)"),
            );
            ui.checkbox(
                &mut s.noise.lever_arm,
                "scale σ by lever arm to the targets",
            );
            ui.add(
                egui::Slider::new(&mut s.noise.root_translation, 0.0..=0.05)
                    .text("root translation σ (m)"),
            );
            let skel = p.skeleton();
            for region in p.region_names() {
                egui::CollapsingHeader::new(&region)
                    .id_salt(("region", &region))
                    .show(ui, |ui| {
                        let mut scale = s.group_scale(&region);
                        if ui
                            .add(egui::Slider::new(&mut scale, 0.0..=4.0).text("scale group"))
                            .changed()
                        {
                            s.noise.groups.insert(region.clone(), scale);
                        }
                        for j in (0..skel.len()).filter(|&j| p.regions()[j] == region) {
                            let joint = skel.joint(j);
                            let axes = noise_axes(&joint.kind);
                            if axes == 0 {
                                continue;
                            }
                            let mut sigma = p.joint_sigma(j);
                            let mut changed = false;
                            ui.horizontal(|ui| {
                                ui.label(&joint.name);
                                for v in sigma.iter_mut().take(axes) {
                                    changed |= ui
                                        .add(egui::DragValue::new(v).speed(0.001).range(0.0..=3.0))
                                        .changed();
                                }
                                if s.noise.joints.contains_key(&joint.name)
                                    && ui.small_button("rule").clicked()
                                {
                                    s.noise.joints.remove(&joint.name);
                                }
                            });
                            if changed {
                                s.noise.joints.insert(joint.name.clone(), sigma);
                            }
                        }
                    });
            }
        });
}

fn constraint_section(
    ui: &mut egui::Ui,
    state: &mut UiState,
    p: &mut SolverMirror,
    s: &mut Settings,
) {
    section(ui, "Constraints (Σ = σ² I)", |ui| {
        for g in p.scene.constraint_groups() {
            let mut sigma = s.constraint_sigma(g);
            if ui
                .add(
                    egui::Slider::new(&mut sigma, 1e-4..=2.0)
                        .logarithmic(true)
                        .text(format!("σ {}", g.label())),
                )
                .changed()
            {
                s.set_constraint_sigma(g, sigma);
            }
        }
        for c in &p.scene.fixed {
            ui.small(&c.label);
        }
        ui.separator();
        ui.label("targets (drag them; click the body to add; right-click to remove)");
        let distances = p.target_distances();
        let mut remove = None;
        for (i, (t, d)) in p.targets().iter().zip(&distances).enumerate() {
            ui.horizontal(|ui| {
                let name = &p.skeleton().joint(t.joint).name;
                let selected = state.selected_target == Some(i);
                if ui.selectable_label(selected, name).clicked() {
                    state.selected_target = Some(i);
                }
                ui.label(format!("{:.1} mm", d * 1e3));
                if ui.small_button("✖").clicked() {
                    remove = Some(i);
                }
            });
        }
        if let Some(i) = remove {
            if let Err(e) = p.remove_target(i) {
                state.fail("removing the target", &e);
            }
            state.selected_target = None;
        }
    });
}

fn legend_section(ui: &mut egui::Ui) {
    section(ui, "Cloud colours", |ui| {
        let (rect, _) = ui.allocate_exact_size(
            egui::vec2(ui.available_width().min(300.0), 16.0),
            egui::Sense::hover(),
        );
        let steps = 64;
        for k in 0..steps {
            let t = k as f64 / (steps - 1) as f64;
            let [r, g, b] = viridis(t);
            let x0 = rect.left() + rect.width() * k as f32 / steps as f32;
            let x1 = rect.left() + rect.width() * (k + 1) as f32 / steps as f32;
            ui.painter().rect_filled(
                egui::Rect::from_min_max(
                    egui::pos2(x0, rect.top()),
                    egui::pos2(x1 + 0.5, rect.bottom()),
                ),
                egui::CornerRadius::ZERO,
                egui::Color32::from_rgb((r * 255.0) as u8, (g * 255.0) as u8, (b * 255.0) as u8),
            );
        }
        ui.horizontal(|ui| {
            ui.small(format!("w / w_max ≤ 1e-{WEIGHT_DECADES:.0}"));
            ui.add_space(ui.available_width() - 60.0);
            ui.small("1 (heaviest)");
        });
        ui.small("viridis; heavier particles are drawn more opaque and on top");
    });
}

fn file_section(ui: &mut egui::Ui, state: &mut UiState, p: &SolverMirror, s: &mut Settings) {
    egui::CollapsingHeader::new("Settings file (TOML)")
        .default_open(false)
        .show(ui, |ui| {
            ui.add(
                egui::TextEdit::singleline(&mut state.fields.settings_path).desired_width(300.0),
            );
            ui.horizontal(|ui| {
                let path = PathBuf::from(&state.fields.settings_path);
                if ui.button("save").clicked() {
                    // Save what is on screen (including this frame's edits);
                    // an existing file is overwritten only when confirmed.
                    save_settings(state, s, &path, false);
                }
                if ui.button("load").clicked() {
                    match Settings::load(&path) {
                        Ok(loaded) => *s = loaded,
                        Err(e) => state.fail("loading settings", &e),
                    }
                }
                if ui.button("defaults").clicked() {
                    *s = super::initial_settings(&p.scene, None, None);
                }
            });
            if let Some(existing) = state.confirm_overwrite.clone() {
                ui.colored_label(
                    egui::Color32::from_rgb(230, 170, 60),
                    format!("{} exists: overwrite it?", existing.display()),
                );
                ui.horizontal(|ui| {
                    if ui.button("overwrite").clicked() {
                        save_settings(state, s, &existing, true);
                    }
                    if ui.button("cancel").clicked() {
                        state.confirm_overwrite = None;
                    }
                });
            }
        });
}

/// Saves the settings, or asks first (`confirm_overwrite`) when the file
/// exists and `overwrite` is false.
fn save_settings(state: &mut UiState, s: &Settings, path: &std::path::Path, overwrite: bool) {
    state.confirm_overwrite = None;
    match s.save_asking(path, overwrite) {
        Ok(crate::scenes::ik::settings::Saved::Written) => state.error = None,
        Ok(crate::scenes::ik::settings::Saved::WouldOverwrite) => {
            state.confirm_overwrite = Some(path.to_path_buf())
        }
        Err(e) => state.fail("saving settings", &e),
    }
}

/// The last [`HISTORY_SECONDS`]: each target's distance, the ESS and the
/// solver's time per frame.
fn charts(p: &SolverMirror) -> Vec<Chart> {
    let history = p.history();
    let now = history.back().map(|s| s.time).unwrap_or(0.0);
    let window = |c: Chart| c.include_x(-HISTORY_SECONDS).include_x(0.0);
    let series = |f: &dyn Fn(&Sample) -> f64| -> Vec<[f64; 2]> {
        history.iter().map(|s| [s.time - now, f(s)]).collect()
    };
    let targets = p.targets();
    let distances = targets.iter().enumerate().fold(
        window(Chart::new("distances", "distance to each target (mm)")),
        |c, (k, t)| {
            let points = history
                .iter()
                .filter(|s| s.distances.len() == targets.len())
                .map(|s| [s.time - now, s.distances[k] * 1e3])
                .collect();
            c.line(p.skeleton().joint(t.joint).name.clone(), points)
        },
    );
    vec![
        distances,
        window(Chart::new("ess", "effective sample size")).line("ESS", series(&|s| s.ess)),
        window(Chart::new("step", "solver time per frame (ms)")).line("ms", series(&|s| s.step_ms)),
    ]
}

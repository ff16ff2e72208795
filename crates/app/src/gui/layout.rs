//! The panels of every scene window, laid out one way: controls on the
//! left (scrolling), an optional picture on the right, a row of charts at
//! the bottom, and the 3D view framed in what they leave
//! ([`PanelLayout`]); the charts are [`Chart`]s.

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy::window::PrimaryWindow;
use bevy_egui::{EguiContexts, egui};
use egui_plot::{Legend, Line, Plot};

use super::OrbitCamera;
use super::cloud_budget::CloudBudget;
use super::export::Exports;
use super::scene_common::{PlayButtons, SceneClock, frame_view, play_buttons};

/// What every scene's panel system reads besides its scene: egui, the
/// orbit camera and window the panels frame, the host's clock, and the
/// host's cloud budget and exports (their panel sections).
#[derive(SystemParam)]
pub struct PanelView<'w, 's> {
    pub contexts: EguiContexts<'w, 's>,
    pub camera: Query<'w, 's, (&'static mut OrbitCamera, &'static mut Transform)>,
    pub window: Single<'w, 's, &'static Window, With<PrimaryWindow>>,
    pub clock: ResMut<'w, SceneClock>,
    pub budget: ResMut<'w, CloudBudget>,
    pub exports: ResMut<'w, Exports>,
}

impl PanelView<'_, '_> {
    /// A layout over the whole window (`id` names its egui root).
    ///
    /// # Errors
    /// No egui context on the primary window.
    pub fn layout(&mut self, id: &'static str) -> Result<PanelLayout> {
        Ok(PanelLayout::new(self.contexts.ctx_mut()?, id))
    }

    /// Centres `focus` (or the orbit's own focus) in what `layout`'s panels
    /// leave.
    pub fn frame(&mut self, layout: &PanelLayout, focus: Option<Vec3>) {
        layout.frame(&mut self.camera, &self.window, focus);
    }
}

/// The top of a clip scene's controls: its heading, the play / step /
/// reset buttons and "play at `fps` frames/s" (else as fast as it runs).
pub fn clip_header(
    ui: &mut egui::Ui,
    heading: &str,
    paused: bool,
    realtime: &mut bool,
    fps: u32,
) -> PlayButtons {
    ui.heading(heading);
    let play = play_buttons(ui, paused);
    ui.checkbox(realtime, format!("play at {fps} frames/s"));
    play
}

/// Width of the clip scenes' controls panel, and height of every scene's
/// chart row (logical pixels).
pub const LEFT_WIDTH: f32 = 320.0;
pub const PLOT_HEIGHT: f32 = 170.0;

/// A collapsible section of a controls panel, open at first.
pub fn section(ui: &mut egui::Ui, title: &str, add: impl FnOnce(&mut egui::Ui)) {
    egui::CollapsingHeader::new(title)
        .default_open(true)
        .show(ui, add);
}

/// The colour of every panel's error messages.
pub const ERROR_COLOUR: egui::Color32 = egui::Color32::from_rgb(255, 110, 90);

/// An error message in [`ERROR_COLOUR`].
pub fn error_label(ui: &mut egui::Ui, message: &str) {
    ui.colored_label(ERROR_COLOUR, message);
}

/// The panels of one frame, laid out in the order they are added; the
/// widths and height they take frame the 3D view ([`PanelLayout::frame`]).
pub struct PanelLayout {
    root: egui::Ui,
    left: f32,
    right: f32,
    bottom: f32,
}

impl PanelLayout {
    /// The egui root over the whole window (the 3D view shows through what
    /// the panels leave).
    pub fn new(ctx: &egui::Context, id: &'static str) -> Self {
        let root = egui::Ui::new(
            ctx.clone(),
            id.into(),
            egui::UiBuilder::new()
                .layer_id(egui::LayerId::background())
                .max_rect(ctx.viewport_rect()),
        );
        Self {
            root,
            left: 0.0,
            right: 0.0,
            bottom: 0.0,
        }
    }

    /// The resizable, scrolling controls panel on the left.
    pub fn left(&mut self, id: &'static str, width: f32, add: impl FnOnce(&mut egui::Ui)) {
        self.left = egui::Panel::left(id)
            .resizable(true)
            .default_size(width)
            .show(&mut self.root, |ui| {
                egui::ScrollArea::vertical().show(ui, add);
            })
            .response
            .rect
            .width();
    }

    /// A panel on the right (a camera picture); `resizable` or fixed at
    /// `width`.
    pub fn right(
        &mut self,
        id: &'static str,
        width: f32,
        resizable: bool,
        add: impl FnOnce(&mut egui::Ui),
    ) {
        let panel = egui::Panel::right(id).resizable(resizable);
        let panel = if resizable {
            panel.default_size(width)
        } else {
            panel.exact_size(width)
        };
        self.right = panel.show(&mut self.root, add).response.rect.width();
    }

    /// The charts in one row along the bottom, `height` tall.
    pub fn charts(&mut self, id: &'static str, height: f32, charts: Vec<Chart>) {
        self.bottom = egui::Panel::bottom(id)
            .exact_size(height)
            .show(&mut self.root, |ui| chart_row(ui, height, charts))
            .response
            .rect
            .height();
    }

    /// Centres `focus` (or the orbit's own focus) in what the panels leave.
    pub fn frame(
        &self,
        camera: &mut Query<(&mut OrbitCamera, &mut Transform)>,
        window: &Window,
        focus: Option<Vec3>,
    ) {
        frame_view(camera, window, (self.left, self.right, self.bottom), focus);
    }
}

/// One chart of the bottom row: a title above, named lines (a legend when
/// there are several), ranges it always shows; not draggable or zoomable.
pub struct Chart {
    id: &'static str,
    title: String,
    include_x: Vec<f64>,
    include_y: Vec<f64>,
    lines: Vec<(String, Vec<[f64; 2]>)>,
}

impl Chart {
    /// An empty chart whose y axis starts at 0.
    pub fn new(id: &'static str, title: impl Into<String>) -> Self {
        Self {
            id,
            title: title.into(),
            include_x: Vec::new(),
            include_y: vec![0.0],
            lines: Vec::new(),
        }
    }

    /// Always shows `x` (e.g. both ends of a time window).
    pub fn include_x(mut self, x: f64) -> Self {
        self.include_x.push(x);
        self
    }

    /// Always shows `y`.
    pub fn include_y(mut self, y: f64) -> Self {
        self.include_y.push(y);
        self
    }

    /// The y axis fits the data, without 0 (signed quantities).
    pub fn free_y(mut self) -> Self {
        self.include_y.clear();
        self
    }

    /// Adds a line (an empty one is left out of the legend).
    pub fn line(mut self, name: impl Into<String>, points: Vec<[f64; 2]>) -> Self {
        self.lines.push((name.into(), points));
        self
    }

    fn show(self, ui: &mut egui::Ui, height: f32) {
        ui.small(self.title.as_str());
        let mut plot = Plot::new(self.id)
            .height(height)
            .allow_drag(false)
            .allow_zoom(false)
            .allow_scroll(false);
        for x in self.include_x {
            plot = plot.include_x(x);
        }
        for y in self.include_y {
            plot = plot.include_y(y);
        }
        if self.lines.len() > 1 {
            plot = plot.legend(Legend::default().position(egui_plot::Corner::LeftTop));
        }
        plot.show(ui, |p| {
            for (name, points) in self.lines {
                p.line(Line::new(name, points));
            }
        });
    }
}

/// `charts` side by side, filling a panel `height` tall.
pub fn chart_row(ui: &mut egui::Ui, height: f32, charts: Vec<Chart>) {
    let n = charts.len().max(1) as f32;
    let width = (ui.available_width() - 8.0 * n) / n;
    let plot_height = height - 30.0;
    ui.horizontal(|ui| {
        for chart in charts {
            ui.vertical(|ui| {
                ui.set_width(width);
                chart.show(ui, plot_height);
            });
        }
    });
}

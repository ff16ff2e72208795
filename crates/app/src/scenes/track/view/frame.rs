//! The tracking window's right panel: the camera frame with the label
//! image, the estimate's skeleton, the detected keypoints and the guided
//! start's status over it, and colour sampling (strokes on the frame that
//! "learn from strokes" turns into the classes' colour models).

use bevy::prelude::*;
use bevy_egui::{EguiContexts, egui};
use vision::{ColourClass, SegClass, Stroke};

use super::{ESTIMATE_COLOUR, TrackUi};
use crate::gui::scene_common::PlayButtons;
use crate::runtime::Published;
use crate::scenes::track::model::{
    OVERLAY_PARTICLES, TrackEdit, TrackSnapshot, class_colour, click_patch, stroke_summary,
};

/// The right panel: the frame and what is drawn over it, the label
/// classes' colours, and the sampling controls. Switching sampling on
/// pauses the source (`play`); "learn from strokes" adds its edit.
pub(super) fn frame_panel(
    ui: &mut egui::Ui,
    state: &mut TrackUi,
    s: &TrackSnapshot,
    paused: bool,
    play: &mut PlayButtons,
    edits: &mut Vec<TrackEdit>,
) {
    ui.label("camera frame");
    frame_image(ui, state, s);
    ui.horizontal_wrapped(|ui| {
        for id in 1..=vision::SEG_CLASSES as u8 {
            let [r, g, b] = class_colour(id);
            ui.colored_label(
                egui::Color32::from_rgb(r, g, b),
                vision::SegClass::from_id(id).map_or("?", |c| c.name()),
            );
        }
    });
    ui.separator();
    let was_on = state.sampling.on;
    if let Some(edit) = sampling_controls(ui, &mut state.sampling, s) {
        edits.push(edit);
    }
    // Strokes are learned on the frame they were drawn on: sampling
    // pauses the source.
    if state.sampling.on && !was_on && !paused && !play.toggle_pause {
        play.toggle_pause = true;
    }
}

/// The frame at the panel's width with its overlays; with sampling on,
/// clicks and drags on it add strokes.
fn frame_image(ui: &mut egui::Ui, state: &mut TrackUi, s: &TrackSnapshot) {
    let width = ui.available_width().max(64.0);
    let Some((id, (w, h))) = state.frame_tex.as_ref().map(|t| (t.id, t.size)) else {
        return;
    };
    let size = egui::vec2(width, width * h as f32 / w.max(1) as f32);
    let sense = if state.sampling.on {
        egui::Sense::click_and_drag()
    } else {
        egui::Sense::hover()
    };
    let (rect, response) = ui.allocate_exact_size(size, sense);
    let uv = egui::Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0));
    ui.painter().image(id, rect, uv, egui::Color32::WHITE);
    if state.overlay
        && let Some(labels) = &state.label_tex
    {
        ui.painter()
            .image(labels.id, rect, uv, egui::Color32::WHITE);
    }
    let painter = ui.painter_at(rect);
    if state.skeleton_overlay {
        paint_skeletons(&painter, rect, s);
    }
    if state.keypoint_overlay {
        paint_keypoints(&painter, rect, (w, h), s);
    }
    paint_status(&painter, rect, s);
    if state.sampling.on {
        sample_on_frame(&mut state.sampling, &response, rect, (w, h), s);
    }
    paint_strokes(&painter, rect, (w, h), &state.sampling.strokes);
}

/// The frame panel's colour sampling: strokes (frame pixels) waiting for
/// "learn from strokes".
pub(super) struct ColourSampling {
    /// Clicks and drags on the frame add strokes.
    on: bool,
    /// The class of the next stroke.
    class: ColourClass,
    strokes: Vec<Stroke>,
    /// The source frame the strokes were drawn on.
    frame: Option<usize>,
    /// The last pixel of the stroke being dragged (`None` when the pointer
    /// left the frame: the stroke goes on where it comes back, without a
    /// line across what it left out).
    drag_last: Option<(u32, u32)>,
}

impl Default for ColourSampling {
    fn default() -> Self {
        Self {
            on: false,
            class: ColourClass::Skin,
            strokes: Vec::new(),
            frame: None,
            drag_last: None,
        }
    }
}

impl ColourSampling {
    /// A click on `frame` pixel `p`: a patch (see [`click_patch`]).
    fn click(&mut self, p: (u32, u32), frame: (u32, u32), labels: (u32, u32)) {
        self.strokes.push(Stroke {
            class: self.class,
            points: click_patch(p, frame, labels),
        });
    }

    /// A drag starts: a new stroke.
    fn begin_drag(&mut self, p: Option<(u32, u32)>) {
        self.strokes.push(Stroke {
            class: self.class,
            points: p.into_iter().collect(),
        });
        self.drag_last = p;
    }

    /// The pointer is at `p` (`None`: off the frame) while dragging: the
    /// pixels on the line from the last one join the stroke.
    fn drag_to(&mut self, p: Option<(u32, u32)>) {
        let Some(stroke) = self.strokes.last_mut() else {
            return;
        };
        if let Some(p) = p
            && self.drag_last != Some(p)
        {
            match self.drag_last {
                Some(from) => stroke.points.extend(line_pixels(from, p)),
                None => stroke.points.push(p),
            }
        }
        self.drag_last = p;
    }

    fn end_drag(&mut self) {
        if self.strokes.last().is_some_and(|s| s.points.is_empty()) {
            self.strokes.pop();
        }
        self.drag_last = None;
    }

    pub(super) fn clear(&mut self) {
        self.strokes.clear();
        self.frame = None;
        self.drag_last = None;
    }
}

/// Clicks and drags on the frame image (`response`, drawn in `rect`, of
/// `frame` pixels) add to the pending strokes.
fn sample_on_frame(
    sampling: &mut ColourSampling,
    response: &egui::Response,
    rect: egui::Rect,
    frame: (u32, u32),
    s: &TrackSnapshot,
) {
    let Some(index) = s.frame_index else {
        return;
    };
    let at = |pos: Option<egui::Pos2>| pos.and_then(|p| frame_pixel(p, rect, frame));
    let pending = sampling.strokes.len();
    if response.clicked() {
        if let Some(p) = at(response.interact_pointer_pos()) {
            sampling.click(p, frame, s.label_size);
        }
    } else if response.drag_started() {
        // egui tells a drag from a click once the pointer has moved a few
        // points: the stroke starts where the button went down.
        let origin = response.ctx.input(|i| i.pointer.press_origin());
        sampling.begin_drag(at(origin));
        sampling.drag_to(at(response.interact_pointer_pos()));
    } else if response.dragged() {
        sampling.drag_to(at(response.interact_pointer_pos()));
    }
    if response.drag_stopped() {
        sampling.end_drag();
    }
    if pending == 0 && !sampling.strokes.is_empty() {
        sampling.frame = Some(index);
    }
}

/// Under the frame: the sampling switch, the class, "learn from strokes"
/// (the edit it returns) and "clear strokes".
fn sampling_controls(
    ui: &mut egui::Ui,
    sampling: &mut ColourSampling,
    s: &TrackSnapshot,
) -> Option<TrackEdit> {
    let mut edit = None;
    ui.horizontal(|ui| {
        ui.toggle_value(&mut sampling.on, "sample colours")
            .on_hover_text("click or drag on the frame to mark pixels of the class (pauses)");
        for class in ColourClass::ALL {
            let name = egui::RichText::new(class.name()).color(stroke_colour(class));
            ui.selectable_value(&mut sampling.class, class, name);
        }
    });
    let pending = !sampling.strokes.is_empty();
    ui.horizontal(|ui| {
        if ui
            .add_enabled(pending, egui::Button::new("learn from strokes"))
            .clicked()
            && let Some(frame) = sampling.frame
        {
            edit = Some(TrackEdit::SampleColours {
                frame,
                strokes: std::mem::take(&mut sampling.strokes),
            });
            sampling.clear();
        }
        if ui
            .add_enabled(pending, egui::Button::new("clear strokes"))
            .clicked()
        {
            sampling.clear();
        }
    });
    if pending {
        let per_class = stroke_summary(&sampling.strokes, s.frame_size, s.label_size);
        ui.small(format!(
            "{} stroke(s) on frame {}: {} label pixels",
            sampling.strokes.len(),
            sampling.frame.map_or("?".into(), |k| k.to_string()),
            per_class
        ));
        if sampling.frame != s.frame_index {
            ui.colored_label(
                egui::Color32::YELLOW,
                "the frame changed since: clear the strokes (they are learned on the frame they were drawn on)",
            );
        }
    } else if sampling.on {
        ui.small("click (a small patch) or drag (a stroke) on the frame");
    }
    edit
}

/// The frame pixel under `pos` in an image of `w × h` pixels drawn in
/// `rect` (`None` outside it).
fn frame_pixel(pos: egui::Pos2, rect: egui::Rect, (w, h): (u32, u32)) -> Option<(u32, u32)> {
    if !rect.contains(pos) || w == 0 || h == 0 {
        return None;
    }
    let u = (pos.x - rect.min.x) / rect.width();
    let v = (pos.y - rect.min.y) / rect.height();
    let x = ((u * w as f32) as u32).min(w - 1);
    let y = ((v * h as f32) as u32).min(h - 1);
    Some((x, y))
}

/// The pixels of the line from `a` to `b`, one per step along its longer
/// axis, `a` left out (it is in the stroke already).
fn line_pixels(a: (u32, u32), b: (u32, u32)) -> impl Iterator<Item = (u32, u32)> {
    let (dx, dy) = (
        i64::from(b.0) - i64::from(a.0),
        i64::from(b.1) - i64::from(a.1),
    );
    let n = dx.abs().max(dy.abs());
    (1..=n).map(move |i| {
        // Rounded to the nearest pixel: `(2 d i + n) div (2 n)`.
        let step = |a: u32, d: i64| (i64::from(a) + (2 * d * i + n).div_euclid(2 * n)) as u32;
        (step(a.0, dx), step(a.1, dy))
    })
}

/// The colour a class's strokes are drawn in: its label class's preview
/// colour (hair: the head's).
fn stroke_colour(class: ColourClass) -> egui::Color32 {
    let seg = match class {
        ColourClass::Skin => SegClass::Skin,
        ColourClass::Hair => SegClass::Head,
        ColourClass::Shirt => SegClass::Shirt,
        ColourClass::Trousers => SegClass::Trousers,
    };
    let [r, g, b] = seg.preview_colour();
    egui::Color32::from_rgb(r, g, b)
}

/// Draws `strokes` (frame pixels of a `w × h` frame) over the frame shown
/// in `rect`: each pixel a square of at least 2 points, outlined in black so
/// a stroke stays visible over the label overlay of its own class.
fn paint_strokes(
    painter: &egui::Painter,
    rect: egui::Rect,
    (w, h): (u32, u32),
    strokes: &[Stroke],
) {
    let scale = egui::vec2(
        rect.width() / w.max(1) as f32,
        rect.height() / h.max(1) as f32,
    );
    let side = scale.max(egui::vec2(2.0, 2.0));
    let square = |(x, y): (u32, u32), grow: f32| {
        let centre = rect.min + egui::vec2(x as f32 + 0.5, y as f32 + 0.5) * scale;
        egui::Rect::from_center_size(centre, side).expand(grow)
    };
    for s in strokes {
        for &p in &s.points {
            painter.rect_filled(square(p, 1.0), 0.0, egui::Color32::BLACK);
        }
    }
    for s in strokes {
        let colour = stroke_colour(s.class);
        for &p in &s.points {
            painter.rect_filled(square(p, 0.0), 0.0, colour);
        }
    }
}

/// The estimate's skeleton (orange, thick) and the most likely particles
/// (thin, fading with rank) over the frame shown in `rect`: their points
/// are in the tracker's image (the label image, the frame's field of view).
fn paint_skeletons(painter: &egui::Painter, rect: egui::Rect, s: &TrackSnapshot) {
    let t = &s.track;
    let (w, h) = t.image_size();
    let to_screen = |p: [f32; 2]| {
        (p[0].is_finite() && p[1].is_finite()).then(|| {
            rect.min
                + egui::vec2(
                    p[0] / w.max(1) as f32 * rect.width(),
                    p[1] / h.max(1) as f32 * rect.height(),
                )
        })
    };
    let draw = |pose: &[[f32; 2]], stroke: egui::Stroke| {
        for &(a, b) in &s.bones {
            if let (Some(pa), Some(pb)) = (
                pose.get(a).copied().and_then(to_screen),
                pose.get(b).copied().and_then(to_screen),
            ) {
                painter.line_segment([pa, pb], stroke);
            }
        }
    };
    if let Some(k) = t.top_px().len().checked_div(t.joints()) {
        let k = k.min(OVERLAY_PARTICLES);
        for i in (0..k).rev() {
            let alpha = (200.0 * (1.0 - i as f32 / k as f32)) as u8 + 30;
            let [r, g, b] = crate::colormap::viridis(1.0 - i as f64 / k.max(1) as f64);
            let colour = egui::Color32::from_rgba_unmultiplied(
                (r * 255.0) as u8,
                (g * 255.0) as u8,
                (b * 255.0) as u8,
                alpha,
            );
            draw(
                &t.top_px()[i * t.joints()..(i + 1) * t.joints()],
                egui::Stroke::new(1.0, colour),
            );
        }
    }
    let [r, g, b] = ESTIMATE_COLOUR;
    let orange = egui::Color32::from_rgb((r * 255.0) as u8, (g * 255.0) as u8, (b * 255.0) as u8);
    draw(
        t.estimate_px(),
        egui::Stroke::new(3.0, egui::Color32::BLACK),
    );
    draw(t.estimate_px(), egui::Stroke::new(2.0, orange));
    for p in t.estimate_px().iter().copied().filter_map(to_screen) {
        painter.circle_filled(p, 2.5, orange);
    }
}

/// The detector's keypoints (score ≥ 0.5) as cyan rings over the frame.
fn paint_keypoints(
    painter: &egui::Painter,
    rect: egui::Rect,
    (w, h): (u32, u32),
    s: &TrackSnapshot,
) {
    let cyan = egui::Color32::from_rgb(40, 230, 255);
    for &(_, [u, v], score) in &s.keypoints {
        if score < track::KEYPOINT_MIN_SCORE || !u.is_finite() || !v.is_finite() {
            continue;
        }
        let p = rect.min
            + egui::vec2(
                u / w.max(1) as f32 * rect.width(),
                v / h.max(1) as f32 * rect.height(),
            );
        painter.circle_stroke(p, 4.0, egui::Stroke::new(2.0, cyan));
    }
}

/// The guided start's message and progress at the top of the frame.
fn paint_status(painter: &egui::Painter, rect: egui::Rect, s: &TrackSnapshot) {
    let Some(stage) = s.stage else {
        return;
    };
    let text = s.status.clone();
    let font = egui::FontId::proportional(15.0);
    let galley = painter.layout(text, font, egui::Color32::WHITE, rect.width() - 16.0);
    let bar = if stage == track::Stage::Tracking {
        0.0
    } else {
        8.0
    };
    let band = egui::Rect::from_min_size(
        rect.min,
        egui::vec2(rect.width(), galley.size().y + 12.0 + bar),
    );
    painter.rect_filled(band, 0.0, egui::Color32::from_black_alpha(150));
    painter.galley(
        rect.min + egui::vec2(8.0, 6.0),
        galley,
        egui::Color32::WHITE,
    );
    if bar > 0.0 {
        let y = band.max.y - bar + 1.0;
        let full = egui::Rect::from_min_max(
            egui::pos2(rect.min.x + 8.0, y),
            egui::pos2(rect.max.x - 8.0, y + 4.0),
        );
        painter.rect_filled(full, 2.0, egui::Color32::from_gray(70));
        let mut done = full;
        done.max.x = full.min.x + full.width() * s.progress.clamp(0.0, 1.0) as f32;
        painter.rect_filled(done, 2.0, egui::Color32::from_rgb(90, 200, 120));
    }
}

/// One picture shown in the panel: a Bevy image registered with egui.
pub(super) struct PanelImage {
    handle: Handle<Image>,
    id: egui::TextureId,
    size: (u32, u32),
}

/// Writes `rgba` (`w × h` RGBA8) into `slot`, creating the image when the
/// size changes (else only its data is replaced).
fn set_image(
    slot: &mut Option<PanelImage>,
    contexts: &mut EguiContexts,
    images: &mut Assets<Image>,
    (w, h): (u32, u32),
    rgba: Vec<u8>,
    nearest: bool,
) {
    use bevy::asset::RenderAssetUsages;
    use bevy::image::ImageSampler;
    use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};
    if let Some(p) = slot.as_ref()
        && p.size == (w, h)
        && let Some(mut image) = images.get_mut(&p.handle)
    {
        image.data = Some(rgba);
        return;
    }
    if let Some(old) = slot.take() {
        contexts.remove_image(&old.handle);
    }
    let mut image = Image::new(
        Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        rgba,
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::MAIN_WORLD | RenderAssetUsages::RENDER_WORLD,
    );
    if nearest {
        image.sampler = ImageSampler::nearest();
    }
    let handle = images.add(image);
    let id = contexts.add_image(bevy_egui::EguiTextureHandle::Strong(handle.clone()));
    *slot = Some(PanelImage {
        handle,
        id,
        size: (w, h),
    });
}

/// Uploads the frame and its label image when they changed.
pub(super) fn update_textures(
    contexts: &mut EguiContexts,
    images: &mut Assets<Image>,
    ui: &mut TrackUi,
    snap: &Published<TrackSnapshot>,
) {
    let s = &snap.data;
    if ui.tex_version == s.frame_serial && ui.frame_tex.is_some() {
        return;
    }
    ui.tex_version = s.frame_serial;
    let (w, h) = s.frame_size;
    if w > 0 && s.frame_rgb.len() == w as usize * h as usize * 3 {
        let rgba = s
            .frame_rgb
            .chunks_exact(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect();
        set_image(&mut ui.frame_tex, contexts, images, (w, h), rgba, false);
    }
    let (lw, lh) = s.label_size;
    if lw > 0 && s.labels.len() == lw as usize * lh as usize {
        let rgba = s
            .labels
            .iter()
            .flat_map(|&id| {
                let [r, g, b] = class_colour(id);
                [r, g, b, if id == 0 { 0 } else { 150 }]
            })
            .collect();
        set_image(&mut ui.label_tex, contexts, images, (lw, lh), rgba, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_positions_map_to_the_frame_pixels_under_them() {
        // A 640 × 480 frame shown at half size, 10 points from the corner.
        let rect = egui::Rect::from_min_size(egui::pos2(10.0, 10.0), egui::vec2(320.0, 240.0));
        let size = (640, 480);
        assert_eq!(
            frame_pixel(egui::pos2(10.0, 10.0), rect, size),
            Some((0, 0))
        );
        assert_eq!(
            frame_pixel(egui::pos2(170.0, 130.0), rect, size),
            Some((320, 240))
        );
        assert_eq!(
            frame_pixel(egui::pos2(330.0, 250.0), rect, size),
            Some((639, 479))
        );
        assert_eq!(frame_pixel(egui::pos2(9.0, 100.0), rect, size), None);
        assert_eq!(frame_pixel(egui::pos2(100.0, 251.0), rect, size), None);
    }

    #[test]
    fn line_pixels_step_one_pixel_and_end_on_the_target() {
        let line: Vec<_> = line_pixels((10, 10), (14, 12)).collect();
        assert_eq!(line, [(11, 11), (12, 11), (13, 12), (14, 12)]);
        let back: Vec<_> = line_pixels((14, 12), (10, 10)).collect();
        assert_eq!(back.len(), 4);
        assert_eq!(back.last(), Some(&(10, 10)));
        assert_eq!(line_pixels((3, 3), (3, 3)).count(), 0);
        for w in line.windows(2) {
            assert!(w[0].0.abs_diff(w[1].0) <= 1 && w[0].1.abs_diff(w[1].1) <= 1);
        }
    }

    #[test]
    fn drags_join_their_pixels_and_leaving_the_frame_breaks_the_line() {
        let mut s = ColourSampling {
            class: ColourClass::Shirt,
            ..ColourSampling::default()
        };
        s.begin_drag(Some((0, 0)));
        s.drag_to(Some((3, 0)));
        s.drag_to(None);
        s.drag_to(Some((3, 9)));
        s.end_drag();
        assert_eq!(s.strokes.len(), 1);
        assert_eq!(s.strokes[0].class, ColourClass::Shirt);
        assert_eq!(
            s.strokes[0].points,
            [(0, 0), (1, 0), (2, 0), (3, 0), (3, 9)]
        );
        // A drag that never touched the frame leaves no stroke.
        s.begin_drag(None);
        s.drag_to(None);
        s.end_drag();
        assert_eq!(s.strokes.len(), 1);
        s.class = ColourClass::Hair;
        s.click((100, 100), (640, 480), (160, 120));
        assert_eq!(s.strokes[1].class, ColourClass::Hair);
        assert_eq!(s.strokes[1].points.len(), 25);
    }
}

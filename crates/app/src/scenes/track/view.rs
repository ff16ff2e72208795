//! The tracking scene's window (`posecloud --scene track`): RTPF's tracker
//! ([`crate::scenes::track::model::TrackingScene`]) runs on its own thread; every frame
//! draws its latest snapshot.
//!
//! - 3D view (middle): the estimate as thick orange bones with joint
//!   spheres, the ground truth as thin white bones (synthetic sources), the
//!   particle cloud as bones coloured by normalised weight (viridis, like
//!   the IK scenes), the tracking camera as a small frustum. Right- or
//!   left-drag orbits, the wheel zooms.
//! - Left panel: source picker (synthetic walk/hop, webcam, a folder or a
//!   video path), play/pause/step/reset, a frame slider for file sources,
//!   "capture background" and "learn colours", filter (PFS, HSPC, HPOR,
//!   HKFS, PFRTH), N, σ_F, diffusion σ per joint group, the likelihood
//!   back end (auto, cpu, gpu), status (back end, where the keypoint
//!   network runs, frame, F, ESS, ms).
//! - Right panel: the camera frame with the label image over it (toggle),
//!   and colour sampling: with "sample colours" on (it pauses), a click on
//!   the frame adds a small patch of the chosen class (skin, hair, shirt,
//!   trousers) and a drag a stroke; "learn from strokes" learns those
//!   classes' colour models from the frame's pixels under them.
//! - Bottom: plots of F and of the right-elbow angle (with the ground
//!   truth for synthetic sources).
//!
//! The GPU likelihood runs on the window's own wgpu device: [`run`]
//! finishes Bevy's plugins before the first frame, takes the main world's
//! [`RenderDevice`] and [`RenderQueue`] and hands them to the scene (and to
//! every scene the panel opens), so the tracker never requests a second
//! device; the keypoint network (`--keypoint-backend gpu`, or `auto` on a
//! hardware adapter) runs on the same device.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use bevy::app::PluginsState;
use bevy::prelude::*;
use bevy::render::renderer::{RenderDevice, RenderQueue};
use bevy_egui::{EguiContexts, egui};
use track::{CameraSpec, FilterSettings, Subject};
use track::{FilterKind, ObservationMode, SharedDevice, StartPose};
use vision::{ColourClass, SegClass, Sleeves, Stroke};

use crate::gui::bodies::Bodies;
use crate::gui::cloud_budget::CloudPainter;
use crate::gui::layout::{Chart, LEFT_WIDTH, PLOT_HEIGHT, PanelView, error_label, section};
use crate::gui::scene_common::{
    SceneRuntime, WindowOptions, WindowScene, add_scene_view, body_focus, play_buttons, run_scene,
    scene_app,
};
use crate::gui::{OrbitCamera, line_gizmos};
use crate::runtime::{Pacing, Published};
use crate::scenes::track::model::{
    BACKENDS, MAX_TRACK_PARTICLES, OVERLAY_PARTICLES, Opening, TrackEdit, TrackSettings,
    TrackSnapshot, TrackSpec, TrackingScene, backend_name, class_colour, click_patch, repo_path,
    stroke_summary,
};

/// Colours the screenshot test looks for (sRGB).
pub const ESTIMATE_COLOUR: [f32; 3] = [1.0, 0.45, 0.05];
pub const TRUTH_COLOUR: [f32; 3] = [0.95, 0.95, 0.95];
/// Limb radii of the estimate and of the ground-truth ghost around it (m).
const BODY_RADIUS: f32 = 0.04;
const GHOST_RADIUS: f32 = 0.055;
const RIGHT_WIDTH: f32 = 560.0;

/// How the tracking window starts.
#[derive(Clone, Debug)]
pub struct TrackGuiOptions {
    pub spec: TrackSpec,
    pub settings: TrackSettings,
    pub window: WindowOptions,
}

/// The scene as the frame sees it.
type TrackRes = SceneRuntime<TrackingScene>;

fn start_scene(
    spec: &TrackSpec,
    settings: &TrackSettings,
    pacing: Pacing,
    device: Option<SharedDevice>,
) -> Result<TrackRes> {
    let scene = TrackingScene::with_device(spec.clone(), settings.clone(), device)?;
    Ok(TrackRes::start(scene, pacing, "tracker"))
}

/// The window's own wgpu device and queue, to share with the tracker.
///
/// Bevy creates them while its render plugin is built; finishing the
/// plugins (what the runner would do before the first frame, which then
/// skips it) puts [`RenderDevice`] and [`RenderQueue`] in the main world.
/// `None` when the app renders nothing (no render plugin or no backend).
fn renderer_device(app: &mut App) -> Option<SharedDevice> {
    while app.plugins_state() == PluginsState::Adding {
        bevy::tasks::tick_global_task_pools_on_main_thread();
    }
    if app.plugins_state() == PluginsState::Ready {
        app.finish();
        app.cleanup();
    }
    let world = app.world();
    let device = world.get_resource::<RenderDevice>()?;
    let queue = world.get_resource::<RenderQueue>()?;
    Some(SharedDevice {
        device: device.wgpu_device().clone(),
        // `RenderQueue` is an `Arc` of a wrapper of the queue.
        queue: (**queue.0).clone(),
    })
}

/// UI state that is not a tracker setting.
#[derive(Resource)]
struct TrackUi {
    /// The scene's spec and the panel's copy of the settings (sent on
    /// change).
    spec: TrackSpec,
    settings: TrackSettings,
    error: Option<String>,
    /// The window's device, for every scene the panel opens.
    device: Option<SharedDevice>,
    /// Source field: `synthetic`, `synthetic:hop`, `webcam:0`, a folder, a
    /// glob or a video file.
    source_text: String,
    camera_text: String,
    /// The subject's height field (metres) and the tracked-joints field.
    height_text: String,
    joints_text: String,
    /// Webcams found by the picker (device, sizes), listed on demand.
    webcams: Option<Result<Vec<String>, String>>,
    /// Where Record writes.
    record_dir: PathBuf,
    overlay: bool,
    /// The estimate's skeleton and the most likely particles over the frame.
    skeleton_overlay: bool,
    /// The detected keypoints over the frame.
    keypoint_overlay: bool,
    show_truth: bool,
    scrub: usize,
    pacing: Pacing,
    frame_tex: Option<PanelImage>,
    label_tex: Option<PanelImage>,
    tex_version: u64,
    sampling: ColourSampling,
    /// A scene being opened on its own thread (Open), with its spec.
    opening: Option<(Opening<TrackingScene>, TrackSpec)>,
}

/// The frame panel's colour sampling: strokes (frame pixels) waiting for
/// "learn from strokes".
struct ColourSampling {
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

    fn clear(&mut self) {
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

impl TrackUi {
    fn fail(&mut self, context: &str, e: &anyhow::Error) {
        let msg = format!("{context}: {e:#}");
        eprintln!("posecloud: {msg}");
        self.error = Some(msg);
    }
}

/// The cloud's gizmo group (its own line width, drawn over the floor).
#[derive(Default, Reflect, GizmoConfigGroup)]
struct TrackCloudGizmos;

/// Opens the tracking window and runs until it is closed.
///
/// # Errors
/// The scene cannot be built (bad files, no camera), or no display/adapter.
pub fn run(options: TrackGuiOptions, launched: Instant) -> Result<()> {
    let pacing = options.window.pacing();
    if let Err(no_window) = crate::gui::check_display_and_adapter() {
        // A bad file or a missing camera says more than "no display": the
        // scene is built (on the CPU, without a window) to report it.
        let cpu = TrackSettings {
            tracker: FilterSettings {
                backend: track::BackendChoice::Cpu,
                keypoint_backend: keypoints::Backend::Cpu,
                ..options.settings.tracker.clone()
            },
            ..options.settings.clone()
        };
        TrackingScene::new(options.spec.clone(), cpu)?;
        return Err(no_window);
    }
    let window = WindowOptions {
        title: format!("posecloud — {}", options.spec.label()),
        ..options.window.clone()
    };
    let mut app = scene_app::<TrackRes>(&window);
    app.add_plugins(TrackingScenePlugin);
    let device = renderer_device(&mut app);
    let res = start_scene(&options.spec, &options.settings, pacing, device.clone())?;
    eprintln!(
        "posecloud: likelihood: {}; keypoints: {}; {}",
        res.latest.data.backend, res.latest.data.keypoint_backend, res.latest.data.camera_note
    );
    let ui = TrackUi {
        spec: options.spec.clone(),
        settings: options.settings.clone(),
        error: None,
        device,
        source_text: options
            .spec
            .frames
            .clone()
            .unwrap_or_else(|| "synthetic".into()),
        camera_text: options
            .spec
            .camera
            .file()
            .map_or(String::new(), |c| c.display().to_string()),
        height_text: format!(
            "{:.2}",
            options
                .spec
                .subject
                .height
                .unwrap_or(track::DEFAULT_SUBJECT_HEIGHT)
        ),
        joints_text: options.spec.track.clone(),
        webcams: None,
        record_dir: PathBuf::from("recordings"),
        overlay: false,
        skeleton_overlay: true,
        keypoint_overlay: true,
        show_truth: true,
        scrub: 0,
        pacing,
        frame_tex: None,
        label_tex: None,
        tex_version: 0,
        sampling: ColourSampling::default(),
        opening: None,
    };
    app.insert_resource(ui);
    run_scene(app, res, &window, launched)
}

/// The tracking scene's systems and panels.
pub struct TrackingScenePlugin;

impl Plugin for TrackingScenePlugin {
    fn build(&self, app: &mut App) {
        // Over the solid body: particles near the estimate lie inside its
        // capsules.
        add_scene_view(
            app,
            (TrackCloudGizmos, line_gizmos(1.5, -1.0)),
            (leave_a_lost_device, follow_scrub, draw).chain(),
            panels,
        );
    }
}

impl WindowScene for TrackingScene {
    fn initial_orbit(s: &TrackSnapshot) -> OrbitCamera {
        OrbitCamera::new(body_focus(s.track.estimate()), 4.5, 0.9, 0.25)
    }
}

/// When the window's device is lost (the renderer starts again on a new
/// one, [`super::render_errors`]), the tracker's GPU likelihood — on the
/// old device — gives way to the CPU likelihood, and scenes opened later
/// do not get the lost device.
fn leave_a_lost_device(
    faults: Res<crate::gui::render_errors::RenderFaults>,
    mut seen: Local<u32>,
    mut track: ResMut<TrackRes>,
    mut ui: ResMut<TrackUi>,
) {
    if faults.device_lost == *seen {
        return;
    }
    *seen = faults.device_lost;
    ui.device = None;
    ui.settings.tracker.backend = track::BackendChoice::Cpu;
    ui.settings.tracker.keypoint_backend = keypoints::Backend::Cpu;
    track.edit(TrackEdit::LeaveGpu(
        "the window's GPU device was lost".into(),
    ));
}

/// The frame slider follows the frames while playing.
fn follow_scrub(track: Res<TrackRes>, mut ui: ResMut<TrackUi>) {
    if let Some(k) = track.latest.data.frame_index
        && !track.paused
        && ui.scrub != k
    {
        ui.scrub = k;
    }
}

fn draw(
    track: Res<TrackRes>,
    ui: Res<TrackUi>,
    mut bodies: ResMut<Bodies>,
    mut painter: CloudPainter,
    mut cloud: Gizmos<TrackCloudGizmos>,
    mut plain: Gizmos,
) {
    let s = &track.latest.data;
    let v = |p: [f32; 3]| Vec3::from_array(p);
    let finite = |p: &[f32; 3]| p.iter().all(|x| x.is_finite());
    // The cloud, lightest first so heavy particles draw on top.
    let t = &s.track;
    if t.joints() > 0 && !t.is_empty() {
        painter.draw(t.weights(), |i, colour| {
            let pose = t.particle(i);
            for &(a, c) in &s.bones {
                if finite(&pose[a]) && finite(&pose[c]) {
                    cloud.line(v(pose[a]), v(pose[c]), colour);
                }
            }
        });
    } else {
        painter.report(t.len());
    }
    bodies.clear();
    if ui.show_truth && s.truth.len() == s.joints {
        bodies.add_skeleton(true, &s.truth, &s.bones, GHOST_RADIUS);
    }
    if t.estimate().len() == s.joints {
        bodies.add_skeleton(false, t.estimate(), &s.bones, BODY_RADIUS);
    }
    // The tracking camera: a small pyramid looking along its axis.
    let eye = v(s.camera_position);
    let fwd = v(s.camera_forward).normalize_or_zero();
    if fwd != Vec3::ZERO {
        let right = fwd.cross(Vec3::Y).normalize_or_zero() * 0.16;
        let up = right.cross(fwd).normalize_or_zero() * 0.12;
        let c = eye + fwd * 0.3;
        let corners = [
            c + right + up,
            c - right + up,
            c - right - up,
            c + right - up,
        ];
        let colour = Color::srgb(0.6, 0.8, 1.0);
        for k in 0..4 {
            plain.line(eye, corners[k], colour);
            plain.line(corners[k], corners[(k + 1) % 4], colour);
        }
    }
}

/// The spec a source field names (`synthetic`, `synthetic:hop`, or a
/// frame source), keeping the rest of `base`.
/// The Source panel's words for a sleeve length.
fn sleeves_label(s: Sleeves) -> &'static str {
    match s {
        Sleeves::Short => "short (arms are skin)",
        Sleeves::Long => "long",
    }
}

/// The picker's entries: `webcam:N@WxH  card` for each device's largest
/// size (the source field takes the first word).
fn webcam_entries() -> Result<Vec<String>, String> {
    let list = vision::list_webcams().map_err(|e| e.to_string())?;
    Ok(list
        .iter()
        .flat_map(|cam| {
            let n = cam
                .path
                .to_string_lossy()
                .trim_start_matches("/dev/video")
                .to_string();
            let mut sizes: Vec<(u32, u32)> = cam
                .sizes
                .iter()
                .flat_map(|(_, s)| s.iter().copied())
                .filter(|&(w, h)| w <= 1280 && h <= 720)
                .collect();
            sizes.sort_unstable_by_key(|&(w, h)| std::cmp::Reverse(w * h));
            sizes.dedup();
            sizes
                .into_iter()
                .take(3)
                .map(|(w, h)| format!("webcam:{n}@{w}x{h}  {}", cam.card))
                .collect::<Vec<_>>()
        })
        .collect())
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
        if score < track::session::KEYPOINT_MIN_SCORE || !u.is_finite() || !v.is_finite() {
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

/// The Source panel's name of a start pose.
fn start_pose_label(p: Option<StartPose>) -> &'static str {
    match p {
        None => "body file's frame",
        Some(StartPose::ArmsDown) => "arms down",
        Some(StartPose::TPose) => "T-pose",
    }
}

/// The spec the Source panel's fields name: `synthetic`, `synthetic:hop`
/// (a render of the clip through its camera file), or a frame source (the
/// guided start; the camera file optional, the default body at `height`
/// unless `base` names a body file).
fn spec_for(text: &str, camera: &str, height: Option<f64>, base: &TrackSpec) -> TrackSpec {
    let text = text.trim();
    let camera = camera.trim();
    let camera = (!camera.is_empty()).then(|| PathBuf::from(camera));
    // The walk's demo camera frames the person closely; the hop moves
    // about more and keeps the wider view.
    let synthetic = |clip: &str, init: usize, default_camera: &str| TrackSpec {
        start_pose: base.start_pose,
        sleeves: base.sleeves,
        track: base.track.clone(),
        camera: CameraSpec::File(camera.clone().unwrap_or_else(|| repo_path(default_camera))),
        subject: Subject {
            body: Some(repo_path(clip)),
            height: None,
        },
        init_frame: init,
        ..TrackSpec::default()
    };
    match text {
        "synthetic" | "synthetic:walk" => synthetic(
            "assets/motions/cmu_131_01_walk.bvh",
            500,
            "crates/vision/assets/camera_near.toml",
        ),
        "synthetic:hop" => synthetic(
            "assets/motions/cmu_131_03_hop.bvh",
            40,
            "crates/vision/assets/camera_front.toml",
        ),
        other => TrackSpec {
            camera: camera.map_or_else(CameraSpec::default, CameraSpec::File),
            subject: Subject {
                body: if base.frames.is_some() {
                    base.subject.body.clone()
                } else {
                    None
                },
                height: height.or(base.subject.height),
            },
            start_pose: Some(base.start_pose.unwrap_or(StartPose::ArmsDown)),
            sleeves: base.sleeves,
            track: base.track.clone(),
            ..TrackSpec::live(other)
        },
    }
}

/// One picture shown in the panel: a Bevy image registered with egui.
struct PanelImage {
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
fn update_textures(
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

fn panels(
    mut view: PanelView,
    mut track: ResMut<TrackRes>,
    mut ui_state: ResMut<TrackUi>,
    mut images: ResMut<Assets<Image>>,
) -> bevy::prelude::Result {
    let snap = track.latest.clone();
    update_textures(&mut view.contexts, &mut images, &mut ui_state, &snap);
    let mut layout = view.layout("posecloud-track-root")?;
    let clock = &mut *view.clock;
    // Every edit applied and the scene's settings still differ: the last
    // one failed (e.g. `gpu` on a device that cannot run it; the error is
    // in the status). The panel shows what runs.
    if snap.applied == track.rt().sent() && snap.data.settings != ui_state.settings {
        ui_state.settings = snap.data.settings.clone();
    }
    let mut settings = ui_state.settings.clone();
    let mut open: Option<TrackSpec> = None;
    let mut edits: Vec<TrackEdit> = Vec::new();
    let mut play = Default::default();
    let s = &snap.data;
    let ui_s = &mut *ui_state;
    layout.left("track-controls", LEFT_WIDTH, |ui| {
                ui.heading("Tracking (RTPF)");
                section(ui, "Source", |ui| {
                    ui.horizontal(|ui| {
                        for (label, text) in [
                            ("walk", "synthetic"),
                            ("hop", "synthetic:hop"),
                            ("webcam", "webcam:0"),
                        ] {
                            if ui.button(label).clicked() {
                                ui_s.source_text = text.into();
                            }
                        }
                        if ui
                            .button("find webcams")
                            .on_hover_text("list the V4L2 cameras and their frame sizes")
                            .clicked()
                        {
                            ui_s.webcams = Some(webcam_entries());
                        }
                    });
                    match &ui_s.webcams {
                        Some(Ok(list)) if list.is_empty() => {
                            ui.small("no webcam found (/dev/video*)");
                        }
                        Some(Ok(list)) => {
                            let mut chosen = None;
                            for entry in list {
                                if ui.small_button(entry.as_str()).clicked() {
                                    chosen = entry.split_whitespace().next().map(String::from);
                                }
                            }
                            if let Some(c) = chosen {
                                ui_s.source_text = c;
                            }
                        }
                        Some(Err(e)) => {
                            error_label(ui, e.as_str());
                        }
                        None => {}
                    }
                    ui.label("frames (synthetic[:hop], webcam:N[@WxH], folder, video):");
                    ui.text_edit_singleline(&mut ui_s.source_text);
                    ui.label("camera file (optional: empty is a level camera, 60° wide):");
                    ui.text_edit_singleline(&mut ui_s.camera_text);
                    ui.horizontal(|ui| {
                        ui.add(
                            egui::TextEdit::singleline(&mut ui_s.height_text)
                                .desired_width(48.0),
                        );
                        ui.label("subject height (m)");
                    });
                    ui.horizontal(|ui| {
                        egui::ComboBox::from_id_salt("start-pose")
                            .selected_text(start_pose_label(ui_s.spec.start_pose))
                            .show_ui(ui, |ui| {
                                for p in [None, Some(StartPose::ArmsDown), Some(StartPose::TPose)]
                                {
                                    ui.selectable_value(
                                        &mut ui_s.spec.start_pose,
                                        p,
                                        start_pose_label(p),
                                    );
                                }
                            });
                        ui.label("start pose");
                    })
                    .response
                    .on_hover_text(
                        "the guided start: stand arms down / in a T-pose facing the camera, found by its silhouette; \"body file's frame\" starts a synthetic render from its clip (applies on Open)",
                    );
                    ui.horizontal(|ui| {
                        let mut sleeves = s.sleeves;
                        egui::ComboBox::from_id_salt("sleeves")
                            .selected_text(sleeves_label(sleeves))
                            .show_ui(ui, |ui| {
                                for v in [Sleeves::Short, Sleeves::Long] {
                                    ui.selectable_value(&mut sleeves, v, sleeves_label(v));
                                }
                            });
                        ui.label("sleeves");
                        if sleeves != s.sleeves {
                            ui_s.spec.sleeves = sleeves;
                            edits.push(TrackEdit::Sleeves(sleeves));
                        }
                    });
                    ui.horizontal(|ui| {
                        ui.add(
                            egui::TextEdit::singleline(&mut ui_s.joints_text)
                                .desired_width(120.0),
                        )
                        .on_hover_text("auto, upper, all, or joint names separated by commas");
                        if ui.button("track these joints").clicked() {
                            ui_s.spec.track = ui_s.joints_text.trim().to_string();
                            edits.push(TrackEdit::TrackedJoints(ui_s.spec.track.clone()));
                        }
                    });
                    ui.horizontal(|ui| {
                        if ui
                            .add_enabled(ui_s.opening.is_none(), egui::Button::new("Open"))
                            .clicked()
                        {
                            match ui_s.height_text.trim().parse::<f64>() {
                                Ok(h) if (0.5..=2.5).contains(&h) => {
                                    open = Some(spec_for(
                                        &ui_s.source_text,
                                        &ui_s.camera_text,
                                        Some(h),
                                        &ui_s.spec,
                                    ));
                                }
                                _ => {
                                    ui_s.error = Some(format!(
                                        "subject height: `{}` is not a height in metres (0.5 – 2.5)",
                                        ui_s.height_text
                                    ));
                                }
                            }
                        }
                        if ui
                            .button("start again")
                            .on_hover_text("the guided start from the beginning: background, person, placing")
                            .clicked()
                        {
                            edits.push(TrackEdit::Restart);
                        }
                    });
                    ui.small(s.source_name.as_str());
                    ui.small(s.camera_note.as_str());
                });
                section(ui, "Record", |ui| {
                    ui.horizontal(|ui| match &s.recording {
                        None => {
                            if ui
                                .button("⏺ Record")
                                .on_hover_text(
                                    "write the tracked motion to recordings/posecloud-<time>.csv and .bvh",
                                )
                                .clicked()
                            {
                                edits.push(TrackEdit::Record(Some(ui_s.record_dir.clone())));
                            }
                        }
                        Some((csv, rows)) => {
                            if ui.button("⏹ Stop").clicked() {
                                edits.push(TrackEdit::Record(None));
                            }
                            ui.label(format!(
                                "{rows} frames → {}",
                                csv.file_name().unwrap_or_default().to_string_lossy()
                            ));
                        }
                    });
                });
                // Record above writes the tracked motion (CSV, BVH); the
                // current pose is saved by the scene (its body file's
                // skeleton).
                view.exports.section_with(ui, clock, "track", None, |ui| {
                    if ui.button("save pose (BVH, CSV)").clicked() {
                        edits.push(TrackEdit::SavePose(crate::gui::export::export_stem("track")));
                    }
                });
                section(ui, "Play", |ui| {
                    play = play_buttons(ui, track.paused);
                    if let Some(n) = s.frame_count.filter(|n| *n > 1) {
                        let r =
                            ui.add(egui::Slider::new(&mut ui_s.scrub, 0..=n - 1).text("frame"));
                        if r.drag_stopped() || (r.changed() && !r.dragged()) {
                            edits.push(TrackEdit::Seek(ui_s.scrub));
                        }
                    }
                    ui.checkbox(&mut settings.realtime, "play at the source's frame rate");
                    ui.horizontal(|ui| {
                        if ui.button("capture background").clicked() {
                            edits.push(TrackEdit::CaptureBackground);
                        }
                        if ui.button("learn colours").clicked() {
                            edits.push(TrackEdit::LearnColours);
                        }
                    });
                    if let Some(m) = &s.message {
                        ui.small(m.as_str());
                    }
                });
                section(ui, "Status", |ui| {
                    ui.label(format!("likelihood: {}", s.backend));
                    ui.add(egui::Label::new(format!("keypoints: {}", s.keypoint_backend)).wrap());
                    ui.label(format!(
                        "frame {} of {} · {:.0} fps · tracker {:.1} ms, segmentation {:.1} ms",
                        s.frame_index.map_or("—".into(), |k| k.to_string()),
                        s.frame_count.map_or("?".into(), |n| n.to_string()),
                        clock.fps,
                        s.step_ms,
                        s.segment_ms
                    ));
                    if let Some(last) = s.history.back() {
                        ui.label(format!(
                            "F {:.3} · ESS {:.1} / {} · elbow {:.0}°{}",
                            last.residual,
                            last.ess,
                            s.track.len(),
                            last.elbow_deg,
                            last.truth_elbow_deg
                                .map_or(String::new(), |t| format!(" (truth {t:.0}°)"))
                        ));
                    }
                    for a in &s.arm_branches {
                        let c = a.confidence();
                        ui.add(
                            egui::Label::new(format!(
                                "{} arm: {} ({:.0} %{})",
                                a.side,
                                track::smooth::ArmBranches::name(a.map_branch),
                                100.0 * c,
                                if c < 0.6 { ", unsure" } else { "" }
                            ))
                            .wrap(),
                        )
                        .on_hover_text(
                            "the cloud's weight share of the depth branch the estimate's arm is in \
                             (elbow nearer or farther than the shoulder, wrist nearer or farther \
                             than the elbow): near 100 % the particles agree, near 25–50 % the \
                             tracker is unsure of the flip",
                        );
                    }
                    if s.ended {
                        ui.colored_label(egui::Color32::YELLOW, "end of the source");
                    }
                    if let Some((o, _)) = &ui_s.opening {
                        ui.horizontal(|ui| {
                            ui.spinner();
                            ui.label(format!(
                                "opening {} … {:.0} s",
                                o.what,
                                o.started.elapsed().as_secs_f64()
                            ));
                        });
                    }
                    if let Some(e) = &track.error {
                        error_label(ui, e.as_str());
                    }
                    if let Some(e) = &ui_s.error {
                        error_label(ui, e.as_str());
                    }
                });
                section(ui, "Filter", |ui| {
                    egui::ComboBox::from_label("filter")
                        .selected_text(settings.tracker.filter.name())
                        .show_ui(ui, |ui| {
                            for k in FilterKind::ALL {
                                ui.selectable_value(&mut settings.tracker.filter, k, k.name());
                            }
                        });
                    egui::ComboBox::from_label("likelihood")
                        .selected_text(backend_name(settings.tracker.backend))
                        .show_ui(ui, |ui| {
                            for b in BACKENDS {
                                ui.selectable_value(&mut settings.tracker.backend, b, backend_name(b));
                            }
                        })
                        .response
                        .on_hover_text(
                            "auto: the GPU on a hardware adapter, else the CPU; gpu runs on the window's own device",
                        );
                    ui.add(
                        egui::Slider::new(&mut settings.tracker.particles, 10..=MAX_TRACK_PARTICLES)
                            .logarithmic(true)
                            .text("particles"),
                    );
                    ui.add(
                        egui::Slider::new(&mut settings.tracker.sigma_f, 0.01..=1.0)
                            .logarithmic(true)
                            .text("σ_F"),
                    );
                    ui.label("diffusion σ per frame:");
                    ui.add(
                        egui::Slider::new(&mut settings.tracker.sigma_translation, 0.0..=0.2)
                            .text("root position (m)"),
                    );
                    ui.add(
                        egui::Slider::new(&mut settings.tracker.sigma_trunk, 0.0..=0.3)
                            .text("trunk (rad)"),
                    );
                    ui.add(
                        egui::Slider::new(&mut settings.tracker.sigma_limb, 0.0..=0.5)
                            .text("limbs (rad)"),
                    );
                    ui.checkbox(&mut settings.tracker.partitioned, "partitioned: trunk, then each limb")
                        .on_hover_text(
                            "diffuse and weigh one body partition at a time (one likelihood batch each)",
                        );
                    ui.checkbox(&mut settings.tracker.mean_estimate, "weighted mean (else MAP)");
                    ui.horizontal(|ui| {
                        ui.label("likelihood terms:");
                        let mut regions = settings.tracker.observation != ObservationMode::Keypoints;
                        let mut keypoints = settings.tracker.observation != ObservationMode::Regions;
                        ui.checkbox(&mut regions, "regions")
                            .on_hover_text("RTPF's body-part regions (segmentation)");
                        ui.checkbox(&mut keypoints, "keypoints")
                            .on_hover_text("BlazePose 2D keypoints, detected on their own thread");
                        settings.tracker.observation = match (regions, keypoints) {
                            (true, true) => ObservationMode::Both,
                            (false, true) => ObservationMode::Keypoints,
                            // At least one term: unticking both keeps the regions.
                            _ => ObservationMode::Regions,
                        };
                    });
                    let keypoints = settings.tracker.observation != ObservationMode::Regions;
                    ui.add_enabled(
                        keypoints,
                        egui::Slider::new(&mut settings.tracker.keypoint_sigma, 0.01..=0.5)
                            .logarithmic(true)
                            .text("keypoint σ (× body size)"),
                    );
                    ui.add_enabled(
                        keypoints,
                        egui::Slider::new(&mut settings.tracker.keypoint_depth_sigma, 0.0..=2.0)
                            .text("depth-order σ (× body size, 0 = off)"),
                    )
                    .on_hover_text(
                        "how strongly the detector's relative depth of each limb segment's ends \
                         picks between a segment and its flip towards or away from the camera",
                    );
                    ui.add(
                        egui::Slider::new(&mut settings.tracker.anatomy_weight, 0.0..=4.0)
                            .text("arm anatomy prior (0 = off)"),
                    )
                    .on_hover_text(
                        "penalises forearms bent backwards through the elbow, which 2D keypoints \
                         cannot tell from the real arm's bend",
                    );
                    ui.add_enabled(
                        keypoints,
                        egui::Slider::new(&mut settings.tracker.keypoint_lifts, 0..=24)
                            .text("lifted arms a frame"),
                    )
                    .on_hover_text(
                        "particles moved each frame onto arms solved for the detected elbows and wrists",
                    );
                    let mut lagged = settings.tracker.smoothing != track::smooth::Smoothing::None;
                    if ui
                        .checkbox(&mut lagged, "record smoothed (0.2 s lag)")
                        .on_hover_text(
                            "Record writes the most probable path through the cloud's arm \
                             configurations, each frame 6 frames late, instead of each frame's MAP \
                             (takes effect at the next Record)",
                        )
                        .changed()
                    {
                        settings.tracker.smoothing = if lagged {
                            "lag".parse().unwrap_or(track::smooth::Smoothing::None)
                        } else {
                            track::smooth::Smoothing::None
                        };
                    }
                    ui.small(s.observation.as_str());
                });
                section(ui, "View", |ui| {
                    view.budget.controls(ui, s.track.len());
                    ui.checkbox(&mut ui_s.show_truth, "ground truth (white)");
                    ui.checkbox(&mut ui_s.overlay, "labels over the frame");
                    ui.checkbox(
                        &mut ui_s.skeleton_overlay,
                        "skeleton and likely particles over the frame",
                    );
                    ui.checkbox(&mut ui_s.keypoint_overlay, "detected keypoints over the frame");
                });
    });
    layout.right("track-frame", RIGHT_WIDTH, true, |ui| {
        ui.label("camera frame");
        let width = ui.available_width().max(64.0);
        if let Some((id, (w, h))) = ui_s.frame_tex.as_ref().map(|t| (t.id, t.size)) {
            let size = egui::vec2(width, width * h as f32 / w.max(1) as f32);
            let sense = if ui_s.sampling.on {
                egui::Sense::click_and_drag()
            } else {
                egui::Sense::hover()
            };
            let (rect, response) = ui.allocate_exact_size(size, sense);
            let uv = egui::Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0));
            ui.painter().image(id, rect, uv, egui::Color32::WHITE);
            if ui_s.overlay
                && let Some(labels) = &ui_s.label_tex
            {
                ui.painter()
                    .image(labels.id, rect, uv, egui::Color32::WHITE);
            }
            let painter = ui.painter_at(rect);
            if ui_s.skeleton_overlay {
                paint_skeletons(&painter, rect, s);
            }
            if ui_s.keypoint_overlay {
                paint_keypoints(&painter, rect, (w, h), s);
            }
            paint_status(&painter, rect, s);
            if ui_s.sampling.on {
                sample_on_frame(&mut ui_s.sampling, &response, rect, (w, h), s);
            }
            paint_strokes(&painter, rect, (w, h), &ui_s.sampling.strokes);
        }
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
        let was_on = ui_s.sampling.on;
        if let Some(edit) = sampling_controls(ui, &mut ui_s.sampling, s) {
            edits.push(edit);
        }
        // Strokes are learned on the frame they were drawn on: sampling
        // pauses the source.
        if ui_s.sampling.on && !was_on && !track.paused && !play.toggle_pause {
            play.toggle_pause = true;
        }
    });
    layout.charts("track-plots", PLOT_HEIGHT, charts(s));

    track.play(play);
    if play.reset {
        ui_state.error = None;
    }
    for e in edits {
        track.edit(e);
    }
    if settings != ui_state.settings {
        match settings.validate() {
            Ok(()) => {
                ui_state.settings = settings.clone();
                track.edit(TrackEdit::Settings(settings));
            }
            Err(e) => ui_state.fail("settings", &e),
        }
    }
    if let Some(spec) = open {
        // Opening runs ffprobe, starts a webcam or reads background frames:
        // on a thread of its own, while the old scene keeps playing.
        let (settings, device) = (ui_state.settings.clone(), ui_state.device.clone());
        let what = spec.frames.clone().unwrap_or_else(|| "synthetic".into());
        let build = {
            let spec = spec.clone();
            move || TrackingScene::with_device(spec, settings, device)
        };
        match Opening::start(what, build) {
            Ok(o) => {
                ui_state.error = None;
                ui_state.opening = Some((o, spec));
            }
            Err(e) => ui_state.fail("open", &e),
        }
    }
    if let Some(done) = ui_state.opening.as_mut().and_then(|(o, _)| o.poll()) {
        let (_, spec) = ui_state.opening.take().expect("polled above");
        match done {
            Ok(scene) => {
                *track = TrackRes::start(scene, ui_state.pacing, "tracker");
                ui_state.spec = spec;
                ui_state.error = None;
                ui_state.sampling.clear();
                // The new scene's first frame replaces the pictures.
                ui_state.tex_version = u64::MAX;
            }
            Err(e) => ui_state.fail("open", &e),
        }
    }
    // Centre the body in what the panels leave, following the estimate.
    let focus = s
        .track
        .estimate()
        .first()
        .map(|p| Vec3::new(p[0], p[1].max(0.5), p[2]));
    view.frame(&layout, focus);
    Ok(())
}

/// The MAP particle's residual and the right-elbow angle per frame.
fn charts(s: &TrackSnapshot) -> Vec<Chart> {
    let residual: Vec<[f64; 2]> = s
        .history
        .iter()
        .map(|h| [h.frame as f64, h.residual])
        .collect();
    let elbow: Vec<[f64; 2]> = s
        .history
        .iter()
        .filter(|h| h.elbow_deg.is_finite())
        .map(|h| [h.frame as f64, h.elbow_deg])
        .collect();
    let truth: Vec<[f64; 2]> = s
        .history
        .iter()
        .filter_map(|h| h.truth_elbow_deg.map(|t| [h.frame as f64, t]))
        .collect();
    let mut elbow_chart = Chart::new("track-elbow", "right-elbow angle (degrees)")
        .include_y(150.0)
        .line("estimate", elbow);
    if !truth.is_empty() {
        elbow_chart = elbow_chart.line("ground truth", truth);
    }
    vec![
        Chart::new(
            "track-f",
            "residual F of the MAP particle (RTPF Eq. 1) per frame",
        )
        .line("F", residual),
        elbow_chart,
    ]
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

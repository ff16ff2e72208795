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
use bevy_egui::egui;
use track::{CameraSpec, FilterSettings, Subject};
use track::{FilterKind, ObservationMode, SharedDevice, StartPose};
use vision::Sleeves;

use crate::gui::bodies::Bodies;
use crate::gui::cloud_budget::CloudPainter;
use crate::gui::layout::{Chart, LEFT_WIDTH, PLOT_HEIGHT, PanelView, error_label, section};
use crate::gui::scene_common::{
    SceneRuntime, WindowOptions, WindowScene, add_scene_view, body_focus, play_buttons, run_scene,
    scene_app,
};
use crate::gui::{OrbitCamera, line_gizmos};
use crate::runtime::Pacing;
use crate::scenes::track::model::{
    BACKENDS, MAX_TRACK_PARTICLES, Opening, TrackEdit, TrackSettings, TrackSnapshot, TrackSpec,
    TrackingScene, backend_name, repo_path,
};

mod frame;

use frame::{ColourSampling, PanelImage, frame_panel, update_textures};

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
        frame_panel(ui, ui_s, s, track.paused, &mut play, &mut edits);
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

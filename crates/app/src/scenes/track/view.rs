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
//! The submodule `panels` draws the panels, one function per section;
//! `frame` is the right panel: the frame, its overlays and colour sampling.
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
use track::{FilterSettings, SharedDevice};

use crate::gui::bodies::Bodies;
use crate::gui::cloud_budget::CloudPainter;
use crate::gui::scene_common::{
    SceneRuntime, WindowOptions, WindowScene, add_scene_view, body_focus, run_scene, scene_app,
};
use crate::gui::{OrbitCamera, line_gizmos};
use crate::runtime::Pacing;
use crate::scenes::track::model::{
    Opening, TrackEdit, TrackSettings, TrackSnapshot, TrackSpec, TrackingScene,
};

mod frame;
mod panels;

use frame::{ColourSampling, PanelImage};
use panels::panels;

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
                keypoint_backend: keypoints::DetectorBackend::Cpu,
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
        let gizmos = (TrackCloudGizmos, line_gizmos(1.5, -1.0));
        let draw = (leave_a_lost_device, follow_scrub, draw).chain();
        add_scene_view(app, gizmos, draw, panels);
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
    ui.settings.tracker.keypoint_backend = keypoints::DetectorBackend::Cpu;
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

//! The IK playground (`--scene human|arm|chain|hand`, `--urdf`, `--bvh`):
//! Bevy 0.19 + bevy_egui, as a list of
//! plugins (see the workspace's STYLE guide). The scene lives in one
//! [`PlaygroundRes`] resource: an [`IkSession`] whose solver runs on its
//! own thread ([`crate::runtime`]); the plugins read its latest snapshot
//! and send it edits:
//!
//! - [`view::IkScenePlugin`]: camera, lights, floor, the estimate drawn as
//!   solid capsules, target markers; ticks the solver every frame.
//! - [`cloud::ParticleCloudPlugin`]: every particle pose as line segments
//!   coloured by weight, in one batched instanced draw.
//! - [`input::InteractionPlugin`]: drag targets, click joints to add
//!   targets, orbit/pan/zoom, keys.
//! - [`panels::TuningPanelPlugin`]: egui panels and plots.
//! - [`automation::AutomationPlugin`]: `--screenshot`, `--script`, `--report`.
//!
//! The model: [`scene`] (which body, targets and constraints),
//! [`playground`] (the solver), [`session`] (the solver on its own thread
//! with the UI's targets), [`settings`] (the tunable settings and their
//! file), [`script`] (timed input replays).

pub mod automation;
pub mod cloud;
pub mod input;
pub mod panels;
pub mod playground;
pub mod scene;
pub mod script;
pub mod session;
pub mod settings;
pub mod view;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use bevy::prelude::*;
use bevy::window::WindowResolution;
use bevy_egui::EguiPlugin;

use crate::runtime::Pacing;
use scene::{Scene, SceneSource};
use session::IkSession;
use settings::Settings;

/// How the window starts.
#[derive(Clone, Debug)]
pub struct GuiOptions {
    pub scene: SceneSource,
    /// Settings for the first scene (`--settings FILE`, else defaults with
    /// the scene's particle count).
    pub settings: Option<Settings>,
    /// Particle count override (`--particles N`).
    pub particles: Option<usize>,
    pub screenshot: Option<PathBuf>,
    pub after_secs: f64,
    pub script: Option<PathBuf>,
    pub report: Option<PathBuf>,
    pub quit_after: Option<f64>,
    pub width: u32,
    pub height: u32,
    /// Advance the playground's clock by this many seconds per frame
    /// instead of wall time (`--fixed-dt`): scripts, plots, screenshots and
    /// quitting then happen after the same frames on any machine.
    pub fixed_dt: Option<f64>,
    /// Present frames without waiting for vertical sync (frame-time
    /// measurements).
    pub no_vsync: bool,
    /// Draw at most this many particles (`--cloud-limit`; 0 hides the
    /// cloud; default all).
    pub cloud_limit: Option<usize>,
}

/// The IK scene as the frame sees it (the solver runs on its own thread),
/// shared by every plugin.
#[derive(Resource)]
pub struct PlaygroundRes(pub IkSession);

/// What the panels, keys and scripts ask of the scene, handled once per
/// frame before the solver's tick.
#[derive(Message, Clone, Debug)]
pub enum SceneCommand {
    /// Switch to another scene (the old one stays if this fails).
    Load(SceneSource),
    Reset,
    SingleStep,
    TogglePause,
}

/// UI-side state that is not a solver setting.
#[derive(Resource)]
pub struct UiState {
    /// The last error (bad file, bad setting), shown in the panel.
    pub error: Option<String>,
    /// The target last dragged or clicked (Delete removes it).
    pub selected_target: Option<usize>,
    /// Text fields of the scene panel.
    pub urdf_path: String,
    pub bvh_path: String,
    pub bvh_frame: usize,
    pub settings_path: String,
    /// A Save whose file exists, waiting for "overwrite" or "cancel".
    pub confirm_overwrite: Option<std::path::PathBuf>,
    /// Draw at most this many particles (heaviest first).
    pub cloud_limit: usize,
    pub show_cloud: bool,
    /// Frames per second (Bevy's frame-time diagnostics).
    pub fps: f64,
    /// Worst violation counts seen since the scene started.
    pub max_estimate_violations: usize,
    pub max_particle_violations: usize,
    /// When `main` started, and when the first frame ran / the first frame
    /// faster than 100 ms ran (pipelines compiled: interactive).
    pub launched: Instant,
    pub first_frame: Option<f64>,
    pub first_interactive: Option<f64>,
    /// The playground's clock (s): wall time since start-up, or frames ×
    /// `fixed_dt`; scripts, plots and the automation read it.
    pub clock: f64,
    pub fixed_dt: Option<f64>,
    /// How solvers are paced: threaded with a time budget, or inline
    /// (`--fixed-dt` replays).
    pub pacing: Pacing,
    /// Frames run so far.
    pub frames: u64,
}

impl UiState {
    fn new(launched: Instant) -> Self {
        Self {
            error: None,
            selected_target: None,
            urdf_path: "assets/robots/arm6.urdf".into(),
            bvh_path: "assets/motions/cmu_131_01_walk.bvh".into(),
            bvh_frame: 0,
            settings_path: "posecloud-settings.toml".into(),
            confirm_overwrite: None,
            cloud_limit: 10_000,
            show_cloud: true,
            fps: 0.0,
            max_estimate_violations: 0,
            max_particle_violations: 0,
            launched,
            first_frame: None,
            first_interactive: None,
            clock: 0.0,
            fixed_dt: None,
            pacing: Pacing::Budget,
            frames: 0,
        }
    }

    /// Records an error for the panel and stderr.
    pub fn fail(&mut self, context: &str, e: &anyhow::Error) {
        let msg = format!("{context}: {e:#}");
        eprintln!("posecloud: {msg}");
        self.error = Some(msg);
    }
}

/// The settings a scene starts with.
pub fn initial_settings(
    scene: &Scene,
    base: Option<&Settings>,
    particles: Option<usize>,
) -> Settings {
    let mut s = match base {
        Some(s) => s.clone(),
        None => {
            let mut s = Settings::default();
            s.filter.particles = scene.particles;
            s.noise.root_translation = scene.root_sigma;
            s.filter.solver = scene.solver;
            s
        }
    };
    if let Some(n) = particles {
        s.filter.particles = n;
    }
    s
}

/// Opens the window and runs until it is closed (or a screenshot/script
/// says to quit).
pub fn run(options: GuiOptions, launched: Instant) -> Result<()> {
    let scene = Scene::build(&options.scene)?;
    crate::gui::check_display_and_adapter()?;
    let settings = initial_settings(&scene, options.settings.as_ref(), options.particles);
    let title = format!("posecloud — {}", scene.source.label());
    // Replays step the solver on the frame's thread so that a script gives
    // the same result on any machine; otherwise it runs on its own thread.
    let pacing = if options.fixed_dt.is_some() {
        Pacing::Inline
    } else {
        Pacing::Budget
    };
    let session = IkSession::new(scene, settings, pacing)?;
    let automation = automation::Automation::new(&options)?;
    let mut app = App::new();
    app.insert_resource(ClearColor(Color::srgb(0.16, 0.17, 0.19)))
        .add_plugins(DefaultPlugins.set(WindowPlugin {
            primary_window: Some(Window {
                title,
                resolution: WindowResolution::new(options.width, options.height),
                present_mode: if options.no_vsync {
                    bevy::window::PresentMode::AutoNoVsync
                } else {
                    bevy::window::PresentMode::AutoVsync
                },
                ..default()
            }),
            ..default()
        }))
        .add_plugins(MeshPickingPlugin)
        .add_plugins(EguiPlugin::default())
        .add_plugins(crate::gui::render_errors::RenderErrorsPlugin)
        .add_plugins(bevy::diagnostic::FrameTimeDiagnosticsPlugin::default())
        .add_message::<SceneCommand>()
        .insert_resource(PlaygroundRes(session))
        .insert_resource({
            let mut ui = UiState {
                fixed_dt: options.fixed_dt,
                pacing,
                ..UiState::new(launched)
            };
            if let Some(limit) = options.cloud_limit {
                ui.show_cloud = limit > 0;
                ui.cloud_limit = limit.max(1);
            }
            ui
        })
        .insert_resource(automation)
        .add_plugins((
            view::IkScenePlugin,
            cloud::ParticleCloudPlugin,
            input::InteractionPlugin,
            panels::TuningPanelPlugin,
            automation::AutomationPlugin,
        ));
    crate::gui::scene_common::finish(app.run())
}

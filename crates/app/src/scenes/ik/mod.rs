//! The IK playground (`--scene human|arm|chain|hand`, `--urdf`, `--bvh`)
//! on the scene host ([`crate::gui::scene_common`]): the host gives it the
//! window, clock, orbit camera and floor, and the `--screenshot` /
//! `--quit-after` automation; the scene lives in one [`PlaygroundRes`]
//! resource, a [`SolverMirror`] whose solver runs on its own thread
//! ([`crate::runtime`]). Its plugins read the latest snapshot and send it
//! edits:
//!
//! - [`view::IkScenePlugin`]: lights, the estimate drawn as solid capsules
//!   (a URDF robot's links as their visual meshes and shapes), target
//!   markers, scene switches.
//! - [`cloud::ParticleCloudPlugin`]: every particle pose as line segments
//!   coloured by weight, in one batched instanced draw.
//! - [`input::InteractionPlugin`]: drag targets, click joints to add
//!   targets, keys.
//! - [`panels::TuningPanelPlugin`]: egui panels and plots.
//! - [`automation::ScriptPlugin`]: `--script` replays and the `--report`
//!   CSV.
//!
//! The model: [`setup`] (which body, targets and constraints),
//! [`solver`] (the solver, [`solver::Playground`]), [`mirror`] (the solver on its own thread
//! with the UI's targets), [`settings`] (the tunable settings and their
//! file), [`script`] (timed input replays).

pub mod automation;
pub mod cloud;
pub mod input;
pub mod mirror;
pub mod panels;
pub mod script;
pub mod settings;
pub mod setup;
pub mod solver;
pub mod view;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use bevy::prelude::*;

use crate::gui::OrbitCamera;
use crate::gui::scene_common::{HostedScene, WindowOptions, run_scene_window};
use mirror::SolverMirror;
use settings::Settings;
use setup::{Scene, SceneSource};
use solver::LimitViolations;

/// How the window starts.
#[derive(Clone, Debug)]
pub struct GuiOptions {
    pub scene: SceneSource,
    /// Settings for the first scene (`--settings FILE`, else defaults with
    /// the scene's particle count).
    pub settings: Option<Settings>,
    /// Particle count override (`--particles N`).
    pub particles: Option<usize>,
    /// The script to replay and the report to write.
    pub automation: automation::AutomationFiles,
    /// Folders searched first for a URDF's `package://` meshes
    /// (`--package-path DIR`, repeatable).
    pub package_paths: Vec<PathBuf>,
    /// The window flags every scene takes; with `--fixed-dt` the clock
    /// advances a fixed step per frame, so scripts, plots, screenshots and
    /// quitting happen after the same frames on any machine.
    pub window: WindowOptions,
}

/// The IK scene as the frame sees it (the solver runs on its own thread),
/// shared by every plugin.
#[derive(Resource)]
pub struct PlaygroundRes(pub SolverMirror);

impl HostedScene for PlaygroundRes {
    fn label(&self) -> &str {
        "solver"
    }

    fn tick(&mut self, clock: f64) -> Option<String> {
        self.0.frame(clock)
    }

    fn initial_orbit(&self) -> OrbitCamera {
        view::framing(&self.0.scene)
    }
}

/// Where URDF scenes look for `package://` meshes before their own folders
/// (`--package-path`), for the first scene and every scene loaded later.
#[derive(Resource, Clone, Debug, Default)]
pub struct PackagePaths(pub Vec<PathBuf>);

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
#[derive(Resource, Default)]
pub struct UiState {
    /// The last error (bad file, bad setting), shown in the panel.
    pub error: Option<String>,
    /// The target last dragged or clicked (Delete removes it).
    pub selected_target: Option<usize>,
    pub fields: PanelFields,
    /// A Save whose file exists, waiting for "overwrite" or "cancel".
    pub confirm_overwrite: Option<std::path::PathBuf>,
    /// Worst violation counts seen since the scene started.
    pub max_violations: LimitViolations,
}

/// Text fields of the panel: the files it loads (a URDF, a BVH in the
/// pose of one frame, a settings file) and saves (the settings).
#[derive(Clone, Debug, PartialEq)]
pub struct PanelFields {
    pub urdf_path: String,
    pub bvh_path: String,
    pub bvh_frame: usize,
    pub settings_path: String,
}

impl Default for PanelFields {
    fn default() -> Self {
        Self {
            urdf_path: "assets/robots/arm6.urdf".into(),
            bvh_path: "assets/motions/cmu_131_01_walk.bvh".into(),
            bvh_frame: 0,
            settings_path: "posecloud-settings.toml".into(),
        }
    }
}

impl UiState {
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
    let mut s = base.cloned().unwrap_or_else(|| scene.start.settings());
    if let Some(n) = particles {
        s.filter.particles = n;
    }
    s
}

/// Opens the window and runs until it is closed (or a screenshot/script
/// says to quit).
pub fn run(options: GuiOptions, launched: Instant) -> Result<()> {
    let scene = Scene::build_with(&options.scene, &options.package_paths)?;
    crate::gui::check_display_and_adapter()?;
    let settings = initial_settings(&scene, options.settings.as_ref(), options.particles);
    let window = WindowOptions {
        title: format!("posecloud — {}", scene.source.label()),
        ..options.window.clone()
    };
    let session = SolverMirror::new(scene, settings, window.pacing())?;
    let automation = automation::Automation::new(&options.automation)?;
    let ui = UiState::default();
    run_scene_window(PlaygroundRes(session), window, launched, |app| {
        app.add_plugins(MeshPickingPlugin)
            .add_message::<SceneCommand>()
            .insert_resource(ui)
            .insert_resource(automation)
            .insert_resource(PackagePaths(options.package_paths.clone()))
            .add_plugins((
                view::IkScenePlugin,
                cloud::ParticleCloudPlugin,
                input::InteractionPlugin,
                panels::TuningPanelPlugin,
                automation::ScriptPlugin,
            ));
    })
}

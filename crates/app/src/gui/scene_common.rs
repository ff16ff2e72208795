//! The host of the scene windows (tracking, walker, sparse sensors): a
//! scene is a Bevy-free model (the runtime's [`crate::runtime::Solver`],
//! run by [`SceneRuntime`]) plus a view plugin; [`run_scene_window`] gives
//! every one the same window, clock and fps, `--screenshot` /
//! `--quit-after` automation, orbiting camera and floor
//! ([`SceneHostPlugin`]), and its frame order ([`SceneSet`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use bevy::diagnostic::{DiagnosticsStore, FrameTimeDiagnosticsPlugin};
use bevy::input::mouse::{AccumulatedMouseMotion, AccumulatedMouseScroll, MouseScrollUnit};
use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured, save_to_disk};
use bevy_egui::input::EguiWantsInput;

use super::OrbitCamera;

/// The window's clock (wall time, or frames × `--fixed-dt`), fps and
/// automation requests.
#[derive(Resource)]
pub struct SceneClock {
    pub clock: f64,
    pub frames: u64,
    pub fixed_dt: Option<f64>,
    pub fps: f64,
    pub launched: Instant,
    pub screenshot: Option<PathBuf>,
    pub after_secs: f64,
    pub quit_after: Option<f64>,
    requested: bool,
    saved: Arc<AtomicUsize>,
}

impl SceneClock {
    pub fn new(
        launched: Instant,
        fixed_dt: Option<f64>,
        screenshot: Option<PathBuf>,
        after_secs: f64,
        quit_after: Option<f64>,
    ) -> Self {
        Self {
            clock: 0.0,
            frames: 0,
            fixed_dt,
            fps: 0.0,
            launched,
            screenshot,
            after_secs,
            quit_after,
            requested: false,
            saved: Arc::new(AtomicUsize::new(0)),
        }
    }
}

/// Advances the clock; fps from Bevy's frame-time diagnostics.
pub fn advance_clock(
    mut c: ResMut<SceneClock>,
    time: Res<Time<Real>>,
    diagnostics: Res<DiagnosticsStore>,
) {
    c.clock = match c.fixed_dt {
        Some(dt) => c.frames as f64 * dt,
        None => time.elapsed_secs_f64(),
    };
    c.frames += 1;
    if c.frames == 1 {
        eprintln!(
            "posecloud: first frame {:.2} s after launch",
            c.launched.elapsed().as_secs_f64()
        );
    }
    if let Some(fps) = diagnostics
        .get(&FrameTimeDiagnosticsPlugin::FPS)
        .and_then(|d| d.smoothed())
    {
        c.fps = fps;
    }
}

/// `--screenshot` after `--after-secs` (then exit), `--quit-after`.
pub fn automation(
    mut commands: Commands,
    mut c: ResMut<SceneClock>,
    mut exit: MessageWriter<AppExit>,
) {
    if let Some(path) = c.screenshot.clone()
        && !c.requested
        && c.clock >= c.after_secs
    {
        c.requested = true;
        let mut save = save_to_disk(path);
        let saved = c.saved.clone();
        commands
            .spawn(Screenshot::primary_window())
            .observe(move |ev: On<ScreenshotCaptured>| {
                save(ev);
                saved.fetch_add(1, Ordering::SeqCst);
            });
    }
    // The screenshot is written a frame or two after it is asked for.
    if c.requested && c.saved.load(Ordering::SeqCst) > 0 {
        exit.write(AppExit::Success);
    }
    if c.quit_after.is_some_and(|q| c.clock >= q) {
        exit.write(AppExit::Success);
    }
}

/// Drag (left or right) orbits, the wheel zooms; nothing while egui has
/// the pointer.
pub fn orbit(
    buttons: Res<ButtonInput<MouseButton>>,
    motion: Res<AccumulatedMouseMotion>,
    scroll: Res<AccumulatedMouseScroll>,
    egui: Res<EguiWantsInput>,
    mut camera: Query<(&mut OrbitCamera, &mut Transform)>,
) {
    let Ok((mut orbit, mut transform)) = camera.single_mut() else {
        return;
    };
    if egui.wants_any_pointer_input() {
        return;
    }
    let mut changed = false;
    let rotate = buttons.pressed(MouseButton::Right) || buttons.pressed(MouseButton::Left);
    if rotate && motion.delta != Vec2::ZERO {
        orbit.yaw -= motion.delta.x * 0.008;
        orbit.pitch = (orbit.pitch + motion.delta.y * 0.008).clamp(-1.4, 1.4);
        changed = true;
    }
    if scroll.delta.y != 0.0 {
        let lines = match scroll.unit {
            MouseScrollUnit::Line => scroll.delta.y,
            MouseScrollUnit::Pixel => scroll.delta.y / 40.0,
        };
        orbit.distance = (orbit.distance * 0.9f32.powf(lines)).clamp(0.3, 50.0);
        changed = true;
    }
    if changed {
        *transform = orbit.transform();
    }
}

/// Keeps `focus` in the middle of what the panels leave (logical pixels:
/// `left`, `right` panel widths, `bottom` height), easing towards it.
pub fn frame_view(
    camera: &mut Query<(&mut OrbitCamera, &mut Transform)>,
    window: &Window,
    (left, right, bottom): (f32, f32, f32),
    focus: Option<Vec3>,
) {
    let (w, h) = (window.width().max(1.0), window.height().max(1.0));
    let offset = Vec2::new((left - right) / w, bottom / h);
    if let Ok((mut orbit, mut t)) = camera.single_mut() {
        let mut changed = orbit.screen_offset != offset || orbit.aspect != w / h;
        if let Some(f) = focus.filter(|f| f.is_finite())
            && orbit.focus.distance(f) > 1e-3
        {
            orbit.focus = orbit.focus.lerp(f, 0.2);
            changed = true;
        }
        if changed {
            orbit.screen_offset = offset;
            orbit.aspect = w / h;
            *t = orbit.transform();
        }
    }
}

/// The window plugins every scene window starts with.
pub fn base_app(title: String, width: u32, height: u32, no_vsync: bool) -> App {
    let mut app = App::new();
    app.insert_resource(ClearColor(Color::srgb(0.16, 0.17, 0.19)))
        .add_plugins(DefaultPlugins.set(WindowPlugin {
            primary_window: Some(Window {
                title,
                resolution: bevy::window::WindowResolution::new(width, height),
                present_mode: if no_vsync {
                    bevy::window::PresentMode::AutoNoVsync
                } else {
                    bevy::window::PresentMode::AutoVsync
                },
                ..default()
            }),
            ..default()
        }))
        .add_plugins(bevy_egui::EguiPlugin::default())
        .add_plugins(super::render_errors::RenderErrorsPlugin)
        .add_plugins(FrameTimeDiagnosticsPlugin::default());
    app
}

/// Camera (orbiting `focus`) and floor of a scene window.
pub fn spawn_view(
    commands: &mut Commands,
    meshes: &mut Assets<Mesh>,
    materials: &mut Assets<StandardMaterial>,
    software: bool,
    orbit: OrbitCamera,
) {
    commands.spawn((
        Camera3d::default(),
        bevy::core_pipeline::tonemapping::Tonemapping::None,
        if software { Msaa::Off } else { Msaa::Sample4 },
        orbit.transform(),
        orbit,
    ));
    let [r, g, b] = crate::scenes::ik::view::FLOOR_COLOUR;
    commands.spawn((
        Mesh3d(meshes.add(Plane3d::default().mesh().size(16.0, 16.0))),
        MeshMaterial3d(materials.add(StandardMaterial {
            base_color: Color::srgb(r, g, b),
            unlit: true,
            ..default()
        })),
        Transform::from_xyz(0.0, -0.001, 0.0),
    ));
}

/// A scene's solver as the frame sees it: its runtime (own thread, or
/// inline for `--fixed-dt` replays), the latest snapshot, pause state and
/// the last error.
#[derive(Resource)]
pub struct SceneRuntime<S: crate::runtime::Solver> {
    /// In a mutex only to make the resource `Sync` (inline replays keep
    /// the solver here, and frame sources are `Send` only); the frame has
    /// `&mut` access, so it is never contended.
    runtime: std::sync::Mutex<crate::runtime::SolverRuntime<S>>,
    pub latest: Arc<crate::runtime::Published<S::Snapshot>>,
    pub paused: bool,
    pub error: Option<String>,
    /// Prefix of errors on stderr (`posecloud: LABEL: …`).
    label: &'static str,
}

impl<S: crate::runtime::Solver> SceneRuntime<S> {
    /// Starts `solver` with `pacing`; `label` names the scene in errors.
    pub fn start(solver: S, pacing: crate::runtime::Pacing, label: &'static str) -> Self {
        let runtime = crate::runtime::SolverRuntime::start(solver, pacing);
        let latest = runtime.latest();
        Self {
            runtime: std::sync::Mutex::new(runtime),
            latest,
            paused: false,
            error: None,
            label,
        }
    }

    pub fn rt(&mut self) -> &mut crate::runtime::SolverRuntime<S> {
        self.runtime.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends an edit to the solver.
    pub fn edit(&mut self, edit: S::Edit) {
        self.rt().edit(edit);
    }

    /// Applies what the play buttons asked for.
    pub fn play(&mut self, p: PlayButtons) {
        if p.toggle_pause {
            self.paused = !self.paused;
            let paused = self.paused;
            self.rt().set_paused(paused);
        }
        if p.single_step {
            self.rt().single_step();
        }
        if p.reset {
            self.rt().reset();
            self.error = None;
        }
    }
}

/// Ticks the scene's solver at the window's clock and takes its latest
/// snapshot (never waits for it); a new solver error goes to stderr.
pub fn tick_scene<S: crate::runtime::Solver>(
    mut res: ResMut<SceneRuntime<S>>,
    clock: Res<SceneClock>,
) {
    res.rt().tick(clock.clock);
    res.latest = res.rt().latest();
    if let Some(e) = &res.latest.error
        && res.error.as_deref() != Some(e.as_str())
    {
        eprintln!("posecloud: {}: {e}", res.label);
        res.error = Some(e.clone());
    }
}

/// What the play / step / reset buttons asked for this frame.
#[derive(Clone, Copy, Debug, Default)]
pub struct PlayButtons {
    pub toggle_pause: bool,
    pub single_step: bool,
    pub reset: bool,
}

/// The play / step / reset buttons in one row.
pub fn play_buttons(ui: &mut bevy_egui::egui::Ui, paused: bool) -> PlayButtons {
    ui.horizontal(|ui| {
        let label = if paused { "▶ play" } else { "⏸ pause" };
        PlayButtons {
            toggle_pause: ui.button(label).clicked(),
            single_step: ui.button("step").clicked(),
            reset: ui.button("reset").clicked(),
        }
    })
    .inner
}

/// The window options every scene window takes (`--width`, `--height`,
/// `--no-vsync`, `--fixed-dt`, `--screenshot`, `--after-secs`,
/// `--quit-after`).
#[derive(Clone, Debug)]
pub struct WindowOptions {
    pub title: String,
    pub width: u32,
    pub height: u32,
    pub no_vsync: bool,
    pub fixed_dt: Option<f64>,
    pub screenshot: Option<PathBuf>,
    pub after_secs: f64,
    pub quit_after: Option<f64>,
}

impl WindowOptions {
    /// Replays (`--fixed-dt`) step the solver on the frame's thread so that
    /// they give the same result on any machine; otherwise it runs on its
    /// own thread within a time budget.
    pub fn pacing(&self) -> crate::runtime::Pacing {
        if self.fixed_dt.is_some() {
            crate::runtime::Pacing::Inline
        } else {
            crate::runtime::Pacing::Budget
        }
    }
}

/// A scene that the window host ([`run_scene_window`]) runs: a Bevy-free
/// model (the runtime's [`crate::runtime::Solver`]) whose view says where
/// the camera starts.
pub trait WindowScene: crate::runtime::Solver {
    /// The orbit camera at start-up, from the first snapshot.
    fn initial_orbit(snapshot: &Self::Snapshot) -> OrbitCamera;
}

/// The order of a scene window's frame: the clock and the solver tick,
/// then the scene's own systems (drawing), then the automation (which may
/// exit after a screenshot of what was drawn).
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SceneSet {
    Tick,
    Draw,
    Automation,
}

/// The host's systems for scene `S`: clock, tick, orbit, automation, and
/// the camera and floor at start-up.
pub struct SceneHostPlugin<S>(std::marker::PhantomData<fn() -> S>);

impl<S> Default for SceneHostPlugin<S> {
    fn default() -> Self {
        Self(std::marker::PhantomData)
    }
}

impl<S: WindowScene> Plugin for SceneHostPlugin<S> {
    fn build(&self, app: &mut App) {
        app.configure_sets(
            Update,
            (SceneSet::Tick, SceneSet::Draw, SceneSet::Automation).chain(),
        )
        .add_systems(Startup, spawn_scene_view::<S>)
        .add_systems(
            Update,
            (advance_clock, tick_scene::<S>, orbit)
                .chain()
                .in_set(SceneSet::Tick),
        )
        .add_systems(Update, automation.in_set(SceneSet::Automation));
    }
}

/// The camera (at [`WindowScene::initial_orbit`]) and the floor.
fn spawn_scene_view<S: WindowScene>(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    adapter: Option<Res<bevy::render::renderer::RenderAdapterInfo>>,
    res: Res<SceneRuntime<S>>,
) {
    let software = adapter
        .as_ref()
        .is_some_and(|a| a.device_type == wgpu::DeviceType::Cpu);
    let orbit = S::initial_orbit(&res.latest.data);
    spawn_view(&mut commands, &mut meshes, &mut materials, software, orbit);
}

/// Runs a scene window until it is closed (or the automation exits): the
/// base plugins, the host ([`SceneHostPlugin`]) for `res`'s scene, and what
/// `view` adds (the scene's resources, drawing and panels).
///
/// # Errors
/// The app exited with an error code.
pub fn run_scene_window<S: WindowScene>(
    res: SceneRuntime<S>,
    window: WindowOptions,
    launched: Instant,
    view: impl FnOnce(&mut App),
) -> anyhow::Result<()> {
    let mut app = scene_app::<S>(&window);
    view(&mut app);
    run_scene(app, res, &window, launched)
}

/// The window's app with the host of scene `S`, before the scene exists
/// (a scene that shares the renderer's device is built after the plugins
/// are finished).
pub fn scene_app<S: WindowScene>(window: &WindowOptions) -> App {
    let mut app = base_app(
        window.title.clone(),
        window.width,
        window.height,
        window.no_vsync,
    );
    app.add_plugins(SceneHostPlugin::<S>::default());
    app
}

/// Runs `app` (from [`scene_app`]) with the scene `res` until the window
/// closes.
///
/// # Errors
/// The app exited with an error code.
pub fn run_scene<S: WindowScene>(
    mut app: App,
    res: SceneRuntime<S>,
    window: &WindowOptions,
    launched: Instant,
) -> anyhow::Result<()> {
    app.insert_resource(res).insert_resource(SceneClock::new(
        launched,
        window.fixed_dt,
        window.screenshot.clone(),
        window.after_secs,
        window.quit_after,
    ));
    finish(app.run())
}

/// The process's result from the app's exit.
///
/// # Errors
/// A non-zero exit code.
pub fn finish(exit: AppExit) -> anyhow::Result<()> {
    match exit {
        AppExit::Success => Ok(()),
        AppExit::Error(code) => anyhow::bail!("the app exited with code {code}"),
    }
}

/// The egui root over the whole window that a scene's panels are laid out
/// in (left controls, right/bottom panels; the 3D view shows through the
/// rest).
pub fn window_root(ctx: &bevy_egui::egui::Context, id: &'static str) -> bevy_egui::egui::Ui {
    use bevy_egui::egui;
    egui::Ui::new(
        ctx.clone(),
        id.into(),
        egui::UiBuilder::new()
            .layer_id(egui::LayerId::background())
            .max_rect(ctx.viewport_rect()),
    )
}

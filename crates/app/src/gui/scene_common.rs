//! The host of every scene window (IK playground, tracking, walker, sparse
//! sensors): a scene is a Bevy-free model (the runtime's
//! [`crate::runtime::Solver`]) in a [`HostedScene`] resource plus a view
//! plugin. [`SceneHostPlugin`] gives every one the same window clock, fps
//! and start-up times, automation (`--screenshot`, `--quit-after`, the
//! screenshots and quits a script asks for, the frame-time summary at
//! exit), orbiting camera and floor, and its frame order ([`SceneSet`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use bevy::diagnostic::{DiagnosticsStore, FrameTimeDiagnosticsPlugin};
use bevy::ecs::system::ScheduleSystem;
use bevy::input::mouse::{AccumulatedMouseMotion, AccumulatedMouseScroll, MouseScrollUnit};
use bevy::picking::hover::HoverMap;
use bevy::picking::pointer::PointerId;
use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured};
use bevy_egui::input::EguiWantsInput;

use super::OrbitCamera;
use super::cloud_budget::{CloudBudget, CloudSize, adapt_cloud_budget};

/// The window's clock (wall time, or frames × `--fixed-dt`), fps, start-up
/// and frame times, and automation requests.
#[derive(Resource)]
pub struct SceneClock {
    pub clock: f64,
    pub frames: u64,
    pub fixed_dt: Option<f64>,
    pub fps: f64,
    pub times: WindowTimes,
    pub auto_exit: AutoExit,
    screenshot_taken: bool,
    /// Screenshots asked for (by a script) and not yet requested.
    pending: Vec<PathBuf>,
    requested: usize,
    saved: Arc<AtomicUsize>,
    quit: bool,
    exiting: bool,
}

/// When the window started and became interactive, and its frame times
/// since.
#[derive(Debug)]
pub struct WindowTimes {
    pub launched: Instant,
    /// Seconds after launch of the first frame, and of the first frame
    /// faster than 100 ms (pipelines compiled: interactive).
    pub first_frame: Option<f64>,
    pub first_interactive: Option<f64>,
    /// Frame times (s) since the window became interactive.
    times: Vec<f64>,
}

impl WindowTimes {
    fn new(launched: Instant) -> Self {
        Self {
            launched,
            first_frame: None,
            first_interactive: None,
            times: Vec::new(),
        }
    }

    /// Records a frame that took `dt` seconds: the first frame and the
    /// first interactive one (announced on stderr), then every frame time.
    fn record(&mut self, dt: f64) {
        let now = self.launched.elapsed().as_secs_f64();
        if self.first_frame.is_none() {
            self.first_frame = Some(now);
            eprintln!("posecloud: first frame {now:.2} s after launch");
        } else if self.first_interactive.is_none() && dt > 0.0 && dt < 0.1 {
            self.first_interactive = Some(now);
            eprintln!("posecloud: interactive (frame time < 100 ms) {now:.2} s after launch");
        }
        if self.first_interactive.is_some() {
            self.times.push(dt);
        }
    }

    /// The median of the last `n` frame times (s), once interactive and
    /// that many frames were measured.
    pub fn recent_median(&self, n: usize) -> Option<f64> {
        let k = self.times.len();
        if n == 0 || k < n {
            return None;
        }
        let mut last = self.times[k - n..].to_vec();
        last.sort_by(f64::total_cmp);
        Some(last[n / 2])
    }

    /// The frame-time summary printed at exit.
    pub fn summary(&self) -> String {
        let times = &self.times;
        if times.is_empty() {
            return "no interactive frames measured".into();
        }
        let mut sorted = times.clone();
        sorted.sort_by(f64::total_cmp);
        let total: f64 = times.iter().sum();
        let median = sorted[sorted.len() / 2];
        let p95 = sorted[(sorted.len() * 95 / 100).min(sorted.len() - 1)];
        format!(
            "{} frames after interactive: mean {:.1} fps, median frame {:.1} ms, 95th percentile {:.1} ms; first frame {:.2} s, interactive {:.2} s after launch",
            times.len(),
            times.len() as f64 / total,
            median * 1e3,
            p95 * 1e3,
            self.first_frame.unwrap_or(f64::NAN),
            self.first_interactive.unwrap_or(f64::NAN),
        )
    }
}

/// How a window ends by itself: `--screenshot` (then exit) at
/// `--after-secs`; `--quit-after`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AutoExit {
    pub screenshot: Option<PathBuf>,
    pub after_secs: f64,
    pub quit_after: Option<f64>,
}

impl SceneClock {
    pub fn new(launched: Instant, fixed_dt: Option<f64>, auto_exit: AutoExit) -> Self {
        Self {
            clock: 0.0,
            frames: 0,
            fixed_dt,
            fps: 0.0,
            times: WindowTimes::new(launched),
            auto_exit,
            screenshot_taken: false,
            pending: Vec::new(),
            requested: 0,
            saved: Arc::new(AtomicUsize::new(0)),
            quit: false,
            exiting: false,
        }
    }

    /// Saves the window to `path` at the end of this frame (its folder is
    /// created); the app does not exit before it is written.
    pub fn request_screenshot(&mut self, path: PathBuf) {
        self.pending.push(path);
    }

    /// Exits once every requested screenshot is written.
    pub fn request_quit(&mut self) {
        self.quit = true;
    }

    /// True from the frame in which the host asked the app to exit (its
    /// last): files a scene writes as it goes are flushed then.
    pub fn exiting(&self) -> bool {
        self.exiting
    }
}

/// Advances the clock; fps from Bevy's frame-time diagnostics; the first
/// and first interactive frame; frame times once interactive.
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
    c.times.record(time.delta_secs_f64());
    if let Some(fps) = diagnostics
        .get(&FrameTimeDiagnosticsPlugin::FPS)
        .and_then(|d| d.smoothed())
    {
        c.fps = fps;
    }
}

/// `--screenshot` after `--after-secs` (then exit), `--quit-after`, and the
/// screenshots and quit a scene asked for; exits once every screenshot is
/// written, printing the frame-time summary.
pub fn automation(
    mut commands: Commands,
    mut c: ResMut<SceneClock>,
    mut exit: MessageWriter<AppExit>,
) {
    // Cloned only once it is due, not every frame.
    if !c.screenshot_taken
        && c.clock >= c.auto_exit.after_secs
        && let Some(path) = c.auto_exit.screenshot.clone()
    {
        c.screenshot_taken = true;
        c.pending.push(path);
        c.quit = true;
    }
    if c.auto_exit.quit_after.is_some_and(|q| c.clock >= q) {
        c.quit = true;
    }
    for path in std::mem::take(&mut c.pending) {
        let saved = c.saved.clone();
        c.requested += 1;
        commands
            .spawn(Screenshot::primary_window())
            .observe(move |ev: On<ScreenshotCaptured>| {
                match super::export::save_screenshot(&ev.image, &path) {
                    Ok(()) => eprintln!("posecloud: screenshot saved to {}", path.display()),
                    Err(e) => eprintln!("posecloud: {e:#}"),
                }
                saved.fetch_add(1, Ordering::SeqCst);
            });
    }
    // A screenshot is written a frame or two after it is asked for.
    if c.quit && !c.exiting && c.saved.load(Ordering::SeqCst) >= c.requested {
        c.exiting = true;
        eprintln!("posecloud: {}", c.times.summary());
        exit.write(AppExit::Success);
    }
}

/// Right-drag, or left-drag that starts on empty space (not on a pickable
/// entity such as an IK target), orbits; middle-drag or Shift + right-drag
/// pans; the wheel zooms; nothing while egui has the pointer.
pub fn orbit(
    buttons: Res<ButtonInput<MouseButton>>,
    keys: Res<ButtonInput<KeyCode>>,
    (motion, scroll): (Res<AccumulatedMouseMotion>, Res<AccumulatedMouseScroll>),
    egui: Res<EguiWantsInput>,
    hover: Option<Res<HoverMap>>,
    mut left_orbits: Local<bool>,
    mut camera: Query<(&mut OrbitCamera, &mut Transform)>,
) {
    let Ok((mut orbit, mut transform)) = camera.single_mut() else {
        return;
    };
    let over_ui = egui.wants_any_pointer_input();
    if buttons.just_pressed(MouseButton::Left) {
        let over_entity = hover
            .as_ref()
            .and_then(|h| h.get(&PointerId::Mouse))
            .is_some_and(|hits| !hits.is_empty());
        *left_orbits = !over_entity && !over_ui;
    }
    if !buttons.pressed(MouseButton::Left) {
        *left_orbits = false;
    }
    if over_ui {
        return;
    }
    let shift = keys.pressed(KeyCode::ShiftLeft) || keys.pressed(KeyCode::ShiftRight);
    let delta = motion.delta;
    let pan =
        buttons.pressed(MouseButton::Middle) || (shift && buttons.pressed(MouseButton::Right));
    let rotate = !pan && (buttons.pressed(MouseButton::Right) || *left_orbits);
    let mut changed = false;
    if rotate && delta != Vec2::ZERO {
        orbit.yaw -= delta.x * 0.008;
        orbit.pitch = (orbit.pitch + delta.y * 0.008).clamp(-1.4, 1.4);
        changed = true;
    }
    if pan && delta != Vec2::ZERO {
        let scale = orbit.distance * 0.0015;
        let right = transform.right().as_vec3();
        let up = transform.up().as_vec3();
        orbit.focus += (-delta.x * right + delta.y * up) * scale;
        changed = true;
    }
    if scroll.delta.y != 0.0 {
        let lines = match scroll.unit {
            MouseScrollUnit::Line => scroll.delta.y,
            MouseScrollUnit::Pixel => scroll.delta.y / 40.0,
        };
        orbit.distance = (orbit.distance * 0.9f32.powf(lines)).clamp(0.1, 100.0);
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

/// The window plugins every scene window starts with: its title, size and
/// vertical sync as `window` says.
pub fn base_app(window: &WindowOptions) -> App {
    let mut app = App::new();
    app.insert_resource(ClearColor(Color::srgb(0.16, 0.17, 0.19)))
        .add_plugins(DefaultPlugins.set(WindowPlugin {
            primary_window: Some(Window {
                title: window.title.clone(),
                resolution: bevy::window::WindowResolution::new(window.size.0, window.size.1),
                present_mode: if window.no_vsync {
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
        // A left-drag on the floor orbits (see [`orbit`]).
        Pickable::IGNORE,
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

/// A scene as the host sees it: the resource holding its model (run by
/// the runtime on its own thread, or inline for replays).
pub trait HostedScene: Resource + Component<Mutability = bevy::ecs::component::Mutable> {
    /// Names the scene in errors on stderr (`posecloud: LABEL: …`).
    fn label(&self) -> &str;
    /// Asks the solver for this frame's slice at the window's `clock` and
    /// takes its latest snapshot (never waits for it). Returns a solver
    /// error that is new since the last tick.
    fn tick(&mut self, clock: f64) -> Option<String>;
    /// The orbit camera at start-up.
    fn initial_orbit(&self) -> OrbitCamera;
}

/// A solver error, new this frame (the host has printed it on stderr; a
/// scene's panel may show it).
#[derive(Message, Clone, Debug)]
pub struct SolverError(pub String);

impl<S: WindowScene> HostedScene for SceneRuntime<S> {
    fn label(&self) -> &str {
        self.label
    }

    fn tick(&mut self, clock: f64) -> Option<String> {
        self.rt().tick(clock);
        self.latest = self.rt().latest();
        let e = self.latest.error.clone()?;
        if self.error.as_deref() == Some(e.as_str()) {
            return None;
        }
        self.error = Some(e.clone());
        Some(e)
    }

    fn initial_orbit(&self) -> OrbitCamera {
        S::initial_orbit(&self.latest.data)
    }
}

/// Ticks scene `R` at the window's clock; a new solver error goes to stderr
/// and out as a [`SolverError`].
pub fn tick_scene<R: HostedScene>(
    mut res: ResMut<R>,
    clock: Res<SceneClock>,
    mut errors: MessageWriter<SolverError>,
) {
    if let Some(e) = res.tick(clock.clock) {
        eprintln!("posecloud: {}: {e}", res.label());
        errors.write(SolverError(e));
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
    /// Width × height in physical pixels.
    pub size: (u32, u32),
    pub no_vsync: bool,
    pub fixed_dt: Option<f64>,
    pub auto_exit: AutoExit,
    /// `--cloud-limit N`: a fixed cap for the particle cloud instead of
    /// the adaptive one ([`crate::gui::cloud_budget`]).
    pub cloud_limit: Option<usize>,
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

/// A scene model that [`SceneRuntime`] hosts ([`run_scene_window`]): a
/// Bevy-free model (the runtime's [`crate::runtime::Solver`]) whose view
/// says where the camera starts.
pub trait WindowScene: crate::runtime::Solver {
    /// The orbit camera at start-up, from the first snapshot.
    fn initial_orbit(snapshot: &Self::Snapshot) -> OrbitCamera;
}

/// A [`WindowScene`]'s view: `draw` (in [`SceneSet::Draw`]) with its own
/// gizmo group and the solid bodies ([`super::bodies`]), and `panels` on
/// egui's pass.
pub fn add_scene_view<G: GizmoConfigGroup, D, P>(
    app: &mut App,
    (gizmos, config): (G, GizmoConfig),
    draw: impl IntoScheduleConfigs<ScheduleSystem, D>,
    panels: impl IntoScheduleConfigs<ScheduleSystem, P>,
) {
    app.insert_gizmo_config(gizmos, config)
        .add_plugins(super::bodies::BodiesPlugin)
        .add_systems(Update, draw.in_set(SceneSet::Draw))
        .add_systems(bevy_egui::EguiPrimaryContextPass, panels);
}

/// Where a body stands, for the orbit's first focus: its first (root)
/// point, else 0.9 m above the origin (before the first frame).
pub fn body_focus(points: &[[f32; 3]]) -> Vec3 {
    points
        .first()
        .map_or(Vec3::new(0.0, 0.9, 0.0), |p| Vec3::from_array(*p))
}

/// The order of a scene window's frame: the clock; the scene's input
/// (mouse, keys, scripts: edits for the solver) and the orbit; the solver
/// tick; the scene's drawing; placing what it recorded (solid bodies,
/// [`crate::gui::bodies`]); the automation (which may exit after a
/// screenshot of what was drawn).
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SceneSet {
    Clock,
    Input,
    Tick,
    Draw,
    Place,
    Automation,
}

/// The host's systems for the scene resource `R`: clock, orbit, tick,
/// automation, and the camera and floor at start-up.
pub struct SceneHostPlugin<R>(std::marker::PhantomData<fn() -> R>);

impl<R> Default for SceneHostPlugin<R> {
    fn default() -> Self {
        Self(std::marker::PhantomData)
    }
}

impl<R: HostedScene> Plugin for SceneHostPlugin<R> {
    fn build(&self, app: &mut App) {
        app.configure_sets(
            Update,
            (
                SceneSet::Clock,
                SceneSet::Input,
                SceneSet::Tick,
                SceneSet::Draw,
                SceneSet::Place,
                SceneSet::Automation,
            )
                .chain(),
        )
        .add_message::<SolverError>()
        .init_resource::<CloudBudget>()
        .init_resource::<CloudSize>()
        .init_resource::<super::export::Exports>()
        .add_systems(Startup, spawn_scene_view::<R>)
        .add_systems(
            Update,
            (advance_clock, adapt_cloud_budget)
                .chain()
                .in_set(SceneSet::Clock),
        )
        .add_systems(Update, orbit.in_set(SceneSet::Input))
        .add_systems(Update, tick_scene::<R>.in_set(SceneSet::Tick))
        .add_systems(Update, automation.in_set(SceneSet::Automation));
    }
}

/// The camera (at [`HostedScene::initial_orbit`]) and the floor.
fn spawn_scene_view<R: HostedScene>(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    adapter: Option<Res<bevy::render::renderer::RenderAdapterInfo>>,
    res: Res<R>,
) {
    // A software rasteriser (lavapipe/llvmpipe) shades every MSAA sample on
    // the CPU: without multisampling the frame costs a quarter.
    let software = adapter
        .as_ref()
        .is_some_and(|a| a.device_type == wgpu::DeviceType::Cpu);
    spawn_view(
        &mut commands,
        &mut meshes,
        &mut materials,
        software,
        res.initial_orbit(),
    );
}

/// Runs a scene window until it is closed (or the automation exits): the
/// base plugins, the host ([`SceneHostPlugin`]) for `res`, and what `view`
/// adds (the scene's resources, drawing and panels).
///
/// # Errors
/// The app exited with an error code.
pub fn run_scene_window<R: HostedScene>(
    res: R,
    window: WindowOptions,
    launched: Instant,
    view: impl FnOnce(&mut App),
) -> anyhow::Result<()> {
    let mut app = scene_app::<R>(&window);
    view(&mut app);
    run_scene(app, res, &window, launched)
}

/// The window's app with the host of scene resource `R`, before the scene
/// exists (a scene that shares the renderer's device is built after the
/// plugins are finished).
pub fn scene_app<R: HostedScene>(window: &WindowOptions) -> App {
    let mut app = base_app(window);
    app.add_plugins(SceneHostPlugin::<R>::default());
    app
}

/// Runs `app` (from [`scene_app`]) with the scene `res` until the window
/// closes.
///
/// # Errors
/// The app exited with an error code.
pub fn run_scene<R: HostedScene>(
    mut app: App,
    res: R,
    window: &WindowOptions,
    launched: Instant,
) -> anyhow::Result<()> {
    if let Some(limit) = window.cloud_limit {
        app.insert_resource(CloudBudget::fixed(limit));
    }
    app.insert_resource(res).insert_resource(SceneClock::new(
        launched,
        window.fixed_dt,
        window.auto_exit.clone(),
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

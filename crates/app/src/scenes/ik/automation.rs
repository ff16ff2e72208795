//! `AutomationPlugin`: the app driven without a person, for tests, bug
//! reports and frame-time measurements.
//!
//! - `--screenshot FILE --after-secs S`: save the window to FILE after S
//!   seconds and exit 0.
//! - `--script FILE`: replay timed input ([`crate::scenes::ik::script`]).
//! - `--report FILE.csv`: one row per frame (time, fps, solver time, ESS,
//!   limit violations, each target's distance).
//! - `--quit-after S`: exit after S seconds.
//! - `--fixed-dt DT`: the clock all of these read advances DT per frame
//!   instead of with wall time, so a replay does the same on any machine.
//!
//! At exit the app prints its frame-time summary to stderr.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result};
use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured, save_to_disk};

use super::view::PlaygroundSet;
use super::{GuiOptions, PlaygroundRes, SceneCommand, UiState};
use crate::scenes::ik::script::{Effect, Player};

/// What the run was told to do, and its progress.
#[derive(Resource)]
pub struct Automation {
    screenshot: Option<PathBuf>,
    after_secs: f64,
    quit_after: Option<f64>,
    player: Option<Player>,
    report: Option<BufWriter<File>>,
    report_path: Option<PathBuf>,
    /// Screenshots requested and saved so far.
    requested: usize,
    saved: Arc<AtomicUsize>,
    screenshot_taken: bool,
    quit: bool,
    frame: u64,
    /// Frame times (s) after the app became interactive.
    frame_times: Vec<f64>,
}

impl Automation {
    pub fn new(o: &GuiOptions) -> Result<Self> {
        let player = o.script.as_deref().map(Player::load).transpose()?;
        let report = match &o.report {
            Some(path) => {
                let mut w = BufWriter::new(
                    File::create(path).with_context(|| format!("creating {}", path.display()))?,
                );
                writeln!(
                    w,
                    "time_s,frame,fps,iterations,step_ms,ess,paused,estimate_violations,particle_violations,targets"
                )?;
                Some(w)
            }
            None => None,
        };
        if !(o.after_secs.is_finite() && o.after_secs >= 0.0) {
            anyhow::bail!("--after-secs must be finite and >= 0, got {}", o.after_secs);
        }
        Ok(Self {
            screenshot: o.screenshot.clone(),
            after_secs: o.after_secs,
            quit_after: o.quit_after,
            player,
            report,
            report_path: o.report.clone(),
            requested: 0,
            saved: Arc::new(AtomicUsize::new(0)),
            screenshot_taken: false,
            quit: false,
            frame: 0,
            frame_times: Vec::new(),
        })
    }

    fn request_screenshot(&mut self, commands: &mut Commands, path: PathBuf) {
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            let _ = std::fs::create_dir_all(dir);
        }
        let mut save = save_to_disk(path);
        let saved = self.saved.clone();
        self.requested += 1;
        commands
            .spawn(Screenshot::primary_window())
            .observe(move |ev: On<ScreenshotCaptured>| {
                save(ev);
                saved.fetch_add(1, Ordering::SeqCst);
            });
    }
}

pub struct AutomationPlugin;

impl Plugin for AutomationPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(Update, run_script.in_set(PlaygroundSet::Input))
            .add_systems(Update, (record, finish).chain().after(PlaygroundSet::Draw));
    }
}

fn run_script(
    mut commands: Commands,
    mut auto: ResMut<Automation>,
    mut pg: ResMut<PlaygroundRes>,
    mut ui: ResMut<UiState>,
    mut scene: MessageWriter<SceneCommand>,
) {
    let t = ui.clock;
    let Some(player) = auto.player.as_mut() else {
        return;
    };
    let effects = match player.advance(t, &mut pg.0) {
        Ok(fx) => fx,
        Err(e) => {
            ui.fail("script", &e);
            auto.player = None;
            return;
        }
    };
    for fx in effects {
        match fx {
            Effect::TogglePause => {
                scene.write(SceneCommand::TogglePause);
            }
            Effect::SingleStep => {
                scene.write(SceneCommand::SingleStep);
            }
            Effect::Reset => {
                scene.write(SceneCommand::Reset);
            }
            Effect::Screenshot(path) => auto.request_screenshot(&mut commands, path),
            Effect::Quit => auto.quit = true,
        }
    }
}

fn record(
    mut auto: ResMut<Automation>,
    pg: Res<PlaygroundRes>,
    ui: Res<UiState>,
    time: Res<Time<Real>>,
) {
    auto.frame += 1;
    if ui.first_interactive.is_some() {
        let dt = time.delta_secs_f64();
        auto.frame_times.push(dt);
    }
    let frame = auto.frame;
    let Some(w) = auto.report.as_mut() else {
        return;
    };
    let p = &pg.0;
    let s = p.snapshot();
    let targets: Vec<String> = p
        .targets()
        .iter()
        .zip(p.target_distances())
        .map(|(t, d)| format!("{}={d:.6}", p.skeleton().joint(t.joint).name))
        .collect();
    let _ = writeln!(
        w,
        "{:.4},{frame},{:.2},{},{:.3},{:.2},{},{},{},{}",
        ui.clock,
        ui.fps,
        s.slice_steps,
        s.slice_ms,
        p.last_ess(),
        p.paused(),
        s.data.estimate_violations,
        s.data.particle_violations,
        targets.join(";")
    );
}

fn finish(
    mut commands: Commands,
    mut auto: ResMut<Automation>,
    ui: Res<UiState>,
    mut exit: MessageWriter<AppExit>,
) {
    let t = ui.clock;
    if let Some(path) = auto.screenshot.clone()
        && !auto.screenshot_taken
        && t >= auto.after_secs
    {
        auto.screenshot_taken = true;
        auto.request_screenshot(&mut commands, path);
        auto.quit = true;
    }
    if auto.quit_after.is_some_and(|q| t >= q) {
        auto.quit = true;
    }
    let saved = auto.saved.load(Ordering::SeqCst);
    if auto.quit && saved >= auto.requested {
        if let Some(w) = auto.report.as_mut()
            && let Err(e) = w.flush()
        {
            eprintln!(
                "posecloud: writing {}: {e}",
                auto.report_path
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            );
        }
        summary(&auto.frame_times, &ui);
        exit.write(AppExit::Success);
    }
}

/// Frame-time summary on stderr.
fn summary(times: &[f64], ui: &UiState) {
    if times.is_empty() {
        eprintln!("posecloud: no interactive frames measured");
        return;
    }
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    let total: f64 = times.iter().sum();
    let median = sorted[sorted.len() / 2];
    let p95 = sorted[(sorted.len() * 95 / 100).min(sorted.len() - 1)];
    eprintln!(
        "posecloud: {} frames after interactive: mean {:.1} fps, median frame {:.1} ms, 95th percentile {:.1} ms; first frame {:.2} s, interactive {:.2} s after launch",
        times.len(),
        times.len() as f64 / total,
        median * 1e3,
        p95 * 1e3,
        ui.first_frame.unwrap_or(f64::NAN),
        ui.first_interactive.unwrap_or(f64::NAN),
    );
}

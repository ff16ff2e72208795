//! `ScriptPlugin`: the IK playground driven without a person, for tests,
//! bug reports and frame-time measurements. The host
//! ([`crate::gui::scene_common`]) takes the screenshots and quits that a
//! script asks for, handles `--screenshot`, `--after-secs`, `--quit-after`
//! and `--fixed-dt` as in every scene, and prints the frame-time summary at
//! exit; this plugin adds what only the IK scene has:
//!
//! - `--script FILE`: replay timed input ([`crate::scenes::ik::script`]).
//! - `--report FILE.csv`: one row per frame (time, fps, solver time, ESS,
//!   limit violations, each target's distance).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use bevy::prelude::*;

use super::{PlaygroundRes, SceneCommand, UiState};
use crate::gui::scene_common::{SceneClock, SceneSet, automation};
use crate::scenes::ik::script::{Effect, Player};

/// The automation files of the command line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AutomationFiles {
    /// Timed input to replay (`--script FILE`).
    pub script: Option<PathBuf>,
    /// One CSV row per frame (`--report FILE`).
    pub report: Option<PathBuf>,
}

/// The script being replayed and the report being written.
#[derive(Resource)]
pub struct Automation {
    player: Option<Player>,
    report: Option<(BufWriter<File>, PathBuf)>,
}

impl Automation {
    /// Loads `--script` (errors name the file and line) and creates the
    /// `--report` file with its header.
    pub fn new(o: &AutomationFiles) -> Result<Self> {
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
                Some((w, path.clone()))
            }
            None => None,
        };
        Ok(Self { player, report })
    }
}

pub struct ScriptPlugin;

impl Plugin for ScriptPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(
            Update,
            run_script
                .in_set(SceneSet::Input)
                .in_set(super::view::InputSet),
        )
        // After the host's automation: on the last frame the report is
        // flushed.
        .add_systems(
            Update,
            record.in_set(SceneSet::Automation).after(automation),
        );
    }
}

fn run_script(
    mut auto: ResMut<Automation>,
    mut pg: ResMut<PlaygroundRes>,
    mut ui: ResMut<UiState>,
    mut clock: ResMut<SceneClock>,
    mut scene: MessageWriter<SceneCommand>,
) {
    let t = clock.clock;
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
            Effect::Screenshot(path) => clock.request_screenshot(path),
            Effect::Quit => clock.request_quit(),
        }
    }
}

fn record(mut auto: ResMut<Automation>, pg: Res<PlaygroundRes>, clock: Res<SceneClock>) {
    let Some((w, path)) = auto.report.as_mut() else {
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
    let row = writeln!(
        w,
        "{:.4},{},{:.2},{},{:.3},{:.2},{},{},{},{}",
        clock.clock,
        clock.frames,
        clock.fps,
        s.slice_steps,
        s.slice_ms,
        p.last_ess(),
        p.paused(),
        s.data.violations.estimate,
        s.data.violations.particles,
        targets.join(";")
    );
    let flushed = if clock.exiting() { w.flush() } else { Ok(()) };
    if let Err(e) = row.and(flushed) {
        eprintln!("posecloud: writing {}: {e}", path.display());
        auto.report = None;
    }
}

//! The tracking window's panels: the controls on the left (source, record,
//! export, play, status, filter, view), the camera frame on the right
//! ([`super::frame`]) and the plots at the bottom. [`panels`] draws them
//! in that order, then sends what they asked for: the play buttons, the
//! edits, changed settings, and a scene to open (on its own thread).

use std::path::PathBuf;

use bevy::prelude::*;
use bevy_egui::egui;
use track::{CameraSpec, FilterKind, ObservationMode, StartPose, Subject};
use vision::Sleeves;

use super::frame::{frame_panel, update_textures};
use super::{RIGHT_WIDTH, TrackRes, TrackUi};
use crate::gui::cloud_budget::CloudBudget;
use crate::gui::layout::{Chart, LEFT_WIDTH, PLOT_HEIGHT, PanelView, error_label, section};
use crate::gui::scene_common::{PlayButtons, play_buttons};
use crate::scenes::track::model::{
    BACKENDS, MAX_TRACK_PARTICLES, Opening, TrackEdit, TrackSettings, TrackSnapshot, TrackSpec,
    TrackingScene, backend_name, repo_path,
};

/// What one frame's panels ask of the scene, sent once they are drawn.
#[derive(Default)]
struct Requests {
    play: PlayButtons,
    edits: Vec<TrackEdit>,
    /// The Source panel's Open: the spec to open.
    open: Option<TrackSpec>,
}

/// The tracking window's panels, drawn from the scene's latest snapshot.
pub(super) fn panels(
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
    let mut asked = Requests::default();
    let s = &snap.data;
    let ui_s = &mut *ui_state;
    layout.left("track-controls", LEFT_WIDTH, |ui| {
        ui.heading("Tracking (RTPF)");
        section(ui, "Source", |ui| {
            asked.open = source_section(ui, ui_s, s, &mut asked.edits);
        });
        section(ui, "Record", |ui| {
            record_section(ui, ui_s, s, &mut asked.edits)
        });
        // Record above writes the tracked motion (CSV, BVH); the
        // current pose is saved by the scene (its body file's
        // skeleton).
        view.exports.section_with(ui, clock, "track", None, |ui| {
            if ui.button("save pose (BVH, CSV)").clicked() {
                let stem = crate::gui::export::export_stem("track");
                asked.edits.push(TrackEdit::SavePose(stem));
            }
        });
        section(ui, "Play", |ui| {
            asked.play = play_section(ui, ui_s, s, track.paused, &mut settings, &mut asked.edits);
        });
        section(ui, "Status", |ui| {
            status_section(ui, ui_s, s, clock.fps, track.error.as_deref());
        });
        section(ui, "Filter", |ui| {
            filter_section(ui, &mut settings);
            likelihood_terms(ui, &mut settings, s);
        });
        section(ui, "View", |ui| view_section(ui, ui_s, &mut view.budget, s));
    });
    layout.right("track-frame", RIGHT_WIDTH, true, |ui| {
        frame_panel(ui, ui_s, s, track.paused, &mut asked.play, &mut asked.edits);
    });
    layout.charts("track-plots", PLOT_HEIGHT, charts(s));
    send(&mut track, &mut ui_state, asked, settings);
    poll_opening(&mut track, &mut ui_state);
    // Centre the body in what the panels leave, following the estimate.
    let focus = s
        .track
        .estimate()
        .first()
        .map(|p| Vec3::new(p[0], p[1].max(0.5), p[2]));
    view.frame(&layout, focus);
    Ok(())
}

/// The Source section: the source picker and fields, the subject, the
/// tracked joints, Open and "start again"; the spec Open asks for.
fn source_section(
    ui: &mut egui::Ui,
    state: &mut TrackUi,
    s: &TrackSnapshot,
    edits: &mut Vec<TrackEdit>,
) -> Option<TrackSpec> {
    source_picker(ui, state);
    ui.label("frames (synthetic[:hop], webcam:N[@WxH], folder, video):");
    ui.text_edit_singleline(&mut state.source_text);
    ui.label("camera file (optional: empty is a level camera, 60° wide):");
    ui.text_edit_singleline(&mut state.camera_text);
    subject_fields(ui, state, s, edits);
    let open = open_buttons(ui, state, edits);
    ui.small(s.source_name.as_str());
    ui.small(s.camera_note.as_str());
    open
}

/// The synthetic clips' and the first webcam's buttons, and the webcams
/// "find webcams" lists: a click puts a source in the source field.
fn source_picker(ui: &mut egui::Ui, state: &mut TrackUi) {
    ui.horizontal(|ui| {
        for (label, text) in [
            ("walk", "synthetic"),
            ("hop", "synthetic:hop"),
            ("webcam", "webcam:0"),
        ] {
            if ui.button(label).clicked() {
                state.source_text = text.into();
            }
        }
        if ui
            .button("find webcams")
            .on_hover_text("list the V4L2 cameras and their frame sizes")
            .clicked()
        {
            state.webcams = Some(webcam_entries());
        }
    });
    match &state.webcams {
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
                state.source_text = c;
            }
        }
        Some(Err(e)) => {
            error_label(ui, e.as_str());
        }
        None => {}
    }
}

/// The subject's height, start pose and sleeves, and the tracked joints
/// (sleeves and joints apply at once, the rest on Open).
fn subject_fields(
    ui: &mut egui::Ui,
    state: &mut TrackUi,
    s: &TrackSnapshot,
    edits: &mut Vec<TrackEdit>,
) {
    ui.horizontal(|ui| {
        ui.add(egui::TextEdit::singleline(&mut state.height_text).desired_width(48.0));
        ui.label("subject height (m)");
    });
    ui.horizontal(|ui| {
        egui::ComboBox::from_id_salt("start-pose")
            .selected_text(start_pose_label(state.spec.start_pose))
            .show_ui(ui, |ui| {
                for p in [None, Some(StartPose::ArmsDown), Some(StartPose::TPose)] {
                    ui.selectable_value(&mut state.spec.start_pose, p, start_pose_label(p));
                }
            });
        ui.label("start pose");
    })
    .response
    .on_hover_text(
        "the guided start: stand arms down / in a T-pose facing the camera, found by its \
         silhouette; \"body file's frame\" starts a synthetic render from its clip \
         (applies on Open)",
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
            state.spec.sleeves = sleeves;
            edits.push(TrackEdit::Sleeves(sleeves));
        }
    });
    ui.horizontal(|ui| {
        ui.add(egui::TextEdit::singleline(&mut state.joints_text).desired_width(120.0))
            .on_hover_text("auto, upper, all, or joint names separated by commas");
        if ui.button("track these joints").clicked() {
            state.spec.track = state.joints_text.trim().to_string();
            edits.push(TrackEdit::TrackedJoints(state.spec.track.clone()));
        }
    });
}

/// Open (the spec the fields name, when the height is one) and "start
/// again".
fn open_buttons(
    ui: &mut egui::Ui,
    state: &mut TrackUi,
    edits: &mut Vec<TrackEdit>,
) -> Option<TrackSpec> {
    let mut open = None;
    ui.horizontal(|ui| {
        if ui
            .add_enabled(state.opening.is_none(), egui::Button::new("Open"))
            .clicked()
        {
            match state.height_text.trim().parse::<f64>() {
                Ok(h) if (0.5..=2.5).contains(&h) => {
                    open = Some(spec_for(
                        &state.source_text,
                        &state.camera_text,
                        Some(h),
                        &state.spec,
                    ));
                }
                _ => {
                    state.error = Some(format!(
                        "subject height: `{}` is not a height in metres (0.5 – 2.5)",
                        state.height_text
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
    open
}

/// The Record section: Record (into `TrackUi::record_dir`), or Stop and
/// what is written so far.
fn record_section(
    ui: &mut egui::Ui,
    state: &TrackUi,
    s: &TrackSnapshot,
    edits: &mut Vec<TrackEdit>,
) {
    ui.horizontal(|ui| match &s.recording {
        None => {
            if ui
                .button("⏺ Record")
                .on_hover_text(
                    "write the tracked motion to recordings/posecloud-<time>.csv and .bvh",
                )
                .clicked()
            {
                edits.push(TrackEdit::Record(Some(state.record_dir.clone())));
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
}

/// The Play section: the play buttons (returned), the frame slider of a
/// file source, real-time play, and the guided start's buttons.
fn play_section(
    ui: &mut egui::Ui,
    state: &mut TrackUi,
    s: &TrackSnapshot,
    paused: bool,
    settings: &mut TrackSettings,
    edits: &mut Vec<TrackEdit>,
) -> PlayButtons {
    let play = play_buttons(ui, paused);
    if let Some(n) = s.frame_count.filter(|n| *n > 1) {
        let r = ui.add(egui::Slider::new(&mut state.scrub, 0..=n - 1).text("frame"));
        if r.drag_stopped() || (r.changed() && !r.dragged()) {
            edits.push(TrackEdit::Seek(state.scrub));
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
    play
}

/// The Status section: where the likelihood and the keypoint network run,
/// the frame and timings, F and ESS, each arm's depth branch, and what is
/// opening or failed.
fn status_section(
    ui: &mut egui::Ui,
    state: &TrackUi,
    s: &TrackSnapshot,
    fps: f64,
    track_error: Option<&str>,
) {
    ui.label(format!("likelihood: {}", s.backend));
    ui.add(egui::Label::new(format!("keypoints: {}", s.keypoint_backend)).wrap());
    ui.label(format!(
        "frame {} of {} · {:.0} fps · tracker {:.1} ms, segmentation {:.1} ms",
        s.frame_index.map_or("—".into(), |k| k.to_string()),
        s.frame_count.map_or("?".into(), |n| n.to_string()),
        fps,
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
    if let Some((o, _)) = &state.opening {
        ui.horizontal(|ui| {
            ui.spinner();
            ui.label(format!(
                "opening {} … {:.0} s",
                o.what,
                o.started.elapsed().as_secs_f64()
            ));
        });
    }
    if let Some(e) = track_error {
        error_label(ui, e);
    }
    if let Some(e) = &state.error {
        error_label(ui, e.as_str());
    }
}

/// The Filter section's filter, likelihood back end, N, σ_F and diffusion.
fn filter_section(ui: &mut egui::Ui, settings: &mut TrackSettings) {
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
    ui.add(egui::Slider::new(&mut settings.tracker.sigma_trunk, 0.0..=0.3).text("trunk (rad)"));
    ui.add(egui::Slider::new(&mut settings.tracker.sigma_limb, 0.0..=0.5).text("limbs (rad)"));
    ui.checkbox(
        &mut settings.tracker.partitioned,
        "partitioned: trunk, then each limb",
    )
    .on_hover_text("diffuse and weigh one body partition at a time (one likelihood batch each)");
    ui.checkbox(
        &mut settings.tracker.mean_estimate,
        "weighted mean (else MAP)",
    );
}

/// The Filter section's likelihood terms and their σs and priors, the
/// smoothed record, and what the observation holds.
fn likelihood_terms(ui: &mut egui::Ui, settings: &mut TrackSettings, s: &TrackSnapshot) {
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
    ui.add(
        egui::Slider::new(&mut settings.tracker.arm_prior_weight, 0.0..=4.0)
            .text("learned arm prior (0 = off)"),
    )
    .on_hover_text(
        "favours the depth branch of each arm that people hold more often \
         (a density over arm directions from motion capture)",
    );
    ui.add_enabled(
        keypoints,
        egui::Slider::new(&mut settings.tracker.keypoint_lifts, 0..=24).text("lifted arms a frame"),
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
}

/// The View section: the cloud's budget, the ground truth and the frame's
/// overlays.
fn view_section(
    ui: &mut egui::Ui,
    state: &mut TrackUi,
    budget: &mut CloudBudget,
    s: &TrackSnapshot,
) {
    budget.controls(ui, s.track.len());
    ui.checkbox(&mut state.show_truth, "ground truth (white)");
    ui.checkbox(&mut state.overlay, "labels over the frame");
    ui.checkbox(
        &mut state.skeleton_overlay,
        "skeleton and likely particles over the frame",
    );
    ui.checkbox(
        &mut state.keypoint_overlay,
        "detected keypoints over the frame",
    );
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

/// Sends what the panels asked for: the play buttons, the edits in the
/// order they were made, the settings when they changed (and are valid),
/// and starts opening a scene.
fn send(track: &mut TrackRes, state: &mut TrackUi, asked: Requests, settings: TrackSettings) {
    track.play(asked.play);
    if asked.play.reset {
        state.error = None;
    }
    for e in asked.edits {
        track.edit(e);
    }
    if settings != state.settings {
        match settings.validate() {
            Ok(()) => {
                state.settings = settings.clone();
                track.edit(TrackEdit::Settings(settings));
            }
            Err(e) => state.fail("settings", &e),
        }
    }
    if let Some(spec) = asked.open {
        // Opening runs ffprobe, starts a webcam or reads background frames:
        // on a thread of its own, while the old scene keeps playing.
        let (settings, device) = (state.settings.clone(), state.device.clone());
        let what = spec.frames.clone().unwrap_or_else(|| "synthetic".into());
        let build = {
            let spec = spec.clone();
            move || TrackingScene::with_device(spec, settings, device)
        };
        match Opening::start(what, build) {
            Ok(o) => {
                state.error = None;
                state.opening = Some((o, spec));
            }
            Err(e) => state.fail("open", &e),
        }
    }
}

/// A scene opened on its own thread replaces the running one.
fn poll_opening(track: &mut TrackRes, state: &mut TrackUi) {
    let Some(done) = state.opening.as_mut().and_then(|(o, _)| o.poll()) else {
        return;
    };
    let (_, spec) = state.opening.take().expect("polled above");
    match done {
        Ok(scene) => {
            *track = TrackRes::start(scene, state.pacing, "tracker");
            state.spec = spec;
            state.error = None;
            state.sampling.clear();
            // The new scene's first frame replaces the pictures.
            state.tex_version = u64::MAX;
        }
        Err(e) => state.fail("open", &e),
    }
}

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

//! The tracking session's guided start, stage by stage, on synthetic
//! sequences rendered with the default body and the default camera: a
//! still empty scene, someone present from the first frame, a person who
//! enters, holds still and is tracked, leaves and is re-acquired.

use nalgebra::Point3;
use skeleton::Bvh;
use track::{BackendChoice, StartPose, default_body, default_camera};
use track::{FilterSettings, KnownPose, Session, SessionSpec, SessionStep, Stage, Subject};
use vision::{Frame, FrameSource, RenderOptions, SyntheticRenderer};

const FPS: f64 = 30.0;
const W: u32 = 320;
const H: u32 = 240;
/// The camera is this far above the floor (the default camera is at y = 0).
const CAMERA_HEIGHT: f64 = 1.1;

/// Frames held in memory.
struct Frames {
    frames: std::vec::IntoIter<Frame>,
}

impl FrameSource for Frames {
    fn name(&self) -> &str {
        "synthetic session"
    }
    fn size(&self) -> (u32, u32) {
        (W, H)
    }
    fn fps(&self) -> Option<f64> {
        Some(FPS)
    }
    fn frame_count(&self) -> Option<usize> {
        None
    }
    fn next_frame(&mut self) -> vision::Result<Option<Frame>> {
        Ok(self.frames.next())
    }
}

/// What a frame shows.
#[derive(Clone, Copy)]
enum Shot {
    Empty,
    /// The person standing arms-down at (x, z) on the floor.
    Standing(f64, f64),
}

struct Scene {
    body: Bvh,
    renderer: SyntheticRenderer,
}

impl Scene {
    fn new() -> Self {
        let body = default_body(1.7).unwrap();
        let cam = default_camera(W, H, 60.0).unwrap();
        let renderer =
            SyntheticRenderer::new(&body.skeleton, cam, RenderOptions::default()).unwrap();
        Self { body, renderer }
    }

    /// The arms-down pose with its lowest joint on the floor at (x, z).
    fn pose(&self, x: f64, z: f64) -> Vec<f64> {
        let skel = &self.body.skeleton;
        let cam = self.renderer.camera();
        let base = self.body.frames.pose(0);
        let probe =
            track::start_pose_from(skel, StartPose::ArmsDown, cam, Point3::new(x, 0.0, z), base)
                .unwrap();
        let w = skel.forward_kinematics(&probe).unwrap();
        let low = w
            .iter()
            .map(|t| t.translation.vector.y)
            .fold(f64::INFINITY, f64::min);
        let root = Point3::new(x, -CAMERA_HEIGHT - low + 0.02, z);
        track::start_pose_from(skel, StartPose::ArmsDown, cam, root, base).unwrap()
    }

    fn render(&self, shots: &[Shot]) -> Frames {
        // The start pose is a search (hundreds of forward kinematics): one
        // per place, not one per frame.
        let mut poses = std::collections::HashMap::new();
        let frames = shots
            .iter()
            .enumerate()
            .map(|(k, shot)| {
                let t = k as f64 / FPS;
                match *shot {
                    Shot::Empty => self.renderer.render_empty(k as u64, k, t),
                    Shot::Standing(x, z) => {
                        let pose = poses
                            .entry((x.to_bits(), z.to_bits()))
                            .or_insert_with(|| self.pose(x, z));
                        self.renderer.render(pose, k as u64, k, t).unwrap().frame
                    }
                }
            })
            .collect::<Vec<_>>();
        Frames {
            frames: frames.into_iter(),
        }
    }
}

/// A session on `frames` with the regions alone (the stages do not depend
/// on the likelihood terms; one test runs the default, both).
fn session(frames: Frames) -> Session {
    session_with(frames, track::ObservationMode::Regions)
}

fn session_with(frames: Frames, observation: track::ObservationMode) -> Session {
    let settings = FilterSettings {
        particles: 60,
        backend: BackendChoice::Cpu,
        observation,
        ..FilterSettings::default()
    };
    let spec = SessionSpec {
        frames: "synthetic session".into(),
        subject: Subject {
            body: None,
            height: Some(1.7),
        },
        ..SessionSpec::default()
    };
    Session::open(spec, settings, Box::new(frames), None).unwrap()
}

fn run(mut s: Session) -> (Session, Vec<SessionStep>) {
    let mut steps = Vec::new();
    while let Some(step) = s.step().unwrap() {
        if let Some(e) = &step.event {
            eprintln!("frame {}: {e}", step.frame);
        }
        steps.push(step);
    }
    (s, steps)
}

/// The frame of the first step at `stage`.
fn first(steps: &[SessionStep], stage: Stage) -> Option<usize> {
    first_at(steps, stage).map(|s| s.frame)
}

/// The first of `steps` at `stage`.
fn first_at<'a>(
    steps: impl IntoIterator<Item = &'a SessionStep>,
    stage: Stage,
) -> Option<&'a SessionStep> {
    steps.into_iter().find(|s| s.status.stage == stage)
}

/// The first step whose event `what` accepts.
fn first_event(steps: &[SessionStep], what: impl Fn(&str) -> bool) -> Option<&SessionStep> {
    steps.iter().find(|s| s.event.as_deref().is_some_and(&what))
}

fn root_error(step: &SessionStep, x: f64, z: f64) -> f64 {
    let p = &step.tracked.as_ref().unwrap().pose;
    ((p[0] - x).powi(2) + (p[2] - z).powi(2)).sqrt()
}

fn repeat(shot: Shot, n: usize) -> Vec<Shot> {
    vec![shot; n]
}

#[test]
fn a_still_empty_scene_is_learned_in_about_a_second() {
    let scene = Scene::new();
    let (s, steps) = run(session(scene.render(&repeat(Shot::Empty, 40))));
    let learned = first(&steps, Stage::WaitingForPerson).expect("background learned");
    // One second of still frames at 30 frames/s: frame 30 (31 frames).
    assert_eq!(learned, 30);
    assert_eq!(s.background_frames(), 31);
    let progress: Vec<f64> = steps[..learned].iter().map(|s| s.status.progress).collect();
    assert!(progress.windows(2).all(|w| w[1] >= w[0]), "{progress:?}");
    assert!(
        steps[learned]
            .event
            .as_ref()
            .unwrap()
            .contains("background learned")
    );
    // Nobody comes: waiting, asking the person to step in.
    let last = steps.last().unwrap();
    assert_eq!(last.status.stage, Stage::WaitingForPerson);
    assert!(
        last.status.message.contains("step in"),
        "{}",
        last.status.message
    );
    assert!(steps.iter().all(|s| s.tracked.is_none()));
}

#[test]
fn a_scene_that_never_becomes_still_is_not_learned() {
    let scene = Scene::new();
    // Someone walks to and fro from the first frame.
    let shots: Vec<Shot> = (0..45)
        .map(|k| Shot::Standing(-0.8 + 0.12 * (k % 14) as f64, -3.0))
        .collect();
    let (_, steps) = run(session(scene.render(&shots)));
    assert!(
        steps
            .iter()
            .all(|s| s.status.stage == Stage::LearningBackground)
    );
    let m = &steps.last().unwrap().status.message;
    assert!(m.contains("moving"), "{m}");
}

#[test]
fn someone_in_view_from_the_first_frame_is_told_to_step_out_then_tracked() {
    let scene = Scene::new();
    let mut shots = repeat(Shot::Standing(0.0, -3.0), 15);
    // They walk off to the side …
    shots.extend((1..=8).map(|k| Shot::Standing(0.25 * k as f64, -3.0)));
    // … the room is empty …
    shots.extend(repeat(Shot::Empty, 40));
    // … they come back and hold still.
    shots.extend((0..4).map(|k| Shot::Standing(-1.0 + 0.25 * k as f64, -3.2)));
    shots.extend(repeat(Shot::Standing(-0.2, -3.2), 30));
    let (_, steps) = run(session(scene.render(&shots)));
    let told = steps
        .iter()
        .find(|s| s.status.message.contains("someone is in view"))
        .expect("someone-in-view message");
    assert!(told.frame >= 15 && told.frame < 23, "frame {}", told.frame);
    let learned = first(&steps, Stage::WaitingForPerson).unwrap();
    assert!(
        learned >= 23 + 30,
        "learned only once the room is empty: {learned}"
    );
    let placed = first(&steps, Stage::Placing).expect("placed");
    // Still from frame 67 (63 + 4): placed half a second later.
    assert!((67 + 15..=67 + 20).contains(&placed), "placed at {placed}");
    let tracked: Vec<&SessionStep> = steps.iter().filter(|s| s.tracked.is_some()).collect();
    assert!(!tracked.is_empty());
    for s in &tracked {
        let e = root_error(s, -0.2, -3.2);
        assert!(e < 0.3, "frame {}: root {e:.2} m off", s.frame);
    }
}

#[test]
fn a_person_who_enters_and_holds_still_is_placed_and_tracked() {
    let scene = Scene::new();
    let mut shots = repeat(Shot::Empty, 35);
    shots.extend((0..6).map(|k| Shot::Standing(1.4 - 0.25 * k as f64, -2.8)));
    shots.extend(repeat(Shot::Standing(0.15, -2.8), 30));
    let (s, steps) = run(session_with(
        scene.render(&shots),
        track::ObservationMode::Both,
    ));
    assert_eq!(first(&steps, Stage::WaitingForPerson), Some(30));
    let still_from = 41;
    let placed = first(&steps, Stage::Placing).expect("placed");
    // Within 1 s of holding still (0.5 s here).
    assert!(
        placed >= still_from + 14 && placed <= still_from + 30,
        "placed at {placed}"
    );
    let event = steps
        .iter()
        .find(|s| s.frame == placed)
        .and_then(|s| s.event.clone())
        .unwrap();
    assert!(
        event.contains("start pose arms-down") && event.contains("colours learned"),
        "{event}"
    );
    // While the person walks in, they are asked to hold still.
    assert!(
        steps[35..still_from]
            .iter()
            .any(|s| s.status.message.contains("hold still")
                || s.status.message.contains("into view")),
    );
    assert_eq!(steps.last().unwrap().status.stage, Stage::Tracking);
    for st in steps.iter().filter(|s| s.tracked.is_some()) {
        let e = root_error(st, 0.15, -2.8);
        assert!(e < 0.25, "frame {}: root {e:.2} m off", st.frame);
    }
    assert!(s.tracker().is_some() && s.estimate().is_some());
}

#[test]
fn a_person_who_leaves_is_lost_and_reacquired_elsewhere() {
    let scene = Scene::new();
    let mut shots = repeat(Shot::Empty, 32);
    shots.extend(repeat(Shot::Standing(0.3, -3.0), 26));
    shots.extend(repeat(Shot::Empty, 25));
    shots.extend(repeat(Shot::Standing(-0.4, -2.6), 26));
    let (_, steps) = run(session(scene.render(&shots)));
    let lost = first_event(&steps, |e| e.starts_with("lost")).expect("lost");
    assert!(
        lost.event.as_ref().unwrap().contains("left"),
        "{:?}",
        lost.event
    );
    // The person left at frame 58: lost within about 0.5 s.
    assert!(
        (58..=58 + 20).contains(&lost.frame),
        "lost at {}",
        lost.frame
    );
    let after: Vec<&SessionStep> = steps.iter().filter(|s| s.frame > lost.frame).collect();
    let waiting = first_at(after.iter().copied(), Stage::WaitingForPerson).unwrap();
    assert!(waiting.status.reacquiring && waiting.status.message.starts_with("lost"));
    let replaced = first_at(after.iter().copied(), Stage::Placing).expect("re-acquired");
    assert!(replaced.frame >= 83 + 14, "re-placed at {}", replaced.frame);
    assert!(root_error(replaced, -0.4, -2.6) < 0.3);
    assert_eq!(steps.last().unwrap().status.stage, Stage::Tracking);
}

#[test]
fn a_ghost_in_the_background_is_relearned() {
    // The person stands still long enough to be learned as background,
    // then walks away: the place they stood is a "ghost", relearned; then
    // they come back and are placed.
    let scene = Scene::new();
    let mut shots = repeat(Shot::Standing(0.5, -3.0), 34);
    shots.extend((1..=4).map(|k| Shot::Standing(0.5 + 0.35 * k as f64, -3.0)));
    shots.extend(repeat(Shot::Empty, 25));
    shots.extend(repeat(Shot::Standing(-0.3, -3.0), 26));
    let (_, steps) = run(session(scene.render(&shots)));
    let ghost = first_event(&steps, |e| e.contains("relearned")).expect("ghost relearned");
    assert!(ghost.frame > 34, "{}", ghost.frame);
    let placed = first_at(&steps, Stage::Placing).expect("placed");
    assert!(placed.frame > ghost.frame);
    assert!(
        root_error(placed, -0.3, -3.0) < 0.3,
        "{}",
        root_error(placed, -0.3, -3.0)
    );
}

#[test]
fn a_known_initial_pose_needs_a_camera_file_and_bad_settings_name_the_field() {
    let scene = Scene::new();
    // An arm-prior table with a bad second row, and one that is missing.
    let bad_table = std::env::temp_dir().join(format!("bad_table_{}.csv", std::process::id()));
    std::fs::write(&bad_table, "u_x,u_y,u_z,f_x,f_y,f_z\n0,-1,0,0,-1\n").unwrap();
    let bad_table_error = format!("arm_prior_table {0}: {0}:2:", bad_table.display());
    let missing_table = bad_table.with_extension("missing.csv");
    let missing_table_error = format!("arm_prior_table {}", missing_table.display());
    let cases = [
        (
            SessionSpec {
                init: KnownPose::from_flags(None, Some(0)),
                ..SessionSpec::default()
            },
            FilterSettings::default(),
            "camera file",
        ),
        (
            SessionSpec::default(),
            FilterSettings {
                particles: 10_000_000_000,
                ..FilterSettings::default()
            },
            "particles 10000000000",
        ),
        (
            SessionSpec {
                subject: Subject {
                    body: None,
                    height: Some(7.0),
                },
                ..SessionSpec::default()
            },
            FilterSettings::default(),
            "subject_height 7",
        ),
        (
            SessionSpec {
                arm_prior_table: Some(bad_table.clone()),
                ..SessionSpec::default()
            },
            FilterSettings::default(),
            &bad_table_error,
        ),
        (
            SessionSpec {
                arm_prior_table: Some(missing_table.clone()),
                ..SessionSpec::default()
            },
            FilterSettings::default(),
            &missing_table_error,
        ),
    ];
    for (spec, settings, flag) in cases {
        let frames = Box::new(scene.render(&[Shot::Empty]));
        let e = Session::open(spec, settings, frames, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains(flag), "{e}");
    }
    std::fs::remove_file(&bad_table).unwrap();
}

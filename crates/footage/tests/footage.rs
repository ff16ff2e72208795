//! The footage generator: phases, truth against the rendered pixels, the
//! BVH round trip and the angle columns (small frames, few of them).

use footage::{
    FootageOptions, Phase, Preset, SessionRenderer, TRUTH_JOINTS, interior_angle_deg,
    render_session, truth_csv_header,
};
use nalgebra::Point3;
use skeleton::Bvh;

fn small(preset: Preset) -> FootageOptions {
    let mut o = FootageOptions::new(preset);
    o.width = 160;
    o.height = 120;
    o
}

fn span(session: &SessionRenderer, phase: Phase) -> std::ops::Range<usize> {
    let p = session
        .phases()
        .iter()
        .find(|p| p.phase == phase)
        .unwrap_or_else(|| panic!("no {phase:?} phase"));
    p.start..p.end
}

#[test]
fn phases_follow_the_documented_timing() {
    let o = small(Preset::A);
    let s = SessionRenderer::new(&o).unwrap();
    let names: Vec<Phase> = s.phases().iter().map(|p| p.phase).collect();
    assert_eq!(
        names,
        [Phase::Empty, Phase::WalkIn, Phase::Stand, Phase::Move]
    );
    // Contiguous from frame 0 to the end.
    let mut next = 0;
    for p in s.phases() {
        assert_eq!(p.start, next);
        next = p.end;
    }
    assert_eq!(next, s.len());
    let fps = o.fps;
    assert_eq!(span(&s, Phase::Empty).len(), (1.5 * fps) as usize);
    assert_eq!(span(&s, Phase::Stand).len(), (1.5 * fps) as usize);
    assert_eq!(span(&s, Phase::Move).len(), (7.0 * fps) as usize);
    let walk = span(&s, Phase::WalkIn).len() as f64 / fps;
    assert!((1.5..4.0).contains(&walk), "walk-in {walk} s");
    let total = s.len() as f64 / fps;
    assert!((11.0..14.5).contains(&total), "session {total} s");
    for i in [0, 44, 45, 100, s.len() - 1] {
        let p = s.phases().iter().find(|p| (p.start..p.end).contains(&i));
        assert_eq!(s.phase(i), p.unwrap().phase);
    }

    let mut leave = small(Preset::B);
    leave.leave = true;
    let s = SessionRenderer::new(&leave).unwrap();
    let names: Vec<Phase> = s.phases().iter().map(|p| p.phase).collect();
    assert_eq!(
        names,
        [
            Phase::Empty,
            Phase::WalkIn,
            Phase::Stand,
            Phase::Move,
            Phase::WalkOut,
            Phase::Away,
            Phase::WalkBack,
            Phase::StandAgain
        ]
    );

    let mut short = small(Preset::A);
    short.frames = Some(50);
    let s = SessionRenderer::new(&short).unwrap();
    assert_eq!(s.len(), 50);
    assert_eq!(s.phases().last().unwrap().end, 50);
    assert_eq!(s.phases().len(), 2);
}

#[test]
fn the_empty_room_has_no_body_and_changes_only_by_noise() {
    let mut o = small(Preset::A);
    o.frames = Some(3);
    let f = render_session(&o).unwrap();
    assert_eq!(f.frames.len(), 3);
    for (mask, t) in f.masks.iter().zip(&f.truth) {
        assert!(mask.iter().all(|&m| m == 0));
        assert_eq!(t.phase, Phase::Empty);
        assert!(!t.present && t.body_pixels == 0 && t.joints.is_none());
    }
    let (a, b) = (&f.frames[0].rgb, &f.frames[1].rgb);
    assert_ne!(a, b, "the noise must change from frame to frame");
    let diffs: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(x, y)| (f64::from(*x) - f64::from(*y)).abs())
        .collect();
    let mean = diffs.iter().sum::<f64>() / diffs.len() as f64;
    let max = diffs.iter().copied().fold(0.0, f64::max);
    assert!(mean > 0.5 && mean < 5.0, "mean |difference| {mean}");
    assert!(max < 30.0, "max difference {max}");
    let avg = |v: &[u8]| v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len() as f64;
    assert!((avg(a) - avg(b)).abs() < 0.3);

    // Without noise the empty frames are identical.
    o.noise = 0.0;
    let f = render_session(&o).unwrap();
    assert_eq!(f.frames[0].rgb, f.frames[2].rgb);
}

#[test]
fn the_standing_phase_is_still() {
    let mut o = small(Preset::C);
    o.noise = 0.0;
    let s = SessionRenderer::new(&o).unwrap();
    let stand = span(&s, Phase::Stand);
    for i in stand.clone() {
        assert_eq!(s.pose(i), s.pose(stand.start));
    }
    let a = s.render(stand.start).unwrap();
    let b = s.render(stand.end - 1).unwrap();
    assert_eq!(a.frame.rgb, b.frame.rgb);
    assert_eq!(a.truth.joints, b.truth.joints);
    assert!(a.truth.present && a.truth.body_pixels > 300);
    // Arms down, about 10° from the body, elbows and knees nearly straight.
    let ang = a.truth.angles.unwrap();
    for v in ang {
        assert!(v > 165.0, "{ang:?}");
    }
    let sh = a.truth.joint("right_shoulder").unwrap();
    let wr = a.truth.joint("right_wrist").unwrap();
    let down = [wr[0] - sh[0], wr[1] - sh[1], wr[2] - sh[2]];
    let n = (down[0] * down[0] + down[1] * down[1] + down[2] * down[2]).sqrt();
    let from_vertical = (-down[1] / n).acos().to_degrees();
    assert!((5.0..16.0).contains(&from_vertical), "{from_vertical}°");
    // Facing the camera: the left shoulder is on the image's right.
    let (l, r) = (
        a.truth.pixel("left_shoulder").unwrap(),
        a.truth.pixel("right_shoulder").unwrap(),
    );
    assert!(l[0] > r[0]);
}

#[test]
fn truth_joints_project_onto_body_pixels() {
    for preset in Preset::ALL {
        let o = small(preset);
        let s = SessionRenderer::new(&o).unwrap();
        let walk = span(&s, Phase::WalkIn);
        let moves = span(&s, Phase::Move);
        let frames = [
            walk.start + walk.len() / 2,
            walk.end - 1,
            span(&s, Phase::Stand).start,
            moves.start + moves.len() / 5,
            moves.start + moves.len() / 2,
            moves.start + 3 * moves.len() / 4,
        ];
        for i in frames {
            let f = s.render(i).unwrap();
            let (w, h) = (o.width as i64, o.height as i64);
            let body = |x: i64, y: i64| {
                (0..w).contains(&x) && (0..h).contains(&y) && f.mask[(y * w + x) as usize] == 1
            };
            let pixels = f.truth.pixels.as_ref().unwrap();
            let mut inside = 0;
            for (k, p) in pixels.iter().enumerate() {
                let [u, v] = p.unwrap();
                let (x, y) = (u.floor() as i64, v.floor() as i64);
                if !((0..w).contains(&x) && (0..h).contains(&y)) {
                    continue;
                }
                inside += 1;
                // At 160 × 120 a forearm is 2–3 pixels wide: allow the
                // neighbouring pixel.
                let near = (-1..=1).any(|dy| (-1..=1).any(|dx| body(x + dx, y + dy)));
                assert!(
                    near,
                    "{preset:?} frame {i} ({:?}): {} at ({u:.1}, {v:.1}) is not on the body",
                    f.truth.phase, TRUTH_JOINTS[k].0
                );
            }
            if f.truth.phase != Phase::WalkIn {
                assert_eq!(inside, TRUTH_JOINTS.len(), "{preset:?} frame {i}");
            }
            assert!(f.truth.present);
        }
        // The first walking frame is still out of view.
        let first = s.render(walk.start).unwrap();
        assert!(!first.truth.present, "{preset:?}");
        assert!(first.truth.joints.is_some());
    }
}

#[test]
fn the_bvh_reads_back_with_the_truth_positions() {
    let mut o = small(Preset::B);
    o.frames = Some(240);
    let s = SessionRenderer::new(&o).unwrap();
    let text = s.bvh().unwrap().to_bvh_string().unwrap();
    let back = Bvh::parse(&text, "truth.bvh").unwrap();
    assert_eq!(back.frames.len(), 240);
    assert!((back.frame_time - 1.0 / 30.0).abs() < 1e-6);
    // The CMU joint names the tracker looks up.
    for (_, name) in TRUTH_JOINTS {
        back.skeleton.find(name).unwrap();
    }
    for i in [50, 80, 120, 200, 239] {
        let t = s.render(i).unwrap().truth;
        let world = back.forward_kinematics(i).unwrap();
        let joints = t.joints.unwrap();
        for (k, (_, name)) in TRUTH_JOINTS.iter().enumerate() {
            let p = world[back.skeleton.find(name).unwrap()].translation.vector;
            let d = (p - nalgebra::Vector3::from(joints[k])).norm();
            assert!(d < 1e-4, "frame {i} {name}: {d} m");
        }
    }
    // The subject's height: crown ≈ 1.86 m (preset b) when standing.
    let stand = span(&s, Phase::Stand).start;
    let crown = s.render(stand).unwrap().truth.joint("head_top").unwrap()[1];
    assert!((crown - 1.86).abs() < 0.03, "crown at {crown} m");
}

#[test]
fn the_angle_columns_match_the_joint_positions() {
    let o = small(Preset::A);
    let s = SessionRenderer::new(&o).unwrap();
    let moves = span(&s, Phase::Move);
    let (mut bent, mut straight) = (false, false);
    let header_columns = truth_csv_header().split(',').count();
    for i in moves.step_by(15) {
        let t = s.render(i).unwrap().truth;
        assert_eq!(t.csv_line().split(',').count(), header_columns);
        let j = |n: &str| t.joint(n).unwrap();
        let [re, le, rk, lk] = t.angles.unwrap();
        let check = |col: f64, a: &str, b: &str, c: &str| {
            let v = interior_angle_deg(j(a), j(b), j(c));
            assert!((col - v).abs() < 1e-9, "{b}: {col} vs {v}");
        };
        check(re, "right_shoulder", "right_elbow", "right_wrist");
        check(le, "left_shoulder", "left_elbow", "left_wrist");
        check(rk, "right_hip", "right_knee", "right_ankle");
        check(lk, "left_hip", "left_knee", "left_ankle");
        bent |= re.min(le) < 110.0;
        straight |= re.max(le) > 165.0;
        // The CSV's columns carry the same numbers (3 decimals).
        let line = t.csv_line();
        let cols: Vec<&str> = line.split(',').collect();
        let re_csv: f64 = cols[header_columns - 4].parse().unwrap();
        assert!((re_csv - re).abs() < 1e-3);
    }
    assert!(bent && straight, "the moves bend and straighten the elbows");
}

#[test]
fn the_camera_is_a_webcam_in_front_of_the_subject() {
    for preset in Preset::ALL {
        let o = small(preset);
        let s = SessionRenderer::new(&o).unwrap();
        let cam = s.camera();
        let hfov = 2.0 * (0.5 * f64::from(cam.width()) / cam.fx()).atan();
        assert!((60.0..=65.0).contains(&hfov.to_degrees()), "{preset:?}");
        let eye = cam.world_from_camera().translation.vector;
        assert!((1.2..=1.5).contains(&eye.y), "{preset:?}");
        let t = s.render(span(&s, Phase::Stand).start).unwrap().truth;
        let pelvis = t.joint("pelvis").unwrap();
        let (_, _, depth) = cam.project(&Point3::from(pelvis)).unwrap();
        assert!((2.5..=3.5).contains(&depth), "{preset:?} {depth}");
    }
}

#[test]
#[ignore = "needs the ffmpeg program (CI installs it and runs the ignored tests)"]
fn files_are_written_when_ffmpeg_is_there() {
    assert!(
        std::process::Command::new("ffmpeg")
            .arg("-version")
            .output()
            .is_ok(),
        "this test needs the ffmpeg program (apt-get install ffmpeg)"
    );
    let mut o = small(Preset::A);
    o.frames = Some(12);
    o.tag = "t".into();
    let dir = std::env::temp_dir().join(format!("footage-test-{}", std::process::id()));
    let report = footage::write_session(&o, &dir).unwrap();
    assert_eq!(report.frames, 12);
    assert!(dir.join("session_t.mp4").metadata().unwrap().len() > 1000);
    let csv = std::fs::read_to_string(dir.join("truth_t.csv")).unwrap();
    assert_eq!(csv.lines().count(), 13);
    assert_eq!(csv.lines().next().unwrap(), truth_csv_header());
    let bvh = Bvh::load(dir.join("truth_t.bvh")).unwrap();
    assert_eq!(bvh.frames.len(), 12);
    let cam = vision::load_camera(dir.join("camera_t.toml")).unwrap();
    assert_eq!((cam.width(), cam.height()), (160, 120));
    let meta = std::fs::read_to_string(dir.join("meta_t.json")).unwrap();
    assert!(meta.contains("\"phases\"") && meta.contains("\"seed\": 1"));
    std::fs::remove_dir_all(&dir).unwrap();
}

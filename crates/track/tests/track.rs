//! The heuristics on synthetic data (RTPF §IV-C, §V): kinematic flips keep
//! the projected joint centres, the simplex lowers F, PFRTH follows a
//! short clip. Small images and few particles keep these fast in debug.

mod common;

use common::{preset_camera, upper_body_pfrth};
use labels::{Camera, IDENTITY_LABEL_MAP, LabelMap, Observation};
use skeleton::nalgebra::Point3;
use track::LockstepSimplex;
use track::flip::{ArmBuffers, FlipArm, flip_hypotheses};
use track::synthetic::{render_observation, upper_body_parts};
use track::{
    Arm, BackendChoice, FilterKind, Side, TrackedBody, Tracker, TrackerConfig, search_root_position,
};

/// The preset with the right arm raised forward and the elbow bent.
fn arm_pose(body: &TrackedBody, raise: f64, elbow: f64) -> Vec<f64> {
    let skel = body.skeleton();
    let mut pose = body.base().to_vec();
    let sh = skel.param_range(skel.find("r_shoulder").unwrap()).start;
    let el = skel.param_range(skel.find("r_elbow").unwrap()).start;
    pose[sh + 1] = raise; // about x: forward
    pose[sh] = 0.3; // about z: sideways
    pose[el] = elbow;
    assert!(skel.within_limits(&pose));
    pose
}

/// The preset before an 80 × 60 [`preset_camera`], with the upper-body
/// classes.
fn small_scene() -> (TrackedBody, Camera, LabelMap) {
    (
        TrackedBody::rtpf_upper_body(),
        preset_camera(80, 60),
        upper_body_parts(),
    )
}

/// Each pose of `truth` rendered with 1% of its pixels flipped (seeded by
/// its frame).
fn observations(
    body: &TrackedBody,
    cam: &Camera,
    map: &LabelMap,
    truth: &[Vec<f64>],
) -> Vec<Observation> {
    truth
        .iter()
        .enumerate()
        .map(|(k, p)| render_observation(body, cam, p, map, 0.01, k as u64).unwrap())
        .collect()
}

#[test]
fn kinematic_flips_project_to_the_same_image_points() {
    let body = TrackedBody::rtpf_upper_body();
    let skel = body.skeleton();
    let cam = preset_camera(160, 120);
    let pose = arm_pose(&body, -0.9, 0.8);
    let arms: Vec<FlipArm> = [Side::Left, Side::Right]
        .into_iter()
        .filter_map(|s| FlipArm::new(&body, Arm::find(skel, s).unwrap(), &pose))
        .collect();
    assert_eq!(arms.len(), 2, "both arms can flip");
    let centre = Point3::from(cam.world_from_camera().translation.vector);
    let mut buffers = ArmBuffers::default();
    let made = flip_hypotheses(&body, &arms, &centre, &body.state_of(&pose), &mut buffers);
    let out = buffers.proposals();
    assert!((1..=15).contains(&made), "{made} hypotheses");
    let world = skel.forward_kinematics(&pose).unwrap();
    let right = arms
        .iter()
        .find(|a| a.arm == Arm::find(skel, Side::Right).unwrap())
        .unwrap();
    let project = |w: &[skeleton::nalgebra::Isometry3<f64>], j: usize| {
        let (u, v, _) = cam.project(&Point3::from(w[j].translation.vector)).unwrap();
        (u, v)
    };
    let mut flipped_elbows = 0;
    for s in out.chunks(body.dim()) {
        assert!(body.within_limits(s), "hypotheses respect the joint limits");
        let w = skel.forward_kinematics(&body.full_pose(s)).unwrap();
        for a in &arms {
            for j in [a.arm.shoulder, a.arm.elbow, a.arm.wrist] {
                let (p, q) = (project(&world, j), project(&w, j));
                assert!(
                    (p.0 - q.0).abs() < 0.05 && (p.1 - q.1).abs() < 0.05,
                    "joint {j}: {p:?} vs {q:?}"
                );
            }
        }
        let e = |w: &[skeleton::nalgebra::Isometry3<f64>]| w[right.arm.elbow].translation.vector;
        if (e(&w) - e(&world)).norm() > 0.05 {
            flipped_elbows += 1;
            // Same upper-arm length, different depth: the flipped elbow.
            let s0 = world[right.arm.shoulder].translation.vector;
            assert!(((e(&w) - s0).norm() - (e(&world) - s0).norm()).abs() < 1e-3);
        }
    }
    assert!(
        flipped_elbows >= 1,
        "the right elbow flips forward/backward"
    );
}

#[test]
fn the_simplex_lowers_the_non_overlap() {
    let (body, cam, map) = small_scene();
    let truth = arm_pose(&body, -0.6, 0.9);
    let obs = render_observation(&body, &cam, &truth, &map, 0.01, 0).unwrap();
    let config = TrackerConfig {
        particles: 1,
        backend: BackendChoice::Cpu,
        label_map: map,
        ..TrackerConfig::default()
    };
    let mut start = body.state_of(&truth);
    let el = body
        .params()
        .iter()
        .position(|p| p.name == "r_elbow.0")
        .unwrap();
    let sh = body
        .params()
        .iter()
        .position(|p| p.name == "r_shoulder.1")
        .unwrap();
    start[el] -= 0.4;
    start[sh] += 0.3;
    start[0] += 0.04;
    let mut tracker = Tracker::new(body.clone(), cam, &truth, None, config).unwrap();
    let f0 = tracker.score_states(&obs, &start).unwrap()[0].1;
    let steps = vec![0.08; body.dim()];
    let mut simplex = LockstepSimplex::default();
    simplex.add_group(&start, 60);
    let all: Vec<usize> = (0..body.dim()).collect();
    let scored = simplex
        .run(&body, &steps, &all, &mut |b, out| {
            *out = tracker.score_states(&obs, b)?;
            Ok(())
        })
        .unwrap();
    let f1 = simplex.score(0, 0).1;
    assert!(scored > body.dim() + 60);
    // A correct simplex roughly halves F here (0.5 → < 0.3 when written);
    // 0.8 f0 leaves room for a different descent path.
    assert!(f1 < 0.8 * f0, "F {f0:.3} → {f1:.3}");
    assert!(body.within_limits(simplex.vertex(0, 0)));
}

#[test]
fn pfrth_follows_a_short_elbow_clip() {
    let (body, cam, map) = small_scene();
    // 16 frames: the arm rises and the elbow bends and unbends.
    let truth: Vec<Vec<f64>> = (0..16)
        .map(|k| {
            let t = k as f64 / 15.0;
            let mut p = arm_pose(
                &body,
                -0.4 - 0.4 * t,
                0.5 + 0.6 * (std::f64::consts::PI * t).sin(),
            );
            p[0] += 0.05 * t; // the root drifts sideways
            p
        })
        .collect();
    let obs = observations(&body, &cam, &map, &truth);
    // The PCA prior (RTPF §IV-D) from a corpus of the same kind of motion
    // at other amplitudes: it settles the depth ambiguity that the flips
    // expose (a flipped elbow projects to the same image points).
    let mut corpus = skeleton::PoseBatch::rest(body.skeleton(), 0);
    for k in 0..60 {
        let t = k as f64 / 59.0;
        let p = arm_pose(
            &body,
            -0.3 - 0.6 * t,
            0.4 + 0.8 * (std::f64::consts::PI * t * 1.3).sin().abs(),
        );
        corpus.push(&p).unwrap();
    }
    let prior = track::PosePrior::learn(&body, &[&corpus], 0.95).unwrap();
    let config = TrackerConfig {
        seed: 3,
        ..upper_body_pfrth()
    };
    let mut tracker = Tracker::new(body.clone(), cam, &truth[0], Some(prior), config).unwrap();
    assert!(tracker.describe().starts_with("CPU"));
    let arm = Arm::find(body.skeleton(), Side::Right).unwrap();
    let flex = |p: &[f64]| arm.flexion(&body.skeleton().forward_kinematics(p).unwrap());
    let mut se = 0.0;
    for (o, t) in obs.iter().zip(&truth) {
        let r = *tracker.step(o).unwrap().report();
        assert!((r.ess - 0.0).abs() > 0.0 && r.ess <= 200.0 + 1e-9);
        assert_eq!(tracker.weights().len(), 200);
        let e = flex(tracker.frame().map_pose()) - flex(t);
        eprintln!(
            "frame {}: F {:.3}, elbow error {:.1}°, ESS {:.1}, flips {}, simplex groups {}",
            r.frame,
            r.residual,
            e.to_degrees(),
            r.ess,
            r.flips,
            r.simplex_groups
        );
        se += e * e;
    }
    let rmse = (se / truth.len() as f64).sqrt().to_degrees();
    // The elbow sweeps 34° (0.5 → 1.1 rad). With this seed PFRTH lags the
    // fastest part of the sweep by up to 20° (RMSE 11.4° when written);
    // without the prior or the heuristics the error was 18–29°.
    assert!(rmse < 15.0, "right-elbow RMSE {rmse:.1}°");
}

#[test]
fn root_search_finds_a_shifted_subject_and_bad_settings_are_errors() {
    let body = TrackedBody::rtpf_upper_body();
    let cam = preset_camera(80, 60);
    let mut truth = body.base().to_vec();
    truth[0] += 0.2;
    truth[2] -= 0.3;
    let obs = render_observation(&body, &cam, &truth, &IDENTITY_LABEL_MAP, 0.0, 0).unwrap();
    let config = TrackerConfig {
        particles: 4,
        backend: BackendChoice::Cpu,
        ..TrackerConfig::default()
    };
    let mut tracker =
        Tracker::new(body.clone(), cam.clone(), body.base(), None, config.clone()).unwrap();
    let (found, f) =
        search_root_position(&mut tracker, &obs, body.base(), [0.4, 0.2, 0.6], 5).unwrap();
    assert!(
        (found[0] - truth[0]).abs() < 0.05 && (found[2] - truth[2]).abs() < 0.1,
        "{:?}",
        &found[..3]
    );
    assert!(f < 0.3);
    // Errors name what is wrong.
    let bad = TrackerConfig {
        particles: 0,
        ..config.clone()
    };
    let e = Tracker::new(body.clone(), cam.clone(), body.base(), None, bad).unwrap_err();
    assert!(e.to_string().contains("particles"), "{e}");
    let mut nan = body.base().to_vec();
    nan[4] = f64::NAN;
    assert!(Tracker::new(body.clone(), cam.clone(), &nan, None, config.clone()).is_err());
    assert!(
        tracker
            .set_config(TrackerConfig {
                sigma_f: -1.0,
                ..config
            })
            .is_err()
    );
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn gpu_and_cpu_back_ends_track_identically() {
    let (body, cam, map) = small_scene();
    let truth: Vec<Vec<f64>> = (0..4)
        .map(|k| arm_pose(&body, -0.5, 0.5 + 0.1 * k as f64))
        .collect();
    let run = |backend| {
        let config = TrackerConfig {
            particles: 64,
            filter: FilterKind::Pfrth,
            backend,
            label_map: map,
            ..TrackerConfig::default()
        };
        let mut t = Tracker::new(body.clone(), cam.clone(), &truth[0], None, config).unwrap();
        let reports: Vec<_> = truth
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let o = render_observation(&body, &cam, p, &map, 0.01, k as u64).unwrap();
                t.step(&o).unwrap().clone()
            })
            .collect();
        (t.describe(), reports)
    };
    let (gpu_name, gpu) = run(BackendChoice::Gpu);
    let (_, cpu) = run(BackendChoice::Cpu);
    assert!(gpu_name.starts_with("GPU"), "{gpu_name}");
    if gpu_name.contains("llvmpipe") || gpu_name.contains("lavapipe") {
        // Same counts bit for bit (crates/gpu), hence the same filter run.
        for (g, c) in gpu.iter().zip(&cpu) {
            assert_eq!(g.map_pose(), c.map_pose());
            assert_eq!(g.report().residual, c.report().residual);
        }
    } else {
        for (g, c) in gpu.iter().zip(&cpu) {
            assert!((g.report().residual - c.report().residual).abs() < 0.05);
        }
    }
}

/// A tracker given the app's device builds every GPU back end on it, also
/// after `set_config` switches back ends, and keeps tracking the same cloud.
#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn new_back_ends_are_built_on_the_device_the_tracker_was_given() {
    let g = gpu::HeadlessGpu::new().expect("a GPU adapter (lavapipe in CI)");
    let shared = track::SharedDevice {
        device: g.device.clone(),
        queue: g.queue.clone(),
    };
    let (body, cam, map) = small_scene();
    let pose = arm_pose(&body, -0.5, 0.6);
    let obs = render_observation(&body, &cam, &pose, &map, 0.01, 3).unwrap();
    let config = TrackerConfig {
        particles: 32,
        backend: BackendChoice::Gpu,
        label_map: map,
        ..TrackerConfig::default()
    };
    let mut t = Tracker::with_device(body, cam, &pose, None, config.clone(), Some(shared)).unwrap();
    assert!(t.backend().is_shared(), "{}", t.describe());
    assert!(
        t.describe().ends_with(", the app's device"),
        "{}",
        t.describe()
    );
    t.step(&obs).unwrap();
    for backend in [BackendChoice::Cpu, BackendChoice::Gpu] {
        let cloud = t.particles().to_vec();
        t.set_config(TrackerConfig {
            backend,
            ..config.clone()
        })
        .unwrap();
        assert_eq!(t.particles(), &cloud[..], "the cloud is kept");
        assert_eq!(t.backend().is_gpu(), backend == BackendChoice::Gpu);
        assert_eq!(t.backend().is_shared(), backend == BackendChoice::Gpu);
        assert!(t.step(&obs).unwrap().report().residual.is_finite());
    }
}

#[test]
fn partitioned_sampling_moves_one_partition_at_a_time_and_fits_closer() {
    let body = TrackedBody::rtpf_upper_body();
    // Trunk (global position first), then each arm: clavicle, shoulder,
    // elbow, forearm; a clavicle diffuses like the trunk.
    let parts = body.partitions();
    let names = |k: usize| -> Vec<&str> {
        parts[k]
            .iter()
            .map(|&i| body.params()[i].name.as_str())
            .collect()
    };
    assert_eq!(parts.len(), 3, "{parts:?}");
    assert_eq!(
        &parts[0][..3],
        &[0, 1, 2],
        "the global position is the trunk's"
    );
    assert!(
        names(0)
            .iter()
            .all(|n| !n.contains("shoulder") && !n.contains("elbow"))
    );
    for (k, side) in [(1, "l_"), (2, "r_")] {
        let n = names(k);
        assert!(n.iter().all(|n| n.starts_with(side)), "{n:?}");
        assert!(
            n.iter().any(|n| n.starts_with(&format!("{side}shoulder"))),
            "{n:?}"
        );
        assert!(
            n.iter().any(|n| n.starts_with(&format!("{side}elbow"))),
            "{n:?}"
        );
    }
    for p in body.params() {
        assert_eq!(
            p.limb,
            p.name.contains("shoulder")
                || p.name.contains("elbow")
                || p.name.contains("wrist")
                || p.name.contains("forearm"),
            "{}",
            p.name
        );
    }
    let total: usize = parts.iter().map(Vec::len).sum();
    assert_eq!(total, body.dim());

    // Both arms move at once; PFS with and without partitions.
    let cam = preset_camera(80, 60);
    let map = upper_body_parts();
    let skel = body.skeleton();
    let l_sh = skel.param_range(skel.find("l_shoulder").unwrap()).start;
    let truth: Vec<Vec<f64>> = (0..12)
        .map(|k| {
            let t = k as f64 / 11.0;
            let mut p = arm_pose(&body, -0.3 - 0.6 * t, 0.4 + 0.7 * t);
            p[l_sh + 1] = -0.8 * t;
            p[0] += 0.04 * t;
            assert!(skel.within_limits(&p));
            p
        })
        .collect();
    let obs = observations(&body, &cam, &map, &truth);
    let run = |partitioned: bool| {
        let config = TrackerConfig {
            particles: 100,
            filter: FilterKind::Pfs,
            backend: BackendChoice::Cpu,
            label_map: map,
            sigma_rotation: 0.12,
            sigma_f: 0.05,
            partitioned,
            seed: 5,
            ..TrackerConfig::default()
        };
        let mut tracker = Tracker::new(body.clone(), cam.clone(), &truth[0], None, config).unwrap();
        let mut f = 0.0;
        for o in &obs {
            let r = tracker.step(o).unwrap().report();
            assert_eq!(r.evaluations, if partitioned { 300 } else { 100 });
            f += r.residual;
        }
        f / obs.len() as f64
    };
    let (plain, parted) = (run(false), run(true));
    eprintln!("mean F: all at once {plain:.3}, partitioned {parted:.3}");
    assert!(
        parted < plain,
        "mean F: all at once {plain:.3}, partitioned {parted:.3}"
    );
}

/// Checks that `tracker`'s frame holds its cloud: each particle's joints
/// are its forward kinematics, the weights are the tracker's, the top K are
/// the heaviest (equal weights: the later first), the first the MAP, and
/// the estimate is the MAP's or the mean's joints, projected by the camera.
fn assert_frame_is_the_clouds(tracker: &Tracker) {
    let f = tracker.frame();
    let (body, cam) = (tracker.body(), tracker.camera());
    let skel = body.skeleton();
    let (n, j, d) = (tracker.weights().len(), skel.len(), body.dim());
    let point = |w: &skeleton::nalgebra::Isometry3<f64>| {
        let v = w.translation.vector;
        [v.x as f32, v.y as f32, v.z as f32]
    };
    let pixel = |w: &skeleton::nalgebra::Isometry3<f64>| {
        let (u, v, _) = cam.project(&Point3::from(w.translation.vector)).unwrap();
        [u as f32, v as f32]
    };
    assert_eq!((f.len(), f.joints()), (n, j));
    assert_eq!(f.image_size(), (cam.width(), cam.height()));
    assert_eq!(f.weights(), tracker.weights());
    assert_eq!(f.cloud().len(), n * j);
    let worlds: Vec<_> = (0..n)
        .map(|i| skel.forward_kinematics(&tracker.full_pose(i)).unwrap())
        .collect();
    for (i, world) in worlds.iter().enumerate() {
        let want: Vec<[f32; 3]> = world.iter().map(point).collect();
        assert_eq!(f.particle(i), &want[..], "particle {i}");
    }
    let w = tracker.weights();
    let mut heaviest: Vec<usize> = (0..n).collect();
    heaviest.sort_by(|&a, &b| w[b].total_cmp(&w[a]).then(b.cmp(&a)));
    let k = tracker.config().top_particles.min(n);
    assert_eq!(f.top(), &heaviest[..k]);
    let top_px: Vec<[f32; 2]> = f
        .top()
        .iter()
        .flat_map(|&i| worlds[i].iter().map(pixel))
        .collect();
    assert_eq!(f.top_px(), &top_px[..]);
    assert_eq!(f.map_pose(), &tracker.full_pose(heaviest[0])[..]);
    let mut mean = vec![0.0; d];
    for (x, &wi) in tracker.particles().chunks(d).zip(w) {
        for (m, v) in mean.iter_mut().zip(x) {
            *m += wi * v;
        }
    }
    assert_eq!(f.mean_pose(), &body.full_pose(&mean)[..]);
    let estimate = if tracker.config().mean_estimate {
        skel.forward_kinematics(f.mean_pose()).unwrap()
    } else {
        worlds[heaviest[0]].clone()
    };
    assert_eq!(
        f.estimate_pose(),
        if tracker.config().mean_estimate {
            f.mean_pose()
        } else {
            f.map_pose()
        }
    );
    assert_eq!(
        f.estimate(),
        &estimate.iter().map(point).collect::<Vec<_>>()[..]
    );
    assert_eq!(
        f.estimate_px(),
        &estimate.iter().map(pixel).collect::<Vec<_>>()[..]
    );
}

/// The frame a step publishes holds the cloud's joints, whether the
/// step's last batch weighed every particle (PFS: its transforms are
/// reused) or a simplex scored some in batches of its own (HPOR with
/// partitions: the cloud's transforms are computed once more); a reset
/// publishes frame 0, and a change of estimate publishes again.
#[test]
fn the_track_frame_holds_the_clouds_joints_and_its_heaviest_particles() {
    let (body, cam, map) = small_scene();
    let truth: Vec<Vec<f64>> = (0..3)
        .map(|k| arm_pose(&body, -0.4 - 0.1 * k as f64, 0.5 + 0.15 * k as f64))
        .collect();
    for (filter, partitioned) in [(FilterKind::Pfs, false), (FilterKind::Hpor, true)] {
        let config = TrackerConfig {
            particles: 100,
            filter,
            backend: BackendChoice::Cpu,
            label_map: map,
            sigma_f: 0.05,
            partitioned,
            seed: 2,
            top_particles: 7,
            ..TrackerConfig::default()
        };
        let mut tracker =
            Tracker::new(body.clone(), cam.clone(), &truth[0], None, config.clone()).unwrap();
        assert_eq!(tracker.frame().report().frame, 0);
        assert_frame_is_the_clouds(&tracker);
        let mut simplex_groups = 0;
        for (k, p) in truth.iter().enumerate() {
            let o = render_observation(&body, &cam, p, &map, 0.01, k as u64).unwrap();
            simplex_groups += tracker.step(&o).unwrap().report().simplex_groups;
            assert_eq!(tracker.frame().report().frame, k as u64 + 1);
            assert_frame_is_the_clouds(&tracker);
        }
        assert_eq!(simplex_groups > 0, filter == FilterKind::Hpor);
        tracker
            .set_config(TrackerConfig {
                mean_estimate: true,
                ..config
            })
            .unwrap();
        assert_frame_is_the_clouds(&tracker);
    }
}

#[test]
fn with_partitions_the_simplex_runs_in_each_partition() {
    let (body, cam, map) = small_scene();
    let truth: Vec<Vec<f64>> = (0..4)
        .map(|k| arm_pose(&body, -0.4 - 0.1 * k as f64, 0.5 + 0.15 * k as f64))
        .collect();
    let config = TrackerConfig {
        particles: 100,
        filter: FilterKind::Hpor,
        backend: BackendChoice::Cpu,
        label_map: map,
        sigma_f: 0.05,
        partitioned: true,
        seed: 2,
        ..TrackerConfig::default()
    };
    let mut tracker = Tracker::new(body.clone(), cam.clone(), &truth[0], None, config).unwrap();
    let (mut groups, mut extra) = (0, 0);
    for (k, p) in truth.iter().enumerate() {
        let o = render_observation(&body, &cam, p, &map, 0.01, k as u64).unwrap();
        let r = *tracker.step(&o).unwrap().report();
        groups += r.simplex_groups;
        // Three partitions weigh 3 N poses; the simplices add their trials.
        assert!(r.evaluations >= 300, "{}", r.evaluations);
        extra += r.evaluations - 300;
        assert!(
            tracker
                .particles()
                .chunks(body.dim())
                .all(|s| body.within_limits(s))
        );
    }
    // Joint diffusion's simplex needs groups of more than D + 1 = 24
    // children, which 100 particles hardly give; a partition of m
    // parameters needs m + 2.
    assert!(
        groups > 0 && extra > 0,
        "{groups} simplex groups, {extra} extra evaluations"
    );
}

/// −log w of each pose with a prior at weight 2 (`with_weight` sets it on
/// the config) minus −log w at weight 0 is 2 × the prior's `cost` of the
/// pose, computed on its own from the pose's FK. The poses: the right
/// elbow bent both ways about its hinge (one of the two is a forearm bent
/// backwards). Returns their costs.
fn check_prior_adds_its_cost(
    with_weight: impl Fn(&mut TrackerConfig, f64),
    prepare: impl Fn(&mut Tracker),
    cost: impl Fn(&dyn Fn(usize) -> Point3<f64>) -> f64,
) -> Vec<f64> {
    let (body, cam, map) = small_scene();
    let truth = arm_pose(&body, -0.6, 0.9);
    let obs = render_observation(&body, &cam, &truth, &map, 0.01, 0).unwrap();
    let config = |weight| {
        let mut c = TrackerConfig {
            particles: 1,
            backend: BackendChoice::Cpu,
            label_map: map,
            ..TrackerConfig::default()
        };
        with_weight(&mut c, weight);
        c
    };
    let mut states = Vec::new();
    let mut costs = Vec::new();
    for elbow in [-1.6, -0.8, 0.0, 0.8, 1.6] {
        let pose = arm_pose_unchecked(&body, -0.6, elbow);
        let world = body.skeleton().forward_kinematics(&pose).unwrap();
        costs.push(cost(&|j| Point3::from(world[j].translation.vector)));
        states.extend(body.state_of(&pose));
    }
    let mut without = Tracker::new(body.clone(), cam.clone(), &truth, None, config(0.0)).unwrap();
    let mut with = Tracker::new(body.clone(), cam, &truth, None, config(2.0)).unwrap();
    prepare(&mut with);
    let a = without.score_states(&obs, &states).unwrap();
    let b = with.score_states(&obs, &states).unwrap();
    for ((a, b), c) in a.iter().zip(&b).zip(&costs) {
        assert!(
            (b.0 - a.0 - 2.0 * c).abs() < 1e-9,
            "{} vs {} + 2 × {c}",
            b.0,
            a.0
        );
        assert_eq!(a.1, b.1, "F is the same");
    }
    costs
}

#[test]
fn the_anatomy_weight_adds_the_arms_prior_to_each_score() {
    let (body, _, _) = small_scene();
    let prior = track::ArmAnatomy::new(body.skeleton()).unwrap();
    let costs = check_prior_adds_its_cost(|c, w| c.anatomy_weight = w, |_| {}, |at| prior.cost(at));
    assert!(costs.iter().any(|&c| c > 1.0), "costs {costs:?}");
    assert!(costs.contains(&0.0), "costs {costs:?}");
}

#[test]
fn the_arm_prior_weight_adds_the_learned_density_to_each_score() {
    let (body, _, _) = small_scene();
    let prior = track::ArmPrior::new(body.skeleton(), track::ArmDensity::default_table()).unwrap();
    let costs =
        check_prior_adds_its_cost(|c, w| c.arm_prior_weight = w, |_| {}, |at| prior.cost(at));
    // The poses differ in how usual they are.
    let spread = costs.iter().cloned().fold(f64::MIN, f64::max)
        - costs.iter().cloned().fold(f64::MAX, f64::min);
    assert!(spread > 1.0, "costs {costs:?}");
}

#[test]
fn a_table_of_ones_own_replaces_the_arm_priors_samples() {
    let (body, _, _) = small_scene();
    // Two arms only: hanging straight, and the forearm bent forward.
    let own = track::ArmDensity::new(
        vec![
            [0.0, -1.0, 0.0, 0.0, -1.0, 0.0],
            [0.0, -1.0, 0.0, 0.0, 0.0, 1.0],
        ],
        0.3,
    )
    .unwrap();
    let prior = track::ArmPrior::new(body.skeleton(), own.clone()).unwrap();
    let committed =
        track::ArmPrior::new(body.skeleton(), track::ArmDensity::default_table()).unwrap();
    let costs = check_prior_adds_its_cost(
        |c, w| c.arm_prior_weight = w,
        |t| t.set_arm_density(own.clone()),
        |at| prior.cost(at),
    );
    // The scores follow the new table, not the committed one.
    let differ = check_prior_adds_its_cost(
        |c, w| c.arm_prior_weight = w,
        |_| {},
        |at| committed.cost(at),
    )
    .iter()
    .zip(&costs)
    .any(|(a, b)| (a - b).abs() > 1.0);
    assert!(differ, "costs {costs:?}");
}

/// [`arm_pose`] without the limits check (a hinge bent either way).
fn arm_pose_unchecked(body: &TrackedBody, raise: f64, elbow: f64) -> Vec<f64> {
    let skel = body.skeleton();
    let mut pose = body.base().to_vec();
    let sh = skel.param_range(skel.find("r_shoulder").unwrap()).start;
    let el = skel.param_range(skel.find("r_elbow").unwrap()).start;
    pose[sh + 1] = raise;
    pose[sh] = 0.3;
    pose[el] = elbow;
    pose
}

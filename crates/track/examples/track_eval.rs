//! RTPF Tables II and III on synthetic renders of the CMU clips: mean
//! residual F (RTPF Eq. 1) and right-elbow angle RMSE for each filter and
//! particle count, plus frames per second.
//!
//! ```text
//! cargo run --release -p track --example track_eval -- [--clip walk|hop]
//!     [--filters pfs,hspc,hpor,hkfs,pfrth] [--particles 100,300,500,700,2000]
//!     [--frames 40] [--stride 2] [--start 200] [--classes rtpf|parts]
//!     [--flip-noise 0.005] [--sigma-f 0.1] [--sigma-limb 0.06]
//!     [--sigma-trunk 0.01] [--prior-weight 1] [--backend cpu|gpu|auto]
//!     [--partitioned] [--renderer raster|vision] [--seed 1] [--csv FILE] [--png FILE]
//!     [--observation regions,keypoints,both] [--keypoint-sigma 0.1] [--min-score 0.5]
//! ```
//!
//! Observations (`--renderer raster`, the default) are `labels::synth`-style
//! renders of the clip's BVH skeleton (the likelihood's own raster,
//! segmentation classes through a label map, pixel noise), 160 × 120,
//! camera 4 m in front of the subject; `--renderer vision` renders shaded
//! RGB frames with `crates/vision` at 640 × 480 and segments them into
//! head / skin / shirt / trousers at 160 × 120, as `posecloud track` does
//! with a video. The tracked body is the clip's skeleton with RTPF's
//! upper-body parameters (root position and orientation, spine, neck,
//! head, collars, shoulders, elbows: 42 on the CMU skeleton),
//! initialised at the first frame's true pose (RTPF §VII-A calibrates on
//! the first image); the PCA pose prior and the joint-limit boxes are
//! learned from the *other* clip.
//!
//! `--observation` (a list) adds rows per likelihood: `regions` (RTPF Eq.
//! 1–2, the default), `keypoints` and `both` ([`track::keypoint_term`]).
//! Keypoints need `--renderer vision`: BlazePose ([`keypoints::Detector`])
//! runs on every rendered 640 × 480 RGB frame, the first frame's person box
//! from the true pose's projected joints (the tracker is calibrated on it
//! anyway), later ones from MediaPipe's tracking ROI of the previous
//! detection; its landmarks go to the label camera's pixels
//! ([`KeypointObservation::from_keypoints`], confidence ≥ `--min-score`).
//! The detector runs before tracking (the session runs it on its own
//! thread), so frames per second are the tracker's alone; its time and its
//! 2D error against the rendered truth (median per keypoint, pixels of the
//! 640 × 480 frame) are printed.

use std::io::Write;
use std::time::Instant;

use skeleton::Bvh;
use track::synthetic::{
    ClipSpec, SyntheticClip, clip_camera, clip_truth, rtpf_classes, upper_body_parts,
};
use track::{
    Arm, BackendChoice, FilterKind, KeypointMap, KeypointObservation, ObservationMode, PosePrior,
    Selection, Side, TrackedBody, Tracker, TrackerConfig, default_radii,
};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

struct Args {
    clip: String,
    filters: Vec<FilterKind>,
    particles: Vec<usize>,
    frames: usize,
    stride: usize,
    start: usize,
    classes: String,
    flip_noise: f64,
    backend: BackendChoice,
    seed: u64,
    csv: Option<String>,
    png: Option<String>,
    sigma_f: f64,
    sigma_limb: f64,
    sigma_trunk: f64,
    prior_weight: f64,
    limit_margin_deg: Option<f64>,
    azimuth_deg: f64,
    partitioned: bool,
    renderer: String,
    observations: Vec<ObservationMode>,
    keypoint_sigma: f64,
    min_score: f32,
}

fn parse() -> Res<Args> {
    let mut a = Args {
        clip: "walk".into(),
        filters: FilterKind::ALL.to_vec(),
        particles: vec![100, 300, 500, 700, 2000],
        frames: 40,
        stride: 2,
        start: 200,
        classes: "parts".into(),
        flip_noise: 0.005,
        backend: BackendChoice::Cpu,
        seed: 1,
        csv: None,
        png: None,
        sigma_f: 0.1,
        sigma_limb: 0.06,
        sigma_trunk: 0.01,
        prior_weight: 1.0,
        limit_margin_deg: Some(25.0),
        azimuth_deg: 0.0,
        partitioned: false,
        renderer: "raster".into(),
        observations: vec![ObservationMode::Regions],
        keypoint_sigma: track::DEFAULT_KEYPOINT_SIGMA,
        min_score: 0.5,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or(format!("{k} needs a value"));
        match k.as_str() {
            "--clip" => a.clip = v()?,
            "--filters" => a.filters = v()?.split(',').map(str::parse).collect::<Result<_, _>>()?,
            "--particles" => {
                a.particles = v()?.split(',').map(str::parse).collect::<Result<_, _>>()?
            }
            "--frames" => a.frames = v()?.parse()?,
            "--stride" => a.stride = v()?.parse()?,
            "--start" => a.start = v()?.parse()?,
            "--classes" => a.classes = v()?,
            "--flip-noise" => a.flip_noise = v()?.parse()?,
            "--backend" => a.backend = v()?.parse()?,
            "--seed" => a.seed = v()?.parse()?,
            "--sigma-f" => a.sigma_f = v()?.parse()?,
            "--sigma-limb" => a.sigma_limb = v()?.parse()?,
            "--sigma-trunk" => a.sigma_trunk = v()?.parse()?,
            "--prior-weight" => a.prior_weight = v()?.parse()?,
            "--azimuth" => a.azimuth_deg = v()?.parse()?,
            "--limit-margin" => {
                let x = v()?;
                a.limit_margin_deg = if x == "none" { None } else { Some(x.parse()?) }
            }
            "--partitioned" => a.partitioned = true,
            "--renderer" => a.renderer = v()?,
            "--observation" => {
                a.observations = v()?.split(',').map(str::parse).collect::<Result<_, _>>()?
            }
            "--keypoint-sigma" => a.keypoint_sigma = v()?.parse()?,
            "--min-score" => a.min_score = v()?.parse()?,
            "--csv" => a.csv = Some(v()?),
            "--png" => a.png = Some(v()?),
            "-h" | "--help" => {
                eprintln!("see the doc comment of crates/track/examples/track_eval.rs");
                std::process::exit(0);
            }
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    Ok(a)
}

fn clip_path(name: &str) -> Res<String> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../assets/motions");
    Ok(match name {
        "walk" => format!("{root}/cmu_131_01_walk.bvh"),
        "hop" => format!("{root}/cmu_131_03_hop.bvh"),
        other => return Err(format!("unknown clip {other} (walk, hop)").into()),
    })
}

/// The clip as `posecloud track` sees a video: `crates/vision`'s shaded
/// RGB renderer at 4× the label size (640 × 480, sensor noise), the
/// background learned from an empty frame, the colour models from the
/// first frame in its true pose, every frame segmented into head / skin /
/// shirt / trousers at the label size. Returns the observations and the
/// body-part → class map the tracker compares with.
fn render_and_segment(
    body: &TrackedBody,
    clip: &Bvh,
    spec: &ClipSpec,
) -> Res<(SyntheticClip, labels::LabelMap, Rendered)> {
    let scale = 4;
    let big = ClipSpec {
        width: spec.width * scale,
        height: spec.height * scale,
        ..spec.clone()
    };
    // The raster path's truth and camera, at the render's size.
    let truth = clip_truth(body, clip, &big)?;
    let camera = clip_camera(body, &truth, &big)?;
    // `body` is already dressed: render it with the default shape's
    // proportions (dressing twice would scale the radii again), so render
    // the undressed clip skeleton, as `posecloud render` does.
    let renderer = vision::SyntheticRenderer::new(
        &clip.skeleton,
        camera.clone(),
        vision::RenderOptions {
            seed: spec.seed,
            ..vision::RenderOptions::default()
        },
    )?;
    let class_map = *renderer.class_map();
    let params = vision::SegmentParams {
        width: spec.width,
        height: spec.height,
        ..vision::SegmentParams::default()
    };
    let mut seg = vision::Segmenter::new(params, big.width, big.height)?;
    seg.learn_background(&[&renderer.render_empty(0, 0, 0.0)])?;
    let mut observations = Vec::with_capacity(truth.len());
    let mut frames = Vec::with_capacity(truth.len());
    for (k, pose) in truth.iter().enumerate() {
        let frame = renderer.render(pose, k as u64 + 1, k + 1, 0.0)?.frame;
        if k == 0 {
            seg.learn_colours_from_pose(&frame, renderer.skeleton(), &camera, pose, &class_map)?;
        }
        observations.push(seg.segment(&frame)?.observation()?);
        frames.push(frame);
    }
    let label_camera = vision::resize_camera(&camera, spec.width, spec.height)?;
    Ok((
        SyntheticClip {
            camera: label_camera,
            truth,
            observations,
        },
        class_map.label_table(),
        Rendered { frames, camera },
    ))
}

/// The RGB frames of `render_and_segment` and their camera.
struct Rendered {
    frames: Vec<vision::Frame>,
    camera: labels::Camera,
}

/// BlazePose on every rendered frame (module docs): the observations in
/// the label camera's pixels, and the detector's 2D error against the
/// rendered truth per keypoint (render pixels), with its mean time.
fn detect_keypoints(
    body: &TrackedBody,
    map: &KeypointMap,
    synth: &SyntheticClip,
    rendered: &Rendered,
    min_score: f32,
) -> Res<Vec<KeypointObservation>> {
    let detector = keypoints::Detector::new()?;
    let skel = body.skeleton();
    let mut out = Vec::with_capacity(rendered.frames.len());
    let mut errors: Vec<Vec<f64>> = vec![Vec::new(); map.len()];
    let mut roi = None;
    let t0 = Instant::now();
    for (frame, pose) in rendered.frames.iter().zip(&synth.truth) {
        let world = skel.forward_kinematics(pose)?;
        let truth = map.project(&world, &rendered.camera);
        let (w, h) = (frame.width, frame.height);
        let kp = match roi {
            Some(r) => detector.detect_in_roi(&frame.rgb, w, h, r)?,
            None => {
                let joints = (0..skel.len()).filter_map(|j| {
                    rendered
                        .camera
                        .project(&nalgebra::Point3::from(world[j].translation.vector))
                        .map(|(u, v, _)| [u as f32, v as f32])
                });
                let person = keypoints::PersonBox::from_points(joints)?.expanded(10.0);
                detector.detect(&frame.rgb, w, h, person)?
            }
        };
        roi = Some(kp.tracking_roi(true));
        for ((b, t), e) in map.bindings().iter().zip(&truth).zip(&mut errors) {
            let [u, v] = match b.source {
                track::LandmarkSource::One(i) => {
                    [f64::from(kp.points[i].u), f64::from(kp.points[i].v)]
                }
                track::LandmarkSource::Midpoint(i, j) => [
                    f64::from(kp.points[i].u + kp.points[j].u) / 2.0,
                    f64::from(kp.points[i].v + kp.points[j].v) / 2.0,
                ],
            };
            if let Some([tu, tv]) = t {
                e.push((u - tu).hypot(v - tv));
            }
        }
        out.push(KeypointObservation::from_keypoints(
            &kp,
            map,
            w,
            h,
            &synth.camera,
            min_score,
        ));
    }
    let ms = t0.elapsed().as_secs_f64() * 1e3 / rendered.frames.len().max(1) as f64;
    let used: f64 = out.iter().map(|o| o.points().len() as f64).sum::<f64>() / out.len() as f64;
    eprintln!(
        "keypoints: BlazePose full, {ms:.0} ms per frame (1 thread), {used:.1} of {} keypoints per frame above score {min_score}",
        map.len()
    );
    println!(
        "\nDetector 2D error against the rendered truth, median (max) per keypoint, pixels of the {} × {} frame\n",
        rendered.camera.width(),
        rendered.camera.height()
    );
    println!("| keypoint | median px | max px |");
    println!("|---|---|---|");
    for (b, e) in map.bindings().iter().zip(&mut errors) {
        e.sort_by(f64::total_cmp);
        let med = e.get(e.len() / 2).copied().unwrap_or(f64::NAN);
        let max = e.last().copied().unwrap_or(f64::NAN);
        let name = if b.name == "head" {
            "head (ears' midpoint)"
        } else {
            b.name
        };
        println!("| {name} | {med:.1} | {max:.1} |");
    }
    Ok(out)
}

struct Row {
    filter: FilterKind,
    observation: ObservationMode,
    particles: usize,
    residual: f64,
    elbow_rmse_deg: f64,
    elbow_rmse_mean_deg: f64,
    fps: f64,
    evaluations: f64,
    /// MAP elbow flexion per frame, degrees.
    trace: Vec<f64>,
}

fn main() -> Res<()> {
    let args = parse()?;
    let clip = Bvh::load(clip_path(&args.clip)?)?;
    let other = Bvh::load(clip_path(if args.clip == "walk" { "hop" } else { "walk" })?)?;
    let vision_render = match args.renderer.as_str() {
        "raster" => false,
        "vision" => true,
        r => return Err(format!("unknown renderer {r} (raster, vision)").into()),
    };
    // The vision renderer dresses the skeleton with its body shape; the
    // tracker tracks that dressed body (as `posecloud track` does).
    let skel = if vision_render {
        vision::dress_skeleton(&clip.skeleton, &vision::BodyShape::default())?
    } else {
        default_radii(&clip.skeleton, 1.0)?
    };
    let first = clip.frames.pose(args.start).to_vec();
    let mut body = TrackedBody::new(skel, &Selection::cmu_upper_body(), &first)?;
    if let Some(margin) = args.limit_margin_deg {
        body.learn_limits(&other.frames, margin.to_radians())?;
    }
    {
        let state_ok = |p: &[f64]| body.within_limits(&body.state_of(p));
        let outside = (args.start..clip.frames.len())
            .step_by(args.stride)
            .take(args.frames)
            .filter(|&k| !state_ok(clip.frames.pose(k)))
            .count();
        eprintln!(
            "{outside} of {} true poses lie outside the tracked boxes",
            args.frames
        );
    }
    if args.partitioned {
        let sizes: Vec<usize> = body.partitions().iter().map(Vec::len).collect();
        eprintln!("partitioned sampling: {sizes:?} parameters per partition");
    }
    let prior = PosePrior::learn(&body, &[&other.frames], 0.95)?;
    let mut label_map = match args.classes.as_str() {
        "rtpf" => rtpf_classes(),
        "parts" => upper_body_parts(),
        c => return Err(format!("unknown classes {c} (rtpf, parts)").into()),
    };
    let spec = ClipSpec {
        start: args.start,
        frames: args.frames,
        stride: args.stride,
        label_map,
        pixel_noise: args.flip_noise,
        azimuth: args.azimuth_deg.to_radians(),
        seed: args.seed,
        ..ClipSpec::default()
    };
    let (synth, rendered) = if vision_render {
        let (synth, map, rendered) = render_and_segment(&body, &clip, &spec)?;
        label_map = map;
        (synth, Some(rendered))
    } else {
        (SyntheticClip::render(&body, &clip, &spec)?, None)
    };
    let wants_keypoints = args
        .observations
        .iter()
        .any(|&o| o != ObservationMode::Regions);
    let detections = match (&rendered, wants_keypoints) {
        (_, false) => None,
        (None, true) => {
            return Err("--observation keypoints/both needs --renderer vision (RGB frames)".into());
        }
        (Some(r), true) => {
            let map = KeypointMap::for_body(&body);
            Some(detect_keypoints(&body, &map, &synth, r, args.min_score)?)
        }
    };
    let arm = Arm::find(body.skeleton(), Side::Right)?;
    let truth_flex: Vec<f64> = synth
        .truth
        .iter()
        .map(|p| arm.flexion(&body.skeleton().forward_kinematics(p).unwrap()))
        .collect();
    eprintln!(
        "clip {} frames {}..{} every {} ({} observations, {} × {}), D = {}, prior: {} components ({:.1} % of the variance), classes {}",
        args.clip,
        args.start,
        args.start + args.stride * (args.frames - 1),
        args.stride,
        args.frames,
        spec.width,
        spec.height,
        body.dim(),
        prior.components(),
        100.0 * prior.explained(),
        if vision_render {
            "head/skin/shirt/trousers (crates/vision render at 640 × 480, segmented)"
        } else {
            args.classes.as_str()
        }
    );
    if std::env::var("TRACK_EVAL_DEBUG").is_ok() {
        let mut t = Tracker::new(
            body.clone(),
            synth.camera.clone(),
            &synth.truth[0],
            None,
            TrackerConfig {
                particles: 1,
                backend: args.backend,
                label_map,
                ..TrackerConfig::default()
            },
        )?;
        for (k, (p, obs)) in synth.truth.iter().zip(&synth.observations).enumerate() {
            let s = body.state_of(p);
            let f = t.score_states(obs, &s)?[0].1;
            let areas = obs.areas();
            eprintln!(
                "frame {k}: F(truth) = {f:.4}, areas {:?}, truth elbow {:.1}°",
                &areas[..5],
                truth_flex[k].to_degrees()
            );
        }
        let k = 10.min(synth.truth.len() - 1);
        let flip = track::flip::FlipArm::new(&body, arm, &synth.truth[k]).ok_or("no flip arm")?;
        eprintln!("flexion parameter: {}", body.params()[flip.flex_state].name);
        for dx in [-0.6, -0.4, -0.2, -0.1, 0.0, 0.1, 0.2, 0.4, 0.6] {
            let mut p = synth.truth[k].clone();
            p[flip.flex] += dx;
            let f = t.score_states(&synth.observations[k], &body.state_of(&p))?[0].1;
            let fl = arm
                .flexion(&body.skeleton().forward_kinematics(&p)?)
                .to_degrees();
            eprintln!("  elbow param {dx:+.1}: flexion {fl:.1}°, F {f:.4}");
        }
        let obs = &synth.observations[0];
        let mut pgm = format!("P2\n{} {}\n5\n", obs.width(), obs.height());
        for row in obs.labels().chunks(obs.width() as usize) {
            pgm += &row
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join(" ");
            pgm += "\n";
        }
        std::fs::write("/tmp/obs0.pgm", pgm)?;
    }
    let mut rows = Vec::new();
    let mut described = false;
    for &filter in &args.filters {
        for &observation in &args.observations {
            for &n in &args.particles {
                let config = TrackerConfig {
                    particles: n,
                    filter,
                    sigma_f: args.sigma_f,
                    sigma_rotation: args.sigma_limb,
                    sigma_trunk: args.sigma_trunk,
                    prior_weight: args.prior_weight,
                    seed: args.seed,
                    backend: args.backend,
                    label_map,
                    partitioned: args.partitioned,
                    observation,
                    keypoint_sigma: args.keypoint_sigma,
                    ..TrackerConfig::default()
                };
                let mut tracker = Tracker::new(
                    body.clone(),
                    synth.camera.clone(),
                    &synth.truth[0],
                    Some(prior.clone()),
                    config,
                )?;
                if !described {
                    eprintln!("likelihood: {}", tracker.describe());
                    described = true;
                }
                let (mut f_sum, mut se, mut se_mean, mut evals) = (0.0, 0.0, 0.0, 0usize);
                let mut trace = Vec::with_capacity(synth.observations.len());
                let t0 = Instant::now();
                for (k, obs) in synth.observations.iter().enumerate() {
                    if let Some(d) = &detections {
                        tracker.set_keypoints(Some(d[k].clone()))?;
                    }
                    let r = tracker.step(obs)?;
                    let report = r.report();
                    let world = body.skeleton().forward_kinematics(r.map_pose())?;
                    let e = arm.flexion(&world) - truth_flex[k];
                    trace.push(arm.flexion(&world).to_degrees());
                    if std::env::var("TRACK_EVAL_DEBUG").is_ok() {
                        let root = |p: &[f64]| {
                            body.skeleton()
                                .forward_kinematics(p)
                                .map(|w| w[0].translation.vector)
                                .unwrap_or_default()
                        };
                        eprintln!(
                            "  frame {k}: F {:.3}, elbow error {:6.1}°, root error {:.3} m, ESS {:.1}, evaluations {}",
                            report.residual,
                            e.to_degrees(),
                            (root(r.map_pose()) - root(&synth.truth[k])).norm(),
                            report.ess,
                            report.evaluations
                        );
                    }
                    se += e * e;
                    let wm = body.skeleton().forward_kinematics(r.mean_pose())?;
                    let em = arm.flexion(&wm) - truth_flex[k];
                    se_mean += em * em;
                    f_sum += report.residual;
                    evals += report.evaluations;
                }
                let secs = t0.elapsed().as_secs_f64();
                let m = synth.observations.len() as f64;
                let row = Row {
                    filter,
                    observation,
                    particles: n,
                    residual: f_sum / m,
                    elbow_rmse_deg: (se / m).sqrt().to_degrees(),
                    elbow_rmse_mean_deg: (se_mean / m).sqrt().to_degrees(),
                    fps: m / secs,
                    evaluations: evals as f64 / m,
                    trace,
                };
                eprintln!(
                    "{:<6} {:<9} N = {:>5}: mean F {:.4}, right elbow RMSE {:6.2}°, {:6.1} frames/s, {:7.0} evaluations/frame",
                    filter.name(),
                    observation.name(),
                    n,
                    row.residual,
                    row.elbow_rmse_deg,
                    row.fps,
                    row.evaluations
                );
                rows.push(row);
            }
        }
    }
    let table = |title: &str, f: &dyn Fn(&Row) -> String| {
        println!("\n{title}\n");
        print!("| filter |");
        for n in &args.particles {
            print!(" {n} P |");
        }
        println!();
        print!("|---|");
        for _ in &args.particles {
            print!("---|");
        }
        println!();
        for &filter in &args.filters {
            for &observation in &args.observations {
                if args.observations.len() > 1 {
                    print!("| {} {} |", filter.name(), observation.name());
                } else {
                    print!("| {} |", filter.name());
                }
                for &n in &args.particles {
                    let r = rows
                        .iter()
                        .find(|r| {
                            r.filter == filter && r.particles == n && r.observation == observation
                        })
                        .unwrap();
                    print!(" {} |", f(r));
                }
                println!();
            }
        }
    };
    table("Mean residual F (RTPF Table II)", &|r| {
        format!("{:.3}", r.residual)
    });
    table("Right-elbow angle RMSE, degrees (RTPF Table III)", &|r| {
        format!("{:.1}", r.elbow_rmse_deg)
    });
    table(
        "Right-elbow angle RMSE of the weighted-mean estimate, degrees",
        &|r| format!("{:.1}", r.elbow_rmse_mean_deg),
    );
    table("Frames per second", &|r| format!("{:.1}", r.fps));
    if let Some(path) = &args.png {
        plot(path, &args, &rows, &truth_flex)?;
        eprintln!("wrote {path}");
    }
    if let Some(path) = &args.csv {
        let mut f = std::fs::File::create(path)?;
        writeln!(
            f,
            "filter,observation,particles,mean_residual,elbow_rmse_deg,elbow_rmse_mean_deg,frames_per_second,evaluations_per_frame"
        )?;
        for r in &rows {
            writeln!(
                f,
                "{},{},{},{},{},{},{},{}",
                r.filter.name(),
                r.observation.name(),
                r.particles,
                r.residual,
                r.elbow_rmse_deg,
                r.elbow_rmse_mean_deg,
                r.fps,
                r.evaluations
            )?;
        }
        eprintln!("wrote {path}");
    }
    Ok(())
}

/// Left: right-elbow RMSE against N per filter (RTPF Table III as lines);
/// right: the elbow angle over the clip, truth and each filter's MAP at the
/// largest N.
fn plot(path: &str, args: &Args, rows: &[Row], truth: &[f64]) -> Res<()> {
    use plotkit::{Corner, INK, Mark, Panel, Series};
    let nmax = *args.particles.iter().max().unwrap_or(&1) as f64;
    let nmin = *args.particles.iter().min().unwrap_or(&1) as f64;
    let ymax = rows.iter().map(|r| r.elbow_rmse_deg).fold(10.0, f64::max) * 1.1;
    let mut rmse = Panel::new(
        "Right-elbow RMSE vs particles",
        "particles N",
        "RMSE (degrees)",
    )
    .fixed_x((nmin - 0.05 * nmax).max(0.0)..nmax * 1.05)
    .fixed_y(0.0..ymax)
    .legend_at(Corner::MiddleRight);
    for (i, &f) in args.filters.iter().enumerate() {
        let pts: Vec<(f64, f64)> = args
            .particles
            .iter()
            .filter_map(|&n| {
                rows.iter()
                    .find(|r| r.filter == f && r.particles == n)
                    .map(|r| (n as f64, r.elbow_rmse_deg))
            })
            .collect();
        rmse.push(Series::line(f.name().to_string(), pts, i).mark(Mark::LineDots(2, 3)));
    }
    let n_trace = *args.particles.iter().max().unwrap_or(&0);
    let truth: Vec<(f64, f64)> = truth
        .iter()
        .enumerate()
        .map(|(k, t)| (k as f64, t.to_degrees()))
        .collect();
    let (lo, hi) = rows
        .iter()
        .flat_map(|r| r.trace.iter())
        .chain(truth.iter().map(|(_, t)| t))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    let mut angle = Panel::new(
        format!("Right-elbow angle, {} clip, N = {n_trace}", args.clip),
        "frame",
        "flexion (degrees)",
    )
    .fixed_x(0.0..truth.len() as f64)
    .fixed_y((lo - 5.0)..(hi + 5.0))
    .legend_at(Corner::MiddleRight);
    angle.push(Series::line("truth".to_string(), truth, INK).mark(Mark::Line(3)));
    for (i, &f) in args.filters.iter().enumerate() {
        if let Some(r) = rows
            .iter()
            .find(|r| r.filter == f && r.particles == n_trace)
        {
            let trace = r.trace.iter().enumerate().map(|(k, &v)| (k as f64, v));
            angle.push(Series::line(f.name().to_string(), trace.collect(), i));
        }
    }
    plotkit::save_png(path.as_ref(), &[rmse, angle], 2, (600, 480))?;
    Ok(())
}

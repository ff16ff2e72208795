//! `arm_eval`: the arm-evaluation protocol of issue 34 on the clip set
//! `assets/evalset` (rendered by the `footage` crate with motion capture on
//! another rig; split into `tuning` and `validation` clips by motion before
//! any tuning, see `assets/evalset/clips.toml`).
//!
//! Every run is `posecloud track` with **no set-up files** (the default
//! camera and body scaled to the clip's subject height, the guided start),
//! seeds as given. Per clip, over the tracked frames of the `move` phase:
//!
//! - the tracker's right- and left-elbow angle RMSE (interior angle);
//! - the **best-branch floors** of the session's own detections (each
//!   frame's BlazePose detection of that frame): the true 3D shoulder and
//!   bone lengths, the detected elbow and wrist (moved by
//!   `LANDMARK_SHIFT` as the tracker binds them) lifted onto their rays —
//!   the up to four depth branches — and of those the branch whose elbow
//!   angle is nearest the truth (`floor∠`), the branch whose upper arm
//!   and forearm lie on the truth's sides of the image plane (`floor±`, a
//!   perfect depth-order detector; where no branch has both, the mean of
//!   those with the most) and the branch whose 3D elbow and wrist are nearest
//!   the true ones (`floor3D`);
//! - the detector's median 2D error at the shoulder, elbow and wrist
//!   (pixels of the clip's frame).
//!
//! So each row says how far the filter is from what its detections allow.
//!
//! ```sh
//! cargo run --release -p track --example arm_eval -- --split validation --seeds 1,2,3 [tracker flags]
//! ```
//!
//! Tracker flags: `--particles N` `--observation regions|keypoints|both`
//! `--depth-sigma S` `--lifts N` `--keypoint-sigma S` `--smooth none|lag|lag:N|full`
//! `--hand-speed V` `--temperature T` `--lagged-detections` `--anatomy W`
//! (weight of the arms' anatomical prior) `--arm-prior W` (weight of the
//! learned arm prior) `--truth-body` (an oracle: the
//! clip's true bone lengths) `--truth-camera` (an oracle: the clip's
//! camera file instead of the level 60° default) `--arm-prior-table FILE`
//! (the arm prior's samples from a table of one's own, e.g. a
//! leave-one-motion-out table of `arm_prior_table --leave-out`) `--labels WxH` (the label images' size); `--dump DIR`
//! writes each run's MAP joints and the detections with their depth and
//! score (`DIR/{tag}_{seed}.csv`); `--grid` adds a
//! table of smoothing variants (computed from the same runs' candidates);
//! `--clips TAG,…` picks
//! clips; `--csv FILE` appends one row per clip and seed.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use labels::Camera;
use nalgebra::Point3;
use track::angle_between;
use track::landmark_shift;
use track::run::{Progress, TrackRun, run_until};
use track::smooth::{Candidate, PathSmoother, Smoothing};

#[path = "common/csv.rs"]
mod csv;
use csv::Csv;

fn evalset() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/evalset")
}

#[derive(Clone, Debug)]
struct Clip {
    tag: String,
    split: String,
    height: f64,
    sleeves: vision::Sleeves,
}

fn clips() -> Result<Vec<Clip>> {
    let path = evalset().join("clips.toml");
    let table: toml::Table = std::fs::read_to_string(&path)
        .with_context(|| format!("reading {}", path.display()))?
        .parse()
        .with_context(|| format!("parsing {}", path.display()))?;
    let list = table
        .get("clip")
        .and_then(|c| c.as_array())
        .context("clips.toml: no [[clip]]")?;
    list.iter()
        .map(|c| {
            let s = |f: &str| c.get(f).and_then(|v| v.as_str()).map(String::from);
            Ok(Clip {
                tag: s("tag").context("tag")?,
                split: s("split").context("split")?,
                height: c
                    .get("height")
                    .and_then(|v| v.as_float())
                    .context("height")?,
                sleeves: if s("sleeves").as_deref() == Some("long") {
                    vision::Sleeves::Long
                } else {
                    vision::Sleeves::Short
                },
            })
        })
        .collect()
}

#[derive(Clone, Debug, Default)]
struct Row {
    tag: String,
    split: String,
    seed: u64,
    tracked: f64,
    rmse: [f64; 2],
    floor_angle: [f64; 2],
    floor_3d: [f64; 2],
    /// The branch with the truth's depth order (`floor±`, module docs).
    floor_order: [f64; 2],
    /// Median 2D error, pixels: [side][shoulder, elbow, wrist].
    det_px: [[f64; 3]; 2],
    /// RMSE per estimate: the MAP, then each smoothing variant.
    variants: Vec<[f64; 2]>,
    fps: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn rms(v: &[f64]) -> f64 {
    (v.iter().map(|x| x * x).sum::<f64>() / v.len().max(1) as f64).sqrt()
}

/// The points on the ray of sight through `(u, v)` at distance `r` from
/// `centre` (both branches where the ray meets that sphere twice).
fn branches(camera: &Camera, (u, v): (f64, f64), centre: &Point3<f64>, r: f64) -> Vec<Point3<f64>> {
    let (c, d) = camera.ray_through(u, v);
    track::points_at_distance(&c, &d, centre, r, centre).to_vec()
}

const SIDES: [&str; 2] = ["right", "left"];

struct Settings {
    particles: usize,
    observation: String,
    depth_sigma: f64,
    lifts: usize,
    keypoint_sigma: f64,
    smoothing: Smoothing,
    grid: bool,
    hand_speed: f64,
    temperature: f64,
    lagged: bool,
    /// Folder for one CSV per clip and seed of the MAP's joints (`--dump`).
    dump: Option<PathBuf>,
    /// The label images' size (`--labels WxH`), else the session's default.
    labels: Option<(u32, u32)>,
    /// Track with the clip's true body (`truth_{tag}.bvh`) instead of the
    /// default one: an oracle of the bone lengths (`--truth-body`).
    truth_body: bool,
    /// Track with the clip's camera (`camera_{tag}.toml`) instead of the
    /// default level one: an oracle of the camera (`--truth-camera`).
    truth_camera: bool,
    /// The arm prior's table (`--arm-prior-table`), else the committed one.
    arm_prior_table: Option<PathBuf>,
    anatomy: f64,
    arm_prior: f64,
}

/// A smoothing of the estimate, evaluated offline on the run's candidates.
#[derive(Clone, Debug)]
struct Variant {
    smoothing: Smoothing,
    hand_speed: f64,
    temperature: f64,
}

impl Variant {
    fn name(&self) -> String {
        format!(
            "{:?}, σ_v {} m/s, τ {}",
            self.smoothing, self.hand_speed, self.temperature
        )
    }
}

fn evaluate(clip: &Clip, seed: u64, o: &Settings, variants: &[Variant]) -> Result<Row> {
    let dir = evalset();
    let tag = &clip.tag;
    let video = dir.join(format!("session_{tag}.mp4"));
    let truth = Csv::load(&dir.join(format!("truth_{tag}.csv")))?;
    let camera = vision::load_camera(dir.join(format!("camera_{tag}.toml")))
        .with_context(|| format!("camera_{tag}.toml"))?;
    let out = std::env::temp_dir().join(format!("arm_eval_{}_{tag}_{seed}", std::process::id()));
    std::fs::create_dir_all(&out)?;
    let mut run = TrackRun::new(video.to_str().context("path")?, out.join("est.csv"));
    run.spec.subject.height = Some(clip.height);
    if o.truth_body {
        run.spec.subject.body = Some(dir.join(format!("truth_{tag}.bvh")));
    }
    if o.truth_camera {
        run.spec.camera = track::CameraSpec::File(dir.join(format!("camera_{tag}.toml")));
    }
    run.spec.arm_prior_table.clone_from(&o.arm_prior_table);
    run.spec.sleeves = clip.sleeves;
    if let Some(size) = o.labels {
        run.spec.label_size = size;
    }
    let s = &mut run.settings;
    s.particles = o.particles;
    s.seed = seed;
    s.observation = o.observation.parse().map_err(anyhow::Error::msg)?;
    s.keypoint_depth_sigma = o.depth_sigma;
    s.keypoint_lifts = o.lifts;
    s.keypoint_sigma = o.keypoint_sigma;
    // The run writes the MAP; every smoothing is computed from its
    // candidates below.
    s.smoothing = Smoothing::None;
    s.lagged_detections = o.lagged;
    s.anatomy_weight = o.anatomy;
    s.arm_prior_weight = o.arm_prior;
    let mut detections: HashMap<usize, keypoints::Keypoints> = HashMap::new();
    let mut skeleton: Option<skeleton::Skeleton> = None;
    let mut tracking_camera: Option<Camera> = None;
    let mut frames: Vec<(usize, f64, Vec<Candidate>)> = Vec::new();
    // The weighted mean of the particles, per frame (an estimate beside
    // the MAP).
    let mut means: Vec<(usize, Vec<f64>)> = Vec::new();
    let summary = run_until(
        &run,
        &std::sync::atomic::AtomicBool::new(false),
        &mut |p| match p {
            Progress::Opened(session) => skeleton = Some(session.dressed().clone()),
            Progress::Step { session, step, .. } => {
                if step.tracked.is_some() {
                    tracking_camera = Some(session.camera().clone());
                }
                if let Some((f, kp)) = session.detection() {
                    detections.entry(f).or_insert_with(|| kp.clone());
                }
                if let Some(t) = &step.tracked {
                    frames.push((step.frame, step.timestamp, t.modes.candidates.clone()));
                    if let Some(f) = session.frame() {
                        means.push((step.frame, f.mean_pose().to_vec()));
                    }
                }
            }
            _ => {}
        },
    )?;
    let _ = std::fs::remove_dir_all(&out);
    let skeleton = skeleton.context("the run never opened")?;
    let arm = |side: &str, j: &str| skeleton.find(&format!("{side}{j}"));
    let joints = [
        [
            arm("Right", "Shoulder")?,
            arm("Right", "Elbow")?,
            arm("Right", "Wrist")?,
        ],
        [
            arm("Left", "Shoulder")?,
            arm("Left", "Elbow")?,
            arm("Left", "Wrist")?,
        ],
    ];
    // Each estimate's elbow angles per frame: the filter's MAP, then every
    // smoothing variant, all from the one run's candidates.
    let mut angles: Vec<HashMap<usize, [f64; 2]>> = Vec::new();
    let angle_of = |pose: &[f64]| -> Result<[f64; 2]> {
        let w = skeleton.forward_kinematics(pose)?;
        let p = |j: usize| Point3::from(w[j].translation.vector);
        Ok(joints.map(|[s, e, wr]| angle_between(&(p(s) - p(e)), &(p(wr) - p(e))).to_degrees()))
    };
    let mut map = HashMap::new();
    for (f, _, c) in &frames {
        map.insert(*f, angle_of(&c[0].pose)?);
    }
    if let Some(dir) = &o.dump {
        let cam = tracking_camera.as_ref().context("no tracked frame")?;
        dump_map(
            &dir.join(format!("{tag}_{seed}.csv")),
            &skeleton,
            cam,
            &frames,
            &detections,
        )?;
    }
    angles.push(map);
    let mut mean_angles = HashMap::new();
    for (f, pose) in &means {
        mean_angles.insert(*f, angle_of(pose)?);
    }
    angles.push(mean_angles);
    for v in variants {
        let mut sm = PathSmoother::new(v.smoothing, v.hand_speed, v.temperature)?;
        let mut est = HashMap::new();
        let mut decided = Vec::new();
        for (f, t, c) in &frames {
            decided.extend(sm.push(*f, *t, c.clone())?);
        }
        decided.extend(sm.finish());
        for d in decided {
            est.insert(d.frame, angle_of(&d.pose)?);
        }
        angles.push(est);
    }
    let mut row = Row {
        tag: tag.clone(),
        split: clip.split.clone(),
        seed,
        fps: summary.frames_per_second,
        ..Row::default()
    };
    let (f1, f2) = (
        landmark_shift("elbow").unwrap_or(0.0),
        landmark_shift("wrist").unwrap_or(0.0),
    );
    let mut moves = 0usize;
    let mut tracked = 0usize;
    for (si, side) in SIDES.iter().enumerate() {
        let mut err = vec![Vec::new(); angles.len()];
        let (mut fa, mut f3, mut fo) = (Vec::new(), Vec::new(), Vec::new());
        let mut det = [Vec::new(), Vec::new(), Vec::new()];
        for r in &truth.rows {
            if truth.text(r, "phase") != Some("move") {
                continue;
            }
            if si == 0 {
                moves += 1;
            }
            let frame = truth.get(r, "frame").context("frame")? as usize;
            let t3 = |j: &str| -> Option<Point3<f64>> {
                Some(Point3::new(
                    truth.get(r, &format!("{side}_{j}_x"))?,
                    truth.get(r, &format!("{side}_{j}_y"))?,
                    truth.get(r, &format!("{side}_{j}_z"))?,
                ))
            };
            let (Some(ts), Some(te), Some(tw), Some(angle)) = (
                t3("shoulder"),
                t3("elbow"),
                t3("wrist"),
                truth.get(r, &format!("{side}_elbow_deg")),
            ) else {
                continue;
            };
            if !angles[0].contains_key(&frame) {
                continue;
            }
            if si == 0 {
                tracked += 1;
            }
            for (k, a) in angles.iter().enumerate() {
                if let Some(e) = a.get(&frame) {
                    err[k].push(e[si] - angle);
                }
            }
            let Some(kp) = detections.get(&frame) else {
                continue;
            };
            let px = |j: &str| {
                kp.get(&format!("{side}_{j}"))
                    .map(|k| (f64::from(k.u), f64::from(k.v)))
            };
            for (k, j) in ["shoulder", "elbow", "wrist"].iter().enumerate() {
                if let (Some(p), Some(u), Some(v)) = (
                    px(j),
                    truth.get(r, &format!("{side}_{j}_u")),
                    truth.get(r, &format!("{side}_{j}_v")),
                ) {
                    det[k].push((p.0 - u).hypot(p.1 - v));
                }
            }
            let (Some(pe), Some(pw)) = (px("elbow"), px("wrist")) else {
                continue;
            };
            let (l1, l2) = ((te - ts).norm(), (tw - te).norm());
            let mut best_angle = f64::INFINITY;
            let mut best_3d = (f64::INFINITY, 0.0);
            // Each branch's segments on the truth's side of the image plane
            // (0–2) and its angle error, for `floor±`.
            let depth = |p: &Point3<f64>| camera.project(p).map_or(f64::NAN, |(_, _, d)| d);
            let side_of = |a: &Point3<f64>, b: &Point3<f64>| (depth(b) - depth(a)).signum();
            let truth_sides = [side_of(&ts, &te), side_of(&te, &tw)];
            let mut by_order: Vec<(usize, f64)> = Vec::new();
            for p in branches(&camera, pe, &ts, (1.0 - f1) * l1) {
                let elbow = ts + (p - ts) / (1.0 - f1);
                for q in branches(&camera, pw, &elbow, (1.0 - f2) * l2) {
                    let wrist = elbow + (q - elbow) / (1.0 - f2);
                    let a = angle_between(&(ts - elbow), &(wrist - elbow)).to_degrees() - angle;
                    best_angle = best_angle.min(a.abs());
                    let d = (elbow - te).norm_squared() + (wrist - tw).norm_squared();
                    if d < best_3d.0 {
                        best_3d = (d, a);
                    }
                    let sides = [side_of(&ts, &elbow), side_of(&elbow, &wrist)];
                    let right = sides
                        .iter()
                        .zip(&truth_sides)
                        .filter(|(a, b)| a == b)
                        .count();
                    by_order.push((right, a));
                }
            }
            if best_angle.is_finite() {
                fa.push(best_angle);
                f3.push(best_3d.1);
                let most = by_order.iter().map(|&(n, _)| n).max().unwrap_or(0);
                fo.push(mean(
                    by_order
                        .iter()
                        .filter(|&&(n, _)| n == most)
                        .map(|&(_, a)| a),
                ));
            }
        }
        // Estimates: 0 the MAP, 1 the mean, then the smoothing variants
        // (the first is `--smooth`'s when one is asked for).
        let chosen = if o.smoothing == Smoothing::None { 0 } else { 2 };
        row.rmse[si] = rms(&err[chosen]);
        for (k, e) in err.iter().enumerate() {
            if row.variants.len() <= k {
                row.variants.push([0.0; 2]);
            }
            row.variants[k][si] = rms(e);
        }
        row.floor_angle[si] = rms(&fa);
        row.floor_3d[si] = rms(&f3);
        row.floor_order[si] = rms(&fo);
        row.det_px[si] = det.map(median);
    }
    row.tracked = tracked as f64 / moves.max(1) as f64;
    Ok(row)
}

/// The joints of each frame's MAP (world coordinates of the run) that
/// `--dump` writes: the body's trunk and both arms, each arm joint with
/// the detector's u, v, z and score beside it.
const DUMPED: [&str; 8] = [
    "Hips",
    "Neck",
    "RightShoulder",
    "RightElbow",
    "RightWrist",
    "LeftShoulder",
    "LeftElbow",
    "LeftWrist",
];

fn dump_map(
    path: &Path,
    skeleton: &skeleton::Skeleton,
    camera: &Camera,
    frames: &[(usize, f64, Vec<Candidate>)],
    detections: &HashMap<usize, keypoints::Keypoints>,
) -> Result<()> {
    let ids = DUMPED
        .iter()
        .map(|n| skeleton.find(n))
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = String::from("frame");
    for n in DUMPED {
        out +=
            &format!(",{n}_x,{n}_y,{n}_z,{n}_u,{n}_v,{n}_det_u,{n}_det_v,{n}_det_z,{n}_det_score");
    }
    out.push('\n');
    let landmark = |n: &str| {
        let side = if n.starts_with("Right") {
            "right"
        } else {
            "left"
        };
        ["Shoulder", "Elbow", "Wrist"]
            .iter()
            .find(|j| n.ends_with(*j))
            .map(|j| format!("{side}_{}", j.to_lowercase()))
    };
    for (f, _, c) in frames {
        let w = skeleton.forward_kinematics(&c[0].pose)?;
        out += &f.to_string();
        for (&j, n) in ids.iter().zip(DUMPED) {
            let p = Point3::from(w[j].translation.vector);
            let (u, v, _) = camera.project(&p).unwrap_or((f64::NAN, f64::NAN, 0.0));
            let det = landmark(n)
                .and_then(|l| detections.get(f)?.get(&l))
                .map_or([f64::NAN; 4], |k| [k.u, k.v, k.z, k.score].map(f64::from));
            out += &format!(
                ",{:.5},{:.5},{:.5},{u:.2},{v:.2},{:.2},{:.2},{:.2},{:.3}",
                p.x, p.y, p.z, det[0], det[1], det[2], det[3]
            );
        }
        out.push('\n');
    }
    std::fs::write(path, out).with_context(|| format!("writing {}", path.display()))
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    s / n.max(1) as f64
}

fn main() -> Result<()> {
    let mut o = Settings {
        particles: 300,
        observation: "both".into(),
        depth_sigma: track::DEFAULT_DEPTH_SIGMA,
        lifts: track::DEFAULT_KEYPOINT_LIFTS,
        keypoint_sigma: track::DEFAULT_KEYPOINT_SIGMA,
        smoothing: track::FilterSettings::default().smoothing,
        grid: false,
        hand_speed: track::smooth::DEFAULT_HAND_SPEED,
        temperature: track::smooth::DEFAULT_TEMPERATURE,
        lagged: false,
        dump: None,
        labels: None,
        truth_body: false,
        truth_camera: false,
        arm_prior_table: None,
        anatomy: track::DEFAULT_ANATOMY_WEIGHT,
        arm_prior: track::DEFAULT_ARM_PRIOR_WEIGHT,
    };
    let mut split = "validation".to_string();
    let mut seeds = vec![1u64, 2, 3];
    let mut only: Vec<String> = Vec::new();
    let mut csv_out: Option<PathBuf> = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--particles" => o.particles = val()?.parse()?,
            "--observation" => o.observation = val()?,
            "--depth-sigma" => o.depth_sigma = val()?.parse()?,
            "--lifts" => o.lifts = val()?.parse()?,
            "--keypoint-sigma" => o.keypoint_sigma = val()?.parse()?,
            "--split" => split = val()?,
            "--smooth" => o.smoothing = val()?.parse().map_err(anyhow::Error::msg)?,
            "--hand-speed" => o.hand_speed = val()?.parse()?,
            "--temperature" => o.temperature = val()?.parse()?,
            "--lagged-detections" => o.lagged = true,
            "--grid" => o.grid = true,
            "--truth-body" => o.truth_body = true,
            "--truth-camera" => o.truth_camera = true,
            "--arm-prior-table" => o.arm_prior_table = Some(val()?.into()),
            "--anatomy" => o.anatomy = val()?.parse()?,
            "--arm-prior" => o.arm_prior = val()?.parse()?,
            "--dump" => o.dump = Some(val()?.into()),
            "--labels" => {
                let v = val()?;
                let size = v
                    .split_once('x')
                    .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
                    .filter(|&(w, h): &(u32, u32)| w > 0 && h > 0);
                o.labels = Some(size.with_context(|| {
                    format!("--labels {v}: expected WxH with both above 0, e.g. 320x240")
                })?);
            }
            "--seeds" => {
                seeds = val()?
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()?;
            }
            "--clips" => only = val()?.split(',').map(String::from).collect(),
            "--csv" => csv_out = Some(val()?.into()),
            other => bail!("unexpected argument {other}"),
        }
    }
    let chosen: Vec<Clip> = clips()?
        .into_iter()
        .filter(|c| split == "all" || c.split == split)
        .filter(|c| only.is_empty() || only.contains(&c.tag))
        .collect();
    if chosen.is_empty() {
        bail!("no clips of split `{split}` (tuning, validation, all)");
    }
    // The dump folder is made (or refused) before the first run.
    if let Some(dir) = &o.dump {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--dump {}: cannot make the folder", dir.display()))?;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    println!(
        "arm_eval {}: posecloud track, no set-up files, PFRTH N = {}, observation {}, seeds {:?}",
        args.join(" "),
        o.particles,
        o.observation,
        seeds
    );
    let mut csv = match &csv_out {
        Some(p) => {
            let new = !p.exists();
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)?;
            if new {
                writeln!(
                    f,
                    "args,tag,split,seed,tracked,rmse_r,rmse_l,floor_angle_r,floor_angle_l,floor_3d_r,floor_3d_l,fps,floor_order_r,floor_order_l"
                )?;
            }
            Some(f)
        }
        None => None,
    };
    let mut variants = Vec::new();
    if o.smoothing != Smoothing::None {
        variants.push(Variant {
            smoothing: o.smoothing,
            hand_speed: o.hand_speed,
            temperature: o.temperature,
        });
    }
    if o.grid {
        for smoothing in [Smoothing::Lag(6), Smoothing::Full] {
            for hand_speed in [1.0, 2.0, 4.0] {
                for temperature in [0.05, 0.25, 1.0] {
                    variants.push(Variant {
                        smoothing,
                        hand_speed,
                        temperature,
                    });
                }
            }
        }
    }
    let mut rows: Vec<Row> = Vec::new();
    for clip in &chosen {
        for &seed in &seeds {
            let t0 = std::time::Instant::now();
            let r = evaluate(clip, seed, &o, &variants)
                .with_context(|| format!("clip {} seed {seed}", clip.tag))?;
            eprintln!(
                "{} seed {seed}: right {:.1}° (floor {:.1}°), left {:.1}° (floor {:.1}°), {:.0} % tracked, {:.1} s",
                r.tag,
                r.rmse[0],
                r.floor_angle[0],
                r.rmse[1],
                r.floor_angle[1],
                100.0 * r.tracked,
                t0.elapsed().as_secs_f64()
            );
            if let Some(f) = csv.as_mut() {
                writeln!(
                    f,
                    "\"{}\",{},{},{},{:.3},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2},{:.2}",
                    args.join(" "),
                    r.tag,
                    r.split,
                    r.seed,
                    r.tracked,
                    r.rmse[0],
                    r.rmse[1],
                    r.floor_angle[0],
                    r.floor_angle[1],
                    r.floor_3d[0],
                    r.floor_3d[1],
                    r.fps,
                    r.floor_order[0],
                    r.floor_order[1]
                )?;
            }
            rows.push(r);
        }
    }
    println!(
        "| clip | split | move tracked | right elbow RMSE | floor∠ / floor± / floor3D | left elbow RMSE | floor∠ / floor± / floor3D | detector 2D px R (sh/el/wr) | L (sh/el/wr) | frames/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for clip in &chosen {
        let rs: Vec<&Row> = rows.iter().filter(|r| r.tag == clip.tag).collect();
        let m = |f: &dyn Fn(&Row) -> f64| mean(rs.iter().map(|r| f(r)));
        let spread = |si: usize| {
            let v: Vec<f64> = rs.iter().map(|r| r.rmse[si]).collect();
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            format!("{:.1}° ({lo:.0}–{hi:.0})", m(&|r| r.rmse[si]))
        };
        println!(
            "| {} | {} | {:.0} % | {} | {:.1}° / {:.1}° / {:.1}° | {} | {:.1}° / {:.1}° / {:.1}° | {:.1}/{:.1}/{:.1} | {:.1}/{:.1}/{:.1} | {:.1} |",
            clip.tag,
            clip.split,
            100.0 * m(&|r| r.tracked),
            spread(0),
            m(&|r| r.floor_angle[0]),
            m(&|r| r.floor_order[0]),
            m(&|r| r.floor_3d[0]),
            spread(1),
            m(&|r| r.floor_angle[1]),
            m(&|r| r.floor_order[1]),
            m(&|r| r.floor_3d[1]),
            m(&|r| r.det_px[0][0]),
            m(&|r| r.det_px[0][1]),
            m(&|r| r.det_px[0][2]),
            m(&|r| r.det_px[1][0]),
            m(&|r| r.det_px[1][1]),
            m(&|r| r.det_px[1][2]),
            m(&|r| r.fps),
        );
    }
    let all = |f: &dyn Fn(&Row) -> f64| mean(rows.iter().map(f));
    println!(
        "| **mean** | {split} | {:.0} % | **{:.1}°** | {:.1}° / {:.1}° / {:.1}° | **{:.1}°** | {:.1}° / {:.1}° / {:.1}° | | | {:.1} |",
        100.0 * all(&|r| r.tracked),
        all(&|r| r.rmse[0]),
        all(&|r| r.floor_angle[0]),
        all(&|r| r.floor_order[0]),
        all(&|r| r.floor_3d[0]),
        all(&|r| r.rmse[1]),
        all(&|r| r.floor_angle[1]),
        all(&|r| r.floor_order[1]),
        all(&|r| r.floor_3d[1]),
        all(&|r| r.fps),
    );
    {
        println!();
        println!("| estimate | right elbow RMSE | left elbow RMSE |");
        println!("|---|---|---|");
        let names = ["MAP of each frame (none)", "weighted mean of the particles"]
            .map(String::from)
            .into_iter()
            .chain(variants.iter().map(Variant::name));
        for (k, name) in names.enumerate() {
            println!(
                "| {name} | {:.1}° | {:.1}° |",
                all(&|r| r.variants[k][0]),
                all(&|r| r.variants[k][1])
            );
        }
    }
    let worst = rows
        .iter()
        .flat_map(|r| (0..2).map(move |s| (r.rmse[s] - r.floor_angle[s], &r.tag, SIDES[s], r.seed)))
        .fold((f64::NEG_INFINITY, None), |acc, (d, t, s, seed)| {
            if d > acc.0 {
                (d, Some((t, s, seed)))
            } else {
                acc
            }
        });
    if let (d, Some((t, s, seed))) = worst {
        println!("largest excess over the floor∠: {d:.1}° ({t}, {s} elbow, seed {seed})");
    }
    Ok(())
}

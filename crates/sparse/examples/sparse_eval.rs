//! Reproduces SPARSE Table 1 (and Fig. 6, 8, 9 as PNG): tracks the CMU walk
//! and hop clips from six synthetic IMUs and five markers with the REF, CD
//! and NGT priors and with the IK baseline (CD prior), and prints the mean
//! body position (cm) and orientation (deg) errors with ms per frame.
//!
//! ```text
//! cargo run --release -p sparse --example sparse_eval -- [--frames N] [--png DIR]
//!     [--paper] [--clusters K] [--cd-include-self] [--damping D] [--prior-damping D] [--sigma S] [--no-physics] [--filter-gain A] [--root-weight W] [--torque-scale S]
//! ```

use std::error::Error;
use std::path::{Path, PathBuf};
use std::time::Instant;

use nalgebra::Isometry3;
use plotkit::{Corner, Panel, Series};
use sparse::{
    Clip, ClusterOptions, ClusteredDatabase, IkMethod, IkTracker, MotionPrior, SensorFrame,
    SensorSet, SparseConfig, SparseStepReport, SparseTracker, SyntheticSensors, body_errors,
    error_bodies, finite_difference_velocity,
};

struct Options {
    paper: bool,
    frames: Option<usize>,
    png: Option<PathBuf>,
    clusters: usize,
    exclude_self: bool,
    damping: f64,
    prior_damping: f64,
    sigma: f64,
    physics: bool,
    filter_gain: f64,
    root_weight: f64,
    torque_scale: f64,
}

fn parse() -> Result<Options, Box<dyn Error>> {
    let mut o = Options {
        paper: false,
        frames: None,
        png: None,
        clusters: 500,
        exclude_self: true,
        damping: SparseConfig::tuned().damping,
        prior_damping: SparseConfig::tuned().prior_damping,
        sigma: 0.12,
        physics: true,
        filter_gain: SparseConfig::default().filter_gain,
        root_weight: SparseConfig::default().root_torque_weight,
        torque_scale: SparseConfig::default().torque_limit_scale,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--frames" => o.frames = Some(value()?.parse()?),
            "--png" => o.png = Some(PathBuf::from(value()?)),
            "--clusters" => o.clusters = value()?.parse()?,
            "--cd-include-self" => o.exclude_self = false,
            "--damping" => o.damping = value()?.parse()?,
            "--prior-damping" => o.prior_damping = value()?.parse()?,
            "--no-physics" => o.physics = false,
            "--filter-gain" => o.filter_gain = value()?.parse()?,
            "--root-weight" => o.root_weight = value()?.parse()?,
            "--torque-scale" => o.torque_scale = value()?.parse()?,
            "--paper" => {
                o.paper = true;
                o.damping = SparseConfig::default().damping;
                o.prior_damping = SparseConfig::default().prior_damping;
            }
            "--sigma" => o.sigma = value()?.parse()?,
            "--help" | "-h" => {
                println!(
                    "sparse_eval [--frames N] [--png DIR] [--paper] [--clusters K] [--cd-include-self] [--damping D] [--prior-damping D] [--sigma S] [--no-physics] [--filter-gain A] [--root-weight W] [--torque-scale S]"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if !(o.damping.is_finite() && o.damping > 0.0) {
        return Err(format!("--damping must be positive, got {}", o.damping).into());
    }
    Ok(o)
}

/// Per-frame results of one run.
struct Run {
    label: String,
    pos_cm: Vec<f64>,
    ang_deg: Vec<f64>,
    ms: f64,
    reports: Vec<SparseStepReport>,
}

impl Run {
    fn mean_pos(&self) -> f64 {
        self.pos_cm.iter().sum::<f64>() / self.pos_cm.len() as f64
    }
    fn mean_ang(&self) -> f64 {
        self.ang_deg.iter().sum::<f64>() / self.ang_deg.len() as f64
    }
}

fn errors_of(clip: &Clip, bodies: &[usize], f: usize, pose: &[f64]) -> (f64, f64) {
    let s = &clip.skeleton;
    let mut truth = vec![Isometry3::identity(); s.len()];
    let mut tracked = truth.clone();
    s.forward_kinematics_into(&clip.poses[f], &mut truth);
    s.forward_kinematics_into(pose, &mut tracked);
    let (p, a) = body_errors(s, bodies, &truth, &tracked);
    (p * 100.0, a.to_degrees())
}

fn run_physics(
    clip: &Clip,
    sensors: &SensorSet,
    prior: MotionPrior,
    config: &SparseConfig,
    frames: usize,
) -> Result<Run, Box<dyn Error>> {
    let label = prior.name().to_string();
    let mut tracker = SparseTracker::new(&clip.skeleton, sensors.clone(), prior, config.clone())?;
    let v0 = finite_difference_velocity(
        tracker.model(),
        &clip.poses[0],
        &clip.poses[1],
        clip.frame_time,
    )?;
    tracker.reset(&clip.poses[0], Some(&v0))?;
    record(clip, sensors, frames, label, |r| {
        let report = tracker.step(r)?;
        Ok((report.pose.clone(), Some(report)))
    })
}

fn run_ik(
    clip: &Clip,
    sensors: &SensorSet,
    prior: MotionPrior,
    method: IkMethod,
    frames: usize,
) -> Result<Run, Box<dyn Error>> {
    let mut ik = IkTracker::new(&clip.skeleton, sensors.clone(), prior, method)?;
    ik.reset(&clip.poses[0])?;
    record(clip, sensors, frames, method.name().to_string(), |r| {
        Ok((ik.step(r)?.to_vec(), None))
    })
}

/// Runs `step` on the synthetic readings of `clip`'s first `frames` frames
/// (from the second: the tracker starts at the first) and records the
/// errors of the poses it returns, its mean time per frame and its reports.
fn record(
    clip: &Clip,
    sensors: &SensorSet,
    frames: usize,
    label: String,
    mut step: impl FnMut(&SensorFrame) -> Result<(Vec<f64>, Option<SparseStepReport>), Box<dyn Error>>,
) -> Result<Run, Box<dyn Error>> {
    let readings =
        SyntheticSensors::default().synthesize(sensors, &clip.skeleton, &clip.poses[..frames])?;
    let bodies = error_bodies(&clip.skeleton);
    let mut run = Run {
        label,
        pos_cm: Vec::new(),
        ang_deg: Vec::new(),
        ms: 0.0,
        reports: Vec::new(),
    };
    let mut elapsed = 0.0;
    for (f, r) in readings.iter().enumerate().skip(1) {
        let t = Instant::now();
        let (pose, report) = step(r)?;
        elapsed += t.elapsed().as_secs_f64();
        let (p, a) = errors_of(clip, &bodies, f, &pose);
        run.pos_cm.push(p);
        run.ang_deg.push(a);
        run.reports.extend(report);
    }
    run.ms = elapsed * 1e3 / (frames - 1) as f64;
    Ok(run)
}

fn main() -> Result<(), Box<dyn Error>> {
    let o = parse()?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/motions");
    let clips = [
        Clip::load_bvh(root.join("cmu_131_01_walk.bvh"), 60.0)?,
        Clip::load_bvh(root.join("cmu_131_03_hop.bvh"), 60.0)?,
    ];
    let config = SparseConfig {
        damping: o.damping,
        prior_damping: o.prior_damping,
        physics: o.physics,
        filter_gain: o.filter_gain,
        root_torque_weight: o.root_weight,
        torque_limit_scale: o.torque_scale,
        ..SparseConfig::default()
    };
    println!(
        "SPARSE Table 1 on CMU 131 clips at 60 Hz: mean body position (cm) / orientation (deg) error, ms per frame\n\
         settings: {}; damping: sensors {}, prior {}; NGT sigma {} rad; CD: {} clusters from {}",
        if o.paper { "paper" } else { "tuned" },
        o.damping,
        o.prior_damping,
        o.sigma,
        o.clusters,
        if o.exclude_self {
            "the other clip"
        } else {
            "both clips"
        }
    );
    println!(
        "{:<6} {:>6} | {:>17} {:>17} {:>17} | {:>17} {:>17}",
        "clip", "frames", "REF cm deg ms", "CD", "NGT", "IK pinv (CD)", "IK DLS (CD)"
    );
    let mut figures: Vec<Figure> = Vec::new();
    for (c, clip) in clips.iter().enumerate() {
        let frames = o.frames.unwrap_or(clip.len()).min(clip.len());
        let sensors = SensorSet::paper_layout(&clip.skeleton)?;
        let db_clips: Vec<&[Vec<f64>]> = clips
            .iter()
            .enumerate()
            .filter(|(k, _)| !o.exclude_self || *k != c)
            .map(|(_, k)| k.poses.as_slice())
            .collect();
        let db = ClusteredDatabase::build(
            &clip.skeleton,
            &sensors,
            &db_clips,
            ClusterOptions {
                clusters: o.clusters,
                ..ClusterOptions::default()
            },
        )?;
        let priors = [
            MotionPrior::reference(&clip.skeleton),
            MotionPrior::Clustered(db.clone()),
            MotionPrior::noisy_ground_truth(clip.poses.clone(), o.sigma, 11)?,
        ];
        let mut runs = Vec::new();
        for p in priors {
            runs.push(run_physics(clip, &sensors, p, &config, frames)?);
        }
        runs.push(run_ik(
            clip,
            &sensors,
            MotionPrior::Clustered(db.clone()),
            IkMethod::PseudoInverse,
            frames,
        )?);
        runs.push(run_ik(
            clip,
            &sensors,
            MotionPrior::Clustered(db),
            IkMethod::DampedLeastSquares { damping: 0.05 },
            frames,
        )?);
        let cell = |r: &Run| format!("{:5.2} {:5.2} {:4.2}", r.mean_pos(), r.mean_ang(), r.ms);
        // The paper's comparable rows (Table 1): running for the walk, jump & kicks for the hop.
        let paper = if c == 0 {
            (
                "paper: running",
                [(1.47, 7.26), (0.80, 6.41), (0.11, 0.72), (1.26, 6.69)],
            )
        } else {
            (
                "paper: jump & kicks",
                [(0.59, 3.99), (0.20, 2.33), (0.15, 1.39), (0.34, 5.26)],
            )
        };
        println!(
            "{:<6} {:>6} | {:>17} {:>17} {:>17} | {:>17} {:>17}",
            if c == 0 { "walk" } else { "hop" },
            frames,
            cell(&runs[0]),
            cell(&runs[1]),
            cell(&runs[2]),
            cell(&runs[3]),
            cell(&runs[4])
        );
        let p = |k: usize| format!("{:5.2} {:5.2}  17 ", paper.1[k].0, paper.1[k].1);
        println!(
            "{:<13} | {:>17} {:>17} {:>17} | {:>17}",
            paper.0,
            p(0),
            p(1),
            p(2),
            p(3)
        );
        let ik = runs[3].mean_pos().min(runs[4].mean_pos());
        let ik_ang = runs[3].mean_ang().min(runs[4].mean_ang());
        let below_ik = runs[..3]
            .iter()
            .filter(|r| r.mean_pos() < ik && r.mean_ang() < ik_ang)
            .count();
        let below_paper = runs[..3]
            .iter()
            .zip(&paper.1)
            .filter(|(r, (pp, pa))| r.mean_pos() <= *pp && r.mean_ang() <= *pa)
            .count();
        for r in &runs[..3] {
            let n = r.reports.len().max(1) as f64;
            let root: f64 = r
                .reports
                .iter()
                .map(|x| {
                    nalgebra::Vector3::new(
                        x.joint_torques[0],
                        x.joint_torques[1],
                        x.joint_torques[2],
                    )
                    .norm()
                })
                .sum::<f64>()
                / n;
            let support: f64 = r
                .reports
                .iter()
                .map(|x| x.contacts.iter().map(|c| c.force().norm()).sum::<f64>())
                .sum::<f64>()
                / n;
            let contacts: f64 = r
                .reports
                .iter()
                .map(|x| x.contacts.len() as f64)
                .sum::<f64>()
                / n;
            println!(
                "  {:<4} contacts/frame {contacts:.2}, mean contact force {support:.0} N, mean residual root force {root:.0} N",
                r.label
            );
        }
        println!(
            "  physics priors below the better IK in both errors: {below_ik}/3; at or below the paper's cell: {below_paper}/3; slowest physics frame average {:.2} ms",
            runs[..3].iter().map(|r| r.ms).fold(0.0, f64::max)
        );
        if let Some(dir) = &o.png {
            std::fs::create_dir_all(dir)?;
            let name = if c == 0 { "walk" } else { "hop" };
            plot_errors(
                &dir.join(format!("sparse_errors_{name}.png")),
                name,
                &runs,
                clip.frame_time,
            )?;
            figures.push((name, clip.skeleton.clone(), clip.frame_time, runs.remove(1)));
        }
    }
    if let Some(dir) = &o.png {
        plot_contacts(&dir.join("sparse_contacts.png"), &figures)?;
        plot_knee(&dir.join("sparse_knee_torque.png"), &figures)?;
        println!(
            "wrote {}/sparse_errors_{{walk,hop}}.png, sparse_contacts.png, sparse_knee_torque.png",
            dir.display()
        );
    }
    Ok(())
}

type Figure = (&'static str, skeleton::Skeleton, f64, Run);

/// Panels stacked in one column, 1000 × 330 px each, over time in seconds.
fn draw(path: &Path, panels: &[Panel]) -> Result<(), Box<dyn Error>> {
    Ok(plotkit::save_png(path, panels, 1, (1000, 330))?)
}

/// A panel of named series over time, in the palette's order.
fn panel(title: String, y_label: &str, series: Vec<(String, Vec<(f64, f64)>)>) -> Panel {
    let mut panel = Panel::new(title, "time (s)", y_label).legend_at(Corner::MiddleRight);
    for (k, (name, points)) in series.into_iter().enumerate() {
        panel.push(Series::line(name, points, k));
    }
    panel
}

/// Fig. 6: position and orientation error per frame for every method.
fn plot_errors(path: &Path, clip: &str, runs: &[Run], dt: f64) -> Result<(), Box<dyn Error>> {
    let series = |f: &dyn Fn(&Run) -> &Vec<f64>| {
        runs.iter()
            .map(|r| {
                let pts = f(r)
                    .iter()
                    .enumerate()
                    .map(|(i, e)| ((i + 1) as f64 * dt, *e))
                    .collect();
                (r.label.clone(), pts)
            })
            .collect::<Vec<_>>()
    };
    draw(
        path,
        &[
            panel(
                format!("{clip}: mean body position error per frame"),
                "cm",
                series(&|r| &r.pos_cm),
            ),
            panel(
                format!("{clip}: mean body orientation error per frame"),
                "deg",
                series(&|r| &r.ang_deg),
            ),
        ],
    )
}

/// Sum of the contact force magnitudes on bones named Left*/Right* per frame.
fn side_forces(sk: &skeleton::Skeleton, run: &Run, dt: f64, side: &str) -> Vec<(f64, f64)> {
    run.reports
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let f: f64 = r
                .contacts
                .iter()
                .filter(|c| sk.joint(c.joint).name.starts_with(side))
                .map(|c| c.force().norm())
                .sum();
            ((i + 1) as f64 * dt, f)
        })
        .collect()
}

/// Fig. 8: foot contact forces over time (CD prior).
fn plot_contacts(path: &Path, figures: &[Figure]) -> Result<(), Box<dyn Error>> {
    let panels: Vec<Panel> = figures
        .iter()
        .map(|(name, sk, dt, run)| {
            panel(
                format!("{name}: foot contact forces ({} prior)", run.label),
                "N",
                vec![
                    ("left foot".into(), side_forces(sk, run, *dt, "Left")),
                    ("right foot".into(), side_forces(sk, run, *dt, "Right")),
                ],
            )
        })
        .collect();
    draw(path, &panels)
}

/// Fig. 9: left knee flexion torque (the knee's local x moment).
fn plot_knee(path: &Path, figures: &[Figure]) -> Result<(), Box<dyn Error>> {
    let mut panels = Vec::new();
    for (name, sk, dt, run) in figures {
        let knee = sk.find("LeftKnee")?;
        let i = sk.param_range(knee).start;
        panels.push(panel(
            format!("{name}: left knee torque ({} prior)", run.label),
            "N m",
            vec![(
                "flexion (local x)".into(),
                run.reports
                    .iter()
                    .enumerate()
                    .map(|(k, r)| ((k + 1) as f64 * dt, r.joint_torques[i]))
                    .collect(),
            )],
        ));
    }
    draw(path, &panels)
}

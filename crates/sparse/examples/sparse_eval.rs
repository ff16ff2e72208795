//! Reproduces SPARSE Table 1 (and Fig. 6, 8, 9 as PNG): tracks the CMU walk
//! and hop clips from six synthetic IMUs and five markers with the REF, CD
//! and NGT priors and with the IK baseline (CD prior), and prints the mean
//! body position (cm) and orientation (deg) errors with ms per frame.
//!
//! ```text
//! cargo run --release -p sparse --example sparse_eval -- [--frames N] [--png DIR]
//!     [--clusters K] [--cd-exclude-self] [--damping D] [--sigma S]
//! ```

use std::error::Error;
use std::path::{Path, PathBuf};
use std::time::Instant;

use nalgebra::Isometry3;
use sparse::{
    Clip, ClusterOptions, ClusteredDatabase, IkMethod, IkTracker, MotionPrior, SensorSet,
    SparseTracker, StepReport, SyntheticSensors, TrackerConfig, body_errors, error_bodies,
    finite_difference_velocity,
};

struct Options {
    frames: Option<usize>,
    png: Option<PathBuf>,
    clusters: usize,
    exclude_self: bool,
    damping: f64,
    sigma: f64,
}

fn parse() -> Result<Options, Box<dyn Error>> {
    let mut o = Options {
        frames: None,
        png: None,
        clusters: 500,
        exclude_self: false,
        damping: 2.0,
        sigma: 0.12,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--frames" => o.frames = Some(value()?.parse()?),
            "--png" => o.png = Some(PathBuf::from(value()?)),
            "--clusters" => o.clusters = value()?.parse()?,
            "--cd-exclude-self" => o.exclude_self = true,
            "--damping" => o.damping = value()?.parse()?,
            "--sigma" => o.sigma = value()?.parse()?,
            "--help" | "-h" => {
                println!(
                    "sparse_eval [--frames N] [--png DIR] [--clusters K] [--cd-exclude-self] [--damping D] [--sigma S]"
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
    reports: Vec<StepReport>,
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
    config: &TrackerConfig,
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
        let report = tracker.step(r)?;
        elapsed += t.elapsed().as_secs_f64();
        let (p, a) = errors_of(clip, &bodies, f, &report.pose);
        run.pos_cm.push(p);
        run.ang_deg.push(a);
        run.reports.push(report);
    }
    run.ms = elapsed * 1e3 / (frames - 1) as f64;
    Ok(run)
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
    let readings =
        SyntheticSensors::default().synthesize(sensors, &clip.skeleton, &clip.poses[..frames])?;
    let bodies = error_bodies(&clip.skeleton);
    let mut run = Run {
        label: method.name().to_string(),
        pos_cm: Vec::new(),
        ang_deg: Vec::new(),
        ms: 0.0,
        reports: Vec::new(),
    };
    let mut elapsed = 0.0;
    for (f, r) in readings.iter().enumerate().skip(1) {
        let t = Instant::now();
        let pose = ik.step(r)?.to_vec();
        elapsed += t.elapsed().as_secs_f64();
        let (p, a) = errors_of(clip, &bodies, f, &pose);
        run.pos_cm.push(p);
        run.ang_deg.push(a);
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
    let config = TrackerConfig {
        damping: o.damping,
        ..TrackerConfig::default()
    };
    println!(
        "SPARSE Table 1 on CMU 131 clips at 60 Hz: mean body position (cm) / orientation (deg) error, ms per frame"
    );
    println!(
        "{:<6} {:>6} | {:>17} {:>17} {:>17} | {:>17} {:>17}",
        "clip", "frames", "REF", "CD", "NGT", "IK pinv (CD)", "IK DLS (CD)"
    );
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
        let _ = (&o.png, &runs[0].label);
    }
    Ok(())
}

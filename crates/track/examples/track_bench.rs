//! Time of a whole tracker step — selection, propagation, forward
//! kinematics, likelihood (RTPF Eq. 1–2) and normalisation — per particle
//! count, on the CPU likelihood and on the GPU one (whatever adapter wgpu
//! finds; lavapipe runs on the CPU), with the stages broken down.
//!
//! ```text
//! cargo run --release -p track --example track_bench -- [--particles 100,300,700,2000]
//!     [--filter pfs] [--frames 20] [--backends cpu,gpu]
//! ```
//!
//! The body is the `rtpf_upper_body` preset (23 parameters) at 160 × 120,
//! 3.5 m from the camera, tracking a synthetic arm movement; the issue's
//! goal is a 700-particle step in ≤ 40 ms on this 2-core CPU.

use std::time::Duration;

use track::synthetic::{level_camera, render_observation, upper_body_parts};
use track::{BackendChoice, FilterKind, TrackedBody, Tracker, TrackerConfig};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Res<()> {
    let mut particles = vec![100, 300, 700, 2000];
    let mut filter = FilterKind::Pfs;
    let mut frames = 20usize;
    let mut backends = vec![BackendChoice::Cpu, BackendChoice::Gpu];
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or(format!("{k} needs a value"));
        match k.as_str() {
            "--particles" => {
                particles = v()?.split(',').map(str::parse).collect::<Result<_, _>>()?
            }
            "--filter" => filter = v()?.parse()?,
            "--frames" => frames = v()?.parse()?,
            "--backends" => backends = v()?.split(',').map(str::parse).collect::<Result<_, _>>()?,
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    let body = TrackedBody::rtpf_upper_body();
    let skel = body.skeleton();
    let cam = level_camera([0.3, 1.3, 3.5], [0.0, 1.2, 0.0], 35.0, 160, 120)?;
    let map = upper_body_parts();
    let sh = skel.param_range(skel.find("r_shoulder")?).start;
    let el = skel.param_range(skel.find("r_elbow")?).start;
    let truth: Vec<Vec<f64>> = (0..frames)
        .map(|k| {
            let t = k as f64 / frames.max(2) as f64;
            let mut p = body.base().to_vec();
            p[sh + 1] = -0.4 - 0.4 * t;
            p[el] = 0.5 + 0.6 * (std::f64::consts::PI * t).sin();
            p
        })
        .collect();
    let obs: Vec<_> = truth
        .iter()
        .enumerate()
        .map(|(k, p)| render_observation(&body, &cam, p, &map, 0.005, k as u64))
        .collect::<Result<_, _>>()?;
    println!("| back end | N | step ms (median) | select | predict | measure | evaluations |");
    println!("|---|---|---|---|---|---|---|");
    for &backend in &backends {
        for &n in &particles {
            let config = TrackerConfig {
                particles: n,
                filter,
                backend,
                label_map: map,
                ..TrackerConfig::default()
            };
            let mut tracker = match Tracker::new(body.clone(), cam.clone(), &truth[0], None, config)
            {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("{backend:?}: {e}");
                    break;
                }
            };
            let mut totals = Vec::new();
            let mut stages = [Duration::ZERO; 3];
            let mut evals = 0;
            for o in &obs {
                let r = tracker.step(o)?.report();
                totals.push(r.timings.total.as_secs_f64() * 1e3);
                stages[0] += r.timings.select;
                stages[1] += r.timings.predict;
                stages[2] += r.timings.measure;
                evals += r.evaluations;
            }
            totals.sort_by(f64::total_cmp);
            let ms = |d: Duration| d.as_secs_f64() * 1e3 / obs.len() as f64;
            println!(
                "| {} | {n} | {:.2} | {:.2} | {:.2} | {:.2} | {} |",
                tracker.describe(),
                totals[totals.len() / 2],
                ms(stages[0]),
                ms(stages[1]),
                ms(stages[2]),
                evals / obs.len()
            );
        }
    }
    Ok(())
}

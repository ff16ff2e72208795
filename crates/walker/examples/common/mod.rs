//! Shared by the PHYSPRIOR examples: the CMU walk, the cameras, one
//! tracking run with its per-frame records, PNG line plots.
#![allow(dead_code)]

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use labels::Camera;
use nalgebra::{Point3, Vector3};
use plotkit::plotters::prelude::*;
use plotkit::{Corner, Panel, Series, colour};
use walker::mocap::{POINTS, TruthClip};
use walker::observe;
use walker::{Dynamics, InitialPose, WalkerConfig, WalkerTracker};

/// The CMU clip 131_01 ("start, walk, stop", with stylised steps before
/// the walk) resampled by `stride` from 120 Hz, restricted to its walk: the
/// longest run of frames where the hip moves along z faster than 0.6 m/s
/// at standing height (about 2 s, frames 500–750 at 120 Hz).
pub(crate) fn walk_clip(root: &Path, stride: usize) -> Result<TruthClip> {
    let path = root.join("assets/motions/cmu_131_01_walk.bvh");
    let full = TruthClip::load(&path, 0, stride, usize::MAX)
        .with_context(|| format!("loading {}", path.display()))?;
    Ok(full.walking_part()?)
}

/// Centre and main direction of the walk.
pub(crate) fn walk_frame(clip: &TruthClip) -> (Point3<f64>, Vector3<f64>) {
    clip.walk_frame()
}

/// A 640×480 camera `distance` m from the middle of the walk, at `angle`
/// from the perpendicular of the walking direction (0: side view).
pub(crate) fn camera(clip: &TruthClip, angle: f64, distance: f64) -> Result<Camera> {
    Ok(clip.side_camera(angle, distance)?)
}

/// Heading noise `τ⁻¹σ` (rad/s) used by the examples for every prior.
pub(crate) const HEADING_NOISE: f64 = 0.02;

/// Per-frame record of a run.
#[derive(Debug, Clone)]
pub(crate) struct FrameRecord {
    pub err_px: [f64; POINTS],
    pub err_cm: [f64; POINTS],
    pub area: [f64; POINTS],
    pub ess: f64,
    pub mean_points: [Point3<f64>; POINTS],
    pub ellipses: [walker::Ellipse; POINTS],
    pub mean_legs: [walker::kinematics::LegPoints; 2],
}

/// A run's records, its MAP trajectory and its wall time.
pub(crate) struct Run {
    pub frames: Vec<FrameRecord>,
    pub map: Vec<[Point3<f64>; POINTS]>,
    pub seconds: f64,
}

#[allow(clippy::too_many_arguments)]
/// Tracks `clip` seen by `camera` with `dynamics`, `n` particles, pixel
/// noise `noise_px`; points in `hidden` frames are dropped according to
/// `visible(frame)`.
pub(crate) fn run(
    clip: &TruthClip,
    camera: &Camera,
    dynamics: Dynamics,
    n: usize,
    n_thres: usize,
    seed: u64,
    noise_px: f64,
    visible: &dyn Fn(usize) -> [bool; POINTS],
) -> Result<Run> {
    let init = InitialPose::from_truth(clip, 0)?;
    let mut cfg = WalkerConfig::thesis(dynamics, camera.clone(), init);
    cfg.particles = n;
    cfg.resample_threshold = n_thres;
    cfg.seed = seed;
    cfg.frame_time = clip.frame_time;
    // RK4 at h = 1/60 s (energy error ~3e-7 per stride).
    cfg.substeps = (clip.frame_time * 60.0).round().max(1.0) as usize;
    // Deviation from Table 2.5 (0.2 rad/s): with α = 1 the heading rate is a
    // random walk that a side view cannot observe (it only shows as depth),
    // and on this straight walk it sends every prior off in depth.
    cfg.joints.torso.noise = HEADING_NOISE;
    let mut tracker = WalkerTracker::new(cfg)?;
    let mut rng = smc::stream_rng(seed, 0, smc::StreamDomain::User(7), 0);
    let mut frames = Vec::with_capacity(clip.len());
    let start = Instant::now();
    for (f, truth) in clip.frames.iter().enumerate() {
        let obs = observe(camera, &truth.points, &visible(f), noise_px, &mut rng);
        let r = tracker.step(&obs)?;
        let mut rec = FrameRecord {
            err_px: [0.0; POINTS],
            err_cm: [0.0; POINTS],
            area: [0.0; POINTS],
            ess: r.ess,
            mean_points: r.mean_points,
            ellipses: r.ellipses,
            mean_legs: r.mean_pose.leg_points(),
        };
        for k in 0..POINTS {
            let (u, v, _) = camera
                .project(&truth.points[k])
                .context("truth behind camera")?;
            let e = &r.ellipses[k];
            rec.err_px[k] = (e.mean[0] - u).hypot(e.mean[1] - v);
            rec.err_cm[k] = 100.0 * (r.mean_points[k] - truth.points[k]).norm();
            rec.area[k] = e.area();
        }
        frames.push(rec);
    }
    let seconds = start.elapsed().as_secs_f64();
    let map = tracker.map_trajectory()?;
    Ok(Run {
        frames,
        map,
        seconds,
    })
}

/// Mean over `frames` of the per-point values `f`.
pub(crate) fn mean_over(
    recs: &[FrameRecord],
    f: impl Fn(&FrameRecord) -> [f64; POINTS],
) -> [f64; POINTS] {
    let mut s = [0.0; POINTS];
    for r in recs {
        for (a, b) in s.iter_mut().zip(f(r)) {
            *a += b;
        }
    }
    s.map(|x| x / recs.len().max(1) as f64)
}

/// Frames where a foot begins a ground contact (ankle low and slow).
pub(crate) fn contact_onsets(clip: &TruthClip, foot: usize) -> Vec<usize> {
    clip.contact_onsets(foot)
}

/// A PNG line plot of named series over frames (900 × 480 px), y from 0,
/// the frames `shade` covers shaded; values above the top are drawn at it.
pub(crate) fn line_plot(
    path: &Path,
    title: &str,
    y_label: &str,
    series: &[(String, Vec<f64>)],
    shade: Option<(usize, usize)>,
) -> Result<()> {
    // Red, green, blue first: the thesis' colours for its first three lines.
    const ORDER: [usize; 6] = [3, 2, 0, 1, 4, 5];
    let n = series.iter().map(|s| s.1.len()).max().unwrap_or(1);
    let ymax = series
        .iter()
        .flat_map(|s| s.1.iter().copied())
        .filter(|v| v.is_finite())
        .fold(1e-9, f64::max)
        * 1.05;
    let mut panel = Panel::new(title, "frame", y_label)
        .fixed_x(0.0..n as f64)
        .fixed_y(0.0..ymax)
        .legend_at(Corner::MiddleRight);
    panel.shaded.extend(shade.map(|(a, b)| a as f64..b as f64));
    for (i, (name, ys)) in series.iter().enumerate() {
        let points = ys.iter().enumerate().map(|(x, &y)| (x as f64, y.min(ymax)));
        panel.push(Series::line(
            name.clone(),
            points.collect(),
            ORDER[i % ORDER.len()],
        ));
    }
    plotkit::save_png(path, &[panel], 1, (900, 480))?;
    Ok(())
}

/// What [`image_plot`] draws per shown frame.
pub(crate) enum Layer<'a> {
    /// Mean-pose stick figures (hip segment red, thighs green, shanks blue,
    /// feet red; PHYSPRIOR Ch. 4's colours).
    MeanPose(&'a [FrameRecord]),
    /// One-σ ellipses of the points (hip red, knees green, feet blue).
    Ellipses(&'a [FrameRecord]),
    /// Stick figures of the MAP trajectory's points.
    Map(&'a [[Point3<f64>; POINTS]]),
}

/// An image-space figure (the camera's view, zoomed on the walk) of every `every`-th
/// frame, like the thesis' Fig. 4.2–4.9, with the observed points as grey
/// circles (hollow where occluded).
pub(crate) fn image_plot(
    path: &Path,
    title: &str,
    camera: &Camera,
    clip: &TruthClip,
    layer: Layer<'_>,
    every: usize,
    hidden: &dyn Fn(usize) -> bool,
) -> Result<()> {
    plotkit::register_font()?;
    // Zoom on the walk: the image region of the observed points, padded.
    let (mut u0, mut u1, mut v0, mut v1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for fr in &clip.frames {
        for p in &fr.points {
            if let Some((u, v, _)) = camera.project(p) {
                (u0, u1, v0, v1) = (u0.min(u), u1.max(u), v0.min(v), v1.max(v));
            }
        }
    }
    let pad = 0.15 * (u1 - u0).max(v1 - v0) + 10.0;
    let (u0, u1, v0, v1) = (u0 - pad, u1 + pad, v0 - pad, v1 + pad);
    let width = 1000u32;
    let height = ((v1 - v0) / (u1 - u0) * f64::from(width))
        .round()
        .max(100.0) as u32;
    let root = BitMapBackend::new(path, (width, height + 40)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (plotkit::FAMILY, 16))
        .margin(5)
        .build_cartesian_2d(u0..u1, v1..v0)?;
    chart.configure_mesh().disable_mesh().draw()?;
    let px = |p: &Point3<f64>| camera.project(p).map(|(u, v, _)| (u, v));
    let (red, green, blue) = (colour(3), colour(2), colour(0));
    let grey = RGBColor(150, 150, 150);
    for f in (0..clip.len()).step_by(every.max(1)) {
        for p in &clip.frames[f].points {
            if let Some(c) = px(p) {
                let style = if hidden(f) {
                    grey.stroke_width(1)
                } else {
                    grey.filled()
                };
                chart.draw_series(std::iter::once(Circle::new(c, 2, style)))?;
            }
        }
        let mut seg = |a: &Point3<f64>, b: &Point3<f64>, c: RGBColor| -> Result<()> {
            if let (Some(a), Some(b)) = (px(a), px(b)) {
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![a, b],
                    c.stroke_width(2),
                )))?;
            }
            Ok(())
        };
        match &layer {
            Layer::MeanPose(recs) => {
                let l = &recs[f].mean_legs;
                seg(&l[0].hip, &l[1].hip, red)?;
                for leg in l {
                    seg(&leg.hip, &leg.knee, green)?;
                    seg(&leg.knee, &leg.ankle, blue)?;
                    seg(&leg.heel, &leg.toe, red)?;
                }
            }
            Layer::Map(map) => {
                let p = &map[f];
                seg(&p[0], &p[1], green)?;
                seg(&p[1], &p[2], blue)?;
                seg(&p[0], &p[3], green)?;
                seg(&p[3], &p[4], blue)?;
            }
            Layer::Ellipses(recs) => {
                for (k, e) in recs[f].ellipses.iter().enumerate() {
                    let c = match k {
                        0 => red,
                        1 | 3 => green,
                        _ => blue,
                    };
                    let (a, b, ang) = e.axes();
                    let (sa, ca) = ang.sin_cos();
                    let pts: Vec<(f64, f64)> = (0..=32)
                        .map(|i| {
                            let t = i as f64 / 32.0 * std::f64::consts::TAU;
                            let (x, y) = (a.max(0.5) * t.cos(), b.max(0.5) * t.sin());
                            (e.mean[0] + ca * x - sa * y, e.mean[1] + sa * x + ca * y)
                        })
                        .collect();
                    chart.draw_series(std::iter::once(PathElement::new(pts, c.stroke_width(1))))?;
                }
            }
        }
    }
    root.present()?;
    Ok(())
}

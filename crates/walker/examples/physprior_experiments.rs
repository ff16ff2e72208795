//! PHYSPRIOR Ch. 4 experiments on the CMU walk (131_01) with synthetic 2D
//! observations (hip, knees, feet projected by a calibrated camera, 1 px
//! noise), for the anthropomorphic walker, the monopode and the
//! constant-velocity baseline (same N):
//!
//! - Exp. 1 (walking): side camera; 2D (px) and 3D (cm) error per point.
//! - Exp. 2 (occlusion): knee and foot points removed for 60 frames mid
//!   sequence; ellipse areas before / during / after, foot-placement error
//!   at the contacts inside and after the gap, MAP trajectory vs filter.
//! - Exp. 3 (oblique): the same walk from a camera 50° off the
//!   perpendicular (depth ambiguity, like the thesis' turning sequence).
//!
//! ```text
//! cargo run --release -p walker --example physprior_experiments -- [--exp all|walking|occlusion|oblique] [--out DIR] [--seed S]
//! ```

#[path = "common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};

use anyhow::Result;
use common::*;
use walker::Dynamics;
use walker::mocap::{POINT_NAMES, POINTS};

const PRIORS: [Dynamics; 3] = [
    Dynamics::Anthropomorphic,
    Dynamics::Monopode,
    Dynamics::ConstantVelocity,
];

/// The thesis' N / N_thres per prior; the baseline runs at the size of the
/// walker it is compared with in each table row.
fn sizes(d: Dynamics, baseline_n: usize) -> (usize, usize) {
    match d {
        Dynamics::Anthropomorphic => (2500, 500),
        Dynamics::Monopode => (5000, 2000),
        Dynamics::ConstantVelocity => (baseline_n, baseline_n / 5),
    }
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let get = |k: &str| {
        args.iter()
            .position(|a| a == k)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let exp = get("--exp").unwrap_or_else(|| "all".into());
    let out = PathBuf::from(get("--out").unwrap_or_else(|| "target/physprior".into()));
    let seed: u64 = get("--seed").map_or(Ok(1), |s| s.parse())?;
    std::fs::create_dir_all(&out)?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let clip = walk_clip(&root, 2)?;
    println!(
        "CMU 131_01 walk: {} frames at {:.0} frames/s ({:.1} s)",
        clip.len(),
        1.0 / clip.frame_time,
        clip.len() as f64 * clip.frame_time
    );
    if exp == "all" || exp == "walking" {
        tracking_table(&clip, "walking", 0.0, seed, &out)?;
    }
    if exp == "all" || exp == "occlusion" {
        occlusion(&clip, seed, &out)?;
    }
    if exp == "all" || exp == "oblique" {
        tracking_table(&clip, "oblique", 50f64.to_radians(), seed, &out)?;
    }
    Ok(())
}

fn tracking_table(
    clip: &walker::mocap::TruthClip,
    name: &str,
    angle: f64,
    seed: u64,
    out: &Path,
) -> Result<()> {
    let cam = camera(clip, angle, 6.0)?;
    println!(
        "\n## Exp. {}: {name} (camera {:.0} deg off the perpendicular)",
        if angle == 0.0 { 1 } else { 3 },
        angle.to_degrees()
    );
    println!(
        "| prior | N | hip px | knee px | foot px | hip cm | knee cm | foot cm | mean ESS | frames/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut series = Vec::new();
    for (d, base_n) in [
        (PRIORS[0], 2500),
        (PRIORS[1], 5000),
        (PRIORS[2], 2500),
        (PRIORS[2], 5000),
    ] {
        let (n, thres) = sizes(d, base_n);
        let r = run(clip, &cam, d, n, thres, seed, 1.0, &|_| [true; POINTS])?;
        let px = mean_over(&r.frames, |f| f.err_px);
        let cm = mean_over(&r.frames, |f| f.err_cm);
        let ess = r.frames.iter().map(|f| f.ess).sum::<f64>() / r.frames.len() as f64;
        println!(
            "| {} | {n} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0} | {:.0} |",
            d.name(),
            px[0],
            0.5 * (px[1] + px[3]),
            0.5 * (px[2] + px[4]),
            cm[0],
            0.5 * (cm[1] + cm[3]),
            0.5 * (cm[2] + cm[4]),
            ess,
            r.frames.len() as f64 / r.seconds
        );
        if base_n == sizes(d, 2500).0 || d != Dynamics::ConstantVelocity {
            let png = out.join(format!("physprior_{name}_{}_mean_pose.png", d.name()));
            image_plot(
                &png,
                &format!("{name}, {} N={n}: mean pose every 4th frame", d.name()),
                &cam,
                clip,
                Layer::MeanPose(&r.frames),
                4,
                &|_| false,
            )?;
        }
        series.push((
            format!("{} N={n}", d.name()),
            r.frames
                .iter()
                .map(|f| f.err_cm.iter().sum::<f64>() / POINTS as f64)
                .collect(),
        ));
    }
    let png = out.join(format!("physprior_{name}_error.png"));
    line_plot(
        &png,
        &format!("PHYSPRIOR {name}: mean 3D point error"),
        "cm",
        &series,
        None,
    )?;
    println!("wrote {}", png.display());
    Ok(())
}

fn occlusion(clip: &walker::mocap::TruthClip, seed: u64, out: &Path) -> Result<()> {
    let cam = camera(clip, 0.0, 6.0)?;
    let t = clip.len();
    let (g0, g1) = (t / 2 - 30, t / 2 + 30);
    let visible = move |f: usize| {
        if f >= g0 && f < g1 {
            [true, false, false, false, false]
        } else {
            [true; POINTS]
        }
    };
    println!("\n## Exp. 2: occlusion (knee and foot points removed for frames {g0}..{g1})");
    println!(
        "| prior | N | area 10 before px² | area gap mid px² | area gap end px² | area 10 after px² | foot px in gap | foot px MAP in gap | contact in gap cm | first contact after cm |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let onsets: Vec<(usize, usize)> = {
        let mut v: Vec<(usize, usize)> = (0..2)
            .flat_map(|foot| {
                contact_onsets(clip, foot)
                    .into_iter()
                    .map(move |f| (f, foot))
            })
            .collect();
        v.sort();
        v
    };
    let mut area_series = Vec::new();
    for d in [PRIORS[0], PRIORS[1], PRIORS[2]] {
        let (n, thres) = sizes(d, 2500);
        let r = run(clip, &cam, d, n, thres, seed, 1.0, &visible)?;
        let kf_area = |f: usize| {
            let a = &r.frames[f].area;
            (a[1] + a[2] + a[3] + a[4]) / 4.0
        };
        let avg = |a: usize, b: usize| (a..b).map(kf_area).sum::<f64>() / (b - a) as f64;
        let foot_px = |frames: &mut dyn Iterator<Item = usize>, map: bool| {
            let mut s = 0.0;
            let mut n = 0;
            for f in frames {
                for k in [2, 4] {
                    let truth = cam.project(&clip.frames[f].points[k]).unwrap();
                    let est = if map {
                        cam.project(&r.map[f][k]).unwrap()
                    } else {
                        cam.project(&r.frames[f].mean_points[k]).unwrap()
                    };
                    s += (est.0 - truth.0).hypot(est.1 - truth.1);
                    n += 1;
                }
            }
            s / n as f64
        };
        let gap_px = foot_px(&mut (g0..g1), false);
        let gap_map_px = foot_px(&mut (g0..g1), true);
        // Last contact onset inside the gap, judged at the gap's last frame
        // (no data yet); first onset after the gap, judged at that frame.
        let place = |onset: Option<&(usize, usize)>, at: Option<usize>| {
            onset.map_or(f64::NAN, |&(f, foot)| {
                let k = if foot == 0 { 2 } else { 4 };
                let at = at.unwrap_or(f);
                let (e, tr) = (r.frames[at].mean_points[k], clip.frames[at].points[k]);
                100.0 * (e.x - tr.x).hypot(e.z - tr.z)
            })
        };
        let in_gap = onsets.iter().rev().find(|(f, _)| *f >= g0 && *f < g1 - 3);
        let after = onsets.iter().find(|(f, _)| *f >= g1);
        let (n_run, _) = (n, thres);
        println!(
            "| {} | {n_run} | {:.1} | {:.0} | {:.0} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            d.name(),
            avg(g0.saturating_sub(10).max(1), g0),
            kf_area(g0 + 30),
            kf_area(g1 - 1),
            avg(g1 + 1, (g1 + 11).min(t)),
            gap_px,
            gap_map_px,
            place(in_gap, Some(g1 - 1)),
            place(after, None),
        );
        for (layer, tag, what) in [
            (Layer::Ellipses(&r.frames), "ellipses", "point ellipses"),
            (Layer::Map(&r.map), "map", "MAP trajectory"),
        ] {
            let png = out.join(format!("physprior_occlusion_{}_{tag}.png", d.name()));
            image_plot(
                &png,
                &format!("occlusion, {} N={n}: {what} every 4th frame", d.name()),
                &cam,
                clip,
                layer,
                4,
                &|f| f >= g0 && f < g1,
            )?;
        }
        area_series.push((
            d.name().to_string(),
            (0..t).map(|f| kf_area(f).sqrt()).collect::<Vec<f64>>(),
        ));
    }
    let png = out.join("physprior_occlusion_area.png");
    line_plot(
        &png,
        "PHYSPRIOR occlusion: sqrt(mean knee/foot ellipse area), gap shaded",
        "px",
        &area_series,
        Some((g0, g1)),
    )?;
    println!("wrote {}", png.display());
    println!("(points: {POINT_NAMES:?})");
    Ok(())
}

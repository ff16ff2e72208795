//! Segmentation (RTPF §IV-D) against ground truth on synthetic renders of
//! the CMU walk: foreground IoU and per-class IoU for several viewpoints,
//! both sleeve lengths, sensor noise and ±20 % brightness changes, plus the
//! time per 640 × 480 → 160 × 120 frame.
//!
//! `cargo run --release -p vision --example segment_eval`

use vision::eval::{Scenario, evaluate};
use vision::{Appearance, RenderOptions, Sleeves};

fn main() -> anyhow::Result<()> {
    let bvh = skeleton::Bvh::load(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../assets/motions/cmu_131_01_walk.bvh"
    ))?;
    let long = Appearance {
        sleeves: Sleeves::Long,
        shirt: [170, 60, 50],
        trousers: [40, 50, 90],
        hair: Some([30, 25, 20]),
        skin: [150, 105, 80],
    };
    println!(
        "| view | sleeves | noise σ | gain | fg IoU | head | skin | shirt | trousers | mean class IoU | ms/frame |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut worst_fg: f64 = 1.0;
    for az in [0.0, 45.0, 90.0, 180.0] {
        for (name, app) in [("short", Appearance::default()), ("long", long.clone())] {
            for gain in [1.0, 0.8, 1.2] {
                let s = Scenario {
                    azimuth_deg: az,
                    options: RenderOptions {
                        appearance: app.clone(),
                        ..RenderOptions::default()
                    },
                    gain,
                    ..Scenario::default()
                };
                let r = evaluate(&bvh, &s)?;
                worst_fg = worst_fg.min(r.foreground_iou);
                let c = |k: usize| r.class_iou[k].map_or("–".to_string(), |v| format!("{v:.3}"));
                println!(
                    "| {az:.0}° | {name} | {:.0} | {gain:.1} | {:.3} | {} | {} | {} | {} | {:.3} | {:.2} |",
                    s.options.noise_sigma,
                    r.foreground_iou,
                    c(1),
                    c(2),
                    c(3),
                    c(4),
                    r.mean_class_iou,
                    r.ms_per_frame
                );
            }
        }
    }
    println!("worst foreground IoU: {worst_fg:.3}");
    Ok(())
}

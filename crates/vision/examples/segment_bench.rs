//! Segmentation speed: 640 × 480 frames of the CMU walk to label images of
//! several sizes (the goal: ≤ 5 ms for 160 × 120), single thread.
//!
//! `cargo run --release -p vision --example segment_bench`

use vision::eval::Scenario;
use vision::{SegmentParams, Segmenter, SyntheticRenderer};

fn main() -> anyhow::Result<()> {
    let bvh = skeleton::Bvh::load(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../assets/motions/cmu_131_01_walk.bvh"
    ))?;
    let camera = vision::load_camera(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/camera_front.toml"
    ))?;
    let renderer =
        SyntheticRenderer::new(&bvh.skeleton, camera.clone(), Scenario::default().options)?;
    let empty = renderer.render_empty(0, 0, 0.0);
    let frames: Vec<_> = (0..16)
        .map(|k| renderer.render(bvh.frames.pose(560 + 10 * k), k as u64 + 1, k + 1, 0.0))
        .collect::<Result<_, _>>()?;
    println!("| input | labels | frames | mean ms | median ms | p95 ms | max ms |");
    println!("|---|---|---|---|---|---|---|");
    for (w, h) in [(160u32, 120u32), (320, 240), (640, 480)] {
        let params = SegmentParams {
            width: w,
            height: h,
            ..SegmentParams::default()
        };
        let mut seg = Segmenter::new(params, 640, 480)?;
        seg.learn_background(&[&empty])?;
        seg.learn_colours_from_pose(
            &frames[0].frame,
            renderer.skeleton(),
            &camera,
            bvh.frames.pose(560),
            renderer.class_map(),
        )?;
        let mut out = vision::Segmentation::default();
        for f in &frames {
            seg.segment_into(&f.frame, &mut out)?; // warm-up
        }
        let mut ms = Vec::new();
        for _ in 0..20 {
            for f in &frames {
                let t0 = std::time::Instant::now();
                seg.segment_into(&f.frame, &mut out)?;
                ms.push(1e3 * t0.elapsed().as_secs_f64());
            }
        }
        ms.sort_by(f64::total_cmp);
        let n = ms.len();
        println!(
            "| 640 × 480 | {w} × {h} | {n} | {:.2} | {:.2} | {:.2} | {:.2} |",
            ms.iter().sum::<f64>() / n as f64,
            ms[n / 2],
            ms[n * 95 / 100],
            ms[n - 1]
        );
    }
    Ok(())
}

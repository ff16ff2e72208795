//! A synthetic frame of the CMU walk beside its segmentation and its true
//! class image (the README picture).
//!
//! `cargo run --release -p vision --example vision_demo -- [OUT.png]`

use nalgebra::{Point3, Vector3};
use vision::class_preview;
use vision::iou;
use vision::{RenderOptions, Segmenter, SyntheticRenderer};

fn main() -> anyhow::Result<()> {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "vision_demo.png".into());
    let bvh = skeleton::Bvh::load(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../assets/motions/cmu_131_01_walk.bvh"
    ))?;
    let (learn, shown) = (560, 640);
    let world = bvh.skeleton.forward_kinematics(bvh.frames.pose(620))?;
    let hips = Point3::from(world[0].translation.vector);
    let eye = hips + Vector3::new(0.9, 0.25, 2.4);
    let camera = labels::Camera::looking_at(eye, hips, Vector3::y(), 50f64.to_radians(), 640, 480)?;
    let renderer = SyntheticRenderer::new(&bvh.skeleton, camera.clone(), RenderOptions::default())?;
    let mut seg = Segmenter::new(Default::default(), 640, 480)?;
    seg.learn_background(&[&renderer.render_empty(0, 0, 0.0)])?;
    let first = renderer.render(bvh.frames.pose(learn), 1, 1, 0.0)?;
    let report = seg.learn_colours_from_pose(
        &first.frame,
        renderer.skeleton(),
        &camera,
        bvh.frames.pose(learn),
        renderer.class_map(),
    )?;
    let frame = renderer.render(bvh.frames.pose(shown), 2, 2, 0.0)?;
    let t0 = std::time::Instant::now();
    let s = seg.segment(&frame.frame)?;
    let ms = 1e3 * t0.elapsed().as_secs_f64();
    let small = vision::resize_camera(&camera, s.width, s.height)?;
    let mut truth =
        labels::synth::render_label_image(renderer.skeleton(), &small, bvh.frames.pose(shown))?;
    renderer.class_map().remap(&mut truth);
    // Three 640 × 480 panels: frame | segmentation | truth (labels ×4, nearest).
    let (w, h) = (640usize, 480usize);
    let mut img = vec![0u8; 3 * w * 3 * h];
    let seg_rgb = class_preview(&s.labels);
    let truth_rgb = class_preview(&truth);
    for y in 0..h {
        for x in 0..w {
            let row = y * 3 * w;
            let src = 3 * (y * w + x);
            img[3 * (row + x)..3 * (row + x) + 3].copy_from_slice(&frame.frame.rgb[src..src + 3]);
            let l = 3 * ((y * s.height as usize / h) * s.width as usize + x * s.width as usize / w);
            img[3 * (row + w + x)..3 * (row + w + x) + 3].copy_from_slice(&seg_rgb[l..l + 3]);
            img[3 * (row + 2 * w + x)..3 * (row + 2 * w + x) + 3]
                .copy_from_slice(&truth_rgb[l..l + 3]);
        }
    }
    vision::Frame::new(3 * w as u32, h as u32, img, 0.0, 0)?.save_png(&out)?;
    println!("colour samples learned from clip frame {learn}: {report:?}");
    println!("| clip frame | ms | fg IoU | head | skin | shirt | trousers |");
    println!("|---|---|---|---|---|---|---|");
    let c = |id: u8| {
        iou(&s.labels, &truth, |l| l == id, |l| l == id).map_or("–".into(), |v| format!("{v:.3}"))
    };
    println!(
        "| {shown} | {ms:.2} | {:.3} | {} | {} | {} | {} |",
        iou(&s.labels, &truth, |l| l != 0, |l| l != 0).unwrap_or(1.0),
        c(1),
        c(2),
        c(3),
        c(4)
    );
    println!("wrote {out} (frame | segmentation | ground truth)");
    Ok(())
}

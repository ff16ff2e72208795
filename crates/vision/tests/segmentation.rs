//! RTPF §IV-D segmentation against the ground truth of synthetic renders of
//! the shared CMU walk (issue 11's acceptance figures; the example
//! `segment_eval` prints the full table).

use vision::eval::{Scenario, evaluate};
use vision::{Appearance, RenderOptions, Sleeves};

fn walk() -> skeleton::Bvh {
    skeleton::Bvh::load(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../assets/motions/cmu_131_01_walk.bvh"
    ))
    .unwrap()
}

fn long_sleeves() -> Appearance {
    Appearance {
        sleeves: Sleeves::Long,
        shirt: [170, 60, 50],
        trousers: [40, 50, 90],
        hair: Some([30, 25, 20]),
        skin: [150, 105, 80],
    }
}

fn scenario(azimuth_deg: f64, appearance: Appearance, gain: f64) -> Scenario {
    Scenario {
        azimuth_deg,
        options: RenderOptions {
            appearance,
            noise_sigma: 3.0,
            ..RenderOptions::default()
        },
        frames: vec![560, 620, 680],
        gain,
        ..Scenario::default()
    }
}

#[test]
fn foreground_and_classes_match_ground_truth() {
    let bvh = walk();
    let mut class_means = Vec::new();
    for (az, app) in [
        (0.0, Appearance::default()),
        (45.0, long_sleeves()),
        (180.0, Appearance::default()),
        (90.0, long_sleeves()),
    ] {
        let r = evaluate(&bvh, &scenario(az, app, 1.0)).unwrap();
        println!("azimuth {az}: {r:?}");
        assert!(r.foreground_iou >= 0.95, "azimuth {az}: {r:?}");
        class_means.push(r.mean_class_iou);
    }
    let mean = class_means.iter().sum::<f64>() / class_means.len() as f64;
    println!("per-class IoU averaged over views and classes: {mean:.3}");
    assert!(mean >= 0.85, "{class_means:?}");
}

#[test]
fn global_brightness_change_keeps_the_silhouette() {
    let bvh = walk();
    for gain in [0.8, 1.2] {
        let r = evaluate(&bvh, &scenario(45.0, Appearance::default(), gain)).unwrap();
        println!("gain {gain}: {r:?}");
        assert!(r.foreground_iou >= 0.9, "gain {gain}: {r:?}");
    }
}

#[test]
fn colours_learned_from_strokes_segment_like_a_known_pose() {
    use nalgebra::{Point3, Vector3};
    use skeleton::BodyPart;
    use vision::iou;
    use vision::{ColourClass, Segmenter, Stroke, SyntheticRenderer};
    let bvh = walk();
    let world = bvh
        .skeleton
        .forward_kinematics(bvh.frames.pose(600))
        .unwrap();
    let hips = Point3::from(world[0].translation.vector);
    let camera = labels::Camera::looking_at(
        hips + Vector3::new(0.0, 0.2, 2.3),
        hips,
        Vector3::y(),
        50f64.to_radians(),
        640,
        480,
    )
    .unwrap();
    let r =
        SyntheticRenderer::new(&bvh.skeleton, camera.clone(), RenderOptions::default()).unwrap();
    let mut seg = Segmenter::new(Default::default(), 640, 480).unwrap();
    seg.learn_background(&[&r.render_empty(0, 0, 0.0)]).unwrap();
    let f = r.render(bvh.frames.pose(600), 1, 1, 0.0).unwrap();
    // "User strokes": every 7th pixel of a few parts, as a user would
    // scribble over them; hair is the dark part of the head.
    let mut strokes: Vec<Stroke> = ColourClass::ALL
        .iter()
        .map(|&class| Stroke {
            class,
            points: Vec::new(),
        })
        .collect();
    for (i, &l) in f.labels.iter().enumerate().step_by(7) {
        let (x, y) = ((i % 640) as u32, (i / 640) as u32);
        let class = match BodyPart::ALL.get(usize::from(l).wrapping_sub(1)) {
            Some(BodyPart::Head) if f.frame.pixel(x, y)[0] < 110 => ColourClass::Hair,
            Some(BodyPart::Forearm | BodyPart::Hand) => ColourClass::Skin,
            Some(BodyPart::Torso) => ColourClass::Shirt,
            Some(BodyPart::Thigh | BodyPart::Shank) => ColourClass::Trousers,
            _ => continue,
        };
        strokes[class as usize].points.push((x, y));
    }
    seg.learn_colours_from_strokes(&f.frame, &strokes).unwrap();
    let g = r.render(bvh.frames.pose(630), 2, 2, 0.0).unwrap();
    let out = seg.segment(&g.frame).unwrap();
    let small = vision::resize_camera(&camera, 160, 120).unwrap();
    let mut truth =
        labels::synth::render_label_image(r.skeleton(), &small, bvh.frames.pose(630)).unwrap();
    r.class_map().remap(&mut truth);
    let fg = iou(&out.labels, &truth, |l| l != 0, |l| l != 0).unwrap();
    let classes: Vec<f64> = (1..=4u8)
        .map(|c| iou(&out.labels, &truth, |l| l == c, |l| l == c).unwrap())
        .collect();
    println!("strokes: fg {fg:.3}, classes {classes:?}");
    assert!(fg >= 0.95);
    assert!(classes[2] >= 0.9 && classes[3] >= 0.9, "{classes:?}");
    assert!(classes.iter().sum::<f64>() / 4.0 >= 0.8, "{classes:?}");
    assert_eq!(out.counts.iter().sum::<u32>(), 160 * 120);
    out.observation().unwrap();
}

#[test]
fn background_from_several_frames_ignores_noise_and_gain() {
    use vision::{Segmenter, SyntheticRenderer};
    let bvh = walk();
    let camera = vision::load_camera(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/camera_front.toml"
    ))
    .unwrap();
    let options = RenderOptions {
        noise_sigma: 5.0,
        ..RenderOptions::default()
    };
    let r = SyntheticRenderer::new(&bvh.skeleton, camera, options).unwrap();
    let empties: Vec<_> = (0..4).map(|k| r.render_empty(k, k as usize, 0.0)).collect();
    let params = vision::SegmentParams {
        noise_sigma: 5.0,
        ..Default::default()
    };
    let mut seg = Segmenter::new(params, 640, 480).unwrap();
    seg.learn_background(&[&empties[0], &empties[1], &empties[2]])
        .unwrap();
    assert_eq!(seg.background().unwrap().frames, 3);
    let mut dim = empties[3].clone();
    dim.rgb
        .iter_mut()
        .for_each(|v| *v = (f64::from(*v) * 0.8).round() as u8);
    for f in [&empties[3], &dim] {
        let fg = seg
            .foreground_mask(f)
            .unwrap()
            .iter()
            .filter(|&&m| m != 0)
            .count();
        assert!(fg <= 10, "{fg} false foreground pixels of 19200");
    }
}

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

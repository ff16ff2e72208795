//! The CPU reference end to end: exact counts on hand-built scenes, RTPF
//! Eq. 1 at and around the observed pose, the smc trait, noise, errors.

use labels::{
    CLASSES, Camera, CpuLikelihood, LabelError, NonOverlap, Observation,
    synth::{self, LabelNoise, render_label_image, render_observation},
};
use skeleton::nalgebra::{Point3, Vector3};
use skeleton::{BodyPart, Skeleton, presets};
use smc::Likelihood;

const W: usize = 160;
const H: usize = 120;

fn counts_of(ev: &labels::Evaluation, i: usize, part: BodyPart) -> (u32, u32) {
    ev.class_counts(i, usize::from(part.label()))
}

#[test]
fn capsule_filling_the_view_gives_exact_counts_and_ratio() {
    let skel = synth::wall(false);
    // Left half of the observation is torso, right half head.
    let labels = (0..W * H)
        .map(|i| if i % W < W / 2 { 3 } else { 1 })
        .collect();
    let obs = Observation::new(W as u32, H as u32, labels).unwrap();
    let mut lik = CpuLikelihood::new(skel.clone(), Camera::default(), NonOverlap::default());
    let ev = lik.evaluate(&obs, &skel.rest_pose()).unwrap();
    assert_eq!(
        counts_of(ev, 0, BodyPart::Torso),
        ((W * H) as u32, (W * H / 2) as u32)
    );
    assert_eq!(counts_of(ev, 0, BodyPart::Head), (0, 0));
    // Torso: union W·H, overlap W·H/2 → 1/2; head: disjoint → 1; m = 2.
    assert!((ev.non_overlap[0] - 0.5f64.sqrt()).abs() < 1e-12);
    assert!((ev.log_likelihood[0] - (-0.5 / (2.0 * 0.01))).abs() < 1e-9);
}

#[test]
fn nearer_capsule_owns_the_overlap_and_reproduction_gives_zero() {
    let skel = synth::wall(true);
    let camera = Camera::default();
    let pose = skel.rest_pose();
    let labels = render_label_image(&skel, &camera, &pose).unwrap();
    let head = labels.iter().filter(|&&l| l == 1).count();
    let torso = labels.iter().filter(|&&l| l == 3).count();
    assert!(head > 20, "the head is visible in front of the wall");
    assert_eq!(head + torso, W * H, "the wall fills the rest");
    let obs = Observation::new(W as u32, H as u32, labels).unwrap();
    let mut lik = CpuLikelihood::new(skel, camera, NonOverlap::default());
    let ev = lik.evaluate(&obs, &pose).unwrap();
    assert_eq!(counts_of(ev, 0, BodyPart::Head), (head as u32, head as u32));
    assert_eq!(
        counts_of(ev, 0, BodyPart::Torso),
        (torso as u32, torso as u32)
    );
    assert_eq!(ev.non_overlap[0], 0.0);
    assert_eq!(ev.log_likelihood[0], 0.0);
}

/// The left arm raised sideways by `abduction`, the right elbow at 0.6 rad.
fn arm_pose(skel: &Skeleton, abduction: f64) -> Vec<f64> {
    let pose = synth::arm_pose(skel, abduction, 0.6).unwrap();
    assert!(skel.within_limits(&pose));
    pose
}

#[test]
fn human_reproduction_has_zero_non_overlap_and_counts_equal_areas() {
    let skel = presets::human();
    let camera = Camera::default();
    let pose = arm_pose(&skel, 0.4);
    let obs = render_observation(&skel, &camera, &pose, &LabelNoise::default(), 0).unwrap();
    let mut lik = CpuLikelihood::new(skel, camera, NonOverlap::default());
    let ev = lik.evaluate(&obs, &pose).unwrap();
    for c in 1..=CLASSES {
        let a = obs.areas()[c - 1];
        assert_eq!(ev.class_counts(0, c), (a, a), "class {c}");
    }
    assert!(obs.areas().iter().sum::<u32>() > 1000);
    assert_eq!(ev.non_overlap[0], 0.0);
}

#[test]
fn non_overlap_grows_monotonically_as_the_shoulder_moves_away() {
    let skel = presets::human();
    let camera = Camera::default();
    let reference = arm_pose(&skel, 0.4);
    // Segmentation noise, so that no class matches exactly (see below).
    let noise = LabelNoise::flips(0.05);
    let obs = render_observation(&skel, &camera, &reference, &noise, 42).unwrap();
    let states: Vec<f64> = (0..=10)
        .flat_map(|k| arm_pose(&skel, 0.4 + 0.03 * k as f64))
        .collect();
    let mut lik = CpuLikelihood::new(skel.clone(), camera.clone(), NonOverlap::default());
    let ev = lik.evaluate(&obs, &states).unwrap();
    synth::check_sweep(ev).unwrap();
    // Eq. 1 is a geometric mean: with a noiseless observation the classes
    // the sweep does not touch match exactly and keep F at 0.
    let clean = render_observation(&skel, &camera, &reference, &LabelNoise::default(), 0).unwrap();
    let ev = lik.evaluate(&clean, &states).unwrap();
    assert!(ev.non_overlap.iter().all(|&f| f == 0.0));
}

#[test]
fn smc_trait_matches_evaluate_and_thread_count_does_not_matter() {
    let skel = presets::human();
    let camera = Camera::default();
    let reference = arm_pose(&skel, 0.4);
    let obs = render_observation(&skel, &camera, &reference, &LabelNoise::flips(0.02), 1).unwrap();
    let d = skel.dof();
    let states: Vec<f64> = (0..37)
        .flat_map(|k| {
            let mut p = arm_pose(&skel, 0.2 + 0.02 * k as f64);
            p[0] = 0.01 * (k % 5) as f64;
            p
        })
        .collect();
    let mut lik = CpuLikelihood::new(skel, camera, NonOverlap::new(0.2).unwrap());
    let mut out = vec![0.0; 37];
    lik.log_likelihood(&obs, &states, d, &mut out).unwrap();
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let mut out1 = vec![0.0; 37];
    one.install(|| lik.log_likelihood(&obs, &states, d, &mut out1))
        .unwrap();
    assert_eq!(out, out1);
    let ev = lik.evaluate(&obs, &states).unwrap().clone();
    assert_eq!(ev.log_likelihood, out);
    for (f, l) in ev.non_overlap.iter().zip(&out) {
        assert!((l + f * f / (2.0 * 0.04)).abs() < 1e-12);
    }
    // Tiles agree with the counts.
    let tiles = lik.render_tiles(&states).unwrap();
    for (i, tile) in tiles.chunks_exact(W * H).enumerate() {
        for c in 1..=CLASSES as u8 {
            let b = tile.iter().filter(|&&l| l == c).count() as u32;
            let ab = tile
                .iter()
                .zip(obs.labels())
                .filter(|&(&l, &a)| l == c && a == c)
                .count() as u32;
            assert_eq!(ev.class_counts(i, usize::from(c)), (b, ab));
        }
    }
}

#[test]
fn ratio_skips_classes_absent_from_both_images() {
    let mut area = [0u32; CLASSES];
    area[0] = 10; // head observed
    area[2] = 30; // torso observed
    let mut counts = [0u32; 2 * CLASSES];
    counts[0] = 10; // |B_head| = 10
    counts[1] = 5; // overlap 5 → union 15, apart 10 → 2/3
    counts[4] = 30; // |B_torso| = 30, overlap 0 → 1
    counts[2 * 6] = 4; // hand only in the model → 1
    let f = NonOverlap::ratio(&area, &counts);
    assert!((f - (2.0f64 / 3.0).powf(1.0 / 3.0)).abs() < 1e-12);
    assert_eq!(NonOverlap::ratio(&[0; CLASSES], &[0; 2 * CLASSES]), 0.0);
}

#[test]
fn noise_statistics_and_reproducibility() {
    let (w, h) = (W as u32, H as u32);
    let flips = LabelNoise::flips(0.2);
    let mut a = vec![0u8; W * H];
    flips.apply(&mut a, w, h, 7).unwrap();
    let changed = a.iter().filter(|&&l| l != 0).count() as f64 / (W * H) as f64;
    let expected = 0.2 * CLASSES as f64 / (CLASSES + 1) as f64;
    assert!(
        (changed - expected).abs() < 0.012,
        "{changed} vs {expected}"
    );
    assert!(a.iter().all(|&l| usize::from(l) <= CLASSES));
    let mut b = vec![0u8; W * H];
    flips.apply(&mut b, w, h, 7).unwrap();
    assert_eq!(a, b);
    flips.apply(&mut b, w, h, 8).unwrap();
    assert_ne!(a, b);

    let blobs = LabelNoise {
        blobs: 4,
        blob_radius: (3.0, 8.0),
        ..LabelNoise::default()
    };
    let mut img = vec![0u8; W * H];
    blobs.apply(&mut img, w, h, 3).unwrap();
    let painted = img.iter().filter(|&&l| l != 0).count() as f64;
    assert!(painted <= 4.0 * std::f64::consts::PI * 8.0 * 8.0 + 1.0);

    let skel = presets::human();
    let camera = Camera::default();
    let pose = skel.rest_pose();
    let clean = render_label_image(&skel, &camera, &pose).unwrap();
    let missing = LabelNoise {
        missing: vec![BodyPart::Torso],
        ..LabelNoise::default()
    };
    let obs = render_observation(&skel, &camera, &pose, &missing, 0).unwrap();
    assert!(clean.contains(&3));
    for (&c, &o) in clean.iter().zip(obs.labels()) {
        assert_eq!(o, if c == 3 { 0 } else { c });
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let skel = presets::human();
    let camera = Camera::default();
    let d = skel.dof();
    let e = Observation::new(4, 4, vec![0; 15]).unwrap_err();
    assert!(matches!(
        e,
        LabelError::PixelCount {
            expected: 16,
            found: 15,
            ..
        }
    ));
    let mut labels = vec![0u8; 16];
    labels[4 * 2 + 3] = 13;
    let e = Observation::new(4, 4, labels).unwrap_err();
    assert_eq!(
        e,
        LabelError::LabelOutOfRange {
            x: 3,
            y: 2,
            label: 13,
            classes: 12
        }
    );
    assert!(e.to_string().contains("(x = 3, y = 2)"));

    let mut lik = CpuLikelihood::new(skel.clone(), camera.clone(), NonOverlap::default());
    let small = Observation::new(80, 60, vec![0; 80 * 60]).unwrap();
    let e = lik.evaluate(&small, &skel.rest_pose()).unwrap_err();
    assert!(matches!(
        e,
        LabelError::ImageSizeMismatch {
            expected_width: 160,
            found_width: 80,
            ..
        }
    ));
    let obs = Observation::new(160, 120, vec![0; W * H]).unwrap();
    assert_eq!(lik.evaluate(&obs, &[]).unwrap_err(), LabelError::EmptyBatch);
    let e = lik.evaluate(&obs, &vec![0.0; d + 1]).unwrap_err();
    assert!(matches!(e, LabelError::StateShape { .. }));
    let mut bad = vec![0.0; 2 * d];
    bad[d + 5] = f64::NAN;
    let e = lik.evaluate(&obs, &bad).unwrap_err();
    assert!(matches!(
        e,
        LabelError::NonFinitePose {
            particle: 1,
            parameter: 5,
            ..
        }
    ));
    let mut out = vec![0.0; 3];
    assert!(
        lik.log_likelihood(&obs, &vec![0.0; d], d, &mut out)
            .is_err()
    );
    assert!(lik.log_likelihood(&obs, &[], d, &mut out).is_err());
    assert!(NonOverlap::new(0.0).is_err());
    assert!(NonOverlap::new(f64::NAN).is_err());
    let bad_noise = LabelNoise::flips(1.5);
    let mut img = vec![0u8; 16];
    assert!(matches!(
        bad_noise.apply(&mut img, 4, 4, 0),
        Err(LabelError::InvalidSetting {
            field: "flip_probability",
            ..
        })
    ));
    assert!(
        Camera::looking_at(
            Point3::origin(),
            Point3::new(0.0, 0.0, 1.0),
            Vector3::zeros(),
            1.0,
            160,
            120
        )
        .is_err()
    );
}

#[test]
fn label_map_merges_rendered_parts_into_observed_classes() {
    let skel = presets::human();
    let camera = Camera::default();
    let pose = arm_pose(&skel, 0.4);
    let map = synth::whole_body_classes();
    let rendered = render_label_image(&skel, &camera, &pose).unwrap();
    // The segmentation of the rendering: every pixel through the map.
    let segmented: Vec<u8> = rendered
        .iter()
        .map(|&l| if l == 0 { 0 } else { map[usize::from(l) - 1] })
        .collect();
    let obs = Observation::new(W as u32, H as u32, segmented).unwrap();
    let mut lik = CpuLikelihood::new(skel.clone(), camera.clone(), NonOverlap::default());
    assert_eq!(lik.label_map(), &labels::IDENTITY_LABEL_MAP);
    let states: Vec<f64> = [0.4, 0.7]
        .iter()
        .flat_map(|&a| arm_pose(&skel, a))
        .collect();
    let identity = lik.evaluate(&obs, &states).unwrap().clone();
    lik.set_label_map(map).unwrap();
    let mapped = lik.evaluate(&obs, &states).unwrap().clone();
    // At the observed pose the mapped rendering is the observation.
    for c in 1..=CLASSES {
        let a = obs.areas()[c - 1];
        assert_eq!(mapped.class_counts(0, c), (a, a));
    }
    assert_eq!(mapped.non_overlap[0], 0.0);
    assert!(
        identity.non_overlap[0] > 0.3,
        "body parts vs classes disagree"
    );
    // The raised arm (class 2) no longer overlaps its observation fully.
    let (arms, arms_overlap) = mapped.class_counts(1, 2);
    assert!(arms_overlap < arms);
    // |B_c| under the map is the sum of the merged parts' identity areas.
    for i in 0..2 {
        let mut merged = [0u32; CLASSES];
        for (l, &c) in map.iter().enumerate() {
            if c != 0 {
                merged[usize::from(c) - 1] += identity.class_counts(i, l + 1).0;
            }
        }
        for (c, &m) in merged.iter().enumerate() {
            assert_eq!(mapped.class_counts(i, c + 1).0, m);
        }
    }
    // Out-of-range classes are refused and leave the map unchanged.
    let mut bad = map;
    bad[4] = CLASSES as u8 + 1;
    assert_eq!(
        lik.set_label_map(bad).unwrap_err(),
        LabelError::LabelMap {
            label: 5,
            class: CLASSES as u8 + 1,
            classes: CLASSES
        }
    );
    assert_eq!(lik.label_map(), &map);
}

#[test]
fn terms_read_the_prepared_forward_kinematics_and_match_the_plain_path() {
    use skeleton::{BatchForwardKinematics, Posing};
    use smc::{PerParticle, Prepared};
    let skel = presets::human();
    let camera = Camera::default();
    let obs =
        render_observation(&skel, &camera, &skel.rest_pose(), &LabelNoise::default(), 2).unwrap();
    // 300 poses: several rayon chunks, so the chunk → particle index is used.
    let n = 300;
    let states = labels::synth::perturbed_poses(&skel, &skel.rest_pose(), n, 5);
    let mut plain = CpuLikelihood::new(skel.clone(), camera.clone(), NonOverlap::default());
    let expected = plain.evaluate(&obs, &states).unwrap().clone();
    let mut fk = BatchForwardKinematics::new();
    fk.compute_states(&skel, &states).unwrap();
    let mut posed = CpuLikelihood::new(skel.clone(), camera.clone(), NonOverlap::default());
    assert_eq!(posed.evaluate_posed(&obs, &states, &fk).unwrap(), &expected);

    // Region likelihood + a prior term, one forward kinematics.
    let prior = PerParticle(|_: &Observation, x: &[f64]| -0.5 * x[3] * x[3]);
    let lik = Prepared::new(
        Posing(&skel),
        BatchForwardKinematics::new(),
        (&posed, prior),
    );
    let mut out = vec![0.0; n];
    lik.log_likelihood(&obs, &states, skel.dof(), &mut out)
        .unwrap();
    for (i, o) in out.iter().enumerate() {
        let x = &states[i * skel.dof()..];
        assert_eq!(*o, 0.0 + expected.log_likelihood[i] + -0.5 * x[3] * x[3]);
    }

    // Transforms of another batch are refused, naming both sizes.
    fk.compute_states(&skel, &states[..10 * skel.dof()])
        .unwrap();
    let e = posed.evaluate_posed(&obs, &states, &fk).unwrap_err();
    assert!(e.to_string().contains("10 poses"), "{e}");
}

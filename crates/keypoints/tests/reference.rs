//! The Rust detector against the reference runtime (ai-edge-litert running
//! the original TFLite file) on the committed test image; the reference
//! outputs were saved by `tools/convert_keypoint_model.py`.

mod common;

use common::models_dir;
use keypoints::{Detector, DetectorOptions, INPUT_SIZE, Keypoints, PersonBox, Roi};
use serde_json::Value;
use std::sync::OnceLock;

/// Raw landmark x, y (crop pixels of the 256 × 256 input) and z.
const RAW_XYZ_TOLERANCE: f32 = 0.01;
/// Raw visibility and presence logits, and the pose flag.
const RAW_LOGIT_TOLERANCE: f32 = 0.01;
/// Landmarks in input pixels after the whole pipeline.
const PIXEL_TOLERANCE: f32 = 0.05;
/// Scores (sigmoid of the logits) and the person's presence.
const SCORE_TOLERANCE: f32 = 1e-3;

fn detector() -> &'static Detector {
    static DETECTOR: OnceLock<Detector> = OnceLock::new();
    DETECTOR.get_or_init(|| Detector::new().expect("the embedded model loads"))
}

fn reference() -> &'static Value {
    static REFERENCE: OnceLock<Value> = OnceLock::new();
    REFERENCE.get_or_init(|| {
        let text = std::fs::read_to_string(models_dir().join("blazepose_reference.json")).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        doc["variants"]["full"].clone()
    })
}

/// The test image: 256 × 256 RGB.
fn image() -> &'static (Vec<u8>, u32, u32) {
    static IMAGE: OnceLock<(Vec<u8>, u32, u32)> = OnceLock::new();
    IMAGE.get_or_init(common::test_image)
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

fn reference_box() -> PersonBox {
    let b = floats(&reference()["pipeline"]["box"]);
    PersonBox::new(b[0], b[1], b[2], b[3])
}

/// Largest deviation of `kp` from the reference pipeline's output:
/// (pixels, score).
fn pipeline_deviation(kp: &Keypoints) -> (f32, f32) {
    let r = &reference()["pipeline"]["keypoints"];
    let (u, v) = (floats(&r["u"]), floats(&r["v"]));
    let (vis, pres) = (floats(&r["visibility"]), floats(&r["presence"]));
    let mut px = 0.0f32;
    let mut score = (kp.presence - r["pose_presence"].as_f64().unwrap() as f32).abs();
    for (k, p) in kp.points.iter().enumerate() {
        px = px.max((p.u - u[k]).abs()).max((p.v - v[k]).abs());
        score = score
            .max((p.score - vis[k]).abs())
            .max((p.presence - pres[k]).abs());
    }
    for (k, a) in kp.alignment.iter().enumerate() {
        px = px
            .max((a[0] - u[33 + k]).abs())
            .max((a[1] - v[33 + k]).abs());
    }
    (px, score)
}

#[test]
fn raw_outputs_match_the_reference_runtime() {
    let (rgb, w, h) = image();
    assert_eq!((*w, *h), (INPUT_SIZE as u32, INPUT_SIZE as u32));
    let input: Vec<f32> = rgb.iter().map(|&b| b as f32 / 255.0).collect();
    let raw = detector().infer(&input).unwrap();
    let r = &reference()["crop"];
    let rows = r["landmarks"].as_array().unwrap();
    assert_eq!(rows.len(), 33);
    let (mut xyz, mut logit) = (0.0f32, 0.0f32);
    for (row, reference) in raw.landmarks.iter().zip(rows) {
        let reference = floats(reference);
        for c in 0..3 {
            xyz = xyz.max((row[c] - reference[c]).abs());
        }
        for c in 3..5 {
            logit = logit.max((row[c] - reference[c]).abs());
        }
    }
    let flag = (raw.pose_flag - r["pose_flag"].as_f64().unwrap() as f32).abs();
    println!("raw deviation: xyz {xyz:.2e} px, logits {logit:.2e}, flag {flag:.2e}");
    assert!(
        xyz <= RAW_XYZ_TOLERANCE,
        "landmark x/y/z differ by {xyz} > {RAW_XYZ_TOLERANCE}"
    );
    assert!(
        logit <= RAW_LOGIT_TOLERANCE,
        "logits differ by {logit} > {RAW_LOGIT_TOLERANCE}"
    );
    assert!(flag <= RAW_LOGIT_TOLERANCE, "pose flag differs by {flag}");
}

#[test]
fn without_heatmap_the_regression_is_unchanged() {
    // Pruning the heatmap branch must not touch the landmark head.
    let (rgb, _, _) = image();
    let input: Vec<f32> = rgb.iter().map(|&b| b as f32 / 255.0).collect();
    let options = DetectorOptions {
        refine_with_heatmap: false,
        ..Default::default()
    };
    let lean = Detector::new_with(options).unwrap();
    let (a, b) = (
        detector().infer(&input).unwrap(),
        lean.infer(&input).unwrap(),
    );
    assert!(b.heatmap.is_empty());
    for (x, y) in a.landmarks.iter().zip(&b.landmarks) {
        for c in 0..5 {
            assert!((x[c] - y[c]).abs() < 1e-3, "{x:?} vs {y:?}");
        }
    }
}

#[test]
fn pipeline_matches_the_reference_runtime() {
    let (rgb, w, h) = image();
    let kp = detector().detect(rgb, *w, *h, reference_box()).unwrap();
    let roi = &reference()["pipeline"]["roi"];
    assert!((kp.roi.side - roi["side"].as_f64().unwrap() as f32).abs() < 1e-3);
    let (px, score) = pipeline_deviation(&kp);
    println!("pipeline deviation: {px:.2e} px, scores {score:.2e}");
    assert!(
        px <= PIXEL_TOLERANCE,
        "landmarks differ by {px} px > {PIXEL_TOLERANCE}"
    );
    assert!(
        score <= SCORE_TOLERANCE,
        "scores differ by {score} > {SCORE_TOLERANCE}"
    );
    // The astronaut faces the camera: her left shoulder is on the image's
    // right, and both shoulders are confidently visible.
    let (left, right) = (
        kp.get("left_shoulder").unwrap(),
        kp.get("right_shoulder").unwrap(),
    );
    assert!(
        left.u > right.u && left.score > 0.9 && right.score > 0.9,
        "{left:?} {right:?}"
    );
    assert!(kp.presence > 0.5);
}

#[test]
fn the_tolerance_check_fails_for_a_perturbed_crop() {
    // The same person in a box shifted by 4 px: a different crop, so the
    // landmarks must move by more than the tolerance.
    let (rgb, w, h) = image();
    let b = reference_box();
    let shifted = PersonBox::new(b.x_min + 4.0, b.y_min, b.x_max + 4.0, b.y_max);
    let kp = detector().detect(rgb, *w, *h, shifted).unwrap();
    let (px, _) = pipeline_deviation(&kp);
    assert!(
        px > PIXEL_TOLERANCE * 10.0,
        "a shifted crop moved landmarks by only {px} px"
    );
}

#[test]
fn tracking_roi_follows_the_body() {
    let (rgb, w, h) = image();
    let kp = detector().detect(rgb, *w, *h, reference_box()).unwrap();
    let roi = kp.tracking_roi(true);
    assert!(roi.side > 50.0 && roi.rotation.abs() < 0.5, "{roi:?}");
    let again = detector().detect_in_roi(rgb, *w, *h, roi).unwrap();
    let nose = (kp.get("nose").unwrap(), again.get("nose").unwrap());
    assert!(
        (nose.0.u - nose.1.u).hypot(nose.0.v - nose.1.v) < 8.0,
        "{nose:?}"
    );
}

#[test]
fn bad_input_is_an_error() {
    let (rgb, w, h) = image();
    let d = detector();
    let good = reference_box();
    assert!(matches!(
        d.detect(&rgb[1..], *w, *h, good),
        Err(keypoints::Error::BufferSize { .. })
    ));
    assert!(matches!(
        d.detect(rgb, 0, *h, good),
        Err(keypoints::Error::EmptyImage { .. })
    ));
    let empty = PersonBox::new(10.0, 10.0, 10.0, 10.0);
    assert!(matches!(
        d.detect(rgb, *w, *h, empty),
        Err(keypoints::Error::EmptyBox(_))
    ));
    let outside = PersonBox::new(300.0, 10.0, 400.0, 100.0);
    assert!(matches!(
        d.detect(rgb, *w, *h, outside),
        Err(keypoints::Error::BoxOutsideFrame { .. })
    ));
    let nan = Roi {
        centre: [f32::NAN, 1.0],
        side: 10.0,
        rotation: 0.0,
    };
    assert!(matches!(
        d.detect_in_roi(rgb, *w, *h, nan),
        Err(keypoints::Error::EmptyRoi(_))
    ));
    assert!(matches!(
        d.infer(&[0.0; 10]),
        Err(keypoints::Error::InputSize { .. })
    ));
}

#[test]
fn a_corrupt_model_file_is_named_in_the_error() {
    let path = std::env::temp_dir().join(format!("keypoints-corrupt-{}.onnx", std::process::id()));
    std::fs::write(&path, b"\x08\x07garbage").unwrap();
    let err = Detector::load(&path).unwrap_err();
    std::fs::remove_file(&path).ok();
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

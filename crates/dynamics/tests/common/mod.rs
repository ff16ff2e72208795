//! Shared by the tests that compare with the Pinocchio fixtures (JSON).

use serde_json::Value;

/// A JSON array of numbers.
pub(crate) fn numbers(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

/// `max |ours − reference| / max |reference|` (the absolute error when the
/// reference is all zeros, as G of a robot moving only about vertical axes).
pub(crate) fn relative_error(ours: &[f64], reference: &[f64]) -> f64 {
    assert_eq!(ours.len(), reference.len());
    let scale = reference.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let diff = ours
        .iter()
        .zip(reference)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    if scale > 0.0 { diff / scale } else { diff }
}

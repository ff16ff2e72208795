//! Shared proptest strategies for the unit tests.

use nalgebra::{Quaternion, Unit, UnitQuaternion, Vector3};
use proptest::prelude::*;

/// A unit quaternion, roughly uniform on S³.
pub(crate) fn unit_quaternion() -> impl Strategy<Value = UnitQuaternion<f64>> {
    prop::array::uniform4(-1.0..1.0f64)
        .prop_filter("away from zero", |c| {
            c.iter().map(|x| x * x).sum::<f64>() > 0.01
        })
        .prop_map(|[w, x, y, z]| UnitQuaternion::new_normalize(Quaternion::new(w, x, y, z)))
}

/// A unit vector.
pub(crate) fn unit_vector() -> impl Strategy<Value = Unit<Vector3<f64>>> {
    prop::array::uniform3(-1.0..1.0f64)
        .prop_filter("away from zero", |c| {
            c.iter().map(|x| x * x).sum::<f64>() > 0.01
        })
        .prop_map(|[x, y, z]| Unit::new_normalize(Vector3::new(x, y, z)))
}

/// A vector with a uniformly random direction and length in `lengths`.
pub(crate) fn vector_with_length(
    lengths: impl Strategy<Value = f64>,
) -> impl Strategy<Value = Vector3<f64>> {
    (unit_vector(), lengths).prop_map(|(u, l)| u.into_inner() * l)
}

/// Exp-map vectors: lengths up to `max`, plus tiny ones (1e-14 … 1e-8) and
/// exact zero, where the series forms are used.
pub(crate) fn expmap_vector(max: f64) -> impl Strategy<Value = Vector3<f64>> {
    prop_oneof![
        6 => vector_with_length(0.0..max),
        2 => vector_with_length((-14.0..-8.0f64).prop_map(|e| 10f64.powf(e))),
        1 => Just(Vector3::zeros()),
    ]
}

/// The angle between two rotations (0 when `a = ±b`).
pub(crate) fn rotation_distance(a: &UnitQuaternion<f64>, b: &UnitQuaternion<f64>) -> f64 {
    // |a·b| = cos(angle/2); via the difference to stay accurate near 0.
    let d = a.coords.dot(&b.coords);
    let (a, b) = (a.coords, if d < 0.0 { -b.coords } else { b.coords });
    2.0 * 2.0 * ((a - b).norm() / 2.0).min(1.0).asin()
}

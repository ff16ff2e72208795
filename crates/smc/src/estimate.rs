//! Estimators: what a weighted particle cloud says about the state.
//!
//! For normalised weights `ŵᵢ` (PHYSPRIOR §3: `E[f(x)] ≈ Σ ŵᵢ f(xᵢ)`):
//!
//! - **MAP particle**: `x_{i*}`, `i* = argmaxᵢ ŵᵢ` (SMC-IK Alg. 1 step 3; its
//!   lineage is PHYSPRIOR Ch. 4's MAP trajectory, see [`crate::Ancestry`]).
//! - **Mean and covariance** of Euclidean states:
//!   `x̄ = Σ ŵᵢ xᵢ`, `Σ = Σ ŵᵢ (xᵢ − x̄)(xᵢ − x̄)ᵀ` (the plug-in estimate,
//!   no small-sample correction).
//! - **Quantiles**: the weighted empirical CDF `F(v) = Σ_{xᵢ ≤ v} ŵᵢ`
//!   inverted per coordinate, `Q(p) = min{v : F(v) ≥ p}`.
//! - **Mean rotation** of unit quaternions (Markley, Cheng, Crassidis &
//!   Oshman 2007): the unit eigenvector of the largest eigenvalue of
//!   `M = Σ ŵᵢ qᵢ qᵢᵀ` (4 × 4). It minimises `Σ ŵᵢ ‖qqᵀ − qᵢqᵢᵀ‖²_F`, so it
//!   ignores the sign ambiguity `q ≡ −q`. The result is returned with
//!   `w ≥ 0`.
//!
//! Weights passed here need only be non-negative and finite with a positive
//! sum; they are divided by their sum.

use nalgebra::{DMatrix, Matrix4, Quaternion, SymmetricEigen, UnitQuaternion, Vector4};

use crate::error::SmcError;

/// Index of the largest value (lowest index on ties; NaN never wins).
/// Returns 0 for an empty slice.
pub fn argmax(xs: &[f64]) -> usize {
    let mut best = 0;
    for (i, &x) in xs.iter().enumerate() {
        if x > xs[best] || xs[best].is_nan() && !x.is_nan() {
            best = i;
        }
    }
    best
}

/// Validate a weight vector against `n` particles; return its sum.
fn weight_total(weights: &[f64], n: usize) -> Result<f64, SmcError> {
    if weights.len() != n {
        return Err(SmcError::ShapeMismatch {
            what: "weights",
            expected: n,
            got: weights.len(),
        });
    }
    if n == 0 {
        return Err(SmcError::Empty);
    }
    let mut total = 0.0;
    for (index, &w) in weights.iter().enumerate() {
        if !(0.0..f64::INFINITY).contains(&w) {
            return Err(SmcError::InvalidWeight { index, value: w });
        }
        total += w;
    }
    if total > 0.0 && total.is_finite() {
        Ok(total)
    } else {
        Err(SmcError::AllWeightsZero { n })
    }
}

/// Number of rows of a row-major buffer, checking its shape.
fn rows(states: &[f64], dim: usize) -> Result<usize, SmcError> {
    if dim == 0 || !states.len().is_multiple_of(dim) {
        return Err(SmcError::ShapeMismatch {
            what: "states (length must be a positive multiple of dim)",
            expected: dim,
            got: states.len(),
        });
    }
    Ok(states.len() / dim)
}

/// Weighted mean `Σ ŵᵢ xᵢ` of row-major `N × D` states, written to `out`.
///
/// # Errors
/// Shape mismatches, invalid weights.
pub fn weighted_mean_into(
    states: &[f64],
    dim: usize,
    weights: &[f64],
    out: &mut [f64],
) -> Result<(), SmcError> {
    let n = rows(states, dim)?;
    let total = weight_total(weights, n)?;
    if out.len() != dim {
        return Err(SmcError::ShapeMismatch {
            what: "mean output",
            expected: dim,
            got: out.len(),
        });
    }
    out.fill(0.0);
    for (row, &w) in states.chunks_exact(dim).zip(weights) {
        for (o, &x) in out.iter_mut().zip(row) {
            *o += w * x;
        }
    }
    out.iter_mut().for_each(|o| *o /= total);
    Ok(())
}

/// Weighted covariance `Σ ŵᵢ (xᵢ − x̄)(xᵢ − x̄)ᵀ` of row-major `N × D` states.
///
/// # Errors
/// Shape mismatches, invalid weights.
pub fn weighted_covariance(
    states: &[f64],
    dim: usize,
    weights: &[f64],
) -> Result<DMatrix<f64>, SmcError> {
    let mut mean = vec![0.0; dim];
    weighted_mean_into(states, dim, weights, &mut mean)?;
    let total: f64 = weights.iter().sum();
    let mut cov = DMatrix::zeros(dim, dim);
    let mut centred = vec![0.0; dim];
    for (row, &w) in states.chunks_exact(dim).zip(weights) {
        if w == 0.0 {
            continue;
        }
        for ((c, &x), &m) in centred.iter_mut().zip(row).zip(&mean) {
            *c = x - m;
        }
        for a in 0..dim {
            let wa = w * centred[a];
            for b in a..dim {
                cov[(a, b)] += wa * centred[b];
            }
        }
    }
    for a in 0..dim {
        for b in a..dim {
            let v = cov[(a, b)] / total;
            cov[(a, b)] = v;
            cov[(b, a)] = v;
        }
    }
    Ok(cov)
}

/// Weighted `p`-quantile `min{v : Σ_{xᵢ ≤ v} ŵᵢ ≥ p}` of scalar values.
///
/// # Errors
/// [`SmcError::InvalidParameter`] unless `0 ≤ p ≤ 1` or if a value is NaN;
/// shape mismatches, invalid weights.
pub fn weighted_quantile(values: &[f64], weights: &[f64], p: f64) -> Result<f64, SmcError> {
    let mut scratch = Vec::with_capacity(values.len());
    quantile_with(values.iter().copied(), weights, p, &mut scratch)
}

/// Weighted `p`-quantile of every coordinate of row-major `N × D` states.
///
/// # Errors
/// As [`weighted_quantile`].
pub fn weighted_quantiles(
    states: &[f64],
    dim: usize,
    weights: &[f64],
    p: f64,
) -> Result<Vec<f64>, SmcError> {
    let n = rows(states, dim)?;
    let mut scratch = Vec::with_capacity(n);
    (0..dim)
        .map(|d| {
            quantile_with(
                states.iter().skip(d).step_by(dim).copied(),
                weights,
                p,
                &mut scratch,
            )
        })
        .collect()
}

fn quantile_with(
    values: impl ExactSizeIterator<Item = f64>,
    weights: &[f64],
    p: f64,
    scratch: &mut Vec<(f64, f64)>,
) -> Result<f64, SmcError> {
    if !(0.0..=1.0).contains(&p) {
        return Err(SmcError::InvalidParameter {
            name: "p",
            value: p,
            reason: "a quantile level lies in [0, 1]",
        });
    }
    weight_total(weights, values.len())?;
    scratch.clear();
    for (i, (v, &w)) in values.zip(weights).enumerate() {
        if v.is_nan() {
            return Err(SmcError::InvalidParameter {
                name: "state value",
                value: i as f64,
                reason: "NaN at the particle whose index is the value",
            });
        }
        if w > 0.0 {
            scratch.push((v, w));
        }
    }
    scratch.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    // Sum in sorted order so the last cumulative value equals the total.
    let total: f64 = scratch.iter().map(|&(_, w)| w).sum();
    let target = p * total;
    let mut cum = 0.0;
    for &(v, w) in scratch.iter() {
        cum += w;
        if cum >= target {
            return Ok(v);
        }
    }
    Ok(scratch.last().map(|&(v, _)| v).unwrap_or(f64::NAN))
}

/// Weighted mean rotation by the eigenvector method (module docs), with
/// the result's scalar part `w ≥ 0`.
///
/// # Errors
/// [`SmcError::ShapeMismatch`] if the lengths differ, invalid weights.
pub fn quaternion_mean(
    quats: &[UnitQuaternion<f64>],
    weights: &[f64],
) -> Result<UnitQuaternion<f64>, SmcError> {
    let total = weight_total(weights, quats.len())?;
    let mut m = Matrix4::zeros();
    for (q, &w) in quats.iter().zip(weights) {
        let v = Vector4::new(q.w, q.i, q.j, q.k);
        m += (w / total) * v * v.transpose();
    }
    Ok(principal_quaternion(m))
}

/// [`quaternion_mean`] of quaternions stored `(w, x, y, z)` in columns
/// `offset..offset + 4` of row-major states; rows are normalised first.
///
/// # Errors
/// Shape mismatches, invalid weights, a zero quaternion
/// ([`SmcError::InvalidParameter`] naming the particle).
pub fn quaternion_mean_rows(
    states: &[f64],
    dim: usize,
    offset: usize,
    weights: &[f64],
) -> Result<UnitQuaternion<f64>, SmcError> {
    let n = rows(states, dim)?;
    if offset + 4 > dim {
        return Err(SmcError::ShapeMismatch {
            what: "quaternion columns",
            expected: dim,
            got: offset + 4,
        });
    }
    let total = weight_total(weights, n)?;
    let mut m = Matrix4::zeros();
    for (i, (row, &w)) in states.chunks_exact(dim).zip(weights).enumerate() {
        let v = Vector4::from_column_slice(&row[offset..offset + 4]);
        let norm2 = v.norm_squared();
        if !(norm2 > 0.0 && norm2.is_finite()) {
            return Err(SmcError::InvalidParameter {
                name: "quaternion of particle",
                value: i as f64,
                reason: "zero or non-finite quaternion (value is the particle index)",
            });
        }
        m += (w / (total * norm2)) * v * v.transpose();
    }
    Ok(principal_quaternion(m))
}

/// Unit eigenvector `(w, x, y, z)` of the largest eigenvalue, with `w ≥ 0`.
fn principal_quaternion(m: Matrix4<f64>) -> UnitQuaternion<f64> {
    let eig = SymmetricEigen::new(m);
    let k = argmax(eig.eigenvalues.as_slice());
    let mut v: Vector4<f64> = eig.eigenvectors.column(k).into_owned();
    if v[0] < 0.0 {
        v = -v;
    }
    UnitQuaternion::from_quaternion(Quaternion::new(v[0], v[1], v[2], v[3]))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use nalgebra::Vector3;
    use proptest::prelude::*;

    /// Chordal distance between rotations, `min ‖a ∓ b‖` (unlike an angle
    /// from `acos`, accurate near zero); the smoothing tests use it too.
    pub(crate) fn angle_between(a: &UnitQuaternion<f64>, b: &UnitQuaternion<f64>) -> f64 {
        (a.coords - b.coords)
            .norm()
            .min((a.coords + b.coords).norm())
    }

    #[test]
    fn quaternion_mean_of_identical_rotations_is_that_rotation() {
        let q = UnitQuaternion::from_euler_angles(0.3, -1.2, 2.0);
        // Mixed signs: q and −q are the same rotation.
        let qs = [q, UnitQuaternion::new_unchecked(-q.into_inner()), q];
        let m = quaternion_mean(&qs, &[0.2, 0.5, 0.3]).unwrap();
        assert!(angle_between(&m, &q) < 1e-12);
        assert!(m.w >= 0.0);
    }

    #[test]
    fn quaternion_mean_of_symmetric_pair_is_the_midpoint() {
        // Rotations by ±θ about z average to the identity; by 0 and θ with
        // equal weights to θ/2 (the chordal mean is exact for two rotations).
        let axis = Vector3::z_axis();
        let a = UnitQuaternion::from_axis_angle(&axis, 0.8);
        let b = UnitQuaternion::from_axis_angle(&axis, -0.8);
        let m = quaternion_mean(&[a, b], &[1.0, 1.0]).unwrap();
        assert!(angle_between(&m, &UnitQuaternion::identity()) < 1e-12);
        let c = UnitQuaternion::identity();
        let m = quaternion_mean(&[a, c], &[0.5, 0.5]).unwrap();
        assert!(angle_between(&m, &UnitQuaternion::from_axis_angle(&axis, 0.4)) < 1e-12);
    }

    #[test]
    fn quaternion_rows_match_unit_quaternions() {
        let qs: Vec<UnitQuaternion<f64>> = (0..5)
            .map(|i| UnitQuaternion::from_euler_angles(0.1 * i as f64, 0.2, -0.05 * i as f64))
            .collect();
        let w = [0.1, 0.3, 0.2, 0.25, 0.15];
        // Rows: [pad, w, x, y, z] with a non-unit scale that must be ignored.
        let rows_buf: Vec<f64> = qs
            .iter()
            .flat_map(|q| [9.0, 2.0 * q.w, 2.0 * q.i, 2.0 * q.j, 2.0 * q.k])
            .collect();
        let a = quaternion_mean(&qs, &w).unwrap();
        let b = quaternion_mean_rows(&rows_buf, 5, 1, &w).unwrap();
        assert!(angle_between(&a, &b) < 1e-12);
        let zero = vec![0.0; 5];
        assert!(quaternion_mean_rows(&zero, 5, 1, &[1.0]).is_err());
        assert!(quaternion_mean_rows(&rows_buf, 5, 2, &w).is_err());
    }

    #[test]
    fn estimators_reject_bad_weights() {
        let mut out = [0.0];
        assert!(matches!(
            weighted_mean_into(&[1.0, 2.0], 1, &[1.0, -1.0], &mut out),
            Err(SmcError::InvalidWeight { index: 1, .. })
        ));
        assert!(matches!(
            weighted_mean_into(&[1.0, 2.0], 1, &[0.0, 0.0], &mut out),
            Err(SmcError::AllWeightsZero { .. })
        ));
        assert!(matches!(
            weighted_quantile(&[1.0], &[1.0], 1.5),
            Err(SmcError::InvalidParameter { .. })
        ));
        assert!(matches!(
            weighted_quantile(&[f64::NAN], &[1.0], 0.5),
            Err(SmcError::InvalidParameter { .. })
        ));
        assert!(matches!(quaternion_mean(&[], &[]), Err(SmcError::Empty)));
    }

    #[test]
    fn quantiles_of_a_known_distribution() {
        let v = [3.0, 1.0, 2.0, 4.0];
        let w = [0.1, 0.4, 0.2, 0.3];
        // Sorted: 1 (0.4), 2 (0.6), 3 (0.7), 4 (1.0).
        assert_eq!(weighted_quantile(&v, &w, 0.0).unwrap(), 1.0);
        assert_eq!(weighted_quantile(&v, &w, 0.4).unwrap(), 1.0);
        assert_eq!(weighted_quantile(&v, &w, 0.41).unwrap(), 2.0);
        assert_eq!(weighted_quantile(&v, &w, 0.65).unwrap(), 3.0);
        assert_eq!(weighted_quantile(&v, &w, 1.0).unwrap(), 4.0);
        // A zero-weight value is never a quantile.
        assert_eq!(
            weighted_quantile(&[-5.0, 1.0], &[0.0, 1.0], 0.0).unwrap(),
            1.0
        );
    }

    proptest! {
        #[test]
        fn quaternion_mean_ignores_input_signs(
            angles in prop::collection::vec((-3.0f64..3.0, -1.5f64..1.5, -3.0f64..3.0), 1..8),
            flips in prop::collection::vec(any::<bool>(), 8),
            ws in prop::collection::vec(0.01f64..1.0, 8),
        ) {
            let qs: Vec<_> = angles.iter().map(|&(r, p, y)| UnitQuaternion::from_euler_angles(r, p, y)).collect();
            let flipped: Vec<_> = qs.iter().zip(&flips)
                .map(|(q, &f)| if f { UnitQuaternion::new_unchecked(-q.into_inner()) } else { *q })
                .collect();
            let w = &ws[..qs.len()];
            let a = quaternion_mean(&qs, w).unwrap();
            let b = quaternion_mean(&flipped, w).unwrap();
            // qqᵀ = (−q)(−q)ᵀ exactly, so the sign of an input changes nothing.
            prop_assert_eq!(a, b);
            prop_assert!(a.w >= 0.0);
            // The mean maximises Σ ŵᵢ (q·qᵢ)² over unit quaternions, so it
            // scores at least as well as every input.
            let score = |m: &UnitQuaternion<f64>| -> f64 {
                qs.iter().zip(w).map(|(q, &wi)| wi * m.coords.dot(&q.coords).powi(2)).sum()
            };
            for q in &qs {
                prop_assert!(score(&a) >= score(q) - 1e-12);
            }
        }

        #[test]
        fn quantiles_are_monotone_and_bracket_the_mean(
            vals in prop::collection::vec(-100.0f64..100.0, 1..50),
            p in 0.0f64..1.0, q in 0.0f64..1.0,
        ) {
            let w = vec![1.0; vals.len()];
            let (lo, hi) = if p <= q { (p, q) } else { (q, p) };
            prop_assert!(weighted_quantile(&vals, &w, lo).unwrap() <= weighted_quantile(&vals, &w, hi).unwrap());
            let mut mean = [0.0];
            weighted_mean_into(&vals, 1, &w, &mut mean).unwrap();
            prop_assert!(weighted_quantile(&vals, &w, 0.0).unwrap() <= mean[0] + 1e-9);
            prop_assert!(weighted_quantile(&vals, &w, 1.0).unwrap() >= mean[0] - 1e-9);
        }
    }
}

//! Online smoothing of an estimate, SMC-IK Eq. 15.
//!
//! The MAP estimate of a particle filter jitters from frame to frame.
//! SMC-IK smooths it online:
//!
//! ```text
//!   x̂_k = interpolate(x̂_{k−1}, x̄_k, α)                     (SMC-IK Eq. 15)
//! ```
//!
//! with linear interpolation for Cartesian coordinates,
//! `lerp(a, b, α) = a + α (b − a)`, and spherical linear interpolation for
//! rotations, `slerp(p, q, α) = p (p⁻¹q)^α` along the shorter arc. `α = 0`
//! keeps the previous estimate, `α = 1` takes the new one; the paper uses
//! `α ≈ 0.1` (and notes the smoothing delays the estimate).
//!
//! [`Smoother`] applies Eq. 15 to a state row described by a [`Block`]
//! layout, rotations being quaternions stored `(w, x, y, z)`.

use nalgebra::{Quaternion, UnitQuaternion, Vector4};

use crate::error::SmcError;

/// `a + α (b − a)` element-wise into `out` (SMC-IK Eq. 15, Cartesian part).
///
/// # Errors
/// [`SmcError::ShapeMismatch`] if the lengths differ.
pub fn lerp_into(a: &[f64], b: &[f64], alpha: f64, out: &mut [f64]) -> Result<(), SmcError> {
    if a.len() != b.len() || out.len() != a.len() {
        return Err(SmcError::ShapeMismatch {
            what: "lerp operands",
            expected: a.len(),
            got: if b.len() != a.len() {
                b.len()
            } else {
                out.len()
            },
        });
    }
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        *o = x + alpha * (y - x);
    }
    Ok(())
}

/// Spherical linear interpolation from `a` to `b` along the shorter arc
/// (SMC-IK Eq. 15, rotation part). Total for every input: nearly equal
/// rotations fall back to normalised lerp (nalgebra's `slerp` panics there).
pub fn slerp(a: &UnitQuaternion<f64>, b: &UnitQuaternion<f64>, alpha: f64) -> UnitQuaternion<f64> {
    let p = a.coords;
    let mut q = b.coords;
    if p.dot(&q) < 0.0 {
        q = -q;
    }
    // Angle between p and q on S³, accurate at both ends of [0, π/2].
    let theta = 2.0 * (p - q).norm().atan2((p + q).norm());
    let v: Vector4<f64> = if theta < 1e-9 {
        p + alpha * (q - p)
    } else {
        let s = theta.sin();
        p * (((1.0 - alpha) * theta).sin() / s) + q * ((alpha * theta).sin() / s)
    };
    UnitQuaternion::from_quaternion(Quaternion::from(v))
}

/// A run of coordinates in a state row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block {
    /// `n` Cartesian coordinates, lerped.
    Linear(usize),
    /// One rotation as a quaternion `(w, x, y, z)` (4 values), slerped and
    /// stored normalised with `w ≥ 0`.
    Rotation,
}

impl Block {
    fn len(self) -> usize {
        match self {
            Block::Linear(n) => n,
            Block::Rotation => 4,
        }
    }
}

/// Online Eq. 15 smoother of a state row.
#[derive(Debug, Clone)]
pub struct Smoother {
    alpha: f64,
    layout: Vec<Block>,
    dim: usize,
    state: Vec<f64>,
    primed: bool,
}

impl Smoother {
    /// A smoother with factor `alpha ∈ [0, 1]` for rows laid out as `layout`.
    ///
    /// # Errors
    /// [`SmcError::InvalidParameter`] if `alpha` is outside `[0, 1]`.
    pub fn new(alpha: f64, layout: Vec<Block>) -> Result<Self, SmcError> {
        if !(0.0..=1.0).contains(&alpha) {
            return Err(SmcError::InvalidParameter {
                name: "alpha",
                value: alpha,
                reason: "the smoothing factor of SMC-IK Eq. 15 lies in [0, 1]",
            });
        }
        let dim = layout.iter().map(|b| b.len()).sum();
        Ok(Smoother {
            alpha,
            layout,
            dim,
            state: vec![0.0; dim],
            primed: false,
        })
    }

    /// A smoother for `dim` Cartesian coordinates.
    ///
    /// # Errors
    /// As [`Smoother::new`].
    pub fn linear(alpha: f64, dim: usize) -> Result<Self, SmcError> {
        Self::new(alpha, vec![Block::Linear(dim)])
    }

    /// Fold in a new estimate `x̄_k` and return `x̂_k`. The first estimate is
    /// taken as it is (there is no `x̂_{k−1}`).
    ///
    /// # Errors
    /// [`SmcError::ShapeMismatch`] if `estimate` does not match the layout;
    /// [`SmcError::InvalidParameter`] for a zero or non-finite quaternion.
    pub fn update(&mut self, estimate: &[f64]) -> Result<&[f64], SmcError> {
        if estimate.len() != self.dim {
            return Err(SmcError::ShapeMismatch {
                what: "smoother input",
                expected: self.dim,
                got: estimate.len(),
            });
        }
        let mut at = 0;
        for &block in &self.layout {
            let len = block.len();
            let (prev, new) = (&mut self.state[at..at + len], &estimate[at..at + len]);
            match block {
                Block::Linear(_) => {
                    for (p, &x) in prev.iter_mut().zip(new) {
                        *p = if self.primed {
                            *p + self.alpha * (x - *p)
                        } else {
                            x
                        };
                    }
                }
                Block::Rotation => {
                    let v = Vector4::new(new[1], new[2], new[3], new[0]);
                    let norm = v.norm();
                    if !(norm > 0.0 && norm.is_finite()) {
                        return Err(SmcError::InvalidParameter {
                            name: "quaternion norm",
                            value: norm,
                            reason: "a rotation block must be a non-zero finite quaternion",
                        });
                    }
                    let q = UnitQuaternion::from_quaternion(Quaternion::from(v));
                    let r = if self.primed {
                        let p = UnitQuaternion::new_unchecked(Quaternion::new(
                            prev[0], prev[1], prev[2], prev[3],
                        ));
                        slerp(&p, &q, self.alpha)
                    } else {
                        q
                    };
                    let s = if r.w < 0.0 { -1.0 } else { 1.0 };
                    prev.copy_from_slice(&[s * r.w, s * r.i, s * r.j, s * r.k]);
                }
            }
            at += len;
        }
        self.primed = true;
        Ok(&self.state)
    }

    /// The current smoothed estimate, if any estimate was folded in.
    pub fn current(&self) -> Option<&[f64]> {
        self.primed.then_some(&self.state[..])
    }

    /// Forget the history; the next estimate is taken as it is.
    pub fn reset(&mut self) {
        self.primed = false;
    }

    /// The factor `α`.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::Vector3;
    use proptest::prelude::*;

    // Chordal distance between rotations, accurate near 0.
    use crate::estimate::tests::angle_between as dist;

    #[test]
    fn slerp_moves_along_the_great_circle() {
        let axis = Vector3::x_axis();
        let a = UnitQuaternion::from_axis_angle(&axis, 0.2);
        let b = UnitQuaternion::from_axis_angle(&axis, 1.2);
        let m = slerp(&a, &b, 0.25);
        assert!(dist(&m, &UnitQuaternion::from_axis_angle(&axis, 0.45)) < 1e-12);
        // Shorter arc across the sign ambiguity.
        let nb = UnitQuaternion::new_unchecked(-b.into_inner());
        assert!(dist(&slerp(&a, &nb, 0.25), &m) < 1e-12);
        // Identical and nearly identical rotations do not panic.
        assert_eq!(slerp(&a, &a, 0.3), a);
        let tiny = a * UnitQuaternion::from_axis_angle(&axis, 1e-14);
        assert!(dist(&slerp(&a, &tiny, 0.5), &a) < 1e-13);
    }

    #[test]
    fn smoother_applies_eq_15() {
        let mut s = Smoother::new(0.1, vec![Block::Linear(2), Block::Rotation]).unwrap();
        let axis = Vector3::z_axis();
        let q0 = UnitQuaternion::from_axis_angle(&axis, 0.0);
        let q1 = UnitQuaternion::from_axis_angle(&axis, 1.0);
        let row = |x: f64, q: UnitQuaternion<f64>| [x, -x, q.w, q.i, q.j, q.k];
        assert_eq!(s.update(&row(0.0, q0)).unwrap(), &row(0.0, q0));
        let out = s.update(&row(10.0, q1)).unwrap().to_vec();
        assert!((out[0] - 1.0).abs() < 1e-12 && (out[1] + 1.0).abs() < 1e-12);
        let q = UnitQuaternion::from_quaternion(Quaternion::new(out[2], out[3], out[4], out[5]));
        assert!(dist(&q, &UnitQuaternion::from_axis_angle(&axis, 0.1)) < 1e-12);
        assert!(s.update(&[0.0; 5]).is_err());
        assert!(s.update(&[0.0; 6]).is_err(), "zero quaternion");
        assert!(Smoother::linear(1.5, 3).is_err());
        s.reset();
        assert_eq!(s.current(), None);
    }

    proptest! {
        #[test]
        fn slerp_endpoints_and_constant_speed(
            e1 in (-3.0f64..3.0, -1.5f64..1.5, -3.0f64..3.0),
            e2 in (-3.0f64..3.0, -1.5f64..1.5, -3.0f64..3.0),
            t in 0.0f64..1.0,
        ) {
            let a = UnitQuaternion::from_euler_angles(e1.0, e1.1, e1.2);
            let b = UnitQuaternion::from_euler_angles(e2.0, e2.1, e2.2);
            prop_assert!(slerp(&a, &b, 0.0).angle_to(&a) < 1e-6);
            prop_assert!(slerp(&a, &b, 1.0).angle_to(&b) < 1e-6);
            let total = a.angle_to(&b);
            let m = slerp(&a, &b, t);
            prop_assert!((a.angle_to(&m) - t * total).abs() < 1e-6);
            prop_assert!((m.angle_to(&b) - (1.0 - t) * total).abs() < 1e-6);
        }

        #[test]
        fn lerp_endpoints(a in prop::collection::vec(-1e3f64..1e3, 4), b in prop::collection::vec(-1e3f64..1e3, 4)) {
            let mut out = [0.0; 4];
            lerp_into(&a, &b, 0.0, &mut out).unwrap();
            prop_assert_eq!(&out[..], &a[..]);
            lerp_into(&a, &b, 1.0, &mut out).unwrap();
            for (o, y) in out.iter().zip(&b) {
                prop_assert!((o - y).abs() <= 1e-12 * y.abs().max(1.0));
            }
        }
    }
}

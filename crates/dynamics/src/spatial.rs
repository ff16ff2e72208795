//! Spatial (6D) vector algebra for rigid bodies, after Featherstone's
//! *Rigid Body Dynamics Algorithms* (RBDA, ch. 2), in the form Pinocchio uses:
//! a motion (twist) is an angular and a linear part `(ω, v)` with the linear
//! part the velocity of the body-fixed point at the frame's origin; a force
//! (wrench) is a moment about the origin and a force `(n, f)`.
//!
//! A placement [`Se3`] `(R, p)` is the pose of a frame B in a frame A
//! (`x_A = R x_B + p`). Its actions map vectors written in B to vectors
//! written in A (`act`) and back (`act_inv`):
//!
//! ```text
//! motion:  ω_A = R ω_B,        v_A = R v_B + p × (R ω_B)
//! force:   f_A = R f_B,        n_A = R n_B + p × (R f_B)
//! ```
//!
//! A spatial inertia is kept about the frame's origin as `(m, h = m c, I_O)`
//! (`c` the centre of mass, `I_O` the rotational inertia about the origin), so
//! that the momentum of a body moving with `(ω, v)` is
//! `I·(ω, v) = (I_O ω + h × v, m v − h × ω)` (RBDA Eq. 2.63).

use nalgebra::{Matrix3, Vector3};

/// The skew-symmetric matrix `[a]×` with `[a]× b = a × b`.
#[inline]
pub fn skew(a: &Vector3<f64>) -> Matrix3<f64> {
    Matrix3::new(0.0, -a.z, a.y, a.z, 0.0, -a.x, -a.y, a.x, 0.0)
}

/// A spatial motion vector (twist or spatial acceleration): angular part `w`,
/// linear part `v` of the point at the frame origin.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Motion {
    pub w: Vector3<f64>,
    pub v: Vector3<f64>,
}

/// The vector-space part of a spatial vector type with two 3-vector
/// halves: `new`, `zero`, `+`, `+=`, `-=` and scaling by an `f64`, each
/// acting half by half.
macro_rules! spatial_vector_ops {
    ($t:ident { $a:ident, $b:ident }) => {
        impl $t {
            pub const fn new($a: Vector3<f64>, $b: Vector3<f64>) -> Self {
                Self { $a, $b }
            }

            pub fn zero() -> Self {
                Self::default()
            }
        }

        impl std::ops::Add for $t {
            type Output = $t;
            #[inline]
            fn add(self, o: $t) -> $t {
                $t::new(self.$a + o.$a, self.$b + o.$b)
            }
        }

        impl std::ops::AddAssign for $t {
            #[inline]
            fn add_assign(&mut self, o: $t) {
                self.$a += o.$a;
                self.$b += o.$b;
            }
        }

        impl std::ops::SubAssign for $t {
            #[inline]
            fn sub_assign(&mut self, o: $t) {
                self.$a -= o.$a;
                self.$b -= o.$b;
            }
        }

        impl std::ops::Mul<f64> for $t {
            type Output = $t;
            #[inline]
            fn mul(self, s: f64) -> $t {
                $t::new(self.$a * s, self.$b * s)
            }
        }
    };
}

spatial_vector_ops!(Motion { w, v });

impl Motion {
    /// The motion cross product `self × m` (RBDA Eq. 2.31):
    /// `(ω₁ × ω₂, ω₁ × v₂ + v₁ × ω₂)`.
    #[inline]
    pub fn cross(&self, m: &Motion) -> Motion {
        Motion::new(self.w.cross(&m.w), self.w.cross(&m.v) + self.v.cross(&m.w))
    }

    /// The dual cross product `self ×* f` (RBDA Eq. 2.32):
    /// `(ω × n + v × f, ω × f)`.
    #[inline]
    pub fn cross_force(&self, f: &Force) -> Force {
        Force::new(self.w.cross(&f.n) + self.v.cross(&f.f), self.w.cross(&f.f))
    }

    /// The power pairing `⟨self, f⟩ = ω·n + v·f`.
    #[inline]
    pub fn dot(&self, f: &Force) -> f64 {
        self.w.dot(&f.n) + self.v.dot(&f.f)
    }

    /// Velocity of the body-fixed point `x` (same frame as the motion).
    #[inline]
    pub fn point_velocity(&self, x: &Vector3<f64>) -> Vector3<f64> {
        self.v + self.w.cross(x)
    }
}

/// A spatial force vector (wrench): moment `n` about the frame origin and
/// force `f`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Force {
    pub n: Vector3<f64>,
    pub f: Vector3<f64>,
}

spatial_vector_ops!(Force { n, f });

/// A rigid placement `(R, p)`: the pose of a frame B in a frame A,
/// `x_A = R x_B + p`. Rotation matrices (not quaternions) because every
/// algorithm applies each placement many times.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Se3 {
    pub r: Matrix3<f64>,
    pub p: Vector3<f64>,
}

impl Default for Se3 {
    fn default() -> Self {
        Self::identity()
    }
}

impl Se3 {
    pub fn identity() -> Self {
        Self {
            r: Matrix3::identity(),
            p: Vector3::zeros(),
        }
    }

    pub fn from_isometry(iso: &nalgebra::Isometry3<f64>) -> Self {
        Self {
            r: iso.rotation.to_rotation_matrix().into_inner(),
            p: iso.translation.vector,
        }
    }

    pub fn to_isometry(&self) -> nalgebra::Isometry3<f64> {
        let rot = nalgebra::UnitQuaternion::from_matrix(&self.r);
        nalgebra::Isometry3::from_parts(nalgebra::Translation3::from(self.p), rot)
    }

    /// Composition `self · other` (other's pose written in self's parent).
    #[inline]
    pub fn compose(&self, other: &Se3) -> Se3 {
        Se3 {
            r: self.r * other.r,
            p: self.r * other.p + self.p,
        }
    }

    pub fn inverse(&self) -> Se3 {
        let rt = self.r.transpose();
        Se3 {
            r: rt,
            p: -(rt * self.p),
        }
    }

    #[inline]
    pub fn transform_point(&self, x: &Vector3<f64>) -> Vector3<f64> {
        self.r * x + self.p
    }

    /// Motion written in B → the same motion written in A.
    #[inline]
    pub fn act_motion(&self, m: &Motion) -> Motion {
        let w = self.r * m.w;
        Motion::new(w, self.r * m.v + self.p.cross(&w))
    }

    /// Motion written in A → the same motion written in B.
    #[inline]
    pub fn act_inv_motion(&self, m: &Motion) -> Motion {
        let rt = self.r.transpose();
        Motion::new(rt * m.w, rt * (m.v - self.p.cross(&m.w)))
    }

    /// Force written in B → the same force written in A.
    #[inline]
    pub fn act_force(&self, f: &Force) -> Force {
        let ff = self.r * f.f;
        Force::new(self.r * f.n + self.p.cross(&ff), ff)
    }
}

/// A spatial inertia about a frame's origin: mass `m`, first moment
/// `h = m c` and rotational inertia `I_O` about the origin (module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Inertia {
    pub mass: f64,
    pub h: Vector3<f64>,
    pub i_o: Matrix3<f64>,
}

impl Inertia {
    /// No mass: the identity of `+=`.
    pub fn zero() -> Self {
        Self::default()
    }

    /// From mass, centre of mass and the inertia tensor about the centre of
    /// mass (parallel-axis theorem: `I_O = I_C − m [c]×²`).
    pub fn from_com(mass: f64, com: &Vector3<f64>, inertia_com: &Matrix3<f64>) -> Self {
        let cx = skew(com);
        Self {
            mass,
            h: com * mass,
            i_o: inertia_com - cx * cx * mass,
        }
    }

    /// Centre of mass (origin when the mass is zero).
    pub fn com(&self) -> Vector3<f64> {
        if self.mass > 0.0 {
            self.h / self.mass
        } else {
            Vector3::zeros()
        }
    }

    /// Rotational inertia about the centre of mass.
    pub fn inertia_com(&self) -> Matrix3<f64> {
        let c = self.com();
        let cx = skew(&c);
        self.i_o + cx * cx * self.mass
    }

    /// The momentum `I·m = (I_O ω + h × v, m v − h × ω)` (RBDA Eq. 2.63).
    #[inline]
    pub fn mul_motion(&self, m: &Motion) -> Force {
        Force::new(
            self.i_o * m.w + self.h.cross(&m.v),
            m.v * self.mass - self.h.cross(&m.w),
        )
    }

    /// The same inertia written in frame A, for `x` the pose of its frame B in
    /// A (see [`Inertia::placed`]).
    #[inline]
    pub fn transformed(&self, x: &Se3) -> Inertia {
        Inertia::placed(self.mass, &self.com(), &self.inertia_com(), x)
    }

    /// The inertia of mass `mass`, centre `com` and central inertia
    /// `inertia_com` (all in frame B), written about the origin of frame A,
    /// `x` the pose of B in A: `c' = R c + p`, `I_C' = R I_C Rᵀ`, then the
    /// parallel-axis theorem `I_O' = I_C' + m (|c'|² 1 − c'c'ᵀ)`.
    #[inline]
    pub fn placed(mass: f64, com: &Vector3<f64>, inertia_com: &Matrix3<f64>, x: &Se3) -> Inertia {
        let c = x.r * com + x.p;
        let shift = Matrix3::identity() * c.norm_squared() - c * c.transpose();
        Inertia {
            mass,
            h: c * mass,
            i_o: x.r * inertia_com * x.r.transpose() + shift * mass,
        }
    }
}

impl std::ops::AddAssign for Inertia {
    #[inline]
    fn add_assign(&mut self, o: Inertia) {
        self.mass += o.mass;
        self.h += o.h;
        self.i_o += o.i_o;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::UnitQuaternion;
    use proptest::prelude::*;

    fn vec3(scale: f64) -> impl Strategy<Value = Vector3<f64>> {
        prop::array::uniform3(-scale..scale).prop_map(Vector3::from)
    }

    fn placement() -> impl Strategy<Value = Se3> {
        (vec3(3.0), vec3(2.0)).prop_map(|(axis, p)| Se3 {
            r: UnitQuaternion::from_scaled_axis(axis)
                .to_rotation_matrix()
                .into_inner(),
            p,
        })
    }

    /// A physical inertia: positive mass, a centre of mass, and a central
    /// tensor `A Aᵀ + ε1` (symmetric positive definite).
    fn inertia() -> impl Strategy<Value = Inertia> {
        (0.1..10.0f64, vec3(0.5), prop::array::uniform9(-0.3..0.3f64)).prop_map(|(m, c, a)| {
            let a = Matrix3::from_row_slice(&a);
            Inertia::from_com(m, &c, &(a * a.transpose() + Matrix3::identity() * 1e-3))
        })
    }

    fn motion() -> impl Strategy<Value = Motion> {
        (vec3(2.0), vec3(2.0)).prop_map(|(w, v)| Motion::new(w, v))
    }

    proptest! {
        /// `I_A (X m) = X* (I_B m)`: momentum computed in either frame agrees.
        #[test]
        fn momentum_is_frame_independent(x in placement(), i in inertia(), m in motion()) {
            let lhs = i.transformed(&x).mul_motion(&x.act_motion(&m));
            let rhs = x.act_force(&i.mul_motion(&m));
            prop_assert!((lhs.n - rhs.n).norm() < 1e-11 && (lhs.f - rhs.f).norm() < 1e-11);
        }

        /// `act_inv ∘ act = id`, and the power `⟨m, f⟩` does not depend on the frame.
        #[test]
        fn actions_invert_and_preserve_power(x in placement(), m in motion(), n in vec3(2.0), f in vec3(2.0)) {
            let back = x.act_inv_motion(&x.act_motion(&m));
            prop_assert!((back.w - m.w).norm() < 1e-12 && (back.v - m.v).norm() < 1e-12);
            let force = Force::new(n, f);
            let p1 = m.dot(&force);
            let p2 = x.act_motion(&m).dot(&x.act_force(&force));
            prop_assert!((p1 - p2).abs() < 1e-11);
        }

        /// Kinetic energy `½ ⟨m, I m⟩` is positive and frame independent,
        /// and the centre-of-mass form round-trips.
        #[test]
        fn energy_is_positive_and_com_form_round_trips(x in placement(), i in inertia(), m in motion()) {
            let e = m.dot(&i.mul_motion(&m));
            prop_assert!(e > 0.0);
            let e2 = x.act_motion(&m).dot(&i.transformed(&x).mul_motion(&x.act_motion(&m)));
            prop_assert!((e - e2).abs() < 1e-10 * e.max(1.0));
            let j = Inertia::from_com(i.mass, &i.com(), &i.inertia_com());
            prop_assert!((i.i_o - j.i_o).norm() < 1e-12 && (i.h - j.h).norm() < 1e-12);
        }

        /// `×*` is the dual of `×` (RBDA Eq. 2.33): `⟨a × m, f⟩ = −⟨m, a ×* f⟩`.
        #[test]
        fn cross_products_are_dual(a in motion(), m in motion(), n in vec3(2.0), f in vec3(2.0)) {
            let force = Force::new(n, f);
            let lhs = a.cross(&m).dot(&force);
            let rhs = -m.dot(&a.cross_force(&force));
            prop_assert!((lhs - rhs).abs() < 1e-11);
        }
    }
}

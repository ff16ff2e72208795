//! The kinematic lower body driven by the walker (PHYSPRIOR §2.2).
//!
//! Geometry (Fig. 2.4; the `physprior_lower_body` preset of `skeleton`):
//! a root between the hip joints with a heading `θ` about the vertical
//! (forward `d = (sin θ, 0, cos θ)`, left `l = up × d`), and per leg a hip
//! angle (sagittal, from the downward vertical, positive = foot forward, the
//! walker's `φ`), a knee `ψ_knee ∈ [−π, 0]` (negative bends the shank
//! back), an ankle `ψ_ankle-x` (foot pitch; `0` with the shank vertical is a
//! level foot) and `ψ_ankle-z` (foot yaw). The heel sits [`ANKLE_HEIGHT`]
//! below and [`HEEL_BACK`] behind the ankle, as in the preset.
//!
//! Joint evolution (PHYSPRIOR Eq. 2.6), for joints the dynamics do not fix:
//!
//! ```text
//!   μ = ψ(t−1) + τ(α ψ̇(t−1) + κ(ψ⁰ − ψ(t−1))),
//!   ψ(t) ~ 𝒩(μ, σ², [ψ_min, ψ_max]),   ψ̇(t) = (ψ(t) − ψ(t−1))/τ
//! ```
//!
//! with Table 2.5's `τ⁻¹σ`, `α`, `κ`, limits; the swing knee rests at
//! `min(0, −ψ_hip-stance(t−1))`, the stance ankle at
//! `−(ψ_knee-stance(t−1) + ψ_hip-stance(t−1))` (foot level), and the stance
//! ankle's yaw is frozen while the foot is on the ground.

use nalgebra::{Point3, Vector3};
use rand::Rng;
use rand::RngExt;
use rand_distr::{Exp1, StandardNormal};

/// Height of the ankle above the heel (m), as in the preset.
pub const ANKLE_HEIGHT: f64 = 0.05;
/// Heel offset behind the ankle (m), as in the preset.
pub const HEEL_BACK: f64 = 0.05;

/// Segment lengths of the lower body (PHYSPRIOR Table 2.6 segments).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segments {
    /// Thigh (hip → knee).
    pub thigh: f64,
    /// Shank (knee → ankle).
    pub shank: f64,
    /// Hip width (left hip → right hip).
    pub hips: f64,
    /// Foot (heel → toe).
    pub foot: f64,
}

impl Default for Segments {
    /// Table 2.6 population means.
    fn default() -> Self {
        Segments {
            thigh: 0.4,
            shank: 0.5,
            hips: 0.3,
            foot: 0.2,
        }
    }
}

/// Angles of one leg.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LegAngles {
    /// Hip (sagittal).
    pub hip: f64,
    /// Knee, `[−π, 0]`.
    pub knee: f64,
    /// Ankle pitch.
    pub ankle_x: f64,
    /// Ankle yaw.
    pub ankle_z: f64,
}

/// Points of one leg.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LegPoints {
    /// Hip joint.
    pub hip: Point3<f64>,
    /// Knee.
    pub knee: Point3<f64>,
    /// Ankle (the thesis' "foot" tracking point).
    pub ankle: Point3<f64>,
    /// Heel (the ground contact point).
    pub heel: Point3<f64>,
    /// Toe tip.
    pub toe: Point3<f64>,
}

/// Forward kinematics of one leg relative to the root, with unit forward
/// `d`, left `l`, and `side` = +1 (left) / −1 (right).
pub fn leg_points(
    root: &Point3<f64>,
    d: &Vector3<f64>,
    l: &Vector3<f64>,
    side: f64,
    seg: &Segments,
    a: &LegAngles,
) -> LegPoints {
    let up = Vector3::y();
    let hip = root + l * (0.5 * side * seg.hips);
    let (sa, ca) = a.hip.sin_cos();
    let knee = hip + (d * sa - up * ca) * seg.thigh;
    let b = a.hip + a.knee;
    let (sb, cb) = b.sin_cos();
    let ankle = knee + (d * sb - up * cb) * seg.shank;
    let beta = b + a.ankle_x;
    let (sbe, cbe) = beta.sin_cos();
    let (sz, cz) = a.ankle_z.sin_cos();
    let dd = d * cz + l * (side * sz);
    let fwd = dd * cbe + up * sbe;
    let nrm = up * cbe - dd * sbe;
    let heel = ankle - nrm * ANKLE_HEIGHT - fwd * HEEL_BACK;
    let toe = heel + fwd * seg.foot;
    LegPoints {
        hip,
        knee,
        ankle,
        heel,
        toe,
    }
}

/// Forward and left unit vectors of heading `θ`.
#[inline]
pub fn heading_axes(theta: f64) -> (Vector3<f64>, Vector3<f64>) {
    let (s, c) = theta.sin_cos();
    (Vector3::new(s, 0.0, c), Vector3::new(c, 0.0, -s))
}

/// Parameters of one joint's evolution (PHYSPRIOR Table 2.5).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JointEvolution {
    /// Angle noise per second `τ⁻¹σ`.
    pub noise: f64,
    /// Velocity decay `α`.
    pub alpha: f64,
    /// Spring stiffness `κ`.
    pub kappa: f64,
    /// Limits `[ψ_min, ψ_max]`.
    pub limits: (f64, f64),
}

impl JointEvolution {
    /// Table 2.5: torso (heading).
    pub const TORSO: JointEvolution = JointEvolution {
        noise: 0.2,
        alpha: 1.0,
        kappa: 0.0,
        limits: (f64::NEG_INFINITY, f64::INFINITY),
    };
    /// Table 2.5: hip (where the dynamics do not fix it).
    pub const HIP: JointEvolution = JointEvolution {
        noise: std::f64::consts::PI,
        alpha: 0.75,
        kappa: 0.0,
        limits: (f64::NEG_INFINITY, f64::INFINITY),
    };
    /// Table 2.5: knee.
    pub const KNEE: JointEvolution = JointEvolution {
        noise: std::f64::consts::FRAC_PI_4,
        alpha: 1.0,
        kappa: 2.0,
        limits: (-std::f64::consts::PI, 0.0),
    };
    /// Table 2.5: ankle pitch.
    pub const ANKLE_X: JointEvolution = JointEvolution {
        noise: std::f64::consts::FRAC_PI_4,
        alpha: 0.75,
        kappa: 2.0,
        limits: (-std::f64::consts::FRAC_PI_2, std::f64::consts::FRAC_PI_2),
    };
    /// Table 2.5: ankle yaw.
    pub const ANKLE_Z: JointEvolution = JointEvolution {
        noise: std::f64::consts::FRAC_PI_4,
        alpha: 0.75,
        kappa: 5.0,
        limits: (-std::f64::consts::FRAC_PI_2, std::f64::consts::FRAC_PI_2),
    };

    /// The deterministic part `μ` of PHYSPRIOR Eq. 2.6.
    #[inline]
    pub fn mean(&self, psi: f64, dpsi: f64, rest: f64, tau: f64) -> f64 {
        psi + tau * (self.alpha * dpsi + self.kappa * (rest - psi))
    }

    /// Draws `(ψ(t), ψ̇(t))` from PHYSPRIOR Eq. 2.6 with time step `tau`.
    /// The mean is clamped into the limits first, so a state pushed outside
    /// them (by a resampled parent, say) still draws a valid angle.
    #[inline]
    pub fn evolve<R: Rng + ?Sized>(
        &self,
        psi: f64,
        dpsi: f64,
        rest: f64,
        tau: f64,
        rng: &mut R,
    ) -> (f64, f64) {
        let mu = self.mean(psi, dpsi, rest, tau);
        let sigma = self.noise * tau;
        let next = truncated_normal(mu, sigma, self.limits.0, self.limits.1, rng);
        (next, (next - psi) / tau)
    }
}

/// A draw from `𝒩(μ, σ², [lo, hi])` (PHYSPRIOR Eq. 2.6, App. B.1), by
/// Robert's (1995) accept–reject samplers: plain normal draws when the
/// interval holds the bulk, a uniform proposal for short intervals, an
/// exponential proposal with the optimal rate for one-sided tails.
pub fn truncated_normal<R: Rng + ?Sized>(
    mu: f64,
    sigma: f64,
    lo: f64,
    hi: f64,
    rng: &mut R,
) -> f64 {
    if sigma.is_nan() || sigma <= 0.0 || lo >= hi {
        return mu.clamp(lo.min(hi), hi.max(lo));
    }
    let a = (lo - mu) / sigma;
    let b = (hi - mu) / sigma;
    mu + sigma * std_truncated_normal(a, b, rng)
}

fn std_truncated_normal<R: Rng + ?Sized>(a: f64, b: f64, rng: &mut R) -> f64 {
    if b <= 0.0 {
        // Mirror a non-positive interval onto the non-negative side.
        return -std_truncated_normal(-b, -a, rng);
    }
    if a <= 0.0 {
        // The interval contains 0 (b > 0 here).
        if b - a > 2.5 {
            loop {
                let z: f64 = rng.sample(StandardNormal);
                if z >= a && z <= b {
                    return z;
                }
            }
        }
        loop {
            let z = a + (b - a) * rng.random::<f64>();
            if rng.random::<f64>() <= (-0.5 * z * z).exp() {
                return z;
            }
        }
    }
    // 0 < a < b: upper tail.
    if b - a < 0.5 {
        loop {
            let z = a + (b - a) * rng.random::<f64>();
            if rng.random::<f64>() <= (0.5 * (a * a - z * z)).exp() {
                return z;
            }
        }
    }
    let rate = 0.5 * (a + (a * a + 4.0).sqrt());
    loop {
        let e: f64 = rng.sample(Exp1);
        let z = a + e / rate;
        if z <= b && rng.random::<f64>() <= (-0.5 * (z - rate).powi(2)).exp() {
            return z;
        }
    }
}

/// Standard normal CDF `Φ` (erfc by Numerical Recipes' Chebyshev fit,
/// relative error < 1.2e-7).
pub fn normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * z);
    let erfc = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        1.0 - 0.5 * erfc
    } else {
        0.5 * erfc
    }
}

/// Log density of `𝒩(x; μ, σ², [lo, hi])` (PHYSPRIOR Eq. 2.6).
pub fn truncated_normal_log_density(x: f64, mu: f64, sigma: f64, lo: f64, hi: f64) -> f64 {
    if x < lo || x > hi {
        return f64::NEG_INFINITY;
    }
    let mass = normal_cdf((hi - mu) / sigma) - normal_cdf((lo - mu) / sigma);
    -0.5 * ((x - mu) / sigma).powi(2)
        - (sigma * (2.0 * std::f64::consts::PI).sqrt()).ln()
        - mass.ln()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rng() -> rand_pcg::Pcg64Mcg {
        rand_pcg::Pcg64Mcg::seed_from_u64(7)
    }

    /// Sample means match the analytic truncated-normal mean
    /// `μ + σ(φ(a) − φ(b))/(Φ(b) − Φ(a))` in every regime of the sampler.
    #[test]
    fn truncated_normal_moments() {
        let mut r = rng();
        let pdf = |x: f64| (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
        for &(mu, sigma, lo, hi) in &[
            (0.0, 1.0, -1.0, 1.0),
            (0.0, 1.0, -5.0, 5.0),
            (0.3, 0.1, 0.0, 0.35),
            (-0.2, 0.1, -std::f64::consts::PI, 0.0),
            (0.5, 0.2, -std::f64::consts::PI, 0.0),
            (2.0, 0.5, -1.57, 1.57),
            (-1.0, 0.3, -0.5, 0.5),
        ] {
            let n = 40_000;
            let mut sum = 0.0;
            for _ in 0..n {
                let x = truncated_normal(mu, sigma, lo, hi, &mut r);
                assert!(x >= lo && x <= hi);
                sum += x;
            }
            let (a, b) = ((lo - mu) / sigma, (hi - mu) / sigma);
            let mass = normal_cdf(b) - normal_cdf(a);
            let mean = mu + sigma * (pdf(a) - pdf(b)) / mass;
            let got = sum / n as f64;
            // Standard error < σ/√n; allow 6 of them.
            assert!(
                (got - mean).abs() < 6.0 * sigma / (n as f64).sqrt(),
                "{mu} {sigma} [{lo},{hi}]: {got} vs {mean}"
            );
        }
    }

    #[test]
    fn truncated_density_integrates_to_one() {
        let (mu, sigma, lo, hi) = (0.4, 0.3, -0.2, 0.5);
        let n = 20_000;
        let h = (hi - lo) / n as f64;
        let s: f64 = (0..n)
            .map(|i| {
                truncated_normal_log_density(lo + (i as f64 + 0.5) * h, mu, sigma, lo, hi).exp() * h
            })
            .sum();
        assert!((s - 1.0).abs() < 1e-5, "{s}");
        assert_eq!(
            truncated_normal_log_density(0.6, mu, sigma, lo, hi),
            f64::NEG_INFINITY
        );
    }

    /// Eq. 2.6 without noise is a damped spring (α < 1): the joint settles
    /// at rest; with α = 1 (the knee) it oscillates without decay.
    #[test]
    fn joint_model_is_a_damped_spring() {
        let m = JointEvolution {
            noise: 1e-12,
            ..JointEvolution::ANKLE_X
        };
        let mut r = rng();
        let (mut psi, mut dpsi) = (-1.0, 0.0);
        for _ in 0..3000 {
            (psi, dpsi) = m.evolve(psi, dpsi, -0.2, 1.0 / 30.0, &mut r);
        }
        assert!((psi + 0.2).abs() < 1e-3, "{psi} {dpsi}");
    }

    /// A straight leg with a level foot: knee and ankle straight below the
    /// hip, heel on the floor under the ankle, toe ahead.
    #[test]
    fn leg_forward_kinematics() {
        let seg = Segments::default();
        let (d, l) = heading_axes(0.0);
        let root = Point3::new(0.0, 1.0, 0.0);
        let p = leg_points(&root, &d, &l, 1.0, &seg, &LegAngles::default());
        assert!((p.hip - Point3::new(0.15, 1.0, 0.0)).norm() < 1e-12);
        assert!((p.knee - Point3::new(0.15, 0.6, 0.0)).norm() < 1e-12);
        assert!((p.ankle - Point3::new(0.15, 0.1, 0.0)).norm() < 1e-12);
        assert!((p.heel - Point3::new(0.15, 0.05, -0.05)).norm() < 1e-12);
        assert!((p.toe - Point3::new(0.15, 0.05, 0.15)).norm() < 1e-12);
        // Hip flexion by +0.3 swings the knee forward (+z).
        let a = LegAngles {
            hip: 0.3,
            ..Default::default()
        };
        let p = leg_points(&root, &d, &l, 1.0, &seg, &a);
        assert!(p.knee.z > 0.1);
        // The knee bends back.
        let a = LegAngles {
            knee: -0.5,
            ..Default::default()
        };
        let p = leg_points(&root, &d, &l, -1.0, &seg, &a);
        assert!(p.ankle.z < -0.2 && (p.hip.x + 0.15).abs() < 1e-12);
    }
}

//! Body inertias from the skeleton's capsules, and segment masses for humans.
//!
//! SPARSE §2.1 gives every bone a mass from biomechanics statistics and an
//! inertia from its shape at uniform density. Here the shape is the
//! skeleton's capsule (a cylinder of length `L` and radius `r` closed by two
//! half-spheres); with the capsule's mass `m` split between the cylinder and
//! the caps in proportion to their volumes (`m_c`, `m_s`), the principal
//! moments about the capsule's centre are
//!
//! ```text
//! I_axis = m_c r²/2 + m_s · 2r²/5
//! I_perp = m_c (L²/12 + r²/4) + m_s (2r²/5 + L²/4 + 3Lr/8)
//! ```
//!
//! (each cap's own moment `(2/5)(m_s/2) r²` about its diameter, moved by the
//! parallel-axis theorem from its centre of mass, `3r/8` from the flat face,
//! to the capsule's centre).
//!
//! Segment masses: a skeleton's own masses (presets carry anthropometric
//! ones), or [`MassSource::Dempster`], which spreads a total mass over the
//! body-part classes with the Dempster fractions as tabulated by Winter
//! (*Biomechanics and Motor Control of Human Movement*, Table 4.1) and, within
//! a class, in proportion to capsule volume.

use nalgebra::Matrix3;
use skeleton::{BodyPart, Capsule, Skeleton};

use crate::spatial::Inertia;

/// Where the segment masses come from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MassSource {
    /// Each joint's `Body::mass` as the skeleton gives it.
    Skeleton,
    /// `total_mass` (kg) spread over body-part classes by [`dempster_fraction`],
    /// within a class in proportion to capsule volume. Classes the skeleton
    /// lacks are left out and the remaining fractions renormalised.
    Dempster { total_mass: f64 },
}

/// Fraction of the total body mass in each body-part class, both sides
/// together (Dempster via Winter, Table 4.1: hand 0.006, forearm 0.016, upper
/// arm 0.028, thigh 0.100, leg 0.0465, foot 0.0145 per side; head and neck
/// 0.081, thorax 0.216, abdomen 0.139, pelvis 0.142). The head-and-neck
/// share is split 0.069 / 0.012; thorax and abdomen form the torso class;
/// fingers take a quarter of the hands' share; generic links get nothing.
pub fn dempster_fraction(part: BodyPart) -> f64 {
    match part {
        BodyPart::Head => 0.069,
        BodyPart::Neck => 0.012,
        BodyPart::Torso => 0.216 + 0.139,
        BodyPart::Pelvis => 0.142,
        BodyPart::UpperArm => 2.0 * 0.028,
        BodyPart::Forearm => 2.0 * 0.016,
        BodyPart::Hand => 2.0 * 0.006 * 0.75,
        BodyPart::Finger => 2.0 * 0.006 * 0.25,
        BodyPart::Thigh => 2.0 * 0.100,
        BodyPart::Shank => 2.0 * 0.0465,
        BodyPart::Foot => 2.0 * 0.0145,
        BodyPart::Link => 0.0,
    }
}

/// Spatial inertia (about the joint frame's origin, in the joint frame) of a
/// uniform-density capsule of the given mass (module docs).
pub fn capsule_inertia(capsule: &Capsule, mass: f64) -> Inertia {
    let axis = capsule.end - capsule.start;
    let l = axis.norm();
    let r = capsule.radius;
    let (v_cyl, v_caps) = (
        std::f64::consts::PI * r * r * l,
        4.0 / 3.0 * std::f64::consts::PI * r * r * r,
    );
    let total = v_cyl + v_caps;
    let (m_c, m_s) = if total > 0.0 {
        (mass * v_cyl / total, mass * v_caps / total)
    } else {
        (0.0, mass) // a point mass
    };
    let i_axis = m_c * r * r / 2.0 + m_s * 0.4 * r * r;
    let i_perp =
        m_c * (l * l / 12.0 + r * r / 4.0) + m_s * (0.4 * r * r + l * l / 4.0 + 0.375 * l * r);
    let i_c = if l > 0.0 {
        let u = axis / l;
        Matrix3::identity() * i_perp + u * u.transpose() * (i_axis - i_perp)
    } else {
        Matrix3::identity() * i_axis
    };
    Inertia::from_com(mass, &capsule.centre(), &i_c)
}

/// The mass of each joint's body under `source` (0 for joints without one).
pub(crate) fn segment_masses(skeleton: &Skeleton, source: MassSource) -> Vec<f64> {
    match source {
        MassSource::Skeleton => skeleton
            .joints()
            .iter()
            .map(|j| j.body.as_ref().map_or(0.0, |b| b.mass))
            .collect(),
        MassSource::Dempster { total_mass } => {
            let mut class_volume = [0.0; BodyPart::ALL.len()];
            for b in skeleton.joints().iter().filter_map(|j| j.body.as_ref()) {
                class_volume[class_index(b.part)] += b.capsule.volume();
            }
            let present: f64 = BodyPart::ALL
                .iter()
                .zip(&class_volume)
                .filter(|(_, v)| **v > 0.0)
                .map(|(p, _)| dempster_fraction(*p))
                .sum();
            skeleton
                .joints()
                .iter()
                .map(|j| match &j.body {
                    Some(b) if present > 0.0 && class_volume[class_index(b.part)] > 0.0 => {
                        total_mass * dempster_fraction(b.part) / present * b.capsule.volume()
                            / class_volume[class_index(b.part)]
                    }
                    _ => 0.0,
                })
                .collect()
        }
    }
}

fn class_index(part: BodyPart) -> usize {
    BodyPart::ALL.iter().position(|&p| p == part).unwrap_or(0)
}

/// Inertia of each joint's body (in its joint frame) under `source`.
pub(crate) fn segment_inertias(skeleton: &Skeleton, source: MassSource) -> Vec<Option<Inertia>> {
    let masses = segment_masses(skeleton, source);
    skeleton
        .joints()
        .iter()
        .zip(masses)
        .map(|(j, m)| j.body.as_ref().map(|b| capsule_inertia(&b.capsule, m)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::Vector3;

    /// Monte-Carlo-free check: integrate the capsule's inertia numerically on
    /// a fine grid (midpoint rule over the bounding box) and compare.
    #[test]
    fn capsule_inertia_matches_numerical_integration() {
        let cap = Capsule::new(
            Vector3::new(0.0, 0.0, 0.0),
            Vector3::new(0.0, 0.3, 0.0),
            0.1,
        );
        let mass = 2.0;
        let inertia = capsule_inertia(&cap, mass);
        let n = 120;
        let (lo, hi) = (Vector3::new(-0.1, -0.1, -0.1), Vector3::new(0.1, 0.4, 0.1));
        let d = (hi - lo) / n as f64;
        let mut vol = 0.0;
        let mut i_o = Matrix3::zeros();
        for a in 0..n {
            for b in 0..n {
                for c in 0..n {
                    let x = lo
                        + Vector3::new(
                            (a as f64 + 0.5) * d.x,
                            (b as f64 + 0.5) * d.y,
                            (c as f64 + 0.5) * d.z,
                        );
                    let t = x.y.clamp(0.0, 0.3);
                    let dist = (x - Vector3::new(0.0, t, 0.0)).norm();
                    if dist <= 0.1 {
                        vol += 1.0;
                        i_o += Matrix3::identity() * x.norm_squared() - x * x.transpose();
                    }
                }
            }
        }
        i_o *= mass / vol;
        let rel = (i_o - inertia.i_o).norm() / inertia.i_o.norm();
        assert!(rel < 5e-3, "grid {i_o:?} vs closed form {:?}", inertia.i_o);
        assert!((inertia.com() - Vector3::new(0.0, 0.15, 0.0)).norm() < 1e-15);
    }

    #[test]
    fn dempster_masses_sum_to_the_total_on_the_human() {
        let human = skeleton::presets::human();
        let m = segment_masses(&human, MassSource::Dempster { total_mass: 70.0 });
        let total: f64 = m.iter().sum();
        assert!((total - 70.0).abs() < 1e-9, "{total}");
        let thigh = m[human.find("l_hip").unwrap()];
        assert!((thigh - 7.0).abs() < 1e-9, "thigh {thigh}");
    }
}

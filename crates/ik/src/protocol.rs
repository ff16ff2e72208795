//! The two benchmark protocols of the IK experiments, fixed so that anyone
//! can rerun them on another solver.
//!
//! Chains have `n` segments of length `3/n` along +x at rest, the end
//! effector is the fixed `tip` joint, and every trial starts from rest.
//!
//! - **Reach** (SMC-IK §6.2): `n` 3-DOF ball joints without limits; target =
//!   rest tip + 2·u for a uniformly random unit vector u, kept only if
//!   within 0.95·3 of the root (redrawn otherwise).
//! - **Reachable with limits** (TRAC-IK style): each ball joint built as three
//!   hinges about x, y, z with zero length between them, each limited to
//!   ±`limit`; target = tip position of a configuration drawn uniformly
//!   within the limits, so a solution always exists.
//!
//! Success: tip within [`SUCCESS_DISTANCE`] of the target within
//! [`MAX_ITERATIONS`] iterations.

use nalgebra::{Point3, Vector3};
use rand::{Rng, RngExt};
use rand_distr::StandardNormal;
use skeleton::{Skeleton, presets};

/// Chain length of both protocols.
pub const CHAIN_LENGTH: f64 = 3.0;
/// Success threshold on the tip–target distance.
pub const SUCCESS_DISTANCE: f64 = 1e-3;
/// Iteration budget of a trial.
pub const MAX_ITERATIONS: usize = 200;

/// One of the two protocols.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Protocol {
    /// SMC-IK §6.2: unlimited ball joints, target 2 away from the rest tip.
    Reach,
    /// Hinge triplets limited to ±`limit` rad, target reachable by construction.
    Limits(f64),
}

impl Protocol {
    /// Parses `reach`, `limits45` or `limits90`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "reach" => Some(Self::Reach),
            "limits45" => Some(Self::Limits(45f64.to_radians())),
            "limits90" => Some(Self::Limits(90f64.to_radians())),
            _ => None,
        }
    }

    pub fn name(&self) -> String {
        match self {
            Self::Reach => "reach".into(),
            Self::Limits(l) => format!("limits{:.0}", l.to_degrees()),
        }
    }

    /// The chain for `dof` degrees of freedom (a multiple of 3).
    pub fn skeleton(&self, dof: usize) -> Skeleton {
        let n = (dof / 3).max(1);
        match self {
            Self::Reach => presets::chain(n, CHAIN_LENGTH),
            Self::Limits(l) => presets::hinge_chain(n, CHAIN_LENGTH, *l),
        }
    }

    /// A target for `skeleton` (built by [`Self::skeleton`]).
    pub fn target<R: Rng + ?Sized>(&self, skeleton: &Skeleton, rng: &mut R) -> Point3<f64> {
        match self {
            Self::Reach => loop {
                let u = Vector3::new(
                    rng.sample::<f64, _>(StandardNormal),
                    rng.sample::<f64, _>(StandardNormal),
                    rng.sample::<f64, _>(StandardNormal),
                );
                if u.norm() < 1e-9 {
                    continue;
                }
                let t = Point3::new(CHAIN_LENGTH, 0.0, 0.0) + 2.0 * u.normalize();
                if t.coords.norm() <= 0.95 * CHAIN_LENGTH {
                    return t;
                }
            },
            Self::Limits(l) => {
                let pose: Vec<f64> = (0..skeleton.dof())
                    .map(|_| rng.random_range(-*l..=*l))
                    .collect();
                let world = skeleton
                    .forward_kinematics(&pose)
                    .expect("pose has the skeleton's size");
                let tip = skeleton.find("tip").expect("protocol chains have a tip");
                Point3::from(world[tip].translation.vector)
            }
        }
    }
}

//! Problems shared by the app, the examples and the tests, written once.
//!
//! [`HumanProblem`] is the SMC-IK §6.3 setup on the `human` preset: the
//! heels and toe tips stand on the floor `y = 0` and stay where they stand
//! (no sliding), the finger tips are the end effectors.

use nalgebra::{Point3, Unit, Vector3};
use skeleton::Skeleton;

use crate::constraint::{Constraint, ConstraintKind, ConstraintSet, FloorMode, Noise};
use crate::error::{IkError, Result};

/// The foot points of the human preset that touch the floor at rest.
pub const HUMAN_FEET: [&str; 4] = ["l_heel", "l_toe_tip", "r_heel", "r_toe_tip"];
/// The human preset's end effectors.
pub const HUMAN_HANDS: [&str; 2] = ["l_finger_tip", "r_finger_tip"];

/// The SMC-IK §6.3 human problem on a skeleton with the human preset's
/// joint names (the preset itself, or a copy with other limits).
#[derive(Clone, Debug, PartialEq)]
pub struct HumanProblem {
    /// Joint indices of [`HUMAN_HANDS`].
    pub hands: [usize; 2],
    /// Joint indices of [`HUMAN_FEET`].
    pub feet: [usize; 4],
    /// Where the feet stand at rest (on the floor).
    pub feet_rest: [Point3<f64>; 4],
}

impl HumanProblem {
    /// Finds the hands and feet of `skeleton` and checks that the feet
    /// stand on the floor at rest.
    ///
    /// # Errors
    /// A missing joint ([`IkError::Skeleton`]), or a foot point that is not
    /// on the floor at the rest pose ([`IkError::InvalidConstraint`]).
    pub fn new(skeleton: &Skeleton) -> Result<Self> {
        let rest = skeleton.forward_kinematics(&skeleton.rest_pose())?;
        let mut feet = [0; 4];
        for (f, name) in feet.iter_mut().zip(HUMAN_FEET) {
            *f = skeleton.find(name)?;
        }
        let feet_rest = feet.map(|j| Point3::from(rest[j].translation.vector));
        for (k, (p, name)) in feet_rest.iter().zip(HUMAN_FEET).enumerate() {
            if p.y.abs() > 1e-9 {
                return Err(IkError::InvalidConstraint {
                    index: k,
                    kind: "floor",
                    message: format!("{name} is not on the floor at rest (y = {})", p.y),
                });
            }
        }
        Ok(Self {
            hands: [
                skeleton.find(HUMAN_HANDS[0])?,
                skeleton.find(HUMAN_HANDS[1])?,
            ],
            feet,
            feet_rest,
        })
    }

    /// "On the floor" for foot point `k`: `y ≥ 0` with contact (SMC-IK §6.3).
    pub fn floor(&self, k: usize) -> ConstraintKind {
        ConstraintKind::Floor {
            joint: self.feet[k],
            point: Vector3::zeros(),
            up: Unit::new_normalize(Vector3::y()),
            height: 0.0,
            mode: FloorMode::On,
        }
    }

    /// "Stays where it stands" for foot point `k` (no sliding).
    pub fn stay(&self, k: usize) -> ConstraintKind {
        ConstraintKind::Position {
            joint: self.feet[k],
            point: Vector3::zeros(),
            target: self.feet_rest[k],
        }
    }

    /// The whole problem: one position constraint per hand target (σ
    /// `hand_sigma`), then floor and stay constraints per foot point (σ
    /// `foot_sigma`).
    ///
    /// # Errors
    /// Those of [`ConstraintSet::add`] (non-finite targets, bad σ).
    pub fn constraints(
        &self,
        skeleton: &Skeleton,
        hand_targets: &[Point3<f64>; 2],
        hand_sigma: f64,
        foot_sigma: f64,
    ) -> Result<ConstraintSet> {
        let mut set = ConstraintSet::new();
        for (j, t) in self.hands.iter().zip(hand_targets) {
            set.add(skeleton, Constraint::position(*j, *t, hand_sigma))?;
        }
        for k in 0..4 {
            set.add(
                skeleton,
                Constraint::new(self.floor(k), Noise::Isotropic(foot_sigma)),
            )?;
            set.add(
                skeleton,
                Constraint::new(self.stay(k), Noise::Isotropic(foot_sigma)),
            )?;
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_human_preset_stands_on_the_floor_and_satisfies_its_problem() {
        let s = skeleton::presets::human();
        let p = HumanProblem::new(&s).unwrap();
        let rest = s.forward_kinematics(&s.rest_pose()).unwrap();
        let hands = p.hands.map(|j| Point3::from(rest[j].translation.vector));
        let set = p.constraints(&s, &hands, 0.01, 0.01).unwrap();
        assert_eq!(set.len(), 2 + 8);
        let cost = set.cost(&s, &rest, &s.rest_pose());
        assert!(cost.abs() < 1e-12, "rest pose costs {cost}");
        // Moving a hand target costs: the constraints are live.
        let far = [hands[0] + Vector3::new(0.1, 0.0, 0.0), hands[1]];
        let set = p.constraints(&s, &far, 0.01, 0.01).unwrap();
        assert!(set.cost(&s, &rest, &s.rest_pose()) > 1.0);
        // An arm has no feet.
        let arm = skeleton::presets::by_name("arm4").unwrap();
        assert!(HumanProblem::new(&arm).is_err());
    }
}

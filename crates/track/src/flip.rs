//! Kinematic flipping (RTPF §IV-C2, after Sminchisescu & Triggs'
//! kinematic jumps): poses with the same image projection of the joint
//! centres, computed analytically.
//!
//! For an arm with shoulder `S`, elbow `E` and wrist `W` seen by a camera
//! with centre `C`:
//!
//! 1. The sphere of centre `S` and radius `|E − S|` (the upper arm's
//!    length) meets the ray of sight `C + t d_E` through `E` at `E` and at
//!    one other point: with `b = d_E · (S − C)` the roots of
//!    `t² − 2 b t + |S − C|² − |E − S|² = 0` sum to `2b`, so
//!    `E' = C + (2b − t_E) d_E` (kept when in front of the camera).
//! 2. For each elbow `E* ∈ {E, E'}` the sphere of centre `E*` and radius
//!    `|W − E|` (the forearm) meets the ray through `W` in up to two
//!    points `W*` (for `E* = E` these are `W` and its flip).
//! 3. Each `(E*, W*)` is an arm configuration with the same projected
//!    joint centres; both arms together give up to 4 × 4 − 1 = 15 new
//!    poses (RTPF: "15 new hypotheses").
//! 4. Joint angles: the elbow flexion is set to the angle between
//!    `E* − S` and `W* − E*` (a one-dimensional search on the elbow's
//!    flexion parameter within its limits), then the shoulder is rotated by
//!    the rotation `R` taking the frame (upper arm, forearm) of the
//!    current pose to that of the target — an exact solution, since both
//!    pairs now enclose the same angle. The shoulder's local rotation is
//!    `M' = (Q_p)⁻¹ R Q_p M` with `Q_p` the world rotation of its parent
//!    frame (RTPF converts via a rotation matrix to Euler angles \[18\]; the
//!    joint's own `set_rotation` does that, nearest to the current angles).
//! 5. A hypothesis is kept only if it lies within the joint limits (RTPF:
//!    "only some particles can be permissible due to the biomechanical
//!    constraints") and reproduces `E*`, `W*` (1 mm, 1 cm).

use arrayvec::ArrayVec;
use nalgebra::{Isometry3, Matrix3, Point3, Rotation3, UnitQuaternion, Vector3};
use skeleton::Skeleton;

use crate::body::{Arm, TrackedBody, angle_between};

/// An arm the flips can move: its joints, the state positions of the
/// shoulder's rotation and of the elbow's flexion parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct FlipArm {
    pub arm: Arm,
    /// Pose index of the elbow parameter that flexes the arm.
    pub flex: usize,
    /// State index of the flexion parameter (its box is the search range).
    pub flex_state: usize,
}

impl FlipArm {
    /// The flippable arm of `arm` on `body`, or `None` when the shoulder's
    /// rotation or an elbow parameter is not tracked or the shoulder is not
    /// a rotating joint. The flexion parameter is the tracked elbow
    /// parameter that changes the elbow angle most at `pose`.
    pub fn new(body: &TrackedBody, arm: Arm, pose: &[f64]) -> Option<Self> {
        let skel = body.skeleton();
        let tracked = |i: usize| body.params().iter().position(|p| p.index == i);
        let shoulder = skel.param_range(arm.shoulder);
        let rot = match skel.joint(arm.shoulder).kind {
            skeleton::JointKind::Ball(_) => shoulder.clone(),
            _ => return None,
        };
        if rot.clone().any(|i| tracked(i).is_none()) {
            return None;
        }
        let mut best: Option<(usize, f64)> = None;
        for i in skel.param_range(arm.elbow) {
            if tracked(i).is_none() {
                continue;
            }
            let mut p = pose.to_vec();
            let mut flex = |x: f64| -> Option<f64> {
                p[i] = x;
                Some(arm.flexion(&skel.forward_kinematics(&p).ok()?))
            };
            let x = pose[i];
            let f0 = flex(x)?;
            // One-sided changes: at a straight arm the angle is symmetric.
            let change = (flex(x + 0.3)? - f0).abs().max((flex(x - 0.3)? - f0).abs());
            if best.is_none_or(|(_, c)| change > c) {
                best = Some((i, change));
            }
        }
        let (flex, change) = best?;
        (change > 1e-3).then(|| Self {
            arm,
            flex,
            flex_state: tracked(flex).expect("checked"),
        })
    }
}

/// The second intersection of the ray `C + t d` (`|d| = 1`) with the
/// sphere of centre `centre` and radius `r`, given one root `t0`; `None`
/// when it is behind the camera or coincides with `t0`.
fn other_root(
    c: &Point3<f64>,
    d: &Vector3<f64>,
    centre: &Point3<f64>,
    t0: f64,
) -> Option<Point3<f64>> {
    let b = d.dot(&(centre - c));
    let t = 2.0 * b - t0;
    (t > 1e-6 && (t - t0).abs() > 1e-6).then(|| c + d * t)
}

/// `(b, h)`: the ray `C + t d` (`|d| = 1`) meets the sphere of centre
/// `centre` and radius `r` at `t = b ∓ h`; `None` when it misses it.
pub(crate) fn ray_sphere(
    c: &Point3<f64>,
    d: &Vector3<f64>,
    centre: &Point3<f64>,
    r: f64,
) -> Option<(f64, f64)> {
    let oc = centre - c;
    let b = d.dot(&oc);
    let disc = b * b - (oc.norm_squared() - r * r);
    (disc >= 0.0).then(|| (b, disc.sqrt()))
}

/// Both intersections of the ray `C + t d` with the sphere, in front of
/// the camera.
fn roots(
    c: &Point3<f64>,
    d: &Vector3<f64>,
    centre: &Point3<f64>,
    r: f64,
) -> ArrayVec<Point3<f64>, 2> {
    let Some((b, h)) = ray_sphere(c, d, centre, r) else {
        return ArrayVec::new();
    };
    [b - h, b + h]
        .into_iter()
        .filter(|&t| t > 1e-6)
        .map(|t| c + d * t)
        .collect()
}

/// Where an arm's elbow and wrist are to go: `(E*, W*)`, world frame.
pub type ArmTarget = (Point3<f64>, Point3<f64>);

/// An arm's target configurations: at most four (two elbows, two wrists
/// each).
pub type ArmTargets = ArrayVec<ArmTarget, 4>;

/// The arm configurations `(E*, W*)` with the projections of `E`, `W`
/// (step 1–3 of the module docs); the first is the current one.
pub fn arm_configurations(
    camera_centre: &Point3<f64>,
    world: &[Isometry3<f64>],
    arm: &Arm,
) -> ArmTargets {
    let p = |j: usize| Point3::from(world[j].translation.vector);
    let (s, e, w) = (p(arm.shoulder), p(arm.elbow), p(arm.wrist));
    let c = camera_centre;
    let forearm = (w - e).norm();
    let mut out = ArmTargets::new();
    out.push((e, w));
    let (de, te) = ((e - c).normalize(), (e - c).norm());
    let (dw, tw) = ((w - c).normalize(), (w - c).norm());
    if let Some(wf) = other_root(c, &dw, &e, tw) {
        out.push((e, wf));
    }
    if let Some(ef) = other_root(c, &de, &s, te) {
        for wf in roots(c, &dw, &ef, forearm) {
            out.push((ef, wf));
        }
    }
    out
}

/// The frame `[û, n̂, û × n̂]` of an (upper arm, forearm) pair; `None` for
/// a straight arm (the forearm direction does not fix the roll).
fn arm_frame(u: &Vector3<f64>, f: &Vector3<f64>) -> Option<Matrix3<f64>> {
    let u = u.try_normalize(1e-9)?;
    let n = (f - u * u.dot(f)).try_normalize(1e-6)?;
    Some(Matrix3::from_columns(&[u, n, u.cross(&n)]))
}

/// The joint transforms of `pose` into `world`, checked as
/// [`skeleton::Skeleton::forward_kinematics`] checks them; `false` where
/// it would fail.
fn checked_fk(skel: &Skeleton, pose: &[f64], world: &mut Vec<Isometry3<f64>>) -> bool {
    if skel.check_pose(pose).is_err() {
        return false;
    }
    world.resize(skel.len(), Isometry3::identity());
    skel.forward_kinematics_into(pose, world);
    skel.check_world(world).is_ok()
}

/// The buffers of [`solve_arm`] (joint transforms, a trial pose), kept by
/// a caller that solves many arms.
#[derive(Debug, Default)]
pub struct SolveBuffers {
    world: Vec<Isometry3<f64>>,
    trial: Vec<f64>,
    trial_world: Vec<Isometry3<f64>>,
}

/// Moves `pose`'s arm so that its elbow and wrist reach `elbow`, `wrist`
/// (step 4); `false` when it cannot within `flex_range` and tolerances.
pub fn solve_arm(
    body: &TrackedBody,
    flip: &FlipArm,
    pose: &mut [f64],
    elbow: &Point3<f64>,
    wrist: &Point3<f64>,
    buffers: &mut SolveBuffers,
) -> bool {
    let skel = body.skeleton();
    let arm = &flip.arm;
    let SolveBuffers {
        world,
        trial,
        trial_world,
    } = buffers;
    if !checked_fk(skel, pose, world) {
        return false;
    }
    let s = Point3::from(world[arm.shoulder].translation.vector);
    let target = angle_between(&(elbow - s), &(wrist - elbow));
    // Elbow flexion by a grid scan and bisection-like refinement.
    let box_ = &body.params()[flip.flex_state];
    let (lo, hi) = (box_.lower, box_.upper);
    trial.clear();
    trial.extend_from_slice(pose);
    trial_world.clone_from(world);
    // About 130 trials: forward kinematics into one buffer, checked as
    // `Skeleton::forward_kinematics` checks.
    let mut err = |x: f64| -> f64 {
        trial[flip.flex] = x;
        if skel.check_pose(trial).is_err() {
            return f64::INFINITY;
        }
        skel.forward_kinematics_into(trial, trial_world);
        if skel.check_world(trial_world).is_err() {
            return f64::INFINITY;
        }
        (arm.flexion(trial_world) - target).abs()
    };
    let steps = 48;
    let h = (hi - lo) / steps as f64;
    let (mut best_x, mut best_e) = (pose[flip.flex], err(pose[flip.flex]));
    for k in 0..=steps {
        let x = lo + h * k as f64;
        let e = err(x);
        if e < best_e {
            (best_x, best_e) = (x, e);
        }
    }
    let mut step = h;
    for _ in 0..40 {
        step *= 0.5;
        for x in [best_x - step, best_x + step] {
            if (lo..=hi).contains(&x) {
                let e = err(x);
                if e < best_e {
                    (best_x, best_e) = (x, e);
                }
            }
        }
    }
    if best_e > 1f64.to_radians() {
        return false;
    }
    pose[flip.flex] = best_x;
    // Shoulder: rotate the (upper arm, forearm) frame onto the target's.
    if !checked_fk(skel, pose, world) {
        return false;
    }
    let p = |j: usize| Point3::from(world[j].translation.vector);
    let (e0, w0) = (p(arm.elbow), p(arm.wrist));
    let r = match (
        arm_frame(&(e0 - s), &(w0 - e0)),
        arm_frame(&(elbow - s), &(wrist - elbow)),
    ) {
        (Some(from), Some(to)) => UnitQuaternion::from_rotation_matrix(
            &Rotation3::from_matrix_unchecked(to * from.transpose()),
        ),
        _ => match UnitQuaternion::rotation_between(&(e0 - s), &(elbow - s)) {
            Some(q) => q,
            None => return false,
        },
    };
    let joint = skel.joint(arm.shoulder);
    let parent = joint
        .parent
        .map_or(UnitQuaternion::identity(), |q| world[q].rotation);
    let qp = parent * joint.rest;
    let range = skel.param_range(arm.shoulder);
    let Some(m) = joint.kind.rotation(&pose[range.clone()]) else {
        return false;
    };
    let m_new = qp.inverse() * r * qp * m;
    if !joint.kind.set_rotation(&m_new, &mut pose[range]) {
        return false;
    }
    if !checked_fk(skel, pose, world) {
        return false;
    }
    let p = |j: usize| Point3::from(world[j].translation.vector);
    (p(arm.elbow) - elbow).norm() < 1e-3 && (p(arm.wrist) - wrist).norm() < 1e-2
}

/// The buffers of the flips and the lifts ([`flip_hypotheses`],
/// [`crate::lift_hypotheses`]): the source's pose and joint transforms,
/// each arm's targets, the arms being solved, kept by a caller (the
/// tracker) from step to step so that proposing allocates nothing.
#[derive(Debug, Default)]
pub struct ArmBuffers {
    /// The source's full pose and its joint transforms.
    pose: Vec<f64>,
    world: Vec<Isometry3<f64>>,
    /// Each arm's targets.
    pub(crate) targets: Vec<ArmTargets>,
    /// One hypothesis's target per arm (`None`: the arm stays).
    pub(crate) plan: Vec<Option<ArmTarget>>,
    /// The pose being solved, its state and that state's full pose.
    posed: Vec<f64>,
    state: Vec<f64>,
    full: Vec<f64>,
    solve: SolveBuffers,
    /// The hypotheses proposed since [`Self::clear`], row-major.
    proposals: Vec<f64>,
}

impl ArmBuffers {
    /// Forgets the proposals (a new step).
    pub fn clear(&mut self) {
        self.proposals.clear();
    }

    /// The states proposed since [`Self::clear`], row-major (D per state).
    pub fn proposals(&self) -> &[f64] {
        &self.proposals
    }
}

/// Up to 15 flipped states of `state` (module docs), each within the
/// limits, appended to the proposals of `buffers`
/// ([`ArmBuffers::proposals`]); returns how many.
pub fn flip_hypotheses(
    body: &TrackedBody,
    arms: &[FlipArm],
    camera_centre: &Point3<f64>,
    state: &[f64],
    buffers: &mut ArmBuffers,
) -> usize {
    if !arm_targets(body, arms, state, buffers, |world, a| {
        arm_configurations(camera_centre, world, &a.arm)
    }) {
        return 0;
    }
    let total: usize = buffers.targets.iter().map(|t| t.len()).product();
    let mut made = 0;
    for combo in 1..total {
        // Mixed-radix digits: configuration of each arm (0 = current).
        let mut rest = combo;
        buffers.plan.clear();
        for cfg in &buffers.targets {
            let k = rest % cfg.len();
            rest /= cfg.len();
            buffers.plan.push((k != 0).then(|| cfg[k]));
        }
        if posed_arms(body, arms, buffers) {
            made += 1;
        }
    }
    made
}

/// The full pose of `state` and its joint transforms into `buffers`, and
/// for each arm the `(elbow, wrist)` targets that `candidates` finds from
/// them (the flips' and the keypoint lifts' common start); `false` when
/// forward kinematics fails.
pub(crate) fn arm_targets(
    body: &TrackedBody,
    arms: &[FlipArm],
    state: &[f64],
    buffers: &mut ArmBuffers,
    candidates: impl Fn(&[Isometry3<f64>], &FlipArm) -> ArmTargets,
) -> bool {
    let ArmBuffers {
        pose,
        world,
        targets,
        ..
    } = buffers;
    pose.resize(body.skeleton().dof(), 0.0);
    body.to_full(state, pose);
    if !checked_fk(body.skeleton(), pose, world) {
        return false;
    }
    targets.clear();
    targets.extend(arms.iter().map(|a| candidates(world, a)));
    true
}

/// Appends to the proposals the state of the source pose with each arm
/// `a` moved so that its elbow and wrist reach `buffers.plan[a]`
/// ([`solve_arm`]; `None`: the arm stays); `false` (nothing appended) when
/// an arm cannot reach its target or the result leaves the joint limits.
/// Only tracked parameters may change: the solve touches the shoulder and
/// the elbow, which [`FlipArm`] requires to be tracked.
pub(crate) fn posed_arms(body: &TrackedBody, arms: &[FlipArm], buffers: &mut ArmBuffers) -> bool {
    let ArmBuffers {
        pose,
        plan,
        posed,
        state,
        full,
        solve,
        proposals,
        ..
    } = buffers;
    posed.clone_from(pose);
    for (flip, target) in arms.iter().zip(plan.iter()) {
        if let Some((e, w)) = target
            && !solve_arm(body, flip, posed, e, w, solve)
        {
            return false;
        }
    }
    state.clear();
    state.extend(body.params().iter().map(|p| posed[p.index]));
    full.resize(posed.len(), 0.0);
    body.to_full(state, full);
    if !(body.within_limits(state) && full == posed) {
        return false;
    }
    proposals.extend_from_slice(state);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::Side;

    #[test]
    fn the_flipped_elbow_lies_on_the_ray_at_upper_arm_length() {
        let body = TrackedBody::rtpf_upper_body();
        let skel = body.skeleton();
        let mut pose = skel.rest_pose();
        let sh = skel.param_range(skel.find("r_shoulder").unwrap()).start;
        pose[sh + 1] = 0.6; // raise the arm forward/sideways
        let world = skel.forward_kinematics(&pose).unwrap();
        let arm = Arm::find(skel, Side::Right).unwrap();
        let c = Point3::new(0.3, 1.4, 3.0);
        let cfg = arm_configurations(&c, &world, &arm);
        let s = Point3::from(world[arm.shoulder].translation.vector);
        let e = Point3::from(world[arm.elbow].translation.vector);
        assert!(cfg.len() >= 2);
        for (ef, wf) in &cfg {
            assert!(((ef - s).norm() - (e - s).norm()).abs() < 1e-9);
            // Same ray of sight.
            assert!((ef - c).normalize().cross(&(e - c).normalize()).norm() < 1e-9);
            let w = Point3::from(world[arm.wrist].translation.vector);
            assert!((wf - c).normalize().cross(&(w - c).normalize()).norm() < 1e-9);
        }
    }
}

//! Keypoint lifting: arm poses that project exactly onto the detected 2D
//! elbow and wrist, proposed to the filter beside RTPF's kinematic flips
//! (an addition to RTPF, active only when the keypoint term is).
//!
//! The flips ([`crate::flip`]) keep the projection of a particle's own
//! joints and change their depth; when the particle's arm is off the
//! detected one in the image, so are all of its flips, and the diffusion
//! (σ ≈ 0.08 rad a frame on each angle) takes many frames to walk a
//! forearm onto a detection some 30° away. Lifting instead solves each arm
//! for the detection, the way a 2D-to-3D lifting does it for one frame,
//! keeping the particle's shoulder and bone lengths:
//!
//! 1. the elbow lies on the ray of sight through the detected elbow `e`, at
//!    the upper arm's length `L₁` from the shoulder `S`: the ray meets the
//!    sphere `|E − S| = L₁` in up to two points (the arm towards and away
//!    from the camera). When it misses the sphere (the detection is farther
//!    from the shoulder in the image than `L₁` can reach, a detector error
//!    or a longer arm than the body file's), the elbow goes to the point at
//!    `L₁` from `S` towards the ray's closest approach — the straightest
//!    arm that points at the detection;
//! 2. the wrist likewise on the ray through the detected wrist, at the
//!    forearm's length `L₂` from each elbow candidate;
//! 3. each `(E, W)` is solved for the shoulder's rotation and the elbow's
//!    flexion by [`crate::flip::solve_arm`], and kept only within the joint
//!    limits.
//!
//! With both arms detected this gives up to 4 configurations an arm; the
//! hypotheses are each arm's configurations with the other arm as it was,
//! then both arms lifted together (the first configuration of each, the
//! arm nearest the source's own depth, first). The filter weighs them like
//! every other particle: the lifted arm that the regions, the keypoints and
//! the pose prior agree with gains the weight, the others die out at the
//! next selection. Like the flips, the proposal is not importance-corrected:
//! it moves a handful of particles to where the likelihood is high.

use arrayvec::ArrayVec;
use labels::Camera;
use nalgebra::{Point3, Unit, Vector3};

use crate::body::TrackedBody;
use crate::flip::{
    ArmBuffers, ArmTarget, ArmTargets, FlipArm, arm_targets, posed_arms, ray_sphere,
};
use crate::keypoint_term::KeypointObservation;

/// The points of the ray `c + t d` (`t > 0`) at distance `r` from
/// `centre`, nearest to `prefer` first; when the ray passes farther than `r`
/// from `centre`, the one point at `r` from `centre` towards the ray's
/// closest approach.
pub fn points_at_distance(
    c: &Point3<f64>,
    d: &Unit<Vector3<f64>>,
    centre: &Point3<f64>,
    r: f64,
    prefer: &Point3<f64>,
) -> ArrayVec<Point3<f64>, 2> {
    let mut out: ArrayVec<Point3<f64>, 2> = match ray_sphere(c, d, centre, r) {
        Some((b, h)) => {
            // A ray tangent to the sphere gives one point.
            let ts: &[f64] = if h > 1e-4 { &[b - h, b + h] } else { &[b - h] };
            ts.iter()
                .filter(|&&t| t > 1e-6)
                .map(|&t| c + d.as_ref() * t)
                .collect()
        }
        None => {
            let closest = c + d.as_ref() * d.dot(&(centre - c)).max(1e-6);
            (closest - centre)
                .try_normalize(1e-12)
                .map(|dir| centre + dir * r)
                .into_iter()
                .collect()
        }
    };
    out.sort_by(|a, b| {
        (a - prefer)
            .norm_squared()
            .total_cmp(&(b - prefer).norm_squared())
    });
    out
}

/// The detected elbow or wrist of an arm: the observed pixel and the
/// skeleton point it is bound to. A keypoint binds to the joint itself or
/// to a point of the bone above it ([`crate::keypoint_term::LANDMARK_SHIFT`]),
/// so the joint it belongs to is either `joint` or its parent `parent`.
fn observed(
    kp: &KeypointObservation,
    suffix: &str,
    joint: usize,
    parent: usize,
) -> Option<(f64, f64, crate::keypoint_term::SkeletonPoint)> {
    kp.points()
        .iter()
        .find(|p| p.name.ends_with(suffix) && (p.point.joint == joint || p.point.joint == parent))
        .map(|p| (p.u, p.v, p.point))
}

/// The lifted `(elbow, wrist)` configurations of one arm of the pose whose
/// joint transforms are `world` (module docs, steps 1–2), nearest to the
/// current elbow first; empty when the elbow or the wrist is not detected.
///
/// A keypoint bound to a point `P` of the bone (at a fraction of the
/// bone's length from the joint above) is lifted as that point: `P` on the
/// ray at its own distance `|P − S|` from the shoulder, then the elbow
/// beyond it along `S → P` at the upper arm's length (the wrist alike from
/// the elbow).
pub(crate) fn arm_lifts(
    camera: &Camera,
    world: &[nalgebra::Isometry3<f64>],
    flip: &FlipArm,
    kp: &KeypointObservation,
) -> ArmTargets {
    let arm = &flip.arm;
    let (Some(e_obs), Some(w_obs)) = (
        observed(kp, "elbow", arm.elbow, arm.shoulder),
        observed(kp, "wrist", arm.wrist, arm.elbow),
    ) else {
        return ArmTargets::new();
    };
    let p = |j: usize| Point3::from(world[j].translation.vector);
    let (s, e, w) = (p(arm.shoulder), p(arm.elbow), p(arm.wrist));
    let (upper, fore) = ((e - s).norm(), (w - e).norm());
    let (pe, pw) = (e_obs.2.world(world), w_obs.2.world(world));
    let (re, rw) = ((pe - s).norm(), (pw - e).norm());
    if re < 1e-9 || rw < 1e-9 {
        return ArmTargets::new();
    }
    let (ce, de) = camera.ray_through(e_obs.0, e_obs.1);
    let (cw, dw) = camera.ray_through(w_obs.0, w_obs.1);
    let mut out = ArmTargets::new();
    for point_e in points_at_distance(&ce, &de, &s, re, &pe) {
        let elbow = s + (point_e - s) * (upper / re);
        // Keep the wrist's side of the elbow as the source has it first.
        let prefer = elbow + (pw - e);
        for point_w in points_at_distance(&cw, &dw, &elbow, rw, &prefer) {
            out.push((elbow, elbow + (point_w - elbow) * (fore / rw)));
        }
    }
    out
}

/// Lifted states of `state` (module docs), each within the limits,
/// appended to the proposals of `buffers` ([`ArmBuffers::proposals`]);
/// returns how many. At most `max` are made.
pub fn lift_hypotheses(
    body: &TrackedBody,
    arms: &[FlipArm],
    camera: &Camera,
    kp: &KeypointObservation,
    state: &[f64],
    max: usize,
    buffers: &mut ArmBuffers,
) -> usize {
    if !arm_targets(body, arms, state, buffers, |world, a| {
        arm_lifts(camera, world, a, kp)
    }) {
        return 0;
    }
    let mut made = 0;
    let mut offer = |buffers: &mut ArmBuffers,
                     plan: &dyn Fn(usize, &ArmTargets) -> Option<ArmTarget>| {
        if made >= max {
            return;
        }
        buffers.plan.clear();
        for a in 0..buffers.targets.len() {
            let target = plan(a, &buffers.targets[a]);
            buffers.plan.push(target);
        }
        if posed_arms(body, arms, buffers) {
            made += 1;
        }
    };
    // Per arm alone, then all arms together on their k-th configuration.
    for a in 0..buffers.targets.len() {
        for k in 0..buffers.targets[a].len() {
            offer(buffers, &|b, t| (b == a).then(|| t[k]));
        }
    }
    let lifted = buffers.targets.iter().filter(|t| !t.is_empty()).count();
    if lifted > 1 {
        let most = buffers.targets.iter().map(|t| t.len()).max().unwrap_or(0);
        for k in 0..most {
            offer(buffers, &|_, t| {
                (!t.is_empty()).then(|| t[k.min(t.len() - 1)])
            });
        }
    }
    made
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_on_a_ray_lie_at_the_distance_or_at_the_closest_reach() {
        let c = Point3::origin();
        let d = Unit::new_normalize(Vector3::new(0.0, 0.0, -1.0));
        let centre = Point3::new(0.3, 0.0, -3.0);
        // Two points at 0.5: z = −3 ± 0.4.
        let two = points_at_distance(&c, &d, &centre, 0.5, &Point3::new(0.0, 0.0, -2.0));
        assert_eq!(two.len(), 2);
        assert!((two[0].z + 2.6).abs() < 1e-9 && (two[1].z + 3.4).abs() < 1e-9);
        for p in &two {
            assert!(((p - centre).norm() - 0.5).abs() < 1e-9);
        }
        // Out of reach: the point at 0.2 towards the ray.
        let one = points_at_distance(&c, &d, &centre, 0.2, &Point3::origin());
        assert_eq!(one.len(), 1);
        assert!((one[0] - Point3::new(0.1, 0.0, -3.0)).norm() < 1e-9);
        // Nearly tangent (half-chord 7e-5 ≤ 1e-4): one point.
        let r = (0.3f64.powi(2) + 7e-5f64.powi(2)).sqrt();
        assert_eq!(points_at_distance(&c, &d, &centre, r, &centre).len(), 1);
        // A sphere met only behind the camera: none.
        let behind = Point3::new(0.3, 0.0, 3.0);
        assert!(points_at_distance(&c, &d, &behind, 0.5, &behind).is_empty());
    }

    #[test]
    fn the_cameras_ray_through_a_projected_point_passes_through_it() {
        let camera = crate::defaults::default_camera(160, 120, 60.0).unwrap();
        let p = Point3::new(0.4, 0.3, -2.5);
        let (u, v, depth) = camera.project(&p).unwrap();
        let (c, d) = camera.ray_through(u, v);
        let q = c + d.as_ref() * (p - c).norm();
        assert!((q - p).norm() < 1e-9, "{q} vs {p} (depth {depth})");
    }
}

//! The keyframed `move` phase: arm, trunk and head keys (sideways and
//! overhead raises, forward raise, elbows at 90°, a wave, hands on the
//! hips, a reach across the body, a weight shift), jittered per seed and
//! Hermite-interpolated into a [`PoseSpec`].

use nalgebra::Vector3;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::subject::{PoseSpec, Subject, axis_rot, outward, yaw_rot};

/// An arm pose: upper-arm and forearm directions as (outward, up, forward).
type ArmKey = ([f64; 3], [f64; 3]);

pub(crate) const ARMS_DOWN: ArmKey = ([0.1736, -0.9848, 0.0], [0.1736, -0.9848, 0.04]);
const ARMS_SIDE: ArmKey = ([1.0, 0.02, 0.0], [1.0, 0.04, 0.02]);
const ARMS_UP: ArmKey = ([0.42, 0.9, 0.05], [0.25, 0.97, 0.05]);
const ARMS_FORWARD: ArmKey = ([0.12, 0.02, 1.0], [0.1, 0.04, 1.0]);
const GOAL_POST: ArmKey = ([1.0, 0.05, 0.05], [0.08, 1.0, 0.15]);
const ELBOWS_90: ArmKey = ([0.18, -0.98, 0.08], [0.12, 0.0, 1.0]);
const WAVE: ArmKey = ([0.8, 0.35, 0.3], [0.3, 0.95, 0.12]);
const HAND_ON_HIP: ArmKey = ([0.55, -0.78, -0.3], [-0.55, -0.72, 0.42]);
const ACROSS: ArmKey = ([-0.55, -0.05, 0.85], [-0.85, 0.1, 0.5]);
const REACH_UP: ArmKey = ([0.25, 0.62, 0.75], [0.2, 0.75, 0.62]);
const HAND_ON_CHEST: ArmKey = ([0.3, -0.92, 0.25], [-0.85, 0.35, 0.38]);

/// Side `s`'s direction for an (outward, up, forward) triple, chest frame.
pub(crate) fn arm_dir(s: usize, v: [f64; 3]) -> Vector3<f64> {
    Vector3::new(outward(s) * v[0], v[1], v[2]).normalize()
}

/// A keyframe of the `move` phase; `t` is a fraction of the phase.
#[derive(Clone, Debug)]
pub(crate) struct Key {
    t: f64,
    arms: [ArmKey; 2],
    chest_yaw: f64,
    chest_pitch: f64,
    head_yaw: f64,
    head_pitch: f64,
    /// Sideways weight shift of the pelvis towards the subject's left, metres.
    shift: f64,
    /// Weight of the right hand's wave.
    wave: f64,
}

fn key(t: f64, right: ArmKey, left: ArmKey) -> Key {
    Key {
        t,
        arms: [right, left],
        chest_yaw: 0.0,
        chest_pitch: 0.0,
        head_yaw: 0.0,
        head_pitch: 0.0,
        shift: 0.0,
        wave: 0.0,
    }
}

/// The choreography of the `move` phase (right arm first).
pub(crate) fn move_keys() -> Vec<Key> {
    let d = 1.0 / 13.0;
    let mut k = vec![
        key(0.0, ARMS_DOWN, ARMS_DOWN),
        key(1.0 * d, ARMS_SIDE, ARMS_SIDE),
        key(2.0 * d, ARMS_UP, ARMS_UP),
        key(3.0 * d, GOAL_POST, GOAL_POST),
        key(4.0 * d, ARMS_FORWARD, ARMS_FORWARD),
        key(5.0 * d, ELBOWS_90, ELBOWS_90),
        key(6.0 * d, WAVE, HAND_ON_HIP),
        key(7.3 * d, WAVE, HAND_ON_HIP),
        key(8.3 * d, ACROSS, ARMS_DOWN),
        key(9.3 * d, HAND_ON_HIP, HAND_ON_HIP),
        key(10.3 * d, ARMS_DOWN, REACH_UP),
        key(11.3 * d, HAND_ON_CHEST, ELBOWS_90),
        key(12.2 * d, ARMS_DOWN, ARMS_DOWN),
        key(1.0, ARMS_DOWN, ARMS_DOWN),
    ];
    k[2].head_pitch = -0.15;
    k[4].chest_pitch = 0.06;
    k[6].wave = 1.0;
    k[6].head_yaw = -0.2;
    k[7].wave = 1.0;
    k[7].head_yaw = -0.15;
    k[7].shift = -0.04;
    k[8].chest_yaw = 0.45;
    k[8].head_yaw = 0.3;
    k[8].shift = 0.03;
    k[9].shift = -0.05;
    k[9].chest_yaw = -0.1;
    k[10].chest_yaw = -0.35;
    k[10].shift = 0.05;
    k[10].head_pitch = -0.2;
    k[11].chest_pitch = 0.1;
    k[11].head_pitch = 0.15;
    k
}

/// Random small changes of the keys (not of the first and last): each
/// direction turned by up to ~6°, the trunk angles by up to ~0.05 rad.
pub(crate) fn jitter_keys(keys: &mut [Key], seed: u64) {
    let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0x6d6f_7665_735f_6b65);
    let n = keys.len();
    let mut small = |scale: f64| rng.random_range(-scale..scale);
    for key in keys.iter_mut().take(n - 1).skip(1) {
        for arm in &mut key.arms {
            for v in [&mut arm.0, &mut arm.1] {
                for c in v.iter_mut() {
                    *c += small(0.1);
                }
            }
        }
        key.chest_yaw += small(0.05);
        key.head_yaw += small(0.05);
        key.shift += small(0.01);
    }
}

/// Hermite interpolation through `(times, values)` with finite-difference
/// tangents (zero at the ends), evaluated at `t`.
fn hermite(times: &[f64], values: &[f64], t: f64) -> f64 {
    let n = times.len();
    if t <= times[0] {
        return values[0];
    }
    if t >= times[n - 1] {
        return values[n - 1];
    }
    let i = times.windows(2).position(|w| t < w[1]).unwrap_or(n - 2);
    let tangent = |k: usize| {
        if k == 0 || k + 1 == n {
            0.0
        } else {
            0.8 * (values[k + 1] - values[k - 1]) / (times[k + 1] - times[k - 1])
        }
    };
    let h = times[i + 1] - times[i];
    let u = (t - times[i]) / h;
    let (u2, u3) = (u * u, u * u * u);
    (2.0 * u3 - 3.0 * u2 + 1.0) * values[i]
        + (u3 - 2.0 * u2 + u) * h * tangent(i)
        + (-2.0 * u3 + 3.0 * u2) * values[i + 1]
        + (u3 - u2) * h * tangent(i + 1)
}

/// The `move` phase's pose spec at `t` seconds into it.
pub(crate) fn move_spec(
    subject: &Subject,
    stand: &PoseSpec,
    keys: &[Key],
    duration: f64,
    t: f64,
) -> PoseSpec {
    let times: Vec<f64> = keys.iter().map(|k| k.t * duration).collect();
    let track = |f: &dyn Fn(&Key) -> f64| {
        let v: Vec<f64> = keys.iter().map(f).collect();
        hermite(&times, &v, t)
    };
    let mut spec = stand.clone();
    spec.chest_yaw = track(&|k| k.chest_yaw);
    spec.chest_pitch = track(&|k| k.chest_pitch);
    spec.head_yaw = track(&|k| k.head_yaw);
    spec.head_pitch = track(&|k| k.head_pitch);
    let shift = track(&|k| k.shift);
    let wave = track(&|k| k.wave).clamp(0.0, 1.0);
    let side = yaw_rot(stand.yaw) * Vector3::x();
    spec.root = stand.root + side * shift;
    // A shift drops the pelvis a little so that both feet stay reachable.
    spec.root.y -= 2.0 * shift.abs() * shift.abs() / subject.thigh.max(0.1) + shift.abs() * 0.1;
    spec.pelvis_roll = -shift * 2.0;
    spec.chest_roll = shift * 1.0;
    for s in 0..2 {
        let mut up = [0.0; 3];
        let mut fore = [0.0; 3];
        for c in 0..3 {
            up[c] = track(&|k| k.arms[s].0[c]);
            fore[c] = track(&|k| k.arms[s].1[c]);
        }
        spec.upper[s] = arm_dir(s, up);
        let mut f = arm_dir(s, fore);
        if s == 0 && wave > 0.0 {
            let swing = wave * 0.45 * (std::f64::consts::TAU * 2.2 * t).sin();
            f = axis_rot(Vector3::z_axis(), swing) * f;
        }
        spec.fore[s] = f;
    }
    spec
}

//! The bodies of the papers' experiments, built in code.
//!
//! Conventions: metres, radians, y up, the human faces +z with its left side
//! on +x, feet on the floor `y = 0` at rest. Chains lie along +x at rest.
//! Masses of the human follow common anthropometric fractions of a 75 kg
//! adult (pelvis ≈ 14%, thigh ≈ 10%, shank ≈ 4.7%, …); other presets give
//! each segment a mass proportional to its length.

use nalgebra::{Unit, Vector3};
use rotation::euler::{Axis, EulerOrder};
use rotation::{SwingTwistFrame, SwingTwistLimit};

use crate::joint::{BallRotation, JointKind, Range};
use crate::skeleton::{BodyPart, Joint, Skeleton, SkeletonBuilder};

const X: [f64; 3] = [1.0, 0.0, 0.0];
const Y: [f64; 3] = [0.0, 1.0, 0.0];
const Z: [f64; 3] = [0.0, 0.0, 1.0];

fn v(a: [f64; 3]) -> Vector3<f64> {
    Vector3::from(a)
}

fn neg(a: [f64; 3]) -> [f64; 3] {
    [-a[0], -a[1], -a[2]]
}

fn frame(twist: [f64; 3], swing_u: [f64; 3]) -> SwingTwistFrame {
    SwingTwistFrame::with_swing_axis(Unit::new_normalize(v(twist)), v(swing_u))
        .expect("preset swing axes are orthogonal to their twist axes")
}

/// A 3-DOF swing–twist ball joint: twist about `twist`, swing half-angles
/// `(about swing_u, about twist × swing_u)` and a twist interval.
fn swing_twist(
    twist: [f64; 3],
    swing_u: [f64; 3],
    half: (f64, f64),
    twist_range: (f64, f64),
) -> JointKind {
    JointKind::Ball(BallRotation::SwingTwist {
        frame: frame(twist, swing_u),
        limit: Some(SwingTwistLimit {
            swing_half_angles: nalgebra::Vector2::new(half.0, half.1),
            twist_min: twist_range.0,
            twist_max: twist_range.1,
        }),
    })
}

/// A 2-DOF swing joint with an elliptical limit.
fn swing2(twist: [f64; 3], swing_u: [f64; 3], half: (f64, f64)) -> JointKind {
    JointKind::Swing {
        frame: frame(twist, swing_u),
        limit: Some(SwingTwistLimit {
            swing_half_angles: nalgebra::Vector2::new(half.0, half.1),
            twist_min: 0.0,
            twist_max: 0.0,
        }),
    }
}

fn hinge(axis: [f64; 3], min: f64, max: f64) -> JointKind {
    JointKind::hinge(v(axis), Some(Range::new(min, max)))
}

fn deg(d: f64) -> f64 {
    d.to_radians()
}

/// The global position as three prismatic joints `root_x`, `root_y` and
/// `root_z`, in that order, the first at `offset` from the world origin,
/// each limited by its entry of `limits` (`None`: free). Returns `root_z`.
fn root_translation(
    b: &mut SkeletonBuilder,
    offset: [f64; 3],
    limits: [Option<Range>; 3],
) -> &mut Joint {
    let [x, y, z] = limits;
    b.joint("root_x", None, offset, JointKind::prismatic(v(X), x));
    b.joint(
        "root_y",
        Some("root_x"),
        [0.0; 3],
        JointKind::prismatic(v(Y), y),
    );
    b.joint(
        "root_z",
        Some("root_y"),
        [0.0; 3],
        JointKind::prismatic(v(Z), z),
    )
}

/// Elbow flexion `{side}_elbow` at the end of the 0.29 m upper arm below
/// `{side}_shoulder`, then forearm twist `{side}_forearm` carrying the
/// 0.26 m forearm: the same in the human and the RTPF upper body.
fn elbow_and_forearm(b: &mut SkeletonBuilder, side: &str) {
    let n = |name: &str| format!("{side}_{name}");
    // Elbow flexion swings the forearm forward (+z): a positive angle about -x.
    b.joint(
        &n("elbow"),
        Some(&n("shoulder")),
        [0.0, -0.29, 0.0],
        hinge(neg(X), 0.0, deg(150.0)),
    );
    b.joint(
        &n("forearm"),
        Some(&n("elbow")),
        [0.0; 3],
        hinge(Y, deg(-80.0), deg(80.0)),
    )
    .with_bone([0.0, -0.26, 0.0], 0.04, BodyPart::Forearm, 1.2);
}

/// A chain of `n` segments of length `total_length / n` joined by 3-DOF
/// exp-map ball joints without limits, straight along +x at rest, plus a
/// fixed `tip` joint at the end effector (SMC-IK §6.2, Fig. 3–4). Joint `i`
/// is named `j{i}`.
pub fn chain(n: usize, total_length: f64) -> Skeleton {
    let n = n.max(1);
    let l = total_length / n as f64;
    let mut b = SkeletonBuilder::new();
    for i in 0..n {
        let name = format!("j{i}");
        let parent = (i > 0).then(|| format!("j{}", i - 1));
        let offset = if i == 0 { [0.0; 3] } else { [l, 0.0, 0.0] };
        b.joint(&name, parent.as_deref(), offset, JointKind::ball())
            .with_bone([l, 0.0, 0.0], 0.02 + 0.1 * l, BodyPart::Link, l);
    }
    b.joint(
        "tip",
        Some(&format!("j{}", n - 1)),
        [l, 0.0, 0.0],
        JointKind::Fixed,
    );
    b.build().expect("chain preset is valid")
}

/// The same chain with every ball joint built as three hinges about x, y and
/// z (zero length between them), each limited to `±limit` — the revolute
/// chain a Jacobian IK library is given (the *reachable-with-limits*
/// protocol). Hinges are named `j{i}x`, `j{i}y`, `j{i}z`; the end effector is
/// `tip`.
pub fn hinge_chain(n: usize, total_length: f64, limit: f64) -> Skeleton {
    let n = n.max(1);
    let l = total_length / n as f64;
    let mut b = SkeletonBuilder::new();
    let mut parent: Option<String> = None;
    for i in 0..n {
        for (k, (axis, suffix)) in [(X, "x"), (Y, "y"), (Z, "z")].into_iter().enumerate() {
            let name = format!("j{i}{suffix}");
            let offset = if i > 0 && k == 0 {
                [l, 0.0, 0.0]
            } else {
                [0.0; 3]
            };
            let j = b.joint(&name, parent.as_deref(), offset, hinge(axis, -limit, limit));
            if k == 2 {
                j.with_bone([l, 0.0, 0.0], 0.02 + 0.1 * l, BodyPart::Link, l);
            }
            parent = Some(name);
        }
    }
    b.joint("tip", parent.as_deref(), [l, 0.0, 0.0], JointKind::Fixed);
    b.build().expect("hinge chain preset is valid")
}

/// The SMC-IK 4-segment arm (§6.1, Fig. 2): four 3-DOF ball joints, segments
/// of 0.75 (total reach 3, as in the chain protocol), end effector `tip`.
pub fn arm4() -> Skeleton {
    chain(4, 3.0)
}

/// A ~40-joint human with joint limits (SMC-IK §6.3): a free pelvis root,
/// a three-joint spine, neck and head, clavicles, shoulders, elbows, forearm
/// twist, wrists, fingers and thumbs, hips, knees, ankles (flexion and
/// inversion), toes, and fixed end sites at the head top, finger tips, thumb
/// tips, heels and toe tips (heels and toe tips touch the floor at rest).
/// 39 joints, 59 parameters.
pub fn human() -> Skeleton {
    let mut b = SkeletonBuilder::new();
    b.joint("pelvis", None, [0.0, 0.93, 0.0], JointKind::free())
        .with_capsule(
            [-0.1, -0.03, 0.0],
            [0.1, -0.03, 0.0],
            0.09,
            BodyPart::Pelvis,
            11.0,
        );
    b.joint(
        "lumbar",
        Some("pelvis"),
        [0.0, 0.1, 0.0],
        swing_twist(Y, X, (0.5, 0.35), (-0.3, 0.3)),
    )
    .with_bone([0.0, 0.12, 0.0], 0.1, BodyPart::Torso, 8.0);
    b.joint(
        "thorax",
        Some("lumbar"),
        [0.0, 0.12, 0.0],
        swing_twist(Y, X, (0.3, 0.2), (-0.3, 0.3)),
    )
    .with_bone([0.0, 0.13, 0.0], 0.11, BodyPart::Torso, 9.0);
    b.joint(
        "chest",
        Some("thorax"),
        [0.0, 0.13, 0.0],
        swing_twist(Y, X, (0.2, 0.15), (-0.3, 0.3)),
    )
    .with_capsule(
        [-0.08, 0.08, 0.0],
        [0.08, 0.08, 0.0],
        0.1,
        BodyPart::Torso,
        10.0,
    );
    b.joint(
        "neck",
        Some("chest"),
        [0.0, 0.15, 0.0],
        swing_twist(Y, X, (0.6, 0.4), (-0.8, 0.8)),
    )
    .with_bone([0.0, 0.08, 0.0], 0.05, BodyPart::Neck, 1.5);
    b.joint(
        "head",
        Some("neck"),
        [0.0, 0.08, 0.0],
        swing_twist(Y, X, (0.4, 0.3), (-0.6, 0.6)),
    )
    .with_capsule(
        [0.0, 0.06, 0.02],
        [0.0, 0.14, 0.02],
        0.09,
        BodyPart::Head,
        5.0,
    );
    b.joint("head_top", Some("head"), [0.0, 0.22, 0.0], JointKind::Fixed);

    for (side, s) in [("l", 1.0), ("r", -1.0)] {
        let n = |name: &str| format!("{side}_{name}");
        let down = neg(Y);
        b.joint(
            &n("clavicle"),
            Some("chest"),
            [0.03 * s, 0.1, 0.0],
            swing2([s, 0.0, 0.0], Z, (0.3, 0.3)),
        )
        .with_bone([0.16 * s, 0.02, 0.0], 0.04, BodyPart::UpperArm, 1.0);
        b.joint(
            &n("shoulder"),
            Some(&n("clavicle")),
            [0.16 * s, 0.02, 0.0],
            swing_twist(down, X, (2.0, 1.6), (-1.2, 1.2)),
        )
        .with_bone([0.0, -0.29, 0.0], 0.05, BodyPart::UpperArm, 2.0);
        elbow_and_forearm(&mut b, side);
        b.joint(
            &n("wrist"),
            Some(&n("forearm")),
            [0.0, -0.26, 0.0],
            swing2(down, X, (1.2, 0.5)),
        )
        .with_bone([0.0, -0.09, 0.0], 0.035, BodyPart::Hand, 0.35);
        // Fingers curl toward the palm, which faces the body (−x on the left).
        b.joint(
            &n("fingers"),
            Some(&n("wrist")),
            [0.0, -0.09, 0.0],
            hinge([0.0, 0.0, -s], 0.0, deg(100.0)),
        )
        .with_bone([0.0, -0.08, 0.0], 0.02, BodyPart::Finger, 0.08);
        b.joint(
            &n("finger_tip"),
            Some(&n("fingers")),
            [0.0, -0.08, 0.0],
            JointKind::Fixed,
        );
        b.joint(
            &n("thumb"),
            Some(&n("wrist")),
            [0.0, -0.03, 0.03],
            swing2([0.0, -1.0, 1.0], X, (0.8, 0.8)),
        )
        .with_bone([0.0, -0.04, 0.03], 0.015, BodyPart::Finger, 0.02);
        b.joint(
            &n("thumb_tip"),
            Some(&n("thumb")),
            [0.0, -0.04, 0.03],
            JointKind::Fixed,
        );

        b.joint(
            &n("hip"),
            Some("pelvis"),
            [0.09 * s, -0.08, 0.0],
            swing_twist(down, X, (1.3, 0.7), (-0.6, 0.6)),
        )
        .with_bone([0.0, -0.4, 0.0], 0.07, BodyPart::Thigh, 7.5);
        // Knee flexion swings the shank backward (−z): a positive angle about +x.
        b.joint(
            &n("knee"),
            Some(&n("hip")),
            [0.0, -0.4, 0.0],
            hinge(X, 0.0, deg(140.0)),
        )
        .with_bone([0.0, -0.38, 0.0], 0.05, BodyPart::Shank, 3.5);
        b.joint(
            &n("ankle"),
            Some(&n("knee")),
            [0.0, -0.38, 0.0],
            hinge(X, deg(-40.0), deg(30.0)),
        );
        b.joint(
            &n("subtalar"),
            Some(&n("ankle")),
            [0.0; 3],
            hinge(Z, deg(-20.0), deg(20.0)),
        )
        .with_capsule(
            [0.0, -0.04, -0.04],
            [0.0, -0.04, 0.13],
            0.035,
            BodyPart::Foot,
            1.0,
        );
        b.joint(
            &n("heel"),
            Some(&n("subtalar")),
            [0.0, -0.07, -0.05],
            JointKind::Fixed,
        );
        b.joint(
            &n("toe"),
            Some(&n("subtalar")),
            [0.0, -0.05, 0.13],
            hinge(X, deg(-30.0), deg(50.0)),
        )
        .with_bone([0.0, -0.02, 0.05], 0.02, BodyPart::Foot, 0.1);
        b.joint(
            &n("toe_tip"),
            Some(&n("toe")),
            [0.0, -0.02, 0.05],
            JointKind::Fixed,
        );
    }
    b.build().expect("human preset is valid")
}

/// Forearm and hand (SMC-IK §6.4): a 3-DOF elbow (the root, fixed in space)
/// and 3-DOF wrist, five fingers of three segments each; each finger base has
/// 2 DOF (abduction/adduction and flexion/extension), the other joints 1 DOF
/// (flexion). Finger joints are named `{finger}_{base|mid|dist|tip}` with
/// fingers `thumb, index, middle, ring, little`. The hand hangs along −y with
/// the palm facing −z; flexion curls the fingers toward −z.
pub fn hand() -> Skeleton {
    let mut b = SkeletonBuilder::new();
    b.joint(
        "elbow",
        None,
        [0.0; 3],
        swing_twist(neg(Y), X, (1.3, 0.3), (-1.4, 1.4)),
    )
    .with_bone([0.0, -0.26, 0.0], 0.035, BodyPart::Forearm, 1.2);
    b.joint(
        "wrist",
        Some("elbow"),
        [0.0, -0.26, 0.0],
        swing_twist(neg(Y), X, (1.2, 0.5), (-0.2, 0.2)),
    )
    .with_capsule(
        [0.0, -0.01, 0.0],
        [0.0, -0.08, 0.0],
        0.03,
        BodyPart::Hand,
        0.35,
    );
    // (name, base offset in the wrist frame, segment lengths)
    let fingers: [(&str, [f64; 3], [f64; 3]); 5] = [
        ("thumb", [-0.025, -0.025, -0.01], [0.04, 0.032, 0.028]),
        ("index", [-0.025, -0.09, 0.0], [0.045, 0.026, 0.02]),
        ("middle", [-0.008, -0.095, 0.0], [0.05, 0.03, 0.022]),
        ("ring", [0.009, -0.09, 0.0], [0.046, 0.028, 0.021]),
        ("little", [0.025, -0.08, 0.0], [0.036, 0.021, 0.018]),
    ];
    for (f, base, lens) in fingers {
        let n = |s: &str| format!("{f}_{s}");
        // The thumb points down and out; the other fingers straight down.
        let dir = if f == "thumb" {
            v([-0.6, -0.8, 0.0])
        } else {
            v(neg(Y))
        };
        let seg = |l: f64| [dir.x * l, dir.y * l, dir.z * l];
        // Flexion: rotation about the axis dir × (−z) curls the finger toward −z.
        let flex = dir.cross(&-Vector3::z()).normalize();
        let flex = [flex.x, flex.y, flex.z];
        // Base: swing about flex (flexion/extension) and about z (abduction).
        b.joint(
            &n("base"),
            Some("wrist"),
            base,
            swing2([dir.x, dir.y, dir.z], flex, (deg(90.0), deg(25.0))),
        )
        .with_bone(seg(lens[0]), 0.009, BodyPart::Finger, 0.015);
        // The middle and distal phalanges: (joint, its parent, flexion
        // limit in degrees, bone radius, mass), each at the end of the last.
        let phalanges = [
            ("mid", "base", 110.0, 0.008, 0.01),
            ("dist", "mid", 80.0, 0.007, 0.006),
        ];
        for (k, (joint, parent, flexion, radius, mass)) in phalanges.into_iter().enumerate() {
            b.joint(
                &n(joint),
                Some(&n(parent)),
                seg(lens[k]),
                hinge(flex, 0.0, deg(flexion)),
            )
            .with_bone(seg(lens[k + 1]), radius, BodyPart::Finger, mass);
        }
        b.joint(&n("tip"), Some(&n("dist")), seg(lens[2]), JointKind::Fixed);
    }
    b.build().expect("hand preset is valid")
}

/// The RTPF upper body (§V-A): 3 global position parameters and 20 joint
/// angles — chest (3), neck (3), shoulders (3 each), elbows (flexion and
/// forearm twist, 2 each) and wrists (2 each). Translations are prismatic
/// joints `root_x`, `root_y`, `root_z`; rotations are Euler angles as in the
/// MPEG-4 BAP parameters RTPF streams. The body faces +z, arms hang down.
pub fn rtpf_upper_body() -> Skeleton {
    let mut b = SkeletonBuilder::new();
    let limits = [2.0, 1.0, 3.0].map(|half| Some(Range::symmetric(half)));
    root_translation(&mut b, [0.0, 1.0, 0.0], limits).with_capsule(
        [-0.12, 0.05, 0.0],
        [0.12, 0.05, 0.0],
        0.12,
        BodyPart::Torso,
        15.0,
    );
    let euler = |order: [Axis; 3], lim: [f64; 3]| {
        JointKind::Ball(BallRotation::Euler {
            order: EulerOrder(order),
            limits: Some(lim.map(|l| Range::symmetric(deg(l)))),
        })
    };
    b.joint(
        "chest",
        Some("root_z"),
        [0.0, 0.15, 0.0],
        euler([Axis::Y, Axis::X, Axis::Z], [60.0, 40.0, 30.0]),
    )
    .with_capsule(
        [-0.1, 0.15, 0.0],
        [0.1, 0.15, 0.0],
        0.13,
        BodyPart::Torso,
        15.0,
    );
    b.joint(
        "neck",
        Some("chest"),
        [0.0, 0.33, 0.0],
        euler([Axis::Y, Axis::X, Axis::Z], [70.0, 50.0, 40.0]),
    )
    .with_capsule(
        [0.0, 0.12, 0.02],
        [0.0, 0.2, 0.02],
        0.1,
        BodyPart::Head,
        5.0,
    );
    for (side, s) in [("l", 1.0), ("r", -1.0)] {
        let n = |name: &str| format!("{side}_{name}");
        b.joint(
            &n("shoulder"),
            Some("chest"),
            [0.19 * s, 0.28, 0.0],
            euler([Axis::Z, Axis::X, Axis::Y], [180.0, 180.0, 90.0]),
        )
        .with_bone([0.0, -0.29, 0.0], 0.05, BodyPart::UpperArm, 2.0);
        elbow_and_forearm(&mut b, side);
        b.joint(
            &n("wrist_flex"),
            Some(&n("forearm")),
            [0.0, -0.26, 0.0],
            hinge(X, deg(-70.0), deg(70.0)),
        );
        b.joint(
            &n("wrist_dev"),
            Some(&n("wrist_flex")),
            [0.0; 3],
            hinge(Z, deg(-30.0), deg(30.0)),
        )
        .with_bone([0.0, -0.17, 0.0], 0.04, BodyPart::Hand, 0.4);
        b.joint(
            &n("hand_tip"),
            Some(&n("wrist_dev")),
            [0.0, -0.17, 0.0],
            JointKind::Fixed,
        );
    }
    b.joint("head_top", Some("neck"), [0.0, 0.3, 0.0], JointKind::Fixed);
    b.build().expect("RTPF upper-body preset is valid")
}

/// The PHYSPRIOR lower body (Fig. 2.4, Tables 2.5–2.6): global position
/// (`root_x`, `root_y`, `root_z`), heading about the vertical (`torso`),
/// 3-DOF hips, knees limited to `[−π, 0]`, ankles about x and z each limited
/// to `[−π/2, π/2]`; mean segment lengths thigh 0.4 m, shank 0.5 m, hip width
/// 0.3 m, foot 0.2 m. Negative knee angles bend the knee (PHYSPRIOR's sign).
pub fn physprior_lower_body() -> Skeleton {
    let (thigh, shank, hips, foot) = (0.4, 0.5, 0.3, 0.2);
    let mut b = SkeletonBuilder::new();
    root_translation(&mut b, [0.0, thigh + shank + 0.05, 0.0], [None; 3]);
    b.joint(
        "torso",
        Some("root_z"),
        [0.0; 3],
        JointKind::hinge(v(Y), None),
    )
    .with_capsule(
        [-hips / 2.0, 0.0, 0.0],
        [hips / 2.0, 0.0, 0.0],
        0.08,
        BodyPart::Pelvis,
        11.0,
    );
    let half = std::f64::consts::FRAC_PI_2;
    for (side, s) in [("l", 1.0), ("r", -1.0)] {
        let n = |name: &str| format!("{side}_{name}");
        b.joint(
            &n("hip"),
            Some("torso"),
            [s * hips / 2.0, 0.0, 0.0],
            JointKind::Ball(BallRotation::Euler {
                order: EulerOrder([Axis::X, Axis::Y, Axis::Z]),
                limits: None,
            }),
        )
        .with_bone([0.0, -thigh, 0.0], 0.07, BodyPart::Thigh, 7.5);
        // Negative angle about −x = positive about +x: the shank swings back.
        b.joint(
            &n("knee"),
            Some(&n("hip")),
            [0.0, -thigh, 0.0],
            hinge(neg(X), -std::f64::consts::PI, 0.0),
        )
        .with_bone([0.0, -shank, 0.0], 0.05, BodyPart::Shank, 3.5);
        b.joint(
            &n("ankle_x"),
            Some(&n("knee")),
            [0.0, -shank, 0.0],
            hinge(X, -half, half),
        );
        b.joint(
            &n("ankle_z"),
            Some(&n("ankle_x")),
            [0.0; 3],
            hinge(Z, -half, half),
        )
        .with_capsule(
            [0.0, -0.05, -0.05],
            [0.0, -0.05, foot - 0.05],
            0.035,
            BodyPart::Foot,
            1.0,
        );
        b.joint(
            &n("heel"),
            Some(&n("ankle_z")),
            [0.0, -0.05, -0.05],
            JointKind::Fixed,
        );
        b.joint(
            &n("toe_tip"),
            Some(&n("ankle_z")),
            [0.0, -0.05, foot - 0.05],
            JointKind::Fixed,
        );
    }
    b.build().expect("PHYSPRIOR lower-body preset is valid")
}

/// Every preset by name, for the CLI and the app's scene list.
pub fn by_name(name: &str) -> Option<Skeleton> {
    Some(match name {
        "arm" | "arm4" => arm4(),
        "chain" | "chain30" => chain(30, 3.0),
        "human" => human(),
        "hand" => hand(),
        "rtpf" | "rtpf_upper_body" => rtpf_upper_body(),
        "physprior" | "physprior_lower_body" => physprior_lower_body(),
        _ => return None,
    })
}

/// Names accepted by [`by_name`].
pub const PRESET_NAMES: [&str; 6] = [
    "arm4",
    "chain30",
    "human",
    "hand",
    "rtpf_upper_body",
    "physprior_lower_body",
];

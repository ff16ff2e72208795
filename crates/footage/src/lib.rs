//! Test footage the tracker's own body model did not draw: a webcam-style
//! session of a person in a room, rendered on the CPU, with ground truth.
//!
//! [`vision::synth`] draws the tracker's capsules, so a tracker evaluated on
//! it meets exactly the shapes it assumes. This crate draws a different
//! body on purpose:
//!
//! - **shapes**: ellipsoid chest, belly and pelvis, tapered limbs (round
//!   cones: frusta with spherical ends of different radii, some with
//!   elliptic cross-sections), a head with chin, nose, ears and a hair cap
//!   (short, long or none), mitten hands with thumbs, rounded-box shoes with
//!   soles, a loose shirt whose hem is wider than the waist, short or long
//!   sleeves, trousers; all blended with a polynomial smooth minimum
//!   (`k` = 1.5 cm), so there are no capsule silhouettes;
//! - **proportions** ([`Build`]): trunk, neck, head, arm, hand and leg
//!   lengths and shoulder and hip widths scale the CMU offsets separately,
//!   then one factor brings the standing subject to [`Build::height`];
//! - **scene**: a textured room (wooden or tiled floor, plaster, striped or
//!   panelled walls with skirting, a door, posters, a shelf with books, a
//!   sideboard, optionally a rug), Lambert + ambient shading from a
//!   directional light and a ceiling lamp, soft contact and cast shadows on
//!   the floor, lens blur (3 × 3 binomial), vignetting, sensor noise (read +
//!   shot noise, per pixel and channel, a new draw every frame) and — in the
//!   files — H.264 compression.
//!
//! **Rendering** is per-pixel sphere tracing (Hart 1996) of the body's
//! signed distance field: each primitive has a bounding sphere; a pixel's
//! ray collects the primitives whose spheres it crosses and marches the
//! smooth union of those only, from the first sphere entry. Silhouette
//! pixels whose ray misses by less than half a pixel are blended with the
//! background by the closest approach (`coverage = ½ − d_min / footprint`).
//! The room is static, so it is ray-cast once per session; a frame only
//! redoes the rectangle the body and its shadow cover. Primitive SDFs are
//! Inigo Quilez's exact round cone and rounded box and his bound for the
//! ellipsoid; non-uniform scaling multiplies the distance by the smallest
//! scale, which keeps it a lower bound.
//!
//! **Motion** is built on the CMU hierarchy of `assets/motions/*.bvh` (the
//! tracker's) with [`skeleton`]'s forward kinematics:
//!
//! 1. `empty`: the room, still (only the noise changes);
//! 2. `walk_in`: a gait cycle of CMU 131_01 (the pair of frames in its
//!    steady walk, 545–700 at 120 Hz, whose poses match best, looped with
//!    the root's advance accumulated and resampled by per-joint slerp; the
//!    clip's stylised arms are replaced by a swing against the thigh of the
//!    same side), turned to run across the image from out of view, scaled
//!    by the leg length and lifted so that the feet touch the floor; it
//!    ends 0.3 m short of the spot and a 0.6 s blend (per-joint slerp,
//!    root lerp) stops and turns the subject to face the camera;
//! 3. `stand`: still, facing the camera, arms down 10° from the body (the
//!    tracker's `arms-down` start pose);
//! 4. `move`: keyframed arm, trunk and head motion (sideways and overhead
//!    raises, forward raise, elbows at 90°, a wave, hands on the hips, a
//!    reach across the body, a weight shift), Hermite-interpolated; bones
//!    are aimed by the shortest rotation from their parent frame, the legs
//!    by two-bone IK to planted ankles — or, with
//!    [`FootageOptions::moves_clip`], motion capture on another rig,
//!    retargeted by direction (the `mocap` module);
//! 5. with [`FootageOptions::leave`]: `walk_out` (turn, walk out of view),
//!    `away` (empty room), `walk_back` (walk in from the same side, turn)
//!    and `stand_again`.
//!
//! While nobody is in the room (`empty`, `away`) the skeleton waits out of
//! view and is not drawn; its truth columns are left blank.
//!
//! **World frame**: the BVH's, metres, `y` up, the floor at `y = 0`; the
//! camera stands near `x = 0, z = 0` and looks along `−z`; the subject
//! faces `+z`.
//!
//! The crate is `publish = false`: only tests, examples and the evaluation
//! clip sets (`assets/footage`, `assets/evalset`) use it, never the tracker
//! at run time. Its parts, in the order a frame needs them:
//!
//! | module | what |
//! |---|---|
//! | `options` | [`FootageOptions`], [`Preset`] and the [`Setup`] they hold |
//! | `truth` | [`Phase`], [`TruthRow`], the `truth.csv` columns |
//! | `subject` | the proportioned CMU skeleton and posing from a `PoseSpec` |
//! | `moves`, `mocap` | the `move` phase: keyframes, or retargeted motion capture |
//! | `walk`, `plan` | the looped gait cycle; every frame's pose and phase |
//! | `body` | the body's signed-distance primitives for one pose |
//! | `colour`, `room` | sRGB, hashed noise; the textured room, ray-cast |
//! | `camera` | the webcam's pinhole and its pixel rays |
//! | `session` | [`SessionRenderer`]: the room once, then a frame: sphere tracing, shadows, noise |
//! | `write` | [`write_session`]: H.264 through `ffmpeg`, truth CSV/BVH, camera, metadata |

mod body;
mod camera;
mod colour;
mod mocap;
mod moves;
mod options;
mod plan;
mod room;
mod session;
mod subject;
mod truth;
mod walk;
mod write;

use nalgebra::{Matrix3, Vector3};

pub use options::{
    Build, CameraSetup, Clothing, FloorStyle, FootageOptions, HairStyle, Light, Preset, Room,
    Setup, Staging, Timing, WallStyle,
};
pub use session::{Footage, FootageFrame, SessionRenderer, render_session};
pub use truth::{Phase, PhaseSpan, TRUTH_JOINTS, TruthRow, interior_angle_deg, truth_csv_header};
pub use write::{WriteReport, write_session};

/// Single-precision vectors and matrices of the renderer (the motion is
/// planned in `f64`).
type V3 = Vector3<f32>;
type M3 = Matrix3<f32>;

//! Test footage the tracker's own body model did not draw: a webcam-style
//! session of a person in a room, rendered on the CPU, with ground truth.
//!
//! [`crate::synth`] draws the tracker's capsules, so a tracker evaluated on
//! it meets exactly the shapes it assumes. This module draws a different
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
//!    by two-bone IK to planted ankles;
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

mod mocap;

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use nalgebra::{Isometry3, Matrix3, Point3, UnitQuaternion, Vector3};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use rayon::prelude::*;
use skeleton::{Bvh, PoseBatch, Skeleton};

use crate::camera_file::CameraFile;
use crate::classes::Sleeves;
use crate::error::{Result, VisionError};
use crate::frame::Frame;

type V3 = Vector3<f32>;
type M3 = Matrix3<f32>;

// ---------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------

/// The three stock sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// 1.75 m, average build, blue short-sleeved shirt, dark trousers,
    /// short dark hair; wooden floor, plaster wall; enters from the left.
    A,
    /// 1.86 m, slim, long legs, red striped long-sleeved shirt, beige
    /// trousers; tiled floor, striped wallpaper, level camera, cooler light;
    /// enters from the right.
    B,
    /// 1.62 m, broad build, short arms, long hair, green long-sleeved top,
    /// blue jeans; dark wooden floor with a rug, panelled wall, warm light,
    /// higher camera tilted down; enters from the left.
    C,
}

impl Preset {
    pub const ALL: [Preset; 3] = [Self::A, Self::B, Self::C];

    /// `a`, `b` or `c`.
    pub fn name(self) -> &'static str {
        match self {
            Self::A => "a",
            Self::B => "b",
            Self::C => "c",
        }
    }

    /// The subject, clothes, room, light, camera and staging of the preset.
    pub fn setup(self) -> Setup {
        match self {
            Self::A => Setup {
                build: Build::default(),
                clothing: Clothing {
                    skin: [222, 170, 140],
                    hair: [52, 36, 26],
                    hair_style: HairStyle::Short,
                    shirt: [46, 92, 172],
                    stripes: None,
                    sleeves: Sleeves::Short,
                    trousers: [48, 50, 58],
                    shoes: [30, 30, 32],
                    soles: [215, 215, 210],
                },
                room: Room {
                    width: 5.0,
                    depth: 4.7,
                    height: 2.6,
                    wall: [214, 206, 188],
                    wall_accent: [190, 180, 160],
                    wall_style: WallStyle::Plaster,
                    floor: [150, 104, 66],
                    floor_accent: [110, 72, 42],
                    floor_style: FloorStyle::Wood,
                    ceiling: [236, 234, 228],
                    door_x: 1.55,
                    door: [236, 232, 222],
                    shelf_x: Some(-1.35),
                    sideboard_x: Some(-1.35),
                    rug: None,
                    decor_seed: 11,
                },
                light: Light {
                    towards_light: [-0.45, 0.8, 0.55],
                    ambient: 0.42,
                    diffuse: 0.62,
                    lamp: 0.25,
                    tint: [1.0, 0.97, 0.92],
                },
                camera: CameraSetup {
                    hfov_deg: 62.0,
                    height: 1.32,
                    tilt_deg: 4.0,
                    x: 0.0,
                },
                staging: Staging {
                    distance: 3.0,
                    x: -0.05,
                    enter_from_left: true,
                },
            },
            Self::B => Setup {
                build: Build {
                    height: 1.86,
                    torso: 1.2,
                    legs: 1.08,
                    arms: 1.2,
                    shoulders: 1.05,
                    hips: 0.95,
                    girth: 0.9,
                    belly: 0.9,
                    ..Build::default()
                },
                clothing: Clothing {
                    skin: [236, 196, 170],
                    hair: [150, 110, 60],
                    hair_style: HairStyle::Short,
                    shirt: [178, 44, 48],
                    stripes: Some([236, 228, 220]),
                    sleeves: Sleeves::Long,
                    trousers: [184, 160, 120],
                    shoes: [92, 58, 36],
                    soles: [60, 40, 30],
                },
                room: Room {
                    width: 5.4,
                    depth: 4.9,
                    height: 2.7,
                    wall: [200, 212, 214],
                    wall_accent: [178, 194, 200],
                    wall_style: WallStyle::Stripes,
                    floor: [196, 194, 186],
                    floor_accent: [150, 150, 146],
                    floor_style: FloorStyle::Tiles,
                    ceiling: [240, 240, 240],
                    door_x: -1.6,
                    door: [120, 84, 56],
                    shelf_x: Some(1.3),
                    sideboard_x: None,
                    rug: None,
                    decor_seed: 23,
                },
                light: Light {
                    towards_light: [0.5, 0.75, 0.5],
                    ambient: 0.45,
                    diffuse: 0.55,
                    lamp: 0.2,
                    tint: [0.94, 0.97, 1.04],
                },
                camera: CameraSetup {
                    hfov_deg: 64.0,
                    height: 1.25,
                    tilt_deg: 0.0,
                    x: 0.1,
                },
                staging: Staging {
                    distance: 3.3,
                    x: 0.15,
                    enter_from_left: false,
                },
            },
            Self::C => Setup {
                build: Build {
                    height: 1.62,
                    torso: 1.3,
                    arms: 1.05,
                    legs: 0.95,
                    shoulders: 1.0,
                    hips: 1.15,
                    girth: 1.15,
                    belly: 1.15,
                    head: 1.35,
                    ..Build::default()
                },
                clothing: Clothing {
                    skin: [160, 110, 80],
                    hair: [24, 20, 18],
                    hair_style: HairStyle::Long,
                    shirt: [64, 130, 82],
                    stripes: None,
                    sleeves: Sleeves::Long,
                    trousers: [44, 64, 110],
                    shoes: [210, 210, 205],
                    soles: [120, 120, 118],
                },
                room: Room {
                    width: 4.8,
                    depth: 4.4,
                    height: 2.5,
                    wall: [226, 214, 186],
                    wall_accent: [96, 118, 104],
                    wall_style: WallStyle::Panelled,
                    floor: [112, 76, 50],
                    floor_accent: [80, 52, 34],
                    floor_style: FloorStyle::Wood,
                    ceiling: [232, 228, 220],
                    door_x: 1.4,
                    door: [200, 196, 186],
                    shelf_x: Some(-1.2),
                    sideboard_x: Some(1.45),
                    rug: Some([150, 60, 54]),
                    decor_seed: 37,
                },
                light: Light {
                    towards_light: [-0.3, 0.85, 0.45],
                    ambient: 0.4,
                    diffuse: 0.6,
                    lamp: 0.3,
                    tint: [1.06, 0.98, 0.86],
                },
                camera: CameraSetup {
                    hfov_deg: 60.0,
                    height: 1.48,
                    tilt_deg: 7.0,
                    x: -0.1,
                },
                staging: Staging {
                    distance: 2.7,
                    x: -0.1,
                    enter_from_left: true,
                },
            },
        }
    }
}

impl std::str::FromStr for Preset {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "a" => Ok(Self::A),
            "b" => Ok(Self::B),
            "c" => Ok(Self::C),
            _ => Err(format!("unknown preset `{s}` (a, b, c)")),
        }
    }
}

/// Body proportions. Segment factors scale the CMU offsets of their
/// segments (1 = CMU's proportion); then one factor scales everything so
/// that the standing subject is [`Self::height`] tall.
#[derive(Clone, Debug, PartialEq)]
pub struct Build {
    /// Floor to the top of the head, standing upright, metres.
    pub height: f64,
    /// Spine (hips → chest → upper chest) and the shoulders' height on it.
    pub torso: f64,
    pub neck: f64,
    /// Skull height (neck top → crown) and the drawn head's size.
    pub head: f64,
    /// Upper arm and forearm.
    pub arms: f64,
    pub hands: f64,
    /// Thigh and shank.
    pub legs: f64,
    /// Shoulder width.
    pub shoulders: f64,
    /// Hip-joint spacing and pelvis width.
    pub hips: f64,
    /// Radii of trunk and limbs (1 = average).
    pub girth: f64,
    /// Depth of chest and belly relative to the girth.
    pub belly: f64,
}

impl Default for Build {
    /// 1.75 m, average proportions: the CMU 131 skeleton's trunk, neck and
    /// head lengthened (its BVH has a short trunk for its legs) and its
    /// arms a little longer.
    fn default() -> Self {
        Self {
            height: 1.75,
            torso: 1.3,
            neck: 1.0,
            head: 1.3,
            arms: 1.15,
            hands: 1.0,
            legs: 1.0,
            shoulders: 1.0,
            hips: 1.0,
            girth: 1.0,
            belly: 1.0,
        }
    }
}

/// Hair cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HairStyle {
    /// A cap over the top and back of the head.
    Short,
    /// The cap plus hair down to the shoulders at the back.
    Long,
    /// None (the whole head is skin).
    Bald,
}

/// Colours (sRGB) and clothes.
#[derive(Clone, Debug, PartialEq)]
pub struct Clothing {
    pub skin: [u8; 3],
    pub hair: [u8; 3],
    pub hair_style: HairStyle,
    pub shirt: [u8; 3],
    /// Horizontal stripes of this colour on the shirt's body.
    pub stripes: Option<[u8; 3]>,
    pub sleeves: Sleeves,
    pub trousers: [u8; 3],
    pub shoes: [u8; 3],
    pub soles: [u8; 3],
}

/// How the floor is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloorStyle {
    /// Planks (14 cm × 1.2 m) with grain, staggered joints and gaps.
    Wood,
    /// 40 cm tiles with grout lines.
    Tiles,
}

/// How the walls are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WallStyle {
    /// Painted plaster (low-frequency mottling).
    Plaster,
    /// Vertical wallpaper stripes of the wall and accent colours.
    Stripes,
    /// Accent-coloured panelling below a dado rail at 0.95 m.
    Panelled,
}

/// The room: an axis-aligned box `x ∈ [−width/2, width/2]`, `y ∈ [0,
/// height]`, back wall at `z = −depth`.
#[derive(Clone, Debug, PartialEq)]
pub struct Room {
    pub width: f64,
    pub depth: f64,
    pub height: f64,
    pub wall: [u8; 3],
    pub wall_accent: [u8; 3],
    pub wall_style: WallStyle,
    pub floor: [u8; 3],
    pub floor_accent: [u8; 3],
    pub floor_style: FloorStyle,
    pub ceiling: [u8; 3],
    /// Centre of the door in the back wall, metres.
    pub door_x: f64,
    pub door: [u8; 3],
    /// Centre of a wall shelf with books (1.55 m up), if any.
    pub shelf_x: Option<f64>,
    /// Centre of a low sideboard against the back wall, if any.
    pub sideboard_x: Option<f64>,
    /// A rug under the subject, if any.
    pub rug: Option<[u8; 3]>,
    /// Seed of the posters' and books' layout and colours (not of the noise).
    pub decor_seed: u64,
}

/// Lighting of room and subject: `ambient + diffuse · max(0, n·l)` from a
/// directional light, plus a ceiling lamp with inverse-square-like falloff.
#[derive(Clone, Debug, PartialEq)]
pub struct Light {
    /// World direction *towards* the light (normalised on use).
    pub towards_light: [f64; 3],
    pub ambient: f64,
    pub diffuse: f64,
    pub lamp: f64,
    /// Colour of the direct light (white balance).
    pub tint: [f64; 3],
}

/// The webcam: a pinhole at `(x, height, 0)` looking along `−z`, pitched
/// down by `tilt_deg`, square pixels, principal point at the centre.
#[derive(Clone, Debug, PartialEq)]
pub struct CameraSetup {
    /// Horizontal field of view, degrees.
    pub hfov_deg: f64,
    pub height: f64,
    pub tilt_deg: f64,
    pub x: f64,
}

/// Where the subject stands and where they come from.
#[derive(Clone, Debug, PartialEq)]
pub struct Staging {
    /// Distance of the spot from the camera along `−z`, metres.
    pub distance: f64,
    /// Sideways position of the spot, metres.
    pub x: f64,
    /// Walk in from the image's left (world `−x`) rather than its right.
    pub enter_from_left: bool,
}

/// Everything about a session but its timing, size and seed.
#[derive(Clone, Debug, PartialEq)]
pub struct Setup {
    pub build: Build,
    pub clothing: Clothing,
    pub room: Room,
    pub light: Light,
    pub camera: CameraSetup,
    pub staging: Staging,
}

/// Phase durations, seconds (the walks take as long as their clip window).
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    pub empty: f64,
    /// Turn from walking to facing the camera (and back, when leaving).
    pub turn: f64,
    pub stand: f64,
    pub moves: f64,
    /// Empty room between leaving and coming back.
    pub away: f64,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            empty: 1.5,
            turn: 0.6,
            stand: 1.5,
            moves: 7.0,
            away: 1.0,
        }
    }
}

/// What [`render_session`] and [`write_session`] make.
#[derive(Clone, Debug, PartialEq)]
pub struct FootageOptions {
    pub width: u32,
    pub height: u32,
    /// Video frame rate (also the BVH's and the truth's).
    pub fps: f64,
    /// Seeds the sensor noise and the small variations of the moves.
    pub seed: u64,
    /// The preset [`Self::setup`] came from (recorded in the metadata).
    pub preset: Preset,
    pub setup: Setup,
    pub timing: Timing,
    /// Keep only the first `n` frames.
    pub frames: Option<usize>,
    /// Walk out of view, come back and stand again after the moves.
    pub leave: bool,
    /// Sensor noise: standard deviation at mid grey, 8-bit levels.
    pub noise: f64,
    /// Relative darkening in the image corners.
    pub vignette: f64,
    /// 3 × 3 binomial lens blur.
    pub blur: bool,
    /// The CMU walk clip (`assets/motions/cmu_131_01_walk.bvh`).
    pub walk_clip: PathBuf,
    /// Motion capture on a Character-Creator rig (`assets/motions/cmu_cc_*.bvh`)
    /// for the `move` phase instead of the keyframed moves (the `mocap`
    /// module); at most `timing.moves` seconds of it are used.
    pub moves_clip: Option<PathBuf>,
    /// Seconds into `moves_clip` (after its T-pose frame) where the moves start.
    pub moves_start: f64,
    /// Degrees the clip's motion is turned from facing the camera (its
    /// first frame faces the camera at 0; 90 turns it to face `+x`).
    pub moves_yaw_deg: f64,
    /// File names get `_<tag>` (`session_a.mp4`); empty: none.
    pub tag: String,
    /// The `ffmpeg` program.
    pub ffmpeg: PathBuf,
    /// Recorded in the metadata (the command that made the files).
    pub command: Option<String>,
}

impl FootageOptions {
    /// 640 × 480 at 30 fps, seed 1, the preset's setup, default timing.
    pub fn new(preset: Preset) -> Self {
        Self {
            width: 640,
            height: 480,
            fps: 30.0,
            seed: 1,
            preset,
            setup: preset.setup(),
            timing: Timing::default(),
            frames: None,
            leave: false,
            noise: 2.0,
            vignette: 0.22,
            blur: true,
            walk_clip: PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../assets/motions/cmu_131_01_walk.bvh"
            )),
            moves_clip: None,
            moves_start: 0.0,
            moves_yaw_deg: 0.0,
            tag: String::new(),
            ffmpeg: PathBuf::from("ffmpeg"),
            command: None,
        }
    }

    fn validate(&self) -> Result<()> {
        let bad = |p: &'static str, v: String, m: &str| Err(VisionError::parameter(p, v, m));
        if self.width < 16 || self.height < 16 || self.width > 8192 || self.height > 8192 {
            return bad(
                "size",
                format!("{}x{}", self.width, self.height),
                "must be 16 to 8192 pixels a side",
            );
        }
        if !(self.fps.is_finite() && (1.0..=240.0).contains(&self.fps)) {
            return bad("fps", self.fps.to_string(), "must be 1 to 240");
        }
        let b = &self.setup.build;
        for (name, v) in [
            ("build.torso", b.torso),
            ("build.neck", b.neck),
            ("build.head", b.head),
            ("build.arms", b.arms),
            ("build.hands", b.hands),
            ("build.legs", b.legs),
            ("build.shoulders", b.shoulders),
            ("build.hips", b.hips),
            ("build.girth", b.girth),
            ("build.belly", b.belly),
        ] {
            if !(v.is_finite() && (0.5..=2.0).contains(&v)) {
                return bad(name, v.to_string(), "must be 0.5 to 2");
            }
        }
        if !(b.height.is_finite() && (1.0..=2.3).contains(&b.height)) {
            return bad("height", b.height.to_string(), "must be 1 to 2.3 m");
        }
        let c = &self.setup.camera;
        if !(c.hfov_deg.is_finite() && (20.0..=120.0).contains(&c.hfov_deg)) {
            return bad("hfov", c.hfov_deg.to_string(), "must be 20° to 120°");
        }
        if !(c.tilt_deg.is_finite() && c.tilt_deg.abs() <= 45.0) {
            return bad("tilt", c.tilt_deg.to_string(), "must be within ±45°");
        }
        let s = &self.setup.staging;
        let r = &self.setup.room;
        if !(s.distance.is_finite() && s.distance >= 1.0 && s.distance < r.depth - 0.5) {
            return bad(
                "distance",
                s.distance.to_string(),
                "must be at least 1 m and 0.5 m in front of the back wall",
            );
        }
        let t = &self.timing;
        for (name, v) in [
            ("timing.empty", t.empty),
            ("timing.turn", t.turn),
            ("timing.stand", t.stand),
            ("timing.moves", t.moves),
            ("timing.away", t.away),
        ] {
            if !(v.is_finite() && (0.0..=600.0).contains(&v)) {
                return bad(name, v.to_string(), "must be 0 to 600 s");
            }
        }
        if !(self.noise.is_finite() && (0.0..=50.0).contains(&self.noise)) {
            return bad("noise", self.noise.to_string(), "must be 0 to 50 levels");
        }
        if !(self.vignette.is_finite() && (0.0..=0.9).contains(&self.vignette)) {
            return bad("vignette", self.vignette.to_string(), "must be 0 to 0.9");
        }
        if self.tag.contains(['/', '\\']) {
            return bad("tag", self.tag.clone(), "must not contain path separators");
        }
        Ok(())
    }

    fn file(&self, stem: &str, ext: &str) -> String {
        if self.tag.is_empty() {
            format!("{stem}.{ext}")
        } else {
            format!("{stem}_{}.{ext}", self.tag)
        }
    }
}

impl Default for FootageOptions {
    fn default() -> Self {
        Self::new(Preset::A)
    }
}

// ---------------------------------------------------------------------------
// Phases and truth
// ---------------------------------------------------------------------------

/// The parts of a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Empty,
    WalkIn,
    Stand,
    Move,
    WalkOut,
    Away,
    WalkBack,
    StandAgain,
}

impl Phase {
    /// The name in `truth.csv` and the metadata.
    pub fn name(self) -> &'static str {
        match self {
            Self::Empty => "empty",
            Self::WalkIn => "walk_in",
            Self::Stand => "stand",
            Self::Move => "move",
            Self::WalkOut => "walk_out",
            Self::Away => "away",
            Self::WalkBack => "walk_back",
            Self::StandAgain => "stand_again",
        }
    }

    /// Is the subject in the room (drawn, with truth)?
    pub fn in_scene(self) -> bool {
        !matches!(self, Self::Empty | Self::Away)
    }
}

/// Frames `start..end` of a session are `phase`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseSpan {
    pub phase: Phase,
    pub start: usize,
    pub end: usize,
}

/// The joints written to `truth.csv`: column prefix and CMU joint name
/// (`Head` is the top of the neck, `Head_end` the crown, `Hips` the pelvis
/// root; `*Hip` are the hip joints).
pub const TRUTH_JOINTS: [(&str, &str); 20] = [
    ("head", "Head"),
    ("head_top", "Head_end"),
    ("neck", "Neck"),
    ("pelvis", "Hips"),
    ("right_shoulder", "RightShoulder"),
    ("right_elbow", "RightElbow"),
    ("right_wrist", "RightWrist"),
    ("right_hip", "RightHip"),
    ("right_knee", "RightKnee"),
    ("right_ankle", "RightAnkle"),
    ("right_toe", "RightToe"),
    ("left_shoulder", "LeftShoulder"),
    ("left_elbow", "LeftElbow"),
    ("left_wrist", "LeftWrist"),
    ("left_hip", "LeftHip"),
    ("left_knee", "LeftKnee"),
    ("left_ankle", "LeftAnkle"),
    ("left_toe", "LeftToe"),
    ("right_hand", "RFingers_end"),
    ("left_hand", "LFingers_end"),
];

/// Ground truth of one frame.
#[derive(Clone, Debug, PartialEq)]
pub struct TruthRow {
    pub frame: usize,
    /// Seconds (`frame / fps`).
    pub time: f64,
    pub phase: Phase,
    /// Some body pixel is in the image.
    pub present: bool,
    /// Pixels whose centre ray hits the body.
    pub body_pixels: usize,
    /// World positions of [`TRUTH_JOINTS`] (`None` while nobody is in the room).
    pub joints: Option<Vec<[f64; 3]>>,
    /// Their projections `(u, v)` in continuous pixel coordinates (pixel
    /// `(x, y)` covers `[x, x+1) × [y, y+1)`); `None` behind the camera.
    pub pixels: Option<Vec<Option<[f64; 2]>>>,
    /// Interior angles, degrees (180 = straight): right elbow, left elbow,
    /// right knee, left knee.
    pub angles: Option<[f64; 4]>,
}

impl TruthRow {
    /// The world position of a [`TRUTH_JOINTS`] column prefix.
    pub fn joint(&self, name: &str) -> Option<[f64; 3]> {
        let k = TRUTH_JOINTS.iter().position(|(n, _)| *n == name)?;
        self.joints.as_ref().map(|j| j[k])
    }

    /// The pixel projection of a [`TRUTH_JOINTS`] column prefix.
    pub fn pixel(&self, name: &str) -> Option<[f64; 2]> {
        let k = TRUTH_JOINTS.iter().position(|(n, _)| *n == name)?;
        self.pixels.as_ref().and_then(|p| p[k])
    }

    /// The row as `truth.csv` writes it (see [`truth_csv_header`]).
    pub fn csv_line(&self) -> String {
        let mut s = format!(
            "{},{:.4},{},{},{}",
            self.frame,
            self.time,
            self.phase.name(),
            u8::from(self.present),
            self.body_pixels
        );
        for k in 0..TRUTH_JOINTS.len() {
            match (&self.joints, &self.pixels) {
                (Some(j), Some(p)) => {
                    let [x, y, z] = j[k];
                    let _ = write!(s, ",{x:.5},{y:.5},{z:.5}");
                    match p[k] {
                        Some([u, v]) => {
                            let _ = write!(s, ",{u:.2},{v:.2}");
                        }
                        None => s.push_str(",,"),
                    }
                }
                _ => s.push_str(",,,,,"),
            }
        }
        match self.angles {
            Some(a) => {
                for v in a {
                    let _ = write!(s, ",{v:.3}");
                }
            }
            None => s.push_str(",,,,"),
        }
        s
    }
}

/// The header of `truth.csv`: `frame,time,phase,present,body_px`, then
/// `<joint>_x,_y,_z` (world, metres) and `<joint>_u,_v` (pixels) for each
/// of [`TRUTH_JOINTS`], then `right_elbow_deg,left_elbow_deg,
/// right_knee_deg,left_knee_deg`.
pub fn truth_csv_header() -> String {
    let mut s = String::from("frame,time,phase,present,body_px");
    for (n, _) in TRUTH_JOINTS {
        let _ = write!(s, ",{n}_x,{n}_y,{n}_z,{n}_u,{n}_v");
    }
    s.push_str(",right_elbow_deg,left_elbow_deg,right_knee_deg,left_knee_deg");
    s
}

/// Interior angle at `b` between `a − b` and `c − b`, degrees.
pub fn interior_angle_deg(a: [f64; 3], b: [f64; 3], c: [f64; 3]) -> f64 {
    let u = Vector3::from(a) - Vector3::from(b);
    let v = Vector3::from(c) - Vector3::from(b);
    let cos = u.dot(&v) / (u.norm() * v.norm()).max(1e-12);
    cos.clamp(-1.0, 1.0).acos().to_degrees()
}

// ---------------------------------------------------------------------------
// The subject: a proportioned CMU skeleton
// ---------------------------------------------------------------------------

/// Joint indices of one side (0 = right, 1 = left).
#[derive(Clone, Copy, Debug)]
struct Side {
    shoulder: usize,
    elbow: usize,
    wrist: usize,
    hand: usize,
    thumb_end: usize,
    hip: usize,
    knee: usize,
    ankle: usize,
    toe: usize,
    toe_end: usize,
}

#[derive(Clone, Copy, Debug)]
struct Ids {
    hips: usize,
    chest: usize,
    chest2: usize,
    neck: usize,
    head: usize,
    head_end: usize,
    side: [Side; 2],
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Role {
    Root,
    Spine(f64),
    Neck,
    Head,
    Upper(usize),
    Fore(usize),
    Thigh(usize),
    Shank(usize),
    Foot(usize),
    Follow,
}

/// Outward sign of side `s` along the body's `x` (its left).
fn outward(s: usize) -> f64 {
    if s == 0 { -1.0 } else { 1.0 }
}

#[derive(Clone, Debug)]
struct Subject {
    skeleton: Skeleton,
    ids: Ids,
    roles: Vec<Role>,
    /// Unit bone direction of the segment each aimed joint carries, in its frame.
    bone: Vec<Vector3<f64>>,
    /// Ankle height above the floor when standing, metres.
    ankle_height: f64,
    thigh: f64,
    shank: f64,
    /// Leg length relative to the CMU clip's.
    leg_ratio: f64,
    /// Linear size of the drawn body relative to 1.75 m.
    size: f64,
}

fn find(skel: &Skeleton, name: &str) -> Result<usize> {
    Ok(skel.find(name)?)
}

impl Subject {
    fn new(cmu: &Skeleton, build: &Build) -> Result<Self> {
        let unit = Self::proportioned(cmu, build, 1.0)?;
        let stand = unit.stand_spec(Vector3::zeros(), 0.0);
        let pose = unit.pose_from_spec(&stand, &unit.skeleton.rest_pose());
        let world = unit.skeleton.forward_kinematics(&pose)?;
        let top = world[unit.ids.head_end].translation.y + 0.012;
        let scale = build.height / top;
        let mut s = Self::proportioned(cmu, build, scale)?;
        let cmu_leg = |name: &str| -> Result<f64> { Ok(cmu.joint(find(cmu, name)?).offset.norm()) };
        let cmu_len = cmu_leg("LeftKnee")? + cmu_leg("LeftAnkle")?;
        s.leg_ratio = (s.thigh + s.shank) / cmu_len;
        s.size = build.height / 1.75;
        Ok(s)
    }

    fn proportioned(cmu: &Skeleton, b: &Build, k: f64) -> Result<Self> {
        let mut joints = cmu.joints().to_vec();
        for j in &mut joints {
            let o = &mut j.offset;
            match j.name.as_str() {
                "LeftHip" | "RightHip" => o.x *= b.hips,
                "LeftKnee" | "RightKnee" | "LeftAnkle" | "RightAnkle" => *o *= b.legs,
                "Chest" | "Chest2" => *o *= b.torso,
                "Neck" => *o *= b.neck,
                "Head" | "Head_end" => *o *= b.head,
                "LeftShoulder" | "RightShoulder" => {
                    o.x *= b.shoulders;
                    o.y *= b.torso;
                }
                "LeftElbow" | "RightElbow" | "LeftWrist" | "RightWrist" => *o *= b.arms,
                n if n.contains("Fingers") || n.contains("Thumb") => *o *= b.hands,
                _ => {}
            }
            *o *= k;
            j.body = None;
        }
        let skeleton = Skeleton::new(joints)?;
        let side = |p: &str, q: &str| -> Result<Side> {
            Ok(Side {
                shoulder: find(&skeleton, &format!("{p}Shoulder"))?,
                elbow: find(&skeleton, &format!("{p}Elbow"))?,
                wrist: find(&skeleton, &format!("{p}Wrist"))?,
                hand: find(&skeleton, &format!("{}hand", q.to_ascii_lowercase()))?,
                thumb_end: find(&skeleton, &format!("{q}Thumb_end"))?,
                hip: find(&skeleton, &format!("{p}Hip"))?,
                knee: find(&skeleton, &format!("{p}Knee"))?,
                ankle: find(&skeleton, &format!("{p}Ankle"))?,
                toe: find(&skeleton, &format!("{p}Toe"))?,
                toe_end: find(&skeleton, &format!("{p}Toe_end"))?,
            })
        };
        let ids = Ids {
            hips: find(&skeleton, "Hips")?,
            chest: find(&skeleton, "Chest")?,
            chest2: find(&skeleton, "Chest2")?,
            neck: find(&skeleton, "Neck")?,
            head: find(&skeleton, "Head")?,
            head_end: find(&skeleton, "Head_end")?,
            side: [side("Right", "R")?, side("Left", "L")?],
        };
        if ids.hips != 0 {
            return Err(VisionError::parameter(
                "walk clip",
                "root",
                "the root joint must be Hips (CMU hierarchy)",
            ));
        }
        let lowerback = find(&skeleton, "lowerback")?;
        let mut roles = vec![Role::Follow; skeleton.len()];
        let mut bone = vec![Vector3::y(); skeleton.len()];
        roles[0] = Role::Root;
        roles[lowerback] = Role::Spine(1.0 / 3.0);
        roles[ids.chest] = Role::Spine(2.0 / 3.0);
        roles[ids.chest2] = Role::Spine(1.0);
        roles[ids.neck] = Role::Neck;
        roles[ids.head] = Role::Head;
        let dir = |child: usize| skeleton.joint(child).offset.normalize();
        for (s, l) in ids.side.iter().enumerate() {
            roles[l.shoulder] = Role::Upper(s);
            bone[l.shoulder] = dir(l.elbow);
            roles[l.elbow] = Role::Fore(s);
            bone[l.elbow] = dir(l.wrist);
            roles[l.hip] = Role::Thigh(s);
            bone[l.hip] = dir(l.knee);
            roles[l.knee] = Role::Shank(s);
            bone[l.knee] = dir(l.ankle);
            roles[l.ankle] = Role::Foot(s);
        }
        let l = ids.side[1];
        let thigh = skeleton.joint(l.knee).offset.norm();
        let shank = skeleton.joint(l.ankle).offset.norm();
        Ok(Self {
            skeleton,
            ids,
            roles,
            bone,
            ankle_height: 0.075 * k,
            thigh,
            shank,
            leg_ratio: 1.0,
            size: 1.0,
        })
    }

    /// Offset of side `s`'s hip joint from the root, root frame.
    fn hip_offset(&self, s: usize) -> Vector3<f64> {
        let hip = self.ids.side[s].hip;
        let parent = self.skeleton.joint(hip).parent.unwrap_or(0);
        self.skeleton.joint(parent).offset + self.skeleton.joint(hip).offset
    }

    /// Standing upright at `spot` (x, z; y ignored) facing `yaw`, arms down
    /// 10° from the body, feet under the hips, knees almost straight.
    fn stand_spec(&self, spot: Vector3<f64>, yaw: f64) -> PoseSpec {
        let ry = yaw_rot(yaw);
        let reach = 0.998 * (self.thigh + self.shank);
        let mut ankles = [Vector3::zeros(); 2];
        let mut drop = 0.0;
        for (s, ankle) in ankles.iter_mut().enumerate() {
            let h = self.hip_offset(s);
            let side = Vector3::new(h.x + outward(s) * 0.02 * self.size, 0.0, h.z - 0.01);
            let vertical = (reach * reach - 0.02f64.powi(2)).sqrt();
            drop = vertical - h.y;
            *ankle = spot + ry * side;
            ankle.y = self.ankle_height;
        }
        let root = Vector3::new(spot.x, self.ankle_height + drop, spot.z);
        PoseSpec {
            root,
            yaw,
            pelvis_roll: 0.0,
            chest_yaw: 0.0,
            chest_pitch: 0.0,
            chest_roll: 0.0,
            head_yaw: 0.0,
            head_pitch: 0.0,
            upper: [arm_dir(0, ARMS_DOWN.0), arm_dir(1, ARMS_DOWN.0)],
            fore: [arm_dir(0, ARMS_DOWN.1), arm_dir(1, ARMS_DOWN.1)],
            ankles,
            foot_yaw: [yaw; 2],
        }
    }

    /// The pose parameters of `spec`, Euler angles continuous with `prev`.
    fn pose_from_spec(&self, spec: &PoseSpec, prev: &[f64]) -> Vec<f64> {
        let skel = &self.skeleton;
        let n = skel.len();
        let mut rot = vec![UnitQuaternion::identity(); n];
        let mut pos = vec![Vector3::zeros(); n];
        let mut params = prev.to_vec();
        let r0 = yaw_rot(spec.yaw) * axis_rot(Vector3::z_axis(), spec.pelvis_roll);
        let chest = yaw_rot(spec.yaw + spec.chest_yaw)
            * axis_rot(Vector3::x_axis(), spec.chest_pitch)
            * axis_rot(Vector3::z_axis(), spec.chest_roll);
        let head = axis_rot(Vector3::y_axis(), spec.head_yaw)
            * axis_rot(Vector3::x_axis(), spec.head_pitch);
        let half_head = UnitQuaternion::identity().slerp(&head, 0.5);
        let pole = yaw_rot(spec.yaw) * Vector3::z();
        let mut shank_dir = [Vector3::y(); 2];
        for j in 0..n {
            let joint = skel.joint(j);
            let (prot, ppos) = match joint.parent {
                Some(p) => (rot[p], pos[p]),
                None => (UnitQuaternion::identity(), Vector3::zeros()),
            };
            pos[j] = if j == 0 {
                spec.root
            } else {
                ppos + prot * joint.offset
            };
            rot[j] = match self.roles[j] {
                Role::Root => r0,
                Role::Spine(f) => slerp(&r0, &chest, f),
                Role::Neck => chest * half_head,
                Role::Head => chest * head,
                Role::Upper(s) => aim(&prot, &self.bone[j], &(chest * spec.upper[s])),
                Role::Fore(s) => aim(&prot, &self.bone[j], &(chest * spec.fore[s])),
                Role::Thigh(s) => {
                    let (d1, d2) =
                        two_bone(&pos[j], &spec.ankles[s], self.thigh, self.shank, &pole);
                    shank_dir[s] = d2;
                    aim(&prot, &self.bone[j], &d1)
                }
                Role::Shank(s) => aim(&prot, &self.bone[j], &shank_dir[s]),
                Role::Foot(s) => yaw_rot(spec.foot_yaw[s]),
                Role::Follow => prot,
            };
            let range = skel.param_range(j);
            if j == 0 {
                params[range.start..range.start + 3].copy_from_slice(spec.root.as_slice());
            }
            let local = prot.inverse() * rot[j];
            joint.kind.set_rotation(&local, &mut params[range]);
        }
        params
    }
}

/// Rotation about the vertical by `yaw` (0 faces `+z`, π/2 faces `+x`).
fn yaw_rot(yaw: f64) -> UnitQuaternion<f64> {
    UnitQuaternion::from_axis_angle(&Vector3::y_axis(), yaw)
}

fn axis_rot(axis: nalgebra::Unit<Vector3<f64>>, angle: f64) -> UnitQuaternion<f64> {
    UnitQuaternion::from_axis_angle(&axis, angle)
}

fn slerp(a: &UnitQuaternion<f64>, b: &UnitQuaternion<f64>, t: f64) -> UnitQuaternion<f64> {
    a.try_slerp(b, t, 1e-12)
        .unwrap_or(if t < 0.5 { *a } else { *b })
}

/// `reference` turned by the shortest rotation that takes the bone
/// (`bone`, in the joint's frame) onto the world direction `target`.
fn aim(
    reference: &UnitQuaternion<f64>,
    bone: &Vector3<f64>,
    target: &Vector3<f64>,
) -> UnitQuaternion<f64> {
    let from = reference * bone;
    let swing = UnitQuaternion::rotation_between(&from, target).unwrap_or_else(|| {
        // Opposite directions: half a turn about any perpendicular axis.
        let axis = from
            .cross(&Vector3::z())
            .try_normalize(1e-9)
            .unwrap_or(Vector3::x());
        UnitQuaternion::from_axis_angle(&nalgebra::Unit::new_normalize(axis), std::f64::consts::PI)
    });
    swing * reference
}

/// Two-bone IK: unit directions of the upper and lower bone from `root`
/// towards `target`, the middle joint bending towards `pole`.
fn two_bone(
    root: &Vector3<f64>,
    target: &Vector3<f64>,
    l1: f64,
    l2: f64,
    pole: &Vector3<f64>,
) -> (Vector3<f64>, Vector3<f64>) {
    let v = target - root;
    let dist = v.norm().max(1e-9);
    let dir = v / dist;
    let d = dist.clamp((l1 - l2).abs() + 1e-6, l1 + l2 - 1e-6);
    let cos_a = ((l1 * l1 + d * d - l2 * l2) / (2.0 * l1 * d)).clamp(-1.0, 1.0);
    let sin_a = (1.0 - cos_a * cos_a).sqrt();
    let perp = (pole - dir * dir.dot(pole))
        .try_normalize(1e-9)
        .unwrap_or_else(|| dir.cross(&Vector3::x()).normalize());
    let knee = root + (dir * cos_a + perp * sin_a) * l1;
    let end = root + dir * d;
    (
        (knee - root) / l1,
        (end - knee).try_normalize(1e-12).unwrap_or(dir),
    )
}

/// Per-joint slerp (translations: lerp) between two poses, written into a
/// copy of `a` so Euler angles stay continuous with it.
fn blend_pose(skel: &Skeleton, a: &[f64], b: &[f64], t: f64) -> Vec<f64> {
    let mut out = a.to_vec();
    for (j, joint) in skel.joints().iter().enumerate() {
        let r = skel.param_range(j);
        if r.is_empty() {
            continue;
        }
        if let (Some(qa), Some(qb)) = (
            joint.kind.rotation(&a[r.clone()]),
            joint.kind.rotation(&b[r.clone()]),
        ) {
            let q = slerp(&qa, &qb, t);
            if matches!(joint.kind, skeleton::JointKind::Free { .. }) {
                for k in 0..3 {
                    out[r.start + k] = a[r.start + k] + (b[r.start + k] - a[r.start + k]) * t;
                }
            }
            joint.kind.set_rotation(&q, &mut out[r]);
        }
    }
    out
}

fn smoothstep(x: f64) -> f64 {
    let x = x.clamp(0.0, 1.0);
    x * x * (3.0 - 2.0 * x)
}

// ---------------------------------------------------------------------------
// Motion: walks and keyframed moves
// ---------------------------------------------------------------------------

/// The posing targets of a frame (world frame unless said otherwise).
#[derive(Clone, Debug)]
struct PoseSpec {
    root: Vector3<f64>,
    yaw: f64,
    pelvis_roll: f64,
    chest_yaw: f64,
    chest_pitch: f64,
    chest_roll: f64,
    head_yaw: f64,
    head_pitch: f64,
    /// Upper-arm and forearm directions in the chest frame (x = subject's left).
    upper: [Vector3<f64>; 2],
    fore: [Vector3<f64>; 2],
    ankles: [Vector3<f64>; 2],
    foot_yaw: [f64; 2],
}

/// An arm pose: upper-arm and forearm directions as (outward, up, forward).
type ArmKey = ([f64; 3], [f64; 3]);

const ARMS_DOWN: ArmKey = ([0.1736, -0.9848, 0.0], [0.1736, -0.9848, 0.04]);
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
fn arm_dir(s: usize, v: [f64; 3]) -> Vector3<f64> {
    Vector3::new(outward(s) * v[0], v[1], v[2]).normalize()
}

/// A keyframe of the `move` phase; `t` is a fraction of the phase.
#[derive(Clone, Debug)]
struct Key {
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
fn move_keys() -> Vec<Key> {
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
fn jitter_keys(keys: &mut [Key], seed: u64) {
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
fn move_spec(subject: &Subject, stand: &PoseSpec, keys: &[Key], duration: f64, t: f64) -> PoseSpec {
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

/// A gait cycle of the walk clip: frames `start..start + len` (the pose at
/// `start + len` is close to the one at `start`), the root's horizontal
/// advance over it, and the mean forward angle of each thigh.
#[derive(Clone, Debug)]
struct Cycle {
    start: usize,
    len: usize,
    advance: Vector3<f64>,
    thigh_mean: [f64; 2],
}

/// Frames of CMU 131_01 searched for a gait cycle: steady walking, before
/// the clip's kick and gestures (≈ 700 on).
const CYCLE_SEARCH: (usize, usize) = (545, 700);

/// Forward angle (rad) of side `s`'s thigh in the pelvis frame of `pose`.
fn thigh_angle(clip: &Bvh, ids: &Ids, s: usize, pose: &[f64]) -> f64 {
    let skel = &clip.skeleton;
    let hip = ids.side[s].hip;
    let parent = skel.joint(hip).parent.unwrap_or(0);
    let rot = |j: usize| {
        skel.joint(j)
            .kind
            .rotation(&pose[skel.param_range(j)])
            .unwrap_or_default()
    };
    let bone = skel.joint(ids.side[s].knee).offset.normalize();
    let d = rot(parent) * rot(hip) * bone;
    d.z.atan2(-d.y)
}

/// Finds the gait cycle whose end pose is closest to its start pose
/// (squared joint-rotation angles plus root height), 0.8–1.3 s long.
fn find_cycle(clip: &Bvh, ids: &Ids) -> Result<Cycle> {
    let skel = &clip.skeleton;
    let hz = 1.0 / clip.frame_time;
    let (lo, hi) = CYCLE_SEARCH;
    if clip.frames.len() <= hi {
        return Err(VisionError::parameter(
            "walk clip",
            clip.frames.len(),
            format!("too short: the gait cycle is searched in frames {lo}..{hi} (CMU 131_01)"),
        ));
    }
    let quats: Vec<Vec<UnitQuaternion<f64>>> = (lo..=hi)
        .map(|f| {
            let p = clip.frames.pose(f);
            (1..skel.len())
                .map(|j| {
                    skel.joint(j)
                        .kind
                        .rotation(&p[skel.param_range(j)])
                        .unwrap_or_default()
                })
                .collect()
        })
        .collect();
    let (min_len, max_len) = ((0.8 * hz) as usize, (1.3 * hz) as usize);
    let mut best = (f64::INFINITY, lo, min_len);
    for a in lo..=hi {
        for len in min_len..=max_len {
            let b = a + len;
            if b > hi {
                break;
            }
            let (qa, qb) = (&quats[a - lo], &quats[b - lo]);
            let mut cost: f64 = qa.iter().zip(qb).map(|(x, y)| x.angle_to(y).powi(2)).sum();
            let dy = clip.frames.pose(a)[1] - clip.frames.pose(b)[1];
            cost += 100.0 * dy * dy;
            if cost < best.0 {
                best = (cost, a, len);
            }
        }
    }
    let (_, start, len) = best;
    let root = |f: usize| {
        let p = clip.frames.pose(f);
        Vector3::new(p[0], 0.0, p[2])
    };
    let mut thigh_mean = [0.0; 2];
    for (s, m) in thigh_mean.iter_mut().enumerate() {
        *m = (start..start + len)
            .map(|f| thigh_angle(clip, ids, s, clip.frames.pose(f)))
            .sum::<f64>()
            / len as f64;
    }
    Ok(Cycle {
        start,
        len,
        advance: root(start + len) - root(start),
        thigh_mean,
    })
}

/// The clip's gait cycle looped, turned to walk along `±x`, scaled by the
/// leg length, lifted onto the floor, with swinging arms.
struct Walk<'a> {
    clip: &'a Bvh,
    cycle: &'a Cycle,
    clip_ids: &'a Ids,
    yaw: f64,
    /// Walk time (s) whose root lands on `anchor`.
    anchor_time: f64,
    anchor: Vector3<f64>,
    leg_ratio: f64,
    lift: f64,
    /// The standing pose's local rotations of collar, shoulder and elbow.
    arm_rest: [[UnitQuaternion<f64>; 3]; 2],
    arm_joints: [[usize; 3]; 2],
}

impl<'a> Walk<'a> {
    fn new(
        clip: &'a Bvh,
        cycle: &'a Cycle,
        clip_ids: &'a Ids,
        subject: &Subject,
        stand_pose: &[f64],
        towards_plus_x: bool,
        (anchor_time, anchor): (f64, Vector3<f64>),
    ) -> Result<Self> {
        let heading = cycle.advance.x.atan2(cycle.advance.z);
        let want = if towards_plus_x {
            std::f64::consts::FRAC_PI_2
        } else {
            -std::f64::consts::FRAC_PI_2
        };
        let skel = &subject.skeleton;
        let local = |j: usize| {
            skel.joint(j)
                .kind
                .rotation(&stand_pose[skel.param_range(j)])
                .unwrap_or_default()
        };
        let mut arm_joints = [[0; 3]; 2];
        let mut arm_rest = [[UnitQuaternion::identity(); 3]; 2];
        for s in 0..2 {
            let l = &subject.ids.side[s];
            let collar = skel.joint(l.shoulder).parent.unwrap_or(0);
            arm_joints[s] = [collar, l.shoulder, l.elbow];
            arm_rest[s] = [local(collar), local(l.shoulder), local(l.elbow)];
        }
        let mut walk = Self {
            clip,
            cycle,
            clip_ids,
            yaw: want - heading,
            anchor_time,
            anchor,
            leg_ratio: subject.leg_ratio,
            lift: 0.0,
            arm_rest,
            arm_joints,
        };
        // Lift so that the lowest ankle over a cycle is at ankle height.
        let mut lowest = f64::INFINITY;
        let period = cycle.len as f64 * clip.frame_time;
        for i in 0..24 {
            let pose = walk.pose(i as f64 / 24.0 * period);
            let w = subject.skeleton.forward_kinematics(&pose)?;
            for side in &subject.ids.side {
                lowest = lowest.min(w[side.ankle].translation.y);
            }
        }
        walk.lift = subject.ankle_height - lowest;
        Ok(walk)
    }

    /// Metres a second along the path.
    fn speed(&self) -> f64 {
        self.cycle.advance.norm() * self.leg_ratio / (self.cycle.len as f64 * self.clip.frame_time)
    }

    /// Clip pose at `time` seconds into the looped cycle, and the root's
    /// unrolled horizontal position (clip frame).
    fn clip_pose(&self, time: f64) -> (Vec<f64>, Vector3<f64>) {
        let c = self.cycle;
        let f = (time / self.clip.frame_time).max(0.0);
        let laps = (f / c.len as f64).floor();
        let r = f - laps * c.len as f64;
        let i = c.start + (r.floor() as usize).min(c.len - 1);
        let pose = blend_pose(
            &self.clip.skeleton,
            self.clip.frames.pose(i),
            self.clip.frames.pose(i + 1),
            r - r.floor(),
        );
        let start = self.clip.frames.pose(c.start);
        let rel = Vector3::new(pose[0] - start[0], 0.0, pose[2] - start[2]) + c.advance * laps;
        (pose, rel)
    }

    /// The subject's pose at `time` seconds of walking.
    fn pose(&self, time: f64) -> Vec<f64> {
        let (mut pose, rel) = self.clip_pose(time);
        let (_, rel_anchor) = self.clip_pose(self.anchor_time);
        let r = yaw_rot(self.yaw);
        let placed = self.anchor + r * (rel - rel_anchor) * self.leg_ratio;
        let y = pose[1] * self.leg_ratio + self.lift;
        pose[..3].copy_from_slice(&[placed.x, y, placed.z]);
        let skel = &self.clip.skeleton;
        let root = &skel.joint(0).kind;
        let q = root.rotation(&pose[..6]).unwrap_or_default();
        root.set_rotation(&(r * q), &mut pose[..6]);
        // The clip's arms are stylised: swing them from the standing pose
        // against the thigh of the same side instead.
        for s in 0..2 {
            let thigh = thigh_angle(self.clip, self.clip_ids, s, &pose) - self.cycle.thigh_mean[s];
            let swing = 0.8 * thigh;
            let bend = 0.25 + 0.35 * (-swing).max(0.0);
            let [collar, shoulder, elbow] = self.arm_joints[s];
            let [qc, qs, qe] = self.arm_rest[s];
            let qs = axis_rot(Vector3::x_axis(), swing) * qs;
            let qe = axis_rot(Vector3::x_axis(), -bend) * qe;
            for (j, q) in [(collar, qc), (shoulder, qs), (elbow, qe)] {
                skel.joint(j)
                    .kind
                    .set_rotation(&q, &mut pose[skel.param_range(j)]);
            }
        }
        pose
    }
}

/// Every frame's pose and phase.
struct Plan {
    poses: Vec<Vec<f64>>,
    phases: Vec<PhaseSpan>,
}

/// Seconds from the stand into a motion-capture clip's first pose.
const MOCAP_BLEND: f64 = 0.6;

/// Metres the walk-in ends short of the spot (the stop covers them).
const APPROACH: f64 = 0.3;

fn plan(
    options: &FootageOptions,
    subject: &Subject,
    clip: &Bvh,
    mocap: Option<&mocap::MocapMoves>,
) -> Result<Plan> {
    let fps = options.fps;
    let t = &options.timing;
    let st = &options.setup.staging;
    let cam = &options.setup.camera;
    let frames_of = |s: f64| (s * fps).round() as usize;
    let spot = Vector3::new(st.x, 0.0, -st.distance);
    let stand = subject.stand_spec(spot, 0.0);
    let rest = subject.skeleton.rest_pose();
    let stand_pose = subject.pose_from_spec(&stand, &rest);
    let clip_ids = Subject::proportioned(&clip.skeleton, &Build::default(), 1.0)?.ids;
    let cycle = find_cycle(clip, &clip_ids)?;
    // Where the subject is out of view at the spot's depth (half a metre
    // beyond the image's edge, wider for a tilted camera).
    let half_view = st.distance * (0.5 * cam.hfov_deg.to_radians()).tan() + 0.9;
    let edge = |plus_x: bool| {
        if plus_x {
            cam.x + half_view
        } else {
            cam.x - half_view
        }
    };
    let mut poses: Vec<Vec<f64>> = Vec::new();
    let mut phases = Vec::new();
    let mut push = |phase: Phase, list: Vec<Vec<f64>>, poses: &mut Vec<Vec<f64>>| {
        let start = poses.len();
        poses.extend(list);
        phases.push(PhaseSpan {
            phase,
            start,
            end: poses.len(),
        });
    };

    // Walk in from one side, stop and turn to the camera.
    let walk_in = |from_left: bool| -> Result<Vec<Vec<f64>>> {
        let dir = if from_left { 1.0 } else { -1.0 };
        let distance = ((st.x - edge(!from_left)) * dir - APPROACH).max(0.5);
        let end = spot - Vector3::x() * dir * APPROACH;
        let probe = Walk::new(
            clip,
            &cycle,
            &clip_ids,
            subject,
            &stand_pose,
            from_left,
            (0.0, end),
        )?;
        let duration = distance / probe.speed();
        let walk = Walk {
            anchor_time: duration,
            ..probe
        };
        let n = frames_of(duration).max(2);
        let mut list: Vec<Vec<f64>> = (0..n)
            .map(|i| walk.pose(duration * i as f64 / (n - 1) as f64))
            .collect();
        let last = list[n - 1].clone();
        let turn = frames_of(t.turn).max(1);
        for i in 0..turn {
            let u = smoothstep((i + 1) as f64 / turn as f64);
            list.push(blend_pose(&subject.skeleton, &last, &stand_pose, u));
        }
        Ok(list)
    };
    let entering = walk_in(st.enter_from_left)?;
    push(
        Phase::Empty,
        vec![entering[0].clone(); frames_of(t.empty)],
        &mut poses,
    );
    push(Phase::WalkIn, entering, &mut poses);
    push(
        Phase::Stand,
        vec![stand_pose.clone(); frames_of(t.stand)],
        &mut poses,
    );
    let mut moves = Vec::new();
    let mut prev = stand_pose.clone();
    if let Some(m) = mocap {
        // From the stand into the clip's first pose, then the clip.
        let first = subject.pose_from_spec(&m.spec(subject, &stand, 0.0), &prev);
        let blend = frames_of(MOCAP_BLEND).max(1);
        for i in 0..blend {
            let u = smoothstep((i + 1) as f64 / blend as f64);
            moves.push(blend_pose(&subject.skeleton, &stand_pose, &first, u));
        }
        prev = first;
        let n = frames_of(t.moves.min(m.duration()));
        for i in 0..n {
            prev = subject.pose_from_spec(&m.spec(subject, &stand, i as f64 / fps), &prev);
            moves.push(prev.clone());
        }
    } else {
        let mut keys = move_keys();
        jitter_keys(&mut keys, options.seed);
        let n_moves = frames_of(t.moves);
        moves.reserve(n_moves);
        for i in 0..n_moves {
            let spec = move_spec(subject, &stand, &keys, t.moves, (i + 1) as f64 / fps);
            prev = subject.pose_from_spec(&spec, &prev);
            moves.push(prev.clone());
        }
    }
    push(Phase::Move, moves, &mut poses);
    if options.leave {
        // Out towards the side opposite the entry, back from there.
        let out_plus_x = st.enter_from_left;
        let dir = if out_plus_x { 1.0 } else { -1.0 };
        let start = spot + Vector3::x() * dir * 0.1;
        let walk = Walk::new(
            clip,
            &cycle,
            &clip_ids,
            subject,
            &stand_pose,
            out_plus_x,
            (0.0, start),
        )?;
        let first = walk.pose(0.0);
        let from = poses.last().cloned().unwrap_or_else(|| stand_pose.clone());
        let mut list = Vec::new();
        let turn = frames_of(t.turn).max(1);
        for i in 0..turn {
            let u = smoothstep((i + 1) as f64 / turn as f64);
            list.push(blend_pose(&subject.skeleton, &from, &first, u));
        }
        let distance = (edge(out_plus_x) - start.x) * dir;
        let duration = distance / walk.speed();
        let n = frames_of(duration).max(2);
        list.extend((1..n).map(|i| walk.pose(duration * i as f64 / (n - 1) as f64)));
        let gone = list.last().cloned().unwrap_or_default();
        push(Phase::WalkOut, list, &mut poses);
        push(Phase::Away, vec![gone; frames_of(t.away)], &mut poses);
        push(Phase::WalkBack, walk_in(!out_plus_x)?, &mut poses);
        push(
            Phase::StandAgain,
            vec![stand_pose; frames_of(t.stand)],
            &mut poses,
        );
    }
    if let Some(n) = options.frames {
        poses.truncate(n);
        phases.retain(|p| p.start < n);
        for p in &mut phases {
            p.end = p.end.min(n);
        }
    }
    phases.retain(|p| p.end > p.start);
    if poses.is_empty() {
        return Err(VisionError::parameter(
            "frames",
            options.frames.unwrap_or(0),
            "the session has no frames",
        ));
    }
    Ok(Plan { poses, phases })
}

// ---------------------------------------------------------------------------
// Signed distance primitives
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mat {
    Skin,
    Hair,
    /// The shirt's body (stripes apply).
    Shirt,
    Sleeve,
    Trousers,
    Shoe,
    Eye,
    Sock,
}

#[derive(Clone, Copy, Debug)]
enum Shape {
    Ellipsoid(V3),
    /// From the local origin (radius `r1`) along `+y` to height `h` (`r2`);
    /// `b, a` are its slope constants.
    RoundCone {
        r1: f32,
        r2: f32,
        h: f32,
        a: f32,
        b: f32,
    },
    RoundBox {
        half: V3,
        round: f32,
    },
}

/// A primitive in its own frame: `local = rot · (p − origin)`, then divided
/// by `scale` per axis before the shape's SDF.
#[derive(Clone, Copy, Debug)]
struct Prim {
    origin: V3,
    rot: M3,
    inv_scale: V3,
    lipschitz: f32,
    shape: Shape,
    /// Keep only `n · local ≤ c` (hair cap).
    cut: Option<(V3, f32)>,
    cut2: Option<(V3, f32)>,
    mat: Mat,
    centre: V3,
    radius: f32,
    /// Screen rectangle `[x0, y0, x1, y1]` (inclusive) of the bounding sphere.
    rect: [i32; 4],
}

impl Prim {
    fn new(origin: V3, rot: M3, scale: V3, shape: Shape, mat: Mat) -> Self {
        let extent = match shape {
            Shape::Ellipsoid(r) => r.component_mul(&scale).max(),
            Shape::RoundCone { r1, r2, h, .. } => 0.5 * h + r1.max(r2) * scale.max(),
            Shape::RoundBox { half, .. } => half.component_mul(&scale).norm(),
        };
        let local_centre = match shape {
            Shape::RoundCone { h, .. } => V3::new(0.0, 0.5 * h, 0.0),
            _ => V3::zeros(),
        };
        Self {
            origin,
            rot,
            inv_scale: V3::new(1.0 / scale.x, 1.0 / scale.y, 1.0 / scale.z),
            lipschitz: scale.min(),
            shape,
            cut: None,
            cut2: None,
            mat,
            centre: origin + rot.transpose() * local_centre,
            radius: extent,
            rect: [0; 4],
        }
    }

    #[inline]
    fn local(&self, p: &V3) -> V3 {
        self.rot * (p - self.origin)
    }

    #[inline]
    fn dist(&self, p: &V3) -> f32 {
        let l = self.local(p);
        let q = l.component_mul(&self.inv_scale);
        let mut d = match self.shape {
            Shape::Ellipsoid(r) => {
                let k0 = V3::new(q.x / r.x, q.y / r.y, q.z / r.z).norm();
                let k1 = V3::new(q.x / (r.x * r.x), q.y / (r.y * r.y), q.z / (r.z * r.z)).norm();
                if k1 < 1e-9 {
                    -r.min()
                } else {
                    k0 * (k0 - 1.0) / k1
                }
            }
            Shape::RoundCone { r1, r2, h, a, b } => {
                let qx = (q.x * q.x + q.z * q.z).sqrt();
                let qy = q.y;
                let k = -b * qx + a * qy;
                if k < 0.0 {
                    (qx * qx + qy * qy).sqrt() - r1
                } else if k > a * h {
                    (qx * qx + (qy - h) * (qy - h)).sqrt() - r2
                } else {
                    qx * a + qy * b - r1
                }
            }
            Shape::RoundBox { half, round } => {
                let e = q.abs() - half + V3::repeat(round);
                let outside = V3::new(e.x.max(0.0), e.y.max(0.0), e.z.max(0.0)).norm();
                outside + e.x.max(e.y.max(e.z)).min(0.0) - round
            }
        } * self.lipschitz;
        if let Some((n, c)) = self.cut {
            d = d.max(n.dot(&l) - c);
        }
        if let Some((n, c)) = self.cut2 {
            d = d.max(n.dot(&l) - c);
        }
        d
    }
}

/// Rows of a rotation taking world to a frame whose `y` is `axis` and whose
/// `x` is as close to `xref` as possible.
fn frame_y(axis: V3, xref: V3) -> M3 {
    let y = axis.try_normalize(1e-9).unwrap_or(V3::y());
    let mut x = xref - y * y.dot(&xref);
    if x.norm() < 1e-4 {
        x = if y.x.abs() < 0.9 { V3::x() } else { V3::z() };
        x -= y * y.dot(&x);
    }
    let x = x.normalize();
    let z = x.cross(&y);
    M3::from_rows(&[x.transpose(), y.transpose(), z.transpose()])
}

/// World → local rows of a quaternion's frame.
fn frame_q(q: &UnitQuaternion<f64>) -> M3 {
    let m = q.to_rotation_matrix().into_inner().transpose();
    m.cast::<f32>()
}

fn round_cone(a: V3, b: V3, r1: f32, r2: f32, xref: V3, aniso: (f32, f32), mat: Mat) -> Prim {
    let h = (b - a).norm();
    if h <= (r1 - r2).abs() + 1e-4 {
        let r = r1.max(r2);
        return Prim::new(
            (a + b) * 0.5,
            M3::identity(),
            V3::repeat(1.0),
            Shape::Ellipsoid(V3::repeat(r)),
            mat,
        );
    }
    let bb = (r1 - r2) / h;
    let aa = (1.0 - bb * bb).sqrt();
    Prim::new(
        a,
        frame_y(b - a, xref),
        V3::new(aniso.0, 1.0, aniso.1),
        Shape::RoundCone {
            r1,
            r2,
            h,
            a: aa,
            b: bb,
        },
        mat,
    )
}

fn ellipsoid(centre: V3, rot: M3, r: V3, mat: Mat) -> Prim {
    Prim::new(centre, rot, V3::repeat(1.0), Shape::Ellipsoid(r), mat)
}

fn v3(v: &Vector3<f64>) -> V3 {
    v.cast::<f32>()
}

/// A round cone with a flat end at `a` (`flat_a`) and/or `b` (`flat_b`).
#[allow(clippy::too_many_arguments)]
fn cut_cone(
    a: V3,
    b: V3,
    r1: f32,
    r2: f32,
    xref: V3,
    mat: Mat,
    flat_a: bool,
    flat_b: bool,
) -> Prim {
    let mut p = round_cone(a, b, r1, r2, xref, (1.0, 1.0), mat);
    if let Shape::RoundCone { h, .. } = p.shape {
        p.cut = match (flat_a, flat_b) {
            (true, false) => Some((-V3::y(), 0.0)),
            (false, true) => Some((V3::y(), h)),
            (true, true) => Some((V3::y(), h)),
            (false, false) => None,
        };
        if flat_a && flat_b {
            p.cut2 = Some((-V3::y(), 0.0));
        }
    }
    p
}

/// The body's primitives for one pose (world transforms of every joint).
fn body_prims(subject: &Subject, setup: &Setup, world: &[Isometry3<f64>]) -> Vec<Prim> {
    let ids = &subject.ids;
    let b = &setup.build;
    let cl = &setup.clothing;
    let s = subject.size as f32;
    let g = s * b.girth as f32;
    let depth = b.belly as f32;
    let p = |j: usize| v3(&world[j].translation.vector);
    let q = |j: usize| world[j].rotation;
    let axis = |j: usize, v: Vector3<f64>| v3(&(world[j].rotation * v));
    let mut prims = Vec::with_capacity(48);

    // Head: skull, chin, nose, ears, eyes, hair; neck.
    let head_rot = frame_q(&q(ids.head));
    let (hx, hy, hz) = (
        axis(ids.head, Vector3::x()),
        axis(ids.head, Vector3::y()),
        axis(ids.head, Vector3::z()),
    );
    let hs = s * (0.85 + 0.15 * b.head as f32);
    let skull_r = V3::new(0.077, 0.104, 0.097) * hs;
    let top = p(ids.head_end) + hy * 0.004;
    let skull_c = top - hy * skull_r.y + hz * 0.012 * hs;
    let at = |x: f32, y: f32, z: f32| skull_c + (hx * x + hy * y + hz * z) * hs;
    prims.push(ellipsoid(skull_c, head_rot, skull_r, Mat::Skin));
    prims.push(ellipsoid(
        at(0.0, -0.062, 0.028),
        head_rot,
        V3::new(0.056, 0.056, 0.062) * hs,
        Mat::Skin,
    ));
    prims.push(ellipsoid(
        at(0.0, -0.02, 0.094),
        head_rot,
        V3::new(0.011, 0.022, 0.016) * hs,
        Mat::Skin,
    ));
    for side in [-1.0f32, 1.0] {
        prims.push(ellipsoid(
            at(side * 0.075, -0.01, -0.004),
            head_rot,
            V3::new(0.012, 0.028, 0.018) * hs,
            Mat::Skin,
        ));
        prims.push(ellipsoid(
            at(side * 0.031, 0.008, 0.084),
            head_rot,
            V3::new(0.012, 0.007, 0.007) * hs,
            Mat::Eye,
        ));
    }
    if cl.hair_style != HairStyle::Bald {
        let mut hair = ellipsoid(
            at(0.0, 0.007, -0.006),
            head_rot,
            skull_r + V3::new(0.012, 0.011, 0.013) * hs,
            Mat::Hair,
        );
        // The cap: above a plane through the forehead sloping back down.
        hair.cut = Some((V3::new(0.0, -0.55, 0.83).normalize(), 0.035 * hs));
        prims.push(hair);
        if cl.hair_style == HairStyle::Long {
            let mut long = ellipsoid(
                at(0.0, -0.1, -0.04),
                head_rot,
                V3::new(0.088, 0.15, 0.055) * hs,
                Mat::Hair,
            );
            long.cut = Some((V3::new(0.0, 0.0, 1.0), 0.0));
            prims.push(long);
        }
    }
    let neck_base = p(ids.neck);
    let neck_top = at(0.0, -0.05, -0.012);
    prims.push(round_cone(
        neck_base - axis(ids.neck, Vector3::y()) * 0.03 * s,
        neck_top,
        0.058 * g,
        0.048 * g,
        hx,
        (1.0, 1.0),
        Mat::Skin,
    ));

    // Trunk: chest, shoulder slopes and a loose shirt body; pelvis.
    let c2 = ids.chest2;
    let (cx, cy, cz) = (
        axis(c2, Vector3::x()),
        axis(c2, Vector3::y()),
        axis(c2, Vector3::z()),
    );
    let shoulders = [p(ids.side[0].shoulder), p(ids.side[1].shoulder)];
    let half_width = 0.5 * (shoulders[1] - shoulders[0]).norm();
    let shoulder_mid = 0.5 * (shoulders[0] + shoulders[1]);
    let chest_r = V3::new(0.78 * half_width + 0.02 * g, 0.19 * s, 0.108 * g * depth);
    let chest_c = shoulder_mid - cy * 0.15 * s + cz * 0.004 * s;
    prims.push(ellipsoid(chest_c, frame_q(&q(c2)), chest_r, Mat::Shirt));
    for (k, sh) in shoulders.iter().enumerate() {
        let inward = cx * (outward(k) as f32);
        prims.push(round_cone(
            neck_base - cy * 0.035 * s - cz * 0.01 * s,
            *sh - inward * 0.01 * s - cy * 0.005 * s,
            0.054 * g,
            0.048 * g,
            cz,
            (1.0, 0.85),
            Mat::Shirt,
        ));
    }
    let hips = p(ids.hips);
    let (px, py) = (axis(ids.hips, Vector3::x()), axis(ids.hips, Vector3::y()));
    let hem = hips - py * 0.06 * s;
    let belly_top = chest_c - cy * 0.04 * s;
    let hip_w = 0.5 * (p(ids.side[1].hip) - p(ids.side[0].hip)).norm();
    // Loose: the hem clears the tops of the thighs.
    let hem_r = (0.178 * g * (b.hips as f32).sqrt()).max(hip_w + 0.095 * g);
    let mut waist = round_cone(
        hem,
        belly_top,
        hem_r,
        0.15 * g,
        px,
        (1.0, 0.72 * depth),
        Mat::Shirt,
    );
    waist.cut = Some((-V3::y(), 0.0));
    prims.push(waist);
    prims.push(ellipsoid(
        hips - py * 0.075 * s,
        frame_q(&q(ids.hips)),
        V3::new(hip_w + 0.062 * g, 0.11 * s, 0.098 * g * depth.sqrt()),
        Mat::Trousers,
    ));

    // Arms, hands, legs, shoes.
    let long = cl.sleeves == Sleeves::Long;
    for l in &ids.side {
        let sh = p(l.shoulder);
        let el = p(l.elbow);
        let wr = p(l.wrist);
        let xref = axis(l.shoulder, Vector3::z());
        let down = (el - sh).normalize();
        prims.push(ellipsoid(
            sh - cy * 0.008 * s + down * 0.005 * s,
            frame_q(&q(l.shoulder)),
            V3::new(0.05, 0.052, 0.05) * g,
            Mat::Sleeve,
        ));
        prims.push(round_cone(
            sh + down * 0.01 * s,
            el,
            0.045 * g,
            0.037 * g,
            xref,
            (1.0, 1.0),
            Mat::Skin,
        ));
        let fore_x = axis(l.elbow, Vector3::z());
        prims.push(round_cone(
            el,
            wr,
            0.037 * g,
            0.026 * g,
            fore_x,
            (1.0, 0.85),
            Mat::Skin,
        ));
        if long {
            prims.push(round_cone(
                sh + down * 0.01 * s,
                el,
                0.054 * g,
                0.046 * g,
                xref,
                (1.0, 1.0),
                Mat::Sleeve,
            ));
            let cuff = wr + (el - wr).normalize() * 0.035 * s;
            prims.push(cut_cone(
                el,
                cuff,
                0.046 * g,
                0.037 * g,
                fore_x,
                Mat::Sleeve,
                false,
                true,
            ));
        } else {
            let end = sh + (el - sh) * 0.45;
            prims.push(cut_cone(
                sh + down * 0.01 * s,
                end,
                0.055 * g,
                0.05 * g,
                xref,
                Mat::Sleeve,
                false,
                true,
            ));
        }
        // Hand: a mitten along the fingers, thumb forward.
        let hand_rot = frame_q(&q(l.hand));
        let (ax, ay, az) = (
            axis(l.hand, Vector3::x()),
            axis(l.hand, Vector3::y()),
            axis(l.hand, Vector3::z()),
        );
        let hsz = s * b.hands as f32;
        prims.push(ellipsoid(
            wr - ay * 0.075 * hsz + az * 0.004 * hsz,
            hand_rot,
            V3::new(0.022, 0.08, 0.045) * hsz,
            Mat::Skin,
        ));
        let thumb_dir = (p(l.thumb_end) - wr).try_normalize(1e-6).unwrap_or(az);
        let thumb_base = wr - ay * 0.03 * hsz + az * 0.024 * hsz;
        prims.push(round_cone(
            thumb_base,
            thumb_base + thumb_dir * 0.055 * hsz,
            0.014 * hsz,
            0.011 * hsz,
            ax,
            (1.0, 1.0),
            Mat::Skin,
        ));

        let hip = p(l.hip);
        let kn = p(l.knee);
        let an = p(l.ankle);
        let leg_x = axis(l.hip, Vector3::x());
        prims.push(round_cone(
            hip + py * 0.02 * s,
            kn,
            0.084 * g,
            0.062 * g,
            leg_x,
            (1.0, 1.0),
            Mat::Trousers,
        ));
        let hem = an + (kn - an).normalize() * 0.05 * s;
        prims.push(cut_cone(
            kn,
            hem,
            0.06 * g,
            0.053 * g,
            leg_x,
            Mat::Trousers,
            false,
            true,
        ));
        prims.push(round_cone(
            an + (kn - an).normalize() * 0.06 * s,
            an,
            0.036 * g,
            0.032 * g,
            leg_x,
            (1.0, 1.0),
            Mat::Sock,
        ));
        let toe_end = p(l.toe_end);
        // The shoe follows the ankle's frame (flat on the floor at rest).
        let fwd = axis(l.ankle, Vector3::z());
        let up = axis(l.ankle, Vector3::y());
        let side_v = up.cross(&fwd).normalize();
        let len = 0.5 * ((toe_end - an).dot(&fwd) + 0.075 * s);
        let rot = M3::from_rows(&[side_v.transpose(), up.transpose(), fwd.transpose()]);
        let sole = 0.042 * s;
        let centre = an + fwd * (len - 0.075 * s) - up * (subject.ankle_height as f32 - sole);
        prims.push(Prim::new(
            centre,
            rot,
            V3::repeat(1.0),
            Shape::RoundBox {
                half: V3::new(0.046 * s, sole, len),
                round: 0.026 * s,
            },
            Mat::Shoe,
        ));
    }
    prims
}

// ---------------------------------------------------------------------------
// Colour helpers and noise
// ---------------------------------------------------------------------------

fn srgb_to_linear(c: u8) -> f32 {
    let v = f32::from(c) / 255.0;
    if v <= 0.04045 {
        v / 12.92
    } else {
        ((v + 0.055) / 1.055).powf(2.4)
    }
}

fn lin(c: [u8; 3]) -> V3 {
    V3::new(
        srgb_to_linear(c[0]),
        srgb_to_linear(c[1]),
        srgb_to_linear(c[2]),
    )
}

/// Linear [0, 1] → sRGB [0, 255] through a table.
struct SrgbTable(Vec<f32>);

const SRGB_STEPS: usize = 8192;

impl SrgbTable {
    fn new() -> Self {
        Self(
            (0..=SRGB_STEPS)
                .map(|i| {
                    let v = i as f32 / SRGB_STEPS as f32;
                    let s = if v <= 0.003_130_8 {
                        12.92 * v
                    } else {
                        1.055 * v.powf(1.0 / 2.4) - 0.055
                    };
                    255.0 * s
                })
                .collect(),
        )
    }

    #[inline]
    fn get(&self, v: f32) -> f32 {
        let x = v.clamp(0.0, 1.0) * SRGB_STEPS as f32;
        let i = (x as usize).min(SRGB_STEPS - 1);
        let f = x - i as f32;
        self.0[i] + (self.0[i + 1] - self.0[i]) * f
    }
}

#[inline]
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// An approximately standard normal number from a hash (Irwin–Hall, 4 terms).
#[inline]
fn gauss(h: u64) -> f32 {
    let s = (h & 0xffff) + ((h >> 16) & 0xffff) + ((h >> 32) & 0xffff) + (h >> 48);
    (s as f32 / 65535.0 - 2.0) * 1.732_050_8
}

fn hash01(a: i64, b: i64, seed: u64) -> f32 {
    let h = mix64(seed ^ mix64((a as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (b as u64)));
    (h >> 40) as f32 / (1u64 << 24) as f32
}

/// Value noise in [0, 1].
fn value_noise(x: f32, y: f32, seed: u64) -> f32 {
    let (ix, iy) = (x.floor(), y.floor());
    let (fx, fy) = (x - ix, y - iy);
    let (ix, iy) = (ix as i64, iy as i64);
    let s = |t: f32| t * t * (3.0 - 2.0 * t);
    let (sx, sy) = (s(fx), s(fy));
    let a = hash01(ix, iy, seed);
    let b = hash01(ix + 1, iy, seed);
    let c = hash01(ix, iy + 1, seed);
    let d = hash01(ix + 1, iy + 1, seed);
    let top = a + (b - a) * sx;
    let bottom = c + (d - c) * sx;
    top + (bottom - top) * sy
}

fn fbm(x: f32, y: f32, seed: u64) -> f32 {
    let mut sum = 0.0;
    let mut amp = 0.5;
    let mut f = 1.0;
    for o in 0..4 {
        sum += amp * value_noise(x * f, y * f, seed.wrapping_add(o));
        amp *= 0.5;
        f *= 2.03;
    }
    sum / 0.9375
}

// ---------------------------------------------------------------------------
// The room
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
struct BoxObj {
    min: V3,
    max: V3,
    colour: V3,
    /// Wood grain along x.
    grain: bool,
}

#[derive(Clone, Copy, Debug)]
struct Poster {
    x0: f32,
    y0: f32,
    x1: f32,
    y1: f32,
    kind: u32,
    hue: u64,
}

struct Scene {
    room: Room,
    light_dir: V3,
    tint: V3,
    ambient: f32,
    diffuse: f32,
    lamp: f32,
    lamp_pos: V3,
    boxes: Vec<BoxObj>,
    posters: Vec<Poster>,
    clothing: [V3; 8],
}

const PALETTE: [[u8; 3]; 10] = [
    [180, 40, 40],
    [40, 80, 150],
    [220, 180, 60],
    [60, 130, 80],
    [230, 230, 220],
    [30, 30, 34],
    [200, 110, 40],
    [120, 60, 130],
    [90, 160, 190],
    [150, 120, 90],
];

impl Scene {
    fn new(setup: &Setup) -> Self {
        let room = setup.room.clone();
        let l = &setup.light;
        let d = -room.depth as f32;
        let seed = room.decor_seed;
        let mut boxes = Vec::new();
        let wood = lin([120, 84, 52]);
        if let Some(sx) = room.shelf_x {
            let sx = sx as f32;
            let (y0, y1) = (1.5, 1.53);
            boxes.push(BoxObj {
                min: V3::new(sx - 0.55, y0, d),
                max: V3::new(sx + 0.55, y1, d + 0.24),
                colour: wood,
                grain: true,
            });
            for bx in [sx - 0.45, sx + 0.43] {
                boxes.push(BoxObj {
                    min: V3::new(bx, y0 - 0.12, d),
                    max: V3::new(bx + 0.02, y0, d + 0.2),
                    colour: lin([60, 60, 64]),
                    grain: false,
                });
            }
            let mut x = sx - 0.52;
            let mut i = 0;
            while x < sx + 0.2 {
                let w = 0.025 + 0.035 * hash01(i, 1, seed);
                let h = 0.17 + 0.09 * hash01(i, 2, seed);
                let c =
                    PALETTE[(hash01(i, 3, seed) * PALETTE.len() as f32) as usize % PALETTE.len()];
                let depth = 0.15 + 0.05 * hash01(i, 4, seed);
                boxes.push(BoxObj {
                    min: V3::new(x, y1, d + 0.02),
                    max: V3::new(x + w, y1 + h, d + 0.02 + depth),
                    colour: lin(c) * (0.7 + 0.3 * hash01(i, 5, seed)),
                    grain: false,
                });
                x += w + 0.004;
                i += 1;
            }
            // A box and a vase on the rest of the shelf.
            boxes.push(BoxObj {
                min: V3::new(sx + 0.27, y1, d + 0.04),
                max: V3::new(sx + 0.45, y1 + 0.12, d + 0.2),
                colour: lin([200, 190, 170]),
                grain: false,
            });
        }
        if let Some(bx) = room.sideboard_x {
            let bx = bx as f32;
            boxes.push(BoxObj {
                min: V3::new(bx - 0.6, 0.0, d),
                max: V3::new(bx + 0.6, 0.72, d + 0.45),
                colour: lin([150, 112, 76]),
                grain: true,
            });
            boxes.push(BoxObj {
                min: V3::new(bx - 0.35, 0.72, d + 0.12),
                max: V3::new(bx - 0.2, 0.98, d + 0.27),
                colour: lin([70, 110, 120]),
                grain: false,
            });
            boxes.push(BoxObj {
                min: V3::new(bx + 0.15, 0.72, d + 0.08),
                max: V3::new(bx + 0.42, 0.76, d + 0.3),
                colour: lin([200, 60, 50]),
                grain: false,
            });
        }
        // Posters on the back wall, away from the door and the shelf.
        let mut posters = Vec::new();
        let half = (room.width * 0.5) as f32;
        let door = room.door_x as f32;
        let shelf = room.shelf_x.map(|x| x as f32);
        let mut candidates = vec![-1.9f32, -1.0, -0.2, 0.5, 1.2, 2.0];
        candidates.retain(|&x| {
            (x - door).abs() > 0.95
                && x.abs() < half - 0.45
                && shelf.is_none_or(|s| (x - s).abs() > 0.85)
        });
        for (i, &x) in candidates.iter().enumerate().take(3) {
            let w = 0.45 + 0.25 * hash01(i as i64, 7, seed);
            let h = w * (1.2 + 0.3 * hash01(i as i64, 8, seed));
            let y0 = 1.05 + 0.25 * hash01(i as i64, 9, seed);
            posters.push(Poster {
                x0: x - w * 0.5,
                y0,
                x1: x + w * 0.5,
                y1: y0 + h,
                kind: (i as u32 + seed as u32) % 4,
                hue: seed.wrapping_add(i as u64),
            });
        }
        let cl = &setup.clothing;
        Self {
            light_dir: v3(&Vector3::from(l.towards_light).normalize()),
            tint: v3(&Vector3::from(l.tint)),
            ambient: l.ambient as f32,
            diffuse: l.diffuse as f32,
            lamp: l.lamp as f32,
            lamp_pos: V3::new(0.0, room.height as f32 - 0.15, -(room.depth as f32) * 0.55),
            boxes,
            posters,
            clothing: [
                lin(cl.skin),
                lin(cl.hair),
                lin(cl.shirt),
                lin(cl.stripes.unwrap_or(cl.shirt)),
                lin(cl.trousers),
                lin(cl.shoes),
                lin(cl.soles),
                lin(cl.shirt),
            ],
            room,
        }
    }

    /// Irradiance factor (per channel) at `p` with normal `n`.
    fn lighting(&self, p: &V3, n: &V3) -> V3 {
        let direct = self.diffuse * n.dot(&self.light_dir).max(0.0);
        let amb = self.ambient * (0.85 + 0.15 * n.y);
        let to_lamp = self.lamp_pos - p;
        let r2 = to_lamp.norm_squared();
        let lamp = self.lamp * (n.dot(&to_lamp) / r2.sqrt()).max(0.0) * 4.0 / (2.0 + r2);
        self.tint * (direct + lamp) + V3::repeat(amb)
    }

    /// The room's linear colour along a ray, and where it meets the floor.
    fn shade(&self, o: &V3, d: &V3) -> (V3, Option<(f32, f32)>) {
        let r = &self.room;
        let (hw, depth, height) = (r.width as f32 * 0.5, r.depth as f32, r.height as f32);
        // Planes of the room box (the camera is inside).
        let mut best = (f32::INFINITY, 0u8);
        let mut consider = |t: f32, id: u8| {
            if t > 1e-4 && t < best.0 {
                best = (t, id);
            }
        };
        if d.y < 0.0 {
            consider(-o.y / d.y, 0);
        }
        if d.y > 0.0 {
            consider((height - o.y) / d.y, 1);
        }
        if d.z < 0.0 {
            consider((-depth - o.z) / d.z, 2);
        }
        if d.x < 0.0 {
            consider((-hw - o.x) / d.x, 3);
        }
        if d.x > 0.0 {
            consider((hw - o.x) / d.x, 4);
        }
        let mut hit_box = None;
        for (i, b) in self.boxes.iter().enumerate() {
            if let Some((t, n)) = ray_box(o, d, b)
                && t < best.0
            {
                best = (t, 5);
                hit_box = Some((i, n));
            }
        }
        let (t, id) = best;
        if !t.is_finite() {
            return (V3::repeat(0.1), None);
        }
        let p = o + d * t;
        let (albedo, n, floor) = match id {
            0 => (self.floor_albedo(p.x, p.z), V3::y(), Some((p.x, p.z))),
            1 => {
                let c = lin(r.ceiling) * (0.97 + 0.03 * fbm(p.x * 2.0, p.z * 2.0, 5));
                (c, -V3::y(), None)
            }
            2 => (self.back_wall_albedo(p.x, p.y), V3::z(), None),
            3 => (self.side_wall_albedo(p.z, p.y, 3), V3::x(), None),
            4 => (self.side_wall_albedo(p.z, p.y, 4), -V3::x(), None),
            _ => {
                let (i, n) = hit_box.expect("a box was hit");
                let b = &self.boxes[i];
                let mut c = b.colour;
                if b.grain {
                    let g = 0.9 + 0.1 * (p.x * 60.0 + fbm(p.x * 3.0, p.y * 40.0, 9) * 8.0).sin();
                    c *= g;
                }
                // Dark edges where door-like fronts meet.
                (c, n, None)
            }
        };
        let mut light = self.lighting(&p, &n);
        // Contact darkening near the room's edges.
        let edge = match id {
            0 => (p.z + depth).min(hw - p.x.abs()),
            2 => p.y.min(hw - p.x.abs()).min(height - p.y),
            3 | 4 => p.y.min(p.z + depth).min(height - p.y),
            1 => (p.z + depth).min(hw - p.x.abs()),
            _ => 1.0,
        };
        light *= 1.0 - 0.28 * (-edge.max(0.0) / 0.18).exp();
        (albedo.component_mul(&light), floor)
    }

    fn floor_albedo(&self, x: f32, z: f32) -> V3 {
        let r = &self.room;
        let seed = r.decor_seed;
        let (base, accent) = (lin(r.floor), lin(r.floor_accent));
        let mut c = match r.floor_style {
            FloorStyle::Wood => {
                let pw = 0.14;
                let row = (z / pw).floor();
                let fz = z / pw - row;
                let offset = hash01(row as i64, 0, seed) * 1.2;
                let plank = ((x + offset) / 1.2).floor();
                let fx = (x + offset) / 1.2 - plank;
                let v = hash01(row as i64, plank as i64, seed);
                let grain =
                    0.5 + 0.5 * ((x * 9.0 + fbm(x * 0.8, z * 14.0, seed) * 7.0) * 2.0).sin();
                let mut c = base + (accent - base) * (0.25 * v + 0.35 * grain * grain);
                if !(0.03..=0.97).contains(&fz) || fx < 0.006 {
                    c *= 0.45;
                }
                c
            }
            FloorStyle::Tiles => {
                let size = 0.4;
                let (tx, tz) = ((x / size).floor(), (z / size).floor());
                let (fx, fz) = (x / size - tx, z / size - tz);
                let v = hash01(tx as i64, tz as i64, seed);
                let mottle = fbm(x * 6.0, z * 6.0, seed + 3);
                let mut c = base * (0.93 + 0.08 * v + 0.08 * mottle);
                let g = 0.015;
                if fx < g || fx > 1.0 - g || fz < g || fz > 1.0 - g {
                    c = accent;
                }
                c
            }
        };
        if let Some(rug) = r.rug {
            let st = self.room.depth as f32;
            let (x0, x1, z0, z1) = (-1.1, 1.1, -st + 0.9, -st + 2.5);
            if (x0..x1).contains(&x) && (z0..z1).contains(&z) {
                let u = (x - x0).min(x1 - x).min((z - z0).min(z1 - z));
                let base = lin(rug);
                c = if u < 0.08 {
                    lin([230, 210, 170])
                } else if u < 0.2 {
                    base * 0.6
                } else {
                    let pat = ((x * 6.0).sin() * (z * 6.0).sin()).abs();
                    base * (0.85 + 0.2 * pat)
                };
                c *= 0.92 + 0.08 * fbm(x * 30.0, z * 30.0, 77);
            }
        }
        c
    }

    fn wall_base(&self, u: f32, y: f32, seed: u64) -> V3 {
        let r = &self.room;
        let (wall, accent) = (lin(r.wall), lin(r.wall_accent));
        let mottle = 0.96 + 0.06 * fbm(u * 2.5, y * 2.5, seed);
        let c = match r.wall_style {
            WallStyle::Plaster => wall,
            WallStyle::Stripes => {
                let f = (u / 0.16).rem_euclid(1.0);
                if f < 0.5 {
                    wall
                } else if f < 0.54 {
                    accent * 0.9
                } else {
                    wall + (accent - wall) * 0.6
                }
            }
            WallStyle::Panelled => {
                if y < 0.95 {
                    let f = (u / 0.5).rem_euclid(1.0);
                    if !(0.02..=0.98).contains(&f) {
                        accent * 0.7
                    } else {
                        accent
                    }
                } else if y < 1.0 {
                    lin([236, 232, 222])
                } else {
                    wall
                }
            }
        };
        if y < 0.09 {
            return lin([232, 230, 224]) * (if y > 0.08 { 0.8 } else { 1.0 });
        }
        c * mottle
    }

    fn side_wall_albedo(&self, z: f32, y: f32, id: u64) -> V3 {
        self.wall_base(z, y, self.room.decor_seed + id)
    }

    fn back_wall_albedo(&self, x: f32, y: f32) -> V3 {
        let r = &self.room;
        let dx = r.door_x as f32;
        // Door: frame 6 cm, leaf 0.82 m × 2.0 m with two panels, handle.
        let (fw, lw, lh) = (0.06, 0.41, 2.0);
        if (x - dx).abs() < lw + fw && y < lh + fw {
            let frame_c = lin([238, 236, 230]);
            if (x - dx).abs() >= lw || y >= lh {
                let edge = (x - dx).abs() - lw;
                return frame_c
                    * if edge < 0.008 || y - lh < 0.008 && y >= lh {
                        0.7
                    } else {
                        1.0
                    };
            }
            let leaf = lin(r.door);
            let hx = dx + 0.33;
            if ((x - hx).powi(2) + (y - 1.0).powi(2)).sqrt() < 0.028
                || ((x - hx - 0.0).abs() < 0.012 && (y - 1.0).abs() < 0.012)
            {
                return lin([90, 90, 96]);
            }
            if (x - hx).abs() < 0.015 && y > 0.99 && y < 1.01 + 0.0 {
                return lin([120, 120, 126]);
            }
            // Panels: inset rectangles with a shaded rim.
            let u = (x - dx + lw) / (2.0 * lw);
            for (v0, v1) in [(0.08, 0.9), (1.05, 1.9)] {
                if (0.12..0.88).contains(&u) && y > v0 && y < v1 {
                    let rim = (u - 0.12).min(0.88 - u) * 2.0 * lw;
                    let rim = rim.min((y - v0).min(v1 - y));
                    return leaf * if rim < 0.015 { 0.78 } else { 0.96 };
                }
            }
            return leaf * (0.97 + 0.03 * fbm(x * 8.0, y * 8.0, 4));
        }
        // Light switch beside the door.
        let sx = dx - lw - fw - 0.15;
        if (x - sx).abs() < 0.04 && (y - 1.1).abs() < 0.045 {
            return lin([240, 240, 236])
                * if (x - sx).abs() > 0.036 || (y - 1.1).abs() > 0.041 {
                    0.8
                } else {
                    1.0
                };
        }
        for p in &self.posters {
            if x >= p.x0 && x <= p.x1 && y >= p.y0 && y <= p.y1 {
                let u = (x - p.x0) / (p.x1 - p.x0);
                let v = (y - p.y0) / (p.y1 - p.y0);
                return poster(p, u, v);
            }
        }
        self.wall_base(x, y, self.room.decor_seed + 2)
    }
}

/// The art of a poster at `(u, v)` ∈ [0, 1]² (v up).
fn poster(p: &Poster, u: f32, v: f32) -> V3 {
    let m = 0.035;
    if !(m..=1.0 - m).contains(&u) || !(m..=1.0 - m).contains(&v) {
        return lin([244, 244, 240]);
    }
    let pick = |k: i64| {
        let c = PALETTE[(hash01(k, 0, p.hue) * PALETTE.len() as f32) as usize % PALETTE.len()];
        lin(c)
    };
    match p.kind {
        0 => {
            // Sunset: sky gradient, sun, mountains.
            let sky = lin([250, 170, 80]) + (lin([70, 50, 120]) - lin([250, 170, 80])) * v;
            let sun = ((u - 0.6).powi(2) + (v - 0.45).powi(2)).sqrt() < 0.13;
            let ridge = 0.3 + 0.08 * (u * 11.0).sin() + 0.05 * (u * 23.0 + 1.0).sin();
            if v < ridge {
                lin([40, 36, 50])
            } else if sun {
                lin([255, 236, 160])
            } else {
                sky
            }
        }
        1 => {
            // A grid of colour fields with black bars.
            let bars_u = [0.32, 0.71];
            let bars_v = [0.38, 0.8];
            if bars_u.iter().any(|b| (u - b).abs() < 0.025)
                || bars_v.iter().any(|b| (v - b).abs() < 0.02)
            {
                return lin([20, 20, 20]);
            }
            let cu = bars_u.iter().filter(|b| u > **b).count() as i64;
            let cv = bars_v.iter().filter(|b| v > **b).count() as i64;
            if (cu + cv) % 3 == 0 {
                lin([238, 236, 228])
            } else {
                pick(cu * 3 + cv)
            }
        }
        2 => {
            // A text-like flyer: title block and lines.
            if v > 0.78 {
                return pick(1) * 0.9;
            }
            let line = (v * 22.0).rem_euclid(1.0);
            let word = hash01((u * 14.0) as i64, (v * 22.0) as i64, p.hue) > 0.25;
            if v < 0.7 && v > 0.1 && line < 0.45 && word && u < 0.9 {
                lin([60, 60, 70])
            } else {
                lin([236, 232, 220])
            }
        }
        _ => {
            // Concentric rings.
            let r = ((u - 0.5).powi(2) + (v - 0.5).powi(2)).sqrt();
            let k = (r * 14.0) as i64;
            if k % 2 == 0 {
                pick(k)
            } else {
                lin([230, 226, 214])
            }
        }
    }
}

/// Entry into an axis-aligned box: `t` and the outward normal.
fn ray_box(o: &V3, d: &V3, b: &BoxObj) -> Option<(f32, V3)> {
    let mut t0 = 0.0f32;
    let mut t1 = f32::INFINITY;
    let mut axis = 0usize;
    let mut sign = 1.0f32;
    for k in 0..3 {
        if d[k].abs() < 1e-9 {
            if o[k] < b.min[k] || o[k] > b.max[k] {
                return None;
            }
            continue;
        }
        let inv = 1.0 / d[k];
        let (mut ta, mut tb) = ((b.min[k] - o[k]) * inv, (b.max[k] - o[k]) * inv);
        let mut s = -1.0;
        if ta > tb {
            std::mem::swap(&mut ta, &mut tb);
            s = 1.0;
        }
        if ta > t0 {
            t0 = ta;
            axis = k;
            sign = s;
        }
        t1 = t1.min(tb);
        if t0 > t1 {
            return None;
        }
    }
    let mut n = V3::zeros();
    n[axis] = sign;
    (t0 > 1e-4).then_some((t0, n))
}

// ---------------------------------------------------------------------------
// Camera rays and the session
// ---------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct RayCam {
    origin: V3,
    rot: M3,
    fx: f32,
    fy: f32,
    cx: f32,
    cy: f32,
}

impl RayCam {
    fn new(camera: &labels::Camera) -> Self {
        let pose = camera.world_from_camera();
        Self {
            origin: v3(&pose.translation.vector),
            rot: pose
                .rotation
                .to_rotation_matrix()
                .into_inner()
                .cast::<f32>(),
            fx: camera.fx() as f32,
            fy: camera.fy() as f32,
            cx: camera.cx() as f32,
            cy: camera.cy() as f32,
        }
    }

    #[inline]
    fn dir(&self, x: f32, y: f32) -> V3 {
        (self.rot
            * V3::new(
                (x + 0.5 - self.cx) / self.fx,
                (y + 0.5 - self.cy) / self.fy,
                1.0,
            ))
        .normalize()
    }

    /// Pixel rectangle of a sphere (conservative), or `None` behind the camera.
    fn sphere_rect(&self, c: &V3, r: f32, w: i32, h: i32) -> Option<[i32; 4]> {
        let pc = self.rot.transpose() * (c - self.origin);
        if pc.z <= r + 0.05 {
            return None;
        }
        let grow = r / (pc.z - r) * 1.05;
        let (u, v) = (
            self.fx * pc.x / pc.z + self.cx,
            self.fy * pc.y / pc.z + self.cy,
        );
        let (du, dv) = (
            self.fx * (grow + (pc.x / pc.z).abs() * grow * 0.6) + 2.0,
            self.fy * (grow + (pc.y / pc.z).abs() * grow * 0.6) + 2.0,
        );
        let rect = [
            ((u - du).floor() as i32).max(0),
            ((v - dv).floor() as i32).max(0),
            ((u + du).ceil() as i32).min(w - 1),
            ((v + dv).ceil() as i32).min(h - 1),
        ];
        (rect[0] <= rect[2] && rect[1] <= rect[3]).then_some(rect)
    }
}

/// One rendered frame with its truth.
#[derive(Clone, Debug)]
pub struct FootageFrame {
    pub frame: Frame,
    /// 1 where the pixel's centre ray hits the body, else 0 (row-major).
    pub mask: Vec<u8>,
    pub truth: TruthRow,
}

/// A whole session in memory.
#[derive(Clone, Debug)]
pub struct Footage {
    pub frames: Vec<Frame>,
    pub masks: Vec<Vec<u8>>,
    pub truth: Vec<TruthRow>,
    pub phases: Vec<PhaseSpan>,
    pub camera: labels::Camera,
    /// The motion on the subject's skeleton, one frame per video frame.
    pub bvh: Bvh,
}

/// A session ready to render frame by frame (the room is pre-rendered).
pub struct Session {
    options: FootageOptions,
    subject: Subject,
    clip_channels: Vec<Vec<skeleton::Channel>>,
    camera: labels::Camera,
    raycam: RayCam,
    scene: Scene,
    plan: Plan,
    truth_ids: Vec<usize>,
    /// The room, linear RGB, sharp.
    room_sharp: Vec<V3>,
    /// The room after blur and vignetting, sRGB levels (0–255, float).
    room_final: Vec<V3>,
    /// Floor point seen by each pixel (NaN: not floor).
    floor_xz: Vec<[f32; 2]>,
    vignette: Vec<f32>,
    srgb: SrgbTable,
}

const SMOOTH_K: f32 = 0.015;

impl Session {
    /// Builds the subject, the motion and the room.
    ///
    /// # Errors
    /// Invalid options ([`VisionError::Parameter`]), an unreadable walk clip
    /// or one without the CMU joints ([`VisionError::Skeleton`]).
    pub fn new(options: &FootageOptions) -> Result<Self> {
        options.validate()?;
        let clip = Bvh::load(&options.walk_clip)?;
        let subject = Subject::new(&clip.skeleton, &options.setup.build)?;
        let camera = make_camera(options)?;
        let mocap = match &options.moves_clip {
            Some(path) => Some(mocap::MocapMoves::load(
                path,
                options.moves_start,
                options.moves_yaw_deg.to_radians(),
            )?),
            None => None,
        };
        let plan = plan(options, &subject, &clip, mocap.as_ref())?;
        let truth_ids = TRUTH_JOINTS
            .iter()
            .map(|(_, n)| find(&subject.skeleton, n))
            .collect::<Result<Vec<_>>>()?;
        let scene = Scene::new(&options.setup);
        let raycam = RayCam::new(&camera);
        let (w, h) = (options.width as usize, options.height as usize);
        let mut room_sharp = vec![V3::zeros(); w * h];
        let mut floor_xz = vec![[f32::NAN; 2]; w * h];
        room_sharp
            .par_chunks_mut(w)
            .zip(floor_xz.par_chunks_mut(w))
            .enumerate()
            .for_each(|(y, (row, floor))| {
                for x in 0..w {
                    let d = raycam.dir(x as f32, y as f32);
                    let (c, f) = scene.shade(&raycam.origin, &d);
                    row[x] = c;
                    if let Some((fx, fz)) = f {
                        floor[x] = [fx, fz];
                    }
                }
            });
        let (cx, cy) = (w as f32 * 0.5, h as f32 * 0.5);
        let r_max2 = cx * cx + cy * cy;
        let strength = options.vignette as f32;
        let vignette: Vec<f32> = (0..w * h)
            .map(|i| {
                let (x, y) = ((i % w) as f32 + 0.5 - cx, (i / w) as f32 + 0.5 - cy);
                let r2 = (x * x + y * y) / r_max2;
                1.0 - strength * r2 * (0.6 + 0.4 * r2)
            })
            .collect();
        let srgb = SrgbTable::new();
        let blurred = if options.blur {
            blur(&room_sharp, w, h)
        } else {
            room_sharp.clone()
        };
        let room_final = blurred
            .iter()
            .zip(&vignette)
            .map(|(c, v)| V3::new(srgb.get(c.x * v), srgb.get(c.y * v), srgb.get(c.z * v)))
            .collect();
        Ok(Self {
            options: options.clone(),
            subject,
            clip_channels: clip.channels,
            camera,
            raycam,
            scene,
            plan,
            truth_ids,
            room_sharp,
            room_final,
            floor_xz,
            vignette,
            srgb,
        })
    }

    /// Frames in the session.
    pub fn len(&self) -> usize {
        self.plan.poses.len()
    }

    pub fn is_empty(&self) -> bool {
        self.plan.poses.is_empty()
    }

    pub fn options(&self) -> &FootageOptions {
        &self.options
    }

    /// The phases, in order, as frame ranges.
    pub fn phases(&self) -> &[PhaseSpan] {
        &self.plan.phases
    }

    /// The phase of frame `i`.
    pub fn phase(&self, i: usize) -> Phase {
        self.plan
            .phases
            .iter()
            .find(|p| (p.start..p.end).contains(&i))
            .map_or(Phase::Empty, |p| p.phase)
    }

    pub fn camera(&self) -> &labels::Camera {
        &self.camera
    }

    /// The subject's skeleton (CMU hierarchy, the subject's proportions).
    pub fn skeleton(&self) -> &Skeleton {
        &self.subject.skeleton
    }

    /// Pose parameters of frame `i` (BVH channel values in radians/metres).
    pub fn pose(&self, i: usize) -> &[f64] {
        &self.plan.poses[i]
    }

    /// The motion as a BVH clip at the video's frame rate.
    ///
    /// # Errors
    /// [`VisionError::Skeleton`] if the poses do not fit the skeleton.
    pub fn bvh(&self) -> Result<Bvh> {
        let dof = self.subject.skeleton.dof();
        let data: Vec<f64> = self.plan.poses.iter().flatten().copied().collect();
        Ok(Bvh {
            skeleton: self.subject.skeleton.clone(),
            frame_time: 1.0 / self.options.fps,
            frames: PoseBatch::from_vec(dof, data)?,
            channels: self.clip_channels.clone(),
        })
    }

    /// Renders frame `i` with its truth.
    ///
    /// # Errors
    /// [`VisionError::Parameter`] for `i` out of range; forward-kinematics
    /// failures as [`VisionError::Skeleton`].
    pub fn render(&self, i: usize) -> Result<FootageFrame> {
        if i >= self.len() {
            return Err(VisionError::parameter(
                "frame",
                i,
                format!("the session has {} frames", self.len()),
            ));
        }
        let (w, h) = (self.options.width as usize, self.options.height as usize);
        let phase = self.phase(i);
        let world = self
            .subject
            .skeleton
            .forward_kinematics(&self.plan.poses[i])?;
        let mut out = self.room_final.clone();
        let mut mask = vec![0u8; w * h];
        let mut body_pixels = 0;
        if phase.in_scene() {
            body_pixels = self.draw_body(&world, &mut out, &mut mask);
        }
        let rgb = self.finish(&out, i);
        let frame = Frame::new(
            self.options.width,
            self.options.height,
            rgb,
            i as f64 / self.options.fps,
            i,
        )?;
        let truth = self.truth_row(i, phase, &world, body_pixels);
        Ok(FootageFrame { frame, mask, truth })
    }

    fn truth_row(
        &self,
        i: usize,
        phase: Phase,
        world: &[Isometry3<f64>],
        body_pixels: usize,
    ) -> TruthRow {
        let mut row = TruthRow {
            frame: i,
            time: i as f64 / self.options.fps,
            phase,
            present: body_pixels > 0,
            body_pixels,
            joints: None,
            pixels: None,
            angles: None,
        };
        if phase.in_scene() {
            let at = |j: usize| -> [f64; 3] { world[j].translation.vector.into() };
            let joints: Vec<[f64; 3]> = self.truth_ids.iter().map(|&j| at(j)).collect();
            let pixels = joints
                .iter()
                .map(|p| {
                    self.camera
                        .project(&Point3::from(*p))
                        .map(|(u, v, _)| [u, v])
                })
                .collect();
            let ids = &self.subject.ids;
            let angle = |a: usize, b: usize, c: usize| interior_angle_deg(at(a), at(b), at(c));
            let (r, l) = (ids.side[0], ids.side[1]);
            row.angles = Some([
                angle(r.shoulder, r.elbow, r.wrist),
                angle(l.shoulder, l.elbow, l.wrist),
                angle(r.hip, r.knee, r.ankle),
                angle(l.hip, l.knee, l.ankle),
            ]);
            row.joints = Some(joints);
            row.pixels = Some(pixels);
        }
        row
    }

    /// Sensor noise and quantisation. The noise has a fine part (per pixel)
    /// and a coarse part (independent values on a 2-pixel lattice,
    /// bilinearly interpolated), as demosaicing correlates a sensor's noise
    /// between neighbours; per channel, with read and shot components.
    fn finish(&self, img: &[V3], frame: usize) -> Vec<u8> {
        let (w, h) = (self.options.width as usize, self.options.height as usize);
        let mut rgb = vec![0u8; img.len() * 3];
        let sigma = self.options.noise as f32;
        let seed = mix64(self.options.seed ^ 0x006e_6f69_7365) ^ mix64(frame as u64 + 1);
        let (cw, ch) = (w / 2 + 2, h / 2 + 2);
        let coarse: Vec<[f32; 3]> = if sigma > 0.0 {
            (0..cw * ch)
                .into_par_iter()
                .map(|i| {
                    let hsh = mix64(seed ^ 0xc0a5 ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    [gauss(hsh), gauss(mix64(hsh ^ 1)), gauss(mix64(hsh ^ 2))]
                })
                .collect()
        } else {
            Vec::new()
        };
        rgb.par_chunks_mut(3 * w)
            .zip(img.par_chunks(w))
            .enumerate()
            .for_each(|(y, (out, row))| {
                let row_seed = mix64(seed ^ (y as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                let gy = y as f32 * 0.5;
                let (y0, fy) = (gy as usize, gy.fract());
                for (x, c) in row.iter().enumerate() {
                    let gx = x as f32 * 0.5;
                    let (x0, fx) = (gx as usize, gx.fract());
                    for k in 0..3 {
                        let v = c[k];
                        let n = if sigma > 0.0 {
                            // Read noise plus shot noise growing with the signal.
                            let s = sigma * (0.55 + 0.45 * (v / 128.0).max(0.0).sqrt());
                            let at = |xx: usize, yy: usize| coarse[yy * cw + xx][k];
                            let top = at(x0, y0) + (at(x0 + 1, y0) - at(x0, y0)) * fx;
                            let bottom =
                                at(x0, y0 + 1) + (at(x0 + 1, y0 + 1) - at(x0, y0 + 1)) * fx;
                            let smooth = top + (bottom - top) * fy;
                            let fine = gauss(mix64(row_seed ^ ((x * 3 + k) as u64 + 1)));
                            (0.9 * smooth + 0.6 * fine) * s
                        } else {
                            0.0
                        };
                        out[3 * x + k] = (v + n).round().clamp(0.0, 255.0) as u8;
                    }
                }
            });
        rgb
    }

    /// Draws the body (and its floor shadow) into `out` (sRGB levels);
    /// returns the body pixel count.
    fn draw_body(&self, world: &[Isometry3<f64>], out: &mut [V3], mask: &mut [u8]) -> usize {
        let (w, h) = (self.options.width as i32, self.options.height as i32);
        let mut prims = body_prims(&self.subject, &self.options.setup, world);
        let mut rect: Option<[i32; 4]> = None;
        let union = |r: &mut Option<[i32; 4]>, a: [i32; 4]| {
            *r = Some(match *r {
                None => a,
                Some(b) => [
                    b[0].min(a[0]),
                    b[1].min(a[1]),
                    b[2].max(a[2]),
                    b[3].max(a[3]),
                ],
            });
        };
        let mut visible = Vec::with_capacity(prims.len());
        for p in &mut prims {
            p.radius += SMOOTH_K;
            if let Some(r) = self.raycam.sphere_rect(&p.centre, p.radius, w, h) {
                p.rect = r;
                union(&mut rect, r);
                visible.push(*p);
            }
        }
        // Shadow blobs on the floor: feet contact and the body cast along
        // the light.
        let blobs = self.shadow_blobs(world);
        let mut shadow_rect = None;
        for b in &blobs {
            let corners = [
                V3::new(b.x - b.r * 2.0, 0.0, b.z - b.r * 2.0),
                V3::new(b.x + b.r * 2.0, 0.0, b.z - b.r * 2.0),
                V3::new(b.x - b.r * 2.0, 0.0, b.z + b.r * 2.0),
                V3::new(b.x + b.r * 2.0, 0.0, b.z + b.r * 2.0),
            ];
            for c in corners {
                if let Some(r) = self.raycam.sphere_rect(&c, 0.01, w, h) {
                    union(&mut shadow_rect, r);
                }
            }
        }
        let mut dynamic = rect;
        if let Some(s) = shadow_rect {
            union(&mut dynamic, s);
        }
        let Some(d) = dynamic else {
            return 0;
        };
        // Margin of 2 pixels for the blur.
        let d = [
            (d[0] - 2).max(0),
            (d[1] - 2).max(0),
            (d[2] + 2).min(w - 1),
            (d[3] + 2).min(h - 1),
        ];
        let dw = (d[2] - d[0] + 1) as usize;
        let dh = (d[3] - d[1] + 1) as usize;
        let mut sharp = vec![V3::zeros(); dw * dh];
        let mut local_mask = vec![0u8; dw * dh];
        let pix = 1.0 / self.raycam.fx;
        sharp
            .par_chunks_mut(dw)
            .zip(local_mask.par_chunks_mut(dw))
            .enumerate()
            .for_each(|(ry, (row, mrow))| {
                let y = d[1] + ry as i32;
                let mut cands: Vec<(usize, f32, f32)> = Vec::with_capacity(visible.len());
                for (rx, px) in row.iter_mut().enumerate() {
                    let x = d[0] + rx as i32;
                    let idx = y as usize * w as usize + x as usize;
                    let mut c = self.room_sharp[idx];
                    let f = self.floor_xz[idx];
                    if !f[0].is_nan() && !blobs.is_empty() {
                        let mut dark = 0.0;
                        for b in &blobs {
                            let dd = ((f[0] - b.x).powi(2) + (f[1] - b.z).powi(2)) / (b.r * b.r);
                            if dd < 9.0 {
                                dark += b.s * (-dd).exp();
                            }
                        }
                        c *= 1.0 - dark.min(0.6);
                    }
                    if let Some(r) = rect
                        && x >= r[0]
                        && x <= r[2]
                        && y >= r[1]
                        && y <= r[3]
                    {
                        let dir = self.raycam.dir(x as f32, y as f32);
                        cands.clear();
                        for (k, p) in visible.iter().enumerate() {
                            if x < p.rect[0] || x > p.rect[2] || y < p.rect[1] || y > p.rect[3] {
                                continue;
                            }
                            let oc = self.raycam.origin - p.centre;
                            let b = oc.dot(&dir);
                            let cc = oc.norm_squared() - p.radius * p.radius;
                            let disc = b * b - cc;
                            if disc > 0.0 {
                                let s = disc.sqrt();
                                cands.push((k, -b - s, -b + s));
                            }
                        }
                        if !cands.is_empty()
                            && let Some((colour, alpha, hit)) =
                                self.trace(&visible, &cands, &dir, pix)
                        {
                            c = c * (1.0 - alpha) + colour * alpha;
                            if hit {
                                mrow[rx] = 1;
                            }
                        }
                    }
                    *px = c;
                }
            });
        // Blur the dynamic rectangle (clamped to it), vignette, sRGB.
        let blurred = if self.options.blur {
            blur(&sharp, dw, dh)
        } else {
            sharp
        };
        let mut count = 0;
        for ry in 0..dh {
            let y = d[1] as usize + ry;
            // The rectangle's own border rows/columns were blurred with
            // clamping; keep the pre-blurred room there unless at the image edge.
            let inner_y = ry > 0 && ry + 1 < dh || y == 0 || y + 1 == h as usize;
            for rx in 0..dw {
                let x = d[0] as usize + rx;
                let idx = y * w as usize + x;
                let inner_x = rx > 0 && rx + 1 < dw || x == 0 || x + 1 == w as usize;
                if local_mask[ry * dw + rx] == 1 {
                    mask[idx] = 1;
                    count += 1;
                }
                if inner_x && inner_y {
                    let c = blurred[ry * dw + rx] * self.vignette[idx];
                    out[idx] = V3::new(self.srgb.get(c.x), self.srgb.get(c.y), self.srgb.get(c.z));
                }
            }
        }
        count
    }

    /// Sphere-traces one pixel ray; returns colour (linear), coverage and
    /// whether the centre ray hit.
    fn trace(
        &self,
        prims: &[Prim],
        cands: &[(usize, f32, f32)],
        dir: &V3,
        pix: f32,
    ) -> Option<(V3, f32, bool)> {
        let o = self.raycam.origin;
        let t_start = cands
            .iter()
            .map(|c| c.1)
            .fold(f32::INFINITY, f32::min)
            .max(0.05);
        let t_end = cands.iter().map(|c| c.2).fold(0.0, f32::max);
        let mut t = t_start;
        let mut best_ratio = f32::INFINITY;
        let mut best_t = t;
        let mut hit = false;
        for _ in 0..96 {
            let p = o + dir * t;
            let d = sdf(prims, cands, &p).0;
            let foot = pix * t;
            let ratio = d / foot;
            if ratio < best_ratio {
                best_ratio = ratio;
                best_t = t;
            }
            if d < 0.25 * foot {
                hit = true;
                best_t = t;
                break;
            }
            t += d.max(0.2 * foot);
            if t > t_end {
                break;
            }
        }
        let alpha = if hit {
            1.0
        } else {
            (0.5 - best_ratio).clamp(0.0, 1.0)
        };
        if alpha <= 0.0 {
            return None;
        }
        let p = o + dir * best_t;
        let (_, id) = sdf(prims, cands, &p);
        let e = 0.0007f32;
        let ks = [
            V3::new(1.0, -1.0, -1.0),
            V3::new(-1.0, -1.0, 1.0),
            V3::new(-1.0, 1.0, -1.0),
            V3::new(1.0, 1.0, 1.0),
        ];
        let mut n = V3::zeros();
        for k in ks {
            n += k * sdf(prims, cands, &(p + k * e)).0;
        }
        let n = n.try_normalize(1e-12).unwrap_or(-dir);
        let albedo = self.albedo(&prims[id], &p);
        let light = self.scene.lighting(&p, &n);
        Some((albedo.component_mul(&light), alpha, hit))
    }

    fn albedo(&self, prim: &Prim, p: &V3) -> V3 {
        let [skin, hair, shirt, stripes, trousers, shoes, soles, sleeve] = self.scene.clothing;
        match prim.mat {
            Mat::Skin => skin,
            Mat::Hair => {
                let l = prim.local(p);
                hair * (0.85 + 0.3 * value_noise(l.x * 300.0, l.y * 40.0, 3))
            }
            Mat::Shirt => {
                if self.options.setup.clothing.stripes.is_some() {
                    let y = p.y;
                    if (y / 0.045).rem_euclid(2.0) < 1.0 {
                        stripes
                    } else {
                        shirt
                    }
                } else {
                    shirt
                }
            }
            Mat::Sleeve => sleeve,
            Mat::Trousers => trousers,
            Mat::Eye => lin([34, 26, 22]),
            Mat::Sock => lin([70, 70, 76]),
            Mat::Shoe => {
                let l = prim.local(p);
                if let Shape::RoundBox { half, .. } = prim.shape
                    && l.y < -0.45 * half.y
                {
                    soles
                } else {
                    shoes
                }
            }
        }
    }

    fn shadow_blobs(&self, world: &[Isometry3<f64>]) -> Vec<Blob> {
        let ids = &self.subject.ids;
        let l = self.scene.light_dir;
        let s = self.subject.size as f32;
        let mut blobs = Vec::new();
        let cast = |j: usize| {
            let p = v3(&world[j].translation.vector);
            let k = p.y / l.y.max(0.2);
            (p.x - l.x * k, p.z - l.z * k)
        };
        for side in &ids.side {
            let a = v3(&world[side.ankle].translation.vector);
            let toe = v3(&world[side.toe].translation.vector);
            let lift = (a.y - self.subject.ankle_height as f32).max(0.0);
            let strength = 0.45 * (-lift / 0.08).exp();
            let m = (a + toe) * 0.5;
            blobs.push(Blob {
                x: m.x,
                z: m.z,
                r: 0.09 * s,
                s: strength,
            });
            for j in [side.knee, side.hip] {
                let (x, z) = cast(j);
                blobs.push(Blob {
                    x,
                    z,
                    r: 0.1 * s,
                    s: 0.12,
                });
            }
            let (x, z) = cast(side.wrist);
            blobs.push(Blob {
                x,
                z,
                r: 0.07 * s,
                s: 0.08,
            });
        }
        for (j, r, st) in [
            (ids.chest, 0.2, 0.16),
            (ids.chest2, 0.18, 0.14),
            (ids.head, 0.12, 0.1),
            (ids.hips, 0.18, 0.16),
        ] {
            let (x, z) = cast(j);
            blobs.push(Blob {
                x,
                z,
                r: r * s,
                s: st,
            });
        }
        blobs
    }

    /// The metadata (JSON): subject, phases, camera, seed, joint mapping.
    pub fn meta_json(&self) -> String {
        let o = &self.options;
        let b = &o.setup.build;
        let mut s = String::from("{\n");
        let _ = writeln!(s, "  \"generator\": \"posecloud vision::footage\",");
        if let Some(c) = &o.command {
            let _ = writeln!(s, "  \"command\": {},", json_str(c));
        }
        let _ = writeln!(s, "  \"preset\": \"{}\",", o.preset.name());
        let _ = writeln!(s, "  \"seed\": {},", o.seed);
        let _ = writeln!(s, "  \"width\": {},\n  \"height\": {},", o.width, o.height);
        let _ = writeln!(s, "  \"fps\": {},\n  \"frames\": {},", o.fps, self.len());
        let _ = writeln!(s, "  \"leave\": {},", o.leave);
        if let Some(m) = &o.moves_clip {
            let name = m
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            let _ = writeln!(
                s,
                "  \"moves\": {{\"clip\": {}, \"start_s\": {}, \"yaw_deg\": {}, \"max_s\": {}}},",
                json_str(&name),
                o.moves_start,
                o.moves_yaw_deg,
                o.timing.moves
            );
        }
        let _ = writeln!(s, "  \"subject_height\": {:.3},", b.height);
        let _ = writeln!(
            s,
            "  \"build\": {{\"torso\": {}, \"neck\": {}, \"head\": {}, \"arms\": {}, \"hands\": {}, \"legs\": {}, \"shoulders\": {}, \"hips\": {}, \"girth\": {}, \"belly\": {}}},",
            b.torso, b.neck, b.head, b.arms, b.hands, b.legs, b.shoulders, b.hips, b.girth, b.belly
        );
        let c = &o.setup.clothing;
        let _ = writeln!(
            s,
            "  \"clothing\": {{\"sleeves\": \"{}\", \"hair\": \"{:?}\", \"shirt\": {:?}, \"stripes\": {}, \"trousers\": {:?}, \"skin\": {:?}}},",
            match c.sleeves {
                Sleeves::Short => "short",
                Sleeves::Long => "long",
            },
            c.hair_style,
            c.shirt,
            c.stripes.map_or("null".to_string(), |v| format!("{v:?}")),
            c.trousers,
            c.skin
        );
        let cam = &o.setup.camera;
        let _ = writeln!(
            s,
            "  \"camera\": {{\"hfov_deg\": {}, \"height\": {}, \"tilt_deg\": {}, \"x\": {}, \"file\": \"{}\"}},",
            cam.hfov_deg,
            cam.height,
            cam.tilt_deg,
            cam.x,
            o.file("camera", "toml")
        );
        let st = &o.setup.staging;
        let _ = writeln!(
            s,
            "  \"spot\": {{\"x\": {}, \"z\": {}, \"distance\": {}, \"enter_from\": \"{}\"}},",
            st.x,
            -st.distance,
            st.distance,
            if st.enter_from_left { "left" } else { "right" }
        );
        s.push_str("  \"phases\": [\n");
        let n = self.plan.phases.len();
        for (k, p) in self.plan.phases.iter().enumerate() {
            let _ = writeln!(
                s,
                "    {{\"name\": \"{}\", \"start\": {}, \"end\": {}, \"start_s\": {:.3}, \"end_s\": {:.3}}}{}",
                p.phase.name(),
                p.start,
                p.end,
                p.start as f64 / o.fps,
                p.end as f64 / o.fps,
                if k + 1 < n { "," } else { "" }
            );
        }
        s.push_str("  ],\n  \"phase_end_is_exclusive\": true,\n  \"joints\": {");
        for (k, (col, joint)) in TRUTH_JOINTS.iter().enumerate() {
            let _ = write!(
                s,
                "{}\"{col}\": \"{joint}\"",
                if k == 0 { "" } else { ", " }
            );
        }
        s.push_str(
            "},\n  \"world\": \"BVH frame, metres, y up, floor y = 0, camera looks along -z\"\n}\n",
        );
        s
    }
}

#[derive(Clone, Copy, Debug)]
struct Blob {
    x: f32,
    z: f32,
    r: f32,
    s: f32,
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Smooth union of the candidate primitives at `p`, and the nearest one.
#[inline]
fn sdf(prims: &[Prim], cands: &[(usize, f32, f32)], p: &V3) -> (f32, usize) {
    let mut d = f32::INFINITY;
    let mut best = f32::INFINITY;
    let mut id = cands[0].0;
    for &(k, _, _) in cands {
        let dk = prims[k].dist(p);
        if dk < best {
            best = dk;
            id = k;
        }
        let h = (SMOOTH_K - (d - dk).abs()).max(0.0) / SMOOTH_K;
        d = d.min(dk) - h * h * SMOOTH_K * 0.25;
    }
    (d, id)
}

/// 3 × 3 binomial blur of `img` (`w × h`), clamping at its edges.
fn blur(img: &[V3], w: usize, h: usize) -> Vec<V3> {
    let mut tmp = vec![V3::zeros(); w * h];
    tmp.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        for x in 0..w {
            let l = img[y * w + x.saturating_sub(1)];
            let r = img[y * w + (x + 1).min(w - 1)];
            row[x] = (l + img[y * w + x] * 2.0 + r) * 0.25;
        }
    });
    let mut out = vec![V3::zeros(); w * h];
    out.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        let (u, d) = (y.saturating_sub(1), (y + 1).min(h - 1));
        for x in 0..w {
            row[x] = (tmp[u * w + x] + tmp[y * w + x] * 2.0 + tmp[d * w + x]) * 0.25;
        }
    });
    out
}

fn make_camera(options: &FootageOptions) -> Result<labels::Camera> {
    let c = &options.setup.camera;
    let (w, h) = (options.width, options.height);
    let hfov = c.hfov_deg.to_radians();
    let fov_y = 2.0 * ((0.5 * hfov).tan() * f64::from(h) / f64::from(w)).atan();
    let eye = Point3::new(c.x, c.height, 0.0);
    let target = Point3::new(c.x, c.height - 3.0 * c.tilt_deg.to_radians().tan(), -3.0);
    Ok(labels::Camera::looking_at(
        eye,
        target,
        Vector3::y(),
        fov_y,
        w,
        h,
    )?)
}

/// Renders a whole session in memory (no `ffmpeg`): frames, body masks and
/// truth rows. Meant for small sizes and short sessions (tests); see
/// [`write_session`] for files.
///
/// # Errors
/// As [`Session::new`] and [`Session::render`].
pub fn render_session(options: &FootageOptions) -> Result<Footage> {
    let session = Session::new(options)?;
    let mut frames = Vec::with_capacity(session.len());
    let mut masks = Vec::with_capacity(session.len());
    let mut truth = Vec::with_capacity(session.len());
    for i in 0..session.len() {
        let f = session.render(i)?;
        frames.push(f.frame);
        masks.push(f.mask);
        truth.push(f.truth);
    }
    Ok(Footage {
        frames,
        masks,
        truth,
        phases: session.phases().to_vec(),
        camera: session.camera().clone(),
        bvh: session.bvh()?,
    })
}

/// What [`write_session`] wrote.
#[derive(Clone, Debug)]
pub struct WriteReport {
    pub video: PathBuf,
    pub truth_csv: PathBuf,
    pub truth_bvh: PathBuf,
    pub camera: PathBuf,
    pub meta: PathBuf,
    pub frames: usize,
    pub phases: Vec<PhaseSpan>,
    /// Mean seconds to render a frame (without encoding).
    pub render_seconds_per_frame: f64,
}

/// Renders the session and writes `session.mp4` (H.264 through `ffmpeg`:
/// raw RGB on its stdin, `libx264 -crf 23 -pix_fmt yuv420p`),
/// `truth.csv`, `truth.bvh`, `camera.toml` and `meta.json` into `out_dir`
/// (names get `_<tag>` when [`FootageOptions::tag`] is set).
///
/// # Errors
/// As [`Session::new`]; [`VisionError::Io`] for files;
/// [`VisionError::Program`] when `ffmpeg` cannot start or fails.
pub fn write_session(options: &FootageOptions, out_dir: impl AsRef<Path>) -> Result<WriteReport> {
    let out_dir = out_dir.as_ref();
    std::fs::create_dir_all(out_dir).map_err(|e| VisionError::io(out_dir, e))?;
    let session = Session::new(options)?;
    let path = |stem: &str, ext: &str| out_dir.join(options.file(stem, ext));
    let video = path("session", "mp4");
    let program = options.ffmpeg.display().to_string();
    let mut child = Command::new(&options.ffmpeg)
        .args([
            "-y",
            "-hide_banner",
            "-loglevel",
            "error",
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgb24",
        ])
        .args(["-s", &format!("{}x{}", options.width, options.height)])
        .args(["-r", &format!("{}", options.fps), "-i", "-"])
        .args(["-c:v", "libx264", "-crf", "23", "-pix_fmt", "yuv420p"])
        .args(["-movflags", "+faststart"])
        .arg(&video)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| VisionError::Program {
            program: program.clone(),
            message: format!("cannot start: {e}"),
        })?;
    let mut csv = truth_csv_header();
    csv.push('\n');
    let mut stdin = child.stdin.take().ok_or_else(|| VisionError::Program {
        program: program.clone(),
        message: "no stdin".into(),
    })?;
    let mut render_time = 0.0;
    let mut write_error = None;
    for i in 0..session.len() {
        let t0 = std::time::Instant::now();
        let f = session.render(i)?;
        render_time += t0.elapsed().as_secs_f64();
        csv.push_str(&f.truth.csv_line());
        csv.push('\n');
        if let Err(e) = stdin.write_all(&f.frame.rgb) {
            write_error = Some(e);
            break;
        }
    }
    drop(stdin);
    let output = child.wait_with_output().map_err(|e| VisionError::Program {
        program: program.clone(),
        message: e.to_string(),
    })?;
    if !output.status.success() || write_error.is_some() {
        return Err(VisionError::Program {
            program,
            message: format!(
                "encoding {} failed ({}): {}",
                video.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        });
    }
    let truth_csv = path("truth", "csv");
    std::fs::write(&truth_csv, csv).map_err(|e| VisionError::io(&truth_csv, e))?;
    let truth_bvh = path("truth", "bvh");
    session.bvh()?.save(&truth_bvh)?;
    let camera = path("camera", "toml");
    CameraFile::from_camera(session.camera()).save(&camera)?;
    let meta = path("meta", "json");
    std::fs::write(&meta, session.meta_json()).map_err(|e| VisionError::io(&meta, e))?;
    Ok(WriteReport {
        video,
        truth_csv,
        truth_bvh,
        camera,
        meta,
        frames: session.len(),
        phases: session.phases().to_vec(),
        render_seconds_per_frame: render_time / session.len().max(1) as f64,
    })
}

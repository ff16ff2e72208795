//! What a session is made of: [`FootageOptions`] (size, rate, seed,
//! timing, noise, clips) and the [`Setup`] of subject, clothes, room,
//! light, camera and staging that a [`Preset`] fills in.

use std::path::PathBuf;

use vision::{Result, Sleeves, VisionError};

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

/// What [`render_session`](crate::render_session) and
/// [`write_session`](crate::write_session) make.
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

    pub(crate) fn validate(&self) -> Result<()> {
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

    pub(crate) fn file(&self, stem: &str, ext: &str) -> String {
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

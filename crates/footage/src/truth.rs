//! The session's phases and its ground truth: the joints written to
//! `truth.csv`, their pixels, and the elbows' and knees' interior angles.

use std::fmt::Write as _;

use nalgebra::Vector3;

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

//! A second likelihood term beside RTPF's regions: detected 2D keypoints
//! (BlazePose landmarks, [`keypoints`]) against the projected joints of each
//! particle.
//!
//! **Equation.** For a particle `x`, each observed keypoint `k` (a landmark
//! mapped to a point `p_k(x)` of the skeleton, [`KeypointMap`]) with
//! position `y_k` in the tracker camera's pixels and confidence `c_k`
//! contributes a 2D Student-t log-density with `ν` degrees of freedom:
//!
//! ```text
//! log L_kp(x) = − Σ_k c_k · (ν + 2)/2 · ln(1 + ‖π(p_k(x)) − y_k‖² / (ν σ²)),
//! σ = keypoint_sigma · s
//! ```
//!
//! where `π` is the camera's projection ([`labels::Camera::project`]) and `s`
//! the person's size in pixels, measured on the observation: the distance
//! from the shoulders' midpoint to the hips' midpoint (the torso), or,
//! without both hips and both shoulders, half the larger side of the
//! observed keypoints' bounding box ([`KeypointObservation::scale_px`]).
//! The normalising constant `−Σ c_k ln(2π σ²)` is dropped: it is the same
//! for every particle of a frame. `ν = 4` (default): near the detection
//! the term is Gaussian with variance σ², far from it the penalty grows only
//! logarithmically, so one wrong detection (a swapped left/right wrist, an
//! occluded elbow guessed elsewhere) costs a bounded amount instead of
//! dominating the weights — a Gaussian with an outlier floor does the same
//! with a kink and one more parameter. A keypoint that was not detected, or
//! whose confidence fell below the threshold, is absent and contributes
//! nothing; a point behind the camera counts as a residual of twice the
//! image diagonal.
//!
//! **Depth order.** BlazePose also gives each landmark a depth `z_k`
//! relative to the hips' midpoint, in pixels (smaller is nearer). Its size
//! is coarse, but its sign is not: on a footage clip held out for this
//! (`keypoint_bias`), the forearm's depth order is right in every frame
//! where the forearm is tilted by more than 0.3 (sine) towards or away
//! from the camera, the upper arm's in 73–96 % — exactly the choice that
//! 2D keypoints leave open (a segment and its flip project alike). For
//! each segment `(a, b)` of [`DEPTH_SEGMENTS`] with both ends observed the
//! term adds
//!
//! ```text
//! − min(c_a, c_b) · (ν + 1)/2 · ln(1 + (Δ(x) − (z_b − z_a)/κ)² / (ν σ_z²)),
//! Δ(x) = (d_b − d_a) · f_x / ((d_a + d_b)/2),   σ_z = depth_sigma · s
//! ```
//!
//! with `d` the camera depths of the particle's points: the particle's
//! depth difference in pixels at the segment's distance against the
//! detector's, scaled by `κ` ([`DEFAULT_DEPTH_SCALE`]). σ_z is broad (half
//! the torso): a segment in the image plane is hardly constrained, a flip
//! of a tilted one costs a few nats.
//!
//! The tracker adds `log L_kp` to RTPF Eq. 2 (`log w = −F²/(2σ_F²) + log
//! L_kp + β log μ(x)`, [`crate::tracker`]), reading the joint transforms of
//! the batch's one forward kinematics, as the region term does.
//!
//! **Mapping** ([`KeypointMap::find`]). BlazePose's shoulder, elbow, wrist,
//! hip, knee and ankle landmarks sit on the joint centres, so each maps to
//! the origin of the joint of that name in the skeleton's naming scheme
//! (the subject's side, as BlazePose names them):
//!
//! | landmark | presets (`human`, `rtpf_upper_body`) | CMU BVH | Mixamo |
//! |---|---|---|---|
//! | `left_shoulder` | `l_shoulder` | `LeftShoulder` | `LeftArm` |
//! | `left_elbow` | `l_elbow` | `LeftElbow` | `LeftForeArm` |
//! | `left_wrist` | `l_wrist` / `l_wrist_flex` | `LeftWrist` | `LeftHand` |
//! | `left_hip` | `l_hip` | `LeftHip` | `LeftUpLeg` |
//! | `left_knee` | `l_knee` | `LeftKnee` | `LeftLeg` |
//! | `left_ankle` | `l_ankle` | `LeftAnkle` | `LeftFoot` |
//! | midpoint of `left_ear`, `right_ear` | head centre | head centre | head centre |
//!
//! (right side alike; a Mixamo `mixamorig:` namespace prefix is ignored).
//! BlazePose's elbow and wrist are not quite the joint centres: on renders
//! of a known skeleton (`keypoint_bias`) the elbow lands 7–10 % of the
//! upper arm short of the elbow joint, towards the shoulder, and the wrist
//! 1–7 % of the forearm short of the wrist joint. Left as it is, a 2D
//! upper arm some 10 % too short makes every fit tilt the upper arm out of
//! the image plane by ~25° to match it. So these two keypoints are bound
//! to the point of the bone above at that fraction ([`LANDMARK_SHIFT`]):
//! `offset = (1 − f) · offset_of(joint)` in the parent joint's frame. A
//! scheme is chosen for the whole skeleton, the one that resolves the most
//! landmarks (Mixamo's `LeftShoulder` is the clavicle, so names are never
//! mixed across schemes). **The head** is the one place where no joint sits
//! on a landmark: the nose is on the face's surface, in front of the head
//! joint by an amount and in a direction that depend on the skeleton's
//! axes, which a BVH does not state. The two ears' midpoint is instead a
//! point *inside* the head, at its centre whatever the view — BlazePose
//! places an occluded ear too, with a lower score — so it is compared with
//! the head's centre: the centre of the capsule of the joint whose body
//! part is the head (or, without one, the midpoint of the head joint and
//! its child, e.g. the end site `Head_end`). Its confidence is the mean of
//! the two ears'. The nose, eyes, mouth, hands and feet landmarks are not
//! used.
//!
//! [`KeypointMap::for_body`] drops the keypoints whose position the tracker
//! cannot move: those below an untracked limb joint that itself carries a
//! keypoint (with RTPF's upper body, the knees and ankles, whose hips and
//! knees stay at the calibration pose; the hips stay, moved by the root).

use keypoints::{Keypoints, TRACKED_KEYPOINTS, landmark_index};
use labels::Camera;
use nalgebra::{Isometry3, Point3, Vector3};
use skeleton::{BatchForwardKinematics, BodyPart, Skeleton};

use crate::body::TrackedBody;
use crate::error::{Result, TrackError};

/// A point of the skeleton: `offset` (metres) in the frame of `joint`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SkeletonPoint {
    pub joint: usize,
    pub offset: Vector3<f64>,
}

impl SkeletonPoint {
    /// The point in the world, from the joints' world transforms.
    pub fn world(&self, world: &[Isometry3<f64>]) -> Point3<f64> {
        world[self.joint] * Point3::from(self.offset)
    }
}

/// The landmarks a keypoint reads: one, or the midpoint of two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LandmarkSource {
    /// Index into [`keypoints::LANDMARK_NAMES`].
    One(usize),
    /// Midpoint of two landmarks; confidence the mean of theirs.
    Midpoint(usize, usize),
}

/// One keypoint of the term: a name, what it observes, where it sits on
/// the skeleton.
#[derive(Clone, Debug, PartialEq)]
pub struct KeypointBinding {
    /// A BlazePose landmark name (`right_elbow`), or `head` for the ears'
    /// midpoint.
    pub name: &'static str,
    pub source: LandmarkSource,
    /// The joint the landmark is named after (for the head, the joint
    /// whose centre it stands for).
    pub joint: usize,
    /// Where the landmark sits on the skeleton: the joint's centre, or a
    /// point of the bone above it ([`LANDMARK_SHIFT`]).
    pub point: SkeletonPoint,
}

/// Landmark names → skeleton points (module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeypointMap {
    bindings: Vec<KeypointBinding>,
    /// The naming scheme that matched (`presets`, `CMU`, `Mixamo`).
    scheme: &'static str,
}

/// The limb landmarks, in [`KeypointMap`] order (left then right): the
/// tracked keypoints after the nose.
const LIMB_LANDMARKS: &[&str] = TRACKED_KEYPOINTS
    .split_first()
    .expect("the nose and the limbs")
    .1;

/// Joint names of each scheme for one side: shoulder, elbow, wrist (each
/// with alternatives), hip, knee, ankle.
fn scheme_names(scheme: usize, left: bool) -> [Vec<String>; 6] {
    let (s, w) = if left { ("l", "Left") } else { ("r", "Right") };
    let prefixed = |prefix: &str, joints: [&str; 6]| joints.map(|j| vec![format!("{prefix}{j}")]);
    match scheme {
        0 => {
            let mut names = prefixed(
                s,
                ["_shoulder", "_elbow", "_wrist", "_hip", "_knee", "_ankle"],
            );
            names[2].push(format!("{s}_wrist_flex"));
            names
        }
        1 => prefixed(w, ["Shoulder", "Elbow", "Wrist", "Hip", "Knee", "Ankle"]),
        _ => prefixed(w, ["Arm", "ForeArm", "Hand", "UpLeg", "Leg", "Foot"]),
    }
}

const SCHEMES: [&str; 3] = ["presets", "CMU", "Mixamo"];

/// A joint called `name`, or `<namespace>:name` (Mixamo's `mixamorig:`).
fn find_joint(skeleton: &Skeleton, name: &str) -> Option<usize> {
    skeleton.find(name).ok().or_else(|| {
        skeleton.joints().iter().position(|j| {
            j.name
                .rsplit_once(':')
                .is_some_and(|(_, local)| local == name)
        })
    })
}

fn part_of(skeleton: &Skeleton, j: usize) -> BodyPart {
    let joint = skeleton.joint(j);
    joint
        .body
        .as_ref()
        .map_or_else(|| BodyPart::from_joint_name(&joint.name), |b| b.part)
}

/// The head's centre: the centre of the head capsule, else the midpoint of
/// a joint named `head`/`Head` and its first child.
fn head_centre(skeleton: &Skeleton) -> Option<SkeletonPoint> {
    let with_capsule = (0..skeleton.len()).find(|&j| {
        skeleton
            .joint(j)
            .body
            .as_ref()
            .is_some_and(|b| b.part == BodyPart::Head)
    });
    if let Some(j) = with_capsule {
        let c = &skeleton
            .joint(j)
            .body
            .as_ref()
            .expect("found above")
            .capsule;
        return Some(SkeletonPoint {
            joint: j,
            offset: (c.start + c.end) / 2.0,
        });
    }
    let j = ["head", "Head"]
        .iter()
        .find_map(|n| find_joint(skeleton, n))?;
    let child = *skeleton.children(j).first()?;
    Some(SkeletonPoint {
        joint: j,
        offset: skeleton.joint(child).offset / 2.0,
    })
}

impl KeypointMap {
    /// The keypoints `skeleton` has joints for, by its naming scheme
    /// (module docs); empty when no scheme matches.
    pub fn find(skeleton: &Skeleton) -> Self {
        let resolve = |scheme: usize| -> Vec<(&'static str, usize)> {
            let mut out = Vec::new();
            for (k, name) in LIMB_LANDMARKS.iter().enumerate() {
                let names = &scheme_names(scheme, k % 2 == 0)[k / 2];
                if let Some(j) = names.iter().find_map(|n| find_joint(skeleton, n)) {
                    out.push((*name, j));
                }
            }
            out
        };
        let (scheme, limbs) = (0..SCHEMES.len())
            .map(|s| (s, resolve(s)))
            .max_by(|a, b| a.1.len().cmp(&b.1.len()).then(b.0.cmp(&a.0)))
            .expect("three schemes");
        let mut bindings: Vec<KeypointBinding> = limbs
            .into_iter()
            .map(|(name, joint)| KeypointBinding {
                name,
                source: LandmarkSource::One(landmark_index(name).expect("a BlazePose name")),
                joint,
                point: SkeletonPoint {
                    joint,
                    offset: Vector3::zeros(),
                },
            })
            .collect();
        for b in &mut bindings {
            let Some(frac) = landmark_shift(b.name) else {
                continue;
            };
            let j = skeleton.joint(b.point.joint);
            if let Some(parent) = j.parent
                && j.offset.norm() > 0.0
            {
                b.point = SkeletonPoint {
                    joint: parent,
                    offset: j.offset * (1.0 - frac),
                };
            }
        }
        if let Some(point) = head_centre(skeleton) {
            bindings.insert(
                0,
                KeypointBinding {
                    name: "head",
                    source: LandmarkSource::Midpoint(
                        landmark_index("left_ear").expect("a BlazePose name"),
                        landmark_index("right_ear").expect("a BlazePose name"),
                    ),
                    joint: point.joint,
                    point,
                },
            );
        }
        let scheme = if bindings.len() > 1 {
            SCHEMES[scheme]
        } else {
            "none"
        };
        Self { bindings, scheme }
    }

    /// [`Self::find`] on `body`'s skeleton, without the keypoints below an
    /// untracked limb joint that carries another keypoint (module docs):
    /// their positions follow the calibration pose, not the person.
    pub fn for_body(body: &TrackedBody) -> Self {
        let skel = body.skeleton();
        let mut map = Self::find(skel);
        let mut tracked = vec![false; skel.len()];
        for p in body.params() {
            if let Some(j) = (0..skel.len()).find(|&j| skel.param_range(j).contains(&p.index)) {
                tracked[j] = true;
            }
        }
        let carriers: Vec<usize> = map.bindings.iter().map(|b| b.point.joint).collect();
        map.bindings.retain(|b| {
            // Joints whose motion moves the point: its ancestors, and its
            // own joint when the point is off the joint's origin.
            let mut j = if b.point.offset == Vector3::zeros() {
                skel.joint(b.point.joint).parent
            } else {
                Some(b.point.joint)
            };
            while let Some(a) = j {
                let frozen_limb = !tracked[a]
                    && !skel.param_range(a).is_empty()
                    && carriers.contains(&a)
                    && !matches!(
                        part_of(skel, a),
                        BodyPart::Head | BodyPart::Neck | BodyPart::Torso | BodyPart::Pelvis
                    );
                if frozen_limb {
                    return false;
                }
                j = skel.joint(a).parent;
            }
            true
        });
        map
    }

    pub fn bindings(&self) -> &[KeypointBinding] {
        &self.bindings
    }
    pub fn len(&self) -> usize {
        self.bindings.len()
    }
    pub fn is_empty(&self) -> bool {
        self.bindings.is_empty()
    }
    /// The naming scheme that matched: `presets`, `CMU`, `Mixamo` or `none`.
    pub fn scheme(&self) -> &'static str {
        self.scheme
    }

    /// The binding called `name` (`right_elbow`, `head`).
    pub fn get(&self, name: &str) -> Option<&KeypointBinding> {
        self.index_of(name).map(|i| &self.bindings[i])
    }

    /// The index of the binding called `name`, in [`Self::bindings`] and
    /// in [`Self::project`]'s output.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.bindings.iter().position(|b| b.name == name)
    }

    /// Each binding's point projected by `camera` for the joint transforms
    /// `world` (`None` behind the camera): the keypoints a perfect detector
    /// would report, in `camera`'s pixels.
    pub fn project(&self, world: &[Isometry3<f64>], camera: &Camera) -> Vec<Option<[f64; 2]>> {
        self.bindings
            .iter()
            .map(|b| {
                camera
                    .project(&b.point.world(world))
                    .map(|(u, v, _)| [u, v])
            })
            .collect()
    }
}

/// One observed keypoint, in the tracker camera's pixels.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservedKeypoint {
    /// The binding's name (`right_elbow`, `head`).
    pub name: &'static str,
    pub point: SkeletonPoint,
    pub u: f64,
    pub v: f64,
    /// The detector's depth relative to the hips' midpoint, in the same
    /// pixels as `u` (smaller is nearer the camera); `None` when the
    /// detector gives none (the depth-order part of the term skips it).
    pub z: Option<f64>,
    /// `c_k` of the module docs, in `(0, 1]`.
    pub confidence: f64,
}

/// The keypoints of one detection that weigh the particles: only those
/// detected with enough confidence (module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct KeypointObservation {
    points: Vec<ObservedKeypoint>,
    scale_px: f64,
    /// Indices into `points` of the [`DEPTH_SEGMENTS`] whose two ends
    /// both carry a depth.
    depth_pairs: Vec<(usize, usize)>,
}

/// At most this many keypoints have their depth compared (the depth part
/// keeps the camera depths of the first ones on the stack).
const DEPTH_POINTS: usize = 16;

impl KeypointObservation {
    /// An observation of `points` (non-finite positions and confidences
    /// ≤ 0 are dropped), its scale from the points themselves
    /// ([`Self::scale_px`]).
    pub fn new(points: Vec<ObservedKeypoint>) -> Self {
        let points: Vec<ObservedKeypoint> = points
            .into_iter()
            .filter(|p| {
                p.u.is_finite() && p.v.is_finite() && p.confidence.is_finite() && p.confidence > 0.0
            })
            .map(|mut p| {
                p.z = p.z.filter(|z| z.is_finite());
                p
            })
            .collect();
        let scale_px = person_scale(&points);
        let at = |name: &str| {
            points
                .iter()
                .position(|p| p.name == name && p.z.is_some())
                .filter(|&i| i < DEPTH_POINTS)
        };
        let depth_pairs = DEPTH_SEGMENTS
            .iter()
            .filter_map(|&(a, b)| at(a).zip(at(b)))
            .collect();
        Self {
            points,
            scale_px,
            depth_pairs,
        }
    }

    /// As [`Self::new`] with the person's size `s` given in pixels (e.g.
    /// from the previous estimate's projection).
    pub fn with_scale(points: Vec<ObservedKeypoint>, scale_px: f64) -> Self {
        let mut o = Self::new(points);
        o.scale_px = scale_px;
        o
    }

    /// The keypoints of a BlazePose detection `kp` on a `frame_width ×
    /// frame_height` frame, moved into the pixels of `camera` (the
    /// tracker's camera at the label size: `u · camera.width() /
    /// frame_width`, `v` alike), for the bindings of `map`. A landmark's
    /// confidence is the smaller of its visibility score and its presence;
    /// keypoints below `min_score` are left out (a midpoint: the mean of the
    /// two ears' confidences).
    pub fn from_keypoints(
        kp: &Keypoints,
        map: &KeypointMap,
        frame_width: u32,
        frame_height: u32,
        camera: &Camera,
        min_score: f32,
    ) -> Self {
        let sx = f64::from(camera.width()) / f64::from(frame_width.max(1));
        let sy = f64::from(camera.height()) / f64::from(frame_height.max(1));
        let landmark = |i: usize| {
            let p = &kp.points[i];
            (
                f64::from(p.u),
                f64::from(p.v),
                f64::from(p.score.min(p.presence)),
                f64::from(p.z),
            )
        };
        let points = map
            .bindings
            .iter()
            .filter_map(|b| {
                let (u, v, c, z) = match b.source {
                    LandmarkSource::One(i) => landmark(i),
                    LandmarkSource::Midpoint(i, j) => {
                        let (a, b) = (landmark(i), landmark(j));
                        (
                            (a.0 + b.0) / 2.0,
                            (a.1 + b.1) / 2.0,
                            (a.2 + b.2) / 2.0,
                            (a.3 + b.3) / 2.0,
                        )
                    }
                };
                (c >= f64::from(min_score)).then_some(ObservedKeypoint {
                    name: b.name,
                    point: b.point,
                    u: u * sx,
                    v: v * sy,
                    z: z.is_finite().then_some(z * sx),
                    confidence: c,
                })
            })
            .collect();
        Self::new(points)
    }

    /// Keypoints at given pixel positions for the bindings of `map`
    /// (`None`: not detected), each with confidence 1: e.g. the true
    /// projections ([`KeypointMap::project`]) for a test.
    pub fn from_pixels(map: &KeypointMap, pixels: &[Option<[f64; 2]>]) -> Self {
        Self::new(
            map.bindings
                .iter()
                .zip(pixels)
                .filter_map(|(b, p)| {
                    p.map(|[u, v]| ObservedKeypoint {
                        name: b.name,
                        point: b.point,
                        u,
                        v,
                        z: None,
                        confidence: 1.0,
                    })
                })
                .collect(),
        )
    }

    pub fn points(&self) -> &[ObservedKeypoint] {
        &self.points
    }

    /// Whether the observation can weigh anything: at least two keypoints
    /// and a positive, finite scale.
    pub fn is_usable(&self) -> bool {
        self.points.len() >= 2 && self.scale_px.is_finite() && self.scale_px > 0.0
    }

    /// `s`, the person's size in pixels: the distance between the
    /// shoulders' and the hips' midpoints when all four are observed, else
    /// half the larger side of the keypoints' bounding box.
    pub fn scale_px(&self) -> f64 {
        self.scale_px
    }

    /// Checks that every point's joint exists in `skeleton`.
    ///
    /// # Errors
    /// [`TrackError::InvalidSetting`] naming the keypoint.
    pub fn check(&self, skeleton: &Skeleton) -> Result<()> {
        match self.points.iter().find(|p| p.point.joint >= skeleton.len()) {
            Some(p) => Err(TrackError::InvalidSetting {
                field: "keypoints",
                value: format!("{} on joint {}", p.name, p.point.joint),
                reason: "the joint is not in the tracked skeleton (another map's observation?)",
            }),
            None => Ok(()),
        }
    }
}

fn person_scale(points: &[ObservedKeypoint]) -> f64 {
    let at = |name: &str| points.iter().find(|p| p.name == name).map(|p| [p.u, p.v]);
    let mid = |a: Option<[f64; 2]>, b: Option<[f64; 2]>| {
        a.zip(b)
            .map(|(a, b)| [(a[0] + b[0]) / 2.0, (a[1] + b[1]) / 2.0])
    };
    let shoulders = mid(at("left_shoulder"), at("right_shoulder"));
    let hips = mid(at("left_hip"), at("right_hip"));
    if let Some((s, h)) = shoulders.zip(hips) {
        let torso = (s[0] - h[0]).hypot(s[1] - h[1]);
        if torso > 0.0 {
            return torso;
        }
    }
    if points.len() < 2 {
        return f64::NAN;
    }
    let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
    for p in points {
        for (k, x) in [p.u, p.v].into_iter().enumerate() {
            lo[k] = lo[k].min(x);
            hi[k] = hi[k].max(x);
        }
    }
    (hi[0] - lo[0]).max(hi[1] - lo[1]) / 2.0
}

/// The keypoint likelihood (module docs' equations).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeypointTerm {
    /// σ as a fraction of the person's size `s` ([`KeypointObservation::scale_px`]).
    pub sigma: f64,
    /// Degrees of freedom ν of the Student-t.
    pub nu: f64,
    /// σ_z of the depth-order part as a fraction of `s`; 0 turns it off.
    pub depth_sigma: f64,
    /// κ: the detector's relative depth per pixel of true depth
    /// difference ([`DEFAULT_DEPTH_SCALE`]).
    pub depth_scale: f64,
}

impl Default for KeypointTerm {
    fn default() -> Self {
        Self {
            sigma: DEFAULT_KEYPOINT_SIGMA,
            nu: 4.0,
            depth_sigma: DEFAULT_DEPTH_SIGMA,
            depth_scale: DEFAULT_DEPTH_SCALE,
        }
    }
}

/// Default σ of the keypoint term: a tenth of the torso's length (about
/// 5 cm on an adult; 3 label pixels for a person 100 pixels tall).
pub const DEFAULT_KEYPOINT_SIGMA: f64 = 0.1;

/// Default σ_z of the depth-order part: half the torso's length (about
/// 25 cm of depth difference on an adult). Broad on purpose: the
/// detector's relative depth is coarse in size but reliable in sign for a
/// segment that points towards or away from the camera, and the part is
/// there to settle that sign (module docs).
pub const DEFAULT_DEPTH_SIGMA: f64 = 0.5;

/// Default κ: BlazePose's relative depth `z` against the true depth
/// difference in the same pixels, the least-squares slope (through 0)
/// over the arm segments of a footage clip rendered for this purpose and
/// not evaluated on (`keypoint_bias`: 1.55–1.83 for the upper arms,
/// 2.8–3.4 for the forearms).
pub const DEFAULT_DEPTH_SCALE: f64 = 1.7;

/// The segments whose depth order the depth part compares: each arm's
/// upper arm and forearm, each leg's thigh and shin, and the shoulder and
/// hip lines (the trunk's turn).
pub(crate) const DEPTH_SEGMENTS: [(&str, &str); 10] = [
    ("left_shoulder", "left_elbow"),
    ("left_elbow", "left_wrist"),
    ("right_shoulder", "right_elbow"),
    ("right_elbow", "right_wrist"),
    ("left_hip", "left_knee"),
    ("left_knee", "left_ankle"),
    ("right_hip", "right_knee"),
    ("right_knee", "right_ankle"),
    ("left_shoulder", "right_shoulder"),
    ("left_hip", "right_hip"),
];

/// Where BlazePose puts the elbow and the wrist: short of the joint
/// centre along the bone above it, by this fraction of the bone's length
/// (module docs, "Mapping"). Measured with `keypoint_bias` on a footage
/// clip rendered for this purpose and not evaluated on: the elbow 7–10 %
/// of the upper arm towards the shoulder, the wrist 1–7 % of the forearm
/// towards the elbow.
pub const LANDMARK_SHIFT: [(&str, f64); 2] = [("elbow", 0.085), ("wrist", 0.04)];

/// The [`LANDMARK_SHIFT`] fraction of the landmark `name` (`right_elbow`,
/// `wrist`): that of the joint its name ends with; `None` for the others.
pub fn landmark_shift(name: &str) -> Option<f64> {
    LANDMARK_SHIFT
        .iter()
        .find(|(n, _)| name.ends_with(n))
        .map(|&(_, frac)| frac)
}

/// Default [`crate::TrackerConfig::keypoint_lifts`]: up to 4 lifted
/// configurations of each arm alone and 4 of both together.
pub const DEFAULT_KEYPOINT_LIFTS: usize = 12;

impl KeypointTerm {
    pub fn new(sigma: f64) -> Self {
        Self {
            sigma,
            ..Self::default()
        }
    }

    /// `log L_kp` of one pose from its joint transforms `world`; 0 for an
    /// unusable observation.
    pub fn log_likelihood(
        &self,
        obs: &KeypointObservation,
        camera: &Camera,
        world: &[Isometry3<f64>],
    ) -> f64 {
        if !obs.is_usable() {
            return 0.0;
        }
        let sigma = self.sigma * obs.scale_px;
        let inv = 1.0 / (self.nu * sigma * sigma);
        let half = 0.5 * (self.nu + 2.0);
        let far = 4.0 * (f64::from(camera.width()).powi(2) + f64::from(camera.height()).powi(2));
        let mut ll = 0.0;
        // Camera depth of each keypoint's point, for the depth part.
        let mut depth = [f64::NAN; DEPTH_POINTS];
        for (i, k) in obs.points.iter().enumerate() {
            let projected = camera.project(&k.point.world(world));
            if let (Some((_, _, d)), Some(slot)) = (projected, depth.get_mut(i)) {
                *slot = d;
            }
            let r2 = projected.map_or(far, |(u, v, _)| (u - k.u).powi(2) + (v - k.v).powi(2));
            ll -= k.confidence * half * (r2 * inv).ln_1p();
        }
        if self.depth_sigma > 0.0 {
            let sz = self.depth_sigma * obs.scale_px;
            let inv_z = 1.0 / (self.nu * sz * sz);
            let half_z = 0.5 * (self.nu + 1.0);
            for &(a, b) in &obs.depth_pairs {
                let (ka, kb) = (&obs.points[a], &obs.points[b]);
                let (Some(za), Some(zb)) = (ka.z, kb.z) else {
                    continue;
                };
                let (da, db) = (depth[a], depth[b]);
                if !(da.is_finite() && db.is_finite()) {
                    continue;
                }
                // The particle's depth difference in pixels at the
                // segment's distance, against the detector's.
                let particle = (db - da) * camera.fx() * 2.0 / (da + db);
                let r = particle - (zb - za) / self.depth_scale;
                ll -= ka.confidence.min(kb.confidence) * half_z * (r * r * inv_z).ln_1p();
            }
        }
        ll
    }

    /// Adds `log L_kp` of every pose of the batch `fk` to `out` (one entry
    /// per pose).
    pub fn add_log_likelihood(
        &self,
        obs: &KeypointObservation,
        camera: &Camera,
        fk: &BatchForwardKinematics,
        out: &mut [f64],
    ) {
        if !obs.is_usable() {
            return;
        }
        for (i, o) in out.iter_mut().enumerate().take(fk.len()) {
            *o += self.log_likelihood(obs, camera, fk.world(i));
        }
    }
}

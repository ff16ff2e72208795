//! Sensors: IMU orientation constraints (SPARSE Eq. 2), optical-marker
//! position constraints (SPARSE Eq. 3), their registration to bones, and
//! synthetic sensor streams from motion-capture clips (SPARSE §4, Fig. 5).
//!
//! An IMU `i` is rigidly attached to bone `b` with a registration rotation
//! `R_reg,i` (the sensor's orientation in the bone frame), so it reads
//! `R_b R_reg,i` in the world. With the reading `R̄_i`, the residual is the
//! world-frame rotation vector that turns the predicted sensor orientation
//! into the measured one,
//!
//! ```text
//! φ_θi = log(R̄_i (R_b R_reg,i)ᵀ),      h J_θ v = φ_θ        (Eq. 2)
//! ```
//!
//! since a world angular velocity `ω = J_θ v` held for one step `h` moves the
//! sensor to `exp(h ω) R_b R_reg,i` (the paper's `log(R̄ᵀ R_imu R_b)`, with
//! the factors ordered so that the residual and `J_θ` live in the same
//! frame). A marker `i` sits at `r_i` in bone `b`'s frame and reads `x̄_i`:
//!
//! ```text
//! φ_xi = x̄_i − (p_b + R_b r_i),        h J_x v = φ_x         (Eq. 3)
//! ```
//!
//! `J_θ` and `J_x` are the dynamics crate's orientation and point Jacobians
//! (world angular velocity and world point velocity per generalised
//! velocity `v`).
//!
//! Synthetic sensors (§4 "Synthetic sensors") are obtained by forward
//! kinematics of a ground-truth pose compounded with the registration
//! transform; [`SyntheticSensors`] optionally adds seeded Gaussian noise and
//! drops readings at random.

use dynamics::{Data, Model};
use nalgebra::{DMatrix, Isometry3, Point3, UnitQuaternion, Vector3};
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;
use rand_pcg::Pcg64;
use skeleton::Skeleton;

use crate::error::{Result, SparseError, require_non_negative};

/// An inertial measurement unit: a global orientation on one bone.
#[derive(Clone, Debug, PartialEq)]
pub struct Imu {
    pub name: String,
    /// Skeleton joint (bone) index.
    pub joint: usize,
    /// The sensor's orientation in the bone frame, `R_reg`.
    pub registration: UnitQuaternion<f64>,
}

/// An optical marker: a global position on one bone.
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    pub name: String,
    /// Skeleton joint (bone) index.
    pub joint: usize,
    /// The marker's position in the bone frame, `r_i` (metres).
    pub offset: Vector3<f64>,
}

/// An IMU or marker placement by bone name, before resolution.
#[derive(Clone, Debug)]
pub struct SensorSpec {
    pub name: String,
    pub bone: String,
    pub registration: UnitQuaternion<f64>,
    pub offset: Vector3<f64>,
}

/// The sensors worn by the subject.
#[derive(Clone, Debug, PartialEq)]
pub struct SensorSet {
    pub imus: Vec<Imu>,
    pub markers: Vec<Marker>,
}

/// One frame of sensor readings, in the order of the [`SensorSet`]; `None`
/// is a missing reading (occluded marker, dropped packet).
#[derive(Clone, Debug, PartialEq)]
pub struct SensorFrame {
    pub imus: Vec<Option<UnitQuaternion<f64>>>,
    pub markers: Vec<Option<Point3<f64>>>,
}

/// Bone-name candidates of each placement of Fig. 5, first match wins
/// (CMU BVH names first, then posecloud's human preset and common names).
const LAYOUT: [(&str, &[&str]); 6] = [
    ("head", &["Head", "head"]),
    (
        "left hand",
        &["lhand", "LeftHand", "l_hand", "LeftWrist", "l_wrist"],
    ),
    (
        "right hand",
        &["rhand", "RightHand", "r_hand", "RightWrist", "r_wrist"],
    ),
    ("left foot", &["LeftAnkle", "LeftFoot", "l_ankle", "l_foot"]),
    (
        "right foot",
        &["RightAnkle", "RightFoot", "r_ankle", "r_foot"],
    ),
    ("lower back", &["Hips", "hips", "pelvis", "Pelvis", "root"]),
];

impl SensorSet {
    /// Resolves sensor placements by bone name. Every name must exist.
    pub fn new(skeleton: &Skeleton, imus: &[SensorSpec], markers: &[SensorSpec]) -> Result<Self> {
        let find = |kind: &str, s: &SensorSpec| {
            skeleton
                .find(&s.bone)
                .map_err(|_| SparseError::UnknownBone {
                    what: format!("{kind} '{}'", s.name),
                    bone: s.bone.clone(),
                })
        };
        let imus = imus
            .iter()
            .map(|s| {
                if !s.registration.coords.iter().all(|c| c.is_finite()) {
                    return Err(SparseError::NonFinite {
                        frame: 0,
                        sensor: format!("IMU '{}' registration", s.name),
                        kind: "quaternion",
                        value: format!("{:?}", s.registration.coords),
                    });
                }
                Ok(Imu {
                    name: s.name.clone(),
                    joint: find("IMU", s)?,
                    registration: s.registration,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let markers = markers
            .iter()
            .map(|s| {
                if !s.offset.iter().all(|c| c.is_finite()) {
                    return Err(SparseError::NonFinite {
                        frame: 0,
                        sensor: format!("marker '{}' offset", s.name),
                        kind: "vector",
                        value: format!("{:?}", s.offset),
                    });
                }
                Ok(Marker {
                    name: s.name.clone(),
                    joint: find("marker", s)?,
                    offset: s.offset,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { imus, markers })
    }

    /// The configuration of SPARSE Fig. 5: six IMUs (head, hands, feet,
    /// lower back) and five markers (head, hands, feet). Each IMU gets a
    /// distinct, non-trivial registration rotation (a sensor strapped on
    /// at an angle) and each marker sits at its bone's capsule centre pushed
    /// out to the capsule surface, as a marker on the skin would.
    pub fn paper_layout(skeleton: &Skeleton) -> Result<Self> {
        let mut imus = Vec::new();
        let mut markers = Vec::new();
        for (k, (place, names)) in LAYOUT.iter().enumerate() {
            let bone = names
                .iter()
                .find(|n| skeleton.find(n).is_ok())
                .ok_or_else(|| SparseError::UnknownBone {
                    what: format!("Fig. 5 placement '{place}'"),
                    bone: names.join("|"),
                })?;
            let j = skeleton.find(bone)?;
            // 25° about a per-sensor axis: registration matters in the residual.
            let axis = Vector3::new(1.0 + k as f64, -0.5 * k as f64, 0.7);
            let registration = UnitQuaternion::from_axis_angle(
                &nalgebra::Unit::new_normalize(axis),
                25f64.to_radians(),
            );
            imus.push(SensorSpec {
                name: format!("{place} IMU"),
                bone: bone.to_string(),
                registration,
                offset: Vector3::zeros(),
            });
            if *place != "lower back" {
                let offset = skeleton
                    .joint(j)
                    .body
                    .as_ref()
                    .map_or(Vector3::zeros(), |b| {
                        let c = &b.capsule;
                        let axis = c.end - c.start;
                        // A direction perpendicular to the capsule axis.
                        let side = axis.cross(&Vector3::x());
                        let side = if side.norm() > 1e-9 {
                            side.normalize()
                        } else {
                            Vector3::y()
                        };
                        c.centre() + side * c.radius
                    });
                markers.push(SensorSpec {
                    name: format!("{place} marker"),
                    bone: bone.to_string(),
                    registration: UnitQuaternion::identity(),
                    offset,
                });
            }
        }
        Self::new(skeleton, &imus, &markers)
    }

    /// Exact readings of every sensor for the world transforms `world` of a
    /// pose (forward kinematics compounded with the registration, §4).
    pub fn measure(&self, world: &[Isometry3<f64>]) -> SensorFrame {
        SensorFrame {
            imus: self
                .imus
                .iter()
                .map(|s| Some(world[s.joint].rotation * s.registration))
                .collect(),
            markers: self
                .markers
                .iter()
                .map(|s| Some(world[s.joint] * Point3::from(s.offset)))
                .collect(),
        }
    }

    /// Checks a frame against this set: stream lengths, finite readings,
    /// unit quaternions. `frame` numbers the frame in the error.
    pub fn validate(&self, reading: &SensorFrame, frame: usize) -> Result<()> {
        for (field, expected, got) in [
            ("IMU readings", self.imus.len(), reading.imus.len()),
            ("marker readings", self.markers.len(), reading.markers.len()),
        ] {
            if got != expected {
                return Err(SparseError::StreamLength {
                    frame,
                    field,
                    expected,
                    got,
                });
            }
        }
        for (s, r) in self.imus.iter().zip(&reading.imus) {
            if let Some(q) = r {
                let c = &q.coords;
                if !(c.iter().all(|x| x.is_finite()) && (c.norm() - 1.0).abs() < 1e-6) {
                    return Err(SparseError::NonFinite {
                        frame,
                        sensor: format!("IMU '{}'", s.name),
                        kind: "unit quaternion",
                        value: format!("{:?}", c.as_slice()),
                    });
                }
            }
        }
        for (s, r) in self.markers.iter().zip(&reading.markers) {
            if let Some(x) = r
                && !x.iter().all(|c| c.is_finite())
            {
                return Err(SparseError::NonFinite {
                    frame,
                    sensor: format!("marker '{}'", s.name),
                    kind: "position",
                    value: format!("{:?}", x.coords.as_slice()),
                });
            }
        }
        Ok(())
    }

    /// Stacks the rows of SPARSE Eq. 2 and Eq. 3 for the readings present
    /// and enabled into the first rows of `rows` (`J_s`, 3 rows per sensor,
    /// and the residual `φ_s`, IMUs first). Returns the number of rows
    /// written. `rows` must have room for [`SensorSet::max_rows`] rows.
    #[allow(clippy::too_many_arguments)]
    pub fn constraint_rows(
        &self,
        model: &Model,
        data: &mut Data,
        q: &[f64],
        world: &[Isometry3<f64>],
        reading: &SensorFrame,
        enabled: &SensorMask,
        rows: &mut ConstraintRows,
    ) -> Result<usize> {
        let mut row = 0;
        for (i, s) in self.imus.iter().enumerate() {
            let Some(target) = reading.imus[i].filter(|_| enabled.imus[i]) else {
                continue;
            };
            let predicted = world[s.joint].rotation * s.registration;
            let r = rotation::log(&(target * predicted.inverse()));
            model.orientation_jacobian(data, q, s.joint, &mut rows.sensor_jacobian)?;
            rows.set_sensor_rows(row, &r, RowKind::Imu);
            row += 3;
        }
        for (i, s) in self.markers.iter().enumerate() {
            let Some(target) = reading.markers[i].filter(|_| enabled.markers[i]) else {
                continue;
            };
            let predicted = world[s.joint] * Point3::from(s.offset);
            let r = target - predicted;
            model.point_jacobian(data, q, s.joint, &s.offset, &mut rows.sensor_jacobian)?;
            rows.set_sensor_rows(row, &r, RowKind::Marker);
            row += 3;
        }
        Ok(row)
    }

    /// The number of rows [`SensorSet::constraint_rows`] can write at most.
    pub fn max_rows(&self) -> usize {
        3 * (self.imus.len() + self.markers.len())
    }
}

/// Which sensors are switched on (the app's toggles).
#[derive(Clone, Debug, PartialEq)]
pub struct SensorMask {
    pub imus: Vec<bool>,
    pub markers: Vec<bool>,
}

impl SensorMask {
    pub fn all(sensors: &SensorSet) -> Self {
        Self {
            imus: vec![true; sensors.imus.len()],
            markers: vec![true; sensors.markers.len()],
        }
    }

    /// Switches IMU `i` on or off.
    pub fn set_imu(&mut self, i: usize, on: bool) -> Result<()> {
        set_flag(&mut self.imus, "IMU index", i, on)
    }

    /// Switches marker `i` on or off.
    pub fn set_marker(&mut self, i: usize, on: bool) -> Result<()> {
        set_flag(&mut self.markers, "marker index", i, on)
    }
}

/// `flags[i] = on`, or a [`SparseError::Dimension`] naming `what`.
fn set_flag(flags: &mut [bool], what: &str, i: usize, on: bool) -> Result<()> {
    let n = flags.len();
    *flags.get_mut(i).ok_or(SparseError::Dimension {
        what: what.into(),
        expected: n,
        got: i,
    })? = on;
    Ok(())
}

/// The kind of a constraint row, which decides its stiffness (§4: markers
/// 5×10⁸, IMUs 1.2×10⁸, prior 2×10⁶).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    Imu,
    Marker,
    Prior,
}

/// A stack of constraint rows of SPARSE Eq. 6: `J` (`nv` columns), the
/// residual `φ` and each row's [`RowKind`], with room for a fixed number of
/// rows; [`SensorSet::constraint_rows`] writes the sensor rows first.
#[derive(Clone, Debug)]
pub struct ConstraintRows {
    pub jac: DMatrix<f64>,
    pub phi: Vec<f64>,
    pub kinds: Vec<RowKind>,
    /// The 3 × nv Jacobian of one sensor, before it is copied into `jac`.
    sensor_jacobian: DMatrix<f64>,
}

impl ConstraintRows {
    /// Room for `capacity` rows of `nv` columns (zeros; every kind `Prior`).
    pub fn new(capacity: usize, nv: usize) -> Self {
        Self {
            jac: DMatrix::zeros(capacity, nv),
            phi: vec![0.0; capacity],
            kinds: vec![RowKind::Prior; capacity],
            sensor_jacobian: DMatrix::zeros(3, nv),
        }
    }

    /// Rows `row..row + 3`: the sensor Jacobian just built, residual `r`.
    fn set_sensor_rows(&mut self, row: usize, r: &Vector3<f64>, kind: RowKind) {
        self.jac
            .view_mut((row, 0), (3, self.sensor_jacobian.ncols()))
            .copy_from(&self.sensor_jacobian);
        for k in 0..3 {
            self.phi[row + k] = r[k];
            self.kinds[row + k] = kind;
        }
    }
}

/// Synthetic sensor streams from ground-truth poses, with optional seeded
/// noise and dropouts.
#[derive(Clone, Debug, PartialEq)]
pub struct SyntheticSensors {
    /// Standard deviation of the IMU orientation noise, radians (a rotation
    /// vector with i.i.d. N(0, σ²) components, applied on the left).
    pub imu_noise: f64,
    /// Standard deviation of each marker coordinate's noise, metres.
    pub marker_noise: f64,
    /// Probability that a reading is missing in a frame.
    pub dropout: f64,
    pub seed: u64,
}

impl Default for SyntheticSensors {
    fn default() -> Self {
        Self {
            imu_noise: 0.0,
            marker_noise: 0.0,
            dropout: 0.0,
            seed: 0,
        }
    }
}

impl SyntheticSensors {
    /// One sensor frame per pose of `poses`. Errors on a pose of the wrong
    /// length or out-of-range options.
    pub fn synthesize(
        &self,
        sensors: &SensorSet,
        skeleton: &Skeleton,
        poses: &[Vec<f64>],
    ) -> Result<Vec<SensorFrame>> {
        require_non_negative("imu_noise", self.imu_noise)?;
        require_non_negative("marker_noise", self.marker_noise)?;
        if !(0.0..=1.0).contains(&self.dropout) {
            return Err(SparseError::InvalidParameter {
                name: "dropout".into(),
                requirement: "a probability in [0, 1]",
                value: self.dropout,
            });
        }
        let mut rng = Pcg64::seed_from_u64(self.seed);
        let mut world = vec![Isometry3::identity(); skeleton.len()];
        let mut out = Vec::with_capacity(poses.len());
        for (f, pose) in poses.iter().enumerate() {
            if pose.len() != skeleton.dof() {
                return Err(SparseError::Dimension {
                    what: format!("ground-truth pose {f}"),
                    expected: skeleton.dof(),
                    got: pose.len(),
                });
            }
            skeleton.forward_kinematics_into(pose, &mut world);
            let mut frame = sensors.measure(&world);
            let mut normal = || rng.sample::<f64, _>(StandardNormal);
            for r in frame.imus.iter_mut().flatten() {
                if self.imu_noise > 0.0 {
                    let e = Vector3::new(normal(), normal(), normal()) * self.imu_noise;
                    *r = rotation::exp(&e) * *r;
                }
            }
            for x in frame.markers.iter_mut().flatten() {
                if self.marker_noise > 0.0 {
                    *x += Vector3::new(normal(), normal(), normal()) * self.marker_noise;
                }
            }
            if self.dropout > 0.0 {
                for r in frame.imus.iter_mut() {
                    if rng.random::<f64>() < self.dropout {
                        *r = None;
                    }
                }
                for x in frame.markers.iter_mut() {
                    if rng.random::<f64>() < self.dropout {
                        *x = None;
                    }
                }
            }
            out.push(frame);
        }
        Ok(out)
    }
}

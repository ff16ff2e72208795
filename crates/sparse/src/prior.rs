//! Motion priors (SPARSE §3): black boxes `q̃ = g(θ, x, q)` that estimate the
//! non-root joint angles from the sensors and the previous pose.
//!
//! - **REF**: a single reference pose (the T-pose, the skeleton's rest pose).
//! - **NGT**: the ground truth perturbed by `N(0, σ²)` on every joint angle
//!   (σ = 0.12 rad in the paper), a stand-in for a learned prior that is
//!   right on average but noisy.
//! - **CD**: a clustered motion-capture database searched by k nearest
//!   neighbours, the neighbours blended with inverse-quartic weights
//!   `w = 1 / dist(y, ŷ)⁴` where `y = (θ, x, q)` and
//!   `dist = w_θ Σ|log(θ̂⁻¹θ)| + w_x Σ‖x̂ − x‖ + w_q ‖q̂ − q‖` (§3). The
//!   paper clusters with a spectral method (Chen & Cai); here k-means++ on
//!   the non-root angles picks the clusters and each cluster is represented
//!   by its medoid, a real pose whose synthetic sensor readings are stored
//!   beside it. Sensor features are expressed in the root's frame so that
//!   the search does not depend on where the subject stands or faces.
//!
//! The tracker turns `q̃` into the constraint of Eq. 4–5 ([`prior_residual`]).

use nalgebra::{Isometry3, Point3, UnitQuaternion, Vector3};
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;
use rand_pcg::Pcg64;
use skeleton::{JointKind, Skeleton};

use crate::error::{Result, SparseError, require_non_negative};
use crate::sensors::{SensorFrame, SensorMask, SensorSet};

/// What a prior may look at.
pub struct PriorQuery<'a> {
    /// Frame number since the last reset (NGT reads its ground truth there).
    pub frame: usize,
    /// The tracker's current pose.
    pub q: &'a [f64],
    /// World transforms of `q`.
    pub world: &'a [Isometry3<f64>],
    pub reading: &'a SensorFrame,
    pub enabled: &'a SensorMask,
}

/// The motion priors of SPARSE §3.
#[derive(Clone, Debug)]
pub enum MotionPrior {
    /// REF: always the same pose.
    Reference { pose: Vec<f64> },
    /// NGT: ground truth plus `N(0, σ²)` per joint angle.
    NoisyGroundTruth {
        poses: Vec<Vec<f64>>,
        sigma: f64,
        seed: u64,
        rng: Pcg64,
    },
    /// CD: k-NN in a clustered database.
    Clustered(ClusteredDatabase),
}

impl MotionPrior {
    /// REF with the skeleton's rest pose (a T-pose for CMU BVH skeletons).
    pub fn reference(skeleton: &Skeleton) -> Self {
        Self::Reference {
            pose: skeleton.rest_pose(),
        }
    }

    /// NGT over the ground-truth `poses` (one per tracker frame).
    pub fn noisy_ground_truth(poses: Vec<Vec<f64>>, sigma: f64, seed: u64) -> Result<Self> {
        require_non_negative("NGT sigma", sigma)?;
        if poses.is_empty() {
            return Err(SparseError::Empty {
                what: "NGT ground truth".into(),
            });
        }
        Ok(Self::NoisyGroundTruth {
            poses,
            sigma,
            seed,
            rng: Pcg64::seed_from_u64(seed),
        })
    }

    /// The short name of Table 1's columns.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Reference { .. } => "REF",
            Self::NoisyGroundTruth { .. } => "NGT",
            Self::Clustered(_) => "CD",
        }
    }

    /// Restarts the prior's randomness (NGT) so that a replay is identical.
    pub fn reset(&mut self) {
        if let Self::NoisyGroundTruth { seed, rng, .. } = self {
            *rng = Pcg64::seed_from_u64(*seed);
        }
    }

    /// Writes the estimate `q̃` into `out` (full pose; the root part is not
    /// used by the tracker).
    pub fn estimate(
        &mut self,
        skeleton: &Skeleton,
        query: &PriorQuery,
        out: &mut [f64],
    ) -> Result<()> {
        let dof = skeleton.dof();
        if out.len() != dof || query.q.len() != dof {
            return Err(SparseError::Dimension {
                what: "prior estimate".into(),
                expected: dof,
                got: out.len().min(query.q.len()),
            });
        }
        match self {
            Self::Reference { pose } => {
                if pose.len() != dof {
                    return Err(SparseError::Dimension {
                        what: "REF pose".into(),
                        expected: dof,
                        got: pose.len(),
                    });
                }
                out.copy_from_slice(pose);
            }
            Self::NoisyGroundTruth {
                poses, sigma, rng, ..
            } => {
                let truth = &poses[query.frame.min(poses.len() - 1)];
                if truth.len() != dof {
                    return Err(SparseError::Dimension {
                        what: format!("NGT ground-truth pose {}", query.frame),
                        expected: dof,
                        got: truth.len(),
                    });
                }
                let root = skeleton.joint(0).kind.dof();
                for (i, (o, t)) in out.iter_mut().zip(truth).enumerate() {
                    *o = if i < root || *sigma == 0.0 {
                        *t
                    } else {
                        t + *sigma * rng.sample::<f64, _>(StandardNormal)
                    };
                }
            }
            Self::Clustered(db) => db.estimate(skeleton, query, out)?,
        }
        Ok(())
    }
}

/// Options of the CD prior.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterOptions {
    /// Number of representative poses kept (the paper: 5000 from all of CMU).
    pub clusters: usize,
    /// k-means iterations.
    pub iterations: usize,
    /// Neighbours blended per query.
    pub neighbours: usize,
    /// Distance weights `w_θ` (per radian), `w_x` (per metre), `w_q` (per radian).
    pub w_theta: f64,
    pub w_x: f64,
    pub w_q: f64,
    pub seed: u64,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        Self {
            clusters: 500,
            iterations: 12,
            neighbours: 5,
            w_theta: 1.0,
            w_x: 5.0,
            w_q: 0.5,
            seed: 7,
        }
    }
}

/// One database sample: a pose and its sensor readings in the root frame.
#[derive(Clone, Debug)]
struct Sample {
    pose: Vec<f64>,
    imus: Vec<UnitQuaternion<f64>>,
    markers: Vec<Point3<f64>>,
}

/// The CD prior's database (module docs).
#[derive(Clone, Debug)]
pub struct ClusteredDatabase {
    samples: Vec<Sample>,
    options: ClusterOptions,
    root_dof: usize,
    /// Scratch: (distance, sample) of the current neighbours.
    nearest: Vec<(f64, usize)>,
}

impl ClusteredDatabase {
    /// Clusters the poses of `clips` (all on `skeleton`) and stores the
    /// medoids with their sensor readings for `sensors`.
    pub fn build(
        skeleton: &Skeleton,
        sensors: &SensorSet,
        clips: &[&[Vec<f64>]],
        options: ClusterOptions,
    ) -> Result<Self> {
        for (name, x) in [
            ("w_theta", options.w_theta),
            ("w_x", options.w_x),
            ("w_q", options.w_q),
        ] {
            require_non_negative(name, x)?;
        }
        if options.clusters == 0 || options.neighbours == 0 {
            return Err(SparseError::InvalidParameter {
                name: "clusters/neighbours".into(),
                requirement: "at least 1",
                value: 0.0,
            });
        }
        let dof = skeleton.dof();
        let root_dof = skeleton.joint(0).kind.dof();
        let poses: Vec<&Vec<f64>> = clips.iter().flat_map(|c| c.iter()).collect();
        if poses.is_empty() {
            return Err(SparseError::Empty {
                what: "CD database clips".into(),
            });
        }
        for (i, p) in poses.iter().enumerate() {
            if p.len() != dof {
                return Err(SparseError::Dimension {
                    what: format!("CD database pose {i}"),
                    expected: dof,
                    got: p.len(),
                });
            }
        }
        let features: Vec<&[f64]> = poses.iter().map(|p| &p[root_dof..]).collect();
        let medoids = kmeans_medoids(
            &features,
            options.clusters,
            options.iterations,
            options.seed,
        );
        let mut world = vec![Isometry3::identity(); skeleton.len()];
        let samples = medoids
            .into_iter()
            .map(|i| {
                skeleton.forward_kinematics_into(poses[i], &mut world);
                let (imus, markers) = root_relative(&world, &sensors.measure(&world), None);
                Sample {
                    pose: poses[i].clone(),
                    imus: imus.into_iter().map(|x| x.unwrap()).collect(),
                    markers: markers.into_iter().map(|x| x.unwrap()).collect(),
                }
            })
            .collect();
        Ok(Self {
            samples,
            options,
            root_dof,
            nearest: Vec::new(),
        })
    }

    /// Number of stored poses.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    fn estimate(&mut self, skeleton: &Skeleton, query: &PriorQuery, out: &mut [f64]) -> Result<()> {
        let sensors_imus = query.reading.imus.len();
        if self.samples[0].imus.len() != sensors_imus
            || self.samples[0].markers.len() != query.reading.markers.len()
        {
            return Err(SparseError::StreamLength {
                frame: query.frame,
                field: "CD prior sensor readings",
                expected: self.samples[0].imus.len() + self.samples[0].markers.len(),
                got: sensors_imus + query.reading.markers.len(),
            });
        }
        // Readings in the current root frame.
        let (imus, markers) = root_relative(query.world, query.reading, Some(query.enabled));
        let o = &self.options;
        let k = o.neighbours.min(self.samples.len());
        self.nearest.clear();
        for (s, sample) in self.samples.iter().enumerate() {
            let mut d = 0.0;
            for (m, r) in sample.imus.iter().zip(&imus) {
                if let Some(r) = r {
                    d += o.w_theta * m.angle_to(r);
                }
            }
            for (m, r) in sample.markers.iter().zip(&markers) {
                if let Some(r) = r {
                    d += o.w_x * (m - r).norm();
                }
            }
            let dq: f64 = sample.pose[self.root_dof..]
                .iter()
                .zip(&query.q[self.root_dof..])
                .map(|(a, b)| (a - b) * (a - b))
                .sum();
            d += o.w_q * dq.sqrt();
            if self.nearest.len() < k {
                self.nearest.push((d, s));
                self.nearest.sort_by(|a, b| a.0.total_cmp(&b.0));
            } else if d < self.nearest[k - 1].0 {
                self.nearest[k - 1] = (d, s);
                self.nearest.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
        }
        // Inverse-quartic weights (§3); an exact match takes everything.
        let weights: Vec<f64> = self
            .nearest
            .iter()
            .map(|&(d, _)| 1.0 / d.max(1e-9).powi(4))
            .collect();
        let poses: Vec<&[f64]> = self
            .nearest
            .iter()
            .map(|&(_, s)| self.samples[s].pose.as_slice())
            .collect();
        blend_poses(skeleton, &poses, &weights, query.q, out);
        Ok(())
    }
}

/// Readings of `frame` in the root frame of `world`, masked by `enabled`.
type RootRelative = (Vec<Option<UnitQuaternion<f64>>>, Vec<Option<Point3<f64>>>);

fn root_relative(
    world: &[Isometry3<f64>],
    frame: &SensorFrame,
    enabled: Option<&SensorMask>,
) -> RootRelative {
    let inv = world[0].inverse();
    let on_i = |i: usize| enabled.is_none_or(|e| e.imus[i]);
    let on_m = |i: usize| enabled.is_none_or(|e| e.markers[i]);
    (
        frame
            .imus
            .iter()
            .enumerate()
            .map(|(i, r)| r.filter(|_| on_i(i)).map(|r| inv.rotation * r))
            .collect(),
        frame
            .markers
            .iter()
            .enumerate()
            .map(|(i, r)| r.filter(|_| on_m(i)).map(|x| inv * x))
            .collect(),
    )
}

/// Weighted blend of poses, joint by joint: rotations by the normalised,
/// sign-aligned weighted sum of quaternions (written back with parameters
/// nearest `near`), other parameters linearly.
pub(crate) fn blend_poses(
    skeleton: &Skeleton,
    poses: &[&[f64]],
    weights: &[f64],
    near: &[f64],
    out: &mut [f64],
) {
    let total: f64 = weights.iter().sum();
    for (j, joint) in skeleton.joints().iter().enumerate() {
        let r = skeleton.param_range(j);
        let linear = |out: &mut [f64], range: std::ops::Range<usize>| {
            for i in range {
                out[i] = poses
                    .iter()
                    .zip(weights)
                    .map(|(p, w)| w * p[i])
                    .sum::<f64>()
                    / total;
            }
        };
        match &joint.kind {
            JointKind::Ball(_) | JointKind::Free { .. } => {
                let rot_start = if matches!(joint.kind, JointKind::Free { .. }) {
                    linear(out, r.start..r.start + 3);
                    r.start + 3
                } else {
                    r.start
                };
                let reference = joint.kind.motion(&poses[0][r.clone()]).rotation;
                let mut sum = nalgebra::Vector4::zeros();
                for (p, w) in poses.iter().zip(weights) {
                    let q = joint.kind.motion(&p[r.clone()]).rotation;
                    let c = q.coords;
                    let sign = if c.dot(&reference.coords) < 0.0 {
                        -1.0
                    } else {
                        1.0
                    };
                    sum += c * (w * sign);
                }
                let mean = UnitQuaternion::from_quaternion(nalgebra::Quaternion::from(sum));
                out[r.clone()].copy_from_slice(&near[r.clone()]);
                joint.kind.set_rotation(&mean, &mut out[r.clone()]);
                let _ = rot_start;
            }
            _ => linear(out, r),
        }
    }
}

/// k-means++ seeding, Lloyd iterations, then each cluster's medoid (the
/// member nearest its centroid). Returns the medoids' indices.
fn kmeans_medoids(points: &[&[f64]], k: usize, iterations: usize, seed: u64) -> Vec<usize> {
    let n = points.len();
    if k >= n {
        return (0..n).collect();
    }
    let dim = points[0].len();
    let d2 = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>();
    let mut rng = Pcg64::seed_from_u64(seed);
    let mut centres: Vec<Vec<f64>> = vec![points[rng.random_range(0..n)].to_vec()];
    let mut best: Vec<f64> = points.iter().map(|p| d2(p, &centres[0])).collect();
    while centres.len() < k {
        let total: f64 = best.iter().sum();
        let mut u = rng.random::<f64>() * total;
        let mut pick = n - 1;
        for (i, b) in best.iter().enumerate() {
            if u < *b {
                pick = i;
                break;
            }
            u -= b;
        }
        centres.push(points[pick].to_vec());
        let c = centres.last().unwrap();
        for (b, p) in best.iter_mut().zip(points) {
            *b = b.min(d2(p, c));
        }
    }
    let mut assign = vec![0usize; n];
    for _ in 0..iterations {
        for (a, p) in assign.iter_mut().zip(points) {
            *a = (0..k)
                .min_by(|&x, &y| d2(p, &centres[x]).total_cmp(&d2(p, &centres[y])))
                .unwrap();
        }
        let mut sums = vec![vec![0.0; dim]; k];
        let mut counts = vec![0usize; k];
        for (a, p) in assign.iter().zip(points) {
            counts[*a] += 1;
            for (s, x) in sums[*a].iter_mut().zip(p.iter()) {
                *s += x;
            }
        }
        for c in 0..k {
            if counts[c] > 0 {
                for (x, s) in centres[c].iter_mut().zip(&sums[c]) {
                    *x = s / counts[c] as f64;
                }
            }
        }
    }
    let mut medoid = vec![(f64::INFINITY, usize::MAX); k];
    for (i, (a, p)) in assign.iter().zip(points).enumerate() {
        let d = d2(p, &centres[*a]);
        if d < medoid[*a].0 {
            medoid[*a] = (d, i);
        }
    }
    medoid
        .into_iter()
        .filter(|m| m.1 != usize::MAX)
        .map(|m| m.1)
        .collect()
}

/// The prior's rows of SPARSE Eq. 4 in velocity coordinates: for each
/// non-root joint, the motion that takes the current joint to the estimate
/// in one unit of time — `log(R_jᵀ R̃_j)` (the joint's own frame, matching a
/// ball joint's generalised velocity) for rotations, `q̃ − q` for hinge,
/// swing and prismatic parameters. Writes `nv − root_dof` values.
pub(crate) fn prior_residual(skeleton: &Skeleton, q: &[f64], estimate: &[f64], out: &mut [f64]) {
    let root = skeleton.joint(0).kind.dof();
    for (j, joint) in skeleton.joints().iter().enumerate().skip(1) {
        let r = skeleton.param_range(j);
        let o = r.start - root;
        match &joint.kind {
            JointKind::Ball(b) => {
                let current = b.rotation(&q[r.clone()]);
                let target = b.rotation(&estimate[r.clone()]);
                let d: Vector3<f64> = rotation::log(&(current.inverse() * target));
                out[o..o + 3].copy_from_slice(d.as_slice());
            }
            JointKind::Free { rotation, .. } => {
                let m = joint.kind.motion(&q[r.clone()]);
                let t = joint.kind.motion(&estimate[r.clone()]);
                let dx = m.rotation.inverse() * (t.translation.vector - m.translation.vector);
                let dr = rotation::log(&(m.rotation.inverse() * t.rotation));
                let _ = rotation;
                out[o..o + 3].copy_from_slice(dx.as_slice());
                out[o + 3..o + 6].copy_from_slice(dr.as_slice());
            }
            _ => {
                for i in r {
                    out[i - root] = estimate[i] - q[i];
                }
            }
        }
    }
}

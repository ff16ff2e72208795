//! A learned prior on the arms: how likely an upper-arm and forearm
//! direction are, as a kernel density over motion capture.
//!
//! **Why.** Two-dimensional keypoints fix each arm up to its depth
//! branches (issue 34): the elbow in front of the shoulder or behind it,
//! the wrist in front of the elbow or behind it. Where the filter is on
//! the wrong branch, the image supports it about as well as the right one
//! (docs/track.md, "Choosing the right arm"); what distinguishes the
//! branches is how people hold their arms. The hand-written anatomical
//! limits ([`crate::anatomy`]) only rule out the impossible; this prior
//! ranks the possible, from real motion.
//!
//! **The measure.** Per arm, in the chest frame of [`crate::anatomy`]
//! (`x` the person's left, `y` up, `z` forward; the right arm mirrored,
//! `x → −x`, so both arms read as a left arm), the feature is
//! `a = (u, f) ∈ ℝ⁶`: the unit upper-arm direction `u` (shoulder → elbow)
//! and forearm direction `f` (elbow → wrist). With `M` samples `aᵢ` and a
//! bandwidth `h`, the Gaussian kernel density estimate (Parzen window),
//!
//! ```text
//! log p(a) = log( (1/M) Σᵢ exp(−|a − aᵢ|² / (2h²)) )   (+ a constant)
//! ```
//!
//! evaluated as a log-sum-exp so that no term underflows. An arm's cost is
//! `min(−log p(a), C_max)`: a pose unlike any sample costs at most `C_max`
//! nats, so an unusual motion stays reachable when the image insists.
//!
//! **The samples** ([`DEFAULT_TABLE`]): 1,024 features from the three
//! *tuning* motions of the evaluation set (CMU 05_02 dance, 06_14
//! basketball, 07_01 walk; both arms of 512 frames evenly spaced, about
//! every second frame at 60 frames/s), written by
//! `cargo run -p track --example arm_prior_table`. No validation motion
//! is in it (assets/evalset/clips.toml).

use nalgebra::{Point3, Vector3};
use rayon::prelude::*;
use skeleton::{BatchForwardKinematics, Skeleton};

use crate::anatomy::{ChestArms, checked_weight};
use crate::error::{Result, TrackError};

/// The committed samples (module docs): one `u_x,u_y,u_z,f_x,f_y,f_z` row
/// per sample after a header line.
pub(crate) const DEFAULT_TABLE: &str = include_str!("../../../assets/priors/arm_directions.csv");

/// `h` of the module docs: the kernel's width in the 6-d feature space
/// (unit vectors: 0.3 ≈ 17° of one direction).
pub const DEFAULT_BANDWIDTH: f64 = 0.3;

/// `C_max` of the module docs: the most an arm's pose can cost, nats.
pub(crate) const MAX_COST: f64 = 10.0;

/// The session's default weight of the prior
/// ([`crate::FilterSettings::arm_prior_weight`]; the bare
/// [`crate::TrackerConfig`], RTPF's filter, has it off): chosen among
/// 0.5, 1 and 2 on the tuning clips (seed 1, confirmed on seeds 2–3);
/// on the validation clips (seeds 1–3) it took the mean elbow error from
/// 28.5° / 29.1° to 24.5° / 24.7° (right / left; docs/track.md), and to
/// 23.0° / 24.1° with the denser table of 1,024 samples.
pub const DEFAULT_ARM_PRIOR_WEIGHT: f64 = 1.0;

/// One arm's feature `(u, f)` of the module docs.
pub type ArmFeature = [f64; 6];

/// The kernel density of the module docs over one arm's directions.
#[derive(Clone, Debug, PartialEq)]
pub struct ArmDensity {
    samples: Vec<ArmFeature>,
    /// The samples' six coordinates as `f32` columns (structure of
    /// arrays), padded to a whole number of [`LANES`]-blocks with copies
    /// of the first sample, which [`Self::log_density`] masks out.
    columns: [Vec<f32>; 6],
    /// `1 / (2h²)`.
    inv_two_h2: f64,
    /// `ln M`.
    log_m: f64,
}

impl ArmDensity {
    /// The density of `samples` with bandwidth `h`.
    ///
    /// # Errors
    /// [`TrackError::ArmPrior`] for no samples, a non-finite sample, or a
    /// bandwidth that is not finite and positive.
    pub fn new(samples: Vec<ArmFeature>, h: f64) -> Result<Self> {
        if samples.is_empty() {
            return Err(TrackError::ArmPrior("the arm prior has no samples".into()));
        }
        if let Some(i) = samples
            .iter()
            .position(|s| s.iter().any(|v| !v.is_finite()))
        {
            return Err(TrackError::ArmPrior(format!(
                "arm prior sample {i} is not finite"
            )));
        }
        if !(h.is_finite() && h > 0.0) {
            return Err(TrackError::ArmPrior(format!(
                "arm prior bandwidth {h} must be finite and > 0"
            )));
        }
        let log_m = (samples.len() as f64).ln();
        let padded = samples.len().div_ceil(LANES) * LANES;
        let columns = std::array::from_fn(|k| {
            (0..padded)
                .map(|i| samples.get(i).unwrap_or(&samples[0])[k] as f32)
                .collect()
        });
        Ok(Self {
            samples,
            columns,
            inv_two_h2: 1.0 / (2.0 * h * h),
            log_m,
        })
    }

    /// Parses a table of samples: a header line, then six comma-separated
    /// numbers per line; `file` names it in errors (with the line).
    ///
    /// # Errors
    /// [`TrackError::ArmPrior`] naming the file and line of a bad row, or as
    /// [`Self::new`].
    pub fn parse(text: &str, file: &str, h: f64) -> Result<Self> {
        let mut samples = Vec::new();
        for (n, line) in text.lines().enumerate().skip(1) {
            if line.trim().is_empty() {
                continue;
            }
            let mut a = [0.0; 6];
            let mut fields = line.split(',');
            for v in &mut a {
                *v = fields
                    .next()
                    .and_then(|s| s.trim().parse().ok())
                    .ok_or_else(|| {
                        TrackError::ArmPrior(format!(
                            "{file}:{}: expected six numbers, got {line:?}",
                            n + 1
                        ))
                    })?;
            }
            if fields.next().is_some() {
                return Err(TrackError::ArmPrior(format!(
                    "{file}:{}: more than six fields",
                    n + 1
                )));
            }
            samples.push(a);
        }
        Self::new(samples, h)
    }

    /// The density of a table file (as [`Self::parse`], bandwidth
    /// [`DEFAULT_BANDWIDTH`]): a table of one's own from
    /// `cargo run -p track --example arm_prior_table`.
    ///
    /// # Errors
    /// [`TrackError::ArmPrior`] naming the file: unreadable, or as
    /// [`Self::parse`].
    pub fn load(path: &std::path::Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| TrackError::ArmPrior(format!("{}: {e}", path.display())))?;
        Self::parse(&text, &path.display().to_string(), DEFAULT_BANDWIDTH)
    }

    /// The committed density ([`DEFAULT_TABLE`], [`DEFAULT_BANDWIDTH`]).
    pub fn default_table() -> Self {
        Self::parse(DEFAULT_TABLE, "arm_directions.csv", DEFAULT_BANDWIDTH)
            .expect("the committed table parses (tested)")
    }

    /// `log p(a)` of the module docs (the kernel's normaliser dropped).
    ///
    /// In `f32` blocks of [`LANES`] samples that the compiler vectorises:
    /// per block the squared distances, their minimum `m`, and
    /// `Σ exp(−(d − m)/(2h²))` by [`exp_nonpositive`]; the blocks are
    /// combined as a log-sum-exp scaled by the largest term so far, so no
    /// term underflows. Within 1e-5 of the `f64` Parzen sum's logarithm
    /// (tested).
    pub fn log_density(&self, a: &ArmFeature) -> f64 {
        let q: [f32; 6] = a.map(|v| v as f32);
        let k = self.inv_two_h2 as f32;
        let n = self.samples.len();
        let (mut top, mut sum) = (f64::NEG_INFINITY, 0.0f64);
        let mut d = [0.0f32; LANES];
        for start in (0..self.columns[0].len()).step_by(LANES) {
            d.fill(0.0);
            for (c, &qc) in self.columns.iter().zip(&q) {
                for (d, &s) in d.iter_mut().zip(&c[start..start + LANES]) {
                    let e = qc - s;
                    *d += e * e;
                }
            }
            // The padding of the last block weighs nothing.
            let valid = (n - start).min(LANES);
            let m = d[..valid].iter().fold(f32::INFINITY, |m, &x| m.min(x));
            let mut w = [0.0f32; LANES];
            for (w, &x) in w.iter_mut().zip(&d) {
                *w = exp_nonpositive((m - x) * k);
            }
            let block: f32 = w[..valid].iter().sum();
            let x = -f64::from(m) * self.inv_two_h2;
            let block = f64::from(block);
            if x > top {
                sum = sum * f64::from(exp_nonpositive((top - x) as f32)) + block;
                top = x;
            } else {
                sum += block * f64::from(exp_nonpositive((x - top) as f32));
            }
        }
        top + sum.ln() - self.log_m
    }

    /// An arm's cost, `min(−log p(a), C_max)`: in `[0, C_max]`, since no
    /// kernel term exceeds 1.
    pub fn cost(&self, a: &ArmFeature) -> f64 {
        (-self.log_density(a)).min(MAX_COST)
    }
}

/// Samples per block of [`ArmDensity::log_density`].
const LANES: usize = 32;

/// `eˣ` for `x ≤ 0` in `f32`, branch-free so that a loop of it
/// vectorises: `x = n ln 2 + r` with `|r| ≤ ln 2 / 2`, `eʳ` by its
/// degree-6 Taylor polynomial, `2ⁿ` by the exponent bits; relative error
/// < 1e-6 on `[−87, 0]`; `x` below −87 gives `e⁻⁸⁷` (≈ 2e-38).
fn exp_nonpositive(x: f32) -> f32 {
    // Round to nearest by the 1.5 × 2²³ trick (`round()` is a library call
    // on x86-64's baseline SSE2, and `as i32` a saturating conversion,
    // either of which would keep the loop scalar): `y`'s low mantissa
    // bits then hold `n` offset by 2²², read as an integer below.
    const SHIFT: f32 = 12_582_912.0;
    let x = x.max(-87.0);
    let y = x * std::f32::consts::LOG2_E + SHIFT;
    let n = y - SHIFT;
    // ln 2 in two parts (Cody–Waite): `n · LN2_HI` is exact in f32.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (1.0 / 2.0
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    // 2ⁿ for n ∈ [−126, 0]: the biased exponent n + 127 in the exponent bits.
    let bits = y.to_bits().wrapping_sub(SHIFT.to_bits()).wrapping_add(127) << 23;
    p * f32::from_bits(bits)
}

#[cfg(test)]
fn dist2(a: &ArmFeature, b: &ArmFeature) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// One arm's feature from its joints, in the chest frame `axes`
/// (`mirror` −1 for the right arm); `None` for a zero-length segment.
pub fn arm_feature(
    axes: &[Vector3<f64>; 3],
    mirror: f64,
    shoulder: &Point3<f64>,
    elbow: &Point3<f64>,
    wrist: &Point3<f64>,
) -> Option<ArmFeature> {
    let [x, y, z] = axes;
    let local = |v: Vector3<f64>| {
        v.try_normalize(1e-12)
            .map(|v| [mirror * v.dot(x), v.dot(y), v.dot(z)])
    };
    let u = local(elbow - shoulder)?;
    let f = local(wrist - elbow)?;
    Some([u[0], u[1], u[2], f[0], f[1], f[2]])
}

/// The learned arm prior on a skeleton: its two arms and its pelvis (the
/// root), the density, and its weight in the tracker's log weights.
#[derive(Clone, Debug, PartialEq)]
pub struct ArmPrior {
    arms: ChestArms,
    density: ArmDensity,
    /// Multiplies the log prior (0: off).
    pub weight: f64,
}

impl ArmPrior {
    /// The prior with `density` on `skeleton`'s two arms, weight 1.
    ///
    /// # Errors
    /// [`TrackError::MissingJoint`] when an arm is not found.
    pub fn new(skeleton: &Skeleton, density: ArmDensity) -> Result<Self> {
        Ok(Self {
            arms: ChestArms::find(skeleton)?,
            density,
            weight: 1.0,
        })
    }

    /// `weight` of the prior; refuses a negative or non-finite one.
    ///
    /// # Errors
    /// [`TrackError::InvalidSetting`] naming `arm_prior_weight`.
    pub fn with_weight(mut self, weight: f64) -> Result<Self> {
        self.weight = checked_weight("arm_prior_weight", weight)?;
        Ok(self)
    }

    /// Replaces the density (the weight stays).
    pub fn set_density(&mut self, density: ArmDensity) {
        self.density = density;
    }

    /// The cost of both arms of the pose whose joint positions `at` gives,
    /// ≥ 0, unweighted.
    pub fn cost(&self, at: impl Fn(usize) -> Point3<f64>) -> f64 {
        self.arms.sum(at, |axes, mirror, s, e, w| {
            arm_feature(axes, mirror, s, e, w).map_or(0.0, |a| self.density.cost(&a))
        })
    }

    /// Adds `−weight · cost` of each pose of the batch to `out`.
    pub fn add_log_prior(&self, fk: &BatchForwardKinematics, out: &mut [f64]) {
        if self.weight == 0.0 {
            return;
        }
        let n = fk.len().min(out.len());
        out[..n].par_iter_mut().enumerate().for_each(|(i, o)| {
            *o -= self.weight * self.cost(|j| fk.position(i, j));
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: [f64; 3]) -> [f64; 3] {
        let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        [v[0] / n, v[1] / n, v[2] / n]
    }

    fn feature(u: [f64; 3], f: [f64; 3]) -> ArmFeature {
        let (u, f) = (unit(u), unit(f));
        [u[0], u[1], u[2], f[0], f[1], f[2]]
    }

    #[test]
    fn the_log_density_is_the_parzen_sum() {
        let samples = vec![
            feature([0.0, -1.0, 0.0], [0.0, -1.0, 0.0]),
            feature([0.0, -1.0, 0.2], [0.0, 0.0, 1.0]),
            feature([1.0, 0.0, 0.0], [1.0, 0.0, 0.0]),
        ];
        let h = 0.4;
        let d = ArmDensity::new(samples.clone(), h).unwrap();
        let a = feature([0.1, -1.0, 0.1], [0.0, -0.5, 1.0]);
        let direct = (samples
            .iter()
            .map(|s| (-dist2(&a, s) / (2.0 * h * h)).exp())
            .sum::<f64>()
            / 3.0)
            .ln();
        assert!(
            (d.log_density(&a) - direct).abs() < 1e-5,
            "{} vs {direct}",
            d.log_density(&a)
        );
        // Far from every sample: no underflow to −∞, and the cost is capped.
        let far = [9.0, 9.0, 9.0, -9.0, -9.0, -9.0];
        assert!(d.log_density(&far).is_finite());
        assert_eq!(d.cost(&far), MAX_COST);
    }

    #[test]
    fn the_fast_exponential_is_within_its_stated_error() {
        for i in 0..86_990 {
            let x = -(i as f32) * 1e-3;
            let (fast, exact) = (exp_nonpositive(x), f64::from(x).exp());
            assert!(
                ((f64::from(fast) - exact) / exact).abs() < 1e-6,
                "e^{x}: {fast} vs {exact}"
            );
        }
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert!(exp_nonpositive(-1e9) > 0.0 && exp_nonpositive(-1e9) < 1e-37);
        assert!(exp_nonpositive(-87.0) > 0.0);
    }

    #[test]
    fn the_blocks_equal_the_parzen_sum_on_the_committed_table() {
        // 1,024 samples: 32 blocks, none padded; and a table of 37 (padded).
        let full = ArmDensity::default_table();
        let part = ArmDensity::new(full.samples[..37].to_vec(), DEFAULT_BANDWIDTH).unwrap();
        for d in [&full, &part] {
            for i in 0..50 {
                let t = f64::from(i) * 0.37;
                let a = [
                    0.3 * t.cos(),
                    -0.8,
                    0.5 * t.sin(),
                    0.6 * t.sin(),
                    -0.3,
                    0.7 * t.cos(),
                ];
                let direct = (d
                    .samples
                    .iter()
                    .map(|s| (-dist2(&a, s) * d.inv_two_h2).exp())
                    .sum::<f64>()
                    / d.samples.len() as f64)
                    .ln();
                let fast = d.log_density(&a);
                assert!((fast - direct).abs() < 1e-5, "{fast} vs {direct}");
            }
        }
    }

    #[test]
    fn the_committed_table_parses_and_prefers_a_hanging_arm_to_one_bent_backwards() {
        let d = ArmDensity::default_table();
        assert_eq!(d.samples.len(), 1024);
        for s in &d.samples {
            let (u, f) = (
                Vector3::new(s[0], s[1], s[2]),
                Vector3::new(s[3], s[4], s[5]),
            );
            assert!((u.norm() - 1.0).abs() < 1e-3 && (f.norm() - 1.0).abs() < 1e-3);
        }
        let hanging = feature([0.1, -1.0, 0.0], [0.1, -1.0, 0.1]);
        let backwards = feature([0.1, -1.0, 0.0], [0.0, 0.0, -1.0]);
        assert!(
            d.cost(&hanging) + 3.0 < d.cost(&backwards),
            "{} vs {}",
            d.cost(&hanging),
            d.cost(&backwards)
        );
    }

    #[test]
    fn bad_tables_are_refused_with_the_line() {
        let e = ArmDensity::parse("u\n1,2,3,4,5,6\n1,2,x,4,5,6\n", "t.csv", 0.3).unwrap_err();
        assert!(e.to_string().contains("t.csv:3"), "{e}");
        let e = ArmDensity::parse("u\n1,2,3,4,5,6,7\n", "t.csv", 0.3).unwrap_err();
        assert!(e.to_string().contains("t.csv:2"), "{e}");
        assert!(ArmDensity::parse("u\n", "t.csv", 0.3).is_err());
        assert!(ArmDensity::parse("u\n1,2,3,4,5,6\n", "t.csv", 0.0).is_err());
    }

    #[test]
    fn a_weight_is_refused_unless_finite_and_non_negative() {
        let skeleton = crate::defaults::default_body(1.7).unwrap().skeleton;
        let p = ArmPrior::new(&skeleton, ArmDensity::default_table()).unwrap();
        assert!(p.clone().with_weight(-1.0).is_err());
        assert!(p.clone().with_weight(f64::NAN).is_err());
        assert_eq!(p.with_weight(2.0).unwrap().weight, 2.0);
    }
}

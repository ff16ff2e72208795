//! The Gaussian pose prior of RTPF §IV-D, learned off-line by PCA.
//!
//! From a corpus of poses (BVH clips of the tracked skeleton) take the
//! tracked *angles* `a ∈ ℝᴷ` (the global position is not a pose feature),
//! their mean `μ` and covariance `Σ = V Λ Vᵀ`. Keep the `k` leading
//! principal components that explain a fraction `ρ` of the variance (RTPF:
//! "more than 95 % of the variability could be captured with 2 eigen
//! vectors") and score a pose by the Gaussian in that subspace,
//!
//! ```text
//! log μ(a) = −½ Σ_{i=1}^{k} ((a − μ) · vᵢ)² / λᵢ       (up to a constant)
//! ```
//!
//! "pose probability is evaluated only with respect to those main features
//! selected with PCA": directions outside the subspace are not penalised.
//! The tracker multiplies each particle's weight by `μ^β` (RTPF §V step 3,
//! `w ← w · μ`; `β` = [`crate::TrackerConfig::prior_weight`], 1 in RTPF).

use nalgebra::{DMatrix, DVector, SymmetricEigen};
use skeleton::PoseBatch;

use crate::body::TrackedBody;
use crate::error::{Result, TrackError};

/// A PCA Gaussian over the tracked angles (module docs).
#[derive(Clone, Debug)]
pub struct PosePrior {
    /// Positions in the state vector of the angles the prior reads.
    angles: Vec<usize>,
    mean: DVector<f64>,
    /// `k × K`: the leading eigenvectors as rows.
    components: DMatrix<f64>,
    /// `λ₁ ≥ … ≥ λ_k`.
    variances: Vec<f64>,
    explained: f64,
}

impl PosePrior {
    /// Learns the prior from the frames of one or more clips of `body`'s
    /// skeleton, keeping components up to `fraction` of the variance (at
    /// least 2, as RTPF found sufficient).
    ///
    /// # Errors
    /// [`TrackError::Prior`] for clips of another skeleton, fewer than 3
    /// frames, a fraction outside `(0, 1]`, or no variance at all.
    pub fn learn(body: &TrackedBody, clips: &[&PoseBatch], fraction: f64) -> Result<Self> {
        if !(fraction > 0.0 && fraction <= 1.0) {
            return Err(TrackError::Prior(format!(
                "variance fraction {fraction} is outside (0, 1]"
            )));
        }
        let dof = body.skeleton().dof();
        if let Some(c) = clips.iter().find(|c| c.dof() != dof) {
            return Err(TrackError::Prior(format!(
                "a clip has {} parameters per frame, the body {dof}",
                c.dof()
            )));
        }
        let angles: Vec<usize> = body
            .params()
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.translation)
            .map(|(i, _)| i)
            .collect();
        let frames: Vec<DVector<f64>> = clips
            .iter()
            .flat_map(|c| c.iter())
            .map(|f| {
                let s = body.state_of(f);
                DVector::from_iterator(angles.len(), angles.iter().map(|&i| s[i]))
            })
            .collect();
        if frames.len() < 3 || angles.is_empty() {
            return Err(TrackError::Prior(format!(
                "{} frames of {} angles: need at least 3 frames and 1 angle",
                frames.len(),
                angles.len()
            )));
        }
        let k = angles.len();
        let n = frames.len() as f64;
        let mean = frames.iter().fold(DVector::zeros(k), |m, f| m + f) / n;
        let mut cov = DMatrix::zeros(k, k);
        for f in &frames {
            let d = f - &mean;
            cov += &d * d.transpose();
        }
        cov /= n - 1.0;
        let eig = SymmetricEigen::new(cov);
        let mut order: Vec<usize> = (0..k).collect();
        order.sort_by(|&a, &b| eig.eigenvalues[b].total_cmp(&eig.eigenvalues[a]));
        let total: f64 = eig.eigenvalues.iter().map(|l| l.max(0.0)).sum();
        if total <= 0.0 {
            return Err(TrackError::Prior("the corpus poses do not vary".into()));
        }
        let mut kept = Vec::new();
        let mut acc = 0.0;
        for &i in &order {
            let l = eig.eigenvalues[i];
            if l <= total * 1e-12 || (kept.len() >= 2 && acc / total >= fraction) {
                break;
            }
            kept.push(i);
            acc += l;
        }
        let mut components = DMatrix::zeros(kept.len(), k);
        for (r, &i) in kept.iter().enumerate() {
            components.set_row(r, &eig.eigenvectors.column(i).transpose());
        }
        Ok(Self {
            angles,
            mean,
            variances: kept.iter().map(|&i| eig.eigenvalues[i]).collect(),
            components,
            explained: acc / total,
        })
    }

    /// `k`, the components kept.
    pub fn components(&self) -> usize {
        self.variances.len()
    }
    /// The fraction of the corpus variance they explain.
    pub fn explained(&self) -> f64 {
        self.explained
    }
    /// `λ₁ … λ_k`.
    pub fn variances(&self) -> &[f64] {
        &self.variances
    }

    /// `log μ(a)` of a tracked state (module docs; 0 at the mean).
    pub fn log_density(&self, state: &[f64]) -> f64 {
        let mut sum = 0.0;
        for (r, &l) in self.variances.iter().enumerate() {
            let row = self.components.row(r);
            let proj: f64 = self
                .angles
                .iter()
                .enumerate()
                .map(|(c, &i)| row[c] * (state[i] - self.mean[c]))
                .sum();
            sum += proj * proj / l;
        }
        -0.5 * sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_direction_of_variation_is_learned_and_penalised() {
        let body = TrackedBody::rtpf_upper_body();
        let skel = body.skeleton();
        let e = skel.param_range(skel.find("r_elbow").unwrap()).start;
        let s = skel.param_range(skel.find("r_shoulder").unwrap()).start;
        // Elbow and shoulder move together (one component), with a little
        // independent noise on the shoulder (a second, small one).
        let mut batch = PoseBatch::rest(skel, 0);
        for i in 0..200 {
            let t = i as f64 / 199.0;
            let mut p = skel.rest_pose();
            p[e] = 0.2 + 1.2 * t;
            p[s] = 0.1 + 0.6 * t + 0.01 * ((i * 7919) % 13) as f64 / 13.0;
            batch.push(&p).unwrap();
        }
        let prior = PosePrior::learn(&body, &[&batch], 0.95).unwrap();
        assert_eq!(prior.components(), 2);
        assert!(prior.explained() > 0.99);
        let mut state = body.state_of(batch.pose(100));
        let on = prior.log_density(&state);
        assert!(on > -1.0, "a corpus pose is likely: {on}");
        // Off the learned line: the elbow alone moves by 0.5 rad.
        let ei = body.params().iter().position(|p| p.index == e).unwrap();
        state[ei] += 0.5;
        assert!(prior.log_density(&state) < on - 10.0);
        assert!(PosePrior::learn(&body, &[&batch], 1.5).is_err());
        assert!(PosePrior::learn(&body, &[&PoseBatch::rest(skel, 2)], 0.9).is_err());
    }
}

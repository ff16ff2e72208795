//! Ancestry: who descends from whom, for MAP trajectories.
//!
//! Resampling at step `t` gives particle `i` a parent `a_t(i)` among the
//! particles of step `t − 1` (the identity when the step did not resample).
//! Following parents back from particle `i` at the last step `T` gives its
//! lineage `(i₀, …, i_T)` with `i_T = i` and `i_{t−1} = a_t(i_t)`. The
//! states along the lineage of the heaviest final particle form the crude
//! MAP trajectory of PHYSPRIOR Ch. 4 (§4.1: "the trajectory `x_{0:T}^{(i)}`
//! such that `w_T^{(i)} = max_j w_T^{(j)}`"), which, unlike the filtered
//! MAP state, is corrected by later observations ("filling-in").

use crate::error::SmcError;
use crate::estimate::argmax;

/// The record of parents (and optionally states) of a run.
#[derive(Debug, Clone, Default)]
pub struct Ancestry {
    start: usize,
    n: usize,
    dim: usize,
    /// `parents[t][i]`: index at step `t − 1` of the parent of particle `i`
    /// at step `t`; `parents[0]` is empty.
    parents: Vec<Vec<usize>>,
    /// `states[t]`: the `N × D` states after step `t`, when recorded.
    states: Option<Vec<Vec<f64>>>,
}

impl Ancestry {
    pub(crate) fn new(record_states: bool) -> Self {
        Ancestry {
            start: 0,
            n: 0,
            dim: 0,
            parents: Vec::new(),
            states: record_states.then(Vec::new),
        }
    }

    /// Record filter step `step`; `parents` is `None` when the step did not
    /// resample (ignored for the first recorded step, which has no parents).
    pub(crate) fn push(
        &mut self,
        step: usize,
        parents: Option<&[usize]>,
        states: &[f64],
        dim: usize,
    ) {
        let n = states.len() / dim;
        if self.parents.is_empty() {
            self.start = step;
            self.n = n;
            self.dim = dim;
            self.parents.push(Vec::new());
        } else {
            self.parents.push(match parents {
                Some(p) => p.to_vec(),
                None => (0..n).collect(),
            });
        }
        if let Some(s) = self.states.as_mut() {
            s.push(states.to_vec());
        }
    }

    pub(crate) fn clear(&mut self) {
        self.parents.clear();
        if let Some(s) = self.states.as_mut() {
            s.clear();
        }
    }

    /// The filter step of the first record (0 unless a
    /// [`crate::Filter::redraw_from_prior`] restarted the record). Record `k`
    /// is filter step `first_step() + k`.
    pub fn first_step(&self) -> usize {
        self.start
    }

    /// Number of recorded steps `T + 1`.
    pub fn steps(&self) -> usize {
        self.parents.len()
    }

    /// Parents of the particles of record `t` (empty for `t = 0`).
    pub fn parents(&self, t: usize) -> Option<&[usize]> {
        self.parents.get(t).map(Vec::as_slice)
    }

    /// Lineage `(i₀, …, i_T)` of particle `last` of the last step.
    ///
    /// # Errors
    /// [`SmcError::NoAncestry`] if nothing was recorded,
    /// [`SmcError::ShapeMismatch`] if `last >= N`.
    pub fn lineage(&self, last: usize) -> Result<Vec<usize>, SmcError> {
        if self.parents.is_empty() {
            return Err(SmcError::NoAncestry("no step has been recorded"));
        }
        if last >= self.n {
            return Err(SmcError::ShapeMismatch {
                what: "particle index (must be < N)",
                expected: self.n,
                got: last,
            });
        }
        let mut path = vec![0; self.parents.len()];
        let mut i = last;
        for t in (0..self.parents.len()).rev() {
            path[t] = i;
            if t > 0 {
                i = self.parents[t][i];
            }
        }
        Ok(path)
    }

    /// States along the lineage of particle `last`, as a row-major
    /// `(T + 1) × D` buffer.
    ///
    /// # Errors
    /// [`SmcError::NoAncestry`] if states were not recorded; as
    /// [`Ancestry::lineage`].
    pub fn trajectory(&self, last: usize) -> Result<Vec<f64>, SmcError> {
        let states = self.states.as_ref().ok_or(SmcError::NoAncestry(
            "states were not recorded (use History::AncestorsAndStates)",
        ))?;
        let path = self.lineage(last)?;
        let d = self.dim;
        Ok(path
            .iter()
            .zip(states)
            .flat_map(|(&i, s)| s[i * d..(i + 1) * d].iter().copied())
            .collect())
    }

    /// The MAP trajectory (PHYSPRIOR Ch. 4): the trajectory of the particle
    /// with the largest final log-weight.
    ///
    /// # Errors
    /// As [`Ancestry::trajectory`].
    pub fn map_trajectory(&self, final_log_weights: &[f64]) -> Result<Vec<f64>, SmcError> {
        if final_log_weights.len() != self.n {
            return Err(SmcError::ShapeMismatch {
                what: "final log-weights",
                expected: self.n,
                got: final_log_weights.len(),
            });
        }
        self.trajectory(argmax(final_log_weights))
    }
}

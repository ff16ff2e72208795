//! Max-product forward–backward (Viterbi) over a few candidates a step:
//! the smoothed MAP path through a filter's clouds.
//!
//! A particle filter's MAP estimate is chosen afresh every step, so where
//! the likelihood cannot tell two modes apart (an arm and its depth flip
//! project alike) it jumps between them from frame to frame. Given, at each
//! step `t`, a handful of candidate states `x_t^{(i)}` (the heaviest
//! particles of distinct modes) with log-scores `e_t(i)` (their log
//! weights) and a log transition density `log p(x_t^{(j)} | x_{t−1}^{(i)})`,
//! the most probable path through the candidates is found by the
//! max-product recursion (Viterbi; the "forward–backward" of a hidden
//! Markov model with max for sum, e.g. Bishop, *Pattern Recognition and
//! Machine Learning* §13.2.5):
//!
//! ```text
//! δ_0(j) = e_0(j)
//! δ_t(j) = e_t(j) + max_i [ δ_{t−1}(i) + log p(x_t^{(j)} | x_{t−1}^{(i)}) ],   ψ_t(j) = argmax_i
//! ĵ_T = argmax_j δ_T(j),   ĵ_{t−1} = ψ_t(ĵ_t)                              (backtracking)
//! ```
//!
//! **Full** smoothing ([`CandidatePath::full`]) backtracks once, after the
//! last step: every step's choice then uses all observations. **Fixed
//! lag** ([`CandidatePath::fixed_lag`]) decides step `t − L` when step `t`
//! arrives, by backtracking `L` steps from `argmax δ_t`: the choice uses
//! `L` steps of the future, and the estimate comes `L` steps late — the
//! live compromise. `L = 0` is the filter's own MAP among the candidates.
//! The recursion costs `O(K²)` a step for `K` candidates; `δ` is
//! re-centred every step, so long runs neither overflow nor lose precision.

use std::collections::VecDeque;

use crate::error::SmcError;

/// One step of the recursion: `δ_t` (re-centred) and `ψ_t`.
#[derive(Clone, Debug)]
struct Column {
    delta: Vec<f64>,
    back: Vec<usize>,
}

/// The Viterbi recursion over candidate sets, full or fixed-lag (module docs).
#[derive(Clone, Debug)]
pub struct CandidatePath {
    /// `None`: full smoothing.
    lag: Option<usize>,
    /// The columns not yet decided, oldest first.
    columns: VecDeque<Column>,
    /// Step index of `columns[0]`.
    first: usize,
    /// Steps pushed in all.
    pushed: usize,
}

impl CandidatePath {
    /// Full smoothing: choices come from [`Self::finish`].
    pub fn full() -> Self {
        Self {
            lag: None,
            columns: VecDeque::new(),
            first: 0,
            pushed: 0,
        }
    }

    /// Fixed-lag smoothing: step `t − lag` is decided when step `t` is pushed.
    pub fn fixed_lag(lag: usize) -> Self {
        Self {
            lag: Some(lag),
            ..Self::full()
        }
    }

    /// The lag (`None`: full smoothing).
    pub fn lag(&self) -> Option<usize> {
        self.lag
    }

    /// Steps pushed and not yet decided.
    pub fn pending(&self) -> usize {
        self.columns.len()
    }

    /// Adds step `t` with its candidates' log-scores `emission` and the log
    /// transition density `transition(i, j)` from candidate `i` of the
    /// previous step to candidate `j` of this one. Returns the step decided
    /// now and the chosen candidate, `(step, j)` (fixed lag only).
    ///
    /// # Errors
    /// No candidates ([`SmcError::Empty`]), a NaN or `+∞` score, or a step
    /// whose every candidate scores `−∞` ([`SmcError::AllWeightsZero`]).
    pub fn push(
        &mut self,
        emission: &[f64],
        mut transition: impl FnMut(usize, usize) -> f64,
    ) -> Result<Option<(usize, usize)>, SmcError> {
        if emission.is_empty() {
            return Err(SmcError::Empty);
        }
        let mut delta = Vec::with_capacity(emission.len());
        let mut back = Vec::with_capacity(emission.len());
        for (j, &e) in emission.iter().enumerate() {
            if e.is_nan() {
                return Err(SmcError::NanLogWeight { index: j });
            }
            if e == f64::INFINITY {
                return Err(SmcError::InfiniteLogWeight { index: j });
            }
            let (best, arg) = match self.columns.back() {
                None => (0.0, 0),
                Some(prev) => {
                    let mut best = (f64::NEG_INFINITY, 0);
                    for (i, &d) in prev.delta.iter().enumerate() {
                        let t = transition(i, j);
                        if t.is_nan() {
                            return Err(SmcError::NanLikelihood {
                                index: j,
                                step: self.pushed,
                            });
                        }
                        let v = d + t;
                        if v > best.0 {
                            best = (v, i);
                        }
                    }
                    best
                }
            };
            delta.push(e + best);
            back.push(arg);
        }
        let top = delta.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if top == f64::NEG_INFINITY {
            return Err(SmcError::AllWeightsZero { n: delta.len() });
        }
        for d in &mut delta {
            *d -= top;
        }
        self.columns.push_back(Column { delta, back });
        self.pushed += 1;
        let Some(lag) = self.lag else {
            return Ok(None);
        };
        if self.columns.len() <= lag {
            return Ok(None);
        }
        let path = self.backtrack();
        let choice = (self.first, path[0]);
        self.columns.pop_front();
        self.first += 1;
        Ok(Some(choice))
    }

    /// The choices for every undecided step, oldest first, as `(step, j)`;
    /// the path starts over empty.
    pub fn finish(&mut self) -> Vec<(usize, usize)> {
        let path = self.backtrack();
        let first = self.first;
        self.first += self.columns.len();
        self.columns.clear();
        path.into_iter()
            .enumerate()
            .map(|(k, j)| (first + k, j))
            .collect()
    }

    /// The best path through the undecided columns (one index per column).
    fn backtrack(&self) -> Vec<usize> {
        let Some(last) = self.columns.back() else {
            return Vec::new();
        };
        let mut j = crate::estimate::argmax(&last.delta);
        let mut path = vec![0; self.columns.len()];
        for (k, col) in self.columns.iter().enumerate().rev() {
            path[k] = j;
            j = col.back[j];
        }
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force over every path of a small problem.
    fn brute(emissions: &[Vec<f64>], trans: &dyn Fn(usize, usize, usize) -> f64) -> Vec<usize> {
        let t_max = emissions.len();
        let mut best = (f64::NEG_INFINITY, Vec::new());
        let mut idx = vec![0; t_max];
        loop {
            let mut s = emissions[0][idx[0]];
            for t in 1..t_max {
                s += trans(t, idx[t - 1], idx[t]) + emissions[t][idx[t]];
            }
            if s > best.0 {
                best = (s, idx.clone());
            }
            let mut t = 0;
            loop {
                if t == t_max {
                    return best.1;
                }
                idx[t] += 1;
                if idx[t] < emissions[t].len() {
                    break;
                }
                idx[t] = 0;
                t += 1;
            }
        }
    }

    fn problem() -> (Vec<Vec<f64>>, impl Fn(usize, usize, usize) -> f64) {
        // Candidates are positions; the emissions prefer a jumpy path, the
        // transitions (a Gaussian step of σ = 1) a smooth one.
        let pos: [Vec<f64>; 5] = [
            vec![0.0, 3.0],
            vec![3.1, 0.2, 1.0],
            vec![0.3, 3.0],
            vec![2.9, 0.4],
            vec![0.5, 3.2, 1.7],
        ];
        let em = vec![
            vec![-0.1, -0.3],
            vec![-0.1, -0.9, -2.0],
            vec![-0.8, -0.1],
            vec![-0.1, -0.7],
            vec![-0.6, -0.2, -1.0],
        ];
        let p = pos.clone();
        (em, move |t: usize, i: usize, j: usize| {
            -0.5 * (p[t][j] - p[t - 1][i]).powi(2)
        })
    }

    #[test]
    fn full_smoothing_finds_the_best_path() {
        let (em, tr) = problem();
        let mut path = CandidatePath::full();
        for (t, e) in em.iter().enumerate() {
            assert_eq!(path.push(e, |i, j| tr(t, i, j)).unwrap(), None);
        }
        let got: Vec<usize> = path.finish().into_iter().map(|(_, j)| j).collect();
        assert_eq!(got, brute(&em, &tr));
        // The path stays in the mode near 3: at step 0 the heavier candidate
        // (at 0) loses to the one the later steps agree with ("filling in").
        assert_eq!(got, vec![1, 0, 1, 0, 1]);
    }

    #[test]
    fn fixed_lag_decides_late_and_equals_full_at_full_lag() {
        let (em, tr) = problem();
        for lag in 0..=em.len() {
            let mut path = CandidatePath::fixed_lag(lag);
            let mut got = Vec::new();
            for (t, e) in em.iter().enumerate() {
                if let Some((step, j)) = path.push(e, |i, j| tr(t, i, j)).unwrap() {
                    assert_eq!(step + lag, t);
                    got.push(j);
                }
            }
            assert_eq!(path.pending(), lag.min(em.len()));
            got.extend(path.finish().into_iter().map(|(_, j)| j));
            assert_eq!(got.len(), em.len());
            if lag == 0 {
                // The per-step argmax of δ, not of the emissions alone.
                assert_eq!(got[0], 0);
            }
            if lag >= em.len() - 1 {
                assert_eq!(got, brute(&em, &tr), "lag {lag}");
            }
        }
    }

    #[test]
    fn bad_scores_are_errors() {
        let mut p = CandidatePath::full();
        assert!(matches!(p.push(&[], |_, _| 0.0), Err(SmcError::Empty)));
        assert!(matches!(
            p.push(&[0.0, f64::NAN], |_, _| 0.0),
            Err(SmcError::NanLogWeight { index: 1 })
        ));
        p.push(&[0.0], |_, _| 0.0).unwrap();
        assert!(matches!(
            p.push(&[0.0], |_, _| f64::NEG_INFINITY),
            Err(SmcError::AllWeightsZero { .. })
        ));
        assert!(matches!(
            p.push(&[0.0], |_, _| f64::NAN),
            Err(SmcError::NanLikelihood { .. })
        ));
    }
}

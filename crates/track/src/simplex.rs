//! Downhill simplex (Nelder–Mead) prediction, RTPF §IV-C1 (HPOR), run for
//! many groups in lockstep so that each round's trial points form one
//! likelihood batch (RTPF §VI evaluates particles in parallel on the GPU).
//!
//! A group is one parent's children. Its simplex starts at the parent
//! `x₀` and `x₀ + δ_k e_k` (`δ_k` the diffusion σ of parameter k, `D + 1`
//! vertices) and runs `N_I = n − D` iterations (RTPF) of the textbook
//! rules \[14\] with reflection α = 1, expansion γ = 2, contraction ρ = ½ and
//! shrink σ = ½. Every trial point is clamped into the joint-limit box.
//!
//! One iteration of every active group is at most three batches:
//! reflections; then expansions or contractions; then shrinks (D points
//! for each group that shrinks).

use std::cmp::Ordering;

use crate::body::TrackedBody;
use crate::error::Result;

/// A scored point: `(cost, F)`; cost = `−log w`.
pub(crate) type Score = (f64, f64);

/// Weighs a batch of states (row-major): one score per state, replacing
/// the contents of the vector it is given.
pub(crate) type ScoreBatch<'a> = dyn FnMut(&[f64], &mut Vec<Score>) -> Result<()> + 'a;

/// Where a group's trial of round 2 stands until its batch is scored.
#[derive(Clone, Copy, Debug)]
enum Pending {
    Done,
    /// Reflection accepted or expansion under trial: the reflection's
    /// score and the expansion's row in the trial batch.
    Expand {
        r: Score,
        trial: usize,
    },
    /// Contraction under trial (inside or outside).
    Contract {
        r: Score,
        trial: usize,
        inside: bool,
    },
}

/// The lockstep simplex of many groups (module docs). Its vertices,
/// scores and every batch live in buffers kept from run to run, so a run
/// allocates only when it has more groups or vertices than any before.
///
/// ```
/// use track::LockstepSimplex;
/// let body = track::TrackedBody::rtpf_upper_body();
/// let d = body.dim();
/// let start = body.state_of(body.base());
/// let mut simplex = LockstepSimplex::default();
/// simplex.add_group(&start, 10);
/// // Cost: the squared distance from the start, shifted on parameter 0.
/// let cost = |x: &[f64]| (x[0] - start[0] - 0.05).powi(2);
/// let scored = simplex.run(&body, &vec![0.1; d], &[0], &mut |batch, out| {
///     out.clear();
///     out.extend(batch.chunks(d).map(|x| (cost(x), cost(x).sqrt())));
///     Ok(())
/// })?;
/// assert_eq!(simplex.vertices_per_simplex(), 2);
/// assert!(scored >= 2 + 10 && simplex.score(0, 0).0 < cost(&start));
/// # Ok::<(), track::TrackError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct LockstepSimplex {
    /// D, and the vertices of a simplex (`m + 1`).
    d: usize,
    k: usize,
    /// Each group's start, `groups × D`.
    starts: Vec<f64>,
    /// Each group's iterations left.
    iterations: Vec<usize>,
    /// `groups × (m + 1) × D`, each group's sorted by cost after a run.
    vertices: Vec<f64>,
    scores: Vec<Score>,
    /// Per round: the groups still iterating, their centroids and
    /// reflections, the trials of round 2 (and the shrinks of round 3),
    /// the scores of the last batch, the groups that shrink.
    active: Vec<usize>,
    centroids: Vec<f64>,
    reflections: Vec<f64>,
    trials: Vec<f64>,
    trial_scores: Vec<Score>,
    pending: Vec<Pending>,
    shrink: Vec<usize>,
    /// Sorting one group: the order of its vertices and a copy in it.
    order: Vec<usize>,
    sorted: Vec<f64>,
    sorted_scores: Vec<Score>,
}

impl LockstepSimplex {
    /// Removes every group (keeping the buffers).
    pub fn clear(&mut self) {
        self.starts.clear();
        self.iterations.clear();
        self.vertices.clear();
        self.scores.clear();
    }

    /// Adds a group starting at `start` that runs `iterations` iterations.
    pub fn add_group(&mut self, start: &[f64], iterations: usize) {
        self.starts.extend_from_slice(start);
        self.iterations.push(iterations);
    }

    /// Groups (after a run: those that ran).
    pub fn len(&self) -> usize {
        self.iterations.len()
    }

    pub fn is_empty(&self) -> bool {
        self.iterations.is_empty()
    }

    /// Vertices of each simplex after a run: `coords.len() + 1`.
    pub fn vertices_per_simplex(&self) -> usize {
        self.k
    }

    /// Vertex `v` of group `g`'s simplex; after a run, vertex 0 is the
    /// best (vertices sorted by cost).
    pub fn vertex(&self, g: usize, v: usize) -> &[f64] {
        let i = (g * self.k + v) * self.d;
        &self.vertices[i..i + self.d]
    }

    /// The score of [`Self::vertex`]`(g, v)`.
    pub fn score(&self, g: usize, v: usize) -> Score {
        self.scores[g * self.k + v]
    }

    /// Runs every group's simplex in lockstep in the subspace of the
    /// parameters `coords` (e.g. one partition of the body,
    /// [`TrackedBody::partitions`], or all of them): the initial simplex
    /// steps by `steps[k]` along each of those only, so it has
    /// `coords.len() + 1` vertices and every other parameter keeps its
    /// start value. `score` weighs a batch of states (row-major) and is
    /// called with at most three batches per round. Returns the number of
    /// points scored.
    ///
    /// # Errors
    /// The first error of `score`.
    pub fn run(
        &mut self,
        body: &TrackedBody,
        steps: &[f64],
        coords: &[usize],
        score: &mut ScoreBatch<'_>,
    ) -> Result<usize> {
        let d = body.dim();
        // Vertices per simplex − 1.
        let m = coords.len();
        let groups = self.iterations.len();
        debug_assert_eq!(self.starts.len(), groups * d);
        (self.d, self.k) = (d, m + 1);
        self.vertices.clear();
        self.scores.clear();
        if groups == 0 || m == 0 {
            self.clear();
            return Ok(0);
        }
        let mut scored = 0;
        // Initial simplices in one batch.
        for x0 in self.starts.chunks(d) {
            self.vertices.extend_from_slice(x0);
            for &k in coords {
                let at = self.vertices.len();
                self.vertices.extend_from_slice(x0);
                let v = &mut self.vertices[at..];
                // Step inward when the vertex would leave the box.
                let p = &body.params()[k];
                v[k] = if v[k] + steps[k] <= p.upper {
                    v[k] + steps[k]
                } else {
                    v[k] - steps[k]
                };
                body.clamp(v);
            }
        }
        score(&self.vertices, &mut self.scores)?;
        scored += self.scores.len();
        loop {
            self.active.clear();
            let iterations = &self.iterations;
            self.active
                .extend((0..groups).filter(|&g| iterations[g] > 0));
            if self.active.is_empty() {
                break;
            }
            // Round 1: reflections.
            self.centroids.clear();
            self.reflections.clear();
            for a in 0..self.active.len() {
                let g = self.active[a];
                self.sort_group(g);
                let at = self.centroids.len();
                self.centroids.resize(at + d, 0.0);
                let c = &mut self.centroids[at..];
                for v in 0..m {
                    let i = (g * self.k + v) * d;
                    for (c, x) in c.iter_mut().zip(&self.vertices[i..i + d]) {
                        *c += x / m as f64;
                    }
                }
                let worst = (g * self.k + m) * d;
                push_affine(
                    &mut self.reflections,
                    c,
                    &self.vertices[worst..worst + d],
                    -1.0,
                    body,
                );
            }
            score(&self.reflections, &mut self.trial_scores)?;
            scored += self.trial_scores.len();
            // Round 2: expansions or contractions.
            self.trials.clear();
            self.pending.clear();
            for a in 0..self.active.len() {
                let g = self.active[a];
                let r = self.trial_scores[a];
                let xr = &self.reflections[a * d..(a + 1) * d];
                let c = &self.centroids[a * d..(a + 1) * d];
                let base = g * self.k;
                let (f0, fsecond, fworst) = (
                    self.scores[base].0,
                    self.scores[base + m - 1].0,
                    self.scores[base + m].0,
                );
                let trial = self.trials.len() / d;
                if r.0 < f0 {
                    push_affine(&mut self.trials, c, xr, 2.0, body);
                    self.pending.push(Pending::Expand { r, trial });
                } else if r.0 < fsecond {
                    let worst = (base + m) * d;
                    self.vertices[worst..worst + d].copy_from_slice(xr);
                    self.scores[base + m] = r;
                    self.pending.push(Pending::Done);
                } else {
                    let inside = r.0 >= fworst;
                    if inside {
                        let worst = (base + m) * d;
                        push_affine(
                            &mut self.trials,
                            c,
                            &self.vertices[worst..worst + d],
                            0.5,
                            body,
                        );
                    } else {
                        push_affine(&mut self.trials, c, xr, 0.5, body);
                    }
                    self.pending.push(Pending::Contract { r, trial, inside });
                }
            }
            self.trial_scores.clear();
            if !self.trials.is_empty() {
                score(&self.trials, &mut self.trial_scores)?;
            }
            scored += self.trial_scores.len();
            self.shrink.clear();
            for a in 0..self.pending.len() {
                let g = self.active[a];
                let worst = g * self.k + m;
                let (row, s) = match self.pending[a] {
                    Pending::Done => continue,
                    Pending::Expand { r, trial } => {
                        let e = self.trial_scores[trial];
                        if e.0 < r.0 {
                            (&self.trials[trial * d..(trial + 1) * d], e)
                        } else {
                            (&self.reflections[a * d..(a + 1) * d], r)
                        }
                    }
                    Pending::Contract { r, trial, inside } => {
                        let c = self.trial_scores[trial];
                        let bound = if inside { self.scores[worst].0 } else { r.0 };
                        if c.0 < bound {
                            (&self.trials[trial * d..(trial + 1) * d], c)
                        } else {
                            self.shrink.push(g);
                            continue;
                        }
                    }
                };
                self.vertices[worst * d..(worst + 1) * d].copy_from_slice(row);
                self.scores[worst] = s;
            }
            // Round 3: shrinks towards the best vertex.
            if !self.shrink.is_empty() {
                self.trials.clear();
                for &g in &self.shrink {
                    let best = g * self.k * d;
                    for v in 1..=m {
                        let i = (g * self.k + v) * d;
                        push_affine(
                            &mut self.trials,
                            &self.vertices[best..best + d],
                            &self.vertices[i..i + d],
                            0.5,
                            body,
                        );
                    }
                }
                score(&self.trials, &mut self.trial_scores)?;
                scored += self.trial_scores.len();
                for (s, &g) in self.shrink.iter().enumerate() {
                    for i in 0..m {
                        let (row, to) = ((s * m + i) * d, (g * self.k + i + 1) * d);
                        self.vertices[to..to + d].copy_from_slice(&self.trials[row..row + d]);
                        self.scores[g * self.k + i + 1] = self.trial_scores[s * m + i];
                    }
                }
            }
            for &g in &self.active {
                self.iterations[g] -= 1;
            }
        }
        for g in 0..groups {
            self.sort_group(g);
        }
        Ok(scored)
    }

    /// Sorts group `g`'s vertices by cost, best first; equal costs keep
    /// their order (a stable sort: an insertion sort of the indices).
    fn sort_group(&mut self, g: usize) {
        let (d, k) = (self.d, self.k);
        let scores = &self.scores[g * k..(g + 1) * k];
        self.order.clear();
        self.order.extend(0..k);
        for i in 1..k {
            let mut j = i;
            while j > 0
                && scores[self.order[j - 1]]
                    .0
                    .total_cmp(&scores[self.order[j]].0)
                    == Ordering::Greater
            {
                self.order.swap(j - 1, j);
                j -= 1;
            }
        }
        self.sorted.clear();
        self.sorted_scores.clear();
        for &v in &self.order {
            let i = (g * k + v) * d;
            self.sorted.extend_from_slice(&self.vertices[i..i + d]);
            self.sorted_scores.push(scores[v]);
        }
        self.vertices[g * k * d..(g + 1) * k * d].copy_from_slice(&self.sorted);
        self.scores[g * k..(g + 1) * k].copy_from_slice(&self.sorted_scores);
    }
}

/// Appends `a + t (b − a)`, clamped to the limits, to `out`.
fn push_affine(out: &mut Vec<f64>, a: &[f64], b: &[f64], t: f64, body: &TrackedBody) {
    let at = out.len();
    out.extend(a.iter().zip(b).map(|(a, b)| a + t * (b - a)));
    body.clamp(&mut out[at..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subspace_simplex_moves_only_its_partition_and_descends() {
        let body = crate::body::TrackedBody::rtpf_upper_body();
        let d = body.dim();
        let coords = body.partitions()[2].clone(); // the right arm
        let m = coords.len();
        let start = body.state_of(body.base());
        let target: Vec<f64> = body
            .params()
            .iter()
            .zip(&start)
            .map(|(p, &x)| (x + 0.3).min(p.upper))
            .collect();
        let cost =
            |x: &[f64]| -> f64 { x.iter().zip(&target).map(|(a, b)| (a - b) * (a - b)).sum() };
        let floor: f64 = (0..d)
            .filter(|k| !coords.contains(k))
            .map(|k| (start[k] - target[k]).powi(2))
            .sum();
        let mut f = |batch: &[f64], out: &mut Vec<Score>| -> Result<()> {
            out.clear();
            out.extend(batch.chunks(d).map(|x| (cost(x), cost(x).sqrt())));
            Ok(())
        };
        let steps = vec![0.1; d];
        let mut simplex = LockstepSimplex::default();
        simplex.add_group(&start, 60);
        let scored = simplex.run(&body, &steps, &coords, &mut f).unwrap();
        assert_eq!(simplex.vertices_per_simplex(), m + 1);
        assert!(scored >= m + 1 + 60);
        for v in 0..=m {
            for k in (0..d).filter(|k| !coords.contains(k)) {
                assert_eq!(
                    simplex.vertex(0, v)[k],
                    start[k],
                    "parameter {k} is outside the partition"
                );
            }
        }
        // Only the partition's part of the cost can go: most of it does.
        let (c0, c1) = (cost(&start) - floor, simplex.score(0, 0).0 - floor);
        assert!(c1 < 0.2 * c0, "{c0:.4} → {c1:.4}");
    }

    #[test]
    fn lockstep_groups_descend_a_quadratic_and_respect_the_box() {
        let body = crate::body::TrackedBody::rtpf_upper_body();
        let d = body.dim();
        let target: Vec<f64> = body
            .params()
            .iter()
            .map(|p| (0.3 * p.lower + 0.7 * p.upper).min(p.upper))
            .collect();
        let starts_v: Vec<Vec<f64>> = (0..3)
            .map(|g| {
                let mut s = body.state_of(body.base());
                s[g] += 0.1;
                body.clamp(&mut s);
                s
            })
            .collect();
        let steps = vec![0.1; d];
        let all: Vec<usize> = (0..d).collect();
        let mut calls = 0;
        let cost =
            |x: &[f64]| -> f64 { x.iter().zip(&target).map(|(a, b)| (a - b) * (a - b)).sum() };
        let mut f = |batch: &[f64], out: &mut Vec<Score>| -> Result<()> {
            calls += 1;
            out.clear();
            out.extend(batch.chunks(d).map(|x| (cost(x), cost(x).sqrt())));
            Ok(())
        };
        let start_cost = cost(&starts_v[0]);
        let mut simplex = LockstepSimplex::default();
        // A first run leaves buffers behind that the second reuses.
        for run in 0..2 {
            simplex.clear();
            for s in &starts_v {
                simplex.add_group(s, 200);
            }
            let scored = simplex.run(&body, &steps, &all, &mut f).unwrap();
            assert!(scored >= 3 * (d + 1 + 200), "run {run}");
        }
        // Nelder–Mead is slow in 23 dimensions: 200 iterations take the
        // cost from ~18 to ~11 here; a broken update would not descend.
        assert_eq!(simplex.len(), 3);
        // At most 1 + 3 batches per round: lockstep, not per group.
        assert!(calls <= 2 * (2 + 3 * 200), "{calls} batches");
        for g in 0..3 {
            let best = simplex.score(g, 0).0;
            assert!(best < 0.7 * start_cost, "{best} vs {start_cost}");
            for v in 0..=d {
                assert!(body.within_limits(simplex.vertex(g, v)));
                assert!(simplex.score(g, v).0 >= best, "sorted best first");
            }
        }
    }
}

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

use crate::body::TrackedBody;
use crate::error::Result;

/// A scored point: `(cost, F)`; cost = `−log w`.
pub type Score = (f64, f64);

/// One group's simplex.
#[derive(Clone, Debug)]
pub struct Simplex {
    /// `D + 1` vertices, row-major.
    pub vertices: Vec<Vec<f64>>,
    pub scores: Vec<Score>,
    iterations_left: usize,
}

impl Simplex {
    /// Vertices sorted by cost, best first.
    fn sort(&mut self) {
        let mut idx: Vec<usize> = (0..self.vertices.len()).collect();
        idx.sort_by(|&a, &b| self.scores[a].0.total_cmp(&self.scores[b].0));
        self.vertices = idx.iter().map(|&i| self.vertices[i].clone()).collect();
        self.scores = idx.iter().map(|&i| self.scores[i]).collect();
    }

    /// Index of the best vertex.
    pub fn best(&self) -> usize {
        (0..self.scores.len())
            .min_by(|&a, &b| self.scores[a].0.total_cmp(&self.scores[b].0))
            .unwrap_or(0)
    }
}

enum Pending {
    Done,
    /// Reflection accepted or expansion under trial: (xr, fr, xe).
    Expand(Vec<f64>, Score, Vec<f64>),
    /// Contraction under trial: (xr, fr, xc, inside).
    Contract(Vec<f64>, Score, Vec<f64>, bool),
}

fn affine(a: &[f64], b: &[f64], t: f64, body: &TrackedBody) -> Vec<f64> {
    // a + t (b − a), clamped to the limits.
    let mut x: Vec<f64> = a.iter().zip(b).map(|(a, b)| a + t * (b - a)).collect();
    body.clamp(&mut x);
    x
}

/// Runs the lockstep simplex for each `(start, iterations)` with initial
/// steps `steps` (per parameter); `score` weighs a batch of states
/// (row-major) and is called with one batch per round. Returns the final
/// simplices and the number of points scored.
///
/// # Errors
/// The first error of `score`.
pub fn lockstep_simplex(
    body: &TrackedBody,
    starts: &[(&[f64], usize)],
    steps: &[f64],
    score: &mut dyn FnMut(&[f64]) -> Result<Vec<Score>>,
) -> Result<(Vec<Simplex>, usize)> {
    let all: Vec<usize> = (0..body.dim()).collect();
    lockstep_simplex_in(body, starts, steps, &all, score)
}

/// As [`lockstep_simplex`], in the subspace of the parameters `coords`
/// (e.g. one partition of the body, [`TrackedBody::partitions`]): the
/// initial simplex steps along those only, so it has `coords.len() + 1`
/// vertices and every other parameter keeps its start value.
///
/// # Errors
/// The first error of `score`.
pub fn lockstep_simplex_in(
    body: &TrackedBody,
    starts: &[(&[f64], usize)],
    steps: &[f64],
    coords: &[usize],
    score: &mut dyn FnMut(&[f64]) -> Result<Vec<Score>>,
) -> Result<(Vec<Simplex>, usize)> {
    let d = body.dim();
    // Vertices per simplex − 1.
    let m = coords.len();
    let mut scored = 0;
    // Initial simplices in one batch.
    let mut batch = Vec::new();
    for (x0, _) in starts {
        batch.extend_from_slice(x0);
        for &k in coords {
            let mut v = x0.to_vec();
            // Step inward when the vertex would leave the box.
            let p = &body.params()[k];
            v[k] = if v[k] + steps[k] <= p.upper {
                v[k] + steps[k]
            } else {
                v[k] - steps[k]
            };
            body.clamp(&mut v);
            batch.extend_from_slice(&v);
        }
    }
    if starts.is_empty() || m == 0 {
        return Ok((Vec::new(), 0));
    }
    let s0 = score(&batch)?;
    scored += s0.len();
    let mut groups: Vec<Simplex> = starts
        .iter()
        .enumerate()
        .map(|(g, &(_, iters))| Simplex {
            vertices: batch[g * (m + 1) * d..(g + 1) * (m + 1) * d]
                .chunks(d)
                .map(<[f64]>::to_vec)
                .collect(),
            scores: s0[g * (m + 1)..(g + 1) * (m + 1)].to_vec(),
            iterations_left: iters,
        })
        .collect();
    loop {
        let active: Vec<usize> = (0..groups.len())
            .filter(|&g| groups[g].iterations_left > 0)
            .collect();
        if active.is_empty() {
            break;
        }
        // Round 1: reflections.
        let mut batch = Vec::with_capacity(active.len() * d);
        let mut centroids = Vec::with_capacity(active.len());
        for &g in &active {
            let s = &mut groups[g];
            s.sort();
            let mut c = vec![0.0; d];
            for v in &s.vertices[..m] {
                for (c, x) in c.iter_mut().zip(v) {
                    *c += x / m as f64;
                }
            }
            batch.extend(affine(&c, &s.vertices[m], -1.0, body));
            centroids.push(c);
        }
        let fr = score(&batch)?;
        scored += fr.len();
        // Round 2: expansions or contractions.
        let mut pending = Vec::with_capacity(active.len());
        let mut batch2 = Vec::new();
        for (k, &g) in active.iter().enumerate() {
            let s = &mut groups[g];
            let xr = batch[k * d..(k + 1) * d].to_vec();
            let c = &centroids[k];
            let (f0, fsecond, fworst) = (s.scores[0].0, s.scores[m - 1].0, s.scores[m].0);
            let r = fr[k];
            if r.0 < f0 {
                let xe = affine(c, &xr, 2.0, body);
                batch2.extend_from_slice(&xe);
                pending.push(Pending::Expand(xr, r, xe));
            } else if r.0 < fsecond {
                s.vertices[m] = xr;
                s.scores[m] = r;
                pending.push(Pending::Done);
            } else {
                let inside = r.0 >= fworst;
                let xc = if inside {
                    affine(c, &s.vertices[m], 0.5, body)
                } else {
                    affine(c, &xr, 0.5, body)
                };
                batch2.extend_from_slice(&xc);
                pending.push(Pending::Contract(xr, r, xc, inside));
            }
        }
        let f2 = if batch2.is_empty() {
            Vec::new()
        } else {
            score(&batch2)?
        };
        scored += f2.len();
        let mut next = f2.into_iter();
        let mut shrink = Vec::new();
        for (k, p) in pending.into_iter().enumerate() {
            let s = &mut groups[active[k]];
            match p {
                Pending::Done => {}
                Pending::Expand(xr, r, xe) => {
                    let e = next.next().expect("one score per trial");
                    let (x, f) = if e.0 < r.0 { (xe, e) } else { (xr, r) };
                    s.vertices[m] = x;
                    s.scores[m] = f;
                }
                Pending::Contract(xr, r, xc, inside) => {
                    let c = next.next().expect("one score per trial");
                    let bound = if inside { s.scores[m].0 } else { r.0 };
                    if c.0 < bound {
                        s.vertices[m] = xc;
                        s.scores[m] = c;
                    } else {
                        let _ = xr;
                        shrink.push(active[k]);
                    }
                }
            }
        }
        // Round 3: shrinks towards the best vertex.
        if !shrink.is_empty() {
            let mut batch3 = Vec::with_capacity(shrink.len() * m * d);
            for &g in &shrink {
                let s = &groups[g];
                for v in &s.vertices[1..] {
                    batch3.extend(affine(&s.vertices[0], v, 0.5, body));
                }
            }
            let f3 = score(&batch3)?;
            scored += f3.len();
            for (k, &g) in shrink.iter().enumerate() {
                let s = &mut groups[g];
                for i in 0..m {
                    s.vertices[i + 1] = batch3[(k * m + i) * d..(k * m + i + 1) * d].to_vec();
                    s.scores[i + 1] = f3[k * m + i];
                }
            }
        }
        for &g in &active {
            groups[g].iterations_left -= 1;
        }
    }
    for s in &mut groups {
        s.sort();
    }
    Ok((groups, scored))
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
        let mut f = |batch: &[f64]| -> Result<Vec<Score>> {
            Ok(batch.chunks(d).map(|x| (cost(x), cost(x).sqrt())).collect())
        };
        let steps = vec![0.1; d];
        let (groups, scored) =
            lockstep_simplex_in(&body, &[(&start, 60)], &steps, &coords, &mut f).unwrap();
        assert_eq!(groups[0].vertices.len(), m + 1);
        assert!(scored >= m + 1 + 60);
        for v in &groups[0].vertices {
            for k in (0..d).filter(|k| !coords.contains(k)) {
                assert_eq!(v[k], start[k], "parameter {k} is outside the partition");
            }
        }
        // Only the partition's part of the cost can go: most of it does.
        let (c0, c1) = (cost(&start) - floor, groups[0].scores[0].0 - floor);
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
        let starts: Vec<(&[f64], usize)> = starts_v.iter().map(|s| (s.as_slice(), 200)).collect();
        let steps = vec![0.1; d];
        let mut calls = 0;
        let mut f = |batch: &[f64]| -> Result<Vec<Score>> {
            calls += 1;
            Ok(batch
                .chunks(d)
                .map(|x| {
                    let c: f64 = x.iter().zip(&target).map(|(a, b)| (a - b) * (a - b)).sum();
                    (c, c.sqrt())
                })
                .collect())
        };
        let start_cost = f(&starts_v[0]).unwrap()[0].0;
        let (groups, scored) = lockstep_simplex(&body, &starts, &steps, &mut f).unwrap();
        // Nelder–Mead is slow in 23 dimensions: 200 iterations take the
        // cost from ~18 to ~11 here; a broken update would not descend.
        assert_eq!(groups.len(), 3);
        // At most 1 + 3 batches per round: lockstep, not per group.
        assert!(calls <= 2 + 3 * 200, "{calls} batches");
        assert!(scored >= 3 * (d + 1 + 200));
        for g in &groups {
            assert!(
                g.scores[0].0 < 0.7 * start_cost,
                "{} vs {start_cost}",
                g.scores[0].0
            );
            assert!(g.vertices.iter().all(|v| body.within_limits(v)));
        }
    }
}

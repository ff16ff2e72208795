//! The working vectors of a tracker step ([`crate::Tracker::step`]), kept
//! from step to step so that a step in steady state (same N, same body)
//! allocates nothing of its own: each is cleared and refilled, and grows
//! only when N does (`tests/step_allocations.rs` counts a whole step).

use smc::Weights;

use crate::flip::ArmBuffers;
use crate::simplex::Score;

/// Every vector a step fills, by the stage that fills it.
#[derive(Debug, Default)]
pub(crate) struct StepBuffers {
    /// The body's partitions (parameter indices, stage by stage) and the
    /// one stage of all parameters (joint sampling); filled at the first
    /// step (a tracker's body does not change).
    pub(crate) partitions: Vec<Vec<usize>>,
    pub(crate) joint: Vec<Vec<usize>>,
    /// Diffusion σ of each tracked parameter.
    pub(crate) sigmas: Vec<f64>,
    /// Each particle's score, once placed by a simplex or measured.
    pub(crate) scores: Vec<Option<Score>>,
    /// The scores a partition's simplices gave, stage by stage.
    pub(crate) placed: Vec<Option<Score>>,
    /// The row of `centre_states` each child diffuses around, and those
    /// rows (the parents', or a simplex's best vertex).
    pub(crate) centre: Vec<usize>,
    pub(crate) centre_states: Vec<f64>,
    /// The cheapest simplex vertex of the step (the flips' source).
    pub(crate) best: BestVertex,
    /// Parents whose group runs a simplex (joint sampling).
    pub(crate) big: Vec<usize>,
    /// Children not placed by a simplex; after the partitions, the slots
    /// open to flips and lifts.
    pub(crate) free: Vec<usize>,
    /// The row each free child started a partition stage from.
    pub(crate) src: Vec<usize>,
    /// The free children by their start row, and the runs of them that
    /// run a partition's simplex: `(first, len)` in `by_src`.
    pub(crate) by_src: Vec<usize>,
    pub(crate) runs: Vec<(usize, usize)>,
    /// Children the diffusion leaves as they are.
    pub(crate) skip: Vec<bool>,
    /// The free children's rows, and the ones a stage weighs.
    pub(crate) rows: Vec<f64>,
    pub(crate) batch: Vec<f64>,
    /// Indices (into `free` during the stages, into the cloud at the
    /// measurement) of the rows weighed.
    pub(crate) todo: Vec<usize>,
    /// A batch's scores.
    pub(crate) costs: Vec<Score>,
    /// A stage's log weights, weights and resampled picks.
    pub(crate) log_w: Vec<f64>,
    pub(crate) stage_weights: Weights,
    pub(crate) picks: Vec<usize>,
    /// The flipped and lifted states and the buffers that propose them.
    pub(crate) arms: ArmBuffers,
}

impl StepBuffers {
    /// Makes room for a step of `n` particles of `d` parameters in every
    /// vector a step fills up to `n` entries (or rows), so that no step
    /// grows one later: a step allocates only when N grows.
    pub(crate) fn reserve(&mut self, n: usize, d: usize) {
        fn room<T>(v: &mut Vec<T>, capacity: usize) {
            v.reserve(capacity.saturating_sub(v.len()));
        }
        room(&mut self.scores, n);
        room(&mut self.placed, n);
        room(&mut self.centre, n);
        room(&mut self.centre_states, n * d);
        room(&mut self.big, n);
        room(&mut self.free, n);
        room(&mut self.src, n);
        room(&mut self.by_src, n);
        room(&mut self.runs, n);
        room(&mut self.skip, n);
        room(&mut self.rows, n * d);
        room(&mut self.batch, n * d);
        room(&mut self.todo, n);
        room(&mut self.costs, n);
        room(&mut self.log_w, n);
        room(&mut self.picks, n);
    }
}

/// The cheapest vertex offered so far, in a vector kept between steps.
#[derive(Debug, Default)]
pub(crate) struct BestVertex {
    vertex: Vec<f64>,
    cost: Option<f64>,
}

impl BestVertex {
    /// Forgets the vertex (a new step).
    pub(crate) fn clear(&mut self) {
        self.cost = None;
    }

    /// Keeps `(vertex, cost)` when it is the first or cheaper.
    pub(crate) fn offer(&mut self, vertex: &[f64], cost: f64) {
        if self.cost.is_none_or(|c| cost < c) {
            self.vertex.clear();
            self.vertex.extend_from_slice(vertex);
            self.cost = Some(cost);
        }
    }

    /// The cheapest vertex, if any was offered since [`Self::clear`].
    pub(crate) fn vertex(&self) -> Option<&[f64]> {
        self.cost.map(|_| &self.vertex[..])
    }
}

/// The children of each parent after selection, grouped without a vector
/// per parent: `children(p)` is the slice of `order` from `start[p]`, each
/// group in increasing child order.
#[derive(Debug, Default)]
pub(crate) struct ParentGroups {
    start: Vec<usize>,
    order: Vec<usize>,
}

impl ParentGroups {
    /// Groups the children `0..ancestors.len()` by their parent in
    /// `0..parents` (a counting sort).
    pub(crate) fn group(&mut self, ancestors: &[usize], parents: usize) {
        self.start.clear();
        self.start.resize(parents + 1, 0);
        for &p in ancestors {
            self.start[p + 1] += 1;
        }
        for p in 0..parents {
            self.start[p + 1] += self.start[p];
        }
        self.order.clear();
        self.order.resize(ancestors.len(), 0);
        // `start[p]` walks through group p as it fills, then is restored.
        for (child, &p) in ancestors.iter().enumerate() {
            self.order[self.start[p]] = child;
            self.start[p] += 1;
        }
        for p in (1..=parents).rev() {
            self.start[p] = self.start[p - 1];
        }
        self.start[0] = 0;
    }

    pub(crate) fn children(&self, parent: usize) -> &[usize] {
        &self.order[self.start[parent]..self.start[parent + 1]]
    }
}

/// The indices in `0..n` where `keep` holds, into `out` (replaced).
pub(crate) fn indices_into(out: &mut Vec<usize>, n: usize, keep: impl Fn(usize) -> bool) {
    out.clear();
    out.extend((0..n).filter(|&i| keep(i)));
}

/// Rows `which` of the row-major `rows` (rows of `d`), in that order, into
/// `out` (replaced).
pub(crate) fn gather_into(out: &mut Vec<f64>, rows: &[f64], which: &[usize], d: usize) {
    out.clear();
    for &i in which {
        out.extend_from_slice(&rows[i * d..(i + 1) * d]);
    }
}

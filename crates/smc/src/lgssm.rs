//! The linear-Gaussian state-space model and its exact Kalman filter: the
//! reference the particle engine is checked against.
//!
//! Time-invariant, `D` states, `K` observations:
//!
//! ```text
//!   x₀ ~ N(m₀, P₀),   x_t = A x_{t−1} + N(0, Q),   y_t = H x_t + N(0, R),   t = 0, 1, …
//! ```
//!
//! (the first observation observes `x₀`). [`Lgssm`] is at once the
//! bootstrap proposal ([`Propagate`]: draw from `p(x₀)` and
//! `p(x_t | x_{t−1})`, importance correction 0) and the batched likelihood
//! ([`Likelihood`]: `log N(y; H x, R)`), for observations given as `f64`
//! (`K = 1`), `[f64]` or `DVector<f64>`. [`Lgssm::simulate`] draws a path
//! and its observations from a generator, and [`Lgssm::kalman`] is the
//! exact filter (Kalman 1960): the predictive and filtering laws of every
//! `x_t` and `log p(y_{0:T−1})`, the quantities
//! `p̂(x_t | y_{0:t})` and [`crate::Filter::log_evidence`] estimate.
//!
//! ```
//! use smc::lgssm::Lgssm;
//! use smc::{Filter, FilterConfig, ParticleSet, stream_rng, StreamDomain};
//!
//! let model = Lgssm::scalar(0.9, 0.5, 1.0, 0.3, 0.5, 2.0)?;
//! let path = model.simulate(20, &mut stream_rng(7, 0, StreamDomain::User(0), 0));
//! let exact = model.kalman(&path.observations)?;
//! let mut particles = ParticleSet::new(20_000, 1)?;
//! let mut filter = Filter::new(FilterConfig::default())?;
//! for y in &path.observations {
//!     filter.step(&mut particles, &model, &model, y)?;
//! }
//! assert!((filter.log_evidence() - exact.log_evidence).abs() < 0.5);
//! # Ok::<(), smc::SmcError>(())
//! ```

use std::f64::consts::PI;

use nalgebra::{DMatrix, DVector};
use rand::{Rng, RngExt};
use rand_distr::StandardNormal;
use rayon::prelude::*;

use crate::error::{BoxError, SmcError};
use crate::model::{Likelihood, Propagate};
use crate::rng::ParticleRng;

/// Particles per rayon task when weighing (as [`crate::PerParticle`]).
const LIKELIHOOD_TASK: usize = 512;

/// A linear-Gaussian state-space model (module docs), with the factors the
/// proposal and likelihood use precomputed.
#[derive(Debug, Clone)]
pub struct Lgssm {
    a: DMatrix<f64>,
    q: DMatrix<f64>,
    h: DMatrix<f64>,
    r: DMatrix<f64>,
    m0: DVector<f64>,
    p0: DMatrix<f64>,
    /// `A`, `H` row-major.
    a_rows: Vec<f64>,
    h_rows: Vec<f64>,
    /// Row-major `F` with `F Fᵀ = Q`, `P₀`, `R` (Cholesky factors; see
    /// [`square_root`] for singular `Q`, `P₀`).
    sqrt_q: Vec<f64>,
    sqrt_p0: Vec<f64>,
    sqrt_r: Vec<f64>,
    /// Lower Cholesky factor `L` of `R` and `L⁻¹ H` row-major, so that
    /// `(y − Hx)ᵀ R⁻¹ (y − Hx) = |L⁻¹y − L⁻¹H x|²`.
    chol_r: DMatrix<f64>,
    whitened_h: Vec<f64>,
    /// `−½ log det(2π R)`.
    log_norm: f64,
}

/// A path drawn by [`Lgssm::simulate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Simulation {
    /// `x_0, …, x_{T−1}`.
    pub states: Vec<DVector<f64>>,
    /// `y_0, …, y_{T−1}`.
    pub observations: Vec<DVector<f64>>,
}

/// The exact filter's answers, one entry per observation.
#[derive(Debug, Clone, PartialEq)]
pub struct Kalman {
    /// Mean of the predictive law `p(x_t | y_{0:t−1})` (`m₀` at `t = 0`).
    pub predicted_mean: Vec<DVector<f64>>,
    /// Its covariance (`P₀` at `t = 0`).
    pub predicted_cov: Vec<DMatrix<f64>>,
    /// Mean of the filtering law `p(x_t | y_{0:t})`.
    pub mean: Vec<DVector<f64>>,
    /// Its covariance.
    pub cov: Vec<DMatrix<f64>>,
    /// `log p(y_{0:T−1})`, the sum of `log N(y_t; H m_{t|t−1}, S_t)`.
    pub log_evidence: f64,
}

fn row_major(m: &DMatrix<f64>) -> Vec<f64> {
    m.transpose().as_slice().to_vec()
}

/// A row-major `F` with `F Fᵀ = S` for a symmetric positive semi-definite
/// `S`: the lower Cholesky factor when `S` is definite, else
/// `V diag(√λ)` from the eigen-decomposition (so `Q = 0`, a deterministic
/// evolution, is allowed).
fn square_root(s: &DMatrix<f64>, name: &'static str) -> Result<Vec<f64>, SmcError> {
    if let Some(c) = s.clone().cholesky() {
        return Ok(row_major(&c.l()));
    }
    let eig = s.clone().symmetric_eigen();
    let scale = eig.eigenvalues.amax().max(1.0);
    let mut f = eig.eigenvectors;
    for (j, &l) in eig.eigenvalues.iter().enumerate() {
        // Round-off of a singular matrix, not a negative variance.
        if l < -1e-12 * scale {
            return Err(SmcError::InvalidParameter {
                name,
                value: l,
                reason: "covariance must be positive semi-definite (eigenvalue < 0)",
            });
        }
        f.column_mut(j).scale_mut(l.max(0.0).sqrt());
    }
    Ok(row_major(&f))
}

/// `out = M x + F z` with `M` row-major `out.len() × x.len()` (or
/// `out = x + F z` when `m` is `None`), `F` row-major square and
/// `z ~ N(0, I)` drawn in order `z₀, z₁, …`.
fn affine_plus_noise<R: Rng + ?Sized>(
    m: Option<&[f64]>,
    x: &[f64],
    f: &[f64],
    out: &mut [f64],
    rng: &mut R,
) {
    let d = out.len();
    match m {
        Some(m) => {
            for (o, row) in out.iter_mut().zip(m.chunks_exact(x.len())) {
                *o = row.iter().zip(x).map(|(a, b)| a * b).sum();
            }
        }
        None => out.copy_from_slice(x),
    }
    for j in 0..d {
        let z: f64 = rng.sample(StandardNormal);
        for (i, o) in out.iter_mut().enumerate() {
            *o += f[i * d + j] * z;
        }
    }
}

impl Lgssm {
    /// The model with `A` (`D × D`), `Q` (`D × D`, positive semi-definite),
    /// `H` (`K × D`), `R` (`K × K`, positive definite), `m₀` (`D`) and `P₀`
    /// (`D × D`, positive semi-definite).
    ///
    /// # Errors
    /// [`SmcError::ShapeMismatch`] naming the matrix whose size disagrees
    /// with `A`/`H`; [`SmcError::InvalidParameter`] for a non-finite entry,
    /// a non-symmetric or indefinite covariance, or a singular `R`.
    pub fn new(
        a: DMatrix<f64>,
        q: DMatrix<f64>,
        h: DMatrix<f64>,
        r: DMatrix<f64>,
        m0: DVector<f64>,
        p0: DMatrix<f64>,
    ) -> Result<Self, SmcError> {
        let (d, k) = (a.nrows(), h.nrows());
        let shapes = [
            ("A columns", d, a.ncols()),
            ("Q rows", d, q.nrows()),
            ("Q columns", d, q.ncols()),
            ("H columns", d, h.ncols()),
            ("R rows", k, r.nrows()),
            ("R columns", k, r.ncols()),
            ("m0 length", d, m0.len()),
            ("P0 rows", d, p0.nrows()),
            ("P0 columns", d, p0.ncols()),
        ];
        for (what, expected, got) in shapes {
            if expected != got {
                return Err(SmcError::ShapeMismatch {
                    what,
                    expected,
                    got,
                });
            }
        }
        if d == 0 || k == 0 {
            return Err(SmcError::Empty);
        }
        let entries = [
            ("A", a.as_slice()),
            ("Q", q.as_slice()),
            ("H", h.as_slice()),
            ("R", r.as_slice()),
            ("m0", m0.as_slice()),
            ("P0", p0.as_slice()),
        ];
        for (name, values) in entries {
            if let Some(&v) = values.iter().find(|v| !v.is_finite()) {
                return Err(SmcError::InvalidParameter {
                    name,
                    value: v,
                    reason: "entries must be finite",
                });
            }
        }
        for (name, s) in [("Q", &q), ("R", &r), ("P0", &p0)] {
            let asymmetry = (s - s.transpose()).amax();
            if asymmetry > 1e-12 * s.amax().max(1.0) {
                return Err(SmcError::InvalidParameter {
                    name,
                    value: asymmetry,
                    reason: "covariance must be symmetric (largest |S - Sᵀ| shown)",
                });
            }
        }
        let chol_r = r
            .clone()
            .cholesky()
            .ok_or(SmcError::InvalidParameter {
                name: "R",
                value: r.determinant(),
                reason: "observation covariance must be positive definite (determinant shown)",
            })?
            .l();
        let mut whitened = h.clone();
        chol_r.solve_lower_triangular_mut(&mut whitened);
        let log_norm = if k == 1 {
            // The scalar form, bit for bit that of `kalman`'s innovation term.
            -0.5 * (2.0 * PI * r[(0, 0)]).ln()
        } else {
            -0.5 * (2.0 * chol_r.diagonal().iter().map(|v| v.ln()).sum::<f64>()
                + k as f64 * (2.0 * PI).ln())
        };
        Ok(Lgssm {
            a_rows: row_major(&a),
            h_rows: row_major(&h),
            sqrt_q: square_root(&q, "Q")?,
            sqrt_p0: square_root(&p0, "P0")?,
            sqrt_r: row_major(&chol_r),
            whitened_h: row_major(&whitened),
            chol_r,
            log_norm,
            a,
            q,
            h,
            r,
            m0,
            p0,
        })
    }

    /// The 1-D model `x₀ ~ N(m0, p0)`, `x' = a x + N(0, q)`,
    /// `y = h x + N(0, r)`.
    ///
    /// # Errors
    /// As [`Lgssm::new`]: non-finite values, `q < 0`, `p0 < 0`, `r ≤ 0`.
    pub fn scalar(a: f64, q: f64, h: f64, r: f64, m0: f64, p0: f64) -> Result<Self, SmcError> {
        let s = |v| DMatrix::from_element(1, 1, v);
        Lgssm::new(s(a), s(q), s(h), s(r), DVector::from_element(1, m0), s(p0))
    }

    /// State dimension `D`.
    pub fn state_dim(&self) -> usize {
        self.a.nrows()
    }

    /// Observation dimension `K`.
    pub fn obs_dim(&self) -> usize {
        self.h.nrows()
    }

    /// The transition matrix `A`.
    pub fn a(&self) -> &DMatrix<f64> {
        &self.a
    }

    /// The process noise covariance `Q`.
    pub fn q(&self) -> &DMatrix<f64> {
        &self.q
    }

    /// The observation matrix `H`.
    pub fn h(&self) -> &DMatrix<f64> {
        &self.h
    }

    /// The observation noise covariance `R`.
    pub fn r(&self) -> &DMatrix<f64> {
        &self.r
    }

    /// The mean `m₀` of `x₀`.
    pub fn m0(&self) -> &DVector<f64> {
        &self.m0
    }

    /// The covariance `P₀` of `x₀`.
    pub fn p0(&self) -> &DMatrix<f64> {
        &self.p0
    }

    /// `T` steps of the model: `x₀ ~ N(m₀, P₀)`, then for each `t` (`x_t`
    /// first for `t ≥ 1`) `y_t = H x_t + N(0, R)`. The standard normals are
    /// drawn from `rng` in that order, coordinate by coordinate, so a seeded
    /// generator fixes the path.
    pub fn simulate<R: Rng + ?Sized>(&self, steps: usize, rng: &mut R) -> Simulation {
        let (d, k) = (self.state_dim(), self.obs_dim());
        let mut x = vec![0.0; d];
        let mut next = vec![0.0; d];
        let mut y = vec![0.0; k];
        let mut path = Simulation {
            states: Vec::with_capacity(steps),
            observations: Vec::with_capacity(steps),
        };
        affine_plus_noise(None, self.m0.as_slice(), &self.sqrt_p0, &mut x, rng);
        for t in 0..steps {
            if t > 0 {
                affine_plus_noise(Some(&self.a_rows), &x, &self.sqrt_q, &mut next, rng);
                std::mem::swap(&mut x, &mut next);
            }
            affine_plus_noise(Some(&self.h_rows), &x, &self.sqrt_r, &mut y, rng);
            path.states.push(DVector::from_column_slice(&x));
            path.observations.push(DVector::from_column_slice(&y));
        }
        path
    }

    /// `log N(y; H x, R)` for one state.
    ///
    /// # Panics
    /// In debug builds if `y` or `x` has the wrong length (the batched
    /// [`Likelihood`] checks and returns an error instead).
    pub fn log_density(&self, y: &[f64], x: &[f64]) -> f64 {
        debug_assert_eq!((y.len(), x.len()), (self.obs_dim(), self.state_dim()));
        let white_y = self.whiten(y);
        self.log_likelihood_whitened(y, &white_y, x)
    }

    /// `L⁻¹ y` (unused, empty, for `K = 1`).
    fn whiten(&self, y: &[f64]) -> Vec<f64> {
        if self.obs_dim() == 1 {
            return Vec::new();
        }
        let mut u = DVector::from_column_slice(y);
        self.chol_r.solve_lower_triangular_mut(&mut u);
        u.as_slice().to_vec()
    }

    fn log_likelihood_whitened(&self, y: &[f64], white_y: &[f64], x: &[f64]) -> f64 {
        let dot = |row: &[f64]| row.iter().zip(x).map(|(a, b)| a * b).sum::<f64>();
        if self.obs_dim() == 1 {
            let e = y[0] - dot(&self.h_rows);
            return -0.5 * e.powi(2) / self.r[(0, 0)] + self.log_norm;
        }
        let quad: f64 = white_y
            .iter()
            .zip(self.whitened_h.chunks_exact(x.len()))
            .map(|(u, row)| (u - dot(row)).powi(2))
            .sum();
        self.log_norm - 0.5 * quad
    }

    fn batch(
        &self,
        y: &[f64],
        states: &[f64],
        dim: usize,
        out: &mut [f64],
    ) -> Result<(), BoxError> {
        let checks = [
            ("LGSSM observation length", self.obs_dim(), y.len()),
            ("LGSSM state dimension", self.state_dim(), dim),
            ("LGSSM states buffer", out.len() * dim, states.len()),
        ];
        for (what, expected, got) in checks {
            if expected != got {
                return Err(Box::new(SmcError::ShapeMismatch {
                    what,
                    expected,
                    got,
                }));
            }
        }
        let white_y = self.whiten(y);
        let eval = |(o, x): (&mut f64, &[f64])| *o = self.log_likelihood_whitened(y, &white_y, x);
        if out.len() <= LIKELIHOOD_TASK {
            out.iter_mut().zip(states.chunks_exact(dim)).for_each(eval);
        } else {
            out.par_iter_mut()
                .zip(states.par_chunks_exact(dim))
                .with_min_len(LIKELIHOOD_TASK)
                .for_each(eval);
        }
        Ok(())
    }

    /// The exact filter over `ys` (module docs): prediction
    /// `m_{t|t−1} = A m_{t−1}`, `P_{t|t−1} = A P_{t−1} Aᵀ + Q` (`t ≥ 1`),
    /// update with `S = H P Hᵀ + R`, `K = P Hᵀ S⁻¹`, `m = m + K (y − H m)`
    /// and the Joseph form `P = (I − KH) P (I − KH)ᵀ + K R Kᵀ`, which keeps
    /// `P` symmetric positive semi-definite; the evidence accumulates
    /// `log N(y_t; H m_{t|t−1}, S_t)`. For `D = K = 1` the scalar update
    /// `P = (1 − KH) P` is used (equal in exact arithmetic, and already
    /// non-negative in one dimension).
    ///
    /// # Errors
    /// [`SmcError::ShapeMismatch`] for an observation whose length is not `K`.
    pub fn kalman(&self, ys: &[DVector<f64>]) -> Result<Kalman, SmcError> {
        if let Some(y) = ys.iter().find(|y| y.len() != self.obs_dim()) {
            return Err(SmcError::ShapeMismatch {
                what: "LGSSM observation length",
                expected: self.obs_dim(),
                got: y.len(),
            });
        }
        let mut out = Kalman {
            predicted_mean: Vec::with_capacity(ys.len()),
            predicted_cov: Vec::with_capacity(ys.len()),
            mean: Vec::with_capacity(ys.len()),
            cov: Vec::with_capacity(ys.len()),
            log_evidence: 0.0,
        };
        let d = self.state_dim();
        let (mut m, mut p) = (self.m0.clone(), self.p0.clone());
        let scalar = d == 1 && self.obs_dim() == 1;
        for (t, y) in ys.iter().enumerate() {
            if t > 0 {
                if scalar {
                    let a = self.a[(0, 0)];
                    m[0] *= a;
                    p[(0, 0)] = a * a * p[(0, 0)] + self.q[(0, 0)];
                } else {
                    m = &self.a * &m;
                    p = &self.a * &p * self.a.transpose() + &self.q;
                }
            }
            out.predicted_mean.push(m.clone());
            out.predicted_cov.push(p.clone());
            if scalar {
                let (h, r, pv) = (self.h[(0, 0)], self.r[(0, 0)], p[(0, 0)]);
                let s = h * h * pv + r;
                let innovation = y[0] - h * m[0];
                out.log_evidence += -0.5 * (innovation * innovation / s + (2.0 * PI * s).ln());
                let k = pv * h / s;
                m[0] += k * innovation;
                p[(0, 0)] *= 1.0 - k * h;
            } else {
                let s = &self.h * &p * self.h.transpose() + &self.r;
                // S ⪰ R ≻ 0, so the factorisation cannot fail.
                let chol = s
                    .clone()
                    .cholesky()
                    .expect("S = HPHᵀ + R is positive definite");
                let innovation = y - &self.h * &m;
                let log_det: f64 = 2.0 * chol.l().diagonal().iter().map(|v| v.ln()).sum::<f64>();
                out.log_evidence += -0.5
                    * (innovation.dot(&chol.solve(&innovation))
                        + log_det
                        + y.len() as f64 * (2.0 * PI).ln());
                // K = P Hᵀ S⁻¹ = (S⁻¹ H P)ᵀ, S and P symmetric.
                let k = chol.solve(&(&self.h * &p)).transpose();
                m = &m + &k * innovation;
                let i_kh = DMatrix::identity(d, d) - &k * &self.h;
                p = &i_kh * &p * i_kh.transpose() + &k * &self.r * k.transpose();
            }
            out.mean.push(m.clone());
            out.cov.push(p.clone());
        }
        Ok(out)
    }
}

/// The bootstrap proposal: `x₀ ~ N(m₀, P₀)`, `x_t ~ N(A x_{t−1}, Q)`,
/// importance correction 0 (PHYSPRIOR Eq. 3.2 with `π = p`). The
/// observation is not looked at, so any observation type works.
impl<O: ?Sized> Propagate<O> for Lgssm {
    fn initial(&self, _: &O, state: &mut [f64], rng: &mut ParticleRng) -> f64 {
        affine_plus_noise(None, self.m0.as_slice(), &self.sqrt_p0, state, rng);
        0.0
    }

    fn propagate(
        &self,
        _: usize,
        _: &O,
        prev: &[f64],
        next: &mut [f64],
        rng: &mut ParticleRng,
    ) -> f64 {
        affine_plus_noise(Some(&self.a_rows), prev, &self.sqrt_q, next, rng);
        0.0
    }
}

/// `log N(y; H x, R)` for every particle, for an observation given as a
/// slice, a vector, or a scalar (`K = 1`; another `K` is a shape error).
macro_rules! likelihood_of_observation {
    ($($obs:ty => |$y:ident| $as_slice:expr;)+) => {$(
        /// `log N(y; H x, R)` for every particle.
        impl Likelihood<$obs> for Lgssm {
            fn log_likelihood(
                &self,
                $y: &$obs,
                states: &[f64],
                dim: usize,
                out: &mut [f64],
            ) -> Result<(), BoxError> {
                self.batch($as_slice, states, dim, out)
            }
        }
    )+};
}

likelihood_of_observation! {
    [f64] => |y| y;
    DVector<f64> => |y| y.as_slice();
    f64 => |y| std::slice::from_ref(y);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{StreamDomain, stream_rng};

    fn tracking() -> Lgssm {
        let a = DMatrix::from_row_slice(2, 2, &[1.0, 0.5, 0.0, 0.9]);
        let q = DMatrix::from_row_slice(2, 2, &[0.1, 0.02, 0.02, 0.2]);
        let h = DMatrix::from_row_slice(2, 2, &[1.0, 0.0, 0.5, 1.0]);
        let r = DMatrix::from_row_slice(2, 2, &[0.3, 0.1, 0.1, 0.4]);
        let m0 = DVector::from_vec(vec![0.5, -1.0]);
        Lgssm::new(a, q, h, r, m0, DMatrix::identity(2, 2)).unwrap()
    }

    /// `log N(y; μ, Σ)` by the textbook formula.
    fn log_normal(y: &DVector<f64>, mu: &DVector<f64>, sigma: &DMatrix<f64>) -> f64 {
        let e = y - mu;
        let inv = sigma.clone().try_inverse().unwrap();
        -0.5 * (e.dot(&(&inv * &e)) + sigma.determinant().ln() + y.len() as f64 * (2.0 * PI).ln())
    }

    #[test]
    fn likelihood_is_the_gaussian_density() {
        let model = tracking();
        let x = [0.7, -0.2, 1.5, 0.3];
        let y = DVector::from_vec(vec![0.4, 0.9]);
        let mut out = [0.0; 2];
        model.log_likelihood(&y, &x, 2, &mut out).unwrap();
        for (i, o) in out.iter().enumerate() {
            let hx = model.h() * DVector::from_column_slice(&x[2 * i..2 * i + 2]);
            let exact = log_normal(&y, &hx, model.r());
            // Round-off of two 2×2 solves: ~1e-15 relative.
            assert!((o - exact).abs() < 1e-12, "{o} vs {exact}");
        }
        // Shapes are checked.
        assert!(Likelihood::<f64>::log_likelihood(&model, &0.3, &x, 2, &mut out).is_err());
        assert!(model.log_likelihood(&y, &x, 4, &mut out[..1]).is_err());
    }

    #[test]
    fn kalman_evidence_is_the_joint_gaussian_density() {
        // y_{0:T−1} is jointly Gaussian: stack x = (x₀, …, x_{T−1}) with
        // E x_t = Aᵗ m₀, Cov(x_s, x_t) = A^{t−s} Cov(x_s) (s ≤ t), and
        // y = (I ⊗ H) x + noise. The Kalman filter's evidence must be that
        // density; round-off only (1e-9 on a value of order 10).
        let model = tracking();
        let steps = 6;
        let ys = model
            .simulate(steps, &mut stream_rng(4, 0, StreamDomain::User(0), 0))
            .observations;
        let k = 2;
        let mut means = vec![model.m0().clone()];
        let mut covs = vec![model.p0().clone()];
        for t in 1..steps {
            means.push(model.a() * &means[t - 1]);
            covs.push(model.a() * &covs[t - 1] * model.a().transpose() + model.q());
        }
        let mut mu = DVector::zeros(k * steps);
        let mut sigma = DMatrix::zeros(k * steps, k * steps);
        for s in 0..steps {
            mu.rows_mut(k * s, k).copy_from(&(model.h() * &means[s]));
            let mut cross = covs[s].clone(); // Cov(x_t, x_s) for t = s, s+1, …
            for t in s..steps {
                let block = model.h() * &cross * model.h().transpose();
                sigma.view_mut((k * t, k * s), (k, k)).copy_from(&block);
                sigma
                    .view_mut((k * s, k * t), (k, k))
                    .copy_from(&block.transpose());
                cross = model.a() * cross;
            }
            let diag = sigma.view((k * s, k * s), (k, k)) + model.r();
            sigma.view_mut((k * s, k * s), (k, k)).copy_from(&diag);
        }
        let stacked = DVector::from_iterator(k * steps, ys.iter().flat_map(|y| y.iter().copied()));
        let exact = log_normal(&stacked, &mu, &sigma);
        let kf = model.kalman(&ys).unwrap();
        assert!(
            (kf.log_evidence - exact).abs() < 1e-9,
            "{} vs {exact}",
            kf.log_evidence
        );
        assert_eq!(kf.mean.len(), steps);
        assert_eq!(kf.predicted_cov[0], *model.p0());
        assert!(model.kalman(&[DVector::zeros(3)]).is_err());
    }

    #[test]
    fn simulation_and_proposal_have_the_model_moments() {
        // 20 000 draws of x₁ = A x₀ + noise: the sample mean of each
        // coordinate is within 5 sd (sd = √(Var/n) ≤ √(2/20 000) = 0.01) of
        // A m₀.
        let model = tracking();
        let n = 20_000;
        let mut sum = DVector::zeros(2);
        let mut x0 = [0.0; 2];
        let mut x1 = [0.0; 2];
        for i in 0..n {
            let mut rng = stream_rng(9, 0, StreamDomain::User(1), i);
            Propagate::<f64>::initial(&model, &0.0, &mut x0, &mut rng);
            Propagate::<f64>::propagate(&model, 1, &0.0, &x0, &mut x1, &mut rng);
            sum += DVector::from_column_slice(&x1);
        }
        let expected = model.a() * model.m0();
        let mean = sum / n as f64;
        assert!((&mean - &expected).amax() < 0.05, "{mean} vs {expected}");
        // `simulate` draws the same path as initial + propagate from the
        // same generator.
        let mut rng = stream_rng(9, 0, StreamDomain::User(1), 0);
        let path = model.simulate(2, &mut rng);
        let mut rng = stream_rng(9, 0, StreamDomain::User(1), 0);
        Propagate::<f64>::initial(&model, &0.0, &mut x0, &mut rng);
        assert_eq!(path.states[0].as_slice(), &x0);
    }

    #[test]
    fn singular_covariances_are_allowed_and_bad_ones_named() {
        // Q = 0: a deterministic evolution.
        let model = Lgssm::scalar(0.5, 0.0, 1.0, 1.0, 2.0, 0.0).unwrap();
        let path = model.simulate(3, &mut stream_rng(1, 0, StreamDomain::User(0), 0));
        assert_eq!(path.states[2][0], 0.5);
        assert!(matches!(
            Lgssm::scalar(1.0, -1.0, 1.0, 1.0, 0.0, 1.0),
            Err(SmcError::InvalidParameter { name: "Q", .. })
        ));
        assert!(matches!(
            Lgssm::scalar(1.0, 1.0, 1.0, 0.0, 0.0, 1.0),
            Err(SmcError::InvalidParameter { name: "R", .. })
        ));
        assert!(matches!(
            Lgssm::scalar(f64::NAN, 1.0, 1.0, 1.0, 0.0, 1.0),
            Err(SmcError::InvalidParameter { name: "A", .. })
        ));
        let e = Lgssm::new(
            DMatrix::identity(2, 2),
            DMatrix::identity(2, 2),
            DMatrix::identity(1, 3),
            DMatrix::identity(1, 1),
            DVector::zeros(2),
            DMatrix::identity(2, 2),
        )
        .unwrap_err();
        assert!(matches!(
            e,
            SmcError::ShapeMismatch {
                what: "H columns",
                expected: 2,
                got: 3
            }
        ));
    }
}

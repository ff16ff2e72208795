//! Contact estimation (SPARSE §2.2.6, Eq. 7–10): where the body touches the
//! environment, and which contact wrenches explain the motion of the
//! unactuated root.
//!
//! **Candidates.** No scene geometry is assumed. A body is in contact when
//! some point of its surface is (nearly) at rest: with `ω`, `v` the body's
//! angular velocity and its centre of mass velocity under the optimal
//! velocities `q̇*`, the point of least velocity is `r` solving
//! `(ηI − ω̂) r = v` (η regularises a body that does not turn). The point
//! `p_b + r` counts when it lies within `δ₁` of the capsule surface
//! (proximity criterion); a body at rest whose `r` lands inside it is
//! supported at its lowest surface point along gravity. Either way the
//! surface point must move slower than `δ₂` (velocity criterion). Each body
//! has at most one contact; its normal is the capsule's surface normal.
//!
//! **Forces.** Contact `j` carries `λ_j = (λ_n, λ_t1, λ_t2, λ_τ)` mapped to a
//! wrench by the basis `B_j` (normal force, two tangential forces, torsion
//! about the normal), constrained to the friction cone
//!
//! ```text
//! λ_n ≥ 0,   |λ_t1| + |λ_t2| ≤ μ λ_n,   |λ_τ| ≤ s μ λ_n          (Eq. 7–9)
//! ```
//!
//! and chosen to reproduce the root rows of the inverse dynamics,
//! `min ‖(M (q̇* − q̇)/h + C)_root − (J_cᵀ B λ)_root‖` (Eq. 10, the paper's
//! garbled `M₁ q̇*` read as the root's required generalised force), solved
//! by projected Gauss–Seidel on the cones' extreme rays
//! ([`solve_friction_pgs`]).

use dynamics::{Data, Model};
use nalgebra::{DMatrix, DVector, Isometry3, Matrix3, Point3, Vector3};
use skeleton::{BodyPart, Skeleton};

use crate::error::{Result, require_non_negative, require_positive};

/// Options of contact estimation.
#[derive(Clone, Debug, PartialEq)]
pub struct ContactConfig {
    /// Friction coefficient μ (paper: 0.8).
    pub mu: f64,
    /// Torsion scale `s` of Eq. 9 (paper: 5.0), metres.
    pub torsion_scale: f64,
    /// Regulariser η of the least-velocity point, 1/s.
    pub eta: f64,
    /// Proximity threshold δ₁, metres.
    pub surface_distance: f64,
    /// Velocity threshold δ₂, m/s.
    pub max_velocity: f64,
    /// Body parts that may touch the environment.
    pub parts: Vec<BodyPart>,
    /// PGS sweeps.
    pub iterations: usize,
    /// Tikhonov term of Eq. 10 (keeps the normal equations definite).
    pub regularization: f64,
    /// Cap on each normal force, in body weights (a running or landing
    /// foot peaks at 2–3): keeps a noisy root acceleration from asking the
    /// feet for forces no leg could transmit.
    pub max_normal_force: f64,
}

impl Default for ContactConfig {
    fn default() -> Self {
        Self {
            mu: 0.8,
            torsion_scale: 0.05,
            eta: 0.5,
            surface_distance: 0.03,
            max_velocity: 0.5,
            parts: vec![BodyPart::Foot],
            iterations: 60,
            regularization: 1e-6,
            max_normal_force: 3.0,
        }
    }
}

impl ContactConfig {
    pub fn validate(&self) -> Result<()> {
        require_non_negative("contact.mu", self.mu)?;
        require_non_negative("contact.torsion_scale", self.torsion_scale)?;
        require_positive("contact.eta", self.eta)?;
        require_positive("contact.surface_distance", self.surface_distance)?;
        require_positive("contact.max_velocity", self.max_velocity)?;
        require_positive("contact.regularization", self.regularization)?;
        require_positive("contact.max_normal_force", self.max_normal_force)?;
        Ok(())
    }
}

/// One estimated contact and its force.
#[derive(Clone, Debug, PartialEq)]
pub struct Contact {
    /// Skeleton joint (bone) in contact.
    pub joint: usize,
    /// World contact point.
    pub point: Point3<f64>,
    /// The contact frame `(n, t1, t2)`: the unit normal along which the
    /// environment pushes the body, then two unit tangents ([`tangents`]).
    pub frame: [Vector3<f64>; 3],
    /// `(λ_n, λ_t1, λ_t2, λ_τ)`: newtons and newton-metres.
    pub lambda: [f64; 4],
}

impl Contact {
    /// The unit normal `n` (the first axis of [`Contact::frame`]).
    pub fn normal(&self) -> Vector3<f64> {
        self.frame[0]
    }

    /// The contact force on the body, `λ_n n + λ_t1 t1 + λ_t2 t2`, N (world).
    pub fn force(&self) -> Vector3<f64> {
        self.frame
            .iter()
            .zip(&self.lambda)
            .map(|(d, l)| d * *l)
            .sum()
    }

    /// The torsional moment about the normal, N·m (world).
    pub fn torque(&self) -> Vector3<f64> {
        self.normal() * self.lambda[3]
    }
}

/// Closest point of the capsule axis segment `a–b` to `x`.
fn closest_on_segment(a: &Point3<f64>, b: &Point3<f64>, x: &Point3<f64>) -> Point3<f64> {
    let ab = b - a;
    let t = if ab.norm_squared() > 0.0 {
        ((x - a).dot(&ab) / ab.norm_squared()).clamp(0.0, 1.0)
    } else {
        0.0
    };
    a + ab * t
}

/// Two unit tangents completing `n` to an orthonormal basis.
pub(crate) fn tangents(n: &Vector3<f64>) -> (Vector3<f64>, Vector3<f64>) {
    let a = if n.x.abs() < 0.9 {
        Vector3::x()
    } else {
        Vector3::y()
    };
    let t1 = n.cross(&a).normalize();
    let t2 = n.cross(&t1);
    (t1, t2)
}

/// Finds the contacts under the velocities `v` (module docs). `gravity` is
/// the model's gravity vector; `jac` is 3 × nv scratch.
#[allow(clippy::too_many_arguments)]
pub(crate) fn detect_contacts(
    model: &Model,
    data: &mut Data,
    q: &[f64],
    v: &[f64],
    world: &[Isometry3<f64>],
    config: &ContactConfig,
    jac: &mut DMatrix<f64>,
    out: &mut Vec<Contact>,
) -> Result<()> {
    out.clear();
    let skeleton: &Skeleton = model.skeleton();
    let down = model
        .gravity()
        .try_normalize(1e-12)
        .unwrap_or(-Vector3::y());
    let vel = DVector::from_column_slice(v);
    for (j, joint) in skeleton.joints().iter().enumerate() {
        let Some(body) = &joint.body else { continue };
        if !config.parts.contains(&body.part) || body.mass <= 0.0 {
            continue;
        }
        let w = &world[j];
        let a = w * Point3::from(body.capsule.start);
        let b = w * Point3::from(body.capsule.end);
        let radius = body.capsule.radius;
        let com_local = body.capsule.centre();
        let com = w * Point3::from(com_local);
        model.orientation_jacobian(data, q, j, jac)?;
        let omega: Vector3<f64> = (&*jac * &vel).fixed_rows::<3>(0).into();
        model.point_jacobian(data, q, j, &com_local, jac)?;
        let v_com: Vector3<f64> = (&*jac * &vel).fixed_rows::<3>(0).into();
        // Least-velocity point: (ηI − ω̂) r = v.
        let sys = Matrix3::identity() * config.eta - dynamics::skew(&omega);
        let r = sys.lu().solve(&v_com).unwrap_or_else(Vector3::zeros);
        let x = com + r;
        let c = closest_on_segment(&a, &b, &x);
        let off = x - c;
        let dist = off.norm();
        let (point, outward) = if (dist - radius).abs() < config.surface_distance && dist > 1e-9 {
            let n = off / dist;
            (c + n * radius, n)
        } else {
            // Supported from below: the lowest surface point along gravity.
            let low = if (a - b).dot(&down) > 0.0 { a } else { b };
            (low + down * radius, down)
        };
        let speed = (v_com + omega.cross(&(point - com))).norm();
        if speed >= config.max_velocity {
            continue;
        }
        let normal = -outward;
        let (t1, t2) = tangents(&normal);
        out.push(Contact {
            joint: j,
            point,
            frame: [normal, t1, t2],
            lambda: [0.0; 4],
        });
    }
    Ok(())
}

/// The generalised forces of the contact basis: column `4j + k` is
/// `J_cᵀ B_j e_k` (`J_c = (J_ω; J_v)` at the contact point), so that
/// `Σ_j J_cᵀ B_j λ_j = G λ`. `g` is resized to nv × 4n_c.
pub(crate) fn contact_generalized_forces(
    model: &Model,
    data: &mut Data,
    q: &[f64],
    world: &[Isometry3<f64>],
    contacts: &[Contact],
    jac: &mut DMatrix<f64>,
    g: &mut DMatrix<f64>,
) -> Result<()> {
    let nv = model.nv();
    *g = DMatrix::zeros(nv, 4 * contacts.len());
    for (k, c) in contacts.iter().enumerate() {
        let local = world[c.joint].inverse() * c.point;
        model.point_jacobian(data, q, c.joint, &local.coords, jac)?;
        for (col, dir) in c.frame.iter().enumerate() {
            let f = jac.tr_mul(&DMatrix::from_column_slice(3, 1, dir.as_slice()));
            g.set_column(4 * k + col, &f.column(0));
        }
        model.orientation_jacobian(data, q, c.joint, jac)?;
        let t = jac.tr_mul(&DMatrix::from_column_slice(3, 1, c.normal().as_slice()));
        g.set_column(4 * k + 3, &t.column(0));
    }
    Ok(())
}

/// The eight extreme rays of contact `j`'s cone (Eq. 7–9): its cross-section
/// at `λ_n = 1` is the diamond `|λ_t1| + |λ_t2| ≤ μ` times the interval
/// `|λ_τ| ≤ sμ`, a polytope with the eight vertices `(1, ±μ, 0, ±sμ)`,
/// `(1, 0, ±μ, ±sμ)`. Every λ in the cone is `Σ_k α_k r_k` with `α ≥ 0`.
pub(crate) fn cone_rays(mu: f64, s: f64) -> [[f64; 4]; 8] {
    let t = s * mu;
    [
        [1.0, mu, 0.0, t],
        [1.0, mu, 0.0, -t],
        [1.0, -mu, 0.0, t],
        [1.0, -mu, 0.0, -t],
        [1.0, 0.0, mu, t],
        [1.0, 0.0, mu, -t],
        [1.0, 0.0, -mu, t],
        [1.0, 0.0, -mu, -t],
    ]
}

/// Projected Gauss–Seidel for `min ½ λᵀQλ − cᵀλ` over the friction cones of
/// Eq. 7–9 (blocks of four: normal, two tangents, torsion). Each cone is
/// written through its eight extreme rays ([`cone_rays`]), `λ = R α`, so the
/// problem becomes `min ½ αᵀ(RᵀQR)α − (Rᵀc)ᵀα` over `α ≥ 0`, whose
/// Gauss–Seidel sweeps with projection on `α_k ≥ 0` converge to the exact
/// minimiser (a convex QP with separable bounds); every iterate satisfies
/// Eq. 7–9 exactly. A normal force above `max_normal` (`f64::INFINITY` for
/// none) scales its block down after each sweep, a safety cap. `lambda`
/// receives the result. Returns the sweeps run.
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve_friction_pgs(
    q: &DMatrix<f64>,
    c: &DVector<f64>,
    mu: f64,
    torsion_scale: f64,
    max_normal: f64,
    iterations: usize,
    lambda: &mut DVector<f64>,
) -> usize {
    let n = c.len();
    debug_assert_eq!(n % 4, 0);
    let nc = n / 4;
    let rays = cone_rays(mu, torsion_scale);
    let mut r = DMatrix::zeros(n, 8 * nc);
    for b in 0..nc {
        for (k, ray) in rays.iter().enumerate() {
            for (i, x) in ray.iter().enumerate() {
                r[(4 * b + i, 8 * b + k)] = *x;
            }
        }
    }
    let qa = r.tr_mul(&(q * &r));
    let ca = r.tr_mul(c);
    let mut alpha = DVector::zeros(8 * nc);
    let mut sweeps = iterations;
    for sweep in 0..iterations {
        let mut change: f64 = 0.0;
        for i in 0..8 * nc {
            let d = qa[(i, i)];
            if d <= 0.0 {
                continue;
            }
            let grad = qa.column(i).dot(&alpha) - ca[i];
            let old = alpha[i];
            let new = (old - grad / d).max(0.0);
            alpha[i] = new;
            change = change.max((new - old).abs());
        }
        if max_normal.is_finite() {
            for b in 0..nc {
                let total: f64 = alpha.rows(8 * b, 8).sum();
                if total > max_normal {
                    alpha.rows_mut(8 * b, 8).scale_mut(max_normal / total);
                }
            }
        }
        if change < 1e-10 * (1.0 + alpha.amax()) {
            sweeps = sweep + 1;
            break;
        }
    }
    *lambda = &r * alpha;
    sweeps
}

/// Projects each block onto its cone (scaling tangents, clamping torsion).
pub fn project_cones(lambda: &mut DVector<f64>, mu: f64, torsion_scale: f64, max_normal: f64) {
    for b in (0..lambda.len()).step_by(4) {
        let ln = lambda[b].clamp(0.0, max_normal);
        lambda[b] = ln;
        let t = lambda[b + 1].abs() + lambda[b + 2].abs();
        if t > mu * ln {
            let s = if t > 0.0 { mu * ln / t } else { 0.0 };
            lambda[b + 1] *= s;
            lambda[b + 2] *= s;
        }
        let tb = torsion_scale * mu * ln;
        lambda[b + 3] = lambda[b + 3].clamp(-tb, tb);
    }
}

/// Box-constrained PGS for `min ½ xᵀAx − bᵀx`, `lo ≤ x ≤ hi` (A symmetric
/// positive definite). Warm start in `x`. Returns the sweeps run.
pub(crate) fn solve_box_pgs(
    a: &DMatrix<f64>,
    b: &DVector<f64>,
    lo: &[f64],
    hi: &[f64],
    iterations: usize,
    x: &mut DVector<f64>,
) -> usize {
    let n = b.len();
    for i in 0..n {
        x[i] = x[i].clamp(lo[i], hi[i]);
    }
    for sweep in 0..iterations {
        let mut change: f64 = 0.0;
        for i in 0..n {
            let aii = a[(i, i)];
            if aii <= 0.0 {
                continue;
            }
            let grad = a.column(i).dot(x) - b[i];
            let old = x[i];
            let new = (old - grad / aii).clamp(lo[i], hi[i]);
            x[i] = new;
            change = change.max((new - old).abs());
        }
        if change < 1e-12 {
            return sweep + 1;
        }
    }
    iterations
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_pcg::Pcg64;

    fn feasible(l: &DVector<f64>, mu: f64, s: f64, max_n: f64) -> bool {
        (0..l.len()).step_by(4).all(|b| {
            let n = l[b];
            n >= 0.0
                && n <= max_n + 1e-12
                && l[b + 1].abs() + l[b + 2].abs() <= mu * n + 1e-9
                && l[b + 3].abs() <= s * mu * n + 1e-9
        })
    }

    fn objective(q: &DMatrix<f64>, c: &DVector<f64>, l: &DVector<f64>) -> f64 {
        0.5 * l.dot(&(q * l)) - c.dot(l)
    }

    /// Random least-squares problems `‖G λ − t‖²` (6 rows, 1–3 contacts):
    /// PGS ends inside every cone, beats λ = 0 and every one of many random
    /// feasible points of the same scale, and cuts the residual of the
    /// unconstrained least-squares fit no worse than it is cut by the best
    /// of those points.
    #[test]
    fn pgs_is_feasible_and_beats_random_feasible_points() {
        let mut rng = Pcg64::seed_from_u64(3);
        let (mu, s) = (0.8, 0.05);
        for trial in 0..40 {
            let nc = 1 + trial % 3;
            let g = DMatrix::from_fn(6, 4 * nc, |_, _| rng.random::<f64>() * 2.0 - 1.0);
            let t = DVector::from_fn(6, |_, _| rng.random::<f64>() * 20.0 - 10.0);
            let mut q = g.tr_mul(&g);
            for i in 0..4 * nc {
                q[(i, i)] += 1e-3;
            }
            let c = g.tr_mul(&t);
            let mut l = DVector::zeros(4 * nc);
            solve_friction_pgs(&q, &c, mu, s, f64::INFINITY, 2000, &mut l);
            assert!(feasible(&l, mu, s, f64::INFINITY), "trial {trial}: {l}");
            let best = objective(&q, &c, &l);
            assert!(best <= 0.0, "trial {trial}: worse than λ = 0");
            let scale = 2.0 * l.amax().max(1.0);
            for _ in 0..2000 {
                let mut p = DVector::zeros(4 * nc);
                for b in (0..4 * nc).step_by(4) {
                    let n = rng.random::<f64>() * scale;
                    let a = rng.random::<f64>();
                    let t1 = (rng.random::<f64>() * 2.0 - 1.0) * mu * n * a;
                    let t2 = (rng.random::<f64>() * 2.0 - 1.0) * (mu * n - t1.abs());
                    let tau = (rng.random::<f64>() * 2.0 - 1.0) * s * mu * n;
                    p.rows_mut(b, 4).copy_from_slice(&[n, t1, t2, tau]);
                }
                assert!(feasible(&p, mu, s, f64::INFINITY));
                assert!(
                    objective(&q, &c, &p) >= best - 1e-9 * (1.0 + best.abs()),
                    "trial {trial}"
                );
            }
        }
    }

    /// Without friction the problem is an LCP: λ ≥ 0, w = Qλ − c ≥ 0, λ·w = 0.
    #[test]
    fn pgs_satisfies_complementarity_without_friction() {
        let mut rng = Pcg64::seed_from_u64(5);
        for _ in 0..20 {
            let nc = 3;
            let a = DMatrix::from_fn(4 * nc, 4 * nc, |_, _| rng.random::<f64>() - 0.5);
            let q = a.tr_mul(&a) + DMatrix::identity(4 * nc, 4 * nc) * 0.5;
            let c = DVector::from_fn(4 * nc, |_, _| rng.random::<f64>() * 4.0 - 2.0);
            let mut l = DVector::zeros(4 * nc);
            solve_friction_pgs(&q, &c, 0.0, 0.0, f64::INFINITY, 10_000, &mut l);
            let w = &q * &l - &c;
            for b in (0..4 * nc).step_by(4) {
                assert!(l[b] >= 0.0);
                assert!(w[b] >= -1e-8, "w = {}", w[b]);
                assert!((l[b] * w[b]).abs() < 1e-8, "λ w = {}", l[b] * w[b]);
                assert_eq!((l[b + 1], l[b + 2], l[b + 3]), (0.0, 0.0, 0.0));
            }
        }
    }

    #[test]
    fn box_pgs_matches_the_unconstrained_solution_inside_the_box() {
        let a = DMatrix::from_row_slice(2, 2, &[4.0, 1.0, 1.0, 3.0]);
        let b = DVector::from_row_slice(&[1.0, 2.0]);
        let mut x = DVector::zeros(2);
        solve_box_pgs(&a, &b, &[-10.0, -10.0], &[10.0, 10.0], 500, &mut x);
        let exact = a.clone().cholesky().unwrap().solve(&b);
        assert!((x - exact).norm() < 1e-10);
        let mut y = DVector::zeros(2);
        solve_box_pgs(&a, &b, &[-10.0, -10.0], &[10.0, 0.1], 500, &mut y);
        assert!((y[1] - 0.1).abs() < 1e-12);
        // Then x₀ minimises 4x² + x·0.1 − x: x₀ = (1 − 0.1)/4.
        assert!((y[0] - 0.9 / 4.0).abs() < 1e-10);
    }
}

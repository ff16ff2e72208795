//! The monopode (PHYSPRIOR §2.1.1, Eq. 2.1–2.4).
//!
//! A point mass `m` at `q = (x, y)` on a massless telescoping stance leg
//! from the contact point `p_c`:
//!
//! ```text
//!   m q̈ = m g [sin γ, −cos γ]ᵀ + f(t) s,   s = (q − p_c)/l,  l = |q − p_c|   (Eq. 2.1)
//! ```
//!
//! The leg has a maximum length `l_max`, enforced at integration boundaries
//! as an impulsive, inelastic constraint:
//!
//! ```text
//!   q̇⁺ = q̇⁻ − max(0, s·q̇⁻) s      (Eq. 2.2)       q⁺ = p_c + l_max s      (Eq. 2.3)
//! ```
//!
//! The leg force is a constant `f(t) = c` (Eq. 2.4) made stochastic by
//! [`crate::stochastic`]; at a support transfer matched impulses `ι` along
//! the old and the new leg change the velocity by `ι(s⁺ + s⁻)/m`. The
//! monopode has no swing leg: *when* and *where* support moves is decided
//! outside (by the kinematic swing foot in [`crate::tracker`]).
//!
//! Coordinates here are relative to the contact point (`p_c = 0`), `x`
//! forward, `y` up.

use crate::error::{Result, require_finite, require_positive};

/// Physical parameters (PHYSPRIOR Table 2.1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MonopodeParams {
    /// Mass `m`.
    pub mass: f64,
    /// Maximum leg length `l_max`.
    pub max_leg_length: f64,
    /// Gravitational acceleration `g`.
    pub gravity: f64,
    /// Ground slope `γ`.
    pub slope: f64,
}

impl Default for MonopodeParams {
    /// PHYSPRIOR Table 2.1.
    fn default() -> Self {
        MonopodeParams {
            mass: 1.0,
            max_leg_length: 1.0,
            gravity: 9.81,
            slope: 0.0,
        }
    }
}

/// Position and velocity of the point mass relative to the contact point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MonopodeState {
    /// `x − x_c` (forward).
    pub x: f64,
    /// `y − y_c` (up).
    pub y: f64,
    /// `ẋ`.
    pub vx: f64,
    /// `ẏ`.
    pub vy: f64,
}

impl From<[f64; 4]> for MonopodeState {
    /// `[x, y, ẋ, ẏ]`.
    fn from([x, y, vx, vy]: [f64; 4]) -> Self {
        Self { x, y, vx, vy }
    }
}

impl From<MonopodeState> for [f64; 4] {
    fn from(s: MonopodeState) -> Self {
        [s.x, s.y, s.vx, s.vy]
    }
}

impl MonopodeState {
    /// Leg length `l`.
    pub fn leg_length(&self) -> f64 {
        (self.x * self.x + self.y * self.y).sqrt()
    }

    /// Leg angle from the downward vertical, positive when the foot is
    /// ahead of the mass (the walker's convention, so that it can drive the
    /// stance hip of [`crate::kinematics`]).
    pub fn leg_angle(&self) -> f64 {
        (-self.x).atan2(self.y)
    }
}

/// The monopode with validated parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Monopode {
    p: MonopodeParams,
}

impl Monopode {
    /// # Errors
    /// [`crate::WalkerError::InvalidParameter`] for a non-positive mass,
    /// leg length or gravity, or a non-finite slope.
    pub fn new(p: MonopodeParams) -> Result<Self> {
        require_positive("m (monopode mass)", p.mass)?;
        require_positive("l_max (maximum leg length)", p.max_leg_length)?;
        require_positive("g (gravity)", p.gravity)?;
        require_finite("gamma (slope)", p.slope)?;
        Ok(Monopode { p })
    }

    /// The parameters.
    pub fn params(&self) -> &MonopodeParams {
        &self.p
    }

    #[inline]
    fn deriv(&self, s: &MonopodeState, force: f64) -> [f64; 4] {
        let l = s.leg_length().max(1e-9);
        let (sg, cg) = self.p.slope.sin_cos();
        let a = force / (self.p.mass * l);
        [
            s.vx,
            s.vy,
            self.p.gravity * sg + a * s.x,
            -self.p.gravity * cg + a * s.y,
        ]
    }

    /// One RK4 step of Eq. 2.1 (no constraint).
    #[inline]
    pub fn rk4(&self, s: &MonopodeState, force: f64, h: f64) -> MonopodeState {
        let add = |s: &MonopodeState, k: &[f64; 4], h: f64| {
            let s: [f64; 4] = (*s).into();
            MonopodeState::from(std::array::from_fn(|i| s[i] + h * k[i]))
        };
        let k1 = self.deriv(s, force);
        let k2 = self.deriv(&add(s, &k1, 0.5 * h), force);
        let k3 = self.deriv(&add(s, &k2, 0.5 * h), force);
        let k4 = self.deriv(&add(s, &k3, h), force);
        let mut k = [0.0; 4];
        for i in 0..4 {
            k[i] = (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]) / 6.0;
        }
        add(s, &k, h)
    }

    /// The leg-length constraint, PHYSPRIOR Eq. 2.2–2.3: if `l > l_max`,
    /// remove the outward velocity along the leg and put the mass back on
    /// the sphere `l = l_max`. Returns whether it acted.
    pub fn enforce_leg_length(&self, s: &mut MonopodeState) -> bool {
        let l = s.leg_length();
        if l <= self.p.max_leg_length {
            return false;
        }
        let (ux, uy) = (s.x / l, s.y / l);
        let out = (ux * s.vx + uy * s.vy).max(0.0);
        s.vx -= out * ux;
        s.vy -= out * uy;
        s.x = self.p.max_leg_length * ux;
        s.y = self.p.max_leg_length * uy;
        true
    }

    /// Integrates `duration` in `substeps` RK4 steps with the constant leg
    /// force `force` (Eq. 2.4), enforcing Eq. 2.2–2.3 after every step.
    pub fn advance(&self, s: &mut MonopodeState, force: f64, duration: f64, substeps: usize) {
        let n = substeps.max(1);
        let h = duration / n as f64;
        for _ in 0..n {
            *s = self.rk4(s, force, h);
            self.enforce_leg_length(s);
        }
    }

    /// Support transfer with matched impulses `ι` (PHYSPRIOR §2.1.1):
    /// `q̇⁺ = q̇⁻ + ι(s⁺ + s⁻)/m`; `new_contact` is the new contact point
    /// relative to the old one. The state is re-expressed relative to the
    /// new contact.
    pub fn transfer(&self, s: &mut MonopodeState, new_contact: (f64, f64), iota: f64) {
        let lm = s.leg_length().max(1e-9);
        let (sm_x, sm_y) = (s.x / lm, s.y / lm);
        s.x -= new_contact.0;
        s.y -= new_contact.1;
        let lp = s.leg_length().max(1e-9);
        let (sp_x, sp_y) = (s.x / lp, s.y / lp);
        let k = iota / self.p.mass;
        s.vx += k * (sp_x + sm_x);
        s.vy += k * (sp_y + sm_y);
    }

    /// Energy in flight (`l < l_max`): kinetic, gravitational and the
    /// potential `−f l` of the constant leg force.
    pub fn energy(&self, s: &MonopodeState, force: f64) -> f64 {
        let (sg, cg) = self.p.slope.sin_cos();
        0.5 * self.p.mass * (s.vx * s.vx + s.vy * s.vy)
            - self.p.mass * self.p.gravity * (sg * s.x - cg * s.y)
            - force * s.leg_length()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mono() -> Monopode {
        Monopode::new(MonopodeParams::default()).unwrap()
    }

    #[test]
    fn bad_parameters_are_named() {
        let e = Monopode::new(MonopodeParams {
            mass: 0.0,
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("m (monopode mass)"), "{e}");
        let e = Monopode::new(MonopodeParams {
            max_leg_length: -1.0,
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("l_max"), "{e}");
    }

    /// Off the constraint, Eq. 2.1 is a central force with potential
    /// `−f l` plus gravity: energy is conserved by RK4 to high accuracy.
    #[test]
    fn flight_conserves_energy() {
        let m = mono();
        let mut s = MonopodeState {
            x: -0.2,
            y: 0.8,
            vx: 1.0,
            vy: 0.3,
        };
        let f = 7.0;
        let e0 = m.energy(&s, f);
        for _ in 0..24 {
            s = m.rk4(&s, f, 1.0 / 240.0);
            assert!(s.leg_length() < 1.0);
        }
        let e1 = m.energy(&s, f);
        assert!(((e1 - e0) / e0).abs() < 1e-10, "{e0} {e1}");
    }

    /// Eq. 2.2–2.3: the mass ends on the sphere, the outward radial velocity
    /// is removed, the tangential one kept, and kinetic energy never grows.
    #[test]
    fn leg_length_constraint_is_inelastic() {
        let m = mono();
        for (x, y, vx, vy) in [
            (0.3, 1.0, 1.0, 0.5),
            (-0.5, 0.95, 1.2, -0.2),
            (0.0, 1.1, 0.0, 1.0),
        ] {
            let mut s = MonopodeState { x, y, vx, vy };
            let before = s;
            assert!(m.enforce_leg_length(&mut s));
            assert!((s.leg_length() - 1.0).abs() < 1e-14);
            let l = before.leg_length();
            let (ux, uy) = (before.x / l, before.y / l);
            let radial = s.vx * ux + s.vy * uy;
            assert!(radial <= 1e-15);
            let tang = |v: &MonopodeState| -v.vx * uy + v.vy * ux;
            assert!((tang(&s) - tang(&before)).abs() < 1e-14);
            assert!(s.vx.powi(2) + s.vy.powi(2) <= before.vx.powi(2) + before.vy.powi(2) + 1e-15);
        }
        // Moving inward: nothing to remove.
        let mut s = MonopodeState {
            x: 0.0,
            y: 0.9,
            vx: 1.0,
            vy: -1.0,
        };
        assert!(!m.enforce_leg_length(&mut s));
    }

    /// Matched impulses on a symmetric transfer push straight up.
    #[test]
    fn matched_impulses_symmetric_transfer() {
        let m = mono();
        let mut s = MonopodeState {
            x: 0.4,
            y: 0.9,
            vx: 1.0,
            vy: -0.3,
        };
        m.transfer(&mut s, (0.8, 0.0), 0.5);
        assert!((s.x + 0.4).abs() < 1e-15);
        assert!((s.vx - 1.0).abs() < 1e-14, "{s:?}");
        assert!(s.vy > -0.3 + 0.8, "{s:?}");
    }

    /// With `f < m g` and a moving mass the stance is an inverted pendulum
    /// on the constraint: the leg angle sweeps from ahead to behind.
    #[test]
    fn stance_vaults_over_the_foot() {
        let m = mono();
        let mut s = MonopodeState {
            x: -0.3,
            y: (1.0f64 - 0.09).sqrt(),
            vx: 1.2,
            vy: 0.3,
        };
        assert!(s.leg_angle() > 0.0);
        m.advance(&mut s, 7.0, 0.6, 72);
        assert!(s.leg_angle() < 0.0, "{s:?}");
        assert!(s.leg_length() <= 1.0 + 1e-12);
    }
}

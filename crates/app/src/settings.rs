//! Everything a user can tune, as one value that is saved to and loaded
//! from a TOML file (so a tuned setup can be shared). Unknown keys and
//! out-of-range values are errors that name the file and the field.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use smc::Resampling;

use crate::scenes::ConstraintGroup;

/// Most particles the panel offers (the 1 … 10,000).
pub const MAX_PARTICLES: usize = 10_000;

/// Which solver moves the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SolverKind {
    /// SMC-IK as published (Algorithm 1) with the adaptive noise option.
    SmcIk,
    /// SMC-IK with one DLS optimisation move per particle.
    SmcIkMoves,
    /// Damped least squares (SMC-IK Eq. 5), adaptive λ.
    Dls,
    /// Jacobian transpose with Buss's step length.
    Transpose,
}

impl SolverKind {
    pub const ALL: [Self; 4] = [Self::SmcIk, Self::SmcIkMoves, Self::Dls, Self::Transpose];

    pub fn label(self) -> &'static str {
        match self {
            Self::SmcIk => "SMC-IK",
            Self::SmcIkMoves => "SMC-IK + optimisation moves",
            Self::Dls => "DLS (Jacobian)",
            Self::Transpose => "Jacobian transpose",
        }
    }

    /// Whether the solver has a particle cloud.
    pub fn has_cloud(self) -> bool {
        matches!(self, Self::SmcIk | Self::SmcIkMoves)
    }

    pub fn from_key(key: &str) -> Result<Self> {
        Ok(match key {
            "smc-ik" => Self::SmcIk,
            "smc-ik-moves" => Self::SmcIkMoves,
            "dls" => Self::Dls,
            "transpose" => Self::Transpose,
            other => bail!("unknown solver '{other}' (smc-ik, smc-ik-moves, dls, transpose)"),
        })
    }
}

/// Resampling scheme, by name (mirrors [`smc::Resampling`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResamplingName {
    Multinomial,
    Stratified,
    Systematic,
    Residual,
    ParentChildren,
}

impl ResamplingName {
    pub const ALL: [Self; 5] = [
        Self::Multinomial,
        Self::Stratified,
        Self::Systematic,
        Self::Residual,
        Self::ParentChildren,
    ];

    pub fn scheme(self) -> Resampling {
        match self {
            Self::Multinomial => Resampling::Multinomial,
            Self::Stratified => Resampling::Stratified,
            Self::Systematic => Resampling::Systematic,
            Self::Residual => Resampling::Residual,
            Self::ParentChildren => Resampling::ParentChildren,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::Multinomial => "multinomial",
            Self::Stratified => "stratified",
            Self::Systematic => "systematic",
            Self::Residual => "residual",
            Self::ParentChildren => "parent–children (HSPC)",
        }
    }
}

/// How the random walk keeps joints inside their limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SamplerName {
    /// The paper's accept/reject with 20 retries.
    Reject,
    /// Exact truncated Gaussians.
    Truncated,
}

/// Filter settings (the "Filter" panel).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FilterSettings {
    pub solver: SolverKind,
    pub particles: usize,
    pub resampling: ResamplingName,
    /// Resample when N_eff < threshold · N.
    pub ess_threshold: f64,
    /// Eq. 15 smoothing α of the drawn estimate.
    pub alpha: f64,
    pub seed: u64,
    pub iterations_per_frame: usize,
    pub sampler: SamplerName,
    /// The success rule on the noise scale (off: the paper's fixed σ).
    pub adaptive: bool,
}

impl Default for FilterSettings {
    fn default() -> Self {
        Self {
            // The variant that tracks a dragged target tightest (ik_peers:
            // 100% in every cell); the paper's plain filter is one click away.
            solver: SolverKind::SmcIkMoves,
            particles: 200,
            resampling: ResamplingName::Systematic,
            ess_threshold: 0.5,
            alpha: 0.2,
            seed: 0,
            iterations_per_frame: 2,
            sampler: SamplerName::Reject,
            adaptive: true,
        }
    }
}

/// Random-walk noise (the "Noise" panel): QuTem σ per joint and axis
/// (SMC-IK Eq. 12), before the adaptive scale.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NoiseSettings {
    /// σ (rad) of a joint at the reference lever arm.
    pub sigma: f64,
    /// Scale each joint's σ by its distance to the targets
    /// ([`ik::lever_arm_noise`]); off: every joint gets `sigma`.
    pub lever_arm: bool,
    /// Free-root translation σ (m).
    pub root_translation: f64,
    /// Multiplier per body region (`trunk`, `left arm`, …).
    pub groups: BTreeMap<String, f64>,
    /// Per-joint σ per axis (rad), overriding the rule above.
    pub joints: BTreeMap<String, [f64; 3]>,
}

impl Default for NoiseSettings {
    fn default() -> Self {
        Self {
            sigma: 0.05,
            lever_arm: true,
            root_translation: 0.003,
            groups: BTreeMap::new(),
            joints: BTreeMap::new(),
        }
    }
}

/// All settings.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub filter: FilterSettings,
    pub noise: NoiseSettings,
    /// σ per constraint group (keys: [`ConstraintGroup::key`]).
    pub constraints: BTreeMap<String, f64>,
}

impl Settings {
    /// σ of a constraint group (its default when unset).
    pub fn constraint_sigma(&self, group: ConstraintGroup) -> f64 {
        self.constraints
            .get(group.key())
            .copied()
            .unwrap_or_else(|| group.default_sigma())
    }

    pub fn set_constraint_sigma(&mut self, group: ConstraintGroup, sigma: f64) {
        self.constraints.insert(group.key().to_string(), sigma);
    }

    /// Multiplier of a noise group (1 when unset).
    pub fn group_scale(&self, group: &str) -> f64 {
        self.noise.groups.get(group).copied().unwrap_or(1.0)
    }

    /// Checks every field; the error names it.
    pub fn validate(&self) -> Result<()> {
        let f = &self.filter;
        if !(1..=MAX_PARTICLES).contains(&f.particles) {
            bail!(
                "filter.particles: must be 1 … {MAX_PARTICLES}, got {}",
                f.particles
            );
        }
        if !(0.0..=1.0).contains(&f.ess_threshold) {
            bail!(
                "filter.ess_threshold: must be in [0, 1], got {}",
                f.ess_threshold
            );
        }
        if !(f.alpha > 0.0 && f.alpha <= 1.0) {
            bail!("filter.alpha: must be in (0, 1], got {}", f.alpha);
        }
        if !(1..=1000).contains(&f.iterations_per_frame) {
            bail!(
                "filter.iterations_per_frame: must be 1 … 1000, got {}",
                f.iterations_per_frame
            );
        }
        let n = &self.noise;
        positive("noise.sigma", n.sigma)?;
        non_negative("noise.root_translation", n.root_translation)?;
        for (k, v) in &n.groups {
            non_negative(&format!("noise.groups.\"{k}\""), *v)?;
        }
        for (k, v) in &n.joints {
            for (a, x) in v.iter().enumerate() {
                non_negative(&format!("noise.joints.\"{k}\"[{a}]"), *x)?;
            }
        }
        for (k, v) in &self.constraints {
            if !ConstraintGroup::ALL.iter().any(|g| g.key() == k) {
                let keys: Vec<_> = ConstraintGroup::ALL.iter().map(|g| g.key()).collect();
                bail!(
                    "constraints.{k}: unknown constraint group (one of {})",
                    keys.join(", ")
                );
            }
            positive(&format!("constraints.{k}"), *v)?;
        }
        Ok(())
    }

    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
        let s: Settings = toml::from_str(&text).with_context(|| format!("{}", path.display()))?;
        s.validate()
            .with_context(|| format!("{}", path.display()))?;
        Ok(s)
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let text = toml::to_string_pretty(self).context("serialising the settings")?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
    }
}

fn positive(field: &str, v: f64) -> Result<()> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        bail!("{field}: must be finite and > 0, got {v}")
    }
}

fn non_negative(field: &str, v: f64) -> Result<()> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        bail!("{field}: must be finite and >= 0, got {v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_then_load_round_trips() {
        let mut s = Settings::default();
        s.filter.particles = 321;
        s.filter.solver = SolverKind::SmcIkMoves;
        s.filter.resampling = ResamplingName::ParentChildren;
        s.noise.groups.insert("left arm".into(), 0.5);
        s.noise.joints.insert("l_elbow".into(), [0.1, 0.0, 0.02]);
        s.set_constraint_sigma(ConstraintGroup::Floor, 0.004);
        let dir = std::env::temp_dir().join(format!("posecloud-settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.toml");
        s.save(&path).unwrap();
        assert_eq!(Settings::load(&path).unwrap(), s);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_files_name_the_field() {
        let dir = std::env::temp_dir().join(format!("posecloud-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (text, needle) in [
            ("[filter]\nparticles = 0\n", "filter.particles"),
            ("[filter]\nparticles = 20000\n", "filter.particles"),
            ("[filter]\nalpha = 0.0\n", "filter.alpha"),
            ("[filter]\nsolver = \"newton\"\n", "solver"),
            ("[filter]\nparticle = 5\n", "particle"),
            ("[noise]\nsigma = -1.0\n", "noise.sigma"),
            (
                "[noise.groups]\n\"left arm\" = nan\n",
                "noise.groups.\"left arm\"",
            ),
            ("[constraints]\nfloor = 0.0\n", "constraints.floor"),
            ("[constraints]\ngravity = 1.0\n", "constraints.gravity"),
            ("[filter\n", "line 1"),
        ] {
            let path = dir.join("bad.toml");
            std::fs::write(&path, text).unwrap();
            let e = format!("{:#}", Settings::load(&path).unwrap_err());
            assert!(e.contains("bad.toml"), "{text:?}: {e}");
            assert!(e.contains(needle), "{text:?}: {e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! Everything a user can tune, as one value that is saved to and loaded
//! from a TOML file (so a tuned setup can be shared). Unknown keys and
//! out-of-range values are errors that name the file and the field.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use smc::Resampling;

/// Most particles the panel offers (the 1 … 10,000).
pub const MAX_PARTICLES: usize = 10_000;

/// Most particle-iterations one frame of a `--fixed-dt` replay may run.
pub const MAX_REPLAY_WORK: usize = 100_000;

/// What a constraint is, for grouping its Σ in the noise panel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConstraintGroup {
    Position,
    Orientation,
    CentreOfMass,
    Floor,
    Smoothness,
    Coupled,
}

impl ConstraintGroup {
    pub const ALL: [Self; 6] = [
        Self::Position,
        Self::Orientation,
        Self::CentreOfMass,
        Self::Floor,
        Self::Smoothness,
        Self::Coupled,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Self::Position => "position",
            Self::Orientation => "orientation",
            Self::CentreOfMass => "centre of mass",
            Self::Floor => "floor",
            Self::Smoothness => "smoothness",
            Self::Coupled => "coupled joints",
        }
    }

    /// The key used in settings files.
    pub fn key(self) -> &'static str {
        match self {
            Self::Position => "position",
            Self::Orientation => "orientation",
            Self::CentreOfMass => "centre_of_mass",
            Self::Floor => "floor",
            Self::Smoothness => "smoothness",
            Self::Coupled => "coupled",
        }
    }

    /// Default σ (m, rad or dimensionless, as the residual is).
    pub fn default_sigma(self) -> f64 {
        match self {
            Self::Position => 0.03,
            Self::Orientation => 0.3,
            Self::CentreOfMass => 0.05,
            Self::Floor => 0.01,
            Self::Smoothness => 0.5,
            Self::Coupled => 0.02,
        }
    }
}

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
pub struct IkFilterSettings {
    pub solver: SolverKind,
    pub particles: usize,
    pub resampling: ResamplingName,
    /// Resample when N_eff < threshold · N.
    pub ess_threshold: f64,
    /// Eq. 15 smoothing α of the drawn estimate.
    pub alpha: f64,
    pub seed: u64,
    /// Solver time per displayed frame (ms): the solver thread steps until
    /// it has spent this much, then publishes (the default pacing).
    pub budget_ms: f64,
    /// Iterations per frame of deterministic replays (`--fixed-dt`), where
    /// the frame steps the solver itself.
    pub iterations_per_frame: usize,
    pub sampler: SamplerName,
    /// The success rule on the noise scale (off: the paper's fixed σ).
    pub adaptive: bool,
}

impl Default for IkFilterSettings {
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
            budget_ms: 12.0,
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
    pub filter: IkFilterSettings,
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
        if !(f.budget_ms.is_finite() && (0.1..=1000.0).contains(&f.budget_ms)) {
            bail!(
                "filter.budget_ms: must be 0.1 … 1000 ms, got {}",
                f.budget_ms
            );
        }
        if !(1..=1000).contains(&f.iterations_per_frame) {
            bail!(
                "filter.iterations_per_frame: must be 1 … 1000, got {}",
                f.iterations_per_frame
            );
        }
        // Replays step the solver on the frame's thread: bound one frame's
        // work so that a settings file cannot freeze the window (10,000
        // particles × 10 iterations is a few seconds of a human).
        let work = f.iterations_per_frame * f.particles;
        if work > MAX_REPLAY_WORK {
            bail!(
                "filter.iterations_per_frame: {} iterations × {} particles = {work} particle-iterations per frame, more than {MAX_REPLAY_WORK}",
                f.iterations_per_frame,
                f.particles
            );
        }
        let n = &self.noise;
        in_range(
            "noise.sigma",
            n.sigma,
            f64::MIN_POSITIVE,
            std::f64::consts::PI,
        )?;
        in_range("noise.root_translation", n.root_translation, 0.0, 10.0)?;
        for (k, v) in &n.groups {
            in_range(&format!("noise.groups.\"{k}\""), *v, 0.0, 100.0)?;
        }
        for (k, v) in &n.joints {
            for (a, x) in v.iter().enumerate() {
                in_range(
                    &format!("noise.joints.\"{k}\"[{a}]"),
                    *x,
                    0.0,
                    std::f64::consts::PI,
                )?;
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
            // 1/σ² must stay finite and the cost meaningful.
            in_range(&format!("constraints.{k}"), *v, 1e-6, 1e3)?;
        }
        Ok(())
    }

    /// [`Settings::validate`], then checks that every noise group and
    /// joint the settings name exists in the scene (a typo would otherwise
    /// be ignored silently).
    pub fn validate_for(&self, joints: &[&str], regions: &[String]) -> Result<()> {
        self.validate()?;
        for k in self.noise.groups.keys() {
            if !regions.iter().any(|r| r == k) {
                bail!(
                    "noise.groups.\"{k}\": no such noise group in this scene ({})",
                    regions.join(", ")
                );
            }
        }
        for k in self.noise.joints.keys() {
            if !joints.contains(&k.as_str()) {
                bail!("noise.joints.\"{k}\": no such joint in this scene");
            }
        }
        Ok(())
    }

    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
        // A byte-order mark (Windows editors) is not part of the TOML.
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let s: Settings = toml::from_str(text).with_context(|| format!("{}", path.display()))?;
        s.validate()
            .with_context(|| format!("{}", path.display()))?;
        Ok(s)
    }

    /// Saves unless `path` exists and `overwrite` is false: then nothing is
    /// written and the caller asks the user first (the app's Save button).
    pub fn save_asking(&self, path: &Path, overwrite: bool) -> Result<Saved> {
        if !overwrite && path.exists() {
            return Ok(Saved::WouldOverwrite);
        }
        self.save(path)?;
        Ok(Saved::Written)
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let text = toml::to_string_pretty(self).context("serialising the settings")?;
        // A temporary file renamed over the target: an interrupted save
        // leaves the old settings, never half a file.
        vision::output::write_atomically(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))
    }
}

/// What [`Settings::save_asking`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Saved {
    Written,
    /// The file exists and was left alone: ask before overwriting.
    WouldOverwrite,
}

fn in_range(field: &str, v: f64, lo: f64, hi: f64) -> Result<()> {
    if v.is_finite() && (lo..=hi).contains(&v) {
        Ok(())
    } else {
        bail!("{field}: must be in [{lo}, {hi}], got {v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_asks_before_overwriting_a_file() {
        let path = std::env::temp_dir().join(format!("posecloud-ask-{}.toml", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let mut s = Settings::default();
        assert_eq!(s.save_asking(&path, false).unwrap(), Saved::Written);
        s.filter.particles = 77;
        assert_eq!(s.save_asking(&path, false).unwrap(), Saved::WouldOverwrite);
        assert_ne!(
            Settings::load(&path).unwrap().filter.particles,
            77,
            "left alone"
        );
        assert_eq!(s.save_asking(&path, true).unwrap(), Saved::Written);
        assert_eq!(Settings::load(&path).unwrap().filter.particles, 77);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn save_then_load_round_trips() {
        let mut s = Settings::default();
        s.filter.particles = 321;
        s.filter.solver = SolverKind::SmcIkMoves;
        s.filter.resampling = ResamplingName::ParentChildren;
        s.noise.groups.insert("left arm".into(), 0.5);
        s.noise.joints.insert("l_elbow".into(), [0.1, 0.0, 0.02]);
        s.set_constraint_sigma(ConstraintGroup::Floor, 0.004);
        let dir = crate::testing::scratch_dir("settings");
        let path = dir.join("s.toml");
        s.save(&path).unwrap();
        assert_eq!(Settings::load(&path).unwrap(), s);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_files_name_the_field() {
        let dir = crate::testing::scratch_dir("bad");
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

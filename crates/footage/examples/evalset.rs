//! Renders the arm-evaluation clip set (`assets/evalset/clips.toml`): one
//! webcam-style session per `[[clip]]` (`session_<tag>.mp4`, `truth_<tag>.csv`,
//! `truth_<tag>.bvh`, `camera_<tag>.toml`, `meta_<tag>.json`) whose `move`
//! phase is motion capture on another rig, retargeted (the `footage` crate).
//!
//! ```text
//! cargo run --release -p footage --example evalset -- assets/evalset [TAG …]
//! ```

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use footage::{FootageOptions, Preset, write_session};
use vision::Sleeves;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((dir, only)) = args.split_first() else {
        bail!("usage: evalset DIR [TAG …]  (DIR holds clips.toml; the clips are written there)");
    };
    let dir = PathBuf::from(dir);
    let manifest = dir.join("clips.toml");
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("reading {}", manifest.display()))?;
    let table: toml::Table = text
        .parse()
        .with_context(|| format!("parsing {}", manifest.display()))?;
    let clips = table
        .get("clip")
        .and_then(|c| c.as_array())
        .with_context(|| format!("{}: no [[clip]] entries", manifest.display()))?;
    let motions = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/motions");
    for (k, clip) in clips.iter().enumerate() {
        let what = |field: &str| format!("{} clip {}: field `{field}`", manifest.display(), k + 1);
        let text = |f: &str| {
            clip.get(f)
                .and_then(|v| v.as_str())
                .with_context(|| what(f))
        };
        let num = |f: &str| {
            clip.get(f)
                .and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)))
                .with_context(|| what(f))
        };
        let triple = |f: &str| -> Result<[f64; 3]> {
            let a = clip
                .get(f)
                .and_then(|v| v.as_array())
                .with_context(|| what(f))?;
            let v: Vec<f64> = a
                .iter()
                .filter_map(|x| x.as_float().or(x.as_integer().map(|i| i as f64)))
                .collect();
            v.try_into()
                .map_err(|_| anyhow::anyhow!("{}: three numbers", what(f)))
        };
        let tag = text("tag")?;
        if !only.is_empty() && !only.iter().any(|t| t == tag) {
            continue;
        }
        let preset: Preset = text("preset")?.parse().map_err(anyhow::Error::msg)?;
        let mut o = FootageOptions::new(preset);
        o.tag = tag.to_string();
        o.seed = num("seed")? as u64;
        let size = clip
            .get("size")
            .and_then(|v| v.as_array())
            .with_context(|| what("size"))?;
        let dim = |i: usize| {
            size.get(i)
                .and_then(|v| v.as_integer())
                .with_context(|| what("size"))
        };
        o.width = u32::try_from(dim(0)?)?;
        o.height = u32::try_from(dim(1)?)?;
        o.moves_clip = Some(motions.join(text("motion")?));
        o.moves_start = num("start")?;
        o.moves_yaw_deg = num("yaw")?;
        o.timing.moves = num("seconds")?;
        o.setup.build.height = num("height")?;
        o.setup.clothing.sleeves = match text("sleeves")? {
            "short" => Sleeves::Short,
            "long" => Sleeves::Long,
            s => bail!("{}: short or long, not `{s}`", what("sleeves")),
        };
        let shirt = triple("shirt")?;
        o.setup.clothing.shirt = shirt.map(|c| c.clamp(0.0, 255.0) as u8);
        o.setup.clothing.stripes = None;
        o.setup.light.towards_light = triple("light")?;
        o.setup.camera.hfov_deg = num("hfov")?;
        o.setup.camera.height = num("camera_height")?;
        o.setup.camera.tilt_deg = num("tilt")?;
        o.setup.staging.distance = num("distance")?;
        o.command = Some(format!(
            "cargo run --release -p footage --example evalset -- {} {tag}",
            dir.display()
        ));
        let t0 = std::time::Instant::now();
        let report = write_session(&o, &dir).with_context(|| format!("clip {tag}"))?;
        println!(
            "{tag} ({}): {} frames, {}x{}, {:.1} s; {}",
            text("split")?,
            report.frames,
            o.width,
            o.height,
            t0.elapsed().as_secs_f64(),
            report.video.display()
        );
    }
    Ok(())
}

//! `posecloud fk`, `posecloud info` and `posecloud presets`: skeletons on
//! the command line.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use skeleton::{Bvh, Skeleton, presets};

use super::print_out;

/// `posecloud fk --bvh FILE.bvh [--frame N] [--end-sites]`
#[derive(Args, Clone, Debug, PartialEq)]
pub struct FkArgs {
    /// A BVH file.
    #[arg(long)]
    pub bvh: PathBuf,
    /// Frame index, 0-based.
    #[arg(long, default_value_t = 0)]
    pub frame: usize,
    /// Also print the end sites (named `<parent>_end`).
    #[arg(long)]
    pub end_sites: bool,
}

/// `posecloud info SOURCE`
#[derive(Args, Clone, Debug, PartialEq)]
pub struct InfoArgs {
    /// A `.bvh` or `.urdf` file, or a preset name (see `posecloud presets`).
    pub source: String,
}

/// The world position of every joint of one frame, CSV on stdout.
///
/// # Errors
/// A bad file or frame, naming it.
pub fn fk(a: &FkArgs) -> Result<()> {
    let bvh = Bvh::load(&a.bvh)?;
    let world = bvh
        .forward_kinematics(a.frame)
        .with_context(|| a.bvh.display().to_string())?;
    let mut out = String::from("name,x,y,z\n");
    for (j, (joint, w)) in bvh.skeleton.joints().iter().zip(&world).enumerate() {
        if bvh.is_end_site(j) && !a.end_sites {
            continue;
        }
        let t = w.translation.vector;
        out.push_str(&format!(
            "{},{:.6},{:.6},{:.6}\n",
            joint.name, t.x, t.y, t.z
        ));
    }
    print_out(&out)
}

/// A preset, BVH or URDF skeleton, with what a URDF import adjusted.
fn load_skeleton_with_warnings(source: &str) -> Result<(Skeleton, Vec<skeleton::UrdfWarning>)> {
    if let Some(s) = presets::by_name(source) {
        return Ok((s, Vec::new()));
    }
    let path = Path::new(source);
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("bvh") => Ok((Bvh::load(path)?.skeleton, Vec::new())),
        Some("urdf") => {
            let import = skeleton::import_urdf(path)?;
            Ok((import.skeleton, import.warnings))
        }
        _ => bail!(
            "'{source}' is neither a .bvh/.urdf file nor a preset ({})",
            presets::PRESET_NAMES.join(", ")
        ),
    }
}

/// Joints, parents, DOF, body parts and masses of a skeleton, then the
/// URDF import's adjustments as `warning:` lines.
///
/// # Errors
/// An unknown preset or a bad file, naming it.
pub fn info(source: &str) -> Result<()> {
    use std::fmt::Write as _;
    let (s, warnings) =
        load_skeleton_with_warnings(source).with_context(|| format!("loading {source}"))?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} joints, {} DOF, total mass {:.2} kg",
        s.len(),
        s.dof(),
        s.total_mass()
    );
    let _ = writeln!(
        out,
        "{:<4} {:<18} {:<18} {:>3} {:<10} {:>7}",
        "#", "joint", "parent", "dof", "part", "mass"
    );
    for (i, j) in s.joints().iter().enumerate() {
        let parent = j.parent.map_or("-", |p| s.joint(p).name.as_str());
        let kind = format!("{:?}", j.kind);
        let kind = kind.split([' ', '(', '{']).next().unwrap_or("");
        let (part, mass) = j
            .body
            .as_ref()
            .map_or(("-", 0.0), |b| (b.part.name(), b.mass));
        let _ = writeln!(
            out,
            "{i:<4} {:<18} {:<18} {:>3} {:<10} {mass:>7.3}  {kind}",
            j.name,
            parent,
            j.kind.dof(),
            part
        );
    }
    for w in &warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    print_out(&out)
}

/// The built-in presets with their joint and DOF counts.
///
/// # Errors
/// Writing to stdout failed (other than a closed pipe).
pub fn presets() -> Result<()> {
    let mut out = String::new();
    for name in presets::PRESET_NAMES {
        let s = presets::by_name(name).expect("listed presets exist");
        out.push_str(&format!(
            "{name:<22} {:>3} joints {:>3} DOF\n",
            s.len(),
            s.dof()
        ));
    }
    print_out(&out)
}

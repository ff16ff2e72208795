//! Writes the JSON descriptions (see `dynamics::export`) of the models whose
//! dynamics `tools/dynamics_fixtures.py` checks against Pinocchio:
//! `human.json` (the 59-parameter preset), `cmu.json` (the 96-DOF CMU BVH
//! skeleton with Dempster masses and a 10⁻³ armature), `hand.json` (a
//! swing–twist root fixed in space, swings, hinges), `rtpf.json` (prismatic
//! root chain, Euler balls), `arm6.json` and
//! `arm7.json` (the URDF arms) and `branchy.json` (the test robot in
//! `tests/fixtures/branchy.urdf`); for URDFs the script parses the file itself
//! and uses our export only for our velocity order.
//!
//! `cargo run -p dynamics --example dynamics_export -- OUT_DIR`

use std::path::PathBuf;

use anyhow::Context;
use dynamics::{MassSource, Model, ModelOptions};

fn main() -> anyhow::Result<()> {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .context("usage: dynamics_export OUT_DIR")?,
    );
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let human = Model::from_skeleton(&skeleton::presets::human(), MassSource::Skeleton)?;
    let cmu = skeleton::Bvh::load(format!("{root}/assets/motions/cmu_131_01_walk.bvh"))?;
    let cmu = Model::from_skeleton_with(&cmu.skeleton, &ModelOptions::bvh_human(70.0))?;
    let hand = Model::from_skeleton(&skeleton::presets::hand(), MassSource::Skeleton)?;
    let rtpf = Model::from_skeleton(&skeleton::presets::rtpf_upper_body(), MassSource::Skeleton)?;
    let arm6 = Model::from_urdf(format!("{root}/assets/robots/arm6.urdf"))?;
    let arm7 = Model::from_urdf(format!("{root}/assets/robots/arm7.urdf"))?;
    let branchy = Model::from_urdf(format!(
        "{root}/crates/dynamics/tests/fixtures/branchy.urdf"
    ))?;
    for (name, model) in [
        ("human", &human),
        ("cmu", &cmu),
        ("hand", &hand),
        ("rtpf", &rtpf),
        ("arm6", &arm6),
        ("arm7", &arm7),
        ("branchy", &branchy),
    ] {
        let path = out.join(format!("{name}.json"));
        std::fs::write(&path, dynamics::model_to_json(model))
            .with_context(|| format!("writing {}", path.display()))?;
        println!(
            "{}: nv = {}, {} bodies",
            path.display(),
            model.nv(),
            model.bodies().len()
        );
    }
    Ok(())
}

//! Speed of PHYSPRIOR tracking (frames per second, whole SIR step: propagate,
//! weigh, resample, ellipses) on the CMU walk: the anthropomorphic walker
//! with N = 2500 (goal ≥ 220 frames/s) and the monopode with N = 5000
//! (goal ≥ 100 frames/s), as the thesis ran (22 and 10 frames/s on a
//! 1.6 GHz Pentium M).
//!
//! ```text
//! cargo run --release -p walker --example physprior_bench
//! ```

#[path = "common/mod.rs"]
mod common;

use std::path::Path;

use anyhow::Result;
use common::*;
use walker::Dynamics;
use walker::mocap::POINTS;

fn main() -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let clip = walk_clip(&root, 4)?;
    let cam = camera(&clip, 0.0, 6.0)?;
    println!(
        "threads: {}; clip: {} frames",
        rayon::current_num_threads(),
        clip.len()
    );
    println!("| prior | N | N_thres | frames/s (best of 5) | goal |");
    println!("|---|---|---|---|---|");
    for (d, n, thres, goal) in [
        (Dynamics::Anthropomorphic, 2500, 500, 220.0),
        (Dynamics::Monopode, 5000, 2000, 100.0),
        (Dynamics::ConstantVelocity, 2500, 500, f64::NAN),
    ] {
        let mut best: f64 = 0.0;
        for rep in 0..5 {
            let r = run(&clip, &cam, d, n, thres, 1 + rep, 1.0, &|_| [true; POINTS])?;
            best = best.max(r.frames.len() as f64 / r.seconds);
        }
        println!("| {} | {n} | {thres} | {best:.0} | {goal} |", d.name());
    }
    Ok(())
}

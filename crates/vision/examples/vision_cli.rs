//! The `render` and `segment` commands without the app (the app's
//! `posecloud render` / `posecloud segment` call the same functions).
//!
//! `cargo run --release -p vision --example vision_cli -- render BVH --camera CAM.toml --out DIR`
//! `cargo run --release -p vision --example vision_cli -- segment --frames DIR --out DIR2`

use clap::{Parser, Subcommand};
use vision::cli::{RenderArgs, SegmentArgs, run_render, run_segment};

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Render a BVH clip into frames + ground truth.
    Render(RenderArgs),
    /// Segment frames into body-part label images.
    Segment(SegmentArgs),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Render(a) => {
            run_render(&a)?;
        }
        Command::Segment(a) => {
            run_segment(&a)?;
        }
    }
    Ok(())
}

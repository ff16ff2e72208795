//! Writes a test session: `session.mp4` (H.264), `truth.csv`, `truth.bvh`,
//! `camera.toml` and `meta.json` (see the `footage` crate).
//!
//! ```text
//! cargo run --release -p footage --example footage -- --preset a --out assets/footage --tag a
//! cargo run --release -p footage --example footage -- --seconds 3 --png 10,60 --no-video --out /tmp/f
//! ```

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use footage::{FootageOptions, Preset, SessionRenderer, write_session};
use vision::Sleeves;

#[derive(Parser, Debug)]
#[command(about = "Render a webcam-style test session with ground truth")]
struct Args {
    /// Stock session: a, b or c.
    #[arg(long, default_value = "a")]
    preset: Preset,
    /// Seed of the sensor noise and the moves' variations.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output folder.
    #[arg(long, default_value = "footage")]
    out: PathBuf,
    /// File-name tag: `session_<tag>.mp4`, `truth_<tag>.csv`, …
    #[arg(long, default_value = "")]
    tag: String,
    #[arg(long, default_value_t = 640)]
    width: u32,
    #[arg(long, default_value_t = 480)]
    height: u32,
    #[arg(long, default_value_t = 30.0)]
    fps: f64,
    /// Keep only the first N frames.
    #[arg(long, conflicts_with = "seconds")]
    frames: Option<usize>,
    /// Keep only the first S seconds.
    #[arg(long)]
    seconds: Option<f64>,
    /// Walk out of view, come back and stand again after the moves.
    #[arg(long)]
    leave: bool,
    /// Subject height, metres (default: the preset's).
    #[arg(long)]
    subject_height: Option<f64>,
    /// Sleeve length: short or long (default: the preset's).
    #[arg(long)]
    sleeves: Option<String>,
    /// Horizontal field of view, degrees (default: the preset's).
    #[arg(long)]
    hfov: Option<f64>,
    /// Sensor noise, 8-bit levels at mid grey.
    #[arg(long)]
    noise: Option<f64>,
    /// Also write these frames as PNG (`frame_<tag>_<i>.png`), comma-separated.
    #[arg(long, value_delimiter = ',')]
    png: Vec<usize>,
    /// Only the PNGs (no video or truth files).
    #[arg(long)]
    no_video: bool,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut o = FootageOptions::new(args.preset);
    o.seed = args.seed;
    o.width = args.width;
    o.height = args.height;
    o.fps = args.fps;
    o.leave = args.leave;
    o.tag = args.tag.clone();
    o.frames = args
        .frames
        .or(args.seconds.map(|s| (s * args.fps).round() as usize));
    if let Some(h) = args.subject_height {
        o.setup.build.height = h;
    }
    if let Some(s) = &args.sleeves {
        o.setup.clothing.sleeves = match s.as_str() {
            "short" => Sleeves::Short,
            "long" => Sleeves::Long,
            _ => anyhow::bail!("--sleeves: short or long, not `{s}`"),
        };
    }
    if let Some(f) = args.hfov {
        o.setup.camera.hfov_deg = f;
    }
    if let Some(n) = args.noise {
        o.noise = n;
    }
    o.command = Some(format!(
        "cargo run --release -p footage --example footage -- {}",
        std::env::args().skip(1).collect::<Vec<_>>().join(" ")
    ));
    std::fs::create_dir_all(&args.out)?;

    if !args.png.is_empty() {
        let t0 = Instant::now();
        let session = SessionRenderer::new(&o)?;
        println!("session set up in {:.2} s", t0.elapsed().as_secs_f64());
        for &i in &args.png {
            let t = Instant::now();
            let f = session.render(i)?;
            let ms = 1e3 * t.elapsed().as_secs_f64();
            let name = if o.tag.is_empty() {
                format!("frame_{i:04}.png")
            } else {
                format!("frame_{}_{i:04}.png", o.tag)
            };
            let path = args.out.join(name);
            image::save_buffer(
                &path,
                &f.frame.rgb,
                f.frame.width,
                f.frame.height,
                image::ColorType::Rgb8,
            )?;
            println!(
                "frame {i:4}  {:<11} body px {:6}  {ms:6.1} ms  {}",
                f.truth.phase.name(),
                f.truth.body_pixels,
                path.display()
            );
        }
    }
    if args.no_video {
        return Ok(());
    }
    let t0 = Instant::now();
    let report = write_session(&o, &args.out)?;
    let wall = t0.elapsed().as_secs_f64();
    println!("| phase | frames | seconds |");
    println!("|---|---|---|");
    for p in &report.phases {
        println!(
            "| {} | {}..{} | {:.2}..{:.2} |",
            p.phase.name(),
            p.start,
            p.end,
            p.start as f64 / o.fps,
            p.end as f64 / o.fps
        );
    }
    let size = std::fs::metadata(&report.video)?.len();
    println!();
    println!("| measure | value |");
    println!("|---|---|");
    println!(
        "| frames | {} ({}×{}, {} fps) |",
        report.frames, o.width, o.height, o.fps
    );
    println!(
        "| render per frame | {:.1} ms |",
        1e3 * report.render_seconds_per_frame
    );
    println!("| total incl. encoding | {wall:.1} s |");
    println!(
        "| video | {} ({:.2} MB) |",
        report.video.display(),
        size as f64 / 1e6
    );
    for p in [
        &report.truth_csv,
        &report.truth_bvh,
        &report.camera,
        &report.meta,
    ] {
        println!("| file | {} |", p.display());
    }
    Ok(())
}

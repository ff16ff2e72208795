//! The tracking window's demo, offline: the synthetic walk (CMU 131_01,
//! frames 500–700, every 4th) tracked through each demo camera with three
//! seeds, as the window does but without real-time pacing (every frame is
//! tracked). Prints the mean absolute right-elbow error against the
//! ground truth per camera and seed:
//!
//! ```sh
//! cargo run --release -p posecloud --example demo_camera
//! ```

use anyhow::Result;
use posecloud::runtime::Solver;
use posecloud::scenes::track::model::{
    TrackSettings, TrackSnapshot, TrackSpec, TrackingScene, repo_path,
};
use track::CameraSpec;

fn main() -> Result<()> {
    println!("| camera | seed | frames | mean right-elbow error (°) |");
    println!("|---|---:|---:|---:|");
    for camera in ["camera_front.toml", "camera_near.toml"] {
        for seed in 1..=3 {
            let spec = TrackSpec {
                camera: CameraSpec::File(repo_path(&format!("crates/vision/assets/{camera}"))),
                ..TrackSpec::default()
            };
            let mut settings = TrackSettings {
                realtime: false,
                ..TrackSettings::default()
            };
            settings.tracker.seed = seed;
            let mut scene = TrackingScene::new(spec, settings)?;
            // The source ends after its 50 frames (a step then fails).
            for _ in 0..80 {
                if scene.step(0.0).is_err() {
                    break;
                }
            }
            let mut snap = TrackSnapshot::default();
            scene.snapshot_into(&mut snap);
            let errors: Vec<f64> = snap
                .history
                .iter()
                .filter_map(|h| h.truth_elbow_deg.map(|t| (h.elbow_deg - t).abs()))
                .filter(|e| e.is_finite())
                .collect();
            let mean = errors.iter().sum::<f64>() / errors.len().max(1) as f64;
            println!("| {camera} | {seed} | {} | {mean:.1} |", errors.len());
        }
    }
    Ok(())
}

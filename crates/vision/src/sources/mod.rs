//! The [`FrameSource`](crate::FrameSource) implementations and
//! [`open_source`], which picks one from a command-line string.

pub mod images;
pub mod video;
#[cfg(all(feature = "webcam", target_os = "linux"))]
pub mod webcam;
pub mod y4m;

use std::path::Path;

use crate::error::{Result, VisionError};
use crate::frame::FrameSource;

pub use images::{DEFAULT_SEQUENCE_FPS, ImageSequence};
pub use video::{VideoFile, VideoInfo, probe};
pub use y4m::Y4mFile;

/// Opens what `spec` names:
///
/// - `webcam` or `webcam:N` → `/dev/videoN` (640 × 480; feature `webcam`);
/// - a folder or a glob with `*`/`?` → [`ImageSequence`] at `fps` (a
///   folder written by [`crate::write_render`] reads its `frame_*.png`);
/// - a `.y4m` file → [`Y4mFile`] (read directly);
/// - any other file → [`VideoFile`] through `ffmpeg`.
///
/// # Errors
/// The chosen source's errors; [`VisionError::Parameter`] for a bad
/// `webcam:N`, or for `webcam` when built without the feature.
pub fn open_source(spec: &str, fps: f64) -> Result<Box<dyn FrameSource>> {
    if let Some(rest) = spec.strip_prefix("webcam") {
        let index: u32 = match rest.strip_prefix(':') {
            None if rest.is_empty() => 0,
            Some(n) => n.parse().map_err(|_| {
                VisionError::parameter("--frames", spec, "expected webcam or webcam:N")
            })?,
            None => {
                return Err(VisionError::parameter(
                    "--frames",
                    spec,
                    "expected webcam or webcam:N",
                ));
            }
        };
        return open_webcam(index);
    }
    let path = Path::new(spec);
    if path.is_dir() && path.join("ground_truth.csv").is_file() {
        // A `posecloud render` folder: its RGB frames only.
        return Ok(Box::new(ImageSequence::open(
            path.join("frame_*.png"),
            fps,
        )?));
    }
    if spec.contains(['*', '?']) || path.is_dir() {
        return Ok(Box::new(ImageSequence::open(path, fps)?));
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("y4m") => Ok(Box::new(Y4mFile::open(path)?)),
        _ => Ok(Box::new(VideoFile::open(path)?)),
    }
}

#[cfg(all(feature = "webcam", target_os = "linux"))]
fn open_webcam(index: u32) -> Result<Box<dyn FrameSource>> {
    Ok(Box::new(webcam::Webcam::open(
        &webcam::WebcamOptions::index(index),
    )?))
}

#[cfg(not(all(feature = "webcam", target_os = "linux")))]
fn open_webcam(index: u32) -> Result<Box<dyn FrameSource>> {
    Err(VisionError::parameter(
        "--frames",
        format!("webcam:{index}"),
        "this build has no webcam support (cargo feature `webcam`, Linux only)",
    ))
}

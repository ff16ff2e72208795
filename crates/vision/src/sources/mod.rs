//! The [`crate::FrameSource`] implementations and
//! [`open_source`], which picks one from a command-line string.

mod images;
mod video;
mod webcam;
mod y4m;

use std::path::Path;

use crate::error::{Result, VisionError};
use crate::frame::FrameSource;

pub use images::{DEFAULT_SEQUENCE_FPS, ImageSequence};
pub use video::{STDERR_LINES, VideoFile, VideoInfo, VideoOptions, probe, probe_with};
pub use webcam::{Webcam, WebcamFormat, WebcamInfo, WebcamOptions, list_webcams};
pub use y4m::Y4mFile;

/// Frame rates a source may have (frames per second): a rate outside is
/// refused where it is read (a Y4M header, `ffprobe`, `--fps`). Beyond
/// these, time-based stages (the guided start's seconds of stillness, the
/// frames-per-second of progress) stop meaning anything, and the BVH's
/// frame time leaves what its format can hold.
pub(crate) const FPS_RANGE: std::ops::RangeInclusive<f64> = 0.1..=1000.0;

/// Checks a frame rate against [`FPS_RANGE`].
///
/// # Errors
/// A message naming the bounds.
pub fn check_fps(fps: f64) -> std::result::Result<(), String> {
    if FPS_RANGE.contains(&fps) {
        Ok(())
    } else {
        Err(format!(
            "a frame rate of {fps} frames/s: must be {} to {}",
            FPS_RANGE.start(),
            FPS_RANGE.end()
        ))
    }
}

/// Opens what `spec` names:
///
/// - `webcam`, `webcam:N` or `webcam:N@WxH` → `/dev/videoN` at the
///   supported size nearest to W × H (default 640 × 480; feature `webcam`);
/// - a folder or a glob with `*`/`?` → [`ImageSequence`] at `fps` (a
///   folder written by [`crate::write_render`] reads its `frame_*.png`);
/// - a `.y4m` file → [`Y4mFile`] (read directly);
/// - any other file → [`VideoFile`] through `ffmpeg`.
///
/// # Errors
/// The chosen source's errors; [`VisionError::Parameter`] for a bad
/// `webcam:N`; [`VisionError::Webcam`] for `webcam` when built without the
/// feature.
pub fn open_source(spec: &str, fps: f64) -> Result<Box<dyn FrameSource>> {
    if let Some(rest) = spec.strip_prefix("webcam") {
        let bad = || {
            VisionError::parameter(
                "--frames",
                spec,
                "expected webcam, webcam:N or webcam:N@WxH",
            )
        };
        let (index, size) = match rest.strip_prefix(':') {
            None if rest.is_empty() => (0, None),
            Some(r) => {
                let (n, size) = match r.split_once('@') {
                    Some((n, wh)) => {
                        let (w, h) = wh.split_once('x').ok_or_else(bad)?;
                        let w: u32 = w.parse().map_err(|_| bad())?;
                        let h: u32 = h.parse().map_err(|_| bad())?;
                        if w == 0 || h == 0 {
                            return Err(bad());
                        }
                        (n, Some((w, h)))
                    }
                    None => (r, None),
                };
                (n.parse::<u32>().map_err(|_| bad())?, size)
            }
            None => return Err(bad()),
        };
        return open_webcam(index, size);
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

/// `webcam:N[@WxH]`: the supported size nearest to W × H (see
/// [`webcam::Webcam::open`]); a build without the `webcam` feature gives
/// [`VisionError::Webcam`] saying so.
fn open_webcam(index: u32, size: Option<(u32, u32)>) -> Result<Box<dyn FrameSource>> {
    let mut options = webcam::WebcamOptions::index(index);
    if let Some((w, h)) = size {
        options.width = w;
        options.height = h;
    }
    Ok(Box::new(webcam::Webcam::open(&options)?))
}

//! `posecloud keypoints`: BlazePose 2D keypoints (crates/keypoints) of
//! every frame of a source, as CSV.
//!
//! Where the person is: the largest foreground blob against the
//! background (`--background FILE` or the first `--background-frames K`
//! frames, which are not detected), else the previous detection's tracking
//! region (MediaPipe's), else the whole frame — the one person-box rule of
//! every keypoint pipeline ([`track::where_to_look`]). One row per frame: `frame`
//! (the source's index), then `<name>_u,<name>_v,<name>_score` for each of
//! [`keypoints::TRACKED_KEYPOINTS`] in the input frame's pixels (empty
//! cells where no person was found, or where the detection failed on that
//! frame — a person box outside the frame, a non-finite output — which is
//! said on stderr and does not end the run). Rows are flushed as they are
//! written to a temporary file that takes the target's name at the end:
//! at the end of the source, after `--max-frames`, on Ctrl-C, and on an
//! error after the first row; a second Ctrl-C writes the rows so far
//! ([`super::ctrl_c_stop`]). The output path is checked before the model
//! is loaded or a frame read.
//!
//! `--keypoint-backend` (here and on `posecloud track`) says where the
//! network runs ([`KeypointBackendArg`]); the summary says which ran.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, anyhow};
use keypoints::{Detector, DetectorOptions, Keypoints, TRACKED_KEYPOINTS};
use track::{ForegroundEvidence, Look};
use vision::output::RowFile;
use vision::{
    Blob, EmptyScene, Frame, SegmentParams, Segmenter, VisionError, learn_empty_scene, open_source,
};

/// Where the keypoint network runs (`--keypoint-backend`,
/// [`keypoints::DetectorBackend`]); the landmarks agree within 0.05 px, so the
/// choice changes speed, not results.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum KeypointBackendArg {
    /// The GPU on a hardware adapter, else tract on the CPU (a software
    /// adapter such as lavapipe runs the network slower than tract).
    Auto,
    /// tract on the CPU.
    Cpu,
    /// WGSL kernels on the GPU (wgpu), or an error when there is none.
    Gpu,
}

impl From<KeypointBackendArg> for keypoints::DetectorBackend {
    fn from(b: KeypointBackendArg) -> Self {
        match b {
            KeypointBackendArg::Auto => Self::Auto,
            KeypointBackendArg::Cpu => Self::Cpu,
            KeypointBackendArg::Gpu => Self::Gpu,
        }
    }
}

/// The keypoint network's failure to start on `backend`, in the command
/// line's words (`--keypoint-backend`, where the library says the
/// setting).
pub fn backend_error(
    backend: keypoints::DetectorBackend,
    source: &keypoints::Error,
) -> anyhow::Error {
    let hint = if backend == keypoints::DetectorBackend::Gpu {
        " (--keypoint-backend auto runs the network with tract on the CPU when there is no GPU)"
    } else {
        ""
    };
    anyhow!("--keypoint-backend {}: {source}{hint}", backend.name())
}

/// `posecloud keypoints --frames SRC --out-csv KP.csv …`
#[derive(clap::Args, Clone, Debug)]
pub struct KeypointsArgs {
    /// The frames and the empty scene (with either empty-scene flag, the
    /// person's box is the foreground blob).
    #[command(flatten)]
    pub source: super::SourceArgs,
    /// Output CSV.
    #[arg(long)]
    pub out_csv: PathBuf,
    /// Stop after this many frames.
    #[arg(long)]
    pub max_frames: Option<usize>,
    /// No progress on stderr (the summary is still printed).
    #[arg(long)]
    pub quiet: bool,
    /// Also write `<name>_z` after each keypoint's score: BlazePose's
    /// depth relative to the hips' midpoint, in the same pixel scale
    /// (smaller is nearer the camera).
    #[arg(long)]
    pub with_depth: bool,
    /// A BlazePose landmark model converted to ONNX by
    /// `tools/convert_keypoint_model.py` (e.g. the heavy variant) instead of
    /// the embedded full model.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Where the network runs: auto (the GPU on a hardware adapter, else
    /// tract on the CPU), cpu (tract) or gpu (WGSL kernels on wgpu; an
    /// error without a GPU).
    #[arg(long, value_enum, default_value = "auto")]
    pub keypoint_backend: KeypointBackendArg,
}

/// Where the network looks in `frame`: the one person-box rule
/// ([`track::where_to_look`]) with the foreground blob when a background
/// model is known, else the previous detection.
fn look(
    seg: &mut Segmenter,
    frame: &Frame,
    background: bool,
    previous: Option<&Keypoints>,
) -> Result<Look> {
    let (lw, lh) = (seg.params().width as usize, seg.params().height as usize);
    let blob = if background {
        Blob::largest(&seg.foreground_mask(frame)?, lw, lh)
    } else {
        None
    };
    let foreground = if background {
        ForegroundEvidence::Known {
            blob: blob.as_ref(),
            label_size: (lw, lh),
        }
    } else {
        ForegroundEvidence::Unknown
    };
    Ok(track::where_to_look(
        (frame.width, frame.height),
        None,
        foreground,
        previous,
    ))
}

/// An error of learning the background from `empty`, with what it is
/// about: the source for too few frames, the image or frame count
/// otherwise. A parameter out of its domain is left as the library names
/// it: [`super::flags::in_flag_words`] turns its name into the flag.
fn empty_scene_error(empty: &EmptyScene, e: VisionError, frames_what: &str) -> anyhow::Error {
    let flag = match empty {
        EmptyScene::Image(path) => format!("--background {}", path.display()),
        EmptyScene::FirstFrames(k) => format!("--background-frames {k}"),
    };
    match e {
        VisionError::NoFrames { .. } => anyhow::Error::new(e).context(frames_what.to_string()),
        VisionError::Parameter { .. } => e.into(),
        e => anyhow::Error::new(e).context(flag),
    }
}

/// A frame's keypoints for its row, and what to say when its detection
/// failed: a failure (a person box outside the frame, a non-finite output)
/// is that frame's empty row, not the end of the run.
fn frame_keypoints(
    detection: Option<keypoints::Result<Keypoints>>,
    frame: usize,
) -> (Option<Keypoints>, Option<String>) {
    match detection {
        Some(Ok(k)) => (Some(k), None),
        Some(Err(e)) => (None, Some(format!("frame {frame}: no keypoints: {e}"))),
        None => (None, None),
    }
}

/// Runs `posecloud keypoints` (module docs).
///
/// # Errors
/// A source, background or output that cannot be used, naming the flag.
pub fn run_keypoints(args: &KeypointsArgs) -> Result<usize> {
    keypoints_until(args, super::ctrl_c_stop()?)
}

/// [`run_keypoints`] that stops before the next frame once `stop` is set.
///
/// # Errors
/// As [`run_keypoints`].
pub fn keypoints_until(args: &KeypointsArgs, stop: &AtomicBool) -> Result<usize> {
    vision::output::check_output_file("--out-csv", &args.out_csv)?;
    let what = format!("--frames {}", args.source.frames);
    let mut source =
        open_source(&args.source.frames, args.source.fps).with_context(|| what.clone())?;
    let (w, h) = source.size();
    let options = DetectorOptions {
        backend: args.keypoint_backend.into(),
        ..DetectorOptions::default()
    };
    let model_what = || match &args.model {
        Some(path) => format!("--model {}", path.display()),
        None => "the keypoint model".into(),
    };
    let detector = match &args.model {
        Some(path) => Detector::load_with(path, options),
        None => Detector::new_with(options),
    }
    .map_err(|e| match e {
        keypoints::Error::NoGpu(_) | keypoints::Error::Gpu(_) => backend_error(options.backend, &e),
        e => anyhow::Error::new(e).context(model_what()),
    })?;
    let mut seg = Segmenter::new(SegmentParams::default(), w, h).with_context(|| what.clone())?;
    let empty_scene = args.source.empty_scene();
    let background = empty_scene.is_some();
    if let Some(empty) = &empty_scene {
        learn_empty_scene(&mut seg, empty, source.as_mut())
            .map_err(|e| empty_scene_error(empty, e, &what))?;
    }

    let csv_what = format!("--out-csv {}", args.out_csv.display());
    let mut header = String::from("frame");
    for n in TRACKED_KEYPOINTS {
        header += &format!(",{n}_u,{n}_v,{n}_score");
        if args.with_depth {
            header += &format!(",{n}_z");
        }
    }
    header.push('\n');
    let mut out = RowFile::create(&args.out_csv, &header).with_context(|| csv_what.clone())?;
    let started = Instant::now();
    let (mut rows, mut found, mut failed) = (0usize, 0usize, 0usize);
    let total = super::progress::StderrProgress::frames(source.frame_count(), args.max_frames);
    let mut progress = super::progress::StderrProgress::new(total, args.quiet);
    progress.say(&format!(
        "keypoints: {} on {}",
        detector.model_name(),
        detector.backend_description()
    ));
    let mut previous: Option<Keypoints> = None;
    let result = (|| -> Result<()> {
        loop {
            if args.max_frames.is_some_and(|m| rows >= m) || stop.load(Ordering::Relaxed) {
                break;
            }
            let Some(frame) = source.next_frame().with_context(|| what.clone())? else {
                break;
            };
            let detection = match look(&mut seg, &frame, background, previous.as_ref())? {
                Look::Box(b) => Some(detector.detect(&frame.rgb, w, h, b)),
                Look::Follow(roi) => Some(detector.detect_in_roi(&frame.rgb, w, h, roi)),
                Look::Nowhere => None,
            };
            // One frame's failed detection (a box outside the frame, a
            // non-finite output) is that frame's empty row, as the tracker
            // skips such a frame; the run goes on.
            let (kp, said) = frame_keypoints(detection, frame.index);
            if let Some(line) = said {
                failed += 1;
                progress.say(&line);
            }
            // Every detection is written with its scores (the person flag of
            // BlazePose is weak on small figures); one that hardly sees a
            // person is not followed into the next frame.
            let mut row = frame.index.to_string();
            for name in TRACKED_KEYPOINTS {
                match kp.as_ref().and_then(|k| k.get(name)) {
                    Some(p) => {
                        row += &format!(",{:.2},{:.2},{:.3}", p.u, p.v, p.score.min(p.presence));
                        if args.with_depth {
                            row += &format!(",{:.2}", p.z);
                        }
                    }
                    None if args.with_depth => row += ",,,,",
                    None => row += ",,,",
                }
            }
            out.push(&row).with_context(|| csv_what.clone())?;
            rows += 1;
            found += usize::from(kp.is_some());
            previous = kp.filter(|k| k.presence >= 0.2);
            progress.update(frame.index as u64 + 1, || {
                format!(
                    "frame {}: {rows} frames, person in {found}, {:.1} frames/s",
                    frame.index,
                    rows as f64 / started.elapsed().as_secs_f64()
                )
            });
        }
        Ok(())
    })();
    progress.finish();
    if rows == 0 && (result.is_err() || stop.load(Ordering::Relaxed)) {
        // Nothing detected: the previous file of that name stays.
        out.abandon();
        if result.is_ok() {
            eprintln!(
                "stopped by Ctrl-C before the first frame: {} not written",
                args.out_csv.display()
            );
        }
        return result.map(|()| 0);
    }
    out.commit().with_context(|| csv_what.clone())?;
    if let Err(e) = result {
        return Err(e.context(format!(
            "the {rows} frame(s) before the error are in {}",
            args.out_csv.display()
        )));
    }
    if stop.load(Ordering::Relaxed) {
        eprintln!("stopped by Ctrl-C");
    }
    if failed > 0 {
        eprintln!("{failed} frame(s) without keypoints: their detection failed (see above)");
    }
    eprintln!(
        "{rows} frames ({found} with a person) in {:.1} s with {} on {}; wrote {}",
        started.elapsed().as_secs_f64(),
        detector.model_name(),
        detector.backend_description(),
        args.out_csv.display()
    );
    Ok(rows)
}

/// What every command's `--keypoint-backend` test checks: no flag is
/// `auto`, `cpu`, `gpu` and the values of `also` parse to the library's
/// choice, and `bad` is refused naming the flag and the value. `A` is the
/// command's flags, `base` a command line of them (the command's name
/// first) and `backend` the choice its command would use; returns the
/// refusal's text.
#[cfg(test)]
pub(super) fn check_keypoint_backend_flag<A: clap::Args + std::fmt::Debug>(
    base: &[&str],
    backend: impl Fn(A) -> keypoints::DetectorBackend,
    also: &[(&str, keypoints::DetectorBackend)],
    bad: &str,
) -> String {
    use clap::Parser as _;
    use keypoints::DetectorBackend;
    #[derive(clap::Parser, Debug)]
    struct Cli<A: clap::Args> {
        #[command(flatten)]
        args: A,
    }
    let parse = |extra: &[&str]| Cli::<A>::try_parse_from(base.iter().chain(extra));
    let choice = |extra: &[&str]| backend(parse(extra).unwrap().args);
    assert_eq!(choice(&[]), DetectorBackend::Auto);
    assert_eq!(choice(&["--keypoint-backend", "cpu"]), DetectorBackend::Cpu);
    assert_eq!(choice(&["--keypoint-backend", "gpu"]), DetectorBackend::Gpu);
    for &(value, expected) in also {
        assert_eq!(choice(&["--keypoint-backend", value]), expected, "{value}");
    }
    let e = parse(&["--keypoint-backend", bad]).unwrap_err().to_string();
    assert!(e.contains("--keypoint-backend") && e.contains(bad), "{e}");
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 32 item 12: one frame's failed detection is that frame's
    /// empty row and a line on stderr (it aborted the run before).
    #[test]
    fn a_failed_detection_is_an_empty_row_not_the_end() {
        let (kp, said) = frame_keypoints(Some(Err(keypoints::Error::NonFinite("landmarks"))), 7);
        assert!(kp.is_none());
        let said = said.unwrap();
        assert!(
            said.contains("frame 7") && said.contains("non-finite"),
            "{said}"
        );
        assert!(matches!(frame_keypoints(None, 8), (None, None)));
    }

    /// `--keypoint-backend` parses to the library's choice (default
    /// `auto`); a bad value is refused naming the flag and the choices.
    #[test]
    fn the_keypoint_backend_flag_parses_and_refuses_bad_values() {
        let base = ["keypoints", "--frames", "x", "--out-csv", "y.csv"];
        let backend = |a: KeypointsArgs| keypoints::DetectorBackend::from(a.keypoint_backend);
        let auto = [("auto", keypoints::DetectorBackend::Auto)];
        let e = check_keypoint_backend_flag(&base, backend, &auto, "tpu");
        assert!(e.contains("gpu"), "{e}");
    }

    /// The library names the setting; the command line names the flag.
    #[test]
    fn a_keypoint_backend_error_names_the_flag() {
        let source = keypoints::Error::NoGpu("no adapter: none found".into());
        let e = backend_error(keypoints::DetectorBackend::Gpu, &source).to_string();
        assert!(
            e.starts_with("--keypoint-backend gpu: ") && e.contains("no adapter"),
            "{e}"
        );
        let session = anyhow::Error::from(track::SessionError::KeypointBackend {
            backend: keypoints::DetectorBackend::Gpu,
            source,
        });
        assert!(
            session.to_string().contains("keypoint_backend"),
            "{session}"
        );
    }
}

//! Learned 2D person keypoints in pure Rust: MediaPipe's BlazePose landmark
//! network (Apache-2.0), converted to ONNX and run by `tract`.
//!
//! A frame and a box around the person go in; the 33 BlazePose landmarks come
//! out in input-frame pixels, each with a visibility score, plus the
//! probability that the crop holds a person at all:
//!
//! ```no_run
//! # fn main() -> Result<(), keypoints::Error> {
//! # let (rgb, width, height) = (vec![0u8; 320 * 240 * 3], 320, 240);
//! use keypoints::{Detector, PersonBox};
//! let detector = Detector::new()?;
//! let person = PersonBox::new(100.0, 20.0, 180.0, 230.0);
//! let kp = detector.detect(&rgb, width, height, person)?;
//! let elbow = kp.get("right_elbow").unwrap();
//! println!("right elbow at ({}, {}) score {}", elbow.u, elbow.v, elbow.score);
//! // Next frame: MediaPipe's tracking ROI from this frame's landmarks.
//! let kp2 = detector.detect_in_roi(&rgb, width, height, kp.tracking_roi(true))?;
//! # Ok(()) }
//! ```
//!
//! The pipeline is MediaPipe's `pose_landmark_by_roi` (`roi` explains the
//! crop): square ROI × 1.25 → bilinear 256 × 256 crop, RGB in `[0, 1]` →
//! network → MediaPipe's heatmap refinement of `(x, y)` (7 × 7 window of the
//! 64 × 64 heatmaps, applied where the window's peak confidence ≥ 0.5) →
//! sigmoid of the visibility and presence logits → back to input pixels.
//! There is no person detector: the box comes from a segmentation mask
//! ([`PersonBox::from_mask`]) or a previous estimate
//! ([`PersonBox::from_points`], [`Keypoints::tracking_roi`]).
//!
//! The network costs tens of milliseconds on a CPU core (see
//! docs/keypoints.md), so a tracker that must keep ≥ 10 frames/s runs it on its own
//! thread with [`AsyncDetector`] and uses the latest finished result.
//!
//! Two back ends run the network ([`DetectorBackend`]): tract on the CPU, and WGSL
//! compute kernels of our own on wgpu ([`Detector::new_on`] with the app's
//! device, or a headless one). Both produce the same [`RawOutput`], so the
//! post-processing is shared.

mod async_detector;
mod gpu;
mod landmarks;
mod roi;

pub use async_detector::{AsyncDetector, Detection, Region};
pub use gpu::{GpuDevice, describe_adapter};
pub use landmarks::{
    Keypoint, Keypoints, LANDMARK_NAMES, NUM_LANDMARKS, TRACKED_KEYPOINTS, landmark_index,
};
pub use roi::{INPUT_SIZE, PersonBox, Roi};

use std::path::Path;
use std::sync::Arc;
use tract_linalg::multithread::{Executor, multithread_tract_scope};
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::ensure;

/// The model `Detector::new` uses, embedded in the binary:
/// `assets/models/pose_landmark_full.onnx` (see `assets/models/README.md`).
pub const DEFAULT_MODEL_NAME: &str = "assets/models/pose_landmark_full.onnx";
static DEFAULT_MODEL: &[u8] = include_bytes!("../../../assets/models/pose_landmark_full.onnx");

/// Rows of the model's landmark tensor: 33 landmarks, 2 alignment points and
/// 4 unused rows, each `(x, y, z, visibility logit, presence logit)`.
pub const MODEL_LANDMARK_ROWS: usize = 39;
/// Side of the model's heatmaps (one channel per landmark row).
pub const HEATMAP_SIZE: usize = 64;
/// MediaPipe's heatmap refinement window and threshold
/// (`RefineLandmarksFromHeatmapCalculator`, pose graph options).
const HEATMAP_KERNEL: usize = 7;
const HEATMAP_MIN_CONFIDENCE: f32 = 0.5;

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("keypoint model {path}: {message}")]
    Model { path: String, message: String },
    #[error("image of {width}x{height} pixels is empty or too large")]
    EmptyImage { width: u32, height: u32 },
    #[error("RGB buffer has {len} bytes, expected {expected} for {width}x{height}x3")]
    BufferSize {
        len: usize,
        expected: usize,
        width: u32,
        height: u32,
    },
    #[error("mask has {len} entries, expected {width}x{height}")]
    MaskSize { len: usize, width: u32, height: u32 },
    #[error("no foreground pixels or finite points to put a person box around")]
    NoForeground,
    #[error("person box {0:?} is empty or not finite")]
    EmptyBox(PersonBox),
    #[error("person box {person:?} lies outside the {width}x{height} frame")]
    BoxOutsideFrame {
        person: PersonBox,
        width: u32,
        height: u32,
    },
    #[error("region of interest {0:?} is empty or not finite")]
    EmptyRoi(Roi),
    #[error("region of interest {roi:?} lies outside the {width}x{height} frame")]
    RoiOutsideFrame { roi: Roi, width: u32, height: u32 },
    #[error("model input must be {expected} floats (1x256x256x3), got {len}")]
    InputSize { len: usize, expected: usize },
    #[error("inference failed: {0}")]
    Inference(String),
    #[error("the model produced a non-finite {0}")]
    NonFinite(&'static str),
    #[error("the background detector thread has stopped")]
    WorkerStopped,
    #[error("no GPU for the keypoint network: {0}")]
    NoGpu(String),
    #[error("GPU keypoint network: {0}")]
    Gpu(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The network's outputs for one crop, before any post-processing.
#[derive(Clone, Debug)]
pub struct RawOutput {
    /// `MODEL_LANDMARK_ROWS` rows of `(x, y, z, visibility logit, presence
    /// logit)`, x and y in crop pixels.
    pub landmarks: Vec<[f32; 5]>,
    /// Probability that the crop holds a person (already a sigmoid).
    pub pose_flag: f32,
    /// `64 × 64 × MODEL_LANDMARK_ROWS` logits, HWC; empty when the detector
    /// was built without heatmap refinement.
    pub heatmap: Vec<f32>,
}

/// How a [`Detector`] is built.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DetectorOptions {
    /// Apply MediaPipe's heatmap refinement to the landmark positions. It
    /// needs the network's heatmap branch (three 64 × 64 resizes and four
    /// more depthwise convolutions: about a fifth of the time); without it
    /// tract prunes that branch. Default `true`, as MediaPipe does.
    pub refine_with_heatmap: bool,
    /// ROI side / long side of the person box (MediaPipe: 1.25).
    pub roi_scale: f32,
    /// Threads for tract's matrix products (1: the calling thread only).
    /// The depthwise convolutions that dominate BlazePose stay on the calling
    /// thread, so 2 threads gain little (see docs/keypoints.md).
    pub threads: usize,
    /// Where the network runs. Default [`DetectorBackend::Cpu`].
    pub backend: DetectorBackend,
}

impl Default for DetectorOptions {
    fn default() -> Self {
        Self {
            refine_with_heatmap: true,
            roi_scale: Roi::MEDIAPIPE_SCALE,
            threads: 1,
            backend: DetectorBackend::Cpu,
        }
    }
}

/// Where a [`Detector`] runs the network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DetectorBackend {
    /// tract on the calling thread (and `threads` for matrix products).
    #[default]
    Cpu,
    /// WGSL kernels on a wgpu device: the one given to [`Detector::new_on`],
    /// else a headless one. No adapter, or an operator the kernels do not
    /// cover, is an error.
    Gpu,
    /// The GPU on a hardware adapter, else tract: on a software adapter
    /// (lavapipe, llvmpipe: `DeviceType::Cpu`) tract is faster, and a
    /// failure to build the GPU network falls back to tract too (the reason
    /// is in [`Detector::backend_description`]).
    Auto,
}

impl DetectorBackend {
    /// The word a setting or a flag uses: `cpu`, `gpu` or `auto`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cpu => "cpu",
            Self::Gpu => "gpu",
            Self::Auto => "auto",
        }
    }
}

type Plan = TypedSimplePlan<TypedModel>;

/// What runs the network.
#[derive(Clone)]
enum Engine {
    Cpu {
        plan: Arc<Plan>,
        /// tract's matrix-product thread pool; `None` runs on the caller's
        /// thread.
        executor: Option<Executor>,
    },
    Gpu(Arc<gpu::GpuGraph>),
}

/// The BlazePose landmark network, ready to run. `Send + Sync`: share it by
/// reference or move it to a worker thread ([`AsyncDetector`]).
#[derive(Clone)]
pub struct Detector {
    engine: Engine,
    name: String,
    options: DetectorOptions,
    /// [`Detector::backend_description`].
    backend: String,
    /// [`Detector::why_not_gpu`].
    not_gpu: Option<String>,
}

impl std::fmt::Debug for Detector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Detector")
            .field("model", &self.name)
            .field("options", &self.options)
            .field("backend", &self.backend)
            .field("not_gpu", &self.not_gpu)
            .finish()
    }
}

impl Detector {
    /// The embedded default model ([`DEFAULT_MODEL_NAME`], BlazePose full).
    pub fn new() -> Result<Self> {
        Self::new_with(DetectorOptions::default())
    }

    /// The embedded default model with `options`.
    pub fn new_with(options: DetectorOptions) -> Result<Self> {
        Self::from_onnx_bytes(DEFAULT_MODEL, DEFAULT_MODEL_NAME, options)
    }

    /// A BlazePose landmark model converted to ONNX (the lite, full or heavy
    /// variant; `tools/convert_keypoint_model.py` makes them).
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        Self::load_with(path, DetectorOptions::default())
    }

    /// [`Detector::load`] with `options`.
    ///
    /// A file larger than 256 MiB is refused before it is read (the
    /// BlazePose models are 5 to 30 MB).
    pub fn load_with(path: impl AsRef<Path>, options: DetectorOptions) -> Result<Self> {
        use std::io::Read as _;
        const MAX_MODEL_BYTES: u64 = 256 << 20;
        let path = path.as_ref();
        let bad = |message: String| Error::Model {
            path: path.display().to_string(),
            message,
        };
        let file = std::fs::File::open(path).map_err(|e| bad(format!("cannot read: {e}")))?;
        let too_big = || {
            bad(format!(
                "larger than {} MiB: not a keypoint model",
                MAX_MODEL_BYTES >> 20
            ))
        };
        if file.metadata().is_ok_and(|m| m.len() > MAX_MODEL_BYTES) {
            return Err(too_big());
        }
        let mut bytes = Vec::new();
        file.take(MAX_MODEL_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| bad(format!("cannot read: {e}")))?;
        if bytes.len() as u64 > MAX_MODEL_BYTES {
            return Err(too_big());
        }
        Self::from_onnx_bytes(&bytes, &path.display().to_string(), options)
    }

    /// An ONNX model held in memory; `name` labels errors. A panic inside
    /// the ONNX parser (a hostile file) is an error, not a crash.
    ///
    /// [`DetectorBackend::Gpu`] and [`DetectorBackend::Auto`] ask for a headless device
    /// ([`GpuDevice::headless`]); the app, which has its own device, uses
    /// [`Detector::from_onnx_bytes_on`].
    pub fn from_onnx_bytes(bytes: &[u8], name: &str, options: DetectorOptions) -> Result<Self> {
        match options.backend {
            DetectorBackend::Cpu => {}
            DetectorBackend::Gpu => {
                return Self::from_onnx_bytes_on(bytes, name, options, &GpuDevice::headless()?);
            }
            DetectorBackend::Auto => {
                return match GpuDevice::headless() {
                    Ok(device) => Self::from_onnx_bytes_on(bytes, name, options, &device),
                    Err(e) => Self::cpu_because(bytes, name, options, e.to_string()),
                };
            }
        }
        let model_error = |message: String| Error::Model {
            path: name.to_string(),
            message,
        };
        let built = std::panic::catch_unwind(|| build_plan(bytes, options.refine_with_heatmap))
            .map_err(|p| {
                let said = p
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                model_error(format!(
                    "the ONNX parser failed on this file (it panicked: {said})"
                ))
            })?;
        let plan = built.map_err(|e| model_error(format!("{e:#}")))?;
        let threads = options.threads.max(1);
        Ok(Self {
            engine: Engine::Cpu {
                plan: Arc::new(plan),
                executor: (options.threads > 1)
                    .then(|| Executor::multithread_with_name(options.threads, "keypoints-mm")),
            },
            name: name.to_string(),
            options,
            backend: format!(
                "tract (CPU, {threads} thread{})",
                if threads == 1 { "" } else { "s" }
            ),
            not_gpu: None,
        })
    }

    /// The embedded default model on `device`, as `options.backend` says
    /// ([`DetectorBackend::Cpu`] ignores the device).
    pub fn new_on(device: &GpuDevice, options: DetectorOptions) -> Result<Self> {
        Self::from_onnx_bytes_on(DEFAULT_MODEL, DEFAULT_MODEL_NAME, options, device)
    }

    /// [`Detector::from_onnx_bytes`] on `device`, e.g. the app's own wgpu
    /// device and queue ([`GpuDevice::from_parts`]).
    pub fn from_onnx_bytes_on(
        bytes: &[u8],
        name: &str,
        options: DetectorOptions,
        device: &GpuDevice,
    ) -> Result<Self> {
        match options.backend {
            DetectorBackend::Cpu => Self::from_onnx_bytes(bytes, name, options),
            DetectorBackend::Gpu => Self::gpu(bytes, name, options, device),
            DetectorBackend::Auto if device.is_cpu() => Self::cpu_because(
                bytes,
                name,
                options,
                format!("{} is a software adapter", device.describe()),
            ),
            DetectorBackend::Auto => Self::gpu(bytes, name, options, device)
                .or_else(|e| Self::cpu_because(bytes, name, options, e.to_string())),
        }
    }

    /// tract, under [`DetectorBackend::Auto`], for the reason `why`.
    fn cpu_because(
        bytes: &[u8],
        name: &str,
        options: DetectorOptions,
        why: String,
    ) -> Result<Self> {
        let cpu = DetectorOptions {
            backend: DetectorBackend::Cpu,
            ..options
        };
        let mut detector = Self::from_onnx_bytes(bytes, name, cpu)?;
        detector.options.backend = options.backend;
        detector.backend += &format!("; not the GPU: {why}");
        detector.not_gpu = Some(why);
        Ok(detector)
    }

    fn gpu(bytes: &[u8], name: &str, options: DetectorOptions, device: &GpuDevice) -> Result<Self> {
        let model_error = |message: String| Error::Model {
            path: name.to_string(),
            message,
        };
        let heatmap = options.refine_with_heatmap;
        let model = std::panic::catch_unwind(|| {
            let model = typed_model(bytes, heatmap)?.into_decluttered()?;
            check_outputs(&model, heatmap)?;
            Ok::<_, TractError>(model)
        })
        .map_err(|_| model_error("the ONNX parser failed on this file (it panicked)".into()))?
        .map_err(|e| model_error(format!("{e:#}")))?;
        let graph = gpu::GpuGraph::new(device, &model).map_err(|e| match e {
            Error::Gpu(message) => model_error(format!("GPU back end: {message}")),
            e => e,
        })?;
        let backend = format!(
            "wgpu on {} ({} kernel launches)",
            graph.adapter(),
            graph.launches()
        );
        Ok(Self {
            engine: Engine::Gpu(Arc::new(graph)),
            name: name.to_string(),
            options,
            backend,
            not_gpu: None,
        })
    }

    pub fn options(&self) -> &DetectorOptions {
        &self.options
    }

    /// Which back end runs the network, for a status line: `"tract (CPU, 1
    /// thread)"` or `"wgpu on NAME (BACKEND, DEVICE TYPE) (N kernel
    /// launches)"`; under [`DetectorBackend::Auto`] a CPU choice says why.
    pub fn backend_description(&self) -> &str {
        &self.backend
    }

    /// Why [`DetectorBackend::Auto`] chose tract (a software adapter, no adapter,
    /// a model the kernels do not cover); `None` when it did not (or was
    /// not asked to choose).
    pub fn why_not_gpu(&self) -> Option<&str> {
        self.not_gpu.as_deref()
    }

    /// Whether the network runs on a GPU device.
    pub fn uses_gpu(&self) -> bool {
        matches!(self.engine, Engine::Gpu(_))
    }

    /// The model's file name (or [`DEFAULT_MODEL_NAME`]).
    pub fn model_name(&self) -> &str {
        &self.name
    }

    /// Keypoints of the person inside `person`, a box in pixels of the
    /// `width × height` interleaved RGB frame `rgb`.
    pub fn detect(
        &self,
        rgb: &[u8],
        width: u32,
        height: u32,
        person: PersonBox,
    ) -> Result<Keypoints> {
        roi::check_image(rgb, width, height)?;
        person.validate(width, height)?;
        self.detect_in_roi(
            rgb,
            width,
            height,
            Roi::from_box(&person, self.options.roi_scale),
        )
    }

    /// Keypoints inside an explicit (possibly rotated) ROI, e.g.
    /// [`Keypoints::tracking_roi`] of the previous frame.
    pub fn detect_in_roi(
        &self,
        rgb: &[u8],
        width: u32,
        height: u32,
        roi: Roi,
    ) -> Result<Keypoints> {
        let input = roi::crop(rgb, width, height, &roi)?;
        let raw = self.infer(&input)?;
        Ok(self.keypoints(&raw, roi))
    }

    /// Runs the network on one model input (`256 × 256 × 3` floats, HWC, RGB
    /// in `[0, 1]`, as [`roi::crop`] makes it).
    pub fn infer(&self, input: &[f32]) -> Result<RawOutput> {
        let expected = INPUT_SIZE * INPUT_SIZE * 3;
        if input.len() != expected {
            return Err(Error::InputSize {
                len: input.len(),
                expected,
            });
        }
        let (plan, executor) = match &self.engine {
            Engine::Cpu { plan, executor } => (plan, executor),
            Engine::Gpu(graph) => {
                let outputs = graph.run(input)?;
                let heatmap = if self.options.refine_with_heatmap {
                    &outputs[2][..]
                } else {
                    &[]
                };
                return raw_output(&outputs[0], &outputs[1], heatmap);
            }
        };
        let tensor =
            tract_ndarray::Array4::from_shape_vec((1, INPUT_SIZE, INPUT_SIZE, 3), input.to_vec())
                .map_err(|e| Error::Inference(e.to_string()))?;
        let run = || plan.run(tvec!(Tensor::from(tensor).into()));
        let outputs = match executor {
            Some(pool) => multithread_tract_scope(pool.clone(), run),
            None => run(),
        }
        .map_err(|e| Error::Inference(format!("{e:#}")))?;
        let view = |k: usize| {
            outputs[k]
                .as_slice::<f32>()
                .map_err(|e| Error::Inference(format!("{e:#}")))
        };
        let (lm, flag) = (view(0)?, view(1)?);
        let heatmap = if self.options.refine_with_heatmap {
            view(2)?
        } else {
            &[]
        };
        raw_output(lm, flag, heatmap)
    }

    /// Post-processing: heatmap refinement, sigmoid scores, back to input
    /// pixels through `roi`.
    pub fn keypoints(&self, raw: &RawOutput, roi: Roi) -> Keypoints {
        let n = INPUT_SIZE as f32;
        let mut xy: Vec<[f32; 2]> = raw.landmarks.iter().map(|r| [r[0] / n, r[1] / n]).collect();
        if self.options.refine_with_heatmap && !raw.heatmap.is_empty() {
            refine_from_heatmap(&mut xy, &raw.heatmap);
        }
        let to_image = |p: [f32; 2]| roi.crop_to_image([p[0] * n, p[1] * n]);
        let mut points = [Keypoint::default(); NUM_LANDMARKS];
        for (k, point) in points.iter_mut().enumerate() {
            let [u, v] = to_image(xy[k]);
            let r = raw.landmarks[k];
            *point = Keypoint {
                u,
                v,
                z: r[2] / n * roi.side,
                score: sigmoid(r[3]),
                presence: sigmoid(r[4]),
            };
        }
        Keypoints {
            points,
            presence: raw.pose_flag,
            roi,
            alignment: [to_image(xy[NUM_LANDMARKS]), to_image(xy[NUM_LANDMARKS + 1])],
        }
    }
}

/// The network's outputs, checked and gathered (both back ends).
fn raw_output(lm: &[f32], flag: &[f32], heatmap: &[f32]) -> Result<RawOutput> {
    if !lm.iter().all(|v| v.is_finite()) {
        return Err(Error::NonFinite("landmark"));
    }
    if !flag.first().is_some_and(|f| f.is_finite()) {
        return Err(Error::NonFinite("pose flag"));
    }
    if !heatmap.iter().all(|v| !v.is_nan()) {
        return Err(Error::NonFinite("heatmap"));
    }
    Ok(RawOutput {
        landmarks: lm
            .chunks_exact(5)
            .map(|r| [r[0], r[1], r[2], r[3], r[4]])
            .collect(),
        pose_flag: flag[0],
        heatmap: heatmap.to_vec(),
    })
}

/// The model typed, with only the outputs we read, not yet optimised.
fn typed_model(bytes: &[u8], heatmap: bool) -> TractResult<TypedModel> {
    let mut model = tract_onnx::onnx().model_for_read(&mut std::io::Cursor::new(bytes))?;
    let outputs = model.output_outlets()?.to_vec();
    // Landmarks, pose flag, segmentation, heatmap, world landmarks. Keeping
    // only what we use lets tract prune the segmentation decoder (and the
    // heatmap branch when it is not wanted).
    ensure!(
        outputs.len() == 5,
        "expected BlazePose's 5 outputs, found {}",
        outputs.len()
    );
    let keep = if heatmap {
        vec![outputs[0], outputs[1], outputs[3]]
    } else {
        vec![outputs[0], outputs[1]]
    };
    model.set_output_outlets(&keep)?;
    model.set_input_fact(0, f32::fact([1, INPUT_SIZE, INPUT_SIZE, 3]).into())?;
    model.into_typed()
}

fn build_plan(bytes: &[u8], heatmap: bool) -> TractResult<Plan> {
    let model = typed_model(bytes, heatmap)?.into_optimized()?;
    check_outputs(&model, heatmap)?;
    model.into_runnable()
}

/// BlazePose's output shapes: landmarks, pose flag (and heatmap).
fn check_outputs(model: &TypedModel, heatmap: bool) -> TractResult<()> {
    let keep = model.output_outlets()?;
    let shapes: Vec<Vec<usize>> = (0..keep.len())
        .map(|k| {
            Ok(model
                .output_fact(k)?
                .shape
                .as_concrete()
                .map(|s| s.to_vec())
                .unwrap_or_default())
        })
        .collect::<TractResult<_>>()?;
    let mut expected = vec![vec![1, MODEL_LANDMARK_ROWS * 5], vec![1, 1]];
    if heatmap {
        expected.push(vec![1, HEATMAP_SIZE, HEATMAP_SIZE, MODEL_LANDMARK_ROWS]);
    }
    ensure!(
        shapes == expected,
        "output shapes {shapes:?}, expected BlazePose's {expected:?}"
    );
    Ok(())
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// MediaPipe's `RefineLandmarksFromHeatMap`: where the heatmap is confident
/// near a landmark (peak sigmoid ≥ 0.5 in a 7 × 7 window), replace its
/// position by the window's confidence-weighted mean cell. Like MediaPipe we
/// weight cell *indices* (not centres), i.e. `x = Σ wᵢ colᵢ / (64 Σ wᵢ)`.
fn refine_from_heatmap(xy: &mut [[f32; 2]], heatmap: &[f32]) {
    let (size, channels) = (HEATMAP_SIZE as i64, MODEL_LANDMARK_ROWS);
    let offset = (HEATMAP_KERNEL as i64 - 1) / 2;
    for (k, p) in xy.iter_mut().enumerate() {
        // Truncation towards zero, as C++'s float → int.
        let (col, row) = ((p[0] * size as f32) as i64, (p[1] * size as f32) as i64);
        if !(0..size).contains(&col) || !(0..size).contains(&row) {
            continue;
        }
        let (mut sum, mut wc, mut wr, mut peak) = (0.0f32, 0.0f32, 0.0f32, 0.0f32);
        for r in (row - offset).max(0)..(row + offset + 1).min(size) {
            for c in (col - offset).max(0)..(col + offset + 1).min(size) {
                let conf = sigmoid(heatmap[(r * size + c) as usize * channels + k]);
                sum += conf;
                peak = peak.max(conf);
                wc += c as f32 * conf;
                wr += r as f32 * conf;
            }
        }
        if peak >= HEATMAP_MIN_CONFIDENCE && sum > 0.0 {
            *p = [wc / size as f32 / sum, wr / size as f32 / sum];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn detector_is_send_and_sync() {
        assert_send_sync::<Detector>();
        assert_send_sync::<AsyncDetector>();
    }

    #[test]
    fn corrupt_model_names_the_file() {
        let err = Detector::from_onnx_bytes(
            b"not an onnx file",
            "bogus.onnx",
            DetectorOptions::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("bogus.onnx"), "{err}");
        let err = Detector::load("/nonexistent/model.onnx").unwrap_err();
        assert!(err.to_string().contains("/nonexistent/model.onnx"), "{err}");
    }

    #[test]
    fn heatmap_refinement_moves_to_the_confident_cell() {
        let mut heatmap = vec![-10.0f32; HEATMAP_SIZE * HEATMAP_SIZE * MODEL_LANDMARK_ROWS];
        // Landmark 2 near cell (col 10, row 20); the heatmap says (12, 21).
        heatmap[(21 * HEATMAP_SIZE + 12) * MODEL_LANDMARK_ROWS + 2] = 10.0;
        let mut xy = vec![[0.0f32; 2]; MODEL_LANDMARK_ROWS];
        xy[2] = [10.2 / 64.0, 20.7 / 64.0];
        xy[3] = [10.2 / 64.0, 20.7 / 64.0]; // nothing confident for landmark 3
        refine_from_heatmap(&mut xy, &heatmap);
        assert!(
            (xy[2][0] * 64.0 - 12.0).abs() < 0.01 && (xy[2][1] * 64.0 - 21.0).abs() < 0.01,
            "{:?}",
            xy[2]
        );
        assert_eq!(xy[3], [10.2 / 64.0, 20.7 / 64.0]);
    }
}

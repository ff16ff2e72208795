//! RTPF §IV-D segmentation: a robust background subtraction that compares
//! **gradient orientation** and **YUV chrominance** of each frame with a
//! reference image of the background, then colour models (Gaussians) that
//! split the silhouette into head, skin, shirt and trousers.
//!
//! # Pipeline (all at the tracker's resolution, 160 × 120 by default)
//!
//! 1. **Sampling.** Output pixel `(x, y)` has its centre at
//!    `((x + ½)·sx, (y + ½)·sy)` in the input frame (`sx = W_in / W_out`);
//!    it averages the input pixels whose centres lie within `sx/4`, `sy/4`
//!    of it (the central 2 × 2 block for 640 → 160). This is the point the
//!    tracker's label raster samples, and averaging a few pixels reduces
//!    the sensor noise without blurring edges over the whole block.
//! 2. **Features.** `Y = 0.299 R + 0.587 G + 0.114 B`,
//!    `U = 0.492 (B − Y)`, `V = 0.877 (R − Y)`; chrominance normalised by
//!    brightness, `c = (U, V) / (Y + 16)`, which a global gain or a shadow
//!    leaves (nearly) unchanged; log-luminance `L = ln(Y + 16)`; the
//!    gradient `g = ∇Y` by central differences.
//! 3. **Background model** from an empty frame or the mean of the first K
//!    frames: per-pixel mean `c̄`, `Ȳ`, `ḡ`, and the chrominance variance
//!    `s²` across the K frames (0 for K = 1).
//! 4. **Foreground test** per pixel, with `σ` the sensor noise at this
//!    resolution (`noise_sigma / √(pixels averaged)`):
//!    - chrominance: `|c − c̄| > max(chroma_min, k · √(σ_c² + s²))` with
//!      `σ_c = 1.13 σ / (Ȳ + 16)` (the noise of `c`);
//!    - luminance: `|ln((Y + 16)/(Ȳ + 16))| > max(luma_log_ratio, k·1.41 σ/(Ȳ + 16))`;
//!    - gradient orientation: with `a = |g|`, `b = |ḡ|`, the gradients
//!      *differ* when both exceed `gradient_min` and the angle between them
//!      has `cos < orientation_cos`, or when the larger exceeds
//!      `gradient_min` and is `gradient_ratio` times the smaller (an edge
//!      appeared or was covered). Where they differ, the two colour
//!      thresholds are multiplied by `gradient_relief` (< 1).
//!
//!    Gain changes scale `Y`, `U`, `V` and `g` together, so `c`, the
//!    luminance ratio's excess over `luma_log_ratio`, the orientation and
//!    the magnitude ratio all stay put: this is why RTPF uses orientation
//!    and chrominance rather than raw intensity differences.
//! 5. **Clean-up** (morphology on the binary mask): isolated foreground
//!    pixels (≤ 1 of 8 neighbours) are dropped and isolated background
//!    pixels (≥ 7 of 8) filled; then foreground components smaller than
//!    `min_blob` pixels are removed and background holes (components not
//!    touching the border) of at most `max_hole` pixels are filled.
//! 6. **Body-part classes.** Each foreground pixel takes the colour class
//!    (skin, hair, shirt, trousers) of highest Gaussian log-density of
//!    `(c_u, c_v, L)` (RTPF models each sample "using a simple gaussian
//!    model"; we use full-covariance Gaussians in this chromaticity +
//!    log-luminance space). Pixels of a class with at most one same-class
//!    neighbour take their neighbours' majority class. The **head** is the
//!    largest hair component plus the skin reached from it by breadth-first
//!    growth through skin pixels, for at most `1.5 √(hair area)` steps and
//!    (after learning from a pose) until hair makes up the fraction of the
//!    head it made up in the projected head (RTPF finds the face with a detector; with a known hair
//!    colour the skin next to the hair is the face); without a hair model,
//!    the highest skin component. Other skin is [`SegClass::Skin`].
//!
//! Colour models are learned automatically from a frame with a known pose
//! ([`Segmenter::learn_colours_from_pose`]: project the body with the
//! label raster, keep pixels whose 8 neighbours share their class, and split
//! the head's pixels into skin and hair by 2-means) or from user strokes
//! ([`Segmenter::learn_colours_from_strokes`]).

use skeleton::Skeleton;

use crate::classes::{ClassMap, SEG_CLASSES, SegClass};
use crate::error::{Result, VisionError};
use crate::foreground::Components;
use crate::frame::Frame;

/// Thresholds and sizes; the defaults are the values the tests use.
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentParams {
    /// Output (label image) size.
    pub width: u32,
    pub height: u32,
    /// Sensor noise of the input frames, grey levels per channel.
    pub noise_sigma: f32,
    /// `k`: noise multiples a difference must exceed.
    pub noise_multiple: f32,
    /// Smallest normalised-chrominance difference that counts (0.03).
    pub chroma_min: f32,
    /// Smallest |log luminance ratio| that counts (0.4 ≈ ×1.5 or ×0.67;
    /// a ±20 % gain is 0.18).
    pub luma_log_ratio: f32,
    /// Gradient magnitude (grey levels per pixel) that makes an edge (8).
    pub gradient_min: f32,
    /// Orientations differ below this cosine (0.7 ≈ 45°).
    pub orientation_cos: f32,
    /// An edge appeared/disappeared when one magnitude is this many times
    /// the other (3).
    pub gradient_ratio: f32,
    /// Factor on the colour thresholds where the gradients differ (0.6).
    pub gradient_relief: f32,
    /// Foreground components smaller than this are removed (pixels).
    pub min_blob: usize,
    /// Background holes up to this size are filled (pixels).
    pub max_hole: usize,
}

impl Default for SegmentParams {
    fn default() -> Self {
        Self {
            width: labels::DEFAULT_WIDTH,
            height: labels::DEFAULT_HEIGHT,
            noise_sigma: 3.0,
            noise_multiple: 4.0,
            chroma_min: 0.03,
            luma_log_ratio: 0.4,
            gradient_min: 8.0,
            orientation_cos: 0.7,
            gradient_ratio: 3.0,
            gradient_relief: 0.6,
            min_blob: 6,
            max_hole: 12,
        }
    }
}

impl SegmentParams {
    fn validate(&self) -> Result<()> {
        let p = |name: &'static str, v: f32, ok: bool| {
            if ok && v.is_finite() {
                Ok(())
            } else {
                Err(VisionError::parameter(name, v, "out of range"))
            }
        };
        if self.width == 0 || self.height == 0 {
            return Err(VisionError::parameter(
                "label image size",
                format!("{}x{}", self.width, self.height),
                "must be at least 1 × 1",
            ));
        }
        p("noise_sigma", self.noise_sigma, self.noise_sigma >= 0.0)?;
        p(
            "noise_multiple",
            self.noise_multiple,
            self.noise_multiple >= 0.0,
        )?;
        p("chroma_min", self.chroma_min, self.chroma_min >= 0.0)?;
        p(
            "luma_log_ratio",
            self.luma_log_ratio,
            self.luma_log_ratio >= 0.0,
        )?;
        p("gradient_min", self.gradient_min, self.gradient_min > 0.0)?;
        p(
            "orientation_cos",
            self.orientation_cos,
            (-1.0..=1.0).contains(&self.orientation_cos),
        )?;
        p(
            "gradient_ratio",
            self.gradient_ratio,
            self.gradient_ratio >= 1.0,
        )?;
        p(
            "gradient_relief",
            self.gradient_relief,
            (0.0..=1.0).contains(&self.gradient_relief),
        )
    }
}

/// The colour classes the Gaussians model (hair is part of the head class).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColourClass {
    Skin = 0,
    Hair = 1,
    Shirt = 2,
    Trousers = 3,
}

impl ColourClass {
    pub const ALL: [ColourClass; 4] = [Self::Skin, Self::Hair, Self::Shirt, Self::Trousers];

    pub fn name(self) -> &'static str {
        match self {
            Self::Skin => "skin",
            Self::Hair => "hair",
            Self::Shirt => "shirt",
            Self::Trousers => "trousers",
        }
    }

    /// Parses `skin`, `hair`, `shirt`, `trousers`.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == s)
    }
}

/// A 3-D Gaussian over `(c_u, c_v, L)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gaussian3 {
    pub mean: [f32; 3],
    /// Inverse covariance.
    inv: [[f32; 3]; 3],
    /// `−½ ln det Σ`.
    log_norm: f32,
    /// Samples it was fitted to.
    pub samples: usize,
}

/// Variance floors of the colour Gaussians: chroma 0.015², log-luma 0.06².
const VAR_FLOOR: [f64; 3] = [0.015 * 0.015, 0.015 * 0.015, 0.06 * 0.06];

impl Gaussian3 {
    /// Maximum-likelihood fit (mean, covariance) plus `VAR_FLOOR` on the
    /// diagonal; `None` for fewer than 3 samples.
    pub fn fit(samples: &[[f32; 3]]) -> Option<Self> {
        let n = samples.len();
        if n < 3 {
            return None;
        }
        let mut m = [0f64; 3];
        for s in samples {
            for k in 0..3 {
                m[k] += f64::from(s[k]);
            }
        }
        m.iter_mut().for_each(|v| *v /= n as f64);
        let mut c = nalgebra::Matrix3::<f64>::zeros();
        for s in samples {
            let d = nalgebra::Vector3::new(
                f64::from(s[0]) - m[0],
                f64::from(s[1]) - m[1],
                f64::from(s[2]) - m[2],
            );
            c += d * d.transpose();
        }
        c /= n as f64;
        for k in 0..3 {
            c[(k, k)] += VAR_FLOOR[k];
        }
        let det = c.determinant();
        let inv = c.try_inverse()?;
        if !(det > 0.0 && det.is_finite()) {
            return None;
        }
        let mut i = [[0f32; 3]; 3];
        for (r, row) in i.iter_mut().enumerate() {
            for (k, v) in row.iter_mut().enumerate() {
                *v = inv[(r, k)] as f32;
            }
        }
        Some(Self {
            mean: m.map(|v| v as f32),
            inv: i,
            log_norm: (-0.5 * det.ln()) as f32,
            samples: n,
        })
    }

    /// `ln N(f; μ, Σ)` up to the common `−(3/2) ln 2π`.
    #[inline]
    pub fn log_density(&self, f: [f32; 3]) -> f32 {
        let d = [
            f[0] - self.mean[0],
            f[1] - self.mean[1],
            f[2] - self.mean[2],
        ];
        let i = &self.inv;
        let q = d[0] * (i[0][0] * d[0] + i[0][1] * d[1] + i[0][2] * d[2])
            + d[1] * (i[1][0] * d[0] + i[1][1] * d[1] + i[1][2] * d[2])
            + d[2] * (i[2][0] * d[0] + i[2][1] * d[1] + i[2][2] * d[2]);
        self.log_norm - 0.5 * q
    }
}

/// One user stroke: pixels (input-frame coordinates) of one colour class.
#[derive(Clone, Debug, PartialEq)]
pub struct Stroke {
    pub class: ColourClass,
    pub points: Vec<(u32, u32)>,
}

/// A label image with its foreground mask and class counts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Segmentation {
    pub width: u32,
    pub height: u32,
    /// Class ids ([`SegClass::id`]), row-major, y down.
    pub labels: Vec<u8>,
    /// 1 = foreground.
    pub foreground: Vec<u8>,
    /// Pixels per class id `0..=4`.
    pub counts: [u32; SEG_CLASSES + 1],
}

impl Segmentation {
    /// The label image as the tracker's observation.
    ///
    /// # Errors
    /// Never for a segmenter's output (ids ≤ 4 ≤ C); kept fallible for
    /// hand-made values.
    pub fn observation(&self) -> Result<labels::Observation> {
        Ok(labels::Observation::new(
            self.width,
            self.height,
            self.labels.clone(),
        )?)
    }

    /// Writes the labels in preview colours.
    ///
    /// # Errors
    /// [`VisionError::Image`] naming the file.
    pub fn save_png(&self, path: impl AsRef<std::path::Path>) -> Result<()> {
        crate::frame::save_rgb_png(
            path.as_ref(),
            self.width,
            self.height,
            &crate::synth::class_preview(&self.labels),
        )
    }
}

/// Per-pixel statistics of the empty scene.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BackgroundModel {
    pub width: u32,
    pub height: u32,
    pub frames: usize,
    y: Vec<f32>,
    cu: Vec<f32>,
    cv: Vec<f32>,
    chroma_var: Vec<f32>,
    gx: Vec<f32>,
    gy: Vec<f32>,
}

/// Grey levels of luminance (label resolution) a pixel must move by to
/// count as changed in [`Segmenter::accumulate_background`]'s stillness
/// measure: above sensor noise averaged over the label pixel and H.264
/// flicker, below a person's edge.
pub(crate) const STILL_LUMA_CHANGE: f32 = 12.0;

/// Running sums of frames for the background model (module docs, step 3):
/// [`Segmenter::accumulate_background`] adds a frame,
/// [`Segmenter::set_background`] makes their mean the model. Memory is a
/// few label images whatever the number of frames.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BackgroundAccumulator {
    y: Vec<f64>,
    cu: Vec<f64>,
    cv: Vec<f64>,
    sq: Vec<f64>,
    frames: usize,
    /// Luminance of the last frame seen, for the stillness measure.
    previous_y: Vec<f32>,
}

impl BackgroundAccumulator {
    /// Frames summed so far.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Forgets the sums (the stillness measure keeps its last frame).
    pub fn clear_sums(&mut self) {
        self.y.clear();
        self.cu.clear();
        self.cv.clear();
        self.sq.clear();
        self.frames = 0;
    }
}

/// Which input pixels each output pixel averages (module docs, step 1).
#[derive(Clone, Debug, Default)]
struct Sampler {
    in_w: u32,
    in_h: u32,
    cols: Vec<(u32, u32)>,
    rows: Vec<(u32, u32)>,
    count: Vec<f32>,
}

fn windows(n_in: u32, n_out: u32) -> Vec<(u32, u32)> {
    let s = f64::from(n_in) / f64::from(n_out);
    (0..n_out)
        .map(|o| {
            let c = (f64::from(o) + 0.5) * s;
            let half = s / 4.0 + 1e-9;
            let lo = (c - half - 0.5).ceil().max(0.0) as u32;
            let hi = ((c + half - 0.5).floor() as i64 + 1).clamp(0, i64::from(n_in)) as u32;
            if hi > lo {
                (lo, hi)
            } else {
                let nearest = (c.floor() as u32).min(n_in - 1);
                (nearest, nearest + 1)
            }
        })
        .collect()
}

impl Sampler {
    fn new(in_w: u32, in_h: u32, out_w: u32, out_h: u32) -> Self {
        let cols = windows(in_w, out_w);
        let rows = windows(in_h, out_h);
        let count = rows
            .iter()
            .flat_map(|r| cols.iter().map(move |c| ((r.1 - r.0) * (c.1 - c.0)) as f32))
            .collect();
        Self {
            in_w,
            in_h,
            cols,
            rows,
            count,
        }
    }
}

/// Working images at the output resolution.
#[derive(Clone, Debug, Default)]
struct Features {
    y: Vec<f32>,
    cu: Vec<f32>,
    cv: Vec<f32>,
    gx: Vec<f32>,
    gy: Vec<f32>,
}

/// The segmentation pipeline; owns its buffers (no allocation per frame
/// once sized, except the returned label image).
#[derive(Clone, Debug)]
pub struct Segmenter {
    params: SegmentParams,
    sampler: Sampler,
    background: Option<BackgroundModel>,
    colours: [Option<Gaussian3>; 4],
    /// Fraction of the projected head that was hair when colours were
    /// learned from a pose: the face growth stops at `hair area / fraction`.
    hair_fraction: Option<f32>,
    feat: Features,
    mask: Vec<u8>,
    scratch: Vec<u8>,
    comp: Vec<u32>,
    stack: Vec<u32>,
    /// The mask's component labelling, and the pixels of the components
    /// [`Self::components`] removes.
    components: Components,
    removed: Vec<usize>,
    colour_of: Vec<u8>,
    second: Vec<u8>,
}

const NONE: u8 = u8::MAX;

/// Face growth from the hair, in units of √(hair area) (module docs, step 6).
const HEAD_GROWTH: f32 = 1.5;

impl Segmenter {
    /// A segmenter for frames of `input_width × input_height`.
    ///
    /// # Errors
    /// [`VisionError::Parameter`] for a bad parameter or an input smaller
    /// than the output.
    pub fn new(params: SegmentParams, input_width: u32, input_height: u32) -> Result<Self> {
        params.validate()?;
        if input_width < params.width || input_height < params.height {
            return Err(VisionError::parameter(
                "input size",
                format!("{input_width}x{input_height}"),
                format!(
                    "must be at least the label image size {}x{}",
                    params.width, params.height
                ),
            ));
        }
        let sampler = Sampler::new(input_width, input_height, params.width, params.height);
        Ok(Self {
            params,
            sampler,
            background: None,
            colours: [None; 4],
            hair_fraction: None,
            feat: Features::default(),
            mask: Vec::new(),
            scratch: Vec::new(),
            comp: Vec::new(),
            stack: Vec::new(),
            components: Components::default(),
            removed: Vec::new(),
            colour_of: Vec::new(),
            second: Vec::new(),
        })
    }

    pub fn params(&self) -> &SegmentParams {
        &self.params
    }
    pub fn background(&self) -> Option<&BackgroundModel> {
        self.background.as_ref()
    }
    /// The colour Gaussian of each [`ColourClass`] (by `as usize`).
    pub fn colour_models(&self) -> &[Option<Gaussian3>; 4] {
        &self.colours
    }
    /// Replaces one colour model.
    pub fn set_colour_model(&mut self, class: ColourClass, model: Option<Gaussian3>) {
        self.colours[class as usize] = model;
    }

    fn check_frame(&self, frame: &Frame) -> Result<()> {
        if (frame.width, frame.height) != (self.sampler.in_w, self.sampler.in_h)
            || frame.rgb.len() != frame.width as usize * frame.height as usize * 3
        {
            return Err(VisionError::FrameSize {
                source_name: "segmenter input".into(),
                frame: frame.index,
                width: frame.width,
                height: frame.height,
                message: format!(
                    "the segmenter was built for {} × {}",
                    self.sampler.in_w, self.sampler.in_h
                ),
            });
        }
        Ok(())
    }

    /// Module docs, steps 1–2: samples `frame` into `self.feat`.
    fn features(&mut self, frame: &Frame) {
        let (w, h) = (self.params.width as usize, self.params.height as usize);
        let n = w * h;
        let f = &mut self.feat;
        for v in [&mut f.y, &mut f.cu, &mut f.cv, &mut f.gx, &mut f.gy] {
            v.resize(n, 0.0);
        }
        let in_w = frame.width as usize;
        for (oy, &(y0, y1)) in self.sampler.rows.iter().enumerate() {
            for (ox, &(x0, x1)) in self.sampler.cols.iter().enumerate() {
                let (mut r, mut g, mut b) = (0u32, 0u32, 0u32);
                for iy in y0..y1 {
                    let row = &frame.rgb[3 * (iy as usize * in_w)..];
                    for ix in x0..x1 {
                        let i = 3 * ix as usize;
                        r += u32::from(row[i]);
                        g += u32::from(row[i + 1]);
                        b += u32::from(row[i + 2]);
                    }
                }
                let i = oy * w + ox;
                let k = 1.0 / self.sampler.count[i];
                let (r, g, b) = (r as f32 * k, g as f32 * k, b as f32 * k);
                let y = 0.299 * r + 0.587 * g + 0.114 * b;
                let s = 1.0 / (y + 16.0);
                f.y[i] = y;
                f.cu[i] = 0.492 * (b - y) * s;
                f.cv[i] = 0.877 * (r - y) * s;
            }
        }
        gradient(&f.y, w, h, &mut f.gx, &mut f.gy);
    }

    /// Learns the background model from one empty frame or the mean of
    /// several (module docs, step 3), through a [`BackgroundAccumulator`]
    /// (running sums: the frames need not be kept).
    ///
    /// # Errors
    /// [`VisionError::NoFrames`] for no frame, [`VisionError::FrameSize`]
    /// for a frame of another size.
    pub fn learn_background(&mut self, frames: &[&Frame]) -> Result<()> {
        let mut acc = BackgroundAccumulator::default();
        for f in frames {
            self.accumulate_background(&mut acc, f)?;
        }
        self.set_background(&acc)
    }

    /// Adds `frame` to the running sums of `acc` (module docs, step 3) and
    /// returns how much of the scene changed since the previous frame `acc`
    /// saw: the fraction of label pixels whose luminance moved by more
    /// than [`STILL_LUMA_CHANGE`] grey levels (0 for the first frame). A
    /// still scene stays near 0 (sensor noise, compression); a person
    /// walking changes several per cent.
    ///
    /// # Errors
    /// [`VisionError::FrameSize`] for a frame of another size.
    pub fn accumulate_background(
        &mut self,
        acc: &mut BackgroundAccumulator,
        frame: &Frame,
    ) -> Result<f32> {
        let change = self.frame_change(acc, frame)?;
        let n = self.params.width as usize * self.params.height as usize;
        if acc.y.len() != n {
            *acc = BackgroundAccumulator {
                previous_y: acc.previous_y.clone(),
                y: vec![0.0; n],
                cu: vec![0.0; n],
                cv: vec![0.0; n],
                sq: vec![0.0; n],
                frames: 0,
            };
        }
        let f = &self.feat;
        for i in 0..n {
            acc.y[i] += f64::from(f.y[i]);
            acc.cu[i] += f64::from(f.cu[i]);
            acc.cv[i] += f64::from(f.cv[i]);
            acc.sq[i] += f64::from(f.cu[i].powi(2) + f.cv[i].powi(2));
        }
        acc.frames += 1;
        Ok(change)
    }

    /// The fraction of label pixels that changed between the previous frame
    /// `acc` saw and `frame` (as [`Self::accumulate_background`]) without
    /// adding `frame` to the sums: only the previous-frame luminance moves
    /// on.
    ///
    /// # Errors
    /// [`VisionError::FrameSize`] for a frame of another size.
    pub fn frame_change(&mut self, acc: &mut BackgroundAccumulator, frame: &Frame) -> Result<f32> {
        self.check_frame(frame)?;
        self.features(frame);
        let n = self.feat.y.len();
        let change = if acc.previous_y.len() == n {
            let moved = self
                .feat
                .y
                .iter()
                .zip(&acc.previous_y)
                .filter(|(a, b)| (*a - *b).abs() > STILL_LUMA_CHANGE)
                .count();
            moved as f32 / n as f32
        } else {
            0.0
        };
        acc.previous_y.clone_from(&self.feat.y);
        Ok(change)
    }

    /// Makes the mean of `acc`'s frames the background model (module docs,
    /// step 3).
    ///
    /// # Errors
    /// [`VisionError::NoFrames`] when `acc` holds no frame.
    // Parallel per-pixel arrays: indexing reads clearer than zips of six.
    #[allow(clippy::needless_range_loop)]
    pub fn set_background(&mut self, acc: &BackgroundAccumulator) -> Result<()> {
        let n = self.params.width as usize * self.params.height as usize;
        if acc.frames == 0 || acc.y.len() != n {
            return Err(VisionError::NoFrames {
                source_name: "background frames".into(),
            });
        }
        let mut m = BackgroundModel {
            width: self.params.width,
            height: self.params.height,
            frames: acc.frames,
            y: vec![0.0; n],
            cu: vec![0.0; n],
            cv: vec![0.0; n],
            chroma_var: vec![0.0; n],
            gx: vec![0.0; n],
            gy: vec![0.0; n],
        };
        let k = 1.0 / acc.frames as f64;
        for i in 0..n {
            let (y, cu, cv) = (acc.y[i] * k, acc.cu[i] * k, acc.cv[i] * k);
            m.y[i] = y as f32;
            m.cu[i] = cu as f32;
            m.cv[i] = cv as f32;
            m.chroma_var[i] = (acc.sq[i] * k - cu * cu - cv * cv).max(0.0) as f32;
        }
        let (w, h) = (self.params.width as usize, self.params.height as usize);
        gradient(&m.y, w, h, &mut m.gx, &mut m.gy);
        self.background = Some(m);
        Ok(())
    }

    /// Replaces the background model by `frame` inside `region` (label
    /// pixels, 1 = replace): what a "ghost" needs — a region that was learned
    /// with a person in it and shows the empty scene now.
    ///
    /// # Errors
    /// [`VisionError::FrameSize`] for a frame of another size,
    /// [`VisionError::Segmentation`] without a background model or for a
    /// region of another size.
    pub fn patch_background(&mut self, frame: &Frame, region: &[u8]) -> Result<()> {
        self.check_frame(frame)?;
        let n = self.params.width as usize * self.params.height as usize;
        if region.len() != n {
            return Err(VisionError::Segmentation(format!(
                "background patch of {} pixels for a {n}-pixel label image",
                region.len()
            )));
        }
        self.features(frame);
        let (w, h) = (self.params.width as usize, self.params.height as usize);
        let bg = self
            .background
            .as_mut()
            .ok_or_else(|| VisionError::Segmentation("no background model to patch".into()))?;
        for (i, _) in region.iter().enumerate().filter(|(_, r)| **r != 0) {
            bg.y[i] = self.feat.y[i];
            bg.cu[i] = self.feat.cu[i];
            bg.cv[i] = self.feat.cv[i];
        }
        let y = bg.y.clone();
        gradient(&y, w, h, &mut bg.gx, &mut bg.gy);
        Ok(())
    }

    /// Edge support of a foreground region's outline (Cucchiara et al.,
    /// "Detecting moving objects, ghosts and shadows", 2003): the mean
    /// gradient magnitude along the outline of `region` (label pixels, 1 =
    /// inside) in the last frame this segmenter read, and in the background
    /// model. A person standing in front of the background has their
    /// outline in the frame; a *ghost* — a place where the background was
    /// learned with someone in it who has since left — has it in the model
    /// and not in the frame. `None` without a background model, for a
    /// region of another size or one without outline pixels.
    pub fn outline_edges(&self, region: &[u8]) -> Option<(f32, f32)> {
        let bg = self.background.as_ref()?;
        let (w, h) = (self.params.width as usize, self.params.height as usize);
        if region.len() != w * h || self.feat.gx.len() != w * h {
            return None;
        }
        let (mut frame_sum, mut bg_sum, mut count) = (0f64, 0f64, 0usize);
        for y in 1..h.saturating_sub(1) {
            for x in 1..w.saturating_sub(1) {
                let i = y * w + x;
                if region[i] == 0 {
                    continue;
                }
                let outline = region[i - 1] == 0
                    || region[i + 1] == 0
                    || region[i - w] == 0
                    || region[i + w] == 0;
                if outline {
                    let f = &self.feat;
                    frame_sum += f64::from((f.gx[i].powi(2) + f.gy[i].powi(2)).sqrt());
                    bg_sum += f64::from((bg.gx[i].powi(2) + bg.gy[i].powi(2)).sqrt());
                    count += 1;
                }
            }
        }
        (count > 0).then(|| {
            (
                (frame_sum / count as f64) as f32,
                (bg_sum / count as f64) as f32,
            )
        })
    }

    /// Module docs, steps 4–5: the cleaned foreground mask in `self.mask`.
    fn foreground(&mut self) -> Result<()> {
        let bg = self.background.as_ref().ok_or_else(|| {
            VisionError::Segmentation("no background model: learn_background first".into())
        })?;
        let p = &self.params;
        let (w, h) = (p.width as usize, p.height as usize);
        let n = w * h;
        self.mask.resize(n, 0);
        let f = &self.feat;
        let m2 = p.gradient_min * p.gradient_min;
        for i in 0..n {
            let sigma = p.noise_sigma / self.sampler.count[i].sqrt();
            let yb = bg.y[i] + 16.0;
            let sc = 1.13 * sigma / yb;
            let mut tc = p
                .chroma_min
                .max(p.noise_multiple * (sc * sc + bg.chroma_var[i]).sqrt());
            let mut tl = p.luma_log_ratio.max(p.noise_multiple * 1.41 * sigma / yb);
            let (ax, ay, bx, by) = (f.gx[i], f.gy[i], bg.gx[i], bg.gy[i]);
            let (a2, b2) = (ax * ax + ay * ay, bx * bx + by * by);
            let r2 = p.gradient_ratio * p.gradient_ratio;
            let differ = if a2 > m2 && b2 > m2 {
                let dot = ax * bx + ay * by;
                dot < p.orientation_cos * (a2 * b2).sqrt() || a2 > r2 * b2 || b2 > r2 * a2
            } else {
                a2.max(b2) > m2 && a2.max(b2) > r2 * a2.min(b2)
            };
            if differ {
                tc *= p.gradient_relief;
                tl *= p.gradient_relief;
            }
            let dc2 = (f.cu[i] - bg.cu[i]).powi(2) + (f.cv[i] - bg.cv[i]).powi(2);
            let dl = ((f.y[i] + 16.0) / yb).ln().abs();
            self.mask[i] = u8::from(dc2 > tc * tc || dl > tl);
        }
        // Isolated pixels.
        self.scratch.clone_from(&self.mask);
        for y in 0..h {
            for x in 0..w {
                let mut c = 0;
                let mut total = 0;
                for dy in -1i32..=1 {
                    for dx in -1i32..=1 {
                        if dx == 0 && dy == 0 {
                            continue;
                        }
                        let (xx, yy) = (x as i32 + dx, y as i32 + dy);
                        if xx >= 0 && yy >= 0 && (xx as usize) < w && (yy as usize) < h {
                            total += 1;
                            c += u32::from(self.scratch[yy as usize * w + xx as usize]);
                        }
                    }
                }
                let i = y * w + x;
                if self.scratch[i] == 1 && c <= 1 {
                    self.mask[i] = 0;
                } else if self.scratch[i] == 0 && c + 1 >= total {
                    self.mask[i] = 1;
                }
            }
        }
        // Small blobs and small holes.
        let (min_blob, max_hole) = (p.min_blob, p.max_hole);
        self.components(1, |size, _| size < min_blob, 0);
        self.components(0, |size, border| !border && size <= max_hole, 1);
        Ok(())
    }

    /// Sets the 4-connected components of pixels equal to `value` in
    /// `self.mask` for which `remove(size, touches_border)` holds to `to`.
    fn components(&mut self, value: u8, remove: impl Fn(usize, bool) -> bool, to: u8) {
        let (w, h) = (self.params.width as usize, self.params.height as usize);
        let mut removed = std::mem::take(&mut self.removed);
        removed.clear();
        self.components
            .visit(&self.mask, w, h, value, |members, border| {
                if remove(members.len(), border) {
                    removed.extend_from_slice(members);
                }
            });
        for &i in &removed {
            self.mask[i] = to;
        }
        self.removed = removed;
    }

    /// Segments one frame (module docs, steps 1–6).
    ///
    /// # Errors
    /// [`VisionError::FrameSize`] for a frame of another size;
    /// [`VisionError::Segmentation`] without a background model or without
    /// any colour model.
    pub fn segment(&mut self, frame: &Frame) -> Result<Segmentation> {
        let mut out = Segmentation::default();
        self.segment_into(frame, &mut out)?;
        Ok(out)
    }

    /// As [`Self::segment`], reusing `out`'s buffers.
    ///
    /// # Errors
    /// As [`Self::segment`].
    pub fn segment_into(&mut self, frame: &Frame, out: &mut Segmentation) -> Result<()> {
        self.check_frame(frame)?;
        if self.colours.iter().all(Option::is_none) {
            return Err(VisionError::Segmentation(
                "no colour model: learn_colours_from_pose or learn_colours_from_strokes first"
                    .into(),
            ));
        }
        self.features(frame);
        self.foreground()?;
        self.classify(out);
        Ok(())
    }

    /// The cleaned foreground mask only (no colour models needed).
    ///
    /// # Errors
    /// As [`Self::segment`], less the colour-model requirement.
    pub fn foreground_mask(&mut self, frame: &Frame) -> Result<Vec<u8>> {
        self.check_frame(frame)?;
        self.features(frame);
        self.foreground()?;
        Ok(self.mask.clone())
    }

    #[inline]
    fn feature(&self, i: usize) -> [f32; 3] {
        [
            self.feat.cu[i],
            self.feat.cv[i],
            (self.feat.y[i] + 16.0).ln(),
        ]
    }

    /// Module docs, step 6.
    fn classify(&mut self, out: &mut Segmentation) {
        let (w, h) = (self.params.width as usize, self.params.height as usize);
        let n = w * h;
        self.colour_of.clear();
        self.colour_of.resize(n, NONE);
        self.second.clear();
        self.second.resize(n, NONE);
        for i in 0..n {
            if self.mask[i] == 0 {
                continue;
            }
            let f = self.feature(i);
            let (mut best, mut best_l) = (NONE, f32::NEG_INFINITY);
            let (mut alt, mut alt_l) = (NONE, f32::NEG_INFINITY);
            for (k, g) in self.colours.iter().enumerate() {
                let Some(g) = g else { continue };
                let l = g.log_density(f);
                if l > best_l {
                    best_l = l;
                    best = k as u8;
                }
                if k != ColourClass::Hair as usize && l > alt_l {
                    alt_l = l;
                    alt = k as u8;
                }
            }
            self.colour_of[i] = best;
            self.second[i] = alt;
        }
        // Lonely class pixels take their neighbours' majority.
        self.scratch.clone_from(&self.colour_of);
        for y in 0..h {
            for x in 0..w {
                let i = y * w + x;
                let c = self.scratch[i];
                if c == NONE {
                    continue;
                }
                let mut votes = [0u8; 4];
                let mut same = 0;
                for dy in -1i32..=1 {
                    for dx in -1i32..=1 {
                        let (xx, yy) = (x as i32 + dx, y as i32 + dy);
                        if (dx, dy) == (0, 0)
                            || xx < 0
                            || yy < 0
                            || xx as usize >= w
                            || yy as usize >= h
                        {
                            continue;
                        }
                        let d = self.scratch[yy as usize * w + xx as usize];
                        if d != NONE {
                            votes[usize::from(d)] += 1;
                            same += u8::from(d == c);
                        }
                    }
                }
                if same <= 1 {
                    let (k, v) = votes
                        .iter()
                        .enumerate()
                        .max_by_key(|&(_, v)| *v)
                        .unwrap_or((0, &0));
                    if *v >= 3 {
                        self.colour_of[i] = k as u8;
                    }
                }
            }
        }
        // Head: largest hair component plus the skin touching it.
        out.width = w as u32;
        out.height = h as u32;
        out.labels.clear();
        out.labels.resize(n, 0);
        out.foreground.clone_from(&self.mask);
        for i in 0..n {
            out.labels[i] = match self.colour_of[i] {
                NONE => 0,
                0 => SegClass::Skin.id(),
                1 => SegClass::Head.id(),
                2 => SegClass::Shirt.id(),
                _ => SegClass::Trousers.id(),
            };
        }
        self.assign_head(out);
        out.counts = [0; SEG_CLASSES + 1];
        for &l in &out.labels {
            out.counts[usize::from(l)] += 1;
        }
    }

    fn assign_head(&mut self, out: &mut Segmentation) {
        let (w, h) = (self.params.width as usize, self.params.height as usize);
        let n = w * h;
        let hair = ColourClass::Hair as u8;
        let skin = ColourClass::Skin as u8;
        // 8-connected components of one colour class.
        let mut comp = std::mem::take(&mut self.comp);
        comp.clear();
        comp.resize(n, u32::MAX);
        let mut sizes: Vec<(u32, usize, usize)> = Vec::new(); // (id, size, top row)
        let flood = |class: u8, comp: &mut Vec<u32>, stack: &mut Vec<u32>| {
            let mut found = Vec::new();
            for s in 0..n {
                if self.colour_of[s] != class || comp[s] != u32::MAX {
                    continue;
                }
                let id = s as u32;
                comp[s] = id;
                stack.clear();
                stack.push(id);
                let (mut size, mut top) = (0usize, usize::MAX);
                while let Some(i) = stack.pop() {
                    let i = i as usize;
                    size += 1;
                    top = top.min(i / w);
                    for j in block3x3(i, w, h) {
                        if self.colour_of[j] == class && comp[j] == u32::MAX {
                            comp[j] = id;
                            stack.push(j as u32);
                        }
                    }
                }
                found.push((id, size, top));
            }
            found
        };
        let hair_comps = flood(hair, &mut comp, &mut self.stack);
        let skin_comps = flood(skin, &mut comp, &mut self.stack);
        sizes.extend(skin_comps.iter().copied());
        let head_hair = hair_comps.iter().max_by_key(|c| c.1).map(|c| c.0);
        // Geodesic growth from the head's hair into skin, at most
        // `HEAD_GROWTH · √(hair area)` steps and, after learning from a pose,
        // until hair is the learned fraction of the head: the face and neck,
        // not the arms that the shoulders connect to them.
        let mut in_head = std::mem::take(&mut self.scratch);
        in_head.clear();
        in_head.resize(n, 0);
        if let Some(hh) = head_hair {
            let area = hair_comps.iter().find(|c| c.0 == hh).map_or(0, |c| c.1);
            let limit = (HEAD_GROWTH * (area as f32).sqrt()).ceil() as u32;
            let mut frontier: Vec<u32> = (0..n as u32)
                .filter(|&i| comp[i as usize] == hh && self.colour_of[i as usize] == hair)
                .collect();
            for &i in &frontier {
                in_head[i as usize] = 1;
            }
            let mut total = frontier.len();
            let budget = self
                .hair_fraction
                .map_or(usize::MAX, |f| (area as f32 / f).ceil() as usize);
            for _ in 0..limit {
                if total >= budget {
                    break;
                }
                let mut next = Vec::new();
                for &i in &frontier {
                    for j in block3x3(i as usize, w, h) {
                        if self.colour_of[j] == skin && in_head[j] == 0 && total < budget {
                            in_head[j] = 1;
                            total += 1;
                            next.push(j as u32);
                        }
                    }
                }
                if next.is_empty() {
                    break;
                }
                frontier = next;
            }
        } else if let Some(top) = sizes.iter().min_by_key(|c| (c.2, std::cmp::Reverse(c.1))) {
            for i in 0..n {
                if comp[i] == top.0 && self.colour_of[i] == skin {
                    in_head[i] = 1;
                }
            }
        }
        for i in 0..n {
            let c = self.colour_of[i];
            if c == hair {
                out.labels[i] = if Some(comp[i]) == head_hair {
                    SegClass::Head.id()
                } else {
                    match self.second[i] {
                        0 => SegClass::Skin.id(),
                        2 => SegClass::Shirt.id(),
                        3 => SegClass::Trousers.id(),
                        _ => SegClass::Head.id(),
                    }
                };
            } else if c == skin && in_head[i] == 1 {
                out.labels[i] = SegClass::Head.id();
            }
        }
        self.comp = comp;
        self.scratch = in_head;
    }

    /// Learns the colour models from a frame whose pose is known (module
    /// docs): the body is projected with the label raster at the output
    /// resolution, each projected class keeps its pixels whose 8
    /// neighbours share the class (and, when a background model exists,
    /// are foreground), and the head's pixels are split into skin and hair
    /// by 2-means. `camera` is the camera of `frame`; `skeleton` is the
    /// body the frame shows (for synthetic frames the dressed skeleton,
    /// [`crate::SyntheticRenderer::skeleton`] / [`crate::dress_skeleton`]).
    ///
    /// # Errors
    /// As [`Self::segment`] for the frame; [`VisionError::Labels`] for a bad
    /// pose; [`VisionError::Segmentation`] when no class got enough pixels.
    pub fn learn_colours_from_pose(
        &mut self,
        frame: &Frame,
        skeleton: &Skeleton,
        camera: &labels::Camera,
        pose: &[f64],
        class_map: &ClassMap,
    ) -> Result<LearnReport> {
        self.check_frame(frame)?;
        let (w, h) = (self.params.width as usize, self.params.height as usize);
        let cam = crate::camera_file::resize_camera(camera, w as u32, h as u32)?;
        let mut labels = labels::synth::render_label_image(skeleton, &cam, pose)?;
        class_map.remap(&mut labels);
        self.features(frame);
        let fg: Option<Vec<u8>> = if self.background.is_some() {
            self.foreground()?;
            Some(self.mask.clone())
        } else {
            None
        };
        let mut samples: [Vec<[f32; 3]>; 5] = Default::default();
        let mut head_rows = Vec::new();
        for y in 1..h.saturating_sub(1) {
            for x in 1..w.saturating_sub(1) {
                let i = y * w + x;
                let c = labels[i];
                if c == 0 || fg.as_ref().is_some_and(|m| m[i] == 0) {
                    continue;
                }
                let interior = (-1i32..=1).all(|dy| {
                    (-1i32..=1).all(|dx| {
                        labels[(y as i32 + dy) as usize * w + (x as i32 + dx) as usize] == c
                    })
                });
                if interior {
                    samples[usize::from(c)].push(self.feature(i));
                    if c == SegClass::Head.id() {
                        head_rows.push(y as f32);
                    }
                }
            }
        }
        let [_, head, mut skin, shirt, trousers] = samples;
        let (face, hair) = split_head(&head, &head_rows, &skin);
        let face_len = face.len();
        skin.extend_from_slice(&face);
        let report = LearnReport {
            skin: skin.len(),
            hair: hair.len(),
            shirt: shirt.len(),
            trousers: trousers.len(),
        };
        let fitted = [
            Gaussian3::fit(&skin),
            Gaussian3::fit(&hair),
            Gaussian3::fit(&shirt),
            Gaussian3::fit(&trousers),
        ];
        if fitted.iter().all(Option::is_none) {
            return Err(VisionError::Segmentation(format!(
                "the projected body gave too few pixels to learn colours ({report:?}): is the pose in view?"
            )));
        }
        self.colours = fitted;
        self.hair_fraction =
            (report.hair > 0).then(|| report.hair as f32 / (face_len + report.hair) as f32);
        Ok(report)
    }

    /// Learns (replaces) the colour model of every class that has strokes,
    /// from the frame's pixels under the strokes (input coordinates).
    ///
    /// # Errors
    /// [`VisionError::Parameter`] naming the stroke with a point outside
    /// the frame; [`VisionError::Segmentation`] when a stroked class has
    /// fewer than 3 distinct samples.
    pub fn learn_colours_from_strokes(&mut self, frame: &Frame, strokes: &[Stroke]) -> Result<()> {
        self.check_frame(frame)?;
        self.features(frame);
        let (w, h) = (self.params.width as usize, self.params.height as usize);
        let mut per: [Vec<usize>; 4] = Default::default();
        for (k, s) in strokes.iter().enumerate() {
            for &(x, y) in &s.points {
                if x >= frame.width || y >= frame.height {
                    return Err(VisionError::parameter(
                        "stroke point",
                        format!("stroke {k} ({}) at ({x}, {y})", s.class.name()),
                        format!("outside the {} × {} frame", frame.width, frame.height),
                    ));
                }
                let ox = (x as usize * w / frame.width as usize).min(w - 1);
                let oy = (y as usize * h / frame.height as usize).min(h - 1);
                per[s.class as usize].push(oy * w + ox);
            }
        }
        for (k, idx) in per.iter_mut().enumerate() {
            if idx.is_empty() {
                continue;
            }
            idx.sort_unstable();
            idx.dedup();
            let samples: Vec<[f32; 3]> = idx.iter().map(|&i| self.feature(i)).collect();
            let g = Gaussian3::fit(&samples).ok_or_else(|| {
                VisionError::Segmentation(format!(
                    "strokes of class {} cover only {} label pixels (need 3)",
                    ColourClass::ALL[k].name(),
                    samples.len()
                ))
            })?;
            self.colours[k] = Some(g);
        }
        Ok(())
    }
}

/// How many pixels each colour model was learned from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LearnReport {
    pub skin: usize,
    pub hair: usize,
    pub shirt: usize,
    pub trousers: usize,
}

/// The 4-neighbours of pixel `i` of a `w` × `h` image inside it: left,
/// right, above, below.
pub(crate) fn neighbours4(i: usize, w: usize, h: usize) -> impl Iterator<Item = usize> {
    let (x, y) = (i % w, i / w);
    [
        (x > 0).then(|| i - 1),
        (x + 1 < w).then(|| i + 1),
        (y > 0).then(|| i - w),
        (y + 1 < h).then(|| i + w),
    ]
    .into_iter()
    .flatten()
}

/// The pixels of the 3 × 3 block around pixel `i` of a `w` × `h` image
/// (`i` included) inside it, row by row: `i`'s 8-neighbourhood.
fn block3x3(i: usize, w: usize, h: usize) -> impl Iterator<Item = usize> {
    let (x, y) = (i % w, i / w);
    let rows = y.saturating_sub(1)..(y + 2).min(h);
    rows.flat_map(move |yy| (x.saturating_sub(1)..(x + 2).min(w)).map(move |xx| yy * w + xx))
}

fn dist2(a: [f32; 3], b: [f32; 3]) -> f32 {
    // Log-luminance differences weigh half as much as chroma differences.
    (a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + 0.25 * (a[2] - b[2]).powi(2)
}

fn mean(s: &[[f32; 3]]) -> [f32; 3] {
    let mut m = [0.0; 3];
    for v in s {
        for k in 0..3 {
            m[k] += v[k];
        }
    }
    m.map(|x| x / s.len().max(1) as f32)
}

/// Splits head samples into (face skin, hair) by 2-means; see
/// [`Segmenter::learn_colours_from_pose`]. Clusters closer than 0.1 (in
/// [`dist2`] units) are one colour: all hair when that colour is 0.1 or
/// more from the skin seen elsewhere, else all face.
fn split_head(
    head: &[[f32; 3]],
    rows: &[f32],
    skin: &[[f32; 3]],
) -> (Vec<[f32; 3]>, Vec<[f32; 3]>) {
    if head.len() < 6 {
        return (head.to_vec(), Vec::new());
    }
    let darkest = head
        .iter()
        .copied()
        .min_by(|a, b| a[2].total_cmp(&b[2]))
        .unwrap_or(head[0]);
    let brightest = head
        .iter()
        .copied()
        .max_by(|a, b| a[2].total_cmp(&b[2]))
        .unwrap_or(head[0]);
    let mut c = [darkest, brightest];
    let mut assign = vec![0usize; head.len()];
    for _ in 0..12 {
        for (a, f) in assign.iter_mut().zip(head) {
            *a = usize::from(dist2(*f, c[1]) < dist2(*f, c[0]));
        }
        for (k, ck) in c.iter_mut().enumerate() {
            let members: Vec<[f32; 3]> = head
                .iter()
                .zip(&assign)
                .filter(|(_, a)| **a == k)
                .map(|(f, _)| *f)
                .collect();
            if !members.is_empty() {
                *ck = mean(&members);
            }
        }
    }
    let count = |k| assign.iter().filter(|&&a| a == k).count();
    if dist2(c[0], c[1]).sqrt() < 0.1 || count(0).min(count(1)) * 10 < head.len() {
        // One colour: hair (seen from behind) when it is far from the skin
        // seen elsewhere, else a face (or a bald head).
        let far = skin.len() >= 8 && dist2(mean(head), mean(skin)).sqrt() > 0.1;
        return if far {
            (Vec::new(), head.to_vec())
        } else {
            (head.to_vec(), Vec::new())
        };
    }
    let face = if skin.len() >= 8 {
        let s = mean(skin);
        usize::from(dist2(c[1], s) < dist2(c[0], s))
    } else {
        // Without skin elsewhere, the face is the lower cluster in the image.
        let mean_row = |k| {
            let (sum, n) = rows
                .iter()
                .zip(&assign)
                .filter(|(_, a)| **a == k)
                .fold((0.0, 0), |(s, n), (r, _)| (s + r, n + 1));
            sum / n.max(1) as f32
        };
        usize::from(mean_row(1) > mean_row(0))
    };
    let (mut f, mut hr) = (Vec::new(), Vec::new());
    for (v, a) in head.iter().zip(&assign) {
        if *a == face { f.push(*v) } else { hr.push(*v) }
    }
    (f, hr)
}

/// Central-difference gradient (one-sided at the border).
fn gradient(y: &[f32], w: usize, h: usize, gx: &mut Vec<f32>, gy: &mut Vec<f32>) {
    gx.resize(w * h, 0.0);
    gy.resize(w * h, 0.0);
    for r in 0..h {
        for c in 0..w {
            let i = r * w + c;
            let (l, rr) = (c.saturating_sub(1), (c + 1).min(w - 1));
            let (u, d) = (r.saturating_sub(1), (r + 1).min(h - 1));
            gx[i] = (y[r * w + rr] - y[r * w + l]) / (rr - l).max(1) as f32;
            gy[i] = (y[d * w + c] - y[u * w + c]) / (d - u).max(1) as f32;
        }
    }
}

/// Intersection over union of two masks given by predicates on label pairs.
pub fn iou(
    a: &[u8],
    b: &[u8],
    in_a: impl Fn(u8) -> bool,
    in_b: impl Fn(u8) -> bool,
) -> Option<f64> {
    let (mut inter, mut union) = (0usize, 0usize);
    for (&x, &y) in a.iter().zip(b) {
        let (p, q) = (in_a(x), in_b(y));
        inter += usize::from(p && q);
        union += usize::from(p || q);
    }
    (union > 0).then(|| inter as f64 / union as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbourhoods_stay_inside_the_image() {
        // 4 × 3 image: corner, edge and inner pixels.
        let n4 = |i| neighbours4(i, 4, 3).collect::<Vec<_>>();
        assert_eq!(n4(0), [1, 4]);
        assert_eq!(n4(5), [4, 6, 1, 9]);
        assert_eq!(n4(11), [10, 7]);
        let b = |i| block3x3(i, 4, 3).collect::<Vec<_>>();
        assert_eq!(b(0), [0, 1, 4, 5]);
        assert_eq!(b(5), [0, 1, 2, 4, 5, 6, 8, 9, 10]);
        assert_eq!(b(11), [6, 7, 10, 11]);
    }

    #[test]
    fn sampling_windows_are_centred() {
        assert_eq!(windows(640, 160)[0], (1, 3));
        assert_eq!(windows(640, 160)[159], (637, 639));
        assert_eq!(windows(160, 160)[7], (7, 8));
        assert!(windows(321, 160).iter().all(|&(a, b)| b > a && b <= 321));
        assert!(windows(1280, 160).iter().all(|&(a, b)| b - a == 4));
    }

    #[test]
    fn gaussian_prefers_its_own_samples() {
        let a: Vec<[f32; 3]> = (0..50)
            .map(|i| {
                [
                    0.1 + 0.001 * (i % 7) as f32,
                    0.2,
                    4.0 + 0.01 * (i % 5) as f32,
                ]
            })
            .collect();
        let g = Gaussian3::fit(&a).unwrap();
        assert!(g.log_density([0.1, 0.2, 4.0]) > g.log_density([0.3, 0.2, 4.0]));
        assert!(Gaussian3::fit(&a[..2]).is_none());
    }

    #[test]
    fn bad_parameters_and_sizes_are_errors() {
        let p = SegmentParams {
            gradient_relief: 2.0,
            ..SegmentParams::default()
        };
        assert!(Segmenter::new(p, 640, 480).is_err());
        assert!(Segmenter::new(SegmentParams::default(), 100, 100).is_err());
        let mut s = Segmenter::new(SegmentParams::default(), 320, 240).unwrap();
        let f = Frame::new(320, 240, vec![100; 320 * 240 * 3], 0.0, 0).unwrap();
        assert!(matches!(s.segment(&f), Err(VisionError::Segmentation(_))));
        assert!(s.foreground_mask(&f).is_err(), "no background yet");
        s.learn_background(&[&f]).unwrap();
        assert!(s.foreground_mask(&f).unwrap().iter().all(|&m| m == 0));
        let g = Frame::new(322, 240, vec![100; 322 * 240 * 3], 0.0, 0).unwrap();
        assert!(matches!(
            s.learn_background(&[&g]),
            Err(VisionError::FrameSize { .. })
        ));
        let e = s
            .learn_colours_from_strokes(
                &f,
                &[Stroke {
                    class: ColourClass::Skin,
                    points: vec![(400, 1)],
                }],
            )
            .unwrap_err();
        assert!(e.to_string().contains("stroke 0"), "{e}");
    }
}

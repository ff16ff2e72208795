//! Synthetic camera frames of a BVH clip: the test bench and the demo
//! without a camera.
//!
//! Each pixel of a frame is shaded from the capsule the label raster puts
//! there ([`labels::raster`], so the RGB image and the true label image agree
//! pixel for pixel): the pixel-centre ray is intersected (f64) with the
//! capsules of that pixel's body part, the nearest hit gives the surface
//! normal `n`, and the colour is `albedo · (ambient + diffuse · max(0, n·l))`
//! (Lambert). Albedo comes from the [`Appearance`] through the
//! [`ClassMap`] (skin, shirt with short or long sleeves, trousers), with hair
//! on the top and back of the head. Then seeded Gaussian sensor noise is
//! added per channel and the result is rounded to 8 bits.
//!
//! The BVH importer gives thin capsules (radius = 20 % of the bone, at most
//! 8 cm); [`dress_skeleton`] gives each part an anthropometric radius so
//! that the silhouette looks like a clothed person.

use std::fmt::Write as _;
use std::path::Path;

use nalgebra::{Point3, Vector3};

/// A capsule's end points and radius in world coordinates.
type WorldCapsule = (Point3<f64>, Point3<f64>, f64);
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use skeleton::{BodyPart, Skeleton};

use crate::classes::{ClassMap, SegClass, Sleeves};
use crate::error::{Result, VisionError};
use crate::frame::{Frame, FrameSource, load_rgb, save_rgb_png};

/// Capsule radius per body part, metres.
#[derive(Clone, Debug, PartialEq)]
pub struct BodyShape {
    pub radius: [f64; labels::CLASSES],
}

impl Default for BodyShape {
    /// Adult proportions (head 10 cm, torso 13 cm, upper arm 5 cm, …).
    fn default() -> Self {
        Self {
            radius: BodyPart::ALL.map(|p| match p {
                BodyPart::Head => 0.10,
                BodyPart::Neck => 0.055,
                BodyPart::Torso => 0.13,
                BodyPart::Pelvis => 0.10,
                BodyPart::UpperArm => 0.05,
                BodyPart::Forearm => 0.042,
                BodyPart::Hand => 0.045,
                BodyPart::Finger => 0.02,
                BodyPart::Thigh => 0.075,
                BodyPart::Shank => 0.055,
                BodyPart::Foot => 0.045,
                BodyPart::Link => 0.05,
            }),
        }
    }
}

/// `skeleton` with every capsule's radius set from `shape` (geometry and
/// labels otherwise unchanged). The tracker should render the same dressed
/// skeleton, so that its labels match the synthetic frames.
///
/// # Errors
/// [`VisionError::Skeleton`] for a non-finite or negative radius.
pub fn dress_skeleton(skeleton: &Skeleton, shape: &BodyShape) -> Result<Skeleton> {
    let mut joints = skeleton.joints().to_vec();
    for j in &mut joints {
        if let Some(b) = &mut j.body {
            b.capsule.radius = shape.radius[usize::from(b.part.label()) - 1];
        }
    }
    Ok(Skeleton::new(joints)?)
}

/// Colours (sRGB, 0–255) and clothing.
#[derive(Clone, Debug, PartialEq)]
pub struct Appearance {
    pub skin: [u8; 3],
    /// `None`: bald (the whole head is skin).
    pub hair: Option<[u8; 3]>,
    pub shirt: [u8; 3],
    pub sleeves: Sleeves,
    pub trousers: [u8; 3],
}

impl Default for Appearance {
    fn default() -> Self {
        Self {
            skin: [214, 160, 128],
            hair: Some([60, 40, 28]),
            shirt: [40, 96, 190],
            sleeves: Sleeves::Short,
            trousers: [62, 62, 70],
        }
    }
}

impl Appearance {
    /// The class map these clothes imply.
    pub fn class_map(&self) -> ClassMap {
        ClassMap::for_sleeves(self.sleeves)
    }
}

/// What is behind the person.
#[derive(Clone, Debug, PartialEq)]
pub enum Background {
    /// One colour.
    Uniform([u8; 3]),
    /// A checkerboard of two colours with `cell`-pixel squares, under a
    /// left-to-right brightness ramp (edges in two orientations and smooth
    /// shading, as on a real wall).
    Checker { a: [u8; 3], b: [u8; 3], cell: u32 },
    /// An RGB image, resized (nearest pixel) to the frame.
    Image {
        width: u32,
        height: u32,
        rgb: Vec<u8>,
    },
}

impl Default for Background {
    fn default() -> Self {
        Self::Checker {
            a: [150, 146, 132],
            b: [112, 128, 118],
            cell: 48,
        }
    }
}

impl Background {
    /// Loads an image background from a PNG/JPEG file.
    ///
    /// # Errors
    /// As [`load_rgb`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let (width, height, rgb) = load_rgb(path)?;
        Ok(Self::Image { width, height, rgb })
    }

    /// The background at `width × height`.
    pub fn render(&self, width: u32, height: u32) -> Vec<u8> {
        let (w, h) = (width as usize, height as usize);
        let mut out = vec![0u8; w * h * 3];
        for y in 0..h {
            for x in 0..w {
                let c = match self {
                    Self::Uniform(c) => *c,
                    Self::Checker { a, b, cell } => {
                        let cell = (*cell).max(1) as usize;
                        let base = if (x / cell + y / cell).is_multiple_of(2) {
                            a
                        } else {
                            b
                        };
                        let ramp = 0.85 + 0.3 * x as f64 / w.max(1) as f64;
                        base.map(|v| (f64::from(v) * ramp).round().clamp(0.0, 255.0) as u8)
                    }
                    Self::Image {
                        width: iw,
                        height: ih,
                        rgb,
                    } => {
                        let sx = (x * *iw as usize / w).min(*iw as usize - 1);
                        let sy = (y * *ih as usize / h).min(*ih as usize - 1);
                        let i = 3 * (sy * *iw as usize + sx);
                        [rgb[i], rgb[i + 1], rgb[i + 2]]
                    }
                };
                out[3 * (y * w + x)..3 * (y * w + x) + 3].copy_from_slice(&c);
            }
        }
        out
    }
}

/// Directional light: `ambient + diffuse · max(0, n · l)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Lighting {
    /// World direction *towards* the light (normalised on use).
    pub towards_light: [f64; 3],
    pub ambient: f64,
    pub diffuse: f64,
}

impl Default for Lighting {
    fn default() -> Self {
        Self {
            towards_light: [0.4, 0.8, 0.6],
            ambient: 0.55,
            diffuse: 0.5,
        }
    }
}

/// Everything a synthetic frame depends on besides the pose and camera.
#[derive(Clone, Debug, PartialEq)]
pub struct RenderOptions {
    pub appearance: Appearance,
    pub shape: BodyShape,
    pub background: Background,
    pub lighting: Lighting,
    /// Standard deviation of the per-channel Gaussian sensor noise, in grey
    /// levels (0 = none).
    pub noise_sigma: f64,
    /// Seed of the noise; frame `k` uses the stream `seed + k`.
    pub seed: u64,
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self {
            appearance: Appearance::default(),
            shape: BodyShape::default(),
            background: Background::default(),
            lighting: Lighting::default(),
            noise_sigma: 3.0,
            seed: 1,
        }
    }
}

/// One synthetic frame with its ground truth.
#[derive(Clone, Debug)]
pub struct RenderedFrame {
    pub frame: Frame,
    /// True body-part labels (`0..=12`, [`BodyPart::label`]) at the frame's
    /// resolution; remap with [`ClassMap::remap`] for class ids.
    pub labels: Vec<u8>,
    /// World position of every joint, in skeleton order.
    pub joints: Vec<Point3<f64>>,
}

/// Renders poses of one (dressed) skeleton through one camera.
#[derive(Clone, Debug)]
pub struct SyntheticRenderer {
    skeleton: Skeleton,
    camera: labels::Camera,
    options: RenderOptions,
    class_map: ClassMap,
    background: Vec<u8>,
}

/// Entry `t > 0` of the ray `o + t d` (unit `d`) into the capsule `a b r`,
/// with the outward normal there.
fn ray_capsule(
    o: &Point3<f64>,
    d: &Vector3<f64>,
    a: &Point3<f64>,
    b: &Point3<f64>,
    r: f64,
) -> Option<(f64, Vector3<f64>)> {
    let ba = b - a;
    let oa = o - a;
    let baba = ba.dot(&ba);
    let bard = ba.dot(d);
    let baoa = ba.dot(&oa);
    let rdoa = d.dot(&oa);
    let oaoa = oa.dot(&oa);
    let mut best: Option<f64> = None;
    let k2 = baba - bard * bard;
    if k2 > 1e-12 {
        let k1 = baba * rdoa - baoa * bard;
        let k0 = baba * oaoa - baoa * baoa - r * r * baba;
        let h = k1 * k1 - k2 * k0;
        if h >= 0.0 {
            let t = (-k1 - h.sqrt()) / k2;
            let y = baoa + t * bard;
            if y > 0.0 && y < baba && t > 0.0 {
                best = Some(t);
            }
        }
    }
    if best.is_none() {
        for c in [a, b] {
            let oc = o - c;
            let bq = d.dot(&oc);
            let h = bq * bq - (oc.dot(&oc) - r * r);
            if h >= 0.0 {
                let t = -bq - h.sqrt();
                if t > 0.0 && best.is_none_or(|s| t < s) {
                    best = Some(t);
                }
            }
        }
    }
    let t = best?;
    let p = o + d * t;
    let s = ((p - a).dot(&ba) / baba.max(1e-18)).clamp(0.0, 1.0);
    let n = (p - (a + ba * s)).try_normalize(1e-12).unwrap_or(-d);
    Some((t, n))
}

impl SyntheticRenderer {
    /// A renderer for `skeleton` dressed with `options.shape`.
    ///
    /// # Errors
    /// [`VisionError::Parameter`] for negative/non-finite noise or lighting;
    /// [`VisionError::Skeleton`] for a bad shape.
    pub fn new(
        skeleton: &Skeleton,
        camera: labels::Camera,
        options: RenderOptions,
    ) -> Result<Self> {
        if !(options.noise_sigma.is_finite() && options.noise_sigma >= 0.0) {
            return Err(VisionError::parameter(
                "noise_sigma",
                options.noise_sigma,
                "must be finite and >= 0",
            ));
        }
        let l = &options.lighting;
        if !(l.ambient.is_finite() && l.diffuse.is_finite() && l.ambient >= 0.0 && l.diffuse >= 0.0)
            || Vector3::from(l.towards_light).norm() < 1e-9
        {
            return Err(VisionError::parameter(
                "lighting",
                format!("{l:?}"),
                "ambient and diffuse must be >= 0 and the direction non-zero",
            ));
        }
        if let Background::Image { width, height, rgb } = &options.background
            && (*width == 0 || *height == 0 || rgb.len() != *width as usize * *height as usize * 3)
        {
            return Err(VisionError::BufferSize {
                what: "background image",
                width: *width,
                height: *height,
                expected: *width as usize * *height as usize * 3,
                found: rgb.len(),
            });
        }
        let background = options.background.render(camera.width(), camera.height());
        Ok(Self {
            skeleton: dress_skeleton(skeleton, &options.shape)?,
            class_map: options.appearance.class_map(),
            camera,
            options,
            background,
        })
    }

    pub fn skeleton(&self) -> &Skeleton {
        &self.skeleton
    }
    pub fn camera(&self) -> &labels::Camera {
        &self.camera
    }
    pub fn options(&self) -> &RenderOptions {
        &self.options
    }
    pub fn class_map(&self) -> &ClassMap {
        &self.class_map
    }

    fn add_noise(&self, rgb: &mut [f64], stream: u64, out: &mut Vec<u8>) {
        let sigma = self.options.noise_sigma;
        let mut rng = Pcg64Mcg::seed_from_u64(self.options.seed.wrapping_add(stream));
        out.clear();
        out.reserve(rgb.len());
        let mut spare: Option<f64> = None;
        for v in rgb.iter() {
            let n = if sigma > 0.0 {
                // Box–Muller, both outputs used.
                match spare.take() {
                    Some(z) => z,
                    None => {
                        let u1: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
                        let u2: f64 = rng.random_range(0.0..1.0);
                        let r = (-2.0 * u1.ln()).sqrt();
                        let th = std::f64::consts::TAU * u2;
                        spare = Some(r * th.sin());
                        r * th.cos()
                    }
                }
            } else {
                0.0
            };
            out.push((v + sigma * n).round().clamp(0.0, 255.0) as u8);
        }
    }

    /// The background alone (the "empty" frame the segmenter learns from),
    /// with the noise of stream `stream`.
    pub fn render_empty(&self, stream: u64, index: usize, timestamp: f64) -> Frame {
        let mut f: Vec<f64> = self.background.iter().map(|&v| f64::from(v)).collect();
        let mut rgb = Vec::new();
        self.add_noise(&mut f, stream, &mut rgb);
        Frame {
            width: self.camera.width(),
            height: self.camera.height(),
            rgb,
            timestamp,
            index,
        }
    }

    /// Renders `pose` with the noise of stream `stream`.
    ///
    /// # Errors
    /// [`VisionError::Skeleton`] for a pose of the wrong length or with
    /// non-finite values.
    pub fn render(
        &self,
        pose: &[f64],
        stream: u64,
        index: usize,
        timestamp: f64,
    ) -> Result<RenderedFrame> {
        let world = self.skeleton.forward_kinematics(pose)?;
        let mut capsules = Vec::new();
        labels::capsules_of_pose(&self.skeleton, &world, &mut capsules);
        let labels = labels::render_labels(&self.camera.raster(), &capsules);
        let (w, h) = (self.camera.width() as usize, self.camera.height() as usize);
        let light = Vector3::from(self.options.lighting.towards_light).normalize();
        let (ambient, diffuse) = (self.options.lighting.ambient, self.options.lighting.diffuse);
        let app = &self.options.appearance;
        // Head frame for hair: the head capsule's axis is "up", and the
        // head joint's +z (the BVH's facing direction) is "forward".
        let head = self
            .skeleton
            .joints()
            .iter()
            .zip(&world)
            .find(|(j, _)| j.body.as_ref().is_some_and(|b| b.part == BodyPart::Head));
        let head_frame = head.map(|(j, wt)| {
            let b = j.body.as_ref().map(|b| &b.capsule);
            let axis = b.map_or(Vector3::y(), |c| wt.rotation * (c.end - c.start));
            let up = axis.try_normalize(1e-12).unwrap_or(Vector3::y());
            let centre = b.map_or(wt.translation.vector, |c| {
                (wt * Point3::from(c.centre())).coords
            });
            (Point3::from(centre), up, wt.rotation * Vector3::z())
        });
        let by_label: Vec<Vec<WorldCapsule>> = (1..=labels::CLASSES as u32)
            .map(|l| {
                capsules
                    .iter()
                    .filter(|c| c.label == l)
                    .map(|c| {
                        let p = |v: [f32; 3]| {
                            Point3::new(f64::from(v[0]), f64::from(v[1]), f64::from(v[2]))
                        };
                        (p(c.a), p(c.b), f64::from(c.radius))
                    })
                    .collect()
            })
            .collect();
        let mut rgb: Vec<f64> = self.background.iter().map(|&v| f64::from(v)).collect();
        for y in 0..h {
            for x in 0..w {
                let l = labels[y * w + x];
                if l == 0 {
                    continue;
                }
                let (o, d) = self.camera.pixel_ray(x as u32, y as u32);
                let d = d.into_inner();
                let hit = by_label[usize::from(l) - 1]
                    .iter()
                    .filter_map(|(a, b, r)| ray_capsule(&o, &d, a, b, *r))
                    .min_by(|p, q| p.0.total_cmp(&q.0));
                let (t, n) = hit.unwrap_or((0.0, -d));
                let part = BodyPart::ALL[usize::from(l) - 1];
                let mut albedo = match self.class_map.class_of(part) {
                    SegClass::Skin | SegClass::Head | SegClass::Background => app.skin,
                    SegClass::Shirt => app.shirt,
                    SegClass::Trousers => app.trousers,
                };
                if let (Some(hair), Some((centre, up, fwd))) = (app.hair, head_frame)
                    && part == BodyPart::Head
                {
                    let p = o + d * t;
                    let rel = (p - centre).try_normalize(1e-12).unwrap_or(n);
                    if rel.dot(&up) > 0.25 || rel.dot(&fwd) < -0.2 {
                        albedo = hair;
                    }
                }
                let shade = ambient + diffuse * n.dot(&light).max(0.0);
                for c in 0..3 {
                    rgb[3 * (y * w + x) + c] = f64::from(albedo[c]) * shade;
                }
            }
        }
        let mut out = Vec::new();
        self.add_noise(&mut rgb, stream, &mut out);
        Ok(RenderedFrame {
            frame: Frame {
                width: w as u32,
                height: h as u32,
                rgb: out,
                timestamp,
                index,
            },
            labels,
            joints: world
                .iter()
                .map(|t| Point3::from(t.translation.vector))
                .collect(),
        })
    }
}

/// A BVH clip rendered frame by frame as a [`FrameSource`]: frame 0 is the
/// empty background, frame `k ≥ 1` is clip frame `first + (k − 1)·step`.
#[derive(Debug)]
pub struct SyntheticSource {
    name: String,
    renderer: SyntheticRenderer,
    frames: skeleton::PoseBatch,
    clip_frames: Vec<usize>,
    frame_time: f64,
    next: usize,
}

impl SyntheticSource {
    /// Renders `bvh` frames `range` (every `step`-th) through `renderer`.
    ///
    /// # Errors
    /// [`VisionError::Parameter`] for an empty or out-of-clip range or a
    /// zero step.
    pub fn new(
        bvh: &skeleton::Bvh,
        renderer: SyntheticRenderer,
        range: std::ops::Range<usize>,
        step: usize,
    ) -> Result<Self> {
        let n = bvh.frames.len();
        if range.start >= range.end || range.end > n || step == 0 {
            return Err(VisionError::parameter(
                "--range / --step",
                format!("{}..{} step {step}", range.start, range.end),
                format!("need a non-empty range within the clip's 0..{n} and step ≥ 1"),
            ));
        }
        Ok(Self {
            name: format!("synthetic render of {} frames", range.len()),
            renderer,
            frames: bvh.frames.clone(),
            clip_frames: range.step_by(step).collect(),
            frame_time: bvh.frame_time * step as f64,
            next: 0,
        })
    }

    pub fn renderer(&self) -> &SyntheticRenderer {
        &self.renderer
    }

    /// The clip frame shown at source frame `k` (`None` for the empty frame).
    pub fn clip_frame(&self, k: usize) -> Option<usize> {
        k.checked_sub(1)
            .and_then(|i| self.clip_frames.get(i).copied())
    }

    /// Source frame `k` with its ground truth (`None` past the end; the
    /// empty frame has all-background labels and no joints).
    ///
    /// # Errors
    /// As [`SyntheticRenderer::render`].
    pub fn render_frame(&self, k: usize) -> Result<Option<RenderedFrame>> {
        let t = k as f64 * self.frame_time;
        if k == 0 {
            let frame = self.renderer.render_empty(0, 0, 0.0);
            let labels = vec![0; frame.width as usize * frame.height as usize];
            return Ok(Some(RenderedFrame {
                frame,
                labels,
                joints: Vec::new(),
            }));
        }
        let Some(c) = self.clip_frame(k) else {
            return Ok(None);
        };
        self.renderer
            .render(self.frames.pose(c), k as u64, k, t)
            .map(Some)
    }
}

impl FrameSource for SyntheticSource {
    fn name(&self) -> &str {
        &self.name
    }
    fn size(&self) -> (u32, u32) {
        (self.renderer.camera.width(), self.renderer.camera.height())
    }
    fn fps(&self) -> Option<f64> {
        Some(1.0 / self.frame_time)
    }
    fn frame_count(&self) -> Option<usize> {
        Some(self.clip_frames.len() + 1)
    }
    fn next_frame(&mut self) -> Result<Option<Frame>> {
        let f = self.render_frame(self.next)?;
        if f.is_some() {
            self.next += 1;
        }
        Ok(f.map(|r| r.frame))
    }
    fn seek(&mut self, frame: usize) -> Result<()> {
        if frame > self.clip_frames.len() + 1 {
            return Err(VisionError::Seek {
                source_name: self.name.clone(),
                frame,
                message: format!("the render has {} frames", self.clip_frames.len() + 1),
            });
        }
        self.next = frame;
        Ok(())
    }
}

/// What [`write_render`] wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct RenderSummary {
    /// Frames written, the empty frame included.
    pub frames: usize,
    pub width: u32,
    pub height: u32,
    /// Seconds spent rendering (without PNG encoding).
    pub render_seconds: f64,
}

/// Writes `source`'s frames to `out`: `frame_NNNN.png` (RGB),
/// `labels_NNNN.png` (8-bit grey, value = [`BodyPart::label`], 0 =
/// background), `classes_NNNN.png` (the class ids in preview colours),
/// `camera.toml`, and `ground_truth.csv` with one row per joint and frame:
/// `frame,clip_frame,time,joint,x,y,z` (metres, world frame). Frame 0 is
/// the empty background and has no joint rows.
///
/// # Errors
/// [`VisionError::Io`] / [`VisionError::Image`] naming the file that could
/// not be written; render errors.
pub fn write_render(source: &SyntheticSource, out: &Path) -> Result<RenderSummary> {
    write_render_with(source, out, &mut |_| {})
}

/// [`write_render`], calling `on_frame(k)` after frame `k` was written.
///
/// # Errors
/// As [`write_render`].
pub(crate) fn write_render_with(
    source: &SyntheticSource,
    out: &Path,
    on_frame: &mut dyn FnMut(usize),
) -> Result<RenderSummary> {
    write_render_until(
        source,
        out,
        &std::sync::atomic::AtomicBool::new(false),
        on_frame,
    )
}

/// [`write_render_with`] that stops before the next frame once `stop` is
/// set (Ctrl-C), leaving the frames written so far and a complete
/// `ground_truth.csv` of them. Every file is written whole or not at all
/// ([`crate::output`]); the CSV's rows are flushed as they are rendered.
///
/// # Errors
/// As [`write_render`].
pub(crate) fn write_render_until(
    source: &SyntheticSource,
    out: &Path,
    stop: &std::sync::atomic::AtomicBool,
    on_frame: &mut dyn FnMut(usize),
) -> Result<RenderSummary> {
    std::fs::create_dir_all(out).map_err(|e| VisionError::io(out, e))?;
    let renderer = source.renderer();
    crate::camera_file::CameraFile::from_camera(renderer.camera()).save(out.join("camera.toml"))?;
    let path = out.join("ground_truth.csv");
    let mut csv = crate::output::RowFile::create(&path, "frame,clip_frame,time,joint,x,y,z\n")
        .map_err(|e| VisionError::io(&path, e))?;
    let names: Vec<&str> = renderer
        .skeleton()
        .joints()
        .iter()
        .map(|j| j.name.as_str())
        .collect();
    let (mut k, mut seconds) = (0usize, 0.0);
    let (w, h) = source.size();
    let mut rows = String::new();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let t0 = std::time::Instant::now();
        let Some(r) = source.render_frame(k)? else {
            break;
        };
        seconds += t0.elapsed().as_secs_f64();
        r.frame.save_png(out.join(format!("frame_{k:04}.png")))?;
        let lp = out.join(format!("labels_{k:04}.png"));
        crate::frame::save_png_as(&lp, w, h, &r.labels, image::ExtendedColorType::L8)?;
        let mut classes = r.labels.clone();
        renderer.class_map().remap(&mut classes);
        save_rgb_png(
            &out.join(format!("classes_{k:04}.png")),
            w,
            h,
            &class_preview(&classes),
        )?;
        if let Some(c) = source.clip_frame(k) {
            rows.clear();
            for (i, (name, p)) in names.iter().zip(&r.joints).enumerate() {
                if i > 0 {
                    rows.push('\n');
                }
                let _ = write!(
                    rows,
                    "{k},{c},{:.6},{name},{:.6},{:.6},{:.6}",
                    r.frame.timestamp, p.x, p.y, p.z
                );
            }
            if !rows.is_empty() {
                csv.push(&rows).map_err(|e| VisionError::io(&path, e))?;
            }
        }
        on_frame(k);
        k += 1;
    }
    csv.commit().map_err(|e| VisionError::io(&path, e))?;
    Ok(RenderSummary {
        frames: k,
        width: w,
        height: h,
        render_seconds: seconds,
    })
}

/// Class ids (`0..=4`) as an RGB preview image.
pub fn class_preview(ids: &[u8]) -> Vec<u8> {
    ids.iter()
        .flat_map(|&c| {
            SegClass::from_id(c)
                .unwrap_or(SegClass::Background)
                .preview_colour()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk() -> skeleton::Bvh {
        skeleton::Bvh::load(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../assets/motions/cmu_131_01_walk.bvh"
        ))
        .unwrap()
    }

    #[test]
    fn ray_capsule_matches_the_raster() {
        let o = Point3::origin();
        let d = Vector3::z();
        let (t, n) = ray_capsule(
            &o,
            &d,
            &Point3::new(-1.0, 0.0, 5.0),
            &Point3::new(1.0, 0.0, 5.0),
            0.5,
        )
        .unwrap();
        assert!((t - 4.5).abs() < 1e-12 && (n + d).norm() < 1e-12);
        let (t, _) = ray_capsule(
            &o,
            &d,
            &Point3::new(0.0, 0.0, 3.0),
            &Point3::new(0.0, 0.0, 9.0),
            0.5,
        )
        .unwrap();
        assert!((t - 2.5).abs() < 1e-12, "end cap");
        assert!(
            ray_capsule(
                &o,
                &d,
                &Point3::new(2.0, 0.0, 3.0),
                &Point3::new(2.0, 1.0, 3.0),
                0.5
            )
            .is_none()
        );
    }

    #[test]
    fn frame_agrees_with_labels_and_is_reproducible() {
        let bvh = walk();
        let cam = crate::CameraFile::parse(include_str!("../assets/camera_front.toml"), "c")
            .unwrap()
            .camera()
            .unwrap();
        let cam = crate::resize_camera(&cam, 160, 120).unwrap();
        let r = SyntheticRenderer::new(&bvh.skeleton, cam, RenderOptions::default()).unwrap();
        let pose = bvh.frames.pose(600);
        let a = r.render(pose, 3, 0, 0.0).unwrap();
        let b = r.render(pose, 3, 0, 0.0).unwrap();
        assert_eq!(a.frame, b.frame);
        let fg = a.labels.iter().filter(|&&l| l != 0).count();
        assert!(fg > 300, "person covers {fg} pixels");
        let empty = r.render_empty(3, 0, 0.0);
        // Noise only where the labels say background, shading where not.
        let mut body_diff = 0.0;
        for (i, &l) in a.labels.iter().enumerate() {
            let d: f64 = (0..3)
                .map(|c| {
                    (f64::from(a.frame.rgb[3 * i + c]) - f64::from(empty.rgb[3 * i + c])).abs()
                })
                .sum();
            if l == 0 {
                assert!(d == 0.0, "same noise stream, same background");
            } else {
                body_diff += d;
            }
        }
        assert!(body_diff / fg as f64 > 30.0);
        // Hair on the head: some head pixels are dark.
        let head = BodyPart::Head.label();
        let dark = a
            .labels
            .iter()
            .enumerate()
            .filter(|&(i, &l)| l == head && a.frame.rgb[3 * i] < 100)
            .count();
        assert!(dark > 3, "{dark} hair pixels");
        assert_eq!(a.joints.len(), bvh.skeleton.len());
        let bad = RenderOptions {
            noise_sigma: -1.0,
            ..RenderOptions::default()
        };
        assert!(SyntheticRenderer::new(&bvh.skeleton, r.camera().clone(), bad).is_err());
        assert!(r.render(&[0.0; 3], 0, 0, 0.0).is_err());
    }
}

//! The wgpu back end of the non-overlap likelihood (RTPF §VI), the GPU twin
//! of [`labels::CpuLikelihood`].
//!
//! For every particle `q` the measurement step needs, per class `c`, the
//! model area `|B_c(q)|` and the overlap `|A_c ∩ B_c(q)|` with the observed
//! label image; with `|A_c|` (counted once per [`Observation`]) they give the
//! non-overlapping ratio
//!
//! ```text
//! F(q) = ∏_{c=1}^{m} ( (|A_c ∪ B_c| − |A_c ∩ B_c|) / |A_c ∪ B_c| )^{1/m}      (RTPF Eq. 1)
//! p(z | q) ∝ exp(−F(q)² / (2 σ_F²))                                          (RTPF Eq. 2)
//! ```
//!
//! with `|A ∪ B| = |A| + |B| − |A ∩ B|` and classes absent from both images
//! skipped ([`NonOverlap::ratio`]). RTPF §VI renders every particle's labels
//! with OpenGL, adds the segmented image into other bit planes and
//! histograms the result in parallel "on the images associated with the
//! particles \[and\] on the pixels of each of these images". Here:
//!
//! 1. **CPU: poses → end points.** [`BatchForwardKinematics`] turns the
//!    batch into joint transforms (or they come prepared, shared with the
//!    other likelihood terms: [`GpuLikelihood::evaluate_posed`], the
//!    [`smc::Term`] impl), and [`CapsuleLayout::pose_points`] into the
//!    pose's P distinct capsule end points in world coordinates (f32; a
//!    limb's end and the next limb's start are one point). Only these are
//!    uploaded: 12 bytes a point, 516 bytes a pose for the human preset
//!    (K = 26 capsules over P = 43 points) and 216 for `rtpf_upper_body`
//!    (K = 9, P = 18), where the capsules and rectangles were 1,264 and 448.
//!    The skeleton's capsule table (end-point indices, radius, label) is
//!    uploaded once.
//! 2. **Compute pass: capsules and rectangles.** One invocation per
//!    particle (`shaders/capsule_setup.wgsl`) takes its K capsules to camera
//!    space and computes each one's bounding rectangle exactly as
//!    [`labels::capsule_rect`] does on the CPU, and their union: the
//!    rectangle of pixels the particle may label.
//! 3. **Compute pass: raster and count** ([`RasterPath::Compute`], the
//!    default; `shaders/raster_count.wgsl`). One workgroup per particle
//!    loads the particle's K capsules, with every per-capsule term of the
//!    ray test, and their rectangles into workgroup memory. It walks the
//!    union rectangle in blocks of 8 × 16 pixels, a pixel per invocation;
//!    a block's capsule list (those whose rectangle meets the block, a bit
//!    mask found once per block) is the same for all its invocations, so
//!    the loop stays coherent and a capsule costs only the blocks it meets.
//!    Each pixel runs the f32 ray–capsule test of [`labels::raster`],
//!    ported step for step to WGSL, against the listed capsules whose
//!    rectangle holds the pixel, in index order,
//!    keeping the nearest hit (a later capsule wins only when strictly
//!    nearer: ties go to the lower index, the CPU rule). The pixel's label
//!    goes through the [`LabelMap`] to a class `b`, the observed label `a`
//!    (uploaded once per frame, packed four per word) is read, and `|B_b|`
//!    and, when `a = b`, `|A_b ∩ B_b|` are counted in a workgroup-shared
//!    histogram of atomics. The workgroup owns its particle's bins, so it
//!    stores every bin into the global counts with a plain write (no
//!    atomics, no clearing pass), laid out as the CPU's
//!    [`Evaluation::counts`]. No label image exists, so nothing bounds N but
//!    the buffers.
//! 4. **Readback.** Each pass copies its counts to their place in the
//!    batch's mappable staging buffer; `F` and the log-likelihood are
//!    evaluated on the CPU with [`NonOverlap::ratio`] and
//!    [`NonOverlap::log_likelihood`], the same code as the CPU back end.
//!    The wait for the GPU is bounded by [`GpuSettings::readback_timeout`]
//!    (10 s by default): a hung device is [`GpuError::Timeout`], not a
//!    tracker blocked for ever.
//!
//! **The render-pass path** ([`RasterPath::RenderPass`]), the first
//! implementation, is kept as a second opinion (both are tested against the
//! CPU count for count): step 3 becomes a render pass into an R8Uint label
//! atlas with a tile per particle (and a Depth32Float depth buffer), each
//! capsule a screen-space impostor over its rectangle whose fragments run
//! the same ray test (`shaders/label_raster.wgsl`), discard on a miss and
//! write the hit's `t` as `@builtin(frag_depth)` scaled by 2⁻²⁰ — exact in
//! f32, so depth compare `Less` with capsules drawn in index order is the
//! CPU's rule — then a compute pass of one workgroup per tile histograms the
//! tile's union rectangle (`shaders/class_histogram.wgsl`). It was rejected
//! as the default because fragment shading of one-capsule impostors was
//! measured ~30× slower than compute for the same arithmetic on data-centre
//! GPUs (an H100 reached ~450 particles/ms at 160 × 120), and the atlas caps
//! a pass at the tiles one texture holds (3,468 at 160 × 120 in 8192²).
//!
//! **Chunking.** One pass holds at most [`GpuLikelihood::max_tiles_per_pass`]
//! particles: [`COMPUTE_TILES_PER_PASS`] on the compute path (or the atlas's
//! tiles on the render-pass path), fewer when [`GpuSettings`] or the
//! device's buffer and dispatch limits say so. A larger batch runs several
//! passes that reuse every per-pass buffer (points, capsules, rectangles,
//! counts: all sized for one pass), each submitted as soon as its end points
//! are prepared: the GPU works on pass k while the CPU prepares pass k + 1,
//! and wgpu orders pass k + 1's upload after pass k.
//!
//! **Overlap.** [`GpuLikelihood::submit`] records and submits a batch and
//! starts mapping its staging buffer, returning a [`Ticket`];
//! [`GpuLikelihood::collect`] waits for that batch and reads it back. There
//! are [`GpuSettings::in_flight`] staging buffers (two by default), so the
//! CPU can run forward kinematics and submit batch k+1 — and the GPU execute
//! it — while batch k is read back:
//!
//! ```text
//! let mut ticket = gpu.submit(&obs, batch(0))?;
//! for k in 1..frames {
//!     let next = gpu.submit(&obs, batch(k))?; // GPU: batch k queued behind k−1
//!     use(gpu.collect(ticket)?);              // CPU: read back k−1
//!     ticket = next;
//! }
//! ```
//!
//! [`GpuLikelihood::evaluate`] (and the [`smc::Likelihood`] impl) is
//! `submit` followed by `collect`.
//!
//! **Agreement with the CPU.** The WGSL repeats the CPU's f32 operations in
//! the same order, and rounds every product on its own: drivers may fuse
//! `a · b + c` into one FMA (SPIR-V from WGSL carries no NoContraction), and
//! on lavapipe that alone flipped about 1 covered pixel in 6000 until the
//! shaders kept products apart (`unfused` in `raster_common.wgsl`). On
//! lavapipe the labels of both paths equal the CPU's pixel for pixel
//! (tests/gpu.rs checks hand-built scenes and random human poses). What can
//! still differ on other devices is their division and `sqrt`, which WGSL
//! allows to be a few ULP off correctly rounded: a pixel whose ray grazes a
//! silhouette, or two capsules at nearly equal depth, can then flip.
//!
//! **Pixels visited.** A capsule is tested at the pixels of its bounding
//! rectangle only (the CPU also trims it row by row to a stadium, which
//! only saves work); a particle's pixels are its union rectangle, not the
//! whole image. On lavapipe the setup pass's rectangles equal the CPU's
//! exactly (tests/gpu.rs); a device whose `sqrt` or division is a few ULP
//! off moves a bound by far less than the 0.01-pixel slack.
//!
//! **Errors.** Bad input (image size, N = 0, a batch of the wrong shape or
//! with non-finite values) is rejected on the CPU before any GPU work;
//! observed labels outside `0..=C` cannot reach the GPU, [`Observation`]
//! rejects them. Building the pipelines and allocating (at construction and
//! when N grows) run inside wgpu error scopes, so validation, out-of-memory
//! and internal errors come back as [`GpuError::Wgpu`]; a destroyed or lost
//! device surfaces as [`GpuError::DeviceLost`] when its batch is collected,
//! a device that does not finish within the readback timeout as
//! [`GpuError::Timeout`]. The caller can then fall back to
//! [`labels::CpuLikelihood`].
//!
//! The code is split by concern: [`uniforms`] (the `#[repr(C)]` mirrors of
//! the shaders' layouts), `pipelines` (shaders, layouts, error scopes),
//! `resources` (per-pass buffers, the atlas, pass recording) and `readback`
//! (mapping and the bounded wait).

mod pipelines;
mod readback;
mod resources;
pub(crate) mod uniforms;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rayon::prelude::*;
use skeleton::{BatchForwardKinematics, Skeleton};
use smc::{BoxError, Likelihood, Term};

use labels::CapsuleLayout;
use labels::LabelError;
use labels::{
    CLASSES, Evaluation, IDENTITY_LABEL_MAP, LabelMap, NonOverlap, Observation, Poses, add_results,
    check_label_map, check_states, copy_results,
};
use labels::{Camera, RasterCamera};

use crate::error::{GpuError, Result};
use pipelines::{PathPipelines, Pipelines, scoped};
use readback::{MapResult, Wait, map_for_reading, read_mapped, wait_mapped, wait_submitted};
use resources::{AtlasLayout, PathResources, Resources, encode_compute, pass_capacity};
use uniforms::COUNTS_STRIDE;
pub use uniforms::GpuRect;
pub(crate) use uniforms::RasterUniforms;

/// Invocations per setup and histogram workgroup (`WORKGROUP_SIZE` in the
/// WGSL); the histogram pass strides an 8-wide grid of them over a tile's
/// rectangle.
pub(crate) const WORKGROUP_SIZE: u32 = 64;
const _: () = assert!(WORKGROUP_SIZE.is_multiple_of(8));

/// Invocations per raster-and-count workgroup (`COUNT_WORKGROUP_SIZE` in
/// `raster_count.wgsl`), i.e. per particle: a block of 8 × 16 pixels, one
/// each. Within the 256 every device allows.
pub(crate) const COUNT_WORKGROUP_SIZE: u32 = 128;
const _: () = assert!(COUNT_WORKGROUP_SIZE <= 256 && COUNT_WORKGROUP_SIZE.is_multiple_of(8));

/// Particles per pass on the compute path unless
/// [`GpuSettings::max_tiles_per_pass`] or the device asks for fewer: enough
/// workgroups to fill a large GPU, few enough that the CPU prepares pass
/// k + 1 while the GPU runs pass k (10⁵ particles take 13 passes), and
/// the readback timeout bounds one pass.
pub(crate) const COMPUTE_TILES_PER_PASS: usize = 8_192;
const _: () = assert!(
    COMPUTE_TILES_PER_PASS <= 65_535,
    "one dispatch's workgroups"
);

/// How the particles' labels are rasterised and counted (module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RasterPath {
    /// Raster and histograms in one compute pass, no label image
    /// (`shaders/raster_count.wgsl`).
    #[default]
    Compute,
    /// A render pass into a label atlas, then a compute pass of histograms
    /// (`shaders/label_raster.wgsl`, `shaders/class_histogram.wgsl`).
    RenderPass,
}

/// Limits of the GPU back end that are not the device's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuSettings {
    /// Which raster runs: the compute pass (default) or the render pass.
    pub raster: RasterPath,
    /// Render-pass path: largest atlas side in pixels; the device's
    /// `max_texture_dimension_2d` bounds it too. 8192 keeps an atlas (R8
    /// labels + f32 depth) within 320 MiB.
    pub max_atlas_side: u32,
    /// At most this many particles per pass (`None`:
    /// [`COMPUTE_TILES_PER_PASS`] on the compute path, as many as the atlas
    /// holds on the render-pass path); a small value forces chunking
    /// (tests).
    pub max_tiles_per_pass: Option<usize>,
    /// Staging buffers, i.e. batches that may be submitted and not yet
    /// collected (≥ 1).
    pub in_flight: usize,
    /// How long collecting a batch waits for the GPU to finish a pass (of
    /// at most [`GpuLikelihood::max_tiles_per_pass`] particles) before it
    /// gives up with [`GpuError::Timeout`]: a hung or lost device must not
    /// block the tracker for ever. 10 s is far beyond any pass's time (a
    /// pass of 8,192 particles takes a few seconds on lavapipe on 2 cores,
    /// milliseconds on a GPU).
    pub readback_timeout: Duration,
}

impl Default for GpuSettings {
    fn default() -> Self {
        Self {
            raster: RasterPath::Compute,
            max_atlas_side: 8192,
            max_tiles_per_pass: None,
            in_flight: 2,
            readback_timeout: Duration::from_secs(10),
        }
    }
}

/// A batch submitted with [`GpuLikelihood::submit`], to be handed to
/// [`GpuLikelihood::collect`] once.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a submitted batch holds a staging buffer until it is collected"]
pub struct Ticket {
    serial: u64,
    slot: usize,
    particles: usize,
}

impl Ticket {
    /// N, the batch size.
    pub fn particles(&self) -> usize {
        self.particles
    }
}

#[derive(Debug)]
struct InFlight {
    serial: u64,
    particles: usize,
    /// The submissions of the batch's passes, in order.
    passes: Vec<wgpu::SubmissionIndex>,
    areas: [u32; CLASSES],
    mapped: MapResult,
}

#[derive(Debug, Default)]
struct Slot {
    staging: Option<wgpu::Buffer>,
    in_flight: Option<InFlight>,
}

/// Everything a batch mutates, behind the mutex that lets the
/// [`Likelihood`] impl take `&self`.
#[derive(Debug, Default)]
struct State {
    resources: Option<Resources>,
    slots: Vec<Slot>,
    /// The labels last uploaded (`None`: nothing uploaded yet).
    observed: Option<Vec<u8>>,
    observed_words: Vec<u32>,
    fk: BatchForwardKinematics,
    /// One pass's end points, P per particle, before the upload.
    points: Vec<[f32; 3]>,
    results: Evaluation,
    /// The uniforms on the GPU predate a label-map change.
    uniforms_stale: bool,
}

/// The batched RTPF measurement step on a wgpu device: compute raster,
/// atomic histograms, RTPF Eq. 1–2 (module docs). Owns its pipelines and
/// buffers; shares the caller's device and queue.
#[derive(Debug)]
pub struct GpuLikelihood {
    device: wgpu::Device,
    queue: wgpu::Queue,
    skeleton: Skeleton,
    camera: Camera,
    raster_camera: RasterCamera,
    model: NonOverlap,
    label_map: LabelMap,
    settings: GpuSettings,
    /// The skeleton's capsules over their distinct end points.
    layout: CapsuleLayout,
    /// Most particles one pass may hold on this device with these settings.
    max_tiles: u32,
    /// Render-pass path: largest atlas side, the setting bounded by the
    /// device.
    atlas_side: u32,
    pipelines: Pipelines,
    uniforms: wgpu::Buffer,
    observed: wgpu::Buffer,
    /// [`CapsuleLayout::capsules`], uploaded once.
    capsule_table: wgpu::Buffer,
    /// Compute path: the one-word label buffer bound when no label tiles
    /// are wanted.
    no_labels: wgpu::Buffer,
    state: Mutex<State>,
}

/// Serial numbers of [`Ticket`]s.
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(0);

/// Labels read back per pass by [`GpuLikelihood::render_tiles`].
const LABEL_READBACK_BYTES: usize = 64 << 20;

impl GpuLikelihood {
    /// A back end on the caller's device and queue (clones of wgpu handles
    /// are cheap; an app passes its own) with the default [`GpuSettings`].
    ///
    /// # Errors
    /// As [`Self::with_settings`].
    pub fn new(
        device: wgpu::Device,
        queue: wgpu::Queue,
        skeleton: Skeleton,
        camera: Camera,
        model: NonOverlap,
    ) -> Result<Self> {
        Self::with_settings(
            device,
            queue,
            skeleton,
            camera,
            model,
            GpuSettings::default(),
        )
    }

    /// As [`Self::new`] with explicit settings. Compiles the setup pipeline
    /// and those of the [`RasterPath`] chosen.
    ///
    /// # Errors
    /// [`LabelError::InvalidSetting`] for `in_flight = 0` or a skeleton
    /// without capsules; [`GpuError::CapsuleLabel`] for a body-part label
    /// outside `1..=C`; [`GpuError::DeviceLimit`] when a pass cannot hold
    /// one particle: on the compute path, when the skeleton's capsules do
    /// not fit in the device's workgroup memory (about 100 bytes a capsule:
    /// 160 capsules fit the 16 KiB every device has), on the render-pass path
    /// when an atlas of at most `max_atlas_side` (and the device's
    /// `max_texture_dimension_2d`) cannot hold one tile; [`GpuError::Wgpu`]
    /// when a shader or pipeline fails to build.
    pub fn with_settings(
        device: wgpu::Device,
        queue: wgpu::Queue,
        skeleton: Skeleton,
        camera: Camera,
        model: NonOverlap,
        settings: GpuSettings,
    ) -> Result<Self> {
        if settings.in_flight == 0 {
            return Err(LabelError::InvalidSetting {
                field: "in_flight",
                value: 0.0,
                reason: "at least one batch must be able to be in flight",
            }
            .into());
        }
        let layout = CapsuleLayout::new(&skeleton);
        if layout.capsules().is_empty() {
            return Err(LabelError::InvalidSetting {
                field: "skeleton",
                value: 0.0,
                reason: "no joint carries a capsule: there is nothing to render",
            }
            .into());
        }
        for (capsule, c) in layout.capsules().iter().enumerate() {
            if c.label == 0 || c.label as usize > CLASSES {
                return Err(GpuError::CapsuleLabel {
                    capsule,
                    label: c.label,
                    classes: CLASSES,
                });
            }
        }
        let (max_tiles, atlas_side) =
            pass_capacity(&device, &settings, camera.width(), camera.height(), &layout)?;
        let raster_camera = camera.raster();
        let (pipelines, uniforms, observed, capsule_table, no_labels) =
            scoped(&device, "building the pipelines", || {
                let pipelines = Pipelines::new(&device, settings.raster, layout.capsules().len());
                let uniforms = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("raster uniforms"),
                    size: size_of::<RasterUniforms>() as u64,
                    usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                let observed = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("observed labels"),
                    size: (camera.pixels().div_ceil(4) * 4) as u64,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                let capsule_table = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("capsule table"),
                    size: std::mem::size_of_val(layout.capsules()) as u64,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                queue.write_buffer(&capsule_table, 0, bytemuck::cast_slice(layout.capsules()));
                let no_labels = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("no label tiles"),
                    size: 4,
                    usage: wgpu::BufferUsages::STORAGE,
                    mapped_at_creation: false,
                });
                Ok((pipelines, uniforms, observed, capsule_table, no_labels))
            })?;
        let slots = (0..settings.in_flight).map(|_| Slot::default()).collect();
        Ok(Self {
            device,
            queue,
            raster_camera,
            skeleton,
            camera,
            model,
            label_map: IDENTITY_LABEL_MAP,
            settings,
            layout,
            max_tiles,
            atlas_side,
            pipelines,
            uniforms,
            observed,
            capsule_table,
            no_labels,
            state: Mutex::new(State {
                slots,
                ..State::default()
            }),
        })
    }

    pub fn skeleton(&self) -> &Skeleton {
        &self.skeleton
    }
    pub fn camera(&self) -> &Camera {
        &self.camera
    }
    pub fn model(&self) -> &NonOverlap {
        &self.model
    }
    pub fn settings(&self) -> &GpuSettings {
        &self.settings
    }
    /// Sets `σ_F` (RTPF Eq. 2) for later batches.
    pub fn set_model(&mut self, model: NonOverlap) {
        self.model = model;
    }
    /// Sets [`GpuSettings::readback_timeout`] for later collections.
    pub fn set_readback_timeout(&mut self, timeout: Duration) {
        self.settings.readback_timeout = timeout;
    }
    /// The map from rendered body-part labels to observed classes.
    pub fn label_map(&self) -> &LabelMap {
        &self.label_map
    }
    /// Sets the [`LabelMap`] applied to rendered labels before the
    /// histograms (identity by default), as [`labels::CpuLikelihood`] does.
    ///
    /// # Errors
    /// [`LabelError::LabelMap`] for an entry outside `0..=C`.
    pub fn set_label_map(&mut self, map: LabelMap) -> Result<()> {
        check_label_map(&map)?;
        if map != self.label_map {
            self.label_map = map;
            self.state_mut().uniforms_stale = true;
        }
        Ok(())
    }
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }
    /// Name, backend and type of the adapter behind the device.
    pub fn adapter_info(&self) -> wgpu::AdapterInfo {
        self.device.adapter_info()
    }
    /// The most particles one pass handles ([`COMPUTE_TILES_PER_PASS`] on
    /// the compute path unless the settings or the device say fewer; the
    /// atlas's tiles on the render-pass path); larger batches run
    /// `⌈N / tiles⌉` passes over the same buffers.
    pub fn max_tiles_per_pass(&self) -> usize {
        self.max_tiles as usize
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state through `&mut self`, which no lock guards.
    fn state_mut(&mut self) -> &mut State {
        self.state.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    /// One batch submitted and collected through a shared reference (the
    /// [`smc`] traits' way): the locked state holding its results.
    fn weigh(
        &self,
        obs: &Observation,
        states: &[f64],
        dim: usize,
        poses: Poses<'_>,
    ) -> Result<MutexGuard<'_, State>> {
        let view = self.view();
        let mut state = self.lock();
        let ticket = view.submit(&mut state, obs, states, dim, poses)?;
        view.collect(&mut state, ticket)?;
        Ok(state)
    }

    /// Weighs `states` (row-major `N × D`) against `obs` and waits for the
    /// result: [`Self::submit`] then [`Self::collect`].
    ///
    /// # Errors
    /// As [`Self::submit`] and [`Self::collect`].
    pub fn evaluate(&mut self, obs: &Observation, states: &[f64]) -> Result<&Evaluation> {
        let ticket = self.submit(obs, states)?;
        self.collect(ticket)
    }

    /// As [`Self::evaluate`], with each pose's joint transforms read from
    /// `fk` (prepared once for the batch by [`skeleton::Posing`] and shared
    /// with the other likelihood terms) instead of computed here.
    ///
    /// # Errors
    /// As [`Self::evaluate`]; `fk` not computed from `states`' N poses.
    pub fn evaluate_posed(
        &mut self,
        obs: &Observation,
        states: &[f64],
        fk: &BatchForwardKinematics,
    ) -> Result<&Evaluation> {
        let ticket = self.submit_posed(obs, states, fk)?;
        self.collect(ticket)
    }

    /// As [`Self::submit`], with the joint transforms read from `fk`.
    ///
    /// # Errors
    /// As [`Self::submit`]; `fk` not computed from `states`' N poses.
    pub fn submit_posed(
        &mut self,
        obs: &Observation,
        states: &[f64],
        fk: &BatchForwardKinematics,
    ) -> Result<Ticket> {
        let dof = self.skeleton.dof();
        self.view()
            .submit(&mut self.lock(), obs, states, dof, Poses::Posed(fk))
    }

    /// Records and submits the batch `states` (row-major `N × D`) against
    /// `obs` — uploading `obs` only when it differs from the last one — and
    /// starts mapping its readback buffer; returns at once. Collect the
    /// result with [`Self::collect`].
    ///
    /// # Errors
    /// [`LabelError::ImageSizeMismatch`] when `obs` is not the camera's size;
    /// [`LabelError::EmptyBatch`], [`LabelError::StateShape`],
    /// [`LabelError::NonFinitePose`] for a bad batch;
    /// [`GpuError::TooManyInFlight`] when every staging buffer holds an
    /// uncollected batch; [`GpuError::DeviceLimit`] when N needs buffers
    /// beyond the device's limits; [`GpuError::Wgpu`] for an error wgpu
    /// reports.
    pub fn submit(&mut self, obs: &Observation, states: &[f64]) -> Result<Ticket> {
        let dof = self.skeleton.dof();
        self.view()
            .submit(&mut self.lock(), obs, states, dof, Poses::States)
    }

    /// Waits for the batch of `ticket` and reads it back: counts, `F` and
    /// log-likelihoods, valid until the next `collect` or `evaluate`.
    ///
    /// # Errors
    /// [`GpuError::UnknownTicket`] for a ticket not in flight here;
    /// [`GpuError::DeviceLost`] when the device was lost before the batch
    /// finished; [`GpuError::BufferMap`] when the readback failed otherwise.
    pub fn collect(&mut self, ticket: Ticket) -> Result<&Evaluation> {
        self.view().collect(&mut self.lock(), ticket)?;
        Ok(&self.state_mut().results)
    }

    /// As [`Self::collect`] but copies the result into `out` (reusing its
    /// allocations), for callers that keep several batches' results.
    ///
    /// # Errors
    /// As [`Self::collect`].
    pub fn collect_into(&mut self, ticket: Ticket, out: &mut Evaluation) -> Result<()> {
        let r = self.collect(ticket)?;
        out.counts.clone_from(&r.counts);
        out.non_overlap.clone_from(&r.non_overlap);
        out.log_likelihood.clone_from(&r.log_likelihood);
        Ok(())
    }

    /// Forgets every batch in flight without reading it back (their
    /// tickets become unknown) and frees their staging buffers, e.g. after a
    /// ticket was dropped uncollected.
    pub fn discard_in_flight(&mut self) {
        for slot in &mut self.state_mut().slots {
            if slot.in_flight.take().is_some() {
                // A buffer with a map pending is dropped, not reused.
                slot.staging = None;
            }
        }
    }

    /// Batches submitted and not yet collected.
    pub fn in_flight(&self) -> usize {
        self.lock()
            .slots
            .iter()
            .filter(|s| s.in_flight.is_some())
            .count()
    }

    /// The label tiles of a batch as the GPU renders them, `N × H × W` (tile
    /// `i` at `i · W · H`), the layout of
    /// [`labels::CpuLikelihood::render_tiles`]. A diagnostic: on the compute
    /// path the raster-and-count pass runs in a variant that also writes
    /// its labels (built on the first call), on the render-pass path the
    /// atlas is read back; either way through a buffer allocated for the
    /// call, in passes of at most 64 MiB of labels.
    ///
    /// # Errors
    /// As [`Self::evaluate`] without the observation checks.
    pub fn render_tiles(&mut self, states: &[f64]) -> Result<Vec<u8>> {
        let (w, h) = (self.camera.width(), self.camera.height());
        let px = w as usize * h as usize;
        let mut tiles = vec![0u8; states.len() / self.skeleton.dof().max(1) * px];
        self.pipelines.ensure_label_writer(&self.device)?;
        let per_pass = (LABEL_READBACK_BYTES / px).max(1);
        let row_bytes = |width: u32| width.div_ceil(256) * 256;
        // Compute path: the label tiles of a pass, four pixels per word.
        let mut labels: Option<wgpu::Buffer> = None;
        self.diagnose(
            states,
            per_pass,
            |view, encoder, res, count| match &res.path {
                PathResources::Compute { .. } => {
                    let PathPipelines::Compute {
                        layout,
                        with_labels: Some(pipeline),
                        ..
                    } = &view.pipelines.path
                    else {
                        unreachable!("the label writer was built above");
                    };
                    let bytes = (count * px).div_ceil(4) as u64 * 4;
                    if labels.as_ref().is_none_or(|b| b.size() < bytes) {
                        labels = Some(scoped(view.device, "allocating label tiles", || {
                            Ok(view.device.create_buffer(&wgpu::BufferDescriptor {
                                label: Some("label tiles"),
                                size: bytes,
                                usage: wgpu::BufferUsages::STORAGE
                                    | wgpu::BufferUsages::COPY_SRC
                                    | wgpu::BufferUsages::COPY_DST,
                                mapped_at_creation: false,
                            }))
                        })?);
                    }
                    let labels = labels.as_ref().expect("allocated above");
                    encoder.clear_buffer(labels, 0, Some(bytes));
                    let bind = view.count_bind_group(layout, &res.buffers, labels);
                    encode_compute(
                        encoder,
                        "raster and count, with labels",
                        pipeline,
                        &bind,
                        count as u32,
                    );
                    let readback = view.readback_buffer("label readback", bytes)?;
                    encoder.copy_buffer_to_buffer(labels, 0, &readback, 0, bytes);
                    Ok(readback)
                }
                PathResources::RenderPass(atlas) => {
                    view.encode_raster(encoder, atlas, count);
                    let layout = atlas.layout;
                    let readback = view.readback_buffer(
                        "atlas readback",
                        u64::from(row_bytes(layout.width)) * u64::from(layout.height),
                    )?;
                    encoder.copy_texture_to_buffer(
                        wgpu::TexelCopyTextureInfo {
                            texture: &atlas.texture,
                            mip_level: 0,
                            origin: wgpu::Origin3d::ZERO,
                            aspect: wgpu::TextureAspect::All,
                        },
                        wgpu::TexelCopyBufferInfo {
                            buffer: &readback,
                            layout: wgpu::TexelCopyBufferLayout {
                                offset: 0,
                                bytes_per_row: Some(row_bytes(layout.width)),
                                rows_per_image: Some(layout.height),
                            },
                        },
                        wgpu::Extent3d {
                            width: layout.width,
                            height: layout.height,
                            depth_or_array_layers: 1,
                        },
                    );
                    Ok(readback)
                }
            },
            |res, range, data| {
                let out = &mut tiles[range.start * px..range.end * px];
                let Some(atlas) = res.atlas_layout() else {
                    // Compute path: the tiles in order, as the CPU lays them out.
                    out.copy_from_slice(&data[..out.len()]);
                    return;
                };
                let row_bytes = row_bytes(atlas.width);
                for (t, tile) in out.chunks_exact_mut(px).enumerate() {
                    let tx = (t as u32 % atlas.columns) * w;
                    let ty = (t as u32 / atlas.columns) * h;
                    for (y, row) in tile.chunks_exact_mut(w as usize).enumerate() {
                        let src = ((ty + y as u32) * row_bytes + tx) as usize;
                        row.copy_from_slice(&data[src..src + w as usize]);
                    }
                }
            },
        )?;
        Ok(tiles)
    }

    /// The bounding rectangles the GPU's setup pass derives for a batch
    /// (`shaders/capsule_setup.wgsl`): per particle, its K capsules'
    /// rectangles (`N × K`, as [`labels::capsule_rect`] gives them on
    /// the CPU) and their union (`N`). A diagnostic that reads both back.
    ///
    /// # Errors
    /// As [`Self::evaluate`] without the observation checks.
    pub fn capsule_rects(&mut self, states: &[f64]) -> Result<(Vec<GpuRect>, Vec<GpuRect>)> {
        let k = self.layout.capsules().len();
        let n = states.len() / self.skeleton.dof().max(1);
        let mut capsules = vec![GpuRect::default(); n * k];
        let mut tiles = vec![GpuRect::default(); n];
        let rect = size_of::<GpuRect>() as u64;
        let kb = k as u64 * rect;
        self.diagnose(
            states,
            usize::MAX,
            |view, encoder, res, count| {
                let m = count as u64;
                let readback = view.readback_buffer("rectangle readback", m * (kb + rect))?;
                encoder.copy_buffer_to_buffer(&res.buffers.capsule_rects, 0, &readback, 0, m * kb);
                encoder.copy_buffer_to_buffer(
                    &res.buffers.tile_rects,
                    0,
                    &readback,
                    m * kb,
                    m * rect,
                );
                Ok(readback)
            },
            |_, range, data| {
                let all: &[GpuRect] = bytemuck::cast_slice(data);
                let (per_capsule, per_tile) = all.split_at(range.len() * k);
                capsules[range.start * k..range.end * k].copy_from_slice(per_capsule);
                tiles[range].copy_from_slice(per_tile);
            },
        )?;
        Ok((capsules, tiles))
    }

    /// Runs the setup pass over `states` pass by pass, at most `max_per_pass`
    /// particles a pass; `encode` records, after it, what to read back from
    /// the pass's resources into a buffer it allocates, and `consume` reads
    /// that buffer's bytes for the pass's particles. Each pass is submitted
    /// and read back before the next.
    fn diagnose(
        &mut self,
        states: &[f64],
        max_per_pass: usize,
        mut encode: impl FnMut(
            &View<'_>,
            &mut wgpu::CommandEncoder,
            &Resources,
            usize,
        ) -> Result<wgpu::Buffer>,
        mut consume: impl FnMut(&Resources, std::ops::Range<usize>, &[u8]),
    ) -> Result<()> {
        let dof = self.skeleton.dof();
        let view = self.view();
        let mut state = self.lock();
        let device = view.device;
        let n = check_states(view.skeleton, states, dof)?;
        view.ensure_resources(&mut state, n)?;
        let per_pass = state
            .resources
            .as_ref()
            .map_or(1, |r| r.tiles as usize)
            .min(max_per_pass);
        let wait = Wait {
            what: "diagnostic",
            operation: "reading a pass back",
            stage: "diagnostic readback",
            timeout: view.readback_timeout,
        };
        for c in 0..n.div_ceil(per_pass) {
            let range = c * per_pass..((c + 1) * per_pass).min(n);
            view.prepare_chunk(
                &mut state,
                &states[range.start * dof..range.end * dof],
                Poses::States,
                range.start,
            )?;
            let res = state.resources.as_ref().expect("resources were ensured");
            view.upload_chunk(res, &state);
            let mut encoder = device.create_command_encoder(&Default::default());
            view.encode_setup(&mut encoder, res, range.len());
            let readback = encode(&view, &mut encoder, res, range.len())?;
            let submission = view.queue.submit([encoder.finish()]);
            let mapped = map_for_reading(&readback, u64::MAX);
            wait_mapped(device, submission, &mapped, wait)?;
            read_mapped(&readback, .., "reading a pass back", |data| {
                consume(res, range, data)
            })?;
        }
        Ok(())
    }

    /// End points uploaded per particle: P points of 12 bytes
    /// ([`CapsuleLayout`]); the GPU derives the capsules and rectangles.
    pub fn upload_bytes_per_particle(&self) -> usize {
        self.layout.points().len() * size_of::<[f32; 3]>()
    }

    /// The immutable part of `self` the batch stages need.
    fn view(&self) -> View<'_> {
        View {
            device: &self.device,
            queue: &self.queue,
            model: &self.model,
            label_map: &self.label_map,
            skeleton: &self.skeleton,
            camera: &self.raster_camera,
            pipelines: &self.pipelines,
            uniforms: &self.uniforms,
            observed: &self.observed,
            capsule_table: &self.capsule_table,
            no_labels: &self.no_labels,
            layout: &self.layout,
            max_tiles: self.max_tiles,
            atlas_side: self.atlas_side,
            readback_timeout: self.settings.readback_timeout,
        }
    }
}

/// The immutable inputs of the batch stages.
struct View<'a> {
    device: &'a wgpu::Device,
    queue: &'a wgpu::Queue,
    model: &'a NonOverlap,
    label_map: &'a LabelMap,
    skeleton: &'a Skeleton,
    camera: &'a RasterCamera,
    pipelines: &'a Pipelines,
    uniforms: &'a wgpu::Buffer,
    observed: &'a wgpu::Buffer,
    capsule_table: &'a wgpu::Buffer,
    no_labels: &'a wgpu::Buffer,
    layout: &'a CapsuleLayout,
    max_tiles: u32,
    atlas_side: u32,
    readback_timeout: Duration,
}

impl View<'_> {
    fn submit(
        &self,
        state: &mut State,
        obs: &Observation,
        states: &[f64],
        dim: usize,
        poses: Poses<'_>,
    ) -> Result<Ticket> {
        let (device, queue, view) = (self.device, self.queue, self);
        obs.check_size(view.camera.width, view.camera.height)?;
        let n = check_states(view.skeleton, states, dim)?;
        poses.check(view.skeleton, n)?;
        let slot = state
            .slots
            .iter()
            .position(|s| s.in_flight.is_none())
            .ok_or(GpuError::TooManyInFlight {
                in_flight: state.slots.len(),
            })?;
        let bytes = n as u64 * COUNTS_STRIDE;
        view.ensure_resources(state, n)?;
        let staging = &mut state.slots[slot].staging;
        if staging.as_ref().is_none_or(|b| b.size() < bytes) {
            *staging = None;
            *staging = Some(view.readback_buffer("counts readback", bytes)?);
        }
        view.upload_observation(state, obs);
        let tiles = state.resources.as_ref().map_or(1, |r| r.tiles as usize);
        // One submission per pass: the GPU works on pass c while the CPU
        // prepares pass c + 1 (whose upload wgpu orders after pass c). Every
        // pass writes all its tiles' bins and copies them to its place in
        // the staging buffer, so the counts need no clearing.
        let mut passes = Vec::with_capacity(n.div_ceil(tiles));
        for c in 0..n.div_ceil(tiles) {
            let range = c * tiles..((c + 1) * tiles).min(n);
            view.prepare_chunk(
                state,
                &states[range.start * dim..range.end * dim],
                poses,
                range.start,
            )?;
            let res = state.resources.as_ref().expect("resources were ensured");
            view.upload_chunk(res, state);
            let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("non-overlap pass"),
            });
            view.encode_setup(&mut encoder, res, range.len());
            view.encode_counts(&mut encoder, res, range.len());
            let staging = state.slots[slot]
                .staging
                .as_ref()
                .expect("staging was sized");
            encoder.copy_buffer_to_buffer(
                &res.buffers.counts,
                0,
                staging,
                range.start as u64 * COUNTS_STRIDE,
                range.len() as u64 * COUNTS_STRIDE,
            );
            passes.push(queue.submit([encoder.finish()]));
        }
        let staging = state.slots[slot]
            .staging
            .as_ref()
            .expect("staging was sized");
        let mapped = map_for_reading(staging, bytes);
        // Unique across instances, so a ticket cannot be collected by a
        // back end that did not issue it.
        let serial = NEXT_SERIAL.fetch_add(1, Ordering::Relaxed);
        state.slots[slot].in_flight = Some(InFlight {
            serial,
            particles: n,
            passes,
            areas: *obs.areas(),
            mapped,
        });
        Ok(Ticket {
            serial,
            slot,
            particles: n,
        })
    }

    /// A mappable buffer of `bytes` to copy results into.
    fn readback_buffer(&self, label: &'static str, bytes: u64) -> Result<wgpu::Buffer> {
        scoped(self.device, "allocating a readback buffer", || {
            Ok(self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }))
        })
    }

    fn collect(&self, state: &mut State, ticket: Ticket) -> Result<()> {
        let (device, model) = (self.device, self.model);
        let unknown = GpuError::UnknownTicket {
            serial: ticket.serial,
        };
        let slot = state.slots.get_mut(ticket.slot).ok_or(unknown.clone())?;
        if slot
            .in_flight
            .as_ref()
            .is_none_or(|f| f.serial != ticket.serial)
        {
            return Err(unknown);
        }
        let flight = slot.in_flight.take().expect("checked above");
        let Some(staging) = slot.staging.as_ref() else {
            return Err(unknown);
        };
        let bytes = flight.particles as u64 * COUNTS_STRIDE;
        let wait = Wait {
            what: "counts",
            operation: "collecting a batch",
            stage: "readback",
            timeout: self.readback_timeout,
        };
        // Pass by pass: the timeout bounds the time without progress, not
        // the batch's (10⁵ particles take seconds on a software device).
        let (last, earlier) = flight.passes.split_last().expect("a batch has a pass");
        let waited = earlier
            .iter()
            .try_for_each(|pass| wait_submitted(device, pass.clone(), wait))
            .and_then(|()| wait_mapped(device, last.clone(), &flight.mapped, wait));
        if let Err(e) = waited {
            slot.staging = None;
            return Err(e);
        }
        let ev = &mut state.results;
        if let Err(e) = read_mapped(staging, ..bytes, "collecting a batch", |data| {
            ev.counts.clear();
            ev.counts.extend_from_slice(bytemuck::cast_slice(data));
        }) {
            slot.staging = None;
            return Err(e);
        }
        let n = flight.particles;
        ev.non_overlap.resize(n, 0.0);
        ev.log_likelihood.resize(n, 0.0);
        let areas = &flight.areas;
        ev.counts
            .par_chunks(2 * CLASSES)
            .zip(ev.non_overlap.par_iter_mut())
            .zip(ev.log_likelihood.par_iter_mut())
            .with_min_len(1024)
            .for_each(|((counts, f), ll)| {
                *f = NonOverlap::ratio(areas, counts);
                *ll = model.log_likelihood(*f);
            });
        Ok(())
    }

    /// Makes sure the per-pass buffers (and atlas) hold `min(n, max_tiles)`
    /// particles; grows them (and rewrites the uniforms) only when they do
    /// not.
    fn ensure_resources(&self, state: &mut State, n: usize) -> Result<()> {
        let need = n.min(self.max_tiles as usize);
        if let Some(res) = state
            .resources
            .as_ref()
            .filter(|r| r.tiles as usize >= need)
        {
            if state.uniforms_stale {
                self.write_uniforms(res.atlas_layout());
                state.uniforms_stale = false;
            }
            return Ok(());
        }
        // Drop the old atlas and buffers first (batches in flight keep
        // theirs alive until they finish).
        state.resources = None;
        let resources = scoped(self.device, "allocating the per-pass buffers", || {
            let resources = self.create_resources(need)?;
            self.write_uniforms(resources.atlas_layout());
            Ok(resources)
        })?;
        state.uniforms_stale = false;
        state.resources = Some(resources);
        Ok(())
    }

    fn write_uniforms(&self, atlas: Option<&AtlasLayout>) {
        let uniforms = RasterUniforms::new(self.camera, self.layout, atlas, self.label_map);
        self.queue
            .write_buffer(self.uniforms, 0, bytemuck::bytes_of(&uniforms));
    }

    /// Uploads the observed labels, packed four per word, unless they are
    /// the ones already on the GPU.
    fn upload_observation(&self, state: &mut State, obs: &Observation) {
        if state.observed.as_deref() == Some(obs.labels()) {
            return;
        }
        let words = &mut state.observed_words;
        words.clear();
        words.extend(obs.labels().chunks(4).map(|q| {
            q.iter()
                .enumerate()
                .fold(0u32, |word, (i, &l)| word | u32::from(l) << (8 * i))
        }));
        self.queue
            .write_buffer(self.observed, 0, bytemuck::cast_slice(words));
        let cached = state.observed.get_or_insert_with(Vec::new);
        cached.clear();
        cached.extend_from_slice(obs.labels());
    }

    /// Forward kinematics (unless `poses` holds them: then pose `i` of
    /// this pass is `first + i` there) and the end points
    /// ([`CapsuleLayout::pose_points`]) of one pass's poses into the
    /// state's CPU buffer.
    fn prepare_chunk(
        &self,
        state: &mut State,
        states: &[f64],
        poses: Poses<'_>,
        first: usize,
    ) -> Result<()> {
        let p = self.layout.points().len();
        let n = states.len() / self.skeleton.dof();
        if let Poses::States = poses {
            state
                .fk
                .compute_states(self.skeleton, states)
                .map_err(|e| LabelError::Pose(e.to_string()))?;
        }
        state.points.resize(n * p, [0.0; 3]);
        let (fk, layout) = (&state.fk, self.layout);
        state
            .points
            .par_chunks_mut(p)
            .enumerate()
            .with_min_len(256)
            .for_each(|(i, points)| {
                let world = match poses {
                    Poses::Posed(shared) => shared.world(first + i),
                    Poses::States => fk.world(i),
                };
                layout.pose_points(world, points);
            });
        Ok(())
    }

    /// Writes the prepared pass's end points into the GPU's point buffer
    /// (wgpu orders the copy after the passes already submitted).
    fn upload_chunk(&self, res: &Resources, state: &State) {
        self.queue
            .write_buffer(&res.buffers.points, 0, bytemuck::cast_slice(&state.points));
    }
}

impl Likelihood<Observation> for GpuLikelihood {
    /// RTPF Eq. 2 for every particle, computed on the GPU; the counts and
    /// `F` of the batch stay in `self`'s result buffers.
    fn log_likelihood(
        &self,
        obs: &Observation,
        states: &[f64],
        dim: usize,
        out: &mut [f64],
    ) -> std::result::Result<(), BoxError> {
        let state = self.weigh(obs, states, dim, Poses::States)?;
        copy_results(&state.results.log_likelihood, out)
    }
}

/// RTPF Eq. 2 on the GPU as a term of a body likelihood, reading the
/// cloud's joint transforms prepared once per step ([`skeleton::Posing`]):
/// only capsules are derived here. The counts and `F` of the batch stay in
/// `self`'s result buffers.
impl Term<Observation, BatchForwardKinematics> for GpuLikelihood {
    fn add_log_likelihood(
        &self,
        obs: &Observation,
        fk: &BatchForwardKinematics,
        states: &[f64],
        dim: usize,
        out: &mut [f64],
    ) -> std::result::Result<(), BoxError> {
        let state = self.weigh(obs, states, dim, Poses::Posed(fk))?;
        add_results(&state.results.log_likelihood, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compute_path_and_a_ten_second_readback_timeout_are_the_defaults() {
        let s = GpuSettings::default();
        assert_eq!(s.raster, RasterPath::Compute);
        assert_eq!(s.readback_timeout, Duration::from_secs(10));
        assert_eq!(s.in_flight, 2);
    }
}

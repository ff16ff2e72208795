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
//!    [`labels::raster::capsule_rect`] does on the CPU, and their union: the
//!    rectangle the histogram pass visits.
//! 3. **Render pass: label atlas.** Each particle owns a `W × H` tile of an
//!    R8Uint atlas (with a Depth32Float depth buffer). Each capsule is a
//!    screen-space impostor: a quad over its rectangle whose fragments run
//!    the f32 ray–capsule test of [`labels::raster`] ported step for step to
//!    WGSL (`shaders/label_raster.wgsl`), discard on a miss, and write the
//!    hit's ray parameter `t` (its camera depth) as `@builtin(frag_depth)`
//!    scaled by 2⁻²⁰ — exact in f32, so the depth test compares the CPU's
//!    very `t` values. Depth compare `Less` with capsules drawn in index
//!    order gives ties to the lower index, the CPU rule.
//! 4. **Compute pass: histograms.** One workgroup per tile visits the
//!    particle's union rectangle only (no model pixel lies outside it), reads
//!    the model label `b` and the observed label `a` (uploaded once per
//!    frame, packed four per word) and counts `|B_c|` and `|A_c ∩ B_c|` in a
//!    workgroup-shared histogram of atomics; the workgroup owns its tile's
//!    bins, so it stores every bin into the global counts with a plain
//!    write (no atomics, no clearing pass; `shaders/class_histogram.wgsl`),
//!    laid out as the CPU's [`Evaluation::counts`].
//! 5. **Readback.** Each pass copies its counts to their place in the
//!    batch's mappable staging buffer; `F` and the log-likelihood are
//!    evaluated on the CPU with [`NonOverlap::ratio`] and
//!    [`NonOverlap::log_likelihood`], the same code as the CPU back end.
//!
//! **Chunking.** One atlas holds at most `tiles_per_pass` tiles, bounded by
//! the device's `max_texture_dimension_2d` (and [`GpuSettings`]); a larger
//! batch runs several passes that reuse the atlas and every per-pass buffer
//! (points, capsules, rectangles, counts: all sized for one pass), each
//! submitted as soon as its end points are prepared: the GPU works on pass
//! k while the CPU prepares pass k + 1, and wgpu orders pass k + 1's upload
//! after pass k. 10⁵ tiles of 160 × 120 take 29 passes of an 8160 × 8160
//! atlas.
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
//! shader kept products apart (`unfused` in `label_raster.wgsl`). On
//! lavapipe the labels now equal the CPU's pixel for pixel (tests/gpu.rs
//! checks 200 random human poses). What can still differ on other devices
//! is their division and `sqrt`, which WGSL allows to be a few ULP off
//! correctly rounded: a pixel whose ray grazes a silhouette, or two capsules
//! at nearly equal depth, can then flip.
//!
//! **Pixels visited.** The render pass shades each capsule's bounding
//! rectangle (the CPU also trims it row by row to a stadium, which only
//! saves work); the histogram pass visits each particle's union rectangle,
//! not the whole tile. On lavapipe the setup pass's rectangles equal the
//! CPU's exactly (tests/gpu.rs); a device whose `sqrt` or division is a few
//! ULP off moves a bound by far less than the 0.01-pixel slack, and the
//! labels never depend on the rectangles.
//!
//! **Errors.** Bad input (image size, N = 0, a batch of the wrong shape or
//! with non-finite values) is rejected on the CPU before any GPU work;
//! observed labels outside `0..=C` cannot reach the GPU, [`Observation`]
//! rejects them. Building the pipelines and allocating (at construction and
//! when N grows) run inside wgpu error scopes, so validation, out-of-memory
//! and internal errors come back as [`GpuError::Wgpu`]; a destroyed or lost
//! device surfaces as [`GpuError::DeviceLost`] when its batch is collected.
//! The caller can then fall back to [`labels::CpuLikelihood`].

use std::borrow::Cow;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;
use skeleton::{BatchForwardKinematics, Skeleton};
use smc::{BoxError, Likelihood, Term};

use labels::LabelError;
use labels::camera::{Camera, RasterCamera};
use labels::likelihood::{
    CLASSES, Evaluation, IDENTITY_LABEL_MAP, LabelMap, NonOverlap, Observation, Poses, add_results,
    check_label_map, check_states, copy_results,
};
use labels::raster::{CapsuleInstance, CapsuleLayout, CapsuleRef, PixelRect};

use crate::error::{GpuError, Result};

/// `frag_depth = t · 2⁻²⁰`: a power of two, so the scaling is exact and
/// keeps every order and tie of the f32 ray parameters (for `t < 2²⁰`).
pub const DEPTH_SCALE: f32 = 1.0 / 1_048_576.0;

/// Invocations per histogram workgroup (`WORKGROUP_SIZE` in the WGSL), an
/// 8-wide grid of them strides over a tile's rectangle.
pub const WORKGROUP_SIZE: u32 = 64;
const _: () = assert!(WORKGROUP_SIZE.is_multiple_of(8));

const LABEL_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::R8Uint;
const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;
/// Bytes of one particle's counts: `2 C` u32.
const COUNTS_STRIDE: u64 = (2 * CLASSES * 4) as u64;

/// The uniform the three shaders read (WGSL `struct RasterUniforms` in
/// `raster_common.wgsl`, 128 bytes):
/// the [`RasterCamera`] (rotation rows with the translation in `w`),
/// the tile and atlas geometry and [`DEPTH_SCALE`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct RasterUniforms {
    /// Row `i`: `[r_i0, r_i1, r_i2, t_i]` of camera-from-world.
    pub rows: [[f32; 4]; 3],
    pub fx: f32,
    pub fy: f32,
    pub cx: f32,
    pub cy: f32,
    /// Tile (image) size in pixels.
    pub width: u32,
    pub height: u32,
    /// Tiles per atlas row.
    pub tile_columns: u32,
    /// K, capsules per pose.
    pub capsules_per_pose: u32,
    /// Atlas size in pixels.
    pub atlas_width: u32,
    pub atlas_height: u32,
    pub depth_scale: f32,
    /// Always 0: the WGSL ORs it into every product to keep the driver from
    /// fusing multiply–adds (`unfused` in `label_raster.wgsl`).
    pub zero: u32,
    /// The [`LabelMap`], four classes per word, little-endian: the class of
    /// rendered label `l` is byte `(l − 1) % 4` of word `(l − 1) / 4`
    /// (WGSL `label_map: vec4<u32>`, so `C ≤ 16`).
    pub label_map: [u32; 4],
    /// P, end points per pose ([`CapsuleLayout::points`]).
    pub points_per_pose: u32,
    /// WGSL rounds the struct up to 16 bytes.
    pub pad: [u32; 3],
}

const _: () = assert!(CLASSES <= 16, "the label map is packed into one vec4<u32>");

/// [`RasterUniforms::label_map`] of a [`LabelMap`].
fn pack_label_map(map: &LabelMap) -> [u32; 4] {
    let mut words = [0u32; 4];
    for (i, &c) in map.iter().enumerate() {
        words[i / 4] |= u32::from(c) << (8 * (i % 4));
    }
    words
}

impl RasterUniforms {
    fn new(
        camera: &RasterCamera,
        layout: &CapsuleLayout,
        atlas: &AtlasLayout,
        label_map: &LabelMap,
    ) -> Self {
        let row = |i: usize| {
            [
                camera.rot[i][0],
                camera.rot[i][1],
                camera.rot[i][2],
                camera.trans[i],
            ]
        };
        Self {
            rows: [row(0), row(1), row(2)],
            fx: camera.fx,
            fy: camera.fy,
            cx: camera.cx,
            cy: camera.cy,
            width: camera.width,
            height: camera.height,
            tile_columns: atlas.columns,
            capsules_per_pose: layout.capsules().len() as u32,
            atlas_width: atlas.width,
            atlas_height: atlas.height,
            depth_scale: DEPTH_SCALE,
            zero: 0,
            label_map: pack_label_map(label_map),
            points_per_pose: layout.points().len() as u32,
            pad: [0; 3],
        }
    }
}

/// A [`PixelRect`] as the shaders read it (WGSL `struct Rect`, 16 bytes);
/// an empty rectangle is all zero.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct GpuRect {
    pub x0: u32,
    pub y0: u32,
    pub x1: u32,
    pub y1: u32,
}

impl From<PixelRect> for GpuRect {
    fn from(r: PixelRect) -> Self {
        if r.is_empty() {
            Self::default()
        } else {
            Self {
                x0: r.x0,
                y0: r.y0,
                x1: r.x1,
                y1: r.y1,
            }
        }
    }
}

/// Limits of the GPU back end that are not the device's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuSettings {
    /// Largest atlas side in pixels; the device's `max_texture_dimension_2d`
    /// bounds it too. 8192 keeps an atlas (R8 labels + f32 depth) within
    /// 320 MiB.
    pub max_atlas_side: u32,
    /// At most this many tiles per render pass (`None`: as many as the
    /// atlas holds); a small value forces chunking (tests).
    pub max_tiles_per_pass: Option<usize>,
    /// Staging buffers, i.e. batches that may be submitted and not yet
    /// collected (≥ 1).
    pub in_flight: usize,
}

impl Default for GpuSettings {
    fn default() -> Self {
        Self {
            max_atlas_side: 8192,
            max_tiles_per_pass: None,
            in_flight: 2,
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

/// How tiles sit in the atlas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct AtlasLayout {
    /// Tiles per pass: the particles every per-pass buffer holds.
    tiles: u32,
    columns: u32,
    width: u32,
    height: u32,
}

/// GPU objects for one pass of `atlas.tiles` particles, reused by every
/// pass; rebuilt only when a batch needs larger passes.
#[derive(Debug)]
struct Resources {
    atlas: AtlasLayout,
    atlas_texture: wgpu::Texture,
    atlas_view: wgpu::TextureView,
    depth_view: wgpu::TextureView,
    /// Uploaded: P end points (world, f32) per particle.
    points: wgpu::Buffer,
    /// Written by the setup pass (as are the K camera-space capsules per
    /// particle, which only the bind groups hold): the capsules'
    /// rectangles and each particle's union rectangle.
    capsule_rects: wgpu::Buffer,
    tile_rects: wgpu::Buffer,
    counts: wgpu::Buffer,
    setup_bind: wgpu::BindGroup,
    raster_bind: wgpu::BindGroup,
    histogram_bind: wgpu::BindGroup,
}

type MapResult = Arc<Mutex<Option<std::result::Result<(), String>>>>;

#[derive(Debug)]
struct InFlight {
    serial: u64,
    particles: usize,
    submission: wgpu::SubmissionIndex,
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

#[derive(Debug)]
struct Pipelines {
    setup: wgpu::ComputePipeline,
    setup_layout: wgpu::BindGroupLayout,
    raster: wgpu::RenderPipeline,
    raster_layout: wgpu::BindGroupLayout,
    histogram: wgpu::ComputePipeline,
    histogram_layout: wgpu::BindGroupLayout,
}

/// The batched RTPF measurement step on a wgpu device: label atlas, atomic
/// histograms, RTPF Eq. 1–2 (module docs). Owns its pipelines and buffers;
/// shares the caller's device and queue.
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
    /// Most tiles one pass may hold on this device with these settings.
    max_tiles: u32,
    /// Largest atlas side: the setting bounded by the device.
    atlas_side: u32,
    pipelines: Pipelines,
    uniforms: wgpu::Buffer,
    observed: wgpu::Buffer,
    /// [`CapsuleLayout::capsules`], uploaded once.
    capsule_table: wgpu::Buffer,
    state: Mutex<State>,
}

/// Runs `f` inside validation, out-of-memory and internal error scopes and
/// turns the first captured error into [`GpuError::Wgpu`].
///
/// Only pipeline building and allocations (at construction and when N
/// grows) run in scopes, never the per-batch work: with the wgpu features
/// Bevy uses (no `std`), a device has one error-scope stack for all threads,
/// so scopes pushed by two threads at once would be popped out of order
/// (wgpu panics then). [`SCOPES`] serialises this crate's own scopes; Bevy
/// pushes one only while it compiles a shader. A lost device needs no scope:
/// wgpu reports it through the failed readback ([`GpuError::DeviceLost`]).
fn scoped<T>(
    device: &wgpu::Device,
    operation: &'static str,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let _serial = SCOPES.lock().unwrap_or_else(|e| e.into_inner());
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let value = f();
    // Scopes pop innermost first.
    let captured = [
        ("validation", pollster::block_on(validation.pop())),
        ("internal", pollster::block_on(internal.pop())),
        ("out-of-memory", pollster::block_on(oom.pop())),
    ];
    for (kind, error) in captured {
        if let Some(e) = error {
            return Err(GpuError::Wgpu {
                operation,
                kind,
                message: e.to_string(),
            });
        }
    }
    value
}

/// Serial numbers of [`Ticket`]s.
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(0);

/// Serialises [`scoped`] across threads (see there).
static SCOPES: Mutex<()> = Mutex::new(());

/// A buffer binding of at least `min` bytes.
fn buffer_binding(ty: wgpu::BufferBindingType, min: u64) -> wgpu::BindingType {
    wgpu::BindingType::Buffer {
        ty,
        has_dynamic_offset: false,
        min_binding_size: NonZeroU64::new(min),
    }
}

fn storage(read_only: bool, min: u64) -> wgpu::BindingType {
    buffer_binding(wgpu::BufferBindingType::Storage { read_only }, min)
}

/// A bind group layout whose binding 0 is the [`RasterUniforms`] (seen by
/// `uniform_stage`) and binding `i ≥ 1` is `entries[i − 1]`, as
/// [`View::bind_group`] fills it.
fn bind_group_layout(
    device: &wgpu::Device,
    label: &'static str,
    uniform_stage: wgpu::ShaderStages,
    entries: &[(wgpu::ShaderStages, wgpu::BindingType)],
) -> wgpu::BindGroupLayout {
    let uniforms = buffer_binding(
        wgpu::BufferBindingType::Uniform,
        size_of::<RasterUniforms>() as u64,
    );
    let entries: Vec<wgpu::BindGroupLayoutEntry> = std::iter::once((uniform_stage, uniforms))
        .chain(entries.iter().copied())
        .zip(0u32..)
        .map(|((visibility, ty), binding)| wgpu::BindGroupLayoutEntry {
            binding,
            visibility,
            ty,
            count: None,
        })
        .collect();
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some(label),
        entries: &entries,
    })
}

/// A shader as compiled: the constants, `raster_common.wgsl`, then `file`.
fn shader_source(file: &str) -> String {
    format!(
        "const CLASSES: u32 = {CLASSES}u;\nconst WORKGROUP_SIZE: u32 = {WORKGROUP_SIZE}u;\n{}\n{file}",
        include_str!("../shaders/raster_common.wgsl")
    )
}

impl Pipelines {
    fn new(device: &wgpu::Device) -> Self {
        let vf = wgpu::ShaderStages::VERTEX | wgpu::ShaderStages::FRAGMENT;
        let vs = wgpu::ShaderStages::VERTEX;
        let cs = wgpu::ShaderStages::COMPUTE;
        let capsule_size = size_of::<CapsuleInstance>() as u64;
        let rect_size = size_of::<GpuRect>() as u64;
        let setup_layout = bind_group_layout(
            device,
            "capsule setup",
            cs,
            &[
                (cs, storage(true, size_of::<CapsuleRef>() as u64)),
                (cs, storage(true, 12)),
                (cs, storage(false, capsule_size)),
                (cs, storage(false, rect_size)),
                (cs, storage(false, rect_size)),
            ],
        );
        let raster_layout = bind_group_layout(
            device,
            "label raster",
            vf,
            &[
                (vs, storage(true, capsule_size)),
                (vs, storage(true, rect_size)),
            ],
        );
        let labels = wgpu::BindingType::Texture {
            sample_type: wgpu::TextureSampleType::Uint,
            view_dimension: wgpu::TextureViewDimension::D2,
            multisampled: false,
        };
        let histogram_layout = bind_group_layout(
            device,
            "class histogram",
            cs,
            &[
                (cs, labels),
                (cs, storage(true, 4)),
                (cs, storage(true, rect_size)),
                (cs, storage(false, COUNTS_STRIDE)),
            ],
        );
        let module = |label: &'static str, file: &str| {
            device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(Cow::Owned(shader_source(file))),
            })
        };
        let setup_module = module(
            "capsule_setup.wgsl",
            include_str!("../shaders/capsule_setup.wgsl"),
        );
        let raster_module = module(
            "label_raster.wgsl",
            include_str!("../shaders/label_raster.wgsl"),
        );
        let histogram_module = module(
            "class_histogram.wgsl",
            include_str!("../shaders/class_histogram.wgsl"),
        );
        let pipeline_layout = |label: &'static str, bind: &wgpu::BindGroupLayout| {
            device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(label),
                bind_group_layouts: &[Some(bind)],
                immediate_size: 0,
            })
        };
        let setup_pipeline_layout = pipeline_layout("capsule setup", &setup_layout);
        let setup = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("capsule setup"),
            layout: Some(&setup_pipeline_layout),
            module: &setup_module,
            entry_point: Some("cs_main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let raster_pipeline_layout = pipeline_layout("label raster", &raster_layout);
        let histogram_pipeline_layout = pipeline_layout("class histogram", &histogram_layout);
        let raster = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("label raster"),
            layout: Some(&raster_pipeline_layout),
            vertex: wgpu::VertexState {
                module: &raster_module,
                entry_point: Some("vs_main"),
                compilation_options: Default::default(),
                buffers: &[],
            },
            primitive: wgpu::PrimitiveState {
                topology: wgpu::PrimitiveTopology::TriangleStrip,
                cull_mode: None,
                ..Default::default()
            },
            depth_stencil: Some(wgpu::DepthStencilState {
                format: DEPTH_FORMAT,
                depth_write_enabled: Some(true),
                // Strictly nearer replaces: exact ties keep the lower index.
                depth_compare: Some(wgpu::CompareFunction::Less),
                stencil: Default::default(),
                bias: Default::default(),
            }),
            multisample: Default::default(),
            fragment: Some(wgpu::FragmentState {
                module: &raster_module,
                entry_point: Some("fs_main"),
                compilation_options: Default::default(),
                targets: &[Some(wgpu::ColorTargetState {
                    format: LABEL_FORMAT,
                    blend: None,
                    write_mask: wgpu::ColorWrites::ALL,
                })],
            }),
            multiview_mask: None,
            cache: None,
        });
        let histogram = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("class histogram"),
            layout: Some(&histogram_pipeline_layout),
            module: &histogram_module,
            entry_point: Some("cs_main"),
            // The shader zeroes its histogram itself.
            compilation_options: wgpu::PipelineCompilationOptions {
                zero_initialize_workgroup_memory: false,
                ..Default::default()
            },
            cache: None,
        });
        Self {
            setup,
            setup_layout,
            raster,
            raster_layout,
            histogram,
            histogram_layout,
        }
    }
}

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

    /// As [`Self::new`] with explicit settings. Compiles the two pipelines.
    ///
    /// # Errors
    /// [`LabelError::InvalidSetting`] for `in_flight = 0` or a skeleton
    /// without capsules; [`GpuError::CapsuleLabel`] for a body-part label
    /// outside `1..=C`; [`GpuError::DeviceLimit`] when an atlas of at most
    /// `max_atlas_side` (and the device's `max_texture_dimension_2d`) cannot
    /// hold one offset step of tiles (16 on most devices); [`GpuError::Wgpu`]
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
        let limits = device.limits();
        let (w, h) = (camera.width(), camera.height());
        let side = settings.max_atlas_side.min(limits.max_texture_dimension_2d);
        let fit = u64::from(side / w) * u64::from(side / h);
        let max_tiles = fit
            .min(settings.max_tiles_per_pass.map_or(u64::MAX, |t| t as u64))
            .min(u64::from(limits.max_compute_workgroups_per_dimension))
            .min(u64::from(u32::MAX));
        if max_tiles == 0 {
            return Err(GpuError::DeviceLimit {
                what: "label atlas (tiles per pass)",
                needed: 1,
                limit: 0,
            });
        }
        let raster_camera = camera.raster();
        let (pipelines, uniforms, observed, capsule_table) =
            scoped(&device, "building the pipelines", || {
                let pipelines = Pipelines::new(&device);
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
                Ok((pipelines, uniforms, observed, capsule_table))
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
            max_tiles: max_tiles as u32,
            atlas_side: side,
            pipelines,
            uniforms,
            observed,
            capsule_table,
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
            self.state
                .get_mut()
                .unwrap_or_else(|e| e.into_inner())
                .uniforms_stale = true;
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
    /// The most tiles (particles) one render + compute pass handles; larger
    /// batches run `⌈N / tiles⌉` passes over the same atlas.
    pub fn max_tiles_per_pass(&self) -> usize {
        self.max_tiles as usize
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
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
        let dof = self.skeleton.dof();
        let (view, state) = self.split();
        let ticket = view.submit(state, obs, states, dof, Poses::States)?;
        view.collect(state, ticket)?;
        Ok(&state.results)
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
        let (view, state) = self.split();
        view.submit(state, obs, states, dof, Poses::Posed(fk))
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
        let (view, state) = self.split();
        view.submit(state, obs, states, dof, Poses::States)
    }

    /// Waits for the batch of `ticket` and reads it back: counts, `F` and
    /// log-likelihoods, valid until the next `collect` or `evaluate`.
    ///
    /// # Errors
    /// [`GpuError::UnknownTicket`] for a ticket not in flight here;
    /// [`GpuError::DeviceLost`] when the device was lost before the batch
    /// finished; [`GpuError::BufferMap`] when the readback failed otherwise.
    pub fn collect(&mut self, ticket: Ticket) -> Result<&Evaluation> {
        let (view, state) = self.split();
        view.collect(state, ticket)?;
        Ok(&state.results)
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
        let (_, state) = self.split();
        for slot in &mut state.slots {
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
    /// [`labels::CpuLikelihood::render_tiles`]. A diagnostic: it reads the
    /// whole atlas back through a buffer allocated for the call.
    ///
    /// # Errors
    /// As [`Self::evaluate`] without the observation checks.
    pub fn render_tiles(&mut self, states: &[f64]) -> Result<Vec<u8>> {
        let (w, h) = (self.camera.width(), self.camera.height());
        let px = w as usize * h as usize;
        let mut tiles = vec![0u8; states.len() / self.skeleton.dof().max(1) * px];
        let row_bytes = |atlas: &AtlasLayout| atlas.width.div_ceil(256) * 256;
        self.diagnose(
            states,
            |view, encoder, res, count| {
                view.encode_raster(encoder, res, count);
                let atlas = res.atlas;
                let readback = view.readback_buffer(
                    "atlas readback",
                    u64::from(row_bytes(&atlas)) * u64::from(atlas.height),
                )?;
                encoder.copy_texture_to_buffer(
                    wgpu::TexelCopyTextureInfo {
                        texture: &res.atlas_texture,
                        mip_level: 0,
                        origin: wgpu::Origin3d::ZERO,
                        aspect: wgpu::TextureAspect::All,
                    },
                    wgpu::TexelCopyBufferInfo {
                        buffer: &readback,
                        layout: wgpu::TexelCopyBufferLayout {
                            offset: 0,
                            bytes_per_row: Some(row_bytes(&atlas)),
                            rows_per_image: Some(atlas.height),
                        },
                    },
                    wgpu::Extent3d {
                        width: atlas.width,
                        height: atlas.height,
                        depth_or_array_layers: 1,
                    },
                );
                Ok(readback)
            },
            |atlas, range, data| {
                let row_bytes = row_bytes(atlas);
                for t in 0..range.len() {
                    let tx = (t as u32 % atlas.columns) * w;
                    let ty = (t as u32 / atlas.columns) * h;
                    let tile = &mut tiles[(range.start + t) * px..(range.start + t + 1) * px];
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
    /// rectangles (`N × K`, as [`labels::raster::capsule_rect`] gives them on
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
            |view, encoder, res, count| {
                let m = count as u64;
                let readback = view.readback_buffer("rectangle readback", m * (kb + rect))?;
                encoder.copy_buffer_to_buffer(&res.capsule_rects, 0, &readback, 0, m * kb);
                encoder.copy_buffer_to_buffer(&res.tile_rects, 0, &readback, m * kb, m * rect);
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

    /// Runs the setup pass over `states` pass by pass; `encode` records,
    /// after it, what to read back from the pass's resources into a buffer
    /// it allocates, and `consume` reads that buffer's bytes for the pass's
    /// particles. Each pass is submitted and read back before the next.
    fn diagnose(
        &mut self,
        states: &[f64],
        mut encode: impl FnMut(
            &View<'_>,
            &mut wgpu::CommandEncoder,
            &Resources,
            usize,
        ) -> Result<wgpu::Buffer>,
        mut consume: impl FnMut(&AtlasLayout, std::ops::Range<usize>, &[u8]),
    ) -> Result<()> {
        let dof = self.skeleton.dof();
        let (view, state) = self.split();
        let device = view.device;
        let n = check_states(view.skeleton, states, dof)?;
        view.ensure_resources(state, n)?;
        let per_pass = state
            .resources
            .as_ref()
            .map_or(1, |r| r.atlas.tiles as usize);
        for c in 0..n.div_ceil(per_pass) {
            let range = c * per_pass..((c + 1) * per_pass).min(n);
            view.prepare_chunk(
                state,
                &states[range.start * dof..range.end * dof],
                Poses::States,
                range.start,
            )?;
            let res = state.resources.as_ref().expect("resources were ensured");
            view.upload_chunk(res, state);
            let mut encoder = device.create_command_encoder(&Default::default());
            view.encode_setup(&mut encoder, res, range.len());
            let readback = encode(&view, &mut encoder, res, range.len())?;
            let submission = view.queue.submit([encoder.finish()]);
            let mapped = map_for_reading(&readback, u64::MAX);
            wait_mapped(
                device,
                submission,
                &mapped,
                "diagnostic",
                "reading a pass back",
            )?;
            read_mapped(&readback, .., "reading a pass back", |data| {
                consume(&res.atlas, range, data)
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
            layout: &self.layout,
            max_tiles: self.max_tiles,
            atlas_side: self.atlas_side,
        }
    }

    /// [`Self::view`] and the state, borrowed apart.
    fn split(&mut self) -> (View<'_>, &mut State) {
        let Self {
            device,
            queue,
            skeleton,
            raster_camera,
            model,
            label_map,
            layout,
            max_tiles,
            atlas_side,
            pipelines,
            uniforms,
            observed,
            capsule_table,
            state,
            ..
        } = self;
        let view = View {
            device,
            queue,
            model,
            label_map,
            skeleton,
            camera: raster_camera,
            pipelines,
            uniforms,
            observed,
            capsule_table,
            layout,
            max_tiles: *max_tiles,
            atlas_side: *atlas_side,
        };
        (view, state.get_mut().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Starts mapping `buffer[..bytes]` (`u64::MAX`: all of it) for reading;
/// the callback records the outcome in the returned cell.
fn map_for_reading(buffer: &wgpu::Buffer, bytes: u64) -> MapResult {
    let mapped: MapResult = Arc::default();
    let flag = mapped.clone();
    let on_mapped = move |r: std::result::Result<(), wgpu::BufferAsyncError>| {
        *flag.lock().unwrap_or_else(|e| e.into_inner()) = Some(r.map_err(|e| e.to_string()));
    };
    if bytes == u64::MAX {
        buffer.slice(..).map_async(wgpu::MapMode::Read, on_mapped);
    } else {
        buffer
            .slice(..bytes)
            .map_async(wgpu::MapMode::Read, on_mapped);
    }
    mapped
}

/// How long [`wait_mapped`] waits for a map callback after its submission
/// has finished: the callback may run on another thread that polls the
/// same device (Bevy's renderer, when the device is shared), a moment later.
const MAP_CALLBACK_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Waits for `submission` and for the map callback of its readback buffer.
///
/// wgpu runs map callbacks inside whichever `poll` (or `submit`) finds them
/// ready, on whichever thread: on a device shared with a renderer its render
/// thread may take the callback just before this thread's `poll(Wait)`
/// returns, and run it a moment later. So when the poll succeeded and the
/// callback has not yet reported, this keeps polling (without blocking)
/// until it does, for at most [`MAP_CALLBACK_GRACE`].
fn wait_mapped(
    device: &wgpu::Device,
    submission: wgpu::SubmissionIndex,
    mapped: &MapResult,
    what: &'static str,
    operation: &'static str,
) -> Result<()> {
    let poll = device.poll(wgpu::PollType::Wait {
        submission_index: Some(submission),
        timeout: None,
    });
    let status = || mapped.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut seen = status();
    if poll.is_ok() && seen.is_none() {
        let deadline = std::time::Instant::now() + MAP_CALLBACK_GRACE;
        while seen.is_none() && std::time::Instant::now() < deadline {
            if let Err(e) = device.poll(wgpu::PollType::Poll) {
                return Err(GpuError::DeviceLost {
                    operation,
                    message: e.to_string(),
                });
            }
            std::thread::yield_now();
            seen = status();
        }
    }
    match (poll, seen) {
        (_, Some(Ok(()))) => Ok(()),
        (Err(e), _) => Err(GpuError::DeviceLost {
            operation,
            message: e.to_string(),
        }),
        (Ok(_), Some(Err(message))) => Err(GpuError::BufferMap { what, message }),
        (Ok(_), None) => Err(GpuError::DeviceLost {
            operation,
            message: format!(
                "the batch finished but its readback was not mapped within {} s",
                MAP_CALLBACK_GRACE.as_secs()
            ),
        }),
    }
}

/// Reads the mapped `range` of `buffer` with `read`, then unmaps it.
///
/// wgpu treats reading a buffer whose device was destroyed or lost after
/// the map succeeded as a fatal error and panics; here that panic becomes
/// [`GpuError::DeviceLost`], so that the caller can fall back to the CPU.
fn read_mapped<T>(
    buffer: &wgpu::Buffer,
    range: impl std::ops::RangeBounds<wgpu::BufferAddress>,
    operation: &'static str,
    read: impl FnOnce(&[u8]) -> T,
) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let out = read(&buffer.slice(range).get_mapped_range());
        buffer.unmap();
        out
    }))
    .map_err(|panic| GpuError::DeviceLost {
        operation,
        message: panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("reading the mapped buffer failed")
            .lines()
            .next()
            .unwrap_or_default()
            .to_string(),
    })
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
    layout: &'a CapsuleLayout,
    max_tiles: u32,
    atlas_side: u32,
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
        let tiles = state
            .resources
            .as_ref()
            .map_or(1, |r| r.atlas.tiles as usize);
        // One submission per pass: the GPU works on pass c while the CPU
        // prepares pass c + 1 (whose upload wgpu orders after pass c). Every
        // pass writes all its tiles' bins and copies them to its place in
        // the staging buffer, so the counts need no clearing.
        let mut submission = None;
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
            view.encode_raster(&mut encoder, res, range.len());
            view.encode_histogram(&mut encoder, res, range.len());
            let staging = state.slots[slot]
                .staging
                .as_ref()
                .expect("staging was sized");
            encoder.copy_buffer_to_buffer(
                &res.counts,
                0,
                staging,
                range.start as u64 * COUNTS_STRIDE,
                range.len() as u64 * COUNTS_STRIDE,
            );
            submission = Some(queue.submit([encoder.finish()]));
        }
        let submission = submission.expect("a batch has at least one pass");
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
            submission,
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
        if let Err(e) = wait_mapped(
            device,
            flight.submission,
            &flight.mapped,
            "counts",
            "collecting a batch",
        ) {
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

    /// Makes sure the atlas and per-pass buffers hold `min(n, max_tiles)`
    /// particles; grows them (and rewrites the uniforms) only when they do
    /// not.
    fn ensure_resources(&self, state: &mut State, n: usize) -> Result<()> {
        let need = n.min(self.max_tiles as usize);
        if let Some(res) = state
            .resources
            .as_ref()
            .filter(|r| r.atlas.tiles as usize >= need)
        {
            if state.uniforms_stale {
                self.write_uniforms(&res.atlas);
                state.uniforms_stale = false;
            }
            return Ok(());
        }
        // Drop the old atlas and buffers first (batches in flight keep
        // theirs alive until they finish).
        state.resources = None;
        let resources = scoped(self.device, "allocating the atlas and buffers", || {
            let resources = self.create_resources(need)?;
            self.write_uniforms(&resources.atlas);
            Ok(resources)
        })?;
        state.uniforms_stale = false;
        state.resources = Some(resources);
        Ok(())
    }

    /// A bind group of `layout` whose binding 0 is the [`RasterUniforms`]
    /// (every shader's) and binding `i ≥ 1` is `resources[i − 1]`, as
    /// [`bind_group_layout`] lays it out.
    fn bind_group(
        &self,
        label: &'static str,
        layout: &wgpu::BindGroupLayout,
        resources: &[wgpu::BindingResource<'_>],
    ) -> wgpu::BindGroup {
        let entries: Vec<wgpu::BindGroupEntry<'_>> =
            std::iter::once(self.uniforms.as_entire_binding())
                .chain(resources.iter().cloned())
                .zip(0u32..)
                .map(|(resource, binding)| wgpu::BindGroupEntry { binding, resource })
                .collect();
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(label),
            layout,
            entries: &entries,
        })
    }

    fn write_uniforms(&self, atlas: &AtlasLayout) {
        let uniforms = RasterUniforms::new(self.camera, self.layout, atlas, self.label_map);
        self.queue
            .write_buffer(self.uniforms, 0, bytemuck::bytes_of(&uniforms));
    }

    /// The atlas, per-pass buffers and bind groups for passes of at least
    /// `need` particles (rounded up to whole setup workgroups, within the
    /// device's maximum).
    fn create_resources(&self, need: usize) -> Result<Resources> {
        let device = self.device;
        let limits = device.limits();
        let group = WORKGROUP_SIZE as usize;
        let tiles = (need.div_ceil(group) * group).min(self.max_tiles as usize) as u32;
        let (w, h) = (self.camera.width, self.camera.height);
        let columns = tiles.min(self.atlas_side / w);
        let rows = tiles.div_ceil(columns);
        let atlas = AtlasLayout {
            tiles,
            columns,
            width: columns * w,
            height: rows * h,
        };
        let t = u64::from(tiles);
        let k = self.layout.capsules().len() as u64;
        let p = self.layout.points().len() as u64;
        let point_bytes = t * p * size_of::<[f32; 3]>() as u64;
        let capsule_bytes = t * k * size_of::<CapsuleInstance>() as u64;
        let rect_bytes = size_of::<GpuRect>() as u64;
        for (what, size) in [
            ("point buffer", point_bytes),
            ("capsule buffer", capsule_bytes),
            ("capsule rectangle buffer", t * k * rect_bytes),
            ("count buffer", t * COUNTS_STRIDE),
        ] {
            let limit = limits
                .max_buffer_size
                .min(limits.max_storage_buffer_binding_size);
            if size > limit {
                return Err(GpuError::DeviceLimit {
                    what,
                    needed: size,
                    limit,
                });
            }
        }
        let storage = |label: &'static str, size: u64, extra: wgpu::BufferUsages| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: wgpu::BufferUsages::STORAGE | extra,
                mapped_at_creation: false,
            })
        };
        let points = storage("end points", point_bytes, wgpu::BufferUsages::COPY_DST);
        let capsules = storage("capsules", capsule_bytes, wgpu::BufferUsages::empty());
        let capsule_rects = storage(
            "capsule rectangles",
            t * k * rect_bytes,
            wgpu::BufferUsages::COPY_SRC,
        );
        let tile_rects = storage(
            "tile rectangles",
            t * rect_bytes,
            wgpu::BufferUsages::COPY_SRC,
        );
        let counts = storage(
            "class counts",
            t * COUNTS_STRIDE,
            wgpu::BufferUsages::COPY_SRC,
        );
        let extent = wgpu::Extent3d {
            width: atlas.width,
            height: atlas.height,
            depth_or_array_layers: 1,
        };
        let texture =
            |label: &'static str, format: wgpu::TextureFormat, usage: wgpu::TextureUsages| {
                device.create_texture(&wgpu::TextureDescriptor {
                    label: Some(label),
                    size: extent,
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format,
                    usage,
                    view_formats: &[],
                })
            };
        let atlas_texture = texture(
            "label atlas",
            LABEL_FORMAT,
            wgpu::TextureUsages::RENDER_ATTACHMENT
                | wgpu::TextureUsages::TEXTURE_BINDING
                | wgpu::TextureUsages::COPY_SRC,
        );
        let depth = texture(
            "label atlas depth",
            DEPTH_FORMAT,
            wgpu::TextureUsages::RENDER_ATTACHMENT,
        );
        let atlas_view = atlas_texture.create_view(&Default::default());
        let depth_view = depth.create_view(&Default::default());
        let setup_bind = self.bind_group(
            "capsule setup",
            &self.pipelines.setup_layout,
            &[
                self.capsule_table.as_entire_binding(),
                points.as_entire_binding(),
                capsules.as_entire_binding(),
                capsule_rects.as_entire_binding(),
                tile_rects.as_entire_binding(),
            ],
        );
        let raster_bind = self.bind_group(
            "label raster",
            &self.pipelines.raster_layout,
            &[
                capsules.as_entire_binding(),
                capsule_rects.as_entire_binding(),
            ],
        );
        let histogram_bind = self.bind_group(
            "class histogram",
            &self.pipelines.histogram_layout,
            &[
                wgpu::BindingResource::TextureView(&atlas_view),
                self.observed.as_entire_binding(),
                tile_rects.as_entire_binding(),
                counts.as_entire_binding(),
            ],
        );
        Ok(Resources {
            atlas,
            atlas_texture,
            atlas_view,
            depth_view,
            points,
            capsule_rects,
            tile_rects,
            counts,
            setup_bind,
            raster_bind,
            histogram_bind,
        })
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
            .write_buffer(&res.points, 0, bytemuck::cast_slice(&state.points));
    }

    /// The setup pass (capsules and rectangles from the end points) for
    /// the pass's first `count` particles.
    fn encode_setup(&self, encoder: &mut wgpu::CommandEncoder, res: &Resources, count: usize) {
        encode_compute(
            encoder,
            "capsule setup",
            &self.pipelines.setup,
            &res.setup_bind,
            (count as u32).div_ceil(WORKGROUP_SIZE),
        );
    }

    /// The render pass of the pass's first `count` particles.
    fn encode_raster(&self, encoder: &mut wgpu::CommandEncoder, res: &Resources, count: usize) {
        let k = self.layout.capsules().len() as u64;
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("label raster"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: &res.atlas_view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color::TRANSPARENT),
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &res.depth_view,
                depth_ops: Some(wgpu::Operations {
                    load: wgpu::LoadOp::Clear(1.0),
                    store: wgpu::StoreOp::Discard,
                }),
                stencil_ops: None,
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        pass.set_pipeline(&self.pipelines.raster);
        pass.set_bind_group(0, &res.raster_bind, &[]);
        // Instance i = tile i / K, capsule i % K: capsules in index order.
        pass.draw(0..4, 0..(count as u64 * k) as u32);
    }

    /// The histogram pass of the pass's first `count` particles.
    fn encode_histogram(&self, encoder: &mut wgpu::CommandEncoder, res: &Resources, count: usize) {
        encode_compute(
            encoder,
            "class histogram",
            &self.pipelines.histogram,
            &res.histogram_bind,
            count as u32,
        );
    }
}

/// A compute pass of `pipeline` with `bind` as its bind group 0, over
/// `workgroups` workgroups.
fn encode_compute(
    encoder: &mut wgpu::CommandEncoder,
    label: &'static str,
    pipeline: &wgpu::ComputePipeline,
    bind: &wgpu::BindGroup,
    workgroups: u32,
) {
    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some(label),
        timestamp_writes: None,
    });
    pass.set_pipeline(pipeline);
    pass.set_bind_group(0, bind, &[]);
    pass.dispatch_workgroups(workgroups, 1, 1);
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
    fn uniform_and_storage_mirrors_have_the_wgsl_sizes() {
        // WGSL: three vec4<f32> (48) + 4 f32 + 4 u32 + 2 u32 + f32 + u32
        // + vec4<u32> (at 96, 16-aligned) + u32, rounded up to 16.
        assert_eq!(size_of::<RasterUniforms>(), 128);
        assert_eq!(std::mem::offset_of!(RasterUniforms, label_map), 96);
        assert_eq!(std::mem::offset_of!(RasterUniforms, points_per_pose), 112);
        assert_eq!(size_of::<CapsuleRef>(), 16);
        assert_eq!(align_of::<RasterUniforms>(), 4);
        assert_eq!(std::mem::offset_of!(RasterUniforms, fx), 48);
        assert_eq!(std::mem::offset_of!(RasterUniforms, width), 64);
        assert_eq!(std::mem::offset_of!(RasterUniforms, atlas_width), 80);
        assert_eq!(std::mem::offset_of!(RasterUniforms, depth_scale), 88);
        assert_eq!(size_of::<GpuRect>(), 16);
        assert_eq!(size_of::<CapsuleInstance>(), 32);
        assert_eq!(COUNTS_STRIDE as usize, 2 * CLASSES * size_of::<u32>());
    }

    #[test]
    fn label_maps_pack_four_classes_per_word() {
        let words = pack_label_map(&IDENTITY_LABEL_MAP);
        for l in 1..=CLASSES as u32 {
            let i = (l - 1) as usize;
            assert_eq!((words[i / 4] >> (8 * (i % 4))) & 0xff, l);
        }
        let mut map = [0u8; CLASSES];
        map[CLASSES - 1] = 3;
        let words = pack_label_map(&map);
        let i = CLASSES - 1;
        assert_eq!(words[i / 4], 3 << (8 * (i % 4)));
    }

    #[test]
    fn depth_scale_is_an_exact_power_of_two() {
        assert_eq!(DEPTH_SCALE, 2f32.powi(-20));
        for t in [1e-3f32, 0.7, 3.5, 1000.0, 1_048_575.9] {
            let depth = t * DEPTH_SCALE;
            assert_eq!(depth / DEPTH_SCALE, t);
            assert!(depth < 1.0);
            // Neighbouring f32 depths stay distinct and ordered.
            assert!(t.next_up() * DEPTH_SCALE > depth);
            assert!(t.next_down() * DEPTH_SCALE < depth);
        }
    }

    #[test]
    fn empty_rects_become_zero() {
        let e = PixelRect {
            x0: 5,
            y0: 3,
            x1: 2,
            y1: 9,
        };
        assert_eq!(GpuRect::from(e), GpuRect::default());
        let r = PixelRect {
            x0: 1,
            y0: 2,
            x1: 3,
            y1: 4,
        };
        assert_eq!(
            GpuRect::from(r),
            GpuRect {
                x0: 1,
                y0: 2,
                x1: 3,
                y1: 4
            }
        );
    }
}

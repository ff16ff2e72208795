//! The shaders, their bind group layouts and pipelines, and the error
//! scopes they are built in.

use std::borrow::Cow;
use std::num::NonZeroU64;
use std::sync::Mutex;

use labels::CLASSES;
use labels::{CapsuleInstance, CapsuleRef};

use super::uniforms::{COUNTS_STRIDE, GpuRect, RasterUniforms};
use super::{COUNT_WORKGROUP_SIZE, RasterPath, WORKGROUP_SIZE};
use crate::error::{GpuError, Result};

pub(crate) const LABEL_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::R8Uint;
pub(crate) const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

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
pub(crate) fn scoped<T>(
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
/// `View::bind_group` fills it.
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

/// A shader as compiled: the constants (K = `capsules` per pose among
/// them), `raster_common.wgsl`, then `file`.
fn shader_source(file: &str, capsules: usize) -> String {
    format!(
        "const CLASSES: u32 = {CLASSES}u;\nconst WORKGROUP_SIZE: u32 = {WORKGROUP_SIZE}u;\n\
         const COUNT_WORKGROUP_SIZE: u32 = {COUNT_WORKGROUP_SIZE}u;\n\
         const CAPSULES: u32 = {capsules}u;\n{}\n{file}",
        include_str!("../../shaders/raster_common.wgsl")
    )
}

/// A counting pass's `file` after `class_counts.wgsl`, the workgroup class
/// histogram the two counting passes share.
fn with_class_counts(file: &str) -> String {
    format!(
        "{}\n{file}",
        include_str!("../../shaders/class_counts.wgsl")
    )
}

/// The pipelines of one [`RasterPath`] after the shared setup pass.
#[derive(Debug)]
pub(crate) enum PathPipelines {
    /// `raster_count.wgsl`: raster and histograms in one compute pass.
    Compute {
        count: wgpu::ComputePipeline,
        layout: wgpu::BindGroupLayout,
        module: wgpu::ShaderModule,
        pipeline_layout: wgpu::PipelineLayout,
        /// The same pass writing label tiles too (`WRITE_LABELS`), built
        /// on the first [`crate::GpuLikelihood::render_tiles`].
        with_labels: Option<wgpu::ComputePipeline>,
    },
    /// `label_raster.wgsl` into an atlas, then `class_histogram.wgsl`.
    RenderPass {
        raster: wgpu::RenderPipeline,
        raster_layout: wgpu::BindGroupLayout,
        histogram: wgpu::ComputePipeline,
        histogram_layout: wgpu::BindGroupLayout,
    },
}

#[derive(Debug)]
pub(crate) struct Pipelines {
    pub setup: wgpu::ComputePipeline,
    pub setup_layout: wgpu::BindGroupLayout,
    pub path: PathPipelines,
}

fn compute_pipeline(
    device: &wgpu::Device,
    label: &'static str,
    layout: &wgpu::PipelineLayout,
    module: &wgpu::ShaderModule,
    constants: &[(&str, f64)],
) -> wgpu::ComputePipeline {
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(label),
        layout: Some(layout),
        module,
        entry_point: Some("cs_main"),
        // The shaders zero their workgroup histograms themselves.
        compilation_options: wgpu::PipelineCompilationOptions {
            constants,
            zero_initialize_workgroup_memory: false,
        },
        cache: None,
    })
}

impl Pipelines {
    /// The setup pass and `path`'s pipelines for skeletons of `capsules`
    /// capsules per pose.
    pub(crate) fn new(device: &wgpu::Device, path: RasterPath, capsules: usize) -> Self {
        let cs = wgpu::ShaderStages::COMPUTE;
        let capsule_size = size_of::<CapsuleInstance>() as u64;
        let rect_size = size_of::<GpuRect>() as u64;
        let module = |label: &'static str, file: &str| {
            device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(Cow::Owned(shader_source(file, capsules))),
            })
        };
        let pipeline_layout = |label: &'static str, bind: &wgpu::BindGroupLayout| {
            device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(label),
                bind_group_layouts: &[Some(bind)],
                immediate_size: 0,
            })
        };
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
        let setup_module = module(
            "capsule_setup.wgsl",
            include_str!("../../shaders/capsule_setup.wgsl"),
        );
        let setup = compute_pipeline(
            device,
            "capsule setup",
            &pipeline_layout("capsule setup", &setup_layout),
            &setup_module,
            &[],
        );
        let path = match path {
            RasterPath::Compute => {
                let layout = bind_group_layout(
                    device,
                    "raster and count",
                    cs,
                    &[
                        (cs, storage(true, capsule_size)),
                        (cs, storage(true, rect_size)),
                        (cs, storage(true, rect_size)),
                        (cs, storage(true, 4)),
                        (cs, storage(false, COUNTS_STRIDE)),
                        (cs, storage(false, 4)),
                    ],
                );
                let module = module(
                    "raster_count.wgsl",
                    &with_class_counts(include_str!("../../shaders/raster_count.wgsl")),
                );
                let pipeline_layout = pipeline_layout("raster and count", &layout);
                let count =
                    compute_pipeline(device, "raster and count", &pipeline_layout, &module, &[]);
                PathPipelines::Compute {
                    count,
                    layout,
                    module,
                    pipeline_layout,
                    with_labels: None,
                }
            }
            RasterPath::RenderPass => Self::render_pass(
                device,
                &module(
                    "label_raster.wgsl",
                    include_str!("../../shaders/label_raster.wgsl"),
                ),
                &module(
                    "class_histogram.wgsl",
                    &with_class_counts(include_str!("../../shaders/class_histogram.wgsl")),
                ),
            ),
        };
        Self {
            setup,
            setup_layout,
            path,
        }
    }

    fn render_pass(
        device: &wgpu::Device,
        raster_module: &wgpu::ShaderModule,
        histogram_module: &wgpu::ShaderModule,
    ) -> PathPipelines {
        let vf = wgpu::ShaderStages::VERTEX | wgpu::ShaderStages::FRAGMENT;
        let vs = wgpu::ShaderStages::VERTEX;
        let cs = wgpu::ShaderStages::COMPUTE;
        let capsule_size = size_of::<CapsuleInstance>() as u64;
        let rect_size = size_of::<GpuRect>() as u64;
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
        let pipeline_layout = |label: &'static str, bind: &wgpu::BindGroupLayout| {
            device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(label),
                bind_group_layouts: &[Some(bind)],
                immediate_size: 0,
            })
        };
        let raster_pipeline_layout = pipeline_layout("label raster", &raster_layout);
        let raster = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("label raster"),
            layout: Some(&raster_pipeline_layout),
            vertex: wgpu::VertexState {
                module: raster_module,
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
                module: raster_module,
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
        let histogram = compute_pipeline(
            device,
            "class histogram",
            &pipeline_layout("class histogram", &histogram_layout),
            histogram_module,
            &[],
        );
        PathPipelines::RenderPass {
            raster,
            raster_layout,
            histogram,
            histogram_layout,
        }
    }

    /// Builds the compute path's label-writing variant if it is not built
    /// yet (a no-op on the render-pass path).
    pub(crate) fn ensure_label_writer(&mut self, device: &wgpu::Device) -> Result<()> {
        if let PathPipelines::Compute {
            module,
            pipeline_layout,
            with_labels,
            ..
        } = &mut self.path
            && with_labels.is_none()
        {
            let pipeline = scoped(device, "building the label-writing pipeline", || {
                Ok(compute_pipeline(
                    device,
                    "raster and count, with labels",
                    pipeline_layout,
                    module,
                    &[("WRITE_LABELS", 1.0)],
                ))
            })?;
            *with_labels = Some(pipeline);
        }
        Ok(())
    }
}

//! The GPU back end: BlazePose run by WGSL compute kernels of our own on
//! wgpu (the workspace's wgpu, the one Bevy uses, so the app can share its
//! device).
//!
//! The ONNX file is read by tract as for the CPU back end, decluttered to
//! tract's typed operators, and lowered ([`program`]) to one kernel launch
//! per operator, with each convolution's bias, residual add and activation
//! fused into its epilogue (87 launches for BlazePose full with its heatmap
//! branch, 75 without). Weights are uploaded once, repacked for the kernels. An
//! inference is one `write_buffer` of the crop, one command encoder with one
//! compute pass, one copy of the output tensors into a staging buffer and
//! one map: nothing is allocated on the GPU per frame.
//!
//! Why kernels of our own rather than burn's wgpu back end importing the
//! ONNX: burn and cubecl would add minutes to a clean CI build for eleven
//! operators (see docs/keypoints.md), and tract already parses the model.

mod device;
mod kernels;
mod program;

pub use device::{GpuDevice, describe_adapter};

use std::sync::Mutex;
use std::time::Duration;

use kernels::{Kernel, UNIFORM_SLOT};
use program::Program;
use tract_onnx::prelude::*;

use crate::{Error, Result};

/// How long an inference may wait for the GPU before it is an error.
const TIMEOUT: Duration = Duration::from_secs(10);

/// A lowered network on a device, ready to run. One inference at a time
/// (a lock around the arena); share it behind an `Arc`.
pub(crate) struct GpuGraph {
    device: wgpu::Device,
    queue: wgpu::Queue,
    pipelines: Vec<(Kernel, wgpu::ComputePipeline)>,
    bind_group: wgpu::BindGroup,
    arena: wgpu::Buffer,
    staging: wgpu::Buffer,
    /// (kernel, uniform offset, workgroups) per launch.
    launches: Vec<(Kernel, u32, (u32, u32))>,
    input: (usize, usize),
    outputs: Vec<(usize, usize)>,
    lock: Mutex<()>,
    adapter: String,
}

impl std::fmt::Debug for GpuGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuGraph")
            .field("adapter", &self.adapter)
            .field("launches", &self.launches.len())
            .finish()
    }
}

fn gpu_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Gpu(format!("{what}: {e}"))
}

impl GpuGraph {
    /// Lowers `model` and uploads it to `gpu`. Errors name an operator the
    /// kernels do not cover, or what the device refused.
    pub(crate) fn new(gpu: &GpuDevice, model: &TypedModel) -> Result<Self> {
        let program = Program::lower(model).map_err(|e| gpu_error("lowering", format!("{e:#}")))?;
        Self::from_program(gpu, &program)
    }

    fn from_program(gpu: &GpuDevice, program: &Program) -> Result<Self> {
        let device = &gpu.device;
        let limits = device.limits();
        let arena_bytes = (program.arena_len * 4) as u64;
        let consts_bytes = (program.consts.len() * 4) as u64;
        let largest = arena_bytes.max(consts_bytes);
        if largest > limits.max_storage_buffer_binding_size || largest > limits.max_buffer_size {
            return Err(Error::Gpu(format!(
                "the network needs a {largest}-byte storage buffer; the device allows {}",
                limits.max_storage_buffer_binding_size
            )));
        }
        let max_groups = limits.max_compute_workgroups_per_dimension;
        if let Some(s) = program
            .steps
            .iter()
            .find(|s| s.workgroups.0 > max_groups || s.workgroups.1 > max_groups)
        {
            return Err(Error::Gpu(format!(
                "node {} needs {:?} workgroups; the device allows {max_groups} per dimension",
                s.name, s.workgroups
            )));
        }
        // wgpu built without its `std` feature (as Bevy builds it) keeps one
        // error-scope stack per device, not per thread, so scopes pushed by
        // two threads at once trip its order check: our own constructions
        // take turns, and `run` pushes none.
        static BUILDING: Mutex<()> = Mutex::new(());
        let _turn = BUILDING.lock().unwrap_or_else(|p| p.into_inner());
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let storage = |read_only| wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        };
        let cs = wgpu::ShaderStages::COMPUTE;
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("keypoints network"),
            entries: &[
                wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: cs,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: true,
                        min_binding_size: wgpu::BufferSize::new(UNIFORM_SLOT as u64),
                    },
                    count: None,
                },
                wgpu::BindGroupLayoutEntry {
                    binding: 1,
                    visibility: cs,
                    ty: storage(false),
                    count: None,
                },
                wgpu::BindGroupLayoutEntry {
                    binding: 2,
                    visibility: cs,
                    ty: storage(true),
                    count: None,
                },
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("keypoints network"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let used: Vec<Kernel> = Kernel::ALL
            .into_iter()
            .filter(|k| program.steps.iter().any(|s| s.kernel == *k))
            .collect();
        let pipelines = used
            .iter()
            .map(|&k| {
                let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(k.name()),
                    source: wgpu::ShaderSource::Wgsl(k.source().into()),
                });
                let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(k.name()),
                    layout: Some(&pipeline_layout),
                    module: &module,
                    entry_point: Some("main"),
                    compilation_options: Default::default(),
                    cache: None,
                });
                (k, pipeline)
            })
            .collect();
        let buffer = |label, size: u64, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: size.max(16),
                usage,
                mapped_at_creation: false,
            })
        };
        use wgpu::BufferUsages as U;
        let arena = buffer(
            "keypoints arena",
            arena_bytes,
            U::STORAGE | U::COPY_DST | U::COPY_SRC,
        );
        let consts = buffer("keypoints weights", consts_bytes, U::STORAGE | U::COPY_DST);
        gpu.queue
            .write_buffer(&consts, 0, bytemuck::cast_slice(&program.consts));
        let uniform_bytes: Vec<u8> = program
            .steps
            .iter()
            .flat_map(|s| s.uniform.iter().copied())
            .collect();
        let uniforms = buffer(
            "keypoints uniforms",
            uniform_bytes.len() as u64,
            U::UNIFORM | U::COPY_DST,
        );
        gpu.queue.write_buffer(&uniforms, 0, &uniform_bytes);
        let out_floats: usize = program.outputs.iter().map(|o| o.1).sum();
        let staging = buffer(
            "keypoints readback",
            (out_floats * 4) as u64,
            U::MAP_READ | U::COPY_DST,
        );
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("keypoints network"),
            layout: &layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer: &uniforms,
                        offset: 0,
                        size: wgpu::BufferSize::new(UNIFORM_SLOT as u64),
                    }),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: arena.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: consts.as_entire_binding(),
                },
            ],
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(gpu_error("building the network's pipelines", e));
        }
        let launches = program
            .steps
            .iter()
            .enumerate()
            .map(|(k, s)| (s.kernel, (k * UNIFORM_SLOT) as u32, s.workgroups))
            .collect();
        Ok(Self {
            device: device.clone(),
            queue: gpu.queue.clone(),
            pipelines,
            bind_group,
            arena,
            staging,
            launches,
            input: program.input,
            outputs: program.outputs.clone(),
            lock: Mutex::new(()),
            adapter: gpu.describe(),
        })
    }

    /// The adapter's one-line description.
    pub(crate) fn adapter(&self) -> &str {
        &self.adapter
    }

    /// Kernel launches per inference.
    pub(crate) fn launches(&self) -> usize {
        self.launches.len()
    }

    /// Runs the network on `input` (the model input's length); the output
    /// tensors, row-major, in the model's order.
    pub(crate) fn run(&self, input: &[f32]) -> Result<Vec<Vec<f32>>> {
        if input.len() != self.input.1 {
            return Err(Error::InputSize {
                len: input.len(),
                expected: self.input.1,
            });
        }
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.queue.write_buffer(
            &self.arena,
            (self.input.0 * 4) as u64,
            bytemuck::cast_slice(input),
        );
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("keypoints inference"),
            });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("keypoints network"),
                timestamp_writes: None,
            });
            let mut current = None;
            for &(kernel, offset, (x, y)) in &self.launches {
                if current != Some(kernel) {
                    let pipeline = &self
                        .pipelines
                        .iter()
                        .find(|(k, _)| *k == kernel)
                        .expect("a pipeline per kernel used")
                        .1;
                    pass.set_pipeline(pipeline);
                    current = Some(kernel);
                }
                pass.set_bind_group(0, &self.bind_group, &[offset]);
                pass.dispatch_workgroups(x, y, 1);
            }
        }
        let mut at = 0u64;
        for &(off, len) in &self.outputs {
            let bytes = (len * 4) as u64;
            encoder.copy_buffer_to_buffer(&self.arena, (off * 4) as u64, &self.staging, at, bytes);
            at += bytes;
        }
        let submission = self.queue.submit([encoder.finish()]);
        let (tx, rx) = std::sync::mpsc::channel();
        self.staging
            .slice(..at)
            .map_async(wgpu::MapMode::Read, move |r| {
                let _ = tx.send(r);
            });
        let polled = self.device.poll(wgpu::PollType::Wait {
            submission_index: Some(submission),
            timeout: Some(TIMEOUT),
        });
        polled.map_err(|e| gpu_error("waiting for the network", e))?;
        // On a device shared with a renderer, another thread's poll may run
        // the callback a moment after ours returns.
        let mapped = match rx.recv_timeout(TIMEOUT) {
            Ok(r) => r,
            Err(e) => return Err(gpu_error("reading the outputs back", e)),
        };
        mapped.map_err(|e| gpu_error("reading the outputs back", e))?;
        let outputs = {
            let view = self.staging.slice(..at).get_mapped_range();
            let floats: &[f32] = bytemuck::cast_slice(&view);
            let mut start = 0;
            self.outputs
                .iter()
                .map(|&(_, len)| {
                    let v = floats[start..start + len].to_vec();
                    start += len;
                    v
                })
                .collect()
        };
        self.staging.unmap();
        Ok(outputs)
    }
}

#[cfg(test)]
mod tests;

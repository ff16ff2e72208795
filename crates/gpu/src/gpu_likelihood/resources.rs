//! The per-pass GPU objects (buffers, the render-pass path's atlas, bind
//! groups), how many particles a pass holds, and the passes recorded over
//! them.

use labels::{CapsuleInstance, CapsuleLayout};

use super::pipelines::{DEPTH_FORMAT, LABEL_FORMAT, PathPipelines};
use super::uniforms::{COUNTS_STRIDE, GpuRect, PREPARED_CAPSULE_BYTES};
use super::{
    COMPUTE_TILES_PER_PASS, COUNT_WORKGROUP_SIZE, GpuSettings, RasterPath, View, WORKGROUP_SIZE,
};
use crate::error::{GpuError, Result};

/// How tiles sit in the render-pass path's atlas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AtlasLayout {
    pub columns: u32,
    pub width: u32,
    pub height: u32,
}

/// The render-pass path's label atlas and its bind groups.
#[derive(Debug)]
pub(crate) struct Atlas {
    pub layout: AtlasLayout,
    pub texture: wgpu::Texture,
    pub view: wgpu::TextureView,
    pub depth_view: wgpu::TextureView,
    pub raster_bind: wgpu::BindGroup,
    pub histogram_bind: wgpu::BindGroup,
}

/// What each [`RasterPath`] adds to the shared per-pass buffers.
#[derive(Debug)]
pub(crate) enum PathResources {
    Compute { count_bind: wgpu::BindGroup },
    RenderPass(Box<Atlas>),
}

/// GPU objects for one pass of `tiles` particles, reused by every pass;
/// rebuilt only when a batch needs larger passes.
#[derive(Debug)]
pub(crate) struct Resources {
    /// Particles per pass: what every per-pass buffer holds.
    pub tiles: u32,
    pub buffers: PassBuffers,
    pub setup_bind: wgpu::BindGroup,
    pub path: PathResources,
}

/// The per-pass buffers, of [`Resources::tiles`] particles each.
#[derive(Debug)]
pub(crate) struct PassBuffers {
    /// Uploaded: P end points (world, f32) per particle.
    pub points: wgpu::Buffer,
    /// Written by the setup pass: the K camera-space capsules per particle,
    /// their rectangles and each particle's union rectangle.
    pub capsules: wgpu::Buffer,
    pub capsule_rects: wgpu::Buffer,
    pub tile_rects: wgpu::Buffer,
    /// Written by the counting pass: 2·C class counts per particle.
    pub counts: wgpu::Buffer,
}

impl Resources {
    /// The render-pass path's atlas layout (`None` on the compute path).
    pub(super) fn atlas_layout(&self) -> Option<&AtlasLayout> {
        match &self.path {
            PathResources::RenderPass(atlas) => Some(&atlas.layout),
            PathResources::Compute { .. } => None,
        }
    }
}

/// Bytes per particle of each per-pass buffer, for the device-limit checks.
fn per_particle_bytes(layout: &CapsuleLayout) -> [(&'static str, u64); 4] {
    let k = layout.capsules().len() as u64;
    let p = layout.points().len() as u64;
    [
        ("point buffer", p * size_of::<[f32; 3]>() as u64),
        ("capsule buffer", k * size_of::<CapsuleInstance>() as u64),
        ("capsule rectangle buffer", k * size_of::<GpuRect>() as u64),
        ("count buffer", COUNTS_STRIDE),
    ]
}

/// Workgroup memory of `raster_count.wgsl` for K = `capsules` per pose:
/// the prepared capsules and their rectangles, the histogram, the union
/// rectangle and a capsule mask per block of a batch (32 capsules a word).
pub(crate) fn count_workgroup_bytes(capsules: u64) -> u64 {
    capsules * PREPARED_CAPSULE_BYTES
        + COUNTS_STRIDE
        + size_of::<GpuRect>() as u64
        + u64::from(COUNT_WORKGROUP_SIZE) * capsules.div_ceil(32) * 4
}

/// The most particles one pass may hold on `device` with `settings` for
/// images of `width × height` and the skeleton `layout`, and the largest
/// atlas side (render-pass path; 0 on the compute path).
///
/// The render-pass path is bounded by the tiles an atlas of at most
/// `max_atlas_side` (and the device's `max_texture_dimension_2d`) holds;
/// the compute path by [`COMPUTE_TILES_PER_PASS`] and needs its capsules in
/// workgroup memory. Both by `max_tiles_per_pass`, one dispatch's
/// workgroups and the largest storage buffer.
pub(crate) fn pass_capacity(
    device: &wgpu::Device,
    settings: &GpuSettings,
    width: u32,
    height: u32,
    layout: &CapsuleLayout,
) -> Result<(u32, u32)> {
    let limits = device.limits();
    let (fit, side) = match settings.raster {
        RasterPath::RenderPass => {
            let side = settings.max_atlas_side.min(limits.max_texture_dimension_2d);
            (u64::from(side / width) * u64::from(side / height), side)
        }
        RasterPath::Compute => {
            let needed = count_workgroup_bytes(layout.capsules().len() as u64);
            let limit = u64::from(limits.max_compute_workgroup_storage_size);
            if needed > limit {
                return Err(GpuError::DeviceLimit {
                    what: "workgroup memory of the compute raster (the skeleton's capsules)",
                    needed,
                    limit,
                });
            }
            (COMPUTE_TILES_PER_PASS as u64, 0)
        }
    };
    let buffer_limit = limits
        .max_buffer_size
        .min(limits.max_storage_buffer_binding_size);
    let by_buffers = per_particle_bytes(layout)
        .iter()
        .map(|&(_, bytes)| buffer_limit / bytes)
        .min()
        .unwrap_or(u64::MAX);
    let max_tiles = fit
        .min(settings.max_tiles_per_pass.map_or(u64::MAX, |t| t as u64))
        .min(u64::from(limits.max_compute_workgroups_per_dimension))
        .min(by_buffers)
        .min(u64::from(u32::MAX));
    if max_tiles == 0 {
        let what = match settings.raster {
            RasterPath::RenderPass => "label atlas (tiles per pass)",
            RasterPath::Compute => "per-pass buffers (particles per pass)",
        };
        return Err(GpuError::DeviceLimit {
            what,
            needed: 1,
            limit: 0,
        });
    }
    Ok((max_tiles as u32, side))
}

impl View<'_> {
    /// A bind group of `layout` whose binding 0 is the
    /// [`super::RasterUniforms`] (every shader's) and binding `i ≥ 1` is
    /// `resources[i − 1]`, as the pipelines lay it out.
    pub(crate) fn bind_group(
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

    /// The compute path's raster-and-count bind group over `buffers` with
    /// `labels` as the label tiles (the one-word dummy when not diagnosing).
    pub(crate) fn count_bind_group(
        &self,
        layout: &wgpu::BindGroupLayout,
        buffers: &PassBuffers,
        labels: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        self.bind_group(
            "raster and count",
            layout,
            &[
                buffers.capsules.as_entire_binding(),
                buffers.capsule_rects.as_entire_binding(),
                buffers.tile_rects.as_entire_binding(),
                self.observed.as_entire_binding(),
                buffers.counts.as_entire_binding(),
                labels.as_entire_binding(),
            ],
        )
    }

    /// The per-pass buffers (and the atlas, on the render-pass path) and
    /// bind groups for passes of at least `need` particles (rounded up to
    /// whole setup workgroups, within the pass capacity).
    pub(crate) fn create_resources(&self, need: usize) -> Result<Resources> {
        let device = self.device;
        let limits = device.limits();
        let group = WORKGROUP_SIZE as usize;
        let tiles = (need.div_ceil(group) * group).min(self.max_tiles as usize) as u32;
        let t = u64::from(tiles);
        let per_particle = per_particle_bytes(self.layout);
        for (what, bytes) in per_particle {
            let limit = limits
                .max_buffer_size
                .min(limits.max_storage_buffer_binding_size);
            if t * bytes > limit {
                return Err(GpuError::DeviceLimit {
                    what,
                    needed: t * bytes,
                    limit,
                });
            }
        }
        let [point_bytes, capsule_bytes, rect_bytes, count_bytes] = per_particle.map(|(_, b)| b);
        let storage = |label: &'static str, size: u64, extra: wgpu::BufferUsages| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: wgpu::BufferUsages::STORAGE | extra,
                mapped_at_creation: false,
            })
        };
        let buffers = PassBuffers {
            points: storage("end points", t * point_bytes, wgpu::BufferUsages::COPY_DST),
            capsules: storage("capsules", t * capsule_bytes, wgpu::BufferUsages::empty()),
            capsule_rects: storage(
                "capsule rectangles",
                t * rect_bytes,
                wgpu::BufferUsages::COPY_SRC,
            ),
            tile_rects: storage(
                "tile rectangles",
                t * size_of::<GpuRect>() as u64,
                wgpu::BufferUsages::COPY_SRC,
            ),
            counts: storage(
                "class counts",
                t * count_bytes,
                wgpu::BufferUsages::COPY_SRC,
            ),
        };
        let setup_bind = self.bind_group(
            "capsule setup",
            &self.pipelines.setup_layout,
            &[
                self.capsule_table.as_entire_binding(),
                buffers.points.as_entire_binding(),
                buffers.capsules.as_entire_binding(),
                buffers.capsule_rects.as_entire_binding(),
                buffers.tile_rects.as_entire_binding(),
            ],
        );
        let path = match &self.pipelines.path {
            PathPipelines::Compute { layout, .. } => PathResources::Compute {
                count_bind: self.count_bind_group(layout, &buffers, self.no_labels),
            },
            PathPipelines::RenderPass {
                raster_layout,
                histogram_layout,
                ..
            } => PathResources::RenderPass(Box::new(self.create_atlas(
                tiles,
                raster_layout,
                histogram_layout,
                &buffers,
            ))),
        };
        Ok(Resources {
            tiles,
            buffers,
            setup_bind,
            path,
        })
    }

    /// The render-pass path's atlas of `tiles` tiles and its bind groups.
    fn create_atlas(
        &self,
        tiles: u32,
        raster_layout: &wgpu::BindGroupLayout,
        histogram_layout: &wgpu::BindGroupLayout,
        buffers: &PassBuffers,
    ) -> Atlas {
        let (w, h) = (self.camera.width, self.camera.height);
        let columns = tiles.min(self.atlas_side / w);
        let rows = tiles.div_ceil(columns);
        let layout = AtlasLayout {
            columns,
            width: columns * w,
            height: rows * h,
        };
        let extent = wgpu::Extent3d {
            width: layout.width,
            height: layout.height,
            depth_or_array_layers: 1,
        };
        let texture =
            |label: &'static str, format: wgpu::TextureFormat, usage: wgpu::TextureUsages| {
                self.device.create_texture(&wgpu::TextureDescriptor {
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
        let view = atlas_texture.create_view(&Default::default());
        let depth_view = depth.create_view(&Default::default());
        let raster_bind = self.bind_group(
            "label raster",
            raster_layout,
            &[
                buffers.capsules.as_entire_binding(),
                buffers.capsule_rects.as_entire_binding(),
            ],
        );
        let histogram_bind = self.bind_group(
            "class histogram",
            histogram_layout,
            &[
                wgpu::BindingResource::TextureView(&view),
                self.observed.as_entire_binding(),
                buffers.tile_rects.as_entire_binding(),
                buffers.counts.as_entire_binding(),
            ],
        );
        Atlas {
            layout,
            texture: atlas_texture,
            view,
            depth_view,
            raster_bind,
            histogram_bind,
        }
    }

    /// The setup pass (capsules and rectangles from the end points) for
    /// the pass's first `count` particles.
    pub(crate) fn encode_setup(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        res: &Resources,
        count: usize,
    ) {
        encode_compute(
            encoder,
            "capsule setup",
            &self.pipelines.setup,
            &res.setup_bind,
            (count as u32).div_ceil(WORKGROUP_SIZE),
        );
    }

    /// Labels and counts of the pass's first `count` particles, into
    /// `res.buffers.counts`: one compute pass (compute path) or the atlas
    /// render pass and the histogram pass (render-pass path).
    pub(crate) fn encode_counts(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        res: &Resources,
        count: usize,
    ) {
        match (&self.pipelines.path, &res.path) {
            (
                PathPipelines::Compute {
                    count: pipeline, ..
                },
                PathResources::Compute { count_bind },
            ) => {
                encode_compute(
                    encoder,
                    "raster and count",
                    pipeline,
                    count_bind,
                    count as u32,
                );
            }
            (PathPipelines::RenderPass { histogram, .. }, PathResources::RenderPass(atlas)) => {
                self.encode_raster(encoder, atlas, count);
                encode_compute(
                    encoder,
                    "class histogram",
                    histogram,
                    &atlas.histogram_bind,
                    count as u32,
                );
            }
            _ => unreachable!("resources are made for the pipelines' path"),
        }
    }

    /// The render pass of the pass's first `count` particles into `atlas`.
    pub(crate) fn encode_raster(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        atlas: &Atlas,
        count: usize,
    ) {
        let PathPipelines::RenderPass { raster, .. } = &self.pipelines.path else {
            unreachable!("an atlas exists on the render-pass path only");
        };
        let k = self.layout.capsules().len() as u64;
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("label raster"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: &atlas.view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color::TRANSPARENT),
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &atlas.depth_view,
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
        pass.set_pipeline(raster);
        pass.set_bind_group(0, &atlas.raster_bind, &[]);
        // Instance i = tile i / K, capsule i % K: capsules in index order.
        pass.draw(0..4, 0..(count as u64 * k) as u32);
    }
}

/// A compute pass of `pipeline` with `bind` as its bind group 0, over
/// `workgroups` workgroups.
pub(crate) fn encode_compute(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_human_and_some_160_capsules_fit_the_smallest_workgroup_memory() {
        // 16 KiB: WebGPU's default `max_compute_workgroup_storage_size`.
        let limit = 16_384;
        assert!(
            count_workgroup_bytes(26) <= 4_096,
            "the human preset (K = 26)"
        );
        assert!(count_workgroup_bytes(160) <= limit);
        assert!(count_workgroup_bytes(170) > limit);
    }
}

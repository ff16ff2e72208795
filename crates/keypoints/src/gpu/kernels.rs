//! The compute kernels of the GPU back end and the uniform blocks they read,
//! one `#[repr(C)]` struct per `shaders/*.wgsl` file, field for field.
//!
//! Every kernel binds the same three resources, so one bind group serves the
//! whole network: `@binding(0)` its uniform block (a 256-byte slot of one
//! uniform buffer, chosen by a dynamic offset), `@binding(1)` the activation
//! arena (`array<f32>`, read-write), `@binding(2)` the constants
//! (`array<vec4<f32>>`: weights, biases, constant operands). Offsets inside
//! the uniforms count `f32` elements.

use bytemuck::{Pod, Zeroable};

/// Bytes per step in the uniform buffer: the blocks are at most this big and
/// `min_uniform_buffer_offset_alignment` is at most 256 on every adapter.
pub(crate) const UNIFORM_SLOT: usize = 256;
/// Invocations per workgroup in every kernel (`@workgroup_size(64)`).
pub(crate) const WORKGROUP: u32 = 64;
/// "No tensor" in an offset field (`res_off` without a residual).
pub(crate) const NONE: u32 = u32::MAX;

/// The kernel families, one `.wgsl` each (the two convolutions behind
/// their shared `conv_common.wgsl`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kernel {
    Conv,
    Depthwise,
    Elementwise,
    Pool,
    Resize,
}

impl Kernel {
    pub(crate) const ALL: [Kernel; 5] = [
        Kernel::Conv,
        Kernel::Depthwise,
        Kernel::Elementwise,
        Kernel::Pool,
        Kernel::Resize,
    ];

    pub(crate) fn source(self) -> &'static str {
        match self {
            Kernel::Conv => concat!(
                include_str!("../../shaders/conv_common.wgsl"),
                include_str!("../../shaders/conv.wgsl")
            ),
            Kernel::Depthwise => concat!(
                include_str!("../../shaders/conv_common.wgsl"),
                include_str!("../../shaders/depthwise.wgsl")
            ),
            Kernel::Elementwise => include_str!("../../shaders/elementwise.wgsl"),
            Kernel::Pool => include_str!("../../shaders/pool.wgsl"),
            Kernel::Resize => include_str!("../../shaders/resize.wgsl"),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kernel::Conv => "conv",
            Kernel::Depthwise => "depthwise",
            Kernel::Elementwise => "elementwise",
            Kernel::Pool => "pool",
            Kernel::Resize => "resize",
        }
    }
}

/// Fused activations of the convolution epilogue (`act`).
pub(crate) mod act {
    pub(crate) const NONE: u32 = 0;
    /// `clamp(v, lo, hi)`: ReLU (`lo = 0`), ReLU6 (`lo = 0, hi = 6`).
    pub(crate) const CLAMP: u32 = 1;
    pub(crate) const SIGMOID: u32 = 3;
}

/// `conv_common.wgsl`'s `Conv`, read by `conv.wgsl` and `depthwise.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct ConvParams {
    pub in_off: u32,
    pub out_off: u32,
    pub w_off: u32,
    pub b_off: u32,
    pub res_off: u32,
    pub act: u32,
    pub ci: u32,
    pub co: u32,
    pub ih: u32,
    pub iw: u32,
    pub oh: u32,
    pub ow: u32,
    pub kh: u32,
    pub kw: u32,
    pub sh: u32,
    pub sw: u32,
    pub dh: u32,
    pub dw: u32,
    pub pad_t: u32,
    pub pad_l: u32,
    /// Strides of the input's n, c, h, w axes.
    pub in_s: [u32; 4],
    pub out_s: [u32; 4],
    pub n: u32,
    pub co_pad: u32,
    pub lo: f32,
    pub hi: f32,
    pub slope_off: u32,
    pub threads: u32,
    /// 1: add the residual after the activation instead of before.
    pub res_after: u32,
    pub _pad: u32,
}

/// `elementwise.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct ElementwiseParams {
    pub out_off: u32,
    pub a_off: u32,
    pub b_off: u32,
    /// Bit 0: `a` is in the constants; bit 1: `b` is.
    pub sources: u32,
    pub op: u32,
    pub total: u32,
    pub x: f32,
    pub y: f32,
    /// Output shape, 1-padded in front to 8 axes.
    pub dims: [u32; 8],
    pub a_strides: [u32; 8],
    pub b_strides: [u32; 8],
}

/// Operators of `elementwise.wgsl` (`op`).
pub(crate) mod op {
    pub(crate) const ADD: u32 = 0;
    pub(crate) const SUB: u32 = 1;
    pub(crate) const MUL: u32 = 2;
    pub(crate) const DIV: u32 = 3;
    pub(crate) const MAX: u32 = 4;
    pub(crate) const MIN: u32 = 5;
    pub(crate) const POW: u32 = 6;
    pub(crate) const COPY: u32 = 16;
    pub(crate) const SIGMOID: u32 = 18;
    pub(crate) const TANH: u32 = 19;
    pub(crate) const EXP: u32 = 20;
    pub(crate) const ABS: u32 = 21;
    pub(crate) const NEG: u32 = 22;
    pub(crate) const SQRT: u32 = 23;
    pub(crate) const RECIP: u32 = 24;
    pub(crate) const LN: u32 = 25;
}

/// `pool.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct PoolParams {
    pub in_off: u32,
    pub out_off: u32,
    /// 0 max, 1 average.
    pub op: u32,
    pub threads: u32,
    pub n: u32,
    pub c: u32,
    pub ih: u32,
    pub iw: u32,
    pub oh: u32,
    pub ow: u32,
    pub kh: u32,
    pub kw: u32,
    pub sh: u32,
    pub sw: u32,
    pub pad_t: u32,
    pub pad_l: u32,
    pub in_s: [u32; 4],
    pub out_s: [u32; 4],
}

/// `resize.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct ResizeParams {
    pub in_off: u32,
    pub out_off: u32,
    pub total: u32,
    /// 0 half_pixel, 1 align_corners, 2 asymmetric.
    pub coord: u32,
    pub in_dims: [u32; 4],
    pub out_dims: [u32; 4],
    pub scales: [f32; 4],
}

/// Workgroups for `threads` invocations: x up to 65535, the rest in y (the
/// kernels rebuild the linear index from `num_workgroups`).
pub(crate) fn workgroups(threads: u32) -> (u32, u32) {
    let groups = threads.div_ceil(WORKGROUP).max(1);
    if groups <= 65535 {
        (groups, 1)
    } else {
        (65535, groups.div_ceil(65535))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The WGSL structs' sizes under WGSL's layout rules (vec4 fields on
    /// 16-byte boundaries, which the Rust field order keeps).
    #[test]
    fn uniform_blocks_match_the_shaders() {
        assert_eq!(size_of::<ConvParams>(), 144);
        assert_eq!(std::mem::offset_of!(ConvParams, in_s), 80);
        assert_eq!(std::mem::offset_of!(ConvParams, n), 112);
        assert_eq!(size_of::<ElementwiseParams>(), 128);
        assert_eq!(std::mem::offset_of!(ElementwiseParams, dims), 32);
        assert_eq!(size_of::<PoolParams>(), 96);
        assert_eq!(std::mem::offset_of!(PoolParams, in_s), 64);
        assert_eq!(size_of::<ResizeParams>(), 64);
        for size in [
            size_of::<ConvParams>(),
            size_of::<ElementwiseParams>(),
            size_of::<PoolParams>(),
            size_of::<ResizeParams>(),
        ] {
            assert!(size <= UNIFORM_SLOT);
        }
    }

    #[test]
    fn large_dispatches_spill_into_y() {
        assert_eq!(workgroups(64), (1, 1));
        assert_eq!(workgroups(65), (2, 1));
        let (x, y) = workgroups(64 * 70000);
        assert!(x as u64 * y as u64 * 64 >= 64 * 70000 && x <= 65535);
    }
}

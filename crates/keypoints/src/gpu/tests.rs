//! Each operator the kernels cover, against tract on small seeded random
//! tensors: the same tract graph runs on tract's CPU plan and through
//! [`Program::lower`] on the GPU.
//!
//! The GPU tests are `#[ignore]`d (as in `crates/gpu/tests/gpu.rs`): a plain
//! `cargo test` reports them as ignored; `-- --include-ignored` runs them,
//! and then a missing adapter is a failure (CI sets
//! `POSECLOUD_REQUIRE_GPU=1` and runs them on lavapipe). The lowering tests
//! need no device.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::cnn::conv::KernelFormat;
use tract_onnx::tract_core::ops::cnn::{Conv, MaxPool, PaddingSpec, PoolSpec};
use tract_onnx::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_core::ops::math;
use tract_onnx::tract_core::ops::nn::{DataFormat, sigmoid};

use super::program::Program;
use super::{GpuDevice, GpuGraph};

/// The shared headless device ([`headless::for_tests`]). Panics (failing
/// the test) when there is no adapter: these tests only run when asked for
/// with `--include-ignored`.
fn gpu() -> GpuDevice {
    let (device, queue, info) = headless::for_tests("--include-ignored");
    GpuDevice::from_parts(device, queue, info)
}

/// Seeded values in [-1, 1) (xorshift; no dependency).
fn random(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

fn tensor(shape: &[usize], seed: u64) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_shape(shape, &random(n, seed)).expect("shape matches")
}

/// Runs `model` on tract and on the GPU with a seeded input; the largest
/// absolute difference over all outputs, which must be below `tolerance`.
fn agree(model: TypedModel, tolerance: f32) -> f32 {
    let input_fact = model.input_fact(0).expect("one input").clone();
    let shape = input_fact.shape.as_concrete().expect("concrete").to_vec();
    let input = tensor(&shape, 7);
    let graph = GpuGraph::new(&gpu(), &model).expect("the GPU graph builds");
    let plan = model.into_runnable().expect("tract plan");
    let cpu = plan.run(tvec![input.clone().into()]).expect("tract runs");
    let gpu = graph
        .run(input.as_slice::<f32>().expect("f32"))
        .expect("the GPU runs");
    assert_eq!(cpu.len(), gpu.len());
    let mut worst = 0.0f32;
    for (c, g) in cpu.iter().zip(&gpu) {
        let c = c.as_slice::<f32>().expect("f32 output");
        assert_eq!(c.len(), g.len());
        for (a, b) in c.iter().zip(g) {
            worst = worst.max((a - b).abs());
        }
    }
    assert!(
        worst <= tolerance,
        "GPU and tract differ by {worst} (tolerance {tolerance})"
    );
    worst
}

fn conv_op(
    format: DataFormat,
    k: usize,
    stride: usize,
    pad: usize,
    ci: usize,
    co: usize,
    group: usize,
) -> Conv {
    Conv {
        pool_spec: PoolSpec {
            data_format: format,
            kernel_shape: tvec![k, k],
            padding: PaddingSpec::Explicit(tvec![pad, pad], tvec![pad, pad]),
            dilations: None,
            strides: Some(tvec![stride, stride]),
            input_channels: ci,
            output_channels: co,
        },
        kernel_fmt: KernelFormat::OIHW,
        group,
        q_params: None,
    }
}

/// x → Conv (OIHW kernel, per-channel bias) → outputs.
fn conv_model(shape: &[usize], op: Conv) -> TypedModel {
    let mut m = TypedModel::default();
    let x = m.add_source("x", f32::fact(shape)).unwrap();
    let (ci, co, g) = (
        op.pool_spec.input_channels,
        op.pool_spec.output_channels,
        op.group,
    );
    let k = op.pool_spec.kernel_shape.clone();
    let w = m
        .add_const("w", tensor(&[co, ci / g, k[0], k[1]], 11))
        .unwrap();
    let b = m.add_const("b", tensor(&[co], 13)).unwrap();
    let y = m.wire_node("conv", op, &[x, w, b]).unwrap();
    m.set_output_outlets(&y).unwrap();
    m
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn conv_nhwc_stride_2_with_padding() {
    // BlazePose's first layer: 3 → 24 channels (not a multiple of 4 in, a
    // multiple out), 3 × 3, stride 2, odd width for the 4-column tiles.
    let op = conv_op(DataFormat::NHWC, 3, 2, 1, 3, 24, 1);
    agree(conv_model(&[1, 17, 13, 3], op), 1e-5);
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn conv_nchw_odd_channels() {
    // The landmark head: 2 × 2 valid convolution to 195 (and 1) channels.
    let op = conv_op(DataFormat::NCHW, 2, 1, 0, 12, 7, 1);
    agree(conv_model(&[1, 12, 2, 2], op), 1e-5);
    let op = conv_op(DataFormat::NCHW, 3, 1, 1, 5, 1, 1);
    agree(conv_model(&[1, 5, 9, 6], op), 1e-5);
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn depthwise_chw_5x5_stride_2() {
    let op = conv_op(DataFormat::CHW, 5, 2, 2, 10, 10, 10);
    agree(conv_model(&[10, 15, 18], op), 1e-5);
    let op = conv_op(DataFormat::NHWC, 3, 1, 1, 6, 6, 6);
    agree(conv_model(&[1, 7, 9, 6], op), 1e-5);
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn depthwise_asymmetric_padding() {
    // TF's SAME padding for stride 2 on an even side: 0 before, 1 after.
    let mut op = conv_op(DataFormat::NCHW, 3, 2, 0, 8, 8, 8);
    op.pool_spec.padding = PaddingSpec::Explicit(tvec![0, 0], tvec![1, 1]);
    agree(conv_model(&[1, 8, 8, 8], op), 1e-5);
}

/// x → EinSum(`expr`, x, W) with W a constant of `w_shape`.
fn einsum_model(shape: &[usize], expr: &str, w_shape: &[usize]) -> TypedModel {
    let mut m = TypedModel::default();
    let x = m.add_source("x", f32::fact(shape)).unwrap();
    let w = m.add_const("w", tensor(w_shape, 17)).unwrap();
    let op = EinSum {
        axes: expr.parse().unwrap(),
        operating_dt: f32::datum_type(),
        q_params: None,
    };
    let y = m.wire_node("einsum", op, &[x, w]).unwrap();
    m.set_output_outlets(&y).unwrap();
    m
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn einsum_as_pointwise_convolution() {
    // The layouts tract's declutter gives BlazePose's 1 × 1 convolutions.
    agree(einsum_model(&[24, 9, 7], "IHW,OI->OHW", &[18, 24]), 1e-5);
    agree(
        einsum_model(&[1, 20, 5, 6], "NIHW,OI->NOHW", &[9, 20]),
        1e-5,
    );
    agree(
        einsum_model(&[1, 20, 5, 6], "NIHW,OI->NHWO", &[9, 20]),
        1e-5,
    );
    agree(einsum_model(&[1, 5, 6, 20], "NHWI,OI->OHW", &[9, 20]), 1e-5);
    agree(einsum_model(&[16, 4, 4], "IHW,OI->NOHW", &[8, 16]), 1e-5);
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn fused_bias_residual_and_relu6() {
    // BlazePose's block tail: pointwise conv + bias + residual, then ReLU6;
    // and the heatmap branch's conv + bias, ReLU6, then a residual.
    for residual_first in [true, false] {
        let mut m = TypedModel::default();
        let x = m.add_source("x", f32::fact([8, 6, 5])).unwrap();
        let w = m.add_const("w", tensor(&[8, 8], 19)).unwrap();
        let op = EinSum {
            axes: "IHW,OI->OHW".parse().unwrap(),
            operating_dt: f32::datum_type(),
            q_params: None,
        };
        let mut y = m.wire_node("pw", op, &[x, w]).unwrap()[0];
        let b = m.add_const("b", tensor(&[8, 1, 1], 23)).unwrap();
        y = m.wire_node("bias", math::add(), &[y, b]).unwrap()[0];
        let lo = m
            .add_const("lo", tensor1(&[0.0f32]).into_shape(&[1, 1, 1]).unwrap())
            .unwrap();
        let hi = m
            .add_const("hi", tensor1(&[0.3f32]).into_shape(&[1, 1, 1]).unwrap())
            .unwrap();
        if residual_first {
            y = m.wire_node("res", math::add(), &[y, x]).unwrap()[0];
        }
        y = m.wire_node("relu6.lo", math::max(), &[y, lo]).unwrap()[0];
        y = m.wire_node("relu6.hi", math::min(), &[y, hi]).unwrap()[0];
        if !residual_first {
            y = m.wire_node("res", math::add(), &[x, y]).unwrap()[0];
        }
        m.set_output_outlets(&[y]).unwrap();
        let program = Program::lower(&m).unwrap();
        assert_eq!(program.steps.len(), 1, "all fused into one launch");
        agree(m, 1e-5);
    }
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn elementwise_broadcast_and_sigmoid() {
    let mut m = TypedModel::default();
    let x = m.add_source("x", f32::fact([2, 3, 4, 5])).unwrap();
    let c = m.add_const("c", tensor(&[1, 3, 1, 5], 29)).unwrap();
    let a = m.wire_node("mul", math::mul(), &[x, c]).unwrap()[0];
    let s = m.wire_node("sigmoid", sigmoid(), &[a]).unwrap()[0];
    let d = m.wire_node("sub", math::sub(), &[s, x]).unwrap()[0];
    m.set_output_outlets(&[d, a]).unwrap();
    agree(m, 1e-5);
}

#[test]
#[ignore = "needs a GPU adapter (lavapipe in CI)"]
fn max_pool_2x2() {
    let mut m = TypedModel::default();
    let x = m.add_source("x", f32::fact([1, 12, 8, 6])).unwrap();
    let spec = PoolSpec {
        data_format: DataFormat::NCHW,
        kernel_shape: tvec![2, 2],
        padding: PaddingSpec::Valid,
        dilations: None,
        strides: Some(tvec![2, 2]),
        input_channels: 12,
        output_channels: 12,
    };
    let y = m.wire_node("pool", MaxPool::new(spec, None), &[x]).unwrap();
    m.set_output_outlets(&y).unwrap();
    agree(m, 0.0);
}

#[test]
fn unsupported_operators_are_named() {
    let mut m = TypedModel::default();
    let x = m.add_source("x", f32::fact([4, 4])).unwrap();
    let y = m.wire_node("my_cosine", math::cos(), &[x]).unwrap();
    m.set_output_outlets(&y).unwrap();
    let err = Program::lower(&m).unwrap_err().to_string();
    assert!(err.contains("Cos") && err.contains("my_cosine"), "{err}");

    // A grouped convolution that is not depthwise.
    let op = conv_op(DataFormat::NCHW, 3, 1, 1, 8, 8, 2);
    let err = Program::lower(&conv_model(&[1, 8, 5, 5], op))
        .unwrap_err()
        .to_string();
    assert!(err.contains("2 groups") && err.contains("conv"), "{err}");
}

#[test]
fn blazepose_full_lowers_to_fused_launches() {
    let model = crate::typed_model(crate::DEFAULT_MODEL, true)
        .and_then(|m| m.into_decluttered())
        .unwrap();
    let program = Program::lower(&model).unwrap();
    let count = |k| program.steps.iter().filter(|s| s.kernel == k).count();
    use super::kernels::Kernel;
    // 35 Conv + 47 EinSum + 2 MaxPool + 3 Resize; every Add, Max, Min and
    // the Sigmoid fused, the RmAxis renames.
    assert_eq!(count(Kernel::Conv) + count(Kernel::Depthwise), 82);
    assert_eq!(count(Kernel::Pool), 2);
    assert_eq!(count(Kernel::Resize), 3);
    assert_eq!(count(Kernel::Elementwise), 0);
    assert_eq!(program.outputs.len(), 3);
    assert_eq!(program.outputs[0].1, 195);
    assert_eq!(program.outputs[2].1, 64 * 64 * 39);
    // Tensors share the arena: far less than the sum of all activations.
    assert!(program.arena_len < 4 << 20, "{} floats", program.arena_len);
    let macs: u64 = program
        .steps
        .iter()
        .filter(|s| matches!(s.kernel, Kernel::Conv | Kernel::Depthwise))
        .map(|s| {
            let p: &super::kernels::ConvParams =
                bytemuck::from_bytes(&s.uniform[..size_of::<super::kernels::ConvParams>()]);
            let per_output = (p.kh * p.kw) as u64
                * if s.kernel == Kernel::Conv {
                    p.ci as u64
                } else {
                    1
                };
            p.n as u64 * (p.oh * p.ow * p.co) as u64 * per_output
        })
        .sum();
    println!(
        "{} launches, arena {} floats, constants {} floats, {macs} multiply-adds",
        program.steps.len(),
        program.arena_len,
        program.consts.len()
    );
}

//! Lowering of a decluttered tract graph to a list of GPU steps.
//!
//! tract's decluttered form of BlazePose full has eleven operators: `Conv`
//! (one group, or depthwise; NHWC, NCHW and CHW layouts), `EinSum` (the
//! 1 × 1 convolutions, a matrix of constants times a tensor), `Add`, `Max`
//! and `Min` (bias, residual and ReLU6), `MaxPool`, `Resize` (linear),
//! `Sigmoid`, `RmAxis`, constants and the source. Each becomes one
//! kernel launch, except that the bias, the residual add and the
//! activation that follow a convolution are fused into its epilogue, and
//! that axis removals and reshapes only rename a tensor. Any other operator,
//! or an unsupported form of one (a grouped convolution, an einsum of two
//! tensors), is an error that names it: the caller falls back to tract.
//!
//! Every tensor is stored contiguous, row-major, in one activation arena;
//! the arena is shared by tensors whose lifetimes do not overlap (first
//! fit, in execution order). Constants (weights repacked for the kernels,
//! biases, constant operands) go in a second buffer, each block on a
//! 16-byte boundary.

use std::collections::{HashMap, HashSet};

use bytemuck::Pod;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::{bail, ensure, format_err};
use tract_onnx::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_core::ops::change_axes::AxisOp;
use tract_onnx::tract_core::ops::cnn::conv::KernelFormat;
use tract_onnx::tract_core::ops::cnn::{Conv, MaxPool, PoolSpec};
use tract_onnx::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tract_onnx::tract_core::ops::nn::DataFormat;

use super::kernels::{
    ConvParams, ElementwiseParams, Kernel, NONE, PoolParams, ResizeParams, UNIFORM_SLOT, act, op,
    workgroups,
};

/// One kernel launch.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    pub kernel: Kernel,
    /// The tract node it comes from (the last one of a fused chain).
    pub name: String,
    /// The uniform block, padded to [`UNIFORM_SLOT`] bytes.
    pub uniform: Vec<u8>,
    pub workgroups: (u32, u32),
    /// Arena offsets to add to `u32` fields of `uniform`: (byte offset of
    /// the field, region).
    relocations: Vec<(usize, usize)>,
    /// Regions read and the one written, for the arena's allocation.
    reads: Vec<usize>,
    write: usize,
}

/// The network as the GPU runs it.
#[derive(Clone, Debug)]
pub(crate) struct Program {
    pub steps: Vec<Step>,
    /// The constant buffer, a multiple of 4 floats.
    pub consts: Vec<f32>,
    /// Floats in the activation arena.
    pub arena_len: usize,
    /// Arena offset and length of the input tensor.
    pub input: (usize, usize),
    /// Arena offset and length of each output tensor, in the model's order.
    pub outputs: Vec<(usize, usize)>,
}

/// A tensor in the arena: a region (aliases share one) and a shape.
#[derive(Clone, Debug)]
struct Value {
    region: usize,
    shape: Vec<usize>,
}

fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * shape[k + 1];
    }
    s
}

fn u32_of(v: usize, what: &str) -> TractResult<u32> {
    u32::try_from(v).map_err(|_| format_err!("{what} {v} does not fit the GPU's 32-bit indices"))
}

struct Lowering<'m> {
    model: &'m TypedModel,
    values: HashMap<OutletId, Value>,
    /// Region sizes, floats.
    regions: Vec<usize>,
    consts: Vec<f32>,
    steps: Vec<Step>,
    /// Nodes fused into an earlier step.
    fused: HashSet<usize>,
}

/// What follows a convolution and runs in its epilogue.
struct Epilogue {
    bias: Vec<f32>,
    act: u32,
    lo: f32,
    hi: f32,
    residual: Option<Value>,
    res_after: bool,
    /// The outlet whose value the fused step writes.
    last: OutletId,
    name: String,
}

impl<'m> Lowering<'m> {
    fn new_region(&mut self, len: usize) -> usize {
        self.regions.push(len.max(1));
        self.regions.len() - 1
    }

    fn new_value(&mut self, shape: &[usize]) -> Value {
        let region = self.new_region(shape.iter().product());
        Value {
            region,
            shape: shape.to_vec(),
        }
    }

    /// Appends `data` to the constants on a 16-byte boundary; its offset.
    fn push_consts(&mut self, data: &[f32]) -> TractResult<u32> {
        let at = self.consts.len();
        self.consts.extend_from_slice(data);
        self.consts
            .resize(self.consts.len().next_multiple_of(4), 0.0);
        u32_of(at, "constant offset")
    }

    fn konst(&self, outlet: OutletId) -> TractResult<Option<Arc<Tensor>>> {
        Ok(self.model.outlet_fact(outlet)?.konst.clone())
    }

    fn const_f32(&self, outlet: OutletId, what: &str) -> TractResult<(Vec<usize>, Vec<f32>)> {
        let t = self
            .konst(outlet)?
            .ok_or_else(|| format_err!("{what} is not a constant"))?;
        let t = t.cast_to::<f32>()?;
        Ok((t.shape().to_vec(), t.as_slice::<f32>()?.to_vec()))
    }

    fn value(&self, outlet: OutletId) -> TractResult<Value> {
        self.values
            .get(&outlet)
            .cloned()
            .ok_or_else(|| format_err!("input {outlet:?} was not computed on the GPU"))
    }

    fn shape(&self, outlet: OutletId) -> TractResult<Vec<usize>> {
        let fact = self.model.outlet_fact(outlet)?;
        Ok(fact
            .shape
            .as_concrete()
            .ok_or_else(|| format_err!("symbolic shape {:?}", fact.shape))?
            .to_vec())
    }

    fn push_step<P: Pod>(
        &mut self,
        kernel: Kernel,
        name: &str,
        params: &P,
        threads: u32,
        relocations: Vec<(usize, usize)>,
        write: usize,
    ) {
        let reads = relocations
            .iter()
            .map(|&(_, r)| r)
            .filter(|&r| r != write)
            .collect();
        let mut uniform = bytemuck::bytes_of(params).to_vec();
        uniform.resize(UNIFORM_SLOT, 0);
        self.steps.push(Step {
            kernel,
            name: name.to_string(),
            uniform,
            workgroups: workgroups(threads),
            relocations,
            reads,
            write,
        });
    }

    fn lower(&mut self, node_id: usize) -> TractResult<()> {
        let node = &self.model.nodes[node_id];
        let op: &dyn TypedOp = node.op.as_ref();
        let name = node.name.as_str();
        if self.fused.contains(&node_id) || op.name() == "Const" {
            return Ok(());
        }
        if op.name() == "Source" || op.name() == "TypedSource" {
            let shape = self.shape(OutletId::new(node_id, 0))?;
            let v = self.new_value(&shape);
            self.values.insert(OutletId::new(node_id, 0), v);
            return Ok(());
        }
        if let Some(conv) = op.downcast_ref::<Conv>() {
            return self.lower_conv(node_id, conv);
        }
        if let Some(einsum) = op.downcast_ref::<EinSum>() {
            return self.lower_einsum(node_id, einsum);
        }
        if let Some(bin) = op.downcast_ref::<TypedBinOp>() {
            let code = match bin.0.name() {
                "Add" => op::ADD,
                "Sub" => op::SUB,
                "Mul" => op::MUL,
                "Div" => op::DIV,
                "Max" => op::MAX,
                "Min" => op::MIN,
                "Pow" => op::POW,
                other => bail!("binary operator {other} (node {name}) is not supported"),
            };
            return self.lower_elementwise(node_id, code, 0.0, 0.0);
        }
        if let Some(ew) = op.downcast_ref::<ElementWiseOp>() {
            let code = match ew.0.name().as_str() {
                "Sigmoid" => op::SIGMOID,
                "Tanh" => op::TANH,
                "Exp" => op::EXP,
                "Abs" => op::ABS,
                "Neg" => op::NEG,
                "Sqrt" => op::SQRT,
                "Recip" => op::RECIP,
                "Ln" => op::LN,
                other => bail!("element-wise operator {other} (node {name}) is not supported"),
            };
            return self.lower_elementwise(node_id, code, 0.0, 0.0);
        }
        if let Some(pool) = op.downcast_ref::<MaxPool>() {
            ensure!(
                pool.with_index_outputs.is_none(),
                "MaxPool with index outputs (node {name}) is not supported"
            );
            return self.lower_pool(node_id, &pool.pool_spec, 0);
        }
        if let Some(axis) = op.downcast_ref::<AxisOp>() {
            return self.lower_axis(node_id, axis);
        }
        if op.name() == "Resize" {
            return self.lower_resize(node_id);
        }
        bail!(
            "operator {} (node {name}) is not supported by the GPU back end",
            op.name()
        )
    }

    /// Bias, residual and activation nodes after `node_id` that its
    /// epilogue can absorb. `channel_axis` is the output's channel axis.
    fn epilogue(
        &mut self,
        node_id: usize,
        channel_axis: usize,
        channels: usize,
        mut bias: Vec<f32>,
    ) -> TractResult<Epilogue> {
        let outputs = self.model.output_outlets()?.to_vec();
        let mut e = Epilogue {
            bias: Vec::new(),
            act: act::NONE,
            lo: -f32::MAX,
            hi: f32::MAX,
            residual: None,
            res_after: false,
            last: OutletId::new(node_id, 0),
            name: self.model.nodes[node_id].name.clone(),
        };
        let shape = self.shape(e.last)?;
        loop {
            let succ = self.model.outlet_successors(e.last);
            if succ.len() != 1 || outputs.contains(&e.last) {
                break;
            }
            let next = &self.model.nodes[succ[0].node];
            if next.outputs.len() != 1 || self.shape(OutletId::new(next.id, 0))? != shape {
                break;
            }
            if let Some(ew) = next.op.downcast_ref::<ElementWiseOp>() {
                if ew.0.name().as_str() == "Sigmoid" && e.act == act::NONE && e.residual.is_none() {
                    e.act = act::SIGMOID;
                } else {
                    break;
                }
            } else if let Some(bin) = next.op.downcast_ref::<TypedBinOp>() {
                let Some(&other) = next.inputs.iter().find(|&&i| i != e.last) else {
                    break;
                };
                let opname = bin.0.name();
                if let Some(k) = self.konst(other)? {
                    let k = k.cast_to::<f32>()?;
                    let vals = k.as_slice::<f32>()?;
                    let kshape = k.shape();
                    let scalar = vals.len() == 1;
                    if opname == "Add" && e.act == act::NONE && e.residual.is_none() {
                        // A per-channel or scalar constant: the bias.
                        let pad = shape.len().saturating_sub(kshape.len());
                        let per_channel = kshape.len() <= shape.len()
                            && kshape.iter().enumerate().all(|(a, &d)| {
                                d == 1 || (a + pad == channel_axis && d == channels)
                            });
                        if !per_channel {
                            break;
                        }
                        for (c, b) in bias.iter_mut().enumerate() {
                            *b += if scalar { vals[0] } else { vals[c] };
                        }
                    } else if (opname == "Max" || opname == "Min")
                        && scalar
                        && (e.act == act::NONE || e.act == act::CLAMP)
                        && !e.res_after
                    {
                        let (lo, hi) = if opname == "Max" {
                            (e.lo.max(vals[0]), e.hi)
                        } else {
                            (e.lo, e.hi.min(vals[0]))
                        };
                        if lo > hi {
                            break;
                        }
                        e.lo = lo;
                        e.hi = hi;
                        e.act = act::CLAMP;
                    } else {
                        break;
                    }
                } else if opname == "Add" && e.residual.is_none() {
                    let Some(v) = self.values.get(&other).cloned() else {
                        break;
                    };
                    if v.shape != shape {
                        break;
                    }
                    e.res_after = e.act != act::NONE;
                    e.residual = Some(v);
                } else {
                    break;
                }
            } else {
                break;
            }
            self.fused.insert(next.id);
            e.last = OutletId::new(next.id, 0);
            e.name = next.name.clone();
            if e.res_after {
                break;
            }
        }
        e.bias = std::mem::take(&mut bias);
        Ok(e)
    }

    /// Emits a conv or depthwise step with its epilogue; `params` holds the
    /// geometry, `weights` are already repacked.
    #[allow(clippy::too_many_arguments)]
    fn emit_conv(
        &mut self,
        node_id: usize,
        kernel: Kernel,
        mut p: ConvParams,
        input: Value,
        weights: &[f32],
        channel_axis: usize,
        out_shape: &[usize],
    ) -> TractResult<()> {
        let co = p.co as usize;
        let bias = self.conv_bias(node_id, co)?;
        let e = self.epilogue(node_id, channel_axis, co, bias)?;
        let co_pad = co.next_multiple_of(4);
        let mut bias = e.bias.clone();
        bias.resize(co_pad, 0.0);
        p.co_pad = u32_of(co_pad, "channels")?;
        p.w_off = self.push_consts(weights)?;
        p.b_off = self.push_consts(&bias)?;
        p.act = e.act;
        p.lo = e.lo;
        p.hi = e.hi;
        p.res_after = e.res_after as u32;
        p.in_off = 0;
        p.out_off = 0;
        let out = self.new_value(out_shape);
        let mut relocations = vec![
            (std::mem::offset_of!(ConvParams, in_off), input.region),
            (std::mem::offset_of!(ConvParams, out_off), out.region),
        ];
        match &e.residual {
            Some(r) => {
                p.res_off = 0;
                relocations.push((std::mem::offset_of!(ConvParams, res_off), r.region));
            }
            None => p.res_off = NONE,
        }
        let owbs = p.ow.div_ceil(4);
        let threads = p.n as u64 * p.oh as u64 * owbs as u64 * (co_pad / 4) as u64;
        p.threads = u32_of(threads as usize, "invocations")?;
        let region = out.region;
        self.push_step(kernel, &e.name, &p, p.threads, relocations, region);
        self.values.insert(e.last, out);
        Ok(())
    }

    /// The bias input of a convolution (input 2), or zeros.
    fn conv_bias(&self, node_id: usize, co: usize) -> TractResult<Vec<f32>> {
        let node = &self.model.nodes[node_id];
        let mut bias = vec![0.0; co];
        if let Some(&b) = node.inputs.get(2) {
            let (_, vals) = self.const_f32(b, "convolution bias")?;
            match vals.len() {
                0 => {}
                1 => bias.iter_mut().for_each(|v| *v = vals[0]),
                n if n == co => bias.copy_from_slice(&vals),
                n => bail!("bias of {n} values for {co} channels"),
            }
        }
        Ok(bias)
    }

    fn lower_conv(&mut self, node_id: usize, conv: &Conv) -> TractResult<()> {
        let node = &self.model.nodes[node_id];
        let name = node.name.clone();
        ensure!(
            conv.q_params.is_none(),
            "quantised Conv (node {name}) is not supported"
        );
        let spec = &conv.pool_spec;
        ensure!(
            spec.rank() == 2,
            "{}-D Conv (node {name}) is not supported",
            spec.rank()
        );
        let input = self.value(node.inputs[0])?;
        let out_shape = self.shape(OutletId::new(node_id, 0))?;
        let (ins, outs) = (
            nchw_strides(spec.data_format, &input.shape)?,
            nchw_strides(spec.data_format, &out_shape)?,
        );
        let (kshape, kernel) = self.const_f32(node.inputs[1], "convolution kernel")?;
        let (ci, co, group) = (spec.input_channels, spec.output_channels, conv.group);
        let (kh, kw) = (spec.kernel_shape[0], spec.kernel_shape[1]);
        let cig = ci / group;
        // Kernel element (o, i, y, x) in tract's layout.
        let kstrides = strides(&kshape);
        let at = |o: usize, i: usize, y: usize, x: usize| -> usize {
            match conv.kernel_fmt {
                KernelFormat::OIHW => {
                    o * kstrides[0] + i * kstrides[1] + y * kstrides[2] + x * kstrides[3]
                }
                KernelFormat::HWIO => {
                    y * kstrides[0] + x * kstrides[1] + i * kstrides[2] + o * kstrides[3]
                }
                KernelFormat::OHWI => {
                    o * kstrides[0] + y * kstrides[1] + x * kstrides[2] + i * kstrides[3]
                }
            }
        };
        ensure!(
            kshape.len() == 4 && kernel.len() == co * cig * kh * kw,
            "Conv kernel of shape {kshape:?} (node {name}) is not supported"
        );
        let co_pad = co.next_multiple_of(4);
        let kernel_kind = if group == 1 {
            Kernel::Conv
        } else if group == ci && group == co {
            Kernel::Depthwise
        } else {
            bail!("Conv with {group} groups of {ci} channels (node {name}) is not supported")
        };
        let weights = if kernel_kind == Kernel::Conv {
            let mut w = vec![0.0; kh * kw * ci * co_pad];
            for y in 0..kh {
                for x in 0..kw {
                    for i in 0..ci {
                        for o in 0..co {
                            w[((y * kw + x) * ci + i) * co_pad + o] = kernel[at(o, i, y, x)];
                        }
                    }
                }
            }
            w
        } else {
            let mut w = vec![0.0; kh * kw * co_pad];
            for y in 0..kh {
                for x in 0..kw {
                    for o in 0..co {
                        w[(y * kw + x) * co_pad + o] = kernel[at(o, 0, y, x)];
                    }
                }
            }
            w
        };
        let (ihw, ohw) = (
            hw_of(spec.data_format, &input.shape),
            hw_of(spec.data_format, &out_shape),
        );
        let padding = spec.computed_padding(&ihw);
        let p = ConvParams {
            ci: u32_of(ci, "channels")?,
            co: u32_of(co, "channels")?,
            ih: u32_of(ihw[0], "height")?,
            iw: u32_of(ihw[1], "width")?,
            oh: u32_of(ohw[0], "height")?,
            ow: u32_of(ohw[1], "width")?,
            kh: kh as u32,
            kw: kw as u32,
            sh: spec.stride(0) as u32,
            sw: spec.stride(1) as u32,
            dh: spec.dilation(0) as u32,
            dw: spec.dilation(1) as u32,
            pad_t: padding[0].pad_before as u32,
            pad_l: padding[1].pad_before as u32,
            in_s: ins.strides,
            out_s: outs.strides,
            n: u32_of(ins.n, "batch")?,
            ..Default::default()
        };
        self.emit_conv(
            node_id,
            kernel_kind,
            p,
            input,
            &weights,
            outs.c_axis,
            &out_shape,
        )
    }

    /// An einsum of a tensor and a constant matrix: a 1 × 1 convolution
    /// whose pixels are the tensor's remaining axes (at most three).
    fn lower_einsum(&mut self, node_id: usize, einsum: &EinSum) -> TractResult<()> {
        let node = &self.model.nodes[node_id];
        let name = node.name.clone();
        let unsupported = |why: &str| format_err!("EinSum {} (node {name}): {why}", einsum.axes);
        if node.inputs.len() != 2 || einsum.q_params.is_some() {
            return Err(unsupported("not a product of two float tensors"));
        }
        let (data_ix, w_ix) = match (
            self.konst(node.inputs[0])?.is_some(),
            self.konst(node.inputs[1])?.is_some(),
        ) {
            (false, true) => (0, 1),
            (true, false) => (1, 0),
            _ => return Err(unsupported("needs exactly one constant operand")),
        };
        let input = self.value(node.inputs[data_ix])?;
        let (wshape, wvals) = self.const_f32(node.inputs[w_ix], "einsum matrix")?;
        let out_shape = self.shape(OutletId::new(node_id, 0))?;
        if wshape.len() != 2 {
            return Err(unsupported("the constant is not a matrix"));
        }
        let (ds, os) = (strides(&input.shape), strides(&out_shape));
        let (mut k_axis, mut o_axis) = (None, None);
        // Pixel axes: (data stride, output stride, size).
        let mut pixels: Vec<(usize, usize, usize)> = Vec::new();
        for axis in einsum.axes.iter_all_axes() {
            let (d, w, o) = (
                axis.inputs[data_ix].first().copied(),
                axis.inputs[w_ix].first().copied(),
                axis.outputs[0].first().copied(),
            );
            if axis.inputs[data_ix].len() > 1
                || axis.inputs[w_ix].len() > 1
                || axis.outputs[0].len() > 1
            {
                return Err(unsupported("repeated axis"));
            }
            match (d, w, o) {
                (Some(d), Some(w), None) => k_axis = Some((d, w)),
                (None, Some(w), Some(o)) => o_axis = Some((w, o)),
                (Some(d), None, Some(o)) => {
                    if input.shape[d] > 1 {
                        pixels.push((ds[d], os[o], input.shape[d]));
                    }
                }
                (None, None, Some(o)) if out_shape[o] == 1 => {}
                (Some(d), None, None) if input.shape[d] == 1 => {}
                (None, Some(w), None) if wshape[w] == 1 => {}
                _ => return Err(unsupported("not a matrix product")),
            }
        }
        let (Some((kd, kw_ix)), Some((ow_ix, oo))) = (k_axis, o_axis) else {
            return Err(unsupported("not a matrix product"));
        };
        if pixels.len() > 3 {
            return Err(unsupported("more than three batch axes"));
        }
        while pixels.len() < 3 {
            pixels.insert(0, (0, 0, 1));
        }
        let (ci, co) = (input.shape[kd], wshape[ow_ix]);
        let co_pad = co.next_multiple_of(4);
        let wst = strides(&wshape);
        let mut weights = vec![0.0; ci * co_pad];
        for i in 0..ci {
            for o in 0..co {
                weights[i * co_pad + o] = wvals[i * wst[kw_ix] + o * wst[ow_ix]];
            }
        }
        let [(dn, on, n), (dh, oh_s, h), (dw, ow_s, w)] = [pixels[0], pixels[1], pixels[2]];
        let p = ConvParams {
            ci: u32_of(ci, "channels")?,
            co: u32_of(co, "channels")?,
            ih: u32_of(h, "height")?,
            iw: u32_of(w, "width")?,
            oh: u32_of(h, "height")?,
            ow: u32_of(w, "width")?,
            kh: 1,
            kw: 1,
            sh: 1,
            sw: 1,
            dh: 1,
            dw: 1,
            in_s: [dn, ds[kd], dh, dw].map(|s| s as u32),
            out_s: [on, os[oo], oh_s, ow_s].map(|s| s as u32),
            n: u32_of(n, "batch")?,
            ..Default::default()
        };
        self.emit_conv(node_id, Kernel::Conv, p, input, &weights, oo, &out_shape)
    }

    /// An operand of an element-wise step: (offset field value, region to
    /// relocate by or `None` for a constant, shape).
    fn operand(&mut self, outlet: OutletId) -> TractResult<(u32, Option<usize>, Vec<usize>)> {
        if let Some(k) = self.konst(outlet)? {
            let k = k.cast_to::<f32>()?;
            let off = self.push_consts(k.as_slice::<f32>()?)?;
            Ok((off, None, k.shape().to_vec()))
        } else {
            let v = self.value(outlet)?;
            Ok((0, Some(v.region), v.shape))
        }
    }

    fn lower_elementwise(&mut self, node_id: usize, code: u32, x: f32, y: f32) -> TractResult<()> {
        let node = &self.model.nodes[node_id];
        let name = node.name.clone();
        let inputs = node.inputs.clone();
        let out_shape = self.shape(OutletId::new(node_id, 0))?;
        ensure!(
            out_shape.len() <= 8,
            "rank-{} element-wise operator (node {name}) is not supported",
            out_shape.len()
        );
        let mut p = ElementwiseParams {
            op: code,
            x,
            y,
            total: u32_of(out_shape.iter().product(), "elements")?,
            ..Default::default()
        };
        let pad = 8 - out_shape.len();
        p.dims = [1; 8];
        for (k, &d) in out_shape.iter().enumerate() {
            p.dims[pad + k] = u32_of(d, "dimension")?;
        }
        let mut relocations = Vec::new();
        for (slot, &outlet) in inputs.iter().enumerate().take(2) {
            let (off, region, shape) = self.operand(outlet)?;
            ensure!(
                shape.len() <= out_shape.len(),
                "operand of rank {} for an output of rank {} (node {name})",
                shape.len(),
                out_shape.len()
            );
            let s = strides(&shape);
            let mut st = [0u32; 8];
            let shift = 8 - shape.len();
            for (k, &d) in shape.iter().enumerate() {
                let o = p.dims[shift + k] as usize;
                ensure!(
                    d == o || d == 1,
                    "operand shape {shape:?} does not broadcast to {out_shape:?} (node {name})"
                );
                st[shift + k] = if d == 1 { 0 } else { s[k] as u32 };
            }
            let field = if slot == 0 {
                p.a_off = off;
                p.a_strides = st;
                std::mem::offset_of!(ElementwiseParams, a_off)
            } else {
                p.b_off = off;
                p.b_strides = st;
                std::mem::offset_of!(ElementwiseParams, b_off)
            };
            match region {
                Some(r) => {
                    relocations.push((field, r));
                }
                None => p.sources |= 1 << slot,
            }
        }
        let out = self.new_value(&out_shape);
        relocations.push((std::mem::offset_of!(ElementwiseParams, out_off), out.region));
        let region = out.region;
        self.push_step(Kernel::Elementwise, &name, &p, p.total, relocations, region);
        self.values.insert(OutletId::new(node_id, 0), out);
        Ok(())
    }

    fn lower_pool(&mut self, node_id: usize, spec: &PoolSpec, code: u32) -> TractResult<()> {
        let node = &self.model.nodes[node_id];
        let name = node.name.clone();
        ensure!(
            spec.rank() == 2 && spec.dilations().iter().all(|&d| d == 1),
            "pooling of rank {} or with dilations (node {name}) is not supported",
            spec.rank()
        );
        let input = self.value(node.inputs[0])?;
        let out_shape = self.shape(OutletId::new(node_id, 0))?;
        let (ins, outs) = (
            nchw_strides(spec.data_format, &input.shape)?,
            nchw_strides(spec.data_format, &out_shape)?,
        );
        let (ihw, ohw) = (
            hw_of(spec.data_format, &input.shape),
            hw_of(spec.data_format, &out_shape),
        );
        let padding = spec.computed_padding(&ihw);
        let c = out_shape[outs.c_axis];
        let mut p = PoolParams {
            op: code,
            n: u32_of(ins.n, "batch")?,
            c: u32_of(c, "channels")?,
            ih: u32_of(ihw[0], "height")?,
            iw: u32_of(ihw[1], "width")?,
            oh: u32_of(ohw[0], "height")?,
            ow: u32_of(ohw[1], "width")?,
            kh: spec.kernel_shape[0] as u32,
            kw: spec.kernel_shape[1] as u32,
            sh: spec.stride(0) as u32,
            sw: spec.stride(1) as u32,
            pad_t: padding[0].pad_before as u32,
            pad_l: padding[1].pad_before as u32,
            in_s: ins.strides,
            out_s: outs.strides,
            ..Default::default()
        };
        p.threads = u32_of(out_shape.iter().product(), "elements")?;
        let out = self.new_value(&out_shape);
        let relocations = vec![
            (std::mem::offset_of!(PoolParams, in_off), input.region),
            (std::mem::offset_of!(PoolParams, out_off), out.region),
        ];
        let region = out.region;
        self.push_step(Kernel::Pool, &name, &p, p.threads, relocations, region);
        self.values.insert(OutletId::new(node_id, 0), out);
        Ok(())
    }

    /// tract-onnx's `Resize` is private to its crate: its settings are read
    /// from its `Debug` form, and anything but linear interpolation is an
    /// error.
    fn lower_resize(&mut self, node_id: usize) -> TractResult<()> {
        let node = &self.model.nodes[node_id];
        let name = node.name.clone();
        let debug = format!("{:?}", node.op);
        let field = |key: &str| -> Option<String> {
            let start = debug.find(&format!("{key}: "))? + key.len() + 2;
            let rest = &debug[start..];
            let end = rest.find([',', ' ', '}']).unwrap_or(rest.len());
            Some(rest[..end].to_string())
        };
        ensure!(
            field("interpolator").as_deref() == Some("Linear"),
            "Resize {debug} (node {name}) is not supported: only linear interpolation is"
        );
        let coord = match field("coord_transformer").as_deref() {
            Some("HalfPixel") => 0,
            Some("AlignCorners") => 1,
            Some("Asymmetric") => 2,
            _ => bail!("Resize {debug} (node {name}): unknown coordinate transformation"),
        };
        let input = self.value(node.inputs[0])?;
        let out_shape = self.shape(OutletId::new(node_id, 0))?;
        ensure!(
            input.shape.len() <= 4 && input.shape.len() == out_shape.len(),
            "Resize of rank {} (node {name}) is not supported",
            input.shape.len()
        );
        // tract's scales: the scales input when it has one value per axis,
        // else output / input lengths.
        let mut scales: Vec<f32> = out_shape
            .iter()
            .zip(&input.shape)
            .map(|(&o, &i)| o as f32 / i as f32)
            .collect();
        let scales_input = field("optional_scales_input").and_then(|s| {
            s.strip_prefix("Some(")?
                .strip_suffix(')')?
                .parse::<usize>()
                .ok()
        });
        if let Some(&outlet) = scales_input.and_then(|ix| node.inputs.get(ix))
            && let Ok((_, vals)) = self.const_f32(outlet, "Resize scales")
            && vals.len() == scales.len()
        {
            scales = vals;
        }
        let pad = 4 - out_shape.len();
        let mut p = ResizeParams {
            coord,
            total: u32_of(out_shape.iter().product(), "elements")?,
            in_dims: [1; 4],
            out_dims: [1; 4],
            scales: [1.0; 4],
            ..Default::default()
        };
        for k in 0..out_shape.len() {
            p.in_dims[pad + k] = u32_of(input.shape[k], "dimension")?;
            p.out_dims[pad + k] = u32_of(out_shape[k], "dimension")?;
            p.scales[pad + k] = scales[k];
        }
        let out = self.new_value(&out_shape);
        let relocations = vec![
            (std::mem::offset_of!(ResizeParams, in_off), input.region),
            (std::mem::offset_of!(ResizeParams, out_off), out.region),
        ];
        let region = out.region;
        self.push_step(Kernel::Resize, &name, &p, p.total, relocations, region);
        self.values.insert(OutletId::new(node_id, 0), out);
        Ok(())
    }

    fn lower_axis(&mut self, node_id: usize, axis: &AxisOp) -> TractResult<()> {
        let node = &self.model.nodes[node_id];
        let name = node.name.clone();
        let input_outlet = node.inputs[0];
        let out_shape = self.shape(OutletId::new(node_id, 0))?;
        match axis {
            AxisOp::Add(_) | AxisOp::Rm(_) | AxisOp::Reshape(..) => {
                // Row-major data does not move: the same region, renamed.
                let mut v = self.value(input_outlet)?;
                v.shape = out_shape;
                self.values.insert(OutletId::new(node_id, 0), v);
                Ok(())
            }
            AxisOp::Move(from, to) => {
                let input = self.value(input_outlet)?;
                ensure!(
                    input.shape.len() <= 8,
                    "transpose of rank {} (node {name}) is not supported",
                    input.shape.len()
                );
                let mut perm: Vec<usize> = (0..input.shape.len()).collect();
                let a = perm.remove(*from);
                perm.insert(*to, a);
                let s = strides(&input.shape);
                let pad = 8 - out_shape.len();
                let mut p = ElementwiseParams {
                    op: op::COPY,
                    total: u32_of(out_shape.iter().product(), "elements")?,
                    dims: [1; 8],
                    ..Default::default()
                };
                for (k, &src) in perm.iter().enumerate() {
                    p.dims[pad + k] = out_shape[k] as u32;
                    p.a_strides[pad + k] = s[src] as u32;
                }
                let out = self.new_value(&out_shape);
                let relocations = vec![
                    (std::mem::offset_of!(ElementwiseParams, a_off), input.region),
                    (std::mem::offset_of!(ElementwiseParams, out_off), out.region),
                ];
                let region = out.region;
                self.push_step(Kernel::Elementwise, &name, &p, p.total, relocations, region);
                self.values.insert(OutletId::new(node_id, 0), out);
                Ok(())
            }
        }
    }
}

/// Strides of the n, c, h, w axes of a tensor in `format` (0 for a missing
/// n), the batch size and the channel axis.
struct Nchw {
    strides: [u32; 4],
    n: usize,
    c_axis: usize,
}

fn nchw_strides(format: DataFormat, shape: &[usize]) -> TractResult<Nchw> {
    let s = strides(shape);
    let (n, c, h, w) = match format {
        DataFormat::NCHW => (Some(0), 1, 2, 3),
        DataFormat::NHWC => (Some(0), 3, 1, 2),
        DataFormat::CHW => (None, 0, 1, 2),
        DataFormat::HWC => (None, 2, 0, 1),
    };
    ensure!(
        shape.len() == if n.is_some() { 4 } else { 3 },
        "tensor of shape {shape:?} is not 2-D {format:?}"
    );
    Ok(Nchw {
        strides: [
            n.map_or(0, |a| s[a] as u32),
            s[c] as u32,
            s[h] as u32,
            s[w] as u32,
        ],
        n: n.map_or(1, |a| shape[a]),
        c_axis: c,
    })
}

fn hw_of(format: DataFormat, shape: &[usize]) -> [usize; 2] {
    match format {
        DataFormat::NCHW => [shape[2], shape[3]],
        DataFormat::NHWC => [shape[1], shape[2]],
        DataFormat::CHW => [shape[1], shape[2]],
        DataFormat::HWC => [shape[0], shape[1]],
    }
}

impl Program {
    /// Lowers `model` (one input, concrete shapes, decluttered) to GPU
    /// steps.
    pub(crate) fn lower(model: &TypedModel) -> TractResult<Program> {
        let inputs = model.input_outlets()?.to_vec();
        ensure!(
            inputs.len() == 1,
            "{} model inputs (one expected)",
            inputs.len()
        );
        let mut l = Lowering {
            model,
            values: HashMap::new(),
            regions: Vec::new(),
            consts: Vec::new(),
            steps: Vec::new(),
            fused: HashSet::new(),
        };
        for node in model.eval_order()? {
            l.lower(node)?;
        }
        let input = l.value(inputs[0])?;
        let outputs = model
            .output_outlets()?
            .iter()
            .map(|&o| l.value(o))
            .collect::<TractResult<Vec<_>>>()?;
        if l.consts.is_empty() {
            l.consts.resize(4, 0.0);
        }
        // First-fit allocation of the regions in execution order. A region
        // lives from the step that writes it to the last step that reads
        // it; the input from the start, the outputs to the end.
        let n = l.regions.len();
        let mut last_use = vec![0usize; n];
        for (k, step) in l.steps.iter().enumerate() {
            for &r in step.reads.iter().chain([&step.write]) {
                last_use[r] = last_use[r].max(k);
            }
        }
        for v in &outputs {
            last_use[v.region] = usize::MAX;
        }
        let mut offsets = vec![usize::MAX; n];
        let mut live: Vec<(usize, usize, usize)> = Vec::new(); // (offset, len, region)
        let mut arena_len = 0;
        let mut place = |r: usize, live: &mut Vec<(usize, usize, usize)>, offsets: &mut [usize]| {
            let len = l.regions[r].next_multiple_of(4);
            live.sort_unstable();
            let mut at = 0;
            for &(o, ln, _) in live.iter() {
                if o >= at + len {
                    break;
                }
                at = at.max(o + ln);
            }
            live.push((at, len, r));
            offsets[r] = at;
            arena_len = arena_len.max(at + len);
        };
        place(input.region, &mut live, &mut offsets);
        for (k, step) in l.steps.iter().enumerate() {
            if offsets[step.write] == usize::MAX {
                place(step.write, &mut live, &mut offsets);
            }
            live.retain(|&(_, _, r)| last_use[r] > k);
        }
        let mut steps = l.steps;
        for step in &mut steps {
            for &(field, region) in &step.relocations {
                let bytes = &mut step.uniform[field..field + 4];
                let base = u32::from_ne_bytes(bytes.try_into().expect("4 bytes"));
                let at = u32_of(base as usize + offsets[region], "arena offset")?;
                bytes.copy_from_slice(&at.to_ne_bytes());
            }
        }
        let located = |v: &Value| (offsets[v.region], v.shape.iter().product::<usize>());
        Ok(Program {
            steps,
            consts: l.consts,
            arena_len,
            input: located(&input),
            outputs: outputs.iter().map(located).collect(),
        })
    }
}

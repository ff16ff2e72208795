// 2D convolution (one group) with bias, an optional residual add and an
// activation fused into the epilogue: y = act(conv(x, w) + b [+ r]), or
// y = act(conv(x, w) + b) + r with res_after.
//
// Every tensor lives in one activation arena (`arena`, f32) at an offset;
// weights and biases in the constant buffer (`consts`, vec4-aligned blocks).
// Input and output are addressed through (n, c, h, w) strides, so NHWC and
// NCHW tensors use the same kernel. Weights are repacked on upload to
// [kh][kw][ci][co_pad] with co_pad a multiple of 4, so one vec4 load feeds
// four output channels.
//
// One invocation computes a 4 (output channels) x 4 (output columns) tile:
// 16 accumulators, 4 input loads and one vec4 weight load per input channel
// and tap.
//
// conv_common.wgsl, put in front, declares the uniform block `p`, the
// bindings, `tile_of` and `store_tile`.

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let tl = tile_of(gid, nwg);
    if !tl.inside { return; }
    let co4s = p.co_pad / 4u;
    var acc: array<vec4<f32>, 4>;
    for (var ky = 0u; ky < p.kh; ky++) {
        let iy = i32(tl.oy * p.sh + ky * p.dh) - i32(p.pad_t);
        if iy < 0 || iy >= i32(p.ih) { continue; }
        let row = p.in_off + tl.n * p.in_s.x + u32(iy) * p.in_s.z;
        for (var kx = 0u; kx < p.kw; kx++) {
            let ixa = tl.ix0 + i32(kx * p.dw);
            let ixb = ixa + i32(p.sw);
            let ixc = ixb + i32(p.sw);
            let ixd = ixc + i32(p.sw);
            let va = ixa >= 0 && ixa < i32(p.iw);
            let vb = ixb >= 0 && ixb < i32(p.iw) && tl.ox0 + 1u < p.ow;
            let vc = ixc >= 0 && ixc < i32(p.iw) && tl.ox0 + 2u < p.ow;
            let vd = ixd >= 0 && ixd < i32(p.iw) && tl.ox0 + 3u < p.ow;
            let pa = row + u32(max(ixa, 0)) * p.in_s.w;
            let pb = row + u32(max(ixb, 0)) * p.in_s.w;
            let pc = row + u32(max(ixc, 0)) * p.in_s.w;
            let pd = row + u32(max(ixd, 0)) * p.in_s.w;
            var w = (p.w_off + (ky * p.kw + kx) * p.ci * p.co_pad) / 4u + tl.cb;
            for (var c = 0u; c < p.ci; c++) {
                let wv = consts[w];
                let o = c * p.in_s.y;
                acc[0] += select(0.0, arena[pa + o], va) * wv;
                acc[1] += select(0.0, arena[pb + o], vb) * wv;
                acc[2] += select(0.0, arena[pc + o], vc) * wv;
                acc[3] += select(0.0, arena[pd + o], vd) * wv;
                w += co4s;
            }
        }
    }
    store_tile(tl, acc);
}

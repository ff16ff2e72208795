// Depthwise 2D convolution (groups = channels, one filter per channel) with
// bias, an optional residual add and an activation fused into the epilogue,
// as conv.wgsl. Weights are repacked on upload to [kh][kw][c_pad], c_pad a
// multiple of 4.
//
// One invocation computes 4 channels x 4 output columns: one vec4 weight
// load per tap serves four pixels.
//
// conv_common.wgsl, put in front, declares the uniform block `p`, the
// bindings, `tile_of` and `store_tile`.

// The four channels c0..c0+3 of one input pixel (zero past the last channel).
fn pixel(at: u32, c0: u32) -> vec4<f32> {
    let s = p.in_s.y;
    return vec4<f32>(
        arena[at],
        select(0.0, arena[at + s], c0 + 1u < p.co),
        select(0.0, arena[at + 2u * s], c0 + 2u < p.co),
        select(0.0, arena[at + 3u * s], c0 + 3u < p.co),
    );
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let tl = tile_of(gid, nwg);
    if !tl.inside { return; }
    let c0 = tl.cb * 4u;
    var acc: array<vec4<f32>, 4>;
    for (var ky = 0u; ky < p.kh; ky++) {
        let iy = i32(tl.oy * p.sh + ky * p.dh) - i32(p.pad_t);
        if iy < 0 || iy >= i32(p.ih) { continue; }
        let row = p.in_off + tl.n * p.in_s.x + c0 * p.in_s.y + u32(iy) * p.in_s.z;
        for (var kx = 0u; kx < p.kw; kx++) {
            let wv = consts[(p.w_off + (ky * p.kw + kx) * p.co_pad) / 4u + tl.cb];
            let ixa = tl.ix0 + i32(kx * p.dw);
            let ixb = ixa + i32(p.sw);
            let ixc = ixb + i32(p.sw);
            let ixd = ixc + i32(p.sw);
            if ixa >= 0 && ixa < i32(p.iw) {
                acc[0] += pixel(row + u32(ixa) * p.in_s.w, c0) * wv;
            }
            if ixb >= 0 && ixb < i32(p.iw) && tl.ox0 + 1u < p.ow {
                acc[1] += pixel(row + u32(ixb) * p.in_s.w, c0) * wv;
            }
            if ixc >= 0 && ixc < i32(p.iw) && tl.ox0 + 2u < p.ow {
                acc[2] += pixel(row + u32(ixc) * p.in_s.w, c0) * wv;
            }
            if ixd >= 0 && ixd < i32(p.iw) && tl.ox0 + 3u < p.ow {
                acc[3] += pixel(row + u32(ixd) * p.in_s.w, c0) * wv;
            }
        }
    }
    store_tile(tl, acc);
}

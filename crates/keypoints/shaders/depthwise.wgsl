// Depthwise 2D convolution (groups = channels, one filter per channel) with
// bias, an optional residual add and an activation fused into the epilogue,
// as conv.wgsl. Weights are repacked on upload to [kh][kw][c_pad], c_pad a
// multiple of 4.
//
// One invocation computes 4 channels x 4 output columns: one vec4 weight
// load per tap serves four pixels.

struct Conv {
    in_off: u32, out_off: u32, w_off: u32, b_off: u32,
    res_off: u32, act: u32, ci: u32, co: u32,
    ih: u32, iw: u32, oh: u32, ow: u32,
    kh: u32, kw: u32, sh: u32, sw: u32,
    dh: u32, dw: u32, pad_t: u32, pad_l: u32,
    in_s: vec4<u32>,
    out_s: vec4<u32>,
    n: u32, co_pad: u32, lo: f32, hi: f32,
    slope_off: u32, threads: u32, res_after: u32, _p1: u32,
};

@group(0) @binding(0) var<uniform> p: Conv;
@group(0) @binding(1) var<storage, read_write> arena: array<f32>;
@group(0) @binding(2) var<storage, read> consts: array<vec4<f32>>;

const NONE: u32 = 0xffffffffu;

fn cst(i: u32) -> f32 {
    return consts[i >> 2u][i & 3u];
}

fn activate(v: f32, c: u32) -> f32 {
    switch p.act {
        case 1u: { return clamp(v, p.lo, p.hi); }
        case 2u: { return select(v * cst(p.slope_off + c), v, v >= 0.0); }
        case 3u: { return 1.0 / (1.0 + exp(-v)); }
        default: { return v; }
    }
}

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
    let t = gid.x + gid.y * nwg.x * 64u;
    if t >= p.threads { return; }
    let c4s = p.co_pad / 4u;
    let owbs = (p.ow + 3u) / 4u;
    // Neighbouring invocations take neighbouring addresses: channel blocks
    // when channels are innermost (NHWC), column blocks otherwise (CHW).
    var cb: u32;
    var ox0: u32;
    var rest: u32;
    if p.in_s.y == 1u {
        cb = t % c4s;
        rest = t / c4s;
        ox0 = (rest % owbs) * 4u;
        rest = rest / owbs;
    } else {
        ox0 = (t % owbs) * 4u;
        rest = t / owbs;
        cb = rest % c4s;
        rest = rest / c4s;
    }
    let oy = rest % p.oh;
    let n = rest / p.oh;
    let c0 = cb * 4u;

    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    let ix0 = i32(ox0 * p.sw) - i32(p.pad_l);
    let xstep = i32(p.sw);
    for (var ky = 0u; ky < p.kh; ky++) {
        let iy = i32(oy * p.sh + ky * p.dh) - i32(p.pad_t);
        if iy < 0 || iy >= i32(p.ih) { continue; }
        let row = p.in_off + n * p.in_s.x + c0 * p.in_s.y + u32(iy) * p.in_s.z;
        for (var kx = 0u; kx < p.kw; kx++) {
            let wv = consts[(p.w_off + (ky * p.kw + kx) * p.co_pad) / 4u + cb];
            let ixa = ix0 + i32(kx * p.dw);
            let ixb = ixa + xstep;
            let ixc = ixb + xstep;
            let ixd = ixc + xstep;
            if ixa >= 0 && ixa < i32(p.iw) {
                acc0 += pixel(row + u32(ixa) * p.in_s.w, c0) * wv;
            }
            if ixb >= 0 && ixb < i32(p.iw) && ox0 + 1u < p.ow {
                acc1 += pixel(row + u32(ixb) * p.in_s.w, c0) * wv;
            }
            if ixc >= 0 && ixc < i32(p.iw) && ox0 + 2u < p.ow {
                acc2 += pixel(row + u32(ixc) * p.in_s.w, c0) * wv;
            }
            if ixd >= 0 && ixd < i32(p.iw) && ox0 + 3u < p.ow {
                acc3 += pixel(row + u32(ixd) * p.in_s.w, c0) * wv;
            }
        }
    }

    let bias = consts[p.b_off / 4u + cb];
    let accs = array<vec4<f32>, 4>(acc0 + bias, acc1 + bias, acc2 + bias, acc3 + bias);
    for (var j = 0u; j < 4u; j++) {
        let ox = ox0 + j;
        if ox >= p.ow { break; }
        for (var k = 0u; k < 4u; k++) {
            let c = c0 + k;
            if c >= p.co { break; }
            let at = n * p.out_s.x + c * p.out_s.y + oy * p.out_s.z + ox * p.out_s.w;
            var v = accs[j][k];
            if p.res_off != NONE && p.res_after == 0u { v += arena[p.res_off + at]; }
            v = activate(v, c);
            if p.res_off != NONE && p.res_after != 0u { v += arena[p.res_off + at]; }
            arena[p.out_off + at] = v;
        }
    }
}

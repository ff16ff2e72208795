// What conv.wgsl and depthwise.wgsl share, put in front of each when the
// kernels are loaded (`Kernel::source`): the uniform block, the bindings,
// the activations, which 4 x 4 tile an invocation computes, and the
// epilogue that adds the bias and residual, activates and stores the tile.

struct Conv {
    in_off: u32, out_off: u32, w_off: u32, b_off: u32,
    res_off: u32, act: u32, ci: u32, co: u32,
    ih: u32, iw: u32, oh: u32, ow: u32,
    kh: u32, kw: u32, sh: u32, sw: u32,
    dh: u32, dw: u32, pad_t: u32, pad_l: u32,
    in_s: vec4<u32>,   // strides of n, c, h, w
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

// act: 0 none, 1 clamp to [lo, hi] (ReLU, ReLU6), 2 PReLU with per-channel
// slopes at slope_off, 3 sigmoid.
fn activate(v: f32, c: u32) -> f32 {
    switch p.act {
        case 1u: { return clamp(v, p.lo, p.hi); }
        case 2u: { return select(v * cst(p.slope_off + c), v, v >= 0.0); }
        case 3u: { return 1.0 / (1.0 + exp(-v)); }
        default: { return v; }
    }
}

// The tile of one invocation: output channels cb*4 .. cb*4+3, columns
// ox0 .. ox0+3 of row oy of image n; ix0 is the input column under ox0's
// first tap. `inside` is false for the invocations past the last tile.
struct Tile {
    inside: bool,
    cb: u32,
    ox0: u32,
    oy: u32,
    n: u32,
    ix0: i32,
};

fn tile_of(gid: vec3<u32>, nwg: vec3<u32>) -> Tile {
    let t = gid.x + gid.y * nwg.x * 64u;
    let co4s = p.co_pad / 4u;
    let owbs = (p.ow + 3u) / 4u;
    // Neighbouring invocations take neighbouring addresses: channel blocks
    // when channels are innermost (NHWC), column blocks otherwise (CHW).
    var cb: u32;
    var ox0: u32;
    var rest: u32;
    if p.in_s.y == 1u {
        cb = t % co4s;
        rest = t / co4s;
        ox0 = (rest % owbs) * 4u;
        rest = rest / owbs;
    } else {
        ox0 = (t % owbs) * 4u;
        rest = t / owbs;
        cb = rest % co4s;
        rest = rest / co4s;
    }
    let ix0 = i32(ox0 * p.sw) - i32(p.pad_l);
    return Tile(t < p.threads, cb, ox0, rest % p.oh, rest / p.oh, ix0);
}

// The epilogue: acc[j][k] is column ox0 + j, channel cb*4 + k before the
// bias; adds the bias and the residual (before or after the activation),
// activates and stores what lies inside the output.
fn store_tile(tl: Tile, acc: array<vec4<f32>, 4>) {
    let bias = consts[p.b_off / 4u + tl.cb];
    let accs = array<vec4<f32>, 4>(acc[0] + bias, acc[1] + bias, acc[2] + bias, acc[3] + bias);
    for (var j = 0u; j < 4u; j++) {
        let ox = tl.ox0 + j;
        if ox >= p.ow { break; }
        for (var k = 0u; k < 4u; k++) {
            let c = tl.cb * 4u + k;
            if c >= p.co { break; }
            let at = tl.n * p.out_s.x + c * p.out_s.y + tl.oy * p.out_s.z + ox * p.out_s.w;
            var v = accs[j][k];
            if p.res_off != NONE && p.res_after == 0u { v += arena[p.res_off + at]; }
            v = activate(v, c);
            if p.res_off != NONE && p.res_after != 0u { v += arena[p.res_off + at]; }
            arena[p.out_off + at] = v;
        }
    }
}

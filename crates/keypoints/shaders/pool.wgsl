// 2D max or average pooling, one invocation per output element. Input and
// output are addressed through (n, c, h, w) strides as in conv.wgsl; taps
// outside the input are skipped (max pooling's -inf padding; average
// pooling divides by the taps inside, ONNX's count_include_pad = 0).

struct Pool {
    in_off: u32, out_off: u32, op: u32, threads: u32, // op: 0 max, 1 average
    n: u32, c: u32, ih: u32, iw: u32,
    oh: u32, ow: u32, kh: u32, kw: u32,
    sh: u32, sw: u32, pad_t: u32, pad_l: u32,
    in_s: vec4<u32>,
    out_s: vec4<u32>,
};

@group(0) @binding(0) var<uniform> p: Pool;
@group(0) @binding(1) var<storage, read_write> arena: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * 64u;
    if t >= p.threads { return; }
    // Channel fastest: neighbouring invocations read neighbouring NHWC values.
    let c = t % p.c;
    var rest = t / p.c;
    let ox = rest % p.ow;
    rest = rest / p.ow;
    let oy = rest % p.oh;
    let n = rest / p.oh;
    let base = p.in_off + n * p.in_s.x + c * p.in_s.y;
    var best = -3.4e38;
    var sum = 0.0;
    var count = 0.0;
    for (var ky = 0u; ky < p.kh; ky++) {
        let iy = i32(oy * p.sh + ky) - i32(p.pad_t);
        if iy < 0 || iy >= i32(p.ih) { continue; }
        for (var kx = 0u; kx < p.kw; kx++) {
            let ix = i32(ox * p.sw + kx) - i32(p.pad_l);
            if ix < 0 || ix >= i32(p.iw) { continue; }
            let v = arena[base + u32(iy) * p.in_s.z + u32(ix) * p.in_s.w];
            best = max(best, v);
            sum += v;
            count += 1.0;
        }
    }
    let at = p.out_off + n * p.out_s.x + c * p.out_s.y + oy * p.out_s.z + ox * p.out_s.w;
    arena[at] = select(sum / max(count, 1.0), best, p.op == 0u);
}

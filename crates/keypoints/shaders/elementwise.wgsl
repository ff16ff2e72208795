// Element-wise operators with broadcasting: y = act(a op b) or y = f(a),
// over an output of up to 6 axes. Operands are addressed by strides (0
// along a broadcast axis), each in the arena or in the constant buffer.

struct Elementwise {
    out_off: u32, a_off: u32, b_off: u32, sources: u32, // bit 0: a in consts, bit 1: b in consts
    op: u32, total: u32, x: f32, y: f32,                  // x, y: the scalars of clamp / fill
    dims_lo: vec4<u32>, dims_hi: vec4<u32>,               // output shape, innermost last, 1-padded in front
    a_lo: vec4<u32>, a_hi: vec4<u32>,                     // a's strides
    b_lo: vec4<u32>, b_hi: vec4<u32>,
};

@group(0) @binding(0) var<uniform> p: Elementwise;
@group(0) @binding(1) var<storage, read_write> arena: array<f32>;
@group(0) @binding(2) var<storage, read> consts: array<vec4<f32>>;

fn load(at: u32, in_consts: bool) -> f32 {
    if in_consts {
        return consts[at >> 2u][at & 3u];
    }
    return arena[at];
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * 64u;
    if t >= p.total { return; }
    let dims = array<u32, 8>(p.dims_lo.x, p.dims_lo.y, p.dims_lo.z, p.dims_lo.w,
                             p.dims_hi.x, p.dims_hi.y, p.dims_hi.z, p.dims_hi.w);
    let sa = array<u32, 8>(p.a_lo.x, p.a_lo.y, p.a_lo.z, p.a_lo.w,
                           p.a_hi.x, p.a_hi.y, p.a_hi.z, p.a_hi.w);
    let sb = array<u32, 8>(p.b_lo.x, p.b_lo.y, p.b_lo.z, p.b_lo.w,
                           p.b_hi.x, p.b_hi.y, p.b_hi.z, p.b_hi.w);
    var rest = t;
    var ia = p.a_off;
    var ib = p.b_off;
    for (var k = 7; k >= 0; k--) {
        let i = rest % dims[k];
        rest = rest / dims[k];
        ia += i * sa[k];
        ib += i * sb[k];
    }
    let a = load(ia, (p.sources & 1u) != 0u);
    var v: f32;
    switch p.op {
        // Binary.
        case 0u: { v = a + load(ib, (p.sources & 2u) != 0u); }
        case 1u: { v = a - load(ib, (p.sources & 2u) != 0u); }
        case 2u: { v = a * load(ib, (p.sources & 2u) != 0u); }
        case 3u: { v = a / load(ib, (p.sources & 2u) != 0u); }
        case 4u: { v = max(a, load(ib, (p.sources & 2u) != 0u)); }
        case 5u: { v = min(a, load(ib, (p.sources & 2u) != 0u)); }
        case 6u: { v = pow(a, load(ib, (p.sources & 2u) != 0u)); }
        // Unary.
        case 16u: { v = a; }
        case 17u: { v = clamp(a, p.x, p.y); }
        case 18u: { v = 1.0 / (1.0 + exp(-a)); }
        case 19u: { v = tanh(a); }
        case 20u: { v = exp(a); }
        case 21u: { v = abs(a); }
        case 22u: { v = -a; }
        case 23u: { v = sqrt(a); }
        case 24u: { v = 1.0 / a; }
        case 25u: { v = log(a); }
        // Fill with x (no operand).
        default: { v = p.x; }
    }
    arena[p.out_off + t] = v;
}

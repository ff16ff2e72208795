// Linear resize of a rank-4 tensor (ONNX Resize, mode "linear"), one
// invocation per output element. Each axis maps its output index to a
// source coordinate by the ONNX coordinate transformation (half_pixel,
// align_corners or asymmetric), then interpolates between the two
// neighbouring source indices exactly as tract 0.22 does: the left index is
// the coordinate truncated and clamped to [0, len - 1], the right one
// left + 1 clamped, the weight of the right one coordinate - left. At the
// top/left edge half_pixel gives -0.25 for a factor 2, so tract (and this
// kernel) extrapolates there instead of clamping; see docs/keypoints.md.

struct Resize {
    in_off: u32, out_off: u32, total: u32, coord: u32, // 0 half_pixel, 1 align_corners, 2 asymmetric
    in_dims: vec4<u32>,
    out_dims: vec4<u32>,
    scales: vec4<f32>,
};

@group(0) @binding(0) var<uniform> p: Resize;
@group(0) @binding(1) var<storage, read_write> arena: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * 64u;
    if t >= p.total { return; }
    var left: array<u32, 4>;
    var right: array<u32, 4>;
    var frac: array<f32, 4>;
    var rest = t;
    for (var k = 3; k >= 0; k--) {
        let len_out = p.out_dims[k];
        let len_in = p.in_dims[k];
        let o = rest % len_out;
        rest = rest / len_out;
        if len_in == len_out {
            left[k] = o;
            right[k] = o;
            frac[k] = 0.0;
            continue;
        }
        var x: f32;
        switch p.coord {
            case 1u: { x = f32(o) * f32(len_in - 1u) / f32(len_out - 1u); }
            case 2u: { x = f32(o) / p.scales[k]; }
            default: { x = (f32(o) + 0.5) / p.scales[k] - 0.5; }
        }
        // Rust's `x as usize` saturates negative values to 0.
        let l = min(u32(max(x, 0.0)), len_in - 1u);
        left[k] = l;
        right[k] = min(l + 1u, len_in - 1u);
        frac[k] = x - f32(l);
    }
    var acc = 0.0;
    for (var corner = 0u; corner < 16u; corner++) {
        var w = 1.0;
        var at = 0u;
        for (var k = 0u; k < 4u; k++) {
            let use_right = ((corner >> k) & 1u) == 1u;
            w *= select(1.0 - frac[k], frac[k], use_right);
            at = at * p.in_dims[k] + select(left[k], right[k], use_right);
        }
        if w != 0.0 {
            acc += w * arena[p.in_off + at];
        }
    }
    arena[p.out_off + t] = acc;
}

// Body-part label raster (RTPF §VI: "projecting the 3D body parts labels on
// the image plane"), drawn as capsule impostors into a tile atlas.
//
// This is a step-for-step port of `crates/labels/src/raster.rs` (the CPU
// reference): the same f32 camera transform, the same pixel-centre ray with
// the unnormalised direction d = ((px + 0.5 − cx) / fx, (py + 0.5 − cy) / fy, 1)
// (so the ray parameter t of a hit is its camera-space depth), the same
// ray–capsule entry test with every expression in the same order and every
// product rounded on its own (`unfused`), and the same depth rule: the nearest t wins, an exact tie goes to the lower capsule
// index. The tie rule comes from the pipeline: capsules are drawn in index
// order and the depth compare is `Less`, so a later capsule replaces a pixel
// only when strictly nearer. The depth written is t · 2⁻²⁰, a power-of-two
// scaling that is exact in f32, so the depth test compares the very t values
// the CPU compares (any t < 2²⁰ fits the [0, 1) depth range).
//
// One instance is one capsule of one particle: instance i of a pass is
// capsule i % K of the particle in tile i / K (K capsules per pose). The
// capsules (in camera space) and their bounding rectangles come from the
// setup pass (`capsule_setup.wgsl`, `raster::capsule_rect` ported); the quad
// covers the rectangle, inside the particle's W × H tile.
//
// The constants and `raster_common.wgsl` (the uniforms, `Capsule`, `Rect`,
// `unfused`, `dot3`, and the ray test `ray_capsule` shared with the compute
// raster `raster_count.wgsl`) are prepended by the Rust side.

@group(0) @binding(0) var<uniform> params: RasterUniforms;
@group(0) @binding(1) var<storage, read> capsules: array<Capsule>;
@group(0) @binding(2) var<storage, read> rects: array<Rect>;

// The per-capsule terms of the ray test (`PreparedCapsule` in raster.rs),
// passed flat so that every fragment sees the vertex shader's bits.
struct VertexOut {
    @builtin(position) position: vec4<f32>,
    @location(0) @interpolate(flat) a: vec3<f32>,
    @location(1) @interpolate(flat) b: vec3<f32>,
    @location(2) @interpolate(flat) ba: vec3<f32>,
    // baba, baoa, oaoa, obob
    @location(3) @interpolate(flat) terms: vec4<f32>,
    // rr, k0
    @location(4) @interpolate(flat) rr_k0: vec2<f32>,
    @location(5) @interpolate(flat) label: u32,
    @location(6) @interpolate(flat) tile_origin: vec2<u32>,
}

struct FragmentOut {
    @location(0) label: u32,
    @builtin(frag_depth) depth: f32,
}

@vertex
fn vs_main(
    @builtin(vertex_index) corner: u32,
    @builtin(instance_index) instance: u32,
) -> VertexOut {
    let cap = capsules[instance];
    let rect = rects[instance];
    let tile = instance / params.capsules_per_pose;
    let origin = vec2<u32>(
        (tile % params.tile_columns) * params.width,
        (tile / params.tile_columns) * params.height,
    );
    var out: VertexOut;
    // Triangle strip corners 0..4: (x0, y0), (x1, y0), (x0, y1), (x1, y1).
    // An empty rectangle collapses to one point: nothing is rasterised.
    let empty = rect.x0 >= rect.x1 || rect.y0 >= rect.y1;
    let x = select(rect.x0, rect.x1, (corner & 1u) != 0u && !empty);
    let y = select(rect.y0, rect.y1, (corner & 2u) != 0u && !empty);
    // Rectangle edges lie on integer pixel boundaries; pixel centres are
    // half a pixel inside, so the coverage is exactly the rectangle's pixels.
    let p = vec2<f32>(origin + vec2<u32>(x, y));
    out.position = vec4<f32>(
        2.0 * p.x / f32(params.atlas_width) - 1.0,
        1.0 - 2.0 * p.y / f32(params.atlas_height),
        0.0,
        1.0,
    );
    // The per-capsule terms (`prepare_capsule`, raster_common.wgsl).
    let c = prepare_capsule(cap);
    out.a = c.a;
    out.b = c.b;
    out.ba = c.ba;
    out.terms = c.terms;
    out.rr_k0 = vec2<f32>(c.rr, c.k0);
    out.label = c.label;
    out.tile_origin = origin;
    return out;
}

@fragment
fn fs_main(in: VertexOut) -> FragmentOut {
    // position.xy is the pixel centre (px + 0.5, py + 0.5) in the atlas.
    let pixel = vec2<u32>(in.position.xy) - in.tile_origin;
    let d = pixel_ray(pixel.x, pixel.y);
    var c: PreparedCapsule;
    c.a = in.a;
    c.b = in.b;
    c.ba = in.ba;
    c.terms = in.terms;
    c.rr = in.rr_k0.x;
    c.k0 = in.rr_k0.y;
    c.label = in.label;
    let t = ray_capsule(c, d, ray_dd(d));
    if !(t > 0.0) {
        discard;
    }
    var out: FragmentOut;
    out.label = in.label;
    out.depth = t * params.depth_scale;
    return out;
}

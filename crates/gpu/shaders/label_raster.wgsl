// Body-part label raster (RTPF §VI: "projecting the 3D body parts labels on
// the image plane"), drawn as capsule impostors into a tile atlas.
//
// This is a step-for-step port of `crates/gpu/src/raster.rs` (the CPU
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
// `const CLASSES: u32` and `raster_common.wgsl` (the uniforms, `Capsule`,
// `Rect`, `unfused`, `dot3`) are prepended by the Rust side.

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
    // The per-capsule terms, as `LabelRaster::draw_impl` (the capsule is in
    // camera space already: `capsule_setup.wgsl`).
    let a = cap.a;
    let b = cap.b;
    let r = cap.radius;
    let ba = b - a;
    let oa = -a;
    out.a = a;
    out.b = b;
    out.ba = ba;
    out.terms = vec4<f32>(dot3(ba, ba), dot3(ba, oa), dot3(oa, oa), dot3(b, b));
    out.rr_k0 = vec2<f32>(
        r * r,
        unfused(dot3(ba, ba) * dot3(oa, oa)) - unfused(dot3(ba, oa) * dot3(ba, oa))
            - unfused(r * r * dot3(ba, ba)),
    );
    out.label = cap.label;
    out.tile_origin = origin;
    return out;
}

// Entry root t > 0 of the sphere |t d − p|² = r² (`sphere` in
// `raster::ray_capsule`); −1 when missed or behind.
fn sphere_entry(oc_d: f32, ococ: f32, rr: f32, dd: f32) -> f32 {
    let c0 = ococ - rr;
    let h = unfused(oc_d * oc_d) - unfused(dd * c0);
    if h < 0.0 {
        return -1.0;
    }
    let t = (-oc_d - sqrt(h)) / dd;
    return select(-1.0, t, t > 0.0);
}

// `raster::ray_capsule`: the ray parameter t > 0 where the ray t · d enters
// the capsule, or −1.
fn ray_capsule(c: VertexOut, d: vec3<f32>, dd: f32) -> f32 {
    let baba = c.terms.x;
    let baoa = c.terms.y;
    let oaoa = c.terms.z;
    let obob = c.terms.w;
    let rr = c.rr_k0.x;
    let k0 = c.rr_k0.y;
    let oa = -c.a;
    let bard = dot3(c.ba, d);
    let rdoa = dot3(d, oa);
    // Infinite cylinder: k2 t² + 2 k1 t + k0 = 0.
    let k2 = unfused(baba * dd) - unfused(bard * bard);
    let k1 = unfused(baba * rdoa) - unfused(baoa * bard);
    if k2 > 0.0 {
        let h = unfused(k1 * k1) - unfused(k2 * k0);
        if h < 0.0 {
            return -1.0; // misses the infinite cylinder, hence the capsule
        }
        let t = (-k1 - sqrt(h)) / k2;
        let y = baoa + unfused(t * bard);
        if y > 0.0 && y < baba {
            return select(-1.0, t, t > 0.0);
        }
    }
    // End spheres: the nearer entry; on equal t the first (`if e < s`).
    let s = sphere_entry(rdoa, oaoa, rr, dd);
    let ob_d = -dot3(d, c.b);
    let e = sphere_entry(ob_d, obob, rr, dd);
    if s > 0.0 && e > 0.0 {
        return select(s, e, e < s);
    }
    return select(e, s, s > 0.0);
}

@fragment
fn fs_main(in: VertexOut) -> FragmentOut {
    // position.xy is the pixel centre (px + 0.5, py + 0.5) in the atlas.
    let pixel = vec2<u32>(in.position.xy) - in.tile_origin;
    let dx = (f32(pixel.x) + 0.5 - params.cx) / params.fx;
    let dy = (f32(pixel.y) + 0.5 - params.cy) / params.fy;
    let d = vec3<f32>(dx, dy, 1.0);
    let dd = unfused(dx * dx) + unfused(dy * dy) + 1.0;
    let t = ray_capsule(in, d, dd);
    if !(t > 0.0) {
        discard;
    }
    var out: FragmentOut;
    out.label = in.label;
    out.depth = t * params.depth_scale;
    return out;
}

// Declarations shared by the likelihood shaders (the Rust side prepends this
// file, after the constants `CLASSES`, `WORKGROUP_SIZE`, `COUNT_WORKGROUP_SIZE`
// and `CAPSULES`). Each shader declares `params: RasterUniforms` at group 0,
// binding 0.

// `RasterUniforms` in gpu_likelihood.rs (128 bytes).
struct RasterUniforms {
    // Rows of the camera-from-world rotation; w holds the translation.
    row0: vec4<f32>,
    row1: vec4<f32>,
    row2: vec4<f32>,
    fx: f32,
    fy: f32,
    cx: f32,
    cy: f32,
    // Tile (image) size in pixels.
    width: u32,
    height: u32,
    tile_columns: u32,
    capsules_per_pose: u32,
    atlas_width: u32,
    atlas_height: u32,
    depth_scale: f32,
    // Always 0 (see `unfused`).
    zero: u32,
    // Class of rendered label l: byte (l − 1) % 4 of word (l − 1) / 4.
    label_map: vec4<u32>,
    // P, end points per pose in the uploaded point buffer.
    points_per_pose: u32,
}

// `CapsuleInstance` (32 bytes); the capsule buffer holds them in camera
// space.
struct Capsule {
    a: vec3<f32>,
    radius: f32,
    b: vec3<f32>,
    label: u32,
}

// `GpuRect`: pixels x0..x1 × y0..y1 of a tile (half-open); empty is all 0.
struct Rect {
    x0: u32,
    y0: u32,
    x1: u32,
    y1: u32,
}

// Returns the product x, rounded to f32 here. WGSL (like the SPIR-V naga
// emits, which carries no NoContraction decoration) lets the driver fuse
// `a * b + c` into one FMA, rounding once instead of twice; Rust never does,
// and on lavapipe the fused low bits flipped about 1 covered pixel in 6000.
// An integer OR with a uniform the compiler cannot see is zero keeps the
// product and the sum apart, so every expression rounds as in raster.rs.
fn unfused(x: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) | params.zero);
}

// a0·b0 + a1·b1 + a2·b2, left to right and unfused (`raster::dot`); the
// builtin `dot` promises neither.
fn dot3(a: vec3<f32>, b: vec3<f32>) -> f32 {
    return unfused(a.x * b.x) + unfused(a.y * b.y) + unfused(a.z * b.z);
}

// `RasterCamera::to_camera`: r0·x + r1·y + r2·z + t per row, left to right,
// unfused.
fn to_camera(p: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(
        dot3(params.row0.xyz, p) + params.row0.w,
        dot3(params.row1.xyz, p) + params.row1.w,
        dot3(params.row2.xyz, p) + params.row2.w,
    );
}

// `PreparedCapsule` in raster.rs: a capsule in camera space with every
// per-capsule term of the ray test (64 bytes; it lives in registers,
// varyings and workgroup memory only, never in a buffer).
struct PreparedCapsule {
    a: vec3<f32>,
    rr: f32,
    b: vec3<f32>,
    // |ba|² |oa|² − (ba · oa)² − r² |ba|²: the cylinder's constant term.
    k0: f32,
    ba: vec3<f32>,
    label: u32,
    // baba, baoa, oaoa, obob
    terms: vec4<f32>,
}

// The per-capsule terms, as `LabelRaster::draw_impl` computes them (the
// capsule is in camera space already: `capsule_setup.wgsl`).
fn prepare_capsule(cap: Capsule) -> PreparedCapsule {
    let a = cap.a;
    let b = cap.b;
    let r = cap.radius;
    let ba = b - a;
    let oa = -a;
    var c: PreparedCapsule;
    c.a = a;
    c.b = b;
    c.ba = ba;
    c.terms = vec4<f32>(dot3(ba, ba), dot3(ba, oa), dot3(oa, oa), dot3(b, b));
    c.rr = r * r;
    c.k0 = unfused(dot3(ba, ba) * dot3(oa, oa)) - unfused(dot3(ba, oa) * dot3(ba, oa))
        - unfused(r * r * dot3(ba, ba));
    c.label = cap.label;
    return c;
}

// The unnormalised ray direction of pixel (x, y)'s centre,
// d = ((x + 0.5 − cx) / fx, (y + 0.5 − cy) / fy, 1), as `LabelRaster`
// computes it (`ray_x` and `dy`).
fn pixel_ray(x: u32, y: u32) -> vec3<f32> {
    let dx = (f32(x) + 0.5 - params.cx) / params.fx;
    let dy = (f32(y) + 0.5 - params.cy) / params.fy;
    return vec3<f32>(dx, dy, 1.0);
}

// d · d of a `pixel_ray`: dx² + dy² + 1, left to right, unfused.
fn ray_dd(d: vec3<f32>) -> f32 {
    return unfused(d.x * d.x) + unfused(d.y * d.y) + 1.0;
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
fn ray_capsule(c: PreparedCapsule, d: vec3<f32>, dd: f32) -> f32 {
    let baba = c.terms.x;
    let baoa = c.terms.y;
    let oaoa = c.terms.z;
    let obob = c.terms.w;
    let oa = -c.a;
    let bard = dot3(c.ba, d);
    let rdoa = dot3(d, oa);
    // Infinite cylinder: k2 t² + 2 k1 t + k0 = 0.
    let k2 = unfused(baba * dd) - unfused(bard * bard);
    let k1 = unfused(baba * rdoa) - unfused(baoa * bard);
    if k2 > 0.0 {
        let h = unfused(k1 * k1) - unfused(k2 * c.k0);
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
    let s = sphere_entry(rdoa, oaoa, c.rr, dd);
    let ob_d = -dot3(d, c.b);
    let e = sphere_entry(ob_d, obob, c.rr, dd);
    if s > 0.0 && e > 0.0 {
        return select(s, e, e < s);
    }
    return select(e, s, s > 0.0);
}

// Whether pixel (x, y) lies in the half-open rectangle r (never in an empty
// one, which is all zero).
fn in_rect(r: Rect, x: u32, y: u32) -> bool {
    return x >= r.x0 && x < r.x1 && y >= r.y0 && y < r.y1;
}

// The class of rendered body-part label `label` under the label map
// (`likelihood.rs`, "Label map"); 0 for none.
fn class_of(label: u32) -> u32 {
    if label == 0u || label > CLASSES {
        return 0u;
    }
    let k = label - 1u;
    return (params.label_map[k / 4u] >> ((k % 4u) * 8u)) & 0xffu;
}

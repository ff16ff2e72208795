// Capsules and bounding rectangles of every particle of a pass, from the
// pose end points the CPU uploads (`raster::CapsuleLayout`: 12 bytes a
// point, P points a pose) and the skeleton's capsule table (uploaded once).
//
// One invocation per particle (tile) walks its K capsules in index order:
// each end point goes to camera space (`to_camera`), the capsule is stored in
// camera space for the raster pass, its bounding rectangle is computed as
// `raster::capsule_rect` does it on the CPU (`footprint`, step 2 of the
// raster module docs: the union of the two end spheres' image bounds,
// widened by SLACK, whole image when the capsule reaches z ≤ r, empty when it
// lies behind the camera or off the image), and the rectangles' union is the
// tile's rectangle the histogram pass visits. Every operation is the CPU's,
// in its order and unfused, so on an IEEE device (lavapipe) the rectangles
// equal the CPU's exactly (tests/gpu.rs); elsewhere a few ULP in `sqrt` or a
// division can move a bound by far less than SLACK, and a rectangle only
// bounds the pixels a capsule may cover: labels do not depend on it.

// `raster::CapsuleRef` (16 bytes).
struct CapsuleRef {
    a: u32,
    b: u32,
    radius: f32,
    label: u32,
}

@group(0) @binding(0) var<uniform> params: RasterUniforms;
@group(0) @binding(1) var<storage, read> table: array<CapsuleRef>;
// World end points, x y z per point, P per particle of the pass.
@group(0) @binding(2) var<storage, read> points: array<f32>;
@group(0) @binding(3) var<storage, read_write> capsules: array<Capsule>;
@group(0) @binding(4) var<storage, read_write> rects: array<Rect>;
@group(0) @binding(5) var<storage, read_write> tile_rects: array<Rect>;

// `raster::SLACK`.
const SLACK: f32 = 0.01;

fn end_point(tile: u32, p: u32) -> vec3<f32> {
    let i = (tile * params.points_per_pose + p) * 3u;
    return vec3<f32>(points[i], points[i + 1u], points[i + 2u]);
}

// `raster::sphere_pad`: f · r · √(lateral² + z²) / (z (z − r)).
fn sphere_pad(f: f32, lateral: f32, z: f32, r: f32) -> f32 {
    let root = sqrt(unfused(lateral * lateral) + unfused(z * z));
    return unfused(unfused(f * r) * root) / unfused(z * (z - r));
}

// `raster::first_centre_at_or_after`.
fn first_centre_at_or_after(x: f32, m: u32) -> u32 {
    return u32(clamp(ceil(x - 0.5 - SLACK), 0.0, f32(m)));
}

// `raster::first_centre_after`.
fn first_centre_after(x: f32, m: u32) -> u32 {
    return u32(clamp(floor(x - 0.5 + SLACK) + 1.0, 0.0, f32(m)));
}

fn is_empty(r: Rect) -> bool {
    return r.x0 >= r.x1 || r.y0 >= r.y1;
}

// `PixelRect::union`.
fn union_rect(r: Rect, s: Rect) -> Rect {
    if is_empty(r) {
        return s;
    }
    if is_empty(s) {
        return r;
    }
    return Rect(min(r.x0, s.x0), min(r.y0, s.y0), max(r.x1, s.x1), max(r.y1, s.y1));
}

// `raster::capsule_rect` of a capsule with camera-space end points a, b.
fn capsule_rect(a: vec3<f32>, b: vec3<f32>, r: f32) -> Rect {
    let none = Rect(0u, 0u, 0u, 0u);
    if max(a.z, b.z) + r <= 0.0 {
        return none; // entirely behind the camera
    }
    var rect = Rect(0u, 0u, params.width, params.height);
    if min(a.z, b.z) > r {
        let ua = unfused(params.fx * a.x) / a.z + params.cx;
        let va = unfused(params.fy * a.y) / a.z + params.cy;
        let ub = unfused(params.fx * b.x) / b.z + params.cx;
        let vb = unfused(params.fy * b.y) / b.z + params.cy;
        let pua = sphere_pad(params.fx, a.x, a.z, r);
        let pva = sphere_pad(params.fy, a.y, a.z, r);
        let pub_ = sphere_pad(params.fx, b.x, b.z, r);
        let pvb = sphere_pad(params.fy, b.y, b.z, r);
        rect = Rect(
            first_centre_at_or_after(min(ua - pua, ub - pub_), params.width),
            first_centre_at_or_after(min(va - pva, vb - pvb), params.height),
            first_centre_after(max(ua + pua, ub + pub_), params.width),
            first_centre_after(max(va + pva, vb + pvb), params.height),
        );
    }
    if is_empty(rect) {
        return none;
    }
    return rect;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn cs_main(@builtin(global_invocation_id) id: vec3<u32>) {
    let tile = id.x;
    if tile >= arrayLength(&tile_rects) {
        return;
    }
    let k = params.capsules_per_pose;
    var covered = Rect(0u, 0u, 0u, 0u);
    for (var c = 0u; c < k; c += 1u) {
        let entry = table[c];
        let a = to_camera(end_point(tile, entry.a));
        let b = to_camera(end_point(tile, entry.b));
        let rect = capsule_rect(a, b, entry.radius);
        capsules[tile * k + c] = Capsule(a, entry.radius, b, entry.label);
        rects[tile * k + c] = rect;
        covered = union_rect(covered, rect);
    }
    tile_rects[tile] = covered;
}

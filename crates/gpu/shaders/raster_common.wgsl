// Declarations shared by the three likelihood shaders (the Rust side
// prepends this file, after the constants `CLASSES` and `WORKGROUP_SIZE`).
// Each shader declares `params: RasterUniforms` at group 0, binding 0.

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

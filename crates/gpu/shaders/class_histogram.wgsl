// Per-particle class histograms of the label atlas against the observation
// (RTPF §VI: "we derive the non-overlapping ratio from the histogram of the
// image thus formed"; RTPF Eq. 1 needs, per class c, |B_c| and |A_c ∩ B_c|).
//
// One workgroup per tile (particle) of the pass. Its invocations stride over
// the pixels of the particle's bounding rectangle (the union of its capsules'
// rectangles, computed by the setup pass as `LabelRaster::draw` returns it: no
// model pixel lies outside it), read the model label b from the atlas and the
// observed label a from the packed observation, and count into a histogram
// in workgroup memory with atomics. The rendered label goes through the
// label map first (`likelihood.rs`, "Label map"): b is its class, 0 for
// none. After a barrier the first 2·C invocations store every bin (zeros
// included) into the global counts with plain writes — the workgroup owns
// its tile's bins, so no atomics and no clearing pass are needed — laid out
// as the CPU's:
// counts[(i·C + c − 1)·2 + 0] = |B_c|, counts[(i·C + c − 1)·2 + 1] = |A_c ∩ B_c|.
// |A_c| is counted once per observation on the CPU (`Observation::areas`).
//
// The constants, `raster_common.wgsl` and `class_counts.wgsl` (the histogram)
// are prepended by the Rust side.

@group(0) @binding(0) var<uniform> params: RasterUniforms;
@group(0) @binding(1) var atlas: texture_2d<u32>;
// The observed labels, four per word, little-endian (pixel i in byte i % 4
// of word i / 4), row-major.
@group(0) @binding(2) var<storage, read> observed: array<u32>;
@group(0) @binding(3) var<storage, read> tile_rects: array<Rect>;
@group(0) @binding(4) var<storage, read_write> counts: array<u32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn cs_main(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let tile = group.x;
    clear_histogram(lid, WORKGROUP_SIZE);
    workgroupBarrier();

    let rect = tile_rects[tile];
    let origin = vec2<u32>(
        (tile % params.tile_columns) * params.width,
        (tile / params.tile_columns) * params.height,
    );
    // The invocations form an 8 × (WORKGROUP_SIZE / 8) grid that strides
    // over the rectangle (an empty one has x0 = x1 = 0: no iteration).
    let lx = lid % 8u;
    let ly = lid / 8u;
    for (var y = rect.y0 + ly; y < rect.y1; y += WORKGROUP_SIZE / 8u) {
        let row = y * params.width;
        for (var x = rect.x0 + lx; x < rect.x1; x += 8u) {
            let label = textureLoad(atlas, origin + vec2<u32>(x, y), 0).r;
            count_pixel(label, row + x);
        }
    }
    workgroupBarrier();
    store_histogram(tile, lid, WORKGROUP_SIZE);
}

// Body-part label raster and class histograms in one compute pass (RTPF §VI:
// the particles' label images and "the histogram of the image thus formed",
// RTPF Eq. 1 needing, per class c, |B_c| and |A_c ∩ B_c|), with no label
// image in memory.
//
// One workgroup per particle of the pass. Its invocations first load the
// particle's K capsules (camera space, from the setup pass
// `capsule_setup.wgsl`) with their ray-test terms (`prepare_capsule`) and
// bounding rectangles into workgroup memory and zero a workgroup histogram.
// The particle's union rectangle (no capsule covers a pixel outside it) is
// cut into blocks of 8 × (COUNT_WORKGROUP_SIZE / 8) pixels, a pixel per
// invocation, taken COUNT_WORKGROUP_SIZE blocks at a time: each invocation
// finds the capsules whose rectangles meet one block of the batch (a bit
// mask, 32 capsules a word), then the workgroup walks the batch's blocks.
// Every invocation of a block goes through the same capsule list, so the
// loop stays coherent, and a capsule is only looked at in the blocks it
// meets. Each pixel runs the CPU's depth rule (`LabelRaster::draw` in
// crates/labels/src/raster.rs): capsule by capsule in index order, a capsule
// whose rectangle holds the pixel is ray-tested (`ray_capsule`,
// raster_common.wgsl, the f32 test of the CPU step for step and unfused),
// and it takes the pixel when the pixel has no label yet or its `t` is
// strictly smaller — the nearest hit wins, an exact tie keeps the lower
// index. The pixel's label goes through the label map to its class b, the
// observed label a is read from the packed observation, and the invocation
// adds to the workgroup's |B_b| and, when a = b, |A_b ∩ B_b| with atomics.
// After a barrier the first 2·C invocations store every bin (zeros
// included) into the global counts with plain writes — the workgroup owns
// its particle's bins — laid out as the CPU's:
// counts[(i·C + c − 1)·2 + 0] = |B_c|, counts[(i·C + c − 1)·2 + 1] = |A_c ∩ B_c|.
//
// With the override WRITE_LABELS (diagnostics only: `render_tiles`) every
// labelled pixel is also ORed into a W × H byte tile per particle of
// `labels` (cleared beforehand), the layout of `CpuLikelihood::render_tiles`.
//
// The constants (`CLASSES`, `COUNT_WORKGROUP_SIZE`, `CAPSULES` = K),
// `raster_common.wgsl` and `class_counts.wgsl` (the histogram) are prepended
// by the Rust side.

@group(0) @binding(0) var<uniform> params: RasterUniforms;
// K camera-space capsules per particle and their rectangles (setup pass).
@group(0) @binding(1) var<storage, read> capsules: array<Capsule>;
@group(0) @binding(2) var<storage, read> rects: array<Rect>;
@group(0) @binding(3) var<storage, read> tile_rects: array<Rect>;
// The observed labels, four per word, little-endian (pixel i in byte i % 4
// of word i / 4), row-major.
@group(0) @binding(4) var<storage, read> observed: array<u32>;
@group(0) @binding(5) var<storage, read_write> counts: array<u32>;
// Diagnostics: label tiles, four pixels per word (a one-word dummy otherwise).
@group(0) @binding(6) var<storage, read_write> labels: array<atomic<u32>>;

override WRITE_LABELS: bool = false;

var<workgroup> prepared: array<PreparedCapsule, CAPSULES>;
var<workgroup> capsule_rects: array<Rect, CAPSULES>;
var<workgroup> union_rect: Rect;
// Pixel blocks: 8 wide, as many rows as make a workgroup.
const BLOCK_W: u32 = 8u;
const BLOCK_H: u32 = COUNT_WORKGROUP_SIZE / BLOCK_W;
const MASK_WORDS: u32 = (CAPSULES + 31u) / 32u;
// Per block of the batch, the capsules whose rectangles meet it.
var<workgroup> block_masks: array<u32, COUNT_WORKGROUP_SIZE * MASK_WORDS>;

@compute @workgroup_size(COUNT_WORKGROUP_SIZE)
fn cs_main(
    @builtin(workgroup_id) group: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let tile = group.x;
    for (var c = lid; c < CAPSULES; c += COUNT_WORKGROUP_SIZE) {
        prepared[c] = prepare_capsule(capsules[tile * CAPSULES + c]);
        capsule_rects[c] = rects[tile * CAPSULES + c];
    }
    clear_histogram(lid, COUNT_WORKGROUP_SIZE);
    if lid == 0u {
        union_rect = tile_rects[tile];
    }
    // Also a barrier: the capsules and the histogram are ready.
    let rect = workgroupUniformLoad(&union_rect);

    // The union rectangle in blocks of BLOCK_W × BLOCK_H pixels, a pixel per
    // invocation (an empty rectangle is all zero: no block), handled
    // COUNT_WORKGROUP_SIZE blocks at a time.
    let blocks_x = (rect.x1 - rect.x0 + BLOCK_W - 1u) / BLOCK_W;
    let blocks = blocks_x * ((rect.y1 - rect.y0 + BLOCK_H - 1u) / BLOCK_H);
    for (var first = 0u; first < blocks; first += COUNT_WORKGROUP_SIZE) {
        // Invocation i finds which capsules' rectangles meet block
        // first + i: one bit per capsule, 32 to a word.
        let mine = first + lid;
        let mx0 = rect.x0 + (mine % blocks_x) * BLOCK_W;
        let my0 = rect.y0 + (mine / blocks_x) * BLOCK_H;
        for (var w = 0u; w < MASK_WORDS; w += 1u) {
            var mask = 0u;
            if mine < blocks {
                for (var c = 32u * w; c < min(32u * w + 32u, CAPSULES); c += 1u) {
                    let r = capsule_rects[c];
                    if r.x0 < mx0 + BLOCK_W && r.x1 > mx0 && r.y0 < my0 + BLOCK_H && r.y1 > my0 {
                        mask |= 1u << (c % 32u);
                    }
                }
            }
            block_masks[lid * MASK_WORDS + w] = mask;
        }
        workgroupBarrier();
        for (var k = 0u; k < min(COUNT_WORKGROUP_SIZE, blocks - first); k += 1u) {
            let block = first + k;
            let x = rect.x0 + (block % blocks_x) * BLOCK_W + lid % BLOCK_W;
            let y = rect.y0 + (block / blocks_x) * BLOCK_H + lid / BLOCK_W;
            let d = pixel_ray(x, y);
            let dd = ray_dd(d);
            var label = 0u;
            var depth = 0.0;
            // The block's capsules in index order (the same list for every
            // invocation); each is tested where its rectangle holds the
            // pixel, as on the CPU.
            for (var w = 0u; w < MASK_WORDS; w += 1u) {
                var mask = block_masks[k * MASK_WORDS + w];
                while mask != 0u {
                    let c = 32u * w + firstTrailingBit(mask);
                    mask &= mask - 1u;
                    if !in_rect(capsule_rects[c], x, y) {
                        continue;
                    }
                    let t = ray_capsule(prepared[c], d, dd);
                    // `tile[i] == 0 || t < depth[i]` in `LabelRaster::draw_impl`.
                    if t > 0.0 && (label == 0u || t < depth) {
                        label = prepared[c].label;
                        depth = t;
                    }
                }
            }
            // Pixels of a block past the rectangle's edge lie in no
            // capsule's rectangle: they stay unlabelled.
            if label == 0u {
                continue;
            }
            let p = y * params.width + x;
            if WRITE_LABELS {
                let q = tile * params.width * params.height + p;
                atomicOr(&labels[q / 4u], label << ((q % 4u) * 8u));
            }
            count_pixel(label, p);
        }
        workgroupBarrier();
    }
    store_histogram(tile, lid, COUNT_WORKGROUP_SIZE);
}

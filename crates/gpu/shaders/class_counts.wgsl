// The class histogram of the two counting passes (`raster_count.wgsl`, the
// compute raster, and `class_histogram.wgsl`, after the render pass): per
// class c, |B_c| (bin 2·(c − 1)) and |A_c ∩ B_c| (bin 2·(c − 1) + 1) of one
// particle, in workgroup memory, counted with atomics (RTPF Eq. 1). The Rust
// side prepends this file to those two passes, after `raster_common.wgsl`;
// each declares `observed` (the observed labels, four per word,
// little-endian: pixel i in byte i % 4 of word i / 4, row-major) and
// `counts` (the global counts, laid out as the CPU's:
// counts[(i·C + c − 1)·2 + 0] = |B_c|, counts[(i·C + c − 1)·2 + 1] = |A_c ∩ B_c|).

var<workgroup> histogram: array<atomic<u32>, 2u * CLASSES>;

// Zeroes the histogram, the workgroup's `stride` invocations together.
fn clear_histogram(lid: u32, stride: u32) {
    for (var k = lid; k < 2u * CLASSES; k += stride) {
        atomicStore(&histogram[k], 0u);
    }
}

// Counts pixel p (row-major in the tile) rendered with `label`: its class b
// (through the label map; 0: none) into |B_b| and, when the observed label
// at p is b, into |A_b ∩ B_b|.
fn count_pixel(label: u32, p: u32) {
    let b = class_of(label);
    if b != 0u && b <= CLASSES {
        let bin = 2u * (b - 1u);
        atomicAdd(&histogram[bin], 1u);
        let a = (observed[p / 4u] >> ((p % 4u) * 8u)) & 0xffu;
        if a == b {
            atomicAdd(&histogram[bin + 1u], 1u);
        }
    }
}

// Stores every bin of particle `tile` (zeros included) into the global
// counts with plain writes, the workgroup's `stride` invocations together:
// the workgroup owns its particle's bins, so no atomics and no clearing pass
// are needed. Call it after a barrier.
fn store_histogram(tile: u32, lid: u32, stride: u32) {
    for (var k = lid; k < 2u * CLASSES; k += stride) {
        counts[tile * 2u * CLASSES + k] = atomicLoad(&histogram[k]);
    }
}

//! The `#[repr(C)]` mirrors of the shaders' uniform and storage layouts
//! (`shaders/raster_common.wgsl`), each with a size test.

use bytemuck::{Pod, Zeroable};
use labels::RasterCamera;
use labels::{CLASSES, LabelMap};
use labels::{CapsuleLayout, PixelRect};

use super::resources::AtlasLayout;

/// `frag_depth = t · 2⁻²⁰` (render-pass path): a power of two, so the
/// scaling is exact and keeps every order and tie of the f32 ray parameters
/// (for `t < 2²⁰`).
pub(crate) const DEPTH_SCALE: f32 = 1.0 / 1_048_576.0;

/// Bytes of one particle's counts: `2 C` u32.
pub(crate) const COUNTS_STRIDE: u64 = (2 * CLASSES * 4) as u64;

/// The uniform every shader reads (WGSL `struct RasterUniforms` in
/// `raster_common.wgsl`, 128 bytes):
/// the [`RasterCamera`] (rotation rows with the translation in `w`),
/// the tile and atlas geometry and [`DEPTH_SCALE`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub(crate) struct RasterUniforms {
    /// Row `i`: `[r_i0, r_i1, r_i2, t_i]` of camera-from-world.
    pub rows: [[f32; 4]; 3],
    pub fx: f32,
    pub fy: f32,
    pub cx: f32,
    pub cy: f32,
    /// Tile (image) size in pixels.
    pub width: u32,
    pub height: u32,
    /// Tiles per atlas row (render-pass path; 0 on the compute path).
    pub tile_columns: u32,
    /// K, capsules per pose.
    pub capsules_per_pose: u32,
    /// Atlas size in pixels (render-pass path; 0 on the compute path).
    pub atlas_width: u32,
    pub atlas_height: u32,
    pub depth_scale: f32,
    /// Always 0: the WGSL ORs it into every product to keep the driver from
    /// fusing multiply–adds (`unfused` in `raster_common.wgsl`).
    pub zero: u32,
    /// The [`LabelMap`], four classes per word, little-endian: the class of
    /// rendered label `l` is byte `(l − 1) % 4` of word `(l − 1) / 4`
    /// (WGSL `label_map: vec4<u32>`, so `C ≤ 16`).
    pub label_map: [u32; 4],
    /// P, end points per pose ([`CapsuleLayout::points`]).
    pub points_per_pose: u32,
    /// WGSL rounds the struct up to 16 bytes.
    pub pad: [u32; 3],
}

const _: () = assert!(CLASSES <= 16, "the label map is packed into one vec4<u32>");

/// [`RasterUniforms::label_map`] of a [`LabelMap`].
pub(crate) fn pack_label_map(map: &LabelMap) -> [u32; 4] {
    let mut words = [0u32; 4];
    for (i, &c) in map.iter().enumerate() {
        words[i / 4] |= u32::from(c) << (8 * (i % 4));
    }
    words
}

impl RasterUniforms {
    /// The uniforms of a camera, skeleton layout and label map; `atlas` is
    /// the render-pass path's atlas (`None` on the compute path).
    pub(crate) fn new(
        camera: &RasterCamera,
        layout: &CapsuleLayout,
        atlas: Option<&AtlasLayout>,
        label_map: &LabelMap,
    ) -> Self {
        let row = |i: usize| {
            [
                camera.rot[i][0],
                camera.rot[i][1],
                camera.rot[i][2],
                camera.trans[i],
            ]
        };
        Self {
            rows: [row(0), row(1), row(2)],
            fx: camera.fx,
            fy: camera.fy,
            cx: camera.cx,
            cy: camera.cy,
            width: camera.width,
            height: camera.height,
            tile_columns: atlas.map_or(0, |a| a.columns),
            capsules_per_pose: layout.capsules().len() as u32,
            atlas_width: atlas.map_or(0, |a| a.width),
            atlas_height: atlas.map_or(0, |a| a.height),
            depth_scale: DEPTH_SCALE,
            zero: 0,
            label_map: pack_label_map(label_map),
            points_per_pose: layout.points().len() as u32,
            pad: [0; 3],
        }
    }
}

/// A [`PixelRect`] as the shaders read it (WGSL `struct Rect`, 16 bytes);
/// an empty rectangle is all zero.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct GpuRect {
    pub x0: u32,
    pub y0: u32,
    pub x1: u32,
    pub y1: u32,
}

impl From<PixelRect> for GpuRect {
    fn from(r: PixelRect) -> Self {
        if r.is_empty() {
            Self::default()
        } else {
            Self {
                x0: r.x0,
                y0: r.y0,
                x1: r.x1,
                y1: r.y1,
            }
        }
    }
}

/// Bytes of workgroup memory one capsule takes in `raster_count.wgsl`: its
/// `PreparedCapsule` (64, WGSL layout: three `vec3<f32>` each followed by a
/// scalar, then a `vec4<f32>`) and its `Rect` (16). The WGSL struct lives
/// only in workgroup memory, so no Rust struct mirrors it.
pub(crate) const PREPARED_CAPSULE_BYTES: u64 = 64 + size_of::<GpuRect>() as u64;

#[cfg(test)]
mod tests {
    use super::*;
    use labels::IDENTITY_LABEL_MAP;
    use labels::{CapsuleInstance, CapsuleRef};

    #[test]
    fn uniform_and_storage_mirrors_have_the_wgsl_sizes() {
        // WGSL: three vec4<f32> (48) + 4 f32 + 4 u32 + 2 u32 + f32 + u32
        // + vec4<u32> (at 96, 16-aligned) + u32, rounded up to 16.
        assert_eq!(size_of::<RasterUniforms>(), 128);
        assert_eq!(std::mem::offset_of!(RasterUniforms, label_map), 96);
        assert_eq!(std::mem::offset_of!(RasterUniforms, points_per_pose), 112);
        assert_eq!(size_of::<CapsuleRef>(), 16);
        assert_eq!(align_of::<RasterUniforms>(), 4);
        assert_eq!(std::mem::offset_of!(RasterUniforms, fx), 48);
        assert_eq!(std::mem::offset_of!(RasterUniforms, width), 64);
        assert_eq!(std::mem::offset_of!(RasterUniforms, atlas_width), 80);
        assert_eq!(std::mem::offset_of!(RasterUniforms, depth_scale), 88);
        assert_eq!(size_of::<GpuRect>(), 16);
        assert_eq!(size_of::<CapsuleInstance>(), 32);
        assert_eq!(COUNTS_STRIDE as usize, 2 * CLASSES * size_of::<u32>());
        // PreparedCapsule: a (12) rr (4) b (12) k0 (4) ba (12) label (4)
        // terms (16), no padding; plus a Rect.
        assert_eq!(PREPARED_CAPSULE_BYTES, 4 * 16 + 16);
    }

    #[test]
    fn label_maps_pack_four_classes_per_word() {
        let words = pack_label_map(&IDENTITY_LABEL_MAP);
        for l in 1..=CLASSES as u32 {
            let i = (l - 1) as usize;
            assert_eq!((words[i / 4] >> (8 * (i % 4))) & 0xff, l);
        }
        let mut map = [0u8; CLASSES];
        map[CLASSES - 1] = 3;
        let words = pack_label_map(&map);
        let i = CLASSES - 1;
        assert_eq!(words[i / 4], 3 << (8 * (i % 4)));
    }

    #[test]
    fn depth_scale_is_an_exact_power_of_two() {
        assert_eq!(DEPTH_SCALE, 2f32.powi(-20));
        for t in [1e-3f32, 0.7, 3.5, 1000.0, 1_048_575.9] {
            let depth = t * DEPTH_SCALE;
            assert_eq!(depth / DEPTH_SCALE, t);
            assert!(depth < 1.0);
            // Neighbouring f32 depths stay distinct and ordered.
            assert!(t.next_up() * DEPTH_SCALE > depth);
            assert!(t.next_down() * DEPTH_SCALE < depth);
        }
    }

    #[test]
    fn empty_rects_become_zero() {
        let e = PixelRect {
            x0: 5,
            y0: 3,
            x1: 2,
            y1: 9,
        };
        assert_eq!(GpuRect::from(e), GpuRect::default());
        let r = PixelRect {
            x0: 1,
            y0: 2,
            x1: 3,
            y1: 4,
        };
        assert_eq!(
            GpuRect::from(r),
            GpuRect {
                x0: 1,
                y0: 2,
                x1: 3,
                y1: 4
            }
        );
    }
}

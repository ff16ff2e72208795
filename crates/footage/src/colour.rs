//! Colour helpers and noise: sRGB ↔ linear, hashed Gaussian and value
//! noise, fractal Brownian motion for the room's textures.

use crate::V3;

fn srgb_to_linear(c: u8) -> f32 {
    let v = f32::from(c) / 255.0;
    if v <= 0.04045 {
        v / 12.92
    } else {
        ((v + 0.055) / 1.055).powf(2.4)
    }
}

pub(crate) fn lin(c: [u8; 3]) -> V3 {
    V3::new(
        srgb_to_linear(c[0]),
        srgb_to_linear(c[1]),
        srgb_to_linear(c[2]),
    )
}

/// Linear [0, 1] → sRGB [0, 255] through a table.
pub(crate) struct SrgbTable(Vec<f32>);

const SRGB_STEPS: usize = 8192;

impl SrgbTable {
    pub(crate) fn new() -> Self {
        Self(
            (0..=SRGB_STEPS)
                .map(|i| {
                    let v = i as f32 / SRGB_STEPS as f32;
                    let s = if v <= 0.003_130_8 {
                        12.92 * v
                    } else {
                        1.055 * v.powf(1.0 / 2.4) - 0.055
                    };
                    255.0 * s
                })
                .collect(),
        )
    }

    #[inline]
    pub(crate) fn get(&self, v: f32) -> f32 {
        let x = v.clamp(0.0, 1.0) * SRGB_STEPS as f32;
        let i = (x as usize).min(SRGB_STEPS - 1);
        let f = x - i as f32;
        self.0[i] + (self.0[i + 1] - self.0[i]) * f
    }
}

#[inline]
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// An approximately standard normal number from a hash (Irwin–Hall, 4 terms).
#[inline]
pub(crate) fn gauss(h: u64) -> f32 {
    let s = (h & 0xffff) + ((h >> 16) & 0xffff) + ((h >> 32) & 0xffff) + (h >> 48);
    (s as f32 / 65535.0 - 2.0) * 1.732_050_8
}

pub(crate) fn hash01(a: i64, b: i64, seed: u64) -> f32 {
    let h = mix64(seed ^ mix64((a as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (b as u64)));
    (h >> 40) as f32 / (1u64 << 24) as f32
}

/// Value noise in [0, 1].
pub(crate) fn value_noise(x: f32, y: f32, seed: u64) -> f32 {
    let (ix, iy) = (x.floor(), y.floor());
    let (fx, fy) = (x - ix, y - iy);
    let (ix, iy) = (ix as i64, iy as i64);
    let s = |t: f32| t * t * (3.0 - 2.0 * t);
    let (sx, sy) = (s(fx), s(fy));
    let a = hash01(ix, iy, seed);
    let b = hash01(ix + 1, iy, seed);
    let c = hash01(ix, iy + 1, seed);
    let d = hash01(ix + 1, iy + 1, seed);
    let top = a + (b - a) * sx;
    let bottom = c + (d - c) * sx;
    top + (bottom - top) * sy
}

pub(crate) fn fbm(x: f32, y: f32, seed: u64) -> f32 {
    let mut sum = 0.0;
    let mut amp = 0.5;
    let mut f = 1.0;
    for o in 0..4 {
        sum += amp * value_noise(x * f, y * f, seed.wrapping_add(o));
        amp *= 0.5;
        f *= 2.03;
    }
    sum / 0.9375
}

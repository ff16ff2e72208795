//! Viridis, the perceptually uniform colour map of matplotlib (van der Walt
//! and Smith), for particle weights: nine control points (matplotlib's
//! `viridis(linspace(0, 1, 9))`), linear in sRGB between them.

/// Viridis at t = 0, 1/8, …, 1 (sRGB, 0–255).
const VIRIDIS: [[u8; 3]; 9] = [
    [68, 1, 84],
    [71, 45, 123],
    [59, 82, 139],
    [44, 114, 142],
    [33, 145, 140],
    [40, 174, 128],
    [94, 201, 98],
    [173, 220, 48],
    [253, 231, 37],
];

/// The colour at `t` in [0, 1] (clamped; NaN maps to 0), sRGB in [0, 1].
pub(crate) fn viridis(t: f64) -> [f32; 3] {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let x = t * (VIRIDIS.len() - 1) as f64;
    let i = (x.floor() as usize).min(VIRIDIS.len() - 2);
    let f = (x - i as f64) as f32;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    [0, 1, 2].map(|k| (a[k] as f32 * (1.0 - f) + b[k] as f32 * f) / 255.0)
}

/// Decades of weight the colour map spans: `w / w_max` from 10⁻³ to 1.
pub(crate) const WEIGHT_DECADES: f64 = 3.0;

/// Position of a normalised weight on the colour map: `1 + log10(w / w_max) / 3`,
/// clamped, so the heaviest particle is yellow and anything 1000× lighter
/// is the darkest purple.
pub(crate) fn weight_position(w: f64, w_max: f64) -> f64 {
    if !(w > 0.0 && w_max > 0.0) {
        return 0.0;
    }
    (1.0 + (w / w_max).log10() / WEIGHT_DECADES).clamp(0.0, 1.0)
}

/// Opacity of a particle at colour-map position `t`: heavier is more opaque.
pub(crate) fn weight_alpha(t: f64) -> f32 {
    (0.35 + 0.65 * t.clamp(0.0, 1.0)) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_and_midpoint_match_matplotlib() {
        let c = viridis(0.0);
        assert!((c[0] - 68.0 / 255.0).abs() < 1e-6);
        let c = viridis(1.0);
        assert!((c[1] - 231.0 / 255.0).abs() < 1e-6);
        // matplotlib viridis(0.5) = (0.127568, 0.566949, 0.550556).
        let c = viridis(0.5);
        for (a, b) in c.iter().zip([0.127568, 0.566949, 0.550556]) {
            assert!((*a as f64 - b).abs() < 0.01, "{c:?}");
        }
        assert_eq!(viridis(f64::NAN), viridis(0.0));
        assert_eq!(viridis(7.0), viridis(1.0));
    }

    #[test]
    fn luminance_increases_along_the_map() {
        let lum = |c: [f32; 3]| 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
        let mut last = -1.0;
        for i in 0..=100 {
            let l = lum(viridis(i as f64 / 100.0));
            assert!(l > last, "at {i}");
            last = l;
        }
    }

    #[test]
    fn weights_map_by_decades() {
        assert_eq!(weight_position(0.5, 0.5), 1.0);
        assert!((weight_position(0.05, 0.5) - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(weight_position(1e-9, 0.5), 0.0);
        assert_eq!(weight_position(0.0, 0.5), 0.0);
        assert!(weight_alpha(1.0) > weight_alpha(0.0));
    }
}

//! Where the model looks: the person box, the square (optionally rotated)
//! region of interest, and the bilinear crop that feeds the network.
//!
//! MediaPipe's pose pipeline (`pose_landmark_by_roi`) crops a *rotated
//! square* around the person — from its detector's alignment points on the
//! first frame, from the previous landmarks' auxiliary points afterwards —
//! enlarged 1.25× (`RectTransformationCalculator`, `square_long`), resampled
//! bilinearly to 256 × 256 with a zero border (`ImageToTensorCalculator`,
//! `BORDER_ZERO`), values in `[0, 1]`. A landmark `(x, y)` in crop pixels maps
//! back through the same rectangle (`LandmarkProjectionCalculator`):
//!
//! ```text
//! p = centre + R(θ) · (x / 256 − ½, y / 256 − ½) · side,    R(θ) = [cos θ  −sin θ; sin θ  cos θ]
//! ```
//!
//! We have no person detector: the box comes from a segmentation mask or the
//! tracker's previous estimate, and its square ROI is centred on the box with
//! side 1.25 × its long side. The crop samples crop pixel `i` at its centre
//! `i + ½` (MediaPipe's OpenCV warp maps crop pixel *corners* to the ROI's
//! corners, a half-crop-pixel difference we keep consistent in both
//! directions here).

use crate::{Error, Result};

/// Side of the model's square input, pixels.
pub const INPUT_SIZE: usize = 256;

/// An axis-aligned box around the person, in input-frame pixels (pixel `k`
/// spans `[k, k + 1)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PersonBox {
    pub x_min: f32,
    pub y_min: f32,
    pub x_max: f32,
    pub y_max: f32,
}

impl PersonBox {
    pub fn new(x_min: f32, y_min: f32, x_max: f32, y_max: f32) -> Self {
        Self {
            x_min,
            y_min,
            x_max,
            y_max,
        }
    }

    pub fn width(&self) -> f32 {
        self.x_max - self.x_min
    }

    pub fn height(&self) -> f32 {
        self.y_max - self.y_min
    }

    pub fn centre(&self) -> [f32; 2] {
        [
            (self.x_min + self.x_max) / 2.0,
            (self.y_min + self.y_max) / 2.0,
        ]
    }

    /// The tight box around the `true` pixels of a `width × height` mask
    /// (row-major), e.g. the foreground of a segmentation.
    pub fn from_mask(mask: &[bool], width: u32, height: u32) -> Result<Self> {
        Self::from_mask_by(mask, width, height, |&m| m)
    }

    /// As [`PersonBox::from_mask`] for a byte mask: non-zero is foreground.
    pub fn from_mask_u8(mask: &[u8], width: u32, height: u32) -> Result<Self> {
        Self::from_mask_by(mask, width, height, |&m| m != 0)
    }

    fn from_mask_by<T>(
        mask: &[T],
        width: u32,
        height: u32,
        is_set: impl Fn(&T) -> bool,
    ) -> Result<Self> {
        let (w, h) = (width as usize, height as usize);
        let expected = w
            .checked_mul(h)
            .ok_or(Error::EmptyImage { width, height })?;
        if expected == 0 {
            return Err(Error::EmptyImage { width, height });
        }
        if mask.len() != expected {
            return Err(Error::MaskSize {
                len: mask.len(),
                width,
                height,
            });
        }
        let (mut x0, mut y0, mut x1, mut y1) = (usize::MAX, usize::MAX, 0, 0);
        for (y, row) in mask.chunks_exact(w).enumerate() {
            let Some(first) = row.iter().position(&is_set) else {
                continue;
            };
            let last = row.iter().rposition(&is_set).unwrap_or(first);
            x0 = x0.min(first);
            x1 = x1.max(last + 1);
            y0 = y0.min(y);
            y1 = y + 1;
        }
        if x0 == usize::MAX {
            return Err(Error::NoForeground);
        }
        Ok(Self::new(x0 as f32, y0 as f32, x1 as f32, y1 as f32))
    }

    /// The tight box around finite points (e.g. a previous estimate's
    /// projected joints); non-finite points are skipped.
    pub fn from_points(points: impl IntoIterator<Item = [f32; 2]>) -> Result<Self> {
        let mut b = Self::new(
            f32::INFINITY,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NEG_INFINITY,
        );
        for [x, y] in points {
            if x.is_finite() && y.is_finite() {
                b.x_min = b.x_min.min(x);
                b.y_min = b.y_min.min(y);
                b.x_max = b.x_max.max(x);
                b.y_max = b.y_max.max(y);
            }
        }
        if b.x_min > b.x_max {
            return Err(Error::NoForeground);
        }
        Ok(b)
    }

    /// The box grown by `pixels` on every side.
    pub fn expanded(&self, pixels: f32) -> Self {
        Self::new(
            self.x_min - pixels,
            self.y_min - pixels,
            self.x_max + pixels,
            self.y_max + pixels,
        )
    }

    /// Checks the box is finite, non-empty (at least a pixel on its long
    /// side) and overlaps the `width × height` frame.
    pub fn validate(&self, width: u32, height: u32) -> Result<()> {
        let finite = [self.x_min, self.y_min, self.x_max, self.y_max]
            .iter()
            .all(|c| c.is_finite());
        if !finite
            || self.width() < 0.0
            || self.height() < 0.0
            || self.width().max(self.height()) < 1.0
        {
            return Err(Error::EmptyBox(*self));
        }
        if self.x_max <= 0.0
            || self.y_max <= 0.0
            || self.x_min >= width as f32
            || self.y_min >= height as f32
        {
            return Err(Error::BoxOutsideFrame {
                person: *self,
                width,
                height,
            });
        }
        Ok(())
    }
}

/// The square region the model sees, in input-frame pixels: its centre, its
/// side and its rotation (radians, MediaPipe's sign: crop "up" points along
/// `(sin θ, −cos θ)` in the image).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Roi {
    pub centre: [f32; 2],
    pub side: f32,
    pub rotation: f32,
}

impl Roi {
    /// MediaPipe's enlargement of the pose ROI (`scale_x = scale_y = 1.25`).
    pub const MEDIAPIPE_SCALE: f32 = 1.25;

    /// Square around a person box: centred on it, side `scale` × its long
    /// side, upright.
    pub fn from_box(person: &PersonBox, scale: f32) -> Self {
        Self {
            centre: person.centre(),
            side: person.width().max(person.height()) * scale,
            rotation: 0.0,
        }
    }

    /// MediaPipe's `AlignmentPointsRectsCalculator` + `RectTransformation`:
    /// centre at `hips`, side `2 × |top − hips| × scale`, rotated so `top`
    /// lies straight up in the crop (`θ = π/2 − atan2(−(y₁ − y₀), x₁ − x₀)`)
    /// when `rotate`.
    pub fn from_alignment(hips: [f32; 2], top: [f32; 2], scale: f32, rotate: bool) -> Self {
        let (dx, dy) = (top[0] - hips[0], top[1] - hips[1]);
        let side = 2.0 * (dx * dx + dy * dy).sqrt() * scale;
        let rotation = if rotate {
            normalize_radians(std::f32::consts::FRAC_PI_2 - (-dy).atan2(dx))
        } else {
            0.0
        };
        Self {
            centre: hips,
            side,
            rotation,
        }
    }

    /// Input-frame pixel of a point given in crop pixels (`0..INPUT_SIZE`).
    pub fn crop_to_image(&self, crop: [f32; 2]) -> [f32; 2] {
        let n = INPUT_SIZE as f32;
        let dx = (crop[0] / n - 0.5) * self.side;
        let dy = (crop[1] / n - 0.5) * self.side;
        let (s, c) = self.rotation.sin_cos();
        [
            self.centre[0] + c * dx - s * dy,
            self.centre[1] + s * dx + c * dy,
        ]
    }

    fn validate(&self, width: u32, height: u32) -> Result<()> {
        let finite = self
            .centre
            .iter()
            .chain([&self.side, &self.rotation])
            .all(|c| c.is_finite());
        if !finite || self.side < 1.0 {
            return Err(Error::EmptyRoi(*self));
        }
        // The ROI's circumscribed circle must reach the frame.
        let r = self.side * std::f32::consts::FRAC_1_SQRT_2;
        let [cx, cy] = self.centre;
        if cx + r <= 0.0 || cy + r <= 0.0 || cx - r >= width as f32 || cy - r >= height as f32 {
            return Err(Error::RoiOutsideFrame {
                roi: *self,
                width,
                height,
            });
        }
        Ok(())
    }
}

fn normalize_radians(a: f32) -> f32 {
    use std::f32::consts::PI;
    a - 2.0 * PI * ((a + PI) / (2.0 * PI)).floor()
}

/// Checks an RGB buffer's size.
pub(crate) fn check_image(rgb: &[u8], width: u32, height: u32) -> Result<()> {
    let expected = (width as usize)
        .checked_mul(height as usize)
        .and_then(|n| n.checked_mul(3));
    match expected {
        Some(0) | None => Err(Error::EmptyImage { width, height }),
        Some(e) if e != rgb.len() => Err(Error::BufferSize {
            len: rgb.len(),
            expected: e,
            width,
            height,
        }),
        Some(_) => Ok(()),
    }
}

/// Resamples `roi` of an interleaved 8-bit RGB frame into the model's input:
/// `INPUT_SIZE² × 3` floats in `[0, 1]`, row-major HWC, bilinear, zero
/// outside the frame.
pub(crate) fn crop(rgb: &[u8], width: u32, height: u32, roi: &Roi) -> Result<Vec<f32>> {
    check_image(rgb, width, height)?;
    roi.validate(width, height)?;
    let n = INPUT_SIZE;
    let (w, h) = (width as i64, height as i64);
    let (s, c) = roi.rotation.sin_cos();
    // Offsets of crop pixel centres from the ROI's centre, along one axis.
    let t: Vec<f32> = (0..n)
        .map(|i| ((i as f32 + 0.5) / n as f32 - 0.5) * roi.side)
        .collect();
    let mut out = vec![0.0f32; n * n * 3];
    let scale = 1.0 / 255.0;
    for (j, row) in out.chunks_exact_mut(n * 3).enumerate() {
        let ty = t[j];
        for (i, px) in row.chunks_exact_mut(3).enumerate() {
            let tx = t[i];
            // Array coordinates: pixel centres at integers.
            let x = roi.centre[0] + c * tx - s * ty - 0.5;
            let y = roi.centre[1] + s * tx + c * ty - 0.5;
            let (x0, y0) = (x.floor(), y.floor());
            let (fx, fy) = (x - x0, y - y0);
            let (x0, y0) = (x0 as i64, y0 as i64);
            let mut acc = [0.0f32; 3];
            for (dy, wy) in [(0, 1.0 - fy), (1, fy)] {
                let yi = y0 + dy;
                if yi < 0 || yi >= h {
                    continue;
                }
                for (dx, wx) in [(0, 1.0 - fx), (1, fx)] {
                    let xi = x0 + dx;
                    if xi < 0 || xi >= w {
                        continue;
                    }
                    let k = ((yi * w + xi) * 3) as usize;
                    let wgt = wx * wy;
                    for ch in 0..3 {
                        acc[ch] += wgt * rgb[k + ch] as f32;
                    }
                }
            }
            for ch in 0..3 {
                px[ch] = acc[ch] * scale;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_box_is_tight() {
        let (w, h) = (6u32, 5u32);
        let mut mask = vec![false; 30];
        mask[(w + 2) as usize] = true;
        mask[(3 * w + 4) as usize] = true;
        let b = PersonBox::from_mask(&mask, w, h).unwrap();
        assert_eq!(b, PersonBox::new(2.0, 1.0, 5.0, 4.0));
        let bytes: Vec<u8> = mask.iter().map(|&m| m as u8 * 255).collect();
        assert_eq!(PersonBox::from_mask_u8(&bytes, w, h).unwrap(), b);
        assert!(matches!(
            PersonBox::from_mask(&[false; 30], w, h),
            Err(Error::NoForeground)
        ));
        assert!(matches!(
            PersonBox::from_mask(&[true; 29], w, h),
            Err(Error::MaskSize { .. })
        ));
    }

    #[test]
    fn points_box_skips_non_finite() {
        let b = PersonBox::from_points([[1.0, 5.0], [f32::NAN, 0.0], [3.0, 2.0]]).unwrap();
        assert_eq!(b, PersonBox::new(1.0, 2.0, 3.0, 5.0));
        assert!(PersonBox::from_points([]).is_err());
    }

    #[test]
    fn box_validation() {
        assert!(
            PersonBox::new(0.0, 0.0, 10.0, 20.0)
                .validate(100, 100)
                .is_ok()
        );
        assert!(matches!(
            PersonBox::new(5.0, 5.0, 5.0, 5.0).validate(100, 100),
            Err(Error::EmptyBox(_))
        ));
        assert!(matches!(
            PersonBox::new(f32::NAN, 0.0, 1.0, 1.0).validate(9, 9),
            Err(Error::EmptyBox(_))
        ));
        assert!(matches!(
            PersonBox::new(120.0, 0.0, 140.0, 20.0).validate(100, 100),
            Err(Error::BoxOutsideFrame { .. })
        ));
    }

    #[test]
    fn crop_of_an_identity_roi_reproduces_the_image() {
        // A 256×256 image and the ROI that covers it exactly: every crop
        // pixel centre lands on an image pixel centre.
        let n = INPUT_SIZE as u32;
        let rgb: Vec<u8> = (0..n * n * 3).map(|k| (k * 7 % 251) as u8).collect();
        let roi = Roi {
            centre: [128.0, 128.0],
            side: 256.0,
            rotation: 0.0,
        };
        let t = crop(&rgb, n, n, &roi).unwrap();
        for (a, b) in t.iter().zip(&rgb) {
            assert!((a * 255.0 - *b as f32).abs() < 1e-3);
        }
        assert_eq!(roi.crop_to_image([0.0, 256.0]), [0.0, 256.0]);
    }

    #[test]
    fn rotated_roi_maps_crop_up_to_the_alignment_point() {
        // Hips at (50, 50), head to the right: the crop's top centre must map
        // towards +x in the image.
        let roi = Roi::from_alignment([50.0, 50.0], [70.0, 50.0], 1.0, true);
        assert!((roi.side - 40.0).abs() < 1e-5);
        let top = roi.crop_to_image([128.0, 0.0]);
        assert!(
            (top[0] - 70.0).abs() < 1e-4 && (top[1] - 50.0).abs() < 1e-4,
            "{top:?}"
        );
        let upright = Roi::from_alignment([50.0, 50.0], [50.0, 30.0], 1.0, true);
        assert!(upright.rotation.abs() < 1e-6);
    }

    #[test]
    fn crop_rejects_bad_input() {
        let roi = Roi {
            centre: [4.0, 4.0],
            side: 8.0,
            rotation: 0.0,
        };
        assert!(matches!(
            crop(&[0; 10], 2, 2, &roi),
            Err(Error::BufferSize { .. })
        ));
        assert!(matches!(
            crop(&[], 0, 2, &roi),
            Err(Error::EmptyImage { .. })
        ));
        let far = Roi {
            centre: [400.0, 4.0],
            ..roi
        };
        assert!(matches!(
            crop(&[0; 12], 2, 2, &far),
            Err(Error::RoiOutsideFrame { .. })
        ));
    }
}

//! The person in the foreground mask: the largest 4-connected component
//! ([`Blob`]), how much two frames' blobs overlap (the guided start's
//! stillness test) and a mask's dilation (the ghost test's outline band).

use vision::segment::neighbours4;

/// The largest 4-connected foreground component of a mask.
#[derive(Clone, Debug, PartialEq)]
pub struct Blob {
    /// 1 inside the blob (the mask's size).
    pub mask: Vec<u8>,
    pub area: usize,
    /// Bounding box, inclusive, in mask pixels.
    pub x0: usize,
    pub y0: usize,
    pub x1: usize,
    pub y1: usize,
}

impl Blob {
    /// The largest component of `mask` (`width × height`, 1 = foreground).
    pub fn largest(mask: &[u8], width: usize, height: usize) -> Option<Blob> {
        if mask.len() != width * height {
            return None;
        }
        let mut comp = vec![u32::MAX; mask.len()];
        let mut best: Option<(usize, u32)> = None;
        let mut stack = Vec::new();
        for start in 0..mask.len() {
            if mask[start] == 0 || comp[start] != u32::MAX {
                continue;
            }
            let id = start as u32;
            comp[start] = id;
            stack.push(start);
            let mut size = 0;
            while let Some(i) = stack.pop() {
                size += 1;
                for j in neighbours4(i, width, height) {
                    if mask[j] != 0 && comp[j] == u32::MAX {
                        comp[j] = id;
                        stack.push(j);
                    }
                }
            }
            if best.is_none_or(|(s, _)| size > s) {
                best = Some((size, id));
            }
        }
        let (area, id) = best?;
        let (mut x0, mut y0, mut x1, mut y1) = (usize::MAX, usize::MAX, 0, 0);
        let blob: Vec<u8> = comp
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                if c == id {
                    let (x, y) = (i % width, i / width);
                    x0 = x0.min(x);
                    y0 = y0.min(y);
                    x1 = x1.max(x);
                    y1 = y1.max(y);
                    1
                } else {
                    0
                }
            })
            .collect();
        Some(Blob {
            mask: blob,
            area,
            x0,
            y0,
            x1,
            y1,
        })
    }

    pub fn height(&self) -> usize {
        self.y1 - self.y0 + 1
    }
    pub fn width(&self) -> usize {
        self.x1 - self.x0 + 1
    }

    /// Intersection over union of two blobs' masks.
    pub fn iou(&self, other: &Blob) -> f64 {
        let (mut inter, mut union) = (0usize, 0usize);
        for (a, b) in self.mask.iter().zip(&other.mask) {
            inter += usize::from(*a != 0 && *b != 0);
            union += usize::from(*a != 0 || *b != 0);
        }
        if union == 0 {
            0.0
        } else {
            inter as f64 / union as f64
        }
    }
}

/// `mask` grown by `r` pixels (square structuring element).
pub(crate) fn dilate(mask: &[u8], width: usize, r: usize) -> Vec<u8> {
    let height = mask.len() / width.max(1);
    let mut out = vec![0u8; mask.len()];
    for y in 0..height {
        for x in 0..width {
            if mask[y * width + x] == 0 {
                continue;
            }
            for yy in y.saturating_sub(r)..(y + r + 1).min(height) {
                for xx in x.saturating_sub(r)..(x + r + 1).min(width) {
                    out[yy * width + xx] = 1;
                }
            }
        }
    }
    out
}

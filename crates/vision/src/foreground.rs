//! The foreground stage, one implementation for every pipeline that needs
//! it (`posecloud segment`, `posecloud keypoints`, the tracking session and
//! its window): the empty scene a [`Segmenter`]'s background model is
//! learned from ([`EmptyScene`], [`learn_empty_scene`]), and the person in
//! its foreground mask ([`Blob`]: the largest 4-connected component, found
//! by the same component labelling the segmenter cleans its masks with,
//! [`Components`]).
//!
//! The tracking session's guided start learns its background frame by
//! frame while it watches the scene for stillness; it does so with the
//! same two steps [`learn_empty_scene`] runs
//! ([`Segmenter::accumulate_background`], then
//! [`Segmenter::set_background`]).

use std::path::PathBuf;

use crate::error::{Result, VisionError};
use crate::frame::{Frame, FrameSource, load_rgb};
use crate::segment::{BackgroundAccumulator, Segmenter, neighbours4};

/// What a background model is learned from: the empty scene.
#[derive(Clone, Debug, PartialEq)]
pub enum EmptyScene {
    /// An image of the empty scene, the frames' size.
    Image(PathBuf),
    /// The first K frames of the source, which are not segmented.
    FirstFrames(usize),
}

impl Default for EmptyScene {
    /// The first frame.
    fn default() -> Self {
        Self::FirstFrames(1)
    }
}

/// Learns `seg`'s background model from `empty`: the image, or the next K
/// frames read from `source` (summed one at a time, none kept). Returns
/// how many frames were read from `source` (0 for an image).
///
/// # Errors
/// [`VisionError::Parameter`] for `FirstFrames(0)` or an image of another
/// size than the source's frames (naming `background_frames` or the
/// image); [`VisionError::NoFrames`] when the source ends first; the
/// image's or the source's read error.
pub fn learn_empty_scene(
    seg: &mut Segmenter,
    empty: &EmptyScene,
    source: &mut dyn FrameSource,
) -> Result<usize> {
    match empty {
        EmptyScene::Image(path) => {
            let (w, h, rgb) = load_rgb(path)?;
            let (fw, fh) = source.size();
            if (w, h) != (fw, fh) {
                return Err(VisionError::parameter(
                    "background",
                    path.display(),
                    format!("the image is {w} × {h}, the frames {fw} × {fh}"),
                ));
            }
            seg.learn_background(&[&Frame::new(w, h, rgb, 0.0, 0)?])?;
            Ok(0)
        }
        &EmptyScene::FirstFrames(k) => {
            if k == 0 {
                return Err(VisionError::parameter(
                    "background_frames",
                    0,
                    "must be ≥ 1",
                ));
            }
            let mut acc = BackgroundAccumulator::default();
            for i in 0..k {
                let f = source.next_frame()?.ok_or_else(|| VisionError::NoFrames {
                    source_name: format!(
                        "{} (ended after {i} of its {k} background frames)",
                        source.name()
                    ),
                })?;
                seg.accumulate_background(&mut acc, &f)?;
            }
            seg.set_background(&acc)?;
            Ok(k)
        }
    }
}

/// A labelling of 4-connected components, its buffers kept from call to
/// call.
#[derive(Clone, Debug, Default)]
pub struct Components {
    /// Per pixel: already in a component.
    seen: Vec<bool>,
    stack: Vec<u32>,
    members: Vec<usize>,
}

impl Components {
    /// Calls `visit(members, touches_border)` for each 4-connected
    /// component of the pixels of `mask` (`width × height`) equal to
    /// `value`, in the order of each component's first pixel (row-major);
    /// `members` lists its pixel indices.
    pub fn visit(
        &mut self,
        mask: &[u8],
        width: usize,
        height: usize,
        value: u8,
        mut visit: impl FnMut(&[usize], bool),
    ) {
        let n = (width * height).min(mask.len());
        self.seen.clear();
        self.seen.resize(n, false);
        for start in 0..n {
            if mask[start] != value || self.seen[start] {
                continue;
            }
            self.members.clear();
            self.stack.clear();
            self.stack.push(start as u32);
            self.seen[start] = true;
            let mut border = false;
            while let Some(i) = self.stack.pop() {
                let i = i as usize;
                self.members.push(i);
                let (x, y) = (i % width, i / width);
                border |= x == 0 || y == 0 || x + 1 == width || y + 1 == height;
                for j in neighbours4(i, width, height) {
                    if mask[j] == value && !self.seen[j] {
                        self.seen[j] = true;
                        self.stack.push(j as u32);
                    }
                }
            }
            visit(&self.members, border);
        }
    }
}

/// The largest 4-connected foreground component of a mask: the person.
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
    /// The largest component of the pixels equal to 1 in `mask` (`width ×
    /// height`, a [`Segmenter::foreground_mask`]); of equal ones the first
    /// in row-major order. `None` for an empty mask or one of another
    /// size.
    pub fn largest(mask: &[u8], width: usize, height: usize) -> Option<Blob> {
        if mask.len() != width * height {
            return None;
        }
        let mut best: Vec<usize> = Vec::new();
        Components::default().visit(mask, width, height, 1, |members, _| {
            if members.len() > best.len() {
                best.clear();
                best.extend_from_slice(members);
            }
        });
        if best.is_empty() {
            return None;
        }
        let mut blob = Blob {
            mask: vec![0; mask.len()],
            area: best.len(),
            x0: usize::MAX,
            y0: usize::MAX,
            x1: 0,
            y1: 0,
        };
        for &i in &best {
            let (x, y) = (i % width, i / width);
            blob.mask[i] = 1;
            blob.x0 = blob.x0.min(x);
            blob.y0 = blob.y0.min(y);
            blob.x1 = blob.x1.max(x);
            blob.y1 = blob.y1.max(y);
        }
        Some(blob)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_blob_is_the_biggest_component_with_its_box() {
        // Two components: 3 pixels at the left, 4 at the right (one of
        // them only diagonally connected, so not part of it).
        #[rustfmt::skip]
        let mask = [
            1, 0, 0, 1, 1,
            1, 0, 0, 1, 1,
            1, 0, 1, 0, 0,
        ];
        let b = Blob::largest(&mask, 5, 3).expect("a blob");
        assert_eq!(b.area, 4);
        assert_eq!((b.x0, b.y0, b.x1, b.y1), (3, 0, 4, 1));
        assert_eq!((b.width(), b.height()), (2, 2));
        assert_eq!(b.mask.iter().filter(|&&m| m == 1).count(), 4);
        assert_eq!(b.mask[12], 0, "the diagonal pixel is its own component");
        assert!((b.iou(&b) - 1.0).abs() < 1e-12);
        assert!(Blob::largest(&[0; 15], 5, 3).is_none());
        assert!(Blob::largest(&mask, 4, 3).is_none(), "wrong size");
    }

    #[test]
    fn equal_components_keep_the_first_and_borders_are_reported() {
        let mask = [1, 0, 1, 0, 0, 0, 0, 0, 0];
        let b = Blob::largest(&mask, 3, 3).expect("a blob");
        assert_eq!((b.x0, b.y0), (0, 0));
        let mut seen = Vec::new();
        Components::default().visit(&[0, 0, 0, 0, 1, 0, 0, 0, 0], 3, 3, 1, |m, border| {
            seen.push((m.to_vec(), border));
        });
        assert_eq!(seen, vec![(vec![4], false)]);
        let mut holes = 0;
        Components::default().visit(&[0, 0, 0, 0, 1, 0, 0, 0, 0], 3, 3, 0, |m, border| {
            holes += 1;
            assert_eq!((m.len(), border), (8, true));
        });
        assert_eq!(holes, 1);
    }
}

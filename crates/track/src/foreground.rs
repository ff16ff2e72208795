//! Where the person is: the one rule by which every pipeline chooses where
//! the keypoint network looks ([`where_to_look`]: the tracking session and
//! `posecloud keypoints`), and a mask's dilation (the ghost test's outline
//! band). The foreground itself — the background model learned from the
//! empty scene and the person's blob in the foreground mask — is
//! [`vision::learn_empty_scene`] and [`vision::Blob`].

use keypoints::{Keypoints, PersonBox, Roi};
use vision::Blob;

/// The tracked estimate's box grows by this fraction of its larger side on
/// every side (the joints are bone ends: hands, head and feet reach past
/// them).
pub(crate) const ESTIMATE_BOX_MARGIN: f32 = 0.12;

/// A foreground blob smaller than this fraction of the label image is not
/// a person to look at.
pub(crate) const MIN_BLOB_FRACTION: f64 = 1.0 / 200.0;

/// Where the keypoint network looks in a frame ([`where_to_look`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Look {
    /// The person's box (frame pixels).
    Box(PersonBox),
    /// The region the previous detection's landmarks give (BlazePose's
    /// tracking mode).
    Follow(Roi),
    /// Nowhere: the evidence says no person is in view.
    Nowhere,
}

/// What is known about the foreground of a frame.
#[derive(Clone, Copy, Debug)]
pub enum ForegroundEvidence<'a> {
    /// No background model: nothing is known.
    Unknown,
    /// A background model, and the foreground mask's largest blob (if any)
    /// in a label image of `label_size`.
    Known {
        blob: Option<&'a Blob>,
        label_size: (usize, usize),
    },
}

/// The one person-box rule. In order:
///
/// 1. a tracked estimate (its joints projected into the frame, pixels)
///    decides alone: the box around them grown by
///    [`ESTIMATE_BOX_MARGIN`] and clipped to the frame, or nowhere when
///    that box is not in the frame;
/// 2. with a background model, the foreground's largest blob (at least
///    [`MIN_BLOB_FRACTION`] of the label image), its box scaled to the
///    frame, or nowhere;
/// 3. without either, the previous detection's tracking region, else the
///    whole frame.
pub fn where_to_look(
    frame_size: (u32, u32),
    estimate: Option<&[[f32; 2]]>,
    foreground: ForegroundEvidence<'_>,
    previous: Option<&Keypoints>,
) -> Look {
    let (fw, fh) = frame_size;
    let in_frame = |b: PersonBox| {
        b.validate(fw, fh)
            .ok()
            .map_or(Look::Nowhere, |()| Look::Box(b))
    };
    if let Some(points) = estimate {
        let Ok(b) = PersonBox::from_points(points.iter().copied()) else {
            return Look::Nowhere;
        };
        let margin = ESTIMATE_BOX_MARGIN * b.height().max(b.width());
        let (w, h) = (fw as f32, fh as f32);
        return in_frame(PersonBox::new(
            (b.x_min - margin).max(0.0),
            (b.y_min - margin).max(0.0),
            (b.x_max + margin).min(w - 1.0),
            (b.y_max + margin).min(h - 1.0),
        ));
    }
    match foreground {
        ForegroundEvidence::Known { blob, label_size } => {
            let (lw, lh) = label_size;
            let Some(blob) = blob.filter(|b| b.area as f64 >= MIN_BLOB_FRACTION * (lw * lh) as f64)
            else {
                return Look::Nowhere;
            };
            let (sx, sy) = (fw as f32 / lw as f32, fh as f32 / lh as f32);
            in_frame(PersonBox::new(
                blob.x0 as f32 * sx,
                blob.y0 as f32 * sy,
                (blob.x1 + 1) as f32 * sx - 1.0,
                (blob.y1 + 1) as f32 * sy - 1.0,
            ))
        }
        ForegroundEvidence::Unknown => match previous {
            Some(p) => Look::Follow(p.tracking_roi(false)),
            None => Look::Box(PersonBox::new(0.0, 0.0, fw as f32 - 1.0, fh as f32 - 1.0)),
        },
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

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(x0: usize, y0: usize, x1: usize, y1: usize, w: usize) -> Blob {
        let mut mask = vec![0; w * w];
        for y in y0..=y1 {
            for x in x0..=x1 {
                mask[y * w + x] = 1;
            }
        }
        Blob::largest(&mask, w, w).expect("a blob")
    }

    #[test]
    fn the_estimate_decides_alone_then_the_blob_then_the_whole_frame() {
        let b = blob(10, 20, 29, 79, 100);
        let known = ForegroundEvidence::Known {
            blob: Some(&b),
            label_size: (100, 100),
        };
        // 1. The estimate's box with its margin, over the blob's.
        let joints = [[100.0, 100.0], [200.0, 300.0]];
        let Look::Box(e) = where_to_look((400, 400), Some(&joints), known, None) else {
            panic!("a box");
        };
        let m = ESTIMATE_BOX_MARGIN * 200.0;
        assert_eq!(
            (e.x_min, e.y_min, e.x_max, e.y_max),
            (100.0 - m, 100.0 - m, 200.0 + m, 300.0 + m)
        );
        // An estimate outside the frame: nowhere, not the blob.
        let away = [[900.0, 900.0], [950.0, 990.0]];
        assert_eq!(
            where_to_look((400, 400), Some(&away), known, None),
            Look::Nowhere
        );
        // 2. The blob scaled ×4 to the frame.
        let Look::Box(f) = where_to_look((400, 400), None, known, None) else {
            panic!("a box");
        };
        assert_eq!(
            (f.x_min, f.y_min, f.x_max, f.y_max),
            (40.0, 80.0, 119.0, 319.0)
        );
        // A blob under 1/200 of the labels, or none: nowhere.
        let speck = blob(5, 5, 6, 6, 100);
        for blob in [Some(&speck), None] {
            let known = ForegroundEvidence::Known {
                blob,
                label_size: (100, 100),
            };
            assert_eq!(where_to_look((400, 400), None, known, None), Look::Nowhere);
        }
        // 3. Nothing known: the whole frame.
        let Look::Box(w) = where_to_look((400, 300), None, ForegroundEvidence::Unknown, None)
        else {
            panic!("a box");
        };
        assert_eq!(
            (w.x_min, w.y_min, w.x_max, w.y_max),
            (0.0, 0.0, 399.0, 299.0)
        );
    }
}

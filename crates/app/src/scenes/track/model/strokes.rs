//! Colour clicks: the patch of frame pixels one click marks, and how many
//! label pixels a class's strokes give the segmenter's colour models.

use vision::{ColourClass, Stroke};

/// The stroke of one click on frame pixel `centre`: a square of frame
/// pixels centred on it (moved inside the frame at its edges), `scale + 1`
/// pixels wide or more where `scale` is frame pixels per label pixel, so
/// that it covers at least 2 × 2 label pixels and one click gives
/// [`vision::Segmenter::learn_colours_from_strokes`] the 3 distinct samples it
/// needs.
pub fn click_patch(
    (x, y): (u32, u32),
    (frame_w, frame_h): (u32, u32),
    (label_w, label_h): (u32, u32),
) -> Vec<(u32, u32)> {
    let scale = |f: u32, l: u32| if l == 0 { 1 } else { f.div_ceil(l).max(1) };
    let r = scale(frame_w, label_w)
        .max(scale(frame_h, label_h))
        .div_ceil(2);
    let side = 2 * r + 1;
    let span = |c: u32, n: u32| {
        let start = c.saturating_sub(r).min(n.saturating_sub(side));
        start..(start + side).min(n)
    };
    let (xs, ys) = (span(x, frame_w), span(y, frame_h));
    ys.flat_map(|v| xs.clone().map(move |u| (u, v))).collect()
}

/// The label pixels of [`stroke_label_pixels`] per colour class, as
/// "N skin, M shirt" (classes without any left out).
pub fn stroke_summary(strokes: &[Stroke], frame: (u32, u32), labels: (u32, u32)) -> String {
    let counts = stroke_label_pixels(strokes, frame, labels);
    let per_class: Vec<String> = ColourClass::ALL
        .into_iter()
        .zip(counts)
        .filter(|&(_, n)| n > 0)
        .map(|(class, n)| format!("{n} {}", class.name()))
        .collect();
    per_class.join(", ")
}

/// The distinct label pixels under each class's strokes (index
/// `ColourClass as usize`): the samples
/// [`vision::Segmenter::learn_colours_from_strokes`] fits, with its mapping of a
/// frame pixel to the label pixel that contains it. Points outside the
/// frame are skipped (all of them for an empty frame or label image).
pub(crate) fn stroke_label_pixels(
    strokes: &[Stroke],
    (frame_w, frame_h): (u32, u32),
    (label_w, label_h): (u32, u32),
) -> [usize; 4] {
    if label_w == 0 || label_h == 0 {
        return [0; 4];
    }
    let mut per: [Vec<usize>; 4] = Default::default();
    let (fw, fh) = (frame_w as usize, frame_h as usize);
    let (lw, lh) = (label_w as usize, label_h as usize);
    for s in strokes {
        for &(x, y) in &s.points {
            let (x, y) = (x as usize, y as usize);
            if x < fw && y < fh {
                let (lx, ly) = ((x * lw / fw).min(lw - 1), (y * lh / fh).min(lh - 1));
                per[s.class as usize].push(ly * lw + lx);
            }
        }
    }
    per.map(|mut idx| {
        idx.sort_unstable();
        idx.dedup();
        idx.len()
    })
}

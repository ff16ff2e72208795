//! Segmentation against ground truth on synthetic renders of a BVH clip:
//! the measurement behind the tests and the `segment_eval` example.
//!
//! A scenario places a fixed camera at `distance` metres from the subject's
//! hips at the middle evaluated frame, at `azimuth` degrees around the
//! vertical (0° = in front of the CMU walk, which heads along +z), renders
//! the empty frame and the clip frames, learns the background from the
//! empty frame and the colours from the first clip frame with its true
//! pose, then segments every frame (optionally after a global gain) and
//! compares with the true class image at the label resolution (the label
//! raster at the resized camera, remapped by the [`ClassMap`](crate::ClassMap)).

use nalgebra::{Point3, Vector3};
use skeleton::Bvh;

use crate::classes::{SEG_CLASSES, SegClass};
use crate::error::{Result, VisionError};
use crate::segment::{SegmentParams, Segmenter, iou};
use crate::synth::{RenderOptions, SyntheticRenderer};

/// One evaluation setting.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub azimuth_deg: f64,
    pub distance: f64,
    /// Camera height above the hips, metres.
    pub height: f64,
    pub width: u32,
    pub frame_height: u32,
    pub vertical_fov_deg: f64,
    pub options: RenderOptions,
    pub frames: Vec<usize>,
    /// Multiplies every frame (not the background) by this gain, clipped.
    pub gain: f64,
    pub params: SegmentParams,
}

impl Default for Scenario {
    fn default() -> Self {
        Self {
            azimuth_deg: 0.0,
            distance: 2.3,
            height: 0.2,
            width: 640,
            frame_height: 480,
            vertical_fov_deg: 50.0,
            options: RenderOptions::default(),
            frames: vec![560, 600, 640, 680],
            gain: 1.0,
            params: SegmentParams::default(),
        }
    }
}

/// IoU figures of one scenario, averaged over its frames.
#[derive(Clone, Debug, PartialEq)]
pub struct Scores {
    pub foreground_iou: f64,
    /// Per class id `1..=4` (index 0 unused); `None` when the class is in
    /// neither image of any frame.
    pub class_iou: [Option<f64>; SEG_CLASSES + 1],
    /// Mean of the classes present.
    pub mean_class_iou: f64,
    /// Mean segmentation time per frame, milliseconds.
    pub ms_per_frame: f64,
}

/// Runs one scenario on `bvh`.
///
/// # Errors
/// [`VisionError::Parameter`] for a frame outside the clip or no frames;
/// rendering and segmentation errors.
pub fn evaluate(bvh: &Bvh, s: &Scenario) -> Result<Scores> {
    let n = bvh.frames.len();
    if s.frames.is_empty() || s.frames.iter().any(|&f| f >= n) {
        return Err(VisionError::parameter(
            "frames",
            format!("{:?}", s.frames),
            format!("need at least one frame within 0..{n}"),
        ));
    }
    let mid = s.frames[s.frames.len() / 2];
    let world = bvh.skeleton.forward_kinematics(bvh.frames.pose(mid))?;
    let hips = Point3::from(world[0].translation.vector);
    let a = s.azimuth_deg.to_radians();
    let eye = hips + Vector3::new(a.sin(), 0.0, a.cos()) * s.distance + Vector3::y() * s.height;
    let camera = labels::Camera::looking_at(
        eye,
        hips,
        Vector3::y(),
        s.vertical_fov_deg.to_radians(),
        s.width,
        s.frame_height,
    )?;
    let renderer = SyntheticRenderer::new(&bvh.skeleton, camera.clone(), s.options.clone())?;
    let small = crate::camera_file::resize_camera(&camera, s.params.width, s.params.height)?;
    let mut seg = Segmenter::new(s.params.clone(), s.width, s.frame_height)?;
    let empty = renderer.render_empty(0, 0, 0.0);
    seg.learn_background(&[&empty])?;
    let map = renderer.class_map();
    let (mut fg_sum, mut seconds) = (0.0, 0.0);
    let mut inter = [0usize; SEG_CLASSES + 1];
    let mut union = [0usize; SEG_CLASSES + 1];
    let mut per_class_sum = [0.0f64; SEG_CLASSES + 1];
    let mut per_class_n = [0usize; SEG_CLASSES + 1];
    for (k, &f) in s.frames.iter().enumerate() {
        let pose = bvh.frames.pose(f);
        let mut r = renderer.render(pose, k as u64 + 1, k + 1, 0.0)?;
        if k == 0 {
            seg.learn_colours_from_pose(&r.frame, renderer.skeleton(), &camera, pose, map)?;
        }
        if s.gain != 1.0 {
            for v in &mut r.frame.rgb {
                *v = (f64::from(*v) * s.gain).round().clamp(0.0, 255.0) as u8;
            }
        }
        let mut truth = labels::synth::render_label_image(renderer.skeleton(), &small, pose)?;
        map.remap(&mut truth);
        let t0 = std::time::Instant::now();
        let out = seg.segment(&r.frame)?;
        seconds += t0.elapsed().as_secs_f64();
        fg_sum += iou(&out.labels, &truth, |l| l != 0, |l| l != 0).unwrap_or(1.0);
        for c in SegClass::ALL.iter().skip(1).map(|c| c.id()) {
            let k = usize::from(c);
            for (&p, &q) in out.labels.iter().zip(&truth) {
                inter[k] += usize::from(p == c && q == c);
                union[k] += usize::from(p == c || q == c);
            }
            if let Some(v) = iou(&out.labels, &truth, |l| l == c, |l| l == c) {
                per_class_sum[k] += v;
                per_class_n[k] += 1;
            }
        }
    }
    let mut class_iou = [None; SEG_CLASSES + 1];
    for k in 1..=SEG_CLASSES {
        if per_class_n[k] > 0 {
            class_iou[k] = Some(per_class_sum[k] / per_class_n[k] as f64);
        }
    }
    let present: Vec<f64> = class_iou.iter().flatten().copied().collect();
    Ok(Scores {
        foreground_iou: fg_sum / s.frames.len() as f64,
        class_iou,
        mean_class_iou: present.iter().sum::<f64>() / present.len().max(1) as f64,
        ms_per_frame: 1e3 * seconds / s.frames.len() as f64,
    })
}

//! The non-overlap likelihood of RTPF §IV-D and its CPU reference pipeline.
//!
//! For a candidate pose `q`, let `A_c` be the pixels of class `c` in the
//! observed (segmented) label image and `B_c(q)` those of class `c` in the
//! model's label rendering. RTPF Eq. 1 is the non-overlapping ratio
//!
//! ```text
//!          m  ⎛ |A_c ∪ B_c(q)| − |A_c ∩ B_c(q)| ⎞ 1/m
//! F(q) =   ∏  ⎜ ─────────────────────────────── ⎟          (RTPF Eq. 1)
//!         c=1 ⎝         |A_c ∪ B_c(q)|          ⎠
//! ```
//!
//! the geometric mean over classes of the fraction of each class's union
//! that is *not* shared (0: identical regions, 1: disjoint). The union
//! follows from the histogram counts: `|A ∪ B| = |A| + |B| − |A ∩ B|`.
//! A class absent from both images has an empty union (0/0): it is
//! **skipped**, and `m` counts only the classes present in at least one of
//! the two images (`F = 0` when no class is present in either). Note a
//! property of the geometric mean: one class reproduced exactly makes its
//! factor, hence `F`, zero whatever the other classes do. Real
//! segmentations never match a class exactly; synthetic noiseless
//! observations can (see [`crate::synth`] for noise).
//!
//! The particle weight is the region-based likelihood (RTPF Eq. 2)
//! `p(z | q) ∝ exp(−F(q)² / (2 σ_F²))`, stored as its log `−F² / (2 σ_F²)`.
//!
//! Counting (RTPF §VI: "the histogram of this third image"): per particle and
//! class `c ∈ 1..=C` the model area `|B_c|` and the overlap `|A_c ∩ B_c|`;
//! `|A_c|` is the same for every particle and is computed once per
//! [`Observation`]. Only pixels a capsule's bounding rectangle covers can be
//! model pixels, so only those are visited.
//!
//! **Label map.** The model renders body-part labels ([`BodyPart::label`],
//! `1..=C`) while a segmentation produces its own classes (RTPF §IV-D: face,
//! arms, clothes). A [`LabelMap`] `m` (`m[l − 1]` = the class of rendered
//! label `l`, `0..=C`, 0 meaning "not segmented": counted as background)
//! is applied to every rendered pixel *after* the depth test and before the
//! histograms, so `B_c(q)` is the set of pixels whose nearest body part maps
//! to class `c`. The identity map ([`IDENTITY_LABEL_MAP`]) compares body
//! parts directly.

use std::sync::Mutex;

use nalgebra::Isometry3;
use rayon::prelude::*;
use skeleton::{BatchForwardKinematics, BodyPart, Skeleton};
use smc::{BoxError, Likelihood, Term};

use crate::camera::{Camera, RasterCamera};
use crate::error::{LabelError, Result};
use crate::raster::{CapsuleInstance, LabelRaster, PixelRect, capsules_of_pose};

/// Number of label classes `C` (labels `1..=C`; 0 is background).
pub const CLASSES: usize = BodyPart::ALL.len();

/// `m[l − 1]`: the observed class (`0..=C`, 0 = background) of the
/// rendered body-part label `l ∈ 1..=C` (module docs, "Label map").
pub type LabelMap = [u8; CLASSES];

/// Every body-part label is its own class.
pub const IDENTITY_LABEL_MAP: LabelMap = {
    let mut m = [0u8; CLASSES];
    let mut i = 0;
    while i < CLASSES {
        m[i] = (i + 1) as u8;
        i += 1;
    }
    m
};

/// The map that sends every part's label to `class(part)`.
pub fn label_map_of(class: impl Fn(BodyPart) -> u8) -> LabelMap {
    let mut m = [0u8; CLASSES];
    for part in BodyPart::ALL {
        m[usize::from(part.label()) - 1] = class(part);
    }
    m
}

/// Checks that every entry of `map` is a class `0..=C`.
///
/// # Errors
/// [`LabelError::LabelMap`] naming the first entry out of range.
pub fn check_label_map(map: &LabelMap) -> Result<()> {
    match map.iter().position(|&c| usize::from(c) > CLASSES) {
        None => Ok(()),
        Some(i) => Err(LabelError::LabelMap {
            label: i as u32 + 1,
            class: map[i],
            classes: CLASSES,
        }),
    }
}

/// Particles per rayon task.
const PARTICLES_PER_TASK: usize = 4;

/// An observed label image (`width × height`, row-major, y down, labels
/// `0..=C`) with its per-class areas `|A_c|`.
#[derive(Clone, Debug, PartialEq)]
pub struct Observation {
    width: u32,
    height: u32,
    labels: Vec<u8>,
    areas: [u32; CLASSES],
}

impl Observation {
    /// Validates the image and counts `|A_c|`.
    ///
    /// # Errors
    /// [`LabelError::PixelCount`] when `labels.len() != width · height`;
    /// [`LabelError::LabelOutOfRange`] naming the first pixel whose label
    /// exceeds `C`.
    pub fn new(width: u32, height: u32, labels: Vec<u8>) -> Result<Self> {
        let expected = width as usize * height as usize;
        if labels.len() != expected || expected == 0 {
            return Err(LabelError::PixelCount {
                width,
                height,
                expected,
                found: labels.len(),
            });
        }
        let mut areas = [0u32; CLASSES];
        for (i, &l) in labels.iter().enumerate() {
            match l {
                0 => {}
                l if usize::from(l) <= CLASSES => areas[usize::from(l) - 1] += 1,
                label => {
                    return Err(LabelError::LabelOutOfRange {
                        x: (i % width as usize) as u32,
                        y: (i / width as usize) as u32,
                        label,
                        classes: CLASSES,
                    });
                }
            }
        }
        Ok(Self {
            width,
            height,
            labels,
            areas,
        })
    }

    pub fn width(&self) -> u32 {
        self.width
    }
    pub fn height(&self) -> u32 {
        self.height
    }
    /// The label image, row-major.
    pub fn labels(&self) -> &[u8] {
        &self.labels
    }
    /// `|A_c|` for `c = 1..=C` (index `c − 1`).
    pub fn areas(&self) -> &[u32; CLASSES] {
        &self.areas
    }

    /// Checks that the image is the camera's `width × height`.
    ///
    /// # Errors
    /// [`LabelError::ImageSizeMismatch`] when it is not.
    pub fn check_size(&self, width: u32, height: u32) -> Result<()> {
        if (self.width, self.height) != (width, height) {
            return Err(LabelError::ImageSizeMismatch {
                what: "observation vs camera",
                expected_width: width,
                expected_height: height,
                found_width: self.width,
                found_height: self.height,
            });
        }
        Ok(())
    }
}

/// RTPF Eq. 1–2 with the spread `σ_F` of the non-overlap ratio.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NonOverlap {
    sigma_f: f64,
}

impl Default for NonOverlap {
    /// `σ_F = 0.1`. RTPF sets it experimentally from the variability of
    /// `F` over a video; tune it per sequence.
    fn default() -> Self {
        Self { sigma_f: 0.1 }
    }
}

impl NonOverlap {
    /// # Errors
    /// [`LabelError::InvalidSetting`] unless `sigma_f` is finite and positive.
    pub fn new(sigma_f: f64) -> Result<Self> {
        if !(sigma_f.is_finite() && sigma_f > 0.0) {
            return Err(LabelError::InvalidSetting {
                field: "sigma_f",
                value: sigma_f,
                reason: "must be finite and > 0",
            });
        }
        Ok(Self { sigma_f })
    }

    pub fn sigma_f(&self) -> f64 {
        self.sigma_f
    }

    /// The non-overlapping ratio `F(q)` (RTPF Eq. 1; rules in the module
    /// docs) from the observed areas `|A_c|` and one particle's counts
    /// `[|B_1|, |A_1 ∩ B_1|, |B_2|, |A_2 ∩ B_2|, …]` (`2 C` values).
    pub fn ratio(area_a: &[u32; CLASSES], counts: &[u32]) -> f64 {
        debug_assert_eq!(counts.len(), 2 * CLASSES);
        let mut m = 0u32;
        let mut log_sum = 0.0f64;
        let mut exact = false;
        for (c, &a) in area_a.iter().enumerate() {
            let (b, ab) = (counts[2 * c], counts[2 * c + 1]);
            let union = u64::from(a) + u64::from(b) - u64::from(ab);
            if union == 0 {
                continue; // absent from both images: skipped
            }
            m += 1;
            let apart = union - u64::from(ab);
            if apart == 0 {
                exact = true;
            } else {
                log_sum += (apart as f64 / union as f64).ln();
            }
        }
        if m == 0 || exact {
            0.0
        } else {
            (log_sum / f64::from(m)).exp()
        }
    }

    /// `log p(z | q) = −F² / (2 σ_F²)` up to a constant (RTPF Eq. 2).
    pub fn log_likelihood(&self, f: f64) -> f64 {
        -f * f / (2.0 * self.sigma_f * self.sigma_f)
    }
}

/// Adds, over the pixels of `rect`, the model counts of `tile` against the
/// observed labels: `counts[2 (c − 1)] += |B_c|`, `counts[2 (c − 1) + 1] +=
/// |A_c ∩ B_c|`, where a rendered label `l` counts as class `map[l − 1]`
/// (none when that is 0). With `clear`, the visited tile pixels are reset
/// to 0 (so the tile is ready for the next draw).
pub(crate) fn count_classes(
    observed: &[u8],
    tile: &mut [u8],
    width: u32,
    rect: PixelRect,
    map: &LabelMap,
    counts: &mut [u32],
    clear: bool,
) {
    debug_assert_eq!(counts.len(), 2 * CLASSES);
    if rect.is_empty() {
        return;
    }
    let w = width as usize;
    for y in rect.y0 as usize..rect.y1 as usize {
        let span = y * w + rect.x0 as usize..y * w + rect.x1 as usize;
        let obs = &observed[span.clone()];
        let model = &mut tile[span];
        for (b, &a) in model.iter_mut().zip(obs) {
            let l = *b;
            if l != 0 {
                let c = map[usize::from(l) - 1];
                if c != 0 {
                    let k = 2 * (usize::from(c) - 1);
                    counts[k] += 1;
                    counts[k + 1] += u32::from(a == c);
                }
                if clear {
                    *b = 0;
                }
            }
        }
    }
}

/// Validates a batch of `states.len() / dim` poses for `skeleton` (shared
/// by the CPU and GPU back ends: public for the `gpu` crate) and returns N.
///
/// # Errors
/// [`LabelError::StateShape`] unless `dim` is the skeleton's parameter count
/// and divides the buffer; [`LabelError::EmptyBatch`] for N = 0;
/// [`LabelError::NonFinitePose`] naming the first non-finite value.
pub fn check_states(skeleton: &Skeleton, states: &[f64], dim: usize) -> Result<usize> {
    let dof = skeleton.dof();
    if dim != dof || dim == 0 || !states.len().is_multiple_of(dim) {
        return Err(LabelError::StateShape {
            len: states.len(),
            dim,
            dof,
        });
    }
    if states.is_empty() {
        return Err(LabelError::EmptyBatch);
    }
    if let Some(k) = states.iter().position(|x| !x.is_finite()) {
        return Err(LabelError::NonFinitePose {
            particle: k / dim,
            parameter: k % dim,
            value: states[k],
        });
    }
    Ok(states.len() / dim)
}

/// Where a batch's joint transforms come from (shared by the CPU and GPU
/// back ends).
#[derive(Clone, Copy, Debug)]
pub enum Poses<'a> {
    /// Forward kinematics of each pose inside the likelihood.
    States,
    /// Prepared once for the whole batch by the engine
    /// ([`skeleton::Posing`]) and shared with the other likelihood terms.
    Posed(&'a BatchForwardKinematics),
}

impl Poses<'_> {
    /// Checks that prepared transforms belong to `n` poses of `skeleton`.
    ///
    /// # Errors
    /// [`LabelError::Pose`] when they hold another number of poses or joints.
    pub fn check(&self, skeleton: &Skeleton, n: usize) -> Result<()> {
        match self {
            Poses::States => Ok(()),
            Poses::Posed(fk)
                if fk.len() == n && (n == 0 || fk.world(0).len() == skeleton.len()) =>
            {
                Ok(())
            }
            Poses::Posed(fk) => Err(LabelError::Pose(format!(
                "the prepared forward kinematics hold {} poses of {} joints, the batch {n} poses of {}",
                fk.len(),
                fk.as_slice().len().checked_div(fk.len()).unwrap_or(0),
                skeleton.len()
            ))),
        }
    }
}

/// Per-particle results of one batch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evaluation {
    /// `N × C × 2`: for particle `i` and class `c ∈ 1..=C`,
    /// `counts[(i C + c − 1) · 2] = |B_c|` and `… + 1 = |A_c ∩ B_c|`.
    pub counts: Vec<u32>,
    /// `F(q_i)` (RTPF Eq. 1).
    pub non_overlap: Vec<f64>,
    /// `−F(q_i)² / (2 σ_F²)` (RTPF Eq. 2).
    pub log_likelihood: Vec<f64>,
}

impl Evaluation {
    /// `(|B_c|, |A_c ∩ B_c|)` of particle `i` for the class `c ∈ 1..=C`.
    pub fn class_counts(&self, i: usize, c: usize) -> (u32, u32) {
        let k = (i * CLASSES + c - 1) * 2;
        (self.counts[k], self.counts[k + 1])
    }
}

/// One worker's buffers.
#[derive(Debug)]
struct Scratch {
    world: Vec<Isometry3<f64>>,
    capsules: Vec<CapsuleInstance>,
    raster: LabelRaster,
    tile: Vec<u8>,
}

/// The CPU reference of the batched measurement step: forward kinematics,
/// label raster ([`crate::raster`]), class histograms and RTPF Eq. 1–2 per
/// particle, rayon-parallel over particles. Owns every buffer it needs
/// (one scratch set per rayon worker, the result arrays), so repeated
/// batches of the same size do not allocate.
#[derive(Debug)]
pub struct CpuLikelihood {
    skeleton: Skeleton,
    camera: Camera,
    raster_camera: RasterCamera,
    model: NonOverlap,
    label_map: LabelMap,
    scratch: Vec<Mutex<Scratch>>,
    results: Mutex<Evaluation>,
    tiles: Vec<u8>,
}

impl CpuLikelihood {
    /// One scratch set per thread of the current rayon pool.
    pub fn new(skeleton: Skeleton, camera: Camera, model: NonOverlap) -> Self {
        let slots = rayon::current_num_threads().max(1);
        let scratch = (0..slots)
            .map(|_| {
                Mutex::new(Scratch {
                    world: vec![Isometry3::identity(); skeleton.len()],
                    capsules: Vec::with_capacity(skeleton.len()),
                    raster: LabelRaster::new(),
                    tile: vec![0; camera.pixels()],
                })
            })
            .collect();
        Self {
            raster_camera: camera.raster(),
            skeleton,
            camera,
            model,
            label_map: IDENTITY_LABEL_MAP,
            scratch,
            results: Mutex::new(Evaluation::default()),
            tiles: Vec::new(),
        }
    }

    pub fn skeleton(&self) -> &Skeleton {
        &self.skeleton
    }
    pub fn camera(&self) -> &Camera {
        &self.camera
    }
    pub fn model(&self) -> &NonOverlap {
        &self.model
    }
    /// Sets `σ_F` (RTPF Eq. 2) for later batches.
    pub fn set_model(&mut self, model: NonOverlap) {
        self.model = model;
    }
    /// The map from rendered body-part labels to observed classes.
    pub fn label_map(&self) -> &LabelMap {
        &self.label_map
    }
    /// Sets the [`LabelMap`] applied to rendered labels before counting
    /// (identity by default).
    ///
    /// # Errors
    /// [`LabelError::LabelMap`] for an entry outside `0..=C`.
    pub fn set_label_map(&mut self, map: LabelMap) -> Result<()> {
        check_label_map(&map)?;
        self.label_map = map;
        Ok(())
    }

    /// Weighs the batch `states` (row-major `N × D`, D = the skeleton's
    /// parameter count) against `obs`; the results stay in `self`.
    ///
    /// # Errors
    /// Image size mismatch with the camera, `N = 0`, a state buffer that is
    /// not `N × D`, a non-finite parameter.
    pub fn evaluate(&mut self, obs: &Observation, states: &[f64]) -> Result<&Evaluation> {
        self.evaluate_with(obs, states, Poses::States)
    }

    /// As [`Self::evaluate`], reading each pose's joint transforms from
    /// `fk` (prepared once for the batch, e.g. by [`skeleton::Posing`])
    /// instead of computing them: the same results.
    ///
    /// # Errors
    /// As [`Self::evaluate`]; `fk` not computed from `states`' N poses.
    pub fn evaluate_posed(
        &mut self,
        obs: &Observation,
        states: &[f64],
        fk: &BatchForwardKinematics,
    ) -> Result<&Evaluation> {
        self.evaluate_with(obs, states, Poses::Posed(fk))
    }

    fn evaluate_with(
        &mut self,
        obs: &Observation,
        states: &[f64],
        poses: Poses<'_>,
    ) -> Result<&Evaluation> {
        let mut results = std::mem::take(self.results.get_mut().unwrap_or_else(|e| e.into_inner()));
        let r = self.run(obs, states, self.skeleton.dof(), poses, &mut results);
        let slot = self.results.get_mut().unwrap_or_else(|e| e.into_inner());
        *slot = results;
        r.map(|()| &*slot)
    }

    /// The label tiles of a batch, `N × H × W` (tile `i` at
    /// `i · W · H`), for inspection and for comparison with the GPU path.
    ///
    /// # Errors
    /// As [`Self::evaluate`] without the observation checks.
    pub fn render_tiles(&mut self, states: &[f64]) -> Result<&[u8]> {
        let n = self.check_states(states, self.skeleton.dof())?;
        let px = self.camera.pixels();
        let dof = self.skeleton.dof();
        let mut tiles = std::mem::take(&mut self.tiles);
        tiles.clear();
        tiles.resize(n * px, 0);
        let this = &*self;
        tiles
            .par_chunks_mut(px)
            .zip(states.par_chunks(dof))
            .for_each(|(tile, pose)| {
                let mut guard = this.scratch_slot();
                let s = &mut *guard;
                this.skeleton.forward_kinematics_into(pose, &mut s.world);
                capsules_of_pose(&this.skeleton, &s.world, &mut s.capsules);
                s.raster.draw(&this.raster_camera, &s.capsules, tile);
            });
        self.tiles = tiles;
        Ok(&self.tiles)
    }

    fn scratch_slot(&self) -> std::sync::MutexGuard<'_, Scratch> {
        let i = rayon::current_thread_index().unwrap_or(0) % self.scratch.len();
        self.scratch[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    fn check_states(&self, states: &[f64], dim: usize) -> Result<usize> {
        check_states(&self.skeleton, states, dim)
    }

    fn run(
        &self,
        obs: &Observation,
        states: &[f64],
        dim: usize,
        poses: Poses<'_>,
        ev: &mut Evaluation,
    ) -> Result<()> {
        let w = self.camera.width();
        obs.check_size(w, self.camera.height())?;
        let n = self.check_states(states, dim)?;
        poses.check(&self.skeleton, n)?;
        ev.counts.clear();
        ev.counts.resize(n * 2 * CLASSES, 0);
        ev.non_overlap.resize(n, 0.0);
        ev.log_likelihood.resize(n, 0.0);
        let task = PARTICLES_PER_TASK;
        ev.counts
            .par_chunks_mut(task * 2 * CLASSES)
            .zip(ev.non_overlap.par_chunks_mut(task))
            .zip(ev.log_likelihood.par_chunks_mut(task))
            .zip(states.par_chunks(task * dim))
            .enumerate()
            .for_each(|(chunk, (((counts, f), ll), rows))| {
                let mut guard = self.scratch_slot();
                let s = &mut *guard;
                for (k, (((counts, f), ll), pose)) in counts
                    .chunks_exact_mut(2 * CLASSES)
                    .zip(f)
                    .zip(ll)
                    .zip(rows.chunks_exact(dim))
                    .enumerate()
                {
                    let world = match poses {
                        Poses::Posed(fk) => fk.world(chunk * task + k),
                        Poses::States => {
                            self.skeleton.forward_kinematics_into(pose, &mut s.world);
                            &s.world
                        }
                    };
                    capsules_of_pose(&self.skeleton, world, &mut s.capsules);
                    let rect = s.raster.draw(&self.raster_camera, &s.capsules, &mut s.tile);
                    count_classes(
                        obs.labels(),
                        &mut s.tile,
                        w,
                        rect,
                        &self.label_map,
                        counts,
                        true,
                    );
                    *f = NonOverlap::ratio(obs.areas(), counts);
                    *ll = self.model.log_likelihood(*f);
                }
            });
        Ok(())
    }
}

impl Likelihood<Observation> for CpuLikelihood {
    /// RTPF Eq. 2 for every particle; the counts and `F` of the batch are
    /// kept in `self`'s result buffers.
    fn log_likelihood(
        &self,
        obs: &Observation,
        states: &[f64],
        dim: usize,
        out: &mut [f64],
    ) -> std::result::Result<(), BoxError> {
        let mut results = self.results.lock().unwrap_or_else(|e| e.into_inner());
        self.run(obs, states, dim, Poses::States, &mut results)?;
        copy_results(&results.log_likelihood, out)
    }
}

/// RTPF Eq. 2 as a term of a body likelihood, reading the cloud's joint
/// transforms prepared once per step ([`skeleton::Posing`]), so that
/// constraints or a prior added to it do not redo forward kinematics. The
/// counts and `F` of the batch are kept in `self`'s result buffers.
impl Term<Observation, BatchForwardKinematics> for CpuLikelihood {
    fn add_log_likelihood(
        &self,
        obs: &Observation,
        fk: &BatchForwardKinematics,
        states: &[f64],
        dim: usize,
        out: &mut [f64],
    ) -> std::result::Result<(), BoxError> {
        let mut results = self.results.lock().unwrap_or_else(|e| e.into_inner());
        self.run(obs, states, dim, Poses::Posed(fk), &mut results)?;
        add_results(&results.log_likelihood, out)
    }
}

/// `out[i] = ll[i]`, or an error when the lengths differ (shared by the
/// CPU and GPU back ends' [`smc::Likelihood`] implementations).
///
/// # Errors
/// [`LabelError::OutputLength`] (boxed) when `out` and `ll` differ in length.
pub fn copy_results(ll: &[f64], out: &mut [f64]) -> std::result::Result<(), BoxError> {
    check_output_len(ll, out)?;
    out.copy_from_slice(ll);
    Ok(())
}

/// `out[i] += ll[i]`, or an error when the lengths differ (shared by the
/// CPU and GPU back ends' [`smc::Term`] implementations).
///
/// # Errors
/// [`LabelError::OutputLength`] (boxed) when `out` and `ll` differ in length.
pub fn add_results(ll: &[f64], out: &mut [f64]) -> std::result::Result<(), BoxError> {
    check_output_len(ll, out)?;
    for (o, l) in out.iter_mut().zip(ll) {
        *o += l;
    }
    Ok(())
}

fn check_output_len(ll: &[f64], out: &[f64]) -> Result<()> {
    if out.len() != ll.len() {
        return Err(LabelError::OutputLength {
            particles: ll.len(),
            found: out.len(),
        });
    }
    Ok(())
}

//! A session frame by frame: the room ray-cast once, then per frame the
//! body's primitives sphere-traced (Hart 1996) inside the rectangle they
//! and their shadow cover, soft shadows, lens blur, vignetting and sensor
//! noise, with the frame's truth.

use nalgebra::{Isometry3, Point3};
use rayon::prelude::*;
use skeleton::{Bvh, PoseBatch, Skeleton};
use vision::{Frame, Result, VisionError};

use crate::V3;
use crate::body::{Mat, Prim, SMOOTH_K, Shape, body_prims, sdf, v3};
use crate::camera::{RayCam, make_camera};
use crate::colour::{SrgbTable, gauss, lin, mix64, value_noise};
use crate::mocap::MocapMoves;
use crate::options::FootageOptions;
use crate::plan::{Plan, plan};
use crate::room::Scene;
use crate::subject::{Subject, find};
use crate::truth::{Phase, PhaseSpan, TRUTH_JOINTS, TruthRow, interior_angle_deg};

/// One rendered frame with its truth.
#[derive(Clone, Debug)]
pub struct FootageFrame {
    pub frame: Frame,
    /// 1 where the pixel's centre ray hits the body, else 0 (row-major).
    pub mask: Vec<u8>,
    pub truth: TruthRow,
}

/// A whole session in memory.
#[derive(Clone, Debug)]
pub struct Footage {
    pub frames: Vec<Frame>,
    pub masks: Vec<Vec<u8>>,
    pub truth: Vec<TruthRow>,
    pub phases: Vec<PhaseSpan>,
    pub camera: labels::Camera,
    /// The motion on the subject's skeleton, one frame per video frame.
    pub bvh: Bvh,
}

/// A session ready to render frame by frame (the room is pre-rendered).
pub struct SessionRenderer {
    options: FootageOptions,
    subject: Subject,
    clip_channels: Vec<Vec<skeleton::Channel>>,
    camera: labels::Camera,
    raycam: RayCam,
    scene: Scene,
    plan: Plan,
    truth_ids: Vec<usize>,
    /// The room, linear RGB, sharp.
    room_sharp: Vec<V3>,
    /// The room after blur and vignetting, sRGB levels (0–255, float).
    room_final: Vec<V3>,
    /// Floor point seen by each pixel (NaN: not floor).
    floor_xz: Vec<[f32; 2]>,
    vignette: Vec<f32>,
    srgb: SrgbTable,
}

impl SessionRenderer {
    /// Builds the subject, the motion and the room.
    ///
    /// # Errors
    /// Invalid options ([`VisionError::Parameter`]), an unreadable walk clip
    /// or one without the CMU joints ([`VisionError::Skeleton`]).
    pub fn new(options: &FootageOptions) -> Result<Self> {
        options.validate()?;
        let clip = Bvh::load(&options.walk_clip)?;
        let subject = Subject::new(&clip.skeleton, &options.setup.build)?;
        let camera = make_camera(options)?;
        let mocap = match &options.moves_clip {
            Some(path) => Some(MocapMoves::load(
                path,
                options.moves_start,
                options.moves_yaw_deg.to_radians(),
            )?),
            None => None,
        };
        let plan = plan(options, &subject, &clip, mocap.as_ref())?;
        let truth_ids = TRUTH_JOINTS
            .iter()
            .map(|(_, n)| find(&subject.skeleton, n))
            .collect::<Result<Vec<_>>>()?;
        let scene = Scene::new(&options.setup);
        let raycam = RayCam::new(&camera);
        let (w, h) = (options.width as usize, options.height as usize);
        let mut room_sharp = vec![V3::zeros(); w * h];
        let mut floor_xz = vec![[f32::NAN; 2]; w * h];
        room_sharp
            .par_chunks_mut(w)
            .zip(floor_xz.par_chunks_mut(w))
            .enumerate()
            .for_each(|(y, (row, floor))| {
                for x in 0..w {
                    let d = raycam.dir(x as f32, y as f32);
                    let (c, f) = scene.shade(&raycam.origin, &d);
                    row[x] = c;
                    if let Some((fx, fz)) = f {
                        floor[x] = [fx, fz];
                    }
                }
            });
        let (cx, cy) = (w as f32 * 0.5, h as f32 * 0.5);
        let r_max2 = cx * cx + cy * cy;
        let strength = options.vignette as f32;
        let vignette: Vec<f32> = (0..w * h)
            .map(|i| {
                let (x, y) = ((i % w) as f32 + 0.5 - cx, (i / w) as f32 + 0.5 - cy);
                let r2 = (x * x + y * y) / r_max2;
                1.0 - strength * r2 * (0.6 + 0.4 * r2)
            })
            .collect();
        let srgb = SrgbTable::new();
        let blurred = if options.blur {
            blur(&room_sharp, w, h)
        } else {
            room_sharp.clone()
        };
        let room_final = blurred
            .iter()
            .zip(&vignette)
            .map(|(c, v)| V3::new(srgb.get(c.x * v), srgb.get(c.y * v), srgb.get(c.z * v)))
            .collect();
        Ok(Self {
            options: options.clone(),
            subject,
            clip_channels: clip.channels,
            camera,
            raycam,
            scene,
            plan,
            truth_ids,
            room_sharp,
            room_final,
            floor_xz,
            vignette,
            srgb,
        })
    }

    /// Frames in the session.
    pub fn len(&self) -> usize {
        self.plan.poses.len()
    }

    pub fn is_empty(&self) -> bool {
        self.plan.poses.is_empty()
    }

    pub fn options(&self) -> &FootageOptions {
        &self.options
    }

    /// The phases, in order, as frame ranges.
    pub fn phases(&self) -> &[PhaseSpan] {
        &self.plan.phases
    }

    /// The phase of frame `i`.
    pub fn phase(&self, i: usize) -> Phase {
        self.plan
            .phases
            .iter()
            .find(|p| (p.start..p.end).contains(&i))
            .map_or(Phase::Empty, |p| p.phase)
    }

    pub fn camera(&self) -> &labels::Camera {
        &self.camera
    }

    /// The subject's skeleton (CMU hierarchy, the subject's proportions).
    pub fn skeleton(&self) -> &Skeleton {
        &self.subject.skeleton
    }

    /// Pose parameters of frame `i` (BVH channel values in radians/metres).
    pub fn pose(&self, i: usize) -> &[f64] {
        &self.plan.poses[i]
    }

    /// The motion as a BVH clip at the video's frame rate.
    ///
    /// # Errors
    /// [`VisionError::Skeleton`] if the poses do not fit the skeleton.
    pub fn bvh(&self) -> Result<Bvh> {
        let dof = self.subject.skeleton.dof();
        let data: Vec<f64> = self.plan.poses.iter().flatten().copied().collect();
        Ok(Bvh {
            skeleton: self.subject.skeleton.clone(),
            frame_time: 1.0 / self.options.fps,
            frames: PoseBatch::from_vec(dof, data)?,
            channels: self.clip_channels.clone(),
        })
    }

    /// Renders frame `i` with its truth.
    ///
    /// # Errors
    /// [`VisionError::Parameter`] for `i` out of range; forward-kinematics
    /// failures as [`VisionError::Skeleton`].
    pub fn render(&self, i: usize) -> Result<FootageFrame> {
        if i >= self.len() {
            return Err(VisionError::parameter(
                "frame",
                i,
                format!("the session has {} frames", self.len()),
            ));
        }
        let (w, h) = (self.options.width as usize, self.options.height as usize);
        let phase = self.phase(i);
        let world = self
            .subject
            .skeleton
            .forward_kinematics(&self.plan.poses[i])?;
        let mut out = self.room_final.clone();
        let mut mask = vec![0u8; w * h];
        let mut body_pixels = 0;
        if phase.in_scene() {
            body_pixels = self.draw_body(&world, &mut out, &mut mask);
        }
        let rgb = self.finish(&out, i);
        let frame = Frame::new(
            self.options.width,
            self.options.height,
            rgb,
            i as f64 / self.options.fps,
            i,
        )?;
        let truth = self.truth_row(i, phase, &world, body_pixels);
        Ok(FootageFrame { frame, mask, truth })
    }

    fn truth_row(
        &self,
        i: usize,
        phase: Phase,
        world: &[Isometry3<f64>],
        body_pixels: usize,
    ) -> TruthRow {
        let mut row = TruthRow {
            frame: i,
            time: i as f64 / self.options.fps,
            phase,
            present: body_pixels > 0,
            body_pixels,
            joints: None,
            pixels: None,
            angles: None,
        };
        if phase.in_scene() {
            let at = |j: usize| -> [f64; 3] { world[j].translation.vector.into() };
            let joints: Vec<[f64; 3]> = self.truth_ids.iter().map(|&j| at(j)).collect();
            let pixels = joints
                .iter()
                .map(|p| {
                    self.camera
                        .project(&Point3::from(*p))
                        .map(|(u, v, _)| [u, v])
                })
                .collect();
            let ids = &self.subject.ids;
            let angle = |a: usize, b: usize, c: usize| interior_angle_deg(at(a), at(b), at(c));
            let (r, l) = (ids.side[0], ids.side[1]);
            row.angles = Some([
                angle(r.shoulder, r.elbow, r.wrist),
                angle(l.shoulder, l.elbow, l.wrist),
                angle(r.hip, r.knee, r.ankle),
                angle(l.hip, l.knee, l.ankle),
            ]);
            row.joints = Some(joints);
            row.pixels = Some(pixels);
        }
        row
    }

    /// Sensor noise and quantisation. The noise has a fine part (per pixel)
    /// and a coarse part (independent values on a 2-pixel lattice,
    /// bilinearly interpolated), as demosaicing correlates a sensor's noise
    /// between neighbours; per channel, with read and shot components.
    fn finish(&self, img: &[V3], frame: usize) -> Vec<u8> {
        let (w, h) = (self.options.width as usize, self.options.height as usize);
        let mut rgb = vec![0u8; img.len() * 3];
        let sigma = self.options.noise as f32;
        let seed = mix64(self.options.seed ^ 0x006e_6f69_7365) ^ mix64(frame as u64 + 1);
        let (cw, ch) = (w / 2 + 2, h / 2 + 2);
        let coarse: Vec<[f32; 3]> = if sigma > 0.0 {
            (0..cw * ch)
                .into_par_iter()
                .map(|i| {
                    let hsh = mix64(seed ^ 0xc0a5 ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    [gauss(hsh), gauss(mix64(hsh ^ 1)), gauss(mix64(hsh ^ 2))]
                })
                .collect()
        } else {
            Vec::new()
        };
        rgb.par_chunks_mut(3 * w)
            .zip(img.par_chunks(w))
            .enumerate()
            .for_each(|(y, (out, row))| {
                let row_seed = mix64(seed ^ (y as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                let gy = y as f32 * 0.5;
                let (y0, fy) = (gy as usize, gy.fract());
                for (x, c) in row.iter().enumerate() {
                    let gx = x as f32 * 0.5;
                    let (x0, fx) = (gx as usize, gx.fract());
                    for k in 0..3 {
                        let v = c[k];
                        let n = if sigma > 0.0 {
                            // Read noise plus shot noise growing with the signal.
                            let s = sigma * (0.55 + 0.45 * (v / 128.0).max(0.0).sqrt());
                            let at = |xx: usize, yy: usize| coarse[yy * cw + xx][k];
                            let top = at(x0, y0) + (at(x0 + 1, y0) - at(x0, y0)) * fx;
                            let bottom =
                                at(x0, y0 + 1) + (at(x0 + 1, y0 + 1) - at(x0, y0 + 1)) * fx;
                            let smooth = top + (bottom - top) * fy;
                            let fine = gauss(mix64(row_seed ^ ((x * 3 + k) as u64 + 1)));
                            (0.9 * smooth + 0.6 * fine) * s
                        } else {
                            0.0
                        };
                        out[3 * x + k] = (v + n).round().clamp(0.0, 255.0) as u8;
                    }
                }
            });
        rgb
    }

    /// Draws the body (and its floor shadow) into `out` (sRGB levels);
    /// returns the body pixel count.
    fn draw_body(&self, world: &[Isometry3<f64>], out: &mut [V3], mask: &mut [u8]) -> usize {
        let (w, h) = (self.options.width as i32, self.options.height as i32);
        let mut prims = body_prims(&self.subject, &self.options.setup, world);
        let mut rect: Option<[i32; 4]> = None;
        let union = |r: &mut Option<[i32; 4]>, a: [i32; 4]| {
            *r = Some(match *r {
                None => a,
                Some(b) => [
                    b[0].min(a[0]),
                    b[1].min(a[1]),
                    b[2].max(a[2]),
                    b[3].max(a[3]),
                ],
            });
        };
        let mut visible = Vec::with_capacity(prims.len());
        for p in &mut prims {
            p.radius += SMOOTH_K;
            if let Some(r) = self.raycam.sphere_rect(&p.centre, p.radius, w, h) {
                p.rect = r;
                union(&mut rect, r);
                visible.push(*p);
            }
        }
        // Shadow blobs on the floor: feet contact and the body cast along
        // the light.
        let blobs = self.shadow_blobs(world);
        let mut shadow_rect = None;
        for b in &blobs {
            let corners = [
                V3::new(b.x - b.r * 2.0, 0.0, b.z - b.r * 2.0),
                V3::new(b.x + b.r * 2.0, 0.0, b.z - b.r * 2.0),
                V3::new(b.x - b.r * 2.0, 0.0, b.z + b.r * 2.0),
                V3::new(b.x + b.r * 2.0, 0.0, b.z + b.r * 2.0),
            ];
            for c in corners {
                if let Some(r) = self.raycam.sphere_rect(&c, 0.01, w, h) {
                    union(&mut shadow_rect, r);
                }
            }
        }
        let mut dynamic = rect;
        if let Some(s) = shadow_rect {
            union(&mut dynamic, s);
        }
        let Some(d) = dynamic else {
            return 0;
        };
        // Margin of 2 pixels for the blur.
        let d = [
            (d[0] - 2).max(0),
            (d[1] - 2).max(0),
            (d[2] + 2).min(w - 1),
            (d[3] + 2).min(h - 1),
        ];
        let dw = (d[2] - d[0] + 1) as usize;
        let dh = (d[3] - d[1] + 1) as usize;
        let mut sharp = vec![V3::zeros(); dw * dh];
        let mut local_mask = vec![0u8; dw * dh];
        let pix = 1.0 / self.raycam.fx;
        sharp
            .par_chunks_mut(dw)
            .zip(local_mask.par_chunks_mut(dw))
            .enumerate()
            .for_each(|(ry, (row, mrow))| {
                let y = d[1] + ry as i32;
                let mut cands: Vec<(usize, f32, f32)> = Vec::with_capacity(visible.len());
                for (rx, px) in row.iter_mut().enumerate() {
                    let x = d[0] + rx as i32;
                    let idx = y as usize * w as usize + x as usize;
                    let mut c = self.room_sharp[idx];
                    let f = self.floor_xz[idx];
                    if !f[0].is_nan() && !blobs.is_empty() {
                        let mut dark = 0.0;
                        for b in &blobs {
                            let dd = ((f[0] - b.x).powi(2) + (f[1] - b.z).powi(2)) / (b.r * b.r);
                            if dd < 9.0 {
                                dark += b.s * (-dd).exp();
                            }
                        }
                        c *= 1.0 - dark.min(0.6);
                    }
                    if let Some(r) = rect
                        && x >= r[0]
                        && x <= r[2]
                        && y >= r[1]
                        && y <= r[3]
                    {
                        let dir = self.raycam.dir(x as f32, y as f32);
                        cands.clear();
                        for (k, p) in visible.iter().enumerate() {
                            if x < p.rect[0] || x > p.rect[2] || y < p.rect[1] || y > p.rect[3] {
                                continue;
                            }
                            let oc = self.raycam.origin - p.centre;
                            let b = oc.dot(&dir);
                            let cc = oc.norm_squared() - p.radius * p.radius;
                            let disc = b * b - cc;
                            if disc > 0.0 {
                                let s = disc.sqrt();
                                cands.push((k, -b - s, -b + s));
                            }
                        }
                        if !cands.is_empty()
                            && let Some((colour, alpha, hit)) =
                                self.trace(&visible, &cands, &dir, pix)
                        {
                            c = c * (1.0 - alpha) + colour * alpha;
                            if hit {
                                mrow[rx] = 1;
                            }
                        }
                    }
                    *px = c;
                }
            });
        // Blur the dynamic rectangle (clamped to it), vignette, sRGB.
        let blurred = if self.options.blur {
            blur(&sharp, dw, dh)
        } else {
            sharp
        };
        let mut count = 0;
        for ry in 0..dh {
            let y = d[1] as usize + ry;
            // The rectangle's own border rows/columns were blurred with
            // clamping; keep the pre-blurred room there unless at the image edge.
            let inner_y = ry > 0 && ry + 1 < dh || y == 0 || y + 1 == h as usize;
            for rx in 0..dw {
                let x = d[0] as usize + rx;
                let idx = y * w as usize + x;
                let inner_x = rx > 0 && rx + 1 < dw || x == 0 || x + 1 == w as usize;
                if local_mask[ry * dw + rx] == 1 {
                    mask[idx] = 1;
                    count += 1;
                }
                if inner_x && inner_y {
                    let c = blurred[ry * dw + rx] * self.vignette[idx];
                    out[idx] = V3::new(self.srgb.get(c.x), self.srgb.get(c.y), self.srgb.get(c.z));
                }
            }
        }
        count
    }

    /// Sphere-traces one pixel ray; returns colour (linear), coverage and
    /// whether the centre ray hit.
    fn trace(
        &self,
        prims: &[Prim],
        cands: &[(usize, f32, f32)],
        dir: &V3,
        pix: f32,
    ) -> Option<(V3, f32, bool)> {
        let o = self.raycam.origin;
        let t_start = cands
            .iter()
            .map(|c| c.1)
            .fold(f32::INFINITY, f32::min)
            .max(0.05);
        let t_end = cands.iter().map(|c| c.2).fold(0.0, f32::max);
        let mut t = t_start;
        let mut best_ratio = f32::INFINITY;
        let mut best_t = t;
        let mut hit = false;
        for _ in 0..96 {
            let p = o + dir * t;
            let d = sdf(prims, cands, &p).0;
            let foot = pix * t;
            let ratio = d / foot;
            if ratio < best_ratio {
                best_ratio = ratio;
                best_t = t;
            }
            if d < 0.25 * foot {
                hit = true;
                best_t = t;
                break;
            }
            t += d.max(0.2 * foot);
            if t > t_end {
                break;
            }
        }
        let alpha = if hit {
            1.0
        } else {
            (0.5 - best_ratio).clamp(0.0, 1.0)
        };
        if alpha <= 0.0 {
            return None;
        }
        let p = o + dir * best_t;
        let (_, id) = sdf(prims, cands, &p);
        let e = 0.0007f32;
        let ks = [
            V3::new(1.0, -1.0, -1.0),
            V3::new(-1.0, -1.0, 1.0),
            V3::new(-1.0, 1.0, -1.0),
            V3::new(1.0, 1.0, 1.0),
        ];
        let mut n = V3::zeros();
        for k in ks {
            n += k * sdf(prims, cands, &(p + k * e)).0;
        }
        let n = n.try_normalize(1e-12).unwrap_or(-dir);
        let albedo = self.albedo(&prims[id], &p);
        let light = self.scene.lighting(&p, &n);
        Some((albedo.component_mul(&light), alpha, hit))
    }

    fn albedo(&self, prim: &Prim, p: &V3) -> V3 {
        let [skin, hair, shirt, stripes, trousers, shoes, soles, sleeve] = self.scene.clothing;
        match prim.mat {
            Mat::Skin => skin,
            Mat::Hair => {
                let l = prim.local(p);
                hair * (0.85 + 0.3 * value_noise(l.x * 300.0, l.y * 40.0, 3))
            }
            Mat::Shirt => {
                if self.options.setup.clothing.stripes.is_some() {
                    let y = p.y;
                    if (y / 0.045).rem_euclid(2.0) < 1.0 {
                        stripes
                    } else {
                        shirt
                    }
                } else {
                    shirt
                }
            }
            Mat::Sleeve => sleeve,
            Mat::Trousers => trousers,
            Mat::Eye => lin([34, 26, 22]),
            Mat::Sock => lin([70, 70, 76]),
            Mat::Shoe => {
                let l = prim.local(p);
                if let Shape::RoundBox { half, .. } = prim.shape
                    && l.y < -0.45 * half.y
                {
                    soles
                } else {
                    shoes
                }
            }
        }
    }

    fn shadow_blobs(&self, world: &[Isometry3<f64>]) -> Vec<Blob> {
        let ids = &self.subject.ids;
        let l = self.scene.light_dir;
        let s = self.subject.size as f32;
        let mut blobs = Vec::new();
        let cast = |j: usize| {
            let p = v3(&world[j].translation.vector);
            let k = p.y / l.y.max(0.2);
            (p.x - l.x * k, p.z - l.z * k)
        };
        for side in &ids.side {
            let a = v3(&world[side.ankle].translation.vector);
            let toe = v3(&world[side.toe].translation.vector);
            let lift = (a.y - self.subject.ankle_height as f32).max(0.0);
            let strength = 0.45 * (-lift / 0.08).exp();
            let m = (a + toe) * 0.5;
            blobs.push(Blob {
                x: m.x,
                z: m.z,
                r: 0.09 * s,
                s: strength,
            });
            for j in [side.knee, side.hip] {
                let (x, z) = cast(j);
                blobs.push(Blob {
                    x,
                    z,
                    r: 0.1 * s,
                    s: 0.12,
                });
            }
            let (x, z) = cast(side.wrist);
            blobs.push(Blob {
                x,
                z,
                r: 0.07 * s,
                s: 0.08,
            });
        }
        for (j, r, st) in [
            (ids.chest, 0.2, 0.16),
            (ids.chest2, 0.18, 0.14),
            (ids.head, 0.12, 0.1),
            (ids.hips, 0.18, 0.16),
        ] {
            let (x, z) = cast(j);
            blobs.push(Blob {
                x,
                z,
                r: r * s,
                s: st,
            });
        }
        blobs
    }
}

#[derive(Clone, Copy, Debug)]
struct Blob {
    x: f32,
    z: f32,
    r: f32,
    s: f32,
}

/// 3 × 3 binomial blur of `img` (`w × h`), clamping at its edges.
fn blur(img: &[V3], w: usize, h: usize) -> Vec<V3> {
    let mut tmp = vec![V3::zeros(); w * h];
    tmp.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        for x in 0..w {
            let l = img[y * w + x.saturating_sub(1)];
            let r = img[y * w + (x + 1).min(w - 1)];
            row[x] = (l + img[y * w + x] * 2.0 + r) * 0.25;
        }
    });
    let mut out = vec![V3::zeros(); w * h];
    out.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        let (u, d) = (y.saturating_sub(1), (y + 1).min(h - 1));
        for x in 0..w {
            row[x] = (tmp[u * w + x] + tmp[y * w + x] * 2.0 + tmp[d * w + x]) * 0.25;
        }
    });
    out
}

/// Renders a whole session in memory (no `ffmpeg`): frames, body masks and
/// truth rows. Meant for small sizes and short sessions (tests); see
/// [`write_session`](crate::write_session) for files.
///
/// # Errors
/// As [`SessionRenderer::new`] and [`SessionRenderer::render`].
pub fn render_session(options: &FootageOptions) -> Result<Footage> {
    let session = SessionRenderer::new(options)?;
    let mut frames = Vec::with_capacity(session.len());
    let mut masks = Vec::with_capacity(session.len());
    let mut truth = Vec::with_capacity(session.len());
    for i in 0..session.len() {
        let f = session.render(i)?;
        frames.push(f.frame);
        masks.push(f.mask);
        truth.push(f.truth);
    }
    Ok(Footage {
        frames,
        masks,
        truth,
        phases: session.phases().to_vec(),
        camera: session.camera().clone(),
        bvh: session.bvh()?,
    })
}

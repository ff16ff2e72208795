//! The body as signed distance primitives: Inigo Quilez's exact round cone
//! and rounded box and his bound for the ellipsoid, each in its own frame
//! (non-uniform scaling multiplies the distance by the smallest scale,
//! which keeps it a lower bound), blended by a polynomial smooth minimum.

use nalgebra::{Isometry3, UnitQuaternion, Vector3};

use vision::Sleeves;

use crate::options::{HairStyle, Setup};
use crate::subject::{Subject, outward};
use crate::{M3, V3};

pub(crate) const SMOOTH_K: f32 = 0.015;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mat {
    Skin,
    Hair,
    /// The shirt's body (stripes apply).
    Shirt,
    Sleeve,
    Trousers,
    Shoe,
    Eye,
    Sock,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Shape {
    Ellipsoid(V3),
    /// From the local origin (radius `r1`) along `+y` to height `h` (`r2`);
    /// `b, a` are its slope constants.
    RoundCone {
        r1: f32,
        r2: f32,
        h: f32,
        a: f32,
        b: f32,
    },
    RoundBox {
        half: V3,
        round: f32,
    },
}

/// A primitive in its own frame: `local = rot · (p − origin)`, then divided
/// by `scale` per axis before the shape's SDF.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prim {
    origin: V3,
    rot: M3,
    inv_scale: V3,
    lipschitz: f32,
    pub(crate) shape: Shape,
    /// Keep only `n · local ≤ c` (hair cap).
    cut: Option<(V3, f32)>,
    cut2: Option<(V3, f32)>,
    pub(crate) mat: Mat,
    pub(crate) centre: V3,
    pub(crate) radius: f32,
    /// Screen rectangle `[x0, y0, x1, y1]` (inclusive) of the bounding sphere.
    pub(crate) rect: [i32; 4],
}

impl Prim {
    fn new(origin: V3, rot: M3, scale: V3, shape: Shape, mat: Mat) -> Self {
        let extent = match shape {
            Shape::Ellipsoid(r) => r.component_mul(&scale).max(),
            Shape::RoundCone { r1, r2, h, .. } => 0.5 * h + r1.max(r2) * scale.max(),
            Shape::RoundBox { half, .. } => half.component_mul(&scale).norm(),
        };
        let local_centre = match shape {
            Shape::RoundCone { h, .. } => V3::new(0.0, 0.5 * h, 0.0),
            _ => V3::zeros(),
        };
        Self {
            origin,
            rot,
            inv_scale: V3::new(1.0 / scale.x, 1.0 / scale.y, 1.0 / scale.z),
            lipschitz: scale.min(),
            shape,
            cut: None,
            cut2: None,
            mat,
            centre: origin + rot.transpose() * local_centre,
            radius: extent,
            rect: [0; 4],
        }
    }

    #[inline]
    pub(crate) fn local(&self, p: &V3) -> V3 {
        self.rot * (p - self.origin)
    }

    #[inline]
    fn dist(&self, p: &V3) -> f32 {
        let l = self.local(p);
        let q = l.component_mul(&self.inv_scale);
        let mut d = match self.shape {
            Shape::Ellipsoid(r) => {
                let k0 = V3::new(q.x / r.x, q.y / r.y, q.z / r.z).norm();
                let k1 = V3::new(q.x / (r.x * r.x), q.y / (r.y * r.y), q.z / (r.z * r.z)).norm();
                if k1 < 1e-9 {
                    -r.min()
                } else {
                    k0 * (k0 - 1.0) / k1
                }
            }
            Shape::RoundCone { r1, r2, h, a, b } => {
                let qx = (q.x * q.x + q.z * q.z).sqrt();
                let qy = q.y;
                let k = -b * qx + a * qy;
                if k < 0.0 {
                    (qx * qx + qy * qy).sqrt() - r1
                } else if k > a * h {
                    (qx * qx + (qy - h) * (qy - h)).sqrt() - r2
                } else {
                    qx * a + qy * b - r1
                }
            }
            Shape::RoundBox { half, round } => {
                let e = q.abs() - half + V3::repeat(round);
                let outside = V3::new(e.x.max(0.0), e.y.max(0.0), e.z.max(0.0)).norm();
                outside + e.x.max(e.y.max(e.z)).min(0.0) - round
            }
        } * self.lipschitz;
        if let Some((n, c)) = self.cut {
            d = d.max(n.dot(&l) - c);
        }
        if let Some((n, c)) = self.cut2 {
            d = d.max(n.dot(&l) - c);
        }
        d
    }
}

/// Rows of a rotation taking world to a frame whose `y` is `axis` and whose
/// `x` is as close to `xref` as possible.
fn frame_y(axis: V3, xref: V3) -> M3 {
    let y = axis.try_normalize(1e-9).unwrap_or(V3::y());
    let mut x = xref - y * y.dot(&xref);
    if x.norm() < 1e-4 {
        x = if y.x.abs() < 0.9 { V3::x() } else { V3::z() };
        x -= y * y.dot(&x);
    }
    let x = x.normalize();
    let z = x.cross(&y);
    M3::from_rows(&[x.transpose(), y.transpose(), z.transpose()])
}

/// World → local rows of a quaternion's frame.
fn frame_q(q: &UnitQuaternion<f64>) -> M3 {
    let m = q.to_rotation_matrix().into_inner().transpose();
    m.cast::<f32>()
}

fn round_cone(a: V3, b: V3, r1: f32, r2: f32, xref: V3, aniso: (f32, f32), mat: Mat) -> Prim {
    let h = (b - a).norm();
    if h <= (r1 - r2).abs() + 1e-4 {
        let r = r1.max(r2);
        return Prim::new(
            (a + b) * 0.5,
            M3::identity(),
            V3::repeat(1.0),
            Shape::Ellipsoid(V3::repeat(r)),
            mat,
        );
    }
    let bb = (r1 - r2) / h;
    let aa = (1.0 - bb * bb).sqrt();
    Prim::new(
        a,
        frame_y(b - a, xref),
        V3::new(aniso.0, 1.0, aniso.1),
        Shape::RoundCone {
            r1,
            r2,
            h,
            a: aa,
            b: bb,
        },
        mat,
    )
}

fn ellipsoid(centre: V3, rot: M3, r: V3, mat: Mat) -> Prim {
    Prim::new(centre, rot, V3::repeat(1.0), Shape::Ellipsoid(r), mat)
}

pub(crate) fn v3(v: &Vector3<f64>) -> V3 {
    v.cast::<f32>()
}

/// A round cone with a flat end at `a` (`flat_a`) and/or `b` (`flat_b`).
#[allow(clippy::too_many_arguments)]
fn cut_cone(
    a: V3,
    b: V3,
    r1: f32,
    r2: f32,
    xref: V3,
    mat: Mat,
    flat_a: bool,
    flat_b: bool,
) -> Prim {
    let mut p = round_cone(a, b, r1, r2, xref, (1.0, 1.0), mat);
    if let Shape::RoundCone { h, .. } = p.shape {
        p.cut = match (flat_a, flat_b) {
            (true, false) => Some((-V3::y(), 0.0)),
            (false, true) => Some((V3::y(), h)),
            (true, true) => Some((V3::y(), h)),
            (false, false) => None,
        };
        if flat_a && flat_b {
            p.cut2 = Some((-V3::y(), 0.0));
        }
    }
    p
}

/// The body's primitives for one pose (world transforms of every joint).
pub(crate) fn body_prims(subject: &Subject, setup: &Setup, world: &[Isometry3<f64>]) -> Vec<Prim> {
    let ids = &subject.ids;
    let b = &setup.build;
    let cl = &setup.clothing;
    let s = subject.size as f32;
    let g = s * b.girth as f32;
    let depth = b.belly as f32;
    let p = |j: usize| v3(&world[j].translation.vector);
    let q = |j: usize| world[j].rotation;
    let axis = |j: usize, v: Vector3<f64>| v3(&(world[j].rotation * v));
    let mut prims = Vec::with_capacity(48);

    // Head: skull, chin, nose, ears, eyes, hair; neck.
    let head_rot = frame_q(&q(ids.head));
    let (hx, hy, hz) = (
        axis(ids.head, Vector3::x()),
        axis(ids.head, Vector3::y()),
        axis(ids.head, Vector3::z()),
    );
    let hs = s * (0.85 + 0.15 * b.head as f32);
    let skull_r = V3::new(0.077, 0.104, 0.097) * hs;
    let top = p(ids.head_end) + hy * 0.004;
    let skull_c = top - hy * skull_r.y + hz * 0.012 * hs;
    let at = |x: f32, y: f32, z: f32| skull_c + (hx * x + hy * y + hz * z) * hs;
    prims.push(ellipsoid(skull_c, head_rot, skull_r, Mat::Skin));
    prims.push(ellipsoid(
        at(0.0, -0.062, 0.028),
        head_rot,
        V3::new(0.056, 0.056, 0.062) * hs,
        Mat::Skin,
    ));
    prims.push(ellipsoid(
        at(0.0, -0.02, 0.094),
        head_rot,
        V3::new(0.011, 0.022, 0.016) * hs,
        Mat::Skin,
    ));
    for side in [-1.0f32, 1.0] {
        prims.push(ellipsoid(
            at(side * 0.075, -0.01, -0.004),
            head_rot,
            V3::new(0.012, 0.028, 0.018) * hs,
            Mat::Skin,
        ));
        prims.push(ellipsoid(
            at(side * 0.031, 0.008, 0.084),
            head_rot,
            V3::new(0.012, 0.007, 0.007) * hs,
            Mat::Eye,
        ));
    }
    if cl.hair_style != HairStyle::Bald {
        let mut hair = ellipsoid(
            at(0.0, 0.007, -0.006),
            head_rot,
            skull_r + V3::new(0.012, 0.011, 0.013) * hs,
            Mat::Hair,
        );
        // The cap: above a plane through the forehead sloping back down.
        hair.cut = Some((V3::new(0.0, -0.55, 0.83).normalize(), 0.035 * hs));
        prims.push(hair);
        if cl.hair_style == HairStyle::Long {
            let mut long = ellipsoid(
                at(0.0, -0.1, -0.04),
                head_rot,
                V3::new(0.088, 0.15, 0.055) * hs,
                Mat::Hair,
            );
            long.cut = Some((V3::new(0.0, 0.0, 1.0), 0.0));
            prims.push(long);
        }
    }
    let neck_base = p(ids.neck);
    let neck_top = at(0.0, -0.05, -0.012);
    prims.push(round_cone(
        neck_base - axis(ids.neck, Vector3::y()) * 0.03 * s,
        neck_top,
        0.058 * g,
        0.048 * g,
        hx,
        (1.0, 1.0),
        Mat::Skin,
    ));

    // Trunk: chest, shoulder slopes and a loose shirt body; pelvis.
    let c2 = ids.chest2;
    let (cx, cy, cz) = (
        axis(c2, Vector3::x()),
        axis(c2, Vector3::y()),
        axis(c2, Vector3::z()),
    );
    let shoulders = [p(ids.side[0].shoulder), p(ids.side[1].shoulder)];
    let half_width = 0.5 * (shoulders[1] - shoulders[0]).norm();
    let shoulder_mid = 0.5 * (shoulders[0] + shoulders[1]);
    let chest_r = V3::new(0.78 * half_width + 0.02 * g, 0.19 * s, 0.108 * g * depth);
    let chest_c = shoulder_mid - cy * 0.15 * s + cz * 0.004 * s;
    prims.push(ellipsoid(chest_c, frame_q(&q(c2)), chest_r, Mat::Shirt));
    for (k, sh) in shoulders.iter().enumerate() {
        let inward = cx * (outward(k) as f32);
        prims.push(round_cone(
            neck_base - cy * 0.035 * s - cz * 0.01 * s,
            *sh - inward * 0.01 * s - cy * 0.005 * s,
            0.054 * g,
            0.048 * g,
            cz,
            (1.0, 0.85),
            Mat::Shirt,
        ));
    }
    let hips = p(ids.hips);
    let (px, py) = (axis(ids.hips, Vector3::x()), axis(ids.hips, Vector3::y()));
    let hem = hips - py * 0.06 * s;
    let belly_top = chest_c - cy * 0.04 * s;
    let hip_w = 0.5 * (p(ids.side[1].hip) - p(ids.side[0].hip)).norm();
    // Loose: the hem clears the tops of the thighs.
    let hem_r = (0.178 * g * (b.hips as f32).sqrt()).max(hip_w + 0.095 * g);
    let mut waist = round_cone(
        hem,
        belly_top,
        hem_r,
        0.15 * g,
        px,
        (1.0, 0.72 * depth),
        Mat::Shirt,
    );
    waist.cut = Some((-V3::y(), 0.0));
    prims.push(waist);
    prims.push(ellipsoid(
        hips - py * 0.075 * s,
        frame_q(&q(ids.hips)),
        V3::new(hip_w + 0.062 * g, 0.11 * s, 0.098 * g * depth.sqrt()),
        Mat::Trousers,
    ));

    // Arms, hands, legs, shoes.
    let long = cl.sleeves == Sleeves::Long;
    for l in &ids.side {
        let sh = p(l.shoulder);
        let el = p(l.elbow);
        let wr = p(l.wrist);
        let xref = axis(l.shoulder, Vector3::z());
        let down = (el - sh).normalize();
        prims.push(ellipsoid(
            sh - cy * 0.008 * s + down * 0.005 * s,
            frame_q(&q(l.shoulder)),
            V3::new(0.05, 0.052, 0.05) * g,
            Mat::Sleeve,
        ));
        prims.push(round_cone(
            sh + down * 0.01 * s,
            el,
            0.045 * g,
            0.037 * g,
            xref,
            (1.0, 1.0),
            Mat::Skin,
        ));
        let fore_x = axis(l.elbow, Vector3::z());
        prims.push(round_cone(
            el,
            wr,
            0.037 * g,
            0.026 * g,
            fore_x,
            (1.0, 0.85),
            Mat::Skin,
        ));
        if long {
            prims.push(round_cone(
                sh + down * 0.01 * s,
                el,
                0.054 * g,
                0.046 * g,
                xref,
                (1.0, 1.0),
                Mat::Sleeve,
            ));
            let cuff = wr + (el - wr).normalize() * 0.035 * s;
            prims.push(cut_cone(
                el,
                cuff,
                0.046 * g,
                0.037 * g,
                fore_x,
                Mat::Sleeve,
                false,
                true,
            ));
        } else {
            let end = sh + (el - sh) * 0.45;
            prims.push(cut_cone(
                sh + down * 0.01 * s,
                end,
                0.055 * g,
                0.05 * g,
                xref,
                Mat::Sleeve,
                false,
                true,
            ));
        }
        // Hand: a mitten along the fingers, thumb forward.
        let hand_rot = frame_q(&q(l.hand));
        let (ax, ay, az) = (
            axis(l.hand, Vector3::x()),
            axis(l.hand, Vector3::y()),
            axis(l.hand, Vector3::z()),
        );
        let hsz = s * b.hands as f32;
        prims.push(ellipsoid(
            wr - ay * 0.075 * hsz + az * 0.004 * hsz,
            hand_rot,
            V3::new(0.022, 0.08, 0.045) * hsz,
            Mat::Skin,
        ));
        let thumb_dir = (p(l.thumb_end) - wr).try_normalize(1e-6).unwrap_or(az);
        let thumb_base = wr - ay * 0.03 * hsz + az * 0.024 * hsz;
        prims.push(round_cone(
            thumb_base,
            thumb_base + thumb_dir * 0.055 * hsz,
            0.014 * hsz,
            0.011 * hsz,
            ax,
            (1.0, 1.0),
            Mat::Skin,
        ));

        let hip = p(l.hip);
        let kn = p(l.knee);
        let an = p(l.ankle);
        let leg_x = axis(l.hip, Vector3::x());
        prims.push(round_cone(
            hip + py * 0.02 * s,
            kn,
            0.084 * g,
            0.062 * g,
            leg_x,
            (1.0, 1.0),
            Mat::Trousers,
        ));
        let hem = an + (kn - an).normalize() * 0.05 * s;
        prims.push(cut_cone(
            kn,
            hem,
            0.06 * g,
            0.053 * g,
            leg_x,
            Mat::Trousers,
            false,
            true,
        ));
        prims.push(round_cone(
            an + (kn - an).normalize() * 0.06 * s,
            an,
            0.036 * g,
            0.032 * g,
            leg_x,
            (1.0, 1.0),
            Mat::Sock,
        ));
        let toe_end = p(l.toe_end);
        // The shoe follows the ankle's frame (flat on the floor at rest).
        let fwd = axis(l.ankle, Vector3::z());
        let up = axis(l.ankle, Vector3::y());
        let side_v = up.cross(&fwd).normalize();
        let len = 0.5 * ((toe_end - an).dot(&fwd) + 0.075 * s);
        let rot = M3::from_rows(&[side_v.transpose(), up.transpose(), fwd.transpose()]);
        let sole = 0.042 * s;
        let centre = an + fwd * (len - 0.075 * s) - up * (subject.ankle_height as f32 - sole);
        prims.push(Prim::new(
            centre,
            rot,
            V3::repeat(1.0),
            Shape::RoundBox {
                half: V3::new(0.046 * s, sole, len),
                round: 0.026 * s,
            },
            Mat::Shoe,
        ));
    }
    prims
}

/// Smooth union of the candidate primitives at `p`, and the nearest one.
#[inline]
pub(crate) fn sdf(prims: &[Prim], cands: &[(usize, f32, f32)], p: &V3) -> (f32, usize) {
    let mut d = f32::INFINITY;
    let mut best = f32::INFINITY;
    let mut id = cands[0].0;
    for &(k, _, _) in cands {
        let dk = prims[k].dist(p);
        if dk < best {
            best = dk;
            id = k;
        }
        let h = (SMOOTH_K - (d - dk).abs()).max(0.0) / SMOOTH_K;
        d = d.min(dk) - h * h * SMOOTH_K * 0.25;
    }
    (d, id)
}

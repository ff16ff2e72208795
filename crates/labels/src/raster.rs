//! Body-part label rasterisation by ray–capsule tests (RTPF §IV-D, §VI: "the
//! 3D model is projected by rendering the head, arms and clothes regions").
//!
//! RTPF renders a polygon mesh with flat OpenGL shading; posecloud's bodies
//! are capsules, so each capsule is drawn as a screen-space *impostor*: a
//! conservative bounding rectangle whose pixels each intersect their
//! pixel-centre ray with the exact capsule. The CPU code here is the
//! reference the WGSL fragment shader reproduces step for step:
//!
//! 1. **Camera space, f32.** Endpoints go through [`RasterCamera::to_camera`].
//!    The pixel `(px, py)` ray starts at the camera centre with the
//!    *unnormalised* direction `d = ((px + 0.5 − cx) / fx, (py + 0.5 − cy) / fy, 1)`,
//!    so the ray parameter `t` of a hit equals its camera-space depth `z`.
//! 2. **Bounding rectangle.** A capsule is the convex hull of its two end
//!    spheres and a perspective projection maps segments in front of the
//!    camera to segments, so the union of the two spheres' image bounds
//!    bounds the capsule. A sphere of radius r at camera-space centre
//!    `(x, y, z)`, `z > r`, projects within
//!    `|u − u_c| ≤ fx · r · √(x² + z²) / (z (z − r))` (and likewise in v,
//!    by Cauchy–Schwarz). The rectangle is widened by one pixel against
//!    rounding and clamped to the image. A capsule entirely at `z ≤ 0` is
//!    skipped (no hit can have `t > 0`); one that straddles `z = r` uses the
//!    whole image. The rectangle only saves work: testing every pixel of
//!    the image gives the same labels (a unit test checks this).
//! 3. **Ray–capsule.** The entry point is the nearest of: the lateral
//!    surface of the infinite cylinder when the hit lies between the end
//!    planes (then no sphere can be hit earlier), else the entries of the two
//!    end spheres. Only entries with `t > 0` count: a camera inside a capsule
//!    does not see it (this is also what back-face culling gives).
//! 4. **Depth rule.** A pixel takes the label of the capsule with the
//!    smallest `t`; on an exact tie in f32 the *lower capsule index* (earlier
//!    in the skeleton's joint order) wins, i.e. a later capsule replaces the
//!    pixel only when strictly nearer (GPU: depth compare `Less`, capsules
//!    drawn in index order). Background is label 0.

use nalgebra::{Isometry3, Point3, Vector3};
use skeleton::{JointKind, Skeleton};

use crate::camera::RasterCamera;

/// One capsule of one pose in world coordinates, f32, as the GPU storage
/// buffer holds it (`#[repr(C)]`, 32 bytes; WGSL:
/// `struct Capsule { a: vec3<f32>, radius: f32, b: vec3<f32>, label: u32 }`,
/// whose `vec3` + scalar packing gives the same 32-byte layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CapsuleInstance {
    /// Segment start (the capsule's `start`, in world coordinates).
    pub a: [f32; 3],
    pub radius: f32,
    /// Segment end.
    pub b: [f32; 3],
    /// Body-part label, `1..=C` ([`skeleton::BodyPart::label`]).
    pub label: u32,
}

/// Where one capsule end point comes from in a pose's world transforms
/// (`world[j]` is joint `j`'s, as [`skeleton::BatchForwardKinematics::world`]
/// gives them). The CPU reference and the GPU upload take every end point
/// through this one rule, so both see the same f32 coordinates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PointSource {
    /// The origin of joint `j`: its world translation, read as is.
    Origin(usize),
    /// A point fixed in joint `j`'s frame: `world[j] · local`.
    Fixed(usize, Vector3<f64>),
}

impl PointSource {
    /// The source of the capsule end point `local` (in joint `joint`'s
    /// frame): the joint's own origin when `local` is zero; the origin of a
    /// child whose offset is `local` when that child cannot translate (not
    /// prismatic or free: its origin is then `world[joint] · offset`), so
    /// that a limb's end and the next limb's start are one point; else the
    /// fixed point.
    pub fn resolve(skeleton: &Skeleton, joint: usize, local: Vector3<f64>) -> Self {
        if local == Vector3::zeros() {
            return Self::Origin(joint);
        }
        skeleton
            .children(joint)
            .iter()
            .copied()
            .find(|&c| {
                let child = skeleton.joint(c);
                child.offset == local
                    && !matches!(
                        child.kind,
                        JointKind::Prismatic { .. } | JointKind::Free { .. }
                    )
            })
            .map_or(Self::Fixed(joint, local), Self::Origin)
    }

    /// The point in world coordinates, rounded to f32.
    #[inline]
    pub fn world_f32(&self, world: &[Isometry3<f64>]) -> [f32; 3] {
        let p = match self {
            Self::Origin(j) => Point3::from(world[*j].translation.vector),
            Self::Fixed(j, local) => world[*j] * Point3::from(*local),
        };
        [p.x as f32, p.y as f32, p.z as f32]
    }
}

/// One capsule of the skeleton as the GPU's capsule table holds it
/// (`#[repr(C)]`, 16 bytes; WGSL `struct CapsuleRef`): the indices of its end
/// points among a pose's [`CapsuleLayout::points`], its radius and label.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CapsuleRef {
    pub a: u32,
    pub b: u32,
    pub radius: f32,
    /// Body-part label, `1..=C`.
    pub label: u32,
}

/// A skeleton's capsules as indices into a list of distinct end points
/// ([`PointSource`]s): what the GPU path uploads per pose is that list's
/// world coordinates (12 bytes a point), from which a compute pass derives
/// the capsules and rectangles. For the human preset: 26 capsules over 43
/// points, 516 bytes a pose instead of 26 × 48 + 16 bytes of capsules and
/// rectangles.
#[derive(Clone, Debug, PartialEq)]
pub struct CapsuleLayout {
    points: Vec<PointSource>,
    capsules: Vec<CapsuleRef>,
}

impl CapsuleLayout {
    /// The layout of `skeleton`'s capsules, in joint order (the order that
    /// decides depth ties), each end point resolved by
    /// [`PointSource::resolve`] and listed once.
    pub fn new(skeleton: &Skeleton) -> Self {
        let mut points: Vec<PointSource> = Vec::new();
        let mut index = |p: PointSource| -> u32 {
            let i = points.iter().position(|q| *q == p).unwrap_or_else(|| {
                points.push(p);
                points.len() - 1
            });
            i as u32
        };
        let mut capsules = Vec::new();
        for (j, joint) in skeleton.joints().iter().enumerate() {
            let Some(body) = &joint.body else { continue };
            let a = index(PointSource::resolve(skeleton, j, body.capsule.start));
            let b = index(PointSource::resolve(skeleton, j, body.capsule.end));
            capsules.push(CapsuleRef {
                a,
                b,
                radius: body.capsule.radius as f32,
                label: u32::from(body.part.label()),
            });
        }
        Self { points, capsules }
    }

    /// The distinct end points, in the order a pose's coordinates are listed.
    pub fn points(&self) -> &[PointSource] {
        &self.points
    }

    /// The capsules (K), in joint order.
    pub fn capsules(&self) -> &[CapsuleRef] {
        &self.capsules
    }

    /// Writes one pose's end points (world, f32) into `out`
    /// (`len() == self.points().len()`).
    #[inline]
    pub fn pose_points(&self, world: &[Isometry3<f64>], out: &mut [[f32; 3]]) {
        debug_assert_eq!(out.len(), self.points.len());
        for (dst, src) in out.iter_mut().zip(&self.points) {
            *dst = src.world_f32(world);
        }
    }

    /// The world-space capsules of a pose whose end points are `points`
    /// (from [`Self::pose_points`]), in joint order.
    pub fn instances<'a>(
        &'a self,
        points: &'a [[f32; 3]],
    ) -> impl Iterator<Item = CapsuleInstance> + 'a {
        self.capsules.iter().map(|c| CapsuleInstance {
            a: points[c.a as usize],
            radius: c.radius,
            b: points[c.b as usize],
            label: c.label,
        })
    }
}

/// Appends nothing but replaces `out` with the world-space capsules of one
/// pose, in joint order (the order that decides depth ties), from the world
/// transforms of [`skeleton::BatchForwardKinematics::world`] or
/// [`Skeleton::forward_kinematics_into`]. Reuses `out`'s allocation.
pub fn capsules_of_pose(
    skeleton: &Skeleton,
    world: &[Isometry3<f64>],
    out: &mut Vec<CapsuleInstance>,
) {
    out.clear();
    out.extend(capsule_instances(skeleton, world));
}

/// The world-space capsules of one pose, in joint order, as an iterator
/// (what [`capsules_of_pose`] collects). End points follow
/// [`PointSource::resolve`], as the GPU's uploaded points do.
pub fn capsule_instances<'a>(
    skeleton: &'a Skeleton,
    world: &'a [Isometry3<f64>],
) -> impl Iterator<Item = CapsuleInstance> + 'a {
    skeleton
        .joints()
        .iter()
        .enumerate()
        .filter_map(move |(j, joint)| {
            let body = joint.body.as_ref()?;
            let end = |local| PointSource::resolve(skeleton, j, local).world_f32(world);
            Some(CapsuleInstance {
                a: end(body.capsule.start),
                radius: body.capsule.radius as f32,
                b: end(body.capsule.end),
                label: u32::from(body.part.label()),
            })
        })
}

/// Number of capsules per pose of `skeleton` (joints that carry a body).
pub fn capsules_per_pose(skeleton: &Skeleton) -> usize {
    skeleton
        .joints()
        .iter()
        .filter(|j| j.body.is_some())
        .count()
}

/// A rectangle of pixels `x0..x1 × y0..y1` (half-open); empty when
/// `x0 >= x1` or `y0 >= y1`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PixelRect {
    pub x0: u32,
    pub y0: u32,
    pub x1: u32,
    pub y1: u32,
}

impl PixelRect {
    pub fn is_empty(&self) -> bool {
        self.x0 >= self.x1 || self.y0 >= self.y1
    }

    /// The smallest rectangle holding both.
    pub fn union(self, other: Self) -> Self {
        if self.is_empty() {
            other
        } else if other.is_empty() {
            self
        } else {
            Self {
                x0: self.x0.min(other.x0),
                y0: self.y0.min(other.y0),
                x1: self.x1.max(other.x1),
                y1: self.y1.max(other.y1),
            }
        }
    }
}

#[inline]
fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

#[inline]
fn sub(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

/// A capsule in camera space with the per-capsule terms of the ray test
/// (everything that does not depend on the pixel).
#[derive(Clone, Copy, Debug)]
struct PreparedCapsule {
    a: [f32; 3],
    b: [f32; 3],
    ba: [f32; 3],
    baba: f32,
    /// `ba · (o − a)` with the ray origin `o = 0`.
    baoa: f32,
    /// `|o − a|²`.
    oaoa: f32,
    /// `|o − b|²`.
    obob: f32,
    rr: f32,
    /// `|ba|² |o − a|² − (ba · (o − a))² − r² |ba|²`: the cylinder's constant term.
    k0: f32,
    label: u8,
}

/// The ray parameter `t > 0` where the ray `t · d` (camera space, origin at
/// the camera centre) enters the capsule, or `None`; see the module docs,
/// step 3. `dd = d · d`.
#[inline]
fn ray_capsule(c: &PreparedCapsule, d: [f32; 3], dd: f32) -> Option<f32> {
    let oa = [-c.a[0], -c.a[1], -c.a[2]];
    let bard = dot(c.ba, d);
    let rdoa = dot(d, oa);
    // Infinite cylinder: |(o + t d − a) × ba|² = r² |ba|², as k2 t² + 2 k1 t + k0 = 0.
    let k2 = c.baba * dd - bard * bard;
    let k1 = c.baba * rdoa - c.baoa * bard;
    let k0 = c.k0;
    if k2 > 0.0 {
        let h = k1 * k1 - k2 * k0;
        if h < 0.0 {
            return None; // misses the infinite cylinder, hence the capsule
        }
        let t = (-k1 - h.sqrt()) / k2;
        let y = c.baoa + t * bard;
        if y > 0.0 && y < c.baba {
            return (t > 0.0).then_some(t);
        }
    }
    // End spheres: t² dd + 2 t (d · (o − p)) + |o − p|² − r² = 0, entry root.
    let sphere = |oc_d: f32, ococ: f32| -> Option<f32> {
        let c0 = ococ - c.rr;
        let h = oc_d * oc_d - dd * c0;
        if h < 0.0 {
            return None;
        }
        let t = (-oc_d - h.sqrt()) / dd;
        (t > 0.0).then_some(t)
    };
    let ob_d = -dot(d, c.b);
    match (sphere(rdoa, c.oaoa), sphere(ob_d, c.obob)) {
        (Some(s), Some(e)) => Some(if e < s { e } else { s }),
        (s, e) => s.or(e),
    }
}

/// Half-extent bound of a sphere's image along one axis (module docs, step 2).
#[inline]
fn sphere_pad(f: f32, lateral: f32, z: f32, r: f32) -> f32 {
    f * r * (lateral * lateral + z * z).sqrt() / (z * (z - r))
}

/// Slack, in pixels, between a bound and the pixel centres it admits, so
/// that f32 rounding in the bound never drops a pixel.
const SLACK: f32 = 0.01;

/// Index of the first pixel whose centre `p + 0.5` is `≥ x − SLACK`, clamped to `0..=m`.
#[inline]
fn first_centre_at_or_after(x: f32, m: u32) -> u32 {
    (x - 0.5 - SLACK).ceil().clamp(0.0, m as f32) as u32
}

/// One past the last pixel whose centre is `≤ x + SLACK`, clamped to `0..=m`.
#[inline]
fn first_centre_after(x: f32, m: u32) -> u32 {
    ((x - 0.5 + SLACK).floor() + 1.0).clamp(0.0, m as f32) as u32
}

/// The image points within `radius` of the segment `p0 p1` (a "stadium"):
/// it holds the capsule's image (module docs, step 2) and gives, per pixel
/// row, the span of centres worth testing.
#[derive(Clone, Copy, Debug)]
struct Stadium {
    p0: (f32, f32),
    p1: (f32, f32),
    radius: f32,
}

impl Stadium {
    fn new(p0: (f32, f32), p1: (f32, f32), radius: f32) -> Self {
        Self {
            p0,
            p1,
            radius: radius * (1.0 + 1e-4) + SLACK,
        }
    }

    /// The x-interval of the stadium on the line `y = yc`, if any: the union
    /// of the two end discs' chords and the swept band's chord (the stadium
    /// is convex, so their hull is exact).
    fn span(&self, yc: f32) -> Option<(f32, f32)> {
        let r = self.radius;
        let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
        for (u, v) in [self.p0, self.p1] {
            let dy = yc - v;
            let q = r * r - dy * dy;
            if q >= 0.0 {
                let half = q.sqrt();
                lo = lo.min(u - half);
                hi = hi.max(u + half);
            }
        }
        let (ex, ey) = (self.p1.0 - self.p0.0, self.p1.1 - self.p0.1);
        let ll = ex * ex + ey * ey;
        if ll > 0.0 {
            let len = ll.sqrt();
            let dy0 = yc - self.p0.1;
            // Distance to the infinite line ≤ r: |ex·dy0 − ey·(x − u0)| ≤ r·len.
            let (mut a, mut b) = (f32::NEG_INFINITY, f32::INFINITY);
            if ey != 0.0 {
                let (s0, s1) = ((ex * dy0 - r * len) / ey, (ex * dy0 + r * len) / ey);
                a = a.max(s0.min(s1));
                b = b.min(s0.max(s1));
            } else if (ex * dy0).abs() > r * len {
                a = f32::INFINITY;
            }
            // Foot of the perpendicular within the segment: 0 ≤ ex·(x − u0) + ey·dy0 ≤ ll.
            if ex != 0.0 {
                let (s0, s1) = ((-ey * dy0) / ex, (ll - ey * dy0) / ex);
                a = a.max(s0.min(s1));
                b = b.min(s0.max(s1));
            } else if !(0.0..=ll).contains(&(ey * dy0)) {
                a = f32::INFINITY;
            }
            if a <= b {
                lo = lo.min(self.p0.0 + a);
                hi = hi.max(self.p0.0 + b);
            }
        }
        (lo <= hi).then_some((lo, hi))
    }
}

/// The pixels worth testing for one capsule whose end points are `a`, `b`
/// in camera space (module docs, step 2): its bounding rectangle and, unless
/// the rectangle is the whole image, the stadium that bounds it row by row.
/// `None` when the capsule lies entirely behind the camera or its rectangle
/// misses the image.
fn footprint(
    cam: &RasterCamera,
    a: [f32; 3],
    b: [f32; 3],
    r: f32,
    full_frame: bool,
) -> Option<(PixelRect, Option<Stadium>)> {
    let (w, h) = (cam.width, cam.height);
    if a[2].max(b[2]) + r <= 0.0 {
        return None; // entirely behind the camera
    }
    let (rect, stadium) = if full_frame || a[2].min(b[2]) <= r {
        let full = PixelRect {
            x0: 0,
            y0: 0,
            x1: w,
            y1: h,
        };
        (full, None)
    } else {
        let mut disc = [(0.0f32, 0.0f32); 2];
        let mut radius = 0.0f32;
        let (mut u0, mut v0) = (f32::INFINITY, f32::INFINITY);
        let (mut u1, mut v1) = (f32::NEG_INFINITY, f32::NEG_INFINITY);
        for (k, p) in [a, b].into_iter().enumerate() {
            let u = cam.fx * p[0] / p[2] + cam.cx;
            let v = cam.fy * p[1] / p[2] + cam.cy;
            let pu = sphere_pad(cam.fx, p[0], p[2], r);
            let pv = sphere_pad(cam.fy, p[1], p[2], r);
            disc[k] = (u, v);
            radius = radius.max((pu * pu + pv * pv).sqrt());
            u0 = u0.min(u - pu);
            u1 = u1.max(u + pu);
            v0 = v0.min(v - pv);
            v1 = v1.max(v + pv);
        }
        let rect = PixelRect {
            x0: first_centre_at_or_after(u0, w),
            y0: first_centre_at_or_after(v0, h),
            x1: first_centre_after(u1, w),
            y1: first_centre_after(v1, h),
        };
        (rect, Some(Stadium::new(disc[0], disc[1], radius)))
    };
    (!rect.is_empty()).then_some((rect, stadium))
}

/// The bounding rectangle of one world-space capsule's image (module docs,
/// step 2), exactly as [`LabelRaster::draw`] computes it; empty (all zero)
/// when the capsule is entirely behind the camera or off the image. Pixels
/// outside it never take the capsule's label. The GPU path draws its
/// impostor quads over these rectangles.
pub fn capsule_rect(camera: &RasterCamera, capsule: &CapsuleInstance) -> PixelRect {
    let a = camera.to_camera(capsule.a);
    let b = camera.to_camera(capsule.b);
    footprint(camera, a, b, capsule.radius, false).map_or(PixelRect::default(), |(rect, _)| rect)
}

/// Draws capsules into a label tile with a depth test; owns its depth buffer
/// and per-capsule scratch (no allocation once sized).
#[derive(Clone, Debug, Default)]
pub struct LabelRaster {
    depth: Vec<f32>,
    prepared: Vec<PreparedCapsule>,
    /// `(px + 0.5 − cx) / fx` per column, for the camera in `ray_camera`.
    ray_x: Vec<f32>,
    ray_camera: Option<RasterCamera>,
    rects: Vec<(PixelRect, Option<Stadium>)>,
}

impl LabelRaster {
    pub fn new() -> Self {
        Self::default()
    }

    /// Draws `capsules` (in index order, see the module docs' depth rule)
    /// into `tile` (`width × height`, row-major, y down), which must hold
    /// only background (0) on entry. Returns the rectangle outside which the
    /// tile is untouched (still 0).
    pub fn draw(
        &mut self,
        camera: &RasterCamera,
        capsules: &[CapsuleInstance],
        tile: &mut [u8],
    ) -> PixelRect {
        self.draw_impl(camera, capsules, tile, false)
    }

    fn draw_impl(
        &mut self,
        cam: &RasterCamera,
        capsules: &[CapsuleInstance],
        tile: &mut [u8],
        full_frame: bool,
    ) -> PixelRect {
        let (w, h) = (cam.width, cam.height);
        let n = w as usize * h as usize;
        assert_eq!(tile.len(), n, "tile must be width × height");
        if self.depth.len() != n {
            // Depth is only read where the tile is non-zero, so it needs no
            // clearing between draws.
            self.depth.resize(n, 0.0);
        }
        if self.ray_camera != Some(*cam) {
            self.ray_x.clear();
            self.ray_x
                .extend((0..w).map(|px| (px as f32 + 0.5 - cam.cx) / cam.fx));
            self.ray_camera = Some(*cam);
        }
        self.prepared.clear();
        self.rects.clear();
        let mut covered = PixelRect::default();
        for cap in capsules {
            let a = cam.to_camera(cap.a);
            let b = cam.to_camera(cap.b);
            let r = cap.radius;
            let Some((rect, footprint)) = footprint(cam, a, b, r, full_frame) else {
                continue;
            };
            let ba = sub(b, a);
            let oa = [-a[0], -a[1], -a[2]];
            self.prepared.push(PreparedCapsule {
                a,
                b,
                ba,
                baba: dot(ba, ba),
                baoa: dot(ba, oa),
                oaoa: dot(oa, oa),
                obob: dot(b, b),
                rr: r * r,
                k0: dot(ba, ba) * dot(oa, oa) - dot(ba, oa) * dot(ba, oa) - r * r * dot(ba, ba),
                label: cap.label as u8,
            });
            self.rects.push((rect, footprint));
            covered = covered.union(rect);
        }
        let fy = cam.fy;
        for (c, (rect, footprint)) in self.prepared.iter().zip(&self.rects) {
            for py in rect.y0..rect.y1 {
                let yc = py as f32 + 0.5;
                let (x0, x1) = match footprint {
                    None => (rect.x0, rect.x1),
                    Some(st) => match st.span(yc) {
                        None => continue,
                        Some((lo, hi)) => (
                            first_centre_at_or_after(lo, w).max(rect.x0),
                            first_centre_after(hi, w).min(rect.x1),
                        ),
                    },
                };
                let dy = (yc - cam.cy) / fy;
                let row = py as usize * w as usize;
                for (px, &dx) in (x0..x1).zip(&self.ray_x[x0 as usize..x1 as usize]) {
                    let d = [dx, dy, 1.0];
                    let dd = dx * dx + dy * dy + 1.0;
                    if let Some(t) = ray_capsule(c, d, dd) {
                        let i = row + px as usize;
                        if tile[i] == 0 || t < self.depth[i] {
                            tile[i] = c.label;
                            self.depth[i] = t;
                        }
                    }
                }
            }
        }
        covered
    }
}

/// Renders one pose's label image (`width × height`, row-major, y down).
pub fn render_labels(camera: &RasterCamera, capsules: &[CapsuleInstance]) -> Vec<u8> {
    let mut tile = vec![0u8; camera.width as usize * camera.height as usize];
    LabelRaster::new().draw(camera, capsules, &mut tile);
    tile
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::camera::Camera;

    fn cam(w: u32, h: u32) -> Camera {
        // At the origin looking down +z: world = camera space.
        Camera::new(
            50.0,
            50.0,
            w as f64 / 2.0,
            h as f64 / 2.0,
            w,
            h,
            Isometry3::identity(),
        )
        .unwrap()
    }

    fn capsule(a: [f32; 3], b: [f32; 3], radius: f32, label: u32) -> CapsuleInstance {
        CapsuleInstance {
            a,
            radius,
            b,
            label,
        }
    }

    /// As [`LabelRaster::draw`] but testing every pixel of the image for
    /// every capsule: the definition the bounding rectangles must not change.
    fn draw_full_frame(
        raster: &mut LabelRaster,
        camera: &RasterCamera,
        capsules: &[CapsuleInstance],
        tile: &mut [u8],
    ) {
        raster.draw_impl(camera, capsules, tile, true);
    }

    #[test]
    fn capsule_instance_is_32_bytes() {
        assert_eq!(std::mem::size_of::<CapsuleInstance>(), 32);
        assert_eq!(std::mem::align_of::<CapsuleInstance>(), 4);
        assert_eq!(std::mem::offset_of!(CapsuleInstance, radius), 12);
        assert_eq!(std::mem::offset_of!(CapsuleInstance, b), 16);
        assert_eq!(std::mem::offset_of!(CapsuleInstance, label), 28);
    }

    #[test]
    fn capsule_larger_than_the_view_covers_every_pixel() {
        let c = cam(40, 30).raster();
        let tile = render_labels(&c, &[capsule([-5.0, 0.0, 10.0], [5.0, 0.0, 10.0], 6.0, 3)]);
        assert!(tile.iter().all(|&l| l == 3));
    }

    #[test]
    fn nearer_capsule_wins_the_overlap_and_ties_go_to_the_lower_index() {
        let c = cam(40, 30).raster();
        let far = capsule([-5.0, 0.0, 10.0], [5.0, 0.0, 10.0], 6.0, 1);
        let near = capsule([-0.05, 0.0, 2.0], [0.05, 0.0, 2.0], 0.1, 2);
        for order in [[far, near], [near, far]] {
            let tile = render_labels(&c, &order);
            let twos = tile.iter().filter(|&&l| l == 2).count();
            assert!(twos > 0);
            assert_eq!(twos + tile.iter().filter(|&&l| l == 1).count(), 40 * 30);
            assert_eq!(tile, render_labels(&c, &[far, near]));
        }
        // Identical geometry: the first capsule keeps every pixel.
        let twin = capsule(far.a, far.b, far.radius, 5);
        assert!(render_labels(&c, &[far, twin]).iter().all(|&l| l == 1));
        assert!(render_labels(&c, &[twin, far]).iter().all(|&l| l == 5));
    }

    #[test]
    fn head_on_capsule_is_a_disc() {
        // Axis along the view direction: the image is the near sphere's disc.
        let (w, h) = (64u32, 64u32);
        let camera = cam(w, h);
        let rc = camera.raster();
        let (z, r) = (4.0f64, 0.6f64);
        let tile = render_labels(
            &rc,
            &[capsule(
                [0.0, 0.0, z as f32],
                [0.0, 0.0, z as f32 + 1.0],
                r as f32,
                7,
            )],
        );
        // Exact count in f64: pixel rays within the sphere's tangent cone.
        let mut expected = 0;
        let mut edge = 0;
        for py in 0..h {
            for px in 0..w {
                let (_, d) = camera.pixel_ray(px, py);
                let closest = (Vector3::new(0.0, 0.0, z) - d.into_inner() * z * d.z).norm();
                if closest < r - 1e-4 {
                    expected += 1;
                    assert_eq!(tile[(py * w + px) as usize], 7, "pixel ({px}, {py})");
                } else if closest <= r + 1e-4 {
                    edge += 1;
                }
            }
        }
        let got = tile.iter().filter(|&&l| l == 7).count();
        assert!(
            got >= expected && got <= expected + edge,
            "{got} vs {expected}+{edge}"
        );
        // And roughly π ρ² with ρ the projected radius.
        let rho = 50.0 * r / (z * z - r * r).sqrt();
        let area = std::f64::consts::PI * rho * rho;
        assert!((got as f64 - area).abs() < 2.0 * std::f64::consts::PI * rho);
    }

    #[test]
    fn behind_and_straddling_capsules() {
        let c = cam(32, 24).raster();
        let behind = capsule([0.0, 0.0, -3.0], [0.0, 0.0, -1.0], 0.5, 4);
        assert!(render_labels(&c, &[behind]).iter().all(|&l| l == 0));
        assert!(capsule_rect(&c, &behind).is_empty());
        // Through the camera plane, off to the side: visible part only in front.
        let straddle = capsule([1.0, 0.0, -2.0], [1.0, 0.0, 3.0], 0.3, 4);
        let tile = render_labels(&c, &[straddle]);
        assert!(tile.contains(&4));
        let whole = PixelRect {
            x0: 0,
            y0: 0,
            x1: 32,
            y1: 24,
        };
        assert_eq!(capsule_rect(&c, &straddle), whole);
        let mut full = vec![0; tile.len()];
        draw_full_frame(&mut LabelRaster::new(), &c, &[straddle], &mut full);
        assert_eq!(tile, full);
    }

    #[test]
    fn bounding_rectangles_do_not_change_labels() {
        let skel = skeleton::presets::human();
        let camera = Camera::default();
        let rc = camera.raster();
        let mut world = vec![Isometry3::identity(); skel.len()];
        let mut caps = Vec::new();
        let mut raster = LabelRaster::new();
        for k in 0..8 {
            let mut pose = skel.rest_pose();
            for (i, x) in pose.iter_mut().enumerate().skip(6) {
                *x = (((i * 7 + k * 13) % 11) as f64 - 5.0) * 0.08;
            }
            pose[2] = 0.3 * k as f64; // walk toward the camera
            pose[5] = 0.4 * k as f64; // and roll: diagonal limbs
            skel.clamp_to_limits(&mut pose);
            skel.forward_kinematics_into(&pose, &mut world);
            capsules_of_pose(&skel, &world, &mut caps);
            let mut a = vec![0; camera.pixels()];
            let mut b = vec![0; camera.pixels()];
            let rect = raster.draw(&rc, &caps, &mut a);
            draw_full_frame(&mut raster, &rc, &caps, &mut b);
            assert_eq!(a, b, "pose {k}");
            // The per-capsule rectangles the GPU path draws union to it.
            let union = caps
                .iter()
                .map(|c| capsule_rect(&rc, c))
                .fold(PixelRect::default(), PixelRect::union);
            assert_eq!(union, rect, "pose {k}");
            for (i, &l) in a.iter().enumerate() {
                let (x, y) = ((i % 160) as u32, (i / 160) as u32);
                let inside = x >= rect.x0 && x < rect.x1 && y >= rect.y0 && y < rect.y1;
                assert!(l == 0 || inside);
            }
            assert!(a.iter().filter(|&&l| l != 0).count() > 500);
        }
    }

    #[test]
    fn capsules_of_pose_follow_the_world_transforms() {
        let skel = skeleton::presets::human();
        let world = skel.forward_kinematics(&skel.rest_pose()).unwrap();
        let mut caps = Vec::with_capacity(64);
        capsules_of_pose(&skel, &world, &mut caps);
        let n = skel.joints().iter().filter(|j| j.body.is_some()).count();
        assert_eq!(caps.len(), n);
        let head = caps.iter().find(|c| c.label == 1).unwrap();
        assert!((head.a[1] - 1.7).abs() < 0.2 && head.radius == 0.09f32);
        let ptr = caps.as_ptr();
        capsules_of_pose(&skel, &world, &mut caps);
        assert_eq!(ptr, caps.as_ptr(), "reused without reallocation");
    }

    #[test]
    fn the_layout_shares_limb_ends_and_gives_the_same_capsules() {
        let skel = skeleton::presets::human();
        let layout = CapsuleLayout::new(&skel);
        assert_eq!(layout.capsules().len(), capsules_per_pose(&skel));
        // Each point listed once; a chain's end is the next limb's start.
        for (i, p) in layout.points().iter().enumerate() {
            assert!(!layout.points()[..i].contains(p));
        }
        assert!(
            layout.points().len() < 2 * layout.capsules().len(),
            "{} points for {} capsules",
            layout.points().len(),
            layout.capsules().len()
        );
        let mut pose = skel.rest_pose();
        for (i, x) in pose.iter_mut().enumerate().skip(6) {
            *x = ((i * 5 % 9) as f64 - 4.0) * 0.1;
        }
        skel.clamp_to_limits(&mut pose);
        let world = skel.forward_kinematics(&pose).unwrap();
        let mut points = vec![[0.0f32; 3]; layout.points().len()];
        layout.pose_points(&world, &mut points);
        let via_layout: Vec<_> = layout.instances(&points).collect();
        let direct: Vec<_> = capsule_instances(&skel, &world).collect();
        // Bit for bit: the GPU uploads `points`, the CPU draws `direct`.
        assert_eq!(via_layout, direct);
        // A shared end is the same place as the capsule's own end point.
        for (j, joint) in skel.joints().iter().enumerate() {
            let Some(body) = &joint.body else { continue };
            for local in [body.capsule.start, body.capsule.end] {
                let own = world[j] * Point3::from(local);
                let shared = PointSource::resolve(&skel, j, local).world_f32(&world);
                for (a, b) in shared.iter().zip(own.iter()) {
                    assert!((f64::from(*a) - b).abs() < 1e-6, "{}", joint.name);
                }
            }
        }
    }

    #[test]
    fn translating_children_do_not_share_their_parents_end_point() {
        use skeleton::{BodyPart, SkeletonBuilder};
        let mut b = SkeletonBuilder::new();
        b.joint("root", None, [0.0, 0.0, 0.0], JointKind::free())
            .with_capsule([0.0, 0.0, 0.0], [0.0, 0.5, 0.0], 0.1, BodyPart::Torso, 1.0);
        b.joint(
            "slide",
            Some("root"),
            [0.0, 0.5, 0.0],
            JointKind::prismatic(Vector3::y(), None),
        )
        .with_capsule([0.0, 0.0, 0.0], [0.0, 0.3, 0.0], 0.1, BodyPart::Head, 1.0);
        let skel = b.build().unwrap();
        assert_eq!(
            PointSource::resolve(&skel, 0, Vector3::new(0.0, 0.5, 0.0)),
            PointSource::Fixed(0, Vector3::new(0.0, 0.5, 0.0))
        );
        assert_eq!(
            PointSource::resolve(&skel, 1, Vector3::zeros()),
            PointSource::Origin(1)
        );
        assert_eq!(CapsuleLayout::new(&skel).points().len(), 4);
    }
}

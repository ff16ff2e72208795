//! The room: a textured box (floor, walls, ceiling, door, posters, shelf,
//! sideboard, rug) ray-cast once per session, Lambert + ambient shading
//! from a directional light and a ceiling lamp.

use nalgebra::Vector3;

use crate::V3;
use crate::body::v3;
use crate::colour::{fbm, hash01, lin};
use crate::options::{FloorStyle, Room, Setup, WallStyle};

#[derive(Clone, Copy, Debug)]
struct BoxObj {
    min: V3,
    max: V3,
    colour: V3,
    /// Wood grain along x.
    grain: bool,
}

#[derive(Clone, Copy, Debug)]
struct Poster {
    x0: f32,
    y0: f32,
    x1: f32,
    y1: f32,
    kind: u32,
    hue: u64,
}

pub(crate) struct Scene {
    room: Room,
    pub(crate) light_dir: V3,
    tint: V3,
    ambient: f32,
    diffuse: f32,
    lamp: f32,
    lamp_pos: V3,
    boxes: Vec<BoxObj>,
    posters: Vec<Poster>,
    pub(crate) clothing: [V3; 8],
}

const PALETTE: [[u8; 3]; 10] = [
    [180, 40, 40],
    [40, 80, 150],
    [220, 180, 60],
    [60, 130, 80],
    [230, 230, 220],
    [30, 30, 34],
    [200, 110, 40],
    [120, 60, 130],
    [90, 160, 190],
    [150, 120, 90],
];

impl Scene {
    pub(crate) fn new(setup: &Setup) -> Self {
        let room = setup.room.clone();
        let l = &setup.light;
        let d = -room.depth as f32;
        let seed = room.decor_seed;
        let mut boxes = Vec::new();
        let wood = lin([120, 84, 52]);
        if let Some(sx) = room.shelf_x {
            let sx = sx as f32;
            let (y0, y1) = (1.5, 1.53);
            boxes.push(BoxObj {
                min: V3::new(sx - 0.55, y0, d),
                max: V3::new(sx + 0.55, y1, d + 0.24),
                colour: wood,
                grain: true,
            });
            for bx in [sx - 0.45, sx + 0.43] {
                boxes.push(BoxObj {
                    min: V3::new(bx, y0 - 0.12, d),
                    max: V3::new(bx + 0.02, y0, d + 0.2),
                    colour: lin([60, 60, 64]),
                    grain: false,
                });
            }
            let mut x = sx - 0.52;
            let mut i = 0;
            while x < sx + 0.2 {
                let w = 0.025 + 0.035 * hash01(i, 1, seed);
                let h = 0.17 + 0.09 * hash01(i, 2, seed);
                let c =
                    PALETTE[(hash01(i, 3, seed) * PALETTE.len() as f32) as usize % PALETTE.len()];
                let depth = 0.15 + 0.05 * hash01(i, 4, seed);
                boxes.push(BoxObj {
                    min: V3::new(x, y1, d + 0.02),
                    max: V3::new(x + w, y1 + h, d + 0.02 + depth),
                    colour: lin(c) * (0.7 + 0.3 * hash01(i, 5, seed)),
                    grain: false,
                });
                x += w + 0.004;
                i += 1;
            }
            // A box and a vase on the rest of the shelf.
            boxes.push(BoxObj {
                min: V3::new(sx + 0.27, y1, d + 0.04),
                max: V3::new(sx + 0.45, y1 + 0.12, d + 0.2),
                colour: lin([200, 190, 170]),
                grain: false,
            });
        }
        if let Some(bx) = room.sideboard_x {
            let bx = bx as f32;
            boxes.push(BoxObj {
                min: V3::new(bx - 0.6, 0.0, d),
                max: V3::new(bx + 0.6, 0.72, d + 0.45),
                colour: lin([150, 112, 76]),
                grain: true,
            });
            boxes.push(BoxObj {
                min: V3::new(bx - 0.35, 0.72, d + 0.12),
                max: V3::new(bx - 0.2, 0.98, d + 0.27),
                colour: lin([70, 110, 120]),
                grain: false,
            });
            boxes.push(BoxObj {
                min: V3::new(bx + 0.15, 0.72, d + 0.08),
                max: V3::new(bx + 0.42, 0.76, d + 0.3),
                colour: lin([200, 60, 50]),
                grain: false,
            });
        }
        // Posters on the back wall, away from the door and the shelf.
        let mut posters = Vec::new();
        let half = (room.width * 0.5) as f32;
        let door = room.door_x as f32;
        let shelf = room.shelf_x.map(|x| x as f32);
        let mut candidates = vec![-1.9f32, -1.0, -0.2, 0.5, 1.2, 2.0];
        candidates.retain(|&x| {
            (x - door).abs() > 0.95
                && x.abs() < half - 0.45
                && shelf.is_none_or(|s| (x - s).abs() > 0.85)
        });
        for (i, &x) in candidates.iter().enumerate().take(3) {
            let w = 0.45 + 0.25 * hash01(i as i64, 7, seed);
            let h = w * (1.2 + 0.3 * hash01(i as i64, 8, seed));
            let y0 = 1.05 + 0.25 * hash01(i as i64, 9, seed);
            posters.push(Poster {
                x0: x - w * 0.5,
                y0,
                x1: x + w * 0.5,
                y1: y0 + h,
                kind: (i as u32 + seed as u32) % 4,
                hue: seed.wrapping_add(i as u64),
            });
        }
        let cl = &setup.clothing;
        Self {
            light_dir: v3(&Vector3::from(l.towards_light).normalize()),
            tint: v3(&Vector3::from(l.tint)),
            ambient: l.ambient as f32,
            diffuse: l.diffuse as f32,
            lamp: l.lamp as f32,
            lamp_pos: V3::new(0.0, room.height as f32 - 0.15, -(room.depth as f32) * 0.55),
            boxes,
            posters,
            clothing: [
                lin(cl.skin),
                lin(cl.hair),
                lin(cl.shirt),
                lin(cl.stripes.unwrap_or(cl.shirt)),
                lin(cl.trousers),
                lin(cl.shoes),
                lin(cl.soles),
                lin(cl.shirt),
            ],
            room,
        }
    }

    /// Irradiance factor (per channel) at `p` with normal `n`.
    pub(crate) fn lighting(&self, p: &V3, n: &V3) -> V3 {
        let direct = self.diffuse * n.dot(&self.light_dir).max(0.0);
        let amb = self.ambient * (0.85 + 0.15 * n.y);
        let to_lamp = self.lamp_pos - p;
        let r2 = to_lamp.norm_squared();
        let lamp = self.lamp * (n.dot(&to_lamp) / r2.sqrt()).max(0.0) * 4.0 / (2.0 + r2);
        self.tint * (direct + lamp) + V3::repeat(amb)
    }

    /// The room's linear colour along a ray, and where it meets the floor.
    pub(crate) fn shade(&self, o: &V3, d: &V3) -> (V3, Option<(f32, f32)>) {
        let r = &self.room;
        let (hw, depth, height) = (r.width as f32 * 0.5, r.depth as f32, r.height as f32);
        // Planes of the room box (the camera is inside).
        let mut best = (f32::INFINITY, 0u8);
        let mut consider = |t: f32, id: u8| {
            if t > 1e-4 && t < best.0 {
                best = (t, id);
            }
        };
        if d.y < 0.0 {
            consider(-o.y / d.y, 0);
        }
        if d.y > 0.0 {
            consider((height - o.y) / d.y, 1);
        }
        if d.z < 0.0 {
            consider((-depth - o.z) / d.z, 2);
        }
        if d.x < 0.0 {
            consider((-hw - o.x) / d.x, 3);
        }
        if d.x > 0.0 {
            consider((hw - o.x) / d.x, 4);
        }
        let mut hit_box = None;
        for (i, b) in self.boxes.iter().enumerate() {
            if let Some((t, n)) = ray_box(o, d, b)
                && t < best.0
            {
                best = (t, 5);
                hit_box = Some((i, n));
            }
        }
        let (t, id) = best;
        if !t.is_finite() {
            return (V3::repeat(0.1), None);
        }
        let p = o + d * t;
        let (albedo, n, floor) = match id {
            0 => (self.floor_albedo(p.x, p.z), V3::y(), Some((p.x, p.z))),
            1 => {
                let c = lin(r.ceiling) * (0.97 + 0.03 * fbm(p.x * 2.0, p.z * 2.0, 5));
                (c, -V3::y(), None)
            }
            2 => (self.back_wall_albedo(p.x, p.y), V3::z(), None),
            3 => (self.side_wall_albedo(p.z, p.y, 3), V3::x(), None),
            4 => (self.side_wall_albedo(p.z, p.y, 4), -V3::x(), None),
            _ => {
                let (i, n) = hit_box.expect("a box was hit");
                let b = &self.boxes[i];
                let mut c = b.colour;
                if b.grain {
                    let g = 0.9 + 0.1 * (p.x * 60.0 + fbm(p.x * 3.0, p.y * 40.0, 9) * 8.0).sin();
                    c *= g;
                }
                // Dark edges where door-like fronts meet.
                (c, n, None)
            }
        };
        let mut light = self.lighting(&p, &n);
        // Contact darkening near the room's edges.
        let edge = match id {
            0 => (p.z + depth).min(hw - p.x.abs()),
            2 => p.y.min(hw - p.x.abs()).min(height - p.y),
            3 | 4 => p.y.min(p.z + depth).min(height - p.y),
            1 => (p.z + depth).min(hw - p.x.abs()),
            _ => 1.0,
        };
        light *= 1.0 - 0.28 * (-edge.max(0.0) / 0.18).exp();
        (albedo.component_mul(&light), floor)
    }

    fn floor_albedo(&self, x: f32, z: f32) -> V3 {
        let r = &self.room;
        let seed = r.decor_seed;
        let (base, accent) = (lin(r.floor), lin(r.floor_accent));
        let mut c = match r.floor_style {
            FloorStyle::Wood => {
                let pw = 0.14;
                let row = (z / pw).floor();
                let fz = z / pw - row;
                let offset = hash01(row as i64, 0, seed) * 1.2;
                let plank = ((x + offset) / 1.2).floor();
                let fx = (x + offset) / 1.2 - plank;
                let v = hash01(row as i64, plank as i64, seed);
                let grain =
                    0.5 + 0.5 * ((x * 9.0 + fbm(x * 0.8, z * 14.0, seed) * 7.0) * 2.0).sin();
                let mut c = base + (accent - base) * (0.25 * v + 0.35 * grain * grain);
                if !(0.03..=0.97).contains(&fz) || fx < 0.006 {
                    c *= 0.45;
                }
                c
            }
            FloorStyle::Tiles => {
                let size = 0.4;
                let (tx, tz) = ((x / size).floor(), (z / size).floor());
                let (fx, fz) = (x / size - tx, z / size - tz);
                let v = hash01(tx as i64, tz as i64, seed);
                let mottle = fbm(x * 6.0, z * 6.0, seed + 3);
                let mut c = base * (0.93 + 0.08 * v + 0.08 * mottle);
                let g = 0.015;
                if fx < g || fx > 1.0 - g || fz < g || fz > 1.0 - g {
                    c = accent;
                }
                c
            }
        };
        if let Some(rug) = r.rug {
            let st = self.room.depth as f32;
            let (x0, x1, z0, z1) = (-1.1, 1.1, -st + 0.9, -st + 2.5);
            if (x0..x1).contains(&x) && (z0..z1).contains(&z) {
                let u = (x - x0).min(x1 - x).min((z - z0).min(z1 - z));
                let base = lin(rug);
                c = if u < 0.08 {
                    lin([230, 210, 170])
                } else if u < 0.2 {
                    base * 0.6
                } else {
                    let pat = ((x * 6.0).sin() * (z * 6.0).sin()).abs();
                    base * (0.85 + 0.2 * pat)
                };
                c *= 0.92 + 0.08 * fbm(x * 30.0, z * 30.0, 77);
            }
        }
        c
    }

    fn wall_base(&self, u: f32, y: f32, seed: u64) -> V3 {
        let r = &self.room;
        let (wall, accent) = (lin(r.wall), lin(r.wall_accent));
        let mottle = 0.96 + 0.06 * fbm(u * 2.5, y * 2.5, seed);
        let c = match r.wall_style {
            WallStyle::Plaster => wall,
            WallStyle::Stripes => {
                let f = (u / 0.16).rem_euclid(1.0);
                if f < 0.5 {
                    wall
                } else if f < 0.54 {
                    accent * 0.9
                } else {
                    wall + (accent - wall) * 0.6
                }
            }
            WallStyle::Panelled => {
                if y < 0.95 {
                    let f = (u / 0.5).rem_euclid(1.0);
                    if !(0.02..=0.98).contains(&f) {
                        accent * 0.7
                    } else {
                        accent
                    }
                } else if y < 1.0 {
                    lin([236, 232, 222])
                } else {
                    wall
                }
            }
        };
        if y < 0.09 {
            return lin([232, 230, 224]) * (if y > 0.08 { 0.8 } else { 1.0 });
        }
        c * mottle
    }

    fn side_wall_albedo(&self, z: f32, y: f32, id: u64) -> V3 {
        self.wall_base(z, y, self.room.decor_seed + id)
    }

    fn back_wall_albedo(&self, x: f32, y: f32) -> V3 {
        let r = &self.room;
        let dx = r.door_x as f32;
        // Door: frame 6 cm, leaf 0.82 m × 2.0 m with two panels, handle.
        let (fw, lw, lh) = (0.06, 0.41, 2.0);
        if (x - dx).abs() < lw + fw && y < lh + fw {
            let frame_c = lin([238, 236, 230]);
            if (x - dx).abs() >= lw || y >= lh {
                let edge = (x - dx).abs() - lw;
                return frame_c
                    * if edge < 0.008 || y - lh < 0.008 && y >= lh {
                        0.7
                    } else {
                        1.0
                    };
            }
            let leaf = lin(r.door);
            let hx = dx + 0.33;
            if ((x - hx).powi(2) + (y - 1.0).powi(2)).sqrt() < 0.028
                || ((x - hx - 0.0).abs() < 0.012 && (y - 1.0).abs() < 0.012)
            {
                return lin([90, 90, 96]);
            }
            if (x - hx).abs() < 0.015 && y > 0.99 && y < 1.01 + 0.0 {
                return lin([120, 120, 126]);
            }
            // Panels: inset rectangles with a shaded rim.
            let u = (x - dx + lw) / (2.0 * lw);
            for (v0, v1) in [(0.08, 0.9), (1.05, 1.9)] {
                if (0.12..0.88).contains(&u) && y > v0 && y < v1 {
                    let rim = (u - 0.12).min(0.88 - u) * 2.0 * lw;
                    let rim = rim.min((y - v0).min(v1 - y));
                    return leaf * if rim < 0.015 { 0.78 } else { 0.96 };
                }
            }
            return leaf * (0.97 + 0.03 * fbm(x * 8.0, y * 8.0, 4));
        }
        // Light switch beside the door.
        let sx = dx - lw - fw - 0.15;
        if (x - sx).abs() < 0.04 && (y - 1.1).abs() < 0.045 {
            return lin([240, 240, 236])
                * if (x - sx).abs() > 0.036 || (y - 1.1).abs() > 0.041 {
                    0.8
                } else {
                    1.0
                };
        }
        for p in &self.posters {
            if x >= p.x0 && x <= p.x1 && y >= p.y0 && y <= p.y1 {
                let u = (x - p.x0) / (p.x1 - p.x0);
                let v = (y - p.y0) / (p.y1 - p.y0);
                return poster(p, u, v);
            }
        }
        self.wall_base(x, y, self.room.decor_seed + 2)
    }
}

/// The art of a poster at `(u, v)` ∈ [0, 1]² (v up).
fn poster(p: &Poster, u: f32, v: f32) -> V3 {
    let m = 0.035;
    if !(m..=1.0 - m).contains(&u) || !(m..=1.0 - m).contains(&v) {
        return lin([244, 244, 240]);
    }
    let pick = |k: i64| {
        let c = PALETTE[(hash01(k, 0, p.hue) * PALETTE.len() as f32) as usize % PALETTE.len()];
        lin(c)
    };
    match p.kind {
        0 => {
            // Sunset: sky gradient, sun, mountains.
            let sky = lin([250, 170, 80]) + (lin([70, 50, 120]) - lin([250, 170, 80])) * v;
            let sun = ((u - 0.6).powi(2) + (v - 0.45).powi(2)).sqrt() < 0.13;
            let ridge = 0.3 + 0.08 * (u * 11.0).sin() + 0.05 * (u * 23.0 + 1.0).sin();
            if v < ridge {
                lin([40, 36, 50])
            } else if sun {
                lin([255, 236, 160])
            } else {
                sky
            }
        }
        1 => {
            // A grid of colour fields with black bars.
            let bars_u = [0.32, 0.71];
            let bars_v = [0.38, 0.8];
            if bars_u.iter().any(|b| (u - b).abs() < 0.025)
                || bars_v.iter().any(|b| (v - b).abs() < 0.02)
            {
                return lin([20, 20, 20]);
            }
            let cu = bars_u.iter().filter(|b| u > **b).count() as i64;
            let cv = bars_v.iter().filter(|b| v > **b).count() as i64;
            if (cu + cv) % 3 == 0 {
                lin([238, 236, 228])
            } else {
                pick(cu * 3 + cv)
            }
        }
        2 => {
            // A text-like flyer: title block and lines.
            if v > 0.78 {
                return pick(1) * 0.9;
            }
            let line = (v * 22.0).rem_euclid(1.0);
            let word = hash01((u * 14.0) as i64, (v * 22.0) as i64, p.hue) > 0.25;
            if v < 0.7 && v > 0.1 && line < 0.45 && word && u < 0.9 {
                lin([60, 60, 70])
            } else {
                lin([236, 232, 220])
            }
        }
        _ => {
            // Concentric rings.
            let r = ((u - 0.5).powi(2) + (v - 0.5).powi(2)).sqrt();
            let k = (r * 14.0) as i64;
            if k % 2 == 0 {
                pick(k)
            } else {
                lin([230, 226, 214])
            }
        }
    }
}

/// Entry into an axis-aligned box: `t` and the outward normal.
fn ray_box(o: &V3, d: &V3, b: &BoxObj) -> Option<(f32, V3)> {
    let mut t0 = 0.0f32;
    let mut t1 = f32::INFINITY;
    let mut axis = 0usize;
    let mut sign = 1.0f32;
    for k in 0..3 {
        if d[k].abs() < 1e-9 {
            if o[k] < b.min[k] || o[k] > b.max[k] {
                return None;
            }
            continue;
        }
        let inv = 1.0 / d[k];
        let (mut ta, mut tb) = ((b.min[k] - o[k]) * inv, (b.max[k] - o[k]) * inv);
        let mut s = -1.0;
        if ta > tb {
            std::mem::swap(&mut ta, &mut tb);
            s = 1.0;
        }
        if ta > t0 {
            t0 = ta;
            axis = k;
            sign = s;
        }
        t1 = t1.min(tb);
        if t0 > t1 {
            return None;
        }
    }
    let mut n = V3::zeros();
    n[axis] = sign;
    (t0 > 1e-4).then_some((t0, n))
}

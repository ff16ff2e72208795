//! The camera file (TOML) that every command taking `--camera` reads.
//!
//! ```toml
//! width = 640          # pixels
//! height = 480
//! fx = 554.0           # focal lengths, pixels
//! fy = 554.0
//! cx = 320.0           # principal point, pixels (image y grows down)
//! cy = 240.0
//! position = [0.2, 1.0, 3.5]   # camera centre, metres, BVH world frame
//! look_at = [0.2, 0.9, -0.6]   # a point on the optical axis
//! up = [0.0, 1.0, 0.0]         # world direction that is up in the image
//! ```
//!
//! The pose is turned into [`labels::Camera`]'s world-from-camera isometry the
//! way [`labels::Camera::looking_at`] does: camera `z` = normalised
//! `look_at − position`, image right `x = z × up` (normalised), image down
//! `y = z × x`.

use std::path::{Path, PathBuf};

/// Largest |coordinate| of `position` and `look_at`, metres: a camera a
/// thousand kilometres away films no person, and rotating points near
/// `f64::MAX` into the camera overflows (found by `tests/fuzz.rs`).
pub(crate) const MAX_COORDINATE: f64 = 1e6;

use nalgebra::{Isometry3, Matrix3, Point3, Rotation3, Translation3, UnitQuaternion, Vector3};

use crate::error::{Result, VisionError};

/// The contents of a camera file, field for field.
#[derive(Clone, Debug, PartialEq)]
pub struct CameraFile {
    pub width: u32,
    pub height: u32,
    pub fx: f64,
    pub fy: f64,
    pub cx: f64,
    pub cy: f64,
    pub position: [f64; 3],
    pub look_at: [f64; 3],
    pub up: [f64; 3],
}

const FIELDS: [&str; 9] = [
    "width", "height", "fx", "fy", "cx", "cy", "position", "look_at", "up",
];

impl CameraFile {
    /// Reads and validates a camera file.
    ///
    /// # Errors
    /// [`VisionError::Io`] when the file cannot be read;
    /// [`VisionError::CameraFile`] naming the field that is missing, of the
    /// wrong type, out of range, unknown, or that makes the pose degenerate.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| VisionError::io(path, e))?;
        Self::parse(&text, path)
    }

    /// Parses camera-file text; `path` names the source in errors.
    ///
    /// # Errors
    /// As [`Self::load`].
    pub fn parse(text: &str, path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let err = |field: &str, message: String| VisionError::CameraFile {
            path: path.clone(),
            field: field.to_string(),
            message,
        };
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| err("toml", e.message().to_string()))?;
        if let Some(k) = table.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(err(
                k,
                format!("unknown field (expected one of {})", FIELDS.join(", ")),
            ));
        }
        let get = |field: &str| table.get(field).ok_or_else(|| err(field, "missing".into()));
        let number = |field: &str| -> Result<f64> {
            match get(field)? {
                toml::Value::Float(x) => Ok(*x),
                toml::Value::Integer(i) => Ok(*i as f64),
                other => Err(err(field, format!("expected a number, found {other}"))),
            }
        };
        let size = |field: &str| -> Result<u32> {
            match get(field)? {
                toml::Value::Integer(i) if (1..=65_535).contains(i) => Ok(*i as u32),
                toml::Value::Integer(i) => {
                    Err(err(field, format!("{i} pixels: must be in 1..=65535")))
                }
                other => Err(err(field, format!("expected an integer, found {other}"))),
            }
        };
        let vector = |field: &str| -> Result<[f64; 3]> {
            let toml::Value::Array(a) = get(field)? else {
                return Err(err(field, "expected an array [x, y, z] of metres".into()));
            };
            if a.len() != 3 {
                return Err(err(field, format!("expected 3 numbers, found {}", a.len())));
            }
            let mut v = [0.0; 3];
            for (out, x) in v.iter_mut().zip(a) {
                *out = match x {
                    toml::Value::Float(x) => *x,
                    toml::Value::Integer(i) => *i as f64,
                    other => return Err(err(field, format!("expected a number, found {other}"))),
                };
            }
            Ok(v)
        };
        let file = Self {
            width: size("width")?,
            height: size("height")?,
            fx: number("fx")?,
            fy: number("fy")?,
            cx: number("cx")?,
            cy: number("cy")?,
            position: vector("position")?,
            look_at: vector("look_at")?,
            up: vector("up")?,
        };
        file.validate(&path)?;
        Ok(file)
    }

    /// Checks every field (see [`MAX_COORDINATE`]).
    fn validate(&self, path: &Path) -> Result<()> {
        let err = |field: &str, message: String| VisionError::CameraFile {
            path: path.to_path_buf(),
            field: field.to_string(),
            message,
        };
        for (field, v, positive) in [
            ("fx", self.fx, true),
            ("fy", self.fy, true),
            ("cx", self.cx, false),
            ("cy", self.cy, false),
        ] {
            if !v.is_finite() || (positive && v <= 0.0) {
                let need = if positive {
                    "a finite number > 0"
                } else {
                    "finite"
                };
                return Err(err(field, format!("{v}: must be {need}")));
            }
        }
        for (field, v) in [
            ("position", self.position),
            ("look_at", self.look_at),
            ("up", self.up),
        ] {
            if !v.iter().all(|x| x.is_finite()) {
                return Err(err(field, format!("{v:?}: not finite")));
            }
            if field != "up" && v.iter().any(|x| x.abs() > MAX_COORDINATE) {
                return Err(err(
                    field,
                    format!(
                        "{v:?}: beyond ±{MAX_COORDINATE} m (a point that far cannot be projected)"
                    ),
                ));
            }
        }
        self.pose_impl().map_err(|(field, m)| err(field, m))?;
        Ok(())
    }

    fn pose_impl(&self) -> std::result::Result<Isometry3<f64>, (&'static str, String)> {
        let eye = Vector3::from(self.position);
        let forward = Vector3::from(self.look_at) - eye;
        if !forward.iter().all(|v| v.is_finite()) {
            // Finite coordinates whose difference overflows (found by
            // tests/fuzz.rs: it made a NaN rotation that only `camera()`
            // refused).
            return Err((
                "look_at",
                format!(
                    "{:?} − position {:?} overflows: coordinates too large",
                    self.look_at, self.position
                ),
            ));
        }
        if forward.norm() < 1e-9 {
            return Err(("look_at", "coincides with position".into()));
        }
        // A norm that overflows (|components| near f64::MAX) is taken after
        // scaling by the largest component; ordinary values are untouched.
        let direction = |v: Vector3<f64>| {
            if v.norm().is_finite() {
                v
            } else {
                v / v.amax()
            }
        };
        let z = direction(forward).normalize();
        let up = direction(Vector3::from(self.up));
        let x = z.cross(&up);
        if up.norm() < 1e-9 || x.norm() < 1e-9 * up.norm() {
            return Err((
                "up",
                format!("{:?} is zero or parallel to the viewing direction", self.up),
            ));
        }
        let x = x.normalize();
        let y = z.cross(&x);
        if ![x, y, z].iter().all(|v| v.iter().all(|c| c.is_finite())) {
            return Err((
                "up",
                format!("{:?}: the camera axes are not finite", self.up),
            ));
        }
        let rot = Rotation3::from_matrix_unchecked(Matrix3::from_columns(&[x, y, z]));
        Ok(Isometry3::from_parts(
            Translation3::from(eye),
            UnitQuaternion::from_rotation_matrix(&rot),
        ))
    }

    /// The camera's pose in the world (world-from-camera).
    ///
    /// # Errors
    /// [`VisionError::CameraFile`] (path `<memory>`) for a degenerate pose.
    pub fn world_from_camera(&self) -> Result<Isometry3<f64>> {
        self.pose_impl()
            .map_err(|(field, message)| VisionError::CameraFile {
                path: PathBuf::from("<memory>"),
                field: field.into(),
                message,
            })
    }

    /// The [`labels::Camera`] this file describes.
    ///
    /// # Errors
    /// [`VisionError::CameraFile`] / [`VisionError::Labels`] for invalid values.
    pub fn camera(&self) -> Result<labels::Camera> {
        self.validate(Path::new("<memory>"))?;
        Ok(labels::Camera::new(
            self.fx,
            self.fy,
            self.cx,
            self.cy,
            self.width,
            self.height,
            self.world_from_camera()?,
        )?)
    }

    /// A file describing `camera`; `look_at` is one metre along the optical
    /// axis and `up` is the camera's image-up direction (−y).
    pub fn from_camera(camera: &labels::Camera) -> Self {
        let pose = camera.world_from_camera();
        let eye = pose.translation.vector;
        let z = pose.rotation * Vector3::z();
        let up = pose.rotation * -Vector3::y();
        Self {
            width: camera.width(),
            height: camera.height(),
            fx: camera.fx(),
            fy: camera.fy(),
            cx: camera.cx(),
            cy: camera.cy(),
            position: eye.into(),
            look_at: (eye + z).into(),
            up: up.into(),
        }
    }

    /// The camera file's TOML text (round-trips exactly through [`Self::parse`]).
    pub fn to_toml_string(&self) -> String {
        let v = |a: [f64; 3]| format!("[{:?}, {:?}, {:?}]", a[0], a[1], a[2]);
        format!(
            "# posecloud camera: intrinsics in pixels, pose in the BVH world frame (metres)\n\
             width = {}\nheight = {}\nfx = {:?}\nfy = {:?}\ncx = {:?}\ncy = {:?}\n\
             position = {}\nlook_at = {}\nup = {}\n",
            self.width,
            self.height,
            self.fx,
            self.fy,
            self.cx,
            self.cy,
            v(self.position),
            v(self.look_at),
            v(self.up)
        )
    }

    /// Writes the camera file.
    ///
    /// # Errors
    /// [`VisionError::Io`] when the file cannot be written.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        skeleton::write_atomically(path, self.to_toml_string().as_bytes())
            .map_err(|e| VisionError::io(path, e))
    }
}

/// Reads a camera file straight into a [`labels::Camera`].
///
/// # Errors
/// As [`CameraFile::load`].
pub fn load_camera(path: impl AsRef<Path>) -> Result<labels::Camera> {
    CameraFile::load(path)?.camera()
}

/// `camera` with its image resampled to `width × height`: the intrinsics
/// scale with the image (`fx·sx`, `cx·sx`, …), the pose is unchanged, so a
/// continuous image point `(u, v)` maps to `(u·sx, v·sy)`. This is how the
/// tracker's 160 × 120 camera relates to a 640 × 480 capture.
///
/// # Errors
/// [`VisionError::Parameter`] for a zero size.
pub fn resize_camera(camera: &labels::Camera, width: u32, height: u32) -> Result<labels::Camera> {
    if width == 0 || height == 0 {
        return Err(VisionError::parameter(
            "camera size",
            format!("{width}x{height}"),
            "must be at least 1 × 1",
        ));
    }
    let sx = f64::from(width) / f64::from(camera.width());
    let sy = f64::from(height) / f64::from(camera.height());
    Ok(labels::Camera::new(
        camera.fx() * sx,
        camera.fy() * sy,
        camera.cx() * sx,
        camera.cy() * sy,
        width,
        height,
        *camera.world_from_camera(),
    )?)
}

/// Projects a world point with `camera`; re-exported for callers that only
/// hold a camera file.
pub fn project(camera: &labels::Camera, p: [f64; 3]) -> Option<(f64, f64, f64)> {
    camera.project(&Point3::from(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRONT: &str = include_str!("../assets/camera_front.toml");

    #[test]
    fn example_file_loads_and_sees_the_walk_from_the_front() {
        let file = CameraFile::parse(FRONT, "camera_front.toml").unwrap();
        let cam = file.camera().unwrap();
        assert_eq!((cam.width(), cam.height()), (640, 480));
        // The CMU walk goes from z ≈ −1.9 to z ≈ +0.7 (see assets/motions):
        // hips at both ends project into the image, the head above the hips.
        for root in [[0.30, 0.95, -1.91], [0.13, 0.91, 0.68]] {
            let (u, v, z) = project(&cam, root).unwrap();
            assert!(
                (0.0..640.0).contains(&u) && (0.0..480.0).contains(&v),
                "{u} {v}"
            );
            assert!((2.5..6.0).contains(&z), "distance {z}");
            let (_, vh, _) = project(&cam, [root[0], root[1] + 0.5, root[2]]).unwrap();
            assert!(vh < v);
        }
    }

    #[test]
    fn round_trip_through_text_and_camera() {
        let file = CameraFile::parse(FRONT, "x").unwrap();
        let again = CameraFile::parse(&file.to_toml_string(), "y").unwrap();
        assert_eq!(file, again);
        let cam = file.camera().unwrap();
        let back = CameraFile::from_camera(&cam).camera().unwrap();
        assert_eq!(cam.width(), back.width());
        assert_eq!((cam.fx(), cam.cy()), (back.fx(), back.cy()));
        let p = Point3::new(0.1, 1.2, -0.4);
        let (a, b) = (cam.project(&p).unwrap(), back.project(&p).unwrap());
        assert!((a.0 - b.0).abs() < 1e-9 && (a.1 - b.1).abs() < 1e-9);
        let dir = std::env::temp_dir().join(format!("vision-cam-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cam.toml");
        file.save(&path).unwrap();
        assert_eq!(CameraFile::load(&path).unwrap(), file);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn field_of(text: &str) -> String {
        match CameraFile::parse(text, "bad.toml").unwrap_err() {
            VisionError::CameraFile { field, path, .. } => {
                assert_eq!(path, PathBuf::from("bad.toml"));
                field
            }
            e => panic!("unexpected {e}"),
        }
    }

    #[test]
    fn bad_files_name_the_field() {
        let good = CameraFile::parse(FRONT, "x").unwrap().to_toml_string();
        let replace = |key: &str, line: &str| {
            good.lines()
                .map(|l| {
                    if l.starts_with(&format!("{key} =")) {
                        line.to_string()
                    } else {
                        l.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(field_of(&replace("fx", "")), "fx");
        assert_eq!(field_of(&replace("fx", "fx = -3.0")), "fx");
        assert_eq!(field_of(&replace("fy", "fy = \"big\"")), "fy");
        assert_eq!(field_of(&replace("width", "width = 0")), "width");
        assert_eq!(field_of(&replace("height", "height = 2.5")), "height");
        assert_eq!(
            field_of(&replace("position", "position = [1.0, 2.0]")),
            "position"
        );
        assert_eq!(
            field_of(&replace("look_at", "look_at = [0.2, 1.0, 3.5]")),
            "look_at"
        );
        assert_eq!(field_of(&replace("up", "up = [0.0, -0.1, -4.1]")), "up");
        assert_eq!(field_of(&replace("cx", "cx = nan")), "cx");
        assert_eq!(field_of(&format!("{good}\nfov = 3\n")), "fov");
        assert_eq!(field_of("width = = 3"), "toml");
        let missing = CameraFile::load("/nonexistent/cam.toml").unwrap_err();
        assert!(missing.to_string().contains("/nonexistent/cam.toml"));
    }

    #[test]
    fn resize_scales_the_projection() {
        let cam = CameraFile::parse(FRONT, "x").unwrap().camera().unwrap();
        let small = resize_camera(&cam, 160, 120).unwrap();
        let p = Point3::new(0.2, 1.1, -0.5);
        let (u, v, _) = cam.project(&p).unwrap();
        let (us, vs, _) = small.project(&p).unwrap();
        assert!((us - u / 4.0).abs() < 1e-9 && (vs - v / 4.0).abs() < 1e-9);
        assert!(resize_camera(&cam, 0, 10).is_err());
    }
}

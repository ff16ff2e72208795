//! Mesh files of URDF visuals: where `package://` names point, and the
//! triangles in them.
//!
//! # Finding a file ([`PackageResolver`])
//!
//! ROS resolves `package://NAME/rest` through its package index; a robot
//! description copied out of ROS has none, so we look where such copies put
//! their packages, in this order, and take the first file that exists:
//!
//! 1. each extra package path (the app's `--package-path DIR`, in the order
//!    given): `DIR/rest` when `DIR` itself is named `NAME`, else
//!    `DIR/NAME/rest`;
//! 2. the URDF file's folder and each folder above it, nearest first, with
//!    the same two rules (so both `pkg/urdf/robot.urdf` inside package `pkg`
//!    and `robot.urdf` beside a folder `pkg/` are found).
//!
//! `file://PATH` and plain paths are files: absolute as written, relative to
//! the URDF file's folder. Other schemes (`http://`, `model://`) are errors.
//!
//! # Reading it ([`load_mesh`])
//!
//! STL (binary and ASCII), Wavefront OBJ and COLLADA (`.dae`, with its node
//! transforms and `<unit>`) through the `mesh-loader` crate, every part of
//! the file merged into one [`TriangleMesh`]. Normals are the file's when it
//! gives one unit normal per vertex, else area-weighted vertex normals from
//! the faces (STL's per-facet normals are often zero or stale; an STL has
//! its own three vertices per facet, so those are the facet normals).
//! Materials and textures of the mesh file are not used: the URDF colour is.
//!
//! # A whole skeleton ([`VisualMeshes::load`])
//!
//! Every mesh visual of every joint, each file read once. A file that
//! cannot be found or read is a [`MeshWarning`] naming it, never an error:
//! the app draws that link's capsule instead.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Result, SkeletonError};
use crate::skeleton::Skeleton;

/// Triangles in one coordinate frame (the mesh file's, before a visual's
/// scale): `positions[i]` has normal `normals[i]`; each three `indices` are
/// one triangle, counter-clockwise seen from outside.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TriangleMesh {
    pub positions: Vec<[f32; 3]>,
    pub normals: Vec<[f32; 3]>,
    pub indices: Vec<u32>,
}

impl TriangleMesh {
    pub fn triangle_count(&self) -> usize {
        self.indices.len() / 3
    }

    /// Axis-aligned bounds `(min, max)`; `None` for an empty mesh.
    pub fn bounds(&self) -> Option<([f32; 3], [f32; 3])> {
        let first = *self.positions.first()?;
        Some(self.positions.iter().fold((first, first), |(lo, hi), p| {
            (
                [lo[0].min(p[0]), lo[1].min(p[1]), lo[2].min(p[2])],
                [hi[0].max(p[0]), hi[1].max(p[1]), hi[2].max(p[2])],
            )
        }))
    }
}

/// Resolves the mesh file names of one URDF file (module docs).
#[derive(Clone, Debug)]
pub struct PackageResolver {
    /// The URDF file's folder (`.` for a bare file name).
    urdf_dir: PathBuf,
    package_paths: Vec<PathBuf>,
}

impl PackageResolver {
    /// For the meshes of `urdf_file`, with extra package folders searched
    /// first.
    pub fn new(urdf_file: &Path, package_paths: &[PathBuf]) -> Self {
        let urdf_dir = urdf_file
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        Self {
            urdf_dir,
            package_paths: package_paths.to_vec(),
        }
    }

    /// The file that `filename` (as written in `<mesh filename>`) names.
    /// An error says which folders were searched.
    pub fn resolve(&self, filename: &str) -> Result<PathBuf> {
        let fail = |message: String| SkeletonError::Mesh {
            file: filename.to_string(),
            message,
        };
        if let Some(rest) = filename.strip_prefix("package://") {
            let (name, rest) = rest.split_once('/').unwrap_or((rest, ""));
            if name.is_empty() || rest.is_empty() {
                return Err(fail(
                    "expected package://NAME/PATH inside the package".into(),
                ));
            }
            let mut searched = Vec::new();
            let ancestors = self.absolute_urdf_dir();
            let ancestors = ancestors.ancestors().map(Path::to_path_buf);
            for dir in self.package_paths.iter().cloned().chain(ancestors) {
                let root = if dir.file_name().is_some_and(|n| n == name) {
                    dir.clone()
                } else {
                    dir.join(name)
                };
                let candidate = root.join(rest);
                if candidate.is_file() {
                    // `package://p/../../etc/passwd` names no file of p.
                    if !within(&candidate, &root) {
                        return Err(fail(format!(
                            "leaves package '{name}' ({}): a mesh must be inside its package",
                            root.display()
                        )));
                    }
                    return Ok(candidate);
                }
                searched.push(dir.display().to_string());
            }
            return Err(fail(format!(
                "package '{name}' has no file '{rest}' in any of: {} (add its folder with --package-path)",
                searched.join(", ")
            )));
        }
        let path = match filename.split_once("://") {
            Some(("file", path)) => PathBuf::from(path),
            Some((scheme, _)) => {
                return Err(fail(format!(
                    "the '{scheme}://' scheme is not supported (package://, file:// or a path)"
                )));
            }
            None => PathBuf::from(filename),
        };
        let path = if path.is_absolute() {
            path
        } else {
            self.urdf_dir.join(path)
        };
        if !path.is_file() {
            return Err(fail(format!("{} does not exist", path.display())));
        }
        // A file path stays in the robot's folders: the URDF's folder, the
        // one above it (`pkg/urdf/robot.urdf` beside `pkg/meshes/`), or a
        // package path the user gave.
        let mut roots = self.package_paths.clone();
        roots.push(self.urdf_dir.clone());
        if let Some(up) = self.absolute_urdf_dir().parent() {
            roots.push(up.to_path_buf());
        }
        if roots.iter().any(|r| within(&path, r)) {
            Ok(path)
        } else {
            Err(fail(format!(
                "{} is outside the robot's folders ({}): add its folder with --package-path",
                path.display(),
                self.urdf_dir.display()
            )))
        }
    }

    /// The URDF folder made absolute, so that its ancestors reach the root.
    fn absolute_urdf_dir(&self) -> PathBuf {
        std::path::absolute(&self.urdf_dir).unwrap_or_else(|_| self.urdf_dir.clone())
    }
}

/// Whether `path` is inside folder `root` once both are resolved
/// (symbolic links and `..` followed).
fn within(path: &Path, root: &Path) -> bool {
    match (path.canonicalize(), root.canonicalize()) {
        (Ok(p), Ok(r)) => p.starts_with(r),
        _ => false,
    }
}

/// The largest mesh file read (robot meshes are kilobytes to tens of
/// megabytes); a larger file is refused before it is read.
pub(crate) const MAX_MESH_BYTES: u64 = 128 << 20;

/// Reads a mesh file (STL, OBJ or COLLADA; module docs). Errors name the
/// file: larger than [`MAX_MESH_BYTES`], unreadable, unknown format,
/// malformed, no triangles, or a non-finite coordinate.
pub(crate) fn load_mesh(path: &Path) -> Result<TriangleMesh> {
    use std::io::Read as _;
    let io = |cause| SkeletonError::Io {
        path: path.to_path_buf(),
        cause,
    };
    let too_big = || SkeletonError::Mesh {
        file: path.display().to_string(),
        message: format!("larger than {} MiB", MAX_MESH_BYTES >> 20),
    };
    let file = std::fs::File::open(path).map_err(io)?;
    if file.metadata().is_ok_and(|m| m.len() > MAX_MESH_BYTES) {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    file.take(MAX_MESH_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_MESH_BYTES {
        return Err(too_big());
    }
    parse_mesh(&bytes, path)
}

/// As [`load_mesh`] for the bytes of a file; `path` names the format (by
/// its extension) and the file in errors.
pub(crate) fn parse_mesh(bytes: &[u8], path: &Path) -> Result<TriangleMesh> {
    let fail = |message: String| SkeletonError::Mesh {
        file: path.display().to_string(),
        message,
    };
    let extension = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let loader = mesh_loader::Loader::default().merge_meshes(true);
    // A parser of untrusted files may still panic on input its authors did
    // not foresee; a robot with a bad mesh must fall back, not crash the app.
    let parsed = std::panic::catch_unwind(|| match extension.as_str() {
        "stl" => loader.load_stl_from_slice(bytes, path),
        "obj" => loader.load_obj_from_slice(bytes, path),
        "dae" => loader.load_collada_from_slice(bytes, path),
        _ => loader.load_from_slice(bytes, path),
    })
    .map_err(|_| fail("the mesh parser failed on this file".into()))?
    .map_err(|e| fail(e.to_string()))?;
    let mesh = mesh_loader::Mesh::merge(parsed.meshes);
    let positions = mesh.vertices;
    if positions.iter().flatten().any(|v| !v.is_finite()) {
        return Err(fail("a vertex coordinate is not finite".into()));
    }
    let count = positions.len() as u32;
    let mut indices = Vec::with_capacity(mesh.faces.len() * 3);
    for face in &mesh.faces {
        if face.iter().any(|&i| i >= count) {
            return Err(fail(format!(
                "a face refers to vertex {} of {count}",
                face.iter().max().copied().unwrap_or(0)
            )));
        }
        indices.extend_from_slice(face);
    }
    if indices.is_empty() {
        return Err(fail("no triangles".into()));
    }
    let given = &mesh.normals;
    let usable = extension != "stl"
        && given.len() == positions.len()
        && given.iter().all(|n| {
            let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
            len.is_finite() && (len - 1.0).abs() < 0.1
        });
    let normals = if usable {
        given.clone()
    } else {
        face_normals(&positions, &indices)
    };
    Ok(TriangleMesh {
        positions,
        normals,
        indices,
    })
}

/// Area-weighted vertex normals (a vertex used by no face, or only by
/// degenerate ones, gets `+z`).
fn face_normals(positions: &[[f32; 3]], indices: &[u32]) -> Vec<[f32; 3]> {
    let mut sums = vec![[0.0f32; 3]; positions.len()];
    for t in indices.chunks_exact(3) {
        let [a, b, c] = [0, 1, 2].map(|k| positions[t[k] as usize]);
        let u = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
        let v = [c[0] - a[0], c[1] - a[1], c[2] - a[2]];
        // |u × v| is twice the area: larger faces weigh more.
        let n = [
            u[1] * v[2] - u[2] * v[1],
            u[2] * v[0] - u[0] * v[2],
            u[0] * v[1] - u[1] * v[0],
        ];
        for &i in t {
            for k in 0..3 {
                sums[i as usize][k] += n[k];
            }
        }
    }
    sums.into_iter()
        .map(|n| {
            let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
            if len > 0.0 && len.is_finite() {
                [n[0] / len, n[1] / len, n[2] / len]
            } else {
                [0.0, 0.0, 1.0]
            }
        })
        .collect()
}

/// A mesh visual that could not be drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct MeshWarning {
    /// The file name as the URDF writes it.
    pub filename: String,
    /// The skeleton joints whose links use it (their capsules are drawn).
    pub joints: Vec<String>,
    /// Why: not found (with where it looked), unreadable, malformed.
    pub message: String,
}

impl std::fmt::Display for MeshWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "mesh {}: {}; drawn as capsules: {}",
            self.filename,
            self.message,
            self.joints.join(", ")
        )
    }
}

/// The meshes of every visual of a skeleton (module docs).
#[derive(Clone, Debug, Default)]
pub struct VisualMeshes {
    /// `meshes[j][k]`: the triangles of joint `j`'s visual `k`, `None` for
    /// a primitive shape (box, cylinder, sphere, capsule) or a mesh that
    /// failed.
    pub meshes: Vec<Vec<Option<Arc<TriangleMesh>>>>,
    /// Joints with a mesh that failed: drawn as their capsule instead of
    /// their visuals.
    pub failed: Vec<bool>,
    /// One per mesh file that failed, in the order first met.
    pub warnings: Vec<MeshWarning>,
}

impl VisualMeshes {
    /// Loads every mesh of `skeleton`'s visuals, each file once.
    pub fn load(skeleton: &Skeleton, resolver: &PackageResolver) -> Self {
        let mut files: HashMap<String, std::result::Result<Arc<TriangleMesh>, String>> =
            HashMap::new();
        let mut out = Self {
            meshes: Vec::with_capacity(skeleton.len()),
            failed: vec![false; skeleton.len()],
            warnings: Vec::new(),
        };
        for (j, joint) in skeleton.joints().iter().enumerate() {
            let mut row = Vec::with_capacity(joint.visuals.len());
            for visual in &joint.visuals {
                let Some(filename) = visual.shape.mesh_filename() else {
                    row.push(None);
                    continue;
                };
                let loaded = files.entry(filename.to_string()).or_insert_with(|| {
                    resolver
                        .resolve(filename)
                        .and_then(|path| load_mesh(&path))
                        .map(Arc::new)
                        .map_err(|e| match e {
                            // The resolver's errors already start with the name.
                            SkeletonError::Mesh { file, message } if file == filename => message,
                            other => other.to_string(),
                        })
                });
                match loaded {
                    Ok(mesh) => row.push(Some(mesh.clone())),
                    Err(message) => {
                        row.push(None);
                        out.failed[j] = true;
                        match out.warnings.iter_mut().find(|w| w.filename == filename) {
                            Some(w) => w.joints.push(joint.name.clone()),
                            None => out.warnings.push(MeshWarning {
                                filename: filename.to_string(),
                                joints: vec![joint.name.clone()],
                                message: message.clone(),
                            }),
                        }
                    }
                }
            }
            out.meshes.push(row);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::urdf::parse_urdf;

    /// A fresh folder under the system temp folder, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> Self {
            let dir =
                std::env::temp_dir().join(format!("skeleton-mesh-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }

        fn write(&self, rel: &str, bytes: &[u8]) -> PathBuf {
            let path = self.0.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, bytes).unwrap();
            path
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A tetrahedron's four outward facets.
    const TETRA: [[[f32; 3]; 3]; 4] = [
        [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]],
        [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]],
        [[0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]],
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
    ];

    fn ascii_stl() -> Vec<u8> {
        let mut s = String::from("solid tetra\n");
        for f in TETRA {
            // Zero facet normals, as many exporters write.
            s += "  facet normal 0 0 0\n    outer loop\n";
            for v in f {
                s += &format!("      vertex {} {} {}\n", v[0], v[1], v[2]);
            }
            s += "    endloop\n  endfacet\n";
        }
        s += "endsolid tetra\n";
        s.into_bytes()
    }

    fn binary_stl() -> Vec<u8> {
        let mut b = vec![0u8; 80];
        b.extend_from_slice(&(TETRA.len() as u32).to_le_bytes());
        for f in TETRA {
            b.extend_from_slice(&[0u8; 12]);
            for v in f {
                for c in v {
                    b.extend_from_slice(&c.to_le_bytes());
                }
            }
            b.extend_from_slice(&[0u8; 2]);
        }
        b
    }

    const OBJ: &str =
        "o tetra\nv 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n";

    /// Four triangles, each normal pointing away from the tetrahedron's
    /// centre.
    fn assert_tetra(mesh: &TriangleMesh) {
        assert_eq!(mesh.triangle_count(), 4, "{mesh:?}");
        assert_eq!(mesh.normals.len(), mesh.positions.len());
        assert_eq!(mesh.bounds(), Some(([0.0; 3], [1.0; 3])));
        let centre = [0.25f32; 3];
        for t in mesh.indices.chunks_exact(3) {
            let p = mesh.positions[t[0] as usize];
            let n = mesh.normals[t[0] as usize];
            let out: f32 = (0..3).map(|k| (p[k] - centre[k]) * n[k]).sum();
            // Smooth OBJ normals at a corner still point outward.
            assert!(out > 0.0, "{p:?} {n:?}");
            let len: f32 = n.iter().map(|c| c * c).sum::<f32>().sqrt();
            assert!((len - 1.0).abs() < 1e-5);
        }
    }

    #[test]
    fn stl_ascii_and_binary_and_obj_load_as_triangles() {
        let dir = TempDir::new("formats");
        for (name, bytes) in [
            ("a.stl", ascii_stl()),
            ("b.STL", binary_stl()),
            ("c.obj", OBJ.as_bytes().to_vec()),
        ] {
            let mesh = load_mesh(&dir.write(name, &bytes)).unwrap();
            assert_tetra(&mesh);
        }
    }

    #[test]
    fn bad_mesh_files_are_errors_naming_the_file() {
        let dir = TempDir::new("bad");
        let missing = dir.0.join("missing.stl");
        let e = load_mesh(&missing).unwrap_err().to_string();
        assert!(e.contains("missing.stl"), "{e}");
        let cases: [(&str, Vec<u8>); 5] = [
            ("empty.stl", Vec::new()),
            ("short.stl", binary_stl()[..100].to_vec()),
            ("junk.obj", b"f 1 2 9\n".to_vec()),
            ("novertex.obj", b"o nothing\n".to_vec()),
            ("x.dae", b"<COLLADA><library_geometries>".to_vec()),
        ];
        for (name, bytes) in cases {
            let e = load_mesh(&dir.write(name, &bytes)).unwrap_err().to_string();
            assert!(e.contains(name), "{name}: {e}");
        }
        // Every prefix of a valid file: an error or a mesh, never a panic.
        let whole = ascii_stl();
        for n in (0..whole.len()).step_by(7) {
            let _ = parse_mesh(&whole[..n], Path::new("cut.stl"));
        }
    }

    #[test]
    fn package_urls_resolve_in_package_paths_then_the_urdf_folder_and_above() {
        let dir = TempDir::new("resolve");
        // robots/arm/urdf/arm.urdf inside package `arm`, beside package `parts`.
        let urdf = dir.write("robots/arm/urdf/arm.urdf", b"");
        let own = dir.write("robots/arm/meshes/link.stl", b"");
        let beside = dir.write("robots/parts/meshes/gear.stl", b"");
        let extra = dir.write("elsewhere/parts/meshes/gear.stl", b"");
        let r = PackageResolver::new(&urdf, &[]);
        let same =
            |a: PathBuf, b: &Path| assert_eq!(a.canonicalize().unwrap(), b.canonicalize().unwrap());
        same(r.resolve("package://arm/meshes/link.stl").unwrap(), &own);
        same(
            r.resolve("package://parts/meshes/gear.stl").unwrap(),
            &beside,
        );
        // An extra package path comes first, given as the folder holding
        // packages or as the package itself.
        for p in [dir.0.join("elsewhere"), dir.0.join("elsewhere/parts")] {
            let r = PackageResolver::new(&urdf, &[p]);
            same(
                r.resolve("package://parts/meshes/gear.stl").unwrap(),
                &extra,
            );
        }
        // Plain paths and file://.
        same(r.resolve("../meshes/link.stl").unwrap(), &own);
        let url = format!("file://{}", own.display());
        same(r.resolve(&url).unwrap(), &own);
        same(r.resolve(&own.display().to_string()).unwrap(), &own);
        // Failures say what was searched.
        let e = r.resolve("package://nope/m.stl").unwrap_err().to_string();
        assert!(
            e.starts_with("package://nope/m.stl:")
                && e.contains("--package-path")
                && e.contains("robots"),
            "{e}"
        );
        for bad in [
            "package://",
            "package://arm",
            "http://x/m.stl",
            "missing.stl",
        ] {
            let e = r.resolve(bad).unwrap_err().to_string();
            assert!(e.starts_with(bad), "{e}");
        }
    }

    /// Issue 32 item 17: a mesh name cannot reach a file outside the
    /// robot's packages and folders (unless its folder is given as a
    /// package path), and a huge file is refused before it is read.
    #[test]
    fn mesh_names_stay_inside_the_packages_and_files_are_bounded() {
        let dir = TempDir::new("escape");
        let urdf = dir.write("robots/arm/urdf/arm.urdf", b"");
        dir.write("robots/arm/meshes/link.stl", b"");
        let secret = dir.write("secret/key.stl", b"");
        let r = PackageResolver::new(&urdf, &[]);
        for name in [
            "package://arm/../../../secret/key.stl".to_string(),
            format!("file://{}", secret.display()),
            secret.display().to_string(),
            "../../../secret/key.stl".into(),
        ] {
            let e = r.resolve(&name).unwrap_err().to_string();
            assert!(
                e.contains("package") || e.contains("outside"),
                "{name}: {e}"
            );
        }
        // Given as a package path, the folder is the user's choice.
        let r = PackageResolver::new(&urdf, &[dir.0.join("secret")]);
        assert!(r.resolve(&secret.display().to_string()).is_ok());
        // A sparse 1 GiB file: refused from its size, nothing read.
        let big = dir.0.join("robots/arm/meshes/big.stl");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        let e = load_mesh(&big).unwrap_err().to_string();
        assert!(e.contains("big.stl") && e.contains("MiB"), "{e}");
    }

    #[test]
    fn a_missing_or_broken_mesh_is_a_warning_and_its_link_falls_back() {
        let dir = TempDir::new("skeleton");
        dir.write("pkg/meshes/good.stl", &binary_stl());
        dir.write(
            "pkg/meshes/broken.stl",
            b"solid x\n facet normal 0 0 0\n outer",
        );
        let urdf = dir.write("pkg/urdf/r.urdf", b"");
        let text = r#"<robot name="r">
  <link name="base"><visual><geometry><mesh filename="package://pkg/meshes/good.stl"/></geometry></visual>
    <visual><geometry><box size="1 1 1"/></geometry></visual></link>
  <link name="a"><visual><geometry><mesh filename="package://pkg/meshes/missing.stl"/></geometry></visual></link>
  <link name="b"><visual><geometry><mesh filename="package://pkg/meshes/broken.stl"/></geometry></visual></link>
  <link name="c"><visual><geometry><mesh filename="package://pkg/meshes/missing.stl"/></geometry></visual></link>
  <joint name="ja" type="continuous"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/></joint>
  <joint name="jb" type="continuous"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/></joint>
  <joint name="jc" type="continuous"><parent link="b"/><child link="c"/><axis xyz="0 0 1"/></joint>
</robot>"#;
        let s = parse_urdf(text, "r.urdf").unwrap();
        let v = VisualMeshes::load(&s, &PackageResolver::new(&urdf, &[]));
        assert_eq!(v.failed, [false, true, true, true]);
        assert!(v.meshes[0][0].is_some() && v.meshes[0][1].is_none());
        assert_tetra(v.meshes[0][0].as_ref().unwrap());
        assert_eq!(v.warnings.len(), 2, "{:#?}", v.warnings);
        let missing = v.warnings[0].to_string();
        assert!(
            missing.contains("package://pkg/meshes/missing.stl") && missing.contains("ja, jc"),
            "{missing}"
        );
        let broken = v.warnings[1].to_string();
        assert!(
            broken.contains("broken.stl") && broken.contains("jb"),
            "{broken}"
        );
    }
}

//! The playground's scenes: a skeleton, its starting pose, the constraints
//! that stay (floor, centre of mass, smoothness, coupling) and the draggable
//! position targets a user starts with. Bevy-free, so tests build every
//! scene without a window.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use ik::scenarios::{HUMAN_FEET, HumanProblem};
use ik::{Constraint, ConstraintKind, Noise};
use nalgebra::{Isometry3, Translation3, UnitQuaternion, Vector3};
use skeleton::{Bvh, JointKind, PackageResolver, Skeleton, VisualMeshes, presets};

use crate::scenes::ik::settings::{ConstraintGroup, Settings, SolverKind};

/// Which scene to build (`--scene NAME`, `--urdf FILE`, `--bvh FILE --frame N`).
#[derive(Clone, Debug, PartialEq)]
pub enum SceneSource {
    /// The ~40-joint human, feet on the floor, hand targets, free root.
    Human,
    /// The SMC-IK 4-segment arm with one target.
    Arm,
    /// The 90-DOF chain with a centre-of-mass line and smoothness.
    Chain,
    /// The hand with five finger-tip targets and coupled finger joints.
    Hand,
    /// A robot from a URDF file; one target on its last link.
    Urdf(PathBuf),
    /// A BVH skeleton in the pose of one frame; targets on its end sites.
    Bvh { path: PathBuf, frame: usize },
}

/// The names `--scene` accepts.
pub const SCENE_NAMES: [&str; 4] = ["human", "arm", "chain", "hand"];

impl SceneSource {
    pub fn from_name(name: &str) -> Result<Self> {
        Ok(match name {
            "human" => Self::Human,
            "arm" => Self::Arm,
            "chain" => Self::Chain,
            "hand" => Self::Hand,
            other => bail!(
                "unknown scene '{other}' (one of {}; or --urdf FILE, --bvh FILE)",
                SCENE_NAMES.join(", ")
            ),
        })
    }

    /// A short label for panels and window titles.
    pub fn label(&self) -> String {
        match self {
            Self::Human => "human".into(),
            Self::Arm => "arm".into(),
            Self::Chain => "chain".into(),
            Self::Hand => "hand".into(),
            Self::Urdf(p) => format!("urdf: {}", file_name(p)),
            Self::Bvh { path, frame } => format!("bvh: {} frame {frame}", file_name(path)),
        }
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

/// A constraint that belongs to the scene (not a user target).
#[derive(Clone, Debug)]
pub struct FixedConstraint {
    pub group: ConstraintGroup,
    /// Shown in the panel, e.g. `floor: l_heel`.
    pub label: String,
    pub kind: ConstraintKind,
}

/// A built scene.
#[derive(Clone, Debug)]
pub struct Scene {
    pub source: SceneSource,
    pub skeleton: Arc<Skeleton>,
    /// The pose the body starts in and returns to on reset.
    pub initial: Vec<f64>,
    pub fixed: Vec<FixedConstraint>,
    /// Joints that start with a position target (at their initial position).
    pub targets: Vec<usize>,
    /// Skeleton → display coordinates (y up, floor y = 0): rotation, then
    /// translation.
    pub display: Isometry3<f64>,
    /// Whether to draw a floor.
    pub floor: bool,
    /// Joints whose distance to the targets sets the random-walk σ of the
    /// lever-arm rule ([`ik::lever_arm_noise`]); empty: uniform σ.
    pub lever_points: Vec<usize>,
    /// Where the orbit camera starts.
    pub orbit: OrbitStart,
    /// What the solver starts with.
    pub start: SolverStart,
    /// What the importer adjusted to load the file (URDF: unlimited
    /// limits, clamped inertias, ignored `<mimic>`, …), one line each,
    /// shown in the panel (with one line per mesh file that could not be
    /// loaded); empty for the presets.
    pub warnings: Vec<String>,
    /// The meshes of the skeleton's visuals (URDF), loaded once; empty for
    /// the presets and BVH.
    pub meshes: Arc<VisualMeshes>,
}

/// The orbit camera's starting focus (display coordinates) and its
/// distance from it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OrbitStart {
    pub focus: Vector3<f64>,
    pub distance: f64,
}

/// The solver settings a scene starts with (the rest are the defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolverStart {
    pub particles: usize,
    /// Free-root translation σ at noise scale 1 (m).
    pub root_sigma: f64,
    pub solver: SolverKind,
}

impl SolverStart {
    /// A body on a fixed base (arm, chain, hand, robot): 100 particles of
    /// SMC-IK with moves.
    pub const FIXED_BASE: Self = Self {
        particles: 100,
        root_sigma: 0.0,
        solver: SolverKind::SmcIkMoves,
    };
    /// A body with a free root (human, BVH): 200 particles, the root
    /// walking 3 mm at noise scale 1.
    pub const FREE_ROOT: Self = Self {
        particles: 200,
        root_sigma: 0.003,
        ..Self::FIXED_BASE
    };

    /// The default settings with these.
    pub fn settings(&self) -> Settings {
        let mut s = Settings::default();
        s.filter.particles = self.particles;
        s.noise.root_translation = self.root_sigma;
        s.filter.solver = self.solver;
        s
    }
}

impl Scene {
    /// A scene of `skeleton` starting in `initial` with position targets on
    /// `targets` (also the lever-arm rule's points), drawn in skeleton
    /// coordinates over a floor: no fixed constraints, the solver of a fixed
    /// base ([`SolverStart::FIXED_BASE`]), no warnings and no meshes. The
    /// builders override what their scene does differently.
    fn new(
        source: SceneSource,
        skeleton: Arc<Skeleton>,
        initial: Vec<f64>,
        targets: Vec<usize>,
        orbit: OrbitStart,
    ) -> Self {
        Self {
            source,
            skeleton,
            initial,
            fixed: Vec::new(),
            lever_points: targets.clone(),
            targets,
            display: Isometry3::identity(),
            floor: true,
            orbit,
            start: SolverStart::FIXED_BASE,
            warnings: Vec::new(),
            meshes: Arc::default(),
        }
    }

    /// The constraint groups whose σ the user can tune in this scene:
    /// position targets always, every group of a fixed constraint, and the
    /// floor's when feet "stay" targets (which share the floor's σ) exist.
    pub fn constraint_groups(&self) -> Vec<ConstraintGroup> {
        ConstraintGroup::ALL
            .into_iter()
            .filter(|g| {
                *g == ConstraintGroup::Position
                    || self.fixed.iter().any(|c| c.group == *g)
                    || (*g == ConstraintGroup::Floor
                        && self
                            .fixed
                            .iter()
                            .any(|c| c.group == ConstraintGroup::Position))
            })
            .collect()
    }

    /// Builds `source`; a URDF's `package://` meshes are searched in its
    /// own folder and the folders above it.
    pub fn build(source: &SceneSource) -> Result<Self> {
        Self::build_with(source, &[])
    }

    /// As [`Scene::build`], searching `package_paths` (`--package-path`)
    /// first for a URDF's `package://` meshes ([`skeleton::mesh`]).
    pub fn build_with(source: &SceneSource, package_paths: &[PathBuf]) -> Result<Self> {
        match source {
            SceneSource::Human => human(),
            SceneSource::Arm => Ok(chain_scene(source.clone(), presets::arm4(), false)),
            SceneSource::Chain => Ok(chain_scene(source.clone(), presets::chain(30, 3.0), true)),
            SceneSource::Hand => hand(),
            SceneSource::Urdf(path) => urdf(path, package_paths),
            SceneSource::Bvh { path, frame } => bvh(path, *frame),
        }
    }
}

fn human() -> Result<Scene> {
    let skeleton = Arc::new(presets::human());
    let initial = skeleton.rest_pose();
    let rest = skeleton.forward_kinematics(&initial)?;
    let problem = HumanProblem::new(&skeleton)?;
    let mut fixed = Vec::new();
    for (k, name) in HUMAN_FEET.iter().enumerate() {
        fixed.push(FixedConstraint {
            group: ConstraintGroup::Floor,
            label: format!("floor: {name}"),
            kind: problem.floor(k),
        });
        // The feet stay where they stand (no sliding): the SMC-IK §6.3 setup.
        fixed.push(FixedConstraint {
            group: ConstraintGroup::Position,
            label: format!("stay: {name}"),
            kind: problem.stay(k),
        });
    }
    let head = skeleton.find("head")?;
    fixed.push(FixedConstraint {
        group: ConstraintGroup::Orientation,
        label: "upright: head".into(),
        kind: ConstraintKind::Orientation {
            joint: head,
            target: rest[head].rotation,
        },
    });
    let orbit = OrbitStart {
        focus: Vector3::new(0.0, 0.95, 0.0),
        distance: 3.6,
    };
    let hands = problem.hands.to_vec();
    Ok(Scene {
        fixed,
        start: SolverStart::FREE_ROOT,
        ..Scene::new(SceneSource::Human, skeleton, initial, hands, orbit)
    })
}

/// The arm (4 segments, one target) or the 90-DOF chain (centre of mass on
/// a vertical line and Eq. 16 smoothness, SMC-IK §6.2 Fig. 4), mounted
/// at 1.6 m so the floor is below it.
fn chain_scene(source: SceneSource, skeleton: Skeleton, extras: bool) -> Scene {
    let skeleton = Arc::new(skeleton);
    let mut initial = skeleton.rest_pose();
    // Start bent a little so the first drag is not at the singular straight pose.
    for j in 0..skeleton.len() {
        if matches!(skeleton.joint(j).kind, JointKind::Ball(_)) {
            let r = skeleton.param_range(j);
            initial[r.start + 2] = 0.12 / (skeleton.len() as f64 / 5.0).max(1.0);
        }
    }
    let tip = skeleton.find("tip").expect("chain presets have a tip");
    let mut fixed = Vec::new();
    if extras {
        // The vertical line through the starting centre of mass.
        let world = skeleton
            .forward_kinematics(&initial)
            .expect("the chain's initial pose is valid");
        let com = skeleton.centre_of_mass(&world);
        fixed.push(FixedConstraint {
            group: ConstraintGroup::CentreOfMass,
            label: format!("centre of mass on x = {:.2}, z = {:.2}", com.x, com.z),
            kind: ConstraintKind::CentreOfMass {
                target: com,
                axes: [true, false, true],
            },
        });
        let joints: Vec<usize> = (0..skeleton.len())
            .filter(|&j| skeleton.joint(j).kind.dof() > 0)
            .collect();
        fixed.push(FixedConstraint {
            group: ConstraintGroup::Smoothness,
            label: "smoothness (Eq. 16, k = 2)".into(),
            kind: ConstraintKind::Smoothness { joints, k: 2 },
        });
    }
    let orbit = OrbitStart {
        focus: Vector3::new(0.0, 1.4, 0.0),
        distance: 5.5,
    };
    Scene {
        fixed,
        display: Translation3::new(-1.5, 1.6, 0.0).into(),
        start: SolverStart {
            particles: if extras { 100 } else { 50 },
            // The chain's smoothness term has no analytic Jacobian:
            // per-particle DLS moves would difference 90 parameters. The
            // paper's filter is cheap here (SMC-IK §6.2 runs it in real
            // time).
            solver: if extras {
                SolverKind::SmcIk
            } else {
                SolverKind::SmcIkMoves
            },
            ..SolverStart::FIXED_BASE
        },
        ..Scene::new(source, skeleton, initial, vec![tip], orbit)
    }
}

fn hand() -> Result<Scene> {
    let skeleton = Arc::new(presets::hand());
    let initial = skeleton.rest_pose();
    let fingers = ["thumb", "index", "middle", "ring", "little"];
    let mut tips = Vec::new();
    for f in fingers {
        tips.push(skeleton.find(&format!("{f}_tip"))?);
    }
    let mut fixed = Vec::new();
    // The distal joint follows the middle one (2/3 of its flexion), as real
    // fingers do (ik_hand's coupling).
    for f in &fingers[1..] {
        let mid = skeleton.param_range(skeleton.find(&format!("{f}_mid"))?);
        let dist = skeleton.param_range(skeleton.find(&format!("{f}_dist"))?);
        fixed.push(FixedConstraint {
            group: ConstraintGroup::Coupled,
            label: format!("coupled: {f} dist = 2/3 mid"),
            kind: ConstraintKind::Coupled {
                param_a: mid.start,
                param_b: dist.start,
                ratio: 2.0 / 3.0,
            },
        });
    }
    let orbit = OrbitStart {
        focus: Vector3::new(0.0, 1.05, 0.0),
        distance: 1.1,
    };
    Ok(Scene {
        fixed,
        display: Translation3::new(0.0, 1.3, 0.0).into(),
        ..Scene::new(SceneSource::Hand, skeleton, initial, tips, orbit)
    })
}

fn urdf(path: &Path, package_paths: &[PathBuf]) -> Result<Scene> {
    let import = skeleton::import_urdf(path)?;
    let skeleton = import.skeleton;
    // Meshes that cannot be loaded are warnings: their links keep capsules.
    let meshes = VisualMeshes::load(&skeleton, &PackageResolver::new(path, package_paths));
    let warnings: Vec<String> = import
        .warnings
        .iter()
        .map(ToString::to_string)
        .chain(
            meshes
                .warnings
                .iter()
                .map(|w| format!("{}: {w}", path.display())),
        )
        .collect();
    for w in &warnings {
        eprintln!("posecloud: warning: {w}");
    }
    if skeleton.dof() == 0 {
        bail!("{}: the robot has no movable joint", path.display());
    }
    let leaves = skeleton.leaves();
    let tip = *leaves
        .last()
        .with_context(|| format!("{}: no links", path.display()))?;
    let skeleton = Arc::new(skeleton);
    let initial = skeleton.rest_pose();
    let world = skeleton.forward_kinematics(&initial)?;
    // URDF is z up, the display y up: a −90° turn about x maps z to y.
    let display_rotation =
        UnitQuaternion::from_axis_angle(&Vector3::x_axis(), -std::f64::consts::FRAC_PI_2);
    let orbit = framing(&world);
    let orbit = OrbitStart {
        focus: display_rotation * orbit.focus,
        ..orbit
    };
    let source = SceneSource::Urdf(path.to_path_buf());
    Ok(Scene {
        display: Isometry3::from_parts(Translation3::identity(), display_rotation),
        warnings,
        meshes: Arc::new(meshes),
        ..Scene::new(source, skeleton, initial, vec![tip], orbit)
    })
}

fn bvh(path: &Path, frame: usize) -> Result<Scene> {
    let clip = Bvh::load(path)?;
    if frame >= clip.frames.len() {
        bail!(
            "{}: frame {frame} out of range (the clip has {} frames)",
            path.display(),
            clip.frames.len()
        );
    }
    let skeleton = Arc::new(clip.skeleton.clone());
    let initial = clip.frames.pose(frame).to_vec();
    let world = skeleton.forward_kinematics(&initial)?;
    // Targets on the end sites of the limbs and head, at most six.
    let mut targets: Vec<usize> = skeleton.leaves();
    targets.truncate(6);
    let source = SceneSource::Bvh {
        path: path.to_path_buf(),
        frame,
    };
    Ok(Scene {
        start: SolverStart::FREE_ROOT,
        ..Scene::new(source, skeleton, initial, targets, framing(&world))
    })
}

/// Centre and a camera distance that frame every joint.
fn framing(world: &[Isometry3<f64>]) -> OrbitStart {
    let mut lo = Vector3::repeat(f64::INFINITY);
    let mut hi = Vector3::repeat(f64::NEG_INFINITY);
    for w in world {
        lo = lo.inf(&w.translation.vector);
        hi = hi.sup(&w.translation.vector);
    }
    let centre = (lo + hi) / 2.0;
    let size = (hi - lo).norm().max(0.3);
    OrbitStart {
        focus: centre,
        distance: 1.6 * size,
    }
}

/// A scene constraint with its group's σ.
pub fn fixed_constraint(c: &FixedConstraint, sigma: f64) -> Constraint {
    Constraint::new(c.kind.clone(), Noise::Isotropic(sigma))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_scene_builds_with_targets_inside_limits() {
        for name in SCENE_NAMES {
            let scene = Scene::build(&SceneSource::from_name(name).unwrap()).unwrap();
            assert!(!scene.targets.is_empty(), "{name}");
            assert!(scene.skeleton.within_limits(&scene.initial), "{name}");
        }
    }

    #[test]
    fn unknown_scene_and_bad_files_are_errors() {
        let e = SceneSource::from_name("robot").unwrap_err().to_string();
        assert!(e.contains("unknown scene 'robot'"), "{e}");
        let e = Scene::build(&SceneSource::Urdf("/nonexistent.urdf".into()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("nonexistent.urdf"), "{e}");
        let e = Scene::build(&SceneSource::Bvh {
            path: "../../assets/motions/cmu_131_01_walk.bvh".into(),
            frame: 1_000_000,
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("out of range"), "{e}");
    }

    #[test]
    fn a_urdf_scene_lists_what_the_importer_adjusted() {
        let dir = crate::testing::scratch_dir("scene");
        let path = dir.join("mimic.urdf");
        std::fs::write(
            &path,
            r#"<robot name="r">
  <link name="base"/>
  <link name="a"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
    <limit lower="-1e16" upper="1e16" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0 0 0.5"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/><mimic joint="j1" multiplier="2"/></joint>
</robot>"#,
        )
        .unwrap();
        let scene = Scene::build(&SceneSource::Urdf(path.clone())).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(scene.warnings.len(), 2, "{:#?}", scene.warnings);
        assert!(
            scene.warnings.iter().any(|w| w.contains("mimic")),
            "{:#?}",
            scene.warnings
        );
        assert!(
            scene.warnings.iter().all(|w| w.contains("mimic.urdf:")),
            "{:#?}",
            scene.warnings
        );
        // The presets need no adjustment.
        assert!(Scene::build(&SceneSource::Arm).unwrap().warnings.is_empty());
    }

    /// The committed Panda: every link's STL found beside the URDF
    /// (`package://franka_description/…`), no warning; a copy of the URDF
    /// elsewhere finds them through a package path, and without one lists
    /// each missing mesh and keeps the links' capsules.
    #[test]
    fn the_panda_loads_its_meshes_and_a_missing_mesh_is_a_warning() {
        let panda = Path::new("../../assets/robots/panda/panda.urdf");
        let scene = Scene::build(&SceneSource::Urdf(panda.into())).unwrap();
        assert!(scene.warnings.is_empty(), "{:#?}", scene.warnings);
        let loaded: usize = scene.meshes.meshes.iter().flatten().flatten().count();
        assert_eq!(loaded, 8);
        assert!(!scene.meshes.failed.contains(&true));
        let dir = crate::testing::scratch_dir("panda");
        let copy = dir.join("panda.urdf");
        std::fs::copy(panda, &copy).unwrap();
        let lost = Scene::build(&SceneSource::Urdf(copy.clone())).unwrap();
        let found = Scene::build_with(
            &SceneSource::Urdf(copy.clone()),
            &[PathBuf::from("../../assets/robots/panda")],
        )
        .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(lost.warnings.len(), 8, "{:#?}", lost.warnings);
        assert!(
            lost.warnings[0].contains("package://franka_description/meshes/collision/link0.stl")
                && lost.warnings[0].contains("panda.urdf"),
            "{}",
            lost.warnings[0]
        );
        assert!(lost.meshes.failed.iter().filter(|&&f| f).count() == 8);
        assert!(found.warnings.is_empty(), "{:#?}", found.warnings);
    }
}

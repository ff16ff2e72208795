//! `IkScenePlugin`: the 3D view on the host's camera and floor. Lights;
//! the estimate (MAP + Eq. 15 smoothing) as solid capsules, one entity per
//! body segment, or for a URDF robot one entity per link visual (its mesh,
//! box, cylinder or sphere in the URDF colour; a link whose mesh could not
//! be loaded keeps its capsule); target markers; scene switches; the solver's errors and
//! limit violations for the panel (the host ticks the solver, which runs
//! on its own thread, see [`crate::runtime`]).

use std::collections::HashMap;

use bevy::asset::RenderAssetUsages;
use bevy::light::GlobalAmbientLight;
use bevy::mesh::{Indices, PrimitiveTopology};
use bevy::prelude::*;
use nalgebra::{Isometry3, Point3, Vector3};
use skeleton::{TriangleMesh, Visual, VisualShape};

use super::{PackagePaths, PlaygroundRes, SceneCommand, UiState, initial_settings};
use crate::gui::OrbitCamera;
use crate::gui::scene_common::{SceneSet, SolverError};
use crate::scenes::ik::mirror::SolverMirror;
use crate::scenes::ik::setup::Scene;
use crate::scenes::ik::solver::LimitViolations;

/// Colours the screenshot test looks for (sRGB, unlit: exact on screen).
pub const FLOOR_COLOUR: [f32; 3] = [0.30, 0.33, 0.36];
pub const TARGET_COLOUR: [f32; 3] = [1.0, 0.45, 0.05];
pub const BODY_COLOUR: [f32; 3] = [0.86, 0.52, 0.42];
/// A URDF visual whose file gives no colour (sRGB).
pub const VISUAL_DEFAULT_COLOUR: [f32; 4] = [0.62, 0.64, 0.67, 1.0];

pub struct IkScenePlugin;

impl Plugin for IkScenePlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(GlobalAmbientLight {
            color: Color::WHITE,
            brightness: 600.0,
            ..default()
        })
        .add_systems(Startup, (setup_world, spawn_scene).chain())
        .add_systems(
            Update,
            (
                // After the keys and the script, which send commands.
                scene_commands.in_set(SceneSet::Input).after(InputSet),
                (solver_status, sync_body, sync_targets).in_set(SceneSet::Draw),
            ),
        );
    }
}

/// The IK scene's input systems (keys, script), before its scene commands.
#[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
pub struct InputSet;

/// The IK scene's starting view of `scene`.
pub(super) fn framing(scene: &Scene) -> OrbitCamera {
    OrbitCamera::new(
        to_vec3(&scene.orbit.focus),
        scene.orbit.distance as f32,
        0.35,
        0.22,
    )
}

/// Everything that belongs to the current scene (despawned on a switch).
#[derive(Component)]
pub struct SceneEntity;

/// A solid part of the drawn estimate fixed in joint `attach`'s frame at
/// `local`: a capsule from joint to joint, or one visual of a URDF link.
#[derive(Component, Debug, Clone)]
pub struct BodySegment {
    pub attach: usize,
    pub local: Transform,
}

/// The marker of target `index`.
#[derive(Component, Debug, Clone, Copy)]
pub struct TargetMarker {
    pub index: usize,
}

/// Shared mesh and materials of target markers.
#[derive(Resource)]
pub struct TargetAssets {
    mesh: Handle<Mesh>,
    material: Handle<StandardMaterial>,
    selected: Handle<StandardMaterial>,
}

pub fn to_vec3(v: &Vector3<f64>) -> Vec3 {
    Vec3::new(v.x as f32, v.y as f32, v.z as f32)
}

pub fn to_transform(iso: &Isometry3<f64>) -> Transform {
    let q = iso.rotation.quaternion();
    Transform {
        translation: to_vec3(&iso.translation.vector),
        rotation: Quat::from_xyzw(q.i as f32, q.j as f32, q.k as f32, q.w as f32).normalize(),
        scale: Vec3::ONE,
    }
}

/// Display coordinates of a skeleton-frame point.
pub fn display_point(p: &SolverMirror, x: &Point3<f64>) -> Vec3 {
    to_vec3(&(p.display() * x).coords)
}

/// Skeleton-frame point of a display-coordinates point.
pub fn skeleton_point(p: &SolverMirror, x: Vec3) -> Point3<f64> {
    p.display()
        .inverse_transform_point(&Point3::new(x.x as f64, x.y as f64, x.z as f64))
}

fn setup_world(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    commands.spawn((
        DirectionalLight {
            illuminance: 7000.0,
            shadow_maps_enabled: false,
            ..default()
        },
        Transform::from_xyz(3.0, 6.0, 4.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    commands.spawn((
        DirectionalLight {
            illuminance: 2000.0,
            shadow_maps_enabled: false,
            ..default()
        },
        Transform::from_xyz(-4.0, 2.0, -3.0).looking_at(Vec3::ZERO, Vec3::Y),
    ));
    let [r, g, b] = TARGET_COLOUR;
    commands.insert_resource(TargetAssets {
        mesh: meshes.add(Sphere::new(1.0)),
        material: materials.add(StandardMaterial {
            base_color: Color::srgb(r, g, b),
            unlit: true,
            ..default()
        }),
        selected: materials.add(StandardMaterial {
            base_color: Color::srgb(1.0, 0.9, 0.2),
            unlit: true,
            ..default()
        }),
    });
}

/// Size of the skeleton at its initial pose (m), for marker and bone radii.
fn skeleton_size(p: &SolverMirror) -> f32 {
    let world = p.estimate_world();
    let mut lo = Vector3::repeat(f64::INFINITY);
    let mut hi = Vector3::repeat(f64::NEG_INFINITY);
    for w in world {
        lo = lo.inf(&w.translation.vector);
        hi = hi.sup(&w.translation.vector);
    }
    ((hi - lo).norm() as f32).max(0.2)
}

/// Radius of the marker of a target on `joint`: a fixed fraction of the
/// body's size, and never hidden inside the capsules that meet at the joint.
pub fn marker_radius(p: &SolverMirror, joint: usize) -> f32 {
    let skel = p.skeleton();
    let mut r = (0.018 * skeleton_size(p)).clamp(0.008, 0.05);
    let own = skel.joint(joint);
    let parent = own.parent.map(|q| skel.joint(q));
    for j in [Some(own), parent].into_iter().flatten() {
        if let Some(b) = &j.body {
            r = r.max(1.25 * b.capsule.radius as f32);
        }
    }
    r
}

/// Spawns the body segments of the first scene.
fn spawn_scene(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    pg: Res<PlaygroundRes>,
) {
    spawn_segments(&mut commands, &mut meshes, &mut materials, &pg.0);
}

/// One entity per body segment of `p`'s skeleton: the visuals of a link
/// that has them (all its meshes loaded), else its capsule (per bone when
/// the skeleton has no bodies, as BVH files give).
fn spawn_segments(
    commands: &mut Commands,
    meshes: &mut Assets<Mesh>,
    materials: &mut Assets<StandardMaterial>,
    p: &SolverMirror,
) {
    let skel = p.skeleton();
    let [r, g, b] = BODY_COLOUR;
    let material = materials.add(StandardMaterial {
        base_color: Color::srgb(r, g, b),
        perceptual_roughness: 0.7,
        ..default()
    });
    let has_bodies = skel.joints().iter().any(|j| j.body.is_some());
    let bone_radius = (0.012 * skeleton_size(p)).clamp(0.006, 0.03);
    let mut segments: Vec<(usize, Vector3<f64>, Vector3<f64>, f64)> = Vec::new();
    let visuals = &p.scene.meshes;
    let mut visual_materials = HashMap::new();
    for (j, joint) in skel.joints().iter().enumerate() {
        let drawn = !joint.visuals.is_empty() && !visuals.failed.get(j).copied().unwrap_or(true);
        if drawn {
            for (k, visual) in joint.visuals.iter().enumerate() {
                let mesh = visuals
                    .meshes
                    .get(j)
                    .and_then(|m| m.get(k))
                    .and_then(|m| m.as_deref());
                let Some((mesh, local)) = visual_mesh(visual, mesh) else {
                    continue;
                };
                let rgba = visual.rgba.unwrap_or(VISUAL_DEFAULT_COLOUR);
                let material = visual_materials
                    .entry(rgba.map(f32::to_bits))
                    .or_insert_with(|| materials.add(visual_material(rgba)))
                    .clone();
                commands.spawn((
                    Mesh3d(meshes.add(mesh)),
                    MeshMaterial3d(material),
                    Transform::default(),
                    BodySegment { attach: j, local },
                    SceneEntity,
                ));
            }
            continue;
        }
        if has_bodies {
            if let Some(body) = &joint.body {
                segments.push((j, body.capsule.start, body.capsule.end, body.capsule.radius));
            }
        } else if let Some(parent) = joint.parent
            && joint.offset.norm() > 1e-6
        {
            segments.push((parent, Vector3::zeros(), joint.offset, bone_radius as f64));
        }
    }
    for (attach, a, b, radius) in segments {
        let (a, b) = (to_vec3(&a), to_vec3(&b));
        let length = a.distance(b);
        let rotation = if length > 1e-6 {
            Quat::from_rotation_arc(Vec3::Y, (b - a) / length)
        } else {
            Quat::IDENTITY
        };
        let local = Transform {
            translation: (a + b) / 2.0,
            rotation,
            scale: Vec3::ONE,
        };
        commands.spawn((
            Mesh3d(meshes.add(Capsule3d::new(radius as f32, length))),
            MeshMaterial3d(material.clone()),
            Transform::default(),
            BodySegment { attach, local },
            SceneEntity,
        ));
    }
}

/// The Bevy mesh of a visual and its place in the joint frame (URDF
/// cylinders and capsules lie along z, Bevy's along y; a mesh carries its
/// `scale`). `None` for a mesh visual without loaded triangles.
fn visual_mesh(visual: &Visual, loaded: Option<&TriangleMesh>) -> Option<(Mesh, Transform)> {
    let z_axis = Transform::from_rotation(Quat::from_rotation_x(std::f32::consts::FRAC_PI_2));
    let (mesh, shape) = match &visual.shape {
        VisualShape::Box { size } => (Cuboid::from_size(to_vec3(size)).into(), Transform::IDENTITY),
        VisualShape::Sphere { radius } => (
            Sphere::new(*radius as f32).mesh().build(),
            Transform::IDENTITY,
        ),
        VisualShape::Cylinder { radius, length } => {
            (Cylinder::new(*radius as f32, *length as f32).into(), z_axis)
        }
        VisualShape::Capsule { radius, length } => (
            Capsule3d::new(*radius as f32, *length as f32).into(),
            z_axis,
        ),
        VisualShape::Mesh { scale, .. } => (
            triangle_mesh(loaded?),
            Transform::from_scale(to_vec3(scale)),
        ),
    };
    Some((mesh, to_transform(&visual.origin) * shape))
}

/// A Bevy mesh of loaded triangles.
fn triangle_mesh(t: &TriangleMesh) -> Mesh {
    Mesh::new(
        PrimitiveTopology::TriangleList,
        RenderAssetUsages::RENDER_WORLD,
    )
    .with_inserted_attribute(Mesh::ATTRIBUTE_POSITION, t.positions.clone())
    .with_inserted_attribute(Mesh::ATTRIBUTE_NORMAL, t.normals.clone())
    .with_inserted_indices(Indices::U32(t.indices.clone()))
}

/// The lit material of a URDF colour (written as display values, as rviz
/// shows them); translucent when alpha < 1.
fn visual_material(rgba: [f32; 4]) -> StandardMaterial {
    let [r, g, b, a] = rgba;
    StandardMaterial {
        base_color: Color::srgba(r, g, b, a),
        perceptual_roughness: 0.6,
        alpha_mode: if a < 1.0 {
            AlphaMode::Blend
        } else {
            AlphaMode::Opaque
        },
        ..default()
    }
}

/// Handles the scene commands of the panels, keys and scripts: pause,
/// single step, reset, and loading a scene (on failure the old scene stays
/// and the error is shown).
#[allow(clippy::too_many_arguments)]
fn scene_commands(
    mut requests: MessageReader<SceneCommand>,
    mut commands: Commands,
    mut ui: ResMut<UiState>,
    mut pg: ResMut<PlaygroundRes>,
    old: Query<Entity, With<SceneEntity>>,
    mut camera: Query<(&mut OrbitCamera, &mut Transform)>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    package_paths: Res<PackagePaths>,
) {
    let mut load = None;
    for r in requests.read() {
        match r {
            SceneCommand::Load(source) => load = Some(source.clone()),
            SceneCommand::Reset => {
                pg.0.reset();
                ui.max_violations = LimitViolations::default();
            }
            SceneCommand::SingleStep => pg.0.single_step(),
            SceneCommand::TogglePause => {
                let paused = pg.0.paused();
                pg.0.set_paused(!paused);
            }
        }
    }
    let Some(source) = load else {
        return;
    };
    let pacing = pg.0.pacing();
    let built = Scene::build_with(&source, &package_paths.0).and_then(|scene| {
        let settings = initial_settings(&scene, None, None);
        SolverMirror::new(scene, settings, pacing)
    });
    match built {
        Ok(p) => {
            for e in &old {
                commands.entity(e).despawn();
            }
            pg.0 = p;
            ui.error = None;
            ui.selected_target = None;
            ui.max_violations = LimitViolations::default();
            if let Ok((mut orbit, mut t)) = camera.single_mut() {
                let framing = framing(&pg.0.scene);
                *orbit = OrbitCamera {
                    screen_offset: orbit.screen_offset,
                    aspect: orbit.aspect,
                    ..framing
                };
                *t = orbit.transform();
            }
            spawn_segments(&mut commands, &mut meshes, &mut materials, &pg.0);
        }
        Err(e) => ui.fail(&format!("loading {}", source.label()), &e),
    }
}

/// The solver's new errors for the panel, and the worst limit violations
/// since the scene started.
fn solver_status(
    pg: Res<PlaygroundRes>,
    mut ui: ResMut<UiState>,
    mut errors: MessageReader<SolverError>,
) {
    for SolverError(e) in errors.read() {
        ui.error = Some(format!("solver: {e}"));
    }
    ui.max_violations = ui.max_violations.max(pg.0.snapshot().data.violations);
}

/// Places the solid body at the drawn estimate.
fn sync_body(pg: Res<PlaygroundRes>, mut segments: Query<(&BodySegment, &mut Transform)>) {
    let p = &pg.0;
    let display = p.display();
    let world = p.estimate_world();
    for (seg, mut t) in &mut segments {
        if let Some(w) = world.get(seg.attach) {
            *t = to_transform(&(display * w)) * seg.local;
        }
    }
}

/// Keeps one marker per target, at the target.
fn sync_targets(
    mut commands: Commands,
    pg: Res<PlaygroundRes>,
    ui: Res<UiState>,
    assets: Res<TargetAssets>,
    mut markers: Query<(
        Entity,
        &TargetMarker,
        &mut Transform,
        &mut MeshMaterial3d<StandardMaterial>,
    )>,
) {
    let p = &pg.0;
    let targets = p.targets();
    if markers.iter().count() != targets.len() {
        for (e, ..) in &markers {
            commands.entity(e).despawn();
        }
        for (index, t) in targets.iter().enumerate() {
            commands.spawn((
                Mesh3d(assets.mesh.clone()),
                MeshMaterial3d(assets.material.clone()),
                Transform::from_translation(display_point(p, &t.position))
                    .with_scale(Vec3::splat(marker_radius(p, t.joint))),
                TargetMarker { index },
                SceneEntity,
            ));
        }
        return;
    }
    for (_, m, mut tr, mut mat) in &mut markers {
        if let Some(t) = targets.get(m.index) {
            tr.translation = display_point(p, &t.position);
            tr.scale = Vec3::splat(marker_radius(p, t.joint));
            let want = if ui.selected_target == Some(m.index) {
                &assets.selected
            } else {
                &assets.material
            };
            if mat.0 != *want {
                mat.0 = want.clone();
            }
        }
    }
}

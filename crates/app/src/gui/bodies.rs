//! Solid bodies for every scene window: a scene records, each frame, the
//! limbs of its estimate (drawn as shaded capsules, like the IK
//! playground's body) and of the ground truth (a translucent ghost) in
//! [`Bodies`]; [`BodiesPlugin`] places a pool of cylinder and sphere
//! entities on them (no entity is spawned or despawned while the counts
//! stay the same).

use bevy::light::GlobalAmbientLight;
use bevy::prelude::*;

use super::scene_common::SceneSet;

/// The estimate's colour (sRGB).
pub const SOLID_COLOUR: [f32; 3] = [1.0, 0.45, 0.05];
/// The ghost's colour and opacity.
pub const GHOST_RGBA: [f32; 4] = [0.95, 0.95, 0.95, 0.35];

/// A limb: a capsule from `a` to `b` (world coordinates, metres).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limb {
    pub a: Vec3,
    pub b: Vec3,
    pub radius: f32,
}

/// What the scene's bodies look like this frame (filled by the scene's
/// drawing system in [`SceneSet::Draw`]).
#[derive(Resource, Default, Debug)]
pub struct Bodies {
    /// The estimate, solid.
    pub solid: Vec<Limb>,
    /// The ground truth, a translucent ghost.
    pub ghost: Vec<Limb>,
}

impl Bodies {
    pub fn clear(&mut self) {
        self.solid.clear();
        self.ghost.clear();
    }

    /// Adds the `bones` (pairs of indices into `points`) as limbs of
    /// `radius`: solid, or the ghost. Bones with a non-finite end or of
    /// zero length are left out.
    pub fn add_skeleton(
        &mut self,
        ghost: bool,
        points: &[[f32; 3]],
        bones: &[(usize, usize)],
        radius: f32,
    ) {
        let out = if ghost {
            &mut self.ghost
        } else {
            &mut self.solid
        };
        for &(i, j) in bones {
            let (Some(a), Some(b)) = (points.get(i), points.get(j)) else {
                continue;
            };
            let (a, b) = (Vec3::from_array(*a), Vec3::from_array(*b));
            if a.is_finite() && b.is_finite() && a.distance(b) > 1e-4 {
                out.push(Limb { a, b, radius });
            }
        }
    }
}

/// Places [`Bodies`] as shaded entities (and lights the view).
pub struct BodiesPlugin;

impl Plugin for BodiesPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<Bodies>()
            .insert_resource(GlobalAmbientLight {
                color: Color::WHITE,
                brightness: 600.0,
                ..default()
            })
            .add_systems(Startup, setup)
            .add_systems(Update, place.in_set(SceneSet::Place));
    }
}

/// The shared meshes and materials, and the entity pools.
#[derive(Resource)]
struct BodyAssets {
    cylinder: Handle<Mesh>,
    sphere: Handle<Mesh>,
    solid: Handle<StandardMaterial>,
    ghost: Handle<StandardMaterial>,
    /// Cylinders and spheres of the solid body and of the ghost.
    pools: [Vec<Entity>; 4],
}

fn setup(
    mut commands: Commands,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
) {
    for (illuminance, from) in [
        (7000.0, Vec3::new(3.0, 6.0, 4.0)),
        (2000.0, Vec3::new(-4.0, 2.0, -3.0)),
    ] {
        commands.spawn((
            DirectionalLight {
                illuminance,
                shadow_maps_enabled: false,
                ..default()
            },
            Transform::from_translation(from).looking_at(Vec3::ZERO, Vec3::Y),
        ));
    }
    let [r, g, b] = SOLID_COLOUR;
    let [gr, gg, gb, ga] = GHOST_RGBA;
    commands.insert_resource(BodyAssets {
        cylinder: meshes.add(Cylinder::new(1.0, 1.0)),
        sphere: meshes.add(Sphere::new(1.0)),
        solid: materials.add(StandardMaterial {
            base_color: Color::srgb(r, g, b),
            perceptual_roughness: 0.7,
            ..default()
        }),
        ghost: materials.add(StandardMaterial {
            base_color: Color::srgba(gr, gg, gb, ga),
            alpha_mode: AlphaMode::Blend,
            unlit: true,
            ..default()
        }),
        pools: Default::default(),
    });
}

/// The transforms of a limb's cylinder and of its two end spheres.
fn limb_transforms(l: &Limb) -> [Transform; 3] {
    let axis = l.b - l.a;
    let length = axis.length();
    let rotation = Quat::from_rotation_arc(Vec3::Y, axis / length);
    [
        Transform {
            translation: (l.a + l.b) * 0.5,
            rotation,
            scale: Vec3::new(l.radius, length, l.radius),
        },
        Transform::from_translation(l.a).with_scale(Vec3::splat(l.radius)),
        Transform::from_translation(l.b).with_scale(Vec3::splat(l.radius)),
    ]
}

fn place(
    mut commands: Commands,
    bodies: Res<Bodies>,
    assets: Option<ResMut<BodyAssets>>,
    mut placed: Query<(&mut Transform, &mut Visibility)>,
    mut wanted: Local<[Vec<Transform>; 2]>,
) {
    let Some(mut assets) = assets else {
        return;
    };
    let assets = &mut *assets;
    for (k, limbs) in [&bodies.solid, &bodies.ghost].into_iter().enumerate() {
        let material = if k == 0 { &assets.solid } else { &assets.ghost };
        let (cylinders, spheres) = {
            let [a, b, c, d] = &mut assets.pools;
            if k == 0 { (a, b) } else { (c, d) }
        };
        // Reused from frame to frame.
        wanted[0].clear();
        wanted[1].clear();
        for l in limbs {
            let [c, a, b] = limb_transforms(l);
            wanted[0].push(c);
            // One sphere per joint (overlapping translucent spheres would
            // blotch the ghost).
            for end in [a, b] {
                if !wanted[1]
                    .iter()
                    .any(|t| t.translation.distance(end.translation) < 1e-4)
                {
                    wanted[1].push(end);
                }
            }
        }
        for (pool, mesh, transforms) in [
            (cylinders, &assets.cylinder, &wanted[0]),
            (spheres, &assets.sphere, &wanted[1]),
        ] {
            while pool.len() < transforms.len() {
                pool.push(
                    commands
                        .spawn((
                            Mesh3d(mesh.clone()),
                            MeshMaterial3d(material.clone()),
                            Transform::default(),
                            Visibility::Hidden,
                        ))
                        .id(),
                );
            }
            for (i, &e) in pool.iter().enumerate() {
                match (transforms.get(i), placed.get_mut(e)) {
                    (Some(t), Ok((mut tr, mut vis))) => {
                        *tr = *t;
                        vis.set_if_neq(Visibility::Inherited);
                    }
                    (None, Ok((_, mut vis))) => {
                        vis.set_if_neq(Visibility::Hidden);
                    }
                    // Spawned this frame: placed from the next one.
                    (Some(t), Err(_)) => {
                        commands.entity(e).insert((*t, Visibility::Inherited));
                    }
                    (None, Err(_)) => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limb_spans_its_two_points() {
        let l = Limb {
            a: Vec3::new(0.0, 1.0, 0.0),
            b: Vec3::new(0.3, 1.0, 0.4),
            radius: 0.05,
        };
        let [c, a, b] = limb_transforms(&l);
        // The unit cylinder's ends (±0.5 along y) land on a and b.
        let top = c.transform_point(Vec3::new(0.0, 0.5, 0.0));
        let bottom = c.transform_point(Vec3::new(0.0, -0.5, 0.0));
        assert!(top.distance(l.b) < 1e-5, "{top}");
        assert!(bottom.distance(l.a) < 1e-5, "{bottom}");
        // Its radius is the limb's, across the axis.
        let side = c.transform_point(Vec3::X);
        assert!((side.distance(c.translation) - 0.05).abs() < 1e-5);
        assert_eq!(a.translation, l.a);
        assert_eq!(b.scale, Vec3::splat(0.05));
    }

    #[test]
    fn bones_with_a_missing_or_bad_end_are_left_out() {
        let mut bodies = Bodies::default();
        let points = [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [f32::NAN, 0.0, 0.0]];
        bodies.add_skeleton(false, &points, &[(0, 1), (1, 2), (0, 7), (0, 0)], 0.04);
        bodies.add_skeleton(true, &points, &[(0, 1)], 0.04);
        assert_eq!(bodies.solid.len(), 1);
        assert_eq!(bodies.ghost.len(), 1);
        bodies.clear();
        assert!(bodies.solid.is_empty() && bodies.ghost.is_empty());
    }
}

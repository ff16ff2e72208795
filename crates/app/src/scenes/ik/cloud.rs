//! `ParticleCloudPlugin`: all N particle poses, each as its bones (parent →
//! child joint segments), coloured by normalised weight with viridis and
//! more opaque when heavier.
//!
//! **One batched pass.** The segments go through Bevy's gizmo line
//! pipeline in their own [`ParticleCloudGizmos`] group: every frame the
//! segment end points and colours are written into one buffer, which the
//! renderer uploads as an instance buffer (`VertexStepMode::Instance`, one
//! instance per segment) and draws with one instanced draw call. No ECS
//! entity exists per particle or segment. Particles are written lightest
//! first so the heavy, opaque ones blend on top.

use bevy::prelude::*;

use super::PlaygroundRes;
use super::view::to_transform;
use crate::gui::cloud_budget::CloudPainter;
use crate::gui::line_gizmos;
use crate::gui::scene_common::SceneSet;

/// The gizmo group of the particle cloud (its own line width and depth
/// bias, independent of other gizmos).
#[derive(Default, Reflect, GizmoConfigGroup)]
pub struct ParticleCloudGizmos;

pub struct ParticleCloudPlugin;

impl Plugin for ParticleCloudPlugin {
    fn build(&self, app: &mut App) {
        // On top of the solid body: particles near the estimate lie inside
        // its capsules and would otherwise be hidden.
        app.insert_gizmo_config(ParticleCloudGizmos, line_gizmos(2.0, -1.0))
            .init_resource::<CloudScratch>()
            .add_systems(Update, draw_cloud.in_set(SceneSet::Draw));
    }
}

/// The skeleton's bones (parent, child), rebuilt only when the skeleton
/// changes.
#[derive(Resource, Default)]
struct CloudScratch {
    bones: Vec<(usize, usize)>,
    bones_of: Option<std::sync::Weak<skeleton::Skeleton>>,
}

fn draw_cloud(
    pg: Res<PlaygroundRes>,
    mut painter: CloudPainter,
    mut scratch: ResMut<CloudScratch>,
    mut gizmos: Gizmos<ParticleCloudGizmos>,
) {
    let p = &pg.0;
    let Some((positions, weights, joints)) = p.cloud() else {
        painter.report(0);
        return;
    };
    let skel = p.skeleton();
    let display = to_transform(&p.display());
    let scratch = &mut *scratch;
    let current = std::sync::Arc::downgrade(&p.scene.skeleton);
    if !scratch
        .bones_of
        .as_ref()
        .is_some_and(|w| w.ptr_eq(&current))
    {
        scratch.bones = (0..skel.len())
            .filter_map(|j| skel.joint(j).parent.map(|p| (p, j)))
            .filter(|&(_, j)| skel.joint(j).offset.norm() > 1e-9)
            .collect();
        scratch.bones_of = Some(current);
    }
    let bones = &scratch.bones;
    painter.draw(weights, |i, colour| {
        let Some(world) = positions.get(i * joints..(i + 1) * joints) else {
            return;
        };
        for &(a, c) in bones {
            let pa = display.transform_point(Vec3::from_array(world[a]));
            let pc = display.transform_point(Vec3::from_array(world[c]));
            gizmos.line(pa, pc, colour);
        }
    });
}

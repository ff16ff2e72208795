//! A plain JSON description of a [`Model`], for external reference
//! implementations (`tools/dynamics_fixtures.py` rebuilds the same model in
//! Pinocchio from it).
//!
//! ```text
//! { "nv": 59, "gravity": [gx, gy, gz],
//!   "bodies": [ { "name": "pelvis", "parent": -1, "idx_v": 0, "nv": 6,
//!                 "placement": { "R": [9 values, row-major], "p": [3] },
//!                 "joint": { "type": "freeflyer" | "spherical" | "revolute"
//!                            | "prismatic" | "swing", "axis": [3], "u": [3], "w": [3] },
//!                 "rotation": { "type": "expmap" | "euler" | "swing_twist",
//!                               "order": "ZYX", "u": [3], "w": [3], "t": [3] },
//!                 "armature": [nv values],
//!                 "inertia": { "mass": m, "com": [3], "I_com": [9, row-major] } }, … ] }
//! ```
//!
//! `placement` is the joint's frame in the parent body's frame (the world
//! frame for `parent = -1`); `inertia` is in the body's frame. `rotation`
//! says how a ball or free joint's three rotation parameters map to a
//! rotation (the skeleton's [`skeleton::BallRotation`]): `expmap` `R = exp(p)`,
//! `euler` `R = R_a0(p₀) R_a1(p₁) R_a2(p₂)`, `swing_twist`
//! `R = exp(p₀u + p₁w) · R_t(p₂)`. A swing joint's two parameters give
//! `R = exp(p₀u + p₁w)`; a free joint's first three are its translation.

use std::fmt::Write as _;

use nalgebra::{Matrix3, Vector3};
use skeleton::{BallRotation, JointKind};

use crate::model::{JointModel, Model};

fn vec3(v: &Vector3<f64>) -> String {
    format!("[{:?}, {:?}, {:?}]", v.x, v.y, v.z)
}

fn mat3(m: &Matrix3<f64>) -> String {
    let items: Vec<String> = (0..3)
        .flat_map(|r| (0..3).map(move |c| (r, c)))
        .map(|(r, c)| format!("{:?}", m[(r, c)]))
        .collect();
    format!("[{}]", items.join(", "))
}

fn ball_json(b: &BallRotation) -> String {
    match b {
        BallRotation::ExpMap { .. } => r#"{"type": "expmap"}"#.to_string(),
        BallRotation::Euler { order, .. } => {
            let axes: String = order.0.iter().map(|a| ['X', 'Y', 'Z'][a.index()]).collect();
            format!(r#"{{"type": "euler", "order": "{axes}"}}"#)
        }
        BallRotation::SwingTwist { frame, .. } => {
            let (u, w) = frame.swing_axes();
            format!(
                r#"{{"type": "swing_twist", "u": {}, "w": {}, "t": {}}}"#,
                vec3(&u),
                vec3(&w),
                vec3(&frame.twist_axis())
            )
        }
    }
}

/// The model as JSON (module docs).
pub fn model_to_json(model: &Model) -> String {
    let mut out = String::new();
    let g = model.gravity();
    let _ = write!(
        out,
        "{{\n  \"nv\": {},\n  \"gravity\": {},\n  \"bodies\": [\n",
        model.nv(),
        vec3(&g)
    );
    let skeleton = model.skeleton();
    for (b, body) in model.bodies().iter().enumerate() {
        let joint = skeleton.joint(body.joint);
        let nv = body.joint_model.nv();
        let joint_json = match &body.joint_model {
            JointModel::Revolute { axis } => {
                format!(r#"{{"type": "revolute", "axis": {}}}"#, vec3(axis))
            }
            JointModel::Prismatic { axis } => {
                format!(r#"{{"type": "prismatic", "axis": {}}}"#, vec3(axis))
            }
            JointModel::Swing { u, w } => {
                format!(r#"{{"type": "swing", "u": {}, "w": {}}}"#, vec3(u), vec3(w))
            }
            JointModel::Spherical => r#"{"type": "spherical"}"#.to_string(),
            JointModel::FreeFlyer => r#"{"type": "freeflyer"}"#.to_string(),
        };
        let rotation_json = match &joint.kind {
            JointKind::Ball(r) | JointKind::Free { rotation: r, .. } => ball_json(r),
            _ => "null".to_string(),
        };
        let armature: Vec<String> = model.armature()[body.idx_v..body.idx_v + nv]
            .iter()
            .map(|a| format!("{a:?}"))
            .collect();
        let i = &body.inertia;
        let _ = write!(
            out,
            "    {{\"name\": \"{}\", \"parent\": {}, \"idx_v\": {}, \"nv\": {},\n     \"placement\": {{\"R\": {}, \"p\": {}}},\n     \"joint\": {},\n     \"rotation\": {},\n     \"armature\": [{}],\n     \"inertia\": {{\"mass\": {:?}, \"com\": {}, \"I_com\": {}}}}}{}\n",
            joint.name.replace('"', "'"),
            body.parent.map_or(-1, |p| p as i64),
            body.idx_v,
            nv,
            mat3(&body.placement.r),
            vec3(&body.placement.p),
            joint_json,
            rotation_json,
            armature.join(", "),
            i.mass,
            vec3(&i.com()),
            mat3(&i.inertia_com()),
            if b + 1 < model.bodies().len() {
                ","
            } else {
                ""
            }
        );
    }
    out.push_str("  ]\n}\n");
    out
}

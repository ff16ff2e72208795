//! External truth: M, C, G, inverse dynamics and joint Jacobians against
//! Pinocchio on the same models, from the fixtures that
//! `tools/dynamics_fixtures.py` writes (see docs/dynamics.md to regenerate
//! them). Relative error ≤ 1e-9 in the max norm of each quantity.

mod common;

use common::{numbers, relative_error};
use dynamics::{MassSource, Model, ModelOptions};
use serde_json::Value;

const TOLERANCE: f64 = 1e-9;

fn root() -> String {
    format!("{}/../..", env!("CARGO_MANIFEST_DIR"))
}

fn check(name: &str, model: &Model) {
    let path = format!("{}/tests/fixtures/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture present");
    let fixture: Value = serde_json::from_str(&text).expect("valid JSON");
    let nv = fixture["nv"].as_u64().unwrap() as usize;
    assert_eq!(nv, model.nv(), "{name}: fixture for another model");
    let samples = fixture["samples"].as_array().unwrap();
    assert!(!samples.is_empty());
    let mut data = model.data();
    let mut worst = [0.0f64; 5];
    let mut jac = nalgebra::DMatrix::zeros(3, nv);
    let origin = nalgebra::Vector3::zeros();
    for s in samples {
        let (q, v, a) = (numbers(&s["q"]), numbers(&s["v"]), numbers(&s["a"]));
        let m = model.mass_matrix(&mut data, &q).unwrap();
        let upper: Vec<f64> = (0..nv)
            .flat_map(|i| (i..nv).map(move |j| (i, j)))
            .map(|(i, j)| m[(i, j)])
            .collect();
        let errors = [
            relative_error(&upper, &numbers(&s["M_upper"])),
            relative_error(
                model.bias_forces(&mut data, &q, &v).unwrap().as_slice(),
                &numbers(&s["C"]),
            ),
            relative_error(
                model
                    .inverse_dynamics(&mut data, &q, &v, &a)
                    .unwrap()
                    .as_slice(),
                &numbers(&s["tau"]),
            ),
            relative_error(
                model.gravity_forces(&mut data, &q).unwrap().as_slice(),
                &numbers(&s["G"]),
            ),
        ];
        for (w, e) in worst.iter_mut().zip(errors) {
            *w = w.max(e);
        }
        let probes = s["jacobians"].as_array().expect("jacobians in the fixture");
        assert!(!probes.is_empty());
        for probe in probes {
            let joint = model
                .skeleton()
                .find(probe["joint"].as_str().unwrap())
                .unwrap();
            let reference = numbers(&probe["J"]);
            let mut ours = vec![0.0; 6 * nv];
            model
                .point_jacobian(&mut data, &q, joint, &origin, &mut jac)
                .unwrap();
            for r in 0..3 {
                for c in 0..nv {
                    ours[r * nv + c] = jac[(r, c)];
                }
            }
            model
                .orientation_jacobian(&mut data, &q, joint, &mut jac)
                .unwrap();
            for r in 0..3 {
                for c in 0..nv {
                    ours[(r + 3) * nv + c] = jac[(r, c)];
                }
            }
            worst[4] = worst[4].max(relative_error(&ours, &reference));
        }
    }
    eprintln!(
        "{name}: worst relative error vs Pinocchio: M {:.1e}, C {:.1e}, tau {:.1e}, G {:.1e}, J {:.1e}",
        worst[0], worst[1], worst[2], worst[3], worst[4]
    );
    for (what, e) in ["M", "C", "tau", "G", "J"].iter().zip(worst) {
        assert!(
            e <= TOLERANCE,
            "{name}: {what} differs from Pinocchio by {e:e} (relative)"
        );
    }
}

/// [`check`] on a robot under `assets/robots/`.
fn check_robot(name: &str) {
    let path = format!("{}/assets/robots/{name}.urdf", root());
    check(name, &Model::from_urdf(path).unwrap());
}

/// [`check`] on a skeleton preset with its own masses.
fn check_preset(name: &str, skeleton: &skeleton::Skeleton) {
    check(
        name,
        &Model::from_skeleton(skeleton, MassSource::Skeleton).unwrap(),
    );
}

#[test]
fn arm6_matches_pinocchio() {
    check_robot("arm6");
}

#[test]
fn arm7_matches_pinocchio() {
    check_robot("arm7");
}

#[test]
fn human_preset_matches_pinocchio() {
    check_preset("human", &skeleton::presets::human());
}

#[test]
fn cmu_96_dof_human_matches_pinocchio() {
    let cmu =
        skeleton::Bvh::load(format!("{}/assets/motions/cmu_131_01_walk.bvh", root())).unwrap();
    check(
        "cmu",
        &Model::from_skeleton_with(&cmu.skeleton, &ModelOptions::bvh_human(70.0)).unwrap(),
    );
}

#[test]
fn branchy_urdf_matches_pinocchio() {
    let path = format!("{}/tests/fixtures/branchy.urdf", env!("CARGO_MANIFEST_DIR"));
    check("branchy", &Model::from_urdf(path).unwrap());
}

#[test]
fn hand_preset_matches_pinocchio() {
    check_preset("hand", &skeleton::presets::hand());
}

#[test]
fn rtpf_upper_body_matches_pinocchio() {
    check_preset("rtpf", &skeleton::presets::rtpf_upper_body());
}

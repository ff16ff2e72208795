//! The URDF adjustments that change a dynamics model (issue 23): a massless
//! moving subtree gets the armature `MASSLESS_ARMATURE` instead of a
//! refusal, an inertia with a tiny negative eigenvalue is clamped, a worse
//! one is used as written (as Pinocchio) while `M` stays positive definite;
//! the import's warnings travel with the model. Each test fails without
//! its adjustment.

use dynamics::{DynamicsError, Model};
use nalgebra::Vector3;
use skeleton::MASSLESS_ARMATURE;
use skeleton::UrdfAdjustment;

/// A base, a massive upper arm on a hinge, then `{CHILD}`.
fn robot(child: &str) -> String {
    format!(
        r#"<robot name="r">
  <link name="base"/>
  <link name="upper">
    <inertial>
      <origin xyz="0 0 0.2" rpy="0 0 0"/>
      <mass value="2"/>
      <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.01"/>
    </inertial>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/>
  </joint>
{child}
</robot>"#
    )
}

/// A hand on the upper arm with the given `<inertial>` body.
fn hand(inertial: &str) -> String {
    format!(
        r#"  <link name="hand">{inertial}</link>
  <joint name="wrist" type="revolute">
    <origin xyz="0 0 0.4"/>
    <parent link="upper"/><child link="hand"/><axis xyz="1 0 0"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/>
  </joint>
  <link name="thumb"/>
  <joint name="thumb_joint" type="continuous">
    <parent link="hand"/><child link="thumb"/><axis xyz="0 0 1"/>
  </joint>"#
    )
}

fn kinds(model: &Model) -> Vec<UrdfAdjustment> {
    model.warnings().iter().map(|w| w.adjustment).collect()
}

#[test]
fn a_massless_moving_subtree_gets_the_stated_armature() {
    let text = robot(&hand(""));
    let model = Model::from_urdf_str(&text, "r.urdf").unwrap();
    assert_eq!(kinds(&model), [UrdfAdjustment::MasslessSubtree]);
    let w = &model.warnings()[0];
    assert!(
        w.element == "joint 'wrist'" && w.message.contains("'thumb_joint'"),
        "{w}"
    );
    let sk = model.skeleton();
    let dof = |name: &str| sk.param_range(sk.find(name).unwrap()).start;
    let mut expected = vec![0.0; model.nv()];
    expected[dof("wrist")] = MASSLESS_ARMATURE;
    expected[dof("thumb_joint")] = MASSLESS_ARMATURE;
    assert_eq!(model.armature(), expected.as_slice());
    // M is invertible: forward dynamics answers, and inverts RNEA.
    let mut data = model.data();
    let q = vec![0.3, -0.2, 0.5];
    let v = vec![0.1, 0.4, -0.3];
    let tau = vec![0.2, 1e-7, -1e-7];
    let a = model
        .forward_dynamics(&mut data, &q, &v, &tau)
        .unwrap()
        .clone();
    assert!(a.iter().all(|x| x.is_finite()));
    let back = model
        .inverse_dynamics(&mut data, &q, &v, a.as_slice())
        .unwrap();
    assert!((back - nalgebra::DVector::from_vec(tau)).norm() < 1e-12);
    // Without the armature the same bodies are refused, naming the joint.
    let import = skeleton::import_urdf_str(&text, "r.urdf").unwrap();
    let inertias: Vec<_> = import
        .inertials
        .iter()
        .map(|i| {
            i.as_ref()
                .filter(|i| i.mass > 0.0)
                .map(|i| dynamics::Inertia::from_com(i.mass, &i.com, &i.inertia))
        })
        .collect();
    let gravity = Vector3::new(0.0, 0.0, -9.81);
    match Model::with_inertias(&import.skeleton, &inertias, gravity, 0.0) {
        Err(DynamicsError::Degenerate { joint, .. }) => assert_eq!(joint, "thumb_joint"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_massive_subtree_gets_no_armature() {
    let inertial = r#"<inertial><origin xyz="0 0 0.05"/><mass value="0.3"/><inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial>"#;
    let text = robot(&hand(inertial));
    // The thumb is massless but the hand is not: only the thumb joint.
    let model = Model::from_urdf_str(&text, "r.urdf").unwrap();
    let sk = model.skeleton();
    let thumb = sk.param_range(sk.find("thumb_joint").unwrap()).start;
    for (i, &a) in model.armature().iter().enumerate() {
        assert_eq!(a, if i == thumb { MASSLESS_ARMATURE } else { 0.0 });
    }
}

#[test]
fn a_tiny_negative_inertia_eigenvalue_is_clamped_on_a_moving_link() {
    // tiago's antenna tensor (eigenvalues (9.1, 3.5, −3.5)·1e-8 kg·m²) on
    // the hand, which moves.
    let inertial = r#"<inertial><origin xyz="0 0 0.05"/><mass value="0.3"/><inertia ixx="0.00000002371" ixy="0.00000006119" ixz="0.00000001179" iyy="0.00000002833" iyz="0.00000000774" izz="0.00000003849"/></inertial>"#;
    let model = Model::from_urdf_str(&robot(&hand(inertial)), "r.urdf").unwrap();
    let mut got = kinds(&model);
    got.sort_by_key(|k| format!("{k:?}"));
    assert_eq!(
        got,
        [
            UrdfAdjustment::InertiaClamped,
            UrdfAdjustment::MasslessSubtree
        ]
    );
    let hand = model.bodies()[model.frames()[model.skeleton().find("wrist").unwrap()]
        .body
        .unwrap()]
    .inertia
    .inertia_com();
    let eig = hand.symmetric_eigenvalues();
    assert!(eig.min() > -1e-20, "{eig:?}");
}

#[test]
fn a_non_psd_inertia_that_leaves_m_positive_definite_is_used_as_written() {
    // romeo_laas_small's hips: one eigenvalue −3 % of the trace.
    let inertial = r#"<inertial><origin xyz="0 0 0.05"/><mass value="0.3"/><inertia ixx="0.05" ixy="0" ixz="0" iyy="-0.0027" iyz="0" izz="0.04"/></inertial>"#;
    let text = robot(&hand(inertial));
    let line = text
        .lines()
        .position(|l| l.contains("<link name=\"hand\">"))
        .unwrap()
        + 1;
    let model = Model::from_urdf_str(&text, "r.urdf").unwrap();
    let w = model
        .warnings()
        .iter()
        .find(|w| w.adjustment == UrdfAdjustment::InertiaNotPsd)
        .expect("a warning");
    assert!(
        w.element == "link 'hand' <inertia>" && w.line == Some(line),
        "{w}"
    );
    let body = model.frames()[model.skeleton().find("wrist").unwrap()]
        .body
        .unwrap();
    let iyy = model.bodies()[body].inertia.inertia_com()[(1, 1)];
    assert!((iyy + 0.0027).abs() < 1e-15, "{iyy}");
    // The same tensor about the hand's own axis makes M indefinite: refused.
    let about_axis = inertial.replace(r#"ixx="0.05""#, r#"ixx="-0.05""#);
    let e = Model::from_urdf_str(&robot(&hand(&about_axis)), "r.urdf").unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("r.urdf:{line}: link 'hand' <inertial>")),
        "{text}"
    );
    assert!(text.contains("not positive definite"), "{text}");
}

#[test]
fn files_that_urdf_rs_alone_refused_give_a_model_with_their_warnings() {
    let inertial = r#"<inertial><mass value="0.3"/><inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial>
    <visual><geometry><sphere radius="0.1"/></geometry><material name="m"><texture/></material></visual>"#;
    let text = robot(&hand(inertial)).replace(
        r#"<limit lower="-2" upper="2" effort="1" velocity="1"/>"#,
        r#"<limit lower="-1e16" upper="1e16" effort="1" velocity="1"/>"#,
    );
    let model = Model::from_urdf_str(&text, "r.urdf").unwrap();
    let mut got = kinds(&model);
    got.sort_by_key(|k| format!("{k:?}"));
    assert_eq!(
        got,
        [
            UrdfAdjustment::MasslessSubtree,
            UrdfAdjustment::TextureWithoutFilename,
            UrdfAdjustment::UnlimitedBound,
            UrdfAdjustment::UnlimitedBound,
        ]
    );
    // Models not read from URDF have no warnings.
    let human =
        Model::from_skeleton(&skeleton::presets::human(), dynamics::MassSource::Skeleton).unwrap();
    assert!(human.warnings().is_empty());
}

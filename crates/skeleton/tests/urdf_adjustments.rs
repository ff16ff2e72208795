//! What real robot descriptions need (issue 23): each adjustment of
//! `skeleton::urdf` (module docs) on a small file, with its warning; each
//! test fails without the adjustment. Truly invalid input stays an error.

mod common;

use skeleton::{JointKind, SkeletonError, UrdfAdjustment, UrdfImport, import_urdf_str};

/// A base and one revolute arm; `{VISUAL}`, `{LIMIT}`, `{INERTIA}` and
/// `{EXTRA}` are replaced by the tests.
const TEMPLATE: &str = r#"<?xml version="1.0"?>
<robot name="r">
  <material name="grey">
    <color rgba="0.5 0.5 0.5 1"/>
  </material>
  <link name="base">
    <inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>
  </link>
  <link name="arm">
    <inertial>
      <origin xyz="0 0 0.1" rpy="0 0 0"/>
      <mass value="2"/>
      {INERTIA}
    </inertial>
    <visual>
      <geometry><sphere radius="0.1"/></geometry>
      {VISUAL}
    </visual>
  </link>
  <joint name="shoulder" type="revolute">
    <origin xyz="0 0 1" rpy="0 0 0"/>
    <parent link="base"/><child link="arm"/>
    <axis xyz="0 1 0"/>
    {LIMIT}
  </joint>
  {EXTRA}
</robot>
"#;

const INERTIA: &str = r#"<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/>"#;
const LIMIT: &str = r#"<limit lower="-1" upper="1" effort="1" velocity="1"/>"#;

fn urdf(visual: &str, limit: &str, inertia: &str, extra: &str) -> String {
    TEMPLATE
        .replace("{VISUAL}", visual)
        .replace("{LIMIT}", limit)
        .replace("{INERTIA}", inertia)
        .replace("{EXTRA}", extra)
}

fn import(text: &str) -> UrdfImport {
    import_urdf_str(text, "r.urdf").unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

fn only(import: &UrdfImport, adjustment: UrdfAdjustment) -> &skeleton::UrdfWarning {
    assert_eq!(import.warnings.len(), 1, "{:#?}", import.warnings);
    let w = &import.warnings[0];
    assert_eq!(w.adjustment, adjustment, "{w}");
    w
}

#[test]
fn a_clean_file_has_no_warnings_and_its_inertials() {
    let text = urdf("", LIMIT, INERTIA, "");
    let i = import(&text);
    assert!(i.warnings.is_empty() && i.massless.is_empty());
    assert_eq!(i.inertials.len(), i.skeleton.len());
    let arm = i.inertials[1].as_ref().unwrap();
    assert_eq!((arm.link.as_str(), arm.mass), ("arm", 2.0));
    let inertial = text.lines().position(|l| l.trim() == "<inertial>").unwrap() + 1;
    assert_eq!(arm.line, Some(inertial));
    assert_eq!(arm.com, skeleton::nalgebra::Vector3::new(0.0, 0.0, 0.1));
    assert_eq!(i.inertials[0].as_ref().unwrap().link, "base");
}

#[test]
fn a_texture_without_filename_is_ignored_with_a_warning() {
    let visual = r#"<material name="m">
        <texture />
        <color rgba="0 0 0 1"/>
      </material>"#;
    let text = urdf(visual, LIMIT, INERTIA, "");
    let i = import(&text);
    let w = only(&i, UrdfAdjustment::TextureWithoutFilename);
    assert_eq!(w.line, Some(line_of(&text, "<texture />")));
    assert!(w.element.contains("link 'arm' <texture>"), "{w}");
    assert!(
        w.to_string()
            .starts_with(&format!("r.urdf:{}: ", w.line.unwrap())),
        "{w}"
    );
    // A top-level material's empty <texture></texture> too, one warning for both.
    let extra = "<material name=\"x\"><texture></texture></material>";
    let i = import(&urdf(visual, LIMIT, INERTIA, extra));
    let w = only(&i, UrdfAdjustment::TextureWithoutFilename);
    assert!(w.message.starts_with("2 <texture> elements"), "{w}");
    // With a filename it is read as before, without a warning.
    let named = visual.replace("<texture />", "<texture filename=\"t.png\"/>");
    assert!(
        import(&urdf(&named, LIMIT, INERTIA, ""))
            .warnings
            .is_empty()
    );
    // Lines after the blanked element are still right in errors.
    let bad = urdf(
        visual,
        &LIMIT.replace("upper=\"1\"", "upper=\"x\""),
        INERTIA,
        "",
    );
    let e = import_urdf_str(&bad, "r.urdf").unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("r.urdf:{}: ", line_of(&bad, "upper=\"x\""))),
        "{e}"
    );
}

#[test]
fn limits_of_1e9_or_more_make_the_joint_unlimited_with_a_warning() {
    for limit in [
        r#"<limit lower="-1e16" upper="1e16" effort="1" velocity="1"/>"#,
        r#"<limit lower="-1e+16" upper="0.5" effort="1" velocity="1"/>"#,
        r#"<limit lower="-1" upper="1e9" effort="1" velocity="1"/>"#,
    ] {
        let text = urdf("", limit, INERTIA, "");
        let i = import(&text);
        let w = only(&i, UrdfAdjustment::UnlimitedBound);
        assert_eq!(w.line, Some(line_of(&text, "<limit")), "{w}");
        assert!(w.element.starts_with("joint 'shoulder' <limit"), "{w}");
        let j = i.skeleton.find("shoulder").unwrap();
        assert!(
            matches!(
                i.skeleton.joint(j).kind,
                JointKind::Hinge { limit: None, .. }
            ),
            "{limit}"
        );
    }
    // Huge effort and velocity are accepted silently (not used).
    let limit = r#"<limit lower="-1" upper="1" effort="1e30" velocity="1e30"/>"#;
    assert!(import(&urdf("", limit, INERTIA, "")).warnings.is_empty());
    // Just below the bound, still a limit.
    let limit = r#"<limit lower="-1" upper="9.9e8" effort="1" velocity="1"/>"#;
    let i = import(&urdf("", limit, INERTIA, ""));
    assert!(i.warnings.is_empty());
    assert!(matches!(
        i.skeleton.joint(1).kind,
        JointKind::Hinge { limit: Some(_), .. }
    ));
    // Non-finite values, and huge values anywhere else, stay errors.
    for (from, to) in [
        (
            LIMIT,
            r#"<limit lower="-inf" upper="inf" effort="1" velocity="1"/>"#,
        ),
        (
            LIMIT,
            r#"<limit lower="-1e999" upper="1" effort="1" velocity="1"/>"#,
        ),
        (
            LIMIT,
            r#"<limit lower="nan" upper="1" effort="1" velocity="1"/>"#,
        ),
        (r#"xyz="0 0 1""#, r#"xyz="0 0 1e16""#),
        (r#"<mass value="2"/>"#, r#"<mass value="1e16"/>"#),
    ] {
        let text = urdf("", LIMIT, INERTIA, "").replacen(from, to, 1);
        match import_urdf_str(&text, "r.urdf") {
            Err(SkeletonError::UrdfAt { line, .. }) => {
                assert_eq!(line, line_of(&text, to.split('"').nth(1).unwrap()), "{to}")
            }
            other => panic!("{to}: {other:?}"),
        }
    }
}

#[test]
fn an_inertia_with_a_tiny_negative_eigenvalue_is_clamped_with_a_warning() {
    // tiago's antenna: eigenvalues (9.1, 3.5, −3.5)·1e-8 kg·m².
    let tensor = r#"<inertia ixx="0.00000002371" ixy="0.00000006119" ixz="0.00000001179" iyy="0.00000002833" iyz="0.00000000774" izz="0.00000003849"/>"#;
    let text = urdf("", LIMIT, tensor, "");
    let i = import(&text);
    let w = only(&i, UrdfAdjustment::InertiaClamped);
    assert!(w.element == "link 'arm' <inertia>", "{w}");
    let inertial = text.lines().position(|l| l.trim() == "<inertial>").unwrap() + 1;
    assert_eq!(w.line, Some(inertial));
    let arm = i.inertials[1].as_ref().unwrap();
    let eig = arm.inertia.symmetric_eigenvalues();
    assert!(eig.min() >= -1e-22, "{eig:?}");
    assert!((arm.inertia - arm.inertia.transpose()).norm() == 0.0);
    // The change is the negative eigenvalue's size, no more.
    let raw = skeleton::nalgebra::Matrix3::new(
        2.371e-8, 6.119e-8, 1.179e-8, 6.119e-8, 2.833e-8, 7.74e-9, 1.179e-8, 7.74e-9, 3.849e-8,
    );
    let raw_min = raw.symmetric_eigenvalues().min();
    assert!(raw_min < -1e-9);
    assert!(((arm.inertia - raw).norm() - raw_min.abs()).abs() < 1e-20);
    // A worse tensor is kept as written, with another warning.
    let bad = r#"<inertia ixx="0.01" ixy="0" ixz="0" iyy="-0.02" iyz="0" izz="0.01"/>"#;
    let i = import(&urdf("", LIMIT, bad, ""));
    let w = only(&i, UrdfAdjustment::InertiaNotPsd);
    assert!(w.message.contains("used as written"), "{w}");
    assert_eq!(i.inertials[1].as_ref().unwrap().inertia[(1, 1)], -0.02);
}

#[test]
fn a_massless_moving_subtree_is_listed_with_a_warning() {
    // A massless finger with a massless tip on a fixed joint, and a
    // massless link on a fixed joint of the (massive) arm.
    let extra = r#"<link name="finger"/>
  <link name="tip"><inertial><mass value="0"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
  <link name="sensor"/>
  <joint name="finger_joint" type="revolute">
    <parent link="arm"/><child link="finger"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
  <joint name="tip_joint" type="continuous">
    <parent link="finger"/><child link="tip"/><axis xyz="1 0 0"/>
  </joint>
  <joint name="sensor_joint" type="fixed">
    <parent link="arm"/><child link="sensor"/>
  </joint>"#;
    let text = urdf("", LIMIT, INERTIA, extra);
    let i = import(&text);
    let names: Vec<&str> = i
        .massless
        .iter()
        .map(|&j| i.skeleton.joint(j).name.as_str())
        .collect();
    assert_eq!(names, ["finger_joint", "tip_joint"]);
    // One warning, at the top of the massless subtree.
    let w = only(&i, UrdfAdjustment::MasslessSubtree);
    assert_eq!(w.line, Some(line_of(&text, "<joint name=\"finger_joint\"")));
    assert!(
        w.message.contains("'tip_joint'") && w.message.contains("armature of 1e-6"),
        "{w}"
    );
    // Inertia without mass is not massless.
    let text = text.replace(
        "<link name=\"finger\"/>",
        "<link name=\"finger\"><inertial><mass value=\"0\"/><inertia ixx=\"1e-6\" ixy=\"0\" ixz=\"0\" iyy=\"1e-6\" iyz=\"0\" izz=\"1e-6\"/></inertial></link>",
    );
    let i = import(&text);
    assert_eq!(i.massless.len(), 1, "tip_joint only");
}

#[test]
fn mimic_joints_are_independent_and_listed_as_ignored() {
    let extra = r#"<link name="finger"><inertial><mass value="0.1"/><inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>
  <joint name="finger_joint" type="revolute">
    <parent link="arm"/><child link="finger"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
    <mimic joint="shoulder" multiplier="-2" offset="0.5"/>
  </joint>"#;
    let text = urdf("", LIMIT, INERTIA, extra);
    let i = import(&text);
    let w = only(&i, UrdfAdjustment::MimicIgnored);
    assert_eq!(w.line, Some(line_of(&text, "<mimic")));
    assert!(w.element == "joint 'finger_joint' <mimic>", "{w}");
    assert!(
        w.message.contains("'shoulder'") && w.message.contains("-2"),
        "{w}"
    );
    // The joint keeps its own parameter.
    assert_eq!(i.skeleton.dof(), 2);
    // A mimic of a joint that does not exist is still read (as urdfdom).
    let odd = text.replace("joint=\"shoulder\"", "joint=\"nowhere\"");
    assert_eq!(import(&odd).skeleton.dof(), 2);
}

#[test]
fn the_old_entry_points_drop_the_warnings_and_agree() {
    let text = urdf(
        "",
        r#"<limit lower="-1e16" upper="1e16" effort="1" velocity="1"/>"#,
        INERTIA,
        "",
    );
    let s = skeleton::parse_urdf(&text, "r.urdf").unwrap();
    assert_eq!(s.dof(), import(&text).skeleton.dof());
    let s2 = skeleton::parse_urdf_bytes(text.as_bytes(), "r.urdf").unwrap();
    assert_eq!(s.len(), s2.len());
}

#[test]
fn a_long_massless_chain_gives_one_short_warning() {
    // Hostile input's 5,000-joint chain has no masses at all.
    let n = 5000;
    let text = common::long_urdf_chain(n, "<mimic joint=\"j1\"/>");
    let i = import(&text);
    assert_eq!(i.massless.len(), n);
    let massless: Vec<_> = i
        .warnings
        .iter()
        .filter(|w| w.adjustment == UrdfAdjustment::MasslessSubtree)
        .collect();
    assert_eq!(massless.len(), 1);
    assert!(massless[0].message.len() < 1000, "{}", massless[0]);
    assert!(
        massless[0].message.contains("(5000 in all)"),
        "{}",
        massless[0]
    );
    // One mimic warning per joint, each with its own line.
    assert_eq!(i.warnings.len(), 1 + n);
    assert_eq!(i.warnings.last().unwrap().line, Some(2 * n + 2));
}

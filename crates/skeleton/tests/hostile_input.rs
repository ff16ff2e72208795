//! Regression tests for hostile input (issue 14): sizes a file declares,
//! deep nesting, silent NaN/inf, and valid input that used to be rejected.
//! Each test names the class it guards.

mod common;

use skeleton::{Bvh, JointKind, SkeletonBuilder, SkeletonError, parse_urdf};

/// A two-joint clip with `frames` declared and `lines` frame lines present.
fn tiny_bvh(declared: &str, lines: usize) -> String {
    let mut s = String::from(
        "HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0 0\n  CHANNELS 6 Xposition Yposition Zposition Zrotation Yrotation Xrotation\n  JOINT Spine\n  {\n    OFFSET 0 10 0\n    CHANNELS 3 Zrotation Yrotation Xrotation\n    End Site\n    {\n      OFFSET 0 10 0\n    }\n  }\n}\nMOTION\n",
    );
    s.push_str(&format!("Frames: {declared}\nFrame Time: 0.01\n"));
    for _ in 0..lines {
        s.push_str("0 0 0 0 0 0 10 20 30\n");
    }
    s
}

fn bvh_err(text: &str) -> (usize, String) {
    match Bvh::parse(text, "h.bvh") {
        Ok(_) => panic!("expected an error for\n{text}"),
        Err(SkeletonError::Bvh { line, message, .. }) => (line, message),
        Err(other) => panic!("expected a BVH error with a line, got {other}"),
    }
}

fn urdf_at(text: &str) -> (usize, String) {
    match parse_urdf(text, "h.urdf") {
        Ok(_) => panic!("expected an error for\n{text}"),
        Err(e @ SkeletonError::UrdfAt { line, .. }) => (line, e.to_string()),
        Err(other) => panic!("expected a URDF error with a line, got {other}"),
    }
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

// ---- 1. Sizes declared by the file ----------------------------------------

#[test]
fn declared_frame_counts_are_checked_against_the_lines_present() {
    assert_eq!(Bvh::parse(&tiny_bvh("3", 3), "ok").unwrap().frames.len(), 3);
    for declared in ["1000000000", &u64::MAX.to_string(), &usize::MAX.to_string()] {
        let text = tiny_bvh(declared, 3);
        let (line, m) = bvh_err(&text);
        assert!(m.contains("Frames") && m.contains(declared), "{m}");
        assert!(m.contains("after 3 frames"), "{m}");
        assert_eq!(line, text.lines().count(), "{m}");
    }
    for bad in ["99999999999999999999999", "-1", "3.5", ""] {
        let text = tiny_bvh(bad, 3);
        let (line, m) = bvh_err(&text);
        assert_eq!(line, line_of(&text, "Frames:"), "{m}");
        assert!(m.contains("Frames"), "{m}");
    }
    let (_, m) = bvh_err(&tiny_bvh("0", 3));
    assert!(m.contains("more frame lines"), "{m}");
}

// ---- 2. Deep nesting -------------------------------------------------------

fn deep_chain_bvh(depth: usize) -> String {
    let mut s = String::from(
        "HIERARCHY\nROOT J0\n{\nOFFSET 0 0 0\nCHANNELS 3 Zrotation Yrotation Xrotation\n",
    );
    for k in 1..depth {
        s.push_str(&format!(
            "JOINT J{k}\n{{\nOFFSET 0 1 0\nCHANNELS 1 Zrotation\n"
        ));
    }
    s.push_str("End Site\n{\nOFFSET 0 1 0\n}\n");
    s.push_str(&"}\n".repeat(depth));
    s.push_str("MOTION\nFrames: 1\nFrame Time: 0.01\n0 0 0");
    s.push_str(&" 0.5".repeat(depth - 1));
    s.push('\n');
    s
}

#[test]
fn an_8000_joint_chain_parses_walks_and_writes_without_recursion() {
    // Runs on a test thread (2 MiB stack), where recursion 8,000 deep overflows.
    let text = deep_chain_bvh(8000);
    let clip = Bvh::parse(&text, "deep.bvh").unwrap();
    assert_eq!(clip.skeleton.len(), 8001);
    let world = clip.forward_kinematics(0).unwrap();
    assert!(
        world
            .iter()
            .all(|w| w.translation.vector.iter().all(|x| x.is_finite()))
    );
    let out = clip.to_bvh_string().unwrap();
    // Linear size: indentation is capped.
    assert!(out.len() < 40 * text.len(), "{} bytes", out.len());
    let again = Bvh::parse(&out, "again.bvh").unwrap();
    assert_eq!(again.skeleton.len(), 8001);
}

#[test]
fn deeply_nested_urdf_is_an_error_naming_the_line() {
    let mut text = String::from("<robot name=\"r\">\n<link name=\"a\">\n");
    text.push_str(&"<x>\n".repeat(20_000));
    text.push_str(&"</x>\n".repeat(20_000));
    text.push_str("</link>\n</robot>\n");
    let (line, m) = urdf_at(&text);
    assert_eq!(line, 101, "{m}");
    assert!(m.contains("nested"), "{m}");
}

// ---- 3. Silent NaN / inf ---------------------------------------------------

#[test]
fn huge_or_non_finite_bvh_numbers_name_the_line_and_field() {
    let text = tiny_bvh("1", 1);
    let bad = text.replacen("OFFSET 0 10 0", "OFFSET 1e308 10 0", 1);
    let (line, m) = bvh_err(&bad);
    assert_eq!(line, line_of(&bad, "1e308"));
    assert!(m.contains("OFFSET x") && m.contains("out of range"), "{m}");
    // Position channels on a non-root joint with huge values.
    let pos = text
        .replace(
            "CHANNELS 3 Zrotation",
            "CHANNELS 6 Xposition Yposition Zposition Zrotation",
        )
        .replace("0 0 0 0 0 0 10 20 30", "0 0 0 0 0 0 1e308 1e308 0 10 20 30");
    let (line, m) = bvh_err(&pos);
    assert_eq!(line, pos.lines().count());
    assert!(m.contains("value 7") && m.contains("1e308"), "{m}");
    // The same file with sane values is accepted and finite.
    let ok = pos.replace("1e308 1e308", "5 6");
    let clip = Bvh::parse(&ok, "ok").unwrap();
    assert!((clip.forward_kinematics(0).unwrap()[1].translation.y - 16.0).abs() < 1e-9);
}

#[test]
fn forward_kinematics_overflow_is_an_error_naming_the_joint() {
    let mut b = SkeletonBuilder::new();
    b.joint("root", None, [0.0; 3], JointKind::Fixed);
    b.joint("a", Some("root"), [1e308, 0.0, 0.0], JointKind::Fixed);
    b.joint("b", Some("a"), [1e308, 0.0, 0.0], JointKind::Fixed);
    let s = b.build().unwrap();
    let e = s.forward_kinematics(&[]).unwrap_err().to_string();
    assert!(e.contains("'b'") && e.contains("overflows"), "{e}");
}

#[test]
fn overflowing_total_mass_is_an_error() {
    let mut b = SkeletonBuilder::new();
    b.joint("root", None, [0.0; 3], JointKind::Fixed).with_bone(
        [0.0, 1.0, 0.0],
        0.1,
        skeleton::BodyPart::Link,
        1e308,
    );
    b.joint("a", Some("root"), [0.0, 1.0, 0.0], JointKind::Fixed)
        .with_bone([0.0, 1.0, 0.0], 0.1, skeleton::BodyPart::Link, 1e308);
    let e = b.build().unwrap_err().to_string();
    assert!(e.contains("'a'") && e.contains("total mass"), "{e}");
}

const URDF: &str = r#"<robot name="r">
  <link name="base">
    <inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>
    <visual><geometry><sphere radius="0.1"/></geometry></visual>
  </link>
  <link name="arm"><inertial><mass value="2"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <joint name="shoulder" type="revolute">
    <origin xyz="0 0 1" rpy="0 0 0"/>
    <parent link="base"/><child link="arm"/>
    <axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
</robot>
"#;

#[test]
fn non_finite_or_huge_urdf_numbers_name_the_line_and_attribute() {
    assert_eq!(parse_urdf(URDF, "ok").unwrap().dof(), 1);
    for (from, to, needle) in [
        (
            r#"lower="-1" upper="1""#,
            r#"lower="inf" upper="-inf""#,
            "<limit lower>",
        ),
        (r#"upper="1""#, r#"upper="1e309""#, "<limit upper>"),
        (r#"radius="0.1""#, r#"radius="NaN""#, "<sphere radius>"),
        (r#"radius="0.1""#, r#"radius="-0.1""#, "<sphere radius>"),
        (
            r#"<mass value="2"/>"#,
            r#"<mass value="1e308"/>"#,
            "<mass value>",
        ),
        (r#"xyz="0 0 1""#, r#"xyz="0 1e300 1""#, "<origin xyz>"),
        (r#"xyz="0 0 1""#, r#"xyz="0 1""#, "<origin xyz>"),
        (
            r#"<axis xyz="0 1 0"/>"#,
            r#"<axis xyz="0 nan 0"/>"#,
            "<axis xyz>",
        ),
    ] {
        let text = URDF.replacen(from, to, 1);
        assert_ne!(text, URDF, "{from}");
        let (line, m) = urdf_at(&text);
        let bad_value = to.split('"').nth(1).unwrap();
        assert_eq!(line, line_of(&text, bad_value), "{to}: {m}");
        assert!(
            m.contains(needle) && m.starts_with(&format!("h.urdf:{line}: ")),
            "{to}: {m}"
        );
    }
}

#[test]
fn a_revolute_joint_without_limit_is_an_error() {
    let text = URDF.replace(
        r#"<limit lower="-1" upper="1" effort="1" velocity="1"/>"#,
        "",
    );
    let (line, m) = urdf_at(&text);
    assert_eq!(line, line_of(&text, "<joint name=\"shoulder\""));
    assert!(
        m.contains("joint 'shoulder'") && m.contains("<limit>"),
        "{m}"
    );
    let prismatic = text.replace("revolute", "prismatic");
    urdf_at(&prismatic);
    // Continuous joints need none.
    let continuous = text.replace("revolute", "continuous");
    assert!(parse_urdf(&continuous, "c").is_ok());
}

#[test]
fn structural_urdf_errors_carry_the_line() {
    let text = URDF.replace(r#"<child link="arm"/>"#, r#"<child link="nope"/>"#);
    let (line, m) = urdf_at(&text);
    assert_eq!(line, line_of(&text, "<joint name"), "{m}");
    assert!(m.contains("'nope'"), "{m}");
    let text = URDF.replace(r#"lower="-1" upper="1""#, r#"lower="1" upper="-1""#);
    let (line, m) = urdf_at(&text);
    assert_eq!(line, line_of(&text, "<limit"), "{m}");
}

// ---- 4. Valid input accepted ----------------------------------------------

#[test]
fn byte_order_marks_and_crlf_are_accepted() {
    let text = tiny_bvh("2", 2);
    let bom = format!("\u{feff}{text}");
    assert_eq!(Bvh::parse(&bom, "bom").unwrap().frames.len(), 2);
    let crlf = bom.replace('\n', "\r\n");
    assert_eq!(Bvh::parse(&crlf, "crlf").unwrap().frames.len(), 2);
    assert_eq!(
        Bvh::parse_bytes(crlf.as_bytes(), "b").unwrap().frames.len(),
        2
    );
    let urdf = format!("\u{feff}{}", URDF.replace('\n', "\r\n"));
    assert_eq!(parse_urdf(&urdf, "bom.urdf").unwrap().dof(), 1);
}

#[test]
fn invalid_utf8_is_an_error_naming_the_line() {
    let mut bytes = tiny_bvh("1", 1).into_bytes();
    let at = bytes.windows(5).position(|w| w == b"Spine").unwrap(); // line 6
    bytes[at] = 0xff;
    match Bvh::parse_bytes(&bytes, "u.bvh") {
        Err(SkeletonError::Bvh { line, message, .. }) => {
            assert_eq!(line, 6);
            assert!(message.contains("UTF-8"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let mut bytes = URDF.as_bytes().to_vec();
    let at = bytes.windows(3).position(|w| w == b"arm").unwrap();
    bytes[at] = 0xc3;
    let e = skeleton::parse_urdf_bytes(&bytes, "u.urdf")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("u.urdf:6: ") && e.contains("UTF-8"), "{e}");
}

#[test]
fn a_joint_named_like_an_end_site_is_accepted() {
    let text = tiny_bvh("1", 1).replace(
        "  }\n}\nMOTION",
        "  }\n  JOINT Spine_end\n  {\n    OFFSET 5 0 0\n    CHANNELS 0\n    End Site\n    {\n      OFFSET 5 0 0\n    }\n  }\n}\nMOTION",
    );
    let clip = Bvh::parse(&text, "names.bvh").unwrap();
    let names: Vec<&str> = clip
        .skeleton
        .joints()
        .iter()
        .map(|j| j.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["Hips", "Spine", "Spine_2_end", "Spine_end", "Spine_end_end"]
    );
    let real = clip.skeleton.find("Spine_end").unwrap();
    assert!(!clip.is_end_site(real));
    assert!(clip.is_end_site(clip.skeleton.find("Spine_2_end").unwrap()));
    assert!(!clip.is_end_site(0));
    // Round trip keeps the structure.
    let again = Bvh::parse(&clip.to_bvh_string().unwrap(), "again").unwrap();
    assert_eq!(again.skeleton.len(), clip.skeleton.len());
}

#[test]
fn a_urdf_joint_sharing_a_link_name_is_accepted() {
    // Same name as the root link and as a child link: separate namespaces.
    let text = URDF.replace(r#"<joint name="shoulder""#, r#"<joint name="base""#);
    let s = parse_urdf(&text, "names.urdf").unwrap();
    assert_eq!(s.joint(0).name, "base_link");
    assert_eq!(s.joint(1).name, "base");
    let text = URDF.replace(r#"<joint name="shoulder""#, r#"<joint name="arm""#);
    let s = parse_urdf(&text, "names.urdf").unwrap();
    assert_eq!(s.joint(1).name, "arm");
}

#[test]
fn frame_times_that_cannot_be_written_back_are_errors() {
    // Found by the fuzz harness: 1e-320 parsed, then exported as 0.000000.
    for bad in ["1e-320", "0", "-0.01", "1e10"] {
        let text = tiny_bvh("1", 1).replace("Frame Time: 0.01", &format!("Frame Time: {bad}"));
        let (line, m) = bvh_err(&text);
        assert_eq!(line, line_of(&text, "Frame Time"), "{m}");
    }
    let text = tiny_bvh("1", 1).replace("Frame Time: 0.01", "Frame Time: 0.000001");
    let clip = Bvh::parse(&text, "ok").unwrap();
    Bvh::parse(&clip.to_bvh_string().unwrap(), "again").unwrap();
}

#[test]
fn names_bvh_cannot_hold_are_export_errors() {
    // URDF names may contain spaces; written as BVH they would split.
    let text = URDF.replace(
        r#"<joint name="shoulder""#,
        r#"<joint name="left shoulder""#,
    );
    let s = parse_urdf(&text, "spaces.urdf").unwrap();
    let channels = skeleton::default_channels(&s).unwrap();
    let frames = skeleton::PoseBatch::rest(&s, 1);
    let e = skeleton::write_bvh(&s, &channels, 0.01, &frames).unwrap_err();
    assert!(e.to_string().contains("'left shoulder'"), "{e}");
    let ok = parse_urdf(URDF, "ok.urdf").unwrap();
    let text = skeleton::write_bvh(&ok, &channels, 0.01, &frames).unwrap();
    assert_eq!(Bvh::parse(&text, "w.bvh").unwrap().skeleton.len(), ok.len());
}

#[test]
fn many_end_sites_and_long_urdf_chains_are_linear() {
    // 20,000 End Sites under one joint: unique names without a quadratic
    // search for a free suffix.
    let sites = "End Site\n{\nOFFSET 0 1 0\n}\n".repeat(20_000);
    let text = format!(
        "HIERARCHY\nROOT Hips\n{{\nOFFSET 0 0 0\nCHANNELS 3 Zrotation Yrotation Xrotation\n{sites}}}\nMOTION\nFrames: 1\nFrame Time: 0.01\n0 0 0\n"
    );
    let clip = Bvh::parse(&text, "sites.bvh").unwrap();
    assert_eq!(clip.skeleton.len(), 20_001);
    assert_eq!(clip.skeleton.joint(1).name, "Hips_end");
    assert_eq!(clip.skeleton.joint(20_000).name, "Hips_20000_end");
    // A 5,000-joint URDF chain (every joint revolute with a limit).
    let n = 5000;
    let urdf = common::long_urdf_chain(n, "<origin xyz=\"0 0 0.01\"/>");
    let s = parse_urdf(&urdf, "long.urdf").unwrap();
    assert_eq!(s.dof(), n);
    let w = s.forward_kinematics(&s.rest_pose()).unwrap();
    assert!((w[n].translation.z - 0.01 * n as f64).abs() < 1e-9);
}

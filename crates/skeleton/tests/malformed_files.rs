//! Corrupted BVH and URDF files give errors that name the line or element,
//! and never panic. Corruptions are derived from the real files with a fixed
//! seed.

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;
use skeleton::{Bvh, SkeletonError, parse_urdf};

fn read(path: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../assets/{path}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// The walk clip cut down to its hierarchy and the first `frames` frames.
fn small_clip(frames: usize) -> String {
    let full = read("motions/cmu_131_01_walk.bvh");
    let mut out = String::new();
    let mut in_motion = false;
    let mut kept = 0;
    for line in full.lines() {
        if line.starts_with("Frames:") {
            out.push_str(&format!("Frames: {frames}\n"));
            in_motion = true;
            continue;
        }
        if in_motion && !line.starts_with("Frame Time") {
            if kept == frames {
                break;
            }
            kept += 1;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn bvh_line(e: &SkeletonError) -> usize {
    match e {
        SkeletonError::Bvh { line, .. } => *line,
        other => panic!("expected a BVH error with a line, got {other}"),
    }
}

#[test]
fn small_clip_is_valid() {
    let b = Bvh::parse(&small_clip(5), "small").unwrap();
    assert_eq!(b.frames.len(), 5);
}

#[test]
fn truncated_bvh_is_an_error() {
    let text = small_clip(5);
    let last_line_len = text.trim_end().lines().last().unwrap().len();
    let mut rng = Pcg64::seed_from_u64(2);
    for _ in 0..300 {
        // Anywhere before the start of the last frame line.
        let mut cut = rng.random_range(0..text.len() - last_line_len - 1);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let e =
            Bvh::parse(&text[..cut], "cut.bvh").expect_err(&format!("cut at byte {cut} must fail"));
        let line = bvh_line(&e);
        assert!(
            line >= 1 && line <= text[..cut].lines().count().max(1) + 1,
            "{e}"
        );
        assert!(e.to_string().starts_with("cut.bvh:"), "{e}");
    }
}

#[test]
fn non_finite_values_are_errors_naming_the_line() {
    let text = small_clip(3);
    let lines: Vec<&str> = text.lines().collect();
    let mut rng = Pcg64::seed_from_u64(3);
    for bad in ["nan", "NaN", "inf", "-inf", "1e999", "abc", "1.2.3"] {
        for _ in 0..10 {
            // A numeric token in an OFFSET line or a frame line.
            let candidates: Vec<usize> = (0..lines.len())
                .filter(|&i| lines[i].trim_start().starts_with("OFFSET") || i + 4 > lines.len())
                .collect();
            let i = candidates[rng.random_range(0..candidates.len())];
            let mut toks: Vec<String> = lines[i].split_whitespace().map(String::from).collect();
            let numeric: Vec<usize> = (0..toks.len())
                .filter(|&k| toks[k].parse::<f64>().is_ok())
                .collect();
            toks[numeric[rng.random_range(0..numeric.len())]] = bad.to_string();
            let mut corrupted: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
            corrupted[i] = toks.join(" ");
            let e = Bvh::parse(&corrupted.join("\n"), "bad.bvh").expect_err(bad);
            assert_eq!(bvh_line(&e), i + 1, "{bad}: {e}");
        }
    }
}

#[test]
fn wrong_channel_counts_are_errors() {
    let text = small_clip(2);
    for (from, to) in [
        (
            "CHANNELS 3 Zrotation Yrotation Xrotation",
            "CHANNELS 2 Zrotation Yrotation Xrotation",
        ),
        (
            "CHANNELS 3 Zrotation Yrotation Xrotation",
            "CHANNELS 4 Zrotation Yrotation Xrotation",
        ),
        (
            "CHANNELS 3 Zrotation Yrotation Xrotation",
            "CHANNELS 3 Zrotation Yrotation Wrotation",
        ),
        (
            "CHANNELS 3 Zrotation Yrotation Xrotation",
            "CHANNELS 3 Zrotation Zrotation Xrotation",
        ),
        (
            "CHANNELS 3 Zrotation Yrotation Xrotation",
            "CHANNELS 2 Zrotation Yrotation",
        ),
        ("CHANNELS 6", "CHANNELS 7"),
        (
            "CHANNELS 3 Zrotation Yrotation Xrotation",
            "CHANNELS x Zrotation Yrotation Xrotation",
        ),
    ] {
        let corrupted = text.replacen(from, to, 1);
        assert_ne!(corrupted, text);
        let e = Bvh::parse(&corrupted, "chan.bvh").expect_err(to);
        bvh_line(&e);
    }
    // One value too many or too few on a frame line.
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let n = lines.len();
    lines[n - 1].push_str(" 1.0");
    let e = Bvh::parse(&lines.join("\n"), "extra.bvh").unwrap_err();
    assert_eq!(bvh_line(&e), n);
    assert!(e.to_string().contains("97 values"), "{e}");
}

#[test]
fn structural_damage_is_an_error() {
    let text = small_clip(2);
    for (from, to) in [
        ("HIERARCHY", "HIERARCHIE"),
        ("ROOT Hips", "ROOT"),
        ("JOINT LeftHip", "JOINT LeftHip }"),
        ("End Site", "End Sight"),
        ("MOTION", "MOTIONS"),
        ("Frames: 2", "Frames: 3"),
        ("Frames: 2", "Frames: 1"),
        ("Frames: 2", "Frames: two"),
        ("Frame Time: 0.008333", "Frame Time: -1"),
        ("JOINT LHipJoint", "JOINT Hips"),
    ] {
        let corrupted = text.replacen(from, to, 1);
        assert_ne!(corrupted, text, "{from}");
        let e = Bvh::parse(&corrupted, "broken.bvh").expect_err(to);
        assert!(e.to_string().starts_with("broken.bvh:"), "{e}");
    }
    // An unbalanced brace.
    let corrupted = text.replacen("}", "", 1);
    assert!(Bvh::parse(&corrupted, "brace.bvh").is_err());
}

#[test]
fn random_mutations_never_panic() {
    let text = small_clip(3);
    let bytes = text.as_bytes();
    let mut rng = Pcg64::seed_from_u64(4);
    let alphabet = b"{}0123456789.-eE \n\tJOINTEndSiteCHANNELSnaifXYZrotationposition";
    let mut errors = 0;
    for _ in 0..2000 {
        let mut b = bytes.to_vec();
        for _ in 0..rng.random_range(1..6) {
            let at = rng.random_range(0..b.len());
            match rng.random_range(0..3) {
                0 => b[at] = alphabet[rng.random_range(0..alphabet.len())],
                1 => {
                    b.remove(at);
                }
                _ => b.insert(at, alphabet[rng.random_range(0..alphabet.len())]),
            }
        }
        let s = String::from_utf8_lossy(&b);
        if let Ok(parsed) = Bvh::parse(&s, "mutant.bvh") {
            // Whatever parses must be usable: FK of every frame is finite.
            for pose in parsed.frames.iter() {
                let w = parsed.skeleton.forward_kinematics(pose).unwrap();
                assert!(
                    w.iter()
                        .all(|t| t.translation.vector.iter().all(|x| x.is_finite()))
                );
            }
        } else {
            errors += 1;
        }
    }
    eprintln!("rejected {errors} of 2000");
    assert!(
        errors > 1000,
        "most mutations must be rejected, only {errors} were"
    );
}

const URDF_OK: &str = r#"<robot name="r">
  <link name="a"/><link name="b"/><link name="c"/>
  <joint name="j1" type="revolute">
    <origin xyz="0 0 1" rpy="0 0 0"/><parent link="a"/><child link="b"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
  <joint name="j2" type="prismatic">
    <origin xyz="0 0 1" rpy="0 0 0"/><parent link="b"/><child link="c"/>
    <axis xyz="0 0 1"/><limit lower="0" upper="0.5" effort="1" velocity="1"/>
  </joint>
</robot>"#;

fn urdf_error(text: &str) -> String {
    match parse_urdf(text, "bad.urdf") {
        Ok(_) => panic!("expected an error for\n{text}"),
        Err(e) => {
            let s = e.to_string();
            assert!(s.starts_with("bad.urdf:"), "{s}");
            s
        }
    }
}

#[test]
fn malformed_urdf_is_an_error_naming_the_element() {
    let ok = parse_urdf(URDF_OK, "ok.urdf").unwrap();
    assert_eq!(ok.dof(), 2);
    let cases: [(&str, &str, &str); 8] = [
        (r#"type="revolute""#, r#"type="hinge""#, "robot"),
        (r#"type="revolute""#, r#"type="planar""#, "joint 'j1'"),
        (r#"<child link="c"/>"#, r#"<child link="a"/>"#, "robot"),
        (
            r#"<child link="c"/>"#,
            r#"<child link="zz"/>"#,
            "joint 'j2'",
        ),
        (
            r#"<origin xyz="0 0 1" rpy="0 0 0"/><parent link="a"/>"#,
            r#"<origin xyz="0 nan 1" rpy="0 0 0"/><parent link="a"/>"#,
            "joint 'j1'",
        ),
        (
            r#"<axis xyz="0 1 0"/>"#,
            r#"<axis xyz="0 0 0"/>"#,
            "joint 'j1'",
        ),
        (
            r#"lower="-1" upper="1""#,
            r#"lower="1" upper="-1""#,
            "joint 'j1'",
        ),
        (r#"<child link="b"/>"#, r#"<child link="c"/>"#, "joint 'j2'"),
    ];
    for (from, to, element) in cases {
        let text = URDF_OK.replacen(from, to, 1);
        assert_ne!(text, URDF_OK, "{from}");
        let e = urdf_error(&text);
        assert!(e.contains(element), "{to}: '{e}' should name {element}");
    }
    // A cycle: b -> c -> b (and a left alone).
    let cycle = URDF_OK.replace(
        "</robot>",
        r#"<joint name="j3" type="fixed"><parent link="c"/><child link="b"/></joint></robot>"#,
    );
    urdf_error(&cycle);
}

#[test]
fn truncated_or_mutated_urdf_never_panics() {
    let text = read("robots/arm7.urdf");
    let mut rng = Pcg64::seed_from_u64(5);
    for _ in 0..200 {
        let mut cut = rng.random_range(0..text.len() - 12);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        assert!(
            parse_urdf(&text[..cut], "cut.urdf").is_err(),
            "cut at {cut}"
        );
    }
    for _ in 0..300 {
        let mut b = text.as_bytes().to_vec();
        let at = rng.random_range(0..b.len());
        b[at] = b"<>/\"= 0123456789.-nax"[rng.random_range(0..21)];
        let _ = parse_urdf(&String::from_utf8_lossy(&b), "mutant.urdf");
    }
}

/// Issue 32 item 21: two `<robot>` elements in one file (two files pasted
/// together) are an error at the second one's line, not a second robot
/// dropped in silence.
#[test]
fn a_second_robot_element_is_an_error_at_its_line() {
    let one = "<robot name=\"a\">\n  <link name=\"base\"/>\n</robot>\n";
    assert!(parse_urdf(one, "one.urdf").is_ok());
    let two = format!("{one}{}", one.replace("\"a\"", "\"b\""));
    let e = parse_urdf(&two, "two.urdf").unwrap_err();
    let m = e.to_string();
    assert!(m.contains("two.urdf") && m.contains("robot"), "{m}");
    assert!(matches!(e, SkeletonError::UrdfAt { line: 4, .. }), "{m}");
}

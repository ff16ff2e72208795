//! What a link looks like: the URDF `<visual>` elements of the link a joint
//! carries, in that joint's frame (the URDF link frame).
//!
//! A visual is a shape placed by `origin` (`<origin xyz rpy>`, the same
//! `R = Rz(yaw)·Ry(pitch)·Rx(roll)` as joint origins) with an optional
//! colour (`<material><color rgba>`, inline or by the name of a top-level
//! `<material>`). Primitive shapes follow the URDF conventions: a box is
//! centred on the origin, a cylinder (and a capsule) is centred on it along
//! its z axis. A mesh is a file name as written (`package://…`, `file://…`
//! or a path), resolved and loaded by [`crate::mesh`].

use nalgebra::{Isometry3, Vector3};

/// One `<visual>` of a link.
#[derive(Clone, Debug, PartialEq)]
pub struct Visual {
    /// The shape's frame in the joint (link) frame.
    pub origin: Isometry3<f64>,
    pub shape: VisualShape,
    /// RGBA in `[0, 1]` as the file writes it (display values: rviz shows
    /// them as sRGB, and so does the app); `None`: the file gives no
    /// colour.
    pub rgba: Option<[f32; 4]>,
}

/// The `<geometry>` of a visual, metres.
#[derive(Clone, Debug, PartialEq)]
pub enum VisualShape {
    /// Full edge lengths (`<box size>`), centred on the origin.
    Box {
        size: Vector3<f64>,
    },
    /// Along z, centred on the origin.
    Cylinder {
        radius: f64,
        length: f64,
    },
    Sphere {
        radius: f64,
    },
    /// Along z, centred on the origin; `length` is the cylinder part
    /// (URDF 1.2 / urdf-rs `<capsule>`).
    Capsule {
        radius: f64,
        length: f64,
    },
    /// A mesh file and its per-axis scale (`<mesh filename scale>`; scale
    /// `1 1 1` when the file omits it).
    Mesh {
        filename: String,
        scale: Vector3<f64>,
    },
}

impl VisualShape {
    /// The mesh file name, for a mesh.
    pub fn mesh_filename(&self) -> Option<&str> {
        match self {
            Self::Mesh { filename, .. } => Some(filename),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::urdf::parse_urdf;
    use nalgebra::{Point3, UnitQuaternion};

    const ROBOT: &str = r#"<robot name="r">
  <material name="blue"><color rgba="0 0 0.8 1"/></material>
  <link name="base">
    <visual><geometry><box size="0.2 0.3 0.1"/></geometry></visual>
  </link>
  <link name="arm">
    <visual>
      <origin xyz="0 0 0.25" rpy="0 1.5707963267948966 0"/>
      <geometry><cylinder radius="0.04" length="0.5"/></geometry>
      <material name="blue"/>
    </visual>
    <visual>
      <origin xyz="0.1 0 0"/>
      <geometry><mesh filename="package://pkg/meshes/arm.stl" scale="0.001 0.001 0.002"/></geometry>
      <material name="inline"><color rgba="1 0.5 0.25 0.5"/></material>
    </visual>
  </link>
  <link name="tool">
    <visual><origin xyz="0.05 0 0"/><geometry><box size="0.02 0.02 0.02"/></geometry><material name="unknown"/></visual>
    <visual><geometry><sphere radius="0.03"/></geometry></visual>
  </link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/>
    <origin xyz="0 0 0.1" rpy="0 0 1.5707963267948966"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="wrist" type="fixed"><parent link="arm"/><child link="tool"/><origin xyz="0 0 0.5"/></joint>
</robot>"#;

    #[test]
    fn urdf_visuals_keep_shape_origin_scale_and_colour_inline_or_by_name() {
        let s = parse_urdf(ROBOT, "r.urdf").unwrap();
        let base = &s.joint(s.find("base").unwrap()).visuals;
        assert_eq!(base.len(), 1);
        assert_eq!(
            base[0].shape,
            VisualShape::Box {
                size: Vector3::new(0.2, 0.3, 0.1)
            }
        );
        assert_eq!(base[0].rgba, None);
        let arm = &s.joint(s.find("shoulder").unwrap()).visuals;
        assert_eq!(arm.len(), 2);
        assert_eq!(
            arm[0].shape,
            VisualShape::Cylinder {
                radius: 0.04,
                length: 0.5
            }
        );
        assert_eq!(arm[0].rgba, Some([0.0, 0.0, 0.8, 1.0]), "by name");
        assert!((arm[0].origin.translation.vector - Vector3::new(0.0, 0.0, 0.25)).norm() < 1e-12);
        let pitch = UnitQuaternion::from_euler_angles(0.0, std::f64::consts::FRAC_PI_2, 0.0);
        assert!(arm[0].origin.rotation.angle_to(&pitch) < 1e-12);
        assert_eq!(
            arm[1].shape,
            VisualShape::Mesh {
                filename: "package://pkg/meshes/arm.stl".into(),
                scale: Vector3::new(0.001, 0.001, 0.002)
            }
        );
        assert_eq!(arm[1].rgba, Some([1.0, 0.5, 0.25, 0.5]), "inline");
        let tool = &s.joint(s.find("wrist").unwrap()).visuals;
        assert_eq!(tool[0].rgba, None, "a name no top-level material defines");
        assert_eq!(tool[1].shape, VisualShape::Sphere { radius: 0.03 });
        assert!(s.joint(0).body.is_some(), "capsules stay for the fallback");
    }

    /// A visual at the link frame's origin lands where forward kinematics
    /// puts the joint that carries the link, in any pose.
    #[test]
    fn a_visual_lands_in_its_link_frame() {
        let s = parse_urdf(ROBOT, "r.urdf").unwrap();
        let wrist = s.find("wrist").unwrap();
        let mut pose = s.rest_pose();
        for angle in [0.0, 0.7, -1.3] {
            pose[s.param_range(s.find("shoulder").unwrap()).start] = angle;
            let world = s.forward_kinematics(&pose).unwrap();
            let box_centre = world[wrist] * s.joint(wrist).visuals[0].origin * Point3::origin();
            // The tool frame: 0.5 m up the arm, which turns about its y
            // axis (the world's −x after the shoulder's 90° yaw) by `angle`.
            let arm = UnitQuaternion::from_euler_angles(0.0, 0.0, std::f64::consts::FRAC_PI_2)
                * UnitQuaternion::from_euler_angles(0.0, angle, 0.0);
            let tool = Vector3::new(0.0, 0.0, 0.1) + arm * Vector3::new(0.0, 0.0, 0.5);
            let expected = tool + arm * Vector3::new(0.05, 0.0, 0.0);
            assert!(
                (box_centre.coords - expected).norm() < 1e-9,
                "{angle}: {box_centre} vs {expected}"
            );
        }
    }

    #[test]
    fn a_bad_colour_is_an_error_naming_the_line() {
        let bad = ROBOT.replace("1 0.5 0.25 0.5", "1 0.5 nan 0.5");
        let e = parse_urdf(&bad, "r.urdf").unwrap_err().to_string();
        assert!(e.contains("r.urdf:15") && e.contains("rgba"), "{e}");
    }
}

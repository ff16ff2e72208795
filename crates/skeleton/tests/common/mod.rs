//! Inputs shared by the integration tests.

/// A URDF chain of `n` revolute joints `j1 … jn` about y, each limited to
/// ±1 rad, joining links `l0 … ln` with no inertials: one joint per line,
/// `extra` written inside every `<joint>` after its `<child>`.
pub(crate) fn long_urdf_chain(n: usize, extra: &str) -> String {
    let mut urdf = String::from("<robot name=\"long\">\n<link name=\"l0\"/>\n");
    for k in 1..=n {
        urdf.push_str(&format!(
            "<link name=\"l{k}\"/>\n<joint name=\"j{k}\" type=\"revolute\"><parent link=\"l{}\"/><child link=\"l{k}\"/>{extra}<axis xyz=\"0 1 0\"/><limit lower=\"-1\" upper=\"1\" effort=\"1\" velocity=\"1\"/></joint>\n",
            k - 1
        ));
    }
    urdf.push_str("</robot>\n");
    urdf
}

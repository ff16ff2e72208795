//! What the test files against the committed model assets share.

use std::path::PathBuf;

/// `assets/models`: the model, the test frame and the reference outputs.
pub(crate) fn models_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../assets/models")
}

/// The test frame: 256 × 256 RGB, decoded.
pub(crate) fn test_image() -> (Vec<u8>, u32, u32) {
    let file = std::fs::File::open(models_dir().join("blazepose_test_astronaut.png")).unwrap();
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    (buf, info.width, info.height)
}

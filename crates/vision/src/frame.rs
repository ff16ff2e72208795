//! Frames and the [`FrameSource`] interface every input implements: image
//! sequences, video files through the `ffmpeg` program, Y4M files read
//! directly, V4L2 webcams and synthetic renders.

use std::path::Path;

use crate::error::{Result, VisionError};

/// The largest frame width or height posecloud accepts from a Y4M header,
/// `ffprobe` or a webcam: 8192 pixels (8K UHD is 7680 × 4320; the tracker
/// samples every frame down to 160 × 120). Checked before anything of that
/// size is allocated, so a hostile header is a one-line error.
pub const MAX_FRAME_SIDE: u32 = 8192;

/// The largest RGB8 frame buffer, `MAX_FRAME_SIDE² × 3` bytes (192 MiB):
/// what one frame of the largest accepted size costs. A source holds at
/// most a few such buffers at a time (Y4M: the planes and the RGB frame;
/// video: two frames in its pipe; webcam: the newest frame and a copy).
pub(crate) const MAX_FRAME_BYTES: usize = 3 * (MAX_FRAME_SIDE as usize) * (MAX_FRAME_SIDE as usize);

/// Checks a frame size that `source_name` declares (a header, `ffprobe`'s
/// answer, a driver's format) against [`MAX_FRAME_SIDE`] and
/// [`MAX_FRAME_BYTES`] with checked arithmetic, before anything is
/// allocated; `fields` name the width and height as the source spells them
/// (`["W", "H"]` for Y4M). Returns the RGB8 byte count of one frame.
///
/// # Errors
/// [`VisionError::FrameLimit`] naming the source and the field: a zero
/// side, a side above [`MAX_FRAME_SIDE`], or a frame above
/// [`MAX_FRAME_BYTES`].
pub(crate) fn check_frame_size(
    source_name: &str,
    fields: [&str; 2],
    width: u64,
    height: u64,
) -> Result<usize> {
    let limit = |field: &str, value: u64, message: String| VisionError::FrameLimit {
        source_name: source_name.to_string(),
        field: field.to_string(),
        value,
        message,
    };
    for (field, value) in fields.into_iter().zip([width, height]) {
        if value == 0 {
            return Err(limit(
                field,
                value,
                "a frame needs at least one pixel".into(),
            ));
        }
        if value > u64::from(MAX_FRAME_SIDE) {
            return Err(limit(
                field,
                value,
                format!(
                    "above the largest accepted frame side {MAX_FRAME_SIDE} \
                     (frame {width} × {height} would need {} of RGB a frame)",
                    describe_bytes(width.checked_mul(height).and_then(|p| p.checked_mul(3)))
                ),
            ));
        }
    }
    width
        .checked_mul(height)
        .and_then(|p| p.checked_mul(3))
        .and_then(|b| usize::try_from(b).ok())
        .filter(|&b| b <= MAX_FRAME_BYTES)
        .ok_or_else(|| {
            limit(
                fields[0],
                width,
                format!("frame {width} × {height} is above {MAX_FRAME_BYTES} bytes of RGB"),
            )
        })
}

/// `bytes` for a message: "12.0 GiB", or "more than 16 EiB" on overflow.
fn describe_bytes(bytes: Option<u64>) -> String {
    match bytes {
        None => "more than 16 EiB".into(),
        Some(b) if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30)),
        Some(b) => format!("{:.1} MiB", b as f64 / f64::from(1u32 << 20)),
    }
}

/// One RGB8 frame (row-major, y down, 3 bytes a pixel) and when it was
/// taken, in seconds from the start of the source.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
    /// Seconds since the first frame (file sources: `index / fps`; webcams:
    /// the capture clock).
    pub timestamp: f64,
    /// Position in the source (0 = first frame).
    pub index: usize,
}

impl Frame {
    /// A frame after checking that `rgb` holds `width × height × 3` bytes.
    ///
    /// # Errors
    /// [`VisionError::BufferSize`] otherwise, or for an empty image.
    pub fn new(
        width: u32,
        height: u32,
        rgb: Vec<u8>,
        timestamp: f64,
        index: usize,
    ) -> Result<Self> {
        let expected = width as usize * height as usize * 3;
        if rgb.len() != expected || expected == 0 {
            return Err(VisionError::BufferSize {
                what: "RGB frame",
                width,
                height,
                expected,
                found: rgb.len(),
            });
        }
        Ok(Self {
            width,
            height,
            rgb,
            timestamp,
            index,
        })
    }

    /// The RGB triple at `(x, y)`.
    #[inline]
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        let i = 3 * (y as usize * self.width as usize + x as usize);
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    /// Writes the frame as a PNG.
    ///
    /// # Errors
    /// [`VisionError::Image`] naming the file.
    pub fn save_png(&self, path: impl AsRef<Path>) -> Result<()> {
        save_rgb_png(path.as_ref(), self.width, self.height, &self.rgb)
    }
}

pub(crate) fn save_rgb_png(path: &Path, width: u32, height: u32, rgb: &[u8]) -> Result<()> {
    save_png_as(path, width, height, rgb, image::ExtendedColorType::Rgb8)
}

/// Encodes `pixels` as a PNG and writes it whole or not at all
/// ([`crate::output::write_atomically`]): an interrupted write never leaves
/// a truncated image under `path`.
pub(crate) fn save_png_as(
    path: &Path,
    width: u32,
    height: u32,
    pixels: &[u8],
    colour: image::ExtendedColorType,
) -> Result<()> {
    use image::ImageEncoder as _;
    let mut bytes = Vec::new();
    image::codecs::png::PngEncoder::new(&mut bytes)
        .write_image(pixels, width, height, colour)
        .map_err(|e| VisionError::Image {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    crate::output::write_atomically(path, &bytes).map_err(|e| VisionError::io(path, e))
}

/// Reads an image file (PNG or JPEG) as RGB8; either side above
/// [`MAX_FRAME_SIDE`] is refused from the header, before decoding.
///
/// # Errors
/// [`VisionError::Io`] when the file cannot be opened, [`VisionError::Image`]
/// when it cannot be decoded.
pub fn load_rgb(path: impl AsRef<Path>) -> Result<(u32, u32, Vec<u8>)> {
    let path = path.as_ref();
    let mut reader = image::ImageReader::open(path)
        .map_err(|e| VisionError::io(path, e))?
        .with_guessed_format()
        .map_err(|e| VisionError::io(path, e))?;
    // The same bound as every other source, checked by the decoder against
    // the image header before it allocates the pixels.
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_FRAME_SIDE);
    limits.max_image_height = Some(MAX_FRAME_SIDE);
    reader.limits(limits);
    let img = reader.decode().map_err(|e| VisionError::Image {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let rgb = img.to_rgb8();
    let (w, h) = rgb.dimensions();
    Ok((w, h, rgb.into_raw()))
}

/// A stream of frames.
pub trait FrameSource: Send {
    /// What the source reads (a path, a device), for messages.
    fn name(&self) -> &str;
    /// Frame size in pixels.
    fn size(&self) -> (u32, u32);
    /// Nominal frames per second, when the source has one.
    fn fps(&self) -> Option<f64>;
    /// Number of frames, when known in advance.
    fn frame_count(&self) -> Option<usize>;
    /// The next frame, `Ok(None)` at the end of the source.
    ///
    /// # Errors
    /// A [`VisionError`] naming the file/program/device when a frame cannot
    /// be read; the source should not be used further after that.
    fn next_frame(&mut self) -> Result<Option<Frame>>;
    /// Makes `frame` the next frame [`Self::next_frame`] returns.
    ///
    /// # Errors
    /// [`VisionError::Seek`] for live sources or a frame past the end.
    fn seek(&mut self, frame: usize) -> Result<()> {
        Err(VisionError::Seek {
            source_name: self.name().to_string(),
            frame,
            message: "this source cannot seek".into(),
        })
    }
}

//! Frames and the [`FrameSource`] interface every input implements: image
//! sequences, video files through the `ffmpeg` program, Y4M files read
//! directly, V4L2 webcams and synthetic renders.

use std::path::Path;

use crate::error::{Result, VisionError};

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
    image::save_buffer_with_format(
        path,
        rgb,
        width,
        height,
        image::ExtendedColorType::Rgb8,
        image::ImageFormat::Png,
    )
    .map_err(|e| VisionError::Image {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Reads an image file (PNG or JPEG) as RGB8.
///
/// # Errors
/// [`VisionError::Io`] when the file cannot be opened, [`VisionError::Image`]
/// when it cannot be decoded.
pub fn load_rgb(path: impl AsRef<Path>) -> Result<(u32, u32, Vec<u8>)> {
    let path = path.as_ref();
    let reader = image::ImageReader::open(path)
        .map_err(|e| VisionError::io(path, e))?
        .with_guessed_format()
        .map_err(|e| VisionError::io(path, e))?;
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

//! YUV4MPEG2 (`.y4m`) files read directly, without `ffmpeg`: header
//! `YUV4MPEG2 W<w> H<h> F<n>:<d> C<colourspace> …`, then per frame a
//! `FRAME…\n` line and the Y, U, V planes. Colour spaces `420*`, `422`,
//! `444` and `mono` (8 bit); YCbCr → RGB with the BT.601 limited-range
//! matrix (what `ffmpeg` assumes for untagged Y4M).
//!
//! The header's size is untrusted: `W` and `H` are checked against
//! [`MAX_FRAME_SIDE`](crate::frame::MAX_FRAME_SIDE) with checked arithmetic
//! when the file is opened, and a frame's planes are read into a buffer that
//! grows with the bytes actually present, so a 60-byte file that declares
//! 65535 × 65535 is a one-line error and a truncated frame of a large
//! declared size costs no more memory than the file holds.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::error::{Result, VisionError};
use crate::frame::{Frame, FrameSource, check_frame_size};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chroma {
    /// Horizontal and vertical subsampling shifts.
    Sub(u32, u32),
    Mono,
}

/// A Y4M file.
#[derive(Debug)]
pub struct Y4mFile {
    path: PathBuf,
    name: String,
    reader: BufReader<File>,
    width: u32,
    height: u32,
    fps: f64,
    chroma: Chroma,
    /// Byte offset of the first `FRAME` line.
    data_start: u64,
    next: usize,
    plane: Vec<u8>,
}

/// BT.601 limited range YCbCr → RGB, rounded and clamped.
#[inline]
pub(super) fn ycbcr_to_rgb(y: u8, cb: u8, cr: u8) -> [u8; 3] {
    let c = 1.164_383_6 * (f32::from(y) - 16.0);
    let (d, e) = (f32::from(cb) - 128.0, f32::from(cr) - 128.0);
    let q = |x: f32| x.round().clamp(0.0, 255.0) as u8;
    [
        q(c + 1.596_026_8 * e),
        q(c - 0.391_762_3 * d - 0.812_967_6 * e),
        q(c + 2.017_232_2 * d),
    ]
}

impl Y4mFile {
    /// Reads the header.
    ///
    /// # Errors
    /// [`VisionError::Io`] for an unreadable file; [`VisionError::Video`]
    /// naming the header field that is missing or unsupported.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|e| VisionError::io(&path, e))?;
        let mut reader = BufReader::new(file);
        let mut header = Vec::new();
        reader
            .by_ref()
            .take(4096)
            .read_until(b'\n', &mut header)
            .map_err(|e| VisionError::io(&path, e))?;
        let err = |message: String| VisionError::Video {
            path: path.clone(),
            message,
        };
        let text = String::from_utf8_lossy(&header);
        let mut words = text.trim_end().split(' ');
        if words.next() != Some("YUV4MPEG2") || !header.ends_with(b"\n") {
            return Err(err("not a YUV4MPEG2 file (bad signature)".into()));
        }
        let (mut width, mut height, mut fps) = (0u64, 0u64, 25.0f64);
        let mut chroma = Chroma::Sub(1, 1);
        for w in words {
            let (tag, value) = w.split_at(w.chars().next().map_or(0, char::len_utf8));
            match tag {
                "W" => {
                    width = value
                        .parse()
                        .map_err(|_| err(format!("bad width W{value}")))?
                }
                "H" => {
                    height = value
                        .parse()
                        .map_err(|_| err(format!("bad height H{value}")))?
                }
                "F" => {
                    let (n, d) = value.split_once(':').unwrap_or((value, "1"));
                    let (n, d): (f64, f64) = (
                        n.parse()
                            .map_err(|_| err(format!("bad frame rate F{value}")))?,
                        d.parse()
                            .map_err(|_| err(format!("bad frame rate F{value}")))?,
                    );
                    if !(n > 0.0 && d > 0.0 && (n / d).is_finite()) {
                        return Err(err(format!("bad frame rate F{value}")));
                    }
                    fps = n / d;
                    super::check_fps(fps).map_err(|m| err(format!("F{value}: {m}")))?;
                }
                "C" => {
                    chroma = match value {
                        // 4:2:0 with its siting variants; 10/12-bit `420p10`
                        // and the like are refused below, not misread.
                        "420" | "420jpeg" | "420paldv" | "420mpeg2" => Chroma::Sub(1, 1),
                        "422" => Chroma::Sub(1, 0),
                        "444" => Chroma::Sub(0, 0),
                        "mono" => Chroma::Mono,
                        other => {
                            return Err(err(format!(
                                "colour space C{other} is not supported (420, 422, 444, mono, 8 bit)"
                            )));
                        }
                    }
                }
                _ => {} // interlacing, aspect, comments: not needed
            }
        }
        if width == 0 || height == 0 {
            return Err(err(format!("missing or zero size W{width} H{height}")));
        }
        let name = path.display().to_string();
        check_frame_size(&name, ["W", "H"], width, height)?;
        // Both sides are at most MAX_FRAME_SIDE now: u32 and every product
        // below fit a usize.
        let (width, height) = (width as u32, height as u32);
        let data_start = header.len() as u64;
        Ok(Self {
            name,
            path,
            reader,
            width,
            height,
            fps,
            chroma,
            data_start,
            next: 0,
            plane: Vec::new(),
        })
    }

    fn chroma_size(&self) -> (usize, usize) {
        match self.chroma {
            Chroma::Sub(sx, sy) => (
                (self.width as usize).div_ceil(1 << sx),
                (self.height as usize).div_ceil(1 << sy),
            ),
            Chroma::Mono => (0, 0),
        }
    }

    fn frame_bytes(&self) -> usize {
        let (cw, ch) = self.chroma_size();
        self.width as usize * self.height as usize + 2 * cw * ch
    }
}

impl FrameSource for Y4mFile {
    fn name(&self) -> &str {
        &self.name
    }
    fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }
    fn fps(&self) -> Option<f64> {
        Some(self.fps)
    }
    fn frame_count(&self) -> Option<usize> {
        None
    }

    fn next_frame(&mut self) -> Result<Option<Frame>> {
        let mut line = Vec::new();
        self.reader
            .by_ref()
            .take(1024)
            .read_until(b'\n', &mut line)
            .map_err(|e| VisionError::io(&self.path, e))?;
        if line.is_empty() {
            return Ok(None);
        }
        let index = self.next;
        if !line.starts_with(b"FRAME") || !line.ends_with(b"\n") {
            return Err(VisionError::Video {
                path: self.path.clone(),
                message: format!("frame {index}: expected a FRAME line"),
            });
        }
        let n = self.frame_bytes();
        // Grows with the bytes present (not `resize(n)`): a truncated file
        // never costs the declared frame size.
        self.plane.clear();
        let read = self
            .reader
            .by_ref()
            .take(n as u64)
            .read_to_end(&mut self.plane)
            .map_err(|e| VisionError::io(&self.path, e))?;
        if read < n {
            return Err(VisionError::Video {
                path: self.path.clone(),
                message: format!("truncated: frame {index} is incomplete ({read} of {n} bytes)"),
            });
        }
        let (w, h) = (self.width as usize, self.height as usize);
        let (cw, ch) = self.chroma_size();
        let (ys, rest) = self.plane.split_at(w * h);
        let (us, vs) = rest.split_at(cw * ch);
        let mut rgb = vec![0u8; w * h * 3];
        for y in 0..h {
            for x in 0..w {
                let luma = ys[y * w + x];
                let px = match self.chroma {
                    Chroma::Mono => ycbcr_to_rgb(luma, 128, 128),
                    Chroma::Sub(sx, sy) => {
                        let c = (y >> sy) * cw + (x >> sx);
                        ycbcr_to_rgb(luma, us[c], vs[c])
                    }
                };
                rgb[3 * (y * w + x)..3 * (y * w + x) + 3].copy_from_slice(&px);
            }
        }
        self.next += 1;
        Frame::new(self.width, self.height, rgb, index as f64 / self.fps, index).map(Some)
    }

    fn seek(&mut self, frame: usize) -> Result<()> {
        // FRAME lines carry no parameters in files we write; assume the
        // plain 6-byte "FRAME\n" when computing offsets.
        let offset = (frame as u64)
            .checked_mul(6 + self.frame_bytes() as u64)
            .and_then(|o| o.checked_add(self.data_start));
        let len = std::fs::metadata(&self.path)
            .map_err(|e| VisionError::io(&self.path, e))?
            .len();
        let Some(offset) = offset.filter(|&o| o <= len) else {
            return Err(VisionError::Seek {
                source_name: self.name.clone(),
                frame,
                message: "past the end of the file".into(),
            });
        };
        self.reader
            .seek(SeekFrom::Start(offset))
            .map_err(|e| VisionError::io(&self.path, e))?;
        self.next = frame;
        Ok(())
    }
}

//! V4L2 webcams through the pure-Rust `linuxvideo` crate (no libclang, no
//! second wgpu). Formats YUYV (converted with the BT.601 limited-range
//! matrix) and MJPEG (decoded by `image`'s JPEG decoder, which supplies the
//! default Huffman tables MJPEG frames omit). Capture runs on its own thread
//! and keeps only the newest frame, so a slow consumer never stalls the
//! camera and the camera never stalls the consumer beyond one frame time.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use linuxvideo::format::{FrameSizes, PixFormat, PixelFormat};
use linuxvideo::{BufType, BufTypes, Device};

use crate::error::{Result, VisionError};
use crate::frame::{Frame, FrameSource};
use crate::sources::y4m::ycbcr_to_rgb;

/// A pixel format posecloud can decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WebcamFormat {
    Yuyv,
    Mjpeg,
}

impl WebcamFormat {
    fn pixel_format(self) -> PixelFormat {
        match self {
            Self::Yuyv => PixelFormat::YUYV,
            Self::Mjpeg => PixelFormat::MJPG,
        }
    }
}

/// One capture device as listed by [`list_webcams`].
#[derive(Clone, Debug, PartialEq)]
pub struct WebcamInfo {
    pub path: PathBuf,
    /// The card name the driver reports.
    pub card: String,
    /// FourCC codes of every capture format the device offers.
    pub formats: Vec<String>,
    /// Frame sizes per supported format (YUYV and MJPEG only), largest first.
    pub sizes: Vec<(WebcamFormat, Vec<(u32, u32)>)>,
}

fn fourcc(p: PixelFormat) -> String {
    String::from_utf8_lossy(&p.as_fourcc()).into_owned()
}

fn describe_open_error(device: &Path, e: &std::io::Error) -> VisionError {
    let message = match e.raw_os_error() {
        Some(2) => "no such device: no camera is connected there".to_string(),
        Some(16) => "device busy: another program is using the camera".to_string(),
        Some(13) => "permission denied (add yourself to the `video` group)".to_string(),
        Some(25) => "not a V4L2 video device".to_string(),
        _ => e.to_string(),
    };
    VisionError::Webcam {
        device: device.display().to_string(),
        message,
    }
}

fn sizes_of(device: &Device, format: PixelFormat) -> Vec<(u32, u32)> {
    let mut out = match device.frame_sizes(format) {
        Ok(FrameSizes::Discrete(v)) => v.iter().map(|s| (s.width(), s.height())).collect(),
        Ok(FrameSizes::Stepwise(s) | FrameSizes::Continuous(s)) => {
            vec![
                (s.max_width(), s.max_height()),
                (s.min_width(), s.min_height()),
            ]
        }
        Err(_) => Vec::new(),
    };
    out.sort_by_key(|&(w, h)| std::cmp::Reverse(w * h));
    out.dedup();
    out
}

fn info_of(path: &Path, device: &Device) -> Result<WebcamInfo> {
    let caps = device
        .capabilities()
        .map_err(|e| describe_open_error(path, &e))?;
    let mut formats = Vec::new();
    let mut sizes = Vec::new();
    for f in device.formats(BufType::VIDEO_CAPTURE) {
        let Ok(f) = f else { continue };
        let p = f.pixel_format();
        formats.push(fourcc(p));
        for w in [WebcamFormat::Yuyv, WebcamFormat::Mjpeg] {
            if w.pixel_format() == p {
                sizes.push((w, sizes_of(device, p)));
            }
        }
    }
    Ok(WebcamInfo {
        path: path.to_path_buf(),
        card: caps.card().to_string(),
        formats,
        sizes,
    })
}

/// Every V4L2 device that can capture video.
///
/// # Errors
/// [`VisionError::Webcam`] when `/dev` cannot be listed.
pub fn list_webcams() -> Result<Vec<WebcamInfo>> {
    let devices = linuxvideo::list().map_err(|e| VisionError::Webcam {
        device: "/dev/video*".into(),
        message: e.to_string(),
    })?;
    let mut out = Vec::new();
    for d in devices.flatten() {
        if !d.supported_buf_types().contains(BufTypes::VIDEO_CAPTURE) {
            continue;
        }
        let Ok(path) = d.path() else { continue };
        if let Ok(info) = info_of(&path, &d) {
            out.push(info);
        }
    }
    Ok(out)
}

/// What to open.
#[derive(Clone, Debug, PartialEq)]
pub struct WebcamOptions {
    pub device: PathBuf,
    /// Requested size; the driver picks the nearest it supports.
    pub width: u32,
    pub height: u32,
    /// `None`: YUYV when offered, else MJPEG.
    pub format: Option<WebcamFormat>,
    /// How long [`FrameSource::next_frame`] waits for a frame.
    pub timeout: Duration,
}

impl WebcamOptions {
    /// `/dev/video<index>` at 640 × 480.
    pub fn index(index: u32) -> Self {
        Self {
            device: PathBuf::from(format!("/dev/video{index}")),
            width: 640,
            height: 480,
            format: None,
            timeout: Duration::from_secs(3),
        }
    }
}

#[derive(Default)]
struct Slot {
    frame: Option<Frame>,
    error: Option<String>,
    stopped: bool,
}

/// A running capture: a thread fills a one-frame slot with the newest frame.
pub struct Webcam {
    name: String,
    size: (u32, u32),
    format: WebcamFormat,
    shared: Arc<(Mutex<Slot>, Condvar)>,
    thread: Option<JoinHandle<()>>,
    timeout: Duration,
    last_index: Option<usize>,
}

impl std::fmt::Debug for Webcam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webcam")
            .field("name", &self.name)
            .field("size", &self.size)
            .field("format", &self.format)
            .finish()
    }
}

/// YUYV (`Y0 U Y1 V` per two pixels) to RGB8.
pub fn yuyv_to_rgb(src: &[u8], width: u32, height: u32, stride: usize, out: &mut Vec<u8>) {
    let (w, h) = (width as usize, height as usize);
    out.clear();
    out.resize(w * h * 3, 0);
    for y in 0..h {
        let row = &src[(y * stride).min(src.len())..];
        for x in 0..w {
            let pair = 4 * (x / 2);
            if pair + 3 >= row.len() {
                break;
            }
            let luma = row[pair + if x % 2 == 0 { 0 } else { 2 }];
            let px = ycbcr_to_rgb(luma, row[pair + 1], row[pair + 3]);
            out[3 * (y * w + x)..3 * (y * w + x) + 3].copy_from_slice(&px);
        }
    }
}

impl Webcam {
    /// Opens the device, negotiates the format and size, and starts the
    /// capture thread.
    ///
    /// # Errors
    /// [`VisionError::Webcam`] for no camera, a busy device, a device
    /// offering neither YUYV nor MJPEG, or a failed stream start.
    pub fn open(options: &WebcamOptions) -> Result<Self> {
        let path = options.device.clone();
        let name = path.display().to_string();
        let err = |message: String| VisionError::Webcam {
            device: name.clone(),
            message,
        };
        let device = Device::open(&path).map_err(|e| describe_open_error(&path, &e))?;
        let info = info_of(&path, &device)?;
        let offered: Vec<WebcamFormat> = info.sizes.iter().map(|(f, _)| *f).collect();
        let format = match options.format {
            Some(f) if offered.contains(&f) => f,
            Some(f) => {
                return Err(err(format!(
                    "format {f:?} is not supported by this camera (it offers {})",
                    info.formats.join(", ")
                )));
            }
            None => *offered.first().ok_or_else(|| {
                err(format!(
                    "unsupported formats {} (posecloud reads YUYV and MJPG)",
                    info.formats.join(", ")
                ))
            })?,
        };
        let capture = device
            .video_capture(PixFormat::new(
                options.width,
                options.height,
                format.pixel_format(),
            ))
            .map_err(|e| describe_open_error(&path, &e))?;
        let negotiated = capture.format();
        if negotiated.pixel_format() != format.pixel_format() {
            return Err(err(format!(
                "the driver switched to format {} (unsupported)",
                fourcc(negotiated.pixel_format())
            )));
        }
        let (w, h) = (negotiated.width(), negotiated.height());
        let stride = negotiated.bytes_per_line().max(2 * w) as usize;
        let mut stream = capture
            .into_stream()
            .map_err(|e| describe_open_error(&path, &e))?;
        let shared = Arc::new((Mutex::new(Slot::default()), Condvar::new()));
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(format!("webcam {name}"))
            .spawn(move || {
                let start = Instant::now();
                let mut rgb = Vec::new();
                let mut index = 0usize;
                loop {
                    if thread_shared.0.lock().map(|s| s.stopped).unwrap_or(true) {
                        break;
                    }
                    let result = stream.dequeue(|buf| {
                        let data = &buf[..];
                        match format {
                            WebcamFormat::Yuyv => {
                                yuyv_to_rgb(data, w, h, stride, &mut rgb);
                                Ok(Ok(()))
                            }
                            WebcamFormat::Mjpeg => Ok(image::load_from_memory_with_format(
                                data,
                                image::ImageFormat::Jpeg,
                            )
                            .map(|img| {
                                rgb = img.to_rgb8().into_raw();
                            })
                            .map_err(|e| e.to_string())),
                        }
                    });
                    let (lock, cvar) = &*thread_shared;
                    let Ok(mut slot) = lock.lock() else { break };
                    match result {
                        Ok(Ok(())) if rgb.len() == w as usize * h as usize * 3 => {
                            let t = start.elapsed().as_secs_f64();
                            slot.frame = Frame::new(w, h, rgb.clone(), t, index).ok();
                            index += 1;
                        }
                        // A corrupt MJPEG frame is dropped, the next may be fine.
                        Ok(_) => {}
                        Err(e) => {
                            slot.error = Some(e.to_string());
                            cvar.notify_all();
                            break;
                        }
                    }
                    cvar.notify_all();
                }
            })
            .map_err(|e| err(format!("cannot start the capture thread: {e}")))?;
        Ok(Self {
            name,
            size: (w, h),
            format,
            shared,
            thread: Some(thread),
            timeout: options.timeout,
            last_index: None,
        })
    }

    /// The negotiated format.
    pub fn format(&self) -> WebcamFormat {
        self.format
    }

    /// The newest frame if one arrived since the last call, without waiting.
    pub fn try_latest(&mut self) -> Option<Frame> {
        let slot = self.shared.0.lock().ok()?;
        let f = slot.frame.as_ref()?;
        if Some(f.index) == self.last_index {
            return None;
        }
        self.last_index = Some(f.index);
        Some(f.clone())
    }
}

impl Drop for Webcam {
    fn drop(&mut self) {
        if let Ok(mut s) = self.shared.0.lock() {
            s.stopped = true;
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl FrameSource for Webcam {
    fn name(&self) -> &str {
        &self.name
    }
    fn size(&self) -> (u32, u32) {
        self.size
    }
    fn fps(&self) -> Option<f64> {
        None
    }
    fn frame_count(&self) -> Option<usize> {
        None
    }

    /// Waits (at most the timeout) for a frame newer than the last one returned.
    fn next_frame(&mut self) -> Result<Option<Frame>> {
        let deadline = Instant::now() + self.timeout;
        let (lock, cvar) = &*self.shared;
        let mut slot = lock.lock().map_err(|_| VisionError::Webcam {
            device: self.name.clone(),
            message: "capture thread panicked".into(),
        })?;
        loop {
            if let Some(e) = &slot.error {
                return Err(VisionError::Webcam {
                    device: self.name.clone(),
                    message: format!("capture failed: {e}"),
                });
            }
            if let Some(f) = &slot.frame
                && Some(f.index) != self.last_index
            {
                self.last_index = Some(f.index);
                return Ok(Some(f.clone()));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(VisionError::Webcam {
                    device: self.name.clone(),
                    message: format!("no frame within {:?}", self.timeout),
                });
            }
            slot = cvar
                .wait_timeout(slot, deadline - now)
                .map_err(|_| VisionError::Webcam {
                    device: self.name.clone(),
                    message: "capture thread panicked".into(),
                })?
                .0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yuyv_grey_and_colour() {
        // Two pixels: Y0 = 16 (black), Y1 = 235 (white), neutral chroma.
        let mut out = Vec::new();
        yuyv_to_rgb(&[16, 128, 235, 128], 2, 1, 4, &mut out);
        assert_eq!(out, vec![0, 0, 0, 255, 255, 255]);
        // Strong Cr: red dominates.
        yuyv_to_rgb(&[81, 90, 81, 240], 2, 1, 4, &mut out);
        assert!(out[0] > 200 && out[1] < 40 && out[2] < 40, "{out:?}");
    }

    #[test]
    fn missing_device_is_a_clear_error() {
        let e = Webcam::open(&WebcamOptions {
            device: PathBuf::from("/dev/video-posecloud-none"),
            ..WebcamOptions::index(0)
        })
        .unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("/dev/video-posecloud-none") && s.contains("no camera"),
            "{s}"
        );
        let _ = list_webcams().unwrap();
    }

    #[test]
    #[ignore = "needs a webcam at /dev/video0"]
    fn captures_frames_from_video0() {
        let mut cam = Webcam::open(&WebcamOptions::index(0)).unwrap();
        let (w, h) = cam.size();
        for _ in 0..3 {
            let f = cam.next_frame().unwrap().unwrap();
            assert_eq!((f.width, f.height), (w, h));
        }
    }
}

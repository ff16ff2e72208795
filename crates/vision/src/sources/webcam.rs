//! V4L2 webcams through the pure-Rust `linuxvideo` crate (no libclang, no
//! second wgpu). Formats YUYV (converted with the BT.601 limited-range
//! matrix) and MJPEG (decoded by `image`'s JPEG decoder, which supplies the
//! default Huffman tables MJPEG frames omit). Capture runs on its own thread
//! and keeps only the newest frame, so a slow consumer never stalls the
//! camera and the camera never stalls the consumer beyond one frame time.
//!
//! A camera is untrusted the way a file is: the size the driver negotiates
//! is checked against [`MAX_FRAME_SIDE`](crate::frame::MAX_FRAME_SIDE), an
//! MJPEG frame may not declare a larger image than that size, a read waits
//! at most [`WebcamOptions::timeout`], and dropping a [`Webcam`] whose
//! camera has stalled returns after at most [`STOP_WAIT`]: the capture
//! thread polls the driver instead of blocking in it, checks a stop flag
//! between polls, and is detached (it ends by itself once the driver
//! returns) if it has not stopped by then.
//!
//! [`list_webcams`] lists the capture devices with their decodable sizes for
//! a picker. Built without the `webcam` feature (or off Linux), the same
//! items exist and [`list_webcams`] and [`Webcam::open`] say so.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Result, VisionError};
use crate::frame::{Frame, FrameSource};
use crate::sources::y4m::ycbcr_to_rgb;

#[cfg(all(feature = "webcam", target_os = "linux"))]
mod v4l2;

/// A pixel format posecloud can decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WebcamFormat {
    Yuyv,
    Mjpeg,
}

impl WebcamFormat {
    /// The V4L2 FourCC code (`YUYV`, `MJPG`).
    pub fn fourcc(self) -> &'static str {
        match self {
            Self::Yuyv => "YUYV",
            Self::Mjpeg => "MJPG",
        }
    }
}

/// One capture device as listed by [`list_webcams`].
#[derive(Clone, Debug, PartialEq)]
pub struct WebcamInfo {
    /// The device node, e.g. `/dev/video0`.
    pub path: PathBuf,
    /// The card name the driver reports.
    pub card: String,
    /// FourCC codes of every capture format the device offers.
    pub formats: Vec<String>,
    /// Frame sizes per format posecloud decodes (YUYV, MJPEG), largest
    /// first, each at most [`MAX_FRAME_SIDE`](crate::frame::MAX_FRAME_SIDE)
    /// a side. A device with a continuous or stepwise range lists its
    /// smallest and largest size and the common sizes (320 × 240 … 1920 ×
    /// 1080) it can produce.
    pub sizes: Vec<(WebcamFormat, Vec<(u32, u32)>)>,
}

impl WebcamInfo {
    /// The sizes of `format` (empty when the device does not offer it).
    pub fn sizes_of(&self, format: WebcamFormat) -> &[(u32, u32)] {
        self.sizes
            .iter()
            .find(|(f, _)| *f == format)
            .map_or(&[], |(_, s)| s.as_slice())
    }

    /// Whether posecloud can decode anything this device offers.
    pub fn decodable(&self) -> bool {
        self.sizes.iter().any(|(_, s)| !s.is_empty())
    }
}

/// Every V4L2 device that can capture video, with its card name and the
/// sizes of the formats posecloud decodes. A device that cannot be opened
/// (busy, no permission) or offers no capture is left out; `/dev` without
/// video devices gives an empty list.
///
/// # Errors
/// [`VisionError::Webcam`] when `/dev` cannot be listed, or when built
/// without the `webcam` feature or off Linux.
pub fn list_webcams() -> Result<Vec<WebcamInfo>> {
    #[cfg(all(feature = "webcam", target_os = "linux"))]
    {
        v4l2::list_webcams()
    }
    #[cfg(not(all(feature = "webcam", target_os = "linux")))]
    {
        Err(no_webcam_support("/dev/video*"))
    }
}

#[cfg(not(all(feature = "webcam", target_os = "linux")))]
fn no_webcam_support(device: &str) -> VisionError {
    VisionError::Webcam {
        device: device.into(),
        message: "built without webcam support (cargo feature `webcam`, Linux only)".into(),
    }
}

/// The offered size nearest to `requested`: the least
/// `|w − w_req| + |h − h_req|`, the larger image on a tie. `None` when
/// nothing is offered.
pub(super) fn nearest_size(offered: &[(u32, u32)], requested: (u32, u32)) -> Option<(u32, u32)> {
    let distance = |&(w, h): &(u32, u32)| {
        u64::from(w.abs_diff(requested.0)) + u64::from(h.abs_diff(requested.1))
    };
    offered.iter().copied().min_by(|a, b| {
        distance(a)
            .cmp(&distance(b))
            .then_with(|| (u64::from(b.0) * u64::from(b.1)).cmp(&(u64::from(a.0) * u64::from(a.1))))
    })
}

/// What to open.
#[derive(Clone, Debug, PartialEq)]
pub struct WebcamOptions {
    pub device: PathBuf,
    /// Requested size: the camera is opened at the supported size nearest
    /// to it ([`nearest_size`]); [`Webcam::size`] reports what it gives.
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

/// How long dropping a [`Webcam`] waits for its capture thread before
/// detaching it (a stalled driver call).
pub(super) const STOP_WAIT: Duration = Duration::from_secs(1);

/// How often the capture thread asks the driver for a filled buffer (and
/// checks the stop flag) while none is ready.
const POLL_INTERVAL: Duration = Duration::from_millis(4);

/// What one call of a capture thread's grab function gave.
#[cfg_attr(not(all(feature = "webcam", target_os = "linux")), allow(dead_code))]
pub(crate) enum Grab {
    /// A frame was decoded into the buffer.
    Frame,
    /// A frame was dropped (a corrupt MJPEG frame: the next may be fine).
    Skip,
    /// No frame is ready yet: poll again after [`POLL_INTERVAL`].
    Idle,
    /// The device failed; capture ends with this message.
    Failed(String),
}

#[derive(Default)]
struct Slot {
    frame: Option<Frame>,
    error: Option<String>,
    /// The capture thread has returned (or unwound).
    finished: bool,
}

#[derive(Default)]
struct Shared {
    slot: Mutex<Slot>,
    changed: Condvar,
    stop: AtomicBool,
}

/// Marks the slot finished when the capture thread ends, by return or
/// panic, so that [`Webcam::drop`] never waits for a dead thread.
struct Finished(Arc<Shared>);

impl Drop for Finished {
    fn drop(&mut self) {
        if let Ok(mut slot) = self.0.slot.lock() {
            slot.finished = true;
            if std::thread::panicking() && slot.error.is_none() {
                slot.error = Some("the capture thread panicked".into());
            }
        }
        self.0.changed.notify_all();
    }
}

/// A running capture: a thread fills a one-frame slot with the newest frame.
pub struct Webcam {
    name: String,
    size: (u32, u32),
    requested: (u32, u32),
    format: WebcamFormat,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    timeout: Duration,
    last_index: Option<usize>,
}

impl std::fmt::Debug for Webcam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webcam")
            .field("name", &self.name)
            .field("size", &self.size)
            .field("requested", &self.requested)
            .field("format", &self.format)
            .finish()
    }
}

/// YUYV (`Y0 U Y1 V` per two pixels) to RGB8.
pub(super) fn yuyv_to_rgb(src: &[u8], width: u32, height: u32, stride: usize, out: &mut Vec<u8>) {
    let (w, h) = (width as usize, height as usize);
    out.clear();
    out.resize(w * h * 3, 0);
    for y in 0..h {
        let row = &src[y.saturating_mul(stride).min(src.len())..];
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

/// Decodes one MJPEG frame that must be `width × height`; the decoder
/// refuses a larger declared image before allocating it.
pub(super) fn mjpeg_to_rgb(
    src: &[u8],
    width: u32,
    height: u32,
    out: &mut Vec<u8>,
) -> std::result::Result<(), String> {
    let mut reader =
        image::ImageReader::with_format(std::io::Cursor::new(src), image::ImageFormat::Jpeg);
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(width);
    limits.max_image_height = Some(height);
    reader.limits(limits);
    let img = reader.decode().map_err(|e| e.to_string())?;
    if (img.width(), img.height()) != (width, height) {
        return Err(format!(
            "frame is {} × {}, not the negotiated {width} × {height}",
            img.width(),
            img.height()
        ));
    }
    *out = img.to_rgb8().into_raw();
    Ok(())
}

impl Webcam {
    /// Opens the device, picks the supported size nearest to the requested
    /// one ([`nearest_size`]), negotiates the format and starts the capture
    /// thread. [`Self::size`] is the size the driver gives, and
    /// [`Self::requested_size`] what was asked for.
    ///
    /// # Errors
    /// [`VisionError::Webcam`] for no camera, a busy device, a device
    /// offering neither YUYV nor MJPEG, a failed stream start, or a build
    /// without the `webcam` feature; [`VisionError::FrameLimit`] when the
    /// driver negotiates a size beyond
    /// [`MAX_FRAME_SIDE`](crate::frame::MAX_FRAME_SIDE).
    pub fn open(options: &WebcamOptions) -> Result<Self> {
        #[cfg(all(feature = "webcam", target_os = "linux"))]
        {
            v4l2::open(options)
        }
        #[cfg(not(all(feature = "webcam", target_os = "linux")))]
        {
            Err(no_webcam_support(&options.device.display().to_string()))
        }
    }

    /// Starts a capture thread that calls `grab` until it fails or the
    /// webcam is dropped. `grab` writes a `size` RGB8 frame into its buffer
    /// and should return [`Grab::Idle`] rather than block when no frame is
    /// ready, so that the stop flag is seen.
    #[cfg_attr(not(all(feature = "webcam", target_os = "linux")), allow(dead_code))]
    pub(crate) fn spawn(
        name: String,
        size: (u32, u32),
        requested: (u32, u32),
        format: WebcamFormat,
        timeout: Duration,
        mut grab: impl FnMut(&mut Vec<u8>) -> Grab + Send + 'static,
    ) -> Result<Self> {
        let shared = Arc::new(Shared::default());
        let thread_shared = Arc::clone(&shared);
        let (w, h) = size;
        let bytes = w as usize * h as usize * 3;
        let thread = std::thread::Builder::new()
            .name(format!("webcam {name}"))
            .spawn(move || {
                let shared = Finished(thread_shared);
                let start = Instant::now();
                let mut rgb = Vec::new();
                let mut index = 0usize;
                while !shared.0.stop.load(Ordering::Relaxed) {
                    match grab(&mut rgb) {
                        Grab::Frame if rgb.len() == bytes => {
                            let t = start.elapsed().as_secs_f64();
                            let frame = Frame::new(w, h, std::mem::take(&mut rgb), t, index);
                            index += 1;
                            let Ok(mut slot) = shared.0.slot.lock() else {
                                break;
                            };
                            slot.frame = frame.ok();
                            drop(slot);
                            shared.0.changed.notify_all();
                        }
                        Grab::Frame | Grab::Skip => {}
                        Grab::Idle => std::thread::sleep(POLL_INTERVAL),
                        Grab::Failed(e) => {
                            if let Ok(mut slot) = shared.0.slot.lock() {
                                slot.error = Some(e);
                            }
                            break;
                        }
                    }
                }
            })
            .map_err(|e| VisionError::Webcam {
                device: name.clone(),
                message: format!("cannot start the capture thread: {e}"),
            })?;
        Ok(Self {
            name,
            size,
            requested,
            format,
            shared,
            thread: Some(thread),
            timeout,
            last_index: None,
        })
    }

    /// The negotiated format.
    pub fn format(&self) -> WebcamFormat {
        self.format
    }

    /// The size that was asked for ([`Self::size`] is what the camera
    /// gives: the supported size nearest to it).
    pub fn requested_size(&self) -> (u32, u32) {
        self.requested
    }

    /// "/dev/video0: 640 × 480 YUYV (asked for 600 × 400)", for a log line.
    pub fn describe(&self) -> String {
        let (w, h) = self.size;
        let mut s = format!("{}: {w} × {h} {}", self.name, self.format.fourcc());
        if self.requested != self.size {
            s.push_str(&format!(
                " (asked for {} × {})",
                self.requested.0, self.requested.1
            ));
        }
        s
    }

    /// The newest frame if one arrived since the last call, without waiting.
    pub fn try_latest(&mut self) -> Option<Frame> {
        let slot = self.shared.slot.lock().ok()?;
        let f = slot.frame.as_ref()?;
        if Some(f.index) == self.last_index {
            return None;
        }
        self.last_index = Some(f.index);
        Some(f.clone())
    }

    fn error(&self, message: impl Into<String>) -> VisionError {
        VisionError::Webcam {
            device: self.name.clone(),
            message: message.into(),
        }
    }
}

impl Drop for Webcam {
    /// Stops the capture thread; returns after at most [`STOP_WAIT`] even
    /// when the driver call it is in never returns (the thread is then
    /// detached and ends, closing the device, once the driver returns).
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        let deadline = Instant::now() + STOP_WAIT;
        let mut finished = false;
        if let Ok(mut slot) = self.shared.slot.lock() {
            while !slot.finished {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                slot = match self.shared.changed.wait_timeout(slot, deadline - now) {
                    Ok((s, _)) => s,
                    Err(_) => return,
                };
            }
            finished = slot.finished;
        }
        if let Some(t) = self.thread.take()
            && finished
        {
            // It has returned: joining cannot block.
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
        let mut slot = self
            .shared
            .slot
            .lock()
            .map_err(|_| self.error("capture thread panicked"))?;
        loop {
            if let Some(e) = &slot.error {
                return Err(self.error(format!("capture failed: {e}")));
            }
            if let Some(f) = &slot.frame
                && Some(f.index) != self.last_index
            {
                self.last_index = Some(f.index);
                return Ok(Some(f.clone()));
            }
            if slot.finished {
                return Err(self.error("capture stopped"));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(VisionError::Timeout {
                    source_name: self.name.clone(),
                    seconds: self.timeout.as_secs_f64(),
                    what: "a frame from the camera".into(),
                });
            }
            slot = self
                .shared
                .changed
                .wait_timeout(slot, deadline - now)
                .map_err(|_| self.error("capture thread panicked"))?
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
        // A short buffer leaves the rest black instead of panicking.
        yuyv_to_rgb(&[16, 128], 4, 2, usize::MAX, &mut out);
        assert_eq!(out.len(), 24);
    }

    #[test]
    fn mjpeg_frames_of_another_size_are_refused() {
        let mut jpeg = Vec::new();
        image::RgbImage::from_pixel(16, 8, image::Rgb([200, 10, 10]))
            .write_to(
                &mut std::io::Cursor::new(&mut jpeg),
                image::ImageFormat::Jpeg,
            )
            .unwrap();
        let mut out = Vec::new();
        mjpeg_to_rgb(&jpeg, 16, 8, &mut out).unwrap();
        assert_eq!(out.len(), 16 * 8 * 3);
        assert!(out[0] > 150 && out[1] < 60, "{:?}", &out[..3]);
        // Larger than negotiated: refused from the header by the limits.
        assert!(mjpeg_to_rgb(&jpeg, 8, 8, &mut out).is_err());
        assert!(mjpeg_to_rgb(&jpeg, 32, 8, &mut out).is_err());
        assert!(mjpeg_to_rgb(b"\xff\xd8 not a jpeg", 16, 8, &mut out).is_err());
    }

    #[test]
    fn nearest_size_prefers_the_closest_then_the_larger() {
        let offered = [(1280, 720), (640, 480), (640, 360), (320, 240)];
        assert_eq!(nearest_size(&offered, (640, 480)), Some((640, 480)));
        assert_eq!(nearest_size(&offered, (600, 400)), Some((640, 360)));
        assert_eq!(nearest_size(&offered, (1920, 1080)), Some((1280, 720)));
        assert_eq!(nearest_size(&offered, (1, 1)), Some((320, 240)));
        // 640 × 420 is 60 from both 640 × 480 and 640 × 360: the larger.
        assert_eq!(nearest_size(&offered, (640, 420)), Some((640, 480)));
        assert_eq!(nearest_size(&[], (640, 480)), None);
        assert_eq!(
            nearest_size(&[(u32::MAX, u32::MAX)], (0, 0)),
            Some((u32::MAX, u32::MAX))
        );
    }

    #[test]
    fn missing_device_is_a_clear_error() {
        let e = Webcam::open(&WebcamOptions {
            device: PathBuf::from("/dev/video-posecloud-none"),
            ..WebcamOptions::index(0)
        })
        .unwrap_err();
        let s = e.to_string();
        if cfg!(all(feature = "webcam", target_os = "linux")) {
            assert!(
                s.contains("/dev/video-posecloud-none") && s.contains("no camera"),
                "{s}"
            );
        } else {
            assert!(s.contains("without webcam support"), "{s}");
        }
    }

    #[test]
    fn listing_without_cameras_is_empty_not_an_error() {
        if !cfg!(all(feature = "webcam", target_os = "linux")) {
            let e = list_webcams().unwrap_err();
            assert!(e.to_string().contains("without webcam support"), "{e}");
            return;
        }
        let cameras = list_webcams().unwrap();
        let has_video = std::fs::read_dir("/dev").is_ok_and(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("video"))
        });
        if !has_video {
            assert!(cameras.is_empty(), "{cameras:?}");
        }
        for c in &cameras {
            assert!(c.path.starts_with("/dev"), "{c:?}");
            for (_, sizes) in &c.sizes {
                assert!(sizes.windows(2).all(|p| p[0].0 * p[0].1 >= p[1].0 * p[1].1));
            }
        }
    }

    /// A camera whose driver call blocks (here: for a minute, as a stalled
    /// USB camera does) and one that delivers a frame then stalls.
    fn stalled(deliver_first: bool) -> Webcam {
        let mut delivered = !deliver_first;
        Webcam::spawn(
            "/dev/video-stalled".into(),
            (4, 2),
            (4, 2),
            WebcamFormat::Yuyv,
            Duration::from_millis(300),
            move |rgb| {
                if !delivered {
                    delivered = true;
                    *rgb = vec![7; 4 * 2 * 3];
                    return Grab::Frame;
                }
                std::thread::sleep(Duration::from_secs(60));
                Grab::Idle
            },
        )
        .unwrap()
    }

    #[test]
    fn a_stalled_camera_times_out_and_drops_promptly() {
        let mut cam = stalled(true);
        let f = cam.next_frame().unwrap().unwrap();
        assert_eq!((f.width, f.height, f.index), (4, 2, 0));
        let t = Instant::now();
        let e = cam.next_frame().unwrap_err();
        assert!(matches!(e, VisionError::Timeout { .. }), "{e}");
        assert!(e.to_string().contains("/dev/video-stalled"), "{e}");
        assert!(t.elapsed() >= Duration::from_millis(300));
        // Before the fix `drop` joined the thread: a minute here.
        let t = Instant::now();
        drop(cam);
        let waited = t.elapsed();
        assert!(
            waited < STOP_WAIT + Duration::from_secs(2),
            "drop waited {waited:?}"
        );
    }

    #[test]
    fn an_idle_camera_stops_at_once_and_failures_are_reported() {
        // Polling (Idle) sees the stop flag within a poll interval.
        let cam = Webcam::spawn(
            "/dev/video-idle".into(),
            (2, 2),
            (640, 480),
            WebcamFormat::Mjpeg,
            Duration::from_millis(50),
            |_| Grab::Idle,
        )
        .unwrap();
        assert_eq!(cam.requested_size(), (640, 480));
        assert!(
            cam.describe().contains("asked for 640 × 480"),
            "{}",
            cam.describe()
        );
        let t = Instant::now();
        drop(cam);
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "{:?}",
            t.elapsed()
        );
        // The error of a camera whose first grab is `grab`.
        let first_error = |device: &str, grab: fn(&mut Vec<u8>) -> Grab| {
            let mut cam = Webcam::spawn(
                device.into(),
                (2, 2),
                (2, 2),
                WebcamFormat::Yuyv,
                Duration::from_secs(5),
                grab,
            )
            .unwrap();
            cam.next_frame().unwrap_err().to_string()
        };
        // A device error ends capture with that message.
        let e = first_error("/dev/video-gone", |_| Grab::Failed("No such device".into()));
        assert!(
            e.contains("/dev/video-gone") && e.contains("No such device"),
            "{e}"
        );
        // A panicking grab is an error, not a hang.
        let e = first_error("/dev/video-panics", |_| panic!("driver bug"));
        assert!(e.contains("panicked"), "{e}");
    }

    #[test]
    #[ignore = "needs a webcam at /dev/video0"]
    fn captures_frames_from_video0() {
        let mut cam = Webcam::open(&WebcamOptions::index(0)).unwrap();
        eprintln!("{}", cam.describe());
        let (w, h) = cam.size();
        for _ in 0..3 {
            let f = cam.next_frame().unwrap().unwrap();
            assert_eq!((f.width, f.height), (w, h));
        }
    }
}

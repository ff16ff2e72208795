//! The `linuxvideo` half of [`super`]: listing devices, negotiating a
//! format and size, and the grab function of the capture thread.

use std::path::Path;

use linuxvideo::format::{FrameSizes, PixFormat, PixelFormat};
use linuxvideo::{BufType, BufTypes, Device};

use super::{
    Grab, Webcam, WebcamFormat, WebcamInfo, WebcamOptions, mjpeg_to_rgb, nearest_size, yuyv_to_rgb,
};
use crate::error::{Result, VisionError};
use crate::frame::{MAX_FRAME_SIDE, check_frame_size};

/// Sizes a picker offers from a continuous or stepwise range, where the
/// range holds them.
const COMMON_SIZES: [(u32, u32); 6] = [
    (320, 240),
    (640, 360),
    (640, 480),
    (800, 600),
    (1280, 720),
    (1920, 1080),
];

impl WebcamFormat {
    fn pixel_format(self) -> PixelFormat {
        match self {
            Self::Yuyv => PixelFormat::YUYV,
            Self::Mjpeg => PixelFormat::MJPG,
        }
    }
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

/// What a device says it can capture in one format.
enum Offer {
    Discrete(Vec<(u32, u32)>),
    /// `min`, `max`, `step` per side.
    Range {
        min: (u32, u32),
        max: (u32, u32),
        step: (u32, u32),
    },
}

impl Offer {
    fn of(device: &Device, format: PixelFormat) -> Self {
        match device.frame_sizes(format) {
            Ok(FrameSizes::Discrete(v)) => {
                Self::Discrete(v.iter().map(|s| (s.width(), s.height())).collect())
            }
            Ok(FrameSizes::Stepwise(s)) => Self::Range {
                min: (s.min_width(), s.min_height()),
                max: (s.max_width(), s.max_height()),
                step: (s.step_width().max(1), s.step_height().max(1)),
            },
            Ok(FrameSizes::Continuous(s)) => Self::Range {
                min: (s.min_width(), s.min_height()),
                max: (s.max_width(), s.max_height()),
                step: (1, 1),
            },
            Err(_) => Self::Discrete(Vec::new()),
        }
    }

    /// `v` inside `[min, max]` on the grid `min + k·step` (nearest).
    fn fit(v: u32, min: u32, max: u32, step: u32) -> u32 {
        let v = v.clamp(min, max.max(min));
        let k = (u64::from(v - min) + u64::from(step) / 2) / u64::from(step);
        let fitted = u64::from(min) + k * u64::from(step);
        u32::try_from(fitted).unwrap_or(max).min(max.max(min))
    }

    /// The sizes a picker shows, at most [`MAX_FRAME_SIDE`] a side,
    /// largest first.
    fn sizes(&self) -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = match self {
            Self::Discrete(v) => v.clone(),
            Self::Range { min, max, step } => {
                let fits = |(w, h): (u32, u32)| {
                    Self::fit(w, min.0, max.0, step.0) == w
                        && Self::fit(h, min.1, max.1, step.1) == h
                };
                let mut v = vec![*min, *max];
                v.extend(COMMON_SIZES.into_iter().filter(|&s| fits(s)));
                v
            }
        };
        out.retain(|&(w, h)| {
            (1..=MAX_FRAME_SIDE).contains(&w) && (1..=MAX_FRAME_SIDE).contains(&h)
        });
        out.sort_by_key(|&(w, h)| std::cmp::Reverse(u64::from(w) * u64::from(h)));
        out.dedup();
        out
    }

    /// The size to ask the driver for, given `requested`.
    fn choose(&self, requested: (u32, u32)) -> Option<(u32, u32)> {
        match self {
            Self::Discrete(_) => nearest_size(&self.sizes(), requested),
            Self::Range { min, max, step } => {
                let max = (max.0.min(MAX_FRAME_SIDE), max.1.min(MAX_FRAME_SIDE));
                Some((
                    Self::fit(requested.0, min.0, max.0, step.0),
                    Self::fit(requested.1, min.1, max.1, step.1),
                ))
            }
        }
    }
}

fn info_of(path: &Path, device: &Device) -> Result<(WebcamInfo, Vec<(WebcamFormat, Offer)>)> {
    let caps = device
        .capabilities()
        .map_err(|e| describe_open_error(path, &e))?;
    let mut formats = Vec::new();
    let mut offers = Vec::new();
    for f in device.formats(BufType::VIDEO_CAPTURE) {
        let Ok(f) = f else { continue };
        let p = f.pixel_format();
        formats.push(fourcc(p));
        for w in [WebcamFormat::Yuyv, WebcamFormat::Mjpeg] {
            if w.pixel_format() == p {
                offers.push((w, Offer::of(device, p)));
            }
        }
    }
    // YUYV first: no decoder between the camera and the frame.
    offers.sort_by_key(|(f, _)| *f != WebcamFormat::Yuyv);
    let info = WebcamInfo {
        path: path.to_path_buf(),
        card: caps.card().to_string(),
        formats,
        sizes: offers.iter().map(|(f, o)| (*f, o.sizes())).collect(),
    };
    Ok((info, offers))
}

pub(super) fn list_webcams() -> Result<Vec<WebcamInfo>> {
    let devices = match linuxvideo::list() {
        Ok(d) => d,
        // No /dev at all (a sandbox): no webcams.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(VisionError::Webcam {
                device: "/dev/video*".into(),
                message: format!("cannot list /dev: {e}"),
            });
        }
    };
    let mut out = Vec::new();
    for d in devices.flatten() {
        if !d.supported_buf_types().contains(BufTypes::VIDEO_CAPTURE) {
            continue;
        }
        let Ok(path) = d.path() else { continue };
        if let Ok((info, _)) = info_of(&path, &d) {
            out.push(info);
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

pub(super) fn open(options: &WebcamOptions) -> Result<Webcam> {
    let path = options.device.clone();
    let name = path.display().to_string();
    let err = |message: String| VisionError::Webcam {
        device: name.clone(),
        message,
    };
    let device = Device::open(&path).map_err(|e| describe_open_error(&path, &e))?;
    let (info, offers) = info_of(&path, &device)?;
    let offered: Vec<WebcamFormat> = offers.iter().map(|(f, _)| *f).collect();
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
    let requested = (options.width, options.height);
    let offer = offers.iter().find(|(f, _)| *f == format).map(|(_, o)| o);
    // A driver that lists no sizes gets the request as it is.
    let chosen = offer.and_then(|o| o.choose(requested)).unwrap_or(requested);
    let capture = device
        .video_capture(PixFormat::new(chosen.0, chosen.1, format.pixel_format()))
        .map_err(|e| describe_open_error(&path, &e))?;
    let negotiated = capture.format();
    if negotiated.pixel_format() != format.pixel_format() {
        return Err(err(format!(
            "the driver switched to format {} (unsupported)",
            fourcc(negotiated.pixel_format())
        )));
    }
    let (w, h) = (negotiated.width(), negotiated.height());
    check_frame_size(
        &name,
        ["negotiated width", "negotiated height"],
        u64::from(w),
        u64::from(h),
    )?;
    let stride = negotiated.bytes_per_line().max(2 * w) as usize;
    let mut stream = capture
        .into_stream()
        .map_err(|e| describe_open_error(&path, &e))?;
    let grab = move |rgb: &mut Vec<u8>| {
        // Poll rather than block in VIDIOC_DQBUF, so that the stop flag is
        // seen while the camera delivers nothing; a driver that cannot say
        // is read blocking.
        if let Ok(true) = stream.will_block() {
            return Grab::Idle;
        }
        let decoded = stream.dequeue(|buf| {
            Ok(match format {
                WebcamFormat::Yuyv => {
                    yuyv_to_rgb(&buf[..], w, h, stride, rgb);
                    Ok(())
                }
                WebcamFormat::Mjpeg => mjpeg_to_rgb(&buf[..], w, h, rgb),
            })
        });
        match decoded {
            Ok(Ok(())) => Grab::Frame,
            Ok(Err(_)) => Grab::Skip,
            Err(e) => Grab::Failed(e.to_string()),
        }
    };
    Webcam::spawn(name, (w, h), requested, format, options.timeout, grab)
}

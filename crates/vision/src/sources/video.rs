//! Video files of any container and codec, decoded by the `ffmpeg` program
//! running as a child process that pipes raw `rgb24` frames
//! (`ffmpeg -i FILE -f rawvideo -pix_fmt rgb24 -`); size, frame rate and
//! frame count come from `ffprobe`. Nothing is linked at build time.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

use crate::error::{Result, VisionError};
use crate::frame::{Frame, FrameSource};

/// What `ffprobe` reports about the first video stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VideoInfo {
    pub width: u32,
    pub height: u32,
    pub fps: f64,
    /// Frames announced by the container, when it says.
    pub frames: Option<usize>,
}

fn program_error(program: &str, e: &std::io::Error) -> VisionError {
    VisionError::Program {
        program: program.to_string(),
        message: if e.kind() == std::io::ErrorKind::NotFound {
            format!("not found on PATH (install {program}, e.g. `apt-get install ffmpeg`)")
        } else {
            e.to_string()
        },
    }
}

fn parse_rate(s: &str) -> Option<f64> {
    let (n, d) = s.split_once('/').unwrap_or((s, "1"));
    let (n, d): (f64, f64) = (n.trim().parse().ok()?, d.trim().parse().ok()?);
    (d != 0.0 && n > 0.0).then(|| n / d)
}

/// Asks `ffprobe` for the size, rate and length of `path`'s first video stream.
///
/// # Errors
/// [`VisionError::Io`] for a missing file, [`VisionError::Program`] when
/// `ffprobe` is missing, [`VisionError::Video`] when the file holds no
/// readable video stream.
pub fn probe(path: &Path) -> Result<VideoInfo> {
    std::fs::metadata(path).map_err(|e| VisionError::io(path, e))?;
    let out = Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "v:0", "-show_entries"])
        .arg("stream=width,height,r_frame_rate,avg_frame_rate,nb_frames")
        .args(["-of", "default=nw=1"])
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| program_error("ffprobe", &e))?;
    let video_err = |message: String| VisionError::Video {
        path: path.to_path_buf(),
        message,
    };
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(video_err(format!(
            "ffprobe failed: {}",
            stderr.trim().lines().last().unwrap_or("no message")
        )));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
            .map(str::trim)
    };
    let dim = |key: &str| -> Result<u32> {
        field(key)
            .and_then(|v| v.parse::<u32>().ok())
            .filter(|&v| v > 0)
            .ok_or_else(|| video_err(format!("no video stream with a valid {key}")))
    };
    let (width, height) = (dim("width")?, dim("height")?);
    let fps = field("avg_frame_rate")
        .and_then(parse_rate)
        .or_else(|| field("r_frame_rate").and_then(parse_rate))
        .ok_or_else(|| video_err("no frame rate".into()))?;
    let frames = field("nb_frames").and_then(|v| v.parse().ok());
    Ok(VideoInfo {
        width,
        height,
        fps,
        frames,
    })
}

/// A video file decoded by a child `ffmpeg`.
pub struct VideoFile {
    path: PathBuf,
    name: String,
    info: VideoInfo,
    child: Option<(Child, ChildStdout)>,
    next: usize,
    finished: bool,
}

impl std::fmt::Debug for VideoFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VideoFile")
            .field("path", &self.path)
            .field("info", &self.info)
            .field("next", &self.next)
            .finish()
    }
}

impl VideoFile {
    /// Probes `path` and starts decoding from its first frame.
    ///
    /// # Errors
    /// As [`probe`], and [`VisionError::Program`] when `ffmpeg` cannot start.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let info = probe(&path)?;
        let mut v = Self {
            name: path.display().to_string(),
            path,
            info,
            child: None,
            next: 0,
            finished: false,
        };
        v.start(0)?;
        Ok(v)
    }

    /// Size, rate and length as probed.
    pub fn info(&self) -> VideoInfo {
        self.info
    }

    fn start(&mut self, frame: usize) -> Result<()> {
        self.stop();
        let mut cmd = Command::new("ffmpeg");
        cmd.args(["-v", "error", "-nostdin"]);
        if frame > 0 {
            // Input seeking is frame-accurate when decoding (ffmpeg ≥ 2.1);
            // aim half a frame early so rounding never skips the frame.
            let t = (frame as f64 - 0.5) / self.info.fps;
            cmd.args(["-ss", &format!("{t:.6}")]);
        }
        cmd.arg("-i")
            .arg(&self.path)
            .args(["-map", "0:v:0", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| program_error("ffmpeg", &e))?;
        let stdout = child.stdout.take().ok_or_else(|| VisionError::Program {
            program: "ffmpeg".into(),
            message: "no stdout pipe".into(),
        })?;
        self.child = Some((child, stdout));
        self.next = frame;
        self.finished = false;
        Ok(())
    }

    fn stop(&mut self) {
        if let Some((mut child, _)) = self.child.take() {
            // Our own child: ending it is safe and avoids a zombie.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Waits for ffmpeg after its output ended; an error exit is an error.
    fn finish(&mut self) -> Result<()> {
        self.finished = true;
        let Some((mut child, _)) = self.child.take() else {
            return Ok(());
        };
        let mut stderr = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut stderr);
        }
        let status = child.wait().map_err(|e| program_error("ffmpeg", &e))?;
        if !status.success() {
            return Err(VisionError::Video {
                path: self.path.clone(),
                message: format!(
                    "ffmpeg exited with {status} after {} frames: {}",
                    self.next,
                    stderr.trim().lines().last().unwrap_or("no message")
                ),
            });
        }
        if let Some(n) = self.info.frames
            && self.next < n
        {
            return Err(VisionError::Video {
                path: self.path.clone(),
                message: format!(
                    "truncated: ended after {} of the {n} frames the container announces",
                    self.next
                ),
            });
        }
        if self.next == 0 {
            return Err(VisionError::NoFrames {
                source_name: self.name.clone(),
            });
        }
        Ok(())
    }
}

impl Drop for VideoFile {
    fn drop(&mut self) {
        self.stop();
    }
}

impl FrameSource for VideoFile {
    fn name(&self) -> &str {
        &self.name
    }
    fn size(&self) -> (u32, u32) {
        (self.info.width, self.info.height)
    }
    fn fps(&self) -> Option<f64> {
        Some(self.info.fps)
    }
    fn frame_count(&self) -> Option<usize> {
        self.info.frames
    }

    fn next_frame(&mut self) -> Result<Option<Frame>> {
        if self.finished {
            return Ok(None);
        }
        let (w, h) = self.size();
        let n = w as usize * h as usize * 3;
        let mut buf = vec![0u8; n];
        let mut filled = 0;
        if let Some((_, stdout)) = self.child.as_mut() {
            while filled < n {
                match stdout.read(&mut buf[filled..]) {
                    Ok(0) => break,
                    Ok(k) => filled += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(VisionError::io(&self.path, e)),
                }
            }
        }
        if filled == 0 {
            self.finish()?;
            return Ok(None);
        }
        if filled < n {
            let frame = self.next;
            self.finish().ok();
            return Err(VisionError::Video {
                path: self.path.clone(),
                message: format!("truncated: frame {frame} has {filled} of {n} bytes"),
            });
        }
        let index = self.next;
        self.next += 1;
        Frame::new(w, h, buf, index as f64 / self.info.fps, index).map(Some)
    }

    fn seek(&mut self, frame: usize) -> Result<()> {
        if let Some(n) = self.info.frames
            && frame > n
        {
            return Err(VisionError::Seek {
                source_name: self.name.clone(),
                frame,
                message: format!("the video has {n} frames"),
            });
        }
        self.start(frame)
    }
}

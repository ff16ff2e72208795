//! Video files of any container and codec, decoded by the `ffmpeg` program
//! running as a child process that pipes raw `rgb24` frames
//! (`ffmpeg -i FILE -f rawvideo -pix_fmt rgb24 -`); size, frame rate and
//! frame count come from `ffprobe`. Nothing is linked at build time.
//!
//! A child program is untrusted the way a file is:
//!
//! - its **stderr is drained on a thread of its own** from the start,
//!   keeping the last [`STDERR_LINES`] lines for the error message: a
//!   damaged file can make `ffmpeg` write more than a pipe buffer (64 KiB)
//!   of errors before the next frame, and a stderr read only after stdout
//!   ends would block both programs forever;
//! - its **stdout is read on a thread** that hands whole frames over a
//!   one-frame channel, so every wait has a deadline
//!   ([`VideoOptions::timeout`], default [`DEFAULT_READ_TIMEOUT`]) and a
//!   stalled program becomes [`VisionError::Timeout`] naming the file;
//! - the **size `ffprobe` reports is checked** against
//!   [`MAX_FRAME_SIDE`](crate::frame::MAX_FRAME_SIDE) before a frame buffer
//!   is allocated.
//!
//! The reader threads are never joined: a program's own children may hold
//! its pipes open after it was killed, and joining would wait for them.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Result, VisionError};
use crate::frame::{Frame, FrameSource, check_frame_size};

/// What `ffprobe` reports about the first video stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VideoInfo {
    pub width: u32,
    pub height: u32,
    pub fps: f64,
    /// Frames announced by the container, when it says (an estimate: an
    /// edit list or a variable rate may give fewer).
    pub frames: Option<usize>,
    /// The display rotation in degrees (counter-clockwise, a multiple of
    /// 90) that `ffmpeg` applies when decoding; with a quarter turn,
    /// `width` and `height` are already those of the rotated frames.
    pub rotation: i32,
}

/// How long [`probe`] and [`VideoFile`] wait for `ffprobe`'s answer or for
/// the next frame by default: generous, since a seek decodes from the
/// previous key frame.
pub(super) const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Lines of a helper program's stderr kept for error messages.
pub const STDERR_LINES: usize = 20;

/// A stderr line is cut to this many bytes (a program may write megabytes
/// without a newline).
const STDERR_LINE_BYTES: usize = 400;

/// `ffprobe`'s answer is a few short lines; more than this is not read.
const PROBE_OUTPUT_BYTES: u64 = 64 * 1024;

/// The helper programs and the read timeout of [`probe_with`] and
/// [`VideoFile::open_with`].
#[derive(Clone, Debug, PartialEq)]
pub struct VideoOptions {
    /// The `ffmpeg` program: a name looked up on `PATH`, or a path.
    pub ffmpeg: OsString,
    /// The `ffprobe` program: a name looked up on `PATH`, or a path.
    pub ffprobe: OsString,
    /// How long to wait for `ffprobe`'s answer and for each frame (the
    /// first frame after a seek included) before giving up with
    /// [`VisionError::Timeout`].
    pub timeout: Duration,
}

impl Default for VideoOptions {
    fn default() -> Self {
        Self {
            ffmpeg: "ffmpeg".into(),
            ffprobe: "ffprobe".into(),
            timeout: DEFAULT_READ_TIMEOUT,
        }
    }
}

fn program_name(program: &OsString) -> String {
    program.to_string_lossy().into_owned()
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
    (d != 0.0 && n > 0.0)
        .then(|| n / d)
        .filter(|r| r.is_finite())
}

/// A child's stderr, drained on its own thread into the last
/// [`STDERR_LINES`] lines.
#[derive(Debug)]
struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    closed: Receiver<()>,
}

impl StderrTail {
    fn spawn(mut stderr: ChildStderr, program: &str) -> Self {
        let lines = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_LINES)));
        let (done, closed) = mpsc::channel();
        let kept = Arc::clone(&lines);
        let keep = move |line: &mut Vec<u8>| {
            let text = String::from_utf8_lossy(line).trim_end().to_string();
            line.clear();
            if text.is_empty() {
                return;
            }
            if let Ok(mut k) = kept.lock() {
                if k.len() == STDERR_LINES {
                    k.pop_front();
                }
                k.push_back(text);
            }
        };
        let spawned = std::thread::Builder::new()
            .name(format!("{program} stderr"))
            .spawn(move || {
                let mut chunk = [0u8; 8192];
                let mut line = Vec::with_capacity(STDERR_LINE_BYTES);
                loop {
                    match stderr.read(&mut chunk) {
                        Ok(0) => break,
                        Ok(k) => {
                            for &b in &chunk[..k] {
                                if b == b'\n' {
                                    keep(&mut line);
                                } else if line.len() < STDERR_LINE_BYTES {
                                    line.push(b);
                                }
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
                keep(&mut line);
                let _ = done.send(());
            });
        if spawned.is_err() {
            // No thread: the pipe end was moved into the failed closure and
            // dropped, so the child gets EPIPE rather than blocking.
            lines
                .lock()
                .map(|mut l| l.push_back("(stderr not read: no thread)".into()))
                .ok();
        }
        Self { lines, closed }
    }

    /// The kept lines, after waiting at most `wait` for the program to
    /// close its stderr (its children may keep it open).
    fn lines(&self, wait: Duration) -> Vec<String> {
        let _ = self.closed.recv_timeout(wait);
        self.lines
            .lock()
            .map(|l| l.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// "last line" and the lines before it, for an error message.
    fn describe(&self, program: &str, wait: Duration) -> String {
        let lines = self.lines(wait);
        match lines.split_last() {
            None => format!("{program} wrote nothing to stderr"),
            Some((last, [])) => last.clone(),
            Some((last, before)) => format!(
                "{last}\n  (the last {} lines of {program}'s stderr:)\n  {}\n  {last}",
                lines.len(),
                before.join("\n  ")
            ),
        }
    }
}

/// Waits for `child` until `deadline`; `None` when it is still running.
fn wait_until(child: &mut Child, deadline: Instant) -> std::io::Result<Option<ExitStatus>> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(5)));
    }
}

/// Ends our own child and reaps it (no zombie).
fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Asks `ffprobe` for the size, rate and length of `path`'s first video
/// stream, with [`VideoOptions::default`].
///
/// # Errors
/// As [`probe_with`].
pub fn probe(path: &Path) -> Result<VideoInfo> {
    probe_with(path, &VideoOptions::default())
}

/// Asks `options.ffprobe` for the size, rate and length of `path`'s first
/// video stream.
///
/// # Errors
/// [`VisionError::Io`] for a missing file, [`VisionError::Program`] when
/// `ffprobe` is missing, [`VisionError::Video`] when the file holds no
/// readable video stream, [`VisionError::FrameLimit`] for a size beyond
/// [`MAX_FRAME_SIDE`](crate::frame::MAX_FRAME_SIDE), and
/// [`VisionError::Timeout`] when `ffprobe` does not answer within
/// `options.timeout`.
pub fn probe_with(path: &Path, options: &VideoOptions) -> Result<VideoInfo> {
    std::fs::metadata(path).map_err(|e| VisionError::io(path, e))?;
    let program = program_name(&options.ffprobe);
    let text = ask(
        path,
        options,
        "stream=width,height,r_frame_rate,avg_frame_rate,nb_frames",
    )?;
    let field = |text: &str, key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
            .map(|v| v.trim().to_string())
    };
    let video_err = |message: String| VisionError::Video {
        path: path.to_path_buf(),
        message,
    };
    let dim = |key: &str| -> Result<u64> {
        field(&text, key)
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|&v| v > 0)
            .ok_or_else(|| video_err(format!("no video stream with a valid {key}")))
    };
    let (mut width, mut height) = (dim("width")?, dim("height")?);
    check_frame_size(
        &format!("{} ({program})", path.display()),
        ["width", "height"],
        width,
        height,
    )?;
    let fps = field(&text, "avg_frame_rate")
        .and_then(|r| parse_rate(&r))
        .or_else(|| field(&text, "r_frame_rate").and_then(|r| parse_rate(&r)))
        .ok_or_else(|| video_err("no frame rate".into()))?;
    super::check_fps(fps).map_err(|m| video_err(format!("{program}: {m}")))?;
    let frames = field(&text, "nb_frames").and_then(|v| v.parse().ok());
    // A phone's rotation (side data, or the older `rotate` tag): ffmpeg
    // turns the frames, so a quarter turn swaps the size. Asked apart, so
    // that an ffprobe that does not know these entries costs only this.
    let rotation = ask(
        path,
        options,
        "stream_side_data=rotation:stream_tags=rotate",
    )
    .ok()
    .and_then(|t| {
        field(&t, "rotation")
            .or_else(|| field(&t, "TAG:rotate"))
            .and_then(|v| v.parse::<f64>().ok())
    })
    .filter(|r| r.is_finite())
    .map_or(0, |r| ((r / 90.0).round() as i64).rem_euclid(4) as i32 * 90);
    if rotation % 180 != 0 {
        std::mem::swap(&mut width, &mut height);
    }
    Ok(VideoInfo {
        // Both at most MAX_FRAME_SIDE.
        width: width as u32,
        height: height as u32,
        fps,
        frames,
        rotation,
    })
}

/// Runs `options.ffprobe` on `path`'s first video stream for `entries`
/// and returns what it printed (`key=value` lines).
fn ask(path: &Path, options: &VideoOptions, entries: &str) -> Result<String> {
    let program = program_name(&options.ffprobe);
    let mut child = Command::new(&options.ffprobe)
        .args(["-v", "error", "-select_streams", "v:0", "-show_entries"])
        .arg(entries)
        .args(["-of", "default=nw=1"])
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| program_error(&program, &e))?;
    let stderr = child.stderr.take().map(|e| StderrTail::spawn(e, &program));
    let (answer_tx, answer) = mpsc::channel();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = std::thread::Builder::new()
            .name(format!("{program} stdout"))
            .spawn(move || {
                let mut text = Vec::new();
                let _ = stdout
                    .by_ref()
                    .take(PROBE_OUTPUT_BYTES)
                    .read_to_end(&mut text);
                // Drain the rest so that the program is never blocked.
                let _ = std::io::copy(&mut stdout, &mut std::io::sink());
                let _ = answer_tx.send(text);
            });
    }
    let deadline = Instant::now() + options.timeout;
    let timeout = |what: &str| VisionError::Timeout {
        source_name: path.display().to_string(),
        seconds: options.timeout.as_secs_f64(),
        what: what.to_string(),
    };
    let status = match wait_until(&mut child, deadline) {
        Ok(Some(status)) => status,
        Ok(None) => {
            kill(&mut child);
            return Err(timeout(&format!("`{program}` to describe the video")));
        }
        Err(e) => {
            kill(&mut child);
            return Err(program_error(&program, &e));
        }
    };
    let video_err = |message: String| VisionError::Video {
        path: path.to_path_buf(),
        message,
    };
    if !status.success() {
        let said = stderr.map_or_else(
            || "no message".into(),
            |s| s.describe(&program, Duration::from_secs(1)),
        );
        return Err(video_err(format!("{program} failed ({status}): {said}")));
    }
    let wait = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_secs(1));
    let out = answer
        .recv_timeout(wait)
        .map_err(|_| timeout(&format!("`{program}` to close its output")))?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// What the stdout thread hands over.
enum Chunk {
    /// One whole `rgb24` frame.
    Frame(Vec<u8>),
    /// The output ended after `partial` bytes of a frame (0: cleanly).
    End {
        partial: usize,
    },
    Failed(std::io::Error),
}

/// A running `ffmpeg`: the child, its frames and its stderr.
#[derive(Debug)]
struct Decoder {
    child: Child,
    frames: Receiver<Chunk>,
    stderr: Option<StderrTail>,
}

/// Reads whole frames of `frame_bytes` from `stdout` until it ends or the
/// receiver is gone.
fn read_frames(mut stdout: impl Read, frame_bytes: usize, tx: &SyncSender<Chunk>) {
    loop {
        let mut buf = vec![0u8; frame_bytes];
        let mut filled = 0;
        while filled < frame_bytes {
            match stdout.read(&mut buf[filled..]) {
                Ok(0) => {
                    let _ = tx.send(Chunk::End { partial: filled });
                    return;
                }
                Ok(k) => filled += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = tx.send(Chunk::Failed(e));
                    return;
                }
            }
        }
        if tx.send(Chunk::Frame(buf)).is_err() {
            return;
        }
    }
}

/// A video file decoded by a child `ffmpeg`.
#[derive(Debug)]
pub struct VideoFile {
    path: PathBuf,
    name: String,
    info: VideoInfo,
    options: VideoOptions,
    decoder: Option<Decoder>,
    next: usize,
    finished: bool,
}

impl VideoFile {
    /// Probes `path` and starts decoding from its first frame, with
    /// [`VideoOptions::default`].
    ///
    /// # Errors
    /// As [`Self::open_with`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, &VideoOptions::default())
    }

    /// Probes `path` with `options.ffprobe` and starts `options.ffmpeg`
    /// decoding from its first frame.
    ///
    /// # Errors
    /// As [`probe_with`], and [`VisionError::Program`] when `ffmpeg` cannot
    /// start.
    pub fn open_with(path: impl AsRef<Path>, options: &VideoOptions) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let info = probe_with(&path, options)?;
        let mut v = Self {
            name: path.display().to_string(),
            path,
            info,
            options: options.clone(),
            decoder: None,
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

    /// Bytes of one `rgb24` frame (at most
    /// [`MAX_FRAME_BYTES`](crate::frame::MAX_FRAME_BYTES): the size was
    /// checked by [`probe_with`]).
    fn frame_bytes(&self) -> usize {
        self.info.width as usize * self.info.height as usize * 3
    }

    fn program(&self) -> String {
        program_name(&self.options.ffmpeg)
    }

    fn start(&mut self, frame: usize) -> Result<()> {
        self.stop();
        let program = self.program();
        let mut cmd = Command::new(&self.options.ffmpeg);
        cmd.args(["-v", "error", "-nostdin"]);
        if self.info.rotation == 0 {
            // Frames in the coded orientation, the size ffprobe reports
            // (an unreported rotation must not shear the image).
            cmd.arg("-noautorotate");
        }
        if frame > 0 {
            // Input seeking is frame-accurate when decoding (ffmpeg ≥ 2.1);
            // aim half a frame early so rounding never skips the frame.
            let t = (frame as f64 - 0.5) / self.info.fps;
            cmd.args(["-ss", &format!("{t:.6}")]);
        }
        cmd.arg("-i")
            .arg(&self.path)
            // Every decoded frame once, none duplicated or dropped to make
            // a variable rate constant.
            .args(["-map", "0:v:0", "-vsync", "passthrough"])
            .args(["-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| program_error(&program, &e))?;
        // Drained from the start: see the module doc.
        let stderr = child.stderr.take().map(|e| StderrTail::spawn(e, &program));
        let Some(stdout) = child.stdout.take() else {
            kill(&mut child);
            return Err(VisionError::Program {
                program,
                message: "no stdout pipe".into(),
            });
        };
        // One frame waiting in the channel, one being filled: the decoder
        // runs at most two frames ahead.
        let (tx, frames) = mpsc::sync_channel(1);
        let frame_bytes = self.frame_bytes();
        let spawned = std::thread::Builder::new()
            .name(format!("{program} stdout"))
            .spawn(move || read_frames(stdout, frame_bytes, &tx));
        if let Err(e) = spawned {
            kill(&mut child);
            return Err(VisionError::Program {
                program,
                message: format!("cannot start the reader thread: {e}"),
            });
        }
        self.decoder = Some(Decoder {
            child,
            frames,
            stderr,
        });
        self.next = frame;
        self.finished = false;
        Ok(())
    }

    fn stop(&mut self) {
        if let Some(mut d) = self.decoder.take() {
            // Our own child: ending it is safe and avoids a zombie; its
            // reader threads end when the pipes close.
            kill(&mut d.child);
        }
    }

    /// What `ffmpeg` last said on stderr.
    fn said(&self, decoder: &Decoder, wait: Duration) -> String {
        let program = self.program();
        decoder
            .stderr
            .as_ref()
            .map_or_else(|| "no message".into(), |s| s.describe(&program, wait))
    }

    /// Waits for ffmpeg after its output ended; an error exit is an error.
    fn finish(&mut self) -> Result<()> {
        self.finished = true;
        let Some(mut d) = self.decoder.take() else {
            return Ok(());
        };
        let program = self.program();
        // Its output has ended, so it should exit at once; a program that
        // closes stdout and goes on running is ended after the timeout.
        let status = match wait_until(&mut d.child, Instant::now() + self.options.timeout) {
            Ok(Some(status)) => status,
            Ok(None) => {
                kill(&mut d.child);
                return Err(VisionError::Timeout {
                    source_name: self.name.clone(),
                    seconds: self.options.timeout.as_secs_f64(),
                    what: format!("`{program}` to exit after its output ended"),
                });
            }
            Err(e) => {
                kill(&mut d.child);
                return Err(program_error(&program, &e));
            }
        };
        if !status.success() {
            return Err(VisionError::Video {
                path: self.path.clone(),
                message: format!(
                    "{program} exited with {status} after {} frames: {}",
                    self.next,
                    self.said(&d, Duration::from_secs(1))
                ),
            });
        }
        // The container's count is only an estimate where an edit list
        // trims the stream or the rate varies (phone videos): a few frames
        // fewer (up to a tenth, at least 2) from an ffmpeg that exited
        // cleanly without a word on stderr are the stream, not damage. A
        // shortfall with decoder errors, or a larger one (a file cut short,
        // which ffmpeg may end silently), is truncation.
        if let Some(n) = self.info.frames
            && self.next < n
        {
            let said = d
                .stderr
                .as_ref()
                .map(|s| s.lines(Duration::from_secs(1)))
                .unwrap_or_default();
            if !said.is_empty() || n - self.next > (n / 10).max(2) {
                return Err(VisionError::Video {
                    path: self.path.clone(),
                    message: format!(
                        "truncated: ended after {} of the {n} frames the container announces: {}",
                        self.next,
                        self.said(&d, Duration::ZERO)
                    ),
                });
            }
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

    /// The next frame, waiting at most [`VideoOptions::timeout`] for it.
    fn next_frame(&mut self) -> Result<Option<Frame>> {
        if self.finished {
            return Ok(None);
        }
        let Some(decoder) = self.decoder.as_ref() else {
            self.finished = true;
            return Ok(None);
        };
        let n = self.frame_bytes();
        let index = self.next;
        match decoder.frames.recv_timeout(self.options.timeout) {
            Ok(Chunk::Frame(buf)) => {
                self.next += 1;
                let (w, h) = self.size();
                Frame::new(w, h, buf, index as f64 / self.info.fps, index).map(Some)
            }
            Ok(Chunk::End { partial: 0 }) | Err(RecvTimeoutError::Disconnected) => {
                self.finish()?;
                Ok(None)
            }
            Ok(Chunk::End { partial }) => {
                let said = self.finish().err();
                Err(VisionError::Video {
                    path: self.path.clone(),
                    message: format!(
                        "truncated: frame {index} has {partial} of {n} bytes{}",
                        said.map(|e| format!(" ({e})")).unwrap_or_default()
                    ),
                })
            }
            Ok(Chunk::Failed(e)) => {
                self.stop();
                self.finished = true;
                Err(VisionError::io(&self.path, e))
            }
            Err(RecvTimeoutError::Timeout) => {
                let said = self.said(decoder, Duration::ZERO);
                self.stop();
                self.finished = true;
                Err(VisionError::Timeout {
                    source_name: self.name.clone(),
                    seconds: self.options.timeout.as_secs_f64(),
                    what: format!("frame {index} from `{}` (it said: {said})", self.program()),
                })
            }
        }
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

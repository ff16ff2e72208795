//! A folder of PNG/JPEG frames sorted by file name, or a glob such as
//! `frames/*.png` (`*` and `?` in the file-name part only).

use std::path::{Path, PathBuf};

use crate::error::{Result, VisionError};
use crate::frame::{Frame, FrameSource, load_rgb};

/// Frames per second assumed for image sequences unless told otherwise.
pub const DEFAULT_SEQUENCE_FPS: f64 = 30.0;

/// Image files in name order; every frame must have the first one's size.
#[derive(Debug)]
pub struct ImageSequence {
    name: String,
    files: Vec<PathBuf>,
    next: usize,
    size: (u32, u32),
    fps: f64,
}

fn is_image(path: &Path) -> bool {
    matches!(
        path.extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Some("png" | "jpg" | "jpeg")
    )
}

/// Files an image sequence may list: more is refused rather than listed
/// (a folder of millions of files would be read into memory first).
pub(super) const MAX_SEQUENCE_FILES: usize = 1_000_000;

/// `*` matches any run of characters, `?` one character. Linear in the
/// pattern times the name at worst (the classic two-pointer matcher that
/// backtracks only to the last `*`), never exponential: a pattern such as
/// `*a*a*a*a*a*a*a*a*a*b` over a long name is as quick as any other.
fn glob_match(pattern: &[char], name: &[char]) -> bool {
    let (mut p, mut n) = (0, 0);
    // The last `*` seen and the name position it was tried against.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == '?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                // Let the last `*` take one more character.
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

impl ImageSequence {
    /// Lists the frames of a folder (every `.png`, `.jpg`, `.jpeg`) or of a
    /// glob, sorted by name, and reads the first to learn the size.
    ///
    /// # Errors
    /// [`VisionError::Io`] for a missing folder, [`VisionError::NoFrames`]
    /// when nothing matches, [`VisionError::Image`] when the first frame
    /// cannot be decoded, [`VisionError::Parameter`] for a bad `fps`.
    pub fn open(path: impl AsRef<Path>, fps: f64) -> Result<Self> {
        let path = path.as_ref();
        super::check_fps(fps).map_err(|m| VisionError::parameter("--fps", fps, m))?;
        let text = path.to_string_lossy();
        let (dir, pattern): (PathBuf, Option<Vec<char>>) = if text.contains(['*', '?']) {
            let dir = path
                .parent()
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            let dir = if dir.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                dir
            };
            let pat = path
                .file_name()
                .map(|f| f.to_string_lossy().chars().collect());
            (dir, pat)
        } else {
            (path.to_path_buf(), None)
        };
        let entries = std::fs::read_dir(&dir).map_err(|e| VisionError::io(&dir, e))?;
        let mut files = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| VisionError::io(&dir, e))?;
            let p = entry.path();
            if !p.is_file() {
                continue;
            }
            let keep = match &pattern {
                Some(pat) => {
                    let name: Vec<char> = entry.file_name().to_string_lossy().chars().collect();
                    glob_match(pat, &name)
                }
                None => is_image(&p),
            };
            if keep {
                if files.len() == MAX_SEQUENCE_FILES {
                    return Err(VisionError::parameter(
                        "--frames",
                        path.display(),
                        format!("more than {MAX_SEQUENCE_FILES} frames: give a narrower glob"),
                    ));
                }
                files.push(p);
            }
        }
        files.sort();
        let name = path.display().to_string();
        let first = files.first().ok_or_else(|| VisionError::NoFrames {
            source_name: format!("{name} (no .png/.jpg/.jpeg files)"),
        })?;
        let (w, h, _) = load_rgb(first)?;
        Ok(Self {
            name,
            files,
            next: 0,
            size: (w, h),
            fps,
        })
    }

    /// The frame files in order.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }
}

impl FrameSource for ImageSequence {
    fn name(&self) -> &str {
        &self.name
    }
    fn size(&self) -> (u32, u32) {
        self.size
    }
    fn fps(&self) -> Option<f64> {
        Some(self.fps)
    }
    fn frame_count(&self) -> Option<usize> {
        Some(self.files.len())
    }

    fn next_frame(&mut self) -> Result<Option<Frame>> {
        let Some(path) = self.files.get(self.next) else {
            return Ok(None);
        };
        let (w, h, rgb) = load_rgb(path)?;
        if (w, h) != self.size {
            return Err(VisionError::FrameSize {
                source_name: path.display().to_string(),
                frame: self.next,
                width: w,
                height: h,
                message: format!(
                    "the sequence's first frame is {} × {}",
                    self.size.0, self.size.1
                ),
            });
        }
        let index = self.next;
        self.next += 1;
        Frame::new(w, h, rgb, index as f64 / self.fps, index).map(Some)
    }

    fn seek(&mut self, frame: usize) -> Result<()> {
        if frame > self.files.len() {
            return Err(VisionError::Seek {
                source_name: self.name.clone(),
                frame,
                message: format!("the sequence has {} frames", self.files.len()),
            });
        }
        self.next = frame;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_patterns() {
        let m = |p: &str, n: &str| {
            glob_match(
                &p.chars().collect::<Vec<_>>(),
                &n.chars().collect::<Vec<_>>(),
            )
        };
        assert!(m("*.png", "a.png"));
        assert!(m("f_??.png", "f_01.png"));
        assert!(!m("f_??.png", "f_1.png"));
        assert!(!m("*.png", "a.jpg"));
        assert!(m("*", ""));
        assert!(m("a*b*c", "aXbYbc"));
        assert!(!m("a*b?c", "abc"));
        assert!(m("**x*", "yyx"));
    }

    /// Issue 32 item 11: the old recursive matcher took time exponential in
    /// the stars (this case ran for hours); the two-pointer one is linear.
    #[test]
    fn a_pathological_glob_is_quick() {
        let pat: Vec<char> = "*a*a*a*a*a*a*a*a*a*b".chars().collect();
        let long: Vec<char> = "a".repeat(250).chars().collect();
        assert!(!glob_match(&pat, &long));
        let mut hit = long.clone();
        hit.push('b');
        assert!(glob_match(&pat, &hit));
    }
}

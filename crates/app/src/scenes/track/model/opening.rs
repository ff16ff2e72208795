//! Opening a scene off the window's thread.

use anyhow::{Context, Result};

/// Something built on a thread of its own — opening a scene runs ffprobe,
/// starts a webcam or reads background frames, which must not stall the
/// window: the panel shows "opening …" and polls each frame.
pub struct Opening<T> {
    /// What is being opened, in words (the panel shows it).
    pub what: String,
    pub started: std::time::Instant,
    handle: Option<std::thread::JoinHandle<Result<T>>>,
}

impl<T: Send + 'static> Opening<T> {
    /// Starts `build` on a new thread.
    ///
    /// # Errors
    /// The thread could not be started.
    pub fn start(what: String, build: impl FnOnce() -> Result<T> + Send + 'static) -> Result<Self> {
        let handle = std::thread::Builder::new()
            .name("posecloud-open".into())
            .spawn(build)
            .context("starting the thread that opens the scene")?;
        Ok(Self {
            what,
            started: std::time::Instant::now(),
            handle: Some(handle),
        })
    }

    /// The result once `build` returned (once; `None` before and after).
    /// A panic in `build` is an error naming what was opened.
    pub fn poll(&mut self) -> Option<Result<T>> {
        if !self.handle.as_ref()?.is_finished() {
            return None;
        }
        let handle = self.handle.take()?;
        Some(handle.join().unwrap_or_else(|panic| {
            let why = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic");
            Err(anyhow::anyhow!("opening {}: {why}", self.what))
        }))
    }
}

//! Reading results back: mapping a staging buffer, waiting for its batch
//! (with a timeout, so that a hung device cannot block the tracker for
//! ever) and reading it without letting a lost device panic.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::{GpuError, Result};

/// The outcome of a buffer's map callback, once it has run.
pub(crate) type MapResult = Arc<Mutex<Option<std::result::Result<(), String>>>>;

/// Starts mapping `buffer[..bytes]` (`u64::MAX`: all of it) for reading;
/// the callback records the outcome in the returned cell.
pub(crate) fn map_for_reading(buffer: &wgpu::Buffer, bytes: u64) -> MapResult {
    let mapped: MapResult = Arc::default();
    let flag = mapped.clone();
    let on_mapped = move |r: std::result::Result<(), wgpu::BufferAsyncError>| {
        *flag.lock().unwrap_or_else(|e| e.into_inner()) = Some(r.map_err(|e| e.to_string()));
    };
    if bytes == u64::MAX {
        buffer.slice(..).map_async(wgpu::MapMode::Read, on_mapped);
    } else {
        buffer
            .slice(..bytes)
            .map_async(wgpu::MapMode::Read, on_mapped);
    }
    mapped
}

/// How long [`wait_mapped`] waits for a map callback after its submission
/// has finished: the callback may run on another thread that polls the
/// same device (Bevy's renderer, when the device is shared), a moment later.
const MAP_CALLBACK_GRACE: Duration = Duration::from_secs(5);

/// What a wait is for, to name it in errors.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wait {
    /// The readback buffer, for [`GpuError::BufferMap`].
    pub what: &'static str,
    /// The operation, for [`GpuError::DeviceLost`].
    pub operation: &'static str,
    /// The stage, for [`GpuError::Timeout`].
    pub stage: &'static str,
    /// How long to wait for the GPU to finish the submission.
    pub timeout: Duration,
}

/// Waits for `submission`, at most `wait.timeout`, and for the map callback
/// of its readback buffer.
///
/// wgpu runs map callbacks inside whichever `poll` (or `submit`) finds them
/// ready, on whichever thread: on a device shared with a renderer its render
/// thread may take the callback just before this thread's `poll(Wait)`
/// returns, and run it a moment later. So when the poll succeeded and the
/// callback has not yet reported, this keeps polling (without blocking)
/// until it does, for at most [`MAP_CALLBACK_GRACE`].
pub(crate) fn wait_mapped(
    device: &wgpu::Device,
    submission: wgpu::SubmissionIndex,
    mapped: &MapResult,
    wait: Wait,
) -> Result<()> {
    let poll = device.poll(wgpu::PollType::Wait {
        submission_index: Some(submission),
        timeout: Some(wait.timeout),
    });
    let status = || mapped.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut seen = status();
    if poll.is_ok() && seen.is_none() {
        let deadline = Instant::now() + MAP_CALLBACK_GRACE;
        while seen.is_none() && Instant::now() < deadline {
            if let Err(e) = device.poll(wgpu::PollType::Poll) {
                return Err(GpuError::DeviceLost {
                    operation: wait.operation,
                    message: e.to_string(),
                });
            }
            std::thread::yield_now();
            seen = status();
        }
    }
    wait_outcome(poll, seen, wait)
}

/// Waits for `submission` (an earlier pass of a batch), at most
/// `wait.timeout`.
pub(crate) fn wait_submitted(
    device: &wgpu::Device,
    submission: wgpu::SubmissionIndex,
    wait: Wait,
) -> Result<()> {
    let poll = device.poll(wgpu::PollType::Wait {
        submission_index: Some(submission),
        timeout: Some(wait.timeout),
    });
    match poll {
        Ok(_) => Ok(()),
        // Judged as a wait whose buffer has not been mapped.
        Err(e) => wait_outcome(Err(e), None, wait),
    }
}

/// The result of a wait from the poll's result and the map callback's
/// report (`None`: not yet run): mapped is mapped, whatever the poll said;
/// else a poll that ran out of time is [`GpuError::Timeout`], a failed one
/// [`GpuError::DeviceLost`], a failed map [`GpuError::BufferMap`], and a
/// finished batch whose callback never came [`GpuError::DeviceLost`].
fn wait_outcome(
    poll: std::result::Result<wgpu::PollStatus, wgpu::PollError>,
    seen: Option<std::result::Result<(), String>>,
    wait: Wait,
) -> Result<()> {
    match (poll, seen) {
        (_, Some(Ok(()))) => Ok(()),
        (Err(wgpu::PollError::Timeout), _) => Err(GpuError::Timeout {
            stage: wait.stage,
            after: wait.timeout,
        }),
        (Err(e), _) => Err(GpuError::DeviceLost {
            operation: wait.operation,
            message: e.to_string(),
        }),
        (Ok(_), Some(Err(message))) => Err(GpuError::BufferMap {
            what: wait.what,
            message,
        }),
        (Ok(_), None) => Err(GpuError::DeviceLost {
            operation: wait.operation,
            message: format!(
                "the batch finished but its readback was not mapped within {} s",
                MAP_CALLBACK_GRACE.as_secs()
            ),
        }),
    }
}

/// Reads the mapped `range` of `buffer` with `read`, then unmaps it.
///
/// wgpu treats reading a buffer whose device was destroyed or lost after
/// the map succeeded as a fatal error and panics; here that panic becomes
/// [`GpuError::DeviceLost`], so that the caller can fall back to the CPU.
pub(crate) fn read_mapped<T>(
    buffer: &wgpu::Buffer,
    range: impl std::ops::RangeBounds<wgpu::BufferAddress>,
    operation: &'static str,
    read: impl FnOnce(&[u8]) -> T,
) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let out = read(&buffer.slice(range).get_mapped_range());
        buffer.unmap();
        out
    }))
    .map_err(|panic| GpuError::DeviceLost {
        operation,
        message: panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("reading the mapped buffer failed")
            .lines()
            .next()
            .unwrap_or_default()
            .to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAIT: Wait = Wait {
        what: "counts",
        operation: "collecting a batch",
        stage: "readback",
        timeout: Duration::from_secs(10),
    };

    #[test]
    fn a_wait_that_runs_out_of_time_is_a_timeout_naming_the_stage() {
        let e = wait_outcome(Err(wgpu::PollError::Timeout), None, WAIT).unwrap_err();
        assert_eq!(
            e,
            GpuError::Timeout {
                stage: "readback",
                after: Duration::from_secs(10)
            }
        );
        assert_eq!(e.to_string(), "GPU readback: no result in 10 s");
        let short = Wait {
            timeout: Duration::from_millis(250),
            ..WAIT
        };
        assert_eq!(
            wait_outcome(Err(wgpu::PollError::Timeout), None, short)
                .unwrap_err()
                .to_string(),
            "GPU readback: no result in 0.25 s"
        );
    }

    #[test]
    fn a_mapped_buffer_wins_over_the_poll_and_other_failures_keep_their_kind() {
        // The callback may have run on another thread: mapped is mapped.
        assert_eq!(
            wait_outcome(Err(wgpu::PollError::Timeout), Some(Ok(())), WAIT),
            Ok(())
        );
        assert_eq!(
            wait_outcome(Ok(wgpu::PollStatus::WaitSucceeded), Some(Ok(())), WAIT),
            Ok(())
        );
        assert!(matches!(
            wait_outcome(Err(wgpu::PollError::WrongSubmissionIndex(3, 2)), None, WAIT),
            Err(GpuError::DeviceLost { .. })
        ));
        assert!(matches!(
            wait_outcome(
                Ok(wgpu::PollStatus::WaitSucceeded),
                Some(Err("lost".into())),
                WAIT
            ),
            Err(GpuError::BufferMap { what: "counts", .. })
        ));
        assert!(matches!(
            wait_outcome(Ok(wgpu::PollStatus::QueueEmpty), None, WAIT),
            Err(GpuError::DeviceLost { .. })
        ));
    }
}

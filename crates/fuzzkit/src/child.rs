//! Runs a child process for a command-line fuzz case: a wall-clock timeout
//! and a resident-set limit, each of which kills the child's whole process
//! group (so a helper it started, e.g. ffmpeg, goes too), and the child's
//! peak RSS from `wait4`; optionally interrupted with SIGINT at given
//! times, sent to the whole group as a terminal's Ctrl-C is
//! ([`run_interrupted`]).

use std::io::Read;
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// Why [`run`] killed the child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Killed {
    /// It ran past the timeout.
    Timeout,
    /// Its resident set reached this many bytes, over the limit.
    Memory(u64),
}

/// What a child did.
#[derive(Debug)]
pub struct Outcome {
    /// Its exit status and captured stdout and stderr.
    pub output: Output,
    /// Peak resident set (bytes) of the child (`ru_maxrss` of `wait4`).
    pub peak_rss: u64,
    pub wall: Duration,
    pub killed: Option<Killed>,
}

impl Outcome {
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
}

/// The resident set (bytes) of process `pid` now, from /proc (Linux).
fn rss_now(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Runs `cmd` (stdin closed, stdout and stderr captured) in a process
/// group of its own, killing the group after `timeout` or when the child's
/// resident set exceeds `rss_limit` bytes (polled every few milliseconds,
/// so a fast allocation may overshoot it before the kill; the final
/// [`Outcome::peak_rss`] is exact).
///
/// # Errors
/// The command cannot be started or waited for.
pub fn run(cmd: &mut Command, timeout: Duration, rss_limit: u64) -> std::io::Result<Outcome> {
    run_interrupted(cmd, timeout, rss_limit, &[])
}

/// [`run`], sending SIGINT to the child's process group at each of
/// `interrupts` (times after the start, in increasing order) while it
/// runs, like pressing Ctrl-C in its terminal.
///
/// # Errors
/// As [`run`].
pub fn run_interrupted(
    cmd: &mut Command,
    timeout: Duration,
    rss_limit: u64,
    interrupts: &[Duration],
) -> std::io::Result<Outcome> {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if !interrupts.is_empty() {
        // A process started with SIGINT ignored (a background job of a
        // non-interactive shell, e.g. a script run with `&`) passes that on
        // to its children, and a shell cannot trap a signal ignored on
        // entry: the interrupts would be lost. The child starts with
        // SIGINT's default disposition whatever ours is.
        // SAFETY: signal(2) is async-signal-safe; the closure allocates
        // nothing and touches no lock between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
    }
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let kill_group = || {
        // SAFETY: kill(2) on the child's own process group (its pid, as
        // `process_group(0)` made it the leader).
        unsafe {
            libc::kill(-(pid as libc::pid_t), libc::SIGKILL);
        }
    };
    let mut killed = None;
    let mut pause = Duration::from_millis(1);
    let mut next_interrupt = 0;
    loop {
        // Has it ended? (WNOWAIT: not reaped yet, so that its process
        // group id stays reserved for the kill below.)
        // SAFETY: a zeroed siginfo_t is a valid value of the C struct;
        // waitid with valid out-pointers on our own child.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if r == -1 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            kill_group();
            return Err(e);
        }
        // SAFETY: si_pid is set (or left 0) by waitid.
        if unsafe { info.si_pid() } != 0 {
            break;
        }
        if let Some(&at) = interrupts.get(next_interrupt)
            && start.elapsed() >= at
        {
            next_interrupt += 1;
            // SAFETY: kill(2) on the child's own process group.
            unsafe {
                libc::kill(-(pid as libc::pid_t), libc::SIGINT);
            }
            pause = Duration::from_millis(1);
            continue;
        }
        if killed.is_none() {
            if start.elapsed() > timeout {
                killed = Some(Killed::Timeout);
            } else if let Some(rss) = rss_now(pid).filter(|&r| r > rss_limit) {
                killed = Some(Killed::Memory(rss));
            }
            if killed.is_some() {
                kill_group();
                continue;
            }
        }
        let until_interrupt = interrupts
            .get(next_interrupt)
            .map_or(pause, |&at| at.saturating_sub(start.elapsed()));
        std::thread::sleep(pause.min(until_interrupt).max(Duration::from_micros(200)));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
    let wall = start.elapsed();
    // Helpers the child left running would hold the pipes open.
    kill_group();
    let mut status: libc::c_int = 0;
    // SAFETY: a zeroed rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: wait4 on our own ended, not yet reaped child with valid
        // out-pointers. `std`'s `Child` is never waited on after this (its
        // drop does not wait), so the pid is reaped exactly once.
        let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
        if r == pid as libc::pid_t {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    drop(child);
    Ok(Outcome {
        output: Output {
            status: ExitStatus::from_raw(status),
            stdout: out.join().unwrap_or_default(),
            stderr: err.join().unwrap_or_default(),
        },
        // ru_maxrss is in KiB on Linux.
        peak_rss: (usage.ru_maxrss.max(0) as u64) * 1024,
        wall,
        killed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_output_and_timeout() {
        let o = run(
            Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]),
            Duration::from_secs(20),
            1 << 32,
        )
        .unwrap();
        assert_eq!(o.output.status.code(), Some(3));
        assert_eq!(o.output.stdout, b"out\n");
        assert_eq!(o.output.stderr, b"err\n");
        assert!(o.killed.is_none());
        assert!(o.peak_rss > 0);
        let o = run(
            Command::new("sh").args(["-c", "sleep 30 & sleep 30"]),
            Duration::from_millis(200),
            1 << 32,
        )
        .unwrap();
        assert_eq!(o.killed, Some(Killed::Timeout));
        assert!(o.output.status.code().is_none());
        assert!(o.wall < Duration::from_secs(10));
        // SIGINT: a shell that traps it says so and exits 3. The signal
        // comes 3 s in, after the shell has set its trap even on a loaded
        // machine (at 0.3 s a busy 2-core machine had not got the shell
        // that far yet). It also reaches a shell whose test runner was
        // started with SIGINT ignored (a background job), which could
        // otherwise not trap it and slept on: `run_interrupted` resets it.
        let o = run_interrupted(
            Command::new("sh").args(["-c", "trap 'echo int; exit 3' INT; sleep 10 & wait"]),
            Duration::from_secs(20),
            1 << 32,
            &[Duration::from_secs(3)],
        )
        .unwrap();
        assert_eq!(o.output.status.code(), Some(3), "{o:?}");
        assert_eq!(o.output.stdout, b"int\n");
        assert!(o.killed.is_none());
    }
}

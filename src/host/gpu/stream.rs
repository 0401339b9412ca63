//! The TUI's streaming child: NVML loaded once, one reading a second while the GPUs screen is
//! open ([`stream_main`]), and the parent's handle on it ([`GpuStream`]).

/// One line of the streaming child: every GPU's reading, or why there is none.
use std::time::Duration;

use nvml_wrapper::Nvml;
use serde::{Deserialize, Serialize};

use super::nvml::fill_from_nvml;
use super::{GPU_MASKING_VARS, GpuSnapshot, Host, STREAM_ARG, STREAM_EVERY};
use crate::report::{Gpu, ProbeStatus};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    pub gpus: Vec<Gpu>,
    pub error: Option<String>,
}

/// The streaming child's whole job: NVML is loaded and initialised once, then one JSON
/// [`Reading`] a line every [`STREAM_EVERY`] until the parent goes away. A process started once
/// a second cost the TUI 3.7% of a core on an H200 (loading NVML and libcuda each time); one
/// reading from a loaded NVML is a few ioctls.
///
/// It ends when its standard input reaches end of file (the parent closed it, or died: the
/// kernel closes a dead process's pipes), or when a line cannot be written.
#[must_use]
pub fn stream_main() -> i32 {
    use std::io::{Read, Write};
    // The parent holds the pipe's other end; end of file means it is gone.
    let _ = std::thread::Builder::new()
        .name("parent-watch".to_string())
        .spawn(|| {
            let mut stdin = std::io::stdin().lock();
            let mut buf = [0u8; 64];
            while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
            std::process::exit(0);
        });
    let mut out = std::io::stdout().lock();
    let nvml = match Nvml::init() {
        Ok(nvml) => nvml,
        Err(e) => {
            let reading = Reading {
                gpus: Vec::new(),
                error: Some(format!("NVML did not start: {e}")),
            };
            let _ = serde_json::to_string(&reading).map(|json| writeln!(out, "{json}"));
            return 0;
        }
    };
    loop {
        let mut snapshot = GpuSnapshot::default();
        fill_from_nvml(&nvml, &mut snapshot);
        let reading = if snapshot.nvml.status == ProbeStatus::Ok {
            Reading {
                gpus: snapshot.gpus,
                error: None,
            }
        } else {
            Reading {
                gpus: Vec::new(),
                error: Some(
                    snapshot
                        .nvml
                        .detail
                        .unwrap_or_else(|| "NVML did not answer".to_string()),
                ),
            }
        };
        let Ok(json) = serde_json::to_string(&reading) else {
            return 3;
        };
        if writeln!(out, "{json}").and_then(|()| out.flush()).is_err() {
            return 0;
        }
        std::thread::sleep(STREAM_EVERY);
    }
}

/// The parent's side of [`stream_main`]: the child, and the newest reading a thread reads
/// from it. Dropping it stops the child.
#[derive(Debug)]
pub struct GpuStream {
    child: std::process::Child,
    /// The child's process group (its own id): what a deadline and `Drop` kill.
    pgid: i32,
    /// How long after the previous reading (or the start) the next one may come: past it the
    /// child is stuck (inside NVML: a hung driver) and its group is killed.
    deadline: Duration,
    shared: std::sync::Arc<StreamShared>,
    /// Keeps the child's group off the orphan sweep; dropped after the child is ended.
    _live: crate::host::reap::Live,
}

/// One reading as the TUI takes it: every GPU, or why there is none.
pub type LiveReading = Result<Vec<Gpu>, String>;

#[derive(Debug, Default)]
struct StreamShared {
    /// The newest reading and its number (1 for the first).
    latest: std::sync::Mutex<(u64, Option<LiveReading>)>,
    /// When the newest reading came (the start, before the first).
    last: std::sync::Mutex<Option<std::time::Instant>>,
    changed: std::sync::Condvar,
}

impl GpuStream {
    /// Starts the child (this executable with [`STREAM_ARG`]), with the environment of `host`
    /// less the variables that hide GPUs. Each reading must come within the budget a scan
    /// gets (`--timeout` and its slack) of the one before, a period more: else the child's
    /// process group is killed, and [`GpuStream::running`] says it ended.
    ///
    /// # Errors
    /// Why the child could not start.
    pub fn start(host: &Host) -> Result<GpuStream, String> {
        let exe =
            std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
        let mut command = std::process::Command::new(exe);
        command.arg(STREAM_ARG).env_clear().envs(
            host.env
                .with_prefix("")
                .filter(|(k, _)| !GPU_MASKING_VARS.contains(k)),
        );
        GpuStream::spawn(
            command,
            host.timeout + crate::host::budget::SLACK + STREAM_EVERY,
        )
    }

    /// Starts `command` as the streaming child, in its own process group.
    fn spawn(mut command: std::process::Command, deadline: Duration) -> Result<GpuStream, String> {
        use std::io::BufRead;
        use std::os::unix::process::CommandExt;
        use std::process::Stdio;
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0);
        // Its own group, registered as running under the spawn lock: the orphan sweep that
        // follows every command spares it for as long as the stream lives.
        let (mut child, live) = {
            let _guard = crate::host::reap::SPAWNING
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let child = command
                .spawn()
                .map_err(|e| format!("cannot start the reading process: {e}"))?;
            let pgid = i32::try_from(child.id()).unwrap_or(0);
            (child, crate::host::reap::Live::register(pgid))
        };
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| "the reading process has no output".to_string())?;
        let shared = std::sync::Arc::new(StreamShared::default());
        if let Ok(mut last) = shared.last.lock() {
            *last = Some(std::time::Instant::now());
        }
        let theirs = std::sync::Arc::clone(&shared);
        let reader = std::thread::Builder::new()
            .name("gpu-stream".to_string())
            .spawn(move || {
                let publish = |value: LiveReading| {
                    if let Ok(mut latest) = theirs.latest.lock() {
                        latest.0 += 1;
                        latest.1 = Some(value);
                    }
                    if let Ok(mut last) = theirs.last.lock() {
                        *last = Some(std::time::Instant::now());
                    }
                    theirs.changed.notify_all();
                };
                for line in std::io::BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    publish(match serde_json::from_str::<Reading>(&line) {
                        Ok(Reading { error: Some(e), .. }) => Err(e),
                        Ok(Reading { gpus, error: None }) => Ok(gpus),
                        Err(e) => Err(format!(
                            "the reading process wrote something unreadable: {e}"
                        )),
                    });
                }
                publish(Err("the reading process ended".to_string()));
            });
        if let Err(e) = reader {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("cannot read the reading process: {e}"));
        }
        Ok(GpuStream {
            pgid: i32::try_from(child.id()).unwrap_or(0),
            child,
            deadline,
            shared,
            _live: live,
        })
    }

    /// Whether the child is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The first reading newer than number `after`, waiting up to `wait` for it; the newest
    /// one if none comes in time (None before the first). Returns its number too. A child
    /// past its deadline (see [`GpuStream::start`]) has its process group killed here.
    #[must_use]
    pub fn next_after(&self, after: u64, wait: Duration) -> Option<(u64, LiveReading)> {
        let found = {
            let guard = self.shared.latest.lock().ok()?;
            let (guard, _) = self
                .shared
                .changed
                .wait_timeout_while(guard, wait, |latest| latest.0 <= after)
                .ok()?;
            guard.1.clone().map(|value| (guard.0, value))
        };
        let late = self
            .shared
            .last
            .lock()
            .ok()
            .and_then(|last| *last)
            .is_some_and(|last| last.elapsed() > self.deadline);
        if late {
            crate::host::reap::kill_group(self.pgid);
        }
        found
    }
}

impl Drop for GpuStream {
    fn drop(&mut self) {
        // Closing its input ends it; its group is killed in case it is stuck inside NVML
        // (or left a process of its own).
        drop(self.child.stdin.take());
        crate::host::reap::kill_group(self.pgid);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod stream_deadline {
    use super::*;

    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
    }

    /// #40: the TUI's streaming child had no deadline: one stuck inside NVML stayed for as long
    /// as the app ran. A child that writes no reading (and left a process of its own in its
    /// group) has its whole group killed once its deadline is past.
    #[test]
    fn a_child_that_gives_no_reading_past_its_deadline_loses_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let mut command = std::process::Command::new("sh");
        command.arg("-c").arg(format!(
            "sleep 60 & echo $! > {}; exec sleep 60",
            pid_file.display()
        ));
        let mut stream = GpuStream::spawn(command, Duration::from_millis(100)).unwrap();
        let left = || -> i32 {
            for _ in 0..500 {
                if let Some(pid) = std::fs::read_to_string(&pid_file)
                    .ok()
                    .and_then(|t| t.trim().parse().ok())
                {
                    return pid;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            panic!("the child never started its own process");
        };
        let grandchild = left();
        assert!(stream.running());
        // No reading within the wait: the newest one is none, and the deadline is past.
        assert!(stream.next_after(0, Duration::from_millis(200)).is_none());
        let mut gone = false;
        for _ in 0..500 {
            if !stream.running() && !alive(grandchild) {
                gone = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Some(pid) = rustix::process::Pid::from_raw(grandchild)
            && alive(grandchild)
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
        assert!(gone, "the child or its own process outlived the deadline");
        // The reader says why the readings stopped.
        let ended = stream.next_after(0, Duration::from_secs(5));
        assert!(
            matches!(&ended, Some((_, Err(why))) if why == "the reading process ended"),
            "{ended:?}"
        );
    }
}

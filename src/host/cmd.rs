//! Running a command with a deadline. A GPU tool that hangs (nvidia-smi on a wedged driver does)
//! must cost the report a few seconds, never the whole run.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Output kept from one stream; the rest is drained and dropped.
const OUTPUT_LIMIT: u64 = 16 * 1024 * 1024;

/// What running a command gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdOutput {
    /// Exit code; `None` when killed by a signal or by our timeout.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// The command did not finish within its time and was killed with its process group.
    pub timed_out: bool,
    pub elapsed: Duration,
}

impl CmdOutput {
    /// Exited by itself with status 0.
    #[must_use]
    pub fn success(&self) -> bool {
        self.code == Some(0) && !self.timed_out
    }

    /// A short description of a failure for the report: the timeout, or the exit status and the
    /// last line of stderr (or stdout when stderr is empty).
    #[must_use]
    pub fn failure_summary(&self) -> String {
        if self.timed_out {
            return format!(
                "did not finish within {:.1} s and was stopped",
                self.elapsed.as_secs_f64()
            );
        }
        let text = if self.stderr.trim().is_empty() {
            &self.stdout
        } else {
            &self.stderr
        };
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        match self.code {
            Some(code) if last.is_empty() => format!("exited with status {code}"),
            Some(code) => format!("exited with status {code}: {last}"),
            None => format!("killed by a signal {last}").trim_end().to_string(),
        }
    }
}

/// Runs `program` (a path on this host's disk) with `args` and an environment built by `env`,
/// killing it and everything it started once `timeout` passes.
///
/// The child gets its own process group so a shell script's `sleep` dies with it, and its
/// output is read on threads so a chatty child cannot block on a full pipe.
pub fn run(
    program: &Path,
    args: &[&str],
    env: &[(impl AsRef<std::ffi::OsStr>, impl AsRef<std::ffi::OsStr>)],
    timeout: Duration,
) -> std::io::Result<CmdOutput> {
    run_in(program, args, env, timeout, Path::new("/"))
}

/// Like [`run`], started in a new empty folder made under `scratch` for this command alone
/// and removed after it.
///
/// For interpreters: `python -c` puts its working folder first on `sys.path` (before 3.11's
/// `-I` stopped that), so a stray `torch.py` where gpu-doctor was started, or in `/`, would be
/// imported instead of the real package. An empty folder of our own holds nothing to import.
pub fn run_in_empty_dir(
    program: &Path,
    args: &[&str],
    env: &[(impl AsRef<std::ffi::OsStr>, impl AsRef<std::ffi::OsStr>)],
    timeout: Duration,
    scratch: &Path,
) -> std::io::Result<CmdOutput> {
    // A folder of our own (mode 0700), removed with whatever the command left in it when
    // dropped.
    let dir = tempfile::Builder::new()
        .prefix("gpu-doctor-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir_in(scratch)?;
    run_in(program, args, env, timeout, dir.path())
}

fn run_in(
    program: &Path,
    args: &[&str],
    env: &[(impl AsRef<std::ffi::OsStr>, impl AsRef<std::ffi::OsStr>)],
    timeout: Duration,
    cwd: &Path,
) -> std::io::Result<CmdOutput> {
    let start = Instant::now();
    let mut command = Command::new(program);
    command
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_ref(), v.as_ref())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .current_dir(cwd)
        .process_group(0);
    // Started and registered under one lock: a sweep for orphans never sees it unregistered.
    let (mut child, live) = {
        let _guard = super::reap::SPAWNING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let child = command.spawn()?;
        let pgid = i32::try_from(child.id()).unwrap_or(0);
        (child, super::reap::Live::register(pgid))
    };
    let stdout = child.stdout.take().map(spawn_reader);
    let stderr = child.stderr.take().map(spawn_reader);

    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if start.elapsed() >= timeout {
            timed_out = true;
            kill_group(child.id());
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(poll_interval(start.elapsed()));
    };
    // What the command left running in its group, and what escaped the group (orphans now
    // reparented to us), is killed now, before its output is collected.
    drop(live);
    if let Ok(pgid) = i32::try_from(child.id()) {
        super::reap::finish_group(pgid);
    }
    // After a timeout, a grandchild that left the group could still hold the pipe open:
    // wait for its output only briefly.
    let grace = if timed_out {
        Duration::from_millis(200)
    } else {
        Duration::from_secs(2)
    };
    let stdout = stdout
        .map(|rx| rx.recv_timeout(grace).unwrap_or_default())
        .unwrap_or_default();
    let stderr = stderr
        .map(|rx| rx.recv_timeout(grace).unwrap_or_default())
        .unwrap_or_default();
    let code = status.and_then(|s| s.code());
    // `-vv`: every command, its outcome and time. Debug formatting escapes whatever control
    // characters a fixture's or machine's path may hold.
    if crate::term::level() >= 2 {
        crate::term::trace(&format!(
            "ran {:?} {args:?}: {} in {} ms",
            program.display().to_string(),
            if timed_out {
                "timed out".to_string()
            } else {
                code.map_or_else(|| "killed by a signal".to_string(), |c| format!("exit {c}"))
            },
            start.elapsed().as_millis()
        ));
    }
    Ok(CmdOutput {
        code,
        stdout,
        stderr,
        timed_out,
        elapsed: start.elapsed(),
    })
}

/// Polls often at first (most probes answer in milliseconds), then less often.
fn poll_interval(elapsed: Duration) -> Duration {
    if elapsed < Duration::from_millis(50) {
        Duration::from_millis(1)
    } else if elapsed < Duration::from_millis(500) {
        Duration::from_millis(5)
    } else {
        Duration::from_millis(20)
    }
}

fn spawn_reader<R: Read + Send + 'static>(stream: R) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut buf = Vec::new();
        let mut limited = stream.take(OUTPUT_LIMIT);
        let _ = limited.read_to_end(&mut buf);
        // Drain the rest so the child does not block writing.
        let _ = std::io::copy(&mut limited.into_inner(), &mut std::io::sink());
        let _ = tx.send(String::from_utf8_lossy(&buf).into_owned());
    });
    rx
}

fn kill_group(pid: u32) {
    use rustix::process::{Pid, Signal, kill_process_group};
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = kill_process_group(pid, Signal::KILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout_ms: u64) -> CmdOutput {
        let env = vec![("PATH".to_string(), "/usr/bin:/bin".to_string())];
        run(
            Path::new("/bin/sh"),
            &["-c", script],
            &env,
            Duration::from_millis(timeout_ms),
        )
        .unwrap()
    }

    #[test]
    fn captures_output_and_status() {
        let out = sh("echo hello; echo oops >&2; exit 3", 5000);
        assert_eq!(out.code, Some(3));
        assert_eq!(out.stdout, "hello\n");
        assert_eq!(out.failure_summary(), "exited with status 3: oops");
        assert!(!out.success());
    }

    #[test]
    fn a_hanging_command_and_its_children_are_stopped() {
        let started = Instant::now();
        let out = sh("echo partial; sleep 30; echo never", 300);
        assert!(out.timed_out);
        assert_eq!(out.code, None);
        assert!(
            // The command sleeps 30 s; the ceiling catches a wait for it, on a loaded machine too.
            started.elapsed() < Duration::from_secs(15),
            "{:?}",
            started.elapsed()
        );
        assert!(out.failure_summary().contains("did not finish"));
    }

    #[test]
    fn a_command_in_an_empty_dir_starts_there_and_the_dir_is_removed() {
        let scratch = std::env::temp_dir();
        let env = vec![("PATH".to_string(), "/usr/bin:/bin".to_string())];
        let out = run_in_empty_dir(
            Path::new("/bin/sh"),
            &["-c", "pwd; ls -A | wc -l; touch left-behind"],
            &env,
            Duration::from_secs(5),
            &scratch,
        )
        .unwrap();
        let mut lines = out.stdout.lines();
        let dir = lines.next().unwrap_or_default().to_string();
        assert!(dir.contains("gpu-doctor-"), "{dir}");
        assert_eq!(
            lines.next().map(str::trim),
            Some("0"),
            "the folder starts empty"
        );
        assert!(!Path::new(&dir).exists(), "{dir} was not removed");
    }

    #[test]
    fn daemons_that_leave_the_group_die_with_the_command() {
        // As the program does; this test process then reaps its commands' orphans.
        crate::host::reap::enable();
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let script = format!(
            "setsid sh -c 'echo $$ >> {p}; exec sleep 60' & sh -c 'sleep 60 & echo $! >> {p}' ; sleep 0.2; echo done",
            p = pids.display()
        );
        let out = sh(&script, 5000);
        assert_eq!(out.stdout.trim(), "done");
        let text = std::fs::read_to_string(&pids).unwrap();
        let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
        assert_eq!(pids.len(), 2, "{text}");
        for pid in pids {
            // Signal 0 only asks whether the process exists.
            let alive = rustix::process::Pid::from_raw(pid)
                .is_some_and(|pid| rustix::process::test_kill_process(pid).is_ok());
            assert!(!alive, "process {pid} outlived its command");
        }
    }

    #[test]
    fn environment_is_exactly_what_was_given() {
        let out = sh("echo \"[$HOME]\"", 5000);
        assert_eq!(out.stdout, "[]\n");
    }
}

//! Children die with gpu-doctor. Every command runs in its own process group, which is killed
//! when the command ends or runs out of time; what escapes the group (a daemon that called
//! `setsid`, a double fork) is caught because gpu-doctor is a child subreaper
//! (`PR_SET_CHILD_SUBREAPER`): orphans of its commands become its own children, and are killed
//! and reaped here. On `SIGINT`, `SIGTERM` or `SIGHUP`, and when the program ends
//! ([`shutdown`]), the groups of commands still running are killed too.
//!
//! Only processes that are gpu-doctor's children and not in its own session and group (or in
//! a command's group) are touched: a child started deliberately in gpu-doctor's group (the
//! `bash` that runs `plan --execute`) is left alone.
//!
//! The program turns this on ([`enable`], from `main`); a process that merely links the
//! library (the tests, which start their own daemons such as a tmux server) is not made a
//! subreaper and never sweeps: its commands' groups are still killed when they end.

// FFI: The signal handler is installed with libc::signal: std and rustix have no safe way that
// keeps a handler someone else chose (nohup's SIG_IGN).
#![allow(unsafe_code)]

use std::sync::Mutex;

use rustix::process::{self, Pid, Signal};
use std::sync::Once;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// Process groups of commands now running. A fixed array of atomics: the signal handler reads
/// it, and a handler may not take a lock.
static LIVE: [AtomicI32; 64] = [const { AtomicI32::new(0) }; 64];

/// Held while a command is being started and while orphans are looked for, so a command that
/// was just started is never taken for an orphan.
pub(crate) static SPAWNING: Mutex<()> = Mutex::new(());

static SETUP: Once = Once::new();

/// Set by [`enable`]: this process is gpu-doctor itself and reaps what its commands leave.
static ENABLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Set by [`release`]: orphans are no longer gpu-doctor's business.
static RELEASED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Stops being a subreaper, for `plan --execute`: what the plan's script starts (a daemon a
/// package's install script launches) is meant to outlive gpu-doctor.
pub fn release() {
    RELEASED.store(true, Ordering::SeqCst);
    let _ = rustix::process::set_child_subreaper(None);
}

/// Makes gpu-doctor a subreaper and installs the signal handlers; once, before the first
/// command starts. Called by the program's `main`.
pub fn enable() {
    if RELEASED.load(Ordering::SeqCst) {
        return;
    }
    ENABLED.store(true, Ordering::SeqCst);
    SETUP.call_once(|| {
        // prctl(PR_SET_CHILD_SUBREAPER) takes any non-zero value; rustix spells it as a pid.
        let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
        // SAFETY: signal() with a handler that is async-signal-safe (atomic loads, kill,
        // signal, raise). rustix has no safe way to install a handler, so this stays libc.
        unsafe {
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                let old = libc::signal(
                    sig,
                    on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
                );
                // Someone else (a test harness, the TUI) chose what happens: keep that.
                if old != libc::SIG_DFL && old != libc::SIG_ERR {
                    libc::signal(sig, old);
                }
            }
        }
    });
}

extern "C" fn on_signal(sig: libc::c_int) {
    kill_live_groups();
    // SAFETY: restoring the default action and raising the signal again ends the process the
    // way the signal would have, exit status included.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

fn kill_live_groups() {
    for slot in &LIVE {
        let pgid = slot.load(Ordering::SeqCst);
        // kill(2) on a process group: one system call, async-signal-safe.
        kill_group(pgid);
    }
}

/// A process or group id as rustix takes it; `None` unless positive (`Pid::from_raw` only
/// accepts those).
fn pid(raw: i32) -> Option<Pid> {
    if raw > 0 { Pid::from_raw(raw) } else { None }
}

/// Sends `SIGKILL` to a process group (nothing when `pgid` is not a valid id).
fn kill_group(pgid: i32) {
    if let Some(pgid) = pid(pgid) {
        let _ = process::kill_process_group(pgid, Signal::KILL);
    }
}

/// A command's process group, registered while it runs.
pub(crate) struct Live(Option<usize>);

impl Live {
    pub(crate) fn register(pgid: i32) -> Live {
        for (i, slot) in LIVE.iter().enumerate() {
            if slot
                .compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return Live(Some(i));
            }
        }
        Live(None)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(slot) = self.0.and_then(|i| LIVE.get(i)) {
            slot.store(0, Ordering::SeqCst);
        }
    }
}

/// Kills a command's process group, then the orphans its members left (reparented to us),
/// waiting briefly for the group to be gone so that orphans made by its dying are caught.
pub(crate) fn finish_group(pgid: i32) {
    kill_group(pgid);
    let started = Instant::now();
    loop {
        let found = sweep_orphans();
        // Signal 0 only asks whether the group still has a member.
        let group_left =
            pid(pgid).is_some_and(|pgid| process::test_kill_process_group(pgid).is_ok());
        if (!group_left && found == 0) || started.elapsed() > Duration::from_millis(500) {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Kills every command still running and every orphan; for the end of the program (the TUI's
/// quit leaves probe threads running).
pub fn shutdown() {
    kill_live_groups();
    let started = Instant::now();
    while sweep_orphans() > 0 && started.elapsed() < Duration::from_millis(500) {
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Kills and reaps gpu-doctor's children that are not commands now running and not in its own
/// group and session: orphans of commands, reparented here. Returns how many it found.
fn sweep_orphans() -> usize {
    if !ENABLED.load(Ordering::SeqCst) || RELEASED.load(Ordering::SeqCst) {
        return 0;
    }
    let Ok(_guard) = SPAWNING.lock() else {
        return 0;
    };
    let me = process::getpid().as_raw_pid();
    // Our own group and session come from /proc like everyone else's, not from getpgrp(2) or
    // getsid(2): in a container whose session leader is outside the PID namespace those give 0,
    // which rustix's `Pid` cannot hold (it panicked in CI). Compared like with like, 0 == 0.
    let Some((_, my_pgid, my_sid)) = stat_ids(me) else {
        return 0;
    };
    let mut found = 0;
    for pid in candidates() {
        let Some((ppid, pgid, sid)) = stat_ids(pid) else {
            continue;
        };
        if ppid != me || is_live(pid) || is_live(pgid) || (pgid == my_pgid && sid == my_sid) {
            continue;
        }
        found += 1;
        // The process is our child (ppid checked) and not a running command; kill it and
        // collect its exit status so no zombie stays.
        if let Some(pid) = self::pid(pid) {
            let _ = process::kill_process(pid, Signal::KILL);
            let _ = process::waitpid(Some(pid), process::WaitOptions::empty());
        }
    }
    found
}

/// Processes that may be our children: what `/proc/self/task/*/children` lists (cheap, and
/// orphans reparented to us are listed there), else every process.
fn candidates() -> Vec<i32> {
    let numbers = |text: &str| -> Vec<i32> {
        text.split_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect()
    };
    let mut out = Vec::new();
    let mut listed = false;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
                listed = true;
                out.extend(numbers(&text));
            }
        }
    }
    if listed {
        return out;
    }
    std::fs::read_dir("/proc")
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
                .collect()
        })
        .unwrap_or_default()
}

fn is_live(pid: i32) -> bool {
    LIVE.iter().any(|s| s.load(Ordering::SeqCst) == pid)
}

/// `(ppid, pgrp, session)` from `/proc/PID/stat` (fields 4, 5, 6, after the command name in
/// parentheses, which may itself hold spaces and parentheses).
fn stat_ids(pid: i32) -> Option<(i32, i32, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(1);
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    let sid = fields.next()?.parse().ok()?;
    Some((ppid, pgid, sid))
}

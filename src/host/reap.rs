//! Children die with gpu-doctor. Every command runs in its own process group, which is killed
//! when the command ends or runs out of time; what escapes the group (a daemon that called
//! `setsid`, a double fork) is caught because gpu-doctor is a child subreaper
//! (`PR_SET_CHILD_SUBREAPER`): orphans of its commands become its own children, and are killed
//! and reaped here. On `SIGINT`, `SIGTERM` or `SIGHUP`, and when the program ends
//! ([`shutdown`]), the groups of commands still running are killed too.
//!
//! Every descendant is found by parentage (`/proc/PID/task/*/children`), whatever its process
//! group or session: one that joined gpu-doctor's own group is ended too. Only a command now
//! running (its group) is left to its own end; `plan --execute`, whose script is meant to
//! start lasting services, stops the sweeping first ([`release`]).
//!
//! The program turns this on ([`enable`], from `main`); a process that merely links the
//! library (the tests, which start their own daemons such as a tmux server) is not made a
//! subreaper and never sweeps: its commands' groups are still killed when they end.

use std::sync::Mutex;

use rustix::process::{self, Pid, Signal};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use std::sync::Once;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// Process groups of commands now running. A fixed array of atomics: registering and ending a
/// command never waits on a lock, and the signal thread reads it while commands come and go.
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

/// Makes gpu-doctor a subreaper and starts watching for the ending signals; once, before the first
/// command starts. Called by the program's `main`.
pub fn enable() {
    if RELEASED.load(Ordering::SeqCst) {
        return;
    }
    ENABLED.store(true, Ordering::SeqCst);
    SETUP.call_once(|| {
        // prctl(PR_SET_CHILD_SUBREAPER) takes any non-zero value; rustix spells it as a pid.
        let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
        watch_signals();
    });
}

/// The signals that end gpu-doctor and its commands together.
const ENDING: [i32; 3] = [SIGINT, SIGTERM, SIGHUP];

/// Ends the commands with gpu-doctor on `SIGINT`, `SIGTERM` and `SIGHUP`, then ends the process
/// the way the signal would have (the parent sees the signal, not an exit code). A signal whose
/// action someone else already chose is left to them: nohup's ignored `SIGHUP`, a test
/// harness's handler. The signals are taken by signal-hook on a thread of their own, so the
/// clean-up is ordinary code, not a signal handler.
fn watch_signals() {
    let chosen = chosen_elsewhere();
    let ours: Vec<i32> = ENDING
        .into_iter()
        .filter(|&sig| !in_mask(chosen, sig))
        .collect();
    if ours.is_empty() {
        return;
    }
    let Ok(mut signals) = signal_hook::iterator::Signals::new(&ours) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                shutdown();
                let _ = signal_hook::low_level::emulate_default_handler(sig);
                // Only reached if the default action could not be restored.
                std::process::exit(128 + sig);
            }
        });
}

/// The signals this process ignores or catches already, as the kernel's mask (bit `n - 1` for
/// signal `n`), from `SigIgn` and `SigCgt` in `/proc/self/status`: the way to ask without
/// replacing the action, which `sigaction` would need unsafe code for. Nothing when that file
/// cannot be read.
fn chosen_elsewhere() -> u64 {
    std::fs::read_to_string("/proc/self/status").map_or(0, |status| signal_masks(&status))
}

/// `SigIgn | SigCgt` of a `/proc/PID/status` text.
fn signal_masks(status: &str) -> u64 {
    status
        .lines()
        .filter_map(|line| {
            line.strip_prefix("SigIgn:")
                .or_else(|| line.strip_prefix("SigCgt:"))
        })
        .filter_map(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .fold(0, |all, mask| all | mask)
}

/// Whether signal `sig` is in a kernel signal mask.
fn in_mask(mask: u64, sig: i32) -> bool {
    (1..=64).contains(&sig) && mask & (1 << (sig - 1)) != 0
}

fn kill_live_groups() {
    for slot in &LIVE {
        let pgid = slot.load(Ordering::SeqCst);
        kill_group(pgid);
    }
}

/// A process or group id as rustix takes it; `None` unless positive (`Pid::from_raw` only
/// accepts those).
fn pid(raw: i32) -> Option<Pid> {
    if raw > 0 { Pid::from_raw(raw) } else { None }
}

/// Sends `SIGKILL` to a process group (nothing when `pgid` is not a valid id).
pub(crate) fn kill_group(pgid: i32) {
    if let Some(pgid) = pid(pgid) {
        let _ = process::kill_process_group(pgid, Signal::KILL);
    }
}

/// A command's process group, registered while it runs.
#[derive(Debug)]
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
    while sweep(false) > 0 && started.elapsed() < Duration::from_millis(500) {
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Kills every descendant of gpu-doctor that is not part of a command now running, whatever
/// its process group or session: orphans of commands, reparented here (gpu-doctor is their
/// subreaper), and whatever they started. A process that joined gpu-doctor's own group is
/// no exception: as the subreaper, gpu-doctor knows its descendants by parentage, and none of
/// them is meant to outlive it (`plan --execute`, whose script's children are, calls
/// [`release`] first). Reaps the ones that are its children. Returns how many it found.
fn sweep_orphans() -> usize {
    sweep(true)
}

/// [`sweep_orphans`]; with `spare_live` false, the running commands' processes go too (the
/// end of the program).
fn sweep(spare_live: bool) -> usize {
    if !ENABLED.load(Ordering::SeqCst) || RELEASED.load(Ordering::SeqCst) {
        return 0;
    }
    let Ok(_guard) = SPAWNING.lock() else {
        return 0;
    };
    let me = process::getpid().as_raw_pid();
    let mut found = 0;
    // Breadth first from gpu-doctor: a running command's subtree is left to the command's
    // own end (its group is killed then, and what escaped it is found by the next sweep).
    let mut pending: Vec<i32> = children_of(me, true);
    let mut seen = std::collections::HashSet::new();
    while let Some(pid) = pending.pop() {
        if pid == me || !seen.insert(pid) || seen.len() > MAX_DESCENDANTS {
            continue;
        }
        let Some((ppid, pgid, _)) = stat_ids(pid) else {
            continue;
        };
        if spare_live && (is_live(pid) || is_live(pgid)) {
            continue;
        }
        found += 1;
        pending.extend(children_of(pid, false));
        if let Some(p) = self::pid(pid) {
            let _ = process::kill_process(p, Signal::KILL);
            // Only a child of ours can be reaped here; a grandchild comes back to us (the
            // subreaper) when its parent dies, and the next sweep reaps it.
            if ppid == me {
                let _ = process::waitpid(Some(p), process::WaitOptions::empty());
            }
        }
    }
    found
}

/// The most descendants one sweep walks: a fork bomb must not make the walk endless.
const MAX_DESCENDANTS: usize = 100_000;

/// The children of `pid`: what `/proc/PID/task/*/children` lists (every thread's), else,
/// where the kernel has no such file, every process whose parent it is.
fn children_of(pid: i32, is_me: bool) -> Vec<i32> {
    let numbers = |text: &str| -> Vec<i32> {
        text.split_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect()
    };
    let tasks = if is_me {
        "/proc/self/task".to_string()
    } else {
        format!("/proc/{pid}/task")
    };
    let mut out = Vec::new();
    let mut listed = false;
    if let Ok(tasks) = std::fs::read_dir(tasks) {
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
                .filter(|&p: &i32| stat_ids(p).is_some_and(|(ppid, _, _)| ppid == pid))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_ignored_or_caught_elsewhere_is_left_alone() {
        // nohup: SIGHUP (1) ignored; a harness catching SIGINT (2); SIGTERM (15) untouched.
        let status = "Name:\tgpu-doctor\nSigBlk:\t0000000000004000\nSigIgn:\t0000000000000001\n\
                      SigCgt:\t0000000000000002\n";
        let mask = signal_masks(status);
        assert!(in_mask(mask, SIGHUP));
        assert!(in_mask(mask, SIGINT));
        assert!(!in_mask(mask, SIGTERM), "SigBlk is not a choice of action");
        assert!(!in_mask(mask, 0) && !in_mask(mask, 65));
    }
}

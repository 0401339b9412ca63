//! `plan --execute`: asks first, then runs the script with bash and logs everything it prints.
//! The script itself does the step-by-step work (`set -euo pipefail`, a check before each step,
//! an exit trap that says which step failed and what was and was not done), so running the
//! written file by hand and `--execute` behave the same. The TUI runs the same script through
//! [`run_watched`]: the script then also prints tagged progress lines (read back as [`Event`]s)
//! and stops before a step when a file appears, so a watcher can show each step's state and stop
//! between steps.
//!
//! Side effects, all here: reading the answer from the terminal, a private temporary folder for
//! the script, the log file, and the bash process. The environment is the host's snapshot;
//! under `--root` PATH's folders are taken inside the root, so the fixture's stand-in commands
//! run instead of the machine's.

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::host::Host;

/// Where a run is logged unless told otherwise (appended to, in the current folder): the
/// CLI's `--log` default, and the TUI's.
pub const DEFAULT_LOG: &str = "gpu-doctor-plan.log";

/// How a run went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The script finished.
    Done,
    /// The script stopped; its exit status (`None`: killed by a signal).
    Failed(Option<i32>),
    /// The script stopped before a step because its watcher asked ([`run_watched`]).
    Stopped,
    /// The script could not be started or the log not written.
    Error(String),
}

/// How the log's last line says it: `finished`, `stopped with exit status 1`.
impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Done => f.write_str("finished"),
            Outcome::Failed(Some(code)) => write!(f, "stopped with exit status {code}"),
            Outcome::Failed(None) => f.write_str("stopped by a signal"),
            Outcome::Stopped => f.write_str("stopped between steps, as asked"),
            Outcome::Error(why) => write!(f, "not run: {why}"),
        }
    }
}

/// Asks on the terminal whether to run; `--yes` answers for the user. `None` when there is
/// no terminal to ask on.
#[must_use]
pub fn confirm(yes: bool, question: &str) -> Option<bool> {
    if yes {
        return Some(true);
    }
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return None;
    }
    crate::term::raw(&format!("{question} [y/N] "));
    let mut answer = String::new();
    if stdin.lock().read_line(&mut answer).is_err() {
        return Some(false);
    }
    Some(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes" | "YES"))
}

/// The child's environment: the host's snapshot, with PATH inside the root under `--root`.
fn child_env(host: &Host) -> Vec<(String, String)> {
    let root = host.fs.root();
    host.env
        .with_prefix("")
        .map(|(k, v)| {
            if k == "PATH" && host.is_rooted() {
                let inside: Vec<String> = v
                    .split(':')
                    .filter(|p| p.starts_with('/'))
                    .map(|p| root.join(p.trim_start_matches('/')).display().to_string())
                    .collect();
                (k.to_string(), inside.join(":"))
            } else {
                (k.to_string(), v.to_string())
            }
        })
        .collect()
}

/// A folder only this user can read, for the script while it runs; removed when dropped.
fn private_dir() -> std::io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("gpu-doctor-plan-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

/// The exit status the script gives when it stopped between steps because a watcher asked
/// (its `GPU_DOCTOR_STOP` file existed); see the script's preamble in [`super::shell`].
pub const STOPPED_STATUS: i32 = 3;

/// What a watched run reports as it goes ([`run_watched`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The script started as process `group`, the leader of its own process group (ending
    /// the group ends the run); creating `stop` makes it stop before its next step.
    Started { stop: PathBuf, group: u32 },
    /// A line the script or a command printed (stdout and stderr in the order they came).
    Output(String),
    /// Step `n` (from 1) started.
    Step(usize),
    /// The running step found itself done already, and why.
    Skipped(String),
    /// The running step finished.
    StepDone,
    /// The running step failed.
    StepFailed,
    /// The script ended: how it went.
    Ended(Outcome),
}

/// Who reads what the script prints: the terminal (`plan --execute`) or a watcher that wants
/// progress as events (the TUI).
enum Sink<'a> {
    Terminal,
    Watcher {
        /// The tag that starts the script's progress lines.
        tag: String,
        on_event: &'a mut dyn FnMut(Event),
    },
}

/// Runs `script` with bash, echoing and logging every line it prints (stdout and stderr in the
/// order they come), and says how it went. The terminal stays the script's, so `sudo` can ask
/// for a password.
pub fn run(host: &Host, script: &str, log_path: &Path) -> Outcome {
    run_logged(host, script, log_path, Sink::Terminal)
}

/// Runs `script` for a watcher that owns the terminal (the TUI): no input (so nothing can
/// prompt; `sudo` must have been asked beforehand, and is called with `-n`), progress as
/// [`Event`]s, every line logged as [`run`] does, and a stop file that ends the run before its
/// next step, so running it again resumes where it stopped. The last event is
/// [`Event::Ended`].
pub fn run_watched(
    host: &Host,
    script: &str,
    log_path: &Path,
    on_event: &mut dyn FnMut(Event),
) -> Outcome {
    let outcome = run_logged(
        host,
        script,
        log_path,
        Sink::Watcher {
            tag: String::new(),
            on_event: &mut *on_event,
        },
    );
    on_event(Event::Ended(outcome.clone()));
    outcome
}

fn run_logged(host: &Host, script: &str, log_path: &Path, sink: Sink<'_>) -> Outcome {
    let mut log = match std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path)
    {
        Ok(f) => f,
        Err(e) => {
            return Outcome::Error(format!("cannot open the log {}: {e}", log_path.display()));
        }
    };
    let dir = match private_dir() {
        Ok(d) => d,
        Err(e) => return Outcome::Error(format!("cannot make a folder for the script: {e}")),
    };
    let outcome = run_in(host, script, dir.path(), &mut log, sink);
    let _ = dir.close();
    let _ = writeln!(log, "== gpu-doctor plan --execute: {outcome}");
    outcome
}

fn run_in(
    host: &Host,
    script: &str,
    dir: &Path,
    log: &mut std::fs::File,
    mut sink: Sink<'_>,
) -> Outcome {
    let path = dir.join("plan.sh");
    if let Err(e) = std::fs::write(&path, script) {
        return Outcome::Error(format!("cannot write {}: {e}", path.display()));
    }
    let started = jiff::Timestamp::now().as_second().max(0);
    let _ = writeln!(
        log,
        "== gpu-doctor plan --execute at {started} (seconds since 1970); the script:\n{script}== its output:"
    );
    // bash runs on this machine even under --root: the script's commands are what resolve
    // inside the root.
    let Ok(bash) = which::which("bash") else {
        return Outcome::Error("bash is not on PATH".to_string());
    };
    let (reader, writer) = match std::io::pipe() {
        Ok(pair) => pair,
        Err(e) => return Outcome::Error(format!("cannot make a pipe: {e}")),
    };
    let Ok(writer2) = writer.try_clone() else {
        return Outcome::Error("cannot share the pipe".to_string());
    };
    let cwd = if host.is_rooted() {
        host.fs.root().to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
    };
    // What the plan starts (a daemon from a package's install script) is meant to outlive us.
    crate::host::reap::release();
    let mut command = Command::new(bash);
    command
        .arg(&path)
        .env_clear()
        .envs(child_env(host))
        .current_dir(cwd)
        .stdout(writer)
        .stderr(writer2);
    let stop = dir.join("stop");
    match &mut sink {
        Sink::Terminal => {
            command.stdin(Stdio::inherit());
        }
        Sink::Watcher { tag, .. } => {
            // The folder's random name makes a tag no command's output carries by chance.
            let name = dir.file_name().unwrap_or_default().to_string_lossy();
            *tag = format!("@{name}");
            command
                .stdin(Stdio::null())
                .env("GPU_DOCTOR_EVENTS", tag.as_str())
                .env("GPU_DOCTOR_STOP", &stop)
                .env("GPU_DOCTOR_NO_PROMPT", "1")
                // Its own process group, so the watcher can end the whole run at once.
                .process_group(0);
        }
    }
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => return Outcome::Error(format!("cannot start bash: {e}")),
    };
    if let Sink::Watcher { on_event, .. } = &mut sink {
        on_event(Event::Started {
            stop,
            group: child.id(),
        });
    }
    // The parent's copies of the write end are gone with `command`; the pipe ends with the child.
    drop(command);
    let stdout = std::io::stdout();
    let mut stopped = false;
    for line in BufReader::new(reader).lines() {
        let Ok(line) = line else { break };
        match &mut sink {
            Sink::Terminal => {
                let mut out = stdout.lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            Sink::Watcher { tag, on_event } => {
                if let Some(event) = parse_event(tag, &line) {
                    stopped |= matches!(event, Parsed::Stopped);
                    if let Parsed::Event(event) = event {
                        on_event(event);
                    }
                    continue;
                }
                on_event(Event::Output(crate::sanitize::clean(&line)));
            }
        }
        let _ = writeln!(log, "{line}");
    }
    match child.wait() {
        Ok(status) if status.success() => Outcome::Done,
        Ok(status) if stopped && status.code() == Some(STOPPED_STATUS) => Outcome::Stopped,
        Ok(status) => Outcome::Failed(status.code()),
        Err(e) => Outcome::Error(format!("lost the bash process: {e}")),
    }
}

/// A progress line of the script, read.
#[derive(Debug, PartialEq, Eq)]
enum Parsed {
    Event(Event),
    /// The script stopped before a step as asked.
    Stopped,
    /// Tagged, but nothing this version knows (ignored, not shown).
    Unknown,
}

/// Reads a line the script's `event` function printed: `TAG start N`, `TAG skipped REASON`,
/// `TAG finished`, `TAG failed STATUS`, `TAG stopped N`. `None` for any other line.
fn parse_event(tag: &str, line: &str) -> Option<Parsed> {
    let rest = line.strip_prefix(tag)?.strip_prefix(' ')?;
    let (word, arg) = rest.split_once(' ').unwrap_or((rest, ""));
    Some(match word {
        "start" => arg
            .parse()
            .map_or(Parsed::Unknown, |n| Parsed::Event(Event::Step(n))),
        "skipped" => Parsed::Event(Event::Skipped(crate::sanitize::clean(arg))),
        "finished" => Parsed::Event(Event::StepDone),
        "failed" => Parsed::Event(Event::StepFailed),
        "stopped" => Parsed::Stopped,
        _ => Parsed::Unknown,
    })
}

/// Under `--root`, a program the plan runs by its path (an environment's Python) must stay
/// inside the root: the kernel follows an absolute link such as `bin/python3 -> /usr/bin/python3`
/// to this machine's own file, which would turn a fixture run into a real one. The reason when
/// one leaves (or cannot be followed).
#[expect(
    clippy::disallowed_methods,
    reason = "checks the plan's interpreters against the real --root folder before a script runs there"
)]
pub fn escapes_root(host: &Host, plan: &super::Plan) -> Option<String> {
    if !host.is_rooted() {
        return None;
    }
    let root = host.fs.root();
    let interpreters = plan.steps.iter().flat_map(|s| {
        let from_checks = s.guards.iter().filter_map(|g| match &g.check {
            super::Check::PythonDist {
                python: super::Python::Prefix(p),
                ..
            } => Some(p.clone()),
            _ => None,
        });
        let from_commands = s.commands.iter().filter_map(|c| match c {
            super::Command::Pip {
                python: super::Python::Prefix(p),
                ..
            } => Some(p.clone()),
            _ => None,
        });
        from_checks.chain(from_commands).collect::<Vec<_>>()
    });
    for prefix in interpreters {
        let relative = format!("{}/bin/python", prefix.trim_matches('/'));
        let path = root.join(relative);
        if std::fs::symlink_metadata(&path).is_err() {
            continue;
        }
        match std::fs::canonicalize(&path) {
            Ok(real) if real.starts_with(root) => {}
            Ok(real) => {
                return Some(format!(
                    "{} leads outside --root to {}",
                    path.display(),
                    real.display()
                ));
            }
            Err(e) => return Some(format!("{} cannot be followed: {e}", path.display())),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lines_with_the_tag_are_progress() {
        let tag = "@gpu-doctor-plan-Ab12";
        assert_eq!(
            parse_event(tag, "@gpu-doctor-plan-Ab12 start 3"),
            Some(Parsed::Event(Event::Step(3)))
        );
        assert_eq!(
            parse_event(
                tag,
                "@gpu-doctor-plan-Ab12 skipped cuda-keyring is installed"
            ),
            Some(Parsed::Event(Event::Skipped(
                "cuda-keyring is installed".to_string()
            )))
        );
        assert_eq!(
            parse_event(tag, "@gpu-doctor-plan-Ab12 finished"),
            Some(Parsed::Event(Event::StepDone))
        );
        assert_eq!(
            parse_event(tag, "@gpu-doctor-plan-Ab12 stopped 4"),
            Some(Parsed::Stopped)
        );
        assert_eq!(
            parse_event(tag, "@gpu-doctor-plan-Ab12 start x"),
            Some(Parsed::Unknown)
        );
        // A command's own output, even one that looks alike, is output.
        assert_eq!(parse_event(tag, "    done"), None);
        assert_eq!(parse_event(tag, "@gpu-doctor-plan-Ab123 start 1"), None);
        assert_eq!(parse_event(tag, "x @gpu-doctor-plan-Ab12 start 1"), None);
    }
}

//! `plan --execute`: asks first, then runs the script with bash and logs everything it prints.
//! The script itself does the step-by-step work (`set -euo pipefail`, a check before each step,
//! an exit trap that says which step failed and what was and was not done), so running the
//! written file by hand and `--execute` behave the same.
//!
//! Side effects, all here: reading the answer from the terminal, a private temporary folder for
//! the script, the log file, and the bash process. The environment is the host's snapshot;
//! under `--root` PATH's folders are taken inside the root, so the fixture's stand-in commands
//! run instead of the machine's.

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::host::Host;

/// How a run went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The script finished.
    Done,
    /// The script stopped; its exit status (`None`: killed by a signal).
    Failed(Option<i32>),
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

/// Runs `script` with bash, echoing and logging every line it prints (stdout and stderr in the
/// order they come), and says how it went.
pub fn run(host: &Host, script: &str, log_path: &Path) -> Outcome {
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
    let outcome = run_in(host, script, dir.path(), &mut log);
    let _ = dir.close();
    let _ = writeln!(log, "== gpu-doctor plan --execute: {outcome}");
    outcome
}

fn run_in(host: &Host, script: &str, dir: &Path, log: &mut std::fs::File) -> Outcome {
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
        .stdin(Stdio::inherit())
        .stdout(writer)
        .stderr(writer2);
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => return Outcome::Error(format!("cannot start bash: {e}")),
    };
    // The parent's copies of the write end are gone with `command`; the pipe ends with the child.
    drop(command);
    let stdout = std::io::stdout();
    for line in BufReader::new(reader).lines() {
        let Ok(line) = line else { break };
        let mut out = stdout.lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
        let _ = writeln!(log, "{line}");
    }
    match child.wait() {
        Ok(status) if status.success() => Outcome::Done,
        Ok(status) => Outcome::Failed(status.code()),
        Err(e) => Outcome::Error(format!("lost the bash process: {e}")),
    }
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

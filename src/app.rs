//! The one orchestrator: build the host, gather facts, diagnose, and hand the report to a face.

use std::io::Write;
use std::time::Duration;

use crate::cli::{Cli, Command};
use crate::host::{Env, Host};
use crate::report::Report;

/// Exit codes, as documented in README and `--help`.
pub mod exit {
    pub const OK: u8 = 0;
    pub const USAGE: u8 = 2;
    pub const FAILED: u8 = 3;
}

/// Builds the host the CLI asked for: the real machine, or `--root DIR`.
///
/// # Errors
/// When `--root` names something that is not a folder, or the timeout is not a positive number.
pub fn host_for(cli: &Cli) -> Result<Host, String> {
    if !(cli.timeout.is_finite() && cli.timeout > 0.0 && cli.timeout <= 3600.0) {
        return Err(format!(
            "--timeout must be between 0 and 3600 seconds, not {}",
            cli.timeout
        ));
    }
    let timeout = Duration::from_secs_f64(cli.timeout);
    let env = Env::from_process();
    match &cli.root {
        None => Ok(Host::real(env, timeout)),
        Some(root) if root.is_dir() => {
            let root = root
                .canonicalize()
                .map_err(|e| format!("--root {}: {e}", root.display()))?;
            Ok(Host::rooted(root, env, timeout))
        }
        Some(root) => Err(format!("--root {}: not a folder", root.display())),
    }
}

/// Gathers and diagnoses: the full report for any face.
#[must_use]
pub fn examine(host: &Host) -> Report {
    let mut report = crate::probe::gather(host);
    report.findings = crate::diagnose::diagnose(&report);
    report
}

/// Runs the CLI and returns the exit code.
#[must_use]
pub fn run(cli: &Cli) -> u8 {
    let command = cli
        .command
        .as_ref()
        .unwrap_or(&Command::Doctor { json: false });
    if let Command::Schema = command {
        return emit(&crate::schema::render());
    }
    let host = match host_for(cli) {
        Ok(host) => host,
        Err(message) => {
            eprintln!("gpu-doctor: {message}");
            return exit::USAGE;
        }
    };
    match command {
        Command::Doctor { json } => {
            let report = examine(&host);
            let text = if *json {
                crate::present::json::render(&report)
            } else {
                crate::present::text::render(&report)
            };
            emit(&text)
        }
        Command::Schema => exit::OK,
    }
}

/// Writes to stdout; a closed pipe (`| head`) is success, as in ripgrep and uv.
fn emit(text: &str) -> u8 {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => exit::OK,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => exit::OK,
        Err(e) => {
            eprintln!("gpu-doctor: cannot write the report: {e}");
            exit::FAILED
        }
    }
}

//! The one orchestrator: build the host, gather facts, diagnose, and hand the report to a face.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use crate::cli::{Cli, Command};
use crate::host::{Env, Host};
use crate::report::Report;

/// Exit codes, as documented in README and `--help`.
pub mod exit {
    pub const OK: u8 = 0;
    pub const PROBLEM: u8 = 1;
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
///
/// Uses the installed manifest set when there is a good one (`gpu-doctor manifest update`),
/// else the built-in set; `report.manifests` says which. Today's date comes from the system
/// clock for the `manifests-stale` rule, except under `--root`, where a fixture's report must
/// be the same every day.
#[must_use]
pub fn examine(host: &Host) -> Report {
    examine_with(host, None)
}

/// [`examine`], and with `deep` each framework imported by its environment's interpreter before
/// the diagnosis (`doctor --deep`, `smoke --frameworks`), so the rules weigh what the
/// frameworks said.
#[must_use]
pub fn examine_with(host: &Host, deep: Option<&crate::deep::Options>) -> Report {
    let selected = crate::update::select(host);
    let manifests = selected.manifests.as_ref();
    let mut report = crate::probe::gather(host);
    if let Some(deep) = deep {
        crate::deep::attach(host, &mut report, deep);
    }
    let today = if host.is_rooted() {
        None
    } else {
        crate::update::date::Date::from_system_time(std::time::SystemTime::now())
    };
    report.manifests = selected.summary(today);
    crate::fill::fill_gpus(&mut report, manifests);
    report.findings = crate::diagnose::diagnose_with(&report, manifests);
    report
}

/// [`examine`], with a bug in gpu-doctor turned into a message and exit code 3 rather than a
/// crash: CI jobs gate on `check`'s exit code and must tell "your machine fails" (1) from
/// "the doctor broke" (3).
///
/// # Errors
/// The panic message, when examining panicked.
pub fn examine_guarded(host: &Host) -> Result<Report, String> {
    examine_guarded_with(host, None)
}

/// [`examine_guarded`] with the deep scan of [`examine_with`].
///
/// # Errors
/// The panic message, when examining panicked.
pub fn examine_guarded_with(
    host: &Host,
    deep: Option<&crate::deep::Options>,
) -> Result<Report, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| examine_with(host, deep))).map_err(
        |payload| {
            payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_string()))
                .unwrap_or_else(|| "unknown panic".to_string())
        },
    )
}

fn report_or_exit(host: &Host, deep: Option<&crate::deep::Options>) -> Result<Report, u8> {
    let report = examine_guarded_with(host, deep).map_err(|message| {
        eprintln!(
            "gpu-doctor: internal error while examining the machine: {message}\n\
             This is a bug in gpu-doctor; please report it with the output of `gpu-doctor doctor --json`."
        );
        exit::FAILED
    })?;
    if let Some(warning) = &report.manifests.warning {
        eprintln!("gpu-doctor: warning: {warning}");
    }
    Ok(report)
}

/// Runs the CLI and returns the exit code.
#[must_use]
pub fn run(cli: &Cli) -> u8 {
    // No subcommand: the interactive app on a terminal, the text report anywhere else (a pipe,
    // a CI log), so scripts that ran plain `gpu-doctor` keep their output.
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let default = if interactive {
        Command::Tui
    } else {
        Command::Doctor {
            json: false,
            deep: false,
            deep_timeout: crate::deep::DEFAULT_TIMEOUT_SECS,
        }
    };
    let command = cli.command.as_ref().unwrap_or(&default);
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
        Command::Doctor {
            json,
            deep,
            deep_timeout,
        } => {
            let deep = match deep
                .then(|| crate::deep::Options::new(*deep_timeout, false))
                .transpose()
            {
                Ok(deep) => deep,
                Err(message) => {
                    eprintln!("gpu-doctor: {message}");
                    return exit::USAGE;
                }
            };
            if deep.is_some() && host.live() && std::io::stderr().is_terminal() {
                eprintln!(
                    "gpu-doctor: importing each Python framework (up to {deep_timeout} s)..."
                );
            }
            let report = match report_or_exit(&host, deep.as_ref()) {
                Ok(report) => report,
                Err(code) => return code,
            };
            let text = if *json {
                crate::present::json::render(&report)
            } else if deep.is_some() {
                crate::present::text::render(&report) + &crate::deep::text::render(&report, false)
            } else {
                crate::present::text::render(&report)
            };
            emit(&text)
        }
        Command::Check {
            require,
            fail_on,
            env,
            format,
            output,
        } => check(
            &host,
            require,
            *fail_on,
            env.as_deref(),
            *format,
            output.as_deref(),
        ),
        Command::Smoke(args) => crate::smoke::run(&host, args),
        Command::Tui => crate::tui::run(&host),
        Command::Manifest { action } => crate::update::run(&host, action),
        Command::Estimate(args) => crate::guide::estimate(&host, args),
        Command::Advise(args) => crate::guide::advise(&host, args),
        Command::Schema => exit::OK,
        Command::Plan(args) => crate::plan::run::run(&host, args),
    }
}

fn check(
    host: &Host,
    require: &[String],
    fail_on: crate::check::FailOn,
    env: Option<&str>,
    format: crate::check::render::Format,
    output: Option<&std::path::Path>,
) -> u8 {
    let mut requirements = Vec::new();
    for text in require {
        match crate::check::expr::parse(text) {
            Ok(r) => requirements.push(r),
            Err(e) => {
                eprintln!("gpu-doctor: {e}");
                return exit::USAGE;
            }
        }
    }
    let report = match report_or_exit(host, None) {
        Ok(report) => report,
        Err(code) => return code,
    };
    if let Some(env) = env
        && !report
            .python_envs
            .iter()
            .any(|e| e.path.trim_end_matches('/') == env.trim_end_matches('/'))
    {
        eprintln!("gpu-doctor: --env {env}: no Python environment with that prefix was found");
        return exit::USAGE;
    }
    let verdict = crate::check::verdict(&report, &requirements, fail_on, env);
    let text = crate::check::render::render(&verdict, format);
    if let Some(path) = output
        && let Err(e) = std::fs::write(path, &text)
    {
        eprintln!("gpu-doctor: cannot write {}: {e}", path.display());
        return exit::FAILED;
    }
    match emit(&text) {
        exit::OK if verdict.pass => exit::OK,
        exit::OK => exit::PROBLEM,
        code => code,
    }
}

/// Writes to stdout; a closed pipe (`| head`) is success, as in ripgrep and uv.
pub fn emit_text(text: &str) -> u8 {
    emit(text)
}

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

//! One module per subcommand: each resolves its settings ([`settings`]), calls the domain with
//! plain values, writes the output and returns its [`ExitStatus`]. This is the only place that
//! turns outcomes into exit statuses; `main` prints a [`CliError`] once and exits with its code.
//!
//! Depends on [`crate::cli`] for the parsed command line, and on the domain below it; nothing
//! below imports it.

mod check;
mod docs;
mod doctor;
mod entry;
mod explain;
mod guide;
mod manifest;
mod plan;
mod report;
mod settings;
mod smoke;
mod tui;

use std::io::IsTerminal;

use crate::cli::{Cli, Command, ReportCommand};
use crate::exit::{CliError, CliResult, ExitStatus};
use crate::report::Report;
pub use entry::main;
use settings::Settings;

/// Runs what the command line asked for.
///
/// # Errors
/// Whatever stopped the command, with its exit status.
pub(crate) fn run(cli: &Cli) -> CliResult {
    crate::term::set_level(cli.verbose, cli.quiet);
    // No subcommand: the interactive app on a terminal, the text report anywhere else (a pipe,
    // a CI log), so scripts that ran plain `gpu-doctor` keep their output.
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let default = if interactive && !tui::dumb_terminal() {
        Command::Tui
    } else {
        Command::Doctor(doctor::text_report())
    };
    let command = cli.command.as_ref().unwrap_or(&default);
    // What needs neither the machine nor the settings.
    match command {
        Command::Schema => return docs::schema(),
        Command::Completions { shell } => return docs::completions(*shell),
        Command::Man { out } => return docs::man(out),
        _ => {}
    }
    let settings = Settings::resolve(cli)?;
    match command {
        Command::Doctor(args) => doctor::run(&settings, args),
        Command::Check(args) => check::run(&settings, args),
        Command::Smoke(args) => smoke::run(&settings, args),
        Command::Explain(args) => explain::run(&settings, args),
        Command::Tui => tui::run(&settings),
        Command::Manifest { action } => manifest::run(&settings, action),
        Command::Estimate(args) => guide::estimate(&settings, args),
        Command::Advise(args) => guide::advise(&settings, args),
        Command::Report {
            action: ReportCommand::Merge(args),
        } => report::merge(&settings, args),
        Command::Plan(args) => plan::run(&settings, args),
        Command::Schema | Command::Completions { .. } | Command::Man { .. } => {
            Ok(ExitStatus::Success)
        }
    }
}

/// The examined machine for a face: a bug while examining becomes exit 3 with a message; the
/// manifest warning and (with `-v`) the scan go to stderr.
///
/// # Errors
/// A failure, when examining panicked.
fn examined(settings: &Settings, deep: Option<&crate::deep::Options>) -> Result<Report, CliError> {
    let report = crate::examine::examine_guarded_with(&settings.host, &settings.manifests, deep).map_err(|message| {
        CliError::failure(format!(
            "internal error while examining the machine: {message}\n\
             This is a bug in gpu-doctor; please report it with the output of `gpu-doctor doctor --json`."
        ))
    })?;
    if let Some(warning) = &report.manifests.warning {
        crate::term::warn(warning);
    }
    say_scan(&report);
    Ok(report)
}

/// `-v`: what the scan did, probe by probe.
fn say_scan(report: &Report) {
    if crate::term::level() < 1 {
        return;
    }
    crate::term::verbose(&format!(
        "manifests: {} set {}",
        report.manifests.origin, report.manifests.version
    ));
    for probe in &report.probes {
        crate::term::verbose(&format!(
            "probe {}: {:?} in {} ms{}",
            probe.name,
            probe.status,
            probe.duration_ms,
            probe
                .detail
                .as_deref()
                .map(|d| format!(" ({})", crate::sanitize::clean(d)))
                .unwrap_or_default()
        ));
    }
}

/// Whether `report` has an error finding: `doctor` then exits 1, as `check` does with its
/// default `--fail-on error`.
fn has_error(report: &Report) -> bool {
    report
        .findings
        .iter()
        .any(|f| f.severity == crate::report::Severity::Error)
}

//! gpu-doctor's entry point, called by `main.rs`: the driver-probe and smoke-test child roles
//! (this same binary re-run), else parse the command line, run the command, print its error
//! once and exit with its status.

use std::process::ExitCode;

use clap::FromArgMatches;

use super::run;
use crate::exit::{CliError, Said};

/// The whole program: the two child roles, else the command line's command.
#[must_use]
pub fn main() -> ExitCode {
    // The driver probe child is this same binary; it must not parse the public CLI.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == crate::host::gpu::CHILD_ARG)
    {
        return ExitCode::from(u8::try_from(crate::host::gpu::child_main()).unwrap_or(3));
    }
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == crate::host::gpu::STREAM_ARG)
    {
        return ExitCode::from(u8::try_from(crate::host::gpu::stream_main()).unwrap_or(3));
    }
    let mut args = std::env::args_os();
    if args
        .nth(1)
        .is_some_and(|a| a == crate::smoke::child::CHILD_ARG)
    {
        let request = args
            .next()
            .and_then(|a| a.into_string().ok())
            .unwrap_or_default();
        return ExitCode::from(
            u8::try_from(crate::smoke::child::child_main(&request)).unwrap_or(3),
        );
    }
    // clap prints help and usage errors before `--color` is parsed: look for it first.
    let command = crate::cli::command_coloured(color_flag(std::env::args_os().skip(1)));
    let cli =
        crate::cli::Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit());
    // Commands' daemons and orphans are this process's to kill (see host::reap).
    crate::host::reap::enable();
    let status = match run(&cli) {
        Ok(status) => status,
        Err(error) => {
            say(&error);
            error.status
        }
    };
    // Commands still running (the TUI's refreshes when it quits) die with us.
    crate::host::reap::shutdown();
    ExitCode::from(status)
}

/// Tells the user why the command stopped: the one place errors are printed.
fn say(error: &CliError) {
    for said in &error.said {
        match said {
            Said::Error(message) => crate::term::error(message),
            Said::Text(text) => crate::term::raw(text),
        }
    }
}

/// The last `--color WHEN` / `--color=WHEN` before a `--`, as clap's own colour setting.
fn color_flag(args: impl Iterator<Item = std::ffi::OsString>) -> Option<clap::ColorChoice> {
    let mut choice = None;
    let mut args = args.map(|a| a.to_string_lossy().into_owned());
    while let Some(arg) = args.next() {
        let value = match arg.as_str() {
            "--" => break,
            "--color" => args.next(),
            other => other.strip_prefix("--color=").map(str::to_string),
        };
        choice = match value.as_deref() {
            Some("always") => Some(clap::ColorChoice::Always),
            Some("never") => Some(clap::ColorChoice::Never),
            Some("auto") => Some(clap::ColorChoice::Auto),
            _ => choice,
        };
    }
    choice
}

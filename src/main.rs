//! gpu-doctor's entry point: parse arguments, run the command, print its error once, exit with
//! its status.

use std::process::ExitCode;

use clap::FromArgMatches;

fn main() -> ExitCode {
    // The driver probe child is this same binary; it must not parse the public CLI.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == gpu_doctor::host::gpu::CHILD_ARG)
    {
        return ExitCode::from(u8::try_from(gpu_doctor::host::gpu::child_main()).unwrap_or(3));
    }
    let mut args = std::env::args_os();
    if args
        .nth(1)
        .is_some_and(|a| a == gpu_doctor::smoke::child::CHILD_ARG)
    {
        let request = args
            .next()
            .and_then(|a| a.into_string().ok())
            .unwrap_or_default();
        return ExitCode::from(
            u8::try_from(gpu_doctor::smoke::child::child_main(&request)).unwrap_or(3),
        );
    }
    // clap prints help and usage errors before `--color` is parsed: look for it first.
    let mut command = gpu_doctor::cli::command();
    if let Some(choice) = color_flag(std::env::args_os().skip(1)) {
        command = command.color(choice);
    }
    let cli =
        gpu_doctor::cli::Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit());
    // Commands' daemons and orphans are this process's to kill (see host::reap).
    gpu_doctor::host::reap::enable();
    let status = match gpu_doctor::commands::run(&cli) {
        Ok(status) => status,
        Err(error) => {
            say(&error);
            error.status
        }
    };
    // Commands still running (the TUI's refreshes when it quits) die with us.
    gpu_doctor::host::reap::shutdown();
    ExitCode::from(status)
}

/// Tells the user why the command stopped: the one place errors are printed.
fn say(error: &gpu_doctor::exit::CliError) {
    use gpu_doctor::exit::Said;
    for said in &error.said {
        match said {
            Said::Error(message) => gpu_doctor::term::error(message),
            Said::Text(text) => eprint!("{text}"),
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

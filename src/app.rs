//! The one orchestrator: build the host, gather facts, diagnose, and hand the report to a face.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use crate::check::FailOn;
use crate::cli::{Cli, Command, ReportCommand, ReportFormat};
use crate::host::{Env, Host};
use crate::present::paint::Paint;
use crate::report::Report;

/// Exit codes, as documented in README and `--help`.
pub mod exit {
    pub const OK: u8 = 0;
    pub const PROBLEM: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const FAILED: u8 = 3;
}

/// Builds the host the CLI asked for: the real machine, or `--root DIR`, with the user's
/// settings read (config file, `GPU_DOCTOR_*` variables) and `--timeout` resolved over them.
///
/// # Errors
/// When `--root` names something that is not a folder, the settings cannot be read, or the
/// timeout is not a positive number of seconds.
pub fn host_for(cli: &Cli) -> Result<Host, String> {
    let env = Env::from_process();
    let mut host = match &cli.root {
        None => match &cli.host_root {
            Some(dir) => host_rooted(dir, env)?,
            None => Host::real(env, crate::host::DEFAULT_TIMEOUT),
        },
        Some(root) if root.is_dir() => {
            let root = root
                .canonicalize()
                .map_err(|e| format!("--root {}: {e}", root.display()))?;
            Host::rooted(root, env, crate::host::DEFAULT_TIMEOUT)
        }
        Some(root) => return Err(format!("--root {}: not a folder", root.display())),
    };
    host.config = crate::config::load(&host, cli.config.as_deref()).map_err(|e| e.to_string())?;
    if let Some(seconds) = cli.timeout {
        crate::config::check_seconds(seconds).map_err(|m| format!("--timeout {m}"))?;
    }
    if let Some(seconds) = cli.timeout.or(host.config.timeout) {
        host.timeout = Duration::from_secs_f64(seconds);
    }
    say_settings(&host);
    Ok(host)
}

/// `--host-root DIR`: a node's `/` mounted in this container (`/` too is taken at its word:
/// files read, found programs not run).
fn host_rooted(dir: &std::path::Path, env: Env) -> Result<Host, String> {
    if !dir.is_dir() {
        return Err(format!(
            "--host-root {}: not a folder (mount the node's / there, e.g. a read-only hostPath at /host)",
            dir.display()
        ));
    }
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("--host-root {}: {e}", dir.display()))?;
    Ok(Host::host_rooted(dir, env, crate::host::DEFAULT_TIMEOUT))
}

/// `-v`: which settings were read and from where.
fn say_settings(host: &Host) {
    if crate::term::level() < 1 {
        return;
    }
    match &host.config.path {
        Some(path) => crate::term::verbose(&format!("config file {}", path.display())),
        None => crate::term::verbose("no config file"),
    }
    for (key, origin) in &host.config.origins {
        crate::term::verbose(&format!("  {key} from {origin}"));
    }
    crate::term::verbose(&format!(
        "each command may run {} s",
        host.timeout.as_secs_f64()
    ));
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
                .map(|d| format!(" ({})", crate::present::sanitize::clean(d)))
                .unwrap_or_default()
        ));
    }
}

/// When the report is made: now, or under `--root` the fixed `SOURCE_DATE_EPOCH` if any.
fn generated_at(host: &Host) -> Option<String> {
    let secs = if host.is_rooted() {
        host.env
            .non_empty("SOURCE_DATE_EPOCH")?
            .trim()
            .parse()
            .ok()?
    } else {
        u64::try_from(jiff::Timestamp::now().as_second()).ok()?
    };
    crate::update::date::utc_timestamp(secs)
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
    report.generated_at = generated_at(host);
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

/// [`examine_guarded_with`] for a face: a bug becomes its message and exit 3; the manifest
/// warning and (with `-v`) the scan go to stderr.
///
/// # Errors
/// The exit code, when examining panicked.
pub fn report_or_exit(host: &Host, deep: Option<&crate::deep::Options>) -> Result<Report, u8> {
    let report = examine_guarded_with(host, deep).map_err(|message| {
        crate::term::error(&format!(
            "internal error while examining the machine: {message}\n\
             This is a bug in gpu-doctor; please report it with the output of `gpu-doctor doctor --json`."
        ));
        exit::FAILED
    })?;
    if let Some(warning) = &report.manifests.warning {
        crate::term::warn(warning);
    }
    say_scan(&report);
    Ok(report)
}

/// Runs the CLI and returns the exit code.
#[must_use]
pub fn run(cli: &Cli) -> u8 {
    crate::term::set_level(cli.verbose, cli.quiet);
    // No subcommand: the interactive app on a terminal, the text report anywhere else (a pipe,
    // a CI log), so scripts that ran plain `gpu-doctor` keep their output.
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let default = if interactive && !dumb_terminal() {
        Command::Tui
    } else {
        Command::Doctor(text_report())
    };
    let command = cli.command.as_ref().unwrap_or(&default);
    // What needs neither the machine nor the settings.
    match command {
        Command::Schema => return emit(&crate::schema::render()),
        Command::Completions { shell } => return emit(&crate::cli_docs::completions(*shell)),
        Command::Man { out } => return crate::cli_docs::write_man_pages(out),
        _ => {}
    }
    let host = match host_for(cli) {
        Ok(host) => host,
        Err(message) => {
            crate::term::error(&message);
            return exit::USAGE;
        }
    };
    let color = |terminal: bool| {
        crate::present::paint::enabled(cli.color, &host.env, host.config.color, terminal)
    };
    let paint = Paint::new(color(std::io::stdout().is_terminal()));
    match command {
        Command::Doctor(args) => doctor(&host, args, paint),
        Command::Check {
            require,
            fail_on,
            env,
            format,
            output,
        } => check(
            &host,
            require,
            fail_on.or(host.config.fail_on).unwrap_or(FailOn::Error),
            env.as_deref(),
            *format,
            output.as_deref(),
            paint,
        ),
        Command::Smoke(args) => crate::smoke::run(&host, args, paint),
        Command::Tui if dumb_terminal() => {
            crate::term::note(
                "TERM=dumb cannot draw the interactive app; printing the text report",
            );
            doctor(&host, &text_report(), paint)
        }
        Command::Tui => crate::tui::run(&host, color(true)),
        Command::Manifest { action } => crate::update::run(&host, action),
        Command::Estimate(args) => crate::guide::estimate(&host, args),
        Command::Advise(args) => crate::guide::advise(&host, args),
        Command::Report {
            action: ReportCommand::Merge(args),
        } => crate::fleet::run(args, paint),
        Command::Plan(args) if args.execute && host.host_root().is_some() => {
            crate::term::error(
                "plan --execute changes the machine it runs on, which under --host-root is this \
                 container, not the node: write the plan with -o and run it on the node",
            );
            exit::USAGE
        }
        Command::Plan(args) => crate::plan::run::run(&host, args),
        Command::Schema | Command::Completions { .. } | Command::Man { .. } => exit::OK,
    }
}

/// `doctor` with its defaults: the text report on stdout.
fn text_report() -> crate::cli::DoctorArgs {
    crate::cli::DoctorArgs {
        out: crate::cli::OutputArgs {
            format: ReportFormat::Text,
            json: false,
            output: None,
        },
        deep: false,
        deep_timeout: None,
    }
}

/// `TERM=dumb` (Emacs shells, some CI consoles): no cursor movement, so no full-screen app.
fn dumb_terminal() -> bool {
    std::env::var_os("TERM").is_some_and(|t| t == "dumb")
}

/// Exit 0, or 1 when the report has an error finding (what `check` does with its default
/// `--fail-on error`): the report was written either way.
fn doctor(host: &Host, args: &crate::cli::DoctorArgs, paint: Paint) -> u8 {
    let deep_timeout = args
        .deep_timeout
        .or(host.config.deep_timeout)
        .unwrap_or(crate::deep::DEFAULT_TIMEOUT_SECS);
    let deep = match args
        .deep
        .then(|| crate::deep::Options::new(deep_timeout, false))
        .transpose()
    {
        Ok(deep) => deep,
        Err(message) => {
            crate::term::error(&message);
            return exit::USAGE;
        }
    };
    if deep.is_some() && host.runs_found_programs() && std::io::stderr().is_terminal() {
        crate::term::note(&format!(
            "importing each Python framework (up to {deep_timeout} s)..."
        ));
    }
    let report = match report_or_exit(host, deep.as_ref()) {
        Ok(report) => report,
        Err(code) => return code,
    };
    let text = match args.out.format() {
        ReportFormat::Json => crate::present::json::render(&report),
        ReportFormat::Prometheus => crate::present::prometheus::render(&report),
        ReportFormat::Text if deep.is_some() => {
            crate::present::text::render_with(&report, paint)
                + &crate::deep::text::render(&report, false)
        }
        ReportFormat::Text => crate::present::text::render_with(&report, paint),
    };
    match deliver(&text, args.out.output.as_deref()) {
        exit::OK
            if report
                .findings
                .iter()
                .any(|f| f.severity == crate::report::Severity::Error) =>
        {
            exit::PROBLEM
        }
        code => code,
    }
}

fn check(
    host: &Host,
    require: &[String],
    fail_on: crate::check::FailOn,
    env: Option<&str>,
    format: crate::check::render::Format,
    output: Option<&std::path::Path>,
    paint: Paint,
) -> u8 {
    let mut requirements = Vec::new();
    for text in require {
        match crate::check::expr::parse(text) {
            Ok(r) => requirements.push(r),
            Err(e) => {
                crate::term::error(&e.to_string());
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
        crate::term::error(&format!(
            "--env {env}: no Python environment with that prefix was found"
        ));
        return exit::USAGE;
    }
    let verdict = crate::check::verdict(&report, &requirements, fail_on, env);
    let text = crate::check::render::render(&verdict, format);
    if let Some(path) = output
        && let Err(e) = crate::outfile::replace(path, &text)
    {
        crate::term::error(&e);
        return exit::FAILED;
    }
    match emit(&crate::check::render::render_with(&verdict, format, paint)) {
        exit::OK if verdict.pass => exit::OK,
        exit::OK => exit::PROBLEM,
        code => code,
    }
}

/// Writes to stdout; a closed pipe (`| head`) is success, as in ripgrep and uv.
pub fn emit_text(text: &str) -> u8 {
    emit(text)
}

/// Writes `text` to `output` (replaced atomically) or, without one, to stdout.
pub fn deliver(text: &str, output: Option<&std::path::Path>) -> u8 {
    match output {
        None => emit(text),
        Some(path) => match crate::outfile::replace(path, text) {
            Ok(()) => {
                crate::term::verbose(&format!("wrote {}", path.display()));
                exit::OK
            }
            Err(e) => {
                crate::term::error(&e);
                exit::FAILED
            }
        },
    }
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
            crate::term::error(&format!("cannot write the report: {e}"));
            exit::FAILED
        }
    }
}

//! `gpu-doctor smoke`: the report with the smoke test's results. Exit 0 pass, 1 fail (a check
//! failed, a GPU has an error finding, or with `--frameworks` a framework failed), 2 usage
//! error, 3 the test could not run.

use std::io::IsTerminal;

use super::settings::Settings;
use crate::cli::ReportFormat;
use crate::cli::smoke::SmokeArgs;
use crate::exit::{CliError, CliResult, ExitStatus};
use crate::sanitize::clean;

pub(super) fn run(settings: &Settings, args: &SmokeArgs) -> CliResult {
    let format = args.out.format();
    let devices = match args.device.trim() {
        "all" => None,
        one => Some(vec![one.parse::<u32>().map_err(|_| {
            CliError::usage(format!("--device takes a GPU index or `all`, not {one:?}"))
        })?]),
    };
    let deep = settings.deep(
        args.frameworks,
        args.deep_timeout,
        crate::deep::SMOKE_TIMEOUT_SECS,
        true,
    )?;
    let host = &settings.host;
    // The GPU test needs nothing from the scan unless it benchmarks cuBLASLt, so it runs beside
    // the examination (issue 29: the command takes the longer of the two, not their sum).
    let early_child = crate::smoke::can_start_early(host, args.bench, deep.is_some());
    if early_child {
        say_testing(host, args.bench);
    }
    let (report, early) = std::thread::scope(|s| {
        let child = early_child.then(|| {
            let devices = devices.clone();
            s.spawn(move || crate::smoke::run_early(host, devices))
        });
        let report = super::examined(settings, deep.as_ref());
        (report, child.and_then(|c| c.join().ok()))
    });
    let mut report = report?;
    if !early_child {
        say_testing(host, args.bench);
    }
    let run = crate::smoke::test_with(
        host,
        &mut report,
        settings.manifests.manifests(),
        devices,
        args.bench,
        early,
    );
    let status = if run.status == crate::report::smoke::SmokeStatus::CouldNotRun {
        ExitStatus::Failure
    } else {
        let framework_failed = deep.is_some() && crate::deep::any_failure(&report);
        ExitStatus::problem_if(!crate::smoke::passed(&run, &report) || framework_failed)
    };
    if let (Some(e), true) = (&run.error, format != ReportFormat::Text) {
        // The text face shows it; with --json or metrics, stdout is for machines.
        crate::term::error(&format!("smoke: could not run: {}", clean(e)));
    }
    report.smoke = Some(run);
    let paint = settings.paint();
    let text = match format {
        ReportFormat::Json => crate::present::json::render(&report),
        ReportFormat::Prometheus => crate::present::prometheus::render(&report),
        ReportFormat::Text if deep.is_some() => {
            crate::smoke::render_text(&report, paint) + &crate::deep::text::render(&report, true)
        }
        ReportFormat::Text => crate::smoke::render_text(&report, paint),
    };
    crate::output::deliver(&text, args.out.output.as_deref())?;
    Ok(status)
}

fn say_testing(host: &crate::host::Host, bench: bool) {
    if host.live() && std::io::stderr().is_terminal() {
        crate::term::note(&format!(
            "smoke: testing the GPU{}...",
            if bench { " (with benchmarks)" } else { "" }
        ));
    }
}

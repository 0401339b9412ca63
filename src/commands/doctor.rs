//! `gpu-doctor doctor`: the report, as text, JSON or Prometheus metrics.
//!
//! Exit 0, or 1 when the report has an error finding (what `check` does with its default
//! `--fail-on error`): the report was written either way.

use std::io::IsTerminal;

use super::settings::Settings;
use crate::cli::{DoctorArgs, OutputArgs, ReportFormat};
use crate::exit::{CliResult, ExitStatus};

/// `doctor` with its defaults: the text report on stdout.
pub(super) fn text_report() -> DoctorArgs {
    DoctorArgs {
        out: OutputArgs {
            format: ReportFormat::Text,
            json: false,
            output: None,
        },
        deep: false,
        deep_timeout: None,
    }
}

pub(super) fn run(settings: &Settings, args: &DoctorArgs) -> CliResult {
    let deep = settings.deep(
        args.deep,
        args.deep_timeout,
        crate::deep::DEFAULT_TIMEOUT_SECS,
        false,
    )?;
    let host = &settings.host;
    if let Some(deep) = &deep
        && host.runs_found_programs()
        && std::io::stderr().is_terminal()
    {
        crate::term::note(&format!(
            "importing each Python framework (up to {} s)...",
            deep.timeout.as_secs_f64()
        ));
    }
    let report = super::examined(settings, deep.as_ref())?;
    let paint = settings.paint();
    let text = match args.out.format() {
        ReportFormat::Json => crate::present::json::render(&report),
        ReportFormat::Prometheus => crate::present::prometheus::render(&report),
        ReportFormat::Text if deep.is_some() => {
            crate::present::text::render_with(&report, paint)
                + &crate::deep::text::render(&report, false)
        }
        ReportFormat::Text => crate::present::text::render_with(&report, paint),
    };
    crate::output::deliver(&text, args.out.output.as_deref())?;
    Ok(ExitStatus::problem_if(super::has_error(&report)))
}

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
    let layout = text_layout(args.out.output.is_some());
    let text = match args.out.format() {
        ReportFormat::Json => crate::present::json::render(&report),
        ReportFormat::Prometheus => crate::present::prometheus::render(&report),
        ReportFormat::Text if deep.is_some() => {
            crate::present::text::render_with(&report, paint, layout)
                + &crate::deep::text::render(&report, false)
        }
        ReportFormat::Text => crate::present::text::render_with(&report, paint, layout),
    };
    crate::output::deliver(&text, args.out.output.as_deref())?;
    Ok(ExitStatus::problem_if(super::has_error(&report)))
}

/// The text report's layout, decided once from the terminal: every detail with `-v` (or into a
/// file: `-o` keeps the whole report), else what a person needs first; wrapped to the
/// terminal's width on a terminal, to `COLUMNS` when that is set, else not at all (a file or a
/// pipe keeps its lines whole).
fn text_layout(to_file: bool) -> crate::present::text::Layout {
    let width = if to_file {
        None
    } else if std::io::stdout().is_terminal() {
        crossterm::terminal::size()
            .ok()
            .map(|(columns, _)| usize::from(columns))
            .filter(|&c| c > 0)
    } else {
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|&c| c > 0)
    };
    crate::present::text::Layout {
        detail: to_file || crate::term::level() >= 1,
        width,
    }
}

//! `gpu-doctor report merge`: exit 0 when every node read is healthy; 1 when a node has an error
//! finding or a failed smoke test, or shows fewer GPUs of a model than most of its peers
//! (unless `--allow-missing-gpus`); 3 when no report could be read or the output could not be
//! written. Stack drift, duplicates, skipped files and slow GPUs are reported but do not fail.

use super::settings::Settings;
use crate::cli::{MergeArgs, MergeFormat};
use crate::exit::{CliError, CliResult, ExitStatus};
use crate::fleet::load::SkipKind;
use crate::fleet::summary::Fleet;
use crate::fleet::{load, render, summary};
use crate::sanitize::clean;

pub(super) fn merge(settings: &Settings, args: &MergeArgs) -> CliResult {
    // The same budget a scan gets: `--timeout` and its slack.
    let end = std::time::Instant::now() + settings.host.timeout + crate::host::budget::SLACK;
    let inputs = load::load(&args.paths, end);
    for note in &inputs.passed_over {
        crate::term::note(&format!("{}; see `report merge --help`", clean(note)));
    }
    for s in &inputs.skipped {
        let text = format!("{}: {}", clean(&s.file), clean(&s.reason));
        if s.kind == SkipKind::NewerSchema {
            crate::term::error(&format!("refusing {text}"));
        } else {
            crate::term::warn(&format!("skipping {text}"));
        }
    }
    crate::term::verbose(&format!(
        "read {} of {} reports",
        inputs.reports.len(),
        inputs.reports.len() + inputs.skipped.len()
    ));
    let fleet = summary::summarize(&inputs);
    for d in &fleet.duplicates {
        crate::term::note(&format!(
            "{}: two reports; using {}, dropped {} ({})",
            clean(&d.node),
            clean(&d.kept),
            clean(&d.dropped),
            clean(&d.reason)
        ));
    }
    let text = match args.format() {
        MergeFormat::Text => render::text(&fleet, settings.paint()),
        MergeFormat::Json => render::json(&fleet),
        MergeFormat::Markdown => render::markdown(&fleet),
    };
    crate::output::deliver(&text, args.output.as_deref())?;
    verdict(&fleet, args.allow_missing_gpus)
}

/// The status for a summary that was delivered. A GPU lost from a node is the most expensive
/// fault a GPU node has and no single report can show it, so a node below its model's usual
/// count fails the run like a sick node, unless `allow_missing_gpus`.
fn verdict(fleet: &Fleet, allow_missing_gpus: bool) -> CliResult {
    if fleet.counts.nodes == 0 {
        return Err(CliError::failure("no report could be read"));
    }
    let missing = !allow_missing_gpus && !fleet.fewer_gpus.is_empty();
    if missing {
        let names: Vec<String> = fleet
            .fewer_gpus
            .iter()
            .map(|g| {
                format!(
                    "{} ({} of {} × {})",
                    clean(&g.node),
                    g.count,
                    g.usual,
                    clean(&g.gpu)
                )
            })
            .collect();
        return Err(CliError::problem(format!(
            "fewer GPUs than their peers: {}; --allow-missing-gpus accepts this",
            names.join(", ")
        )));
    }
    Ok(ExitStatus::problem_if(!fleet.healthy))
}

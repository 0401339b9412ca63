//! `gpu-doctor estimate` and `advise`: exit 0 with the answer, 2 for a combination they cannot
//! estimate (refused before the machine is examined).

use super::settings::Settings;
use crate::cli::guide::{AdviseArgs, EstimateArgs};
use crate::exit::{CliError, CliResult, ExitStatus};
use crate::guide::memory::{Shape, Workload};
use crate::output::{emit, emit_json};
use crate::report::Report;

/// The workload `estimate`'s arguments describe.
fn workload(args: &EstimateArgs) -> Workload {
    Workload {
        params: args.params,
        mode: crate::guide::mode(args.infer),
        precision: args.precision,
        optimizer: args.optimizer,
        batch: args.batch,
        seq_len: args.seq_len,
        shape: match (args.layers, args.hidden) {
            (Some(layers), Some(hidden)) => Some(Shape {
                layers,
                hidden,
                heads: args.heads,
                kv_heads: args.kv_heads,
            }),
            _ => None,
        },
        checkpointing: args.checkpointing,
        zero: args.zero,
        gpus: args.gpus,
    }
}

/// This machine's report for the guidance, or an empty one (with a note on stderr) when
/// examining it failed: the estimate and the table do not depend on it.
fn machine_report(settings: &Settings) -> Report {
    match crate::examine::examine_guarded(&settings.host, &settings.manifests) {
        Ok(report) => report,
        Err(message) => {
            crate::term::error(&format!(
                "could not examine this machine ({message}); showing the table only"
            ));
            Report::default()
        }
    }
}

pub(super) fn estimate(settings: &Settings, args: &EstimateArgs) -> CliResult {
    let w = workload(args);
    // Refuse bad combinations before examining the machine.
    crate::guide::memory::estimate(&w).map_err(CliError::usage)?;
    let report = machine_report(settings);
    let out = crate::guide::estimate_for(&w, &report, settings.manifests.manifests())
        .map_err(CliError::usage)?;
    if args.json {
        emit_json(&out)?;
    } else {
        emit(&crate::guide::render::estimate(&out))?;
    }
    Ok(ExitStatus::Success)
}

pub(super) fn advise(settings: &Settings, args: &AdviseArgs) -> CliResult {
    let run = |report: &Report| {
        crate::guide::advise::advise(
            report,
            settings.manifests.manifests(),
            crate::guide::mode(args.infer),
            args.params,
            args.precision,
            args.budget.map(crate::cli::guide::Budget::segment),
        )
    };
    run(&Report::default()).map_err(CliError::usage)?;
    let advice = run(&machine_report(settings)).map_err(CliError::usage)?;
    if args.json {
        emit_json(&advice)?;
    } else {
        emit(&crate::guide::render::advise(&advice))?;
    }
    Ok(ExitStatus::Success)
}

//! `gpu-doctor report merge`: many nodes' reports (`doctor --json`, `smoke --json`) into one
//! fleet summary. [`load`] reads the files and checks their schema version; [`summary`] groups
//! the nodes by stack and finds the odd ones out and the nodes that need attention;
//! [`spread`] compares smoke throughput per GPU model; [`render`] prints it. Only [`load`]
//! touches the filesystem, and only to read; output goes through [`crate::app::deliver`].

pub mod gpus;
pub mod hostlist;
pub mod load;
pub mod render;
pub mod spread;
pub mod summary;
pub mod view;

use crate::app::exit;
use crate::cli::{MergeArgs, MergeFormat};
use crate::present::paint::Paint;
use crate::present::sanitize::clean;

use load::SkipKind;
use summary::Fleet;

/// Runs `report merge`: 0 every node read is healthy, 1 a node has an error finding or a
/// failed smoke test, or shows fewer GPUs of a model than most of its peers (unless
/// `--allow-missing-gpus`), 3 no report could be read (or the output could not be written).
/// Stack drift, duplicates, skipped files and slow GPUs are reported but do not fail.
#[must_use]
pub fn run(args: &MergeArgs, paint: Paint) -> u8 {
    let inputs = load::load(&args.paths);
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
        MergeFormat::Text => render::text(&fleet, paint),
        MergeFormat::Json => render::json(&fleet),
        MergeFormat::Markdown => render::markdown(&fleet),
    };
    let delivered = crate::app::deliver(&text, args.output.as_deref());
    if delivered != exit::OK {
        return delivered;
    }
    verdict(&fleet, args.allow_missing_gpus)
}

/// The exit code for a summary that was delivered. A GPU lost from a node is the most
/// expensive fault a GPU node has and no single report can show it, so a node below its
/// model's usual count fails the run like a sick node, unless `allow_missing_gpus`.
#[must_use]
pub fn verdict(fleet: &Fleet, allow_missing_gpus: bool) -> u8 {
    if fleet.counts.nodes == 0 {
        crate::term::error("no report could be read");
        return exit::FAILED;
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
        crate::term::error(&format!(
            "fewer GPUs than their peers: {}; --allow-missing-gpus accepts this",
            names.join(", ")
        ));
    }
    if fleet.healthy && !missing {
        exit::OK
    } else {
        exit::PROBLEM
    }
}

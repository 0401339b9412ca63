//! Built-in guidance: will a model fit (`estimate`), which card to use (`advise`).
//!
//! The arithmetic lives in pure modules ([`memory`], [`fit`], [`mod@advise`]) that take numbers,
//! the [`crate::report::Report`] and the manifests; `crate::commands::guide` turns the command
//! line into their inputs, examines the machine once, and prints text or JSON. Every
//! figure comes from `manifests/gpus.toml`, a published formula, or a rule of thumb that the
//! output labels as one.

pub(crate) mod advise;
pub(crate) mod fit;
pub(crate) mod memory;
pub(crate) mod precision;
pub(crate) mod quantity;
pub(crate) mod render;

use serde::Serialize;

use crate::manifest::Manifests;
use crate::report::Report;
use memory::{Estimate, Mode, Workload};

/// How many of the table's GPUs `estimate` lists as the smallest that fit.
const SMALLEST_LISTED: usize = 5;

/// What `estimate --json` prints: the estimate, and how it fits this machine and the table.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct EstimateOutput {
    #[serde(flatten)]
    pub estimate: Estimate,
    pub machine: fit::MachineFit,
    /// The smallest GPUs of `gpus.toml` that hold one GPU's share, smallest first.
    pub smallest_listed: Vec<fit::Fit>,
    /// When no listed GPU holds it alone: how many of the largest would (rough).
    pub spread: Option<fit::Spread>,
}

/// `--infer` means inference; `--train` or neither means training, the larger figure (clap
/// refuses both at once, so `--train` only needs to exist).
#[must_use]
pub(crate) fn mode(infer: bool) -> Mode {
    if infer { Mode::Infer } else { Mode::Train }
}

/// The estimate for `w`, fitted to `report`'s GPUs and the GPU table of `manifests` (the run's
/// set). Pure.
///
/// # Errors
/// The estimate's refusals (see [`memory::estimate`]).
pub(crate) fn estimate_for(
    w: &Workload,
    report: &Report,
    manifests: &Manifests,
) -> Result<EstimateOutput, String> {
    let estimate = memory::estimate(w)?;
    let need = estimate.total_bytes;
    Ok(EstimateOutput {
        machine: fit::machine(report, need),
        smallest_listed: fit::smallest_listed(&manifests.gpus, need, SMALLEST_LISTED),
        spread: fit::spread(&estimate, &manifests.gpus),
        estimate,
    })
}

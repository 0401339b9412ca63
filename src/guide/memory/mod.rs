//! How much GPU memory a model needs: weights, gradients, optimizer states, activations or KV
//! cache, and the CUDA context, each with the formula that gives it. Pure arithmetic, no I/O.
//!
//! Where each number comes from:
//! * Model state (weights, gradients, FP32 master weights, optimizer states): bytes per
//!   parameter of each format. Mixed-precision Adam needs 2 + 2 + 12 = 16 bytes per parameter
//!   (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
//!   Models", §3.1), and ZeRO stage 1 / 2 / 3 divide the optimizer states / + gradients / +
//!   weights by the number of GPUs (same paper, §5).
//! * Activations: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
//!   Transformer Models", §4: `s·b·h·(34 + 5·a·s/h)` bytes per transformer layer for 16-bit
//!   training without tensor or sequence parallelism; `34·s·b·h` when the attention scores are
//!   not stored (their selective recomputation, which FlashAttention-style kernels also give);
//!   `2·s·b·h` per layer with full recomputation (only each layer's input is kept).
//! * KV cache: `2 (K and V) × layers × KV width × sequence × batch × bytes`.
//! * The CUDA context: a rule of thumb, labelled so; see [`CONTEXT_BYTES`].
//!
//! One file per part: [`workload`] (what is to run, and whether the formulas cover it),
//! [`mod@breakdown`] (the items and their formulas), [`mod@simple_rule`] (the rule guides quote, read
//! beside the breakdown); this file puts them together into an [`Estimate`].

mod breakdown;
mod simple_rule;
#[cfg(test)]
mod tests;
mod workload;

use serde::Serialize;

use crate::guide::quantity::MIB;

use breakdown::Breakdown;
pub(crate) use simple_rule::SimpleRule;
use simple_rule::simple_rule;
use workload::check;
pub(crate) use workload::{Mode, Optimizer, Shape, Workload};

/// Memory the CUDA context, the math libraries' workspaces and the framework take before the
/// first tensor: 512 MiB. A rule of thumb, not a measurement: it depends on the GPU, the CUDA
/// version (lazy module loading since CUDA 11.7 shrank it), cuBLAS/cuDNN workspaces and the
/// framework, and a few hundred MiB to a few GiB are all seen in practice. `nvidia-smi` right
/// after `torch.cuda.init()` shows the real figure for a machine.
pub(crate) const CONTEXT_BYTES: u64 = 512 * MIB;

/// How far a number can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Basis {
    /// Sizes times counts: exact for the stated formats.
    Arithmetic,
    /// A published formula for a standard transformer.
    Published,
    /// A rule of thumb; the real figure varies by machine and framework.
    RuleOfThumb,
}

/// One line of the breakdown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Item {
    /// Stable key: `weights`, `gradients`, `master_weights`, `optimizer_states`,
    /// `activations`, `kv_cache`, `cuda_context`.
    pub id: &'static str,
    pub label: String,
    /// Per GPU.
    pub bytes: u64,
    /// How the bytes were computed, with the numbers filled in.
    pub formula: String,
    pub basis: Basis,
}

/// The memory of one replica before partitioning, for callers that spread it themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Parts {
    /// Weights, gradients, master weights and optimizer states, on one GPU without ZeRO.
    pub model_state: u64,
    /// Weights alone.
    pub weights: u64,
    pub activations: Option<u64>,
    pub kv_cache: Option<u64>,
    pub context: u64,
}

/// The estimate: the breakdown per GPU, its total, the simple rule beside it, and what is left
/// out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Estimate {
    pub workload: Workload,
    pub items: Vec<Item>,
    /// Per GPU.
    pub total_bytes: u64,
    pub parts: Parts,
    pub simple_rule: SimpleRule,
    /// What the total leaves out, and why.
    pub not_counted: Vec<String>,
}

/// Estimates the memory `w` needs on each GPU.
///
/// # Errors
/// Combinations the formulas do not cover, in words for the user: training in FP8, INT8 or
/// INT4, ZeRO or checkpointing for inference, ZeRO on one GPU, more KV heads than heads.
pub(crate) fn estimate(w: &Workload) -> Result<Estimate, String> {
    check(w)?;
    let mut b = Breakdown {
        w,
        items: Vec::new(),
        not_counted: Vec::new(),
        model_state: 0,
    };
    let weights = b.weights()?;
    let activations = if w.mode == Mode::Train {
        b.training_state()?;
        b.activations()?
    } else {
        b.not_counted.push(
            "the working memory of one forward pass: freed layer by layer in inference, it grows \
             with batch × prompt length while a prompt is read (prefill)."
                .into(),
        );
        None
    };
    let kv_cache = if w.mode == Mode::Infer {
        b.kv_cache()?
    } else {
        None
    };
    b.context_and_the_rest();
    let Breakdown {
        items,
        not_counted,
        model_state,
        ..
    } = b;
    let total_bytes = items
        .iter()
        .try_fold(0_u64, |sum, item| sum.checked_add(item.bytes))
        .ok_or_else(too_large)?;
    let parts = Parts {
        model_state,
        weights,
        activations,
        kv_cache,
        context: CONTEXT_BYTES,
    };
    let simple_rule = simple_rule(w, &parts)?;
    Ok(Estimate {
        workload: *w,
        items,
        total_bytes,
        parts,
        simple_rule,
        not_counted,
    })
}

/// Decimal gigabytes, as the rule is usually worked by hand ("5.44 GB").
fn gb(bytes: u64) -> String {
    #[expect(
        clippy::cast_precision_loss,
        reason = "display only: two decimals of GB"
    )]
    let value = bytes as f64 / 1e9;
    format!("{value:.2} GB")
}

/// The product of `factors`, or an error when it does not fit in 64 bits.
fn mul(factors: &[u64]) -> Result<u64, String> {
    factors
        .iter()
        .try_fold(1_u64, |acc, f| acc.checked_mul(*f))
        .ok_or_else(too_large)
}

fn too_large() -> String {
    "the numbers are too large to add up (over 16 EiB)".into()
}

//! The "params × 2 + activations × 4 + optimizer × 2" rule guides quote, read term by term
//! beside the breakdown, with why the two differ.

use serde::Serialize;

use crate::guide::precision::Precision;
use crate::guide::quantity::{MIB, grouped, short_params};

use super::workload::{Mode, Workload, optimizer_name, optimizer_state};
use super::{CONTEXT_BYTES, Parts, gb, mul, too_large};

/// The "params × 2 + activations × 4 + optimizer × 2" rule quoted in guides, read term by term.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct SimpleRule {
    pub rule: &'static str,
    /// How the rule's terms are read here, with the numbers.
    pub reading: String,
    pub bytes: u64,
    /// Why the rule and the breakdown differ, one reason a line.
    pub differences: Vec<String>,
}

/// The rule quoted in guides, "params × 2 + activations × 4 + optimizer × 2", read as: the
/// weights in 16-bit (params × 2 bytes); Adam's two states at the size of those weights
/// (optimizer × 2 = 2 × params × 2 bytes); the activations as FP32 values (× 4 bytes each,
/// where the breakdown's activation bytes count 2 bytes a value). For inference only the first
/// term is left. It is shown because people compare against it, and the differences explain
/// where the breakdown's extra memory goes.
pub(super) fn simple_rule(w: &Workload, parts: &Parts) -> Result<SimpleRule, String> {
    match w.mode {
        Mode::Infer => inference_rule(w, parts),
        Mode::Train => training_rule(w, parts),
    }
}

/// For inference the rule is its first term, the weights in 16-bit.
fn inference_rule(w: &Workload, parts: &Parts) -> Result<SimpleRule, String> {
    let p = w.params;
    let weights16 = mul(&[p, 2])?;
    let mut differences = Vec::new();
    differences.push(format!(
        "The rule counts 16-bit weights only: {} for {} parameters.",
        gb(weights16),
        short_params(p)
    ));
    if w.precision.weight_bits() != 16 {
        differences.push(format!(
            "{} weights take {}/8 bytes each: {} here.",
            w.precision.label(),
            w.precision.weight_bits(),
            gb(parts.weights)
        ));
    }
    if let Some(kv) = parts.kv_cache {
        differences.push(format!(
            "The KV cache ({}) grows with sequence length and batch; the rule has no term \
             for it.",
            gb(kv)
        ));
    }
    differences.push(context_difference());
    Ok(SimpleRule {
        rule: "params × 2",
        reading: format!("{} × 2 bytes = {}", grouped(p), gb(weights16)),
        bytes: weights16,
        differences,
    })
}

/// For training, all three terms; the differences say where the breakdown's model state and
/// activations part from the rule's.
fn training_rule(w: &Workload, parts: &Parts) -> Result<SimpleRule, String> {
    let p = w.params;
    let weights16 = mul(&[p, 2])?;
    let mut differences = Vec::new();
    let optimizer = mul(&[weights16, 2])?;
    let activations = match parts.activations {
        Some(a) => Some(mul(&[a, 2])?),
        None => None,
    };
    let bytes = weights16
        .checked_add(optimizer)
        .and_then(|sum| sum.checked_add(activations.unwrap_or(0)))
        .ok_or_else(too_large)?;
    let per_param = parts.model_state / p;
    differences.push(format!(
        "Model state: the rule keeps 16-bit weights and two 16-bit optimizer states, 6 bytes \
         per parameter ({} for {} parameters). The breakdown keeps {} bytes per parameter ({}): {}.",
        gb(mul(&[p, 6])?),
        short_params(p),
        per_param,
        gb(parts.model_state),
        state_recipe(w)
    ));
    match parts.activations {
        Some(a) => differences.push(format!(
            "Activations: the rule counts each stored value at 4 bytes (FP32), {}; the breakdown \
             takes Korthikanti et al.'s 16-bit count, {}{}.",
            gb(mul(&[a, 2])?),
            gb(a),
            if w.precision == Precision::Fp32 {
                " (already doubled for FP32 training, so here the two agree)"
            } else {
                ", as mixed-precision training stores them"
            }
        )),
        None => differences.push(
            "Activations: left out of both (no --layers/--hidden/--seq-len), though they often \
             dominate at long sequences."
                .into(),
        ),
    }
    if w.zero > 0 {
        differences.push(format!(
            "The rule assumes one GPU holds everything; ZeRO-{} here divides part of the model \
             state by {} GPUs.",
            w.zero, w.gpus
        ));
    }
    differences.push(context_difference());
    let reading = match (parts.activations, activations) {
        (Some(a), Some(a4)) => format!(
            "params {} × 2 bytes = {}; optimizer 2 × {} = {}; activations {} in 16-bit, at 4 bytes \
             a value = {}; total {}",
            grouped(p),
            gb(weights16),
            gb(weights16),
            gb(optimizer),
            gb(a),
            gb(a4),
            gb(bytes)
        ),
        _ => format!(
            "params {} × 2 bytes = {}; optimizer 2 × {} = {}; total {} (no activation term \
             without the model's shape)",
            grouped(p),
            gb(weights16),
            gb(weights16),
            gb(optimizer),
            gb(bytes)
        ),
    };
    Ok(SimpleRule {
        rule: "params × 2 + activations × 4 + optimizer × 2",
        reading,
        bytes,
        differences,
    })
}

/// What the breakdown's bytes per parameter are made of.
fn state_recipe(w: &Workload) -> String {
    let (opt, _) = optimizer_state(w.optimizer);
    let name = optimizer_name(w.optimizer);
    if w.precision == Precision::Fp32 {
        format!("FP32 weights (4) + FP32 gradients (4) + {name} states ({opt})")
    } else {
        format!(
            "{} weights (2) + {} gradients (2) + FP32 master weights (4) + {name} states ({opt}), \
             the mixed-precision recipe of the ZeRO paper (Rajbhandari et al. 2020, §3.1)",
            w.precision.label(),
            w.precision.label()
        )
    }
}

fn context_difference() -> String {
    format!(
        "The rule has no term for the CUDA context ({} MiB here, a rule of thumb).",
        CONTEXT_BYTES / MIB
    )
}

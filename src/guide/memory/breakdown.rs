//! The breakdown of an estimate, item by item: model state (weights, gradients, master weights,
//! optimizer states), activations or the KV cache, the CUDA context, each with its formula.

use crate::guide::precision::Precision;
use crate::guide::quantity::{MIB, grouped};

use super::workload::{Mode, Optimizer, Workload, missing_shape, optimizer_name, optimizer_state};
use super::{Basis, CONTEXT_BYTES, Item, mul, too_large};

/// The paper the activation formulas come from.
const KORTHIKANTI: &str =
    "Korthikanti et al. 2022, \"Reducing Activation Recomputation in Large Transformer Models\"";

/// The estimate's lines as they are added, in the order they are shown, with what the
/// formulas leave out.
pub(super) struct Breakdown<'w> {
    pub(super) w: &'w Workload,
    pub(super) items: Vec<Item>,
    pub(super) not_counted: Vec<String>,
    /// Weights, gradients, master weights and optimizer states, before any ZeRO split.
    pub(super) model_state: u64,
}

impl Breakdown<'_> {
    /// A model-state part on one GPU: divided by the GPU count when ZeRO's `stage` shards it.
    fn split(&self, bytes: u64, stage: u8) -> (u64, String) {
        let (zero, n) = (self.w.zero, self.w.gpus);
        if zero >= stage {
            (bytes.div_ceil(n), format!(" ÷ {n} GPUs (ZeRO-{zero})"))
        } else {
            (bytes, String::new())
        }
    }

    /// The weights at their precision (ZeRO-3 shards them); returns their whole size.
    pub(super) fn weights(&mut self) -> Result<u64, String> {
        let w = self.w;
        let wbits = w.precision.weight_bits();
        let weights = mul(&[w.params, wbits])? / 8;
        self.model_state += weights;
        let pc = grouped(w.params);
        let weight_formula = if wbits.is_multiple_of(8) {
            format!("{pc} × {} bytes ({})", wbits / 8, w.precision.label())
        } else {
            format!("{pc} × {wbits}/8 bytes ({})", w.precision.label())
        };
        let (bytes, how) = self.split(weights, 3);
        self.items.push(Item {
            id: "weights",
            label: "weights".into(),
            bytes,
            formula: format!("{weight_formula}{how}"),
            basis: Basis::Arithmetic,
        });
        Ok(weights)
    }

    /// What training keeps beside the weights: gradients (ZeRO-2 shards them), FP32 master
    /// weights under mixed precision and the optimizer's states (ZeRO-1 shards both).
    pub(super) fn training_state(&mut self) -> Result<(), String> {
        let w = self.w;
        let (p, pc) = (w.params, grouped(w.params));
        let grad_bytes = w.precision.weight_bits() / 8;
        let grads = mul(&[p, grad_bytes])?;
        self.model_state += grads;
        let (bytes, how) = self.split(grads, 2);
        self.items.push(Item {
            id: "gradients",
            label: "gradients".into(),
            bytes,
            formula: format!("{pc} × {grad_bytes} bytes ({}){how}", w.precision.label()),
            basis: Basis::Arithmetic,
        });
        if w.precision != Precision::Fp32 {
            let master = mul(&[p, 4])?;
            self.model_state += master;
            let (bytes, how) = self.split(master, 1);
            self.items.push(Item {
                id: "master_weights",
                label: "FP32 master weights".into(),
                bytes,
                formula: format!("{pc} × 4 bytes (mixed precision updates an FP32 copy){how}"),
                basis: Basis::Arithmetic,
            });
        }
        let (per_param, what) = optimizer_state(w.optimizer);
        let states = mul(&[p, per_param])?;
        self.model_state += states;
        let (bytes, how) = self.split(states, 1);
        self.items.push(Item {
            id: "optimizer_states",
            label: format!("optimizer states ({})", optimizer_name(w.optimizer)),
            bytes,
            formula: format!("{pc} × {per_param} bytes ({what}){how}"),
            basis: Basis::Arithmetic,
        });
        if w.optimizer == Optimizer::Adafactor {
            self.not_counted.push(
                "Adafactor's factored second moments: one row and one column vector per weight \
                 matrix (Shazeer & Stern 2018), which needs each matrix's shape; far smaller \
                 than the weights."
                    .into(),
            );
        }
        Ok(())
    }

    /// Training's activations, when the model's shape is known.
    pub(super) fn activations(&mut self) -> Result<Option<u64>, String> {
        let item = training_activations(self.w)?;
        Ok(self.shaped(item, "activations"))
    }

    /// Inference's KV cache, when the model's shape is known.
    pub(super) fn kv_cache(&mut self) -> Result<Option<u64>, String> {
        let item = kv_cache(self.w)?;
        Ok(self.shaped(item, "the KV cache"))
    }

    /// Adds an item that needs the model's shape, or says that `what` is not counted.
    fn shaped(&mut self, item: Option<Item>, what: &str) -> Option<u64> {
        match item {
            Some(item) => {
                let bytes = item.bytes;
                self.items.push(item);
                Some(bytes)
            }
            None => {
                self.not_counted.push(missing_shape(what, self.w));
                None
            }
        }
    }

    /// The CUDA context (a rule of thumb), and what no formula here counts.
    pub(super) fn context_and_the_rest(&mut self) {
        self.items.push(Item {
            id: "cuda_context",
            label: "CUDA context, libraries, framework".into(),
            bytes: CONTEXT_BYTES,
            formula: format!(
                "rule of thumb: {} MiB for the CUDA context, cuBLAS/cuDNN workspaces and the \
                 framework (a few hundred MiB to a few GiB by GPU and CUDA version; measure with \
                 nvidia-smi after torch.cuda.init())",
                CONTEXT_BYTES / MIB
            ),
            basis: Basis::RuleOfThumb,
        });
        self.not_counted.push(match self.w.mode {
            Mode::Train => "allocator fragmentation and temporary buffers (the output logits, \
                            s × b × vocabulary values; workspaces of the backward pass)."
                .into(),
            Mode::Infer => "allocator fragmentation and temporary buffers (the output logits, \
                            b × vocabulary values per generated token)."
                .into(),
        });
        if self.w.mode == Mode::Infer {
            self.not_counted.push(
                "serving engines' reservations: vLLM takes 90% of GPU memory by default \
                 (gpu_memory_utilization) and fills what the model leaves with KV cache."
                    .into(),
            );
        }
    }
}

/// Korthikanti et al.'s activation memory for training, or `None` without the model's shape.
fn training_activations(w: &Workload) -> Result<Option<Item>, String> {
    let (Some(shape), Some(s)) = (w.shape, w.seq_len) else {
        return Ok(None);
    };
    let (l, h, b) = (shape.layers, shape.hidden, w.batch);
    let sbh = mul(&[s, b, h])?;
    let base = mul(&[34, sbh])?;
    let scores = match shape.heads {
        Some(a) => mul(&[5, a, s, s, b])?,
        None => 0,
    };
    let per_layer = base.checked_add(scores).ok_or_else(too_large)?;
    let layer_formula = match shape.heads {
        Some(a) => format!(
            "s·b·h·(34 + 5·a·s/h) = {s}·{b}·{h}·(34 + 5·{a}·{s}/{h}) = {} bytes per layer",
            grouped(per_layer)
        ),
        None => format!(
            "34·s·b·h = 34·{s}·{b}·{h} = {} bytes per layer (attention scores not stored: as with \
             FlashAttention; give --heads for the full formula)",
            grouped(per_layer)
        ),
    };
    let (mut bytes, mut formula) = if w.checkpointing {
        let kept = mul(&[l, 2, sbh])?;
        (
            kept.checked_add(per_layer).ok_or_else(too_large)?,
            format!(
                "full recomputation: {l} layers × 2·s·b·h = {} bytes (each layer's input), plus \
                 one layer rebuilt during its backward pass: {layer_formula}",
                grouped(kept)
            ),
        )
    } else {
        (
            mul(&[l, per_layer])?,
            format!("{l} layers × {layer_formula}"),
        )
    };
    formula.push_str(&format!(
        " [{KORTHIKANTI}, 16-bit activations, no tensor parallelism]"
    ));
    if w.precision == Precision::Fp32 {
        bytes = mul(&[bytes, 2])?;
        formula.push_str(
            "; × 2 for FP32 training (rough: the formula counts 16-bit values and 1-byte dropout masks)",
        );
    }
    Ok(Some(Item {
        id: "activations",
        label: if w.checkpointing {
            "activations (checkpointed)".into()
        } else {
            "activations".into()
        },
        bytes,
        formula,
        basis: if w.precision == Precision::Fp32 {
            Basis::RuleOfThumb
        } else {
            Basis::Published
        },
    }))
}

/// The KV cache for inference, or `None` without the model's shape.
///
/// Kept in the activations' format: FP32 for an FP32 model, else 16-bit, which is what
/// weight-only INT8/INT4 and FP8 checkpoints also use unless the engine is told to quantise
/// the cache.
fn kv_cache(w: &Workload) -> Result<Option<Item>, String> {
    let (Some(shape), Some(s)) = (w.shape, w.seq_len) else {
        return Ok(None);
    };
    let (l, h, b) = (shape.layers, shape.hidden, w.batch);
    let kv_bytes = if w.precision == Precision::Fp32 { 4 } else { 2 };
    let (bytes, width) = match (shape.heads, shape.kv_heads) {
        (Some(heads), Some(kv)) => (
            mul(&[2, l, h, kv, s, b, kv_bytes])?.div_ceil(heads),
            format!("{h}·{kv}/{heads} (grouped-query attention)"),
        ),
        _ => (mul(&[2, l, h, s, b, kv_bytes])?, h.to_string()),
    };
    Ok(Some(Item {
        id: "kv_cache",
        label: "KV cache".into(),
        bytes,
        formula: format!(
            "2 × layers × KV width × sequence × batch × bytes = 2 × {l} × {width} × {s} × {b} × \
             {kv_bytes} ({} KV cache)",
            if kv_bytes == 4 { "FP32" } else { "16-bit" }
        ),
        basis: Basis::Arithmetic,
    }))
}

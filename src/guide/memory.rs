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

use serde::Serialize;

use super::precision::Precision;
use super::quantity::{MIB, grouped, short_params};

/// Memory the CUDA context, the math libraries' workspaces and the framework take before the
/// first tensor: 512 MiB. A rule of thumb, not a measurement: it depends on the GPU, the CUDA
/// version (lazy module loading since CUDA 11.7 shrank it), cuBLAS/cuDNN workspaces and the
/// framework, and a few hundred MiB to a few GiB are all seen in practice. `nvidia-smi` right
/// after `torch.cuda.init()` shows the real figure for a machine.
pub(crate) const CONTEXT_BYTES: u64 = 512 * MIB;

/// Training or inference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Mode {
    Train,
    Infer,
}

/// The optimizer, which decides the states kept per parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum Optimizer {
    /// Adam / AdamW: first and second moments in FP32, 8 bytes per parameter.
    #[serde(rename = "adamw")]
    Adamw,
    /// SGD with momentum: one FP32 buffer, 4 bytes per parameter (plain SGD keeps none).
    #[serde(rename = "sgd")]
    Sgd,
    /// Adafactor: factored second moments, a row and a column vector per weight matrix.
    #[serde(rename = "adafactor")]
    Adafactor,
    /// bitsandbytes 8-bit Adam: both moments in 8 bits, 2 bytes per parameter.
    #[serde(rename = "8bit-adam")]
    EightBitAdam,
}

impl crate::choice::Choice for Optimizer {
    const ALL: &'static [Optimizer] = &[
        Optimizer::Adamw,
        Optimizer::Sgd,
        Optimizer::Adafactor,
        Optimizer::EightBitAdam,
    ];
    fn name(self) -> &'static str {
        match self {
            Optimizer::Adamw => "adamw",
            Optimizer::Sgd => "sgd",
            Optimizer::Adafactor => "adafactor",
            Optimizer::EightBitAdam => "8bit-adam",
        }
    }
    fn help(self) -> Option<&'static str> {
        Some(match self {
            Optimizer::Adamw => {
                "Adam / AdamW: first and second moments in FP32, 8 bytes per parameter"
            }
            Optimizer::Sgd => {
                "SGD with momentum: one FP32 buffer, 4 bytes per parameter (plain SGD keeps none)"
            }
            Optimizer::Adafactor => {
                "Adafactor: factored second moments, a row and a column vector per weight matrix"
            }
            Optimizer::EightBitAdam => {
                "bitsandbytes 8-bit Adam: both moments in 8 bits, 2 bytes per parameter"
            }
        })
    }
}

/// The transformer's shape, for activations and the KV cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Shape {
    pub layers: u64,
    pub hidden: u64,
    /// Attention heads; without them the attention-score term of the activations is left out.
    pub heads: Option<u64>,
    /// Key/value heads (grouped-query attention); the KV cache shrinks by `kv_heads / heads`.
    pub kv_heads: Option<u64>,
}

/// What is to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Workload {
    pub params: u64,
    pub mode: Mode,
    pub precision: Precision,
    pub optimizer: Optimizer,
    pub batch: u64,
    pub seq_len: Option<u64>,
    pub shape: Option<Shape>,
    pub checkpointing: bool,
    /// ZeRO stage, 0 to 3.
    pub zero: u8,
    /// GPUs the job is spread over (data parallel).
    pub gpus: u64,
}

impl Workload {
    /// The workload a rough answer assumes when only the model's size is known: batch 1, no
    /// shape (so no activations or KV cache), AdamW for training, no checkpointing or ZeRO, one
    /// GPU. `explain`'s out-of-memory advice and `advise` ask this question.
    pub(crate) fn plain(params: u64, mode: Mode, precision: Precision) -> Self {
        Workload {
            params,
            mode,
            precision,
            optimizer: Optimizer::Adamw,
            batch: 1,
            seq_len: None,
            shape: None,
            checkpointing: false,
            zero: 0,
            gpus: 1,
        }
    }
}

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

/// The paper the activation formulas come from.
const KORTHIKANTI: &str =
    "Korthikanti et al. 2022, \"Reducing Activation Recomputation in Large Transformer Models\"";

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

/// The estimate's lines as they are added, in the order they are shown, with what the
/// formulas leave out.
struct Breakdown<'w> {
    w: &'w Workload,
    items: Vec<Item>,
    not_counted: Vec<String>,
    /// Weights, gradients, master weights and optimizer states, before any ZeRO split.
    model_state: u64,
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
    fn weights(&mut self) -> Result<u64, String> {
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
    fn training_state(&mut self) -> Result<(), String> {
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
    fn activations(&mut self) -> Result<Option<u64>, String> {
        let item = training_activations(self.w)?;
        Ok(self.shaped(item, "activations"))
    }

    /// Inference's KV cache, when the model's shape is known.
    fn kv_cache(&mut self) -> Result<Option<u64>, String> {
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
    fn context_and_the_rest(&mut self) {
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

fn check(w: &Workload) -> Result<(), String> {
    if w.mode == Mode::Train
        && matches!(
            w.precision,
            Precision::Fp8 | Precision::Int8 | Precision::Int4
        )
    {
        return Err(format!(
            "training in {} is not modelled: FP8 training (Transformer Engine) keeps 16-bit \
             weights and FP32 master copies, and INT8/INT4 fine-tuning (QLoRA) trains small \
             adapters, not the model; use --precision bf16 for an upper bound of full training",
            w.precision.label()
        ));
    }
    if w.mode == Mode::Infer && w.zero > 0 {
        return Err(
            "--zero partitions training state (gradients, optimizer); it does not apply to --infer"
                .into(),
        );
    }
    if w.mode == Mode::Infer && w.checkpointing {
        return Err(
            "--checkpointing trades compute for activation memory in training; it does not apply to --infer"
                .into(),
        );
    }
    if w.zero > 3 {
        return Err(format!("--zero {}: ZeRO has stages 0 to 3", w.zero));
    }
    if w.zero > 0 && w.gpus < 2 {
        return Err(format!(
            "--zero {} divides state across GPUs: give --gpus 2 or more",
            w.zero
        ));
    }
    if let Some(shape) = w.shape
        && let (Some(heads), Some(kv)) = (shape.heads, shape.kv_heads)
        && kv > heads
    {
        return Err(format!(
            "--kv-heads {kv} is more than --heads {heads}: grouped-query attention shares each key/value head between query heads"
        ));
    }
    Ok(())
}

fn optimizer_name(o: Optimizer) -> &'static str {
    match o {
        Optimizer::Adamw => "AdamW",
        Optimizer::Sgd => "SGD with momentum",
        Optimizer::Adafactor => "Adafactor",
        Optimizer::EightBitAdam => "8-bit Adam",
    }
}

/// Bytes per parameter an optimizer keeps, and what they are.
fn optimizer_state(o: Optimizer) -> (u64, &'static str) {
    match o {
        Optimizer::Adamw => (8, "m and v in FP32"),
        Optimizer::Sgd => (4, "momentum in FP32; plain SGD keeps none"),
        Optimizer::Adafactor => (0, "factored second moments, not counted per parameter"),
        Optimizer::EightBitAdam => (
            2,
            "m and v in 8 bits, Dettmers et al. 2022, \"8-bit Optimizers via Block-wise Quantization\"",
        ),
    }
}

/// Why a shape-dependent part was left out.
fn missing_shape(what: &str, w: &Workload) -> String {
    let mut need = Vec::new();
    if w.shape.is_none() {
        need.push("--layers and --hidden");
    }
    if w.seq_len.is_none() {
        need.push("--seq-len");
    }
    format!(
        "{what}: give {} (and --batch, 1 by default) to count them",
        need.join(" and ")
    )
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

/// The rule quoted in guides, "params × 2 + activations × 4 + optimizer × 2", read as: the
/// weights in 16-bit (params × 2 bytes); Adam's two states at the size of those weights
/// (optimizer × 2 = 2 × params × 2 bytes); the activations as FP32 values (× 4 bytes each,
/// where the breakdown's activation bytes count 2 bytes a value). For inference only the first
/// term is left. It is shown because people compare against it, and the differences explain
/// where the breakdown's extra memory goes.
fn simple_rule(w: &Workload, parts: &Parts) -> Result<SimpleRule, String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guide::quantity::GIB;

    fn train(params: u64) -> Workload {
        Workload::plain(params, Mode::Train, Precision::Bf16)
    }

    fn infer(params: u64) -> Workload {
        Workload {
            mode: Mode::Infer,
            ..train(params)
        }
    }

    fn item(e: &Estimate, id: &str) -> u64 {
        e.items
            .iter()
            .find(|i| i.id == id)
            .unwrap_or_else(|| panic!("no {id} in {:#?}", e.items))
            .bytes
    }

    fn ids(e: &Estimate) -> Vec<&str> {
        e.items.iter().map(|i| i.id).collect()
    }

    const BERT_LARGE: u64 = 340_000_000;

    #[test]
    fn bert_large_adamw_mixed_precision_is_16_bytes_per_parameter() {
        // BERT-large, 340M parameters, BF16 mixed precision, AdamW, no shape given:
        //   weights        340,000,000 × 2 =   680,000,000
        //   gradients      340,000,000 × 2 =   680,000,000
        //   FP32 master    340,000,000 × 4 = 1,360,000,000
        //   Adam m and v   340,000,000 × 8 = 2,720,000,000
        //   model state                      5,440,000,000  (16 B/param, ZeRO paper §3.1)
        //   CUDA context   512 MiB         =   536,870,912
        //   total                            5,976,870,912  (5.57 GiB)
        let e = estimate(&train(BERT_LARGE)).unwrap();
        assert_eq!(
            ids(&e),
            [
                "weights",
                "gradients",
                "master_weights",
                "optimizer_states",
                "cuda_context"
            ]
        );
        assert_eq!(item(&e, "weights"), 680_000_000);
        assert_eq!(item(&e, "gradients"), 680_000_000);
        assert_eq!(item(&e, "master_weights"), 1_360_000_000);
        assert_eq!(item(&e, "optimizer_states"), 2_720_000_000);
        assert_eq!(e.parts.model_state, 5_440_000_000);
        assert_eq!(e.total_bytes, 5_976_870_912);
        // The simple rule: 340M × 2 + optimizer 2 × (340M × 2) = 680M + 1,360M = 2,040,000,000
        // (6 B/param): it forgets gradients and the master copy, and keeps Adam in 16-bit.
        assert_eq!(e.simple_rule.bytes, 2_040_000_000);
        let why = e.simple_rule.differences.join(" ");
        assert!(
            why.contains("6 bytes per parameter (2.04 GB for 340M"),
            "{why}"
        );
        assert!(why.contains("16 bytes per parameter (5.44 GB)"), "{why}");
        assert!(
            e.not_counted
                .iter()
                .any(|n| n.starts_with("activations: give --layers and --hidden and --seq-len"))
        );
    }

    #[test]
    fn bert_large_activations_follow_korthikanti() {
        // BERT-large shape: L = 24, h = 1024, a = 16; s = 512, b = 8.
        //   34·s·b·h   = 34 × 512 × 8 × 1024      = 142,606,336
        //   5·a·s²·b   = 5 × 16 × 512² × 8        = 167,772,160   (= s·b·h · 5as/h)
        //   per layer  = 310,378,496; × 24 layers = 7,449,083,904  (6.94 GiB)
        // Total: 5,440,000,000 + 7,449,083,904 + 536,870,912 = 13,425,954,816 (12.50 GiB).
        let w = Workload {
            batch: 8,
            seq_len: Some(512),
            shape: Some(Shape {
                layers: 24,
                hidden: 1024,
                heads: Some(16),
                kv_heads: None,
            }),
            ..train(BERT_LARGE)
        };
        let e = estimate(&w).unwrap();
        assert_eq!(item(&e, "activations"), 7_449_083_904);
        assert_eq!(e.total_bytes, 13_425_954_816);
        // The rule counts activations at 4 bytes a value, twice the 16-bit figure:
        // 2,040,000,000 + 2 × 7,449,083,904 = 16,938,167,808.
        assert_eq!(e.simple_rule.bytes, 16_938_167_808);

        // Without --heads the attention scores are not counted (FlashAttention):
        // 24 × 142,606,336 = 3,422,552,064.
        let mut no_heads = w;
        no_heads.shape = Some(Shape {
            heads: None,
            ..w.shape.unwrap()
        });
        assert_eq!(
            item(&estimate(&no_heads).unwrap(), "activations"),
            3_422_552_064
        );

        // Full checkpointing: 24 × 2·s·b·h = 24 × 8,388,608 = 201,326,592, plus one layer
        // rebuilt in its backward pass, 310,378,496: 511,705,088.
        let ckpt = Workload {
            checkpointing: true,
            ..w
        };
        assert_eq!(item(&estimate(&ckpt).unwrap(), "activations"), 511_705_088);

        // FP32 training: 16 B/param state (4 + 4 + 8, no master copy), activations doubled.
        let fp32 = Workload {
            precision: Precision::Fp32,
            ..w
        };
        let e = estimate(&fp32).unwrap();
        assert!(!ids(&e).contains(&"master_weights"));
        assert_eq!(e.parts.model_state, 5_440_000_000);
        assert_eq!(item(&e, "activations"), 14_898_167_808);
    }

    #[test]
    fn zero_stages_reproduce_the_zero_papers_figure_1() {
        // ZeRO paper, Figure 1: 7.5B parameters, 64 GPUs, K = 12 (mixed-precision Adam):
        // baseline (2 + 2 + 12)·Ψ = 120 GB; stage 1: 2Ψ + 2Ψ + 12Ψ/64 = 31.4 GB;
        // stage 2: 2Ψ + 14Ψ/64 = 16.6 GB; stage 3: 16Ψ/64 = 1.9 GB.
        let psi = 7_500_000_000;
        let state = |zero: u8| {
            let w = Workload {
                zero,
                gpus: if zero == 0 { 1 } else { 64 },
                ..train(psi)
            };
            let e = estimate(&w).unwrap();
            e.total_bytes - CONTEXT_BYTES
        };
        assert_eq!(state(0), 120_000_000_000);
        assert_eq!(state(1), 31_406_250_000);
        assert_eq!(state(2), 16_640_625_000);
        assert_eq!(state(3), 1_875_000_000);
    }

    #[test]
    fn seven_billion_on_eight_gpus() {
        // 7B, BF16 AdamW, 8 GPUs: stage 1 = 14 + 14 + 84/8 = 38.5 GB; stage 2 = 14 + 98/8 =
        // 26.25 GB; stage 3 = 112/8 = 14 GB (all before the CUDA context).
        let at = |zero| {
            let e = estimate(&Workload {
                zero,
                gpus: 8,
                ..train(7_000_000_000)
            })
            .unwrap();
            e.total_bytes - CONTEXT_BYTES
        };
        assert_eq!(at(1), 38_500_000_000);
        assert_eq!(at(2), 26_250_000_000);
        assert_eq!(at(3), 14_000_000_000);
    }

    #[test]
    fn llama2_7b_inference_kv_cache() {
        // Llama-2-7B shape (L = 32, h = 4096, 32 heads, no GQA), FP16, 4096 tokens, batch 1:
        //   weights   7,000,000,000 × 2                  = 14,000,000,000
        //   KV cache  2 × 32 × 4096 × 4096 × 1 × 2 bytes = 2,147,483,648 (2 GiB)
        //   context                                       536,870,912
        //   total                                      16,684,354,560 (15.54 GiB)
        let w = Workload {
            precision: Precision::Fp16,
            seq_len: Some(4096),
            shape: Some(Shape {
                layers: 32,
                hidden: 4096,
                heads: Some(32),
                kv_heads: None,
            }),
            ..infer(7_000_000_000)
        };
        let e = estimate(&w).unwrap();
        assert_eq!(ids(&e), ["weights", "kv_cache", "cuda_context"]);
        assert_eq!(item(&e, "kv_cache"), 2 * GIB);
        assert_eq!(e.total_bytes, 16_684_354_560);
        assert_eq!(e.simple_rule.bytes, 14_000_000_000);

        // Grouped-query attention with 8 KV heads of 32 cuts the cache to a quarter: 512 MiB.
        let gqa = Workload {
            shape: Some(Shape {
                kv_heads: Some(8),
                ..w.shape.unwrap()
            }),
            ..w
        };
        assert_eq!(item(&estimate(&gqa).unwrap(), "kv_cache"), 512 * MIB);

        // INT4 weights: 7e9 × 4 / 8 = 3,500,000,000; the KV cache stays 16-bit.
        let int4 = Workload {
            precision: Precision::Int4,
            ..w
        };
        let e = estimate(&int4).unwrap();
        assert_eq!(item(&e, "weights"), 3_500_000_000);
        assert_eq!(item(&e, "kv_cache"), 2 * GIB);
    }

    #[test]
    fn other_optimizers() {
        // 1B, BF16: SGD momentum 2 + 2 + 4 + 4 = 12 B/param; 8-bit Adam 2 + 2 + 4 + 2 = 10;
        // Adafactor 2 + 2 + 4 + 0 = 8 (factored moments not counted, and said so).
        let with = |optimizer| {
            estimate(&Workload {
                optimizer,
                ..train(1_000_000_000)
            })
            .unwrap()
        };
        assert_eq!(with(Optimizer::Sgd).parts.model_state, 12_000_000_000);
        assert_eq!(
            with(Optimizer::EightBitAdam).parts.model_state,
            10_000_000_000
        );
        let ada = with(Optimizer::Adafactor);
        assert_eq!(ada.parts.model_state, 8_000_000_000);
        assert!(ada.not_counted.iter().any(|n| n.contains("Adafactor")));
    }

    #[test]
    fn combinations_the_formulas_do_not_cover_are_refused() {
        for precision in [Precision::Fp8, Precision::Int8, Precision::Int4] {
            let w = Workload {
                precision,
                ..train(BERT_LARGE)
            };
            assert!(estimate(&w).is_err(), "{precision:?}");
        }
        assert!(
            estimate(&Workload {
                zero: 3,
                gpus: 8,
                ..infer(BERT_LARGE)
            })
            .is_err()
        );
        assert!(
            estimate(&Workload {
                zero: 2,
                ..train(BERT_LARGE)
            })
            .is_err(),
            "ZeRO on one GPU"
        );
        assert!(
            estimate(&Workload {
                checkpointing: true,
                ..infer(BERT_LARGE)
            })
            .is_err()
        );
        let gqa = Workload {
            seq_len: Some(8),
            shape: Some(Shape {
                layers: 2,
                hidden: 64,
                heads: Some(4),
                kv_heads: Some(8),
            }),
            ..infer(BERT_LARGE)
        };
        assert!(estimate(&gqa).is_err());
        assert!(
            estimate(&train(u64::MAX / 2)).is_err(),
            "overflow is an error, not a wrap"
        );
    }
}

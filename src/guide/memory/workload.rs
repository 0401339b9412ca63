//! What is to run: the mode, optimizer, shape and spread of a job, and whether the formulas
//! cover the combination (refused in words before anything is computed).

use serde::Serialize;

use crate::guide::precision::Precision;

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

pub(super) fn optimizer_name(o: Optimizer) -> &'static str {
    match o {
        Optimizer::Adamw => "AdamW",
        Optimizer::Sgd => "SGD with momentum",
        Optimizer::Adafactor => "Adafactor",
        Optimizer::EightBitAdam => "8-bit Adam",
    }
}

/// Bytes per parameter an optimizer keeps, and what they are.
pub(super) fn optimizer_state(o: Optimizer) -> (u64, &'static str) {
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

pub(super) fn check(w: &Workload) -> Result<(), String> {
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

/// Why a shape-dependent part was left out.
pub(super) fn missing_shape(what: &str, w: &Workload) -> String {
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

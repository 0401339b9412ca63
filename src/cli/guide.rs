//! `gpu-doctor estimate` and `advise` options.

use crate::guide::memory::Optimizer;
use crate::guide::precision::Precision;
use crate::manifest::Segment;

fn params_arg(text: &str) -> Result<u64, String> {
    crate::guide::quantity::parse_params(text)
}

/// Arguments of `gpu-doctor estimate`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
gpu-doctor estimate --params 340M --train --batch 8 --seq-len 512 --layers 24 --hidden 1024 --heads 16\n  \
gpu-doctor estimate --params 7B --infer --precision fp16 --seq-len 4096 --layers 32 --hidden 4096\n  \
gpu-doctor estimate --params 70B --train --zero 3 --gpus 8\n\n\
Formulas: model state per the ZeRO paper (Rajbhandari et al. 2020); activations per Korthikanti et \
al. 2022, s·b·h·(34 + 5·a·s/h) bytes per layer (2·s·b·h with --checkpointing); KV cache \
2 × layers × hidden × seq × batch × bytes. The CUDA context (512 MiB) is a rule of thumb.")]
pub(crate) struct EstimateArgs {
    /// Model size in parameters: 340M, 7B, 1.5B, 70B.
    #[arg(long, value_name = "N", value_parser = params_arg)]
    pub params: u64,
    /// Training (the default): weights, gradients, optimizer states, activations.
    #[arg(long, conflicts_with = "infer")]
    pub train: bool,
    /// Inference: weights and KV cache.
    #[arg(long)]
    pub infer: bool,
    /// Number format of weights and compute (training in bf16/fp16 keeps FP32 master weights).
    #[arg(long, value_enum, default_value_t = Precision::Bf16)]
    pub precision: Precision,
    /// Optimizer (training).
    #[arg(long, value_enum, default_value_t = Optimizer::Adamw)]
    pub optimizer: Optimizer,
    /// Sequences per GPU per step.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch: u64,
    /// Tokens per sequence (activations and KV cache need it).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
    pub seq_len: Option<u64>,
    /// Transformer layers.
    #[arg(long, value_name = "N", requires = "hidden", value_parser = clap::value_parser!(u64).range(1..))]
    pub layers: Option<u64>,
    /// Hidden size (model width).
    #[arg(long, value_name = "N", requires = "layers", value_parser = clap::value_parser!(u64).range(1..))]
    pub hidden: Option<u64>,
    /// Attention heads: adds the attention-score term of the activations (without FlashAttention).
    #[arg(long, value_name = "N", requires = "hidden", value_parser = clap::value_parser!(u64).range(1..))]
    pub heads: Option<u64>,
    /// Key/value heads for grouped-query attention (shrinks the KV cache).
    #[arg(long, value_name = "N", requires = "heads", value_parser = clap::value_parser!(u64).range(1..))]
    pub kv_heads: Option<u64>,
    /// Full activation checkpointing (recompute each layer in the backward pass).
    #[arg(long)]
    pub checkpointing: bool,
    /// ZeRO stage: 1 divides optimizer states, 2 also gradients, 3 also weights across --gpus.
    #[arg(long, value_name = "STAGE", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub zero: u8,
    /// GPUs the training job is spread over.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub gpus: u64,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `--budget`: which market segment to pick cards from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Budget {
    Consumer,
    Workstation,
    Datacenter,
}

impl Budget {
    /// The market segment of the card table this names.
    #[must_use]
    pub(crate) fn segment(self) -> Segment {
        match self {
            Budget::Consumer => Segment::Consumer,
            Budget::Workstation => Segment::Workstation,
            Budget::Datacenter => Segment::Datacenter,
        }
    }
}

/// Arguments of `gpu-doctor advise`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct AdviseArgs {
    /// Training (the default).
    #[arg(long, conflicts_with = "infer")]
    pub train: bool,
    /// Inference.
    #[arg(long)]
    pub infer: bool,
    /// Model size in parameters (340M, 7B): only cards whose memory holds it are listed.
    #[arg(long, value_name = "N", value_parser = params_arg)]
    pub params: Option<u64>,
    /// Number format whose throughput and tensor-core support to show.
    #[arg(long, value_enum, default_value_t = Precision::Bf16)]
    pub precision: Precision,
    /// Only cards of one market segment.
    #[arg(long, value_enum)]
    pub budget: Option<Budget>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

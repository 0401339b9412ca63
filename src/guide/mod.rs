//! Built-in guidance: will a model fit (`estimate`), which card to use (`advise`).
//!
//! The arithmetic lives in pure modules ([`memory`], [`fit`], [`mod@advise`]) that take numbers,
//! the [`crate::report::Report`] and the manifests; this file turns CLI arguments into their
//! inputs, examines the machine through the [`Host`] once, and prints text or JSON. Every
//! figure comes from `manifests/gpus.toml`, a published formula, or a rule of thumb that the
//! output labels as one.

pub mod advise;
pub mod fit;
pub mod memory;
pub mod precision;
pub mod quantity;
pub mod render;

use serde::Serialize;

use crate::app::exit;
use crate::host::Host;
use crate::manifest::Segment;
use crate::report::Report;
use memory::{Estimate, Mode, Optimizer, Shape, Workload};
use precision::Precision;

/// How many of the table's GPUs `estimate` lists as the smallest that fit.
const SMALLEST_LISTED: usize = 5;

fn params_arg(text: &str) -> Result<u64, String> {
    quantity::parse_params(text)
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
pub struct EstimateArgs {
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
pub enum Budget {
    Consumer,
    Workstation,
    Datacenter,
}

impl Budget {
    fn segment(self) -> Segment {
        match self {
            Budget::Consumer => Segment::Consumer,
            Budget::Workstation => Segment::Workstation,
            Budget::Datacenter => Segment::Datacenter,
        }
    }
}

/// Arguments of `gpu-doctor advise`.
#[derive(Debug, Clone, clap::Args)]
pub struct AdviseArgs {
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

/// What `estimate --json` prints: the estimate, and how it fits this machine and the table.
#[derive(Debug, Clone, Serialize)]
pub struct EstimateOutput {
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
fn mode(infer: bool) -> Mode {
    if infer { Mode::Infer } else { Mode::Train }
}

/// The workload `estimate`'s arguments describe.
fn workload(args: &EstimateArgs) -> Workload {
    Workload {
        params: args.params,
        mode: mode(args.infer),
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
fn machine_report(host: &Host) -> Report {
    match crate::app::examine_guarded(host) {
        Ok(report) => report,
        Err(message) => {
            crate::term::error(&format!(
                "could not examine this machine ({message}); showing the table only"
            ));
            Report::default()
        }
    }
}

fn print(text: &str) -> u8 {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => exit::OK,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => exit::OK,
        Err(e) => {
            crate::term::error(&format!("cannot write: {e}"));
            exit::FAILED
        }
    }
}

fn json<T: Serialize>(value: &T) -> u8 {
    match serde_json::to_string_pretty(value) {
        Ok(mut text) => {
            text.push('\n');
            print(&text)
        }
        Err(e) => {
            crate::term::error(&format!("cannot render JSON: {e}"));
            exit::FAILED
        }
    }
}

/// The estimate for `w`, fitted to `report`'s GPUs and the table. Pure.
///
/// # Errors
/// The estimate's refusals (see [`memory::estimate`]).
pub fn estimate_for(w: &Workload, report: &Report) -> Result<EstimateOutput, String> {
    let manifests = crate::manifest::embedded();
    let estimate = memory::estimate(w)?;
    let need = estimate.total_bytes;
    Ok(EstimateOutput {
        machine: fit::machine(report, need),
        smallest_listed: fit::smallest_listed(&manifests.gpus, need, SMALLEST_LISTED),
        spread: fit::spread(&estimate, &manifests.gpus),
        estimate,
    })
}

/// Runs `estimate`: exit 0 with the estimate, 2 for a combination it cannot estimate.
#[must_use]
pub fn estimate(host: &Host, args: &EstimateArgs) -> u8 {
    let w = workload(args);
    // Refuse bad combinations before examining the machine.
    if let Err(message) = memory::estimate(&w) {
        crate::term::error(&message);
        return exit::USAGE;
    }
    let report = machine_report(host);
    match estimate_for(&w, &report) {
        Ok(out) if args.json => json(&out),
        Ok(out) => print(&render::estimate(&out)),
        Err(message) => {
            crate::term::error(&message);
            exit::USAGE
        }
    }
}

/// Runs `advise`: exit 0 with the advice, 2 for a combination it cannot estimate.
#[must_use]
pub fn advise(host: &Host, args: &AdviseArgs) -> u8 {
    let run = |report: &Report| {
        advise::advise(
            report,
            crate::manifest::embedded(),
            mode(args.infer),
            args.params,
            args.precision,
            args.budget.map(Budget::segment),
        )
    };
    if let Err(message) = run(&Report::default()) {
        crate::term::error(&message);
        return exit::USAGE;
    }
    let report = machine_report(host);
    match run(&report) {
        Ok(advice) if args.json => json(&advice),
        Ok(advice) => print(&render::advise(&advice)),
        Err(message) => {
            crate::term::error(&message);
            exit::USAGE
        }
    }
}

//! Out-of-memory messages worked through for this machine: what the message's own figures
//! say (other processes holding memory, memory reserved but unused), whether the GPU in it is
//! one of this machine's, and what fits on this machine's GPUs by `gpu-doctor estimate`'s
//! arithmetic ([`crate::guide::memory`]).

use crate::guide::memory::{self, Mode, Workload};
use crate::guide::precision::Precision;
use crate::guide::quantity::GIB;
use crate::report::Report;

/// An amount of memory as PyTorch prints it ("20.00 MiB", "79.15 GiB"), in bytes.
fn amount(number: &str, unit: &str) -> Option<f64> {
    let n: f64 = number.parse().ok()?;
    let scale = match unit {
        "B" | "bytes" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    n.is_finite().then_some(n * scale)
}

/// The amount written right after `phrase` ("total capacity of 79.15 GiB").
fn after(text: &str, phrase: &str) -> Option<f64> {
    let rest = &text[text.find(phrase)? + phrase.len()..];
    let mut words = rest.split_whitespace();
    amount(
        words.next()?,
        words.next()?.trim_end_matches([';', ',', '.', ')']),
    )
}

/// The amount written right before `phrase` ("7.79 GiB total capacity").
fn before(text: &str, phrase: &str) -> Option<f64> {
    let head = &text[..text.find(phrase)?];
    let mut words = head.split_whitespace().rev();
    let unit = words.next()?;
    let number = words.next()?;
    amount(number, unit)
}

/// A parameter count as model cards round it: `5.3B`, `70B`, `800M`.
fn billions(n: u64) -> String {
    if n >= 10_000_000_000 {
        format!("{}B", n / 1_000_000_000)
    } else if n >= 1_000_000_000 {
        format!("{:.1}B", n as f64 / 1e9)
    } else {
        format!("{}M", n / 1_000_000)
    }
}

fn gib(bytes: f64) -> String {
    format!("{:.1} GiB", bytes / 1024.0 / 1024.0 / 1024.0)
}

/// Notes for an out-of-memory message found in `text` (the line or two it sits on).
#[must_use]
pub(crate) fn notes(report: &Report, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let capacity = after(text, "total capacity of ").or_else(|| before(text, "total capacity"));
    let free = before(text, "is free").or_else(|| before(text, "free;"));
    let process = after(text, "this process has ");
    let unused = before(text, "is reserved by PyTorch but unallocated");
    if let (Some(c), Some(p), Some(f)) = (capacity, process, free) {
        let others = c - p - f;
        if others > 1024.0 * 1024.0 * 1024.0 {
            out.push(format!(
                "Other processes held about {} of that GPU's {}: see `nvidia-smi`'s process list before blaming the model.",
                gib(others),
                gib(c)
            ));
        }
    }
    if let (Some(c), Some(u)) = (capacity, unused)
        && u > 0.1 * c
    {
        out.push(format!(
            "{} was reserved by PyTorch but unallocated: the cache is fragmented; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets it reuse that memory.",
            gib(u)
        ));
    }
    let gpus: Vec<(String, u64)> = report
        .gpus
        .iter()
        .filter_map(|g| {
            Some((
                format!("GPU {} ({})", g.index, g.name.as_deref().unwrap_or("?")),
                g.memory_total_mib?.saturating_mul(1024 * 1024),
            ))
        })
        .collect();
    if let Some(c) = capacity
        && !gpus.is_empty()
        && !gpus
            .iter()
            .any(|(_, total)| (c - *total as f64).abs() <= 0.1 * *total as f64)
    {
        out.push(format!(
            "The GPU in the message has {}; this machine's have {}: the message came from another machine, or a MIG slice or a memory limit.",
            gib(c),
            gpus.iter()
                .map(|(_, t)| gib(*t as f64))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some((name, total)) = gpus.iter().max_by_key(|(_, t)| *t) {
        let fits = |mode: Mode| -> Option<u64> {
            let per_billion =
                memory::estimate(&Workload::plain(1_000_000_000, mode, Precision::Bf16))
                    .ok()?
                    .parts
                    .model_state;
            let room = total.checked_sub(memory::CONTEXT_BYTES)?;
            u64::try_from(u128::from(room) * 1_000_000_000 / u128::from(per_billion.max(1))).ok()
        };
        if let (Some(train), Some(infer)) = (fits(Mode::Train), fits(Mode::Infer)) {
            out.push(format!(
                "On this machine's largest GPU, {name} with {} GiB, bf16 mixed-precision AdamW training holds at most about {} parameters (16 bytes each for weights, gradients, FP32 master weights and optimizer states) before any activations; bf16 inference at most about {} before the KV cache. `gpu-doctor estimate --params <N> --train --batch <B> --seq-len <S> --layers <L> --hidden <H>` works out your model's share and what a smaller batch, --checkpointing or ZeRO (--zero 3 --gpus N) saves.",
                total / GIB,
                billions(train),
                billions(infer)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Gpu;

    #[test]
    fn the_message_s_own_figures_are_read() {
        let text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.15 GiB of which 11.62 MiB is free. Including non-PyTorch memory, this process has 59.13 GiB memory in use. Of the allocated memory 38.11 GiB is allocated by PyTorch, and 20.46 GiB is reserved by PyTorch but unallocated.";
        let report = Report {
            gpus: vec![Gpu {
                index: 0,
                name: Some("NVIDIA H100 80GB HBM3".into()),
                memory_total_mib: Some(81_559),
                ..Gpu::default()
            }],
            ..Report::default()
        };
        let notes = notes(&report, text);
        assert!(
            notes[0].starts_with("Other processes held about 20.0 GiB"),
            "{notes:?}"
        );
        assert!(notes[1].starts_with("20.5 GiB was reserved"), "{notes:?}");
        assert!(notes[2].contains("about 5.3B parameters"), "{notes:?}");
        assert!(
            notes[2].contains("about 42B before the KV cache"),
            "{notes:?}"
        );
        let old = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 7.79 GiB total capacity; 5.10 GiB already allocated; 1.12 GiB free; 5.30 GiB reserved in total by PyTorch)";
        let notes = super::notes(&report, old);
        assert!(
            notes[0].contains("The GPU in the message has 7.8 GiB"),
            "{notes:?}"
        );
    }
}

//! Does an estimate fit: on this machine's GPUs (what the driver reported), on the GPUs of the
//! table (`manifests/gpus.toml`), and, when no single GPU holds it, on how many. Pure.

use serde::Serialize;

use super::memory::{Estimate, Mode};
use super::quantity::MIB;
use crate::manifest::{GpuTable, Segment};
use crate::report::Report;

/// One GPU's capacity against the need.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Fit {
    /// "GPU 0 (NVIDIA H200)" or "A100 80GB SXM4 80 GB".
    pub gpu: String,
    /// The GPU's index on this machine; null for a GPU of the table.
    pub index: Option<u32>,
    pub capacity_bytes: u64,
    /// "driver": the total memory the driver reported. "gpus.toml": the marketed size read as
    /// 10^9 bytes per GB, which is below what those cards report (an "80GB" A100 reports
    /// 81920 MiB), so a fit on paper is a fit on the card.
    pub capacity_from: &'static str,
    pub fits: bool,
    /// Capacity minus need; negative when it does not fit.
    pub headroom_bytes: i64,
}

/// The machine's GPUs against the need.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct MachineFit {
    pub gpus: Vec<Fit>,
    /// GPUs whose memory the driver did not report (no driver, or a bus-only view).
    pub memory_unknown: Vec<String>,
}

/// A listed GPU model, one per marketed memory size.
struct Candidate<'a> {
    name: &'a str,
    gb: u32,
}

/// When no single listed GPU holds the estimate: how many of the largest would.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Spread {
    pub gpu: String,
    pub count: u64,
    /// How the state is split, and what the count leaves out. Rough, and labelled so.
    pub how: String,
}

fn headroom(capacity: u64, need: u64) -> i64 {
    let diff = i128::from(capacity) - i128::from(need);
    i64::try_from(diff).unwrap_or(if diff < 0 { i64::MIN } else { i64::MAX })
}

/// Each GPU of the report against `need` bytes per GPU.
#[must_use]
pub(crate) fn machine(report: &Report, need: u64) -> MachineFit {
    let mut gpus = Vec::new();
    let mut memory_unknown = Vec::new();
    for gpu in &report.gpus {
        let label = match &gpu.name {
            Some(name) => format!("GPU {} ({name})", gpu.index),
            None => format!("GPU {}", gpu.index),
        };
        match gpu.memory_total_mib.and_then(|m| m.checked_mul(MIB)) {
            Some(capacity) => gpus.push(Fit {
                gpu: label,
                index: Some(gpu.index),
                capacity_bytes: capacity,
                capacity_from: "driver",
                fits: capacity >= need,
                headroom_bytes: headroom(capacity, need),
            }),
            None => memory_unknown.push(label),
        }
    }
    MachineFit {
        gpus,
        memory_unknown,
    }
}

/// Listed GPUs with a known memory size, one entry per size, smallest first. Jetson modules are
/// left out: their memory is shared with the CPU.
fn candidates(table: &GpuTable) -> Vec<Candidate<'_>> {
    let mut out: Vec<Candidate<'_>> = table
        .gpus
        .iter()
        .filter(|g| g.segment != Segment::Embedded)
        .flat_map(|g| {
            g.memory_gb.iter().map(|gb| Candidate {
                name: g.name.as_str(),
                gb: *gb,
            })
        })
        .collect();
    out.sort_by(|a, b| (a.gb, a.name).cmp(&(b.gb, b.name)));
    out
}

fn table_fit(c: &Candidate<'_>, need: u64) -> Fit {
    let capacity = u64::from(c.gb) * 1_000_000_000;
    Fit {
        gpu: format!("{} {} GB", c.name, c.gb),
        index: None,
        capacity_bytes: capacity,
        capacity_from: "gpus.toml",
        fits: capacity >= need,
        headroom_bytes: headroom(capacity, need),
    }
}

/// The `limit` smallest listed GPUs that hold `need` bytes.
#[must_use]
pub(crate) fn smallest_listed(table: &GpuTable, need: u64, limit: usize) -> Vec<Fit> {
    candidates(table)
        .iter()
        .map(|c| table_fit(c, need))
        .filter(|f| f.fits)
        .take(limit)
        .collect()
}

/// How many of the largest listed GPU a job needs when none holds it alone; `None` when one
/// does, or when even the largest cannot hold one GPU's share of what is not divided.
///
/// Training: ZeRO-3 divides the model state by the GPU count while each GPU keeps its own
/// activations and CUDA context. Inference: tensor parallelism divides the weights and the KV
/// cache while each GPU keeps its own context. Both leave out the communication buffers and,
/// for ZeRO-3, the one layer of weights gathered at a time: a rough lower bound.
#[must_use]
pub(crate) fn spread(estimate: &Estimate, table: &GpuTable) -> Option<Spread> {
    let largest = candidates(table).into_iter().last()?;
    let capacity = u64::from(largest.gb) * 1_000_000_000;
    let parts = &estimate.parts;
    if estimate.total_bytes <= capacity
        || (estimate.workload.zero > 0 && estimate.workload.gpus > 1)
    {
        return None;
    }
    let (divided, kept, how) = match estimate.workload.mode {
        Mode::Train => (
            parts.model_state,
            parts.activations.unwrap_or(0) + parts.context,
            "ZeRO-3 (rough: divides weights, gradients and optimizer states; each GPU keeps \
             its activations and CUDA context; communication buffers not counted)",
        ),
        Mode::Infer => (
            parts.weights + parts.kv_cache.unwrap_or(0),
            parts.context,
            "tensor parallelism (rough: divides weights and KV cache evenly; each GPU keeps its \
             CUDA context; communication buffers not counted)",
        ),
    };
    let room = capacity.checked_sub(kept).filter(|r| *r > 0)?;
    Some(Spread {
        gpu: format!("{} {} GB", largest.name, largest.gb),
        count: divided.div_ceil(room).max(2),
        how: how.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guide::memory::{Optimizer, Shape, Workload, estimate};
    use crate::guide::precision::Precision;
    use crate::report::Gpu;

    fn table() -> &'static GpuTable {
        &crate::manifest::embedded().gpus
    }

    fn llama_7b_fp16() -> Estimate {
        estimate(&Workload {
            params: 7_000_000_000,
            mode: Mode::Infer,
            precision: Precision::Fp16,
            optimizer: Optimizer::Adamw,
            batch: 1,
            seq_len: Some(4096),
            shape: Some(Shape {
                layers: 32,
                hidden: 4096,
                heads: Some(32),
                kv_heads: None,
            }),
            checkpointing: false,
            zero: 0,
            gpus: 1,
        })
        .unwrap()
    }

    #[test]
    fn llama_7b_fits_a_24gb_card_but_not_a_t4() {
        // Needs 16,684,354,560 bytes (memory.rs). A T4 reports 15360 MiB = 16,106,127,360
        // bytes: 578,227,200 short. An RTX 4090 reports 24564 MiB = 25,757,220,864: fits with
        // 9,072,866,304 to spare.
        let e = llama_7b_fp16();
        let report = Report {
            gpus: vec![
                Gpu {
                    index: 0,
                    name: Some("Tesla T4".into()),
                    memory_total_mib: Some(15360),
                    ..Gpu::default()
                },
                Gpu {
                    index: 1,
                    name: Some("NVIDIA GeForce RTX 4090".into()),
                    memory_total_mib: Some(24564),
                    ..Gpu::default()
                },
                Gpu {
                    index: 2,
                    ..Gpu::default()
                },
            ],
            ..Report::default()
        };
        let m = machine(&report, e.total_bytes);
        assert_eq!(m.gpus.len(), 2);
        assert!(!m.gpus[0].fits);
        assert_eq!(m.gpus[0].headroom_bytes, -578_227_200);
        assert!(m.gpus[1].fits);
        assert_eq!(m.gpus[1].headroom_bytes, 9_072_866_304);
        assert_eq!(m.memory_unknown, ["GPU 2"]);
    }

    #[test]
    fn smallest_listed_gpus_are_the_24_gb_cards() {
        // 16.68e9 bytes: 16 GB cards (16e9 bytes on paper) are too small; the 24 GB rows of
        // gpus.toml (A10, GeForce RTX 3090 and 4090, L4) are next, in name order.
        let e = llama_7b_fp16();
        let fits = smallest_listed(table(), e.total_bytes, 3);
        let names: Vec<&str> = fits.iter().map(|f| f.gpu.as_str()).collect();
        assert_eq!(
            names,
            [
                "A10 24 GB",
                "GeForce RTX 3090 24 GB",
                "GeForce RTX 4090 24 GB"
            ]
        );
        assert!(fits.iter().all(|f| f.capacity_from == "gpus.toml"));
        assert_eq!(fits[0].headroom_bytes, 24_000_000_000 - 16_684_354_560);
        // One fits, so nothing needs spreading.
        assert_eq!(spread(&e, table()), None);
    }

    #[test]
    fn a_70b_training_job_is_spread_with_zero_3() {
        // 70B, BF16 AdamW: 16 × 70e9 = 1,120,000,000,000 bytes of model state; no single GPU.
        // The largest listed GPU is GB300 279 GB: room 279e9 − 536,870,912 (context) =
        // 278,463,129,088 per GPU; 1.12e12 / 278,463,129,088 = 4.02 → 5 GPUs.
        let e = estimate(&Workload::plain(
            70_000_000_000,
            Mode::Train,
            Precision::Bf16,
        ))
        .unwrap();
        assert!(smallest_listed(table(), e.total_bytes, 5).is_empty());
        let s = spread(&e, table()).unwrap();
        assert_eq!(s.gpu, "GB300 279 GB");
        assert_eq!(s.count, 5);
        assert!(s.how.starts_with("ZeRO-3 (rough"));
    }
}

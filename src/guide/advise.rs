//! Which GPU suits a workload, from the GPU table, and what this machine's GPUs can and cannot
//! do. Pure: the report and the manifests in, an [`Advice`] out.
//!
//! Every figure is a cell of `manifests/gpus.toml` (dense TFLOP/s, never the "with sparsity"
//! ones); an empty cell is shown as unknown. The two rules of thumb (the CUDA context in the
//! memory need, the power-supply headroom) are labelled as such in the output.

use serde::Serialize;

use super::memory::{self, Mode, Workload};
use super::precision::{Precision, Support, tensor_cores};
use crate::framework::FrameworkName;
use crate::manifest::{Gpu as GpuRow, Manifests, Segment, Tflops};
use crate::report::{Gpu, Report};
use crate::version::Version;

/// Power-supply headroom for a workstation: rated at least 1.5× the sustained draw of the GPUs
/// and the CPU. A rule of thumb (builders quote 1.25× to 2×), not a specification: GPUs draw
/// short spikes above their board power, and a supply runs cooler and more efficiently well
/// below its rating.
const PSU_HEADROOM_NUM: u32 = 3;
const PSU_HEADROOM_DEN: u32 = 2;

/// What the user asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Query {
    pub mode: Mode,
    pub params: Option<u64>,
    pub precision: Precision,
    /// Only cards of this market segment; null for all (Jetson modules are never listed).
    pub budget: Option<&'static str>,
}

/// A dense peak figure from the table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Throughput {
    /// The `gpus.toml` column: "bf16_tensor", "fp32", ...
    pub column: &'static str,
    /// Dense TFLOP/s; null where the table has no figure.
    pub tflops: Option<f64>,
}

/// A card of the table that suits the query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Card {
    pub name: String,
    pub segment: &'static str,
    pub compute_capability: String,
    /// The marketed size in GB (one card per size a model is sold in).
    pub memory_gb: u32,
    pub bandwidth_gbs: Option<f64>,
    pub tdp_w: Option<u32>,
    /// Dense peak for the chosen format; for FP32 both the CUDA-core and the TF32 figure.
    pub throughput: Vec<Throughput>,
    /// Whether the chosen format runs on tensor cores there.
    pub tensor_cores: Support,
    /// Whether the memory holds the model (null when no `--params` was given).
    pub fits: Option<bool>,
}

/// One format on one of this machine's GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct FormatSupport {
    pub format: &'static str,
    pub tensor_cores: Support,
}

/// What one of this machine's GPUs can and cannot do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct MachineGpu {
    pub index: u32,
    pub name: Option<String>,
    pub compute_capability: Option<String>,
    pub memory_mib: Option<u64>,
    /// The `gpus.toml` row it matched (by PCI device id, else by name).
    pub table_row: Option<String>,
    pub tdp_w: Option<u32>,
    /// FP16, BF16, TF32 and FP8 tensor cores.
    pub formats: Vec<FormatSupport>,
    /// What to use, with the setting that turns it on.
    pub can: Vec<String>,
    /// What it lacks, with what to do instead.
    pub cannot: Vec<String>,
    /// Whether the model of `--params` fits in its memory (null when not asked, or unknown).
    pub fits: Option<bool>,
}

/// The machine's GPU power and the power-supply rule of thumb.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Power {
    /// Sum of the board power (TDP) of the GPUs whose table row has one.
    pub gpu_tdp_sum_w: u32,
    /// GPUs whose TDP the table lacks ("GPU 1 (NVIDIA A10G)"), so the sum is partial.
    pub gpus_without_tdp: Vec<String>,
    /// Sum of the power limits the driver reported, when it reported one for every GPU.
    pub driver_power_limit_sum_w: Option<f64>,
    /// `1.5 × gpu_tdp_sum_w`, rounded up: the rule of thumb before adding the CPU.
    pub psu_rule_of_thumb_w: u32,
    /// Every GPU is a data-center part: the chassis vendor sizes the supplies.
    pub server: bool,
    pub note: String,
}

/// The answer to `gpu-doctor advise`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Advice {
    pub query: Query,
    /// Memory the model needs before activations and KV cache (model state plus the CUDA
    /// context rule of thumb): a lower bound; null without `--params`.
    pub needed_bytes: Option<u64>,
    pub cards: Vec<Card>,
    /// Cards of the segment whose memory is too small.
    pub cards_too_small: usize,
    /// Table rows of the segment with no memory figure, which cannot be judged.
    pub rows_without_memory: usize,
    pub machine: Vec<MachineGpu>,
    /// GPU builds of torch found on this machine ("2.11.0+cu130 in /opt/torch/.venv").
    pub torch_builds: Vec<String>,
    /// Null when the machine has no GPU.
    pub power: Option<Power>,
}

fn segment_name(s: Segment) -> &'static str {
    match s {
        Segment::Consumer => "consumer",
        Segment::Workstation => "workstation",
        Segment::Datacenter => "datacenter",
        Segment::Embedded => "embedded",
    }
}

/// The table columns that answer "how fast is this format here".
fn throughput(t: &Tflops, precision: Precision) -> Vec<Throughput> {
    match precision {
        Precision::Fp32 => vec![
            Throughput {
                column: "fp32",
                tflops: t.fp32,
            },
            Throughput {
                column: "tf32_tensor",
                tflops: t.tf32_tensor,
            },
        ],
        Precision::Bf16 => vec![Throughput {
            column: "bf16_tensor",
            tflops: t.bf16_tensor,
        }],
        Precision::Fp8 => vec![Throughput {
            column: "fp8_tensor",
            tflops: t.fp8_tensor,
        }],
        // Weight-only INT8/INT4 multiply in 16-bit.
        Precision::Fp16 | Precision::Int8 | Precision::Int4 => vec![Throughput {
            column: "fp16_tensor",
            tflops: t.fp16_tensor,
        }],
    }
}

/// The table row of one of the machine's GPUs: by PCI device id, else by reported name when
/// every row the name fits agrees on the compute capability (the H200 SXM and NVL rows do).
fn table_row<'a>(gpu: &Gpu, manifests: &'a Manifests) -> Option<&'a GpuRow> {
    if let Some(row) = gpu
        .pci_device_id
        .as_deref()
        .and_then(|id| manifests.gpus.by_pci_id(id))
    {
        return Some(row);
    }
    let rows = manifests.gpus.by_name(gpu.name.as_deref()?);
    match rows.as_slice() {
        [one] => Some(one),
        _ => None,
    }
}

/// Builds the advice.
///
/// # Errors
/// The memory estimate's refusals (`--train` with FP8, INT8 or INT4 and `--params`).
pub(crate) fn advise(
    report: &Report,
    manifests: &Manifests,
    mode: Mode,
    params: Option<u64>,
    precision: Precision,
    budget: Option<Segment>,
) -> Result<Advice, String> {
    let needed_bytes = match params {
        Some(params) => {
            let e = memory::estimate(&Workload::plain(params, mode, precision))?;
            Some(e.total_bytes)
        }
        None => None,
    };
    let rows: Vec<&GpuRow> = manifests
        .gpus
        .gpus
        .iter()
        .filter(|g| g.segment != Segment::Embedded)
        .filter(|g| budget.is_none_or(|b| g.segment == b))
        .collect();
    let rows_without_memory = rows.iter().filter(|g| g.memory_gb.is_empty()).count();
    let mut cards = Vec::new();
    let mut cards_too_small = 0;
    for row in &rows {
        let Some(cc) = Version::parse(&row.compute_capability) else {
            continue;
        };
        for gb in &row.memory_gb {
            let fits = needed_bytes.map(|need| u64::from(*gb) * 1_000_000_000 >= need);
            if fits == Some(false) {
                cards_too_small += 1;
                continue;
            }
            cards.push(Card {
                name: row.name.clone(),
                segment: segment_name(row.segment),
                compute_capability: row.compute_capability.clone(),
                memory_gb: *gb,
                bandwidth_gbs: row.bandwidth_gbs,
                tdp_w: row.tdp_w,
                throughput: throughput(&row.tflops, precision),
                tensor_cores: tensor_cores(&cc, precision),
                fits,
            });
        }
    }
    cards.sort_by(|a, b| (a.memory_gb, &a.name).cmp(&(b.memory_gb, &b.name)));

    let machine: Vec<MachineGpu> = report
        .gpus
        .iter()
        .map(|gpu| machine_gpu(gpu, table_row(gpu, manifests), needed_bytes))
        .collect();
    let torch_builds = report
        .python_envs
        .iter()
        .flat_map(|env| {
            env.frameworks
                .iter()
                .filter(|f| f.name == FrameworkName::Torch && f.variant.as_deref() == Some("cuda"))
                .map(move |f| {
                    format!(
                        "{} in {}",
                        f.version.as_deref().unwrap_or("unknown version"),
                        env.path
                    )
                })
        })
        .collect();
    let power = power(report, manifests);
    Ok(Advice {
        query: Query {
            mode,
            params,
            precision,
            budget: budget.map(segment_name),
        },
        needed_bytes,
        cards,
        cards_too_small,
        rows_without_memory,
        machine,
        torch_builds,
        power,
    })
}

/// What one GPU can and cannot do, by its compute capability.
fn machine_gpu(gpu: &Gpu, row: Option<&GpuRow>, needed: Option<u64>) -> MachineGpu {
    let name = gpu
        .name
        .clone()
        .or_else(|| row.map(|r| r.name.clone()))
        .unwrap_or_else(|| format!("GPU {}", gpu.index));
    let cc_text = gpu
        .compute_capability
        .clone()
        .or_else(|| row.map(|r| r.compute_capability.clone()));
    let cc = cc_text.as_deref().and_then(Version::parse);
    let mut formats = Vec::new();
    let mut can = Vec::new();
    let mut cannot = Vec::new();
    if let Some(cc) = &cc {
        let support = |p| tensor_cores(cc, p);
        let cc = cc.as_str();
        for (format, p) in [
            ("FP16", Precision::Fp16),
            ("BF16", Precision::Bf16),
            ("TF32", Precision::Fp32),
            ("FP8", Precision::Fp8),
        ] {
            formats.push(FormatSupport {
                format,
                tensor_cores: support(p),
            });
        }
        if support(Precision::Fp16) == Support::No {
            cannot.push(format!(
                "no tensor cores on a {name} (cc {cc}; they arrived with Volta, cc 7.0): FP16 and \
                 BF16 bring no tensor-core speed-up, so FP32 is the reference path"
            ));
        } else if support(Precision::Bf16) == Support::No {
            can.push(
                "FP16 tensor cores: train with `torch.autocast(\"cuda\", dtype=torch.float16)` and \
                 loss scaling (`torch.amp.GradScaler`)"
                    .to_string(),
            );
            cannot.push(format!(
                "no BF16 tensor cores on a {name} (cc {cc}; BF16 needs cc 8.0): use FP16 with \
                 loss scaling; BF16 checkpoints run after casting to FP16 (watch for overflow)"
            ));
            cannot.push(format!(
                "no TF32 on a {name}: FP32 matmuls run on the CUDA cores"
            ));
        } else {
            can.push(
                "BF16 tensor cores: `torch.autocast(\"cuda\", dtype=torch.bfloat16)`, no loss \
                 scaling needed"
                    .to_string(),
            );
            can.push(
                "TF32 tensor cores for FP32 models: `torch.set_float32_matmul_precision(\"high\")` \
                 or `torch.backends.cuda.matmul.allow_tf32 = True` (PyTorch leaves TF32 off for \
                 matmuls since 1.12; cuDNN convolutions use it by default)"
                    .to_string(),
            );
        }
        match support(Precision::Fp8) {
            Support::Yes => can.push(
                "FP8 tensor cores: FP8 training and inference through NVIDIA Transformer Engine, \
                 and FP8 checkpoints in serving engines"
                    .to_string(),
            ),
            Support::No if support(Precision::Fp16) == Support::Yes => cannot.push(format!(
                "no FP8 tensor cores on a {name} (FP8 needs cc 8.9, 9.0, 10.x or 12.x): use \
                 BF16/FP16, or INT8/INT4 weight-only quantisation to save memory"
            )),
            Support::No => {}
            Support::Unknown => cannot.push(format!(
                "FP8 tensor-core support for cc {cc} is not in gpu-doctor's sources"
            )),
        }
    } else {
        cannot.push(
            "compute capability unknown (no driver answer and no table row): cannot say which \
             formats run on tensor cores"
                .to_string(),
        );
    }
    let fits = match (needed, gpu.memory_total_mib) {
        (Some(need), Some(mib)) => mib.checked_mul(super::quantity::MIB).map(|cap| cap >= need),
        _ => None,
    };
    MachineGpu {
        index: gpu.index,
        name: gpu.name.clone(),
        compute_capability: cc_text,
        memory_mib: gpu.memory_total_mib,
        table_row: row.map(|r| r.name.clone()),
        tdp_w: row.and_then(|r| r.tdp_w),
        formats,
        can,
        cannot,
        fits,
    }
}

/// The GPUs' board power and the power-supply rule of thumb; `None` without GPUs.
fn power(report: &Report, manifests: &Manifests) -> Option<Power> {
    if report.gpus.is_empty() {
        return None;
    }
    let mut sum = 0_u32;
    let mut without = Vec::new();
    let mut all_server = true;
    for gpu in &report.gpus {
        let row = table_row(gpu, manifests);
        all_server &= row.is_some_and(|r| r.segment == Segment::Datacenter);
        match row.and_then(|r| r.tdp_w) {
            Some(w) => sum = sum.saturating_add(w),
            None => without.push(match &gpu.name {
                Some(name) => format!("GPU {} ({name})", gpu.index),
                None => format!("GPU {}", gpu.index),
            }),
        }
    }
    let limits: Option<Vec<f64>> = report.gpus.iter().map(|g| g.power_limit_w).collect();
    let rule = sum
        .saturating_mul(PSU_HEADROOM_NUM)
        .div_ceil(PSU_HEADROOM_DEN);
    let mut note = format!(
        "Rule of thumb, not a specification: a workstation's power supply rated at least 1.5× \
         the GPUs' board power plus the CPU's, for load spikes and efficiency: at least {rule} W \
         before the CPU here."
    );
    if !without.is_empty() {
        note.push_str(&format!(
            " The table has no board power for {}, so the sum is partial.",
            without.join(", ")
        ));
    }
    if all_server {
        note.push_str(
            " These are data-center GPUs: in a server the chassis vendor sizes the power \
             supplies for the GPUs it supports.",
        );
    }
    Some(Power {
        gpu_tdp_sum_w: sum,
        gpus_without_tdp: without,
        driver_power_limit_sum_w: limits.map(|l| l.iter().sum()),
        psu_rule_of_thumb_w: rule,
        server: all_server,
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Framework, PythonEnv};

    fn manifests() -> &'static Manifests {
        crate::manifest::embedded()
    }

    fn gpu(index: u32, name: &str, pci: &str, cc: &str, mib: u64, limit: f64) -> Gpu {
        Gpu {
            index,
            name: Some(name.into()),
            pci_device_id: Some(pci.into()),
            compute_capability: Some(cc.into()),
            memory_total_mib: Some(mib),
            power_limit_w: Some(limit),
            source: "nvidia-smi".into(),
            ..Gpu::default()
        }
    }

    fn t4() -> Gpu {
        gpu(0, "Tesla T4", "0x1eb8", "7.5", 15360, 70.0)
    }

    fn a100() -> Gpu {
        gpu(0, "NVIDIA A100-PCIE-40GB", "0x20f1", "8.0", 40960, 250.0)
    }

    fn h200() -> Gpu {
        gpu(0, "NVIDIA H200", "0x2335", "9.0", 143_771, 700.0)
    }

    fn rtx4090() -> Gpu {
        gpu(0, "NVIDIA GeForce RTX 4090", "0x2684", "8.9", 24564, 450.0)
    }

    fn on(gpus: Vec<Gpu>) -> Report {
        Report {
            gpus,
            ..Report::default()
        }
    }

    fn run(report: &Report, mode: Mode, params: Option<u64>, p: Precision) -> Advice {
        advise(report, manifests(), mode, params, p, None).unwrap()
    }

    fn support(g: &MachineGpu, format: &str) -> Support {
        g.formats
            .iter()
            .find(|f| f.format == format)
            .map(|f| f.tensor_cores)
            .unwrap()
    }

    #[test]
    fn a_t4_has_no_bf16_and_is_told_to_use_fp16_with_loss_scaling() {
        let a = run(&on(vec![t4()]), Mode::Train, None, Precision::Bf16);
        let g = &a.machine[0];
        assert_eq!(g.table_row.as_deref(), Some("Tesla T4"));
        assert_eq!(support(g, "FP16"), Support::Yes);
        assert_eq!(support(g, "BF16"), Support::No);
        assert_eq!(support(g, "TF32"), Support::No);
        assert_eq!(support(g, "FP8"), Support::No);
        let cannot = g.cannot.join("\n");
        assert!(
            cannot.contains("no BF16 tensor cores on a Tesla T4 (cc 7.5; BF16 needs cc 8.0): use FP16 with loss scaling"),
            "{cannot}"
        );
        assert!(
            g.can.iter().any(|c| c.contains("GradScaler")),
            "{:?}",
            g.can
        );
        // Power: T4 70 W (gpus.toml); 1.5 × 70 = 105 W; a data-center card.
        let p = a.power.unwrap();
        assert_eq!(p.gpu_tdp_sum_w, 70);
        assert_eq!(p.psu_rule_of_thumb_w, 105);
        assert_eq!(p.driver_power_limit_sum_w, Some(70.0));
        assert!(p.server);
        assert!(p.note.starts_with("Rule of thumb"), "{}", p.note);
    }

    #[test]
    fn an_a100_has_bf16_and_tf32_but_no_fp8() {
        let a = run(&on(vec![a100()]), Mode::Train, None, Precision::Fp8);
        let g = &a.machine[0];
        assert_eq!(g.table_row.as_deref(), Some("A100 40GB PCIe"));
        assert_eq!(g.tdp_w, Some(250));
        assert_eq!(support(g, "BF16"), Support::Yes);
        assert_eq!(support(g, "TF32"), Support::Yes);
        assert_eq!(support(g, "FP8"), Support::No);
        assert!(
            g.can
                .iter()
                .any(|c| c.contains("set_float32_matmul_precision"))
        );
        assert!(
            g.cannot
                .iter()
                .any(|c| c.starts_with("no FP8 tensor cores on a NVIDIA A100-PCIE-40GB"))
        );
        // Every listed FP8 card is Ada or newer with FP8 tensor cores; the A100 rows say no.
        let a100_card = a.cards.iter().find(|c| c.name == "A100 40GB PCIe").unwrap();
        assert_eq!(a100_card.tensor_cores, Support::No);
        assert_eq!(a100_card.throughput[0].column, "fp8_tensor");
        assert_eq!(a100_card.throughput[0].tflops, None);
    }

    #[test]
    fn an_h200_does_everything_and_a_7b_bf16_training_fits() {
        // 7B BF16 AdamW: 112,000,000,000 + 536,870,912 = 112,536,870,912 bytes before
        // activations; the H200 reports 143771 MiB = 150,754,820,096 bytes.
        let a = run(
            &on(vec![h200()]),
            Mode::Train,
            Some(7_000_000_000),
            Precision::Bf16,
        );
        assert_eq!(a.needed_bytes, Some(112_536_870_912));
        let g = &a.machine[0];
        assert_eq!(g.table_row.as_deref(), Some("H200 SXM"));
        assert_eq!(g.fits, Some(true));
        assert!(g.cannot.is_empty(), "{:?}", g.cannot);
        assert!(g.can.iter().any(|c| c.contains("FP8 tensor cores")));
        // Cards that hold 112.5e9 bytes: 141 GB and up, smallest first.
        let names: Vec<String> = a
            .cards
            .iter()
            .map(|c| format!("{} {}", c.name, c.memory_gb))
            .collect();
        assert_eq!(
            names,
            [
                "H200 NVL 141",
                "H200 SXM 141",
                "B200 180",
                "B300 270",
                "GB300 279"
            ]
        );
        let h200_sxm = &a.cards[1];
        assert_eq!(h200_sxm.bandwidth_gbs, Some(4800.0));
        assert_eq!(h200_sxm.tdp_w, Some(700));
        assert_eq!(
            h200_sxm.throughput,
            [Throughput {
                column: "bf16_tensor",
                tflops: Some(989.0)
            }]
        );
        assert_eq!(h200_sxm.tensor_cores, Support::Yes);
        // The H200 NVL row has no throughput figures: unknown, not zero.
        assert_eq!(a.cards[0].throughput[0].tflops, None);
        assert!(a.cards_too_small > 0);
        let p = a.power.unwrap();
        assert_eq!((p.gpu_tdp_sum_w, p.psu_rule_of_thumb_w), (700, 1050));
    }

    #[test]
    fn an_rtx_4090_workstation_with_a_budget() {
        // 7B FP16 inference: 14e9 + 536,870,912 = 14,536,870,912 bytes; the 4090 has 24564 MiB.
        let mut r = on(vec![rtx4090(), {
            let mut second = rtx4090();
            second.index = 1;
            second
        }]);
        r.python_envs = vec![PythonEnv {
            path: "/home/kai/.venv".into(),
            frameworks: vec![Framework {
                name: "torch".into(),
                version: Some("2.5.1+cu124".into()),
                variant: Some("cuda".into()),
                ..Framework::default()
            }],
            ..PythonEnv::default()
        }];
        let a = advise(
            &r,
            manifests(),
            Mode::Infer,
            Some(7_000_000_000),
            Precision::Fp16,
            Some(Segment::Consumer),
        )
        .unwrap();
        assert_eq!(a.query.budget, Some("consumer"));
        assert!(a.cards.iter().all(|c| c.segment == "consumer"));
        // Consumer cards with 16 GB or more (16e9 ≥ 14.54e9): 4080, 5070 Ti, 5080 (16 GB), 3090,
        // 4090 (24 GB), 5090 (32 GB).
        let names: Vec<&str> = a.cards.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "GeForce RTX 4080",
                "GeForce RTX 5070 Ti",
                "GeForce RTX 5080",
                "GeForce RTX 3090",
                "GeForce RTX 4090",
                "GeForce RTX 5090"
            ]
        );
        assert!(a.machine.iter().all(|g| g.fits == Some(true)));
        assert_eq!(a.torch_builds, ["2.5.1+cu124 in /home/kai/.venv"]);
        // Two 4090s: 2 × 450 W = 900 W board power; rule of thumb 1,350 W before the CPU.
        let p = a.power.unwrap();
        assert_eq!((p.gpu_tdp_sum_w, p.psu_rule_of_thumb_w), (900, 1350));
        assert!(!p.server);
        assert!(!p.note.contains("data-center"));
    }

    #[test]
    fn unknown_gpus_and_missing_cells_stay_unknown() {
        let mut mystery = gpu(0, "NVIDIA A10G", "0x2237", "8.6", 23028, 300.0);
        mystery.compute_capability = None;
        let a = run(&on(vec![mystery]), Mode::Infer, None, Precision::Bf16);
        let g = &a.machine[0];
        assert_eq!(g.table_row, None);
        assert!(g.formats.is_empty());
        assert!(g.cannot[0].starts_with("compute capability unknown"));
        let p = a.power.unwrap();
        assert_eq!(p.gpus_without_tdp, ["GPU 0 (NVIDIA A10G)"]);
        assert!(p.note.contains("partial"));
        // Without --params nothing is judged for fit, and every card with a memory figure is
        // listed.
        assert!(a.cards.iter().all(|c| c.fits.is_none()));
        assert_eq!(a.cards_too_small, 0);
        assert!(
            run(&Report::default(), Mode::Infer, None, Precision::Bf16)
                .power
                .is_none()
        );
    }

    #[test]
    fn training_in_int4_with_params_is_refused() {
        assert!(
            advise(
                &Report::default(),
                manifests(),
                Mode::Train,
                Some(7_000_000_000),
                Precision::Int4,
                None
            )
            .is_err()
        );
    }
}

//! Is the hardware healthy and set up to run at full speed? Judged from what the driver (NVML or
//! `nvidia-smi -q -x`) reported per GPU. Findings: `gpu-thermal-throttle`, `gpu-ecc-errors`,
//! `pcie-link-degraded`, `mixed-gpu-models`.
//!
//! Each rule gives one finding for the whole machine, with every affected GPU in its evidence
//! and subjects: eight GPUs in one hot chassis are one problem, not eight.
//!
//! A reading the driver did not give is never taken for a good or a bad one: a rule only judges
//! the facts it has, so a GPU seen only on the PCI bus (no driver) is judged by none of these.

use super::FindingBuilder;
use super::ids;
use crate::manifest::Manifests;
use crate::report::{EnvVar, Finding, Gpu, Report, Severity};
use crate::version::Version;

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(thermal_throttle(report));
    out.extend(ecc_errors(report));
    out.extend(pcie_link(report));
    out.extend(mixed_models(report, manifests));
    out
}

/// "GPU 0 (NVIDIA A100-SXM4-40GB)", or "GPU 0" when the driver gave no name.
pub(super) fn gpu_label(gpu: &Gpu) -> String {
    match &gpu.name {
        Some(name) => format!("GPU {} ({name})", gpu.index),
        None => format!("GPU {}", gpu.index),
    }
}

/// "GPU 0 is" / "GPUs 0, 3 are": the subject of a title about several GPUs.
pub(super) fn gpus_are(gpus: &[&Gpu]) -> String {
    let verb = if gpus.len() == 1 { "is" } else { "are" };
    format!("{} {verb}", gpus_named(gpus))
}

/// "GPU 0" or "GPUs 0, 1": the subject of a sentence whose verb has no number (`had`).
pub(super) fn gpus_named(gpus: &[&Gpu]) -> String {
    let indices: Vec<String> = gpus.iter().map(|g| g.index.to_string()).collect();
    if indices.len() == 1 {
        format!("GPU {}", indices.join(""))
    } else {
        format!("GPUs {}", indices.join(", "))
    }
}

/// The GPUs a driver described: rules about live readings skip GPUs known only from the PCI
/// bus (no readings) or described by `GPU_DOCTOR_*` overrides (not this machine's readings).
pub(super) fn driver_gpus(report: &Report) -> impl Iterator<Item = &Gpu> {
    report
        .gpus
        .iter()
        .filter(|g| g.source == "nvml" || g.source == "nvidia-smi")
}

// ---------------------------------------------------------------------------------------------
// gpu-thermal-throttle

/// Reasons that always mean the GPU cut its own clocks to protect itself (NVML
/// `nvmlClocksEventReasons`): the GPU or its memory is over its operating temperature
/// (`sw_thermal_slowdown`), the hardware thermal brake is on (`hw_thermal_slowdown`), or the
/// system's power supply asserted the external power brake (`hw_power_brake_slowdown`). Each
/// costs speed for as long as it lasts, so each is worth a warning.
const PROTECTIVE_REASONS: [&str; 3] = [
    "hw_thermal_slowdown",
    "sw_thermal_slowdown",
    "hw_power_brake_slowdown",
];

/// `hw_slowdown` halves the clocks or more for heat, a power brake or a power spike, but NVML
/// documents that it "may be also reported during PState or clock change": on an idle, cool GPU
/// it alone proves nothing, so it counts only on a busy GPU or one at its slowdown temperature.
const HW_SLOWDOWN: &str = "hw_slowdown";

/// Not judged: `sw_power_cap` (the normal way a loaded GPU holds its power limit; idle GPUs
/// show it too), `applications_clocks_setting` and `display_clocks_setting` (settings, not
/// faults), `sync_boost` (a deliberate group setting) and `gpu_idle` (the probe drops it).
fn slowdown_reasons(gpu: &Gpu) -> Vec<&str> {
    let has = |reason: &str| gpu.throttle_reasons.iter().any(|r| r == reason);
    let mut reasons: Vec<&str> = PROTECTIVE_REASONS
        .iter()
        .copied()
        .filter(|r| has(r))
        .collect();
    let at_slowdown_temperature = matches!(
        (gpu.temperature_c, gpu.temperature_slowdown_c),
        (Some(t), Some(limit)) if t >= limit
    );
    let busy = gpu.utilization_pct.is_some_and(|u| u > 0);
    if has(HW_SLOWDOWN) && (!reasons.is_empty() || busy || at_slowdown_temperature) {
        reasons.insert(0, HW_SLOWDOWN);
    }
    reasons
}

fn thermal_throttle(report: &Report) -> Option<Finding> {
    let hit: Vec<(&Gpu, Vec<&str>)> = driver_gpus(report)
        .map(|g| (g, slowdown_reasons(g)))
        .filter(|(_, reasons)| !reasons.is_empty())
        .collect();
    if hit.is_empty() {
        return None;
    }
    let all: Vec<&str> = hit.iter().flat_map(|(_, r)| r.iter().copied()).collect();
    let thermal = all.iter().any(|r| r.contains("thermal"));
    let brake = all.contains(&"hw_power_brake_slowdown");
    let cause = match (thermal, brake) {
        (true, true) => "too hot, and the power supply is braking it",
        (true, false) => "too hot",
        (false, true) => "the power supply is braking it",
        (false, false) => "hardware slowdown",
    };
    let gpus: Vec<&Gpu> = hit.iter().map(|(g, _)| *g).collect();
    let mut f = FindingBuilder::new(
        &ids::GPU_THERMAL_THROTTLE,
        Severity::Warning,
        format!(
            "{} throttling {} clocks: {cause}",
            gpus_are(&gpus),
            if gpus.len() == 1 { "its" } else { "their" }
        ),
    )
    .detail(throttle_detail(thermal, brake));
    for (gpu, reasons) in &hit {
        let label = gpu_label(gpu);
        f = f.evidence(format!(
            "{label}: active slowdown reasons {}",
            reasons.join(", ")
        ));
        if let Some(t) = gpu.temperature_c {
            f = f.evidence(match gpu.temperature_slowdown_c {
                Some(limit) => format!("{label}: temperature {t} °C (slowdown at {limit} °C)"),
                None => format!("{label}: temperature {t} °C (slowdown threshold not reported)"),
            });
        }
        if let (Some(now), Some(max)) = (gpu.clock_sm_mhz, gpu.clock_sm_max_mhz) {
            f = f.evidence(format!(
                "{label}: SM clock {now} MHz of {max} MHz max{}",
                percent(now, max).map_or(String::new(), |p| format!(" ({p}%)"))
            ));
        }
        if let Some(draw) = gpu.power_draw_w {
            f = f.evidence(match gpu.power_limit_w {
                Some(limit) => format!("{label}: power draw {draw:.1} W of {limit:.1} W limit"),
                None => format!("{label}: power draw {draw:.1} W"),
            });
        }
        if let Some(u) = gpu.utilization_pct {
            f = f.evidence(format!("{label}: utilization {u}%"));
        }
        f = f.subject(gpu.subject());
    }
    let first = gpus.first().map_or(0, |g| g.index);
    let mut fix = String::from(
        "Watch it under load with `nvidia-smi -q -d TEMPERATURE,PERFORMANCE -l 5`. Improve \
         cooling: clean dust from heatsinks and fans, make sure the case or rack moves air \
         through the cards (fan curves, blanking panels, a free slot between GPUs), and keep \
         the room or inlet air cool.",
    );
    if brake {
        fix.push_str(
            " For the power brake: check that the power supply is rated for all GPUs at full \
             load and that every PCIe power connector is plugged in with its own cable (no \
             splitters).",
        );
    }
    fix.push_str(&format!(
        " As a stopgap, a lower power limit keeps the GPU cooler at a small speed cost: \
         `sudo nvidia-smi -i {first} -pl <watts>`."
    ));
    Some(f.fix(fix).build())
}

/// What the active reasons mean, in the user's terms: only the causes that are present.
fn throttle_detail(thermal: bool, brake: bool) -> String {
    let mut text = String::from(
        "The GPU is cutting its own clock speed to protect itself, so training and inference run \
         slower than the card can.",
    );
    if thermal {
        text.push_str(
            " The GPU or its memory reached its temperature limit: blocked or dusty fans, poor \
             case or rack airflow, cards packed without space between them, or a hot room.",
        );
    }
    if brake {
        text.push_str(
            " The system's power supply asserted the power brake because it cannot deliver the \
             power the GPU draws.",
        );
    }
    if !thermal && !brake {
        text.push_str(
            " Hardware slowdown cuts the clocks by half or more; it is triggered by high \
             temperature, a power brake from the power supply, or power spikes.",
        );
    }
    text
}

/// `part` as a whole percentage of `whole`, when `whole` is not zero.
fn percent(part: u32, whole: u32) -> Option<u64> {
    (whole > 0).then(|| u64::from(part) * 100 / u64::from(whole))
}

// ---------------------------------------------------------------------------------------------
// gpu-ecc-errors

/// One memory problem of one GPU, with how bad it is and what to do about it.
struct EccProblem {
    severity: Severity,
    evidence: String,
    fixes: &'static [EccFix],
}

/// The steps that fix memory problems, in the order the fix text gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum EccFix {
    Reset,
    Rerun,
    Service,
    Watch,
}

impl EccFix {
    /// The step for the GPUs `indices` ("0", "0, 2").
    fn text(self, indices: &[u32]) -> String {
        match self {
            EccFix::Reset => {
                let cmds: Vec<String> = indices
                    .iter()
                    .map(|i| format!("`sudo nvidia-smi -r -i {i}`"))
                    .collect();
                format!(
                    "Reset the GPU so the memory repair takes effect: stop every process using \
                     it, then {} (or reboot).",
                    cmds.join(" and ")
                )
            }
            EccFix::Rerun => "Jobs that ran on it were stopped or may have computed wrong \
                              results: rerun them after the reset. `sudo dmesg | grep -i xid` \
                              shows the memory events (Xid 48, 63, 64, 94, 95)."
                .to_string(),
            EccFix::Service => {
                let list: Vec<String> = indices.iter().map(ToString::to_string).collect();
                format!(
                    "GPU {} has no spare memory rows left: take it out of service and contact \
                     your vendor for a replacement (attach the output of \
                     `sudo nvidia-bug-report.sh`).",
                    list.join(", ")
                )
            }
            EccFix::Watch => "Watch the counters with \
                              `nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT`; if they grow, \
                              run `dcgmi diag -r 3` and contact your vendor."
                .to_string(),
        }
    }
}

/// The memory problems of one GPU.
///
/// Errors: uncorrectable errors since the driver loaded (the process that hit them was killed
/// and the GPU may need a reset, Xid 48/94/95), a page retirement or row remapping waiting for
/// a reset (DCGM's level-1 "Page Retirement/Row Remap" check fails on these), and a failed row
/// remapping (the GPU has no spare rows left; NVIDIA treats it as a service case).
///
/// A warning: uncorrectable errors only in the lifetime (aggregate) counter. They happened
/// before the current driver load and retirement or remapping has handled them, so the GPU
/// works now; it is worth watching, not an emergency.
///
/// Corrected (single-bit) errors are not judged: ECC fixed them, and NVIDIA documents no count
/// that means a failing GPU, so any threshold here would be invented. Retired page counts are
/// shown only as evidence, for the same reason.
fn ecc_problems(gpu: &Gpu) -> Vec<EccProblem> {
    let ecc = &gpu.ecc;
    let mut out = Vec::new();
    if let Some(n) = ecc.volatile_uncorrected.filter(|n| *n > 0) {
        out.push(EccProblem {
            severity: Severity::Error,
            evidence: format!("{n} uncorrectable ECC error(s) since the driver loaded"),
            fixes: &[EccFix::Reset, EccFix::Rerun],
        });
    }
    if ecc.retired_pending == Some(true) {
        out.push(EccProblem {
            severity: Severity::Error,
            evidence: "a page retirement is pending (needs a reset)".to_string(),
            fixes: &[EccFix::Reset],
        });
    }
    if ecc.remapped_pending == Some(true) {
        out.push(EccProblem {
            severity: Severity::Error,
            evidence: "a row remapping is pending (needs a reset)".to_string(),
            fixes: &[EccFix::Reset],
        });
    }
    if ecc.remapped_failure == Some(true) {
        out.push(EccProblem {
            severity: Severity::Error,
            evidence: "row remapping failed".to_string(),
            fixes: &[EccFix::Service],
        });
    }
    if out.is_empty()
        && let Some(n) = ecc.aggregate_uncorrected.filter(|n| *n > 0)
    {
        out.push(EccProblem {
            severity: Severity::Warning,
            evidence: format!(
                "{n} uncorrectable ECC error(s) in the GPU's lifetime, none since the driver loaded"
            ),
            fixes: &[EccFix::Watch],
        });
    }
    out
}

fn ecc_errors(report: &Report) -> Option<Finding> {
    let hit: Vec<(&Gpu, Vec<EccProblem>)> = driver_gpus(report)
        .map(|g| (g, ecc_problems(g)))
        .filter(|(_, p)| !p.is_empty())
        .collect();
    let severity = hit
        .iter()
        .flat_map(|(_, p)| p.iter().map(|p| p.severity))
        .min()?;
    let gpus: Vec<&Gpu> = hit.iter().map(|(g, _)| *g).collect();
    let (title, detail) = if severity == Severity::Error {
        (
            format!("{} reporting GPU memory (ECC) errors", gpus_are(&gpus)),
            "The GPU's memory returned data that ECC could not correct, or a repair of bad \
             memory is waiting for a GPU reset or has failed. A CUDA program that touches the \
             bad memory is stopped with \"uncorrectable ECC error encountered\", and until the \
             GPU is reset new programs may fail on it too.",
        )
    } else {
        (
            format!(
                "{} had GPU memory (ECC) errors in the past",
                gpus_named(&gpus)
            ),
            "The GPU's lifetime counters show memory errors that ECC could not correct. None \
             happened since the driver loaded and the bad memory has been retired or remapped, \
             so the GPU works now; a count that keeps growing means the memory is failing.",
        )
    };
    let mut f = FindingBuilder::new(&ids::GPU_ECC_ERRORS, severity, title).detail(detail);
    let mut fixes: Vec<(EccFix, Vec<u32>)> = Vec::new();
    for (gpu, problems) in &hit {
        let label = gpu_label(gpu);
        for p in problems {
            f = f.evidence(format!("{label}: {}", p.evidence));
            for step in p.fixes {
                match fixes.iter_mut().find(|(s, _)| s == step) {
                    // One GPU's problems come together: it is the last one added if at all.
                    Some((_, gpus)) if gpus.last() == Some(&gpu.index) => {}
                    Some((_, gpus)) => gpus.push(gpu.index),
                    None => fixes.push((*step, vec![gpu.index])),
                }
            }
        }
        let ecc = &gpu.ecc;
        if let Some(n) = ecc.retired_pages.filter(|n| *n > 0) {
            f = f.evidence(format!("{label}: {n} page(s) retired"));
        }
        if let Some(n) = ecc.remapped_uncorrectable.filter(|n| *n > 0) {
            f = f.evidence(format!(
                "{label}: {n} row(s) remapped after uncorrectable errors"
            ));
        }
        f = f.subject(gpu.subject());
    }
    fixes.sort_by_key(|(step, _)| *step);
    let fix: Vec<String> = fixes
        .iter()
        .map(|(step, indices)| step.text(indices))
        .collect();
    // Resetting a GPU is the host's step; the others are the user's.
    let reset = fixes.iter().any(|(step, _)| *step == EccFix::Reset);
    Some(f.fix_on_host_if(reset).fix(fix.join(" ")).build())
}

// ---------------------------------------------------------------------------------------------
// pcie-link-degraded

/// Usable bandwidth of one PCIe lane per generation, in GB/s after line encoding (8b/10b for
/// gen 1-2, 128b/130b for gen 3-5, FLIT for gen 6): the figures of the PCIe specifications.
const LANE_GBS: [f64; 6] = [0.25, 0.5, 0.985, 1.969, 3.938, 7.563];

fn lane_gbs(generation: u32) -> Option<f64> {
    let i = usize::try_from(generation.checked_sub(1)?).ok()?;
    LANE_GBS.get(i).copied()
}

/// Whether the GPU is doing work, so that its link must be at full speed.
///
/// GPUs lower the PCIe link generation when idle to save power (the RTX 4090 and A10G of this
/// repository's fixtures idle at gen 1 of 4), and an idle reading of the width is not trusted
/// either: a pass-through VM shows a narrower link at idle than NVML's maximum (the g5.xlarge
/// A10G fixture, x8 of x16) while nothing is wrong. So only a busy GPU is judged: utilization
/// above zero, and SM clocks at least half of their maximum when both are known. The clock test
/// tells a GPU in a performance state (P0/P2, where the driver raises the link to full speed)
/// from one idling in P8 under a light desktop load, whose SM clock sits near a tenth of its
/// maximum (210 of 3120 MHz on the RTX 4090, 210 of 1710 MHz on the A10G).
fn busy(gpu: &Gpu) -> bool {
    let working = gpu.utilization_pct.is_some_and(|u| u > 0);
    let clocked_up = match (gpu.clock_sm_mhz, gpu.clock_sm_max_mhz) {
        (Some(now), Some(max)) if max > 0 => u64::from(now) * 2 >= u64::from(max),
        _ => true,
    };
    working && clocked_up
}

/// A GPU's link, each value from the driver, else from the PCI bus (sysfs) for the same device.
struct Link {
    gen_current: u32,
    gen_max: u32,
    width_current: u32,
    width_max: u32,
}

fn link(report: &Report, gpu: &Gpu) -> Option<Link> {
    let bus = report.pci_devices.iter().find(|d| {
        gpu.pci_bus_id
            .as_deref()
            .is_some_and(|id| same_bus_id(id, &d.address))
    });
    Some(Link {
        gen_current: gpu
            .pcie_gen_current
            .or_else(|| bus.and_then(|b| b.link_gen_current))?,
        gen_max: gpu
            .pcie_gen_max
            .or_else(|| bus.and_then(|b| b.link_gen_max))?,
        width_current: gpu
            .pcie_width_current
            .or_else(|| bus.and_then(|b| b.link_width_current))?,
        width_max: gpu
            .pcie_width_max
            .or_else(|| bus.and_then(|b| b.link_width_max))?,
    })
}

/// `00000000:01:00.0` (NVML) and `0000:01:00.0` (sysfs) name the same device.
fn same_bus_id(a: &str, b: &str) -> bool {
    let norm = |id: &str| {
        let id = id.to_ascii_lowercase();
        match id.split_once(':') {
            Some((domain, rest)) => format!("{:0>8}:{rest}", domain.trim_start_matches('0')),
            None => id,
        }
    };
    norm(a) == norm(b)
}

/// The bus id as `lspci -s` takes it: `0000:01:00.0`.
fn lspci_id(bus_id: &str) -> String {
    match bus_id.split_once(':') {
        Some((domain, rest)) => {
            let short = domain
                .get(domain.len().saturating_sub(4)..)
                .unwrap_or(domain);
            format!("{short}:{rest}")
        }
        None => bus_id.to_string(),
    }
}

/// A busy GPU whose link runs below its maximum generation or width.
///
/// The driver's maximum is what "this device and system" can do (NVML
/// `nvmlDeviceGetMaxPcieLinkGeneration`/`Width`: a gen 4 GPU in a gen 3 board reports 3, an x16
/// GPU in an x8 slot reports 8), so a slot that is narrower by design is not flagged; what is
/// flagged is a link that trained below what both ends support. Values from sysfs (used only
/// when the driver gave none) are the GPU's own maximum, a slightly weaker test.
fn pcie_link(report: &Report) -> Option<Finding> {
    let hit: Vec<(&Gpu, Link)> = driver_gpus(report)
        .filter(|g| busy(g))
        .filter_map(|g| link(report, g).map(|l| (g, l)))
        .filter(|(_, l)| l.gen_current < l.gen_max || l.width_current < l.width_max)
        .collect();
    if hit.is_empty() {
        return None;
    }
    let gpus: Vec<&Gpu> = hit.iter().map(|(g, _)| *g).collect();
    let summary = hit.first().map_or_else(String::new, |(_, l)| {
        format!(
            "gen {} x{} of gen {} x{}",
            l.gen_current, l.width_current, l.gen_max, l.width_max
        )
    });
    let title = if hit.len() == 1 {
        format!(
            "{} running on a slower PCIe link than it supports ({summary})",
            gpus_are(&gpus)
        )
    } else {
        format!(
            "{} running on slower PCIe links than they support",
            gpus_are(&gpus)
        )
    };
    let mut f = FindingBuilder::new(&ids::PCIE_LINK_DEGRADED, Severity::Warning, title).detail(
        "The GPU is busy, yet its PCIe link trained below the speed or width that both the \
         GPU and the slot support, so copies between host and GPU (data loading, CPU \
         offload, multi-GPU traffic without NVLink) run slower. Usual causes: the card is not \
         fully seated, a riser or extension cable that cannot hold the full signal, a BIOS \
         setting that limits the slot's generation, or a dirty or damaged connector. In a VM \
         or cloud instance the link may be narrower by design.",
    );
    let mut ids = Vec::new();
    for (gpu, l) in &hit {
        let label = gpu_label(gpu);
        let mut line = format!(
            "{label}: PCIe gen {} of {}, width x{} of x{}",
            l.gen_current, l.gen_max, l.width_current, l.width_max
        );
        if let (Some(now), Some(max)) = (
            lane_gbs(l.gen_current).map(|b| b * f64::from(l.width_current)),
            lane_gbs(l.gen_max).map(|b| b * f64::from(l.width_max)),
        ) {
            line.push_str(&format!(" (about {now:.0} of {max:.0} GB/s each way)"));
        }
        f = f.evidence(line);
        let mut load = Vec::new();
        if let Some(u) = gpu.utilization_pct {
            load.push(format!("utilization {u}%"));
        }
        if let (Some(now), Some(max)) = (gpu.clock_sm_mhz, gpu.clock_sm_max_mhz) {
            load.push(format!("SM clock {now} of {max} MHz"));
        }
        if !load.is_empty() {
            f = f.evidence(format!(
                "{label}: {} (busy, so the link should be at full speed)",
                load.join(", ")
            ));
        }
        if let Some(bus) = &gpu.pci_bus_id {
            ids.push(lspci_id(bus));
        }
        f = f.subject(gpu.subject());
    }
    let lspci = ids.first().map_or_else(
        || "sudo lspci -vv -d 10de: | grep -E 'LnkCap|LnkSta'".to_string(),
        |id| format!("sudo lspci -vv -s {id} | grep -E 'LnkCap|LnkSta'"),
    );
    Some(
        f.fix(format!(
            "Confirm under load with `nvidia-smi -q -d PCIE` and `{lspci}` (LnkSta shows the trained \
             speed and width and says \"downgraded\"). Then reseat the card directly in a \
             CPU-attached x16 slot without riser, set the slot to Auto or its highest generation \
             in the BIOS."
        ))
        .build(),
    )
}

// ---------------------------------------------------------------------------------------------
// mixed-gpu-models

/// The model a GPU is, for comparing GPUs: the driver's name, else the GPU table's name for its
/// PCI device id; `None` when neither is known (then it is not compared).
fn model(gpu: &Gpu, manifests: &Manifests) -> Option<String> {
    gpu.name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .or_else(|| {
            gpu.pci_device_id
                .as_deref()
                .and_then(|id| manifests.gpus.by_pci_id(id))
                .map(|row| row.name.clone())
        })
}

/// A GPU's compute capability, from the driver or the GPU table.
fn capability(gpu: &Gpu, manifests: &Manifests) -> Option<String> {
    gpu.compute_capability.clone().or_else(|| {
        gpu.pci_device_id
            .as_deref()
            .and_then(|id| manifests.gpus.by_pci_id(id))
            .map(|row| row.compute_capability.clone())
    })
}

/// The lowest compute capability CUDA 12 compiles for (`cuda.toml` `[[major]]` 12's `min_sm`:
/// 12.0 removed Kepler, compat-cuda.md R6); below it no current framework build runs.
fn cuda12_min_sm(manifests: &Manifests) -> Option<&str> {
    manifests.cuda.major(12).map(|m| m.min_sm.as_str())
}

/// Below CUDA 12's lowest compute capability ([`cuda12_min_sm`]).
fn below_cuda12(gpu: &Gpu, manifests: &Manifests) -> bool {
    capability(gpu, manifests)
        .as_deref()
        .and_then(Version::parse)
        .zip(cuda12_min_sm(manifests).and_then(Version::parse))
        .is_some_and(|(cc, min)| cc < min)
}

/// Data-parallel training (DDP, FSDP, Horovod, `jax.pmap`) steps all GPUs in lockstep, so a
/// job spread over different models runs at the slowest one's pace and is limited by the
/// smallest one's memory; frameworks also pick "GPU 0" by speed order, not bus order. Any two
/// different models is worth a warning: there is no threshold to choose, the pace is set by
/// the slowest card whatever the gap.
///
/// Not judged when `CUDA_VISIBLE_DEVICES` already narrows the set to one GPU, or names GPUs by
/// UUID that are all one model: then programs see only one model.
fn mixed_models(report: &Report, manifests: &Manifests) -> Option<Finding> {
    let all: Vec<(&Gpu, String)> = report
        .nvidia_gpus()
        .filter(|g| g.source != "override")
        .filter_map(|g| model(g, manifests).map(|m| (g, m)))
        .collect();
    // A card no CUDA 12 framework computes on (compute capability below CUDA 12's lowest, e.g.
    // a GT 710 driving the display) is never in a data-parallel job beside compute GPUs.
    let (known, display_only): (Vec<_>, Vec<_>) = all
        .into_iter()
        .partition(|(g, _)| !below_cuda12(g, manifests));
    let mut groups: Vec<(String, Vec<&Gpu>)> = Vec::new();
    for (gpu, name) in &known {
        match groups.iter_mut().find(|(n, _)| n == name) {
            Some((_, list)) => list.push(gpu),
            None => groups.push((name.clone(), vec![gpu])),
        }
    }
    if groups.len() < 2 {
        return None;
    }
    let visible = report
        .environment
        .iter()
        .find(|v| v.name == "CUDA_VISIBLE_DEVICES");
    if visible.is_some_and(|v| narrows_to_one_model(v, &known)) {
        return None;
    }
    // Inside a container the PCI bus is the host's: the GPUs this container was given are
    // NVIDIA_VISIBLE_DEVICES's, by index or UUID (NVIDIA/nvidia-container-toolkit#1227: a pod
    // given one GPU of a host with A10s and T4s).
    let given = report
        .environment
        .iter()
        .find(|v| v.name == "NVIDIA_VISIBLE_DEVICES");
    if report.host.container.is_some() && given.is_some_and(|v| given_one_model(v, &known)) {
        return None;
    }
    let names: Vec<String> = groups
        .iter()
        .map(|(name, list)| format!("{}x {name}", list.len()))
        .collect();
    let mut f = FindingBuilder::new(
        &ids::MIXED_GPU_MODELS,
        Severity::Warning,
        format!("Different GPU models in one machine: {}", names.join(", ")),
    )
    .detail(
        "A job that trains on all GPUs at once (data parallel: DDP, FSDP, DeepSpeed, Horovod) \
         waits for the slowest GPU at every step and must fit the smallest GPU's memory, so \
         the faster GPUs idle part of the time. CUDA also numbers GPUs fastest first by \
         default, so \"GPU 0\" in a program need not be GPU 0 in nvidia-smi.",
    );
    for (gpu, name) in &display_only {
        f = f.evidence(format!(
            "GPU {}: {name} left out: compute capability {}, below the {} CUDA 12 needs, so \
             frameworks do not compute on it",
            gpu.index,
            capability(gpu, manifests).unwrap_or_default(),
            cuda12_min_sm(manifests).unwrap_or_default()
        ));
    }
    for (gpu, name) in &known {
        let mut facts = Vec::new();
        if let Some(cc) = &gpu.compute_capability {
            facts.push(format!("compute capability {cc}"));
        }
        if let Some(mib) = gpu.memory_total_mib {
            facts.push(format!("{mib} MiB"));
        }
        if let Some(bus) = &gpu.pci_bus_id {
            facts.push(bus.clone());
        }
        let facts = if facts.is_empty() {
            String::new()
        } else {
            format!(" ({})", facts.join(", "))
        };
        f = f
            .evidence(format!("GPU {}: {name}{facts}", gpu.index))
            .subject(gpu.subject());
    }
    if let Some(v) = visible {
        f = f.evidence(format!(
            "CUDA_VISIBLE_DEVICES={} (indices count fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID)",
            v.value
        ));
    }
    let choices: Vec<String> = groups
        .iter()
        .map(|(name, list)| {
            let ids: Vec<String> = list.iter().map(|g| g.index.to_string()).collect();
            format!(
                "only the {name} GPUs: `export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES={}`",
                ids.join(",")
            )
        })
        .collect();
    Some(
        f.fix(format!(
            "Run each data-parallel job on GPUs of one model, and use the others for separate \
             jobs. To use {}.",
            choices.join("; or ")
        ))
        .build(),
    )
}

/// Whether `CUDA_VISIBLE_DEVICES` leaves programs a single model: one entry, or UUIDs (or
/// unique UUID prefixes) that all belong to GPUs of one model.
/// Whether a container's `NVIDIA_VISIBLE_DEVICES` gives it GPUs of one model at most: one
/// UUID, UUIDs of one model, indices (the host's order) of one model, or none at all (`void`,
/// `none`, empty). `all` gives every GPU.
fn given_one_model(var: &EnvVar, known: &[(&Gpu, String)]) -> bool {
    let value = var.value.trim().to_ascii_lowercase();
    if value == "all" {
        return false;
    }
    if matches!(value.as_str(), "" | "void" | "none") || narrows_to_one_model(var, known) {
        return true;
    }
    let indices: Option<Vec<u32>> = value.split(',').map(|e| e.trim().parse().ok()).collect();
    indices.is_some_and(|indices| {
        let mut models: Vec<&String> = known
            .iter()
            .filter(|(g, _)| indices.contains(&g.index))
            .map(|(_, m)| m)
            .collect();
        models.sort();
        models.dedup();
        models.len() < 2
    })
}

fn narrows_to_one_model(var: &EnvVar, known: &[(&Gpu, String)]) -> bool {
    let entries: Vec<&str> = var
        .value
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    if entries.len() == 1 {
        return true;
    }
    let mut models = Vec::new();
    for entry in &entries {
        let wanted = entry.to_ascii_lowercase();
        if !wanted.starts_with("gpu-") {
            return false;
        }
        let matches: Vec<&String> = known
            .iter()
            .filter(|(g, _)| {
                g.uuid
                    .as_deref()
                    .is_some_and(|u| u.to_ascii_lowercase().starts_with(&wanted))
            })
            .map(|(_, m)| m)
            .collect();
        let [model] = matches.as_slice() else {
            return false;
        };
        if !models.contains(model) {
            models.push(*model);
        }
    }
    models.len() <= 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::test_support::{has_evidence, ids, one};
    use crate::report::{EccCounts, PciDevice};

    fn run(report: &Report) -> Vec<Finding> {
        findings(report, crate::manifest::embedded())
    }

    /// An RTX 3090 as nvidia-smi describes it: idle, cool, healthy.
    fn gpu(index: u32) -> Gpu {
        Gpu {
            index,
            name: Some("NVIDIA GeForce RTX 3090".into()),
            uuid: Some(format!("GPU-3090000{index}-aaaa-bbbb-cccc-dddddddddddd")),
            pci_bus_id: Some(format!("00000000:0{}:00.0", index + 1)),
            pci_device_id: Some("0x2204".into()),
            compute_capability: Some("8.6".into()),
            memory_total_mib: Some(24576),
            temperature_c: Some(38),
            temperature_slowdown_c: Some(90),
            power_draw_w: Some(24.5),
            power_limit_w: Some(350.0),
            clock_sm_mhz: Some(210),
            clock_sm_max_mhz: Some(2100),
            utilization_pct: Some(0),
            pcie_gen_current: Some(1),
            pcie_gen_max: Some(4),
            pcie_width_current: Some(16),
            pcie_width_max: Some(16),
            source: "nvidia-smi".into(),
            ..Gpu::default()
        }
    }

    fn busy_gpu(index: u32) -> Gpu {
        Gpu {
            utilization_pct: Some(97),
            clock_sm_mhz: Some(1890),
            pcie_gen_current: Some(4),
            power_draw_w: Some(341.0),
            temperature_c: Some(71),
            ..gpu(index)
        }
    }

    fn machine(gpus: Vec<Gpu>) -> Report {
        Report {
            gpus,
            ..Report::default()
        }
    }

    #[test]
    fn healthy_idle_and_busy_gpus_give_nothing() {
        assert!(run(&machine(vec![gpu(0), busy_gpu(1)])).is_empty());
    }

    #[test]
    fn a_hot_busy_gpu_is_thermal_throttling_with_its_readings() {
        let mut g = busy_gpu(0);
        g.temperature_c = Some(91);
        g.clock_sm_mhz = Some(1005);
        g.throttle_reasons = vec![
            "sw_power_cap".into(),
            "hw_slowdown".into(),
            "hw_thermal_slowdown".into(),
        ];
        let found = run(&machine(vec![g, busy_gpu(1)]));
        let f = one(&found, "gpu-thermal-throttle");
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.title.starts_with("GPU 0 is throttling"), "{}", f.title);
        assert!(f.title.contains("too hot"), "{}", f.title);
        assert!(
            has_evidence(
                f,
                "active slowdown reasons hw_slowdown, hw_thermal_slowdown"
            ),
            "{f:#?}"
        );
        assert!(
            has_evidence(f, "temperature 91 °C (slowdown at 90 °C)"),
            "{f:#?}"
        );
        assert!(
            has_evidence(f, "SM clock 1005 MHz of 2100 MHz max (47%)"),
            "{f:#?}"
        );
        assert!(
            has_evidence(f, "power draw 341.0 W of 350.0 W limit"),
            "{f:#?}"
        );
        assert_eq!(f.subjects, ["gpu:0"]);
    }

    #[test]
    fn power_cap_alone_and_idle_hw_slowdown_are_not_throttling() {
        let mut capped = busy_gpu(0);
        capped.throttle_reasons = vec!["sw_power_cap".into()];
        // NVML: hw_slowdown "may be also reported during PState or clock change".
        let mut idle = gpu(1);
        idle.throttle_reasons = vec!["hw_slowdown".into()];
        assert!(run(&machine(vec![capped, idle])).is_empty());
    }

    #[test]
    fn a_power_brake_counts_even_when_cool_and_says_so() {
        let mut g = gpu(0);
        g.throttle_reasons = vec!["hw_slowdown".into(), "hw_power_brake_slowdown".into()];
        let found = run(&machine(vec![g]));
        let f = one(&found, "gpu-thermal-throttle");
        assert!(f.title.contains("power supply"), "{}", f.title);
        assert!(
            f.fix
                .as_deref()
                .is_some_and(|x| x.contains("PCIe power connector"))
        );
    }

    #[test]
    fn gpus_known_only_from_the_bus_are_not_judged() {
        let mut g = gpu(0);
        g.source = "pci".into();
        g.throttle_reasons = vec!["sw_thermal_slowdown".into()];
        g.ecc.volatile_uncorrected = Some(3);
        assert!(run(&machine(vec![g])).is_empty());
    }

    fn a100(index: u32, ecc: EccCounts) -> Gpu {
        Gpu {
            name: Some("NVIDIA A100-SXM4-40GB".into()),
            pci_device_id: Some("0x20b0".into()),
            ecc,
            ..gpu(index)
        }
    }

    #[test]
    fn uncorrectable_errors_since_driver_load_are_an_error() {
        let bad = EccCounts {
            enabled: Some(true),
            volatile_uncorrected: Some(2),
            aggregate_uncorrected: Some(2),
            remapped_uncorrectable: Some(1),
            remapped_pending: Some(true),
            ..EccCounts::default()
        };
        let found = run(&machine(vec![a100(0, EccCounts::default()), a100(1, bad)]));
        let f = one(&found, "gpu-ecc-errors");
        assert_eq!(f.severity, Severity::Error);
        assert!(
            has_evidence(
                f,
                "GPU 1 (NVIDIA A100-SXM4-40GB): 2 uncorrectable ECC error(s) since the driver loaded"
            ),
            "{f:#?}"
        );
        assert!(has_evidence(f, "row remapping is pending"), "{f:#?}");
        assert!(has_evidence(f, "1 row(s) remapped"), "{f:#?}");
        assert_eq!(f.subjects, ["gpu:1"]);
        let fix = f.fix.as_deref().unwrap_or_default();
        assert!(fix.contains("nvidia-smi -r -i 1"), "{fix}");
    }

    #[test]
    fn a_failed_remap_asks_for_service() {
        let failed = EccCounts {
            remapped_failure: Some(true),
            ..EccCounts::default()
        };
        let found = run(&machine(vec![a100(0, failed)]));
        let f = one(&found, "gpu-ecc-errors");
        assert_eq!(f.severity, Severity::Error);
        assert!(f.fix.as_deref().is_some_and(|x| x.contains("replacement")));
    }

    #[test]
    fn past_uncorrectable_errors_are_a_warning_and_corrected_ones_nothing() {
        let past = EccCounts {
            volatile_uncorrected: Some(0),
            aggregate_uncorrected: Some(4),
            aggregate_corrected: Some(1_000_000),
            retired_pages: Some(3),
            ..EccCounts::default()
        };
        let found = run(&machine(vec![a100(0, past)]));
        let f = one(&found, "gpu-ecc-errors");
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            has_evidence(f, "4 uncorrectable ECC error(s) in the GPU's lifetime"),
            "{f:#?}"
        );
        assert!(has_evidence(f, "3 page(s) retired"), "{f:#?}");

        let corrected_only = EccCounts {
            volatile_corrected: Some(50_000),
            aggregate_corrected: Some(1_000_000),
            volatile_uncorrected: Some(0),
            aggregate_uncorrected: Some(0),
            retired_pending: Some(false),
            remapped_pending: Some(false),
            remapped_failure: Some(false),
            ..EccCounts::default()
        };
        assert!(run(&machine(vec![a100(0, corrected_only)])).is_empty());
    }

    #[test]
    fn a_busy_gpu_on_a_narrow_link_is_degraded() {
        let mut g = busy_gpu(0);
        g.pcie_width_current = Some(8);
        let found = run(&machine(vec![g]));
        let f = one(&found, "pcie-link-degraded");
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.title.contains("gen 4 x8 of gen 4 x16"), "{}", f.title);
        assert!(
            has_evidence(
                f,
                "PCIe gen 4 of 4, width x8 of x16 (about 16 of 32 GB/s each way)"
            ),
            "{f:#?}"
        );
        assert!(has_evidence(f, "utilization 97%"), "{f:#?}");
        assert!(
            f.fix
                .as_deref()
                .is_some_and(|x| x.contains("lspci -vv -s 0000:01:00.0"))
        );
    }

    #[test]
    fn idle_links_and_light_desktop_load_are_not_judged() {
        // Idle: gen 1 of 4 (power saving) and a narrower link, as in a pass-through VM.
        let mut idle = gpu(0);
        idle.pcie_width_current = Some(8);
        // A desktop at P8: some utilization, clocks near idle, link still at gen 1.
        let mut desktop = gpu(1);
        desktop.utilization_pct = Some(4);
        assert!(run(&machine(vec![idle, desktop])).is_empty());
    }

    #[test]
    fn missing_link_values_come_from_the_pci_bus() {
        let mut g = busy_gpu(0);
        g.pcie_gen_current = None;
        g.pcie_gen_max = None;
        let mut r = machine(vec![g]);
        r.pci_devices = vec![PciDevice {
            address: "0000:01:00.0".into(),
            vendor: "nvidia".into(),
            link_gen_current: Some(3),
            link_gen_max: Some(4),
            link_width_current: Some(16),
            link_width_max: Some(16),
            ..PciDevice::default()
        }];
        let found = run(&r);
        let f = one(&found, "pcie-link-degraded");
        assert!(
            has_evidence(f, "PCIe gen 3 of 4, width x16 of x16"),
            "{f:#?}"
        );
        // Without the bus values nothing is known, and nothing is said.
        r.pci_devices.clear();
        assert!(run(&r).is_empty());
    }

    #[test]
    fn two_models_are_mixed_and_the_fix_names_each_group() {
        let v100 = |index| Gpu {
            name: Some("Tesla V100-SXM2-16GB".into()),
            pci_device_id: Some("0x1db1".into()),
            compute_capability: Some("7.0".into()),
            memory_total_mib: Some(16384),
            ..gpu(index)
        };
        let r = machine(vec![
            a100(0, EccCounts::default()),
            a100(1, EccCounts::default()),
            v100(2),
            v100(3),
        ]);
        let found = run(&r);
        let f = one(&found, "mixed-gpu-models");
        assert_eq!(f.severity, Severity::Warning);
        assert_eq!(
            f.title,
            "Different GPU models in one machine: 2x NVIDIA A100-SXM4-40GB, 2x Tesla V100-SXM2-16GB"
        );
        assert!(
            has_evidence(
                f,
                "GPU 2: Tesla V100-SXM2-16GB (compute capability 7.0, 16384 MiB"
            ),
            "{f:#?}"
        );
        let fix = f.fix.as_deref().unwrap_or_default();
        assert!(fix.contains("CUDA_VISIBLE_DEVICES=0,1`"), "{fix}");
        assert!(fix.contains("CUDA_VISIBLE_DEVICES=2,3`"), "{fix}");
        assert_eq!(f.subjects.len(), 4);
    }

    #[test]
    fn same_models_or_a_visible_set_of_one_model_are_not_mixed() {
        assert!(ids(&run(&machine(vec![gpu(0), gpu(1)]))).is_empty());

        let other = Gpu {
            name: Some("NVIDIA GeForce RTX 4090".into()),
            uuid: Some("GPU-4090aaaa-0000-0000-0000-000000000000".into()),
            ..gpu(1)
        };
        let mut r = machine(vec![gpu(0), other]);
        assert_eq!(ids(&run(&r)), ["mixed-gpu-models"]);
        for value in ["1", "GPU-4090aaaa"] {
            r.environment = vec![EnvVar {
                name: "CUDA_VISIBLE_DEVICES".into(),
                value: value.into(),
            }];
            assert!(run(&r).is_empty(), "CUDA_VISIBLE_DEVICES={value}");
        }
        // Indices name GPUs in CUDA's order, which the report cannot see: still mixed.
        r.environment = vec![EnvVar {
            name: "CUDA_VISIBLE_DEVICES".into(),
            value: "0,1".into(),
        }];
        let found = run(&r);
        assert!(has_evidence(
            one(&found, "mixed-gpu-models"),
            "CUDA_VISIBLE_DEVICES=0,1"
        ));
    }

    #[test]
    fn a_display_only_card_beside_compute_gpus_is_left_out() {
        let gt710 = |index| Gpu {
            name: Some("NVIDIA GeForce GT 710".into()),
            compute_capability: Some("3.5".into()),
            uuid: Some(format!("GPU-710{index}aaaa-0000-0000-0000-000000000000")),
            ..gpu(index)
        };
        assert!(ids(&run(&machine(vec![gt710(0), gpu(1), gpu(2)]))).is_empty());
        let other = Gpu {
            name: Some("NVIDIA GeForce RTX 4090".into()),
            compute_capability: Some("8.9".into()),
            ..gpu(2)
        };
        let found = run(&machine(vec![gt710(0), gpu(1), other]));
        let f = one(&found, "mixed-gpu-models");
        assert!(
            f.title.contains("1x NVIDIA GeForce RTX 4090"),
            "{}",
            f.title
        );
        assert!(!f.title.contains("GT 710"), "{}", f.title);
        assert!(
            has_evidence(f, "GPU 0: NVIDIA GeForce GT 710 left out"),
            "{f:#?}"
        );
    }

    #[test]
    fn unnamed_gpus_are_compared_by_their_table_name() {
        let bare = |index, id: &str| Gpu {
            index,
            pci_device_id: Some(id.into()),
            source: "pci".into(),
            ..Gpu::default()
        };
        let found = run(&machine(vec![bare(0, "0x20b0"), bare(1, "0x1db1")]));
        let f = one(&found, "mixed-gpu-models");
        assert!(f.title.contains("A100 40GB SXM4"), "{}", f.title);
        // An unknown device id is not compared at all.
        assert!(run(&machine(vec![bare(0, "0x20b0"), bare(1, "0xffff")])).is_empty());
    }

    #[test]
    fn bus_ids_compare_across_spellings() {
        assert!(same_bus_id("00000000:01:00.0", "0000:01:00.0"));
        assert!(same_bus_id("00000000:1E:00.0", "0000:1e:00.0"));
        assert!(!same_bus_id("00000000:01:00.0", "0000:02:00.0"));
        assert_eq!(lspci_id("00000000:1E:00.0"), "0000:1E:00.0");
        assert_eq!(lane_gbs(0), None);
        assert_eq!(lane_gbs(7), None);
    }
}

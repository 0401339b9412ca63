//! `pcie-link-degraded`: a busy GPU whose PCIe link trained below what both ends support,
//! from the driver's readings or (when it gave none) the PCI bus's.

use super::{driver_gpus, gpu_label, gpus_are};
use crate::diagnose::{FindingBuilder, ids};
use crate::report::{Finding, Gpu, Report, Severity};

/// Usable bandwidth of one PCIe lane per generation, in GB/s after line encoding (8b/10b for
/// gen 1-2, 128b/130b for gen 3-5, FLIT for gen 6): the figures of the PCIe specifications.
const LANE_GBS: [f64; 6] = [0.25, 0.5, 0.985, 1.969, 3.938, 7.563];

pub(super) fn lane_gbs(generation: u32) -> Option<f64> {
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
pub(super) fn same_bus_id(a: &str, b: &str) -> bool {
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
pub(super) fn lspci_id(bus_id: &str) -> String {
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
pub(super) fn pcie_link(report: &Report) -> Option<Finding> {
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

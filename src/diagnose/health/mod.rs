//! Is the hardware healthy and set up to run at full speed? Judged from what the driver (NVML or
//! `nvidia-smi -q -x`) reported per GPU. Findings: `gpu-thermal-throttle`, `gpu-ecc-errors`,
//! `pcie-link-degraded`, `mixed-gpu-models`, `gpu-peer-via-iommu`, one file each ([`throttle`],
//! [`ecc`], [`pcie`], [`mixed_models`], [`peer_iommu`]); this file holds how the findings name
//! GPUs, which other rules share.
//!
//! Each rule gives one finding for the whole machine, with every affected GPU in its evidence
//! and subjects: eight GPUs in one hot chassis are one problem, not eight.
//!
//! A reading the driver did not give is never taken for a good or a bad one: a rule only judges
//! the facts it has, so a GPU seen only on the PCI bus (no driver) is judged by none of these.

mod ecc;
mod mixed_models;
mod pcie;
mod peer_iommu;
#[cfg(test)]
mod tests;
mod throttle;

use crate::manifest::Manifests;
use crate::report::GpuSource;
use crate::report::{Finding, Gpu, Report};
use crate::version::Version;

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(throttle::thermal_throttle(report));
    out.extend(ecc::ecc_errors(report));
    out.extend(pcie::pcie_link(report));
    out.extend(mixed_models::mixed_models(report, manifests));
    out.extend(peer_iommu::peer_via_iommu(report));
    out
}

/// "GPU 0 (NVIDIA A100-SXM4-40GB)", or "GPU 0" when the driver gave no name.
pub(super) fn gpu_label(gpu: &Gpu) -> String {
    match &gpu.name {
        Some(name) => format!("GPU {} ({name})", gpu.index),
        None => format!("GPU {}", gpu.index),
    }
}

/// "GPU 0 (Tesla P100-PCIE-16GB, compute capability 6.0)": a GPU named with the capability a
/// rule held against a floor, "unknown model" when the driver gave no name.
pub(super) fn gpu_with_cc(gpu: &Gpu, cc: &Version) -> String {
    format!(
        "GPU {} ({}, compute capability {})",
        gpu.index,
        gpu.name.as_deref().unwrap_or("unknown model"),
        cc.as_str()
    )
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
        .filter(|g| g.source == GpuSource::Nvml || g.source == GpuSource::NvidiaSmi)
}

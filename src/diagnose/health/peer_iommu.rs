//! `gpu-peer-via-iommu`: GPUs whose peer-to-peer traffic the IOMMU translates, where NCCL's
//! P2P transport hangs or crawls.
//!
//! With an Intel or AMD IOMMU on, Linux enables PCIe Access Control Services on the bridges
//! (root ports, switch ports) so that each device's DMA can be isolated; ACS then redirects a
//! GPU's writes to another GPU up to the root complex, through the IOMMU, instead of across the
//! bridge. NCCL's troubleshooting guide ("PCI Access Control Services (ACS)") lists this as a
//! cause of hangs and low bandwidth and asks for ACS off on bare metal; NVIDIA/nccl#2079 (two
//! RTX 5880 Ada behind AMD root ports with ACS enabled: `ncclAllReduce` deadlocked until ACS was
//! off) is such a machine. The IOMMU's domain type in sysfs (`iommu_group/type`, readable
//! without root) says whether it translates the GPUs' addresses ("DMA", "DMA-FQ") or passes
//! them through ("identity", `iommu=pt`); the bridges' ACS control bits live in PCI config space
//! past what a user may read, so the rule stands on the domain type and says how to check ACS.

use super::gpus_named;
use super::pcie::same_bus_id;
use crate::diagnose::{FindingBuilder, distro, ids};
use crate::report::topology::Link;
use crate::report::{Finding, Gpu, PciDevice, Report, Severity};

/// Domain types whose DMA the IOMMU translates (the kernel's `iommu_group/type` words).
fn translates(domain: &str) -> bool {
    matches!(domain, "DMA" | "DMA-FQ")
}

/// Two NVIDIA GPUs or more in translated IOMMU domains, some pair of them not joined by NVLink
/// (by `nvidia-smi topo -m` where it was read; a pair it does not show counts as PCIe). An
/// NVSwitch system is left to the fabric rules (its GPUs talk over NVLink), and a machine whose
/// nvidia module is not loaded has no peer traffic yet.
pub(super) fn peer_via_iommu(report: &Report) -> Option<Finding> {
    if !report.kernel.nvidia_loaded || report.pci_devices.iter().any(|d| d.nvswitch) {
        return None;
    }
    let translated: Vec<&PciDevice> = report
        .pci_devices
        .iter()
        .filter(|d| d.vendor == "nvidia" && !d.nvswitch)
        .filter(|d| d.iommu_domain.as_deref().is_some_and(translates))
        .collect();
    let (pairs, mut gpus) = pcie_pairs(report, &translated);
    if pairs.is_empty() {
        return None;
    }
    gpus.sort_by_key(|g| g.index);
    let who = if gpus.is_empty() {
        "The GPUs".to_string()
    } else {
        gpus_named(&gpus)
    };
    let mut f = FindingBuilder::new(
        &ids::GPU_PEER_VIA_IOMMU,
        Severity::Warning,
        format!(
            "{who}: peer-to-peer traffic goes through the IOMMU (each GPU's IOMMU group translates \
             addresses), where NCCL's P2P transport can hang"
        ),
    )
    .detail(
        "With the IOMMU translating the GPUs' addresses, Linux turns on PCIe Access Control \
         Services on the bridges above them, and ACS sends every GPU-to-GPU write up to the root \
         complex and through the IOMMU instead of across the bridge. NCCL's troubleshooting guide \
         names this as a cause of collectives that hang (all-reduce never returns, GPUs at 100 % \
         doing nothing) or run far below the link's bandwidth; NCCL_P2P_DISABLE=1 makes them work, \
         slowly.",
    );
    for d in &translated {
        f = f.evidence(format!(
            "{}: IOMMU group type {} (/sys/bus/pci/devices/{}/iommu_group/type)",
            d.address,
            d.iommu_domain.as_deref().unwrap_or_default(),
            d.address
        ));
    }
    for p in pairs {
        f = f.evidence(p);
    }
    for g in &gpus {
        f = f.subject(g.subject());
    }
    Some(
        f.fix_on_host(format!(
            "Confirm: run the job with `NCCL_P2P_DISABLE=1`; if it no longer hangs, peer-to-peer is \
             the cause. `sudo lspci -vvv | grep ACSCtl` shows the bridges that redirect (SrcValid+ \
             ReqRedir+ CmpltRedir+). On bare metal, put the IOMMU in pass-through: {}. Where the \
             bridges still redirect, turn ACS off for them in the BIOS (or the IOMMU, VT-d / \
             AMD-Vi, where no VM needs it), or boot with `pci=disable_acs_redir=` naming the \
             bridges above the GPUs. Inside a VM the host's ACS is what isolates the guests: keep \
             it, and keep `NCCL_P2P_DISABLE=1`.",
            distro::add_kernel_parameter(report, "iommu=pt")
        ))
        .build(),
    )
}

/// The pairs of `translated` GPUs that `topo -m` does not join by NVLink, one evidence line
/// each, and the driver's GPUs among them.
fn pcie_pairs<'a>(report: &'a Report, translated: &[&PciDevice]) -> (Vec<String>, Vec<&'a Gpu>) {
    let gpu_of = |d: &PciDevice| {
        report.nvidia_gpus().find(|g| {
            g.pci_bus_id
                .as_deref()
                .is_some_and(|id| same_bus_id(id, &d.address))
        })
    };
    let mut pairs: Vec<String> = Vec::new();
    let mut gpus: Vec<&Gpu> = Vec::new();
    for (i, a) in translated.iter().enumerate() {
        for b in &translated[i + 1..] {
            let (ga, gb) = (gpu_of(a), gpu_of(b));
            let link = ga.zip(gb).and_then(|(ga, gb)| {
                report.topology.as_ref()?.gpu_pairs().find_map(|(x, y, l)| {
                    ((x, y) == (ga.index, gb.index) || (y, x) == (ga.index, gb.index)).then_some(l)
                })
            });
            if matches!(link, Some(Link::NvLink(_))) {
                continue;
            }
            let name = |d: &PciDevice, g: Option<&Gpu>| match g {
                Some(g) => format!("GPU {} ({})", g.index, d.address),
                None => d.address.clone(),
            };
            pairs.push(match link {
                Some(l) => format!(
                    "{} and {}: {l} in `nvidia-smi topo -m` (PCIe, no NVLink)",
                    name(a, ga),
                    name(b, gb)
                ),
                None => format!(
                    "{} and {}: no NVLink known between them",
                    name(a, ga),
                    name(b, gb)
                ),
            });
            for g in [ga, gb].into_iter().flatten() {
                if !gpus.iter().any(|x| x.index == g.index) {
                    gpus.push(g);
                }
            }
        }
    }
    (pairs, gpus)
}

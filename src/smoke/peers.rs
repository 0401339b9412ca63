//! Peer access between GPU pairs against what the machine's own matrix promises: two GPUs that
//! `nvidia-smi topo -m` links by NVLink (`NV#`) or places below one PCIe switch (`PIX`, `PXB`)
//! should reach each other's memory directly (`cuDeviceCanAccessPeer`). A pair that cannot is
//! named with its link. Pure: the smoke run, the report and the tables in.
//!
//! Why a pair falls short, by its link:
//! - NVLink: the links are down or the NVSwitch fabric is not up (the fabric manager);
//! - one PCIe switch: the IOMMU and PCIe Access Control Services (ACS) send peer-to-peer
//!   traffic up to the root complex, which refuses or slows it. Linux sets ACS to block direct
//!   peer-to-peer below a switch whenever an Intel or AMD IOMMU is on (Alex Williamson and Bjorn
//!   Helgaas on linux-pci, 2015: "If we find an Intel or AMD IOMMU, I think we configure ACS to
//!   prevent direct peer-to-peer"); NVIDIA's NCCL guide names ACS and virtualisation among
//!   the causes of failing or slow GPU Direct (docs.nvidia.com/deeplearning/nccl/user-guide/
//!   docs/troubleshooting.html, "GPU Direct").
//!
//! Pairs through the CPU (`PHB`, `NODE`, `SYS`) are not expected to reach each other directly
//! (cross-socket peer-to-peer is often unsupported), and GeForce cards are left out: whether
//! NVIDIA's driver offers them PCIe peer-to-peer varies by generation (an RTX 4090 gets none;
//! tinygrad/open-gpu-kernel-modules patches it in), so a "no" there is no fault to name.

use super::findings::finding;
use crate::diagnose::ids;
use crate::manifest::{Manifests, Segment};
use crate::report::smoke::SmokeRun;
use crate::report::topology::Link;
use crate::report::{Finding, Report, Severity};

/// The link `nvidia-smi topo -m` gives between GPUs `a` and `b` (NVML indices, which the smoke
/// child's CUDA indices follow: it runs with `CUDA_DEVICE_ORDER=PCI_BUS_ID`).
#[must_use]
pub(crate) fn link_between(report: &Report, a: u32, b: u32) -> Option<&Link> {
    let topo = report.topology.as_ref()?;
    let column = topo.gpus.iter().position(|g| g.index == b)?;
    topo.gpus
        .iter()
        .find(|g| g.index == a)
        .and_then(|row| row.gpus.get(column))
}

/// Whether the GPU's model row calls it a GeForce (consumer) card; unknown counts as not.
fn consumer(report: &Report, index: u32, manifests: &Manifests) -> bool {
    report
        .nvidia_gpus()
        .find(|g| g.index == index)
        .and_then(|g| {
            manifests
                .gpus
                .by_pci(g.pci_device_id.as_deref()?, g.pci_subsystem_id.as_deref())
        })
        .is_some_and(|row| row.segment == Segment::Consumer)
}

/// One finding per pair (each direction the driver refused) that the matrix says should reach
/// each other directly and cannot.
#[must_use]
pub(crate) fn peer_findings(
    run: &SmokeRun,
    report: &Report,
    manifests: &Manifests,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for p in run.peer_access.iter().filter(|p| !p.can_access) {
        let Some(link) = link_between(report, p.from, p.to) else {
            continue;
        };
        let (expected, why, fix) = match link {
            Link::NvLink(_) => (
                "NVLink",
                "The GPUs are joined by NVLink, yet the driver says neither can read the other's \
                 memory: the links are down, or on an NVSwitch system the fabric is not up. \
                 Traffic between them then goes through host memory, many times slower, and \
                 NCCL and tensor parallelism slow down or fail.",
                "Check `nvidia-smi nvlink --status -i N` for inactive links and `nvidia-smi -q | \
                 grep -A3 Fabric` for the fabric state; on NVSwitch systems make sure the \
                 nvidia-fabricmanager service of the driver's exact version runs; \
                 `nvidia-smi topo -p2p r` shows what the driver allows.",
            ),
            Link::Pix | Link::Pxb if !consumer(report, p.from, manifests) => (
                "one PCIe switch",
                "The GPUs sit below one PCIe switch, where peer-to-peer should stay inside the \
                 switch, yet the driver refuses it. With the IOMMU on, Linux makes the switch \
                 ports send peer-to-peer traffic up to the CPU (PCIe ACS), which blocks or slows \
                 it; a virtual machine without peer-to-peer passthrough does the same.",
                "Check `nvidia-smi topo -p2p r`, whether the IOMMU is on (`dmesg | grep -i \
                 -e DMAR -e IOMMU`, `cat /proc/cmdline`) and the switch ports' ACS \
                 (`sudo lspci -vvv | grep ACSCtl`: `SrcValid+ ... ReqRedir+` redirects). On bare \
                 metal boot with `iommu=pt` or the IOMMU off for these devices, or disable ACS \
                 on the switch ports as NCCL's troubleshooting guide describes.",
            ),
            _ => continue,
        };
        out.push(finding(
            &ids::GPU_PEER_ACCESS_MISSING,
            Severity::Warning,
            format!(
                "GPU {} cannot access GPU {}'s memory though {expected} joins them",
                p.from, p.to
            ),
            why,
            vec![
                format!("nvidia-smi topo -m: GPU{} to GPU{}: {link}", p.from, p.to),
                format!("cuDeviceCanAccessPeer(GPU {}, GPU {}) = 0", p.from, p.to),
            ],
            fix,
            p.from,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::peer_findings;
    use crate::report::smoke::{PeerAccess, SmokeRun};
    use crate::report::topology::{Link, TopoGpu, Topology};
    use crate::report::{Gpu, Report};

    /// Two GPUs of `id` linked by `link`, and the driver's answers for 0 -> 1 and 1 -> 0.
    fn machine(id: &str, link: Link, can: [bool; 2]) -> (SmokeRun, Report) {
        let row = |index: u32, links: Vec<Link>| TopoGpu {
            index,
            gpus: links,
            ..TopoGpu::default()
        };
        let report = Report {
            gpus: (0..2)
                .map(|index| Gpu {
                    index,
                    pci_device_id: Some(id.into()),
                    source: "nvml".into(),
                    ..Gpu::default()
                })
                .collect(),
            topology: Some(Topology {
                source: "nvidia-smi topo -m".into(),
                gpus: vec![
                    row(0, vec![Link::Itself, link.clone()]),
                    row(1, vec![link, Link::Itself]),
                ],
                ..Topology::default()
            }),
            ..Report::default()
        };
        let run = SmokeRun {
            peer_access: vec![
                PeerAccess {
                    from: 0,
                    to: 1,
                    can_access: can[0],
                },
                PeerAccess {
                    from: 1,
                    to: 0,
                    can_access: can[1],
                },
            ],
            ..SmokeRun::default()
        };
        (run, report)
    }

    fn titles(id: &str, link: Link, can: [bool; 2]) -> Vec<String> {
        let (run, report) = machine(id, link, can);
        peer_findings(&run, &report, crate::manifest::embedded())
            .into_iter()
            .map(|f| f.title)
            .collect()
    }

    #[test]
    fn an_nvlink_pair_without_peer_access_is_named_with_its_link() {
        let (run, report) = machine("0x2330", Link::NvLink(18), [false, true]);
        let found = peer_findings(&run, &report, crate::manifest::embedded());
        assert_eq!(found.len(), 1);
        let f = &found[0];
        assert_eq!(f.id, "gpu-peer-access-missing");
        assert_eq!(
            f.title,
            "GPU 0 cannot access GPU 1's memory though NVLink joins them"
        );
        assert_eq!(
            f.evidence,
            [
                "nvidia-smi topo -m: GPU0 to GPU1: NV18",
                "cuDeviceCanAccessPeer(GPU 0, GPU 1) = 0"
            ]
        );
        assert!(f.fix.as_deref().unwrap().contains("nvidia-fabricmanager"));
        assert_eq!(f.subjects, ["gpu:0"]);
    }

    #[test]
    fn a_pair_below_one_switch_without_peer_access_points_at_the_iommu() {
        // L40S (0x26b9), a data-center card, both directions refused.
        let found = titles("0x26b9", Link::Pix, [false, false]);
        assert_eq!(
            found,
            [
                "GPU 0 cannot access GPU 1's memory though one PCIe switch joins them",
                "GPU 1 cannot access GPU 0's memory though one PCIe switch joins them"
            ]
        );
    }

    #[test]
    fn pairs_through_the_cpu_geforce_cards_and_working_pairs_are_quiet() {
        for link in [Link::Phb, Link::Node, Link::Sys] {
            assert!(titles("0x26b9", link, [false, false]).is_empty());
        }
        // RTX 4090 (0x2684): the driver offers GeForce no PCIe peer-to-peer.
        assert!(titles("0x2684", Link::Pix, [false, false]).is_empty());
        assert!(titles("0x2330", Link::NvLink(18), [true, true]).is_empty());
        // No matrix: nothing to hold the answer against.
        let (run, mut report) = machine("0x2330", Link::NvLink(18), [false, false]);
        report.topology = None;
        assert!(peer_findings(&run, &report, crate::manifest::embedded()).is_empty());
    }
}

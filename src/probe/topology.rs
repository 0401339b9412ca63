//! The GPU interconnect: `nvidia-smi topo -m` (the GPU-to-GPU and GPU-to-NIC matrix, each
//! GPU's CPU and NUMA affinity) and each InfiniBand card's NUMA node from sysfs.
//!
//! Asked only where the matrix can matter: two NVIDIA GPUs or more on the PCI bus, or one and an
//! InfiniBand card; elsewhere nothing is run and the report has no `topology`. nvidia-smi is
//! found as the driver probe finds it (under `--host-root` the container's first), and run
//! through the [`Host`], so a fixture's `usr/bin/nvidia-smi` stand-in answers under `--root`.

use std::path::Path;

use crate::host::Host;
use crate::parse::nvidia_smi::parse_topo;
use crate::report::topology::Topology;
use crate::report::{PciDevice, ProbeRecord, ProbeStatus};

/// Where the kernel lists RDMA devices (`mlx5_0`), each with its PCI device's NUMA node.
const INFINIBAND: &str = "/sys/class/infiniband";

/// The matrix and the probe's record, or `None` when the machine has nothing to connect (no
/// record either: one GPU and no InfiniBand card is most machines).
pub(crate) fn probe(host: &Host, pci: &[PciDevice]) -> Option<(Option<Topology>, ProbeRecord)> {
    let gpus = pci
        .iter()
        .filter(|d| d.vendor == "nvidia" && !d.nvswitch)
        .count();
    let infiniband = !host.fs.read_dir(INFINIBAND).is_empty();
    if gpus < 2 && !(gpus == 1 && infiniband) {
        return None;
    }
    let start = std::time::Instant::now();
    let (topology, status, detail) = ask(host);
    let record = ProbeRecord {
        name: "topology".to_string(),
        status,
        detail,
        duration_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
        source: None,
    };
    Some((topology, record))
}

fn ask(host: &Host) -> (Option<Topology>, ProbeStatus, Option<String>) {
    let container = host.container();
    let found = container
        .as_ref()
        .and_then(|c| super::driver::find_smi(c).map(|smi| (c, smi)))
        .or_else(|| super::driver::find_smi(host).map(|smi| (host, smi)));
    let Some((runner, smi)) = found else {
        return (
            None,
            ProbeStatus::Absent,
            Some("nvidia-smi is not on PATH".to_string()),
        );
    };
    let out = match runner.run(&smi, &["topo", "-m"]) {
        Ok(out) => out,
        Err(e) => {
            return (
                None,
                ProbeStatus::Failed,
                Some(format!(
                    "{} topo -m could not be started: {e}",
                    smi.display()
                )),
            );
        }
    };
    if out.timed_out {
        return (
            None,
            ProbeStatus::TimedOut,
            Some(format!(
                "nvidia-smi topo -m did not answer within {:.1} s and was stopped",
                host.timeout.as_secs_f64()
            )),
        );
    }
    let Some(mut topology) = out.success().then(|| parse_topo(&out.stdout)).flatten() else {
        return (
            None,
            ProbeStatus::Failed,
            Some(format!(
                "nvidia-smi topo -m printed no matrix: {}",
                out.failure_summary()
            )),
        );
    };
    for nic in &mut topology.nics {
        nic.numa_node = nic.device.as_deref().and_then(|dev| numa_node(host, dev));
    }
    // What `-v` shows: "8 GPUs, NV18 between every pair; 8 NICs, each GPU's nearest at PIX".
    let mut detail = topology.summary();
    if !topology.unread.is_empty() {
        detail.push_str(&format!(
            "; {} cells could not be read",
            topology.unread.len()
        ));
    }
    (Some(topology), ProbeStatus::Ok, Some(detail))
}

/// An RDMA device's NUMA node; `None` where sysfs has none or says -1 (no node).
fn numa_node(host: &Host, device: &str) -> Option<u32> {
    if device.contains('/') || device.starts_with('.') {
        return None;
    }
    let path = Path::new(INFINIBAND).join(device).join("device/numa_node");
    host.fs.read_opt(&path)?.trim().parse().ok()
}

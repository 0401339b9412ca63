//! AMD GPUs, read from files alone: the KFD topology (`/sys/class/kfd/kfd/topology/nodes/*/
//! properties`, what the ROCm runtime itself enumerates), matched to the PCI bus by address,
//! and each device's amdgpu sysfs files for memory, use, temperature and power.
//!
//! No ROCm tool is run: rocminfo, rocm-smi and amd-smi read these same files (amd-smi through a
//! Python start-up that takes seconds), and under `--root` a fixture's files answer exactly as
//! the machine's did. Names and gfx targets the machine does not give come from the AMD GPU
//! table later (`fill::fill_gpus`).

use crate::report::GpuSource;
use std::path::{Path, PathBuf};

use crate::host::Host;
use crate::parse::kfd;
use crate::report::rocm::KfdNode;
use crate::report::{Gpu, GpuVendor, PciDevice};
use crate::version::GfxTarget;

/// Where amdkfd publishes its topology.
const KFD_NODES: &str = "/sys/class/kfd/kfd/topology/nodes";

/// The KFD topology: whether it could be listed, and its GPU nodes in node order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Topology {
    pub(crate) listed: bool,
    pub(crate) gpus: Vec<KfdNode>,
}

/// Reads the KFD topology's GPU nodes, numbered as ROCm numbers devices.
#[must_use]
pub(crate) fn topology(host: &Host) -> Topology {
    let mut entries: Vec<(u32, PathBuf)> = host
        .fs
        .read_dir(KFD_NODES)
        .into_iter()
        .filter_map(|e| Some((e.name.parse::<u32>().ok()?, e.path)))
        .collect();
    entries.sort_by_key(|(n, _)| *n);
    let listed = !entries.is_empty();
    let mut gpus = Vec::new();
    for (node, path) in entries {
        let Some(props) = host
            .fs
            .read_opt(path.join("properties"))
            .map(|t| kfd::properties(&t))
        else {
            continue;
        };
        if !props.is_gpu() {
            continue;
        }
        let version = props.get("gfx_target_version");
        gpus.push(KfdNode {
            node,
            rocm_index: u32::try_from(gpus.len()).unwrap_or(u32::MAX),
            gfx_target_version: version,
            gfx_target: version.and_then(GfxTarget::from_kfd).map(|t| t.to_string()),
            device_id: props
                .get("device_id")
                .filter(|d| *d > 0 && *d <= 0xffff)
                .map(|d| format!("0x{d:04x}")),
            pci_address: props.pci_address(),
            drm_render_minor: props
                .get("drm_render_minor")
                .and_then(|m| u32::try_from(m).ok())
                .filter(|m| *m > 0),
            simd_count: props.get("simd_count"),
        });
    }
    Topology { listed, gpus }
}

/// The AMD GPUs: one per KFD GPU node (a partitioned MI300 has several per PCI device), and one
/// per AMD display controller on the bus that no node covers (no KFD: the GPU is seen, not
/// usable). In PCI bus order; `index` is set by the caller, which merges them with NVIDIA's.
#[must_use]
pub(crate) fn gpus(host: &Host, pci: &[PciDevice], topology: &Topology) -> Vec<Gpu> {
    let amd: Vec<&PciDevice> = pci.iter().filter(|d| d.vendor == "amd").collect();
    // Indexed by the address's one spelling: a search per node (and per device) was
    // quadratic in the GPU count (#40).
    let by_address: std::collections::HashMap<String, &PciDevice> = amd
        .iter()
        .rev()
        .map(|d| (address_key(&d.address), *d))
        .collect();
    let covered: std::collections::HashSet<String> = topology
        .gpus
        .iter()
        .filter_map(|n| n.pci_address.as_deref().map(address_key))
        .collect();
    let mut out = Vec::new();
    for node in &topology.gpus {
        let device = node
            .pci_address
            .as_deref()
            .and_then(|a| by_address.get(&address_key(a)).copied());
        let address = device
            .map(|d| d.address.clone())
            .or_else(|| node.pci_address.clone());
        let mut gpu = Gpu {
            vendor: GpuVendor::Amd,
            pci_bus_id: address.as_deref().map(long_bus_id),
            pci_device_id: device
                .map(|d| d.device_id.clone())
                .filter(|id| !id.is_empty())
                .or_else(|| node.device_id.clone()),
            pci_subsystem_id: device.and_then(|d| d.subsystem_id.clone()),
            gfx_target: node.gfx_target.clone(),
            kfd_node: Some(node.node),
            rocm_index: Some(node.rocm_index),
            render_node: node
                .drm_render_minor
                .map(|m| format!("/dev/dri/renderD{m}")),
            bound_driver: device.and_then(|d| d.bound_driver.clone()),
            source: GpuSource::Kfd,
            ..Gpu::default()
        };
        if let Some(d) = device {
            link(&mut gpu, d);
        }
        if let Some(address) = &address {
            sysfs(host, &mut gpu, address);
        }
        out.push(gpu);
    }
    for d in &amd {
        if covered.contains(&address_key(&d.address)) {
            continue;
        }
        let mut gpu = Gpu {
            vendor: GpuVendor::Amd,
            pci_bus_id: Some(long_bus_id(&d.address)),
            pci_device_id: Some(d.device_id.clone()).filter(|id| !id.is_empty()),
            pci_subsystem_id: d.subsystem_id.clone(),
            bound_driver: d.bound_driver.clone(),
            source: GpuSource::Pci,
            ..Gpu::default()
        };
        link(&mut gpu, d);
        if d.bound_driver.as_deref() == Some("amdgpu") {
            sysfs(host, &mut gpu, &d.address);
        }
        out.push(gpu);
    }
    out.sort_by(|a, b| {
        (a.pci_bus_id.as_deref(), a.kfd_node).cmp(&(b.pci_bus_id.as_deref(), b.kfd_node))
    });
    out
}

/// The PCI link facts of the device.
fn link(gpu: &mut Gpu, d: &PciDevice) {
    gpu.pcie_gen_current = d.link_gen_current;
    gpu.pcie_gen_max = d.link_gen_max;
    gpu.pcie_width_current = d.link_width_current;
    gpu.pcie_width_max = d.link_width_max;
}

/// amdgpu's per-device sysfs files: memory (`mem_info_*`, bytes), use (`gpu_busy_percent`),
/// and its hwmon's edge temperature (millidegrees) and power (microwatts). Whether it is an
/// APU's GPU: a discrete card has `mem_info_vram_vendor` or `board_info`; otherwise small VRAM
/// with a large GTT (at most 4 GiB, and at least 8 GiB and four times the VRAM) marks an iGPU,
/// as ollama's `discover/amd.go` tells them.
fn sysfs(host: &Host, gpu: &mut Gpu, address: &str) {
    let dir = Path::new("/sys/bus/pci/devices").join(address);
    let number = |name: &str| -> Option<u64> {
        host.fs
            .read_opt(dir.join(name))
            .and_then(|t| t.trim().parse::<u64>().ok())
    };
    let mib = |bytes: u64| bytes / (1024 * 1024);
    let vram = number("mem_info_vram_total");
    let gtt = number("mem_info_gtt_total");
    gpu.memory_total_mib = vram.map(mib);
    gpu.memory_used_mib = number("mem_info_vram_used").map(mib);
    gpu.gtt_total_mib = gtt.map(mib);
    gpu.utilization_pct = number("gpu_busy_percent")
        .filter(|p| *p <= 100)
        .and_then(|p| u32::try_from(p).ok());
    let discrete =
        host.fs.exists(dir.join("mem_info_vram_vendor")) || host.fs.exists(dir.join("board_info"));
    gpu.integrated = if discrete {
        Some(false)
    } else {
        match (vram, gtt) {
            (Some(v), Some(g)) if v > 0 && v <= 4 << 30 && g >= 8 << 30 && g >= 4 * v => Some(true),
            _ => None,
        }
    };
    if let Some(hwmon) = host.fs.read_dir(dir.join("hwmon")).into_iter().next() {
        let read = |name: &str| -> Option<u64> {
            host.fs
                .read_opt(hwmon.path.join(name))
                .and_then(|t| t.trim().parse::<u64>().ok())
        };
        gpu.temperature_c = read("temp1_input").and_then(|m| u32::try_from(m / 1000).ok());
        let watts = |micro: u64| (micro as f64) / 1_000_000.0;
        gpu.power_draw_w = read("power1_average")
            .or_else(|| read("power1_input"))
            .map(watts);
        gpu.power_limit_w = read("power1_cap").filter(|p| *p > 0).map(watts);
    }
}

/// sysfs's `0000:03:00.0` as the report writes bus ids (`00000000:03:00.0`, NVML's form).
fn long_bus_id(address: &str) -> String {
    match address.split_once(':') {
        Some((domain, rest))
            if domain.len() < 8 && domain.bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            format!("{domain:0>8}:{rest}")
        }
        _ => address.to_string(),
    }
}

/// One spelling of a PCI address, whatever the domain's width or the case
/// (`0000:03:00.0`, `00000000:03:00.0`): two spellings of one address give the same key.
fn address_key(x: &str) -> String {
    let x = x.to_ascii_lowercase();
    match x.split_once(':') {
        Some((domain, rest)) => format!("{}:{rest}", domain.trim_start_matches('0')),
        None => x,
    }
}

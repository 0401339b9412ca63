//! Each GPU, NVIDIA or AMD: identity, memory, modes, health counters and its place in a fabric.

use serde::{Deserialize, Serialize};

use super::{ComputeMode, GpuSource, IdentifiedBy, MigMode, Subject};

/// Who made a GPU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum GpuVendor {
    /// The default: reports from before AMD GPUs were listed hold only NVIDIA GPUs.
    #[default]
    Nvidia,
    Amd,
}

impl GpuVendor {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            GpuVendor::Nvidia => "nvidia",
            GpuVendor::Amd => "amd",
        }
    }
}

/// One GPU as the driver reports it (NVML or nvidia-smi; for AMD the KFD topology and sysfs),
/// or as the PCI bus shows it when no driver answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    /// Its position in `gpus[]`. For NVIDIA on a machine without AMD GPUs, also NVML's index.
    pub index: u32,
    /// "nvidia" or "amd".
    #[serde(default)]
    pub vendor: GpuVendor,
    pub name: Option<String>,
    pub uuid: Option<String>,
    /// "00000000:00:06.0".
    pub pci_bus_id: Option<String>,
    /// "0x2335".
    pub pci_device_id: Option<String>,
    /// "9.0".
    pub compute_capability: Option<String>,
    pub architecture: Option<String>,
    pub memory_total_mib: Option<u64>,
    pub memory_used_mib: Option<u64>,
    pub temperature_c: Option<u32>,
    pub temperature_slowdown_c: Option<u32>,
    pub power_draw_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub clock_sm_mhz: Option<u32>,
    pub clock_sm_max_mhz: Option<u32>,
    pub clock_mem_mhz: Option<u32>,
    pub clock_mem_max_mhz: Option<u32>,
    pub utilization_pct: Option<u32>,
    /// Active clock-throttle reasons ("sw_power_cap", "hw_slowdown", ...).
    pub throttle_reasons: Vec<String>,
    pub ecc: EccCounts,
    pub pcie_gen_current: Option<u32>,
    pub pcie_gen_max: Option<u32>,
    pub pcie_width_current: Option<u32>,
    pub pcie_width_max: Option<u32>,
    pub persistence_mode: Option<bool>,
    /// "Enabled" / "Disabled"; null when the GPU has no MIG.
    pub mig_mode: Option<MigMode>,
    /// With MIG enabled, how many MIG devices (a compute instance in a GPU instance) exist:
    /// CUDA runs on those, never on the whole GPU, so 0 leaves the GPU unusable. Absent when
    /// MIG is off or the driver did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig_devices: Option<u32>,
    /// The compute mode in nvidia-smi's words: "Default", "Exclusive_Process" (one process at a
    /// time; a second gets "busy or unavailable") or "Prohibited" (no process may use it).
    /// Absent when the driver did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_mode: Option<ComputeMode>,
    /// The GPU's NVLink fabric as `nvidia-smi -q -x` reports it (Hopper and later in an NVSwitch
    /// fabric); null when not reported or every field is N/A.
    #[serde(default)]
    pub fabric: Option<GpuFabric>,
    /// "0x14a910de": subsystem device id then subsystem vendor id, as nvidia-smi prints it.
    /// Tells apart products that share a device id (A2 and A16 on 0x25b6).
    pub pci_subsystem_id: Option<String>,
    /// The GPU chip ("AD102"), from the GPU id table (`gpu-ids.toml`).
    pub chip: Option<String>,
    /// How the compute capability is known: "driver", "table" (the GPU id table by PCI id, or
    /// the GPU tables by name), "id-block" (inferred from the id's 128-id block: the id is
    /// newer than the table), "override" (`GPU_DOCTOR_GPU_CC`); null when it is not known.
    pub identified_by: Option<IdentifiedBy>,
    /// The oldest driver release that lists this GPU (NVIDIA's compatible-GPU table): older
    /// drivers do not know it. Null for GPUs older than Turing and ids newer than the table.
    pub first_driver: Option<String>,
    /// When the compute capability is unknown: what is known ("Turing or newer") and how to
    /// state it.
    pub identity_note: Option<String>,
    /// "nvml", "nvidia-smi", "pci", "override"; for AMD "kfd" (a KFD topology node: the
    /// kernel's compute driver sees it) or "pci" (the bus only): where this GPU's facts came
    /// from.
    pub source: GpuSource,
    /// Fields filled from other places than `source` ("compute_capability: manifest").
    pub filled_from: Vec<String>,
    /// AMD: the ISA target ROCm code must be built for ("gfx1100"): the KFD node's
    /// `gfx_target_version`, else the AMD GPU table by PCI id; null when neither says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gfx_target: Option<String>,
    /// AMD: an APU's integrated GPU sharing system memory (true) or a card (false): the AMD GPU
    /// table, else sysfs (small VRAM with a large GTT, as ollama tells them); null when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrated: Option<bool>,
    /// AMD: the kernel driver bound to its PCI function ("amdgpu", "vfio-pci"); null when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_driver: Option<String>,
    /// AMD: its KFD topology node (`/sys/class/kfd/kfd/topology/nodes/<n>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kfd_node: Option<u32>,
    /// AMD: its number as ROCm counts devices (`HIP_VISIBLE_DEVICES`, `ROCR_VISIBLE_DEVICES`):
    /// the KFD GPU nodes in node order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rocm_index: Option<u32>,
    /// AMD: its render node ("/dev/dri/renderD128"), which ROCm opens besides `/dev/kfd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render_node: Option<String>,
    /// AMD: the GTT size in MiB (system memory the GPU maps; an APU's working memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gtt_total_mib: Option<u64>,
}

/// A GPU's NVLink fabric: NVML's GPU fabric info (`nvmlDeviceGetGpuFabricInfoV`) when NVML
/// answers, else `nvidia-smi -q -x`'s `<fabric>` (the GPU's `source` says which).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GpuFabric {
    /// "Not Supported", "Not Started", "In Progress", "Completed".
    pub state: Option<String>,
    /// "Success", or why the registration failed; null when N/A.
    pub status: Option<String>,
    pub clique_id: Option<String>,
    pub cluster_uuid: Option<String>,
    /// NVML's fabric health summary ("Healthy", "Unhealthy", "Limited Capacity"), with the
    /// health mask's set flags in parentheses ("Unhealthy (degraded bandwidth)"); null when the
    /// driver does not report it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<String>,
}

impl Gpu {
    #[must_use]
    pub fn is_amd(&self) -> bool {
        self.vendor == GpuVendor::Amd
    }

    #[must_use]
    pub fn is_nvidia(&self) -> bool {
        self.vendor == GpuVendor::Nvidia
    }

    /// This GPU as a finding's subject (`gpu:N`).
    #[must_use]
    pub fn subject(&self) -> Subject {
        Subject::Gpu(self.index)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EccCounts {
    pub enabled: Option<bool>,
    pub volatile_corrected: Option<u64>,
    pub volatile_uncorrected: Option<u64>,
    pub aggregate_corrected: Option<u64>,
    pub aggregate_uncorrected: Option<u64>,
    pub retired_pages: Option<u64>,
    pub retired_pending: Option<bool>,
    pub remapped_uncorrectable: Option<u64>,
    pub remapped_pending: Option<bool>,
    pub remapped_failure: Option<bool>,
}

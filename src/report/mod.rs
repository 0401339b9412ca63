//! The report: everything gpu-doctor learned about a machine, the one model that the text
//! output, `doctor --json`, `check` and the TUI all render.
//!
//! # JSON contract
//! `doctor --json` serialises [`Report`] as it is. These key paths are a public interface and
//! only change with [`SCHEMA_VERSION`]: `schema_version`; `driver.version`; `driver.cuda_version`;
//! `gpus[].name`, `gpus[].pci_device_id`, `gpus[].compute_capability`, `gpus[].memory_total_mib`;
//! `toolkits[].version`, `toolkits[].path`; `libraries.cudnn[].version`, `libraries.cudnn[].path`;
//! `python_envs[].path`, `python_envs[].frameworks[].name`, `.version`, `.cuda`, `.cudnn`,
//! `.components[].name`, `.components[].version` (jaxlib and the JAX plugins);
//! `toolkits[].nvcc_version`, `toolkits[].builds_extensions`;
//! `findings[].id`, `.severity`, `.title`, `.evidence`, `.fix`; and what `report merge` reads
//! from many machines' reports: `tool.version`, `generated_at`, `host.hostname`,
//! `libraries.nccl[].version`, `smoke.status`, `smoke.error`, `smoke.devices[].index`, `.name`,
//! `.passed`, `.throughput.cublaslt_bf16_tflops`, `.throughput.ptx_fp32_tflops`,
//! `.bandwidth.device_to_device_gbs`; and which copy of each CUDA library a framework loads:
//! `libraries.loads[].env`, `.framework`, `.libraries[].family`, `.soname`, `.path` (null: not
//! found), `.via`, `.version`, `.owner.kind`, `.owner.package`, `.others[].path`, `.others[].why`.
//! `gpu-doctor explain` adds `explain.text`, `explain.signatures[].id`, `.matched` and
//! `explain.cause` (documented in [`explain`]); the key is absent from every other report.
//! Under `--host-root DIR` (a node's `/` mounted in a container) `tool.host_root` names DIR and
//! each `probes[].source` says whose facts a probe gave: `host-root:DIR` or `container`; both
//! keys are absent from other reports.
//! Facts keep the machine's exact text: JSON escapes control characters and, with them, DEL,
//! C1 and invisible characters (`\u200b`, `\ufeff`, bidi controls, tag characters). The fields
//! written for people (`findings[].title`, `.detail`, `.evidence`, `.fix`, `probes[].detail`,
//! `gpus[].identity_note`, `manifests.warning`, `explain.signatures[].notes` and `.fix`) are
//! cleaned like the text face: control characters become `?`, invisible ones `<U+200B>`, and a
//! line over 4,096 characters is cut with `…[cut: N more characters]`; `jq -r` on them prints
//! nothing raw.
//! A value that could not be learned is `null`, never a guess; `0` is a real reading. Lists are
//! sorted so the same machine gives the same JSON. The schema in `schema/report.schema.json` is
//! generated from these types by the test in `src/schema.rs`; `gpu-doctor schema` prints it.
//!
//! `topology` (added within schema 1) is the GPU-to-GPU and GPU-to-NIC matrix of
//! `nvidia-smi topo -m` with each GPU's CPU and NUMA affinity and each NIC's NUMA node, on
//! machines with two GPUs or more or an InfiniBand card (see [`topology`]).
//!
//! AMD GPUs are in `gpus[]` too (`gpus[].vendor` is "amd"), with `gfx_target`, `integrated`,
//! `bound_driver`, `kfd_node`, `rocm_index`, `render_node` and `gtt_total_mib`; their
//! `compute_capability` is null. The ROCm stack is `rocm` (see [`rocm`]); a framework's ROCm
//! build lists the gfx targets its files carry in `gfx_targets` and the runtime libraries it
//! bundles in `bundled_runtime`; TheRock's ROCm wheels are `python_envs[].rocm_wheels`.

pub mod explain;
pub mod rocm;
pub mod runtime;
pub mod smoke;
pub mod topology;
mod vocab;

pub use vocab::{DriverLibraryKind, EnvKind, LibraryFamily, OwnerKind};

use serde::{Deserialize, Serialize};

/// Bumped when a key path above changes meaning or disappears; additions keep the number.
pub const SCHEMA_VERSION: u32 = 1;

/// The InfiniBand modules the NVLink5 (Blackwell) fabric needs loaded: the fabric manager's
/// start check needs `ib_umad`, and the NVSwitch management ports are mlx5 devices (NVIDIA
/// Fabric Manager user guide; spectrocloud/CanvOS#700). The probe asks whether the running
/// kernel has them ([`KernelInfo::infiniband_modules_absent`]), the fabric rule whether they are
/// loaded: one list for both.
pub const NVLINK5_INFINIBAND_MODULES: [&str; 2] = ["ib_umad", "mlx5_ib"];

/// Everything known about one machine. Facts keep the machine's exact text (JSON escapes
/// control and invisible characters); the fields written for people (findings' `title`,
/// `detail`, `evidence`, `fix`, `probes[].detail`, `gpus[].identity_note`, `manifests.warning`,
/// `explain.signatures[].notes` and `.fix`) are cleaned like the text face.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Report {
    pub schema_version: u32,
    pub tool: ToolInfo,
    /// When the report was made, RFC 3339 in UTC (`2026-12-01T10:59:07Z`). Under `--root` it is
    /// `SOURCE_DATE_EPOCH` when that is set, else null, so a fixture's report is the same
    /// every day. `report merge` uses it to tell a node's newest report.
    #[serde(default)]
    pub generated_at: Option<String>,
    /// The compatibility tables the findings were made with.
    #[serde(default)]
    pub manifests: ManifestSet,
    pub host: HostInfo,
    /// NVIDIA and AMD display/3D controllers on the PCI bus, found with no driver needed.
    pub pci_devices: Vec<PciDevice>,
    pub kernel: KernelInfo,
    pub driver: DriverInfo,
    /// NVIDIA and AMD GPUs. With an AMD GPU present they are in PCI bus order; otherwise in the
    /// NVIDIA driver's order (which is bus order unless `CUDA_DEVICE_ORDER` says otherwise).
    pub gpus: Vec<Gpu>,
    /// How the GPUs reach each other and the network cards (`nvidia-smi topo -m`; see
    /// [`topology`]); absent where it was not asked (fewer than two GPUs and no InfiniBand card,
    /// no nvidia-smi) or could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<crate::report::topology::Topology>,
    /// Every libcuda / libnvidia-ml the dynamic loader could find, in the order it would try them.
    pub driver_libraries: Vec<DriverLibrary>,
    pub toolkits: Vec<Toolkit>,
    /// The C++ compiler nvcc would hand host code to (`NVCC_CCBIN`, else `CUDAHOSTCXX`, else
    /// `CC`, as torch's extension builds pass it, else `gcc` on PATH); null when no toolkit has
    /// nvcc, under `--host-root`, or when it did not answer.
    #[serde(default)]
    pub host_compiler: Option<HostCompiler>,
    pub libraries: Libraries,
    pub python_envs: Vec<PythonEnv>,
    /// The AMD ROCm stack (installs, amdgpu module, KFD, device nodes and groups); null when
    /// the machine shows none of it.
    #[serde(default)]
    pub rocm: Option<crate::report::rocm::RocmStack>,
    /// GPU-related environment variables as they were set (`CUDA_VISIBLE_DEVICES`, ...).
    pub environment: Vec<EnvVar>,
    /// Facts replaced by `GPU_DOCTOR_*` variables.
    pub overrides: Vec<Override>,
    /// What each probe did: how long it took and whether it found, missed or failed. When a
    /// limit was met, also `reads` (files refused as not regular, or cut at their size limit)
    /// and `budget` (commands not started once the scan's time was spent).
    pub probes: Vec<ProbeRecord>,
    pub findings: Vec<Finding>,
    /// The smoke test's results (`gpu-doctor smoke`); null from `doctor`.
    #[serde(default)]
    pub smoke: Option<crate::report::smoke::SmokeRun>,
    /// `gpu-doctor explain`: the error text given, the messages recognised in it and the
    /// finding that explains them (see [`explain`]); absent from every other command's report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<crate::report::explain::Explain>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
    /// The folder examined instead of `/` (`--root`), or null for the real machine.
    pub root: Option<String>,
    /// `--host-root DIR`: the folder where a node's `/` is mounted into the container that
    /// ran gpu-doctor (absent otherwise). Then every `probes[].source` says whether its facts
    /// are the node's files (`host-root:DIR`) or the container's own (`container`: NVML,
    /// libcuda and the container's nvidia-smi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_root: Option<String>,
}

/// The manifest set (compatibility tables) a report was diagnosed with: the one built into
/// gpu-doctor, or one installed by `gpu-doctor manifest update`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ManifestSet {
    /// "embedded" (built into gpu-doctor) or "installed" (downloaded and verified).
    pub origin: String,
    /// The set's date and a digest of its files ("2026-11-29+1a2b3c4d5e6f").
    pub version: String,
    /// The newest `updated` date of the set's files (YYYY-MM-DD).
    pub updated: String,
    /// Today by the system clock (YYYY-MM-DD), against which `manifests-stale` measures the
    /// set's age; null under `--root`, whose reports must not change with the day they are made.
    pub today: Option<String>,
    /// Why an installed set was not used (it is damaged); null otherwise.
    pub warning: Option<String>,
}

/// The operating system and what kind of machine this is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct HostInfo {
    pub hostname: Option<String>,
    /// `/etc/os-release` ID, e.g. "ubuntu".
    pub os_id: Option<String>,
    pub os_version: Option<String>,
    pub os_codename: Option<String>,
    pub os_pretty_name: Option<String>,
    pub kernel_release: Option<String>,
    /// The machine type as `uname -m` names it: "x86_64", or "aarch64" for Arm servers (Grace
    /// Hopper, Grace Blackwell, DGX Spark), whose CUDA comes from NVIDIA's sbsa repositories and
    /// whose wheels are manylinux aarch64 ones. From `/proc/sys/kernel/arch`, else `uname -m`;
    /// null when neither answered (a `--root` tree without that file).
    pub arch: Option<String>,
    pub wsl: bool,
    /// "docker", "podman", "kubernetes", ... or null when no container marker was found.
    pub container: Option<String>,
    /// Null when the EFI variable could not be read (not root, or not an EFI boot).
    pub secure_boot: Option<bool>,
    /// The size of `/dev/shm` in MiB where a mount states it (`size=` of its tmpfs: a
    /// container's, 64 MiB unless `--shm-size` was given); absent for the kernel's default
    /// (half of memory) or when the mount table could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shm_mib: Option<u64>,
    /// Network interfaces in `/sys/class/net`, sorted by name; null when that folder could not
    /// be listed. NCCL picks one of them for its traffic unless told which.
    pub network_interfaces: Option<Vec<NetInterface>>,
}

/// A network interface as `/sys/class/net/<name>` describes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NetInterface {
    /// "eth0", "ib0".
    pub name: String,
    /// `operstate`: "up", "down", "unknown", ...; null when it could not be read.
    pub operstate: Option<String>,
    /// From `type` (the ARPHRD number): "ethernet", "infiniband", "loopback", or "arphrd-N".
    pub link_type: Option<String>,
    /// Backed by a device (it has a `device` link: a NIC, an SR-IOV function, a VM's virtio NIC)
    /// rather than made in software (loopback, bridges such as docker0, veth pairs, tunnels).
    pub has_device: bool,
}

/// A GPU on the PCI bus.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PciDevice {
    /// "0000:00:06.0".
    pub address: String,
    /// "nvidia" or "amd".
    pub vendor: String,
    pub vendor_id: String,
    /// "0x2335".
    pub device_id: String,
    /// "0x030200".
    pub class: String,
    /// The PCI revision ("0xc8"), read for AMD devices only: one AMD device id is several
    /// products told apart by it (0x744c: 0xc8 RX 7900 XTX, 0xcc RX 7900 XT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// "0x14a910de": subsystem device id then subsystem vendor id (nvidia-smi's form); null
    /// when sysfs does not say.
    pub subsystem_id: Option<String>,
    /// The kernel driver bound to it ("nvidia", "nouveau", "vfio-pci"), null when none.
    pub bound_driver: Option<String>,
    pub link_gen_current: Option<u32>,
    pub link_gen_max: Option<u32>,
    pub link_width_current: Option<u32>,
    pub link_width_max: Option<u32>,
    /// Whether this is an NVSwitch bridge rather than a GPU (HGX/DGX boards).
    pub nvswitch: bool,
}

/// Kernel modules and device nodes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct KernelInfo {
    pub nvidia_loaded: bool,
    /// The loaded module's version (`/proc/driver/nvidia/version`, else `/sys/module/nvidia/version`).
    pub nvidia_version: Option<String>,
    /// The open kernel module (`NVIDIA UNIX Open Kernel Module`) rather than the proprietary one.
    pub nvidia_open: Option<bool>,
    pub nvidia_uvm_loaded: bool,
    pub nouveau_loaded: bool,
    pub amdgpu_loaded: bool,
    /// `/dev/nvidia*`, `/dev/kfd`, `/dev/dxg` nodes present.
    pub device_nodes: Vec<String>,
    /// ROCm version from `.info/version`: of the install `/opt/rocm` points at, else the newest
    /// `/opt/rocm*` (every install is in `rocm.installs`).
    pub rocm_version: Option<String>,
    pub source: Option<String>,
    /// GPU daemons found running in `/proc` (`nv-fabricmanager`, `nvidia-persistenced`);
    /// null when `/proc` could not be listed.
    pub daemons: Option<Vec<String>>,
    /// nvidia kernel modules present as files for the running kernel
    /// (`/lib/modules/<release>/updates/dkms/nvidia.ko*`, `extra/`, `kernel/nvidia-*`, ...).
    #[serde(default)]
    pub module_files: Vec<String>,
    /// The key that signs locally built modules (`/var/lib/dkms/mok.pub`, akmods' key), if any:
    /// the one to enroll as a MOK when Secure Boot refuses the module.
    #[serde(default)]
    pub module_signing_key: Option<String>,
    /// The distribution's packages that carry the nvidia kernel module, as "manager: name
    /// version" ("dpkg: nvidia-dkms-580-open 580.95.05-0ubuntu1", "pacman: nvidia-580xx-dkms
    /// 580.119.02-1"): the module's flavour and branch when it is not loaded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub module_packages: Vec<String>,
    /// GPU services (fabric manager, persistence daemon): installed and running, with the
    /// evidence each answer came from.
    #[serde(default)]
    pub services: Vec<Service>,
    /// InfiniBand modules loaded (`ib_umad`, `mlx5_ib`, `mlx5_core`): on NVLink5 systems the
    /// fabric manager and the NVLink subnet manager reach the NVSwitches through them.
    #[serde(default)]
    pub infiniband_modules: Vec<String>,
    /// InfiniBand modules (`ib_umad`, `mlx5_ib`) not loaded and not installed for the running
    /// kernel either (not in its `modules.dep` or `modules.builtin`): `modprobe` cannot load
    /// them until their package is installed. Empty when not known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub infiniband_modules_absent: Vec<String>,
    /// The entries of `/sys/class/infiniband` (`mlx5_0`, ...); null when the folder is absent.
    #[serde(default)]
    pub infiniband_devices: Option<Vec<String>>,
    /// The last error lines of the fabric manager's log (`/var/log/fabricmanager.log`), at most 5.
    #[serde(default)]
    pub fabric_manager_log: Vec<String>,
}

/// A GPU service as files, packages and processes show it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Service {
    /// The systemd unit's name without `.service` ("nvidia-fabricmanager").
    pub name: String,
    /// Installed: a unit file, the daemon's binary or a package record was found (true), none
    /// of them was (false); null when nothing could be looked at.
    pub installed: Option<bool>,
    /// Running: its process is in `/proc` or `systemctl is-active` says so; null when unknown
    /// (a container sees only its own processes).
    pub active: Option<bool>,
    /// Where each answer came from ("unit: /lib/systemd/system/nvidia-fabricmanager.service",
    /// "dpkg: nvidia-fabricmanager-550 550.54.15-1", "process: nv-fabricmanager",
    /// "systemctl is-active: inactive").
    pub evidence: Vec<String>,
    /// The last error lines (at most 5) of `journalctl -u <unit>`, asked only for an installed
    /// fabric manager that is not running: where its start script writes why it stopped (the
    /// unit's `ExecStartPre` check, or a daemon that logs to the journal, not to
    /// `/var/log/fabricmanager.log`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub journal: Vec<String>,
}

/// The NVIDIA driver as user space sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DriverInfo {
    /// "580.159.04".
    pub version: Option<String>,
    /// The highest CUDA version the driver supports, as nvidia-smi prints it ("13.0").
    pub cuda_version: Option<String>,
    /// Where `version` came from: "nvml", "nvidia-smi", "kernel-module", "override".
    pub source: Option<String>,
    /// What `cuDriverGetVersion` of the libcuda that loads returned ("13.0"); null under `--root`.
    pub libcuda_cuda_version: Option<String>,
    pub nvml: ProbeOutcome,
    pub nvidia_smi: ProbeOutcome,
    /// Path of the nvidia-smi that ran.
    pub nvidia_smi_path: Option<String>,
}

/// How a source of facts went, with its error text kept as a fact.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ProbeOutcome {
    pub status: ProbeStatus,
    /// The error or reason, as the tool or library said it ("Driver/library version mismatch").
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ProbeStatus {
    /// Answered.
    Ok,
    /// Not there (no library, no command).
    Absent,
    /// There, but failed.
    Failed,
    /// Ran past its deadline and was stopped.
    TimedOut,
    /// Not tried (not needed, or not allowed under `--root`).
    #[default]
    Skipped,
}

impl ProbeOutcome {
    #[must_use]
    pub fn new(status: ProbeStatus, detail: impl Into<Option<String>>) -> ProbeOutcome {
        ProbeOutcome {
            status,
            detail: detail.into(),
        }
    }
}

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
    pub mig_mode: Option<String>,
    /// With MIG enabled, how many MIG devices (a compute instance in a GPU instance) exist:
    /// CUDA runs on those, never on the whole GPU, so 0 leaves the GPU unusable. Absent when
    /// MIG is off or the driver did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig_devices: Option<u32>,
    /// The compute mode in nvidia-smi's words: "Default", "Exclusive_Process" (one process at a
    /// time; a second gets "busy or unavailable") or "Prohibited" (no process may use it).
    /// Absent when the driver did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_mode: Option<String>,
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
    pub identified_by: Option<String>,
    /// The oldest driver release that lists this GPU (NVIDIA's compatible-GPU table): older
    /// drivers do not know it. Null for GPUs older than Turing and ids newer than the table.
    pub first_driver: Option<String>,
    /// When the compute capability is unknown: what is known ("Turing or newer") and how to
    /// state it.
    pub identity_note: Option<String>,
    /// "nvml", "nvidia-smi", "pci", "override"; for AMD "kfd" (a KFD topology node: the
    /// kernel's compute driver sees it) or "pci" (the bus only): where this GPU's facts came
    /// from.
    pub source: String,
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

/// A user-space driver library (libcuda, libnvidia-ml) the loader can find.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DriverLibrary {
    /// "libcuda" or "libnvidia-ml".
    pub name: String,
    /// The file found, as the loader would name it.
    pub path: String,
    /// The file it resolves to after links.
    pub resolved: Option<String>,
    /// Driver version from the file name (`libcuda.so.580.159.04`).
    pub version: Option<String>,
    /// "driver", "stub" (`.../stubs/`, link-time only) or "compat" (forward compatibility).
    pub kind: DriverLibraryKind,
    /// Why the loader looks there: "LD_LIBRARY_PATH", "ld.so.conf", "default", "wsl"; or
    /// "cuda-compat" for a `/usr/local/cuda*/compat` copy that is not on the loader path (ranked
    /// after every loader folder; kept for its version); "nixos" for NixOS's
    /// `/run/opengl-driver/lib` when the loader path does not hold it.
    pub origin: String,
    /// Position in loader order (0 is tried first); each library name counts separately.
    pub rank: u32,
}

/// A CUDA toolkit installation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Toolkit {
    /// The toolkit folder after links ("/usr/local/cuda-13.0").
    pub path: String,
    /// "13.0.88" or "12.4.1"; null when nothing said.
    pub version: Option<String>,
    /// "version.json", "version.txt", "nvcc", "libcudart", "folder-name".
    pub version_source: Option<String>,
    pub nvcc: Option<String>,
    /// The compiler's own version, as `nvcc --version` or version.json's `cuda_nvcc` says it
    /// ("13.0.88"; users quote it as "V13.0.88"). Null when neither answered.
    #[serde(default)]
    pub nvcc_version: Option<String>,
    /// Component versions from `version.json` (`cuda_nvcc`, `cuda_cudart`, ...), sorted by
    /// name; empty when the toolkit has no version.json.
    #[serde(default)]
    pub components: Vec<Component>,
    /// Whether this is the toolkit `torch.utils.cpp_extension` and most extension builds
    /// would compile with: CUDA_HOME / CUDA_PATH, else the nvcc on PATH, else /usr/local/cuda.
    #[serde(default)]
    pub builds_extensions: bool,
    /// The newest GCC major its nvcc accepts, from its own `crt/host_config.h`
    /// (`#if __GNUC__ > 14`); null when the header was not there to read.
    #[serde(default)]
    pub gcc_max: Option<u32>,
    /// How it was found: "/usr/local/cuda", "CUDA_HOME", "PATH", "conda", "scan", ...
    pub found_via: Vec<String>,
}

/// A host compiler as nvcc would run it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct HostCompiler {
    /// The program as named where it was found (`/usr/bin/gcc`, or a `CC` value).
    pub path: String,
    /// "gcc" or "clang", from its `--version` banner.
    pub kind: String,
    /// "14.2.1", from its `--version` banner.
    pub version: String,
    /// What named it: "NVCC_CCBIN", "CUDAHOSTCXX", "CC", "PATH", or "installed" (no `gcc` on
    /// PATH, one GCC in `/usr/lib/gcc`).
    pub via: String,
    /// Where `version` came from: "--version" (the compiler's banner; the full version), or
    /// "file names" (the major only: `gcc` linked to `gcc-14`, or the one folder of
    /// `/usr/lib/gcc/<triplet>/`), where the compiler could not be run.
    #[serde(default)]
    pub version_source: String,
}

/// CUDA libraries outside the driver: each list is sorted by path.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Libraries {
    pub cudnn: Vec<Library>,
    pub nccl: Vec<Library>,
    pub cublas: Vec<Library>,
    pub cudart: Vec<Library>,
    pub tensorrt: Vec<Library>,
    /// Per framework, which copy of each CUDA library its process loads, resolved the way ld.so
    /// does (`probe::linkmap`); sorted by environment, then framework.
    #[serde(default)]
    pub loads: Vec<FrameworkLoads>,
    /// Where the loader's soname table came from: "ld.so.cache", or "ld.so.conf (ld.so.cache
    /// missing)" / "ld.so.conf (ld.so.cache older than ld.so.conf)" when the folders `ldconfig`
    /// would scan stand in for it; null when nothing was resolved.
    #[serde(default)]
    pub loader_table: Option<String>,
}

/// The CUDA libraries one framework's process loads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FrameworkLoads {
    /// The Python environment's prefix.
    pub env: String,
    /// "torch", "jax", "tensorflow", "cupy"; "onnxruntime" for onnxruntime-gpu's CUDA provider
    /// (`onnxruntime/capi/libonnxruntime_providers_cuda.so`, resolved when it is an ELF file).
    pub framework: String,
    /// "elf" when its modules' dynamic sections were read; "model" when they could not be (a
    /// fixture's empty files) and the framework's documented search path stands in.
    pub basis: String,
    /// One entry per soname, sorted by family then soname.
    pub libraries: Vec<LibraryLoad>,
}

/// One soname a framework needs and the file the loader would map for it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LibraryLoad {
    /// "cudart", "cublas", "cudnn", "nccl", "nvjitlink", "nvrtc", "cusparse", "cusparselt",
    /// "cufft", "cusolver", "curand", "cupti", "cufile", "nvshmem", "tensorrt".
    pub family: LibraryFamily,
    /// "libcudnn.so.9".
    pub soname: String,
    /// The module whose `DT_NEEDED` (or run-time `dlopen`) asks for it.
    pub needed_by: String,
    /// How it is asked for: "needed" (`DT_NEEDED`, read from the module), "dlopen" (loaded by
    /// soname at run time, as the framework is known to), "preload" (loaded by path).
    pub by: String,
    /// The file that loads (as found, before links); null when no folder searched has it.
    pub path: Option<String>,
    /// How the loader reaches it: "preload" (loaded by path by the framework), "RPATH",
    /// "RPATH of the executable" (the interpreter's own, a conda `python`'s `$ORIGIN/../lib`),
    /// "LD_LIBRARY_PATH", "RUNPATH", "ld.so.cache", "ld.so.conf", "default"; null when not found.
    pub via: Option<String>,
    /// Its version: from the file name the link resolves to, else its package.
    pub version: Option<String>,
    /// Who installed the file that loads; null when not found.
    pub owner: Option<LibraryOwner>,
    /// The folders searched, in order (always given; the evidence for `library-not-found`).
    pub searched: Vec<String>,
    /// Other copies of the same soname on this machine, and why each loses.
    pub others: Vec<LosingCopy>,
}

/// Who installed a library file, whatever the loader does with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LibraryOwner {
    /// "pip", "conda", "toolkit", "bundled" (inside a framework's own folder), "dpkg",
    /// "driver", "system" (none of these says it is theirs).
    pub kind: OwnerKind,
    /// The package ("nvidia-cudnn-cu13", "torch", "libcudnn9-cuda-13", "cuda-13.0").
    pub package: Option<String>,
    pub version: Option<String>,
    /// How the owner was told: "RECORD", "wheel-layout", "conda-meta", "dpkg", "folder".
    pub source: String,
}

/// A copy of a soname that the loader does not pick.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LosingCopy {
    pub path: String,
    pub version: Option<String>,
    pub owner: LibraryOwner,
    /// "searched after the winner (LD_LIBRARY_PATH comes before RUNPATH)", "not on the search
    /// path of torch/lib/libtorch_cuda.so", ...
    pub why: String,
}

/// One copy of a library.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Library {
    pub version: Option<String>,
    /// The main library file ("/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0").
    pub path: String,
    /// "system", "toolkit", "pip", "conda".
    pub origin: String,
    /// Where the version came from: "file-name", "header", "dist-info".
    pub version_source: Option<String>,
    /// Whether the run-time loader finds this copy by default (LD_LIBRARY_PATH, ld.so.conf,
    /// standard folders) rather than only a program that knows its folder.
    pub on_loader_path: bool,
    /// Why the loader looks in its folder: "LD_LIBRARY_PATH", "ld.so.conf", "default"; null
    /// when it is not on the loader path. LD_LIBRARY_PATH comes before a wheel's RUNPATH.
    pub loader_origin: Option<String>,
    /// Position of its folder in loader order (0 first); null when not on the loader path.
    pub loader_rank: Option<u32>,
}

/// A Python environment and the GPU frameworks installed in it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PythonEnv {
    /// The environment's prefix ("/opt/torch/.venv", "/usr").
    pub path: String,
    /// "venv", "conda", "system".
    pub kind: EnvKind,
    pub python_version: Option<String>,
    pub interpreter: Option<String>,
    pub site_packages: Vec<String>,
    /// How it was found: "PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "conda-environments", "system".
    pub found_via: Vec<String>,
    pub frameworks: Vec<Framework>,
    /// `nvidia-*` pip wheels (cuDNN, NCCL, cuBLAS, ...).
    pub nvidia_wheels: Vec<Wheel>,
    /// ROCm runtime wheels (TheRock's `rocm`, `rocm-sdk-core`, `rocm-sdk-libraries-<family>`);
    /// absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rocm_wheels: Vec<Wheel>,
    /// Packages that ship their own compiled code built against a framework (vLLM, flash-attn,
    /// xformers, bitsandbytes, DeepSpeed, torchvision, torchaudio), with the framework pins of
    /// their metadata; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<Extension>,
}

/// A package with its own compiled code built against a framework.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Extension {
    /// The normalised distribution name ("vllm", "flash-attn", "torchvision").
    pub name: String,
    pub version: String,
    /// Its `Requires-Dist` lines on torch, torchvision or torchaudio outside extras, as
    /// name and specifier ("torch==2.8.0"); empty when it pins none.
    pub requires: Vec<String>,
    /// The dist-info folder they were read from.
    pub source: String,
    /// The CUDA libraries whose major follows CUDA's (`libcudart`, `libcublas`, `libcublasLt`,
    /// `libnvrtc`, `libnvJitLink`) that its own compiled files need (`DT_NEEDED` of the `.so`
    /// files its RECORD lists): "libcudart.so.12". Empty when none, or not read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuda_needed: Vec<String>,
}

impl PythonEnv {
    /// What people call this environment: its kind, except that an interpreter of a version
    /// manager (pyenv, asdf, mise, uv's own Pythons), which the report's `kind` calls
    /// "system" (no venv, no conda), is named by its manager.
    #[must_use]
    pub fn kind_label(&self) -> String {
        const MANAGERS: [&str; 4] = ["pyenv", "asdf", "mise", "uv"];
        if self.kind == EnvKind::System
            && let Some(manager) = self.found_via.iter().find_map(|via| {
                let name = via.split(' ').next().unwrap_or(via);
                MANAGERS.contains(&name).then_some(name)
            })
        {
            return manager.to_string();
        }
        self.kind.as_str().to_string()
    }
}

/// A framework build found in an environment's files.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Framework {
    /// "torch", "tensorflow", "jax", "cupy".
    pub name: String,
    pub version: Option<String>,
    /// The CUDA version it was built for ("13.0"; JAX and CuPy name only the major, "13");
    /// null for a CPU or ROCm build.
    pub cuda: Option<String>,
    /// cuDNN it was built for or pins, when its files say.
    pub cudnn: Option<String>,
    /// ROCm/HIP version of a ROCm build.
    pub rocm: Option<String>,
    /// "cuda", "rocm", "cpu", or null when unknown.
    pub variant: Option<String>,
    /// Compute capabilities compiled in, when its files say ("sm_90").
    pub arch_list: Vec<String>,
    /// `nvidia-*` wheels its metadata pins ("nvidia-cudnn-cu13==9.19.0.56").
    pub pins: Vec<String>,
    /// The packages the framework is split into, each with its own version: JAX's `jaxlib`,
    /// `jax-cuda13-plugin`, `jax-cuda13-pjrt`, whose CUDA build facts these are; JAX refuses
    /// to start when their versions disagree with jax's. Empty for one-package frameworks.
    #[serde(default)]
    pub components: Vec<Component>,
    /// The file the build facts came from.
    pub source: String,
    /// The pip distribution when its name says more than `name` ("tensorflow-cpu": a CPU
    /// build chosen by name), or the conda package it came from ("pytorch (conda)"); null
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution: Option<String>,
    /// What the framework said when the environment's interpreter imported it (`doctor
    /// --deep`, `smoke --frameworks`): GPUs seen, build, warnings, and the smoke computation.
    /// Null when not asked, or when another copy of it in the same environment is the one
    /// that interpreter imports.
    #[serde(default)]
    pub runtime: Option<crate::report::runtime::FrameworkRuntime>,
    /// A ROCm build: the gfx targets its own files carry ("gfx1100"), sorted; absent when its
    /// files do not say (see `gfx_targets_source`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gfx_targets: Vec<String>,
    /// Where `gfx_targets` came from ("torch/lib/rocblas/library: 11 TensileLibrary_lazy_gfx*
    /// files"); absent with them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gfx_targets_source: Option<String>,
    /// A ROCm build: the ROCm runtime libraries it ships inside its own folder
    /// ("torch/lib/libamdhip64.so", "torch/lib/libhsa-runtime64.so"), as paths; absent when none.
    /// A `libhsa-runtime64.so` that links to, or is a same-size copy of, `/opt/rocm`'s (the step
    /// AMD's ROCm-on-WSL guide gives) is the system's, not listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bundled_runtime: Vec<String>,
}

/// One package of a framework split into several, or one component of a toolkit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Component {
    /// "jaxlib", "jax-cuda13-plugin"; a toolkit's "cuda_nvcc", "cuda_cudart".
    pub name: String,
    /// "0.11.2", "13.0.88" as the package or file says.
    pub version: String,
}

/// An installed pip wheel.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Wheel {
    pub name: String,
    pub version: String,
    /// Its shared-library folder, when it has one.
    pub lib_dir: Option<String>,
}

/// Variables of `environment` that describe the container image rather than change what CUDA
/// does: its CUDA requirement as the NVIDIA Container Toolkit reads it (`NVIDIA_REQUIRE_CUDA`,
/// `NVIDIA_DISABLE_REQUIRE`, and `CUDA_VERSION` for images without a requirement).
pub const IMAGE_REQUIREMENT_VARS: [&str; 3] = [
    "NVIDIA_REQUIRE_CUDA",
    "NVIDIA_DISABLE_REQUIRE",
    "CUDA_VERSION",
];

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}

/// A fact replaced by a `GPU_DOCTOR_*` variable (for build machines without a GPU).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Override {
    /// The report field replaced ("driver.version").
    pub field: String,
    pub variable: String,
    pub value: String,
    /// What was detected before the override, if anything.
    pub detected: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ProbeRecord {
    pub name: String,
    pub status: ProbeStatus,
    /// What happened, for people (cleaned like the text face: no control or invisible
    /// character, long lines cut with a marker).
    pub detail: Option<String>,
    pub duration_ms: u64,
    /// Under `--host-root` only: where this probe's facts came from, `host-root:DIR` (the
    /// node's files below DIR) or `container` (NVML, libcuda, nvidia-smi of the container).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// A diagnosis: what is wrong (or worth knowing), why, the proof, and the fix. `title`,
/// `detail`, `evidence` and `fix` are written for people and cleaned in the JSON as in the text
/// face: no control or invisible character (shown as `?` and `<U+200B>`), and a line over
/// 4,096 characters cut with `…[cut: N more characters]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Finding {
    /// Stable identifier ("driver-library-mismatch").
    pub id: String,
    pub severity: Severity,
    /// One line.
    pub title: String,
    /// The cause in the user's terms.
    pub detail: String,
    /// Facts and paths that prove it.
    pub evidence: Vec<String>,
    /// Concrete commands or a pointer to `gpu-doctor plan`.
    pub fix: Option<String>,
    /// IDs of findings this one explains (their symptoms follow from this cause).
    pub explains: Vec<String>,
    /// What the finding is about, so `check` and the TUI can tie it to a part of the machine:
    /// `gpu:0`, `toolkit:/usr/local/cuda-12.4`, `framework:/opt/venv:torch`.
    pub subjects: Vec<String>,
}

impl Report {
    /// The findings of one severity.
    pub fn findings_of(&self, severity: Severity) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(move |f| f.severity == severity)
    }

    /// Whether any NVIDIA GPU is known, from the driver or the PCI bus.
    #[must_use]
    pub fn has_nvidia_gpu(&self) -> bool {
        self.gpus.iter().any(Gpu::is_nvidia)
            || self
                .pci_devices
                .iter()
                .any(|d| d.vendor == "nvidia" && !d.nvswitch)
    }

    /// Whether any GPU is known, NVIDIA or AMD, from a driver or the PCI bus.
    #[must_use]
    pub fn has_gpu(&self) -> bool {
        !self.gpus.is_empty() || self.pci_devices.iter().any(|d| !d.nvswitch)
    }

    /// The NVIDIA GPUs, in order: the ones CUDA and NVML number.
    pub fn nvidia_gpus(&self) -> impl Iterator<Item = &Gpu> {
        self.gpus.iter().filter(|g| g.is_nvidia())
    }

    /// The AMD GPUs, in order.
    pub fn amd_gpus(&self) -> impl Iterator<Item = &Gpu> {
        self.gpus.iter().filter(|g| g.is_amd())
    }
}

/// The subject key of a framework in an environment, as findings list it in `subjects`.
#[must_use]
pub fn framework_subject(env_path: &str, name: &str) -> String {
    format!("framework:{env_path}:{name}")
}

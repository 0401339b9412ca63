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

mod driver;
pub mod explain;
mod gpu;
mod host;
mod libraries;
mod python;
pub mod rocm;
pub mod runtime;
pub mod smoke;
mod subject;
pub mod topology;
mod vocab;

pub use driver::{DriverInfo, DriverLibrary};
pub use gpu::{EccCounts, Gpu, GpuFabric, GpuVendor};
pub use host::{
    CdiSpec, ContainerEngine, GpuSwitch, HostInfo, KernelInfo, ModuleBuild, ModuleFileInfo,
    NVLINK5_INFINIBAND_MODULES, NetInterface, PciDevice, Service, WslDriverStore,
};
pub use libraries::{
    CudaCode, FrameworkLoads, HostCompiler, Libraries, Library, LibraryLoad, LibraryOwner,
    LosingCopy, SymbolGap, SymbolsUnread, Toolkit,
};
pub use python::{Component, Extension, Framework, NumbaTarget, Nvvm, PythonEnv, Wheel};
pub use subject::Subject;
pub use vocab::{
    ComputeMode, DriverLibraryKind, EnvKind, GpuSource, IdentifiedBy, LibraryFamily, MigMode,
    OwnerKind,
};

use serde::{Deserialize, Serialize};

/// Bumped when a key path above changes meaning or disappears; additions keep the number.
pub const SCHEMA_VERSION: u32 = 1;

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
    /// The ptxas programs Triton's variables name (`TRITON_PTXAS_PATH`, and ptxas-blackwell's),
    /// with the CUDA release each belongs to; empty when none is set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ptxas: Vec<PtxasFile>,
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

/// A ptxas a Triton variable points at, and the CUDA release it is of.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PtxasFile {
    /// The variable ("TRITON_PTXAS_PATH").
    pub variable: String,
    /// Its value, as set.
    pub path: String,
    /// The CUDA release of that ptxas ("12.8.93", or "12.8" from a banner without the full
    /// version); null when nothing said, or the file is not there.
    pub cuda: Option<String>,
    /// Where `cuda` came from: "version.json" or "version.txt" (the toolkit folder above its
    /// `bin/`), or "banner" (the version text in the program's own bytes).
    pub cuda_source: Option<String>,
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
    #[cfg_attr(test, schemars(with = "Vec<String>"))]
    pub subjects: Vec<Subject>,
    /// Where `fix` is carried out, as the rule that wrote it decided. Not in the JSON: inside a
    /// container the diagnosis has already said in `fix` that its steps are the host's.
    #[serde(skip)]
    pub fix_target: FixTarget,
}

/// Where a finding's fix is carried out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FixTarget {
    /// Wherever gpu-doctor runs, a container included: packages in an environment, variables,
    /// files the user owns, or steps whose text says itself where they run.
    #[default]
    Here,
    /// Only the host can: the kernel module, firmware, driver packages, host services, a reboot.
    /// Inside a container the diagnosis says so before the steps.
    Host,
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

/// The subject of a framework in an environment, as findings list it in `subjects`.
#[must_use]
pub fn framework_subject(env_path: &str, name: &str) -> Subject {
    Subject::framework(env_path, name)
}

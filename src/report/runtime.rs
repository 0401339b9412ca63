//! What a framework said about itself when its environment's interpreter imported it: the
//! `python_envs[].frameworks[].runtime` object of `doctor --deep --json` and
//! `smoke --frameworks --json`. Data only; [`crate::deep::parse`] fills it from the probe's output.
//!
//! Numbers are kept as the framework's API returned them when that is how users and
//! documentation quote them (CuPy's `13020`), and decoded where the raw form misleads (torch's
//! cuDNN `91900` is "9.19.0"). A value the probe could not learn is null; why is in
//! `probe_errors`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::report::ProbeStatus;

/// One framework, imported by one environment's interpreter (`python -I`, in an empty folder).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FrameworkRuntime {
    /// `ok`: imported and answered; `failed`: the import raised (see `import_error`) or the
    /// process died without an answer; `timed_out`: stopped at the deadline; `skipped`: not run
    /// (under `--root`, or the environment has no interpreter).
    pub status: ProbeStatus,
    /// Why it failed, timed out or was skipped, in one line.
    pub detail: Option<String>,
    /// The interpreter that imported it.
    pub interpreter: Option<String>,
    /// Python's version as that interpreter reports it ("3.12.3").
    pub python_version: Option<String>,
    /// Wall time of the whole probe process, import included.
    pub duration_ms: u64,
    /// Time `import <framework>` took.
    pub import_ms: Option<u64>,
    /// The package folder that was imported (`torch.__file__`'s folder): which copy answered.
    pub module_path: Option<String>,
    /// What `import <framework>` raised, as `Type: message`; null when it imported.
    pub import_error: Option<String>,
    /// `torch.__version__`, `tf.__version__`, `jax.__version__`, `cupy.__version__`.
    pub version: Option<String>,
    /// The CUDA version the build targets, as the framework reports it: `torch.version.cuda`,
    /// TensorFlow's `get_build_info()["cuda_version"]`. Null for CPU and ROCm builds.
    pub cuda: Option<String>,
    /// ROCm/HIP version of a ROCm torch build (`torch.version.hip`).
    pub hip: Option<String>,
    /// cuDNN: `torch.backends.cudnn.version()` decoded (91900 → "9.19.0", 8902 → "8.9.2"), or
    /// TensorFlow's build-info `cudnn_version` as written (often only the major, "9").
    pub cudnn: Option<String>,
    /// NCCL: `torch.cuda.nccl.version()` or CuPy's `nccl.get_version()`, as "2.28.9".
    pub nccl: Option<String>,
    /// CuPy's `cupy.cuda.runtime.runtimeGetVersion()` as returned (13020 = CUDA 13.2).
    pub cuda_runtime_version: Option<u32>,
    /// CuPy's `cupy.cuda.runtime.driverGetVersion()` as returned (13000 = the driver runs CUDA
    /// up to 13.0).
    pub cuda_driver_version: Option<u32>,
    /// Whether the framework can use a GPU: `torch.cuda.is_available()`, a GPU in TensorFlow's
    /// `list_physical_devices('GPU')`, a device in `jax.devices('gpu')`, CuPy's
    /// `getDeviceCount() > 0`. Null when the question could not be asked.
    pub gpu_available: Option<bool>,
    /// How many GPUs the framework sees.
    pub device_count: Option<u32>,
    /// The framework's own error when asked for its GPUs (JAX's backend error, CuPy's
    /// `CUDARuntimeError`).
    pub gpu_error: Option<String>,
    /// The GPUs the framework sees, in its own numbering.
    pub devices: Vec<RuntimeDevice>,
    /// Architectures compiled into the build: `torch.cuda.get_arch_list()` ("sm_90",
    /// "compute_90"), TensorFlow's `cuda_compute_capabilities`.
    pub arch_list: Vec<String>,
    /// `jax.default_backend()` ("gpu", "cpu").
    pub backend: Option<String>,
    /// JAX's plugin and jaxlib distributions, "jax-cuda13-plugin 0.11.2".
    pub plugins: Vec<String>,
    /// TensorFlow's `tf.sysconfig.get_build_info()`, values as text (lists joined by ", ").
    pub build_info: BTreeMap<String, String>,
    /// Python warnings (`UserWarning: CUDA initialization: The NVIDIA driver on your system is
    /// too old ...`) and WARNING/ERROR log records raised while importing and asking, in order;
    /// deprecation warnings are left out.
    pub warnings: Vec<String>,
    /// The last lines the process wrote to stderr: native libraries log there (TensorFlow's
    /// "Cannot dlopen some GPU libraries").
    pub stderr: Vec<String>,
    /// Questions that failed, as `question: Type: message` (a missing attribute in an old
    /// version): the rest of the answer still stands.
    pub probe_errors: Vec<String>,
    /// The GPU computation of `smoke --frameworks`; null from `doctor --deep`.
    pub smoke: Option<FrameworkSmoke>,
}

/// A GPU as a framework sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RuntimeDevice {
    /// The framework's device number (`cuda:0`, `GPU:0`, JAX's device id).
    pub index: u32,
    /// "NVIDIA H200".
    pub name: Option<String>,
    /// "9.0".
    pub compute_capability: Option<String>,
    pub memory_total_mib: Option<u64>,
    /// JAX's platform name ("gpu", "cuda"); null for the others.
    pub platform: Option<String>,
}

/// A small real computation through the framework (`smoke --frameworks`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FrameworkSmoke {
    /// One fp32 matmul on each GPU the framework sees, checked against a float64 CPU result.
    pub matmuls: Vec<FrameworkMatmul>,
    /// torch only, with two or more GPUs: an NCCL all-reduce between two processes started the
    /// way `torchrun` starts training. Null otherwise.
    pub allreduce: Option<AllReduceCheck>,
    /// Why no computation ran ("torch.cuda.is_available() is False"), or what stopped it.
    pub error: Option<String>,
}

/// One matmul on one GPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FrameworkMatmul {
    /// The framework's device number.
    pub device: u32,
    pub passed: bool,
    /// M, N, K.
    pub size: [u32; 3],
    /// max |GPU − CPU| / max |CPU|; null when it did not run or the result was not finite.
    pub max_rel_error: Option<f64>,
    pub tolerance: f64,
    /// What the framework raised ("RuntimeError: CUDA error: no kernel image is available for
    /// execution on the device").
    pub error: Option<String>,
}

/// The NCCL all-reduce through `torch.distributed`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AllReduceCheck {
    pub passed: bool,
    /// Processes (one GPU each).
    pub world_size: u32,
    /// fp32 elements reduced.
    pub elements: u64,
    /// Time of the second all-reduce (the first one sets NCCL up), in the slowest rank.
    pub ms: Option<f64>,
    /// What a rank raised or printed, or the timeout.
    pub error: Option<String>,
    /// How NCCL moved the data between the ranks, from its `NCCL_DEBUG=INFO` channel lines,
    /// most used first: `p2p` (GPU to GPU over NVLink or PCIe), `shm` (through host memory),
    /// `net` (through a network card). Empty when NCCL printed none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transports: Vec<NcclTransport>,
}

/// One transport NCCL chose (see [`crate::parse::nccl_log`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NcclTransport {
    /// "p2p", "shm", "net", "collnet", "nvls" or "other".
    pub kind: String,
    /// As NCCL named it, without per-connection numbers: "P2P/CUMEM/read", "SHM/direct/direct",
    /// "NET/IB/GDRDMA".
    pub via: String,
    /// Channel connections (over every rank) that used it.
    pub connections: u64,
}

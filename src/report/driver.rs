//! The user-space driver: its version and CUDA level, and the driver's own libraries found on the
//! machine.

use serde::{Deserialize, Serialize};

use super::{DriverLibraryKind, ProbeOutcome};

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
    /// `/run/opengl-driver/lib` when the loader path does not hold it; "off-path" for a driver
    /// mount the loader does not search (kind "off-path").
    pub origin: String,
    /// Position in loader order (0 is tried first); each library name counts separately.
    pub rank: u32,
}

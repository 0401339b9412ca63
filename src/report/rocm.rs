//! The AMD ROCm stack as facts: installs under `/opt`, the amdgpu kernel module, the KFD
//! topology, the device nodes ROCm opens with their permissions, and the user's groups.
//!
//! # JSON contract
//! `rocm` in `doctor --json` (null on a machine with no AMD GPU, no amdgpu module, no KFD and
//! no ROCm install). Its keys are additions to schema version 1: `rocm.installs[].path`,
//! `.version`, `.hip_version`, `.rocblas_targets`, `.hipblaslt_targets`; `rocm.bundled[]`; `rocm.hip_code[].program`, `.path`, `.targets`, `.compressed`; `rocm.default_install`; `rocm.amdgpu.kind`,
//! `.version`; `rocm.kfd_nodes[]`; `rocm.device_nodes[].path`, `.mode`, `.group`,
//! `.accessible`; `rocm.user.groups`. A value that could not be read is null, never a guess.

use serde::{Deserialize, Serialize};

/// What the machine shows of AMD's compute stack.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RocmStack {
    /// Every ROCm install under `/opt` (`/opt/rocm-6.2.0`, `/opt/rocm` when it is a folder of
    /// its own), sorted by path.
    pub installs: Vec<RocmInstall>,
    /// The install `/opt/rocm` resolves to ("/opt/rocm-6.2.0"): what `ROCM_PATH` defaults to and
    /// what programs built against "ROCm" load. Null when there is no `/opt/rocm`.
    pub default_install: Option<String>,
    pub amdgpu: AmdgpuModule,
    /// Whether `/sys/class/kfd/kfd/topology/nodes` could be listed (KFD, the kernel's compute
    /// driver, is part of amdgpu when the kernel is built with `HSA_AMD`). Without it a GPU
    /// on the bus cannot be told from a GPU ROCm can use.
    pub kfd_topology: bool,
    /// The KFD nodes that are GPUs (`simd_count` above 0), in node order: the order ROCm numbers
    /// devices in (`HIP_VISIBLE_DEVICES=0` is the first).
    pub kfd_nodes: Vec<KfdNode>,
    /// `/dev/kfd` and the `/dev/dri/renderD*` nodes, with who may open them.
    pub device_nodes: Vec<DeviceNode>,
    /// The user gpu-doctor ran as (`/proc/self/status`), with group names from `/etc/group`.
    pub user: Option<UserGroups>,
    /// ROCm libraries programs bring with them (ollama's), with their kernels' targets.
    #[serde(default)]
    pub bundled: Vec<BundledRocm>,
    /// HIP programs' own GPU code (llama.cpp's and ollama's `libggml-hip.so`), with the gfx
    /// targets its offload bundles carry.
    #[serde(default)]
    pub hip_code: Vec<HipCode>,
}

impl RocmStack {
    /// The install `/opt/rocm` resolves to, as one of `installs`.
    #[must_use]
    pub fn opt_rocm_install(&self) -> Option<&RocmInstall> {
        let path = self.default_install.as_deref()?;
        self.installs.iter().find(|i| i.path == path)
    }

    /// The install programs built against "ROCm" use: `/opt/rocm`'s, else the newest.
    #[must_use]
    pub fn programs_install(&self) -> Option<&RocmInstall> {
        self.opt_rocm_install().or_else(|| {
            self.installs.iter().max_by(|a, b| {
                crate::version::compare(
                    a.version.as_deref().unwrap_or(""),
                    b.version.as_deref().unwrap_or(""),
                )
            })
        })
    }
}

/// One ROCm install.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RocmInstall {
    /// The folder ("/opt/rocm-6.2.0").
    pub path: String,
    /// From `.info/version` ("6.2.0-66"), else the folder's name ("6.2.0"); null when neither.
    pub version: Option<String>,
    /// The HIP runtime's version: `libamdhip64.so.<major>.<minor>.<build>` ("6.2.41133"), else
    /// `bin/.hipVersion`.
    pub hip_version: Option<String>,
    /// The gfx targets its rocBLAS has kernels for (`lib/rocblas/library/TensileLibrary_lazy_
    /// gfx*.dat`), sorted; empty when rocBLAS is not installed.
    pub rocblas_targets: Vec<String>,
    /// The gfx targets its hipBLASLt has kernels for (`lib/hipblaslt/library/TensileLibrary_
    /// lazy_gfx*.dat`), sorted; empty when hipBLASLt is not installed or its folder names none.
    #[serde(default)]
    pub hipblaslt_targets: Vec<String>,
}

/// A program's own copy of ROCm's libraries (ollama's `lib/ollama/rocm`), which it loads instead
/// of `/opt/rocm`'s.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct BundledRocm {
    /// The program ("ollama").
    pub program: String,
    /// The folder ("/usr/local/lib/ollama/rocm").
    pub path: String,
    /// The gfx targets of its `rocblas/library`, sorted.
    pub rocblas_targets: Vec<String>,
    /// The gfx targets of its `hipblaslt/library`, sorted.
    pub hipblaslt_targets: Vec<String>,
}

/// One HIP program library and the GPU targets its `.hip_fatbin` carries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct HipCode {
    /// The program ("llama.cpp", "ollama").
    pub program: String,
    /// The library ("/usr/local/lib/ollama/libggml-hip.so").
    pub path: String,
    /// The gfx targets of its offload bundles, sorted; empty when they could not be read.
    pub targets: Vec<String>,
    /// The bundles are compressed (`CCOB`, clang's `--offload-compress`): `targets` are read
    /// from the first bundle's decoded head, and are empty (unknown, not absent) when it did not
    /// decode.
    pub compressed: bool,
}

/// The amdgpu kernel module.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AmdgpuModule {
    /// In `/proc/modules` or `/sys/module/amdgpu` (built in, or loaded).
    pub loaded: bool,
    /// "dkms" (AMD's amdgpu-dkms from repo.radeon.com: it has `/sys/module/amdgpu/version`) or
    /// "inbox" (the kernel's own module, which has none); null when not loaded.
    pub kind: Option<String>,
    /// The amdgpu-dkms version ("6.8.5"); null for the kernel's own module.
    pub version: Option<String>,
    /// Kernel command-line words that keep amdgpu from driving a GPU (`nomodeset`,
    /// `amdgpu.modeset=0`, `modprobe.blacklist=amdgpu`, `radeon.si_support=...`), from
    /// `/proc/cmdline`.
    #[serde(default)]
    pub cmdline: Vec<String>,
    /// `blacklist amdgpu` lines, as `FILE: line`, from `/etc/modprobe.d`, `/lib/modprobe.d` and
    /// `/usr/lib/modprobe.d`.
    #[serde(default)]
    pub blacklisted: Vec<String>,
    /// AMD's amdgpu-dkms versions DKMS holds (`/var/lib/dkms/amdgpu/<version>/`), with the
    /// kernels each is built for and a failed build's kernel and errors (its `build/make.log`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dkms_builds: Vec<super::ModuleBuild>,
}

/// A KFD topology node that is a GPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct KfdNode {
    /// The node number (`/sys/class/kfd/kfd/topology/nodes/<node>`); CPU nodes come first.
    pub node: u32,
    /// Its position among the GPU nodes: the device number ROCm gives it.
    pub rocm_index: u32,
    /// `gfx_target_version` as written ("110000").
    pub gfx_target_version: Option<u64>,
    /// The target it names ("gfx1100"); null when the number is not a target.
    pub gfx_target: Option<String>,
    /// "0x744c", from `device_id` (decimal in the file).
    pub device_id: Option<String>,
    /// "0000:03:00.0", from `domain` and `location_id` (bus << 8 | device << 3 | function).
    pub pci_address: Option<String>,
    /// The render node's minor (`drm_render_minor`): `/dev/dri/renderD<minor>`.
    pub drm_render_minor: Option<u32>,
    /// `simd_count`: compute units times SIMDs per unit.
    pub simd_count: Option<u64>,
}

/// A device node ROCm opens.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DeviceNode {
    /// "/dev/kfd", "/dev/dri/renderD128".
    pub path: String,
    /// Permission bits in octal ("0660"); null when not known (a fixture's stand-in without a
    /// recorded mode).
    pub mode: Option<String>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    /// The group's name from `/etc/group` ("render"); null when the gid has no entry.
    pub group: Option<String>,
    /// Whether the node carries a POSIX ACL (systemd-logind grants the seat's user access to
    /// render nodes this way); null when not known.
    pub acl: Option<bool>,
    /// Whether the user may open it read-write by owner, group and other bits: true, false, or
    /// null when the mode, the owner or the user is unknown, or an ACL may grant more.
    pub accessible: Option<bool>,
}

/// The user gpu-doctor ran as.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct UserGroups {
    pub uid: Option<u32>,
    /// The login name from `/etc/passwd`.
    pub name: Option<String>,
    /// The primary and supplementary group ids (`Gid:` and `Groups:` of `/proc/self/status`).
    pub gids: Vec<u32>,
    /// Their names from `/etc/group` (a gid without an entry is written as its number).
    pub groups: Vec<String>,
    /// Groups `/etc/group` lists the user in that this process does not have: added after
    /// the login (a new login, or `newgrp`, brings them in).
    #[serde(default)]
    pub pending_groups: Vec<String>,
}

//! The machine around the GPUs: the host and its network interfaces and PCI devices, the kernel
//! and its modules, and the services that keep GPUs usable.

use serde::{Deserialize, Serialize};

/// The InfiniBand modules the NVLink5 (Blackwell) fabric needs loaded: the fabric manager's
/// start check needs `ib_umad`, and the NVSwitch management ports are mlx5 devices (NVIDIA
/// Fabric Manager user guide; spectrocloud/CanvOS#700). The probe asks whether the running
/// kernel has them ([`KernelInfo::infiniband_modules_absent`]), the fabric rule whether they are
/// loaded: one list for both.
pub const NVLINK5_INFINIBAND_MODULES: [&str; 2] = ["ib_umad", "mlx5_ib"];

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
    /// Booted from an rpm-ostree or bootc deployment (`/run/ostree-booted`, which ostree's
    /// boot writes: Fedora Silverblue and Kinoite, Universal Blue's Aurora, Bazzite and
    /// Bluefin): `/usr` is read-only, so packages are layered with `rpm-ostree` or come with
    /// the image the machine is rebased to, never installed with `dnf`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ostree: bool,
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
    /// The Container Device Interface specs in `/etc/cdi` and `/var/run/cdi` (what Podman,
    /// containerd, CRI-O and Docker's CDI mode inject for `--device nvidia.com/gpu=all`), each
    /// with the host files it names that are not there; absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cdi_specs: Vec<CdiSpec>,
    /// Under WSL2, the Windows driver's folder in `/usr/lib/wsl/drivers` that holds
    /// `libcuda.so.1.1`, with the files the NVIDIA Container Toolkit mounts from it that are
    /// missing; absent outside WSL or when no such folder is visible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wsl_driver_store: Option<WslDriverStore>,
    /// Container engines installed as the distribution's packages (dpkg's, pacman's), each with
    /// its package version: which CDI spec versions the engine reads depends on its release.
    /// Absent when none is found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub container_engines: Vec<ContainerEngine>,
}

/// One container engine package: the engine (`podman`, `docker`) and the package that carries
/// it, as its package manager records them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ContainerEngine {
    /// "podman" or "docker".
    pub engine: String,
    /// The package, with its manager: "dpkg: podman", "dpkg: docker-ce", "pacman: docker".
    pub package: String,
    /// The package's version as recorded ("4.9.3+ds1-1ubuntu0.2", "5:28.2.2-1~debian.12~bookworm").
    pub version: String,
}

/// WSL2's NVIDIA driver-store folder and the required files it lacks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct WslDriverStore {
    /// "/usr/lib/wsl/drivers/nv_dispi.inf_amd64_8a2f3c91d7e6b054".
    pub path: String,
    /// Of `libcuda.so.1.1`, `libcuda_loader.so`, `libnvidia-ptxjitcompiler.so.1`,
    /// `libnvidia-ml.so.1`, `libnvidia-ml_loader.so`, `libnvdxgdmal.so.1`, `nvcubins.bin` and
    /// `nvidia-smi`, those neither there nor in `/usr/lib/wsl/lib`.
    pub missing: Vec<String>,
}

/// One CDI spec file, as far as a container engine needs its host side to exist.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CdiSpec {
    /// The spec file, "/etc/cdi/nvidia.yaml".
    pub path: String,
    /// Its `kind`, "nvidia.com/gpu"; null when the file does not say.
    pub kind: Option<String>,
    /// The driver release its file names carry (`libcuda.so.570.124.06`): the driver it was
    /// generated for; null when no such name is in it.
    pub driver_version: Option<String>,
    /// How many host paths (`hostPath`, device node and hook `path`) it names, up to the cap
    /// that was read.
    pub host_paths: u32,
    /// Those of them that do not exist on the host (the first 16), which a container engine
    /// refuses to start a container with ("crun: cannot stat ...").
    pub missing: Vec<String>,
    /// The devices it lists (`devices[].name`: `0`, `GPU-<uuid>`, `0:1`, `MIG-<uuid>`, `all`),
    /// in order, at most 256: what a container can ask for (`nvidia.com/gpu=0:1`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<String>,
    /// Its `cdiVersion` ("0.7.0"): an engine whose CDI library does not know that version
    /// refuses the whole spec. Null when the file does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cdi_version: Option<String>,
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
    /// The kernel's IOMMU domain type of the device's group (`iommu_group/type`): "DMA" or
    /// "DMA-FQ" (addresses translated by the IOMMU), "identity" (pass-through, `iommu=pt`),
    /// "blocked", "unmanaged" (given to a VM through VFIO). Null where the device has no IOMMU
    /// group (the IOMMU is off) or the file could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iommu_domain: Option<String>,
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
    /// What each file of `module_files` says of itself in its `.modinfo` section (`license`,
    /// `version`, `vermagic`), read only while the module is not loaded: then the file is the
    /// one witness of the module's flavour when no package names it (a `.run` install, an
    /// image that ships the module). Compressed modules (`.ko.zst`, `.ko.xz`, `.ko.gz`) are
    /// decompressed as a stream, at most 256 MiB read and 512 MiB decompressed, stopping once
    /// `.modinfo` has gone past; what stops a read is in `unread`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub module_info: Vec<ModuleFileInfo>,
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
    /// The nvidia module's local builds as DKMS and akmods recorded them, looked at only while
    /// the module is not loaded: which kernels each driver version was built for, and a build
    /// that failed with its first errors. "No module for this kernel" then says why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub module_builds: Vec<ModuleBuild>,
    /// Whether the running kernel's headers are installed (`/lib/modules/<release>/build`
    /// resolves to a folder), asked only where a local build tool has an nvidia module to
    /// build: without them DKMS stops before any `make.log` ("Your kernel headers for kernel
    /// ... cannot be found"). Null when not asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_headers: Option<bool>,
    /// Other installed kernels (`/lib/modules/*`) that have an nvidia module, looked at only
    /// while the module is not loaded and the running kernel has none: the kernel to boot until
    /// this one gets its module.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub module_kernels: Vec<String>,
    /// What keeps the NVIDIA GPU off on purpose, looked at only while the module is not
    /// loaded: a graphics switcher's files (EnvyControl's or nvidia-prime's integrated mode),
    /// or any modprobe, kernel command line or udev configuration that blocks the module or
    /// removes the GPU from the bus. Null when nothing does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_switch: Option<GpuSwitch>,
    /// The running kernel's `CONFIG_INTEGRITY_MACHINE_KEYRING` (`/boot/config-<release>`),
    /// read only while a module built for it is not loaded under Secure Boot: without the
    /// machine keyring (Linux 5.18+), keys enrolled as a MOK land in the `.platform` keyring,
    /// which the kernel does not use to verify modules, so a MOK-signed module is refused
    /// however often its key is enrolled. Null when not read or the config does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_keyring: Option<bool>,
}

/// Configuration that keeps the NVIDIA GPU off: the module blocked, the GPU removed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GpuSwitch {
    /// The switcher whose files these are, from their header comment (`envycontrol`,
    /// `nvidia-prime`) or their name (`suse-prime`); null when no known tool wrote them.
    pub tool: Option<String>,
    /// Where the `nvidia` module is blocked, as "file: line" (`blacklist nvidia`, `alias nvidia
    /// off`, `install nvidia /bin/false`; `/proc/cmdline: modprobe.blacklist=...nvidia`).
    #[serde(default)]
    pub module_blocked: Vec<String>,
    /// udev rules that remove NVIDIA display functions from the PCI bus, as "file: rule".
    #[serde(default)]
    pub device_removed: Vec<String>,
    /// nvidia-prime's profile (`/etc/prime-discrete`: `off` is its `intel` profile), if set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prime_profile: Option<String>,
}

/// One driver version's module as a local build tool (DKMS, akmods) keeps it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ModuleBuild {
    /// `dkms` or `akmods`.
    pub tool: String,
    /// The module's name in the tool (`nvidia`, Debian's `nvidia-current`).
    pub module: String,
    /// The driver version being built (akmods: with its package release, `570.133.07-1`).
    pub version: String,
    /// Kernels this version's module is built for (DKMS's `<kernel>/<arch>/module/`, akmods'
    /// logs of builds that succeeded), sorted.
    #[serde(default)]
    pub built_for: Vec<String>,
    /// The log of a build that failed (DKMS `build/make.log`, akmods' `.failed.log`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_log: Option<String>,
    /// The kernel that failed build was for (the make.log's first line, the akmods log's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_kernel: Option<String>,
    /// The failed build's first compiler errors, at most three, as the log has them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// One nvidia kernel module file as its own `.modinfo` describes it: `license` tells the
/// flavour (`NVIDIA`: proprietary, `Dual MIT/GPL`: open; NVIDIA's driver README, "Open Linux
/// Kernel Modules"), `version` the branch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ModuleFileInfo {
    pub path: String,
    /// `license=` of `.modinfo`; null when the file was not read.
    pub license: Option<String>,
    /// `version=` of `.modinfo`.
    pub version: Option<String>,
    /// Why the file's `.modinfo` was not read ("no .modinfo section", "not an ELF object",
    /// "corrupt or cut-short zstd stream", "decompressed 512 MiB without finding .modinfo, read
    /// no further", an open error); null when it was.
    pub unread: Option<String>,
    /// `vermagic=` of `.modinfo`: the kernel release the module was built for, then its build
    /// options ("6.14.0-37-generic SMP preempt mod_unload modversions "); null when unread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vermagic: Option<String>,
}

impl ModuleFileInfo {
    /// The flavour the licence names: `Some(true)` open, `Some(false)` proprietary, `None`
    /// when unread or another licence.
    #[must_use]
    pub fn open(&self) -> Option<bool> {
        match self.license.as_deref()? {
            "NVIDIA" => Some(false),
            "Dual MIT/GPL" => Some(true),
            _ => None,
        }
    }
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

//! Kernel modules and device nodes: which GPU drivers are loaded, at which version.

use crate::host::Host;
use crate::parse::{kernel, proc_nvidia};
use crate::report::{KernelInfo, NVLINK5_INFINIBAND_MODULES};

#[must_use]
pub(crate) fn probe(host: &Host) -> KernelInfo {
    let fs = &host.fs;
    let modules = fs
        .read_opt("/proc/modules")
        .map(|t| kernel::loaded_modules(&t))
        .unwrap_or_default();
    let has = |name: &str| modules.iter().any(|m| m == name);
    let proc_version = fs
        .read_opt("/proc/driver/nvidia/version")
        .and_then(|t| proc_nvidia::parse_driver_version(&t));
    let sys_version = fs
        .read_opt("/sys/module/nvidia/version")
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty());
    let (nvidia_version, source) = match (&proc_version, sys_version) {
        (Some(p), _) => (Some(p.version.clone()), Some("/proc/driver/nvidia/version")),
        (None, Some(v)) => (Some(v), Some("/sys/module/nvidia/version")),
        (None, None) => (None, None),
    };
    // /proc/modules is the usual witness, but some containers hide it while /proc/driver/nvidia
    // is mounted: either one means the module is in the kernel.
    let nvidia_loaded =
        has("nvidia") || nvidia_version.is_some() || fs.is_dir("/sys/module/nvidia");
    let mut device_nodes: Vec<String> = fs
        .read_dir("/dev")
        .into_iter()
        .filter(|e| e.name.starts_with("nvidia") || e.name == "kfd" || e.name == "dxg")
        // `/dev/nvidia-caps` is a folder of capability nodes, not a device.
        .filter(|e| !fs.is_dir(&e.path))
        .map(|e| e.path.display().to_string())
        .collect();
    device_nodes.sort();
    let rocm_version = fs
        .read_dir("/opt")
        .into_iter()
        .filter(|e| e.name.starts_with("rocm"))
        .filter_map(|e| fs.read_opt(e.path.join(".info/version")))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .max_by(|a, b| crate::version::compare(a, b));
    KernelInfo {
        nvidia_loaded,
        nvidia_version,
        nvidia_open: proc_version.as_ref().map(|p| p.open_module),
        nvidia_uvm_loaded: has("nvidia_uvm") || fs.is_dir("/sys/module/nvidia_uvm"),
        nouveau_loaded: has("nouveau") || fs.is_dir("/sys/module/nouveau"),
        amdgpu_loaded: has("amdgpu") || fs.is_dir("/sys/module/amdgpu"),
        device_nodes,
        rocm_version,
        source: source.map(str::to_string),
        daemons: daemons(host),
        // Filled in by `probe::gather`, which knows the running kernel and the container.
        module_files: Vec::new(),
        module_info: Vec::new(),
        module_signing_key: None,
        module_packages: Vec::new(),
        services: Vec::new(),
        infiniband_modules: NVLINK5_INFINIBAND_MODULES
            .into_iter()
            .chain([MLX5_CORE])
            .filter(|m| has(m) || fs.is_dir(format!("/sys/module/{m}")))
            .map(str::to_string)
            .collect(),
        infiniband_modules_absent: Vec::new(),
        infiniband_devices: fs.is_dir("/sys/class/infiniband").then(|| {
            let mut names: Vec<String> = fs
                .read_dir("/sys/class/infiniband")
                .into_iter()
                .map(|e| e.name)
                .collect();
            names.sort();
            names
        }),
        // The newest errors are at the end of a log that can grow for months: read its tail.
        fabric_manager_log: fs
            .read_tail_opt("/var/log/fabricmanager.log", FABRIC_MANAGER_LOG_TAIL)
            .map(|t| fabric_manager_errors(&t))
            .unwrap_or_default(),
        // Filled in with the module files (`probe::module_builds`).
        module_builds: Vec::new(),
        kernel_headers: None,
        module_kernels: Vec::new(),
        // A loaded module is not switched off.
        gpu_switch: if nvidia_loaded {
            None
        } else {
            super::gpu_switch::probe(host)
        },
        // Read with the module files, which say whether a built module went unloaded.
        machine_keyring: None,
    }
}

/// The ConnectX core driver `mlx5_ib` sits on: reported with the fabric's InfiniBand modules
/// ([`NVLINK5_INFINIBAND_MODULES`]) so a report shows whether the card's driver is there at all,
/// though no rule needs it by name.
const MLX5_CORE: &str = "mlx5_core";

/// How much of the fabric manager's log is read, from its end: its last errors are what keep
/// today's fabric from completing.
const FABRIC_MANAGER_LOG_TAIL: u64 = 1024 * 1024;

/// The last (at most 5) error lines of a fabric manager log or journal (`[ERROR]`, "error",
/// "failed", "cannot").
pub(crate) fn fabric_manager_errors(log: &str) -> Vec<String> {
    let mut lines: Vec<String> = log
        .lines()
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            // "failed", "failure" (systemd's status=1/FAILURE), "cannot" (the start script's
            // `Kernel module "ib_umad" has not been loaded, fabric manager cannot be started`).
            // "don't match" / "doesn't match" / "mismatch": a fabric manager of another
            // version than the driver's.
            l.contains("error")
                || l.contains("fail")
                || l.contains("cannot")
                || l.contains("n't match")
                || l.contains("mismatch")
        })
        .map(|l| l.trim().chars().take(300).collect())
        .collect();
    let keep = lines.len().saturating_sub(5);
    lines.drain(..keep);
    lines
}

/// Daemons whose absence breaks GPUs: the fabric manager on NVSwitch systems (CUDA error 802
/// without it) and the persistence daemon. Read from `/proc/<pid>/comm`, so no `ps` is needed.
/// On NVLink5 systems (HGX B200, GB200) the NVLink subnet manager (`nvlsm`) runs beside it.
const DAEMONS: [&str; 4] = [
    "nv-fabricmanager",
    "nvidia-persistenced",
    "nvidia-fabricmanager",
    "nvlsm",
];

fn daemons(host: &Host) -> Option<Vec<String>> {
    let entries = host.fs.read_dir("/proc");
    let pids: Vec<_> = entries
        .iter()
        .filter(|e| e.name.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    if pids.is_empty() {
        return None;
    }
    let mut found: Vec<String> = pids
        .iter()
        .filter_map(|e| host.fs.read_opt(e.path.join("comm")))
        .map(|c| c.trim().to_string())
        .filter(|c| DAEMONS.contains(&c.as_str()))
        .collect();
    found.sort();
    found.dedup();
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fabric manager log far longer than the read: the newest errors (what keeps today's
    /// fabric from completing) are seen, not the oldest.
    #[test]
    fn the_fabric_manager_log_is_read_from_its_end() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("var/log")).unwrap();
        let mut log = String::from("[Jan 01 2025 00:00:00] [ERROR] [tid 1] the oldest error\n");
        let filler = "[Jan 01 2025 00:00:01] [INFO] [tid 1] Received an inband message\n";
        while (log.len() as u64) < 3 * FABRIC_MANAGER_LOG_TAIL {
            log.push_str(filler);
        }
        log.push_str(
            "[Dec 02 2026 16:00:00] [ERROR] [tid 9] NVLink subnet manager is not running\n",
        );
        std::fs::write(dir.path().join("var/log/fabricmanager.log"), &log).unwrap();
        let host = Host::rooted(
            dir.path(),
            crate::host::env::Env::default(),
            std::time::Duration::from_secs(5),
        );
        let k = probe(&host);
        assert_eq!(
            k.fabric_manager_log,
            vec![
                "[Dec 02 2026 16:00:00] [ERROR] [tid 9] NVLink subnet manager is not running"
                    .to_string()
            ]
        );
    }
}

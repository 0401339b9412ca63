//! The operating system and what kind of machine this is: distribution, kernel, WSL2,
//! containers, Secure Boot.

use crate::host::{CmdOutput, Host};
use crate::parse::{kernel, os_release};
use crate::report::HostInfo;

/// The EFI variable that holds the Secure Boot state (the GUID is the EFI global variable one).
const SECURE_BOOT_VAR: &str =
    "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c";

#[must_use]
pub(crate) fn probe(host: &Host) -> HostInfo {
    let fs = &host.fs;
    let os = fs
        .read_opt("/etc/os-release")
        .or_else(|| fs.read_opt("/usr/lib/os-release"))
        .map(|t| os_release::parse(&t))
        .unwrap_or_default();
    let trimmed = |s: Option<String>| s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let proc_version = fs.read_opt("/proc/version").unwrap_or_default();
    let wsl = kernel::is_wsl(&proc_version)
        || fs.is_dir("/usr/lib/wsl/lib")
        || fs.exists("/proc/sys/fs/binfmt_misc/WSLInterop");
    HostInfo {
        hostname: hostname(host),
        os_id: os.id,
        os_version: os.version_id,
        os_codename: os.version_codename,
        os_pretty_name: os.pretty_name,
        kernel_release: trimmed(fs.read_opt("/proc/sys/kernel/osrelease")),
        arch: machine_arch(host),
        wsl,
        ostree: fs.exists("/run/ostree-booted"),
        container: container(host),
        secure_boot: fs
            .read_bytes_limited(std::path::Path::new(SECURE_BOOT_VAR), 64)
            .ok()
            .and_then(|b| kernel::secure_boot_from_efivar(&b)),
        network_interfaces: super::net::interfaces(host),
        shm_mib: fs
            .read_opt("/proc/self/mounts")
            .or_else(|| fs.read_opt("/proc/mounts"))
            .and_then(|t| crate::parse::mounts::shm_bytes(&t))
            .map(|b| b >> 20),
        cdi_specs: super::cdi::probe(host),
        wsl_driver_store: super::wsl_store::probe(host, wsl),
        container_engines: super::cdi::engines(host),
    }
}

/// The machine's architecture as `uname -m` names it (`x86_64`, `aarch64`): the kernel's
/// `/proc/sys/kernel/arch` (the same `utsname.machine`), so a `--root` fixture states it; on the
/// real machine without that file (kernels before 6.1), `uname -m` itself, else our own build
/// target (an x86_64 build under emulation would say x86_64, which is why it comes last).
#[must_use]
pub(crate) fn machine_arch(host: &Host) -> Option<String> {
    let trimmed = |s: String| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    if let Some(arch) = host.fs.read_opt("/proc/sys/kernel/arch").and_then(trimmed) {
        return Some(arch);
    }
    if !host.live() {
        return None;
    }
    host.runs_found_programs()
        .then(|| host.which("uname"))
        .flatten()
        .and_then(|uname| host.run(&uname, &["-m"]).ok())
        .filter(CmdOutput::success)
        .and_then(|out| trimmed(out.stdout))
        .filter(|a| a.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        .or_else(|| Some(std::env::consts::ARCH.to_string()))
}

/// Container runtimes leave markers: Docker `/.dockerenv`, Podman `/run/.containerenv`,
/// Kubernetes its service variables; otherwise PID 1's cgroup names the runtime.
fn container(host: &Host) -> Option<String> {
    if host.fs.exists("/.dockerenv") {
        return Some("docker".to_string());
    }
    if host.fs.exists("/run/.containerenv") {
        return Some("podman".to_string());
    }
    if host.env.non_empty("KUBERNETES_SERVICE_HOST").is_some() {
        return Some("kubernetes".to_string());
    }
    host.fs
        .read_opt("/proc/1/cgroup")
        .and_then(|t| kernel::container_from_cgroup(&t))
}

/// The kernel's host name, else `/etc/hostname`. Under `--host-root` the other way round: the
/// node's `/proc/sys/kernel/hostname` read from a pod gives the pod's own name (the value
/// belongs to the reader's UTS namespace), while the node's `/etc/hostname` is the node's.
fn hostname(host: &Host) -> Option<String> {
    let trimmed = |s: Option<String>| s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let kernel = || trimmed(host.fs.read_opt("/proc/sys/kernel/hostname"));
    let file = || trimmed(host.fs.read_opt("/etc/hostname"));
    if host.host_root().is_some() {
        file().or_else(kernel)
    } else {
        kernel().or_else(file)
    }
}

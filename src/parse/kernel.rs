//! Small kernel-side facts: loaded modules (`/proc/modules`), WSL (`/proc/version`), the
//! container runtime (`/proc/1/cgroup`), Secure Boot (the `SecureBoot` efivar) and PCI sysfs
//! attributes (`vendor`, `device`, `class`, `current_link_speed`).

/// Module names, the first column of `/proc/modules` (`lsmod` output is read too: its
/// `Module Size Used by` header is skipped).
pub fn loaded_modules(proc_modules: &str) -> Vec<String> {
    proc_modules
        .lines()
        .filter(|line| !(line.starts_with("Module ") && line.contains("Used by")))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| {
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
        .map(str::to_string)
        .collect()
}

/// A boolean or tristate option of a kernel's config (`/boot/config-<release>`): `y` or `m`
/// is on, `# CONFIG_X is not set` off; `None` when the config does not name it (a kernel
/// older than the option, or a config cut short).
#[must_use]
pub fn config_option(config: &str, name: &str) -> Option<bool> {
    config.lines().map(str::trim).find_map(|line| {
        if let Some(value) = line.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
            return Some(matches!(value, "y" | "m"));
        }
        let unset = line.strip_prefix("# ")?.strip_prefix(name)?;
        (unset == " is not set").then_some(false)
    })
}

/// Whether `/proc/version` is a WSL kernel's
/// (`Linux version 5.15.153.1-microsoft-standard-WSL2 ...`).
pub fn is_wsl(proc_version: &str) -> bool {
    let lower = proc_version.to_ascii_lowercase();
    lower.contains("microsoft") || lower.contains("wsl")
}

/// The container runtime named in `/proc/1/cgroup` (or `/proc/self/cgroup`): `docker`,
/// `kubernetes`, `containerd`, `podman` or `lxc`.
///
/// cgroup v1 lines look like `12:devices:/docker/3f5a...`, v2 lines like
/// `0::/system.slice/docker-3f5a....scope`. With cgroup v2 and a private cgroup namespace a
/// container sees only `0::/`, so `None` does not prove there is no container (look for
/// `/.dockerenv` or `/run/.containerenv` too).
pub fn container_from_cgroup(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    lower
        .lines()
        .filter_map(|line| runtime_in(line.splitn(3, ':').nth(2).unwrap_or(line)))
        .min()
        .map(|runtime| runtime.name().to_string())
}

/// Container runtimes, in the order they win when several match: Kubernetes paths name the
/// node's runtime too (`.../cri-containerd-<id>.scope`), so Kubernetes comes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Runtime {
    Kubernetes,
    Podman,
    Docker,
    Containerd,
    Lxc,
}

impl Runtime {
    fn name(self) -> &'static str {
        match self {
            Self::Kubernetes => "kubernetes",
            Self::Podman => "podman",
            Self::Docker => "docker",
            Self::Containerd => "containerd",
            Self::Lxc => "lxc",
        }
    }
}

/// The runtime a lowercase cgroup path belongs to.
fn runtime_in(path: &str) -> Option<Runtime> {
    let lxc = |segment: &str| {
        segment == "lxc" || segment.starts_with("lxc.payload") || segment.starts_with("lxc.monitor")
    };
    if path.contains("kubepods") {
        Some(Runtime::Kubernetes)
    } else if path.contains("libpod") || path.contains("podman") {
        Some(Runtime::Podman)
    } else if path.contains("docker") {
        Some(Runtime::Docker)
    } else if path.contains("containerd") {
        Some(Runtime::Containerd)
    } else if path.trim().split('/').any(lxc) {
        Some(Runtime::Lxc)
    } else {
        None
    }
}

/// Reads the `SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c` efivar: 4 attribute bytes, then
/// one data byte (1 = enabled, 0 = disabled).
pub fn secure_boot_from_efivar(bytes: &[u8]) -> Option<bool> {
    match bytes.get(4)? {
        0 => Some(false),
        1 => Some(true),
        _ => None,
    }
}

/// PCIe generation from a link speed as sysfs prints it (`current_link_speed`,
/// `max_link_speed`): `"8.0 GT/s PCIe"` → 3. `"Unknown"` and unknown speeds are `None`.
pub fn pcie_gen_from_speed(s: &str) -> Option<u32> {
    const GENERATIONS: [(f64, u32); 7] = [
        (2.5, 1),
        (5.0, 2),
        (8.0, 3),
        (16.0, 4),
        (32.0, 5),
        (64.0, 6),
        (128.0, 7),
    ];
    let gts: f64 = s.split_whitespace().next()?.parse().ok()?;
    GENERATIONS
        .iter()
        .find(|(speed, _)| (gts - speed).abs() < 0.05)
        .map(|(_, generation)| *generation)
}

/// A 16-bit PCI id as sysfs prints it: `"0x10de\n"` → 0x10de.
pub fn parse_hex_id(s: &str) -> Option<u16> {
    u16::from_str_radix(hex_digits(s, 4)?, 16).ok()
}

/// A PCI class as sysfs prints it: `"0x030200\n"` → 0x030200 (3D controller).
pub fn parse_class(s: &str) -> Option<u32> {
    u32::from_str_radix(hex_digits(s, 8)?, 16).ok()
}

/// The hex digits of `0x...`, at most `max` of them.
fn hex_digits(s: &str, max: usize) -> Option<&str> {
    let t = s.trim();
    let digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    let ok =
        !digits.is_empty() && digits.len() <= max && digits.bytes().all(|b| b.is_ascii_hexdigit());
    ok.then_some(digits)
}

#[cfg(test)]
mod tests {

    /// deepin-community/kernel#2144's 6.18 config and a config that has the keyring.
    #[test]
    fn kernel_config_options_are_on_off_or_not_named() {
        let deepin = "CONFIG_MODULE_SIG=y\nCONFIG_INTEGRITY_PLATFORM_KEYRING=y\n\
                      # CONFIG_INTEGRITY_MACHINE_KEYRING is not set\n";
        let key = "CONFIG_INTEGRITY_MACHINE_KEYRING";
        assert_eq!(config_option(deepin, key), Some(false));
        assert_eq!(config_option(deepin, "CONFIG_MODULE_SIG"), Some(true));
        assert_eq!(
            config_option("CONFIG_INTEGRITY_MACHINE_KEYRING=y\n", key),
            Some(true)
        );
        // A longer option's name is not this one's.
        assert_eq!(
            config_option("# CONFIG_INTEGRITY_MACHINE_KEYRING_X is not set\n", key),
            None
        );
        assert_eq!(config_option("CONFIG_MODULE_SIG=y\n", key), None);
    }
    use super::*;
    use crate::parse::text::testdata::{garbage, huge, section};

    const META: &str = include_str!("../../tests/data/h200/meta.txt");
    const OS: &str = include_str!("../../tests/data/h200/os.txt");

    #[test]
    fn h200_modules() {
        let modules = section(META, "== modules", "== ");
        assert_eq!(loaded_modules(&modules), vec!["nvidia_uvm", "nvidia"]);
    }

    #[test]
    fn lsmod_output() {
        let lsmod = "Module                  Size  Used by\n\
                     nvidia_uvm           1830912  0\n\
                     nvidia_drm             122880  2\n\
                     nvidia              14299136  1 nvidia_uvm\n";
        assert_eq!(
            loaded_modules(lsmod),
            vec!["nvidia_uvm", "nvidia_drm", "nvidia"]
        );
    }

    #[test]
    fn wsl_kernels() {
        let uname = OS.lines().find(|l| l.starts_with("Linux vm")).unwrap();
        assert!(!is_wsl(uname));
        assert!(is_wsl(
            "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1) (gcc (GCC) 11.2.0, GNU ld (GNU Binutils) 2.37) #1 SMP Fri Mar 29 23:14:13 UTC 2024"
        ));
        assert!(is_wsl(
            "Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com) (gcc version 5.4.0 (GCC) ) #3636-Microsoft Thu Oct 19 17:41:00 PST 2023"
        ));
        assert!(!is_wsl(
            "Linux version 6.8.0-45-generic (buildd@lcy02-amd64-115) (x86_64-linux-gnu-gcc-13 (Ubuntu 13.2.0-23ubuntu4) 13.2.0) #45-Ubuntu SMP PREEMPT_DYNAMIC"
        ));
    }

    #[test]
    fn cgroups() {
        // The H200 capture: a sandbox with its own cgroup names, no runtime marker.
        let markers = section(META, "== container markers", "== ");
        let cgroup_line = markers.lines().find(|l| l.starts_with("0::")).unwrap();
        assert_eq!(cgroup_line, "0::/process_api/core");
        assert_eq!(container_from_cgroup(cgroup_line), None);

        let docker_v1 = "12:pids:/docker/3f5a0c1e2b7d9a8f6e4c2b1a0d9e8f7c6b5a4d3c2b1a0f9e8d7c6b5a4f3e2d1c\n\
                         11:devices:/docker/3f5a0c1e2b7d9a8f6e4c2b1a0d9e8f7c6b5a4d3c2b1a0f9e8d7c6b5a4f3e2d1c\n\
                         1:name=systemd:/docker/3f5a0c1e2b7d9a8f6e4c2b1a0d9e8f7c6b5a4d3c2b1a0f9e8d7c6b5a4f3e2d1c\n";
        assert_eq!(container_from_cgroup(docker_v1).as_deref(), Some("docker"));
        let docker_v2 = "0::/system.slice/docker-3f5a0c1e2b7d9a8f6e4c2b1a0d9e8f7c.scope\n";
        assert_eq!(container_from_cgroup(docker_v2).as_deref(), Some("docker"));

        let k8s_v1 =
            "11:memory:/kubepods/burstable/pod6b1f7a2e-3c4d-4e5f-8a9b-0c1d2e3f4a5b/0a1b2c3d4e5f\n";
        assert_eq!(container_from_cgroup(k8s_v1).as_deref(), Some("kubernetes"));
        let k8s_v2 = "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod6b1f7a2e.slice/cri-containerd-0a1b2c3d.scope\n";
        assert_eq!(container_from_cgroup(k8s_v2).as_deref(), Some("kubernetes"));

        let containerd = "0::/default/ctr-test\n1:name=systemd:/system.slice/containerd.service\n";
        assert_eq!(
            container_from_cgroup(containerd).as_deref(),
            Some("containerd")
        );

        let podman = "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-8e2c1a.scope/container\n";
        assert_eq!(container_from_cgroup(podman).as_deref(), Some("podman"));

        assert_eq!(
            container_from_cgroup("0::/lxc.payload.ubuntu-gpu/init.scope\n").as_deref(),
            Some("lxc")
        );
        assert_eq!(
            container_from_cgroup("4:cpuset:/lxc/gpu-box\n").as_deref(),
            Some("lxc")
        );

        // A plain host.
        assert_eq!(
            container_from_cgroup("0::/user.slice/user-1000.slice/session-3.scope\n"),
            None
        );
        assert_eq!(container_from_cgroup("0::/\n"), None);
    }

    #[test]
    fn efivar() {
        assert_eq!(secure_boot_from_efivar(&[0x06, 0, 0, 0, 1]), Some(true));
        assert_eq!(secure_boot_from_efivar(&[0x06, 0, 0, 0, 0]), Some(false));
        assert_eq!(secure_boot_from_efivar(&[0x06, 0, 0, 0, 7]), None);
        assert_eq!(secure_boot_from_efivar(&[0x06, 0, 0, 0]), None);
        assert_eq!(secure_boot_from_efivar(&[]), None);
    }

    #[test]
    fn pci_sysfs_values() {
        // From the capture's /sys/bus/pci listing: vendor, device, class, link speed.
        let pci = section(META, "== pci", "== ");
        let gpu = pci.lines().find(|l| l.contains("0000:00:06.0")).unwrap();
        let fields: Vec<&str> = gpu.split_whitespace().collect();
        assert_eq!(parse_hex_id(fields[1]), Some(0x10de));
        assert_eq!(parse_hex_id(fields[2]), Some(0x2335));
        assert_eq!(parse_class(fields[3]), Some(0x030200));
        assert_eq!(pcie_gen_from_speed(&fields[4..7].join(" ")), Some(5));

        assert_eq!(parse_hex_id("0x10de\n"), Some(0x10de));
        assert_eq!(parse_hex_id("10DE"), Some(0x10de));
        assert_eq!(parse_hex_id("0x10de0"), None);
        assert_eq!(parse_hex_id("+10"), None);
        assert_eq!(parse_class("0x030000\n"), Some(0x030000));

        for (speed, generation) in [
            ("2.5 GT/s PCIe", 1),
            ("2.5 GT/s", 1),
            ("5.0 GT/s PCIe", 2),
            ("8.0 GT/s PCIe", 3),
            ("8 GT/s", 3),
            ("16.0 GT/s PCIe", 4),
            ("32.0 GT/s PCIe\n", 5),
            ("64.0 GT/s PCIe", 6),
        ] {
            assert_eq!(pcie_gen_from_speed(speed), Some(generation), "{speed}");
        }
        assert_eq!(pcie_gen_from_speed("Unknown"), None);
        assert_eq!(pcie_gen_from_speed("Unknown speed"), None);
        assert_eq!(pcie_gen_from_speed("0.0 GT/s"), None);
    }

    #[test]
    fn garbage_truncated_and_huge() {
        let g = garbage();
        assert!(loaded_modules("").is_empty());
        assert!(loaded_modules(&g).is_empty());
        assert!(!is_wsl(&g));
        assert_eq!(container_from_cgroup(&g), None);
        assert_eq!(container_from_cgroup(""), None);
        assert_eq!(pcie_gen_from_speed(&g), None);
        assert_eq!(pcie_gen_from_speed(""), None);
        assert_eq!(pcie_gen_from_speed("NaN GT/s"), None);
        assert_eq!(parse_hex_id(&g), None);
        assert_eq!(parse_hex_id(""), None);
        assert_eq!(parse_hex_id("0x"), None);
        assert_eq!(parse_class(&g), None);
        assert_eq!(secure_boot_from_efivar(g.as_bytes()), None);

        let big = huge("nvidia 14299136 - - Live 0xffffffffc0400000 (O)\n");
        assert!(loaded_modules(&big).iter().all(|m| m == "nvidia"));
        assert!(!is_wsl(&big));
        assert_eq!(container_from_cgroup(&huge("0::/user.slice/x\n")), None);
    }
}

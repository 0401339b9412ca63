//! The NVIDIA GPU switched off on purpose: a graphics switcher's integrated mode (EnvyControl,
//! Ubuntu's nvidia-prime, openSUSE's SUSEPrime), or any modprobe, kernel command line or udev configuration that
//! blocks the `nvidia` module or removes the GPU from the PCI bus (`report.kernel.gpu_switch`,
//! read by `probe::gpu_switch`). The driver is not missing and Secure Boot refused nothing:
//! switching back is the fix, not a reinstall. Finding: `gpu-switched-off`.

use super::{FindingBuilder, distro, ids};
use crate::manifest::Manifests;
use crate::report::{Finding, GpuSwitch, Report, Severity, Subject};

pub(super) fn findings(report: &Report, _manifests: &Manifests) -> Vec<Finding> {
    switched_off(report).into_iter().collect()
}

fn switched_off(report: &Report) -> Option<Finding> {
    let switch = report.kernel.gpu_switch.as_ref()?;
    // A loaded module is not switched off; a container's files are not the host's boot.
    if report.kernel.nvidia_loaded || report.host.container.is_some() {
        return None;
    }
    let on_bus = report
        .pci_devices
        .iter()
        .any(|d| d.vendor == "nvidia" && !d.nvswitch);
    let removed = !switch.device_removed.is_empty();
    // A blocked module matters only with a GPU for it; a removal rule hides the GPU itself.
    if !removed && !on_bus {
        return None;
    }
    let tool = switch.tool.as_deref();
    let title = match tool {
        Some("envycontrol") => "EnvyControl's integrated mode has switched the NVIDIA GPU off",
        Some("nvidia-prime") => "nvidia-prime's intel profile keeps the nvidia module from loading",
        Some("suse-prime") => "SUSEPrime's bbswitch blacklist keeps the nvidia module from loading",
        _ if removed => "A udev rule removes the NVIDIA GPU from the PCI bus at boot",
        _ => "The system's modprobe configuration keeps the nvidia module from loading",
    };
    let mut f =
        FindingBuilder::new(&ids::GPU_SWITCHED_OFF, Severity::Error, title).detail(if removed {
            "A udev rule removes the NVIDIA GPU from the PCI bus as it appears at boot, and the \
             nvidia module is kept from loading, so no driver sees the GPU (`lspci` does not \
             list it) and no CUDA program can use it. This is a graphics switcher's \
             integrated (power-saving) mode, not a missing driver: reinstalling the driver does \
             not bring the GPU back, switching the mode does."
        } else {
            "The nvidia module is blacklisted (or aliased off), so it does not load at boot and \
             nvidia-smi cannot reach a driver, though the GPU is on the bus and the driver is \
             installed. This is a graphics switcher's integrated (power-saving) profile or a \
             leftover blacklist, not a missing driver or a Secure Boot refusal."
        });
    for line in switch.module_blocked.iter().chain(&switch.device_removed) {
        f = f.evidence(line.clone());
    }
    if let Some(profile) = &switch.prime_profile {
        f = f.evidence(format!("/etc/prime-discrete: {profile}"));
    }
    if !on_bus {
        f = f.evidence("PCI bus: no NVIDIA display device (removed at boot)");
    }
    Some(
        f.subject(Subject::Driver(None))
            .explains(&ids::NO_GPU)
            .explains(&ids::NO_DRIVER)
            .explains(&ids::NVIDIA_SMI_FAILED)
            .fix_on_host(fix(report, switch))
            .build(),
    )
}

/// The way back in the switcher's own words (EnvyControl: `-s hybrid`; nvidia-prime:
/// `prime-select on-demand`), else the files to delete and the initramfs to rebuild.
fn fix(report: &Report, switch: &GpuSwitch) -> String {
    let mut files: Vec<&str> = switch
        .module_blocked
        .iter()
        .chain(&switch.device_removed)
        .filter_map(|l| l.split_once(": ").map(|(file, _)| file))
        .filter(|f| *f != "/proc/cmdline")
        .collect();
    files.dedup();
    let delete = if files.is_empty() {
        String::new()
    } else {
        format!(
            "delete {}, rebuild the initramfs ({})",
            files
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(" and "),
            distro::rebuild_initramfs(report)
        )
    };
    let cmdline = if switch
        .module_blocked
        .iter()
        .any(|l| l.starts_with("/proc/cmdline"))
    {
        " and take `nvidia` out of the kernel command line's module blacklist"
    } else {
        ""
    };
    match switch.tool.as_deref() {
        Some("envycontrol") => format!(
            "Switch EnvyControl back to hybrid mode and reboot: `sudo envycontrol -s hybrid` \
             (it removes its files). Where it stops with \"Could not find Nvidia GPU\" because \
             the GPU is already off the bus, {delete}{cmdline} and reboot; the GPU is then on \
             the bus and the driver loads. `envycontrol -q` says which mode is set."
        ),
        Some("nvidia-prime") => format!(
            "Switch nvidia-prime to a profile that loads the driver and reboot: `sudo \
             prime-select on-demand` (the NVIDIA GPU for CUDA and offloaded programs, the \
             integrated one for the desktop) or `sudo prime-select nvidia`{cmdline}; \
             `prime-select query` says which is set."
        ),
        Some("suse-prime") => format!(
            "Switch SUSEPrime to a mode that loads the driver and reboot: `sudo prime-select \
             offload` (the NVIDIA GPU for CUDA and offloaded programs) or `sudo prime-select \
             nvidia`{cmdline}; its bbswitch blacklist is for the `intel` mode only."
        ),
        _ if delete.is_empty() => "Take `nvidia` out of the kernel command line's module \
             blacklist (the boot loader's configuration) and reboot."
            .to_string(),
        _ => format!(
            "If the NVIDIA GPU is meant to be used: {delete}{cmdline}, and reboot (a graphics \
             switcher that wrote them has a mode that undoes them)."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::diagnose;
    use crate::report::PciDevice;

    fn laptop(os: &str, switch: GpuSwitch, on_bus: bool) -> Report {
        let mut r = Report::default();
        r.host.os_id = Some(os.to_string());
        if on_bus {
            r.pci_devices.push(PciDevice {
                address: "0000:01:00.0".into(),
                vendor: "nvidia".into(),
                device_id: "0x25a9".into(),
                ..PciDevice::default()
            });
        }
        r.kernel.gpu_switch = Some(switch);
        r
    }

    fn envycontrol() -> GpuSwitch {
        GpuSwitch {
            tool: Some("envycontrol".into()),
            module_blocked: vec!["/etc/modprobe.d/blacklist-nvidia.conf: blacklist nvidia".into()],
            device_removed: vec![
                "/etc/udev/rules.d/50-remove-nvidia.rules: ACTION==\"add\", ATTR{vendor}==\"0x10de\", ATTR{class}==\"0x03[0-9]*\", ATTR{remove}=\"1\"".into(),
            ],
            prime_profile: None,
        }
    }

    fn ids(r: &Report) -> Vec<String> {
        diagnose(r).into_iter().map(|f| f.id).collect()
    }

    /// bayasdev/envycontrol#198: the GPU is off the bus, so "no GPU, expected on a machine
    /// without one" would be wrong; the fix is EnvyControl's own, with the files to delete in
    /// Fedora's words where it cannot switch back.
    #[test]
    fn envycontrol_s_integrated_mode_is_the_root_not_a_missing_gpu() {
        let r = laptop("fedora", envycontrol(), false);
        assert_eq!(ids(&r), ["gpu-switched-off"]);
        let f = diagnose(&r).remove(0);
        let fix = f.fix.unwrap_or_default();
        assert!(fix.contains("sudo envycontrol -s hybrid"), "{fix}");
        assert!(
            fix.contains("/etc/udev/rules.d/50-remove-nvidia.rules"),
            "{fix}"
        );
        assert!(fix.contains("dracut --force --regenerate-all"), "{fix}");
        assert!(!fix.contains("update-initramfs"), "{fix}");
    }

    /// canonical/nvidia-prime#20: `prime-select intel` blacklists the module while the GPU
    /// stays on the bus; the finding replaces "install the driver".
    #[test]
    fn nvidia_prime_s_intel_profile_is_named_with_its_own_command() {
        let prime = GpuSwitch {
            tool: Some("nvidia-prime".into()),
            module_blocked: vec!["/lib/modprobe.d/blacklist-nvidia.conf: alias nvidia off".into()],
            device_removed: Vec::new(),
            prime_profile: Some("off".into()),
        };
        let r = laptop("ubuntu", prime, true);
        assert_eq!(ids(&r), ["gpu-switched-off"]);
        let fix = diagnose(&r).remove(0).fix.unwrap_or_default();
        assert!(fix.contains("sudo prime-select on-demand"), "{fix}");
    }

    /// The other direction: nothing switched off (hybrid mode, on-demand), or a blacklist with
    /// no NVIDIA GPU for it to matter to, or the module loaded after all, is no finding.
    #[test]
    fn no_switch_or_nothing_it_could_hold_is_no_finding() {
        let mut r = laptop("fedora", envycontrol(), true);
        r.kernel.gpu_switch = None;
        assert!(!ids(&r).contains(&"gpu-switched-off".to_string()));
        let blacklist_only = GpuSwitch {
            device_removed: Vec::new(),
            ..envycontrol()
        };
        let r = laptop("fedora", blacklist_only, false);
        assert!(!ids(&r).contains(&"gpu-switched-off".to_string()));
        let mut r = laptop("fedora", envycontrol(), true);
        r.kernel.nvidia_loaded = true;
        assert!(!ids(&r).contains(&"gpu-switched-off".to_string()));
    }

    #[test]
    fn an_unknown_blacklist_is_undone_in_the_distribution_s_words() {
        let own = GpuSwitch {
            tool: None,
            module_blocked: vec!["/etc/modprobe.d/no-nvidia.conf: blacklist nvidia".into()],
            device_removed: Vec::new(),
            prime_profile: None,
        };
        let fix = diagnose(&laptop("arch", own, true))
            .remove(0)
            .fix
            .unwrap_or_default();
        assert!(fix.contains("`/etc/modprobe.d/no-nvidia.conf`"), "{fix}");
        assert!(fix.contains("mkinitcpio -P"), "{fix}");
    }
}

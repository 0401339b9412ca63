//! Is there a GPU, is its driver loaded, and do the kernel module and the user-space libraries
//! agree? Findings: `no-gpu`, `no-driver`, `nouveau-loaded`, `nova-core-bound`, `driver-library-mismatch`,
//! `nvidia-smi-failed`.

use super::FindingBuilder;
use super::ids;
use crate::manifest::Manifests;
use crate::report::GpuSource;
use crate::report::Subject;
use crate::report::{
    DriverLibrary, DriverLibraryKind, Finding, PciDevice, ProbeStatus, Report, Severity,
};
use crate::version::Version;

const MISMATCH_TEXT: &str = "driver/library version mismatch";

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(no_gpu(report));
    out.extend(no_driver(report, manifests));
    out.extend(nouveau(report));
    out.extend(nova(report));
    out.extend(mismatch(report));
    out.extend(smi_failed(report));
    out
}

fn nvidia_on_bus(report: &Report) -> Vec<&PciDevice> {
    report
        .pci_devices
        .iter()
        .filter(|d| d.vendor == "nvidia" && !d.nvswitch)
        .collect()
}

/// A WSL2 guest sees its GPU through the Windows driver's libraries, not the PCI bus.
fn wsl_driver(report: &Report) -> Option<&DriverLibrary> {
    report
        .driver_libraries
        .iter()
        .find(|l| l.origin == "wsl" && l.name == "libcuda")
}

fn no_gpu(report: &Report) -> Option<Finding> {
    let any_gpu_on_bus = report.pci_devices.iter().any(|d| !d.nvswitch);
    let driver_answers = report.gpus.iter().any(|g| g.source != GpuSource::Pci);
    if any_gpu_on_bus
        || driver_answers
        || report.kernel.nvidia_loaded
        || wsl_driver(report).is_some()
        || super::amd::amd_gpu_evidence(report)
    {
        return None;
    }
    let bus_read = super::pci_bus_read(report);
    let mut f = FindingBuilder::new(&ids::NO_GPU, Severity::Info, "No GPU found on this machine")
        .detail(
            "No NVIDIA or AMD GPU is on the PCI bus and no GPU driver is loaded, so frameworks \
             will run on the CPU. This is expected on a machine without a GPU.",
        )
        .evidence(if bus_read {
            "no NVIDIA (0x10de) or AMD (0x1002) display controller under /sys/bus/pci/devices"
        } else {
            "PCI bus: /sys/bus/pci/devices could not be listed, and no GPU driver answers"
        })
        .evidence("nvidia kernel module: not loaded");
    if let Some(detail) = &report.driver.nvml.detail {
        f = f.evidence(format!("NVML: {detail}"));
    }
    if let Some(runtime) = report.host.container.as_deref() {
        f = f.evidence(format!(
            "container: {runtime}{}",
            if bus_read {
                " (its PCI bus is the host's: the host has no NVIDIA GPU either)"
            } else {
                ""
            }
        ));
        // With the host's bus in view and no GPU on it there is nothing to pass in; only an
        // unread bus leaves room for a GPU the container was not given.
        if !bus_read {
            f = f.fix(
                "If the host has an NVIDIA GPU, pass it in: run the container with `--gpus all` \
                 (Docker with the NVIDIA Container Toolkit) or request `nvidia.com/gpu` \
                 (Kubernetes).",
            );
        }
    }
    Some(f.build())
}

fn no_driver(report: &Report, manifests: &Manifests) -> Option<Finding> {
    let on_bus = nvidia_on_bus(report);
    if on_bus.is_empty() || report.kernel.nvidia_loaded {
        return None;
    }
    let mut f = FindingBuilder::new(
        &ids::NO_DRIVER,
        Severity::Error,
        format!(
            "NVIDIA GPU present but the nvidia kernel driver is not loaded ({} GPU(s) on the bus)",
            on_bus.len()
        ),
    )
    .detail(
        "The GPU is on the PCI bus, but the nvidia kernel module is not loaded, so no CUDA \
         program (PyTorch, TensorFlow, JAX) can use it. Either no driver is installed, or it \
         was installed for another kernel and did not build (DKMS), or Secure Boot refused to \
         load an unsigned module.",
    );
    for d in &on_bus {
        f = f.evidence(format!(
            "PCI {}: NVIDIA device {} bound to {}",
            d.address,
            d.device_id,
            d.bound_driver.as_deref().unwrap_or("no driver")
        ));
    }
    f = f.evidence("nvidia kernel module: not in /proc/modules, no /proc/driver/nvidia/version");
    if report.host.secure_boot == Some(true) {
        f = f.evidence("Secure Boot: enabled (an unsigned module will not load)");
        if report.kernel.machine_keyring == Some(false) {
            f = f.evidence(format!(
                "/boot/config-{}: # CONFIG_INTEGRITY_MACHINE_KEYRING is not set (MOK keys are \
                 not trusted for modules)",
                report.host.kernel_release.as_deref().unwrap_or("<release>")
            ));
        }
    }
    f = f.subject(Subject::Driver(None));
    if report.driver.nvidia_smi.status != ProbeStatus::Absent
        && report.driver.nvidia_smi.status != ProbeStatus::Skipped
    {
        f = f.explains(&ids::NVIDIA_SMI_FAILED);
    }
    for m in &report.kernel.module_files {
        f = f.evidence(format!(
            "module built for the running kernel: {m}{}",
            built_for_another(report, m)
                .map(|k| format!(" (its vermagic names kernel {k})"))
                .unwrap_or_default()
        ));
    }
    if let Some(key) = &report.kernel.module_signing_key {
        f = f.evidence(format!("local module-signing key: {key}"));
    }
    for line in super::module_build::evidence(report) {
        f = f.evidence(line);
    }
    Some(
        f.fix_on_host_if(report.host.container.is_none())
            .fix(no_driver_fix(report, manifests))
            .build(),
    )
}

/// The kernel release a module file's `.modinfo` vermagic names, when it is not the running
/// kernel's: a module copied or linked from another kernel's folder (RHEL's weak-updates do so
/// on purpose within one kABI; elsewhere modprobe refuses it with "Exec format error").
fn built_for_another<'a>(report: &'a Report, path: &str) -> Option<&'a str> {
    let running = report.host.kernel_release.as_deref()?;
    let info = report.kernel.module_info.iter().find(|i| i.path == path)?;
    let release = info.vermagic.as_deref()?.split_whitespace().next()?;
    (release != running).then_some(release)
}

/// What to do about a module that is not loaded, led by what the files show: a module built for
/// this kernel under Secure Boot needs its signing key enrolled (the kernel refuses it with "Key
/// was rejected by service"), not another install; only with no module built is installing the
/// driver the first step.
fn no_driver_fix(report: &Report, manifests: &Manifests) -> String {
    let fix = host_no_driver_fix(report, manifests);
    match report.host.container.as_deref() {
        // The module is the host's kernel's: nothing installed in the container loads it.
        Some(runtime) => {
            format!("This {runtime} container uses the host's kernel module; on the host: {fix}")
        }
        None => fix,
    }
}

fn host_no_driver_fix(report: &Report, manifests: &Manifests) -> String {
    let built = !report.kernel.module_files.is_empty();
    let key = report
        .kernel
        .module_signing_key
        .as_deref()
        .unwrap_or("/var/lib/dkms/mok.pub");
    // The driver is installed (its own libraries are there) but this kernel has no module:
    // a kmod built for another kernel, or a DKMS build that failed for this one
    // (AlmaLinux/almalinux-deploy#271, NVIDIA/open-gpu-kernel-modules#1176,
    // linux-surface/linux-surface#1884). "Install the driver" alone would miss that.
    // The build tools' own records say why better than the files can.
    if let Some(fix) = super::module_build::fix(report, manifests) {
        return fix;
    }
    if let Some((version, release)) = installed_without_module(report) {
        return format!(
            "The driver's libraries ({version}) are installed, but kernel {release} has no \
             nvidia module: its module package was built for another kernel, or its DKMS \
             build failed for this one (`sudo dkms status`; the build's make.log under \
             /var/lib/dkms says why: a kernel newer than the branch supports needs a newer \
             branch). Boot {}, or install a driver whose module builds for this kernel: {}.",
            // The reporter's own way out on AlmaLinux 9.7 (its forum, topic 7216): boot the
            // kernel the precompiled kmod was built for and hold the kernel there.
            super::module_build::newest_built_kernel(report).map_or_else(
                || "a kernel the module was built for".to_string(),
                |k| format!(
                    "kernel {k} from the boot menu (it has the module; make it the default and \
                     hold the kernel packages until the driver's module for the newer kernel \
                     is published: {})",
                    super::distro::hold_kernel(report)
                )
            ),
            super::distro::install_driver(report, &manifests.install)
        );
    }
    match (built, report.host.secure_boot) {
        // Without the machine keyring the enrolled MOK never reaches the keys that verify
        // modules (deepin-community/kernel#2144: "CONFIG_INTEGRITY_MACHINE_KEYRING disabled
        // causes enrolled MOK-signed NVIDIA DKMS modules to be rejected"): enrolling again
        // changes nothing.
        (true, Some(true)) if report.kernel.machine_keyring == Some(false) => format!(
            "Secure Boot is on and kernel {} is built without `CONFIG_INTEGRITY_MACHINE_KEYRING` \
             (its /boot/config says \"is not set\"), so keys enrolled as a MOK are not trusted \
             for modules: the nvidia module, signed with {key}, is refused however often the key \
             is enrolled. Boot a kernel whose config has `CONFIG_INTEGRITY_MACHINE_KEYRING=y` \
             (`grep INTEGRITY_MACHINE_KEYRING /boot/config-*` shows which installed kernels \
             do), or turn Secure Boot off in the firmware settings, and ask the distribution \
             for this kernel with the machine keyring. Do not reinstall the driver or enroll \
             the key again.",
            report
                .host
                .kernel_release
                .as_deref()
                .unwrap_or("the running kernel")
        ),
        (true, Some(true)) => format!(
            "Secure Boot is on and the nvidia module built for this kernel is signed with a key \
             the firmware does not trust yet. Enroll the key as a MOK: `sudo mokutil --import \
             {key}` (choose a one-time password), reboot, and in the blue MOK manager screen \
             pick \"Enroll MOK\", \"Continue\", enter the password; `nvidia-smi` then works. \
             Or turn Secure Boot off in the firmware settings. Do not reinstall the driver: the \
             module is already built (`sudo modprobe nvidia` shows \"Key was rejected by \
             service\")."
        ),
        (true, _) => "The nvidia module is built for this kernel but not loaded: \
             `sudo modprobe nvidia` names the reason (with Secure Boot on, \"Key was rejected \
             by service\" means its signing key must be enrolled with `sudo mokutil --import \
             /var/lib/dkms/mok.pub` and a reboot into \"Enroll MOK\"); `sudo dmesg | grep -i \
             nvidia` shows the kernel's side."
            .to_string(),
        // In the distribution's own words: `ubuntu-drivers` only on Ubuntu.
        (false, _) => format!(
            "{}. If a driver is installed, check `sudo dkms status` (no module was found for \
             the running kernel) and `sudo modprobe nvidia` for the error.",
            super::distro::install_driver(report, &manifests.install)
        ),
    }
}

/// The version of the driver's own libraries and the running kernel's release, when the
/// libraries are installed on this machine (not WSL's, not a container's host) and the module
/// folders of the running kernel were looked through and held no nvidia module.
fn installed_without_module(report: &Report) -> Option<(String, String)> {
    if !report.kernel.module_files.is_empty() || report.host.container.is_some() {
        return None;
    }
    let release = report.host.kernel_release.clone()?;
    let version = report
        .driver_libraries
        .iter()
        .filter(|l| l.kind == DriverLibraryKind::Driver && l.origin != "wsl")
        .find_map(|l| l.version.clone())?;
    Some((version, release))
}

fn nouveau(report: &Report) -> Option<Finding> {
    if !report.kernel.nouveau_loaded {
        return None;
    }
    let mut f = FindingBuilder::new(
        &ids::NOUVEAU_LOADED,
        Severity::Error,
        "The open-source nouveau driver is loaded and blocks the NVIDIA driver",
    )
    .detail(
        "nouveau drives the display but has no CUDA. While it holds the GPU the nvidia module \
         cannot bind to it, so CUDA frameworks cannot use the GPU.",
    )
    .evidence("nouveau in /proc/modules");
    for d in nvidia_on_bus(report) {
        if let Some(driver) = &d.bound_driver {
            f = f.evidence(format!("PCI {}: bound to {driver}", d.address));
        }
    }
    if !report.kernel.nvidia_loaded {
        f = f
            .explains(&ids::NO_DRIVER)
            .explains(&ids::NVIDIA_SMI_FAILED);
    }
    Some(
        f.fix_on_host(
            "Blacklist nouveau, rebuild the initramfs and reboot: \
             `printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | sudo tee /etc/modprobe.d/blacklist-nouveau.conf && sudo update-initramfs -u && sudo reboot`, \
             then install the NVIDIA driver (`gpu-doctor plan`).",
        )
        .build(),
    )
}

/// Whether a PCI driver name is nova's (`nova_core`, registered as "NovaCore": "NVRM: GPU
/// 0000:01:00.0 is already bound to NovaCore.", beclab/Olares#3963).
fn is_nova(driver: &str) -> bool {
    let d: String = driver
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .collect::<String>()
        .to_ascii_lowercase();
    d == "novacore" || d == "novadrm" || d == "nova"
}

/// Newer kernels (Ubuntu 26.04's 7.0 with `CONFIG_NOVA_CORE=m`) ship nova, nouveau's Rust
/// successor: `nova_core` matches every NVIDIA display device and claims Turing, Ampere and Ada
/// GPUs at boot, and then the nvidia module finds no device to bind ("Kernel module load error:
/// No such device"). The fix is to keep nova from loading, not `modprobe nvidia` or a Secure
/// Boot key.
fn nova(report: &Report) -> Option<Finding> {
    let held: Vec<(&str, &str)> = nvidia_on_bus(report)
        .into_iter()
        .filter_map(|d| {
            let driver = d.bound_driver.as_deref()?;
            is_nova(driver).then_some((d.address.as_str(), driver))
        })
        .collect();
    if held.is_empty() {
        return None;
    }
    let mut f = FindingBuilder::new(
        &ids::NOVA_CORE_BOUND,
        Severity::Error,
        "The in-kernel nova driver (nova_core) holds the NVIDIA GPU, so the nvidia module cannot bind",
    )
    .detail(
        "nova, the Rust successor to nouveau, ships as a module in newer kernels; nova_core \
         claims the GPU at boot and has no CUDA. Loading the nvidia module then fails with \
         \"NVRM: GPU ... is already bound to NovaCore\" and \"No NVIDIA devices probed\" \
         (\"Kernel module load error: No such device\"). This is not a Secure Boot or signing \
         problem, and `modprobe nvidia` cannot help while nova holds the device.",
    );
    for (address, driver) in &held {
        f = f.evidence(format!("PCI {address}: bound to {driver}"));
    }
    f = f
        .explains(&ids::NO_DRIVER)
        .explains(&ids::NVIDIA_SMI_FAILED);
    if report.kernel.nouveau_loaded {
        f = f.explains(&ids::NOUVEAU_LOADED);
    }
    Some(
        f.fix_on_host(
            "Blacklist nova (and nouveau), rebuild the initramfs and reboot: `printf 'blacklist \
             nova_core\\nblacklist nova_drm\\nblacklist nouveau\\n' | sudo tee \
             /etc/modprobe.d/blacklist-nova.conf && sudo update-initramfs -u && sudo reboot` \
             (Fedora/RHEL: `sudo dracut --force`); after the reboot `lspci -k` shows \"Kernel \
             driver in use: nvidia\" once the NVIDIA driver is installed (`gpu-doctor plan`).",
        )
        .build(),
    )
}

/// The first library of `name` the loader would pick, if it is a real driver copy.
fn first_driver_lib<'a>(report: &'a Report, name: &str) -> Option<&'a DriverLibrary> {
    report
        .driver_libraries
        .iter()
        .filter(|l| l.name == name)
        .min_by_key(|l| l.rank)
        .filter(|l| l.kind == DriverLibraryKind::Driver)
}

fn mismatch(report: &Report) -> Option<Finding> {
    let module = report.kernel.nvidia_version.as_deref();
    let said_by_tool = [
        ("NVML", &report.driver.nvml.detail),
        ("nvidia-smi", &report.driver.nvidia_smi.detail),
    ]
    .into_iter()
    .filter_map(|(who, d)| d.as_deref().map(|d| (who, d)))
    .find(|(_, d)| d.to_lowercase().contains(MISMATCH_TEXT));
    // A forward-compatibility libcuda is newer than the module on purpose: not a mismatch
    // (forward-compat-unsupported judges whether the GPU can use it).
    let compat = super::platform::forward_compat_libcuda(report).map(|(l, _)| l);
    let differing: Vec<&DriverLibrary> = ["libcuda", "libnvidia-ml"]
        .iter()
        .filter_map(|n| first_driver_lib(report, n))
        .filter(|l| !compat.is_some_and(|c| std::ptr::eq(*l, c)))
        .filter(|l| {
            match (
                module.and_then(Version::parse),
                l.version.as_deref().and_then(Version::parse),
            ) {
                (Some(m), Some(v)) => m != v,
                _ => false,
            }
        })
        .collect();
    if said_by_tool.is_none() && differing.is_empty() {
        return None;
    }
    let mut f = FindingBuilder::new(
        &ids::DRIVER_LIBRARY_MISMATCH,
        Severity::Error,
        "The loaded NVIDIA kernel module and the driver libraries are different versions",
    )
    .detail(
        "The driver was upgraded (or downgraded) but the old kernel module is still loaded. \
         User-space libraries and kernel module must be the same version, so NVML, nvidia-smi \
         and every CUDA program fail until the module is reloaded.",
    );
    if let Some(m) = module {
        f = f.evidence(format!(
            "kernel module: {m} ({})",
            report.kernel.source.as_deref().unwrap_or("kernel")
        ));
    }
    for lib in &differing {
        f = f.evidence(format!(
            "{}: {} ({})",
            lib.name,
            lib.version.as_deref().unwrap_or("unknown"),
            lib.resolved.as_deref().unwrap_or(&lib.path)
        ));
    }
    if let Some((who, text)) = said_by_tool {
        f = f.evidence(format!("{who}: {text}"));
    }
    let libraries = differing.first().and_then(|l| l.version.as_deref());
    Some(
        f.explains(&ids::NVIDIA_SMI_FAILED)
            .subject(Subject::Driver(None))
            .fix_on_host(mismatch_fix(report, module, libraries))
            .build(),
    )
}

/// What brings the module and the libraries back together. A reboot loads the module installed
/// on disk, which helps only where that module is the libraries' release. On an rpm-ostree
/// deployment the booted image carries both, so a module that lags its libraries is the image's
/// and boots again (ublue-os/bazzite#2668: "the client has the version 570.153.02, but this
/// kernel module has the version 570.144", fixed in the image build by ublue-os/main#891); a
/// module package of the loaded release, older than the libraries, is loaded again too.
fn mismatch_fix(report: &Report, module: Option<&str>, libraries: Option<&str>) -> String {
    let (Some(module), Some(libraries)) = (module, libraries) else {
        return REBOOT_FIX.to_string();
    };
    if report.host.ostree {
        return super::distro::deployment_mismatch(report, module, libraries);
    }
    let package = report.kernel.module_packages.iter().find(|p| {
        package_version(p)
            .zip(Version::parse(module))
            .is_some_and(|(v, m)| v == m)
    });
    match package {
        Some(p) => format!(
            "A reboot loads the same {module} module again: the installed module package \
             ({p}) is that release, older than the driver's libraries ({libraries}). Update the \
             driver's packages together so that the module package is {libraries} too ({}), \
             then reboot.",
            super::distro::update_driver(report)
        ),
        None => REBOOT_FIX.to_string(),
    }
}

const REBOOT_FIX: &str = "Reboot. Without a reboot, stop everything using the GPU and reload the \
     module: `sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia`.";

/// The driver version of a module package ("dpkg: nvidia-dkms-580-open 580.95.05-0ubuntu1" ->
/// 580.95.05; "pacman: nvidia-open 595.80-1" -> 595.80).
fn package_version(package: &str) -> Option<Version> {
    let version = package.rsplit(' ').next()?;
    Version::parse(version.split(['-', '+', '~']).next()?)
}

fn smi_failed(report: &Report) -> Option<Finding> {
    let smi = &report.driver.nvidia_smi;
    let hung = match smi.status {
        ProbeStatus::Failed => false,
        ProbeStatus::TimedOut => true,
        _ => return None,
    };
    let title = if hung {
        "nvidia-smi hung and was stopped"
    } else {
        "nvidia-smi is installed but fails"
    };
    let mut f =
        FindingBuilder::new(&ids::NVIDIA_SMI_FAILED, Severity::Error, title).detail(if hung {
            "nvidia-smi did not answer in time. A hung nvidia-smi usually means the driver is \
             stuck (a GPU that fell off the bus, an Xid error) or persistence mode is off on a \
             busy multi-GPU machine."
        } else {
            "nvidia-smi talks to the driver through NVML; when it fails, CUDA programs usually \
             fail the same way."
        });
    if let Some(path) = &report.driver.nvidia_smi_path {
        f = f.evidence(format!("nvidia-smi: {path}"));
    }
    if let Some(detail) = &smi.detail {
        f = f.evidence(detail.clone());
    }
    Some(
        f.fix_on_host_if(hung).fix(if hung {
            "Check `sudo dmesg | grep -i -E 'NVRM|Xid'` for driver errors; enable persistence mode \
             (`sudo nvidia-smi -pm 1`); a GPU that fell off the bus needs a reboot."
        } else {
            "Run `nvidia-smi` to see the full error. `sudo dmesg | grep NVRM` shows the driver's side."
        })
        .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::diagnose;
    use crate::report::{KernelInfo, ProbeOutcome};

    fn ids(report: &Report) -> Vec<String> {
        diagnose(report).into_iter().map(|f| f.id).collect()
    }

    fn gpu_on_bus(bound: Option<&str>) -> PciDevice {
        PciDevice {
            address: "0000:01:00.0".into(),
            vendor: "nvidia".into(),
            vendor_id: "0x10de".into(),
            device_id: "0x2684".into(),
            class: "0x030000".into(),
            bound_driver: bound.map(str::to_string),
            ..PciDevice::default()
        }
    }

    fn lib(name: &str, version: &str, kind: &str) -> DriverLibrary {
        DriverLibrary {
            name: name.into(),
            path: format!("/usr/lib/x86_64-linux-gnu/{name}.so.1"),
            resolved: Some(format!("/usr/lib/x86_64-linux-gnu/{name}.so.{version}")),
            version: Some(version.into()),
            kind: kind.into(),
            origin: "ld.so.conf".into(),
            rank: 0,
        }
    }

    fn loaded(version: &str) -> KernelInfo {
        KernelInfo {
            nvidia_loaded: true,
            nvidia_version: Some(version.into()),
            source: Some("/proc/driver/nvidia/version".into()),
            ..KernelInfo::default()
        }
    }

    #[test]
    fn empty_machine_is_no_gpu_and_nothing_else() {
        assert_eq!(ids(&Report::default()), ["no-gpu"]);
    }

    #[test]
    fn gpu_without_module_is_no_driver_and_explains_failing_smi() {
        let mut r = Report {
            pci_devices: vec![gpu_on_bus(None)],
            ..Report::default()
        };
        r.driver.nvidia_smi =
            ProbeOutcome::new(ProbeStatus::Failed, Some("couldn't communicate".into()));
        assert_eq!(ids(&r), ["no-driver"]);
    }

    #[test]
    fn a_module_whose_vermagic_names_another_kernel_says_so() {
        let mut r = Report {
            pci_devices: vec![gpu_on_bus(None)],
            ..Report::default()
        };
        r.host.kernel_release = Some("6.8.0-90-generic".into());
        let path = "/lib/modules/6.8.0-90-generic/updates/dkms/nvidia.ko.zst";
        r.kernel.module_files = vec![path.into()];
        r.kernel.module_info = vec![crate::report::ModuleFileInfo {
            path: path.into(),
            vermagic: Some("6.8.0-87-generic SMP preempt mod_unload modversions ".into()),
            ..Default::default()
        }];
        let evidence = |r: &Report| diagnose(r)[0].evidence.join("\n");
        assert!(
            evidence(&r).contains(&format!(
                "{path} (its vermagic names kernel 6.8.0-87-generic)"
            )),
            "{}",
            evidence(&r)
        );
        r.kernel.module_info[0].vermagic = Some("6.8.0-90-generic SMP preempt ".into());
        assert!(!evidence(&r).contains("vermagic"), "{}", evidence(&r));
    }

    #[test]
    fn nouveau_is_the_root_cause_over_no_driver() {
        let mut r = Report {
            pci_devices: vec![gpu_on_bus(Some("nouveau"))],
            ..Report::default()
        };
        r.kernel.nouveau_loaded = true;
        let findings = diagnose(&r);
        assert_eq!(
            findings.iter().map(|f| f.id.as_str()).collect::<Vec<_>>(),
            ["nouveau-loaded"]
        );
        assert!(
            findings[0]
                .evidence
                .iter()
                .any(|e| e.contains("bound to nouveau"))
        );
    }

    #[test]
    fn module_and_library_versions_that_differ_are_a_mismatch() {
        let r = Report {
            pci_devices: vec![gpu_on_bus(Some("nvidia"))],
            kernel: loaded("550.54.15"),
            driver_libraries: vec![lib("libcuda", "550.90.07", "driver")],
            ..Report::default()
        };
        let findings = diagnose(&r);
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].id, "driver-library-mismatch");
        assert!(findings[0].evidence.iter().any(|e| e.contains("550.90.07")));
    }

    /// A reboot fixes a mismatch only where the module on disk is the libraries' release: after
    /// an upgrade (the package is the libraries' release: reboot), not when the module package
    /// is the loaded, older release, nor on an rpm-ostree image that carries both
    /// (ublue-os/bazzite#2668: rollback, never a reboot into the same pair).
    #[test]
    fn a_reboot_is_the_fix_only_where_the_module_on_disk_is_the_libraries_release() {
        let mut r = Report {
            pci_devices: vec![gpu_on_bus(Some("nvidia"))],
            kernel: loaded("570.144"),
            driver_libraries: vec![lib("libcuda", "570.153.02", "driver")],
            ..Report::default()
        };
        r.host.os_id = Some("ubuntu".into());
        let fix = |r: &Report| diagnose(r)[0].fix.clone().unwrap_or_default();
        r.kernel.module_packages = vec!["dpkg: nvidia-dkms-570 570.153.02-0ubuntu1".into()];
        assert!(fix(&r).starts_with("Reboot."), "{}", fix(&r));
        r.kernel.module_packages = vec!["dpkg: nvidia-dkms-570 570.144-0ubuntu1".into()];
        let lagging = fix(&r);
        assert!(!lagging.starts_with("Reboot."), "{lagging}");
        assert!(
            lagging.contains("sudo apt update && sudo apt full-upgrade"),
            "{lagging}"
        );
        r.kernel.module_packages.clear();
        r.host.os_id = Some("bazzite".into());
        r.host.ostree = true;
        let image = fix(&r);
        assert!(image.contains("sudo rpm-ostree rollback"), "{image}");
        assert!(
            !image.contains("rmmod") && !image.contains("dnf "),
            "{image}"
        );
    }

    /// deepin-community/kernel#2144: with the module built and signed under Secure Boot, a
    /// kernel without the machine keyring refuses it whatever is enrolled; with the keyring
    /// (or not known) enrolling the key stays the fix.
    #[test]
    fn a_kernel_without_the_machine_keyring_is_not_told_to_enroll_the_key() {
        let mut r = Report {
            pci_devices: vec![gpu_on_bus(None)],
            ..Report::default()
        };
        r.host.secure_boot = Some(true);
        r.host.kernel_release = Some("6.18.48-amd64-desktop-rolling".into());
        r.kernel.module_files = vec![
            "/lib/modules/6.18.48-amd64-desktop-rolling/updates/dkms/nvidia-current.ko.zst".into(),
        ];
        let fix = |r: &Report| diagnose(r)[0].fix.clone().unwrap_or_default();
        for keyring in [Some(true), None] {
            r.kernel.machine_keyring = keyring;
            assert!(fix(&r).contains("mokutil --import"), "{}", fix(&r));
        }
        r.kernel.machine_keyring = Some(false);
        let text = fix(&r);
        assert!(text.contains("CONFIG_INTEGRITY_MACHINE_KEYRING"), "{text}");
        assert!(!text.contains("mokutil --import"), "{text}");
    }

    #[test]
    fn equal_versions_stubs_and_compat_copies_are_not_a_mismatch() {
        let mut r = Report {
            pci_devices: vec![gpu_on_bus(Some("nvidia"))],
            kernel: loaded("580.159.04"),
            driver_libraries: vec![
                lib("libcuda", "580.159.04", "driver"),
                lib("libnvidia-ml", "580.159.04", "driver"),
            ],
            ..Report::default()
        };
        assert!(ids(&r).is_empty());
        // A forward-compatibility libcuda first on the path is judged elsewhere, not here (this
        // one, older than the module, is `forward-compat-older-than-driver`'s).
        r.driver_libraries = vec![lib("libcuda", "580.95.05", "compat")];
        assert_eq!(ids(&r), ["forward-compat-older-than-driver"]);
    }

    #[test]
    fn the_mismatch_text_from_nvidia_smi_is_enough_and_replaces_smi_failed() {
        let mut r = Report {
            kernel: loaded("550.54.15"),
            ..Report::default()
        };
        r.driver.nvidia_smi = ProbeOutcome::new(
            ProbeStatus::Failed,
            Some("Failed to initialize NVML: Driver/library version mismatch".into()),
        );
        assert_eq!(ids(&r), ["driver-library-mismatch"]);
    }

    #[test]
    fn a_hung_smi_is_reported_as_hung() {
        let mut r = Report {
            kernel: loaded("550.54.15"),
            ..Report::default()
        };
        r.driver.nvidia_smi =
            ProbeOutcome::new(ProbeStatus::TimedOut, Some("did not answer".into()));
        let findings = diagnose(&r);
        assert_eq!(findings[0].id, "nvidia-smi-failed");
        assert!(findings[0].title.contains("hung"));
    }
}

//! `amdgpu-not-bound`: amdgpu is loaded, but an AMD GPU it could drive sits on the bus with no
//! driver bound, no KFD node and no render node. amdgpu leaves a card alone when the running
//! kernel's amdgpu predates it (its PCI id or IP blocks unknown), when the firmware files it
//! asks for are missing (a `linux-firmware` older than the card), or when its start failed;
//! the kernel log says which, the files only that no driver took the card.
//! ROCm/legacy-rocm-build#5102: an RX 9070 XT under Ubuntu 24.04's GA kernel 6.8 "didn't
//! recognize the GPU", where a newer kernel did.
//!
//! The other side of `amdgpu-not-loaded` (no amdgpu at all): here the module runs, for another
//! GPU or none, and the fix is a newer kernel and firmware rather than loading it.

use crate::diagnose::{FindingBuilder, distro, ids};
use crate::manifest::Manifests;
use crate::report::{Finding, GpuSource, PciDevice, Report, Severity, Subject};

use super::explains_undriven;
use super::not_loaded::{address_key, amdgpu_capable};

/// AMD GPUs with a gfx target bound to no driver while amdgpu is loaded, and no KFD node at
/// their address (a KFD node means amdgpu took the card, whatever the link says). A card
/// bound to radeon or vfio-pci is held on purpose and is `amdgpu-not-loaded`'s when amdgpu is
/// absent; WSL has no PCI view of the GPU.
pub(super) fn amdgpu_not_bound(report: &Report, manifests: &Manifests) -> Option<Finding> {
    if !report.kernel.amdgpu_loaded || report.host.wsl {
        return None;
    }
    let driven: std::collections::HashSet<String> = report
        .amd_gpus()
        .filter(|g| g.source == GpuSource::Kfd)
        .filter_map(|g| g.pci_bus_id.as_deref().map(address_key))
        .collect();
    let unbound: Vec<&PciDevice> = report
        .pci_devices
        .iter()
        .filter(|d| d.bound_driver.is_none() && amdgpu_capable(d, manifests))
        .filter(|d| !driven.contains(&address_key(&d.address)))
        .collect();
    if unbound.is_empty() {
        return None;
    }
    let names: std::collections::HashMap<String, &str> = report
        .amd_gpus()
        .filter_map(|g| Some((address_key(g.pci_bus_id.as_deref()?), g.name.as_deref()?)))
        .collect();
    let kernel = report
        .host
        .kernel_release
        .as_deref()
        .unwrap_or("the running kernel");
    let mut f = FindingBuilder::new(
        &ids::AMDGPU_NOT_BOUND,
        Severity::Error,
        format!(
            "amdgpu is loaded but did not take {} AMD GPU(s) on the bus (kernel {kernel})",
            unbound.len()
        ),
    )
    .detail(
        "The amdgpu module is loaded, yet no driver is bound to this GPU: it has no KFD node \
         and no render node, so ROCm (rocminfo, PyTorch, ollama, llama.cpp) sees only the CPU. \
         amdgpu leaves a card alone when the running kernel's amdgpu predates it, when the \
         firmware files it needs are missing (a linux-firmware older than the card), or when \
         its start failed; `sudo dmesg | grep -i amdgpu` says which. A ROCm release that \
         lists the card does not help while the kernel driver does not take it.",
    );
    for d in &unbound {
        f = f.evidence(format!(
            "PCI {}: AMD {} {} bound to no driver, no KFD node",
            d.address,
            d.device_id,
            names
                .get(&address_key(&d.address))
                .copied()
                .unwrap_or("GPU")
        ));
    }
    f = f.evidence(format!(
        "amdgpu kernel module: loaded ({})",
        report
            .rocm
            .as_ref()
            .and_then(|s| s.amdgpu.kind.as_deref())
            .map_or("the kernel's own", |k| if k == "dkms" {
                "AMD's amdgpu-dkms"
            } else {
                "the kernel's own"
            })
    ));
    f = explains_undriven(f);
    let mut fix = format!(
        "Boot a kernel whose amdgpu knows this GPU, with a linux-firmware as new: {}. Or build \
         AMD's driver of your ROCm release for this kernel: `sudo amdgpu-install \
         --usecase=rocm` (without `--no-dkms`, it installs amdgpu-dkms), then reboot. Check \
         with `sudo dmesg | grep -i amdgpu` that it takes the card, and `rocminfo` that it \
         lists it.",
        distro::newer_kernel(report)
    );
    if let Some(runtime) = report.host.container.as_deref() {
        fix = format!("This {runtime} container uses the host's kernel; on the host: {fix}");
    }
    Some(
        f.subject(Subject::Driver(Some("amdgpu".into())))
            .fix_on_host_if(report.host.container.is_none())
            .fix(fix)
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Gpu, GpuVendor};

    fn card(address: &str, device: &str, driver: Option<&str>) -> PciDevice {
        PciDevice {
            address: address.into(),
            vendor: "amd".into(),
            device_id: device.into(),
            bound_driver: driver.map(str::to_string),
            ..PciDevice::default()
        }
    }

    /// An RX 9070 XT (0x7550, gfx1201) under Ubuntu 24.04's GA kernel, amdgpu loaded.
    fn rx9070xt_unbound() -> Report {
        let mut r = Report::default();
        r.host.os_id = Some("ubuntu".into());
        r.host.os_version = Some("24.04".into());
        r.host.kernel_release = Some("6.8.0-60-generic".into());
        r.kernel.amdgpu_loaded = true;
        r.pci_devices = vec![card("0000:03:00.0", "0x7550", None)];
        r
    }

    fn manifests() -> &'static Manifests {
        crate::manifest::embedded()
    }

    #[test]
    fn a_card_no_driver_took_under_a_loaded_amdgpu_is_an_error_with_ubuntus_hwe_kernel() {
        let f = amdgpu_not_bound(&rx9070xt_unbound(), manifests()).expect("finding");
        assert_eq!(f.id, "amdgpu-not-bound");
        assert_eq!(f.severity, Severity::Error);
        assert!(f.title.contains("6.8.0-60-generic"), "{}", f.title);
        assert!(f.evidence.iter().any(|e| e.contains("0000:03:00.0")));
        let fix = f.fix.unwrap_or_default();
        assert!(
            fix.contains("linux-generic-hwe-24.04"),
            "Ubuntu's own words: {fix}"
        );
        assert!(f.explains.iter().any(|e| e == "kfd-missing"));
        assert!(f.explains.iter().any(|e| e == "rocm-too-old-for-gpu"));
    }

    #[test]
    fn other_distributions_and_non_lts_ubuntu_update_the_kernel_instead() {
        let mut fedora = rx9070xt_unbound();
        fedora.host.os_id = Some("fedora".into());
        fedora.host.os_version = Some("42".into());
        let fix = amdgpu_not_bound(&fedora, manifests())
            .and_then(|f| f.fix)
            .unwrap_or_default();
        assert!(fix.contains("dnf upgrade"), "{fix}");
        assert!(!fix.contains("hwe"), "{fix}");
        let mut interim = rx9070xt_unbound();
        interim.host.os_version = Some("25.04".into());
        let fix = amdgpu_not_bound(&interim, manifests())
            .and_then(|f| f.fix)
            .unwrap_or_default();
        assert!(!fix.contains("hwe"), "25.04 is no LTS: {fix}");
    }

    #[test]
    fn a_bound_card_a_kfd_node_or_no_amdgpu_at_all_is_not_this_finding() {
        let mut bound = rx9070xt_unbound();
        bound.pci_devices[0].bound_driver = Some("amdgpu".into());
        assert!(amdgpu_not_bound(&bound, manifests()).is_none());
        let mut passthrough = rx9070xt_unbound();
        passthrough.pci_devices[0].bound_driver = Some("vfio-pci".into());
        assert!(amdgpu_not_bound(&passthrough, manifests()).is_none());
        let mut kfd = rx9070xt_unbound();
        kfd.gpus.push(Gpu {
            vendor: GpuVendor::Amd,
            source: GpuSource::Kfd,
            pci_bus_id: Some("00000000:03:00.0".into()),
            ..Gpu::default()
        });
        assert!(amdgpu_not_bound(&kfd, manifests()).is_none());
        let mut unloaded = rx9070xt_unbound();
        unloaded.kernel.amdgpu_loaded = false;
        assert!(amdgpu_not_bound(&unloaded, manifests()).is_none());
        let mut unknown = rx9070xt_unbound();
        unknown.pci_devices[0].device_id = "0x75a8".into();
        assert!(
            amdgpu_not_bound(&unknown, manifests()).is_none(),
            "the table gives the MI350P no target: not claimed"
        );
    }

    #[test]
    fn in_a_container_the_fix_is_the_hosts() {
        let mut r = rx9070xt_unbound();
        r.host.container = Some("docker".into());
        let fix = amdgpu_not_bound(&r, manifests())
            .and_then(|f| f.fix)
            .unwrap_or_default();
        assert!(
            fix.starts_with("This docker container uses the host's kernel"),
            "{fix}"
        );
    }
}

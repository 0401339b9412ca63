//! `amdgpu-not-loaded`: an AMD GPU on the bus that no amdgpu module drives, the AMD twin of
//! `no-driver`, with the fix for what holds it (radeon, vfio-pci, a blacklist).

use crate::diagnose::{FindingBuilder, ids};
use crate::manifest::Manifests;
use crate::report::Subject;
use crate::report::{Finding, PciDevice, Report, Severity};

use super::explains_undriven;

/// An AMD GPU on the bus that no amdgpu module drives: bound to no driver, to the old `radeon`
/// driver, or to `vfio-pci`, with amdgpu neither in `/proc/modules` nor `/sys/module`. The AMD
/// twin of `no-driver`. GPUs no amdgpu release supports (pre-GCN, not in the AMD table with a
/// target) are left alone: `radeon` is their only driver.
pub(super) fn amdgpu_not_loaded(report: &Report, manifests: &Manifests) -> Option<Finding> {
    if report.kernel.amdgpu_loaded || report.host.wsl {
        return None;
    }
    let undriven = undriven(report, manifests);
    if undriven.is_empty() {
        return None;
    }
    let stack = report.rocm.as_ref();
    let mut f = FindingBuilder::new(
        &ids::AMDGPU_NOT_LOADED,
        Severity::Error,
        format!(
            "AMD GPU present but the amdgpu kernel driver is not loaded ({} GPU(s) on the bus)",
            undriven.len()
        ),
    )
    .detail(
        "The GPU is on the PCI bus, but the amdgpu kernel module is not loaded, so ROCm (and \
         PyTorch, ollama or llama.cpp on it) cannot use it: there is no /dev/kfd and no render \
         node. The kernel command line or a modprobe blacklist may keep amdgpu out, the older \
         radeon driver may have taken the card, or an amdgpu-dkms module failed to build for \
         this kernel.",
    );
    // Each GPU by its normalised bus address, the first of an address kept: one look-up per
    // device instead of a search of every GPU (5,000 devices took 7 s).
    let mut by_address = std::collections::HashMap::new();
    for g in report.amd_gpus() {
        if let Some(b) = g.pci_bus_id.as_deref() {
            by_address.entry(address_key(b)).or_insert(g);
        }
    }
    for d in &undriven {
        let gpu = by_address.get(&address_key(&d.address)).copied();
        f = f.evidence(format!(
            "PCI {}: AMD {} {} bound to {}",
            d.address,
            d.device_id,
            gpu.and_then(|g| g.name.as_deref()).unwrap_or("GPU"),
            d.bound_driver.as_deref().unwrap_or("no driver")
        ));
    }
    f = f.evidence("amdgpu kernel module: not in /proc/modules, no /sys/module/amdgpu");
    let cmdline: Vec<String> = stack.map(|s| s.amdgpu.cmdline.clone()).unwrap_or_default();
    let blacklisted: Vec<String> = stack
        .map(|s| s.amdgpu.blacklisted.clone())
        .unwrap_or_default();
    for w in &cmdline {
        f = f.evidence(format!("kernel command line: {w}"));
    }
    for b in &blacklisted {
        f = f.evidence(format!("modprobe: {b}"));
    }
    let fix = amdgpu_fix(report, &undriven, &cmdline, &blacklisted);
    f = explains_undriven(f);
    Some(
        // The host's kernel; in a container `amdgpu_fix` has said so.
        f.subject(Subject::Driver(Some("amdgpu".into())))
            .fix_on_host_if(report.host.container.is_none())
            .fix(fix)
            .build(),
    )
}

/// The AMD GPUs on the bus that amdgpu does not drive, among those it could: the AMD table
/// gives them a gfx target. Older cards have only `radeon`, and nothing is wrong with them.
fn undriven<'a>(report: &'a Report, manifests: &Manifests) -> Vec<&'a PciDevice> {
    report
        .pci_devices
        .iter()
        .filter(|d| d.bound_driver.as_deref() != Some("amdgpu") && amdgpu_capable(d, manifests))
        .collect()
}

/// An AMD device amdgpu can drive: the AMD table gives it a gfx target.
pub(super) fn amdgpu_capable(d: &PciDevice, manifests: &Manifests) -> bool {
    d.vendor == "amd"
        && crate::manifest::device_id(&d.device_id)
            .and_then(|id| manifests.amd_gpu_ids.table().identify(id, None))
            .is_some_and(|i| i.target.is_some())
}

/// What keeps amdgpu off, the most specific cause first: the GPU reserved for a VM (vfio-pci),
/// a kernel command line option or a modprobe blacklist, the old radeon driver holding the
/// card; else load it and read why it fails. A container shares the host's kernel, so the fix
/// is the host's.
fn amdgpu_fix(
    report: &Report,
    undriven: &[&PciDevice],
    cmdline: &[String],
    blacklisted: &[String],
) -> String {
    let radeon = undriven
        .iter()
        .any(|d| d.bound_driver.as_deref() == Some("radeon"));
    let vfio = undriven
        .iter()
        .all(|d| d.bound_driver.as_deref() == Some("vfio-pci"));
    let mut fix = if vfio {
        "The GPU is bound to vfio-pci: it is reserved for a virtual machine. If that is the \
         plan, run ROCm inside the VM; otherwise remove its id from the vfio-pci.ids= kernel \
         option (or /etc/modprobe.d), update the initramfs (`sudo update-initramfs -u`) and \
         reboot."
            .to_string()
    } else if cmdline
        .iter()
        .any(|w| w == "nomodeset" || w == "amdgpu.modeset=0" || w.starts_with("modprobe.blacklist"))
    {
        format!(
            "Remove `{}` from the kernel command line (GRUB_CMDLINE_LINUX_DEFAULT in \
             /etc/default/grub, then `sudo update-grub`) and reboot: it keeps amdgpu from \
             loading.",
            cmdline.join(" ")
        )
    } else if !blacklisted.is_empty() {
        "Delete the `blacklist amdgpu` line(s) shown above, run `sudo update-initramfs -u` and \
         reboot."
            .to_string()
    } else if radeon {
        "The old radeon driver holds the card. For GCN 1 cards boot with `radeon.si_support=0 \
         amdgpu.si_support=1`, for GCN 2 with `radeon.cik_support=0 amdgpu.cik_support=1` \
         (kernel command line), so amdgpu takes them. Note that ROCm does not run on GCN 1 or \
         2 cards at all."
            .to_string()
    } else {
        "Load the driver: `sudo modprobe amdgpu`, and read why it fails with `sudo dmesg | grep \
         -i amdgpu`. The distribution kernel ships amdgpu; with AMD's amdgpu-dkms check `sudo \
         dkms status` (no module built for the running kernel), or reinstall it with \
         `sudo amdgpu-install --usecase=rocm` (see `gpu-doctor plan`)."
            .to_string()
    };
    if let Some(runtime) = report.host.container.as_deref() {
        fix = format!("This {runtime} container uses the host's kernel; on the host: {fix}");
    }
    fix
}

/// A PCI address as its spellings (`0000:03:00.0`, `00000000:03:00.0`) compare equal: lower
/// case, the domain's leading zeros gone.
pub(super) fn address_key(x: &str) -> String {
    let x = x.to_ascii_lowercase();
    match x.split_once(':') {
        Some((domain, rest)) => format!("{}:{rest}", domain.trim_start_matches('0')),
        None => x,
    }
}

//! The kernel module against the GPU, beyond "does the driver know this PCI id"
//! (`gpu_support`): the module's branch is too new for a GPU NVIDIA moved to a legacy branch,
//! and its flavour (open or proprietary) is one that does not drive the GPU.
//!
//! - Too new: each compute capability's last driver branch is `cuda.toml`'s
//!   `last_driver_branch` (NVIDIA's CUDA toolkit, driver and architecture matrix: Kepler R470;
//!   Maxwell, Pascal and Volta R580). A newer module ignores the GPU ("NVRM: The NVIDIA GeForce
//!   GTX 1050 GPU installed in this system is supported through the NVIDIA 580.xx Legacy
//!   drivers ... The 595.58.03 NVIDIA driver will ignore this GPU", NixOS/nixos-hardware#1828)
//!   and, with no other GPU, fails to load ("NVRM: No NVIDIA GPU found").
//! - Flavour: the open modules need the GPU System Processor, which GPUs before Turing
//!   (compute capability below 7.5) lack ("NVRM: ... is not supported by open nvidia.ko because
//!   it does not include the required GPU System Processor (GSP)",
//!   zzzhouuu/truenas-nvidia-drivers#20); Blackwell (10.x, 12.x) and Grace Hopper run only on
//!   the open modules (NVIDIA's driver installation guide: "For cutting-edge platforms such as
//!   NVIDIA Grace Hopper or NVIDIA Blackwell, you must use the open-source GPU kernel modules";
//!   NVRM: "... requires use of the NVIDIA open kernel modules").
//!
//! Which flavour drives which GPUs is `cuda.toml`'s `[[kernel_module_flavour]]` (sourced rows by
//! compute capability, and by name for Grace Hopper), not constants here.
//!
//! The installed driver is read where it can be when the module is not loaded: the user-space
//! libraries' version, then the distribution's module package.

use super::{FindingBuilder, distro, ids};
use crate::manifest::Manifests;
use crate::report::GpuSource;
use crate::report::Subject;
use crate::report::{DriverLibraryKind, Finding, Gpu, ModuleFileInfo, Report, Severity};
use crate::version::Version;

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(too_new_for_gpu(report, manifests));
    out.extend(flavour(report, manifests));
    out
}

/// The installed driver's version and where it was read: nvidia-smi's, the loaded module's,
/// the driver's own libcuda or libnvidia-ml, else the version of the distribution's module
/// package, else the `.modinfo` version of a module file.
fn installed_driver(report: &Report) -> Option<(Version, String)> {
    if let Some(v) = report.driver.version.as_deref().and_then(Version::parse) {
        return Some((v.clone(), format!("driver {}", v.as_str())));
    }
    if let Some(v) = report
        .kernel
        .nvidia_version
        .as_deref()
        .and_then(Version::parse)
    {
        return Some((v.clone(), format!("loaded nvidia module {}", v.as_str())));
    }
    let lib = report
        .driver_libraries
        .iter()
        .filter(|l| l.kind == DriverLibraryKind::Driver && l.origin != "wsl")
        .find_map(|l| Some((Version::parse(l.version.as_deref()?)?, l)));
    if let Some((v, l)) = lib {
        return Some((
            v.clone(),
            format!("driver library {} ({})", l.path, v.as_str()),
        ));
    }
    let package = report.kernel.module_packages.iter().find_map(|p| {
        let version = p.rsplit(' ').next()?;
        let v = Version::parse(version.split(['-', '+', '~']).next()?)?;
        (v.major() >= 100).then(|| (v.clone(), format!("module package {p}")))
    });
    package.or_else(|| {
        report.kernel.module_info.iter().find_map(|m| {
            let v = Version::parse(m.version.as_deref()?)?;
            (v.major() >= 100).then(|| {
                (
                    v.clone(),
                    format!("module file {} ({})", m.path, v.as_str()),
                )
            })
        })
    })
}

/// The module's flavour (true: open) and where that was read: the loaded module's banner, else
/// the distribution's module package names, else the module file's own `.modinfo` licence,
/// else an `nvidia-open` module folder.
fn module_open(report: &Report) -> Option<(bool, String)> {
    if report.kernel.nvidia_loaded {
        return report.kernel.nvidia_open.map(|open| {
            (
                open,
                format!(
                    "/proc/driver/nvidia/version: {}",
                    if open {
                        "NVIDIA UNIX Open Kernel Module"
                    } else {
                        "NVIDIA UNIX Kernel Module (proprietary)"
                    }
                ),
            )
        });
    }
    if let Some(p) = report.kernel.module_packages.first() {
        let name = p.split(' ').nth(1).unwrap_or("");
        return Some((name.contains("open"), format!("module package {p}")));
    }
    if let Some(found) = modinfo_flavour(report) {
        return Some(found);
    }
    report
        .kernel
        .module_files
        .iter()
        .find(|f| f.contains("/nvidia-open/"))
        .map(|f| (true, format!("module file {f}")))
}

/// The flavour the module files' own `.modinfo` licences name, when every file that was read
/// names the same one (two files of different flavours leave the answer to modprobe's order,
/// which is not read here).
fn modinfo_flavour(report: &Report) -> Option<(bool, String)> {
    let read: Vec<(bool, &ModuleFileInfo)> = report
        .kernel
        .module_info
        .iter()
        .filter_map(|m| Some((m.open()?, m)))
        .collect();
    let (open, first) = *read.first()?;
    if read.iter().any(|(o, _)| *o != open) {
        return None;
    }
    Some((
        open,
        format!(
            "module file {}: .modinfo license={}",
            first.path,
            first.license.as_deref().unwrap_or_default()
        ),
    ))
}

/// A GPU's label for titles: "GPU 0 (NVIDIA GeForce GTX 1050, Pascal 6.1)".
fn label(g: &Gpu, cc: &str) -> String {
    format!(
        "GPU {} ({}, {}{cc})",
        g.index,
        g.name
            .as_deref()
            .or(g.pci_device_id.as_deref())
            .unwrap_or("unknown model"),
        g.architecture
            .as_deref()
            .map(|a| format!("{a} "))
            .unwrap_or_default()
    )
}

/// The NVIDIA GPUs whose compute capability is known, with it; overridden GPUs describe another
/// machine and are left out.
fn known_gpus(report: &Report) -> impl Iterator<Item = (&Gpu, &str, Version)> {
    report
        .nvidia_gpus()
        .filter(|g| g.source != GpuSource::Override)
        .filter_map(|g| {
            let cc = g.compute_capability.as_deref()?;
            Some((g, cc, Version::parse(cc)?))
        })
}

fn too_new_for_gpu(report: &Report, manifests: &Manifests) -> Option<Finding> {
    let (driver, source) = installed_driver(report)?;
    let dropped: Vec<(&Gpu, &str, u64)> = known_gpus(report)
        .filter_map(|(g, cc, _)| {
            let last = manifests.cuda.compute_capability(cc)?.last_driver_branch?;
            (driver.major() > last).then_some((g, cc, last))
        })
        .collect();
    let last = dropped.iter().map(|(_, _, l)| *l).min()?;
    let names: Vec<String> = dropped.iter().map(|(g, cc, _)| label(g, cc)).collect();
    let mut f = FindingBuilder::new(
        &ids::DRIVER_TOO_NEW_FOR_GPU,
        Severity::Error,
        format!(
            "Driver R{} no longer drives {}: its last branch is R{last}",
            driver.major(),
            names.join(", ")
        ),
    )
    .detail(
        "NVIDIA moves older GPUs to a legacy branch and later branches leave them out: R470 was \
         Kepler's last, R580 is Maxwell's, Pascal's and Volta's. A newer driver ignores the GPU \
         (\"NVRM: ... is supported through the NVIDIA 580.xx Legacy drivers ... will ignore \
         this GPU\"), and with no other GPU its module does not load (\"NVRM: No NVIDIA GPU \
         found\"), so nvidia-smi cannot reach the driver. Distribution updates bring the new \
         branch in unasked.",
    )
    .evidence(format!("installed: {source}"));
    for (g, cc, l) in &dropped {
        f = f
            .evidence(format!(
                "{}: compute capability {cc}, last driver branch R{l} (cuda.toml)",
                label(g, cc)
            ))
            .subject(g.subject());
    }
    Some(
        f.fix_on_host(distro::legacy_branch(report, &manifests.install, last))
            .explains(&ids::NO_DRIVER)
            .explains(&ids::NVIDIA_SMI_FAILED)
            .explains(&ids::MODULE_FLAVOUR_UNSUPPORTED)
            .build(),
    )
}

/// The module flavours that drive a GPU, from `cuda.toml`'s `[[kernel_module_flavour]]`.
fn flavours(manifests: &Manifests, g: &Gpu, cc: &str) -> Option<(bool, bool)> {
    manifests.cuda.module_flavours_for(g.name.as_deref(), cc)
}

fn flavour(report: &Report, manifests: &Manifests) -> Option<Finding> {
    let (open, source) = module_open(report)?;
    let wrong: Vec<String> = known_gpus(report)
        .filter(|(g, cc, _)| {
            flavours(manifests, g, cc).is_some_and(|(drives_open, drives_proprietary)| {
                if open {
                    !drives_open
                } else {
                    !drives_proprietary
                }
            })
        })
        .map(|(g, cc, _)| label(g, cc))
        .collect();
    if wrong.is_empty() {
        return None;
    }
    let branch = installed_driver(report).map(|(v, _)| v.major());
    let (title, detail) = if open {
        (
            format!(
                "The open nvidia kernel module does not drive {}",
                wrong.join(", ")
            ),
            "The open kernel modules run the GPU through its GPU System Processor (GSP), which \
             GPUs before Turing do not have: the module rejects them (\"NVRM: ... is not \
             supported by open nvidia.ko because it does not include the required GPU System \
             Processor (GSP)\"), and nvidia-smi finds no device. These GPUs need the proprietary \
             module of a branch that still drives them.",
        )
    } else {
        (
            format!(
                "The proprietary nvidia kernel module does not drive {}",
                wrong.join(", ")
            ),
            "Blackwell and Grace Hopper GPUs run only on NVIDIA's open kernel modules: the \
             proprietary module rejects them (\"NVRM: ... requires use of the NVIDIA open kernel \
             modules\"), and with no other GPU it does not load, so nvidia-smi cannot reach the \
             driver. Same branch, other flavour: the user-space driver stays.",
        )
    };
    let mut f = FindingBuilder::new(&ids::MODULE_FLAVOUR_UNSUPPORTED, Severity::Error, title)
        .detail(detail)
        .evidence(format!("module flavour: {source}"));
    for w in &wrong {
        f = f.evidence(w.clone());
    }
    let mut fix = distro::module_flavour(report, &manifests.install, !open, branch);
    // No package holds the module (a `.run` install) where the package database was read:
    // the installer that built it builds the other flavour (`--kernel-module-type`, R560 and
    // later: nvidia-installer's help, quoted in NVIDIA/gpu-driver-container#182).
    if report.kernel.module_packages.is_empty()
        && source.starts_with("module file")
        && distro::module_packages_read(report)
    {
        fix.push_str(&format!(
            ". If NVIDIA's `.run` installer put the driver there (no package holds the module), \
             run it again with `--kernel-module-type={}` instead",
            if open { "proprietary" } else { "open" }
        ));
    }
    Some(
        f.fix_on_host(fix)
            .subject(Subject::Driver(None))
            .explains(&ids::NO_DRIVER)
            .explains(&ids::NVIDIA_SMI_FAILED)
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{DriverLibrary, KernelInfo};

    fn gpu(name: &str, cc: &str) -> Gpu {
        Gpu {
            name: Some(name.into()),
            compute_capability: Some(cc.into()),
            source: "pci".into(),
            ..Gpu::default()
        }
    }

    fn machine(os: &str, gpus: Vec<Gpu>, kernel: KernelInfo, lib: Option<&str>) -> Report {
        let mut r = Report {
            gpus,
            kernel,
            driver_libraries: lib
                .map(|v| DriverLibrary {
                    name: "libcuda".into(),
                    path: "/usr/lib/libcuda.so.1".into(),
                    version: Some(v.into()),
                    origin: "ld.so.conf".into(),
                    kind: DriverLibraryKind::Driver,
                    ..DriverLibrary::default()
                })
                .into_iter()
                .collect(),
            ..Report::default()
        };
        r.host.os_id = Some(os.into());
        r
    }

    fn ids_of(r: &Report) -> Vec<String> {
        findings(r, crate::manifest::embedded())
            .into_iter()
            .map(|f| f.id)
            .collect()
    }

    #[test]
    fn r595_on_pascal_is_too_new_and_names_the_legacy_branch() {
        let r = machine(
            "nixos",
            vec![gpu("NVIDIA GeForce GTX 1050", "6.1")],
            KernelInfo::default(),
            Some("595.58.03"),
        );
        let found = findings(&r, crate::manifest::embedded());
        let f = found.iter().find(|f| f.id == "driver-too-new-for-gpu");
        let f = f.expect("driver-too-new-for-gpu");
        assert!(f.title.contains("R580"), "{}", f.title);
        assert!(f.fix.as_deref().unwrap_or("").contains("legacy_580"));
        assert!(f.explains.contains(&"no-driver".to_string()));
    }

    #[test]
    fn the_last_branch_itself_and_turing_on_r595_are_fine() {
        let r = machine(
            "ubuntu",
            vec![gpu("Tesla P4", "6.1")],
            KernelInfo::default(),
            Some("580.95.05"),
        );
        assert!(ids_of(&r).is_empty(), "{:?}", ids_of(&r));
        let r = machine(
            "arch",
            vec![gpu("NVIDIA GeForce RTX 2070", "7.5")],
            KernelInfo {
                nvidia_loaded: true,
                nvidia_version: Some("595.58.03".into()),
                nvidia_open: Some(true),
                ..KernelInfo::default()
            },
            None,
        );
        assert!(ids_of(&r).is_empty(), "{:?}", ids_of(&r));
    }

    #[test]
    fn open_module_on_pascal_and_proprietary_on_blackwell_are_the_wrong_flavour() {
        let loaded = |open: bool| KernelInfo {
            nvidia_loaded: true,
            nvidia_version: Some("580.95.05".into()),
            nvidia_open: Some(open),
            ..KernelInfo::default()
        };
        let r = machine("debian", vec![gpu("Tesla P4", "6.1")], loaded(true), None);
        assert_eq!(ids_of(&r), ["module-flavour-unsupported"]);
        let r = machine("debian", vec![gpu("Tesla P4", "6.1")], loaded(false), None);
        assert!(ids_of(&r).is_empty());
        let r = machine(
            "ubuntu",
            vec![gpu("NVIDIA GeForce RTX 5090", "12.0")],
            KernelInfo {
                module_packages: vec!["dpkg: nvidia-dkms-570 570.133.07-0ubuntu1".into()],
                ..KernelInfo::default()
            },
            Some("570.133.07"),
        );
        let found = findings(&r, crate::manifest::embedded());
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0]
                .fix
                .as_deref()
                .unwrap_or("")
                .contains("nvidia-driver-570-open")
        );
        let r = machine(
            "ubuntu",
            vec![gpu("NVIDIA GeForce RTX 5090", "12.0")],
            loaded(true),
            None,
        );
        assert!(ids_of(&r).is_empty());
    }
}

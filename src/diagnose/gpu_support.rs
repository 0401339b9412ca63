//! Whether the installed driver knows the GPU at all: a driver older than the first release
//! that lists a GPU's PCI id does not drive it (Ubuntu's `nvidia-driver-535` on an RTX 50:
//! `nvidia-smi` says "No devices were found", the kernel log "RmInitAdapter failed").
//!
//! The first release per id comes from NVIDIA's compatible-GPU table via `gpu-ids.toml`, filled
//! into `gpus[].first_driver` (only for Ada, Hopper and Blackwell ids, where that listing is
//! the driver's first support).

use super::ids;
use crate::manifest::Manifests;
use crate::report::GpuSource;
use crate::report::{Finding, Gpu, Report, Severity};
use crate::version::Version;

use super::FindingBuilder;

pub(super) fn findings(report: &Report, _manifests: &Manifests) -> Vec<Finding> {
    too_old_for_gpu(report).into_iter().collect()
}

/// The installed driver's version: nvidia-smi's, else the loaded kernel module's.
fn driver_version(report: &Report) -> Option<(Version, &str)> {
    let text = report
        .driver
        .version
        .as_deref()
        .or(report.kernel.nvidia_version.as_deref())?;
    Some((Version::parse(text)?, text))
}

fn too_old_for_gpu(report: &Report) -> Option<Finding> {
    let (driver, driver_text) = driver_version(report)?;
    // Overridden GPUs describe another machine; the driver cannot be judged against them.
    let unknown: Vec<(&Gpu, Version)> = report
        .nvidia_gpus()
        .filter(|g| g.source != GpuSource::Override)
        .filter_map(|g| {
            let first = Version::parse(g.first_driver.as_deref()?)?;
            (driver < first).then_some((g, first))
        })
        .collect();
    let newest = unknown.iter().map(|(_, first)| first).max()?.clone();
    let names: Vec<String> = unknown
        .iter()
        .map(|(g, _)| {
            format!(
                "GPU {} ({})",
                g.index,
                g.name
                    .as_deref()
                    .or(g.pci_device_id.as_deref())
                    .unwrap_or("unknown model")
            )
        })
        .collect();
    let mut f = FindingBuilder::new(
        &ids::DRIVER_TOO_OLD_FOR_GPU,
        Severity::Error,
        format!(
            "Driver {driver_text} predates {}: it needs {newest} or newer",
            names.join(", ")
        ),
    )
    .detail(
        "NVIDIA's drivers list this GPU only from a later release: an older driver does not \
         know its PCI id and does not drive it, so nvidia-smi says \"No devices were found\" and \
         CUDA sees no GPU. Distribution packages are often a branch behind a new card (Ubuntu's \
         nvidia-driver-535 knows no RTX 50 GPU).",
    )
    .fix_on_host(format!(
        "Install driver branch R{} or newer (`gpu-doctor plan` picks one), then reboot",
        newest.major()
    ))
    .explains(&ids::NVIDIA_SMI_FAILED)
    .explains(&ids::NO_DRIVER)
    // A branch that predates the GPU is the cause whatever its flavour: the branch that knows
    // the GPU is installed in the flavour the GPU needs.
    .explains(&ids::MODULE_FLAVOUR_UNSUPPORTED);
    // `names` is built from `unknown` in order: each GPU's name is beside it, not searched for.
    for ((g, first), name) in unknown.iter().zip(&names) {
        f = f
            .evidence(format!(
                "{name}: PCI id {}, listed by NVIDIA's drivers from {first} on",
                g.pci_device_id.as_deref().unwrap_or("unknown")
            ))
            .subject(g.subject());
    }
    Some(
        f.evidence(format!("installed driver: {driver_text}"))
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{DriverInfo, KernelInfo};

    fn report(driver: Option<&str>, module: Option<&str>, first: Option<&str>) -> Report {
        Report {
            driver: DriverInfo {
                version: driver.map(str::to_string),
                ..DriverInfo::default()
            },
            kernel: KernelInfo {
                nvidia_loaded: module.is_some(),
                nvidia_version: module.map(str::to_string),
                ..KernelInfo::default()
            },
            gpus: vec![Gpu {
                name: Some("NVIDIA GeForce RTX 5090".into()),
                pci_device_id: Some("0x2b85".into()),
                first_driver: first.map(str::to_string),
                source: "pci".into(),
                ..Gpu::default()
            }],
            ..Report::default()
        }
    }

    fn run(r: &Report) -> Vec<Finding> {
        findings(r, crate::manifest::embedded())
    }

    #[test]
    fn a_535_module_on_an_rtx_5090_is_too_old() {
        let found = run(&report(None, Some("535.183.01"), Some("570.86.16")));
        assert_eq!(found.len(), 1, "{found:#?}");
        let f = &found[0];
        assert_eq!(f.id, "driver-too-old-for-gpu");
        assert_eq!(f.severity, Severity::Error);
        assert!(f.title.contains("535.183.01"), "{}", f.title);
        assert!(f.title.contains("570.86.16"), "{}", f.title);
        assert!(f.fix.as_deref().is_some_and(|x| x.contains("R570")));
        assert!(f.explains.contains(&"nvidia-smi-failed".to_string()));
    }

    #[test]
    fn a_driver_at_or_after_the_first_listing_is_fine() {
        assert!(run(&report(Some("570.86.16"), None, Some("570.86.16"))).is_empty());
        assert!(run(&report(Some("580.95.05"), None, Some("570.86.16"))).is_empty());
    }

    #[test]
    fn nothing_is_judged_without_a_driver_or_a_first_release() {
        assert!(run(&report(None, None, Some("570.86.16"))).is_empty());
        assert!(run(&report(Some("535.183.01"), None, None)).is_empty());
        // A version that is no version is not compared.
        assert!(run(&report(Some("Not Found"), None, Some("570.86.16"))).is_empty());
    }
}

//! `rocm-too-old-for-gpu`: the installed ROCm predates the GPU's gfx target.

use crate::diagnose::{FindingBuilder, ids};
use crate::manifest::Manifests;
use crate::report::rocm::RocmStack;
use crate::report::{Finding, Gpu, Report, Severity};
use crate::version::{Version, compare};

use super::gpu_label;

/// The ROCm that `/opt/rocm` points at predates the GPU's target (RDNA 4 before ROCm 6.4.1,
/// MI350 before 7.0): its runtime and libraries have no code for it. An error when something
/// here uses that install (no ROCm framework brings its own runtime), a warning when the
/// frameworks bundle theirs and only tools built against `/opt/rocm` are affected.
pub(super) fn rocm_too_old(report: &Report, manifests: &Manifests) -> Option<Finding> {
    let stack: &RocmStack = report.rocm.as_ref()?;
    let install = stack.programs_install()?;
    let version_text = install.version.as_deref()?;
    let version = Version::parse(version_text)?;
    let mut late: Vec<(&Gpu, &str)> = Vec::new();
    for gpu in report.amd_gpus() {
        let Some(gfx) = gpu.gfx_target.as_deref() else {
            continue;
        };
        if let Some(first) = manifests.rocm.first_release(gfx)
            && Version::parse(&first.rocm).is_some_and(|f| version < f)
        {
            late.push((gpu, first.rocm.as_str()));
        }
    }
    let (_, need) = *late.iter().max_by(|a, b| compare(a.1, b.1))?;
    let bundled = report
        .python_envs
        .iter()
        .flat_map(|e| &e.frameworks)
        .any(|f| f.variant.as_deref() == Some("rocm") && !f.bundled_runtime.is_empty());
    let severity = if bundled {
        Severity::Warning
    } else {
        Severity::Error
    };
    let mut f = FindingBuilder::new(
        &ids::ROCM_TOO_OLD_FOR_GPU,
        severity,
        format!(
            "ROCm {version_text} in {} predates {}: it needs ROCm {need} or newer",
            install.path,
            late.iter()
                .map(|(g, _)| gpu_label(g))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
    .detail(
        "The installed ROCm was released before this GPU: its runtime and math libraries carry \
         no code for the GPU's target, so programs built against it fail on the GPU \
         (\"invalid device function\", hipErrorNoBinaryForGpu) or do not list it.",
    )
    .evidence(format!("{}: ROCm {version_text}", install.path));
    for (gpu, first) in &late {
        f = f
            .evidence(format!(
                "{}: first supported by ROCm {first} (rocm.toml)",
                gpu_label(gpu)
            ))
            .subject(gpu.subject());
    }
    if !install.rocblas_targets.is_empty() {
        f = f.evidence(format!(
            "{}/lib/rocblas/library has kernels for: {}",
            install.path,
            install.rocblas_targets.join(" ")
        ));
    }
    if bundled {
        f = f.evidence(
            "the ROCm builds of the Python frameworks here bring their own runtime: they are not affected",
        );
    }
    if !bundled {
        f = f.explains(&ids::ARCH_NOT_IN_BUILD);
    }
    Some(
        f.fix(format!(
            "Install ROCm {need} or newer with AMD's installer (`amdgpu-install` from \
             repo.radeon.com; `gpu-doctor plan` writes the steps), so that /opt/rocm points at it."
        ))
        .build(),
    )
}

//! `rocm-gpu-unsupported`: a GPU no ROCm release can drive (too old, or dropped after ROCm 4).

use crate::diagnose::{FindingBuilder, ids};
use crate::manifest::Manifests;
use crate::report::GpuSource;
use crate::report::{Finding, Gpu, Report, Severity};
use crate::version::GfxTarget;

use super::{gpu_label, kfd_gpus, wants_amd_compute};

/// An AMD GPU ROCm cannot drive at all: its target is one amdkfd does not support (GCN 1,
/// Bonaire, Kabini: "not supported in kfd"), or one no current ROCm ships code for (GCN 2 to
/// 4: gfx7xx and gfx8xx, dropped in ROCm 4.0), or amdgpu drives it and KFD lists other GPUs but
/// not it. Reported when the machine wants GPU compute; a warning when another AMD GPU here is
/// usable, an error when none is.
pub(super) fn gpu_unsupported(report: &Report, manifests: &Manifests) -> Option<Finding> {
    if !wants_amd_compute(report) {
        return None;
    }
    let kfd_topology = report.rocm.as_ref().is_some_and(|s| s.kfd_topology);
    let bad: Vec<(&Gpu, String)> = report
        .amd_gpus()
        .filter_map(|gpu| Some((gpu, unsupported_because(manifests, gpu, kfd_topology)?)))
        .collect();
    if bad.is_empty() {
        return None;
    }
    let usable_other = report
        .amd_gpus()
        .any(|g| g.source == GpuSource::Kfd && !bad.iter().any(|(b, _)| b.index == g.index));
    let severity = if usable_other {
        Severity::Warning
    } else {
        Severity::Error
    };
    let dropped = bad.iter().all(|(g, _)| dropped_in_rocm4(manifests, g));
    let mut f = FindingBuilder::new(
        &ids::ROCM_GPU_UNSUPPORTED,
        severity,
        if bad.len() == 1 {
            format!("ROCm cannot run on {}", gpu_label(bad[0].0))
        } else {
            format!("ROCm cannot run on {} of the AMD GPUs", bad.len())
        },
    )
    .detail(if usable_other {
        "ROCm never uses this GPU; the other AMD GPU(s) here are the ones ROCm programs run on. \
         Hide it from ROCm so nothing tries it (HIP_VISIBLE_DEVICES)."
    } else if dropped {
        "ROCm dropped this GPU's target in 4.0: no current ROCm release (and so no current ROCm \
         build of PyTorch, ollama or llama.cpp) ships code for it, and HSA_OVERRIDE_GFX_VERSION \
         does not help (it only maps a GPU onto a sibling target of its own family, and there is \
         none here). The ROCm releases before 4.0 did run it."
    } else {
        "No ROCm release (and so no ROCm build of PyTorch, ollama or llama.cpp) can compute on \
         this GPU, whatever is installed: HSA_OVERRIDE_GFX_VERSION does not help (it only maps \
         a GPU onto a sibling target of its own family, and there is none here)."
    });
    for (gpu, why) in &bad {
        f = f.evidence(why.clone()).subject(gpu.subject());
    }
    let fix = if usable_other {
        let keep: Vec<String> = kfd_gpus(report)
            .iter()
            .filter(|g| !bad.iter().any(|(b, _)| b.index == g.index))
            .filter_map(|g| g.rocm_index.map(|i| i.to_string()))
            .collect();
        format!(
            "Run ROCm programs with the supported GPU(s) only: `export HIP_VISIBLE_DEVICES={}`.",
            keep.join(",")
        )
    } else {
        no_rocm_fix(dropped)
    };
    if !usable_other {
        for id in [
            &ids::ARCH_NOT_IN_BUILD,
            &ids::CUDA_BUILD_ON_AMD_GPU,
            &ids::CPU_ONLY_FRAMEWORK_BUILD,
            &ids::KFD_MISSING,
            &ids::ROCM_TOO_OLD_FOR_GPU,
            &ids::HSA_OVERRIDE_MISMATCH,
        ] {
            f = f.explains(id);
        }
    }
    Some(f.fix(fix).build())
}

/// Whether ROCm once ran this GPU and dropped it: a gfx7 or gfx8 target that amdkfd supports,
/// whose code ROCm stopped shipping in 4.0 (shared/reference/rocm.md: "gfx8 dropped in ROCm
/// 4.0"; ROCm/tensorflow-upstream#1305: RX 570, "wont get official support any more, since
/// ROCm-4.0 ... You can downgrade to ROCm-3.5.1"), as against a target KFD never drove.
fn dropped_in_rocm4(manifests: &Manifests, gpu: &Gpu) -> bool {
    let table = manifests.amd_gpu_ids.table();
    let never = gpu
        .gfx_target
        .as_deref()
        .and_then(|g| table.target(g))
        .is_some_and(|t| t.kfd == "no");
    !never
        && gpu
            .gfx_target
            .as_deref()
            .and_then(GfxTarget::parse)
            .is_some_and(|g| (7..=8).contains(&g.major))
}

/// What to do about a GPU no current ROCm runs: where an older ROCm did, say so (it is a path,
/// if an old one), then the backends that run on it today.
fn no_rocm_fix(dropped: bool) -> String {
    let others = "use a backend that runs on it (Vulkan in llama.cpp or ollama's Vulkan build, \
         OpenCL), run on the CPU, or use a GPU that current ROCm supports (`gpu-doctor advise`).";
    if dropped {
        format!(
            "Current ROCm has no path for this GPU, but the ROCm releases before 4.0 (ROCm 3.x; \
             users run these cards on ROCm 3.5.1) did, with the framework builds of that time \
             and a distribution and kernel those releases support. Otherwise {others}"
        )
    } else {
        format!("There is no ROCm path for this GPU: {others}")
    }
}

/// Why ROCm cannot drive this GPU, if it cannot: KFD does not support its target, no ROCm since
/// 4.0 ships code for gfx8 or older, or amdgpu drives it while the KFD topology (present) has
/// no node for it.
fn unsupported_because(manifests: &Manifests, gpu: &Gpu, kfd_topology: bool) -> Option<String> {
    let table = manifests.amd_gpu_ids.table();
    let target = gpu.gfx_target.as_deref().and_then(|g| table.target(g));
    let gfx = gpu.gfx_target.as_deref().and_then(GfxTarget::parse);
    if let Some(t) = target.filter(|t| t.kfd == "no") {
        Some(format!(
            "{} is {} ({}): the kernel's KFD has no support for it, so ROCm never sees it",
            gpu_label(gpu),
            t.family,
            t.gfx
        ))
    } else if let Some(g) = gfx.filter(|g| g.major <= 8) {
        Some(format!(
            "{} is {} ({g}): no ROCm release since 4.0 ships code for gfx8 or older",
            gpu_label(gpu),
            target.map_or("GCN", |t| t.family.as_str())
        ))
    } else if gpu.source != GpuSource::Kfd
        && gpu.bound_driver.as_deref() == Some("amdgpu")
        && kfd_topology
    {
        Some(format!(
            "{}: amdgpu drives it, but the KFD topology has no node for it (the kernel log \
             says why: \"not supported in kfd\", or \"PCI rejects atomics\" on a slot \
             without PCIe atomics)",
            gpu_label(gpu)
        ))
    } else {
        None
    }
}

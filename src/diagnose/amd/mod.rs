//! AMD GPUs and the ROCm stack under them: is the amdgpu driver loaded, does KFD (the
//! kernel's compute driver) expose `/dev/kfd`, can ROCm drive this GPU at all, may the user
//! open the device nodes, and is the ROCm install new enough for the GPU. Findings:
//! `amdgpu-dkms-build-failed`, `amdgpu-not-loaded`, `amdgpu-not-bound`, `kfd-missing`, `rocm-gpu-unsupported`, `rocm-device-permission`,
//! `rocm-too-old-for-gpu`.
//!
//! These are the root causes of the AMD framework findings (`amd_builds.rs`, `amd_env.rs`):
//! each lists the symptoms it explains, as the NVIDIA driver rules do.
//!
//! One file per finding; this file holds what they share: whether an AMD GPU is here and wanted
//! for compute, the KFD GPUs, how a GPU is named, and the symptoms the root causes explain.

mod dkms;
mod kfd;
mod not_bound;
mod not_loaded;
mod permission;
mod too_old;
mod unsupported;

use super::ids;
use crate::manifest::Manifests;
use crate::report::GpuSource;
use crate::report::{Finding, Gpu, Report};

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(dkms::dkms_build_failed(report));
    out.extend(not_loaded::amdgpu_not_loaded(report, manifests));
    out.extend(not_bound::amdgpu_not_bound(report, manifests));
    out.extend(kfd::kfd_missing(report));
    out.extend(unsupported::gpu_unsupported(report, manifests));
    out.extend(permission::device_permission(report));
    out.extend(too_old::rocm_too_old(report, manifests));
    out
}

/// Anything that shows an AMD GPU is (or may be) here: an AMD display controller on the bus,
/// the amdgpu module, a KFD GPU node, `/dev/kfd`, or WSL's `/dev/dxg` with a ROCm install or
/// a ROCm framework build (under WSL the GPU is reached through the Windows driver, off the
/// PCI bus). `no-gpu` must never fire when one is there.
pub(crate) fn amd_gpu_evidence(report: &Report) -> bool {
    let rocm = report.rocm.as_ref();
    report.pci_devices.iter().any(|d| d.vendor == "amd")
        || report.kernel.amdgpu_loaded
        || rocm.is_some_and(|r| !r.kfd_nodes.is_empty())
        || has_node(report, "/dev/kfd")
        || (has_node(report, "/dev/dxg") && (rocm_installed(report) || rocm_framework(report)))
}

fn has_node(report: &Report, path: &str) -> bool {
    report.kernel.device_nodes.iter().any(|n| n == path)
}

fn rocm_installed(report: &Report) -> bool {
    // A program's own copy of ROCm (ollama's lib/ollama/rocm) is a ROCm path too: the user runs
    // ROCm code through it (ollama/ollama#10152, an RX 580 under ollama's ROCm 6 libraries).
    report
        .rocm
        .as_ref()
        .is_some_and(|r| !r.installs.is_empty() || !r.bundled.is_empty())
}

/// A framework built for ROCm in any environment.
pub(super) fn rocm_framework(report: &Report) -> bool {
    report
        .python_envs
        .iter()
        .flat_map(|e| &e.frameworks)
        .any(|f| f.variant.as_deref() == Some("rocm") || f.rocm.is_some())
}

/// A framework built for CUDA in any environment.
fn cuda_framework(report: &Report) -> bool {
    report
        .python_envs
        .iter()
        .flat_map(|e| &e.frameworks)
        .any(|f| f.variant.as_deref() == Some("cuda") || f.cuda.is_some())
}

/// Whether the machine means to compute on its AMD GPU: a ROCm install, a ROCm or CUDA build
/// of a framework (a CUDA build on an AMD-only machine is a wish for a GPU too), or a ROCm
/// variable set. A desktop whose Radeon only drives the display is told nothing.
pub(super) fn wants_amd_compute(report: &Report) -> bool {
    rocm_installed(report)
        || rocm_framework(report)
        || (cuda_framework(report) && !report.has_nvidia_gpu())
        || [
            "HIP_VISIBLE_DEVICES",
            "ROCR_VISIBLE_DEVICES",
            "HSA_OVERRIDE_GFX_VERSION",
            "ROCM_PATH",
        ]
        .iter()
        .any(|v| super::env_var(report, v).is_some())
}

/// The AMD GPUs ROCm can reach: a KFD node names them.
pub(super) fn kfd_gpus(report: &Report) -> Vec<&Gpu> {
    report
        .amd_gpus()
        .filter(|g| g.source == GpuSource::Kfd)
        .collect()
}

/// "GPU 0 (AMD Radeon RX 7900 XTX, gfx1100)".
pub(super) fn gpu_label(gpu: &Gpu) -> String {
    let name = gpu
        .name
        .as_deref()
        .or(gpu.pci_device_id.as_deref())
        .unwrap_or("AMD GPU");
    match &gpu.gfx_target {
        Some(gfx) => format!("GPU {} ({name}, {gfx})", gpu.index),
        None => format!("GPU {} ({name})", gpu.index),
    }
}

/// What a GPU no amdgpu drives explains (`amdgpu-not-loaded`, `amdgpu-not-bound`): no KFD, so
/// no ROCm release can reach the card, and every framework-level symptom after that.
fn explains_undriven(mut f: super::FindingBuilder) -> super::FindingBuilder {
    for id in [
        &ids::KFD_MISSING,
        &ids::ROCM_GPU_UNSUPPORTED,
        &ids::ROCM_TOO_OLD_FOR_GPU,
    ]
    .into_iter()
    .chain(FRAMEWORK_SYMPTOMS)
    {
        f = f.explains(id);
    }
    f
}

/// The finding IDs a broken AMD driver or KFD makes follow: every framework-level AMD symptom.
const FRAMEWORK_SYMPTOMS: [&ids::Kind; 5] = [
    &ids::ROCM_IGPU_VISIBLE,
    &ids::HSA_OVERRIDE_MISMATCH,
    &ids::ROCM_DEVICE_PERMISSION,
    &ids::FRAMEWORK_CANNOT_SEE_GPU,
    &ids::VISIBLE_DEVICES_HIDES_GPUS,
];

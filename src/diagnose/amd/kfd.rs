//! `kfd-missing`: amdgpu drives the GPU but the kernel's compute driver (KFD) exposes no
//! `/dev/kfd`, so ROCm sees no GPU.

use crate::diagnose::{FindingBuilder, ids};
use crate::report::GpuSource;
use crate::report::Subject;
use crate::report::rocm::{DeviceNode, RocmStack};
use crate::report::{Finding, Gpu, Report, Severity};

use super::{FRAMEWORK_SYMPTOMS, gpu_label, has_node, wants_amd_compute};

/// amdgpu drives an AMD GPU (or the KFD topology shows GPU nodes) and the machine wants to
/// compute on it, but `/dev/kfd` is missing: ROCm opens nothing without it ("Unable to open
/// /dev/kfd read-write: No such file or directory"; ollama: "kfd driver not loaded"). Inside a
/// container it was not passed in; on a host the kernel's amdgpu was built without KFD
/// (`CONFIG_HSA_AMD`). WSL has no `/dev/kfd` by design (its runtime uses `/dev/dxg`).
pub(super) fn kfd_missing(report: &Report) -> Option<Finding> {
    if report.host.wsl || has_node(report, "/dev/kfd") {
        return None;
    }
    let stack = report.rocm.as_ref()?;
    let driven: Vec<&Gpu> = report
        .amd_gpus()
        .filter(|g| g.source == GpuSource::Kfd || g.bound_driver.as_deref() == Some("amdgpu"))
        .collect();
    if driven.is_empty() || !wants_amd_compute(report) {
        return None;
    }
    let container = report.host.container.as_deref();
    let title = match container {
        Some(runtime) => format!("This {runtime} container was started without /dev/kfd"),
        None => "/dev/kfd is missing: ROCm cannot open the GPU".to_string(),
    };
    let mut f = FindingBuilder::new(&ids::KFD_MISSING, Severity::Error, title)
        .detail(
            "ROCm reaches AMD GPUs through /dev/kfd (the kernel's compute driver) and the \
             /dev/dri/renderD* nodes. /dev/kfd is not there, so every ROCm program fails to \
             find a GPU (\"Unable to open /dev/kfd\", hipErrorNoDevice, torch.cuda.is_available() \
             is False) even though amdgpu drives the card.",
        )
        .evidence("/dev/kfd: not present");
    for g in &driven {
        f = f.evidence(format!(
            "{}: driven by amdgpu{}",
            gpu_label(g),
            if g.source == GpuSource::Kfd {
                " (a KFD topology node exists)"
            } else {
                ""
            }
        ));
    }
    f = f.evidence(render_nodes(stack));
    let fix = kfd_fix(container, stack);
    for id in FRAMEWORK_SYMPTOMS {
        f = f.explains(id);
    }
    Some(
        // Outside a container the kernel's; inside, how the container is started.
        f.subject(Subject::Device("/dev/kfd".into()))
            .fix_on_host_if(container.is_none())
            .fix(fix)
            .build(),
    )
}

/// The DRM nodes ROCm would open beside `/dev/kfd`: whether the GPU reached the container (or
/// the host's udev) at all.
fn render_nodes(stack: &RocmStack) -> String {
    let renders: Vec<&DeviceNode> = stack
        .device_nodes
        .iter()
        .filter(|n| n.path.starts_with("/dev/dri/"))
        .collect();
    if renders.is_empty() {
        "/dev/dri: no render nodes either".to_string()
    } else {
        format!(
            "/dev/dri: {}",
            renders
                .iter()
                .map(|n| n.path.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// A container is given the devices (Kubernetes through AMD's device plugin); a host whose
/// kernel has no KFD boots one that has it; a host with KFD but no node has a udev problem.
fn kfd_fix(container: Option<&str>, stack: &RocmStack) -> String {
    match container {
        Some("kubernetes") => "Request the GPU from AMD's device plugin (`resources: {limits: \
             {amd.com/gpu: 1}}`, the ROCm k8s-device-plugin or GPU Operator on the node), which \
             passes /dev/kfd and the render node in."
            .to_string(),
        Some(runtime) => format!(
            "Start the {runtime} container with the devices: `{runtime} run --device=/dev/kfd \
             --device=/dev/dri --group-add video --group-add render ...` (add `--security-opt \
             seccomp=unconfined` as AMD's container docs do for ROCm images); Compose: `devices: \
             [/dev/kfd, /dev/dri]`."
        ),
        None if !stack.kfd_topology => "The running kernel's amdgpu has no KFD (built without \
             CONFIG_HSA_AMD): boot the distribution's standard kernel, or install AMD's \
             amdgpu-dkms (`sudo amdgpu-install --usecase=rocm`, see `gpu-doctor plan`) and \
             reboot. `sudo dmesg | grep -i kfd` shows what the driver said."
            .to_string(),
        None => "KFD is in the kernel (its topology is listed) but the device node was not \
             created: check udev (`sudo udevadm trigger`, a rule for KERNEL==\"kfd\") and \
             `sudo dmesg | grep -i kfd`, then reboot."
            .to_string(),
    }
}

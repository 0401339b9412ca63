//! `container-no-gpu-runtime`: a container started without the GPU runtime (no device nodes,
//! no driver libraries mounted).

// The parent's imports and shared helpers: one family of platform findings.
use super::*;

// ---------------------------------------------------------------------------------------------
// container-no-gpu-runtime

/// A container started without GPU access: no `/dev/nvidia*` (nor WSL's `/dev/dxg`, nor AMD's
/// `/dev/kfd`) and no driver libcuda on the loader path. The NVIDIA runtime puts both in when a
/// container asks for GPUs, so their joint absence means it was not asked.
///
/// An error when the container clearly expects a GPU: `NVIDIA_VISIBLE_DEVICES` names GPUs (NVIDIA's
/// CUDA images set it to `all`) or a CUDA build of a framework is installed. Otherwise info: a
/// CPU-only container is a normal thing to run.
pub(super) fn container_no_gpu_runtime(report: &Report) -> Option<Finding> {
    let runtime = report.host.container.as_deref()?;
    let gpu_nodes = report
        .kernel
        .device_nodes
        .iter()
        .any(|n| n.starts_with("/dev/nvidia") || n == "/dev/dxg" || n == "/dev/kfd");
    let libcuda = report
        .driver_libraries
        .iter()
        .any(|l| l.name == "libcuda" && l.kind == DriverLibraryKind::Driver);
    if gpu_nodes || libcuda {
        return None;
    }
    let visible = env(report, "NVIDIA_VISIBLE_DEVICES").filter(|v| !is_no_gpu_value(v));
    let frameworks = cuda_frameworks(report);
    let expects = visible.is_some() || !frameworks.is_empty();
    let gpu_on_bus = report
        .pci_devices
        .iter()
        .any(|d| d.vendor == "nvidia" && !d.nvswitch);
    // A bus that was read and shows no NVIDIA GPU means the host has none to pass in (a
    // container sees the host's bus): that is `no-gpu`, not a missing `--gpus`. An unread bus
    // leaves it open, and only a container that expects a GPU is told how to pass one in.
    if !gpu_on_bus && (crate::diagnose::pci_bus_read(report) || !expects) {
        return None;
    }
    let severity = if expects {
        Severity::Error
    } else {
        Severity::Info
    };
    let title = if expects {
        format!("This {runtime} container was started without GPU access")
    } else {
        format!("This {runtime} container has no GPU access")
    };
    let mut f = FindingBuilder::new(&ids::CONTAINER_NO_GPU_RUNTIME, severity, title).detail(
        "The program runs in a container, and the container was started without the NVIDIA \
         runtime: no GPU device (/dev/nvidia*) was passed in and the driver's libcuda was not \
         mounted, so CUDA frameworks find no GPU even when the host has one. The driver stays \
         on the host; the NVIDIA Container Toolkit adds it to containers that ask for GPUs.",
    );
    f = f
        .evidence(format!("container: {runtime}"))
        .evidence("/dev: no nvidia* device nodes")
        .evidence("libcuda: no driver copy on the loader path (the NVIDIA runtime mounts it)");
    if let Some(v) = visible {
        f = f.evidence(format!(
            "NVIDIA_VISIBLE_DEVICES={v}: the image expects GPUs"
        ));
    }
    for (env_path, fw) in &frameworks {
        f = f.evidence(format!(
            "{} {} in {env_path} is built for CUDA {}",
            fw.name,
            fw.version.as_deref().unwrap_or("(unknown version)"),
            fw.cuda.as_deref().unwrap_or("(unknown version)")
        ));
    }
    for d in report
        .pci_devices
        .iter()
        .filter(|d| d.vendor == "nvidia" && !d.nvswitch)
    {
        f = f.evidence(format!(
            "PCI {}: the host's NVIDIA GPU {} is on the bus but not passed in",
            d.address, d.device_id
        ));
    }
    let fix = if runtime == "kubernetes" {
        "Request the GPU in the pod spec: `resources: {limits: {nvidia.com/gpu: 1}}`. The \
         cluster needs the NVIDIA device plugin or GPU Operator on the GPU nodes."
    } else if runtime == "podman" {
        "Start the container with the GPU: `podman run --device nvidia.com/gpu=all ...`, after \
         generating the CDI spec on the host once: \
         `sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`."
    } else {
        "Start the container with GPU access: `docker run --gpus all ...` (Compose: \
         `deploy.resources.reservations.devices: [{driver: nvidia, count: all, capabilities: \
         [gpu]}]`). The host needs the NVIDIA driver and the NVIDIA Container Toolkit: \
         `sudo apt install nvidia-container-toolkit && sudo nvidia-ctk runtime configure \
         --runtime=docker && sudo systemctl restart docker`."
    };
    Some(
        f.explains(&ids::NO_GPU)
            .subject(format!("container:{runtime}"))
            .fix(fix)
            .build(),
    )
}

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
    let pod_fix;
    let fix = if runtime == "kubernetes" {
        pod_fix = pod_not_injected(visible);
        pod_fix.as_str()
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
            .subject(Subject::Container(Some(runtime.to_string())))
            // Docker's steps install the toolkit on the host; Kubernetes' are the pod spec's,
            // and Podman's say themselves that the CDI spec is made on the host.
            .fix_on_host_if(!matches!(runtime, "kubernetes" | "podman"))
            .fix(fix)
            .build(),
    )
}

/// The folder of the NVIDIA Container Toolkit's device list kept in mounts (one empty mount per
/// device under it), which the device plugin's `volume-mounts` strategy names in
/// `NVIDIA_VISIBLE_DEVICES` instead of the devices themselves.
const VOLUME_MOUNTS_LIST: &str = "/var/run/nvidia-container-devices";

/// A pod with no GPU injected: what its `NVIDIA_VISIBLE_DEVICES` says of why. The device
/// plugin hands a pod its devices in the variable (its `envvar` list strategy: UUIDs or indexes)
/// or as mounts under [`VOLUME_MOUNTS_LIST`] (`volume-mounts`), and the NVIDIA runtime injects
/// them; the runtime ignores the variable in an unprivileged container when the toolkit's
/// `accept-nvidia-visible-devices-envvar-when-unprivileged` is false (the GPU Operator's
/// toolkit env `ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED`; elastisys/
/// compliantkubernetes-apps#2473, where the device plugin's `volume-mounts` setting was lost
/// while the toolkit refused the variable: "CUDA driver version is insufficient"; NVIDIA/aicr#1354,
/// "a master gate ... GPU device injection is silently blocked for unprivileged containers"), and
/// reads the mounts only when `accept-nvidia-visible-devices-as-volume-mounts` is true: the two
/// directions of the edge between the device plugin's strategy and the toolkit's settings. A
/// pod that never ran under the NVIDIA runtime (no `runtimeClassName: nvidia` where it is not
/// containerd's default) shows the same.
fn pod_not_injected(visible: Option<&str>) -> String {
    let runtime_class = "The pod must run under the NVIDIA runtime: `runtimeClassName: nvidia` in \
                         the pod spec, unless `nvidia` is the node's default containerd runtime.";
    match visible {
        Some(v) if v.starts_with(VOLUME_MOUNTS_LIST) => format!(
            "The device plugin passed the pod its GPUs as volume mounts \
             (`NVIDIA_VISIBLE_DEVICES={v}`, its `DEVICE_LIST_STRATEGY=volume-mounts`), and the \
             runtime injected none: the NVIDIA Container Toolkit reads that list only with \
             `accept-nvidia-visible-devices-as-volume-mounts = true` in its config.toml (the GPU \
             Operator's toolkit env `ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS=true`). Set \
             it on the GPU nodes, or set the device plugin back to `DEVICE_LIST_STRATEGY=envvar`. \
             {runtime_class}"
        ),
        Some(v) => {
            let allocated = if v.eq_ignore_ascii_case("all") {
                "If the pod does not request a GPU (`resources: {limits: {nvidia.com/gpu: 1}}`), \
                 request it."
                    .to_string()
            } else {
                format!(
                    "The device plugin did give the pod `{v}` (its `envvar` list strategy), so the \
                     GPU was requested and allocated."
                )
            };
            format!(
                "The pod's `NVIDIA_VISIBLE_DEVICES={v}` names GPUs, but the NVIDIA runtime \
                 injected none. {allocated} The NVIDIA Container Toolkit ignores the variable in \
                 an unprivileged container when its config.toml has \
                 `accept-nvidia-visible-devices-envvar-when-unprivileged = false` (the GPU \
                 Operator's toolkit env `ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED=false`): \
                 then either remove that setting, or have the device plugin pass devices as \
                 volume mounts (`DEVICE_LIST_STRATEGY=volume-mounts`, with \
                 `ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS=true`). {runtime_class}"
            )
        }
        None => "Request the GPU in the pod spec: `resources: {limits: {nvidia.com/gpu: 1}}`. The \
                 cluster needs the NVIDIA device plugin or GPU Operator on the GPU nodes."
            .to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// container-lost-gpu-access

/// NVML's own words when it cannot open the device nodes it sees.
const NVML_UNKNOWN: &str = "failed to initialize nvml: unknown error";

/// A container that had its GPUs and lost them: the device nodes and the driver's libraries are
/// in place, yet NVML fails with "Unknown Error". With systemd managing the container's cgroups,
/// a `systemctl daemon-reload` on the host (run by hand, or by any package install) rewrites the
/// device rules without the NVIDIA nodes, which runc injected without `/dev/char` links
/// (NVIDIA/nvidia-container-toolkit#48, NVIDIA's notice; #1227, 2025, on driver 570.133.20:
/// "running `systemctl daemon-reload` cause all running gpu containers to lost gpu devices").
/// Only a new container gets them back; NVIDIA's workarounds keep it from happening again.
pub(super) fn container_lost_gpu_access(report: &Report) -> Option<Finding> {
    let runtime = report.host.container.as_deref()?;
    let said = [&report.driver.nvidia_smi, &report.driver.nvml]
        .into_iter()
        .filter_map(|o| o.detail.as_deref())
        .find(|d| d.to_lowercase().contains(NVML_UNKNOWN))?;
    let nodes: Vec<&String> = report
        .kernel
        .device_nodes
        .iter()
        .filter(|n| {
            *n == "/dev/nvidiactl"
                || n.strip_prefix("/dev/nvidia")
                    .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    let has_ctl = nodes.iter().any(|n| *n == "/dev/nvidiactl");
    let lib = report
        .driver_libraries
        .iter()
        .find(|l| l.kind == DriverLibraryKind::Driver && l.name == "libnvidia-ml")?;
    if !has_ctl || nodes.len() < 2 {
        return None;
    }
    let nodes: Vec<&str> = nodes.iter().map(|n| n.as_str()).collect();
    Some(
        FindingBuilder::new(
            &ids::CONTAINER_LOST_GPU_ACCESS,
            Severity::Error,
            format!(
                "This {runtime} container lost access to its GPUs: NVML says \"Unknown Error\""
            ),
        )
        .detail(
            "The device nodes and the driver's libraries were put in when the container \
             started, so it had its GPUs; NVML now cannot open them. When systemd manages the \
             container's cgroups, a `systemctl daemon-reload` on the host (by hand, or from a \
             package install or upgrade) rewrites the container's device rules without the \
             NVIDIA devices, and every running GPU container loses them at once. The host \
             itself is fine.",
        )
        .evidence(format!("NVML: {said}"))
        .evidence(format!("device nodes present: {}", nodes.join(", ")))
        .evidence(format!(
            "driver library present: {} ({})",
            lib.path,
            lib.version.as_deref().unwrap_or("version unknown")
        ))
        .evidence(format!("container: {runtime}"))
        .fix(
            "Delete and recreate the container (a restart of the same container is not always \
             enough): a new one gets its devices again. On the host, keep it from happening \
             again with NVIDIA's workarounds: `sudo nvidia-ctk system create-dev-char-symlinks \
             --create-all` (and the udev rule NVIDIA gives, so the /dev/char links survive a \
             reboot), or pass the nodes explicitly (`--device /dev/nvidiactl --device \
             /dev/nvidia0 ...`), or let Docker manage cgroups itself (`\"exec-opts\": \
             [\"native.cgroupdriver=cgroupfs\"]` in /etc/docker/daemon.json). Upgrading the \
             NVIDIA Container Toolkit adds the links for new containers.",
        )
        .subject(Subject::Container(None))
        .explains(&ids::NVIDIA_SMI_FAILED)
        .explains(&ids::FRAMEWORK_CANNOT_SEE_GPU)
        .build(),
    )
}

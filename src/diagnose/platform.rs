//! Is the GPU reachable from where the program runs? Containers, WSL2, NVSwitch systems, the
//! variables that pick GPUs, and the libcuda the loader would open. Findings:
//! `container-no-gpu-runtime`, `visible-devices-hides-gpus`, `wsl-driver-in-guest`,
//! `fabric-manager-not-running`, `stub-libcuda-on-path`, `forward-compat-unsupported`.

use super::ids;
use std::path::Path;

use super::health::gpu_label;
use super::{FindingBuilder, env_var as env};
use crate::manifest::Manifests;
use crate::parse::visible_devices::{self, Entry};
use crate::report::{DriverLibrary, Finding, Framework, Gpu, ProbeStatus, Report, Severity};

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(container_no_gpu_runtime(report));
    out.extend(visible_devices(report));
    out.extend(wsl_driver_in_guest(report));
    out.extend(fabric_manager(report));
    out.extend(fabric_not_completed(report));
    out.extend(stub_libcuda(report));
    out.extend(forward_compat(report, manifests));
    out
}

/// The copies of a driver library, in the order the loader tries them.
fn libs<'a>(report: &'a Report, name: &str) -> Vec<&'a DriverLibrary> {
    let mut out: Vec<&DriverLibrary> = report
        .driver_libraries
        .iter()
        .filter(|l| l.name == name)
        .collect();
    out.sort_by_key(|l| l.rank);
    out
}

/// "libcuda #0: /usr/local/cuda/lib64/stubs/libcuda.so -> /usr/local/cuda-12.4/.../libcuda.so
/// (link-time stub, from LD_LIBRARY_PATH)": one loader candidate as evidence, with its rank.
fn lib_line(lib: &DriverLibrary) -> String {
    let target = match &lib.resolved {
        Some(r) if r != &lib.path => format!(" -> {r}"),
        _ => String::new(),
    };
    let kind = match lib.kind.as_str() {
        "stub" => "link-time stub",
        "compat" => "forward-compatibility copy",
        "driver" if lib.origin == "wsl" => "WSL's driver library",
        "driver" => "driver library",
        other => other,
    };
    format!(
        "{} #{}: {}{target} ({kind}, from {})",
        lib.name, lib.rank, lib.path, lib.origin
    )
}

/// The shell command that takes the folders of `offending` out of `LD_LIBRARY_PATH`, when the
/// variable is what put them on the loader path.
fn ld_library_path_fix(report: &Report, offending: &[&DriverLibrary]) -> Option<String> {
    let value = env(report, "LD_LIBRARY_PATH")?;
    let dirs: Vec<&Path> = offending
        .iter()
        .filter(|l| l.origin == "LD_LIBRARY_PATH")
        .filter_map(|l| Path::new(&l.path).parent())
        .collect();
    if dirs.is_empty() {
        return None;
    }
    let kept: Vec<&str> = value
        .split(':')
        .filter(|entry| !entry.is_empty())
        .filter(|entry| {
            !dirs
                .iter()
                .any(|d| *d == Path::new(entry.trim_end_matches('/')))
        })
        .collect();
    Some(if kept.is_empty() {
        "unset LD_LIBRARY_PATH".to_string()
    } else {
        format!("export LD_LIBRARY_PATH={}", kept.join(":"))
    })
}

/// Framework builds that need a CUDA GPU, with the environment they are in.
fn cuda_frameworks(report: &Report) -> Vec<(&str, &Framework)> {
    report
        .python_envs
        .iter()
        .flat_map(|env| {
            env.frameworks
                .iter()
                .filter(|f| f.variant.as_deref() == Some("cuda") || f.cuda.is_some())
                .map(move |f| (env.path.as_str(), f))
        })
        .collect()
}

/// NVIDIA GPUs the report knows of on this machine (from the driver or the PCI bus), leaving
/// out the ones `GPU_DOCTOR_*` overrides described: those are another machine's. CUDA numbers
/// only NVIDIA GPUs; AMD GPUs and their masks are `amd_env.rs`'s.
fn machine_gpus(report: &Report) -> Vec<&Gpu> {
    report
        .nvidia_gpus()
        .filter(|g| g.source != "override")
        .collect()
}

/// `NVIDIA_VISIBLE_DEVICES` values that give a container no GPU: `void` and empty make the
/// NVIDIA runtime do nothing at all (like plain runc), `none` mounts the driver but no GPU
/// (NVIDIA Container Toolkit, "GPU Enumeration").
fn is_no_gpu_value(value: &str) -> bool {
    let v = value.trim().to_ascii_lowercase();
    v.is_empty() || v == "void" || v == "none"
}

/// Whether a GPU device node (`/dev/nvidia0`, ...) is present, as opposed to the control nodes
/// (`/dev/nvidiactl`, `/dev/nvidia-uvm`) that `NVIDIA_VISIBLE_DEVICES=none` still mounts.
fn has_gpu_device_node(report: &Report) -> bool {
    report.kernel.device_nodes.iter().any(|n| {
        n.strip_prefix("/dev/nvidia")
            .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
    })
}

// ---------------------------------------------------------------------------------------------
// container-no-gpu-runtime

/// A container started without GPU access: no `/dev/nvidia*` (nor WSL's `/dev/dxg`, nor AMD's
/// `/dev/kfd`) and no driver libcuda on the loader path. The NVIDIA runtime puts both in when a
/// container asks for GPUs, so their joint absence means it was not asked.
///
/// An error when the container clearly expects a GPU: `NVIDIA_VISIBLE_DEVICES` names GPUs (NVIDIA's
/// CUDA images set it to `all`) or a CUDA build of a framework is installed. Otherwise info: a
/// CPU-only container is a normal thing to run.
fn container_no_gpu_runtime(report: &Report) -> Option<Finding> {
    let runtime = report.host.container.as_deref()?;
    let gpu_nodes = report
        .kernel
        .device_nodes
        .iter()
        .any(|n| n.starts_with("/dev/nvidia") || n == "/dev/dxg" || n == "/dev/kfd");
    let libcuda = report
        .driver_libraries
        .iter()
        .any(|l| l.name == "libcuda" && l.kind == "driver");
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
    if !gpu_on_bus && (super::pci_bus_read(report) || !expects) {
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

// ---------------------------------------------------------------------------------------------
// visible-devices-hides-gpus

/// What one `CUDA_VISIBLE_DEVICES` entry selects.
#[derive(Debug, PartialEq)]
enum Selects {
    /// The GPU at this position of `report.gpus`.
    Gpu(usize),
    /// Not judged: a MIG instance, an ambiguous UUID prefix, an index on a MIG machine, or a
    /// UUID where the report lacks GPU UUIDs.
    Unknown,
    /// CUDA matches it to no GPU; the text says why.
    Invalid(String),
}

/// Which GPU an entry selects, as CUDA matches it: a `GPU-<uuid>` (or a unique prefix of one)
/// by UUID, an index by position unless MIG is on (then CUDA enumerates MIG instances).
fn resolve(raw: &str, entry: &Entry, gpus: &[&Gpu]) -> Selects {
    match entry {
        Entry::Mig => Selects::Unknown,
        Entry::GpuUuid(_) if gpus.iter().any(|g| g.uuid.is_none()) => Selects::Unknown,
        Entry::GpuUuid(prefix) => {
            let matches: Vec<usize> = gpus
                .iter()
                .enumerate()
                .filter(|(_, g)| {
                    g.uuid
                        .as_deref()
                        .is_some_and(|u| u.to_ascii_lowercase().starts_with(prefix.as_str()))
                })
                .map(|(i, _)| i)
                .collect();
            match matches.as_slice() {
                [i] => Selects::Gpu(*i),
                [] => Selects::Invalid(format!("`{raw}` is no GPU's UUID (see `nvidia-smi -L`)")),
                _ => Selects::Unknown,
            }
        }
        Entry::Negative => {
            Selects::Invalid(format!("`{raw}` is a negative index: it selects no GPU"))
        }
        Entry::Garbage => {
            Selects::Invalid(format!("`{raw}` is neither a GPU index nor a GPU UUID"))
        }
        Entry::Index(_)
            if gpus
                .iter()
                .any(|g| g.mig_mode.as_deref() == Some("Enabled")) =>
        {
            Selects::Unknown
        }
        Entry::Index(index) if *index >= gpus.len() => Selects::Invalid(format!(
            "`{raw}` is index {index}, but the machine has {} GPU(s), numbered 0 to {}",
            gpus.len(),
            gpus.len().saturating_sub(1)
        )),
        Entry::Index(index) => Selects::Gpu(*index),
    }
}

/// What `CUDA_VISIBLE_DEVICES` does wrong, if anything: the evidence lines and the GPUs it hides.
///
/// CUDA reads the list in order and stops at the first entry that matches no GPU: only the
/// GPUs before it are visible ("If one of the indices is invalid, only the devices whose index
/// precedes the invalid index are visible", CUDA Programming Guide). An empty value hides all.
/// A bad entry matters only when it hides something: first in the list (nothing is visible) or
/// before entries that name real GPUs. Trailing entries for GPUs this machine lacks (a cluster's
/// `0,1,2,3` on a 2-GPU box) hide nothing and are not reported.
fn cuda_visible_problem(value: &str, gpus: &[&Gpu]) -> Option<(Vec<String>, Vec<usize>)> {
    let all: Vec<usize> = (0..gpus.len()).collect();
    if value.trim().is_empty() {
        return Some((
            vec![format!(
                "CUDA_VISIBLE_DEVICES is set but empty: CUDA sees no GPU ({} present)",
                gpus.len()
            )],
            all,
        ));
    }
    let resolved: Vec<Selects> = visible_devices::entries(value)
        .iter()
        .map(|(raw, e)| resolve(raw, e, gpus))
        .collect();
    let (bad_at, why) = resolved.iter().enumerate().find_map(|(i, e)| match e {
        Selects::Invalid(why) => Some((i, why.clone())),
        _ => None,
    })?;
    let chosen = |range: &[Selects]| -> Vec<usize> {
        range
            .iter()
            .filter_map(|e| match e {
                Selects::Gpu(i) => Some(*i),
                _ => None,
            })
            .collect()
    };
    let visible = chosen(resolved.get(..bad_at).unwrap_or_default());
    let shown_before: std::collections::HashSet<usize> = visible.iter().copied().collect();
    let wanted_after: Vec<usize> = chosen(resolved.get(bad_at + 1..).unwrap_or_default())
        .into_iter()
        .filter(|i| !shown_before.contains(i))
        .collect();
    if !visible.is_empty() && wanted_after.is_empty() {
        return None;
    }
    let mut lines = vec![format!("CUDA_VISIBLE_DEVICES={value}"), why];
    if visible.is_empty() {
        lines.push("CUDA stops reading at that entry, so it sees no GPU".to_string());
        Some((lines, all))
    } else {
        let shown: Vec<String> = visible.iter().map(ToString::to_string).collect();
        lines.push(format!(
            "CUDA stops reading at that entry: only GPU(s) {} stay visible",
            shown.join(", ")
        ));
        Some((lines, wanted_after))
    }
}

/// `CUDA_VISIBLE_DEVICES` that hides the GPUs (empty, `-1`, indices past the last GPU, UUIDs of
/// no GPU here), or, inside a container, `NVIDIA_VISIBLE_DEVICES` of `void`/`none`/empty with
/// no GPU device node passed in. Judged only when the machine's GPUs are known: without them an
/// index cannot be checked, and the empty-value case is better told by the no-GPU findings.
fn visible_devices(report: &Report) -> Option<Finding> {
    let gpus = machine_gpus(report);
    if gpus.is_empty() {
        return None;
    }
    let cuda = env(report, "CUDA_VISIBLE_DEVICES").and_then(|v| cuda_visible_problem(v, &gpus));
    let nvidia = env(report, "NVIDIA_VISIBLE_DEVICES").filter(|v| {
        report.host.container.is_some() && is_no_gpu_value(v) && !has_gpu_device_node(report)
    });
    if cuda.is_none() && nvidia.is_none() {
        return None;
    }
    let mut hidden: Vec<usize> = Vec::new();
    let mut f = FindingBuilder::new(
        &ids::VISIBLE_DEVICES_HIDES_GPUS,
        Severity::Error,
        match (&cuda, nvidia) {
            (Some(_), None) => "CUDA_VISIBLE_DEVICES hides the GPUs from CUDA programs",
            (None, _) => "NVIDIA_VISIBLE_DEVICES gave this container no GPU",
            (Some(_), Some(_)) => "CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES hide the GPUs",
        },
    )
    .detail(
        "A variable that selects GPUs selects none (or fewer than it names), so PyTorch, \
         TensorFlow and JAX see no GPU or fewer GPUs and fall back to the CPU or fail with \
         \"No CUDA GPUs are available\" / CUDA_ERROR_NO_DEVICE. If you meant to run on the \
         CPU, this is expected.",
    );
    let mut fixes = Vec::new();
    if let Some((lines, ids)) = &cuda {
        for line in lines {
            f = f.evidence(line.clone());
        }
        hidden.extend(ids);
        let last = gpus.len().saturating_sub(1);
        fixes.push(format!(
            "Unset it (`unset CUDA_VISIBLE_DEVICES`) or set valid GPUs: indices 0 to {last} or \
             UUIDs from `nvidia-smi -L`. Look for where it is set (shell profile, job script, \
             Dockerfile `ENV`); a scheduler such as Slurm sets it to the GPUs a job was granted, \
             so ask for GPUs there (`--gres=gpu:1`)."
        ));
        f = f.subject("env:CUDA_VISIBLE_DEVICES");
    }
    if let Some(value) = nvidia {
        f = f
            .evidence(format!(
                "NVIDIA_VISIBLE_DEVICES={value:?} inside a container: the NVIDIA runtime passes in no GPU"
            ))
            .evidence("/dev: no /dev/nvidia<N> GPU device node")
            .explains(&ids::CONTAINER_NO_GPU_RUNTIME)
            .subject("env:NVIDIA_VISIBLE_DEVICES");
        hidden.extend(0..gpus.len());
        fixes.push(
            "Start the container with the GPUs it should use: `docker run --gpus all ...` or \
             `-e NVIDIA_VISIBLE_DEVICES=all` with the NVIDIA runtime (remove any \
             `ENV NVIDIA_VISIBLE_DEVICES=void` from the image)."
                .to_string(),
        );
    }
    hidden.sort_unstable();
    hidden.dedup();
    for gpu in hidden.iter().filter_map(|i| gpus.get(*i)) {
        f = f
            .evidence(format!("hidden: {}", gpu_label(gpu)))
            .subject(format!("gpu:{}", gpu.index));
    }
    Some(f.fix(fixes.join(" ")).build())
}

// ---------------------------------------------------------------------------------------------
// wsl-driver-in-guest

/// A Linux NVIDIA driver installed inside a WSL2 distribution. Under WSL the GPU belongs to the
/// Windows driver, which WSL maps into `/usr/lib/wsl/lib`; a Linux driver's libcuda cannot talk
/// to `/dev/dxg`, so when the loader picks it CUDA finds no GPU, and its `nvidia-smi` "couldn't
/// communicate with the NVIDIA driver". NVIDIA's CUDA-on-WSL guide: never install a Linux
/// display driver in WSL.
///
/// An error when a Linux libcuda ranks before WSL's (it is the one programs load) or the nvidia
/// kernel module is loaded in the guest; a warning when Linux copies are there but behind
/// WSL's: nothing loads them today, but their `nvidia-smi` and a changed `LD_LIBRARY_PATH`
/// or loader cache put them back in the way.
fn wsl_driver_in_guest(report: &Report) -> Option<Finding> {
    if !report.host.wsl {
        return None;
    }
    let libcuda = libs(report, "libcuda");
    let wsl_rank = libcuda.iter().find(|l| l.origin == "wsl").map(|l| l.rank);
    let linux: Vec<&DriverLibrary> = ["libcuda", "libnvidia-ml"]
        .iter()
        .flat_map(|name| libs(report, name))
        .filter(|l| l.kind == "driver" && l.origin != "wsl")
        .collect();
    let linux_libcuda_first = libcuda
        .first()
        .is_some_and(|l| l.kind == "driver" && l.origin != "wsl");
    let module = report.kernel.nvidia_loaded;
    if linux.is_empty() && !module {
        return None;
    }
    let severity = if linux_libcuda_first || module {
        Severity::Error
    } else {
        Severity::Warning
    };
    let title = if linux_libcuda_first {
        "A Linux NVIDIA driver inside WSL is loaded instead of the Windows driver"
    } else if module {
        "The Linux nvidia kernel module is loaded inside WSL"
    } else {
        "A Linux NVIDIA driver is installed inside WSL"
    };
    let mut f = FindingBuilder::new(&ids::WSL_DRIVER_IN_GUEST, severity, title).detail(
        "Under WSL2 the GPU is driven by the Windows NVIDIA driver, which WSL maps into \
         /usr/lib/wsl/lib. A Linux driver installed inside the distribution (often pulled in by \
         the `cuda`, `cuda-drivers` or `nvidia-driver-*` packages) cannot reach the GPU: when \
         its libcuda is loaded CUDA finds no device, and its nvidia-smi cannot talk to a driver.",
    );
    for lib in &libcuda {
        f = f.evidence(lib_line(lib));
    }
    for lib in linux.iter().filter(|l| l.name != "libcuda") {
        f = f.evidence(lib_line(lib));
    }
    if wsl_rank.is_none() {
        f = f.evidence("libcuda: WSL's /usr/lib/wsl/lib copy is not on the loader path");
    }
    if module {
        f = f.evidence(format!(
            "nvidia kernel module loaded in the guest{}",
            report
                .kernel
                .nvidia_version
                .as_deref()
                .map_or(String::new(), |v| format!(" ({v})"))
        ));
    }
    let smi_is_linux = report
        .driver
        .nvidia_smi_path
        .as_deref()
        .is_some_and(|p| !p.starts_with("/usr/lib/wsl/"));
    if smi_is_linux
        && matches!(
            report.driver.nvidia_smi.status,
            ProbeStatus::Failed | ProbeStatus::TimedOut
        )
    {
        if let Some(path) = &report.driver.nvidia_smi_path {
            f = f.evidence(format!(
                "{path} (the Linux driver's nvidia-smi, not /usr/lib/wsl/lib/nvidia-smi) fails"
            ));
        }
        f = f.explains(&ids::NVIDIA_SMI_FAILED);
    }
    let mut fix = String::from(
        "Remove the Linux driver from the distribution and keep only the Windows driver: \
         `sudo apt-get purge 'nvidia-driver-*' 'nvidia-utils-*' 'libnvidia-compute-*' \
         cuda-drivers && sudo apt-get autoremove && sudo ldconfig` (a runfile install: \
         `sudo nvidia-uninstall`), then run `wsl --shutdown` in Windows and reopen the \
         distribution. Install toolkits in WSL only from NVIDIA's WSL-Ubuntu repository as \
         `cuda-toolkit-X-Y`, never the `cuda` or `cuda-drivers` packages.",
    );
    let linux_libcuda: Vec<&DriverLibrary> = linux
        .iter()
        .copied()
        .filter(|l| l.name == "libcuda")
        .collect();
    if let Some(cmd) = ld_library_path_fix(report, &linux_libcuda) {
        fix.push_str(&format!(
            " Take the Linux folder out of LD_LIBRARY_PATH: `{cmd}`."
        ));
    }
    Some(f.subject("host:wsl").fix(fix).build())
}

// ---------------------------------------------------------------------------------------------
// fabric-manager-not-running

/// Process names of the fabric manager (`nv-fabricmanager` is the daemon of the
/// `nvidia-fabricmanager` service).
const FABRIC_MANAGER: [&str; 2] = ["nv-fabricmanager", "nvidia-fabricmanager"];

/// NVSwitch bridges on the bus and no fabric manager running: on HGX/DGX boards the GPUs stay
/// unusable until the fabric manager has set up the NVSwitch fabric, and every CUDA program
/// fails with error 802 "system not yet initialized".
///
/// Said only when it can be known: `/proc` was listed (`kernel.daemons` is not null), this is not
/// a container (a container's `/proc` shows only its own processes, while the fabric manager
/// runs on the host), and the nvidia module is loaded (without it the fabric manager cannot
/// start, and `no-driver` is the cause to fix first).
fn fabric_manager(report: &Report) -> Option<Finding> {
    let switches: Vec<_> = report.pci_devices.iter().filter(|d| d.nvswitch).collect();
    if (switches.is_empty() && in_fabric(report).is_empty())
        || report.host.container.is_some()
        || !report.kernel.nvidia_loaded
    {
        return None;
    }
    // A fabric every GPU reports Completed/Success works, wherever its fabric manager runs (on
    // GB200 NVL72 it runs on the switch trays, not on the compute node: leptonai/gpud#1106).
    let fabric = in_fabric(report);
    if !fabric.is_empty()
        && fabric.iter().all(|g| {
            g.fabric.as_ref().is_some_and(|f| {
                f.state.as_deref() == Some("Completed")
                    && f.status.as_deref().is_none_or(|s| s == "Success")
            })
        })
    {
        return None;
    }
    let service = report
        .kernel
        .services
        .iter()
        .find(|s| s.name == "nvidia-fabricmanager");
    let running_in_proc = report
        .kernel
        .daemons
        .as_ref()
        .map(|d| d.iter().any(|d| FABRIC_MANAGER.contains(&d.as_str())));
    let active = service.and_then(|s| s.active).or(running_in_proc);
    let installed = service.and_then(|s| s.installed);
    // Said only when known: running is fine; "not running" needs a process list or systemctl,
    // unless the files show it was never installed (then it cannot be running either).
    match (active, installed) {
        (Some(true), _) | (None, None | Some(true)) => return None,
        _ => {}
    }
    let not_installed = installed == Some(false);
    let gpus = report
        .pci_devices
        .iter()
        .filter(|d| d.vendor == "nvidia" && !d.nvswitch)
        .count();
    let mut f = FindingBuilder::new(
        &ids::FABRIC_MANAGER_NOT_RUNNING,
        Severity::Error,
        format!(
            "NVSwitch system without {} fabric manager ({} NVSwitch, {gpus} GPU(s))",
            if not_installed {
                "an installed"
            } else {
                "a running"
            },
            switches.len()
        ),
    )
    .detail(
        "The GPUs are connected through NVSwitch (an HGX or DGX board). Until the NVIDIA fabric \
         manager has set up the switch fabric, CUDA cannot use the GPUs: every CUDA program \
         fails with error 802 \"system not yet initialized\", while nvidia-smi still lists the \
         GPUs.",
    );
    let addresses: Vec<&str> = switches.iter().map(|d| d.address.as_str()).collect();
    let ids: Vec<&str> = {
        let mut ids: Vec<&str> = switches.iter().map(|d| d.device_id.as_str()).collect();
        ids.dedup();
        ids
    };
    f = f.evidence(format!(
        "PCI: NVSwitch bridge(s) {} (device {})",
        addresses.join(", "),
        ids.join(", ")
    ));
    if let Some(daemons) = &report.kernel.daemons {
        f = f.evidence(if daemons.is_empty() {
            "running GPU daemons: none (no nv-fabricmanager process in /proc)".to_string()
        } else {
            format!(
                "running GPU daemons: {} (no nv-fabricmanager)",
                daemons.join(", ")
            )
        });
    }
    for line in service.map(|s| s.evidence.as_slice()).unwrap_or_default() {
        if line.starts_with("systemctl") {
            f = f.evidence(line.clone());
        } else if !line.starts_with("process:") {
            f = f.evidence(format!("nvidia-fabricmanager {line}"));
        }
    }
    for line in fabric_evidence(report) {
        f = f.evidence(line);
    }
    let version = report
        .driver
        .version
        .as_deref()
        .or(report.kernel.nvidia_version.as_deref());
    if let Some(v) = version {
        f = f.evidence(format!("driver: {v}"));
    }
    let nvlink5_missing = nvlink5_missing(report);
    for m in &nvlink5_missing {
        f = f.evidence(m.clone());
    }
    let apt = matches!(report.host.os_id.as_deref(), Some("ubuntu" | "debian"));
    let package = match version.and_then(|v| v.split('.').next().map(|branch| (v, branch))) {
        Some((v, branch)) if !apt => format!(
            "install the fabric manager package of exactly the driver's version ({v}, branch \
             {branch}) from NVIDIA's CUDA repository, the same repository the driver came from"
        ),
        Some((v, branch)) => format!(
            "install the fabric manager of the driver's branch and exact version from NVIDIA's \
             CUDA repository: `sudo apt install nvidia-fabricmanager-{branch}={v}-1`"
        ),
        None => "install the `nvidia-fabricmanager-<branch>` package of exactly the driver's \
                 version from NVIDIA's CUDA repository"
            .to_string(),
    };
    let fix = if not_installed {
        let mut first = package;
        if let Some(c) = first.get(..1) {
            first = format!("{}{}", c.to_uppercase(), &first[1..]);
        }
        format!(
            "The fabric manager is not installed. {first}, then start it and enable it at boot: \
             `sudo systemctl enable --now nvidia-fabricmanager`. `nvidia-smi -q | grep -A 2 \
             Fabric` then shows State: Completed."
        )
    } else {
        format!(
            "Start it and enable it at boot: `sudo systemctl enable --now nvidia-fabricmanager`. \
             If the service does not exist, {package}. If it fails to start, \
             `journalctl -u nvidia-fabricmanager` names the cause (usually a version \
             different from the driver's). `nvidia-smi -q | grep -A 2 Fabric` then shows \
             State: Completed."
        )
    };
    let fix = if nvlink5_missing.is_empty() || not_installed {
        fix
    } else {
        format!("{} {fix}", NVLINK5_FIX)
    };
    Some(f.subject("service:nvidia-fabricmanager").fix(fix).build())
}

/// On NVLink5 systems the fabric manager reaches the NVSwitches through InfiniBand management
/// ports, and its unit's start check waits for an InfiniBand device and needs `ib_umad`
/// (NVIDIA Fabric Manager user guide, "What is NVLink Subnet Manager?" and the fourth-generation
/// NVSwitch stack; spectrocloud/CanvOS#700: fabric manager 570+ on HGX B200 "requires ib_umad to be
/// loaded before nv-fabricmanager can start").
const NVLINK5_FIX: &str = "First load the InfiniBand modules the NVSwitch management ports need and \
     keep them loaded at boot: `sudo modprobe -a ib_umad mlx5_ib && printf 'ib_umad\\nmlx5_ib\\n' | \
     sudo tee /etc/modules-load.d/nvidia-fabricmanager.conf`; `ls /sys/class/infiniband` then lists \
     the mlx5 devices, and the NVLink subnet manager (`nvlsm`) starts with the fabric manager.";

/// The NVIDIA GPUs that report an NVLink fabric (a state other than "Not Supported").
fn in_fabric(report: &Report) -> Vec<&crate::report::Gpu> {
    report
        .nvidia_gpus()
        .filter(|g| {
            g.fabric
                .as_ref()
                .and_then(|f| f.state.as_deref())
                .is_some_and(|s| s != "Not Supported")
        })
        .collect()
}

/// One line per GPU fabric: state, status, clique and cluster.
fn fabric_evidence(report: &Report) -> Vec<String> {
    in_fabric(report)
        .iter()
        .filter_map(|g| {
            let f = g.fabric.as_ref()?;
            Some(format!(
                "GPU {}: fabric state {}, status {}, clique id {}, cluster UUID {} (nvidia-smi -q -x)",
                g.index,
                f.state.as_deref().unwrap_or("N/A"),
                f.status.as_deref().unwrap_or("N/A"),
                f.clique_id.as_deref().unwrap_or("N/A"),
                f.cluster_uuid.as_deref().unwrap_or("N/A")
            ))
        })
        .collect()
}

/// What an NVLink5 system (Blackwell, compute capability 10.x, in a fabric) lacks for its
/// fabric: `ib_umad` / `mlx5_ib`, an InfiniBand device, the NVLink subnet manager.
fn nvlink5_missing(report: &Report) -> Vec<String> {
    let nvlink5 = in_fabric(report).iter().any(|g| {
        g.compute_capability
            .as_deref()
            .and_then(|c| c.split('.').next())
            .and_then(|m| m.parse::<u32>().ok())
            .is_some_and(|m| m == 10)
    });
    if !nvlink5 {
        return Vec::new();
    }
    let k = &report.kernel;
    let mut out = Vec::new();
    for m in ["ib_umad", "mlx5_ib"] {
        if !k.infiniband_modules.iter().any(|x| x == m) {
            out.push(format!(
                "NVLink5 (Blackwell) fabric: the {m} module is not loaded (/proc/modules)"
            ));
        }
    }
    match &k.infiniband_devices {
        Some(d) if d.is_empty() => out.push(
            "NVLink5 fabric: /sys/class/infiniband is empty (no NVSwitch management port)"
                .to_string(),
        ),
        None => out.push(
            "NVLink5 fabric: no /sys/class/infiniband (no NVSwitch management port)".to_string(),
        ),
        Some(_) => {}
    }
    if k.daemons
        .as_ref()
        .is_some_and(|d| !d.iter().any(|x| x == "nvlsm"))
    {
        out.push("NVLink5 fabric: no nvlsm (NVLink subnet manager) process in /proc".to_string());
    }
    out
}

// ---------------------------------------------------------------------------------------------
// fabric-not-completed

/// The fabric manager runs, yet a GPU's fabric is not "Completed" (or its status is not
/// "Success"): CUDA on that GPU still fails with error 802 until it is. Each GPU moves from
/// "Not Started" to "In Progress" to "Completed" (NVIDIA/NVSentinel#883). The reasons named: the
/// fabric manager's own log, and on NVLink5 systems the InfiniBand modules, devices and NVLink
/// subnet manager its NVSwitch management ports need.
fn fabric_not_completed(report: &Report) -> Option<Finding> {
    if report.host.container.is_some() || !report.kernel.nvidia_loaded {
        return None;
    }
    let running = report
        .kernel
        .services
        .iter()
        .find(|s| s.name == "nvidia-fabricmanager")
        .and_then(|s| s.active)
        .or_else(|| {
            report
                .kernel
                .daemons
                .as_ref()
                .map(|d| d.iter().any(|d| FABRIC_MANAGER.contains(&d.as_str())))
        });
    if running != Some(true) {
        return None;
    }
    let stuck: Vec<&crate::report::Gpu> = in_fabric(report)
        .into_iter()
        .filter(|g| {
            let f = g.fabric.as_ref();
            let state = f.and_then(|f| f.state.as_deref());
            let status = f.and_then(|f| f.status.as_deref());
            state != Some("Completed") || status.is_some_and(|s| s != "Success")
        })
        .collect();
    if stuck.is_empty() {
        return None;
    }
    let missing = nvlink5_missing(report);
    let mut f = FindingBuilder::new(
        &ids::FABRIC_NOT_COMPLETED,
        Severity::Error,
        format!(
            "The fabric manager runs but the NVLink fabric of {} GPU(s) is not completed",
            stuck.len()
        ),
    )
    .detail(
        "Each GPU of an NVSwitch system registers with the fabric: its state goes from \
         \"Not Started\" to \"In Progress\" to \"Completed\". Until it is Completed (with status \
         Success) CUDA programs on it fail with error 802 \"system not yet initialized\", even \
         though the fabric manager is running.",
    );
    for line in fabric_evidence(report) {
        f = f.evidence(line);
    }
    for line in &report.kernel.fabric_manager_log {
        f = f.evidence(format!("/var/log/fabricmanager.log: {line}"));
    }
    for m in &missing {
        f = f.evidence(m.clone());
    }
    let fix = if missing.is_empty() {
        "Read the fabric manager's log (`/var/log/fabricmanager.log`, `journalctl -u \
         nvidia-fabricmanager`) for the failing step; a fabric manager whose version differs from \
         the driver's, or a GPU/NVSwitch link error (`nvidia-smi nvlink -s`), keeps the fabric from \
         completing. After fixing it, `sudo systemctl restart nvidia-fabricmanager` and check \
         `nvidia-smi -q | grep -A 3 Fabric` shows State: Completed."
            .to_string()
    } else {
        format!(
            "{NVLINK5_FIX} Then `sudo systemctl restart nvidia-fabricmanager` and check \
             `nvidia-smi -q | grep -A 3 Fabric` shows State: Completed."
        )
    };
    Some(
        f.subject("service:nvidia-fabricmanager")
            .explains(&ids::SMOKE_CUDA_ERROR)
            .fix(fix)
            .build(),
    )
}

// ---------------------------------------------------------------------------------------------
// stub-libcuda-on-path

/// The CUDA toolkit's `stubs/libcuda.so` lets programs link against the driver API on a machine
/// without a driver; it has no driver in it, and a program that loads it at run time fails with
/// CUDA error 34 "CUDA driver is a stub library". A stubs folder belongs on `LIBRARY_PATH` (the
/// linker's), never on the run-time loader path.
///
/// An error when the stub ranks first and is named `libcuda.so.1`, the name every CUDA program
/// opens (the CUDA runtime, hence PyTorch, TensorFlow and JAX): all of them load it. A warning
/// when the first one is only `libcuda.so` (programs that open the unversioned name, such as
/// Numba, get the stub; those asking for `libcuda.so.1` skip that folder) or when the stub sits
/// behind a real driver copy (nothing loads it today; it is a trap for the next path change).
fn stub_libcuda(report: &Report) -> Option<Finding> {
    let libcuda = libs(report, "libcuda");
    let stubs: Vec<&DriverLibrary> = libcuda
        .iter()
        .copied()
        .filter(|l| l.kind == "stub")
        .collect();
    let first = libcuda.first()?;
    if stubs.is_empty() {
        return None;
    }
    let stub_first = first.kind == "stub";
    let soname_stub = stub_first && first.path.ends_with("libcuda.so.1");
    let severity = if soname_stub {
        Severity::Error
    } else {
        Severity::Warning
    };
    let title = if soname_stub {
        "The loader finds the toolkit's stub libcuda.so.1 before the real driver"
    } else if stub_first {
        "The toolkit's stub libcuda.so comes before the real driver on the loader path"
    } else {
        "The toolkit's stub libcuda is on the run-time loader path"
    };
    let detail = if soname_stub {
        "A folder of link-time stubs is on the run-time loader path, and it holds a libcuda.so.1, \
         so every CUDA program (PyTorch, TensorFlow, JAX) loads the stub instead of the driver \
         and fails with CUDA error 34 \"CUDA driver is a stub library\" (some versions say \"CUDA \
         driver version is insufficient for CUDA runtime version\"). Stubs are for linking on machines without a driver."
    } else if stub_first {
        "A folder of link-time stubs comes first on the run-time loader path. Programs that open \
         `libcuda.so` (Numba, some build and JIT tools) load the stub and fail with CUDA error 34 \
         \"CUDA driver is a stub library\"; the CUDA runtime asks for libcuda.so.1 and still \
         finds the driver. Stubs are for linking on machines without a driver."
    } else {
        "A folder of link-time stubs is on the run-time loader path, behind the real driver, so \
         nothing loads the stub today. If the order changes (a new LD_LIBRARY_PATH, a \
         container without the driver mounted) programs load it and fail with CUDA error 34."
    };
    let mut f = FindingBuilder::new(&ids::STUB_LIBCUDA_ON_PATH, severity, title).detail(detail);
    for lib in &libcuda {
        f = f.evidence(lib_line(lib));
    }
    for lib in libs(report, "libnvidia-ml")
        .iter()
        .filter(|l| l.kind == "stub")
    {
        f = f.evidence(lib_line(lib));
    }
    if let Some(v) = env(report, "LD_LIBRARY_PATH") {
        f = f.evidence(format!("LD_LIBRARY_PATH={v}"));
    }
    let mut fix = Vec::new();
    if let Some(cmd) = ld_library_path_fix(report, &stubs) {
        fix.push(format!(
            "Take the stubs folder off the run-time path: `{cmd}` (and remove it where it is \
             set: shell profile, job script, Dockerfile `ENV`)."
        ));
    }
    if stubs.iter().any(|l| l.origin == "ld.so.conf") {
        fix.push(
            "Remove the stubs folder from /etc/ld.so.conf.d/*.conf, then run `sudo ldconfig`."
                .to_string(),
        );
    }
    if stubs.iter().any(|l| l.path.ends_with("libcuda.so.1")) {
        let links: Vec<&str> = stubs
            .iter()
            .filter(|l| l.path.ends_with("libcuda.so.1"))
            .map(|l| l.path.as_str())
            .collect();
        fix.push(format!(
            "Delete the libcuda.so.1 link made in the stubs folder (`sudo rm {}`): the toolkit \
             ships only libcuda.so there.",
            links.join(" ")
        ));
    }
    fix.push(
        "To build against the stub, give it to the linker only: \
         `LIBRARY_PATH=/usr/local/cuda/lib64/stubs` or `-L/usr/local/cuda/lib64/stubs`."
            .to_string(),
    );
    for lib in &stubs {
        f = f.subject(format!("library:{}", lib.path));
    }
    Some(f.fix(fix.join(" ")).build())
}

// ---------------------------------------------------------------------------------------------
// forward-compatibility-unsupported

/// The libcuda that loads first when it is a forward-compatibility copy: from a compat folder,
/// or (by version, not folder) one whose version is that of a cuda-compat copy on this machine
/// and newer than the loaded kernel module, which is what a compat library mounted over the
/// driver's own file name looks like. The second value is that cuda-compat copy.
pub(super) fn forward_compat_libcuda(
    report: &Report,
) -> Option<(&DriverLibrary, Option<&DriverLibrary>)> {
    let libcuda = libs(report, "libcuda");
    let first = libcuda
        .iter()
        .copied()
        .find(|l| l.origin != "cuda-compat")?;
    if first.kind == "compat" {
        return Some((first, None));
    }
    if first.kind != "driver" {
        return None;
    }
    let version = first.version.as_deref()?;
    let module = report.kernel.nvidia_version.as_deref()?;
    let newer = matches!(
        (
            crate::version::Version::parse(version),
            crate::version::Version::parse(module)
        ),
        (Some(v), Some(m)) if v > m
    );
    let twin = libcuda
        .iter()
        .copied()
        .find(|l| l.kind == "compat" && l.version.as_deref() == Some(version))?;
    newer.then_some((first, Some(twin)))
}

/// What the GPU table says about one GPU's forward compatibility: the row's verdict, or `None`
/// when the GPU is not in the table (or its name fits rows that disagree).
fn forward_compat_of(gpu: &Gpu, manifests: &Manifests) -> Option<(bool, String)> {
    if let Some(row) = gpu
        .pci_device_id
        .as_deref()
        .and_then(|id| manifests.gpus.by_pci_id(id))
    {
        return Some((row.forward_compat, row.name.clone()));
    }
    let rows = manifests.gpus.by_name(gpu.name.as_deref()?);
    let first = rows.first()?;
    rows.iter()
        .all(|r| r.forward_compat == first.forward_compat)
        .then(|| (first.forward_compat, first.name.clone()))
}

/// The loader picks a forward-compatibility libcuda (the `cuda-compat` package, which lets a
/// data-center GPU run a newer CUDA than its driver) on a GPU that cannot use it: GeForce and
/// most workstation cards (compat-cuda.md R5). CUDA then fails with error 804 "forward
/// compatibility was attempted on non supported HW".
///
/// An error for a GPU the table marks `forward_compat = false`; a warning when a GPU is not in
/// the table, since then it cannot be told. Nothing when every GPU supports it or none is known.
fn forward_compat(report: &Report, manifests: &Manifests) -> Option<Finding> {
    let libcuda = libs(report, "libcuda");
    let (first, twin) = forward_compat_libcuda(report)?;
    let gpus = machine_gpus(report);
    let verdicts: Vec<(&Gpu, Option<(bool, String)>)> = gpus
        .iter()
        .map(|g| (*g, forward_compat_of(g, manifests)))
        .collect();
    let unsupported: Vec<_> = verdicts
        .iter()
        .filter(|(_, v)| matches!(v, Some((false, _))))
        .collect();
    let unknown: Vec<_> = verdicts.iter().filter(|(_, v)| v.is_none()).collect();
    if unsupported.is_empty() && unknown.is_empty() {
        return None;
    }
    let (severity, title) = if unsupported.is_empty() {
        (
            Severity::Warning,
            "A forward-compatibility libcuda loads first on a GPU that may not support it",
        )
    } else {
        (
            Severity::Error,
            "A forward-compatibility libcuda loads first on a GPU that does not support it",
        )
    };
    let mut f = FindingBuilder::new(&ids::FORWARD_COMPAT_UNSUPPORTED, severity, title).detail(
        "The libcuda the loader picks first comes from the cuda-compat package (forward \
         compatibility), which lets a data-center GPU run a newer CUDA than its driver. GeForce \
         and most workstation GPUs cannot use it: CUDA fails with error 804 \"forward \
         compatibility was attempted on non supported HW\". This usually comes from a container \
         image (NGC, nvidia/cuda) built for a newer CUDA than the host driver, with the compat \
         folder on LD_LIBRARY_PATH or its libcuda mounted at the driver's own name by the \
         container runtime.",
    );
    f = f.evidence(lib_line(first));
    if let Some(twin) = twin {
        f = f.evidence(format!(
            "libcuda {}: the version of the cuda-compat copy {} and newer than the kernel \
             module, so a forward-compatibility library, whatever folder it was mounted in",
            first.version.as_deref().unwrap_or("?"),
            twin.path
        ));
    }
    if let Some(real) = libcuda
        .iter()
        .find(|l| l.kind == "driver" && !std::ptr::eq(**l, first))
    {
        f = f.evidence(lib_line(real));
    }
    if let Some(m) = &report.kernel.nvidia_version {
        f = f.evidence(format!("kernel module: {m}"));
    }
    for (gpu, verdict) in unsupported.iter().chain(unknown.iter()) {
        let id = gpu.pci_device_id.as_deref().unwrap_or("unknown device id");
        f = f
            .evidence(match verdict {
                Some((_, row)) => format!(
                    "{} [{id}]: \"{row}\" in the GPU table, no forward compatibility",
                    gpu_label(gpu)
                ),
                None => format!(
                    "{} [{id}]: not in the GPU table, forward compatibility unknown",
                    gpu_label(gpu)
                ),
            })
            .subject(format!("gpu:{}", gpu.index));
    }
    let mut fix = Vec::new();
    if let Some(cmd) = ld_library_path_fix(report, &[first]) {
        fix.push(format!(
            "Take the compat folder off the loader path so the host driver's libcuda loads: `{cmd}`."
        ));
    } else if first.origin == "ld.so.conf" && twin.is_none() {
        fix.push(
            "Remove the compat folder from /etc/ld.so.conf.d/*.conf and run `sudo ldconfig`, so \
             the host driver's libcuda loads."
                .to_string(),
        );
    }
    if twin.is_some() || report.host.container.is_some() && fix.is_empty() {
        // Mounted over the driver's own name (the container runtime does that with an image's
        // cuda-compat): the image carries it, so the image is where it goes away.
        fix.push(
            "In the image, remove the cuda-compat package (`apt-get purge -y 'cuda-compat-*'` in \
             its Dockerfile, or delete /usr/local/cuda*/compat), or stop mounting or copying the \
             compat folder into the container, so the host driver's own libcuda is used; if the \
             host itself has a `cuda-compat-*` package, the container runtime injects it: \
             remove it there (`sudo apt purge 'cuda-compat-*'`)."
                .to_string(),
        );
    }
    let needed = first.version.as_deref().map_or(String::new(), |v| {
        format!(" (at least {v}, the compat library's version)")
    });
    fix.push(format!(
        "Then either upgrade the host driver to one that supports the image's CUDA natively{needed}, \
         or use an image built for the CUDA version the host driver supports (`nvidia-smi` \
         shows it)."
    ));
    Some(
        f.subject(format!("library:{}", first.path))
            .fix(fix.join(" "))
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::test_support::{has_evidence, ids, one};
    use crate::report::{EnvVar, KernelInfo, PciDevice, ProbeOutcome, PythonEnv};

    fn run(report: &Report) -> Vec<Finding> {
        findings(report, crate::manifest::embedded())
    }

    fn var(name: &str, value: &str) -> EnvVar {
        EnvVar {
            name: name.into(),
            value: value.into(),
        }
    }

    fn lib(
        name: &str,
        dir: &str,
        file: &str,
        kind: &str,
        origin: &str,
        rank: u32,
    ) -> DriverLibrary {
        DriverLibrary {
            name: name.into(),
            path: format!("{dir}/{file}"),
            resolved: None,
            version: None,
            kind: kind.into(),
            origin: origin.into(),
            rank,
        }
    }

    fn driver_libcuda(rank: u32) -> DriverLibrary {
        DriverLibrary {
            resolved: Some("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15".into()),
            version: Some("550.54.15".into()),
            ..lib(
                "libcuda",
                "/lib/x86_64-linux-gnu",
                "libcuda.so.1",
                "driver",
                "ld.so.conf",
                rank,
            )
        }
    }

    fn gpu(index: u32, name: &str, device: &str) -> Gpu {
        Gpu {
            index,
            name: Some(name.into()),
            uuid: Some(format!("GPU-{index}1b2c3d4-0000-1111-2222-333333333333")),
            pci_device_id: Some(device.into()),
            source: "nvidia-smi".into(),
            ..Gpu::default()
        }
    }

    fn rtx3090(index: u32) -> Gpu {
        gpu(index, "NVIDIA GeForce RTX 3090", "0x2204")
    }

    fn torch_cuda() -> PythonEnv {
        PythonEnv {
            path: "/opt/venv".into(),
            kind: "venv".into(),
            frameworks: vec![Framework {
                name: "torch".into(),
                version: Some("2.4.0+cu121".into()),
                cuda: Some("12.1".into()),
                variant: Some("cuda".into()),
                ..Framework::default()
            }],
            ..PythonEnv::default()
        }
    }

    // container-no-gpu-runtime

    fn bare_container() -> Report {
        let mut r = Report::default();
        r.host.container = Some("docker".into());
        r
    }

    #[test]
    fn a_cuda_image_without_gpus_is_an_error_that_replaces_no_gpu() {
        let mut r = bare_container();
        r.environment = vec![var("NVIDIA_VISIBLE_DEVICES", "all")];
        let found = run(&r);
        let f = one(&found, "container-no-gpu-runtime");
        assert_eq!(f.severity, Severity::Error);
        assert!(has_evidence(f, "NVIDIA_VISIBLE_DEVICES=all"), "{f:#?}");
        assert_eq!(f.explains, ["no-gpu"]);
        assert!(f.fix.as_deref().is_some_and(|x| x.contains("--gpus all")));
        // Through the whole diagnosis, the generic no-gpu finding gives way.
        let all = crate::diagnose::diagnose(&r);
        assert_eq!(
            all.iter().map(|f| f.id.as_str()).collect::<Vec<_>>(),
            ["container-no-gpu-runtime"]
        );
    }

    #[test]
    fn a_cuda_framework_makes_it_an_error_and_kubernetes_gets_its_own_fix() {
        let mut r = bare_container();
        r.host.container = Some("kubernetes".into());
        r.python_envs = vec![torch_cuda()];
        r.pci_devices = vec![PciDevice {
            address: "0000:01:00.0".into(),
            vendor: "nvidia".into(),
            device_id: "0x2204".into(),
            ..PciDevice::default()
        }];
        let found = run(&r);
        let f = one(&found, "container-no-gpu-runtime");
        assert_eq!(f.severity, Severity::Error);
        assert!(
            has_evidence(f, "torch 2.4.0+cu121 in /opt/venv is built for CUDA 12.1"),
            "{f:#?}"
        );
        assert!(has_evidence(f, "PCI 0000:01:00.0"), "{f:#?}");
        assert!(
            f.fix
                .as_deref()
                .is_some_and(|x| x.contains("nvidia.com/gpu"))
        );
    }

    #[test]
    fn a_plain_cpu_container_is_left_to_no_gpu() {
        let mut r = bare_container();
        r.environment = vec![var("NVIDIA_VISIBLE_DEVICES", "void")];
        assert!(run(&r).is_empty());
        assert_eq!(ids(&crate::diagnose::diagnose(&r)), ["no-gpu"]);
    }

    #[test]
    fn a_read_bus_without_an_nvidia_gpu_is_no_gpu_even_for_a_cuda_image() {
        let mut r = bare_container();
        r.environment = vec![var("NVIDIA_VISIBLE_DEVICES", "all")];
        r.python_envs = vec![torch_cuda()];
        r.probes = vec![crate::report::ProbeRecord {
            name: "pci".into(),
            status: ProbeStatus::Ok,
            detail: None,
            duration_ms: 0,
            source: None,
        }];
        assert!(run(&r).is_empty());
        let all = crate::diagnose::diagnose(&r);
        assert_eq!(ids(&all), ["no-gpu"]);
        assert_eq!(all[0].severity, Severity::Info);
        assert!(all[0].fix.as_deref().is_none_or(|x| !x.contains("--gpus")));
    }

    #[test]
    fn containers_with_gpu_access_and_hosts_are_not_judged() {
        let mut with_nodes = bare_container();
        with_nodes.environment = vec![var("NVIDIA_VISIBLE_DEVICES", "all")];
        with_nodes.kernel.device_nodes = vec!["/dev/nvidia0".into(), "/dev/nvidiactl".into()];
        assert!(run(&with_nodes).is_empty());

        let mut with_libcuda = bare_container();
        with_libcuda.driver_libraries = vec![driver_libcuda(0)];
        assert!(run(&with_libcuda).is_empty());

        let host = Report {
            environment: vec![var("NVIDIA_VISIBLE_DEVICES", "all")],
            ..Report::default()
        };
        assert!(run(&host).is_empty());
    }

    // visible-devices-hides-gpus

    fn two_gpus() -> Report {
        Report {
            gpus: vec![rtx3090(0), rtx3090(1)],
            ..Report::default()
        }
    }

    #[test]
    fn empty_minus_one_and_out_of_range_values_hide_gpus() {
        for (value, says) in [
            ("", "set but empty"),
            ("-1", "negative index"),
            (
                "2",
                "index 2, but the machine has 2 GPU(s), numbered 0 to 1",
            ),
            ("2,0,1", "index 2"),
            ("GPU-deadbeef", "no GPU's UUID"),
            ("cuda:0", "neither a GPU index nor a GPU UUID"),
        ] {
            let mut r = two_gpus();
            r.environment = vec![var("CUDA_VISIBLE_DEVICES", value)];
            let found = run(&r);
            let f = one(&found, "visible-devices-hides-gpus");
            assert_eq!(f.severity, Severity::Error, "{value}");
            assert!(has_evidence(f, says), "{value}: {f:#?}");
            assert!(
                has_evidence(f, "hidden: GPU 0 (NVIDIA GeForce RTX 3090)"),
                "{value}: {f:#?}"
            );
            assert!(f.subjects.contains(&"env:CUDA_VISIBLE_DEVICES".to_string()));
        }
    }

    #[test]
    fn a_bad_entry_in_the_middle_hides_what_follows() {
        let mut r = two_gpus();
        r.environment = vec![var("CUDA_VISIBLE_DEVICES", "0,7,1")];
        let found = run(&r);
        let f = one(&found, "visible-devices-hides-gpus");
        assert!(has_evidence(f, "only GPU(s) 0 stay visible"), "{f:#?}");
        assert!(has_evidence(f, "hidden: GPU 1"), "{f:#?}");
        assert!(!has_evidence(f, "hidden: GPU 0"), "{f:#?}");
    }

    #[test]
    fn valid_selections_and_harmless_extras_are_fine() {
        for value in [
            "0",
            "1,0",
            "0,1,2,3",
            "GPU-11b2c3d4",
            "GPU-01b2c3d4-0000-1111-2222-333333333333,1",
            "MIG-4f1c2d3e-aaaa-bbbb-cccc-000000000000",
            " 1 ",
        ] {
            let mut r = two_gpus();
            r.environment = vec![var("CUDA_VISIBLE_DEVICES", value)];
            assert!(run(&r).is_empty(), "{value}: {:#?}", run(&r));
        }
    }

    #[test]
    fn nothing_is_judged_without_known_gpus_or_for_mig_indices() {
        let r = Report {
            environment: vec![var("CUDA_VISIBLE_DEVICES", "")],
            ..Report::default()
        };
        assert!(run(&r).is_empty());

        let mut mig = two_gpus();
        for g in &mut mig.gpus {
            g.mig_mode = Some("Enabled".into());
        }
        mig.environment = vec![var("CUDA_VISIBLE_DEVICES", "5")];
        assert!(run(&mig).is_empty());
    }

    #[test]
    fn nvidia_visible_devices_void_in_a_container_hides_the_bus_gpus() {
        let mut r = two_gpus();
        for g in &mut r.gpus {
            g.source = "pci".into();
        }
        r.host.container = Some("docker".into());
        r.environment = vec![var("NVIDIA_VISIBLE_DEVICES", "void")];
        let found = run(&r);
        let f = one(&found, "visible-devices-hides-gpus");
        assert!(
            has_evidence(f, "NVIDIA_VISIBLE_DEVICES=\"void\" inside a container"),
            "{f:#?}"
        );
        assert_eq!(f.explains, ["container-no-gpu-runtime"]);
        // The same value with a GPU passed in anyway (`--gpus` wins) hides nothing.
        r.kernel.device_nodes = vec!["/dev/nvidia0".into()];
        assert!(!ids(&run(&r)).contains(&"visible-devices-hides-gpus"));
        // And outside a container the variable means nothing.
        r.kernel.device_nodes.clear();
        r.host.container = None;
        assert!(run(&r).is_empty());
    }

    // wsl-driver-in-guest

    fn wsl_libcuda(rank: u32) -> DriverLibrary {
        DriverLibrary {
            resolved: Some("/usr/lib/wsl/lib/libcuda.so.1.1".into()),
            ..lib(
                "libcuda",
                "/usr/lib/wsl/lib",
                "libcuda.so.1",
                "driver",
                "wsl",
                rank,
            )
        }
    }

    fn wsl() -> Report {
        let mut r = Report::default();
        r.host.wsl = true;
        r
    }

    #[test]
    fn a_linux_libcuda_before_wsls_is_an_error_and_explains_the_failing_smi() {
        let mut r = wsl();
        let mut linux = driver_libcuda(0);
        linux.path = "/usr/lib/x86_64-linux-gnu/libcuda.so.1".into();
        linux.origin = "LD_LIBRARY_PATH".into();
        r.driver_libraries = vec![linux, wsl_libcuda(1)];
        r.environment = vec![var(
            "LD_LIBRARY_PATH",
            "/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64",
        )];
        r.driver.nvidia_smi_path = Some("/usr/bin/nvidia-smi".into());
        r.driver.nvidia_smi =
            ProbeOutcome::new(ProbeStatus::Failed, Some("couldn't communicate".into()));
        let found = run(&r);
        let f = one(&found, "wsl-driver-in-guest");
        assert_eq!(f.severity, Severity::Error);
        assert!(
            has_evidence(
                f,
                "libcuda #0: /usr/lib/x86_64-linux-gnu/libcuda.so.1 -> /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15 (driver library, from LD_LIBRARY_PATH)"
            ),
            "{f:#?}"
        );
        assert!(
            has_evidence(
                f,
                "libcuda #1: /usr/lib/wsl/lib/libcuda.so.1 -> /usr/lib/wsl/lib/libcuda.so.1.1 (WSL's driver library, from wsl)"
            ),
            "{f:#?}"
        );
        assert_eq!(f.explains, ["nvidia-smi-failed"]);
        let fix = f.fix.as_deref().unwrap_or_default();
        assert!(
            fix.contains("`export LD_LIBRARY_PATH=/usr/local/cuda/lib64`"),
            "{fix}"
        );
        assert!(fix.contains("wsl --shutdown"), "{fix}");
    }

    #[test]
    fn a_linux_copy_behind_wsls_is_a_warning_and_a_clean_wsl_is_nothing() {
        let mut r = wsl();
        r.driver_libraries = vec![wsl_libcuda(0), driver_libcuda(1)];
        let found = run(&r);
        let f = one(&found, "wsl-driver-in-guest");
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.explains.is_empty());

        r.driver_libraries = vec![wsl_libcuda(0)];
        assert!(run(&r).is_empty());
        // The same Linux libcuda outside WSL is the normal driver.
        r.host.wsl = false;
        r.driver_libraries = vec![driver_libcuda(0)];
        assert!(run(&r).is_empty());
    }

    #[test]
    fn the_nvidia_module_in_the_guest_is_an_error() {
        let mut r = wsl();
        r.driver_libraries = vec![wsl_libcuda(0)];
        r.kernel = KernelInfo {
            nvidia_loaded: true,
            nvidia_version: Some("550.54.15".into()),
            ..KernelInfo::default()
        };
        let found = run(&r);
        let f = one(&found, "wsl-driver-in-guest");
        assert_eq!(f.severity, Severity::Error);
        assert!(
            has_evidence(f, "nvidia kernel module loaded in the guest (550.54.15)"),
            "{f:#?}"
        );
    }

    // fabric-manager-not-running

    fn hgx(daemons: Option<Vec<String>>) -> Report {
        let switch = |n: u32| PciDevice {
            address: format!("0000:0{n}:00.0"),
            vendor: "nvidia".into(),
            device_id: "0x22a3".into(),
            class: "0x068000".into(),
            nvswitch: true,
            ..PciDevice::default()
        };
        let gpu_dev = |bus: &str| PciDevice {
            address: format!("0000:{bus}:00.0"),
            vendor: "nvidia".into(),
            device_id: "0x2330".into(),
            class: "0x030200".into(),
            ..PciDevice::default()
        };
        let mut r = Report {
            pci_devices: vec![switch(5), switch(6), gpu_dev("18"), gpu_dev("2a")],
            ..Report::default()
        };
        r.kernel.nvidia_loaded = true;
        r.kernel.daemons = daemons;
        r.driver.version = Some("550.54.15".into());
        r.host.os_id = Some("ubuntu".into());
        r
    }

    #[test]
    fn nvswitches_without_fabric_manager_are_an_error() {
        let found = run(&hgx(Some(vec!["nvidia-persistenced".into()])));
        let f = one(&found, "fabric-manager-not-running");
        assert_eq!(f.severity, Severity::Error);
        assert!(f.title.contains("2 NVSwitch, 2 GPU(s)"), "{}", f.title);
        assert!(
            has_evidence(
                f,
                "NVSwitch bridge(s) 0000:05:00.0, 0000:06:00.0 (device 0x22a3)"
            ),
            "{f:#?}"
        );
        assert!(
            has_evidence(
                f,
                "running GPU daemons: nvidia-persistenced (no nv-fabricmanager)"
            ),
            "{f:#?}"
        );
        let fix = f.fix.as_deref().unwrap_or_default();
        assert!(
            fix.contains("nvidia-fabricmanager-550=550.54.15-1"),
            "{fix}"
        );
    }

    #[test]
    fn fabric_manager_running_or_unknowable_says_nothing() {
        assert!(run(&hgx(Some(vec!["nv-fabricmanager".into()]))).is_empty());
        assert!(run(&hgx(None)).is_empty(), "/proc unreadable");
        let mut no_module = hgx(Some(Vec::new()));
        no_module.kernel.nvidia_loaded = false;
        assert!(run(&no_module).is_empty(), "no-driver is the cause");
        let mut in_container = hgx(Some(Vec::new()));
        in_container.host.container = Some("docker".into());
        in_container.kernel.device_nodes = vec!["/dev/nvidia0".into()];
        assert!(
            run(&in_container).is_empty(),
            "the host's processes are not visible"
        );
        let mut no_switch = hgx(Some(Vec::new()));
        no_switch.pci_devices.retain(|d| !d.nvswitch);
        assert!(run(&no_switch).is_empty());
    }

    // fabric-not-completed, NVLink5

    fn b200(state: &str, status: Option<&str>, fm: bool) -> Report {
        let mut r = hgx(Some(if fm {
            vec!["nv-fabricmanager".into()]
        } else {
            Vec::new()
        }));
        r.pci_devices.retain(|d| !d.nvswitch);
        r.gpus = (0..2)
            .map(|i| crate::report::Gpu {
                index: i,
                name: Some("NVIDIA B200".into()),
                compute_capability: Some("10.0".into()),
                source: "nvidia-smi".into(),
                fabric: Some(crate::report::GpuFabric {
                    state: Some(state.into()),
                    status: status.map(str::to_string),
                    ..crate::report::GpuFabric::default()
                }),
                ..crate::report::Gpu::default()
            })
            .collect();
        r
    }

    #[test]
    fn a_fabric_stuck_with_the_fabric_manager_running_names_the_nvlink5_prerequisites() {
        let mut r = b200("In Progress", None, true);
        r.kernel.fabric_manager_log = vec!["[ERROR] failed to open umad device".into()];
        let found = run(&r);
        let f = one(&found, "fabric-not-completed");
        assert!(has_evidence(f, "fabric state In Progress"), "{f:#?}");
        assert!(
            has_evidence(f, "the ib_umad module is not loaded"),
            "{f:#?}"
        );
        assert!(has_evidence(f, "no /sys/class/infiniband"), "{f:#?}");
        assert!(has_evidence(f, "no nvlsm"), "{f:#?}");
        assert!(has_evidence(f, "failed to open umad device"), "{f:#?}");
        assert!(
            f.fix
                .as_deref()
                .unwrap()
                .contains("modprobe -a ib_umad mlx5_ib")
        );
        // All there: the log is what is left to read.
        r.kernel.infiniband_modules = vec!["ib_umad".into(), "mlx5_ib".into()];
        r.kernel.infiniband_devices = Some(vec!["mlx5_0".into()]);
        r.kernel.daemons = Some(vec!["nv-fabricmanager".into(), "nvlsm".into()]);
        let found = run(&r);
        let f = one(&found, "fabric-not-completed");
        assert!(
            f.fix
                .as_deref()
                .unwrap()
                .starts_with("Read the fabric manager's log")
        );
    }

    #[test]
    fn a_completed_fabric_says_nothing_even_without_a_local_fabric_manager() {
        // GB200 compute trays: the fabric manager runs on the switch trays.
        assert!(run(&b200("Completed", Some("Success"), false)).is_empty());
        assert!(run(&b200("Completed", Some("Success"), true)).is_empty());
        // Not Supported is no fabric.
        assert!(run(&b200("Not Supported", None, false)).is_empty());
        // Without the fabric manager, its own finding leads with the NVLink5 modules.
        let found = run(&b200("Not Started", None, false));
        let f = one(&found, "fabric-manager-not-running");
        assert!(
            f.fix
                .as_deref()
                .unwrap()
                .starts_with("First load the InfiniBand modules")
        );
        assert!(!ids(&found).contains(&"fabric-not-completed"));
    }

    // stub-libcuda-on-path

    const STUBS: &str = "/usr/local/cuda/lib64/stubs";

    #[test]
    fn a_stub_named_like_the_driver_first_is_an_error() {
        let r = Report {
            driver_libraries: vec![
                lib(
                    "libcuda",
                    STUBS,
                    "libcuda.so.1",
                    "stub",
                    "LD_LIBRARY_PATH",
                    0,
                ),
                driver_libcuda(1),
            ],
            environment: vec![var(
                "LD_LIBRARY_PATH",
                "/usr/local/cuda/lib64/stubs/:/usr/local/nvidia/lib64",
            )],
            ..Report::default()
        };
        let found = run(&r);
        let f = one(&found, "stub-libcuda-on-path");
        assert_eq!(f.severity, Severity::Error);
        assert!(
            has_evidence(
                f,
                "libcuda #0: /usr/local/cuda/lib64/stubs/libcuda.so.1 (link-time stub, from LD_LIBRARY_PATH)"
            ),
            "{f:#?}"
        );
        assert!(
            has_evidence(f, "libcuda #1: /lib/x86_64-linux-gnu/libcuda.so.1"),
            "{f:#?}"
        );
        let fix = f.fix.as_deref().unwrap_or_default();
        assert!(
            fix.contains("`export LD_LIBRARY_PATH=/usr/local/nvidia/lib64`"),
            "{fix}"
        );
        assert!(
            fix.contains("sudo rm /usr/local/cuda/lib64/stubs/libcuda.so.1"),
            "{fix}"
        );
    }

    #[test]
    fn an_unversioned_stub_first_or_a_stub_behind_the_driver_is_a_warning() {
        let mut r = Report {
            driver_libraries: vec![
                lib("libcuda", STUBS, "libcuda.so", "stub", "LD_LIBRARY_PATH", 0),
                driver_libcuda(1),
                lib(
                    "libnvidia-ml",
                    STUBS,
                    "libnvidia-ml.so",
                    "stub",
                    "LD_LIBRARY_PATH",
                    0,
                ),
            ],
            environment: vec![var("LD_LIBRARY_PATH", STUBS)],
            ..Report::default()
        };
        let found = run(&r);
        let f = one(&found, "stub-libcuda-on-path");
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.title.contains("comes before"), "{}", f.title);
        assert!(
            has_evidence(
                f,
                "libnvidia-ml #0: /usr/local/cuda/lib64/stubs/libnvidia-ml.so"
            ),
            "{f:#?}"
        );
        assert!(
            f.fix
                .as_deref()
                .is_some_and(|x| x.contains("`unset LD_LIBRARY_PATH`"))
        );

        r.driver_libraries = vec![
            driver_libcuda(0),
            lib("libcuda", STUBS, "libcuda.so", "stub", "ld.so.conf", 1),
        ];
        let found = run(&r);
        let f = one(&found, "stub-libcuda-on-path");
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.fix
                .as_deref()
                .is_some_and(|x| x.contains("sudo ldconfig"))
        );
    }

    #[test]
    fn no_stub_no_finding() {
        let r = Report {
            driver_libraries: vec![driver_libcuda(0)],
            ..Report::default()
        };
        assert!(run(&r).is_empty());
    }

    // forward-compat-unsupported

    fn compat_first(gpus: Vec<Gpu>) -> Report {
        let compat = DriverLibrary {
            resolved: Some("/usr/local/cuda-12.4/compat/libcuda.so.550.54.15".into()),
            version: Some("550.54.15".into()),
            ..lib(
                "libcuda",
                "/usr/local/cuda/compat",
                "libcuda.so.1",
                "compat",
                "LD_LIBRARY_PATH",
                0,
            )
        };
        let mut r = Report {
            gpus,
            driver_libraries: vec![compat, driver_libcuda(1)],
            environment: vec![var(
                "LD_LIBRARY_PATH",
                "/usr/local/cuda/compat:/usr/local/nvidia/lib64",
            )],
            ..Report::default()
        };
        r.kernel.nvidia_version = Some("535.183.01".into());
        r
    }

    #[test]
    fn compat_libcuda_on_geforce_is_an_error() {
        let found = run(&compat_first(vec![rtx3090(0)]));
        let f = one(&found, "forward-compat-unsupported");
        assert_eq!(f.severity, Severity::Error);
        assert!(
            has_evidence(f, "(forward-compatibility copy, from LD_LIBRARY_PATH)"),
            "{f:#?}"
        );
        assert!(
            has_evidence(
                f,
                "GPU 0 (NVIDIA GeForce RTX 3090) [0x2204]: \"GeForce RTX 3090\" in the GPU table"
            ),
            "{f:#?}"
        );
        assert!(has_evidence(f, "kernel module: 535.183.01"), "{f:#?}");
        let fix = f.fix.as_deref().unwrap_or_default();
        assert!(
            fix.contains("`export LD_LIBRARY_PATH=/usr/local/nvidia/lib64`"),
            "{fix}"
        );
        assert!(fix.contains("at least 550.54.15"), "{fix}");
    }

    #[test]
    fn a_gpu_found_by_name_or_unknown_to_the_table() {
        // No device id: the name finds the row.
        let mut by_name = rtx3090(0);
        by_name.pci_device_id = None;
        let found = run(&compat_first(vec![by_name]));
        assert_eq!(
            one(&found, "forward-compat-unsupported").severity,
            Severity::Error
        );

        let mystery = gpu(0, "NVIDIA Mystery GPU 9000", "0xfff0");
        let found = run(&compat_first(vec![mystery]));
        let f = one(&found, "forward-compat-unsupported");
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            has_evidence(f, "not in the GPU table, forward compatibility unknown"),
            "{f:#?}"
        );
    }

    #[test]
    fn a_compat_libcuda_mounted_at_the_drivers_name_is_told_by_its_version() {
        // The runtime mounted the image's cuda-compat libcuda over /lib/x86_64-linux-gnu: the
        // folder says driver, the version (that of the compat copy, newer than the module)
        // says forward compatibility.
        let mut r = compat_first(vec![rtx3090(0)]);
        r.environment.clear();
        r.host.container = Some("docker".into());
        for l in &mut r.driver_libraries {
            if l.kind == "compat" {
                l.origin = "cuda-compat".into();
                l.rank = 1;
            } else {
                l.rank = 0;
            }
        }
        let all = crate::diagnose::diagnose(&r);
        assert_eq!(ids(&all), ["forward-compat-unsupported"], "{all:#?}");
        let f = &all[0];
        assert_eq!(f.severity, Severity::Error);
        assert!(
            has_evidence(f, "the version of the cuda-compat copy"),
            "{f:#?}"
        );
        let fix = f.fix.as_deref().unwrap_or_default();
        assert!(
            fix.starts_with("In the image, remove the cuda-compat package"),
            "{fix}"
        );
        assert!(
            !fix.contains("rmmod") && !fix.to_lowercase().contains("reboot"),
            "{fix}"
        );
        // The same libraries with the module at their version: the driver's own, all quiet.
        r.kernel.nvidia_version = Some("550.54.15".into());
        assert!(crate::diagnose::diagnose(&r).is_empty());
    }

    #[test]
    fn compat_on_data_center_gpus_or_behind_the_driver_is_fine() {
        let a100 = gpu(0, "NVIDIA A100-SXM4-40GB", "0x20b0");
        assert!(run(&compat_first(vec![a100])).is_empty());

        let mut behind = compat_first(vec![rtx3090(0)]);
        for l in &mut behind.driver_libraries {
            l.rank = 1 - l.rank;
            if l.kind == "driver" {
                l.version = Some("535.183.01".into());
            }
        }
        assert!(run(&behind).is_empty());
        assert!(
            run(&compat_first(Vec::new())).is_empty(),
            "no GPU known: nothing to judge"
        );
    }
}

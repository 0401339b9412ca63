//! Is the driver's user space complete? The GPU devices and NVML (`nvidia-smi`) can be there
//! while the CUDA driver library is not: then `nvidia-smi` works and every CUDA program fails
//! ("Found no NVIDIA driver on your system"). Findings: `container-driver-capabilities`,
//! `driver-compute-libraries-missing`.
//!
//! In a container the NVIDIA runtime mounts driver files by capability (NVIDIA
//! libnvidia-container, `src/nvc_info.c`): `utility` brings `nvidia-smi`, `libnvidia-ml`,
//! `libnvidia-cfg`; `compute` brings `libcuda`, `libnvidia-ptxjitcompiler`, `libnvidia-nvvm`
//! and the other CUDA driver libraries. With `NVIDIA_DRIVER_CAPABILITIES` unset the runtime
//! gives `utility` only, which is why an image not built on `nvidia/cuda` (whose images set
//! `compute,utility`) gets a working `nvidia-smi` and no CUDA.

use super::ids;
use super::{FindingBuilder, env_var as env};
use crate::manifest::Manifests;
use crate::report::Subject;
use crate::report::{DriverLibraryKind, Finding, ProbeStatus, Report, Severity};

pub(super) fn findings(report: &Report, _manifests: &Manifests) -> Vec<Finding> {
    let Some(seen) = driver_without_libcuda(report) else {
        return Vec::new();
    };
    match report.host.container.as_deref() {
        Some(runtime) => vec![container_capabilities(report, runtime, seen)],
        None => vec![host_compute_missing(report, seen)],
    }
}

/// What shows the driver is reachable while no driver libcuda is on the loader path: evidence
/// lines, or None when libcuda is there or nothing of the driver is (other rules speak then).
fn driver_without_libcuda(report: &Report) -> Option<Vec<String>> {
    if report.host.wsl
        || report
            .driver_libraries
            .iter()
            .any(|l| l.name == "libcuda" && l.kind == DriverLibraryKind::Driver)
    {
        return None;
    }
    let mut seen = Vec::new();
    let nodes: Vec<&str> = report
        .kernel
        .device_nodes
        .iter()
        .map(String::as_str)
        .filter(|n| n.starts_with("/dev/nvidia"))
        .collect();
    if nodes.iter().any(|n| {
        n.strip_prefix("/dev/nvidia")
            .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
    }) {
        seen.push(format!("GPU device nodes: {}", nodes.join(", ")));
    }
    if let Some(ml) = report
        .driver_libraries
        .iter()
        .filter(|l| l.name == "libnvidia-ml" && l.kind == DriverLibraryKind::Driver)
        .min_by_key(|l| l.rank)
    {
        seen.push(format!(
            "libnvidia-ml (NVML, the `utility` part): {}{}",
            ml.path,
            ml.version
                .as_deref()
                .map_or(String::new(), |v| format!(" ({v})"))
        ));
    }
    if report.driver.nvidia_smi.status == ProbeStatus::Ok {
        seen.push(format!(
            "nvidia-smi works{}",
            report
                .driver
                .version
                .as_deref()
                .map_or(String::new(), |v| format!(": driver {v}"))
        ));
    }
    if seen.is_empty() {
        return None;
    }
    seen.push(
        "libcuda.so.1 (the CUDA driver, the `compute` part): not on the loader path".to_string(),
    );
    for lib in report
        .driver_libraries
        .iter()
        .filter(|l| l.name == "libcuda" && l.kind != DriverLibraryKind::Driver)
    {
        if lib.kind == DriverLibraryKind::OffPath {
            seen.push(format!(
                "libcuda: {}{} is there, in a folder the loader does not search",
                lib.path,
                lib.version
                    .as_deref()
                    .map_or(String::new(), |v| format!(" (driver {v})"))
            ));
        } else {
            seen.push(format!(
                "libcuda #{}: {} is a {}, not the driver",
                lib.rank, lib.path, lib.kind
            ));
        }
    }
    Some(seen)
}

/// Whether something here needs the CUDA driver: a CUDA build of a framework or a toolkit.
fn needs_cuda(report: &Report) -> bool {
    !report.toolkits.is_empty()
        || report.python_envs.iter().any(|e| {
            e.frameworks
                .iter()
                .any(|f| f.variant.as_deref() == Some("cuda") || f.cuda.is_some())
        })
}

/// The driver's libcuda mounted into the container in a folder the loader does not search
/// (GKE's `/usr/local/nvidia/lib64` under an image not built on NVIDIA's).
fn off_path_libcuda(report: &Report) -> Option<&crate::report::DriverLibrary> {
    report
        .driver_libraries
        .iter()
        .filter(|l| l.name == "libcuda" && l.kind == DriverLibraryKind::OffPath)
        .min_by_key(|l| l.rank)
}

/// The other side of the same edge: the driver's files were mounted (so the capability was
/// given, or the platform mounts them itself, as GKE does without the NVIDIA runtime), but
/// where the image's loader does not look. The fix is the image's loader path, not a
/// capability.
fn container_off_path(
    report: &Report,
    runtime: &str,
    seen: Vec<String>,
    lib: &crate::report::DriverLibrary,
) -> Finding {
    let folder = std::path::Path::new(&lib.path)
        .parent()
        .map_or_else(|| lib.path.clone(), |p| p.display().to_string());
    let severity = if needs_cuda(report) {
        Severity::Error
    } else {
        Severity::Warning
    };
    let mut f = FindingBuilder::new(
        &ids::CONTAINER_DRIVER_CAPABILITIES,
        severity,
        format!(
            "This {runtime} container has the driver's libcuda in {folder}, where the loader does not look"
        ),
    )
    .detail(
        "The GPU was passed in and the driver's libraries were mounted, but in a folder that is \
         not on the loader path: no `LD_LIBRARY_PATH` names it and no ld.so.conf entry does. \
         CUDA programs then find no driver (PyTorch: \"Found no NVIDIA driver on your \
         system\"). GKE mounts the node's driver at `/usr/local/nvidia` and leaves \
         the path to the image; NVIDIA's older CUDA images named it in `LD_LIBRARY_PATH`, recent \
         ones (12.8.1) and images on other bases (`python:3.12`, `ubuntu`) do not.",
    )
    .evidence(format!("container: {runtime}"));
    for line in seen {
        f = f.evidence(line);
    }
    let current = env(report, "LD_LIBRARY_PATH").filter(|v| !v.trim().is_empty());
    f = f.evidence(match current {
        Some(v) => format!("LD_LIBRARY_PATH={v} (without {folder})"),
        None => "LD_LIBRARY_PATH: unset".to_string(),
    });
    let value = match current {
        Some(v) => format!("{folder}:{v}"),
        None => folder.clone(),
    };
    let place = if runtime == "kubernetes" {
        "in the pod spec's container `env`"
    } else {
        "with `docker run -e ...` (Compose: `environment:`)"
    };
    let fix = format!(
        "Put the driver's folder on the loader path: set `LD_LIBRARY_PATH={value}` {place}, or \
         in the image's Dockerfile `ENV LD_LIBRARY_PATH={folder}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}`, \
         then restart the container; to try it in place: `export LD_LIBRARY_PATH={value}`."
    );
    f.subject(Subject::Container(Some(runtime.to_string())))
        .fix(fix)
        .build()
}

fn container_capabilities(report: &Report, runtime: &str, seen: Vec<String>) -> Finding {
    if let Some(lib) = off_path_libcuda(report) {
        return container_off_path(report, runtime, seen, lib);
    }
    let caps = env(report, "NVIDIA_DRIVER_CAPABILITIES");
    let asks_compute = caps.is_some_and(|v| {
        v.split(',')
            .map(|c| c.trim().to_ascii_lowercase())
            .any(|c| c == "compute" || c == "all")
    });
    let severity = match (needs_cuda(report), caps) {
        (true, _) => Severity::Error,
        // Chosen on purpose (a monitoring container wants `utility` alone).
        (false, Some(v)) if !v.trim().is_empty() && !asks_compute => Severity::Info,
        (false, _) => Severity::Warning,
    };
    let mut f = FindingBuilder::new(
        &ids::CONTAINER_DRIVER_CAPABILITIES,
        severity,
        format!(
            "This {runtime} container has the GPU and nvidia-smi but not the CUDA driver library"
        ),
    )
    .detail(
        "The NVIDIA runtime mounts the driver's files by capability: `utility` gives nvidia-smi \
         and NVML, `compute` gives libcuda.so.1 and the other CUDA driver libraries. This \
         container got the first and not the second, so nvidia-smi lists the GPU while every \
         CUDA program (PyTorch: \"Found no NVIDIA driver on your system\") fails. With \
         NVIDIA_DRIVER_CAPABILITIES unset the runtime gives `utility` only; images built on \
         nvidia/cuda set `compute,utility`, others do not.",
    )
    .evidence(format!("container: {runtime}"));
    for line in seen {
        f = f.evidence(line);
    }
    f = f.evidence(match caps {
        Some(v) => format!("NVIDIA_DRIVER_CAPABILITIES={v}"),
        None => "NVIDIA_DRIVER_CAPABILITIES: unset (the NVIDIA runtime then gives `utility` only)"
            .to_string(),
    });
    let fix = if asks_compute {
        "The container asks for `compute`, yet no libcuda was mounted: on the host, \
         `nvidia-container-cli list | grep libcuda` must list the driver's libcuda.so (if not, \
         the host driver's CUDA library package is missing), and inside, `ldconfig -p | grep \
         libcuda` must find it (run `ldconfig` if the image's cache is stale)."
            .to_string()
    } else if runtime == "kubernetes" {
        "Give the pod the compute capability: set `NVIDIA_DRIVER_CAPABILITIES=compute,utility` \
         in the container's `env` (or `ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility` in the \
         image's Dockerfile) and restart the pod."
            .to_string()
    } else {
        "Give the container the compute capability: `docker run --gpus all -e \
         NVIDIA_DRIVER_CAPABILITIES=compute,utility ...` (Compose: `environment: \
         [NVIDIA_DRIVER_CAPABILITIES=compute,utility]`), or bake it into the image with \
         `ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility` in its Dockerfile (`all` adds \
         graphics and video too)."
            .to_string()
    };
    f.subject(Subject::Container(Some(runtime.to_string())))
        .fix(fix)
        .build()
}

fn host_compute_missing(report: &Report, seen: Vec<String>) -> Finding {
    let version = report
        .driver
        .version
        .as_deref()
        .or(report.kernel.nvidia_version.as_deref());
    let branch = version.and_then(|v| v.split('.').next());
    let mut f = FindingBuilder::new(
        &ids::DRIVER_COMPUTE_LIBRARIES_MISSING,
        if needs_cuda(report) {
            Severity::Error
        } else {
            Severity::Warning
        },
        "The driver is installed without its CUDA library (libcuda.so.1)",
    )
    .detail(
        "The kernel module, the device nodes and NVML (nvidia-smi) are there, but the driver's \
         CUDA library is not on the loader path, so every CUDA program fails to find a driver. \
         Distributions split the driver into packages; the one with libcuda was not installed \
         (or was removed).",
    );
    for line in seen {
        f = f.evidence(line);
    }
    let fix = match (report.host.os_id.as_deref(), branch) {
        (Some("ubuntu"), Some(b)) => format!(
            "Install the driver's CUDA libraries, of the same branch as the driver: `sudo apt \
             install libnvidia-compute-{b}` (with a `-server` driver: \
             `libnvidia-compute-{b}-server`), then `ldconfig -p | grep libcuda` lists it."
        ),
        _ => "Install the package of your driver that ships libcuda.so.1 (Ubuntu: \
              `libnvidia-compute-<branch>`), of exactly the driver's version, then check with \
              `ldconfig -p | grep libcuda`."
            .to_string(),
    };
    f.subject(Subject::Driver(None)).fix(fix).build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::test_support::{has_evidence, ids, one};
    use crate::report::{DriverLibrary, EnvVar, ProbeOutcome};

    fn nvml() -> DriverLibrary {
        DriverLibrary {
            name: "libnvidia-ml".into(),
            path: "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1".into(),
            version: Some("550.54.15".into()),
            kind: "driver".into(),
            origin: "ld.so.conf".into(),
            ..DriverLibrary::default()
        }
    }

    fn utility_only() -> Report {
        let mut r = Report::default();
        r.host.container = Some("docker".into());
        r.kernel.device_nodes = vec!["/dev/nvidia0".into(), "/dev/nvidiactl".into()];
        r.driver_libraries = vec![nvml()];
        r.driver.nvidia_smi = ProbeOutcome::new(ProbeStatus::Ok, None);
        r
    }

    fn run(r: &Report) -> Vec<Finding> {
        findings(r, crate::manifest::embedded())
    }

    #[test]
    fn a_container_without_compute_gets_the_capability_fix() {
        let r = utility_only();
        let found = run(&r);
        let f = one(&found, "container-driver-capabilities");
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            has_evidence(f, "NVIDIA_DRIVER_CAPABILITIES: unset"),
            "{f:#?}"
        );
        assert!(has_evidence(f, "libcuda.so.1 (the CUDA driver"), "{f:#?}");
        assert!(
            f.fix
                .as_deref()
                .is_some_and(|x| x.contains("-e NVIDIA_DRIVER_CAPABILITIES=compute,utility"))
        );
        let mut chosen = utility_only();
        chosen.environment = vec![EnvVar {
            name: "NVIDIA_DRIVER_CAPABILITIES".into(),
            value: "utility".into(),
        }];
        assert_eq!(run(&chosen)[0].severity, Severity::Info);
    }

    #[test]
    fn a_host_without_libcuda_names_the_ubuntu_package() {
        let mut r = utility_only();
        r.host.container = None;
        r.host.os_id = Some("ubuntu".into());
        r.driver.version = Some("535.183.01".into());
        let found = run(&r);
        let f = one(&found, "driver-compute-libraries-missing");
        assert!(
            f.fix
                .as_deref()
                .is_some_and(|x| x.contains("sudo apt install libnvidia-compute-535"))
        );
    }

    #[test]
    fn libcuda_present_or_no_driver_at_all_says_nothing() {
        let mut r = utility_only();
        r.driver_libraries.push(DriverLibrary {
            name: "libcuda".into(),
            kind: "driver".into(),
            ..nvml()
        });
        assert!(ids(&run(&r)).is_empty());
        let mut bare = Report::default();
        bare.host.container = Some("docker".into());
        assert!(run(&bare).is_empty());
    }
}

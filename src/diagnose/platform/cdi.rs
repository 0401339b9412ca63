//! `cdi-spec-stale`: a Container Device Interface spec that names host files which are gone.

// The parent's imports and shared helpers: one family of platform findings.
use super::*;

// ---------------------------------------------------------------------------------------------
// cdi-spec-stale

/// A CDI spec for NVIDIA devices (`kind: nvidia.com/gpu`, written by `nvidia-ctk cdi generate`)
/// names the driver's files by their full release, so a driver update or rollback leaves it
/// naming files that are gone, and every engine that reads it (Podman, containerd, CRI-O,
/// Docker's CDI mode) refuses to start a GPU container: "crun: cannot stat
/// `/lib64/libEGL_nvidia.so.550.54.14`" (NVIDIA/nvidia-container-toolkit#450, where NVIDIA's
/// maintainer: "if you're using podman and CDI, you currently need to regenerate the CDI
/// specification on driver upgrades"; podman-container-tools/podman#26233). Both directions of
/// the edge read the same: a spec older than the driver (an upgrade) or newer (a rollback, a
/// spec copied from another machine); a spec of the driver's own release with a file missing
/// (a library updated on its own, `libnvidia-egl-wayland.so.1.1.13` after 1.1.16 replaced it,
/// NVIDIA/nvidia-container-toolkit#692) too. Judged on the host only: inside a container the
/// spec's host paths are not the container's.
pub(super) fn cdi_spec_stale(report: &Report) -> Vec<Finding> {
    let installed = report
        .kernel
        .nvidia_version
        .as_deref()
        .or(report.driver.version.as_deref())
        .filter(|_| !report.host.wsl)
        .or(report.driver.version.as_deref());
    host_nvidia_specs(report)
        .filter(|s| !s.missing.is_empty())
        .map(|spec| stale(report, spec, installed))
        .collect()
}

/// The host's CDI specs for NVIDIA devices (`kind: nvidia.com/...`, or one that names no kind);
/// none inside a container, where a spec's host paths and the engine that reads it are the
/// host's, not the container's.
pub(super) fn host_nvidia_specs(report: &Report) -> impl Iterator<Item = &crate::report::CdiSpec> {
    report
        .host
        .cdi_specs
        .iter()
        .filter(|_| report.host.container.is_none())
        .filter(|s| {
            s.kind
                .as_deref()
                .is_none_or(|k| k.starts_with("nvidia.com/"))
        })
}

fn stale(report: &Report, spec: &crate::report::CdiSpec, installed: Option<&str>) -> Finding {
    let order = match (spec.driver_version.as_deref(), installed) {
        (Some(made), Some(now)) => Some(crate::version::compare(made, now)),
        _ => None,
    };
    let title = match (order, spec.driver_version.as_deref(), installed) {
        (Some(std::cmp::Ordering::Less), Some(made), Some(now)) => format!(
            "The CDI spec {} was made for driver {made}; the driver is now {now}",
            spec.path
        ),
        (Some(std::cmp::Ordering::Greater), Some(made), Some(now)) => format!(
            "The CDI spec {} was made for driver {made}, newer than the installed {now}",
            spec.path
        ),
        _ => format!(
            "The CDI spec {} names files that are not on this machine",
            spec.path
        ),
    };
    let mut f = FindingBuilder::new(&ids::CDI_SPEC_STALE, Severity::Error, title).detail(
        "Container engines that use CDI (Podman, containerd, CRI-O, Docker with CDI) give a \
         container the GPU by doing what the spec says: bind-mount each host file it names, \
         create its device nodes, run its hooks. `nvidia-ctk cdi generate` writes the driver's \
         files by their full release, so after a driver update (or rollback) the spec names \
         files that no longer exist, and the engine refuses to start any container that asks \
         for the GPU (\"crun: cannot stat ...: No such file or directory\", \"failed to stat \
         CDI host device\"). The spec does not follow the driver by itself: it has to be \
         generated again.",
    );
    f = f.evidence(format!(
        "{}: {} of the {} host paths it names are missing",
        spec.path,
        spec.missing.len(),
        spec.host_paths
    ));
    for p in spec.missing.iter().take(4) {
        f = f.evidence(format!("missing: {p}"));
    }
    if let Some(made) = &spec.driver_version {
        f = f.evidence(format!("the spec's driver files are of release {made}"));
    }
    if let Some(now) = installed {
        f = f.evidence(format!("installed driver: {now}"));
    }
    let regenerate = if spec.path.starts_with("/var/run/cdi") || spec.path.starts_with("/run/cdi") {
        format!(
            "Generate the spec again: `sudo systemctl restart nvidia-cdi-refresh.service` where \
             the NVIDIA Container Toolkit ships that unit (it writes the spec when the driver \
             changes), else `sudo nvidia-ctk cdi generate --output={}`.",
            spec.path
        )
    } else {
        format!(
            "Generate the spec again for the installed driver: `sudo nvidia-ctk cdi generate \
             --output={}` (then `nvidia-ctk cdi list` shows the devices), and start the GPU \
             containers again.",
            spec.path
        )
    };
    let after = if report.host.wsl {
        " Under WSL the spec names the Windows driver's folder in /usr/lib/wsl/drivers, which \
         changes with every Windows driver update: generate it again after each one."
    } else {
        " A spec in /etc/cdi has to be generated again after every driver update; recent \
         NVIDIA Container Toolkit releases ship `nvidia-cdi-refresh.service`, which does it \
         when the driver changes."
    };
    f.subject(Subject::Container(None))
        .fix_on_host(format!("{regenerate}{after}"))
        .build()
}

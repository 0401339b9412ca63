//! Is the GPU reachable from where the program runs? Containers, WSL2, NVSwitch systems, the
//! variables that pick GPUs, and the libcuda the loader would open. Findings:
//! `container-no-gpu-runtime`, `container-lost-gpu-access`, `cdi-spec-stale`,
//! `cdi-spec-device-mismatch`, `cdi-spec-version-unsupported`, `container-shm-small`,
//! `visible-devices-hides-gpus`,
//! `wsl-driver-in-guest`, `wsl-container-driver-file-missing`, `fabric-manager-not-running`, `fabric-not-completed`,
//! `stub-libcuda-on-path`, `forward-compat-unsupported`, `forward-compat-older-than-driver`,
//! `forward-compat-branch-unsupported`,
//! `driver-too-old-for-image`: one file each under `platform/`, the helpers they share here.

use super::ids;
use crate::report::GpuSource;
use std::path::Path;

use super::health::gpu_label;
use super::{FindingBuilder, env_var as env};
use crate::manifest::Manifests;
use crate::parse::visible_devices::{self, Entry};
use crate::report::Subject;
use crate::report::{
    DriverLibrary, DriverLibraryKind, Finding, Framework, Gpu, ProbeStatus, Report, Severity,
};

mod cdi;
mod cdi_devices;
mod cdi_version;
mod container;
mod fabric;
mod forward_compat;
mod image_require;
mod shm;
mod stub_libcuda;
mod visible;
mod wsl;

use cdi::*;
use cdi_devices::*;
use cdi_version::*;
use container::*;
use fabric::*;
use forward_compat::*;
pub(super) use forward_compat::{compat_cuda, driver_below_cuda_major, forward_compat_libcuda};
use image_require::*;
use shm::*;
use stub_libcuda::*;
use visible::*;
use wsl::*;

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(container_no_gpu_runtime(report));
    out.extend(container_lost_gpu_access(report));
    out.extend(cdi_spec_stale(report));
    out.extend(cdi_spec_device_mismatch(report));
    out.extend(cdi_spec_version_unsupported(report, manifests));
    out.extend(container_shm_small(report));
    out.extend(visible_devices(report));
    out.extend(amd_selectors_hide_nvidia(report));
    out.extend(wsl_driver_in_guest(report));
    out.extend(wsl_container_driver_file_missing(report));
    out.extend(fabric_manager(report));
    out.extend(fabric_not_completed(report));
    out.extend(stub_libcuda(report));
    out.extend(forward_compat(report, manifests));
    out.extend(forward_compat_older_than_driver(report));
    out.extend(forward_compat_branch_unsupported(report, manifests));
    out.extend(driver_too_old_for_image(report, manifests));
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
    let kind = match &lib.kind {
        DriverLibraryKind::Stub => "link-time stub",
        DriverLibraryKind::Compat => "forward-compatibility copy",
        DriverLibraryKind::OffPath => "driver library off the loader path",
        DriverLibraryKind::Driver if lib.origin == "wsl" => "WSL's driver library",
        DriverLibraryKind::Driver => "driver library",
        DriverLibraryKind::Other(other) => other,
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
        .filter(|g| g.source != GpuSource::Override)
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

#[cfg(test)]
mod tests;

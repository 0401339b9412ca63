//! `amdgpu-dkms-build-failed`: AMD's out-of-tree amdgpu (`amdgpu-dkms` from repo.radeon.com)
//! failed to build for the running kernel, as DKMS recorded it (`/var/lib/dkms/amdgpu/<version>/
//! build/make.log`, `probe::module_builds::amdgpu`).
//!
//! A release's version starts with the kernel it was rebased on (`6.16.13-2303411.24.04`), and
//! that base "corresponds with the latest supported kernel" (an AMD maintainer on
//! ROCm/legacy-rocm-build#6193, kernel 7.0 against base 6.16.13): a newer kernel breaks the
//! build. An older kernel whose distribution backported newer interfaces breaks it too
//! (ROCm/legacy-rocm-build#5111, Debian 13's 6.12.100 against the same base: "too few arguments
//! to function ‘pci_resize_resource’"). Either way the package stays half-configured and the
//! kernel's own amdgpu, where it loads, is what runs; ROCm runs on it (AMD installs ROCm on
//! Ryzen APUs with `--no-dkms`, and the reporter of #6193 did so).

use std::cmp::Ordering;

use crate::diagnose::{FindingBuilder, ids};
use crate::report::{Finding, ModuleBuild, Report, Severity, Subject};

/// The failed amdgpu-dkms build for the running kernel, unless a DKMS amdgpu runs anyway (an
/// older version built for this kernel is the loaded one). Not in a container: its DKMS tree
/// (if any) is the image's, not a record of the host kernel's modules.
pub(super) fn dkms_build_failed(report: &Report) -> Option<Finding> {
    if report.host.container.is_some() {
        return None;
    }
    let stack = report.rocm.as_ref()?;
    let running = report.host.kernel_release.as_deref()?;
    let build = stack.amdgpu.dkms_builds.iter().find(|b| {
        b.failed_kernel.as_deref() == Some(running) && !b.built_for.iter().any(|k| k == running)
    })?;
    if stack.amdgpu.kind.as_deref() == Some("dkms") {
        return None;
    }
    let loaded = stack.amdgpu.loaded;
    let base = kernel_base(&build.version);
    let kernel = major_minor(running);
    let relation = match (base.as_deref(), kernel.as_deref()) {
        (Some(b), Some(k)) if crate::version::compare(k, b) == Ordering::Greater => format!(
            " Kernel {running} is newer than {b}, the kernel this release was rebased on, which \
             is the newest kernel it supports."
        ),
        (Some(b), Some(_)) => format!(
            " Kernel {running} is not newer than the release's {b} base, but carries backports \
             its compatibility layer does not expect."
        ),
        _ => String::new(),
    };
    let (severity, state) = if loaded {
        (
            Severity::Warning,
            "The kernel's own amdgpu is loaded instead, and ROCm runs on it; the package manager \
             keeps the package half-configured and retries the build on every update.",
        )
    } else {
        (
            Severity::Error,
            "No amdgpu module is loaded, so the GPU has no driver.",
        )
    };
    let mut f = FindingBuilder::new(
        &ids::AMDGPU_DKMS_BUILD_FAILED,
        severity,
        format!(
            "amdgpu-dkms {} failed to build for kernel {running}",
            build.version
        ),
    )
    .detail(format!(
        "AMD's amdgpu-dkms replaces the kernel's amdgpu with a module built by DKMS for each \
         kernel, and its build for the running kernel failed.{relation} {state}"
    ))
    .evidence(dkms_evidence(build, running));
    for e in &build.errors {
        f = f.evidence(format!("make.log: {e}"));
    }
    f = f.evidence(if loaded {
        "amdgpu loaded: the kernel's own module (no /sys/module/amdgpu/version)".to_string()
    } else {
        "amdgpu kernel module: not in /proc/modules, no /sys/module/amdgpu".to_string()
    });
    if !loaded {
        f = f
            .explains(&ids::AMDGPU_NOT_LOADED)
            .explains(&ids::KFD_MISSING);
    }
    Some(
        f.subject(Subject::Driver(Some("amdgpu".into())))
            .fix_on_host(fix(report, loaded, base.as_deref()))
            .build(),
    )
}

fn dkms_evidence(build: &ModuleBuild, running: &str) -> String {
    let built = if build.built_for.is_empty() {
        "built for no kernel".to_string()
    } else {
        format!("built for {}", build.built_for.join(", "))
    };
    format!(
        "DKMS: amdgpu {} failed to build for kernel {running} ({}); {built}",
        build.version,
        build.failed_log.as_deref().unwrap_or("make.log")
    )
}

/// Removing the package, in the distribution's words, then ROCm without DKMS (AMD's
/// `amdgpu-install --no-dkms`), or a kernel and release that agree.
fn fix(report: &Report, loaded: bool, base: Option<&str>) -> String {
    let remove = match report.host.os_id.as_deref() {
        Some("ubuntu" | "debian" | "linuxmint" | "pop" | "neon") => {
            "`sudo apt autoremove amdgpu-dkms`"
        }
        Some("rhel" | "rocky" | "almalinux" | "ol" | "centos" | "fedora") => {
            "`sudo dnf remove amdgpu-dkms`"
        }
        Some(id) if id.starts_with("sles") || id.starts_with("opensuse") => {
            "`sudo zypper remove amdgpu-dkms`"
        }
        _ => "your package manager (the package is `amdgpu-dkms`)",
    };
    let base = base.map_or(String::new(), |b| format!("; this one's base is {b}"));
    let keep = format!(
        "To keep amdgpu-dkms instead, install the newest amdgpu release for your distribution \
         (AMD rebases each release on a newer kernel{base}) or boot a kernel the installed \
         release builds for."
    );
    if loaded {
        format!(
            "ROCm runs on the kernel's own amdgpu: remove the package with {remove} and install \
             ROCm without DKMS, `sudo amdgpu-install -y --usecase=rocm --no-dkms` (AMD's way on \
             Ryzen APUs). {keep}"
        )
    } else {
        format!(
            "Boot the previous kernel from the boot menu to get the GPU back, then either remove \
             the package with {remove}, reboot into the kernel's own amdgpu and install ROCm with \
             `sudo amdgpu-install -y --usecase=rocm --no-dkms`, or: {keep}"
        )
    }
}

/// The kernel base of an amdgpu-dkms version, major and minor: "6.16.13-2303411.24.04" -> "6.16".
fn kernel_base(version: &str) -> Option<String> {
    major_minor(version.split('-').next()?)
}

/// "7.0.0-14-generic" -> "7.0"; `None` without two leading numbers.
fn major_minor(release: &str) -> Option<String> {
    let mut parts = release.split(['.', '-', '+']);
    let major = parts.next()?.parse::<u32>().ok()?;
    let minor = parts.next()?.parse::<u32>().ok()?;
    Some(format!("{major}.{minor}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::rocm::RocmStack;

    fn machine(kernel: &str, loaded: bool, build: ModuleBuild) -> Report {
        let mut r = Report::default();
        r.host.kernel_release = Some(kernel.into());
        r.host.os_id = Some("ubuntu".into());
        let mut stack = RocmStack::default();
        stack.amdgpu.loaded = loaded;
        stack.amdgpu.kind = loaded.then(|| "inbox".to_string());
        stack.amdgpu.dkms_builds = vec![build];
        r.rocm = Some(stack);
        r
    }

    fn failed(version: &str, kernel: &str) -> ModuleBuild {
        ModuleBuild {
            tool: "dkms".into(),
            module: "amdgpu".into(),
            version: version.into(),
            failed_log: Some(format!("/var/lib/dkms/amdgpu/{version}/build/make.log")),
            failed_kernel: Some(kernel.into()),
            errors: vec!["amd/amdgpu/amdgpu_device.c:1752:13: error: too few arguments".into()],
            ..ModuleBuild::default()
        }
    }

    #[test]
    fn a_kernel_newer_than_the_base_is_named_and_the_inbox_module_makes_it_a_warning() {
        let r = machine(
            "7.0.0-14-generic",
            true,
            failed("6.16.13-2303411.24.04", "7.0.0-14-generic"),
        );
        let f = dkms_build_failed(&r).expect("finding");
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.detail.contains("newer than 6.16"), "{}", f.detail);
        let fix = f.fix.unwrap_or_default();
        assert!(fix.contains("--no-dkms") && fix.contains("apt autoremove amdgpu-dkms"));
        assert!(f.explains.is_empty());
    }

    #[test]
    fn an_older_kernel_with_backports_and_no_amdgpu_is_an_error_that_explains_the_rest() {
        let mut r = machine(
            "6.12.100+deb13-amd64",
            false,
            failed("6.16.13-2341068.24.04", "6.12.100+deb13-amd64"),
        );
        r.host.os_id = Some("debian".into());
        let f = dkms_build_failed(&r).expect("finding");
        assert_eq!(f.severity, Severity::Error);
        assert!(f.detail.contains("not newer than the release's 6.16"));
        assert!(f.explains.iter().any(|e| e == "amdgpu-not-loaded"));
    }

    #[test]
    fn a_build_for_another_kernel_or_a_running_dkms_module_is_not_judged() {
        let other = machine(
            "6.17.0-8-generic",
            true,
            failed("6.16.6-2255209.24.04", "6.17.0-6-generic"),
        );
        assert!(dkms_build_failed(&other).is_none());
        let mut built = failed("6.16.6-2255209.24.04", "6.17.0-8-generic");
        built.built_for = vec!["6.17.0-8-generic".into()];
        assert!(dkms_build_failed(&machine("6.17.0-8-generic", true, built)).is_none());
        let mut dkms = machine(
            "7.0.0-14-generic",
            true,
            failed("6.16.13-2303411.24.04", "7.0.0-14-generic"),
        );
        if let Some(s) = dkms.rocm.as_mut() {
            s.amdgpu.kind = Some("dkms".into());
        }
        assert!(dkms_build_failed(&dkms).is_none());
        let mut contained = machine(
            "7.0.0-14-generic",
            true,
            failed("6.16.13-2303411.24.04", "7.0.0-14-generic"),
        );
        contained.host.container = Some("docker".into());
        assert!(dkms_build_failed(&contained).is_none());
    }

    #[test]
    fn kernel_bases_and_releases_read_their_major_and_minor() {
        assert_eq!(
            kernel_base("6.16.13-2303411.24.04").as_deref(),
            Some("6.16")
        );
        assert_eq!(major_minor("7.0.0-14-generic").as_deref(), Some("7.0"));
        assert_eq!(major_minor("6.12.100+deb13-amd64").as_deref(), Some("6.12"));
        assert_eq!(major_minor("garbage"), None);
    }
}

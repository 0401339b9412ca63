//! Why the running kernel has no nvidia module, as the local build tools recorded it (DKMS,
//! akmods: `report.kernel.module_builds`): the kernel's headers are missing, so no build could
//! start; or the build for this kernel failed, because the driver release's sources do not
//! compile against a kernel newer than they know (every report of the class quotes compiler
//! errors such as "implicit declaration of function 'phys_to_dma'") and, on a branch past its
//! end of life, no fixed release will come. Pure: evidence lines and a fix for `no-driver`.

use crate::manifest::Manifests;
use crate::report::{ModuleBuild, Report};

/// Evidence lines: each driver version's builds, a failed build's errors, missing headers.
pub(super) fn evidence(report: &Report) -> Vec<String> {
    let running = report.host.kernel_release.as_deref().unwrap_or("");
    let mut out = Vec::new();
    for b in &report.kernel.module_builds {
        let what = format!("{}: {} {}", b.tool, b.module, b.version);
        if b.built_for.is_empty() {
            out.push(format!("{what}: built for no kernel"));
        } else {
            out.push(format!(
                "{what}: built for {} (not for the running {running})",
                b.built_for.join(", ")
            ));
        }
        if let Some(log) = &b.failed_log {
            let kernel = b
                .failed_kernel
                .as_deref()
                .map_or_else(String::new, |k| format!(" for kernel {k}"));
            out.push(format!("{what}: the build{kernel} failed ({log})"));
            out.extend(b.errors.iter().map(|e| format!("{what}: build error: {e}")));
        }
    }
    if !report.kernel.module_kernels.is_empty() {
        out.push(format!(
            "nvidia module present for other kernels: {}",
            report.kernel.module_kernels.join(", ")
        ));
    }
    if headers_missing(report).is_some() {
        out.push(if report.kernel.kernel_headers == Some(false) {
            format!(
                "kernel headers for {running}: not installed (/lib/modules/{running}/build is \
                 missing)"
            )
        } else {
            format!("kernel headers for {running}: incomplete (the build's errors name missing header files)")
        });
    }
    out
}

/// The fix the build records point to, when they explain the missing module: headers to
/// install, or a build that failed for the running kernel. `None` leaves the fix to the
/// module files and the driver's libraries.
pub(super) fn fix(report: &Report, manifests: &Manifests) -> Option<String> {
    let release = report.host.kernel_release.as_deref()?;
    if report.kernel.module_builds.is_empty()
        || !report.kernel.module_files.is_empty()
        || report.host.container.is_some()
    {
        return None;
    }
    let failed = failed_here(report);
    let headers = headers_missing(report);
    if let Some(b) = headers {
        return Some(format!(
            "The running kernel {release} has no complete headers installed, so {} could not \
             build the nvidia module ({} {}) for it. Install them: {}; then {} and reboot.",
            b.tool,
            b.module,
            b.version,
            super::distro::kernel_headers(report),
            rebuild(&b.tool)
        ));
    }
    let failed = failed?;
    let rebuild = rebuild(&failed.tool);
    let boot = newest_built_kernel(report).map_or_else(String::new, |k| {
        format!(" Meanwhile, boot kernel {k} from the boot menu: the module is built for it.")
    });
    let error = failed
        .errors
        .first()
        .map_or_else(String::new, |e| format!(" (\"{e}\")"));
    if let Some(text) = kernel_tree_fix(report, failed, release, rebuild, &boot) {
        return Some(text);
    }
    let branch = branch_of(&failed.version);
    let end_of_life = branch.is_some_and(|b| branch_ended(manifests, b));
    if let Some(b) = branch.filter(|_| end_of_life)
        && let Some(text) = no_supported_branch(report, manifests, failed, b, &error)
    {
        return Some(text);
    }
    Some(match branch {
        // Fedora's and Arch's driver packages follow NVIDIA's current branch: updating them
        // is the move to a supported branch.
        Some(b) if end_of_life && super::distro::packages_follow_current_branch(report) => {
            format!(
                "The {} build of driver {} fails on kernel {release}{error}: the R{b} branch \
                 has reached its end of life and gets no fixes for newer kernels. Update the \
                 driver packages, which follow NVIDIA's current branch ({}), then {rebuild}.\
                 {boot}",
                failed.tool,
                failed.version,
                super::distro::update_driver(report)
            )
        }
        Some(b) if end_of_life => format!(
            "The {} build of driver {} fails on kernel {release}{error}: the R{b} branch has \
             reached its end of life and gets no fixes for newer kernels. Move to a supported \
             branch. {}.{boot}",
            failed.tool,
            failed.version,
            super::distro::supported_branch(report, &manifests.install)
        ),
        _ => format!(
            "The {} build of driver {} fails on kernel {release}{error}: this kernel is newer \
             than the release's sources support. Update the driver to a release made for this \
             kernel ({}), then {rebuild}.{boot}",
            failed.tool,
            failed.version,
            super::distro::update_driver(report)
        ),
    })
}

/// The fix when no supported branch drives the machine's GPUs and the failed build's branch
/// has ended: a GPU whose last branch (`cuda.toml`'s `last_driver_branch`: Kepler's R470) is
/// past its end of life, or, where no GPU's last branch is known, a build of one of NVIDIA's
/// legacy branches. No release will build for the new kernel; what is left is a kernel the
/// branch still builds on. `None` when a supported branch drives the GPUs (the caller's fix).
fn no_supported_branch(
    report: &Report,
    manifests: &Manifests,
    failed: &ModuleBuild,
    b: u64,
    error: &str,
) -> Option<String> {
    let table = &manifests.cuda;
    let release = report.host.kernel_release.as_deref()?;
    let ended = |branch: u64| {
        table.branch_eol(branch).map_or_else(
            || "has reached its end of life".to_string(),
            |eol| format!("reached its end of life in {eol}"),
        )
    };
    let gpus: Vec<(String, u64)> = report
        .nvidia_gpus()
        .filter_map(|g| {
            let cc = g.compute_capability.as_deref()?;
            let row = table.compute_capability(cc)?;
            let last = row.last_driver_branch?;
            let arch = row
                .architecture
                .as_deref()
                .map(|a| format!("{a}, "))
                .unwrap_or_default();
            let name = g.name.as_deref().unwrap_or("GPU");
            Some((format!("{name} ({arch}compute capability {cc})"), last))
        })
        .collect();
    let head = format!(
        "The {} build of driver {} fails on kernel {release}{error}: the R{b} branch {} and \
         gets no fixes for newer kernels",
        failed.tool,
        failed.version,
        ended(b)
    );
    let keep = |last: u64| {
        let kernel = newest_built_kernel(report).map_or_else(
            || "the older kernel it was last built for".to_string(),
            |k| format!("kernel {k} from the boot menu (the module is built for it)"),
        );
        format!(
            "Keep a kernel the R{last} sources build on: boot {kernel}, and hold the kernel \
             packages so updates do not replace it ({}).",
            super::distro::hold_kernel(report)
        )
    };
    if gpus.is_empty() {
        // No GPU's last branch is known: a legacy branch's build names its own GPUs' fate.
        if !table.is_legacy_branch(b) {
            return None;
        }
        return Some(format!(
            "{head}. R{b} is one of NVIDIA's legacy branches, kept for GPUs its newer branches \
             no longer drive; if this GPU is one of them, no supported branch drives it and no \
             driver release will build for kernel {release}. {} If a supported branch drives \
             the GPU, move to it instead: {}.",
            keep(b),
            super::distro::supported_branch(report, &manifests.install)
        ));
    }
    let last = gpus.iter().map(|(_, l)| *l).min()?;
    if !table.branch_ended(last) {
        return None;
    }
    let names: Vec<&str> = gpus
        .iter()
        .filter(|(_, l)| *l == last)
        .map(|(n, _)| n.as_str())
        .collect();
    let names = names.join(", ");
    if last > b {
        // A newer legacy branch still drives the GPU and may build where this one does not.
        return Some(format!(
            "{head}. R{last} is the last branch that drives {names}, also past its end of life \
             ({}), and newer than R{b}: it may build for kernel {release}. {}. If it does not \
             either, no supported branch drives this GPU: {}",
            ended(last),
            super::distro::legacy_branch(report, &manifests.install, last),
            keep(last)
        ));
    }
    Some(format!(
        "{head}. No supported branch drives {names}: R{last} is the last that does, so no \
         driver release will build for kernel {release}. {} Only a newer GPU, one a supported \
         branch drives, runs on newer kernels.",
        keep(last)
    ))
}

/// The fix when the build stopped in the kernel's own build files, not in the driver's
/// sources: the probe keeps make's failing rule in the kernel tree (`scripts/Makefile.<stage>`)
/// only where the log has no compiler error (`probe::module_builds::kernel_tree_failure`). Its
/// tool's message tells a program the kernel's build runs that is missing from one that ran and
/// failed on the kernel package's files, which an updated kernel package fixes
/// (CachyOS/linux-cachyos#809: "Pushed already a fix. Update again."; a broken quote in
/// kernel-surface's Makefile, linux-surface/linux-surface#803). A newer driver does not help.
fn kernel_tree_fix(
    report: &Report,
    failed: &ModuleBuild,
    release: &str,
    rebuild: &str,
    boot: &str,
) -> Option<String> {
    let rule = failed
        .errors
        .iter()
        .find(|e| e.starts_with("make") && e.contains("/scripts/Makefile."))?;
    let stage = rule
        .split_once("/scripts/")
        .and_then(|(_, rest)| rest.split(':').next())
        .unwrap_or("Makefile");
    let tool = failed.errors.iter().find(|e| !e.starts_with("make"));
    let said = tool.map_or_else(String::new, |t| format!(" (\"{t}\")"));
    let colon = tool.map_or_else(String::new, |t| format!(": \"{t}\""));
    let missing = tool.is_some_and(|t| t.contains("not found") || t.contains("No such file"));
    // A program of the kernel's own tree (`tools/bpf/resolve_btfids`, `tools/objtool`) is the
    // headers package's to ship: OpenMandrivaAssociation/distribution#3126 ("resolve_btfids is
    // required for building some kernel modules ... This is not included in
    // kernel-desktop-devel"), void-linux/void-packages#9314 (objtool in the headers package).
    let of_the_tree =
        tool.is_some_and(|t| t.contains("tools/bpf/") || t.contains("tools/objtool/"));
    Some(if missing && of_the_tree {
        format!(
            "The {} build of driver {} fails on kernel {release} in the kernel's own build \
             step `scripts/{stage}`{said}: the kernel's headers package lacks a program of the \
             kernel's own build tree, which no driver ships. Update or reinstall the kernel and \
             its headers ({}), and if the program is still missing report it against the \
             headers package; then {rebuild}.{boot}",
            failed.tool,
            failed.version,
            super::distro::update_kernel(report)
        )
    } else if missing {
        format!(
            "The {} build of driver {} fails on kernel {release} in the kernel's own build \
             step `scripts/{stage}`{said}: a program the kernel's build runs is not installed. \
             Install the one the message names (the kernel's build uses the compiler and tools \
             the kernel itself was built with), then {rebuild}.{boot}",
            failed.tool, failed.version
        )
    } else {
        format!(
            "The {} build of driver {} fails on kernel {release} in the kernel's own build \
             files (`scripts/{stage}`{colon}), not in the driver's sources: the kernel \
             package's build tree is at fault, and a newer driver would fail the same way. \
             Update the kernel and its headers ({}), then {rebuild}.{boot}",
            failed.tool,
            failed.version,
            super::distro::update_kernel(report)
        )
    })
}

/// The build that failed for the running kernel, if one is recorded.
fn failed_here(report: &Report) -> Option<&ModuleBuild> {
    let release = report.host.kernel_release.as_deref()?;
    report
        .kernel
        .module_builds
        .iter()
        .find(|b| b.failed_kernel.as_deref() == Some(release))
}

/// The build the running kernel's missing headers stopped. DKMS checks for the headers before
/// it runs make, so a make.log for this kernel means they were there, unless its errors show
/// them incomplete; with no build recorded for it at all, a module folder without `build/` is
/// what stopped DKMS.
fn headers_missing(report: &Report) -> Option<&ModuleBuild> {
    let release = report.host.kernel_release.as_deref()?;
    match failed_here(report) {
        Some(b) => headers_incomplete(b, release).then_some(b),
        None if report.kernel.kernel_headers == Some(false) => report.kernel.module_builds.first(),
        None => None,
    }
}

/// Whether a failed build's errors are the kernel's headers missing, not the driver's sources
/// failing: `fatal error: /lib/modules/<kernel>/build/include/linux/autoconf.h: No such file or
/// directory` (zen-kernel/zen-kernel#305).
fn headers_incomplete(build: &ModuleBuild, release: &str) -> bool {
    let build_dir = format!("/lib/modules/{release}/build");
    build.errors.iter().any(|e| {
        e.contains("No such file or directory")
            && (e.contains(&build_dir)
                || e.contains("/usr/src/linux-headers-")
                || e.contains("/usr/src/kernels/"))
    })
}

/// The command that builds the module again for the running kernel.
fn rebuild(tool: &str) -> &'static str {
    if tool == "akmods" {
        "`sudo akmods --force --kernels $(uname -r)`"
    } else {
        "`sudo dkms autoinstall -k $(uname -r)`"
    }
}

/// The newest other kernel (by version order) that has a module: built by DKMS or akmods, or
/// found as a file in its module folder.
pub(super) fn newest_built_kernel(report: &Report) -> Option<&str> {
    report
        .kernel
        .module_builds
        .iter()
        .flat_map(|b| b.built_for.iter())
        .chain(report.kernel.module_kernels.iter())
        .filter(|k| report.host.kernel_release.as_deref() != Some(k.as_str()))
        .max_by(|a, b| crate::version::compare(a, b))
        .map(String::as_str)
}

/// Whether NVIDIA no longer updates branch `b` (`CudaTable::branch_ended`).
fn branch_ended(manifests: &Manifests, b: u64) -> bool {
    manifests.cuda.branch_ended(b)
}

/// The driver branch of a version string ("575.57.08" -> 575, akmods' "570.133.07-1" -> 570).
fn branch_of(version: &str) -> Option<u64> {
    version.split(['.', '-']).next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branches_past_their_end_of_life_are_told_apart() {
        let m = crate::manifest::embedded();
        // Listed (575), older than every listed one (390), past its own row's date (570: 2026-02).
        // Kepler's R470 (ended 2024-07), a New Feature Branch older than every supported one.
        for b in [575, 390, 570, 470, 545] {
            assert!(branch_ended(m, b), "R{b}");
        }
        assert!(m.cuda.is_legacy_branch(390) && m.cuda.is_legacy_branch(470));
        assert!(!m.cuda.is_legacy_branch(580));
        assert_eq!(m.cuda.branch_eol(470), Some("2024-07"));
        for b in [580, 595] {
            assert!(!branch_ended(m, b), "R{b}");
        }
    }

    fn cachyos(errors: &[&str]) -> Report {
        let mut r = Report::default();
        r.host.os_id = Some("cachyos".into());
        r.host.kernel_release = Some("7.0.0-1-cachyos".into());
        r.kernel.module_builds = vec![ModuleBuild {
            tool: "dkms".into(),
            module: "nvidia".into(),
            version: "595.58.03".into(),
            built_for: vec!["6.19.12-1-cachyos".into()],
            failed_log: Some("/var/lib/dkms/nvidia/595.58.03/build/make.log".into()),
            failed_kernel: Some("7.0.0-1-cachyos".into()),
            errors: errors.iter().map(ToString::to_string).collect(),
        }];
        r
    }

    /// A build that stopped in the kernel's own build files is the kernel package's fault
    /// (CachyOS/linux-cachyos#809): update kernel and headers, not the driver; a program the
    /// kernel's build runs that is missing is installed; a compiler error in the driver's
    /// sources keeps the newer-kernel fix.
    #[test]
    fn a_failure_in_the_kernel_s_build_files_points_at_the_kernel_package() {
        let m = crate::manifest::embedded();
        let rule = "make[3]: *** [/usr/lib/modules/7.0.0-1-cachyos/build/scripts/Makefile.modfinal:60: nvidia.ko] Error 2";
        let fix = fix(
            &cachyos(&["awk: cmd. line:1: invalid char '\\' in expression", rule]),
            m,
        )
        .expect("a fix");
        assert!(fix.contains("`scripts/Makefile.modfinal`"), "{fix}");
        assert!(
            fix.contains("`linux-cachyos` and `linux-cachyos-headers`"),
            "{fix}"
        );
        assert!(!fix.contains("newer than the release"), "{fix}");
        let missing = fix_for(&["/bin/sh: 1: gcc-14: not found", rule], m);
        assert!(missing.contains("is not installed"), "{missing}");
        // The headers package's own program missing (its message's form assumed: sh's "not
        // found" for the tree's relative path) is the package's, not a program to install.
        let tree = fix_for(
            &[
                "/bin/sh: 1: ./tools/bpf/resolve_btfids/resolve_btfids: not found",
                rule,
            ],
            m,
        );
        assert!(tree.contains("headers package lacks"), "{tree}");
        assert!(tree.contains("`linux-cachyos-headers`"), "{tree}");
        assert!(!tree.contains("is not installed"), "{tree}");
        let driver = fix_for(
            &["nv-linux.h:709:12: error: implicit declaration of function 'phys_to_dma'"],
            m,
        );
        assert!(
            driver.contains("newer than the release's sources support"),
            "{driver}"
        );
    }

    fn fix_for(errors: &[&str], m: &Manifests) -> String {
        fix(&cachyos(errors), m).expect("a fix")
    }

    #[test]
    fn the_branch_is_the_version_s_first_number() {
        assert_eq!(branch_of("575.57.08"), Some(575));
        assert_eq!(branch_of("570.133.07-1"), Some(570));
        assert_eq!(branch_of("current"), None);
    }
}

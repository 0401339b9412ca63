//! The nvidia module's local builds as the build tools record them: DKMS's tree under
//! `/var/lib/dkms/<module>/<version>/` and akmods' logs under `/var/cache/akmods/<module>/`.
//! When the running kernel has no nvidia module these say why: the module was built for other
//! kernels only, its build for this one failed (and with which compiler error: a kernel newer
//! than the driver's sources, NVIDIA/open-gpu-kernel-modules#1176, negativo17/nvidia-driver#174),
//! or the kernel's headers are missing so no build could start (zen-kernel/zen-kernel#305,
//! archlinux/archinstall#2262).
//!
//! Layouts read:
//! - DKMS: `<version>/source` links the sources; `<version>/<kernel>/<arch>/module/` holds a
//!   build for `<kernel>`; a failed build leaves `<version>/build/make.log`, whose first line is
//!   `DKMS make.log for nvidia-<version> for kernel <kernel> (<arch>)` (the next build cleans the
//!   folder first, so the log is the last attempt's).
//! - akmods (Fedora, RPM Fusion, negativo17): `<version>-<release>-for-<kernel>.log` for a build
//!   that succeeded, `.failed.log` for one that failed.

use crate::host::Host;
use crate::report::ModuleBuild;

/// DKMS module names that are the NVIDIA driver itself: upstream's and Ubuntu's `nvidia`,
/// Debian's `nvidia-current` (and its `nvidia-tesla-<branch>` / `nvidia-legacy-<branch>`
/// packages), Arch's `nvidia-open`. Not `nvidia-fs` (GPUDirect Storage) or peer-memory modules.
fn is_driver_module(name: &str) -> bool {
    name == "nvidia"
        || [
            "nvidia-current",
            "nvidia-open",
            "nvidia-tesla",
            "nvidia-legacy",
        ]
        .iter()
        .any(|p| name.starts_with(p))
}

/// Versions looked at per module (a machine keeps one or two; the rest are leftovers).
const MAX_VERSIONS: usize = 6;
/// Bytes of a build log read from its end, where the failing step's errors are (a make.log of
/// the warnings before them runs to a few hundred kB).
const LOG_TAIL: u64 = 256 * 1024;
/// Compiler errors kept per failed build.
const MAX_ERRORS: usize = 3;
/// Characters kept of one error line.
const MAX_ERROR_CHARS: usize = 240;

/// Every nvidia module version DKMS and akmods hold, with the kernels each is built for and a
/// failed build's errors.
#[must_use]
pub(crate) fn probe(host: &Host) -> Vec<ModuleBuild> {
    let mut builds = dkms(host);
    builds.extend(akmods(host));
    builds
}

/// AMD's amdgpu-dkms versions DKMS holds (`/var/lib/dkms/amdgpu/<version>/`, a version such
/// as `6.16.13-2303411.24.04`: the kernel base it was rebased on, then AMD's build and target
/// release), read as the nvidia module's are: the kernels each is built for, and a failed
/// build's kernel and first errors (ROCm/legacy-rocm-build#6193, #5111).
#[must_use]
pub(crate) fn amdgpu(host: &Host) -> Vec<ModuleBuild> {
    dkms_of(host, |n| n == "amdgpu")
}

fn dkms(host: &Host) -> Vec<ModuleBuild> {
    dkms_of(host, is_driver_module)
}

fn dkms_of(host: &Host, wanted: impl Fn(&str) -> bool) -> Vec<ModuleBuild> {
    let fs = &host.fs;
    let mut out = Vec::new();
    for module in fs.read_dir_matching("/var/lib/dkms", wanted) {
        let versions = fs.read_dir_matching(&module.path, |n| {
            n.starts_with(|c: char| c.is_ascii_digit())
        });
        for version in versions.iter().rev().take(MAX_VERSIONS) {
            if !fs.is_dir(&version.path) {
                continue;
            }
            let built_for = fs
                .read_dir(&version.path)
                .into_iter()
                .filter(|k| !matches!(k.name.as_str(), "source" | "build"))
                .filter(|k| !k.name.starts_with("kernel-"))
                .filter(|k| {
                    fs.read_dir(&k.path).iter().any(|arch| {
                        let m = arch.path.join("module");
                        fs.read_dir(&m).iter().any(|f| f.name.contains(".ko"))
                    })
                })
                .map(|k| k.name)
                .collect();
            let log = version.path.join("build/make.log");
            let mut build = ModuleBuild {
                tool: "dkms".to_string(),
                module: module.name.clone(),
                version: version.name.clone(),
                built_for,
                ..ModuleBuild::default()
            };
            if let Some(tail) = fs.read_tail_opt(&log, LOG_TAIL) {
                build.failed_log = Some(log.display().to_string());
                build.failed_kernel = fs
                    .read_bytes_limited(&log, 512)
                    .ok()
                    .and_then(|head| make_log_kernel(&String::from_utf8_lossy(&head)));
                build.errors = compiler_errors(&tail);
            }
            out.push(build);
        }
    }
    out
}

/// The kernel named by a DKMS make.log's first line: "DKMS make.log for nvidia-390.157 for
/// kernel 6.8.0-arch1-1 (x86_64)".
fn make_log_kernel(head: &str) -> Option<String> {
    let first = head.lines().next()?;
    let rest = first.strip_prefix("DKMS make.log for ")?;
    let (_, kernel) = rest.rsplit_once(" for kernel ")?;
    let kernel = kernel.split_whitespace().next()?;
    (!kernel.is_empty()).then(|| kernel.to_string())
}

fn akmods(host: &Host) -> Vec<ModuleBuild> {
    let fs = &host.fs;
    let mut out: Vec<ModuleBuild> = Vec::new();
    for module in fs.read_dir_matching("/var/cache/akmods", is_driver_module) {
        for log in fs.read_dir_matching(&module.path, |n| n.ends_with(".log")) {
            let Some((version, kernel, failed)) = akmods_log_name(&log.name) else {
                continue;
            };
            let at = match out
                .iter()
                .position(|b| b.module == module.name && b.version == version)
            {
                Some(i) => i,
                None if out.len() < MAX_VERSIONS => {
                    out.push(ModuleBuild {
                        tool: "akmods".to_string(),
                        module: module.name.clone(),
                        version: version.to_string(),
                        ..ModuleBuild::default()
                    });
                    out.len() - 1
                }
                None => continue,
            };
            let build = &mut out[at];
            if !failed {
                build.built_for.push(kernel.to_string());
            } else if build.failed_log.is_none() {
                build.failed_log = Some(log.path.display().to_string());
                build.failed_kernel = Some(kernel.to_string());
                build.errors = fs
                    .read_tail_opt(&log.path, LOG_TAIL)
                    .map(|t| compiler_errors(&t))
                    .unwrap_or_default();
            }
        }
    }
    for b in &mut out {
        b.built_for.sort();
        b.built_for.dedup();
    }
    out
}

/// Version, kernel and failure of an akmods log name:
/// "570.133.07-1-for-6.14.1-300.fc42.x86_64.failed.log" -> ("570.133.07-1",
/// "6.14.1-300.fc42.x86_64", true).
fn akmods_log_name(name: &str) -> Option<(&str, &str, bool)> {
    let (stem, failed) = match name.strip_suffix(".failed.log") {
        Some(stem) => (stem, true),
        None => (name.strip_suffix(".log")?, false),
    };
    let (version, kernel) = stem.split_once("-for-")?;
    (!version.is_empty() && !kernel.is_empty()).then_some((version, kernel, failed))
}

/// The first distinct compiler errors of a build log: gcc's "file:line:col: error: ..." and
/// "fatal error:", modpost's "ERROR: modpost: ...", each without akmods' timestamp prefix and
/// cut to [`MAX_ERROR_CHARS`]. make's own "*** ... Error 2" lines say only that a step failed
/// and are left out.
#[must_use]
pub(crate) fn compiler_errors(log: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in log.lines() {
        let line = line
            .split_once(" akmodsbuild: ")
            .map_or(line, |(_, rest)| rest)
            .trim();
        let is_error = line.contains(": error: ")
            || line.contains("fatal error: ")
            || line.starts_with("ERROR: modpost: ");
        if !is_error || line.starts_with("make") || line.starts_with("error: Bad exit status") {
            continue;
        }
        let cut: String = line.chars().take(MAX_ERROR_CHARS).collect();
        if !out.contains(&cut) {
            out.push(cut);
        }
        if out.len() == MAX_ERRORS {
            break;
        }
    }
    if out.is_empty() {
        out = kernel_tree_failure(log);
    }
    out
}

/// Where no compiler error is in the log, the step that failed in the kernel's own build tree:
/// make's `*** [<kernel build>/scripts/Makefile.<stage>:<line>: <target>] Error N` and the
/// message of the tool that stopped it, on the line before ("awk: cmd. line:1: invalid char
/// ..." in `Makefile.modfinal`, CachyOS/linux-cachyos#809; a broken quote in the kernel's
/// Makefile, linux-surface/linux-surface#803). The driver's sources compiled; the kernel
/// package's build files did not run.
fn kernel_tree_failure(log: &str) -> Vec<String> {
    let lines: Vec<&str> = log
        .lines()
        .map(|l| {
            l.split_once(" akmodsbuild: ")
                .map_or(l, |(_, rest)| rest)
                .trim()
        })
        .collect();
    let Some(at) = lines.iter().position(|l| {
        l.starts_with("make") && l.contains("*** [") && l.contains("/scripts/Makefile.")
    }) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(tool) = at
        .checked_sub(1)
        .and_then(|i| lines.get(i))
        .filter(|l| !l.is_empty() && !l.starts_with("make"))
    {
        out.push(tool.chars().take(MAX_ERROR_CHARS).collect());
    }
    out.push(lines[at].chars().take(MAX_ERROR_CHARS).collect());
    out
}

/// Whether the running kernel's headers are installed: `/lib/modules/<release>/build` (a link
/// into `/usr/src` on most distributions) resolves to a folder inside the root. Unknown when
/// the kernel's own module folder is not there to look in.
#[must_use]
pub(crate) fn kernel_headers(host: &Host, release: &str) -> Option<bool> {
    if release.is_empty() || release.contains('/') {
        return None;
    }
    let tree = format!("/lib/modules/{release}");
    if !host.fs.is_dir(&tree) {
        return None;
    }
    Some(host.fs.is_dir(format!("{tree}/build")))
}

/// Kernels looked at for a module of their own (a machine keeps two or three).
const MAX_OTHER_KERNELS: usize = 12;

/// The other installed kernels (`/lib/modules/*` but `release`) that have an nvidia module,
/// sorted.
#[must_use]
pub(crate) fn other_kernels_with_module(host: &Host, release: &str) -> Vec<String> {
    let mut out: Vec<String> = host
        .fs
        .read_dir("/lib/modules")
        .into_iter()
        .filter(|k| k.name != release && host.fs.is_dir(&k.path))
        .take(MAX_OTHER_KERNELS)
        .filter(|k| !super::module_files::nvidia_modules(host, &k.name).is_empty())
        .map(|k| k.name)
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo(path: &std::path::Path) {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
    }

    /// A FIFO where a make.log belongs, a 10 GB sparse log and a link loop for a module folder
    /// are facts: nothing waits, nothing reads the 10 GB, and the builds are still listed.
    #[test]
    fn hostile_build_records_are_facts_not_hangs() {
        let dir = tempfile::tempdir().unwrap();
        let dkms = dir.path().join("var/lib/dkms");
        let a = dkms.join("nvidia/580.95.05");
        std::fs::create_dir_all(a.join("build")).unwrap();
        std::fs::create_dir_all(a.join("6.8.0-45-generic/x86_64/module")).unwrap();
        std::fs::write(a.join("6.8.0-45-generic/x86_64/module/nvidia.ko.zst"), b"").unwrap();
        fifo(&a.join("build/make.log"));
        let b = dkms.join("nvidia/575.57.08/build");
        std::fs::create_dir_all(&b).unwrap();
        let big = std::fs::File::create(b.join("make.log")).unwrap();
        big.set_len(10 << 30).unwrap();
        std::os::unix::fs::symlink("nvidia-current", dkms.join("nvidia-current")).unwrap();
        let akmods = dir.path().join("var/cache/akmods/nvidia");
        std::fs::create_dir_all(&akmods).unwrap();
        fifo(&akmods.join("570.86.16-1-for-6.13.5-200.fc41.x86_64.failed.log"));
        let host = Host::rooted(
            dir.path(),
            crate::host::Env::default(),
            std::time::Duration::from_secs(5),
        );
        let builds = probe(&host);
        let by = |v: &str| builds.iter().find(|b| b.version == v).unwrap();
        assert_eq!(by("580.95.05").built_for, vec!["6.8.0-45-generic"]);
        assert_eq!(by("580.95.05").failed_log, None, "a FIFO is no log");
        // The sparse log's tail is read (zeros, no error line) and its head names no kernel.
        let big = by("575.57.08");
        assert!(big.failed_log.is_some());
        assert_eq!(big.failed_kernel, None);
        assert!(big.errors.is_empty());
        let ak = by("570.86.16-1");
        assert_eq!(ak.failed_kernel.as_deref(), Some("6.13.5-200.fc41.x86_64"));
        assert!(ak.errors.is_empty());
    }

    #[test]
    fn the_make_log_names_the_kernel_it_built_for() {
        assert_eq!(
            make_log_kernel(
                "DKMS make.log for nvidia-390.157 for kernel 6.8.0-arch1-1 (x86_64)\nThu"
            ),
            Some("6.8.0-arch1-1".to_string())
        );
        assert_eq!(
            make_log_kernel(
                "DKMS make.log for nvidia-current-550.163.01 for kernel 6.17.1-surface-2 (x86_64)"
            ),
            Some("6.17.1-surface-2".to_string())
        );
        assert_eq!(make_log_kernel("make: Entering directory"), None);
        assert_eq!(make_log_kernel(""), None);
    }

    #[test]
    fn akmods_log_names_give_version_kernel_and_outcome() {
        assert_eq!(
            akmods_log_name("570.133.07-1-for-6.14.1-300.fc42.x86_64.failed.log"),
            Some(("570.133.07-1", "6.14.1-300.fc42.x86_64", true))
        );
        assert_eq!(
            akmods_log_name("565.77-1-for-6.13.4-200.fc41.x86_64.log"),
            Some(("565.77-1", "6.13.4-200.fc41.x86_64", false))
        );
        assert_eq!(akmods_log_name("akmods.log"), None);
        assert_eq!(akmods_log_name("-for-.log"), None);
    }

    #[test]
    fn compiler_errors_are_the_first_distinct_error_lines() {
        // negativo17/nvidia-driver#174 (akmods, Fedora 42, kernel 6.14.1).
        let log = "2025/04/11 17:03:05 akmodsbuild: make[4]: *** [/usr/src/kernels/6.14.1-300.fc42.x86_64/scripts/Makefile.build:207: nvidia/nv-nano-timer.o] Error 1\n\
2025/04/11 17:03:05 akmodsbuild: ././common/inc/nv-linux.h: In function 'nv_phys_to_dma':\n\
2025/04/11 17:03:05 akmodsbuild: ././common/inc/nv-linux.h:709:12: error: implicit declaration of function 'phys_to_dma'; did you mean 'nv_phys_to_dma'? [-Wimplicit-function-declaration]\n\
2025/04/11 17:03:05 akmodsbuild: ././common/inc/nv-linux.h:709:12: error: implicit declaration of function 'phys_to_dma'; did you mean 'nv_phys_to_dma'? [-Wimplicit-function-declaration]\n\
2025/04/11 17:03:05 akmodsbuild: error: Bad exit status from /var/tmp/rpm-tmp.hKIYD8 (%build)\n";
        assert_eq!(
            compiler_errors(log),
            vec!["././common/inc/nv-linux.h:709:12: error: implicit declaration of function 'phys_to_dma'; did you mean 'nv_phys_to_dma'? [-Wimplicit-function-declaration]".to_string()]
        );
        // zen-kernel/zen-kernel#305: the headers are missing.
        let log = "<command-line>: fatal error: /lib/modules/6.2.6-zen1-1-zen/build/include/linux/autoconf.h: No such file or directory\n\
make[1]: *** [Makefile:2024: /var/lib/dkms/nvidia/525.89.02/build] Error 2\n";
        assert_eq!(compiler_errors(log).len(), 1);
        let long = format!("a.c:1:1: error: {}", "x".repeat(1000));
        assert_eq!(compiler_errors(&long)[0].chars().count(), MAX_ERROR_CHARS);
        assert!(compiler_errors("warning: only warnings here\n").is_empty());
    }

    #[test]
    fn a_failure_in_the_kernel_s_build_files_is_kept_with_its_tool_s_message() {
        // CachyOS/linux-cachyos#809: no compiler error, the kernel's Makefile.modfinal stops.
        let log = "DKMS make.log for nvidia-595.58.03 for kernel 7.0.0-1-cachyos (x86_64)\n\
  MODPOST Module.symvers\n\
awk: cmd. line:1: invalid char '\\' in expression\n\
make[3]: *** [/usr/lib/modules/7.0.0-1-cachyos/build/scripts/Makefile.modfinal:60: nvidia.ko] Error 2\n\
make[2]: *** [/usr/lib/modules/7.0.0-1-cachyos/build/Makefile:1960: modules] Error 2\n";
        assert_eq!(
            compiler_errors(log),
            vec![
                "awk: cmd. line:1: invalid char '\\' in expression".to_string(),
                "make[3]: *** [/usr/lib/modules/7.0.0-1-cachyos/build/scripts/Makefile.modfinal:60: nvidia.ko] Error 2".to_string(),
            ]
        );
        // A compiler error in the driver's sources keeps the make lines out.
        let log = "nv.c:1:1: error: x\nmake[3]: *** [/lib/modules/k/build/scripts/Makefile.build:207: nv.o] Error 1\n";
        assert_eq!(compiler_errors(log), vec!["nv.c:1:1: error: x".to_string()]);
        assert!(compiler_errors("make: *** [Makefile:80: modules] Error 2\n").is_empty());
    }
}

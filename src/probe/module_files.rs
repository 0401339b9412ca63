//! The nvidia kernel module as files: was one built or installed for the running kernel, and
//! which key signs locally built modules. Together with Secure Boot this tells "no driver
//! installed" from "a driver the firmware will not let load" (the module is there, its signing
//! key was never enrolled as a MOK).

use std::path::Path;

use super::compressed_module::{self, Format, Limits};
use crate::host::Host;
use crate::parse::modinfo;
use crate::report::ModuleFileInfo;

/// Folders under `/lib/modules/<release>/` where packaged and locally built nvidia modules go:
/// DKMS (`updates/dkms`), openSUSE and the `.run` installer (`updates`, `kernel/drivers/video`),
/// akmods and RPM Fusion (`extra`, `extra/nvidia`), Ubuntu's prebuilt signed modules
/// (`kernel/nvidia-<branch>`, found by listing `kernel`).
/// RPM Fusion's open flavour goes to `extra/nvidia-open` (its `kmod-nvidia-open` file list,
/// NVIDIA/open-gpu-kernel-modules#700); NVIDIA's precompiled kmod packages for the Red Hat
/// family link theirs into `extra/drivers/video/nvidia` (NVIDIA/yum-packaging-precompiled-kmod,
/// kmod-nvidia.spec `kmod_module_path`). A kmod package built for one kernel reaches the
/// others of its EL release through `weak-updates/<name>/` links (`weak-modules`), which
/// dangle when the kernel they point into is gone (AlmaLinux/almalinux-deploy#271): only a
/// module file that resolves counts. Gentoo's nvidia-drivers installs into `video`
/// (gentoo/gentoo x11-drivers/nvidia-drivers: `modlist=( nvidia{,-drm,...}=video:kernel )`,
/// which linux-mod-r1.eclass puts in `/lib/modules/<version>/video/`).
const MODULE_DIRS: [&str; 12] = [
    "updates/dkms",
    "updates",
    "extra",
    "extra/nvidia",
    "extra/nvidia-open",
    "extra/drivers/video/nvidia",
    "weak-updates",
    "weak-updates/nvidia",
    "weak-updates/nvidia-open",
    "misc",
    "kernel/drivers/video",
    "video",
];

/// Keys that sign locally built modules, in the order they are looked for: DKMS's own
/// (Ubuntu 22.04+, Debian 12), Ubuntu's older shim-signed one, akmods' (Fedora, RHEL).
const SIGNING_KEYS: [&str; 3] = [
    "/var/lib/dkms/mok.pub",
    "/var/lib/shim-signed/mok/MOK.der",
    "/etc/pki/akmods/certs/public_key.der",
];

/// `nvidia.ko`, or Debian's `nvidia-current.ko` (its DKMS package renames the module: a
/// Debian 13 install log reads "Installing /lib/modules/6.12.85+deb13-amd64/updates/dkms/
/// nvidia-current.ko.xz"; linux-surface/linux-surface#1884 builds `nvidia-current/550.163.01`),
/// compressed or not.
fn is_nvidia_module(name: &str) -> bool {
    ["nvidia", "nvidia-current"].iter().any(|stem| {
        name.strip_prefix(stem).is_some_and(|rest| {
            ["", ".xz", ".zst", ".gz"]
                .iter()
                .any(|ext| rest.strip_prefix(".ko") == Some(ext))
        })
    })
}

/// Paths of the nvidia modules present for `release` (the running kernel), sorted.
#[must_use]
pub(crate) fn nvidia_modules(host: &Host, release: &str) -> Vec<String> {
    if release.is_empty() || release.contains('/') {
        return Vec::new();
    }
    let base = format!("/lib/modules/{release}");
    let mut dirs: Vec<String> = MODULE_DIRS.iter().map(|d| format!("{base}/{d}")).collect();
    dirs.extend(
        host.fs
            .read_dir(format!("{base}/kernel"))
            .into_iter()
            .filter(|e| e.name.starts_with("nvidia"))
            .map(|e| e.path.display().to_string()),
    );
    let mut found: Vec<String> = dirs
        .iter()
        .flat_map(|d| host.fs.read_dir(d))
        .filter(|e| is_nvidia_module(&e.name) && host.fs.exists(&e.path))
        .map(|e| e.path.display().to_string())
        .collect();
    found.sort();
    found.dedup();
    found
}

/// Module files read for their `.modinfo` at most (a machine holds one per flavour at most,
/// a few more with stale builds).
const MAX_MODINFO_FILES: usize = 8;

/// What each of `files` (from [`nvidia_modules`]) says of itself in its `.modinfo` section.
/// Uncompressed modules are read through a bounded ranged reader (a FIFO or device in the
/// module's place is refused, a 10 GB file costs its header and two sections); compressed
/// ones (`.ko.zst`, `.ko.xz`, `.ko.gz`) are decompressed as a stream with hard bounds
/// ([`compressed_module`]: 256 MiB read, 512 MiB decompressed at most, stopping once
/// `.modinfo` has gone past).
#[must_use]
pub(crate) fn module_info(host: &Host, files: &[String]) -> Vec<ModuleFileInfo> {
    module_info_with(host, files, Limits::MODULE)
}

fn module_info_with(host: &Host, files: &[String], limits: Limits) -> Vec<ModuleFileInfo> {
    let limits = limits.until(host.fs.scan_end());
    files
        .iter()
        .take(MAX_MODINFO_FILES)
        .map(|path| {
            let mut info = ModuleFileInfo {
                path: path.clone(),
                ..ModuleFileInfo::default()
            };
            let pairs = host
                .fs
                .open_ranged(Path::new(path))
                .map_err(|e| format!("cannot open: {e}"))
                .and_then(|file| match Format::of(path) {
                    Some(format) => compressed_module::read_modinfo(file.stream(), format, limits)
                        .map_err(|u| u.describe(format, limits)),
                    None => {
                        let mut read = |off: u64, len: usize| file.read_at(off, len);
                        modinfo::parse(&mut read).map_err(|u| u.as_str().to_string())
                    }
                });
            match pairs {
                Ok(pairs) => {
                    let get = |key| modinfo::value(&pairs, key).map(str::to_string);
                    info.license = get("license");
                    info.version = get("version");
                    info.vermagic = get("vermagic");
                }
                Err(reason) => info.unread = Some(reason),
            }
            info
        })
        .collect()
}

/// Which of `names` (InfiniBand modules: `ib_umad`, `mlx5_ib`) the running kernel has no module
/// for: neither a file in `/lib/modules/<release>/modules.dep` nor a line of `modules.builtin`.
/// Empty when `modules.dep` cannot be read (nothing is known then). On Ubuntu these modules come
/// in `linux-modules-extra-<release>`, which cloud images leave out (NVIDIA/gpu-operator#2781).
#[must_use]
pub(crate) fn absent_modules(host: &Host, release: &str, names: &[&str]) -> Vec<String> {
    if names.is_empty() || release.is_empty() || release.contains('/') {
        return Vec::new();
    }
    let base = format!("/lib/modules/{release}");
    let Some(dep) = host.fs.read_opt(format!("{base}/modules.dep")) else {
        return Vec::new();
    };
    let builtin = host
        .fs
        .read_opt(format!("{base}/modules.builtin"))
        .unwrap_or_default();
    // A module's name with `-` and `_` alike, as modprobe treats them.
    let stem = |path: &str| -> String {
        let file = path.rsplit('/').next().unwrap_or(path);
        file.split(".ko").next().unwrap_or(file).replace('-', "_")
    };
    let present: std::collections::HashSet<String> = dep
        .lines()
        .filter_map(|l| l.split(':').next())
        .chain(builtin.lines())
        .map(|p| stem(p.trim()))
        .collect();
    names
        .iter()
        .filter(|n| !present.contains(&n.replace('-', "_")))
        .map(|n| (*n).to_string())
        .collect()
}

/// The distribution's packages that carry an nvidia kernel module, as "manager: name version":
/// dpkg's (`nvidia-dkms-580-open`, `linux-modules-nvidia-580-open-generic`, Debian's
/// `nvidia-open-kernel-dkms`) and pacman's (`nvidia-open-dkms`, AUR's `nvidia-580xx-dkms`).
/// Their names tell the module's flavour (open or proprietary) and branch when the module
/// is not loaded, which is when it matters: a kernel module that does not drive the GPU fails
/// to load ("NVRM: No NVIDIA GPU found"). Sorted; empty when neither database is there.
#[must_use]
pub(crate) fn driver_packages(host: &Host) -> Vec<String> {
    let mut out: Vec<String> = host
        .fs
        .read_opt("/var/lib/dpkg/status")
        .map(|s| super::services::dpkg_installed(&s))
        .unwrap_or_default()
        .into_iter()
        .filter(|(name, _)| is_module_package(name))
        .map(|(name, version)| format!("dpkg: {name} {version}"))
        .collect();
    out.extend(
        super::services::pacman_installed(host)
            .into_iter()
            .filter(|(name, _)| is_module_package(name))
            .map(|(name, version)| format!("pacman: {name} {version}")),
    );
    out.sort();
    out.dedup();
    out
}

/// Whether a package name is one that builds or ships the nvidia kernel module.
fn is_module_package(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.starts_with("nvidia-dkms")
        || name.starts_with("linux-modules-nvidia-")
        || name.starts_with("nvidia-kernel-")
        || name.starts_with("nvidia-open-kernel")
        || (name.starts_with("nvidia")
            && (name.ends_with("-dkms")
                || ["nvidia", "nvidia-open", "nvidia-lts", "nvidia-lts-open"]
                    .contains(&name.as_str())))
}

/// The first local module-signing key that exists.
#[must_use]
pub(crate) fn signing_key(host: &Host) -> Option<String> {
    SIGNING_KEYS
        .iter()
        .find(|p| host.fs.exists(p))
        .map(|p| (*p).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host_with(dep: Option<&str>, builtin: &str) -> (tempfile::TempDir, Host) {
        let base = "/lib/modules/6.8.0-1-generic";
        let builtin = (format!("{base}/modules.builtin"), builtin);
        let dep = dep.map(|d| (format!("{base}/modules.dep"), d));
        let files: Vec<(&str, &str)> = std::iter::once(&builtin)
            .chain(&dep)
            .map(|(p, t)| (p.as_str(), *t))
            .collect();
        Host::with_files(&files)
    }

    #[test]
    fn module_packages_are_read_from_dpkg_and_pacman() {
        let dir = tempfile::tempdir().unwrap();
        let dpkg = dir.path().join("var/lib/dpkg");
        std::fs::create_dir_all(&dpkg).unwrap();
        std::fs::write(
            dpkg.join("status"),
            "Package: nvidia-dkms-580-open\nStatus: install ok installed\nVersion: 580.95.05-0ubuntu1\n\n\
             Package: nvidia-utils-580\nStatus: install ok installed\nVersion: 580.95.05-0ubuntu1\n\n\
             Package: nvidia-dkms-570\nStatus: deinstall ok config-files\nVersion: 570.1-1\n",
        )
        .unwrap();
        for p in [
            "nvidia-580xx-dkms-580.119.02-1",
            "nvidia-utils-590.48.01-2",
            "linux-6.18.1.arch1-1",
        ] {
            std::fs::create_dir_all(dir.path().join("var/lib/pacman/local").join(p)).unwrap();
        }
        let host = Host::rooted(
            dir.path(),
            crate::host::Env::default(),
            std::time::Duration::from_secs(5),
        );
        assert_eq!(
            driver_packages(&host),
            [
                "dpkg: nvidia-dkms-580-open 580.95.05-0ubuntu1",
                "pacman: nvidia-580xx-dkms 580.119.02-1"
            ]
        );
    }

    #[test]
    fn module_files_say_their_flavour_or_why_they_were_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("lib/modules/7.0.4/kernel/drivers/video");
        std::fs::create_dir_all(&base).unwrap();
        let obj = crate::parse::modinfo::test_object(&[(
            ".modinfo",
            b"version=580.159.03\0license=NVIDIA\0",
        )]);
        std::fs::write(base.join("nvidia.ko"), &obj).unwrap();
        let updates = dir.path().join("lib/modules/7.0.4/updates/dkms");
        std::fs::create_dir_all(&updates).unwrap();
        std::fs::write(updates.join("nvidia.ko.zst"), b"(\xb5/\xfd").unwrap();
        // A FIFO where a module should be: refused, not waited on.
        let extra = dir.path().join("lib/modules/7.0.4/extra");
        std::fs::create_dir_all(&extra).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            extra.join("nvidia.ko"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // A sparse 10 GB file: its header is read, nothing more.
        let misc = dir.path().join("lib/modules/7.0.4/misc");
        std::fs::create_dir_all(&misc).unwrap();
        let big = std::fs::File::create(misc.join("nvidia.ko")).unwrap();
        big.set_len(10 << 30).unwrap();
        let host = Host::rooted(
            dir.path(),
            crate::host::Env::default(),
            std::time::Duration::from_secs(5),
        );
        let files = nvidia_modules(&host, "7.0.4");
        assert_eq!(files.len(), 4, "{files:?}");
        let info = module_info(&host, &files);
        let by = |suffix: &str| info.iter().find(|m| m.path.ends_with(suffix)).unwrap();
        let video = by("video/nvidia.ko");
        assert_eq!(video.license.as_deref(), Some("NVIDIA"));
        assert_eq!(video.version.as_deref(), Some("580.159.03"));
        assert_eq!(video.open(), Some(false));
        // The zstd magic and nothing more.
        assert_eq!(
            by("nvidia.ko.zst").unread.as_deref(),
            Some("corrupt or cut-short zstd stream")
        );
        assert!(by("extra/nvidia.ko").unread.is_some());
        assert_eq!(
            by("misc/nvidia.ko").unread.as_deref(),
            Some("not an ELF object")
        );
    }

    /// A small module object of the given licence, built for 6.14.0-37-generic.
    fn module_obj(license: &str) -> Vec<u8> {
        let info = format!(
            "version=580.95.05\0license={license}\0name=nvidia\0\
             vermagic=6.14.0-37-generic SMP preempt mod_unload modversions \0"
        );
        crate::parse::modinfo::test_object(&[
            (".text", &[0x90; 4096]),
            (".modinfo", info.as_bytes()),
        ])
    }

    /// A zstd bomb: a raw block with an ELF header, then 1 GiB of `A` in RLE blocks (4 bytes
    /// per 128 KiB), 32 KiB in all.
    fn zstd_bomb() -> Vec<u8> {
        let mut bomb = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];
        bomb.extend_from_slice(&(64u32 << 3).to_le_bytes()[..3]);
        bomb.extend_from_slice(&module_obj("NVIDIA")[..64]);
        for i in 0..8192u32 {
            let header = u32::from(i == 8191) | (1 << 1) | ((128 * 1024) << 3);
            bomb.extend_from_slice(&header.to_le_bytes()[..3]);
            bomb.push(b'A');
        }
        bomb
    }

    /// Each compressed layout is read, and each hostile file in a module's place is a reason:
    /// a FIFO, a link loop, a cut stream, a bomb, a sparse 10 GB file.
    #[test]
    fn compressed_modules_are_read_and_hostile_ones_are_reasons() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("lib/modules/6.14.0-37-generic");
        let put = |rel: &str, bytes: &[u8]| {
            let path = base.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        };
        let obj = module_obj;
        let zst = ruzstd::encoding::compress_to_vec(
            obj("NVIDIA").as_slice(),
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        put("updates/dkms/nvidia.ko.zst", &zst);
        let mut xz = Vec::new();
        let mut w =
            lzma_rust2::XzWriter::new(&mut xz, lzma_rust2::XzOptions::with_preset(1)).unwrap();
        w.write_all(&obj("Dual MIT/GPL")).unwrap();
        w.finish().unwrap();
        put("extra/nvidia/nvidia.ko.xz", &xz);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&obj("NVIDIA")).unwrap();
        let gz = gz.finish().unwrap();
        put("misc/nvidia.ko.gz", &gz);
        // Cut short.
        put("extra/nvidia-open/nvidia.ko.xz", &xz[..xz.len() / 2]);
        // A FIFO.
        std::fs::create_dir_all(base.join("updates")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            base.join("updates/nvidia.ko.zst"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // A sparse 10 GB file.
        std::fs::create_dir_all(base.join("extra/drivers/video/nvidia")).unwrap();
        let big =
            std::fs::File::create(base.join("extra/drivers/video/nvidia/nvidia.ko.zst")).unwrap();
        big.set_len(10 << 30).unwrap();
        put("kernel/drivers/video/nvidia.ko.zst", &zstd_bomb());
        // A link loop (not listed: it leads nowhere; read anyway, it is a reason).
        std::os::unix::fs::symlink("nvidia.ko.gz", base.join("misc/nvidia-current.ko.gz")).unwrap();
        std::fs::remove_file(base.join("misc/nvidia.ko.gz")).unwrap();
        std::os::unix::fs::symlink("nvidia-current.ko.gz", base.join("misc/nvidia.ko.gz")).unwrap();
        put("weak-updates/nvidia/nvidia.ko.gz", &gz);
        let host = Host::rooted(
            dir.path(),
            crate::host::Env::default(),
            std::time::Duration::from_secs(5),
        );
        let mut files = nvidia_modules(&host, "6.14.0-37-generic");
        assert_eq!(files.len(), 7, "{files:?}");
        files.push("/lib/modules/6.14.0-37-generic/misc/nvidia.ko.gz".into());
        let limits = Limits {
            compressed: compressed_module::MAX_COMPRESSED,
            decompressed: 8 << 20,
            until: None,
        };
        let info = module_info_with(&host, &files, limits);
        let by = |suffix: &str| info.iter().find(|m| m.path.ends_with(suffix)).unwrap();
        let zst = by("updates/dkms/nvidia.ko.zst");
        assert_eq!((zst.open(), zst.unread.as_deref()), (Some(false), None));
        assert_eq!(zst.version.as_deref(), Some("580.95.05"));
        assert_eq!(
            zst.vermagic.as_deref(),
            Some("6.14.0-37-generic SMP preempt mod_unload modversions ")
        );
        assert_eq!(by("extra/nvidia/nvidia.ko.xz").open(), Some(true));
        assert_eq!(by("weak-updates/nvidia/nvidia.ko.gz").open(), Some(false));
        let reason = |suffix: &str| by(suffix).unread.clone().unwrap_or_default();
        assert_eq!(
            reason("nvidia-open/nvidia.ko.xz"),
            "corrupt or cut-short xz stream"
        );
        assert!(
            reason("updates/nvidia.ko.zst").starts_with("cannot open"),
            "{info:?}"
        );
        assert_eq!(
            reason("video/nvidia/nvidia.ko.zst"),
            "not a zstd stream (no zstd magic)"
        );
        assert_eq!(
            reason("kernel/drivers/video/nvidia.ko.zst"),
            "decompressed 8 MiB without finding .modinfo, read no further"
        );
        assert!(
            reason("misc/nvidia.ko.gz").starts_with("cannot open"),
            "{info:?}"
        );
    }

    #[test]
    fn module_file_names_are_nvidia_or_debian_s_nvidia_current() {
        for name in [
            "nvidia.ko",
            "nvidia.ko.zst",
            "nvidia-current.ko",
            "nvidia-current.ko.xz",
        ] {
            assert!(is_nvidia_module(name), "{name}");
        }
        for name in [
            "nvidia-uvm.ko",
            "nvidia-current-drm.ko.xz",
            "nvidia.ko.bak",
            "nvidia",
            "nvidia-current-modeset.ko",
        ] {
            assert!(!is_nvidia_module(name), "{name}");
        }
    }

    #[test]
    fn weak_update_links_count_only_when_they_lead_to_a_module() {
        let dir = tempfile::tempdir().unwrap();
        let modules = dir.path().join("lib/modules");
        let old = modules.join("5.14.0-1.el9.x86_64/extra/nvidia-open");
        std::fs::create_dir_all(&old).unwrap();
        std::fs::write(old.join("nvidia.ko"), b"").unwrap();
        for (release, target) in [
            ("5.14.0-2.el9.x86_64", "5.14.0-1.el9.x86_64"),
            ("5.14.0-3.el9.x86_64", "5.14.0-0.el9.x86_64"),
        ] {
            let weak = modules.join(release).join("weak-updates/nvidia-open");
            std::fs::create_dir_all(&weak).unwrap();
            std::os::unix::fs::symlink(
                format!("../../../{target}/extra/nvidia-open/nvidia.ko"),
                weak.join("nvidia.ko"),
            )
            .unwrap();
        }
        let host = Host::rooted(
            dir.path(),
            crate::host::Env::default(),
            std::time::Duration::from_secs(5),
        );
        assert_eq!(
            nvidia_modules(&host, "5.14.0-2.el9.x86_64"),
            ["/lib/modules/5.14.0-2.el9.x86_64/weak-updates/nvidia-open/nvidia.ko"]
        );
        // The link into a kernel folder that is gone: no module.
        assert!(nvidia_modules(&host, "5.14.0-3.el9.x86_64").is_empty());
    }

    #[test]
    fn a_module_is_absent_only_when_modules_dep_and_builtin_both_lack_it() {
        let names = ["ib_umad", "mlx5_ib"];
        let dep = "kernel/drivers/infiniband/core/ib_umad.ko.zst: kernel/drivers/infiniband/core/ib_core.ko.zst\n\
                   kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko.zst:\n";
        let (_d, host) = host_with(Some(dep), "");
        assert_eq!(
            absent_modules(&host, "6.8.0-1-generic", &names),
            ["mlx5_ib"]
        );
        // Built into the kernel: present.
        let (_d, host) = host_with(Some(dep), "kernel/drivers/infiniband/hw/mlx5/mlx5_ib.ko\n");
        assert!(absent_modules(&host, "6.8.0-1-generic", &names).is_empty());
        // An out-of-tree build (DOCA-OFED in updates/) counts too.
        let (_d, host) = host_with(
            Some("updates/dkms/ib_umad.ko: \nupdates/dkms/mlx5_ib.ko.xz: \n"),
            "",
        );
        assert!(absent_modules(&host, "6.8.0-1-generic", &names).is_empty());
        // No modules.dep: nothing is known, nothing is said.
        let (_d, host) = host_with(None, "");
        assert!(absent_modules(&host, "6.8.0-1-generic", &names).is_empty());
    }
}

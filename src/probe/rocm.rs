//! The ROCm stack as files show it: every install under `/opt` and the one `/opt/rocm` points
//! at, their HIP version and rocBLAS and hipBLASLt targets; programs' own copies of ROCm's
//! libraries (ollama's); the amdgpu module (the kernel's own, or AMD's
//! amdgpu-dkms, which alone has `/sys/module/amdgpu/version`); `/dev/kfd` and the render nodes
//! with their mode and group; and the user's groups.

use std::path::{Path, PathBuf};

use super::compressed_module;
use crate::host::Host;
use crate::host::ranged::RangedFile;
use crate::parse::offload_bundle::{self, HipFatbin};
use crate::parse::{accounts, rocm_files};
use crate::report::rocm::{
    AmdgpuModule, BundledRocm, DeviceNode, HipCode, RocmInstall, RocmStack, UserGroups,
};
use crate::report::{KernelInfo, PciDevice};

/// Reads the stack. `None` on a machine that shows nothing of it: no AMD GPU on the bus, no
/// amdgpu module, no KFD topology, no `/dev/kfd` and no ROCm install.
#[must_use]
pub(crate) fn probe(
    host: &Host,
    kernel: &KernelInfo,
    pci: &[PciDevice],
    topology: &super::amd::Topology,
) -> Option<RocmStack> {
    let installs = installs(host);
    let default_install = host
        .fs
        .exists("/opt/rocm")
        .then(|| host.fs.canonical(Path::new("/opt/rocm"), true).ok())
        .flatten()
        .map(|p| p.display().to_string());
    let kfd = host.fs.exists("/dev/kfd");
    let amd_on_bus = pci.iter().any(|d| d.vendor == "amd");
    if installs.is_empty() && !kernel.amdgpu_loaded && !topology.listed && !kfd && !amd_on_bus {
        return None;
    }
    let version = host
        .fs
        .read_opt("/sys/module/amdgpu/version")
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty());
    let amdgpu = AmdgpuModule {
        loaded: kernel.amdgpu_loaded,
        kind: kernel
            .amdgpu_loaded
            .then(|| if version.is_some() { "dkms" } else { "inbox" }.to_string()),
        version,
        cmdline: cmdline(host),
        blacklisted: blacklisted(host),
        dkms_builds: super::module_builds::amdgpu(host),
    };
    let user = user(host);
    let device_nodes = device_nodes(host, user.as_ref());
    Some(RocmStack {
        installs,
        default_install,
        amdgpu,
        kfd_topology: topology.listed,
        kfd_nodes: topology.gpus.clone(),
        device_nodes,
        user,
        bundled: bundled(host),
        hip_code: hip_code(host),
    })
}

/// The ROCm version the machine's "ROCm" is: `/opt/rocm`'s install, else the newest.
#[must_use]
pub(crate) fn main_version(stack: &RocmStack) -> Option<String> {
    let by_default = stack
        .default_install
        .as_deref()
        .and_then(|d| stack.installs.iter().find(|i| i.path == d))
        .and_then(|i| i.version.clone());
    by_default.or_else(|| {
        stack
            .installs
            .iter()
            .filter_map(|i| i.version.clone())
            .max_by(|a, b| crate::version::compare(a, b))
    })
}

/// `/opt/rocm*` folders, each once (`/opt/rocm` is usually a link to one of them).
fn installs(host: &Host) -> Vec<RocmInstall> {
    let mut out: Vec<RocmInstall> = Vec::new();
    for entry in host.fs.read_dir("/opt") {
        if !entry.name.starts_with("rocm") || !host.fs.is_dir(&entry.path) {
            continue;
        }
        let Ok(real) = host.fs.canonical(&entry.path, true) else {
            continue;
        };
        let path = real.display().to_string();
        if out.iter().any(|i| i.path == path) {
            continue;
        }
        let has_rocm = host.fs.exists(real.join(".info/version"))
            || host.fs.is_dir(real.join("lib"))
            || host.fs.is_dir(real.join("bin"));
        if !has_rocm {
            continue;
        }
        out.push(install(host, &real));
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

fn install(host: &Host, dir: &Path) -> RocmInstall {
    let version = host
        .fs
        .read_opt(dir.join(".info/version"))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .or_else(|| {
            let name = dir.file_name()?.to_str()?;
            let v = name.strip_prefix("rocm-")?;
            crate::version::Version::parse(v).map(|_| v.to_string())
        });
    let hip_version = host
        .fs
        .read_dir(dir.join("lib"))
        .iter()
        .find_map(|e| rocm_files::hip_version_from_name(&e.name))
        .or_else(|| {
            host.fs
                .read_opt(dir.join("bin/.hipVersion"))
                .and_then(|t| rocm_files::hip_version_file(&t))
        });
    RocmInstall {
        path: dir.display().to_string(),
        version,
        hip_version,
        rocblas_targets: kernel_targets(host, &dir.join("lib/rocblas/library")),
        hipblaslt_targets: tensile_targets(host, &dir.join("lib/hipblaslt/library")),
    }
}

/// Where programs keep their own copy of ROCm's libraries: ollama's Linux tarball and install
/// script put them in `lib/ollama/rocm` beside its binary ("rocblaslt error: Cannot read
/// /usr/local/lib/ollama/rocm/hipblaslt/library/TensileLibrary_lazy_gfx1201.dat",
/// ollama/ollama#11555).
const BUNDLED: [(&str, &str); 3] = [
    ("ollama", "/usr/local/lib/ollama/rocm"),
    ("ollama", "/usr/lib/ollama/rocm"),
    ("ollama", "/opt/ollama/lib/ollama/rocm"),
];

/// LM Studio's ROCm engine downloads its own copy of ROCm's libraries into the user's home, one
/// folder per vendor pack ("rocBLAS error: Cannot read `/home/<user>/.lmstudio/extensions/
/// backends/vendor/linux-llama-rocm-vendor-v3/rocblas/library/TensileLibrary.dat`",
/// lmstudio-ai/lmstudio-bug-tracker#1502); its packs for other engines (CUDA, Vulkan) hold no
/// ROCm and are left out by name.
const LMSTUDIO_VENDOR: &str = ".lmstudio/extensions/backends/vendor";

/// The most home folders (under `/home`) and LM Studio vendor packs per home looked at.
const MAX_HOME_ENTRIES: usize = 64;

/// LM Studio's ROCm vendor packs in the homes this machine has: `$HOME`, `/root` and the
/// folders of `/home`.
fn lmstudio_vendor_packs(host: &Host) -> Vec<PathBuf> {
    let homes = host
        .env
        .path("HOME")
        .into_iter()
        .chain(std::iter::once(PathBuf::from("/root")))
        .chain(
            host.fs
                .read_dir("/home")
                .into_iter()
                .take(MAX_HOME_ENTRIES)
                .map(|e| e.path),
        );
    let mut out = Vec::new();
    for home in homes {
        let packs = host
            .fs
            .read_dir_matching(home.join(LMSTUDIO_VENDOR), |name| name.contains("rocm"));
        out.extend(
            packs
                .into_iter()
                .take(MAX_HOME_ENTRIES)
                .map(|e| e.path)
                .filter(|p| host.fs.is_dir(p)),
        );
    }
    out
}

/// The ROCm libraries programs bring with them, each folder once.
fn bundled(host: &Host) -> Vec<BundledRocm> {
    let fixed = BUNDLED
        .iter()
        .map(|(program, dir)| (*program, PathBuf::from(dir)));
    let lmstudio = lmstudio_vendor_packs(host)
        .into_iter()
        .map(|dir| ("LM Studio", dir));
    let mut out: Vec<BundledRocm> = Vec::new();
    for (program, dir) in fixed.chain(lmstudio) {
        if !host.fs.is_dir(&dir) {
            continue;
        }
        let real = host.fs.canonical(&dir, true).unwrap_or(dir);
        let path = real.display().to_string();
        if out.iter().any(|b| b.path == path) {
            continue;
        }
        out.push(BundledRocm {
            program: program.to_string(),
            rocblas_targets: kernel_targets(host, &real.join("rocblas/library")),
            hipblaslt_targets: tensile_targets(host, &real.join("hipblaslt/library")),
            path,
        });
    }
    out
}

/// The most HIP libraries looked at (PATH folders and ollama's own).
const MAX_HIP_LIBS: usize = 32;

/// HIP programs' own GPU code: `libggml-hip.so` beside a `PATH` folder's programs or in its
/// `../lib` (llama.cpp's build and release layouts), and in ollama's `lib/ollama` next to its
/// ROCm. Each file is read through [`crate::parse::offload_bundle`] (a few kilobytes).
fn hip_code(host: &Host) -> Vec<HipCode> {
    let mut candidates = super::ggml::path_candidates(host, "libggml-hip.so", MAX_HIP_LIBS);
    for (program, dir) in BUNDLED {
        let rocm = Path::new(dir);
        candidates.push((program.to_string(), rocm.join("libggml-hip.so")));
        if let Some(parent) = rocm.parent() {
            candidates.push((program.to_string(), parent.join("libggml-hip.so")));
        }
    }
    super::ggml::read_each(host, candidates, MAX_HIP_LIBS, |program, path, file| {
        let mut read = |offset: u64, len: usize| file.read_at(offset, len);
        let (targets, compressed) = match offload_bundle::hip_fatbin(&mut read)? {
            HipFatbin::Targets(t) => (t, false),
            HipFatbin::Compressed(c) => (compressed_targets(file, &c, host.fs.scan_end()), true),
        };
        Some(HipCode {
            program,
            path,
            targets,
            compressed,
        })
    })
}

/// Compressed bytes of one offload bundle read at most: its entry ids come first in the
/// decoded stream, within its first zstd block (128 KiB at most, RFC 8878) or the first deflate
/// blocks, so 4 MiB is far more than they need and a small part of a bundle of many targets.
const MAX_CCOB_COMPRESSED: u64 = 4 << 20;

/// The targets of a compressed offload bundle: the head of its stream decoded with bounds
/// ([`compressed_module::read_head`]: at most [`MAX_CCOB_COMPRESSED`] read, the bundle
/// header's 64 KiB decoded, a zstd window of at most 128 MiB) and its entry ids read; empty when
/// its method is unknown or the stream does not decode (the targets are then unknown).
fn compressed_targets(
    file: &RangedFile,
    ccob: &offload_bundle::Ccob,
    until: Option<std::time::Instant>,
) -> Vec<String> {
    let format = match ccob.codec {
        Some(offload_bundle::Codec::Zstd) => compressed_module::Format::Zstd,
        Some(offload_bundle::Codec::Zlib) => compressed_module::Format::Zlib,
        None => return Vec::new(),
    };
    let limits = compressed_module::Limits {
        compressed: ccob.len.min(MAX_CCOB_COMPRESSED),
        decompressed: offload_bundle::MAX_HEAD as u64,
        until,
    };
    let input = RangedReader {
        file,
        at: ccob.offset,
    };
    compressed_module::read_head(input, format, limits, offload_bundle::MAX_HEAD)
        .ok()
        .and_then(|head| offload_bundle::bundle_targets(&head))
        .unwrap_or_default()
}

/// A [`std::io::Read`] over a ranged file from an offset (the caller's limits bound it).
struct RangedReader<'a> {
    file: &'a RangedFile,
    at: u64,
}

impl std::io::Read for RangedReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let got = self.file.read_at(self.at, buf.len()).unwrap_or_default();
        let n = got.len().min(buf.len());
        buf.get_mut(..n)
            .unwrap_or_default()
            .copy_from_slice(got.get(..n).unwrap_or_default());
        self.at = self.at.saturating_add(n as u64);
        Ok(n)
    }
}

/// The gfx targets a hipBLASLt kernel folder has Tensile libraries for
/// (`TensileLibrary_lazy_gfx1201.dat`, the file hipBLASLt looks for first), sorted. Only those
/// count: its `extop_gfx*.co` and `Kernels.so-*` files do not make a target usable.
#[must_use]
pub(crate) fn tensile_targets(host: &Host, dir: &Path) -> Vec<String> {
    let mut out: Vec<crate::version::GfxTarget> = host
        .fs
        .read_dir(dir)
        .iter()
        .filter(|e| e.name.starts_with("TensileLibrary"))
        .filter_map(|e| rocm_files::gfx_in_file_name(&e.name))
        .collect();
    out.sort();
    out.dedup();
    out.into_iter().map(|t| t.to_string()).collect()
}

/// The gfx targets a rocBLAS (or hipBLASLt) kernel folder has files for, sorted.
#[must_use]
pub(crate) fn kernel_targets(host: &Host, dir: &Path) -> Vec<String> {
    let mut out: Vec<crate::version::GfxTarget> = host
        .fs
        .read_dir(dir)
        .iter()
        .filter(|e| e.name.starts_with("TensileLibrary") || e.name.contains("gfx"))
        .filter_map(|e| rocm_files::gfx_in_file_name(&e.name))
        .collect();
    out.sort();
    out.dedup();
    out.into_iter().map(|t| t.to_string()).collect()
}

/// Kernel command-line words that keep amdgpu off a GPU or select which driver takes it.
fn cmdline(host: &Host) -> Vec<String> {
    host.fs
        .read_opt("/proc/cmdline")
        .map(|t| {
            t.split_whitespace()
                .filter(|w| {
                    *w == "nomodeset"
                        || w.starts_with("amdgpu.")
                        || w.starts_with("radeon.si_support")
                        || w.starts_with("radeon.cik_support")
                        || (w.starts_with("modprobe.blacklist=") && w.contains("amdgpu"))
                })
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `blacklist amdgpu` in the modprobe configuration folders.
fn blacklisted(host: &Host) -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["/etc/modprobe.d", "/lib/modprobe.d", "/usr/lib/modprobe.d"] {
        for entry in host.fs.read_dir(dir) {
            if !entry.name.ends_with(".conf") {
                continue;
            }
            let Some(text) = host.fs.read_opt(&entry.path) else {
                continue;
            };
            for line in text.lines() {
                let words: Vec<&str> = line.split_whitespace().collect();
                if words.as_slice() == ["blacklist", "amdgpu"]
                    || (words.first() == Some(&"install")
                        && words.get(1) == Some(&"amdgpu")
                        && line.contains("/bin/false"))
                {
                    out.push(format!("{}: {}", entry.path.display(), line.trim()));
                }
            }
        }
    }
    out
}

/// The user's ids and group names.
fn user(host: &Host) -> Option<UserGroups> {
    let ids = host
        .fs
        .read_opt("/proc/self/status")
        .map(|t| accounts::process_ids(&t))?;
    let groups = host
        .fs
        .read_opt("/etc/group")
        .map(|t| accounts::id_names(&t))
        .unwrap_or_default();
    let name = ids.uid.and_then(|uid| {
        host.fs
            .read_opt("/etc/passwd")
            .map(|t| accounts::id_names(&t))
            .and_then(|users| users.into_iter().find(|(_, id)| *id == uid).map(|(n, _)| n))
    });
    let mut gids: Vec<u32> = ids.gid.into_iter().chain(ids.groups).collect();
    gids.dedup();
    let mut seen = Vec::new();
    gids.retain(|g| {
        let new = !seen.contains(g);
        seen.push(*g);
        new
    });
    let names = gids
        .iter()
        .map(|gid| {
            groups
                .iter()
                .find(|(_, id)| id == gid)
                .map_or_else(|| gid.to_string(), |(n, _)| n.clone())
        })
        .collect();
    let group_text = host.fs.read_opt("/etc/group").unwrap_or_default();
    let pending_groups = name
        .as_deref()
        .map(|user| {
            groups
                .iter()
                .filter(|(g, gid)| {
                    !gids.contains(gid)
                        && crate::parse::accounts::group_members(&group_text, g)
                            .iter()
                            .any(|m| m == user)
                })
                .map(|(g, _)| g.clone())
                .collect()
        })
        .unwrap_or_default();
    Some(UserGroups {
        uid: ids.uid,
        name,
        gids,
        groups: names,
        pending_groups,
    })
}

/// `/dev/kfd` and `/dev/dri/renderD*`, with who may open them.
fn device_nodes(host: &Host, user: Option<&UserGroups>) -> Vec<DeviceNode> {
    let group_names = host
        .fs
        .read_opt("/etc/group")
        .map(|t| accounts::id_names(&t))
        .unwrap_or_default();
    let mut paths: Vec<String> = Vec::new();
    if host.fs.exists("/dev/kfd") {
        paths.push("/dev/kfd".to_string());
    }
    paths.extend(
        host.fs
            .read_dir("/dev/dri")
            .into_iter()
            .filter(|e| e.name.starts_with("renderD"))
            .map(|e| format!("/dev/dri/{}", e.name)),
    );
    paths
        .into_iter()
        .map(|path| {
            let attrs = host.fs.node_attrs(Path::new(&path));
            let group = attrs.and_then(|a| {
                group_names
                    .iter()
                    .find(|(_, id)| *id == a.gid)
                    .map(|(n, _)| n.clone())
            });
            DeviceNode {
                accessible: attrs.and_then(|a| accessible(a, user)),
                mode: attrs.map(|a| format!("{:04o}", a.mode)),
                uid: attrs.map(|a| a.uid),
                gid: attrs.map(|a| a.gid),
                group,
                acl: attrs.and_then(|a| a.acl),
                path,
            }
        })
        .collect()
}

/// Whether the user may open the node read-write, by its bits. Unknown (`None`) without a
/// user, or when a POSIX ACL may grant more than the bits show.
fn accessible(a: crate::host::fs::NodeAttrs, user: Option<&UserGroups>) -> Option<bool> {
    let user = user?;
    let uid = user.uid?;
    if uid == 0 {
        return Some(true);
    }
    let rw = |shift: u32| (a.mode >> shift) & 0o6 == 0o6;
    let by_bits = rw(0) || (uid == a.uid && rw(6)) || (user.gids.contains(&a.gid) && rw(3));
    match (by_bits, a.acl) {
        (true, _) => Some(true),
        (false, Some(false)) => Some(false),
        (false, _) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Env;
    use std::io::Write;

    /// A rooted host whose `PATH` folder `/app/bin` holds `libggml-hip.so` with `bytes`.
    fn host_with_lib(bytes: &[u8]) -> (tempfile::TempDir, Host) {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("app/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("libggml-hip.so"), bytes).unwrap();
        let env = Env::from_pairs([("PATH", "/app/bin")]);
        let host = Host::rooted(dir.path(), env, std::time::Duration::from_secs(2));
        (dir, host)
    }

    fn vector(name: &str) -> Vec<u8> {
        std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/hip-fatbin")
                .join(name),
        )
        .unwrap()
    }

    /// Every version (1-3) and method (zlib, zstd) of clang's compressed bundle, as
    /// `scripts/gen-hip-fatbin-elf.py` writes them: the targets come out of the stream.
    #[test]
    fn compressed_bundles_of_every_version_and_method_give_their_targets() {
        for v in 1..=3 {
            for m in ["zlib", "zstd"] {
                let (_dir, host) = host_with_lib(&vector(&format!("ccob-v{v}-{m}.so")));
                let code = hip_code(&host);
                assert_eq!(code.len(), 1, "v{v} {m}");
                assert!(code[0].compressed, "v{v} {m}");
                assert_eq!(code[0].targets, ["gfx1100", "gfx1151"], "v{v} {m}");
            }
        }
    }

    /// A bundle compressed by a real encoder (not the generator's stored blocks): ruzstd's and
    /// flate2's, in a version 3 header, as clang writes it.
    #[test]
    fn bundles_compressed_by_real_encoders_give_their_targets() {
        let ids = [
            "host-x86_64-unknown-linux-gnu-",
            "hipv4-amdgcn-amd-amdhsa--gfx1201",
            "hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-",
        ];
        let mut inner = crate::parse::offload_bundle::test_bundle(&ids);
        // Code objects after the header, compressible and not.
        inner.extend((0..300_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
        let zstd = ruzstd::encoding::compress_to_vec(
            inner.as_slice(),
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&inner).unwrap();
        let zlib = z.finish().unwrap();
        for (method, stream) in [(1u16, zstd), (0u16, zlib)] {
            let mut packed = b"CCOB".to_vec();
            packed.extend_from_slice(&3u16.to_le_bytes());
            packed.extend_from_slice(&method.to_le_bytes());
            packed.extend_from_slice(&(32 + stream.len() as u64).to_le_bytes());
            packed.extend_from_slice(&(inner.len() as u64).to_le_bytes());
            packed.extend_from_slice(&0u64.to_le_bytes());
            packed.extend_from_slice(&stream);
            let elf = crate::parse::offload_bundle::test_elf(&packed);
            let (_dir, host) = host_with_lib(&elf);
            let code = hip_code(&host);
            assert_eq!(code[0].targets, ["gfx942", "gfx1201"], "method {method}");
        }
    }

    /// A stream that does not decode (corrupt, cut short, a method mismatched) leaves the
    /// targets unknown: empty, the bundle still marked compressed.
    #[test]
    fn a_compressed_bundle_that_does_not_decode_has_unknown_targets() {
        let good = vector("ccob-v3-zstd.so");
        let at = good.windows(4).position(|w| w == b"CCOB").unwrap();
        // The method says zlib over a zstd stream.
        let mut wrong = good.clone();
        wrong[at + 6] = 0;
        // The zstd magic broken.
        let mut corrupt = good.clone();
        corrupt[at + 32] ^= 0xff;
        // A frame header asking for a 3.75 TiB window (window descriptor 0xf8).
        let mut huge = good.clone();
        huge[at + 37] = 0xf8;
        for (name, bytes) in [("wrong", wrong), ("corrupt", corrupt), ("huge", huge)] {
            let (_dir, host) = host_with_lib(&bytes);
            let code = hip_code(&host);
            assert!(code[0].compressed, "{name}");
            assert!(code[0].targets.is_empty(), "{name}: {:?}", code[0].targets);
        }
    }

    /// A rooted host with `files` (empty) and the environment `env`.
    fn host_with_files(files: &[&str], env: &[(&str, &str)]) -> (tempfile::TempDir, Host) {
        let dir = tempfile::tempdir().unwrap();
        for f in files {
            let path = dir.path().join(f.trim_start_matches('/'));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, b"").unwrap();
        }
        let env = Env::from_pairs(env.iter().copied());
        let host = Host::rooted(dir.path(), env, std::time::Duration::from_secs(2));
        (dir, host)
    }

    const VENDOR: &str = ".lmstudio/extensions/backends/vendor";

    /// LM Studio's ROCm vendor pack in a home under `/home` is a program's copy of ROCm, with its
    /// rocBLAS targets; its CUDA and Vulkan packs are not, and one home found twice ($HOME and
    /// `/home`) gives one copy.
    #[test]
    fn lmstudio_rocm_vendor_packs_in_homes_are_bundled_copies() {
        let pack = format!("/home/ana/{VENDOR}/linux-llama-rocm-vendor-v3");
        let (_dir, host) = host_with_files(
            &[
                &format!("{pack}/rocblas/library/TensileLibrary_lazy_gfx1100.dat"),
                &format!("{pack}/rocblas/library/TensileLibrary_lazy_gfx1201.dat"),
                &format!("{pack}/hipblaslt/library/TensileLibrary_lazy_gfx1100.dat"),
                &format!("/home/ana/{VENDOR}/linux-llama-cuda12-vendor-v2/libcublas.so.12"),
                &format!("/home/ana/{VENDOR}/linux-llama-vulkan-vendor-v1/libvulkan.so.1"),
            ],
            &[("HOME", "/home/ana")],
        );
        let got = bundled(&host);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].program, "LM Studio");
        assert!(
            got[0].path.ends_with("linux-llama-rocm-vendor-v3"),
            "{}",
            got[0].path
        );
        assert_eq!(got[0].rocblas_targets, ["gfx1100", "gfx1201"]);
        assert_eq!(got[0].hipblaslt_targets, ["gfx1100"]);
    }

    /// The pack is found in root's home and in another user's home too (a service run as
    /// root, a doctor run by another user), and nothing is found without LM Studio.
    #[test]
    fn lmstudio_packs_are_looked_for_in_every_home() {
        let (_dir, host) = host_with_files(
            &[&format!(
                "/root/{VENDOR}/linux-llama-rocm-vendor-v3/rocblas/library/TensileLibrary_lazy_gfx1030.dat"
            )],
            &[("HOME", "/home/someone")],
        );
        let got = bundled(&host);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].rocblas_targets, ["gfx1030"]);
        let (_dir, host) = host_with_files(&["/home/ana/.lmstudio/settings.json"], &[]);
        assert!(bundled(&host).is_empty());
    }
}

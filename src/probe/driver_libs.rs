//! The user-space driver libraries (libcuda, libnvidia-ml) the loader would find, in its order.
//!
//! Their file names carry the driver version (`libcuda.so.580.159.04`), which is what a
//! driver/library mismatch after an upgrade is judged by. Stubs (`.../stubs/libcuda.so`, for
//! linking only) and forward-compatibility copies (`.../compat/libcuda.so.*`) are marked.

use std::path::Path;

use super::loader::{LoaderPath, SearchDir};
use crate::host::Host;
use crate::parse::libname::split_soname;
use crate::report::DriverLibrary;
use crate::report::DriverLibraryKind;

/// The driver libraries we follow, by the name programs ask the loader for.
const NAMES: [&str; 2] = ["libcuda", "libnvidia-ml"];

#[must_use]
pub(crate) fn probe(host: &Host, loader: &LoaderPath, wsl: bool) -> Vec<DriverLibrary> {
    let mut out: Vec<DriverLibrary> = Vec::new();
    for name in NAMES {
        let mut rank = 0u32;
        for dir in &loader.dirs {
            if let Some(lib) = library_in(host, dir, name, wsl) {
                out.push(DriverLibrary { rank, ..lib });
                rank += 1;
            }
        }
    }
    out.extend(nixos_driver(host, loader, wsl, &out));
    out.extend(compat_copies(host, loader, &out));
    out.extend(off_path_copies(host, loader, &out));
    out
}

/// Where container platforms mount the host driver's libraries for the image to put on its
/// loader path: GKE's device plugin mounts the node's driver at `/usr/local/nvidia` ("GKE always
/// mounts driver libraries at /usr/local/nvidia/lib64 regardless", scverse/scvi-tools#3799;
/// GKE's documentation: "This requires including /usr/local/nvidia/lib64 in the
/// LD_LIBRARY_PATH environment variable"). NVIDIA's older CUDA images named both folders in
/// `LD_LIBRARY_PATH`; recent ones do not (GoogleCloudPlatform/compute-gpu-installation#46).
const DRIVER_MOUNTS: [&str; 2] = ["/usr/local/nvidia/lib64", "/usr/local/nvidia/lib"];

/// The driver's libcuda and libnvidia-ml in a [`DRIVER_MOUNTS`] folder the loader does not
/// search, kind "off-path", ranked after everything else found under their name.
fn off_path_copies(
    host: &Host,
    loader: &LoaderPath,
    found: &[DriverLibrary],
) -> Vec<DriverLibrary> {
    let mut out: Vec<DriverLibrary> = Vec::new();
    for dir in DRIVER_MOUNTS {
        let path = std::path::PathBuf::from(dir);
        let Ok(canonical) = host.fs.canonical(&path, true) else {
            continue;
        };
        if loader.dirs.iter().any(|d| d.canonical == canonical) {
            continue;
        }
        let dir = SearchDir {
            path,
            canonical,
            origin: super::loader::Origin::Default,
        };
        for name in NAMES {
            let Some(lib) = library_in(host, &dir, name, false) else {
                continue;
            };
            if lib.kind != DriverLibraryKind::Driver
                || found
                    .iter()
                    .chain(&out)
                    .any(|l| l.resolved.is_some() && l.resolved == lib.resolved)
            {
                continue;
            }
            let rank = u32::try_from(found.iter().chain(&out).filter(|l| l.name == name).count())
                .unwrap_or(u32::MAX);
            out.push(DriverLibrary {
                rank,
                kind: DriverLibraryKind::OffPath,
                origin: "off-path".to_string(),
                ..lib
            });
        }
    }
    out
}

/// NixOS keeps the driver's libraries in `/run/opengl-driver/lib` (its `hardware.graphics`
/// module links them there; there is no `/etc/ld.so.conf`): programs find them through their
/// run path or `LD_LIBRARY_PATH`. When that folder is not on the loader path it is still the
/// driver's, so its libraries are listed with origin "nixos", ranked after the loader's.
fn nixos_driver(
    host: &Host,
    loader: &LoaderPath,
    wsl: bool,
    found: &[DriverLibrary],
) -> Vec<DriverLibrary> {
    let path = std::path::PathBuf::from("/run/opengl-driver/lib");
    let Ok(canonical) = host.fs.canonical(&path, true) else {
        return Vec::new();
    };
    if loader.dirs.iter().any(|d| d.canonical == canonical) {
        return Vec::new();
    }
    let dir = SearchDir {
        path,
        canonical,
        origin: super::loader::Origin::Default,
    };
    NAMES
        .iter()
        .filter_map(|name| {
            let lib = library_in(host, &dir, name, wsl)?;
            let rank =
                u32::try_from(found.iter().filter(|l| l.name == *name).count()).unwrap_or(u32::MAX);
            Some(DriverLibrary {
                origin: "nixos".to_string(),
                rank,
                ..lib
            })
        })
        .collect()
}

/// The cuda-compat libcuda copies of `/usr/local/cuda*/compat` that are not on the loader path,
/// ranked after every loader folder with origin "cuda-compat". Their version is what tells a
/// forward-compatibility libcuda mounted elsewhere (the container runtime can mount the image's
/// compat copy over the driver's own file name) from the driver's own.
fn compat_copies(host: &Host, loader: &LoaderPath, found: &[DriverLibrary]) -> Vec<DriverLibrary> {
    let mut rank =
        u32::try_from(found.iter().filter(|l| l.name == "libcuda").count()).unwrap_or(u32::MAX);
    let mut dirs: Vec<std::path::PathBuf> = host
        .fs
        .read_dir("/usr/local")
        .into_iter()
        .filter(|e| e.name == "cuda" || e.name.starts_with("cuda-"))
        .map(|e| e.path.join("compat"))
        .collect();
    dirs.sort();
    let mut out: Vec<DriverLibrary> = Vec::new();
    for path in dirs {
        let Ok(canonical) = host.fs.canonical(&path, true) else {
            continue;
        };
        let on_path = loader.dirs.iter().any(|d| d.canonical == canonical);
        let seen = out.iter().any(|l| {
            l.resolved
                .as_deref()
                .is_some_and(|r| Path::new(r).parent() == Some(canonical.as_path()))
        });
        if on_path || seen {
            continue;
        }
        let dir = SearchDir {
            path,
            canonical,
            origin: super::loader::Origin::Default,
        };
        if let Some(lib) = library_in(host, &dir, "libcuda", false) {
            out.push(DriverLibrary {
                rank,
                kind: DriverLibraryKind::Compat,
                origin: "cuda-compat".to_string(),
                ..lib
            });
            rank = rank.saturating_add(1);
        }
    }
    out
}

/// The copy of `name` the loader would open in `dir`: the `.so.1` soname link when there is
/// one (that is what programs ask for), else the bare `.so`, else a versioned file.
fn library_in(host: &Host, dir: &SearchDir, name: &str, wsl: bool) -> Option<DriverLibrary> {
    let entries: Vec<String> = host
        .fs
        .read_dir(&dir.path)
        .into_iter()
        .map(|e| e.name)
        .filter(|n| split_soname(n).is_some_and(|(stem, _)| stem == name))
        .collect();
    let soname = format!("{name}.so.1");
    let bare = format!("{name}.so");
    let chosen = if entries.contains(&soname) {
        soname
    } else if entries.contains(&bare) {
        bare
    } else {
        entries
            .into_iter()
            .max_by(|a, b| crate::version::compare(a, b))?
    };
    let path = dir.path.join(&chosen);
    if !host.fs.exists(&path) {
        // A dangling link: the loader cannot open it either.
        return None;
    }
    let resolved = host.fs.canonical(&path, true).ok();
    let version = resolved
        .as_deref()
        .and_then(Path::file_name)
        .and_then(|f| f.to_str())
        .and_then(split_soname)
        .and_then(|(_, v)| v)
        // `.so.1` alone is the soname, not a driver version.
        .filter(|v| v.contains('.'))
        .map(str::to_string);
    let location = resolved.as_deref().unwrap_or(&path);
    Some(DriverLibrary {
        name: name.to_string(),
        path: path.display().to_string(),
        resolved: resolved.as_ref().map(|p| p.display().to_string()),
        version,
        kind: kind_of(&dir.canonical, location),
        origin: if wsl && dir.canonical.starts_with("/usr/lib/wsl") {
            "wsl".to_string()
        } else {
            dir.origin.as_str().to_string()
        },
        rank: 0,
    })
}

/// "stub" for link-time stubs, "compat" for forward-compatibility copies, else "driver".
fn kind_of(dir: &Path, file: &Path) -> DriverLibraryKind {
    let in_component = |p: &Path, c: &str| p.components().any(|x| x.as_os_str() == c);
    if in_component(dir, "stubs") || in_component(file, "stubs") {
        DriverLibraryKind::Stub
    } else if ["compat", "cuda-compat"]
        .iter()
        .any(|c| in_component(dir, c) || in_component(file, c))
    {
        // `/usr/local/cuda-X.Y/compat` (NVIDIA's cuda-compat-X-Y) and `$CONDA_PREFIX/cuda-compat`
        // (conda-forge's cuda-compat package).
        DriverLibraryKind::Compat
    } else {
        DriverLibraryKind::Driver
    }
}

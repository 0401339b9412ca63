//! CUDA libraries outside the driver: cuDNN, NCCL, cuBLAS, the CUDA runtime and TensorRT,
//! wherever they are: the loader's folders, toolkits, pip `nvidia-*` wheels, conda prefixes.
//!
//! A version comes from the file name when it is complete (`libcudnn.so.9.14.0`), else from the
//! header beside it (`cudnn_version.h`), else from the pip wheel that installed it.

use std::path::{Path, PathBuf};

use super::loader::LoaderPath;
use super::toolkit::LIB_DIRS;
use crate::host::Host;
use crate::parse::cuda_files;
use crate::parse::libname::split_soname;
use crate::report::{EnvKind, Libraries, Library, PythonEnv, Toolkit};

/// One library family: its file stem, the wheel that ships it, and how to read its header.
struct Family {
    stem: &'static str,
    wheel_prefix: &'static str,
    headers: &'static [&'static str],
    header_version: fn(&str) -> Option<String>,
}

const CUDNN: Family = Family {
    stem: "libcudnn",
    wheel_prefix: "nvidia-cudnn",
    headers: &["cudnn_version.h", "cudnn.h"],
    header_version: cuda_files::cudnn_header_version,
};
const NCCL: Family = Family {
    stem: "libnccl",
    wheel_prefix: "nvidia-nccl",
    headers: &["nccl.h"],
    header_version: cuda_files::nccl_header_version,
};
const CUBLAS: Family = Family {
    stem: "libcublas",
    wheel_prefix: "nvidia-cublas",
    headers: &[],
    header_version: no_header,
};
const CUDART: Family = Family {
    stem: "libcudart",
    wheel_prefix: "nvidia-cuda-runtime",
    headers: &[],
    header_version: no_header,
};
const TENSORRT: Family = Family {
    stem: "libnvinfer",
    wheel_prefix: "tensorrt",
    headers: &["NvInferVersion.h"],
    header_version: cuda_files::tensorrt_header_version,
};

fn no_header(_: &str) -> Option<String> {
    None
}

/// System header folders, for libraries installed by distribution packages.
const SYSTEM_INCLUDES: [&str; 3] = [
    "/usr/include",
    "/usr/include/x86_64-linux-gnu",
    "/usr/include/aarch64-linux-gnu",
];

/// A folder to look in, and what kind of install it belongs to.
struct Place {
    dir: PathBuf,
    origin: &'static str,
    /// The wheels of the environment this folder belongs to (pip only).
    wheels: Vec<(String, String, Option<String>)>,
}

#[must_use]
pub(crate) fn probe(
    host: &Host,
    loader: &LoaderPath,
    toolkits: &[Toolkit],
    envs: &[PythonEnv],
) -> Libraries {
    let places = places(host, loader, toolkits, envs);
    let find = |family: &Family| {
        let mut found: Vec<Library> = places
            .iter()
            .filter_map(|place| library_in(host, loader, place, family))
            .collect();
        found.sort_by(|a, b| a.path.cmp(&b.path));
        found.dedup_by(|a, b| a.path == b.path);
        found
    };
    Libraries {
        cudnn: find(&CUDNN),
        nccl: find(&NCCL),
        cublas: find(&CUBLAS),
        cudart: find(&CUDART),
        tensorrt: find(&TENSORRT),
        loads: Vec::new(),
        loader_table: None,
        symbol_gaps: Vec::new(),
        symbols_unread: Vec::new(),
        cuda_code: super::cuda_code::probe(host),
    }
}

fn places(
    host: &Host,
    loader: &LoaderPath,
    toolkits: &[Toolkit],
    envs: &[PythonEnv],
) -> Vec<Place> {
    let mut out: Vec<Place> = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut push = |host: &Host,
                    dir: PathBuf,
                    origin: &'static str,
                    wheels: Vec<(String, String, Option<String>)>| {
        let canonical = host
            .fs
            .canonical(&dir, true)
            .unwrap_or_else(|_| dir.clone());
        // Link-time stubs are not libraries anything runs with.
        let stub = canonical.components().any(|c| c.as_os_str() == "stubs");
        if stub || seen.contains(&canonical) || !host.fs.is_dir(&dir) {
            return;
        }
        seen.push(canonical);
        out.push(Place {
            dir,
            origin,
            wheels,
        });
    };
    let toolkit_roots: Vec<&str> = toolkits.iter().map(|t| t.path.as_str()).collect();
    for dir in &loader.dirs {
        let origin = if toolkit_roots.iter().any(|t| dir.canonical.starts_with(t)) {
            "toolkit"
        } else {
            "system"
        };
        push(host, dir.path.clone(), origin, Vec::new());
    }
    for toolkit in toolkits {
        for sub in LIB_DIRS {
            push(
                host,
                Path::new(&toolkit.path).join(sub),
                "toolkit",
                Vec::new(),
            );
        }
    }
    for env in envs {
        let wheels: Vec<(String, String, Option<String>)> = env
            .nvidia_wheels
            .iter()
            .map(|w| (w.name.clone(), w.version.clone(), w.lib_dir.clone()))
            .collect();
        for site in &env.site_packages {
            for pkg in host.fs.read_dir(Path::new(site).join("nvidia")) {
                push(host, pkg.path.join("lib"), "pip", wheels.clone());
            }
            let trt = Path::new(site).join("tensorrt_libs");
            let mut trt_wheels = wheels.clone();
            trt_wheels.extend(tensorrt_wheels(host, Path::new(site), &trt));
            push(host, trt, "pip", trt_wheels);
        }
        if env.kind == EnvKind::Conda {
            push(host, Path::new(&env.path).join("lib"), "conda", Vec::new());
        }
    }
    out
}

fn library_in(host: &Host, loader: &LoaderPath, place: &Place, family: &Family) -> Option<Library> {
    // Files of exactly this family: `libcudnn.so.9` but not `libcudnn_ops.so.9`.
    let files: Vec<(String, Option<String>)> = host
        .fs
        .read_dir(&place.dir)
        .into_iter()
        .filter_map(|e| {
            let (stem, version) = split_soname(&e.name)?;
            (stem == family.stem).then(|| (e.name.clone(), version.map(str::to_string)))
        })
        .filter(|(name, _)| host.fs.exists(place.dir.join(name)))
        .collect();
    // The most precise file name wins: libcudnn.so.9.14.0 over libcudnn.so.9 over libcudnn.so.
    let (file, file_version) = files
        .into_iter()
        .max_by_key(|(_, v)| v.as_deref().map_or(0, |v| v.split('.').count()))?;
    let soname_major = file_version
        .as_deref()
        .and_then(|v| v.split('.').next())
        .map(str::to_string);
    let (version, source) = match &file_version {
        Some(v) if v.split('.').count() >= 3 => (Some(v.clone()), "file-name"),
        _ => match header_version(host, place, family, soname_major.as_deref()) {
            Some(v) => (Some(v), "header"),
            None => match wheel_version(host, place, family) {
                Some(v) => (Some(v), "dist-info"),
                None => (file_version.clone(), "file-name"),
            },
        },
    };
    let position = loader.position(host, &place.dir);
    Some(Library {
        version,
        path: place.dir.join(&file).display().to_string(),
        origin: place.origin.to_string(),
        version_source: Some(source.to_string()),
        on_loader_path: position.is_some(),
        loader_origin: position.map(|(_, o)| o.as_str().to_string()),
        loader_rank: position.and_then(|(i, _)| u32::try_from(i).ok()),
    })
}

/// TensorRT's library wheels of a site folder (`tensorrt-cu12-libs`, `tensorrt-cu13-libs`,
/// `tensorrt-libs`), which put `libnvinfer.so.10` (no minor in the name) into
/// `site-packages/tensorrt_libs`: their dist-info version names the release.
fn tensorrt_wheels(
    host: &Host,
    site: &Path,
    lib_dir: &Path,
) -> Vec<(String, String, Option<String>)> {
    host.fs
        .read_dir(site)
        .into_iter()
        .filter(|e| e.name.ends_with(".dist-info"))
        .filter_map(|e| crate::parse::python_pkg::dist_info_name(&e.name))
        .filter(|(name, _)| {
            name == "tensorrt-libs"
                || name
                    .strip_prefix("tensorrt-cu")
                    .and_then(|r| r.strip_suffix("-libs"))
                    .is_some_and(|m| !m.is_empty() && m.chars().all(|c| c.is_ascii_digit()))
        })
        .map(|(name, version)| (name, version, Some(lib_dir.display().to_string())))
        .collect()
}

/// The header beside the library (`../include`), or the system's for system libraries; only
/// trusted when its major agrees with the library's soname.
fn header_version(
    host: &Host,
    place: &Place,
    family: &Family,
    major: Option<&str>,
) -> Option<String> {
    let mut dirs: Vec<PathBuf> = place
        .dir
        .parent()
        .map(|p| p.join("include"))
        .into_iter()
        .collect();
    if place.origin == "system" {
        dirs.extend(SYSTEM_INCLUDES.iter().map(PathBuf::from));
    }
    dirs.iter()
        .flat_map(|d| family.headers.iter().map(move |h| d.join(h)))
        .filter_map(|h| host.fs.read_opt(&h))
        .filter_map(|t| (family.header_version)(&t))
        .find(|v| major.is_none_or(|m| v.split('.').next() == Some(m)))
}

/// The version of the pip wheel whose library folder this is.
fn wheel_version(host: &Host, place: &Place, family: &Family) -> Option<String> {
    let canonical = host.fs.canonical(&place.dir, true).ok()?;
    place
        .wheels
        .iter()
        .filter(|(name, _, _)| name.starts_with(family.wheel_prefix))
        .find(|(_, _, lib_dir)| {
            lib_dir
                .as_deref()
                .and_then(|d| host.fs.canonical(Path::new(d), true).ok())
                .is_some_and(|d| d == canonical)
        })
        .map(|(_, version, _)| version.clone())
}

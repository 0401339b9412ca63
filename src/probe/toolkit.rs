//! CUDA toolkits: every `/usr/local/cuda-*`, the `/usr/local/cuda` link, `/opt/cuda`,
//! `CUDA_HOME`/`CUDA_PATH`, the `nvcc` on PATH, and toolkits inside conda environments.
//!
//! The version comes from the first that answers: `version.json` (11.1+), `version.txt`
//! (older), `nvcc --version`, the `libcudart.so.X.Y.Z` file name, conda's package records
//! (`conda-meta/cudatoolkit-11.3.1-*.json`, `cuda-nvcc-12.4.131-*.json`), the folder name. The
//! real H200 toolkit has no version.json, so the later sources matter.
//!
//! nvcc's own version is recorded apart (what users quote, "V12.8.93"), and the toolkit an
//! extension build would use is marked the way `torch.utils.cpp_extension` picks it:
//! `CUDA_HOME`, else `CUDA_PATH`, else the nvcc on PATH, else `/usr/local/cuda`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::host::Host;
use crate::parse::{cuda_files, libname::split_soname, nvcc};
use crate::report::{Component, Toolkit};

/// Where a toolkit's libraries live, relative to its root (x86-64, SBSA, then the old lib64).
pub(crate) const LIB_DIRS: [&str; 3] = [
    "targets/x86_64-linux/lib",
    "targets/sbsa-linux/lib",
    "lib64",
];

/// Where a toolkit keeps `crt/host_config.h`, whose GCC check says which host compilers its
/// nvcc accepts (x86-64, SBSA, then the plain `include/` of older and conda layouts).
const HOST_CONFIG: [&str; 3] = [
    "targets/x86_64-linux/include/crt/host_config.h",
    "targets/sbsa-linux/include/crt/host_config.h",
    "include/crt/host_config.h",
];

/// Finds toolkits; `conda_prefixes` are the conda environments the Python probe found.
#[must_use]
pub(crate) fn probe(host: &Host, conda_prefixes: &[PathBuf]) -> Vec<Toolkit> {
    // Keyed by the canonical folder, so /usr/local/cuda and /usr/local/cuda-13.0 are one toolkit.
    let mut found: BTreeMap<PathBuf, Vec<String>> = BTreeMap::new();
    let mut add = |host: &Host, dir: &Path, via: &str| {
        if !looks_like_toolkit(host, dir) {
            return;
        }
        let canonical = host
            .fs
            .canonical(dir, true)
            .unwrap_or_else(|_| dir.to_path_buf());
        let vias = found.entry(canonical).or_default();
        if !vias.iter().any(|v| v == via) {
            vias.push(via.to_string());
        }
    };
    for base in ["/usr/local", "/opt"] {
        for entry in host.fs.read_dir(base) {
            if entry.name == "cuda" || entry.name.starts_with("cuda-") {
                let via = if entry.name == "cuda" {
                    entry.path.display().to_string()
                } else {
                    "scan".to_string()
                };
                add(host, &entry.path, &via);
            }
        }
    }
    for var in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
        if let Some(dir) = host.env.path(var) {
            add(host, &dir, var);
        }
    }
    let nvcc_on_path = host.which("nvcc");
    if let Some(nvcc) = &nvcc_on_path
        && let Some(root) = host
            .fs
            .canonical(nvcc, true)
            .ok()
            .and_then(|p| p.parent().and_then(Path::parent).map(Path::to_path_buf))
    {
        add(host, &root, "PATH");
    }
    for prefix in conda_prefixes {
        add(host, prefix, "conda");
    }
    // Each toolkit may run its own nvcc: they run side by side (16 at a time), each with its
    // deadline, so several hanging ones cost one timeout rather than one each.
    let found: Vec<_> = found.into_iter().collect();
    let mut toolkits: Vec<Toolkit> = Vec::with_capacity(found.len());
    for chunk in found.chunks(16) {
        std::thread::scope(|s| {
            let described: Vec<_> = chunk
                .iter()
                .map(|(path, found_via)| s.spawn(move || describe(host, path, found_via.clone())))
                .collect();
            toolkits.extend(described.into_iter().filter_map(|h| h.join().ok()));
        });
    }
    mark_build_toolkit(host, &mut toolkits, nvcc_on_path.is_some());
    toolkits
}

/// Marks the toolkit `torch.utils.cpp_extension._find_cuda_home` would pick: `CUDA_HOME`, else
/// `CUDA_PATH`, else the folder above the nvcc on PATH, else `/usr/local/cuda`.
fn mark_build_toolkit(host: &Host, toolkits: &mut [Toolkit], nvcc_on_path: bool) {
    let via = if host.env.path("CUDA_HOME").is_some() {
        "CUDA_HOME"
    } else if host.env.path("CUDA_PATH").is_some() {
        "CUDA_PATH"
    } else if nvcc_on_path {
        "PATH"
    } else {
        "/usr/local/cuda"
    };
    if let Some(t) = toolkits
        .iter_mut()
        .find(|t| t.found_via.iter().any(|v| v == via))
    {
        t.builds_extensions = true;
    }
}

/// The CUDA a conda environment holds as packages: `cuda-nvcc` (CUDA 12+ on conda-forge and
/// the nvidia channel), else `cuda-toolkit`, `cuda-cudart`, else the old `cudatoolkit`
/// (runtime libraries only, no nvcc). Read from `conda-meta/<name>-<version>-<build>.json`.
fn conda_cuda(host: &Host, prefix: &Path) -> Option<(String, &'static str)> {
    let names: Vec<String> = host
        .fs
        .read_dir(prefix.join("conda-meta"))
        .into_iter()
        .map(|e| e.name)
        .collect();
    ["cuda-nvcc", "cuda-toolkit", "cuda-cudart", "cudatoolkit"]
        .iter()
        .find_map(|pkg| {
            names.iter().find_map(|n| {
                let rest = n
                    .strip_suffix(".json")?
                    .strip_prefix(pkg)?
                    .strip_prefix('-')?;
                let version = rest.split('-').next()?;
                crate::version::Version::parse(version)
                    .filter(|_| version.chars().all(|c| c.is_ascii_digit() || c == '.'))
                    .map(|_| (version.to_string(), *pkg))
            })
        })
}

/// A folder is a toolkit when it has nvcc, a version file, the CUDA runtime library, or conda
/// records CUDA packages in it.
fn looks_like_toolkit(host: &Host, dir: &Path) -> bool {
    host.fs.is_executable(dir.join("bin/nvcc"))
        || conda_cuda(host, dir).is_some()
        || host.fs.exists(dir.join("version.json"))
        || host.fs.exists(dir.join("version.txt"))
        || cudart_version(host, dir).is_some()
}

fn describe(host: &Host, path: &Path, found_via: Vec<String>) -> Toolkit {
    let nvcc_path = path.join("bin/nvcc");
    let nvcc = host.fs.is_executable(&nvcc_path).then_some(nvcc_path);
    let version_json = host.fs.read_opt(path.join("version.json"));
    let components: Vec<Component> = version_json
        .as_deref()
        .map(nvcc::version_json_components)
        .unwrap_or_default()
        .into_iter()
        .map(|(name, version)| Component { name, version })
        .collect();
    // nvcc's own version: version.json names it; else ask nvcc (it answers in milliseconds).
    let nvcc_version = components
        .iter()
        .find(|c| c.name == "cuda_nvcc")
        .map(|c| c.version.clone())
        .or_else(|| nvcc.as_ref().and_then(|n| nvcc_version(host, n)));
    let conda = conda_cuda(host, path);
    let (version, source) = if let Some(v) = version_json
        .as_deref()
        .and_then(cuda_files::toolkit_version_json)
    {
        (Some(v), "version.json")
    } else if let Some(v) = host
        .fs
        .read_opt(path.join("version.txt"))
        .and_then(|t| cuda_files::toolkit_version_txt(&t))
    {
        (Some(v), "version.txt")
    } else if let Some(v) = nvcc_version.clone().filter(|_| nvcc.is_some()) {
        (Some(v), "nvcc")
    } else if let Some(v) = cudart_version(host, path) {
        (Some(v), "libcudart")
    } else if let Some((v, _)) = &conda {
        (Some(v.clone()), "conda-meta")
    } else if let Some(v) = folder_version(path) {
        (Some(v), "folder-name")
    } else {
        (None, "")
    };
    let gcc_max = HOST_CONFIG
        .iter()
        .find_map(|rel| host.fs.read_opt(path.join(rel)))
        .and_then(|text| crate::parse::host_compiler::gcc_max(&text));
    Toolkit {
        path: path.display().to_string(),
        version,
        version_source: (!source.is_empty()).then(|| source.to_string()),
        nvcc: nvcc.map(|n| n.display().to_string()),
        nvcc_version,
        components,
        builds_extensions: false,
        gcc_max,
        found_via,
    }
}

/// `nvcc --version`; never under `--host-root`, where nvcc is the node's program (the
/// toolkit's version then comes from its files).
fn nvcc_version(host: &Host, nvcc: &Path) -> Option<String> {
    if host.host_root().is_some() {
        return None;
    }
    let out = host.run(nvcc, &["--version"]).ok()?;
    if !out.success() {
        return None;
    }
    let v = nvcc::parse_version(&out.stdout)?;
    Some(v.full.unwrap_or(v.release))
}

/// `libcudart.so.13.0.96` in the toolkit's library folders gives the runtime's version.
fn cudart_version(host: &Host, root: &Path) -> Option<String> {
    cudart_version_in(host, LIB_DIRS.iter().map(|d| root.join(d)))
}

/// The highest full `libcudart.so.X.Y.Z` version among these folders' files (a bare
/// `libcudart.so.12` says only the major and is not counted).
pub(crate) fn cudart_version_in(
    host: &Host,
    dirs: impl IntoIterator<Item = PathBuf>,
) -> Option<String> {
    dirs.into_iter()
        .flat_map(|d| host.fs.read_dir(d))
        .filter_map(|e| {
            let (stem, version) = split_soname(&e.name)?;
            (stem == "libcudart" && version?.matches('.').count() >= 2)
                .then(|| version.map(str::to_string))
                .flatten()
        })
        .max_by(|a, b| crate::version::compare(a, b))
}

/// `cuda-12.4` → "12.4"; a last resort, marked as such in `version_source`.
fn folder_version(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let v = name.strip_prefix("cuda-")?;
    crate::version::Version::parse(v).map(|_| v.to_string())
}

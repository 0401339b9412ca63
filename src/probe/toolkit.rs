//! CUDA toolkits: every `/usr/local/cuda-*`, the `/usr/local/cuda` link, `/opt/cuda`,
//! `CUDA_HOME`/`CUDA_PATH`, the `nvcc` on PATH, and toolkits inside conda environments.
//!
//! The version comes from the first that answers: `version.json` (11.1+), `version.txt`
//! (older), `nvcc --version`, the `libcudart.so.X.Y.Z` file name, the folder name. The real
//! H200 toolkit has no version.json, so the later sources matter.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::host::Host;
use crate::parse::{cuda_files, libname::split_soname, nvcc};
use crate::report::Toolkit;

/// Where a toolkit's libraries live, relative to its root (x86-64, SBSA, then the old lib64).
pub const LIB_DIRS: [&str; 3] = [
    "targets/x86_64-linux/lib",
    "targets/sbsa-linux/lib",
    "lib64",
];

/// Finds toolkits; `conda_prefixes` are the conda environments the Python probe found.
#[must_use]
pub fn probe(host: &Host, conda_prefixes: &[PathBuf]) -> Vec<Toolkit> {
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
    let mut out = Vec::with_capacity(found.len());
    for chunk in found.chunks(16) {
        std::thread::scope(|s| {
            let described: Vec<_> = chunk
                .iter()
                .map(|(path, found_via)| s.spawn(move || describe(host, path, found_via.clone())))
                .collect();
            out.extend(described.into_iter().filter_map(|h| h.join().ok()));
        });
    }
    out
}

/// A folder is a toolkit when it has nvcc, a version file, or the CUDA runtime library.
fn looks_like_toolkit(host: &Host, dir: &Path) -> bool {
    host.fs.is_executable(dir.join("bin/nvcc"))
        || host.fs.exists(dir.join("version.json"))
        || host.fs.exists(dir.join("version.txt"))
        || cudart_version(host, dir).is_some()
}

fn describe(host: &Host, path: &Path, found_via: Vec<String>) -> Toolkit {
    let nvcc_path = path.join("bin/nvcc");
    let nvcc = host.fs.is_executable(&nvcc_path).then_some(nvcc_path);
    let (version, source) = if let Some(v) = host
        .fs
        .read_opt(path.join("version.json"))
        .and_then(|t| cuda_files::toolkit_version_json(&t))
    {
        (Some(v), "version.json")
    } else if let Some(v) = host
        .fs
        .read_opt(path.join("version.txt"))
        .and_then(|t| cuda_files::toolkit_version_txt(&t))
    {
        (Some(v), "version.txt")
    } else if let Some(v) = nvcc.as_ref().and_then(|n| nvcc_version(host, n)) {
        (Some(v), "nvcc")
    } else if let Some(v) = cudart_version(host, path) {
        (Some(v), "libcudart")
    } else if let Some(v) = folder_version(path) {
        (Some(v), "folder-name")
    } else {
        (None, "")
    };
    Toolkit {
        path: path.display().to_string(),
        version,
        version_source: (!source.is_empty()).then(|| source.to_string()),
        nvcc: nvcc.map(|n| n.display().to_string()),
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
    LIB_DIRS
        .iter()
        .flat_map(|d| host.fs.read_dir(root.join(d)))
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

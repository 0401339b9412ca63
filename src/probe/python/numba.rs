//! numba's CUDA target in an environment: numba's and numba-cuda's dist-info, NVIDIA's CUDA
//! binding package beside them, and the libNVVM numba-cuda would load, looked for where
//! numba-cuda's `cuda_paths.py` (and, from 0.20 on, cuda-pathfinder) look: the environment's
//! pip wheels, a conda environment's own files, `CUDA_HOME` / `CUDA_PATH`, `/usr/local/cuda`,
//! then the loader's folders. Nothing is imported.

use std::path::{Path, PathBuf};

use crate::host::Host;
use crate::parse::python_pkg;
use crate::report::{NumbaTarget, Nvvm};

/// The CUDA 12 pip wheel of nvcc (with libNVVM) and the CUDA 13 wheel of libNVVM alone, with the
/// folder under the site folder where each puts `libnvvm.so`.
const NVVM_WHEELS: [(&str, &str); 2] = [
    ("nvidia-cuda-nvcc-cu12", "nvidia/cuda_nvcc/nvvm/lib64"),
    ("nvidia-nvvm", "nvidia/cu13/nvvm/lib64"),
];

/// conda packages whose record names the CUDA release of the environment's libNVVM, first
/// match wins.
const NVVM_CONDA: [&str; 5] = [
    "cuda-nvvm-impl",
    "cuda-nvvm",
    "cuda-nvcc-impl",
    "cuda-nvcc",
    "cudatoolkit",
];

/// Folders the loader searches by default on the distributions' layouts (Debian's
/// `nvidia-cuda-toolkit` puts `libnvvm.so` in its multiarch folder).
const LOADER_DIRS: [&str; 4] = [
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
];

/// numba's CUDA target of an environment; `None` when neither numba nor numba-cuda is there.
pub(super) fn probe(host: &Host, prefix: &Path, sites: &[PathBuf]) -> Option<NumbaTarget> {
    let dists: Vec<(String, String, PathBuf)> = sites
        .iter()
        .flat_map(|site| {
            host.fs
                .read_dir(site)
                .into_iter()
                .filter(|e| e.name.ends_with(".dist-info"))
                .filter_map(|e| {
                    let (name, version) = python_pkg::dist_info_name(&e.name)?;
                    Some((python_pkg::normalize_name(&name), version, site.clone()))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let version_of = |name: &str| {
        dists
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, v, _)| v.clone())
    };
    let numba = version_of("numba");
    let numba_cuda = version_of("numba-cuda");
    if numba.is_none() && numba_cuda.is_none() {
        return None;
    }
    let cuda_bindings = ["cuda-bindings", "cuda-python"]
        .iter()
        .find_map(|n| version_of(n).map(|v| format!("{n} {v}")));
    let mut looked = Vec::new();
    let nvvm = find_nvvm(host, prefix, &dists, &mut looked);
    Some(NumbaTarget {
        numba,
        numba_cuda,
        cuda_bindings,
        nvvm_looked_at: if nvvm.is_some() { Vec::new() } else { looked },
        nvvm,
    })
}

/// The first `libnvvm.so*` file in `dir`.
fn libnvvm_in(host: &Host, dir: &Path) -> Option<PathBuf> {
    let mut files: Vec<PathBuf> = host
        .fs
        .read_dir(dir)
        .into_iter()
        .filter(|e| e.name.starts_with("libnvvm.so"))
        .map(|e| e.path)
        .collect();
    files.sort();
    files.into_iter().next()
}

fn find_nvvm(
    host: &Host,
    prefix: &Path,
    dists: &[(String, String, PathBuf)],
    looked: &mut Vec<String>,
) -> Option<Nvvm> {
    let mut at = |dir: PathBuf, cuda: Option<String>, via: &str| {
        looked.push(dir.display().to_string());
        // After links ("/usr/local/cuda" -> "/usr/local/cuda-12.5"), so that the toolkit
        // holding it can be found by its path.
        let dir = host.fs.canonical(&dir, true).unwrap_or(dir);
        libnvvm_in(host, &dir).map(|path| Nvvm {
            path: path.display().to_string(),
            cuda,
            found_via: via.to_string(),
        })
    };
    // numba-cuda looks in pip wheels from 0.9 on ("NVIDIA NVCC Wheel" in its cuda_paths.py);
    // numba's built-in target and numba-cuda before 0.9 never do.
    let wheels_seen = dists
        .iter()
        .find(|(n, _, _)| n == "numba-cuda")
        .is_some_and(|(_, v, _)| crate::version::compare(v, "0.9.0").is_ge());
    for (wheel, folder) in NVVM_WHEELS.iter().filter(|_| wheels_seen) {
        if let Some((_, version, site)) = dists.iter().find(|(n, _, _)| n == wheel)
            && let Some(found) = at(
                site.join(folder),
                Some(version.clone()),
                &format!("pip {wheel}"),
            )
        {
            return Some(found);
        }
    }
    if host.fs.is_dir(prefix.join("conda-meta")) {
        let record = conda_nvvm_record(host, prefix);
        let cuda = record.as_ref().map(|(_, v)| v.clone());
        let via = format!(
            "conda {}",
            record.as_ref().map_or("environment", |(n, _)| n.as_str())
        );
        for dir in [prefix.join("nvvm/lib64"), prefix.join("lib")] {
            if let Some(found) = at(dir, cuda.clone(), &via) {
                return Some(found);
            }
        }
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(home) = host.env.path(var)
            && let Some(found) = at(home.join("nvvm/lib64"), None, var)
        {
            return Some(found);
        }
    }
    if let Some(found) = at(
        PathBuf::from("/usr/local/cuda/nvvm/lib64"),
        None,
        "/usr/local/cuda",
    ) {
        return Some(found);
    }
    let mut dirs = host.env.path_list("LD_LIBRARY_PATH");
    dirs.extend(LOADER_DIRS.iter().map(PathBuf::from));
    dirs.into_iter().find_map(|dir| at(dir, None, "loader"))
}

/// The conda record (name, version) that names the CUDA release of a conda environment's
/// libNVVM.
fn conda_nvvm_record(host: &Host, prefix: &Path) -> Option<(String, String)> {
    let records: Vec<(String, String)> = host
        .fs
        .read_dir(prefix.join("conda-meta"))
        .into_iter()
        .filter_map(|e| {
            let stem = e.name.strip_suffix(".json")?;
            let mut parts = stem.rsplitn(3, '-');
            let (_build, version, name) = (parts.next()?, parts.next()?, parts.next()?);
            Some((name.to_string(), version.to_string()))
        })
        .collect();
    NVVM_CONDA
        .iter()
        .find_map(|want| records.iter().find(|(n, _)| n == want).cloned())
}

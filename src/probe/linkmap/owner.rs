//! Who installed a library file, independent of where the loader ranks it: a pip wheel (its
//! RECORD, else the wheel layout), a conda package (`conda-meta`), a CUDA toolkit, a framework's
//! own folder, a Debian package (`/var/lib/dpkg/info/*.list`), the driver, or nobody we know.
//!
//! Each RECORD, conda-meta record and dpkg list is read at most once per scan, and only those
//! whose names say they could hold a CUDA library.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use crate::framework::FrameworkName;
use crate::host::Host;
use crate::report::{EnvKind, LibraryOwner, OwnerKind, PythonEnv, Toolkit};

/// Words in a package name that mark it as possibly holding a CUDA library.
const HINTS: [&str; 16] = [
    "cudnn",
    "nccl",
    "cublas",
    "cuda",
    "nvjitlink",
    "nvrtc",
    "cusparse",
    "cufft",
    "cusolver",
    "curand",
    "cupti",
    "cufile",
    "nvshmem",
    "nvinfer",
    "tensorrt",
    "libnv",
];

/// The pip wheel that ships each family, without its `-cu12`/`-cu13` suffix.
fn wheel_prefix(family: &str) -> Option<&'static str> {
    Some(match family {
        "cudart" => "nvidia-cuda-runtime",
        "cublas" => "nvidia-cublas",
        "cudnn" => "nvidia-cudnn",
        "nccl" => "nvidia-nccl",
        "nvjitlink" => "nvidia-nvjitlink",
        "nvrtc" => "nvidia-cuda-nvrtc",
        "cusparse" => "nvidia-cusparse",
        "cusparselt" => "nvidia-cusparselt",
        "cufft" => "nvidia-cufft",
        "cusolver" => "nvidia-cusolver",
        "curand" => "nvidia-curand",
        "cupti" => "nvidia-cuda-cupti",
        "cufile" => "nvidia-cufile",
        "nvshmem" => "nvidia-nvshmem",
        "tensorrt" => "tensorrt",
        _ => return None,
    })
}

fn hinted(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    HINTS.iter().any(|h| lower.contains(h))
}

/// `a/b/../c` → `a/c`, without touching the disk.
pub(crate) fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// One conda-meta record: package, version, the record's text.
type CondaRecord = (String, String, String);

/// What is known about the machine's installs, read once.
pub(crate) struct Owners<'a> {
    host: &'a Host,
    envs: &'a [PythonEnv],
    toolkits: &'a [Toolkit],
    /// Library file (as RECORD names it, below its site folder) → (dist, version).
    records: HashMap<PathBuf, (String, String)>,
    /// dpkg lists already read: (package, contents).
    dpkg: Mutex<Option<Vec<(String, String)>>>,
    /// conda-meta records already read, per prefix.
    conda: Mutex<HashMap<PathBuf, Vec<CondaRecord>>>,
}

impl<'a> Owners<'a> {
    #[must_use]
    pub(crate) fn new(
        host: &'a Host,
        envs: &'a [PythonEnv],
        toolkits: &'a [Toolkit],
    ) -> Owners<'a> {
        let mut records = HashMap::new();
        for env in envs {
            for site in &env.site_packages {
                for e in host.fs.read_dir(site) {
                    let Some(dist) = e.name.strip_suffix(".dist-info") else {
                        continue;
                    };
                    let Some((name, version)) = crate::parse::python_pkg::dist_info_name(&e.name)
                    else {
                        continue;
                    };
                    if !(name.starts_with("nvidia-") || name.starts_with("tensorrt")) {
                        continue;
                    }
                    let _ = dist;
                    let Some(record) = host.fs.read_opt(e.path.join("RECORD")) else {
                        continue;
                    };
                    for line in record.lines() {
                        let file = line.split(',').next().unwrap_or_default();
                        if file.contains(".so") && !file.starts_with('/') {
                            records.insert(
                                lexical(&Path::new(site).join(file)),
                                (name.clone(), version.clone()),
                            );
                        }
                    }
                }
            }
        }
        Owners {
            host,
            envs,
            toolkits,
            records,
            dpkg: Mutex::new(None),
            conda: Mutex::new(HashMap::new()),
        }
    }

    /// The owner of `path` (as found) whose links lead to `canonical`.
    #[must_use]
    pub(crate) fn of(&self, path: &Path, canonical: &Path, family: &str) -> LibraryOwner {
        for p in [lexical(path), canonical.to_path_buf()] {
            if let Some((name, version)) = self.records.get(&p) {
                return owner(OwnerKind::Pip, Some(name), Some(version), "RECORD");
            }
        }
        for env in self.envs {
            for site in &env.site_packages {
                let site = Path::new(site);
                for p in [lexical(path), canonical.to_path_buf()] {
                    if let Ok(rest) = p.strip_prefix(site) {
                        return self.in_site(env, rest, family);
                    }
                }
            }
        }
        for t in self.toolkits {
            if canonical.starts_with(&t.path) || lexical(path).starts_with(&t.path) {
                let name = Path::new(&t.path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned());
                return owner(
                    OwnerKind::Toolkit,
                    name.as_deref(),
                    t.version.as_deref(),
                    "folder",
                );
            }
        }
        // A toolkit folder not recognised as a toolkit (no nvcc, no version file).
        if let Ok(rest) = canonical.strip_prefix("/usr/local")
            && let Some(first) = rest.components().next()
        {
            let name = first.as_os_str().to_string_lossy();
            if name.starts_with("cuda") {
                return owner(OwnerKind::Toolkit, Some(&name), None, "folder");
            }
        }
        for env in self.envs.iter().filter(|e| e.kind == EnvKind::Conda) {
            if canonical.starts_with(&env.path) {
                if let Some((name, version)) = self.conda_owner(Path::new(&env.path), canonical) {
                    return owner(OwnerKind::Conda, Some(&name), Some(&version), "conda-meta");
                }
                return owner(OwnerKind::Conda, None, None, "folder");
            }
        }
        if let Some(package) = self.dpkg_owner(path, canonical) {
            return owner(OwnerKind::Dpkg, Some(&package), None, "dpkg");
        }
        if canonical.starts_with("/usr/local/nvidia") {
            return owner(OwnerKind::Driver, None, None, "folder");
        }
        owner(OwnerKind::System, None, None, "folder")
    }

    fn in_site(&self, env: &PythonEnv, rest: &Path, family: &str) -> LibraryOwner {
        let parts: Vec<String> = rest
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let first = parts.first().map(String::as_str).unwrap_or_default();
        if first == "nvidia" || first == "tensorrt_libs" {
            // RECORD is missing: the layout says which wheel. CUDA 12 wheels use
            // `nvidia/<component>/lib`; the CUDA 13 ones share `nvidia/cu13/lib`.
            let wheel = wheel_prefix(family).and_then(|prefix| {
                env.nvidia_wheels
                    .iter()
                    .find(|w| w.name.starts_with(prefix))
                    .map(|w| (w.name.clone(), Some(w.version.clone())))
                    .or_else(|| Some((prefix.to_string(), None)))
            });
            return match wheel {
                Some((name, version)) => owner(
                    OwnerKind::Pip,
                    Some(&name),
                    version.as_deref(),
                    "wheel-layout",
                ),
                None => owner(OwnerKind::Pip, None, None, "wheel-layout"),
            };
        }
        let fw = env
            .frameworks
            .iter()
            .find(|f| first == f.name || (first == "jaxlib" && f.name == FrameworkName::Jax));
        owner(
            OwnerKind::Bundled,
            Some(first),
            fw.and_then(|f| f.version.as_deref()),
            "folder",
        )
    }

    fn conda_owner(&self, prefix: &Path, canonical: &Path) -> Option<(String, String)> {
        let rel = canonical.strip_prefix(prefix).ok()?.display().to_string();
        let Ok(mut cache) = self.conda.lock() else {
            return None;
        };
        let records = cache.entry(prefix.to_path_buf()).or_insert_with(|| {
            self.host
                .fs
                .read_dir(prefix.join("conda-meta"))
                .into_iter()
                .filter(|e| e.name.ends_with(".json") && hinted(&e.name))
                .filter_map(|e| {
                    let stem = e.name.strip_suffix(".json")?;
                    let mut it = stem.rsplitn(3, '-');
                    let _build = it.next()?;
                    let version = it.next()?.to_string();
                    let name = it.next()?.to_string();
                    let text = self.host.fs.read_opt(&e.path)?;
                    Some((name, version, text))
                })
                .collect()
        });
        records
            .iter()
            .find(|(_, _, text)| text.contains(&format!("\"{rel}\"")))
            .map(|(n, v, _)| (n.clone(), v.clone()))
    }

    fn dpkg_owner(&self, path: &Path, canonical: &Path) -> Option<String> {
        let Ok(mut cache) = self.dpkg.lock() else {
            return None;
        };
        let lists = cache.get_or_insert_with(|| {
            self.host
                .fs
                .read_dir("/var/lib/dpkg/info")
                .into_iter()
                .filter(|e| e.name.ends_with(".list") && hinted(&e.name))
                .filter_map(|e| {
                    let name = e.name.strip_suffix(".list")?;
                    let name = name.split(':').next().unwrap_or(name).to_string();
                    Some((name, self.host.fs.read_opt(&e.path)?))
                })
                .collect()
        });
        let wanted = [path.display().to_string(), canonical.display().to_string()];
        lists
            .iter()
            .find(|(_, text)| text.lines().any(|l| wanted.iter().any(|w| w == l)))
            .map(|(n, _)| n.clone())
    }
}

fn owner(
    kind: OwnerKind,
    package: Option<&str>,
    version: Option<&str>,
    source: &str,
) -> LibraryOwner {
    LibraryOwner {
        kind,
        package: package.map(str::to_string),
        version: version.map(str::to_string),
        source: source.to_string(),
    }
}

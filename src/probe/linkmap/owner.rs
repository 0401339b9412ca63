//! Who installed a library file, independent of where the loader ranks it: a pip wheel (its
//! RECORD, else the wheel layout), a conda package (`conda-meta`), a CUDA toolkit, a framework's
//! own folder, a Debian package (`/var/lib/dpkg/info/*.list`), the driver, or nobody we know.
//!
//! Each RECORD, conda-meta record and dpkg list is read at most once per scan, and only those
//! whose names say they could hold a CUDA library. Memory is bounded by bytes, not by the scan's
//! time: a dpkg list or conda-meta record is read one at a time, at most [`FILE_LIMIT`] bytes,
//! [`READ_LIMIT`] bytes in all of each kind; only the library paths it names are kept, at most
//! [`KEPT_LIMIT`] bytes of them, and the text is dropped. What lies past a limit is not known,
//! and the cut is noted.

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use crate::framework::FrameworkName;
use crate::host::Host;
use crate::report::{EnvKind, LibraryOwner, OwnerKind, PythonEnv, Toolkit};

/// The most bytes of one dpkg list or conda-meta record read (a real one is tens of kB).
const FILE_LIMIT: u64 = 2 * 1024 * 1024;
/// The most bytes read of dpkg lists, and of conda-meta records, in one scan.
const READ_LIMIT: u64 = 256 * 1024 * 1024;
/// The most bytes of library paths kept from dpkg lists, and from conda-meta records.
const KEPT_LIMIT: usize = 16 * 1024 * 1024;

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

/// The library paths a kind of package list names, each with the first package naming it, read
/// within the byte limits.
#[derive(Default)]
struct Index {
    /// Packages, in the order their lists were read: (name, version).
    packages: Vec<(String, String)>,
    /// A library path → its first package in `packages`.
    paths: HashMap<String, usize>,
    read: u64,
    kept: usize,
    /// A limit was reached: the rest was not read (or not kept).
    full: bool,
}

impl Index {
    /// Reads `path` (a list of package `name` at `version`), keeping each library path that
    /// `paths_in` finds in its text; false once a limit is reached.
    fn add(
        &mut self,
        host: &Host,
        path: &Path,
        package: (String, String),
        paths_in: impl Fn(&str) -> Vec<String>,
    ) -> bool {
        if self.full {
            return false;
        }
        let limit = FILE_LIMIT.min(READ_LIMIT.saturating_sub(self.read));
        let Ok(bytes) = host.fs.read_bytes_limited(path, limit) else {
            return true;
        };
        self.read += bytes.len() as u64;
        let text = String::from_utf8_lossy(&bytes);
        let at = self.packages.len();
        self.packages.push(package);
        for p in paths_in(&text) {
            if self.kept + p.len() > KEPT_LIMIT {
                self.full = true;
                break;
            }
            if !self.paths.contains_key(&p) {
                self.kept += p.len();
                self.paths.insert(p, at);
            }
        }
        if self.read >= READ_LIMIT {
            self.full = true;
        }
        if self.full {
            host.fs.note_cut(
                path,
                &format!(
                    "library owners: read {} bytes of package lists and kept {} bytes of paths; the rest was not read",
                    self.read, self.kept
                ),
            );
        }
        !self.full
    }

    /// The package of the first list naming any of `wanted`.
    fn owner(&self, wanted: &[&str]) -> Option<&(String, String)> {
        let at = wanted.iter().filter_map(|w| self.paths.get(*w)).min()?;
        self.packages.get(*at)
    }
}

/// The library paths a dpkg list names: its lines that could be a shared library.
fn dpkg_paths(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.contains(".so"))
        .map(str::to_string)
        .collect()
}

/// The library paths a conda-meta record of environment `prefix` names: its JSON strings that
/// could be a shared library (a path relative to the prefix), each kept as `prefix\0path` so
/// one index serves every environment.
fn conda_paths(prefix: &str, text: &str) -> Vec<String> {
    text.split('"')
        .skip(1)
        .step_by(2)
        .filter(|s| s.contains(".so"))
        .map(|s| format!("{prefix}\0{s}"))
        .collect()
}

/// What is known about the machine's installs, read once.
pub(crate) struct Owners<'a> {
    host: &'a Host,
    envs: &'a [PythonEnv],
    toolkits: &'a [Toolkit],
    /// Library file (as RECORD names it, below its site folder) → (dist, version).
    records: HashMap<PathBuf, (String, String)>,
    /// The library paths of the dpkg lists, read at the first lookup.
    dpkg: Mutex<Option<Index>>,
    /// The library paths of each prefix's conda-meta records (one byte budget for all), and
    /// the prefixes read.
    conda: Mutex<(Index, HashSet<PathBuf>)>,
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
            conda: Mutex::new((Index::default(), HashSet::new())),
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
        let (index, read) = &mut *cache;
        if read.insert(prefix.to_path_buf()) {
            for e in self.host.fs.read_dir(prefix.join("conda-meta")) {
                if !(e.name.ends_with(".json") && hinted(&e.name)) {
                    continue;
                }
                let Some(stem) = e.name.strip_suffix(".json") else {
                    continue;
                };
                let mut it = stem.rsplitn(3, '-');
                let (Some(_build), Some(version), Some(name)) = (it.next(), it.next(), it.next())
                else {
                    continue;
                };
                let base = prefix.display().to_string();
                let package = (name.to_string(), version.to_string());
                if !index.add(self.host, &e.path, package, |text| conda_paths(&base, text)) {
                    break;
                }
            }
        }
        let key = format!("{}\0{rel}", prefix.display());
        index.owner(&[&key]).cloned()
    }

    fn dpkg_owner(&self, path: &Path, canonical: &Path) -> Option<String> {
        let Ok(mut cache) = self.dpkg.lock() else {
            return None;
        };
        let index = cache.get_or_insert_with(|| {
            let mut index = Index::default();
            for e in self.host.fs.read_dir("/var/lib/dpkg/info") {
                if !(e.name.ends_with(".list") && hinted(&e.name)) {
                    continue;
                }
                let Some(name) = e.name.strip_suffix(".list") else {
                    continue;
                };
                let name = name.split(':').next().unwrap_or(name).to_string();
                if !index.add(self.host, &e.path, (name, String::new()), dpkg_paths) {
                    break;
                }
            }
            index
        });
        let wanted = [path.display().to_string(), canonical.display().to_string()];
        index
            .owner(&[&wanted[0], &wanted[1]])
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

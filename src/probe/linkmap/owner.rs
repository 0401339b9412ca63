//! Who installed a library file, independent of where the loader ranks it: a pip wheel (its
//! RECORD, else the wheel layout), a conda package (`conda-meta`), a CUDA toolkit, a framework's
//! own folder, a Debian package (`/var/lib/dpkg/info/*.list`), the driver, or nobody we know.
//!
//! Each RECORD, conda-meta record and dpkg list is read at most once per scan, and only those
//! whose names say they could hold a CUDA library. Memory is bounded by bytes and by the files
//! asked about, not by what the lists hold: an owner a RECORD, a dpkg list or a conda-meta
//! record may give is answered after every framework is modelled ([`Owners::settle`]), by one
//! pass over each kind that reads the lists one at a time, at most [`FILE_LIMIT`] bytes each
//! and [`READ_LIMIT`] bytes in all of each kind, and searches each for the files asked about
//! while it is read: only the answers are kept, and the text is dropped. A flood of lists read
//! before the real owner's therefore cannot push its answer out; only the byte caps can cut the
//! search, and the cut is noted.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use crate::framework::FrameworkName;
use crate::host::Host;
use crate::report::{EnvKind, FrameworkLoads, LibraryOwner, OwnerKind, PythonEnv, Toolkit};

/// The most bytes of one dpkg list or conda-meta record read (a real one is tens of kB).
const FILE_LIMIT: u64 = 2 * 1024 * 1024;
/// The most bytes read of wheel RECORDs, of dpkg lists and of conda-meta records, in one scan.
const READ_LIMIT: u64 = 256 * 1024 * 1024;

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

/// How a kind of package list names its files.
#[derive(Clone, Copy)]
enum Shape {
    /// A dpkg list: one absolute path a line.
    Lines,
    /// A conda-meta record: JSON whose strings name the files (relative to the prefix).
    JsonStrings,
}

impl Shape {
    /// Calls `f` with each name in `text` that could be a shared library.
    fn names<'t>(self, text: &'t str, mut f: impl FnMut(&'t str)) {
        match self {
            Shape::Lines => text.lines().filter(|l| l.contains(".so")).for_each(&mut f),
            Shape::JsonStrings => text
                .split('"')
                .skip(1)
                .step_by(2)
                .filter(|s| s.contains(".so"))
                .for_each(&mut f),
        }
    }
}

/// A search of one kind of package list for the files asked about, within one byte budget.
struct Search<'h> {
    host: &'h Host,
    /// What is read, for the note of a cut ("package lists", "wheel RECORDs").
    what: &'static str,
    read: u64,
    /// The byte budget was spent: no more lists are read.
    spent: bool,
}

impl<'h> Search<'h> {
    fn new(host: &'h Host, what: &'static str) -> Search<'h> {
        Search {
            host,
            what,
            read: 0,
            spent: false,
        }
    }

    /// Reads `lists` (a list's path and its package) in order, one at a time, and gives each
    /// name in `wanted` the package of the first list naming it; stops once every one is
    /// named or the budget is spent (the cut noted on the list where it happened).
    fn first_naming<P>(
        &mut self,
        lists: impl IntoIterator<Item = (PathBuf, P)>,
        shape: Shape,
        wanted: &HashSet<&str>,
    ) -> HashMap<String, P>
    where
        P: Clone,
    {
        let mut found: HashMap<String, P> = HashMap::new();
        for (path, package) in lists {
            if found.len() == wanted.len() {
                break;
            }
            let Some(bytes) = self.read(&path) else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes);
            shape.names(&text, |name| {
                if wanted.contains(name) && !found.contains_key(name) {
                    found.insert(name.to_string(), package.clone());
                }
            });
        }
        found
    }

    /// One list, at most [`FILE_LIMIT`] bytes and what is left of the budget; `None` once the
    /// budget is spent (the cut noted on the list that spent it) or when it cannot be read.
    fn read(&mut self, path: &Path) -> Option<Vec<u8>> {
        if self.spent {
            return None;
        }
        let limit = FILE_LIMIT.min(READ_LIMIT.saturating_sub(self.read));
        let bytes = self.host.fs.read_bytes_limited(path, limit).ok()?;
        self.read += bytes.len() as u64;
        if self.read >= READ_LIMIT {
            self.spent = true;
            self.host.fs.note_cut(
                path,
                &format!(
                    "library owners: read {} bytes of {}; the rest was not read",
                    self.read, self.what
                ),
            );
        }
        Some(bytes)
    }
}

/// An owner answered once every framework is modelled, by a search of package lists.
enum Pending {
    /// The dpkg list naming the file as found (normalised) or after its links.
    Dpkg { path: String, canonical: String },
    /// The conda-meta record of the environment at `prefix` naming `rel`, the file after its
    /// links below the prefix.
    Conda { prefix: PathBuf, rel: String },
}

/// The answers of the searches: a file a wheel's RECORD names → (dist, version); a dpkg file
/// → (the rank of the first list naming it, its package); (conda prefix, file) → (name,
/// version).
#[derive(Default)]
struct Answers {
    records: HashMap<PathBuf, (String, String)>,
    dpkg: HashMap<String, (usize, String)>,
    conda: HashMap<(PathBuf, String), (String, String)>,
}

/// What is known about the machine's installs, read once.
pub(crate) struct Owners<'a> {
    host: &'a Host,
    envs: &'a [PythonEnv],
    toolkits: &'a [Toolkit],
    /// The RECORDs of the CUDA wheels: (site folder, RECORD, (dist, version)), in the order
    /// read (a later one naming a file wins, as pip's last install does).
    records: Vec<(PathBuf, PathBuf, (String, String))>,
    /// Every file asked about (as found, normalised) → the file after its links: a RECORD
    /// naming either owns it, whatever its folder says.
    asked: Mutex<HashMap<PathBuf, PathBuf>>,
    /// Lookups waiting for a package list, by the file as found (normalised), with the file
    /// after its links.
    pending: Mutex<HashMap<PathBuf, (PathBuf, Pending)>>,
}

impl<'a> Owners<'a> {
    #[must_use]
    pub(crate) fn new(
        host: &'a Host,
        envs: &'a [PythonEnv],
        toolkits: &'a [Toolkit],
    ) -> Owners<'a> {
        let mut records = Vec::new();
        for env in envs {
            for site in &env.site_packages {
                for e in host.fs.read_dir(site) {
                    if !e.name.ends_with(".dist-info") {
                        continue;
                    }
                    let Some((name, version)) = crate::parse::python_pkg::dist_info_name(&e.name)
                    else {
                        continue;
                    };
                    if name.starts_with("nvidia-") || name.starts_with("tensorrt") {
                        let record = e.path.join("RECORD");
                        records.push((PathBuf::from(site), record, (name, version)));
                    }
                }
            }
        }
        Owners {
            host,
            envs,
            toolkits,
            records,
            asked: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// The owner of `path` (as found) whose links lead to `canonical`.
    #[must_use]
    pub(crate) fn of(&self, path: &Path, canonical: &Path, family: &str) -> LibraryOwner {
        if !self.records.is_empty()
            && let Ok(mut asked) = self.asked.lock()
        {
            asked
                .entry(lexical(path))
                .or_insert_with(|| canonical.to_path_buf());
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
            if let Ok(rel) = canonical.strip_prefix(&env.path) {
                let rel = rel.display().to_string();
                let prefix = PathBuf::from(&env.path);
                self.wait(path, canonical, Pending::Conda { prefix, rel });
                return owner(OwnerKind::Conda, None, None, "folder");
            }
        }
        let (found, canonical_text) = (lexical(path), canonical.display().to_string());
        let path_text = found.display().to_string();
        self.wait(
            path,
            canonical,
            Pending::Dpkg {
                path: path_text,
                canonical: canonical_text,
            },
        );
        if canonical.starts_with("/usr/local/nvidia") {
            return owner(OwnerKind::Driver, None, None, "folder");
        }
        owner(OwnerKind::System, None, None, "folder")
    }

    /// Notes a lookup a package list may answer; [`Owners::settle`] answers it.
    fn wait(&self, path: &Path, canonical: &Path, pending: Pending) {
        if let Ok(mut waiting) = self.pending.lock() {
            waiting
                .entry(lexical(path))
                .or_insert_with(|| (canonical.to_path_buf(), pending));
        }
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

    /// Answers the lookups that wait for a package list, with one search of each kind, and
    /// puts the owners found (and the versions they give) into `loads` in place of the
    /// owner given while modelling ("conda" or "system"/"driver" from the folder).
    pub(crate) fn settle(&self, loads: &mut [FrameworkLoads]) {
        let (asked, pending) = (take(&self.asked), take(&self.pending));
        if asked.is_empty() && pending.is_empty() {
            return;
        }
        let mut answers = self.search(&pending);
        answers.records = self.search_records(&asked);
        let answer = |path: &str, given: &LibraryOwner| -> Option<(LibraryOwner, &PathBuf)> {
            let found = lexical(Path::new(path));
            if let Some(canonical) = asked.get(&found)
                && let Some((name, version)) = [&found, canonical]
                    .into_iter()
                    .find_map(|p| answers.records.get(p))
            {
                let by_record = owner(OwnerKind::Pip, Some(name), Some(version), "RECORD");
                return Some((by_record, canonical));
            }
            let (canonical, wait) = pending.get(&found)?;
            let by_list = match wait {
                Pending::Dpkg { path, canonical } => {
                    let first = [path, canonical]
                        .into_iter()
                        .filter_map(|p| answers.dpkg.get(p))
                        .min_by_key(|(rank, _)| *rank)?;
                    let from_folder = matches!(given.kind, OwnerKind::System | OwnerKind::Driver);
                    (from_folder && given.source == "folder")
                        .then(|| owner(OwnerKind::Dpkg, Some(&first.1), None, "dpkg"))
                }
                Pending::Conda { prefix, rel } => {
                    let (name, version) = answers.conda.get(&(prefix.clone(), rel.clone()))?;
                    let from_folder = given.kind == OwnerKind::Conda && given.source == "folder";
                    from_folder
                        .then(|| owner(OwnerKind::Conda, Some(name), Some(version), "conda-meta"))
                }
            }?;
            Some((by_list, canonical))
        };
        for framework in loads {
            for load in &mut framework.libraries {
                if let (Some(path), Some(given)) = (&load.path, &load.owner)
                    && let Some((found, canonical)) = answer(path, given)
                {
                    load.version = super::version_of(canonical, &found);
                    load.owner = Some(found);
                }
                for other in &mut load.others {
                    if let Some((found, canonical)) = answer(&other.path, &other.owner) {
                        other.version = super::version_of(canonical, &found);
                        other.owner = found;
                    }
                }
            }
        }
    }

    /// Searches the CUDA wheels' RECORDs (within their own byte budget) for the files asked
    /// about: each file named → the last wheel naming it.
    fn search_records(
        &self,
        asked: &HashMap<PathBuf, PathBuf>,
    ) -> HashMap<PathBuf, (String, String)> {
        let wanted: HashSet<&Path> = asked
            .iter()
            .flat_map(|(found, canonical)| [found.as_path(), canonical.as_path()])
            .collect();
        let mut found = HashMap::new();
        let mut search = Search::new(self.host, "wheel RECORDs");
        for (site, record, package) in &self.records {
            let Some(bytes) = search.read(record) else {
                continue;
            };
            for line in String::from_utf8_lossy(&bytes).lines() {
                let file = line.split(',').next().unwrap_or_default();
                if file.contains(".so") && !file.starts_with('/') {
                    let path = lexical(&site.join(file));
                    if wanted.contains(path.as_path()) {
                        found.insert(path, package.clone());
                    }
                }
            }
        }
        found
    }

    /// Searches the dpkg lists and each conda prefix's conda-meta records (one byte budget for
    /// all prefixes) for the files waiting for an owner.
    fn search(&self, pending: &HashMap<PathBuf, (PathBuf, Pending)>) -> Answers {
        let mut answers = Answers::default();
        let mut dpkg_wanted: HashSet<&str> = HashSet::new();
        let mut conda_wanted: BTreeMap<&Path, HashSet<&str>> = BTreeMap::new();
        for (_, wait) in pending.values() {
            match wait {
                Pending::Dpkg { path, canonical } => {
                    dpkg_wanted.insert(path);
                    dpkg_wanted.insert(canonical);
                }
                Pending::Conda { prefix, rel } => {
                    conda_wanted.entry(prefix).or_default().insert(rel);
                }
            }
        }
        if !dpkg_wanted.is_empty() {
            let lists = self
                .host
                .fs
                // A big machine's folder holds more files than one listing keeps: only the
                // lists worth reading count toward that cap.
                .read_dir_matching("/var/lib/dpkg/info", |n| n.ends_with(".list") && hinted(n))
                .into_iter()
                .filter_map(|e| {
                    let name = e.name.strip_suffix(".list")?;
                    let name = name.split(':').next().unwrap_or(name).to_string();
                    Some((e.path, name))
                })
                .enumerate()
                .map(|(rank, (path, name))| (path, (rank, name)));
            answers.dpkg = Search::new(self.host, "package lists").first_naming(
                lists,
                Shape::Lines,
                &dpkg_wanted,
            );
        }
        let mut search = Search::new(self.host, "conda-meta records");
        for (prefix, wanted) in conda_wanted {
            let records = self
                .host
                .fs
                .read_dir(prefix.join("conda-meta"))
                .into_iter()
                .filter(|e| e.name.ends_with(".json") && hinted(&e.name))
                .filter_map(|e| {
                    let stem = e.name.strip_suffix(".json")?;
                    let mut it = stem.rsplitn(3, '-');
                    let (_build, version, name) = (it.next()?, it.next()?, it.next()?);
                    Some((e.path, (name.to_string(), version.to_string())))
                });
            for (rel, package) in search.first_naming(records, Shape::JsonStrings, &wanted) {
                answers.conda.insert((prefix.to_path_buf(), rel), package);
            }
        }
        answers
    }
}

/// What a shared map holds, leaving it empty.
fn take<V>(map: &Mutex<HashMap<PathBuf, V>>) -> HashMap<PathBuf, V> {
    map.lock()
        .map(|mut m| std::mem::take(&mut *m))
        .unwrap_or_default()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::env::Env;
    use crate::report::{LibraryLoad, LosingCopy};

    fn write(root: &Path, path: &str, text: &str) {
        let at = root.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, text).unwrap();
    }

    /// A list of `lines` library paths none of which is asked about (about 2 MiB at 36,000).
    fn flood(i: usize, lines: usize, quoted: bool) -> String {
        (0..lines)
            .map(|j| {
                let file = format!("lib/libflood_{i:03}_{j:07}.so.12");
                if quoted {
                    format!("\"{file}\",\n")
                } else {
                    format!("/usr/{file}\n")
                }
            })
            .collect()
    }

    /// One framework loading `path` (its owner as `of` gave it), with `other` losing.
    fn loads(owners: &Owners, path: &str, canonical: &str, other: &str) -> Vec<FrameworkLoads> {
        let owner = owners.of(Path::new(path), Path::new(canonical), "cublas");
        let other_owner = owners.of(Path::new(other), Path::new(other), "cublas");
        vec![FrameworkLoads {
            libraries: vec![LibraryLoad {
                path: Some(path.to_string()),
                owner: Some(owner),
                others: vec![LosingCopy {
                    path: other.to_string(),
                    owner: other_owner,
                    ..LosingCopy::default()
                }],
                ..LibraryLoad::default()
            }],
            ..FrameworkLoads::default()
        }]
    }

    /// Conda-meta records sorted before the owner's, naming 20 MiB of other libraries (more
    /// than the 16 MiB of paths once kept), do not hide it: the record naming the file after
    /// its links gives the package and the version.
    #[test]
    fn conda_records_read_before_the_owners_do_not_hide_it() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = "/opt/conda/envs/ml";
        for i in 0..10 {
            let files = flood(i, 58_000, true);
            write(
                dir.path(),
                &format!("{prefix}/conda-meta/cuda-flood-{i}-12.1-0.json"),
                &format!("{{\"files\": [{files}\"\"]}}"),
            );
        }
        write(
            dir.path(),
            &format!("{prefix}/conda-meta/libcublas-12.1.0.26-0.json"),
            r#"{"files": ["lib/libcublas.so.12", "lib/libcublas.so.12.1.0.26"]}"#,
        );
        let host = Host::rooted(
            dir.path(),
            Env::default(),
            std::time::Duration::from_secs(30),
        );
        let envs = [PythonEnv {
            path: prefix.to_string(),
            kind: EnvKind::Conda,
            ..PythonEnv::default()
        }];
        let owners = Owners::new(&host, &envs, &[]);
        let mut loads = loads(
            &owners,
            &format!("{prefix}/lib/libcublas.so.12"),
            &format!("{prefix}/lib/libcublas.so.12.1.0.26"),
            &format!("{prefix}/lib/libnothing.so.12"),
        );
        owners.settle(&mut loads);
        let load = &loads[0].libraries[0];
        assert_eq!(
            load.owner,
            Some(owner(
                OwnerKind::Conda,
                Some("libcublas"),
                Some("12.1.0.26"),
                "conda-meta"
            ))
        );
        assert_eq!(load.version.as_deref(), Some("12.1.0.26"));
        // A file no record names keeps the owner its folder gives.
        assert_eq!(
            load.others[0].owner,
            owner(OwnerKind::Conda, None, None, "folder")
        );
        assert!(host.fs.notes().is_empty(), "{:?}", host.fs.notes());
    }

    /// Wheel RECORDs read before the owner's (19 MiB of library paths) do not hide it, and a
    /// RECORD's answer stands over the wheel layout's.
    #[test]
    fn records_read_before_the_owners_do_not_hide_it() {
        let dir = tempfile::tempdir().unwrap();
        let site = "/venv/lib/python3.11/site-packages";
        for i in 0..10 {
            let files = flood(i, 36_000, false).replace(".so.12\n", ".so.12,sha256=x,1\n");
            let files = files.replace("/usr/lib/", "nvidia/flood/lib/");
            write(
                dir.path(),
                &format!("{site}/nvidia_aflood{i}_cu12-1.0.dist-info/RECORD"),
                &files,
            );
        }
        write(
            dir.path(),
            &format!("{site}/nvidia_cublas_cu12-12.4.5.8.dist-info/RECORD"),
            "nvidia/cublas/lib/libcublas.so.12,sha256=x,1\n",
        );
        let host = Host::rooted(
            dir.path(),
            Env::default(),
            std::time::Duration::from_secs(30),
        );
        let envs = [PythonEnv {
            path: "/venv".to_string(),
            site_packages: vec![site.to_string()],
            ..PythonEnv::default()
        }];
        let owners = Owners::new(&host, &envs, &[]);
        let cublas = format!("{site}/torch/lib/../../nvidia/cublas/lib/libcublas.so.12");
        let mut loads = loads(
            &owners,
            &cublas,
            &lexical(Path::new(&cublas)).display().to_string(),
            &format!("{site}/nvidia/cusparse/lib/libcusparse.so.12"),
        );
        owners.settle(&mut loads);
        let load = &loads[0].libraries[0];
        let by_record = owner(
            OwnerKind::Pip,
            Some("nvidia-cublas-cu12"),
            Some("12.4.5.8"),
            "RECORD",
        );
        assert_eq!(load.owner.as_ref(), Some(&by_record));
        assert_eq!(load.version.as_deref(), Some("12.4.5.8"));
        assert_eq!(load.others[0].owner.source, "wheel-layout");
        assert!(host.fs.notes().is_empty(), "{:?}", host.fs.notes());
    }

    /// The dpkg answer is the first list naming the file as found or after its links, as
    /// when the lists were indexed; a file no list names keeps the owner its folder gives.
    #[test]
    fn the_first_dpkg_list_naming_the_file_or_its_target_owns_it() {
        let dir = tempfile::tempdir().unwrap();
        let info = "/var/lib/dpkg/info";
        write(
            dir.path(),
            &format!("{info}/libcublas-a:amd64.list"),
            &format!("{}/usr/lib/libcublas.so.12\n", flood(0, 1_000, false)),
        );
        write(
            dir.path(),
            &format!("{info}/libcublas-b:amd64.list"),
            "/usr/lib/libcublas.so.12.1.0.26\n",
        );
        write(
            dir.path(),
            &format!("{info}/coreutils.list"),
            "/usr/lib/libcublas.so.12\n",
        );
        let host = Host::rooted(
            dir.path(),
            Env::default(),
            std::time::Duration::from_secs(30),
        );
        let owners = Owners::new(&host, &[], &[]);
        let mut loads = loads(
            &owners,
            "/usr/lib/x/../libcublas.so.12",
            "/usr/lib/libcublas.so.12.1.0.26",
            "/usr/local/nvidia/lib64/libcublas.so.12",
        );
        owners.settle(&mut loads);
        let load = &loads[0].libraries[0];
        assert_eq!(
            load.owner,
            Some(owner(OwnerKind::Dpkg, Some("libcublas-a"), None, "dpkg"))
        );
        assert_eq!(
            load.others[0].owner,
            owner(OwnerKind::Driver, None, None, "folder")
        );
    }
}

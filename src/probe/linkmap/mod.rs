//! Which copy of each CUDA library a framework's process maps, resolved the way glibc's ld.so
//! resolves it, without running anything: each framework's native modules' dynamic sections
//! (`DT_NEEDED`, `DT_RPATH`, `DT_RUNPATH`), then for every needed soname the loader's order —
//! `DT_RPATH` of the requester and the objects that pulled it in (only while none of them has a
//! `DT_RUNPATH`), `LD_LIBRARY_PATH`, the requester's `DT_RUNPATH` (`$ORIGIN`, `$LIB`,
//! `$PLATFORM` substituted), `/etc/ld.so.cache` (or the `ld.so.conf` folders when the cache is
//! missing or older than its configuration), then the default folders. A soname already in the
//! process is not looked up again (ld.so matches loaded objects by soname).
//!
//! Framework behaviour modelled here, beyond what the ELF files say:
//! - torch (`torch/__init__.py`, `_load_global_deps`): loads `torch/lib/libtorch_global_deps.so`
//!   first; only when that fails does `_preload_cuda_deps` load every `nvidia/<lib>/lib` copy by
//!   path (`via: "preload"`), after which those win over every search folder.
//! - cuDNN 9 loads its sub-libraries (`libcudnn_ops`, `libcudnn_engines_*`, ...) at run time,
//!   with `libcudnn.so.9` as the requester, so its `$ORIGIN` RUNPATH puts them beside it.
//! - JAX's CUDA plugin and TensorFlow load the CUDA libraries with `dlopen` by soname from
//!   their plugin module (its RUNPATH lists the `nvidia/*/lib` wheel folders).
//! - CuPy (13+, `cuda-pathfinder`) loads a library from the `nvidia/*/lib` wheel folders by path
//!   when the wheel is installed, else by soname.
//!
//! When a module is not a readable ELF file (a fixture's empty stand-in), the framework's
//! documented search path stands in for its RUNPATH and its needs come from the wheels beside
//! it and the CUDA/cuDNN versions it was built for (`basis: "model"`).

pub(crate) mod owner;
mod table;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use self::owner::{Owners, lexical};
use self::table::Table;
use super::loader::{LoaderPath, Origin};
use super::toolkit::LIB_DIRS;
use crate::host::Host;
use crate::parse::elf::{self, Dynamic};
use crate::parse::libfamily as family;
use crate::parse::libname::split_soname;
use crate::report::{
    Framework, FrameworkLoads, LibraryLoad, LibraryOwner, LosingCopy, PythonEnv, Toolkit,
};

/// Objects one framework's resolution may visit (a bound on a runaway dependency graph).
const MAX_OBJECTS: usize = 400;

/// The per-framework loads and the name of the soname table used.
#[must_use]
pub(crate) fn probe(
    host: &Host,
    loader: &LoaderPath,
    toolkits: &[Toolkit],
    envs: &[PythonEnv],
) -> (Vec<FrameworkLoads>, Option<String>) {
    let cuda_frameworks: Vec<(&PythonEnv, &Framework)> = envs
        .iter()
        .flat_map(|e| e.frameworks.iter().map(move |f| (e, f)))
        .filter(|(_, f)| f.variant.as_deref() != Some("cpu") && f.rocm.is_none())
        .collect();
    if cuda_frameworks.is_empty() {
        return (Vec::new(), None);
    }
    let table = Table::read(host, loader);
    let owners = Owners::new(host, envs, toolkits);
    let known = known_dirs(host, loader, toolkits, envs);
    let ld_library_path = host.env.path_list("LD_LIBRARY_PATH");
    let defaults: Vec<PathBuf> = loader
        .dirs
        .iter()
        .filter(|d| d.origin == Origin::Default)
        .map(|d| d.path.clone())
        .collect();
    let lib = if host.fs.is_dir("/lib/x86_64-linux-gnu") {
        "lib/x86_64-linux-gnu"
    } else {
        "lib64"
    };
    let ctx = || Ctx {
        host,
        ld_library_path: &ld_library_path,
        table: &table,
        defaults: &defaults,
        lib,
        elf: RefCell::new(HashMap::new()),
        listing: RefCell::new(HashMap::new()),
        canon: RefCell::new(HashMap::new()),
        owners: &owners,
        known: &known,
    };
    // A few threads share the frameworks: each reads its framework's own modules; the
    // tables are shared.
    let loads = super::in_parallel(&cuda_frameworks, |(env, fw)| ctx().framework(env, fw));
    (loads, Some(table.describe()))
}

/// The folders copies are looked for in, beyond a module's own search path.
fn known_dirs(
    host: &Host,
    loader: &LoaderPath,
    toolkits: &[Toolkit],
    envs: &[PythonEnv],
) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = loader.dirs.iter().map(|d| d.path.clone()).collect();
    for t in toolkits {
        out.extend(LIB_DIRS.iter().map(|s| Path::new(&t.path).join(s)));
    }
    // Toolkits not recognised as such (no nvcc, no version file) still hold libraries.
    for e in host.fs.read_dir("/usr/local") {
        if e.name.starts_with("cuda") {
            out.extend(LIB_DIRS.iter().map(|s| e.path.join(s)));
        }
    }
    for env in envs {
        for site in &env.site_packages {
            out.extend(wheel_dirs(host, Path::new(site)));
            out.push(Path::new(site).join("torch/lib"));
        }
        if env.kind == "conda" {
            out.push(Path::new(&env.path).join("lib"));
        }
    }
    out
}

/// `site/nvidia/*/lib` and `site/tensorrt_libs`, in name order (glob order).
fn wheel_dirs(host: &Host, site: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = host
        .fs
        .read_dir(site.join("nvidia"))
        .into_iter()
        .map(|e| e.path.join("lib"))
        .filter(|d| host.fs.is_dir(d))
        .collect();
    let trt = site.join("tensorrt_libs");
    if host.fs.is_dir(&trt) {
        out.push(trt);
    }
    out
}

/// One object in the modelled process.
struct Obj {
    /// As found (`.../torch/lib/../../nvidia/cudnn/lib/libcudnn.so.9`, normalised).
    path: PathBuf,
    dynamic: Option<Rc<Dynamic>>,
    /// The object whose need brought it in (ld.so's `l_loader`).
    parent: Option<usize>,
}

/// Where a needed name was found, and what else was looked at.
struct Found {
    path: Option<(PathBuf, &'static str)>,
    /// Every folder searched, in order, with why.
    searched: Vec<(PathBuf, &'static str)>,
    /// Files of that name in the searched folders after the winner.
    later: Vec<(PathBuf, &'static str)>,
}

struct Ctx<'a> {
    host: &'a Host,
    ld_library_path: &'a [PathBuf],
    table: &'a Table,
    defaults: &'a [PathBuf],
    lib: &'static str,
    elf: RefCell<HashMap<PathBuf, Option<Rc<Dynamic>>>>,
    /// Folder listings, read once: a name is looked for in a listing, not with a stat.
    listing: RefCell<HashMap<PathBuf, Rc<HashSet<String>>>>,
    /// Paths after links, resolved once.
    canon: RefCell<HashMap<PathBuf, PathBuf>>,
    owners: &'a Owners<'a>,
    known: &'a [PathBuf],
}

/// One framework's process being modelled.
struct Process {
    objs: Vec<Obj>,
    /// Names (soname and needed name) of the objects in the process.
    by_name: HashMap<String, usize>,
    loads: Vec<LibraryLoad>,
}

impl Ctx<'_> {
    /// A path after its links (inside the root), resolved once per scan.
    fn canonical(&self, path: &Path) -> PathBuf {
        if let Some(c) = self.canon.borrow().get(path) {
            return c.clone();
        }
        let c = self
            .host
            .fs
            .canonical(path, true)
            .unwrap_or_else(|_| path.to_path_buf());
        self.canon
            .borrow_mut()
            .insert(path.to_path_buf(), c.clone());
        c
    }

    /// The names in a folder (an unreadable folder has none).
    fn names(&self, dir: &Path) -> Rc<HashSet<String>> {
        if let Some(l) = self.listing.borrow().get(dir) {
            return l.clone();
        }
        let names: Rc<HashSet<String>> = Rc::new(
            self.host
                .fs
                .read_dir(dir)
                .into_iter()
                .map(|e| e.name)
                .collect(),
        );
        self.listing
            .borrow_mut()
            .insert(dir.to_path_buf(), names.clone());
        names
    }

    /// Whether `path` exists, through its folder's listing first (a stat only on a hit, for
    /// dangling links).
    fn exists(&self, path: &Path) -> bool {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str()))
        else {
            return false;
        };
        self.names(dir).contains(name) && {
            // A listed link may dangle: its target's folder must list the target.
            let c = self.canonical(path);
            match (c.parent(), c.file_name().and_then(|n| n.to_str())) {
                (Some(d), Some(n)) if c != path => self.names(d).contains(n),
                _ => true,
            }
        }
    }
    /// The dynamic section of a file, read once per scan.
    fn dynamic(&self, path: &Path) -> Option<Rc<Dynamic>> {
        let canonical = self.canonical(path);
        if let Some(d) = self.elf.borrow().get(&canonical) {
            return d.clone();
        }
        let parsed = self.host.fs.open_ranged(&canonical).ok().and_then(|f| {
            let mut read = |off: u64, len: usize| f.read_at(off, len);
            elf::parse(&mut read).map(Rc::new)
        });
        self.elf.borrow_mut().insert(canonical, parsed.clone());
        parsed
    }

    fn framework(&self, env: &PythonEnv, fw: &Framework) -> FrameworkLoads {
        let sites: Vec<PathBuf> = env.site_packages.iter().map(PathBuf::from).collect();
        let entries = entry_points(self.host, &sites, fw);
        let readable: Vec<(PathBuf, Rc<Dynamic>)> = entries
            .iter()
            .filter_map(|p| self.dynamic(p).map(|d| (p.clone(), d)))
            .collect();
        let basis = if readable.is_empty() { "model" } else { "elf" };
        let mut process = self.run(env, fw, &sites, &readable, &[]);
        // torch: when libtorch_global_deps.so cannot load its CUDA libraries, torch preloads
        // every nvidia wheel's copy by path and tries again (`_preload_cuda_deps`).
        if fw.name == "torch" && process.loads.iter().any(|l| l.path.is_none()) {
            let preloads = wheel_files(self.host, &sites);
            if !preloads.is_empty() {
                process = self.run(env, fw, &sites, &readable, &preloads);
            }
        }
        let mut libraries = process.loads;
        libraries.sort_by(|a, b| (&a.family, &a.soname).cmp(&(&b.family, &b.soname)));
        FrameworkLoads {
            env: env.path.clone(),
            framework: fw.name.clone(),
            basis: basis.to_string(),
            libraries,
        }
    }

    fn run(
        &self,
        env: &PythonEnv,
        fw: &Framework,
        sites: &[PathBuf],
        readable: &[(PathBuf, Rc<Dynamic>)],
        preloads: &[PathBuf],
    ) -> Process {
        let mut p = Process {
            objs: Vec::new(),
            by_name: HashMap::new(),
            loads: Vec::new(),
        };
        // Libraries the framework loads by path before its modules run, each with its own
        // needs mapped at once (as `dlopen` does): torch's fallback preload, JAX's
        // `_load_nvidia_libraries`.
        let mut plan: Vec<(PathBuf, &str)> = preloads
            .iter()
            .map(|p| (p.clone(), "torch/__init__.py (_preload_cuda_deps)"))
            .collect();
        if fw.name == "torch" {
            // torch loads NVRTC and cuSOLVER (used lazily) from the wheels by path with
            // ctypes; seen on the H200 with torch 2.11 (`LD_DEBUG=files`: "dynamically loaded
            // by .../_ctypes...so").
            plan.extend(
                wheel_files(self.host, sites)
                    .into_iter()
                    .filter(|f| {
                        f.file_name()
                            .and_then(|n| n.to_str())
                            .and_then(split_soname)
                            .is_some_and(|(stem, _)| matches!(stem, "libnvrtc" | "libcusolver"))
                    })
                    .map(|p| (p, "torch (loads NVRTC and cuSOLVER by path)")),
            );
        }
        if fw.name == "jax" {
            plan.extend(
                jax_preloads(self.host, sites)
                    .into_iter()
                    .map(|p| (p, "jax_plugins (_load_nvidia_libraries)")),
            );
        }
        let mut pre_queue: Vec<usize> = Vec::new();
        let mut pre_next = 0;
        for (path, label) in plan {
            let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
                continue;
            };
            if family::of(&name).is_none() || p.by_name.contains_key(&name) {
                continue;
            }
            let found = Found {
                path: Some((path.clone(), "preload")),
                searched: Vec::new(),
                later: Vec::new(),
            };
            if let Some(j) = self.record(&mut p, &name, label, None, &found, "preload") {
                pre_queue.push(j);
                self.drain(&mut p, &mut pre_queue, &mut pre_next);
            }
        }
        let mut queue: Vec<usize> = Vec::new();
        let mut next = 0;
        let first_module = p.objs.len();
        let requester = if readable.is_empty() {
            // Nothing readable: one stand-in module with the framework's documented search path.
            let module = entry_points(self.host, sites, fw)
                .into_iter()
                .next()
                .unwrap_or_else(|| sites.first().cloned().unwrap_or_default().join(&fw.name));
            let runpath = modelled_runpath(self.host, sites, fw);
            let dynamic = Dynamic {
                runpath: (!runpath.is_empty()).then(|| runpath.join(":")),
                ..Dynamic::default()
            };
            p.objs.push(Obj {
                path: module,
                dynamic: Some(Rc::new(dynamic)),
                parent: None,
            });
            first_module
        } else {
            // Each module as the framework loads it, one after another: a module already
            // mapped as another's dependency is not loaded again.
            for (path, dynamic) in readable {
                if dynamic
                    .soname
                    .as_ref()
                    .is_some_and(|s| p.by_name.contains_key(s))
                {
                    continue;
                }
                let i = p.objs.len();
                p.objs.push(Obj {
                    path: lexical(path),
                    dynamic: Some(dynamic.clone()),
                    parent: None,
                });
                if let Some(s) = &dynamic.soname {
                    p.by_name.insert(s.clone(), i);
                }
                queue.push(i);
                self.drain(&mut p, &mut queue, &mut next);
            }
            // The module that dlopens at run time: JAX's plugin, TF's framework library.
            p.objs
                .iter()
                .position(|o| {
                    let s = o.path.to_string_lossy();
                    s.contains("xla_cuda_plugin") || s.contains("libtensorflow_framework")
                })
                .unwrap_or(first_module)
                .min(p.objs.len().saturating_sub(1))
        };
        self.drain(&mut p, &mut queue, &mut next);
        // What the framework loads at run time by soname, or by path (CuPy's pathfinder).
        let by_path = fw.name == "cupy";
        // torch names every CUDA library in its modules' DT_NEEDED: nothing more to add when
        // those were read.
        let needs = if fw.name == "torch" && !readable.is_empty() {
            Vec::new()
        } else {
            runtime_needs(self.host, sites, fw, env)
        };
        for name in needs {
            if p.by_name.contains_key(&name) {
                continue;
            }
            if by_path
                && let Some(path) = wheel_files(self.host, sites)
                    .into_iter()
                    .find(|f| f.file_name().is_some_and(|n| n.to_string_lossy() == name))
            {
                let found = Found {
                    path: Some((path, "preload")),
                    searched: Vec::new(),
                    later: Vec::new(),
                };
                self.record(
                    &mut p,
                    &name,
                    "cuda-pathfinder (CuPy)",
                    None,
                    &found,
                    "preload",
                );
                continue;
            }
            if let Some(j) = self.load(&mut p, requester, &name, "dlopen") {
                queue.push(j);
            }
        }
        self.drain(&mut p, &mut queue, &mut next);
        p
    }

    /// Follows the needs of every object queued, breadth first, as ld.so maps them.
    fn drain(&self, p: &mut Process, queue: &mut Vec<usize>, next: &mut usize) {
        while *next < queue.len() && p.objs.len() < MAX_OBJECTS {
            let i = queue[*next];
            *next += 1;
            let needed = p.objs[i]
                .dynamic
                .as_ref()
                .map(|d| d.needed.clone())
                .unwrap_or_default();
            for name in needed {
                if let Some(j) = self.load(p, i, &name, "needed") {
                    queue.push(j);
                }
            }
            // cuDNN 9's front library loads its sub-libraries itself, as their requester.
            if is_cudnn_front(&p.objs[i].path) {
                for name in cudnn_sublibs(self.host, &p.objs[i].path) {
                    if let Some(j) = self.load(p, i, &name, "dlopen") {
                        queue.push(j);
                    }
                }
            }
        }
    }

    /// Resolves one need of object `i`; returns the new object's index when it was not
    /// loaded yet.
    fn load(&self, p: &mut Process, i: usize, name: &str, by: &'static str) -> Option<usize> {
        if p.by_name.contains_key(name) {
            return None;
        }
        let found = self.search(p, i, name);
        let needed_by = p.objs[i].path.display().to_string();
        self.record(p, name, &needed_by, Some(i), &found, by)
    }

    fn record(
        &self,
        p: &mut Process,
        name: &str,
        needed_by: &str,
        parent: Option<usize>,
        found: &Found,
        by: &str,
    ) -> Option<usize> {
        let family = family::of(name);
        let index = found.path.as_ref().map(|(path, _)| {
            let j = p.objs.len();
            let mut dynamic = if family.is_some() || in_site(path) {
                self.dynamic(path)
            } else {
                None
            };
            if dynamic.is_none() && is_cudnn_front(path) {
                // Unreadable (a stand-in): cuDNN's own `$ORIGIN` RUNPATH keeps its
                // sub-libraries beside it.
                dynamic = Some(Rc::new(Dynamic {
                    runpath: Some("$ORIGIN".to_string()),
                    ..Dynamic::default()
                }));
            }
            if let Some(s) = dynamic.as_ref().and_then(|d| d.soname.clone()) {
                p.by_name.entry(s).or_insert(j);
            }
            p.objs.push(Obj {
                path: path.clone(),
                dynamic,
                parent,
            });
            j
        });
        p.by_name
            .insert(name.to_string(), index.unwrap_or(usize::MAX));
        let Some(family) = family else {
            // Only CUDA libraries are reported, and followed further.
            return index.filter(|j| in_site(&p.objs[*j].path));
        };
        let winner = found.path.as_ref().map(|(path, _)| path.clone());
        let winner_canon = winner.as_ref().map(|w| self.canonical(w));
        let mut others: Vec<LosingCopy> = Vec::new();
        let mut seen: Vec<PathBuf> = winner_canon.iter().cloned().collect();
        let via = found.path.as_ref().map(|(_, v)| *v);
        for (path, why) in &found.later {
            self.push_other(&mut others, &mut seen, path, family, || {
                format!(
                    "found later in the search ({why}, after {})",
                    via.unwrap_or("the winner")
                )
            });
        }
        for dir in self.known {
            let path = dir.join(name);
            if self.exists(&path) {
                self.push_other(&mut others, &mut seen, &path, family, || {
                    if via == Some("preload") {
                        format!("{needed_by} loads the wheel's copy by path first")
                    } else {
                        format!("not on the search path of {needed_by}")
                    }
                });
            }
        }
        if winner.is_none() {
            // Nothing by that name: say which other versions of it are here (another soname,
            // so no substitute: `libcudart.so.12` for a `libcudart.so.11.0` need).
            let stem = split_soname(name).map(|(s, _)| s);
            for dir in self.known {
                for e in self.host.fs.read_dir(dir) {
                    let other_stem = split_soname(&e.name).map(|(s, _)| s);
                    if other_stem.is_some() && other_stem == stem && e.name != name {
                        self.push_other(&mut others, &mut seen, &e.path, family, || {
                            format!("another soname ({}), not a substitute for {name}", e.name)
                        });
                    }
                }
            }
        }
        let (version, owner) = match &winner {
            Some(w) => {
                let canon = winner_canon.clone().unwrap_or_else(|| w.clone());
                let owner = self.owners.of(w, &canon, family);
                (version_of(&canon, &owner), Some(owner))
            }
            None => (None, None),
        };
        p.loads.push(LibraryLoad {
            family: family.to_string(),
            soname: name.to_string(),
            needed_by: needed_by.to_string(),
            by: by.to_string(),
            path: winner.map(|w| w.display().to_string()),
            via: via.map(str::to_string),
            version,
            owner,
            searched: found
                .searched
                .iter()
                .map(|(d, why)| format!("{} ({why})", d.display()))
                .collect(),
            others,
        });
        index
    }

    fn push_other(
        &self,
        others: &mut Vec<LosingCopy>,
        seen: &mut Vec<PathBuf>,
        path: &Path,
        family: &str,
        why: impl FnOnce() -> String,
    ) {
        let canon = self.canonical(path);
        if seen.contains(&canon) {
            return;
        }
        seen.push(canon.clone());
        let owner: LibraryOwner = self.owners.of(path, &canon, family);
        others.push(LosingCopy {
            path: lexical(path).display().to_string(),
            version: version_of(&canon, &owner),
            owner,
            why: why(),
        });
    }

    /// ld.so's search for `name` needed by object `i` (glibc `_dl_map_object`).
    fn search(&self, p: &Process, i: usize, name: &str) -> Found {
        let mut steps: Vec<(PathBuf, &'static str)> = Vec::new();
        let requester = p.objs[i].dynamic.clone();
        let has_runpath = requester.as_ref().is_some_and(|d| d.runpath.is_some());
        if !has_runpath {
            // DT_RPATH of the requester, then of the objects that pulled it in, up to the
            // executable; an object with a DT_RUNPATH contributes none.
            let mut at = Some(i);
            let mut hops = 0;
            while let Some(k) = at {
                hops += 1;
                if hops > MAX_OBJECTS {
                    break;
                }
                let obj = &p.objs[k];
                if let Some(d) = &obj.dynamic
                    && d.runpath.is_none()
                    && let Some(rpath) = &d.rpath
                {
                    steps.extend(self.expand(rpath, &obj.path, "RPATH"));
                }
                at = obj.parent;
            }
        }
        steps.extend(
            self.ld_library_path
                .iter()
                .map(|d| (d.clone(), "LD_LIBRARY_PATH")),
        );
        if let Some(runpath) = requester.as_ref().and_then(|d| d.runpath.as_ref()) {
            steps.extend(self.expand(runpath, &p.objs[i].path, "RUNPATH"));
        }
        let mut found = Found {
            path: None,
            searched: Vec::new(),
            later: Vec::new(),
        };
        let consider = |found: &mut Found, path: PathBuf, via: &'static str| {
            if !self.exists(&path) || !self.loadable(&path) {
                return;
            }
            if found.path.is_none() {
                found.path = Some((path, via));
            } else {
                found.later.push((path, via));
            }
        };
        for (dir, via) in steps {
            consider(&mut found, lexical(&dir.join(name)), via);
            found.searched.push((dir, via));
        }
        match self.table {
            Table::Cache { cache, arch, .. } => {
                if let Some(e) = cache.lookup(name, *arch) {
                    consider(&mut found, PathBuf::from(&*cache.path(e)), "ld.so.cache");
                }
                found
                    .searched
                    .push((PathBuf::from("/etc/ld.so.cache"), "ld.so.cache"));
            }
            Table::Conf { dirs, .. } => {
                for dir in dirs {
                    consider(&mut found, dir.join(name), "ld.so.conf");
                    found.searched.push((dir.clone(), "ld.so.conf"));
                }
            }
        }
        for dir in self.defaults {
            consider(&mut found, dir.join(name), "default");
            found.searched.push((dir.clone(), "default"));
        }
        found
    }

    /// Whether ld.so would take this file: an ELF object of the wrong class or machine is
    /// skipped; a file we cannot parse (a fixture's stand-in) is taken.
    fn loadable(&self, path: &Path) -> bool {
        match self.dynamic(path) {
            Some(d) => d.is_64 && matches!(d.machine, 62 | 183),
            None => true,
        }
    }

    fn expand(
        &self,
        value: &str,
        object: &Path,
        via: &'static str,
    ) -> Vec<(PathBuf, &'static str)> {
        let origin = object
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let platform = if self.lib.contains("x86_64") {
            "x86_64"
        } else {
            "aarch64"
        };
        elf::expand_search_path(value, &origin, self.lib, platform)
            .into_iter()
            .filter(|d| d.starts_with('/'))
            .map(|d| (lexical(Path::new(&d)), via))
            .collect()
    }
}

fn is_cudnn_front(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(split_soname)
        .is_some_and(|(stem, _)| stem == "libcudnn")
}

fn in_site(path: &Path) -> bool {
    path.components().any(|c| {
        matches!(
            c.as_os_str().to_str(),
            Some("site-packages" | "dist-packages")
        )
    })
}

/// The version of a copy: from the file name its links lead to (`libcudnn.so.9.14.0`), else
/// its package's.
fn version_of(canonical: &Path, owner: &LibraryOwner) -> Option<String> {
    let from_name = canonical
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(split_soname)
        .and_then(|(_, v)| v)
        .filter(|v| v.split('.').count() >= 3)
        .map(str::to_string);
    from_name.or_else(|| owner.version.clone())
}

/// A framework's native modules, first the one loaded first.
fn entry_points(host: &Host, sites: &[PathBuf], fw: &Framework) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let so_in = |dir: PathBuf, prefix: &str| -> Vec<PathBuf> {
        host.fs
            .read_dir(&dir)
            .into_iter()
            .filter(|e| e.name.starts_with(prefix) && e.name.contains(".so"))
            .map(|e| e.path)
            .collect()
    };
    for site in sites {
        match fw.name.as_str() {
            "torch" => {
                let lib = site.join("torch/lib");
                for name in ["libtorch_global_deps.so", "libtorch_cuda.so"] {
                    if host.fs.exists(lib.join(name)) {
                        out.push(lib.join(name));
                    }
                }
                out.extend(so_in(site.join("torch"), "_C."));
            }
            "jax" => {
                for e in host.fs.read_dir(site.join("jax_plugins")) {
                    out.extend(so_in(e.path, "xla_cuda_plugin"));
                }
                for e in host.fs.read_dir(site) {
                    if e.name.starts_with("jax_cuda") && e.name.ends_with("_plugin") {
                        out.extend(so_in(e.path, "_"));
                    }
                }
            }
            "tensorflow" => {
                let tf = site.join("tensorflow");
                out.extend(so_in(tf.clone(), "libtensorflow_framework.so"));
                out.extend(so_in(tf.clone(), "libtensorflow_cc.so"));
                out.extend(so_in(tf.join("python"), "_pywrap_tensorflow_internal"));
            }
            "cupy" => {
                out.extend(so_in(site.join("cupy_backends/cuda/libs"), "_"));
                out.extend(so_in(site.join("cupy_backends/cuda/api"), "_"));
                out.extend(so_in(site.join("cupy/_core"), "core"));
            }
            _ => {}
        }
    }
    out.truncate(64);
    out
}

/// The RUNPATH a framework's wheel is built with, when its modules cannot be read: torch,
/// JAX's plugin and TensorFlow list the `nvidia/*/lib` wheel folders (`$ORIGIN/../../nvidia/
/// cudnn/lib`, ...); torch also its own `torch/lib`.
fn modelled_runpath(host: &Host, sites: &[PathBuf], fw: &Framework) -> Vec<String> {
    if fw.name == "cupy" {
        return Vec::new();
    }
    let mut out = Vec::new();
    for site in sites {
        if fw.name == "torch" {
            out.push(site.join("torch/lib").display().to_string());
        }
        out.extend(
            wheel_dirs(host, site)
                .iter()
                .map(|d| d.display().to_string()),
        );
    }
    out
}

/// Library files in the environment's `nvidia/*/lib` folders, in glob order.
fn wheel_files(host: &Host, sites: &[PathBuf]) -> Vec<PathBuf> {
    sites
        .iter()
        .flat_map(|s| wheel_dirs(host, s))
        .flat_map(|d| host.fs.read_dir(d))
        .filter(|e| {
            split_soname(&e.name).is_some_and(|(_, v)| v.is_some()) && family::of(&e.name).is_some()
        })
        .map(|e| e.path)
        .collect()
}

/// The wheel copies JAX's CUDA plugin loads by path before anything else
/// (`jax_plugins/xla_cuda*/__init__.py`, `_load_nvidia_libraries`), in its order; a wheel that
/// is not installed is skipped (the plugin then loads the library by soname).
fn jax_preloads(host: &Host, sites: &[PathBuf]) -> Vec<PathBuf> {
    const ORDER: [(&str, &str); 19] = [
        ("cuda_runtime", "libcudart.so.12"),
        ("cu13", "libcudart.so.13"),
        ("cuda_nvrtc", "libnvrtc.so.12"),
        ("cu13", "libnvrtc.so.13"),
        ("cublas", "libcublas.so.12"),
        ("cublas", "libcublasLt.so.12"),
        ("cu13", "libcublas.so.13"),
        ("cu13", "libcublasLt.so.13"),
        ("nccl", "libnccl.so.2"),
        ("cuda_cupti", "libcupti.so.12"),
        ("cu13", "libcupti.so.13"),
        ("cusparse", "libcusparse.so.12"),
        ("cu13", "libcusparse.so.12"),
        ("cusolver", "libcusolver.so.11"),
        ("cu13", "libcusolver.so.12"),
        ("cufft", "libcufft.so.11"),
        ("cu13", "libcufft.so.12"),
        ("nvshmem", "libnvshmem_host.so.3"),
        ("cudnn", "libcudnn.so.9"),
    ];
    let mut out = Vec::new();
    for (module, lib) in ORDER {
        // The first `nvidia` package on sys.path wins, as `importlib` finds it.
        if let Some(path) = sites
            .iter()
            .map(|s| s.join("nvidia").join(module).join("lib").join(lib))
            .find(|p| host.fs.exists(p))
        {
            out.push(path);
        }
    }
    out
}

/// The sonames a framework loads at run time by name (or CuPy by path), beyond its modules'
/// `DT_NEEDED`: the CUDA libraries of its wheels, else the ones its CUDA and cuDNN versions name.
fn runtime_needs(host: &Host, sites: &[PathBuf], fw: &Framework, env: &PythonEnv) -> Vec<String> {
    let _ = env;
    let uses: &[&str] = match fw.name.as_str() {
        "cupy" => &[
            "cudart",
            "cublas",
            "cusparse",
            "cufft",
            "curand",
            "cusolver",
            "nvrtc",
            "nvjitlink",
        ],
        "jax" => &[
            "cudart",
            "cublas",
            "cudnn",
            "cusparse",
            "cufft",
            "cusolver",
            "nccl",
            "nvjitlink",
            "cupti",
        ],
        "tensorflow" => &[
            "cudart",
            "cublas",
            "cudnn",
            "cusparse",
            "cufft",
            "cusolver",
            "curand",
            "nccl",
            "nvjitlink",
            "cupti",
            "tensorrt",
        ],
        _ => &["cudart", "cublas", "cudnn", "nccl"],
    };
    let mut out: Vec<String> = Vec::new();
    let front = |name: &str| {
        split_soname(name).is_some_and(|(stem, v)| {
            v.is_some()
                && matches!(
                    stem,
                    "libcudart"
                        | "libcublas"
                        | "libcublasLt"
                        | "libcudnn"
                        | "libnccl"
                        | "libnvJitLink"
                        | "libnvrtc"
                        | "libcusparse"
                        | "libcufft"
                        | "libcusolver"
                        | "libcurand"
                        | "libcupti"
                        | "libnvinfer"
                )
        })
    };
    for f in wheel_files(host, sites) {
        let Some(name) = f.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        if front(&name) && family::of(&name).is_some_and(|fam| uses.contains(&fam)) {
            // The soname is the name cut to its first version number.
            let soname = soname_of(&name);
            if !out.contains(&soname) {
                out.push(soname);
            }
        }
    }
    let have = |out: &Vec<String>, fam: &str| out.iter().any(|n| family::of(n) == Some(fam));
    let cuda_major = fw
        .cuda
        .as_deref()
        .and_then(|c| c.split('.').next())
        .and_then(|m| m.parse::<u32>().ok());
    // torch's own copies are bundled (renamed) unless it pins the runtime wheels.
    let derive = fw.name != "torch" || fw.pins.iter().any(|p| p.starts_with("nvidia-cuda-runtime"));
    if let Some(major) = cuda_major.filter(|_| derive) {
        // libcudart's soname carries the minor up to CUDA 11 (`libcudart.so.11.0`).
        let cudart = match major {
            11 => "libcudart.so.11.0".to_string(),
            m if m < 11 => format!("libcudart.so.{}", fw.cuda.as_deref().unwrap_or_default()),
            m => format!("libcudart.so.{m}"),
        };
        if uses.contains(&"cudart") && !have(&out, "cudart") {
            out.push(cudart);
        }
        if uses.contains(&"cublas") && !have(&out, "cublas") && major >= 11 {
            out.push(format!("libcublas.so.{major}"));
            out.push(format!("libcublasLt.so.{major}"));
        }
    }
    let cudnn_major = fw
        .cudnn
        .as_deref()
        .and_then(|c| c.split('.').next().map(str::to_string))
        .or_else(|| {
            fw.pins
                .iter()
                .find(|p| p.starts_with("nvidia-cudnn"))
                .and_then(|p| {
                    p.split(['=', '>', '~'])
                        .nth(2)
                        .or_else(|| p.split("==").nth(1))
                })
                .and_then(|v| v.trim().split('.').next().map(str::to_string))
        })
        .filter(|m| !m.is_empty() && m.chars().all(|c| c.is_ascii_digit()));
    if let Some(m) = cudnn_major
        && uses.contains(&"cudnn")
        && !have(&out, "cudnn")
    {
        out.push(format!("libcudnn.so.{m}"));
    }
    out
}

/// `libcudnn.so.9.1.0` → `libcudnn.so.9`; `libcudart.so.11.0` keeps its minor.
fn soname_of(name: &str) -> String {
    match split_soname(name) {
        Some((stem, Some(v))) => {
            let parts: Vec<&str> = v.split('.').collect();
            let keep = if stem == "libcudart" && parts.first().is_some_and(|m| *m == "11") {
                2
            } else {
                1
            };
            format!("{stem}.so.{}", parts[..keep.min(parts.len())].join("."))
        }
        _ => name.to_string(),
    }
}

/// The cuDNN sub-libraries beside a `libcudnn.so.N` (of the same major).
fn cudnn_sublibs(host: &Host, front: &Path) -> Vec<String> {
    let Some(dir) = front.parent() else {
        return Vec::new();
    };
    let major = front
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(split_soname)
        .and_then(|(_, v)| v)
        .and_then(|v| v.split('.').next())
        .unwrap_or_default()
        .to_string();
    let mut out: Vec<String> = host
        .fs
        .read_dir(dir)
        .into_iter()
        .filter_map(|e| {
            let (stem, v) = split_soname(&e.name)?;
            (stem.starts_with("libcudnn_") && v == Some(major.as_str())).then(|| e.name.clone())
        })
        .collect();
    out.dedup();
    out
}

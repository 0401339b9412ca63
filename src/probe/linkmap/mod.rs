//! Which copy of each CUDA library a framework's process maps, resolved the way glibc's ld.so
//! resolves it, without running anything: each framework's native modules' dynamic sections
//! (`DT_NEEDED`, `DT_RPATH`, `DT_RUNPATH`), then for every needed soname the loader's search
//! (`ldso.rs`: the requester's and its loaders' `DT_RPATH`, the executable's `DT_RPATH`,
//! `LD_LIBRARY_PATH`, `DT_RUNPATH`, the ld.so cache, the default folders).
//!
//! Framework behaviour beyond what the ELF files say is in `habits.rs`:
//! - torch (`torch/__init__.py`, `_load_global_deps`): loads `torch/lib/libtorch_global_deps.so`
//!   first. The installed file's `_preload_cuda_deps` list is read: torch 2.11 runs it every
//!   time once libcudart is mapped (cuBLASLt before cuBLAS, nvJitLink before cuSPARSE, by path);
//!   older files only when that first load failed. An unreadable file (a stand-in) keeps the
//!   fallback preload and NVRTC/cuSOLVER by path.
//! - JAX's CUDA plugin loads the wheels' copies by path in the order of its own
//!   `_load_nvidia_libraries` (read from the installed plugin), then `dlopen`s by soname from
//!   its plugin module. A load by path matches loaded objects by file, so a copy of a soname
//!   already mapped from another folder is mapped beside it: both are reported.
//! - cuDNN 9 loads its sub-libraries (`libcudnn_ops`, `libcudnn_engines_*`, ...) at run time,
//!   with `libcudnn.so.9` as the requester, so its `$ORIGIN` RUNPATH puts them beside it.
//! - TensorFlow loads the CUDA libraries with `dlopen` by soname from its framework library.
//! - CuPy (13+, `cuda-pathfinder`) loads a library from the `nvidia/*/lib` wheel folders by path
//!   when the wheel is installed, else by soname.
//! - onnxruntime-gpu's CUDA provider (`onnxruntime/capi/libonnxruntime_providers_cuda.so`) is
//!   resolved as a framework named "onnxruntime" when its file is a readable ELF: it has no
//!   RUNPATH (frameworks.toml `onnxruntime_cuda`), so the nvidia-* wheels' folders are not on its
//!   search path; what `import torch` or `onnxruntime.preload_dlls()` loads first is the rule's
//!   to judge (`diagnose::onnxruntime`).
//!
//! When a module is not a readable ELF file (a fixture's empty stand-in), the framework's
//! documented search path stands in for its RUNPATH and its needs come from the wheels beside
//! it and the CUDA/cuDNN versions it was built for (`basis: "model"`).

mod habits;
mod ldso;
pub(crate) mod owner;
mod symbols;
mod table;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use self::habits::{
    cudnn_sublibs, entry_points, is_cudnn_front, jax_preloads, modelled_runpath, runtime_needs,
    wheel_files,
};
use self::owner::{Owners, lexical};
use self::table::Table;
use super::loader::{LoaderPath, Origin};
use super::toolkit::LIB_DIRS;
use crate::framework::FrameworkName;
use crate::host::Host;
use crate::manifest::SetInUse;
use crate::parse::dynsym::Symbols;
use crate::parse::elf::Dynamic;
use crate::parse::libfamily as family;
use crate::parse::libname::split_soname;
use crate::report::EnvKind;
use crate::report::{
    Framework, FrameworkLoads, LibraryLoad, LibraryOwner, LosingCopy, PythonEnv, SymbolGap,
    SymbolsUnread, Toolkit,
};

/// Objects one framework's resolution may visit (a bound on a runaway dependency graph).
const MAX_OBJECTS: usize = 400;

/// What the resolution found: each framework's loads, the soname table used, and the symbols
/// its loaded pairs lack (`symbols.rs`).
#[derive(Default)]
pub(crate) struct Resolved {
    pub(crate) loads: Vec<FrameworkLoads>,
    /// The soname table's description; `None` when nothing was resolved.
    pub(crate) table: Option<String>,
    pub(crate) symbol_gaps: Vec<SymbolGap>,
    pub(crate) symbols_unread: Vec<SymbolsUnread>,
}

/// The per-framework loads, the name of the soname table used and the symbol gaps.
/// `set` is the run's manifest set, asked only where a framework's own file cannot be read and
/// the manifest models it (JAX's preload list).
#[must_use]
pub(crate) fn probe(
    host: &Host,
    loader: &LoaderPath,
    toolkits: &[Toolkit],
    envs: &[PythonEnv],
    set: &SetInUse,
) -> Resolved {
    let onnxruntime = habits::onnxruntime_providers(host, envs);
    let frameworks: Vec<(&PythonEnv, &Framework)> = envs
        .iter()
        .flat_map(|e| e.frameworks.iter().map(move |f| (e, f)))
        .filter(|(_, f)| f.variant.as_deref() != Some("cpu"))
        .chain(onnxruntime.iter().map(|(i, f)| (&envs[*i], f)))
        .collect();
    if frameworks.is_empty() {
        return Resolved::default();
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
        syms: RefCell::new(HashMap::new()),
        listing: RefCell::new(HashMap::new()),
        canon: RefCell::new(HashMap::new()),
        owners: &owners,
        known: &known,
        set,
    };
    // A few threads share the frameworks: each reads its framework's own modules; the
    // tables are shared.
    let done = super::in_parallel(&frameworks, |(env, fw)| ctx().framework(env, fw));
    let mut out = Resolved {
        table: Some(table.describe()),
        ..Resolved::default()
    };
    for (loads, compared) in done {
        // A ROCm build is resolved from its own modules only: the modelled needs are CUDA's.
        let modelled_rocm = loads.basis != "elf"
            && envs.iter().any(|e| {
                e.path == loads.env
                    && e.frameworks
                        .iter()
                        .any(|f| f.name == loads.framework && f.rocm.is_some())
            });
        if modelled_rocm {
            continue;
        }
        out.loads.push(loads);
        out.symbol_gaps.extend(compared.gaps);
        for u in compared.unread {
            if !out.symbols_unread.contains(&u) {
                out.symbols_unread.push(u);
            }
        }
    }
    // The owners a package list gives, found in one search for every file asked about.
    owners.settle(&mut out.loads);
    out
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
        if env.kind == EnvKind::Conda {
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
    /// Dynamic symbol tables, read once (only for the pairs `symbols.rs` compares).
    syms: RefCell<HashMap<PathBuf, Rc<Result<Symbols, String>>>>,
    /// Folder listings, read once: a name is looked for in a listing, not with a stat.
    listing: RefCell<HashMap<PathBuf, Rc<HashSet<String>>>>,
    /// Paths after links, resolved once.
    canon: RefCell<HashMap<PathBuf, PathBuf>>,
    owners: &'a Owners<'a>,
    known: &'a [PathBuf],
    /// The run's manifest set.
    set: &'a SetInUse,
}

/// One framework's process being modelled.
struct Process {
    objs: Vec<Obj>,
    /// Names (soname and needed name) of the objects in the process.
    by_name: HashMap<String, usize>,
    loads: Vec<LibraryLoad>,
    /// The interpreter after its links (`$ORIGIN` is its real folder) and its dynamic section:
    /// its `DT_RPATH` serves every object without a `DT_RUNPATH` (a conda `python` carries
    /// `$ORIGIN/../lib`).
    exe: Option<(PathBuf, Rc<Dynamic>)>,
}

/// Objects whose needs are still to be followed, in the order ld.so maps them (breadth first):
/// `next` is the first not yet followed.
#[derive(Default)]
struct Queue {
    items: Vec<usize>,
    next: usize,
}

impl Queue {
    fn push(&mut self, i: usize) {
        self.items.push(i);
    }

    fn peek(&self) -> Option<usize> {
        self.items.get(self.next).copied()
    }
}

impl Ctx<'_> {
    fn framework(&self, env: &PythonEnv, fw: &Framework) -> (FrameworkLoads, symbols::Compared) {
        let sites: Vec<PathBuf> = env.site_packages.iter().map(PathBuf::from).collect();
        let entries = entry_points(self.host, &sites, fw);
        let readable: Vec<(PathBuf, Rc<Dynamic>)> = entries
            .iter()
            .filter_map(|p| self.dynamic(p).map(|d| (p.clone(), d)))
            .collect();
        let basis = if readable.is_empty() { "model" } else { "elf" };
        let torch_habit = (fw.name == FrameworkName::Torch)
            .then(|| habits::torch_preload(self.host, &sites))
            .flatten();
        let mut process = self.run(env, fw, &sites, &readable, &[], torch_habit.as_ref());
        // torch: when libtorch_global_deps.so cannot load its CUDA libraries, torch preloads
        // the nvidia wheels' copies by path and tries again (`_preload_cuda_deps(err)`).
        if fw.name == FrameworkName::Torch && process.loads.iter().any(|l| l.path.is_none()) {
            let preloads = match &torch_habit {
                Some(h) => habits::torch_preload_files(self.host, &sites, fw, &h.libs),
                None => wheel_files(self.host, &sites),
            };
            if !preloads.is_empty() {
                process = self.run(env, fw, &sites, &readable, &preloads, None);
            }
        }
        let compared = self.compare_symbols(&env.path, &fw.name, &process);
        let mut libraries = process.loads;
        libraries.sort_by(|a, b| (&a.family, &a.soname).cmp(&(&b.family, &b.soname)));
        let loads = FrameworkLoads {
            env: env.path.clone(),
            framework: fw.name.clone(),
            basis: basis.to_string(),
            libraries,
        };
        (loads, compared)
    }

    /// One process of the framework, as ld.so would map it: the libraries it loads by path
    /// first, then its modules with their needs, then what it opens at run time.
    fn run(
        &self,
        env: &PythonEnv,
        fw: &Framework,
        sites: &[PathBuf],
        readable: &[(PathBuf, Rc<Dynamic>)],
        preloads: &[PathBuf],
        torch_habit: Option<&habits::TorchPreload>,
    ) -> Process {
        let mut p = Process {
            objs: Vec::new(),
            by_name: HashMap::new(),
            loads: Vec::new(),
            exe: self.interpreter(env),
        };
        let mut pre_queue = Queue::default();
        for (path, label) in self.preload_plan(sites, fw, preloads, torch_habit) {
            self.load_by_path(&mut p, &path, label, &mut pre_queue);
        }
        // torch files that preload every time (torch 2.11's `_load_global_deps`) do it after
        // libtorch_global_deps.so mapped libcudart, before the other modules.
        let after_first: Vec<PathBuf> = match torch_habit {
            Some(h) if h.always && preloads.is_empty() => {
                habits::torch_preload_files(self.host, sites, fw, &h.libs)
            }
            _ => Vec::new(),
        };
        let mut queue = Queue::default();
        let requester = if readable.is_empty() {
            self.stand_in_module(&mut p, sites, fw)
        } else {
            self.load_modules(&mut p, readable, &after_first, &mut queue)
        };
        self.drain(&mut p, &mut queue);
        // torch names every CUDA library in its modules' DT_NEEDED: nothing more to add when
        // those were read.
        // onnxruntime's CUDA provider: its DT_NEEDED is all it loads (it is only resolved when
        // its file could be read).
        if (fw.name != FrameworkName::Torch || readable.is_empty())
            && fw.name != habits::ONNXRUNTIME
        {
            self.load_runtime_needs(&mut p, fw, sites, requester, &mut queue);
        }
        // onnxruntime-gpu's loads by soname outside DT_NEEDED (its release's `dlopen` row: the
        // 1.28+ provider's cuDNN loader, `_ld_preload.py` up to 1.15).
        if fw.name == habits::ONNXRUNTIME {
            for name in habits::onnxruntime_dlopen(fw, self.set) {
                if let Some(j) = self.load(&mut p, requester, &name, "dlopen") {
                    queue.push(j);
                }
            }
        }
        self.drain(&mut p, &mut queue);
        p
    }

    /// The interpreter after its links, with its dynamic section. One that cannot be read (a
    /// stand-in) is modelled for conda: conda-built pythons carry `$ORIGIN/../lib` (and so do
    /// the lib-dynload modules that call dlopen).
    fn interpreter(&self, env: &PythonEnv) -> Option<(PathBuf, Rc<Dynamic>)> {
        env.interpreter
            .as_deref()
            .and_then(|i| {
                let real = self.canonical(Path::new(i));
                self.dynamic(&real).map(|d| (real, d))
            })
            .or_else(|| {
                (env.kind == EnvKind::Conda).then(|| {
                    let exe = Path::new(&env.path).join("bin/python3");
                    let dynamic = Dynamic {
                        rpath: Some("$ORIGIN/../lib".to_string()),
                        ..Dynamic::default()
                    };
                    (exe, Rc::new(dynamic))
                })
            })
    }

    /// Libraries the framework loads by path before its modules run, each with its own needs
    /// mapped at once (as `dlopen` does): torch's fallback preload, JAX's
    /// `_load_nvidia_libraries`.
    fn preload_plan(
        &self,
        sites: &[PathBuf],
        fw: &Framework,
        preloads: &[PathBuf],
        torch_habit: Option<&habits::TorchPreload>,
    ) -> Vec<(PathBuf, &'static str)> {
        let mut plan: Vec<(PathBuf, &str)> = preloads
            .iter()
            .map(|p| (p.clone(), "torch/__init__.py (_preload_cuda_deps)"))
            .collect();
        if fw.name == FrameworkName::Torch && torch_habit.is_none() {
            // torch's file unread (a stand-in): NVRTC and cuSOLVER (used lazily) come from the
            // wheels by path, as the H200's torch 2.11 showed (`LD_DEBUG=files`: "dynamically
            // loaded by .../_ctypes...so", its `_preload_cuda_deps`).
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
        if fw.name == FrameworkName::Jax {
            plan.extend(
                jax_preloads(self.host, sites, fw, self.set)
                    .into_iter()
                    .map(|p| (p, "jax_plugins (_load_nvidia_libraries)")),
            );
        }
        plan
    }

    /// Nothing readable: one stand-in module with the framework's documented search path.
    /// Returns its index, the requester of what the framework opens at run time.
    fn stand_in_module(&self, p: &mut Process, sites: &[PathBuf], fw: &Framework) -> usize {
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
        p.objs.len() - 1
    }

    /// Each module as the framework loads it, one after another: a module already mapped as
    /// another's dependency is not loaded again. `after_first` is loaded by path once the
    /// first module has mapped a libcudart. Returns the module that dlopens at run time (JAX's
    /// plugin, TF's framework library), else the first.
    fn load_modules(
        &self,
        p: &mut Process,
        readable: &[(PathBuf, Rc<Dynamic>)],
        after_first: &[PathBuf],
        queue: &mut Queue,
    ) -> usize {
        let first_module = p.objs.len();
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
            self.drain(p, queue);
            if i == first_module && !after_first.is_empty() && self.has_cudart(p) {
                for path in after_first {
                    self.load_by_path(p, path, "torch/__init__.py (_preload_cuda_deps)", queue);
                }
            }
        }
        p.objs
            .iter()
            .position(|o| {
                let s = o.path.to_string_lossy();
                s.contains("xla_cuda_plugin") || s.contains("libtensorflow_framework")
            })
            .unwrap_or(first_module)
            .min(p.objs.len().saturating_sub(1))
    }

    /// What the framework loads at run time, by soname from `requester`, or by path from the
    /// wheels (CuPy's pathfinder).
    fn load_runtime_needs(
        &self,
        p: &mut Process,
        fw: &Framework,
        sites: &[PathBuf],
        requester: usize,
        queue: &mut Queue,
    ) {
        let by_path = fw.name == FrameworkName::Cupy;
        for name in runtime_needs(self.host, sites, fw) {
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
                self.record(p, &name, "cuda-pathfinder (CuPy)", None, &found, "preload");
                continue;
            }
            if let Some(j) = self.load(p, requester, &name, "dlopen") {
                queue.push(j);
            }
        }
    }

    /// A `dlopen` by path: ld.so matches it against the loaded objects by file (device and
    /// inode), not by soname, so a copy of an already-loaded soname from another folder is
    /// mapped beside it (JAX's cuBLASLt with the toolkit's first on `LD_LIBRARY_PATH`).
    fn load_by_path(&self, p: &mut Process, path: &Path, label: &str, queue: &mut Queue) {
        let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            return;
        };
        let canon = self.canonical(path);
        if family::of(&name).is_none()
            || !self.exists(path)
            || p.objs.iter().any(|o| self.canonical(&o.path) == canon)
        {
            return;
        }
        let found = Found {
            path: Some((path.to_path_buf(), "preload")),
            searched: Vec::new(),
            later: Vec::new(),
        };
        if let Some(j) = self.record(p, &name, label, None, &found, "preload") {
            queue.push(j);
            self.drain(p, queue);
        }
    }

    /// Whether a libcudart is mapped (torch checks `/proc/self/maps` for it).
    fn has_cudart(&self, p: &Process) -> bool {
        p.objs.iter().any(|o| {
            o.path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("libcudart.so"))
        })
    }

    /// Follows the needs of every object queued, breadth first, as ld.so maps them.
    fn drain(&self, p: &mut Process, queue: &mut Queue) {
        while let Some(i) = queue.peek()
            && p.objs.len() < MAX_OBJECTS
        {
            queue.next += 1;
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
        // ROCm's libraries are followed for a ROCm build's needs (ROCm/legacy-rocm-build#6053:
        // `libtorch_hip.so` needs `libroctx64.so.4`), and NVIDIA's libraries installed apart from
        // CUDA for a Jetson build's (NVIDIA/Isaac-GR00T#343: `libcudss.so.0`).
        let family = family::of(name)
            .or_else(|| family::rocm(name))
            .or_else(|| family::separate(name));
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
        // The first object loaded under a name keeps it: later lookups by that name find it.
        p.by_name
            .entry(name.to_string())
            .or_insert(index.unwrap_or(usize::MAX));
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
            self.push_other(&mut others, &mut seen, path, family.as_str(), || {
                format!(
                    "found later in the search ({why}, after {})",
                    via.unwrap_or("the winner")
                )
            });
        }
        for dir in self.known {
            let path = dir.join(name);
            if self.exists(&path) {
                self.push_other(&mut others, &mut seen, &path, family.as_str(), || {
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
                        self.push_other(&mut others, &mut seen, &e.path, family.as_str(), || {
                            format!("another soname ({}), not a substitute for {name}", e.name)
                        });
                    }
                }
            }
        }
        let (version, owner) = match &winner {
            Some(w) => {
                let canon = winner_canon.clone().unwrap_or_else(|| w.clone());
                let owner = self.owners.of(w, &canon, family.as_str());
                (version_of(&canon, &owner), Some(owner))
            }
            None => (None, None),
        };
        p.loads.push(LibraryLoad {
            family: family.clone(),
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

//! Python environments and the GPU frameworks in them, read from files without importing
//! anything: `torch/version.py`, TensorFlow's `build_info.py`, dist-info folder names and
//! metadata, `jax_plugins/`. Importing torch takes 5 s; reading these takes milliseconds.
//!
//! Environments come from every python on PATH, `VIRTUAL_ENV`, `CONDA_PREFIX`, conda's
//! `~/.conda/environments.txt`, and the system's own site/dist-packages. On a real run each
//! interpreter is also asked (isolated, `-I`, with a deadline) for its version and `sys.path`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::host::Host;
use crate::parse::python_pkg::{self, Requirement};
use crate::report::EnvKind;
use crate::report::{Extension, Framework, PythonEnv, Wheel};

/// What a live interpreter prints for us: nothing is imported beyond `sys` and `json`.
const INTERPRETER_QUERY: &str = "import sys, json; print(json.dumps({'version': sys.version.split()[0], 'prefix': sys.prefix, 'path': sys.path}))";

use super::interp_cache::InterpreterInfo;

#[derive(Debug, Default)]
struct Candidate {
    found_via: Vec<String>,
    interpreter: Option<PathBuf>,
}

#[must_use]
pub(crate) fn probe(host: &Host) -> Vec<PythonEnv> {
    let mut candidates: Vec<_> = candidates(host).into_iter().collect();
    // Numbers in paths by value: pyenv's 3.6 before 3.10, as people count them.
    candidates.sort_by(|a, b| natural_cmp(&a.0.to_string_lossy(), &b.0.to_string_lossy()));
    super::in_parallel(&candidates, |(prefix, cand)| describe(host, prefix, cand))
        .into_iter()
        .flatten()
        .collect()
}

/// `a` against `b` with each run of digits compared as a number ("3.6" < "3.10"), the rest
/// as text; equal numbers with different leading zeros fall back to the text.
fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn runs(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let mut digit = None;
        for (i, c) in s.char_indices() {
            let d = c.is_ascii_digit();
            if digit.is_some_and(|was| was != d) {
                out.push((digit == Some(true), &s[start..i]));
                start = i;
            }
            digit = Some(d);
        }
        if start < s.len() {
            out.push((digit == Some(true), &s[start..]));
        }
        out
    }
    let (ra, rb) = (runs(a), runs(b));
    for (x, y) in ra.iter().zip(&rb) {
        let order = match (x, y) {
            ((true, p), (true, q)) => {
                let (p, q) = (p.trim_start_matches('0'), q.trim_start_matches('0'));
                p.len().cmp(&q.len()).then_with(|| p.cmp(q))
            }
            ((_, p), (_, q)) => p.cmp(q),
        };
        if order != std::cmp::Ordering::Equal {
            return order;
        }
    }
    ra.len().cmp(&rb.len()).then_with(|| a.cmp(b))
}

/// Environment prefixes keyed by their canonical path, with how each was found.
fn candidates(host: &Host) -> BTreeMap<PathBuf, Candidate> {
    let mut out: BTreeMap<PathBuf, Candidate> = BTreeMap::new();
    let mut add = |prefix: PathBuf, via: &str, interpreter: Option<PathBuf>| {
        let canonical = host.fs.canonical(&prefix, true).unwrap_or(prefix);
        // A conda install found by conda's own files already says how.
        if via == "conda" && out.contains_key(&canonical) {
            return;
        }
        let cand = out.entry(canonical).or_default();
        if !cand.found_via.iter().any(|v| v == via) {
            cand.found_via.push(via.to_string());
        }
        if cand.interpreter.is_none() {
            cand.interpreter = interpreter;
        }
    };
    for name in ["python3", "python"] {
        for exe in host.which_all(name) {
            // The folder holding the interpreter, after links, names the environment; the
            // interpreter itself is usually a link out of a venv and must not be followed.
            let Some(bin) = exe.parent() else { continue };
            let bin = host
                .fs
                .canonical(bin, true)
                .unwrap_or_else(|_| bin.to_path_buf());
            if let Some(prefix) = bin.parent() {
                add(prefix.to_path_buf(), "PATH", Some(exe.clone()));
            }
        }
    }
    for (var, via) in [
        ("VIRTUAL_ENV", "VIRTUAL_ENV"),
        ("CONDA_PREFIX", "CONDA_PREFIX"),
    ] {
        if let Some(prefix) = host.env.path(var) {
            add(prefix, via, None);
        }
    }
    for prefix in conda_environments(host) {
        add(prefix, "conda-environments", None);
    }
    for prefix in super::node_envs::candidates(host) {
        add(prefix, super::node_envs::FOUND_VIA, None);
    }
    // Shims (pyenv, asdf, mise) on PATH name no environment; their managers' roots do.
    for m in super::python_managers::find(host) {
        add(m.prefix, &m.via, None);
    }
    if !site_dirs(host, Path::new("/usr")).is_empty() {
        add(PathBuf::from("/usr"), "system", None);
    }
    out.retain(|prefix, _| {
        !site_dirs(host, prefix).is_empty() || host.fs.exists(prefix.join("pyvenv.cfg"))
    });
    out
}

/// Environments conda knows: `~/.conda/environments.txt`, and `envs/*` of the base install
/// that `CONDA_PREFIX` or `CONDA_EXE` points into.
fn conda_environments(host: &Host) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(home) = host.env.path("HOME")
        && let Some(text) = host.fs.read_opt(home.join(".conda/environments.txt"))
    {
        out.extend(
            python_pkg::conda_environments_txt(&text)
                .into_iter()
                .filter(|p| p.starts_with('/'))
                .map(PathBuf::from),
        );
    }
    let base = host
        .env
        .path("CONDA_EXE")
        .and_then(|exe| exe.parent().and_then(Path::parent).map(Path::to_path_buf))
        .or_else(|| host.env.path("CONDA_PREFIX"));
    if let Some(base) = base {
        out.extend(
            host.fs
                .read_dir(base.join("envs"))
                .into_iter()
                .map(|e| e.path),
        );
    }
    out
}

/// The site/dist-packages folders of a prefix, covering Debian's and Fedora's layouts.
fn site_dirs(host: &Host, prefix: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut roots = vec![prefix.join("lib"), prefix.join("lib64")];
    // Debian's /usr/bin/python3 reads /usr/local/lib/python3.X/dist-packages (pip's installs)
    // and never /usr/local/lib/python3.X/site-packages, which belongs to a python built into
    // /usr/local; Fedora's reads /usr/local/lib/python3.X/site-packages.
    let debian = prefix == Path::new("/usr") && host.fs.is_dir("/usr/lib/python3/dist-packages");
    if prefix == Path::new("/usr") {
        roots.push(PathBuf::from("/usr/local/lib"));
    } else {
        roots.push(prefix.join("local/lib"));
    }
    for root in roots {
        let local = root == Path::new("/usr/local/lib");
        for entry in host.fs.read_dir(&root) {
            if !entry.name.starts_with("python3") {
                continue;
            }
            for leaf in ["site-packages", "dist-packages"] {
                if debian && local && leaf == "site-packages" {
                    continue;
                }
                let dir = entry.path.join(leaf);
                if host.fs.is_dir(&dir) {
                    let canonical = host.fs.canonical(&dir, true).unwrap_or(dir);
                    if !out.contains(&canonical) {
                        out.push(canonical);
                    }
                }
            }
        }
    }
    out
}

/// How a candidate is found when its interpreter is one a user runs directly (see [`describe`]).
const ASKED_VIA: [&str; 5] = [
    "PATH",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "conda-environments",
    "system",
];

fn describe(host: &Host, prefix: &Path, cand: &Candidate) -> Option<PythonEnv> {
    let pyvenv = host
        .fs
        .read_opt(prefix.join("pyvenv.cfg"))
        .map(|t| python_pkg::pyvenv_cfg(&t));
    let kind = if pyvenv.is_some() {
        EnvKind::Venv
    } else if host.fs.is_dir(prefix.join("conda-meta")) {
        EnvKind::Conda
    } else {
        EnvKind::System
    };
    let interpreter = cand.interpreter.clone().or_else(|| {
        ["bin/python3", "bin/python"]
            .iter()
            .map(|b| prefix.join(b))
            .find(|p| host.fs.is_executable(p))
    });
    // Interpreters a user reaches directly (PATH, an activated env, conda's list, the system
    // one) are asked for their sys.path. Versions found under a manager's root (pyenv, asdf,
    // mise, uv, pixi; the selected one too) are read from their standard CPython layout
    // instead: a machine can hold a dozen, and starting each would cost the scan ~100 ms on
    // two cores (measured here with nine pyenv versions: 0.15 s for the scan against 0.04 s).
    let reached_directly = cand
        .found_via
        .iter()
        .any(|v| ASKED_VIA.contains(&v.as_str()));
    let live = interpreter
        .as_deref()
        .filter(|_| host.runs_found_programs() && reached_directly)
        .and_then(|exe| ask_interpreter(host, exe));
    let mut sites = site_dirs(host, prefix);
    if let Some(info) = &live {
        // sys.path may add folders our layout rules do not know (a .pth, a distro quirk).
        for p in &info.path {
            let p = PathBuf::from(p);
            if (p.ends_with("site-packages") || p.ends_with("dist-packages"))
                && host.fs.is_dir(&p)
                && !sites.contains(&p)
                && Path::new(&info.prefix) == prefix
            {
                sites.push(p);
            }
        }
    }
    let python_version = live
        .as_ref()
        .map(|i| i.version.clone())
        .or_else(|| pyvenv.as_ref().and_then(|c| c.version.clone()))
        .or_else(|| version_from_site_dir(&sites));
    let mut frameworks = Vec::new();
    let mut wheels = Vec::new();
    let mut extensions = Vec::new();
    for site in &sites {
        scan_site(host, site, &mut frameworks, &mut wheels);
        extensions.extend(scan_extensions(host, site));
    }
    extensions.sort_by(|a: &Extension, b| (&a.name, &a.source).cmp(&(&b.name, &b.source)));
    if kind == EnvKind::Conda {
        conda_frameworks(host, prefix, &mut frameworks);
    }
    frameworks.sort_by(|a, b| (&a.name, &a.source).cmp(&(&b.name, &b.source)));
    wheels.sort_by(|a, b| a.name.cmp(&b.name));
    wheels.dedup_by(|a, b| a.name == b.name);
    Some(PythonEnv {
        path: prefix.display().to_string(),
        kind,
        python_version,
        interpreter: interpreter.map(|p| p.display().to_string()),
        site_packages: sites.iter().map(|p| p.display().to_string()).collect(),
        found_via: cand.found_via.clone(),
        frameworks,
        nvidia_wheels: wheels,
        // Filled by `probe::rocm_wheels`, which reads ROCm builds' own files.
        rocm_wheels: Vec::new(),
        extensions,
    })
}

fn ask_interpreter(host: &Host, exe: &Path) -> Option<InterpreterInfo> {
    super::interp_cache::ask_cached(host.interpreter_cache.as_deref(), exe, || {
        let out = host.run(exe, &["-I", "-c", INTERPRETER_QUERY]).ok()?;
        if !out.success() {
            return None;
        }
        serde_json::from_str(out.stdout.trim()).ok()
    })
}

/// `lib/python3.12/site-packages` → "3.12".
fn version_from_site_dir(sites: &[PathBuf]) -> Option<String> {
    sites.iter().find_map(|s| {
        let name = s.parent()?.file_name()?.to_str()?;
        let v = name.strip_prefix("python")?;
        (v.contains('.') && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
            .then(|| v.to_string())
    })
}

/// A dist-info folder found in a site folder.
struct Dist {
    name: String,
    version: String,
    dir: PathBuf,
}

fn scan_site(host: &Host, site: &Path, frameworks: &mut Vec<Framework>, wheels: &mut Vec<Wheel>) {
    let dists: Vec<Dist> = host
        .fs
        .read_dir(site)
        .into_iter()
        .filter(|e| e.name.ends_with(".dist-info") || e.name.ends_with(".egg-info"))
        .filter_map(|e| {
            let (name, version) = python_pkg::dist_info_name(&e.name)?;
            Some(Dist {
                name,
                version,
                dir: e.path,
            })
        })
        .collect();
    let dist = |name: &str| dists.iter().find(|d| d.name == name);
    let installed: Vec<String> = dists.iter().map(|d| d.name.clone()).collect();
    if let Some(fw) = torch(host, site, dist("torch"), &installed) {
        frameworks.push(fw);
    }
    if let Some(fw) = tensorflow(host, site, &dists, &installed) {
        frameworks.push(fw);
    }
    if let Some(fw) = jax(host, site, &dists, &installed) {
        frameworks.push(fw);
    }
    frameworks.extend(cupy(&dists));
    for d in dists.iter().filter(|d| d.name.starts_with("nvidia-")) {
        wheels.push(Wheel {
            name: d.name.clone(),
            version: d.version.clone(),
            lib_dir: wheel_lib_dir(host, site, &d.dir),
        });
    }
}

/// Packages that ship compiled code built against torch, by normalised distribution name, and
/// onnxruntime-gpu, whose CUDA provider links one CUDA major's libraries (its `DT_NEEDED`).
const EXTENSIONS: [&str; 10] = [
    "vllm",
    "flash-attn",
    "xformers",
    "bitsandbytes",
    "deepspeed",
    "torchvision",
    "torchaudio",
    "flashinfer-python",
    "sglang-kernel",
    "onnxruntime-gpu",
];

/// The extension packages of a site folder, with their torch-family pins.
fn scan_extensions(host: &Host, site: &Path) -> Vec<Extension> {
    host.fs
        .read_dir(site)
        .into_iter()
        .filter(|e| e.name.ends_with(".dist-info"))
        .filter_map(|e| {
            let (name, version) = python_pkg::dist_info_name(&e.name)?;
            let name = python_pkg::normalize_name(&name);
            if !EXTENSIONS.contains(&name.as_str()) {
                return None;
            }
            let mut requires: Vec<String> = host
                .fs
                .read_opt(e.path.join("METADATA"))
                .map(|t| python_pkg::metadata(&t).requires_dist)
                .unwrap_or_default()
                .into_iter()
                .filter(|r| ["torch", "torchvision", "torchaudio"].contains(&r.name.as_str()))
                .filter(|r| !r.marker.as_deref().is_some_and(|m| m.contains("extra")))
                .map(|r| format!("{}{}", r.name, r.spec))
                .collect();
            requires.sort();
            requires.dedup();
            Some(Extension {
                name,
                version,
                requires,
                source: e.path.display().to_string(),
                cuda_needed: cuda_needed(host, site, &e.path),
            })
        })
        .collect()
}

/// CUDA libraries whose soname major is the CUDA major they come with.
const CUDA_MAJOR_LIBS: [&str; 5] = [
    "libcudart.so.",
    "libcublas.so.",
    "libcublasLt.so.",
    "libnvrtc.so.",
    "libnvJitLink.so.",
];

/// How many of a package's compiled files are read (vLLM and flash-attn have a handful).
const MAX_EXTENSION_OBJECTS: usize = 16;

/// The CUDA sonames (of [`CUDA_MAJOR_LIBS`]) that the `.so` files a package's RECORD lists need.
fn cuda_needed(host: &Host, site: &Path, dist: &Path) -> Vec<String> {
    let record = host.fs.read_opt(dist.join("RECORD")).unwrap_or_default();
    let mut out: Vec<String> = record
        .lines()
        .filter_map(|l| l.split(',').next())
        .filter(|f| f.ends_with(".so") && !f.starts_with('/') && !f.split('/').any(|c| c == ".."))
        .take(MAX_EXTENSION_OBJECTS)
        .filter_map(|f| {
            let file = host.fs.open_ranged(&site.join(f)).ok()?;
            let mut read = |off: u64, len: usize| file.read_at(off, len);
            crate::parse::elf::parse(&mut read)
        })
        .flat_map(|d| d.needed)
        .filter(|n| CUDA_MAJOR_LIBS.iter().any(|p| n.starts_with(p)))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The `nvidia-*` pins in a framework's metadata ("nvidia-cudnn-cu13==9.19.0.56").
fn nvidia_pins(host: &Host, dist: Option<&Dist>, installed: &[String]) -> Vec<Requirement> {
    let Some(dist) = dist else { return Vec::new() };
    let arch = super::system::machine_arch(host);
    host.fs
        .read_opt(dist.dir.join("METADATA"))
        .or_else(|| host.fs.read_opt(dist.dir.join("PKG-INFO")))
        .map(|t| python_pkg::metadata(&t).requires_dist)
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.name.starts_with("nvidia-") || r.name == "cuda-toolkit")
        // A pin for another machine (`platform_machine == "x86_64"` on an aarch64 one: PyPI's
        // CPU-only aarch64 torch keeps its x86_64 CUDA pins) was never installed here.
        .filter(|r| {
            let wanted = r.marker.as_deref().and_then(marker_machine);
            match (wanted, arch.as_deref()) {
                (Some(wanted), Some(arch)) => wanted == arch,
                _ => true,
            }
        })
        // A pin under an extra (`extra == 'and-cuda'`) applies only when that extra was asked
        // for, which the metadata does not record; whether its package is installed tells.
        .filter(|r| {
            !r.marker.as_deref().is_some_and(|m| m.contains("extra")) || installed.contains(&r.name)
        })
        .collect()
}

/// The machine a requirement's marker limits it to: `x86_64` of `platform_system == "Linux"
/// and platform_machine == "x86_64"`; `None` when it names none (or not with `==`).
fn marker_machine(marker: &str) -> Option<&str> {
    let rest = marker.split("platform_machine").nth(1)?.trim_start();
    let rest = rest.strip_prefix("==")?.trim_start();
    let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let rest = &rest[1..];
    rest.find(quote).map(|end| &rest[..end])
}

/// The version a pin fixes (`==9.19.0.56` → "9.19.0.56"); ranges fix nothing.
fn pinned_version(req: &Requirement) -> Option<String> {
    req.spec
        .strip_prefix("==")
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty() && !v.contains(','))
}

fn pin_strings(pins: &[Requirement]) -> Vec<String> {
    let mut out: Vec<String> = pins
        .iter()
        .map(|r| format!("{}{}", r.name, r.spec))
        .collect();
    out.sort();
    out.dedup();
    out
}

fn cudnn_pin(pins: &[Requirement]) -> Option<String> {
    pins.iter()
        .find(|r| r.name.starts_with("nvidia-cudnn"))
        .and_then(pinned_version)
}

fn torch(host: &Host, site: &Path, dist: Option<&Dist>, installed: &[String]) -> Option<Framework> {
    let version_py = site.join("torch/version.py");
    let parsed = host
        .fs
        .read_opt(&version_py)
        .and_then(|t| python_pkg::torch_version_py(&t));
    if parsed.is_none() && dist.is_none() {
        return None;
    }
    let pins = nvidia_pins(host, dist, installed);
    let (version, cuda, hip, source) = match parsed {
        Some(p) => (Some(p.version), p.cuda, p.hip, version_py),
        None => (
            dist.map(|d| d.version.clone()),
            None,
            None,
            dist.map(|d| d.dir.clone()).unwrap_or_default(),
        ),
    };
    // Without version.py, the wheel's local tag still tells the build (`2.4.0+cu121`).
    let tag = version
        .as_deref()
        .and_then(python_pkg::local_tag)
        .map(python_pkg::parse_local)
        .unwrap_or_default();
    let cuda = cuda.or(tag.cuda);
    let hip = hip.or(tag.rocm);
    let variant = if cuda.is_some() {
        Some("cuda")
    } else if hip.is_some() {
        Some("rocm")
    } else if tag.cpu || (host.fs.exists(&source) && source.ends_with("version.py")) {
        Some("cpu")
    } else {
        None
    };
    Some(Framework {
        name: "torch".to_string(),
        version,
        cuda,
        cudnn: cudnn_pin(&pins),
        rocm: hip,
        variant: variant.map(str::to_string),
        arch_list: Vec::new(),
        pins: pin_strings(&pins),
        components: Vec::new(),
        source: source.display().to_string(),
        distribution: None,
        runtime: None,
        gfx_targets: Vec::new(),
        gfx_targets_source: None,
        bundled_runtime: Vec::new(),
    })
}

/// TensorFlow publishes under several names; the build facts are in one file for all of them.
const TF_DISTS: [&str; 6] = [
    "tensorflow",
    "tensorflow-cpu",
    "tensorflow-gpu",
    "tf-nightly",
    "tensorflow-intel",
    "tensorflow-rocm",
];

fn tensorflow(host: &Host, site: &Path, dists: &[Dist], installed: &[String]) -> Option<Framework> {
    let dist = dists.iter().find(|d| TF_DISTS.contains(&d.name.as_str()));
    let build_info = site.join("tensorflow/python/platform/build_info.py");
    let info = host
        .fs
        .read_opt(&build_info)
        .map(|t| python_pkg::tf_build_info(&t));
    if dist.is_none() && info.is_none() {
        return None;
    }
    let pins = nvidia_pins(host, dist, installed);
    let info = info.unwrap_or_default();
    let cuda_build = info.is_cuda_build == Some(true)
        || (info.is_cuda_build.is_none() && info.cuda_version.is_some());
    let rocm_dist = dist.is_some_and(|d| d.name == "tensorflow-rocm");
    let variant = match (cuda_build, info.is_rocm_build) {
        (true, _) => Some("cuda"),
        (false, Some(true)) => Some("rocm"),
        // AMD's `tensorflow-rocm` is a ROCm build by its name, whatever build_info holds.
        (false, None) if rocm_dist => Some("rocm"),
        (false, _) if host.fs.exists(&build_info) => Some("cpu"),
        _ => None,
    };
    Some(Framework {
        name: "tensorflow".to_string(),
        version: dist.map(|d| d.version.clone()),
        cuda: if cuda_build {
            info.cuda_version.clone()
        } else {
            None
        },
        cudnn: if cuda_build {
            info.cudnn_version.clone()
        } else {
            None
        },
        rocm: None,
        variant: variant.map(str::to_string),
        arch_list: info.cuda_compute_capabilities.clone(),
        pins: pin_strings(&pins),
        components: Vec::new(),
        source: if host.fs.exists(&build_info) {
            build_info.display().to_string()
        } else {
            dist.map(|d| d.dir.display().to_string())
                .unwrap_or_default()
        },
        distribution: dist.map(|d| d.name.clone()).filter(|n| n.ends_with("-cpu")),
        runtime: None,
        gfx_targets: Vec::new(),
        gfx_targets_source: None,
        bundled_runtime: Vec::new(),
    })
}

fn jax(host: &Host, site: &Path, dists: &[Dist], installed: &[String]) -> Option<Framework> {
    let jax = dists.iter().find(|d| d.name == "jax");
    let jaxlib = dists.iter().find(|d| d.name == "jaxlib");
    if jax.is_none() && jaxlib.is_none() {
        return None;
    }
    // The CUDA build lives in plugins since JAX 0.4.26 (`jax-cuda12-plugin` and
    // `jax-cuda12-pjrt` dists, a `jax_plugins/xla_cuda12` package). Older jaxlib wheels
    // carried it in their local version: `0.1.65+cuda112`, `0.4.20+cuda12.cudnn89`.
    let plugins: Vec<&Dist> = dists
        .iter()
        .filter(|d| python_pkg::is_jax_plugin(&d.name))
        .collect();
    let cuda_plugin = plugins
        .iter()
        .copied()
        .find(|d| d.name.ends_with("-plugin") && python_pkg::jax_plugin_cuda(&d.name).is_some());
    let plugin_dir = host
        .fs
        .read_dir(site.join("jax_plugins"))
        .into_iter()
        .find(|e| python_pkg::jax_plugin_cuda(&e.name).is_some());
    let rocm_plugin = plugins.iter().any(|d| d.name.starts_with("jax-rocm"));
    let tag = jaxlib
        .and_then(|d| python_pkg::local_tag(&d.version))
        .map(python_pkg::parse_local)
        .unwrap_or_default();
    let cuda = plugins
        .iter()
        .find_map(|p| python_pkg::jax_plugin_cuda(&p.name))
        .or_else(|| {
            plugin_dir
                .as_ref()
                .and_then(|e| python_pkg::jax_plugin_cuda(&e.name))
        })
        .or_else(|| tag.cuda.clone());
    let variant = if cuda.is_some() {
        "cuda"
    } else if rocm_plugin {
        "rocm"
    } else {
        "cpu"
    };
    let source = cuda_plugin
        .map(|p| p.dir.clone())
        .or_else(|| plugin_dir.map(|e| e.path))
        .or_else(|| jaxlib.filter(|_| tag.cuda.is_some()).map(|d| d.dir.clone()))
        .or_else(|| jax.map(|d| d.dir.clone()))
        .or_else(|| jaxlib.map(|d| d.dir.clone()))
        .unwrap_or_default();
    let pins = nvidia_pins(host, cuda_plugin, installed);
    let mut components: Vec<crate::report::Component> = jaxlib
        .into_iter()
        .chain(plugins.iter().copied())
        .map(|d| crate::report::Component {
            name: d.name.clone(),
            version: d.version.clone(),
        })
        .collect();
    components.sort_by(|a, b| a.name.cmp(&b.name));
    Some(Framework {
        name: "jax".to_string(),
        version: jax.or(jaxlib).map(|d| d.version.clone()),
        cuda,
        cudnn: tag.cudnn.or_else(|| cudnn_pin(&pins)),
        rocm: None,
        variant: Some(variant.to_string()),
        arch_list: Vec::new(),
        pins: pin_strings(&pins),
        components,
        source: source.display().to_string(),
        distribution: None,
        runtime: None,
        gfx_targets: Vec::new(),
        gfx_targets_source: None,
        bundled_runtime: Vec::new(),
    })
}

/// CuPy's wheel name says its CUDA: `cupy-cuda13x` (any 13.x), older `cupy-cuda102` (10.2).
fn cupy(dists: &[Dist]) -> Vec<Framework> {
    dists
        .iter()
        .filter(|d| {
            d.name == "cupy" || d.name.starts_with("cupy-cuda") || d.name.starts_with("cupy-rocm")
        })
        .map(|d| {
            let tag = python_pkg::cupy_name(&d.name);
            let variant = if tag.cuda.is_some() {
                Some("cuda")
            } else if d.name.starts_with("cupy-rocm") {
                Some("rocm")
            } else {
                None
            };
            let cuda = tag.cuda;
            Framework {
                name: "cupy".to_string(),
                version: Some(d.version.clone()),
                cuda,
                cudnn: None,
                rocm: tag.rocm,
                variant: variant.map(str::to_string),
                arch_list: Vec::new(),
                pins: Vec::new(),
                components: Vec::new(),
                source: d.dir.display().to_string(),
                distribution: None,
                runtime: None,
                gfx_targets: Vec::new(),
                gfx_targets_source: None,
                bundled_runtime: Vec::new(),
            }
        })
        .collect()
}

/// The folder of a wheel's first shared library, from its RECORD ("nvidia/cudnn/lib/...").
fn wheel_lib_dir(host: &Host, site: &Path, dist_dir: &Path) -> Option<String> {
    let record = host.fs.read_opt(dist_dir.join("RECORD"))?;
    record.lines().find_map(|line| {
        let file = line.split(',').next()?;
        if !file.contains(".so") || file.starts_with("..") || file.starts_with('/') {
            return None;
        }
        let dir = Path::new(file).parent()?;
        Some(site.join(dir).display().to_string())
    })
}

/// One `conda-meta/<name>-<version>-<build>.json` record.
#[derive(Debug, Default, serde::Deserialize)]
struct CondaRecord {
    #[serde(default)]
    name: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    build: String,
    #[serde(default)]
    depends: Vec<String>,
}

/// What a conda package record says of its CUDA and cuDNN: the build string
/// (`py3.7_cuda10.1.243_cudnn7.6.3_0`, conda-forge's `cuda120_py311h...`), else its `depends`
/// (`cudatoolkit >=9.0,<10.0a0`, `cuda-version >=12.0,<13`, `cudnn >=8.9.2.26,<9.0a0`), else the
/// environment's installed `cudatoolkit` / `cuda-version` record.
fn conda_build_facts(
    rec: &CondaRecord,
    installed_cuda: Option<&str>,
) -> (Option<String>, Option<String>) {
    let mut cuda = None;
    let mut cudnn = None;
    for token in rec.build.split('_') {
        if let Some(v) = token.strip_prefix("cudnn") {
            if v.starts_with(|c: char| c.is_ascii_digit()) {
                cudnn = Some(v.to_string());
            }
        } else if let Some(v) = token.strip_prefix("cuda")
            && v.starts_with(|c: char| c.is_ascii_digit())
        {
            cuda = if v.contains('.') {
                let mut parts = v.split('.');
                match (parts.next(), parts.next()) {
                    (Some(a), Some(b)) => Some(format!("{a}.{b}")),
                    _ => None,
                }
            } else if v.len() >= 2 && v.chars().all(|c| c.is_ascii_digit()) {
                // `cuda120` (conda-forge): the last digit is the minor.
                let (a, b) = v.split_at(v.len() - 1);
                Some(format!("{a}.{b}"))
            } else {
                None
            };
        }
    }
    let floor = |pkg: &str| -> Option<String> {
        rec.depends.iter().find_map(|d| {
            let (name, spec) = d.split_once(' ')?;
            if name != pkg {
                return None;
            }
            let v = spec
                .split(',')
                .find_map(|c| c.trim().strip_prefix(">="))
                .or_else(|| spec.trim().strip_prefix("=="))
                .or_else(|| {
                    Some(spec.trim()).filter(|s| s.starts_with(|c: char| c.is_ascii_digit()))
                })?;
            let v = v.trim_end_matches(".*").trim_end_matches('*');
            (!v.is_empty()).then(|| v.to_string())
        })
    };
    let major_minor = |v: String| -> String {
        let mut p = v.split('.');
        match (p.next(), p.next()) {
            (Some(a), Some(b)) => format!("{a}.{b}"),
            (Some(a), None) => a.to_string(),
            _ => v.clone(),
        }
    };
    let cuda = cuda
        .or_else(|| installed_cuda.map(|v| major_minor(v.to_string())))
        .or_else(|| floor("cudatoolkit").map(major_minor))
        .or_else(|| floor("cuda-version").map(major_minor));
    let cudnn = cudnn.or_else(|| floor("cudnn"));
    (cuda, cudnn)
}

/// Frameworks conda installed (`pytorch`, `cupy` records in `conda-meta`): their CUDA and cuDNN
/// from the record, added to what the site folder told (a conda CuPy's dist-info is plain
/// `cupy`, without the `-cudaXXX` of a wheel's name).
fn conda_frameworks(host: &Host, prefix: &Path, frameworks: &mut Vec<Framework>) {
    let records: Vec<(PathBuf, CondaRecord)> = host
        .fs
        .read_dir(prefix.join("conda-meta"))
        .into_iter()
        .filter(|e| {
            e.name.ends_with(".json")
                && ["pytorch-", "cupy-", "cudatoolkit-", "cuda-version-"]
                    .iter()
                    .any(|p| e.name.starts_with(p))
        })
        .filter_map(|e| {
            let mut rec: CondaRecord = serde_json::from_str(&host.fs.read_opt(&e.path)?).ok()?;
            // A record without its fields still has them in its file name
            // (`<name>-<version>-<build>.json`).
            if rec.name.is_empty() {
                let mut parts = e.name.trim_end_matches(".json").rsplitn(3, '-');
                if let (Some(build), Some(version), Some(name)) =
                    (parts.next(), parts.next(), parts.next())
                {
                    rec.name = name.to_string();
                    rec.version = version.to_string();
                    rec.build = build.to_string();
                }
            }
            if rec.build.is_empty() {
                rec.build = e
                    .name
                    .trim_end_matches(".json")
                    .strip_prefix(&format!("{}-{}-", rec.name, rec.version))
                    .unwrap_or_default()
                    .to_string();
            }
            Some((e.path, rec))
        })
        .collect();
    let installed_cuda = records
        .iter()
        .find(|(_, r)| r.name == "cudatoolkit")
        .or_else(|| records.iter().find(|(_, r)| r.name == "cuda-version"))
        .map(|(_, r)| r.version.as_str());
    for (path, rec) in &records {
        let name = match rec.name.as_str() {
            "pytorch" => "torch",
            "cupy" => "cupy",
            _ => continue,
        };
        // A CPU build says so (`pytorch-2.1.0-py3.11_cpu_0`, `cpuonly`).
        if rec.build.contains("cpu") {
            continue;
        }
        let (cuda, cudnn) = conda_build_facts(rec, installed_cuda);
        let Some(cuda) = cuda else { continue };
        // A cuDNN the package loads from the environment is a `depends`; pytorch's build string
        // names the cuDNN it was built with, which need not be a library in the environment, so
        // for torch only a `cudnn` dependency sets the need.
        let cudnn = if name == "torch" && !rec.depends.iter().any(|d| d.starts_with("cudnn ")) {
            None
        } else {
            cudnn
        };
        let source = format!("{} (conda-meta)", path.display());
        match frameworks.iter_mut().find(|f| f.name == name) {
            Some(fw) => {
                // Conda's build, not a pip wheel: its arch list is not the wheels'.
                if fw.distribution.is_none() {
                    fw.distribution = Some(format!("{} (conda)", rec.name));
                }
                if fw.cuda.is_none() && fw.rocm.is_none() {
                    fw.cuda = Some(cuda);
                    fw.variant = Some("cuda".to_string());
                    fw.source = source;
                }
                if fw.cudnn.is_none() {
                    fw.cudnn = cudnn;
                }
            }
            None => frameworks.push(Framework {
                name: name.to_string(),
                version: Some(rec.version.clone()),
                cuda: Some(cuda),
                cudnn,
                variant: Some("cuda".to_string()),
                distribution: Some(format!("{} (conda)", rec.name)),
                source,
                ..Framework::default()
            }),
        }
    }
}

#[cfg(test)]
mod conda_tests {
    use super::*;

    fn rec(name: &str, build: &str, depends: &[&str]) -> CondaRecord {
        CondaRecord {
            name: name.into(),
            version: "1.4.0".into(),
            build: build.into(),
            depends: depends.iter().map(|d| (*d).to_string()).collect(),
        }
    }

    #[test]
    fn cuda_and_cudnn_from_build_strings_and_depends() {
        let r = rec(
            "pytorch",
            "py3.7_cuda10.1.243_cudnn7.6.3_0",
            &["cudatoolkit >=10.1,<10.2"],
        );
        assert_eq!(
            conda_build_facts(&r, None),
            (Some("10.1".into()), Some("7.6.3".into()))
        );
        let r = rec(
            "cupy",
            "py37h0c141eb_0",
            &["cudatoolkit >=9.0,<10.0a0", "cudnn >=7.1.3,<8.0a0"],
        );
        assert_eq!(
            conda_build_facts(&r, None),
            (Some("9.0".into()), Some("7.1.3".into()))
        );
        // The environment's installed cudatoolkit is more precise than a floor.
        assert_eq!(
            conda_build_facts(&r, Some("9.2.148")).0.as_deref(),
            Some("9.2")
        );
        let r = rec(
            "pytorch",
            "cuda120_py311h2a7c8ff_300",
            &["cuda-version >=12.0,<13"],
        );
        assert_eq!(conda_build_facts(&r, None).0.as_deref(), Some("12.0"));
        let r = rec("cupy", "py313h2d7d3e4_0", &["cuda-version >=12,<13.0a0"]);
        assert_eq!(conda_build_facts(&r, None).0.as_deref(), Some("12"));
    }
}

#[cfg(test)]
mod order_tests {
    #[test]
    fn paths_are_ordered_by_the_numbers_in_them() {
        let mut paths = vec![
            "/root/.pyenv/versions/3.10.13",
            "/root/.pyenv/versions/3.6.15",
            "/usr",
            "/root/.pyenv/versions/3.9.18",
            "/root/.pyenv/versions/3.13.0",
            "/opt/env2",
            "/opt/env10",
            "/opt/env",
        ];
        paths.sort_by(|a, b| super::natural_cmp(a, b));
        assert_eq!(
            paths,
            [
                "/opt/env",
                "/opt/env2",
                "/opt/env10",
                "/root/.pyenv/versions/3.6.15",
                "/root/.pyenv/versions/3.9.18",
                "/root/.pyenv/versions/3.10.13",
                "/root/.pyenv/versions/3.13.0",
                "/usr",
            ]
        );
    }
}

#[cfg(test)]
mod tests {
    use super::marker_machine;

    #[test]
    fn a_marker_names_the_machine_its_requirement_is_for() {
        let torch = r#"platform_system == "Linux" and platform_machine == "x86_64""#;
        assert_eq!(marker_machine(torch), Some("x86_64"));
        assert_eq!(
            marker_machine("platform_machine=='aarch64' and python_version < '3.13'"),
            Some("aarch64")
        );
        assert_eq!(marker_machine(r#"python_version >= "3.12""#), None);
        assert_eq!(marker_machine(r#"platform_machine != "x86_64""#), None);
        assert_eq!(marker_machine(r#"platform_machine == "x86_64"#), None);
    }
}

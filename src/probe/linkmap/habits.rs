//! What frameworks do beyond what their ELF files say: which modules they load first, what
//! they load by path before anything else (torch's `_preload_cuda_deps`, JAX's
//! `_load_nvidia_libraries`), and what they `dlopen` by soname at run time.

use std::path::{Path, PathBuf};

use super::wheel_dirs;
use crate::framework::FrameworkName;
use crate::host::Host;
use crate::manifest::{FrameworkTable, SetInUse};
use crate::parse::libfamily as family;
use crate::parse::libname::split_soname;
use crate::report::{Framework, PythonEnv};

pub(super) fn is_cudnn_front(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(split_soname)
        .is_some_and(|(stem, _)| stem == "libcudnn")
}

/// How the resolution names onnxruntime-gpu's CUDA provider (`FrameworkLoads::framework`).
pub(super) const ONNXRUNTIME: &str = "onnxruntime";

/// Where onnxruntime-gpu keeps its CUDA provider, relative to site-packages.
const ONNXRUNTIME_PROVIDER: &str = "onnxruntime/capi/libonnxruntime_providers_cuda.so";

/// The environments (by index) whose onnxruntime-gpu CUDA provider is a readable ELF file, each
/// with the stand-in framework the resolution runs under. A stand-in file that is not ELF is
/// left out: its needs cannot be modelled (the provider links one CUDA major's libraries).
pub(super) fn onnxruntime_providers(host: &Host, envs: &[PythonEnv]) -> Vec<(usize, Framework)> {
    envs.iter()
        .enumerate()
        .filter(|(_, e)| e.extensions.iter().any(|x| x.name == "onnxruntime-gpu"))
        .filter_map(|(i, e)| {
            let provider = e
                .site_packages
                .iter()
                .map(|s| Path::new(s).join(ONNXRUNTIME_PROVIDER))
                .find(|p| host.fs.exists(p))?;
            let file = host.fs.open_ranged(&provider).ok()?;
            let mut read = |off: u64, len: usize| file.read_at(off, len);
            crate::parse::elf::parse(&mut read)?;
            let version = e
                .extensions
                .iter()
                .find(|x| x.name == "onnxruntime-gpu")
                .map(|x| x.version.clone());
            let fw = Framework {
                name: ONNXRUNTIME.to_string(),
                version,
                variant: Some("cuda".to_string()),
                source: provider.display().to_string(),
                ..Framework::default()
            };
            Some((i, fw))
        })
        .collect()
}

/// What onnxruntime-gpu's release loads by soname beside its CUDA provider's `DT_NEEDED`
/// (frameworks.toml `onnxruntime_cuda` `dlopen`): the 1.28+ provider's cuDNN loader
/// (`dlopen("libcudnn.so.9")` from the provider, on first use), `_ld_preload.py`'s list up to
/// 1.15 (`CDLL(soname)` at `import onnxruntime`, modelled with the provider as requester).
pub(super) fn onnxruntime_dlopen(fw: &Framework, set: &SetInUse) -> Vec<String> {
    fw.version
        .as_deref()
        .and_then(|v| set.manifests().frameworks.onnxruntime_cuda(v))
        .map(|row| row.dlopen.clone())
        .unwrap_or_default()
}

/// A framework's native modules, first the one loaded first.
pub(super) fn entry_points(host: &Host, sites: &[PathBuf], fw: &Framework) -> Vec<PathBuf> {
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
        match FrameworkName::from_report(&fw.name) {
            Some(FrameworkName::Torch) => {
                let lib = site.join("torch/lib");
                for name in ["libtorch_global_deps.so", "libtorch_cuda.so"] {
                    if host.fs.exists(lib.join(name)) {
                        out.push(lib.join(name));
                    }
                }
                out.extend(so_in(site.join("torch"), "_C."));
            }
            Some(FrameworkName::Jax) => {
                for e in host.fs.read_dir(site.join("jax_plugins")) {
                    out.extend(so_in(e.path, "xla_cuda_plugin"));
                }
                for e in host.fs.read_dir(site) {
                    if e.name.starts_with("jax_cuda") && e.name.ends_with("_plugin") {
                        out.extend(so_in(e.path, "_"));
                    }
                }
            }
            Some(FrameworkName::Tensorflow) => {
                let tf = site.join("tensorflow");
                out.extend(so_in(tf.clone(), "libtensorflow_framework.so"));
                out.extend(so_in(tf.clone(), "libtensorflow_cc.so"));
                out.extend(so_in(tf.join("python"), "_pywrap_tensorflow_internal"));
            }
            Some(FrameworkName::Cupy) => {
                out.extend(so_in(site.join("cupy_backends/cuda/libs"), "_"));
                out.extend(so_in(site.join("cupy_backends/cuda/api"), "_"));
                out.extend(so_in(site.join("cupy/_core"), "core"));
            }
            None if fw.name == ONNXRUNTIME => {
                let provider = site.join(ONNXRUNTIME_PROVIDER);
                if host.fs.exists(&provider) {
                    out.push(provider);
                }
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
pub(super) fn modelled_runpath(host: &Host, sites: &[PathBuf], fw: &Framework) -> Vec<String> {
    if fw.name == FrameworkName::Cupy {
        return Vec::new();
    }
    let mut out = Vec::new();
    for site in sites {
        if fw.name == FrameworkName::Torch {
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
pub(super) fn wheel_files(host: &Host, sites: &[PathBuf]) -> Vec<PathBuf> {
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
pub(super) fn jax_preloads(
    host: &Host,
    sites: &[PathBuf],
    fw: &Framework,
    set: &SetInUse,
) -> Vec<PathBuf> {
    // The plugin's own list when its file can be read, else the list of the installed jax
    // release (frameworks.toml `jax_preload`, read from jax's tags: none before 0.6.2).
    // The plugin is released under jaxlib's version, which may trail jax's.
    let release = fw
        .components
        .iter()
        .find(|c| c.name.starts_with("jax-cuda") && c.name.ends_with("-plugin"))
        .or_else(|| fw.components.iter().find(|c| c.name == "jaxlib"))
        .map(|c| c.version.as_str())
        .or(fw.version.as_deref());
    let order: Vec<(String, String)> = jax_preload_list(host, sites)
        .unwrap_or_else(|| modelled_jax_preloads(&set.manifests().frameworks, release));
    let mut out = Vec::new();
    for (module, lib) in order {
        // The first `nvidia` package on sys.path wins, as `importlib` finds it.
        if let Some(path) = sites
            .iter()
            .map(|s| s.join("nvidia").join(&module).join("lib").join(&lib))
            .find(|p| host.fs.exists(p))
        {
            out.push(path);
        }
    }
    out
}

/// The preload list of a jax release as `(module, file)` pairs, from the manifest; a release
/// not known (no version) takes the newest list.
pub(super) fn modelled_jax_preloads(
    table: &FrameworkTable,
    version: Option<&str>,
) -> Vec<(String, String)> {
    let row = match version.and_then(crate::version::package_version) {
        Some(v) => table.jax_preload(&v.without_local().to_string()),
        None => table.jax_preload.last(),
    };
    row.map(|r| {
        r.libraries
            .iter()
            .filter_map(|l| l.split_once('/'))
            .map(|(m, f)| (m.to_string(), f.to_string()))
            .collect()
    })
    .unwrap_or_default()
}

/// The sonames a framework loads at run time by name (or CuPy by path), beyond its modules'
/// `DT_NEEDED`: the CUDA libraries of its wheels, else the ones its CUDA and cuDNN versions name.
pub(super) fn runtime_needs(host: &Host, sites: &[PathBuf], fw: &Framework) -> Vec<String> {
    let uses = families_used(fw);
    let mut out = wheel_sonames(host, sites, uses);
    let have = |out: &Vec<String>, fam: &str| {
        out.iter()
            .any(|n| family::of(n).is_some_and(|f| f.as_str() == fam))
    };
    let cuda_major = fw
        .cuda
        .as_deref()
        .and_then(|c| c.split('.').next())
        .and_then(|m| m.parse::<u32>().ok());
    // torch's own copies are bundled (renamed) unless it pins the runtime wheels.
    let derive = fw.name != FrameworkName::Torch
        || fw.pins.iter().any(|p| p.starts_with("nvidia-cuda-runtime"));
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
        // CuPy compiles every kernel with NVRTC (cupy/cupy#9121); its soname carries the
        // major from CUDA 12 on (`libnvrtc.so.12`), `11.2` for all of CUDA 11.2+.
        if fw.name == FrameworkName::Cupy && uses.contains(&"nvrtc") && !have(&out, "nvrtc") {
            match major {
                11 => out.push("libnvrtc.so.11.2".to_string()),
                m if m >= 12 => out.push(format!("libnvrtc.so.{m}")),
                _ => {}
            }
        }
    }
    if let Some(m) = cudnn_major(fw)
        && uses.contains(&"cudnn")
        && !have(&out, "cudnn")
    {
        out.push(format!("libcudnn.so.{m}"));
    }
    out
}

/// The library families each framework opens at run time.
fn families_used(fw: &Framework) -> &'static [&'static str] {
    match FrameworkName::from_report(&fw.name) {
        Some(FrameworkName::Cupy) => &[
            "cudart",
            "cublas",
            "cusparse",
            "cufft",
            "curand",
            "cusolver",
            "nvrtc",
            "nvjitlink",
        ],
        Some(FrameworkName::Jax) => &[
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
        Some(FrameworkName::Tensorflow) => &[
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
        // torch's CUDA module (`libtorch_cuda.so`) links cuSPARSE, cuFFT and cuRAND beside the
        // runtime, cuBLAS, cuDNN and NCCL (its `DT_NEEDED` on the H200, torch 2.11.0+cu130:
        // tests/fixtures/real/h200-loads/toolkit-first/dynamic-sections.json), so `import torch`
        // maps them: onnxruntime-gpu's provider finds its cuFFT and cuRAND there.
        Some(FrameworkName::Torch) => &[
            "cudart", "cublas", "cudnn", "nccl", "cusparse", "cufft", "curand",
        ],
        _ => &["cudart", "cublas", "cudnn", "nccl"],
    }
}

/// The sonames of the wheels' front libraries in the families `uses` names, in wheel order.
fn wheel_sonames(host: &Host, sites: &[PathBuf], uses: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in wheel_files(host, sites) {
        let Some(name) = f.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        if is_front(&name) && family::of(&name).is_some_and(|fam| uses.contains(&fam.as_str())) {
            // The soname is the name cut to its first version number.
            let soname = soname_of(&name);
            if !out.contains(&soname) {
                out.push(soname);
            }
        }
    }
    out
}

/// A versioned file of a library a framework opens itself (not a sub-library that one of
/// them loads, such as cuDNN 9's engines).
fn is_front(name: &str) -> bool {
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
}

/// The cuDNN major a framework was built with, else the one its `nvidia-cudnn` pin names.
fn cudnn_major(fw: &Framework) -> Option<String> {
    fw.cudnn
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
        .filter(|m| !m.is_empty() && m.chars().all(|c| c.is_ascii_digit()))
}

/// `libcudnn.so.9.1.0` → `libcudnn.so.9`; `libcudart.so.11.0` keeps its minor.
pub(super) fn soname_of(name: &str) -> String {
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
pub(super) fn cudnn_sublibs(host: &Host, front: &Path) -> Vec<String> {
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

/// What the installed `torch/__init__.py` preloads by path (`_preload_cuda_deps`), read from the
/// file itself: the `(folder, pattern)` pairs of its `cuda_libs` list, in order, and whether it
/// preloads them every time once `libtorch_global_deps.so` mapped libcudart (the "slim-wheel"
/// workaround of pytorch/pytorch#138460, seen in torch 2.11's file: `if "libcudart.so" not in
/// _maps: return` then `_preload_cuda_deps()`) or only when that load failed (older files).
pub(super) struct TorchPreload {
    pub(super) always: bool,
    pub(super) libs: Vec<(String, String)>,
}

pub(super) fn torch_preload(host: &Host, sites: &[PathBuf]) -> Option<TorchPreload> {
    let text = sites
        .iter()
        .find_map(|s| host.fs.read_opt(s.join("torch/__init__.py")))?;
    let start = text.find("def _preload_cuda_deps")?;
    let body = &text[start..];
    // `cuda_libs: list[tuple[str, str]] = [` then one `("folder", "pattern"),` a line, to `]`.
    let list = &body[body.find("cuda_libs")?..];
    let libs: Vec<(String, String)> = list
        .lines()
        .skip(1)
        .take_while(|l| l.trim() != "]")
        .filter_map(|l| {
            let l = l.trim().strip_prefix('(')?;
            let mut q = l.split('"').skip(1).step_by(2);
            Some((q.next()?.to_string(), q.next()?.to_string()))
        })
        .collect();
    if libs.is_empty() {
        return None;
    }
    let always =
        text.contains("\"libcudart.so\" not in _maps") && text.contains("_preload_cuda_deps()");
    Some(TorchPreload { always, libs })
}

/// The files torch's `_preload_cuda_lib` picks for each pair: for the first `sys.path` entry
/// with a match, `nvidia/<folder>/lib/<pattern>`, then `nvidia/cu<major>/lib/<pattern>`, then
/// `<folder>/lib/<pattern>` (`_get_cuda_dep_paths`); the first match.
pub(super) fn torch_preload_files(
    host: &Host,
    sites: &[PathBuf],
    fw: &Framework,
    libs: &[(String, String)],
) -> Vec<PathBuf> {
    let major = fw
        .cuda
        .as_deref()
        .and_then(|c| c.split('.').next())
        .unwrap_or_default();
    let mut out = Vec::new();
    for (folder, pattern) in libs {
        let found = sites.iter().find_map(|site| {
            let dirs = [
                site.join("nvidia").join(folder).join("lib"),
                site.join("nvidia").join(format!("cu{major}")).join("lib"),
                site.join(folder).join("lib"),
            ];
            dirs.iter().find_map(|d| {
                let mut names: Vec<String> = host
                    .fs
                    .read_dir(d)
                    .into_iter()
                    .map(|e| e.name)
                    .filter(|n| glob_match(pattern, n))
                    .collect();
                names.sort();
                names.first().map(|n| d.join(n))
            })
        });
        out.extend(found);
    }
    out
}

/// The glob patterns torch uses: `*` and one trailing `[0-9]`.
fn glob_match(pattern: &str, name: &str) -> bool {
    let (pattern, digit) = match pattern.strip_suffix("[0-9]") {
        Some(p) => (p, true),
        None => (pattern, false),
    };
    let name = if digit {
        match name.strip_suffix(|c: char| c.is_ascii_digit()) {
            Some(n) => n,
            None => return false,
        }
    } else {
        name
    };
    match pattern.split_once('*') {
        Some((pre, post)) => {
            name.len() >= pre.len() + post.len() && name.starts_with(pre) && name.ends_with(post)
        }
        None => name == pattern,
    }
}

/// JAX's `_load_nvidia_libraries` as the installed plugin writes it: each `_load("<module>",
/// ["<lib>", ...])` line in order (`jax_plugins/xla_cuda*/__init__.py`).
pub(super) fn jax_preload_list(host: &Host, sites: &[PathBuf]) -> Option<Vec<(String, String)>> {
    let text = sites.iter().find_map(|s| {
        host.fs
            .read_dir(s.join("jax_plugins"))
            .into_iter()
            .filter(|e| e.name.starts_with("xla_cuda"))
            .find_map(|e| host.fs.read_opt(e.path.join("__init__.py")))
    })?;
    let start = text.find("def _load_nvidia_libraries")?;
    let body = &text[start..];
    let body = &body[..body[1..].find("\ndef ").map_or(body.len(), |i| i + 1)];
    let mut out = Vec::new();
    for line in body.lines() {
        let Some(args) = line.trim().strip_prefix("_load(") else {
            continue;
        };
        let quoted: Vec<&str> = args.split('"').skip(1).step_by(2).collect();
        if let Some((module, libs)) = quoted.split_first() {
            out.extend(
                libs.iter()
                    .map(|l| ((*module).to_string(), (*l).to_string())),
            );
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::{families_used, glob_match, modelled_jax_preloads};
    use crate::report::Framework;

    #[test]
    fn a_modelled_torch_maps_the_families_its_cuda_module_links() {
        // libtorch_cuda.so's DT_NEEDED on the H200 (torch 2.11.0+cu130): cuSPARSE, cuFFT and
        // cuRAND beside the runtime, cuBLAS, cuDNN and NCCL.
        let torch = Framework {
            name: "torch".into(),
            ..Framework::default()
        };
        for fam in [
            "cudart", "cublas", "cudnn", "nccl", "cusparse", "cufft", "curand",
        ] {
            assert!(families_used(&torch).contains(&fam), "{fam}");
        }
        let other = Framework {
            name: "paddle".into(),
            ..Framework::default()
        };
        assert!(!families_used(&other).contains(&"cufft"));
    }

    #[test]
    fn jax_preloads_by_plugin_release() {
        let files = |v: Option<&str>| -> Vec<String> {
            modelled_jax_preloads(&crate::manifest::embedded().frameworks, v)
                .into_iter()
                .map(|(m, f)| format!("{m}/{f}"))
                .collect()
        };
        // jax 0.6.2 is the first plugin with `_load_nvidia_libraries`.
        assert!(files(Some("0.4.30")).is_empty());
        assert!(files(Some("0.6.1")).is_empty());
        let first = files(Some("0.6.2"));
        assert_eq!(
            first.first().map(String::as_str),
            Some("cuda_runtime/libcudart.so.12")
        );
        assert_eq!(
            first.last().map(String::as_str),
            Some("cudnn/libcudnn.so.9")
        );
        assert!(!first.iter().any(|f| f.starts_with("cu13/")), "{first:?}");
        // From 0.7.0 the CUDA 13 wheel (`nvidia/cu13`) follows each CUDA 12 one.
        let later = files(Some("0.9.0"));
        assert_eq!(later[1], "cu13/libcudart.so.13");
        // Local tags are ignored; a release newer than the tags read takes the newest list.
        assert_eq!(files(Some("0.9.0+cuda12")), later);
        assert_eq!(files(Some("0.99.0")), files(None));
        assert_eq!(files(None), files(Some("0.11.0")));
    }

    #[test]
    fn torch_globs() {
        assert!(glob_match("libcublasLt.so.*[0-9]", "libcublasLt.so.13"));
        assert!(glob_match("libnvrtc.so.*[0-9]", "libnvrtc.so.13"));
        assert!(!glob_match("libnvrtc.so.*[0-9]", "libnvrtc.alt.so.13"));
        assert!(glob_match(
            "libnvrtc-builtins.so.*[0-9]",
            "libnvrtc-builtins.so.13.0"
        ));
        assert!(!glob_match("libcudart.so.*[0-9]", "libcudart.so"));
    }
}

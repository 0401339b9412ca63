//! The frameworks (torch, TensorFlow, JAX, CuPy) and CUDA wheels of one site folder, from
//! their files and dist-info metadata, without importing anything.

use std::path::{Path, PathBuf};

use crate::host::Host;
use crate::parse::python_pkg::{self, Requirement};
use crate::report::{Framework, Wheel};
use crate::version::Version;

/// A dist-info folder found in a site folder.
struct Dist {
    name: String,
    version: String,
    dir: PathBuf,
}

pub(super) fn scan_site(
    host: &Host,
    site: &Path,
    frameworks: &mut Vec<Framework>,
    wheels: &mut Vec<Wheel>,
) {
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
    let installed: Vec<(String, String)> = dists
        .iter()
        .map(|d| (d.name.clone(), d.version.clone()))
        .collect();
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
    // NVIDIA's CUDA Python binding (`cuda-bindings`, its `cuda-python` metapackage) is built
    // per CUDA major like the `nvidia-*` wheels (`diagnose::cuda_wheels`).
    let nvidia = |n: &str| n.starts_with("nvidia-") || n == "cuda-bindings" || n == "cuda-python";
    for d in dists.iter().filter(|d| nvidia(&d.name)) {
        wheels.push(Wheel {
            name: d.name.clone(),
            version: d.version.clone(),
            lib_dir: wheel_lib_dir(host, site, &d.dir),
        });
    }
}

/// The `nvidia-*` pins in a framework's metadata ("nvidia-cudnn-cu13==9.19.0.56").
fn nvidia_pins(
    host: &Host,
    dist: Option<&Dist>,
    installed: &[(String, String)],
) -> Vec<Requirement> {
    let Some(dist) = dist else { return Vec::new() };
    let arch = crate::probe::system::machine_arch(host);
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
        .filter(|r| {
            !r.marker.as_deref().is_some_and(|m| m.contains("extra"))
                || extra_pin_applies(r, installed)
        })
        .collect()
}

/// Whether a pin under an extra (`extra == 'and-cuda'`) binds the environment. The metadata does
/// not record which extras were asked for: its package not installed, the extra was not. Its
/// package installed at a newer release of the same major than the extra's `==` pin (TensorFlow
/// 2.18's `nvidia-cudnn-cu12==9.3.0.75` beside the cuDNN 9.8 that `jax[cuda12]` brought) was not
/// put there by the extra, and serves the framework: cuDNN runs a build on a library of its major
/// at or above the build's minor ("CuDNN library needs to have matching major version and equal
/// or higher minor version", TensorFlow's and XLA's `cuda_dnn.cc`), and CUDA's libraries keep
/// their major's older releases' entry points. An older release, or another major, still binds.
fn extra_pin_applies(req: &Requirement, installed: &[(String, String)]) -> bool {
    let Some((_, version)) = installed.iter().find(|(n, _)| *n == req.name) else {
        return false;
    };
    let pinned = pinned_version(req).and_then(|v| Version::parse(&v));
    let have = Version::parse(version);
    !matches!((pinned, have), (Some(p), Some(h)) if h.major() == p.major() && h > p)
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

fn torch(
    host: &Host,
    site: &Path,
    dist: Option<&Dist>,
    installed: &[(String, String)],
) -> Option<Framework> {
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
        hipblaslt_targets: Vec::new(),
        hipblaslt_source: None,
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

fn tensorflow(
    host: &Host,
    site: &Path,
    dists: &[Dist],
    installed: &[(String, String)],
) -> Option<Framework> {
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
        hipblaslt_targets: Vec::new(),
        hipblaslt_source: None,
        bundled_runtime: Vec::new(),
    })
}

fn jax(
    host: &Host,
    site: &Path,
    dists: &[Dist],
    installed: &[(String, String)],
) -> Option<Framework> {
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
        hipblaslt_targets: Vec::new(),
        hipblaslt_source: None,
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
                hipblaslt_targets: Vec::new(),
                hipblaslt_source: None,
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

#[cfg(test)]
mod marker_tests {
    use super::{extra_pin_applies, marker_machine};
    use crate::parse::python_pkg::Requirement;

    fn and_cuda(name: &str, spec: &str) -> Requirement {
        Requirement {
            name: name.into(),
            extras: Vec::new(),
            spec: spec.into(),
            marker: Some("extra == 'and-cuda'".into()),
        }
    }

    #[test]
    fn an_extra_pin_binds_unless_its_package_is_absent_or_a_newer_release_of_its_major() {
        let pin = and_cuda("nvidia-cudnn-cu12", "==9.3.0.75");
        let installed = |v: &str| vec![("nvidia-cudnn-cu12".to_string(), v.to_string())];
        // jax[cuda12] brought cuDNN 9.8 beside TensorFlow 2.18: the extra did not install it.
        assert!(!extra_pin_applies(&pin, &installed("9.8.0.87")));
        // torch's cuDNN 9.1 beside it: older than TensorFlow's build, the pin still binds.
        assert!(extra_pin_applies(&pin, &installed("9.1.0.70")));
        assert!(extra_pin_applies(&pin, &installed("9.3.0.75")));
        assert!(extra_pin_applies(&pin, &installed("10.0.0.1")));
        assert!(!extra_pin_applies(&pin, &[]));
        // A range under an extra binds whenever its package is there.
        let range = and_cuda("nvidia-cudnn-cu12", ">=9.0,<10");
        assert!(extra_pin_applies(&range, &installed("9.8.0.87")));
    }

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

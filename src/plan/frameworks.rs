//! A framework named with `--framework`, resolved against the manifests into what pip installs
//! (requirement, index URL), what it needs of the driver, and how a later run recognises it as
//! installed. Installed the way each project recommends today: PyTorch from its own wheel index
//! for the CUDA variant, TensorFlow with `[and-cuda]`, JAX with its `cudaNN` extra, CuPy as the
//! `cupy-cudaNNx` wheel (compat-frameworks.md; compat-cuda.md 6.1). Pure.

use crate::manifest::{CudaTable, JaxExtra, JaxRequirement, Manifests};
use crate::version::Version;

use super::choose::{self, DriverCap};
use super::target::{FrameworkName, FrameworkSpec};
use crate::version::{compare, python_fits};

/// A framework to pip-install, decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameworkPlan {
    pub name: FrameworkName,
    /// For people: `torch 2.5.1 (cu124)`.
    pub label: String,
    /// The pip requirement: `torch==2.5.1+cu124`, `tensorflow[and-cuda]==2.17.*`.
    pub requirement: String,
    /// `--index-url` (PyTorch's index for the variant).
    pub index_url: Option<String>,
    /// The distribution a later run looks for, the version prefix it must have (`2.5.1.`,
    /// empty for any) and the local tag (`cu124`).
    pub dist: String,
    pub dist_prefix: String,
    pub dist_local: Option<String>,
    /// The CUDA the build is for: `12.4`, or just the major (`13`) for JAX and CuPy.
    pub cuda: Version,
    pub cuda_is_minor: bool,
    /// The framework's own driver minimum, above the CUDA floor.
    pub driver_floor: Option<Version>,
    /// The cuDNN major the framework was built with, when it matters to a system cuDNN.
    pub cudnn: Option<u64>,
    /// The Python to create an environment with when none is asked for.
    pub python_default: Option<String>,
    /// Another build is installed in the target environment: uninstall it first (pip treats
    /// `2.5.1+cpu` as satisfying `torch==2.5.1`).
    pub replace: bool,
    /// Why this build, for the step's comment.
    pub why: String,
    /// The Python the requirement was checked against (pypi.toml: Requires-Python, wheels,
    /// extras), when known.
    pub python: Option<String>,
    /// The distribution and extra whose wheels must be installed after pip ran
    /// (`jax`, `cuda13`), for the step's check that the GPU build landed.
    pub extra_dist: Option<(String, String)>,
    /// Distributions that pin this framework's release (torchvision, torchaudio for torch):
    /// moved with it wherever the environment has them.
    pub companions: Vec<String>,
}

/// What pip would land: the newest release of `package` (matching `version`, a release or a
/// series) that installs on `python` and declares `extra`, from pypi.toml. `Ok(None)`: the
/// newest release overall fits, so pip needs no pin; `Ok(Some(v))`: pin `==v`, because pip
/// would otherwise fall back to an older release without the extra (or no wheel at all);
/// `Err`: nothing fits, with the Pythons that would.
pub(super) fn land(
    m: &Manifests,
    arch: &str,
    package: &str,
    version: Option<&str>,
    extra: Option<&str>,
    python: &str,
) -> Result<Option<String>, String> {
    if !m.pypi.knows(package) {
        return Ok(None);
    }
    let python = short_python(python);
    let python = python.as_str();
    let with_extra = extra.map_or_else(String::new, |e| format!("[{e}]"));
    let asked = version.map_or_else(String::new, |v| format!(" {v}"));
    let Some(fits) = m.pypi.newest(package, version, python, arch, extra) else {
        let pythons = m.pypi.pythons_for(package, version, arch, extra);
        let known = m.pypi.releases(package).any(|r| {
            version.is_none_or(|v| r.version == v || r.version.starts_with(&format!("{v}.")))
        });
        return Err(if !known {
            format!("PyPI has no {package}{asked} (pypi.toml)")
        } else if pythons.is_empty() {
            format!(
                "no {package}{with_extra}{asked} release on PyPI installs on Linux {arch} (pypi.toml)"
            )
        } else {
            format!(
                "{package}{with_extra}{asked} has no release for Python {python}: its wheels and \
                 Requires-Python fit Python {} (pypi.toml)",
                pythons.join(", ")
            )
        });
    };
    let newest = m.pypi.releases(package).rev().find(|r| {
        version.is_none_or(|v| r.version == v || r.version.starts_with(&format!("{v}.")))
    });
    Ok(match newest {
        Some(n) if n.version == fits.version => None,
        _ => Some(fits.version.clone()),
    })
}

/// The Python a planned environment will have (`3.12` of `3.12.3`).
fn short_python(python: &str) -> String {
    Version::parse(python).map_or_else(|| python.to_string(), |v| v.major_minor())
}

/// Resolves a framework for these GPUs and (when known) this driver.
///
/// `cuda`: `--cuda`, which the framework's build must match. `driver`: the driver the build
/// should run on as it is (the working one or a `--driver` branch); `None` picks the newest
/// build and lets the planner choose the driver. `python`: the Python it must support.
/// `with_ctk`: a CuPy without a system toolkit needs the CUDA libraries from pip.
///
/// # Errors
/// A sentence with the facts when the framework cannot work here.
#[expect(
    clippy::too_many_arguments,
    reason = "each is one fact the choice depends on"
)]
pub fn resolve(
    m: &Manifests,
    arch: &str,
    spec: &FrameworkSpec,
    ccs: &[String],
    cuda: Option<&Version>,
    driver: Option<&DriverCap>,
    python: Option<&str>,
    cudnn: Option<u64>,
    with_ctk: bool,
) -> Result<FrameworkPlan, String> {
    match spec.name {
        FrameworkName::Torch => torch(m, arch, spec, ccs, cuda, driver, python),
        FrameworkName::Tensorflow => tensorflow(m, arch, spec, ccs, cuda, python, cudnn),
        FrameworkName::Jax => jax(m, arch, spec, ccs, cuda, driver, python),
        FrameworkName::Cupy => cupy(m, arch, spec, ccs, cuda, driver, python, with_ctk),
    }
}

fn python_range(min: &str, max: Option<&str>) -> String {
    match max {
        Some(max) => format!("{min} to {max}"),
        None => format!("{min} or newer"),
    }
}

/// The pip version pin for a version the user gave: exact for three parts, a series for less.
fn pin(version: &str, local: Option<&str>) -> String {
    if version.split('.').count() >= 3 {
        match local {
            Some(local) => format!("=={version}+{local}"),
            None => format!("=={version}"),
        }
    } else {
        format!("=={version}.*")
    }
}

fn torch(
    m: &Manifests,
    arch: &str,
    spec: &FrameworkSpec,
    ccs: &[String],
    cuda: Option<&Version>,
    driver: Option<&DriverCap>,
    python: Option<&str>,
) -> Result<FrameworkPlan, String> {
    let arm;
    let table = if arch == "aarch64" {
        arm = aarch64_torch(m);
        &arm
    } else {
        &m.frameworks
    };
    let release = torch_release(m, table, arch, spec, ccs, cuda, driver, python)?;
    if let Some(py) = python
        && !python_fits(py, &release.python_min, release.python_max.as_deref())
    {
        return Err(format!(
            "torch {} supports Python {}, not {py}",
            release.version,
            python_range(&release.python_min, release.python_max.as_deref())
        ));
    }
    if let Some(py) = python {
        land(m, arch, "torch", Some(&release.version), None, py)?;
    }
    let pick = choose::torch_build(&m.cuda, release, ccs, cuda, driver)?;
    let variant = pick.build.variant.clone();
    let version = spec
        .version
        .clone()
        .unwrap_or_else(|| release.version.clone());
    let cuda_v = Version::parse(&format!("{}.{}", pick.cuda.0, pick.cuda.1))
        .ok_or_else(|| format!("torch variant {variant}"))?;
    if let Some(why) = choose::wheels_refuse_gpus(&m.cuda, &cuda_v, ccs) {
        return Err(format!("torch's {variant} build cannot work here: {why}"));
    }
    let local = (version.split('.').count() >= 3).then_some(variant.as_str());
    let arch = pick.build.sass.as_ref().map_or_else(
        || "its architecture list is not in the manifests".to_string(),
        |sass| format!("it has code for compute capability {}", sass.join(", ")),
    );
    let driver_note = match driver {
        Some(_) if pick.driver_runs => "the driver runs it",
        Some(_) => "it needs a newer driver, which this plan installs",
        None => "the plan installs a driver for it",
    };
    Ok(FrameworkPlan {
        name: FrameworkName::Torch,
        label: format!("torch {version} ({variant})"),
        requirement: format!("torch{}", pin(&version, local)),
        index_url: Some(m.frameworks.torch_index_url(&variant)),
        dist: "torch".to_string(),
        dist_prefix: format!("{version}."),
        dist_local: Some(variant.clone()),
        cuda: cuda_v.clone(),
        cuda_is_minor: true,
        driver_floor: None,
        cudnn: None,
        python_default: Some(
            release
                .python_max
                .clone()
                .unwrap_or_else(|| release.python_min.clone()),
        ),
        replace: false,
        python: python.map(short_python),
        extra_dist: None,
        why: format!(
            "PyTorch's {variant} wheels bundle CUDA {cuda_v}, cuDNN and NCCL; {arch}; \
             {driver_note}. PyTorch's own index serves each CUDA variant \
             (frameworks.toml torch {}, compat-cuda.md 6.1).",
            release.version
        ),
        companions: companions(m, "torch"),
    })
}

/// The torch release to install: the one asked for, else the newest with a build for these
/// GPUs (on the driver that stays, when one does), from `table` (on aarch64: only releases
/// whose PyPI aarch64 wheels are a CUDA build).
#[expect(
    clippy::too_many_arguments,
    reason = "each is one fact the choice depends on, as in `resolve`"
)]
fn torch_release<'t>(
    m: &Manifests,
    table: &'t crate::manifest::FrameworkTable,
    arch: &str,
    spec: &FrameworkSpec,
    ccs: &[String],
    cuda: Option<&Version>,
    driver: Option<&DriverCap>,
    python: Option<&str>,
) -> Result<&'t crate::manifest::TorchRelease, String> {
    match &spec.version {
        Some(v) => table.torch_release(v).ok_or_else(|| {
            if m.frameworks.torch_release(v).is_some() {
                return aarch64_refusal(m, v);
            }
            let known: Vec<&str> = m
                .frameworks
                .torch
                .iter()
                .map(|r| r.version.as_str())
                .collect();
            format!(
                "torch {v} is not a release the manifests know ({})",
                known.join(", ")
            )
        }),
        None => {
            let fixed = driver.filter(|d| d.fixed);
            let lands = |r: &crate::manifest::TorchRelease| {
                python.is_none_or(|py| land(m, arch, "torch", Some(&r.version), None, py).is_ok())
            };
            choose::newest_torch(&m.cuda, table, ccs, cuda, python, fixed, &lands)
                .or_else(|| choose::newest_torch(&m.cuda, table, ccs, cuda, python, None, &lands))
                .ok_or_else(|| {
                    let py = python
                        .map(|p| format!(" and Python {p}"))
                        .unwrap_or_default();
                    let arm = if arch == "aarch64" {
                        format!(" on aarch64 ({})", aarch64_builds(m))
                    } else {
                        String::new()
                    };
                    format!(
                        "no torch release in the manifests has a CUDA build for compute \
                         capability {}{py}{arm}",
                        ccs.join(", ")
                    )
                })
        }
    }
}

/// TensorFlow on aarch64 needs PyPI's aarch64 wheels of the series to be a CUDA build; they
/// are CPU-only in every release pypi.toml records.
fn tensorflow_aarch64(m: &Manifests, series: &str) -> Result<(), String> {
    let build = m.pypi.aarch64_build("tensorflow", series);
    if build.is_some_and(|b| b.starts_with("cu")) {
        return Ok(());
    }
    let what = match build {
        None => "not recorded",
        Some("cpu") => "CPU-only builds",
        Some(b) => b,
    };
    Err(format!(
        "TensorFlow {series} has no CUDA build for aarch64 on PyPI: its aarch64 wheels are \
         {what} (pypi.toml aarch64_build, from the wheels' own build_info.py), so \
         `tensorflow[and-cuda]` would install a TensorFlow that never uses the GPU"
    ))
}

/// The torch releases and builds an aarch64 machine can pip-install with CUDA: those whose
/// PyPI aarch64 wheels are a CUDA build (pypi.toml `aarch64_build`, read from the wheels' own
/// `torch/version.py`), with that build alone. PyTorch's own index was not readable when the
/// table was made, so its other aarch64 variants are not planned (pypi.toml `gaps`).
fn aarch64_torch(m: &Manifests) -> crate::manifest::FrameworkTable {
    let mut table = m.frameworks.clone();
    table.torch.retain_mut(|release| {
        let Some(build) = m
            .pypi
            .aarch64_build("torch", &release.version)
            .filter(|b| b.starts_with("cu"))
        else {
            return false;
        };
        release.builds.retain(|b| b.variant == build);
        !release.builds.is_empty()
    });
    table
}

/// What PyPI's aarch64 torch wheels are, in a few words: `CPU-only up to 2.10.0, cu130 from
/// 2.11.0`.
fn aarch64_builds(m: &Manifests) -> String {
    let mut runs: Vec<(String, String, String)> = Vec::new();
    for r in m.pypi.releases("torch") {
        let Some(build) = r.aarch64_build.as_deref() else {
            continue;
        };
        match runs.last_mut() {
            Some((b, _, last)) if b == build => last.clone_from(&r.version),
            _ => runs.push((build.to_string(), r.version.clone(), r.version.clone())),
        }
    }
    let words: Vec<String> = runs
        .iter()
        .map(|(build, first, last)| {
            let what = if build == "cpu" { "CPU-only" } else { build };
            if first == last {
                format!("{what} in {first}")
            } else {
                format!("{what} from {first} to {last}")
            }
        })
        .collect();
    format!(
        "PyPI's aarch64 torch wheels: {} (pypi.toml)",
        words.join(", ")
    )
}

/// Why a torch release the manifests know is not planned on aarch64.
fn aarch64_refusal(m: &Manifests, version: &str) -> String {
    let build = m
        .pypi
        .aarch64_build("torch", version)
        .unwrap_or("not recorded");
    format!(
        "torch {version} has no CUDA build for aarch64 that gpu-doctor knows: its PyPI aarch64 \
         wheel is {build}, and PyTorch's own index's aarch64 wheels are not in the manifests. \
         {}. Ask for a release with a CUDA build, or leave the version out.",
        aarch64_builds(m)
    )
}

fn tensorflow(
    m: &Manifests,
    arch: &str,
    spec: &FrameworkSpec,
    ccs: &[String],
    cuda: Option<&Version>,
    python: Option<&str>,
    cudnn: Option<u64>,
) -> Result<FrameworkPlan, String> {
    let tf = &m.frameworks;
    let config = match &spec.version {
        Some(v) => tf.tensorflow(v).ok_or_else(|| {
            let known: Vec<&str> = tf.tensorflow.iter().map(|r| r.version.as_str()).collect();
            format!(
                "TensorFlow {v} is not a release the manifests know ({})",
                known.join(", ")
            )
        })?,
        None => tf
            .tensorflow
            .last()
            .ok_or("the manifests list no TensorFlow release")?,
    };
    let series = Version::parse(&config.version)
        .map(|v| v.major_minor())
        .unwrap_or_default();
    let first = &tf.tensorflow_pip.and_cuda_first;
    if compare(&series, first).is_lt() {
        return Err(format!(
            "TensorFlow {series} predates the [and-cuda] extra (first in {first}): it needs CUDA \
             {} and cuDNN {} from the system, which gpu-doctor plans do not install",
            config.cuda, config.cudnn
        ));
    }
    let built_cuda = Version::parse(&config.cuda).ok_or("TensorFlow's CUDA")?;
    let built_cudnn = Version::parse(&config.cudnn).ok_or("TensorFlow's cuDNN")?;
    if let Some(c) = cuda
        && c.major() != built_cuda.major()
    {
        return Err(format!(
            "TensorFlow {series} is built for CUDA {built_cuda}, not CUDA {c}.x"
        ));
    }
    if let Some(major) = cudnn
        && major != built_cudnn.major()
    {
        return Err(format!(
            "TensorFlow {series} was built with cuDNN {built_cudnn}: it loads only cuDNN {}.x \
             (libcudnn.so.{}), never cuDNN {major}",
            built_cudnn.major(),
            built_cudnn.major()
        ));
    }
    if let Some(py) = python
        && !python_fits(py, &config.python_min, Some(&config.python_max))
    {
        return Err(format!(
            "TensorFlow {series} supports Python {}, not {py}",
            python_range(&config.python_min, Some(&config.python_max))
        ));
    }
    if let Some(why) = choose::wheels_refuse_gpus(&m.cuda, &built_cuda, ccs) {
        return Err(format!("TensorFlow {series} cannot work here: {why}"));
    }
    if arch == "aarch64" {
        tensorflow_aarch64(m, &series)?;
    }
    if let Some(py) = python {
        land(m, arch, "tensorflow", Some(&series), Some("and-cuda"), py)?;
    }
    let pulls = tf
        .tensorflow_and_cuda(&config.version)
        .map_or_else(String::new, |row| {
            format!(
                " ([and-cuda] pulls CUDA {} wheels {}, cuDNN {}, NCCL {})",
                row.cuda_major, row.cuda_wheels, row.cudnn, row.nccl
            )
        });
    let version = spec.version.clone().unwrap_or_else(|| series.clone());
    Ok(FrameworkPlan {
        name: FrameworkName::Tensorflow,
        label: format!("TensorFlow {version} with [and-cuda]"),
        requirement: format!("tensorflow[and-cuda]{}", pin(&version, None)),
        index_url: None,
        dist: "tensorflow".to_string(),
        dist_prefix: format!("{version}."),
        dist_local: None,
        cuda: built_cuda.clone(),
        cuda_is_minor: true,
        driver_floor: Version::parse(&tf.tensorflow_pip.driver_min_linux),
        cudnn: Some(built_cudnn.major()),
        python_default: Some(config.python_max.clone()),
        replace: false,
        python: python.map(short_python),
        extra_dist: Some(("tensorflow".to_string(), "and-cuda".to_string())),
        why: format!(
            "TensorFlow {series} is built with CUDA {built_cuda} and cuDNN {built_cudnn}; the \
             [and-cuda] extra installs matching NVIDIA wheels{pulls}, so no system CUDA is needed \
             (frameworks.toml tensorflow, tensorflow_and_cuda)."
        ),
        companions: Vec::new(),
    })
}

/// The JAX requirement rows for a major, newest last.
fn jax_rows(m: &Manifests, major: u64) -> impl Iterator<Item = &JaxRequirement> {
    m.frameworks
        .jax
        .iter()
        .filter(move |r| r.cuda_major == major)
}

/// The CUDA major to use for JAX or CuPy: `--cuda`'s, else 13 when every GPU and the driver
/// (if one is kept) allow it, else 12.
fn pick_major(
    table: &CudaTable,
    ccs: &[String],
    cuda: Option<&Version>,
    driver: Option<&DriverCap>,
) -> u64 {
    if let Some(c) = cuda {
        return c.major();
    }
    let gpus_take_13 = Version::parse("13.0")
        .is_some_and(|v| choose::wheels_refuse_gpus(table, &v, ccs).is_none());
    let driver_takes_13 =
        driver.is_none_or(|cap| Version::parse("13.0").is_some_and(|v| cap.runs(table, &v)));
    if gpus_take_13 && driver_takes_13 {
        13
    } else {
        12
    }
}

/// JAX with the `cudaNN` extra that brings NVIDIA's wheels: the extra for these GPUs and this
/// driver, checked against the extra's own history and the GPUs it serves, then the release pip
/// would land on the Python of the environment.
fn jax(
    m: &Manifests,
    arch: &str,
    spec: &FrameworkSpec,
    ccs: &[String],
    cuda: Option<&Version>,
    driver: Option<&DriverCap>,
    python: Option<&str>,
) -> Result<FrameworkPlan, String> {
    let major = jax_major(m, spec, ccs, cuda, driver)?;
    let extra = format!("cuda{major}");
    let row = m
        .frameworks
        .jax_extra(&extra)
        .ok_or_else(|| format!("jax[{extra}] is not an extra the manifests know"))?;
    jax_extra_fits(m, spec, ccs, row, major)?;
    let req_row = match &spec.version {
        Some(v) => Some(
            m.frameworks
                .jax(v, major)
                .ok_or_else(|| format!("JAX {v} with CUDA {major} is not in the manifests"))?,
        ),
        None => jax_rows(m, major).filter(|r| r.driver_min.is_some()).last(),
    };
    let floor = req_row
        .and_then(|r| r.driver_min.as_deref())
        .and_then(Version::parse);
    let python_default = req_row.and_then(|r| r.python_min.clone()).or_else(|| {
        jax_rows(m, major)
            .filter_map(|r| r.python_min.clone())
            .last()
    });
    let landing = match python {
        Some(py) => jax_landing(m, arch, spec, major, py)?,
        None => JaxLanding::default(),
    };
    let version_pin = landing.pin.unwrap_or_else(|| {
        spec.version
            .as_deref()
            .map(|v| pin(v, None))
            .unwrap_or_default()
    });
    let floor_text = floor
        .as_ref()
        .map_or_else(String::new, |f| format!("; JAX wants driver {f} or newer"));
    Ok(FrameworkPlan {
        name: FrameworkName::Jax,
        label: format!(
            "JAX{} with [{extra}]",
            spec.version
                .as_deref()
                .map(|v| format!(" {v}"))
                .unwrap_or_default()
        ),
        requirement: format!("jax[{extra}]{version_pin}"),
        index_url: None,
        dist: format!("jax-cuda{major}-plugin"),
        dist_prefix: spec
            .version
            .as_deref()
            .map(|v| format!("{v}."))
            .unwrap_or_default(),
        dist_local: None,
        cuda: Version::parse(&major.to_string()).ok_or("JAX's CUDA")?,
        cuda_is_minor: false,
        driver_floor: floor,
        cudnn: None,
        python_default,
        replace: false,
        python: python.map(short_python),
        extra_dist: Some(("jax".to_string(), extra.clone())),
        why: format!(
            "jax[{extra}] pulls {}{floor_text} (frameworks.toml jax_extra, jax).{}",
            row.pulls, landing.why
        ),
        companions: Vec::new(),
    })
}

/// The CUDA major `jax[cuda]` installs: the extra is an alias of `cuda12` (frameworks.toml
/// `[[jax_extra]]` "cuda" pulls `jax-cuda12-plugin[with-cuda]`, from jax-ml/jax CHANGELOG.md @
/// cec06d11; a test keeps the two in step).
const JAX_CUDA_ALIAS_MAJOR: u64 = 12;

/// The CUDA major of the JAX extra: the one `jax[cudaNN]` names, else the one these GPUs and
/// the driver take; `--cuda` must agree with it, since each extra is built for one major.
fn jax_major(
    m: &Manifests,
    spec: &FrameworkSpec,
    ccs: &[String],
    cuda: Option<&Version>,
    driver: Option<&DriverCap>,
) -> Result<u64, String> {
    let major = match spec.extra.as_deref() {
        Some("cuda") => JAX_CUDA_ALIAS_MAJOR,
        Some("cuda12") => 12,
        Some("cuda13") => 13,
        Some(other) => {
            return Err(format!(
                "jax[{other}]: plans install jax[cuda12] or jax[cuda13] (the extras that bring \
                 NVIDIA's wheels)"
            ));
        }
        None => pick_major(&m.cuda, ccs, cuda, driver),
    };
    if let Some(c) = cuda
        && c.major() != major
    {
        return Err(format!(
            "jax[cuda{major}] is built for CUDA {major}, not CUDA {c}"
        ));
    }
    Ok(major)
}

/// Whether the extra can serve here: it existed in the JAX release asked for (extras come and
/// go between releases), and its wheels run on every GPU (its lowest compute capability, and
/// the CUDA major's own GPU support).
fn jax_extra_fits(
    m: &Manifests,
    spec: &FrameworkSpec,
    ccs: &[String],
    row: &JaxExtra,
    major: u64,
) -> Result<(), String> {
    let extra = &row.extra;
    if let Some(version) = &spec.version {
        if let Some(first) = &row.first
            && compare(version, first).is_lt()
        {
            return Err(format!(
                "jax[{extra}] first appeared in JAX {first}, after {version}"
            ));
        }
        if let Some(removed) = &row.removed_in
            && compare(version, removed).is_ge()
        {
            return Err(format!("jax[{extra}] was removed in JAX {removed}"));
        }
    }
    if let Some(min) = row.min_sm.as_deref()
        && let Some(low) = ccs.iter().find(|cc| compare(cc, min).is_lt())
    {
        return Err(format!(
            "jax[{extra}] needs compute capability {min} or newer; this GPU is {}",
            choose::cc_label(&m.cuda, low)
        ));
    }
    let cuda_v = Version::parse(&format!("{major}.0")).ok_or("JAX's CUDA")?;
    if let Some(why) = choose::wheels_refuse_gpus(&m.cuda, &cuda_v, ccs) {
        return Err(format!("jax[{extra}] cannot work here: {why}"));
    }
    Ok(())
}

/// What pip would land for JAX on the environment's Python: a pin, when pip would otherwise
/// settle on an old release without the extra, and the sentence that says so.
#[derive(Default)]
struct JaxLanding {
    /// `==0.4.38`: replaces the pin of the version asked for.
    pin: Option<String>,
    why: String,
}

/// The release pip lands on for `py`, and its CUDA plugin, which is what makes it a GPU JAX:
/// the plugin must have a wheel for this Python too.
fn jax_landing(
    m: &Manifests,
    arch: &str,
    spec: &FrameworkSpec,
    major: u64,
    py: &str,
) -> Result<JaxLanding, String> {
    let extra = format!("cuda{major}");
    let pinned = land(m, arch, "jax", spec.version.as_deref(), Some(&extra), py)?;
    let release = pinned.clone().or_else(|| {
        m.pypi
            .newest("jax", spec.version.as_deref(), py, arch, Some(&extra))
            .map(|r| r.version.clone())
    });
    if let Some(release) = &release {
        let plugin = format!("jax-cuda{major}-plugin");
        land(m, arch, &plugin, Some(release), None, py)
            .map_err(|why| format!("jax[{extra}] {release}: {why}"))?;
    }
    Ok(match pinned {
        Some(v) => JaxLanding {
            why: format!(
                " Pinned to {v}: newer JAX releases do not install on Python {py}, and pip \
                 would otherwise settle on an old release without the [{extra}] extra, a \
                 CPU-only JAX (pypi.toml)."
            ),
            pin: Some(format!("=={v}")),
        },
        None => JaxLanding::default(),
    })
}

#[expect(
    clippy::too_many_arguments,
    reason = "each is one fact the choice depends on, as in `resolve`"
)]
fn cupy(
    m: &Manifests,
    arch: &str,
    spec: &FrameworkSpec,
    ccs: &[String],
    cuda: Option<&Version>,
    driver: Option<&DriverCap>,
    python: Option<&str>,
    with_ctk: bool,
) -> Result<FrameworkPlan, String> {
    let major = pick_major(&m.cuda, ccs, cuda, driver);
    let name = format!("cupy-cuda{major}x");
    let package = m
        .frameworks
        .cupy_package(&name)
        .ok_or_else(|| format!("{name} is not a CuPy package the manifests know"))?;
    let release = match &spec.version {
        Some(v) => Some(m.frameworks.cupy(v).ok_or_else(|| {
            let known: Vec<&str> = m
                .frameworks
                .cupy
                .iter()
                .map(|r| r.version.as_str())
                .collect();
            format!(
                "CuPy {v} is not a release the manifests know ({})",
                known.join(", ")
            )
        })?),
        None => m.frameworks.cupy.last(),
    };
    if let Some(release) = release
        && !release.packages.contains(&name)
    {
        return Err(format!(
            "CuPy {} ships {}, not {name}",
            release.version,
            release.packages.join(", ")
        ));
    }
    let cuda_v = Version::parse(&format!("{major}.0")).ok_or("CuPy's CUDA")?;
    if let Some(why) = choose::wheels_refuse_gpus(&m.cuda, &cuda_v, ccs) {
        return Err(format!("{name} cannot work here: {why}"));
    }
    // The [ctk] extra (CuPy 14.2: "pulls the CUDA wheels") stands in for a system toolkit.
    let ctk = with_ctk && spec.version.is_none();
    let extra = if ctk { "[ctk]" } else { "" };
    let mut version_pin = spec
        .version
        .as_deref()
        .map(|v| pin(v, None))
        .unwrap_or_default();
    if let Some(py) = python
        && let Some(v) = land(
            m,
            arch,
            &name,
            spec.version.as_deref(),
            ctk.then_some("ctk"),
            py,
        )?
    {
        version_pin = format!("=={v}");
    }
    let libs = if ctk {
        "its [ctk] extra brings the CUDA libraries as wheels"
    } else {
        "it uses the CUDA libraries of the system toolkit or the environment"
    };
    Ok(FrameworkPlan {
        name: FrameworkName::Cupy,
        label: format!("CuPy ({name})"),
        requirement: format!("{name}{extra}{version_pin}"),
        index_url: None,
        dist: name.clone(),
        dist_prefix: spec
            .version
            .as_deref()
            .map(|v| format!("{v}."))
            .unwrap_or_default(),
        dist_local: None,
        cuda: Version::parse(&major.to_string()).ok_or("CuPy's CUDA")?,
        cuda_is_minor: false,
        driver_floor: None,
        cudnn: None,
        python_default: release.and_then(|r| r.python_min.clone()),
        replace: false,
        python: python.map(short_python),
        extra_dist: ctk.then(|| (name.clone(), "ctk".to_string())),
        why: format!(
            "{name} is CuPy's wheel for CUDA {major}.x (install exactly one CuPy package per \
             environment); {libs}{} (frameworks.toml cupy_package).",
            package
                .note
                .as_deref()
                .map(|n| format!(". {n}"))
                .unwrap_or_default()
        ),
        companions: Vec::new(),
    })
}

/// The distributions that pin one release of `framework` exactly (pypi.toml `pins`:
/// torchvision and torchaudio for torch), which must move with it.
fn companions(m: &Manifests, framework: &str) -> Vec<String> {
    let pin = format!("{framework}==");
    let mut out: Vec<String> = m
        .pypi
        .releases
        .iter()
        .filter(|r| {
            r.pins
                .as_ref()
                .is_some_and(|p| p.iter().any(|p| p.starts_with(&pin)))
        })
        .map(|r| r.package.clone())
        .collect();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::embedded;
    use crate::plan::target::parse_framework;

    fn ccs(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_string()).collect()
    }

    fn resolve_text(
        text: &str,
        gpus: &[&str],
        cudnn: Option<u64>,
    ) -> Result<FrameworkPlan, String> {
        let spec = parse_framework(text).unwrap();
        resolve(
            embedded(),
            "x86_64",
            &spec,
            &ccs(gpus),
            None,
            None,
            None,
            cudnn,
            true,
        )
    }

    #[test]
    fn torch_pins_the_variant_and_its_index() {
        let plan = resolve_text("torch==2.5.1", &["8.6"], None).unwrap();
        assert_eq!(plan.requirement, "torch==2.5.1+cu124");
        assert_eq!(
            plan.index_url.as_deref(),
            Some("https://download.pytorch.org/whl/cu124")
        );
        assert_eq!(plan.dist_local.as_deref(), Some("cu124"));
    }

    #[test]
    fn tensorflow_refuses_a_cudnn_it_never_loaded() {
        let why = resolve_text("tensorflow==2.17", &["8.6"], Some(9)).unwrap_err();
        assert!(why.contains("built with cuDNN 8.9"), "{why}");
        let plan = resolve_text("tensorflow==2.17", &["8.6"], None).unwrap();
        assert_eq!(plan.requirement, "tensorflow[and-cuda]==2.17.*");
        let old = resolve_text("tensorflow==2.12", &["8.6"], None).unwrap_err();
        assert!(old.contains("predates the [and-cuda] extra"), "{old}");
    }

    #[test]
    fn jax_and_cupy_follow_the_gpu() {
        let jax = resolve_text("jax", &["9.0"], None).unwrap();
        assert_eq!(jax.requirement, "jax[cuda13]");
        let pascal = resolve_text("jax", &["6.1"], None).unwrap();
        assert_eq!(pascal.requirement, "jax[cuda12]");
        let refused = resolve_text("jax[cuda13]", &["6.1"], None).unwrap_err();
        assert!(
            refused.contains("needs compute capability 7.5"),
            "{refused}"
        );
        let cupy = resolve_text("cupy", &["6.1"], None).unwrap();
        assert_eq!(cupy.requirement, "cupy-cuda12x[ctk]");
    }

    #[test]
    fn the_jax_cuda_alias_is_the_major_the_table_says_it_pulls() {
        let row = embedded()
            .frameworks
            .jax_extra
            .iter()
            .find(|r| r.extra == "cuda")
            .expect("the jax[cuda] row");
        let plugin = format!("jax-cuda{JAX_CUDA_ALIAS_MAJOR}-plugin");
        assert!(row.pulls.starts_with(&plugin), "{}", row.pulls);
    }
}

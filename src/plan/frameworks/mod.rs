//! A framework named with `--framework`, resolved against the manifests into what pip installs
//! (requirement, index URL), what it needs of the driver, and how a later run recognises it as
//! installed. Installed the way each project recommends today: PyTorch from its own wheel index
//! for the CUDA variant, TensorFlow with `[and-cuda]`, JAX with its `cudaNN` extra, CuPy as the
//! `cupy-cudaNNx` wheel (compat-frameworks.md; compat-cuda.md 6.1). Pure.

mod aarch64;
mod cupy;
mod jax;
mod tensorflow;
mod torch;

use cupy::cupy;
use jax::jax;
use tensorflow::tensorflow;
use torch::torch;

use crate::manifest::{CudaTable, Manifests};
use crate::version::Version;

use super::choose::{self, DriverCap};
use super::target::{FrameworkName, FrameworkSpec};

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
    use super::jax::JAX_CUDA_ALIAS_MAJOR;
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

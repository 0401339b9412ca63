//! `frameworks.toml`: what ML framework builds bundle or need. PyTorch wheels per release and
//! variant, TensorFlow tested configurations, JAX CUDA plugins, CuPy packages, and the pip
//! `nvidia-*` CUDA wheels with the directories their libraries land in.

use serde::{Deserialize, Serialize};

use super::matching::{compare, covers, same_series, strict_parts, within};
use super::validate::{Checker, ProblemKind};
use super::{ManifestFile, Meta};

/// The contents of `frameworks.toml`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FrameworkTable {
    pub meta: Meta,
    pub torch_index: TorchIndex,
    /// PyTorch minor releases, ascending.
    pub torch: Vec<TorchRelease>,
    /// Arch lists of torch builds older than the `torch` rows (before 1.12), from the build
    /// script of the day; only for the arch check.
    #[serde(default)]
    pub torch_arch_history: Vec<TorchArchHistory>,
    pub tensorflow_pip: TensorflowPip,
    /// TensorFlow tested configurations, ascending.
    pub tensorflow: Vec<TensorflowConfig>,
    /// What `pip install tensorflow[and-cuda]` pulls, ascending.
    pub tensorflow_and_cuda: Vec<TensorflowAndCuda>,
    pub jax_extra: Vec<JaxExtra>,
    /// JAX requirements by CUDA major, then version range, ascending.
    pub jax: Vec<JaxRequirement>,
    /// CuPy releases, ascending.
    pub cupy: Vec<CupyRelease>,
    pub cupy_package: Vec<CupyPackage>,
    pub pip_wheel: Vec<PipWheel>,
}

/// Where PyTorch's wheel indexes live; a variant's index is a base plus its tag.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TorchIndex {
    pub stable: String,
    pub nightly: String,
    pub test: String,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// A PyTorch minor release (`2.11` covers every `2.11.x`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TorchRelease {
    pub version: String,
    pub python_min: String,
    pub python_max: Option<String>,
    /// The variant plain `pip install torch` gets from PyPI on Linux.
    pub pypi_default: String,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
    /// The variants published for this release.
    #[serde(rename = "build")]
    pub builds: Vec<TorchBuild>,
}

/// One published variant of a torch release.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TorchBuild {
    /// Index tag: `cu128`, `rocm6.4`, `cpu`.
    pub variant: String,
    /// Bundled cuDNN (exact wheel version); `None` when unknown or not applicable.
    pub cudnn: Option<String>,
    /// Bundled NCCL.
    pub nccl: Option<String>,
    /// Compute capabilities with native code (SASS). `None` when unknown.
    pub sass: Option<Vec<String>>,
    /// Compute capabilities with embedded PTX. `None` when unknown, empty when none.
    pub ptx: Option<Vec<String>>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// The arch list of one torch minor release's build, for releases older than the `torch` rows.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TorchArchHistory {
    /// The minor release (`1.8` covers every `1.8.x`).
    pub torch: String,
    pub build: TorchBuild,
}

/// A torch release and one of its builds, as [`FrameworkTable::torch`] finds them.
#[derive(Debug, Clone, Copy)]
pub struct TorchMatch<'a> {
    pub release: &'a TorchRelease,
    pub build: &'a TorchBuild,
}

/// Facts about TensorFlow's pip packages as a whole.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TensorflowPip {
    pub driver_min_linux: String,
    pub driver_min_wsl: String,
    /// First release with the `[and-cuda]` extra.
    pub and_cuda_first: String,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// A tested TensorFlow build configuration; it speaks for its whole minor series.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TensorflowConfig {
    pub version: String,
    pub python_min: String,
    pub python_max: String,
    /// CUDA it was built and tested with.
    pub cuda: String,
    /// cuDNN major.minor it was built with: runtime needs the same major and at least the minor.
    pub cudnn: String,
    pub source: String,
    pub checked: String,
}

/// The CUDA wheels `tensorflow[and-cuda]` pulls for one release, as pip specifiers.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TensorflowAndCuda {
    pub version: String,
    pub cuda_major: u64,
    /// Specifier on the `nvidia-*-cuNN` CUDA component wheels (`==12.5.82`, `>=12.5.82,<13`).
    pub cuda_wheels: String,
    pub cudnn: String,
    pub nccl: String,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// A JAX install extra (`jax[cuda13]`) and what it pulls.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JaxExtra {
    pub extra: String,
    /// First JAX version with the extra, where known.
    pub first: Option<String>,
    /// First JAX version without it.
    pub removed_in: Option<String>,
    pub pulls: String,
    /// Lowest compute capability JAX supports with this extra.
    pub min_sm: Option<String>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// What a range of JAX versions needs with one CUDA major.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JaxRequirement {
    pub cuda_major: u64,
    /// First version of the range; `None` = from the beginning.
    pub first: Option<String>,
    /// Last version of the range, read as a series (`0.5` = every `0.5.x`).
    pub last: String,
    pub driver_min: Option<String>,
    pub cuda_min: Option<String>,
    /// CUDA the wheels were built with.
    pub cuda_built: Option<String>,
    /// cuDNN requirement as a pip-style range (`>=9.8,<10.0`).
    pub cudnn: Option<String>,
    pub nccl_min: Option<String>,
    pub python_min: Option<String>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// A CuPy release: its wheels and the CUDA range its documentation supports.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CupyRelease {
    pub version: String,
    pub packages: Vec<String>,
    pub cuda_min: String,
    pub cuda_max: String,
    pub python_min: Option<String>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// A CuPy wheel name and the CUDA it is built for.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CupyPackage {
    pub name: String,
    pub cuda_major: u64,
    pub cuda_min: Option<String>,
    pub cuda_max: Option<String>,
    /// First CuPy release that ships it, where known.
    pub first: Option<String>,
    /// First CuPy release that no longer ships it.
    pub removed_in: Option<String>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// A pip wheel carrying NVIDIA libraries, and where they land under `site-packages`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PipWheel {
    /// Distribution name (`nvidia-cudnn-cu12`, or `nvidia-cublas` for CUDA 13).
    pub name: String,
    pub cuda_major: u64,
    /// Library it carries (`cudart`, `cudnn`, ...), `meta` for a package of packages.
    pub component: String,
    /// Directory of its shared libraries, relative to `site-packages`; `None` when unknown.
    pub lib_dir: Option<String>,
    #[serde(default)]
    pub sonames: Vec<String>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

impl TorchBuild {
    /// The CUDA version a `cuXYZ` variant bundles (`cu128` -> `12.8`, `cu102` -> `10.2`);
    /// `None` for ROCm and CPU builds.
    #[must_use]
    pub fn cuda(&self) -> Option<String> {
        let digits = self.variant.strip_prefix("cu")?;
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let (major, minor) = digits.split_at(digits.len() - 1);
        Some(format!("{major}.{minor}"))
    }
}

impl FrameworkTable {
    /// The torch build for a version as `torch.__version__` prints it (`2.11.0`, `2.11.0+cu130`,
    /// or the series `2.11`) and a variant tag.
    #[must_use]
    pub fn torch(&self, version: &str, variant: &str) -> Option<TorchMatch<'_>> {
        let release = self.torch_release(version)?;
        let build = release
            .builds
            .iter()
            .find(|build| build.variant == variant)?;
        Some(TorchMatch { release, build })
    }

    /// The arch facts of an old torch build (before the `torch` rows): its variant's row in
    /// `torch_arch_history`.
    #[must_use]
    pub fn torch_old_build(&self, version: &str, variant: &str) -> Option<&TorchBuild> {
        self.torch_arch_history
            .iter()
            .find(|r| covers(&r.torch, version) && r.build.variant == variant)
            .map(|r| &r.build)
    }

    /// The torch minor release a version belongs to.
    #[must_use]
    pub fn torch_release(&self, version: &str) -> Option<&TorchRelease> {
        self.torch
            .iter()
            .find(|release| covers(&release.version, version))
    }

    /// The pip index that serves a torch variant (`cu128` -> `https://download.pytorch.org/whl/cu128`).
    #[must_use]
    pub fn torch_index_url(&self, variant: &str) -> String {
        format!("{}{variant}", self.torch_index.stable)
    }

    /// The tested configuration for a TensorFlow version's minor series (`2.16.2` -> the
    /// `2.16.1` row).
    #[must_use]
    pub fn tensorflow(&self, version: &str) -> Option<&TensorflowConfig> {
        self.tensorflow
            .iter()
            .find(|row| same_series(&row.version, version, 2))
    }

    /// The `[and-cuda]` pins for a TensorFlow version's minor series.
    #[must_use]
    pub fn tensorflow_and_cuda(&self, version: &str) -> Option<&TensorflowAndCuda> {
        self.tensorflow_and_cuda
            .iter()
            .find(|row| same_series(&row.version, version, 2))
    }

    /// What a JAX version needs with a CUDA major.
    #[must_use]
    pub fn jax(&self, version: &str, cuda_major: u64) -> Option<&JaxRequirement> {
        self.jax.iter().find(|row| {
            row.cuda_major == cuda_major && within(row.first.as_deref(), &row.last, version)
        })
    }

    #[must_use]
    pub fn jax_extra(&self, extra: &str) -> Option<&JaxExtra> {
        self.jax_extra.iter().find(|row| row.extra == extra)
    }

    /// A CuPy release the reference describes (exact version).
    #[must_use]
    pub fn cupy(&self, version: &str) -> Option<&CupyRelease> {
        self.cupy
            .iter()
            .find(|row| compare(&row.version, version).is_eq())
    }

    #[must_use]
    pub fn cupy_package(&self, name: &str) -> Option<&CupyPackage> {
        self.cupy_package.iter().find(|row| row.name == name)
    }

    /// A pip wheel by distribution name; pip treats `_` and `-` alike and ignores case, so does this.
    #[must_use]
    #[cfg(test)]
    pub fn pip_wheel(&self, name: &str) -> Option<&PipWheel> {
        let wanted = normalize_dist(name);
        self.pip_wheel
            .iter()
            .find(|row| normalize_dist(&row.name) == wanted)
    }

    pub(super) fn check(&self, c: &mut Checker) {
        c.start(Self::FILE, &self.meta);
        c.provenance(
            "torch_index",
            &self.torch_index.source,
            &self.torch_index.checked,
        );
        self.check_torch(c);
        self.check_tensorflow(c);
        self.check_jax(c);
        self.check_cupy(c);
        self.check_pip_wheels(c);
    }

    /// Releases ascending, variants well-formed and unique, the PyPI default among them.
    fn check_torch(&self, c: &mut Checker) {
        for release in &self.torch {
            let label = format!("torch {}", release.version);
            c.provenance(&label, &release.source, &release.checked);
            c.version(&label, "version", &release.version);
            c.version(&label, "python_min", &release.python_min);
            c.opt_version(&label, "python_max", release.python_max.as_deref());
            if !release
                .builds
                .iter()
                .any(|build| build.variant == release.pypi_default)
            {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    format!(
                        "pypi_default {} is not one of its builds",
                        release.pypi_default
                    ),
                );
            }
            for build in &release.builds {
                let build_label = format!("torch {} build {}", release.version, build.variant);
                c.provenance(&build_label, &build.source, &build.checked);
                if !is_variant(&build.variant) {
                    c.report(
                        &build_label,
                        ProblemKind::Inconsistent,
                        format!("variant `{}` is not cuXYZ, rocmX.Y or cpu", build.variant),
                    );
                }
                c.opt_version(&build_label, "cudnn", build.cudnn.as_deref());
                c.opt_version(&build_label, "nccl", build.nccl.as_deref());
                c.ccs(
                    &build_label,
                    "sass",
                    build.sass.as_deref().unwrap_or_default(),
                );
                c.ccs(
                    &build_label,
                    "ptx",
                    build.ptx.as_deref().unwrap_or_default(),
                );
            }
            c.unique(
                "torch variant",
                release.builds.iter().map(|build| {
                    (
                        format!("torch {} build {}", release.version, build.variant),
                        format!("{} {}", release.version, build.variant),
                    )
                }),
            );
        }
        c.ascending_versions(
            "torch release",
            self.torch
                .iter()
                .map(|row| (format!("torch {}", row.version), row.version.as_str())),
        );
    }

    /// Tested configurations and `[and-cuda]` pins, each ascending.
    fn check_tensorflow(&self, c: &mut Checker) {
        let pip = &self.tensorflow_pip;
        c.provenance("tensorflow_pip", &pip.source, &pip.checked);
        c.version("tensorflow_pip", "driver_min_linux", &pip.driver_min_linux);
        c.version("tensorflow_pip", "driver_min_wsl", &pip.driver_min_wsl);
        c.version("tensorflow_pip", "and_cuda_first", &pip.and_cuda_first);
        for row in &self.tensorflow {
            let label = format!("tensorflow {}", row.version);
            c.provenance(&label, &row.source, &row.checked);
            for (field, value) in [
                ("version", &row.version),
                ("python_min", &row.python_min),
                ("python_max", &row.python_max),
                ("cuda", &row.cuda),
                ("cudnn", &row.cudnn),
            ] {
                c.version(&label, field, value);
            }
        }
        c.ascending_versions(
            "tensorflow version",
            self.tensorflow
                .iter()
                .map(|row| (format!("tensorflow {}", row.version), row.version.as_str())),
        );
        for row in &self.tensorflow_and_cuda {
            let label = format!("tensorflow_and_cuda {}", row.version);
            c.provenance(&label, &row.source, &row.checked);
            c.version(&label, "version", &row.version);
        }
        c.ascending_versions(
            "tensorflow version",
            self.tensorflow_and_cuda.iter().map(|row| {
                (
                    format!("tensorflow_and_cuda {}", row.version),
                    row.version.as_str(),
                )
            }),
        );
    }

    /// Extras unique; ranges well-formed and ordered by CUDA major, then range end.
    fn check_jax(&self, c: &mut Checker) {
        for row in &self.jax_extra {
            let label = format!("jax_extra {}", row.extra);
            c.provenance(&label, &row.source, &row.checked);
            c.opt_version(&label, "first", row.first.as_deref());
            c.opt_version(&label, "removed_in", row.removed_in.as_deref());
            if let Some(min_sm) = &row.min_sm {
                c.cc(&label, "min_sm", min_sm);
            }
        }
        c.unique(
            "JAX extra",
            self.jax_extra
                .iter()
                .map(|row| (format!("jax_extra {}", row.extra), row.extra.as_str())),
        );
        for row in &self.jax {
            let label = format!(
                "jax cuda{} {}..={}",
                row.cuda_major,
                row.first.as_deref().unwrap_or(""),
                row.last
            );
            c.provenance(&label, &row.source, &row.checked);
            let ends_parse = c.version(&label, "last", &row.last);
            if let Some(first) = &row.first
                && c.version(&label, "first", first)
                && ends_parse
            {
                c.range(&label, first, &row.last);
            }
            for (field, value) in [
                ("driver_min", &row.driver_min),
                ("cuda_min", &row.cuda_min),
                ("cuda_built", &row.cuda_built),
                ("nccl_min", &row.nccl_min),
                ("python_min", &row.python_min),
            ] {
                c.opt_version(&label, field, value.as_deref());
            }
        }
        c.ascending_by(
            "JAX range",
            self.jax.iter().map(|row| {
                let label = format!(
                    "jax cuda{} {}..={}",
                    row.cuda_major,
                    row.first.as_deref().unwrap_or(""),
                    row.last
                );
                (label, JaxKey(row.cuda_major, &row.last))
            }),
            |a, b| a.0.cmp(&b.0).then_with(|| compare(a.1, b.1)),
        );
    }

    /// Releases ascending with sane CUDA ranges; package names unique.
    fn check_cupy(&self, c: &mut Checker) {
        for row in &self.cupy {
            let label = format!("cupy {}", row.version);
            c.provenance(&label, &row.source, &row.checked);
            c.version(&label, "version", &row.version);
            if c.version(&label, "cuda_min", &row.cuda_min)
                && c.version(&label, "cuda_max", &row.cuda_max)
            {
                c.range(&label, &row.cuda_min, &row.cuda_max);
            }
            c.opt_version(&label, "python_min", row.python_min.as_deref());
        }
        c.ascending_versions(
            "cupy version",
            self.cupy
                .iter()
                .map(|row| (format!("cupy {}", row.version), row.version.as_str())),
        );
        for row in &self.cupy_package {
            let label = format!("cupy_package {}", row.name);
            c.provenance(&label, &row.source, &row.checked);
            c.opt_version(&label, "cuda_min", row.cuda_min.as_deref());
            c.opt_version(&label, "cuda_max", row.cuda_max.as_deref());
            c.opt_version(&label, "first", row.first.as_deref());
            c.opt_version(&label, "removed_in", row.removed_in.as_deref());
        }
        c.unique(
            "CuPy package",
            self.cupy_package
                .iter()
                .map(|row| (format!("cupy_package {}", row.name), row.name.as_str())),
        );
    }

    /// Wheel names unique under pip's normalisation.
    fn check_pip_wheels(&self, c: &mut Checker) {
        for row in &self.pip_wheel {
            let label = format!("pip_wheel {}", row.name);
            c.provenance(&label, &row.source, &row.checked);
        }
        c.unique(
            "pip wheel",
            self.pip_wheel
                .iter()
                .map(|row| (format!("pip_wheel {}", row.name), normalize_dist(&row.name))),
        );
    }
}

impl ManifestFile for FrameworkTable {
    const FILE: &'static str = "frameworks.toml";

    fn meta(&self) -> &Meta {
        &self.meta
    }
}

/// `cu` + digits, `rocm` + a dotted version, or `cpu`.
fn is_variant(variant: &str) -> bool {
    if variant == "cpu" {
        return true;
    }
    if let Some(digits) = variant.strip_prefix("cu") {
        return digits.len() >= 2 && digits.bytes().all(|b| b.is_ascii_digit());
    }
    variant
        .strip_prefix("rocm")
        .is_some_and(|version| strict_parts(version).is_some())
}

/// A JAX row's place in its table: CUDA major, then the end of its version range.
struct JaxKey<'a>(u64, &'a str);

impl std::fmt::Display for JaxKey<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cuda{} ..={}", self.0, self.1)
    }
}

/// PEP 503 name normalisation, enough for NVIDIA's names: lowercase, `_` and `.` as `-`.
fn normalize_dist(name: &str) -> String {
    name.trim()
        .chars()
        .map(|c| {
            if c == '_' || c == '.' {
                '-'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

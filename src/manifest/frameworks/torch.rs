//! PyTorch's rows of `frameworks.toml`: its wheel indexes, releases and their builds per
//! variant, the arch lists of builds older than those rows, and the GPU floors torch enforces
//! (Triton's, cuDNN's), with the lookups and checks that read them.

use serde::{Deserialize, Serialize};

use super::FrameworkTable;
use crate::manifest::matching::{compare, covers, strict_parts, within};
use crate::manifest::validate::{Checker, ProblemKind};

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

/// A package released in step with torch: from `first` on, its major.minor is the torch
/// major.minor its compiled modules were built against (torchaudio 2.8.x for torch 2.8).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TorchCompanion {
    /// The distribution name ("torchaudio").
    pub package: String,
    /// The package's first release numbered after torch's ("2.1").
    pub first: String,
    pub source: String,
    pub checked: String,
}

/// The oldest GPU a part of torch accepts, for a range of torch minor releases: torch.compile's
/// Triton backend (`torch_triton_min_cc`), or cuDNN from `cudnn_from` on (`torch_cudnn_min_cc`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TorchGpuFloor {
    pub first: String,
    pub last: String,
    /// The cuDNN version from which the floor holds (`torch_cudnn_min_cc` only).
    pub cudnn_from: Option<String>,
    /// The lowest compute capability accepted.
    pub min_cc: String,
    /// torch's message when it refuses, placeholders as written.
    pub message: String,
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

    /// What a nightly (`2.6.0.dev20241112+cu121`) of a variant its own release line never
    /// published was built like: the newest earlier release's build of that variant. Nightlies
    /// come from the main branch's build scripts, which keep a CUDA variant's arch list until the
    /// variant is dropped; `None` for a version that is not a nightly (`.dev`).
    #[must_use]
    pub fn torch_nightly_stand_in(&self, version: &str, variant: &str) -> Option<TorchMatch<'_>> {
        if !version.contains(".dev") {
            return None;
        }
        let base = version.split('+').next().unwrap_or(version);
        self.torch
            .iter()
            .filter(|release| {
                !covers(&release.version, base) && compare(&release.version, base).is_lt()
            })
            .filter_map(|release| {
                release
                    .builds
                    .iter()
                    .find(|build| build.variant == variant)
                    .map(|build| TorchMatch { release, build })
            })
            .max_by(|a, b| compare(&a.release.version, &b.release.version))
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

    /// The torch release a companion package's version was built for (torchaudio 2.8.0a0 ->
    /// torch 2.8), where the package is one released in step with torch from that version on.
    #[must_use]
    pub fn torch_companion_release(&self, package: &str, version: &str) -> Option<String> {
        use crate::version::Version;
        let row = self.torch_companion.iter().find(|r| r.package == package)?;
        let v = Version::parse(version)?;
        (v >= Version::parse(&row.first)?).then(|| v.major_minor())
    }

    /// torch.compile's Triton floor for a torch release (`2.6.0+cu124`).
    #[must_use]
    pub fn torch_triton_min_cc(&self, torch: &str) -> Option<&TorchGpuFloor> {
        self.torch_triton_min_cc
            .iter()
            .find(|row| within(Some(&row.first), &row.last, torch))
    }

    /// torch's own cuDNN-against-GPU check for a torch release, where it has one.
    #[must_use]
    pub fn torch_cudnn_min_cc(&self, torch: &str) -> Option<&TorchGpuFloor> {
        self.torch_cudnn_min_cc
            .iter()
            .find(|row| within(Some(&row.first), &row.last, torch))
    }

    /// Releases ascending, variants well-formed and unique, the PyPI default among them.
    pub(super) fn check_torch(&self, c: &mut Checker) {
        for row in &self.torch_companion {
            let label = format!("torch_companion {}", row.package);
            c.provenance(&label, &row.source, &row.checked);
            c.version(&label, "first", &row.first);
        }
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

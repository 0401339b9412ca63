//! JAX's rows of `frameworks.toml`: its pip extras, what each release needs per CUDA major,
//! and the per-release history generated from jax's tags (minimum jaxlib, preloads, the CUDA
//! check, plugin checks, the cuDNN old jaxlibs were built with), with lookups and checks.

use serde::{Deserialize, Serialize};

use super::FrameworkTable;
use crate::manifest::matching::{compare, within};
use crate::manifest::validate::Checker;

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

/// The oldest jaxlib a range of jax releases imports.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JaxMinimumJaxlib {
    pub first: String,
    pub last: String,
    pub jaxlib_min: String,
    pub source: String,
    pub checked: String,
}

/// The NVIDIA wheel libraries a range of jax releases' CUDA plugin loads by path before
/// anything else (`_load_nvidia_libraries`), in order, as `<module under nvidia/>/<file>`
/// (`cudnn/libcudnn.so.9`); empty where it preloads nothing.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JaxPreload {
    pub first: String,
    pub last: String,
    pub libraries: Vec<String>,
    pub source: String,
    pub checked: String,
}

/// jax's own check of the CUDA libraries it loaded, for a range of releases.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JaxCudaCheck {
    pub first: String,
    pub last: String,
    /// `min_supported_version` of the cuDNN check, compared with `cudnnGetVersion()`
    /// (8907 = 8.9.7, 90100 = 9.1.0).
    pub cudnn_check_min: Option<u64>,
    /// `min_supported_version` of the cuBLAS check (120100 = 12.1.0).
    pub cublas_check_min: Option<u64>,
    /// `min_supported_version` of the cuSPARSE check (12100 = 12.1.0).
    pub cusparse_check_min: Option<u64>,
    /// The `[with-cuda]` requirement on `nvidia-cudnn-cu12`, where plugin_setup.py writes it.
    pub cudnn_wheel: Option<String>,
    pub cublas_wheel: Option<String>,
    pub source: String,
    pub checked: String,
}

/// How a range of jaxlib releases treats a CUDA plugin (`jax-cudaNN-plugin`, `-pjrt`) whose
/// version is not jaxlib's.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JaxPluginCheck {
    pub first: String,
    pub last: String,
    /// "release": jaxlib cuts both versions to their numeric release and refuses a plugin of
    /// another release (`check_plugin_version`); absent: jaxlib does not check.
    pub compare: Option<String>,
    /// The warning jaxlib prints when it refuses the plugin, placeholders as written
    /// (`{plugin_name}`, `{plugin_version}`, `{jaxlib_version}`).
    pub message: Option<String>,
    /// The plugin's requirement on its PJRT wheel at its own version ("==").
    pub pjrt_pin: Option<String>,
    pub source: String,
    pub checked: String,
}

/// The cuDNN a range of old jaxlib releases was built with for one CUDA version.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JaxlibCudnnBuilt {
    pub first: String,
    pub last: String,
    pub cuda: String,
    pub cudnn: String,
    pub source: String,
    pub checked: String,
}

/// The GPU architectures a range of jaxlib releases' CUDA build compiles for (`.bazelrc` at the
/// tags): SASS and PTX compute capabilities ("9.0"); `cuda` is the plugin's CUDA major where
/// the release lists each its own (0.7.2 on), absent where one list serves every CUDA build.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JaxlibArch {
    pub first: String,
    pub last: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda: Option<String>,
    pub sass: Vec<String>,
    pub ptx: Vec<String>,
    pub source: String,
    pub checked: String,
}

impl std::fmt::Display for JaxKey<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cuda{} ..={}", self.0, self.1)
    }
}

impl FrameworkTable {
    /// What a JAX version needs with a CUDA major.
    #[must_use]
    pub fn jax(&self, version: &str, cuda_major: u64) -> Option<&JaxRequirement> {
        self.jax.iter().find(|row| {
            row.cuda_major == cuda_major && within(row.first.as_deref(), &row.last, version)
        })
    }

    /// The oldest jaxlib a jax release imports (`_minimum_jaxlib_version`).
    #[must_use]
    pub fn jax_minimum_jaxlib(&self, jax: &str) -> Option<&JaxMinimumJaxlib> {
        self.jax_minimum_jaxlib
            .iter()
            .find(|row| within(Some(&row.first), &row.last, jax))
    }

    /// What a jax release's CUDA plugin preloads. A release newer than every row takes the
    /// newest row: the list is unchanged since 0.7.0 in every tag read.
    #[must_use]
    pub fn jax_preload(&self, jax: &str) -> Option<&JaxPreload> {
        self.jax_preload
            .iter()
            .find(|row| within(Some(&row.first), &row.last, jax))
            .or_else(|| {
                self.jax_preload
                    .last()
                    .filter(|row| compare(jax, &row.last).is_gt())
            })
    }

    /// jax's own cuDNN / cuBLAS check for a release.
    #[must_use]
    pub fn jax_cuda_check(&self, jax: &str) -> Option<&JaxCudaCheck> {
        self.jax_cuda_check
            .iter()
            .find(|row| within(Some(&row.first), &row.last, jax))
    }

    /// How a jaxlib release treats a CUDA plugin of another release. A jaxlib newer than every
    /// row takes the newest row: the check is unchanged from 0.5.3 to the newest tag read.
    #[must_use]
    pub fn jax_plugin_check(&self, jaxlib: &str) -> Option<&JaxPluginCheck> {
        self.jax_plugin_check
            .iter()
            .find(|row| within(Some(&row.first), &row.last, jaxlib))
            .or_else(|| {
                self.jax_plugin_check
                    .last()
                    .filter(|row| compare(jaxlib, &row.last).is_gt())
            })
    }

    /// The cuDNN an old jaxlib (`0.1.65+cuda112`: release and CUDA) was built with.
    #[must_use]
    pub fn jaxlib_cudnn_built(&self, jaxlib: &str, cuda: &str) -> Option<&JaxlibCudnnBuilt> {
        self.jaxlib_cudnn_built.iter().find(|row| {
            compare(&row.cuda, cuda).is_eq() && within(Some(&row.first), &row.last, jaxlib)
        })
    }

    /// The architecture list of a jaxlib release's CUDA build for the plugin's CUDA major (a
    /// row without a major serves every CUDA build). A release outside every row has none.
    #[must_use]
    pub fn jaxlib_arch(&self, jaxlib: &str, cuda_major: &str) -> Option<&JaxlibArch> {
        self.jaxlib_arch.iter().find(|row| {
            row.cuda.as_deref().is_none_or(|c| c == cuda_major)
                && within(Some(&row.first), &row.last, jaxlib)
        })
    }

    /// The first jaxlib release whose CUDA build for `cuda_major` lists an architecture of
    /// `cc_major` (SASS or PTX).
    #[must_use]
    pub fn first_jaxlib_for_major(&self, cuda_major: &str, cc_major: u64) -> Option<&str> {
        self.jaxlib_arch
            .iter()
            .filter(|row| row.cuda.as_deref().is_none_or(|c| c == cuda_major))
            .find(|row| {
                row.sass.iter().chain(&row.ptx).any(|a| {
                    crate::version::Version::parse(a).is_some_and(|v| v.major() == cc_major)
                })
            })
            .map(|row| row.first.as_str())
    }

    #[must_use]
    pub fn jax_extra(&self, extra: &str) -> Option<&JaxExtra> {
        self.jax_extra.iter().find(|row| row.extra == extra)
    }

    /// Extras unique; ranges well-formed and ordered by CUDA major, then range end; the
    /// per-release history tables well-formed.
    pub(super) fn check_jax(&self, c: &mut Checker) {
        self.check_jax_extras(c);
        self.check_jax_ranges(c);
        self.check_jax_history(c);
        c.ascending_by(
            "JAX range",
            self.jax
                .iter()
                .map(|row| (jax_label(row), JaxKey(row.cuda_major, &row.last))),
            |a, b| a.0.cmp(&b.0).then_with(|| compare(a.1, b.1)),
        );
    }

    pub(super) fn check_jax_extras(&self, c: &mut Checker) {
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
    }

    pub(super) fn check_jax_ranges(&self, c: &mut Checker) {
        for row in &self.jax {
            let label = jax_label(row);
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
    }

    /// The tables keyed by jax or jaxlib release ranges: minimum jaxlib, preloads, the CUDA
    /// check, the cuDNN each jaxlib was built with.
    pub(super) fn check_jax_history(&self, c: &mut Checker) {
        let history = self
            .jax_minimum_jaxlib
            .iter()
            .map(|r| {
                (
                    "jax_minimum_jaxlib",
                    &r.first,
                    &r.last,
                    &r.source,
                    &r.checked,
                )
            })
            .chain(
                self.jax_preload
                    .iter()
                    .map(|r| ("jax_preload", &r.first, &r.last, &r.source, &r.checked)),
            )
            .chain(
                self.jax_cuda_check
                    .iter()
                    .map(|r| ("jax_cuda_check", &r.first, &r.last, &r.source, &r.checked)),
            )
            .chain(
                self.torch_triton_min_cc
                    .iter()
                    .chain(&self.torch_cudnn_min_cc)
                    .map(|r| ("torch_gpu_floor", &r.first, &r.last, &r.source, &r.checked)),
            )
            .chain(
                self.jaxlib_arch
                    .iter()
                    .map(|r| ("jaxlib_arch", &r.first, &r.last, &r.source, &r.checked)),
            )
            .chain(
                self.jax_plugin_check
                    .iter()
                    .map(|r| ("jax_plugin_check", &r.first, &r.last, &r.source, &r.checked)),
            )
            .chain(
                self.onnxruntime_cuda
                    .iter()
                    .map(|r| ("onnxruntime_cuda", &r.first, &r.last, &r.source, &r.checked)),
            )
            .chain(
                self.triton_ptxas
                    .iter()
                    .map(|r| ("triton_ptxas", &r.first, &r.last, &r.source, &r.checked)),
            )
            .chain(
                self.numba_cuda
                    .iter()
                    .map(|r| ("numba_cuda", &r.first, &r.last, &r.source, &r.checked)),
            )
            .chain(
                self.tensorrt_min_cc
                    .iter()
                    .map(|r| ("tensorrt_min_cc", &r.first, &r.last, &r.source, &r.checked)),
            )
            .chain(
                self.triton_min_cc
                    .iter()
                    .map(|r| ("triton_min_cc", &r.first, &r.last, &r.source, &r.checked)),
            )
            .chain(self.jaxlib_cudnn_built.iter().map(|r| {
                (
                    "jaxlib_cudnn_built",
                    &r.first,
                    &r.last,
                    &r.source,
                    &r.checked,
                )
            }));
        for (table, first, last, source, checked) in history {
            let label = format!("{table} {first}..={last}");
            c.provenance(&label, source, checked);
            if c.version(&label, "first", first) && c.version(&label, "last", last) {
                c.range(&label, first, last);
            }
        }
        self.check_jax_history_rows(c);
    }

    /// What those tables' rows hold beyond their range: architectures, first releases, the
    /// minimum jaxlib, the CUDA and cuDNN a jaxlib was built with.
    fn check_jax_history_rows(&self, c: &mut Checker) {
        for row in &self.jaxlib_arch {
            let label = format!("jaxlib_arch {}..={}", row.first, row.last);
            for cc in row.sass.iter().chain(&row.ptx) {
                c.cc(&label, "sass/ptx", cc);
            }
        }
        for row in &self.tensorrt_first_for_cc {
            let label = format!("tensorrt_first_for_cc {}", row.cc.join(","));
            c.provenance(&label, &row.source, &row.checked);
            c.version(&label, "first", &row.first);
        }
        for row in &self.jax_minimum_jaxlib {
            c.version(
                &format!("jax_minimum_jaxlib {}", row.first),
                "jaxlib_min",
                &row.jaxlib_min,
            );
        }
        for row in &self.jaxlib_cudnn_built {
            let label = format!("jaxlib_cudnn_built {} cuda {}", row.first, row.cuda);
            c.version(&label, "cuda", &row.cuda);
            c.version(&label, "cudnn", &row.cudnn);
        }
    }
}

/// How a JAX range row is named in problems: `jax cuda12 0.4.26..=0.4.38`.
fn jax_label(row: &JaxRequirement) -> String {
    format!(
        "jax cuda{} {}..={}",
        row.cuda_major,
        row.first.as_deref().unwrap_or(""),
        row.last
    )
}

/// A JAX row's place in its table: CUDA major, then the end of its version range.
struct JaxKey<'a>(u64, &'a str);

//! The pip `nvidia-*` CUDA wheels of `frameworks.toml` and the folders their libraries land
//! in, found by name the way pip compares names.

use serde::{Deserialize, Serialize};

use super::FrameworkTable;
use crate::manifest::validate::Checker;

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

impl FrameworkTable {
    /// A pip wheel by distribution name; pip treats `_` and `-` alike and ignores case, so does this.
    #[must_use]
    #[cfg(test)]
    pub fn pip_wheel(&self, name: &str) -> Option<&PipWheel> {
        let wanted = normalize_dist(name);
        self.pip_wheel
            .iter()
            .find(|row| normalize_dist(&row.name) == wanted)
    }

    /// Wheel names unique under pip's normalisation.
    pub(super) fn check_pip_wheels(&self, c: &mut Checker) {
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

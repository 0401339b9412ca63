//! CuPy's rows of `frameworks.toml`: releases with the CUDA they support and the package
//! names per CUDA major, with their lookups and checks.

use serde::{Deserialize, Serialize};

use super::FrameworkTable;
use crate::manifest::matching::compare;
use crate::manifest::validate::Checker;

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

impl FrameworkTable {
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

    /// Releases ascending with sane CUDA ranges; package names unique.
    pub(super) fn check_cupy(&self, c: &mut Checker) {
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
}

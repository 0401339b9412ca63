//! TensorFlow's rows of `frameworks.toml`: its pip packages' driver floors, its tested
//! configurations and what `tensorflow[and-cuda]` pulls, with their lookups and checks.

use serde::{Deserialize, Serialize};

use super::FrameworkTable;
use crate::manifest::matching::same_series;
use crate::manifest::validate::Checker;

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

impl FrameworkTable {
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

    /// Tested configurations and `[and-cuda]` pins, each ascending.
    pub(super) fn check_tensorflow(&self, c: &mut Checker) {
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
}

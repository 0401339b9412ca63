//! TensorRT's rows of `frameworks.toml`: the oldest GPU each release range runs on and the
//! first release for newer GPUs.

use serde::{Deserialize, Serialize};

use super::FrameworkTable;
use crate::manifest::matching::{compare, within};

/// The oldest GPU a range of TensorRT (or Triton: `triton_min_cc`) releases runs on.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TensorrtMinCc {
    pub first: String,
    pub last: String,
    pub min_cc: String,
    pub source: String,
    pub checked: String,
}

/// The first TensorRT release that runs on GPUs of these compute capabilities.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TensorrtFirstForCc {
    pub cc: Vec<String>,
    pub first: String,
    pub source: String,
    pub checked: String,
}

impl FrameworkTable {
    /// The oldest GPU a TensorRT release runs on, where the table has its range.
    #[must_use]
    pub fn tensorrt_min_cc(&self, version: &str) -> Option<&TensorrtMinCc> {
        self.tensorrt_min_cc
            .iter()
            .find(|row| within(Some(&row.first), &row.last, version))
    }

    /// The oldest GPU a Triton release compiles for of its own, where the table has its range.
    #[must_use]
    pub fn triton_min_cc(&self, version: &str) -> Option<&TensorrtMinCc> {
        self.triton_min_cc
            .iter()
            .find(|row| within(Some(&row.first), &row.last, version))
    }

    /// The first TensorRT release for a GPU of compute capability `cc`, where the table names one.
    #[must_use]
    pub fn tensorrt_first_for_cc(&self, cc: &str) -> Option<&TensorrtFirstForCc> {
        self.tensorrt_first_for_cc
            .iter()
            .find(|row| row.cc.iter().any(|c| compare(c, cc).is_eq()))
    }
}

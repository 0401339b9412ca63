//! What `report merge` reads of a node's report: lenient views of the few [`crate::report`]
//! key paths a fleet summary needs. Pure data, no I/O.
//!
//! Not [`crate::report::Report`] itself: that type denies unknown fields, to pin what this
//! gpu-doctor writes, while a report from a newer gpu-doctor of the same schema version may
//! carry fields added since (additions keep the number, see [`crate::report::SCHEMA_VERSION`]).
//! Here unknown fields are ignored and a missing field takes its default; a field that is
//! present with the wrong type still fails, and the file is skipped as corrupt.

use serde::Deserialize;

/// One node's report, as far as a fleet summary reads it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct NodeReport {
    pub schema_version: u64,
    pub tool: Tool,
    /// RFC 3339 in UTC, or null (reports made under `--root` without `SOURCE_DATE_EPOCH`).
    pub generated_at: Option<String>,
    pub host: Host,
    pub driver: Driver,
    /// `rocm_version` only: an AMD node's ROCm is part of its stack.
    pub kernel: Kernel,
    #[serde(deserialize_with = "super::capped::gpus")]
    pub gpus: Vec<Gpu>,
    /// `nvidia-smi topo -m`'s matrix; absent from one-GPU nodes and older reports.
    pub topology: Option<Topology>,
    #[serde(deserialize_with = "super::capped::other")]
    pub toolkits: Vec<Versioned>,
    pub libraries: Libraries,
    #[serde(deserialize_with = "super::capped::other")]
    pub python_envs: Vec<PythonEnv>,
    #[serde(deserialize_with = "super::capped::other")]
    pub findings: Vec<Finding>,
    /// Null from `doctor`, filled by `smoke`.
    pub smoke: Option<Smoke>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Tool {
    pub version: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Host {
    pub hostname: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Driver {
    pub version: Option<String>,
    pub cuda_version: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Kernel {
    pub rocm_version: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Gpu {
    pub index: u64,
    pub name: Option<String>,
}

/// The GPU rows of the matrix: each GPU's links to the others, as printed ("NV18", "SYS").
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Topology {
    #[serde(deserialize_with = "super::capped::gpus")]
    pub gpus: Vec<TopoGpu>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct TopoGpu {
    pub index: u64,
    #[serde(deserialize_with = "super::capped::gpus")]
    pub gpus: Vec<String>,
}

/// A toolkit or one copy of a library: only its version matters here.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Versioned {
    pub version: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Libraries {
    #[serde(deserialize_with = "super::capped::other")]
    pub cudnn: Vec<Versioned>,
    #[serde(deserialize_with = "super::capped::other")]
    pub nccl: Vec<Versioned>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct PythonEnv {
    pub path: String,
    #[serde(deserialize_with = "super::capped::other")]
    pub frameworks: Vec<Framework>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Framework {
    pub name: String,
    pub version: Option<String>,
    pub cuda: Option<String>,
    /// A ROCm build's ROCm/HIP version.
    pub rocm: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Finding {
    pub id: String,
    /// Kept as text: a severity this gpu-doctor does not know is simply not "error".
    pub severity: String,
    pub title: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Smoke {
    /// "passed", "failed" or `could_not_run`; a state this version does not know is kept as
    /// written, and a missing status is not a pass.
    pub status: Option<crate::report::smoke::SmokeStatus>,
    pub error: Option<String>,
    pub bench: bool,
    #[serde(deserialize_with = "super::capped::gpus")]
    pub devices: Vec<Device>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Device {
    pub index: u64,
    pub name: Option<String>,
    /// Optional here although gpu-doctor always writes it: only an explicit `false` fails.
    pub passed: Option<bool>,
    pub error: Option<DriverError>,
    pub matmul: Option<Check>,
    pub memory: Option<Check>,
    pub bandwidth: Option<Bandwidth>,
    pub throughput: Option<Throughput>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct DriverError {
    pub call: String,
    pub name: String,
    pub message: String,
}

/// The matmul or the memory check: the fields of both that say why it failed.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Check {
    pub passed: Option<bool>,
    pub wrong_elements: Option<u64>,
    pub unwritten_elements: Option<u64>,
    pub max_rel_error: Option<f64>,
    pub errors: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Bandwidth {
    pub device_to_device_gbs: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Throughput {
    pub ptx_fp32_tflops: Option<f64>,
    pub cublaslt_bf16_tflops: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_are_ignored_and_missing_ones_default() {
        let r: NodeReport = serde_json::from_str(
            r#"{"schema_version": 1, "added_later": {"x": 1},
                "host": {"hostname": "n1", "new_field": true},
                "smoke": {"status": "passed", "devices": [{"index": 0}]}}"#,
        )
        .unwrap();
        assert_eq!(r.host.hostname.as_deref(), Some("n1"));
        assert!(r.gpus.is_empty());
        let smoke = r.smoke.unwrap();
        assert_eq!(smoke.devices[0].passed, None);
    }

    #[test]
    fn a_field_of_the_wrong_type_fails() {
        let bad = serde_json::from_str::<NodeReport>(r#"{"schema_version": 1, "gpus": "none"}"#);
        assert!(bad.is_err());
    }
}

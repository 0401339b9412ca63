//! What the smoke test measured: per GPU, the matmul check, the memory check, bandwidth, and
//! with `--bench` throughput against the card's figures. Joins the report as `smoke`.

use serde::{Deserialize, Serialize};

/// The whole smoke run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SmokeRun {
    /// "passed", "failed", or "could_not_run".
    #[cfg_attr(test, schemars(with = "String"))]
    pub status: SmokeStatus,
    /// Why it could not run (no driver library, no device, the test process crashed).
    pub error: Option<String>,
    /// CUDA version the driver API reports ("13.0").
    pub driver_api_version: Option<String>,
    pub devices: Vec<DeviceResult>,
    /// Peer access between each ordered pair of tested GPUs.
    pub peer_access: Vec<PeerAccess>,
    pub bench: bool,
    pub wall_ms: u64,
    /// Where the child's time went before and after the GPUs' own phases, in ms (absent in
    /// older reports and when the test could not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases_ms: Option<RunPhases>,
}

/// The smoke child's own phases, in ms: what a regression outside any one GPU shows in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RunPhases {
    /// Loading libcuda and `cuInit`.
    pub driver_start: f64,
    /// The fp32 matmul's CPU reference (f64), computed on worker threads while the GPU work
    /// runs; its own duration.
    pub cpu_reference: f64,
    /// How long the GPU checks waited for that reference (0 when it was ready first).
    pub cpu_reference_wait: f64,
}

/// One GPU's phases, in ms, in the order they run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DevicePhases {
    /// Creating the context (the same as `context_ms`).
    pub context: f64,
    /// Loading the PTX module, the driver's JIT included (the same as `ptx_load_ms`).
    pub module_load: f64,
    /// The fp32 matmul: upload, kernel, download (the comparison with the CPU is separate).
    pub matmul: f64,
    /// Comparing the GPU's product with the CPU reference, element by element.
    pub matmul_compare: f64,
    /// Writing and checking the memory patterns, allocation included.
    pub memory_patterns: f64,
    /// The device-to-device copy test, allocation and fill included.
    pub bandwidth_device_copy: f64,
    /// Allocating and filling the pinned host buffer the two host copy tests use.
    pub bandwidth_pinned_alloc: f64,
    pub bandwidth_host_to_device: f64,
    pub bandwidth_device_to_host: f64,
    /// The `--bench` throughput measurements (0 without `--bench`).
    pub throughput: f64,
    /// Releasing the context and everything allocated on it.
    pub teardown: f64,
}

/// How a smoke run ended: `smoke.status` in the report, spelt as [`SmokeStatus::as_str`] says
/// (the schema keeps it a string). The one list of states: the smoke test, its exit code, the
/// TUI, fleet summaries and `gpu_doctor_smoke_status` all name them through this type.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SmokeStatus {
    /// Every tested GPU passed every check.
    Passed,
    /// A GPU failed a check or stopped on a driver error.
    Failed,
    /// The test reached no GPU: under `--root`, no driver library, no device, or the test
    /// process crashed or hung. The default, so a run nobody filled in is no pass.
    #[default]
    CouldNotRun,
    /// A state this gpu-doctor does not know (a report from a newer one), kept as written so
    /// it is still shown, and never taken for a pass.
    #[serde(untagged)]
    Other(String),
}

impl SmokeStatus {
    /// Every state gpu-doctor writes, in the order `gpu_doctor_smoke_status` lists them.
    pub const KNOWN: [SmokeStatus; 3] = [
        SmokeStatus::Passed,
        SmokeStatus::Failed,
        SmokeStatus::CouldNotRun,
    ];

    /// The report's spelling ("could_not_run").
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            SmokeStatus::Passed => "passed",
            SmokeStatus::Failed => "failed",
            SmokeStatus::CouldNotRun => "could_not_run",
            SmokeStatus::Other(state) => state,
        }
    }
}

/// A state from its report spelling; one gpu-doctor does not write is [`SmokeStatus::Other`].
impl From<&str> for SmokeStatus {
    fn from(state: &str) -> SmokeStatus {
        SmokeStatus::KNOWN
            .into_iter()
            .find(|known| known.as_str() == state)
            .unwrap_or_else(|| SmokeStatus::Other(state.to_string()))
    }
}

/// One GPU's results.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DeviceResult {
    /// CUDA ordinal in PCI bus order, the same as `gpus[].index`.
    pub index: u32,
    pub name: Option<String>,
    pub compute_capability: Option<String>,
    pub sm_count: Option<u32>,
    pub memory_total_mib: Option<u64>,
    /// Time to create the context, the first cost every CUDA program pays.
    pub context_ms: Option<f64>,
    /// Time for the driver to JIT-compile the shipped PTX.
    pub ptx_load_ms: Option<f64>,
    pub matmul: Option<MatmulCheck>,
    pub memory: Option<MemoryCheck>,
    pub bandwidth: Option<Bandwidth>,
    pub throughput: Option<Throughput>,
    pub passed: bool,
    /// The driver error that stopped this GPU's tests, in the driver's words.
    pub error: Option<DriverError>,
    /// Where this GPU's time went (absent in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases_ms: Option<DevicePhases>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DriverError {
    pub call: String,
    pub code: i32,
    pub name: String,
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct MatmulCheck {
    pub passed: bool,
    /// M, N, K.
    pub size: [usize; 3],
    pub max_rel_error: f64,
    pub tolerance: f64,
    pub wrong_elements: usize,
    pub unwritten_elements: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct MemoryCheck {
    pub passed: bool,
    pub bytes: u64,
    pub patterns: u32,
    pub errors: u64,
}

/// GB/s (10^9 bytes); device-to-device counts bytes read plus written, as PyTorch's copy
/// benchmark and vendor figures of memory bandwidth do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Bandwidth {
    pub host_to_device_gbs: Option<f64>,
    pub device_to_host_gbs: Option<f64>,
    pub device_to_device_gbs: Option<f64>,
    pub device_to_device_bytes: u64,
    /// The card's memory bandwidth from the GPU table, when known.
    pub expected_gbs: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Throughput {
    /// The shipped PTX kernel's fp32 rate (no tensor cores).
    pub ptx_fp32_tflops: Option<f64>,
    pub ptx_fp32_size: Option<usize>,
    /// The card's dense fp32 peak from the GPU table.
    pub expected_fp32_tflops: Option<f64>,
    pub cublaslt_bf16_tflops: Option<f64>,
    pub cublaslt_size: Option<usize>,
    pub cublaslt_library: Option<String>,
    /// Why cuBLASLt was not measured.
    pub cublaslt_error: Option<String>,
    /// The card's dense bf16 tensor peak from the GPU table.
    pub expected_bf16_tflops: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PeerAccess {
    pub from: u32,
    pub to: u32,
    pub can_access: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_json_is_its_report_spelling() {
        for status in SmokeStatus::KNOWN {
            let json = serde_json::to_string(&status).expect("serialises");
            assert_eq!(json, format!("\"{}\"", status.as_str()));
            assert_eq!(
                serde_json::from_str::<SmokeStatus>(&json).ok(),
                Some(status.clone())
            );
            assert_eq!(SmokeStatus::from(status.as_str()), status);
        }
        // A newer gpu-doctor's state round-trips as it was written.
        let newer = serde_json::from_str::<SmokeStatus>("\"partial\"").expect("parses");
        assert_eq!(newer, SmokeStatus::Other("partial".to_string()));
        assert_eq!(
            serde_json::to_string(&newer).ok().as_deref(),
            Some("\"partial\"")
        );
        assert_eq!(SmokeStatus::from("partial"), newer);
        assert!(serde_json::from_str::<SmokeStatus>("3").is_err());
    }
}

//! The probe's output turned into a [`FrameworkRuntime`]: pure functions over what the process
//! printed and how it ended, tested on captured text.
//!
//! The probe prints `GPU_DOCTOR_STEP <what>` before each question (so a hang can be placed) and
//! one `GPU_DOCTOR_RESULT <json>` line at the end; anything else on stdout is the framework's
//! own chatter and is ignored.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::host::CmdOutput;
use crate::report::ProbeStatus;
use crate::report::runtime::{
    AllReduceCheck, FrameworkMatmul, FrameworkRuntime, FrameworkSmoke, RuntimeDevice,
};

const STEP: &str = "GPU_DOCTOR_STEP ";
const RESULT: &str = "GPU_DOCTOR_RESULT ";

/// stderr lines kept: enough for TensorFlow's start-up log and a traceback's end.
const STDERR_LINES: usize = 40;
/// Longest line kept; longer ones are cut (a log line can carry a whole library list).
const LINE_CHARS: usize = 600;
/// Warnings kept, in order.
const WARNINGS: usize = 40;

/// The result line as the probe writes it. Every field is optional so that an older or newer
/// probe, or one that stopped half-way, still reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Wire {
    python: Option<String>,
    module_path: Option<String>,
    import_error: Option<String>,
    import_seconds: Option<f64>,
    version: Option<String>,
    cuda: Option<String>,
    hip: Option<String>,
    /// An int from torch, a string from TensorFlow.
    cudnn: Option<serde_json::Value>,
    nccl: Option<String>,
    cuda_runtime_version: Option<i64>,
    cuda_driver_version: Option<i64>,
    gpu_available: Option<bool>,
    device_count: Option<i64>,
    gpu_error: Option<String>,
    devices: Vec<WireDevice>,
    arch_list: Vec<String>,
    backend: Option<String>,
    plugins: Vec<String>,
    build_info: BTreeMap<String, String>,
    warnings: Vec<String>,
    errors: Vec<String>,
    smoke: Option<WireSmoke>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireDevice {
    index: Option<i64>,
    name: Option<String>,
    compute_capability: Option<String>,
    memory_total_mib: Option<i64>,
    platform: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireSmoke {
    matmuls: Vec<WireMatmul>,
    allreduce: Option<WireAllReduce>,
    error: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireMatmul {
    device: Option<i64>,
    passed: bool,
    size: Vec<i64>,
    max_rel_error: Option<f64>,
    tolerance: Option<f64>,
    error: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireAllReduce {
    passed: bool,
    world_size: Option<i64>,
    elements: Option<i64>,
    ms: Option<f64>,
    error: Option<String>,
    /// The ranks' NCCL_DEBUG=INFO lines that name a transport or the network devices.
    nccl_log: Vec<String>,
}

/// The runtime facts from one finished (or stopped) probe process.
#[must_use]
pub(crate) fn from_output(
    out: &CmdOutput,
    interpreter: &str,
    timeout: Duration,
) -> FrameworkRuntime {
    let mut runtime = FrameworkRuntime {
        interpreter: Some(interpreter.to_string()),
        duration_ms: millis(out.elapsed),
        stderr: stderr_tail(&out.stderr),
        ..FrameworkRuntime::default()
    };
    if out.timed_out {
        runtime.status = ProbeStatus::TimedOut;
        runtime.detail = Some(match last_step(&out.stdout) {
            Some(step) => format!(
                "did not finish within {} s and was stopped during `{step}`",
                timeout.as_secs()
            ),
            None => format!(
                "did not finish within {} s and was stopped before Python started the probe",
                timeout.as_secs()
            ),
        });
        return runtime;
    }
    let Some(wire) = result_line(&out.stdout) else {
        runtime.status = ProbeStatus::Failed;
        let during = last_step(&out.stdout)
            .map(|s| format!(" during `{s}`"))
            .unwrap_or_default();
        runtime.detail = Some(format!(
            "the probe gave no answer{during}: {}",
            out.failure_summary()
        ));
        return runtime;
    };
    fill(&mut runtime, wire);
    runtime
}

fn fill(runtime: &mut FrameworkRuntime, wire: Wire) {
    runtime.status = if wire.import_error.is_some() {
        ProbeStatus::Failed
    } else {
        ProbeStatus::Ok
    };
    runtime.detail = wire
        .import_error
        .as_ref()
        .map(|e| format!("import failed: {e}"));
    runtime.python_version = wire.python;
    runtime.import_ms = wire
        .import_seconds
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| millis(Duration::from_secs_f64(s.min(1e6))));
    runtime.module_path = wire.module_path;
    runtime.import_error = wire.import_error;
    runtime.version = wire.version;
    runtime.cuda = wire.cuda;
    runtime.hip = wire.hip;
    runtime.cudnn = wire.cudnn.and_then(|v| match v {
        serde_json::Value::Number(n) => n.as_u64().map(cudnn_from_int),
        serde_json::Value::String(s) => Some(s),
        _ => None,
    });
    runtime.nccl = wire.nccl;
    runtime.cuda_runtime_version = wire
        .cuda_runtime_version
        .and_then(|v| u32::try_from(v).ok());
    runtime.cuda_driver_version = wire.cuda_driver_version.and_then(|v| u32::try_from(v).ok());
    runtime.gpu_available = wire.gpu_available;
    runtime.device_count = wire.device_count.and_then(|v| u32::try_from(v).ok());
    runtime.gpu_error = wire.gpu_error;
    runtime.devices = wire
        .devices
        .into_iter()
        .enumerate()
        .map(|(i, d)| RuntimeDevice {
            index: d
                .index
                .and_then(|v| u32::try_from(v).ok())
                .unwrap_or_else(|| u32::try_from(i).unwrap_or(u32::MAX)),
            name: d.name,
            compute_capability: d.compute_capability,
            memory_total_mib: d.memory_total_mib.and_then(|v| u64::try_from(v).ok()),
            platform: d.platform,
        })
        .collect();
    runtime.arch_list = wire.arch_list;
    runtime.backend = wire.backend;
    runtime.plugins = wire.plugins;
    runtime.build_info = wire.build_info;
    runtime.warnings = wire
        .warnings
        .iter()
        .take(WARNINGS)
        .map(|w| cut(w))
        .collect();
    runtime.probe_errors = wire.errors.iter().map(|e| cut(e)).collect();
    runtime.smoke = wire.smoke.map(smoke);
}

fn smoke(wire: WireSmoke) -> FrameworkSmoke {
    let count = |v: Option<i64>| v.and_then(|v| u32::try_from(v).ok()).unwrap_or(0);
    FrameworkSmoke {
        matmuls: wire
            .matmuls
            .into_iter()
            .map(|m| {
                let dim = |i: usize| count(m.size.get(i).copied());
                FrameworkMatmul {
                    device: count(m.device),
                    // A pass needs a finite error within tolerance, whatever the probe said.
                    passed: m.passed
                        && m.error.is_none()
                        && m.max_rel_error
                            .is_some_and(|e| e.is_finite() && m.tolerance.is_none_or(|t| e <= t)),
                    size: [dim(0), dim(1), dim(2)],
                    max_rel_error: m.max_rel_error.filter(|e| e.is_finite()),
                    tolerance: m.tolerance.unwrap_or(0.0),
                    error: m.error,
                }
            })
            .collect(),
        allreduce: wire.allreduce.map(|a| AllReduceCheck {
            passed: a.passed && a.error.is_none(),
            world_size: count(a.world_size),
            elements: a.elements.and_then(|v| u64::try_from(v).ok()).unwrap_or(0),
            ms: a.ms.filter(|v| v.is_finite()),
            error: a.error,
            transports: transports(&a.nccl_log),
        }),
        error: wire.error,
    }
}

/// The transports NCCL's lines name, in the report's words.
fn transports(lines: &[String]) -> Vec<crate::report::runtime::NcclTransport> {
    crate::parse::nccl_log::parse_nccl_transports(&lines.join("\n"))
        .uses
        .into_iter()
        .map(|u| crate::report::runtime::NcclTransport {
            kind: u.kind.as_str().to_string(),
            via: u.via,
            connections: u64::try_from(u.connections).unwrap_or(u64::MAX),
        })
        .collect()
}

/// The last result line's JSON, if any line parses.
fn result_line(stdout: &str) -> Option<Wire> {
    stdout
        .lines()
        .rev()
        .filter_map(|l| l.strip_prefix(RESULT))
        .find_map(|json| serde_json::from_str(json.trim()).ok())
}

/// The last question the probe started: where a hang or a crash happened.
#[must_use]
pub(crate) fn last_step(stdout: &str) -> Option<String> {
    stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(STEP))
        .map(|s| cut(s.trim()))
}

/// The last non-empty stderr lines, trimmed and cut to length, without repeats in a row.
#[must_use]
pub(crate) fn stderr_tail(stderr: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for line in stderr.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let line = cut(line);
        if lines.last() != Some(&line) {
            lines.push(line);
        }
    }
    let skip = lines.len().saturating_sub(STDERR_LINES);
    lines.split_off(skip)
}

/// cuDNN's version integer as a version: cuDNN 9 encodes `major*10000 + minor*100 + patch`
/// (91900 = 9.19.0), cuDNN 8 and older `major*1000 + minor*100 + patch` (8902 = 8.9.2)
/// (`cudnn_version.h`; compat-frameworks.md §2.1).
#[must_use]
pub(crate) fn cudnn_from_int(v: u64) -> String {
    if v >= 10_000 {
        format!("{}.{}.{}", v / 10_000, v % 10_000 / 100, v % 100)
    } else {
        format!("{}.{}.{}", v / 1000, v % 1000 / 100, v % 100)
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn cut(text: &str) -> String {
    if text.chars().count() <= LINE_CHARS {
        return text.to_string();
    }
    let mut out: String = text.chars().take(LINE_CHARS - 3).collect();
    out.push_str("...");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(stdout: &str, stderr: &str, code: Option<i32>, timed_out: bool) -> CmdOutput {
        CmdOutput {
            code,
            stdout: stdout.to_string(),
            stderr: stderr.to_string(),
            timed_out,
            elapsed: Duration::from_millis(5230),
        }
    }

    /// What the probe printed for torch 2.11.0+cu130 on a driver for CUDA 12.8 (the warning
    /// text is torch's, compat-frameworks.md §2.2).
    const TORCH_TOO_OLD: &str = concat!(
        "GPU_DOCTOR_STEP import torch\n",
        "GPU_DOCTOR_STEP torch.cuda.is_available()\n",
        "GPU_DOCTOR_RESULT {\"framework\": \"torch\", \"python\": \"3.12.3\", ",
        "\"module_path\": \"/opt/venv/lib/python3.12/site-packages/torch\", \"import_seconds\": 4.2, ",
        "\"version\": \"2.11.0+cu130\", \"cuda\": \"13.0\", \"hip\": null, \"cudnn\": 91900, ",
        "\"gpu_available\": false, \"device_count\": 0, \"devices\": [], ",
        "\"arch_list\": [\"sm_75\", \"sm_80\", \"sm_90\", \"sm_100\", \"sm_120\", \"compute_120\"], ",
        "\"nccl\": \"2.28.9\", \"plugins\": [], \"build_info\": {}, ",
        "\"warnings\": [\"UserWarning: CUDA initialization: The NVIDIA driver on your system is too old ",
        "(found version 12080). Please update your GPU driver by downloading and installing a new version ",
        "from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org ",
        "to install a PyTorch version that has been compiled with your version of the CUDA driver. ",
        "(Triggered internally at /pytorch/c10/cuda/CUDAFunctions.cpp:119.)\"], \"errors\": []}\n"
    );

    #[test]
    fn a_torch_that_cannot_see_the_gpu_keeps_its_warning() {
        let r = from_output(
            &output(TORCH_TOO_OLD, "", Some(0), false),
            "/opt/venv/bin/python3",
            Duration::from_secs(60),
        );
        assert_eq!(r.status, ProbeStatus::Ok);
        assert_eq!(r.version.as_deref(), Some("2.11.0+cu130"));
        assert_eq!(r.cuda.as_deref(), Some("13.0"));
        assert_eq!(r.cudnn.as_deref(), Some("9.19.0"));
        assert_eq!(r.gpu_available, Some(false));
        assert_eq!(r.device_count, Some(0));
        assert_eq!(r.import_ms, Some(4200));
        assert_eq!(r.duration_ms, 5230);
        assert_eq!(r.arch_list.len(), 6);
        assert!(
            r.warnings[0].contains("found version 12080"),
            "{:?}",
            r.warnings
        );
        assert_eq!(r.python_version.as_deref(), Some("3.12.3"));
    }

    #[test]
    fn an_import_error_is_a_failure_with_its_message() {
        let stdout = "GPU_DOCTOR_STEP import torch\nGPU_DOCTOR_RESULT {\"import_error\": \"ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory\", \"warnings\": [], \"errors\": []}\n";
        let r = from_output(
            &output(stdout, "", Some(0), false),
            "/v/bin/python",
            Duration::from_secs(60),
        );
        assert_eq!(r.status, ProbeStatus::Failed);
        assert_eq!(
            r.detail.as_deref(),
            Some(
                "import failed: ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory"
            )
        );
    }

    #[test]
    fn a_timeout_names_the_step_it_hung_in() {
        let stdout = "GPU_DOCTOR_STEP import torch\nGPU_DOCTOR_STEP torch.cuda.is_available()\n";
        let r = from_output(
            &output(stdout, "partial\n", None, true),
            "/v/bin/python",
            Duration::from_secs(60),
        );
        assert_eq!(r.status, ProbeStatus::TimedOut);
        assert_eq!(
            r.detail.as_deref(),
            Some("did not finish within 60 s and was stopped during `torch.cuda.is_available()`")
        );
        assert_eq!(r.stderr, ["partial"]);
    }

    #[test]
    fn a_crash_without_an_answer_keeps_the_exit_status_and_stderr() {
        let stdout = "GPU_DOCTOR_STEP import tensorflow\n";
        let r = from_output(
            &output(
                stdout,
                "Fatal Python error: Segmentation fault\n",
                None,
                false,
            ),
            "/v/bin/python",
            Duration::from_secs(60),
        );
        assert_eq!(r.status, ProbeStatus::Failed);
        let detail = r.detail.unwrap_or_default();
        assert!(detail.contains("during `import tensorflow`"), "{detail}");
        assert!(detail.contains("Segmentation fault"), "{detail}");
    }

    #[test]
    fn framework_chatter_on_stdout_and_a_garbled_line_are_ignored() {
        let stdout = "hello from a sitecustomize\nGPU_DOCTOR_RESULT {not json\nGPU_DOCTOR_RESULT {\"version\": \"14.2.0\", \"cuda_runtime_version\": 13020, \"cuda_driver_version\": 13000, \"gpu_available\": true, \"device_count\": 1, \"devices\": [{\"index\": 0, \"name\": \"NVIDIA H200\", \"compute_capability\": \"9.0\", \"memory_total_mib\": 143771}]}\n";
        let r = from_output(
            &output(stdout, "", Some(0), false),
            "/v/bin/python",
            Duration::from_secs(60),
        );
        assert_eq!(r.status, ProbeStatus::Ok);
        assert_eq!(r.cuda_runtime_version, Some(13020));
        assert_eq!(r.cuda_driver_version, Some(13000));
        assert_eq!(r.devices[0].name.as_deref(), Some("NVIDIA H200"));
        assert_eq!(r.devices[0].memory_total_mib, Some(143_771));
    }

    /// The worker's NCCL_DEBUG=INFO lines become the transports NCCL chose (lines from
    /// NVIDIA/nccl-tests#311 and NVIDIA/nccl#1817).
    #[test]
    fn the_allreduce_names_the_transports_nccl_chose() {
        let result = serde_json::json!({"smoke": {"matmuls": [], "allreduce": {
        "passed": true, "world_size": 2, "elements": 1_048_576, "ms": 0.4,
        "nccl_log": [
            "gpu40:9455:9578 [0] NCCL INFO Channel 00/0 : 4[0] -> 5[1] via P2P/CUMEM/read",
            "gpu40:9455:9578 [0] NCCL INFO Channel 01/0 : 4[0] -> 5[1] via P2P/CUMEM/read",
            "sh9-machine:3884652:3884740 [7] NCCL INFO Channel 01 : 7[7] -> 2[2] via SHM/direct/direct"
        ]}}});
        let stdout = format!("GPU_DOCTOR_RESULT {result}\n");
        let r = from_output(
            &output(&stdout, "", Some(0), false),
            "/v/bin/python",
            Duration::from_secs(60),
        );
        let a = r.smoke.unwrap_or_default().allreduce.unwrap_or_default();
        let got: Vec<(&str, &str, u64)> = a
            .transports
            .iter()
            .map(|t| (t.kind.as_str(), t.via.as_str(), t.connections))
            .collect();
        assert_eq!(
            got,
            [
                ("p2p", "P2P/CUMEM/read", 2),
                ("shm", "SHM/direct/direct", 1)
            ]
        );
    }

    #[test]
    fn a_smoke_pass_needs_a_finite_error_within_tolerance() {
        let stdout = "GPU_DOCTOR_RESULT {\"smoke\": {\"matmuls\": [{\"device\": 0, \"passed\": true, \"size\": [256, 192, 320], \"max_rel_error\": 2e-7, \"tolerance\": 0.001}, {\"device\": 1, \"passed\": true, \"size\": [256, 192, 320], \"max_rel_error\": 0.5, \"tolerance\": 0.001}], \"allreduce\": {\"passed\": true, \"world_size\": 2, \"elements\": 1048576, \"ms\": 0.4}}}\n";
        let r = from_output(
            &output(stdout, "", Some(0), false),
            "/v/bin/python",
            Duration::from_secs(60),
        );
        let smoke = r.smoke.unwrap_or_default();
        assert!(smoke.matmuls[0].passed);
        assert_eq!(smoke.matmuls[0].size, [256, 192, 320]);
        assert!(
            !smoke.matmuls[1].passed,
            "0.5 is beyond 1e-3 whatever the probe said"
        );
        let ar = smoke.allreduce.unwrap_or_default();
        assert!(ar.passed);
        assert_eq!(ar.world_size, 2);
    }

    #[test]
    fn cudnn_integers_of_both_encodings() {
        assert_eq!(cudnn_from_int(91900), "9.19.0");
        assert_eq!(cudnn_from_int(90100), "9.1.0");
        assert_eq!(cudnn_from_int(8902), "8.9.2");
        assert_eq!(cudnn_from_int(7605), "7.6.5");
    }

    #[test]
    fn stderr_keeps_the_last_lines_without_repeats() {
        let text: String = (0..100)
            .map(|i| format!("line {i}\nline {i}\n\n"))
            .collect();
        let tail = stderr_tail(&text);
        assert_eq!(tail.len(), STDERR_LINES);
        assert_eq!(tail.last().map(String::as_str), Some("line 99"));
        assert_eq!(
            stderr_tail(&"x".repeat(5000))[0].chars().count(),
            LINE_CHARS
        );
    }
}

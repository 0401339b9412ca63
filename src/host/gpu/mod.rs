//! NVML and libcuda, asked in a child process of gpu-doctor with a deadline.
//!
//! A wedged driver can hang NVML for minutes and a broken libcuda can crash the process that
//! loads it; ollama and conda query the driver out of process for the same reason. The child is
//! gpu-doctor itself started with the hidden argument [`CHILD_ARG`]; it prints one JSON
//! [`GpuSnapshot`] and exits. It does not inherit `CUDA_VISIBLE_DEVICES`, so the driver-level view
//! sees every GPU.

//!
//! One file a subject: this one the child ([`query`], [`child_main`]) and libcuda's version;
//! [`stream`] the TUI's streaming child; `nvml` a GPU's readings from NVML; `fanout` the
//! per-GPU queries side by side; `fabric` NVML's GPU fabric info, which has no safe binding.

// FFI: libcuda through libloading (cuDriverGetVersion): a foreign call.
#![allow(unsafe_code)]

mod fabric;
mod fanout;
mod nvml;
pub mod stream;

pub use stream::{GpuStream, LiveReading, Reading, stream_main};

use std::time::Duration;

use nvml_wrapper::Nvml;
use serde::{Deserialize, Serialize};

use super::{GPU_MASKING_VARS, Host};
use crate::report::{Gpu, ProbeOutcome, ProbeStatus};
use nvml::{fill_from_nvml, nvml_error_outcome};

/// The hidden first argument that makes gpu-doctor act as the driver probe child.
pub const CHILD_ARG: &str = "__gpu-probe";

/// The hidden first argument that makes gpu-doctor the streaming reader of live GPU readings
/// ([`stream_main`]), which the TUI keeps running while its GPUs screen is open.
pub const STREAM_ARG: &str = "__gpu-stream";

/// The most GPUs a child reads from NVML or libcuda: a library that reports 2^31 - 1 devices
/// made the child push an entry per index, gigabytes before its deadline (and the TUI's
/// streaming child has none). A machine has at most tens of GPUs.
pub const MAX_DEVICES: u32 = 1024;

/// How often the streaming child takes a reading.
pub const STREAM_EVERY: Duration = Duration::from_secs(1);

/// What the child learned. Errors are facts here, never a reason to fail.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuSnapshot {
    pub nvml: ProbeOutcome,
    pub driver_version: Option<String>,
    /// "13.0", from `nvmlSystemGetCudaDriverVersion_v2`.
    pub cuda_version: Option<String>,
    pub gpus: Vec<Gpu>,
    pub libcuda: ProbeOutcome,
    /// "13.0", from `cuDriverGetVersion` of the libcuda the loader picks.
    pub libcuda_cuda_version: Option<String>,
    /// Where the child's time went (`nvmlInit`, the NVML queries, loading libcuda beside
    /// them, the whole), so `-v` shows which part of the scan's longest probe grew.
    #[serde(default)]
    pub phases: Option<ChildPhases>,
}

/// The child's phases in milliseconds, from its `main`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChildPhases {
    pub nvml_init_ms: f64,
    pub nvml_queries_ms: f64,
    /// The threads that asked the GPUs side by side (0 in a child from before they did).
    #[serde(default)]
    pub nvml_threads: u32,
    /// Each GPU's queries, in NVML's index order.
    #[serde(default)]
    pub per_gpu_ms: Vec<f64>,
    /// On its own thread, beside the NVML phases.
    pub libcuda_ms: f64,
    pub total_ms: f64,
}

/// The most GPUs [`ChildPhases::describe`] names one by one; past them, the slowest.
const DESCRIBED_GPUS: usize = 16;

impl ChildPhases {
    /// "nvmlInit 21.3 ms, queries 8.1 ms (8 GPUs on 8 threads: 0 3.1, 1 2.9, ... ms), libcuda
    /// 14.0 ms beside them, 30.2 ms in all".
    #[must_use]
    pub fn describe(&self) -> String {
        let gpus = self.per_gpu_ms.len();
        let each = if gpus == 0 {
            String::new()
        } else {
            let listed: Vec<String> = self
                .per_gpu_ms
                .iter()
                .take(DESCRIBED_GPUS)
                .enumerate()
                .map(|(i, ms)| format!("{i} {ms:.1}"))
                .collect();
            let rest = if gpus > DESCRIBED_GPUS {
                let slowest = self.per_gpu_ms.iter().copied().fold(0.0, f64::max);
                format!(", ... slowest {slowest:.1}")
            } else {
                String::new()
            };
            format!(
                " ({gpus} GPU{} on {} thread{}: {}{rest} ms)",
                if gpus == 1 { "" } else { "s" },
                self.nvml_threads,
                if self.nvml_threads == 1 { "" } else { "s" },
                listed.join(", ")
            )
        };
        format!(
            "nvmlInit {:.1} ms, queries {:.1} ms{each}, libcuda {:.1} ms beside them, {:.1} ms in all",
            self.nvml_init_ms, self.nvml_queries_ms, self.libcuda_ms, self.total_ms
        )
    }
}

fn ms_since(start: std::time::Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

/// Runs the child probe. Under `--root` nothing is loaded and the outcome says so.
#[must_use]
pub fn query(host: &Host) -> GpuSnapshot {
    if !host.live() {
        let skipped = ProbeOutcome::new(
            ProbeStatus::Skipped,
            Some("not loaded under --root".to_string()),
        );
        return GpuSnapshot {
            nvml: skipped.clone(),
            libcuda: skipped,
            ..GpuSnapshot::default()
        };
    }
    let failed = |status, detail: String| {
        let outcome = ProbeOutcome::new(status, Some(detail));
        GpuSnapshot {
            nvml: outcome.clone(),
            libcuda: outcome,
            ..GpuSnapshot::default()
        }
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            return failed(
                ProbeStatus::Failed,
                format!("cannot find own executable: {e}"),
            );
        }
    };
    let env: Vec<(String, String)> = host
        .env
        .with_prefix("")
        .filter(|(k, _)| !GPU_MASKING_VARS.contains(k))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    // NVML initialises in ~12 ms on a healthy H200; a generous floor still catches a hang.
    let timeout = host.timeout.max(Duration::from_secs(2));
    let out = match super::cmd::run(&exe, &[CHILD_ARG], &env, timeout) {
        Ok(out) => out,
        Err(e) => {
            return failed(
                ProbeStatus::Failed,
                format!("cannot start the driver probe: {e}"),
            );
        }
    };
    if out.timed_out {
        return failed(
            ProbeStatus::TimedOut,
            format!(
                "NVML/libcuda did not answer within {:.1} s (a hung driver?)",
                timeout.as_secs_f64()
            ),
        );
    }
    match serde_json::from_str::<GpuSnapshot>(out.stdout.trim()) {
        Ok(snapshot) => snapshot,
        Err(_) => failed(
            ProbeStatus::Failed,
            format!("the driver probe crashed: {}", out.failure_summary()),
        ),
    }
}

/// The child's whole job: ask NVML and libcuda, print JSON, exit 0.
#[must_use]
#[expect(
    clippy::disallowed_macros,
    reason = "the NVML child's answer to its parent: one JSON line on the child's own stdout"
)]
pub fn child_main() -> i32 {
    let start = std::time::Instant::now();
    let mut snapshot = GpuSnapshot::default();
    let mut phases = ChildPhases::default();
    // libcuda is loaded and asked on another thread while NVML loads and answers: the two
    // libraries are independent, and each takes a good part of the child's time.
    let timed_libcuda = || {
        let start = std::time::Instant::now();
        (libcuda_driver_version(), ms_since(start))
    };
    let libcuda = std::thread::Builder::new()
        .name("libcuda".to_string())
        .spawn(timed_libcuda)
        .ok();
    let nvml = Nvml::init();
    phases.nvml_init_ms = ms_since(start);
    match nvml {
        Ok(nvml) => {
            let queries = std::time::Instant::now();
            let times = fill_from_nvml(&nvml, &mut snapshot);
            phases.nvml_queries_ms = ms_since(queries);
            phases.nvml_threads = times.threads;
            phases.per_gpu_ms = times.per_gpu_ms;
        }
        Err(e) => snapshot.nvml = nvml_error_outcome(&e),
    }
    let (libcuda, libcuda_ms) = libcuda.map_or_else(timed_libcuda, |t| {
        t.join().unwrap_or_else(|_| {
            let panicked = (ProbeStatus::Failed, "loading libcuda panicked".to_string());
            (Err(panicked), 0.0)
        })
    });
    phases.libcuda_ms = libcuda_ms;
    match libcuda {
        Ok(v) => {
            snapshot.libcuda = ProbeOutcome::new(ProbeStatus::Ok, None);
            snapshot.libcuda_cuda_version =
                crate::version::Version::from_cuda_int(i64::from(v)).map(|v| v.to_string());
        }
        Err((status, detail)) => snapshot.libcuda = ProbeOutcome::new(status, Some(detail)),
    }
    phases.total_ms = ms_since(start);
    snapshot.phases = Some(phases);
    match serde_json::to_string(&snapshot) {
        Ok(json) => {
            println!("{json}");
            0
        }
        Err(_) => 3,
    }
}

/// `cuDriverGetVersion` of the libcuda the dynamic loader picks. It needs no `cuInit`, so it
/// answers even when no GPU is usable; loading is at run time, gpu-doctor never links libcuda.
fn libcuda_driver_version() -> Result<i32, (ProbeStatus, String)> {
    type GetVersion = unsafe extern "C" fn(*mut i32) -> i32;
    // SAFETY: loading a shared library runs its initialisers; libcuda's are the driver's own,
    // and this runs in the throw-away child process exactly so a crash here stays here.
    let lib = unsafe { libloading::Library::new("libcuda.so.1") }.map_err(|e| {
        (
            ProbeStatus::Absent,
            format!("libcuda.so.1 could not be loaded: {e}"),
        )
    })?;
    // SAFETY: the symbol has this signature in every CUDA driver API since 2.2.
    let get: libloading::Symbol<'_, GetVersion> = unsafe { lib.get(b"cuDriverGetVersion\0") }
        .map_err(|e| {
            (
                ProbeStatus::Failed,
                format!("libcuda has no cuDriverGetVersion: {e}"),
            )
        })?;
    let mut version = 0i32;
    // SAFETY: `version` is a valid, writable i32 for the call's duration.
    let rc = unsafe { get(&raw mut version) };
    if rc == 0 {
        Ok(version)
    } else {
        Err((
            ProbeStatus::Failed,
            format!("cuDriverGetVersion returned CUDA error {rc}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::ChildPhases;

    #[test]
    fn the_phases_name_each_gpus_time_and_the_threads() {
        let phases = ChildPhases {
            nvml_init_ms: 12.04,
            nvml_queries_ms: 6.26,
            nvml_threads: 2,
            per_gpu_ms: vec![5.9, 6.1],
            libcuda_ms: 14.0,
            total_ms: 30.2,
        };
        assert_eq!(
            phases.describe(),
            "nvmlInit 12.0 ms, queries 6.3 ms (2 GPUs on 2 threads: 0 5.9, 1 6.1 ms), \
             libcuda 14.0 ms beside them, 30.2 ms in all"
        );
        let many = ChildPhases {
            nvml_threads: 8,
            per_gpu_ms: (0..20).map(f64::from).collect(),
            ..ChildPhases::default()
        };
        let text = many.describe();
        assert!(
            text.contains("(20 GPUs on 8 threads: 0 0.0, 1 1.0,"),
            "{text}"
        );
        assert!(text.contains(", 15 15.0, ... slowest 19.0 ms)"), "{text}");
        // A child from before the threads (no per-GPU times) reads as it did.
        let old: ChildPhases = serde_json::from_str(
            r#"{"nvml_init_ms":1.0,"nvml_queries_ms":2.0,"libcuda_ms":3.0,"total_ms":4.0}"#,
        )
        .unwrap();
        assert_eq!(
            old.describe(),
            "nvmlInit 1.0 ms, queries 2.0 ms, libcuda 3.0 ms beside them, 4.0 ms in all"
        );
    }
}

//! NVML and libcuda, asked in a child process of gpu-doctor with a deadline.
//!
//! A wedged driver can hang NVML for minutes and a broken libcuda can crash the process that
//! loads it; ollama and conda query the driver out of process for the same reason. The child is
//! gpu-doctor itself started with the hidden argument [`CHILD_ARG`]; it prints one JSON
//! [`GpuSnapshot`] and exits. It does not inherit `CUDA_VISIBLE_DEVICES`, so the driver-level view
//! sees every GPU.

// FFI: libcuda through libloading (cuDriverGetVersion) and NVML's GPU fabric info through
// nvml-wrapper's raw function table (no safe binding: rust-nvml/nvml-wrapper#142): foreign calls.
#![allow(unsafe_code)]

use std::time::Duration;

use nvml_wrapper::Nvml;
use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::enum_wrappers::device::{
    Clock, EccCounter, MemoryError, TemperatureSensor, TemperatureThreshold,
};
use nvml_wrapper::error::NvmlError;
use serde::{Deserialize, Serialize};

use super::{GPU_MASKING_VARS, Host};
use crate::report::{EccCounts, Gpu, ProbeOutcome, ProbeStatus};

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
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ChildPhases {
    pub nvml_init_ms: f64,
    pub nvml_queries_ms: f64,
    /// On its own thread, beside the NVML phases.
    pub libcuda_ms: f64,
    pub total_ms: f64,
}

impl ChildPhases {
    /// "nvmlInit 21.3 ms, queries 8.1 ms, libcuda 14.0 ms beside them, 30.2 ms in all".
    #[must_use]
    pub fn describe(&self) -> String {
        format!(
            "nvmlInit {:.1} ms, queries {:.1} ms, libcuda {:.1} ms beside them, {:.1} ms in all",
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
            fill_from_nvml(&nvml, &mut snapshot);
            phases.nvml_queries_ms = ms_since(queries);
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

/// One line of the streaming child: every GPU's reading, or why there is none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    pub gpus: Vec<Gpu>,
    pub error: Option<String>,
}

/// The streaming child's whole job: NVML is loaded and initialised once, then one JSON
/// [`Reading`] a line every [`STREAM_EVERY`] until the parent goes away. A process started once
/// a second cost the TUI 3.7% of a core on an H200 (loading NVML and libcuda each time); one
/// reading from a loaded NVML is a few ioctls.
///
/// It ends when its standard input reaches end of file (the parent closed it, or died: the
/// kernel closes a dead process's pipes), or when a line cannot be written.
#[must_use]
pub fn stream_main() -> i32 {
    use std::io::{Read, Write};
    // The parent holds the pipe's other end; end of file means it is gone.
    let _ = std::thread::Builder::new()
        .name("parent-watch".to_string())
        .spawn(|| {
            let mut stdin = std::io::stdin().lock();
            let mut buf = [0u8; 64];
            while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
            std::process::exit(0);
        });
    let mut out = std::io::stdout().lock();
    let nvml = match Nvml::init() {
        Ok(nvml) => nvml,
        Err(e) => {
            let reading = Reading {
                gpus: Vec::new(),
                error: Some(format!("NVML did not start: {e}")),
            };
            let _ = serde_json::to_string(&reading).map(|json| writeln!(out, "{json}"));
            return 0;
        }
    };
    loop {
        let mut snapshot = GpuSnapshot::default();
        fill_from_nvml(&nvml, &mut snapshot);
        let reading = if snapshot.nvml.status == ProbeStatus::Ok {
            Reading {
                gpus: snapshot.gpus,
                error: None,
            }
        } else {
            Reading {
                gpus: Vec::new(),
                error: Some(
                    snapshot
                        .nvml
                        .detail
                        .unwrap_or_else(|| "NVML did not answer".to_string()),
                ),
            }
        };
        let Ok(json) = serde_json::to_string(&reading) else {
            return 3;
        };
        if writeln!(out, "{json}").and_then(|()| out.flush()).is_err() {
            return 0;
        }
        std::thread::sleep(STREAM_EVERY);
    }
}

/// The parent's side of [`stream_main`]: the child, and the newest reading a thread reads
/// from it. Dropping it stops the child.
#[derive(Debug)]
pub struct GpuStream {
    child: std::process::Child,
    /// The child's process group (its own id): what a deadline and `Drop` kill.
    pgid: i32,
    /// How long after the previous reading (or the start) the next one may come: past it the
    /// child is stuck (inside NVML: a hung driver) and its group is killed.
    deadline: Duration,
    shared: std::sync::Arc<StreamShared>,
    /// Keeps the child's group off the orphan sweep; dropped after the child is ended.
    _live: super::reap::Live,
}

/// One reading as the TUI takes it: every GPU, or why there is none.
pub type LiveReading = Result<Vec<Gpu>, String>;

#[derive(Debug, Default)]
struct StreamShared {
    /// The newest reading and its number (1 for the first).
    latest: std::sync::Mutex<(u64, Option<LiveReading>)>,
    /// When the newest reading came (the start, before the first).
    last: std::sync::Mutex<Option<std::time::Instant>>,
    changed: std::sync::Condvar,
}

impl GpuStream {
    /// Starts the child (this executable with [`STREAM_ARG`]), with the environment of `host`
    /// less the variables that hide GPUs. Each reading must come within the budget a scan
    /// gets (`--timeout` and its slack) of the one before, a period more: else the child's
    /// process group is killed, and [`GpuStream::running`] says it ended.
    ///
    /// # Errors
    /// Why the child could not start.
    pub fn start(host: &Host) -> Result<GpuStream, String> {
        let exe =
            std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
        let mut command = std::process::Command::new(exe);
        command.arg(STREAM_ARG).env_clear().envs(
            host.env
                .with_prefix("")
                .filter(|(k, _)| !GPU_MASKING_VARS.contains(k)),
        );
        GpuStream::spawn(command, host.timeout + super::budget::SLACK + STREAM_EVERY)
    }

    /// Starts `command` as the streaming child, in its own process group.
    fn spawn(mut command: std::process::Command, deadline: Duration) -> Result<GpuStream, String> {
        use std::io::BufRead;
        use std::os::unix::process::CommandExt;
        use std::process::Stdio;
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0);
        // Its own group, registered as running under the spawn lock: the orphan sweep that
        // follows every command spares it for as long as the stream lives.
        let (mut child, live) = {
            let _guard = super::reap::SPAWNING
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let child = command
                .spawn()
                .map_err(|e| format!("cannot start the reading process: {e}"))?;
            let pgid = i32::try_from(child.id()).unwrap_or(0);
            (child, super::reap::Live::register(pgid))
        };
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| "the reading process has no output".to_string())?;
        let shared = std::sync::Arc::new(StreamShared::default());
        if let Ok(mut last) = shared.last.lock() {
            *last = Some(std::time::Instant::now());
        }
        let theirs = std::sync::Arc::clone(&shared);
        let reader = std::thread::Builder::new()
            .name("gpu-stream".to_string())
            .spawn(move || {
                let publish = |value: LiveReading| {
                    if let Ok(mut latest) = theirs.latest.lock() {
                        latest.0 += 1;
                        latest.1 = Some(value);
                    }
                    if let Ok(mut last) = theirs.last.lock() {
                        *last = Some(std::time::Instant::now());
                    }
                    theirs.changed.notify_all();
                };
                for line in std::io::BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    publish(match serde_json::from_str::<Reading>(&line) {
                        Ok(Reading { error: Some(e), .. }) => Err(e),
                        Ok(Reading { gpus, error: None }) => Ok(gpus),
                        Err(e) => Err(format!(
                            "the reading process wrote something unreadable: {e}"
                        )),
                    });
                }
                publish(Err("the reading process ended".to_string()));
            });
        if let Err(e) = reader {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("cannot read the reading process: {e}"));
        }
        Ok(GpuStream {
            pgid: i32::try_from(child.id()).unwrap_or(0),
            child,
            deadline,
            shared,
            _live: live,
        })
    }

    /// Whether the child is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The first reading newer than number `after`, waiting up to `wait` for it; the newest
    /// one if none comes in time (None before the first). Returns its number too. A child
    /// past its deadline (see [`GpuStream::start`]) has its process group killed here.
    #[must_use]
    pub fn next_after(&self, after: u64, wait: Duration) -> Option<(u64, LiveReading)> {
        let found = {
            let guard = self.shared.latest.lock().ok()?;
            let (guard, _) = self
                .shared
                .changed
                .wait_timeout_while(guard, wait, |latest| latest.0 <= after)
                .ok()?;
            guard.1.clone().map(|value| (guard.0, value))
        };
        let late = self
            .shared
            .last
            .lock()
            .ok()
            .and_then(|last| *last)
            .is_some_and(|last| last.elapsed() > self.deadline);
        if late {
            super::reap::kill_group(self.pgid);
        }
        found
    }
}

impl Drop for GpuStream {
    fn drop(&mut self) {
        // Closing its input ends it; its group is killed in case it is stuck inside NVML
        // (or left a process of its own).
        drop(self.child.stdin.take());
        super::reap::kill_group(self.pgid);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn nvml_error_outcome(e: &NvmlError) -> ProbeOutcome {
    let status = match e {
        NvmlError::LibloadingError(_) | NvmlError::LibraryNotFound => ProbeStatus::Absent,
        _ => ProbeStatus::Failed,
    };
    let detail = match e {
        NvmlError::LibloadingError(inner) => {
            format!("libnvidia-ml.so.1 could not be loaded: {inner}")
        }
        other => other.to_string(),
    };
    ProbeOutcome::new(status, Some(detail))
}

fn fill_from_nvml(nvml: &Nvml, snapshot: &mut GpuSnapshot) {
    snapshot.driver_version = nvml.sys_driver_version().ok();
    snapshot.cuda_version = nvml
        .sys_cuda_driver_version()
        .ok()
        .and_then(|v| crate::version::Version::from_cuda_int(i64::from(v)))
        .map(|v| v.to_string());
    let count = match nvml.device_count() {
        Ok(count) => count,
        Err(e) => {
            snapshot.nvml = nvml_error_outcome(&e);
            return;
        }
    };
    snapshot.nvml = if count > MAX_DEVICES {
        ProbeOutcome::new(
            ProbeStatus::Ok,
            Some(format!(
                "NVML reported {count} GPUs; only the first {MAX_DEVICES} were read"
            )),
        )
    } else {
        ProbeOutcome::new(ProbeStatus::Ok, None)
    };
    for index in 0..count.min(MAX_DEVICES) {
        match nvml.device_by_index(index) {
            Ok(device) => snapshot.gpus.push(gpu_from_device(index, &device)),
            Err(e) => {
                // One lost GPU must not hide the others; keep what we know about it.
                snapshot.gpus.push(Gpu {
                    index,
                    source: "nvml".to_string(),
                    filled_from: vec![format!("error: {e}")],
                    ..Gpu::default()
                });
            }
        }
    }
}

fn gpu_from_device(index: u32, d: &nvml_wrapper::Device<'_>) -> Gpu {
    let pci = d.pci_info().ok();
    let memory = d.memory_info().ok();
    let mib = |bytes: u64| bytes / (1024 * 1024);
    let ecc_count = |kind, counter| d.total_ecc_errors(kind, counter).ok();
    Gpu {
        index,
        name: d.name().ok(),
        uuid: d.uuid().ok(),
        pci_bus_id: pci.as_ref().map(|p| p.bus_id.clone()),
        pci_device_id: pci
            .as_ref()
            .map(|p| p.pci_device_id >> 16)
            .filter(|id| *id != 0)
            .map(|id| format!("0x{id:04x}")),
        pci_subsystem_id: pci
            .as_ref()
            .and_then(|p| p.pci_sub_system_id)
            .filter(|id| id & 0xffff != 0)
            .map(|id| format!("{id:#010x}")),
        compute_capability: d
            .cuda_compute_capability()
            .ok()
            .map(|cc| format!("{}.{}", cc.major, cc.minor)),
        architecture: d.architecture().ok().map(|a| a.to_string()),
        memory_total_mib: memory.as_ref().map(|m| mib(m.total)),
        memory_used_mib: memory.as_ref().map(|m| mib(m.used)),
        temperature_c: d.temperature(TemperatureSensor::Gpu).ok(),
        temperature_slowdown_c: d.temperature_threshold(TemperatureThreshold::Slowdown).ok(),
        power_draw_w: d.power_usage().ok().map(|mw| f64::from(mw) / 1000.0),
        power_limit_w: d
            .enforced_power_limit()
            .ok()
            .map(|mw| f64::from(mw) / 1000.0),
        clock_sm_mhz: d.clock_info(Clock::SM).ok(),
        clock_sm_max_mhz: d.max_clock_info(Clock::SM).ok(),
        clock_mem_mhz: d.clock_info(Clock::Memory).ok(),
        clock_mem_max_mhz: d.max_clock_info(Clock::Memory).ok(),
        utilization_pct: d.utilization_rates().ok().map(|u| u.gpu),
        throttle_reasons: d
            .current_throttle_reasons()
            .map(throttle_names)
            .unwrap_or_default(),
        ecc: EccCounts {
            enabled: d.is_ecc_enabled().ok().map(|e| e.currently_enabled),
            volatile_corrected: ecc_count(MemoryError::Corrected, EccCounter::Volatile),
            volatile_uncorrected: ecc_count(MemoryError::Uncorrected, EccCounter::Volatile),
            aggregate_corrected: ecc_count(MemoryError::Corrected, EccCounter::Aggregate),
            aggregate_uncorrected: ecc_count(MemoryError::Uncorrected, EccCounter::Aggregate),
            ..EccCounts::default()
        },
        pcie_gen_current: d.current_pcie_link_gen().ok(),
        pcie_gen_max: d.max_pcie_link_gen().ok(),
        pcie_width_current: d.current_pcie_link_width().ok(),
        pcie_width_max: d.max_pcie_link_width().ok(),
        persistence_mode: d.is_in_persistent_mode().ok(),
        mig_mode: d.mig_mode().ok().map(|m| {
            if m.current == 1 {
                "Enabled"
            } else {
                "Disabled"
            }
            .to_string()
        }),
        fabric: nvml_fabric(d),
        source: "nvml".to_string(),
        filled_from: Vec::new(),
        ..Gpu::default()
    }
}

/// `NVML_STRUCT_VERSION(GpuFabricInfo, 3)` of nvml.h: the struct's size with the version in the
/// top byte.
#[allow(clippy::cast_possible_truncation)] // the struct is 40 bytes
const FABRIC_INFO_V3: u32 =
    (std::mem::size_of::<nvml_wrapper_sys::bindings::nvmlGpuFabricInfo_v3_t>() as u32) | (3 << 24);

/// NVML's fabric info: state, status (an NVML return code), clique id, cluster UUID, and (v3)
/// health summary and health mask.
type RawFabric = (u8, u32, u32, [u8; 16], Option<(u8, u32)>);

/// The GPU's NVLink fabric from NVML, as nvidia-smi shows it: `None` where the GPU is in no
/// fabric (state "Not Supported", `NVML_ERROR_NOT_SUPPORTED`) or the driver predates the call (a
/// missing symbol), which is "not applicable", never an error. Status, clique and cluster only
/// once the state is Completed, and clique and cluster only with status Success, as nvidia-smi
/// prints N/A for them otherwise.
fn nvml_fabric(d: &nvml_wrapper::Device<'_>) -> Option<crate::report::GpuFabric> {
    use nvml_wrapper_sys::bindings as sys;
    let lib = d.nvml().lib();
    // SAFETY: the handle is only passed to NVML calls below, while `d` (and the Nvml it borrows)
    // is alive; it is never stored.
    let handle = unsafe { d.handle() };
    // (state, status, clique id, cluster UUID, health summary, health mask)
    let raw: (u8, u32, u32, [u8; 16], Option<(u8, u32)>) =
        if let Ok(get) = lib.nvmlDeviceGetGpuFabricInfoV.as_ref() {
            let mut info = sys::nvmlGpuFabricInfo_v3_t {
                version: FABRIC_INFO_V3,
                clusterUuid: [0; 16],
                status: 0,
                cliqueId: 0,
                state: 0,
                healthMask: 0,
                healthSummary: 0,
            };
            // SAFETY: `get` is nvmlDeviceGetGpuFabricInfoV from the loaded libnvidia-ml, called with
            // a live device handle and a valid, writable v3 struct whose `version` field names
            // exactly that layout (a driver that knows only v1/v2 answers
            // NVML_ERROR_ARGUMENT_VERSION_MISMATCH without writing).
            let rc = unsafe { get(handle, &raw mut info) };
            if rc == sys::nvmlReturn_enum_NVML_SUCCESS {
                (
                    info.state,
                    info.status,
                    info.cliqueId,
                    info.clusterUuid,
                    Some((info.healthSummary, info.healthMask)),
                )
            } else if rc == sys::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED {
                return None;
            } else {
                nvml_fabric_v1(lib, handle)?
            }
        } else {
            nvml_fabric_v1(lib, handle)?
        };
    let (state, status, clique, uuid, health) = raw;
    let state = match state {
        s if s == sys::NVML_GPU_FABRIC_STATE_NOT_STARTED as u8 => "Not Started",
        s if s == sys::NVML_GPU_FABRIC_STATE_IN_PROGRESS as u8 => "In Progress",
        s if s == sys::NVML_GPU_FABRIC_STATE_COMPLETED as u8 => "Completed",
        _ => return None,
    };
    let completed = state == "Completed";
    let success = completed && status == sys::nvmlReturn_enum_NVML_SUCCESS;
    Some(crate::report::GpuFabric {
        state: Some(state.to_string()),
        status: completed.then(|| nvml_error_string(lib, status)),
        clique_id: success.then(|| clique.to_string()),
        cluster_uuid: success.then(|| format_uuid(&uuid)),
        health: health.and_then(|(summary, mask)| fabric_health(summary, mask)),
    })
}

/// The v1 call (`nvmlDeviceGetGpuFabricInfo`, drivers 525-550) when the versioned one is missing
/// or refuses the v3 struct; `None` when it is missing or not supported.
fn nvml_fabric_v1(
    lib: &nvml_wrapper_sys::bindings::NvmlLib,
    handle: nvml_wrapper_sys::bindings::nvmlDevice_t,
) -> Option<RawFabric> {
    use nvml_wrapper_sys::bindings as sys;
    let get = lib.nvmlDeviceGetGpuFabricInfo.as_ref().ok()?;
    let mut info = sys::nvmlGpuFabricInfo_t {
        clusterUuid: [0; 16],
        status: 0,
        cliqueId: 0,
        state: 0,
    };
    // SAFETY: `get` is nvmlDeviceGetGpuFabricInfo from the loaded libnvidia-ml, called with a
    // live device handle and a valid, writable nvmlGpuFabricInfo_t (the unversioned layout).
    let rc = unsafe { get(handle, &raw mut info) };
    (rc == sys::nvmlReturn_enum_NVML_SUCCESS).then_some((
        info.state,
        info.status,
        info.cliqueId,
        info.clusterUuid,
        None,
    ))
}

/// NVML's own words for a return code ("Success"), as nvidia-smi prints the fabric status.
fn nvml_error_string(lib: &nvml_wrapper_sys::bindings::NvmlLib, rc: u32) -> String {
    let fallback = || format!("NVML error {rc}");
    let Ok(string) = lib.nvmlErrorString.as_ref() else {
        return fallback();
    };
    // SAFETY: nvmlErrorString takes any return code and returns a pointer to a static,
    // NUL-terminated string owned by the library (or null), which is copied at once.
    let ptr = unsafe { string(rc) };
    if ptr.is_null() {
        return fallback();
    }
    // SAFETY: non-null, NUL-terminated and static (above); read only within this call.
    unsafe { std::ffi::CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}

/// A cluster UUID as nvidia-smi prints it: 8-4-4-4-12 lowercase hex.
fn format_uuid(b: &[u8; 16]) -> String {
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// NVML's fabric health summary with the health mask's set flags, or `None` where the driver
/// does not report a summary.
fn fabric_health(summary: u8, mask: u32) -> Option<String> {
    use nvml_wrapper_sys::bindings as sys;
    let summary = match u32::from(summary) {
        sys::NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY => "Healthy",
        sys::NVML_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY => "Unhealthy",
        sys::NVML_GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY => "Limited Capacity",
        _ => return None,
    };
    let field = |shift: u32, width: u32| (mask >> shift) & width;
    let mut flags = Vec::new();
    for (shift, width, name) in [
        (
            sys::NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_DEGRADED_BW,
            sys::NVML_GPU_FABRIC_HEALTH_MASK_WIDTH_DEGRADED_BW,
            "degraded bandwidth",
        ),
        (
            sys::NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_RECOVERY,
            sys::NVML_GPU_FABRIC_HEALTH_MASK_WIDTH_ROUTE_RECOVERY,
            "route recovery in progress",
        ),
        (
            sys::NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_UNHEALTHY,
            sys::NVML_GPU_FABRIC_HEALTH_MASK_WIDTH_ROUTE_UNHEALTHY,
            "route unhealthy",
        ),
        (
            sys::NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ACCESS_TIMEOUT_RECOVERY,
            sys::NVML_GPU_FABRIC_HEALTH_MASK_WIDTH_ACCESS_TIMEOUT_RECOVERY,
            "access timeout recovery",
        ),
    ] {
        // Each of these fields is 1 for "true" (0 not supported, 2 false).
        if field(shift, width) == 1 {
            flags.push(name);
        }
    }
    match field(
        sys::NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_INCORRECT_CONFIGURATION,
        sys::NVML_GPU_FABRIC_HEALTH_MASK_WIDTH_INCORRECT_CONFIGURATION,
    ) {
        sys::NVML_GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_INCORRECT_SYSGUID => {
            flags.push("incorrect system GUID");
        }
        sys::NVML_GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_INCORRECT_CHASSIS_SN => {
            flags.push("incorrect chassis serial number");
        }
        sys::NVML_GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_NO_PARTITION => {
            flags.push("no partition");
        }
        sys::NVML_GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_INSUFFICIENT_NVLINKS => {
            flags.push("insufficient NVLinks");
        }
        _ => {}
    }
    Some(if flags.is_empty() {
        summary.to_string()
    } else {
        format!("{summary} ({})", flags.join(", "))
    })
}

/// The names nvidia-smi's XML uses for the same reasons, so both sources read alike.
fn throttle_names(reasons: ThrottleReasons) -> Vec<String> {
    const NAMES: [(ThrottleReasons, &str); 8] = [
        (ThrottleReasons::SW_POWER_CAP, "sw_power_cap"),
        (ThrottleReasons::HW_SLOWDOWN, "hw_slowdown"),
        (ThrottleReasons::HW_THERMAL_SLOWDOWN, "hw_thermal_slowdown"),
        (
            ThrottleReasons::HW_POWER_BRAKE_SLOWDOWN,
            "hw_power_brake_slowdown",
        ),
        (ThrottleReasons::SW_THERMAL_SLOWDOWN, "sw_thermal_slowdown"),
        (ThrottleReasons::SYNC_BOOST, "sync_boost"),
        (
            ThrottleReasons::APPLICATIONS_CLOCKS_SETTING,
            "applications_clocks_setting",
        ),
        (
            ThrottleReasons::DISPLAY_CLOCK_SETTING,
            "display_clock_setting",
        ),
    ];
    NAMES
        .iter()
        .filter(|(flag, _)| reasons.contains(*flag))
        .map(|(_, name)| (*name).to_string())
        .collect()
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
    use super::*;

    #[test]
    fn a_cluster_uuid_prints_as_nvidia_smi_prints_it() {
        let b: [u8; 16] = [
            0x9c, 0x6f, 0x5a, 0xf3, 0x53, 0xbf, 0x49, 0xb5, 0xa4, 0x36, 0xb6, 0x67, 0x66, 0xc4,
            0x13, 0xc3,
        ];
        // gpud#1106 shows this cluster UUID of a GB200 NVL72 in NVML's own words.
        assert_eq!(format_uuid(&b), "9c6f5af3-53bf-49b5-a436-b66766c413c3");
    }

    #[test]
    fn the_fabric_health_names_the_set_flags() {
        // Not reported (summary 0): nothing said.
        assert_eq!(fabric_health(0, 0), None);
        // Healthy, every flag "false" (2) or not supported (0).
        assert_eq!(fabric_health(1, 0b10_10_10).as_deref(), Some("Healthy"));
        // Degraded bandwidth (bits 0-1 = 1) and route unhealthy (bits 4-5 = 1), and the
        // configuration field (bits 8-11) saying insufficient NVLinks (5).
        let mask = 1 | (1 << 4) | (5 << 8);
        assert_eq!(
            fabric_health(2, mask).as_deref(),
            Some("Unhealthy (degraded bandwidth, route unhealthy, insufficient NVLinks)")
        );
        assert_eq!(fabric_health(3, 0).as_deref(), Some("Limited Capacity"));
    }
}

#[cfg(test)]
mod stream_deadline {
    use super::*;

    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
    }

    /// #40: the TUI's streaming child had no deadline: one stuck inside NVML stayed for as long
    /// as the app ran. A child that writes no reading (and left a process of its own in its
    /// group) has its whole group killed once its deadline is past.
    #[test]
    fn a_child_that_gives_no_reading_past_its_deadline_loses_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let mut command = std::process::Command::new("sh");
        command.arg("-c").arg(format!(
            "sleep 60 & echo $! > {}; exec sleep 60",
            pid_file.display()
        ));
        let mut stream = GpuStream::spawn(command, Duration::from_millis(100)).unwrap();
        let left = || -> i32 {
            for _ in 0..500 {
                if let Some(pid) = std::fs::read_to_string(&pid_file)
                    .ok()
                    .and_then(|t| t.trim().parse().ok())
                {
                    return pid;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            panic!("the child never started its own process");
        };
        let grandchild = left();
        assert!(stream.running());
        // No reading within the wait: the newest one is none, and the deadline is past.
        assert!(stream.next_after(0, Duration::from_millis(200)).is_none());
        let mut gone = false;
        for _ in 0..500 {
            if !stream.running() && !alive(grandchild) {
                gone = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Some(pid) = rustix::process::Pid::from_raw(grandchild)
            && alive(grandchild)
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
        assert!(gone, "the child or its own process outlived the deadline");
        // The reader says why the readings stopped.
        let ended = stream.next_after(0, Duration::from_secs(5));
        assert!(
            matches!(&ended, Some((_, Err(why))) if why == "the reading process ended"),
            "{ended:?}"
        );
    }
}

//! A GPU's readings from NVML (the child's and the stream's): what nvidia-smi's XML shows, in
//! the report's words.

use crate::report::GpuSource;
use crate::report::MigMode;
use nvml_wrapper::Nvml;
use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::enum_wrappers::device::{
    Clock, EccCounter, MemoryError, TemperatureSensor, TemperatureThreshold,
};
use nvml_wrapper::error::NvmlError;

use super::fabric::nvml_fabric;
use super::fanout;
use super::{GpuSnapshot, MAX_DEVICES};
use crate::report::{EccCounts, Gpu, ProbeOutcome, ProbeStatus};

pub(super) fn nvml_error_outcome(e: &NvmlError) -> ProbeOutcome {
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

/// How the per-GPU queries went: the threads that asked and each GPU's time, in index order.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct QueryTimes {
    pub threads: u32,
    pub per_gpu_ms: Vec<f64>,
}

/// The driver's facts and every GPU's readings, the GPUs asked side by side
/// ([`fanout::in_index_order`]) and kept in NVML's index order.
pub(super) fn fill_from_nvml(nvml: &Nvml, snapshot: &mut GpuSnapshot) -> QueryTimes {
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
            return QueryTimes::default();
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
    let (answers, threads) = fanout::in_index_order(
        count.min(MAX_DEVICES),
        fanout::MAX_WORKERS,
        |index| match nvml.device_by_index(index) {
            Ok(device) => gpu_from_device(index, &device),
            // One lost GPU must not hide the others; keep what we know about it.
            Err(e) => lost_gpu(index, &e.to_string()),
        },
        |index| lost_gpu(index, "reading it panicked"),
    );
    let mut times = QueryTimes {
        threads: u32::try_from(threads).unwrap_or(u32::MAX),
        per_gpu_ms: Vec::with_capacity(answers.len()),
    };
    for answer in answers {
        times.per_gpu_ms.push(answer.ms);
        snapshot.gpus.push(answer.value);
    }
    times
}

/// A GPU NVML counted but could not be read, with why.
fn lost_gpu(index: u32, why: &str) -> Gpu {
    Gpu {
        index,
        source: GpuSource::Nvml,
        filled_from: vec![format!("error: {why}")],
        ..Gpu::default()
    }
}

pub(super) fn gpu_from_device(index: u32, d: &nvml_wrapper::Device<'_>) -> Gpu {
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
                MigMode::Enabled
            } else {
                MigMode::Disabled
            }
        }),
        mig_devices: mig_devices(d),
        compute_mode: d.compute_mode().ok().and_then(compute_mode_name),
        fabric: nvml_fabric(d),
        source: GpuSource::Nvml,
        filled_from: Vec::new(),
        ..Gpu::default()
    }
}

/// With MIG enabled, the MIG devices that exist: NVML keeps a slot per possible device and
/// answers "not found" for an empty one.
fn mig_devices(d: &nvml_wrapper::Device<'_>) -> Option<u32> {
    if d.mig_mode().ok()?.current != 1 {
        return None;
    }
    let slots = d.mig_device_count().ok()?;
    let n = (0..slots)
        .filter(|i| d.mig_device_by_index(*i).is_ok())
        .count();
    u32::try_from(n).ok()
}

/// nvidia-smi's word for a compute mode, so both sources read alike.
fn compute_mode_name(
    mode: nvml_wrapper::enum_wrappers::device::ComputeMode,
) -> Option<crate::report::ComputeMode> {
    use crate::report::ComputeMode as Mode;
    use nvml_wrapper::enum_wrappers::device::ComputeMode;
    Some(match mode {
        ComputeMode::Default => Mode::Default,
        ComputeMode::ExclusiveThread => Mode::ExclusiveThread,
        ComputeMode::Prohibited => Mode::Prohibited,
        ComputeMode::ExclusiveProcess => Mode::ExclusiveProcess,
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

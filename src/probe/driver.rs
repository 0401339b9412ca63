//! The driver and its GPUs: NVML first (in a child process), `nvidia-smi` when NVML is absent,
//! fails or is not allowed (`--root`), and the kernel module's version as the last word.

use crate::report::GpuSource;
use crate::report::{ComputeMode, MigMode};
use std::path::{Path, PathBuf};

use crate::host::gpu;
use crate::host::{CmdOutput, Host};
use crate::parse::nvidia_smi::{self, SmiCsvRow, SmiLog};
use crate::report::{DriverInfo, EccCounts, Gpu, KernelInfo, ProbeOutcome, ProbeStatus};

/// The CSV query that adds what the XML lacks: the compute capability (driver 510+ knows
/// `compute_cap`; older drivers reject the whole query, which only costs us that column).
fn csv_query() -> String {
    format!("--query-gpu={}", nvidia_smi::QUERY_GPU_FIELDS)
}

/// Where nvidia-smi lives when it is not on PATH: WSL2 keeps it with the Windows driver's
/// libraries, NVIDIA's container images under /usr/local/nvidia.
const SMI_FALLBACKS: [&str; 3] = [
    "/usr/lib/wsl/lib/nvidia-smi",
    "/usr/bin/nvidia-smi",
    "/usr/local/nvidia/bin/nvidia-smi",
];

/// What the driver side gave.
#[derive(Debug, Clone, Default)]
pub(crate) struct DriverFacts {
    pub driver: DriverInfo,
    pub gpus: Vec<Gpu>,
    /// Under `--host-root`: the node's own nvidia-smi answered (the container had none).
    pub smi_from_node: bool,
    /// Where the NVML child's time went, for the probe's record (`-v`).
    pub phases: Option<String>,
}

#[must_use]
pub(crate) fn probe(host: &Host) -> DriverFacts {
    let snapshot = gpu::query(host);
    let mut facts = DriverFacts {
        phases: snapshot.phases.map(|p| p.describe()),
        ..DriverFacts::default()
    };
    facts.driver.nvml = snapshot.nvml.clone();
    facts.driver.libcuda_cuda_version = snapshot.libcuda_cuda_version.clone();
    let nvml_ok = snapshot.nvml.status == ProbeStatus::Ok;
    if nvml_ok {
        facts.driver.version = snapshot.driver_version.clone();
        facts.driver.cuda_version = snapshot.cuda_version.clone();
        facts.driver.source = Some("nvml".to_string());
        facts.gpus = snapshot.gpus;
        facts.driver.nvidia_smi =
            ProbeOutcome::new(ProbeStatus::Skipped, Some("NVML answered".to_string()));
        return facts;
    }
    apply_nvidia_smi(host, &mut facts);
    facts
}

/// Fills in from the kernel module when neither NVML nor nvidia-smi named a driver version.
pub(crate) fn fill_from_kernel(facts: &mut DriverFacts, kernel: &KernelInfo) {
    if facts.driver.version.is_none()
        && let Some(v) = &kernel.nvidia_version
    {
        facts.driver.version = Some(v.clone());
        facts.driver.source = Some("kernel-module".to_string());
    }
}

pub(crate) fn find_smi(host: &Host) -> Option<PathBuf> {
    host.which("nvidia-smi").or_else(|| {
        SMI_FALLBACKS
            .iter()
            .map(PathBuf::from)
            .find(|p| host.fs.is_executable(p))
    })
}

fn apply_nvidia_smi(host: &Host, facts: &mut DriverFacts) {
    // Under --host-root the container's own nvidia-smi (the NVIDIA container toolkit mounts
    // one in with the `utility` capability) is asked first, then the node's.
    if let Some(container) = host.container()
        && let Some(smi) = find_smi(&container)
    {
        return ask_nvidia_smi(&container, &smi, facts);
    }
    let Some(smi) = find_smi(host) else {
        facts.driver.nvidia_smi = ProbeOutcome::new(
            ProbeStatus::Absent,
            Some("nvidia-smi is not on PATH".to_string()),
        );
        return;
    };
    facts.smi_from_node = host.host_root().is_some();
    ask_nvidia_smi(host, &smi, facts);
}

/// Runs nvidia-smi (a path on `host`) and fills in what it says.
fn ask_nvidia_smi(host: &Host, smi: &Path, facts: &mut DriverFacts) {
    facts.driver.nvidia_smi_path = Some(smi.display().to_string());
    let query = csv_query();
    let (xml, csv) = std::thread::scope(|s| {
        let csv = s.spawn(|| run(host, smi, &[&query, "--format=csv,noheader,nounits"]));
        let xml = run(host, smi, &["-q", "-x"]);
        (xml, csv.join().ok().flatten())
    });
    let xml = match xml {
        None => {
            facts.driver.nvidia_smi = ProbeOutcome::new(
                ProbeStatus::Failed,
                Some(format!("{} could not be started", smi.display())),
            );
            return;
        }
        Some(out) => out,
    };
    if xml.timed_out {
        facts.driver.nvidia_smi = ProbeOutcome::new(
            ProbeStatus::TimedOut,
            Some(format!(
                "nvidia-smi did not answer within {:.1} s and was stopped",
                host.timeout.as_secs_f64()
            )),
        );
        return;
    }
    if !xml.success() {
        facts.driver.nvidia_smi = ProbeOutcome::new(ProbeStatus::Failed, Some(own_words(&xml)));
        return;
    }
    let log: SmiLog = match nvidia_smi::parse_xml(&xml.stdout) {
        Ok(log) => log,
        Err(e) => {
            facts.driver.nvidia_smi = ProbeOutcome::new(
                ProbeStatus::Failed,
                Some(format!(
                    "nvidia-smi -q -x printed something unreadable: {e}"
                )),
            );
            return;
        }
    };
    facts.driver.nvidia_smi = ProbeOutcome::new(ProbeStatus::Ok, None);
    facts.driver.version = log.driver_version.clone();
    facts.driver.cuda_version = log.cuda_version.clone();
    facts.driver.source = log
        .driver_version
        .as_ref()
        .map(|_| "nvidia-smi".to_string());
    let rows: Vec<SmiCsvRow> = csv
        .filter(CmdOutput::success)
        .map(|out| nvidia_smi::parse_query_csv(&out.stdout))
        .unwrap_or_default();
    // Rows by bus id and by index, first row first: one look-up per GPU, not a walk of every
    // row (50,000 GPUs made that quadratic).
    let mut by_bus: std::collections::HashMap<&str, &SmiCsvRow> = std::collections::HashMap::new();
    let mut by_index: std::collections::HashMap<u32, &SmiCsvRow> = std::collections::HashMap::new();
    for row in &rows {
        if let Some(bus) = row.pci_bus_id.as_deref() {
            by_bus.entry(bus).or_insert(row);
        }
        if let Some(index) = row.index {
            by_index.entry(index).or_insert(row);
        }
    }
    facts.gpus = log
        .gpus
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let index = u32::try_from(i).unwrap_or(u32::MAX);
            let row = g
                .pci_bus_id
                .as_deref()
                .and_then(|bus| by_bus.get(bus).copied())
                .or_else(|| by_index.get(&index).copied());
            gpu_from_smi(index, g, row)
        })
        .collect();
}

/// What a failing tool said, in its own words (the diagnosis matches on them), with its status.
fn own_words(out: &CmdOutput) -> String {
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .chain(out.stdout.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(4)
        .collect();
    let status = out
        .code
        .map_or_else(|| "killed".to_string(), |c| format!("exit status {c}"));
    if lines.is_empty() {
        format!("no output ({status})")
    } else {
        format!("{} ({status})", lines.join("; "))
    }
}

fn run(host: &Host, smi: &Path, args: &[&str]) -> Option<CmdOutput> {
    host.run(smi, args).ok()
}

fn gpu_from_smi(index: u32, g: &nvidia_smi::SmiGpu, row: Option<&SmiCsvRow>) -> Gpu {
    Gpu {
        index,
        name: g.name.clone(),
        uuid: g.uuid.clone(),
        pci_bus_id: g.pci_bus_id.clone(),
        pci_device_id: g.pci_device_id.clone(),
        pci_subsystem_id: g.pci_subsystem_id.clone(),
        compute_capability: row.and_then(|r| r.compute_capability.clone()),
        architecture: g.architecture.clone(),
        memory_total_mib: g.memory_total_mib,
        memory_used_mib: g.memory_used_mib,
        temperature_c: g.temperature_c,
        temperature_slowdown_c: g.temperature_slowdown_c,
        power_draw_w: g.power_draw_w,
        power_limit_w: g.power_limit_w,
        clock_sm_mhz: g.clocks_sm_mhz,
        clock_sm_max_mhz: g.max_clocks_sm_mhz,
        clock_mem_mhz: g.clocks_mem_mhz,
        clock_mem_max_mhz: g.max_clocks_mem_mhz,
        utilization_pct: g.utilization_gpu_pct,
        // An idle GPU lowering its clocks is not throttling; NVML's list leaves it out too.
        throttle_reasons: g
            .throttle_reasons_active
            .iter()
            .filter(|r| r.as_str() != "gpu_idle")
            .cloned()
            .collect(),
        ecc: EccCounts {
            enabled: g.ecc_mode,
            volatile_corrected: g.ecc_errors.volatile_corrected,
            volatile_uncorrected: g.ecc_errors.volatile_uncorrected,
            aggregate_corrected: g.ecc_errors.aggregate_corrected,
            aggregate_uncorrected: g.ecc_errors.aggregate_uncorrected,
            retired_pages: match (
                g.ecc_errors.retired_pages_sbe,
                g.ecc_errors.retired_pages_dbe,
            ) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
            },
            retired_pending: g.ecc_errors.retired_pending,
            remapped_uncorrectable: g.ecc_errors.remapped_uncorrectable,
            remapped_pending: g.ecc_errors.remapped_pending,
            remapped_failure: g.ecc_errors.remapped_failure,
        },
        pcie_gen_current: g.pcie_gen_current,
        pcie_gen_max: g.pcie_gen_max,
        pcie_width_current: g.pcie_width_current,
        pcie_width_max: g.pcie_width_max,
        persistence_mode: g.persistence_mode,
        mig_mode: g.mig_mode.as_deref().map(MigMode::from_text),
        mig_devices: g
            .mig_devices
            .filter(|_| g.mig_mode.as_deref() == Some(MigMode::Enabled.as_str())),
        compute_mode: g.compute_mode.as_deref().map(ComputeMode::from_text),
        fabric: g.fabric.as_ref().map(|f| crate::report::GpuFabric {
            state: f.state.clone(),
            status: f.status.clone(),
            clique_id: f.clique_id.clone(),
            cluster_uuid: f.cluster_uuid.clone(),
            health: None,
        }),
        source: GpuSource::NvidiaSmi,
        chip: None,
        identified_by: None,
        first_driver: None,
        identity_note: None,
        filled_from: if row.and_then(|r| r.compute_capability.as_ref()).is_some() {
            vec!["compute_capability: nvidia-smi --query-gpu".to_string()]
        } else {
            Vec::new()
        },
        ..Gpu::default()
    }
}

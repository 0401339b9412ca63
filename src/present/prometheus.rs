//! `doctor --format prometheus` and `smoke --format prometheus`: the report as metrics in the
//! Prometheus text exposition format (version 0.0.4), the format node_exporter's textfile
//! collector reads from `*.prom` files. Pure: reads only the [`Report`] (with its `smoke`
//! results) and writes a string; `-o FILE` is [`crate::outfile::replace`]'s job.
//!
//! # The format as written here
//! - Every family is a gauge with `# HELP` and `# TYPE` lines, its samples together, in a fixed
//!   order; a family with no sample is left out rather than written empty.
//! - No timestamps: the textfile collector refuses a file with client-side timestamps. When the
//!   report was made is a value of its own, `gpu_doctor_report_timestamp_seconds`.
//! - Every sample of a family carries the same label names. A value the report does not know
//!   is the empty label value, which Prometheus treats as the label being absent
//!   (`{cuda=""}` selects the series without one); a number the report does not know is no
//!   sample at all, never 0 (0 is a real reading).
//! - Label values are escaped as the format asks (`\\`, `\"`, `\n`); other control characters
//!   and bidirectional overrides from the machine become `?`, as in the text face. The report
//!   holds only UTF-8: bytes that were not were replaced when the probes read them.
//! - Base units: bytes, seconds, bytes per second (the report's MiB and GB/s are converted);
//!   `gpu_doctor_smoke_tflops` keeps the unit its name says (10^12 floating-point operations
//!   per second), as the benchmark figures it is compared with do.
//! - `gpu` is the GPU's index as in `gpus[].index` and `smoke.devices[].index`; per-GPU series
//!   also carry `name`, the model, so a dashboard can group by model without a join.
//!
//! Finding IDs that did not fire have no `gpu_doctor_findings` series. Every ID is listed in
//! [`crate::diagnose::ids::KINDS`], but zeros are not written from it: every ID times
//! its severities would be series on every node that say nothing, and absence is what
//! "did not fire" has always meant here. The face needs no list of IDs of its own, so a new
//! ID needs no edit in this file. The per-severity totals are always written
//! (`gpu_doctor_findings_by_severity`, all three severities), so alerts can compare with
//! `== 0`; `gpu_doctor_healthy` is 0 when there is any error finding.
//!
//! Smoke status is one series per state (`gpu_doctor_smoke_status{status=...}`, 1 for the
//! current one): `not_run` from `doctor`, `could_not_run` from `smoke` when the test could not
//! start (under `--root`, no driver, no device), `passed` or `failed` otherwise. Only a smoke run
//! that reached the GPUs writes the per-GPU smoke series.
//!
//! Layout: this file is the catalogue of gpu-doctor's metrics (which families a [`Report`] and
//! its smoke results become, in which units); `exposition` is the format's writer (families,
//! samples, escaping), which knows no metric. Depends on [`crate::report`],
//! [`crate::report::smoke`] and [`crate::date`] (report timestamps).

mod exposition;

use crate::report::smoke::{DeviceResult, SmokeRun, SmokeStatus};
use crate::report::{Gpu, Report, Severity, Subject};
use exposition::{Exposition, Family};
use std::collections::{HashMap, HashSet};

/// The `gpu_doctor_smoke_status` state of a report without a smoke run (from `doctor`), listed
/// after every [`SmokeStatus::KNOWN`] state.
const SMOKE_NOT_RUN: &str = "not_run";

/// Every severity, most severe first, as `gpu_doctor_findings_by_severity` lists them.
const SEVERITIES: [Severity; 3] = [Severity::Error, Severity::Warning, Severity::Info];

const MIB: f64 = 1_048_576.0;
/// The report's bandwidths are GB/s of 10^9 bytes (see [`crate::report::smoke::Bandwidth`]).
const GB: f64 = 1e9;

/// Renders `report` as metrics, ending with a newline.
#[must_use]
pub fn render(report: &Report) -> String {
    let mut out = Exposition::default();
    let names = Names::new(report);
    tool(&mut out, report);
    findings(&mut out, report, &names);
    driver(&mut out, report);
    rocm(&mut out, report);
    gpus(&mut out, report, &names);
    software(&mut out, report);
    smoke(&mut out, report, &names);
    probes(&mut out, report);
    out.text
}

fn flag(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

#[expect(
    clippy::cast_precision_loss,
    reason = "metric values are f64; counts and byte sizes stay exact below 2^53"
)]
fn num(n: u64) -> f64 {
    n as f64
}

fn tool(out: &mut Exposition, report: &Report) {
    let mut info = Family::new(
        "gpu_doctor_info",
        "gpu-doctor that wrote these metrics: its version and the report's JSON schema version.",
        ["version", "schema"],
    );
    info.set(
        [&report.tool.version, &report.schema_version.to_string()],
        1.0,
    );
    out.push(info);

    let mut stamp = Family::new(
        "gpu_doctor_report_timestamp_seconds",
        "When the report was made, in seconds since the Unix epoch (absent when unknown).",
        [],
    );
    stamp.set_some([], report.generated_at.as_deref().and_then(rfc3339_seconds));
    out.push(stamp);

    let mut manifests = Family::new(
        "gpu_doctor_manifests_info",
        "The compatibility tables the findings were made with: embedded or installed, set version, newest table date.",
        ["origin", "version", "updated"],
    );
    if !report.manifests.version.is_empty() {
        let m = &report.manifests;
        manifests.set([&m.origin, &m.version, &m.updated], 1.0);
    }
    out.push(manifests);
}

fn findings(out: &mut Exposition, report: &Report, names: &Names) {
    let mut healthy = Family::new(
        "gpu_doctor_healthy",
        "1 when the report has no error finding, else 0.",
        [],
    );
    healthy.set(
        [],
        flag(report.findings_of(Severity::Error).next().is_none()),
    );
    out.push(healthy);

    let mut totals = Family::new(
        "gpu_doctor_findings_by_severity",
        "Findings of each severity; every severity is present, 0 when none.",
        ["severity"],
    );
    for severity in SEVERITIES {
        let count = report.findings_of(severity).count();
        totals.set([severity.as_str()], num(count as u64));
    }
    out.push(totals);

    let mut by_id = Family::new(
        "gpu_doctor_findings",
        "Findings of each ID and severity; an ID that did not fire has no series.",
        ["severity", "id"],
    );
    for f in &report.findings {
        by_id.add([f.severity.as_str(), &f.id], 1.0);
    }
    out.push(by_id);

    let mut per_gpu = Family::new(
        "gpu_doctor_gpu_findings",
        "Findings that name this GPU among their subjects, by severity; 0 when none.",
        ["gpu", "name", "severity"],
    );
    // Each finding counted once per subject it names (a subject named twice counts once), so
    // the work is the findings' subjects plus the GPUs, not their product.
    let mut by_gpu: HashMap<u32, [usize; SEVERITIES.len()]> = HashMap::new();
    for f in &report.findings {
        let Some(at) = SEVERITIES.iter().position(|s| *s == f.severity) else {
            continue;
        };
        let mut named = HashSet::new();
        for gpu in f.subjects.iter().filter_map(Subject::gpu) {
            if named.insert(gpu) {
                by_gpu.entry(gpu).or_default()[at] += 1;
            }
        }
    }
    for gpu in &report.gpus {
        let index = gpu.index.to_string();
        let counts = by_gpu.get(&gpu.index).copied().unwrap_or_default();
        for (severity, count) in SEVERITIES.into_iter().zip(counts) {
            per_gpu.set(
                [&index, names.get(gpu.index), severity.as_str()],
                num(count as u64),
            );
        }
    }
    out.push(per_gpu);
}

fn driver(out: &mut Exposition, report: &Report) {
    // Always one series: empty labels say "no driver version known", which a fleet's
    // `count by (version)` shows as its own group rather than a node that vanished.
    let mut info = Family::new(
        "gpu_doctor_driver_info",
        "The NVIDIA driver: its version and the highest CUDA version it supports (empty when unknown).",
        ["version", "cuda"],
    );
    let d = &report.driver;
    info.set(
        [
            d.version.as_deref().unwrap_or(""),
            d.cuda_version.as_deref().unwrap_or(""),
        ],
        1.0,
    );
    out.push(info);
}

/// The AMD ROCm stack, when the machine has one: its version, where `/opt/rocm` points, and the
/// amdgpu module's kind ("dkms", "inbox", empty when not loaded) and version. No series on a
/// machine without ROCm, as `rocm` is null in the report.
fn rocm(out: &mut Exposition, report: &Report) {
    let Some(stack) = &report.rocm else {
        return;
    };
    let mut info = Family::new(
        "gpu_doctor_rocm_info",
        "The AMD ROCm stack: the ROCm version /opt/rocm points at, its folder, and the amdgpu kernel module's kind (dkms, inbox) and version (empty when unknown).",
        ["version", "path", "amdgpu", "amdgpu_version"],
    );
    info.set(
        [
            report.kernel.rocm_version.as_deref().unwrap_or(""),
            stack.default_install.as_deref().unwrap_or(""),
            stack.amdgpu.kind.as_deref().unwrap_or(""),
            stack.amdgpu.version.as_deref().unwrap_or(""),
        ],
        1.0,
    );
    out.push(info);
}

/// The model name of each GPU index: from the driver, else from the smoke test, else empty.
/// Built once per render, so a lookup costs the same whatever the GPU count.
struct Names<'a> {
    driver: HashMap<u32, Option<&'a str>>,
    smoke: HashMap<u32, Option<&'a str>>,
}

impl<'a> Names<'a> {
    fn new(report: &'a Report) -> Names<'a> {
        // The first entry of an index wins, as a search from the start would find it.
        let mut driver = HashMap::new();
        for g in &report.gpus {
            driver.entry(g.index).or_insert(g.name.as_deref());
        }
        let mut smoke = HashMap::new();
        for d in report.smoke.iter().flat_map(|s| &s.devices) {
            smoke.entry(d.index).or_insert(d.name.as_deref());
        }
        Names { driver, smoke }
    }

    fn get(&self, index: u32) -> &'a str {
        self.driver
            .get(&index)
            .copied()
            .flatten()
            .or_else(|| self.smoke.get(&index).copied().flatten())
            .unwrap_or("")
    }
}

/// The GPU families, in the order they are written: how many, what each is, its readings, its
/// ECC counters and PCIe link.
fn gpus(out: &mut Exposition, report: &Report, names: &Names) {
    gpu_counts(out, report);
    gpu_info(out, report, names);
    gpu_readings(out, report, names);
    gpu_errors_and_links(out, report, names);
}

/// GPUs the driver reports, against NVIDIA GPUs on the bus.
fn gpu_counts(out: &mut Exposition, report: &Report) {
    let mut count = Family::new(
        "gpu_doctor_gpus",
        "GPUs the driver reports (or the PCI bus shows when no driver answers).",
        [],
    );
    count.set([], num(report.gpus.len() as u64));
    out.push(count);

    let mut on_bus = Family::new(
        "gpu_doctor_pci_gpus",
        "NVIDIA GPUs on the PCI bus, NVSwitch bridges not counted; more than gpu_doctor_gpus means a GPU the driver does not show.",
        [],
    );
    let pci = report
        .pci_devices
        .iter()
        .filter(|d| d.vendor == "nvidia" && !d.nvswitch)
        .count();
    on_bus.set([], num(pci as u64));
    out.push(on_bus);
}

/// One series per GPU naming it; the value is always 1.
fn gpu_info(out: &mut Exposition, report: &Report, names: &Names) {
    let mut info = Family::new(
        "gpu_doctor_gpu_info",
        "One series per GPU: model, UUID, PCI bus ID, compute capability and architecture, vendor (nvidia, amd) and an AMD GPU's gfx target (empty when unknown).",
        [
            "gpu",
            "name",
            "uuid",
            "pci_bus_id",
            "compute_capability",
            "architecture",
            "vendor",
            "gfx_target",
        ],
    );
    for g in &report.gpus {
        info.set(
            [
                &g.index.to_string(),
                names.get(g.index),
                g.uuid.as_deref().unwrap_or(""),
                g.pci_bus_id.as_deref().unwrap_or(""),
                g.compute_capability.as_deref().unwrap_or(""),
                g.architecture.as_deref().unwrap_or(""),
                g.vendor.as_str(),
                g.gfx_target.as_deref().unwrap_or(""),
            ],
            1.0,
        );
    }
    out.push(info);
}

/// What the driver read from each GPU when the report was made: memory, temperature, power.
fn gpu_readings(out: &mut Exposition, report: &Report, names: &Names) {
    let per_gpu = |name, help, value: fn(&Gpu) -> Option<f64>| {
        let mut family = Family::new(name, help, ["gpu", "name"]);
        for g in &report.gpus {
            family.set_some([&g.index.to_string(), names.get(g.index)], value(g));
        }
        family
    };
    out.push(per_gpu(
        "gpu_doctor_gpu_memory_total_bytes",
        "GPU memory in bytes, as the driver reports it.",
        |g| g.memory_total_mib.map(|m| num(m) * MIB),
    ));
    out.push(per_gpu(
        "gpu_doctor_gpu_memory_used_bytes",
        "GPU memory in use when the report was made, in bytes.",
        |g| g.memory_used_mib.map(|m| num(m) * MIB),
    ));
    out.push(per_gpu(
        "gpu_doctor_gpu_temperature_celsius",
        "GPU temperature when the report was made.",
        |g| g.temperature_c.map(f64::from),
    ));
    out.push(per_gpu(
        "gpu_doctor_gpu_power_draw_watts",
        "GPU power draw when the report was made.",
        |g| g.power_draw_w,
    ));
    out.push(per_gpu(
        "gpu_doctor_gpu_power_limit_watts",
        "GPU power limit.",
        |g| g.power_limit_w,
    ));
    out.push(per_gpu(
        "gpu_doctor_gpu_persistence_mode",
        "1 when persistence mode is on, 0 when off.",
        |g| g.persistence_mode.map(flag),
    ));
}

/// ECC counters by scope and type, and the PCIe link now against its best.
fn gpu_errors_and_links(out: &mut Exposition, report: &Report, names: &Names) {
    let mut ecc = Family::new(
        "gpu_doctor_gpu_ecc_errors",
        "ECC errors the driver counted: volatile (since the driver loaded) or aggregate (lifetime), corrected or uncorrected.",
        ["gpu", "name", "scope", "type"],
    );
    let mut link = Family::new(
        "gpu_doctor_gpu_pcie_link_width",
        "PCIe link width in lanes: current and the most the GPU supports.",
        ["gpu", "name", "state"],
    );
    let mut generation = Family::new(
        "gpu_doctor_gpu_pcie_link_generation",
        "PCIe link generation: current and the most the GPU supports.",
        ["gpu", "name", "state"],
    );
    for g in &report.gpus {
        let index = g.index.to_string();
        let name = names.get(g.index);
        for (scope, kind, value) in [
            ("volatile", "corrected", g.ecc.volatile_corrected),
            ("volatile", "uncorrected", g.ecc.volatile_uncorrected),
            ("aggregate", "corrected", g.ecc.aggregate_corrected),
            ("aggregate", "uncorrected", g.ecc.aggregate_uncorrected),
        ] {
            ecc.set_some([&index, name, scope, kind], value.map(num));
        }
        for (state, width, gen_) in [
            ("current", g.pcie_width_current, g.pcie_gen_current),
            ("max", g.pcie_width_max, g.pcie_gen_max),
        ] {
            link.set_some([&index, name, state], width.map(f64::from));
            generation.set_some([&index, name, state], gen_.map(f64::from));
        }
    }
    out.push(ecc);
    out.push(link);
    out.push(generation);
}

fn software(out: &mut Exposition, report: &Report) {
    let mut toolkits = Family::new(
        "gpu_doctor_cuda_toolkit_info",
        "One series per CUDA toolkit installation: its folder and version (empty when unknown).",
        ["path", "version"],
    );
    for t in &report.toolkits {
        toolkits.set([&t.path, t.version.as_deref().unwrap_or("")], 1.0);
    }
    out.push(toolkits);

    let mut libraries = Family::new(
        "gpu_doctor_library_info",
        "One series per copy of a CUDA library outside the driver (cudnn, nccl, cublas, cudart, tensorrt): file, version, origin, and 'true' when the loader finds it by default.",
        ["library", "path", "version", "origin", "on_loader_path"],
    );
    let l = &report.libraries;
    for (library, copies) in [
        ("cudnn", &l.cudnn),
        ("nccl", &l.nccl),
        ("cublas", &l.cublas),
        ("cudart", &l.cudart),
        ("tensorrt", &l.tensorrt),
    ] {
        for c in copies {
            libraries.set(
                [
                    library,
                    &c.path,
                    c.version.as_deref().unwrap_or(""),
                    &c.origin,
                    if c.on_loader_path { "true" } else { "false" },
                ],
                1.0,
            );
        }
    }
    out.push(libraries);

    let mut frameworks = Family::new(
        "gpu_doctor_framework_info",
        "One series per framework build in a Python environment: the environment's prefix, framework, version, the CUDA version it was built for, and its variant (cuda, rocm, cpu; empty when unknown).",
        ["env", "framework", "version", "cuda", "variant"],
    );
    for env in &report.python_envs {
        for f in &env.frameworks {
            frameworks.set(
                [
                    &env.path,
                    &f.name,
                    f.version.as_deref().unwrap_or(""),
                    f.cuda.as_deref().unwrap_or(""),
                    f.variant.as_deref().unwrap_or(""),
                ],
                1.0,
            );
        }
    }
    out.push(frameworks);
}

fn smoke(out: &mut Exposition, report: &Report, names: &Names) {
    let current = report
        .smoke
        .as_ref()
        .map_or(SMOKE_NOT_RUN, |s| s.status.as_str());
    let mut status = Family::new(
        "gpu_doctor_smoke_status",
        "The smoke test's outcome, one series per state with 1 for the current one: passed, failed, could_not_run (smoke could not start), not_run (doctor does not run it).",
        ["status"],
    );
    let known = SmokeStatus::KNOWN.iter().map(SmokeStatus::as_str);
    for state in known.chain([SMOKE_NOT_RUN]) {
        status.set([state], flag(state == current));
    }
    // A state this version does not know of (a newer report) still shows as current.
    status.set([current], 1.0);
    out.push(status);

    let Some(run) = report.smoke.as_ref() else {
        return;
    };
    // A run that could not start measured no time; its 0 is no reading.
    if run.status != SmokeStatus::CouldNotRun {
        let mut wall = Family::new(
            "gpu_doctor_smoke_duration_seconds",
            "How long the smoke test took, all GPUs together.",
            [],
        );
        wall.set([], num(run.wall_ms) / 1000.0);
        out.push(wall);
    }
    smoke_devices(out, names, run);

    let mut peers = Family::new(
        "gpu_doctor_smoke_peer_access",
        "1 when GPU gpu can access the memory of GPU peer directly (CUDA peer access), else 0.",
        ["gpu", "peer"],
    );
    for p in &run.peer_access {
        peers.set([&p.from.to_string(), &p.to.to_string()], flag(p.can_access));
    }
    out.push(peers);
}

fn smoke_devices(out: &mut Exposition, names: &Names, run: &SmokeRun) {
    let labels = |d: &DeviceResult| (d.index.to_string(), names.get(d.index).to_string());
    let per_device = |name, help, value: fn(&DeviceResult) -> Option<f64>| {
        let mut family = Family::new(name, help, ["gpu", "name"]);
        for d in &run.devices {
            let (gpu, model) = labels(d);
            family.set_some([&gpu, &model], value(d));
        }
        family
    };
    out.push(per_device(
        "gpu_doctor_smoke_pass",
        "1 when every smoke check passed on this GPU, else 0.",
        |d| Some(flag(d.passed)),
    ));

    let mut checks = Family::new(
        "gpu_doctor_smoke_check_pass",
        "1 when this smoke check passed on this GPU, else 0: matmul (a GEMM checked against the CPU), memory (write/read patterns).",
        ["gpu", "name", "check"],
    );
    let mut memory_errors = Family::new(
        "gpu_doctor_smoke_memory_errors",
        "Words the memory check read back wrong.",
        ["gpu", "name"],
    );
    let mut bandwidth = Family::new(
        "gpu_doctor_smoke_bandwidth_bytes_per_second",
        "Copy bandwidth the smoke test measured, by direction (device_to_device counts bytes read plus written).",
        ["gpu", "name", "direction"],
    );
    let mut expected_bandwidth = Family::new(
        "gpu_doctor_smoke_expected_bandwidth_bytes_per_second",
        "The GPU's memory bandwidth from gpu-doctor's GPU table, to compare device_to_device with.",
        ["gpu", "name"],
    );
    let mut tflops = Family::new(
        "gpu_doctor_smoke_tflops",
        "Matrix-multiply throughput measured by smoke --bench in TFLOP/s: bf16 with cuBLASLt (tensor cores), fp32 with the shipped PTX kernel.",
        ["gpu", "name", "precision"],
    );
    let mut expected_tflops = Family::new(
        "gpu_doctor_smoke_expected_tflops",
        "The GPU's dense peak in TFLOP/s from gpu-doctor's GPU table, by precision.",
        ["gpu", "name", "precision"],
    );
    for d in &run.devices {
        let (gpu, model) = labels(d);
        if let Some(m) = &d.matmul {
            checks.set([&gpu, &model, "matmul"], flag(m.passed));
        }
        if let Some(m) = &d.memory {
            checks.set([&gpu, &model, "memory"], flag(m.passed));
            memory_errors.set([&gpu, &model], num(m.errors));
        }
        if let Some(b) = &d.bandwidth {
            for (direction, gbs) in [
                ("host_to_device", b.host_to_device_gbs),
                ("device_to_host", b.device_to_host_gbs),
                ("device_to_device", b.device_to_device_gbs),
            ] {
                bandwidth.set_some([&gpu, &model, direction], gbs.map(|v| v * GB));
            }
            expected_bandwidth.set_some([&gpu, &model], b.expected_gbs.map(|v| v * GB));
        }
        if let Some(t) = &d.throughput {
            tflops.set_some([&gpu, &model, "bf16"], t.cublaslt_bf16_tflops);
            tflops.set_some([&gpu, &model, "fp32"], t.ptx_fp32_tflops);
            expected_tflops.set_some([&gpu, &model, "bf16"], t.expected_bf16_tflops);
            expected_tflops.set_some([&gpu, &model, "fp32"], t.expected_fp32_tflops);
        }
    }
    out.push(checks);
    out.push(memory_errors);
    out.push(per_device(
        "gpu_doctor_smoke_context_create_seconds",
        "Time to create a CUDA context on this GPU, the first cost every CUDA program pays (slow without persistence mode).",
        |d| d.context_ms.map(|ms| ms / 1000.0),
    ));
    out.push(bandwidth);
    out.push(expected_bandwidth);
    out.push(tflops);
    out.push(expected_tflops);
}

fn probes(out: &mut Exposition, report: &Report) {
    let mut durations = Family::new(
        "gpu_doctor_probe_duration_seconds",
        "How long each probe of the machine took.",
        ["probe"],
    );
    for p in &report.probes {
        durations.add([&p.name], num(p.duration_ms) / 1000.0);
    }
    out.push(durations);
}

/// Seconds since the Unix epoch of an RFC 3339 time (`2026-12-01T10:59:07Z`, fractions and
/// `±HH:MM` offsets too); `None` when it is not one.
fn rfc3339_seconds(text: &str) -> Option<f64> {
    let time = crate::date::parse_timestamp(text)?;
    #[expect(
        clippy::cast_precision_loss,
        reason = "seconds since 1970 stay far below 2^53"
    )]
    Some(time.as_second() as f64 + f64::from(time.subsec_nanosecond()) / 1e9)
}

#[cfg(test)]
mod tests {
    use super::exposition::escape_label_value;
    use super::*;
    use crate::report::smoke::{Bandwidth, MatmulCheck, MemoryCheck, PeerAccess, Throughput};
    use crate::report::{Finding, Framework, Library, PythonEnv, Toolkit};

    fn finding(id: &str, severity: Severity, subjects: &[&str]) -> Finding {
        Finding {
            id: id.into(),
            severity,
            title: "t".into(),
            detail: String::new(),
            evidence: Vec::new(),
            fix: None,
            explains: Vec::new(),
            subjects: subjects.iter().map(|s| (*s).into()).collect(),
            fix_target: crate::report::FixTarget::Here,
        }
    }

    /// Lines of `text` that are samples of `family` (not its HELP/TYPE lines).
    fn samples<'a>(text: &'a str, family: &str) -> Vec<&'a str> {
        text.lines()
            .filter(|l| {
                l.strip_prefix(family)
                    .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
            })
            .collect()
    }

    const HOSTILE: &str = "a\"b\\c\nd\re\u{1b}[31m\u{202e}f\u{0}g";

    fn hostile_report() -> Report {
        let mut r = Report::default();
        r.tool.version = "0.1.0\"}\n# TYPE x counter".into();
        r.driver.version = Some(HOSTILE.into());
        r.gpus.push(Gpu {
            index: 0,
            name: Some("NVIDIA \"H200\"\nfake_metric 1".into()),
            uuid: Some("GPU-\\x".into()),
            memory_total_mib: Some(143_771),
            ..Gpu::default()
        });
        r.toolkits.push(Toolkit {
            path: "/opt/cuda \"12\"\\".into(),
            version: None,
            ..Toolkit::default()
        });
        r.libraries.cudnn.push(Library {
            path: "/lib/libcudnn.so.9\n".into(),
            version: Some("9.1".into()),
            origin: "system".into(),
            ..Library::default()
        });
        r.python_envs.push(PythonEnv {
            path: "/home/u/\"venv\"".into(),
            frameworks: vec![Framework {
                name: "torch".into(),
                version: Some("2.5\\1".into()),
                cuda: None,
                ..Framework::default()
            }],
            ..PythonEnv::default()
        });
        r.findings
            .push(finding("weird\"id\n", Severity::Error, &["gpu:0"]));
        r
    }

    #[test]
    fn label_values_are_escaped_and_control_characters_defused() {
        assert_eq!(
            escape_label_value(HOSTILE),
            "a\\\"b\\\\c\\nd?e?[31m<U+202E>f?g"
        );
        assert_eq!(
            escape_label_value("H200\u{200b}\u{feff}\u{e0041}"),
            "H200<U+200B><U+FEFF><U+E0041>"
        );
        // A 15 MB name is not repeated whole into every series that names the GPU.
        let long = escape_label_value(&"N".repeat(15 << 20));
        assert!(
            long.len() < 5000 && long.ends_with("more characters]"),
            "{}",
            long.len()
        );
        assert_eq!(escape_label_value("tab\there"), "tab here");
        let text = render(&hostile_report());
        for line in text.lines() {
            assert!(
                line.starts_with("# HELP gpu_doctor_")
                    || line.starts_with("# TYPE gpu_doctor_")
                    || line.starts_with("gpu_doctor_"),
                "a line that is not ours: {line:?}\n{text}"
            );
            assert!(!line.contains('\r') && !line.contains('\u{1b}'), "{line:?}");
        }
        assert!(
            text.contains(
                r#"gpu_doctor_driver_info{version="a\"b\\c\nd?e?[31m<U+202E>f?g",cuda=""} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"name="NVIDIA \"H200\"\nfake_metric 1""#),
            "{text}"
        );
        assert!(
            text.contains(r#"gpu_doctor_findings{severity="error",id="weird\"id\n"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"env="/home/u/\"venv\"",framework="torch",version="2.5\\1",cuda="""#),
            "{text}"
        );
    }

    #[test]
    fn every_family_has_help_and_type_once_and_its_samples_together() {
        let mut r = hostile_report();
        r.smoke = Some(smoke_run());
        let text = render(&r);
        let mut seen: Vec<String> = Vec::new();
        let mut current = String::new();
        let mut series: Vec<String> = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let name = rest.split(' ').next().unwrap_or_default().to_string();
                assert!(!seen.contains(&name), "{name} twice");
                seen.push(name.clone());
                current = name;
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                assert_eq!(rest, format!("{current} gauge"));
            } else {
                let name = line.split(['{', ' ']).next().unwrap_or_default();
                assert_eq!(name, current, "{line}");
                let (key, value) = line.rsplit_once(' ').unwrap_or_default();
                assert!(
                    value.parse::<f64>().is_ok(),
                    "{line}: one value, no timestamp"
                );
                assert!(!series.contains(&key.to_string()), "duplicate series {key}");
                series.push(key.to_string());
            }
        }
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn counts_follow_the_findings_and_every_severity_is_present() {
        let mut r = Report::default();
        r.gpus.push(Gpu {
            index: 1,
            name: Some("A100".into()),
            ..Gpu::default()
        });
        r.findings = vec![
            finding("ecc", Severity::Error, &["gpu:1"]),
            finding("ecc", Severity::Error, &["gpu:0"]),
            finding("slow", Severity::Warning, &[]),
        ];
        let text = render(&r);
        assert_eq!(
            samples(&text, "gpu_doctor_findings_by_severity"),
            [
                r#"gpu_doctor_findings_by_severity{severity="error"} 2"#,
                r#"gpu_doctor_findings_by_severity{severity="warning"} 1"#,
                r#"gpu_doctor_findings_by_severity{severity="info"} 0"#,
            ]
        );
        assert_eq!(
            samples(&text, "gpu_doctor_findings"),
            [
                r#"gpu_doctor_findings{severity="error",id="ecc"} 2"#,
                r#"gpu_doctor_findings{severity="warning",id="slow"} 1"#,
            ]
        );
        assert_eq!(
            samples(&text, "gpu_doctor_gpu_findings"),
            [
                r#"gpu_doctor_gpu_findings{gpu="1",name="A100",severity="error"} 1"#,
                r#"gpu_doctor_gpu_findings{gpu="1",name="A100",severity="warning"} 0"#,
                r#"gpu_doctor_gpu_findings{gpu="1",name="A100",severity="info"} 0"#,
            ]
        );
        assert_eq!(
            samples(&text, "gpu_doctor_healthy"),
            ["gpu_doctor_healthy 0"]
        );

        let empty = render(&Report::default());
        assert_eq!(
            samples(&empty, "gpu_doctor_healthy"),
            ["gpu_doctor_healthy 1"]
        );
        assert!(samples(&empty, "gpu_doctor_findings").is_empty());
        assert!(!empty.contains("# HELP gpu_doctor_findings "), "{empty}");
        assert_eq!(samples(&empty, "gpu_doctor_findings_by_severity").len(), 3);
    }

    fn smoke_run() -> SmokeRun {
        SmokeRun {
            status: "failed".into(),
            devices: vec![
                DeviceResult {
                    index: 0,
                    name: Some("smoke name".into()),
                    context_ms: Some(120.0),
                    matmul: Some(MatmulCheck {
                        passed: true,
                        ..MatmulCheck::default()
                    }),
                    memory: Some(MemoryCheck {
                        passed: false,
                        errors: 7,
                        ..MemoryCheck::default()
                    }),
                    bandwidth: Some(Bandwidth {
                        host_to_device_gbs: Some(54.5),
                        device_to_host_gbs: None,
                        device_to_device_gbs: Some(4197.5),
                        expected_gbs: Some(4800.0),
                        ..Bandwidth::default()
                    }),
                    throughput: Some(Throughput {
                        cublaslt_bf16_tflops: Some(790.25),
                        ptx_fp32_tflops: None,
                        expected_bf16_tflops: Some(989.0),
                        ..Throughput::default()
                    }),
                    passed: false,
                    ..DeviceResult::default()
                },
                DeviceResult {
                    index: 3,
                    name: Some("H100 \"SXM\"".into()),
                    passed: true,
                    ..DeviceResult::default()
                },
            ],
            peer_access: vec![PeerAccess {
                from: 0,
                to: 3,
                can_access: false,
            }],
            bench: true,
            wall_ms: 1312,
            ..SmokeRun::default()
        }
    }

    #[test]
    fn smoke_results_become_base_unit_series() {
        let mut r = hostile_report();
        r.smoke = Some(smoke_run());
        let text = render(&r);
        let gpu0 = r#"gpu="0",name="NVIDIA \"H200\"\nfake_metric 1""#;
        assert_eq!(
            samples(&text, "gpu_doctor_smoke_status"),
            [
                r#"gpu_doctor_smoke_status{status="passed"} 0"#,
                r#"gpu_doctor_smoke_status{status="failed"} 1"#,
                r#"gpu_doctor_smoke_status{status="could_not_run"} 0"#,
                r#"gpu_doctor_smoke_status{status="not_run"} 0"#,
            ]
        );
        assert_eq!(
            samples(&text, "gpu_doctor_smoke_pass"),
            [
                format!("gpu_doctor_smoke_pass{{{gpu0}}} 0"),
                r#"gpu_doctor_smoke_pass{gpu="3",name="H100 \"SXM\""} 1"#.to_string(),
            ]
        );
        assert_eq!(
            samples(&text, "gpu_doctor_smoke_tflops"),
            [format!(
                "gpu_doctor_smoke_tflops{{{gpu0},precision=\"bf16\"}} 790.25"
            )]
        );
        assert_eq!(
            samples(&text, "gpu_doctor_smoke_bandwidth_bytes_per_second"),
            [
                format!(
                    "gpu_doctor_smoke_bandwidth_bytes_per_second{{{gpu0},direction=\"host_to_device\"}} 54500000000"
                ),
                format!(
                    "gpu_doctor_smoke_bandwidth_bytes_per_second{{{gpu0},direction=\"device_to_device\"}} 4197500000000"
                ),
            ]
        );
        assert_eq!(
            samples(&text, "gpu_doctor_smoke_memory_errors"),
            [format!("gpu_doctor_smoke_memory_errors{{{gpu0}}} 7")]
        );
        assert_eq!(
            samples(&text, "gpu_doctor_smoke_context_create_seconds"),
            [format!(
                "gpu_doctor_smoke_context_create_seconds{{{gpu0}}} 0.12"
            )]
        );
        assert_eq!(
            samples(&text, "gpu_doctor_smoke_peer_access"),
            [r#"gpu_doctor_smoke_peer_access{gpu="0",peer="3"} 0"#]
        );
        assert_eq!(
            samples(&text, "gpu_doctor_smoke_duration_seconds"),
            ["gpu_doctor_smoke_duration_seconds 1.312"]
        );
        assert_eq!(
            samples(&text, "gpu_doctor_gpu_memory_total_bytes"),
            [format!(
                "gpu_doctor_gpu_memory_total_bytes{{{gpu0}}} {}",
                143_771_u64 * 1_048_576
            )]
        );
    }

    #[test]
    fn without_smoke_only_the_status_says_it_was_not_run() {
        let text = render(&Report::default());
        let smoke: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("gpu_doctor_smoke_"))
            .collect();
        assert_eq!(
            smoke,
            [
                r#"gpu_doctor_smoke_status{status="passed"} 0"#,
                r#"gpu_doctor_smoke_status{status="failed"} 0"#,
                r#"gpu_doctor_smoke_status{status="could_not_run"} 0"#,
                r#"gpu_doctor_smoke_status{status="not_run"} 1"#,
            ]
        );
        let mut r = Report {
            smoke: Some(SmokeRun {
                status: "could_not_run".into(),
                ..SmokeRun::default()
            }),
            ..Report::default()
        };
        let text = render(&r);
        assert!(text.contains("gpu_doctor_smoke_status{status=\"could_not_run\"} 1"));
        assert!(!text.contains("gpu_doctor_smoke_pass"), "{text}");
        assert!(
            !text.contains("gpu_doctor_smoke_duration_seconds"),
            "{text}"
        );
        // A state from a newer gpu-doctor is still current, once.
        r.smoke = Some(SmokeRun {
            status: "partial".into(),
            ..SmokeRun::default()
        });
        let text = render(&r);
        assert_eq!(samples(&text, "gpu_doctor_smoke_status").len(), 5);
        assert!(text.contains("gpu_doctor_smoke_status{status=\"partial\"} 1"));
    }

    #[test]
    fn unknown_values_are_empty_labels_or_no_sample() {
        let mut r = Report::default();
        r.gpus.push(Gpu::default());
        let text = render(&r);
        assert!(text.contains(r#"gpu_doctor_driver_info{version="",cuda=""} 1"#));
        assert!(text.contains(
            r#"gpu_doctor_gpu_info{gpu="0",name="",uuid="",pci_bus_id="",compute_capability="",architecture="",vendor="nvidia",gfx_target=""} 1"#
        ));
        assert!(
            !text.contains("gpu_doctor_gpu_memory_total_bytes"),
            "{text}"
        );
        assert!(
            !text.contains("gpu_doctor_report_timestamp_seconds"),
            "{text}"
        );
        assert!(!text.contains("gpu_doctor_manifests_info"), "{text}");
    }

    #[test]
    fn timestamps_parse_as_rfc_3339() {
        assert_eq!(rfc3339_seconds("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(
            rfc3339_seconds("2026-12-01T10:59:07Z"),
            Some(1_796_122_747.0)
        );
        assert_eq!(
            rfc3339_seconds("2026-12-01T12:59:07.5+02:00"),
            Some(1_796_122_747.5)
        );
        for bad in [
            "",
            "2026-12-01",
            "2026-12-01T10:59Z",
            "2026-12-01T25:00:00Z",
            "x",
        ] {
            assert_eq!(rfc3339_seconds(bad), None, "{bad}");
        }
        let r = Report {
            generated_at: Some("2026-12-01T10:59:07Z".into()),
            ..Report::default()
        };
        assert!(render(&r).contains("\ngpu_doctor_report_timestamp_seconds 1796122747\n"));
    }
}

#[cfg(test)]
mod growth {
    use super::*;
    use crate::report::Finding;

    /// CPU seconds this thread has used, as the kernel counts them (utime + stime of
    /// `/proc/thread-self/stat`): no wall-clock, so a busy machine does not change it much.
    fn thread_cpu_seconds() -> f64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let after = stat.rsplit_once(')').unwrap().1;
        let ticks: u64 = after
            .split_whitespace()
            .skip(11)
            .take(2)
            .map(|t| t.parse::<u64>().unwrap())
            .sum();
        #[expect(clippy::cast_precision_loss, reason = "a test's ticks are few")]
        let seconds = ticks as f64 / rustix::param::clock_ticks_per_second() as f64;
        seconds
    }

    /// `n` GPUs, each the subject of a finding of its own ID, the smoke test run on each.
    fn report_of(n: u32) -> Report {
        let mut r = Report::default();
        let mut run = SmokeRun::default();
        for i in 0..n {
            r.gpus.push(Gpu {
                index: i,
                name: Some("NVIDIA H200".into()),
                uuid: Some(format!("GPU-{i:08x}")),
                memory_total_mib: Some(143_771),
                ..Gpu::default()
            });
            run.devices.push(DeviceResult {
                index: i,
                passed: true,
                ..DeviceResult::default()
            });
            r.findings.push(Finding {
                id: format!("finding-{i}"),
                severity: Severity::Warning,
                title: "t".into(),
                detail: String::new(),
                evidence: Vec::new(),
                fix: None,
                explains: Vec::new(),
                subjects: vec![Subject::Gpu(i), Subject::Gpu(i)],
                fix_target: crate::report::FixTarget::Here,
            });
        }
        r.smoke = Some(run);
        r
    }

    fn render_cpu_seconds(n: u32) -> f64 {
        let report = report_of(n);
        let start = thread_cpu_seconds();
        let text = render(&report);
        let spent = thread_cpu_seconds() - start;
        assert!(text.contains(&format!(
            "gpu_doctor_gpu_findings{{gpu=\"{}\",name=\"NVIDIA H200\",severity=\"warning\"}} 1\n",
            n - 1
        )));
        spent
    }

    #[test]
    fn twice_the_gpus_cost_about_twice_the_cpu_time() {
        // Each series found by a search of its family and each GPU's name and findings by a
        // search of the report made this quadratic: 50,000 GPUs took two minutes.
        let small = render_cpu_seconds(6_000);
        let large = render_cpu_seconds(12_000);
        eprintln!("6,000 GPUs: {small:.3} s of CPU; 12,000 GPUs: {large:.3} s");
        assert!(
            large < 3.0 * small + 0.1,
            "6,000 GPUs: {small:.3} s of CPU; 12,000 GPUs: {large:.3} s"
        );
    }
}

//! `gpu-doctor smoke`: proves the GPU computes, the way deviceQuery + matrixMul +
//! bandwidthTest do, from one binary that needs no CUDA toolkit.
//!
//! The parent (this module) examines the machine, starts the child (`child.rs`, the same binary)
//! with a deadline, turns what it measured into findings (`findings.rs`), and prints it.
//! The kernels are PTX text from `kernels/smoke.cu`, JIT-compiled by the driver.

pub(crate) mod child;
pub(crate) mod cublaslt;
pub(crate) mod driver;
pub(crate) mod findings;
pub(crate) mod matmul;
pub(crate) mod peers;

use std::fmt::Write;
use std::path::Path;
use std::time::Duration;

use crate::host::Host;
use crate::manifest::Manifests;
use crate::report::Report;
use crate::report::smoke::{DeviceResult, SmokeRun, SmokeStatus};
use crate::sanitize::clean;

/// How the smoke test's error starts when no CUDA driver library could be loaded.
pub(crate) const NO_LIBRARY: &str = "no CUDA driver library";

/// The kernels, generated from `kernels/smoke.cu` by `scripts/gen-ptx.sh`.
pub(crate) const PTX: &str = include_str!("kernels/smoke.ptx");

/// The median of `values` (sorted in place); 0 for none.
#[must_use]
pub(crate) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// How long the child may run: context creation and the checks take about a second; the
/// benchmarks a few more per GPU.
fn deadline(host: &Host, bench: bool) -> Duration {
    host.timeout
        .max(Duration::from_secs(if bench { 180 } else { 60 }))
}

/// Runs the smoke test on the machine `report` describes (in a child process with a
/// deadline, or not at all under `--root`), and adds what it found to `report.findings`.
/// `manifests` is the run's set (what each card should reach); `devices` are GPU indexes,
/// `None` for all; `bench` also measures throughput.
pub(crate) fn test(
    host: &Host,
    report: &mut Report,
    manifests: &Manifests,
    devices: Option<Vec<u32>>,
    bench: bool,
) -> SmokeRun {
    test_with(host, report, manifests, devices, bench, None)
}

/// Whether the child can start before the machine is examined: it needs the report only for
/// the cuBLASLt libraries of `--bench`, and a framework run (`--frameworks`) should not share
/// the GPU with it.
#[must_use]
pub(crate) fn can_start_early(host: &Host, bench: bool, frameworks: bool) -> bool {
    host.live() && !bench && !frameworks
}

/// Runs the child without a report (see [`can_start_early`]): the smoke command starts it
/// beside the examination, so the run takes the longer of the two rather than their sum.
#[must_use]
pub(crate) fn run_early(host: &Host, devices: Option<Vec<u32>>) -> SmokeRun {
    run_child(host, Vec::new(), devices, false)
}

/// [`test()`], with the child's run already made by [`run_early`] when `early` is given.
pub(crate) fn test_with(
    host: &Host,
    report: &mut Report,
    manifests: &Manifests,
    devices: Option<Vec<u32>>,
    bench: bool,
    early: Option<SmokeRun>,
) -> SmokeRun {
    let mut run = if let Some(why) = amd_only(report) {
        SmokeRun {
            status: SmokeStatus::CouldNotRun,
            error: Some(why),
            bench,
            ..SmokeRun::default()
        }
    } else if let Some(early) = early {
        early
    } else if host.live() {
        run_child(host, cublaslt_candidates(report), devices, bench)
    } else {
        SmokeRun {
            status: SmokeStatus::CouldNotRun,
            error: Some(
                "the smoke test needs the real machine's driver; it does not run under --root"
                    .to_string(),
            ),
            bench,
            ..SmokeRun::default()
        }
    };
    if run.status == SmokeStatus::CouldNotRun
        && let Some(why) = no_gpu(report)
    {
        // The loader's "cannot open shared object file" adds nothing to "no GPU"; what a
        // driver library that did load answered (CUDA_ERROR_NO_DEVICE) is kept after it.
        run.error = Some(match run.error.take() {
            Some(e) if !e.starts_with(NO_LIBRARY) => format!("{why} (the CUDA driver: {e})"),
            _ => why,
        });
    }
    findings::fill_expected(&mut run, report, manifests);
    let mut found = findings::findings(&run, report);
    found.extend(peers::peer_findings(&run, report, manifests));
    for f in found {
        if !report
            .findings
            .iter()
            .any(|g| g.id == f.id && g.subjects == f.subjects)
        {
            report.findings.push(f);
        }
    }
    report
        .findings
        .sort_by(|a, b| (a.severity, &a.id).cmp(&(b.severity, &b.id)));
    run
}

/// Why the smoke test could not run, said plainly, on a machine where the doctor found no GPU
/// at all (its `no-gpu` finding): there is nothing to test, which the driver library's loader
/// error ("libcuda.so.1 could not be loaded") does not tell a person.
fn no_gpu(report: &Report) -> Option<String> {
    report
        .findings
        .iter()
        .any(|f| f.id == crate::diagnose::ids::NO_GPU.id)
        .then(|| {
            "no GPU on this machine: the doctor found no NVIDIA GPU on the PCI bus and no GPU \
             driver, so there is nothing to test (`gpu-doctor doctor` shows where it looked)"
                .to_string()
        })
}

/// Why the smoke test cannot run on a machine whose GPUs are AMD only: it drives the GPU
/// through NVIDIA's CUDA driver API, which an AMD GPU does not have. Said plainly, never a pass.
#[must_use]
pub(crate) fn amd_only(report: &Report) -> Option<String> {
    if report.nvidia_gpus().next().is_some() {
        return None;
    }
    let amd: Vec<String> = report
        .amd_gpus()
        .map(|g| format!("GPU {} {}", g.index, g.name.as_deref().unwrap_or("AMD GPU")))
        .collect();
    (!amd.is_empty()).then(|| {
        format!(
            "this machine's GPUs are AMD ({}); the smoke test runs its kernels through NVIDIA's \
             CUDA driver API and cannot test an AMD GPU. For ROCm, `rocminfo` and `rocm-smi` \
             show what the runtime sees, and `gpu-doctor smoke --frameworks` runs a matmul \
             through the ROCm build of PyTorch",
            amd.join(", ")
        )
    })
}

/// Whether a finished run passed: the checks passed and no GPU has an error finding.
#[must_use]
pub(crate) fn passed(run: &SmokeRun, report: &Report) -> bool {
    run.status == SmokeStatus::Passed
        && !report.findings.iter().any(|f| {
            f.subjects.iter().any(|s| s.gpu().is_some())
                && f.severity == crate::report::Severity::Error
        })
}

/// cuBLASLt candidates: next to every cuBLAS the probes found (toolkits, pip wheels), then
/// the plain sonames for the loader's own search.
fn cublaslt_candidates(report: &Report) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for lib in &report.libraries.cublas {
        if let Some(dir) = Path::new(&lib.path).parent() {
            for soname in [
                "libcublasLt.so.13",
                "libcublasLt.so.12",
                "libcublasLt.so.11",
            ] {
                let p = dir.join(soname);
                if p.exists() && !out.contains(&p.display().to_string()) {
                    out.push(p.display().to_string());
                }
            }
        }
    }
    out.extend(
        [
            "libcublasLt.so.13",
            "libcublasLt.so.12",
            "libcublasLt.so.11",
        ]
        .map(str::to_string),
    );
    out
}

fn run_child(
    host: &Host,
    cublaslt: Vec<String>,
    devices: Option<Vec<u32>>,
    bench: bool,
) -> SmokeRun {
    let could_not = |error: String| SmokeRun {
        status: SmokeStatus::CouldNotRun,
        error: Some(error),
        bench,
        ..SmokeRun::default()
    };
    let request = child::Request {
        devices,
        bench,
        cublaslt,
    };
    let Ok(request) = serde_json::to_string(&request) else {
        return could_not("cannot encode the request".to_string());
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return could_not(format!("cannot find own executable: {e}")),
    };
    // PCI bus order makes CUDA's ordinals NVML's indices; CUDA_VISIBLE_DEVICES would renumber
    // them, so the driver-level test sees every GPU and --device picks one.
    let mut env: Vec<(String, String)> = host
        .env
        .with_prefix("")
        .filter(|(k, _)| !crate::host::GPU_MASKING_VARS.contains(k) && *k != "CUDA_DEVICE_ORDER")
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    env.push(("CUDA_DEVICE_ORDER".to_string(), "PCI_BUS_ID".to_string()));
    let timeout = deadline(host, bench);
    match crate::host::cmd::run(&exe, &[child::CHILD_ARG, &request], &env, timeout) {
        Err(e) => could_not(format!("cannot start the smoke test process: {e}")),
        Ok(out) if out.timed_out => could_not(format!(
            "the GPU did not finish the smoke test within {} s (a hung GPU or driver; see `sudo dmesg | grep Xid`)",
            timeout.as_secs()
        )),
        Ok(out) => serde_json::from_str::<SmokeRun>(out.stdout.trim()).unwrap_or_else(|_| {
            could_not(format!(
                "the smoke test process crashed: {}",
                out.failure_summary()
            ))
        }),
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"))
}

/// The text face: one block per GPU, then the findings it produced.
#[must_use]
pub(crate) fn render_text(report: &Report, paint: crate::present::paint::Paint) -> String {
    let mut out = String::new();
    let Some(run) = &report.smoke else {
        return out;
    };
    let _ = writeln!(
        out,
        "gpu-doctor smoke: {} ({} ms)",
        run.status.as_str().replace('_', " "),
        run.wall_ms
    );
    if let Some(e) = &run.error {
        let _ = writeln!(out, "  {}", clean(e));
    }
    for d in &run.devices {
        write_device(&mut out, d, paint);
    }
    for p in &run.peer_access {
        let link = peers::link_between(report, p.from, p.to)
            .map(|l| format!(" ({l})"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "peer access GPU {} -> GPU {}: {}{link}",
            p.from,
            p.to,
            if p.can_access { "yes" } else { "no" }
        );
    }
    let gpu_findings: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.subjects.iter().any(|s| s.gpu().is_some()))
        .collect();
    if !gpu_findings.is_empty() {
        out.push_str("\nFindings\n");
        for f in gpu_findings {
            crate::present::finding::write(&mut out, f, paint);
        }
    }
    out
}

/// One GPU's block: what it is and whether it passed, then each measurement it got to.
fn write_device(out: &mut String, d: &DeviceResult, paint: crate::present::paint::Paint) {
    let _ = writeln!(
        out,
        "\nGPU {}  {}  cc {}  {} SMs  {} MiB  -> {}",
        d.index,
        clean(d.name.as_deref().unwrap_or("unknown")),
        d.compute_capability.as_deref().unwrap_or("?"),
        d.sm_count
            .map_or_else(|| "?".to_string(), |s| s.to_string()),
        d.memory_total_mib
            .map_or_else(|| "?".to_string(), |m| m.to_string()),
        if d.passed {
            paint.good("PASS")
        } else {
            paint.bad("FAIL")
        }
    );
    let _ = writeln!(
        out,
        "  context {} ms, PTX JIT {} ms",
        opt(d.context_ms, 0),
        opt(d.ptx_load_ms, 0)
    );
    if let Some(m) = &d.matmul {
        let _ = writeln!(
            out,
            "  fp32 matmul {}x{}x{} vs CPU: {} (max rel. error {:.1e}, tolerance {:.0e})",
            m.size[0],
            m.size[1],
            m.size[2],
            if m.passed { "ok" } else { "WRONG" },
            m.max_rel_error,
            m.tolerance
        );
    }
    if let Some(m) = &d.memory {
        let _ = writeln!(
            out,
            "  memory {} MiB x {} patterns: {} errors",
            m.bytes / (1024 * 1024),
            m.patterns,
            m.errors
        );
    }
    if let Some(b) = &d.bandwidth {
        let _ = writeln!(
            out,
            "  bandwidth GB/s: host->device {}, device->host {}, device copy {} (read+write; card {})",
            opt(b.host_to_device_gbs, 1),
            opt(b.device_to_host_gbs, 1),
            opt(b.device_to_device_gbs, 0),
            opt(b.expected_gbs, 0)
        );
    }
    if let Some(t) = &d.throughput {
        let _ = writeln!(
            out,
            "  PTX fp32 kernel {} TFLOP/s (card fp32 peak {}); cuBLASLt bf16 {} TFLOP/s (card dense {})",
            opt(t.ptx_fp32_tflops, 1),
            opt(t.expected_fp32_tflops, 1),
            opt(t.cublaslt_bf16_tflops, 0),
            opt(t.expected_bf16_tflops, 0)
        );
        if let Some(e) = &t.cublaslt_error {
            let _ = writeln!(out, "  cuBLASLt not measured: {}", clean(e));
        }
    }
    if let Some(e) = &d.error {
        let _ = writeln!(
            out,
            "  error: {} failed: {} ({}): {}",
            e.call,
            clean(&e.name),
            e.code,
            clean(&e.message)
        );
    }
}

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    /// The text face of the real H200's `smoke --bench --json`: every measurement line.
    #[test]
    fn the_text_face_of_the_real_h200_bench_names_every_measurement() {
        let report: crate::report::Report = serde_json::from_str(include_str!(
            "../../tests/fixtures/real/h200-smoke-bench.json"
        ))
        .unwrap();
        let text = super::render_text(&report, crate::present::paint::Paint::plain());
        for want in [
            "gpu-doctor smoke: passed (",
            "\nGPU 0  NVIDIA H200  cc 9.0  132 SMs  ",
            " -> PASS\n",
            "  context ",
            "  fp32 matmul ",
            " vs CPU: ok (max rel. error ",
            "  memory ",
            " patterns: 0 errors\n",
            "  bandwidth GB/s: host->device ",
            "  PTX fp32 kernel ",
            "; cuBLASLt bf16 ",
        ] {
            assert!(text.contains(want), "{want:?} not in:\n{text}");
        }
    }

    #[test]
    fn shipped_ptx_was_generated_from_the_shipped_source() {
        let source = include_bytes!("kernels/smoke.cu");
        let digest = Sha256::digest(source);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        let first = super::PTX.lines().next().unwrap_or_default();
        assert!(
            first.contains(&format!("sha256={hex}")),
            "smoke.ptx is stale: regenerate it with scripts/gen-ptx.sh\nheader: {first}\nsource: {hex}"
        );
        // Lowered so old drivers can JIT it, and the three kernels are there.
        assert!(
            super::PTX.contains("\n.version 6.0\n") && super::PTX.contains("\n.target sm_50\n")
        );
        for kernel in ["sgemm_128x128", "fill_pattern", "check_pattern"] {
            assert!(
                super::PTX.contains(&format!(".visible .entry {kernel}(")),
                "{kernel}"
            );
        }
    }

    #[test]
    fn median_of_unsorted_values() {
        assert_eq!(super::median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median(&mut []), 0.0);
    }
}

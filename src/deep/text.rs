//! The deep scan in the text face: what each framework said, under the report (`doctor --deep`)
//! or the smoke results (`smoke --frameworks`). Pure; every machine-made text is cleaned.

use std::fmt::Write;

use crate::report::runtime::{FrameworkRuntime, FrameworkSmoke};
use crate::report::{ProbeStatus, Report, Subject, framework_subject};
use crate::sanitize::clean;

/// Warnings and stderr lines shown per framework; the JSON has them all.
const SHOWN_LINES: usize = 5;

/// The "Frameworks at run time" section; empty when nothing was asked. `with_findings` adds the
/// findings about the frameworks asked, for faces that do not list every finding (`smoke`).
#[must_use]
pub(crate) fn render(report: &Report, with_findings: bool) -> String {
    let mut out = String::new();
    let asked = report
        .python_envs
        .iter()
        .filter(|e| e.frameworks.iter().any(|f| f.runtime.is_some()));
    for env in asked {
        if out.is_empty() {
            out.push_str("\nFrameworks at run time\n");
        }
        let _ = writeln!(
            out,
            "  {} ({})",
            clean(&env.path),
            clean(env.interpreter.as_deref().unwrap_or("no interpreter"))
        );
        for fw in &env.frameworks {
            if let Some(rt) = &fw.runtime {
                framework(&mut out, &fw.name, rt);
            }
        }
    }
    if with_findings {
        findings(&mut out, report);
    }
    out
}

/// Findings about a framework that was asked, with their evidence and fix.
fn findings(out: &mut String, report: &Report) {
    let asked: Vec<Subject> = report
        .python_envs
        .iter()
        .flat_map(|e| {
            e.frameworks
                .iter()
                .filter(|f| f.runtime.is_some())
                .map(|f| framework_subject(&e.path, &f.name))
        })
        .collect();
    let about: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.subjects.iter().any(|s| asked.contains(s)))
        .collect();
    if about.is_empty() {
        return;
    }
    out.push_str("\nFramework findings\n");
    for f in about {
        crate::present::finding::write(out, f, crate::present::paint::Paint::plain());
    }
}

fn framework(out: &mut String, name: &str, rt: &FrameworkRuntime) {
    let label = match &rt.version {
        Some(v) => format!("{name} {}", clean(v)),
        None => name.to_string(),
    };
    let took = format!("{:.1} s", rt.duration_ms as f64 / 1000.0);
    match rt.status {
        ProbeStatus::Ok => {
            let _ = writeln!(out, "    {label}: {} ({took})", summary(rt));
        }
        _ => {
            let _ = writeln!(
                out,
                "    {label}: {} ({took})",
                clean(rt.detail.as_deref().unwrap_or("no answer"))
            );
        }
    }
    for w in rt.warnings.iter().take(SHOWN_LINES) {
        let _ = writeln!(out, "      warning: {}", clean(w));
    }
    let troubled = rt.status != ProbeStatus::Ok || rt.gpu_available == Some(false);
    if troubled {
        let skip = rt.stderr.len().saturating_sub(SHOWN_LINES);
        for line in rt.stderr.iter().skip(skip) {
            let _ = writeln!(out, "      stderr: {}", clean(line));
        }
    }
    if let Some(smoke) = &rt.smoke {
        smoke_lines(out, smoke);
    }
}

/// "sees 1 GPU: NVIDIA H200 (cc 9.0); CUDA 13.0, cuDNN 9.19.0, NCCL 2.28.9".
fn summary(rt: &FrameworkRuntime) -> String {
    let mut parts = Vec::new();
    let gpus = match (rt.gpu_available, rt.devices.is_empty()) {
        (Some(true), false) => {
            let names: Vec<String> = rt
                .devices
                .iter()
                .map(|d| {
                    let name = clean(d.name.as_deref().unwrap_or("unnamed GPU"));
                    match &d.compute_capability {
                        Some(cc) => format!("{name} (cc {})", clean(cc)),
                        None => name,
                    }
                })
                .collect();
            format!(
                "sees {} GPU{}: {}",
                rt.devices.len(),
                if rt.devices.len() == 1 { "" } else { "s" },
                names.join(", ")
            )
        }
        (Some(true), true) => "sees a GPU".to_string(),
        (Some(false), _) => match &rt.gpu_error {
            Some(e) => format!("sees NO GPU ({})", clean(e)),
            None => "sees NO GPU".to_string(),
        },
        (None, _) => "GPU visibility unknown".to_string(),
    };
    parts.push(gpus);
    let mut build = Vec::new();
    for (what, value) in [
        ("CUDA", &rt.cuda),
        ("ROCm", &rt.hip),
        ("cuDNN", &rt.cudnn),
        ("NCCL", &rt.nccl),
        ("backend", &rt.backend),
    ] {
        if let Some(v) = value {
            build.push(format!("{what} {}", clean(v)));
        }
    }
    if let Some(v) = rt.cuda_runtime_version {
        build.push(format!("CUDA runtime {v}"));
    }
    if let Some(v) = rt.cuda_driver_version {
        build.push(format!("driver API {v}"));
    }
    build.extend(rt.plugins.iter().map(|p| clean(p)));
    if !build.is_empty() {
        parts.push(build.join(", "));
    }
    parts.join("; ")
}

fn smoke_lines(out: &mut String, smoke: &FrameworkSmoke) {
    if let Some(e) = &smoke.error {
        let _ = writeln!(out, "      smoke: not run: {}", clean(e));
    }
    for m in &smoke.matmuls {
        let verdict = match (&m.error, m.passed) {
            (Some(e), _) => format!("FAILED: {}", clean(e)),
            (None, true) => "ok".to_string(),
            (None, false) => "WRONG".to_string(),
        };
        let error = m
            .max_rel_error
            .map(|e| format!(" (max rel. error {e:.1e}, tolerance {:.0e})", m.tolerance))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "      smoke: fp32 matmul {}x{}x{} on GPU {} vs CPU: {verdict}{error}",
            m.size[0], m.size[1], m.size[2], m.device
        );
    }
    if let Some(a) = &smoke.allreduce {
        let verdict = match (&a.error, a.passed) {
            (Some(e), _) => format!("FAILED: {}", clean(e)),
            (None, true) => {
                a.ms.map_or_else(|| "ok".to_string(), |ms| format!("ok ({ms:.2} ms)"))
            }
            (None, false) => "WRONG".to_string(),
        };
        let via = if a.transports.is_empty() {
            String::new()
        } else {
            let named: Vec<String> = a
                .transports
                .iter()
                .map(|t| format!("{} ×{}", clean(&t.via), t.connections))
                .collect();
            format!("; NCCL chose {}", named.join(", "))
        };
        let _ = writeln!(
            out,
            "      smoke: NCCL all-reduce of {} floats across {} processes: {verdict}{via}",
            a.elements, a.world_size
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::runtime::{FrameworkMatmul, RuntimeDevice};
    use crate::report::{Framework, PythonEnv};

    #[test]
    fn a_working_torch_and_a_blind_tensorflow() {
        let torch = FrameworkRuntime {
            status: ProbeStatus::Ok,
            version: Some("2.11.0+cu130".into()),
            cuda: Some("13.0".into()),
            cudnn: Some("9.19.0".into()),
            gpu_available: Some(true),
            devices: vec![RuntimeDevice {
                index: 0,
                name: Some("NVIDIA H200".into()),
                compute_capability: Some("9.0".into()),
                ..RuntimeDevice::default()
            }],
            duration_ms: 5200,
            smoke: Some(FrameworkSmoke {
                matmuls: vec![FrameworkMatmul {
                    device: 0,
                    passed: true,
                    size: [256, 192, 320],
                    max_rel_error: Some(2.1e-7),
                    tolerance: 1e-3,
                    error: None,
                }],
                ..FrameworkSmoke::default()
            }),
            ..FrameworkRuntime::default()
        };
        let tf = FrameworkRuntime {
            status: ProbeStatus::Ok,
            version: Some("2.20.0".into()),
            gpu_available: Some(false),
            stderr: vec!["W0000 Cannot dlopen some GPU libraries.\u{1b}[0m".into()],
            duration_ms: 9000,
            ..FrameworkRuntime::default()
        };
        let fw = |name: &str, rt| Framework {
            name: name.into(),
            runtime: Some(rt),
            ..Framework::default()
        };
        let report = Report {
            python_envs: vec![PythonEnv {
                path: "/opt/venv".into(),
                interpreter: Some("/opt/venv/bin/python3".into()),
                frameworks: vec![fw("tensorflow", tf), fw("torch", torch)],
                ..PythonEnv::default()
            }],
            ..Report::default()
        };
        let text = render(&report, true);
        assert_eq!(
            text,
            "\nFrameworks at run time\n  /opt/venv (/opt/venv/bin/python3)\n    \
             tensorflow 2.20.0: sees NO GPU (9.0 s)\n      \
             stderr: W0000 Cannot dlopen some GPU libraries.?[0m\n    \
             torch 2.11.0+cu130: sees 1 GPU: NVIDIA H200 (cc 9.0); CUDA 13.0, cuDNN 9.19.0 (5.2 s)\n      \
             smoke: fp32 matmul 256x192x320 on GPU 0 vs CPU: ok (max rel. error 2.1e-7, tolerance 1e-3)\n"
        );
        assert_eq!(render(&Report::default(), true), "");
    }
}

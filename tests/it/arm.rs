//! Arm servers: Grace Hopper (GH200), a Grace Blackwell compute tray (GB200) and DGX Spark (GB10),
//! each `uname -m` aarch64 on Ubuntu, with PyPI's CPU-only aarch64 torch in a venv, and the DGX
//! Spark again with PyPI's cu130 aarch64 torch 2.11.0, healthy. Their
//! reports name the architecture and find the sbsa toolkits; every target of the plan grid is
//! planned on them (the whole grid, not the sweep's share): apt lines come from NVIDIA's sbsa
//! repositories and Ubuntu's ports archive only, pip lines are checked for aarch64 wheels, and
//! no line is contradicted. `cargo test --test it arm64 -- --nocapture` prints the figures.

use gpu_doctor::manifest::embedded;
use gpu_doctor::plan::{self, lines};
use gpu_doctor::report::Report;
use serde_json::Value;

use crate::plan_sweep::{full_grid, target};
use crate::support::*;

/// The machines with PyPI's CPU-only aarch64 torch.
const CPU_TORCH: [&str; 3] = [
    "gh200-pypi-torch-cpu-aarch64",
    "gb200-pypi-torch-291-cpu",
    "dgx-spark-gb10-pypi-torch-2100-cpu",
];
const HEALTHY: &str = "dgx-spark-gb10-torch-2110-cu130";
const ARM: [&str; 4] = [CPU_TORCH[0], CPU_TORCH[1], CPU_TORCH[2], HEALTHY];

fn torch(r: &Value) -> &Value {
    let env = python_env(r, "/home/ubuntu/venv");
    find(&env["frameworks"], "name", "torch")
}

#[test]
fn arm64_reports_name_the_architecture_and_the_cpu_only_torch() {
    for name in CPU_TORCH {
        let r = doctor(name);
        assert_eq!(r["host"]["arch"], "aarch64", "{name}");
        assert_findings(&r, &["cpu-only-framework-build"]);
        let t = torch(&r);
        assert_eq!(t["variant"], "cpu", "{name}");
        // PyPI's aarch64 torch keeps its x86_64-only CUDA pins in METADATA: none applies here.
        assert_eq!(t["cudnn"], Value::Null, "{name}: {t}");
    }
    let gh = doctor("gh200-pypi-torch-cpu-aarch64");
    let toolkit = &array(&gh, "toolkits")[0];
    assert_eq!(toolkit["path"], "/usr/local/cuda-12.4", "{toolkit}");
    assert_eq!(toolkit["version"], "12.4.1", "{toolkit}");
    // DGX Spark's GPU shares the CPU's memory: nvidia-smi has no figure for it, and absent is
    // not zero.
    let spark = doctor("dgx-spark-gb10-pypi-torch-2100-cpu");
    let gpu = &array(&spark, "gpus")[0];
    assert_eq!(gpu["compute_capability"], "12.1");
    assert_eq!(gpu["memory_total_mib"], Value::Null, "{gpu}");
    assert_eq!(array(&doctor("gb200-pypi-torch-291-cpu"), "gpus").len(), 4);
    // PyPI's torch 2.11.0 for aarch64 is a CUDA 13.0 build; its sm_120 code covers the GB10's
    // 12.1 (same major), so nothing is wrong.
    let healthy = doctor(HEALTHY);
    assert_eq!(healthy["host"]["arch"], "aarch64");
    assert_findings(&healthy, &[]);
    let t = torch(&healthy);
    assert_eq!(
        (t["variant"].as_str(), t["cuda"].as_str()),
        (Some("cuda"), Some("13.0"))
    );
}

#[test]
fn arm64_plans_come_from_sbsa_and_ports_with_aarch64_wheels() {
    let m = embedded();
    let grid = full_grid();
    let (mut written, mut refused, mut steps, mut checked) = (0usize, 0usize, 0usize, 0usize);
    let mut contradicted: Vec<String> = Vec::new();
    let mut torch_lines = std::collections::BTreeSet::new();
    let mut reasons: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    let mut frameworks: std::collections::BTreeMap<String, usize> =
        std::collections::BTreeMap::new();
    for name in ARM {
        let report: Report = serde_json::from_value(doctor(name)).expect("a report");
        for [via, os, framework, cuda, driver] in &grid {
            let t = target(*via, *os, *framework, *cuda, *driver);
            let p = match plan::plan(&report, m, &t) {
                Ok(p) => p,
                Err(refusal) => {
                    refused += 1;
                    assert!(
                        !refusal.reason.starts_with("the plan would install"),
                        "{name} {t:?}: the last-word check refused: {}",
                        refusal.reason
                    );
                    let key: String = refusal.reason.chars().take(70).collect();
                    *reasons.entry(key).or_default() += 1;
                    continue;
                }
            };
            written += 1;
            for line in &p.summary {
                *frameworks.entry(line.clone()).or_default() += 1;
            }
            steps += p.steps.len();
            for repo in &p.apt_repos {
                assert!(
                    repo.ends_with("-sbsa") || repo.ends_with("-arm64"),
                    "{name} {t:?}: {repo}"
                );
            }
            let script = plan::shell::render(&p, &Default::default());
            assert!(!script.contains("/x86_64/"), "{name} {t:?}");
            if !p.apt_repos.is_empty() && script.contains("cuda-keyring") {
                assert!(script.contains("/sbsa/"), "{name} {t:?}");
            }
            for line in lines::check(&p, m) {
                checked += 1;
                if line.manager == lines::Manager::Pip && line.text.starts_with("torch==") {
                    torch_lines.insert(line.text.clone());
                }
                if let Err(why) = line.verdict {
                    contradicted.push(format!("{name} {t:?}: {} ({why})", line.text));
                }
            }
        }
    }
    eprintln!(
        "arm64 plans: {} fixtures × {} targets: {written} written ({steps} steps), {refused} refused; \
         {checked} package lines checked, {} contradicted; torch lines: {torch_lines:?}",
        ARM.len(),
        grid.len(),
        contradicted.len()
    );
    for (reason, n) in &reasons {
        eprintln!("  refused {n:>4}: {reason}...");
    }
    if std::env::var("GPU_DOCTOR_ARM_SUMMARY").is_ok() {
        for (line, n) in &frameworks {
            eprintln!("  planned {n:>4}: {line}");
        }
    }
    assert!(contradicted.is_empty(), "{}", contradicted.join("\n"));
    assert!(
        written > 0 && checked > written,
        "{written} plans, {checked} lines"
    );
    // Every torch line on aarch64 is a release whose PyPI aarch64 wheel is that CUDA build.
    for line in &torch_lines {
        let (_, version) = line.split_once("==").expect("pinned");
        let (public, local) = version.split_once('+').unwrap_or((version, ""));
        let public = public.split_whitespace().next().unwrap_or(public);
        let local = local.split_whitespace().next().unwrap_or(local);
        let build = m.pypi.aarch64_build("torch", public.trim_end_matches(".*"));
        assert!(
            build.is_some_and(|b| b.starts_with("cu") && (local.is_empty() || b == local)),
            "{line}: PyPI's aarch64 build is {build:?}"
        );
    }
}

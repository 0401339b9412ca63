//! `gpu-doctor check` on fixture machines: every requirement kind, every output format, and
//! the exit codes CI jobs gate on (0 pass, 1 unmet, 2 usage error).

use std::process::{Command, Output, Stdio};

use crate::support::{fixture_dir, fixture_env};

fn check(fixture: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
        .env_clear()
        .envs(fixture_env(fixture))
        .arg("--root")
        .arg(fixture_dir(fixture).join("root"))
        .args(["--timeout", "2", "check"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("gpu-doctor runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Every requirement kind on the H200 machine: all met, exit 0.
#[test]
fn every_requirement_kind_passes_on_the_h200() {
    let reqs = [
        "driver>=535",
        "cuda>=12.1",
        "toolkit>=12.4",
        "cudnn>=9",
        "gpu.count>=1",
        "gpu.memory>=100GiB",
        "gpu.memory>=141GB",
        "gpu.cc>=9.0",
        "torch>=2.4",
        "torch.cuda",
        "jax.gpu",
        "cupy.gpu",
        "jax>=0.4",
    ];
    let args: Vec<&str> = reqs.iter().flat_map(|r| ["--require", *r]).collect();
    let o = check("h200", &args);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    for r in reqs {
        assert!(
            out.contains(&format!("PASS {r}:")),
            "{r} not passed:\n{out}"
        );
    }
    assert!(
        out.contains("driver is 580.159.04; required >=535"),
        "{out}"
    );
    assert!(
        out.ends_with(&format!("check: {} passed, 0 failed\n", reqs.len())),
        "{out}"
    );
}

#[test]
fn unmet_requirements_fail_with_exit_1_and_say_why() {
    let o = check(
        "h200",
        &[
            "-r",
            "driver>=590",
            "-r",
            "gpu.count>=2",
            "-r",
            "tensorflow.gpu",
            "-r",
            "gpu.memory>=200GiB",
            "-r",
            "cuda<13",
        ],
    );
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("FAIL driver>=590: driver is 580.159.04; required >=590"),
        "{out}"
    );
    assert!(
        out.contains("FAIL gpu.count>=2: the driver reports 1 GPU(s)"),
        "{out}"
    );
    assert!(
        out.contains("FAIL tensorflow.gpu: tensorflow is not installed"),
        "{out}"
    );
    assert!(
        out.contains("FAIL gpu.memory>=200GiB: the smallest GPU has 143771 MiB"),
        "{out}"
    );
    assert!(out.contains("FAIL cuda<13:"), "{out}");
}

#[test]
fn a_cpu_torch_build_is_not_torch_cuda() {
    let o = check(
        "torch-cpu-build",
        &["-r", "torch.cuda", "--fail-on", "never"],
    );
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("is a cpu build"), "{out}");
    // The same machine passes a plain version requirement.
    let o = check(
        "torch-cpu-build",
        &["-r", "torch>=2.5", "--fail-on", "never"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn findings_fail_the_check_at_the_chosen_level() {
    // no-driver is an error: fails by default, passes with --fail-on never.
    let o = check("gpu-no-driver", &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("FAIL error no-driver:"),
        "{}",
        stdout(&o)
    );
    let o = check("gpu-no-driver", &["--fail-on", "never"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // A warning (cpu-only-framework-build) passes at the default level, fails at warning.
    assert_eq!(check("torch-cpu-build", &[]).status.code(), Some(0));
    assert_eq!(
        check("torch-cpu-build", &["--fail-on", "warning"])
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn malformed_expressions_are_usage_errors_that_name_the_bad_part() {
    for (expr, message) in [
        ("drvier>=535", "unknown subject 'drvier'"),
        ("driver>=5x5", "'5x5' is not a version number"),
        ("gpu.memory>=40XB", "unknown unit 'xb'"),
        ("driver=>535", "'=>' is not an operator"),
    ] {
        let o = check("no-gpu", &["-r", expr]);
        assert_eq!(o.status.code(), Some(2), "{expr}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(message), "{expr}: {err}");
        assert!(
            o.stdout.is_empty(),
            "{expr}: nothing on stdout for a usage error"
        );
    }
    let o = check("no-gpu", &["--env", "/nowhere"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn env_limits_framework_checks_to_one_environment() {
    let o = check("h200", &["-r", "torch.cuda", "--env", "/usr"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let o = check("h200", &["-r", "torch.cuda", "--env", "/opt/torch/.venv"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn github_format_prints_workflow_annotations() {
    let o = check("gpu-no-driver", &["-r", "cuda>=12.1", "--format", "github"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        out.contains(
            "::error title=gpu-doctor requirement cuda>=12.1::the driver's CUDA version not found"
        ),
        "{out}"
    );
    let line = out
        .lines()
        .find(|l| l.starts_with("::error title=gpu-doctor no-driver::"))
        .expect(&out);
    // Newlines inside a message are escaped, so one annotation stays one line.
    assert!(line.contains("%0AFix: "), "{line}");
}

#[test]
fn json_format_is_the_verdict() {
    let o = check(
        "h200",
        &[
            "-r",
            "gpu.cc>=9.0",
            "-r",
            "gpu.cc>=10.0",
            "--format",
            "json",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["pass"], false);
    assert_eq!(v["requirements"][0]["met"], true);
    assert_eq!(v["requirements"][1]["met"], false);
    assert_eq!(v["requirements"][1]["actual"], "9.0");
}

#[test]
fn junit_report_parses_and_counts_each_requirement_and_finding() {
    let dir = crate::support::tempdir();
    let file = dir.path().join("gpu.xml");
    let o = check(
        "gpu-no-driver",
        &[
            "-r",
            "gpu.count>=1",
            "-r",
            "driver>=535",
            "--format",
            "junit",
            "-o",
            file.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let xml = std::fs::read_to_string(&file).expect("junit file written");
    assert_eq!(xml, stdout(&o), "the file and stdout carry the same report");
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .expect("testsuite");
    let cases: Vec<_> = suite
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    // Two requirements and one failing finding (no-driver).
    assert_eq!(cases.len(), 3);
    assert_eq!(suite.attribute("tests"), Some("3"));
    assert_eq!(suite.attribute("failures"), Some("3"));
    let names: Vec<&str> = cases.iter().filter_map(|c| c.attribute("name")).collect();
    assert_eq!(names, ["gpu.count>=1", "driver>=535", "no-driver"]);
    let failure = cases[2]
        .children()
        .find(|n| n.has_tag_name("failure"))
        .expect("failure");
    assert_eq!(failure.attribute("type"), Some("error"));
    assert!(
        failure.text().unwrap_or("").contains("fix:"),
        "{:?}",
        failure.text()
    );
}

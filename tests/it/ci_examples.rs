//! `scripts/ci/`: the GitHub Actions and GitLab CI examples. The YAML is parsed, the fields CI
//! depends on are checked (GPU runner labels or tags, the JUnit file reaching the upload or the
//! report, `always` so a failed check still uploads), and every gpu-doctor command line in
//! them is run with the real binary on a fixture machine, so a flag or requirement expression
//! that gpu-doctor does not accept fails here rather than in a user's pipeline.

use std::collections::BTreeMap;
use std::path::Path;

use serde_yaml_ng::Value;

use crate::k8s::{at, documents, gpu_doctor_lines, output_of, run_on_fixture, text, words};

/// Runs one example command line on the h200 fixture in a fresh folder; returns the words and
/// what `-o` wrote, if anything.
fn run_example(line: &str) -> (Vec<String>, Option<String>) {
    let words = words(line, &BTreeMap::new());
    assert_eq!(words[0], "gpu-doctor");
    let dir = crate::support::tempdir();
    let o = run_on_fixture("h200", &words[1..], dir.path());
    let stderr = String::from_utf8_lossy(&o.stderr);
    // smoke cannot run under --root (3); everything else must be a verdict, not a usage error.
    let allowed: &[i32] = if words[1] == "smoke" { &[3] } else { &[0, 1] };
    assert!(
        o.status.code().is_some_and(|c| allowed.contains(&c)),
        "{line}: exit {:?}\n{stderr}",
        o.status.code()
    );
    let written = output_of(&words).map(|out| {
        assert!(!out.starts_with('/'), "{line}: -o into the job's folder");
        std::fs::read_to_string(dir.path().join(out))
            .unwrap_or_else(|e| panic!("{line}: -o {out} was not written: {e}"))
    });
    (words, written)
}

fn requirements(words: &[String]) -> Vec<&str> {
    words
        .windows(2)
        .filter(|w| w[0] == "-r" || w[0] == "--require")
        .map(|w| w[1].as_str())
        .collect()
}

fn format_of(words: &[String]) -> &str {
    words
        .iter()
        .position(|w| w == "--format")
        .and_then(|i| words.get(i + 1))
        .map_or("text", String::as_str)
}

#[track_caller]
fn assert_junit(xml: &str) {
    assert!(
        xml.starts_with("<?xml") && xml.contains("<testsuite"),
        "not JUnit XML:\n{xml}"
    );
}

#[test]
fn the_github_workflow_checks_a_gpu_runner_and_uploads_junit() {
    let docs = documents("scripts/ci/github-actions.yml");
    assert_eq!(docs.len(), 1);
    let jobs = at(&docs[0], "jobs").as_mapping().expect("jobs");
    assert_eq!(jobs.len(), 1);
    let job = jobs.values().next().expect("a job");
    let labels: Vec<&str> = at(job, "runs-on")
        .as_sequence()
        .expect("runs-on labels")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for label in ["self-hosted", "linux", "gpu"] {
        assert!(labels.contains(&label), "runs-on {labels:?}");
    }
    let steps = at(job, "steps").as_sequence().expect("steps");

    let mut checks = Vec::new();
    let mut junit_path = None;
    for step in steps {
        let Some(script) = step.get("run").and_then(Value::as_str) else {
            continue;
        };
        for line in gpu_doctor_lines(script) {
            let (words, written) = run_example(line);
            if words[1] == "check" {
                if format_of(&words) == "junit" {
                    assert_eq!(
                        step.get("if").and_then(Value::as_str),
                        Some("always()"),
                        "JUnit also after a failed check"
                    );
                    assert_junit(written.as_deref().expect("the JUnit file"));
                    junit_path = output_of(&words).map(str::to_string);
                }
                checks.push(words);
            }
        }
    }
    let formats: Vec<&str> = checks.iter().map(|w| format_of(w)).collect();
    assert_eq!(formats, ["github", "junit"]);
    assert!(!requirements(&checks[0]).is_empty());
    assert_eq!(
        requirements(&checks[0]),
        requirements(&checks[1]),
        "both invocations check the same requirements"
    );

    let junit_path = junit_path.expect("a JUnit -o path");
    let upload = steps
        .iter()
        .find(|s| {
            s.get("uses")
                .and_then(Value::as_str)
                .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
        })
        .expect("an upload-artifact step");
    assert_eq!(text(upload, "if"), "always()");
    let paths: Vec<&str> = text(upload, "with.path")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert!(
        paths.contains(&junit_path.as_str()),
        "uploads {paths:?}, JUnit written to {junit_path}"
    );
}

#[test]
fn the_gitlab_job_runs_on_a_gpu_runner_and_reports_junit() {
    let docs = documents("scripts/ci/gitlab-ci.yml");
    assert_eq!(docs.len(), 1);
    let job = at(&docs[0], "gpu-doctor");
    let tags: Vec<&str> = at(job, "tags")
        .as_sequence()
        .expect("tags")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(tags, ["gpu"]);
    let stages: Vec<&str> = at(&docs[0], "stages")
        .as_sequence()
        .expect("stages")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(stages.contains(&text(job, "stage")));

    let mut junit_path = None;
    let mut ran = Vec::new();
    for line in at(job, "script").as_sequence().expect("script") {
        let line = line.as_str().expect("a command");
        for line in gpu_doctor_lines(line) {
            let (words, written) = run_example(line);
            if words[1] == "check" {
                assert_eq!(format_of(&words), "junit");
                assert!(!requirements(&words).is_empty());
                assert_junit(written.as_deref().expect("the JUnit file"));
                junit_path = output_of(&words).map(str::to_string);
            }
            ran.push(words[1].clone());
        }
    }
    assert_eq!(ran, ["doctor", "check", "smoke"]);
    let junit_path = junit_path.expect("a JUnit -o path");
    assert_eq!(text(job, "artifacts.when"), "always");
    assert_eq!(text(job, "artifacts.reports.junit"), junit_path);
    let paths: Vec<&str> = at(job, "artifacts.paths")
        .as_sequence()
        .expect("paths")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(paths.contains(&junit_path.as_str()));
}

#[test]
fn the_examples_name_no_real_image_or_repository() {
    // There is no published image or repository URL: the examples must not invent one.
    for file in ["scripts/ci/github-actions.yml", "scripts/ci/gitlab-ci.yml"] {
        let source = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file))
            .expect("readable");
        for line in source.lines() {
            if line.contains("image:") {
                assert!(line.contains(".invalid/"), "{file}: {line}");
            }
            assert!(!line.contains("github.com/"), "{file}: {line}");
        }
    }
}

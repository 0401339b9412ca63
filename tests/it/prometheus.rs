//! `doctor --format prometheus` and `smoke --format prometheus`: the real binary on fixture
//! machines, and the renderer on reports recorded on real GPUs (`tests/fixtures/real/`).
//!
//! Every output is checked three ways: a strict reading written here (the rules node_exporter's
//! textfile collector applies: HELP and TYPE for each family, a family's samples together, no
//! duplicate series, no timestamps, valid names and escapes), the Prometheus project's own
//! parsers (`promtool check metrics`, the parser node_exporter uses, plus its lint; and Python's
//! `prometheus_client`, whose OpenMetrics parser refuses a family that is split or repeated),
//! and `prometheus-parse` for the values. The strict tools are installed by `.ci/run`; where
//! one is missing the test fails under `CI` and otherwise says so and skips that tool.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use gpu_doctor::report::Report;
use serde_json::Value;

use crate::support::{TIMEOUT_SECS, fixture_dir, fixture_env, on_fixture};

/// How to install the strict validators (what `.ci/run` does).
const INSTALL_HINT: &str = "python3 -m pip install prometheus-client; promtool from Debian's \
     `prometheus` package (apt-get download prometheus, then extract usr/bin/promtool)";

/// One sample as the strict reading decodes it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sample {
    pub(crate) name: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) value: f64,
}

/// Runs gpu-doctor on a fixture machine with exactly its environment.
fn run(fixture: &str, args: &[&str]) -> Output {
    on_fixture(fixture, &[], args, None)
}

fn stdout(fixture: &str, o: &Output) -> String {
    String::from_utf8(o.stdout.clone())
        .unwrap_or_else(|e| panic!("{fixture}: stdout is not UTF-8: {e}"))
}

/// `doctor --format prometheus` on a fixture: exit 0 (1 with an error finding) and valid
/// metrics.
fn doctor_metrics(fixture: &str) -> (String, Vec<Sample>) {
    let o = run(fixture, &["doctor", "--format", "prometheus"]);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{fixture}: stderr:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = stdout(fixture, &o);
    let samples = validate(&text, fixture);
    (text, samples)
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Reads a label set `{a="x",b="y"}` (without the braces), unescaping the values.
fn labels(text: &str, line: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (name, after) = rest
            .split_once("=\"")
            .unwrap_or_else(|| panic!("no =\" in the labels of {line:?}"));
        assert!(
            valid_name(name) && !name.starts_with("__"),
            "label name {name:?} in {line:?}"
        );
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next() {
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    other => panic!("bad escape {other:?} in {line:?}"),
                },
                Some((i, '"')) => break i,
                Some((_, c)) => {
                    assert!(!c.is_control(), "raw control character in {line:?}");
                    value.push(c);
                }
                None => panic!("unterminated label value in {line:?}"),
            }
        };
        assert!(
            out.insert(name.to_string(), value).is_none(),
            "label {name} twice in {line:?}"
        );
        rest = &after[end + 1..];
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
    out
}

/// The strict reading: every rule of the format that the textfile collector depends on.
/// Returns the samples, decoded.
fn strict_read(text: &str, what: &str) -> Vec<Sample> {
    assert!(text.ends_with('\n'), "{what}: no final newline");
    let mut families: BTreeSet<String> = BTreeSet::new();
    let mut family = String::new();
    let mut typed = false;
    let mut series: BTreeSet<String> = BTreeSet::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            assert!(valid_name(name), "{what}: metric name {name:?}");
            assert!(!help.trim().is_empty(), "{what}: {name} has no help text");
            assert!(
                families.insert(name.to_string()),
                "{what}: family {name} appears twice (its samples must be together)"
            );
            assert!(
                name.starts_with("gpu_doctor_"),
                "{what}: {name} lacks the prefix"
            );
            family = name.to_string();
            typed = false;
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            assert_eq!(
                rest,
                format!("{family} gauge"),
                "{what}: TYPE must follow its HELP"
            );
            typed = true;
        } else {
            assert!(!line.starts_with('#'), "{what}: stray comment {line:?}");
            assert!(!line.trim().is_empty(), "{what}: blank line");
            assert!(typed, "{what}: sample before HELP and TYPE: {line:?}");
            let (name, labels_text, rest) = match line.find('{') {
                Some(open) => {
                    let close = line
                        .rfind("} ")
                        .unwrap_or_else(|| panic!("{what}: {line:?}"));
                    (&line[..open], &line[open + 1..close], &line[close + 2..])
                }
                None => {
                    let (name, rest) = line.split_once(' ').unwrap_or((line, ""));
                    (name, "", rest)
                }
            };
            assert_eq!(name, family, "{what}: sample of another family: {line:?}");
            assert!(
                !rest.contains(' '),
                "{what}: a timestamp (or junk) after the value: {line:?}"
            );
            let value: f64 = match rest {
                "+Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                v => v
                    .parse()
                    .unwrap_or_else(|e| panic!("{what}: value {v:?} ({e}) in {line:?}")),
            };
            let labels = labels(labels_text, line);
            let key = format!("{name}{labels:?}");
            assert!(series.insert(key), "{what}: duplicate series {line:?}");
            samples.push(Sample {
                name: name.to_string(),
                labels,
                value,
            });
        }
    }
    // Each family's samples carry the same label names.
    let mut names_of: BTreeMap<&str, BTreeSet<Vec<&String>>> = BTreeMap::new();
    for s in &samples {
        names_of
            .entry(&s.name)
            .or_default()
            .insert(s.labels.keys().collect());
    }
    for (name, sets) in names_of {
        assert_eq!(sets.len(), 1, "{what}: {name} has differing label names");
    }
    samples
}

/// Fails under CI, otherwise notes that a strict tool is missing.
fn missing(tool: &str, why: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{tool} is required when CI is set ({why}); install: {INSTALL_HINT}"
    );
    eprintln!("note: {tool} unavailable ({why}); its check is skipped. Install: {INSTALL_HINT}");
}

fn pipe(mut cmd: Command, input: &str) -> std::io::Result<Output> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input.as_bytes())?;
    }
    child.wait_with_output()
}

/// `promtool check metrics`: the Go text parser node_exporter reads textfiles with, and the
/// Prometheus lint (help text, naming, units).
fn promtool(text: &str, what: &str) {
    let mut cmd = Command::new("promtool");
    cmd.args(["check", "metrics"]);
    match pipe(cmd, text) {
        Ok(o) => assert!(
            o.status.success(),
            "{what}: promtool check metrics failed ({:?}):\n{}{}\n{text}",
            o.status.code(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => missing("promtool", &e.to_string()),
    }
}

/// Parses each text of a JSON list with `prometheus_client` (the Prometheus text parser, then
/// the stricter OpenMetrics one) and prints, for each, its samples or why it was refused. One
/// process for many texts: starting Python and importing the parsers costs about 0.15 s of CPU,
/// 45 s over every fixture machine.
const PYTHON_CHECK: &str = r##"
import json, sys
try:
    from prometheus_client.parser import text_string_to_metric_families as text_format
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics
except ImportError as e:
    print("missing: %s" % e, file=sys.stderr)
    sys.exit(42)
def check(src):
    out = []
    for family in text_format(src):
        if family.type != "gauge" or not family.documentation:
            raise ValueError("%s: type %s, help %r" % (family.name, family.type, family.documentation))
        for s in family.samples:
            if s.timestamp is not None:
                raise ValueError("%s has a timestamp" % s.name)
            out.append([s.name, s.labels, float(s.value)])
    # OpenMetrics refuses a family that is split or repeated, and clashing names.
    list(openmetrics(src + "# EOF\n"))
    return out
results = []
for src in json.load(sys.stdin):
    try:
        results.append({"samples": check(src)})
    except Exception as e:
        results.append({"error": "%s: %s" % (type(e).__name__, e)})
json.dump(results, sys.stdout)
"##;

/// `prometheus_client`'s reading must be the strict reading, label values decoded alike.
fn python(text: &str, what: &str, expected: &[Sample]) {
    python_all(&[(text, what, expected)]);
}

/// [`python`] over many texts `(text, what, expected)`, in one process.
fn python_all(items: &[(&str, &str, &[Sample])]) {
    let texts: Vec<&str> = items.iter().map(|(text, _, _)| *text).collect();
    let mut cmd = Command::new("python3");
    cmd.args(["-c", PYTHON_CHECK]);
    let o = match pipe(cmd, &serde_json::to_string(&texts).unwrap()) {
        Ok(o) => o,
        Err(e) => return missing("python3", &e.to_string()),
    };
    if o.status.code() == Some(42) {
        return missing("prometheus_client", &String::from_utf8_lossy(&o.stderr));
    }
    assert!(
        o.status.success(),
        "the prometheus_client check failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let results: Vec<Value> = serde_json::from_slice(&o.stdout).expect("the check prints JSON");
    assert_eq!(results.len(), items.len());
    for ((text, what, expected), result) in items.iter().zip(results) {
        if let Some(why) = result.get("error") {
            panic!("{what}: prometheus_client refused it: {why}\n{text}");
        }
        let parsed: Vec<(String, BTreeMap<String, String>, f64)> =
            serde_json::from_value(result["samples"].clone()).expect("samples");
        let parsed: Vec<Sample> = parsed
            .into_iter()
            .map(|(name, labels, value)| Sample {
                name,
                labels,
                value,
            })
            .collect();
        assert_eq!(
            &parsed[..],
            &expected[..],
            "{what}: prometheus_client read it differently"
        );
    }
}

/// The strict reading and the Prometheus project's parsers; returns the samples.
fn validate_strictly(text: &str, what: &str) -> Vec<Sample> {
    let samples = strict_read(text, what);
    promtool(text, what);
    python(text, what, &samples);
    samples
}

/// [`validate_strictly`], and `prometheus-parse` reads the same names, values and labels. It
/// splits labels at every `,` and `=` and does not unescape, so label values with those
/// characters are not compared (and output with hostile strings is not given to it at all).
pub(crate) fn validate(text: &str, what: &str) -> Vec<Sample> {
    let samples = validate_strictly(text, what);
    lenient_reads_alike(text, what, &samples);
    samples
}

/// `prometheus-parse` reads the names, values and labels of `samples` (see [`validate`]).
fn lenient_reads_alike(text: &str, what: &str, samples: &[Sample]) {
    let lenient = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .unwrap_or_else(|e| panic!("{what}: prometheus-parse: {e}"));
    assert_eq!(lenient.samples.len(), samples.len(), "{what}");
    for (l, s) in lenient.samples.iter().zip(samples) {
        assert_eq!(l.metric, s.name, "{what}");
        let prometheus_parse::Value::Gauge(v) = l.value else {
            panic!("{what}: {} is not a gauge: {:?}", s.name, l.value);
        };
        assert_eq!(v, s.value, "{what}: {}", s.name);
        if s.labels
            .values()
            .all(|v| !v.contains([',', '=', '"', '\\', '\n']))
        {
            let theirs: BTreeMap<String, String> = l
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(theirs, s.labels, "{what}: {}", s.name);
        }
    }
}

/// The values of `name` whose labels include every pair of `with`.
fn values(samples: &[Sample], name: &str, with: &[(&str, &str)]) -> Vec<f64> {
    samples
        .iter()
        .filter(|s| {
            s.name == name
                && with
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
        .collect()
}

/// The one value of `name` with these labels.
#[track_caller]
fn value(samples: &[Sample], name: &str, with: &[(&str, &str)]) -> f64 {
    match values(samples, name, with)[..] {
        [v] => v,
        ref other => panic!("{name}{with:?}: {} samples ({other:?})", other.len()),
    }
}

fn families(samples: &[Sample]) -> BTreeSet<&str> {
    samples.iter().map(|s| s.name.as_str()).collect()
}

#[track_caller]
fn assert_close(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() <= expected.abs() * 1e-12,
        "{actual} != {expected}"
    );
}

/// Every fixture machine under `tests/fixtures/`, not a list: each one's `doctor --json` (one
/// run per machine, shared with the other tests of this binary) rendered as `--format
/// prometheus` renders it, then validated; one machine also through the binary, which must
/// give the same samples.
#[test]
fn every_fixture_machine_gives_valid_metrics() {
    let names = crate::support::machine_names();
    assert!(
        names.len() > crate::support::FIXTURES.len(),
        "{} fixture machines found",
        names.len()
    );
    let reports: Vec<(String, Report)> = crate::support::doctor_all(&names)
        .into_iter()
        .map(|(name, json)| {
            let report = serde_json::from_value(json)
                .unwrap_or_else(|e| panic!("{name}: the report reads back: {e}"));
            (name, report)
        })
        .collect();
    assert_eq!(reports.len(), names.len());
    let texts: Vec<String> = reports
        .iter()
        .map(|(_, report)| gpu_doctor::present::prometheus::render(report))
        .collect();
    let read: Vec<std::sync::OnceLock<Vec<Sample>>> =
        texts.iter().map(|_| std::sync::OnceLock::new()).collect();
    // promtool reads one text a process: four machines at a time.
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((fixture, _)) = reports.get(i) else {
                        break;
                    };
                    let text = &texts[i];
                    let samples = strict_read(text, fixture);
                    promtool(text, fixture);
                    lenient_reads_alike(text, fixture, &samples);
                    for family in [
                        "gpu_doctor_info",
                        "gpu_doctor_healthy",
                        "gpu_doctor_findings_by_severity",
                        "gpu_doctor_driver_info",
                        "gpu_doctor_gpus",
                        "gpu_doctor_smoke_status",
                    ] {
                        assert!(
                            families(&samples).contains(family),
                            "{fixture}: no {family}"
                        );
                    }
                    read[i].set(samples).expect("read once");
                }
            });
        }
    });
    let items: Vec<(&str, &str, &[Sample])> = reports
        .iter()
        .zip(&texts)
        .zip(&read)
        .map(|(((fixture, _), text), samples)| {
            (
                text.as_str(),
                fixture.as_str(),
                &samples.get().expect("read")[..],
            )
        })
        .collect();
    python_all(&items);
    // The binary's own output is the renderer's, but for how long each probe took.
    let timeless = |samples: Vec<Sample>| -> Vec<Sample> {
        samples
            .into_iter()
            .filter(|s| s.name != "gpu_doctor_probe_duration_seconds")
            .collect()
    };
    let (_, report) = reports
        .iter()
        .find(|(name, _)| name == "h200")
        .expect("the h200 machine");
    let (_, cli) = doctor_metrics("h200");
    let rendered = strict_read(&gpu_doctor::present::prometheus::render(report), "h200");
    assert_eq!(timeless(cli), timeless(rendered));
}

#[test]
fn finding_counts_match_the_json_report() {
    for fixture in [
        "h200",
        "driver-library-mismatch",
        "no-gpu",
        "torch-cuda-venv",
        "hgx-driver-not-loaded",
    ] {
        let report = crate::support::doctor(fixture);
        let (_, samples) = doctor_metrics(fixture);
        let mut counts: BTreeMap<(String, String), f64> = BTreeMap::new();
        let mut errors = 0;
        for f in report["findings"].as_array().expect("findings") {
            let severity = f["severity"].as_str().expect("severity").to_string();
            errors += usize::from(severity == "error");
            *counts
                .entry((severity, f["id"].as_str().expect("id").to_string()))
                .or_default() += 1.0;
        }
        let metrics: BTreeMap<(String, String), f64> = samples
            .iter()
            .filter(|s| s.name == "gpu_doctor_findings")
            .map(|s| {
                (
                    (s.labels["severity"].clone(), s.labels["id"].clone()),
                    s.value,
                )
            })
            .collect();
        assert_eq!(metrics, counts, "{fixture}");
        for severity in ["error", "warning", "info"] {
            let want: f64 = counts
                .iter()
                .filter(|((s, _), _)| s == severity)
                .map(|(_, n)| n)
                .sum();
            assert_eq!(
                value(
                    &samples,
                    "gpu_doctor_findings_by_severity",
                    &[("severity", severity)]
                ),
                want,
                "{fixture} {severity}"
            );
        }
        assert_eq!(
            value(&samples, "gpu_doctor_healthy", &[]),
            if errors == 0 { 1.0 } else { 0.0 },
            "{fixture}"
        );
    }
}

#[test]
fn a_driver_library_mismatch_fires_and_is_unhealthy() {
    let (_, samples) = doctor_metrics("driver-library-mismatch");
    assert_eq!(
        value(
            &samples,
            "gpu_doctor_findings",
            &[("id", "driver-library-mismatch")]
        ),
        1.0
    );
    assert_eq!(value(&samples, "gpu_doctor_healthy", &[]), 0.0);
}

#[test]
fn the_h200_fixture_describes_its_stack() {
    let (text, samples) = doctor_metrics("h200");
    let report = crate::support::doctor("h200");
    let info = |name: &str| info(&samples, name);
    let tool = info("gpu_doctor_info");
    assert_eq!(tool[0]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(tool[0]["schema"], report["schema_version"].to_string());
    let driver = info("gpu_doctor_driver_info");
    assert_eq!(driver.len(), 1);
    assert_eq!(
        driver[0]["version"],
        report["driver"]["version"].as_str().expect("version")
    );
    assert_eq!(
        driver[0]["cuda"],
        report["driver"]["cuda_version"].as_str().expect("cuda")
    );

    let gpu = &report["gpus"][0];
    let gpus = info("gpu_doctor_gpu_info");
    assert_eq!(gpus.len(), 1);
    assert_eq!(gpus[0]["gpu"], "0");
    assert_eq!(gpus[0]["name"], gpu["name"].as_str().expect("name"));
    assert_eq!(gpus[0]["uuid"], gpu["uuid"].as_str().expect("uuid"));
    assert_eq!(
        gpus[0]["pci_bus_id"],
        gpu["pci_bus_id"].as_str().expect("bus id")
    );
    assert_eq!(gpus[0]["compute_capability"], "9.0");
    let mib = gpu["memory_total_mib"].as_f64().expect("memory");
    assert_eq!(
        value(
            &samples,
            "gpu_doctor_gpu_memory_total_bytes",
            &[("gpu", "0"), ("name", "NVIDIA H200")]
        ),
        mib * 1_048_576.0
    );
    assert_eq!(value(&samples, "gpu_doctor_gpus", &[]), 1.0);

    assert_h200_software(&samples, &report, &text);
    assert_no_smoke_series(&samples);
}

/// The series of an info metric (each valued 1): their labels.
fn info<'a>(samples: &'a [Sample], name: &str) -> Vec<&'a BTreeMap<String, String>> {
    samples
        .iter()
        .filter(|s| s.name == name)
        .map(|s| {
            assert_eq!(s.value, 1.0, "{name} is an info metric");
            &s.labels
        })
        .collect()
}

/// The H200's toolkits, cuDNN copies and torch, as the report lists them.
fn assert_h200_software(samples: &[Sample], report: &serde_json::Value, text: &str) {
    let info = |name: &str| info(samples, name);
    let toolkits = info("gpu_doctor_cuda_toolkit_info");
    let want: Vec<(String, String)> = report["toolkits"]
        .as_array()
        .expect("toolkits")
        .iter()
        .map(|t| {
            (
                t["path"].as_str().unwrap_or("").into(),
                t["version"].as_str().unwrap_or("").into(),
            )
        })
        .collect();
    let got: Vec<(String, String)> = toolkits
        .iter()
        .map(|l| (l["path"].clone(), l["version"].clone()))
        .collect();
    assert_eq!(got, want);
    let cudnn: Vec<&String> = info("gpu_doctor_library_info")
        .into_iter()
        .filter(|l| l["library"] == "cudnn")
        .map(|l| &l["version"])
        .collect();
    let want: Vec<&str> = report["libraries"]["cudnn"]
        .as_array()
        .expect("cudnn")
        .iter()
        .map(|l| l["version"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(cudnn, want);
    let torch: Vec<_> = info("gpu_doctor_framework_info")
        .into_iter()
        .filter(|l| l["framework"] == "torch")
        .collect();
    assert_eq!(torch.len(), 1, "{text}");
    assert_eq!(torch[0]["env"], "/opt/torch/.venv");
    assert_eq!(torch[0]["version"], "2.11.0+cu130");
    assert_eq!(torch[0]["cuda"], "13.0");
}

/// doctor does not run the smoke test, and says so; no other smoke series.
fn assert_no_smoke_series(samples: &[Sample]) {
    assert_eq!(
        value(samples, "gpu_doctor_smoke_status", &[("status", "not_run")]),
        1.0
    );
    assert_eq!(
        values(samples, "gpu_doctor_smoke_status", &[])
            .iter()
            .sum::<f64>(),
        1.0
    );
    let smoke: Vec<&str> = families(samples)
        .into_iter()
        .filter(|f| f.starts_with("gpu_doctor_smoke_") && *f != "gpu_doctor_smoke_status")
        .collect();
    assert!(smoke.is_empty(), "{smoke:?}");
    // Under --root without SOURCE_DATE_EPOCH the report has no time, so no timestamp series.
    assert!(!families(samples).contains("gpu_doctor_report_timestamp_seconds"));
}

#[test]
fn the_report_time_is_a_unix_timestamp() {
    let o = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
        .env_clear()
        .envs(fixture_env("no-gpu"))
        .env("SOURCE_DATE_EPOCH", "1796122747")
        .arg("--root")
        .arg(fixture_dir("no-gpu").join("root"))
        .args([
            "--timeout",
            TIMEOUT_SECS,
            "doctor",
            "--format",
            "prometheus",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    let samples = validate(&stdout("no-gpu", &o), "no-gpu with SOURCE_DATE_EPOCH");
    assert_eq!(
        value(&samples, "gpu_doctor_report_timestamp_seconds", &[]),
        1_796_122_747.0
    );
}

#[test]
fn no_gpu_has_no_per_gpu_series_but_every_total() {
    let (_, samples) = doctor_metrics("no-gpu");
    assert_eq!(value(&samples, "gpu_doctor_gpus", &[]), 0.0);
    for family in [
        "gpu_doctor_gpu_info",
        "gpu_doctor_gpu_memory_total_bytes",
        "gpu_doctor_gpu_findings",
    ] {
        assert!(!families(&samples).contains(family), "{family}");
    }
    assert_eq!(
        values(&samples, "gpu_doctor_findings_by_severity", &[]).len(),
        3
    );
    // No driver: one driver series with empty labels, so a fleet's `count by (version)`
    // shows the node in a group of its own.
    let driver: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.name == "gpu_doctor_driver_info")
        .collect();
    assert_eq!(driver.len(), 1);
    assert_eq!(driver[0].labels["version"], "");
}

#[test]
fn torch_cuda_venv_lists_its_framework_builds() {
    let report = crate::support::doctor("torch-cuda-venv");
    let (_, samples) = doctor_metrics("torch-cuda-venv");
    let mut want = BTreeSet::new();
    for env in report["python_envs"].as_array().expect("envs") {
        for f in env["frameworks"].as_array().expect("frameworks") {
            want.insert((
                env["path"].as_str().expect("path").to_string(),
                f["name"].as_str().expect("name").to_string(),
                f["version"].as_str().unwrap_or("").to_string(),
                f["cuda"].as_str().unwrap_or("").to_string(),
            ));
        }
    }
    assert!(!want.is_empty());
    let got: BTreeSet<(String, String, String, String)> = samples
        .iter()
        .filter(|s| s.name == "gpu_doctor_framework_info")
        .map(|s| {
            (
                s.labels["env"].clone(),
                s.labels["framework"].clone(),
                s.labels["version"].clone(),
                s.labels["cuda"].clone(),
            )
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn smoke_under_root_writes_metrics_saying_it_could_not_run() {
    let o = run("h200", &["smoke", "--format", "prometheus"]);
    assert_eq!(o.status.code(), Some(3), "smoke cannot run under --root");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("could not run"), "{stderr}");
    let samples = validate(&stdout("h200", &o), "smoke under --root");
    assert_eq!(
        value(
            &samples,
            "gpu_doctor_smoke_status",
            &[("status", "could_not_run")]
        ),
        1.0
    );
    for state in ["passed", "failed", "not_run"] {
        assert_eq!(
            value(&samples, "gpu_doctor_smoke_status", &[("status", state)]),
            0.0
        );
    }
    let fam = families(&samples);
    for absent in [
        "gpu_doctor_smoke_pass",
        "gpu_doctor_smoke_tflops",
        "gpu_doctor_smoke_duration_seconds",
    ] {
        assert!(!fam.contains(absent), "{absent}");
    }
    // The rest of the report is there: the node is still described.
    assert!(fam.contains("gpu_doctor_gpu_info"));
}

fn load(json: &str) -> Report {
    serde_json::from_str(json).expect("a report")
}

#[test]
fn the_recorded_h200_smoke_run_becomes_smoke_series() {
    let json = include_str!("../fixtures/real/h200-smoke.json");
    let raw: Value = serde_json::from_str(json).expect("JSON");
    let text = gpu_doctor::present::prometheus::render(&load(json));
    let samples = validate(&text, "h200-smoke.json");
    let device = &raw["smoke"]["devices"][0];
    let gpu = [("gpu", "0"), ("name", "NVIDIA H200")];
    let with = |extra: (&'static str, &'static str)| {
        let mut l = gpu.to_vec();
        l.push(extra);
        l
    };
    let t = &device["throughput"];
    assert_eq!(
        value(
            &samples,
            "gpu_doctor_smoke_tflops",
            &with(("precision", "bf16"))
        ),
        t["cublaslt_bf16_tflops"].as_f64().expect("bf16")
    );
    assert_eq!(
        value(
            &samples,
            "gpu_doctor_smoke_tflops",
            &with(("precision", "fp32"))
        ),
        t["ptx_fp32_tflops"].as_f64().expect("fp32")
    );
    assert_eq!(
        value(
            &samples,
            "gpu_doctor_smoke_expected_tflops",
            &with(("precision", "bf16"))
        ),
        989.0
    );
    let b = &device["bandwidth"];
    for (direction, key) in [
        ("host_to_device", "host_to_device_gbs"),
        ("device_to_host", "device_to_host_gbs"),
        ("device_to_device", "device_to_device_gbs"),
    ] {
        assert_close(
            value(
                &samples,
                "gpu_doctor_smoke_bandwidth_bytes_per_second",
                &with(("direction", direction)),
            ),
            b[key].as_f64().expect("GB/s") * 1e9,
        );
    }
    assert_eq!(value(&samples, "gpu_doctor_smoke_pass", &gpu), 1.0);
    assert_eq!(
        value(&samples, "gpu_doctor_smoke_status", &[("status", "passed")]),
        1.0
    );
    assert_eq!(
        value(
            &samples,
            "gpu_doctor_smoke_check_pass",
            &with(("check", "matmul"))
        ),
        1.0
    );
    assert_eq!(value(&samples, "gpu_doctor_smoke_memory_errors", &gpu), 0.0);
    assert_close(
        value(&samples, "gpu_doctor_smoke_duration_seconds", &[]),
        raw["smoke"]["wall_ms"].as_f64().expect("wall") / 1000.0,
    );
    // The recorded report predates generated_at: no timestamp series, no guess.
    assert!(!families(&samples).contains("gpu_doctor_report_timestamp_seconds"));
}

#[test]
fn the_recorded_two_gpu_smoke_run_has_both_gpus_and_peer_access() {
    let text = gpu_doctor::present::prometheus::render(&load(include_str!(
        "../fixtures/real/x2-smoke.json"
    )));
    let samples = validate(&text, "x2-smoke.json");
    for gpu in ["0", "1"] {
        assert_eq!(
            value(&samples, "gpu_doctor_smoke_pass", &[("gpu", gpu)]),
            1.0
        );
        assert_eq!(
            values(
                &samples,
                "gpu_doctor_smoke_bandwidth_bytes_per_second",
                &[("gpu", gpu)]
            )
            .len(),
            3
        );
    }
    assert_eq!(
        value(
            &samples,
            "gpu_doctor_smoke_peer_access",
            &[("gpu", "0"), ("peer", "1")]
        ),
        1.0
    );
    // Run without --bench: no throughput, so no TFLOP/s series at all.
    assert!(!families(&samples).contains("gpu_doctor_smoke_tflops"));
}

#[test]
fn every_recorded_report_renders_valid_metrics() {
    for (name, json) in [
        (
            "h200-doctor",
            include_str!("../fixtures/real/h200-doctor.json"),
        ),
        ("h200-deep", include_str!("../fixtures/real/h200-deep.json")),
        (
            "h200-smoke-frameworks",
            include_str!("../fixtures/real/h200-smoke-frameworks.json"),
        ),
        ("x2-deep", include_str!("../fixtures/real/x2-deep.json")),
        (
            "x2-smoke-frameworks",
            include_str!("../fixtures/real/x2-smoke-frameworks.json"),
        ),
    ] {
        validate(&gpu_doctor::present::prometheus::render(&load(json)), name);
    }
}

#[test]
fn hostile_strings_stay_inside_their_labels() {
    use gpu_doctor::report::{Framework, Gpu, PythonEnv};
    let mut r = Report::default();
    let evil = "x\"} 1\n# TYPE gpu_doctor_healthy counter\ngpu_doctor_healthy 0 123\\";
    r.driver.version = Some(evil.to_string());
    r.gpus.push(Gpu {
        index: 0,
        name: Some(format!("GPU\r\t{evil}\u{1b}[2J\u{202e}")),
        ..Gpu::default()
    });
    r.python_envs.push(PythonEnv {
        path: "/home/\"q\"/env\\".into(),
        frameworks: vec![Framework {
            name: "torch".into(),
            version: Some("2.5\n".into()),
            ..Framework::default()
        }],
        ..PythonEnv::default()
    });
    let text = gpu_doctor::present::prometheus::render(&r);
    let samples = validate_strictly(&text, "hostile strings");
    assert_eq!(value(&samples, "gpu_doctor_healthy", &[]), 1.0);
    let driver = samples
        .iter()
        .find(|s| s.name == "gpu_doctor_driver_info")
        .expect("driver info");
    assert_eq!(
        driver.labels["version"], evil,
        "escaped, so read back whole"
    );
    let gpu = samples
        .iter()
        .find(|s| s.name == "gpu_doctor_gpu_info")
        .expect("gpu info");
    // Control characters other than newline are defused, as in the text face.
    assert_eq!(gpu.labels["name"], format!("GPU? {evil}?[2J<U+202E>"));
    let fw = samples
        .iter()
        .find(|s| s.name == "gpu_doctor_framework_info")
        .expect("framework info");
    assert_eq!(fw.labels["env"], "/home/\"q\"/env\\");
    assert_eq!(fw.labels["version"], "2.5\n");
}

#[test]
fn dash_o_replaces_the_file_atomically_and_leaves_no_temporary() {
    let dir = crate::support::tempdir();
    let path = dir.path().join("gpu-doctor.prom");
    std::fs::write(&path, "old content\n").expect("write");
    let path_arg = path.to_str().expect("UTF-8 path");
    for round in 0..2 {
        let o = run(
            "h200",
            &["doctor", "--format", "prometheus", "-o", path_arg],
        );
        assert_eq!(
            o.status.code(),
            Some(0),
            "round {round}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(o.stdout.is_empty(), "with -o nothing goes to stdout");
        let text = std::fs::read_to_string(&path).expect("written");
        assert!(!text.contains("old content"));
        validate(&text, "the -o file");
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            ["gpu-doctor.prom"],
            "round {round}: no temporary left"
        );
    }
    // node_exporter runs as another user: the file must be readable by all.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o644);
    // smoke's -o too, even though it exits 3 here.
    let o = run("h200", &["smoke", "--format", "prometheus", "-o", path_arg]);
    assert_eq!(o.status.code(), Some(3));
    let text = std::fs::read_to_string(&path).expect("written");
    assert!(text.contains("gpu_doctor_smoke_status{status=\"could_not_run\"} 1"));
}

/// Builds tests/fakes/libcuda.c; `None` (test skipped) without a C compiler.
fn fake_driver() -> Option<tempfile::TempDir> {
    let dir = crate::support::tempdir();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fakes/libcuda.c");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o"])
        .arg(dir.path().join("libcuda.so.1"))
        .arg(&source)
        .status();
    match built {
        Ok(s) if s.success() => Some(dir),
        _ => {
            eprintln!("skipped: no C compiler to build the fake libcuda");
            None
        }
    }
}

#[test]
fn a_live_smoke_run_on_a_fake_driver_reports_its_failed_gpu() {
    // The fake computes nothing: the matmul check fails, so smoke exits 1 with device series.
    let Some(dir) = fake_driver() else {
        return;
    };
    let o = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("LD_LIBRARY_PATH", dir.path())
        .args(["smoke", "--format", "prometheus"])
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let samples = validate(&stdout("fake driver", &o), "smoke on the fake driver");
    assert_eq!(
        value(&samples, "gpu_doctor_smoke_status", &[("status", "failed")]),
        1.0
    );
    assert_eq!(
        value(&samples, "gpu_doctor_smoke_pass", &[("gpu", "0")]),
        0.0
    );
    assert_eq!(
        value(
            &samples,
            "gpu_doctor_smoke_check_pass",
            &[("gpu", "0"), ("check", "matmul")]
        ),
        0.0
    );
    assert_eq!(value(&samples, "gpu_doctor_healthy", &[]), 0.0);
}

/// What the real H200 gave (`smoke --bench --format prometheus -o`, 2026-12-01, driver
/// 580.159.04): valid to every validator, with the measured rates where a dashboard reads them.
/// The JSON beside it is the `smoke --bench --json` of the same call, a few seconds later.
#[test]
fn the_real_h200_smoke_metrics_are_valid_and_carry_its_rates() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real");
    let text = std::fs::read_to_string(dir.join("h200-smoke-bench.prom")).expect("record");
    let samples = validate(&text, "real h200 smoke");
    let gpu = [("gpu", "0"), ("name", "NVIDIA H200")];
    assert_eq!(value(&samples, "gpu_doctor_smoke_pass", &gpu), 1.0);
    assert_eq!(
        value(&samples, "gpu_doctor_smoke_status", &[("status", "passed")]),
        1.0
    );
    let bf16 = value(
        &samples,
        "gpu_doctor_smoke_tflops",
        &[("gpu", "0"), ("precision", "bf16")],
    );
    let fp32 = value(
        &samples,
        "gpu_doctor_smoke_tflops",
        &[("gpu", "0"), ("precision", "fp32")],
    );
    // The same card measured by the JSON run: within a few percent, as repeated runs are.
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("h200-smoke-bench.json")).expect("record"),
    )
    .expect("JSON");
    let t = &json["smoke"]["devices"][0]["throughput"];
    let near = |a: f64, b: f64| (a - b).abs() / b < 0.05;
    assert!(
        near(bf16, t["cublaslt_bf16_tflops"].as_f64().expect("bf16")),
        "{bf16}"
    );
    assert!(
        near(fp32, t["ptx_fp32_tflops"].as_f64().expect("fp32")),
        "{fp32}"
    );
    assert!(
        bf16 > 700.0 && fp32 > 30.0,
        "an H200's rates: {bf16} {fp32}"
    );
    let d2d = value(
        &samples,
        "gpu_doctor_smoke_bandwidth_bytes_per_second",
        &[("gpu", "0"), ("direction", "device_to_device")],
    );
    assert!(d2d > 4.0e12, "{d2d}");
    assert_eq!(
        value(
            &samples,
            "gpu_doctor_driver_info",
            &[("version", "580.159.04"), ("cuda", "13.0")]
        ),
        1.0
    );
}

//! Every fixture's report validates against the committed JSON Schema, and that schema is the
//! one the binary generates.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::{FIXTURES, check_common, doctor_all, machine_names};

fn committed_schema() -> (String, Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/report.schema.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (text, value)
}

#[test]
fn committed_schema_is_what_the_binary_prints() {
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
        .arg("schema")
        .env_clear()
        .output()
        .expect("gpu-doctor schema");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (text, _) = committed_schema();
    assert!(
        String::from_utf8_lossy(&out.stdout) == text,
        "schema/report.schema.json is stale: regenerate it with `UPDATE_SCHEMA=1 cargo test --lib schema`"
    );
}

#[test]
fn every_fixture_report_validates_against_the_schema() {
    let (_, schema) = committed_schema();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    // Every fixture machine under tests/fixtures/: one process each, four at a time, each kept
    // for the other tests of this binary.
    let names = machine_names();
    assert!(
        names.len() > FIXTURES.len(),
        "{} fixture machines found",
        names.len()
    );
    let reports: Vec<(String, Value)> = doctor_all(&names);
    assert_eq!(reports.len(), names.len());
    let mut failures = Vec::new();
    for (name, report) in &reports {
        check_common(name, report);
        let errors: Vec<String> = validator
            .iter_errors(report)
            .map(|e| format!("  {} at {}", e, e.instance_path()))
            .collect();
        if !errors.is_empty() {
            failures.push(format!("{name}:\n{}", errors.join("\n")));
        }
    }
    assert!(
        failures.is_empty(),
        "reports that do not match the schema:\n{}",
        failures.join("\n")
    );
    // The schema is strict enough to catch a broken report.
    let mut broken = reports[0].1.clone();
    broken["driver"]["version"] = Value::from(550);
    assert!(
        !validator.is_valid(&broken),
        "a number where a version string belongs must not validate"
    );
    let mut extra = reports[0].1.clone();
    extra["surprise"] = Value::Bool(true);
    assert!(
        !validator.is_valid(&extra),
        "unknown top-level keys must not validate"
    );
}

//! Every fixture that carries `expected-findings.txt` (one finding ID per line) must produce
//! exactly those IDs: the file is the fixture's verdict, written by whoever modelled the
//! machine, so adding a fixture needs no test code.

use std::collections::BTreeSet;

use crate::support::{doctor, doctor_all, finding_ids, fixtures_dir};

/// The fixture folders that hold `entry`, sorted, each machine's report made first (four at a
/// time, kept for the other tests of this binary).
fn fixtures_with(entry: &str) -> Vec<std::path::PathBuf> {
    let mut dirs: Vec<_> = std::fs::read_dir(fixtures_dir())
        .expect("tests/fixtures")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join(entry).exists())
        .collect();
    dirs.sort();
    let names: Vec<String> = dirs
        .iter()
        .filter_map(|d| d.file_name()?.to_str().map(str::to_string))
        .collect();
    doctor_all(&names);
    dirs
}

#[test]
fn every_fixture_produces_exactly_its_expected_findings() {
    let mut checked = 0;
    let mut failures = Vec::new();
    let dirs = fixtures_with("expected-findings.txt");
    for dir in dirs {
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .expect("name")
            .to_string();
        let text = std::fs::read_to_string(dir.join("expected-findings.txt")).expect("readable");
        let expected: BTreeSet<String> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_string)
            .collect();
        let actual: BTreeSet<String> = finding_ids(&doctor(&name)).into_iter().collect();
        // A held-out machine whose miss is known (`known-miss.txt`, see graph.rs) is judged by
        // the root sweep, which counts it as a miss until it passes.
        if actual != expected && !dir.join("known-miss.txt").is_file() {
            failures.push(format!("{name}: expected {expected:?}, got {actual:?}"));
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("{checked} fixtures checked against expected-findings.txt");
}

/// A fixture's `expected-fix.txt` holds lines "ID: words" (the finding's fix must contain the
/// words) and "ID: !words" (it must not): where a fix must be in the distribution's words or
/// name the facts it rests on, the fixture says so without test code.
#[test]
fn every_fixture_fix_says_what_its_expected_fix_names() {
    let names: Vec<String> = fixtures_with("expected-fix.txt")
        .iter()
        .filter_map(|d| d.file_name()?.to_str().map(str::to_string))
        .collect();
    let mut failures = Vec::new();
    for name in &names {
        let text = std::fs::read_to_string(fixtures_dir().join(name).join("expected-fix.txt"))
            .expect("readable");
        let report = doctor(name);
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (id, words) = line.split_once(": ").expect("ID: words");
            let fix = report["findings"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|f| f["id"] == id)
                .map(|f| f["fix"].as_str().unwrap_or_default().to_string());
            let Some(fix) = fix else {
                failures.push(format!("{name}: no {id} finding"));
                continue;
            };
            let ok = match words.strip_prefix('!') {
                Some(absent) => !fix.contains(absent),
                None => fix.contains(words),
            };
            if !ok {
                failures.push(format!("{name}: {id}'s fix and {words:?}: {fix}"));
            }
        }
    }
    assert!(!names.is_empty(), "no fixture has an expected-fix.txt");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every finding any fixture machine produces is registered (`diagnose::ids`), with a severity
/// its registration allows: the registry's severity ranges are what README promises.
#[test]
fn every_fixture_finding_is_registered_with_an_allowed_severity() {
    let dirs = fixtures_with("root");
    let mut seen = 0;
    for dir in dirs {
        let name = dir.file_name().and_then(|n| n.to_str()).expect("name");
        let report = doctor(name);
        for f in report["findings"].as_array().into_iter().flatten() {
            let id = f["id"].as_str().expect("id");
            let severity = f["severity"].as_str().expect("severity");
            let kind = gpu_doctor::diagnose::ids::kind(id)
                .unwrap_or_else(|| panic!("{name}: unregistered finding {id}"));
            assert!(
                kind.severities.iter().any(|s| s.as_str() == severity),
                "{name}: {id} reported as {severity}, registered as {:?}",
                kind.severities
            );
            // Prose is written on several source lines: a line break without its `\` leaves
            // a run of spaces inside a sentence or a command the user copies.
            for field in ["title", "detail", "fix"] {
                let text = f[field].as_str().unwrap_or_default();
                assert!(
                    !text.contains("   "),
                    "{name}: {id}'s {field} holds a run of spaces (a string continued without \\?): {text}"
                );
            }
            for explained in f["explains"].as_array().into_iter().flatten() {
                let e = explained.as_str().expect("an ID");
                assert!(
                    gpu_doctor::diagnose::ids::kind(e).is_some(),
                    "{name}: {id} explains the unregistered {e}"
                );
            }
            seen += 1;
        }
    }
    assert!(
        seen > 50,
        "too few findings seen ({seen}) for this check to mean anything"
    );
}

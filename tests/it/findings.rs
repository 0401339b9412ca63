//! Every fixture that carries `expected-findings.txt` (one finding ID per line) must produce
//! exactly those IDs: the file is the fixture's verdict, written by whoever modelled the
//! machine, so adding a fixture needs no test code.

use std::collections::BTreeSet;

use crate::support::{doctor, finding_ids, fixtures_dir};

#[test]
fn every_fixture_produces_exactly_its_expected_findings() {
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(fixtures_dir())
        .expect("tests/fixtures")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("expected-findings.txt").is_file())
        .collect();
    dirs.sort();
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
        if actual != expected {
            failures.push(format!("{name}: expected {expected:?}, got {actual:?}"));
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("{checked} fixtures checked against expected-findings.txt");
}

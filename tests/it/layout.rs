//! The fixtures themselves: every machine is complete, and every machine has a test (its own
//! test function, or an `expected-findings.txt` that the generic findings test reads).

use std::collections::BTreeSet;

use crate::support::{FIXTURES, NOT_MACHINES, fixture_dir, fixture_env, fixtures_dir};

/// Every machine folder on disk.
fn machines() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir())
        .expect("tests/fixtures")
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !NOT_MACHINES.contains(&n.as_str()))
        .collect();
    names.sort();
    names
}

#[test]
fn every_fixture_has_readme_env_and_root() {
    for name in &machines() {
        let name = name.as_str();
        let dir = fixture_dir(name);
        let readme = std::fs::read_to_string(dir.join("README.md"))
            .unwrap_or_else(|e| panic!("{name}/README.md: {e}"));
        let lines = readme.lines().filter(|l| !l.trim().is_empty()).count();
        assert!(
            (2..=6).contains(&lines),
            "{name}/README.md has {lines} lines, want 2 to 6"
        );
        assert!(
            readme.to_lowercase().contains("correct diagnosis"),
            "{name}/README.md must say what a correct diagnosis says"
        );
        let env = fixture_env(name);
        let path = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone());
        let path = path.unwrap_or_else(|| panic!("{name}/env does not set PATH"));
        assert!(
            path.split(':').all(|p| p.starts_with('/')),
            "{name}: PATH holds machine paths: {path}"
        );
        let keys: BTreeSet<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys.len(), env.len(), "{name}/env sets a variable twice");
        assert!(dir.join("root").is_dir(), "{name}/root is not a folder");
        assert!(
            std::fs::read_dir(dir.join("root"))
                .map(|mut d| d.next().is_some())
                .unwrap_or(false),
            "{name}/root is empty"
        );
    }
}

#[test]
fn every_machine_folder_has_a_test() {
    let on_disk: BTreeSet<String> = machines().into_iter().collect();
    let listed: BTreeSet<String> = FIXTURES.iter().map(|s| (*s).to_string()).collect();
    let missing: Vec<&String> = listed.difference(&on_disk).collect();
    assert!(
        missing.is_empty(),
        "listed fixtures without a folder: {missing:?}"
    );
    let untested: Vec<&String> = on_disk
        .iter()
        .filter(|n| !listed.contains(*n) && !fixture_dir(n).join("expected-findings.txt").is_file())
        .collect();
    assert!(
        untested.is_empty(),
        "fixture folders with neither a test nor expected-findings.txt: {untested:?}"
    );
    assert!(
        on_disk.len() >= 30,
        "{} fixture machines; the suite promises at least 30",
        on_disk.len()
    );
}

#[test]
fn stand_in_commands_are_executable_scripts() {
    use std::os::unix::fs::PermissionsExt;
    let mut seen = 0;
    for name in &machines() {
        let root = fixture_dir(name).join("root");
        for rel in [
            "usr/bin/nvidia-smi",
            "usr/local/nvidia/bin/nvidia-smi",
            "usr/lib/wsl/lib/nvidia-smi",
        ] {
            let path = root.join(rel);
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.file_type().is_symlink() {
                continue;
            }
            seen += 1;
            assert!(
                meta.permissions().mode() & 0o111 != 0,
                "{} is not executable",
                path.display()
            );
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                text.starts_with("#!/bin/sh\n"),
                "{} is not a /bin/sh script",
                path.display()
            );
        }
    }
    assert!(seen >= 14, "only {seen} stand-in nvidia-smi scripts found");
}

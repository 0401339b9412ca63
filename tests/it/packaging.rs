//! The packaging of issue #38, checked cheaply on every `cargo test` (the builds themselves,
//! minutes each, are the developer scripts `scripts/package-*.sh`): the glibc floor script
//! reads the version a binary needs, the crate's file list carries what the code embeds and
//! no fixtures, the wheel's configuration is a manylinux2014 "bin" wheel, and the release
//! workflow example builds both architectures, checks the floor and publishes checksums.

use std::path::Path;
use std::process::Command;

use serde_yaml_ng::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The highest `GLIBC_x.y` among a binary's undefined dynamic symbols, read here with
/// readelf, to hold the script's answer against.
fn highest_glibc(binary: &Path) -> Option<String> {
    let out = Command::new("readelf")
        .args(["--dyn-syms", "--wide"])
        .arg(binary)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let key = |v: &str| -> Vec<u32> { v.split('.').filter_map(|p| p.parse().ok()).collect() };
    text.lines()
        .filter(|l| l.contains(" UND "))
        .filter_map(|l| l.split("@GLIBC_").nth(1))
        .map(|v| v.split_whitespace().next().unwrap_or(v).to_string())
        .max_by_key(|v| key(v))
}

#[test]
fn glibc_floor_names_the_highest_version_and_fails_above_the_floor() {
    let binary = Path::new(env!("CARGO_BIN_EXE_gpu-doctor"));
    let Some(highest) = highest_glibc(binary) else {
        eprintln!("skipped: readelf (binutils) is not installed");
        return;
    };
    let script = root().join("scripts/glibc-floor.sh");
    let run = |max: &str| {
        Command::new(&script)
            .arg(binary)
            .arg(max)
            .output()
            .expect("the script runs")
    };
    let above = run("2.0");
    let said = String::from_utf8_lossy(&above.stdout);
    assert_eq!(above.status.code(), Some(1), "{said}");
    assert!(said.contains(&format!("needs glibc {highest} (")), "{said}");
    let within = run(&highest);
    assert_eq!(
        within.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&within.stdout)
    );
    // Version parts compare as numbers: 2.9 is below 2.17.
    let nine = run("2.9");
    assert_eq!(nine.status.code(), Some(1), "2.9 < {highest}");
    let missing = Command::new(&script)
        .arg(root().join("no-such-binary"))
        .output()
        .expect("the script runs");
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn the_crate_carries_the_embedded_files_and_no_fixtures() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let Ok(out) = Command::new(cargo)
        .args(["package", "--list", "--allow-dirty", "--offline"])
        .current_dir(root())
        .output()
    else {
        eprintln!("skipped: cargo could not be run");
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list = String::from_utf8_lossy(&out.stdout).into_owned();
    let files: Vec<&str> = list.lines().collect();
    for manifest in std::fs::read_dir(root().join("manifests")).expect("manifests/") {
        let name = manifest.expect("entry").file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".toml") {
            assert!(
                files.contains(&format!("manifests/{name}").as_str()),
                "{name}"
            );
        }
    }
    for want in [
        "Cargo.toml",
        "Cargo.lock",
        "README.md",
        "src/main.rs",
        "schema/report.schema.json",
        "src/smoke/kernels/smoke.ptx",
        "src/deep/probe.py",
    ] {
        assert!(files.contains(&want), "{want} not packaged");
    }
    let unwanted: Vec<&&str> = files
        .iter()
        .filter(|f| {
            ["tests/", "scripts/", ".ci/", "target/"]
                .iter()
                .any(|p| f.starts_with(p))
        })
        .collect();
    assert!(unwanted.is_empty(), "{unwanted:?}");
}

#[test]
fn the_wheel_is_a_manylinux2014_bin_wheel_with_cargos_version() {
    let text = std::fs::read_to_string(root().join("pyproject.toml")).expect("pyproject.toml");
    let py: toml::Table = toml::from_str(&text).expect("valid TOML");
    let maturin = &py["tool"]["maturin"];
    assert_eq!(maturin["bindings"].as_str(), Some("bin"));
    assert_eq!(maturin["compatibility"].as_str(), Some("manylinux2014"));
    assert_eq!(maturin["locked"].as_bool(), Some(true));
    let project = &py["project"];
    assert_eq!(project["name"].as_str(), Some("gpu-doctor"));
    let dynamic = project["dynamic"].as_array().expect("dynamic");
    assert!(dynamic.iter().any(|v| v.as_str() == Some("version")));
    assert_eq!(
        py["build-system"]["build-backend"].as_str(),
        Some("maturin")
    );
}

#[test]
fn the_release_workflow_builds_both_architectures_checks_the_floor_and_publishes_sums() {
    let text = std::fs::read_to_string(root().join("scripts/ci/release.yml")).expect("release.yml");
    let doc: Value = serde_yaml_ng::from_str(&text).expect("valid YAML");
    let build = &doc["jobs"]["build"];
    let targets: Vec<&str> = build["strategy"]["matrix"]["include"]
        .as_sequence()
        .expect("a matrix")
        .iter()
        .filter_map(|row| row["target"].as_str())
        .collect();
    assert_eq!(
        targets,
        ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"]
    );
    let runs: String = build["steps"]
        .as_sequence()
        .expect("steps")
        .iter()
        .filter_map(|s| s["run"].as_str())
        .collect();
    for needed in [
        "scripts/glibc-floor.sh",
        ".2.17",
        "scripts/package-wheel.sh",
        "scripts/package-deb.sh",
        "scripts/package-crate.sh",
    ] {
        assert!(runs.contains(needed), "{needed} not run");
    }
    let publish = &doc["jobs"]["publish"];
    let publish_runs: String = publish["steps"]
        .as_sequence()
        .expect("steps")
        .iter()
        .filter_map(|s| s["run"].as_str())
        .collect();
    assert!(publish_runs.contains("sha256sum"), "{publish_runs}");
    assert!(publish_runs.contains("SHA256SUMS"), "{publish_runs}");
    assert_eq!(publish["permissions"]["contents"].as_str(), Some("write"));
    assert_eq!(build["permissions"]["contents"].as_str(), Some("read"));
    // Every script the workflow runs exists and is executable.
    for script in [
        "scripts/glibc-floor.sh",
        "scripts/package-wheel.sh",
        "scripts/package-deb.sh",
        "scripts/package-crate.sh",
    ] {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(root().join(script))
            .expect(script)
            .permissions()
            .mode();
        assert!(mode & 0o111 != 0, "{script} is not executable");
    }
}

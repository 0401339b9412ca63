//! The container image's CUDA requirement read where the program's own environment lost it:
//! `/proc/1/environ` of the container (what `sudo` or a login shell inside `docker exec`
//! resets), and never on a host, where PID 1 is the machine's init.

use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{copy_tree, finding_ids, fixture_dir, fixture_env};

const FIXTURE: &str = "image-cuda128-on-driver550-rtx3090";

/// The fixture's tree in a scratch folder with the image's variables moved from the program's
/// environment into `/proc/1/environ`, optionally without the container marker; its report.
fn moved_to_pid1(container: bool) -> Value {
    let dir = crate::support::tempdir();
    let root = dir.path().join("root");
    copy_tree(&fixture_dir(FIXTURE).join("root"), &root);
    if !container {
        std::fs::remove_file(root.join(".dockerenv")).expect(".dockerenv");
    }
    let (image, program): (Vec<_>, Vec<_>) = fixture_env(FIXTURE)
        .into_iter()
        .partition(|(k, _)| k == "NVIDIA_REQUIRE_CUDA" || k == "CUDA_VERSION");
    assert_eq!(image.len(), 2, "the fixture carries both variables");
    let mut environ = Vec::new();
    for (k, v) in image.iter().chain(program.iter()) {
        environ.extend_from_slice(format!("{k}={v}").as_bytes());
        environ.push(0);
    }
    std::fs::write(root.join("proc/1/environ"), environ).expect("environ");
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
        .env_clear()
        .envs(program)
        .arg("--root")
        .arg(&root)
        .args([
            "--timeout",
            crate::support::TIMEOUT_SECS,
            "doctor",
            "--json",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("gpu-doctor runs");
    serde_json::from_slice(&out.stdout).expect("JSON report")
}

#[test]
fn inside_a_container_pid1_gives_the_image_requirement_the_environment_lost() {
    let r = moved_to_pid1(true);
    assert_eq!(finding_ids(&r), ["driver-too-old-for-image"]);
    let names: Vec<&str> = r["environment"]
        .as_array()
        .expect("environment")
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert!(names.contains(&"NVIDIA_REQUIRE_CUDA"), "{names:?}");
}

#[test]
fn on_a_host_pid1_is_not_read() {
    let r = moved_to_pid1(false);
    assert!(
        !finding_ids(&r).contains(&"driver-too-old-for-image".to_string()),
        "{:?}",
        finding_ids(&r)
    );
}

//! The Python- and library-level edges of the compatibility graph added for issue 36: their
//! generated tables reproduce, and the directions no fixture folder holds are shown on machines
//! built here from one.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::{copy_tree, finding, finding_ids, fixture_dir, fixture_env};

/// frameworks.toml's `jax_plugin_check` block is what scripts/gen-jax-plugin-check.py makes of
/// the facts it read from jax's release tags (vendored), offline.
#[test]
fn the_jax_plugin_check_generator_reproduces_the_checked_in_table() {
    crate::support::generator_reproduces_its_table("gen-jax-plugin-check.py");
}

/// `doctor --json` on a scratch copy of a fixture's tree, after `change` edited it.
fn doctor_changed(fixture: &str, change: impl FnOnce(&Path)) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    copy_tree(&fixture_dir(fixture).join("root"), &root);
    change(&root);
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
        .env_clear()
        .envs(fixture_env(fixture))
        .arg("--root")
        .arg(&root)
        .args(["--timeout", "2", "doctor", "--json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Renames a dist-info folder to another version and rewrites its METADATA's `Version:`.
fn move_dist(site: &Path, dist: &str, from: &str, to: &str) {
    let old = site.join(format!("{dist}-{from}.dist-info"));
    let new = site.join(format!("{dist}-{to}.dist-info"));
    std::fs::rename(&old, &new).unwrap();
    let meta = new.join("METADATA");
    let text = std::fs::read_to_string(&meta).unwrap();
    std::fs::write(
        &meta,
        text.replace(&format!("Version: {from}\n"), &format!("Version: {to}\n")),
    )
    .unwrap();
}

/// The older direction: `pip install -U jax jaxlib` (without the `[cuda12]` extra) moves jax and
/// jaxlib from 0.9.0 to the patch release 0.9.0.1 and leaves the plugin wheels at 0.9.0; jaxlib
/// compares the whole numeric release, so (0, 9, 0) is refused against (0, 9, 0, 1).
#[test]
fn a_plugin_older_than_jaxlib_is_a_mismatch_too() {
    let r = doctor_changed("jax-plugin-092-on-jaxlib-0901", |root| {
        let site = root.join("home/jx/.venvs/jax/lib/python3.11/site-packages");
        move_dist(&site, "jax_cuda12_plugin", "0.9.2", "0.9.0");
        move_dist(&site, "jax_cuda12_pjrt", "0.9.2", "0.9.0");
    });
    assert_eq!(finding_ids(&r), ["jax-plugin-version-mismatch"], "{r}");
    let f = finding(&r, "jax-plugin-version-mismatch");
    assert!(
        f["title"]
            .as_str()
            .unwrap()
            .contains("older than jaxlib 0.9.0.1"),
        "{f}"
    );
    assert!(
        f["detail"].as_str().unwrap().contains(
            "JAX plugin jax_cuda12_plugin version 0.9.0 is installed, but it is not compatible with the installed jaxlib version 0.9.0.1"
        ),
        "{f}"
    );
    // Put back at jaxlib's release: clean.
    let r = doctor_changed("jax-plugin-092-on-jaxlib-0901", |root| {
        let site = root.join("home/jx/.venvs/jax/lib/python3.11/site-packages");
        move_dist(&site, "jax_cuda12_plugin", "0.9.2", "0.9.0.1");
        move_dist(&site, "jax_cuda12_pjrt", "0.9.2", "0.9.0.1");
    });
    assert!(finding_ids(&r).is_empty(), "{r}");
}

/// frameworks.toml's torch GPU floors (`torch_triton_min_cc`, `torch_cudnn_min_cc`) are what
/// scripts/gen-torch-gpu-floors.py makes of the facts it read from torch's wheels (vendored).
#[test]
fn the_torch_gpu_floors_generator_reproduces_the_checked_in_table() {
    crate::support::generator_reproduces_its_table("gen-torch-gpu-floors.py");
}

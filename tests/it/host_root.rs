//! `--host-root`: a node's `/` mounted into a pod (`tests/fixtures/k8s-node-host-root/root`),
//! examined with the pod's own environment and the pod's own nvidia-smi (`container/usr/bin`
//! first on PATH, the stand-in for what the NVIDIA container toolkit mounts in). On a machine
//! whose NVML answers, the GPU facts are that machine's, live, and the nvidia-smi checks are
//! passed over; everything read from files is the node's either way.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{Out, TIMEOUT_SECS, fixture_dir, fixture_env};

pub(crate) const NODE: &str = "k8s-node-host-root";

/// The pod's `container/usr/bin` (the stand-in nvidia-smi).
pub(crate) fn container_bin() -> PathBuf {
    fixture_dir(NODE).join("container/usr/bin")
}

/// gpu-doctor as the DaemonSet's pod runs it: the pod's environment with the container's
/// nvidia-smi first on PATH, `--host-root ROOT`, then `args`, in `cwd`.
pub(crate) fn on_node<S: AsRef<std::ffi::OsStr>>(root: &Path, args: &[S], cwd: &Path) -> Out {
    let env: Vec<(String, String)> = fixture_env(NODE)
        .into_iter()
        .map(|(k, v)| {
            if k == "PATH" {
                let bin = container_bin();
                (k, format!("{}:{v}", bin.display()))
            } else {
                (k, v)
            }
        })
        .collect();
    Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
        .env_clear()
        .envs(env)
        .arg("--host-root")
        .arg(root)
        .args(["--timeout", TIMEOUT_SECS])
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .map(Out::from)
        .expect("gpu-doctor runs")
}

fn report(root: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["doctor", "--json"];
    args.extend_from_slice(extra);
    let out = on_node(root, &args, root);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", out.stdout))
}

fn node_root() -> PathBuf {
    fixture_dir(NODE).join("root")
}

/// Whether the machine running the tests has a driver whose NVML answered: then the GPUs are
/// its own, live, which is the point of --host-root.
fn nvml_live(r: &Value) -> bool {
    r["driver"]["source"] == "nvml"
}

#[test]
fn files_are_the_nodes_and_the_gpu_is_asked_in_the_container() {
    let root = node_root();
    let r = report(&root, &[]);
    let source = format!("host-root:{}", root.display());
    assert_eq!(r["tool"]["host_root"], root.display().to_string());
    assert_eq!(r["tool"]["root"], Value::Null, "not a fixture run");
    for probe in r["probes"].as_array().expect("probes") {
        let want = if probe["name"] == "driver" {
            "container"
        } else {
            source.as_str()
        };
        assert_eq!(probe["source"], want, "{probe}");
    }
    // The node's /etc/hostname; /proc/sys/kernel/hostname is the pod's UTS namespace.
    assert_eq!(r["host"]["hostname"], "gpu-node-07");
    assert_eq!(r["host"]["os_version"], "22.04");
    assert_eq!(r["kernel"]["nvidia_version"], "550.54.15");
    if !nvml_live(&r) {
        assert_eq!(r["driver"]["source"], "nvidia-smi");
        assert_eq!(
            r["driver"]["nvidia_smi_path"],
            container_bin().join("nvidia-smi").display().to_string(),
            "the container's nvidia-smi, found on the pod's PATH"
        );
        assert_eq!(r["gpus"][0]["name"], "NVIDIA L4");
        assert_eq!(r["driver"]["version"], "550.54.15");
    }

    // The node's environments, though the pod's PATH and variables name none of them.
    let envs: Vec<(&str, &str, Option<&str>)> = r["python_envs"]
        .as_array()
        .expect("python_envs")
        .iter()
        .map(|e| {
            (
                e["path"].as_str().expect("path"),
                e["kind"].as_str().expect("kind"),
                e["python_version"].as_str(),
            )
        })
        .collect();
    for want in [
        ("/home/ubuntu/venv", "venv", Some("3.10.12")),
        ("/home/alice/miniconda3/envs/ml", "conda", Some("3.11")),
        ("/home/alice/miniconda3", "conda", Some("3.12")),
    ] {
        assert!(envs.contains(&want), "{want:?} not in {envs:?}");
    }
    let torch = |path: &str| {
        r["python_envs"]
            .as_array()
            .expect("envs")
            .iter()
            .find(|e| e["path"] == path)
            .and_then(|e| e["frameworks"].as_array())
            .and_then(|f| f.iter().find(|f| f["name"] == "torch"))
            .map(|t| t["version"].clone())
    };
    assert_eq!(torch("/home/ubuntu/venv"), Some("2.5.1+cu124".into()));
    assert_eq!(
        torch("/home/alice/miniconda3/envs/ml"),
        Some("2.3.1".into())
    );
    let venv = r["python_envs"]
        .as_array()
        .expect("envs")
        .iter()
        .find(|e| e["path"] == "/home/ubuntu/venv")
        .expect("venv");
    assert_eq!(venv["found_via"], serde_json::json!(["host-root-scan"]));

    // The node's programs are not run: python would say 9.9.9, nvcc 99.9.
    assert!(!r.to_string().contains("9.9.9"), "the node's python ran");
    let toolkit = r["toolkits"]
        .as_array()
        .expect("toolkits")
        .iter()
        .find(|t| t["path"] == "/usr/local/cuda-12.1")
        .expect("the node's toolkit");
    assert_eq!(toolkit["version"], "12.1");
    assert_eq!(toolkit["version_source"], "folder-name");
    assert_eq!(r["findings"], serde_json::json!([]), "a healthy node");

    // --deep does not start the node's interpreters either.
    let deep = report(&root, &["--deep"]);
    let runtime = &deep["python_envs"]
        .as_array()
        .expect("envs")
        .iter()
        .find(|e| e["path"] == "/home/ubuntu/venv")
        .expect("venv")["frameworks"][0]["runtime"];
    assert_eq!(runtime["status"], "skipped");
    assert_eq!(
        runtime["detail"],
        "the node's interpreters are not run under --host-root"
    );
}

/// A pod without nvidia-smi of its own (no `utility` capability) uses the node's: the same
/// binary the container toolkit would mount in. The report then says the driver's facts came
/// from the host root.
#[test]
fn the_nodes_nvidia_smi_answers_when_the_container_has_none() {
    let tmp = crate::support::tempdir();
    let root = tmp.path().join("host");
    let copied = Command::new("cp")
        .arg("-a")
        .arg(node_root())
        .arg(&root)
        .status()
        .expect("cp");
    assert!(copied.success());
    for entry in std::fs::read_dir(container_bin()).expect("container/usr/bin") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), root.join("usr/bin").join(entry.file_name())).expect("copy");
    }
    // A PATH without the container's nvidia-smi.
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
        .env_clear()
        .envs(fixture_env(NODE))
        .arg("--host-root")
        .arg(&root)
        .args(["--timeout", TIMEOUT_SECS, "doctor", "--json"])
        .stdin(Stdio::null())
        .output()
        .map(Out::from)
        .expect("gpu-doctor runs");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r: Value = serde_json::from_str(&out.stdout).expect("JSON");
    if nvml_live(&r) {
        return;
    }
    assert_eq!(r["driver"]["nvidia_smi_path"], "/usr/bin/nvidia-smi");
    assert_eq!(r["gpus"][0]["name"], "NVIDIA L4");
    let driver = r["probes"]
        .as_array()
        .expect("probes")
        .iter()
        .find(|p| p["name"] == "driver")
        .expect("driver probe");
    assert_eq!(
        driver["source"],
        format!("host-root:{}", root.canonicalize().expect("root").display())
    );
}

#[test]
fn host_root_refuses_what_it_cannot_do() {
    let tmp = crate::support::tempdir();
    let missing = on_node(&tmp.path().join("nothing"), &["doctor"], tmp.path());
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("--host-root") && missing.stderr.contains("not a folder"),
        "{}",
        missing.stderr
    );
    let both = on_node(
        &node_root(),
        &["--root", tmp.path().to_str().expect("UTF-8"), "doctor"],
        tmp.path(),
    );
    assert_eq!(both.code, 2, "{}", both.stderr);
    assert!(
        both.stderr.contains("cannot be used with"),
        "{}",
        both.stderr
    );
    // A plan run in the pod would change the container, not the node.
    let plan = on_node(&node_root(), &["plan", "--execute", "--yes"], tmp.path());
    assert_eq!(plan.code, 2, "{}", plan.stderr);
    assert!(
        plan.stderr
            .contains("write the plan with -o and run it on the node"),
        "{}",
        plan.stderr
    );
}

/// Recorded on the real H200 (the release binary through the device tool, one run of
/// `doctor --json` plain, with `--host-root /` and with `--host-root` a small tree): with `--host-root`
/// on a small tree standing in for a node, NVML still answered live (the same driver and GPU as
/// the plain run, a temperature read) while every file fact came from the tree: its host name,
/// its one venv (found by the scan, its version from `pyvenv.cfg`), no toolkit. With
/// `--host-root /` the files are the machine's own, and nvcc and python were not run: the
/// toolkit's version comes from libcudart, the system Python's from its site folder.
#[test]
fn on_the_real_h200_nvml_stays_live_while_files_come_from_the_host_root() {
    let read = |text: &str| -> Value { serde_json::from_str(text).expect("JSON") };
    // The plain `doctor --json` of the same run, for comparison.
    let real = read(include_str!(
        "../fixtures/real/h200-host-root-baseline.json"
    ));
    let subtree = read(include_str!("../fixtures/real/h200-host-root-subtree.json"));
    let slash = read(include_str!("../fixtures/real/h200-host-root-slash.json"));
    let schema: Value =
        serde_json::from_str(include_str!("../../schema/report.schema.json")).expect("schema");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    for r in [&subtree, &slash] {
        assert!(validator.is_valid(r), "{r}");
        assert_eq!(r["driver"]["source"], "nvml");
        assert_eq!(r["driver"]["nvml"]["status"], "ok");
        assert_eq!(r["driver"]["version"], real["driver"]["version"]);
        assert_eq!(r["gpus"][0]["name"], real["gpus"][0]["name"]);
        assert_eq!(r["gpus"][0]["uuid"], real["gpus"][0]["uuid"]);
        assert!(r["gpus"][0]["temperature_c"].is_number(), "a live reading");
        let root = r["tool"]["host_root"].as_str().expect("host_root");
        for probe in r["probes"].as_array().expect("probes") {
            let want = if probe["name"] == "driver" {
                "container".to_string()
            } else {
                format!("host-root:{root}")
            };
            assert_eq!(probe["source"], want.as_str(), "{probe}");
        }
    }
    assert_eq!(subtree["host"]["hostname"], "subtree-node");
    assert_eq!(
        subtree["python_envs"],
        serde_json::json!([{
            "path": "/home/alice/venv", "kind": "venv", "python_version": "3.12.3",
            "interpreter": null, "site_packages": ["/home/alice/venv/lib/python3.12/site-packages"],
            "found_via": ["host-root-scan"], "frameworks": [], "nvidia_wheels": []
        }])
    );
    assert_eq!(subtree["toolkits"], serde_json::json!([]));
    // `/`: the same machine, nothing run.
    assert_eq!(slash["tool"]["host_root"], "/");
    assert_eq!(real["toolkits"][0]["version_source"], "nvcc");
    assert_eq!(slash["toolkits"][0]["path"], real["toolkits"][0]["path"]);
    assert_eq!(slash["toolkits"][0]["version_source"], "libcudart");
    let usr = |r: &Value| {
        r["python_envs"]
            .as_array()
            .expect("envs")
            .iter()
            .find(|e| e["path"] == "/usr")
            .map(|e| e["python_version"].clone())
    };
    assert_eq!(usr(&real), Some("3.12.3".into()), "asked the interpreter");
    assert_eq!(usr(&slash), Some("3.12".into()), "read from lib/python3.12");
}

//! Hostile machines, one defect at a time (the mutation test in `mutants.rs` mixes them at
//! random): bytes that are not UTF-8, a FIFO among reports, a config that links out of the
//! root, hanging compilers, `TERM=dumb`, `-o` at a device.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{FileTypeExt, PermissionsExt, symlink};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{Out, copy_tree, fixture_dir, fixture_env, mkfifo, on_fixture};

fn gpu_doctor() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"));
    c.env_clear().stdin(Stdio::null());
    c
}

#[test]
fn one_odd_byte_in_ld_library_path_keeps_the_rest_of_it() {
    let name = "ld-library-path-old-cudnn";
    let mut odd = b"/opt/\xff\x1b[31m/lib:".to_vec();
    odd.extend_from_slice(b"/opt/cudnn-9.0/lib");
    let out = gpu_doctor()
        .envs(
            fixture_env(name)
                .into_iter()
                .filter(|(k, _)| k != "LD_LIBRARY_PATH"),
        )
        .env("LD_LIBRARY_PATH", OsString::from_vec(odd))
        .arg("--root")
        .arg(fixture_dir(name).join("root"))
        .args(["--timeout", "2", "doctor", "--json"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["id"].as_str())
        .collect();
    assert!(ids.contains(&"library-path-shadowing"), "{ids:?}");
    let shown = report["environment"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "LD_LIBRARY_PATH")
        .map(|v| v["value"].as_str().unwrap().to_string())
        .unwrap();
    assert_eq!(shown, "/opt/\\xff\u{1b}[31m/lib:/opt/cudnn-9.0/lib");
}

#[test]
fn the_config_under_root_is_read_inside_the_root_and_a_broken_default_is_a_warning() {
    let dir = crate::support::tempdir();
    let root = dir.path().join("root");
    copy_tree(&fixture_dir("no-gpu").join("root"), &root);
    let canary = dir.path().join("secret");
    std::fs::write(&canary, "CANARY-outside = [\n").unwrap();
    let conf_dir = root.join("home/u/.config/gpu-doctor");
    std::fs::create_dir_all(&conf_dir).unwrap();
    // An absolute link to the host's file: inside the root it names root/<that path>.
    symlink(&canary, conf_dir.join("config.toml")).unwrap();
    let run = |args: &[&str]| -> Out {
        gpu_doctor()
            .envs(fixture_env("no-gpu"))
            .env("HOME", "/home/u")
            .arg("--root")
            .arg(&root)
            .args(args)
            .output()
            .unwrap()
            .into()
    };
    let out = run(&["doctor", "--json"]);
    assert!(matches!(out.code, 0 | 1), "{}", out.stderr);
    assert!(!out.stderr.contains("CANARY"), "{}", out.stderr);
    // A FIFO as the default config: a warning, not a hang and not exit 2.
    std::fs::remove_file(conf_dir.join("config.toml")).unwrap();
    mkfifo(&conf_dir.join("config.toml"));
    let started = Instant::now();
    let out = run(&["doctor", "--json"]);
    // A ceiling for a hang (a FIFO nobody writes blocks forever), not a benchmark.
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(matches!(out.code, 0 | 1), "{}", out.stderr);
    assert!(
        out.stderr.contains("warning: config file"),
        "{}",
        out.stderr
    );
    // Named, it stays an error.
    let fifo = conf_dir.join("config.toml");
    let out = run(&["--config", fifo.to_str().unwrap(), "doctor", "--json"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
}

#[test]
fn report_merge_passes_over_a_fifo_and_with_nothing_readable_exits_3() {
    let dir = crate::support::tempdir();
    mkfifo(&dir.path().join("node1.json"));
    std::fs::write(dir.path().join("node2.json"), "not json").unwrap();
    let started = Instant::now();
    let out: Out = gpu_doctor()
        .args(["report", "merge"])
        .arg(dir.path())
        .output()
        .unwrap()
        .into();
    // A ceiling for a hang (a FIFO nobody writes blocks forever), not a benchmark.
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
    assert!(!out.stdout.contains("healthy"), "{}", out.stdout);
}

#[test]
fn hanging_compilers_of_several_toolkits_cost_one_timeout() {
    let dir = crate::support::tempdir();
    let root = dir.path().join("root");
    copy_tree(&fixture_dir("several-toolkits").join("root"), &root);
    let pids = dir.path().join("pids");
    let mut hung = 0;
    for entry in std::fs::read_dir(root.join("usr/local")).unwrap() {
        let toolkit = entry.unwrap().path();
        let nvcc = toolkit.join("bin/nvcc");
        if !nvcc.is_file() {
            continue;
        }
        // Without version files the version must come from nvcc.
        let _ = std::fs::remove_file(toolkit.join("version.json"));
        let _ = std::fs::remove_file(toolkit.join("version.txt"));
        std::fs::write(
            &nvcc,
            format!(
                "#!/bin/sh\nsetsid sh -c 'echo $$ >> {p}; exec sleep 60' &\necho $$ >> {p}\nexec sleep 60\n",
                p = pids.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o755)).unwrap();
        hung += 1;
    }
    assert!(hung >= 3, "the fixture has {hung} nvcc");
    let started = Instant::now();
    let out: Out = gpu_doctor()
        .envs(fixture_env("several-toolkits"))
        .arg("--root")
        .arg(&root)
        .args(["--timeout", "1", "doctor", "--json"])
        .output()
        .unwrap()
        .into();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(matches!(out.code, 0 | 1), "{}", out.stderr);
    let pids = std::fs::read_to_string(&pids).unwrap();
    for pid in pids.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let running = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'));
        assert!(!running, "process {pid} outlived gpu-doctor: {stat}");
    }
}

#[test]
fn the_app_on_a_dumb_terminal_prints_the_text_report() {
    let out: Out = on_fixture::<&str>("no-gpu", &[("TERM", "dumb")], &["tui"], None).into();
    assert!(matches!(out.code, 0 | 1), "{}", out.stderr);
    assert!(out.stderr.contains("TERM=dumb"), "{}", out.stderr);
    assert!(!out.stdout.is_empty());
}

#[test]
fn output_to_a_device_writes_into_it() {
    let out: Out = on_fixture(
        "no-gpu",
        &[],
        &["doctor", "--json", "-o", "/dev/null"],
        None,
    )
    .into();
    assert!(matches!(out.code, 0 | 1), "{}", out.stderr);
    let meta = std::fs::symlink_metadata("/dev/null").unwrap();
    assert!(meta.file_type().is_char_device());
}

/// In a container whose session leader is outside its PID namespace, getsid(2) and getpgrp(2)
/// answer 0. The orphan sweep used to turn that 0 into a process id and panic (CI's container
/// did exactly this). Re-created here with `unshare`; where that needs privileges we lack, the
/// test says so and passes.
#[test]
fn a_pid_namespace_without_our_session_leader_is_not_a_crash() {
    let probe = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .stdin(Stdio::null())
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: `unshare --pid --fork --mount-proc` is not allowed here");
        return;
    }
    let out: Out = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc"])
        .arg(env!("CARGO_BIN_EXE_gpu-doctor"))
        .arg("--root")
        .arg(fixture_dir("h200").join("root"))
        .args(["doctor", "--json"])
        .env_clear()
        .envs(fixture_env("h200"))
        .stdin(Stdio::null())
        .output()
        .expect("unshare runs")
        .into();
    assert!(
        matches!(out.code, 0 | 1) && !out.stderr.contains("panicked"),
        "exit {}\nstderr:\n{}",
        out.code,
        out.stderr
    );
    assert!(out.stdout.contains("\"gpus\""), "{}", out.stdout);
}

/// torch's own libraries, read for the symbols an extension needs: a FIFO, a 10 GB sparse
/// file and a link loop where `libc10.so` and `libtorch_cpu.so` should be are facts, not hangs;
/// with them unread nothing is claimed about the extension's symbols.
#[test]
fn torch_libraries_that_are_a_fifo_a_sparse_file_or_a_link_loop_are_not_judged() {
    let name = "flash-attn-2741-cxx11abi-true-on-torch-old-abi";
    let dir = crate::support::tempdir();
    let root = dir.path().join("root");
    copy_tree(&fixture_dir(name).join("root"), &root);
    let lib = root.join("home/ubuntu/venv/lib/python3.10/site-packages/torch/lib");
    std::fs::remove_file(lib.join("libc10.so")).unwrap();
    mkfifo(&lib.join("libc10.so"));
    std::fs::remove_file(lib.join("libtorch_cpu.so")).unwrap();
    let big = std::fs::File::create(lib.join("libtorch_cpu.so")).unwrap();
    big.set_len(10 << 30).unwrap();
    std::fs::remove_file(lib.join("libtorch_python.so")).unwrap();
    symlink("libtorch_loop.so", lib.join("libtorch_python.so")).unwrap();
    symlink("libtorch_python.so", lib.join("libtorch_loop.so")).unwrap();
    // The package's own module (its fatbin and symbols are read too): a 10 GB sparse file.
    let module = lib.join("../../flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so");
    std::fs::remove_file(&module).unwrap();
    std::fs::File::create(&module)
        .unwrap()
        .set_len(10 << 30)
        .unwrap();
    let out = gpu_doctor()
        .envs(fixture_env(name))
        .arg("--root")
        .arg(&root)
        .args(["--timeout", "2", "doctor", "--json"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ext = &report["python_envs"][0]["extensions"][0];
    assert_eq!(ext["name"], "flash-attn", "{report}");
    assert!(ext.get("torch_symbols_missing").is_none(), "{ext}");
    let ids: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["id"].as_str())
        .collect();
    assert!(!ids.contains(&"extension-torch-mismatch"), "{ids:?}");
}

/// CDI specs are read from `/etc/cdi` and `/var/run/cdi`: a FIFO named like a spec, a 10 GB
/// sparse spec, a link loop and a link out of the root are facts, not hangs, and the stale
/// spec beside them is still judged; nothing outside the root is looked at.
#[test]
fn cdi_spec_folders_with_a_fifo_a_sparse_giant_and_link_loops() {
    let name = "held-out-podman-ubuntu2504-rtx3050-stale-cdi";
    let dir = crate::support::tempdir();
    let root = dir.path().join("root");
    copy_tree(&fixture_dir(name).join("root"), &root);
    let cdi = root.join("etc/cdi");
    mkfifo(&cdi.join("a-fifo.yaml"));
    let giant = std::fs::File::create(cdi.join("b-giant.yaml")).unwrap();
    giant.set_len(10 * 1024 * 1024 * 1024).unwrap();
    drop(giant);
    symlink("c-loop.yaml", cdi.join("c-loop.yaml")).unwrap();
    let outside = dir.path().join("outside.yaml");
    std::fs::write(
        &outside,
        "kind: nvidia.com/gpu\n  hostPath: /CANARY-outside\n",
    )
    .unwrap();
    symlink(&outside, cdi.join("d-out.yaml")).unwrap();
    let run_dir = root.join("var/run/cdi");
    std::fs::create_dir_all(&run_dir).unwrap();
    symlink("/var/run/cdi", run_dir.join("e-dir-loop.json")).unwrap();
    let out: Out = gpu_doctor()
        .envs(fixture_env(name))
        .arg("--root")
        .arg(&root)
        .args(["--timeout", "10", "doctor", "--json"])
        .output()
        .unwrap()
        .into();
    assert!(matches!(out.code, 0 | 1), "{}", out.stderr);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let text = report.to_string();
    assert!(!text.contains("CANARY-outside"), "read outside the root");
    let ids: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["id"].as_str())
        .collect();
    assert!(ids.contains(&"cdi-spec-stale"), "{ids:?}");
}

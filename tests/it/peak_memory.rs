//! #40: memory bounded by bytes, measured on the largest input of each kind gpu-doctor
//! accepts: peak resident memory (`VmHWM` of the running child) under 200 MB. The other
//! kinds are measured beside their own tests: 30,000 GPUs from nvidia-smi
//! (`bounded.rs`), 100 sparse 8 MiB dpkg lists (`linkmap.rs`), a 30 MiB log for `explain`
//! (`explain.rs`), an NVML reporting 2^31 - 1 GPUs (`bounded.rs`), and the doubling tests'
//! larger sizes (`doubling.rs`).

use std::process::Command;

use serde_json::Value;

use crate::doubling::{RSS_LIMIT_KB, measure, on};
use crate::support::{copy_tree, fixture_dir};

/// As many KFD nodes as a folder listing is read (20,000), each a GPU: the report keeps the
/// first 1,024 GPUs and says so.
#[test]
fn the_most_kfd_nodes_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    copy_tree(&fixture_dir("amd-rocm").join("root"), &root);
    let nodes = root.join("sys/class/kfd/kfd/topology/nodes");
    let template = std::fs::read_to_string(nodes.join("1/properties")).unwrap();
    for i in 2..20_001u32 {
        let node = nodes.join(i.to_string());
        std::fs::create_dir_all(&node).unwrap();
        let location = (1 + (i >> 5) % 127) << 8 | (i & 31) << 3;
        std::fs::write(
            node.join("properties"),
            template
                .replace("location_id 40", &format!("location_id {location}"))
                .replace("domain 0", &format!("domain {}", i >> 12)),
        )
        .unwrap();
    }
    let m = measure(on("amd-rocm", &root, &["doctor", "--json"]));
    eprintln!(
        "20,000 KFD nodes: peak {} kB, {:.2} s of CPU",
        m.peak_kb, m.cpu
    );
    assert!(matches!(m.out.code, 0 | 1), "{}", m.out.stderr);
    assert!(m.peak_kb < RSS_LIMIT_KB, "peak memory {} kB", m.peak_kb);
    let r: Value = serde_json::from_str(&m.out.stdout).unwrap();
    assert_eq!(r["gpus"].as_array().unwrap().len(), 1024);
}

/// The largest report `report merge` reads (16 MiB), of nothing but empty GPUs: 64 MiB of them
/// took 2.6 GB when the file was parsed whole into a JSON value.
#[test]
fn the_largest_report_merge_reads() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("node.json");
    let gpus = vec!["{}"; (16 * 1024 * 1024 - 64) / 3].join(",");
    std::fs::write(&file, format!("{{\"schema_version\":1,\"gpus\":[{gpus}]}}")).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"));
    command
        .env_clear()
        .args(["report", "merge", "--json"])
        .arg(&file);
    let m = measure(command);
    eprintln!(
        "a 16 MiB report of empty GPUs: peak {} kB, {:.2} s of CPU",
        m.peak_kb, m.cpu
    );
    assert_eq!(m.out.code, 0, "{}", m.out.stderr);
    assert!(m.peak_kb < RSS_LIMIT_KB, "peak memory {} kB", m.peak_kb);
    assert!(
        m.out.stderr.contains("list entries past the caps"),
        "{}",
        m.out.stderr
    );
    let f: Value = serde_json::from_str(&m.out.stdout).unwrap();
    assert_eq!(f["counts"]["nodes"], 1);
}

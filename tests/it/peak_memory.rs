//! #40: memory bounded by bytes, measured on the largest input of each kind gpu-doctor
//! accepts: peak resident memory (`VmHWM` of the running child) under 200 MB. The other
//! kinds are measured beside their own tests: 30,000 GPUs from nvidia-smi
//! (`bounded.rs`), 100 sparse 8 MiB dpkg lists and 76 MiB of library paths in dpkg lists
//! (`linkmap.rs`), a 30 MiB log for `explain`
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
    let dir = crate::support::tempdir();
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
    let dir = crate::support::tempdir();
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

/// As many dpkg lists full of library paths as the owner search reads (127 of just under 2 MiB,
/// 254 MiB of paths, all sorted before the real owner's list): each is searched while it is
/// read, so memory stays that of one list, and the owner's list, read last, still answers.
#[test]
fn the_most_dpkg_list_bytes_read() {
    use crate::linkmap::{doctor_watched, load, reads, tf_framework, tf_machine};
    let m = tf_machine();
    tf_framework(&m, "libcudart.so.12");
    let info = "/var/lib/dpkg/info";
    m.write(
        &format!("{info}/libcudnn8:amd64.list"),
        "/.\n/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu/libcudnn.so.8\n",
    );
    let mut base = String::new();
    let mut j = 0;
    while base.len() < 2 * 1024 * 1024 - 128 {
        base.push_str(&format!(
            "/usr/lib/x86_64-linux-gnu/libcudnn_LIST_{j:07}.so.8\n"
        ));
        j += 1;
    }
    for i in 0..127 {
        m.write(
            &format!("{info}/libcudnn8-flood-{i:03}.list"),
            &base.replace("LIST", &format!("{i:04}")),
        );
    }
    let (r, peak_kb) = doctor_watched(&m);
    eprintln!("127 dpkg lists, 254 MiB of library paths: peak {peak_kb} kB");
    let cudnn = load(&r, "tensorflow", "libcudnn.so.8");
    assert_eq!(cudnn["owner"]["package"], "libcudnn8", "{cudnn}");
    assert!(!reads(&r).contains("library owners"), "{}", reads(&r));
    assert!(peak_kb < RSS_LIMIT_KB, "peak memory {peak_kb} kB");
}

//! Reports recorded on the real H200 machine (`tests/fixtures/real/`, made with the release
//! binary through the device tool, without `--root`) checked against the raw captures of the
//! same machine (`tests/data/h200/`): what NVML told gpu-doctor must be what nvidia-smi, /proc
//! and the files said.

use serde_json::Value;

use crate::support::{find, framework, strings};

fn real_report() -> Value {
    let text = include_str!("../fixtures/real/h200-doctor.json");
    serde_json::from_str(text).expect("the recorded report is JSON")
}

/// The value of `<tag>...</tag>` in the captured `nvidia-smi -q -x`.
fn smi_xml(tag: &str) -> String {
    let xml = include_str!("../data/h200/smi_x.txt");
    let open = format!("<{tag}>");
    let start = xml.find(&open).expect(tag) + open.len();
    let end = xml[start..].find('<').expect(tag) + start;
    xml[start..end].trim().to_string()
}

#[test]
fn driver_and_gpu_agree_with_nvidia_smi_captures() {
    let r = real_report();
    assert_eq!(r["schema_version"], 1);
    assert_eq!(r["driver"]["source"], "nvml");
    assert_eq!(r["driver"]["version"], smi_xml("driver_version"));
    assert_eq!(r["driver"]["version"], "580.159.04");
    assert_eq!(r["driver"]["cuda_version"], smi_xml("cuda_version"));
    assert_eq!(r["driver"]["cuda_version"], "13.0");
    assert_eq!(
        r["driver"]["libcuda_cuda_version"], "13.0",
        "cuDriverGetVersion 13000 (nvcc_test.txt)"
    );
    let gpus = r["gpus"].as_array().expect("gpus");
    assert_eq!(gpus.len(), 1);
    let g = &gpus[0];
    assert_eq!(g["name"], smi_xml("product_name"));
    assert_eq!(g["name"], "NVIDIA H200");
    assert_eq!(g["pci_device_id"], "0x2335", "233510DE in the XML");
    assert_eq!(
        g["compute_capability"], "9.0",
        "compute_cap column of smi_csv.txt"
    );
    assert_eq!(
        g["memory_total_mib"], 143_771,
        "memory.total [MiB] of smi_csv.txt"
    );
    assert_eq!(g["pcie_gen_max"], 5);
    assert_eq!(g["pcie_width_max"], 16);
    assert_eq!(r["kernel"]["nvidia_version"], "580.159.04", "proc.txt");
    assert_eq!(
        r["kernel"]["nvidia_open"], true,
        "Open Kernel Module banner"
    );
}

#[test]
fn toolkit_libraries_and_frameworks_agree_with_file_captures() {
    let r = real_report();
    let toolkit = find(&r["toolkits"], "path", "/usr/local/cuda-13.0");
    assert_eq!(
        toolkit["version"], "13.0.88",
        "nvcc V13.0.88 in toolkit.txt"
    );
    let cudnn = strings(&r["libraries"]["cudnn"], "version");
    assert!(
        cudnn.contains(&"9.14.0".to_string()),
        "system cuDNN (cudnn_h.txt): {cudnn:?}"
    );
    assert!(
        cudnn.contains(&"9.19.0".to_string()),
        "pip cuDNN (cudnn_h.txt): {cudnn:?}"
    );
    let nccl = strings(&r["libraries"]["nccl"], "version");
    assert!(
        nccl.contains(&"2.28.3".to_string()) && nccl.contains(&"2.28.9".to_string()),
        "{nccl:?}"
    );
    let venv = "/opt/torch/.venv";
    let torch = framework(&r, venv, "torch");
    assert_eq!(torch["version"], "2.11.0+cu130");
    assert_eq!(torch["cuda"], "13.0");
    assert_eq!(framework(&r, venv, "jax")["version"], "0.11.2");
    assert_eq!(framework(&r, venv, "cupy")["version"], "14.2.0");
    // A healthy machine: nothing a maintainer would call wrong.
    let serious: Vec<&Value> = r["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["severity"] != "info")
        .collect();
    assert!(serious.is_empty(), "{serious:?}");
}

/// `gpu-doctor smoke --bench --json` on the real H200: every check passed, and the figures are
/// in the range the reference measurements there say (README of tests/data/h200: torch bf16
/// 756 TFLOP/s, fp32 with TF32 off 50.5, 1 GiB copy 4253 GB/s, pinned H2D 54.8 GB/s).
#[test]
fn smoke_on_the_real_h200_passed_with_expected_figures() {
    let r: Value =
        serde_json::from_str(include_str!("../fixtures/real/h200-smoke.json")).expect("JSON");
    let smoke = &r["smoke"];
    assert_eq!(smoke["status"], "passed");
    assert_eq!(smoke["driver_api_version"], "13.0");
    let d = &smoke["devices"][0];
    assert_eq!(d["name"], "NVIDIA H200");
    assert_eq!(d["compute_capability"], "9.0");
    assert_eq!(d["sm_count"], 132);
    assert_eq!(d["matmul"]["passed"], true);
    assert!(d["matmul"]["max_rel_error"].as_f64().expect("error") < 1e-5);
    assert_eq!(d["memory"]["errors"], 0);
    let f = |v: &Value| v.as_f64().expect("number");
    let bw = &d["bandwidth"];
    assert!(f(&bw["device_to_device_gbs"]) > 0.95 * 4253.0, "{bw}");
    assert!(f(&bw["host_to_device_gbs"]) > 0.9 * 54.8, "{bw}");
    let t = &d["throughput"];
    assert!(f(&t["cublaslt_bf16_tflops"]) >= 756.0, "{t}");
    assert!(f(&t["ptx_fp32_tflops"]) >= 0.5 * 50.5, "{t}");
    assert_eq!(
        t["expected_bf16_tflops"], 989.0,
        "H200 SXM dense bf16 from gpus.toml"
    );
    assert!(r["findings"].as_array().expect("findings").is_empty());
}

/// The two-GPU machine (nvidia-h200-x2): both GPUs pass, peer access both ways, every
/// framework sees both, and the 2-process NCCL all-reduce worked.
#[test]
fn two_gpu_machine_smoke_peer_access_and_allreduce() {
    let smoke: Value =
        serde_json::from_str(include_str!("../fixtures/real/x2-smoke.json")).expect("JSON");
    let run = &smoke["smoke"];
    assert_eq!(run["status"], "passed");
    assert_eq!(run["devices"].as_array().expect("devices").len(), 2);
    let peers = run["peer_access"].as_array().expect("peer_access");
    assert_eq!(peers.len(), 2);
    assert!(peers.iter().all(|p| p["can_access"] == true), "{peers:?}");
    let frameworks: Value =
        serde_json::from_str(include_str!("../fixtures/real/x2-smoke-frameworks.json"))
            .expect("JSON");
    let torch = crate::support::framework(&frameworks, "/opt/torch/.venv", "torch");
    assert_eq!(torch["runtime"]["device_count"], 2);
    let allreduce = &torch["runtime"]["smoke"]["allreduce"];
    assert_eq!(allreduce["passed"], true, "{allreduce}");
    assert_eq!(allreduce["world_size"], 2);
    for name in ["torch", "jax", "cupy"] {
        let rt = &crate::support::framework(&frameworks, "/opt/torch/.venv", name)["runtime"];
        let matmuls = rt["smoke"]["matmuls"].as_array().expect("matmuls");
        assert_eq!(matmuls.len(), 2, "{name}");
        assert!(
            matmuls.iter().all(|m| m["passed"] == true),
            "{name}: {matmuls:?}"
        );
    }
}

/// The forward-compatibility libcuda beside the toolkit (`libs.txt` lists
/// `/usr/local/cuda-13.0/compat/libcuda.so.580.95.05`) is listed by the live run after the
/// loader's own copies, as "cuda-compat", with the version its file name carries; every copy the
/// loader would open is the 580.159.04 driver that `/proc` shows loaded.
#[test]
fn the_compat_libcuda_the_files_show_is_listed_off_the_loader_path() {
    let r = real_report();
    let libs = r["driver_libraries"].as_array().expect("driver_libraries");
    let capture = include_str!("../data/h200/libs.txt");
    let compat: Vec<&serde_json::Value> = libs
        .iter()
        .filter(|l| l["origin"] == "cuda-compat")
        .collect();
    assert_eq!(compat.len(), 1, "{libs:#?}");
    let resolved = compat[0]["resolved"].as_str().expect("resolved");
    assert!(
        capture.lines().any(|l| l.trim() == resolved),
        "{resolved} in libs.txt"
    );
    assert_eq!(compat[0]["version"], "580.95.05");
    assert_eq!(compat[0]["kind"], "compat");
    let loader: Vec<&serde_json::Value> = libs
        .iter()
        .filter(|l| l["origin"] != "cuda-compat")
        .collect();
    assert!(!loader.is_empty());
    for l in &loader {
        assert_eq!(l["version"], r["kernel"]["nvidia_version"], "{l}");
        assert!(l["rank"].as_u64() < compat[0]["rank"].as_u64(), "{l}");
    }
}

/// The H200's fabric as NVML and nvidia-smi report it (`real/h200-fabric`, release binary on
/// the device): one GPU outside any NVSwitch fabric. NVML answers success with state 0 ("not
/// supported"), nvidia-smi prints N/A, and the doctor's NVML child, preferred over nvidia-smi
/// when it answers, makes that no fabric at all: nothing to say about a fabric manager.
#[test]
fn the_h200_is_in_no_fabric_by_nvml_and_nvidia_smi() {
    let raw = include_str!("../fixtures/real/h200-fabric/nvml-fabric-raw.txt");
    assert!(
        raw.contains("nvmlDeviceGetGpuFabricInfoV sizeof 40 rc 0 Success\n  state 0 "),
        "{raw}"
    );
    let commands = include_str!("../fixtures/real/h200-fabric/commands.txt");
    assert!(commands.contains("<state>N/A</state>"), "{commands}");
    let probe: Value =
        serde_json::from_str(include_str!("../fixtures/real/h200-fabric/gpu-probe.json"))
            .expect("JSON");
    assert_eq!(probe["nvml"]["status"], "ok");
    assert_eq!(probe["gpus"][0]["source"], "nvml");
    assert_eq!(probe["gpus"][0]["fabric"], Value::Null);
    let r: Value = serde_json::from_str(include_str!("../fixtures/real/h200-fabric/doctor.json"))
        .expect("JSON");
    assert_eq!(r["gpus"][0]["fabric"], Value::Null);
    let ids: Vec<&str> = r["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["id"].as_str())
        .collect();
    assert!(!ids.iter().any(|i| i.starts_with("fabric")), "{ids:?}");
}

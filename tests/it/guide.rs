//! `gpu-doctor estimate` and `advise` run as a user runs them, on fixture machines (`--root`),
//! and the tuning findings' negative cases: the same fixture machine with the setting fixed.
//!
//! The numbers are the worked examples of `src/guide/memory/`, checked by hand there.

use std::process::Output;

use serde_json::Value;

use crate::support::{finding_ids, on_fixture};

/// Runs gpu-doctor on a fixture with its environment plus `extra` variables.
fn run(fixture: &str, extra: &[(&str, &str)], args: &[&str]) -> Output {
    on_fixture(fixture, extra, args, None)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs and parses JSON, asserting exit 0.
fn json(fixture: &str, args: &[&str]) -> Value {
    let out = run(fixture, &[], args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e})"))
}

const BERT_LARGE: [&str; 14] = [
    "estimate",
    "--params",
    "340M",
    "--train",
    "--batch",
    "8",
    "--seq-len",
    "512",
    "--layers",
    "24",
    "--hidden",
    "1024",
    "--heads",
    "16",
];

#[test]
fn estimate_bert_large_on_the_h200() {
    let mut args = BERT_LARGE.to_vec();
    args.push("--json");
    let e = json("h200", &args);
    // 5,440,000,000 (16 B/param) + 7,449,083,904 activations + 536,870,912 context.
    assert_eq!(e["total_bytes"], 13_425_954_816_u64);
    let ids: Vec<&str> = e["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "weights",
            "gradients",
            "master_weights",
            "optimizer_states",
            "activations",
            "cuda_context"
        ]
    );
    assert_eq!(e["items"][4]["bytes"], 7_449_083_904_u64);
    assert_eq!(e["items"][4]["basis"], "published");
    assert_eq!(e["items"][5]["basis"], "rule-of-thumb");
    assert_eq!(
        e["simple_rule"]["rule"],
        "params × 2 + activations × 4 + optimizer × 2"
    );
    assert_eq!(e["simple_rule"]["bytes"], 16_938_167_808_u64);
    // The H200 reports 143771 MiB = 150,754,820,096 bytes: 137,328,865,280 to spare.
    let gpu = &e["machine"]["gpus"][0];
    assert_eq!(gpu["gpu"], "GPU 0 (NVIDIA H200)");
    assert_eq!(gpu["capacity_bytes"], 150_754_820_096_u64);
    assert_eq!(gpu["fits"], true);
    assert_eq!(gpu["headroom_bytes"], 137_328_865_280_u64);
    assert_eq!(gpu["capacity_from"], "driver");
    // 13.43e9 bytes: the 16 GB cards (16e9 on paper) are the smallest that hold it.
    let smallest = e["smallest_listed"].as_array().unwrap();
    assert_eq!(smallest.len(), 5);
    assert!(
        smallest
            .iter()
            .all(|f| f["capacity_bytes"] == 16_000_000_000_u64)
    );
    assert_eq!(e["spread"], Value::Null);

    // The text says the same, with the rules of thumb labelled.
    let text = stdout(&run("h200", &[], &BERT_LARGE));
    for expected in [
        "training a 340M model (340,000,000 parameters), BF16 mixed precision, AdamW",
        "optimizer states (AdamW)                2.53 GiB",
        "total                                  12.50 GiB",
        "[rule of thumb]",
        "Korthikanti et al. 2022",
        "\"params × 2 + activations × 4 + optimizer × 2\": 16.94 GB (15.77 GiB)",
        "6 bytes per parameter (2.04 GB for 340M parameters)",
        "16 bytes per parameter (5.44 GB)",
        "GPU 0 (NVIDIA H200)                 140.40 GiB  fits, 127.90 GiB free",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

#[test]
fn estimate_llama_7b_inference_on_a_t4_and_an_rtx_4090() {
    let args = [
        "estimate",
        "--params",
        "7B",
        "--infer",
        "--precision",
        "fp16",
        "--seq-len",
        "4096",
        "--layers",
        "32",
        "--hidden",
        "4096",
        "--json",
    ];
    // 14,000,000,000 weights + 2 GiB KV cache + 512 MiB context = 16,684,354,560 bytes.
    let t4 = json("t4-cuda-launch-blocking", &args);
    assert_eq!(t4["total_bytes"], 16_684_354_560_u64);
    // 15360 MiB = 16,106,127,360 bytes: 578,227,200 short.
    let gpu = &t4["machine"]["gpus"][0];
    assert_eq!(gpu["fits"], false);
    assert_eq!(gpu["headroom_bytes"], -578_227_200_i64);
    // 24564 MiB = 25,757,220,864 bytes: 9,072,866,304 to spare.
    let rtx = json("rtx4090-alloc-conf-typo", &args);
    assert_eq!(rtx["machine"]["gpus"][0]["fits"], true);
    assert_eq!(
        rtx["machine"]["gpus"][0]["headroom_bytes"],
        9_072_866_304_u64
    );
    let smallest: Vec<&str> = rtx["smallest_listed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["gpu"].as_str().unwrap())
        .collect();
    assert_eq!(
        &smallest[..3],
        [
            "A10 24 GB",
            "GeForce RTX 3090 24 GB",
            "GeForce RTX 4090 24 GB"
        ]
    );
}

#[test]
fn estimate_refuses_what_it_cannot_estimate_with_exit_2() {
    for args in [
        // Quantised training is not modelled.
        &[
            "estimate",
            "--params",
            "7B",
            "--train",
            "--precision",
            "int4",
        ][..],
        // ZeRO is for training, and needs GPUs to divide across.
        &[
            "estimate", "--params", "7B", "--infer", "--zero", "3", "--gpus", "8",
        ],
        &["estimate", "--params", "7B", "--zero", "2"],
        // Usage errors clap catches: a bad size, a shape without its width, a bad stage.
        &["estimate", "--params", "seven"],
        &["estimate", "--params", "7B", "--layers", "32"],
        &["estimate", "--params", "7B", "--zero", "4", "--gpus", "8"],
        &["estimate", "--params", "7B", "--train", "--infer"],
    ] {
        let out = run("h200", &[], args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stdout(&out));
        assert!(!out.stderr.is_empty(), "{args:?} says why");
    }
}

#[test]
fn estimate_70b_training_needs_several_gpus() {
    let e = json("h200", &["estimate", "--params", "70B", "--json"]);
    assert_eq!(e["smallest_listed"], serde_json::json!([]));
    assert_eq!(e["spread"]["gpu"], "GB300 279 GB");
    assert_eq!(e["spread"]["count"], 5);
    assert_eq!(e["machine"]["gpus"][0]["fits"], false);
    // ZeRO-3 over 8 GPUs: 1.12e12 / 8 = 140,000,000,000 + 536,870,912 per GPU; the H200 holds it.
    let z = json(
        "h200",
        &[
            "estimate", "--params", "70B", "--zero", "3", "--gpus", "8", "--json",
        ],
    );
    assert_eq!(z["total_bytes"], 140_536_870_912_u64);
    assert_eq!(z["machine"]["gpus"][0]["fits"], true);
}

/// What `advise --json` says about GPU 0 of a fixture machine.
fn advise_gpu0(fixture: &str, extra: &[&str]) -> (Value, Value) {
    let mut args = vec!["advise", "--json"];
    args.extend_from_slice(extra);
    let a = json(fixture, &args);
    let gpu = a["machine"][0].clone();
    (a, gpu)
}

fn formats(gpu: &Value) -> Vec<String> {
    gpu["formats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f["format"].as_str().unwrap(),
                f["tensor_cores"].as_str().unwrap()
            )
        })
        .collect()
}

fn lines(gpu: &Value, key: &str) -> String {
    gpu[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn advise_on_a_t4() {
    let (a, gpu) = advise_gpu0("t4-cuda-launch-blocking", &["--train"]);
    assert_eq!(gpu["table_row"], "Tesla T4");
    assert_eq!(formats(&gpu), ["FP16 yes", "BF16 no", "TF32 no", "FP8 no"]);
    let cannot = lines(&gpu, "cannot");
    assert!(
        cannot.contains("no BF16 tensor cores on a Tesla T4 (cc 7.5; BF16 needs cc 8.0): use FP16 with loss scaling"),
        "{cannot}"
    );
    assert!(lines(&gpu, "can").contains("torch.amp.GradScaler"));
    assert_eq!(a["power"]["gpu_tdp_sum_w"], 70);
    assert_eq!(a["power"]["psu_rule_of_thumb_w"], 105);
    assert_eq!(a["power"]["driver_power_limit_sum_w"], 70.0);
    assert_eq!(a["power"]["server"], true);
}

#[test]
fn advise_on_an_a100() {
    let (a, gpu) = advise_gpu0("a100-persistence-off", &["--infer", "--precision", "fp8"]);
    assert_eq!(gpu["table_row"], "A100 40GB PCIe");
    assert_eq!(
        formats(&gpu),
        ["FP16 yes", "BF16 yes", "TF32 yes", "FP8 no"]
    );
    assert!(lines(&gpu, "can").contains("set_float32_matmul_precision"));
    assert!(lines(&gpu, "cannot").contains("no FP8 tensor cores"));
    // The FP8 column of the table: the L4 has 242 dense TFLOP/s, the A100 rows none.
    let card = |name: &str| {
        a["cards"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .clone()
    };
    assert_eq!(card("L4")["throughput"][0]["tflops"], 242.0);
    assert_eq!(card("L4")["tensor_cores"], "yes");
    assert_eq!(
        card("A100 40GB PCIe")["throughput"][0]["tflops"],
        Value::Null
    );
    assert_eq!(card("A100 40GB PCIe")["tensor_cores"], "no");
    assert_eq!(a["power"]["gpu_tdp_sum_w"], 250);
}

#[test]
fn advise_on_the_h200_with_a_7b_model() {
    let (a, gpu) = advise_gpu0(
        "h200",
        &["--train", "--params", "7B", "--budget", "datacenter"],
    );
    assert_eq!(gpu["table_row"], "H200 SXM");
    assert_eq!(
        formats(&gpu),
        ["FP16 yes", "BF16 yes", "TF32 yes", "FP8 yes"]
    );
    assert_eq!(gpu["fits"], true);
    assert_eq!(gpu["cannot"], serde_json::json!([]));
    assert_eq!(a["needed_bytes"], 112_536_870_912_u64);
    let torch = a["torch_builds"].as_array().unwrap();
    assert_eq!(torch, &[Value::from("2.11.0+cu130 in /opt/torch/.venv")]);
    let h200 = a["cards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "H200 SXM")
        .unwrap();
    assert_eq!(h200["memory_gb"], 141);
    assert_eq!(h200["bandwidth_gbs"], 4800.0);
    assert_eq!(h200["tdp_w"], 700);
    assert_eq!(h200["throughput"][0]["tflops"], 989.0);
    assert!(
        a["cards"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["segment"] == "datacenter")
    );
    assert_eq!(a["power"]["psu_rule_of_thumb_w"], 1050);

    let text = stdout(&run("h200", &[], &["advise", "--train", "--params", "7B"]));
    for expected in [
        "GPUs for training a 7B model in BF16",
        "Needs at least 104.81 GiB",
        "H200 SXM",
        "989 BF16",
        "tensor cores: FP16 yes, BF16 yes, TF32 yes, FP8 yes",
        "torch 2.11.0+cu130 in /opt/torch/.venv",
        "Rule of thumb, not a specification",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

#[test]
fn advise_on_an_rtx_4090() {
    let (a, gpu) = advise_gpu0(
        "rtx4090-alloc-conf-typo",
        &[
            "--infer",
            "--params",
            "13B",
            "--precision",
            "int4",
            "--budget",
            "consumer",
        ],
    );
    assert_eq!(gpu["table_row"], "GeForce RTX 4090");
    assert_eq!(
        formats(&gpu),
        ["FP16 yes", "BF16 yes", "TF32 yes", "FP8 yes"]
    );
    // 13B in INT4: 6,500,000,000 + 536,870,912 bytes; fits the 4090 and every consumer card
    // from 8 GB up (8e9 ≥ 7.04e9).
    assert_eq!(a["needed_bytes"], 7_036_870_912_u64);
    assert_eq!(gpu["fits"], true);
    let names: Vec<&str> = a["cards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.first(), Some(&"GeForce RTX 3070"));
    assert!(names.contains(&"GeForce RTX 4090"));
    assert_eq!(a["power"]["server"], false);
    assert_eq!(a["power"]["psu_rule_of_thumb_w"], 675);
}

#[test]
fn advise_on_a_machine_without_gpus() {
    let a = json("no-gpu", &["advise", "--json"]);
    assert_eq!(a["machine"], serde_json::json!([]));
    assert_eq!(a["power"], Value::Null);
    assert!(!a["cards"].as_array().unwrap().is_empty());
}

/// A tuning finding's fixture with the setting fixed gives no finding at all.
fn doctor_ids(fixture: &str, extra: &[(&str, &str)]) -> Vec<String> {
    let out = run(fixture, extra, &["doctor", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    finding_ids(&report)
}

#[test]
fn tuning_findings_go_away_when_the_setting_is_fixed() {
    assert_eq!(doctor_ids("a100x2-two-nics", &[]), ["nccl-interface-unset"]);
    assert!(doctor_ids("a100x2-two-nics", &[("NCCL_SOCKET_IFNAME", "=ib0")]).is_empty());
    assert!(doctor_ids("a100x2-two-nics", &[("NCCL_IB_HCA", "mlx5_0")]).is_empty());
    assert!(doctor_ids("t4-cuda-launch-blocking", &[("CUDA_LAUNCH_BLOCKING", "0")]).is_empty());
    assert!(
        doctor_ids(
            "rtx4090-alloc-conf-typo",
            &[(
                "PYTORCH_CUDA_ALLOC_CONF",
                "expandable_segments:True,max_split_size_mb:512"
            )]
        )
        .is_empty()
    );
}

#[test]
fn tuning_findings_carry_their_evidence() {
    let out = run("a100x2-two-nics", &[], &["doctor", "--json"]);
    let r: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let f = &r["findings"][0];
    assert_eq!(f["severity"], "info");
    let evidence: Vec<&str> = f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert!(
        evidence.contains(
            &"network interfaces up and backed by a device: eno1 (ethernet), ib0 (infiniband) (/sys/class/net)"
        ),
        "{evidence:?}"
    );
    let nics = r["host"]["network_interfaces"].as_array().unwrap();
    let names: Vec<&str> = nics.iter().map(|n| n["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["docker0", "eno1", "ib0", "lo"]);
    assert_eq!(nics[2]["link_type"], "infiniband");
    assert_eq!(nics[2]["has_device"], true);
    assert_eq!(nics[0]["has_device"], false);

    let out = run("a100-persistence-off", &[], &["doctor", "--json"]);
    let r: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let f = &r["findings"][0];
    assert_eq!(f["id"], "persistence-mode-off");
    assert_eq!(f["severity"], "info");
    assert_eq!(f["subjects"], serde_json::json!(["gpu:0"]));
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .contains("systemctl enable --now nvidia-persistenced")
    );

    let out = run("rtx4090-alloc-conf-typo", &[], &["doctor", "--json"]);
    let r: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let f = &r["findings"][0];
    assert_eq!(f["id"], "pytorch-alloc-conf-unknown-key");
    assert_eq!(f["severity"], "warning");
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .contains("`expandable_segment` → `expandable_segments`")
    );
}

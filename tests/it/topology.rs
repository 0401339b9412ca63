//! The GPU interconnect in the report (`topology`, from `nvidia-smi topo -m`) on fixture
//! machines, and what `nccl-interface-unset` takes from it.

use serde_json::Value;

use crate::support::*;

fn probe<'a>(r: &'a Value, name: &str) -> Option<&'a Value> {
    r["probes"]
        .as_array()
        .and_then(|probes| probes.iter().find(|p| p["name"] == name))
}

#[test]
fn an_hgx_node_reports_its_matrix_and_the_nearest_nic_of_each_gpu() {
    let r = doctor("hgx-h100-eight-nics-nccl-unset");
    let t = &r["topology"];
    assert_eq!(t["source"], "nvidia-smi topo -m");
    assert_eq!(array(t, "gpus").len(), 8);
    assert_eq!(t["gpus"][2]["gpus"][2], "X");
    assert_eq!(t["gpus"][2]["gpus"][5], "NV18");
    assert_eq!(t["gpus"][5]["nics"][5], "PIX");
    assert_eq!(t["gpus"][5]["numa_node"], 1);
    assert_eq!(t["gpus"][5]["cpu_affinity"], "48-95,144-191");
    assert_eq!(t["nics"][6]["device"], "mlx5_6");
    assert_eq!(t["nics"][6]["numa_node"], 1, "from sysfs");
    assert!(t.get("unread").is_none());
    let p = probe(&r, "topology").unwrap();
    assert_eq!(p["status"], "ok");
    assert_eq!(
        p["detail"],
        "8 GPUs, NV18 between every pair; 8 NICs, each GPU's nearest at PIX"
    );
    let f = finding(&r, "nccl-interface-unset");
    let evidence = texts(&f["evidence"]);
    assert!(
        evidence.iter().any(|e| e
            .starts_with("GPU-NIC affinity (nvidia-smi topo -m): GPU0 mlx5_0 (PIX, NUMA 0)")
            && e.ends_with("GPU7 mlx5_7 (PIX, NUMA 1)")),
        "{evidence:?}"
    );
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .contains("NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7")
    );
}

#[test]
fn a_machine_with_one_gpu_and_no_infiniband_card_is_not_asked() {
    let r = doctor("h200");
    assert!(r.get("topology").is_none());
    assert!(probe(&r, "topology").is_none());
}

#[test]
fn an_nvidia_smi_without_the_matrix_is_a_failed_probe_and_the_rest_stands() {
    // Two A100s whose nvidia-smi stand-in has no `topo -m` capture.
    let r = doctor("a100x2-two-nics");
    assert!(r.get("topology").is_none());
    let p = probe(&r, "topology").unwrap();
    assert_eq!(p["status"], "failed");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .starts_with("nvidia-smi topo -m printed no matrix: "),
        "{p}"
    );
    assert_findings(&r, &["nccl-interface-unset"]);
}

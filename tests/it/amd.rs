//! AMD machines: their GPUs in `gpus[]` with the PCI id, name and gfx target a user would look
//! for, the ROCm stack as facts, fixes that lead where the ROCm, PyTorch, ollama and ComfyUI
//! maintainers led, and every face (text, metrics, check, smoke, report merge) showing them.
//! The exact finding set of each machine is its `expected-findings.txt` (`findings.rs`).

use std::process::Command;

use serde_json::Value;

use crate::support::*;

/// Every AMD fixture machine (each with `expected-findings.txt`).
const AMD: [&str; 18] = [
    "amd-rocm",
    "amd-rx7900xtx-workstation",
    "amd-igpu-dgpu-masked",
    "amd-igpu-visible",
    "amdgpu-not-loaded-mi210",
    "amd-container-no-kfd",
    "amd-pitcairn-unsupported",
    "amd-render-group-missing",
    "amd-cuda-torch-comfyui",
    "amd-780m-override-11",
    "amd-override-quoted-compose",
    "amd-vega56-nightly-no-gfx900",
    "amd-rx6700xt-no-gfx1031",
    "amd-wsl-torch-own-hsa",
    "amd-ld-library-path-rocm",
    "amd-rocr-and-cuda-masks",
    "amd-torch-cpu-build",
    "amd-rx9070xt-rocm62",
];

fn fix<'a>(r: &'a Value, id: &str) -> &'a str {
    finding(r, id)["fix"].as_str().unwrap_or("")
}

fn evidence(r: &Value, id: &str) -> Vec<String> {
    texts(&finding(r, id)["evidence"])
}

#[test]
fn the_amd_generator_reproduces_the_checked_in_table() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("python3")
        .arg(format!("{root}/scripts/gen-amd-gpu-ids.py"))
        .arg("--check")
        .output();
    let Ok(out) = out else {
        eprintln!("python3 is not installed: generator check skipped");
        return;
    };
    assert!(
        out.status.success(),
        "scripts/gen-amd-gpu-ids.py --check failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// AMD GPUs of the fixtures: (fixture, index, PCI id, name, gfx target, source, integrated).
const LISTED_AMD_GPUS: [(&str, u64, &str, &str, &str, &str, bool); 9] = [
    (
        "amd-rocm",
        0,
        "0x74a1",
        "AMD Instinct MI300X",
        "gfx942",
        "kfd",
        false,
    ),
    (
        "amd-rx7900xtx-workstation",
        0,
        "0x744c",
        "AMD Radeon RX 7900 XTX",
        "gfx1100",
        "kfd",
        false,
    ),
    (
        "amd-igpu-dgpu-masked",
        1,
        "0x164e",
        "Raphael",
        "gfx1036",
        "kfd",
        true,
    ),
    (
        "amd-780m-override-11",
        0,
        "0x15bf",
        "AMD Radeon 780M Graphics",
        "gfx1103",
        "kfd",
        true,
    ),
    (
        "amdgpu-not-loaded-mi210",
        3,
        "0x740f",
        "AMD Instinct MI210",
        "gfx90a",
        "pci",
        false,
    ),
    (
        "amd-pitcairn-unsupported",
        0,
        "0x6811",
        "AMD Radeon R7 370 Series",
        "gfx601",
        "pci",
        false,
    ),
    (
        "amd-rx6700xt-no-gfx1031",
        0,
        "0x73df",
        "AMD Radeon RX 6700 XT",
        "gfx1031",
        "kfd",
        false,
    ),
    (
        "amd-rx9070xt-rocm62",
        0,
        "0x7550",
        "AMD Radeon RX 9070 XT",
        "gfx1201",
        "kfd",
        false,
    ),
    (
        "amd-vega56-nightly-no-gfx900",
        0,
        "0x687f",
        "AMD Radeon RX Vega",
        "gfx900",
        "kfd",
        false,
    ),
];

#[test]
fn amd_gpus_are_listed_with_pci_id_name_target_and_source() {
    for (name, index, id, gpu_name, gfx, source, integrated) in LISTED_AMD_GPUS {
        let r = doctor(name);
        let g = &r["gpus"][usize::try_from(index).unwrap()];
        assert_eq!(g["index"], index, "{name}");
        assert_eq!(g["vendor"], "amd", "{name}");
        assert_eq!(g["pci_device_id"], id, "{name}");
        assert_eq!(g["name"], gpu_name, "{name}");
        assert_eq!(g["gfx_target"], gfx, "{name}");
        assert_eq!(g["source"], source, "{name}");
        assert_eq!(g["integrated"], integrated, "{name}");
        assert_eq!(
            g["compute_capability"],
            Value::Null,
            "{name}: AMD GPUs have no cc"
        );
    }
    // The KFD node's number and render node come with it; sysfs gives the readings.
    let r = doctor("amd-rx7900xtx-workstation");
    let g = &r["gpus"][0];
    assert_eq!(g["pci_bus_id"], "00000000:03:00.0");
    assert_eq!(g["rocm_index"], 0);
    assert_eq!(g["kfd_node"], 1);
    assert_eq!(g["render_node"], "/dev/dri/renderD128");
    assert_eq!(g["bound_driver"], "amdgpu");
    assert_eq!(g["memory_total_mib"], 24 * 1024);
    assert_eq!(g["utilization_pct"], 3);
    assert_eq!(g["temperature_c"], 45);
    assert_eq!(g["power_draw_w"], 28.0);
    assert_eq!(g["architecture"], "RDNA 3");
    assert_eq!(g["identified_by"], "kfd");
}

#[test]
fn the_rocm_stack_is_reported_as_facts() {
    let r = doctor("amd-rx7900xtx-workstation");
    let rocm = &r["rocm"];
    assert_eq!(rocm["default_install"], "/opt/rocm-6.3.4");
    assert_eq!(rocm["installs"][0]["version"], "6.3.4-1");
    assert_eq!(rocm["installs"][0]["hip_version"], "6.3.60304");
    assert_eq!(rocm["amdgpu"]["kind"], "inbox");
    assert_eq!(rocm["kfd_topology"], true);
    assert_eq!(rocm["kfd_nodes"][0]["gfx_target"], "gfx1100");
    assert_eq!(rocm["kfd_nodes"][0]["pci_address"], "0000:03:00.0");
    let kfd = find(&rocm["device_nodes"], "path", "/dev/kfd");
    assert_eq!(kfd["mode"], "0660");
    assert_eq!(kfd["group"], "render");
    assert_eq!(kfd["accessible"], true);
    assert_eq!(r["kernel"]["rocm_version"], "6.3.4-1");
    let torch = framework(&r, "/home/alice/venvs/comfyui", "torch");
    assert_eq!(torch["variant"], "rocm");
    assert_eq!(array(torch, "gfx_targets").len(), 11);
    assert!(
        texts(&torch["bundled_runtime"])
            .iter()
            .any(|p| p.ends_with("torch/lib/libamdhip64.so"))
    );
    // A machine without the group: the nodes say who may not open them.
    let r = doctor("amd-render-group-missing");
    let kfd = find(&r["rocm"]["device_nodes"], "path", "/dev/kfd");
    assert_eq!(kfd["accessible"], false);
    assert_eq!(r["rocm"]["user"]["name"], "bd4");
    // The NVIDIA machines say nothing of ROCm.
    assert_eq!(doctor("torch-cuda-venv")["rocm"], Value::Null);
}

#[test]
fn fixes_lead_where_the_maintainers_led() {
    let r = doctor("amd-render-group-missing");
    assert!(fix(&r, "rocm-device-permission").contains("sudo usermod -aG render,video $USER"));
    assert!(
        evidence(&r, "rocm-device-permission")
            .iter()
            .any(|e| e.starts_with("/dev/kfd: mode 0660") && e.ends_with("group render"))
    );

    let r = doctor("amd-container-no-kfd");
    assert!(fix(&r, "kfd-missing").contains("--device=/dev/kfd --device=/dev/dri"));

    let r = doctor("amdgpu-not-loaded-mi210");
    assert!(fix(&r, "amdgpu-not-loaded").starts_with("Load the driver: `sudo modprobe amdgpu`"));
    assert_eq!(evidence(&r, "amdgpu-not-loaded").len(), 5);

    let r = doctor("amd-rx6700xt-no-gfx1031");
    let f = fix(&r, "arch-not-in-build");
    assert!(f.contains("export HSA_OVERRIDE_GFX_VERSION=10.3.0"), "{f}");
    assert!(
        evidence(&r, "arch-not-in-build")
            .iter()
            .any(|e| e.contains("carries gfx900 gfx906 gfx908 gfx90a gfx942 gfx1030 gfx1100"))
    );

    // GCN 5 has no sibling: a wheel that carries it, never the override.
    let r = doctor("amd-vega56-nightly-no-gfx900");
    let f = fix(&r, "arch-not-in-build");
    assert!(
        f.contains("torch==2.7.* --index-url https://download.pytorch.org/whl/rocm6.3"),
        "{f}"
    );
    assert!(!f.contains("HSA_OVERRIDE"), "{f}");

    // gfx1103 is never given an override; the one set is the cause.
    let r = doctor("amd-780m-override-11");
    let f = finding(&r, "hsa-override-mismatch");
    assert_eq!(f["severity"], "error");
    assert!(
        texts(&f["evidence"])
            .iter()
            .any(|e| e.contains("page faults"))
    );
    assert!(fix(&r, "hsa-override-mismatch").starts_with("Unset it"));

    let r = doctor("amd-cuda-torch-comfyui");
    let f = fix(&r, "cuda-build-on-amd-gpu");
    assert!(
        f.contains("pip uninstall -y nvidia-cublas-cu12 nvidia-cudnn-cu12"),
        "{f}"
    );
    assert!(
        f.contains("--index-url https://download.pytorch.org/whl/rocm"),
        "{f}"
    );
    assert!(f.contains("HSA_OVERRIDE_GFX_VERSION=10.3.0"), "{f}");

    let r = doctor("amd-igpu-visible");
    assert!(fix(&r, "rocm-igpu-visible").contains("export HIP_VISIBLE_DEVICES=0"));

    let r = doctor("amd-wsl-torch-own-hsa");
    let f = fix(&r, "wsl-rocm-runtime-bundled");
    assert!(
        f.contains("rm libhsa-runtime64.so*") && f.contains("/opt/rocm/lib/libhsa-runtime64.so.1"),
        "{f}"
    );

    let r = doctor("amd-ld-library-path-rocm");
    let f = finding(&r, "library-path-shadowing");
    assert_eq!(f["severity"], "error");
    assert!(fix(&r, "library-path-shadowing").contains("`export LD_LIBRARY_PATH=`"));

    let r = doctor("amd-rocr-and-cuda-masks");
    assert!(fix(&r, "visible-devices-hides-gpus").contains("Set only ROCR_VISIBLE_DEVICES"));

    let r = doctor("amd-rx9070xt-rocm62");
    assert!(
        finding(&r, "rocm-too-old-for-gpu")["title"]
            .as_str()
            .unwrap_or("")
            .contains("needs ROCm 6.4.1 or newer")
    );

    let r = doctor("amd-pitcairn-unsupported");
    assert!(
        evidence(&r, "rocm-gpu-unsupported")
            .iter()
            .any(|e| e.contains("GCN 1 (gfx601)"))
    );
}

#[test]
fn no_gpu_never_fires_where_an_amd_gpu_or_rocm_path_is() {
    for name in AMD {
        let r = doctor(name);
        assert!(
            !finding_ids(&r).contains(&"no-gpu".to_string()),
            "{name}: {:?}",
            finding_ids(&r)
        );
    }
}

#[test]
fn smoke_on_an_amd_machine_says_it_could_not_run_and_why() {
    let out: Out = on_fixture("amd-rx7900xtx-workstation", &[], &["smoke", "--json"], None).into();
    assert_eq!(out.code, 3, "could not run is exit 3, never a pass");
    let r: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(r["smoke"]["status"], "could_not_run");
    let why = r["smoke"]["error"].as_str().unwrap_or("");
    assert!(
        why.contains("AMD") && why.contains("CUDA driver API"),
        "{why}"
    );
    let out: Out = on_fixture("amd-rx7900xtx-workstation", &[], &["smoke"], None).into();
    assert_eq!(out.code, 3);
    assert!(
        out.stdout.contains("AMD Radeon RX 7900 XTX"),
        "{}",
        out.stdout
    );
}

#[test]
fn metrics_carry_the_vendor_and_the_rocm_stack() {
    let out: Out = on_fixture(
        "amd-rx7900xtx-workstation",
        &[],
        &["doctor", "--format", "prometheus"],
        None,
    )
    .into();
    assert!(
        out.stdout
            .contains(r#"vendor="amd",gfx_target="gfx1100"} 1"#),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains(r#"gpu_doctor_rocm_info{version="6.3.4-1",path="/opt/rocm-6.3.4",amdgpu="inbox",amdgpu_version=""} 1"#));
    let out: Out = on_fixture(
        "torch-cuda-venv",
        &[],
        &["doctor", "--format", "prometheus"],
        None,
    )
    .into();
    assert!(out.stdout.contains(r#"vendor="nvidia",gfx_target=""} 1"#));
    assert!(!out.stdout.contains("gpu_doctor_rocm_info"));
}

#[test]
fn check_takes_amd_requirements() {
    let run = |fixture: &str, reqs: &[&str]| -> i32 {
        let mut args = vec!["check"];
        for r in reqs {
            args.push("-r");
            args.push(r);
        }
        args.extend(["--fail-on", "never"]);
        Out::from(on_fixture(fixture, &[], &args, None)).code
    };
    let ws = "amd-rx7900xtx-workstation";
    assert_eq!(
        run(
            ws,
            &[
                "gpu.vendor==amd",
                "gpu.gfx==gfx1100",
                "rocm>=6.2",
                "torch.rocm",
                "torch>=2.7"
            ]
        ),
        0
    );
    assert_eq!(run(ws, &["gpu.vendor==nvidia"]), 1);
    assert_eq!(run(ws, &["gpu.gfx==gfx1030"]), 1);
    assert_eq!(run(ws, &["rocm>=7.0"]), 1);
    assert_eq!(
        run(ws, &["torch.cuda"]),
        1,
        "a ROCm build is not a CUDA build"
    );
    assert_eq!(run(ws, &["gpu.gfx>=gfx1100"]), 2, "a target has no order");
    assert_eq!(run(ws, &["gpu.vendor==intel"]), 2);
    // The permission problem keeps every ROCm build off the GPU.
    assert_eq!(run("amd-render-group-missing", &["torch.rocm"]), 1);
    assert_eq!(run("torch-cuda-venv", &["gpu.vendor!=amd"]), 0);
}

#[test]
fn the_text_report_shows_the_amd_gpu_and_the_rocm_stack() {
    let out: Out = on_fixture("amd-rx7900xtx-workstation", &[], &["doctor"], None).into();
    for want in [
        "AMD Radeon RX 7900 XTX [0x744c]",
        "gfx1100 (RDNA 3)",
        "ROCm device 0",
        "AMD ROCm",
        "ROCm 6.3.4-1  /opt/rocm-6.3.4 (/opt/rocm)",
        "/dev/kfd  0660 render  (can open)",
        "gfx: gfx900 gfx906",
        "No problems found.",
    ] {
        assert!(out.stdout.contains(want), "{want:?} in:\n{}", out.stdout);
    }
}

#[test]
fn report_merge_shows_amd_nodes_and_their_rocm() {
    let dir = crate::support::tempdir();
    for name in ["amd-rx7900xtx-workstation", "amd-rocm"] {
        let out = on_fixture(name, &[], &["doctor", "--json"], None);
        std::fs::write(dir.path().join(format!("{name}.json")), &out.stdout).expect("write");
    }
    let out: Out = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
        .args(["report", "merge"])
        .arg(dir.path())
        .output()
        .expect("merge")
        .into();
    assert_eq!(out.code, 0, "{}", out.stderr);
    for want in [
        "AMD Radeon RX 7900 XTX",
        "AMD Instinct MI300X",
        "ROCm        6.3.4-1",
        "(ROCm 6.3",
    ] {
        assert!(out.stdout.contains(want), "{want:?} in:\n{}", out.stdout);
    }
}

/// hipBLASLt without the GPU's target is weighed by who loads it: torch's `nn.Linear` path fails
/// (error), rocBLAS asked to use it by `ROCBLAS_USE_HIPBLASLT=1` (warning), ollama's rocBLAS falls
/// back (information); with the target present nothing is said.
#[test]
fn hipblaslt_without_the_target_is_weighed_by_its_caller() {
    let names: Vec<String> = [
        "amd-hipblaslt-therock-torch-no-gfx1101",
        "amd-hipblaslt-rocblas-use-hipblaslt-gfx1151",
        "amd-hipblaslt-ollama-no-gfx1201",
        "amd-hipblaslt-torch-gfx1100-present",
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    doctor_all(&names);
    for (name, severity, in_fix) in [
        (
            "amd-hipblaslt-therock-torch-no-gfx1101",
            "error",
            "DISABLE_ADDMM_CUDA_LT=1",
        ),
        (
            "amd-hipblaslt-rocblas-use-hipblaslt-gfx1151",
            "warning",
            "Unset ROCBLAS_USE_HIPBLASLT",
        ),
        ("amd-hipblaslt-ollama-no-gfx1201", "info", "Nothing to do"),
    ] {
        let r = doctor(name);
        let f = finding(&r, "hipblaslt-missing-target");
        assert_eq!(f["severity"], severity, "{name}: {f:#}");
        assert!(
            fix(&r, "hipblaslt-missing-target").contains(in_fix),
            "{name}: {f:#}"
        );
    }
    let r = doctor("amd-hipblaslt-ollama-no-gfx1201");
    assert_eq!(
        r["rocm"]["bundled"][0]["hipblaslt_targets"],
        serde_json::json!(["gfx90a", "gfx942", "gfx1100", "gfx1101"])
    );
    let r = doctor("amd-hipblaslt-torch-gfx1100-present");
    assert!(finding_ids(&r).is_empty(), "{:?}", finding_ids(&r));
    let torch = &r["python_envs"][0]["frameworks"][0];
    assert!(
        torch["hipblaslt_targets"]
            .as_array()
            .is_some_and(|a| a.iter().any(|t| t == "gfx1100")),
        "{torch:#}"
    );
}

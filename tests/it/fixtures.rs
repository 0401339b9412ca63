//! One test per fixture machine: the facts a correct report must contain and the exact findings.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

/// The plain Ubuntu 22.04 system Python most fixtures carry.
fn assert_ubuntu_2204_system_python(r: &Value) {
    let usr = python_env(r, "/usr");
    assert_eq!(usr["kind"], "system");
    assert_eq!(usr["interpreter"], "/usr/bin/python3");
    assert_eq!(usr["python_version"], "3.10");
    assert_eq!(usr["found_via"], json!(["PATH", "system"]));
    assert_eq!(
        usr["site_packages"],
        json!([
            "/usr/lib/python3/dist-packages",
            "/usr/local/lib/python3.10/dist-packages"
        ])
    );
    assert_eq!(usr["frameworks"], json!([]));
}

/// A driver that nvidia-smi reported, with its libraries from Ubuntu's packages.
fn assert_packaged_driver(r: &Value, version: &str, cuda: &str) {
    assert_eq!(r["driver"]["version"], version);
    assert_eq!(r["driver"]["cuda_version"], cuda);
    assert_eq!(r["driver"]["source"], "nvidia-smi");
    assert_eq!(r["driver"]["nvidia_smi"]["status"], "ok");
    assert_eq!(r["driver"]["nvidia_smi_path"], "/usr/bin/nvidia-smi");
    assert_eq!(r["kernel"]["nvidia_loaded"], true);
    assert_eq!(r["kernel"]["nvidia_version"], version);
    for name in ["libcuda", "libnvidia-ml"] {
        let libs = driver_libs(r, name);
        assert_eq!(libs.len(), 1, "{name}: {libs:?}");
        assert_eq!(
            libs[0]["path"],
            format!("/lib/x86_64-linux-gnu/{name}.so.1")
        );
        assert_eq!(
            libs[0]["resolved"],
            format!("/usr/lib/x86_64-linux-gnu/{name}.so.{version}")
        );
        assert_eq!(libs[0]["version"], version);
        assert_eq!(libs[0]["kind"], "driver");
        assert_eq!(libs[0]["origin"], "ld.so.conf");
    }
}

/// The one GPU nvidia-smi described.
fn assert_smi_gpu(r: &Value, name: &str, bus: &str, device: &str, cc: &str, mib: u64) {
    let gpus = array(r, "gpus");
    assert_eq!(gpus.len(), 1, "{gpus:?}");
    let g = &gpus[0];
    assert_eq!(g["index"], 0);
    assert_eq!(g["name"], name);
    assert_eq!(g["pci_bus_id"], bus);
    assert_eq!(g["pci_device_id"], device);
    assert_eq!(g["compute_capability"], cc);
    assert_eq!(g["memory_total_mib"], mib);
    assert_eq!(g["source"], "nvidia-smi");
    assert_eq!(
        g["filled_from"],
        json!(["compute_capability: nvidia-smi --query-gpu"])
    );
}

#[test]
fn no_gpu() {
    let r = doctor("no-gpu");
    assert_findings(&r, &["no-gpu"]);
    let f = finding(&r, "no-gpu");
    assert_eq!(f["severity"], "info");
    assert_eq!(f["fix"], Value::Null, "not a container: nothing to pass in");
    assert_eq!(r["host"]["os_id"], "ubuntu");
    assert_eq!(r["host"]["os_version"], "22.04");
    assert_eq!(r["host"]["os_codename"], "jammy");
    assert_eq!(r["host"]["os_pretty_name"], "Ubuntu 22.04.4 LTS");
    assert_eq!(r["host"]["kernel_release"], "5.15.0-119-generic");
    assert_eq!(r["host"]["hostname"], "vm-2204");
    assert_eq!(r["host"]["arch"], "x86_64");
    assert_eq!(r["host"]["wsl"], false);
    assert_eq!(r["host"]["container"], Value::Null);
    assert_eq!(r["host"]["secure_boot"], Value::Null);
    // QEMU's VGA (1234:1111) is a display controller of no GPU vendor we track.
    assert_eq!(r["pci_devices"], json!([]));
    assert_eq!(r["gpus"], json!([]));
    assert_eq!(r["kernel"]["nvidia_loaded"], false);
    assert_eq!(r["kernel"]["device_nodes"], json!([]));
    assert_eq!(r["kernel"]["daemons"], json!([]));
    assert_eq!(r["driver"]["version"], Value::Null);
    assert_eq!(r["driver"]["nvidia_smi"]["status"], "absent");
    assert_eq!(r["driver_libraries"], json!([]));
    assert_eq!(r["toolkits"], json!([]));
    assert_ubuntu_2204_system_python(&r);
    assert_eq!(array(&r, "python_envs").len(), 1);
}

#[test]
fn gpu_no_driver() {
    let r = doctor("gpu-no-driver");
    assert_findings(&r, &["no-driver"]);
    let f = finding(&r, "no-driver");
    assert_eq!(f["severity"], "error");
    assert!(
        f["title"].as_str().unwrap().contains("1 GPU(s)"),
        "{}",
        f["title"]
    );
    let evidence = texts(&f["evidence"]);
    assert!(
        evidence.contains(&"PCI 0000:01:00.0: NVIDIA device 0x2684 bound to no driver".to_string()),
        "{evidence:?}"
    );
    assert!(
        evidence
            .iter()
            .any(|e| e.starts_with("Secure Boot: enabled")),
        "{evidence:?}"
    );
    assert_eq!(r["host"]["secure_boot"], true);
    assert_eq!(r["host"]["kernel_release"], "6.8.0-45-generic");
    // The HDMI audio function (class 0x0403) of the same card is not a GPU.
    assert_subset(
        &r["pci_devices"],
        &json!([{
            "address": "0000:01:00.0", "vendor": "nvidia", "vendor_id": "0x10de", "device_id": "0x2684",
            "class": "0x030000", "bound_driver": null, "link_gen_current": 1, "link_gen_max": 4,
            "link_width_current": 16, "link_width_max": 16, "nvswitch": false
        }]),
    );
    let gpus = array(&r, "gpus");
    assert_eq!(gpus.len(), 1);
    assert_eq!(gpus[0]["source"], "pci");
    assert_eq!(gpus[0]["pci_device_id"], "0x2684");
    // No driver: the name, compute capability and chip come from the GPU id table, by PCI id.
    assert_eq!(gpus[0]["name"], "NVIDIA GeForce RTX 4090");
    assert_eq!(gpus[0]["compute_capability"], "8.9");
    assert_eq!(gpus[0]["chip"], "AD102");
    assert_eq!(gpus[0]["identified_by"], "table");
    assert_eq!(gpus[0]["first_driver"], "525.47.06");
    assert_eq!(gpus[0]["pcie_gen_max"], 4);
    assert_eq!(r["kernel"]["nvidia_loaded"], false);
    assert_eq!(r["driver"]["version"], Value::Null);
    assert_eq!(r["driver"]["nvidia_smi"]["status"], "absent");
}

#[test]
fn nouveau_loaded() {
    let r = doctor("nouveau-loaded");
    // nouveau is the root cause; it explains the missing nvidia driver.
    assert_findings(&r, &["nouveau-loaded"]);
    let f = finding(&r, "nouveau-loaded");
    assert_eq!(f["severity"], "error");
    assert!(
        texts(&f["explains"]).contains(&"no-driver".to_string()),
        "{}",
        f["explains"]
    );
    assert!(
        texts(&f["evidence"]).contains(&"PCI 0000:01:00.0: bound to nouveau".to_string()),
        "{}",
        f["evidence"]
    );
    assert_eq!(r["kernel"]["nouveau_loaded"], true);
    assert_eq!(r["kernel"]["nvidia_loaded"], false);
    let pci = array(&r, "pci_devices");
    assert_eq!(pci.len(), 1, "the audio function is not a GPU");
    assert_eq!(pci[0]["bound_driver"], "nouveau");
    assert_eq!(pci[0]["device_id"], "0x1b06");
    assert_eq!(pci[0]["link_gen_current"], 3);
    assert_eq!(r["gpus"][0]["source"], "pci");
}

#[test]
fn healthy_driver_toolkit() {
    let r = doctor("healthy-driver-toolkit");
    assert_findings(&r, &[]);
    assert_packaged_driver(&r, "550.54.15", "12.4");
    assert_eq!(r["kernel"]["nvidia_open"], false);
    assert_eq!(r["kernel"]["nvidia_uvm_loaded"], true);
    assert_eq!(r["kernel"]["source"], "/proc/driver/nvidia/version");
    assert_eq!(
        r["kernel"]["device_nodes"],
        json!([
            "/dev/nvidia-modeset",
            "/dev/nvidia-uvm",
            "/dev/nvidia-uvm-tools",
            "/dev/nvidia0",
            "/dev/nvidiactl"
        ])
    );
    // Ubuntu's nvidia-persistenced.service, found in /proc/<pid>/comm.
    assert_eq!(r["kernel"]["daemons"], json!(["nvidia-persistenced"]));
    assert_smi_gpu(
        &r,
        "NVIDIA GeForce RTX 4090",
        "00000000:01:00.0",
        "0x2684",
        "8.9",
        24564,
    );
    let g = &r["gpus"][0];
    assert_eq!(g["uuid"], "GPU-5c3b9f2e-8d41-7a06-b2c9-1e4f7a8d3b60");
    assert_eq!(g["architecture"], "Ada Lovelace");
    assert_eq!(g["memory_used_mib"], 21);
    assert_eq!(g["temperature_c"], 34);
    assert_eq!(g["temperature_slowdown_c"], 87);
    assert_eq!(g["power_draw_w"], 18.32);
    assert_eq!(g["power_limit_w"], 450.0);
    assert_eq!(g["clock_sm_max_mhz"], 3120);
    assert_eq!(g["pcie_gen_current"], 1);
    assert_eq!(g["pcie_gen_max"], 4);
    assert_eq!(g["pcie_width_current"], 16);
    assert_eq!(g["persistence_mode"], false);
    assert_eq!(g["mig_mode"], Value::Null, "GeForce has no MIG");
    assert_eq!(g["ecc"]["enabled"], Value::Null, "GeForce has no ECC");
    assert_eq!(r["pci_devices"][0]["bound_driver"], "nvidia");
    assert_subset(
        &r["toolkits"],
        &json!([{
            "path": "/usr/local/cuda-12.4", "version": "12.4.1", "version_source": "version.json",
            "nvcc": "/usr/local/cuda-12.4/bin/nvcc", "found_via": ["/usr/local/cuda", "scan", "PATH"]
        }]),
    );
    let cudart = &r["libraries"]["cudart"];
    assert_eq!(strings(cudart, "version"), ["12.4.127"]);
    assert_eq!(
        cudart[0]["path"],
        "/usr/local/cuda/lib64/libcudart.so.12.4.127"
    );
    assert_eq!(cudart[0]["origin"], "toolkit");
    assert_eq!(cudart[0]["on_loader_path"], true);
    assert_eq!(strings(&r["libraries"]["cublas"], "version"), ["12.4.5.8"]);
    assert_eq!(r["libraries"]["cudnn"], json!([]));
    assert_eq!(
        r["environment"],
        json!([{"name": "LD_LIBRARY_PATH", "value": "/usr/local/cuda/lib64"}])
    );
    assert_ubuntu_2204_system_python(&r);
}

#[test]
fn driver_library_mismatch() {
    let r = doctor("driver-library-mismatch");
    // The mismatch explains the failing nvidia-smi, so that symptom is not listed on its own.
    assert_findings(&r, &["driver-library-mismatch"]);
    let f = finding(&r, "driver-library-mismatch");
    assert_eq!(f["severity"], "error");
    assert_eq!(f["explains"], json!(["nvidia-smi-failed"]));
    let evidence = texts(&f["evidence"]);
    for line in [
        "kernel module: 550.54.15 (/proc/driver/nvidia/version)",
        "libcuda: 550.90.07 (/usr/lib/x86_64-linux-gnu/libcuda.so.550.90.07)",
        "libnvidia-ml: 550.90.07 (/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.90.07)",
    ] {
        assert!(
            evidence.contains(&line.to_string()),
            "{line:?} not in {evidence:?}"
        );
    }
    assert_eq!(r["kernel"]["nvidia_version"], "550.54.15");
    // nvidia-smi failed, so the driver version is the loaded module's.
    assert_eq!(r["driver"]["version"], "550.54.15");
    assert_eq!(r["driver"]["source"], "kernel-module");
    assert_eq!(r["driver"]["cuda_version"], Value::Null);
    assert_eq!(r["driver"]["nvidia_smi"]["status"], "failed");
    assert_eq!(r["driver"]["nvidia_smi_path"], "/usr/bin/nvidia-smi");
    let detail = r["driver"]["nvidia_smi"]["detail"].as_str().unwrap();
    assert!(
        detail.contains("550.90"),
        "the NVML library version is kept: {detail}"
    );
    for name in ["libcuda", "libnvidia-ml"] {
        let libs = driver_libs(&r, name);
        assert_eq!(libs.len(), 1);
        assert_eq!(libs[0]["version"], "550.90.07");
        assert_eq!(libs[0]["kind"], "driver");
    }
    let gpus = array(&r, "gpus");
    assert_eq!(gpus.len(), 1);
    assert_eq!(gpus[0]["source"], "pci");
    assert_eq!(gpus[0]["pci_device_id"], "0x20f1");
    assert_eq!(r["pci_devices"][0]["class"], "0x030200");
}

#[test]
fn nvidia_smi_hangs() {
    let run = run_fixture("nvidia-smi-hangs");
    // A hard ceiling, not a benchmark: the stand-in sleeps 600 s and --timeout is 5 s; six
    // times the timeout leaves a loaded machine room and still catches a run that waits.
    assert!(
        run.elapsed < Duration::from_secs(30),
        "took {:?}",
        run.elapsed
    );
    let r = run.report;
    check_common("nvidia-smi-hangs", &r);
    assert_eq!(r["driver"]["nvidia_smi"]["status"], "timed_out");
    assert_eq!(
        r["driver"]["nvidia_smi"]["detail"],
        "nvidia-smi did not answer within 5.0 s and was stopped"
    );
    assert_findings(&r, &["nvidia-smi-failed"]);
    let f = finding(&r, "nvidia-smi-failed");
    assert_eq!(f["severity"], "error");
    assert!(
        f["title"].as_str().unwrap().contains("hung"),
        "{}",
        f["title"]
    );
    assert!(
        texts(&f["evidence"]).contains(&"nvidia-smi: /usr/bin/nvidia-smi".to_string()),
        "{}",
        f["evidence"]
    );
    assert_eq!(r["driver"]["version"], "535.161.08");
    assert_eq!(r["driver"]["source"], "kernel-module");
    assert_eq!(
        r["kernel"]["daemons"],
        json!([]),
        "no persistence daemon runs on this machine"
    );
    let gpus = array(&r, "gpus");
    assert_eq!(gpus.len(), 2);
    assert_eq!(strings(&r["gpus"], "source"), ["pci", "pci"]);
    assert_eq!(strings(&r["gpus"], "pci_device_id"), ["0x2330", "0x2330"]);
    assert_eq!(gpus[1]["index"], 1);
    assert_eq!(gpus[0]["pcie_gen_current"], 5);
    assert_eq!(driver_libs(&r, "libcuda")[0]["version"], "535.161.08");
}

#[test]
fn several_toolkits() {
    let r = doctor("several-toolkits");
    assert_findings(&r, &["multiple-toolkits"]);
    assert_packaged_driver(&r, "550.54.15", "12.4");
    assert_smi_gpu(
        &r,
        "NVIDIA GeForce RTX 3090",
        "00000000:2D:00.0",
        "0x2204",
        "8.6",
        24576,
    );
    assert_subset(
        &r["toolkits"],
        &json!([
            {"path": "/usr/local/cuda-11.8", "version": "11.8.89", "version_source": "version.txt",
             "nvcc": "/usr/local/cuda-11.8/bin/nvcc", "found_via": ["scan", "CUDA_HOME"]},
            {"path": "/usr/local/cuda-12.1", "version": "12.1.1", "version_source": "version.json",
             "nvcc": "/usr/local/cuda-12.1/bin/nvcc", "found_via": ["scan", "PATH"]},
            {"path": "/usr/local/cuda-12.4", "version": "12.4.1", "version_source": "version.json",
             "nvcc": "/usr/local/cuda-12.4/bin/nvcc", "found_via": ["/usr/local/cuda", "scan"]},
        ]),
    );
    // Only 11.8's runtime is on the loader path (LD_LIBRARY_PATH); it is named as configured.
    let cudart = &r["libraries"]["cudart"];
    assert_eq!(
        strings(cudart, "version"),
        ["11.8.89", "12.1.105", "12.4.127"]
    );
    assert_eq!(
        strings(cudart, "path"),
        [
            "/usr/local/cuda-11.8/lib64/libcudart.so.11.8.89",
            "/usr/local/cuda-12.1/targets/x86_64-linux/lib/libcudart.so.12.1.105",
            "/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12.4.127",
        ]
    );
    assert_eq!(
        strings(cudart, "on_loader_path"),
        ["true", "false", "false"]
    );
    assert_eq!(strings(cudart, "origin"), ["toolkit", "toolkit", "toolkit"]);
    assert_eq!(
        strings(&r["libraries"]["cublas"], "version"),
        ["11.11.3.6", "12.1.3.1", "12.4.5.8"]
    );
    assert_subset(
        &r["environment"],
        &json!([
            {"name": "CUDA_HOME", "value": "/usr/local/cuda-11.8"},
            {"name": "LD_LIBRARY_PATH", "value": "/usr/local/cuda-11.8/lib64"},
        ]),
    );
}

#[test]
fn conda_forge_cupy_env() {
    let r = doctor("conda-forge-cupy-env");
    assert_findings(&r, &[]);
    let env = r["python_envs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "/home/alice/miniconda3/envs/ml")
        .expect("the conda env");
    let cupy = env["frameworks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "cupy")
        .expect("conda's cupy");
    assert_eq!(cupy["cuda"], "12.1", "{cupy}");
    assert_eq!(cupy["variant"], "cuda");
    assert!(
        cupy["source"].as_str().unwrap().contains("conda-meta"),
        "{cupy}"
    );
    let loads = r["libraries"]["loads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["framework"] == "cupy")
        .expect("cupy's loads");
    let cudart = loads["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["soname"] == "libcudart.so.12")
        .expect("libcudart.so.12");
    assert_eq!(
        cudart["path"],
        "/home/alice/miniconda3/envs/ml/lib/libcudart.so.12"
    );
    assert_eq!(cudart["via"], "RPATH of the executable");
}

#[test]
fn conda_cuda_env() {
    let r = doctor("conda-cuda-env");
    assert_findings(&r, &[]);
    assert_packaged_driver(&r, "535.183.01", "12.2");
    assert_smi_gpu(
        &r,
        "NVIDIA RTX A6000",
        "00000000:41:00.0",
        "0x2230",
        "8.6",
        49140,
    );
    assert_eq!(r["gpus"][0]["ecc"]["enabled"], false);
    let env = "/home/alice/miniconda3/envs/ml";
    let ml = python_env(&r, env);
    assert_eq!(ml["kind"], "conda");
    assert_eq!(ml["python_version"], "3.11");
    assert_eq!(ml["interpreter"], format!("{env}/bin/python3"));
    assert_eq!(
        ml["found_via"],
        json!(["PATH", "CONDA_PREFIX", "conda-environments"])
    );
    assert_eq!(
        ml["site_packages"],
        json!([format!("{env}/lib/python3.11/site-packages")])
    );
    let torch = framework(&r, env, "torch");
    assert_eq!(torch["version"], "2.3.1");
    assert_eq!(torch["cuda"], "12.1");
    assert_eq!(torch["variant"], "cuda");
    assert_eq!(torch["pins"], json!([]), "conda packages pin no pip wheels");
    assert_eq!(
        torch["source"],
        format!("{env}/lib/python3.11/site-packages/torch/version.py")
    );
    let base = python_env(&r, "/home/alice/miniconda3");
    assert_eq!(base["kind"], "conda");
    assert_eq!(base["python_version"], "3.12");
    assert_eq!(base["frameworks"], json!([]));
    assert_eq!(array(&r, "python_envs").len(), 3, "base, ml and /usr");
    // The env's nvcc is the only toolkit; conda's libraries sit in the env, off the loader path.
    assert_subset(
        &r["toolkits"],
        &json!([{
            "path": env, "version": "12.1.105", "version_source": "nvcc",
            "nvcc": format!("{env}/bin/nvcc"), "found_via": ["PATH", "conda"]
        }]),
    );
    assert_subset(
        &r["libraries"]["cudart"],
        &json!([{
            "version": "12.1.105", "path": format!("{env}/lib/libcudart.so.12.1.105"), "origin": "conda",
            "version_source": "file-name", "on_loader_path": false
        }]),
    );
    assert_eq!(strings(&r["libraries"]["cublas"], "version"), ["12.1.0.26"]);
    assert_eq!(
        r["environment"],
        json!([{"name": "CONDA_PREFIX", "value": env}])
    );
}

#[test]
fn torch_cpu_build() {
    let r = doctor("torch-cpu-build");
    assert_findings(&r, &["cpu-only-framework-build"]);
    assert_packaged_driver(&r, "560.35.03", "12.6");
    assert_eq!(r["kernel"]["nvidia_open"], true);
    assert_eq!(r["host"]["os_version"], "24.04");
    assert_eq!(r["host"]["os_codename"], "noble");
    assert_smi_gpu(
        &r,
        "NVIDIA GeForce RTX 4070",
        "00000000:01:00.0",
        "0x2786",
        "8.9",
        12282,
    );
    let v = "/home/bob/proj/.venv";
    let env = python_env(&r, v);
    assert_eq!(env["kind"], "venv");
    assert_eq!(env["python_version"], "3.12.3");
    assert_eq!(env["found_via"], json!(["PATH", "VIRTUAL_ENV"]));
    // lib64 -> lib is one site folder, not two.
    assert_eq!(
        env["site_packages"],
        json!([format!("{v}/lib/python3.12/site-packages")])
    );
    let torch = framework(&r, v, "torch");
    assert_eq!(torch["version"], "2.5.1+cpu");
    assert_eq!(torch["cuda"], Value::Null);
    assert_eq!(torch["rocm"], Value::Null);
    assert_eq!(torch["variant"], "cpu");
    assert_eq!(torch["pins"], json!([]));
    assert_eq!(env["nvidia_wheels"], json!([]));
}

#[test]
fn torch_cuda_venv() {
    let r = doctor("torch-cuda-venv");
    assert_findings(&r, &[]);
    assert_packaged_driver(&r, "535.183.01", "12.2");
    assert_smi_gpu(
        &r,
        "NVIDIA A10G",
        "00000000:00:1E.0",
        "0x2237",
        "8.6",
        23028,
    );
    assert_eq!(r["gpus"][0]["ecc"]["enabled"], true);
    assert_eq!(r["gpus"][0]["pcie_width_current"], 8);
    let v = "/home/ubuntu/venv";
    let site = format!("{v}/lib/python3.10/site-packages");
    let env = python_env(&r, v);
    assert_eq!(env["python_version"], "3.10.12");
    let torch = framework(&r, v, "torch");
    assert_eq!(torch["version"], "2.4.0+cu121");
    assert_eq!(torch["cuda"], "12.1");
    assert_eq!(torch["cudnn"], "9.1.0.70");
    assert_eq!(torch["variant"], "cuda");
    assert_eq!(
        torch["pins"],
        json!([
            "nvidia-cublas-cu12==12.1.3.1",
            "nvidia-cuda-cupti-cu12==12.1.105",
            "nvidia-cuda-nvrtc-cu12==12.1.105",
            "nvidia-cuda-runtime-cu12==12.1.105",
            "nvidia-cudnn-cu12==9.1.0.70",
            "nvidia-cufft-cu12==11.0.2.54",
            "nvidia-curand-cu12==10.3.2.106",
            "nvidia-cusolver-cu12==11.4.5.107",
            "nvidia-cusparse-cu12==12.1.0.106",
            "nvidia-nccl-cu12==2.20.5",
            "nvidia-nvtx-cu12==12.1.105",
        ])
    );
    let wheel = find(&env["nvidia_wheels"], "name", "nvidia-cudnn-cu12");
    assert_eq!(wheel["version"], "9.1.0.70");
    assert_eq!(wheel["lib_dir"], format!("{site}/nvidia/cudnn/lib"));
    assert_eq!(strings(&env["nvidia_wheels"], "name").len(), 5);
    // Each pip library with its version from the best source: header, else the wheel's dist-info.
    let libs = &r["libraries"];
    let pip = |family: &str, file: &str, version: &str, source: &str| {
        assert_subset(
            &libs[family],
            &json!([{
                "version": version, "path": format!("{site}/nvidia/{file}"), "origin": "pip",
                "version_source": source, "on_loader_path": false
            }]),
        );
    };
    pip("cudnn", "cudnn/lib/libcudnn.so.9", "9.1.0", "header");
    pip("nccl", "nccl/lib/libnccl.so.2", "2.20.5", "header");
    pip(
        "cublas",
        "cublas/lib/libcublas.so.12",
        "12.1.3.1",
        "dist-info",
    );
    pip(
        "cudart",
        "cuda_runtime/lib/libcudart.so.12",
        "12.1.105",
        "dist-info",
    );
    assert_eq!(r["toolkits"], json!([]));
}

#[test]
fn tensorflow_system_cudnn() {
    let r = doctor("tensorflow-system-cudnn");
    assert_findings(&r, &[]);
    assert_packaged_driver(&r, "535.183.01", "12.2");
    let site = "/usr/local/lib/python3.10/dist-packages";
    let tf = framework(&r, "/usr", "tensorflow");
    assert_eq!(tf["version"], "2.15.0");
    assert_eq!(tf["cuda"], "12.2");
    assert_eq!(tf["cudnn"], "8");
    assert_eq!(tf["variant"], "cuda");
    assert_eq!(
        tf["arch_list"],
        json!(["sm_50", "sm_60", "sm_70", "sm_80", "compute_90"])
    );
    assert_eq!(
        tf["source"],
        format!("{site}/tensorflow/python/platform/build_info.py")
    );
    assert_eq!(
        python_env(&r, "/usr")["found_via"],
        json!(["PATH", "system"])
    );
    // NVIDIA's libcudnn8 debs: found where the loader finds them, versioned by file name.
    assert_subset(
        &r["libraries"]["cudnn"],
        &json!([{
            "version": "8.9.7", "path": "/lib/x86_64-linux-gnu/libcudnn.so.8.9.7", "origin": "system",
            "version_source": "file-name", "on_loader_path": true
        }]),
    );
    assert_eq!(r["toolkits"], json!([]));
}

#[test]
fn jax_pip_cuda_plugin() {
    let r = doctor("jax-pip-cuda-plugin");
    assert_findings(&r, &[]);
    assert_packaged_driver(&r, "550.90.07", "12.4");
    assert_smi_gpu(&r, "NVIDIA L4", "00000000:00:03.0", "0x27b8", "8.9", 23034);
    let v = "/home/jx/.venvs/jax";
    let site = format!("{v}/lib/python3.11/site-packages");
    let jax = framework(&r, v, "jax");
    assert_eq!(jax["version"], "0.4.30");
    assert_eq!(jax["cuda"], "12");
    assert_eq!(jax["variant"], "cuda");
    assert_eq!(
        jax["cudnn"],
        Value::Null,
        "the plugin asks for a range (>=9.0,<10.0), not a version"
    );
    assert_eq!(
        jax["source"],
        format!("{site}/jax_cuda12_plugin-0.4.30.dist-info")
    );
    assert!(
        texts(&jax["pins"]).contains(&"nvidia-cudnn-cu12<10.0,>=9.0".to_string()),
        "{}",
        jax["pins"]
    );
    assert_eq!(strings(&python_env(&r, v)["frameworks"], "name"), ["jax"]);
    assert_eq!(strings(&r["libraries"]["cudnn"], "version"), ["9.2.1"]);
    assert_eq!(
        r["libraries"]["cudnn"][0]["path"],
        format!("{site}/nvidia/cudnn/lib/libcudnn.so.9")
    );
    assert_eq!(strings(&r["libraries"]["nccl"], "version"), ["2.22.3"]);
    assert_eq!(strings(&r["libraries"]["cublas"], "version"), ["12.5.3.2"]);
    assert_eq!(strings(&r["libraries"]["cudart"], "version"), ["12.5.82"]);
    let wheels = strings(&python_env(&r, v)["nvidia_wheels"], "name");
    assert_eq!(
        wheels,
        [
            "nvidia-cublas-cu12",
            "nvidia-cuda-nvcc-cu12",
            "nvidia-cuda-runtime-cu12",
            "nvidia-cudnn-cu12",
            "nvidia-nccl-cu12",
            "nvidia-nvjitlink-cu12"
        ]
    );
}

#[test]
fn wsl2() {
    let r = doctor("wsl2");
    assert_findings(&r, &[]);
    assert_eq!(r["host"]["wsl"], true);
    assert_eq!(
        r["host"]["kernel_release"],
        "5.15.153.1-microsoft-standard-WSL2"
    );
    // Hyper-V's "Microsoft Basic Render Driver" (1414:008e) is no GPU vendor we track.
    assert_eq!(r["pci_devices"], json!([]));
    assert_eq!(r["kernel"]["nvidia_loaded"], false);
    assert_eq!(r["kernel"]["device_nodes"], json!(["/dev/dxg"]));
    assert_eq!(r["driver"]["version"], "560.94");
    assert_eq!(r["driver"]["cuda_version"], "12.6");
    assert_eq!(r["driver"]["source"], "nvidia-smi");
    assert_eq!(
        r["driver"]["nvidia_smi_path"],
        "/usr/lib/wsl/lib/nvidia-smi"
    );
    assert_smi_gpu(
        &r,
        "NVIDIA GeForce RTX 3080",
        "00000000:01:00.0",
        "0x2206",
        "8.6",
        10240,
    );
    // The Windows driver's libraries carry no version in their names.
    assert_subset(
        &r["driver_libraries"],
        &json!([
            {"name": "libcuda", "path": "/usr/lib/wsl/lib/libcuda.so.1", "resolved": "/usr/lib/wsl/lib/libcuda.so.1",
             "version": null, "kind": "driver", "origin": "wsl", "rank": 0},
            {"name": "libnvidia-ml", "path": "/usr/lib/wsl/lib/libnvidia-ml.so.1",
             "resolved": "/usr/lib/wsl/lib/libnvidia-ml.so.1", "version": null, "kind": "driver", "origin": "wsl",
             "rank": 0},
        ]),
    );
}

#[test]
fn container_no_dev_nvidia() {
    let r = doctor("container-no-dev-nvidia");
    // The image sets NVIDIA_VISIBLE_DEVICES=all, but the PCI bus the container sees is the
    // host's and has no NVIDIA GPU: there is nothing to pass in, so no `--gpus all` lead.
    assert_findings(&r, &["no-gpu"]);
    let f = finding(&r, "no-gpu");
    assert_eq!(f["severity"], "info");
    assert!(
        !f["fix"].as_str().unwrap_or_default().contains("--gpus"),
        "{}",
        f["fix"]
    );
    assert_eq!(r["host"]["container"], "docker");
    assert_eq!(r["kernel"]["device_nodes"], json!([]));
    assert_eq!(r["pci_devices"], json!([]));
    assert_eq!(r["driver"]["nvidia_smi"]["status"], "absent");
    assert_eq!(r["driver_libraries"], json!([]));
    // The runtime image has no nvcc and no version.json: the version comes from libcudart's name.
    assert_subset(
        &r["toolkits"],
        &json!([{
            "path": "/usr/local/cuda-12.4", "version": "12.4.127", "version_source": "libcudart", "nvcc": null,
            "found_via": ["/usr/local/cuda", "scan"]
        }]),
    );
    let cudart = &r["libraries"]["cudart"][0];
    assert_eq!(cudart["version"], "12.4.127");
    assert_eq!(cudart["on_loader_path"], true);
    assert_eq!(cudart["origin"], "toolkit");
    assert_eq!(strings(&r["libraries"]["nccl"], "version"), ["2.21.5"]);
    assert_eq!(
        strings(&r["environment"], "name"),
        [
            "NVIDIA_VISIBLE_DEVICES",
            "NVIDIA_DRIVER_CAPABILITIES",
            "LD_LIBRARY_PATH",
            "NVIDIA_REQUIRE_CUDA",
            "CUDA_VERSION"
        ]
    );
    assert_eq!(r["python_envs"], json!([]));
}

#[test]
fn amd_rocm() {
    let r = doctor("amd-rocm");
    assert_findings(&r, &[]);
    assert_subset(
        &r["pci_devices"],
        &json!([{
            "address": "0000:00:05.0", "vendor": "amd", "vendor_id": "0x1002", "device_id": "0x74a1",
            "class": "0x038000", "bound_driver": "amdgpu", "link_gen_current": 5, "link_gen_max": 5,
            "link_width_current": 16, "link_width_max": 16, "nvswitch": false
        }]),
    );
    assert_eq!(r["kernel"]["amdgpu_loaded"], true);
    assert_eq!(r["kernel"]["nvidia_loaded"], false);
    assert_eq!(r["kernel"]["device_nodes"], json!(["/dev/kfd"]));
    assert_eq!(r["kernel"]["rocm_version"], "6.2.0-66");
    let gpus = array(&r, "gpus");
    assert_eq!(gpus.len(), 1, "the MI300X, from its KFD node");
    assert_eq!(gpus[0]["vendor"], "amd");
    assert_eq!(gpus[0]["pci_device_id"], "0x74a1");
    assert_eq!(gpus[0]["gfx_target"], "gfx942");
    assert_eq!(gpus[0]["architecture"], "CDNA 3");
    assert_eq!(gpus[0]["source"], "kfd");
    assert_eq!(gpus[0]["memory_total_mib"], 192 * 1024);
    assert_eq!(r["driver"]["version"], Value::Null);
    assert_eq!(r["driver_libraries"], json!([]));
    let torch = framework(&r, "/opt/venv", "torch");
    assert_eq!(torch["version"], "2.4.1+rocm6.1");
    assert_eq!(torch["cuda"], Value::Null);
    assert_eq!(torch["rocm"], "6.1.40091-a8dbc0c19");
    assert_eq!(torch["variant"], "rocm");
    assert_subset(
        &r["environment"],
        &json!([{"name": "VIRTUAL_ENV", "value": "/opt/venv"}, {"name": "HIP_VISIBLE_DEVICES", "value": "0"},
                {"name": "ROCM_PATH", "value": "/opt/rocm"}]),
    );
}

#[test]
fn stub_libcuda_on_path() {
    let r = doctor("stub-libcuda-on-path");
    // No rule judges stubs yet; the driver rules must not mistake the stub for a mismatch.
    // The stubs folder has only libcuda.so; CUDA programs open libcuda.so.1 and still find the
    // driver, so this is a warning, not an error.
    assert_findings(&r, &["stub-libcuda-on-path"]);
    assert_eq!(finding(&r, "stub-libcuda-on-path")["severity"], "warning");
    assert_eq!(r["driver"]["version"], "550.54.15");
    for name in ["libcuda", "libnvidia-ml"] {
        let libs = driver_libs(&r, name);
        assert_eq!(libs.len(), 2, "{name}: {libs:?}");
        assert_eq!(libs[0]["rank"], 0);
        assert_eq!(libs[0]["kind"], "stub");
        assert_eq!(libs[0]["origin"], "LD_LIBRARY_PATH");
        assert_eq!(
            libs[0]["path"],
            format!("/usr/local/cuda/lib64/stubs/{name}.so")
        );
        assert_eq!(
            libs[0]["resolved"],
            format!("/usr/local/cuda-12.4/targets/x86_64-linux/lib/stubs/{name}.so")
        );
        assert_eq!(libs[0]["version"], Value::Null);
        assert_eq!(libs[1]["rank"], 1);
        assert_eq!(libs[1]["kind"], "driver");
        assert_eq!(libs[1]["version"], "550.54.15");
    }
    assert_eq!(r["toolkits"][0]["version"], "12.4.1");
    assert_smi_gpu(
        &r,
        "NVIDIA GeForce RTX 4090",
        "00000000:01:00.0",
        "0x2684",
        "8.9",
        24564,
    );
}

#[test]
fn overrides_no_gpu() {
    let r = doctor("overrides-no-gpu");
    // Told about a GPU, the report must not claim there is none.
    assert_findings(&r, &[]);
    assert_eq!(r["driver"]["version"], "550.54.15");
    assert_eq!(r["driver"]["source"], "override");
    assert_eq!(r["driver"]["cuda_version"], "12.4");
    assert_eq!(r["driver"]["nvidia_smi"]["status"], "absent");
    let gpus = array(&r, "gpus");
    assert_eq!(gpus.len(), 1);
    assert_eq!(gpus[0]["source"], "override");
    assert_eq!(gpus[0]["compute_capability"], "8.6");
    assert_eq!(
        gpus[0]["filled_from"],
        json!(["compute_capability: override"])
    );
    assert_eq!(gpus[0]["name"], Value::Null);
    assert_subset(
        &r["overrides"],
        &json!([
            {"field": "driver.version", "variable": "GPU_DOCTOR_DRIVER_VERSION", "value": "550.54.15", "detected": null},
            {"field": "driver.cuda_version", "variable": "GPU_DOCTOR_CUDA_VERSION", "value": "12.4", "detected": null},
            {"field": "gpus[].compute_capability", "variable": "GPU_DOCTOR_GPU_CC", "value": "8.6", "detected": null},
        ]),
    );
    assert_eq!(r["pci_devices"], json!([]));
    assert_eq!(r["kernel"]["nvidia_loaded"], false);
    assert_eq!(r["host"]["kernel_release"], "6.5.0-1025-azure");
    assert!(
        !strings(&r["probes"], "name").contains(&"overrides".to_string()),
        "all overrides were accepted"
    );
}

#[test]
fn old_driver_no_compute_cap() {
    let r = doctor("old-driver-no-compute-cap");
    assert_findings(&r, &[]);
    assert_eq!(r["host"]["os_version"], "20.04");
    assert_eq!(r["driver"]["version"], "470.256.02");
    assert_eq!(r["driver"]["cuda_version"], "11.4");
    assert_eq!(
        r["driver"]["nvidia_smi"]["status"], "ok",
        "only the CSV query failed"
    );
    let gpus = array(&r, "gpus");
    assert_eq!(gpus.len(), 1);
    let g = &gpus[0];
    assert_eq!(g["name"], "Tesla K80");
    assert_eq!(g["pci_device_id"], "0x102d");
    assert_eq!(g["memory_total_mib"], 11441);
    // Driver 470 cannot say; the GPU table fills it by PCI device id and says so.
    assert_eq!(g["compute_capability"], "3.7");
    assert_eq!(
        g["architecture"], "Kepler",
        "470's XML has no product_architecture"
    );
    assert_eq!(
        g["filled_from"],
        json!([
            "compute_capability: manifest gpu-ids.toml by PCI device id",
            "architecture: manifest gpu-ids.toml by PCI device id"
        ])
    );
    // Driver 470's names: power_readings/enforced_power_limit, single_bit/double_bit ECC, retired pages.
    assert_eq!(g["power_limit_w"], 149.0);
    assert_eq!(g["power_draw_w"], 28.43);
    // "gpu_idle" is active in the XML, but an idle GPU is not throttled: the probe leaves it out,
    // as NVML's list does.
    assert_eq!(g["throttle_reasons"], json!([]));
    assert_eq!(g["ecc"]["enabled"], true);
    assert_eq!(g["ecc"]["volatile_uncorrected"], 0);
    assert_eq!(g["ecc"]["retired_pages"], 0);
    assert_eq!(g["ecc"]["retired_pending"], false);
    assert_eq!(
        g["ecc"]["remapped_pending"],
        Value::Null,
        "Kepler has no row remapping"
    );
    assert_eq!(g["pcie_gen_max"], 3);
    assert_eq!(python_env(&r, "/usr")["python_version"], "3.8");
}

#[test]
fn hgx_driver_not_loaded() {
    let r = doctor("hgx-driver-not-loaded");
    assert_findings(&r, &["no-driver"]);
    let f = finding(&r, "no-driver");
    assert!(
        f["title"]
            .as_str()
            .unwrap()
            .contains("(8 GPU(s) on the bus)"),
        "{}",
        f["title"]
    );
    assert_eq!(f["explains"], json!(["nvidia-smi-failed"]));
    let pci = array(&r, "pci_devices");
    assert_eq!(
        pci.len(),
        12,
        "8 GPUs and 4 NVSwitches; the BMC's VGA is not NVIDIA/AMD"
    );
    let switches: Vec<&Value> = pci.iter().filter(|d| d["nvswitch"] == true).collect();
    assert_eq!(switches.len(), 4);
    assert!(
        switches
            .iter()
            .all(|d| d["device_id"] == "0x22a3" && d["class"] == "0x068000")
    );
    let gpus = array(&r, "gpus");
    assert_eq!(gpus.len(), 8, "NVSwitches are not GPUs");
    assert!(
        gpus.iter()
            .all(|g| g["pci_device_id"] == "0x2330" && g["source"] == "pci")
    );
    assert_eq!(r["kernel"]["nvidia_loaded"], false);
    assert_eq!(
        r["kernel"]["daemons"],
        json!([]),
        "nv-fabricmanager cannot start without the driver"
    );
    assert_eq!(
        r["driver"]["version"],
        Value::Null,
        "no module and no working nvidia-smi: unknown"
    );
    assert_eq!(r["driver"]["nvidia_smi"]["status"], "failed");
    // The installed libraries are still found; with no module there is nothing to mismatch.
    assert_eq!(driver_libs(&r, "libcuda")[0]["version"], "550.54.15");
}

/// The live gpu-doctor run on the real H200 (`tests/fixtures/real/h200-doctor.json`, NVML
/// answering) agrees with the fixture on these sections; they are copied here so this test does
/// not depend on that file.
#[expect(
    clippy::too_many_lines,
    reason = "one JSON literal, copied from the live record section by section"
)]
fn h200_live_sections() -> Value {
    let site = "/opt/torch/.venv/lib/python3.12/site-packages";
    let cu13 = format!("{site}/nvidia/cu13/lib");
    let wheel = |name: &str, version: &str, lib: Option<&str>| json!({"name": name, "version": version, "lib_dir": lib});
    json!({
        "pci_devices": [{
            "address": "0000:00:06.0", "vendor": "nvidia", "vendor_id": "0x10de", "device_id": "0x2335",
            "class": "0x030200", "bound_driver": "nvidia", "link_gen_current": 5, "link_gen_max": 5,
            "link_width_current": 16, "link_width_max": 16, "nvswitch": false
        }],
        "kernel": {
            "nvidia_loaded": true, "nvidia_version": "580.159.04", "nvidia_open": true, "nvidia_uvm_loaded": true,
            "nouveau_loaded": false, "amdgpu_loaded": false,
            "device_nodes": ["/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia0", "/dev/nvidiactl"],
            "rocm_version": null, "source": "/proc/driver/nvidia/version"
        },
        "driver_libraries": [
            {"name": "libcuda", "path": "/usr/local/nvidia/lib64/libcuda.so.1",
             "resolved": "/usr/local/nvidia/lib64/libcuda.so.580.159.04", "version": "580.159.04", "kind": "driver",
             "origin": "LD_LIBRARY_PATH", "rank": 0},
            {"name": "libcuda", "path": "/lib/libcuda.so.1", "resolved": "/usr/local/nvidia/lib64/libcuda.so.580.159.04",
             "version": "580.159.04", "kind": "driver", "origin": "default", "rank": 1},
            {"name": "libnvidia-ml", "path": "/usr/local/nvidia/lib64/libnvidia-ml.so.1",
             "resolved": "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04", "version": "580.159.04",
             "kind": "driver", "origin": "LD_LIBRARY_PATH", "rank": 0},
            {"name": "libnvidia-ml", "path": "/lib/libnvidia-ml.so.1",
             "resolved": "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04", "version": "580.159.04",
             "kind": "driver", "origin": "default", "rank": 1},
        ],
        "toolkits": [{
            "path": "/usr/local/cuda-13.0", "version": "13.0.88", "version_source": "nvcc",
            "nvcc": "/usr/local/cuda-13.0/bin/nvcc", "found_via": ["/usr/local/cuda", "scan", "CUDA_HOME", "PATH"]
        }],
        "libraries": {
            "cudnn": [
                {"version": "9.14.0", "path": "/lib/x86_64-linux-gnu/libcudnn.so.9.14.0", "origin": "system",
                 "version_source": "file-name", "on_loader_path": true},
                {"version": "9.19.0", "path": format!("{site}/nvidia/cudnn/lib/libcudnn.so.9"), "origin": "pip",
                 "version_source": "header", "on_loader_path": false},
            ],
            "nccl": [
                {"version": "2.28.3", "path": "/lib/x86_64-linux-gnu/libnccl.so.2.28.3", "origin": "system",
                 "version_source": "file-name", "on_loader_path": true},
                {"version": "2.28.9", "path": format!("{site}/nvidia/nccl/lib/libnccl.so.2"), "origin": "pip",
                 "version_source": "header", "on_loader_path": false},
            ],
            "cublas": [
                {"version": "13.1.0.3", "path": format!("{cu13}/libcublas.so.13"), "origin": "pip",
                 "version_source": "dist-info", "on_loader_path": false},
                {"version": "13.1.0.3", "path": "/usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13.1.0.3",
                 "origin": "toolkit", "version_source": "file-name", "on_loader_path": true},
            ],
            "cudart": [
                {"version": "13.0.96", "path": format!("{cu13}/libcudart.so.13"), "origin": "pip",
                 "version_source": "dist-info", "on_loader_path": false},
                {"version": "13.0.96", "path": "/usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.13.0.96",
                 "origin": "toolkit", "version_source": "file-name", "on_loader_path": true},
            ],
            "tensorrt": [],
        },
        "venv": {
            "path": "/opt/torch/.venv", "kind": "venv", "python_version": "3.12.3",
            "interpreter": "/opt/torch/.venv/bin/python3", "site_packages": [site], "found_via": ["PATH"],
            "frameworks": [
                {"name": "cupy", "version": "14.2.0", "cuda": "13", "cudnn": null, "rocm": null, "variant": "cuda",
                 "arch_list": [], "pins": [], "source": format!("{site}/cupy_cuda13x-14.2.0.dist-info")},
                {"name": "jax", "version": "0.11.2", "cuda": "13", "cudnn": null, "rocm": null, "variant": "cuda",
                 "arch_list": [],
                 "pins": ["nvidia-cublas>=13.0.0.19", "nvidia-cuda-cupti>=13.0.48",
                          "nvidia-cuda-nvrtc>=13.0.48", "nvidia-cuda-runtime>=13.0.48",
                          "nvidia-cudnn-cu13<10.0,>=9.12.0.46", "nvidia-cufft>=12.0.0.15",
                          "nvidia-cusolver>=12.0.3.29", "nvidia-cusparse>=12.6.2.49", "nvidia-nccl-cu13>=2.27.7",
                          "nvidia-nvjitlink>=13.0.39", "nvidia-nvshmem-cu13>=3.3.20"],
                 "source": format!("{site}/jax_cuda13_plugin-0.11.2.dist-info")},
                {"name": "torch", "version": "2.11.0+cu130", "cuda": "13.0", "cudnn": "9.19.0.56", "rocm": null,
                 "variant": "cuda", "arch_list": [],
                 "pins": ["cuda-toolkit==13.0.2", "nvidia-cudnn-cu13==9.19.0.56", "nvidia-cusparselt-cu13==0.8.0",
                          "nvidia-nccl-cu13==2.28.9", "nvidia-nvshmem-cu13==3.4.5"],
                 "source": format!("{site}/torch/version.py")},
            ],
            "nvidia_wheels": [
                wheel("nvidia-cublas", "13.1.0.3", Some(&cu13)),
                wheel("nvidia-cuda-cupti", "13.0.85", Some(&cu13)),
                wheel("nvidia-cuda-nvrtc", "13.0.88", Some(&cu13)),
                wheel("nvidia-cuda-runtime", "13.0.96", Some(&cu13)),
                wheel("nvidia-cudnn-cu13", "9.19.0.56", Some(&format!("{site}/nvidia/cudnn/lib"))),
                wheel("nvidia-cufft", "12.0.0.61", Some(&cu13)),
                wheel("nvidia-cufile", "1.15.1.6", Some(&cu13)),
                wheel("nvidia-curand", "10.4.0.35", Some(&cu13)),
                wheel("nvidia-cusolver", "12.0.4.66", Some(&cu13)),
                wheel("nvidia-cusparse", "12.6.3.3", Some(&cu13)),
                wheel("nvidia-cusparselt-cu13", "0.8.0", Some(&format!("{site}/nvidia/cusparselt/lib"))),
                wheel("nvidia-ml-py", "13.610.43", None),
                wheel("nvidia-nccl-cu13", "2.28.9", Some(&format!("{site}/nvidia/nccl/lib"))),
                wheel("nvidia-nvjitlink", "13.0.88", Some(&cu13)),
                wheel("nvidia-nvshmem-cu13", "3.4.5", Some(&format!("{site}/nvidia/nvshmem/lib"))),
                wheel("nvidia-nvtx", "13.0.85", Some(&cu13)),
            ],
        },
        "environment": [
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "0"},
            {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,graphics,utility"},
            {"name": "CUDA_HOME", "value": "/usr/local/cuda"},
            {"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64:/usr/local/nvidia/lib"},
        ],
    })
}

/// The H200 as nvidia-smi described it when the fixture was recorded.
fn assert_h200_gpu(g: &Value) {
    assert_eq!(g["name"], "NVIDIA H200");
    assert_eq!(g["uuid"], "GPU-93d73297-7074-b467-5b79-c5d039e92c6f");
    assert_eq!(g["pci_bus_id"], "00000000:00:06.0");
    assert_eq!(g["pci_device_id"], "0x2335");
    assert_eq!(g["compute_capability"], "9.0");
    assert_eq!(g["architecture"], "Hopper");
    assert_eq!(g["memory_total_mib"], 143771);
    assert_eq!(g["memory_used_mib"], 0);
    assert_eq!(g["temperature_c"], 39);
    assert_eq!(g["power_draw_w"], 117.12);
    assert_eq!(g["power_limit_w"], 700.0);
    assert_eq!(g["clock_sm_mhz"], 465);
    assert_eq!(g["clock_sm_max_mhz"], 1980);
    assert_eq!(g["persistence_mode"], true);
    assert_eq!(g["mig_mode"], "Disabled");
    assert_eq!(g["ecc"]["enabled"], true);
    assert_eq!(g["ecc"]["volatile_uncorrected"], 0);
    assert_eq!(g["ecc"]["remapped_pending"], false);
    assert_eq!(g["pcie_gen_current"], 5);
    assert_eq!(g["pcie_width_max"], 16);
    assert_eq!(g["source"], "nvidia-smi");
}

#[test]
fn h200() {
    let r = doctor("h200");
    // The machine works: nothing to report.
    assert_findings(&r, &[]);
    assert!(
        !severities(&r)
            .iter()
            .any(|s| s == "error" || s == "warning")
    );

    // What the brief of this machine says, key by key.
    assert_eq!(r["driver"]["version"], "580.159.04");
    assert_eq!(r["driver"]["cuda_version"], "13.0");
    assert_eq!(r["driver"]["source"], "nvidia-smi");
    assert_eq!(
        r["driver"]["nvidia_smi_path"],
        "/usr/local/nvidia/bin/nvidia-smi"
    );
    let gpus = array(&r, "gpus");
    assert_eq!(gpus.len(), 1);
    assert_h200_gpu(&gpus[0]);
    let toolkit = find(&r["toolkits"], "path", "/usr/local/cuda-13.0");
    assert_eq!(toolkit["version"], "13.0.88");
    assert_eq!(
        toolkit["version_source"], "nvcc",
        "this toolkit has no version.json"
    );
    let cudnn = strings(&r["libraries"]["cudnn"], "version");
    assert!(
        cudnn.contains(&"9.14.0".to_string()) && cudnn.contains(&"9.19.0".to_string()),
        "{cudnn:?}"
    );
    let venv = "/opt/torch/.venv";
    let torch = framework(&r, venv, "torch");
    assert_eq!(torch["version"], "2.11.0+cu130");
    assert_eq!(torch["cuda"], "13.0");
    assert_eq!(framework(&r, venv, "jax")["cuda"], "13");
    let cupy = framework(&r, venv, "cupy");
    assert_eq!(cupy["version"], "14.2.0");
    assert_eq!(cupy["cuda"], "13");
    // The compat libcuda (580.95.05) beside the toolkit and the stubs on LIBRARY_PATH are not on
    // the loader path: every loader candidate is the driver's, and the compat copy is listed
    // after them as origin "cuda-compat" (kept for its version).
    let libs = array(&r, "driver_libraries");
    assert!(
        libs.iter()
            .filter(|l| l["origin"] != "cuda-compat")
            .all(|l| l["kind"] == "driver"),
        "{libs:?}"
    );
    assert!(
        libs.iter()
            .any(|l| l["origin"] == "cuda-compat" && l["kind"] == "compat"),
        "{libs:?}"
    );

    // The host as the captures show it.
    assert_subset(
        &r["host"],
        &json!({
            "hostname": "vm", "os_id": "ubuntu", "os_version": "24.04", "os_codename": "noble",
            "os_pretty_name": "Ubuntu 24.04.3 LTS", "kernel_release": "6.18.44-fc-v657-gpu", "arch": "x86_64",
            "wsl": false, "container": "docker", "secure_boot": null
        }),
    );

    // Every file-based section equals what gpu-doctor reported live on the real machine.
    let live = h200_live_sections();
    for key in ["pci_devices", "kernel", "toolkits", "libraries"] {
        assert_subset(&r[key], &live[key]);
    }
    // The live run predates reporting the image's CUDA requirement (`NVIDIA_REQUIRE_CUDA`,
    // `CUDA_VERSION`, which the machine's environment holds): the rest is as it reported.
    let image_vars = [
        "NVIDIA_REQUIRE_CUDA",
        "NVIDIA_DISABLE_REQUIRE",
        "CUDA_VERSION",
    ];
    let environment: Vec<Value> = array(&r, "environment")
        .iter()
        .filter(|v| !image_vars.iter().any(|n| v["name"] == *n))
        .cloned()
        .collect();
    assert_subset(&Value::Array(environment), &live["environment"]);
    assert!(
        array(&r, "environment")
            .iter()
            .any(|v| v["name"] == "NVIDIA_REQUIRE_CUDA"),
        "the image's requirement is reported"
    );
    // The loader's own copies must match the live record's (real.rs checks its cuda-compat entry).
    let on_path: Vec<Value> = array(&r, "driver_libraries")
        .iter()
        .filter(|l| l["origin"] != "cuda-compat")
        .cloned()
        .collect();
    assert_subset(&Value::Array(on_path), &live["driver_libraries"]);
    assert_subset(python_env(&r, venv), &live["venv"]);
    let usr = python_env(&r, "/usr");
    assert_eq!(usr["found_via"], json!(["PATH", "system"]));
    assert_eq!(
        usr["site_packages"],
        json!([
            "/usr/lib/python3/dist-packages",
            "/usr/local/lib/python3.12/dist-packages"
        ])
    );
    assert_eq!(array(&r, "python_envs").len(), 2);
}

#[test]
fn nova_core_ada() {
    let r = doctor("nova-core-ada");
    assert_findings(&r, &["nova-core-bound"]);
    let f = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "nova-core-bound")
        .unwrap();
    let fix = f["fix"].as_str().unwrap();
    assert!(fix.contains("blacklist nova_core"), "{fix}");
    assert!(fix.contains("blacklist nova_drm"), "{fix}");
    assert!(fix.contains("update-initramfs -u"), "{fix}");
    // The text reads as prose: no runs of spaces left by a string split without `\`.
    for text in [fix, f["detail"].as_str().unwrap()] {
        assert!(!text.contains("  "), "{text}");
    }
    assert!(!fix.contains("modprobe nvidia"), "{fix}");
    assert!(!fix.contains("mokutil"), "{fix}");
    assert!(
        f["evidence"].to_string().contains("bound to NovaCore"),
        "{}",
        f["evidence"]
    );
}

/// HGX B200 (NVLink5) whose fabric manager's precheck refused to start it because `ib_umad`
/// was not loaded (spectrocloud/CanvOS#700): the fix loads the InfiniBand modules first, and the
/// evidence quotes the start script's own line from the journal (no /var/log/fabricmanager.log).
#[test]
fn hgx_b200_ib_umad_not_loaded() {
    let r = doctor("hgx-b200-ib-umad-not-loaded");
    assert_findings(&r, &["fabric-manager-not-running"]);
    assert_eq!(r["gpus"][0]["fabric"]["state"], "In Progress");
    assert_eq!(r["gpus"][0]["compute_capability"], "10.0");
    let f = finding(&r, "fabric-manager-not-running");
    // No NVSwitch on the PCI bus of an NVLink5 board: the title speaks of the fabric.
    assert_eq!(
        f["title"],
        "NVLink fabric (8 GPU(s) registering with it) without a running fabric manager"
    );
    // The cause leads the evidence.
    assert_eq!(
        f["evidence"][0],
        "NVLink5 (Blackwell) fabric: the ib_umad module is not loaded (/proc/modules)"
    );
    let evidence = f["evidence"].to_string();
    assert!(!evidence.contains("NVSwitch bridge"), "{evidence}");
    // mlx5_ib is loaded and the management ports are listed: neither is blamed.
    assert!(!evidence.contains("mlx5_ib module"), "{evidence}");
    assert!(!evidence.contains("/sys/class/infiniband"), "{evidence}");
    assert!(
        evidence.contains(
            "journalctl -u nvidia-fabricmanager: Kernel module \\\"ib_umad\\\" has not been \
             loaded, fabric manager cannot be started"
        ),
        "{evidence}"
    );
    let fix = f["fix"].as_str().unwrap();
    assert!(
        fix.starts_with("First load the InfiniBand modules")
            && fix.contains("modprobe -a ib_umad mlx5_ib"),
        "{fix}"
    );
    // The modules are installed for this kernel: no package to install.
    assert!(!fix.contains("linux-modules-extra"), "{fix}");
}

/// HGX B200 on an Ubuntu image without `linux-modules-extra` (NVIDIA/gpu-operator#2781): neither
/// `mlx5_ib` nor `ib_umad` is loaded or even installed for the running kernel, there is no
/// `/sys/class/infiniband`, and the fabric stays In Progress. `modprobe` alone would fail: the fix
/// installs the kernel's extra modules first.
#[test]
fn hgx_b200_without_infiniband_modules() {
    let r = doctor("hgx-b200-no-infiniband-modules");
    assert_findings(&r, &["fabric-manager-not-running"]);
    assert_eq!(
        r["kernel"]["infiniband_modules_absent"],
        json!(["ib_umad", "mlx5_ib"])
    );
    let f = finding(&r, "fabric-manager-not-running");
    let evidence = f["evidence"].to_string();
    for m in ["ib_umad", "mlx5_ib"] {
        assert!(
            evidence.contains(&format!(
                "the {m} module is not loaded (/proc/modules) and not installed for the running kernel"
            )),
            "{evidence}"
        );
    }
    assert!(evidence.contains("no /sys/class/infiniband"), "{evidence}");
    let fix = f["fix"].as_str().unwrap();
    assert!(
        fix.starts_with("The running kernel has no ib_umad or mlx5_ib module: install them with `sudo apt install linux-modules-extra-$(uname -r)`"),
        "{fix}"
    );
}

/// An H100 HGX whose fabric manager (550.127.05) is not the driver's version (550.120): it
/// refuses to start (akash-network/website#632, NVIDIA/gpu-operator#544). The fix makes the
/// versions equal; it never names a package version apt may not have.
#[test]
fn hgx_fabric_manager_version_mismatch() {
    let r = doctor("hgx-fabric-manager-version-mismatch");
    assert_findings(&r, &["fabric-manager-not-running"]);
    let f = finding(&r, "fabric-manager-not-running");
    // The cause leads the evidence.
    assert_eq!(
        f["evidence"][0],
        "nvidia-fabricmanager-550 550.127.05 is not the driver's version 550.120: the fabric \
         manager starts only with the driver of its own version"
    );
    let evidence = f["evidence"].to_string();
    assert!(
        evidence.contains(
            "journalctl -u nvidia-fabricmanager: fabric manager NVIDIA GPU driver interface version \
             550.127.05 doesn't match with driver version 550.120."
        ),
        "{evidence}"
    );
    let fix = f["fix"].as_str().unwrap();
    assert!(
        fix.starts_with(
            "Make the fabric manager exactly the driver's version (550.120, not 550.127.05): \
             `apt-cache madison nvidia-fabricmanager-550 | grep 550.120`"
        ),
        "{fix}"
    );
    assert!(
        fix.contains("apt-mark hold nvidia-fabricmanager-550"),
        "{fix}"
    );
    assert!(!fix.contains("=550.120-1"), "{fix}");
}

#[test]
fn hgx_fabric_in_progress() {
    let r = doctor("hgx-fabric-in-progress");
    assert_findings(&r, &["fabric-manager-not-running"]);
    assert_eq!(r["gpus"][0]["fabric"]["state"], "In Progress");
    let f = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "fabric-manager-not-running")
        .unwrap();
    let evidence = f["evidence"].to_string();
    assert!(evidence.contains("fabric state In Progress"), "{evidence}");
    assert!(!evidence.contains("NVLink5"), "{evidence}");
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .starts_with("Start it and enable it at boot"),
        "{}",
        f["fix"]
    );
}

/// A proprietary `nvidia.ko` shipped in an image (no package names it) and never loaded: its
/// own `.modinfo` tells the flavour, and that is the root cause on a Blackwell GPU.
#[test]
fn held_out_startos_proprietary_module_read_from_modinfo() {
    let r = doctor("held-out-startos-debian13-proprietary-blackwell");
    let info = &r["kernel"]["module_info"][0];
    assert_eq!(info["license"], "NVIDIA");
    assert_eq!(info["version"], "580.159.03");
    assert_eq!(info["unread"], Value::Null);
    assert_eq!(r["findings"][0]["id"], "module-flavour-unsupported");
}

/// The fixture modules are what `scripts/gen-module-elf.py` writes.
#[test]
fn fixture_module_files_are_generated() {
    generator_reproduces_its_table("gen-module-elf.py");
}

/// Debian's DKMS names the module `nvidia-current.ko`: it is found as the module built for this
/// kernel (so Secure Boot's refusal is the fix, not "no module"), and its `.modinfo` is read.
#[test]
fn debian_nvidia_current_module_is_the_built_module() {
    let r = doctor("debian12-nvidia-current-secure-boot");
    assert_eq!(
        r["kernel"]["module_files"],
        json!(["/lib/modules/6.1.0-10-amd64/updates/dkms/nvidia-current.ko"])
    );
    assert_eq!(r["kernel"]["module_info"][0]["license"], "NVIDIA");
    let fix = r["findings"][0]["fix"].as_str().unwrap_or_default();
    assert!(fix.contains("mokutil --import"), "{fix}");
    assert!(!fix.contains("has no nvidia module"), "{fix}");
}

/// numba-cuda before 0.9 takes `/usr/local/cuda`'s libNVVM (CUDA 12.5): its PTX is newer than
/// the CUDA 12.4 driver, the toolkit's own finding is folded into numba's, and the report says
/// which libNVVM it is.
#[test]
fn numba_cuda_with_a_libnvvm_newer_than_the_driver() {
    let r = doctor("numba-cuda-040-colab-t4-cuda125");
    let numba = &python_env(&r, "/home/ubuntu/venv")["numba"];
    assert_eq!(numba["numba_cuda"], "0.4.0");
    assert_eq!(
        numba["nvvm"]["path"],
        "/usr/local/cuda-12.5/nvvm/lib64/libnvvm.so"
    );
    assert_eq!(numba["nvvm"]["found_via"], "/usr/local/cuda");
    let f = finding(&r, "numba-ptx-newer-than-driver");
    assert_eq!(f["severity"], "error");
    assert_eq!(f["explains"], json!(["toolkit-newer-than-driver"]));
    assert!(
        f["title"]
            .as_str()
            .unwrap()
            .contains("CUDA 12.5.1, newer than the driver's CUDA 12.4"),
        "{f}"
    );
    assert_eq!(r["findings"][0]["id"], "numba-ptx-newer-than-driver");
}

/// Ubuntu 24.04's DKMS compresses the module it builds (`updates/dkms/nvidia.ko.zst`): its
/// `.modinfo`, read through the decompressor, says proprietary, the root cause on a Blackwell
/// GPU; no package holds the module, so the fix names the `.run` installer's flag too.
#[test]
fn ubuntu_dkms_zst_proprietary_module_is_read_compressed() {
    let r = doctor("ubuntu2404-run-dkms-zst-proprietary-rtx5090");
    let info = &r["kernel"]["module_info"][0];
    assert_eq!(
        info["path"],
        "/lib/modules/6.8.0-87-generic/updates/dkms/nvidia.ko.zst"
    );
    assert_eq!(info["license"], "NVIDIA");
    assert_eq!(info["version"], "580.95.05");
    assert_eq!(
        info["vermagic"],
        "6.8.0-87-generic SMP preempt mod_unload modversions "
    );
    assert_eq!(info["unread"], Value::Null);
    let f = &r["findings"][0];
    assert_eq!(f["id"], "module-flavour-unsupported");
    let fix = f["fix"].as_str().unwrap_or_default();
    assert!(fix.contains("nvidia-driver-580-open"), "{fix}");
    assert!(fix.contains("--kernel-module-type=open"), "{fix}");
}

/// Fedora's akmods layout (`extra/nvidia/nvidia.ko.xz`) with the open flavour on an Ada GPU:
/// read through xz, it is the right flavour, so Secure Boot's unenrolled key stays the only
/// finding.
#[test]
fn fedora_akmods_xz_open_module_is_read_and_clean_of_flavour() {
    let r = doctor("fedora40-akmods-xz-open-secure-boot");
    let info = &r["kernel"]["module_info"][0];
    assert_eq!(info["license"], "Dual MIT/GPL");
    assert_eq!(info["version"], "550.78");
    assert_eq!(
        info["vermagic"],
        "6.8.9-300.fc40.x86_64 SMP preempt mod_unload "
    );
    assert_eq!(finding_ids(&r), ["no-driver"]);
    let fix = r["findings"][0]["fix"].as_str().unwrap_or_default();
    assert!(
        fix.contains("/etc/pki/akmods/certs/public_key.der"),
        "{fix}"
    );
}

/// Gentoo's nvidia-drivers with USE=kernel-open, in `video/` and gzipped like the kernel's own
/// modules: the open flavour on a Pascal GPU, fixed in portage's words.
#[test]
fn gentoo_gz_open_module_on_pascal_is_the_wrong_flavour() {
    let r = doctor("gentoo-kernel-open-gz-gtx1080");
    let info = &r["kernel"]["module_info"][0];
    assert_eq!(
        info["path"],
        "/lib/modules/6.12.58-gentoo/video/nvidia.ko.gz"
    );
    assert_eq!(info["license"], "Dual MIT/GPL");
    let f = &r["findings"][0];
    assert_eq!(f["id"], "module-flavour-unsupported");
    let fix = f["fix"].as_str().unwrap_or_default();
    assert!(fix.contains("-kernel-open"), "{fix}");
    assert!(!fix.contains("apt"), "{fix}");
    assert!(!fix.contains(".run"), "{fix}");
}

/// SGLang's kernel package under its older name, `sgl-kernel` (mmcdermott/MEDS_EIC_AR#163): its
/// compiled module's architectures are read like `sglang-kernel`'s. Its `sm_120a` image is
/// counted as sm_120, which runs on the GB10's 12.1, so the miss itself is left (known-miss.txt).
#[test]
fn sgl_kernel_under_its_older_name_is_read_from_its_fatbin() {
    let r = doctor("held-out-dgx-spark-sglang-059-pypi-sgl-kernel-sm120a");
    let env = &r["python_envs"][0];
    let ext = env["extensions"]
        .as_array()
        .and_then(|all| all.iter().find(|e| e["name"] == "sgl-kernel"))
        .unwrap_or_else(|| panic!("no sgl-kernel in {}", env["extensions"]));
    assert_eq!(ext["version"], "0.3.21");
    assert_eq!(
        ext["fatbin_sass"],
        json!(["8.0", "8.7", "10.0", "10.1", "12.0"])
    );
}

/// ollama/ollama#17290: the runtime shipped beside each of ollama's CUDA backends is read, and
/// the CUDA 12.8 backend's PTX-only Pascal code on driver 535 is the error.
#[test]
fn ollama_backends_runtime_is_read_and_its_ptx_judged_against_the_driver() {
    let r = doctor("held-out-ollama-0321-p40-driver535-cuda128-ptx");
    let code = &r["libraries"]["cuda_code"];
    assert_eq!(code[0]["runtime"], "12.8.90", "{code}");
    assert_eq!(code[1]["runtime"], "13.0.96", "{code}");
    assert_findings(&r, &["driver-too-old-for-framework"]);
    let f = finding(&r, "driver-too-old-for-framework");
    assert!(
        f["fix"].as_str().is_some_and(|s| s.contains("570.26")),
        "{f}"
    );
}

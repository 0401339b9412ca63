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
    let dir = crate::support::tempdir();
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

/// The other direction of numba against the GPU: numba-cuda 0.22 with CUDA 13's libNVVM
/// (`nvidia-nvvm` 13.0) on a Volta GPU, which CUDA 13 no longer targets (numba-cuda asks NVRTC,
/// whose list starts at 7.5: "GPU compute capability 7.0 is not supported(requires >=7.5)",
/// `find_closest_arch` in numba_cuda/numba/cuda/cudadrv/nvrtc.py at v0.30.4). No public report
/// of it was found; the machine is the healthy one with its GPU made a V100 and its libNVVM
/// wheel moved to CUDA 13.
#[test]
fn a_volta_gpu_is_below_numba_cudas_floor_with_a_cuda13_libnvvm() {
    let r = doctor_changed("numba-cuda-0222-rtx5090-healthy", |root| {
        for file in [
            "usr/bin/nvidia-smi.query-gpu.csv",
            "usr/bin/nvidia-smi.q-x.xml",
            "proc/driver/nvidia/gpus/0000:01:00.0/information",
            "sys/devices/pci0000:01/0000:00:01.1/0000:01:00.0/device",
        ] {
            let path = root.join(file);
            let text = std::fs::read_to_string(&path).unwrap();
            let text = text
                .replace("NVIDIA GeForce RTX 5090", "Tesla V100-PCIE-16GB")
                .replace("2B8510DE", "1DB410DE")
                .replace("0x2b85", "0x1db4")
                .replace(
                    "<product_architecture>Blackwell",
                    "<product_architecture>Volta",
                )
                .replace(", 32607, 12.0", ", 16384, 7.0");
            std::fs::write(&path, text).unwrap();
        }
        let site = root.join("home/bob/proj/.venv/lib/python3.12/site-packages");
        std::fs::remove_dir_all(site.join("nvidia_cuda_nvcc_cu12-12.8.93.dist-info")).unwrap();
        let dist = site.join("nvidia_nvvm-13.0.88.dist-info");
        std::fs::create_dir_all(&dist).unwrap();
        std::fs::write(
            dist.join("METADATA"),
            "Metadata-Version: 2.1\nName: nvidia-nvvm\nVersion: 13.0.88\n",
        )
        .unwrap();
        let lib = site.join("nvidia/cu13/nvvm/lib64");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join("libnvvm.so"), "").unwrap();
    });
    let f = finding(&r, "numba-gpu-unsupported");
    assert!(
        f["title"]
            .as_str()
            .unwrap()
            .contains("the GPU is older than it supports"),
        "{f}"
    );
    assert!(
        f["evidence"]
            .to_string()
            .contains("CUDA 13.0 removed compute capability 7.0"),
        "{f}"
    );
    // CUDA 13.0's PTX on a CUDA 12.9 driver is the other numba finding of this machine (the
    // V100 under torch cu128 and the open module are its own).
    let ids = finding_ids(&r);
    assert!(
        ids.contains(&"numba-ptx-newer-than-driver".to_string()),
        "{ids:?}"
    );
}

/// An extension built against another cuDNN major than torch's (no public report of one was
/// found beside onnxruntime-gpu, which has its own rule): `flash-attn-torch-symbols-match-clean`
/// with its module's `DT_NEEDED` libcudart.so.12 rewritten in place to libcudnn.so.8 (the
/// string table entry is the same length with its padding), beside torch's cuDNN 9 wheel.
#[test]
fn an_extension_needing_another_cudnn_major_than_torch_is_a_cuda_mismatch() {
    let r = doctor_changed("flash-attn-torch-symbols-match-clean", |root| {
        let so = root.join(
            "home/ubuntu/venv/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so",
        );
        let bytes = std::fs::read(&so).unwrap();
        let from = b"libcudart.so.12\0";
        let at = bytes
            .windows(from.len())
            .position(|w| w == from)
            .expect("the module names libcudart.so.12");
        let mut patched = bytes.clone();
        patched[at..at + from.len()].copy_from_slice(b"libcudnn.so.8\0\0\0");
        std::fs::write(&so, patched).unwrap();
    });
    assert_eq!(finding_ids(&r), ["extension-cuda-mismatch"], "{r}");
    let f = finding(&r, "extension-cuda-mismatch");
    let title = f["title"].as_str().unwrap();
    assert!(title.contains("needs libcudnn.so.8"), "{title}");
    assert!(title.contains("libcudnn.so.9"), "{title}");
}

/// Triton used without torch.compile on a GPU below Triton's own floor (frameworks.toml
/// `triton_min_cc`): a plain `import triton` program, with no torch CUDA build whose own check
/// (`torch_triton_min_cc`) would judge it. The machine is triton-p100-torch-compile's P100 with
/// torch taken away and Triton 3.1.0 installed alone. triton-lang/triton#1271 (2023-03, a GTX
/// 1080: the tutorials' matmul fails, "If it's a pre-Volta GPU, we don't generate the MMA") is
/// the class's report; its machine had torch 2.0, whose own check already judges it.
#[test]
fn a_triton_program_without_torch_on_a_pascal_gpu_is_below_tritons_own_floor() {
    let r = doctor_changed("triton-p100-torch-compile", |root| {
        let site = root.join("home/ubuntu/venv/lib/python3.10/site-packages");
        std::fs::remove_dir_all(site.join("torch-2.5.1+cu124.dist-info")).unwrap();
        std::fs::remove_dir_all(site.join("torch")).unwrap();
        let dist = site.join("triton-3.1.0.dist-info");
        std::fs::create_dir_all(&dist).unwrap();
        std::fs::write(
            dist.join("METADATA"),
            "Metadata-Version: 2.1\nName: triton\nVersion: 3.1.0\n",
        )
        .unwrap();
        std::fs::create_dir_all(site.join("triton")).unwrap();
        std::fs::write(site.join("triton/__init__.py"), "").unwrap();
    });
    let f = finding(&r, "triton-gpu-too-old");
    let title = f["title"].as_str().unwrap();
    assert!(
        title.contains("Triton 3.1.0 cannot compile for GPU 0 (Tesla P100-PCIE-16GB"),
        "{f}"
    );
    assert!(title.contains("compute capability 7.0 or newer"), "{f}");
    assert_eq!(f["severity"], "info", "nothing here compiles by default");
}

/// torch-tensorrt's `tensorrt` pins (`tensorrt==`, `tensorrt-cu12-libs==` in its
/// Requires-Dist) against the TensorRT wheels installed: the machine is
/// torch-tensorrt-240-on-torch-251's, its torch-tensorrt made the 2.5 build (torch pin met)
/// and its TensorRT wheels moved to 10.3.0 while it pins 10.1.0. No public report of a
/// torch-tensorrt beside another TensorRT release that failed for it was found
/// (pytorch/TensorRT#3351 mixes TensorRT wheels of 10.1.0 and 10.7.0 under torch-tensorrt's
/// own pins, which pip had met).
#[test]
fn torch_tensorrt_beside_another_tensorrt_release_is_a_pin_mismatch() {
    let r = doctor_changed("torch-tensorrt-240-on-torch-251", |root| {
        let site = root.join("home/ubuntu/venv/lib/python3.10/site-packages");
        let meta = site.join("torch_tensorrt-2.4.0.dist-info/METADATA");
        let text = std::fs::read_to_string(&meta)
            .unwrap()
            .replace("torch (<2.5.0,>=2.4.0)", "torch (<2.6.0,>=2.5.0)");
        std::fs::write(&meta, text).unwrap();
        move_dist(site.as_path(), "tensorrt_cu12_libs", "10.1.0", "10.3.0");
    });
    let f = finding(&r, "extension-torch-mismatch");
    let title = f["title"].as_str().unwrap();
    assert!(
        title.contains("torch-tensorrt 2.4.0 needs tensorrt-cu12-libs==10.1.0"),
        "{f}"
    );
    assert!(
        title.contains("tensorrt-cu12-libs 10.3.0 is installed"),
        "{f}"
    );
    let fix = f["fix"].as_str().unwrap();
    assert!(
        fix.contains("pip install 'tensorrt-cu12-libs==10.1.0'"),
        "{fix}"
    );
    assert!(!fix.contains("--framework torch"), "{fix}");
}

/// What a hostile case puts where a file should be.
type MakeFile = fn(&Path);

/// The ptxas `TRITON_PTXAS_PATH` names is read bounded: a FIFO, a 10 GB sparse file and a link
/// loop where the program should be give no CUDA release (and no finding), and no hang.
#[test]
fn a_hostile_ptxas_behind_the_variable_is_no_release_and_no_hang() {
    let ptxas = "home/ubuntu/venv/lib/python3.12/site-packages/nvidia/cuda_nvcc/bin/ptxas";
    let fixture = "dgx-spark-gb10-triton-350-ptxas-path-pip-nvcc-cu12-128";
    let cases: [(&str, MakeFile); 3] = [
        ("fifo", |p| crate::support::mkfifo(p)),
        ("sparse", |p| {
            let f = std::fs::File::create(p).unwrap();
            f.set_len(10 << 30).unwrap();
        }),
        ("loop", |p| {
            let dir = p.parent().unwrap();
            std::os::unix::fs::symlink(dir.join("b"), dir.join("a")).unwrap();
            std::os::unix::fs::symlink(dir.join("a"), dir.join("b")).unwrap();
            std::os::unix::fs::symlink(dir.join("a"), p).unwrap();
        }),
    ];
    for (name, make) in cases {
        let r = doctor_changed(fixture, |root| {
            let p = root.join(ptxas);
            std::fs::remove_file(&p).unwrap();
            make(&p);
        });
        assert_eq!(
            r["ptxas"][0]["cuda"],
            serde_json::Value::Null,
            "{name}: {}",
            r["ptxas"]
        );
        assert!(
            !finding_ids(&r).contains(&"triton-ptxas-too-old-for-gpu".to_string()),
            "{name}"
        );
    }
}

/// A ptxas behind `TRITON_PTXAS_PATH` in a copied toolkit folder: its release is the
/// `version.json` above its `bin/` (before its bytes are searched).
#[test]
fn a_ptxas_behind_the_variable_is_dated_by_the_version_json_above_its_bin() {
    let r = doctor_changed(
        "dgx-spark-gb10-triton-350-ptxas-path-pip-nvcc-cu12-128",
        |root| {
            let dir = root.join("home/ubuntu/venv/lib/python3.12/site-packages/nvidia/cuda_nvcc");
            std::fs::write(dir.join("bin/ptxas"), "").unwrap();
            std::fs::write(
                dir.join("version.json"),
                r#"{"cuda": {"name": "CUDA SDK", "version": "12.6.3"}}"#,
            )
            .unwrap();
        },
    );
    assert_eq!(r["ptxas"][0]["cuda"], "12.6.3", "{}", r["ptxas"]);
    assert_eq!(r["ptxas"][0]["cuda_source"], "version.json");
    let f = finding(&r, "triton-ptxas-too-old-for-gpu");
    assert!(f["title"].as_str().unwrap().contains("CUDA 12.6.3"), "{f}");
}

/// NCCL against the driver (ARCHITECTURE.md's edge): an `nvidia-nccl-cu13` wheel (a program's
/// own NCCL, outside torch's cu12 pins) on an R570 driver, whose CUDA is 12.8, stops at init with
/// "NCCL WARN Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'". No
/// 2025-26 public report of this wheel was found; the machine is the cuda-python one
/// (NVIDIA/cutlass#2866) with NCCL's CUDA 13 wheel in place of the binding. Its cu12 twin is clean.
#[test]
fn an_nccl_cu13_wheel_on_an_r570_driver_is_a_driver_too_old() {
    let fixture = "held-out-b200-cutedsl-cuda-python-13-driver570";
    let site = "usr/local/lib/python3.10/dist-packages";
    let swap = |major: &'static str| {
        move |root: &Path| {
            let site = root.join(site);
            for d in ["cuda_bindings-13.0.3", "cuda_python-13.0.3"] {
                std::fs::remove_dir_all(site.join(format!("{d}.dist-info"))).unwrap();
            }
            let dist = site.join(format!("nvidia_nccl_cu{major}-2.28.9.dist-info"));
            std::fs::create_dir_all(&dist).unwrap();
            std::fs::write(
                dist.join("METADATA"),
                format!("Metadata-Version: 2.1\nName: nvidia-nccl-cu{major}\nVersion: 2.28.9\n"),
            )
            .unwrap();
        }
    };
    let r = doctor_changed(fixture, swap("13"));
    let f = finding(&r, "driver-too-old-for-framework");
    assert!(
        f["title"]
            .as_str()
            .unwrap()
            .contains("nvidia-nccl-cu13 2.28.9"),
        "{f}"
    );
    assert!(
        f["fix"].as_str().unwrap().contains("nvidia-nccl-cu12"),
        "{f}"
    );
    let r = doctor_changed(fixture, swap("12"));
    assert!(
        !finding_ids(&r).contains(&"driver-too-old-for-framework".to_string()),
        "{r}"
    );
}

/// A `TRITON_PTXAS_PATH` ptxas newer than the driver (ARCHITECTURE.md's edge): the GB10 machine
/// whose variable names the pip `nvidia-cuda-nvcc` 13.0.88 wheel's ptxas, with its driver
/// replaced by an R570 one (CUDA 12.8, through `GPU_DOCTOR_*`; its R580 libcuda removed, which
/// would otherwise count as a forward-compatibility copy) and without its cu130 torch (whose own
/// `driver-too-old-for-framework` explains the rest): the cubins a CUDA 13 ptxas writes do not
/// load there (pytorch/pytorch#119750, fixing #119054, bundles torch's own ptxas for that
/// reason). On the machine's own R580 driver it stays clean.
#[test]
fn a_ptxas_path_of_a_newer_cuda_major_than_the_driver_is_a_toolkit_newer_than_driver() {
    let fixture = "dgx-spark-gb10-triton-350-ptxas-path-pip-nvcc-cu13-clean";
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    copy_tree(&fixture_dir(fixture).join("root"), &root);
    let libs = root.join("usr/lib/aarch64-linux-gnu");
    for e in std::fs::read_dir(&libs).unwrap() {
        let e = e.unwrap();
        if e.file_name().to_string_lossy().starts_with("libcuda.so") {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
    let site = root.join("home/ubuntu/venv/lib/python3.12/site-packages");
    std::fs::remove_dir_all(site.join("torch")).unwrap();
    std::fs::remove_dir_all(site.join("torch-2.10.0.dev20251024+cu130.dist-info")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
        .env_clear()
        .envs(fixture_env(fixture))
        .env("GPU_DOCTOR_DRIVER_VERSION", "570.133.20")
        .env("GPU_DOCTOR_CUDA_VERSION", "12.8")
        .arg("--root")
        .arg(&root)
        .args(["--timeout", "2", "doctor", "--json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let found = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["id"] == "toolkit-newer-than-driver"
                && f["title"].as_str().unwrap().contains("TRITON_PTXAS_PATH")
        })
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(found["severity"], "error", "{found}");
    let clean = crate::support::doctor(fixture);
    assert!(
        !finding_ids(&clean).contains(&"toolkit-newer-than-driver".to_string()),
        "{clean}"
    );
}

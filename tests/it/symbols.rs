//! `library-symbol-missing`: a loaded library needs a symbol its resolved provider does not
//! define, read from both files' ELF symbol tables (`probe::linkmap::symbols`). The fixture
//! machines' ELF files are written by `scripts/gen-symbol-elf.py`; each README quotes its report.
//! A provider that is a FIFO, a 10 GB sparse file or a cut ELF is a fact, never a hang.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::support::{
    copy_tree, doctor, finding, finding_ids, fixture_dir, fixture_env,
    generator_reproduces_its_table, mkfifo,
};

#[test]
fn fixture_symbol_files_are_generated() {
    generator_reproduces_its_table("gen-symbol-elf.py");
}

fn text(v: &Value) -> String {
    v.to_string()
}

/// infiniflow/ragflow#4466, pytorch/pytorch#111469.
#[test]
fn a_toolkit_nvjitlink_on_ld_library_path_lacks_the_wheel_cusparse_symbols() {
    let r = doctor("torch-cusparse-nvjitlink-ld-library-path");
    assert_eq!(finding_ids(&r), ["library-symbol-missing"]);
    let gap = &r["libraries"]["symbol_gaps"][0];
    assert_eq!(gap["symbol"], "__nvJitLinkAddData_12_1");
    assert_eq!(gap["version"], "libnvJitLink.so.12");
    assert_eq!(
        gap["provider"],
        "/usr/local/cuda-12.1/lib64/libnvJitLink.so.12"
    );
    assert!(
        gap["needer"]
            .as_str()
            .unwrap()
            .ends_with("nvidia/cusparse/lib/libcusparse.so.12")
    );
    let f = finding(&r, "library-symbol-missing");
    assert_eq!(f["severity"], "error");
    let evidence = text(&f["evidence"]);
    assert!(
        evidence.contains("found through LD_LIBRARY_PATH"),
        "{evidence}"
    );
    assert!(
        evidence.contains("nvidia/nvjitlink/lib/libnvJitLink.so.12 (12.4.127)"),
        "{evidence}"
    );
    let fix = f["fix"].as_str().unwrap();
    assert!(fix.contains("env -u LD_LIBRARY_PATH"), "{fix}");
}

/// The same venv with the wheels' copies winning: nothing to report, the toolkit's older copy
/// only listed as a loser.
#[test]
fn self_consistent_wheels_are_clean() {
    let r = doctor("torch-wheels-symbols-consistent");
    assert!(finding_ids(&r).is_empty(), "{:?}", finding_ids(&r));
    assert_eq!(r["libraries"]["symbol_gaps"], Value::Array(Vec::new()));
    assert_eq!(r["libraries"]["symbols_unread"], Value::Array(Vec::new()));
}

/// pytorch/pytorch#119932: an unversioned NCCL need, matched by NCCL's prefix; the fix is the
/// NCCL wheel torch pins.
#[test]
fn torch_over_an_nccl_without_comm_register_installs_the_pinned_wheel() {
    let r = doctor("torch-nccl-wheel-without-comm-register");
    let gap = &r["libraries"]["symbol_gaps"][0];
    assert_eq!(gap["symbol"], "ncclCommRegister");
    assert_eq!(gap["version"], Value::Null);
    assert!(
        gap["needer"]
            .as_str()
            .unwrap()
            .ends_with("torch/lib/libtorch_cuda.so")
    );
    let f = finding(&r, "library-symbol-missing");
    assert!(
        f["detail"]
            .as_str()
            .unwrap()
            .contains("libtorch_cuda.so: undefined symbol: ncclCommRegister")
    );
    let fix = f["fix"].as_str().unwrap();
    assert!(
        fix.contains("pip install 'nvidia-nccl-cu12==2.20.5'"),
        "{fix}"
    );
}

/// pytorch/pytorch#103832: cuBLAS and cuBLASLt of different releases.
#[test]
fn a_wheel_cublas_over_an_older_cublaslt_is_reported() {
    let r = doctor("torch-113-cublas-wheel-system-cublaslt");
    let gap = &r["libraries"]["symbol_gaps"][0];
    assert_eq!(gap["symbol"], "cublasLtGetStatusString");
    assert_eq!(gap["version"], "libcublasLt.so.11");
    assert_eq!(gap["missing"], 1);
    assert_eq!(gap["compared"], 2);
    let f = finding(&r, "library-symbol-missing");
    assert!(text(&f["evidence"]).contains("nvidia/cublas/lib/libcublasLt.so.11 (11.10.3.66)"));
}

/// The fixture machine copied into a scratch folder, to break one of its files.
struct Scratch {
    dir: tempfile::TempDir,
    env: Vec<(String, String)>,
}

impl Scratch {
    fn of(name: &str) -> Scratch {
        let dir = crate::support::tempdir();
        copy_tree(&fixture_dir(name).join("root"), &dir.path().join("root"));
        Scratch {
            dir,
            env: fixture_env(name),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join("root").join(rel)
    }

    fn doctor(&self) -> Value {
        let out = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .arg("--root")
            .arg(self.dir.path().join("root"))
            .args(["--timeout", "2", "doctor", "--json"])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
    }
}

const TOOLKIT_JIT: &str = "usr/local/cuda-12.1/targets/x86_64-linux/lib/libnvJitLink.so.12";

#[test]
fn a_fifo_provider_is_skipped_not_waited_on() {
    let m = Scratch::of("torch-cusparse-nvjitlink-ld-library-path");
    mkfifo(&m.path(TOOLKIT_JIT));
    let r = m.doctor();
    assert!(!finding_ids(&r).contains(&"library-symbol-missing".to_string()));
}

#[test]
fn a_sparse_ten_gigabyte_provider_costs_its_tables_only() {
    let m = Scratch::of("torch-cusparse-nvjitlink-ld-library-path");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(m.path(TOOLKIT_JIT))
        .unwrap();
    f.set_len(10 << 30).unwrap();
    let r = m.doctor();
    // The tables sit at the front; the gap is still read.
    assert_eq!(
        r["libraries"]["symbol_gaps"][0]["symbol"],
        "__nvJitLinkAddData_12_1"
    );
}

#[test]
fn a_cut_provider_is_a_reason_in_the_report() {
    let m = Scratch::of("torch-cusparse-nvjitlink-ld-library-path");
    let path = m.path(TOOLKIT_JIT);
    let bytes = std::fs::read(&path).unwrap();
    // Cut inside the section header table at the end: the dynamic section (near the front)
    // still reads, the symbol tables' index does not.
    std::fs::write(&path, &bytes[..bytes.len() - 40]).unwrap();
    let r = m.doctor();
    let unread = &r["libraries"]["symbols_unread"][0];
    assert_eq!(
        unread["path"],
        "/usr/local/cuda-12.1/lib64/libnvJitLink.so.12"
    );
    assert_eq!(unread["why"], "no readable section header table");
    assert!(!finding_ids(&r).contains(&"library-symbol-missing".to_string()));
}

/// `explain` of the reports' own words on each machine names this finding as the cause.
#[test]
fn the_reports_errors_are_explained_by_the_missing_symbol() {
    let cases = [
        (
            "torch-cusparse-nvjitlink-ld-library-path",
            "ImportError: /home/ubuntu/venv/lib/python3.10/site-packages/torch/lib/../../nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: __nvJitLinkAddData_12_1, version libnvJitLink.so.12",
            "loader-undefined-symbol-versioned",
        ),
        (
            "torch-nccl-wheel-without-comm-register",
            "ImportError: /home/ubuntu/venv/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: ncclCommRegister",
            "torch-cuda-undefined-symbol",
        ),
        (
            "torch-113-cublas-wheel-system-cublaslt",
            "OSError: /home/ubuntu/venv/lib/python3.10/site-packages/torch/lib/../../nvidia/cublas/lib/libcublas.so.11: undefined symbol: cublasLtGetStatusString, version libcublasLt.so.11",
            "loader-undefined-symbol-versioned",
        ),
    ];
    for (name, words, row) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
            .env_clear()
            .envs(fixture_env(name))
            .arg("--root")
            .arg(fixture_dir(name).join("root"))
            .args(["--timeout", "2", "explain", "--json", "--", words])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let e = &v["explain"];
        assert_eq!(e["signatures"][0]["id"], row, "{name}: {e}");
        assert_eq!(e["cause"], "library-symbol-missing", "{name}: {e}");
    }
}

/// The flash-attn machine of Dao-AILab/flash-attention#1644: its module and torch's libc10.so sit
/// in the user site folder.
const ABI_MACHINE: &str = "held-out-flash-attn-2741-abi-false-torch270-user-site";
const USER_SITE: &str = "home/inferencer/.local/lib/python3.10/site-packages";

/// The extension's missing torch symbols (`null` when none).
fn torch_gap(r: &Value) -> Value {
    r["python_envs"][0]["extensions"][0]["torch_symbols_missing"].clone()
}

#[test]
fn a_torch_library_that_is_a_fifo_leaves_the_abi_unjudged_without_waiting() {
    let m = Scratch::of(ABI_MACHINE);
    mkfifo(&m.path(&format!("{USER_SITE}/torch/lib/libc10.so")));
    let r = m.doctor();
    assert!(torch_gap(&r).is_null());
    assert!(!finding_ids(&r).contains(&"extension-torch-mismatch".to_string()));
}

#[test]
fn a_sparse_ten_gigabyte_libc10_costs_its_tables_only() {
    let m = Scratch::of(ABI_MACHINE);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(m.path(&format!("{USER_SITE}/torch/lib/libc10.so")))
        .unwrap();
    f.set_len(10 << 30).unwrap();
    let r = m.doctor();
    assert_eq!(torch_gap(&r)[0], "_ZN3c105ErrorC2ENS_14SourceLocationESs");
    assert_eq!(
        r["python_envs"][0]["extensions"][0]["torch_symbols_abi"],
        "pre-cxx11"
    );
}

#[test]
fn a_module_in_a_link_loop_or_cut_short_is_not_read_and_not_a_crash() {
    let m = Scratch::of(ABI_MACHINE);
    let module = m.path(&format!(
        "{USER_SITE}/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so"
    ));
    let bytes = std::fs::read(&module).unwrap();
    std::fs::write(&module, &bytes[..bytes.len() - 40]).unwrap();
    assert!(torch_gap(&m.doctor()).is_null());
    std::fs::remove_file(&module).unwrap();
    std::os::unix::fs::symlink(&module, &module).unwrap();
    assert!(torch_gap(&m.doctor()).is_null());
}

#[test]
fn a_user_site_in_a_link_loop_is_no_environment_and_no_hang() {
    let m = Scratch::of(ABI_MACHINE);
    let site = m.path(USER_SITE);
    std::fs::remove_dir_all(&site).unwrap();
    std::os::unix::fs::symlink(&site, &site).unwrap();
    let r = m.doctor();
    assert!(
        r["python_envs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["frameworks"].as_array().is_none_or(Vec::is_empty))
    );
}

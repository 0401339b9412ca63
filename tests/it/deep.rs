//! `doctor --deep` and `smoke --frameworks` on this machine (not `--root`: interpreters of a
//! fixture tree are never run), with a throw-away venv of the real python3 whose site-packages
//! hold stand-in frameworks that behave like the real ones on a broken machine: a torch that
//! warns its driver is too old, a torch whose import hangs. `-I` ignores PYTHONPATH, so a venv is
//! the honest way to put them in front of the probe.
//!
//! Also: the reports recorded on the real H200 (`tests/fixtures/real/h200-deep.json`,
//! `h200-smoke-frameworks.json`), checked when they are there.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{find, framework, texts};

/// A venv made by the real python3, with stand-in packages written into its site-packages.
struct Venv {
    /// Holds the venv, the working folder and HOME; removed on drop.
    dir: tempfile::TempDir,
    prefix: PathBuf,
    site: PathBuf,
}

impl Venv {
    fn new() -> Venv {
        let dir = crate::support::tempdir();
        let base = dir.path().canonicalize().expect("canonical temp dir");
        let prefix = base.join("venv");
        let made = Command::new("python3")
            .args(["-m", "venv", "--without-pip"])
            .arg(&prefix)
            .output()
            .expect("python3 is on PATH (3.11 in CI)");
        assert!(
            made.status.success(),
            "python3 -m venv: {}",
            String::from_utf8_lossy(&made.stderr)
        );
        let site = Command::new(prefix.join("bin/python3"))
            .args([
                "-I",
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ])
            .output()
            .expect("venv python");
        let site = PathBuf::from(String::from_utf8_lossy(&site.stdout).trim());
        assert!(site.is_dir(), "site-packages {}", site.display());
        std::fs::create_dir_all(base.join("work")).expect("work dir");
        Venv { dir, prefix, site }
    }

    fn base(&self) -> PathBuf {
        self.prefix.parent().expect("venv parent").to_path_buf()
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.site.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("package dir");
        std::fs::write(&path, text).expect("write package file");
    }

    /// A torch package: `version.py` for the file probe, and `__init__.py` with `body`.
    fn torch(&self, body: &str) {
        self.write(
            "torch/version.py",
            "__version__ = '2.11.0+cu130'\ncuda = '13.0'\nhip = None\n",
        );
        self.write("torch/__init__.py", body);
    }

    /// A package that sleeps `secs` when imported, with the dist-info the file probe needs.
    fn slow(&self, name: &str, version: &str, secs: f64) {
        self.write(
            &format!("{name}/__init__.py"),
            &format!("import time\ntime.sleep({secs})\n__version__ = '{version}'\n"),
        );
        self.write(
            &format!("{name}-{version}.dist-info/METADATA"),
            &format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"),
        );
    }

    /// Runs gpu-doctor on this machine with only this venv's environment, from `work/`.
    fn run(&self, args: &[&str]) -> (Output, Duration) {
        let start = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
            .env_clear()
            .env(
                "PATH",
                format!("{}/bin:/usr/bin:/bin", self.prefix.display()),
            )
            .env("VIRTUAL_ENV", &self.prefix)
            .env("HOME", self.base())
            .env("TMPDIR", self.dir.path())
            .current_dir(self.base().join("work"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("gpu-doctor runs");
        (out, start.elapsed())
    }

    fn report(&self, args: &[&str]) -> (Value, Duration) {
        let (out, took) = self.run(args);
        let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}); exit {:?}\nstderr:\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (report, took)
    }

    fn runtime<'a>(&self, report: &'a Value, name: &str) -> &'a Value {
        &framework(report, &self.prefix.display().to_string(), name)["runtime"]
    }
}

/// torch 2.11.0+cu130 on a driver for CUDA 12.8, as it reports itself: `is_available()` False
/// with the warning text of c10/cuda/CUDAFunctions.cpp (compat-frameworks.md §2.2), an arch
/// list only from the build flags (the public call gives [] without a GPU), and its working
/// folder written to stderr so the test can see where it ran.
const BLIND_TORCH: &str = r#"
import os, sys, warnings
from . import version
from .version import __version__
sys.stderr.write("fake torch imported from %s; cwd=%s entries=%d\n" % (__file__, os.getcwd(), len(os.listdir("."))))

class _Cudnn:
    @staticmethod
    def version():
        return 91900

class backends:
    cudnn = _Cudnn()

class _Nccl:
    @staticmethod
    def version():
        return (2, 28, 9)

class cuda:
    nccl = _Nccl()

    @staticmethod
    def is_available():
        warnings.warn(
            "CUDA initialization: The NVIDIA driver on your system is too old (found version 12080). "
            "Please update your GPU driver by downloading and installing a new version from the URL: "
            "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to "
            "install a PyTorch version that has been compiled with your version of the CUDA driver. "
            "(Triggered internally at /pytorch/c10/cuda/CUDAFunctions.cpp:119.)",
            UserWarning,
        )
        return False

    @staticmethod
    def device_count():
        return 0

    @staticmethod
    def get_arch_list():
        return []

class _C:
    @staticmethod
    def _cuda_getArchFlags():
        return "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120"
"#;

/// A `torch.py` where gpu-doctor is started: importing it leaves a mark.
const STRAY_TORCH: &str = "open(__file__ + '.imported', 'w').close()\n__version__ = 'stray'\n";

#[test]
fn deep_reports_what_the_environments_own_torch_says() {
    let venv = Venv::new();
    venv.torch(BLIND_TORCH);
    let work = venv.base().join("work");
    std::fs::write(work.join("torch.py"), STRAY_TORCH).expect("stray torch.py");
    let (report, _) = venv.report(&["doctor", "--deep", "--json"]);
    let rt = venv.runtime(&report, "torch");
    assert_eq!(rt["status"], "ok", "{rt:#}");
    assert_eq!(rt["version"], "2.11.0+cu130");
    assert_eq!(rt["cuda"], "13.0");
    assert_eq!(rt["cudnn"], "9.19.0", "91900 decoded");
    assert_eq!(rt["nccl"], "2.28.9");
    assert_eq!(rt["gpu_available"], false);
    assert_eq!(rt["device_count"], 0);
    assert_eq!(
        rt["arch_list"],
        serde_json::json!(["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"])
    );
    assert_eq!(
        rt["interpreter"],
        venv.prefix.join("bin/python3").display().to_string()
    );
    let warnings = texts(&rt["warnings"]);
    assert!(
        warnings.iter().any(|w| w.starts_with("UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 12080)")),
        "{warnings:?}"
    );
    // The venv's torch answered, from a fresh empty folder; the stray torch.py never ran.
    let module = rt["module_path"].as_str().expect("module_path");
    assert!(Path::new(module).starts_with(&venv.site), "{module}");
    let stderr = texts(&rt["stderr"]).join("\n");
    assert!(stderr.contains("entries=0"), "{stderr}");
    assert!(!stderr.contains(&work.display().to_string()), "{stderr}");
    assert!(
        !work.join("torch.py.imported").exists(),
        "the stray torch.py was imported"
    );
    // The scratch folders are gone.
    let left: Vec<_> = std::fs::read_dir(venv.dir.path())
        .expect("temp dir")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("gpu-doctor-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // This machine has no GPU a driver reports, so seeing none is no finding.
    let ids: Vec<&str> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["id"].as_str())
        .collect();
    assert!(!ids.contains(&"framework-cannot-see-gpu"), "{ids:?}");
    // The report with runtime facts is what the schema describes.
    let schema: Value =
        serde_json::from_str(include_str!("../../schema/report.schema.json")).expect("schema");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&report)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn deep_text_shows_the_frameworks_answer() {
    let venv = Venv::new();
    venv.torch(BLIND_TORCH);
    let (out, _) = venv.run(&["doctor", "--deep"]);
    // 1: the blind torch is an error finding; the report is written all the same.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let section = text
        .split("\nFrameworks at run time\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no run-time section:\n{text}"));
    assert!(
        section.contains("torch 2.11.0+cu130: sees NO GPU; CUDA 13.0, cuDNN 9.19.0, NCCL 2.28.9"),
        "{section}"
    );
    assert!(
        section.contains(
            "warning: UserWarning: CUDA initialization: The NVIDIA driver on your system is too old"
        ),
        "{section}"
    );
}

#[test]
fn a_hanging_import_is_stopped_and_the_others_still_answer_in_parallel() {
    let venv = Venv::new();
    venv.torch("import time\ntime.sleep(300)\n");
    // Three frameworks that each take 1.5 s to import: one after another they would take 4.5 s.
    venv.slow("jax", "0.11.2", 1.5);
    venv.slow("tensorflow", "2.20.0", 1.5);
    venv.slow("cupy", "14.2.0", 1.5);
    let (report, took) = venv.report(&["doctor", "--deep", "--deep-timeout", "3", "--json"]);
    let torch = venv.runtime(&report, "torch");
    assert_eq!(torch["status"], "timed_out", "{torch:#}");
    assert_eq!(
        torch["detail"],
        "did not finish within 3 s and was stopped during `import torch`"
    );
    let mut durations = Vec::new();
    for name in ["jax", "tensorflow", "cupy"] {
        let rt = venv.runtime(&report, name);
        assert_eq!(rt["status"], "ok", "{name}: {rt:#}");
        let ms = rt["import_ms"].as_u64().expect("import_ms");
        assert!(ms >= 1400, "{name} imported in {ms} ms");
        durations.push(ms);
    }
    // The scan costs its slowest probe (the 3 s deadline), not the sum (3 + 4.5 s).
    assert!(
        took < Duration::from_millis(3000 + 3500),
        "the deep scan took {took:?}: probes did not run in parallel"
    );
    let probe_failed = find(&report["findings"], "id", "framework-probe-failed");
    assert_eq!(probe_failed["severity"], "warning");
    assert!(
        texts(&probe_failed["evidence"])
            .iter()
            .any(|e| e.contains("during `import torch`")),
        "{probe_failed:#}"
    );
}

#[test]
fn smoke_frameworks_says_why_no_computation_ran() {
    let venv = Venv::new();
    venv.torch(BLIND_TORCH);
    let (out, _) = venv.run(&["smoke", "--frameworks", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let smoke = &venv.runtime(&report, "torch")["smoke"];
    assert_eq!(
        smoke["error"], "torch.cuda.is_available() is False",
        "{smoke:#}"
    );
    assert_eq!(smoke["matmuls"], serde_json::json!([]));
    assert_eq!(smoke["allreduce"], Value::Null);
    // No GPU driver here: the driver-level smoke test cannot run (exit 3); with one it would
    // decide on its own.
    if report["smoke"]["status"] == "could_not_run" {
        assert_eq!(out.status.code(), Some(3));
    }
}

#[test]
fn under_root_interpreters_are_not_run_and_that_is_said() {
    let fixture = crate::support::fixture_dir("torch-cuda-venv");
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
        .env_clear()
        .envs(crate::support::fixture_env("torch-cuda-venv"))
        .arg("--root")
        .arg(fixture.join("root"))
        .args(["doctor", "--deep", "--json"])
        .output()
        .expect("gpu-doctor");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let runtimes: Vec<&Value> = report["python_envs"]
        .as_array()
        .expect("envs")
        .iter()
        .flat_map(|e| e["frameworks"].as_array().into_iter().flatten())
        .map(|f| &f["runtime"])
        .collect();
    assert!(!runtimes.is_empty());
    for rt in runtimes {
        assert_eq!(rt["status"], "skipped", "{rt:#}");
        assert_eq!(rt["detail"], "interpreters are not run under --root");
    }
}

#[test]
fn deep_timeout_is_checked_and_needs_its_flag() {
    for args in [
        &["doctor", "--deep", "--deep-timeout", "0"][..],
        &["doctor", "--deep-timeout", "5"][..],
        &["smoke", "--deep-timeout", "5"][..],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
            .args(args)
            .env_clear()
            .output()
            .expect("gpu-doctor");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn the_probe_script_is_python_3_8_syntax() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/deep/probe.py");
    let out = Command::new("python3")
        .args([
            "-I",
            "-c",
            "import ast, sys; ast.parse(open(sys.argv[1]).read(), feature_version=(3, 8))",
        ])
        .arg(&script)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A report recorded on the real H200 (`gpu-doctor ... --json` with /opt/torch/.venv on PATH),
/// or `None` with a note when it has not been recorded yet.
fn recorded(name: &str) -> Option<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/real")
        .join(name);
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("skipped: {} is not recorded yet", path.display());
        return None;
    };
    Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// The H200's venv (torch 2.11.0+cu130, JAX 0.11.2, CuPy 14.2.0; tests/data/h200/README.md).
const H200_VENV: &str = "/opt/torch/.venv";

fn h200_runtime<'a>(r: &'a Value, name: &str) -> &'a Value {
    let rt = &framework(r, H200_VENV, name)["runtime"];
    assert_eq!(rt["status"], "ok", "{name}: {rt:#}");
    rt
}

#[test]
fn deep_on_the_real_h200_sees_the_gpu_in_every_framework() {
    let Some(r) = recorded("h200-deep.json") else {
        return;
    };
    let torch = h200_runtime(&r, "torch");
    assert_eq!(torch["version"], "2.11.0+cu130");
    assert_eq!(torch["cuda"], "13.0");
    assert_eq!(
        torch["cudnn"], "9.19.0",
        "91900 in tests/data/h200/torch.txt"
    );
    assert_eq!(torch["nccl"], "2.28.9");
    assert_eq!(torch["gpu_available"], true);
    assert_eq!(torch["device_count"], 1);
    assert_eq!(torch["devices"][0]["name"], "NVIDIA H200");
    assert_eq!(torch["devices"][0]["compute_capability"], "9.0");
    assert!(
        texts(&torch["arch_list"]).contains(&"sm_90".to_string()),
        "{:#}",
        torch["arch_list"]
    );
    let jax = h200_runtime(&r, "jax");
    assert_eq!(jax["gpu_available"], true);
    assert_eq!(jax["backend"], "gpu");
    assert!(
        jax["devices"]
            .as_array()
            .is_some_and(|d| d.iter().any(|d| d["name"] == "NVIDIA H200")),
        "{jax:#}"
    );
    let cupy = h200_runtime(&r, "cupy");
    let runtime = cupy["cuda_runtime_version"].as_u64();
    assert!(
        matches!(runtime, Some(13020 | 13000)),
        "CuPy runtime {runtime:?} (show_config: 13020 linked, 13000 local)"
    );
    assert_eq!(cupy["cuda_driver_version"], 13000);
    assert_eq!(cupy["device_count"], 1);
    let serious: Vec<&Value> = r["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["severity"] != "info")
        .collect();
    assert!(serious.is_empty(), "{serious:#?}");
}

#[test]
fn smoke_frameworks_on_the_real_h200_computes_in_every_framework() {
    let Some(r) = recorded("h200-smoke-frameworks.json") else {
        return;
    };
    for name in ["torch", "jax", "cupy"] {
        let smoke = &h200_runtime(&r, name)["smoke"];
        let matmuls = smoke["matmuls"].as_array().expect("matmuls");
        assert_eq!(matmuls.len(), 1, "{name}: {smoke:#}");
        for m in matmuls {
            assert_eq!(m["passed"], true, "{name}: {m:#}");
            assert!(
                m["max_rel_error"].as_f64().is_some_and(|e| e < 1e-3),
                "{name}: {m:#}"
            );
        }
        // One GPU: no all-reduce to run.
        assert_eq!(smoke["allreduce"], Value::Null, "{name}");
    }
    assert_eq!(r["smoke"]["status"], "passed");
}

//! Which copy of each CUDA library a framework loads (`libraries.loads`), on machines whose
//! libraries are real ELF files built here with `cc -shared -Wl,-soname,...`, so the loader
//! model reads real dynamic sections: `$ORIGIN`, RPATH against RUNPATH, an inherited RPATH,
//! `/etc/ld.so.cache` written by `ldconfig`, and the findings real loader-order reports need.
//!
//! Each machine starts as a copy of a fixture machine (`tests/fixtures/<name>/root`) in a
//! temporary folder; the ELF files are written over the fixture's empty stand-ins.
//!
//! The reports they are modelled on:
//! - pytorch/pytorch#111469 and infiniflow/ragflow#4466: "ImportError: .../torch/lib/../../nvidia/
//!   cusparse/lib/libcusparse.so.12: undefined symbol: __nvJitLinkAddData_12_1, version
//!   libnvJitLink.so.12", with `LD_LIBRARY_PATH=/usr/local/cuda-12.1/lib64` and `ldd` showing
//!   `libnvJitLink.so.12 => /usr/local/cuda-12.1/lib64/libnvJitLink.so.12`. The maintainers'
//!   answer (ptrblck, #111469): not reproducible with a clean `pip install torch`; the
//!   user's LD_LIBRARY_PATH puts an older toolkit's nvJitLink first — unset it or put the
//!   wheel's folder first.
//! - jax-ml/jax#30050 ("jaxlib 0.6.2 (CUDA 12) fails to start: Unable to load cuSPARSE"): the
//!   loader's trace shows `libnvJitLink.so.12` needed by the wheel's `libcusparse.so.12` found
//!   in an HPC SDK folder on LD_LIBRARY_PATH; fixed by taking that folder off LD_LIBRARY_PATH.
//! - pytorch/pytorch#80637-style "cuDNN version incompatibility ... Looks like your
//!   LD_LIBRARY_PATH contains incompatible version of cudnn" (the RPATH/RUNPATH cases).
//! - tensorflow "Could not load dynamic library 'libcudart.so.12'" / "libcudart.so.11.0: cannot
//!   open shared object file" after `pip install tensorflow` without its CUDA libraries; the
//!   maintainers' fix: `pip install tensorflow[and-cuda]` or the CUDA toolkit it was built for.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use tempfile::TempDir;

use crate::support::{fixture_dir, fixture_env, run_watched};

const SITE: &str = "home/ubuntu/venv/lib/python3.10/site-packages";

/// A fixture machine copied into a temporary folder, to be given real ELF files.
pub struct Machine {
    dir: TempDir,
    pub env: Vec<(String, String)>,
}

impl Machine {
    fn from_fixture(name: &str) -> Machine {
        let dir = crate::support::tempdir();
        let ok = Command::new("cp")
            .arg("-a")
            .arg(fixture_dir(name).join("root"))
            .arg(dir.path())
            .status()
            .expect("cp")
            .success();
        assert!(ok, "copying {name}");
        Machine {
            dir,
            env: fixture_env(name),
        }
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    pub fn path(&self, machine_path: &str) -> PathBuf {
        self.root().join(machine_path.trim_start_matches('/'))
    }

    /// Builds a shared object at `machine_path` with this soname, `DT_NEEDED` on each of
    /// `needed` (machine paths of libraries built before), and extra linker flags.
    fn lib(&self, machine_path: &str, soname: &str, needed: &[&str], flags: &[&str]) {
        let out = self.path(machine_path);
        std::fs::create_dir_all(out.parent().expect("parent")).expect("mkdir");
        let _ = std::fs::remove_file(&out);
        let src = self.dir.path().join("f.c");
        std::fs::write(&src, "int gpu_doctor_test_symbol(void) { return 0; }\n").expect("src");
        let mut cc = Command::new("cc");
        cc.args(["-shared", "-fPIC", "-o"])
            .arg(&out)
            .arg(&src)
            .arg(format!("-Wl,-soname,{soname}"))
            .arg("-Wl,--no-as-needed");
        for n in needed {
            cc.arg(self.path(n));
        }
        cc.args(flags);
        let result = cc
            .output()
            .expect("cc must be installed to build test libraries");
        assert!(
            result.status.success(),
            "cc: {}",
            String::from_utf8_lossy(&result.stderr)
        );
    }

    fn link(&self, machine_path: &str, target: &str) {
        let at = self.path(machine_path);
        let _ = std::fs::remove_file(&at);
        std::os::unix::fs::symlink(target, at).expect("symlink");
    }

    pub fn write(&self, machine_path: &str, text: &str) {
        let at = self.path(machine_path);
        std::fs::create_dir_all(at.parent().expect("parent")).expect("mkdir");
        std::fs::write(at, text).expect("write");
    }

    fn doctor(&self, extra: &[(&str, &str)]) -> Value {
        let out = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .envs(extra.iter().copied())
            .arg("--root")
            .arg(self.root())
            .args(["--timeout", "2", "doctor", "--json"])
            .output()
            .expect("gpu-doctor runs");
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
        })
    }
}

impl Machine {
    /// `gpu-doctor explain --json` of `text` on this machine.
    fn explain(&self, extra: &[(&str, &str)], text: &str) -> Value {
        let out = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .envs(extra.iter().copied())
            .arg("--root")
            .arg(self.root())
            .args(["--timeout", "2", "explain", "--json", "--", text])
            .output()
            .expect("gpu-doctor runs");
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
        })
    }
}

/// The load of `soname` for `framework`.
pub fn load<'a>(r: &'a Value, framework: &str, soname: &str) -> &'a Value {
    loads(r, framework, soname)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("{framework} has no {soname}: {}", r["libraries"]["loads"]))
}

/// Every load of `soname` for `framework` (a soname a process maps twice has two).
fn loads<'a>(r: &'a Value, framework: &str, soname: &str) -> Vec<&'a Value> {
    r["libraries"]["loads"]
        .as_array()
        .expect("loads")
        .iter()
        .filter(|f| f["framework"] == framework)
        .flat_map(|f| f["libraries"].as_array().expect("libraries"))
        .filter(|l| l["soname"] == soname)
        .collect()
}

fn ids(r: &Value) -> Vec<&str> {
    r["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["id"].as_str())
        .collect()
}

fn finding<'a>(r: &'a Value, id: &str) -> &'a Value {
    r["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {:?}", ids(r)))
}

/// torch 2.4 (cu121) with real wheel libraries: `libtorch_global_deps.so` needs cuDNN and
/// cuSPARSE through a `$ORIGIN` RUNPATH; the cuSPARSE wheel needs nvJitLink through its own.
/// An older CUDA 12.1 toolkit's nvJitLink sits in /usr/local/cuda-12.1/lib64.
fn torch_with_cusparse() -> Machine {
    let m = Machine::from_fixture("torch-cuda-venv");
    let site = format!("/{SITE}");
    m.lib(
        &format!("{site}/nvidia/nvjitlink/lib/libnvJitLink.so.12"),
        "libnvJitLink.so.12",
        &[],
        &[],
    );
    m.write(
        &format!("{site}/nvidia_nvjitlink_cu12-12.4.127.dist-info/RECORD"),
        "nvidia/nvjitlink/lib/libnvJitLink.so.12,sha256=x,1\n",
    );
    m.lib(
        &format!("{site}/nvidia/cusparse/lib/libcusparse.so.12"),
        "libcusparse.so.12",
        &[&format!("{site}/nvidia/nvjitlink/lib/libnvJitLink.so.12")],
        &["-Wl,--enable-new-dtags,-rpath,$ORIGIN/../../nvjitlink/lib"],
    );
    m.write(
        &format!("{site}/nvidia_cusparse_cu12-12.3.1.170.dist-info/RECORD"),
        "nvidia/cusparse/lib/libcusparse.so.12,sha256=x,1\n",
    );
    m.lib(
        &format!("{site}/nvidia/cudnn/lib/libcudnn.so.9"),
        "libcudnn.so.9",
        &[],
        // cuDNN 9 ships with RUNPATH $ORIGIN (spack/spack-packages#3399).
        &["-Wl,--enable-new-dtags,-rpath,$ORIGIN"],
    );
    m.lib(
        &format!("{site}/torch/lib/libtorch_global_deps.so"),
        "libtorch_global_deps.so",
        &[
            &format!("{site}/nvidia/cusparse/lib/libcusparse.so.12"),
            &format!("{site}/nvidia/cudnn/lib/libcudnn.so.9"),
        ],
        &["-Wl,--enable-new-dtags,-rpath,$ORIGIN/../../nvidia/cusparse/lib:$ORIGIN/../../nvidia/cudnn/lib:$ORIGIN/../../nvidia/nvjitlink/lib"],
    );
    m.lib(
        "/usr/local/cuda-12.1/targets/x86_64-linux/lib/libnvJitLink.so.12.1.105",
        "libnvJitLink.so.12",
        &[],
        &[],
    );
    m.link(
        "/usr/local/cuda-12.1/targets/x86_64-linux/lib/libnvJitLink.so.12",
        "libnvJitLink.so.12.1.105",
    );
    m.link("/usr/local/cuda-12.1/lib64", "targets/x86_64-linux/lib");
    m
}

#[test]
fn origin_runpath_finds_the_wheels_and_each_copy_has_its_owner() {
    let m = torch_with_cusparse();
    let r = m.doctor(&[]);
    let site = format!("/{SITE}");
    let fl = r["libraries"]["loads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["framework"] == "torch")
        .expect("torch loads");
    assert_eq!(fl["basis"], "elf");
    let cudnn = load(&r, "torch", "libcudnn.so.9");
    assert_eq!(
        cudnn["path"],
        format!("{site}/nvidia/cudnn/lib/libcudnn.so.9").as_str()
    );
    assert_eq!(cudnn["via"], "RUNPATH");
    assert_eq!(cudnn["owner"]["kind"], "pip");
    assert_eq!(cudnn["owner"]["package"], "nvidia-cudnn-cu12");
    assert_eq!(cudnn["owner"]["source"], "RECORD");
    let jit = load(&r, "torch", "libnvJitLink.so.12");
    assert_eq!(
        jit["path"],
        format!("{site}/nvidia/nvjitlink/lib/libnvJitLink.so.12").as_str()
    );
    // Needed by the cuSPARSE wheel, found through cuSPARSE's own $ORIGIN RUNPATH.
    assert!(
        jit["needed_by"]
            .as_str()
            .unwrap()
            .ends_with("nvidia/cusparse/lib/libcusparse.so.12"),
        "{jit}"
    );
    assert_eq!(jit["version"], "12.4.127");
    // The toolkit's copy is listed as a loser, with its owner and why.
    let other = &jit["others"][0];
    assert_eq!(
        other["path"], "/usr/local/cuda-12.1/targets/x86_64-linux/lib/libnvJitLink.so.12",
        "{jit}"
    );
    assert_eq!(other["owner"]["kind"], "toolkit");
    assert_eq!(other["version"], "12.1.105");
    assert!(
        other["why"]
            .as_str()
            .unwrap()
            .contains("not on the search path"),
        "{other}"
    );
    // A healthy machine: no loader finding.
    assert!(
        !ids(&r).iter().any(|i| i.starts_with("library-")),
        "{:?}",
        ids(&r)
    );
}

#[test]
fn an_older_nvjitlink_on_ld_library_path_under_the_wheels_cusparse_is_the_root_cause() {
    let m = torch_with_cusparse();
    let r = m.doctor(&[("LD_LIBRARY_PATH", "/usr/local/cuda-12.1/lib64")]);
    let jit = load(&r, "torch", "libnvJitLink.so.12");
    assert_eq!(jit["path"], "/usr/local/cuda-12.1/lib64/libnvJitLink.so.12");
    assert_eq!(jit["via"], "LD_LIBRARY_PATH");
    assert_eq!(jit["version"], "12.1.105");
    assert_eq!(jit["owner"]["kind"], "toolkit");
    assert_eq!(jit["owner"]["package"], "cuda-12.1");
    let f = finding(&r, "library-path-shadowing");
    assert_eq!(f["severity"], "error");
    let evidence = f["evidence"].to_string();
    assert!(evidence.contains("libnvJitLink.so.12"), "{evidence}");
    assert!(evidence.contains("12.4.127"), "{evidence}");
    let fix = f["fix"].as_str().unwrap();
    assert!(fix.contains("env -u LD_LIBRARY_PATH"), "{fix}");
    assert!(!fix.to_lowercase().contains("remove"), "{fix}");
    // The error of pytorch/pytorch#111469, explained by this machine.
    let e = &m.explain(
        &[("LD_LIBRARY_PATH", "/usr/local/cuda-12.1/lib64")],
        "ImportError: /home/ubuntu/venv/lib/python3.10/site-packages/torch/lib/../../nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: __nvJitLinkAddData_12_1, version libnvJitLink.so.12",
    )["explain"];
    assert_eq!(
        e["signatures"][0]["id"],
        "loader-undefined-symbol-versioned"
    );
    assert_eq!(e["cause"], "library-path-shadowing");
}

#[test]
fn a_shadowing_folder_that_also_serves_other_libraries_is_reordered_not_removed() {
    let m = torch_with_cusparse();
    // The toolkit folder also has the only cuBLAS this torch finds: it is still needed.
    m.lib(
        "/usr/local/cuda-12.1/targets/x86_64-linux/lib/libcublas.so.12",
        "libcublas.so.12",
        &[],
        &[],
    );
    let site = format!("/{SITE}");
    std::fs::remove_dir_all(m.path(&format!("{site}/nvidia/cublas"))).unwrap();
    m.lib(
        &format!("{site}/torch/lib/libtorch_global_deps.so"),
        "libtorch_global_deps.so",
        &[
            &format!("{site}/nvidia/cusparse/lib/libcusparse.so.12"),
            "/usr/local/cuda-12.1/targets/x86_64-linux/lib/libcublas.so.12",
        ],
        &["-Wl,--enable-new-dtags,-rpath,$ORIGIN/../../nvidia/cusparse/lib:$ORIGIN/../../nvidia/nvjitlink/lib"],
    );
    let r = m.doctor(&[("LD_LIBRARY_PATH", "/usr/local/cuda-12.1/lib64")]);
    assert_eq!(
        load(&r, "torch", "libcublas.so.12")["via"],
        "LD_LIBRARY_PATH"
    );
    let fix = finding(&r, "library-path-shadowing")["fix"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        fix.contains(&format!(
            "LD_LIBRARY_PATH={site}/nvidia/nvjitlink/lib:$LD_LIBRARY_PATH"
        )),
        "{fix}"
    );
}

/// `libtorch_global_deps.so` with the wheel's cuDNN folder in `DT_RPATH` or `DT_RUNPATH`,
/// and an older cuDNN 9.0 on LD_LIBRARY_PATH.
fn cudnn_search(new_dtags: bool) -> Value {
    let m = Machine::from_fixture("torch-cuda-venv");
    let site = format!("/{SITE}");
    m.lib(
        &format!("{site}/nvidia/cudnn/lib/libcudnn.so.9"),
        "libcudnn.so.9",
        &[],
        // cuDNN 9 ships with RUNPATH $ORIGIN (spack/spack-packages#3399).
        &["-Wl,--enable-new-dtags,-rpath,$ORIGIN"],
    );
    m.lib(
        "/opt/cudnn-9.0/lib/libcudnn.so.9.0.0",
        "libcudnn.so.9",
        &[],
        &[],
    );
    m.link("/opt/cudnn-9.0/lib/libcudnn.so.9", "libcudnn.so.9.0.0");
    // libtorch_cuda.so needs cuDNN and has no search path of its own: with DT_RPATH it
    // inherits the one of libtorch_global_deps.so, which pulled it in.
    m.lib(
        &format!("{site}/torch/lib/libtorch_cuda.so"),
        "libtorch_cuda.so",
        &[&format!("{site}/nvidia/cudnn/lib/libcudnn.so.9")],
        &[],
    );
    let tags = if new_dtags {
        "--enable-new-dtags"
    } else {
        "--disable-new-dtags"
    };
    m.lib(
        &format!("{site}/torch/lib/libtorch_global_deps.so"),
        "libtorch_global_deps.so",
        &[&format!("{site}/torch/lib/libtorch_cuda.so")],
        &[&format!(
            "-Wl,{tags},-rpath,$ORIGIN:$ORIGIN/../../nvidia/cudnn/lib"
        )],
    );
    m.doctor(&[("LD_LIBRARY_PATH", "/opt/cudnn-9.0/lib")])
}

#[test]
fn rpath_is_searched_before_ld_library_path_and_inherited_runpath_is_not() {
    let site = format!("/{SITE}");
    // DT_RPATH (old tags): searched before LD_LIBRARY_PATH, and inherited by libtorch_cuda.so.
    let r = cudnn_search(false);
    let cudnn = load(&r, "torch", "libcudnn.so.9");
    assert_eq!(cudnn["via"], "RPATH", "{cudnn}");
    assert_eq!(
        cudnn["path"],
        format!("{site}/nvidia/cudnn/lib/libcudnn.so.9").as_str()
    );
    assert!(
        cudnn["needed_by"]
            .as_str()
            .unwrap()
            .ends_with("libtorch_cuda.so")
    );
    assert!(
        !ids(&r).contains(&"library-path-shadowing"),
        "{:?}",
        ids(&r)
    );
    // DT_RUNPATH: applies to its own object only, so libtorch_cuda.so's need goes by
    // LD_LIBRARY_PATH (the old cuDNN), and the shadowing is the root cause.
    let r = cudnn_search(true);
    let cudnn = load(&r, "torch", "libcudnn.so.9");
    assert_eq!(cudnn["via"], "LD_LIBRARY_PATH", "{cudnn}");
    assert_eq!(cudnn["path"], "/opt/cudnn-9.0/lib/libcudnn.so.9");
    assert_eq!(cudnn["version"], "9.0.0");
    let f = finding(&r, "library-path-shadowing");
    assert_eq!(f["severity"], "error");
    assert!(
        !ids(&r).contains(&"cudnn-version-mismatch"),
        "{:?}",
        ids(&r)
    );
}

/// TensorFlow 2.15 installed without its CUDA wheels on a machine with only system cuDNN 8:
/// its framework library needs the CUDA 12 runtime, which nothing provides.
pub fn tf_machine() -> Machine {
    let m = Machine::from_fixture("tensorflow-system-cudnn");
    m.lib(
        "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7",
        "libcudnn.so.8",
        &[],
        &[],
    );
    m
}

pub fn tf_framework(m: &Machine, cudart: &str) {
    let site = "/usr/local/lib/python3.10/dist-packages/tensorflow";
    m.lib(
        &format!("{site}/libcudart_stub_for_link.so"),
        cudart,
        &[],
        &[],
    );
    m.lib(
        &format!("{site}/libtensorflow_framework.so.2"),
        "libtensorflow_framework.so.2",
        &[&format!("{site}/libcudart_stub_for_link.so")],
        &[],
    );
    std::fs::remove_file(m.path(&format!("{site}/libcudart_stub_for_link.so"))).unwrap();
}

#[test]
fn a_soname_no_folder_has_is_library_not_found_with_the_folders_searched() {
    let m = tf_machine();
    tf_framework(&m, "libcudart.so.12");
    let r = m.doctor(&[]);
    let cudart = load(&r, "tensorflow", "libcudart.so.12");
    assert_eq!(cudart["path"], Value::Null);
    assert!(!cudart["searched"].as_array().unwrap().is_empty());
    let f = finding(&r, "library-not-found");
    assert_eq!(f["severity"], "error");
    assert!(
        f["title"].as_str().unwrap().contains("libcudart.so.12"),
        "{f}"
    );
    let evidence = f["evidence"].to_string();
    assert!(
        evidence.contains("libtensorflow_framework.so.2"),
        "{evidence}"
    );
    assert!(evidence.contains("searched:"), "{evidence}");
    assert!(f["fix"].as_str().unwrap().contains("tensorflow[and-cuda]"));
    // TensorFlow's own words for it, explained by this machine.
    let e = &m.explain(
        &[],
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudart.so.12'; dlerror: libcudart.so.12: cannot open shared object file: No such file or directory",
    )["explain"];
    assert_eq!(e["signatures"][0]["id"], "loader-cuda-library-missing");
    assert_eq!(e["cause"], "library-not-found");
    // A CUDA 12.2 toolkit on the loader path provides it: no finding.
    m.lib(
        "/usr/local/cuda-12.2/lib64/libcudart.so.12.2.140",
        "libcudart.so.12",
        &[],
        &[],
    );
    m.link(
        "/usr/local/cuda-12.2/lib64/libcudart.so.12",
        "libcudart.so.12.2.140",
    );
    m.write(
        "/etc/ld.so.conf.d/cuda.conf",
        "/usr/local/cuda-12.2/lib64\n",
    );
    let r = m.doctor(&[]);
    assert_eq!(
        load(&r, "tensorflow", "libcudart.so.12")["path"],
        "/usr/local/cuda-12.2/lib64/libcudart.so.12"
    );
    assert!(!ids(&r).contains(&"library-not-found"), "{:?}", ids(&r));
}

#[test]
fn another_major_is_named_but_is_no_substitute() {
    // "libcudart.so.11.0: cannot open shared object file" with only CUDA 12 installed.
    let m = tf_machine();
    tf_framework(&m, "libcudart.so.11.0");
    m.lib(
        "/usr/local/cuda-12.2/lib64/libcudart.so.12.2.140",
        "libcudart.so.12",
        &[],
        &[],
    );
    m.write(
        "/etc/ld.so.conf.d/cuda.conf",
        "/usr/local/cuda-12.2/lib64\n",
    );
    let r = m.doctor(&[]);
    let f = finding(&r, "library-not-found");
    assert!(
        f["title"].as_str().unwrap().contains("libcudart.so.11.0"),
        "{f}"
    );
    assert!(
        f["evidence"].to_string().contains("only another version"),
        "{f}"
    );
}

fn ldconfig(m: &Machine) -> bool {
    Command::new("ldconfig")
        .arg("-r")
        .arg(m.root())
        .args(["-C", "/etc/ld.so.cache", "-f", "/etc/ld.so.conf"])
        .output()
        .is_ok_and(|o| o.status.success())
        || Command::new("/sbin/ldconfig")
            .arg("-r")
            .arg(m.root())
            .args(["-C", "/etc/ld.so.cache", "-f", "/etc/ld.so.conf"])
            .output()
            .is_ok_and(|o| o.status.success())
}

#[test]
fn ld_so_cache_is_read_and_a_stale_one_falls_back_to_ld_so_conf() {
    let m = tf_machine();
    tf_framework(&m, "libcudart.so.12");
    m.lib(
        "/opt/cuda-a/lib64/libcudart.so.12.2.140",
        "libcudart.so.12",
        &[],
        &[],
    );
    m.lib(
        "/opt/cuda-b/lib64/libcudart.so.12.4.127",
        "libcudart.so.12",
        &[],
        &[],
    );
    m.write("/etc/ld.so.conf.d/cuda.conf", "/opt/cuda-a/lib64\n");
    if !ldconfig(&m) {
        // Without ldconfig (or the right to chroot), the parser's own tests cover the format.
        eprintln!("ldconfig -r unavailable: skipping the generated-cache half");
        return;
    }
    let cache = std::fs::read(m.path("/etc/ld.so.cache")).unwrap();
    assert!(cache.starts_with(b"glibc-ld.so.cache1.1") || cache.starts_with(b"ld.so-1.7.0"));
    let r = m.doctor(&[]);
    assert_eq!(r["libraries"]["loader_table"], "ld.so.cache");
    let cudart = load(&r, "tensorflow", "libcudart.so.12");
    assert_eq!(cudart["via"], "ld.so.cache", "{cudart}");
    assert_eq!(cudart["path"], "/opt/cuda-a/lib64/libcudart.so.12");
    assert_eq!(cudart["version"], "12.2.140");
    // The configuration changed after the cache was written: ldconfig was not rerun. The
    // folders it names stand in, and the report says so.
    m.write("/etc/ld.so.conf.d/cuda.conf", "/opt/cuda-b/lib64\n");
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(m.path("/etc/ld.so.conf.d/cuda.conf"))
        .unwrap()
        .set_modified(later)
        .unwrap();
    m.link("/opt/cuda-b/lib64/libcudart.so.12", "libcudart.so.12.4.127");
    let r = m.doctor(&[]);
    assert_eq!(
        r["libraries"]["loader_table"],
        "ld.so.conf (ld.so.cache older than ld.so.conf)"
    );
    let cudart = load(&r, "tensorflow", "libcudart.so.12");
    assert_eq!(cudart["via"], "ld.so.conf", "{cudart}");
    assert_eq!(cudart["path"], "/opt/cuda-b/lib64/libcudart.so.12");
}

/// Quiet about healthy machines: the copies of the fixture machines that are healthy gain no
/// loader finding from resolution (they have no readable ELF files, so this is the model).
#[test]
fn healthy_fixture_machines_gain_no_loader_findings() {
    for name in [
        "torch-cuda-venv",
        "jax-pip-cuda-plugin",
        "conda-cuda-env",
        "conda-forge-cupy-env",
        "healthy-torch-cu124-driver-550",
        "healthy-rtx4090-tf-and-cuda",
        "torch-and-tf-one-venv",
        "h200",
    ] {
        let r = crate::support::doctor(name);
        let loader: Vec<&str> = ids(&r)
            .into_iter()
            .filter(|i| {
                matches!(
                    *i,
                    "library-not-found" | "library-path-shadowing" | "library-copies-differ"
                )
            })
            .collect();
        assert!(loader.is_empty(), "{name}: {loader:?}");
        assert!(
            !r["libraries"]["loads"].as_array().unwrap().is_empty(),
            "{name}: no loads resolved"
        );
    }
}

/// The stem of a library file name (`libcudnn_ops.so.9.14.0` → `libcudnn_ops`).
fn stem(file: &str) -> Option<&str> {
    let i = file.find(".so")?;
    let after = &file[i + 3..];
    (after.is_empty() || after.starts_with('.')).then(|| &file[..i])
}

fn is_cuda_stem(s: &str) -> bool {
    s.starts_with("libcudnn")
        || [
            "libcudart",
            "libcublas",
            "libcublasLt",
            "libnccl",
            "libnvJitLink",
            "libnvrtc",
            "libcusparse",
            "libcusparseLt",
            "libcufft",
            "libcusolver",
            "libcurand",
            "libcupti",
            "libcufile",
            "libnvshmem_host",
            "libnvinfer",
        ]
        .contains(&s)
}

/// Ground truth from the real H200 (`tests/fixtures/real/h200-loads`): for torch, JAX and
/// CuPy, as the machine is, with older cuDNN/NCCL copies first on LD_LIBRARY_PATH, and with the
/// toolkit's `lib64` first, every CUDA library file the process mapped is a file the doctor, run
/// there in the same environment, said would load for that soname (a soname may load twice:
/// JAX maps two cuBLASLt copies when the toolkit comes first).
#[test]
fn h200_predicted_files_are_the_files_each_framework_mapped() {
    let dir = crate::support::fixtures_dir().join("real/h200-loads");
    let read = |p: PathBuf| -> Value {
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
    };
    let mut compared = 0;
    for scenario in ["plain", "old-first", "toolkit-first"] {
        let doctor = read(dir.join(scenario).join("doctor.json"));
        let real = read(dir.join(scenario).join("realpaths.json"));
        for fw in ["torch", "jax", "cupy"] {
            let maps = read(dir.join(scenario).join(format!("maps-{fw}.json")));
            let loads = doctor["libraries"]["loads"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["framework"] == fw)
                .unwrap_or_else(|| panic!("{scenario}: no loads for {fw}"));
            assert_eq!(loads["basis"], "elf", "{scenario} {fw}");
            for mapped in maps["maps"].as_array().unwrap() {
                let mapped = mapped.as_str().unwrap();
                let file = mapped.rsplit('/').next().unwrap();
                let Some(st) = stem(file).filter(|s| is_cuda_stem(s)) else {
                    continue;
                };
                let predicted: Vec<&str> = loads["libraries"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|l| l["soname"].as_str().and_then(stem) == Some(st))
                    .filter_map(|l| l["path"].as_str())
                    .collect();
                assert!(
                    !predicted.is_empty(),
                    "{scenario} {fw}: {mapped} was not predicted"
                );
                assert!(
                    predicted.iter().any(|p| real[*p].as_str() == Some(mapped)),
                    "{scenario} {fw}: predicted {predicted:?}, mapped {mapped}"
                );
                compared += 1;
            }
        }
        // With the older copies first, the doctor names the cause torch then reported.
        let ids: Vec<&str> = ids(&doctor);
        assert_eq!(
            ids.contains(&"library-path-shadowing"),
            scenario == "old-first",
            "{scenario}: {ids:?}"
        );
    }
    assert!(compared >= 90, "only {compared} files compared");
    // Toolkit first: the doctor shows JAX's two cuBLASLt copies (the toolkit's, by soname,
    // and the wheel's, by path), of the same version there, so no finding.
    let doctor = read(dir.join("toolkit-first/doctor.json"));
    let cublaslt: Vec<&str> = loads(&doctor, "jax", "libcublasLt.so.13")
        .iter()
        .filter_map(|l| l["path"].as_str())
        .collect();
    assert_eq!(cublaslt.len(), 2, "{cublaslt:?}");
    assert!(!ids(&doctor).contains(&"library-copies-differ"));
}

#[test]
fn torch_loads_nvrtc_and_cusolver_from_its_wheels_by_path() {
    let m = torch_with_cusparse();
    let site = format!("/{SITE}");
    m.write(&format!("{site}/nvidia/cusolver/lib/libcusolver.so.11"), "");
    let r = m.doctor(&[]);
    let cusolver = load(&r, "torch", "libcusolver.so.11");
    assert_eq!(cusolver["via"], "preload");
    assert_eq!(
        cusolver["path"],
        format!("{site}/nvidia/cusolver/lib/libcusolver.so.11").as_str()
    );
}

/// A path inside `root` after its links, absolute targets read inside `root` too (the maps
/// show files after links).
fn real_in_root(root: &std::path::Path, path: &str) -> String {
    let mut done = PathBuf::from("/");
    let mut rest: Vec<String> = path
        .split('/')
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect();
    rest.reverse();
    let mut hops = 0;
    while let Some(c) = rest.pop() {
        if c == "." {
            continue;
        }
        if c == ".." {
            done.pop();
            continue;
        }
        let next = done.join(&c);
        let on_disk = root.join(next.strip_prefix("/").unwrap());
        match std::fs::read_link(&on_disk) {
            Ok(target) if hops < 40 => {
                hops += 1;
                let t = target.to_string_lossy().to_string();
                if t.starts_with('/') {
                    done = PathBuf::from("/");
                }
                for part in t.split('/').filter(|p| !p.is_empty()).rev() {
                    rest.push(part.to_string());
                }
            }
            _ => done = next,
        }
    }
    done.display().to_string()
}

/// The `h200` fixture machine with real ELF files whose dynamic sections are the H200's own
/// (`real/h200-loads/toolkit-first/dynamic-sections.json`) and torch's and JAX's installed
/// `__init__.py`: the machine of the H200's toolkit-first scenario.
fn h200_toolkit_first_machine() -> Machine {
    let real = crate::support::fixtures_dir().join("real/h200-loads");
    let read = |p: PathBuf| -> Value {
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
    };
    let dynamic = read(real.join("toolkit-first/dynamic-sections.json"));
    let dynamic = dynamic.as_object().unwrap();
    let m = Machine::from_fixture("h200");
    let site = "/opt/torch/.venv/lib/python3.12/site-packages";
    let toolkit = "/usr/local/cuda-13.0/targets/x86_64-linux/lib";
    // Stand-ins to link against, one per needed soname (DT_NEEDED is the soname).
    let stubs = m.dir.path().join("stubs");
    std::fs::create_dir_all(&stubs).unwrap();
    let stub = |soname: &str| -> PathBuf {
        let at = stubs.join(soname);
        if !at.exists() {
            let src = m.dir.path().join("s.c");
            std::fs::write(&src, "int gpu_doctor_stub(void) { return 0; }\n").unwrap();
            let ok = Command::new("cc")
                .args(["-shared", "-fPIC", "-o"])
                .arg(&at)
                .arg(&src)
                .arg(format!("-Wl,-soname,{soname}"))
                .status()
                .expect("cc")
                .success();
            assert!(ok, "stub {soname}");
        }
        at
    };
    let build = |path: &str| {
        let d = &dynamic[path];
        let out = m.path(path);
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(&out);
        let src = m.dir.path().join("f.c");
        std::fs::write(&src, "int gpu_doctor_test_symbol(void) { return 0; }\n").unwrap();
        let mut cc = Command::new("cc");
        cc.args(["-shared", "-fPIC", "-o"])
            .arg(&out)
            .arg(&src)
            .arg("-Wl,--no-as-needed");
        if let Some(s) = d["soname"].as_str() {
            cc.arg(format!("-Wl,-soname,{s}"));
        }
        for n in d["needed"].as_array().unwrap() {
            let n = n.as_str().unwrap();
            if !n.starts_with("libc.") && !n.starts_with("libm.") && !n.starts_with("ld-linux") {
                cc.arg(stub(n));
            }
        }
        if let Some(r) = d["rpath"].as_str() {
            cc.arg(format!("-Wl,--disable-new-dtags,-rpath,{r}"));
        }
        if let Some(r) = d["runpath"].as_str() {
            cc.arg(format!("-Wl,--enable-new-dtags,-rpath,{r}"));
        }
        let r = cc.output().expect("cc");
        assert!(
            r.status.success(),
            "{path}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
    };
    let wanted = |p: &str| {
        let in_site = |d: &str| p.starts_with(&format!("{site}/{d}"));
        (in_site("nvidia/") && p.contains(".so"))
            || in_site("torch/lib/")
            || p == format!("{site}/jax_plugins/xla_cuda13/xla_cuda_plugin.so")
            // The toolkit's real files (their versioned names); links are made below.
            || (p.starts_with(toolkit)
                && std::path::Path::new(p)
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.matches('.').count() >= 4))
    };
    for path in dynamic.keys().filter(|p| wanted(p)) {
        build(path);
        if let Some(rest) = path.strip_prefix(&format!("{toolkit}/")) {
            let soname = dynamic[path]["soname"].as_str().unwrap();
            if soname != rest {
                m.link(&format!("{toolkit}/{soname}"), rest);
            }
        }
    }
    m.write(
        &format!("{site}/torch/__init__.py"),
        &std::fs::read_to_string(real.join("src/torch__init__.excerpt.py")).unwrap(),
    );
    m.write(
        &format!("{site}/jax_plugins/xla_cuda13/__init__.py"),
        &std::fs::read_to_string(real.join("src/jax_plugins__xla_cuda13____init__.py")).unwrap(),
    );
    m
}

/// LD_LIBRARY_PATH of the H200's toolkit-first scenario.
const H200_TOOLKIT_FIRST: &str =
    "/usr/local/cuda/lib64:/usr/local/nvidia/lib64:/usr/local/nvidia/lib";

/// The H200's third scenario (`tests/fixtures/real/h200-loads/toolkit-first`): the toolkit's
/// `lib64` first on LD_LIBRARY_PATH. The machine is the `h200` fixture with real ELF files
/// whose `DT_SONAME`, `DT_NEEDED`, `DT_RPATH` and `DT_RUNPATH` are the H200's own (recorded
/// in `dynamic-sections.json`), and torch's and JAX's `__init__.py` the installed ones
/// (`src/`). Every CUDA file each framework mapped there must be a copy the doctor predicts:
/// torch the wheels' (its DT_RPATH, then `_preload_cuda_deps` by path), JAX both cuBLASLt
/// copies (the toolkit's, needed by the wheel's cuBLAS through LD_LIBRARY_PATH, then the
/// wheel's by path) and the toolkit's nvJitLink (needed by the wheel's cuSPARSE).
#[test]
fn h200_toolkit_first_predictions_are_the_files_each_framework_mapped() {
    let real = crate::support::fixtures_dir().join("real/h200-loads");
    let read = |p: PathBuf| -> Value {
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
    };
    let m = h200_toolkit_first_machine();
    let r = m.doctor(&[("LD_LIBRARY_PATH", H200_TOOLKIT_FIRST)]);
    let root = m.root();
    let mut compared = 0;
    for fw in ["torch", "jax", "cupy"] {
        let maps = read(real.join(format!("toolkit-first/maps-{fw}.json")));
        assert_eq!(maps["ok"], true, "{fw} ran on the H200");
        let loads = r["libraries"]["loads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["framework"] == fw)
            .unwrap_or_else(|| panic!("no loads for {fw}"));
        let predicted: Vec<(String, String)> = loads["libraries"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|l| {
                let soname = l["soname"].as_str()?;
                Some((
                    stem(soname)?.to_string(),
                    real_in_root(&root, l["path"].as_str()?),
                ))
            })
            .collect();
        for mapped in maps["maps"].as_array().unwrap() {
            let mapped = mapped.as_str().unwrap();
            let file = mapped.rsplit('/').next().unwrap();
            let Some(st) = stem(file).filter(|s| is_cuda_stem(s)) else {
                continue;
            };
            assert!(
                predicted.iter().any(|(s, p)| s == st && p == mapped),
                "{fw}: {mapped} was mapped; predicted for {st}: {:?}",
                predicted
                    .iter()
                    .filter(|(s, _)| s == st)
                    .collect::<Vec<_>>()
            );
            compared += 1;
        }
    }
    assert!(compared >= 40, "only {compared} files compared");
    // JAX maps two cuBLASLt files; the doctor shows both, and with one version (13.1.0.3)
    // they are no finding.
    let jax_lt = loads(&r, "jax", "libcublasLt.so.13");
    assert_eq!(jax_lt.len(), 2, "{jax_lt:?}");
    assert!(!ids(&r).contains(&"library-copies-differ"), "{:?}", ids(&r));
    // The same machine, its ELF files built once (over a hundred `cc` runs), one wheel upgraded.
    two_cublaslt_versions_in_one_jax_process_are_a_finding(&m);
}

/// Two cuBLASLt versions in one JAX process: the H200's toolkit-first machine, where JAX maps
/// both the toolkit's cuBLASLt (needed by the wheel's cuBLAS, found through LD_LIBRARY_PATH) and
/// the wheel's (preloaded by path), after the wheel was upgraded to nvidia-cublas 13.1.1.3 (inside
/// torch 2.12.1's pin `>=13.1.0.3,<=13.1.1.3`, compat-frameworks.md) while the toolkit's CUDA 13.0
/// keeps 13.1.0.3. The class of jax-ml/jax#17497 ("JAX uses the first CUDA libraries found in
/// `LD_LIBRARY_PATH` instead of the bundled CUDA libraries installed by pip"; JAX's FAQ, added
/// in jax-ml/jax#19604, names LD_LIBRARY_PATH as the usual cause) and jax-ml/jax#20133 ("Found
/// cuBLAS version 120205, but JAX was built against version 120304" with a toolkit's cuBLAS
/// first on the path). With one version (the recorded H200) there is no finding; with two, the
/// finding names both copies and takes the toolkit off LD_LIBRARY_PATH. Run on the machine of
/// [`h200_toolkit_first_predictions_are_the_files_each_framework_mapped`], after its checks.
fn two_cublaslt_versions_in_one_jax_process_are_a_finding(m: &Machine) {
    let site = "/opt/torch/.venv/lib/python3.12/site-packages";
    let old = m.path(&format!("{site}/nvidia_cublas-13.1.0.3.dist-info"));
    let new = m.path(&format!("{site}/nvidia_cublas-13.1.1.3.dist-info"));
    std::fs::rename(&old, &new).unwrap();
    let meta = new.join("METADATA");
    let text = std::fs::read_to_string(&meta).unwrap();
    std::fs::write(
        &meta,
        text.replace("Version: 13.1.0.3", "Version: 13.1.1.3"),
    )
    .unwrap();
    let r = m.doctor(&[("LD_LIBRARY_PATH", H200_TOOLKIT_FIRST)]);
    let jax_lt = loads(&r, "jax", "libcublasLt.so.13");
    let mut versions: Vec<&str> = jax_lt
        .iter()
        .map(|l| l["version"].as_str().unwrap_or("?"))
        .collect();
    versions.sort_unstable();
    assert_eq!(versions, ["13.1.0.3", "13.1.1.3"], "{jax_lt:?}");
    let f = finding(&r, "library-copies-differ");
    assert_eq!(f["severity"], "warning");
    let title = f["title"].as_str().unwrap();
    assert!(
        title.starts_with("jax in /opt/torch/.venv maps two versions of libcublasLt.so.13"),
        "{title}"
    );
    let evidence = f["evidence"].to_string();
    assert!(
        evidence.contains(&format!(
            "libcublasLt.so.13 13.1.1.3 from {site}/nvidia/cu13/lib/libcublasLt.so.13"
        )),
        "{evidence}"
    );
    assert!(
        evidence
            .contains("libcublasLt.so.13 13.1.0.3 from /usr/local/cuda/lib64/libcublasLt.so.13"),
        "{evidence}"
    );
    let fix = f["fix"].as_str().unwrap();
    assert!(
        fix.starts_with("Take /usr/local/cuda/lib64 off LD_LIBRARY_PATH"),
        "{fix}"
    );
}

/// A conda interpreter's own `DT_RPATH` (`$ORIGIN/../lib`) serves every object without a
/// `DT_RUNPATH`, `dlopen` included; a `DT_RUNPATH` in the executable serves only its own needs
/// (glibc `_dl_map_object`). On the conda-forge CuPy env (cupy/cupy#9962's layout).
#[test]
fn a_conda_interpreters_rpath_serves_the_env_lib_and_its_runpath_does_not() {
    let env = "/home/alice/miniconda3/envs/ml";
    let run = |flag: &str| -> Value {
        let m = Machine::from_fixture("conda-forge-cupy-env");
        let src = m.dir.path().join("main.c");
        std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
        for exe in ["python", "python3", "python3.11"] {
            let out = m.path(&format!("{env}/bin/{exe}"));
            let _ = std::fs::remove_file(&out);
            let ok = Command::new("cc")
                .arg("-o")
                .arg(&out)
                .arg(&src)
                .arg(format!("-Wl,{flag},-rpath,$ORIGIN/../lib"))
                .status()
                .expect("cc")
                .success();
            assert!(ok);
        }
        m.doctor(&[])
    };
    let r = run("--disable-new-dtags");
    let cudart = load(&r, "cupy", "libcudart.so.12");
    assert_eq!(
        cudart["path"],
        format!("{env}/lib/libcudart.so.12").as_str()
    );
    assert_eq!(cudart["via"], "RPATH of the executable");
    assert!(!ids(&r).contains(&"library-not-found"), "{:?}", ids(&r));
    let r = run("--enable-new-dtags");
    let cudart = load(&r, "cupy", "libcudart.so.12");
    assert!(cudart["path"].is_null(), "{cudart}");
    assert!(ids(&r).contains(&"library-not-found"), "{:?}", ids(&r));
}

/// 100 dpkg lists whose names hint at CUDA, each 8 MiB of nothing (sparse files: no disk), and
/// the one that owns the system cuDNN. Keeping every list cost 820 MB; now the lists are read
/// one at a time within a byte budget and searched for the files asked about while read.
#[test]
fn hostile_dpkg_lists_cost_a_bounded_memory_and_the_real_owner_is_still_found() {
    let m = tf_machine();
    tf_framework(&m, "libcudart.so.12");
    let info = "/var/lib/dpkg/info";
    m.write(
        &format!("{info}/libcudnn8:amd64.list"),
        "/.\n/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu/libcudnn.so.8\n",
    );
    for i in 0..100 {
        let at = m.path(&format!("{info}/libcudnn8-sparse-{i:03}.list"));
        let f = std::fs::File::create(at).unwrap();
        f.set_len(8 * 1024 * 1024).unwrap();
    }
    let (r, peak_kb) = doctor_watched(&m);
    let cudnn = load(&r, "tensorflow", "libcudnn.so.8");
    assert_eq!(cudnn["owner"]["kind"], "dpkg", "{cudnn}");
    assert_eq!(cudnn["owner"]["package"], "libcudnn8", "{cudnn}");
    assert!(peak_kb < 200 * 1024, "peak resident memory {peak_kb} kB");
}

/// `doctor --json` on `m` (a 60 s budget) with its peak resident memory in kB.
pub fn doctor_watched(m: &Machine) -> (Value, i64) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"));
    command
        .env_clear()
        .envs(m.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .arg("--root")
        .arg(m.root())
        .args(["--timeout", "60", "doctor", "--json"])
        .stdin(std::process::Stdio::null());
    let (stdout, peak_kb) = run_watched(command);
    (serde_json::from_str(&stdout).unwrap(), peak_kb)
}

/// What `probes[]` says was cut or refused while reading.
pub fn reads(r: &Value) -> String {
    r["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "reads")
        .and_then(|p| p["detail"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// 40 dpkg lists sorted before the real owner's (`libcudnn8-flood-*` before `libcudnn8:amd64`),
/// each just under the 2 MiB read of one list and full of library paths: 76 MiB of them. When
/// the lists' library paths were kept (16 MiB at most), these filled the budget and the real
/// owner's list was never read: the system cuDNN had no owner. Now each list is searched for
/// the files asked about while it is read, and only the answers are kept.
#[test]
fn a_flood_of_library_paths_in_earlier_dpkg_lists_does_not_hide_the_real_owner() {
    let m = tf_machine();
    tf_framework(&m, "libcudart.so.12");
    let info = "/var/lib/dpkg/info";
    m.write(
        &format!("{info}/libcudnn8:amd64.list"),
        "/.\n/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu/libcudnn.so.8\n",
    );
    for i in 0..40 {
        let mut text = String::new();
        let mut j = 0;
        while text.len() < 2 * 1024 * 1024 - 128 {
            text.push_str(&format!(
                "/usr/lib/x86_64-linux-gnu/libcudnn_flood_{i:03}_{j:07}.so.8\n"
            ));
            j += 1;
        }
        m.write(&format!("{info}/libcudnn8-flood-{i:03}.list"), &text);
    }
    let (r, peak_kb) = doctor_watched(&m);
    eprintln!("40 flooding dpkg lists (76 MiB of paths): peak {peak_kb} kB");
    let cudnn = load(&r, "tensorflow", "libcudnn.so.8");
    assert_eq!(cudnn["owner"]["kind"], "dpkg", "{cudnn}");
    assert_eq!(cudnn["owner"]["package"], "libcudnn8", "{cudnn}");
    assert!(peak_kb < 200 * 1024, "peak resident memory {peak_kb} kB");
    assert!(!reads(&r).contains("library owners"), "{}", reads(&r));
}

/// The byte cap on dpkg lists stays, and says when it is hit: 130 lists of 2 MiB read (260
/// MiB, sparse files: no disk) before the real owner's pass the 256 MiB read in one scan; the
/// owner's list is not read and `probes[]` names the cut.
#[test]
fn the_byte_cap_on_dpkg_lists_is_said_when_it_is_hit() {
    let m = tf_machine();
    tf_framework(&m, "libcudart.so.12");
    let info = "/var/lib/dpkg/info";
    m.write(
        &format!("{info}/libcudnn8:amd64.list"),
        "/.\n/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu/libcudnn.so.8\n",
    );
    for i in 0..130 {
        let at = m.path(&format!("{info}/libcudnn8-sparse-{i:03}.list"));
        std::fs::File::create(at)
            .unwrap()
            .set_len(2 * 1024 * 1024)
            .unwrap();
    }
    let (r, peak_kb) = doctor_watched(&m);
    let cudnn = load(&r, "tensorflow", "libcudnn.so.8");
    assert_ne!(cudnn["owner"]["kind"], "dpkg", "{cudnn}");
    assert!(
        reads(&r).contains("library owners: read 268435456 bytes of package lists"),
        "{}",
        reads(&r)
    );
    assert!(peak_kb < 200 * 1024, "peak resident memory {peak_kb} kB");
}

//! Framework build facts and the toolkit as a compiler (issue 16), on fixture machines and on
//! the real H200: jaxlib's packed tags, JAX's components, nvcc's own version, the toolkit
//! extension builds use, conda CUDA packages as a toolkit.

use serde_json::Value;

use crate::support::{assert_findings, doctor, find, finding, framework};

fn toolkit<'a>(r: &'a Value, path: &str) -> &'a Value {
    find(&r["toolkits"], "path", path)
}

#[test]
fn jaxlib_packed_tag_is_cuda_11_2_not_112() {
    let r = doctor("jaxlib-cuda112-packed-tag");
    let jax = framework(&r, "/home/jx/.venvs/jax", "jax");
    assert_eq!(jax["version"], "0.2.12");
    assert_eq!(jax["cuda"], "11.2");
    assert_eq!(jax["cudnn"], Value::Null, "cuda112 records no cuDNN");
    assert_eq!(jax["components"][0]["name"], "jaxlib");
    assert_eq!(jax["components"][0]["version"], "0.1.65+cuda112");
    // jax-ml/jax#6517: the cuDNN the build used comes from jax's build/install_cuda.sh.
    let ids: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["id"].as_str())
        .collect();
    assert_eq!(ids, ["cudnn-version-mismatch"], "{}", r["findings"]);
    let f = finding(&r, "cudnn-version-mismatch");
    assert_eq!(f["severity"], "error");
    assert_eq!(
        f["title"],
        "jax 0.2.12 was built for cuDNN 8.1.0.77 but would load cuDNN 8.0.5"
    );
    assert!(
        f["evidence"][0]
            .as_str()
            .unwrap()
            .starts_with("jaxlib 0.1.65+cuda112 was built with cuDNN 8.1.0.77 (https://github.com/jax-ml/jax build/install_cuda.sh"),
        "{}",
        f["evidence"]
    );
}

#[test]
fn jaxlib_cudnn_tag_is_a_requirement_and_the_fix_names_the_pin() {
    let r = doctor("jax-cudnn86-torch-cudnn85");
    let jax = framework(&r, "/home/jx/.venvs/jax", "jax");
    assert_eq!(
        (jax["cuda"].as_str(), jax["cudnn"].as_str()),
        (Some("11"), Some("8.6"))
    );
    let f = finding(&r, "cudnn-version-mismatch");
    assert_eq!(f["severity"], "error");
    let fix = f["fix"].as_str().unwrap();
    assert!(
        fix.contains("torch 1.13.1+cu117 pins nvidia-cudnn-cu11==8.5.0.96"),
        "{fix}"
    );
    assert!(
        fix.contains("jax[cuda11_pip]"),
        "Python 3.8 predates jax[cuda12]: {fix}"
    );
    // The torch that would share the environment: a published build whose cuDNN pin JAX accepts.
    assert!(
        fix.ends_with("torch 2.0 built for CUDA 11.8 pins nvidia-cudnn-cu11==8.7.0.84 (`pip install \"torch==2.0.*\" --index-url https://download.pytorch.org/whl/cu118`)."),
        "{fix}"
    );
    assert!(
        f["detail"]
            .as_str()
            .unwrap()
            .contains("Loaded runtime CuDNN library")
    );
}

/// AI-Hypercomputer/maxtext#1509: torch 2.6's nvidia-cudnn-cu12==9.1.0.70 under jax 0.6.0,
/// which needs 9.8. The finding names the file JAX loads and XLA's refusal; the fix leads with a
/// torch release whose published cuDNN JAX allows, then separate environments.
#[test]
fn torch_pinned_cudnn_under_jax_names_the_file_and_a_torch_that_fits() {
    let r = doctor("jax060-torch26-cudnn91");
    let f = finding(&r, "framework-wheels-conflict");
    assert_eq!(f["severity"], "error");
    let evidence: Vec<&str> = f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        evidence.contains(&"jax 0.6.0 would load /home/jx/.venvs/jax/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9 (nvidia-cudnn-cu12 9.1.0.70)"),
        "{evidence:?}"
    );
    assert!(
        evidence.iter().any(|e| e
            .contains("Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.8.0.")),
        "{evidence:?}"
    );
    let fix = f["fix"].as_str().unwrap();
    assert!(
        fix.starts_with(
            "Upgrade torch to 2.8 built for CUDA 12.6 (its wheel pins nvidia-cudnn-cu12==9.10.2.21"
        ),
        "{fix}"
    );
    assert!(
        fix.contains("give each framework its own environment"),
        "{fix}"
    );
    // JAX 0.6.0's plugin preloads nothing: its cuDNN comes through RUNPATH.
    let loads = r["libraries"]["loads"].as_array().unwrap();
    let jax = loads.iter().find(|l| l["framework"] == "jax").unwrap();
    let cudnn = jax["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["soname"] == "libcudnn.so.9")
        .unwrap();
    assert_eq!(cudnn["via"], "RUNPATH", "{cudnn}");
}

/// Zuricho/ParallelFold#13: jax 0.2.26 needs jaxlib >= 0.1.74 (its release tag); the fix keeps
/// the installed CUDA 10.1 jaxlib and names the newest jax that accepts it.
#[test]
fn jaxlib_below_jax_minimum_quotes_jax_and_keeps_the_jaxlib() {
    let r = doctor("jax0226-jaxlib0169-below-minimum");
    let f = finding(&r, "jax-version-skew");
    assert_eq!(f["severity"], "error");
    assert!(
        f["detail"].as_str().unwrap().contains(
            "\"jaxlib is version 0.1.69, but this version of jax requires version 0.1.74.\""
        ),
        "{}",
        f["detail"]
    );
    assert!(
        f["fix"].as_str().unwrap().starts_with(
            "Keep jaxlib 0.1.69+cuda101 and install the newest jax that accepts it: `pip install \"jax==0.2.25\"`"
        ),
        "{}",
        f["fix"]
    );
}

#[test]
fn toolkits_record_nvcc_and_the_one_extension_builds_use() {
    let r = doctor("conda-cudatoolkit-apt-nvcc");
    let conda = toolkit(&r, "/home/alice/miniconda3/envs/ml");
    assert_eq!(conda["version"], "11.3.1");
    assert_eq!(conda["version_source"], "conda-meta");
    assert_eq!(conda["builds_extensions"], false);
    let apt = toolkit(&r, "/usr");
    assert_eq!(apt["nvcc_version"], "10.1.243");
    assert_eq!(apt["builds_extensions"], true, "nvcc on PATH, no CUDA_HOME");
    let f = finding(&r, "toolkit-framework-cuda-mismatch");
    assert_eq!(
        f["severity"], "warning",
        "a major difference stops the build: warning"
    );
    assert!(
        f["title"].as_str().unwrap().contains("CUDA 10.1"),
        "{}",
        f["title"]
    );

    let r = doctor("ext-cuda113-rtx4090");
    let t = toolkit(&r, "/usr/local/cuda-11.3");
    assert_eq!(t["nvcc_version"], "11.3.109");
    assert_eq!(t["version"], "11.3.1");
    assert!(
        t["components"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "cuda_nvcc" && c["version"] == "11.3.109")
    );
    let f = finding(&r, "toolkit-cannot-target-gpu");
    assert!(f["detail"].as_str().unwrap().contains("'compute_89'"));
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .contains("CUDA toolkit 11.8 or newer")
    );

    // The conda env of conda-cuda-env brings its own nvcc (cuda-nvcc 12.1.105), first on PATH.
    let r = doctor("conda-cuda-env");
    let t = toolkit(&r, "/home/alice/miniconda3/envs/ml");
    assert_eq!(t["nvcc_version"], "12.1.105");
    assert_eq!(t["builds_extensions"], true);
}

#[test]
fn blackwell_with_cuda_12_6_cannot_build_extensions() {
    let r = doctor("ext-cuda126-rtx5090");
    let f = finding(&r, "toolkit-cannot-target-gpu");
    assert_eq!(f["severity"], "warning");
    assert!(
        f["title"].as_str().unwrap().contains("sm_120"),
        "{}",
        f["title"]
    );
    assert!(f["fix"].as_str().unwrap().contains("12.8 or newer"));
}

/// nvcc alone (llama.cpp / whisper.cpp builds, no framework: whisper.cpp#3030, llama.cpp#13271):
/// the finding is about the nvcc on PATH and leads to a newer toolkit, never to a framework's
/// CUDA or TORCH_CUDA_ARCH_LIST.
#[test]
fn blackwell_with_nvcc_12_6_alone_cannot_build_cuda_code() {
    let r = doctor("nvcc-only-cuda126-rtx5090");
    assert_findings(&r, &["toolkit-cannot-target-gpu"]);
    let f = finding(&r, "toolkit-cannot-target-gpu");
    assert_eq!(f["severity"], "warning");
    let title = f["title"].as_str().unwrap();
    assert!(
        title.contains("sm_120") && title.contains("building CUDA code for it fails"),
        "{title}"
    );
    let evidence = f["evidence"].to_string();
    assert!(
        evidence.contains(
            "nvcc 12.6.85 of /usr/local/cuda-12.6 (on PATH; no CUDA framework installed)"
        ),
        "{evidence}"
    );
    assert!(
        evidence.contains("sm_120 is first targeted by CUDA 12.8"),
        "{evidence}"
    );
    let fix = f["fix"].as_str().unwrap();
    assert!(
        fix.starts_with("Install CUDA toolkit 12.8 or newer and put its nvcc first on PATH"),
        "{fix}"
    );
    assert!(fix.contains("CMAKE_CUDA_COMPILER"), "{fix}");
    assert!(
        !fix.contains("TORCH_CUDA_ARCH_LIST") && !fix.contains("framework"),
        "{fix}"
    );
}

/// The line after `$ <command starting with prefix>` in the H200 capture.
fn printed_after(prefix: &str) -> String {
    let text = include_str!("../fixtures/real/h200-build-facts.txt");
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.starts_with(prefix) {
            return lines.next().expect(prefix).to_string();
        }
    }
    panic!("{prefix} not in the capture")
}

/// On the real H200 (release binary through the device tool, no `--root`), the report names
/// what jax, jaxlib, the plugins, torch and nvcc print about themselves.
#[test]
fn real_h200_report_matches_what_the_frameworks_print() {
    let r: Value = serde_json::from_str(include_str!(
        "../fixtures/real/h200-build-facts-doctor.json"
    ))
    .expect("JSON");
    let capture = include_str!("../fixtures/real/h200-build-facts.txt");
    let venv = "/opt/torch/.venv";

    // `import jax, jaxlib; print(jax.__version__, jaxlib.__version__)` → "0.11.2 0.11.2".
    let printed = printed_after("$ python -c \"import jax, jaxlib");
    let (jax_v, jaxlib_v) = printed.split_once(' ').expect("two versions");
    let jax = framework(&r, venv, "jax");
    assert_eq!(jax["version"], jax_v);
    let component = |name: &str| {
        find(&jax["components"], "name", name)["version"]
            .as_str()
            .expect(name)
            .to_string()
    };
    assert_eq!(component("jaxlib"), jaxlib_v);
    assert!(
        capture.contains(&format!("jaxlib: {jaxlib_v}")),
        "print_environment_info"
    );
    // The plugin versions importlib.metadata reports.
    assert!(capture.contains(&format!(
        "jax-cuda13-plugin {}",
        component("jax-cuda13-plugin")
    )));
    assert!(capture.contains(&format!("jax-cuda13-pjrt {}", component("jax-cuda13-pjrt"))));
    assert_eq!(jax["cuda"], "13");

    // `torch.__version__, torch.version.cuda, torch.backends.cudnn.version()` → "... 13.0 91900".
    let printed = printed_after("$ python -c \"import torch");
    let parts: Vec<&str> = printed.split_whitespace().collect();
    let torch = framework(&r, venv, "torch");
    assert_eq!(torch["version"], parts[0]);
    assert_eq!(torch["cuda"], parts[1]);
    // cuDNN 9 encodes major*10000 + minor*100 + patch: 91900 is 9.19.0, the recorded 9.19.0.56.
    let cudnn: u64 = parts[2].parse().expect("integer");
    let recorded: Vec<u64> = torch["cudnn"]
        .as_str()
        .expect("recorded cuDNN")
        .split('.')
        .map(|p| p.parse().expect("numeric"))
        .collect();
    assert_eq!(
        recorded[0] * 10_000 + recorded[1] * 100 + recorded[2],
        cudnn
    );

    // `nvcc --version` → "Cuda compilation tools, release 13.0, V13.0.88".
    let nvcc_line = capture
        .lines()
        .find(|l| l.starts_with("Cuda compilation tools"))
        .expect("nvcc output");
    let t = &r["toolkits"][0];
    assert!(
        nvcc_line.ends_with(&format!(
            "V{}",
            t["nvcc_version"].as_str().expect("nvcc_version")
        )),
        "{nvcc_line} vs {}",
        t["nvcc_version"]
    );
    assert_eq!(t["builds_extensions"], true);
    // Nothing new to say on a healthy machine: no build-fact finding.
    let ids: Vec<&str> = r["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["id"].as_str())
        .collect();
    for id in [
        "toolkit-cannot-target-gpu",
        "toolkit-framework-cuda-mismatch",
        "jax-version-skew",
        "arch-check-skipped",
        "cudnn-version-mismatch",
    ] {
        assert!(!ids.contains(&id), "{id} on the healthy H200: {ids:?}");
    }
    // `check -r 'gpu.memory>=141GB'` passes there (141 GB = 134,469 MiB); 141 GiB does not.
    assert!(capture.contains("PASS gpu.memory>=141GB"));
    assert!(capture.contains("FAIL gpu.memory>=141GiB"));
}

/// frameworks.toml's JAX history block is what scripts/gen-jax-history.py makes of the facts it
/// read from jax's release tags (vendored in scripts/jax-history-data/), offline.
#[test]
fn the_jax_history_generator_reproduces_the_checked_in_block() {
    crate::support::generator_reproduces_its_table("gen-jax-history.py");
}

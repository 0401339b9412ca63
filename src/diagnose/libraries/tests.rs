use super::pins::{same_release, spec_floor};
use super::wheels::wheels_conflict;
use super::*;
use crate::diagnose::diagnose;
use crate::manifest::embedded;
use crate::report::{Component, Gpu, Wheel};
use crate::report::{Framework, Library, Severity};
use crate::version::Version;

const SITE: &str = "/venv/lib/python3.11/site-packages";

fn lib(version: &str, path: &str, origin: &str, loader: Option<(&str, u32)>) -> Library {
    Library {
        version: Some(version.into()),
        path: path.into(),
        origin: origin.into(),
        version_source: Some("file-name".into()),
        on_loader_path: loader.is_some(),
        loader_origin: loader.map(|(o, _)| o.to_string()),
        loader_rank: loader.map(|(_, r)| r),
    }
}

fn torch(pins: &[&str]) -> Framework {
    Framework {
        name: "torch".into(),
        version: Some("2.4.0+cu121".into()),
        cuda: Some("12.1".into()),
        variant: Some("cuda".into()),
        pins: pins.iter().map(|p| (*p).to_string()).collect(),
        ..Framework::default()
    }
}

fn machine(frameworks: Vec<Framework>, cudnn: Vec<Library>, wheels: Vec<Wheel>) -> Report {
    let mut r = Report {
        gpus: vec![Gpu {
            name: Some("NVIDIA A10G".into()),
            source: "nvml".into(),
            ..Gpu::default()
        }],
        python_envs: vec![PythonEnv {
            path: "/venv".into(),
            kind: "venv".into(),
            site_packages: vec![SITE.into()],
            frameworks,
            nvidia_wheels: wheels,
            ..PythonEnv::default()
        }],
        ..Report::default()
    };
    r.libraries.cudnn = cudnn;
    r
}

fn ids(r: &Report) -> Vec<String> {
    diagnose(r).into_iter().map(|f| f.id).collect()
}

fn wheel_cudnn(version: &str) -> Library {
    lib(
        version,
        &format!("{SITE}/nvidia/cudnn/lib/libcudnn.so.9"),
        "pip",
        None,
    )
}

#[test]
fn torch_with_its_cudnn_wheel_is_fine_without_it_cudnn_is_missing() {
    let pins = ["nvidia-cudnn-cu12==9.1.0.70"];
    let ok = machine(vec![torch(&pins)], vec![wheel_cudnn("9.1.0")], vec![]);
    assert!(ids(&ok).is_empty(), "{:?}", ids(&ok));
    let system8 = lib(
        "8.9.7",
        "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7",
        "system",
        Some(("ld.so.conf", 3)),
    );
    let missing = machine(vec![torch(&pins)], vec![system8], vec![]);
    let f = diagnose(&missing);
    assert_eq!(
        f.iter().map(|f| f.id.as_str()).collect::<Vec<_>>(),
        ["cudnn-missing"]
    );
    assert!(
        f[0].evidence
            .iter()
            .any(|e| e.contains("found only: cuDNN 8.9.7")),
        "{:?}",
        f[0].evidence
    );
}

#[test]
fn an_older_cudnn_on_ld_library_path_shadows_the_wheel_and_explains_the_mismatch() {
    let pins = ["nvidia-cudnn-cu12==9.1.0.70"];
    let old = lib(
        "9.0.0",
        "/opt/cudnn-9.0/lib/libcudnn.so.9.0.0",
        "system",
        Some(("LD_LIBRARY_PATH", 0)),
    );
    let r = machine(vec![torch(&pins)], vec![old, wheel_cudnn("9.1.0")], vec![]);
    let f = diagnose(&r);
    assert_eq!(
        f.iter().map(|f| f.id.as_str()).collect::<Vec<_>>(),
        ["library-path-shadowing"]
    );
    assert_eq!(f[0].severity, Severity::Error);
    assert_eq!(f[0].explains, ["cudnn-version-mismatch"]);
    // A newer copy there still shadows, as a warning.
    let newer = lib(
        "9.5.1",
        "/opt/cudnn-9.5/lib/libcudnn.so.9.5.1",
        "system",
        Some(("LD_LIBRARY_PATH", 0)),
    );
    let r = machine(
        vec![torch(&pins)],
        vec![newer, wheel_cudnn("9.1.0")],
        vec![],
    );
    let f = diagnose(&r);
    assert_eq!(
        f.iter()
            .map(|f| (f.id.as_str(), f.severity))
            .collect::<Vec<_>>(),
        [("library-path-shadowing", Severity::Warning)]
    );
}

#[test]
fn tensorflow_built_for_cudnn_8_with_only_cudnn_9() {
    let tf = Framework {
        name: "tensorflow".into(),
        version: Some("2.15.0".into()),
        cuda: Some("12.2".into()),
        cudnn: Some("8".into()),
        variant: Some("cuda".into()),
        ..Framework::default()
    };
    let nine = lib(
        "9.1.0",
        "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0",
        "system",
        Some(("ld.so.conf", 2)),
    );
    assert_eq!(
        ids(&machine(vec![tf.clone()], vec![nine], vec![])),
        ["cudnn-missing"]
    );
    let eight = lib(
        "8.9.7",
        "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7",
        "system",
        Some(("ld.so.conf", 2)),
    );
    assert!(ids(&machine(vec![tf], vec![eight], vec![])).is_empty());
}

#[test]
fn two_frameworks_pinning_different_cudnn_wheels_conflict() {
    let tf = Framework {
        name: "tensorflow".into(),
        version: Some("2.15.0".into()),
        pins: vec!["nvidia-cudnn-cu12==8.9.4.25".into()],
        ..Framework::default()
    };
    let wheels = vec![Wheel {
        name: "nvidia-cudnn-cu12".into(),
        version: "9.1.0.70".into(),
        lib_dir: None,
    }];
    let r = machine(
        vec![torch(&["nvidia-cudnn-cu12==9.1.0.70"]), tf],
        vec![wheel_cudnn("9.1.0")],
        wheels,
    );
    let f = wheels_conflict(&r, embedded(), &r.python_envs[0]).expect("a conflict");
    assert!(
        f.evidence
            .iter()
            .any(|e| e == "tensorflow 2.15.0 requires nvidia-cudnn-cu12==8.9.4.25"),
        "{:?}",
        f.evidence
    );
    assert_eq!(
        f.title,
        "tensorflow and torch in /venv need different versions of nvidia-cudnn-cu12"
    );
    // The conflict is the root cause: TF's own cuDNN finding is not added on top.
    let ids: Vec<String> = diagnose(&r).into_iter().map(|f| f.id).collect();
    assert_eq!(ids, ["framework-wheels-conflict"]);
    // Ranges both satisfied by the installed wheel: no conflict.
    let jax = Framework {
        name: "jax".into(),
        pins: vec!["nvidia-cudnn-cu12<10.0,>=9.0".into()],
        ..Framework::default()
    };
    let wheels = vec![Wheel {
        name: "nvidia-cudnn-cu12".into(),
        version: "9.1.0.70".into(),
        lib_dir: None,
    }];
    let r = machine(
        vec![torch(&["nvidia-cudnn-cu12==9.1.0.70"]), jax],
        vec![],
        wheels,
    );
    assert!(wheels_conflict(&r, embedded(), &r.python_envs[0]).is_none());
}

fn jax(version: &str, pins: &[&str]) -> Framework {
    Framework {
        name: "jax".into(),
        version: Some(version.into()),
        cuda: Some("12".into()),
        variant: Some("cuda".into()),
        pins: pins.iter().map(|p| (*p).to_string()).collect(),
        components: vec![
            Component {
                name: "jax-cuda12-plugin".into(),
                version: version.into(),
            },
            Component {
                name: "jaxlib".into(),
                version: version.into(),
            },
        ],
        ..Framework::default()
    }
}

fn cudnn_wheel(version: &str) -> Vec<Wheel> {
    vec![Wheel {
        name: "nvidia-cudnn-cu12".into(),
        version: version.into(),
        lib_dir: None,
    }]
}

/// AI-Hypercomputer/maxtext#1509: torch's nvidia-cudnn-cu12==9.1.0.70 under a JAX that
/// needs 9.8. No cuDNN satisfies both; a newer torch whose wheel pins a cuDNN JAX allows
/// does, and the fix names it (for the environment's Python), then separate environments.
#[test]
fn conflict_fix_names_a_torch_whose_cudnn_jax_allows() {
    let mut torch26 = torch(&["nvidia-cudnn-cu12==9.1.0.70"]);
    torch26.version = Some("2.6.0+cu124".into());
    let jax6 = jax("0.6.0", &["nvidia-cudnn-cu12<10.0,>=9.8"]);
    let mut r = machine(
        vec![torch26.clone(), jax6.clone()],
        vec![wheel_cudnn("9.1.0")],
        cudnn_wheel("9.1.0.70"),
    );
    r.python_envs[0].python_version = Some("3.11.9".into());
    let f = wheels_conflict(&r, embedded(), &r.python_envs[0]).expect("a conflict");
    let fix = f.fix.clone().unwrap_or_default();
    assert!(
        fix.starts_with(
            "Upgrade torch to 2.8 built for CUDA 12.6 (its wheel pins nvidia-cudnn-cu12==9.10.2.21"
        ),
        "{fix}"
    );
    assert!(
        fix.contains("https://download.pytorch.org/whl/cu126"),
        "{fix}"
    );
    assert!(
        fix.ends_with(
            "or give each framework its own environment (`python -m venv` or `conda create`)."
        ),
        "{fix}"
    );
    assert!(
        f.evidence.iter().any(|e| e
            .contains("Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.8.0.")),
        "{:?}",
        f.evidence
    );
    // The reverse order of installs: pip moved the wheel to 9.10 for JAX, breaking
    // torch's exact pin. torch's own 9.1.0.70 is within JAX 0.4.31's >=9.1: install it.
    let jax431 = jax("0.4.31", &["nvidia-cudnn-cu12<10.0,>=9.1"]);
    let r = machine(
        vec![torch26.clone(), jax431],
        vec![wheel_cudnn("9.10.2")],
        cudnn_wheel("9.10.2.21"),
    );
    let f = wheels_conflict(&r, embedded(), &r.python_envs[0]).expect("a conflict");
    let fix = f.fix.clone().unwrap_or_default();
    assert!(
        fix.starts_with("Install the nvidia-cudnn-cu12 that torch pins, which every framework here allows: `pip install \"nvidia-cudnn-cu12==9.1.0.70\"`"),
        "{fix}"
    );
    // No torch release fits Python 3.7: only separate environments remain.
    let mut r = machine(
        vec![torch26, jax6],
        vec![wheel_cudnn("9.1.0")],
        cudnn_wheel("9.1.0.70"),
    );
    r.python_envs[0].python_version = Some("3.7.1".into());
    let f = wheels_conflict(&r, embedded(), &r.python_envs[0]).expect("a conflict");
    let fix = f.fix.clone().unwrap_or_default();
    assert!(
        fix.starts_with("Give each framework its own environment"),
        "{fix}"
    );
}

/// A JAX whose plugin metadata gives no cuDNN pin: its release's range from frameworks.toml
/// (0.6.x: >=9.8) against the cuDNN it would load.
#[test]
fn jax_without_pins_takes_its_release_cudnn_floor() {
    let r = machine(vec![jax("0.6.2", &[])], vec![wheel_cudnn("9.1.0")], vec![]);
    let f = diagnose(&r);
    let ids: Vec<&str> = f.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, ["cudnn-version-mismatch"]);
    assert_eq!(f[0].severity, Severity::Error);
    assert!(
        f[0].evidence[0].starts_with("jax 0.6.2 (CUDA 12) needs cuDNN >=9.8,<10.0"),
        "{:?}",
        f[0].evidence
    );
    // A newer wheel within the range is fine: a floor, not an exact pin.
    // jax 0.11.0's [[jax]] row gives no cuDNN; its tag's build/nvidia-requirements.txt does.
    let f = diagnose(&machine(
        vec![jax("0.11.0", &[])],
        vec![wheel_cudnn("9.1.0")],
        vec![],
    ));
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(
        f[0].evidence[0].contains("build/nvidia-requirements.txt"),
        "{:?}",
        f[0].evidence
    );
    let ok = machine(vec![jax("0.6.2", &[])], vec![wheel_cudnn("9.10.2")], vec![]);
    assert!(ids_of(&ok).is_empty(), "{:?}", ids_of(&ok));
    let pinned = machine(
        vec![jax("0.6.2", &["nvidia-cudnn-cu12<10.0,>=9.8"])],
        vec![wheel_cudnn("9.10.2")],
        vec![],
    );
    assert!(ids_of(&pinned).is_empty(), "{:?}", ids_of(&pinned));
}

/// jax-ml/jax#6517: jaxlib 0.1.65+cuda112 was built with cuDNN 8.1.0.77 (its
/// build/install_cuda.sh); cuDNN 8.0.5 is refused.
#[test]
fn old_jaxlib_cudnn_comes_from_its_build_script() {
    let mut old = jax("0.2.12", &[]);
    old.cuda = Some("11.2".into());
    old.components = vec![Component {
        name: "jaxlib".into(),
        version: "0.1.65+cuda112".into(),
    }];
    let system805 = lib(
        "8.0.5",
        "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.0.5",
        "system",
        Some(("ld.so.conf", 2)),
    );
    let r = machine(vec![old.clone()], vec![system805], vec![]);
    let f = diagnose(&r);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(
        f[0].title,
        "jax 0.2.12 was built for cuDNN 8.1.0.77 but would load cuDNN 8.0.5"
    );
    let system81 = lib(
        "8.1.1",
        "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.1.1",
        "system",
        Some(("ld.so.conf", 2)),
    );
    assert!(ids_of(&machine(vec![old], vec![system81], vec![])).is_empty());
}

fn ids_of(r: &Report) -> Vec<String> {
    ids(r)
}

#[test]
fn specs() {
    let v = |s: &str| Version::parse(s).unwrap();
    assert_eq!(spec_allows("==9.1.0.70", &v("9.1.0.70")), Some(true));
    assert_eq!(
        spec_allows("<10.0,>=9.12.0.46", &v("9.19.0.56")),
        Some(true)
    );
    assert_eq!(spec_allows("<10.0,>=9.12.0.46", &v("9.5.0")), Some(false));
    assert_eq!(spec_allows("==9.*", &v("9.5.0")), None);
    assert_eq!(spec_floor("<10.0,>=9.12.0.46"), Some(v("9.12.0.46")));
    assert!(same_release(&v("9.1.0"), &v("9.1.0.70")));
    assert!(!same_release(&v("9.1.0"), &v("9.5.1")));
}

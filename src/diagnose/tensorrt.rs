//! TensorRT against the GPU, in both directions: `tensorrt-gpu-unsupported`.
//!
//! Each TensorRT release runs on GPUs from some compute capability on (8.6 dropped Kepler and
//! Maxwell, 10.0 Pascal: "Target GPU SM 61 is not supported by this TensorRT release",
//! NVIDIA/TensorRT#4359) and only on the architectures it knew when it was released (Blackwell
//! from 10.8: "Target GPU SM 120 is not supported by this TensorRT release" with 10.7,
//! NVIDIA/TensorRT#4317). The ranges are frameworks.toml's `tensorrt_min_cc` and
//! `tensorrt_first_for_cc`, from NVIDIA's support matrices and release notes; the installed
//! TensorRT is each `libnvinfer` copy the library scan found (`report.libraries.tensorrt`), on
//! the loader path or in a pip wheel, when its version names at least the minor release (a pip
//! wheel's `libnvinfer.so.10` is named by its `tensorrt-cu12-libs` dist-info version, read by
//! `probe::libs`; a bare major with no dist-info does not say which release it is).
//!
//! TensorRT against the driver: its pip wheels are built for one CUDA major (`tensorrt-cu12-libs`,
//! `tensorrt-cu13-libs`; the 9.x `tensorrt-libs` by the `nvidia-cuda-runtime-cuNN` it
//! requires), and a driver whose CUDA is of an older major runs none of it ("CUDA initialization
//! failure with error: 35", cudaErrorInsufficientDriver): `driver-too-old-for-framework`, as for
//! torch and onnxruntime-gpu. Its CUDA major against the framework beside it is
//! `extension-cuda-mismatch` (`ext_packages`).

use super::{FindingBuilder, ids};
use crate::manifest::Manifests;
use crate::report::GpuSource;
use crate::report::{
    Extension, Finding, Gpu, Library, PythonEnv, Report, Severity, Subject, framework_subject,
};
use crate::version::Version;

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut out = gpu_findings(report, manifests);
    out.extend(
        report
            .python_envs
            .iter()
            .filter_map(|env| driver_too_old(report, manifests, env)),
    );
    out
}

/// The TensorRT wheel of an environment that holds its libraries and names its CUDA major
/// (`tensorrt-cu13-libs`, `tensorrt-libs`, `nvidia-tensorrt`), else its front package
/// (`tensorrt-cu13`).
fn tensorrt_wheel(env: &PythonEnv) -> Option<(&Extension, u64)> {
    let with_major = |e: &&Extension| {
        (e.name.starts_with("tensorrt") || e.name == "nvidia-tensorrt") && e.cuda_major.is_some()
    };
    let e = env
        .extensions
        .iter()
        .filter(with_major)
        .find(|e| e.name.ends_with("-libs") || e.name == "nvidia-tensorrt")
        .or_else(|| env.extensions.iter().find(with_major))?;
    Some((e, e.cuda_major.as_deref()?.parse().ok()?))
}

/// A TensorRT wheel built for a newer CUDA major than the driver supports. Skipped where the
/// environment's torch is of that major or newer: its own `driver-too-old-for-framework` names
/// the same driver.
fn driver_too_old(report: &Report, manifests: &Manifests, env: &PythonEnv) -> Option<Finding> {
    let (wheel, needed) = tensorrt_wheel(env)?;
    let have = super::platform::driver_below_cuda_major(report, manifests, needed)?;
    let driver = report.driver.version.as_deref().unwrap_or_default();
    let torch_covers = env.frameworks.iter().any(|f| {
        f.name == "torch"
            && f.variant.as_deref() == Some("cuda")
            && f.cuda
                .as_deref()
                .and_then(Version::parse)
                .is_some_and(|c| c.major() >= needed)
    });
    if torch_covers {
        return None;
    }
    let floor = manifests
        .cuda
        .major(needed)
        .map(|m| m.minor_compat_floor.as_str());
    let mut f = FindingBuilder::new(
        &ids::DRIVER_TOO_OLD_FOR_FRAMEWORK,
        Severity::Error,
        format!(
            "TensorRT {} ({}) in {} is built for CUDA {needed}, but driver {driver} supports CUDA up to {}",
            wheel.version,
            wheel.name,
            env.path,
            have.as_str()
        ),
    )
    .detail(
        "TensorRT's wheels are built for one CUDA major; a driver older than that major's first \
         release cannot run them, so creating a builder or runtime fails with \"CUDA \
         initialization failure with error: 35\" (the driver is older than the CUDA runtime).",
    )
    .evidence(format!(
        "driver: {driver} (CUDA {}, from {})",
        have.as_str(),
        report.driver.source.as_deref().unwrap_or("unknown source")
    ))
    .evidence(format!(
        "{} {}: built for CUDA {needed} (its name or Requires-Dist; {})",
        wheel.name, wheel.version, wheel.source
    ))
    .subject(framework_subject(&env.path, "tensorrt"))
    .subject(Subject::Driver(None));
    if let Some(floor) = floor {
        f = f.evidence(format!(
            "CUDA {needed}.x needs a driver >= {floor} (cuda.toml)"
        ));
    }
    let upgrade = match floor {
        Some(floor) => format!("Upgrade the driver to {floor} or newer (`gpu-doctor plan`)"),
        None => {
            format!("Upgrade the driver to one that supports CUDA {needed} (`gpu-doctor plan`)")
        }
    };
    // Every TensorRT wheel not of the driver's major: the front package too.
    let have_major = have.major().to_string();
    let trt_names: Vec<&str> = env
        .extensions
        .iter()
        .filter(|e| e.name.starts_with("tensorrt") || e.name == "nvidia-tensorrt")
        .filter(|e| e.cuda_major.as_deref() != Some(have_major.as_str()))
        .map(|e| e.name.as_str())
        .collect();
    let fix = if have.major() >= 11 && !trt_names.is_empty() {
        format!(
            "{upgrade}, or install TensorRT's wheels for the driver's CUDA {}: `pip uninstall -y {}` \
             and `pip install tensorrt-cu{}` (plain `tensorrt` pulls the newest CUDA major's).",
            have.major(),
            trt_names.join(" "),
            have.major()
        )
    } else {
        format!("{upgrade}.")
    };
    Some(f.fix(fix).build())
}

fn gpu_findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let gpus: Vec<(&Gpu, Version)> = report
        .nvidia_gpus()
        .filter(|g| g.source != GpuSource::Override)
        .filter_map(|g| Some((g, Version::parse(g.compute_capability.as_deref()?)?)))
        .collect();
    if gpus.is_empty() {
        return Vec::new();
    }
    let copies: Vec<(&Library, Version)> = report
        .libraries
        .tensorrt
        .iter()
        .filter(|l| l.on_loader_path || l.origin == "pip")
        .filter_map(|l| Some((l, Version::parse(l.version.as_deref()?)?)))
        // A major alone (a pip wheel's `libnvinfer.so.10`) does not say which release it is.
        .filter(|(_, v)| v.as_str().split('.').count() >= 2)
        .collect();
    copies
        .iter()
        .filter_map(|(lib, v)| judge(manifests, lib, v, &gpus))
        .take(1)
        .collect()
}

/// One TensorRT copy against every GPU: a finding when none of them can run it.
fn judge(
    manifests: &Manifests,
    lib: &Library,
    version: &Version,
    gpus: &[(&Gpu, Version)],
) -> Option<Finding> {
    let table = &manifests.frameworks;
    let floor = table.tensorrt_min_cc(version.as_str());
    let too_old_gpu = |cc: &Version| {
        floor
            .and_then(|r| Version::parse(&r.min_cc))
            .is_some_and(|m| *cc < m)
    };
    let needs_newer = |cc: &Version| {
        table
            .tensorrt_first_for_cc(&format!("{}.{}", cc.major(), cc.minor()))
            .filter(|r| Version::parse(&r.first).is_some_and(|first| *version < first))
    };
    // A machine with one GPU TensorRT runs on is not broken by another.
    if !gpus
        .iter()
        .all(|(_, cc)| too_old_gpu(cc) || needs_newer(cc).is_some())
    {
        return None;
    }
    let (gpu, cc) = gpus.first()?;
    let name = gpu.name.as_deref().unwrap_or("unknown model");
    let sm = format!("{}{}", cc.major(), cc.minor());
    let (title, fix, source) = if let Some(row) = needs_newer(cc) {
        (
            format!(
                "TensorRT {} is older than GPU {} ({name}, compute capability {}): TensorRT runs on it from {}",
                version.as_str(),
                gpu.index,
                cc.as_str(),
                row.first
            ),
            format!(
                "Install TensorRT {} or newer (`pip install --upgrade 'tensorrt>={}'`, or NVIDIA's \
                 packages of that release), and rebuild the engines with it.",
                row.first, row.first
            ),
            row.source.as_str(),
        )
    } else {
        let row = floor?;
        let older = table
            .tensorrt_min_cc
            .iter()
            .rev()
            .find(|r| Version::parse(&r.min_cc).is_some_and(|m| m <= *cc));
        (
            format!(
                "TensorRT {} does not run on GPU {} ({name}, compute capability {}): it needs {} or newer",
                version.as_str(),
                gpu.index,
                cc.as_str(),
                row.min_cc
            ),
            match older {
                Some(r) => format!(
                    "Use a TensorRT release that still runs on this GPU ({}; frameworks.toml \
                     `tensorrt_min_cc`), or a GPU of compute capability {} or newer.",
                    if r.first == r.last {
                        format!("TensorRT {} does", r.first)
                    } else {
                        format!("TensorRT {} to {} do", r.first, r.last)
                    },
                    row.min_cc
                ),
                None => format!(
                    "Use a GPU of compute capability {} or newer for TensorRT, or run the model \
                     without it (the framework's own CUDA kernels).",
                    row.min_cc
                ),
            },
            row.source.as_str(),
        )
    };
    let f = FindingBuilder::new(&ids::TENSORRT_GPU_UNSUPPORTED, Severity::Error, title)
        .detail(format!(
            "TensorRT builds its engines from kernels for the architectures it was released for; \
             on another it stops with \"Target GPU SM {sm} is not supported by this TensorRT \
             release\" (or \"Unsupported SM: 0x{:x}0{:x}\") when an engine is built or loaded.",
            cc.major(),
            cc.minor()
        ))
        .evidence(format!(
            "TensorRT {} ({}, {})",
            version.as_str(),
            lib.path,
            lib.origin
        ))
        .evidence(format!(
            "GPU {} ({name}): compute capability {}",
            gpu.index,
            cc.as_str()
        ))
        .evidence(format!("source: {source}"))
        .subject(gpu.subject());
    Some(f.fix(fix).build())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(cc: &str, trt: &str) -> Report {
        let mut r = Report {
            gpus: vec![Gpu {
                name: Some("test GPU".into()),
                compute_capability: Some(cc.into()),
                source: "nvml".into(),
                ..Gpu::default()
            }],
            ..Report::default()
        };
        r.libraries.tensorrt = vec![Library {
            version: Some(trt.into()),
            path: format!("/usr/lib/x86_64-linux-gnu/libnvinfer.so.{trt}"),
            origin: "system".into(),
            on_loader_path: true,
            ..Library::default()
        }];
        r
    }

    fn titles(r: &Report) -> Vec<String> {
        findings(r, crate::manifest::embedded())
            .into_iter()
            .map(|f| f.title)
            .collect()
    }

    fn driver_machine(driver: &str, trt_major: &str, torch_cuda: Option<&str>) -> Report {
        let mut r = report("8.6", "10.13.3");
        r.driver.version = Some(driver.into());
        let mut env = crate::report::PythonEnv {
            path: "/venv".into(),
            extensions: vec![Extension {
                name: format!("tensorrt-cu{trt_major}-libs"),
                version: "10.13.3.9".into(),
                cuda_major: Some(trt_major.into()),
                ..Extension::default()
            }],
            ..crate::report::PythonEnv::default()
        };
        if let Some(cuda) = torch_cuda {
            env.frameworks.push(crate::report::Framework {
                name: "torch".into(),
                version: Some("2.9.0".into()),
                variant: Some("cuda".into()),
                cuda: Some(cuda.into()),
                ..crate::report::Framework::default()
            });
        }
        r.python_envs.push(env);
        r
    }

    #[test]
    fn tensorrt_wheels_of_a_cuda_major_newer_than_the_driver() {
        let m = crate::manifest::embedded();
        let ids = |r: &Report| -> Vec<String> {
            findings(r, m)
                .into_iter()
                .map(|f| f.id.to_string())
                .collect()
        };
        // CUDA 13 wheels on a CUDA 12.x driver.
        let r = driver_machine("570.133.07", "13", None);
        assert_eq!(ids(&r), ["driver-too-old-for-framework"]);
        let f = &findings(&r, m)[0];
        assert!(
            f.fix
                .as_deref()
                .unwrap_or("")
                .contains("pip install tensorrt-cu12"),
            "{f:?}"
        );
        // CUDA 12 wheels on the same driver, CUDA 13 wheels on a 580 driver: fine.
        assert!(ids(&driver_machine("570.133.07", "12", None)).is_empty());
        assert!(ids(&driver_machine("580.95.05", "13", None)).is_empty());
        // A cu130 torch beside them names the same driver itself.
        assert!(ids(&driver_machine("570.133.07", "13", Some("13.0"))).is_empty());
    }

    #[test]
    fn both_directions_and_the_releases_that_fit() {
        // Pascal under TensorRT 10.0: too new for the GPU.
        let t = titles(&report("6.1", "10.0.1"));
        assert_eq!(t.len(), 1);
        assert!(t[0].contains("needs 7.0 or newer"), "{t:?}");
        // Blackwell under 10.7: too old for the GPU.
        let t = titles(&report("12.0", "10.7.0"));
        assert!(t[0].contains("runs on it from 10.8"), "{t:?}");
        // What fits, and releases the table does not list, say nothing.
        assert!(titles(&report("12.0", "10.8.0")).is_empty());
        assert!(titles(&report("8.6", "10.0.1")).is_empty());
        assert!(titles(&report("6.1", "8.6.1")).is_empty());
        // Volta from 10.5 on (its release notes: support removed), not before.
        let t = titles(&report("7.0", "10.5.0"));
        assert!(t[0].contains("needs 7.5 or newer"), "{t:?}");
        assert!(titles(&report("7.0", "10.4.0")).is_empty());
        assert!(titles(&report("7.5", "10.16.1")).is_empty());
        // Releases past the table's last row are not judged.
        assert!(titles(&report("7.0", "11.0.0")).is_empty());
    }
}

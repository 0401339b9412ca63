//! Python wheels built for one CUDA major against the driver: `driver-too-old-for-framework`.
//!
//! NVIDIA's CUDA Python binding (`cuda-bindings`, and `cuda-python`, its metapackage from 12.8)
//! is released per CUDA major, its version's major (13.0.3 is CUDA 13's): its install page
//! gives the driver each major needs, the major's own minor-version-compatibility floor
//! ("Driver: Linux (525.60.13 or later)" for 12.x, "(580.65.06 or later)" for 13.x;
//! nvidia.github.io/cuda-python, cuda-bindings install.md). With a driver of an older major
//! every call fails with `cudaErrorInsufficientDriver` (error 35): CUTLASS's Python DSL on an
//! R570 driver with cuda-python 13 (NVIDIA/cutlass#2866, the maintainer: "13.0+ cuda-python
//! requires 580+ driver"; NVIDIA/cutlass#2804). The `nvidia-*-cuNN` wheels (NCCL's
//! `nvidia-nccl-cu13` is the one a program loads on its own, outside a framework's pins) carry
//! their major in their name; NCCL built for a CUDA newer than the driver stops at init with
//! "NCCL WARN Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'".
//!
//! An environment whose framework (torch, JAX, TensorFlow, CuPy) or TensorRT/onnxruntime build
//! is of that major or newer is left to that framework's own `driver-too-old-for-framework`,
//! which names the same driver.

use super::{FindingBuilder, ids};
use crate::manifest::Manifests;
use crate::report::{Finding, PythonEnv, Report, Severity, Subject, framework_subject};
use crate::version::Version;

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    report
        .python_envs
        .iter()
        .filter_map(|env| too_new(report, manifests, env))
        .collect()
}

/// The CUDA major a wheel is built for, when its name or version says: `cuda-bindings` and
/// `cuda-python` from 12 on by their version's major (`cuda-python` before 12.8 was the
/// binding itself, of the same major), `nvidia-*-cuNN` by their name.
fn wheel_major(name: &str, version: &str) -> Option<u64> {
    if matches!(name, "cuda-bindings" | "cuda-python") {
        let major = Version::parse(version)?.major();
        return (major >= 11).then_some(major);
    }
    let rest = name.strip_prefix("nvidia-")?;
    rest.rsplit('-')
        .next()?
        .strip_prefix("cu")
        .filter(|m| !m.is_empty() && m.len() <= 3 && m.chars().all(|c| c.is_ascii_digit()))?
        .parse()
        .ok()
}

fn too_new(report: &Report, manifests: &Manifests, env: &PythonEnv) -> Option<Finding> {
    let wheels: Vec<(&str, &str, u64)> = env
        .nvidia_wheels
        .iter()
        .filter_map(|w| {
            Some((
                w.name.as_str(),
                w.version.as_str(),
                wheel_major(&w.name, &w.version)?,
            ))
        })
        .collect();
    let needed = wheels.iter().map(|(_, _, m)| *m).max()?;
    let have = super::platform::driver_below_cuda_major(report, manifests, needed)?;
    let major_of = |cuda: Option<&str>| cuda.and_then(Version::parse).map(|v| v.major());
    let covered = env
        .frameworks
        .iter()
        .any(|f| major_of(f.cuda.as_deref()).is_some_and(|m| m >= needed))
        || env.extensions.iter().any(|e| {
            e.name == "onnxruntime-gpu"
                || e.cuda_major
                    .as_deref()
                    .and_then(|m| m.parse::<u64>().ok())
                    .is_some_and(|m| m >= needed)
        });
    if covered {
        return None;
    }
    let newer: Vec<&(&str, &str, u64)> = wheels
        .iter()
        .filter(|(_, _, m)| *m > have.major())
        .collect();
    let driver = report.driver.version.as_deref().unwrap_or_default();
    let floor = manifests
        .cuda
        .major(needed)
        .map(|m| m.minor_compat_floor.as_str());
    let names: Vec<String> = newer.iter().map(|(n, v, _)| format!("{n} {v}")).collect();
    let mut f = FindingBuilder::new(
        &ids::DRIVER_TOO_OLD_FOR_FRAMEWORK,
        Severity::Error,
        format!(
            "{} in {} {} built for CUDA {needed}, but driver {driver} supports CUDA up to {}",
            names.join(", "),
            env.path,
            if names.len() == 1 { "is" } else { "are" },
            have.as_str()
        ),
    )
    .detail(
        "These packages are built for one CUDA major, and a driver older than that major's \
         first release cannot run them: NVIDIA's CUDA Python binding (cuda-bindings, cuda-python) \
         fails every call with cudaErrorInsufficientDriver (error 35), and NCCL stops at init \
         with \"Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'\".",
    )
    .evidence(format!(
        "driver: {driver} (CUDA {}, from {})",
        have.as_str(),
        report.driver.source.as_deref().unwrap_or("unknown source")
    ));
    for (n, v, m) in &newer {
        f = f.evidence(format!(
            "{n} {v}: built for CUDA {m} (its version's major or its name's cuNN)"
        ));
    }
    if let Some(floor) = floor {
        f = f.evidence(format!(
            "CUDA {needed}.x needs a driver >= {floor} (cuda.toml)"
        ));
    }
    for (n, _, _) in &newer {
        f = f.subject(framework_subject(&env.path, n));
    }
    f = f.subject(Subject::Driver(None));
    let upgrade = match floor {
        Some(floor) => format!("Upgrade the driver to {floor} or newer (`gpu-doctor plan`)"),
        None => {
            format!("Upgrade the driver to one that supports CUDA {needed} (`gpu-doctor plan`)")
        }
    };
    let major = have.major();
    let swaps: Vec<String> = newer
        .iter()
        .map(|(n, _, m)| {
            if matches!(*n, "cuda-bindings" | "cuda-python") {
                format!("\"{n}=={major}.*\"")
            } else {
                n.replace(&format!("-cu{m}"), &format!("-cu{major}"))
            }
        })
        .collect();
    let fix = if major >= 12 {
        format!(
            "{upgrade}, or install the builds for the driver's CUDA {major}: `pip install {}`.",
            swaps.join(" ")
        )
    } else {
        format!("{upgrade}.")
    };
    Some(f.fix(fix).build())
}

#[cfg(test)]
mod tests {
    use super::wheel_major;

    #[test]
    fn a_wheels_cuda_major_is_its_version_or_its_name() {
        assert_eq!(wheel_major("cuda-bindings", "13.0.3"), Some(13));
        assert_eq!(wheel_major("cuda-python", "12.9.4"), Some(12));
        assert_eq!(wheel_major("nvidia-nccl-cu13", "2.28.9"), Some(13));
        assert_eq!(wheel_major("nvidia-cublas", "13.1.0.3"), None);
        assert_eq!(wheel_major("cuda-pathfinder", "1.3.0"), None);
        assert_eq!(wheel_major("cuda-python", "0.1"), None);
    }
}

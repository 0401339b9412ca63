//! PyTorch from its own wheel index: the release and CUDA variant for these GPUs, this driver and
//! this Python (an aarch64 machine's own builds are `aarch64.rs`'s).

use crate::manifest::Manifests;
use crate::version::Version;

use super::aarch64::{aarch64_builds, aarch64_refusal, aarch64_torch};
use super::{FrameworkPlan, companions, land, pin, python_range, short_python};
use crate::plan::choose::{self, DriverCap};
use crate::plan::target::{FrameworkName, FrameworkSpec};
use crate::version::python_fits;

pub(super) fn torch(
    m: &Manifests,
    arch: &str,
    spec: &FrameworkSpec,
    ccs: &[String],
    cuda: Option<&Version>,
    driver: Option<&DriverCap>,
    python: Option<&str>,
) -> Result<FrameworkPlan, String> {
    let arm;
    let table = if arch == "aarch64" {
        arm = aarch64_torch(m);
        &arm
    } else {
        &m.frameworks
    };
    let release = torch_release(m, table, arch, spec, ccs, cuda, driver, python)?;
    if let Some(py) = python
        && !python_fits(py, &release.python_min, release.python_max.as_deref())
    {
        return Err(format!(
            "torch {} supports Python {}, not {py}",
            release.version,
            python_range(&release.python_min, release.python_max.as_deref())
        ));
    }
    if let Some(py) = python {
        land(m, arch, "torch", Some(&release.version), None, py)?;
    }
    let pick = choose::torch_build(&m.cuda, release, ccs, cuda, driver)?;
    let variant = pick.build.variant.clone();
    let version = spec
        .version
        .clone()
        .unwrap_or_else(|| release.version.clone());
    let cuda_v = Version::parse(&format!("{}.{}", pick.cuda.0, pick.cuda.1))
        .ok_or_else(|| format!("torch variant {variant}"))?;
    if let Some(why) = choose::wheels_refuse_gpus(&m.cuda, &cuda_v, ccs) {
        return Err(format!("torch's {variant} build cannot work here: {why}"));
    }
    let local = (version.split('.').count() >= 3).then_some(variant.as_str());
    let arch = pick.build.sass.as_ref().map_or_else(
        || "its architecture list is not in the manifests".to_string(),
        |sass| format!("it has code for compute capability {}", sass.join(", ")),
    );
    let driver_note = match driver {
        Some(_) if pick.driver_runs => "the driver runs it",
        Some(_) => "it needs a newer driver, which this plan installs",
        None => "the plan installs a driver for it",
    };
    Ok(FrameworkPlan {
        name: FrameworkName::Torch,
        label: format!("torch {version} ({variant})"),
        requirement: format!("torch{}", pin(&version, local)),
        index_url: Some(m.frameworks.torch_index_url(&variant)),
        dist: "torch".to_string(),
        dist_prefix: format!("{version}."),
        dist_local: Some(variant.clone()),
        cuda: cuda_v.clone(),
        cuda_is_minor: true,
        driver_floor: None,
        cudnn: None,
        python_default: Some(
            release
                .python_max
                .clone()
                .unwrap_or_else(|| release.python_min.clone()),
        ),
        replace: false,
        python: python.map(short_python),
        extra_dist: None,
        why: format!(
            "PyTorch's {variant} wheels bundle CUDA {cuda_v}, cuDNN and NCCL; {arch}; \
             {driver_note}. PyTorch's own index serves each CUDA variant \
             (frameworks.toml torch {}, compat-cuda.md 6.1).",
            release.version
        ),
        companions: companions(m, "torch"),
    })
}

/// The torch release to install: the one asked for, else the newest with a build for these
/// GPUs (on the driver that stays, when one does), from `table` (on aarch64: only releases
/// whose PyPI aarch64 wheels are a CUDA build).
#[expect(
    clippy::too_many_arguments,
    reason = "each is one fact the choice depends on, as in `resolve`"
)]
pub(super) fn torch_release<'t>(
    m: &Manifests,
    table: &'t crate::manifest::FrameworkTable,
    arch: &str,
    spec: &FrameworkSpec,
    ccs: &[String],
    cuda: Option<&Version>,
    driver: Option<&DriverCap>,
    python: Option<&str>,
) -> Result<&'t crate::manifest::TorchRelease, String> {
    match &spec.version {
        Some(v) => table.torch_release(v).ok_or_else(|| {
            if m.frameworks.torch_release(v).is_some() {
                return aarch64_refusal(m, v);
            }
            let known: Vec<&str> = m
                .frameworks
                .torch
                .iter()
                .map(|r| r.version.as_str())
                .collect();
            format!(
                "torch {v} is not a release the manifests know ({})",
                known.join(", ")
            )
        }),
        None => {
            let fixed = driver.filter(|d| d.fixed);
            let lands = |r: &crate::manifest::TorchRelease| {
                python.is_none_or(|py| land(m, arch, "torch", Some(&r.version), None, py).is_ok())
            };
            choose::newest_torch(&m.cuda, table, ccs, cuda, python, fixed, &lands)
                .or_else(|| choose::newest_torch(&m.cuda, table, ccs, cuda, python, None, &lands))
                .ok_or_else(|| {
                    let py = python
                        .map(|p| format!(" and Python {p}"))
                        .unwrap_or_default();
                    let arm = if arch == "aarch64" {
                        format!(" on aarch64 ({})", aarch64_builds(m))
                    } else {
                        String::new()
                    };
                    format!(
                        "no torch release in the manifests has a CUDA build for compute \
                         capability {}{py}{arm}",
                        ccs.join(", ")
                    )
                })
        }
    }
}

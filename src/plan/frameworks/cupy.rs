//! CuPy as the `cupy-cudaNNx` wheel: the CUDA major for these GPUs and this driver, and the CUDA
//! libraries from pip when no system toolkit is there.

use crate::manifest::Manifests;
use crate::version::Version;

use super::{FrameworkPlan, land, pick_major, pin, short_python};
use crate::plan::choose::{self, DriverCap};
use crate::plan::target::{FrameworkName, FrameworkSpec};

#[expect(
    clippy::too_many_arguments,
    reason = "each is one fact the choice depends on, as in `resolve`"
)]
pub(super) fn cupy(
    m: &Manifests,
    arch: &str,
    spec: &FrameworkSpec,
    ccs: &[String],
    cuda: Option<&Version>,
    driver: Option<&DriverCap>,
    python: Option<&str>,
    with_ctk: bool,
) -> Result<FrameworkPlan, String> {
    let major = pick_major(&m.cuda, ccs, cuda, driver);
    let name = format!("cupy-cuda{major}x");
    let package = m
        .frameworks
        .cupy_package(&name)
        .ok_or_else(|| format!("{name} is not a CuPy package the manifests know"))?;
    let release = match &spec.version {
        Some(v) => Some(m.frameworks.cupy(v).ok_or_else(|| {
            let known: Vec<&str> = m
                .frameworks
                .cupy
                .iter()
                .map(|r| r.version.as_str())
                .collect();
            format!(
                "CuPy {v} is not a release the manifests know ({})",
                known.join(", ")
            )
        })?),
        None => m.frameworks.cupy.last(),
    };
    if let Some(release) = release
        && !release.packages.contains(&name)
    {
        return Err(format!(
            "CuPy {} ships {}, not {name}",
            release.version,
            release.packages.join(", ")
        ));
    }
    let cuda_v = Version::parse(&format!("{major}.0")).ok_or("CuPy's CUDA")?;
    if let Some(why) = choose::wheels_refuse_gpus(&m.cuda, &cuda_v, ccs) {
        return Err(format!("{name} cannot work here: {why}"));
    }
    // The [ctk] extra (CuPy 14.2: "pulls the CUDA wheels") stands in for a system toolkit.
    let ctk = with_ctk && spec.version.is_none();
    let extra = if ctk { "[ctk]" } else { "" };
    let mut version_pin = spec
        .version
        .as_deref()
        .map(|v| pin(v, None))
        .unwrap_or_default();
    if let Some(py) = python
        && let Some(v) = land(
            m,
            arch,
            &name,
            spec.version.as_deref(),
            ctk.then_some("ctk"),
            py,
        )?
    {
        version_pin = format!("=={v}");
    }
    let libs = if ctk {
        "its [ctk] extra brings the CUDA libraries as wheels"
    } else {
        "it uses the CUDA libraries of the system toolkit or the environment"
    };
    Ok(FrameworkPlan {
        name: FrameworkName::Cupy,
        label: format!("CuPy ({name})"),
        requirement: format!("{name}{extra}{version_pin}"),
        index_url: None,
        dist: name.clone(),
        dist_prefix: spec
            .version
            .as_deref()
            .map(|v| format!("{v}."))
            .unwrap_or_default(),
        dist_local: None,
        cuda: Version::parse(&major.to_string()).ok_or("CuPy's CUDA")?,
        cuda_is_minor: false,
        driver_floor: None,
        cudnn: None,
        python_default: release.and_then(|r| r.python_min.clone()),
        replace: false,
        python: python.map(short_python),
        extra_dist: ctk.then(|| (name.clone(), "ctk".to_string())),
        why: format!(
            "{name} is CuPy's wheel for CUDA {major}.x (install exactly one CuPy package per \
             environment); {libs}{} (frameworks.toml cupy_package).",
            package
                .note
                .as_deref()
                .map(|n| format!(". {n}"))
                .unwrap_or_default()
        ),
        companions: Vec::new(),
    })
}

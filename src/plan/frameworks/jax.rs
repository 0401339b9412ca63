//! JAX with its `cudaNN` extra: the CUDA major for these GPUs and this driver, the release whose
//! plugin wheels exist for this Python, and how a later run sees that the GPU wheels landed.

use crate::manifest::{JaxExtra, JaxRequirement, Manifests};
use crate::version::Version;

use super::{FrameworkPlan, land, pick_major, pin, short_python};
use crate::plan::choose::{self, DriverCap};
use crate::plan::target::{FrameworkName, FrameworkSpec};
use crate::version::compare;

/// The JAX requirement rows for a major, newest last.
pub(super) fn jax_rows(m: &Manifests, major: u64) -> impl Iterator<Item = &JaxRequirement> {
    m.frameworks
        .jax
        .iter()
        .filter(move |r| r.cuda_major == major)
}

/// JAX with the `cudaNN` extra that brings NVIDIA's wheels: the extra for these GPUs and this
/// driver, checked against the extra's own history and the GPUs it serves, then the release pip
/// would land on the Python of the environment.
pub(super) fn jax(
    m: &Manifests,
    arch: &str,
    spec: &FrameworkSpec,
    ccs: &[String],
    cuda: Option<&Version>,
    driver: Option<&DriverCap>,
    python: Option<&str>,
) -> Result<FrameworkPlan, String> {
    let major = jax_major(m, spec, ccs, cuda, driver)?;
    let extra = format!("cuda{major}");
    let row = m
        .frameworks
        .jax_extra(&extra)
        .ok_or_else(|| format!("jax[{extra}] is not an extra the manifests know"))?;
    jax_extra_fits(m, spec, ccs, row, major)?;
    let req_row = match &spec.version {
        Some(v) => Some(
            m.frameworks
                .jax(v, major)
                .ok_or_else(|| format!("JAX {v} with CUDA {major} is not in the manifests"))?,
        ),
        None => jax_rows(m, major).filter(|r| r.driver_min.is_some()).last(),
    };
    let floor = req_row
        .and_then(|r| r.driver_min.as_deref())
        .and_then(Version::parse);
    let python_default = req_row.and_then(|r| r.python_min.clone()).or_else(|| {
        jax_rows(m, major)
            .filter_map(|r| r.python_min.clone())
            .last()
    });
    let landing = match python {
        Some(py) => jax_landing(m, arch, spec, major, py)?,
        None => JaxLanding::default(),
    };
    let version_pin = landing.pin.unwrap_or_else(|| {
        spec.version
            .as_deref()
            .map(|v| pin(v, None))
            .unwrap_or_default()
    });
    let floor_text = floor
        .as_ref()
        .map_or_else(String::new, |f| format!("; JAX wants driver {f} or newer"));
    Ok(FrameworkPlan {
        name: FrameworkName::Jax,
        label: format!(
            "JAX{} with [{extra}]",
            spec.version
                .as_deref()
                .map(|v| format!(" {v}"))
                .unwrap_or_default()
        ),
        requirement: format!("jax[{extra}]{version_pin}"),
        index_url: None,
        dist: format!("jax-cuda{major}-plugin"),
        dist_prefix: spec
            .version
            .as_deref()
            .map(|v| format!("{v}."))
            .unwrap_or_default(),
        dist_local: None,
        cuda: Version::parse(&major.to_string()).ok_or("JAX's CUDA")?,
        cuda_is_minor: false,
        driver_floor: floor,
        cudnn: None,
        python_default,
        replace: false,
        python: python.map(short_python),
        extra_dist: Some(("jax".to_string(), extra.clone())),
        why: format!(
            "jax[{extra}] pulls {}{floor_text} (frameworks.toml jax_extra, jax).{}",
            row.pulls, landing.why
        ),
        companions: Vec::new(),
    })
}

/// The CUDA major `jax[cuda]` installs: the extra is an alias of `cuda12` (frameworks.toml
/// `[[jax_extra]]` "cuda" pulls `jax-cuda12-plugin[with-cuda]`, from jax-ml/jax CHANGELOG.md @
/// cec06d11; a test keeps the two in step).
pub(super) const JAX_CUDA_ALIAS_MAJOR: u64 = 12;

/// The CUDA major of the JAX extra: the one `jax[cudaNN]` names, else the one these GPUs and
/// the driver take; `--cuda` must agree with it, since each extra is built for one major.
pub(super) fn jax_major(
    m: &Manifests,
    spec: &FrameworkSpec,
    ccs: &[String],
    cuda: Option<&Version>,
    driver: Option<&DriverCap>,
) -> Result<u64, String> {
    let major = match spec.extra.as_deref() {
        Some("cuda") => JAX_CUDA_ALIAS_MAJOR,
        Some("cuda12") => 12,
        Some("cuda13") => 13,
        Some(other) => {
            return Err(format!(
                "jax[{other}]: plans install jax[cuda12] or jax[cuda13] (the extras that bring \
                 NVIDIA's wheels)"
            ));
        }
        None => pick_major(&m.cuda, ccs, cuda, driver),
    };
    if let Some(c) = cuda
        && c.major() != major
    {
        return Err(format!(
            "jax[cuda{major}] is built for CUDA {major}, not CUDA {c}"
        ));
    }
    Ok(major)
}

/// Whether the extra can serve here: it existed in the JAX release asked for (extras come and
/// go between releases), and its wheels run on every GPU (its lowest compute capability, and
/// the CUDA major's own GPU support).
pub(super) fn jax_extra_fits(
    m: &Manifests,
    spec: &FrameworkSpec,
    ccs: &[String],
    row: &JaxExtra,
    major: u64,
) -> Result<(), String> {
    let extra = &row.extra;
    if let Some(version) = &spec.version {
        if let Some(first) = &row.first
            && compare(version, first).is_lt()
        {
            return Err(format!(
                "jax[{extra}] first appeared in JAX {first}, after {version}"
            ));
        }
        if let Some(removed) = &row.removed_in
            && compare(version, removed).is_ge()
        {
            return Err(format!("jax[{extra}] was removed in JAX {removed}"));
        }
    }
    if let Some(min) = row.min_sm.as_deref()
        && let Some(low) = ccs.iter().find(|cc| compare(cc, min).is_lt())
    {
        return Err(format!(
            "jax[{extra}] needs compute capability {min} or newer; this GPU is {}",
            choose::cc_label(&m.cuda, low)
        ));
    }
    let cuda_v = Version::parse(&format!("{major}.0")).ok_or("JAX's CUDA")?;
    if let Some(why) = choose::wheels_refuse_gpus(&m.cuda, &cuda_v, ccs) {
        return Err(format!("jax[{extra}] cannot work here: {why}"));
    }
    Ok(())
}

/// What pip would land for JAX on the environment's Python: a pin, when pip would otherwise
/// settle on an old release without the extra, and the sentence that says so.
#[derive(Default)]
pub(super) struct JaxLanding {
    /// `==0.4.38`: replaces the pin of the version asked for.
    pin: Option<String>,
    why: String,
}

/// The release pip lands on for `py`, and its CUDA plugin, which is what makes it a GPU JAX:
/// the plugin must have a wheel for this Python too.
pub(super) fn jax_landing(
    m: &Manifests,
    arch: &str,
    spec: &FrameworkSpec,
    major: u64,
    py: &str,
) -> Result<JaxLanding, String> {
    let extra = format!("cuda{major}");
    let pinned = land(m, arch, "jax", spec.version.as_deref(), Some(&extra), py)?;
    let release = pinned.clone().or_else(|| {
        m.pypi
            .newest("jax", spec.version.as_deref(), py, arch, Some(&extra))
            .map(|r| r.version.clone())
    });
    if let Some(release) = &release {
        let plugin = format!("jax-cuda{major}-plugin");
        land(m, arch, &plugin, Some(release), None, py)
            .map_err(|why| format!("jax[{extra}] {release}: {why}"))?;
    }
    Ok(match pinned {
        Some(v) => JaxLanding {
            why: format!(
                " Pinned to {v}: newer JAX releases do not install on Python {py}, and pip \
                 would otherwise settle on an old release without the [{extra}] extra, a \
                 CPU-only JAX (pypi.toml)."
            ),
            pin: Some(format!("=={v}")),
        },
        None => JaxLanding::default(),
    })
}

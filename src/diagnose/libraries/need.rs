//! Which cuDNN a framework was built for, and what says so: its wheel pin, the cuDNN its build
//! records, TensorFlow's tested configuration, or (for JAX) the release tables in
//! frameworks.toml. Both cuDNN findings start from this answer.

use super::pins::{spec_floor, split_pin};
use crate::framework::FrameworkName;
use crate::manifest::Manifests;
use crate::report::Framework;
use crate::version::{Version, package_version};

/// The cuDNN a framework was built for: its wheel pin (torch, JAX), else its build info and
/// TensorFlow's tested configuration; for JAX without either, the cuDNN its release needs
/// (frameworks.toml: old jaxlib builds, then the `[[jax]]` ranges).
pub(super) struct Need {
    pub(super) major: u64,
    /// The exact or minimum version it was built against, when known.
    pub(super) built: Option<Version>,
    /// Whether `built` is an exact pin (`==9.1.0.70`), which a wheel of another release
    /// departs from, rather than a minimum.
    pub(super) exact: bool,
    /// An old `+cudaXYZ` jaxlib, which predates pip's cuDNN wheels and uses the system's.
    pub(super) system_cudnn: bool,
    /// What says so.
    pub(super) source: String,
}

pub(super) fn cudnn_need(manifests: &Manifests, fw: &Framework) -> Option<Need> {
    if let Some(pin) = fw.pins.iter().find(|p| p.starts_with("nvidia-cudnn")) {
        let (_, spec) = split_pin(pin);
        let built = spec_floor(spec)?;
        let exact = spec.starts_with("==");
        // JAX's plugin pins the cuDNN it was built with as its floor (`>=9.8,<10.0` for
        // 0.6.0, "The minimum CuDNN version is v9.8"), and XLA refuses an older minor.
        let floor = fw.name == FrameworkName::Jax;
        return Some(Need {
            major: built.major(),
            built: (exact || floor).then_some(built),
            exact,
            system_cudnn: false,
            source: format!("{} pins {pin}", fw.name),
        });
    }
    // A cuDNN the build itself records (jaxlib's `+cuda11.cudnn86`, a conda build's string).
    if fw.name != FrameworkName::Tensorflow
        && let Some(recorded) = fw.cudnn.as_deref().and_then(Version::parse)
    {
        return Some(Need {
            major: recorded.major(),
            built: Some(recorded.clone()),
            exact: false,
            system_cudnn: false,
            source: format!("{} build records cuDNN {recorded} ({})", fw.name, fw.source),
        });
    }
    if fw.name == FrameworkName::Jax {
        return jax_cudnn_need(manifests, fw);
    }
    if fw.name == FrameworkName::Tensorflow {
        let major = Version::parse(fw.cudnn.as_deref()?)?.major();
        let tested = fw
            .version
            .as_deref()
            .and_then(|v| manifests.frameworks.tensorflow(v))
            .and_then(|row| Version::parse(&row.cudnn));
        return Some(Need {
            major,
            built: tested.filter(|t| t.major() == major),
            exact: false,
            system_cudnn: false,
            source: format!("tensorflow build_info says cuDNN {major}"),
        });
    }
    None
}

/// What a JAX without cuDNN pins or a cuDNN tag needs: an old `+cudaXYZ` jaxlib the cuDNN its
/// build script installed; a CUDA plugin the floor of its release's cuDNN range.
fn jax_cudnn_need(manifests: &Manifests, fw: &Framework) -> Option<Need> {
    let table = &manifests.frameworks;
    let cuda = fw.cuda.as_deref()?;
    let jaxlib = fw.components.iter().find(|c| c.name == "jaxlib");
    if let Some(lib) = jaxlib
        && let Some(release) = package_version(&lib.version)
        && let Some(row) = table.jaxlib_cudnn_built(&release.without_local().to_string(), cuda)
        && let Some(built) = Version::parse(&row.cudnn)
    {
        return Some(Need {
            major: built.major(),
            built: Some(built),
            exact: false,
            system_cudnn: true,
            source: format!(
                "jaxlib {} was built with cuDNN {} ({})",
                lib.version, row.cudnn, row.source
            ),
        });
    }
    // The plugin is released under jaxlib's version.
    let release = fw
        .components
        .iter()
        .find(|c| c.name.starts_with("jax-cuda") && c.name.ends_with("-plugin"))
        .or(jaxlib)
        .map(|c| c.version.as_str())
        .or(fw.version.as_deref())?;
    let release = package_version(release)?.without_local().to_string();
    let major = Version::parse(cuda)?.major();
    // The docs / PyPI ranges per CUDA major, else (CUDA 12) the plugin's cuDNN wheel floor read
    // from the release tag.
    let (spec, source) = table
        .jax(&release, major)
        .and_then(|row| Some((row.cudnn.as_deref()?, row.source.as_str())))
        .or_else(|| {
            let row = table.jax_cuda_check(&release).filter(|_| major == 12)?;
            Some((row.cudnn_wheel.as_deref()?, row.source.as_str()))
        })?;
    let floor = spec_floor(spec)?;
    Some(Need {
        major: floor.major(),
        built: Some(floor),
        exact: false,
        system_cudnn: false,
        source: format!("jax {release} (CUDA {major}) needs cuDNN {spec} ({source})"),
    })
}

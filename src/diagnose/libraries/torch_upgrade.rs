//! A published torch build (frameworks.toml) that resolves a cuDNN disagreement: the fix both
//! the cuDNN mismatch and the wheel conflict offer when torch's pin is the one to move.

use super::pins::split_pin;
use crate::framework::FrameworkName;
use crate::manifest::Manifests;
use crate::report::{Framework, PythonEnv};
use crate::version::{Version, package_version};

/// For a JAX that needs cuDNN `built` (its minor or newer) beside a torch that pins an older
/// cuDNN wheel: the published torch whose cuDNN JAX accepts.
pub(super) fn torch_for_jax(
    manifests: &Manifests,
    env: &PythonEnv,
    built: &Version,
) -> Option<String> {
    let torch = env
        .frameworks
        .iter()
        .find(|f| f.name == FrameworkName::Torch)?;
    let pin = torch.pins.iter().find(|p| p.starts_with("nvidia-cudnn"))?;
    let (wheel, _) = split_pin(pin);
    let major: u64 = wheel.rsplit_once("-cu").and_then(|(_, m)| m.parse().ok())?;
    let floor = Version::parse(&built.major_minor())?;
    let up = torch_with_cudnn(manifests, env, torch, major, |v| {
        v.major() == floor.major() && Version::parse(&v.major_minor()).is_some_and(|m| m >= floor)
    })?;
    Some(format!(
        "torch {} built for CUDA {} pins {wheel}=={} (`pip install \"torch=={}.*\" --index-url {}`)",
        up.release, up.cuda, up.cudnn, up.release, up.index
    ))
}

/// A published torch build (frameworks.toml) newer than the installed torch's minor series,
/// for the environment's Python, built for CUDA `cuda_major`, whose cuDNN wheel pin `allows`.
pub(super) struct TorchUpgrade {
    pub(super) release: String,
    pub(super) cuda: String,
    pub(super) cudnn: String,
    pub(super) index: String,
}

pub(super) fn torch_with_cudnn(
    manifests: &Manifests,
    env: &PythonEnv,
    torch: &Framework,
    cuda_major: u64,
    allows: impl Fn(&Version) -> bool,
) -> Option<TorchUpgrade> {
    let installed = package_version(torch.version.as_deref()?)?
        .without_local()
        .to_string();
    let fits_python = |min: &str, max: Option<&str>| {
        env.python_version
            .as_deref()
            .is_none_or(|py| crate::version::python_fits(py, min, max))
    };
    for release in &manifests.frameworks.torch {
        // Only releases after the installed one's minor series.
        let same_series = installed.starts_with(&format!("{}.", release.version));
        if same_series
            || crate::version::compare(&release.version, &installed).is_le()
            || !fits_python(&release.python_min, release.python_max.as_deref())
        {
            continue;
        }
        for build in &release.builds {
            let Some(cuda) = build.cuda().as_deref().and_then(Version::parse) else {
                continue;
            };
            let Some(cudnn) = build.cudnn.as_deref().and_then(Version::parse) else {
                continue;
            };
            if cuda.major() == cuda_major && allows(&cudnn) {
                return Some(TorchUpgrade {
                    release: release.version.clone(),
                    cuda: cuda.major_minor(),
                    cudnn: build.cudnn.clone().unwrap_or_default(),
                    index: manifests.frameworks.torch_index_url(&build.variant),
                });
            }
        }
    }
    None
}

//! What an aarch64 machine can install: the torch builds PyTorch publishes for it and the
//! TensorFlow releases that carry GPU wheels there, with the refusals that name them.

use crate::manifest::Manifests;

/// TensorFlow on aarch64 needs PyPI's aarch64 wheels of the series to be a CUDA build; they
/// are CPU-only in every release pypi.toml records.
pub(super) fn tensorflow_aarch64(m: &Manifests, series: &str) -> Result<(), String> {
    let build = m.pypi.aarch64_build("tensorflow", series);
    if build.is_some_and(|b| b.starts_with("cu")) {
        return Ok(());
    }
    let what = match build {
        None => "not recorded",
        Some("cpu") => "CPU-only builds",
        Some(b) => b,
    };
    Err(format!(
        "TensorFlow {series} has no CUDA build for aarch64 on PyPI: its aarch64 wheels are \
         {what} (pypi.toml aarch64_build, from the wheels' own build_info.py), so \
         `tensorflow[and-cuda]` would install a TensorFlow that never uses the GPU"
    ))
}

/// The torch releases and builds an aarch64 machine can pip-install with CUDA: those whose
/// PyPI aarch64 wheels are a CUDA build (pypi.toml `aarch64_build`, read from the wheels' own
/// `torch/version.py`), with that build alone. PyTorch's own index was not readable when the
/// table was made, so its other aarch64 variants are not planned (pypi.toml `gaps`).
pub(super) fn aarch64_torch(m: &Manifests) -> crate::manifest::FrameworkTable {
    let mut table = m.frameworks.clone();
    table.torch.retain_mut(|release| {
        let Some(build) = m
            .pypi
            .aarch64_build("torch", &release.version)
            .filter(|b| b.starts_with("cu"))
        else {
            return false;
        };
        release.builds.retain(|b| b.variant == build);
        !release.builds.is_empty()
    });
    table
}

/// What PyPI's aarch64 torch wheels are, in a few words: `CPU-only up to 2.10.0, cu130 from
/// 2.11.0`.
pub(super) fn aarch64_builds(m: &Manifests) -> String {
    let mut runs: Vec<(String, String, String)> = Vec::new();
    for r in m.pypi.releases("torch") {
        let Some(build) = r.aarch64_build.as_deref() else {
            continue;
        };
        match runs.last_mut() {
            Some((b, _, last)) if b == build => last.clone_from(&r.version),
            _ => runs.push((build.to_string(), r.version.clone(), r.version.clone())),
        }
    }
    let words: Vec<String> = runs
        .iter()
        .map(|(build, first, last)| {
            let what = if build == "cpu" { "CPU-only" } else { build };
            if first == last {
                format!("{what} in {first}")
            } else {
                format!("{what} from {first} to {last}")
            }
        })
        .collect();
    format!(
        "PyPI's aarch64 torch wheels: {} (pypi.toml)",
        words.join(", ")
    )
}

/// Why a torch release the manifests know is not planned on aarch64.
pub(super) fn aarch64_refusal(m: &Manifests, version: &str) -> String {
    let build = m
        .pypi
        .aarch64_build("torch", version)
        .unwrap_or("not recorded");
    format!(
        "torch {version} has no CUDA build for aarch64 that gpu-doctor knows: its PyPI aarch64 \
         wheel is {build}, and PyTorch's own index's aarch64 wheels are not in the manifests. \
         {}. Ask for a release with a CUDA build, or leave the version out.",
        aarch64_builds(m)
    )
}

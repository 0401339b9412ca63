//! Can each framework build run on this machine's AMD GPUs? A CUDA build where only AMD GPUs
//! are, a ROCm build without code for the GPU's gfx target, and a CPU build beside a usable
//! AMD GPU. Findings: `cuda-build-on-amd-gpu`, and the AMD side of `arch-not-in-build` and
//! `cpu-only-framework-build`.
//!
//! What a ROCm build carries is read from its own files first (the gfx targets of the rocBLAS
//! kernels inside the wheel); `rocm.toml` stands in only when they cannot be listed. The fix
//! names the PyTorch index whose wheels carry the target, and `HSA_OVERRIDE_GFX_VERSION` only
//! where the maintainers give it for the GPU's family.

use super::FindingBuilder;
use super::amd::{gpu_label, kfd_gpus};
use super::ids;
use crate::framework::FrameworkName;
use crate::manifest::{Manifests, TorchTargets};
use crate::report::GpuSource;
use crate::report::{Finding, Framework, Gpu, PythonEnv, Report, Severity, framework_subject};
use crate::version::GfxTarget;

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut out = Vec::new();
    if report.has_nvidia_gpu() {
        // CUDA builds belong to the NVIDIA GPU; the AMD one is then a display or a second
        // vendor's card, which the build rules below would only confuse.
        for env in &report.python_envs {
            for fw in &env.frameworks {
                out.extend(arch_missing(report, manifests, env, fw));
            }
        }
        return out;
    }
    for env in &report.python_envs {
        for fw in &env.frameworks {
            out.extend(cuda_build(report, manifests, env, fw));
            if !super::runtime::sees_gpu(fw) {
                out.extend(cpu_only(report, manifests, env, fw));
            }
            out.extend(arch_missing(report, manifests, env, fw));
        }
    }
    out.extend(hip_code_missing(report, manifests));
    out
}

/// A HIP program's own GPU code (llama.cpp's or ollama's `libggml-hip.so`) without the target
/// of an AMD GPU it would run on, the override (if valid) taken as the target: HIP's words,
/// "No compatible code objects found for: gfx1152" (ggml-org/llama.cpp#19949). Both directions:
/// a build older than the GPU, and one that left an old target out. Compressed bundles (`CCOB`)
/// are judged by the targets their decoded head names; one whose head did not decode (targets
/// unknown) is not judged.
fn hip_code_missing(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let Some(rocm) = report.rocm.as_ref() else {
        return Vec::new();
    };
    let over = super::env_var(report, "HSA_OVERRIDE_GFX_VERSION")
        .and_then(GfxTarget::from_override)
        .map(|t| t.to_string());
    let mut out = Vec::new();
    for code in rocm.hip_code.iter().filter(|c| !c.targets.is_empty()) {
        let has = |gfx: &str| code.targets.iter().any(|t| t == gfx);
        for gpu in target_gpus(report) {
            let Some(own) = gpu.gfx_target.as_deref() else {
                continue;
            };
            let effective = over.as_deref().unwrap_or(own);
            if has(effective) || (over_misfits(manifests, over.as_deref(), own) && has(own)) {
                continue;
            }
            let name = gpu.name.as_deref().unwrap_or("the AMD GPU");
            let mut f = FindingBuilder::new(
                &ids::ARCH_NOT_IN_BUILD,
                Severity::Error,
                format!(
                    "{}'s HIP code has no kernels for {name} ({effective})",
                    code.program
                ),
            )
            .detail(format!(
                "A HIP program carries its GPU code as one code object per gfx target, and this \
                 build has none for {effective}: HIP finds \"No compatible code objects found for: \
                 {effective}\" and the program crashes or falls back to the CPU."
            ))
            .evidence(format!("{}: gfx target {own}", gpu_label(gpu)))
            .evidence(format!(
                "{}: {}offload bundles for {} (its .hip_fatbin)",
                code.path,
                if code.compressed { "compressed " } else { "" },
                code.targets.join(" ")
            ))
            .subject(gpu.subject());
            if let Some(o) = &over {
                f = f.evidence(format!("HSA_OVERRIDE_GFX_VERSION makes ROCm use {o}"));
            }
            let first = manifests
                .rocm
                .first_release(own)
                .map(|r| format!(" (ROCm {} or newer: {})", r.rocm, r.source))
                .unwrap_or_default();
            let rebuild = if code.program == "ollama" {
                format!("Install an ollama release whose ROCm build lists {own}")
            } else {
                format!(
                    "Rebuild it for the GPU on a ROCm that knows {own}{first}: `cmake -B build \
                     -DGGML_HIP=ON -DGPU_TARGETS={own} && cmake --build build`, or use a release \
                     built with {own}"
                )
            };
            let sibling = manifests.rocm.override_group(own).filter(|g| {
                over.is_none()
                    && GfxTarget::from_override(&g.value).is_some_and(|t| has(&t.to_string()))
            });
            let fix = match sibling {
                Some(g) => format!(
                    "{rebuild}. Or run this build as its {} sibling: `export \
                     HSA_OVERRIDE_GFX_VERSION={}` before starting it.",
                    g.family, g.value
                ),
                None => format!("{rebuild}."),
            };
            out.push(f.fix(fix).build());
        }
    }
    out
}

fn label(fw: &Framework) -> String {
    format!(
        "{} {}",
        fw.name,
        fw.version.as_deref().unwrap_or("(version unknown)")
    )
}

/// The AMD GPUs a framework would run on: KFD GPUs a mask does not hide, leaving out an
/// integrated GPU beside a discrete one (that is `rocm-igpu-visible`'s business).
fn target_gpus(report: &Report) -> Vec<&Gpu> {
    let gpus = kfd_gpus(report);
    let discrete = gpus.iter().any(|g| g.integrated == Some(false));
    gpus.into_iter()
        .filter(|g| !(discrete && g.integrated == Some(true)))
        .collect()
}

/// The PyTorch ROCm index to install from for a GPU target (`rocm.toml`): `(release, variant)`.
fn torch_for(
    manifests: &Manifests,
    torch: Option<&str>,
    gfx: &str,
    python: Option<&str>,
) -> Option<(String, String)> {
    manifests
        .rocm
        .torch_wheel(&manifests.frameworks, torch, gfx, python)
        .map(|w| (w.release, w.variant))
}

/// Why no release was found for a target that some torch release carries: the environment's
/// Python is one no such release publishes wheels for.
fn python_note(manifests: &Manifests, gfx: &str, python: Option<&str>) -> Option<String> {
    let python = python?;
    manifests.rocm.newest_torch_with(gfx)?;
    let newest = manifests.frameworks.torch.iter().rev().find(|r| {
        manifests
            .rocm
            .torch_row(&r.version)
            .is_some_and(|row| row.targets.iter().any(|t| t == gfx))
    })?;
    Some(format!(
        "No PyTorch ROCm release that carries {gfx} publishes wheels for Python {python}: make the \
         environment with Python {} or newer (torch {} supports {} to {}), then install the ROCm \
         build from its index (`gpu-doctor plan --framework torch`).",
        newest.python_min,
        newest.version,
        newest.python_min,
        newest.python_max.as_deref().unwrap_or("the newest")
    ))
}

// ---------------------------------------------------------------------------------------------
// cuda-build-on-amd-gpu

/// The machine's GPUs are AMD only and a framework is a CUDA build (torch `+cu124`, a JAX CUDA
/// plugin, TensorFlow built for CUDA, `cupy-cuda12x`): it looks for an NVIDIA driver and runs
/// on the CPU or fails. The fix is the framework's ROCm build.
fn cuda_build(
    report: &Report,
    manifests: &Manifests,
    env: &PythonEnv,
    fw: &Framework,
) -> Option<Finding> {
    if fw.variant.as_deref() != Some("cuda") && fw.cuda.is_none() {
        return None;
    }
    let gpus: Vec<&Gpu> = report
        .amd_gpus()
        .filter(|g| g.source == GpuSource::Kfd || g.bound_driver.as_deref() == Some("amdgpu"))
        .collect();
    let gpu = gpus
        .iter()
        .find(|g| g.integrated == Some(false))
        .or_else(|| gpus.first())
        .copied()?;
    let gfx = gpu.gfx_target.as_deref();
    let mut f = FindingBuilder::new(
        &ids::CUDA_BUILD_ON_AMD_GPU,
        Severity::Error,
        format!(
            "{} in {} is a CUDA build, but this machine's GPU is AMD ({})",
            label(fw),
            env.path,
            gpu.name.as_deref().unwrap_or("AMD GPU")
        ),
    )
    .detail(format!(
        "This {} build is made for NVIDIA GPUs: it needs the NVIDIA driver and CUDA, which an \
         AMD GPU does not have, so it reports no GPU (torch.cuda.is_available() is False) and \
         runs on the CPU. AMD GPUs need the framework's ROCm build.",
        fw.name
    ))
    .evidence(format!(
        "{}: built for CUDA {} ({})",
        label(fw),
        fw.cuda.as_deref().unwrap_or("?"),
        fw.source
    ))
    .subject(framework_subject(&env.path, &fw.name));
    for g in &gpus {
        f = f.evidence(gpu_label(g)).subject(g.subject());
    }
    if !fw.pins.is_empty() {
        f = f.evidence(format!("pins NVIDIA wheels: {}", fw.pins.join(", ")));
    }
    let fix = cuda_build_fix(manifests, env, fw, gfx);
    for id in [
        &ids::CPU_ONLY_FRAMEWORK_BUILD,
        &ids::FRAMEWORK_CANNOT_SEE_GPU,
        &ids::LIBRARY_NOT_FOUND,
        &ids::CUDNN_MISSING,
        &ids::ARCH_CHECK_SKIPPED,
    ] {
        f = f.explains(id);
    }
    Some(f.fix(fix).build())
}

/// The framework's ROCm build in place of its CUDA one: for torch the ROCm wheel that carries
/// the GPU's target, for the others their ROCm package.
fn cuda_build_fix(
    manifests: &Manifests,
    env: &PythonEnv,
    fw: &Framework,
    gfx: Option<&str>,
) -> String {
    match FrameworkName::from_report(&fw.name) {
        Some(FrameworkName::Torch) => torch_rocm_fix(manifests, env, fw, gfx),
        Some(FrameworkName::Jax) => {
            "Replace the CUDA plugin with JAX's ROCm one: `pip uninstall -y \
             jax-cuda12-plugin jax-cuda12-pjrt jax-cuda13-plugin jax-cuda13-pjrt` and `pip \
             install -U \"jax[rocm7-local]\"` (it needs ROCm 7 installed)."
                .to_string()
        }
        Some(FrameworkName::Tensorflow) => "Use TensorFlow's ROCm build: `pip uninstall -y \
             tensorflow` and `pip install tensorflow-rocm` (its release must match the installed \
             ROCm), or AMD's rocm/tensorflow container."
            .to_string(),
        Some(FrameworkName::Cupy) => format!(
            "Use CuPy's ROCm package: `pip uninstall -y {}` and install the `cupy-rocm-*` \
             package matching the installed ROCm.",
            fw.source
                .rsplit('/')
                .next()
                .and_then(|d| d.split('-').next())
                .map_or("cupy", |d| if d.starts_with("cupy_cuda") {
                    "cupy-cuda12x cupy-cuda11x"
                } else {
                    "cupy"
                })
        ),
        None => format!("Install the ROCm build of {}.", fw.name),
    }
}

/// PyTorch's ROCm wheel from the index whose wheels carry the GPU's target; where none does,
/// the one that carries its family's override sibling, run with `HSA_OVERRIDE_GFX_VERSION`.
/// The NVIDIA wheels the CUDA build brought are uninstalled first.
fn torch_rocm_fix(
    manifests: &Manifests,
    env: &PythonEnv,
    fw: &Framework,
    gfx: Option<&str>,
) -> String {
    let nvidia_wheels: Vec<&str> = env.nvidia_wheels.iter().map(|w| w.name.as_str()).collect();
    let uninstall = if nvidia_wheels.is_empty() {
        String::new()
    } else {
        format!("`pip uninstall -y {}`, then ", nvidia_wheels.join(" "))
    };
    let sibling = gfx
        .and_then(|g| manifests.rocm.override_group(g))
        .and_then(|grp| {
            let t = GfxTarget::from_override(&grp.value)?.to_string();
            torch_for(
                manifests,
                fw.version.as_deref(),
                &t,
                env.python_version.as_deref(),
            )
            .map(|found| (grp, t, found))
        });
    match gfx.and_then(|g| {
        torch_for(
            manifests,
            fw.version.as_deref(),
            g,
            env.python_version.as_deref(),
        )
    }) {
        Some((rel, variant)) => format!(
            "Install PyTorch's ROCm build: {uninstall}`pip install --force-reinstall \
             torch=={rel} --index-url {}` (its wheels carry {}). Use --index-url, not \
             --extra-index-url: beside PyPI pip may pick the CUDA wheel again.",
            manifests.frameworks.torch_index_url(&variant),
            gfx.unwrap_or("the GPU's target")
        ),
        None if let Some((grp, t, (rel, variant))) = sibling => format!(
            "Install PyTorch's ROCm build: {uninstall}`pip install --force-reinstall \
             torch=={rel} --index-url {}`. No ROCm wheel carries {} itself; its {} \
             sibling {t} is carried, so start Python with `export \
             HSA_OVERRIDE_GFX_VERSION={}` set. Use --index-url, not --extra-index-url: \
             beside PyPI pip may pick the CUDA wheel again.",
            manifests.frameworks.torch_index_url(&variant),
            gfx.unwrap_or("the GPU's target"),
            grp.family,
            grp.value
        ),
        None => format!(
            "Install PyTorch's ROCm build instead: {uninstall}`pip install \
             --force-reinstall torch --index-url https://download.pytorch.org/whl/rocmX.Y` \
             with the ROCm version whose wheels carry the GPU's target{} (see `gpu-doctor \
             plan --framework torch`).",
            gfx.map(|g| format!(" ({g})")).unwrap_or_default()
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// cpu-only-framework-build (AMD)

/// A CPU build of torch where ROCm can reach an AMD GPU (a KFD node and `/dev/kfd`).
fn cpu_only(
    report: &Report,
    manifests: &Manifests,
    env: &PythonEnv,
    fw: &Framework,
) -> Option<Finding> {
    if fw.variant.as_deref() != Some("cpu") || fw.distribution.is_some() {
        return None;
    }
    if !report.kernel.device_nodes.iter().any(|n| n == "/dev/kfd") {
        return None;
    }
    let gpu = *target_gpus(report).first()?;
    let gfx = gpu.gfx_target.as_deref();
    let fix = match (FrameworkName::from_report(&fw.name), gfx) {
        (Some(FrameworkName::Torch), Some(g)) => match torch_for(manifests, fw.version.as_deref(), g, env.python_version.as_deref()) {
            Some((rel, variant)) => format!(
                "Install the ROCm build: `pip install --force-reinstall torch=={rel} --index-url {}` (its wheels carry {g}).",
                manifests.frameworks.torch_index_url(&variant)
            ),
            None => python_note(manifests, g, env.python_version.as_deref()).unwrap_or_else(|| {
                format!(
                    "No PyTorch ROCm wheel in gpu-doctor's tables carries {g}; see `gpu-doctor plan \
                     --framework torch`."
                )
            }),
        },
        (Some(FrameworkName::Jax), _) => "Install JAX with its ROCm plugin: `pip install -U \"jax[rocm7-local]\"` (needs ROCm 7).".to_string(),
        (Some(FrameworkName::Tensorflow), _) => "Install `tensorflow-rocm` (matching the installed ROCm).".to_string(),
        _ => format!("Install the ROCm build of {} (see `gpu-doctor plan`).", fw.name),
    };
    Some(
        FindingBuilder::new(
            &ids::CPU_ONLY_FRAMEWORK_BUILD,
            Severity::Warning,
            format!(
                "{} in {} is a CPU-only build on a machine with {}",
                label(fw),
                env.path,
                gpu.name.as_deref().unwrap_or("an AMD GPU")
            ),
        )
        .detail(format!(
            "This {} build has no ROCm support, so it runs everything on the CPU even though \
             ROCm can reach the AMD GPU here. Usually pip took the CPU (or PyPI's CUDA) wheel \
             because no ROCm index was given.",
            fw.name
        ))
        .evidence(format!("{}: cpu build ({})", label(fw), fw.source))
        .evidence(gpu_label(gpu))
        .subject(framework_subject(&env.path, &fw.name))
        .fix(fix)
        .build(),
    )
}

// ---------------------------------------------------------------------------------------------
// arch-not-in-build (AMD)

/// What a ROCm build carries: the framework's own answer (`--deep`), its files, or the table.
enum Carries<'a> {
    List(Vec<String>, String),
    Row(&'a TorchTargets),
    Unknown,
}

fn carries<'a>(manifests: &'a Manifests, fw: &Framework) -> Carries<'a> {
    if let Some((list, source)) = super::runtime::arch_list(fw) {
        let gfx: Vec<String> = list
            .iter()
            .filter_map(|a| GfxTarget::parse(a).map(|t| t.to_string()))
            .collect();
        if !gfx.is_empty() {
            return Carries::List(gfx, source);
        }
    }
    if !fw.gfx_targets.is_empty() {
        return Carries::List(
            fw.gfx_targets.clone(),
            fw.gfx_targets_source
                .clone()
                .unwrap_or_else(|| "the wheel's files".to_string()),
        );
    }
    match fw
        .version
        .as_deref()
        .and_then(|v| manifests.rocm.torch_row(v))
    {
        Some(row) => Carries::Row(row),
        None => Carries::Unknown,
    }
}

/// Whether an override target (`gfx1201`) is of another family than the GPU's `own` target.
fn over_misfits(manifests: &Manifests, over: Option<&str>, own: &str) -> bool {
    over.and_then(GfxTarget::parse)
        .is_some_and(|t| !super::amd_env::override_fits(manifests, own, t))
}

/// A ROCm build (torch from its rocBLAS files or the table) without code for the target of an
/// AMD GPU it would run on, the override (if valid) taken as the target. rocBLAS's own words:
/// "Cannot read .../TensileLibrary.dat: Illegal seek for GPU arch : gfx1031"; HIP's: "invalid
/// device function".
fn arch_missing(
    report: &Report,
    manifests: &Manifests,
    env: &PythonEnv,
    fw: &Framework,
) -> Option<Finding> {
    if fw.variant.as_deref() != Some("rocm") || fw.name != FrameworkName::Torch {
        return None;
    }
    let over = super::env_var(report, "HSA_OVERRIDE_GFX_VERSION")
        .and_then(GfxTarget::from_override)
        .map(|t| t.to_string());
    let carried = carries(manifests, fw);
    let has = |gfx: &str| -> Option<bool> {
        match &carried {
            Carries::List(list, _) => Some(list.iter().any(|t| t == gfx)),
            Carries::Row(row) if row.uncertain.iter().any(|t| t == gfx) => None,
            Carries::Row(row) => Some(row.targets.iter().any(|t| t == gfx)),
            Carries::Unknown => None,
        }
    };
    let evidence_list = match &carried {
        Carries::List(list, source) => format!("carries {} ({source})", list.join(" ")),
        Carries::Row(row) => format!(
            "torch {} to {} ROCm wheels carry {} (rocm.toml; the wheel's files could not be listed)",
            row.first,
            row.last,
            row.targets.join(" ")
        ),
        Carries::Unknown => String::new(),
    };
    for gpu in target_gpus(report) {
        let Some(own) = gpu.gfx_target.as_deref() else {
            continue;
        };
        let effective = over.as_deref().unwrap_or(own);
        if has(effective) != Some(false) {
            continue;
        }
        // An override of another family, on a build that carries the GPU's own target: the
        // override is the whole fault (`hsa-override-mismatch`).
        if over_misfits(manifests, over.as_deref(), own) && has(own) == Some(true) {
            continue;
        }
        let group = manifests.rocm.override_group(own);
        let no_override = manifests.rocm.no_override(own);
        let mut f = FindingBuilder::new(
            &ids::ARCH_NOT_IN_BUILD,
            Severity::Error,
            format!("{} has no kernels for {} ({effective})", label(fw), gpu.name.as_deref().unwrap_or("the AMD GPU")),
        )
        .detail(format!(
            "ROCm builds carry machine code per gfx target, and this build has none for {effective}, \
             so GPU work fails (\"HIP error: invalid device function\", rocBLAS \"Cannot read \
             TensileLibrary.dat ... for GPU arch : {effective}\") or the GPU is not used."
        ))
        .evidence(format!("{}: gfx target {own}", gpu_label(gpu)))
        .evidence(format!("{} in {}: {evidence_list}", label(fw), env.path))
        .subject(framework_subject(&env.path, &fw.name))
        .subject(gpu.subject());
        if let Some(o) = &over {
            f = f.evidence(format!("HSA_OVERRIDE_GFX_VERSION makes ROCm use {o}"));
        }
        for line in super::runtime::confirmation(fw) {
            f = f.evidence(line);
        }
        let wheel = torch_for(manifests, fw.version.as_deref(), own, env.python_version.as_deref()).map(|(rel, variant)| {
            format!(
                "`pip install --force-reinstall torch=={rel} --index-url {}` (its wheels carry {own})",
                manifests.frameworks.torch_index_url(&variant)
            )
        });
        let sibling = group.filter(|g| {
            over.is_none()
                && GfxTarget::from_override(&g.value)
                    .is_some_and(|t| has(&t.to_string()) == Some(true))
        });
        let fix = match (wheel, sibling) {
            (Some(w), Some(g)) => format!(
                "Install a build that carries {own}: {w}. Or run this one as its {} sibling: \
                 `export HSA_OVERRIDE_GFX_VERSION={}` before starting Python (a value set inside \
                 Python is too late).",
                g.family, g.value
            ),
            (Some(w), None) => format!("Install a build that carries {own}: {w}."),
            (None, Some(g)) => format!(
                "No PyTorch ROCm wheel in gpu-doctor's tables carries {own}; run this build as its \
                 {} sibling: `export HSA_OVERRIDE_GFX_VERSION={}` before starting Python.",
                g.family, g.value
            ),
            (None, None) => format!(
                "No PyTorch ROCm wheel in gpu-doctor's tables carries {own}{}. Build PyTorch for \
                 {own} (PYTORCH_ROCM_ARCH={own}), use a nightly that lists it, or run on a \
                 backend that supports the GPU (Vulkan).",
                no_override
                    .map(|n| format!(", and HSA_OVERRIDE_GFX_VERSION is no fix: {}", n.reason))
                    .unwrap_or_default()
            ),
        };
        return Some(f.fix(fix).build());
    }
    None
}

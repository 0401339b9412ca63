//! The local toolkit as a compiler for framework extensions (torch `cpp_extension`,
//! flash-attn, apex, tiny-cuda-nn, bitsandbytes from source). Findings:
//! `toolkit-cannot-target-gpu`, `toolkit-framework-cuda-mismatch`.
//!
//! The toolkit checked is the one `torch.utils.cpp_extension` would build with (marked
//! `builds_extensions` by the probe). Neither rule matters to someone who only runs prebuilt
//! wheels, which is why both say so. Without a CUDA framework, `toolkit-cannot-target-gpu` still
//! applies to the nvcc on PATH (else the build toolkit): people build CUDA code with nvcc alone
//! (llama.cpp, benchmarks, the CUDA samples), and an nvcc that cannot target the GPU is then their
//! problem.

use super::FindingBuilder;
use super::ids;
use crate::framework::FrameworkName;
use crate::manifest::{Manifests, Targeting};
use crate::report::GpuSource;
use crate::report::Subject;
use crate::report::{Finding, Framework, PythonEnv, Report, Severity, Toolkit, framework_subject};
use crate::version::Version;

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let build_toolkit = report.toolkits.iter().find(|t| t.builds_extensions);
    let cuda_frameworks: Vec<(&PythonEnv, &Framework)> = report
        .python_envs
        .iter()
        .flat_map(|e| e.frameworks.iter().map(move |f| (e, f)))
        .filter(|(_, f)| f.variant.as_deref() == Some("cuda") && f.cuda.is_some())
        .collect();
    if cuda_frameworks.is_empty() {
        // nvcc alone: the one a shell runs (on PATH), else the one builds pick.
        let on_path = report
            .toolkits
            .iter()
            .find(|t| t.found_via.iter().any(|v| v == "PATH"));
        return on_path
            .or(build_toolkit)
            .and_then(|t| cannot_target(report, manifests, t, false))
            .into_iter()
            .collect();
    }
    let Some(toolkit) = build_toolkit else {
        return Vec::new();
    };
    let mut out: Vec<Finding> = cannot_target(report, manifests, toolkit, true)
        .into_iter()
        .collect();
    out.extend(
        cuda_frameworks
            .iter()
            .filter(|(_, f)| f.name == FrameworkName::Torch)
            .filter_map(|(env, fw)| framework_mismatch(manifests, toolkit, env, fw)),
    );
    out
}

/// The toolkit's compiler version: nvcc's own, else the toolkit's.
fn compiler_version(toolkit: &Toolkit) -> Option<Version> {
    toolkit
        .nvcc_version
        .as_deref()
        .or(toolkit.version.as_deref())
        .and_then(Version::parse)
}

fn toolkit_evidence(toolkit: &Toolkit) -> String {
    format!(
        "toolkit extension builds use: {} (nvcc {}; picked like torch.utils.cpp_extension: CUDA_HOME, CUDA_PATH, nvcc on PATH, /usr/local/cuda)",
        toolkit.path,
        toolkit
            .nvcc_version
            .as_deref()
            .or(toolkit.version.as_deref())
            .unwrap_or("unknown")
    )
}

fn cannot_target(
    report: &Report,
    manifests: &Manifests,
    toolkit: &Toolkit,
    frameworks: bool,
) -> Option<Finding> {
    let version = compiler_version(toolkit)?;
    let mut f: Option<FindingBuilder> = None;
    let mut fix_floor: Option<String> = None;
    for gpu in report.nvidia_gpus().filter(|g| g.source != GpuSource::Pci) {
        let Some(cc) = gpu.compute_capability.as_deref() else {
            continue;
        };
        let Some(cc_v) = Version::parse(cc) else {
            continue;
        };
        let sm = format!("{}{}", cc_v.major(), cc_v.minor());
        let name = gpu.name.as_deref().unwrap_or("GPU");
        let why = match manifests.cuda.toolkit_targets(version.as_str(), cc) {
            Targeting::TooOld(row) => {
                fix_floor = Some(row.cuda.clone());
                format!(
                    "sm_{sm} is first targeted by CUDA {} (cuda.toml arch_support: {})",
                    row.cuda, row.source
                )
            }
            Targeting::Removed(row) => format!(
                "CUDA {} removed sm_{sm} from nvcc's targets (cuda.toml arch_support: {})",
                row.cuda, row.source
            ),
            Targeting::Yes | Targeting::Unknown => continue,
        };
        let builder = f.take().unwrap_or_else(|| {
            FindingBuilder::new(
                &ids::TOOLKIT_CANNOT_TARGET_GPU,
                Severity::Warning,
                if frameworks {
                    format!(
                        "nvcc {version} cannot compile for {name} (sm_{sm}): building CUDA extensions fails"
                    )
                } else {
                    format!(
                        "nvcc {version} cannot compile for {name} (sm_{sm}): building CUDA code for it fails"
                    )
                },
            )
            .detail(if frameworks {
                format!(
                    "Building a CUDA extension from source (torch.utils.cpp_extension, flash-attn, \
                     apex, tiny-cuda-nn, bitsandbytes) compiles for this GPU's architecture, and \
                     this toolkit's nvcc does not know it: the build stops with \"nvcc fatal : \
                     Unsupported gpu architecture 'compute_{sm}'\". Prebuilt framework wheels are \
                     not affected; this only matters when something is compiled here."
                )
            } else {
                format!(
                    "No CUDA framework is installed, so what runs CUDA here is built here, with \
                     this nvcc (llama.cpp, benchmarks, the CUDA samples, your own code). It does \
                     not know this GPU's architecture: `nvcc -arch=sm_{sm}` (or CMake's \
                     CMAKE_CUDA_ARCHITECTURES={sm}, or `native`) stops with \"nvcc fatal : \
                     Unsupported gpu architecture 'compute_{sm}'\", and code built for an older \
                     architecture only runs if it carries PTX the driver can compile."
                )
            })
            .evidence(if frameworks {
                toolkit_evidence(toolkit)
            } else {
                format!(
                    "nvcc {version} of {} ({}; no CUDA framework installed)",
                    toolkit.path,
                    if toolkit.found_via.iter().any(|v| v == "PATH") {
                        "on PATH"
                    } else {
                        "the toolkit builds pick"
                    }
                )
            })
            .subject(Subject::Toolkit(toolkit.path.clone()))
        });
        f = Some(
            builder
                .evidence(format!(
                    "GPU {}: {name}, compute capability {cc}; {why}",
                    gpu.index
                ))
                .subject(gpu.subject()),
        );
    }
    let fix = match fix_floor {
        // nvcc alone (llama.cpp, whisper.cpp, samples): no framework to match, no
        // TORCH_CUDA_ARCH_LIST; CMake caches the compiler it found, so the build folder goes.
        Some(floor) if !frameworks => format!(
            "Install CUDA toolkit {floor} or newer and put its nvcc first on PATH: `export \
             PATH=/usr/local/cuda-X.Y/bin:$PATH`. CMake builds (llama.cpp, whisper.cpp) cache the \
             nvcc they found: delete the build folder, or pass \
             `-DCMAKE_CUDA_COMPILER=/usr/local/cuda-X.Y/bin/nvcc`. Building for an older \
             architecture instead (CMAKE_CUDA_ARCHITECTURES=86) only runs on this GPU through PTX \
             the driver compiles at load, if the build keeps it."
        ),
        Some(floor) => format!(
            "Install CUDA toolkit {floor} or newer (matching your framework's CUDA major) and point the build at it: `export CUDA_HOME=/usr/local/cuda-X.Y PATH=/usr/local/cuda-X.Y/bin:$PATH`. Setting TORCH_CUDA_ARCH_LIST to an older architecture only builds code this GPU cannot run natively."
        ),
        None => "Build with an older CUDA toolkit that still targets this GPU (set CUDA_HOME to it), or use prebuilt wheels.".to_string(),
    };
    Some(f?.fix(fix).build())
}

/// torch's own check in `torch.utils.cpp_extension._check_cuda_version`: a different CUDA
/// major between nvcc and `torch.version.cuda` raises "The detected CUDA version (X)
/// mismatches the version that was used to compile PyTorch (Y). Please make sure to use the
/// same CUDA versions."; a different minor only warns.
fn framework_mismatch(
    manifests: &Manifests,
    toolkit: &Toolkit,
    env: &PythonEnv,
    fw: &Framework,
) -> Option<Finding> {
    let nvcc = compiler_version(toolkit)?;
    let built = Version::parse(fw.cuda.as_deref()?)?;
    // A major-only build tag ("12") cannot be compared at the minor.
    let built_has_minor = built.as_str().contains('.');
    let major_differs = nvcc.major() != built.major();
    let minor_differs = built_has_minor && nvcc.minor() != built.minor();
    if !major_differs && !minor_differs {
        return None;
    }
    let label = format!(
        "{} {}",
        fw.name,
        fw.version.as_deref().unwrap_or("(version unknown)")
    );
    // A different major stops the build (torch raises); a different minor is what torch itself
    // calls "most likely not a problem" (it only warns), so it is information.
    let (severity, detail) = if major_differs {
        (
            Severity::Warning,
            format!(
                "Building a CUDA extension for {label} (torch.utils.cpp_extension, and every \
                 package that builds with it: flash-attn, apex, xformers from source) stops with \
                 \"The detected CUDA version ({}) mismatches the version that was used to compile \
                 PyTorch ({}). Please make sure to use the same CUDA versions.\" Running the \
                 prebuilt wheel is not affected.",
                nvcc.major_minor(),
                built.major_minor()
            ),
        )
    } else {
        (
            Severity::Info,
            format!(
                "torch warns \"The detected CUDA version ({}) has a minor version mismatch with \
                 the version that was used to compile PyTorch ({}). Most likely this shouldn't be \
                 a problem.\" when building extensions; the build goes on. Running the prebuilt \
                 wheel is not affected.",
                nvcc.major_minor(),
                built.major_minor()
            ),
        )
    };
    Some(
        FindingBuilder::new(
            &ids::TOOLKIT_FRAMEWORK_CUDA_MISMATCH,
            severity,
            format!(
                "nvcc is CUDA {} but {label} was built with CUDA {}: extension builds {}",
                nvcc.major_minor(),
                built.major_minor(),
                if major_differs { "fail" } else { "warn" }
            ),
        )
        .detail(detail)
        .evidence(toolkit_evidence(toolkit))
        .evidence(format!(
            "{label} in {}: built with CUDA {} ({})",
            env.path, built, fw.source
        ))
        .subject(Subject::Toolkit(toolkit.path.clone()))
        .subject(framework_subject(&env.path, &fw.name))
        .fix(format!(
            "Build with a CUDA {} toolkit: install it and `export CUDA_HOME=/usr/local/cuda-{}`{}",
            built.major_minor(),
            built.major_minor(),
            published_alternative(manifests, env, &nvcc)
        ))
        .build(),
    )
}

/// The other way out: a published torch build for nvcc's CUDA, for the environment's Python,
/// picked from frameworks.toml's build lists (there is no build for every CUDA minor: no
/// `cu125`). The exact minor when published, else the newest build of nvcc's major at or
/// below its minor (torch accepts a lower minor), else nothing.
fn published_alternative(manifests: &Manifests, env: &PythonEnv, nvcc: &Version) -> String {
    // "3.11.9" is compared as 3.11 with the releases' "3.8" .. "3.11"; unknown fits.
    let fits_python = |min: &str, max: Option<&str>| {
        env.python_version
            .as_deref()
            .is_none_or(|py| crate::version::python_fits(py, min, max))
    };
    let mut best: Option<(Version, &str, String)> = None;
    for release in &manifests.frameworks.torch {
        if !fits_python(&release.python_min, release.python_max.as_deref()) {
            continue;
        }
        for build in &release.builds {
            let Some(cuda) = variant_cuda(&build.variant) else {
                continue;
            };
            if cuda.major() != nvcc.major() || cuda.minor() > nvcc.minor() {
                continue;
            }
            let rank = (cuda.minor(), Version::parse(&release.version));
            let better = best
                .as_ref()
                .is_none_or(|(c, _, r)| (c.minor(), Version::parse(r)) < rank);
            if better {
                best = Some((cuda, build.variant.as_str(), release.version.clone()));
            }
        }
    }
    let py = env
        .python_version
        .as_deref()
        .map(|v| format!(" for Python {v}"))
        .unwrap_or_default();
    match best {
        Some((cuda, variant, release)) => {
            let exact = cuda.minor() == nvcc.minor();
            format!(
                ", or install torch {release} built for CUDA {} ({variant}, published{py}; `pip install torch=={release}.* --index-url https://download.pytorch.org/whl/{variant}`){}. See `gpu-doctor plan`.",
                cuda.major_minor(),
                if exact {
                    String::new()
                } else {
                    format!(
                        "; no torch build for CUDA {} is published, and a lower minor of the same major builds with nvcc {} (torch only warns)",
                        nvcc.major_minor(),
                        nvcc.major_minor()
                    )
                }
            )
        }
        None => format!(
            ". No published torch build{py} targets CUDA {}.x at or below {} (frameworks.toml), so the toolkit is the one to change.",
            nvcc.major(),
            nvcc.major_minor()
        ),
    }
}

/// `cu128` -> CUDA 12.8; `cu102` -> 10.2; anything else (cpu, rocm) -> none.
fn variant_cuda(variant: &str) -> Option<Version> {
    let digits = variant.strip_prefix("cu")?;
    if digits.len() < 3 || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (major, minor) = digits.split_at(digits.len() - 1);
    Version::parse(&format!("{major}.{minor}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::embedded;
    use crate::report::Gpu;

    fn machine(nvcc: &str, cc: &str, torch_cuda: &str) -> Report {
        Report {
            gpus: vec![Gpu {
                index: 0,
                name: Some("NVIDIA GeForce RTX 4090".into()),
                compute_capability: Some(cc.into()),
                source: "nvml".into(),
                ..Gpu::default()
            }],
            toolkits: vec![Toolkit {
                path: "/usr/local/cuda-x".into(),
                version: Some(nvcc.into()),
                nvcc_version: Some(nvcc.into()),
                builds_extensions: true,
                found_via: vec!["/usr/local/cuda".into()],
                ..Toolkit::default()
            }],
            python_envs: vec![PythonEnv {
                path: "/venv".into(),
                frameworks: vec![Framework {
                    name: "torch".into(),
                    version: Some("2.1.0+cu121".into()),
                    cuda: Some(torch_cuda.into()),
                    variant: Some("cuda".into()),
                    ..Framework::default()
                }],
                ..PythonEnv::default()
            }],
            ..Report::default()
        }
    }

    fn found(r: &Report) -> Vec<(String, Severity)> {
        findings(r, embedded())
            .into_iter()
            .map(|f| (f.id, f.severity))
            .collect()
    }

    #[test]
    fn cuda_11_3_cannot_compile_for_ada_and_12_6_not_for_blackwell() {
        let r = machine("11.3.109", "8.9", "11.3");
        let f = findings(&r, embedded());
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].id, "toolkit-cannot-target-gpu");
        assert!(f[0].detail.contains("compute_89"), "{}", f[0].detail);
        assert!(f[0].fix.as_deref().unwrap().contains("11.8 or newer"));

        let r = machine("12.6.85", "12.0", "12.6");
        let f = findings(&r, embedded());
        assert_eq!(f[0].id, "toolkit-cannot-target-gpu");
        assert!(f[0].fix.as_deref().unwrap().contains("12.8 or newer"));

        assert!(found(&machine("12.8.93", "12.0", "12.8")).is_empty());
        assert!(found(&machine("11.8.89", "8.9", "11.8")).is_empty());
    }

    #[test]
    fn nvcc_and_torch_cuda_major_differ_is_a_warning_minor_information() {
        assert_eq!(
            found(&machine("12.4.131", "8.9", "11.8")),
            [(
                "toolkit-framework-cuda-mismatch".to_string(),
                Severity::Warning
            )]
        );
        assert_eq!(
            found(&machine("12.4.131", "8.9", "12.1")),
            [(
                "toolkit-framework-cuda-mismatch".to_string(),
                Severity::Info
            )]
        );
        assert!(found(&machine("12.1.105", "8.9", "12.1")).is_empty());
    }

    #[test]
    fn nvcc_alone_that_cannot_target_the_gpu_is_found_without_a_framework() {
        let mut r = machine("11.3.109", "8.9", "11.3");
        r.python_envs.clear();
        let f = findings(&r, embedded());
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].id, "toolkit-cannot-target-gpu");
        assert!(f[0].detail.contains("No CUDA framework"), "{}", f[0].detail);
        // The nvcc on PATH is the one checked, not the build toolkit.
        r.toolkits[0].builds_extensions = false;
        r.toolkits[0].found_via = vec!["PATH".into()];
        assert_eq!(found(&r).len(), 1);
        r.toolkits[0].found_via = vec!["/usr/local/cuda-11.3".into()];
        assert!(found(&r).is_empty());
        // A healthy toolkit alone says nothing.
        let mut r = machine("12.8.93", "12.0", "12.8");
        r.python_envs.clear();
        assert!(found(&r).is_empty());
        // With a framework, only the build toolkit is checked.
        let mut r = machine("11.3.109", "8.9", "11.3");
        r.toolkits[0].builds_extensions = false;
        assert!(found(&r).is_empty());
    }

    #[test]
    fn the_fix_names_only_published_torch_builds_for_the_python() {
        // nvcc 12.5: there is no cu125 build; the fix names a published lower minor.
        let mut r = machine("12.5.82", "8.9", "12.1");
        r.python_envs[0].python_version = Some("3.11.9".into());
        let f = findings(&r, embedded());
        let fix = f[0].fix.as_deref().unwrap();
        assert!(!fix.contains("cu125"), "{fix}");
        assert!(fix.contains("cu124"), "{fix}");
        assert!(fix.contains("no torch build for CUDA 12.5"), "{fix}");
        // nvcc 12.8 on Python 3.12: a cu128 build exists.
        let mut r = machine("12.8.93", "8.9", "12.1");
        r.python_envs[0].python_version = Some("3.12.3".into());
        let f = findings(&r, embedded());
        let fix = f[0].fix.as_deref().unwrap();
        assert!(fix.contains("(cu128,"), "{fix}");
    }
}

//! The local toolkit as a compiler for framework extensions (torch `cpp_extension`,
//! flash-attn, apex, tiny-cuda-nn, bitsandbytes from source). Findings:
//! `toolkit-cannot-target-gpu`, `toolkit-framework-cuda-mismatch`.
//!
//! The toolkit checked is the one `torch.utils.cpp_extension` would build with (marked
//! `builds_extensions` by the probe). Neither rule matters to someone who only runs prebuilt
//! wheels, which is why both say so and why neither fires without a CUDA framework build.

use super::FindingBuilder;
use super::ids;
use crate::framework::FrameworkName;
use crate::manifest::{Manifests, Targeting};
use crate::report::{Finding, Framework, PythonEnv, Report, Severity, Toolkit, framework_subject};
use crate::version::Version;

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let Some(toolkit) = report.toolkits.iter().find(|t| t.builds_extensions) else {
        return Vec::new();
    };
    let cuda_frameworks: Vec<(&PythonEnv, &Framework)> = report
        .python_envs
        .iter()
        .flat_map(|e| e.frameworks.iter().map(move |f| (e, f)))
        .filter(|(_, f)| f.variant.as_deref() == Some("cuda") && f.cuda.is_some())
        .collect();
    if cuda_frameworks.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<Finding> = cannot_target(report, manifests, toolkit)
        .into_iter()
        .collect();
    out.extend(
        cuda_frameworks
            .iter()
            .filter(|(_, f)| f.name == FrameworkName::Torch)
            .filter_map(|(env, fw)| framework_mismatch(toolkit, env, fw)),
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

fn cannot_target(report: &Report, manifests: &Manifests, toolkit: &Toolkit) -> Option<Finding> {
    let version = compiler_version(toolkit)?;
    let mut f: Option<FindingBuilder> = None;
    let mut fix_floor: Option<String> = None;
    for gpu in report.nvidia_gpus().filter(|g| g.source != "pci") {
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
                format!(
                    "nvcc {} cannot compile for {name} (sm_{sm}): building CUDA extensions fails",
                    version
                ),
            )
            .detail(format!(
                "Building a CUDA extension from source (torch.utils.cpp_extension, flash-attn, \
                 apex, tiny-cuda-nn, bitsandbytes) compiles for this GPU's architecture, and this \
                 toolkit's nvcc does not know it: the build stops with \"nvcc fatal : Unsupported \
                 gpu architecture 'compute_{sm}'\". Prebuilt framework wheels are not affected; \
                 this only matters when something is compiled here."
            ))
            .evidence(toolkit_evidence(toolkit))
            .subject(format!("toolkit:{}", toolkit.path))
        });
        f = Some(
            builder
                .evidence(format!(
                    "GPU {}: {name}, compute capability {cc}; {why}",
                    gpu.index
                ))
                .subject(format!("gpu:{}", gpu.index)),
        );
    }
    let fix = match fix_floor {
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
fn framework_mismatch(toolkit: &Toolkit, env: &PythonEnv, fw: &Framework) -> Option<Finding> {
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
    let (severity, detail) = if major_differs {
        (
            Severity::Error,
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
            Severity::Warning,
            format!(
                "torch warns \"The detected CUDA version ({}) has a minor version mismatch with \
                 the version that was used to compile PyTorch ({})\" when building extensions; \
                 it usually works, but an extension then depends on the newer of the two \
                 runtimes. Running the prebuilt wheel is not affected.",
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
        .subject(format!("toolkit:{}", toolkit.path))
        .subject(framework_subject(&env.path, &fw.name))
        .fix(format!(
            "Build with a CUDA {} toolkit: install it and `export CUDA_HOME=/usr/local/cuda-{}`, or install the {} build for CUDA {} (see `gpu-doctor plan`).",
            built.major_minor(),
            built.major_minor(),
            fw.name,
            nvcc.major_minor()
        ))
        .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
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
        findings(r, crate::manifest::embedded())
            .into_iter()
            .map(|f| (f.id, f.severity))
            .collect()
    }

    #[test]
    fn cuda_11_3_cannot_compile_for_ada_and_12_6_not_for_blackwell() {
        let r = machine("11.3.109", "8.9", "11.3");
        let f = findings(&r, crate::manifest::embedded());
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].id, "toolkit-cannot-target-gpu");
        assert!(f[0].detail.contains("compute_89"), "{}", f[0].detail);
        assert!(f[0].fix.as_deref().unwrap().contains("11.8 or newer"));

        let r = machine("12.6.85", "12.0", "12.6");
        let f = findings(&r, crate::manifest::embedded());
        assert_eq!(f[0].id, "toolkit-cannot-target-gpu");
        assert!(f[0].fix.as_deref().unwrap().contains("12.8 or newer"));

        assert!(found(&machine("12.8.93", "12.0", "12.8")).is_empty());
        assert!(found(&machine("11.8.89", "8.9", "11.8")).is_empty());
    }

    #[test]
    fn nvcc_and_torch_cuda_major_differ_is_an_error_minor_a_warning() {
        assert_eq!(
            found(&machine("12.4.131", "8.9", "11.8")),
            [(
                "toolkit-framework-cuda-mismatch".to_string(),
                Severity::Error
            )]
        );
        assert_eq!(
            found(&machine("12.4.131", "8.9", "12.1")),
            [(
                "toolkit-framework-cuda-mismatch".to_string(),
                Severity::Warning
            )]
        );
        assert!(found(&machine("12.1.105", "8.9", "12.1")).is_empty());
    }

    #[test]
    fn nothing_without_a_cuda_framework_or_a_build_toolkit() {
        let mut r = machine("11.3.109", "8.9", "11.3");
        r.python_envs.clear();
        assert!(found(&r).is_empty());
        let mut r = machine("11.3.109", "8.9", "11.3");
        r.toolkits[0].builds_extensions = false;
        assert!(found(&r).is_empty());
    }
}

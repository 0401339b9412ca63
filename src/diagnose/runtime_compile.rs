//! Frameworks that compile their GPU kernels at run time with NVRTC, and the NVRTC their process
//! loads. Finding: `arch-not-in-build` (the framework has no way to make kernels for the GPU).
//!
//! CuPy builds every elementwise, reduction and `RawKernel` kernel on first use with NVRTC, for
//! the GPU's own architecture (cupy/cupy#9121, filed with the CuPy maintainers: "Misleading error
//! while using CTK<12.8 with Blackwell"; cupy/cupy#9106, a maintainer: "Blackwell support requires
//! CUDA 12.8 but it seems you are using CUDA 12.0"). NVRTC compiles for the architectures the nvcc
//! of its CUDA release targets, so the question is `cuda.toml`'s `[[arch_support]]` per release,
//! in both directions: an NVRTC older than the GPU (12.6 on sm_120), and one newer than the GPU's
//! last release (CUDA 13 removed sm_50 to sm_72). The NVRTC judged is the copy the framework's
//! process maps (`libraries.loads`, resolved like ld.so by `probe::linkmap`), whose version comes
//! from its file name or its package.
//!
//! The table below names the frameworks for which this holds; numba's CUDA target also compiles
//! through NVRTC, and is judged by its own rules.

use super::FindingBuilder;
use super::ids;
use crate::framework::FrameworkName;
use crate::manifest::{Manifests, Targeting};
use crate::report::{
    Finding, Framework, FrameworkLoads, GpuSource, LibraryFamily, LibraryLoad, OwnerKind,
    PythonEnv, Report, Severity, framework_subject,
};
use crate::version::Version;

/// Frameworks whose kernels are compiled by NVRTC when first used, with the source that says so.
const NVRTC_AT_RUN_TIME: &[(FrameworkName, &str)] = &[(
    FrameworkName::Cupy,
    "cupy/cupy#9121, #9106 (kernels compiled on first use with NVRTC, for the GPU's architecture)",
)];

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut out = Vec::new();
    for env in &report.python_envs {
        for fw in &env.frameworks {
            let Some(name) = FrameworkName::from_report(&fw.name) else {
                continue;
            };
            let Some((_, why)) = NVRTC_AT_RUN_TIME.iter().find(|(n, _)| *n == name) else {
                continue;
            };
            if fw.variant.as_deref() != Some("cuda") {
                continue;
            }
            let Some(nvrtc) = loaded_nvrtc(report, env, fw) else {
                continue;
            };
            if let Some(f) = cannot_target(report, manifests, env, fw, nvrtc, why) {
                out.push(f);
            }
        }
    }
    out
}

/// The NVRTC the framework's process maps, when it is found and its version is known.
fn loaded_nvrtc<'r>(
    report: &'r Report,
    env: &PythonEnv,
    fw: &Framework,
) -> Option<&'r LibraryLoad> {
    report
        .libraries
        .loads
        .iter()
        .filter(|l: &&FrameworkLoads| l.env == env.path && l.framework == fw.name)
        .flat_map(|l| l.libraries.iter())
        .find(|l| l.family == LibraryFamily::Nvrtc && l.path.is_some() && l.version.is_some())
}

fn cannot_target(
    report: &Report,
    manifests: &Manifests,
    env: &PythonEnv,
    fw: &Framework,
    nvrtc: &LibraryLoad,
    why: &str,
) -> Option<Finding> {
    let version = Version::parse(nvrtc.version.as_deref()?)?;
    let release = version.major_minor();
    for gpu in report.nvidia_gpus().filter(|g| g.source != GpuSource::Pci) {
        let Some(cc) = gpu.compute_capability.as_deref() else {
            continue;
        };
        let Some(cc_v) = Version::parse(cc) else {
            continue;
        };
        let sm = format!("{}{}", cc_v.major(), cc_v.minor());
        let name = gpu.name.as_deref().unwrap_or("GPU");
        let (row, newer) = match manifests.cuda.toolkit_targets(&release, cc) {
            Targeting::TooOld(row) => (row, true),
            Targeting::Removed(row) => (row, false),
            Targeting::Yes | Targeting::Unknown => continue,
        };
        let label = format!("{} {}", fw.name, fw.version.as_deref().unwrap_or(""))
            .trim_end()
            .to_string();
        let table = if newer {
            format!(
                "sm_{sm} is first targeted by CUDA {} (cuda.toml arch_support: {})",
                row.cuda, row.source
            )
        } else {
            format!(
                "CUDA {} removed sm_{sm} from the compilers' targets (cuda.toml arch_support: {})",
                row.cuda, row.source
            )
        };
        let path = nvrtc.path.as_deref().unwrap_or("");
        let f = FindingBuilder::new(
            &ids::ARCH_NOT_IN_BUILD,
            Severity::Error,
            format!(
                "{label} compiles its kernels with NVRTC {release}, which cannot target {name} (sm_{sm})"
            ),
        )
        .detail(format!(
            "{label} builds its GPU kernels when they are first used, with the NVRTC its process \
             loads, for this GPU's architecture. NVRTC {release} does not know sm_{sm} ({}), so \
             the first kernel fails to compile or load (NVRTC_ERROR_INVALID_OPTION, \
             CUDA_ERROR_NO_BINARY_FOR_GPU) even though the GPU and the driver are fine.",
            if newer {
                "the GPU is newer than this CUDA release"
            } else {
                "this CUDA release dropped the GPU"
            }
        ))
        .evidence(format!("GPU {}: {name}, compute capability {cc}; {table}", gpu.index))
        .evidence(format!(
            "{} loads from {path} ({}{}) in {}",
            nvrtc.soname,
            nvrtc.via.as_deref().unwrap_or("found"),
            nvrtc
                .owner
                .as_ref()
                .filter(|o| matches!(o.kind, OwnerKind::Pip | OwnerKind::Conda | OwnerKind::Dpkg))
                .and_then(|o| o.package.as_deref())
                .map(|p| format!("; package {p} {}", version.as_str()))
                .unwrap_or_default(),
            env.path
        ))
        .evidence(format!("{label} compiles at run time with NVRTC: {why}"))
        .subject(framework_subject(&env.path, &fw.name))
        .subject(gpu.subject());
        return Some(
            f.fix(fix(env, nvrtc, &version, &row.cuda, newer, fw))
                .build(),
        );
    }
    None
}

/// Where the NVRTC comes from says how to replace it: a pip wheel of the same CUDA major, a
/// toolkit, or (when the CUDA major itself cannot target the GPU) CuPy for another major.
fn fix(
    env: &PythonEnv,
    nvrtc: &LibraryLoad,
    version: &Version,
    floor: &str,
    newer: bool,
    fw: &Framework,
) -> String {
    let floor_major = Version::parse(floor).map_or(version.major(), |v| v.major());
    if !newer {
        return format!(
            "Use an NVRTC of a CUDA release before {floor}, which still targets this GPU, with \
             the CuPy package for that CUDA major (CUDA 12: `pip install cupy-cuda12x` with \
             `nvidia-cuda-nvrtc-cu12`), in place of {} {}.",
            fw.name,
            fw.version.as_deref().unwrap_or("")
        );
    }
    if floor_major != version.major() {
        return format!(
            "CUDA {} cannot target this GPU at all: install CuPy for CUDA {floor_major} \
             (`pip install cupy-cuda{floor_major}x`) with an NVRTC of CUDA {floor} or newer \
             (`pip install 'nvidia-cuda-nvrtc-cu{floor_major}>={floor}'`), and remove the CUDA {} \
             package.",
            version.major(),
            version.major()
        );
    }
    match nvrtc.owner.as_ref() {
        Some(owner) if owner.kind == OwnerKind::Pip => format!(
            "Install an NVRTC of CUDA {floor} or newer where this one loads from: `pip install -U \
             '{}>={floor}'` (the GPU needs CUDA {floor}; the driver must run it too), then clear \
             CuPy's kernel cache (`~/.cupy/kernel_cache`).",
            owner.package.as_deref().unwrap_or("nvidia-cuda-nvrtc-cu12")
        ),
        // The env's own lib/ (a conda environment's `cuda-nvrtc`).
        _ if nvrtc
            .path
            .as_deref()
            .is_some_and(|p| p.starts_with(&format!("{}/lib/", env.path))) =>
        {
            format!(
                "Update the environment's NVRTC to CUDA {floor} or newer: `conda install -p {} \
                 'cuda-nvrtc>={floor}' 'cuda-version>={floor}'` (its `lib/` is where CuPy loads \
                 it from), then clear CuPy's kernel cache (`~/.cupy/kernel_cache`).",
                env.path
            )
        }
        _ => format!(
            "Make CuPy load an NVRTC of CUDA {floor} or newer: install that toolkit (or `pip \
             install 'nvidia-cuda-nvrtc-cu{floor_major}>={floor}'`) and put its library folder \
             first where CuPy looks (CUDA_PATH, LD_LIBRARY_PATH), then clear CuPy's kernel cache \
             (`~/.cupy/kernel_cache`)."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::embedded;
    use crate::report::{Gpu, LibraryOwner};

    fn machine(cc: &str, nvrtc: &str) -> Report {
        let mut r = Report {
            gpus: vec![Gpu {
                name: Some("GPU".into()),
                compute_capability: Some(cc.into()),
                source: "nvml".into(),
                ..Gpu::default()
            }],
            python_envs: vec![PythonEnv {
                path: "/venv".into(),
                kind: "venv".into(),
                frameworks: vec![Framework {
                    name: "cupy".into(),
                    version: Some("13.4.1".into()),
                    cuda: Some("12".into()),
                    variant: Some("cuda".into()),
                    ..Framework::default()
                }],
                ..PythonEnv::default()
            }],
            ..Report::default()
        };
        r.libraries.loads.push(FrameworkLoads {
            env: "/venv".into(),
            framework: "cupy".into(),
            basis: "model".into(),
            libraries: vec![LibraryLoad {
                family: LibraryFamily::Nvrtc,
                soname: "libnvrtc.so.12".into(),
                path: Some("/venv/nvidia/cuda_nvrtc/lib/libnvrtc.so.12".into()),
                via: Some("LD_LIBRARY_PATH".into()),
                version: Some(nvrtc.into()),
                owner: Some(LibraryOwner {
                    kind: OwnerKind::Pip,
                    package: Some("nvidia-cuda-nvrtc-cu12".into()),
                    version: Some(nvrtc.into()),
                    ..LibraryOwner::default()
                }),
                ..LibraryLoad::default()
            }],
        });
        r
    }

    #[test]
    fn an_nvrtc_older_than_the_gpu_leaves_cupy_without_kernels() {
        let found = findings(&machine("12.0", "12.6.77"), embedded());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].id, "arch-not-in-build");
        assert!(
            found[0]
                .fix
                .as_deref()
                .unwrap_or("")
                .contains("nvidia-cuda-nvrtc-cu12>=12.8")
        );
    }

    #[test]
    fn an_nvrtc_of_a_release_that_targets_the_gpu_is_fine() {
        assert!(findings(&machine("12.0", "12.8.93"), embedded()).is_empty());
        assert!(findings(&machine("8.9", "12.6.77"), embedded()).is_empty());
    }

    #[test]
    fn an_nvrtc_newer_than_the_gpu_s_last_release_is_the_other_direction() {
        let found = findings(&machine("6.1", "13.0.88"), embedded());
        assert_eq!(found.len(), 1);
        assert!(found[0].title.contains("sm_61"), "{}", found[0].title);
    }
}

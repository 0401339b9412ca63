//! ROCm's libraries against the GPU, with or without a framework: the rocBLAS of the ROCm
//! install programs link against (`/opt/rocm`: ollama, llama.cpp, a source build of PyTorch)
//! ships kernels for a list of gfx targets, and a GPU whose target is not in it fails at the
//! first matrix product ("rocBLAS error: Cannot read .../TensileLibrary.dat: No such file or
//! directory for GPU arch : gfx1031", ROCm/rocBLAS#1299), though ROCm lists the GPU. Finding:
//! `rocm-library-missing-target`.
//!
//! The target list is the install's own files (`lib/rocblas/library/TensileLibrary_*gfx*`, read
//! by the probe into `rocm.installs[].rocblas_targets`). A GPU ROCm cannot run at all, or one
//! newer than the install, is `rocm-gpu-unsupported`'s or `rocm-too-old-for-gpu`'s.
//!
//! A program's own copy of ROCm (`rocm.bundled[]`: ollama's `lib/ollama/rocm`) is judged the
//! same way: the program loads its rocBLAS, not the system's, and leaves a GPU whose target it
//! lacks to the CPU (ollama/ollama#12303: a 780M, gfx1103, "offloaded 0/35 layers to GPU" with
//! a bundled rocBLAS for gfx1101 and gfx1102 only). LM Studio's ROCm vendor packs in the user's
//! home are such copies too (lmstudio-ai/lmstudio-bug-tracker#1502: a Strix Halo, gfx1151,
//! whose pack carries gfx1100-1102, gfx1201 and gfx90a).

use super::{FindingBuilder, env_var, ids};
use crate::manifest::Manifests;
use crate::report::{Finding, Gpu, Report, Severity};
use crate::version::{GfxTarget, Version};

/// The program name the probe gives LM Studio's own copies of ROCm (`rocm.bundled[]`).
const LMSTUDIO: &str = "LM Studio";

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    libraries(report)
        .iter()
        .filter_map(|lib| missing_target(report, manifests, lib))
        .collect()
}

/// A rocBLAS programs load: the system install's, or a program's own copy.
struct Library<'a> {
    /// The ROCm folder ("/opt/rocm-7.2.0", "/usr/lib/ollama/rocm").
    path: &'a str,
    /// The ROCm release, where the folder says it (a program's copy does not).
    version: Option<&'a str>,
    rocblas_targets: &'a [String],
    /// The program a bundled copy belongs to ("ollama"); none for the system install.
    program: Option<&'a str>,
}

/// The system install programs use (the one `/opt/rocm` points at, else the newest), then each
/// program's own copy.
fn libraries(report: &Report) -> Vec<Library<'_>> {
    let Some(rocm) = report.rocm.as_ref() else {
        return Vec::new();
    };
    let system = rocm.programs_install().map(|i| Library {
        path: &i.path,
        version: i.version.as_deref(),
        rocblas_targets: &i.rocblas_targets,
        program: None,
    });
    system
        .into_iter()
        .chain(rocm.bundled.iter().map(|b| Library {
            path: &b.path,
            version: None,
            rocblas_targets: &b.rocblas_targets,
            program: Some(&b.program),
        }))
        .collect()
}

/// Whether a kernel folder's target list covers `gfx` ("gfx90a" covers "gfx90a:xnack-").
fn covers(targets: &[String], gfx: &str) -> bool {
    targets
        .iter()
        .any(|t| t == gfx || t.split(':').next() == Some(gfx))
}

fn missing_target(report: &Report, manifests: &Manifests, install: &Library) -> Option<Finding> {
    if install.rocblas_targets.is_empty() {
        return None;
    }
    let overridden = env_var(report, "HSA_OVERRIDE_GFX_VERSION")
        .and_then(|v| GfxTarget::from_override(v.trim().trim_matches('"')))
        .map(|t| t.to_string());
    let missing = missing_gpus(report, manifests, install, overridden.as_deref());
    let (gpu, wanted) = missing.first()?;
    // Python frameworks with their own rocBLAS do not load the system's; a program's own copy
    // is the one that program loads.
    let bundled = install.program.is_none()
        && report
            .python_envs
            .iter()
            .flat_map(|e| &e.frameworks)
            .any(|f| f.variant.as_deref() == Some("rocm") && !f.bundled_runtime.is_empty());
    let whose = match install.program {
        Some(program) => format!("{program}'s own ROCm ({})", install.path),
        None => install.path.to_string(),
    };
    let mut f = FindingBuilder::new(
        &ids::ROCM_LIBRARY_MISSING_TARGET,
        if bundled {
            Severity::Warning
        } else {
            Severity::Error
        },
        format!(
            "rocBLAS in {whose} has no kernels for {}: it looks for {wanted}",
            super::health::gpu_label(gpu)
        ),
    )
    .detail(
        "ROCm lists the GPU, but the rocBLAS of this install ships kernels only for the targets \
         it was built for; programs built against it (ollama, llama.cpp, a PyTorch built from \
         source) fail at their first matrix product: \"rocBLAS error: Cannot read \
         TensileLibrary.dat ... for GPU arch\", or hipBLASLt and MIOpen likewise.",
    )
    .evidence(format!(
        "{}/{}rocblas/library has kernels for: {}",
        install.path,
        // A program's copy keeps `rocblas/` at its top (ollama's `lib/ollama/rocm/rocblas`).
        if install.program.is_some() {
            ""
        } else {
            "lib/"
        },
        install.rocblas_targets.join(" ")
    ));
    for (g, w) in &missing {
        f = f
            .evidence(format!(
                "{}: looks for {w}{}",
                super::health::gpu_label(g),
                if overridden.is_some() {
                    " (HSA_OVERRIDE_GFX_VERSION)"
                } else {
                    ""
                }
            ))
            .subject(g.subject());
    }
    if bundled {
        f = f.evidence(
            "the ROCm builds of the Python frameworks here bring their own rocBLAS: they are judged on theirs",
        );
    }
    let gfx = gpu.gfx_target.as_deref().unwrap_or(wanted);
    let sibling = manifests
        .rocm
        .override_group(gfx)
        .filter(|_| overridden.is_none())
        .and_then(|grp| {
            let t = GfxTarget::from_override(&grp.value)?.to_string();
            covers(install.rocblas_targets, &t).then(|| (grp.value.clone(), t))
        });
    let fix = match sibling {
        Some((value, t)) => format!(
            "Run ROCm programs as the family's sibling target this rocBLAS carries: `export \
             HSA_OVERRIDE_GFX_VERSION={value}` ({t}; for a service such as ollama, in its unit's \
             Environment=). Or build rocBLAS for {gfx} (`-DAMDGPU_TARGETS={gfx}`)."
        ),
        None => match install.program {
            // LM Studio is not built by its users: its runtimes are chosen in the app.
            Some(program @ LMSTUDIO) => format!(
                "{program} loads this copy of rocBLAS, not the system's: choose a ROCm llama.cpp \
                 runtime whose vendor pack carries {wanted} in {program}'s runtime settings, or \
                 its Vulkan llama.cpp runtime, which needs no ROCm."
            ),
            Some(program) => format!(
                "{program} loads this copy of rocBLAS, not the system's: use a {program} release \
                 whose bundled ROCm carries {wanted}, or build {program} from source against a \
                 ROCm built for {wanted} (`-DAMDGPU_TARGETS={wanted}`)."
            ),
            None => format!(
                "Install a ROCm whose rocBLAS carries {wanted} (AMD's compatibility matrix lists \
                 the targets per release), or build rocBLAS for it (`-DAMDGPU_TARGETS={wanted}`)."
            ),
        },
    };
    Some(f.fix(fix).explains(&ids::ARCH_NOT_IN_BUILD).build())
}

/// The ROCm-visible GPUs whose target (the override's, when one is set: the runtime loads that
/// target's code) the install's rocBLAS lacks, each with the target looked for.
fn missing_gpus<'a>(
    report: &'a Report,
    manifests: &Manifests,
    install: &Library,
    overridden: Option<&str>,
) -> Vec<(&'a Gpu, String)> {
    let version = install.version.and_then(Version::parse);
    let discrete = report.amd_gpus().any(|g| g.integrated == Some(false));
    report
        .amd_gpus()
        // A GPU the visibility masks hide from ROCm programs is not one they run on.
        .filter(|g| super::amd_env::rocm_sees(report, g.rocm_index))
        // An iGPU beside a discrete card is `rocm-igpu-visible`'s business (ROCm/rocm-systems
        // #11549: a Raphael gfx1036 next to an RX 7900 XTX).
        .filter(|g| !(discrete && g.integrated == Some(true)))
        .filter_map(|g| {
            let gfx = g.gfx_target.as_deref()?;
            let parsed = GfxTarget::parse(gfx)?;
            // gfx8 and older: no current ROCm at all (rocm-gpu-unsupported).
            if parsed.major <= 8 {
                return None;
            }
            // Newer than the install: rocm-too-old-for-gpu.
            let first = manifests.rocm.first_release(gfx);
            if first.is_some_and(|f| {
                Version::parse(&f.rocm)
                    .zip(version.clone())
                    .is_some_and(|(f, v)| v < f)
            }) {
                return None;
            }
            let wanted = overridden.map_or_else(|| gfx.to_string(), str::to_string);
            // An override of another family, where rocBLAS carries the GPU's own target: the
            // override is the fault (`hsa-override-mismatch`).
            let misfit = overridden
                .and_then(GfxTarget::parse)
                .is_some_and(|t| !super::amd_env::override_fits(manifests, gfx, t));
            if misfit && covers(install.rocblas_targets, gfx) {
                return None;
            }
            (!covers(install.rocblas_targets, &wanted)).then_some((g, wanted))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{amd_gpu, one};
    use super::*;
    use crate::manifest::embedded;
    use crate::report::rocm::{BundledRocm, RocmStack};

    /// One AMD GPU of `gfx` and a program's own copy of ROCm whose rocBLAS carries `targets`.
    fn bundled_machine(program: &str, gfx: &str, targets: &[&str]) -> Report {
        Report {
            gpus: vec![amd_gpu(gfx)],
            rocm: Some(RocmStack {
                bundled: vec![BundledRocm {
                    program: program.to_string(),
                    path: "/home/u/.lmstudio/extensions/backends/vendor/linux-llama-rocm-vendor-v3"
                        .to_string(),
                    rocblas_targets: targets.iter().map(|t| (*t).to_string()).collect(),
                    hipblaslt_targets: Vec::new(),
                }],
                ..RocmStack::default()
            }),
            ..Report::default()
        }
    }

    /// LM Studio's pack without the GPU's target (lmstudio-ai/lmstudio-bug-tracker#1502) is an
    /// error whose fix is chosen in the app (its users do not build it), not a source build.
    #[test]
    fn lmstudio_pack_without_the_target_is_fixed_in_lmstudio_runtime_settings() {
        let r = bundled_machine(LMSTUDIO, "gfx1151", &["gfx1100", "gfx1201"]);
        let found = findings(&r, embedded());
        let f = one(&found, "rocm-library-missing-target");
        assert_eq!(f.severity, Severity::Error);
        assert!(f.title.contains("LM Studio's own ROCm"), "{}", f.title);
        let fix = f.fix.as_deref().unwrap_or("");
        assert!(
            fix.contains("runtime settings") && fix.contains("Vulkan"),
            "{fix}"
        );
        assert!(!fix.contains("from source"), "{fix}");
        // ollama keeps its own wording.
        let r = bundled_machine("ollama", "gfx1151", &["gfx1100"]);
        let found = findings(&r, embedded());
        let fix = one(&found, "rocm-library-missing-target").fix.clone();
        assert!(fix.unwrap_or_default().contains("ollama release"));
    }

    /// The pack carrying the GPU's target is quiet.
    #[test]
    fn lmstudio_pack_with_the_target_is_quiet() {
        let r = bundled_machine(LMSTUDIO, "gfx1151", &["gfx1100", "gfx1151"]);
        assert!(findings(&r, embedded()).is_empty());
    }
}

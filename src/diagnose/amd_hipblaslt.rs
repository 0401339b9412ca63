//! hipBLASLt against the GPU's gfx target. hipBLASLt ships a Tensile library per target
//! (`hipblaslt/library/TensileLibrary_lazy_gfx1201.dat`); without the GPU's, every call into it
//! fails ("rocblaslt error: Cannot read ... TensileLibrary_lazy_gfx1201.dat"). Whether that
//! breaks the program depends on who called it, so the severity follows the caller:
//!
//! - torch's ROCm builds run `addmm` with a bias (`nn.Linear`) through hipBLASLt on the targets
//!   of torch's own list (`rocm.toml` `[[torch_hipblaslt_arch]]`, unless
//!   `DISABLE_ADDMM_CUDA_LT=1`): there the first `nn.Linear` fails with
//!   "HIPBLAS_STATUS_INVALID_VALUE when calling `hipblasLtMatmulAlgoGetHeuristic`"
//!   (ROCm/TheRock#754, #681, #2847). An error. On other targets torch does not call it.
//! - rocBLAS (ollama, llama.cpp) tries hipBLASLt for some problems and falls back to its own
//!   Tensile kernels: the log line is noise ("but ollama works", ollama/ollama#11555, #11652).
//!   Information. With `ROCBLAS_USE_HIPBLASLT=1` the user asked rocBLAS to use hipBLASLt, which
//!   has nothing for the GPU (ROCm/TheRock#6175, lemonade-sdk/llamacpp-rocm#10): a warning.
//!
//! A GPU the library set lacks altogether is another finding's (`arch-not-in-build` for a
//! torch build, `rocm-library-missing-target` for rocBLAS); this rule looks only where rocBLAS
//! or the build carries the target and hipBLASLt does not. Finding: `hipblaslt-missing-target`.

use super::{FindingBuilder, env_var, ids};
use crate::manifest::Manifests;
use crate::report::{Finding, Gpu, Report, Severity};
use crate::version::GfxTarget;

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let gpus = wanted_targets(report, manifests);
    if gpus.is_empty() {
        return Vec::new();
    }
    let mut out = torch(report, manifests, &gpus);
    if out.is_empty() {
        out.extend(rocblas_callers(report, &gpus));
    }
    out
}

/// The ROCm-visible AMD GPUs with the target their code is loaded for (the override's sibling
/// when `HSA_OVERRIDE_GFX_VERSION` is set).
/// An iGPU beside a discrete card is left to `rocm-igpu-visible`, and a GPU under an override
/// of another family to `hsa-override-mismatch`.
fn wanted_targets<'a>(report: &'a Report, manifests: &Manifests) -> Vec<(&'a Gpu, String)> {
    let overridden = env_var(report, "HSA_OVERRIDE_GFX_VERSION")
        .and_then(|v| GfxTarget::from_override(v.trim().trim_matches('"')));
    let discrete = report.amd_gpus().any(|g| g.integrated == Some(false));
    report
        .amd_gpus()
        .filter(|g| super::amd_env::rocm_sees(report, g.rocm_index))
        .filter(|g| !(discrete && g.integrated == Some(true)))
        .filter_map(|g| {
            let gfx = g.gfx_target.as_deref()?;
            GfxTarget::parse(gfx)?;
            match overridden {
                Some(t) if !super::amd_env::override_fits(manifests, gfx, t) => None,
                Some(t) => Some((g, t.to_string())),
                None => Some((g, gfx.to_string())),
            }
        })
        .collect()
}

/// Whether a kernel folder's target list covers `gfx` ("gfx90a" covers "gfx90a:xnack-").
fn covers(targets: &[String], gfx: &str) -> bool {
    targets
        .iter()
        .any(|t| t == gfx || t.split(':').next() == Some(gfx))
}

fn set(report: &Report, name: &str) -> bool {
    env_var(report, name).is_some_and(|v| v.trim().trim_matches('"') == "1")
}

/// Whether a torch version is one of AMD's own builds (ROCm/pytorch's release branches, as
/// repo.radeon.com publishes them): their local version names the full ROCm release and the
/// commit, `2.9.1+rocm7.2.0.lw.git7e1940d4` (ROCm/legacy-rocm-build#6053, #6082) or
/// `2.4.0+rocm6.3.4.git7cecbf6d` (ROCm/legacy-rocm-build#4749); pytorch.org's say `+rocm6.4`.
fn amd_build(version: Option<&str>) -> bool {
    version
        .and_then(|v| v.split_once("+rocm"))
        .is_some_and(|(_, local)| local.contains(".git"))
}

/// torch ROCm builds whose hipBLASLt lacks a target torch sends `nn.Linear` to.
fn torch(report: &Report, manifests: &Manifests, gpus: &[(&Gpu, String)]) -> Vec<Finding> {
    if set(report, "DISABLE_ADDMM_CUDA_LT") {
        return Vec::new();
    }
    let mut out = Vec::new();
    for env in &report.python_envs {
        for fw in &env.frameworks {
            if fw.name != "torch" || fw.variant.as_deref() != Some("rocm") {
                continue;
            }
            // The hipBLASLt the build loads: its own, else (a build that bundles no ROCm
            // runtime, as AMD's repo.radeon.com "lw" wheels) the system install's.
            let (lt_targets, source) = if !fw.hipblaslt_targets.is_empty() {
                (
                    &fw.hipblaslt_targets,
                    fw.hipblaslt_source
                        .clone()
                        .unwrap_or_else(|| "its hipblaslt/library".to_string()),
                )
            } else if fw.bundled_runtime.is_empty() {
                match report.rocm.as_ref().and_then(|r| r.programs_install()) {
                    Some(i) if !i.hipblaslt_targets.is_empty() => (
                        &i.hipblaslt_targets,
                        format!("{}/lib/hipblaslt/library (the system's ROCm)", i.path),
                    ),
                    _ => continue,
                }
            } else {
                continue;
            };
            let amd = amd_build(fw.version.as_deref());
            let missing: Vec<&(&Gpu, String)> = gpus
                .iter()
                .filter(|(_, gfx)| {
                    // A build without the target at all is arch-not-in-build's.
                    (fw.gfx_targets.is_empty() || covers(&fw.gfx_targets, gfx))
                        && !covers(lt_targets, gfx)
                        && manifests
                            .rocm
                            .torch_uses_hipblaslt(fw.rocm.as_deref(), gfx, amd)
                })
                .collect();
            let Some((gpu, gfx)) = missing.first() else {
                continue;
            };
            let mut f = FindingBuilder::new(
                &ids::HIPBLASLT_MISSING_TARGET,
                Severity::Error,
                format!(
                    "torch {} in {} runs nn.Linear through hipBLASLt, which has no kernels for {}",
                    fw.version.as_deref().unwrap_or("(ROCm)"),
                    env.path,
                    super::health::gpu_label(gpu)
                ),
            )
            .detail(format!(
                "torch's ROCm builds hand matrix products with a bias (nn.Linear, transformer \
                 layers) to hipBLASLt on {gfx}, and the hipBLASLt this build loads ships no \
                 Tensile library for it: the first such layer fails with \"rocblaslt error: \
                 Could not load TensileLibrary_lazy_{gfx}.dat\" and \"HIPBLAS_STATUS_INVALID_VALUE \
                 when calling hipblasLtMatmulAlgoGetHeuristic\", while torch.cuda.is_available() \
                 is True and convolutions run."
            ))
            .evidence(format!(
                "{source} has Tensile libraries for: {}",
                lt_targets.join(" ")
            ))
            .evidence(format!(
                "torch's own list sends {gfx} to hipBLASLt (ROCm {} build{}; rocm.toml \
                 torch_hipblaslt_arch{})",
                fw.rocm.as_deref().unwrap_or("unknown"),
                if amd { ", AMD's own build" } else { "" },
                if amd {
                    ", torch_hipblaslt_arch_amd"
                } else {
                    ""
                }
            ));
            for (g, w) in &missing {
                f = f
                    .evidence(format!("{}: looks for {w}", super::health::gpu_label(g)))
                    .subject(g.subject());
            }
            out.push(
                f.subject(crate::report::framework_subject(&env.path, &fw.name))
                    .fix(format!(
                        "Run with `DISABLE_ADDMM_CUDA_LT=1 TORCH_BLAS_PREFER_HIPBLASLT=0` (exported \
                         before Python starts): torch then computes nn.Linear and its other matrix \
                         products with hipBLAS/rocBLAS, which carry {gfx}. Or install \
                         a torch ROCm build whose hipBLASLt has {gfx} (TheRock's wheels for the \
                         GPU's family, or download.pytorch.org's rocm index)."
                    ))
                    .build(),
            );
        }
    }
    out
}

/// The hipBLASLt of `/opt/rocm` or of a program's own ROCm (ollama's) lacking the target while
/// its rocBLAS carries it.
fn rocblas_callers(report: &Report, gpus: &[(&Gpu, String)]) -> Vec<Finding> {
    let Some(stack) = report.rocm.as_ref() else {
        return Vec::new();
    };
    let default = stack.opt_rocm_install().or_else(|| stack.installs.last());
    let mut places: Vec<(String, &[String], &[String])> = Vec::new();
    for b in &stack.bundled {
        places.push((
            format!("{}'s own ROCm in {}", b.program, b.path),
            &b.rocblas_targets,
            &b.hipblaslt_targets,
        ));
    }
    if let Some(i) = default {
        places.push((
            format!("the ROCm install {}", i.path),
            &i.rocblas_targets,
            &i.hipblaslt_targets,
        ));
    }
    let asked = set(report, "ROCBLAS_USE_HIPBLASLT");
    let mut out = Vec::new();
    for (place, rocblas, hipblaslt) in places {
        if hipblaslt.is_empty() {
            continue;
        }
        let Some((gpu, gfx)) = gpus.iter().find(|(_, gfx)| {
            // Without rocBLAS kernels for it the program fails in rocBLAS first.
            (rocblas.is_empty() || covers(rocblas, gfx)) && !covers(hipblaslt, gfx)
        }) else {
            continue;
        };
        let severity = if asked {
            Severity::Warning
        } else {
            Severity::Info
        };
        let f = FindingBuilder::new(
            &ids::HIPBLASLT_MISSING_TARGET,
            severity,
            format!(
                "hipBLASLt in {place} has no kernels for {}",
                super::health::gpu_label(gpu)
            ),
        )
        .detail(if asked {
            format!(
                "ROCBLAS_USE_HIPBLASLT=1 asks rocBLAS to hand its matrix products to hipBLASLt, \
                 which ships no Tensile library for {gfx} here (\"rocblaslt error: Cannot read \
                 ... TensileLibrary_lazy_{gfx}.dat\"): those products fail or fall back."
            )
        } else {
            format!(
                "Programs that use rocBLAS (ollama, llama.cpp) log \"rocblaslt error: Cannot read \
                 ... TensileLibrary_lazy_{gfx}.dat\" when rocBLAS tries hipBLASLt first; rocBLAS \
                 then uses its own kernels, which carry {gfx}, and the program works. The line is \
                 not the cause of a failure."
            )
        })
        .evidence(format!(
            "{place}: hipBLASLt has Tensile libraries for {}",
            hipblaslt.join(" ")
        ))
        .subject(gpu.subject());
        let f = if asked {
            f.evidence("ROCBLAS_USE_HIPBLASLT=1 is set").fix(format!(
                "Unset ROCBLAS_USE_HIPBLASLT (rocBLAS's own kernels carry {gfx}), or install a \
                 ROCm whose hipBLASLt has {gfx}."
            ))
        } else {
            f.fix(format!(
                "Nothing to do for the program to work. To silence the line, use a ROCm (or an \
                 ollama release) whose hipBLASLt has {gfx}."
            ))
        };
        out.push(f.build());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{amd_gpu, has_evidence, one};
    use super::*;
    use crate::manifest::embedded;
    use crate::report::rocm::{BundledRocm, RocmInstall, RocmStack};
    use crate::report::{EnvVar, Framework, GpuVendor, PythonEnv};

    fn list(targets: &[&str]) -> Vec<String> {
        targets.iter().map(|t| (*t).to_string()).collect()
    }

    /// One AMD GPU of `gfx` and a torch ROCm build of HIP `hip` whose rocBLAS carries the GPU
    /// and whose hipBLASLt carries `lt`.
    fn torch_machine(gfx: &str, hip: &str, lt: &[&str]) -> Report {
        Report {
            gpus: vec![amd_gpu(gfx)],
            python_envs: vec![PythonEnv {
                path: "/home/u/venv".to_string(),
                frameworks: vec![Framework {
                    name: "torch".to_string(),
                    version: Some("2.7.1+rocm6.3".to_string()),
                    rocm: Some(hip.to_string()),
                    variant: Some("rocm".to_string()),
                    gfx_targets: list(&[gfx]),
                    hipblaslt_targets: list(lt),
                    hipblaslt_source: Some("/home/u/venv/torch/lib/hipblaslt/library".to_string()),
                    ..Framework::default()
                }],
                ..PythonEnv::default()
            }],
            ..Report::default()
        }
    }

    fn env(r: &mut Report, name: &str, value: &str) {
        r.environment.push(EnvVar {
            name: name.to_string(),
            value: value.to_string(),
        });
    }

    /// gfx1102 goes to hipBLASLt in AMD's own builds (rocm.toml torch_hipblaslt_arch_amd), not
    /// in pytorch.org's; a build bundling no runtime is judged on the system's hipBLASLt.
    #[test]
    fn amd_builds_send_gfx1102_to_the_systems_hipblaslt_and_upstream_builds_do_not() {
        assert!(amd_build(Some("2.9.1+rocm7.2.0.lw.git7e1940d4")));
        assert!(amd_build(Some("2.4.0+rocm6.3.4.git7cecbf6d")));
        assert!(!amd_build(Some("2.7.1+rocm6.3")));
        assert!(!amd_build(Some("2.10.0+cu128")));
        let machine = |version: &str| {
            let mut r = torch_machine("gfx1102", "7.2.26015-fc0010cf6a", &[]);
            let fw = &mut r.python_envs[0].frameworks[0];
            fw.version = Some(version.to_string());
            fw.hipblaslt_source = None;
            r.rocm = Some(RocmStack {
                installs: vec![RocmInstall {
                    path: "/opt/rocm-7.2.0".to_string(),
                    version: Some("7.2.0-43".to_string()),
                    hipblaslt_targets: list(&["gfx1100", "gfx1101"]),
                    ..RocmInstall::default()
                }],
                ..RocmStack::default()
            });
            r
        };
        let amd = findings(&machine("2.9.1+rocm7.2.0.lw.git7e1940d4"), embedded());
        let f = one(&amd, "hipblaslt-missing-target");
        assert!(
            has_evidence(f, "/opt/rocm-7.2.0/lib/hipblaslt/library"),
            "{f:#?}"
        );
        let upstream = findings(&machine("2.9.1+rocm6.4"), embedded());
        // Only rocBLAS's fallback note (information) is left for it.
        assert!(
            upstream.iter().all(|f| f.severity == Severity::Info),
            "{upstream:#?}"
        );
    }

    #[test]
    fn torch_sending_the_target_to_a_hipblaslt_without_it_is_an_error() {
        let r = torch_machine("gfx1101", "6.3.42131-fa1d09cbd", &["gfx1100"]);
        let found = findings(&r, embedded());
        let f = one(&found, "hipblaslt-missing-target");
        assert_eq!(f.severity, Severity::Error);
        assert!(has_evidence(f, "gfx1100"), "{f:#?}");
        assert!(
            f.fix
                .as_deref()
                .unwrap_or("")
                .contains("DISABLE_ADDMM_CUDA_LT=1")
        );
    }

    #[test]
    fn torch_does_not_send_a_target_outside_its_list_or_below_the_rocm_gate() {
        // gfx1030 is in no row; gfx1101 only from ROCm 6.3; gfx1151 only from 7.0.
        for (gfx, hip) in [
            ("gfx1030", "6.4.43482"),
            ("gfx1101", "6.2.41133"),
            ("gfx1151", "6.4.43482"),
        ] {
            let r = torch_machine(gfx, hip, &["gfx90a"]);
            assert!(findings(&r, embedded()).is_empty(), "{gfx} on {hip}");
        }
        let r = torch_machine("gfx1151", "7.0.51831", &["gfx90a"]);
        assert_eq!(findings(&r, embedded()).len(), 1);
    }

    #[test]
    fn the_target_present_or_the_lt_path_turned_off_is_quiet() {
        let r = torch_machine("gfx1100", "6.3.42131", &["gfx1100", "gfx942"]);
        assert!(findings(&r, embedded()).is_empty());
        let mut r = torch_machine("gfx1101", "6.3.42131", &["gfx1100"]);
        env(&mut r, "DISABLE_ADDMM_CUDA_LT", "1");
        assert!(findings(&r, embedded()).is_empty());
    }

    fn ollama_machine(gfx: &str) -> Report {
        let mut r = torch_machine(gfx, "6.3", &[]);
        r.python_envs.clear();
        r.rocm = Some(RocmStack {
            bundled: vec![BundledRocm {
                program: "ollama".to_string(),
                path: "/usr/local/lib/ollama/rocm".to_string(),
                rocblas_targets: list(&["gfx1100", "gfx1201"]),
                hipblaslt_targets: list(&["gfx1100"]),
            }],
            installs: vec![RocmInstall {
                path: "/opt/rocm-7.0.0".to_string(),
                rocblas_targets: list(&["gfx1201"]),
                hipblaslt_targets: list(&["gfx1201"]),
                ..RocmInstall::default()
            }],
            ..RocmStack::default()
        });
        r
    }

    #[test]
    fn rocblas_falls_back_so_a_missing_target_is_information_unless_asked_for() {
        let mut r = ollama_machine("gfx1201");
        let found = findings(&r, embedded());
        let f = one(&found, "hipblaslt-missing-target");
        assert_eq!(f.severity, Severity::Info);
        assert!(f.title.contains("ollama"), "{}", f.title);
        env(&mut r, "ROCBLAS_USE_HIPBLASLT", "1");
        let found = findings(&r, embedded());
        assert_eq!(
            one(&found, "hipblaslt-missing-target").severity,
            Severity::Warning
        );
    }

    #[test]
    fn a_rocblas_without_the_target_leaves_it_to_rocm_library_missing_target() {
        // gfx1030: neither ollama's rocBLAS nor its hipBLASLt has it.
        assert!(findings(&ollama_machine("gfx1030"), embedded()).is_empty());
    }

    #[test]
    fn an_override_of_another_family_or_an_igpu_beside_a_card_is_left_to_their_own_findings() {
        // 12.0.1 on a gfx1151 (ROCm/rocm-systems#3531): hsa-override-mismatch's.
        let mut r = torch_machine("gfx1151", "7.0.51831", &["gfx90a"]);
        env(&mut r, "HSA_OVERRIDE_GFX_VERSION", "12.0.1");
        assert!(findings(&r, embedded()).is_empty());
        // An iGPU next to a discrete card: rocm-igpu-visible's.
        let mut r = torch_machine("gfx1100", "6.3.42131", &["gfx1100"]);
        r.gpus[0].integrated = Some(false);
        r.gpus.push(Gpu {
            index: 1,
            vendor: GpuVendor::Amd,
            gfx_target: Some("gfx1101".to_string()),
            integrated: Some(true),
            ..Gpu::default()
        });
        r.python_envs[0].frameworks[0]
            .gfx_targets
            .push("gfx1101".to_string());
        assert!(findings(&r, embedded()).is_empty());
        // The same iGPU alone is judged.
        r.gpus.remove(0);
        assert_eq!(findings(&r, embedded()).len(), 1);
    }
}

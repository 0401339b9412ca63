//! The local CUDA toolkit (nvcc, ptxas) against the driver, and several toolkits that disagree
//! about which one is in use. Findings: `toolkit-newer-than-driver`, `multiple-toolkits`.
//!
//! A toolkit matters to custom CUDA extensions, to JAX/XLA (which runs ptxas) and to anything
//! built with nvcc, not to pip-installed PyTorch, which brings its own runtime.

use super::FindingBuilder;
use super::ids;
use crate::manifest::Manifests;
use crate::report::Subject;
use crate::report::{Finding, Report, Severity, Toolkit};
use crate::version::Version;

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut out: Vec<Finding> = report
        .toolkits
        .iter()
        .filter_map(|t| newer_than_driver(report, manifests, t))
        .collect();
    out.extend(
        report
            .ptxas
            .iter()
            .filter_map(|p| ptxas_newer_than_driver(report, manifests, p)),
    );
    out.extend(multiple(report));
    out
}

/// A ptxas Triton's variable names (`TRITON_PTXAS_PATH`) of a newer CUDA major than the
/// driver: Triton compiles every kernel with it, and the driver cannot load the cubins of a
/// newer major's ptxas (PyTorch bundles a ptxas of its own CUDA "to make PyTorch compiled against
/// CUDA-11.8 usable with 11.8 driver, as Triton is bundled with latest (CUDA-12.3) ptxas",
/// pytorch/pytorch#119750, fixing #119054). Within a major the cubins load (minor-version
/// compatibility). A ptxas inside a toolkit found is that toolkit's own finding.
fn ptxas_newer_than_driver(
    report: &Report,
    manifests: &Manifests,
    ptxas: &crate::report::PtxasFile,
) -> Option<Finding> {
    let cuda = Version::parse(ptxas.cuda.as_deref()?)?;
    let in_toolkit = report.toolkits.iter().any(|t| {
        ptxas
            .path
            .strip_prefix(t.path.trim_end_matches('/'))
            .is_some_and(|rest| rest.starts_with('/'))
    });
    if in_toolkit {
        return None;
    }
    let have = super::platform::driver_below_cuda_major(report, manifests, cuda.major())?;
    let driver = report.driver.version.as_deref()?;
    let floor = manifests
        .cuda
        .major(cuda.major())
        .map(|m| m.minor_compat_floor.clone());
    let mut f = FindingBuilder::new(
        &ids::TOOLKIT_NEWER_THAN_DRIVER,
        Severity::Error,
        format!(
            "{} names a ptxas of CUDA {}, newer than the driver's CUDA {}",
            ptxas.variable,
            cuda.as_str(),
            have.as_str()
        ),
    )
    .detail(format!(
        "Triton compiles every kernel with the ptxas {} names; the cubins a CUDA {} ptxas writes \
         do not load on a driver of CUDA {}, so torch.compile and Triton kernels fail to launch.",
        ptxas.variable,
        cuda.major(),
        have.as_str()
    ))
    .evidence(format!(
        "{}={} (CUDA {} from its {})",
        ptxas.variable,
        ptxas.path,
        cuda.as_str(),
        ptxas.cuda_source.as_deref().unwrap_or("files")
    ))
    .evidence(format!(
        "driver: {driver}, supports CUDA up to {}",
        have.as_str()
    ))
    .subject(Subject::Driver(None));
    if let Some(floor) = &floor {
        f = f.evidence(format!(
            "CUDA {}.x needs a driver >= {floor} (cuda.toml)",
            cuda.major()
        ));
    }
    let upgrade = floor.map_or_else(
        || {
            format!(
                "upgrade the driver to one that supports CUDA {}",
                cuda.major()
            )
        },
        |floor| format!("upgrade the driver to {floor} or newer"),
    );
    Some(
        f.fix(format!(
            "Point {} at a ptxas of the driver's CUDA {} or older (or unset it to use Triton's \
             own), or {upgrade}.",
            ptxas.variable,
            have.major()
        ))
        .build(),
    )
}

fn newer_than_driver(report: &Report, manifests: &Manifests, toolkit: &Toolkit) -> Option<Finding> {
    let version = Version::parse(toolkit.version.as_deref()?)?;
    let driver = report.driver.version.as_deref()?;
    let driver_cuda = Version::parse(report.driver.cuda_version.as_deref()?)?;
    // Compare major.minor: a 13.0.88 toolkit is fine on a driver that says 13.0.
    let wanted = Version::parse(&version.major_minor())?;
    if wanted <= driver_cuda {
        return None;
    }
    // Programs of this toolkit run through a forward-compatibility libcuda where one loads on a
    // data-center GPU: the compat package's CUDA is the level that counts.
    if super::platform::compat_cuda(report, manifests).is_some_and(|(_, cuda)| wanted <= cuda) {
        return None;
    }
    let same_major = wanted.major() == driver_cuda.major();
    let floor = manifests
        .cuda
        .major(wanted.major())
        .map(|m| m.minor_compat_floor.clone());
    let consumers = ptx_jit_consumers(report);
    let (severity, detail) = if same_major {
        let base = format!(
            "Programs built with CUDA {wanted} run on this driver through minor-version \
             compatibility, but PTX that this toolkit generates cannot be JIT-compiled by a \
             driver for CUDA {driver_cuda}: kernels compiled only to PTX (custom extensions \
             without the GPU's SASS, numba, CuPy's run-time compiles) fail with 'the provided PTX \
             was compiled with an unsupported toolchain'."
        );
        if consumers.is_empty() {
            (
                Severity::Info,
                format!(
                    "{base} Nothing here hands the driver PTX at run time: the compiled packages \
                     found carry SASS for the GPU (or none was read), and no numba or CuPy is \
                     installed; a kernel later built with this toolkit for PTX only would fail."
                ),
            )
        } else {
            (Severity::Warning, base)
        }
    } else {
        (
            Severity::Error,
            format!(
                "CUDA {wanted} needs a driver for CUDA {}.x; this driver supports up to \
                 {driver_cuda}, so anything built with this toolkit fails with 'CUDA driver version \
                 is insufficient for CUDA runtime version'.",
                wanted.major()
            ),
        )
    };
    let mut f = FindingBuilder::new(
        &ids::TOOLKIT_NEWER_THAN_DRIVER,
        severity,
        format!("CUDA toolkit {version} is newer than the driver's CUDA {driver_cuda}"),
    )
    .detail(detail)
    .evidence(format!(
        "toolkit: {} (version from {})",
        toolkit.path,
        toolkit.version_source.as_deref().unwrap_or("unknown")
    ))
    .evidence(format!(
        "driver: {driver}, supports CUDA up to {driver_cuda}"
    ))
    .subject(Subject::Toolkit(toolkit.path.clone()))
    .subject(Subject::Driver(None));
    if same_major {
        for c in &consumers {
            f = f.evidence(format!("PTX compiled at run time: {c}"));
        }
    }
    if let Some(floor) = &floor {
        f = f.evidence(format!(
            "CUDA {}.x minor-version compatibility floor: {floor} (cuda.toml)",
            wanted.major()
        ));
    }
    let driver_fix = match manifests
        .cuda
        .min_driver_for(&wanted.major_minor())
        .and_then(|r| r.toolkit_driver)
    {
        Some(d) => {
            format!("upgrade the driver to {d} or newer (the driver CUDA {wanted} shipped with)")
        }
        None => "upgrade the driver to a branch that supports this CUDA".to_string(),
    };
    Some(
        f.fix(format!(
            "Either {driver_fix}, or use a toolkit no newer than CUDA {driver_cuda} (set CUDA_HOME and PATH to it). See `gpu-doctor plan`."
        ))
        .build(),
    )
}

/// What on this machine hands the driver PTX to JIT-compile at run time, which a toolkit of a
/// newer minor than the driver writes in an ISA version the driver refuses (its products' SASS
/// runs through minor-version compatibility): a compiled package that reaches an NVIDIA GPU only
/// through the PTX of its fatbin (it may have been built with this toolkit), numba's CUDA target
/// (kernels compiled to PTX by a libNVVM; `numba-ptx-newer-than-driver` names which) and CuPy
/// (NVRTC, `runtime_compile`). Empty: everything found reaches the GPU as SASS, as on a DGX Spark
/// whose vLLM source build carries sm_120 SASS beside CUDA 13.1's nvcc on an R580 driver
/// (vllm-project/vllm#36835's machine, `held-out-healthy-dgx-spark-vllm-source-build-sm120-only`).
fn ptx_jit_consumers(report: &Report) -> Vec<String> {
    let gpus: Vec<(u32, u32)> = report
        .nvidia_gpus()
        .filter_map(|g| Version::parse(g.compute_capability.as_deref()?))
        .filter_map(|v| {
            Some((
                u32::try_from(v.major()).ok()?,
                u32::try_from(v.minor()).ok()?,
            ))
        })
        .collect();
    let arch = |cc: &String| {
        let v = Version::parse(cc)?;
        u32::try_from(v.major() * 10 + v.minor()).ok()
    };
    let mut out = Vec::new();
    for env in &report.python_envs {
        for e in &env.extensions {
            let sass: Vec<u32> = e.fatbin_sass.iter().filter_map(arch).collect();
            let ptx: Vec<u32> = e.fatbin_ptx.iter().filter_map(arch).collect();
            let only_ptx = gpus.iter().any(|&(major, minor)| {
                !crate::parse::fatbin::runs_on(&sass, &[], major, minor)
                    && crate::parse::fatbin::runs_on(&[], &ptx, major, minor)
            });
            if only_ptx {
                out.push(format!(
                    "{} {} in {} reaches the GPU only through PTX",
                    e.name, e.version, env.path
                ));
            }
        }
        if env.numba.is_some() {
            out.push(format!("numba's CUDA target in {}", env.path));
        }
        if env.frameworks.iter().any(|f| f.name == "cupy") {
            out.push(format!("CuPy in {} (NVRTC)", env.path));
        }
    }
    out
}

/// Several toolkits, and the three ways tools pick one (nvcc on PATH, CUDA_HOME/CUDA_PATH,
/// the /usr/local/cuda link) point at different ones: a build can then compile with one
/// toolkit's nvcc and link another's libraries.
fn multiple(report: &Report) -> Option<Finding> {
    if report.toolkits.len() < 2 {
        return None;
    }
    let chosen_by = |via: &[&str]| {
        report
            .toolkits
            .iter()
            .find(|t| t.found_via.iter().any(|v| via.contains(&v.as_str())))
    };
    let selectors = [
        ("nvcc on PATH", chosen_by(&["PATH"])),
        (
            "CUDA_HOME/CUDA_PATH",
            chosen_by(&["CUDA_HOME", "CUDA_PATH"]),
        ),
        ("/usr/local/cuda", chosen_by(&["/usr/local/cuda"])),
    ];
    let picked: Vec<(&str, &Toolkit)> = selectors
        .iter()
        .filter_map(|(name, t)| t.map(|t| (*name, t)))
        .collect();
    let mut distinct: Vec<&str> = picked.iter().map(|(_, t)| t.path.as_str()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < 2 {
        return None;
    }
    let mut f = FindingBuilder::new(
        &ids::MULTIPLE_TOOLKITS,
        Severity::Warning,
        format!(
            "{} CUDA toolkits are installed and nvcc, CUDA_HOME and /usr/local/cuda disagree",
            report.toolkits.len()
        ),
    )
    .detail(
        "Build tools pick a toolkit in different ways: the nvcc first on PATH, CUDA_HOME or \
         CUDA_PATH (PyTorch extensions, CMake), or /usr/local/cuda. When they disagree, an \
         extension can be compiled by one toolkit and linked against another's libraries, which \
         fails at build or load time in confusing ways.",
    );
    for (how, t) in &picked {
        f = f.evidence(format!(
            "{how} -> {} (CUDA {})",
            t.path,
            t.version.as_deref().unwrap_or("unknown")
        ));
        f = f.subject(Subject::Toolkit(t.path.clone()));
    }
    for t in report
        .toolkits
        .iter()
        .filter(|t| !picked.iter().any(|(_, p)| p.path == t.path))
    {
        f = f.evidence(format!(
            "also installed: {} (CUDA {})",
            t.path,
            t.version.as_deref().unwrap_or("unknown")
        ));
    }
    Some(
        f.fix(
            "Choose one toolkit and point all three at it, e.g. `export CUDA_HOME=/usr/local/cuda-X.Y; \
             export PATH=$CUDA_HOME/bin:$PATH` and `sudo update-alternatives --config cuda`; or \
             remove toolkits you no longer use.",
        )
        .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toolkit(path: &str, version: &str, via: &[&str]) -> Toolkit {
        Toolkit {
            path: path.into(),
            version: Some(version.into()),
            version_source: Some("version.json".into()),
            nvcc: Some(format!("{path}/bin/nvcc")),
            found_via: via.iter().map(|s| (*s).to_string()).collect(),
            ..Toolkit::default()
        }
    }

    fn report(driver_cuda: &str, toolkits: Vec<Toolkit>) -> Report {
        let mut r = Report {
            toolkits,
            ..Report::default()
        };
        r.driver.version = Some("550.54.15".into());
        r.driver.cuda_version = Some(driver_cuda.into());
        r
    }

    fn run(r: &Report) -> Vec<Finding> {
        findings(r, crate::manifest::embedded())
    }

    #[test]
    fn newer_minor_is_a_warning_newer_major_an_error_same_is_fine() {
        // A newer minor with something that JIT-compiles PTX at run time (numba): a warning.
        let mut r = report(
            "12.4",
            vec![toolkit("/usr/local/cuda-12.6", "12.6.3", &["scan"])],
        );
        r.python_envs.push(crate::report::PythonEnv {
            path: "/venv".into(),
            numba: Some(crate::report::NumbaTarget::default()),
            ..crate::report::PythonEnv::default()
        });
        let f = run(&r);
        assert_eq!(f.len(), 1);
        assert_eq!(
            (f[0].id.as_str(), f[0].severity),
            ("toolkit-newer-than-driver", Severity::Warning)
        );
        assert!(
            f[0].evidence.iter().any(|e| e.contains("numba")),
            "{:?}",
            f[0].evidence
        );
        // Nothing that hands the driver PTX: information only.
        let f = run(&report(
            "12.4",
            vec![toolkit("/usr/local/cuda-12.6", "12.6.3", &["scan"])],
        ));
        assert_eq!(
            (f[0].id.as_str(), f[0].severity),
            ("toolkit-newer-than-driver", Severity::Info)
        );
        let f = run(&report(
            "12.4",
            vec![toolkit("/usr/local/cuda-13.0", "13.0.88", &["scan"])],
        ));
        assert_eq!(
            (f[0].id.as_str(), f[0].severity),
            ("toolkit-newer-than-driver", Severity::Error)
        );
        assert!(
            f[0].evidence.iter().any(|e| e.contains("580.65.06")),
            "{:?}",
            f[0].evidence
        );
        assert!(
            run(&report(
                "13.0",
                vec![toolkit("/usr/local/cuda-13.0", "13.0.88", &["scan"])]
            ))
            .is_empty()
        );
        assert!(
            run(&report(
                "12.4",
                vec![toolkit("/usr/local/cuda-11.8", "11.8.0", &["scan"])]
            ))
            .is_empty()
        );
    }

    #[test]
    fn a_package_reaching_the_gpu_only_through_ptx_keeps_the_warning() {
        let mut r = report(
            "12.4",
            vec![toolkit("/usr/local/cuda-12.6", "12.6.3", &["scan"])],
        );
        r.gpus.push(crate::report::Gpu {
            compute_capability: Some("8.9".into()),
            ..crate::report::Gpu::default()
        });
        let ext = |sass: &[&str], ptx: &[&str]| crate::report::Extension {
            name: "my-ext".into(),
            version: "0.1".into(),
            fatbin_sass: sass.iter().map(|s| (*s).to_string()).collect(),
            fatbin_ptx: ptx.iter().map(|s| (*s).to_string()).collect(),
            ..crate::report::Extension::default()
        };
        r.python_envs.push(crate::report::PythonEnv {
            path: "/venv".into(),
            extensions: vec![ext(&["8.0"], &[])],
            ..crate::report::PythonEnv::default()
        });
        // SASS of sm_80 serves cc 8.9: no JIT.
        assert_eq!(run(&r)[0].severity, Severity::Info);
        r.python_envs[0].extensions = vec![ext(&["7.0"], &["7.0"])];
        let f = run(&r);
        assert_eq!(f[0].id, "toolkit-newer-than-driver");
        assert_eq!(f[0].severity, Severity::Warning);
    }

    #[test]
    fn several_toolkits_only_matter_when_the_selectors_disagree() {
        let agree = vec![
            toolkit(
                "/usr/local/cuda-12.4",
                "12.4.1",
                &["/usr/local/cuda", "PATH", "CUDA_HOME"],
            ),
            toolkit("/usr/local/cuda-11.8", "11.8.0", &["scan"]),
        ];
        assert!(run(&report("12.4", agree)).is_empty());
        let disagree = vec![
            toolkit("/usr/local/cuda-11.8", "11.8.0", &["CUDA_HOME"]),
            toolkit("/usr/local/cuda-12.1", "12.1.1", &["PATH"]),
            toolkit("/usr/local/cuda-12.4", "12.4.1", &["/usr/local/cuda"]),
        ];
        let f = run(&report("12.4", disagree));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].id, "multiple-toolkits");
        assert!(
            f[0].evidence
                .iter()
                .any(|e| e == "CUDA_HOME/CUDA_PATH -> /usr/local/cuda-11.8 (CUDA 11.8.0)"),
            "{:?}",
            f[0].evidence
        );
    }
}

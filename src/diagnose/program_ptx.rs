//! Programs' own CUDA code that reaches a GPU only through PTX, against the driver:
//! `driver-too-old-for-framework`.
//!
//! A backend built with `NN-virtual` for an architecture (ollama's CUDA 12 backend lists
//! `50-virtual;52-virtual;60-virtual;61-virtual;70;...`, quoted in ollama/ollama#17196) carries PTX
//! for it and no SASS, so the driver JIT-compiles that PTX when the library loads. PTX written by
//! CUDA 12.8 has an ISA version a driver for an older CUDA refuses
//! (`CUDA_ERROR_UNSUPPORTED_PTX_VERSION`, "the provided PTX was compiled with an unsupported
//! toolchain"); minor-version compatibility covers SASS, not PTX. ollama's own check
//! (`discover/cuda_compat.go`: "Older CUDA compute targets need newer drivers when they are JITed
//! from PTX", 570 for its 12.8 runtime) drops such GPUs and runs models on the CPU: two Tesla
//! P40s on driver 535 under ollama 0.30 and later (ollama/ollama#17290).
//!
//! The PTX's CUDA is taken from the runtime shipped beside the library (`CudaCode::runtime`,
//! `libcudart.so.12.8.90`), as ollama's check takes it; a library without one is not judged. The
//! other direction (a driver newer than the PTX) compiles it. A GPU that any library of the group
//! serves with SASS, or through PTX of a CUDA the driver (or a forward-compatibility libcuda)
//! runs, is fine; a GPU no library serves at all is `arch-not-in-build` (`program_code`).

use super::program_code::{archs, gpus, groups, program_name};
use super::{FindingBuilder, ids};
use crate::manifest::Manifests;
use crate::parse::fatbin::runs_on;
use crate::report::{CudaCode, Finding, Gpu, Report, Severity, Subject};
use crate::version::Version;

/// A GPU with its compute capability's major and minor.
type GpuCc<'a> = (&'a Gpu, u32, u32);

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let Some(driver) = report.driver.version.as_deref() else {
        return Vec::new();
    };
    let Some(driver_cuda) = report
        .driver
        .cuda_version
        .as_deref()
        .or_else(|| manifests.cuda.max_cuda_for_driver(driver))
        .and_then(Version::parse)
    else {
        return Vec::new();
    };
    // A forward-compatibility libcuda raises the CUDA whose PTX the driver stack compiles.
    let runs_up_to = match super::platform::compat_cuda(report, manifests) {
        Some((_, compat)) if compat > driver_cuda => compat,
        _ => driver_cuda.clone(),
    };
    let gpus = gpus(report);
    groups(report)
        .iter()
        .filter_map(|group| {
            let (ptx_cuda, refused) = refused(group, &gpus, &runs_up_to)?;
            Some(finding(
                group,
                &refused,
                &ptx_cuda,
                driver,
                &driver_cuda,
                manifests,
            ))
        })
        .collect()
}

/// The lowest CUDA of the group's runtimes (the one a program would fall back to) and the GPUs
/// it reaches only through PTX of a CUDA newer than `runs_up_to`; `None` when there are none or
/// when a library that serves them has no runtime read (or a capped read).
fn refused<'a>(
    group: &[&CudaCode],
    gpus: &[GpuCc<'a>],
    runs_up_to: &Version,
) -> Option<(Version, Vec<GpuCc<'a>>)> {
    if group.iter().any(|c| c.capped) {
        return None;
    }
    let ptx_cuda = |c: &CudaCode| {
        let v = Version::parse(c.runtime.as_deref()?)?;
        Version::parse(&v.major_minor())
    };
    let mut lowest: Option<Version> = None;
    let mut out = Vec::new();
    for &(g, major, minor) in gpus {
        if group
            .iter()
            .any(|c| runs_on(&archs(&c.sass), &[], major, minor))
        {
            continue;
        }
        let through_ptx: Vec<&&CudaCode> = group
            .iter()
            .filter(|c| runs_on(&[], &archs(&c.ptx), major, minor))
            .collect();
        if through_ptx.is_empty() {
            continue;
        }
        let cudas: Option<Vec<Version>> = through_ptx.iter().map(|c| ptx_cuda(c)).collect();
        let least = cudas?.into_iter().min()?;
        if least <= *runs_up_to {
            continue;
        }
        if lowest.as_ref().is_none_or(|l| least < *l) {
            lowest = Some(least);
        }
        out.push((g, major, minor));
    }
    Some((lowest?, out))
}

fn finding(
    group: &[&CudaCode],
    refused: &[GpuCc<'_>],
    ptx_cuda: &Version,
    driver: &str,
    driver_cuda: &Version,
    manifests: &Manifests,
) -> Finding {
    let program = program_name(group[0]);
    let names: Vec<String> = refused
        .iter()
        .map(|(g, major, minor)| {
            format!(
                "GPU {} ({}, compute capability {major}.{minor})",
                g.index,
                g.name.as_deref().unwrap_or("unknown model")
            )
        })
        .collect();
    let mut f = FindingBuilder::new(
        &ids::DRIVER_TOO_OLD_FOR_FRAMEWORK,
        Severity::Error,
        format!(
            "{program}'s CUDA {ptx_cuda} backend reaches {} only through PTX, which driver \
             {driver} (CUDA {driver_cuda}) cannot compile",
            names.join(", "),
            ptx_cuda = ptx_cuda.as_str(),
            driver_cuda = driver_cuda.as_str(),
        ),
    )
    .detail(format!(
        "{program}'s CUDA backend (libggml-cuda.so) carries no SASS for this GPU, only PTX, which \
         the driver JIT-compiles when the library loads. PTX written by CUDA {} has an ISA \
         version a driver for CUDA {} refuses (\"the provided PTX was compiled with an \
         unsupported toolchain\"); minor-version compatibility covers compiled code, not PTX.{}",
        ptx_cuda.as_str(),
        driver_cuda.as_str(),
        if program == "ollama" {
            " ollama checks this itself, drops the GPU (\"NVIDIA driver too old\" in its debug \
             log) and runs every model on the CPU."
        } else {
            ""
        }
    ))
    .evidence(format!(
        "driver: {driver}, supports CUDA up to {}",
        driver_cuda.as_str()
    ));
    for c in group {
        let mut line = format!(
            "{}: SASS for {}, PTX for {} (its .nv_fatbin)",
            c.path,
            if c.sass.is_empty() {
                "nothing".to_string()
            } else {
                c.sass.join(", ")
            },
            if c.ptx.is_empty() {
                "nothing".to_string()
            } else {
                c.ptx.join(", ")
            },
        );
        if let Some(rt) = &c.runtime {
            line.push_str(&format!("; CUDA runtime {rt} beside it"));
        }
        f = f.evidence(line);
    }
    for (g, _, _) in refused {
        f = f.subject(g.subject());
    }
    f = f.subject(Subject::Driver(None));
    let upgrade = match manifests
        .cuda
        .min_driver_for(&ptx_cuda.major_minor())
        .and_then(|r| r.toolkit_driver)
    {
        Some(d) => format!(
            "Upgrade the driver to {d} or newer (the driver CUDA {} shipped with)",
            ptx_cuda.as_str()
        ),
        None => format!(
            "Upgrade the driver to one that supports CUDA {}",
            ptx_cuda.as_str()
        ),
    };
    f.fix(format!(
        "{upgrade}; see `gpu-doctor plan`. A build of {program} with SASS for this GPU \
         (`CMAKE_CUDA_ARCHITECTURES` naming it as a real architecture) runs on this driver too."
    ))
    .build()
}

#[cfg(test)]
mod tests {
    use super::findings;
    use crate::manifest::embedded;
    use crate::report::{CudaCode, Gpu, Report, Severity};

    fn report(driver: &str, driver_cuda: &str, cc: &str, code: Vec<CudaCode>) -> Report {
        let mut r = Report::default();
        r.gpus.push(Gpu {
            name: Some("Tesla P40".into()),
            compute_capability: Some(cc.into()),
            source: "nvml".into(),
            ..Gpu::default()
        });
        r.driver.version = Some(driver.into());
        r.driver.cuda_version = Some(driver_cuda.into());
        r.libraries.cuda_code = code;
        r
    }

    fn lib(path: &str, sass: &[&str], ptx: &[&str], runtime: Option<&str>) -> CudaCode {
        CudaCode {
            program: "ollama".into(),
            path: path.into(),
            sass: sass.iter().map(|s| (*s).to_string()).collect(),
            ptx: ptx.iter().map(|s| (*s).to_string()).collect(),
            capped: false,
            runtime: runtime.map(str::to_string),
        }
    }

    /// ollama/ollama#17196's CUDA 12 list: Maxwell and Pascal as PTX only, built with 12.8.
    fn cuda12(runtime: Option<&str>) -> CudaCode {
        lib(
            "/usr/local/lib/ollama/cuda_v12/libggml-cuda.so",
            &["7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "12.0"],
            &["5.0", "5.2", "6.0", "6.1"],
            runtime,
        )
    }

    fn cuda13() -> CudaCode {
        lib(
            "/usr/local/lib/ollama/cuda_v13/libggml-cuda.so",
            &["7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0"],
            &["12.0"],
            Some("13.0.96"),
        )
    }

    #[test]
    fn pascal_through_cuda_128_ptx_on_a_535_driver_is_an_error_naming_the_570_driver() {
        // ollama/ollama#17290: two P40s on 535.309.01 under ollama 0.30+.
        let r = report(
            "535.309.01",
            "12.2",
            "6.1",
            vec![cuda12(Some("12.8.90")), cuda13()],
        );
        let f = findings(&r, embedded());
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            (f[0].id.as_str(), f[0].severity),
            ("driver-too-old-for-framework", Severity::Error)
        );
        assert!(f[0].title.contains("CUDA 12.8 backend"), "{}", f[0].title);
        assert!(
            f[0].title.contains("535.309.01 (CUDA 12.2)"),
            "{}",
            f[0].title
        );
        let fix = f[0].fix.as_deref().unwrap_or_default();
        assert!(fix.contains("570."), "{fix}");
    }

    #[test]
    fn a_driver_of_the_ptxs_cuda_or_newer_compiles_it() {
        for (driver, cuda) in [("570.86.10", "12.8"), ("580.159.03", "13.0")] {
            let r = report(driver, cuda, "6.1", vec![cuda12(Some("12.8.90")), cuda13()]);
            assert!(findings(&r, embedded()).is_empty(), "{driver}");
        }
    }

    #[test]
    fn sass_for_the_gpu_or_an_unread_runtime_is_not_judged() {
        // A Volta card: the CUDA 12 backend carries sm_70 SASS, which runs on 535 through
        // minor-version compatibility.
        let r = report(
            "535.309.01",
            "12.2",
            "7.0",
            vec![cuda12(Some("12.8.90")), cuda13()],
        );
        assert!(findings(&r, embedded()).is_empty());
        // No full-versioned runtime beside the backend: its PTX's CUDA is unknown.
        let r = report("535.309.01", "12.2", "6.1", vec![cuda12(None), cuda13()]);
        assert!(findings(&r, embedded()).is_empty());
        // PTX of an older CUDA than the driver's.
        let r = report("535.309.01", "12.2", "6.1", vec![cuda12(Some("12.1.105"))]);
        assert!(findings(&r, embedded()).is_empty());
    }

    #[test]
    fn a_gpu_no_library_serves_is_left_to_arch_not_in_build() {
        let r = report("535.309.01", "12.2", "5.0", vec![cuda13()]);
        assert!(findings(&r, embedded()).is_empty());
    }
}

//! Programs' own CUDA code outside Python packages against the GPU: `arch-not-in-build`.
//!
//! llama.cpp's and ollama's CUDA backend, `libggml-cuda.so`, carries code for the architectures
//! of its build's `CMAKE_CUDA_ARCHITECTURES` only; on a GPU none of them serves (no SASS of its
//! major at or below its minor, no PTX at or below it) ggml aborts at its first kernel with
//! "ggml was not compiled with any CUDA arch <= 610" (omacom/omarchy#2039: Arch's `ollama-cuda`
//! on a GTX 1080 Ti; the same message, "<= 700", for a V100 under ollama's CUDA 13 backend in
//! ollama/ollama#12332). Both
//! directions: a build older than the GPU, and one that left an old architecture out (CUDA 13's
//! nvcc no longer targets below 7.5). ollama keeps one backend per CUDA major (`cuda_v12/`,
//! `cuda_v13/`) and is meant to use one that serves the GPU, so its libraries count together (a
//! release that picks the wrong one, as #12332's did, is not judged); a llama.cpp build's library
//! counts alone. The facts are `libraries.cuda_code` (`probe::cuda_code`).

use super::{FindingBuilder, ids};
use crate::report::{CudaCode, Finding, Gpu, GpuSource, Report, Severity};
use crate::version::Version;

pub(super) fn findings(report: &Report, _manifests: &crate::manifest::Manifests) -> Vec<Finding> {
    let gpus = gpus(report);
    groups(report)
        .iter()
        .filter_map(|group| finding(group, &gpus))
        .collect()
}

/// The NVIDIA GPUs found (not set by an override), with their compute capability's major and
/// minor.
pub(super) fn gpus(report: &Report) -> Vec<(&Gpu, u32, u32)> {
    report
        .nvidia_gpus()
        .filter(|g| g.source != GpuSource::Override)
        .filter_map(|g| {
            let cc = Version::parse(g.compute_capability.as_deref()?)?;
            Some((
                g,
                u32::try_from(cc.major()).ok()?,
                u32::try_from(cc.minor()).ok()?,
            ))
        })
        .collect()
}

/// The libraries with GPU code, grouped as the program uses them: ollama's backends together
/// (it picks one that serves the GPU), every other library alone.
pub(super) fn groups(report: &Report) -> Vec<Vec<&CudaCode>> {
    let mut groups: Vec<Vec<&CudaCode>> = Vec::new();
    for c in report
        .libraries
        .cuda_code
        .iter()
        .filter(|c| !c.sass.is_empty() || !c.ptx.is_empty())
    {
        match groups
            .iter_mut()
            .find(|g| c.program == "ollama" && g[0].program == "ollama")
        {
            Some(g) => g.push(c),
            None => groups.push(vec![c]),
        }
    }
    groups
}

/// The program's name as a finding says it.
pub(super) fn program_name(c: &CudaCode) -> &'static str {
    match c.program.as_str() {
        "ollama" => "ollama",
        "llama.cpp" => "llama.cpp",
        _ => "ggml",
    }
}

/// "GPU 0 (Tesla P40)".
pub(super) fn gpu_label(g: &Gpu) -> String {
    format!(
        "GPU {} ({})",
        g.index,
        g.name.as_deref().unwrap_or("unknown model")
    )
}

pub(super) fn archs(list: &[String]) -> Vec<u32> {
    list.iter()
        .filter_map(|cc| {
            let v = Version::parse(cc)?;
            u32::try_from(v.major() * 10 + v.minor()).ok()
        })
        .collect()
}

fn finding(group: &[&CudaCode], gpus: &[(&Gpu, u32, u32)]) -> Option<Finding> {
    let serves = |c: &CudaCode, major: u32, minor: u32| {
        crate::parse::fatbin::runs_on(&archs(&c.sass), &archs(&c.ptx), major, minor)
    };
    let cannot: Vec<&(&Gpu, u32, u32)> = gpus
        .iter()
        .filter(|(_, major, minor)| !group.iter().any(|c| serves(c, *major, *minor)))
        .collect();
    let (_, major, minor) = cannot.first()?;
    // A list cut short by the read's bound may miss the GPU's architecture: not judged.
    if group.iter().any(|c| c.capped) {
        return None;
    }
    let highest = group
        .iter()
        .flat_map(|c| archs(&c.sass).into_iter().chain(archs(&c.ptx)))
        .max()?;
    let newer = major * 10 + minor > highest;
    let program = program_name(group[0]);
    let cc = format!("{major}.{minor}");
    let gpu = gpu_label;
    let names: Vec<String> = cannot.iter().map(|(g, _, _)| gpu(g)).collect();
    let carried = |c: &CudaCode| {
        let mut all: Vec<String> = c.sass.clone();
        all.extend(c.ptx.iter().map(|p| format!("{p} (PTX)")));
        all.join(", ")
    };
    let mut f = FindingBuilder::new(
        &ids::ARCH_NOT_IN_BUILD,
        Severity::Error,
        format!(
            "{program}'s CUDA backend has no code for {} (compute capability {cc})",
            names.join(", ")
        ),
    )
    .detail(if newer {
        format!(
            "{program}'s CUDA backend (libggml-cuda.so) carries GPU code for older architectures \
             only and no PTX the driver could compile for this GPU; its first kernel fails with \
             \"no kernel image is available for execution on the device\"."
        )
    } else {
        format!(
            "{program}'s CUDA backend (libggml-cuda.so) was built for newer architectures only \
             (CUDA 13's nvcc no longer targets compute capability below 7.5); ggml aborts with \
             \"ggml was not compiled with any CUDA arch <= {major}{minor}0\" at its first kernel."
        )
    });
    for c in group {
        f = f.evidence(format!(
            "{}: code for compute capability {} (its .nv_fatbin)",
            c.path,
            carried(c)
        ));
    }
    for (g, major, minor) in &cannot {
        f = f
            .evidence(format!("{}: compute capability {major}.{minor}", gpu(g)))
            .subject(g.subject());
    }
    let fix = if program == "ollama" {
        format!(
            "Install an ollama build whose CUDA backend carries compute capability {cc}: ollama's \
             own release (its install script or tarball{}), or build it with \
             `CMAKE_CUDA_ARCHITECTURES` including {major}{minor} and a CUDA toolkit that targets it.",
            if newer {
                ", a release made after this GPU's architecture"
            } else if *major >= 5 {
                // ollama's CMakePresets.json, "CUDA 12": 50;60;61;70;75;80;86;87;89;90;90a;120.
                ", whose CUDA 12 backend is built for compute capability 5.0 and newer"
            } else {
                ""
            }
        )
    } else {
        format!(
            "Rebuild llama.cpp for this GPU: `cmake -B build -DGGML_CUDA=ON \
             -DCMAKE_CUDA_ARCHITECTURES={major}{minor}` with a CUDA toolkit that targets compute \
             capability {cc}, or use a release binary built for it."
        )
    };
    Some(f.fix(fix).build())
}

#[cfg(test)]
mod tests {
    use super::findings;
    use crate::manifest::embedded;
    use crate::report::{CudaCode, Gpu, Report, Severity};

    fn report(cc: &str, code: Vec<CudaCode>) -> Report {
        let mut r = Report::default();
        r.gpus.push(Gpu {
            name: Some("test GPU".into()),
            compute_capability: Some(cc.into()),
            source: "nvml".into(),
            ..Gpu::default()
        });
        r.libraries.cuda_code = code;
        r
    }

    fn lib(program: &str, path: &str, sass: &[&str], ptx: &[&str]) -> CudaCode {
        CudaCode {
            program: program.into(),
            path: path.into(),
            sass: sass.iter().map(|s| (*s).to_string()).collect(),
            ptx: ptx.iter().map(|s| (*s).to_string()).collect(),
            capped: false,
            runtime: None,
        }
    }

    #[test]
    fn a_backend_without_the_gpus_architecture_is_arch_not_in_build_both_ways() {
        // Older: CUDA 13's list on a Pascal card (omacom/omarchy#2039).
        let cuda13 = lib(
            "ollama",
            "/usr/lib/ollama/libggml-cuda.so",
            &["7.5", "8.6", "12.0"],
            &["12.0"],
        );
        let f = findings(&report("6.1", vec![cuda13.clone()]), embedded());
        assert_eq!(f.len(), 1);
        assert_eq!(
            (f[0].id.as_str(), f[0].severity),
            ("arch-not-in-build", Severity::Error)
        );
        assert!(f[0].detail.contains("<= 610"), "{}", f[0].detail);
        // Newer: a build of SASS up to 9.0 without PTX on a Blackwell card.
        let old = lib(
            "llama.cpp",
            "/opt/llama/lib/libggml-cuda.so",
            &["6.1", "8.6", "9.0"],
            &[],
        );
        let f = findings(&report("12.0", vec![old]), embedded());
        assert_eq!(f.len(), 1);
        assert!(
            f[0].detail.contains("older architectures only"),
            "{}",
            f[0].detail
        );
        assert!(
            f[0].fix
                .as_deref()
                .is_some_and(|x| x.contains("CMAKE_CUDA_ARCHITECTURES=120"))
        );
        // A GPU its SASS serves (same major, lower minor), or its PTX: nothing.
        assert!(findings(&report("8.9", vec![cuda13.clone()]), embedded()).is_empty());
        let ptx = lib("ggml", "/usr/local/lib/libggml-cuda.so", &["8.0"], &["8.0"]);
        assert!(findings(&report("12.0", vec![ptx]), embedded()).is_empty());
    }

    #[test]
    fn ollamas_backends_count_together() {
        // ollama picks the backend that serves the GPU: its CUDA 12 one carries 6.1.
        let v12 = lib(
            "ollama",
            "/usr/local/lib/ollama/cuda_v12/libggml-cuda.so",
            &["5.0", "6.1", "7.0"],
            &[],
        );
        let v13 = lib(
            "ollama",
            "/usr/local/lib/ollama/cuda_v13/libggml-cuda.so",
            &["7.5", "12.0"],
            &["12.0"],
        );
        assert!(findings(&report("6.1", vec![v12, v13.clone()]), embedded()).is_empty());
        assert_eq!(findings(&report("6.1", vec![v13]), embedded()).len(), 1);
        // A list cut short is not judged.
        let mut capped = lib("llama.cpp", "/x/libggml-cuda.so", &["9.0"], &[]);
        capped.capped = true;
        assert!(findings(&report("12.0", vec![capped]), embedded()).is_empty());
    }
}

//! onnxruntime-gpu against the CUDA and cuDNN libraries of the machine, with or without torch
//! beside it: `onnxruntime-cuda-libraries`.
//!
//! onnxruntime-gpu's CUDA execution provider (`onnxruntime/capi/libonnxruntime_providers_cuda.so`)
//! links one CUDA major's libraries and one cuDNN major (`DT_NEEDED`: `libcudnn.so.9`,
//! `libcublasLt.so.12`, ...) and carries no RUNPATH (frameworks.toml `onnxruntime_cuda`, generated
//! by `scripts/gen-onnxruntime-cuda.py` from the PyPI wheels). When one of them cannot be loaded,
//! onnxruntime prints "Failed to load library libonnxruntime_providers_cuda.so with error:
//! libcudnn.so.9: cannot open shared object file" and runs the model on the CPU.
//!
//! The provider's needs are resolved as ld.so would (`probe::linkmap`, framework "onnxruntime"):
//! a library only in an nvidia-* wheel's folder is not found, which its documentation answers
//! with `import torch` first or `onnxruntime.preload_dlls()` (1.21 on). A torch of another CUDA
//! major in the same environment is `extension-cuda-mismatch`'s (`ext_packages.rs`).
//!
//! The provider's CUDA major against the driver is `driver-too-old-for-framework`, as for the
//! frameworks (minor-version compatibility and a forward-compatibility libcuda counted).

use std::path::Path;

use super::{FindingBuilder, ids};
use crate::manifest::Manifests;
use crate::parse::libfamily as family;
use crate::report::{
    Extension, Finding, FrameworkLoads, LibraryLoad, PythonEnv, Report, Severity, Subject,
    framework_subject,
};
use crate::version::Version;

mod cpu_package;
mod tensorrt_provider;

/// The name the resolution gives onnxruntime-gpu's provider (`FrameworkLoads::framework`).
const ONNXRUNTIME: &str = "onnxruntime";

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    report
        .python_envs
        .iter()
        .filter_map(|env| {
            let fl = report
                .libraries
                .loads
                .iter()
                .find(|l| l.env == env.path && l.framework == ONNXRUNTIME)?;
            Some((env, fl))
        })
        .flat_map(|(env, fl)| {
            [
                provider(report, manifests, env, fl),
                optional_cudnn(report, manifests, env, fl),
                driver_too_old(report, manifests, env, fl),
            ]
        })
        .flatten()
        .chain(
            report
                .python_envs
                .iter()
                .filter_map(|env| tensorrt_provider::finding(report, manifests, env)),
        )
        .chain(
            report
                .python_envs
                .iter()
                .filter_map(|env| cpu_package::finding(report, env)),
        )
        .collect()
}

/// Whether a resolved library is one the provider's release loads: its `DT_NEEDED`, or by
/// soname at run time (`_ld_preload.py` up to 1.15, the cuDNN loader from 1.28).
fn is_need(l: &LibraryLoad) -> bool {
    l.by == "needed" || l.by == "dlopen"
}

/// Whether a need is the cuDNN that the provider's release can run without (1.28 on).
fn optional(manifests: &Manifests, ext: &Extension, l: &LibraryLoad) -> bool {
    l.by == "dlopen"
        && l.soname.starts_with("libcudnn.so")
        && manifests
            .frameworks
            .onnxruntime_cuda(&ext.version)
            .is_some_and(|r| r.cudnn_optional)
}

/// onnxruntime-gpu 1.28 and later load cuDNN on first use (`dlopen("libcudnn.so.9")` from the
/// provider, cudnn_loader.cc, microsoft/onnxruntime#29252); without it the provider loads and
/// the kernels that need cuDNN (convolutions, ...) fail with "cuDNN is not available. Install
/// cuDNN, update the system library search path, or set enable_cudnn=0": a warning.
fn optional_cudnn(
    report: &Report,
    manifests: &Manifests,
    env: &PythonEnv,
    fl: &FrameworkLoads,
) -> Option<Finding> {
    let ext = ort_gpu(env)?;
    let load = fl
        .libraries
        .iter()
        .find(|l| l.path.is_none() && optional(manifests, ext, l))?;
    if torch_maps(report, env).contains(&load.soname.as_str()) {
        return None;
    }
    let major = soname_major(&load.soname).unwrap_or("9");
    let g = gap(load);
    let title = match &g {
        Gap::OffPath(_) => format!(
            "onnxruntime-gpu {} in {} does not find {}: installed, but not where its CUDA provider looks for cuDNN",
            ext.version, env.path, load.soname
        ),
        Gap::OtherMajor(_) => format!(
            "onnxruntime-gpu {} in {} loads cuDNN {major} at run time, but this machine has only another cuDNN major",
            ext.version, env.path
        ),
        Gap::Absent => format!(
            "onnxruntime-gpu {} in {} finds no cuDNN {major}: kernels that need cuDNN will fail",
            ext.version, env.path
        ),
    };
    let extras = manifests
        .frameworks
        .onnxruntime_cuda(&ext.version)
        .map(|r| r.extras.join(","))
        .filter(|e| !e.is_empty());
    let fix = match (&g, extras) {
        (Gap::OffPath(dirs), _) => format!(
            "Call `onnxruntime.preload_dlls()` before creating the session (it loads the \
             nvidia-cudnn wheel's copy by path), or `import torch` first where a torch of the \
             same CUDA major is installed, or put the folder on the loader path for the run: \
             `LD_LIBRARY_PATH={}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}`.",
            dirs.join(":")
        ),
        (_, Some(extras)) => format!(
            "Install cuDNN {major} into {}: `pip install 'onnxruntime-gpu[{extras}]=={}'`, then \
             call `onnxruntime.preload_dlls()` before creating the session; or, for a model with \
             no cuDNN kernels, pass the CUDA provider option `enable_cudnn=0`.",
            env.path, ext.version
        ),
        (_, None) => format!(
            "Install cuDNN {major} where the loader finds it (NVIDIA's or the distribution's \
             packages)."
        ),
    };
    Some(
        FindingBuilder::new(&ids::ONNXRUNTIME_CUDA_LIBRARIES, Severity::Warning, title)
            .detail(format!(
                "onnxruntime-gpu 1.28 and later no longer link cuDNN: the CUDA provider opens \
                 {} with dlopen when a kernel first needs it, searching LD_LIBRARY_PATH, the \
                 ld.so cache and the default folders (not the nvidia-* wheels' folders, unless \
                 `onnxruntime.preload_dlls()` or `import torch` loaded it first). Without it the \
                 provider still loads, and kernels that need cuDNN (convolutions, ...) fail with \
                 \"cuDNN is not available. Install cuDNN, update the system library search path, \
                 or set enable_cudnn=0 to force native CUDA paths where available\".",
                load.soname
            ))
            .evidence(gap_line(load, &g))
            .evidence(format!("searched: {}", load.searched.join(", ")))
            .evidence(format!(
                "opened at run time by {}; source: {}",
                load.needed_by,
                manifests
                    .frameworks
                    .onnxruntime_cuda(&ext.version)
                    .map_or("frameworks.toml onnxruntime_cuda", |r| r.source.as_str())
            ))
            .subject(framework_subject(&env.path, ONNXRUNTIME))
            .fix(fix)
            .build(),
    )
}

/// The provider's CUDA major against the driver: a driver whose CUDA major is older runs none
/// of it ("CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version" at
/// `cudaSetDevice`, onnxruntime/mobius#316), unless a forward-compatibility libcuda serves it.
/// Within the major, minor-version compatibility runs it on any driver at the major's floor.
fn driver_too_old(
    report: &Report,
    manifests: &Manifests,
    env: &PythonEnv,
    fl: &FrameworkLoads,
) -> Option<Finding> {
    let ext = ort_gpu(env)?;
    let needed: u64 = fl
        .libraries
        .iter()
        .find(|l| is_need(l) && l.soname.starts_with("libcudart.so."))
        .and_then(|l| soname_major(&l.soname))?
        .parse()
        .ok()?;
    let have = super::platform::driver_below_cuda_major(report, manifests, needed)?;
    let driver = report.driver.version.as_deref().unwrap_or_default();
    let floor = manifests
        .cuda
        .major(needed)
        .map(|m| m.minor_compat_floor.as_str());
    let mut f = FindingBuilder::new(
        &ids::DRIVER_TOO_OLD_FOR_FRAMEWORK,
        Severity::Error,
        format!(
            "onnxruntime-gpu {} in {} is built for CUDA {needed}, but driver {driver} supports CUDA up to {}",
            ext.version,
            env.path,
            have.as_str()
        ),
    )
    .detail(
        "onnxruntime-gpu's CUDA provider links one CUDA major's runtime; a driver older than that \
         major's first release cannot run it, so creating a CUDA session fails with \"CUDA \
         failure 35: CUDA driver version is insufficient for CUDA runtime version\" (or falls \
         back to the CPU).",
    )
    .evidence(format!(
        "driver: {driver} (CUDA {}, from {})",
        have.as_str(),
        report.driver.source.as_deref().unwrap_or("unknown source")
    ))
    .evidence(format!(
        "onnxruntime-gpu {}: its CUDA provider needs libcudart.so.{needed} ({})",
        ext.version, ext.source
    ))
    .subject(framework_subject(&env.path, ONNXRUNTIME))
    .subject(Subject::Driver(None));
    if let Some(floor) = floor {
        f = f.evidence(format!(
            "CUDA {needed}.x needs a driver >= {floor} (cuda.toml)"
        ));
    }
    // A toolkit of the same major is too new for the same driver: one cause.
    if report.toolkits.iter().any(|t| {
        t.version
            .as_deref()
            .and_then(Version::parse)
            .is_some_and(|v| v.major() == needed)
    }) {
        f = f.explains(&ids::TOOLKIT_NEWER_THAN_DRIVER);
    }
    let release = manifests
        .frameworks
        .onnxruntime_cuda
        .iter()
        .rev()
        .find(|r| r.cuda_major == have.major().to_string());
    let upgrade = match floor {
        Some(floor) => format!("Upgrade the driver to {floor} or newer (`gpu-doctor plan`)"),
        None => {
            format!("Upgrade the driver to one that supports CUDA {needed} (`gpu-doctor plan`)")
        }
    };
    let fix = match release {
        Some(r) => format!(
            "{upgrade}, or install the onnxruntime-gpu release built for this driver's CUDA {}: \
             `pip install 'onnxruntime-gpu=={}'` (releases {} to {} are; frameworks.toml \
             `onnxruntime_cuda`).",
            have.major(),
            pin(&r.last),
            r.first,
            r.last
        ),
        None => format!("{upgrade}."),
    };
    Some(f.fix(fix).build())
}

/// A pip pin for a table bound: a minor ("1.26") means any of its patch releases.
fn pin(last: &str) -> String {
    if last.split('.').count() == 2 {
        format!("{last}.*")
    } else {
        last.to_string()
    }
}

/// Why one library the provider needs is not loaded.
#[derive(Debug, Clone, PartialEq)]
enum Gap {
    /// A copy of that soname is in these folders, none on the provider's search path (a pip
    /// wheel's `nvidia/*/lib`, a toolkit not on the loader path).
    OffPath(Vec<String>),
    /// Only other majors of the library are here (`libcudnn.so.8` for a `libcudnn.so.9` need).
    OtherMajor(Vec<String>),
    /// No copy of the library in any version.
    Absent,
}

/// The soname's major ("libcudnn.so.9" → "9"; "libcudart.so.11.0" → "11").
fn soname_major(soname: &str) -> Option<&str> {
    soname.split(".so.").nth(1)?.split('.').next()
}

/// Whether a file name is the soname or a versioned file of it (`libcudnn.so.9.1.0`).
fn of_soname(file: &str, soname: &str) -> bool {
    file == soname
        || file
            .strip_prefix(soname)
            .is_some_and(|rest| rest.starts_with('.'))
}

fn gap(load: &LibraryLoad) -> Gap {
    let file = |p: &str| {
        Path::new(p)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let mut dirs: Vec<String> = load
        .others
        .iter()
        .filter(|o| of_soname(&file(&o.path), &load.soname))
        .filter_map(|o| Path::new(&o.path).parent().map(|d| d.display().to_string()))
        .collect();
    dirs.dedup();
    if !dirs.is_empty() {
        return Gap::OffPath(dirs);
    }
    let mut others: Vec<String> = load
        .others
        .iter()
        .map(|o| match &o.version {
            Some(v) => format!("{} ({v})", o.path),
            None => o.path.clone(),
        })
        .collect();
    others.dedup();
    if others.is_empty() {
        Gap::Absent
    } else {
        Gap::OtherMajor(others)
    }
}

/// The libraries a torch of this environment maps once imported, by soname.
fn torch_maps<'a>(report: &'a Report, env: &PythonEnv) -> Vec<&'a str> {
    report
        .libraries
        .loads
        .iter()
        .filter(|l| l.env == env.path && l.framework == "torch")
        .flat_map(|l| &l.libraries)
        .filter(|l| l.path.is_some())
        .map(|l| l.soname.as_str())
        .collect()
}

/// The environment's onnxruntime-gpu distribution, whose provider the rules judge.
fn ort_gpu(env: &PythonEnv) -> Option<&Extension> {
    env.extensions.iter().find(|e| e.name == "onnxruntime-gpu")
}

fn provider(
    report: &Report,
    manifests: &Manifests,
    env: &PythonEnv,
    fl: &FrameworkLoads,
) -> Option<Finding> {
    let ext = ort_gpu(env)?;
    let needs: Vec<&LibraryLoad> = fl
        .libraries
        .iter()
        .filter(|l| is_need(l) && !optional(manifests, ext, l))
        .collect();
    let cuda_major = needs
        .iter()
        .find(|l| l.soname.starts_with("libcudart.so."))
        .and_then(|l| soname_major(&l.soname))?;
    let cudnn_major = needs
        .iter()
        .find(|l| l.soname.starts_with("libcudnn.so."))
        .and_then(|l| soname_major(&l.soname));
    // A torch of another CUDA major beside it is `extension-cuda-mismatch`.
    let torch = env
        .frameworks
        .iter()
        .find(|f| f.name == "torch" && f.variant.as_deref() == Some("cuda"));
    if torch
        .and_then(|t| t.cuda.as_deref())
        .and_then(|c| c.split('.').next())
        .is_some_and(|m| m != cuda_major)
    {
        return None;
    }
    // What `import torch` maps first serves the provider too (onnxruntime's documented way).
    let from_torch = torch_maps(report, env);
    let missing: Vec<(&LibraryLoad, Gap)> = needs
        .iter()
        .filter(|l| l.path.is_none() && !from_torch.contains(&l.soname.as_str()))
        .map(|l| (*l, gap(l)))
        .collect();
    let (first, _) = missing.first()?;
    let row = manifests.frameworks.onnxruntime_cuda(&ext.version);
    let off_path_only = missing.iter().all(|(_, g)| matches!(g, Gap::OffPath(_)));
    let built_for = match cudnn_major {
        Some(d) => format!("CUDA {cuda_major} and cuDNN {d}"),
        None => format!("CUDA {cuda_major}"),
    };
    let title = title(ext, env, &missing, off_path_only, &built_for);
    let mut f = FindingBuilder::new(
        &ids::ONNXRUNTIME_CUDA_LIBRARIES,
        if off_path_only {
            Severity::Warning
        } else {
            Severity::Error
        },
        title,
    )
    .detail(format!(
        "onnxruntime loads its CUDA provider when a session asks for CUDAExecutionProvider; the \
         provider needs {} and the loader looks for them in LD_LIBRARY_PATH, {}, the ld.so cache \
         and the default folders, never in the nvidia-* wheels' folders (it takes what `import \
         torch` or `onnxruntime.preload_dlls()` loaded first). One missing library makes it \
         print \"Failed to load library libonnxruntime_providers_cuda.so with error: {}: cannot \
         open shared object file\" and run the model on the CPU.",
        needs
            .iter()
            .map(|l| l.soname.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        match row {
            Some(r) if r.runpath.is_empty() => "(it has no RUNPATH)".to_string(),
            Some(r) => format!("its RUNPATH ({})", r.runpath.join(":")),
            None => "its RUNPATH".to_string(),
        },
        first.soname
    ))
    .subject(framework_subject(&env.path, ONNXRUNTIME));
    for (l, g) in &missing {
        f = f.evidence(gap_line(l, g));
    }
    f = f.evidence(format!("searched: {}", first.searched.join(", ")));
    f = f.evidence(format!(
        "needed by {} ({}); source: {}",
        first.needed_by,
        if first.by == "dlopen" {
            "opened by soname at `import onnxruntime`: onnxruntime/capi/_ld_preload.py"
        } else {
            "DT_NEEDED"
        },
        row.map_or("the provider's own ELF file", |r| r.source.as_str())
    ));
    Some(
        f.fix(fix(manifests, env, ext, &missing, cuda_major, cudnn_major))
            .build(),
    )
}

/// The finding's title: what is missing, and what the machine has instead where known.
fn title(
    ext: &crate::report::Extension,
    env: &PythonEnv,
    missing: &[(&LibraryLoad, Gap)],
    off_path_only: bool,
    built_for: &str,
) -> String {
    let first = missing.first().map_or("", |(l, _)| l.soname.as_str());
    let names: Vec<&str> = missing.iter().map(|(l, _)| l.soname.as_str()).collect();
    if off_path_only {
        format!(
            "onnxruntime-gpu {} in {} does not find {}: installed, but not where its CUDA provider looks",
            ext.version,
            env.path,
            names.join(", ")
        )
    } else {
        let held = match held_majors(missing) {
            (Some(c), Some(d)) => format!("this machine has CUDA {c} and cuDNN {d}"),
            (Some(c), None) => format!("this machine has CUDA {c}"),
            (None, Some(d)) => format!("this machine has cuDNN {d}"),
            (None, None) => format!(
                "{} is not on this machine",
                missing
                    .iter()
                    .find(|(_, g)| !matches!(g, Gap::OffPath(_)))
                    .map_or(first, |(l, _)| l.soname.as_str())
            ),
        };
        format!(
            "onnxruntime-gpu {} in {} is built for {built_for}, but {held}",
            ext.version, env.path
        )
    }
}

/// One evidence line per library not loaded.
fn gap_line(l: &LibraryLoad, g: &Gap) -> String {
    match g {
        Gap::OffPath(dirs) => format!(
            "{} ({}): a copy in {}, not on the provider's search path",
            l.soname,
            family::display(&l.family),
            dirs.join(", ")
        ),
        Gap::OtherMajor(others) => format!(
            "{} ({}): only another major here: {}",
            l.soname,
            family::display(&l.family),
            others.join(", ")
        ),
        Gap::Absent => format!(
            "{} ({}): no copy in any version",
            l.soname,
            family::display(&l.family)
        ),
    }
}

fn fix(
    manifests: &Manifests,
    env: &PythonEnv,
    ext: &crate::report::Extension,
    missing: &[(&LibraryLoad, Gap)],
    cuda_major: &str,
    cudnn_major: Option<&str>,
) -> String {
    let row = manifests.frameworks.onnxruntime_cuda(&ext.version);
    let preload = row.is_some_and(|r| r.preload_dlls);
    let mut dirs: Vec<String> = missing
        .iter()
        .filter_map(|(_, g)| match g {
            Gap::OffPath(d) => Some(d.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    dirs.sort();
    dirs.dedup();
    let in_env = |d: &String| env.site_packages.iter().any(|s| d.starts_with(s.as_str()));
    let mut steps: Vec<String> = Vec::new();
    let absent = missing.iter().any(|(_, g)| !matches!(g, Gap::OffPath(_)));
    if absent {
        // The release built for the majors this machine holds, when PyPI has one, first: the
        // libraries are there, the package is the one to change.
        let held = held_majors(missing);
        if let (Some(cuda), Some(cudnn)) = held
            && let Some(r) = manifests.frameworks.onnxruntime_for(&cuda, &cudnn)
            && !(cuda == cuda_major && Some(cudnn.as_str()) == cudnn_major)
        {
            let pin = pin(&r.last);
            steps.push(format!(
                "Install the onnxruntime-gpu release built for the CUDA {cuda} and cuDNN {cudnn} \
                 here: `pip install 'onnxruntime-gpu=={pin}'` (releases {} to {} are; \
                 frameworks.toml `onnxruntime_cuda`)",
                r.first, r.last
            ));
        }
        let extras = row.map(|r| r.extras.join(",")).filter(|e| !e.is_empty());
        let or = if steps.is_empty() { "" } else { "or " };
        steps.push(match extras {
            Some(extras) => format!(
                "{or}install the CUDA {cuda_major}{} libraries it was built for into {}: \
                 `pip install 'onnxruntime-gpu[{extras}]=={}'`, then call \
                 `onnxruntime.preload_dlls()` before creating the session",
                cudnn_major
                    .map(|d| format!(" and cuDNN {d}"))
                    .unwrap_or_default(),
                env.path,
                ext.version
            ),
            None => format!(
                "{or}install {} where the loader finds them (the distribution's or NVIDIA's \
                 packages, which register with ld.so)",
                wanted(missing, cuda_major, cudnn_major)
            ),
        });
        if let Some(s) = steps.first_mut()
            && let Some(c) = s.chars().next()
        {
            *s = c.to_uppercase().chain(s.chars().skip(1)).collect();
        }
    } else if preload && dirs.iter().all(in_env) {
        steps.push(
            "Call `onnxruntime.preload_dlls()` before creating the session (it loads the \
             nvidia-* wheels' copies by path), or `import torch` first where a torch of the same \
             CUDA major is installed"
                .to_string(),
        );
        steps.push(format!(
            "or put their folders on the loader path for the run: `LD_LIBRARY_PATH={}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}`",
            dirs.join(":")
        ));
    } else {
        steps.push(format!(
            "Put their folders on the loader path for the run: `LD_LIBRARY_PATH={}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}`{}",
            dirs.join(":"),
            if preload {
                ""
            } else {
                " (this release has no `onnxruntime.preload_dlls()`; 1.21 and later do)"
            }
        ));
    }
    format!("{}.", steps.join("; "))
}

/// What is to be installed, by family: "the CUDA 11 cudart, cuBLAS libraries and cuDNN 8".
fn wanted(missing: &[(&LibraryLoad, Gap)], cuda_major: &str, cudnn_major: Option<&str>) -> String {
    let mut cuda: Vec<&str> = Vec::new();
    let mut cudnn = false;
    for (l, g) in missing {
        if matches!(g, Gap::OffPath(_)) {
            continue;
        }
        if l.soname.starts_with("libcudnn") {
            cudnn = true;
        } else if !cuda.contains(&family::display(&l.family)) {
            cuda.push(family::display(&l.family));
        }
    }
    let cuda = (!cuda.is_empty()).then(|| {
        format!(
            "the CUDA {cuda_major} {} libraries it links",
            cuda.join(", ")
        )
    });
    let cudnn = cudnn.then(|| format!("cuDNN {}", cudnn_major.unwrap_or("?")));
    match (cuda, cudnn) {
        (Some(a), Some(b)) => format!("{a} and {b}"),
        (Some(a), None) => a,
        (None, Some(b)) => b,
        (None, None) => "its libraries".to_string(),
    }
}

/// The CUDA and cuDNN majors of the other copies found (`libcublasLt.so.12` beside a
/// `libcublasLt.so.11` need: CUDA 12), when the machine holds them.
fn held_majors(missing: &[(&LibraryLoad, Gap)]) -> (Option<String>, Option<String>) {
    let mut cuda = None;
    let mut cudnn = None;
    for (l, g) in missing {
        let Gap::OtherMajor(others) = g else {
            continue;
        };
        let major = others.iter().find_map(|o| {
            let name = Path::new(o.split(' ').next().unwrap_or(o)).file_name()?;
            soname_major(&name.to_string_lossy()).map(str::to_string)
        });
        if l.soname.starts_with("libcudnn.so.") {
            cudnn = cudnn.or(major);
        } else if l.soname.starts_with("libcudart.so.") || l.soname.starts_with("libcublas") {
            cuda = cuda.or(major);
        }
    }
    (cuda, cudnn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Extension, LibraryFamily, LosingCopy};

    fn load(soname: &str, family: LibraryFamily, others: &[&str]) -> LibraryLoad {
        LibraryLoad {
            family,
            soname: soname.into(),
            needed_by: "/venv/lib/python3.12/site-packages/onnxruntime/capi/libonnxruntime_providers_cuda.so".into(),
            by: "needed".into(),
            others: others
                .iter()
                .map(|p| LosingCopy {
                    path: (*p).into(),
                    ..LosingCopy::default()
                })
                .collect(),
            ..LibraryLoad::default()
        }
    }

    fn report(loads: Vec<LibraryLoad>) -> Report {
        let mut r = Report {
            python_envs: vec![PythonEnv {
                path: "/venv".into(),
                site_packages: vec!["/venv/lib/python3.12/site-packages".into()],
                extensions: vec![Extension {
                    name: "onnxruntime-gpu".into(),
                    version: "1.22.0".into(),
                    ..Extension::default()
                }],
                ..PythonEnv::default()
            }],
            ..Report::default()
        };
        r.libraries.loads = vec![FrameworkLoads {
            env: "/venv".into(),
            framework: ONNXRUNTIME.into(),
            basis: "elf".into(),
            libraries: loads,
        }];
        r
    }

    fn run(r: &Report) -> Vec<Finding> {
        findings(r, crate::manifest::embedded())
    }

    #[test]
    fn a_wheel_copy_off_the_search_path_is_a_warning_and_another_major_an_error() {
        let cudart = || {
            let mut l = load("libcudart.so.12", LibraryFamily::Cudart, &[]);
            l.path = Some("/usr/local/cuda/lib64/libcudart.so.12".into());
            l
        };
        let wheel = "/venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9";
        let r = report(vec![
            cudart(),
            load("libcudnn.so.9", LibraryFamily::Cudnn, &[wheel]),
        ]);
        let f = run(&r);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].fix
                .as_deref()
                .unwrap_or("")
                .contains("onnxruntime.preload_dlls()"),
            "{:?}",
            f[0].fix
        );
        let r = report(vec![
            cudart(),
            load(
                "libcudnn.so.9",
                LibraryFamily::Cudnn,
                &["/usr/lib/x86_64-linux-gnu/libcudnn.so.8"],
            ),
        ]);
        let f = run(&r);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            f[0].title.contains("built for CUDA 12 and cuDNN 9"),
            "{}",
            f[0].title
        );
        // Everything found: nothing to say.
        let r = report(vec![cudart()]);
        assert!(run(&r).is_empty());
    }

    #[test]
    fn what_torch_loads_first_serves_the_provider_and_another_torch_cuda_is_not_ours() {
        let mut r = report(vec![
            load("libcudart.so.12", LibraryFamily::Cudart, &[]),
            load("libcudnn.so.9", LibraryFamily::Cudnn, &[]),
        ]);
        let mut torch_loads = r.libraries.loads[0].clone();
        torch_loads.framework = "torch".into();
        for l in &mut torch_loads.libraries {
            l.path = Some(format!("/venv/nvidia/{}", l.soname));
        }
        r.libraries.loads.push(torch_loads);
        r.python_envs[0].frameworks = vec![crate::report::Framework {
            name: "torch".into(),
            variant: Some("cuda".into()),
            cuda: Some("12.8".into()),
            ..crate::report::Framework::default()
        }];
        assert!(run(&r).is_empty(), "import torch first serves it");
        r.libraries.loads.pop();
        r.python_envs[0].frameworks[0].cuda = Some("13.0".into());
        assert!(run(&r).is_empty(), "extension-cuda-mismatch's case");
    }

    #[test]
    fn soname_majors_and_versioned_files() {
        assert_eq!(soname_major("libcudart.so.11.0"), Some("11"));
        assert_eq!(soname_major("libcudnn.so.9"), Some("9"));
        assert!(of_soname("libcudnn.so.9.1.0", "libcudnn.so.9"));
        assert!(!of_soname("libcudart.so.12", "libcudart.so.1"));
    }
}

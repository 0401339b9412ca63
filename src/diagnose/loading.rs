//! Findings from the ld.so-order resolution of each framework's CUDA libraries
//! (`report.libraries.loads`, built by `probe::linkmap`): `library-not-found` and the general
//! `library-path-shadowing`.
//!
//! A copy "shadows" when the loader picks it, through `LD_LIBRARY_PATH` or an inherited
//! `DT_RPATH`, over the copy the framework ships (its pip wheel, its own folder) or the copy
//! shipped beside the library that needs it (the nvJitLink next to a cuSPARSE), and the two
//! differ in version. One finding per environment lists every family it touches, since one
//! variable is the cause. Fixes scope the variable for the run or put the wheel's folder first;
//! they never tell the user to delete a folder other libraries are loaded from.

use super::ids;
use std::path::Path;

use super::FindingBuilder;
use crate::framework::FrameworkName;
use crate::manifest::Manifests;
use crate::parse::libfamily as family;
use crate::report::{
    Finding, FrameworkLoads, LibraryFamily, LibraryLoad, LosingCopy, OwnerKind, PythonEnv, Report,
    Severity, framework_subject,
};
use crate::version::Version;

pub(super) fn findings(report: &Report, _: &Manifests) -> Vec<Finding> {
    let mut out = Vec::new();
    for env in &report.python_envs {
        let loads: Vec<&FrameworkLoads> = report
            .libraries
            .loads
            .iter()
            // A framework of the environment's (onnxruntime-gpu's provider, resolved too, is
            // judged by `onnxruntime.rs`: it searches no wheel folder by design).
            .filter(|l| l.env == env.path && env.frameworks.iter().any(|f| f.name == l.framework))
            .collect();
        for fl in &loads {
            out.extend(not_found(env, fl));
        }
        out.extend(shadowing(report, env, &loads));
        out.extend(loads.iter().filter_map(|fl| copies_differ(env, fl)));
    }
    out
}

/// Two files of one soname in one process (ld.so matches a load by path by file, not by
/// soname): shown by the resolution, a finding when their versions differ.
fn copies_differ(env: &PythonEnv, fl: &FrameworkLoads) -> Option<Finding> {
    let mut pairs: Vec<(&LibraryLoad, &LibraryLoad)> = Vec::new();
    for (i, a) in fl.libraries.iter().enumerate() {
        for b in &fl.libraries[i + 1..] {
            if a.soname == b.soname
                && a.path.is_some()
                && b.path.is_some()
                && a.path != b.path
                && let (Some(va), Some(vb)) = (&a.version, &b.version)
                && va != vb
            {
                pairs.push((a, b));
            }
        }
    }
    let (a, b) = *pairs.first()?;
    let names: Vec<&str> = pairs.iter().map(|(a, _)| a.soname.as_str()).collect();
    let mut f = FindingBuilder::new(
        &ids::LIBRARY_COPIES_DIFFER,
        Severity::Warning,
        format!(
            "{} in {} maps two versions of {}",
            fl.framework,
            env.path,
            names.join(", ")
        ),
    )
    .detail(format!(
        "One copy is loaded by path and the other found by soname, so ld.so maps both: a load by \
         path matches loaded objects by file, not by name. Symbols bind to the copy mapped first \
         ({} {}), so the library that was built against the other one may call into a version it \
         was not built for (\"undefined symbol\", CUBLAS_STATUS_NOT_INITIALIZED, wrong results).",
        a.soname,
        a.version.as_deref().unwrap_or("?")
    ))
    .subject(framework_subject(&env.path, &fl.framework));
    for (x, y) in &pairs {
        for l in [x, y] {
            f = f.evidence(format!(
                "{} {} from {} ({}, needed by {})",
                l.soname,
                l.version.as_deref().unwrap_or("?"),
                l.path.as_deref().unwrap_or("?"),
                l.via.as_deref().unwrap_or("?"),
                l.needed_by
            ));
        }
    }
    let by_search = [a, b]
        .into_iter()
        .find(|l| l.via.as_deref() != Some("preload"));
    let fix = match by_search.and_then(|l| l.via.as_deref()) {
        Some("LD_LIBRARY_PATH") => format!(
            "Take {} off LD_LIBRARY_PATH for this environment (or put the wheel's folder first), so \
             the copy found by soname is the one loaded by path.",
            by_search
                .and_then(|l| l.path.as_deref())
                .and_then(|p| Path::new(p).parent())
                .map_or_else(|| "the folder".to_string(), |d| d.display().to_string())
        ),
        _ => {
            "Keep one copy of the library on the search path: the one the framework loads by path."
                .to_string()
        }
    };
    Some(f.fix(fix).build())
}

/// Whether the resolution of this environment replaces the file-name based shadowing rule.
pub(super) fn resolved(report: &Report, env: &PythonEnv) -> bool {
    report.libraries.loads.iter().any(|l| l.env == env.path)
}

fn not_found(env: &PythonEnv, fl: &FrameworkLoads) -> Option<Finding> {
    let fw = env.frameworks.iter().find(|f| f.name == fl.framework)?;
    if fw.cuda.is_none() && fw.rocm.is_none() {
        return None;
    }
    // cuDNN has its own finding (`cudnn-missing`) with the framework's cuDNN need.
    let missing: Vec<&LibraryLoad> = fl
        .libraries
        .iter()
        .filter(|l| l.path.is_none() && l.family != LibraryFamily::Cudnn)
        // A need read from a module's DT_NEEDED is a fact; a modelled one (a run-time dlopen,
        // or modules that could not be read) is only trusted when the machine has that
        // library in some version: an absent family may be optional or bundled.
        .filter(|l| (fl.basis == "elf" && l.by == "needed") || !l.others.is_empty())
        .collect();
    let first = missing.first()?;
    let names: Vec<&str> = missing.iter().map(|l| l.soname.as_str()).collect();
    let mut f = FindingBuilder::new(
        &ids::LIBRARY_NOT_FOUND,
        Severity::Error,
        format!(
            "{} in {} needs {}, which no folder on its search path has",
            fw.name,
            env.path,
            names.join(", ")
        ),
    )
    .detail(format!(
        "The loader looks in RPATH, LD_LIBRARY_PATH, the module's RUNPATH, the ld.so cache and the \
         default folders, in that order; none has {}. Importing {} or first using the GPU fails \
         with \"{}: cannot open shared object file: No such file or directory\".",
        first.soname, fw.name, first.soname
    ))
    .subject(framework_subject(&env.path, &fw.name));
    let mut elsewhere: Vec<String> = Vec::new();
    for l in &missing {
        f = f.evidence(format!(
            "{} ({}) needed by {}",
            l.soname,
            family::display(&l.family),
            l.needed_by
        ));
        f = f.evidence(format!("searched: {}", l.searched.join(", ")));
        for o in &l.others {
            let same = Path::new(&o.path)
                .file_name()
                .is_some_and(|n| *n == *l.soname);
            if !same {
                f = f.evidence(format!(
                    "only another version: {} ({})",
                    o.path,
                    o.version.as_deref().unwrap_or("version unknown")
                ));
                continue;
            }
            f = f.evidence(format!("a copy off the search path: {}", o.path));
            if let Some(dir) = Path::new(&o.path).parent() {
                let dir = dir.display().to_string();
                if !elsewhere.contains(&dir) {
                    elsewhere.push(dir);
                }
            }
        }
    }
    let fix = if let Some(fix) = elsewhere
        .is_empty()
        .then(|| rocm_fix(fw, &names, &first.soname).or_else(|| separate_fix(fw, &missing)))
        .flatten()
    {
        fix
    } else if elsewhere.is_empty() {
        match FrameworkName::from_report(&fw.name) {
            Some(FrameworkName::Tensorflow) => format!(
                "Install the CUDA libraries this TensorFlow was built for: `pip install 'tensorflow[and-cuda]=={}'` (or the CUDA {} toolkit and cuDNN it names).",
                fw.version.as_deref().unwrap_or(""),
                fw.cuda.as_deref().unwrap_or("")
            ),
            _ => format!(
                "Install the CUDA {} libraries {name} was built for: reinstall it with its CUDA wheels (`pip install --force-reinstall {name}`), or install the CUDA {} toolkit.",
                fw.cuda.as_deref().unwrap_or(""),
                fw.cuda.as_deref().unwrap_or(""),
                name = fw.name
            ),
        }
    } else {
        format!(
            "Put the folder that has it on the search path for this run only: `LD_LIBRARY_PATH={}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}} python ...`, or install the matching wheel into {}.",
            elsewhere.join(":"),
            env.path
        )
    };
    Some(f.fix(fix).build())
}

/// The fix for NVIDIA libraries that neither the CUDA toolkit nor JetPack installs (cuDSS, NVPL),
/// which framework builds from outside PyPI link (NVIDIA/Isaac-GR00T#343: the Jetson AI Lab's
/// torch 2.8.0 needs `libcudss.so.0`): reinstalling the framework or a toolkit brings none of
/// them, so the fix installs each family. `None` when every missing library is a CUDA one.
fn separate_fix(fw: &crate::report::Framework, missing: &[&LibraryLoad]) -> Option<String> {
    let mut lines: Vec<String> = Vec::new();
    for l in missing {
        if let Some(how) = family::separate_install(&l.soname) {
            let line = format!("{} ({}): {how}", l.soname, family::display(&l.family));
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
    }
    (!lines.is_empty()).then(|| {
        format!(
            "{} needs NVIDIA libraries that neither the CUDA toolkit nor JetPack installs, and \
             reinstalling {} does not bring them; install each: {}. `ldconfig -p` lists a system \
             copy afterwards.",
            fw.name,
            fw.name,
            lines.join("; ")
        )
    })
}

/// The fix for a ROCm build's library that no folder has: a wheel that bundles its runtime but
/// not this library (ROCm/TheRock#4150: a ROCm 7.2 nightly without librocprofiler-sdk.so.1), or
/// a build that takes its ROCm libraries from the system's install (AMD's repo.radeon.com "lw"
/// wheels, a source build; ROCm/legacy-rocm-build#6053). `None` for a CUDA build.
fn rocm_fix(fw: &crate::report::Framework, names: &[&str], first: &str) -> Option<String> {
    fw.rocm.as_ref()?;
    let name = &fw.name;
    let missing = names.join(", ");
    let rocm = rocm_release(fw);
    Some(if fw.bundled_runtime.is_empty() {
        format!(
            "This {name} takes its ROCm libraries from the system's ROCm ({rocm}) rather than \
             bundling them: install the ROCm {rocm} packages that ship {missing} so the loader \
             finds them (`ldconfig -p | grep {first}` lists it afterwards), or use a {name} build \
             that bundles its ROCm libraries."
        )
    } else {
        format!(
            "This {name} bundles its ROCm runtime in its own lib folder but not {missing}: \
             install another build of {name} (the release, or a later nightly), or put the \
             folder of a ROCm {rocm} install that has it on the loader path."
        )
    })
}

/// The ROCm release of a ROCm build: "7.2.26015-fc0010cf6a" (the HIP version torch reports)
/// is ROCm 7.2.
fn rocm_release(fw: &crate::report::Framework) -> String {
    fw.rocm
        .as_deref()
        .unwrap_or("")
        .split('.')
        .take(2)
        .collect::<Vec<_>>()
        .join(".")
}

/// The copy a load should have used: the framework's wheel (or own folder) copy, else the copy
/// beside the library that needs it.
fn reference<'a>(env: &PythonEnv, load: &'a LibraryLoad) -> Option<&'a LosingCopy> {
    let in_env = |p: &str| {
        env.site_packages
            .iter()
            .any(|s| Path::new(p).starts_with(s))
    };
    load.others
        .iter()
        .find(|o| matches!(o.owner.kind, OwnerKind::Pip | OwnerKind::Bundled) && in_env(&o.path))
        .or_else(|| {
            let beside = Path::new(&load.needed_by).parent()?;
            load.others
                .iter()
                .find(|o| Path::new(&o.path).parent() == Some(beside))
        })
}

struct Shadow<'a> {
    framework: &'a str,
    load: &'a LibraryLoad,
    reference: &'a LosingCopy,
    older: bool,
}

fn shadowing(report: &Report, env: &PythonEnv, loads: &[&FrameworkLoads]) -> Option<Finding> {
    let shadows = shadows(report, env, loads);
    let first = shadows.first()?;
    let any_older = shadows.iter().any(|s| s.older);
    let mut frameworks: Vec<&str> = shadows.iter().map(|s| s.framework).collect();
    frameworks.sort_unstable();
    frameworks.dedup();
    let mut f = FindingBuilder::new(
        &ids::LIBRARY_PATH_SHADOWING,
        if any_older {
            Severity::Error
        } else {
            Severity::Warning
        },
        shadowing_title(env, &shadows, first, &frameworks),
    )
    .detail(format!(
        "The loader searches LD_LIBRARY_PATH (and an inherited RPATH) before a module's own \
         RUNPATH, so {} loads these copies instead of the ones shipped with it.{}",
        frameworks.join(" and "),
        if any_older {
            " A copy older than the one it was built with breaks it: missing symbols \
             (\"undefined symbol: __nvJitLinkAddData_12_1, version libnvJitLink.so.12\") or a \
             version check (\"cuDNN version incompatibility\")."
        } else {
            ""
        }
    ));
    for line in shadow_evidence(&shadows) {
        f = f.evidence(line);
    }
    for fw in &frameworks {
        f = f.subject(framework_subject(&env.path, fw));
    }
    if shadows
        .iter()
        .any(|s| s.load.family == LibraryFamily::Cudnn)
    {
        f = f.explains(&ids::CUDNN_VERSION_MISMATCH);
    }
    Some(f.fix(shadowing_fix(report, &shadows)).build())
}

/// Each library a framework takes from LD_LIBRARY_PATH (or an inherited RPATH) in another
/// release than its own copy. The copy that breaks leads: an older one first, and among those
/// the one another CUDA library needs (an old nvJitLink under a new cuSPARSE: "undefined symbol
/// ... libnvJitLink.so.12"), before one the framework's own modules need (cudart).
fn shadows<'r>(
    report: &Report,
    env: &'r PythonEnv,
    loads: &[&'r FrameworkLoads],
) -> Vec<Shadow<'r>> {
    let mut shadows: Vec<Shadow> = Vec::new();
    for fl in loads {
        for load in &fl.libraries {
            if !matches!(load.via.as_deref(), Some("LD_LIBRARY_PATH" | "RPATH")) {
                continue;
            }
            // A copy whose missing symbols were read is `library-symbol-missing`'s to report.
            if super::symbols::covers(report, &env.path, load) {
                continue;
            }
            let Some(reference) = reference(env, load) else {
                continue;
            };
            let (Some(got), Some(want)) = (
                load.version.as_deref().and_then(Version::parse),
                reference.version.as_deref().and_then(Version::parse),
            ) else {
                continue;
            };
            if same_release(&got, &want) {
                continue;
            }
            shadows.push(Shadow {
                framework: &fl.framework,
                load,
                reference,
                older: got < want,
            });
        }
    }
    shadows.sort_by_key(|s| {
        let under_cuda_lib = Path::new(&s.load.needed_by)
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| family::of(n).is_some());
        (!s.older, !under_cuda_lib)
    });
    shadows
}

/// One copy named with both versions, or the families when there are several.
fn shadowing_title(
    env: &PythonEnv,
    shadows: &[Shadow<'_>],
    first: &Shadow<'_>,
    frameworks: &[&str],
) -> String {
    if shadows.len() == 1 {
        return format!(
            "{} puts {} {} ahead of the {} that {} in {} ships",
            first.load.via.as_deref().unwrap_or("LD_LIBRARY_PATH"),
            family::display(&first.load.family),
            first.load.version.as_deref().unwrap_or("?"),
            first.reference.version.as_deref().unwrap_or("?"),
            frameworks.join(", "),
            env.path
        );
    }
    let mut families: Vec<&str> = shadows
        .iter()
        .map(|s| family::display(&s.load.family))
        .collect();
    families.dedup();
    format!(
        "LD_LIBRARY_PATH puts other copies of {} ahead of the ones {} in {} ships",
        families.join(", "),
        frameworks.join(", "),
        env.path
    )
}

/// One line per framework, family and folder: cuDNN's eight sub-libraries are one fact.
fn shadow_evidence(shadows: &[Shadow<'_>]) -> Vec<String> {
    let mut said: Vec<(&str, &str, Option<&Path>)> = Vec::new();
    let mut lines = Vec::new();
    for s in shadows {
        let dir = s.load.path.as_deref().and_then(|p| Path::new(p).parent());
        let key = (s.framework, s.load.family.as_str(), dir);
        if said.contains(&key) {
            continue;
        }
        said.push(key);
        let more = shadows
            .iter()
            .filter(|o| {
                o.framework == s.framework
                    && o.load.family == s.load.family
                    && o.load.path.as_deref().and_then(|p| Path::new(p).parent()) == dir
            })
            .count()
            .saturating_sub(1);
        lines.push(format!(
            "{}: {} loads {} ({}, via {}); its own copy is {} ({}){}",
            s.framework,
            s.load.soname,
            s.load.path.as_deref().unwrap_or(""),
            s.load.version.as_deref().unwrap_or("?"),
            s.load.via.as_deref().unwrap_or(""),
            s.reference.path,
            s.reference.version.as_deref().unwrap_or("?"),
            if more > 0 {
                format!(
                    "; and {more} more {} libraries from that folder",
                    family::display(&s.load.family)
                )
            } else {
                String::new()
            }
        ));
    }
    lines
}

/// The scoped fix: drop the shadowing folders from LD_LIBRARY_PATH for the run when they give
/// the frameworks nothing else; otherwise put the wheels' folders first.
fn shadowing_fix(report: &Report, shadows: &[Shadow<'_>]) -> String {
    let shadow_dirs: Vec<String> = dirs(shadows.iter().filter_map(|s| s.load.path.as_deref()));
    let wheel_dirs: Vec<String> = dirs(shadows.iter().map(|s| s.reference.path.as_str()));
    let serves_other = report.libraries.loads.iter().any(|fl| {
        fl.libraries.iter().any(|l| {
            l.via.as_deref() == Some("LD_LIBRARY_PATH")
                && !shadows.iter().any(|s| std::ptr::eq(s.load, l))
                && l.path
                    .as_deref()
                    .and_then(|p| Path::new(p).parent())
                    .is_some_and(|d| shadow_dirs.contains(&d.display().to_string()))
        })
    });
    let ld_path: Vec<String> = report
        .environment
        .iter()
        .find(|v| v.name == "LD_LIBRARY_PATH")
        .map(|v| v.value.split(':').map(str::to_string).collect())
        .unwrap_or_default();
    let rest: Vec<&String> = ld_path
        .iter()
        .filter(|d| !d.is_empty() && !shadow_dirs.iter().any(|s| same_dir(s, d)))
        .collect();
    if serves_other {
        format!(
            "Put the wheels' folders first for the run: `LD_LIBRARY_PATH={}:$LD_LIBRARY_PATH python ...` (the other libraries in {} are still needed, so do not remove that folder).",
            wheel_dirs.join(":"),
            shadow_dirs.join(", ")
        )
    } else if rest.is_empty() {
        format!(
            "Run without it: `env -u LD_LIBRARY_PATH python ...`; then drop {} from where LD_LIBRARY_PATH is set (~/.bashrc, module files, conda activate scripts).",
            shadow_dirs.join(", ")
        )
    } else {
        format!(
            "Run with {} left out: `LD_LIBRARY_PATH={} python ...`; then drop it from where LD_LIBRARY_PATH is set (~/.bashrc, module files, conda activate scripts).",
            shadow_dirs.join(", "),
            rest.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(":")
        )
    }
}

fn dirs<'a>(paths: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in paths {
        if let Some(d) = Path::new(p).parent() {
            let d = d.display().to_string();
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    out
}

fn same_dir(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// Equal at the precision both give: `9.1.0` is the release `9.1.0.70`.
fn same_release(a: &Version, b: &Version) -> bool {
    let parts = |v: &Version| v.as_str().split('.').count();
    let n = parts(a).min(parts(b)).min(3);
    let cut = |v: &Version| v.as_str().split('.').take(n).collect::<Vec<_>>().join(".");
    Version::parse(&cut(a)) == Version::parse(&cut(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(path: &str, via: &str, version: &str) -> LibraryLoad {
        LibraryLoad {
            family: "cublas".into(),
            soname: "libcublasLt.so.12".into(),
            needed_by: "/venv/site-packages/nvidia/cublas/lib/libcublas.so.12".into(),
            by: if via == "preload" {
                "preload"
            } else {
                "needed"
            }
            .into(),
            path: Some(path.into()),
            via: Some(via.into()),
            version: Some(version.into()),
            ..LibraryLoad::default()
        }
    }

    fn shadowed(family: &str, soname: &str, needed_by: &str, got: &str, want: &str) -> LibraryLoad {
        LibraryLoad {
            family: family.into(),
            soname: soname.into(),
            needed_by: needed_by.into(),
            by: "needed".into(),
            path: Some(format!("/usr/local/cuda-12.1/lib64/{soname}")),
            via: Some("LD_LIBRARY_PATH".into()),
            version: Some(got.into()),
            others: vec![LosingCopy {
                path: format!("/venv/site-packages/nvidia/{family}/lib/{soname}"),
                version: Some(want.into()),
                owner: crate::report::LibraryOwner {
                    kind: "pip".into(),
                    ..crate::report::LibraryOwner::default()
                },
                ..LosingCopy::default()
            }],
            ..LibraryLoad::default()
        }
    }

    #[test]
    fn the_evidence_leads_with_the_copy_that_breaks_not_cudart() {
        let env = PythonEnv {
            path: "/venv".into(),
            site_packages: vec!["/venv/site-packages".into()],
            ..PythonEnv::default()
        };
        let fl = FrameworkLoads {
            env: "/venv".into(),
            framework: "torch".into(),
            basis: "elf".into(),
            libraries: vec![
                shadowed(
                    "cudart",
                    "libcudart.so.12",
                    "/venv/site-packages/torch/lib/libtorch_global_deps.so",
                    "12.1.105",
                    "12.4.127",
                ),
                shadowed(
                    "nvjitlink",
                    "libnvJitLink.so.12",
                    "/venv/site-packages/nvidia/cusparse/lib/libcusparse.so.12",
                    "12.1.105",
                    "12.4.127",
                ),
            ],
        };
        let f = shadowing(&Report::default(), &env, &[&fl]).expect("a finding");
        assert!(
            f.evidence[0].contains("libnvJitLink.so.12"),
            "{:#?}",
            f.evidence
        );
        assert!(f.title.contains("nvJitLink"), "{}", f.title);
    }

    #[test]
    fn two_copies_are_a_finding_only_when_their_versions_differ() {
        let env = PythonEnv {
            path: "/venv".into(),
            ..PythonEnv::default()
        };
        let mut fl = FrameworkLoads {
            env: "/venv".into(),
            framework: "jax".into(),
            basis: "elf".into(),
            libraries: vec![
                copy(
                    "/usr/local/cuda-12.2/lib64/libcublasLt.so.12",
                    "LD_LIBRARY_PATH",
                    "12.2.5.6",
                ),
                copy(
                    "/venv/site-packages/nvidia/cublas/lib/libcublasLt.so.12",
                    "preload",
                    "12.8.4.1",
                ),
            ],
        };
        let f = copies_differ(&env, &fl).expect("a finding");
        assert_eq!(f.id, "library-copies-differ");
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.evidence.iter().any(|e| e.contains("12.2.5.6")));
        assert!(
            f.fix
                .as_deref()
                .unwrap()
                .contains("/usr/local/cuda-12.2/lib64"),
            "{:?}",
            f.fix
        );
        fl.libraries[1].version = Some("12.2.5.6".into());
        assert!(copies_differ(&env, &fl).is_none());
    }
}

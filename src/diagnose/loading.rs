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
    Finding, FrameworkLoads, LibraryLoad, LosingCopy, PythonEnv, Report, Severity,
    framework_subject,
};
use crate::version::Version;

pub(super) fn findings(report: &Report, _: &Manifests) -> Vec<Finding> {
    let mut out = Vec::new();
    for env in &report.python_envs {
        let loads: Vec<&FrameworkLoads> = report
            .libraries
            .loads
            .iter()
            .filter(|l| l.env == env.path)
            .collect();
        for fl in &loads {
            out.extend(not_found(env, fl));
        }
        out.extend(shadowing(report, env, &loads));
    }
    out
}

/// Whether the resolution of this environment replaces the file-name based shadowing rule.
pub(super) fn resolved(report: &Report, env: &PythonEnv) -> bool {
    report.libraries.loads.iter().any(|l| l.env == env.path)
}

fn not_found(env: &PythonEnv, fl: &FrameworkLoads) -> Option<Finding> {
    let fw = env.frameworks.iter().find(|f| f.name == fl.framework)?;
    fw.cuda.as_ref()?;
    // cuDNN has its own finding (`cudnn-missing`) with the framework's cuDNN need.
    let missing: Vec<&LibraryLoad> = fl
        .libraries
        .iter()
        .filter(|l| l.path.is_none() && l.family != "cudnn")
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
    let fix = if elsewhere.is_empty() {
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
        .find(|o| matches!(o.owner.kind.as_str(), "pip" | "bundled") && in_env(&o.path))
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
    let mut shadows: Vec<Shadow> = Vec::new();
    for fl in loads {
        for load in &fl.libraries {
            if !matches!(load.via.as_deref(), Some("LD_LIBRARY_PATH" | "RPATH")) {
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
    let first = shadows.first()?;
    let any_older = shadows.iter().any(|s| s.older);
    let mut families: Vec<&str> = shadows
        .iter()
        .map(|s| family::display(&s.load.family))
        .collect();
    families.dedup();
    let mut frameworks: Vec<&str> = shadows.iter().map(|s| s.framework).collect();
    frameworks.sort_unstable();
    frameworks.dedup();
    let shadow_dirs: Vec<String> = dirs(shadows.iter().filter_map(|s| s.load.path.as_deref()));
    let wheel_dirs: Vec<String> = dirs(shadows.iter().map(|s| s.reference.path.as_str()));
    let got = first.load.version.as_deref().unwrap_or("?");
    let want = first.reference.version.as_deref().unwrap_or("?");
    let title = if shadows.len() == 1 {
        format!(
            "{} puts {} {got} ahead of the {want} that {} in {} ships",
            first.load.via.as_deref().unwrap_or("LD_LIBRARY_PATH"),
            family::display(&first.load.family),
            frameworks.join(", "),
            env.path
        )
    } else {
        format!(
            "LD_LIBRARY_PATH puts other copies of {} ahead of the ones {} in {} ships",
            families.join(", "),
            frameworks.join(", "),
            env.path
        )
    };
    let mut f = FindingBuilder::new(
        &ids::LIBRARY_PATH_SHADOWING,
        if any_older {
            Severity::Error
        } else {
            Severity::Warning
        },
        title,
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
    // One line per framework, family and folder: cuDNN's eight sub-libraries are one fact.
    let mut said: Vec<(&str, &str, Option<&Path>)> = Vec::new();
    for s in &shadows {
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
        f = f.evidence(format!(
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
    // The scoped fix: drop the shadowing folders from LD_LIBRARY_PATH for the run when they
    // give the frameworks nothing else; otherwise put the wheels' folders first.
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
    let fix = if serves_other {
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
    };
    for fw in &frameworks {
        f = f.subject(framework_subject(&env.path, fw));
    }
    if shadows.iter().any(|s| s.load.family == "cudnn") {
        f = f.explains(&ids::CUDNN_VERSION_MISMATCH);
    }
    Some(f.fix(fix).build())
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

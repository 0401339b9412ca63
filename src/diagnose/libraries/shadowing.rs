//! `library-path-shadowing`: a copy of a library a wheel ships (cuDNN, NCCL, cuBLAS, the CUDA
//! runtime) found on `LD_LIBRARY_PATH`, which the loader searches before the wheel's RUNPATH.
//! Only used when the loader's own resolution is missing (`loading` says it better then).

use std::path::Path;

use super::in_env;
use super::pins::same_release;
use crate::diagnose::FindingBuilder;
use crate::diagnose::ids;
use crate::report::{Finding, Framework, Library, PythonEnv, Report, Severity, framework_subject};
use crate::version::Version;

/// Families a wheel ships and `LD_LIBRARY_PATH` can shadow.
fn families(report: &Report) -> [(&'static str, &Vec<Library>); 4] {
    [
        ("cuDNN", &report.libraries.cudnn),
        ("NCCL", &report.libraries.nccl),
        ("cuBLAS", &report.libraries.cublas),
        ("CUDA runtime", &report.libraries.cudart),
    ]
}

pub(super) fn shadowing(report: &Report, env: &PythonEnv) -> Vec<Finding> {
    let users: Vec<&Framework> = env.frameworks.iter().filter(|f| f.cuda.is_some()).collect();
    if users.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (family, libs) in families(report) {
        let Some(wheel) = libs
            .iter()
            .find(|l| l.origin == "pip" && in_env(env, &l.path))
        else {
            continue;
        };
        let Some(shadow) = libs
            .iter()
            .filter(|l| l.loader_origin.as_deref() == Some("LD_LIBRARY_PATH"))
            .min_by_key(|l| l.loader_rank)
        else {
            continue;
        };
        let (Some(wv), Some(sv)) = (
            wheel.version.as_deref().and_then(Version::parse),
            shadow.version.as_deref().and_then(Version::parse),
        ) else {
            continue;
        };
        if wv.major() != sv.major() || same_release(&wv, &sv) {
            // Another major has another soname: it cannot be picked in place of the wheel's.
            continue;
        }
        let older = sv < wv;
        let names: Vec<String> = users.iter().map(|f| f.name.clone()).collect();
        let mut f = FindingBuilder::new(
            &ids::LIBRARY_PATH_SHADOWING,
            if older { Severity::Error } else { Severity::Warning },
            format!("LD_LIBRARY_PATH puts {family} {sv} ahead of the {wv} that {} in {} ships", names.join(", "), env.path),
        )
        .detail(format!(
            "The loader searches LD_LIBRARY_PATH before a wheel's RUNPATH, so {} loads {} instead \
             of its own copy.{}",
            names.join(" and "),
            shadow.path,
            if older { " That copy is older than the one it was built with, which breaks it." } else { "" }
        ))
        .evidence(format!("LD_LIBRARY_PATH: {} ({family} {sv})", shadow.path))
        .evidence(format!("wheel: {} ({family} {wv})", wheel.path))
        .fix(format!(
            "Remove {} from LD_LIBRARY_PATH (check ~/.bashrc, module files and conda activate scripts), or unset LD_LIBRARY_PATH when running {}.",
            Path::new(&shadow.path).parent().map(|p| p.display().to_string()).unwrap_or_default(),
            names.join("/")
        ));
        for fw in &users {
            f = f.subject(framework_subject(&env.path, &fw.name));
        }
        if family == "cuDNN" {
            f = f.explains(&ids::CUDNN_VERSION_MISMATCH);
        }
        out.push(f.build());
    }
    out
}

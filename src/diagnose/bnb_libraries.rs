//! bitsandbytes' native library against torch's CUDA: `extension-cuda-mismatch`.
//!
//! bitsandbytes ships one native library per CUDA version (`libbitsandbytes_cuda128.so`) and
//! loads the one named by torch's CUDA (`torch.version.cuda`), or by `BNB_CUDA_VERSION` when set
//! (`get_cuda_bnb_library_path` in its `cextension.py`). Before 0.50.0 it loads exactly that
//! one: a release without it raises "Configured CUDA binary not found at
//! .../libbitsandbytes_cuda129.so" (0.46; before, "Could not find the bitsandbytes CUDA binary"
//! and the CPU library, "compiled without GPU support"), bitsandbytes-foundation/bitsandbytes#1688
//! with torch's CUDA 12.9 and 0.46.0. From 0.50.0 it takes another library of the same major
//! (the highest at or below torch's, else the lowest above), never one of another major.
//!
//! Both directions fail: torch's CUDA newer than every library of the release (12.9 under
//! 0.46.0, 13.0 under 0.47.0) and one the release no longer builds (11.7 from 0.46.0). The
//! libraries present are read from the package's RECORD (`Extension::cuda_libraries`); which
//! release carries which, and which falls back, is `extension-arch.toml`'s
//! `[[bitsandbytes_libraries]]`, generated from bitsandbytes' build workflow and loader at its
//! tags.

use super::{FindingBuilder, env_var, ids};
use crate::manifest::Manifests;
use crate::report::{Finding, PythonEnv, Report, Severity, framework_subject};
use crate::version::Version;

/// The distribution name the probe gives bitsandbytes.
const BITSANDBYTES: &str = "bitsandbytes";
/// The variable that names the library's CUDA instead of torch's (`"128"`: CUDA 12.8).
const OVERRIDE: &str = "BNB_CUDA_VERSION";

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    if report.nvidia_gpus().next().is_none() {
        return Vec::new();
    }
    let over = env_var(report, OVERRIDE).filter(|v| !v.trim().is_empty());
    report
        .python_envs
        .iter()
        .filter_map(|env| missing_library(env, manifests, over))
        .collect()
}

/// "128" (bitsandbytes' spelling in library names and `BNB_CUDA_VERSION`) as CUDA 12.8.
fn from_digits(digits: &str) -> Option<Version> {
    let digits = digits.trim();
    if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (major, minor) = digits.split_at(digits.len() - 1);
    Version::parse(&format!("{major}.{minor}"))
}

/// CUDA 12.8 as bitsandbytes spells it in its library names ("128").
fn digits(v: &Version) -> String {
    format!("{}{}", v.major(), v.minor())
}

fn missing_library(env: &PythonEnv, manifests: &Manifests, over: Option<&str>) -> Option<Finding> {
    let bnb = env.extensions.iter().find(|e| e.name == BITSANDBYTES)?;
    let torch = env
        .frameworks
        .iter()
        .find(|f| f.name == "torch" && f.variant.as_deref() == Some("cuda"))?;
    let torch_cuda = Version::parse(torch.cuda.as_deref()?)?;
    let torch_cuda = Version::parse(&torch_cuda.major_minor())?;
    let row = manifests
        .extension_arch
        .bitsandbytes_libraries(&bnb.version);
    // The libraries the installed files hold, else those its release's wheel carries.
    let have: Vec<Version> = if bnb.cuda_libraries.is_empty() {
        row?.cuda.iter().filter_map(|c| Version::parse(c)).collect()
    } else {
        bnb.cuda_libraries
            .iter()
            .filter_map(|c| Version::parse(c))
            .collect()
    };
    let wanted = match over {
        Some(v) => from_digits(v)?,
        None => torch_cuda.clone(),
    };
    if have.iter().any(|h| h.major_minor() == wanted.major_minor()) {
        return None;
    }
    // 0.50.0 on: another library of the same major serves, unless the variable asked for one.
    let falls_back = over.is_none() && row.is_some_and(|r| r.same_major_fallback);
    if falls_back && have.iter().any(|h| h.major() == wanted.major()) {
        return None;
    }
    let name = format!("libbitsandbytes_cuda{}.so", digits(&wanted));
    let listed: Vec<&str> = have.iter().map(Version::as_str).collect();
    let why = match over {
        Some(v) => format!("{OVERRIDE}={v} asks for CUDA {}", wanted.major_minor()),
        None => format!(
            "{} {} is built for CUDA {}",
            torch.name,
            torch.version.as_deref().unwrap_or_default(),
            torch_cuda.major_minor()
        ),
    };
    let mut f = FindingBuilder::new(
        &ids::EXTENSION_CUDA_MISMATCH,
        Severity::Error,
        format!(
            "bitsandbytes {} in {} has no library for CUDA {} ({why}): its GPU functions fail",
            bnb.version,
            env.path,
            wanted.major_minor()
        ),
    )
    .detail(
        "bitsandbytes carries one native library per CUDA version and loads the one of torch's \
         CUDA (or of BNB_CUDA_VERSION); without it, it stops with \"Configured CUDA binary not \
         found at .../libbitsandbytes_cudaXYZ.so\", or (before 0.46) falls back to its CPU \
         library: \"The installed version of bitsandbytes was compiled without GPU support. \
         8-bit optimizers, 8-bit multiplication, and GPU quantization are unavailable.\"",
    )
    .evidence(format!(
        "{}: {name} is not there; it has libraries for CUDA {} ({})",
        bnb.source,
        listed.join(", "),
        if bnb.cuda_libraries.is_empty() {
            "its release's wheel, extension-arch.toml"
        } else {
            "its RECORD"
        }
    ))
    .evidence(format!(
        "{} {}: CUDA {} ({})",
        torch.name,
        torch.version.as_deref().unwrap_or_default(),
        torch_cuda.major_minor(),
        torch.source
    ));
    if let Some(r) = row {
        f = f.evidence(format!(
            "bitsandbytes {}..{}: {}",
            r.first, r.last, r.source
        ));
    }
    Some(
        f.fix(fix(manifests, &wanted, &have, over.is_some()))
            .subject(framework_subject(&env.path, BITSANDBYTES))
            .build(),
    )
}

/// The way out: the first release whose wheel carries the wanted library, and meanwhile the
/// variable naming the closest library of the same major the installed release has.
fn fix(manifests: &Manifests, wanted: &Version, have: &[Version], over: bool) -> String {
    let first = manifests
        .extension_arch
        .bitsandbytes_libraries
        .iter()
        .find(|r| {
            r.cuda
                .iter()
                .any(|c| Version::parse(c).is_some_and(|c| c.major_minor() == wanted.major_minor()))
        });
    let fallback = manifests
        .extension_arch
        .bitsandbytes_libraries
        .iter()
        .find(|r| r.same_major_fallback);
    let mut steps = Vec::new();
    if over {
        steps.push(format!(
            "Unset {OVERRIDE} (`unset {OVERRIDE}`), or set it to a CUDA version the release has a \
             library for"
        ));
    }
    match first {
        Some(r) => steps.push(format!(
            "Install a bitsandbytes release built for CUDA {}: `pip install -U \"bitsandbytes>={}\"` \
             (its wheels carry libbitsandbytes_cuda{}.so from {} on)",
            wanted.major_minor(),
            r.first,
            digits(wanted),
            r.first,
        )),
        None => steps.push(format!(
            "No bitsandbytes release read carries a CUDA {} library{}",
            wanted.major_minor(),
            fallback.map_or(String::new(), |r| format!(
                "; from {} on it loads another library of the same major: `pip install -U \
                 \"bitsandbytes>={}\"`",
                r.first, r.first
            ))
        )),
    }
    let below = have
        .iter()
        .filter(|h| h.major() == wanted.major() && *h <= wanted)
        .max()
        .or_else(|| have.iter().filter(|h| h.major() == wanted.major()).min());
    if !over && let Some(b) = below {
        steps.push(format!(
            "meanwhile, `export {OVERRIDE}={}` loads its CUDA {} library (the same major's, which \
             torch's CUDA runtime serves)",
            digits(b),
            b.major_minor()
        ));
    }
    format!("{}.", steps.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{EnvVar, Extension, Framework, Gpu};

    fn report(torch_cuda: &str, bnb: &str, libs: &[&str]) -> Report {
        let mut r = Report::default();
        r.gpus.push(Gpu {
            name: Some("NVIDIA L40S".into()),
            compute_capability: Some("8.9".into()),
            ..Gpu::default()
        });
        r.python_envs.push(PythonEnv {
            path: "/venv".into(),
            frameworks: vec![Framework {
                name: "torch".into(),
                version: Some(format!("2.8.0+cu{}", torch_cuda.replace('.', ""))),
                cuda: Some(torch_cuda.into()),
                variant: Some("cuda".into()),
                ..Framework::default()
            }],
            extensions: vec![Extension {
                name: "bitsandbytes".into(),
                version: bnb.into(),
                cuda_libraries: libs.iter().map(|s| (*s).to_string()).collect(),
                ..Extension::default()
            }],
            ..PythonEnv::default()
        });
        r
    }

    fn run(r: &Report) -> Vec<Finding> {
        findings(r, crate::manifest::embedded())
    }

    const BNB_0460: [&str; 9] = [
        "11.8", "12.0", "12.1", "12.2", "12.3", "12.4", "12.5", "12.6", "12.8",
    ];

    #[test]
    fn a_torch_cuda_newer_than_every_library_of_the_release_is_a_mismatch() {
        let f = run(&report("12.9", "0.46.0", &BNB_0460));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].id, "extension-cuda-mismatch");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].title.contains("CUDA 12.9"), "{}", f[0].title);
        let fix = f[0].fix.as_deref().unwrap_or_default();
        // 0.46.1 is the first release whose workflow builds 12.9 (extension-arch.toml).
        assert!(fix.contains("bitsandbytes>=0.46.1"), "{fix}");
        assert!(fix.contains("BNB_CUDA_VERSION=128"), "{fix}");
    }

    #[test]
    fn a_torch_cuda_the_release_dropped_is_a_mismatch_too() {
        // 0.46.0 stopped building CUDA 11.7: a cu117 torch finds no library.
        let f = run(&report("11.7", "0.46.0", &BNB_0460));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].id, "extension-cuda-mismatch");
        let fix = f[0].fix.as_deref().unwrap_or_default();
        assert!(fix.contains("bitsandbytes>=0.43.1"), "{fix}");
        assert!(fix.contains("BNB_CUDA_VERSION=118"), "{fix}");
    }

    #[test]
    fn the_library_of_torchs_cuda_present_is_no_finding() {
        let mut libs = BNB_0460.to_vec();
        libs.push("12.9");
        assert!(run(&report("12.9", "0.47.0", &libs)).is_empty());
    }

    #[test]
    fn a_release_that_falls_back_within_the_major_is_no_finding() {
        // 0.50.0 builds 12.8 but not 12.9, and loads 12.8 for a cu129 torch.
        let libs = ["11.8", "12.1", "12.4", "12.6", "12.8", "13.0", "13.2"];
        assert!(run(&report("12.9", "0.50.0", &libs)).is_empty());
        // Never across majors: a CUDA 11 torch needs the 11.8 library (present here).
        assert!(run(&report("11.7", "0.50.0", &libs)).is_empty());
        let twelve = ["12.1", "12.4"];
        assert_eq!(run(&report("11.8", "0.50.0", &twelve)).len(), 1);
    }

    #[test]
    fn the_override_names_the_library_loaded() {
        let mut r = report("12.9", "0.46.0", &BNB_0460);
        r.environment.push(EnvVar {
            name: "BNB_CUDA_VERSION".into(),
            value: "128".into(),
        });
        assert!(run(&r).is_empty());
        r.environment[0].value = "127".into();
        let f = run(&r);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].title.contains("BNB_CUDA_VERSION=127"),
            "{}",
            f[0].title
        );
    }

    #[test]
    fn without_its_files_the_release_row_says_which_libraries_it_has() {
        assert_eq!(run(&report("12.9", "0.46.0", &[])).len(), 1);
        assert!(run(&report("12.9", "0.47.0", &[])).is_empty());
    }

    #[test]
    fn no_nvidia_gpu_no_finding() {
        let mut r = report("12.9", "0.46.0", &BNB_0460);
        r.gpus.clear();
        assert!(run(&r).is_empty());
    }
}

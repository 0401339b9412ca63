//! Extension packages against the framework they were built for: a package that ships its own
//! compiled torch operators (vLLM, xformers, torchvision, torchaudio, ...) pins the torch release
//! its binaries were built against, and another torch in the environment fails to load them
//! ("undefined symbol" from `_C.abi3.so`, "operator torchvision::nms does not exist",
//! vllm-project/vllm#27228: vllm 0.11.0 with torch 2.9.0). Findings: `extension-torch-mismatch`,
//! and `extension-cuda-mismatch` for an extension whose compiled files need another CUDA
//! major's libraries than the torch build.
//!
//! The range is the package's own `Requires-Dist` (its wheel's metadata), read by the probe into
//! `python_envs[].extensions`; the installed side is the environment's torch build or the other
//! extension's version.

use super::libraries::spec_allows;
use super::{FindingBuilder, ids};
use crate::manifest::Manifests;
use crate::report::{Finding, PythonEnv, Report, Severity};
use crate::version::Version;

pub(super) fn findings(report: &Report, _manifests: &Manifests) -> Vec<Finding> {
    report
        .python_envs
        .iter()
        .flat_map(|env| {
            mismatch(env)
                .into_iter()
                .chain(cuda_major(env))
                .chain(torch_symbols(env))
        })
        .collect()
}

/// An extension whose compiled files need a torch C++ symbol that the torch beside it does not
/// define: built against another torch release, or with the other C++ ABI (torch's wheels use
/// the C++11 ABI from 2.7.0, and 2.6.0's cu126 builds already; pytorch/pytorch#152790). The
/// import fails with "undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationESs"
/// (Dao-AILab/flash-attention#1644) or its C++11 spelling (huggingface/open-r1#684). Read from
/// the files' own symbol tables (`probe::python::extensions`), so it holds whatever the
/// package's metadata pins, or does not.
fn torch_symbols(env: &PythonEnv) -> Vec<Finding> {
    let torch = env
        .frameworks
        .iter()
        .find(|f| f.name == "torch" && f.variant.as_deref() != Some("rocm"));
    let torch_version = torch.and_then(|t| t.version.as_deref()).unwrap_or("torch");
    env.extensions
        .iter()
        .filter_map(|e| Some((e, e.torch_symbol_missing.as_ref()?)))
        .map(|(e, gap)| {
            let (why, fix) = match gap.abi.as_deref() {
                Some("pre-cxx11") => (
                    format!(
                        "It was built with the pre-C++11 ABI (`_GLIBCXX_USE_CXX11_ABI=0`), and torch \
                         {torch_version}'s libraries define the symbol only in the C++11 ABI."
                    ),
                    format!(
                        "Install the {} build for torch {} with the C++11 ABI (flash-attn's release \
                         wheels name it `cxx11abiTRUE`), or build it against this torch: `pip install \
                         --no-build-isolation --no-cache-dir --force-reinstall {}`.",
                        e.name,
                        torch_minor(torch_version),
                        e.name
                    ),
                ),
                Some("cxx11") => (
                    format!(
                        "It was built with the C++11 ABI (`_GLIBCXX_USE_CXX11_ABI=1`), and torch \
                         {torch_version}'s libraries define the symbol only in the pre-C++11 ABI."
                    ),
                    format!(
                        "Install a {} build for torch {} with the pre-C++11 ABI (flash-attn's release \
                         wheels name it `cxx11abiFALSE`; check that the wheel loads, a build may not \
                         match its name), or build it against this torch: `pip install \
                         --no-build-isolation --no-cache-dir --force-reinstall {}`.",
                        e.name,
                        torch_minor(torch_version),
                        e.name
                    ),
                ),
                _ => (
                    format!(
                        "It was built against another torch release than {torch_version}, whose \
                         C++ API it calls."
                    ),
                    format!(
                        "Install the {} build made for torch {}, or build it against this torch: \
                         `pip install --no-build-isolation --no-cache-dir --force-reinstall {}`.",
                        e.name,
                        torch_minor(torch_version),
                        e.name
                    ),
                ),
            };
            FindingBuilder::new(
                &ids::EXTENSION_TORCH_MISMATCH,
                Severity::Error,
                format!(
                    "{} {}'s compiled module needs a torch C++ symbol that torch {torch_version} does not define",
                    e.name, e.version
                ),
            )
            .detail(format!(
                "Importing it fails with \"undefined symbol: {}\". {why}",
                gap.symbol
            ))
            .evidence(format!(
                "{}: needs {} ({} of {} torch symbols it needs are missing)",
                gap.object, gap.symbol, gap.missing, gap.compared
            ))
            .evidence(format!("searched: {}", gap.libraries.join(", ")))
            .evidence(format!("{} {} ({})", e.name, e.version, e.source))
            .fix(fix)
            .subject(crate::report::framework_subject(&env.path, "torch"))
            .explains(&ids::FRAMEWORK_IMPORT_FAILED)
            .build()
        })
        .collect()
}

/// "2.7" of "2.7.0+cu128".
fn torch_minor(version: &str) -> String {
    Version::parse(version.split('+').next().unwrap_or(version)).map_or_else(
        || version.to_string(),
        |v| format!("{}.{}", v.major(), v.minor()),
    )
}

/// The CUDA major of a soname whose major follows CUDA's ("libcudart.so.12" → 12).
fn soname_major(soname: &str) -> Option<u64> {
    Version::parse(soname.rsplit(".so.").next()?).map(|v| v.major())
}

/// An extension whose own compiled files need the CUDA libraries of another major than the
/// environment's torch build: they are not there (a cu130 torch brings `libcudart.so.13`), so
/// importing it fails with "libcudart.so.12: cannot open shared object file"
/// (aws/deep-learning-containers#6770: flash-attn 2.8.3 linked against CUDA 12 in a torch
/// 2.9.0 cu130 image; Dao-AILab/flash-attention#2118).
fn cuda_major(env: &PythonEnv) -> Option<Finding> {
    let torch = env
        .frameworks
        .iter()
        .find(|f| f.name == "torch" && f.variant.as_deref() == Some("cuda"))?;
    let torch_cuda = Version::parse(torch.cuda.as_deref()?)?;
    let torch_version = torch.version.as_deref().unwrap_or("torch");
    let wrong: Vec<(&crate::report::Extension, &str)> = env
        .extensions
        .iter()
        .flat_map(|e| e.cuda_needed.iter().map(move |n| (e, n.as_str())))
        .filter(|(_, n)| soname_major(n).is_some_and(|m| m != torch_cuda.major()))
        .collect();
    let (first, soname) = wrong.first()?;
    let major = soname_major(soname)?;
    let mut f = FindingBuilder::new(
        &ids::EXTENSION_CUDA_MISMATCH,
        Severity::Error,
        format!(
            "{} {} is built for CUDA {major}, but torch {torch_version} in {} is built for CUDA {}",
            first.name,
            first.version,
            env.path,
            torch_cuda.as_str()
        ),
    )
    .detail(
        "A package that ships compiled CUDA code links against the CUDA runtime of the CUDA it \
         was built with; the environment holds the libraries of torch's CUDA major, so \
         loading the package's compiled files fails (\"libcudart.so.12: cannot open shared \
         object file\"; onnxruntime-gpu then drops its CUDA provider and runs on the CPU) or, \
         with the other major found elsewhere, mixes two CUDA runtimes in one process.",
    );
    for (e, n) in &wrong {
        f = f.evidence(format!(
            "{} {}: its compiled files need {n} ({})",
            e.name, e.version, e.source
        ));
    }
    f = f.evidence(format!(
        "torch {torch_version}: CUDA {} ({})",
        torch_cuda.as_str(),
        torch.source
    ));
    // A package built against torch can be rebuilt against this one; one that is not
    // (onnxruntime-gpu) only has releases built for each CUDA major.
    let against_torch = first.requires.iter().any(|r| split(r).0.trim() == "torch");
    let fix = if against_torch {
        format!(
            "Install a {} build for CUDA {} (a wheel whose name or local version names cu{}), or \
             build it here against this torch (`pip install --no-build-isolation --no-cache-dir \
             {}`), or use a torch built for CUDA {major}.",
            first.name,
            torch_cuda.major(),
            torch_cuda.major(),
            first.name
        )
    } else {
        format!(
            "Install a {} release built for CUDA {} (its documentation lists the CUDA each \
             release is built for; `pip install -U {}`), or use a torch built for CUDA {major}.",
            first.name,
            torch_cuda.major(),
            first.name
        )
    };
    Some(
        f.fix(fix)
            .subject(crate::report::framework_subject(&env.path, "torch"))
            .explains(&ids::FRAMEWORK_IMPORT_FAILED)
            .build(),
    )
}

/// The installed version of `name` in `env`: torch's build, or an extension package's.
fn installed<'a>(env: &'a PythonEnv, name: &str) -> Option<&'a str> {
    if name == "torch" {
        return env
            .frameworks
            .iter()
            .find(|f| f.name == "torch")
            .and_then(|f| f.version.as_deref());
    }
    env.extensions
        .iter()
        .find(|e| e.name == name)
        .map(|e| e.version.as_str())
}

/// The pin a requirement string ("torch==2.8.0") splits into.
fn split(req: &str) -> (&str, &str) {
    match req.find(['<', '>', '=', '!', '~']) {
        Some(i) => (&req[..i], &req[i..]),
        None => (req, ""),
    }
}

/// One finding per environment, listing every extension whose pin the installed torch (or
/// torchvision, torchaudio) does not meet.
fn mismatch(env: &PythonEnv) -> Option<Finding> {
    let broken: Vec<(String, &str, &str)> = env
        .extensions
        .iter()
        .flat_map(|e| e.requires.iter().map(move |r| (e, r)))
        .filter_map(|(e, r)| {
            let (name, spec) = split(r);
            let have = installed(env, name)?;
            let v = Version::parse(have)?;
            (spec_allows(spec, &v) == Some(false))
                .then(|| (format!("{} {}", e.name, e.version), r.as_str(), have))
        })
        .collect();
    let (first, req, have) = broken.first()?;
    let torch = installed(env, "torch").unwrap_or("?");
    let mut f = FindingBuilder::new(
        &ids::EXTENSION_TORCH_MISMATCH,
        Severity::Error,
        format!(
            "{first} needs {req}, but {} {have} is installed in {}",
            split(req).0,
            env.path
        ),
    )
    .detail(
        "These packages ship compiled code built against one torch release and pin it in their \
         metadata; with another torch their operators do not load (\"undefined symbol\" from \
         their .so files, \"operator torchvision::nms does not exist\"), often only when the \
         package is imported or first used. pip installs what it is told and only warns.",
    );
    for (pkg, req, have) in &broken {
        f = f.evidence(format!(
            "{pkg} requires {req} (its Requires-Dist); installed: {} {have}",
            split(req).0
        ));
    }
    let pkg = first.split(' ').next().unwrap_or("the package");
    let torch_release = torch.split('+').next().unwrap_or(torch);
    let fix = if ["torchvision", "torchaudio"].contains(&pkg) {
        format!(
            "Install the {pkg} release built for the installed torch {torch_release}, from the \
             index torch came from (its build is {torch}), so that it pins that torch; or \
             `pip install '{req}'` with its own {pkg}."
        )
    } else {
        format!(
            "Install the torch {pkg} was built for: `pip install '{req}'`, from a CUDA index that \
             release is built for (`gpu-doctor plan --framework torch` picks one for this \
             driver); or install the release of {pkg} built for torch {torch_release}, so that \
             the installed torch ({torch}) stays."
        )
    };
    Some(
        f.fix(fix)
            .subject(crate::report::framework_subject(&env.path, "torch"))
            .explains(&ids::FRAMEWORK_IMPORT_FAILED)
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Extension, Framework};

    fn env(torch: &str, ext: (&str, &str, &[&str])) -> PythonEnv {
        PythonEnv {
            path: "/venv".into(),
            frameworks: vec![Framework {
                name: "torch".into(),
                version: Some(torch.into()),
                ..Framework::default()
            }],
            extensions: vec![Extension {
                name: ext.0.into(),
                version: ext.1.into(),
                requires: ext.2.iter().map(|s| (*s).to_string()).collect(),
                ..Extension::default()
            }],
            ..PythonEnv::default()
        }
    }

    #[test]
    fn a_cuda_12_extension_beside_a_cuda_13_torch_is_a_mismatch() {
        let mut e = env("2.9.1+cu130", ("flash-attn", "2.8.3", &["torch"]));
        e.frameworks[0].variant = Some("cuda".into());
        e.frameworks[0].cuda = Some("13.0".into());
        assert!(cuda_major(&e).is_none(), "nothing read, nothing claimed");
        e.extensions[0].cuda_needed = vec!["libcudart.so.12".into()];
        let f = cuda_major(&e).expect("a mismatch");
        assert_eq!(f.id, "extension-cuda-mismatch");
        assert!(f.title.contains("built for CUDA 12"), "{}", f.title);
        e.extensions[0].cuda_needed = vec!["libcudart.so.13".into(), "libcublas.so.13".into()];
        assert!(cuda_major(&e).is_none());
    }

    #[test]
    fn vllm_pinned_to_another_torch_is_a_mismatch_and_the_pinned_one_is_not() {
        let found = mismatch(&env("2.9.0+cu128", ("vllm", "0.11.0", &["torch==2.8.0"])));
        let f = found.expect("a mismatch");
        assert!(
            f.title.contains("vllm 0.11.0 needs torch==2.8.0"),
            "{}",
            f.title
        );
        assert!(
            f.fix
                .as_deref()
                .unwrap_or("")
                .contains("pip install 'torch==2.8.0'")
        );
        assert!(mismatch(&env("2.8.0+cu128", ("vllm", "0.11.0", &["torch==2.8.0"]))).is_none());
        // No pin, or a pin not understood: nothing is claimed.
        assert!(mismatch(&env("2.9.0", ("flash-attn", "2.8.3", &["torch"]))).is_none());
        assert!(mismatch(&env("2.9.0", ("xformers", "0.0.32", &["torch==2.8.*"]))).is_none());
    }
}

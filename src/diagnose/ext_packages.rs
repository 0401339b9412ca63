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
use crate::report::{Extension, Finding, PythonEnv, Report, Severity};
use crate::version::Version;

pub(super) fn findings(report: &Report, _manifests: &Manifests) -> Vec<Finding> {
    report
        .python_envs
        .iter()
        .flat_map(|env| mismatch(env).into_iter().chain(cuda_major(env)))
        .collect()
}

/// The CUDA major of a soname whose major follows CUDA's ("libcudart.so.12" → 12).
fn soname_major(soname: &str) -> Option<u64> {
    Version::parse(soname.rsplit(".so.").next()?).map(|v| v.major())
}

/// The CUDA major an extension is built for, and what says so: its compiled files' needs
/// (`DT_NEEDED` libcudart.so.12), else its own metadata (a TensorRT wheel's `cu13` or the
/// `nvidia-cuda-runtime-cu11` it requires; `probe::python::extensions`).
fn extension_majors(e: &Extension) -> Vec<(u64, String)> {
    let needed: Vec<(u64, String)> = e
        .cuda_needed
        .iter()
        .filter_map(|n| Some((soname_major(n)?, format!("its compiled files need {n}"))))
        .collect();
    if !needed.is_empty() {
        return needed;
    }
    e.cuda_major
        .as_deref()
        .and_then(|m| m.parse().ok())
        .map(|m| {
            vec![(
                m,
                format!("a TensorRT wheel built for CUDA {m} (its name or Requires-Dist)"),
            )]
        })
        .unwrap_or_default()
}

/// Whether a distribution name is one of TensorRT's wheels.
fn is_tensorrt_name(name: &str) -> bool {
    name.starts_with("tensorrt") || name == "nvidia-tensorrt"
}

/// Whether this is one of TensorRT's wheels (which the probe gives a `cuda_major`).
fn is_tensorrt(e: &Extension) -> bool {
    e.cuda_major.is_some() && is_tensorrt_name(&e.name)
}

/// What the environment's CUDA major is taken from: torch's CUDA build, else (no torch)
/// onnxruntime-gpu's CUDA provider, whose needs say which major it links.
struct Reference {
    label: String,
    cuda: String,
    major: u64,
    source: String,
    torch: bool,
}

fn reference(env: &PythonEnv) -> Option<Reference> {
    if let Some(torch) = env
        .frameworks
        .iter()
        .find(|f| f.name == "torch" && f.variant.as_deref() == Some("cuda"))
    {
        let cuda = Version::parse(torch.cuda.as_deref()?)?;
        return Some(Reference {
            label: format!("torch {}", torch.version.as_deref().unwrap_or(""))
                .trim_end()
                .to_string(),
            cuda: cuda.as_str().to_string(),
            major: cuda.major(),
            source: torch.source.clone(),
            torch: true,
        });
    }
    let ort = env
        .extensions
        .iter()
        .find(|e| e.name == "onnxruntime-gpu")?;
    let major = ort.cuda_needed.iter().find_map(|n| soname_major(n))?;
    Some(Reference {
        label: format!("onnxruntime-gpu {}'s CUDA provider", ort.version),
        cuda: major.to_string(),
        major,
        source: ort.source.clone(),
        torch: false,
    })
}

/// An extension whose own compiled files need the CUDA libraries of another major than the
/// environment's torch build: they are not there (a cu130 torch brings `libcudart.so.13`), so
/// importing it fails with "libcudart.so.12: cannot open shared object file"
/// (aws/deep-learning-containers#6770: flash-attn 2.8.3 linked against CUDA 12 in a torch
/// 2.9.0 cu130 image; Dao-AILab/flash-attention#2118). TensorRT's wheels the same way, by the
/// CUDA major their metadata names (`tensorrt-cu13-libs` beside a cu128 torch, or beside an
/// onnxruntime-gpu whose TensorRT provider is built for CUDA 12; NVIDIA/TensorRT#4329: a CUDA
/// 11 `tensorrt-libs` 9.x whose `libnvinfer_plugin.so.9` needs `libcublas.so.11` beside a
/// CUDA 12 torch).
fn cuda_major(env: &PythonEnv) -> Option<Finding> {
    let reference = reference(env)?;
    let wrong: Vec<(&Extension, u64, String)> = env
        .extensions
        .iter()
        .flat_map(|e| {
            extension_majors(e)
                .into_iter()
                .map(move |(m, why)| (e, m, why))
        })
        .filter(|(_, m, _)| *m != reference.major)
        .collect();
    let (first, major, _) = wrong.first()?;
    let major = *major;
    let mut f = FindingBuilder::new(
        &ids::EXTENSION_CUDA_MISMATCH,
        Severity::Error,
        format!(
            "{} {} is built for CUDA {major}, but {} in {} is built for CUDA {}",
            first.name, first.version, reference.label, env.path, reference.cuda
        ),
    )
    .detail(
        "A package that ships compiled CUDA code links against the CUDA runtime of the CUDA it \
         was built with; the environment holds the libraries of torch's CUDA major, so \
         loading the package's compiled files fails (\"libcudart.so.12: cannot open shared \
         object file\"; onnxruntime-gpu then drops its CUDA provider and runs on the CPU) or, \
         with the other major found elsewhere, mixes two CUDA runtimes in one process.",
    );
    for (e, _, why) in &wrong {
        f = f.evidence(format!("{} {}: {why} ({})", e.name, e.version, e.source));
    }
    f = f.evidence(format!(
        "{}: CUDA {} ({})",
        reference.label, reference.cuda, reference.source
    ));
    let want = reference.major;
    let other_side = if reference.torch {
        format!("or use a torch built for CUDA {major}")
    } else {
        format!("or use the onnxruntime-gpu release built for CUDA {major}")
    };
    // A package built against torch can be rebuilt against this one; one that is not
    // (onnxruntime-gpu) only has releases built for each CUDA major; TensorRT has one set of
    // wheels per CUDA major, named by it.
    let against_torch = first.requires.iter().any(|r| split(r).0.trim() == "torch");
    let fix = if is_tensorrt(first) {
        // Every TensorRT wheel not of torch's major: the front package and bindings too.
        let want_major = want.to_string();
        let mut names: Vec<&str> = env
            .extensions
            .iter()
            .filter(|e| is_tensorrt_name(&e.name))
            .filter(|e| e.cuda_major.as_deref() != Some(want_major.as_str()))
            .map(|e| e.name.as_str())
            .collect();
        names.dedup();
        format!(
            "Install TensorRT's wheels for CUDA {want}: `pip uninstall -y {}` and `pip install \
             tensorrt-cu{want}` (TensorRT 10 publishes `tensorrt-cu11`, `tensorrt-cu12` and \
             `tensorrt-cu13`; plain `tensorrt` pulls the newest CUDA major's; a package that \
             pins a TensorRT release, such as torch-tensorrt, names the one to ask for); {other_side}.",
            names.join(" ")
        )
    } else if against_torch {
        format!(
            "Install a {} build for CUDA {want} (a wheel whose name or local version names cu{want}), or \
             build it here against this torch (`pip install --no-build-isolation --no-cache-dir \
             {}`), {other_side}.",
            first.name, first.name
        )
    } else {
        format!(
            "Install a {} release built for CUDA {want} (its documentation lists the CUDA each \
             release is built for; `pip install -U {}`), {other_side}.",
            first.name, first.name
        )
    };
    let subject = if reference.torch {
        "torch"
    } else {
        "onnxruntime"
    };
    Some(
        f.fix(fix)
            .subject(crate::report::framework_subject(&env.path, subject))
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
    .detail(if is_tensorrt_name(split(req).0) {
        "torch-tensorrt ships compiled code (`libtorchtrt.so`) built against one TensorRT release \
         and pins it in its metadata; with another TensorRT its runtime may not load or may \
         refuse engines built by the other release (\"undefined symbol\", a version check at \
         import). pip installs what it is told and only warns."
    } else {
        "These packages ship compiled code built against one torch release and pin it in their \
         metadata; with another torch their operators do not load (\"undefined symbol\" from \
         their .so files, \"operator torchvision::nms does not exist\"), often only when the \
         package is imported or first used. pip installs what it is told and only warns."
    });
    for (pkg, req, have) in &broken {
        f = f.evidence(format!(
            "{pkg} requires {req} (its Requires-Dist); installed: {} {have}",
            split(req).0
        ));
    }
    let pkg = first.split(' ').next().unwrap_or("the package");
    let torch_release = torch.split('+').next().unwrap_or(torch);
    let pinned = split(req).0;
    let fix = if is_tensorrt_name(pinned) {
        // torch-tensorrt's `libtorchtrt` is built against one TensorRT release and pins it.
        format!(
            "Install the TensorRT {pkg} was built against: `pip install '{req}'` (with the \
             `tensorrt-cuNN-libs` and `-bindings` wheels of the same release), or install the \
             {pkg} release built for the installed {pinned} {have}."
        )
    } else if ["torchvision", "torchaudio"].contains(&pkg) {
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
    fn tensorrt_wheels_of_another_cuda_major_are_a_mismatch_with_torch_or_onnxruntime() {
        let mut e = env("2.8.0+cu128", ("tensorrt-cu13-libs", "10.13.3.9", &[]));
        e.frameworks[0].variant = Some("cuda".into());
        e.frameworks[0].cuda = Some("12.8".into());
        assert!(
            cuda_major(&e).is_none(),
            "no CUDA major read, nothing claimed"
        );
        e.extensions[0].cuda_major = Some("13".into());
        let f = cuda_major(&e).expect("a mismatch");
        assert!(
            f.title
                .contains("tensorrt-cu13-libs 10.13.3.9 is built for CUDA 13"),
            "{}",
            f.title
        );
        let fix = f.fix.as_deref().unwrap_or("");
        assert!(fix.contains("pip uninstall -y tensorrt-cu13-libs"), "{fix}");
        assert!(fix.contains("pip install tensorrt-cu12"), "{fix}");
        e.extensions[0].cuda_major = Some("12".into());
        assert!(cuda_major(&e).is_none(), "the same major");
        // Without torch, onnxruntime-gpu's provider names the environment's major.
        e.frameworks.clear();
        e.extensions[0].cuda_major = Some("13".into());
        e.extensions.push(Extension {
            name: "onnxruntime-gpu".into(),
            version: "1.22.0".into(),
            cuda_needed: vec!["libcudart.so.12".into()],
            ..Extension::default()
        });
        let f = cuda_major(&e).expect("a mismatch with onnxruntime-gpu");
        assert!(
            f.title.contains("onnxruntime-gpu 1.22.0's CUDA provider"),
            "{}",
            f.title
        );
        assert!(
            f.fix
                .as_deref()
                .unwrap_or("")
                .contains("onnxruntime-gpu release built for CUDA 13")
        );
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

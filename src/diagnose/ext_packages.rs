//! Extension packages against the framework they were built for: a package that ships its own
//! compiled torch operators (vLLM, xformers, torchvision, torchaudio, ...) pins the torch release
//! its binaries were built against, and another torch in the environment fails to load them
//! ("undefined symbol" from `_C.abi3.so`, "operator torchvision::nms does not exist",
//! vllm-project/vllm#27228: vllm 0.11.0 with torch 2.9.0). Findings: `extension-torch-mismatch`,
//! and `extension-cuda-mismatch` for an extension whose compiled files need another CUDA
//! major's libraries than the torch build, or another cuDNN, NCCL, cuFFT, cuSPARSE, cuSOLVER
//! or cuRAND soname than the one torch's process maps, found nowhere the loader looks.
//!
//! A package's compiled files are also compared with torch's own libraries symbol by symbol
//! (`Extension::torch_symbols_missing`, read by the probe): a package built against another
//! torch release, or with the other `_GLIBCXX_USE_CXX11_ABI`, needs `c10::`/`at::` symbols
//! this torch does not export, and its import fails with "undefined symbol: _ZN3c10..."
//! (Dao-AILab/flash-attention#1832, state-spaces/mamba#704). That is `extension-torch-mismatch`
//! too, read from the files rather than the metadata: flash-attn, mamba-ssm and causal-conv1d
//! pin torch loosely or not at all.
//!
//! The range is the package's own `Requires-Dist` (its wheel's metadata), read by the probe into
//! `python_envs[].extensions`; the installed side is the environment's torch build or the other
//! extension's version.

use super::libraries::spec_allows;
use super::{FindingBuilder, ids};
use crate::manifest::Manifests;
use crate::parse::libfamily;
use crate::report::{Extension, Finding, Framework, LibraryLoad, PythonEnv, Report, Severity};
use crate::version::Version;

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    report
        .python_envs
        .iter()
        .flat_map(|env| {
            mismatch(env, manifests)
                .or_else(|| abi(env))
                .into_iter()
                .chain(cuda_major(report, env))
        })
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
/// CUDA 12 torch). With every major right, the other families' sonames are compared
/// ([`library_mismatch`]).
fn cuda_major(report: &Report, env: &PythonEnv) -> Option<Finding> {
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
    let Some((first, major, _)) = wrong.first() else {
        let torch = env
            .frameworks
            .iter()
            .find(|f| f.name == "torch" && f.variant.as_deref() == Some("cuda"))?;
        return library_mismatch(report, env, torch);
    };
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

/// An extension's need of a CUDA library whose soname does not follow the CUDA major (cuDNN,
/// NCCL, cuFFT, cuSPARSE, cuSOLVER, cuRAND, ...) that nothing in the environment provides,
/// while torch's process maps another soname of the same family: the package was built
/// against another release of that library (a cuDNN 8 build beside torch's cuDNN 9), and
/// importing it fails with "libcudnn.so.8: cannot open shared object file". What is provided
/// is what the loader resolves for the environment's frameworks (`libraries.loads`) and the
/// machine's copies on the loader path (`libraries.cudnn`, `libraries.nccl`). onnxruntime-gpu
/// is left to its own rule (`onnxruntime-cuda-libraries`), which judges it without torch too.
fn library_mismatch(report: &Report, env: &PythonEnv, torch: &Framework) -> Option<Finding> {
    let loads: Vec<&LibraryLoad> = report
        .libraries
        .loads
        .iter()
        .filter(|l| l.env == env.path)
        .flat_map(|l| l.libraries.iter())
        .collect();
    let torch_loads: Vec<&LibraryLoad> = report
        .libraries
        .loads
        .iter()
        .filter(|l| l.env == env.path && l.framework == "torch")
        .flat_map(|l| l.libraries.iter())
        .filter(|l| l.path.is_some())
        .collect();
    let on_path = |soname: &str| {
        report
            .libraries
            .cudnn
            .iter()
            .chain(&report.libraries.nccl)
            .filter(|l| l.on_loader_path)
            .any(|l| {
                let file = l.path.rsplit('/').next().unwrap_or(&l.path);
                file.strip_prefix(soname)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
            })
    };
    let wrong: Vec<(&Extension, &str, &LibraryLoad)> = env
        .extensions
        .iter()
        .filter(|e| e.name != "onnxruntime-gpu")
        .flat_map(|e| e.libraries_needed.iter().map(move |n| (e, n.as_str())))
        .filter(|(_, n)| !loads.iter().any(|l| l.soname == *n && l.path.is_some()) && !on_path(n))
        .filter_map(|(e, n)| {
            let family = libfamily::of(n)?;
            let held = torch_loads
                .iter()
                .find(|l| l.family == family && l.soname != n)?;
            Some((e, n, *held))
        })
        .collect();
    let (first, soname, held) = wrong.first()?;
    let family = libfamily::display(&held.family);
    let torch_version = torch.version.as_deref().unwrap_or("torch");
    let mut f = FindingBuilder::new(
        &ids::EXTENSION_CUDA_MISMATCH,
        Severity::Error,
        format!(
            "{} {} needs {soname}, but torch {torch_version} in {} uses {} ({family} of another release)",
            first.name, first.version, env.path, held.soname
        ),
    )
    .detail(format!(
        "The package's compiled files were linked against another {family} release than the one \
         this environment holds: their {soname} is found nowhere the loader looks (neither \
         beside torch's libraries nor on the loader path), so importing the package fails with \
         \"{soname}: cannot open shared object file\". Installing that library beside torch's \
         would load two {family} releases into one process."
    ));
    for (e, n, held) in &wrong {
        f = f.evidence(format!(
            "{} {}: its compiled files need {n} ({}); found nowhere in this environment or on the loader path",
            e.name, e.version, e.source
        ));
        f = f.evidence(format!(
            "torch {torch_version} loads {} from {} (via {})",
            held.soname,
            held.path.as_deref().unwrap_or("?"),
            held.via.as_deref().unwrap_or("?")
        ));
    }
    let torch_release = torch_version.split('+').next().unwrap_or(torch_version);
    Some(
        f.fix(format!(
            "Install the {} release built for torch {torch_release} and its {family} ({}), or \
             build it here against this torch (`pip install --no-build-isolation \
             --no-cache-dir {}`).",
            first.name, held.soname, first.name
        ))
        .subject(crate::report::framework_subject(&env.path, "torch"))
        .explains(&ids::FRAMEWORK_IMPORT_FAILED)
        .build(),
    )
}

/// An extension whose compiled files need torch C++ symbols that the environment's torch
/// libraries do not define: built against another torch release, or with the other C++ string
/// ABI (`_GLIBCXX_USE_CXX11_ABI`; flash-attn's and mamba-ssm's wheels name it, `cxx11abiTRUE`
/// / `cxx11abiFALSE`; torch's own wheels use the C++11 ABI from 2.7.0, pytorch/pytorch#152790).
/// Their import fails with "undefined symbol: _ZN3c10..." in either spelling
/// (Dao-AILab/flash-attention#1644, huggingface/open-r1#684). Where torch's libraries define a
/// missing symbol in the other spelling (`Extension::torch_symbols_abi`), the ABI is named as
/// a fact and the fix names the wheel of torch's ABI; else the spelling is the clue.
fn abi(env: &PythonEnv) -> Option<Finding> {
    let broken: Vec<&Extension> = env
        .extensions
        .iter()
        .filter(|e| !e.torch_symbols_missing.is_empty())
        .collect();
    let first = broken.first()?;
    let torch = installed(env, "torch").unwrap_or("?");
    let symbol = &first.torch_symbols_missing[0];
    let names: Vec<&str> = broken.iter().map(|e| e.name.as_str()).collect();
    let (abi_words, fix) = abi_words_and_fix(first, &names, torch);
    let mut f = FindingBuilder::new(
        &ids::EXTENSION_TORCH_MISMATCH,
        Severity::Error,
        format!(
            "{} {} was built against another torch than torch {torch} in {}: its compiled files need symbols torch does not define",
            first.name, first.version, env.path
        ),
    )
    .detail(format!(
        "A package with compiled torch operators binds torch's C++ functions by their mangled \
         names; the torch installed here does not define {symbol}, so importing the package \
         fails with \"undefined symbol: {symbol}\". {abi_words}"
    ));
    for e in &broken {
        f = f.evidence(format!(
            "{} {} ({}): needs {}, which no torch/lib/libc10*.so or libtorch*.so here defines{}",
            e.name,
            e.version,
            e.source,
            e.torch_symbols_missing.join(", "),
            match e.torch_symbols_abi.as_deref() {
                Some("cxx11") => " (torch/lib defines its old-ABI spelling, `Ss`)",
                Some("pre-cxx11") => " (torch/lib defines its C++11-ABI spelling, `__cxx11`)",
                _ => "",
            }
        ));
    }
    Some(
        f.fix(fix)
            .subject(crate::report::framework_subject(&env.path, "torch"))
            .explains(&ids::FRAMEWORK_IMPORT_FAILED)
            .build(),
    )
}

/// The words on the ABI (`detail`) and the fix of [`abi`]: from torch's own twin of a missing
/// symbol where there is one (`Extension::torch_symbols_abi`), else from the symbols' spelling.
fn abi_words_and_fix(first: &Extension, names: &[&str], torch: &str) -> (String, String) {
    let torch_release = torch.split('+').next().unwrap_or(torch);
    let torch_minor = torch_release
        .rsplitn(2, '.')
        .last()
        .unwrap_or(torch_release);
    // The C++11 string ABI mangles std::string as `NSt7__cxx1112basic_string...`; the old
    // one as `Ss`. A missing symbol in one spelling is the usual sign of the other ABI.
    let cxx11 = first
        .torch_symbols_missing
        .iter()
        .any(|s| s.contains("St7__cxx11"));
    // The old ABI's std::string is the substitution `Ss` (after `E`, `K`, `R` in a
    // parameter list: `...SourceLocationESsb`, `RKSs`).
    let old = first
        .torch_symbols_missing
        .iter()
        .any(|s| ["ESs", "KSs", "RSs"].iter().any(|p| s.contains(p)));
    let build_here = format!(
        "build it here against this torch: `pip install --no-build-isolation --no-cache-dir \
         --force-reinstall --no-deps {}`",
        names.join(" ")
    );
    match first.torch_symbols_abi.as_deref() {
        Some("cxx11") => (
            format!(
                "It was built with the C++11 ABI (`_GLIBCXX_USE_CXX11_ABI=1`), and torch \
                 {torch}'s libraries define that symbol only in the old ABI's spelling (`Ss`)."
            ),
            format!(
                "Install the {} build for torch {torch_minor} with the old C++ ABI (the wheel \
                 whose name says torch{torch_minor} and `cxx11abiFALSE`; check that it imports, a \
                 build may not match its name), or {build_here}.",
                names.join(", ")
            ),
        ),
        Some("pre-cxx11") => (
            format!(
                "It was built with the old C++ ABI (`_GLIBCXX_USE_CXX11_ABI=0`), and torch \
                 {torch}'s libraries define that symbol only in the C++11 ABI's spelling \
                 (`__cxx11`)."
            ),
            format!(
                "Install the {} build for torch {torch_minor} with the C++11 ABI (the wheel whose \
                 name says torch{torch_minor} and `cxx11abiTRUE`), or {build_here}.",
                names.join(", ")
            ),
        ),
        _ => {
            let words = if cxx11 {
                "Its missing symbols spell std::string the C++11 way (`__cxx11`): a build with \
                 `_GLIBCXX_USE_CXX11_ABI=1` (`cxx11abiTRUE` in flash-attn's and mamba-ssm's \
                 wheel names) over a torch built with the old ABI, or a build for another torch \
                 release."
            } else if old {
                "Its missing symbols spell std::string the old way (`Ss`): a build with \
                 `_GLIBCXX_USE_CXX11_ABI=0` (`cxx11abiFALSE` in flash-attn's and mamba-ssm's \
                 wheel names) over a torch built with the C++11 ABI, or a build for another \
                 torch release."
            } else {
                "A build for another torch release (a symbol whose signature changed between \
                 releases), or with the other C++ string ABI than this torch (`cxx11abiTRUE` / \
                 `cxx11abiFALSE` in flash-attn's and mamba-ssm's wheel names)."
            };
            (
                words.to_string(),
                format!(
                    "Install the {} build for torch {torch_release} and this torch's C++ ABI (the \
                     wheel whose name says torch{torch_minor} and the cxx11abi of `python -c \
                     \"import torch; print(torch._C._GLIBCXX_USE_CXX11_ABI)\"`), or {build_here}.",
                    names.join(", ")
                ),
            )
        }
    }
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

/// The packages released in step with torch whose wheels pin no torch release and whose own
/// release is not the installed torch's, as (package, requirement, torch, why) rows.
fn unpinned_companions<'a>(
    env: &'a PythonEnv,
    manifests: &Manifests,
) -> Vec<(String, String, &'a str, &'static str)> {
    let Some(torch) = installed(env, "torch") else {
        return Vec::new();
    };
    let Some(torch_release) = Version::parse(torch).map(|v| v.major_minor()) else {
        return Vec::new();
    };
    env.extensions
        .iter()
        .filter(|e| {
            !e.requires
                .iter()
                .any(|r| split(r).0 == "torch" && !split(r).1.trim().is_empty())
        })
        .filter_map(|e| {
            let release = manifests
                .frameworks
                .torch_companion_release(&e.name, &e.version)?;
            (release != torch_release).then(|| {
                (
                    format!("{} {}", e.name, e.version),
                    format!("torch=={release}.*"),
                    torch,
                    RELEASE,
                )
            })
        })
        .collect()
}

/// The pin a requirement string ("torch==2.8.0") splits into.
fn split(req: &str) -> (&str, &str) {
    match req.find(['<', '>', '=', '!', '~']) {
        Some(i) => (&req[..i], &req[i..]),
        None => (req, ""),
    }
}

/// Where a requirement the installed torch breaks comes from.
const PIN: &str = "its Requires-Dist";
/// A package released in step with torch whose wheel pins none (TheRock's torchaudio).
const RELEASE: &str =
    "its release: it is built for the torch of the same major.minor, and its wheel pins none";

/// One finding per environment, listing every extension whose pin the installed torch (or
/// torchvision, torchaudio) does not meet, and every package released in step with torch
/// (`frameworks.toml`'s `torch_companion`) of another release than torch's whose wheel pins
/// no torch: pip installed the pair without a word (ROCm/TheRock#1262: torchaudio 2.8.0a0
/// beside torch 2.7.1, "incompatible torch and torchaudio wheels").
fn mismatch(env: &PythonEnv, manifests: &Manifests) -> Option<Finding> {
    let mut broken: Vec<(String, String, &str, &str)> = env
        .extensions
        .iter()
        .flat_map(|e| e.requires.iter().map(move |r| (e, r)))
        .filter_map(|(e, r)| {
            let (name, spec) = split(r);
            let have = installed(env, name)?;
            let v = Version::parse(have)?;
            (spec_allows(spec, &v) == Some(false))
                .then(|| (format!("{} {}", e.name, e.version), r.clone(), have, PIN))
        })
        .collect();
    broken.extend(unpinned_companions(env, manifests));
    let (first, req, have, why) = broken.first()?;
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
    for (pkg, req, have, why) in &broken {
        f = f.evidence(format!(
            "{pkg} requires {req} ({why}); installed: {} {have}",
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
    } else if *why == RELEASE {
        let same =
            Version::parse(torch).map_or_else(|| torch_release.to_string(), |v| v.major_minor());
        format!(
            "Install the {pkg} of torch's release from the index torch came from (its build is \
             {torch}): `pip install '{pkg}=={same}.*'`. Its wheels pin no torch, so pip does \
             not keep the two together: install torch and {pkg} of one release in one command."
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
    use crate::report::{FrameworkLoads, LibraryFamily};

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
        let r = Report::default();
        assert!(
            cuda_major(&r, &e).is_none(),
            "nothing read, nothing claimed"
        );
        e.extensions[0].cuda_needed = vec!["libcudart.so.12".into()];
        let f = cuda_major(&r, &e).expect("a mismatch");
        assert_eq!(f.id, "extension-cuda-mismatch");
        assert!(f.title.contains("built for CUDA 12"), "{}", f.title);
        e.extensions[0].cuda_needed = vec!["libcudart.so.13".into(), "libcublas.so.13".into()];
        assert!(cuda_major(&r, &e).is_none());
    }

    #[test]
    fn tensorrt_wheels_of_another_cuda_major_are_a_mismatch_with_torch_or_onnxruntime() {
        let r = Report::default();
        let mut e = env("2.8.0+cu128", ("tensorrt-cu13-libs", "10.13.3.9", &[]));
        e.frameworks[0].variant = Some("cuda".into());
        e.frameworks[0].cuda = Some("12.8".into());
        assert!(
            cuda_major(&r, &e).is_none(),
            "no CUDA major read, nothing claimed"
        );
        e.extensions[0].cuda_major = Some("13".into());
        let f = cuda_major(&r, &e).expect("a mismatch");
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
        assert!(cuda_major(&r, &e).is_none(), "the same major");
        // Without torch, onnxruntime-gpu's provider names the environment's major.
        e.frameworks.clear();
        e.extensions[0].cuda_major = Some("13".into());
        e.extensions.push(Extension {
            name: "onnxruntime-gpu".into(),
            version: "1.22.0".into(),
            cuda_needed: vec!["libcudart.so.12".into()],
            ..Extension::default()
        });
        let f = cuda_major(&r, &e).expect("a mismatch with onnxruntime-gpu");
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
        let found = mismatch(
            &env("2.9.0+cu128", ("vllm", "0.11.0", &["torch==2.8.0"])),
            crate::manifest::embedded(),
        );
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
        assert!(
            mismatch(
                &env("2.8.0+cu128", ("vllm", "0.11.0", &["torch==2.8.0"])),
                crate::manifest::embedded()
            )
            .is_none()
        );
        // No pin, or a pin not understood: nothing is claimed.
        assert!(
            mismatch(
                &env("2.9.0", ("flash-attn", "2.8.3", &["torch"])),
                crate::manifest::embedded()
            )
            .is_none()
        );
        assert!(
            mismatch(
                &env("2.9.0", ("xformers", "0.0.32", &["torch==2.8.*"])),
                crate::manifest::embedded()
            )
            .is_none()
        );
    }

    #[test]
    fn an_unpinned_torchaudio_of_another_release_than_torch_is_a_mismatch_both_ways() {
        let m = crate::manifest::embedded();
        // ROCm/TheRock#1262: TheRock's wheels pin no torch.
        let newer = env(
            "2.7.1+rocm7.0.0rc20250826",
            ("torchaudio", "2.8.0a0+rocm7.0.0rc20250826", &["torch"]),
        );
        let f = mismatch(&newer, m).expect("a mismatch");
        assert_eq!(f.id, "extension-torch-mismatch");
        assert!(
            f.title
                .contains("torchaudio 2.8.0a0+rocm7.0.0rc20250826 needs torch==2.8.*"),
            "{}",
            f.title
        );
        assert!(f.evidence.iter().any(|e| e.contains("its wheel pins none")));
        assert!(
            f.fix
                .as_deref()
                .unwrap_or("")
                .contains("pip install 'torchaudio==2.7.*'")
        );
        let older = env("2.9.1+rocm6.4", ("torchaudio", "2.8.0+rocm6.4", &[]));
        assert!(mismatch(&older, m).is_some(), "an older torchaudio too");
        // The same release, a release before the scheme, or a pin of its own (judged as such).
        let same = env(
            "2.8.0a0+rocm7.0.0",
            ("torchaudio", "2.8.0a0+rocm7.0.0", &["torch"]),
        );
        assert!(mismatch(&same, m).is_none());
        assert!(mismatch(&env("2.0.1", ("torchaudio", "2.0.2", &["torch"])), m).is_none());
        let pinned = env("2.7.1", ("torchaudio", "2.8.0", &["torch>=2.7"]));
        assert!(mismatch(&pinned, m).is_none(), "its own pin allows 2.7.1");
        // torchvision's numbering is not read past 2.3: not judged without a pin.
        assert!(mismatch(&env("2.7.1", ("torchvision", "0.23.0", &["torch"])), m).is_none());
    }

    fn torch_cuda_env() -> PythonEnv {
        let mut e = env("2.5.1+cu124", ("xformers", "0.0.28", &["torch==2.5.1"]));
        e.frameworks[0].variant = Some("cuda".into());
        e.frameworks[0].cuda = Some("12.4".into());
        e
    }

    fn torch_loads(sonames: &[(&str, LibraryFamily)]) -> Report {
        let mut r = Report::default();
        r.libraries.loads = vec![FrameworkLoads {
            env: "/venv".into(),
            framework: "torch".into(),
            basis: "elf".into(),
            libraries: sonames
                .iter()
                .map(|(s, family)| LibraryLoad {
                    family: family.clone(),
                    soname: (*s).into(),
                    path: Some(format!("/venv/nvidia/lib/{s}")),
                    via: Some("RUNPATH".into()),
                    ..LibraryLoad::default()
                })
                .collect(),
        }];
        r
    }

    #[test]
    fn a_cudnn_8_extension_beside_torch_with_cudnn_9_is_a_mismatch_both_ways() {
        let r = torch_loads(&[("libcudnn.so.9", LibraryFamily::Cudnn)]);
        let mut e = torch_cuda_env();
        assert!(
            cuda_major(&r, &e).is_none(),
            "nothing read, nothing claimed"
        );
        e.extensions[0].libraries_needed = vec!["libcudnn.so.8".into()];
        let f = cuda_major(&r, &e).expect("a mismatch");
        assert_eq!(f.id, "extension-cuda-mismatch");
        assert!(f.title.contains("needs libcudnn.so.8"), "{}", f.title);
        assert!(f.title.contains("libcudnn.so.9"), "{}", f.title);
        // Newer than torch's: a cuDNN 9 build beside a torch that maps cuDNN 8.
        let r8 = torch_loads(&[("libcudnn.so.8", LibraryFamily::Cudnn)]);
        e.extensions[0].libraries_needed = vec!["libcudnn.so.9".into()];
        assert!(cuda_major(&r8, &e).is_some());
        // The soname torch maps, or one on the loader path, is provided.
        assert!(cuda_major(&r, &e).is_none());
        let mut r = r;
        e.extensions[0].libraries_needed = vec!["libcudnn.so.8".into()];
        r.libraries.cudnn = vec![crate::report::Library {
            path: "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7".into(),
            on_loader_path: true,
            ..crate::report::Library::default()
        }];
        assert!(cuda_major(&r, &e).is_none());
        // A family torch does not map is not judged; nor is onnxruntime-gpu (its own rule).
        e.extensions[0].libraries_needed = vec!["libcufft.so.10".into()];
        assert!(cuda_major(&r, &e).is_none());
        let r = torch_loads(&[("libcufft.so.11", LibraryFamily::Cufft)]);
        assert!(cuda_major(&r, &e).is_some());
        e.extensions[0].name = "onnxruntime-gpu".into();
        assert!(cuda_major(&r, &e).is_none());
    }

    #[test]
    fn torch_symbols_the_torch_libraries_lack_are_a_torch_mismatch() {
        let mut e = env("2.6.0+cu124", ("flash-attn", "2.6.3", &["torch"]));
        assert!(abi(&e).is_none());
        e.extensions[0].torch_symbols_missing = vec![
            "_ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
                .into(),
        ];
        let f = abi(&e).expect("a mismatch");
        assert_eq!(f.id, "extension-torch-mismatch");
        assert!(
            f.detail.contains("_GLIBCXX_USE_CXX11_ABI=1"),
            "{}",
            f.detail
        );
        let fix = f.fix.as_deref().unwrap();
        assert!(fix.contains("torch2.6"), "{fix}");
        assert!(fix.contains("--no-build-isolation"), "{fix}");
        // torch defines the old spelling: the ABI is a fact, and the fix names the old-ABI
        // wheel; the other direction names the C++11 one.
        e.extensions[0].torch_symbols_abi = Some("cxx11".into());
        let f = abi(&e).unwrap();
        assert!(f.detail.contains("only in the old ABI"), "{}", f.detail);
        let fix = f.fix.as_deref().unwrap();
        assert!(fix.contains("cxx11abiFALSE"), "{fix}");
        assert!(!fix.contains("cxx11abiTRUE"), "{fix}");
        e.extensions[0].torch_symbols_missing =
            vec!["_ZN3c105ErrorC2ENS_14SourceLocationESs".into()];
        e.extensions[0].torch_symbols_abi = Some("pre-cxx11".into());
        let fix = abi(&e).unwrap().fix.unwrap();
        assert!(fix.contains("torch2.6 and `cxx11abiTRUE`"), "{fix}");
        // A pin that fails is the finding; the symbols are not reported twice.
        let mut e = env("2.9.0+cu128", ("vllm", "0.11.0", &["torch==2.8.0"]));
        e.extensions[0].torch_symbols_missing = vec!["_ZN3c104cuda9SetDeviceEab".into()];
        let all = findings(
            &Report {
                python_envs: vec![e],
                ..Report::default()
            },
            crate::manifest::embedded(),
        );
        assert_eq!(all.len(), 1, "{all:?}");
        assert!(
            all[0].title.contains("needs torch==2.8.0"),
            "{}",
            all[0].title
        );
    }
}

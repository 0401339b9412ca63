//! Packages with compiled code built against torch (vLLM, xformers, flash-attn, ...) in a site
//! folder, the CUDA libraries their shared objects need (`DT_NEEDED`), and the torch C++
//! symbols they need that the torch of the same folder does not define (their dynamic symbol
//! tables against torch's libraries', `parse::dynsym`).

use std::path::Path;

use crate::host::Host;
use crate::parse::python_pkg;
use crate::report::Extension;

/// Packages that ship compiled code built against torch, by normalised distribution name, and
/// onnxruntime-gpu, whose CUDA provider links one CUDA major's libraries (its `DT_NEEDED`), and
/// Triton (`pytorch-triton` in torch's nightly index), whose bundled ptxas decides which GPUs
/// torch.compile and vLLM's kernels can compile for, and torch-tensorrt, which pins one torch
/// release (`torch>=2.5.0,<2.6.0` in 2.5.0's Requires-Dist) and one TensorRT release
/// (`tensorrt==10.1.0`).
/// mamba-ssm and causal-conv1d ship one compiled module each, built against one torch release
/// and C++ ABI (their wheels' names: `+cu12torch2.6cxx11abiFALSE`). onnxruntime, the CPU-only
/// package, installs the same `onnxruntime` module as onnxruntime-gpu: beside it, the one
/// installed last decides (`diagnose::onnxruntime`). SGLang's kernel package is read under both
/// of its names: `sgl-kernel` (0.3.21, which sglang 0.5.9 pins, mmcdermott/MEDS_EIC_AR#163) and
/// `sglang-kernel` (0.4.x, NVlabs/Sana#419).
const EXTENSIONS: [&str; 17] = [
    "vllm",
    "flash-attn",
    "xformers",
    "bitsandbytes",
    "deepspeed",
    "torchvision",
    "torchaudio",
    "flashinfer-python",
    "sglang-kernel",
    "sgl-kernel",
    "onnxruntime-gpu",
    "onnxruntime",
    "triton",
    "pytorch-triton",
    "torch-tensorrt",
    "mamba-ssm",
    "causal-conv1d",
];

/// TensorRT's own wheels: the `tensorrt` and `tensorrt-cuNN` front packages, the
/// `tensorrt-cuNN-libs` / `tensorrt-libs` wheels that hold `libnvinfer` (in
/// `site-packages/tensorrt_libs`), their `-bindings` wheels, and the 8.x `nvidia-tensorrt`
/// wheel. Their CUDA major is
/// their name's `cuNN`, else the `nvidia-*-cuNN` wheels they require.
fn is_tensorrt(name: &str) -> bool {
    if matches!(
        name,
        "tensorrt" | "tensorrt-libs" | "tensorrt-bindings" | "nvidia-tensorrt"
    ) {
        return true;
    }
    name.strip_prefix("tensorrt-cu")
        .map(|r| {
            r.strip_suffix("-libs")
                .or_else(|| r.strip_suffix("-bindings"))
                .unwrap_or(r)
        })
        .is_some_and(|m| !m.is_empty() && m.len() <= 3 && m.chars().all(|c| c.is_ascii_digit()))
}

/// Requirements kept for the pin checks: torch's family and TensorRT's wheels.
fn pinned_family(name: &str) -> bool {
    ["torch", "torchvision", "torchaudio"].contains(&name) || is_tensorrt(name)
}

/// The `cuNN` major a distribution name carries (`tensorrt-cu12-libs`,
/// `nvidia-cuda-runtime-cu11`), where it carries one.
fn name_cuda_major(name: &str) -> Option<String> {
    name.split('-')
        .filter_map(|part| part.strip_prefix("cu"))
        .find(|m| !m.is_empty() && m.len() <= 3 && m.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_string)
}

/// The extension packages of a site folder, with their torch-family pins.
pub(super) fn scan_extensions(host: &Host, site: &Path) -> Vec<Extension> {
    let torch = std::cell::OnceCell::new();
    host.fs
        .read_dir(site)
        .into_iter()
        .filter(|e| e.name.ends_with(".dist-info"))
        .filter_map(|e| {
            let (name, version) = python_pkg::dist_info_name(&e.name)?;
            let name = python_pkg::normalize_name(&name);
            let tensorrt = is_tensorrt(&name);
            if !EXTENSIONS.contains(&name.as_str()) && !tensorrt {
                return None;
            }
            let all: Vec<_> = host
                .fs
                .read_opt(e.path.join("METADATA"))
                .map(|t| python_pkg::metadata(&t).requires_dist)
                .unwrap_or_default()
                .into_iter()
                .filter(|r| !r.marker.as_deref().is_some_and(|m| m.contains("extra")))
                .collect();
            // A TensorRT wheel's CUDA major: its name's, else that of the CUDA wheels it needs.
            let cuda_major = tensorrt
                .then(|| {
                    name_cuda_major(&name).or_else(|| {
                        all.iter()
                            .filter(|r| r.name.starts_with("nvidia-cuda-runtime-cu"))
                            .find_map(|r| name_cuda_major(&r.name))
                    })
                })
                .flatten();
            let mut requires: Vec<String> = all
                .into_iter()
                .filter(|r| pinned_family(&r.name))
                .map(|r| format!("{}{}", r.name, r.spec))
                .collect();
            requires.sort();
            requires.dedup();
            let objects = read_objects(host, site, &e.path);
            let (torch_symbols_missing, torch_symbols_abi) = if objects.torch_needs.is_empty() {
                (Vec::new(), None)
            } else {
                let tables = torch.get_or_init(|| torch_exports(host, site));
                let missing = torch_missing(tables, &objects.torch_needs);
                let abi = other_abi_twin(tables, &missing);
                (missing, abi)
            };
            Some(Extension {
                name,
                version,
                requires,
                source: e.path.display().to_string(),
                fatbin_sass: objects
                    .fatbin
                    .as_ref()
                    .map(|f| cc_list(&f.sass))
                    .unwrap_or_default(),
                fatbin_ptx: objects
                    .fatbin
                    .as_ref()
                    .map(|f| cc_list(&f.ptx))
                    .unwrap_or_default(),
                cuda_needed: objects.cuda_needed,
                libraries_needed: objects.libraries_needed,
                torch_symbols_missing,
                cuda_major,
                torch_symbols_abi,
                cuda_libraries: per_cuda_libraries(host, &e.path),
            })
        })
        .collect()
}

/// The CUDA versions of the per-CUDA native libraries a package's RECORD lists: bitsandbytes
/// ships `bitsandbytes/libbitsandbytes_cuda118.so` .. `_cuda129.so` (and `_nocublaslt` twins
/// before 0.44) and loads the one of torch's CUDA (`get_cuda_bnb_library_path` in its
/// `cextension.py`). "128" is CUDA 12.8: the last digit is the minor.
fn per_cuda_libraries(host: &Host, dist: &Path) -> Vec<String> {
    let record = host.fs.read_opt(dist.join("RECORD")).unwrap_or_default();
    let mut out: Vec<crate::version::Version> = record
        .lines()
        .filter_map(|l| l.split(',').next())
        .filter_map(|f| f.rsplit('/').next())
        .filter_map(|name| {
            let digits = name
                .strip_prefix("libbitsandbytes_cuda")?
                .strip_suffix(".so")?
                .trim_end_matches("_nocublaslt");
            let (major, minor) = digits.split_at(digits.len().checked_sub(1)?);
            let all_digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
            (all_digits(major) && all_digits(minor))
                .then(|| crate::version::Version::parse(&format!("{major}.{minor}")))
                .flatten()
        })
        .collect();
    out.sort();
    out.dedup();
    out.iter().map(|v| v.as_str().to_string()).collect()
}

/// CUDA libraries whose soname major is the CUDA major they come with.
const CUDA_MAJOR_LIBS: [&str; 5] = [
    "libcudart.so.",
    "libcublas.so.",
    "libcublasLt.so.",
    "libnvrtc.so.",
    "libnvJitLink.so.",
];

/// How many of a package's compiled files are read (vLLM and flash-attn have a handful).
const MAX_EXTENSION_OBJECTS: usize = 16;

/// The torch C++ namespaces whose symbols an extension binds to torch's libraries: `c10::`,
/// `at::`, `torch::`, `caffe2::` (functions and const member functions).
const TORCH_PREFIXES: [&str; 8] = [
    "_ZN3c10",
    "_ZNK3c10",
    "_ZN2at",
    "_ZNK2at",
    "_ZN5torch",
    "_ZNK5torch",
    "_ZN6caffe2",
    "_ZNK6caffe2",
];

/// Torch symbols kept per package at most (the report's evidence; one is enough to fail).
const MAX_TORCH_NEEDS: usize = 4096;
/// Missing symbols reported per package at most.
const MAX_MISSING: usize = 8;
/// torch's own libraries read at most (`libc10.so`, `libc10_cuda.so`, `libtorch_cpu.so`,
/// `libtorch_cuda.so`, `libtorch_python.so`, `libtorch.so`, ...).
const MAX_TORCH_LIBS: usize = 16;

/// What a package's compiled files say.
#[derive(Default)]
struct Objects {
    cuda_needed: Vec<String>,
    libraries_needed: Vec<String>,
    torch_needs: Vec<String>,
    /// The union of its files' fatbins; `None` when none has one, or one was walked only in
    /// part (a partial list would claim a missing architecture).
    fatbin: Option<crate::parse::fatbin::Fatbin>,
}

/// Architecture numbers as compute capabilities (`120` → "12.0").
fn cc_list(archs: &[u32]) -> Vec<String> {
    archs
        .iter()
        .map(|a| format!("{}.{}", a / 10, a % 10))
        .collect()
}

/// The `.so` files a package's RECORD lists, read: the CUDA sonames they need (those of
/// [`CUDA_MAJOR_LIBS`] apart, every other CUDA family's: cuDNN, NCCL, cuFFT, cuSPARSE, cuSOLVER,
/// cuRAND, ...) and the torch symbols they need.
fn read_objects(host: &Host, site: &Path, dist: &Path) -> Objects {
    let record = host.fs.read_opt(dist.join("RECORD")).unwrap_or_default();
    let mut out = Objects::default();
    let mut fatbin = crate::parse::fatbin::Fatbin::default();
    let mut fatbin_seen = false;
    let files = record
        .lines()
        .filter_map(|l| l.split(',').next())
        .filter(|f| f.ends_with(".so") && !f.starts_with('/') && !f.split('/').any(|c| c == ".."))
        .take(MAX_EXTENSION_OBJECTS);
    for f in files {
        let Ok(file) = host.fs.open_ranged(&site.join(f)) else {
            continue;
        };
        let mut read = |off: u64, len: usize| file.read_at(off, len);
        if let Some(d) = crate::parse::elf::parse(&mut read) {
            for n in d.needed {
                if CUDA_MAJOR_LIBS.iter().any(|p| n.starts_with(p)) {
                    out.cuda_needed.push(n);
                } else if crate::parse::libfamily::of(&n).is_some() {
                    out.libraries_needed.push(n);
                }
            }
        }
        if let Some(f) = crate::parse::fatbin::parse(&mut read) {
            fatbin_seen = true;
            fatbin.capped |= f.capped;
            fatbin.sass.extend(f.sass);
            fatbin.ptx.extend(f.ptx);
        }
        if let Ok(symbols) = crate::parse::dynsym::parse(&mut read) {
            out.torch_needs.extend(
                symbols
                    .needs
                    .into_iter()
                    .map(|n| n.name)
                    .filter(|n| TORCH_PREFIXES.iter().any(|p| n.starts_with(p))),
            );
            out.torch_needs.truncate(MAX_TORCH_NEEDS);
        }
    }
    if fatbin_seen && !fatbin.capped && !(fatbin.sass.is_empty() && fatbin.ptx.is_empty()) {
        for v in [&mut fatbin.sass, &mut fatbin.ptx] {
            v.sort_unstable();
            v.dedup();
        }
        out.fatbin = Some(fatbin);
    }
    for v in [
        &mut out.cuda_needed,
        &mut out.libraries_needed,
        &mut out.torch_needs,
    ] {
        v.sort();
        v.dedup();
    }
    out
}

/// The symbol tables of torch's own libraries in a site folder (`torch/lib/libc10*.so`,
/// `torch/lib/libtorch*.so`); `None` when there are none, or when any of them could not be
/// read whole (a stand-in, a cut file, a table over its cap): a symbol could then be defined
/// in what was not read, so nothing is judged.
fn torch_exports(host: &Host, site: &Path) -> Option<Vec<crate::parse::dynsym::Symbols>> {
    let lib = site.join("torch/lib");
    let names = host.fs.read_dir_matching(&lib, |n| {
        (n.starts_with("libc10") || n.starts_with("libtorch")) && n.ends_with(".so")
    });
    if names.is_empty() || names.len() > MAX_TORCH_LIBS {
        return None;
    }
    // One thread a library: libtorch_cpu's and libtorch_cuda's tables are about 13 MB together,
    // and read one after the other they were most of the scan on a machine with torchvision.
    std::thread::scope(|scope| {
        let readers: Vec<_> = names
            .iter()
            .map(|e| {
                scope.spawn(|| {
                    let file = host.fs.open_ranged(&e.path).ok()?;
                    let mut read = |off: u64, len: usize| file.read_at(off, len);
                    crate::parse::dynsym::parse(&mut read)
                        .ok()
                        .filter(|symbols| !symbols.capped)
                })
            })
            .collect();
        readers
            .into_iter()
            .map(|r| r.join().ok().flatten())
            .collect()
    })
}

/// The needed torch symbols that no torch library defines (the first [`MAX_MISSING`]).
fn torch_missing(
    torch: &Option<Vec<crate::parse::dynsym::Symbols>>,
    needs: &[String],
) -> Vec<String> {
    let Some(tables) = torch else {
        return Vec::new();
    };
    needs
        .iter()
        .filter(|n| !tables.iter().any(|t| t.defines(n, None)))
        .take(MAX_MISSING)
        .cloned()
        .collect()
}

/// `std::string` in libstdc++'s two C++ ABIs: `std::__cxx11::basic_string<char>` under
/// `_GLIBCXX_USE_CXX11_ABI=1`, the substitution `Ss` under the old one.
const STRING_CXX11: &str = "NSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE";
const STRING_OLD: &str = "Ss";

/// The ABI the missing symbols are spelled in, where torch's libraries define one of them in
/// the other spelling ("undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationESs" beside a
/// libc10.so that defines `...SourceLocationENSt7__cxx11...`): "cxx11" or "pre-cxx11". `None`
/// when no missing symbol has such a twin (a build against another torch release).
fn other_abi_twin(
    torch: &Option<Vec<crate::parse::dynsym::Symbols>>,
    missing: &[String],
) -> Option<String> {
    let tables = torch.as_ref()?;
    let defined = |name: &str| tables.iter().any(|t| t.defines(name, None));
    missing.iter().find_map(|m| {
        if m.contains(STRING_CXX11) {
            defined(&m.replace(STRING_CXX11, STRING_OLD)).then(|| "cxx11".to_string())
        } else if m.contains(STRING_OLD) {
            defined(&m.replace(STRING_OLD, STRING_CXX11)).then(|| "pre-cxx11".to_string())
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensorrt_wheels_and_their_cuda_major() {
        for name in [
            "tensorrt",
            "tensorrt-libs",
            "tensorrt-bindings",
            "nvidia-tensorrt",
            "tensorrt-cu12",
            "tensorrt-cu13-libs",
            "tensorrt-cu11-bindings",
        ] {
            assert!(is_tensorrt(name), "{name}");
        }
        for name in [
            "tensorrt-llm",
            "tensorrt-cu",
            "tensorrt-cuda-libs",
            "torch-tensorrt",
        ] {
            assert!(!is_tensorrt(name), "{name}");
        }
        assert_eq!(name_cuda_major("tensorrt-cu13-libs").as_deref(), Some("13"));
        assert_eq!(
            name_cuda_major("nvidia-cuda-runtime-cu11").as_deref(),
            Some("11")
        );
        assert_eq!(name_cuda_major("tensorrt-libs"), None);
        assert_eq!(name_cuda_major("nvidia-cuda-runtime"), None);
        assert!(pinned_family("tensorrt-cu12-libs") && pinned_family("torch"));
        assert!(!pinned_family("numpy"));
    }
}

//! Packages with compiled code built against torch (vLLM, xformers, flash-attn, ...) in a site
//! folder, and the CUDA major their shared objects need (`DT_NEEDED`).

use std::path::{Path, PathBuf};

use crate::host::Host;
use crate::parse::dynsym;
use crate::parse::python_pkg;
use crate::report::{Extension, TorchSymbolGap};

/// Packages that ship compiled code built against torch, by normalised distribution name, and
/// onnxruntime-gpu, whose CUDA provider links one CUDA major's libraries (its `DT_NEEDED`), and
/// Triton (`pytorch-triton` in torch's nightly index), whose bundled ptxas decides which GPUs
/// torch.compile and vLLM's kernels can compile for, and torch-tensorrt, which pins one torch
/// release (`torch>=2.5.0,<2.6.0` in 2.5.0's Requires-Dist).
const EXTENSIONS: [&str; 13] = [
    "vllm",
    "flash-attn",
    "xformers",
    "bitsandbytes",
    "deepspeed",
    "torchvision",
    "torchaudio",
    "flashinfer-python",
    "sglang-kernel",
    "onnxruntime-gpu",
    "triton",
    "pytorch-triton",
    "torch-tensorrt",
];

/// The extension packages of a site folder, with their torch-family pins.
pub(super) fn scan_extensions(host: &Host, site: &Path) -> Vec<Extension> {
    host.fs
        .read_dir(site)
        .into_iter()
        .filter(|e| e.name.ends_with(".dist-info"))
        .filter_map(|e| {
            let (name, version) = python_pkg::dist_info_name(&e.name)?;
            let name = python_pkg::normalize_name(&name);
            if !EXTENSIONS.contains(&name.as_str()) {
                return None;
            }
            let mut requires: Vec<String> = host
                .fs
                .read_opt(e.path.join("METADATA"))
                .map(|t| python_pkg::metadata(&t).requires_dist)
                .unwrap_or_default()
                .into_iter()
                .filter(|r| ["torch", "torchvision", "torchaudio"].contains(&r.name.as_str()))
                .filter(|r| !r.marker.as_deref().is_some_and(|m| m.contains("extra")))
                .map(|r| format!("{}{}", r.name, r.spec))
                .collect();
            requires.sort();
            requires.dedup();
            Some(Extension {
                name,
                version,
                requires,
                source: e.path.display().to_string(),
                cuda_needed: cuda_needed(host, site, &e.path),
                torch_symbol_missing: torch_symbol_gap(host, site, &e.path),
            })
        })
        .collect()
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

/// The CUDA sonames (of [`CUDA_MAJOR_LIBS`]) that the `.so` files a package's RECORD lists need.
fn cuda_needed(host: &Host, site: &Path, dist: &Path) -> Vec<String> {
    let record = host.fs.read_opt(dist.join("RECORD")).unwrap_or_default();
    let mut out: Vec<String> = record
        .lines()
        .filter_map(|l| l.split(',').next())
        .filter(|f| f.ends_with(".so") && !f.starts_with('/') && !f.split('/').any(|c| c == ".."))
        .take(MAX_EXTENSION_OBJECTS)
        .filter_map(|f| {
            let file = host.fs.open_ranged(&site.join(f)).ok()?;
            let mut read = |off: u64, len: usize| file.read_at(off, len);
            crate::parse::elf::parse(&mut read)
        })
        .flat_map(|d| d.needed)
        .filter(|n| CUDA_MAJOR_LIBS.iter().any(|p| n.starts_with(p)))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// torch's own libraries an extension links (`DT_NEEDED`), in the wheel's `torch/lib/`.
const TORCH_LIBS: [&str; 6] = [
    "libc10.so",
    "libc10_cuda.so",
    "libtorch.so",
    "libtorch_cpu.so",
    "libtorch_cuda.so",
    "libtorch_python.so",
];

/// Mangled-name prefixes of torch's C++ namespaces (`c10::`, `at::`, `torch::`, `caffe2::`;
/// `_ZNK` for const members); torch exports no symbol versions, so these needs are unversioned.
const TORCH_NAMESPACES: [&str; 8] = [
    "_ZN3c10",
    "_ZNK3c10",
    "_ZN2at",
    "_ZNK2at",
    "_ZN5torch",
    "_ZNK5torch",
    "_ZN6caffe2",
    "_ZNK6caffe2",
];

/// `std::string` in the two C++ ABIs of libstdc++: `Ss` before C++11's
/// (`_GLIBCXX_USE_CXX11_ABI=0`), `std::__cxx11::basic_string<char>` in it.
const STRING_PRE_CXX11: &str = "Ss";
const STRING_CXX11: &str = "NSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE";

/// Needs compared at most per compiled file (flash-attn's module needs a few hundred).
const MAX_TORCH_NEEDS: usize = 20_000;

/// The first torch C++ symbol a package's compiled files need that the torch libraries they
/// name, in the same site folder, do not define ("undefined symbol:
/// _ZN3c105ErrorC2ENS_14SourceLocationESs", Dao-AILab/flash-attention#1644). Only needs whose
/// providers were all read are judged: a `c10::` need against `libc10.so`, the others against
/// every torch library the file names.
fn torch_symbol_gap(host: &Host, site: &Path, dist: &Path) -> Option<TorchSymbolGap> {
    let record = host.fs.read_opt(dist.join("RECORD")).unwrap_or_default();
    let lib_dir = site.join("torch/lib");
    for rel in record
        .lines()
        .filter_map(|l| l.split(',').next())
        .filter(|f| f.ends_with(".so") && !f.starts_with('/') && !f.split('/').any(|c| c == ".."))
        .take(MAX_EXTENSION_OBJECTS)
    {
        let path = site.join(rel);
        let Ok(file) = host.fs.open_ranged(&path) else {
            continue;
        };
        let mut read = |off: u64, len: usize| file.read_at(off, len);
        let Some(dynamic) = crate::parse::elf::parse(&mut read) else {
            continue;
        };
        let named: Vec<&str> = dynamic
            .needed
            .iter()
            .map(String::as_str)
            .filter(|n| TORCH_LIBS.contains(n))
            .collect();
        if named.is_empty() {
            continue;
        }
        let Ok(needer) = dynsym::parse(&mut read) else {
            continue;
        };
        // Each named torch library's table; one that cannot be read leaves its needs unjudged.
        let mut providers: Vec<(&str, PathBuf, dynsym::Symbols)> = Vec::new();
        let mut unread = false;
        for name in &named {
            let lib = lib_dir.join(name);
            let table = host.fs.open_ranged(&lib).ok().and_then(|f| {
                let mut read = |off: u64, len: usize| f.read_at(off, len);
                dynsym::parse(&mut read).ok()
            });
            match table {
                Some(t) => providers.push((name, lib, t)),
                None => unread = true,
            }
        }
        let c10 = providers.iter().find(|(n, _, _)| *n == "libc10.so");
        let wanted: Vec<&dynsym::Need> = needer
            .needs
            .iter()
            .filter(|n| n.version.is_none())
            .filter(|n| TORCH_NAMESPACES.iter().any(|p| n.name.starts_with(p)))
            // c10::cuda:: lives in libc10_cuda.so; the rest of c10:: in libc10.so.
            .filter(|n| {
                if n.name.starts_with("_ZN3c10") && !n.name.starts_with("_ZN3c104cuda") {
                    c10.is_some()
                } else {
                    !unread
                }
            })
            .take(MAX_TORCH_NEEDS)
            .collect();
        if wanted.is_empty() || providers.is_empty() {
            continue;
        }
        let defined = |name: &str| providers.iter().any(|(_, _, t)| t.defines(name, None));
        let missing: Vec<&&dynsym::Need> = wanted.iter().filter(|n| !defined(&n.name)).collect();
        let Some(first) = missing.first() else {
            continue;
        };
        // The same symbol in the other ABI, defined by torch: the build's ABI differs.
        let abi = if first.name.contains(STRING_CXX11) {
            defined(&first.name.replace(STRING_CXX11, STRING_PRE_CXX11)).then_some("cxx11")
        } else if first.name.contains(STRING_PRE_CXX11) {
            defined(&first.name.replace(STRING_PRE_CXX11, STRING_CXX11)).then_some("pre-cxx11")
        } else {
            None
        };
        return Some(TorchSymbolGap {
            object: path.display().to_string(),
            symbol: first.name.clone(),
            libraries: providers
                .iter()
                .map(|(_, p, _)| p.display().to_string())
                .collect(),
            abi: abi.map(str::to_string),
            missing: u32::try_from(missing.len()).unwrap_or(u32::MAX),
            compared: u32::try_from(wanted.len()).unwrap_or(u32::MAX),
        });
    }
    None
}

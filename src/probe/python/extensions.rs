//! Packages with compiled code built against torch (vLLM, xformers, flash-attn, ...) in a site
//! folder, and the CUDA major their shared objects need (`DT_NEEDED`).

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
            Some(Extension {
                name,
                version,
                requires,
                source: e.path.display().to_string(),
                cuda_needed: cuda_needed(host, site, &e.path),
                cuda_major,
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

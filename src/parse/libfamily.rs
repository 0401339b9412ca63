//! Which CUDA library family a soname belongs to, and how people write the family's name.

use crate::parse::libname::split_soname;

/// Family id, and the file stems that belong to it (`libcublasLt` is cuBLAS).
pub const FAMILIES: [(&str, &[&str]); 15] = [
    ("cudart", &["libcudart"]),
    ("cublas", &["libcublas", "libcublasLt"]),
    ("cudnn", &[]),
    ("nccl", &["libnccl"]),
    ("nvjitlink", &["libnvJitLink"]),
    ("nvrtc", &["libnvrtc"]),
    ("cusparse", &["libcusparse"]),
    ("cusparselt", &["libcusparseLt"]),
    ("cufft", &["libcufft"]),
    ("cusolver", &["libcusolver"]),
    ("curand", &["libcurand"]),
    ("cupti", &["libcupti"]),
    ("cufile", &["libcufile"]),
    ("nvshmem", &["libnvshmem_host"]),
    (
        "tensorrt",
        &["libnvinfer", "libnvinfer_plugin", "libnvonnxparser"],
    ),
];

/// The family of a soname ("libcudnn_ops.so.9" → "cudnn"), or `None` for a library that is
/// not one of the CUDA families.
#[must_use]
pub fn of(soname: &str) -> Option<&'static str> {
    let (stem, _) = split_soname(soname)?;
    // auditwheel renames the copies it bundles (`torch/lib/libcudart-9335f6a2.so.12`).
    let stem = match stem.rsplit_once('-') {
        Some((base, hash)) if hash.len() == 8 && hash.chars().all(|c| c.is_ascii_hexdigit()) => {
            base
        }
        _ => stem,
    };
    // All of cuDNN's sub-libraries (libcudnn_ops, libcudnn_cnn_infer, libcudnn_engines_*).
    if stem == "libcudnn" || stem.starts_with("libcudnn_") {
        return Some("cudnn");
    }
    FAMILIES
        .iter()
        .find(|(_, stems)| stems.contains(&stem))
        .map(|(id, _)| *id)
}

/// How people write a family's name.
#[must_use]
pub fn display(family: &str) -> &str {
    match family {
        "cudart" => "cudart",
        "cublas" => "cuBLAS",
        "cudnn" => "cuDNN",
        "nccl" => "NCCL",
        "nvjitlink" => "nvJitLink",
        "nvrtc" => "NVRTC",
        "cusparse" => "cuSPARSE",
        "cusparselt" => "cuSPARSELt",
        "cufft" => "cuFFT",
        "cusolver" => "cuSOLVER",
        "curand" => "cuRAND",
        "cupti" => "CUPTI",
        "cufile" => "cuFile",
        "nvshmem" => "NVSHMEM",
        "tensorrt" => "TensorRT",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn families_of_sonames() {
        assert_eq!(
            super::of("libcudnn_engines_precompiled.so.9"),
            Some("cudnn")
        );
        assert_eq!(super::of("libcublasLt.so.13"), Some("cublas"));
        assert_eq!(super::of("libcusparseLt.so.0"), Some("cusparselt"));
        assert_eq!(super::of("libcusparse.so.12"), Some("cusparse"));
        assert_eq!(super::of("libnvJitLink.so.12"), Some("nvjitlink"));
        assert_eq!(super::of("libc.so.6"), None);
        assert_eq!(super::of("libcudart-9335f6a2.so.12"), Some("cudart"));
        assert_eq!(super::of("libnvrtc-builtins.so.13.0"), None);
    }
}

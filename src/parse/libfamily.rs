//! Which CUDA library family a soname belongs to, and how people write the family's name.

use crate::parse::libname::split_soname;
use crate::report::LibraryFamily;

/// Each family, and the file stems that belong to it (`libcublasLt` is cuBLAS).
pub const FAMILIES: [(LibraryFamily, &[&str]); 15] = [
    (LibraryFamily::Cudart, &["libcudart"]),
    (LibraryFamily::Cublas, &["libcublas", "libcublasLt"]),
    (LibraryFamily::Cudnn, &[]),
    (LibraryFamily::Nccl, &["libnccl"]),
    (LibraryFamily::Nvjitlink, &["libnvJitLink"]),
    (LibraryFamily::Nvrtc, &["libnvrtc"]),
    (LibraryFamily::Cusparse, &["libcusparse"]),
    (LibraryFamily::Cusparselt, &["libcusparseLt"]),
    (LibraryFamily::Cufft, &["libcufft"]),
    (LibraryFamily::Cusolver, &["libcusolver"]),
    (LibraryFamily::Curand, &["libcurand"]),
    (LibraryFamily::Cupti, &["libcupti"]),
    (LibraryFamily::Cufile, &["libcufile"]),
    (LibraryFamily::Nvshmem, &["libnvshmem_host"]),
    (
        LibraryFamily::Tensorrt,
        &["libnvinfer", "libnvinfer_plugin", "libnvonnxparser"],
    ),
];

/// The family of a soname ("libcudnn_ops.so.9" → "cudnn"), or `None` for a library that is
/// not one of the CUDA families.
#[must_use]
pub fn of(soname: &str) -> Option<LibraryFamily> {
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
        return Some(LibraryFamily::Cudnn);
    }
    FAMILIES
        .iter()
        .find(|(_, stems)| stems.contains(&stem))
        .map(|(family, _)| family.clone())
}

/// ROCm's libraries, by file stem, with the name each family is written as (the family a
/// ROCm framework's `DT_NEEDED` names: `libroctx64.so.4` is ROCTX). Sonames from the ROCm
/// packages' own files (`/opt/rocm/lib`) and from the reports that quote them
/// (ROCm/legacy-rocm-build#6053: "ImportError: libroctx64.so.4"; ROCm/TheRock#4150:
/// "ImportError: librocprofiler-sdk.so.1").
const ROCM_FAMILIES: [(&str, &str); 23] = [
    ("libamdhip64", "HIP"),
    ("libhsa-runtime64", "HSA runtime"),
    ("libroctx64", "ROCTX"),
    ("libroctracer64", "ROCTracer"),
    ("librocprofiler64", "rocprofiler"),
    ("librocprofiler-sdk", "rocprofiler-sdk"),
    ("librocm_smi64", "ROCm SMI"),
    ("libamd_comgr", "comgr"),
    ("libhiprtc", "hipRTC"),
    ("librocblas", "rocBLAS"),
    ("libhipblas", "hipBLAS"),
    ("libhipblaslt", "hipBLASLt"),
    ("libMIOpen", "MIOpen"),
    ("librccl", "RCCL"),
    ("librocsolver", "rocSOLVER"),
    ("libhipsolver", "hipSOLVER"),
    ("librocsparse", "rocSPARSE"),
    ("libhipsparse", "hipSPARSE"),
    ("libhipsparselt", "hipSPARSELt"),
    ("librocfft", "rocFFT"),
    ("libhipfft", "hipFFT"),
    ("librocrand", "rocRAND"),
    ("libhiprand", "hipRAND"),
];

/// The ROCm family of a soname ("libroctx64.so.4" → "ROCTX"), or `None` for a library that is
/// not one of ROCm's. The report writes it as the family's name (a `LibraryFamily::Other`).
#[must_use]
pub fn rocm(soname: &str) -> Option<LibraryFamily> {
    let (stem, _) = split_soname(soname)?;
    ROCM_FAMILIES
        .iter()
        .find(|(s, _)| *s == stem)
        .map(|(_, name)| LibraryFamily::Other((*name).to_string()))
}

/// NVIDIA libraries that neither the CUDA toolkit nor JetPack installs, linked by framework builds
/// made outside PyPI (NVIDIA's Jetson AI Lab and SBSA torch wheels): by file stem (a stem that
/// starts with one followed by `_` belongs to it: `libnvpl_lapack_lp64_gomp`), the name the
/// family is written as, and how it is installed. Sonames and packages from the reports that
/// quote them: NVIDIA/Isaac-GR00T#343 ("ImportError: libcudss.so.0", fixed by NVIDIA's
/// `sudo apt-get -y install cudss` from the CUDA repository after its `cuda-keyring`),
/// pollen-robotics/microduck_rl#38 (`libnvpl_lapack_lp64_gomp.so.0`, then `libcudss.so.0`,
/// fixed with the `nvpl-blas`, `nvpl-lapack` and `nvidia-cudss-cu13` wheels).
const SEPARATE_FAMILIES: [(&str, &str, &str); 3] = [
    (
        "libcudss",
        "cuDSS",
        "NVIDIA's CUDA repository's `cudss` package (on Ubuntu: its `cuda-keyring`, then `sudo apt-get install cudss`), or NVIDIA's cuDSS wheel for the build's CUDA major (`nvidia-cudss-cu13` for CUDA 13) with its folder on the search path",
    ),
    (
        "libnvpl_blas",
        "NVPL BLAS",
        "the `nvpl-blas` wheel, with its folder on the search path",
    ),
    (
        "libnvpl_lapack",
        "NVPL LAPACK",
        "the `nvpl-lapack` wheel, with its folder on the search path",
    ),
];

fn separate_row(soname: &str) -> Option<&'static (&'static str, &'static str, &'static str)> {
    let (stem, _) = split_soname(soname)?;
    SEPARATE_FAMILIES.iter().find(|(s, _, _)| {
        stem == *s
            || stem
                .strip_prefix(s)
                .is_some_and(|rest| rest.starts_with('_'))
    })
}

/// The family of an NVIDIA library installed apart from CUDA ("libcudss.so.0" → "cuDSS"), or
/// `None`. The report writes it as the family's name (a `LibraryFamily::Other`).
#[must_use]
pub fn separate(soname: &str) -> Option<LibraryFamily> {
    separate_row(soname).map(|(_, name, _)| LibraryFamily::Other((*name).to_string()))
}

/// How an NVIDIA library installed apart from CUDA is installed, for a soname of one.
#[must_use]
pub fn separate_install(soname: &str) -> Option<&'static str> {
    separate_row(soname).map(|(_, _, install)| *install)
}

/// How people write a family's name.
#[must_use]
pub fn display(family: &LibraryFamily) -> &str {
    match family {
        LibraryFamily::Cudart => "cudart",
        LibraryFamily::Cublas => "cuBLAS",
        LibraryFamily::Cudnn => "cuDNN",
        LibraryFamily::Nccl => "NCCL",
        LibraryFamily::Nvjitlink => "nvJitLink",
        LibraryFamily::Nvrtc => "NVRTC",
        LibraryFamily::Cusparse => "cuSPARSE",
        LibraryFamily::Cusparselt => "cuSPARSELt",
        LibraryFamily::Cufft => "cuFFT",
        LibraryFamily::Cusolver => "cuSOLVER",
        LibraryFamily::Curand => "cuRAND",
        LibraryFamily::Cupti => "CUPTI",
        LibraryFamily::Cufile => "cuFile",
        LibraryFamily::Nvshmem => "NVSHMEM",
        LibraryFamily::Tensorrt => "TensorRT",
        LibraryFamily::Other(other) => other,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rocm_sonames_have_rocm_families_and_cuda_ones_do_not() {
        use crate::report::LibraryFamily as F;
        assert_eq!(
            super::rocm("libroctx64.so.4"),
            Some(F::Other("ROCTX".to_string()))
        );
        assert_eq!(
            super::rocm("libamdhip64.so.7"),
            Some(F::Other("HIP".to_string()))
        );
        assert_eq!(super::rocm("libcudart.so.12"), None);
        assert_eq!(super::of("libroctx64.so.4"), None);
    }

    #[test]
    fn libraries_installed_apart_from_cuda_have_their_own_families() {
        use crate::report::LibraryFamily as F;
        assert_eq!(
            super::separate("libcudss.so.0"),
            Some(F::Other("cuDSS".to_string()))
        );
        assert_eq!(
            super::separate("libnvpl_lapack_lp64_gomp.so.0"),
            Some(F::Other("NVPL LAPACK".to_string()))
        );
        assert!(super::separate_install("libcudss.so.0").is_some_and(|w| w.contains("cudss")));
        // Neither a CUDA family nor a stem that only begins the same way.
        assert_eq!(super::separate("libcusparse.so.12"), None);
        assert_eq!(super::separate("libcudssx.so.1"), None);
        assert_eq!(super::of("libcudss.so.0"), None);
    }

    #[test]
    fn families_of_sonames() {
        use crate::report::LibraryFamily as F;
        assert_eq!(
            super::of("libcudnn_engines_precompiled.so.9"),
            Some(F::Cudnn)
        );
        assert_eq!(super::of("libcublasLt.so.13"), Some(F::Cublas));
        assert_eq!(super::of("libcusparseLt.so.0"), Some(F::Cusparselt));
        assert_eq!(super::of("libcusparse.so.12"), Some(F::Cusparse));
        assert_eq!(super::of("libnvJitLink.so.12"), Some(F::Nvjitlink));
        assert_eq!(super::of("libc.so.6"), None);
        assert_eq!(super::of("libcudart-9335f6a2.so.12"), Some(F::Cudart));
        assert_eq!(super::of("libnvrtc-builtins.so.13.0"), None);
    }
}

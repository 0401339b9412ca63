//! Python environments and what they hold: framework builds, their components and wheels, and
//! extension packages with compiled code of their own.

use serde::{Deserialize, Serialize};

use super::EnvKind;

/// A Python environment and the GPU frameworks installed in it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PythonEnv {
    /// The environment's prefix ("/opt/torch/.venv", "/usr").
    pub path: String,
    /// "venv", "conda", "system".
    pub kind: EnvKind,
    pub python_version: Option<String>,
    pub interpreter: Option<String>,
    pub site_packages: Vec<String>,
    /// How it was found: "PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "conda-environments", "system".
    pub found_via: Vec<String>,
    pub frameworks: Vec<Framework>,
    /// `nvidia-*` pip wheels (cuDNN, NCCL, cuBLAS, ...).
    pub nvidia_wheels: Vec<Wheel>,
    /// ROCm runtime wheels (TheRock's `rocm`, `rocm-sdk-core`, `rocm-sdk-libraries-<family>`);
    /// absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rocm_wheels: Vec<Wheel>,
    /// Packages that ship their own compiled code built against a framework (vLLM, flash-attn,
    /// xformers, bitsandbytes, DeepSpeed, torchvision, torchaudio), with the framework pins of
    /// their metadata; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<Extension>,
    /// numba's CUDA target (the built-in `numba.cuda`, or the numba-cuda package that replaces
    /// it), the CUDA binding package beside it and the libNVVM it would compile with; absent
    /// when neither numba nor numba-cuda is installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numba: Option<NumbaTarget>,
}

/// numba's CUDA target in an environment, read from dist-info folders and the files where
/// numba-cuda looks for libNVVM.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NumbaTarget {
    /// numba's version ("0.61.2"); null when only numba-cuda's files are there.
    pub numba: Option<String>,
    /// The numba-cuda package ("0.20.0"), which replaces the built-in target when installed;
    /// null when the built-in target is all there is.
    pub numba_cuda: Option<String>,
    /// NVIDIA's CUDA Python binding beside it, as "cuda-bindings 12.9.0" or "cuda-python
    /// 12.6.2"; null when neither is installed (the ctypes binding is then the only one).
    pub cuda_bindings: Option<String>,
    /// The libNVVM numba would load, in numba-cuda's order: a pip wheel of the environment
    /// (`nvidia-cuda-nvcc-cu12`, `nvidia-nvvm` 13), a conda environment's `nvvm/lib64` (or
    /// cudatoolkit's `lib/`), `CUDA_HOME` / `CUDA_PATH`, `/usr/local/cuda`, the loader's
    /// folders. Null when none is there.
    pub nvvm: Option<Nvvm>,
    /// Where libNVVM was looked for when none was found; empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvvm_looked_at: Vec<String>,
}

/// A libNVVM and the CUDA release it comes with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Nvvm {
    /// The library file ("/opt/venv/.../nvidia/cuda_nvcc/nvvm/lib64/libnvvm.so").
    pub path: String,
    /// Its CUDA release ("12.5.82"), from the wheel's or conda package's version; null for a
    /// toolkit's, whose release is the `toolkits[]` entry holding `path`.
    pub cuda: Option<String>,
    /// "pip nvidia-cuda-nvcc-cu12", "conda cuda-nvcc", "CUDA_HOME", "/usr/local/cuda", "loader".
    pub found_via: String,
}

/// A package with its own compiled code built against a framework.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Extension {
    /// The normalised distribution name ("vllm", "flash-attn", "torchvision").
    pub name: String,
    pub version: String,
    /// Its `Requires-Dist` lines on torch, torchvision, torchaudio or TensorRT (`tensorrt`,
    /// `tensorrt-cu12-libs`, ...) outside extras, as name and specifier ("torch==2.8.0",
    /// "tensorrt==10.1.0"); empty when it pins none.
    pub requires: Vec<String>,
    /// The dist-info folder they were read from.
    pub source: String,
    /// The CUDA libraries whose major follows CUDA's (`libcudart`, `libcublas`, `libcublasLt`,
    /// `libnvrtc`, `libnvJitLink`) that its own compiled files need (`DT_NEEDED` of the `.so`
    /// files its RECORD lists): "libcudart.so.12". Empty when none, or not read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuda_needed: Vec<String>,
    /// The other CUDA families' libraries its compiled files need (`DT_NEEDED`): cuDNN, NCCL,
    /// cuFFT, cuSPARSE, cuSOLVER, cuRAND, ... ("libcudnn.so.8"), whose sonames do not follow
    /// the CUDA major. Empty when none, or not read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub libraries_needed: Vec<String>,
    /// torch C++ symbols (`c10::`, `at::`, `torch::`) its compiled files need that none of the
    /// torch libraries in its site folder (`torch/lib/libc10*.so`, `libtorch*.so`) defines:
    /// what `import` fails on ("undefined symbol: _ZN3c104cuda9SetDeviceEi"), the first 8.
    /// Empty when all are defined, or when torch's libraries were not all read whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub torch_symbols_missing: Vec<String>,
    /// The C++ string ABI those missing symbols are spelled in, where torch's libraries define
    /// one of them in the other spelling: "cxx11" (`std::__cxx11::basic_string`, a build with
    /// `_GLIBCXX_USE_CXX11_ABI=1` over a torch of the old ABI) or "pre-cxx11" (`Ss`,
    /// `_GLIBCXX_USE_CXX11_ABI=0` over a C++11-ABI torch). Absent when no missing symbol has
    /// such a twin (a build against another torch release), or none is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_symbols_abi: Option<String>,
    /// The compute capabilities its compiled files carry SASS for (their `.nv_fatbin`
    /// sections, `parse::fatbin`): "8.0", "9.0". Empty when none carries a fatbin, or one was
    /// read only in part.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fatbin_sass: Vec<String>,
    /// The compute capabilities its compiled files carry PTX for (which the driver compiles
    /// for the GPU, or any newer one); empty as `fatbin_sass`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fatbin_ptx: Vec<String>,
    /// The CUDA major a TensorRT wheel is built for, as its own metadata says: the `cuNN` of its
    /// name (`tensorrt-cu13-libs`), else of the `nvidia-*-cuNN` wheels its `Requires-Dist`
    /// names (`tensorrt-libs` 9.x: `nvidia-cuda-runtime-cu11`). Null for other packages, or
    /// when neither says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_major: Option<String>,
    /// The CUDA versions a package carries one native library for, from the file names its
    /// RECORD lists (bitsandbytes' `bitsandbytes/libbitsandbytes_cuda128.so` → "12.8"), in
    /// version order: it loads the one of torch's CUDA. Empty for other packages, or when its
    /// RECORD lists none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuda_libraries: Vec<String>,
}

impl PythonEnv {
    /// What people call this environment: its kind, except that an interpreter of a version
    /// manager (pyenv, asdf, mise, uv's own Pythons), which the report's `kind` calls
    /// "system" (no venv, no conda), is named by its manager.
    #[must_use]
    pub fn kind_label(&self) -> String {
        const MANAGERS: [&str; 4] = ["pyenv", "asdf", "mise", "uv"];
        if self.kind == EnvKind::System
            && let Some(manager) = self.found_via.iter().find_map(|via| {
                let name = via.split(' ').next().unwrap_or(via);
                MANAGERS.contains(&name).then_some(name)
            })
        {
            return manager.to_string();
        }
        self.kind.as_str().to_string()
    }
}

/// A framework build found in an environment's files.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Framework {
    /// "torch", "tensorflow", "jax", "cupy".
    pub name: String,
    pub version: Option<String>,
    /// The CUDA version it was built for ("13.0"; JAX and CuPy name only the major, "13");
    /// null for a CPU or ROCm build.
    pub cuda: Option<String>,
    /// cuDNN it was built for or pins, when its files say.
    pub cudnn: Option<String>,
    /// ROCm/HIP version of a ROCm build.
    pub rocm: Option<String>,
    /// "cuda", "rocm", "cpu", or null when unknown.
    pub variant: Option<String>,
    /// Compute capabilities compiled in, when its files say ("sm_90").
    pub arch_list: Vec<String>,
    /// `nvidia-*` wheels its metadata pins ("nvidia-cudnn-cu13==9.19.0.56").
    pub pins: Vec<String>,
    /// The packages the framework is split into, each with its own version: JAX's `jaxlib`,
    /// `jax-cuda13-plugin`, `jax-cuda13-pjrt`, whose CUDA build facts these are; JAX refuses
    /// to start when their versions disagree with jax's. Empty for one-package frameworks.
    #[serde(default)]
    pub components: Vec<Component>,
    /// The file the build facts came from.
    pub source: String,
    /// The pip distribution when its name says more than `name` ("tensorflow-cpu": a CPU
    /// build chosen by name), or the conda package it came from ("pytorch (conda)"); null
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution: Option<String>,
    /// What the framework said when the environment's interpreter imported it (`doctor
    /// --deep`, `smoke --frameworks`): GPUs seen, build, warnings, and the smoke computation.
    /// Null when not asked, or when another copy of it in the same environment is the one
    /// that interpreter imports.
    #[serde(default)]
    pub runtime: Option<crate::report::runtime::FrameworkRuntime>,
    /// A ROCm build: the gfx targets its own files carry ("gfx1100"), sorted; absent when its
    /// files do not say (see `gfx_targets_source`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gfx_targets: Vec<String>,
    /// Where `gfx_targets` came from ("torch/lib/rocblas/library: 11 TensileLibrary_lazy_gfx*
    /// files"); absent with them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gfx_targets_source: Option<String>,
    /// A ROCm build: the gfx targets of the hipBLASLt kernels it loads (its own
    /// `torch/lib/hipblaslt/library`, or TheRock's ROCm wheels beside it), sorted; absent when
    /// none are found. torch runs `nn.Linear` through hipBLASLt on some targets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hipblaslt_targets: Vec<String>,
    /// The folder `hipblaslt_targets` came from; absent with them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hipblaslt_source: Option<String>,
    /// A ROCm build: the ROCm runtime libraries it ships inside its own folder
    /// ("torch/lib/libamdhip64.so", "torch/lib/libhsa-runtime64.so"), as paths; absent when none.
    /// A `libhsa-runtime64.so` that links to, or is a same-size copy of, `/opt/rocm`'s (the step
    /// AMD's ROCm-on-WSL guide gives) is the system's, not listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bundled_runtime: Vec<String>,
}

/// One package of a framework split into several, or one component of a toolkit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Component {
    /// "jaxlib", "jax-cuda13-plugin"; a toolkit's "cuda_nvcc", "cuda_cudart".
    pub name: String,
    /// "0.11.2", "13.0.88" as the package or file says.
    pub version: String,
}

/// An installed pip wheel.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Wheel {
    pub name: String,
    pub version: String,
    /// Its shared-library folder, when it has one.
    pub lib_dir: Option<String>,
}

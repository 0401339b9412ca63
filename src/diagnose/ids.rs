//! The one registry of finding IDs: every ID a rule, the smoke test or `--deep` can report, the
//! severities it may carry and what it means in a few words. IDs are a public interface
//! (`doctor --json`, `check`, Prometheus labels, README's findings table); tests keep this table,
//! the rules' `explains` lists and README in step, so a typo in an ID fails a test instead of
//! silently never matching. Depends on `report` only.

use crate::report::Severity;

/// One kind of finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    /// The stable ID ("driver-library-mismatch").
    pub id: &'static str,
    /// The severities it is reported with, most severe first.
    pub severities: &'static [Severity],
    /// What it means: the "meaning" column of README's findings table, which is written from
    /// this list (`readme_findings_table_is_written_from_the_registry`).
    pub title: &'static str,
}

/// Every finding kind, in README's order. A kind missing here fails `every_static_is_listed`.
pub static KINDS: &[&Kind] = &[
    &NO_GPU,
    &NO_DRIVER,
    &AMDGPU_NOT_LOADED,
    &AMDGPU_NOT_BOUND,
    &AMDGPU_DKMS_BUILD_FAILED,
    &KFD_MISSING,
    &ROCM_GPU_UNSUPPORTED,
    &ROCM_DEVICE_PERMISSION,
    &ROCM_TOO_OLD_FOR_GPU,
    &ROCM_LIBRARY_MISSING_TARGET,
    &HIPBLASLT_MISSING_TARGET,
    &NOVA_CORE_BOUND,
    &NOUVEAU_LOADED,
    &GPU_SWITCHED_OFF,
    &DRIVER_LIBRARY_MISMATCH,
    &NVIDIA_SMI_FAILED,
    &DRIVER_TOO_OLD_FOR_GPU,
    &DRIVER_TOO_NEW_FOR_GPU,
    &MODULE_FLAVOUR_UNSUPPORTED,
    &DRIVER_TOO_OLD_FOR_FRAMEWORK,
    &DRIVER_TOO_OLD_FOR_IMAGE,
    &TOOLKIT_NEWER_THAN_DRIVER,
    &CPU_ONLY_FRAMEWORK_BUILD,
    &ARCH_NOT_IN_BUILD,
    &CUDA_BUILD_ON_AMD_GPU,
    &HSA_OVERRIDE_MISMATCH,
    &ROCM_IGPU_VISIBLE,
    &WSL_ROCM_RUNTIME_BUNDLED,
    &CUDNN_MISSING,
    &CUDNN_VERSION_MISMATCH,
    &CUDNN_GPU_UNSUPPORTED,
    &LIBRARY_PATH_SHADOWING,
    &LIBRARY_COPIES_DIFFER,
    &LIBRARY_NOT_FOUND,
    &MULTIPLE_TOOLKITS,
    &TOOLKIT_CANNOT_TARGET_GPU,
    &TOOLKIT_FRAMEWORK_CUDA_MISMATCH,
    &HOST_COMPILER_TOO_NEW_FOR_NVCC,
    &EXTENSION_TORCH_MISMATCH,
    &EXTENSION_CUDA_MISMATCH,
    &ONNXRUNTIME_CUDA_LIBRARIES,
    &TENSORRT_GPU_UNSUPPORTED,
    &EXTENSION_CANNOT_RUN_ON_GPU,
    &TRITON_GPU_TOO_OLD,
    &TRITON_PTXAS_TOO_OLD_FOR_GPU,
    &JAX_VERSION_SKEW,
    &JAX_PLUGIN_VERSION_MISMATCH,
    &CUDA_LIBRARY_TOO_OLD,
    &ARCH_CHECK_SKIPPED,
    &FRAMEWORK_WHEELS_CONFLICT,
    &STUB_LIBCUDA_ON_PATH,
    &FORWARD_COMPAT_UNSUPPORTED,
    &FORWARD_COMPAT_OLDER_THAN_DRIVER,
    &FORWARD_COMPAT_BRANCH_UNSUPPORTED,
    &CONTAINER_DRIVER_CAPABILITIES,
    &DRIVER_COMPUTE_LIBRARIES_MISSING,
    &CONTAINER_NO_GPU_RUNTIME,
    &CONTAINER_LOST_GPU_ACCESS,
    &CDI_SPEC_STALE,
    &CDI_SPEC_DEVICE_MISMATCH,
    &CDI_SPEC_VERSION_UNSUPPORTED,
    &VISIBLE_DEVICES_HIDES_GPUS,
    &MIG_NO_INSTANCES,
    &COMPUTE_MODE_PROHIBITED,
    &CONTAINER_SHM_SMALL,
    &WSL_DRIVER_IN_GUEST,
    &WSL_CONTAINER_DRIVER_FILE_MISSING,
    &FABRIC_NOT_COMPLETED,
    &FABRIC_MANAGER_NOT_RUNNING,
    &GPU_THERMAL_THROTTLE,
    &GPU_ECC_ERRORS,
    &PCIE_LINK_DEGRADED,
    &GPU_PEER_VIA_IOMMU,
    &MIXED_GPU_MODELS,
    &PERSISTENCE_MODE_OFF,
    &NCCL_INTERFACE_UNSET,
    &CUDA_LAUNCH_BLOCKING_SET,
    &PYTORCH_ALLOC_CONF_UNKNOWN_KEY,
    &MANIFESTS_STALE,
    &FRAMEWORK_CANNOT_SEE_GPU,
    &FRAMEWORK_IMPORT_FAILED,
    &FRAMEWORK_PROBE_FAILED,
    &FRAMEWORK_SMOKE_FAILED,
    &NCCL_ALLREDUCE_FAILED,
    &GPU_WRONG_RESULTS,
    &GPU_MEMORY_ERRORS,
    &GPU_UNDERPERFORMING,
    &GPU_PEER_ACCESS_MISSING,
    &DRIVER_TOO_OLD_FOR_PTX,
    &GPU_OUT_OF_MEMORY,
    &GPU_FAULT,
    &SMOKE_CUDA_ERROR,
    &NUMBA_PTX_NEWER_THAN_DRIVER,
    &NUMBA_GPU_UNSUPPORTED,
    &NUMBA_LIBNVVM_MISSING,
    &NUMBA_BUILTIN_CUDA_TARGET,
    &NUMBA_CUDA_BINDING_MISSING,
    &NCCL_GPU_UNSUPPORTED,
    &LIBRARY_SYMBOL_MISSING,
    &ONNXRUNTIME_TENSORRT_LIBRARIES,
];

pub static NO_GPU: Kind = Kind {
    id: "no-gpu",
    severities: &[Severity::Info],
    title: "nothing on the PCI bus and no driver (in a container too, when the bus it sees has no NVIDIA GPU)",
};

pub static NO_DRIVER: Kind = Kind {
    id: "no-driver",
    severities: &[Severity::Error],
    title: "an NVIDIA GPU is on the bus but the nvidia module is not loaded; with Secure Boot on and a module built for the running kernel, the fix leads with MOK enrollment",
};

pub static AMDGPU_NOT_LOADED: Kind = Kind {
    id: "amdgpu-not-loaded",
    severities: &[Severity::Error],
    title: "an AMD GPU is on the bus but the amdgpu module is not loaded; the fix follows the cause the files show (`nomodeset` or a blacklist, the radeon driver on GCN 1/2, vfio-pci passthrough)",
};

pub static AMDGPU_NOT_BOUND: Kind = Kind {
    id: "amdgpu-not-bound",
    severities: &[Severity::Error],
    title: "amdgpu is loaded but no driver took an AMD GPU on the bus (the running kernel's amdgpu or its firmware predates the card, or its start failed): no KFD node, no render node; the fix is a kernel and linux-firmware that know the card, in the distribution's words, or AMD's amdgpu-dkms",
};

pub static AMDGPU_DKMS_BUILD_FAILED: Kind = Kind {
    id: "amdgpu-dkms-build-failed",
    severities: &[Severity::Error, Severity::Warning],
    title: "AMD's amdgpu-dkms failed to build for the running kernel (a kernel newer than the release's kernel base, or one whose backports it does not know); a warning while the kernel's own amdgpu runs, an error when no amdgpu is loaded",
};

pub static KFD_MISSING: Kind = Kind {
    id: "kfd-missing",
    severities: &[Severity::Error],
    title: "amdgpu drives the GPU but `/dev/kfd` is missing: a container started without `--device=/dev/kfd --device=/dev/dri`, or a kernel whose amdgpu has no KFD",
};

pub static ROCM_GPU_UNSUPPORTED: Kind = Kind {
    id: "rocm-gpu-unsupported",
    severities: &[Severity::Error, Severity::Warning],
    title: "no ROCm release can run on the AMD GPU: KFD does not take it (GCN 1, Bonaire) or it is gfx8 or older (dropped in ROCm 4.0); a warning when another AMD GPU here is usable",
};

pub static ROCM_DEVICE_PERMISSION: Kind = Kind {
    id: "rocm-device-permission",
    severities: &[Severity::Error],
    title: "the user may not open `/dev/kfd` or the GPU's render node: not in the node's group (`render`, `video`), or added but not logged in again",
};

pub static ROCM_TOO_OLD_FOR_GPU: Kind = Kind {
    id: "rocm-too-old-for-gpu",
    severities: &[Severity::Error, Severity::Warning],
    title: "the ROCm `/opt/rocm` points at predates the AMD GPU's gfx target (RDNA 4 before 6.4.1, MI350 before 7.0); a warning when the frameworks bring their own runtime",
};

pub static ROCM_LIBRARY_MISSING_TARGET: Kind = Kind {
    id: "rocm-library-missing-target",
    severities: &[Severity::Error, Severity::Warning],
    title: "the rocBLAS of the ROCm install programs link against has no kernels for the GPU's target (\"Cannot read TensileLibrary.dat\"); a warning when the frameworks bring their own",
};

pub static HIPBLASLT_MISSING_TARGET: Kind = Kind {
    id: "hipblaslt-missing-target",
    severities: &[Severity::Error, Severity::Warning, Severity::Info],
    title: "the hipBLASLt a program loads has no Tensile library for the GPU's target: an error for a torch ROCm build that sends nn.Linear to it (HIPBLAS_STATUS_INVALID_VALUE), a warning with ROCBLAS_USE_HIPBLASLT=1, else information (rocBLAS falls back: ollama's \"Cannot read TensileLibrary_lazy_gfx*.dat\" line)",
};

pub static NOVA_CORE_BOUND: Kind = Kind {
    id: "nova-core-bound",
    severities: &[Severity::Error],
    title: "the GPU is bound to nova_core (newer kernels, e.g. Ubuntu 26.04's 7.0): the nvidia module finds no device; the fix blacklists nova_core/nova_drm and rebuilds the initramfs (not `modprobe nvidia`, not a Secure Boot key)",
};

pub static NOUVEAU_LOADED: Kind = Kind {
    id: "nouveau-loaded",
    severities: &[Severity::Error],
    title: "the nouveau driver holds the GPU",
};

pub static GPU_SWITCHED_OFF: Kind = Kind {
    id: "gpu-switched-off",
    severities: &[Severity::Error],
    title: "a graphics switcher or blacklist keeps the NVIDIA GPU off (module blocked, GPU removed)",
};

pub static DRIVER_LIBRARY_MISMATCH: Kind = Kind {
    id: "driver-library-mismatch",
    severities: &[Severity::Error],
    title: "kernel module and user-space driver libraries differ (upgrade without reboot)",
};

pub static NVIDIA_SMI_FAILED: Kind = Kind {
    id: "nvidia-smi-failed",
    severities: &[Severity::Error],
    title: "nvidia-smi is there but fails or hangs",
};

pub static DRIVER_TOO_OLD_FOR_GPU: Kind = Kind {
    id: "driver-too-old-for-gpu",
    severities: &[Severity::Error],
    title: "the installed driver predates the GPU: NVIDIA's drivers list its PCI id only from a later release, so it is not driven (\"No devices were found\"); from `gpu-ids.toml`, Ada and newer",
};

pub static DRIVER_TOO_NEW_FOR_GPU: Kind = Kind {
    id: "driver-too-new-for-gpu",
    severities: &[Severity::Error],
    title: "the installed driver branch is newer than the GPU's last one (R470 Kepler; R580 Maxwell, Pascal, Volta): the driver ignores the GPU; from `cuda.toml`'s `last_driver_branch`",
};

pub static MODULE_FLAVOUR_UNSUPPORTED: Kind = Kind {
    id: "module-flavour-unsupported",
    severities: &[Severity::Error],
    title: "the kernel module's flavour does not drive the GPU: the open modules need Turing or newer, Blackwell and Grace Hopper need the open modules",
};

pub static DRIVER_TOO_OLD_FOR_FRAMEWORK: Kind = Kind {
    id: "driver-too-old-for-framework",
    severities: &[Severity::Error],
    title: "a framework's CUDA build (or onnxruntime-gpu's provider, or TensorRT's pip wheels) needs a newer driver (minor-version compatibility and JAX's floors respected)",
};

pub static DRIVER_TOO_OLD_FOR_IMAGE: Kind = Kind {
    id: "driver-too-old-for-image",
    severities: &[Severity::Error, Severity::Warning],
    title: "the container image's `NVIDIA_REQUIRE_CUDA` (`cuda>=12.8`, or its forward-compatibility branches) is not met by the host driver: the NVIDIA Container Toolkit refuses to start it (\"unsatisfied condition\"); a warning where the check was turned off and the driver's CUDA major still runs it",
};

pub static TOOLKIT_NEWER_THAN_DRIVER: Kind = Kind {
    id: "toolkit-newer-than-driver",
    severities: &[Severity::Warning, Severity::Error, Severity::Info],
    title: "a toolkit newer than the driver's CUDA (same major: PTX JIT fails, a warning where something here JIT-compiles PTX at run time and information where everything found carries SASS; newer major: nothing runs)",
};

pub static CPU_ONLY_FRAMEWORK_BUILD: Kind = Kind {
    id: "cpu-only-framework-build",
    severities: &[Severity::Error, Severity::Warning, Severity::Info],
    title: "a CPU-only framework build on a machine with a usable GPU, NVIDIA or AMD (a KFD node and `/dev/kfd`; the fix is then the ROCm index) (error in a container the runtime gave a GPU, whose fix is the image's GPU variant; info when chosen by package name: `tensorflow-cpu`); onnxruntime's CPU package beside onnxruntime-gpu, which share one module (error)",
};

pub static ARCH_NOT_IN_BUILD: Kind = Kind {
    id: "arch-not-in-build",
    severities: &[Severity::Error],
    title: "the GPU's compute capability has neither SASS nor PTX in the build; for AMD, the GPU's gfx target (or `HSA_OVERRIDE_GFX_VERSION`'s) is not among the gfx targets of the ROCm build's own rocBLAS files (`rocm.toml` when they cannot be listed); the fix names the ROCm wheel index that carries it, and the override only within the GPU's family (never for gfx1103, RDNA 1 or GCN)",
};

pub static CUDA_BUILD_ON_AMD_GPU: Kind = Kind {
    id: "cuda-build-on-amd-gpu",
    severities: &[Severity::Error],
    title: "a framework's CUDA build (torch `+cuXXX`, a JAX CUDA plugin, TensorFlow for CUDA, `cupy-cuda*`) on a machine whose GPUs are AMD; the fix is the ROCm build whose wheels carry the GPU's target",
};

pub static HSA_OVERRIDE_MISMATCH: Kind = Kind {
    id: "hsa-override-mismatch",
    severities: &[Severity::Error, Severity::Warning],
    title: "`HSA_OVERRIDE_GFX_VERSION` is malformed or names another family's target (10.3.0 on RDNA 3, 11.0.0 on a 780M iGPU); a warning when a build here carries the GPU's own target",
};

pub static ROCM_IGPU_VISIBLE: Kind = Kind {
    id: "rocm-igpu-visible",
    severities: &[Severity::Warning],
    title: "ROCm sees an APU's integrated GPU beside the discrete one and no `HIP_VISIBLE_DEVICES` / `ROCR_VISIBLE_DEVICES` hides it",
};

pub static WSL_ROCM_RUNTIME_BUNDLED: Kind = Kind {
    id: "wsl-rocm-runtime-bundled",
    severities: &[Severity::Error],
    title: "under WSL2 (`/dev/dxg`, no `/dev/kfd`) a ROCm torch loads its own `libhsa-runtime64.so` instead of the WSL runtime in `/opt/rocm/lib`",
};

pub static CUDNN_MISSING: Kind = Kind {
    id: "cudnn-missing",
    severities: &[Severity::Error],
    title: "no loadable cuDNN of the major a framework needs",
};

pub static CUDNN_VERSION_MISMATCH: Kind = Kind {
    id: "cudnn-version-mismatch",
    severities: &[Severity::Error, Severity::Warning],
    title: "the cuDNN that would load is older than the build's, or not the pinned wheel",
};

pub static LIBRARY_PATH_SHADOWING: Kind = Kind {
    id: "library-path-shadowing",
    severities: &[Severity::Error, Severity::Warning],
    title: "the copy the loader picks (through LD_LIBRARY_PATH or an inherited RPATH) is another version than the one the framework ships or pins, or the one shipped beside the library needing it (an old nvJitLink under a new cuSPARSE); one finding per environment, every family listed; error when older; for AMD, a system ROCm's `lib` on LD_LIBRARY_PATH before a ROCm wheel's bundled `libamdhip64.so` (error when the ROCm releases differ)",
};

pub static LIBRARY_COPIES_DIFFER: Kind = Kind {
    id: "library-copies-differ",
    severities: &[Severity::Warning],
    title: "one framework's process maps two copies of one CUDA library, one loaded by path (JAX's plugin, torch's preload) and one found by soname through the search path (the toolkit's cuBLASLt needed by the wheel's cuBLAS with the toolkit first on LD_LIBRARY_PATH), and their versions differ: calls bind to whichever was mapped first",
};

pub static LIBRARY_NOT_FOUND: Kind = Kind {
    id: "library-not-found",
    severities: &[Severity::Error],
    title: "a framework module needs a CUDA soname that no folder on its ld.so search path has (names the soname, the module, the folders searched)",
};

pub static MULTIPLE_TOOLKITS: Kind = Kind {
    id: "multiple-toolkits",
    severities: &[Severity::Warning],
    title: "nvcc on PATH, CUDA_HOME and /usr/local/cuda name different toolkits",
};

pub static TOOLKIT_CANNOT_TARGET_GPU: Kind = Kind {
    id: "toolkit-cannot-target-gpu",
    severities: &[Severity::Warning],
    title: "the toolkit extension builds use (CUDA_HOME → CUDA_PATH → nvcc on PATH → /usr/local/cuda) cannot compile for a GPU here (\"nvcc fatal : Unsupported gpu architecture 'compute_89'\"; per-release ranges in cuda.toml)",
};

pub static HOST_COMPILER_TOO_NEW_FOR_NVCC: Kind = Kind {
    id: "host-compiler-too-new-for-nvcc",
    severities: &[Severity::Warning],
    title: "the GCC nvcc would use is newer than the toolkit's `crt/host_config.h` accepts (\"unsupported GNU version! gcc versions later than N are not supported!\"): building CUDA extensions fails; the fix names the GCC to point nvcc at",
};

pub static TOOLKIT_FRAMEWORK_CUDA_MISMATCH: Kind = Kind {
    id: "toolkit-framework-cuda-mismatch",
    severities: &[Severity::Warning, Severity::Info],
    title: "that toolkit's CUDA differs from torch's build in the major (warning: cpp_extension refuses) or the minor (info: torch only warns, \"most likely not a problem\"); only matters for building extensions; the fix names only published torch builds for the env's Python (no `cu125`)",
};

pub static EXTENSION_TORCH_MISMATCH: Kind = Kind {
    id: "extension-torch-mismatch",
    severities: &[Severity::Error],
    title: "a package with its own compiled torch operators (vLLM, xformers, torchvision, flash-attn, mamba-ssm, torch-tensorrt, ...) pins, or was built against, another torch (release or C++ ABI) than the one installed (or torch-tensorrt another TensorRT): its operators do not load",
};

pub static EXTENSION_CUDA_MISMATCH: Kind = Kind {
    id: "extension-cuda-mismatch",
    severities: &[Severity::Error],
    title: "a package's own compiled files (or a TensorRT wheel, by the CUDA major its metadata names) need the CUDA libraries of another major than the environment's torch, or without torch onnxruntime-gpu's provider (`DT_NEEDED` libcudart.so.12 beside a cu130 torch; `tensorrt-cu13-libs` beside a cu128 torch), or another cuDNN, NCCL, cuFFT, ... soname than torch's, found nowhere; bitsandbytes without a library for torch's CUDA (`libbitsandbytes_cuda129.so`)",
};

pub static ONNXRUNTIME_CUDA_LIBRARIES: Kind = Kind {
    id: "onnxruntime-cuda-libraries",
    severities: &[Severity::Error, Severity::Warning],
    title: "onnxruntime-gpu's CUDA provider cannot load: a CUDA or cuDNN library it needs (`DT_NEEDED`) is of another major here, not installed, or only in a pip wheel's folder, which it does not search; it then runs on the CPU. From 1.28 cuDNN is loaded on first use (`dlopen`), and without it only the kernels that need cuDNN fail (a warning). From frameworks.toml `onnxruntime_cuda`, generated from the PyPI wheels",
};

pub static TENSORRT_GPU_UNSUPPORTED: Kind = Kind {
    id: "tensorrt-gpu-unsupported",
    severities: &[Severity::Error],
    title: "the TensorRT installed does not run on the GPU: a release newer than the GPU's last (10.0 on Pascal: \"Target GPU SM 61 is not supported by this TensorRT release\") or older than its first (10.7 on Blackwell); from frameworks.toml `tensorrt_min_cc` and `tensorrt_first_for_cc`",
};

pub static EXTENSION_CANNOT_RUN_ON_GPU: Kind = Kind {
    id: "extension-cannot-run-on-gpu",
    severities: &[Severity::Error],
    title: "a package with its own CUDA kernels (flash-attn, bitsandbytes) has none for the GPU's architecture: it fails when used; from `extension-arch.toml`, generated from its sources",
};

pub static NCCL_GPU_UNSUPPORTED: Kind = Kind {
    id: "nccl-gpu-unsupported",
    severities: &[Severity::Error, Severity::Info],
    title: "the NCCL pip wheel a framework would load has no kernels for a GPU (older than the wheel's lowest architecture, or newer than its newest): collectives fail with \"Cuda failure 'named symbol not found'\" / \"unhandled cuda error\"; information with one GPU; from frameworks.toml `nccl_arch`, generated from the wheels",
};

pub static CUDNN_GPU_UNSUPPORTED: Kind = Kind {
    id: "cudnn-gpu-unsupported",
    severities: &[Severity::Error],
    title: "the cuDNN a framework would load does not run on a GPU: 9.11 or newer below compute capability 7.5 (Maxwell, Pascal, Volta; torch 2.10 on refuses it: \"cuDNN version ... is not compatible with devices with SM < 7.5\"; threshold from frameworks.toml's `torch_cudnn_min_cc`, generated from torch's wheels), an older release below its support matrix's lowest compute capability, or a release before the GPU's architecture (Blackwell from 9.7.0); from cudnn.toml",
};

pub static TRITON_GPU_TOO_OLD: Kind = Kind {
    id: "triton-gpu-too-old",
    severities: &[Severity::Warning, Severity::Info],
    title: "torch.compile's Triton backend refuses a GPU below compute capability 7.0 (\"... too old to be supported by the triton GPU compiler\"); eager torch still runs (information), an engine that compiles by default (vLLM) does not (warning); per release in frameworks.toml's `torch_triton_min_cc`, generated from torch's wheels; where torch's check does not judge the environment, Triton's own floor (`triton_min_cc`) for its kernels called without torch.compile",
};

pub static TRITON_PTXAS_TOO_OLD_FOR_GPU: Kind = Kind {
    id: "triton-ptxas-too-old-for-gpu",
    severities: &[Severity::Warning, Severity::Info],
    title: "the ptxas Triton compiles with (the one its wheel bundles, or `TRITON_PTXAS_PATH`'s) is of a CUDA older than the GPU's architecture, or (through the variable) of one that removed it (\"ptxas fatal : Value 'sm_120' is not defined for option 'gpu-name'\"); information for torch.compile users, warning next to an engine that compiles by default (vLLM, SGLang); per release in frameworks.toml's `triton_ptxas`, generated from Triton's wheels",
};

pub static JAX_VERSION_SKEW: Kind = Kind {
    id: "jax-version-skew",
    severities: &[Severity::Error],
    title: "jaxlib newer than jax, or older than that jax release's `_minimum_jaxlib_version` (`import jax` refuses both; minimums per release in frameworks.toml)",
};

pub static JAX_PLUGIN_VERSION_MISMATCH: Kind = Kind {
    id: "jax-plugin-version-mismatch",
    severities: &[Severity::Error],
    title: "a JAX CUDA plugin wheel (`jax-cudaNN-plugin`, `jax-cudaNN-pjrt`) older or newer than jaxlib's release: jaxlib 0.5.3 on refuses it (\"... is not compatible with the installed jaxlib version ..., so it will not be used\"), older ones load it and fail or crash; per release in frameworks.toml's `jax_plugin_check`, generated from jax's tags",
};

pub static CUDA_LIBRARY_TOO_OLD: Kind = Kind {
    id: "cuda-library-too-old",
    severities: &[Severity::Error],
    title: "the cuBLAS or cuSPARSE a JAX CUDA plugin would load is below the minimum of its own `_check_cuda_versions` (jax 0.4.26 on: 12.1; per release in frameworks.toml): \"Outdated cuSPARSE installation found\", JAX runs on the CPU",
};

pub static ARCH_CHECK_SKIPPED: Kind = Kind {
    id: "arch-check-skipped",
    severities: &[Severity::Info],
    title: "whether a torch build has kernels for a GPU could not be checked (no arch list for that release, or no compute capability)",
};

pub static FRAMEWORK_WHEELS_CONFLICT: Kind = Kind {
    id: "framework-wheels-conflict",
    severities: &[Severity::Error],
    title: "frameworks in one environment pin different `nvidia-*` wheels",
};

pub static STUB_LIBCUDA_ON_PATH: Kind = Kind {
    id: "stub-libcuda-on-path",
    severities: &[Severity::Error, Severity::Warning],
    title: "a link-time stub libcuda is on the run-time loader path",
};

pub static FORWARD_COMPAT_UNSUPPORTED: Kind = Kind {
    id: "forward-compat-unsupported",
    severities: &[Severity::Error, Severity::Warning],
    title: "a forward-compatibility libcuda (by folder, or by version: a cuda-compat copy's, newer than the module, wherever mounted) on a GPU that does not support it (error 804); a warning when the GPU is not in the table",
};

pub static FORWARD_COMPAT_OLDER_THAN_DRIVER: Kind = Kind {
    id: "forward-compat-older-than-driver",
    severities: &[Severity::Error],
    title: "a forward-compatibility libcuda older than the host's driver loads first: CUDA fails with error 803 (system driver mismatch)",
};

pub static FORWARD_COMPAT_BRANCH_UNSUPPORTED: Kind = Kind {
    id: "forward-compat-branch-unsupported",
    severities: &[Severity::Error],
    title: "a forward-compatibility libcuda loads first on a host driver branch that does not accept its CUDA (one that ended before it, or a New Feature Branch); from `cuda.toml`'s `[[forward_compat_host]]`",
};

pub static CONTAINER_DRIVER_CAPABILITIES: Kind = Kind {
    id: "container-driver-capabilities",
    severities: &[Severity::Error, Severity::Warning, Severity::Info],
    title: "a container has the GPU but no libcuda on its loader path: not mounted (`compute` missing from NVIDIA_DRIVER_CAPABILITIES), or mounted where the loader does not look (`/usr/local/nvidia/lib64` without LD_LIBRARY_PATH)",
};

pub static DRIVER_COMPUTE_LIBRARIES_MISSING: Kind = Kind {
    id: "driver-compute-libraries-missing",
    severities: &[Severity::Error, Severity::Warning],
    title: "a host driver without its CUDA library (`libnvidia-compute-<branch>` on Ubuntu)",
};

pub static CONTAINER_NO_GPU_RUNTIME: Kind = Kind {
    id: "container-no-gpu-runtime",
    severities: &[Severity::Error, Severity::Info],
    title: "a container started without the NVIDIA runtime whose bus shows a GPU (info when nothing in it expects one), or whose bus is unreadable and that expects one",
};

pub static CDI_SPEC_STALE: Kind = Kind {
    id: "cdi-spec-stale",
    severities: &[Severity::Error],
    title: "a CDI spec (`/etc/cdi`, `/var/run/cdi`) names driver files that are not on the host: made for another driver release, GPU containers refuse to start",
};

pub static CDI_SPEC_DEVICE_MISMATCH: Kind = Kind {
    id: "cdi-spec-device-mismatch",
    severities: &[Severity::Error, Severity::Warning],
    title: "a CDI spec's devices are not the GPUs and MIG devices present: it lacks some (made before MIG devices were created; error) or lists gone ones (warning)",
};

pub static CDI_SPEC_VERSION_UNSUPPORTED: Kind = Kind {
    id: "cdi-spec-version-unsupported",
    severities: &[Severity::Error],
    title: "a CDI spec is of a version the installed container engine's CDI library does not read (toolkit 1.19.1's 0.7.0 spec under Podman 4.9.3): every device in it is unresolvable",
};

pub static CONTAINER_LOST_GPU_ACCESS: Kind = Kind {
    id: "container-lost-gpu-access",
    severities: &[Severity::Error],
    title: "a running container lost its GPUs (NVML \"Unknown Error\" with the device nodes and libraries in place): the host's `systemctl daemon-reload` rewrote the container's device cgroup",
};

pub static WSL_CONTAINER_DRIVER_FILE_MISSING: Kind = Kind {
    id: "wsl-container-driver-file-missing",
    severities: &[Severity::Error],
    title: "a WSL2 container lacks the Windows driver's `libnvdxgdmal.so.1` (drivers 555+), which an older NVIDIA Container Toolkit does not mount: CUDA fails with error 500",
};

pub static MIG_NO_INSTANCES: Kind = Kind {
    id: "mig-no-instances",
    severities: &[Severity::Error, Severity::Warning],
    title: "MIG is enabled on a GPU that has no MIG devices: CUDA runs only on MIG devices, so programs find no GPU there",
};

pub static COMPUTE_MODE_PROHIBITED: Kind = Kind {
    id: "compute-mode-prohibited",
    severities: &[Severity::Error, Severity::Warning, Severity::Info],
    title: "a GPU's compute mode lets no program use it (Prohibited), or one program at a time (Exclusive_Process)",
};

pub static CONTAINER_SHM_SMALL: Kind = Kind {
    id: "container-shm-small",
    severities: &[Severity::Warning, Severity::Info],
    title: "a container's /dev/shm is smaller than NCCL asks for (1 GiB): multi-GPU jobs fail in NCCL's setup and DataLoader workers die with a bus error",
};

pub static VISIBLE_DEVICES_HIDES_GPUS: Kind = Kind {
    id: "visible-devices-hides-gpus",
    severities: &[Severity::Error, Severity::Warning],
    title: "CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES hide the GPUs; for AMD, HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES (and CUDA_VISIBLE_DEVICES, which HIP honours, on a machine without NVIDIA GPUs) select no AMD GPU, or stop at an entry that names none; ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES on an NVIDIA-only machine turn ollama 0.9.3-0.11.4 away from CUDA (warning)",
};

pub static WSL_DRIVER_IN_GUEST: Kind = Kind {
    id: "wsl-driver-in-guest",
    severities: &[Severity::Error, Severity::Warning],
    title: "a Linux NVIDIA driver inside WSL2 shadows the Windows driver's libraries",
};

pub static FABRIC_NOT_COMPLETED: Kind = Kind {
    id: "fabric-not-completed",
    severities: &[Severity::Error],
    title: "the fabric manager runs (or, inside a container, the host's, out of sight) but a GPU's fabric (NVML's GPU fabric info, else `nvidia-smi -q -x` `<fabric>`) is not Completed/Success: CUDA fails with 802; in a container the fix is the host's fabric manager or another node; evidence: on NVLink5 (Blackwell) systems a missing `ib_umad`/`mlx5_ib` (and whether the kernel has them at all), an empty `/sys/class/infiniband` or no `nvlsm` first, then the last errors of the fabric manager's log (read from its end) and each GPU's state, status, clique id, cluster UUID and health",
};

pub static FABRIC_MANAGER_NOT_RUNNING: Kind = Kind {
    id: "fabric-manager-not-running",
    severities: &[Severity::Error],
    title: "NVSwitch system (NVSwitch bridges, or GPUs registering with an NVLink fabric) without nv-fabricmanager (error 802): not installed (unit, binary, dpkg) or not running (process list, `systemctl`); why it stopped leads: a version other than the driver's (fixed by making them equal), NVLink5's InfiniBand modules, its journal's errors",
};

pub static GPU_THERMAL_THROTTLE: Kind = Kind {
    id: "gpu-thermal-throttle",
    severities: &[Severity::Warning],
    title: "thermal or power-brake clock throttling",
};

pub static GPU_ECC_ERRORS: Kind = Kind {
    id: "gpu-ecc-errors",
    severities: &[Severity::Error, Severity::Warning],
    title: "uncorrectable ECC errors, pending retirement or row remap",
};

pub static PCIE_LINK_DEGRADED: Kind = Kind {
    id: "pcie-link-degraded",
    severities: &[Severity::Warning],
    title: "PCIe link below its generation or width while busy",
};

pub static GPU_PEER_VIA_IOMMU: Kind = Kind {
    id: "gpu-peer-via-iommu",
    severities: &[Severity::Warning],
    title: "two NVIDIA GPUs or more, not joined by NVLink, each in an IOMMU group that translates addresses (`iommu_group/type` DMA or DMA-FQ): their peer-to-peer traffic goes up to the root complex through the IOMMU (ACS redirect), where NCCL's P2P transport hangs or crawls; fix: `iommu=pt` in the distribution's words, or ACS / the IOMMU off in the BIOS",
};

pub static MIXED_GPU_MODELS: Kind = Kind {
    id: "mixed-gpu-models",
    severities: &[Severity::Warning],
    title: "compute GPUs of different models in one machine (display-only cards below cc 5.0 left out)",
};

pub static PERSISTENCE_MODE_OFF: Kind = Kind {
    id: "persistence-mode-off",
    severities: &[Severity::Info],
    title: "persistence mode off on a data-center GPU (every job start re-initialises it)",
};

pub static NCCL_INTERFACE_UNSET: Kind = Kind {
    id: "nccl-interface-unset",
    severities: &[Severity::Info],
    title: "several GPUs and several device-backed network interfaces up, no `NCCL_SOCKET_IFNAME` / `NCCL_IB_HCA`",
};

pub static CUDA_LAUNCH_BLOCKING_SET: Kind = Kind {
    id: "cuda-launch-blocking-set",
    severities: &[Severity::Info],
    title: "`CUDA_LAUNCH_BLOCKING=1` left set (every kernel launch waits)",
};

pub static PYTORCH_ALLOC_CONF_UNKNOWN_KEY: Kind = Kind {
    id: "pytorch-alloc-conf-unknown-key",
    severities: &[Severity::Warning],
    title: "`PYTORCH_CUDA_ALLOC_CONF` / `PYTORCH_ALLOC_CONF` names an option PyTorch refuses",
};

pub static MANIFESTS_STALE: Kind = Kind {
    id: "manifests-stale",
    severities: &[Severity::Info],
    title: "the compatibility data in use is more than 90 days old (`gpu-doctor manifest update`)",
};

pub static FRAMEWORK_CANNOT_SEE_GPU: Kind = Kind {
    id: "framework-cannot-see-gpu",
    severities: &[Severity::Error],
    title: "(`--deep`) a CUDA build that, imported, reports no GPU while the driver reports some; its own messages as evidence",
};

pub static FRAMEWORK_IMPORT_FAILED: Kind = Kind {
    id: "framework-import-failed",
    severities: &[Severity::Error],
    title: "(`--deep`) `import <framework>` raises in its environment (a missing or mismatched library)",
};

pub static FRAMEWORK_PROBE_FAILED: Kind = Kind {
    id: "framework-probe-failed",
    severities: &[Severity::Warning, Severity::Error],
    title: "(`--deep`) importing or first asking a framework hung past the deadline, or crashed the interpreter",
};

pub static FRAMEWORK_SMOKE_FAILED: Kind = Kind {
    id: "framework-smoke-failed",
    severities: &[Severity::Error],
    title: "(`smoke --frameworks`) a framework's matmul on a GPU raised or differs from the CPU's",
};

pub static NCCL_ALLREDUCE_FAILED: Kind = Kind {
    id: "nccl-allreduce-failed",
    severities: &[Severity::Error],
    title: "(`smoke --frameworks`) an NCCL all-reduce across two GPUs with `torch.distributed` failed",
};

pub static GPU_WRONG_RESULTS: Kind = Kind {
    id: "gpu-wrong-results",
    severities: &[Severity::Error],
    title: "(`smoke`) the GPU's matmul differs from the CPU's, has NaNs or unwritten elements",
};

pub static GPU_MEMORY_ERRORS: Kind = Kind {
    id: "gpu-memory-errors",
    severities: &[Severity::Error],
    title: "(`smoke`) device memory did not read back the pattern written",
};

pub static GPU_UNDERPERFORMING: Kind = Kind {
    id: "gpu-underperforming",
    severities: &[Severity::Warning],
    title: "(`smoke --bench`) below 70% of the card's bf16 or memory-bandwidth figure",
};

pub static GPU_PEER_ACCESS_MISSING: Kind = Kind {
    id: "gpu-peer-access-missing",
    severities: &[Severity::Warning],
    title: "(`smoke`) two GPUs that `nvidia-smi topo -m` joins by NVLink or one PCIe switch cannot reach each other's memory (links down, fabric not up, IOMMU/ACS)",
};

pub static DRIVER_TOO_OLD_FOR_PTX: Kind = Kind {
    id: "driver-too-old-for-ptx",
    severities: &[Severity::Error],
    title: "(`smoke`) the driver refuses the shipped PTX (CUDA error 222/218)",
};

pub static GPU_OUT_OF_MEMORY: Kind = Kind {
    id: "gpu-out-of-memory",
    severities: &[Severity::Error],
    title: "(`smoke`) the driver's own error during the test, explained",
};

pub static GPU_FAULT: Kind = Kind {
    id: "gpu-fault",
    severities: &[Severity::Error],
    title: "(`smoke`) the driver's own error during the test, explained",
};

pub static SMOKE_CUDA_ERROR: Kind = Kind {
    id: "smoke-cuda-error",
    severities: &[Severity::Error],
    title: "(`smoke`) the driver's own error during the test, explained",
};

pub static LIBRARY_SYMBOL_MISSING: Kind = Kind {
    id: "library-symbol-missing",
    severities: &[Severity::Error],
    title: "a loaded object needs a symbol that the copy of a CUDA, cuDNN or NCCL library the loader resolves for it does not define (read from both files' ELF symbol tables): a toolkit's older nvJitLink under the wheel's cuSPARSE (\"undefined symbol: __nvJitLinkAddData_12_1, version libnvJitLink.so.12\"), cuBLAS over another release's cuBLASLt, torch over an older NCCL (`ncclCommRegister`); the evidence says why that copy wins (LD_LIBRARY_PATH, ld.so.conf, RPATH), the fix takes it off the path or installs the matching wheel",
};

pub static ONNXRUNTIME_TENSORRT_LIBRARIES: Kind = Kind {
    id: "onnxruntime-tensorrt-libraries",
    severities: &[Severity::Error, Severity::Warning],
    title: "onnxruntime-gpu's TensorRT provider cannot load: the TensorRT here is of another major than the libnvinfer it links (\"Failed to load library libonnxruntime_providers_tensorrt.so with error: libnvinfer.so.10\"), or only in a pip wheel's folder it does not search; sessions fall back to CUDA. From frameworks.toml `onnxruntime_tensorrt`, generated from the PyPI wheels",
};

/// The registered kind of `id`.
#[must_use]
pub fn kind(id: &str) -> Option<&'static Kind> {
    KINDS.iter().copied().find(|k| k.id == id)
}

/// The cuDNN family: the cuDNN a framework would load is missing, of another version, or
/// refuses the GPU. The TUI's framework view marks the cuDNN need unmet for any of them;
/// `cudnn_family_is_every_cudnn_kind` keeps it whole.
pub static CUDNN_KINDS: &[&Kind] = &[
    &CUDNN_MISSING,
    &CUDNN_VERSION_MISMATCH,
    &CUDNN_GPU_UNSUPPORTED,
];

/// Whether a finding of `id` is of one of `family`'s kinds.
#[must_use]
pub fn is_one_of(family: &[&Kind], id: &str) -> bool {
    family.iter().any(|k| k.id == id)
}

pub static NUMBA_PTX_NEWER_THAN_DRIVER: Kind = Kind {
    id: "numba-ptx-newer-than-driver",
    severities: &[Severity::Error, Severity::Warning],
    title: "numba's CUDA target compiles with a libNVVM of a CUDA newer than the driver's: its PTX does not load (`CUDA_ERROR_UNSUPPORTED_PTX_VERSION`, \"Unsupported .version 8.7; current version is '8.4'\"); an error with numba-cuda, a warning for numba alone",
};

pub static NUMBA_GPU_UNSUPPORTED: Kind = Kind {
    id: "numba-gpu-unsupported",
    severities: &[Severity::Error, Severity::Warning],
    title: "the GPU is outside what numba's CUDA target compiles for: below the lowest compute capability of its libNVVM's CUDA release (Kepler on CUDA 12), or above the highest its release knows (the built-in target on Blackwell); per release in frameworks.toml's `numba_cuda`, generated from numba's and numba-cuda's tags",
};

pub static NUMBA_LIBNVVM_MISSING: Kind = Kind {
    id: "numba-libnvvm-missing",
    severities: &[Severity::Error],
    title: "numba-cuda is installed but no libNVVM is where it looks (the environment's nvidia-cuda-nvcc / nvidia-nvvm wheels, conda's cuda-nvcc, CUDA_HOME, /usr/local/cuda): \"libNVVM cannot be found\"",
};

pub static NUMBA_CUDA_BINDING_MISSING: Kind = Kind {
    id: "numba-cuda-binding-missing",
    severities: &[Severity::Error],
    title: "numba-cuda 0.15 or newer (NVIDIA's binding by default; required from 0.21) without the cuda-bindings package: `import numba.cuda` fails (\"CUDA bindings not found\"); per release in frameworks.toml's `numba_cuda`",
};

pub static NUMBA_BUILTIN_CUDA_TARGET: Kind = Kind {
    id: "numba-builtin-cuda-target",
    severities: &[Severity::Info],
    title: "numba 0.61 or newer without numba-cuda on an NVIDIA GPU machine: numba's built-in CUDA target is deprecated (numba's deprecation notice) and knows no GPU past compute capability 9.0",
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cudnn_family_is_every_cudnn_kind() {
        let named: Vec<&str> = KINDS
            .iter()
            .map(|k| k.id)
            .filter(|id| id.starts_with("cudnn-"))
            .collect();
        let family: Vec<&str> = CUDNN_KINDS.iter().map(|k| k.id).collect();
        assert_eq!(named, family);
        assert!(is_one_of(CUDNN_KINDS, "cudnn-missing"));
        assert!(!is_one_of(CUDNN_KINDS, "library-path-shadowing"));
    }

    /// The `pub static NAME: Kind` declarations of this file, with the ID each one holds.
    fn declared() -> Vec<(String, String)> {
        let source = include_str!("ids.rs");
        source
            .split("\npub static ")
            .skip(1)
            .filter_map(|decl| {
                let (name, rest) = decl.split_once(": Kind = Kind {")?;
                let id = rest.split_once("id: \"")?.1.split_once('"')?.0;
                Some((name.to_string(), id.to_string()))
            })
            .collect()
    }

    /// README's findings table as the registry writes it: a row per kind, in the list's order.
    fn readme_table() -> String {
        let mut table = String::from("| id | severity | meaning |\n| --- | --- | --- |\n");
        for k in KINDS {
            let severities: Vec<&str> = k.severities.iter().map(|s| s.as_str()).collect();
            table.push_str(&format!(
                "| `{}` | {} | {} |\n",
                k.id,
                severities.join(" / "),
                k.title
            ));
        }
        table
    }

    #[test]
    fn ids_are_unique_and_well_formed() {
        for (i, k) in KINDS.iter().enumerate() {
            assert!(
                k.id.split('-').all(|w| !w.is_empty()
                    && w.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())),
                "{}",
                k.id
            );
            assert!(!k.severities.is_empty() && !k.title.is_empty(), "{}", k.id);
            assert!(KINDS[..i].iter().all(|o| o.id != k.id), "{} twice", k.id);
        }
    }

    /// The compiler checks every use of a kind; this checks the list: each static is in it
    /// once, and each is named for the ID it holds.
    #[test]
    fn every_static_is_listed() {
        let declared = declared();
        assert_eq!(
            declared.len(),
            KINDS.len(),
            "a static is missing from KINDS"
        );
        for (name, id) in &declared {
            assert_eq!(
                *name,
                id.to_uppercase().replace('-', "_"),
                "{name} holds {id}"
            );
            assert!(kind(id).is_some(), "{name} is not in KINDS");
        }
    }

    /// README's findings table is written from the registry: `UPDATE_README=1 cargo test --lib
    /// diagnose::ids` rewrites it after a kind is added or changed.
    #[test]
    fn readme_findings_table_is_written_from_the_registry() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
        let readme = std::fs::read_to_string(path).unwrap();
        let start = readme.find("| id | severity | meaning |").unwrap();
        let len = readme[start..]
            .split_inclusive('\n')
            .take_while(|l| l.starts_with('|'))
            .map(str::len)
            .sum::<usize>();
        let fresh = readme_table();
        if std::env::var_os("UPDATE_README").is_some_and(|v| v == "1") {
            let updated = format!("{}{fresh}{}", &readme[..start], &readme[start + len..]);
            std::fs::write(path, updated).unwrap();
            return;
        }
        assert!(
            readme[start..start + len] == fresh,
            "README's findings table is stale: rewrite it with `UPDATE_README=1 cargo test --lib \
             diagnose::ids`"
        );
    }
}
